// SPDX-License-Identifier: MIT
/*
 * What users control of a pool and see of it (accel.h, "Caching
 * allocator"): a limit per pool, a cap on the device's pools together, a
 * release threshold applied at synchronizations, an out-of-memory handler
 * that may free and ask for one more try, and the statistics of blocks
 * active, split, handed out and freed.
 */
#include <math.h>

#include "suite.h"

#define MIB (1u << 20)

/* Blocks of @p, one MiB each, until one fails; how many it took. */
static int fill(accel_pool_t p, void **blk, int max)
{
	int n = 0;

	while (n < max && accel_pool_allocate(p, NULL, &blk[n], MIB) ==
				  ACCEL_SUCCESS)
		n++;
	return n;
}

static void free_all(accel_pool_t p, void **blk, int n)
{
	for (int i = 0; i < n; i++)
		OK(accel_pool_deallocate(p, NULL, blk[i], MIB));
}

/*
 * An allocation past the limit fails out of memory although the device
 * has room; what is freed may be allocated again; no limit, no failure.
 */
TEST(a_pools_limit_fails_allocations_past_it)
{
	accel_pool_t p = new_pool(ctx);
	void *blk[16], *more = NULL;
	int n;

	OK(accel_pool_set_limit(p, 8 * MIB));
	n = fill(p, blk, 16);
	CHECK(n >= 4 && n <= 8);
	CHECK(accel_get_last_error_code() == ACCEL_ERROR_OUT_OF_MEMORY);
	CHECK(stats_of(p).reserved <= 8 * MIB);
	CHECK(stats_of(p).limit == 8 * MIB);
	CHECK(free_memory(ctx) > 16 * MIB);
	OK(accel_pool_deallocate(p, NULL, blk[--n], MIB));
	blk[n++] = palloc(p, NULL, MIB);
	OK(accel_pool_set_limit(p, 0));
	OK(accel_pool_allocate(p, NULL, &more, 4 * MIB));
	OK(accel_pool_deallocate(p, NULL, more, 4 * MIB));
	free_all(p, blk, n);
	OK(accel_pool_destroy(p));
}

/* A limit below what the pool holds takes nothing back from live blocks. */
TEST(a_limit_below_what_the_pool_holds_takes_nothing_back)
{
	accel_pool_t p = new_pool(ctx);
	uint8_t *a = palloc(p, NULL, 4 * MIB), *back;
	void *b = NULL;

	OK(accel_device_memory_set(ctx->dev, a, 0x5c, 4 * MIB));
	OK(accel_pool_set_limit(p, 2 * MIB));	/* a CUDA GPU's page */
	FAILS_WITH(ACCEL_ERROR_OUT_OF_MEMORY,
		   accel_pool_allocate(p, NULL, &b, 4 * MIB));
	CHECK(b == NULL);
	back = read_back(ctx, a, 4 * MIB);
	CHECK(check_bytes(back, 4 * MIB, 0x5c));
	free(back);
	OK(accel_pool_deallocate(p, NULL, a, 4 * MIB));
	OK(accel_pool_trim(p));
	b = palloc(p, NULL, MIB / 2);
	OK(accel_pool_deallocate(p, NULL, b, MIB / 2));
	OK(accel_pool_destroy(p));
}

/* The pools of the device share the fraction; raw allocations do not count. */
TEST(a_memory_fraction_caps_the_devices_pools_together)
{
	accel_pool_t p = new_pool(ctx), q = new_pool(ctx);
	size_t total, free_bytes;
	void *a = NULL, *b = NULL, *c = NULL, *raw;

	REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &free_bytes));
	OK(accel_device_set_memory_fraction(ctx->dev,
					    (double)(12 * MIB) / (double)total));
	a = palloc(p, NULL, 5 * MIB);
	b = palloc(q, NULL, 5 * MIB);
	FAILS_WITH(ACCEL_ERROR_OUT_OF_MEMORY,
		   accel_pool_allocate(q, NULL, &c, 5 * MIB));
	CHECK(strstr(accel_get_last_error(), "accel_device_set_memory_fraction") != NULL);
	raw = dalloc(ctx, 16 * MIB);
	dfree(ctx, raw, 16 * MIB);
	OK(accel_pool_deallocate(p, NULL, a, 5 * MIB));
	OK(accel_pool_trim(p));
	c = palloc(q, NULL, 5 * MIB);
	OK(accel_device_set_memory_fraction(ctx->dev, 1));
	a = palloc(p, NULL, 8 * MIB);
	OK(accel_pool_deallocate(p, NULL, a, 8 * MIB));
	OK(accel_pool_deallocate(q, NULL, b, 5 * MIB));
	OK(accel_pool_deallocate(q, NULL, c, 5 * MIB));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_set_memory_fraction(ctx->dev, 0));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_set_memory_fraction(ctx->dev, 1.5));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_set_memory_fraction(ctx->dev, NAN));
	OK(accel_pool_destroy(p));
	OK(accel_pool_destroy(q));
}

/*
 * Chunks the pool gives back while queued work may still use their memory
 * stay the device's until that work is over: the limit keeps counting
 * them, and an allocation that needs their room waits for them rather
 * than taking the device past the limit.
 */
TEST(chunks_given_back_behind_queued_work_count_against_the_limit)
{
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	int copies = BUSY_START;
	accel_stream_t st, idle;

	REQUIRE_OK(accel_stream_create(ctx->dev, &st));
	REQUIRE_OK(accel_stream_create(ctx->dev, &idle));
	for (;;) {
		accel_pool_t p = new_pool(ctx);
		void *blk[16];
		size_t held, free_before;
		struct accel_pool_stats s;
		bool pending;
		int n;

		OK(accel_pool_set_limit(p, 8 * MIB));
		OK(accel_pool_set_release_threshold(p, 0));
		free_all(p, blk, n = fill(p, blk, 16));
		held = stats_of(p).reserved;
		free_before = free_memory(ctx);
		busy_chain(ctx->dev, st, big, copies);
		/* gives the idle chunks back, behind st's work */
		OK(accel_stream_synchronize(ctx->dev, idle));
		s = stats_of(p);
		pending = stream_busy(ctx->dev, st);
		/* waits for the chunks given back where it needs their room */
		n = fill(p, blk, 16);
		if (pending || !s.caching) {
			CHECK(s.reserved == held);
			CHECK(n >= 4 && stats_of(p).reserved <= 8 * MIB);
			/* the second fill took no more of the device than the first */
			CHECK(free_memory(ctx) + MIB >= free_before);
		}
		OK(accel_stream_synchronize(ctx->dev, st));
		free_all(p, blk, n);
		OK(accel_pool_destroy(p));
		if (pending || !s.caching || !try_longer(&copies))
			break;
	}
	OK(accel_stream_destroy(ctx->dev, st));
	OK(accel_stream_destroy(ctx->dev, idle));
	dfree(ctx, big, 2 * BUSY_HALF);
}

/* A pool with idle chunks worth @bytes or more, none live. */
static accel_pool_t pool_with_idle(struct suite_ctx *ctx, size_t bytes)
{
	accel_pool_t p = new_pool(ctx);
	void *blk[64];
	int n = 0;

	while (n < 64 && stats_of(p).reserved < bytes)
		blk[n++] = palloc(p, NULL, MIB);
	free_all(p, blk, n);
	REQUIRE(stats_of(p).allocated == 0);
	return p;
}

/*
 * At a synchronization the pool gives idle chunks back down to its
 * threshold: by default (SIZE_MAX) none, with 0 all, and on each kind of
 * synchronization of its device.
 */
TEST(a_release_threshold_gives_idle_chunks_back_at_synchronizations)
{
	accel_pool_t p = pool_with_idle(ctx, 8 * MIB);
	size_t held = stats_of(p).reserved;
	accel_stream_t s;
	accel_event_t e;

	CHECK(stats_of(p).release_threshold == SIZE_MAX);
	OK(accel_device_synchronize(ctx->dev));
	CHECK(stats_of(p).reserved == held);
	OK(accel_pool_set_release_threshold(p, 0));
	CHECK(stats_of(p).reserved == held);	/* not before a synchronization */
	OK(accel_device_synchronize(ctx->dev));
	CHECK(stats_of(p).reserved == 0);
	OK(accel_pool_destroy(p));

	p = pool_with_idle(ctx, 8 * MIB);
	OK(accel_pool_set_release_threshold(p, 0));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(stats_of(p).reserved == 0);
	OK(accel_pool_destroy(p));

	p = pool_with_idle(ctx, 8 * MIB);
	held = stats_of(p).reserved;
	OK(accel_pool_set_release_threshold(p, held / 2));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	OK(accel_event_record(ctx->dev, s, e));
	OK(accel_event_synchronize(ctx->dev, e));
	CHECK(stats_of(p).reserved <= held / 2);
	OK(accel_event_destroy(ctx->dev, e));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_pool_destroy(p));
}

/* Live blocks are never given back, whatever the threshold. */
TEST(a_release_threshold_keeps_chunks_with_live_blocks)
{
	accel_pool_t p = new_pool(ctx);
	uint8_t *a = palloc(p, NULL, MIB), *back;

	OK(accel_device_memory_set(ctx->dev, a, 0x3e, MIB));
	OK(accel_pool_set_release_threshold(p, 0));
	OK(accel_device_synchronize(ctx->dev));
	CHECK(stats_of(p).reserved >= MIB);
	back = read_back(ctx, a, MIB);
	CHECK(check_bytes(back, MIB, 0x3e));
	free(back);
	OK(accel_pool_deallocate(p, NULL, a, MIB));
	OK(accel_pool_destroy(p));
}

struct oom_case {
	void *held;		/* a block the handler may free */
	int calls;
	int answer;		/* what the handler returns */
	bool allocate_inside;	/* it allocates from the pool itself */
	accel_status_t inside;	/* what that allocation gave */
};

static int on_oom(accel_pool_t pool, size_t size, void *user)
{
	struct oom_case *c = user;
	void *x = NULL;

	c->calls++;
	CHECK(size == MIB);
	if (c->allocate_inside) {
		/* past the limit too: fails, with no second call of the handler */
		c->inside = accel_pool_allocate(pool, NULL, &x, MIB);
		if (x)
			OK(accel_pool_deallocate(pool, NULL, x, MIB));
	}
	if (c->held && c->answer) {
		OK(accel_pool_deallocate(pool, NULL, c->held, MIB));
		c->held = NULL;
	}
	return c->answer;
}

/*
 * The handler runs when an allocation cannot be met; one that frees and
 * answers nonzero gets the allocation tried again, one that answers 0 has
 * it fail; an allocation inside the handler that fails calls no handler.
 */
TEST(an_oom_handler_may_free_and_have_the_allocation_tried_again)
{
	accel_pool_t p = new_pool(ctx);
	struct oom_case c = { .answer = 1, .allocate_inside = true };
	void *blk[16], *x = NULL;
	size_t ooms;
	int n;

	OK(accel_pool_set_limit(p, 4 * MIB));
	n = fill(p, blk, 16);
	REQUIRE(n > 0);
	ooms = stats_of(p).ooms;	/* fill()'s last try */
	c.held = blk[--n];
	OK(accel_pool_set_oom_handler(p, on_oom, &c));
	OK(accel_pool_allocate(p, NULL, &x, MIB));
	CHECK(x != NULL);
	CHECK(c.calls == 1);
	CHECK(c.inside == ACCEL_FAILED);
	CHECK(stats_of(p).ooms == ooms + 1);	/* the handler's, not the retried */
	CHECK(stats_of(p).oom_retries == 1);

	c = (struct oom_case){ .answer = 0 };
	FAILS_WITH(ACCEL_ERROR_OUT_OF_MEMORY,
		   accel_pool_allocate(p, NULL, &blk[n], MIB));
	CHECK(c.calls == 1);
	CHECK(strstr(accel_get_last_error(), "accel_pool_set_limit") != NULL);
	OK(accel_pool_set_oom_handler(p, NULL, NULL));
	FAILS_WITH(ACCEL_ERROR_OUT_OF_MEMORY,
		   accel_pool_allocate(p, NULL, &blk[n], MIB));
	CHECK(c.calls == 1);
	OK(accel_pool_deallocate(p, NULL, x, MIB));
	free_all(p, blk, n);
	OK(accel_pool_destroy(p));
}

/* A handler that destroys the stream allocated for holds nothing up. */
struct doomed_stream {
	accel_device_t dev;
	accel_stream_t s;
};

static int destroy_the_stream(accel_pool_t pool, size_t size, void *user)
{
	struct doomed_stream *d = user;

	(void)pool;
	(void)size;
	OK(accel_stream_destroy(d->dev, d->s));
	return 1;
}

TEST(an_oom_handler_may_destroy_the_stream_allocated_for)
{
	struct doomed_stream d = { .dev = ctx->dev };
	accel_pool_t p = new_pool(ctx);
	void *x = NULL;

	REQUIRE_OK(accel_stream_create(ctx->dev, &d.s));
	OK(accel_pool_set_limit(p, MIB));
	OK(accel_pool_set_oom_handler(p, destroy_the_stream, &d));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_pool_allocate(p, d.s, &x, 4 * MIB));
	CHECK(x == NULL);
	OK(accel_pool_destroy(p));
}

/*
 * The statistics beyond bytes: blocks handed out and freed, free bytes
 * split off in chunks that hold other blocks, and active bytes (live,
 * and freed but not yet reusable).
 */
TEST(pool_statistics_count_blocks_splits_and_active_bytes)
{
	accel_pool_t p = new_pool(ctx);
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	void *a = palloc(p, NULL, MIB), *b = palloc(p, NULL, MIB);
	void *c = palloc(p, NULL, MIB);
	int copies = BUSY_START;
	struct accel_pool_stats s;
	accel_stream_t st;

	OK(accel_pool_deallocate(p, NULL, b, MIB));
	s = stats_of(p);
	CHECK(s.allocations == 3 && s.frees == 1);
	CHECK(s.inactive_split >= MIB || !s.caching);	/* no chunks if off */
	CHECK(s.active == s.allocated);
	REQUIRE_OK(accel_stream_create(ctx->dev, &st));
	for (;;) {
		size_t live = stats_of(p).allocated;	/* a's as counted too */
		bool pending;

		busy_chain(ctx->dev, st, big, copies);
		OK(accel_pool_deallocate(p, st, a, MIB));	/* behind st */
		s = stats_of(p);
		pending = stream_busy(ctx->dev, st);
		OK(accel_stream_synchronize(ctx->dev, st));
		if (pending) {
			CHECK(s.allocated < live && s.active == live);
			break;
		}
		a = palloc(p, NULL, MIB);
		try_longer(&copies);
	}
	/* its stream's work over, the freed block is no longer active */
	s = stats_of(p);
	CHECK(s.active == s.allocated);
	OK(accel_pool_deallocate(p, NULL, c, MIB));
	OK(accel_stream_destroy(ctx->dev, st));
	dfree(ctx, big, 2 * BUSY_HALF);
	OK(accel_pool_destroy(p));
}
