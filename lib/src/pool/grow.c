// SPDX-License-Identifier: MIT
/*
 * The caching allocator's slow path: device memory for chunks, events that
 * order reuse across streams, and finding a chunk when an arena has no fit
 * (pending frees, shared chunks, stealing, growing, giving idle chunks back).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pool/pool.h"

/* ------------------------------------------------------------------ */
/* Backend memory */

/*
 * Pool lock held: whether @size more bytes keep @pool within its limit and
 * the device's pools within their cap, whose share it then takes; else
 * false with the error set.
 */
static bool within_limits(struct accel_pool *pool, size_t size)
{
	struct accel_device *dev = pool->dev;
	size_t held = atomic_load(&pool->reserved);
	size_t cap = atomic_load(&dev->pools_cap), all;

	if (pool->limit && (size > pool->limit || held > pool->limit - size)) {
		accel_oom_error("%zu more bytes would take the pool past its limit of %zu bytes (accel_pool_set_limit(); it holds %zu)",
				size, pool->limit, held);
		return false;
	}
	all = atomic_fetch_add(&dev->pools_reserved, size);
	if (size <= cap && all <= cap - size)
		return true;
	atomic_fetch_sub(&dev->pools_reserved, size);
	accel_oom_error("%zu more bytes would take the pools of %s past %zu bytes, their share of it (accel_device_set_memory_fraction(); they hold %zu)",
			size, dev->name, cap, all);
	return false;
}

void *pool_backend_alloc(struct accel_pool *pool, size_t size)
{
	void *p;

	/* what was given back and is free now no longer counts */
	pool_settle_releasing(pool, false);
	if (!within_limits(pool, size))
		return NULL;
	if (accel_memory_alloc(pool->dev, size, true, &p) != ACCEL_SUCCESS) {
		atomic_fetch_sub(&pool->dev->pools_reserved, size);
		return NULL;
	}
	stat_add(&pool->reserved, &pool->reserved_peak, size);
	atomic_fetch_add(&pool->backend_allocs, 1);
	/* only allocations grow the pool: the call is one */
	pool_history_note(pool, ACCEL_POOL_SEGMENT_ALLOC, ACCEL_POOL_BLOCK_FREE,
			  (uintptr_t)p, size, 0, true);
	return p;
}

/* What the pool and the device's pools hold, less the segment at @addr. */
static void unreserve(struct accel_pool *pool, uintptr_t addr, size_t size)
{
	pool_history_note(pool, ACCEL_POOL_SEGMENT_FREE, ACCEL_POOL_BLOCK_FREE,
			  addr, size, 0, false);
	stat_sub(&pool->reserved, size);
	atomic_fetch_sub(&pool->dev->pools_reserved, size);
	atomic_fetch_add(&pool->backend_frees, 1);
}

void pool_backend_free(struct accel_pool *pool, uintptr_t addr, size_t size)
{
	accel_memory_free_pooled(pool->dev, (void *)addr);
	unreserve(pool, addr, size);
}

void pool_backend_free_idle(struct accel_pool *pool, uintptr_t addr,
			    size_t size)
{
	accel_memory_free_pooled_idle(pool->dev, (void *)addr);
	unreserve(pool, addr, size);
}

/* ------------------------------------------------------------------ */
/* Events */

/*
 * Record an event after the work queued so far on @st; NULL with the error
 * set if the backend cannot.
 */
void *pool_record_event(struct accel_device *dev, struct accel_stream *st)
{
	void *ev;

	if (dev->be->event_create(dev, &ev) != ACCEL_SUCCESS)
		return NULL;
	if (dev->be->event_record(dev, st->priv, ev) != ACCEL_SUCCESS) {
		dev->be->event_destroy(dev, ev);
		return NULL;
	}
	return ev;
}

struct pool_pending *pool_pending_new(size_t nevents)
{
	struct pool_pending *p = malloc(sizeof(*p) + nevents * sizeof(p->events[0]));

	if (!p) {
		accel_oom_error("out of host memory");
		return NULL;
	}
	p->block = NULL;
	p->next = NULL;
	p->nevents = 0;
	return p;
}

/*
 * A free with no stream: events recorded now on every stream whose work is
 * not over, of @dev and of the devices that queued work touching its
 * memory, so that the block is reused behind that work. NULL when every
 * such stream is idle (*ret ACCEL_SUCCESS), or on error (*ret ACCEL_FAILED).
 */
struct pool_pending *pool_behind_every_stream(struct accel_device *dev,
					      accel_status_t *ret)
{
	size_t n;
	struct accel_mark *m = accel_device_mark(dev, ACCEL_MARK_USERS, &n,
						 ret);
	struct pool_pending *p;

	if (!m)
		return NULL;
	p = pool_pending_new(n);
	if (p) {
		memcpy(p->events, m, n * sizeof(*m));
		p->nevents = n;
	} else {
		accel_marks_destroy(m, n);
		*ret = ACCEL_FAILED;
	}
	free(m);
	return p;
}

bool pool_pending_done(struct accel_device *dev, struct pool_pending *p)
{
	(void)dev;
	return accel_marks_done(p->events, &p->nevents);
}

void pool_pending_free(struct accel_device *dev, struct pool_pending *p)
{
	(void)dev;
	accel_marks_destroy(p->events, p->nevents);
	free(p);
}

/* Pool lock held: free the pending blocks whose events have completed. */
void pool_reclaim_pending(struct accel_pool *pool)
{
	struct accel_device *dev = pool->dev;
	struct pool_arena *a, *next;

	for (a = pool->arenas; a; a = next) {
		struct pool_pending **pp;

		next = a->next;
		pthread_mutex_lock(&a->lock);
		for (pp = &a->pending; *pp;) {
			struct pool_pending *p = *pp;

			if (!pool_pending_done(dev, p)) {
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			pool_history_free_done(pool, p->block);
			pool_make_free(a, p->block);
			pool_pending_free(dev, p);
		}
		pthread_mutex_unlock(&a->lock);
		if (a->orphan)
			pool_orphan_tidy(pool, a);
	}
}

/* ------------------------------------------------------------------ */
/* Finding a chunk (pool lock held) */

struct pool_chunk *pool_take_shared(struct accel_pool *pool, size_t need)
{
	struct pool_chunk *c = pool_idle_fit(pool->shared, need);

	if (c)
		pool_chunk_unlink(&pool->shared, c);
	return c;
}

/*
 * May work on @to (NULL: the caller, with no stream) use memory that work
 * on @from may still be using? Yes, behind an event: @to waits for it on
 * the device; a caller with no stream only if it has completed.
 */
static bool order_after(struct accel_device *dev, struct accel_stream *from,
			struct accel_stream *to)
{
	void *ev = pool_record_event(dev, from);
	bool ok;

	if (!ev)
		return false;
	if (to)
		ok = dev->be->stream_wait_event(dev, to->priv, ev) == ACCEL_SUCCESS;
	else
		ok = dev->be->event_query(dev, ev) == ACCEL_SUCCESS;
	dev->be->event_destroy(dev, ev);
	return ok;
}

/* An idle chunk of another arena, made safe for work on @st. */
struct pool_chunk *pool_steal(struct accel_pool *pool,
				struct pool_arena *self, size_t need,
				struct accel_stream *st)
{
	for (struct pool_arena *a = pool->arenas; a; a = a->next) {
		struct pool_chunk *c;
		bool busy;

		if (a == self)
			continue;
		pthread_mutex_lock(&a->lock);
		c = pool_idle_fit(a->chunks, need);
		if (c)
			pool_detach(a, c);
		busy = a->stream && a->stream != st;
		pthread_mutex_unlock(&a->lock);
		if (!c)
			continue;
		if (!busy || order_after(pool->dev, a->stream, st))
			return c;
		pthread_mutex_lock(&a->lock);
		pool_adopt(a, c);
		pthread_mutex_unlock(&a->lock);
	}
	return NULL;
}

static struct pool_chunk *pool_chunk_new(struct accel_pool *pool, size_t size)
{
	struct pool_chunk *c = calloc(1, sizeof(*c));
	struct pool_block *b = pool_block_get(pool);
	void *p = NULL;

	if (!c || !b)
		accel_oom_error("out of host memory");
	else
		p = pool_backend_alloc(pool, size);
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

void pool_chunk_release(struct accel_pool *pool, struct pool_chunk *c)
{
	struct pool_block *b = c->first;
	accel_status_t ret;
	struct pool_pending *p = pool_behind_every_stream(pool->dev, &ret);

	free(c);
	stat_sub(&pool->chunks, 1);
	if (p) {
		p->block = b;
		p->next = pool->releasing;
		pool->releasing = p;
		return;
	}
	if (ret == ACCEL_SUCCESS)
		pool_backend_free_idle(pool, b->addr, b->size);
	else	/* no events to wait on: the memory layer orders it */
		pool_backend_free(pool, b->addr, b->size);
	pool_block_put(pool, b);
}

bool pool_settle_releasing(struct accel_pool *pool, bool wait)
{
	struct pool_pending **pp = &pool->releasing;
	bool any = *pp;

	while (*pp) {
		struct pool_pending *p = *pp;

		if (wait)
			accel_marks_sync(p->events, p->nevents);
		if (!pool_pending_done(pool->dev, p)) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		pool_backend_free_idle(pool, p->block->addr, p->block->size);
		pool_block_put(pool, p->block);
		pool_pending_free(pool->dev, p);
	}
	return any;
}

/*
 * Pool lock held: give idle chunks back to the backend while the pool
 * reserves more than @keep bytes (0: all of them); the others stay shared.
 * How many went.
 */
size_t pool_release_idle_above(struct accel_pool *pool, size_t keep)
{
	struct pool_chunk *idle = pool->shared, *c, *next;
	size_t n = 0;

	pool->shared = NULL;
	for (struct pool_arena *a = pool->arenas; a; a = a->next) {
		pthread_mutex_lock(&a->lock);
		pool_detach_idle(a, &idle);
		pthread_mutex_unlock(&a->lock);
	}
	/* outside the arena locks; the frees are behind the queued work */
	for (c = idle; c; c = next) {
		next = c->next;
		if (atomic_load(&pool->reserved) > keep) {
			pool_chunk_release(pool, c);
			n++;
		} else {
			pool_chunk_link(&pool->shared, c);
		}
	}
	return n;
}

size_t pool_release_idle(struct accel_pool *pool)
{
	return pool_release_idle_above(pool, 0);
}

size_t pool_whole_pages(const struct accel_pool *pool, size_t need)
{
	return (need + pool->alloc_granule - 1) / pool->alloc_granule *
	       pool->alloc_granule;
}

/*
 * The policy's chunk size (from the device's total memory), capped for this
 * attempt by what is free now, but never below @need (in whole pages).
 */
static size_t chunk_size_for(struct accel_pool *pool, size_t need)
{
	size_t size = pool->grown ? pool->realloc_size : pool->init_size;
	size_t granule = pool->alloc_granule, room;

	if (size > need && accel_memory_max_alloc(pool->dev, &room) == ACCEL_SUCCESS &&
	    size > room)
		size = room - room % granule;
	return size > need ? size : need;
}

/*
 * A new chunk for @need bytes. Out of device memory, the pool gives its
 * idle chunks back and tries once more, for @need bytes only.
 */
struct pool_chunk *pool_grow(struct accel_pool *pool, size_t need)
{
	size_t size, whole;
	struct pool_chunk *c;

	whole = pool_whole_pages(pool, need);
	size = chunk_size_for(pool, whole);
	c = pool_chunk_new(pool, size);
	if (!c && (pool_release_idle(pool) || size > whole))
		c = pool_chunk_new(pool, whole);
	if (c)
		pool->grown = true;
	return c;
}
