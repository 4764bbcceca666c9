// SPDX-License-Identifier: MIT
/* host_memory_allocate: pinned host memory. */
#include "suite.h"

TEST(pinned_memory_is_host_memory)
{
	const size_t n = (2 << 20) + 100;
	size_t before = free_memory(ctx);
	uint8_t *p = NULL;

	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, (void **)&p, n));
	REQUIRE(p);
	/* every byte is the caller's, and it is not device memory */
	fill_pattern(p, n, 3);
	CHECK(check_pattern(p, n, 3));
	CHECK_FREE_IS(ctx, before);
	OK(accel_host_memory_deallocate(ctx->dev, p, n));
}

TEST(pinned_copies_both_ways_interior)
{
	const size_t n = 1 << 20;
	uint8_t *p = NULL, *q = NULL, *d = dalloc(ctx, n);

	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, (void **)&p, n));
	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, (void **)&q, n));
	fill_pattern(p, n, 11);
	memset(q, 0, n);
	OK(accel_memory_copy_h2d(ctx->dev, d + 5, p + 5, n - 5));
	OK(accel_memory_copy_d2h(ctx->dev, q + 7, d + 7, n - 7));
	CHECK(!memcmp(q + 7, p + 7, n - 7));
	CHECK(check_bytes(q, 7, 0));
	OK(accel_host_memory_deallocate(ctx->dev, p, n));
	OK(accel_host_memory_deallocate(ctx->dev, q, n));
	dfree(ctx, d, n);
}

TEST(pinned_free_mistakes)
{
	uint8_t *p = NULL;

	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, (void **)&p, 4096));
	FAILS(accel_host_memory_deallocate(ctx->dev, p, 4095));
	FAILS(accel_host_memory_deallocate(ctx->dev, p + 1, 4095));
	FAILS(accel_device_memory_deallocate(ctx->dev, p, 4096));
	FAILS(accel_unified_memory_deallocate(ctx->dev, p, 4096));
	/* pinned memory is not device memory */
	FAILS(accel_device_memory_set(ctx->dev, p, 0, 16));
	CHECK(strstr(accel_get_last_error(), "pinned") != NULL);
	p[4095] = 1;	/* still ours */
	OK(accel_host_memory_deallocate(ctx->dev, p, 4096));
	FAILS(accel_host_memory_deallocate(ctx->dev, p, 4096));
}

/* More pinned memory than any machine has: refused as out of memory, and
 * the next allocation goes on (accel_device_memory_allocate's rules). */
TEST(pinned_memory_beyond_the_machine_is_out_of_memory)
{
	void *p = (void *)1;

	FAILS_WITH(ACCEL_ERROR_OUT_OF_MEMORY,
		   accel_host_memory_allocate(ctx->dev, &p, (size_t)1 << 50));
	CHECK(p == NULL);
	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, &p, 4096));
	memset(p, 1, 4096);
	OK(accel_host_memory_deallocate(ctx->dev, p, 4096));
}
