// SPDX-License-Identifier: MIT
/*
 * A pool's allocation history (accel_pool_record_history()): a ring of the
 * last events, each with the call that caused it, when the pool records.
 * Off, the pool's paths test one flag and record nothing.
 */
#include <stdlib.h>
#include <time.h>

#include "pool/pool.h"

ACCEL_TLS_HOT struct pool_call pool_call;

/* what accel_pool_set_history_context() set on this thread */
static _Thread_local uint64_t history_context;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void pool_history_add(struct accel_pool *pool, enum accel_pool_action action,
		      enum accel_pool_block_state state, uintptr_t addr,
		      size_t size, size_t requested, bool of_call)
{
	struct accel_pool_event e = {
		.action = action,
		.state = state,
		.addr = addr,
		.size = size,
		.requested = requested,
		.stream = of_call ? pool_call.stream : NULL,
		.caller = of_call ? pool_call.caller : NULL,
		.context = history_context,
	};
	struct pool_history *h;

	pthread_mutex_lock(&pool->history_lock);
	h = pool->history;	/* NULL if recording stopped meanwhile */
	if (h) {
		/* strictly increasing: orders the events of one address */
		e.time_ns = now_ns();
		if (e.time_ns <= h->last_ns)
			e.time_ns = h->last_ns + 1;
		h->last_ns = e.time_ns;
		h->events[h->next] = e;
		h->next = (h->next + 1) % h->max;
		if (h->count < h->max)
			h->count++;
	}
	pthread_mutex_unlock(&pool->history_lock);
}

void pool_history_add_free(struct accel_pool *pool, const struct pool_block *b,
			   bool pending)
{
	pool_history_add(pool, ACCEL_POOL_FREE_REQUESTED,
			 pending ? ACCEL_POOL_BLOCK_PENDING_FREE :
				   ACCEL_POOL_BLOCK_FREE,
			 b->addr, b->size, b->requested, true);
	if (!pending)
		pool_history_add(pool, ACCEL_POOL_FREE_COMPLETED,
				 ACCEL_POOL_BLOCK_FREE, b->addr, b->size,
				 b->requested, true);
}

void pool_history_copy(const struct pool_history *h, size_t n,
		       struct accel_pool_event *out)
{
	size_t first = (h->next + h->max - n) % h->max;

	for (size_t i = 0; i < n; i++)
		out[i] = h->events[(first + i) % h->max];
}

/* A ring of @max events holding the latest of @old that fit; NULL: no memory. */
static struct pool_history *history_new(const struct pool_history *old,
					size_t max)
{
	struct pool_history *h;

	if (max > (SIZE_MAX - sizeof(*h)) / sizeof(h->events[0]))
		return NULL;
	h = malloc(sizeof(*h) + max * sizeof(h->events[0]));
	if (!h)
		return NULL;
	h->max = max;
	h->count = 0;
	h->next = 0;
	h->last_ns = old ? old->last_ns : 0;
	if (old) {
		size_t keep = old->count < max ? old->count : max;

		pool_history_copy(old, keep, h->events);
		h->count = keep;
		h->next = keep % max;
	}
	return h;
}

void pool_history_end(struct accel_pool *pool)
{
	atomic_store(&pool->recording, false);
	free(pool->history);
	pool->history = NULL;
	pthread_mutex_destroy(&pool->history_lock);
}

accel_status_t accel_pool_record_history(accel_pool_t handle,
					 size_t max_entries)
{
	struct accel_pool *pool ACCEL_HANDLE_REF = NULL;
	struct pool_history *h = NULL, *old;

	ACCEL_ENTER();
	pool = pool_lookup(handle);
	if (!pool)
		return ACCEL_FAILED;
	pthread_mutex_lock(&pool->history_lock);
	old = pool->history;
	if (max_entries) {
		h = history_new(old, max_entries);
		if (!h) {
			pthread_mutex_unlock(&pool->history_lock);
			return accel_oom_error("out of host memory for a history of %zu events",
					       max_entries);
		}
	}
	pool->history = h;
	atomic_store(&pool->recording, h != NULL);
	pthread_mutex_unlock(&pool->history_lock);
	free(old);
	return ACCEL_SUCCESS;
}

void accel_pool_set_history_context(uint64_t context)
{
	history_context = context;
}
