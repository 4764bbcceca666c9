// SPDX-License-Identifier: MIT
/*
 * A pool at one moment (accel_pool_get_snapshot()): its segments, their
 * blocks and the history recorded within each block. The pool lock and
 * every arena lock are held while the pool is copied, so that no block
 * moves meanwhile; the copy is the caller's, one allocation of its own.
 */
#include <stdlib.h>
#include <string.h>

#include "pool/pool.h"

/* What the pool holds, counted first to size the copy. */
struct census {
	size_t segments, blocks, events;
};

/* Pool lock and arena locks held. */
static void count_all(const struct accel_pool *pool, struct census *n)
{
	const struct pool_chunk *c;

	n->segments = pool->direct.count;
	n->blocks = pool->direct.count;
	for (const struct pool_pending *p = pool->direct_pending; p; p = p->next) {
		n->segments++;
		n->blocks++;
	}
	for (const struct pool_pending *p = pool->releasing; p; p = p->next) {
		n->segments++;
		n->blocks++;	/* given back: one free block */
	}
	for (c = pool->shared; c; c = c->next) {
		n->segments++;
		n->blocks++;	/* idle: one free block */
	}
	for (const struct pool_arena *a = pool->arenas; a; a = a->next)
		for (c = a->chunks; c; c = c->next) {
			n->segments++;
			for (const struct pool_block *b = c->first; b; b = b->next)
				n->blocks++;
		}
	n->events = pool->history ? pool->history->count : 0;
}

static enum accel_pool_block_state state_of(const struct pool_block *b)
{
	switch (b->state) {
	case BLOCK_USED:
		return ACCEL_POOL_BLOCK_ALLOCATED;
	case BLOCK_PENDING:
		return ACCEL_POOL_BLOCK_PENDING_FREE;
	default:
		return ACCEL_POOL_BLOCK_FREE;
	}
}

/* Where the copy is being written. */
struct filling {
	struct accel_pool_snapshot *s;
	struct accel_pool_block_info *next_block;
};

static void add_block(struct filling *f, struct accel_pool_segment *seg,
		      const struct pool_block *b)
{
	struct accel_pool_block_info *bi = f->next_block++;
	enum accel_pool_block_state state = state_of(b);

	bi->addr = b->addr;
	bi->size = b->size;
	bi->state = state;
	bi->requested = state == ACCEL_POOL_BLOCK_FREE ? 0 : b->requested;
	seg->nblocks++;
	if (state != ACCEL_POOL_BLOCK_FREE)
		seg->active += b->size;
	if (state == ACCEL_POOL_BLOCK_ALLOCATED) {
		seg->allocated += b->size;
		f->s->requested += b->requested;
	}
}

static struct accel_pool_segment *add_segment(struct filling *f, uintptr_t addr,
					      size_t size,
					      const struct accel_stream *st,
					      bool direct)
{
	struct accel_pool_segment *seg = &f->s->segments[f->s->nsegments++];

	seg->addr = addr;
	seg->size = size;
	seg->stream = st ? (accel_stream_t)st->handle : NULL;
	seg->direct = direct;
	seg->blocks = f->next_block;
	return seg;
}

static void add_chunk(struct filling *f, const struct pool_chunk *c,
		      const struct accel_stream *st)
{
	struct accel_pool_segment *seg = add_segment(f, c->addr, c->size, st,
						     false);

	for (const struct pool_block *b = c->first; b; b = b->next)
		add_block(f, seg, b);
}

static void add_direct(struct filling *f, const struct pool_block *b)
{
	add_block(f, add_segment(f, b->addr, b->size, NULL, true), b);
}

/* Pool lock and arena locks held: every segment, in no order yet. */
static void copy_segments(const struct accel_pool *pool, struct filling *f)
{
	for (size_t i = 0; i <= pool->direct.mask; i++)
		if (pool->direct.slots[i].block)
			add_direct(f, pool->direct.slots[i].block);
	for (const struct pool_pending *p = pool->direct_pending; p; p = p->next)
		add_direct(f, p->block);
	for (const struct pool_pending *p = pool->releasing; p; p = p->next)
		add_block(f, add_segment(f, p->block->addr, p->block->size,
					 NULL, false), p->block);
	for (const struct pool_chunk *c = pool->shared; c; c = c->next)
		add_chunk(f, c, NULL);
	for (const struct pool_arena *a = pool->arenas; a; a = a->next)
		for (const struct pool_chunk *c = a->chunks; c; c = c->next)
			add_chunk(f, c, a->stream);
}

static int by_address(const void *x, const void *y)
{
	const struct accel_pool_segment *a = x, *b = y;

	return (a->addr > b->addr) - (a->addr < b->addr);
}

/* By address; events at one address keep their order (their time). */
static int by_event_address(const void *x, const void *y)
{
	const struct accel_pool_event *a = x, *b = y;

	if (a->addr != b->addr)
		return (a->addr > b->addr) - (a->addr < b->addr);
	return (a->time_ns > b->time_ns) - (a->time_ns < b->time_ns);
}

static int by_event_time(const void *x, const void *y)
{
	const struct accel_pool_event *a = x, *b = y;

	return (a->time_ns > b->time_ns) - (a->time_ns < b->time_ns);
}

static bool block_event(const struct accel_pool_event *e)
{
	return e->action != ACCEL_POOL_SEGMENT_ALLOC &&
	       e->action != ACCEL_POOL_SEGMENT_FREE;
}

/* The first of the @n events @ev (by address) at or above @addr. */
static size_t first_at(const struct accel_pool_event *ev, size_t n,
		       uintptr_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ev[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Each block's history: the block events within it, from @by_addr (the
 * block events sorted by address, @n of them), oldest first. Blocks do not
 * overlap: each history is a slice of its own, sorted by time in place,
 * which leaves the searches for other blocks' addresses as they were.
 */
static void link_histories(struct accel_pool_snapshot *s,
			   struct accel_pool_block_info *blocks, size_t nblocks,
			   struct accel_pool_event *by_addr, size_t n)
{
	for (size_t i = 0; i < nblocks; i++) {
		struct accel_pool_block_info *b = &blocks[i];
		size_t lo = first_at(by_addr, n, b->addr), hi = lo;

		while (hi < n && by_addr[hi].addr - b->addr < b->size)
			hi++;
		qsort(&by_addr[lo], hi - lo, sizeof(*by_addr), by_event_time);
		b->history = hi > lo ? &by_addr[lo] : NULL;
		b->nhistory = hi - lo;
	}
	for (size_t i = 0; i < s->nsegments; i++) {
		s->reserved += s->segments[i].size;
		s->allocated += s->segments[i].allocated;
		s->active += s->segments[i].active;
	}
}

/* One allocation for the snapshot and all it points to. */
static struct accel_pool_snapshot *snapshot_new(const struct census *n,
						struct accel_pool_block_info **blocks,
						struct accel_pool_event **by_addr)
{
	size_t size = sizeof(struct accel_pool_snapshot) +
		      n->segments * sizeof(struct accel_pool_segment) +
		      n->blocks * sizeof(struct accel_pool_block_info) +
		      2 * n->events * sizeof(struct accel_pool_event);
	struct accel_pool_snapshot *s = calloc(1, size);

	if (!s)
		return NULL;
	/* every part a multiple of 8 bytes: each part stays aligned */
	s->segments = (struct accel_pool_segment *)(s + 1);
	*blocks = (struct accel_pool_block_info *)(s->segments + n->segments);
	s->events = (struct accel_pool_event *)(*blocks + n->blocks);
	*by_addr = s->events + n->events;
	return s;
}

/* Pool lock held: the copy, with every arena and the history still. */
static struct accel_pool_snapshot *copy_pool(struct accel_pool *pool)
{
	struct accel_pool_snapshot *s;
	struct accel_pool_block_info *blocks;
	struct accel_pool_event *by_addr;
	struct census n;
	size_t nblock_events = 0;
	struct filling f;

	for (struct pool_arena *a = pool->arenas; a; a = a->next)
		pthread_mutex_lock(&a->lock);
	pthread_mutex_lock(&pool->history_lock);
	count_all(pool, &n);
	s = snapshot_new(&n, &blocks, &by_addr);
	if (s) {
		f = (struct filling){ s, blocks };
		copy_segments(pool, &f);
		if (pool->history) {
			s->history_max = pool->history->max;
			s->nevents = pool->history->count;
			pool_history_copy(pool->history, s->nevents, s->events);
		}
	}
	pthread_mutex_unlock(&pool->history_lock);
	for (struct pool_arena *a = pool->arenas; a; a = a->next)
		pthread_mutex_unlock(&a->lock);
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->nevents; i++)
		if (block_event(&s->events[i]))
			by_addr[nblock_events++] = s->events[i];
	qsort(by_addr, nblock_events, sizeof(*by_addr), by_event_address);
	qsort(s->segments, s->nsegments, sizeof(*s->segments), by_address);
	link_histories(s, blocks, n.blocks, by_addr, nblock_events);
	return s;
}

accel_status_t accel_pool_get_snapshot(accel_pool_t handle,
				       struct accel_pool_snapshot **snapshot)
{
	struct accel_pool *pool ACCEL_HANDLE_REF = NULL;
	struct accel_pool_snapshot *s;

	ACCEL_ENTER();
	if (snapshot)	/* a failure leaves no stale pointer */
		*snapshot = NULL;
	pool = pool_lookup(handle);
	if (!pool)
		return ACCEL_FAILED;
	if (!snapshot)
		return accel_error("snapshot is NULL");
	pthread_mutex_lock(&pool->lock);
	/* blocks whose free is over are free, as the statistics say */
	pool_reclaim(pool);
	s = copy_pool(pool);
	pthread_mutex_unlock(&pool->lock);
	if (!s)
		return accel_oom_error("out of host memory for a snapshot");
	*snapshot = s;
	return ACCEL_SUCCESS;
}

void accel_pool_snapshot_free(struct accel_pool_snapshot *snapshot)
{
	free(snapshot);
}
