// SPDX-License-Identifier: MIT
/* Streams: create, query, synchronize, destroy. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"

TEST(stream_lifecycle)
{
	accel_stream_t s[16];

	for (int i = 0; i < 16; i++) {
		REQUIRE_OK(accel_stream_create(ctx->dev, &s[i]));
		CHECK(accel_stream_query(ctx->dev, s[i]) == ACCEL_SUCCESS);
		OK(accel_stream_synchronize(ctx->dev, s[i]));
	}
	for (int i = 0; i < 16; i++)
		OK(accel_stream_destroy(ctx->dev, s[i]));
	FAILS(accel_stream_destroy(ctx->dev, s[0]));
	FAILS(accel_stream_query(ctx->dev, s[3]));
	FAILS(accel_stream_synchronize(ctx->dev, NULL));
	FAILS(accel_stream_create(ctx->dev, NULL));
}

TEST(query_reports_pending_then_done)
{
	const size_t n = 8 << 20;
	uint8_t *a = dalloc(ctx, n), *b = dalloc(ctx, n);
	accel_stream_t s;
	accel_status_t st;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (int i = 0; i < 8; i++)
		OK(accel_async_memory_copy_d2d(ctx->dev, s, b, a, n));
	st = accel_stream_query(ctx->dev, s);
	CHECK(st == ACCEL_SUCCESS || st == ACCEL_WARNING);
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(accel_stream_query(ctx->dev, s) == ACCEL_SUCCESS);
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, a, n);
	dfree(ctx, b, n);
}

/* Destroying a stream finishes its work first. */
TEST(destroy_completes_work)
{
	const size_t n = 2 << 20;
	uint8_t *d = dalloc(ctx, n), *h = xmalloc(n), *out = xmalloc(n);
	accel_stream_t s;

	fill_pattern(h, n, 61);
	memset(out, 0, n);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	OK(accel_async_memory_copy_d2h(ctx->dev, s, out, d, n));
	OK(accel_stream_destroy(ctx->dev, s));
	CHECK(check_pattern(out, n, 61));
	dfree(ctx, d, n);
	free(h);
	free(out);
}

TEST(device_synchronize_waits_for_every_stream)
{
	enum { S = 4 };
	const size_t n = 1 << 20;
	uint8_t *d = dalloc(ctx, n * S), *h = xmalloc(n), *out = xmalloc(n * S);
	accel_stream_t s[S];

	memset(out, 0, n * S);
	for (int i = 0; i < S; i++) {
		REQUIRE_OK(accel_stream_create(ctx->dev, &s[i]));
		fill_pattern(h, n, 70 + i);
		OK(accel_async_memory_copy_h2d(ctx->dev, s[i], d + i * n, h, n));
		OK(accel_async_memory_copy_d2h(ctx->dev, s[i], out + i * n, d + i * n, n));
	}
	OK(accel_device_synchronize(ctx->dev));
	for (int i = 0; i < S; i++) {
		CHECK(check_pattern(out + i * n, n, 70 + i));
		CHECK(accel_stream_query(ctx->dev, s[i]) == ACCEL_SUCCESS);
		OK(accel_stream_destroy(ctx->dev, s[i]));
	}
	dfree(ctx, d, n * S);
	free(h);
	free(out);
}

TEST(async_memset_ordering_with_sync_set)
{
	const size_t n = 1 << 20;
	uint8_t *d = dalloc(ctx, n), *back;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	OK(accel_device_memory_set(ctx->dev, d, 0x11, n));
	OK(accel_async_memory_copy_d2d(ctx->dev, s, d, d + n / 2, n / 2));
	OK(accel_device_memory_set(ctx->dev, d + n / 2, 0x22, n / 2));
	back = read_back(ctx, d, n);
	CHECK(check_bytes(back, n / 2, 0x11));
	CHECK(check_bytes(back + n / 2, n / 2, 0x22));
	free(back);
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, d, n);
}

/*
 * ACCEL_STREAM_DEPTH: behind a slow copy and an event, a thread queues as
 * many small copies as a stream may ever hold; the calls wait for the
 * stream rather than queue without bound, so the event's work is done
 * when the last call returns.
 */
TEST(a_stream_holds_a_bounded_amount_of_work)
{
	const size_t big = 64 << 20;
	uint8_t *a = dalloc(ctx, big), *b = dalloc(ctx, big);
	accel_stream_t s;
	accel_event_t e;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	OK(accel_async_memory_copy_d2d(ctx->dev, s, b, a, big));
	OK(accel_event_record(ctx->dev, s, e));
	for (int i = 0; i < ACCEL_STREAM_DEPTH + ACCEL_STREAM_DEPTH / 4; i++)
		OK(accel_async_memory_copy_d2d(ctx->dev, s, b + i, a + i, 1));
	CHECK(accel_event_query(ctx->dev, e) == ACCEL_SUCCESS);
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_event_destroy(ctx->dev, e));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, a, big);
	dfree(ctx, b, big);
}

/*
 * The same bound with several threads queueing on one stream (accel.h:
 * at any moment ACCEL_STREAM_DEPTH + ACCEL_STREAM_DEPTH / 4, plus one for
 * each thread in a call). The stream waits for an event behind a chain of
 * copies on another stream, so nothing of it completes while the event is
 * pending: every call that returned before a query found the event pending
 * is work the stream held at once. A try in which the threads never filled
 * the stream before the chain ended is inconclusive: a longer chain.
 */
enum { QUEUERS = 8 };

struct queuer {
	struct suite_ctx *ctx;
	accel_stream_t s;
	accel_event_t gate;
	uint8_t *dst, *src;
	atomic_int *returned, *held;
	pthread_t thread;
};

static void *queue_small_copies(void *arg)
{
	struct queuer *q = arg;

	for (int i = 0; i < ACCEL_STREAM_DEPTH / 2; i++) {
		int c, was;

		OK(accel_async_memory_copy_d2d(q->ctx->dev, q->s, q->dst + i,
					       q->src + i, 1));
		c = atomic_fetch_add(q->returned, 1) + 1;
		if (accel_event_query(q->ctx->dev, q->gate) != ACCEL_WARNING)
			continue;
		was = atomic_load(q->held);
		while (c > was && !atomic_compare_exchange_weak(q->held, &was, c))
			;
	}
	return NULL;
}

/* the most operations that @threads queued on @s at once behind @copies */
static int held_behind_gate(struct suite_ctx *ctx, accel_stream_t s,
			    uint8_t *busy, int copies, uint8_t *dst,
			    uint8_t *src)
{
	atomic_int returned = 0, held = 0;
	struct queuer q[QUEUERS];
	accel_stream_t chain;
	accel_event_t gate;

	REQUIRE_OK(accel_stream_create(ctx->dev, &chain));
	REQUIRE_OK(accel_event_create(ctx->dev, &gate));
	busy_chain(ctx->dev, chain, busy, copies);
	OK(accel_event_record(ctx->dev, chain, gate));
	OK(accel_stream_wait_event(ctx->dev, s, gate));
	for (int t = 0; t < QUEUERS; t++) {
		q[t] = (struct queuer){ ctx, s, gate,
			dst + t * ACCEL_STREAM_DEPTH, src, &returned, &held };
		REQUIRE(!pthread_create(&q[t].thread, NULL, queue_small_copies,
					&q[t]));
	}
	for (int t = 0; t < QUEUERS; t++)
		pthread_join(q[t].thread, NULL);
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_synchronize(ctx->dev, chain));
	OK(accel_event_destroy(ctx->dev, gate));
	OK(accel_stream_destroy(ctx->dev, chain));
	return atomic_load(&held);
}

TEST(threads_queueing_on_one_stream_are_bounded_together)
{
	const size_t n = QUEUERS * ACCEL_STREAM_DEPTH;
	uint8_t *busy, *dst, *src;
	int copies = BUSY_START, held;
	accel_stream_t s;

	if (!strncmp(ctx->name, "accel", 5))
		suite_skip("simaccel.ko's 256 jobs per queue bound the stream first");
	busy = dalloc(ctx, 2 * BUSY_HALF);
	dst = dalloc(ctx, n);
	src = dalloc(ctx, ACCEL_STREAM_DEPTH);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	while ((held = held_behind_gate(ctx, s, busy, copies, dst, src)) <
	       ACCEL_STREAM_DEPTH)
		try_longer(&copies);
	CHECK(held <= ACCEL_STREAM_DEPTH + ACCEL_STREAM_DEPTH / 4 + QUEUERS);
	printf("#   %d operations held at once by %d threads\n", held, QUEUERS);
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, busy, 2 * BUSY_HALF);
	dfree(ctx, dst, n);
	dfree(ctx, src, ACCEL_STREAM_DEPTH);
}

/* ------------------------------------------------------------------ */
/*
 * A stream being destroyed is still one of the device's streams: while the
 * destroy waits for its queued work, a synchronous call,
 * accel_device_synchronize() and a free made meanwhile by another thread
 * wait for that work as for any stream's (accel.h: "Synchronous functions
 * first wait for the work already submitted to the device's streams";
 * memory is reused only once the work submitted before the free, on every
 * stream, has completed). A try whose work was over before the checks is
 * inconclusive: the chain doubles and the try runs again.
 */

/* whether @e's work is still pending */
static bool pending(accel_device_t dev, accel_event_t e)
{
	accel_status_t st = accel_event_query(dev, e);

	REQUIRE(st == ACCEL_SUCCESS || st == ACCEL_WARNING);
	return st == ACCEL_WARNING;
}

struct doomed {
	struct suite_ctx *ctx;
	accel_stream_t s;
	pthread_t thread;
};

static void *destroy_stream(void *arg)
{
	struct doomed *d = arg;

	OK(accel_stream_destroy(d->ctx->dev, d->s));
	return NULL;
}

/*
 * A new stream with a chain of @copies, then a copy of @n bytes from @src
 * into @dst, then @e recorded: @e is pending while that copy may be.
 */
static void doomed_queue(struct doomed *d, uint8_t *big, int copies,
			 void *dst, const void *src, size_t n, accel_event_t e)
{
	accel_device_t dev = d->ctx->dev;

	REQUIRE_OK(accel_stream_create(dev, &d->s));
	busy_chain(dev, d->s, big, copies);
	REQUIRE_OK(accel_async_memory_copy_d2d(dev, d->s, dst, src, n));
	REQUIRE_OK(accel_event_record(dev, d->s, e));
}

/* Destroy the stream on a thread; return once its handle is refused. */
static void doomed_destroy(struct doomed *d)
{
	REQUIRE(!pthread_create(&d->thread, NULL, destroy_stream, d));
	while (accel_stream_query(d->ctx->dev, d->s) != ACCEL_FAILED)
		usleep(1000);
	REQUIRE(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_HANDLE);
	/*
	 * The destroy is past its first steps (a library that took the
	 * stream off the device's list there has done so): this helps the
	 * checks see such a bug, no verdict depends on it.
	 */
	usleep(20000);
}

/*
 * A synchronous copy of memory that the stream being destroyed still has
 * a copy queued into must read that copy's bytes.
 */
TEST(sync_copy_waits_for_stream_being_destroyed)
{
	const size_t n = 1 << 20;
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	uint8_t *src = dalloc(ctx, n), *dst = dalloc(ctx, n);
	uint8_t *h = xmalloc(n);
	int copies = BUSY_START;
	accel_event_t e;

	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	REQUIRE_OK(accel_device_memory_set(ctx->dev, src, 0xAB, n));
	for (;;) {
		struct doomed d = { .ctx = ctx };
		bool was_pending;

		REQUIRE_OK(accel_device_memory_set(ctx->dev, dst, 0, n));
		doomed_queue(&d, big, copies, dst, src, n, e);
		doomed_destroy(&d);
		was_pending = pending(ctx->dev, e);
		OK(accel_memory_copy_d2h(ctx->dev, h, dst, n));
		pthread_join(d.thread, NULL);
		if (was_pending) {
			CHECK(check_bytes(h, n, 0xAB));
			break;
		}
		try_longer(&copies);
	}
	OK(accel_event_destroy(ctx->dev, e));
	free(h);
	dfree(ctx, dst, n);
	dfree(ctx, src, n);
	dfree(ctx, big, 2 * BUSY_HALF);
}

/* accel_device_synchronize() waits for the work of that stream too. */
TEST(device_sync_waits_for_stream_being_destroyed)
{
	const size_t n = 1 << 20;
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	uint8_t *src = dalloc(ctx, n), *dst = dalloc(ctx, n);
	int copies = BUSY_START;
	accel_event_t e;

	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	for (;;) {
		struct doomed d = { .ctx = ctx };
		bool was_pending;

		doomed_queue(&d, big, copies, dst, src, n, e);
		doomed_destroy(&d);
		was_pending = pending(ctx->dev, e);
		OK(accel_device_synchronize(ctx->dev));
		if (was_pending)
			CHECK(!pending(ctx->dev, e));
		pthread_join(d.thread, NULL);
		if (was_pending)
			break;
		try_longer(&copies);
	}
	OK(accel_event_destroy(ctx->dev, e));
	dfree(ctx, dst, n);
	dfree(ctx, src, n);
	dfree(ctx, big, 2 * BUSY_HALF);
}

/*
 * Memory freed while the stream being destroyed still has a copy queued
 * into it is not given back (on the cpu backend it would be unmapped under
 * the copy) nor handed out again until that copy is done.
 */
TEST(free_waits_for_stream_being_destroyed)
{
	const size_t n = 4u << 20;
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	uint8_t *src = dalloc(ctx, n);
	int copies = BUSY_START;
	accel_event_t e;

	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	REQUIRE_OK(accel_device_memory_set(ctx->dev, src, 0xAB, n));
	for (;;) {
		struct doomed d = { .ctx = ctx };
		uint8_t *dst = dalloc(ctx, n), *again, *back;
		size_t before, after;
		bool was_pending, intact;

		doomed_queue(&d, big, copies, dst, src, n, e);
		doomed_destroy(&d);
		before = free_memory(ctx);
		OK(accel_device_memory_deallocate(ctx->dev, dst, n));
		after = free_memory(ctx);
		was_pending = pending(ctx->dev, e);
		again = dalloc(ctx, n);
		OK(accel_device_memory_set(ctx->dev, again, 7, n));
		pthread_join(d.thread, NULL);
		back = read_back(ctx, again, n);
		intact = check_bytes(back, n, 7);	/* not the copy's */
		free(back);
		dfree(ctx, again, n);
		if (was_pending || !intact) {
			CHECK(intact);
			CHECK(!was_pending || after == before);	/* not given back yet */
			break;
		}
		try_longer(&copies);
	}
	OK(accel_event_destroy(ctx->dev, e));
	dfree(ctx, src, n);
	dfree(ctx, big, 2 * BUSY_HALF);
}
