// SPDX-License-Identifier: MIT
/* memory_copy_h2d / d2h / d2d: sizes, interior pointers, bounds, mistakes. */
#include "suite.h"

TEST(roundtrip_sizes)
{
	static const size_t sizes[] = { 1, 3, 255, 4095, 4096, 4097, 65537,
					(4 << 20) + 13 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint8_t *d = dalloc(ctx, n), *h = xmalloc(n), *back;

		fill_pattern(h, n, (uint32_t)i);
		REQUIRE_OK(accel_memory_copy_h2d(ctx->dev, d, h, n));
		back = read_back(ctx, d, n);
		CHECK(check_pattern(back, n, (uint32_t)i));
		free(back);
		free(h);
		dfree(ctx, d, n);
	}
}

/* "passes interior pointers (base + offset) to copies" */
TEST(interior_unaligned_pointers)
{
	const size_t n = 1 << 20;
	static const size_t offs[] = { 1, 3, 255, 257, 4097, 65535 };
	uint8_t *d = dalloc(ctx, n), *h = xmalloc(n), *back;

	REQUIRE_OK(accel_device_memory_set(ctx->dev, d, 0xee, n));
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		size_t len = 1000 + i * 333;

		fill_pattern(h, len, (uint32_t)(100 + i));
		OK(accel_memory_copy_h2d(ctx->dev, d + offs[i] * 8, h, len));
		back = xmalloc(len);
		OK(accel_memory_copy_d2h(ctx->dev, back, d + offs[i] * 8, len));
		CHECK(check_pattern(back, len, (uint32_t)(100 + i)));
		free(back);
	}
	/* untouched bytes keep their value */
	back = read_back(ctx, d, n);
	CHECK(check_bytes(back, 8, 0xee));
	CHECK(check_bytes(back + n - 4096, 4096, 0xee));
	free(back);
	free(h);
	dfree(ctx, d, n);
}

TEST(tail_byte_and_bounds)
{
	const size_t n = 4096 + 17;
	uint8_t *d = dalloc(ctx, n), h[64], one = 0x5a, out = 0;

	OK(accel_memory_copy_h2d(ctx->dev, d + n - 1, &one, 1));
	OK(accel_memory_copy_d2h(ctx->dev, &out, d + n - 1, 1));
	CHECK(out == 0x5a);
	/* one byte past the end, ranges running past it */
	FAILS(accel_memory_copy_h2d(ctx->dev, d + n, &one, 1));
	FAILS(accel_memory_copy_h2d(ctx->dev, d + n - 1, h, 2));
	CHECK(strstr(accel_get_last_error(), "past the end") != NULL);
	FAILS(accel_memory_copy_d2h(ctx->dev, h, d + n - 10, 11));
	FAILS(accel_memory_copy_d2d(ctx->dev, d, d + n - 8, 9));
	FAILS(accel_memory_copy_h2d(ctx->dev, d, h, SIZE_MAX));
	FAILS(accel_device_memory_set(ctx->dev, d + 1, 0, n));
	/* and nothing was written by the refused calls */
	OK(accel_memory_copy_d2h(ctx->dev, &out, d + n - 1, 1));
	CHECK(out == 0x5a);
	dfree(ctx, d, n);
}

/* The host side of a copy in pinned or unified memory: its bounds are checked too. */
TEST(host_range_past_pinned_or_unified_memory_refused)
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

TEST(d2d_between_and_within_allocations)
{
	const size_t n = 300000;
	uint8_t *a = dalloc(ctx, n), *b = dalloc(ctx, n), *h = xmalloc(n), *back;

	fill_pattern(h, n, 9);
	REQUIRE_OK(accel_memory_copy_h2d(ctx->dev, a, h, n));
	OK(accel_memory_copy_d2d(ctx->dev, b, a, n));
	back = read_back(ctx, b, n);
	CHECK(check_pattern(back, n, 9));
	free(back);
	/* first half onto the second, inside one allocation, unaligned */
	OK(accel_memory_copy_d2d(ctx->dev, b + n / 2 + 1, b + 1, n / 2 - 1));
	back = read_back(ctx, b, n);
	CHECK(!memcmp(back + n / 2 + 1, h + 1, n / 2 - 1));
	free(back);
	free(h);
	dfree(ctx, a, n);
	dfree(ctx, b, n);
}

/*
 * A device-to-device copy whose ranges overlap is refused on every backend
 * (ACCEL_ERROR_INVALID_VALUE), synchronous, asynchronous and through the
 * peer-to-peer calls, and leaves the memory as it was; the same range as
 * source and destination is no overlap and changes nothing.
 */
TEST(d2d_overlapping_ranges_are_refused)
{
	const size_t n = 8192;
	uint8_t *a = dalloc(ctx, n), *h = xmalloc(n), *back;
	accel_stream_t s;

	fill_pattern(h, n, 31);
	REQUIRE_OK(accel_memory_copy_h2d(ctx->dev, a, h, n));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy_d2d(ctx->dev, a + 1, a, n / 2));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy_d2d(ctx->dev, a, a + n / 2 - 1, n / 2));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_async_memory_copy_d2d(ctx->dev, s, a + 4096, a, 4097));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy_p2p(ctx->dev, ctx->dev, a + 8, a, 64));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_async_memory_copy_p2p(ctx->dev, ctx->dev, s, a, a + 8, 64));
	CHECK(strstr(accel_get_last_error(), ctx->name));
	OK(accel_memory_copy_d2d(ctx->dev, a, a, n));
	OK(accel_async_memory_copy_d2d(ctx->dev, s, a + 1, a + 1, n - 1));
	OK(accel_memory_copy_d2d(ctx->dev, a + n / 2, a, n / 2));	/* adjacent */
	OK(accel_stream_synchronize(ctx->dev, s));
	back = read_back(ctx, a, n);
	CHECK(check_pattern(back, n / 2, 31));
	CHECK(!memcmp(back + n / 2, h, n / 2));
	free(back);
	OK(accel_stream_destroy(ctx->dev, s));
	free(h);
	dfree(ctx, a, n);
}

TEST(wrong_kinds_of_pointer)
{
	const size_t n = 4096;
	uint8_t *d = dalloc(ctx, n), *h = xmalloc(n);

	FAILS(accel_memory_copy_h2d(ctx->dev, h, h, n));	/* dst is host */
	CHECK(strstr(accel_get_last_error(), "not device memory") != NULL);
	FAILS(accel_memory_copy_h2d(ctx->dev, d, d, n));	/* src is device */
	CHECK(strstr(accel_get_last_error(), "not host memory") != NULL);
	FAILS(accel_memory_copy_d2h(ctx->dev, d, d, n));
	FAILS(accel_memory_copy_d2h(ctx->dev, h, h, n));
	FAILS(accel_memory_copy_d2d(ctx->dev, d, h, n));
	FAILS(accel_memory_copy_d2d(ctx->dev, h, d, n));
	FAILS(accel_memory_copy_h2d(ctx->dev, NULL, h, n));
	FAILS(accel_memory_copy_h2d(ctx->dev, d, NULL, n));
	FAILS(accel_memory_copy_d2h(ctx->dev, NULL, d, n));
	FAILS(accel_device_memory_set(ctx->dev, h, 0, n));
	FAILS(accel_device_memory_set(ctx->dev, NULL, 0, n));
	FAILS(accel_memory_copy_h2d(ctx->dev, (void *)0x10, h, 1));	/* foreign */
	dfree(ctx, d, n);
	/* freed memory is foreign memory */
	FAILS(accel_memory_copy_h2d(ctx->dev, d, h, n));
	FAILS(accel_device_memory_set(ctx->dev, d, 0, n));
	free(h);
}

/* "Copies of size 0 never reach the plugin from Paddle, but a plugin must accept them." */
TEST(zero_size_copies)
{
	uint8_t *d = dalloc(ctx, 256), h[1];

	OK(accel_memory_copy_h2d(ctx->dev, d, h, 0));
	OK(accel_memory_copy_d2h(ctx->dev, h, d, 0));
	OK(accel_memory_copy_d2d(ctx->dev, d, d, 0));
	OK(accel_device_memory_set(ctx->dev, d, 1, 0));
	OK(accel_memory_copy_h2d(ctx->dev, NULL, NULL, 0));
	OK(accel_memory_copy_p2p(ctx->dev, ctx->dev, d, d, 0));
	dfree(ctx, d, 256);
}

TEST(large_copy)
{
	const size_t n = (24 << 20) + 4097;
	uint8_t *d = dalloc(ctx, n), *h = xmalloc(n), *back;

	fill_pattern(h, n, 77);
	OK(accel_memory_copy_h2d(ctx->dev, d, h, n));
	back = read_back(ctx, d, n);
	CHECK(check_pattern(back, n, 77));
	free(back);
	free(h);
	dfree(ctx, d, n);
}
