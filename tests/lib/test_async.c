// SPDX-License-Identifier: MIT
/* async_memory_copy_h2d / d2h / d2d: ordering and captured sources. */
#include <pthread.h>
#include <stdatomic.h>
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
