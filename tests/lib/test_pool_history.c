// SPDX-License-Identifier: MIT
/*
 * A pool's allocation history and snapshots (accel.h, "Allocation history
 * and snapshots of a pool"): the ring of the last events and who caused
 * them, and snapshots of every segment and block that agree with the
 * statistics, taken while other threads allocate, kept after the pool.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "suite.h"

#define KIB 1024u
#define MIB (1u << 20)

static struct accel_pool_snapshot *snapshot_of(accel_pool_t p)
{
	struct accel_pool_snapshot *s;

	REQUIRE_OK(accel_pool_get_snapshot(p, &s));
	REQUIRE(s != NULL);
	return s;
}

static bool is_block_event(const struct accel_pool_event *e)
{
	return e->action != ACCEL_POOL_SEGMENT_ALLOC &&
	       e->action != ACCEL_POOL_SEGMENT_FREE;
}

/*
 * A snapshot holds together: segments in address order, apart; blocks
 * tiling each segment; each block's history within it; totals that are
 * the sums of the parts; the history in time order. False, reported, if not.
 */
static bool holds_together(const struct accel_pool_snapshot *s)
{
	size_t reserved = 0, allocated = 0, active = 0, requested = 0;
	bool ok = true;

	for (size_t i = 0; i < s->nsegments; i++) {
		const struct accel_pool_segment *seg = &s->segments[i];
		uintptr_t at = seg->addr;
		size_t seg_allocated = 0, seg_active = 0;

		if (i && s->segments[i - 1].addr + s->segments[i - 1].size > seg->addr)
			ok = false;
		if (seg->direct && seg->nblocks != 1)
			ok = false;
		for (size_t k = 0; k < seg->nblocks; k++) {
			const struct accel_pool_block_info *b = &seg->blocks[k];

			ok &= b->addr == at && b->size > 0;
			at += b->size;
			if (b->state != ACCEL_POOL_BLOCK_FREE)
				seg_active += b->size;
			if (b->state == ACCEL_POOL_BLOCK_ALLOCATED) {
				seg_allocated += b->size;
				requested += b->requested;
				ok &= b->requested > 0 && b->requested <= b->size;
			}
			for (size_t h = 0; h < b->nhistory; h++)
				ok &= b->history[h].addr - b->addr < b->size &&
				      is_block_event(&b->history[h]);
		}
		ok &= at == seg->addr + seg->size;
		ok &= seg_allocated == seg->allocated && seg_active == seg->active;
		reserved += seg->size;
		allocated += seg_allocated;
		active += seg_active;
	}
	ok &= reserved == s->reserved && allocated == s->allocated &&
	      active == s->active && requested == s->requested;
	ok &= s->nevents <= s->history_max;
	for (size_t i = 1; i < s->nevents; i++)
		ok &= s->events[i - 1].time_ns < s->events[i].time_ns;
	if (!ok)
		printf("#   the snapshot does not hold together\n");
	return ok;
}

/* The snapshot's totals are the statistics' (taken with nothing under way). */
static void check_agrees_with_stats(accel_pool_t p)
{
	/* the snapshot first: it must settle what is over as the statistics do */
	struct accel_pool_snapshot *s = snapshot_of(p);
	struct accel_pool_stats st = stats_of(p);
	size_t chunks = 0, live = 0;

	CHECK(holds_together(s));
	CHECK(s->reserved == st.reserved);
	CHECK(s->allocated == st.allocated);
	CHECK(s->active == st.active);
	CHECK(s->requested == st.requested);
	for (size_t i = 0; i < s->nsegments; i++) {
		chunks += !s->segments[i].direct;
		for (size_t k = 0; k < s->segments[i].nblocks; k++)
			live += s->segments[i].blocks[k].state ==
				ACCEL_POOL_BLOCK_ALLOCATED;
	}
	CHECK(chunks == st.chunks);
	CHECK(live == st.blocks);
	accel_pool_snapshot_free(s);
}

/* The block of @s at @addr, or NULL. */
static const struct accel_pool_block_info *
block_at(const struct accel_pool_snapshot *s, const void *addr)
{
	for (size_t i = 0; i < s->nsegments; i++)
		for (size_t k = 0; k < s->segments[i].nblocks; k++)
			if (s->segments[i].blocks[k].addr == (uintptr_t)addr)
				return &s->segments[i].blocks[k];
	return NULL;
}

/* The latest block event of @s with @action at @addr, or NULL. */
static const struct accel_pool_event *
last_event(const struct accel_pool_snapshot *s, int action, const void *addr)
{
	for (size_t i = s->nevents; i-- > 0;)
		if (s->events[i].action == action &&
		    s->events[i].addr == (uintptr_t)addr)
			return &s->events[i];
	return NULL;
}

/* With no history asked for, and once stopped, nothing is recorded. */
TEST(pool_history_off_records_nothing)
{
	accel_pool_t p = new_pool(ctx);
	struct accel_pool_snapshot *s;
	void *a = palloc(p, NULL, 4 * KIB);

	OK(accel_pool_deallocate(p, NULL, a, 4 * KIB));
	a = palloc(p, NULL, 4 * KIB);
	s = snapshot_of(p);
	CHECK(s->history_max == 0 && s->nevents == 0);
	CHECK(block_at(s, a) && block_at(s, a)->nhistory == 0);
	accel_pool_snapshot_free(s);

	OK(accel_pool_record_history(p, 16));
	OK(accel_pool_deallocate(p, NULL, a, 4 * KIB));
	s = snapshot_of(p);
	CHECK(s->history_max == 16 && s->nevents >= 2);
	accel_pool_snapshot_free(s);
	OK(accel_pool_record_history(p, 0));
	a = palloc(p, NULL, 4 * KIB);
	OK(accel_pool_deallocate(p, NULL, a, 4 * KIB));
	s = snapshot_of(p);
	CHECK(s->history_max == 0 && s->nevents == 0);
	accel_pool_snapshot_free(s);
	OK(accel_pool_destroy(p));
}

/* @n blocks of 1, 2, ... n KiB, each allocated and freed in turn. */
static void alloc_free_each(accel_pool_t p, int n)
{
	for (int i = 1; i <= n; i++) {
		void *x = palloc(p, NULL, (size_t)i * KIB);

		OK(accel_pool_deallocate(p, NULL, x, (size_t)i * KIB));
	}
}

/* Whether @e ends with the events of allocating and freeing @size bytes at @n. */
static bool ends_with_alloc_and_free(const struct accel_pool_event *e, size_t n,
				     size_t size)
{
	const struct accel_pool_event *block[3];
	size_t found = 0;

	for (size_t i = n; i-- > 0 && found < 3;)
		if (is_block_event(&e[i]))
			block[found++] = &e[i];
	return found == 3 &&
	       block[2]->action == ACCEL_POOL_ALLOC &&
	       block[2]->state == ACCEL_POOL_BLOCK_ALLOCATED &&
	       block[1]->action == ACCEL_POOL_FREE_REQUESTED &&
	       block[0]->action == ACCEL_POOL_FREE_COMPLETED &&
	       block[0]->state == ACCEL_POOL_BLOCK_FREE &&
	       block[2]->requested == size && block[1]->requested == size &&
	       block[0]->requested == size && block[2]->size >= size &&
	       block[2]->addr == block[0]->addr;
}

/* The ring keeps the last max_entries events; a new size keeps the latest. */
TEST(pool_history_ring_keeps_the_last_events)
{
	accel_pool_t p = new_pool(ctx);
	struct accel_pool_snapshot *s, *t;

	OK(accel_pool_record_history(p, 8));
	alloc_free_each(p, 10);
	s = snapshot_of(p);
	CHECK(s->nevents == 8);
	CHECK(holds_together(s));
	CHECK(ends_with_alloc_and_free(s->events, s->nevents, 10 * KIB));
	/* the oldest kept are of the later blocks only */
	for (size_t i = 0; i < s->nevents; i++)
		CHECK(!is_block_event(&s->events[i]) ||
		      s->events[i].requested >= 8 * KIB);

	OK(accel_pool_record_history(p, 4));	/* smaller: the latest 4 */
	t = snapshot_of(p);
	CHECK(t->history_max == 4 && t->nevents == 4);
	CHECK(!memcmp(t->events, s->events + 4, 4 * sizeof(*t->events)));
	accel_pool_snapshot_free(t);
	OK(accel_pool_record_history(p, 100));	/* larger: all 4, then more */
	alloc_free_each(p, 2);
	t = snapshot_of(p);
	CHECK(t->nevents >= 4 + 6 && t->nevents <= 100);
	CHECK(!memcmp(t->events, s->events + 4, 4 * sizeof(*t->events)));
	CHECK(ends_with_alloc_and_free(t->events, t->nevents, 2 * KIB));
	accel_pool_snapshot_free(t);
	accel_pool_snapshot_free(s);
	OK(accel_pool_destroy(p));
}

/*
 * The calls whose return addresses the history should show: small and
 * never inlined, so that a return address into them lies within a few
 * hundred bytes of their start.
 */
__attribute__((noinline)) static void *allocate_here(accel_pool_t p,
						     accel_stream_t s, size_t n)
{
	void *x = NULL;

	OK(accel_pool_allocate(p, s, &x, n));
	return x;
}

__attribute__((noinline)) static void free_here(accel_pool_t p,
						accel_stream_t s, void *x,
						size_t n)
{
	OK(accel_pool_deallocate(p, s, x, n));
}

#define FUNCTION_BYTES 512	/* more than either takes, even under ASan */

static bool returns_into(const void *caller, uintptr_t fn)
{
	return (uintptr_t)caller - fn < FUNCTION_BYTES;
}

struct other_context {
	accel_pool_t pool;
	void *block;
};

/* Another thread's context is its own: it tags only that thread's events. */
static void *free_with_other_context(void *arg)
{
	struct other_context *o = arg;

	accel_pool_set_history_context(7);
	OK(accel_pool_deallocate(o->pool, NULL, o->block, KIB));
	return NULL;
}

/*
 * Each event names the code that called the public function, the stream it
 * was called with, and the thread's context.
 */
TEST(pool_history_names_the_caller_stream_and_context)
{
	accel_pool_t p = new_pool(ctx);
	struct accel_pool_snapshot *s;
	const struct accel_pool_event *e;
	struct other_context o = { p, NULL };
	accel_stream_t st;
	pthread_t t;
	void *x, *y;

	REQUIRE_OK(accel_stream_create(ctx->dev, &st));
	OK(accel_pool_record_history(p, 64));
	accel_pool_set_history_context(42);
	x = allocate_here(p, st, 4 * KIB);
	free_here(p, st, x, 4 * KIB);
	accel_pool_set_history_context(0);
	/* before x's memory may go to the next blocks */
	s = snapshot_of(p);
	e = last_event(s, ACCEL_POOL_ALLOC, x);
	CHECK(e && returns_into(e->caller, (uintptr_t)allocate_here));
	CHECK(e && e->stream == st && e->context == 42);
	e = last_event(s, ACCEL_POOL_FREE_REQUESTED, x);
	CHECK(e && returns_into(e->caller, (uintptr_t)free_here));
	CHECK(e && e->stream == st && e->context == 42);
	accel_pool_snapshot_free(s);

	y = allocate_here(p, NULL, 8 * KIB);
	o.block = palloc(p, NULL, KIB);
	REQUIRE(!pthread_create(&t, NULL, free_with_other_context, &o));
	pthread_join(t, NULL);
	s = snapshot_of(p);
	e = last_event(s, ACCEL_POOL_ALLOC, y);
	CHECK(e && returns_into(e->caller, (uintptr_t)allocate_here));
	CHECK(e && e->stream == NULL && e->context == 0);
	e = last_event(s, ACCEL_POOL_ALLOC, o.block);
	CHECK(e && e->context == 0 && e->requested == KIB);
	e = last_event(s, ACCEL_POOL_FREE_REQUESTED, o.block);
	CHECK(e && e->context == 7);
	accel_pool_snapshot_free(s);
	free_here(p, NULL, y, 8 * KIB);
	OK(accel_stream_destroy(ctx->dev, st));
	OK(accel_pool_destroy(p));
}

/*
 * A block's history is oldest first, whatever the addresses of its events:
 * blocks freed from the last to the first merge into one free block whose
 * events lie at falling addresses.
 */
TEST(pool_history_of_a_block_is_oldest_first)
{
	accel_pool_t p = new_pool(ctx);
	struct accel_pool_snapshot *s;
	void *x[4];
	bool merged = false;

	for (int i = 0; i < 4; i++)
		x[i] = palloc(p, NULL, 4 * KIB);
	OK(accel_pool_record_history(p, 100));
	for (int i = 3; i >= 0; i--)
		OK(accel_pool_deallocate(p, NULL, x[i], 4 * KIB));
	s = snapshot_of(p);
	for (size_t i = 0; i < s->nsegments; i++)
		for (size_t k = 0; k < s->segments[i].nblocks; k++) {
			const struct accel_pool_block_info *b = &s->segments[i].blocks[k];

			merged |= b->nhistory >= 8;
			for (size_t e = 1; e < b->nhistory; e++)
				CHECK(b->history[e - 1].time_ns < b->history[e].time_ns);
		}
	CHECK(merged || !stats_of(p).caching);
	accel_pool_snapshot_free(s);
	OK(accel_pool_destroy(p));
}

TEST(pool_history_snapshot_of_an_empty_pool)
{
	accel_pool_t p = new_pool(ctx);
	struct accel_pool_snapshot *s = snapshot_of(p);
	void *x;

	CHECK(s->nsegments == 0 && s->reserved == 0 && s->allocated == 0 &&
	      s->active == 0 && s->requested == 0 && s->nevents == 0);
	accel_pool_snapshot_free(s);
	x = palloc(p, NULL, MIB);
	OK(accel_pool_deallocate(p, NULL, x, MIB));
	OK(accel_pool_trim(p));
	s = snapshot_of(p);
	CHECK(s->nsegments == 0 && s->reserved == 0);
	accel_pool_snapshot_free(s);
	OK(accel_pool_destroy(p));
}

/*
 * After allocations of every kind (small, chunk-sized, larger than a
 * chunk: from the device directly), frees and a trim, the snapshot's
 * totals are the statistics'.
 */
TEST(pool_history_snapshot_agrees_with_the_statistics)
{
	accel_pool_t p = new_pool(ctx);
	size_t max_chunk, sizes[] = { 100, 4 * KIB, 300 * KIB, MIB, 3 * MIB, 0 };
	struct accel_pool_snapshot *s;
	void *blk[6];
	int n = 6;

	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	sizes[5] = max_chunk + 1;
	OK(accel_pool_record_history(p, 256));
	for (int i = 0; i < n; i++)
		blk[i] = palloc(p, NULL, sizes[i]);
	check_agrees_with_stats(p);
	s = snapshot_of(p);
	for (int i = 0; i < n; i++) {
		const struct accel_pool_block_info *b = block_at(s, blk[i]);

		CHECK(b && b->state == ACCEL_POOL_BLOCK_ALLOCATED &&
		      b->requested == sizes[i] && b->nhistory >= 1);
		CHECK(b && b->nhistory &&
		      b->history[b->nhistory - 1].action == ACCEL_POOL_ALLOC &&
		      b->history[b->nhistory - 1].addr == (uintptr_t)blk[i]);
	}
	accel_pool_snapshot_free(s);
	for (int i = 0; i < n; i += 2)
		OK(accel_pool_deallocate(p, NULL, blk[i], sizes[i]));
	check_agrees_with_stats(p);
	OK(accel_pool_trim(p));
	check_agrees_with_stats(p);
	for (int i = 1; i < n; i += 2)
		OK(accel_pool_deallocate(p, NULL, blk[i], sizes[i]));
	check_agrees_with_stats(p);
	CHECK(stats_of(p).allocated == 0);
	OK(accel_pool_destroy(p));
}

/*
 * A block freed with no stream while a stream is busy is pending: active,
 * not allocated, in the snapshot as in the statistics, a block of a chunk
 * and one from the device alike; once the work is over, free, with the
 * free's completion in the history.
 */
TEST(pool_history_snapshot_shows_frees_pending_behind_a_busy_stream)
{
	uint8_t *busy = dalloc(ctx, 2 * BUSY_HALF);
	accel_pool_t p = new_pool(ctx);
	size_t max_chunk, sizes[2] = { 64 * KIB, 0 };
	int copies = BUSY_START;
	accel_stream_t s;

	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	sizes[1] = max_chunk + 1;
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	OK(accel_pool_record_history(p, 256));
	for (;;) {
		struct accel_pool_snapshot *snap;
		struct accel_pool_stats st;
		void *x[2];
		bool observed;

		for (int i = 0; i < 2; i++)
			x[i] = palloc(p, s, sizes[i]);
		busy_chain(ctx->dev, s, busy, copies);
		for (int i = 0; i < 2; i++)
			OK(accel_pool_deallocate(p, NULL, x[i], sizes[i]));
		st = stats_of(p);
		snap = snapshot_of(p);
		/* still busy: no free completed since the frees */
		observed = stream_busy(ctx->dev, s);
		CHECK(holds_together(snap));
		for (int i = 0; observed && i < 2; i++) {
			const struct accel_pool_block_info *b = block_at(snap, x[i]);
			const struct accel_pool_event *e =
				last_event(snap, ACCEL_POOL_FREE_REQUESTED, x[i]);
			const struct accel_pool_event *done =
				last_event(snap, ACCEL_POOL_FREE_COMPLETED, x[i]);

			CHECK(b && b->state == ACCEL_POOL_BLOCK_PENDING_FREE);
			CHECK(e && e->state == ACCEL_POOL_BLOCK_PENDING_FREE);
			/* none since this free: an earlier round's, at the same
			 * address, may be there */
			CHECK(e && (!done || done < e));
		}
		if (observed) {
			CHECK(snap->allocated == 0 && st.allocated == 0);
			CHECK(snap->active >= sizes[0] + sizes[1]);
			CHECK(snap->active == st.active);
			CHECK(snap->reserved == st.reserved);
		}
		accel_pool_snapshot_free(snap);
		OK(accel_stream_synchronize(ctx->dev, s));
		check_agrees_with_stats(p);
		snap = snapshot_of(p);
		CHECK(snap->active == 0);
		for (int i = 0; observed && i < 2; i++) {
			const struct accel_pool_event *e =
				last_event(snap, ACCEL_POOL_FREE_COMPLETED, x[i]);

			/* found over by a later call: none that the free made */
			CHECK(e && e->caller == NULL);
		}
		accel_pool_snapshot_free(snap);
		if (observed || !try_longer(&copies))
			break;
	}
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_pool_destroy(p));
	dfree(ctx, busy, 2 * BUSY_HALF);
}

enum { WORKERS = 4, ROUNDS = 20000 };

struct worker {
	accel_pool_t pool;
	atomic_int *running;
	unsigned int seed;
	int errors;
};

/* Allocate and free blocks of assorted sizes until told to stop. */
static void *churn(void *arg)
{
	struct worker *w = arg;
	void *held[8] = { 0 };
	size_t size[8] = { 0 };

	for (int r = 0; r < ROUNDS; r++) {
		int k = rand_r(&w->seed) % 8;

		if (held[k]) {
			w->errors += accel_pool_deallocate(w->pool, NULL, held[k],
							   size[k]) != ACCEL_SUCCESS;
			held[k] = NULL;
			continue;
		}
		size[k] = 1 + (size_t)rand_r(&w->seed) % (2 * MIB);
		w->errors += accel_pool_allocate(w->pool, NULL, &held[k],
						 size[k]) != ACCEL_SUCCESS;
	}
	for (int k = 0; k < 8; k++)
		if (held[k])
			w->errors += accel_pool_deallocate(w->pool, NULL, held[k],
							   size[k]) != ACCEL_SUCCESS;
	atomic_fetch_sub(w->running, 1);
	return NULL;
}

/*
 * Snapshots taken while other threads allocate and free are each one
 * moment of the pool; once the threads are done, they agree with the
 * statistics.
 */
TEST(pool_history_snapshots_while_threads_allocate)
{
	accel_pool_t p = new_pool(ctx);
	struct worker w[WORKERS];
	pthread_t t[WORKERS];
	atomic_int running = WORKERS;
	int torn = 0, taken = 0;

	OK(accel_pool_record_history(p, 64));
	for (int i = 0; i < WORKERS; i++) {
		w[i] = (struct worker){ p, &running, 1234u + (unsigned int)i, 0 };
		REQUIRE(!pthread_create(&t[i], NULL, churn, &w[i]));
	}
	while (atomic_load(&running)) {
		struct accel_pool_snapshot *s = snapshot_of(p);

		torn += !holds_together(s);
		accel_pool_snapshot_free(s);
		if (++taken % 64 == 0)	/* a new ring under way */
			OK(accel_pool_record_history(p, 32 + taken % 128));
	}
	if (suite_verbose())
		printf("#   %d snapshots\n", taken);
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(t[i], NULL);
		CHECK(w[i].errors == 0);
	}
	CHECK(torn == 0);
	check_agrees_with_stats(p);
	CHECK(stats_of(p).allocated == 0);
	OK(accel_pool_destroy(p));
}

TEST(pool_history_refuses_bad_arguments)
{
	accel_pool_t p = new_pool(ctx), gone = new_pool(ctx);
	struct accel_pool_snapshot *s = (void *)&s;

	OK(accel_pool_destroy(gone));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_pool_record_history(NULL, 8));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_pool_get_snapshot(NULL, &s));
	CHECK(s == NULL);	/* no stale pointer left */
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE, accel_pool_record_history(gone, 8));
	s = (void *)&s;
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE, accel_pool_get_snapshot(gone, &s));
	CHECK(s == NULL);
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_pool_get_snapshot(p, NULL));
	FAILS_WITH(ACCEL_ERROR_OUT_OF_MEMORY,
		   accel_pool_record_history(p, SIZE_MAX / 2));
	accel_pool_snapshot_free(NULL);
	OK(accel_pool_destroy(p));
}

/* A snapshot is the caller's: whole after its pool is destroyed. */
TEST(pool_history_snapshot_outlives_its_pool)
{
	accel_pool_t p = new_pool(ctx);
	struct accel_pool_snapshot *s;
	const struct accel_pool_block_info *b;
	void *x;

	OK(accel_pool_record_history(p, 32));
	x = palloc(p, NULL, 12 * KIB);
	s = snapshot_of(p);
	OK(accel_pool_destroy(p));
	CHECK(holds_together(s));
	b = block_at(s, x);
	CHECK(b && b->requested == 12 * KIB && b->nhistory >= 1 &&
	      b->history[b->nhistory - 1].requested == 12 * KIB);
	accel_pool_snapshot_free(s);
}
