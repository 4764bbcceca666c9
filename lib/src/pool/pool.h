/* SPDX-License-Identifier: MIT */
/*
 * The caching allocator's insides: blocks and chunks, the best-fit index of
 * free blocks, the map from addresses to live blocks (none of which locks;
 * their owner, an arena, does), and the pools and arenas themselves.
 */
#ifndef ACCEL_POOL_H
#define ACCEL_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memory/memory.h"

struct pool_arena;

/* A piece of device memory the pool took from the backend. */
struct pool_chunk {
	uintptr_t addr;
	size_t size;
	struct pool_arena *arena;	/* owner; NULL while shared */
	struct pool_block *first;	/* lowest block */
	struct pool_chunk *prev, *next;	/* in the owner's list */
};

enum block_state { BLOCK_FREE, BLOCK_USED, BLOCK_PENDING };

/*
 * A block: a free or used piece of a chunk. Blocks of a chunk are linked in
 * address order, so that a freed block merges with free neighbours; a chunk
 * is idle when its first block is free and alone. One cache line.
 */
struct pool_block {
	uintptr_t addr;
	size_t size;			/* a multiple of the granule */
	size_t requested;		/* what the caller asked for, while used */
	struct pool_block *prev, *next;	/* address neighbours */
	/* in the free index: a class list, or the tree of large blocks */
	struct pool_block *left, *right;
	uint32_t prio;			/* tree priority */
	uint8_t state;
	bool large;			/* in the tree, not a class list */
} __attribute__((aligned(64)));

/*
 * Free blocks by size. Sizes below POOL_CLASSES granules have one exact
 * class each, found through a two-level bitmap in O(1); larger ones sit in
 * a treap ordered by (size, address), found in O(log n). Either way the
 * block returned is the smallest that fits: best fit.
 */
#define POOL_CLASSES 4096

struct pool_index {
	unsigned int shift;			/* log2 of the granule */
	uint32_t seed;				/* treap priorities */
	uint64_t summary;			/* bit w: bits[w] != 0 */
	uint64_t bits[POOL_CLASSES / 64];	/* bit c: heads[c] != NULL */
	struct pool_block *heads[POOL_CLASSES];
	struct pool_block *large;		/* treap root */
	size_t count;
};

void pool_index_init(struct pool_index *ix, size_t granule);
void pool_index_insert(struct pool_index *ix, struct pool_block *b);
void pool_index_remove(struct pool_index *ix, struct pool_block *b);
/* the smallest free block of at least @size bytes, or NULL */
struct pool_block *pool_index_best_fit(const struct pool_index *ix,
				       size_t size);
/* the largest free block's size, 0 if none */
size_t pool_index_largest(const struct pool_index *ix);

/* Live blocks by address: open addressing, linear probing. */
struct pool_map_slot {
	uintptr_t addr;			/* 0: empty */
	struct pool_block *block;
};

struct pool_map {
	struct pool_map_slot *slots;
	size_t mask;		/* capacity - 1; capacity a power of two */
	size_t count;
};

bool pool_map_init(struct pool_map *m);
void pool_map_destroy(struct pool_map *m);
/* false when out of host memory */
bool pool_map_insert(struct pool_map *m, struct pool_block *b);
struct pool_block *pool_map_find(const struct pool_map *m, uintptr_t addr);
void pool_map_remove(struct pool_map *m, struct pool_block *b);
/* The free path finds a block and then removes it: one probe for both. */
#define POOL_MAP_NONE SIZE_MAX
size_t pool_map_index(const struct pool_map *m, uintptr_t addr);
void pool_map_remove_at(struct pool_map *m, size_t index);

/* ------------------------------------------------------------------ */
/* Pools and arenas */

#define THREAD_ARENAS 8
#define THREAD_CACHE 4
#define SLAB_BLOCKS 64			/* block structs per allocation */

/* Where the next block structs come from: the rest of the current slab. */
struct slab_cursor {
	struct pool_block *next, *end;
};

/* Slabs are linked through their first block struct. */
struct pool_slab {
	struct pool_slab *next;
};

/* A freed block, free once every event (the backend's) has completed. */
struct pool_pending {
	struct pool_block *block;
	struct pool_pending *next;
	size_t nevents;
	struct accel_mark events[];	/* recorded at the free */
};

struct pool_arena {
	pthread_mutex_t lock;
	struct accel_stream *stream;	/* NULL for a thread arena */
	bool orphan;			/* its stream was destroyed */
	struct pool_index index;
	struct pool_map map;
	struct pool_chunk *chunks;
	struct pool_block *spare;	/* block structs to reuse */
	struct slab_cursor cursor;
	struct pool_pending *pending;
	/* blocks handed out and freed here, in all (for the statistics) */
	size_t allocations, frees;
	struct pool_arena *next;	/* in the pool's list */
};

struct accel_pool {
	uintptr_t handle;		/* first: see handles.c */
	uint64_t id;			/* unique; names the pool in caches */
	struct accel_device *dev;
	bool caching;			/* false: ACCEL_POOL=off */
	bool grown;			/* init_alloc_size was taken */
	size_t granule, padding, max_chunk, init_size, realloc_size;
	size_t alloc_granule;		/* the device's: chunk_granule */

	pthread_mutex_t lock;
	atomic_uint_fast64_t epoch;	/* bumped when an arena leaves */
	struct pool_arena *_Atomic threads[THREAD_ARENAS];
	struct pool_arena *arenas;	/* every arena */
	struct pool_chunk *shared;	/* idle chunks of no arena */
	struct pool_map direct;		/* blocks straight from the backend */
	struct pool_pending *direct_pending;	/* freed, behind events */
	/* chunks given back, still reserved until the events are over */
	struct pool_pending *releasing;
	struct pool_block *spare;	/* for chunks and large blocks */
	struct slab_cursor cursor;
	struct pool_slab *_Atomic slabs;	/* every block struct */

	atomic_size_t reserved, reserved_peak;
	atomic_size_t allocated, allocated_peak;
	atomic_size_t requested, requested_peak;
	atomic_size_t chunks, backend_allocs, backend_frees;
	/*
	 * blocks handed out and freed that no live arena counts: those
	 * straight from the device, and those of arenas gone (pool lock)
	 */
	size_t allocations, frees;

	/* the controls, set and read under the pool lock */
	size_t limit;			/* reserved bytes at most; 0: none */
	size_t release_threshold;	/* SIZE_MAX: keep idle chunks */
	accel_pool_oom_handler_t oom_handler;
	void *oom_user;
	atomic_size_t ooms, oom_retries;

	/*
	 * accel_pool_record_history(): the ring, under history_lock (taken
	 * last, after any other lock); recording says whether there is one,
	 * for the one branch that the paths pay when there is none
	 */
	atomic_bool recording;
	pthread_mutex_t history_lock;
	struct pool_history *history;

	struct accel_pool *next;	/* in the device's list */
};

/* ------------------------------------------------------------------ */
/* Statistics */

/*
 * Sequentially consistent, for stat_reset_peak(); on x86 that costs what
 * relaxed does (the additions are locked instructions either way).
 */
static inline void stat_raise_peak(atomic_size_t *peak, size_t now)
{
	size_t old = atomic_load(peak);

	while (now > old && !atomic_compare_exchange_weak(peak, &old, now))
		;
}

static inline void stat_add(atomic_size_t *v, atomic_size_t *peak, size_t n)
{
	stat_raise_peak(peak, atomic_fetch_add(v, n) + n);
}

/*
 * The peak from the current value afresh. An addition between the load
 * and the store saw the old, higher peak and left it: raise it again to
 * what is current after the store.
 */
static inline void stat_reset_peak(atomic_size_t *v, atomic_size_t *peak)
{
	atomic_store(peak, atomic_load(v));
	stat_raise_peak(peak, atomic_load(v));
}

static inline void stat_sub(atomic_size_t *v, size_t n)
{
	atomic_fetch_sub_explicit(v, n, memory_order_relaxed);
}

static inline void count_use(struct accel_pool *pool, size_t size, size_t requested)
{
	stat_add(&pool->allocated, &pool->allocated_peak, size);
	stat_add(&pool->requested, &pool->requested_peak, requested);
}

static inline void count_unuse(struct accel_pool *pool, size_t size, size_t requested)
{
	stat_sub(&pool->allocated, size);
	stat_sub(&pool->requested, requested);
}


/* ------------------------------------------------------------------ */
/* History (history.c) */

/*
 * What the public allocate and free functions were called with, for the
 * events they cause: set on every call (two stores, cheaper than a test of
 * whether the pool records), read only while it does.
 */
struct pool_call {
	void *caller;			/* the return address into the caller */
	accel_stream_t stream;
};
extern ACCEL_TLS_HOT struct pool_call pool_call;

/* the last max events, oldest at (next - count) mod max */
struct pool_history {
	size_t max, count, next;
	uint64_t last_ns;		/* the latest event's time */
	struct accel_pool_event events[];
};

/*
 * Record an event (@of_call: caused by the call in pool_call, else by none
 * the pool can name). Under any of the pool's locks, or none.
 */
void pool_history_add(struct accel_pool *pool, enum accel_pool_action action,
		      enum accel_pool_block_state state, uintptr_t addr,
		      size_t size, size_t requested, bool of_call);

static inline void pool_history_note(struct accel_pool *pool,
				     enum accel_pool_action action,
				     enum accel_pool_block_state state,
				     uintptr_t addr, size_t size,
				     size_t requested, bool of_call)
{
	if (__builtin_expect(atomic_load_explicit(&pool->recording,
						  memory_order_relaxed), 0))
		pool_history_add(pool, action, state, addr, size, requested,
				 of_call);
}

/* the events of a block's free: behind queued work (@pending) or done */
void pool_history_add_free(struct accel_pool *pool, const struct pool_block *b,
			   bool pending);

static inline void pool_history_free(struct accel_pool *pool,
				     const struct pool_block *b, bool pending)
{
	if (__builtin_expect(atomic_load_explicit(&pool->recording,
						  memory_order_relaxed), 0))
		pool_history_add_free(pool, b, pending);
}

/* a pending free is over (found so by whichever call looked) */
static inline void pool_history_free_done(struct accel_pool *pool,
					  const struct pool_block *b)
{
	pool_history_note(pool, ACCEL_POOL_FREE_COMPLETED,
			  ACCEL_POOL_BLOCK_FREE, b->addr, b->size,
			  b->requested, false);
}

/* history.c: the latest @n events (n <= h->count), oldest first, into @out */
void pool_history_copy(const struct pool_history *h, size_t n,
		       struct accel_pool_event *out);
/* drop the ring (pool destroyed) */
void pool_history_end(struct accel_pool *pool);

/* pool.c: @handle's pool, referenced (put it); NULL with the error set */
struct accel_pool *pool_lookup(accel_pool_t handle);
/* pool.c, pool lock held: take back the blocks whose pending free is over */
void pool_reclaim(struct accel_pool *pool);

/* pool/arena.c: blocks, chunks and arenas */
struct pool_block *pool_block_get(struct accel_pool *pool);	/* pool lock */
void pool_block_put(struct accel_pool *pool, struct pool_block *b);
/* arena lock held from here to pool_idle_fit() */
accel_status_t pool_carve(struct accel_pool *pool, struct pool_arena *a,
		    struct pool_block *b, size_t need, size_t requested);
void pool_make_free(struct pool_arena *a, struct pool_block *b);
void pool_chunk_link(struct pool_chunk **list, struct pool_chunk *c);
void pool_chunk_unlink(struct pool_chunk **list, struct pool_chunk *c);
void pool_adopt(struct pool_arena *a, struct pool_chunk *c);
void pool_detach(struct pool_arena *a, struct pool_chunk *c);
bool pool_chunk_idle(const struct pool_chunk *c);
struct pool_chunk *pool_idle_fit(struct pool_chunk *list, size_t need);
/* move every idle chunk of @a to the list @to */
void pool_detach_idle(struct pool_arena *a, struct pool_chunk **to);
/* pool lock held from here on */
struct pool_arena *pool_arena_new(struct accel_pool *pool,
				  struct accel_stream *stream);
void pool_arena_free(struct pool_arena *a);
void pool_arena_drop(struct accel_pool *pool, struct pool_arena *a);
void pool_orphan_tidy(struct accel_pool *pool, struct pool_arena *a);

/* pool/grow.c: device memory, events, growing, stealing, trimming */
void *pool_backend_alloc(struct accel_pool *pool, size_t size);
void pool_backend_free(struct accel_pool *pool, uintptr_t addr, size_t size);
/* the same for memory that no queued work uses: back at once */
void pool_backend_free_idle(struct accel_pool *pool, uintptr_t addr,
			    size_t size);
void *pool_record_event(struct accel_device *dev, struct accel_stream *st);
/* a pending free with room for @nevents events, none yet; NULL: no memory */
struct pool_pending *pool_pending_new(size_t nevents);
/*
 * events recorded now on every busy stream that may use the device's
 * memory (accel_device_mark()); NULL when all are idle (*ret
 * ACCEL_SUCCESS) or on error (*ret ACCEL_FAILED)
 */
struct pool_pending *pool_behind_every_stream(struct accel_device *dev,
					      accel_status_t *ret);
/* whether every event of @p has completed; drops those that have */
bool pool_pending_done(struct accel_device *dev, struct pool_pending *p);
/* destroy @p and the events it still holds */
void pool_pending_free(struct accel_device *dev, struct pool_pending *p);
/* pool lock held from here on */
void pool_reclaim_pending(struct accel_pool *pool);
struct pool_chunk *pool_take_shared(struct accel_pool *pool, size_t need);
struct pool_chunk *pool_steal(struct accel_pool *pool, struct pool_arena *self,
			      size_t need, struct accel_stream *st);
struct pool_chunk *pool_grow(struct accel_pool *pool, size_t need);
/*
 * pool lock held: give @c back to the device; while work queued before
 * may still use it, it stays reserved (the limit and the device's cap
 * count it) in pool->releasing
 */
void pool_chunk_release(struct accel_pool *pool, struct pool_chunk *c);
/*
 * pool lock held: give the device the chunks of pool->releasing whose
 * work is over (@wait: all, after waiting for it). Whether any was there.
 */
bool pool_settle_releasing(struct accel_pool *pool, bool wait);
size_t pool_release_idle(struct accel_pool *pool);
size_t pool_release_idle_above(struct accel_pool *pool, size_t keep);
/*
 * grow.c: @need in the device's whole pages (alloc_granule), as the device
 * gives memory: what a chunk or a block from the device takes loses none
 * of it; below @need if that overflows
 */
size_t pool_whole_pages(const struct accel_pool *pool, size_t need);
/* span.c: accel_pool_span(), for the hooks the pools set (core/hooks.c) */
bool pool_span(struct accel_device *dev, uintptr_t base, uintptr_t addr,
	       struct accel_pool_span *span);
/*
 * publish.c: if ACCEL_STATS_DIR is set, a thread that keeps the pools'
 * figures in a file there for accel-smi (the hooks' probed)
 */
void pool_publish_start(void);

#endif /* ACCEL_POOL_H */
