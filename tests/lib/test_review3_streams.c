// SPDX-License-Identifier: MIT
/*
 * Promises a third review found broken:
 *
 * - a stream being destroyed still has work queued while the destroy waits
 *   for it; a synchronous call, accel_device_synchronize() and a free made
 *   meanwhile by another thread must wait for that work as for any stream's
 *   (accel.h: "Synchronous functions first wait for the work already
 *   submitted to the device's streams"; memory is reused only once the work
 *   submitted before the free, on every stream, has completed);
 * - accel_memory_free() under way while another thread releases the same
 *   handle: the free, which started first, succeeds and the release is
 *   refused (docs/libaccel.md: "one succeeds, the other is refused"; a
 *   refused call frees nothing).
 *
 * Work is made observably pending with a chain of large device to device
 * copies, as in test_review_order.c; a try whose work was over before the
 * checks is inconclusive: the chain doubles and the try runs again.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <accel/memory.h>

#include "suite.h"

static bool pending(accel_device_t dev, accel_event_t e)
{
	accel_status_t st = accel_event_query(dev, e);

	REQUIRE(st == ACCEL_SUCCESS || st == ACCEL_WARNING);
	return st == ACCEL_WARNING;
}

/* ------------------------------------------------------------------ */
/* A stream being destroyed is still one of the device's streams */

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
TEST(review3_sync_copy_waits_for_stream_being_destroyed)
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
TEST(review3_device_sync_waits_for_stream_being_destroyed)
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
TEST(review3_free_waits_for_stream_being_destroyed)
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

/* ------------------------------------------------------------------ */
/* A free under way wins over a release of its handle that starts later */

struct freer {
	accel_memory_t mem;
	accel_status_t ret;
	atomic_int started, done;
};

static void *free_memory_handle(void *arg)
{
	struct freer *f = arg;

	atomic_store(&f->started, 1);
	f->ret = accel_memory_free(f->mem);
	atomic_store(&f->done, 1);
	return NULL;
}

/*
 * The handle is a view of registered host memory: its free unregisters the
 * memory, which waits for the device's queued work. A release of the
 * handle made while the free waits must be refused (INVALID_HANDLE), and
 * the free must succeed. If the release came first after all (the freeing
 * thread had not reached the library), the free is refused having freed
 * nothing, and the try runs again.
 */
TEST(review3_free_under_way_wins_over_release)
{
	const size_t n = 1 << 20;
	size_t shape[1] = { n };
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	int copies = BUSY_START;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (;;) {
		struct freer f = { 0 };
		void *data = aligned_alloc(4096, n);
		struct accel_array_info info;
		accel_array_t host;
		accel_status_t rel;
		bool under_way, decided;
		pthread_t t;

		REQUIRE(data);
		REQUIRE_OK(accel_host_array(data, 1, shape,
					    accel_dtype(ACCEL_UINT8), NULL,
					    'C', 0, &host));
		REQUIRE_OK(accel_array_register(ctx->dev, host, 0));
		REQUIRE_OK(accel_array_as_memory(host, &f.mem));
		busy_chain(ctx->dev, s, big, copies);
		REQUIRE(!pthread_create(&t, NULL, free_memory_handle, &f));
		while (!atomic_load(&f.started))
			usleep(1000);
		usleep(30000);		/* the free waits for the device */
		under_way = accel_stream_query(ctx->dev, s) == ACCEL_WARNING &&
			    !atomic_load(&f.done);
		accel_clear_last_error();
		rel = accel_memory_release(f.mem);
		if (rel != ACCEL_SUCCESS)
			CHECK(accel_peek_last_error_code() ==
			      ACCEL_ERROR_INVALID_HANDLE);
		pthread_join(t, NULL);
		OK(accel_stream_synchronize(ctx->dev, s));
		if (f.ret == ACCEL_SUCCESS) {
			/* the free claimed the handle: the release is refused */
			CHECK(rel == ACCEL_FAILED);
			FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
				   accel_array_get_info(host, &info));
			decided = under_way || rel == ACCEL_SUCCESS;
		} else {
			/* the release came first: the refused free freed nothing */
			bool freed = accel_array_get_info(host, &info) != ACCEL_SUCCESS;

			CHECK(rel == ACCEL_SUCCESS && !freed);
			decided = rel != ACCEL_SUCCESS || freed;
		}
		OK(accel_array_release(host));
		free(data);
		if (decided)
			break;
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, big, 2 * BUSY_HALF);
}
