// SPDX-License-Identifier: MIT
/*
 * The caching allocator's blocks, chunks and arenas: carving and merging
 * blocks, moving chunks between arenas, and the slabs block records come in.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pool/pool.h"

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
struct pool_block *pool_block_get(struct accel_pool *pool)
{
	return block_take(pool, &pool->spare, &pool->cursor);
}

void pool_block_put(struct accel_pool *pool, struct pool_block *b)
{
	block_give(&pool->spare, b);
}

/* Take @need bytes from the front of the free block @b and mark them used. */
accel_status_t pool_carve(struct accel_pool *pool, struct pool_arena *a,
		      struct pool_block *b, size_t need, size_t requested)
{
	struct pool_block *rest = NULL;

	if (b->size > need) {
		rest = block_get(pool, a);
		if (!rest)
			return accel_oom_error("out of host memory");
	}
	if (!pool_map_insert(&a->map, b)) {
		if (rest)
			block_put(a, rest);
		return accel_oom_error("out of host memory");
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
	return ACCEL_SUCCESS;
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
void pool_make_free(struct pool_arena *a, struct pool_block *b)
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

void pool_chunk_link(struct pool_chunk **list, struct pool_chunk *c)
{
	c->prev = NULL;
	c->next = *list;
	if (c->next)
		c->next->prev = c;
	*list = c;
}

void pool_chunk_unlink(struct pool_chunk **list, struct pool_chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		*list = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

void pool_adopt(struct pool_arena *a, struct pool_chunk *c)
{
	c->arena = a;
	pool_chunk_link(&a->chunks, c);
	pool_index_insert(&a->index, c->first);
}

/* Take an idle chunk out of its arena. */
void pool_detach(struct pool_arena *a, struct pool_chunk *c)
{
	pool_index_remove(&a->index, c->first);
	pool_chunk_unlink(&a->chunks, c);
	c->arena = NULL;
}

bool pool_chunk_idle(const struct pool_chunk *c)
{
	return c->first->state == BLOCK_FREE && !c->first->next;
}

/* The smallest idle chunk of @list of at least @need bytes. */
struct pool_chunk *pool_idle_fit(struct pool_chunk *list, size_t need)
{
	struct pool_chunk *best = NULL;

	for (struct pool_chunk *c = list; c; c = c->next)
		if (pool_chunk_idle(c) && c->size >= need &&
		    (!best || c->size < best->size))
			best = c;
	return best;
}

/* ------------------------------------------------------------------ */
/* Arenas */

struct pool_arena *pool_arena_new(struct accel_pool *pool,
				    struct accel_stream *stream)
{
	struct pool_arena *a = calloc(1, sizeof(*a));

	if (!a || !pool_map_init(&a->map)) {
		free(a);
		accel_oom_error("out of host memory");
		return NULL;
	}
	pthread_mutex_init(&a->lock, NULL);
	pool_index_init(&a->index, pool->granule);
	a->stream = stream;
	a->next = pool->arenas;
	pool->arenas = a;
	return a;
}

void pool_arena_free(struct pool_arena *a)
{
	pool_map_destroy(&a->map);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* Pool lock held: forget an arena with no chunks left. */
void pool_arena_drop(struct accel_pool *pool, struct pool_arena *a)
{
	struct pool_arena **pp = &pool->arenas;

	pool->allocations += a->allocations;
	pool->frees += a->frees;

	while (*pp != a)
		pp = &(*pp)->next;
	*pp = a->next;
	pool_arena_free(a);
}

void pool_detach_idle(struct pool_arena *a, struct pool_chunk **to)
{
	struct pool_chunk *c, *next;

	for (c = a->chunks; c; c = next) {
		next = c->next;
		if (pool_chunk_idle(c)) {
			pool_detach(a, c);
			pool_chunk_link(to, c);
		}
	}
}

/*
 * Pool lock held. An orphan's idle chunks go to the shared list; the orphan
 * goes when nothing is left in it.
 */
void pool_orphan_tidy(struct accel_pool *pool, struct pool_arena *a)
{
	bool empty;

	pthread_mutex_lock(&a->lock);
	pool_detach_idle(a, &pool->shared);
	empty = !a->chunks && !a->pending;
	pthread_mutex_unlock(&a->lock);
	if (empty)
		pool_arena_drop(pool, a);
}
