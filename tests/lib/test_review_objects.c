// SPDX-License-Identifier: MIT
/*
 * Contract violations a review found (issue 17): freed large pool blocks,
 * interface views across devices, arrays over freed storage, errors left
 * by successful calls, misaligned strides.
 */
#include <accel/memory.h>

#include "suite.h"

/*
 * "A freed pointer gets ACCEL_FAILED, nothing is written": a block larger than
 * the largest chunk (with ACCEL_POOL=off, any block) freed behind queued
 * work waits for that work out of the pool's books; copies into it must
 * be refused all the same.
 */
TEST(review_freed_large_block_refused)
{
	size_t n = 64 << 20, max_chunk, big;
	struct accel_pointer_attributes at;
	uint8_t *busy = dalloc(ctx, n), buf[4096] = { 0 };
	accel_pool_t pool;
	accel_stream_t s;
	void *blk;
	int tries;

	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	big = max_chunk + 4096;
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_pool_create(ctx->dev, &pool));
	/* the free must find the stream busy: retry, bounded, until it does */
	for (tries = 0; tries < 8; tries++) {
		REQUIRE_OK(accel_pool_allocate(pool, NULL, &blk, big));
		busy_chain_of(ctx->dev, s, busy, 8 << tries, n / 2);
		REQUIRE_OK(accel_pool_deallocate(pool, NULL, blk, big));
		REQUIRE_OK(accel_pointer_get_attributes(blk, &at));
		if (at.pooled)	/* still the device's, waiting for s */
			break;
		OK(accel_stream_synchronize(ctx->dev, s));
	}
	if (tries == 8)
		suite_skip("the stream was never busy at the free");
	CHECK(!at.block_live);
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy_h2d(ctx->dev, blk, buf, sizeof(buf)));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_async_memory_copy_h2d(ctx->dev, s, blk, buf,
					       sizeof(buf)));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_memory_set(ctx->dev, blk, 1, sizeof(buf)));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy_d2h(ctx->dev, buf, blk, sizeof(buf)));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_pool_destroy(pool));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, busy, n);
}

/*
 * "Successful calls leave the message alone": a host-side copy between a
 * pinned array of one device and a mapped array of another, on a stream
 * of the source's device, must not leave the error of a wrong guess at
 * the stream's device.
 */
TEST_PEER(review_host_copy_success_leaves_no_error)
{
	size_t shape[1] = { 256 };
	accel_array_t src, dst;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_pinned_array(ctx->dev, 1, shape, NULL, NULL, 'C', &src));
	REQUIRE_OK(accel_mapped_array(ctx->peer, 1, shape, NULL, NULL, 'C',
				      NULL, &dst));
	accel_clear_last_error();
	OK(accel_array_copy_to_device(dst, src, s));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NONE);
	CHECK(!accel_get_last_error()[0]);
	/* a stream of the destination's device works as well */
	OK(accel_array_release(src));
	REQUIRE_OK(accel_pinned_array(ctx->peer, 1, shape, NULL, NULL, 'C',
				      &src));
	OK(accel_array_release(dst));
	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, shape, NULL, NULL, 'C',
				      NULL, &dst));
	OK(accel_array_copy_to_device(dst, src, s));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NONE);
	CHECK(!accel_get_last_error()[0]);
	OK(accel_array_release(src));
	OK(accel_array_release(dst));
	OK(accel_stream_destroy(ctx->dev, s));
}

/*
 * Misaligned typed views are refused: every stride of an axis with more
 * than one entry is a multiple of the dtype's alignment too, or the
 * entries after the first are misaligned.
 */
TEST(review_misaligned_strides_refused)
{
	accel_dtype_t i32 = accel_dtype(ACCEL_INT32);
	struct accel_array_interface ifc;
	accel_array_t a, v;
	accel_memory_t m;

	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_array(ctx->dev, 1, (size_t[]){ 4 }, i32,
				      (ptrdiff_t[]){ 3 }, 'C', NULL, &a));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_array(ctx->dev, 2, (size_t[]){ 2, 3 }, i32,
				      (ptrdiff_t[]){ 14, 4 }, 'C', NULL, &a));
	REQUIRE_OK(accel_memory_create(ctx->dev, 16, i32, NULL, 0, &m));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_as_array(m, 1, (size_t[]){ 5 },
					 (ptrdiff_t[]){ 5 }, 'C', &a));
	/* aligned strides, and any stride of an axis of one entry, are fine */
	OK(accel_memory_as_array(m, 2, (size_t[]){ 1, 4 },
				 (ptrdiff_t[]){ 3, 8 }, 'C', &a));
	OK(accel_array_release(a));
	REQUIRE_OK(accel_device_array(ctx->dev, 1, (size_t[]){ 4 }, i32,
				      (ptrdiff_t[]){ 8 }, 'C', NULL, &a));
	REQUIRE_OK(accel_array_get_interface(a, &ifc));
	ifc.strides[0] = 6;
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_array_from_interface(ctx->dev, &ifc, 0, &v));
	ifc.strides[0] = 4;
	OK(accel_array_from_interface(ctx->dev, &ifc, 0, &v));
	OK(accel_array_release(v));
	OK(accel_array_release(a));
	OK(accel_memory_release(m));
}

/* The call must fail as a handle on freed storage: INVALID_HANDLE, "freed". */
#define FAILS_FREED(call)						\
	do {								\
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE, call);		\
		CHECK(strstr(accel_get_last_error(), "freed"));		\
	} while (0)

/*
 * memory.h: after accel_memory_free() every other handle on the storage
 * "fails and says so". An array over it must hand out neither the freed
 * pointer nor new views of it; only its release works.
 */
TEST(review_array_over_freed_memory_refused)
{
	size_t shape[2] = { 4, 8 }, flat[1] = { 32 };
	accel_dtype_t f32 = accel_dtype(ACCEL_FLOAT32);
	struct accel_array_interface ifc;
	struct accel_array_info info;
	accel_array_t a, v, other, h;
	accel_memory_t m, m2;
	float host[32] = { 0 };

	REQUIRE_OK(accel_memory_create(ctx->dev, 32, f32, NULL, 0, &m));
	REQUIRE_OK(accel_memory_as_array(m, 2, shape, NULL, 'C', &a));
	REQUIRE_OK(accel_array_get_interface(a, &ifc));	/* while live */
	REQUIRE_OK(accel_device_array(ctx->dev, 2, shape, f32, NULL, 'C', NULL,
				      &other));
	REQUIRE_OK(accel_host_array(host, 2, shape, f32, NULL, 'C', 0, &h));
	REQUIRE_OK(accel_memory_free(m));

	FAILS_FREED(accel_array_get_info(a, &info));
	FAILS_FREED(accel_array_get_interface(a, &ifc));
	CHECK(!accel_array_has_interface(a));
	CHECK(!accel_array_is_c_contiguous(a));
	CHECK(!accel_array_is_f_contiguous(a));
	FAILS_FREED(accel_array_reshape(a, 1, flat, 'C', &v));
	FAILS_FREED(accel_array_ravel(a, 'C', &v));
	FAILS_FREED(accel_to_device_ex(ctx->dev, a, NULL, 0, &v));
	FAILS_FREED(accel_to_device_ex(ctx->dev, a, NULL, 1, &v));
	FAILS_FREED(accel_to_device(ctx->dev, a, NULL, &v));
	FAILS_FREED(accel_device_array_like(ctx->dev, a, NULL, &v));
	FAILS_FREED(accel_pinned_array_like(ctx->dev, a, &v));
	FAILS_FREED(accel_mapped_array_like(ctx->dev, a, NULL, &v));
	FAILS_FREED(accel_array_as_memory(a, &m2));
	FAILS_FREED(accel_array_copy_to_device(a, other, NULL));
	FAILS_FREED(accel_array_copy_to_device(other, a, NULL));
	FAILS_FREED(accel_array_copy_to_host(a, h, NULL, NULL));
	FAILS_FREED(accel_array_copy_to_host(a, NULL, NULL, &v));
	FAILS_FREED(accel_array_register(ctx->dev, a, 0));
	FAILS_FREED(accel_array_unregister(a));
	OK(accel_array_release(a));
	OK(accel_array_release(other));
	OK(accel_array_release(h));
}

/*
 * memory.h accel_array_from_interface: where the data lies in the
 * library's own memory, the view holds that storage and outlives the
 * producer, whatever device the view is made for: here a portable mapped
 * array of one device, viewed for the other.
 */
TEST_PEER(review_interface_view_on_peer_holds_producer)
{
	size_t shape[1] = { 1024 };
	double host[1024], back[1024];
	struct accel_array_interface ifc;
	struct accel_array_info info;
	accel_array_t a, v, h, out;
	accel_memory_t m;

	REQUIRE_OK(accel_mapped_array_flags(ctx->dev, 1, shape, NULL, NULL,
					    'C', NULL, ACCEL_ARRAY_PORTABLE, &a));
	REQUIRE_OK(accel_array_get_interface(a, &ifc));
	REQUIRE_OK(accel_array_from_interface(ctx->peer, &ifc, 0, &v));
	REQUIRE_OK(accel_array_get_info(v, &info));
	CHECK(info.device == ctx->peer->id);
	REQUIRE_OK(accel_array_as_memory(a, &m));
	REQUIRE_OK(accel_array_release(a));	/* the view keeps the storage */
	for (int i = 0; i < 1024; i++)
		host[i] = i + 0.5;
	REQUIRE_OK(accel_host_array(host, 1, shape, NULL, NULL, 'C', 0, &h));
	OK(accel_array_copy_to_device(v, h, NULL));
	REQUIRE_OK(accel_host_array(back, 1, shape, NULL, NULL, 'C', 0, &out));
	OK(accel_array_copy_to_host(v, out, NULL, NULL));
	CHECK(!memcmp(host, back, sizeof(host)));
	/* freed through another handle (which that ends), the view says so */
	OK(accel_memory_free(m));
	FAILS_FREED(accel_array_copy_to_device(v, h, NULL));
	FAILS_FREED(accel_array_get_info(v, &info));
	OK(accel_array_release(v));
	OK(accel_array_release(h));
	OK(accel_array_release(out));
}

/*
 * On a cpu device any host memory is the device's, memory of the other
 * cpu device too; but where it lies in an allocation or storage of the
 * library, the extent is checked against it and a view holds the storage.
 */
TEST_PEER(review_cpu_memory_of_other_device_checked_and_held)
{
	accel_dtype_t f32 = accel_dtype(ACCEL_FLOAT32);
	size_t shape[1] = { 16 };
	struct accel_array_interface ifc, big;
	struct accel_pointer_attributes at;
	accel_array_t a, v;
	accel_memory_t m;

	if (!is_cpu(ctx))
		suite_skip("only a cpu device takes any host memory");
	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, f32, NULL, 'C', NULL,
				      &a));
	REQUIRE_OK(accel_array_get_interface(a, &ifc));
	big = ifc;
	big.shape[0] = 1 << 20;		/* 4 MiB over a 64-byte block */
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_array_from_interface(ctx->peer, &big, 0, &v));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_wrap(ctx->peer, ifc.data, 1 << 20, f32, &m));
	/* within it: fine, and the view holds the block */
	OK(accel_memory_wrap(ctx->peer, ifc.data, 16, f32, &m));
	OK(accel_memory_release(m));
	REQUIRE_OK(accel_array_from_interface(ctx->peer, &ifc, 0, &v));
	REQUIRE_OK(accel_array_release(a));
	REQUIRE_OK(accel_pointer_get_attributes(ifc.data, &at));
	CHECK(at.block_live || !at.pooled);
	CHECK(at.type != ACCEL_POINTER_UNREGISTERED);
	OK(accel_array_release(v));
	/* the last handle gone, the block is free */
	REQUIRE_OK(accel_pointer_get_attributes(ifc.data, &at));
	CHECK(!at.block_live);
}

/*
 * accel.h: successful calls leave the thread's error alone. An allocation
 * that first finds the device full, then succeeds once the memory freed
 * behind queued work is back, must not leave the out-of-memory error of
 * the first try, nor erase an error the caller has not read yet.
 */
TEST(review_alloc_after_reclaim_leaves_error_alone)
{
	size_t n = 16 << 20, total, free_now, big;
	uint8_t *busy = dalloc(ctx, n);
	struct accel_device_id bad = { 99 };
	accel_stream_t s;
	void *p, *q;
	int tries;

	if (!is_cpu(ctx))
		suite_skip("needs a device whose memory the test can fill");
	REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &free_now));
	big = free_now / 4 * 3;
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (tries = 0; tries < 8; tries++) {
		REQUIRE_OK(accel_device_memory_allocate(ctx->dev, &p, big));
		busy_chain_of(ctx->dev, s, busy, 8 << tries, n / 2);
		REQUIRE_OK(accel_device_memory_deallocate(ctx->dev, p, big));
		/* still the device's: the free waits for s */
		REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &free_now));
		if (free_now < big)
			break;
		OK(accel_stream_synchronize(ctx->dev, s));
	}
	if (tries == 8)
		suite_skip("the stream was never busy at the free");
	accel_clear_last_error();
	OK(accel_device_memory_allocate(ctx->dev, &q, big));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NONE);
	CHECK(!accel_get_last_error()[0]);
	OK(accel_device_memory_deallocate(ctx->dev, q, big));
	/* a pending error survives a successful call */
	FAILS(accel_device_memory_allocate(&bad, &p, 16));
	REQUIRE_OK(accel_device_memory_allocate(ctx->dev, &p, big));
	busy_chain_of(ctx->dev, s, busy, 64, n / 2);
	REQUIRE_OK(accel_device_memory_deallocate(ctx->dev, p, big));
	FAILS(accel_device_memory_allocate(&bad, &p, 16));
	OK(accel_device_memory_allocate(ctx->dev, &q, big));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	OK(accel_device_memory_deallocate(ctx->dev, q, big));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, busy, n);
}

/*
 * A pool allocation that grows the pool (or goes to the device for a
 * large block) succeeds and leaves the caller's pending error as it was.
 */
TEST(review_pool_growth_leaves_error_alone)
{
	struct accel_device_id bad = { 99 };
	size_t max_chunk;
	accel_pool_t pool;
	accel_memory_t m;
	void *p, *q;

	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	REQUIRE_OK(accel_pool_create(ctx->dev, &pool));
	FAILS(accel_device_memory_allocate(&bad, &p, 16));
	OK(accel_pool_allocate(pool, NULL, &p, 100));	/* the first chunk */
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	CHECK(strstr(accel_get_last_error(), "99"));
	OK(accel_pool_allocate(pool, NULL, &q, max_chunk + 1));	/* direct */
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	OK(accel_pool_deallocate(pool, NULL, q, max_chunk + 1));
	OK(accel_pool_deallocate(pool, NULL, p, 100));
	FAILS(accel_device_memory_allocate(&bad, &p, 16));
	OK(accel_memory_create(ctx->dev, 16, accel_dtype(ACCEL_UINT8), NULL, 0,
			       &m));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	OK(accel_memory_release(m));
	OK(accel_pool_destroy(pool));
}
