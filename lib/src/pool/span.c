// SPDX-License-Identifier: MIT
/*
 * Which block of a caching pool an address lies in: for the range checks
 * of raw copies and sets, and for pointer attributes. The registry knows a
 * pool's chunks only as whole allocations; what the caller owns is the
 * live block inside one.
 */
#include "pool/pool.h"

/* Arena lock held: the block of chunk @c holding @addr. */
static const struct pool_block *block_at(const struct pool_arena *a,
					 const struct pool_chunk *c,
					 uintptr_t addr)
{
	const struct pool_block *b = pool_map_find(&a->map, addr);

	if (b)		/* most pointers are a block's start */
		return b;
	for (b = c->first; b; b = b->next)
		if (addr - b->addr < b->size)
			return b;
	return NULL;
}

static struct pool_chunk *chunk_in(struct pool_chunk *list, uintptr_t base)
{
	for (struct pool_chunk *c = list; c; c = c->next)
		if (c->addr == base)
			return c;
	return NULL;
}

/* Pool lock held: @addr in the pool's backend allocation at @base. */
static bool span_in_pool(struct accel_pool *pool, uintptr_t base,
			 uintptr_t addr, struct accel_pool_span *span)
{
	const struct pool_block *b = pool_map_find(&pool->direct, base);
	struct pool_chunk *c;

	if (b) {		/* a block straight from the backend */
		span->live = true;
		span->base = b->addr;
		span->size = b->requested;
		return true;
	}
	if (chunk_in(pool->shared, base)) {	/* idle: nothing live */
		span->live = false;
		return true;
	}
	for (struct pool_arena *a = pool->arenas; a; a = a->next) {
		pthread_mutex_lock(&a->lock);
		c = chunk_in(a->chunks, base);
		b = c ? block_at(a, c, addr) : NULL;
		if (b) {
			span->live = b->state == BLOCK_USED;
			span->base = b->addr;
			span->size = span->live ? b->requested : b->size;
		}
		pthread_mutex_unlock(&a->lock);
		if (c)
			return true;
	}
	return false;
}

bool pool_span(struct accel_device *dev, uintptr_t base, uintptr_t addr,
	       struct accel_pool_span *span)
{
	bool found = false;

	span->live = false;
	span->base = 0;
	span->size = 0;
	pthread_mutex_lock(&dev->pool_lock);
	for (struct accel_pool *pool = dev->pools; pool && !found;
	     pool = pool->next) {
		pthread_mutex_lock(&pool->lock);
		found = span_in_pool(pool, base, addr, span);
		pthread_mutex_unlock(&pool->lock);
	}
	pthread_mutex_unlock(&dev->pool_lock);
	return found;
}
