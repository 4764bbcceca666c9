// SPDX-License-Identifier: MIT
/* async_memory_copy_h2d / d2h / d2d: ordering and captured sources. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"

static accel_stream_t new_stream(struct suite_ctx *ctx)
{
	accel_stream_t s = NULL;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE(s);
	return s;
}

TEST(async_chain_in_order)
{
	const size_t n = (2 << 20) + 1;
	uint8_t *a = dalloc(ctx, n), *b = dalloc(ctx, n), *h = xmalloc(n);
	uint8_t *out = xmalloc(n);
	accel_stream_t s = new_stream(ctx);

	fill_pattern(h, n, 31);
	memset(out, 0, n);
	OK(accel_async_memory_copy_h2d(ctx->dev, s, a, h, n));
	OK(accel_async_memory_copy_d2d(ctx->dev, s, b, a, n));
	OK(accel_async_memory_copy_d2h(ctx->dev, s, out, b, n));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(check_pattern(out, n, 31));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, a, n);
	dfree(ctx, b, n);
	free(h);
	free(out);
}

/*
 * "After an async_memory_copy_h2d returns, Paddle may reuse or free the host
 * source buffer." The stream is kept busy so the copies cannot simply run
 * at once.
 */
TEST(async_h2d_pageable_source_reused_at_once)
{
	enum { COPIES = 64 };
	const size_t big = 8 << 20, n = 3000;
	uint8_t *busy = dalloc(ctx, big), *busy2 = dalloc(ctx, big);
	uint8_t *d = dalloc(ctx, n * COPIES), *back;
	accel_stream_t s = new_stream(ctx);

	for (int i = 0; i < COPIES; i++) {
		uint8_t *h = xmalloc(n);

		OK(accel_async_memory_copy_d2d(ctx->dev, s, busy2, busy, big));
		fill_pattern(h, n, 1000 + i);
		OK(accel_async_memory_copy_h2d(ctx->dev, s, d + i * n, h, n));
		memset(h, 0xdd, n);	/* reused... */
		free(h);		/* ...and freed */
	}
	OK(accel_stream_synchronize(ctx->dev, s));
	back = read_back(ctx, d, n * COPIES);
	for (int i = 0; i < COPIES; i++)
		CHECK(check_pattern(back + i * n, n, 1000 + i));
	free(back);
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, d, n * COPIES);
	dfree(ctx, busy, big);
	dfree(ctx, busy2, big);
}

TEST(async_h2d_one_buffer_rewritten_between_copies)
{
	enum { COPIES = 32 };
	const size_t n = 70000;
	uint8_t *d = dalloc(ctx, n * COPIES), *h = xmalloc(n), *back;
	accel_stream_t s = new_stream(ctx);

	for (int i = 0; i < COPIES; i++) {
		fill_pattern(h, n, 2000 + i);
		OK(accel_async_memory_copy_h2d(ctx->dev, s, d + i * n, h, n));
	}
	memset(h, 0, n);
	OK(accel_stream_synchronize(ctx->dev, s));
	back = read_back(ctx, d, n * COPIES);
	for (int i = 0; i < COPIES; i++)
		CHECK(check_pattern(back + i * n, n, 2000 + i));
	free(back);
	free(h);
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, d, n * COPIES);
}

TEST(async_pinned_both_ways)
{
	const size_t n = 1 << 20;
	uint8_t *p = NULL, *q = NULL, *d = dalloc(ctx, n);
	accel_stream_t s = new_stream(ctx);

	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, (void **)&p, n));
	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, (void **)&q, n));
	fill_pattern(p, n, 41);
	memset(q, 0, n);
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, p, n));
	OK(accel_async_memory_copy_d2h(ctx->dev, s, q + 1, d + 1, n - 1));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(!memcmp(q + 1, p + 1, n - 1));
	CHECK(q[0] == 0);
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_host_memory_deallocate(ctx->dev, p, n));
	OK(accel_host_memory_deallocate(ctx->dev, q, n));
	dfree(ctx, d, n);
}

/* Synchronous calls come after the streams' earlier work. */
TEST(sync_copy_sees_earlier_async_work)
{
	const size_t n = 4 << 20;
	uint8_t *a = dalloc(ctx, n), *b = dalloc(ctx, n), *h = xmalloc(n), *back;
	accel_stream_t s = new_stream(ctx);

	fill_pattern(h, n, 51);
	REQUIRE_OK(accel_memory_copy_h2d(ctx->dev, a, h, n));
	OK(accel_async_memory_copy_d2d(ctx->dev, s, b, a, n));
	back = read_back(ctx, b, n);	/* no stream sync */
	CHECK(check_pattern(back, n, 51));
	free(back);
	/* and freeing memory in use by queued work waits for it */
	OK(accel_async_memory_copy_d2d(ctx->dev, s, b, a, n));
	dfree(ctx, a, n);
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, b, n);
	free(h);
}

TEST(async_bad_arguments)
{
	uint8_t *d = dalloc(ctx, 4096), h[16];
	accel_stream_t s = new_stream(ctx), gone = new_stream(ctx);

	OK(accel_stream_destroy(ctx->dev, gone));
	FAILS(accel_async_memory_copy_h2d(ctx->dev, NULL, d, h, 16));
	FAILS(accel_async_memory_copy_h2d(ctx->dev, gone, d, h, 16));
	FAILS(accel_async_memory_copy_h2d(ctx->dev, (accel_stream_t)h, d, h, 16));
	FAILS(accel_async_memory_copy_h2d(ctx->dev, s, d + 4090, h, 16));
	FAILS(accel_async_memory_copy_d2h(ctx->dev, s, d, d, 16));
	FAILS(accel_async_memory_copy_d2d(ctx->dev, s, h, d, 16));
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, 0));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, d, 4096);
}

TEST_PEER(async_stream_of_another_device)
{
	uint8_t *d = dalloc(ctx, 4096), h[16] = { 0 };
	accel_stream_t ps = NULL;

	REQUIRE_OK(accel_stream_create(ctx->peer, &ps));
	FAILS(accel_async_memory_copy_h2d(ctx->dev, ps, d, h, 16));
	CHECK(strstr(accel_get_last_error(), "not a live stream") != NULL);
	OK(accel_stream_destroy(ctx->peer, ps));
	dfree(ctx, d, 4096);
}

/* ------------------------------------------------------------------ */
/* A large pageable async copy is not starved by a busy stream */

#define STARVE_LIMIT_S 20	/* the producer gives up after this long */

struct producer {
	struct suite_ctx *ctx;
	accel_stream_t s;
	uint8_t *big;
	atomic_int stop;
	atomic_int gave_up;
};

/* Keep @p->s busy (never idle) until told to stop, or for a while. */
static void *keep_busy(void *arg)
{
	struct producer *p = arg;
	double t0 = now_s();
	accel_event_t e;

	REQUIRE_OK(accel_event_create(p->ctx->dev, &e));
	while (!atomic_load(&p->stop)) {
		if (now_s() - t0 > STARVE_LIMIT_S) {
			atomic_store(&p->gave_up, 1);
			break;
		}
		/* the second half keeps it busy while this thread sleeps */
		busy_chain(p->ctx->dev, p->s, p->big, 16);
		REQUIRE_OK(accel_event_record(p->ctx->dev, p->s, e));
		busy_chain(p->ctx->dev, p->s, p->big, 16);
		REQUIRE_OK(accel_event_synchronize(p->ctx->dev, e));
	}
	REQUIRE_OK(accel_event_destroy(p->ctx->dev, e));
	return NULL;
}

TEST(async_big_pageable_copy_not_starved)
{
	const size_t n = 80u << 20;	/* more than any staging buffer */
	struct producer p = { .ctx = ctx };
	uint8_t *h = xmalloc(n), *d = dalloc(ctx, n), *back;
	pthread_t t;

	p.big = dalloc(ctx, 2 * BUSY_HALF);
	REQUIRE_OK(accel_stream_create(ctx->dev, &p.s));
	fill_pattern(h, n, 33);
	REQUIRE(!pthread_create(&t, NULL, keep_busy, &p));
	while (!stream_busy(ctx->dev, p.s))
		usleep(1000);
	OK(accel_async_memory_copy_h2d(ctx->dev, p.s, d, h, n));
	memset(h, 0, n);	/* the source was captured: ours again */
	atomic_store(&p.stop, 1);
	pthread_join(t, NULL);
	CHECK(!atomic_load(&p.gave_up));
	OK(accel_stream_synchronize(ctx->dev, p.s));
	back = read_back(ctx, d, n);
	CHECK(check_pattern(back, n, 33));
	free(back);
	free(h);
	OK(accel_stream_destroy(ctx->dev, p.s));
	dfree(ctx, p.big, 2 * BUSY_HALF);
	dfree(ctx, d, n);
}

/*
 * Work on one stream runs in submission order (accel.h), also when the
 * library runs a copy at once on the caller's thread because the stream
 * was idle: a d2h queued on the same stream by another thread while that
 * h2d is under way sees the destination wholly before or wholly after it,
 * never a mix of pages.
 */
struct one_stream_pair {
	struct suite_ctx *ctx;
	accel_stream_t s;
	uint8_t *d, *h;
	size_t n;
	atomic_int round;	/* 2k - 1: fill round k; 2k: copy it */
};

static void *h2d_rounds(void *arg)
{
	struct one_stream_pair *p = arg;

	for (int k = 1; k <= 20; k++) {
		memset(p->h, k, p->n);
		while (atomic_load(&p->round) != 2 * k - 1)
			;
		atomic_store(&p->round, 2 * k);
		OK(accel_async_memory_copy_h2d(p->ctx->dev, p->s, p->d, p->h,
					       p->n));
		while (atomic_load(&p->round) == 2 * k)
			;
	}
	return NULL;
}

/* pages of @back holding @now, and holding @before */
static void count_pages(const uint8_t *back, size_t n, int now, int before,
			size_t *fresh, size_t *old)
{
	*fresh = *old = 0;
	for (size_t i = 0; i < n; i += 4096) {
		*fresh += back[i] == now;
		*old += back[i] == before;
	}
}

TEST(a_copy_run_at_once_on_an_idle_stream_keeps_the_streams_order)
{
	struct one_stream_pair p = { .ctx = ctx, .n = 32u << 20 };
	uint8_t *back = xmalloc(p.n);
	int torn = 0;
	pthread_t t;

	p.d = dalloc(ctx, p.n);
	p.h = xmalloc(p.n);
	REQUIRE_OK(accel_stream_create(ctx->dev, &p.s));
	OK(accel_device_memory_set(ctx->dev, p.d, 0, p.n));
	REQUIRE(!pthread_create(&t, NULL, h2d_rounds, &p));
	for (int k = 1; k <= 20; k++) {
		size_t fresh, old;

		atomic_store(&p.round, 2 * k - 1);
		while (atomic_load(&p.round) != 2 * k)
			;
		usleep(500);	/* the h2d under way */
		OK(accel_async_memory_copy_d2h(ctx->dev, p.s, back, p.d, p.n));
		OK(accel_stream_synchronize(ctx->dev, p.s));
		count_pages(back, p.n, k, k - 1, &fresh, &old);
		torn += fresh && old;
		atomic_store(&p.round, 2 * k + 1);
	}
	pthread_join(t, NULL);
	CHECK(torn == 0);
	OK(accel_stream_destroy(ctx->dev, p.s));
	dfree(ctx, p.d, p.n);
	free(p.h);
	free(back);
}

/*
 * On a cpu device an async copy from pageable memory is staged (its source
 * copied, so the caller may reuse it at once) only while the stream's
 * staged copies stay within 256 MiB (docs/libaccel.md); past that the call
 * waits for its own copy. Threads queueing at once behind a busy stream
 * must not all pass that bound: at most 256 MiB of their 64 MiB copies
 * return while the work queued before them is still running. A try whose chain ended before
 * the bound was reached runs again with a longer one.
 */
enum { STAGERS = 6 };
#define STAGE_COPY (64u << 20)
#define STAGE_LIMIT (256u << 20)

struct stager {
	struct suite_ctx *ctx;
	accel_stream_t s;
	accel_event_t chain_done;
	uint8_t *d, *h;
	atomic_int *returned_busy;
	pthread_t thread;
};

static void *stage_one(void *arg)
{
	struct stager *g = arg;

	OK(accel_async_memory_copy_h2d(g->ctx->dev, g->s, g->d, g->h,
				       STAGE_COPY));
	if (accel_event_query(g->ctx->dev, g->chain_done) == ACCEL_WARNING)
		atomic_fetch_add(g->returned_busy, 1);
	return NULL;
}

/*
 * how many of STAGERS threads' copies returned while the chain before them
 * on @s was still running (a copy not staged waits for itself, so after it)
 */
static int staged_behind(struct suite_ctx *ctx, accel_stream_t s,
			 uint8_t *busy, int copies, uint8_t *d, uint8_t *h)
{
	atomic_int returned_busy = 0;
	struct stager g[STAGERS];
	accel_event_t chain_done;

	REQUIRE_OK(accel_event_create(ctx->dev, &chain_done));
	busy_chain(ctx->dev, s, busy, copies);
	OK(accel_event_record(ctx->dev, s, chain_done));
	for (int i = 0; i < STAGERS; i++) {
		g[i] = (struct stager){ ctx, s, chain_done,
					d + (size_t)i * STAGE_COPY,
					h + (size_t)i * STAGE_COPY,
					&returned_busy };
		REQUIRE(!pthread_create(&g[i].thread, NULL, stage_one, &g[i]));
	}
	for (int i = 0; i < STAGERS; i++)
		pthread_join(g[i].thread, NULL);
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_event_destroy(ctx->dev, chain_done));
	return atomic_load(&returned_busy);
}

TEST(pageable_copies_staged_at_once_stay_within_the_streams_bound)
{
	const size_t n = (size_t)STAGERS * STAGE_COPY;
	int copies = BUSY_START, staged;
	uint8_t *busy, *d, *h;
	accel_stream_t s;

	if (!is_cpu(ctx))
		suite_skip("only a cpu device stages pageable sources");
	busy = dalloc(ctx, 2 * BUSY_HALF);
	d = dalloc(ctx, n);
	h = xmalloc(n);
	memset(h, 1, n);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	while ((staged = staged_behind(ctx, s, busy, copies, d, h)) <
	       (int)(STAGE_LIMIT / STAGE_COPY))
		try_longer(&copies);
	CHECK(staged <= (int)(STAGE_LIMIT / STAGE_COPY));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, busy, 2 * BUSY_HALF);
	dfree(ctx, d, n);
	free(h);
}
