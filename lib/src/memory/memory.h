/* SPDX-License-Identifier: MIT */
/*
 * The memory layer's insides (lib/src/memory/), a file by concern: resolving
 * pointers, deferred frees, allocation, registration, copies and set, the
 * statistics and chunk policy, pointer attributes, IPC. It calls the core
 * and the backends below it; the pools and objects above call it
 * (docs/libaccel.md, "Layers").
 */
#ifndef ACCEL_MEMORY_INTERNAL_H
#define ACCEL_MEMORY_INTERNAL_H

#include "core/internal.h"

/* memory/resolve.c */
/* which registry holds allocations of @kind */
struct accel_registry *accel_space_of(struct accel_device *dev,
				      enum accel_kind kind);
/* "device", "pinned host", "unified": for messages */
const char *accel_kind_name(enum accel_kind kind);
/*
 * [ptr, ptr + size) must lie in one device or unified allocation of @dev
 * (for a pool's chunk: in one live block); @what names it in the message
 */
accel_status_t accel_resolve_device(struct accel_device *dev, const char *what,
				    const void *ptr, size_t size,
				    struct accel_side *side);
/*
 * [ptr, ptr + size) must be no device memory of @dev; pinned and unified
 * allocations of @dev are recognised so that the backend uses them directly
 */
accel_status_t accel_resolve_host(struct accel_device *dev, const char *what,
				  const void *ptr, size_t size,
				  struct accel_side *side);

/* memory/deferred.c */
/*
 * give the backend the deferred frees whose work is over (@wait: all of
 * them, after waiting for their work); true if any was given back
 */
bool accel_memory_reap_deferred(struct accel_device *dev, bool wait);
/* which streams' work may touch an allocation of @kind (ACCEL_MARK_*) */
unsigned int accel_memory_users_of(enum accel_kind kind);

/* memory/alloc.c */
/* device memory for a pool's chunk (@pooled) or a pool's large block */
accel_status_t accel_memory_alloc(struct accel_device *dev, size_t size,
			    bool pooled, void **ptr);
/* pinned host memory, write-combined if @wc, registered as HOST memory */
accel_status_t accel_memory_alloc_host(struct accel_device *dev, size_t size,
				 bool wc, void **ptr);
/*
 * free what accel_memory_alloc() returned behind the work queued so far on
 * every stream that may touch it, with no wait
 */
void accel_memory_free_pooled(struct accel_device *dev, void *ptr);
/* the same, now: the caller knows that no queued work uses it */
void accel_memory_free_pooled_idle(struct accel_device *dev, void *ptr);
/*
 * give @gone, out of the registry already, back to the backend once the
 * work queued so far on every stream that may touch it is over
 */
accel_status_t accel_memory_free_behind(struct accel_device *dev,
				  const struct accel_allocation *gone);

/*
 * memory/ipc.c: the caller's block at @ptr, in @dev's allocation @a, was
 * freed (the whole allocation if @ptr is its address): its handles stop
 * opening. No lock held.
 */
void accel_ipc_revoke(struct accel_device *dev,
		      const struct accel_allocation *a, const void *ptr);
/* the same, for a pool's block at @ptr: its chunk is in the registry */
void accel_ipc_revoke_block(struct accel_device *dev, const void *ptr);

/* the largest allocation worth trying on @dev now (max_alloc_size) */
accel_status_t accel_memory_max_alloc(struct accel_device *dev, size_t *size);

/*
 * Memory of @dev that another library allocated, as the backend tells
 * (into *@a), and not memory of ours the backend still holds for a
 * deferred free: a stale pointer of ours is no one else's memory.
 */
bool accel_foreign_memory(struct accel_device *dev, const void *ptr,
			  struct accel_allocation *a);
/*
 * What [ptr, ptr + size) is to @dev: *found false if no allocation of it
 * holds ptr; an error if one does but the range runs past its end
 */
accel_status_t accel_memory_kind_of(struct accel_device *dev, const void *ptr,
			      size_t size, bool *found, enum accel_kind *kind);

/* the chunk-size policy of @dev, as the accel_device_*_size() functions say */
struct accel_chunk_policy {
	size_t granule;		/* min_chunk_size */
	size_t padding;		/* extra_padding_size */
	size_t max_chunk;	/* max_chunk_size */
	size_t init_size;	/* init_alloc_size */
	size_t realloc_size;	/* realloc_size */
	size_t alloc_granule;	/* what the device rounds an allocation to */
};

accel_status_t accel_memory_chunk_policy(struct accel_device *dev,
					 struct accel_chunk_policy *p);

#endif /* ACCEL_MEMORY_INTERNAL_H */
