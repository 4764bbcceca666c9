// SPDX-License-Identifier: MIT
/*
 * Issue 17, items 5 to 7: lifetimes and extents of views (5), the pool's
 * chunk policy (6), and the seeds point by point (7): Numba (004), OCCA's
 * wrapMemory (001) and typed views (000).
 */
#include <accel/memory.h>

#include "suite.h"

#define U8 accel_dtype(ACCEL_UINT8)
#define I16 accel_dtype(ACCEL_INT16)
#define F32 accel_dtype(ACCEL_FLOAT32)
#define F64 accel_dtype(ACCEL_FLOAT64)

static void *mem_ptr(accel_memory_t m)
{
	struct accel_memory_info info;

	REQUIRE(accel_memory_get_info(m, &info) == C_SUCCESS);
	return info.ptr;
}

/* ------------------------------------------------------------------ */
/* 5c: raw copies into pool memory are checked against the live block */

/*
 * docs/libaccel.md: C_FAILED for any range past its allocation. A memory
 * handle's 16 bytes are a block of a pool chunk; its neighbours are other
 * blocks of the same chunk.
 */
TEST(raw_copies_stop_at_the_end_of_a_pool_block)
{
	uint8_t big[1024], back[16];
	accel_memory_t a, b;
	uint8_t *pa, *pb;
	C_Stream s;

	memset(big, 0xab, sizeof(big));
	REQUIRE_OK(accel_memory_create(ctx->dev, 16, U8, NULL, 0, &a));
	REQUIRE_OK(accel_memory_create(ctx->dev, 16, U8, NULL, 0, &b));
	pa = mem_ptr(a);
	pb = mem_ptr(b);
	OK(accel_device_memory_set(ctx->dev, pb, 0x11, 16));

	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy_h2d(ctx->dev, pa, big, sizeof(big)));
	FAILS(accel_memory_copy_h2d(ctx->dev, pa, big, 17));
	FAILS(accel_memory_copy_h2d(ctx->dev, pa + 8, big, 9));
	OK(accel_memory_copy_h2d(ctx->dev, pa + 8, big, 8));
	OK(accel_memory_copy_h2d(ctx->dev, pa, big, 16));
	FAILS(accel_memory_copy_d2h(ctx->dev, big, pa, sizeof(big)));
	FAILS(accel_memory_copy_d2d(ctx->dev, pa, pb, 32));
	FAILS(accel_memory_copy_d2d(ctx->dev, pb, pa, 32));
	OK(accel_memory_copy_d2d(ctx->dev, pb, pa, 16));
	FAILS(accel_device_memory_set(ctx->dev, pa, 0, 17));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	FAILS(accel_async_memory_copy_h2d(ctx->dev, s, pa, big, 17));
	FAILS(accel_async_memory_copy_d2h(ctx->dev, s, big, pa, 17));
	FAILS(accel_async_memory_copy_d2d(ctx->dev, s, pa, pb, 17));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));

	/* b was written only by the one 16-byte copy */
	OK(accel_memory_copy_d2h(ctx->dev, back, pb, 16));
	CHECK(check_bytes(back, 16, 0xab));
	OK(accel_memory_release(a));
	OK(accel_memory_release(b));
}

/* A block given back to the pool is no memory of the caller's. */
TEST(raw_copies_into_a_free_pool_block_fail)
{
	accel_pool_t pool;
	uint8_t buf[64] = { 0 };
	void *keep, *p;

	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	/* keep the chunk alive, so that the freed block stays in it */
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &keep, 64));
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &p, 64));
	OK(accel_memory_copy_h2d(ctx->dev, p, buf, 64));
	OK(accel_pool_deallocate(pool, NULL, p, 64));
	FAILS(accel_memory_copy_h2d(ctx->dev, p, buf, 64));
	FAILS(accel_memory_copy_d2h(ctx->dev, buf, p, 1));
	FAILS(accel_device_memory_set(ctx->dev, p, 0, 1));
	OK(accel_pool_deallocate(pool, NULL, keep, 64));
}

TEST_PEER(peer_copies_stop_at_the_end_of_a_pool_block)
{
	accel_memory_t a, b;
	C_Stream s;

	REQUIRE_OK(accel_memory_create(ctx->dev, 16, U8, NULL, 0, &a));
	REQUIRE_OK(accel_memory_create(ctx->peer, 1024, U8, NULL, 0, &b));
	FAILS(accel_memory_copy_p2p(ctx->dev, ctx->peer, mem_ptr(a),
				    mem_ptr(b), 1024));
	FAILS(accel_memory_copy_p2p(ctx->peer, ctx->dev, mem_ptr(b),
				    mem_ptr(a), 17));
	OK(accel_memory_copy_p2p(ctx->peer, ctx->dev, mem_ptr(b),
				 mem_ptr(a), 16));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	FAILS(accel_async_memory_copy_p2p(ctx->dev, ctx->peer, s, mem_ptr(a),
					  mem_ptr(b), 17));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_memory_release(a));
	OK(accel_memory_release(b));
}
