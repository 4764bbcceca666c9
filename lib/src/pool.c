// SPDX-License-Identifier: MIT
/*
 * The caching allocator.
 *
 * A pool takes chunks of device memory from the backend (init_alloc_size
 * first, realloc_size later, as the device's policy says) and carves blocks
 * from them. Chunks belong to arenas: one per stream that allocates, and a
 * few shared by the threads that allocate with no stream. An arena has its
 * own lock, its own best-fit index of free blocks and its own map of live
 * blocks, so the fast path (a fit in the caller's arena, a free of a block
 * of the caller's arena) takes one uncontended lock.
 *
 * Stream order. Free memory of a stream's arena may still be in use by work
 * queued on that stream before the free; that stream's later work may reuse
 * it at once. Memory moves to another stream only as a whole idle chunk, and
 * only behind an event recorded on the old stream: the new stream waits for
 * it on the device, or a caller with no stream takes the chunk only if the
 * event has already completed. A block freed on a stream other than its
 * arena's becomes free once an event recorded at the free has completed.
 *
 * The slow path (growing, stealing, trimming) runs under the pool's lock;
 * lock order is device pool_lock, then pool lock, then arena locks.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pool.h"

#define POOL_MAGIC 0x504f4f4cU		/* "POOL" */
#define POOL_DEAD 0x44454144U		/* "DEAD" */
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

struct pool_pending {
	struct pool_block *block;
	void *event;			/* the backend's; recorded at the free */
	struct pool_pending *next;
};

struct pool_arena {
	pthread_mutex_t lock;
	struct C_Stream_st *stream;	/* NULL for a thread arena */
	bool orphan;			/* its stream was destroyed */
	struct pool_index index;
	struct pool_map map;
	struct pool_chunk *chunks;
	struct pool_block *spare;	/* block structs to reuse */
	struct slab_cursor cursor;
	struct pool_pending *pending;
	struct pool_arena *next;	/* in the pool's list */
};

struct accel_pool {
	uint32_t magic;
	uint64_t id;			/* unique; names the pool in caches */
	struct accel_device *dev;
	bool caching;			/* false: ACCEL_POOL=off */
	bool grown;			/* init_alloc_size was taken */
	size_t granule, padding, max_chunk, init_size, realloc_size;

	pthread_mutex_t lock;
	atomic_uint_fast64_t epoch;	/* bumped when an arena leaves */
	struct pool_arena *_Atomic threads[THREAD_ARENAS];
	struct pool_arena *arenas;	/* every arena */
	struct pool_chunk *shared;	/* idle chunks of no arena */
	struct pool_map direct;		/* blocks straight from the backend */
	struct pool_block *spare;	/* for chunks and large blocks */
	struct slab_cursor cursor;
	struct pool_slab *_Atomic slabs;	/* every block struct */

	atomic_size_t reserved, reserved_peak;
	atomic_size_t allocated, allocated_peak;
	atomic_size_t requested, requested_peak;
	atomic_size_t chunks, backend_allocs, backend_frees;

	struct accel_pool *next;	/* in the device's list, or dead */
};

/* The stream arenas this thread used last, so it finds them with no lock. */
struct thread_cache_entry {
	struct accel_pool *pool;
	uint64_t id, epoch;
	C_Stream stream;
	struct pool_arena *arena;
};

static _Thread_local struct thread_cache_entry thread_cache[THREAD_CACHE];
static _Thread_local unsigned int thread_cache_next;
static _Thread_local int thread_slot = -1;

static atomic_uint thread_slots;
static atomic_uint_fast64_t pool_ids = 1;

/* Destroyed pools are kept, dead, so that a stale handle is recognised. */
static pthread_mutex_t dead_lock = PTHREAD_MUTEX_INITIALIZER;
static struct accel_pool *dead_pools;

/* ------------------------------------------------------------------ */
/* Statistics */

static void stat_add(atomic_size_t *v, atomic_size_t *peak, size_t n)
{
	size_t now = atomic_fetch_add_explicit(v, n, memory_order_relaxed) + n;
	size_t old = atomic_load_explicit(peak, memory_order_relaxed);

	while (now > old &&
	       !atomic_compare_exchange_weak_explicit(peak, &old, now,
						      memory_order_relaxed,
						      memory_order_relaxed))
		;
}

static void stat_sub(atomic_size_t *v, size_t n)
{
	atomic_fetch_sub_explicit(v, n, memory_order_relaxed);
}

static void count_use(struct accel_pool *pool, size_t size, size_t requested)
{
	stat_add(&pool->allocated, &pool->allocated_peak, size);
	stat_add(&pool->requested, &pool->requested_peak, requested);
}

static void count_unuse(struct accel_pool *pool, size_t size, size_t requested)
{
	stat_sub(&pool->allocated, size);
	stat_sub(&pool->requested, requested);
}

/* ------------------------------------------------------------------ */
/* Backend memory */

static void *backend_alloc(struct accel_pool *pool, size_t size)
{
	void *p;

	if (accel_memory_alloc(pool->dev, size, true, &p) != C_SUCCESS)
		return NULL;
	stat_add(&pool->reserved, &pool->reserved_peak, size);
	atomic_fetch_add(&pool->backend_allocs, 1);
	return p;
}

static void backend_free(struct accel_pool *pool, uintptr_t addr, size_t size)
{
	accel_memory_free_pooled(pool->dev, (void *)addr);
	stat_sub(&pool->reserved, size);
	atomic_fetch_add(&pool->backend_frees, 1);
}

/* ------------------------------------------------------------------ */
/* Blocks within an arena (arena lock held) */

/*
 * A zeroed block struct. They come in slabs, one cache line each, so that
 * walking blocks touches as few lines as possible; slabs are the pool's
 * until it is destroyed, whichever arena the blocks wander to.
 */
static struct pool_block *slab_take(struct accel_pool *pool,
				    struct slab_cursor *cur)
{
	struct pool_block *b;

	if (cur->next == cur->end) {
		struct pool_block *s;
		struct pool_slab *link;

		s = aligned_alloc(_Alignof(struct pool_block),
				  SLAB_BLOCKS * sizeof(*s));
		if (!s)
			return NULL;
		link = (struct pool_slab *)s;
		link->next = atomic_load(&pool->slabs);
		while (!atomic_compare_exchange_weak(&pool->slabs, &link->next,
						     link))
			;
		cur->next = s + 1;
		cur->end = s + SLAB_BLOCKS;
	}
	b = cur->next++;
	memset(b, 0, sizeof(*b));
	return b;
}

static struct pool_block *block_take(struct accel_pool *pool,
				     struct pool_block **spare,
				     struct slab_cursor *cur)
{
	struct pool_block *b = *spare;

	if (!b)
		return slab_take(pool, cur);
	*spare = b->next;
	memset(b, 0, sizeof(*b));
	return b;
}

static void block_give(struct pool_block **spare, struct pool_block *b)
{
	b->next = *spare;
	*spare = b;
}

/* Arena lock held. */
static struct pool_block *block_get(struct accel_pool *pool,
				    struct pool_arena *a)
{
	return block_take(pool, &a->spare, &a->cursor);
}

static void block_put(struct pool_arena *a, struct pool_block *b)
{
	block_give(&a->spare, b);
}

/* Pool lock held. */
static struct pool_block *pool_block_get(struct accel_pool *pool)
{
	return block_take(pool, &pool->spare, &pool->cursor);
}

static void pool_block_put(struct accel_pool *pool, struct pool_block *b)
{
	block_give(&pool->spare, b);
}

/* Take @need bytes from the front of the free block @b and mark them used. */
static C_Status carve(struct accel_pool *pool, struct pool_arena *a,
		      struct pool_block *b, size_t need, size_t requested)
{
	struct pool_block *rest = NULL;

	if (b->size > need) {
		rest = block_get(pool, a);
		if (!rest)
			return accel_error("out of host memory");
	}
	if (!pool_map_insert(&a->map, b)) {
		if (rest)
			block_put(a, rest);
		return accel_error("out of host memory");
	}
	pool_index_remove(&a->index, b);
	if (rest) {
		rest->addr = b->addr + need;
		rest->size = b->size - need;
		rest->state = BLOCK_FREE;
		rest->prev = b;
		rest->next = b->next;
		if (rest->next)
			rest->next->prev = rest;
		b->next = rest;
		b->size = need;
		pool_index_insert(&a->index, rest);
	}
	b->state = BLOCK_USED;
	b->requested = requested;
	return C_SUCCESS;
}

/* Merge @b with its free right neighbour. */
static void absorb_next(struct pool_arena *a, struct pool_block *b)
{
	struct pool_block *n = b->next;

	pool_index_remove(&a->index, n);
	b->size += n->size;
	b->next = n->next;
	if (b->next)
		b->next->prev = b;
	block_put(a, n);
}

/* Return a used or pending block to the free index, merged with free neighbours. */
static void make_free(struct pool_arena *a, struct pool_block *b)
{
	b->state = BLOCK_FREE;
	if (b->next && b->next->state == BLOCK_FREE)
		absorb_next(a, b);
	if (b->prev && b->prev->state == BLOCK_FREE) {
		struct pool_block *p = b->prev;

		pool_index_remove(&a->index, p);
		p->size += b->size;
		p->next = b->next;
		if (p->next)
			p->next->prev = p;
		block_put(a, b);
		b = p;
	}
	pool_index_insert(&a->index, b);
}

/* ------------------------------------------------------------------ */
/* Chunks within an arena (arena lock held) */

static void chunk_link(struct pool_chunk **list, struct pool_chunk *c)
{
	c->prev = NULL;
	c->next = *list;
	if (c->next)
		c->next->prev = c;
	*list = c;
}

static void chunk_unlink(struct pool_chunk **list, struct pool_chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		*list = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

static void adopt(struct pool_arena *a, struct pool_chunk *c)
{
	c->arena = a;
	chunk_link(&a->chunks, c);
	pool_index_insert(&a->index, c->first);
}

/* Take an idle chunk out of its arena. */
static void detach(struct pool_arena *a, struct pool_chunk *c)
{
	pool_index_remove(&a->index, c->first);
	chunk_unlink(&a->chunks, c);
	c->arena = NULL;
}

static bool chunk_idle(const struct pool_chunk *c)
{
	return c->first->state == BLOCK_FREE && !c->first->next;
}

/* The smallest idle chunk of @list of at least @need bytes. */
static struct pool_chunk *idle_fit(struct pool_chunk *list, size_t need)
{
	struct pool_chunk *best = NULL;

	for (struct pool_chunk *c = list; c; c = c->next)
		if (chunk_idle(c) && c->size >= need &&
		    (!best || c->size < best->size))
			best = c;
	return best;
}

/* ------------------------------------------------------------------ */
/* Arenas */

static struct pool_arena *arena_new(struct accel_pool *pool,
				    struct C_Stream_st *stream)
{
	struct pool_arena *a = calloc(1, sizeof(*a));

	if (!a || !pool_map_init(&a->map)) {
		free(a);
		accel_error("out of host memory");
		return NULL;
	}
	pthread_mutex_init(&a->lock, NULL);
	pool_index_init(&a->index, pool->granule);
	a->stream = stream;
	a->next = pool->arenas;
	pool->arenas = a;
	return a;
}

static void arena_free(struct pool_arena *a)
{
	pool_map_destroy(&a->map);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* Pool lock held: forget an arena with no chunks left. */
static void arena_drop(struct accel_pool *pool, struct pool_arena *a)
{
	struct pool_arena **pp = &pool->arenas;

	while (*pp != a)
		pp = &(*pp)->next;
	*pp = a->next;
	arena_free(a);
}

/*
 * Pool lock held. An orphan's idle chunks go to the shared list; the orphan
 * goes when nothing is left in it.
 */
static void orphan_tidy(struct accel_pool *pool, struct pool_arena *a)
{
	struct pool_chunk *c, *next;
	bool empty;

	pthread_mutex_lock(&a->lock);
	for (c = a->chunks; c; c = next) {
		next = c->next;
		if (chunk_idle(c)) {
			detach(a, c);
			chunk_link(&pool->shared, c);
		}
	}
	empty = !a->chunks && !a->pending;
	pthread_mutex_unlock(&a->lock);
	if (empty)
		arena_drop(pool, a);
}

static struct pool_arena *thread_arena(struct accel_pool *pool)
{
	struct pool_arena *a;

	if (thread_slot < 0)
		thread_slot = (int)(atomic_fetch_add(&thread_slots, 1) %
				    THREAD_ARENAS);
	a = atomic_load_explicit(&pool->threads[thread_slot],
				 memory_order_acquire);
	if (a)
		return a;
	pthread_mutex_lock(&pool->lock);
	a = atomic_load(&pool->threads[thread_slot]);
	if (!a) {
		a = arena_new(pool, NULL);
		atomic_store_explicit(&pool->threads[thread_slot], a,
				      memory_order_release);
	}
	pthread_mutex_unlock(&pool->lock);
	return a;
}

static struct pool_arena *cached_arena(struct accel_pool *pool,
				       C_Stream stream)
{
	uint64_t epoch = atomic_load_explicit(&pool->epoch,
					      memory_order_acquire);

	for (int i = 0; i < THREAD_CACHE; i++) {
		struct thread_cache_entry *e = &thread_cache[i];

		if (e->pool == pool && e->stream == stream &&
		    e->id == pool->id && e->epoch == epoch)
			return e->arena;
	}
	return NULL;
}

static struct pool_arena *stream_arena(struct accel_pool *pool,
				       C_Stream stream)
{
	struct pool_arena *a = cached_arena(pool, stream);
	struct thread_cache_entry *e;
	struct C_Stream_st *st;
	uint64_t epoch;

	if (a)
		return a;
	st = accel_stream_lookup(pool->dev, stream);
	if (!st)
		return NULL;
	pthread_mutex_lock(&pool->lock);
	for (a = pool->arenas; a; a = a->next)
		if (a->stream == st)
			break;
	if (!a)
		a = arena_new(pool, st);
	epoch = atomic_load(&pool->epoch);
	pthread_mutex_unlock(&pool->lock);
	if (a) {
		e = &thread_cache[thread_cache_next++ % THREAD_CACHE];
		*e = (struct thread_cache_entry){ pool, pool->id, epoch, stream,
						  a };
	}
	return a;
}

/* The arena a call with @stream works in; NULL with the error set. */
static struct pool_arena *arena_of(struct accel_pool *pool, C_Stream stream)
{
	return stream ? stream_arena(pool, stream) : thread_arena(pool);
}

/* ------------------------------------------------------------------ */
/* Events */

/*
 * Record an event after the work queued so far on @st; NULL with the error
 * set if the backend cannot.
 */
static void *record_event(struct accel_device *dev, struct C_Stream_st *st)
{
	void *ev;

	if (dev->be->event_create(dev, &ev) != C_SUCCESS)
		return NULL;
	if (dev->be->event_record(dev, st->priv, ev) != C_SUCCESS) {
		dev->be->event_destroy(dev, ev);
		return NULL;
	}
	return ev;
}

/* Pool lock held: free the pending blocks whose event has completed. */
static void reclaim_pending(struct accel_pool *pool)
{
	struct accel_device *dev = pool->dev;
	struct pool_arena *a, *next;

	for (a = pool->arenas; a; a = next) {
		struct pool_pending **pp;

		next = a->next;
		pthread_mutex_lock(&a->lock);
		for (pp = &a->pending; *pp;) {
			struct pool_pending *p = *pp;

			if (dev->be->event_query(dev, p->event) == C_WARNING) {
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			dev->be->event_destroy(dev, p->event);
			make_free(a, p->block);
			free(p);
		}
		pthread_mutex_unlock(&a->lock);
		if (a->orphan)
			orphan_tidy(pool, a);
	}
}

/* ------------------------------------------------------------------ */
/* Finding a chunk (pool lock held) */

static struct pool_chunk *take_shared(struct accel_pool *pool, size_t need)
{
	struct pool_chunk *c = idle_fit(pool->shared, need);

	if (c)
		chunk_unlink(&pool->shared, c);
	return c;
}

/*
 * May work on @to (NULL: the caller, with no stream) use memory that work
 * on @from may still be using? Yes, behind an event: @to waits for it on
 * the device; a caller with no stream only if it has completed.
 */
static bool order_after(struct accel_device *dev, struct C_Stream_st *from,
			struct C_Stream_st *to)
{
	void *ev = record_event(dev, from);
	bool ok;

	if (!ev)
		return false;
	if (to)
		ok = dev->be->stream_wait_event(dev, to->priv, ev) == C_SUCCESS;
	else
		ok = dev->be->event_query(dev, ev) == C_SUCCESS;
	dev->be->event_destroy(dev, ev);
	return ok;
}

/* An idle chunk of another arena, made safe for work on @st. */
static struct pool_chunk *steal(struct accel_pool *pool,
				struct pool_arena *self, size_t need,
				struct C_Stream_st *st)
{
	for (struct pool_arena *a = pool->arenas; a; a = a->next) {
		struct pool_chunk *c;
		bool busy;

		if (a == self)
			continue;
		pthread_mutex_lock(&a->lock);
		c = idle_fit(a->chunks, need);
		if (c)
			detach(a, c);
		busy = a->stream && a->stream != st;
		pthread_mutex_unlock(&a->lock);
		if (!c)
			continue;
		if (!busy || order_after(pool->dev, a->stream, st))
			return c;
		pthread_mutex_lock(&a->lock);
		adopt(a, c);
		pthread_mutex_unlock(&a->lock);
	}
	accel_clear_last_error();
	return NULL;
}

static struct pool_chunk *chunk_new(struct accel_pool *pool, size_t size)
{
	struct pool_chunk *c = calloc(1, sizeof(*c));
	struct pool_block *b = pool_block_get(pool);
	void *p = NULL;

	if (!c || !b)
		accel_error("out of host memory");
	else
		p = backend_alloc(pool, size);
	if (!p) {
		free(c);
		if (b)
			pool_block_put(pool, b);
		return NULL;
	}
	c->addr = b->addr = (uintptr_t)p;
	c->size = b->size = size;
	c->first = b;
	b->state = BLOCK_FREE;
	atomic_fetch_add(&pool->chunks, 1);
	return c;
}

static void chunk_release(struct accel_pool *pool, struct pool_chunk *c)
{
	backend_free(pool, c->addr, c->size);
	pool_block_put(pool, c->first);
	free(c);
	stat_sub(&pool->chunks, 1);
}

/* Pool lock held: give every idle chunk back to the backend. */
static size_t release_idle(struct accel_pool *pool)
{
	struct pool_chunk *idle = NULL, *c, *next;
	size_t n = 0;

	for (struct pool_arena *a = pool->arenas; a; a = a->next) {
		pthread_mutex_lock(&a->lock);
		for (c = a->chunks; c; c = next) {
			next = c->next;
			if (chunk_idle(c)) {
				detach(a, c);
				chunk_link(&idle, c);
			}
		}
		pthread_mutex_unlock(&a->lock);
	}
	while (pool->shared) {
		c = pool->shared;
		chunk_unlink(&pool->shared, c);
		chunk_link(&idle, c);
	}
	for (c = idle; c; c = next, n++) {
		next = c->next;
		chunk_release(pool, c);
	}
	return n;
}

static size_t chunk_size_for(struct accel_pool *pool, size_t need)
{
	size_t size = pool->grown ? pool->realloc_size : pool->init_size;

	return size > need ? size : need;
}

/*
 * A new chunk for @need bytes. Out of device memory, the pool gives its
 * idle chunks back and tries once more.
 */
static struct pool_chunk *grow(struct accel_pool *pool, size_t need)
{
	size_t size = chunk_size_for(pool, need);
	struct pool_chunk *c = chunk_new(pool, size);

	if (!c && (release_idle(pool) || size > need))
		c = chunk_new(pool, need);
	if (c)
		pool->grown = true;
	return c;
}

/* ------------------------------------------------------------------ */
/* Allocation */

static bool take_fit(struct accel_pool *pool, struct pool_arena *a,
		     size_t need, size_t requested, void **ptr, C_Status *ret)
{
	struct pool_block *b = pool_index_best_fit(&a->index, need);

	if (!b)
		return false;
	*ret = carve(pool, a, b, need, requested);
	if (*ret == C_SUCCESS)
		*ptr = (void *)b->addr;
	return true;
}

/* The backend's reason, with what the pool holds. */
static C_Status out_of_memory(struct accel_pool *pool, size_t requested)
{
	char why[256];

	snprintf(why, sizeof(why), "%s", accel_get_last_error());
	return accel_error("out of device memory for %zu bytes on %s; the pool holds %zu bytes, %zu of them allocated (%s)",
			   requested, pool->dev->name,
			   atomic_load(&pool->reserved),
			   atomic_load(&pool->allocated), why);
}

static C_Status alloc_slow(struct accel_pool *pool, struct pool_arena *a,
			   size_t need, size_t requested, void **ptr)
{
	struct pool_chunk *c;
	C_Status ret = C_SUCCESS;
	bool done;

	pthread_mutex_lock(&pool->lock);
	reclaim_pending(pool);
	pthread_mutex_lock(&a->lock);
	done = take_fit(pool, a, need, requested, ptr, &ret);
	pthread_mutex_unlock(&a->lock);
	if (done)
		goto out;
	c = take_shared(pool, need);
	if (!c)
		c = steal(pool, a, need, a->stream);
	if (!c)
		c = grow(pool, need);
	if (!c) {
		ret = out_of_memory(pool, requested);
		goto out;
	}
	pthread_mutex_lock(&a->lock);
	adopt(a, c);
	take_fit(pool, a, need, requested, ptr, &ret);
	pthread_mutex_unlock(&a->lock);
out:
	pthread_mutex_unlock(&pool->lock);
	return ret;
}

/* Straight to the backend: large requests, and every one with ACCEL_POOL=off. */
static C_Status alloc_direct(struct accel_pool *pool, size_t requested,
			     void **ptr)
{
	size_t size = requested + pool->padding;
	C_Status ret = C_SUCCESS;
	struct pool_block *b;
	void *p = NULL;

	pthread_mutex_lock(&pool->lock);
	b = pool_block_get(pool);
	if (b) {
		p = backend_alloc(pool, size);
		if (!p && release_idle(pool))
			p = backend_alloc(pool, size);
	}
	if (!b) {
		ret = accel_error("out of host memory");
	} else if (!p) {
		ret = out_of_memory(pool, requested);
	} else {
		b->addr = (uintptr_t)p;
		b->size = size;
		b->requested = requested;
		b->state = BLOCK_USED;
		if (!pool_map_insert(&pool->direct, b)) {
			backend_free(pool, b->addr, size);
			ret = accel_error("out of host memory");
		}
	}
	if (b && ret != C_SUCCESS)
		pool_block_put(pool, b);
	pthread_mutex_unlock(&pool->lock);
	if (ret != C_SUCCESS)
		return ret;
	count_use(pool, size, requested);
	*ptr = p;
	return C_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Free */

static C_Status wrong_size(void *ptr, size_t size, size_t requested)
{
	return accel_error("size %zu does not match the size %zu that %p was allocated with",
			   size, requested, ptr);
}

/*
 * Release a used block of arena @a (locked), freed with @st: at once if
 * the arena's stream orders the reuse, else once an event recorded on @st
 * now has completed.
 */
static C_Status release(struct accel_pool *pool, struct pool_arena *a,
			struct pool_block *b, struct C_Stream_st *st)
{
	struct pool_pending *p;

	if (!st || st == a->stream) {
		pool_map_remove(&a->map, b);
		make_free(a, b);
		return C_SUCCESS;
	}
	p = malloc(sizeof(*p));
	if (!p)
		return accel_error("out of host memory");
	p->event = record_event(pool->dev, st);
	if (!p->event) {
		free(p);
		return C_FAILED;
	}
	pool_map_remove(&a->map, b);
	b->state = BLOCK_PENDING;
	p->block = b;
	p->next = a->pending;
	a->pending = p;
	return C_SUCCESS;
}

/* Try to free @ptr in arena @a; false if it is not a live block of @a. */
static bool free_in(struct accel_pool *pool, struct pool_arena *a,
		    struct C_Stream_st *st, void *ptr, size_t size,
		    C_Status *ret)
{
	struct pool_block *b;
	size_t used, requested;

	pthread_mutex_lock(&a->lock);
	b = pool_map_find(&a->map, (uintptr_t)ptr);
	if (!b) {
		pthread_mutex_unlock(&a->lock);
		return false;
	}
	used = b->size;
	requested = b->requested;
	if (requested != size)
		*ret = wrong_size(ptr, size, requested);
	else
		*ret = release(pool, a, b, st);
	pthread_mutex_unlock(&a->lock);
	if (*ret == C_SUCCESS)
		count_unuse(pool, used, requested);
	return true;
}

static bool free_direct(struct accel_pool *pool, void *ptr, size_t size,
			C_Status *ret)
{
	struct pool_block *b = pool_map_find(&pool->direct, (uintptr_t)ptr);

	if (!b)
		return false;
	if (b->requested != size) {
		*ret = wrong_size(ptr, size, b->requested);
		return true;
	}
	pool_map_remove(&pool->direct, b);
	backend_free(pool, b->addr, b->size);
	count_unuse(pool, b->size, b->requested);
	pool_block_put(pool, b);
	*ret = C_SUCCESS;
	return true;
}

/* A block of another arena, a large block, or no block of this pool. */
static C_Status free_slow(struct accel_pool *pool, struct pool_arena *self,
			  struct C_Stream_st *st, void *ptr, size_t size)
{
	C_Status ret = C_SUCCESS;
	bool found;

	pthread_mutex_lock(&pool->lock);
	found = free_direct(pool, ptr, size, &ret);
	for (struct pool_arena *a = pool->arenas; a && !found; a = a->next) {
		if (a == self || !free_in(pool, a, st, ptr, size, &ret))
			continue;
		if (a->orphan)
			orphan_tidy(pool, a);	/* may free a */
		found = true;
		break;
	}
	pthread_mutex_unlock(&pool->lock);
	if (!found)
		return accel_error("%p is not a live block of this pool on %s (freed already, or never allocated here)",
				   ptr, pool->dev->name);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Pools */

/* ACCEL_POOL: "on" (the default) or "off" (every request to the backend). */
static C_Status caching_setting(bool *caching)
{
	const char *v = getenv("ACCEL_POOL");

	*caching = true;
	if (!v || !strcmp(v, "on") || !strcmp(v, "1"))
		return C_SUCCESS;
	if (!strcmp(v, "off") || !strcmp(v, "0")) {
		*caching = false;
		return C_SUCCESS;
	}
	return accel_error("ACCEL_POOL=\"%s\" is not \"on\" or \"off\"", v);
}

static C_Status read_policy(struct accel_pool *pool, C_Device device)
{
	if (accel_device_min_chunk_size(device, &pool->granule) != C_SUCCESS ||
	    accel_device_extra_padding_size(device, &pool->padding) != C_SUCCESS ||
	    accel_device_max_chunk_size(device, &pool->max_chunk) != C_SUCCESS ||
	    accel_device_init_alloc_size(device, &pool->init_size) != C_SUCCESS ||
	    accel_device_realloc_size(device, &pool->realloc_size) != C_SUCCESS)
		return C_FAILED;
	return C_SUCCESS;
}

static struct accel_pool *pool_struct(void)
{
	struct accel_pool *pool;

	pthread_mutex_lock(&dead_lock);
	pool = dead_pools;
	if (pool)
		dead_pools = pool->next;
	pthread_mutex_unlock(&dead_lock);
	if (!pool)
		pool = malloc(sizeof(*pool));
	if (pool)
		memset(pool, 0, sizeof(*pool));
	return pool;
}

static void pool_bury(struct accel_pool *pool)
{
	pool->magic = POOL_DEAD;
	pthread_mutex_lock(&dead_lock);
	pool->next = dead_pools;
	dead_pools = pool;
	pthread_mutex_unlock(&dead_lock);
}

static C_Status pool_new(const C_Device device, struct accel_device *dev,
			 struct accel_pool **out)
{
	struct accel_pool *pool = pool_struct();
	bool caching;

	if (!pool)
		return accel_error("out of host memory");
	if (caching_setting(&caching) != C_SUCCESS ||
	    read_policy(pool, device) != C_SUCCESS)
		goto fail;
	if (!pool_map_init(&pool->direct)) {
		accel_error("out of host memory");
		goto fail;
	}
	pool->caching = caching;
	pool->dev = dev;
	pool->id = atomic_fetch_add(&pool_ids, 1);
	pthread_mutex_init(&pool->lock, NULL);
	pthread_mutex_lock(&dev->pool_lock);
	pool->next = dev->pools;
	dev->pools = pool;
	pthread_mutex_unlock(&dev->pool_lock);
	pool->magic = POOL_MAGIC;
	*out = pool;
	return C_SUCCESS;
fail:
	pool_bury(pool);
	return C_FAILED;
}

static struct accel_pool *pool_lookup(accel_pool_t pool)
{
	if (!pool) {
		accel_error("the pool is NULL");
		return NULL;
	}
	if (pool->magic != POOL_MAGIC) {
		accel_error("pool %p is not a live pool", (void *)pool);
		return NULL;
	}
	return pool;
}

static void pool_free_everything(struct accel_pool *pool)
{
	struct pool_arena *a;

	accel_device_drain(pool->dev);
	pthread_mutex_lock(&pool->lock);
	for (size_t i = 0; i <= pool->direct.mask; i++) {
		struct pool_block *b = pool->direct.slots[i].block;

		if (b)
			backend_free(pool, b->addr, b->size);
	}
	pool_map_destroy(&pool->direct);
	while ((a = pool->arenas)) {
		pool->arenas = a->next;
		while (a->pending) {
			struct pool_pending *p = a->pending;

			a->pending = p->next;
			pool->dev->be->event_destroy(pool->dev, p->event);
			make_free(a, p->block);
			free(p);
		}
		while (a->chunks) {
			struct pool_chunk *c = a->chunks;

			chunk_unlink(&a->chunks, c);
			chunk_link(&pool->shared, c);
		}
		arena_free(a);
	}
	while (pool->shared) {
		struct pool_chunk *c = pool->shared;

		chunk_unlink(&pool->shared, c);
		chunk_release(pool, c);
	}
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_destroy(&pool->lock);
	/* every block struct, of live allocations too */
	while (pool->slabs) {
		struct pool_slab *s = pool->slabs;

		pool->slabs = s->next;
		free(s);
	}
}

/* ------------------------------------------------------------------ */
/* Hooks */

void accel_pools_stream_gone(struct accel_device *dev, struct C_Stream_st *st)
{
	pthread_mutex_lock(&dev->pool_lock);
	for (struct accel_pool *pool = dev->pools; pool; pool = pool->next) {
		pthread_mutex_lock(&pool->lock);
		for (struct pool_arena *a = pool->arenas; a; a = a->next) {
			if (a->stream != st)
				continue;
			a->stream = NULL;
			a->orphan = true;
			atomic_fetch_add(&pool->epoch, 1);
			orphan_tidy(pool, a);
			break;
		}
		pthread_mutex_unlock(&pool->lock);
	}
	pthread_mutex_unlock(&dev->pool_lock);
}

/* ------------------------------------------------------------------ */
/* The public functions */

C_Status accel_pool_create(const C_Device device, accel_pool_t *pool)
{
	struct accel_device *dev;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return C_FAILED;
	if (!pool)
		return accel_error("pool is NULL");
	return pool_new(device, dev, pool);
}

C_Status accel_device_pool(const C_Device device, accel_pool_t *pool)
{
	struct accel_device *dev;
	C_Status ret = C_SUCCESS;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return C_FAILED;
	if (!pool)
		return accel_error("pool is NULL");
	pthread_mutex_lock(&dev->default_pool_lock);
	if (!dev->default_pool)
		ret = pool_new(device, dev, &dev->default_pool);
	*pool = dev->default_pool;
	pthread_mutex_unlock(&dev->default_pool_lock);
	return ret;
}

C_Status accel_pool_destroy(accel_pool_t handle)
{
	struct accel_pool *pool, **pp;
	struct accel_device *dev;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return C_FAILED;
	dev = pool->dev;
	if (pool == dev->default_pool)
		return accel_error("the default pool of %s cannot be destroyed",
				   dev->name);
	pool->magic = POOL_DEAD;
	pthread_mutex_lock(&dev->pool_lock);
	for (pp = &dev->pools; *pp != pool; pp = &(*pp)->next)
		;
	*pp = pool->next;
	pthread_mutex_unlock(&dev->pool_lock);
	pool_free_everything(pool);
	pool_bury(pool);
	return C_SUCCESS;
}

C_Status accel_pool_allocate(accel_pool_t handle, C_Stream stream,
			     void **ptr, size_t size)
{
	struct accel_pool *pool;
	struct pool_arena *a;
	C_Status ret = C_SUCCESS;
	size_t need;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return C_FAILED;
	if (!ptr)
		return accel_error("ptr is NULL");
	*ptr = NULL;
	a = arena_of(pool, stream);
	if (!a)
		return C_FAILED;
	if (!size)
		return C_SUCCESS;
	need = size + pool->padding + pool->granule - 1;
	if (need < size)
		return accel_error("size %zu is too large", size);
	need &= ~(pool->granule - 1);
	if (!pool->caching || need > pool->max_chunk)
		return alloc_direct(pool, size, ptr);

	pthread_mutex_lock(&a->lock);
	if (!take_fit(pool, a, need, size, ptr, &ret)) {
		pthread_mutex_unlock(&a->lock);
		ret = alloc_slow(pool, a, need, size, ptr);
	} else {
		pthread_mutex_unlock(&a->lock);
	}
	if (ret == C_SUCCESS)
		count_use(pool, need, size);
	return ret;
}

C_Status accel_pool_deallocate(accel_pool_t handle, C_Stream stream,
			       void *ptr, size_t size)
{
	struct accel_pool *pool;
	struct pool_arena *a;
	C_Status ret;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return C_FAILED;
	a = arena_of(pool, stream);
	if (!a)
		return C_FAILED;
	if (!ptr && !size)
		return C_SUCCESS;
	if (!ptr)
		return accel_error("ptr is NULL but size is %zu", size);
	if (!stream)	/* as a synchronous free: no queued work may use it */
		accel_device_drain(pool->dev);
	if (free_in(pool, a, a->stream, ptr, size, &ret))
		return ret;
	return free_slow(pool, a, a->stream, ptr, size);
}

C_Status accel_pool_trim(accel_pool_t handle)
{
	struct accel_pool *pool;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return C_FAILED;
	accel_device_drain(pool->dev);
	pthread_mutex_lock(&pool->lock);
	reclaim_pending(pool);
	release_idle(pool);
	pthread_mutex_unlock(&pool->lock);
	return C_SUCCESS;
}

/* Pool lock held: live blocks, free blocks and the largest of them. */
static void count_blocks(struct accel_pool *pool, struct accel_pool_stats *s)
{
	size_t *count = &s->free_blocks, *largest = &s->largest_free;

	s->blocks = pool->direct.count;
	for (struct pool_arena *a = pool->arenas; a; a = a->next) {
		size_t l;

		pthread_mutex_lock(&a->lock);
		s->blocks += a->map.count;
		*count += a->index.count;
		l = pool_index_largest(&a->index);
		pthread_mutex_unlock(&a->lock);
		if (l > *largest)
			*largest = l;
	}
	for (struct pool_chunk *c = pool->shared; c; c = c->next) {
		++*count;
		if (c->size > *largest)
			*largest = c->size;
	}
}

C_Status accel_pool_get_stats(accel_pool_t handle,
			      struct accel_pool_stats *stats)
{
	struct accel_pool *pool;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return C_FAILED;
	if (!stats)
		return accel_error("stats is NULL");
	memset(stats, 0, sizeof(*stats));
	pthread_mutex_lock(&pool->lock);
	stats->reserved = atomic_load(&pool->reserved);
	stats->reserved_peak = atomic_load(&pool->reserved_peak);
	stats->allocated = atomic_load(&pool->allocated);
	stats->allocated_peak = atomic_load(&pool->allocated_peak);
	stats->requested = atomic_load(&pool->requested);
	stats->requested_peak = atomic_load(&pool->requested_peak);
	stats->chunks = atomic_load(&pool->chunks);
	stats->backend_allocs = atomic_load(&pool->backend_allocs);
	stats->backend_frees = atomic_load(&pool->backend_frees);
	count_blocks(pool, stats);
	stats->caching = pool->caching;
	pthread_mutex_unlock(&pool->lock);
	return C_SUCCESS;
}

C_Status accel_pool_reset_peaks(accel_pool_t handle)
{
	struct accel_pool *pool;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return C_FAILED;
	atomic_store(&pool->reserved_peak, atomic_load(&pool->reserved));
	atomic_store(&pool->allocated_peak, atomic_load(&pool->allocated));
	atomic_store(&pool->requested_peak, atomic_load(&pool->requested));
	return C_SUCCESS;
}
