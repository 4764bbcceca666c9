// SPDX-License-Identifier: MIT
/*
 * Promises a third review of issue 17 found broken: bounds of pool blocks
 * against pointers into their rounding, stream arguments of calls that have
 * no use for them, free-memory figures once the work behind a free is over
 * (the pools' large blocks too), device ids of registrations, and shapes
 * whose empty axis hid an overflow of the others; and what a fourth found
 * unsaid or broken: reshape to an array's own shape, outputs of failed
 * calls.
 */
#include <accel/memory.h>

#include "suite.h"

/* @n rounded down to whole MiB */
static size_t mib_down(size_t n)
{
	return n & ~(((size_t)1 << 20) - 1);
}

/* ------------------------------------------------------------------ */
/* Pool blocks: the bytes asked for, not the pool's rounding of them */

TEST(review3_range_in_a_blocks_rounding_refused)
{
	static const size_t offs[] = { 100, 101, 150, 200, 255 };
	struct accel_pointer_attributes attr;
	uint8_t src[1024], out[256];
	accel_pool_t pool;
	accel_memory_t m;
	uint8_t *a, *b;

	memset(src, 0xEE, sizeof(src));
	REQUIRE_OK(accel_pool_create(ctx->dev, &pool));
	REQUIRE_OK(accel_pool_allocate(pool, NULL, (void **)&a, 100));
	REQUIRE_OK(accel_pool_allocate(pool, NULL, (void **)&b, 256));
	REQUIRE_OK(accel_device_memory_set(ctx->dev, b, 0x11, 256));
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		uint8_t *p = a + offs[i];

		REQUIRE_OK(accel_pointer_get_attributes(p, &attr));
		if (attr.block_live && attr.block_base == p)
			continue;	/* another block begins there */
		CHECK(!attr.block_live);
		FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
			   accel_memory_copy_h2d(ctx->dev, p, src, 1));
		FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
			   accel_memory_copy_h2d(ctx->dev, p, src, 300));
		FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
			   accel_device_memory_set(ctx->dev, p, 0x22, 800));
		FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
			   accel_memory_wrap(ctx->dev, p, 16,
					     accel_dtype(ACCEL_UINT8), &m));
	}
	/* the end of the block, and an empty range there, still are the caller's */
	OK(accel_memory_copy_h2d(ctx->dev, a + 99, src, 1));
	OK(accel_memory_copy_h2d(ctx->dev, a + 100, src, 0));
	REQUIRE_OK(accel_memory_copy_d2h(ctx->dev, out, b, 256));
	CHECK(check_bytes(out, 256, 0x11));
	OK(accel_pool_deallocate(pool, NULL, a, 100));
	OK(accel_pool_deallocate(pool, NULL, b, 256));
	OK(accel_pool_destroy(pool));
}

/* ------------------------------------------------------------------ */
/* A stream argument is checked even where the call needs none */

/* Each way a stream can be wrong for ctx->dev: destroyed, an event, another device's. */
static void bad_streams(struct suite_ctx *ctx, accel_stream_t bad[3], int *n,
			accel_event_t *ev)
{
	accel_stream_t dead;

	REQUIRE_OK(accel_stream_create(ctx->dev, &dead));
	REQUIRE_OK(accel_stream_destroy(ctx->dev, dead));
	REQUIRE_OK(accel_event_create(ctx->dev, ev));
	bad[0] = dead;
	bad[1] = (accel_stream_t)*ev;
	*n = 2;
	if (ctx->peer)
		REQUIRE_OK(accel_stream_create(ctx->peer, &bad[(*n)++]));
}

TEST(review3_unneeded_streams_still_checked)
{
	size_t shape[1] = { 4 }, empty[1] = { 0 };
	accel_array_t d, dz, hz, out;
	double buf[4] = { 0 };
	accel_stream_t bad[3];
	accel_memory_t m;
	accel_event_t ev;
	int n;

	bad_streams(ctx, bad, &n, &ev);
	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, NULL, NULL, 'C', NULL,
				      &d));
	REQUIRE_OK(accel_device_array(ctx->dev, 1, empty, NULL, NULL, 'C', NULL,
				      &dz));
	REQUIRE_OK(accel_host_array(NULL, 1, empty, NULL, NULL, 'C', 0, &hz));
	REQUIRE_OK(accel_memory_create(ctx->dev, 4, accel_dtype(ACCEL_FLOAT64),
				       NULL, 0, &m));
	for (int i = 0; i < n; i++) {
		accel_stream_t s = bad[i];

		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_mapped_array(ctx->dev, 1, shape, NULL, NULL,
					      'C', s, &out));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_mapped_array_flags(ctx->dev, 1, shape, NULL,
						    NULL, 'C', s, 0, &out));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_device_array(ctx->dev, 1, empty, NULL, NULL,
					      'C', s, &out));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_to_device_ex(ctx->dev, d, s, 1, &out));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_memory_copy_from_async(m, s, buf, 0, 0));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_memory_copy_to_async(m, s, buf, 0, 0));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_memory_copy_async(m, m, s, 0, 0, 0));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_array_copy_to_device(dz, hz, s));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_array_copy_to_host(dz, hz, s, NULL));
	}
	OK(accel_array_release(d));
	OK(accel_array_release(dz));
	OK(accel_array_release(hz));
	OK(accel_memory_release(m));
	OK(accel_event_destroy(ctx->dev, ev));
}

/* ------------------------------------------------------------------ */
/* Free memory once the work behind a free is over */

TEST(review3_max_alloc_size_after_a_deferred_free)
{
	uint8_t *buf = dalloc(ctx, 2 * BUSY_HALF);
	size_t total, free, before, max_now, max_after_stats;
	int copies = BUSY_START;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_device_max_alloc_size(ctx->dev, &before));
	for (;;) {
		size_t big = mib_down(before / 4);
		uint8_t *p = dalloc(ctx, big);
		bool pending;

		busy_chain(ctx->dev, s, buf, copies);
		OK(accel_device_memory_deallocate(ctx->dev, p, big));
		pending = stream_busy(ctx->dev, s);
		OK(accel_device_synchronize(ctx->dev));
		if (pending)
			break;
		try_longer(&copies);
	}
	/* the free's work is over: its memory is free to every figure */
	OK(accel_device_max_alloc_size(ctx->dev, &max_now));
	OK(accel_device_memory_stats(ctx->dev, &total, &free));
	OK(accel_device_max_alloc_size(ctx->dev, &max_after_stats));
	CHECK(max_now == max_after_stats);
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, buf, 2 * BUSY_HALF);
}

/* A block above the pools' largest chunk: given back to the device. */
static size_t large_block(struct suite_ctx *ctx, size_t room)
{
	size_t max_chunk;

	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	if (room / 3 <= max_chunk)
		suite_skip("too little free memory for a block above the largest chunk");
	return mib_down(room / 3);
}

TEST(review3_large_pool_block_back_once_its_work_is_over)
{
	uint8_t *buf = dalloc(ctx, 2 * BUSY_HALF);
	int copies = BUSY_START;
	size_t before, room;
	accel_pool_t pool;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_pool_create(ctx->dev, &pool));
	REQUIRE_OK(accel_device_max_alloc_size(ctx->dev, &room));
	for (;;) {
		size_t big = large_block(ctx, room);
		bool pending;
		void *p;

		before = free_memory(ctx);
		REQUIRE_OK(accel_pool_allocate(pool, NULL, &p, big));
		busy_chain(ctx->dev, s, buf, copies);
		OK(accel_pool_deallocate(pool, NULL, p, big));
		pending = stream_busy(ctx->dev, s);
		OK(accel_device_synchronize(ctx->dev));
		if (pending)
			break;
		try_longer(&copies);
	}
	CHECK_FREE_IS(ctx, before);
	OK(accel_pool_destroy(pool));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, buf, 2 * BUSY_HALF);
}

/*
 * The same through a memory handle (a block of the device's pool), and no
 * synchronization: out of memory, the device allocator waits for the
 * pending free and takes its memory back.
 */
TEST(review3_raw_allocation_takes_back_a_released_large_block)
{
	uint8_t *buf = dalloc(ctx, 2 * BUSY_HALF);
	int copies = BUSY_START;
	size_t room, want;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_device_max_alloc_size(ctx->dev, &room));
	/* fits with the released block's memory only */
	want = mib_down(room / 4 * 3);
	for (;;) {
		size_t big = large_block(ctx, room);
		accel_memory_t m;
		bool pending;
		void *p;

		REQUIRE_OK(accel_memory_create(ctx->dev, big,
					       accel_dtype(ACCEL_UINT8), NULL,
					       0, &m));
		busy_chain(ctx->dev, s, buf, copies);
		OK(accel_memory_release(m));
		pending = stream_busy(ctx->dev, s);
		if (pending) {
			OK(accel_device_memory_allocate(ctx->dev, &p, want));
			OK(accel_device_memory_deallocate(ctx->dev, p, want));
			break;
		}
		OK(accel_device_synchronize(ctx->dev));
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, buf, 2 * BUSY_HALF);
}

/* ------------------------------------------------------------------ */
/* Arguments checked before anything is done */

TEST(review3_register_refuses_a_device_that_does_not_exist)
{
	struct accel_device_id bad[] = { { 99 }, { -5 } };
	size_t empty[1] = { 0 }, four[1] = { 4 };
	struct accel_array_info info;
	accel_array_t h[2];

	REQUIRE_OK(accel_host_array(NULL, 1, empty, NULL, NULL, 'C', 0, &h[0]));
	REQUIRE_OK(accel_host_array(NULL, 1, four, NULL, NULL, 'C', 0, &h[1]));
	for (int i = 0; i < 2; i++) {
		for (int j = 0; j < 2; j++) {
			FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
				   accel_array_register(&bad[j], h[i], j));
			OK(accel_array_get_info(h[i], &info));
			CHECK(info.device == -1 && info.kind == ACCEL_ARRAY_HOST);
		}
		OK(accel_array_release(h[i]));
	}
}

TEST(review3_empty_axis_does_not_hide_an_overflow)
{
	size_t huge[3] = { 0, 2, (size_t)1 << 60 };
	size_t wide[2] = { (size_t)1 << 62, 0 };
	size_t fine[2] = { 0, 5 };
	struct accel_array_info info;
	accel_array_t a;

	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_array(ctx->dev, 3, huge, NULL, NULL, 'C', NULL,
				      &a));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_array(ctx->dev, 2, wide, NULL, NULL, 'F', NULL,
				      &a));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_host_array(NULL, 3, huge, NULL, NULL, 'C', 0, &a));
	REQUIRE_OK(accel_device_array(ctx->dev, 2, fine, NULL, NULL, 'C', NULL,
				      &a));
	OK(accel_array_get_info(a, &info));
	CHECK(info.strides[0] == 40 && info.strides[1] == 8 && !info.size);
	OK(accel_array_release(a));
}

/* ------------------------------------------------------------------ */
/* A map through an interface view waits for the producer's device */

/*
 * memory.h accel_memory_map: the host sees what queued work wrote. A view
 * for the peer of host memory of the device under test, mapped through
 * the view while the device's copy into that memory is queued.
 */
TEST_PEER(review3_map_through_a_view_waits_for_the_producers_device)
{
	enum { N = 1024 };
	uint8_t *buf = dalloc(ctx, 2 * BUSY_HALF);
	size_t shape[1] = { N };
	int copies = BUSY_START;
	uint8_t pattern[N];
	accel_stream_t s;

	fill_pattern(pattern, N, 77);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (;;) {
		struct accel_array_interface ifc;
		accel_memory_t src, vm;
		accel_array_t a, v;
		bool pending;
		void *p;

		REQUIRE_OK(accel_mapped_array_flags(ctx->dev, 1, shape,
						    accel_dtype(ACCEL_UINT8),
						    NULL, 'C', NULL,
						    ACCEL_ARRAY_PORTABLE, &a));
		REQUIRE_OK(accel_array_get_interface(a, &ifc));
		REQUIRE_OK(accel_array_from_interface(ctx->peer, &ifc, 0, &v));
		REQUIRE_OK(accel_array_as_memory(v, &vm));
		REQUIRE_OK(accel_memory_create(ctx->dev, N,
					       accel_dtype(ACCEL_UINT8),
					       pattern, 0, &src));
		busy_chain(ctx->dev, s, buf, copies);
		OK(accel_memory_copy_async(vm, src, s, ACCEL_ALL, 0, 0));
		pending = stream_busy(ctx->dev, s);
		REQUIRE_OK(accel_memory_map(vm, ACCEL_MAP_READ, &p));
		if (pending)
			CHECK(!memcmp(p, pattern, N));
		OK(accel_memory_unmap(vm));
		OK(accel_stream_synchronize(ctx->dev, s));
		OK(accel_memory_release(vm));
		OK(accel_memory_release(src));
		OK(accel_array_release(v));
		OK(accel_array_release(a));
		if (pending)
			break;
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, buf, 2 * BUSY_HALF);
}

/* ------------------------------------------------------------------ */
/* The host side of a copy in pinned or unified memory: its bounds too */

TEST(review3_host_range_past_pinned_or_unified_memory_refused)
{
	uint8_t *d = dalloc(ctx, 4096), *pin, *uni;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, (void **)&pin, 4096));
	REQUIRE_OK(accel_unified_memory_allocate(ctx->dev, (void **)&uni,
						 4096));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy_d2h(ctx->dev, pin + 4000, d, 200));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy_h2d(ctx->dev, d, pin + 4000, 200));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_async_memory_copy_d2h(ctx->dev, s, pin + 1, d, 4096));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_async_memory_copy_h2d(ctx->dev, s, d, uni + 4000,
					       200));
	/* up to the end is the caller's */
	OK(accel_memory_copy_d2h(ctx->dev, pin + 3896, d, 200));
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, uni + 3896, 200));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_host_memory_deallocate(ctx->dev, pin, 4096));
	OK(accel_unified_memory_deallocate(ctx->dev, uni, 4096));
	dfree(ctx, d, 4096);
}

/* ------------------------------------------------------------------ */
/* Review 4: reshape's contract, and no stale handle after a failure */

/* A gapped array reshaped to its own shape is a view with its strides. */
TEST(review4_reshape_to_the_same_shape_keeps_the_strides)
{
	size_t shape[1] = { 4 }, two[2] = { 2, 2 };
	ptrdiff_t gaps[1] = { 16 };
	struct accel_array_info info;
	accel_array_t a, v;

	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, NULL, gaps, 'C', NULL,
				      &a));
	REQUIRE_OK(accel_array_reshape(a, 1, shape, 'C', &v));
	OK(accel_array_get_info(v, &info));
	CHECK(info.ndim == 1 && info.shape[0] == 4 && info.strides[0] == 16);
	OK(accel_array_release(v));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_array_reshape(a, 2, two, 'C', &v));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_array_ravel(a, 'C', &v));
	OK(accel_array_release(a));
}

/* accel.h, Errors: a failed maker leaves NULL, not a stale value. */
TEST(review4_failed_makers_leave_null)
{
	struct accel_device_id bad = { 99 };
	accel_pool_t pool = (accel_pool_t)0x1234;
	accel_stream_t s = (accel_stream_t)0x1234;
	accel_event_t e = (accel_event_t)0x1234;
	void *p = (void *)0x1234;

	FAILS(accel_stream_create(&bad, &s));
	CHECK(!s);
	FAILS(accel_event_create(&bad, &e));
	CHECK(!e);
	FAILS(accel_pool_create(&bad, &pool));
	CHECK(!pool);
	pool = (accel_pool_t)0x1234;
	FAILS(accel_device_pool(&bad, &pool));
	CHECK(!pool);
	FAILS(accel_device_memory_allocate(&bad, &p, 16));
	CHECK(!p);
}
