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
 * arena's becomes free once an event recorded at the free has completed;
 * one freed with no stream, once events recorded at the free on every
 * stream of the device have: no free waits on the host.
 *
 * The slow path (growing, stealing, trimming) runs under the pool's lock;
 * lock order is device pool_lock, then pool lock, then arena locks.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/pool.h"

/* The stream arenas this thread used last, so it finds them with no lock. */
struct thread_cache_entry {
	struct accel_pool *pool;
	uint64_t id, epoch;
	accel_stream_t stream;
	struct pool_arena *arena;
};

static _Thread_local struct thread_cache_entry thread_cache[THREAD_CACHE];
static ACCEL_TLS_HOT unsigned int thread_cache_next;
static ACCEL_TLS_HOT int thread_slot = -1;

static atomic_uint thread_slots;
static atomic_uint_fast64_t pool_ids = 1;

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
		a = pool_arena_new(pool, NULL);
		atomic_store_explicit(&pool->threads[thread_slot], a,
				      memory_order_release);
	}
	pthread_mutex_unlock(&pool->lock);
	return a;
}

static struct pool_arena *cached_arena(struct accel_pool *pool,
				       accel_stream_t stream)
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
				       accel_stream_t stream, struct accel_stream *st)
{
	struct pool_arena *a = cached_arena(pool, stream);
	struct thread_cache_entry *e;
	uint64_t epoch;

	if (a)
		return a;
	pthread_mutex_lock(&pool->lock);
	for (a = pool->arenas; a; a = a->next)
		if (a->stream == st)
			break;
	if (!a)
		a = pool_arena_new(pool, st);
	epoch = atomic_load(&pool->epoch);
	pthread_mutex_unlock(&pool->lock);
	if (a) {
		e = &thread_cache[thread_cache_next++ % THREAD_CACHE];
		*e = (struct thread_cache_entry){ pool, pool->id, epoch, stream,
						  a };
	}
	return a;
}

/*
 * The arena a call with @stream (resolved: @st, referenced, put by the
 * caller) works in; NULL with the error set.
 */
static struct pool_arena *arena_of(struct accel_pool *pool, accel_stream_t stream,
				   struct accel_stream **st)
{
	if (!stream)
		return thread_arena(pool);
	*st = accel_stream_lookup(pool->dev, stream);
	return *st ? stream_arena(pool, stream, *st) : NULL;
}

/* ------------------------------------------------------------------ */
/* Allocation */

/*
 * Arena lock held. The block is counted before the lock goes, so that a
 * free of it (which takes the lock) is counted after it.
 */
static bool take_fit(struct accel_pool *pool, struct pool_arena *a,
		     size_t need, size_t requested, void **ptr, accel_status_t *ret)
{
	struct pool_block *b = pool_index_best_fit(&a->index, need);

	if (!b)
		return false;
	*ret = pool_carve(pool, a, b, need, requested);
	if (*ret == ACCEL_SUCCESS) {
		count_use(pool, need, requested);
		a->allocations++;
		*ptr = (void *)b->addr;
		pool_history_note(pool, ACCEL_POOL_ALLOC,
				  ACCEL_POOL_BLOCK_ALLOCATED, b->addr, need,
				  requested, true);
	}
	return true;
}

/* The backend's reason, with what the pool holds. */
static accel_status_t out_of_memory(struct accel_pool *pool, size_t requested)
{
	char why[256];

	snprintf(why, sizeof(why), "%s", accel_get_last_error());
	return accel_oom_error("out of device memory for %zu bytes on %s; the pool holds %zu bytes, %zu of them allocated (%s)",
			   requested, pool->dev->name,
			   atomic_load(&pool->reserved),
			   atomic_load(&pool->allocated), why);
}

/* Pool lock held: a large block that no queued work uses, back to the backend. */
static void direct_give_back(struct accel_pool *pool, struct pool_block *b)
{
	pool_backend_free_idle(pool, b->addr, b->size);
	pool_block_put(pool, b);
}

/* Pool lock held: give back the large blocks whose pending free is over. */
static void reclaim_direct(struct accel_pool *pool)
{
	struct pool_pending **pp = &pool->direct_pending;

	while (*pp) {
		struct pool_pending *p = *pp;
		struct pool_block *b = p->block;

		if (!pool_pending_done(pool->dev, p)) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		pool_pending_free(pool->dev, p);
		pool_history_free_done(pool, b);
		direct_give_back(pool, b);
	}
}

void pool_reclaim(struct accel_pool *pool)
{
	reclaim_direct(pool);
	pool_reclaim_pending(pool);
	pool_settle_releasing(pool, false);
}

/*
 * Pool lock held: give back the large blocks whose pending free is over;
 * @wait: all of them, after waiting for their work. False if none was
 * pending.
 */
static bool settle_direct(struct accel_pool *pool, bool wait)
{
	bool any = pool->direct_pending;

	if (wait)
		for (struct pool_pending *p = pool->direct_pending; p;
		     p = p->next)
			accel_marks_sync(p->events, p->nevents);
	reclaim_direct(pool);
	return any;
}

/*
 * Pool lock held, out of memory: wait for the work that pending frees are
 * behind, and take them back. False if there were none.
 */
static bool settle_pending(struct accel_pool *pool)
{
	bool any = settle_direct(pool, true) | pool_settle_releasing(pool, true);

	for (struct pool_arena *a = pool->arenas; a; a = a->next) {
		pthread_mutex_lock(&a->lock);
		for (struct pool_pending *p = a->pending; p; p = p->next) {
			any = true;
			accel_marks_sync(p->events, p->nevents);
		}
		pthread_mutex_unlock(&a->lock);
	}
	pool_reclaim_pending(pool);
	return any;
}

static accel_status_t alloc_slow(struct accel_pool *pool, struct pool_arena *a,
			   size_t need, size_t requested, void **ptr)
{
	struct pool_chunk *c;
	accel_status_t ret = ACCEL_SUCCESS;
	bool done, settled = false;
	struct accel_error_state before;

	/* the tries that fail on the way (a chunk too big, an event) */
	accel_error_keep(&before);
	pthread_mutex_lock(&pool->lock);
	pool_reclaim(pool);
again:
	pthread_mutex_lock(&a->lock);
	done = take_fit(pool, a, need, requested, ptr, &ret);
	pthread_mutex_unlock(&a->lock);
	if (done)
		goto out;
	c = pool_take_shared(pool, need);
	if (!c)
		c = pool_steal(pool, a, need, a->stream);
	if (!c)
		c = pool_grow(pool, need);
	if (!c && !settled) {
		settled = true;
		if (settle_pending(pool))
			goto again;
	}
	if (!c) {
		ret = out_of_memory(pool, requested);
		goto out;
	}
	pthread_mutex_lock(&a->lock);
	pool_adopt(a, c);
	take_fit(pool, a, need, requested, ptr, &ret);
	pthread_mutex_unlock(&a->lock);
out:
	pthread_mutex_unlock(&pool->lock);
	if (ret == ACCEL_SUCCESS)
		accel_error_restore(&before);
	return ret;
}

/*
 * Straight to the backend: large requests, and every one with ACCEL_POOL=off.
 * @size: padded and rounded to the device's allocation granule, as the
 * device rounds it, so that the statistics and the registered range are
 * what the device gave.
 */
static accel_status_t alloc_direct(struct accel_pool *pool, size_t size,
				   size_t requested, void **ptr)
{
	accel_status_t ret = ACCEL_SUCCESS;
	struct pool_block *b;
	void *p = NULL;
	struct accel_error_state before;

	accel_error_keep(&before);	/* the first try may fail */
	pthread_mutex_lock(&pool->lock);
	reclaim_direct(pool);
	b = pool_block_get(pool);
	if (b) {
		p = pool_backend_alloc(pool, size);
		if (!p && (settle_pending(pool) | (pool_release_idle(pool) > 0)))
			p = pool_backend_alloc(pool, size);
	}
	if (!b) {
		ret = accel_oom_error("out of host memory");
	} else if (!p) {
		ret = out_of_memory(pool, requested);
	} else {
		b->addr = (uintptr_t)p;
		b->size = size;
		b->requested = requested;
		b->state = BLOCK_USED;
		if (!pool_map_insert(&pool->direct, b)) {
			pool_backend_free(pool, b->addr, size);
			ret = accel_oom_error("out of host memory");
		} else {
			count_use(pool, size, requested);
			pool->allocations++;
			pool_history_note(pool, ACCEL_POOL_ALLOC,
					  ACCEL_POOL_BLOCK_ALLOCATED, b->addr,
					  size, requested, true);
		}
	}
	if (b && ret != ACCEL_SUCCESS)
		pool_block_put(pool, b);
	pthread_mutex_unlock(&pool->lock);
	if (ret != ACCEL_SUCCESS)
		return ret;
	accel_error_restore(&before);
	*ptr = p;
	return ACCEL_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Free */

static accel_status_t wrong_size(void *ptr, size_t size, size_t requested)
{
	return accel_error("size %zu does not match the size %zu that %p was allocated with",
			   size, requested, ptr);
}

/*
 * Release a used block of arena @a (locked), at @index of its map, freed
 * with @st: behind the
 * events of *@behind if there are any (which it takes), else at once if
 * the arena's stream orders the reuse, else once an event recorded on @st
 * now has completed.
 */
static accel_status_t release(struct accel_pool *pool, struct pool_arena *a,
			size_t index, struct accel_stream *st,
			struct pool_pending **behind)
{
	struct pool_block *b = a->map.slots[index].block;
	struct pool_pending *p = *behind;

	if (!p && (!st || st == a->stream)) {
		pool_map_remove_at(&a->map, index);
		pool_history_free(pool, b, false);
		pool_make_free(a, b);
		return ACCEL_SUCCESS;
	}
	if (!p) {
		p = pool_pending_new(1);
		if (!p)
			return ACCEL_FAILED;
		p->events[0].dev = pool->dev;
		p->events[0].ev = pool_record_event(pool->dev, st);
		if (!p->events[0].ev) {
			free(p);
			return ACCEL_FAILED;
		}
		p->nevents = 1;
	}
	*behind = NULL;
	pool_map_remove_at(&a->map, index);
	b->state = BLOCK_PENDING;
	p->block = b;
	p->next = a->pending;
	a->pending = p;
	pool_history_free(pool, b, true);
	return ACCEL_SUCCESS;
}

/* Try to free @ptr in arena @a; false if it is not a live block of @a. */
static bool free_in(struct accel_pool *pool, struct pool_arena *a,
		    struct accel_stream *st, struct pool_pending **behind,
		    void *ptr, size_t size, accel_status_t *ret)
{
	struct pool_block *b;
	size_t i, used, requested;

	pthread_mutex_lock(&a->lock);
	i = pool_map_index(&a->map, (uintptr_t)ptr);
	if (i == POOL_MAP_NONE) {
		pthread_mutex_unlock(&a->lock);
		return false;
	}
	b = a->map.slots[i].block;
	used = b->size;
	requested = b->requested;
	if (requested != size)
		*ret = wrong_size(ptr, size, requested);
	else
		*ret = release(pool, a, i, st, behind);
	a->frees += *ret == ACCEL_SUCCESS;
	pthread_mutex_unlock(&a->lock);
	if (*ret == ACCEL_SUCCESS)
		count_unuse(pool, used, requested);
	return true;
}

/*
 * A block from the backend (pool lock held): back to the backend behind
 * the events of *@behind (which it takes), else now: with no events, no
 * stream's work was left to use it.
 */
static bool free_direct(struct accel_pool *pool, struct pool_pending **behind,
			void *ptr, size_t size, accel_status_t *ret)
{
	struct pool_block *b = pool_map_find(&pool->direct, (uintptr_t)ptr);
	struct pool_pending *p = *behind;

	if (!b)
		return false;
	if (b->requested != size) {
		*ret = wrong_size(ptr, size, b->requested);
		return true;
	}
	pool_map_remove(&pool->direct, b);
	count_unuse(pool, b->size, b->requested);
	pool->frees++;
	*ret = ACCEL_SUCCESS;
	if (p) {
		*behind = NULL;
		p->block = b;
		b->state = BLOCK_PENDING;
		p->next = pool->direct_pending;
		pool->direct_pending = p;
		pool_history_free(pool, b, true);
		return true;
	}
	pool_history_free(pool, b, false);
	direct_give_back(pool, b);
	return true;
}

/*
 * Before a free on @st of @ptr, if it is a block from the backend: the
 * events it goes back behind, into *@behind. Not @st's alone: other
 * streams may still be using it (a misuse, but one that must not have a
 * cpu device's worker write into memory given back). A block larger than
 * the max chunk size first waits for @st's work, as accel_pool_deallocate()
 * promises, so that @st's next allocation may have it again. Outside the
 * pool lock, since it records events on every stream.
 */
static accel_status_t direct_behind(struct accel_pool *pool,
				    struct accel_stream *st, void *ptr,
				    struct pool_pending **behind)
{
	struct pool_block *b;
	size_t requested;
	accel_status_t ret;

	pthread_mutex_lock(&pool->lock);
	b = pool_map_find(&pool->direct, (uintptr_t)ptr);
	requested = b ? b->requested : 0;
	pthread_mutex_unlock(&pool->lock);
	if (!b)
		return ACCEL_SUCCESS;
	if (requested > pool->max_chunk)
		pool->dev->be->stream_drain(pool->dev, st->priv);
	*behind = pool_behind_every_stream(pool->dev, &ret);
	return ret;
}

/* A block of another arena, a large block, or no block of this pool. */
static accel_status_t free_slow(struct accel_pool *pool, struct pool_arena *self,
			  struct accel_stream *st, struct pool_pending **behind,
			  void *ptr, size_t size)
{
	accel_status_t ret = ACCEL_SUCCESS;
	bool found;

	if (st && !*behind) {
		ret = direct_behind(pool, st, ptr, behind);
		if (ret != ACCEL_SUCCESS)
			return ret;
	}
	pthread_mutex_lock(&pool->lock);
	found = free_direct(pool, behind, ptr, size, &ret);
	for (struct pool_arena *a = pool->arenas; a && !found; a = a->next) {
		if (a == self ||
		    !free_in(pool, a, st, behind, ptr, size, &ret))
			continue;
		if (a->orphan)
			pool_orphan_tidy(pool, a);	/* may free a */
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
static accel_status_t caching_setting(bool *caching)
{
	const char *v = getenv("ACCEL_POOL");

	*caching = true;
	if (!v || !strcmp(v, "on") || !strcmp(v, "1"))
		return ACCEL_SUCCESS;
	if (!strcmp(v, "off") || !strcmp(v, "0")) {
		*caching = false;
		return ACCEL_SUCCESS;
	}
	return accel_error("ACCEL_POOL=\"%s\" is not \"on\" or \"off\"", v);
}

static accel_status_t read_policy(struct accel_pool *pool)
{
	struct accel_chunk_policy p;

	if (accel_memory_chunk_policy(pool->dev, &p) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	pool->granule = p.granule;
	pool->padding = p.padding;
	pool->max_chunk = p.max_chunk;
	pool->init_size = p.init_size;
	pool->realloc_size = p.realloc_size;
	pool->alloc_granule = p.alloc_granule;
	return ACCEL_SUCCESS;
}

static accel_status_t pool_new(struct accel_device *dev,
			 struct accel_pool **out)
{
	struct accel_pool *pool = calloc(1, sizeof(*pool));
	bool caching;

	if (!pool)
		return accel_oom_error("out of host memory");
	pool->dev = dev;
	if (caching_setting(&caching) != ACCEL_SUCCESS ||
	    read_policy(pool) != ACCEL_SUCCESS)
		goto fail;
	if (!accel_handle_new(ACCEL_HANDLE_POOL, pool) ||
	    !pool_map_init(&pool->direct)) {
		accel_oom_error("out of host memory");
		goto fail;
	}
	pool->caching = caching;
	pool->release_threshold = SIZE_MAX;
	pool->id = atomic_fetch_add(&pool_ids, 1);
	pthread_mutex_init(&pool->lock, NULL);
	pthread_mutex_init(&pool->history_lock, NULL);
	pthread_mutex_lock(&dev->pool_lock);
	pool->next = dev->pools;
	dev->pools = pool;
	pthread_mutex_unlock(&dev->pool_lock);
	*out = pool;
	return ACCEL_SUCCESS;
fail:
	if (pool->handle)	/* not yet given out: no reference to wait for */
		accel_handle_end(accel_handle_get((void *)pool->handle,
						  ACCEL_HANDLE_POOL));
	free(pool);
	return ACCEL_FAILED;
}

struct accel_pool *pool_lookup(accel_pool_t handle)
{
	struct accel_pool *pool;

	if (!handle) {
		accel_error("the pool is NULL");
		return NULL;
	}
	pool = accel_handle_get(handle, ACCEL_HANDLE_POOL);
	if (!pool)
		accel_handle_error("pool %p is not a live pool (destroyed, or never one)",
				   (void *)handle);
	else
		accel_error_device(pool->dev);
	return pool;
}

static void pool_free_everything(struct accel_pool *pool)
{
	struct pool_arena *a;

	accel_device_drain_for(pool->dev, ACCEL_MARK_USERS);
	pthread_mutex_lock(&pool->lock);
	while (pool->direct_pending) {
		struct pool_pending *p = pool->direct_pending;

		pool->direct_pending = p->next;
		pool_backend_free(pool, p->block->addr, p->block->size);
		pool_pending_free(pool->dev, p);
	}
	for (size_t i = 0; i <= pool->direct.mask; i++) {
		struct pool_block *b = pool->direct.slots[i].block;

		if (b)
			pool_backend_free(pool, b->addr, b->size);
	}
	pool_map_destroy(&pool->direct);
	while ((a = pool->arenas)) {
		pool->arenas = a->next;
		while (a->pending) {
			struct pool_pending *p = a->pending;

			a->pending = p->next;
			pool_pending_free(pool->dev, p);
		}
		while (a->chunks) {
			struct pool_chunk *c = a->chunks;

			pool_chunk_unlink(&a->chunks, c);
			pool_chunk_release(pool, c);
		}
		pool_arena_free(a);
	}
	while (pool->shared) {
		struct pool_chunk *c = pool->shared;

		pool_chunk_unlink(&pool->shared, c);
		pool_chunk_release(pool, c);
	}
	/* work queued since the drain: the pool goes, so it waits */
	pool_settle_releasing(pool, true);
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_destroy(&pool->lock);
	pool_history_end(pool);
	/* every block struct, of live allocations too */
	while (pool->slabs) {
		struct pool_slab *s = pool->slabs;

		pool->slabs = s->next;
		free(s);
	}
}

/* ------------------------------------------------------------------ */
/* What the layers below ask the pools (core/hooks.c) */

static void pools_stream_gone(struct accel_device *dev, struct accel_stream *st)
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
			pool_orphan_tidy(pool, a);
			break;
		}
		pthread_mutex_unlock(&pool->lock);
	}
	pthread_mutex_unlock(&dev->pool_lock);
}

/* The host synchronized with @dev: pools over their threshold give back. */
static void pools_synchronized(struct accel_device *dev)
{
	pthread_mutex_lock(&dev->pool_lock);
	for (struct accel_pool *pool = dev->pools; pool; pool = pool->next) {
		if (pool->release_threshold == SIZE_MAX)
			continue;
		pthread_mutex_lock(&pool->lock);
		pool_reclaim(pool);
		pool_release_idle_above(pool, pool->release_threshold);
		pthread_mutex_unlock(&pool->lock);
	}
	pthread_mutex_unlock(&dev->pool_lock);
}

static bool pools_reclaim(struct accel_device *dev, bool wait)
{
	bool any = false;

	pthread_mutex_lock(&dev->pool_lock);
	for (struct accel_pool *pool = dev->pools; pool; pool = pool->next) {
		pthread_mutex_lock(&pool->lock);
		if (settle_direct(pool, wait))
			any = true;
		pthread_mutex_unlock(&pool->lock);
	}
	pthread_mutex_unlock(&dev->pool_lock);
	return any;
}

/* ------------------------------------------------------------------ */
/* The public functions */

/* The device a pool is asked for, or NULL with the error set. */
static struct accel_device *pool_device(const accel_device_t device,
					accel_pool_t *pool)
{
	struct accel_device *dev;

	if (!pool) {
		accel_error("pool is NULL");
		return NULL;
	}
	*pool = NULL;	/* a failure leaves no stale handle */
	dev = accel_device_lookup(device);
	return dev;
}

accel_status_t accel_pool_create(const accel_device_t device, accel_pool_t *pool)
{
	struct accel_device *dev;
	struct accel_pool *p;

	ACCEL_ENTER();
	dev = pool_device(device, pool);
	if (!dev || pool_new(dev, &p) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	*pool = (accel_pool_t)p->handle;
	return ACCEL_SUCCESS;
}

accel_status_t accel_device_pool(const accel_device_t device, accel_pool_t *pool)
{
	struct accel_device *dev;
	accel_status_t ret = ACCEL_SUCCESS;

	ACCEL_ENTER();
	dev = pool_device(device, pool);
	if (!dev)
		return ACCEL_FAILED;
	pthread_mutex_lock(&dev->default_pool_lock);
	if (!dev->default_pool)
		ret = pool_new(dev, &dev->default_pool);
	*pool = dev->default_pool ? (accel_pool_t)dev->default_pool->handle :
				    NULL;
	pthread_mutex_unlock(&dev->default_pool_lock);
	return ret;
}

accel_status_t accel_pool_destroy(accel_pool_t handle)
{
	struct accel_pool *pool, **pp;
	struct accel_device *dev;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return ACCEL_FAILED;
	dev = pool->dev;
	if (pool == dev->default_pool) {
		accel_handle_put(pool);
		return accel_error("the default pool of %s cannot be destroyed",
				   dev->name);
	}
	/* the calls under way on it return first */
	if (!accel_handle_end(pool)) {
		accel_handle_put(pool);
		return accel_handle_error("pool %p was destroyed by another thread",
					  (void *)handle);
	}
	pthread_mutex_lock(&dev->pool_lock);
	for (pp = &dev->pools; *pp != pool; pp = &(*pp)->next)
		;
	*pp = pool->next;
	if (pool->release_threshold != SIZE_MAX)
		atomic_fetch_sub(&dev->pools_releasing, 1);
	pthread_mutex_unlock(&dev->pool_lock);
	pool_free_everything(pool);
	free(pool);
	return ACCEL_SUCCESS;
}

/* The block for @size bytes (@need, padded and rounded) in arena @a. */
static accel_status_t alloc_block(struct accel_pool *pool,
				  struct pool_arena *a, size_t need,
				  size_t size, void **ptr)
{
	accel_status_t ret = ACCEL_SUCCESS;

	if (!pool->caching || need > pool->max_chunk) {
		size_t whole = pool_whole_pages(pool, need);

		if (whole < need)
			return accel_error("size %zu is too large", size);
		return alloc_direct(pool, whole, size, ptr);
	}
	pthread_mutex_lock(&a->lock);
	if (!take_fit(pool, a, need, size, ptr, &ret)) {
		pthread_mutex_unlock(&a->lock);
		return alloc_slow(pool, a, need, size, ptr);
	}
	pthread_mutex_unlock(&a->lock);
	return ret;
}

/* Whether this thread runs an out-of-memory handler: it calls no other. */
static _Thread_local bool in_oom_handler;

/*
 * Out of memory: the pool's handler, if it has one, may free memory and
 * ask for one more try; true if it asked. It runs holding no lock and no
 * reference, so that it may use the pool and its streams, destroying them
 * too.
 */
static bool oom_handled(accel_pool_t handle, size_t size)
{
	struct accel_pool *pool = accel_handle_get(handle, ACCEL_HANDLE_POOL);
	accel_pool_oom_handler_t handler;
	struct accel_error_state failure;
	void *user;
	int again;

	if (!pool)
		return false;
	pthread_mutex_lock(&pool->lock);
	handler = in_oom_handler ? NULL : pool->oom_handler;
	user = pool->oom_user;
	pthread_mutex_unlock(&pool->lock);
	if (!handler) {
		accel_handle_put(pool);
		return false;
	}
	accel_handle_put(pool);
	accel_error_keep(&failure);
	in_oom_handler = true;
	again = handler(handle, size, user);
	in_oom_handler = false;
	accel_error_restore(&failure);	/* the handler's calls are its own */
	pool = again ? accel_handle_get(handle, ACCEL_HANDLE_POOL) : NULL;
	if (pool) {
		atomic_fetch_add(&pool->oom_retries, 1);
		accel_handle_put(pool);
	}
	return again;
}

static bool out_of_memory_now(accel_status_t ret)
{
	return ret != ACCEL_SUCCESS &&
	       accel_peek_last_error_code() == ACCEL_ERROR_OUT_OF_MEMORY;
}

/* An allocation of the pool failed out of memory, for good. */
static void count_oom(accel_pool_t handle)
{
	struct accel_pool *pool = accel_handle_get(handle, ACCEL_HANDLE_POOL);

	if (pool) {
		atomic_fetch_add(&pool->ooms, 1);
		accel_handle_put(pool);
	}
}

/* One try of accel_pool_allocate() by the code at @caller. */
static accel_status_t try_allocate(accel_pool_t handle, accel_stream_t stream,
				   void **ptr, size_t size, void *caller)
{
	struct accel_pool *pool ACCEL_HANDLE_REF = NULL;
	struct accel_stream *st ACCEL_HANDLE_REF = NULL;
	struct pool_arena *a;
	size_t need;

	pool_call = (struct pool_call){ caller, stream };
	pool = pool_lookup(handle);
	if (!pool)
		return ACCEL_FAILED;
	if (!ptr)
		return accel_error("ptr is NULL");
	a = arena_of(pool, stream, &st);
	if (!a)
		return ACCEL_FAILED;
	if (!size)
		return ACCEL_SUCCESS;
	need = size + pool->padding + pool->granule - 1;
	if (need < size)
		return accel_error("size %zu is too large", size);
	need &= ~(pool->granule - 1);
	return alloc_block(pool, a, need, size, ptr);
}

accel_status_t accel_pool_allocate(accel_pool_t handle, accel_stream_t stream,
			     void **ptr, size_t size)
{
	/* taken here, so that the history names the program's code */
	void *caller = __builtin_return_address(0);
	accel_status_t ret;

	ACCEL_ENTER();
	if (ptr)	/* refused or failed, the caller finds NULL */
		*ptr = NULL;
	ret = try_allocate(handle, stream, ptr, size, caller);
	if (!out_of_memory_now(ret))
		return ret;
	if (oom_handled(handle, size))
		ret = try_allocate(handle, stream, ptr, size, caller);
	if (out_of_memory_now(ret))
		count_oom(handle);
	return ret;
}

accel_status_t accel_pool_deallocate(accel_pool_t handle, accel_stream_t stream,
			       void *ptr, size_t size)
{
	struct pool_pending *behind = NULL;
	struct accel_pool *pool ACCEL_HANDLE_REF = NULL;
	struct accel_stream *st ACCEL_HANDLE_REF = NULL;
	struct pool_arena *a;
	accel_status_t ret;

	ACCEL_ENTER();
	pool_call = (struct pool_call){ __builtin_return_address(0), stream };
	pool = pool_lookup(handle);
	if (!pool)
		return ACCEL_FAILED;
	a = arena_of(pool, stream, &st);
	if (!a)
		return ACCEL_FAILED;
	if (!ptr && !size)
		return ACCEL_SUCCESS;
	if (!ptr)
		return accel_error("ptr is NULL but size is %zu", size);
	/* no stream: behind all queued work, with no wait on the host */
	if (!stream) {
		behind = pool_behind_every_stream(pool->dev, &ret);
		if (ret != ACCEL_SUCCESS)
			return ret;
	}
	if (!free_in(pool, a, a->stream, &behind, ptr, size, &ret))
		ret = free_slow(pool, a, a->stream, &behind, ptr, size);
	if (behind)	/* not taken: no block of this pool, or an error */
		pool_pending_free(pool->dev, behind);
	if (ret == ACCEL_SUCCESS)	/* a handle on the block no longer opens */
		accel_ipc_revoke_block(pool->dev, ptr);
	return ret;
}

accel_status_t accel_pool_trim(accel_pool_t handle)
{
	struct accel_pool *pool ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return ACCEL_FAILED;
	/*
	 * One wait, with no lock held: range checks of the device's memory
	 * take the pool's lock. The chunks go back behind the work queued
	 * since (accel_memory_free_pooled() waits for nothing).
	 */
	accel_device_drain_for(pool->dev, ACCEL_MARK_USERS);
	pthread_mutex_lock(&pool->lock);
	pool_reclaim(pool);
	pool_release_idle(pool);
	pthread_mutex_unlock(&pool->lock);
	return ACCEL_SUCCESS;
}

/* Arena lock held: bytes of @a's blocks freed but not yet reusable. */
static size_t pending_bytes(const struct pool_pending *p)
{
	size_t n = 0;

	for (; p; p = p->next)
		n += p->block->size;
	return n;
}

/* Arena lock held: free bytes of @a's chunks that hold other blocks too. */
static size_t split_bytes(const struct pool_arena *a)
{
	size_t n = 0;

	for (const struct pool_chunk *c = a->chunks; c; c = c->next) {
		if (pool_chunk_idle(c))
			continue;
		for (const struct pool_block *b = c->first; b; b = b->next)
			if (b->state == BLOCK_FREE)
				n += b->size;
	}
	return n;
}

/*
 * Pool lock held: live blocks, free blocks and the largest of them, what
 * is split or pending, and the counts of the arenas.
 */
static void count_blocks(struct accel_pool *pool, struct accel_pool_stats *s)
{
	size_t *count = &s->free_blocks, *largest = &s->largest_free;

	s->blocks = pool->direct.count;
	s->active = s->allocated + pending_bytes(pool->direct_pending);
	s->allocations = pool->allocations;
	s->frees = pool->frees;
	for (struct pool_arena *a = pool->arenas; a; a = a->next) {
		size_t l;

		pthread_mutex_lock(&a->lock);
		s->blocks += a->map.count;
		*count += a->index.count;
		l = pool_index_largest(&a->index);
		s->active += pending_bytes(a->pending);
		s->inactive_split += split_bytes(a);
		s->allocations += a->allocations;
		s->frees += a->frees;
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

accel_status_t accel_pool_get_stats(accel_pool_t handle,
			      struct accel_pool_stats *stats)
{
	struct accel_pool *pool ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return ACCEL_FAILED;
	if (!stats)
		return accel_error("stats is NULL");
	memset(stats, 0, sizeof(*stats));
	pthread_mutex_lock(&pool->lock);
	/* blocks whose free is over are free, not active */
	pool_reclaim(pool);
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
	stats->ooms = atomic_load(&pool->ooms);
	stats->oom_retries = atomic_load(&pool->oom_retries);
	stats->limit = pool->limit;
	stats->release_threshold = pool->release_threshold;
	pthread_mutex_unlock(&pool->lock);
	return ACCEL_SUCCESS;
}

accel_status_t accel_pool_reset_peaks(accel_pool_t handle)
{
	struct accel_pool *pool ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return ACCEL_FAILED;
	stat_reset_peak(&pool->reserved, &pool->reserved_peak);
	stat_reset_peak(&pool->allocated, &pool->allocated_peak);
	stat_reset_peak(&pool->requested, &pool->requested_peak);
	return ACCEL_SUCCESS;
}

accel_status_t accel_pool_set_limit(accel_pool_t handle, size_t bytes)
{
	struct accel_pool *pool ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return ACCEL_FAILED;
	pthread_mutex_lock(&pool->lock);
	pool->limit = bytes;
	pthread_mutex_unlock(&pool->lock);
	return ACCEL_SUCCESS;
}

accel_status_t accel_pool_set_release_threshold(accel_pool_t handle,
						size_t bytes)
{
	struct accel_pool *pool ACCEL_HANDLE_REF = NULL;
	struct accel_device *dev;
	bool was, is = bytes != SIZE_MAX;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return ACCEL_FAILED;
	dev = pool->dev;
	/* the device's count of pools to visit changes with the setting */
	pthread_mutex_lock(&dev->pool_lock);
	pthread_mutex_lock(&pool->lock);
	was = pool->release_threshold != SIZE_MAX;
	pool->release_threshold = bytes;
	pthread_mutex_unlock(&pool->lock);
	atomic_fetch_add(&dev->pools_releasing, (int)is - (int)was);
	pthread_mutex_unlock(&dev->pool_lock);
	return ACCEL_SUCCESS;
}

accel_status_t accel_pool_set_oom_handler(accel_pool_t handle,
					  accel_pool_oom_handler_t handler,
					  void *user)
{
	struct accel_pool *pool ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return ACCEL_FAILED;
	pthread_mutex_lock(&pool->lock);
	pool->oom_handler = handler;
	pool->oom_user = user;
	pthread_mutex_unlock(&pool->lock);
	return ACCEL_SUCCESS;
}

accel_status_t accel_device_set_memory_fraction(const accel_device_t device,
						double fraction)
{
	struct accel_device *dev;
	size_t total, free;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	if (!(fraction > 0 && fraction <= 1))
		return accel_error("fraction %g is not in (0, 1]", fraction);
	if (dev->be->stats(dev, &total, &free) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	atomic_store(&dev->pools_cap,
		     fraction == 1 ? SIZE_MAX : (size_t)(fraction * (double)total));
	return ACCEL_SUCCESS;
}

static const struct accel_pool_hooks pool_hooks = {
	.span = pool_span,
	.reclaim = pools_reclaim,
	.stream_gone = pools_stream_gone,
	.synchronized = pools_synchronized,
	/* their figures for accel-smi, if ACCEL_STATS_DIR is set */
	.probed = pool_publish_start,
};

__attribute__((constructor)) static void pool_hooks_set(void)
{
	accel_set_pool_hooks(&pool_hooks);
}
