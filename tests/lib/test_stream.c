// SPDX-License-Identifier: MIT
/* Streams: create, query, synchronize, destroy. */
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
