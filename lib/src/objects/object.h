/* SPDX-License-Identifier: MIT */
/*
 * Memory objects: the storage that memory handles and arrays share, and
 * the transfers between storages.
 */
#ifndef ACCEL_OBJECT_H
#define ACCEL_OBJECT_H

#include <accel/memory.h>

#include "memory/memory.h"

/* What a storage's bytes are. */
enum storage_kind {
	STORAGE_DEVICE,		/* device memory: a pool block, or wrapped */
	STORAGE_UNIFIED,	/* unified memory, the host may map it */
	STORAGE_PINNED,		/* pinned host memory of the device */
	STORAGE_HOST,		/* ordinary host memory */
};

struct accel_dtype {
	char name[64];
	size_t size;
	char typestr[16];
};

/*
 * Bytes that handles share. The last reference frees them, unless wrapped;
 * an explicit free frees them at once and leaves the storage to the
 * remaining references as a tombstone.
 */
struct storage {
	atomic_uint refs;
	pthread_rwlock_t lock;	/* operations read, free writes */
	atomic_uint writers;	/* waiting for or holding @lock to write */
	atomic_uint write_gen;	/* writes done under @lock */
	bool freed;
	enum storage_kind kind;
	bool owned;		/* false: the caller's memory */
	bool mapped_kind;	/* pinned memory the device reaches directly */
	int dev_id;		/* -1: host memory of no device */
	unsigned int flags;	/* ACCEL_MEMORY_HOST_* */
	void *ptr;
	size_t bytes;
	accel_stream_t alloc_stream;	/* what a pool block was allocated for */
	atomic_int maps;	/* host mappings open: see storage_owner() */
	/* bits of the devices that queued transfers on the bytes */
	_Atomic uint64_t async_devs;
	int registered_dev;	/* host memory pinned for this device, -1 */
	/* devices the bytes are registered with as portable memory */
	uint64_t portable_devs;
	bool portable_pages;	/* anonymous pages of ours, unmapped after */
	/*
	 * A view for one device of another's storage (or of a host array's):
	 * the storage it lies in, referenced, so that it lives as long
	 */
	struct storage *backing;
	/*
	 * Who lends the caller's bytes (an imported DLPack tensor): told once,
	 * when the bytes are released (last reference or explicit free)
	 */
	void (*lender_release)(void *lender);
	void *lender;
	/* in the index of owned storages (storage_index.c) while its bytes live */
	struct storage *index_prev, *index_next;
	bool indexed;
};

struct accel_memory {
	uintptr_t handle;	/* first: see handles.c */
	struct storage *st;
	size_t offset;		/* bytes into the storage */
	size_t entries;
	accel_dtype_t dtype;
};

struct accel_array {
	uintptr_t handle;	/* first: see handles.c */
	struct storage *st;
	size_t offset;		/* bytes from the storage to entry 0 */
	int ndim;
	size_t shape[ACCEL_MAX_DIMS];
	ptrdiff_t strides[ACCEL_MAX_DIMS];
	accel_dtype_t dtype;
	accel_stream_t stream;
	bool readonly;
};

/*
 * The storage that owns @st's bytes: a view's backing, else @st. Their
 * mapping state is kept there, so that every handle on the bytes (the
 * producer's and each view's) sees the same.
 */
static inline struct storage *storage_owner(struct storage *st)
{
	return st->backing ? st->backing : st;
}

/* storage.c */
/* new storage of @bytes; @dev_id -1 with STORAGE_HOST for plain host memory */
accel_status_t storage_alloc(int dev_id, enum storage_kind kind, size_t bytes,
		       unsigned int flags, accel_stream_t stream,
		       struct storage **out);
/* storage over the caller's memory at @ptr, found in @dev_id's memory */
accel_status_t storage_wrap(int dev_id, void *ptr, size_t bytes, bool for_array,
		      struct storage **out);
/* storage over the caller's host memory, of no device; NULL on error */
struct storage *storage_host(void *ptr, size_t bytes);
void storage_get(struct storage *st);
/* drop a reference; the last one frees the bytes (if owned) */
accel_status_t storage_put(struct storage *st);
/*
 * storage_put(), unless it is the last reference on mapped bytes (the
 * mapping would point at freed bytes; a view's last reference is that when
 * its backing has no other): then false, with the error
 * (ACCEL_ERROR_IN_USE) in *ret, and the reference stays
 */
bool storage_put_unmapped(struct storage *st, accel_status_t *ret);
/*
 * Whether the caller's reference is the last one on mapped bytes, as
 * storage_put_unmapped() says: its handle must not be released
 * (ACCEL_ERROR_IN_USE, set here when true)
 */
bool storage_last_mapped(struct storage *st);
/* end the registration of host memory for a device */
accel_status_t storage_unregister(struct storage *st);
/* free the bytes now; refused while they are mapped through any handle */
accel_status_t storage_free(struct storage *st);
/*
 * Whether its bytes, or those of the storage it is a view of, were freed;
 * takes @st's lock for reading, so the caller must not wait for a free.
 */
bool storage_is_freed(struct storage *st);
/* Exclusive use: a free, a registration; waits for operations in flight. */
void storage_write_lock(struct storage *st);
void storage_write_unlock(struct storage *st);
/* take the read lock; fails, unlocked, if the storage is freed */
accel_status_t storage_use(struct storage *st, const char *what);
/*
 * Both, for one operation (storage_done() each): a free of either waits
 * for it, and it waits for a free of either that is under way.
 */
accel_status_t storage_use_both(struct storage *a, const char *what_a,
			  struct storage *b, const char *what_b);
void storage_done(struct storage *st);
/* true for memory that device pointers name: device and unified */
bool storage_on_device(const struct storage *st);

/* array.c: end the registrations of portable memory with other devices */
accel_status_t storage_unportable(struct storage *st);

/* storage_index.c: owned storages, by address, while their bytes live */
void storage_index_add(struct storage *st);
void storage_index_remove(struct storage *st);
/*
 * The owned storage whose bytes hold @ptr, of whatever device (device
 * pointers of different devices never coincide), with a reference taken,
 * or NULL
 */
struct storage *storage_index_find(const void *ptr);

/* transfer.c */
/* one end of a transfer: a storage (used by the caller) at a byte offset */
struct xfer_end {
	struct storage *st;
	size_t offset;
	void *host;		/* instead of st: caller's host memory */
};
accel_status_t transfer(const struct xfer_end *dst, const struct xfer_end *src,
		  size_t bytes, accel_stream_t stream);
/*
 * ACCEL_SUCCESS if @stream is NULL or a live stream of device @dev_id; else
 * ACCEL_FAILED, ACCEL_ERROR_INVALID_HANDLE
 */
accel_status_t stream_check(int dev_id, accel_stream_t stream);
/* @e named by the storage that owns its bytes (storage_owner()) */
struct xfer_end xfer_owner(const struct xfer_end *e);

/* memobj.c: [offset, offset + *count) within @entries; ACCEL_ALL: the rest */
accel_status_t entry_range(size_t entries, size_t offset, size_t *count);

/* memobj.c: a new memory handle on @st (whose reference it takes over) */
accel_status_t memory_new(struct storage *st, size_t offset, size_t entries,
		    accel_dtype_t dtype, accel_memory_t *out);

/*
 * memobj.c's and array.c's handles: the live object, referenced (put it
 * with accel_handle_put(), or declare the variable ACCEL_HANDLE_REF); NULL
 * with the error set if not live
 */
struct accel_memory *memory_lookup(accel_memory_t mem);
struct accel_array *array_lookup(accel_array_t ary);
/*
 * array_lookup() of an array whose storage was not freed (accel_memory_free()
 * on a handle of it): every array function but the release refuses the
 * others, ACCEL_ERROR_INVALID_HANDLE
 */
struct accel_array *array_live(accel_array_t ary);
/* whether @a's storage was freed */
bool array_freed(struct accel_array *a);
/*
 * memory_lookup(), with the storage in use too: not freed; memory_done()
 * ends both
 */
struct accel_memory *memory_use(accel_memory_t mem);
/* memory_use() of both at once (see storage_use_both()); memory_done() each */
accel_status_t memory_use_both(accel_memory_t a, accel_memory_t b,
			 struct accel_memory **ma, struct accel_memory **mb);
void memory_done(struct accel_memory *m);

/* dtype.c: the built-in or registered type with this typestr, or NULL */
accel_dtype_t dtype_by_typestr(const char *typestr);
/*
 * The alignment entries of @dtype need: a built-in scalar's size; 1 for a
 * registered type (opaque bytes, "|V<n>", as NumPy's void types)
 */
size_t dtype_align(accel_dtype_t dtype);
/* an error unless @at (an address or byte offset, named @what) is aligned for @dtype */
accel_status_t dtype_check_aligned(size_t at, accel_dtype_t dtype, const char *what);

/* The bit of visible device @id, none for -1 */
static inline uint64_t device_bits(int id)
{
	return id >= 0 ? (uint64_t)1 << id : 0;
}

/* a*b into *out, false on overflow */
static inline bool mul_ok(size_t a, size_t b, size_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

#endif /* ACCEL_OBJECT_H */
