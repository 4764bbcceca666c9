// SPDX-License-Identifier: MIT
/* unified_memory_allocate: one pointer for the host and every copy. */
#include "suite.h"

TEST(unified_is_host_and_device_memory)
{
	const size_t n = (1 << 20) + 5;
	size_t before = free_memory(ctx);
	uint8_t *u = NULL, *d = dalloc(ctx, n), *h = xmalloc(n), *back;

	REQUIRE_OK(accel_unified_memory_allocate(ctx->dev, (void **)&u, n));
	REQUIRE(u);
	CHECK((uintptr_t)u % ctx->min_chunk == 0);
	/* counts as device memory */
	CHECK(free_memory(ctx) + n <= before - n);

	/* host writes, device reads */
	fill_pattern(u, n, 21);
	OK(accel_memory_copy_d2d(ctx->dev, d, u, n));
	back = read_back(ctx, d, n);
	CHECK(check_pattern(back, n, 21));
	free(back);

	/* device writes (h2d, d2d, set), host reads */
	fill_pattern(h, n, 22);
	OK(accel_memory_copy_h2d(ctx->dev, u, h, n));
	CHECK(check_pattern(u, n, 22));
	OK(accel_device_memory_set(ctx->dev, u + 3, 0x3c, 1000));
	CHECK(check_bytes(u + 3, 1000, 0x3c));
	OK(accel_memory_copy_d2d(ctx->dev, u + 1, d + 1, 500));
	back = read_back(ctx, d, n);
	CHECK(!memcmp(u + 1, back + 1, 500));
	CHECK(check_bytes(u + 501, 502, 0x3c));
	free(back);

	/* the unified pointer as the host side of copies */
	OK(accel_memory_copy_d2h(ctx->dev, u + n - 100, d, 100));
	OK(accel_memory_copy_h2d(ctx->dev, d, u, n));
	back = read_back(ctx, d, n);
	CHECK(!memcmp(back, u, n));
	free(back);

	OK(accel_unified_memory_deallocate(ctx->dev, u, n));
	dfree(ctx, d, n);
	/* CUDA's driver takes freed managed memory back lazily */
	if (strncmp(ctx->name, "cuda:", 5))
		CHECK_FREE_IS(ctx, before);
	free(h);
}

TEST(unified_bounds_and_frees)
{
	uint8_t *u = NULL, h[8];

	REQUIRE_OK(accel_unified_memory_allocate(ctx->dev, (void **)&u, 4096));
	FAILS(accel_memory_copy_h2d(ctx->dev, u + 4090, h, 8));
	FAILS(accel_unified_memory_deallocate(ctx->dev, u, 100));
	FAILS(accel_device_memory_deallocate(ctx->dev, u, 4096));
	FAILS(accel_host_memory_deallocate(ctx->dev, u, 4096));
	OK(accel_unified_memory_deallocate(ctx->dev, u, 4096));
	FAILS(accel_unified_memory_deallocate(ctx->dev, u, 4096));
	FAILS(accel_device_memory_set(ctx->dev, u, 0, 1));
}

/*
 * accel.h: "Deallocation does not wait: memory is reused (or given back to
 * the device) only once the work submitted before the free, on every
 * stream, has completed." Until then the backend still holds the memory,
 * but the caller no longer owns it: copies into the freed pointer are
 * refused with ACCEL_ERROR_INVALID_VALUE while the free waits, as after
 * it, not taken for memory the backend still knows (on cuda, for another
 * library's managed memory). A chain on a stream that never touches the
 * memory keeps the free waiting; a try in which the chain was over by the
 * first copy shows nothing more than unified_bounds_and_frees, and runs
 * again with a longer chain.
 */
TEST(freed_unified_memory_is_refused_while_its_free_waits)
{
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF), h[64] = { 0 };
	int copies = BUSY_START;
	accel_stream_t s, other;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_stream_create(ctx->dev, &other));
	for (;;) {
		uint8_t *u = NULL;
		bool pending;

		REQUIRE_OK(accel_unified_memory_allocate(ctx->dev, (void **)&u,
							 4096));
		busy_chain(ctx->dev, s, big, copies);
		OK(accel_unified_memory_deallocate(ctx->dev, u, 4096));
		FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
			   accel_async_memory_copy_h2d(ctx->dev, other, u + 227,
						       h, 29));
		pending = stream_busy(ctx->dev, s);
		FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
			   accel_memory_copy_h2d(ctx->dev, u, h, sizeof(h)));
		OK(accel_stream_synchronize(ctx->dev, other));
		OK(accel_stream_synchronize(ctx->dev, s));
		if (pending)
			break;
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, other));
	dfree(ctx, big, 2 * BUSY_HALF);
}
