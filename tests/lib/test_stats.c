// SPDX-License-Identifier: MIT
/* device_memory_stats and the chunk-size policy. */
#include "suite.h"

static bool power_of_two(size_t v)
{
	return v && !(v & (v - 1));
}

/* "Stats must satisfy total >= free" */
TEST(stats_follow_allocations)
{
	size_t total, free, t2, f2;
	const size_t n = 5 << 20;
	void *p;

	REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &free));
	CHECK(total > 0 && total >= free);
	p = dalloc(ctx, n);
	REQUIRE_OK(accel_device_memory_stats(ctx->dev, &t2, &f2));
	CHECK(t2 == total);
	CHECK(f2 + n <= free);
	dfree(ctx, p, n);
	REQUIRE_OK(accel_device_memory_stats(ctx->dev, &t2, &f2));
	CHECK(f2 == free);
	FAILS(accel_device_memory_stats(ctx->dev, NULL, &free));
	FAILS(accel_device_memory_stats(ctx->dev, &total, NULL));
}

TEST(chunk_sizes_are_consistent)
{
	size_t total, free, min, max_chunk, max_alloc, pad, init, re;

	REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &free));
	REQUIRE_OK(accel_device_min_chunk_size(ctx->dev, &min));
	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	REQUIRE_OK(accel_device_max_alloc_size(ctx->dev, &max_alloc));
	REQUIRE_OK(accel_device_extra_padding_size(ctx->dev, &pad));
	REQUIRE_OK(accel_device_init_alloc_size(ctx->dev, &init));
	REQUIRE_OK(accel_device_realloc_size(ctx->dev, &re));
	/* "used as a modulus: it must never be 0" */
	CHECK(power_of_two(min));
	CHECK(max_chunk >= min && max_chunk % min == 0);
	CHECK(max_alloc <= free && max_alloc % min == 0);
	CHECK(init <= free && init <= max_alloc && init % min == 0);
	CHECK(re <= free && re <= max_alloc && re % min == 0);
	CHECK(max_chunk <= max_alloc);
	CHECK(pad % min == 0);
	/* "free must exceed the min chunk size" */
	CHECK(free > min);
	FAILS(accel_device_min_chunk_size(ctx->dev, NULL));
	FAILS(accel_device_max_chunk_size(ctx->dev, NULL));
	FAILS(accel_device_max_alloc_size(ctx->dev, NULL));
	FAILS(accel_device_extra_padding_size(ctx->dev, NULL));
	FAILS(accel_device_init_alloc_size(ctx->dev, NULL));
	FAILS(accel_device_realloc_size(ctx->dev, NULL));
}

/* What Paddle's allocator does with the policy must work. */
TEST(paddle_style_chunks)
{
	size_t min, pad, init, re, max_chunk;
	uint8_t *chunk, *next, *h = xmalloc(1000), *back;
	size_t req = 1000, block;

	REQUIRE_OK(accel_device_min_chunk_size(ctx->dev, &min));
	REQUIRE_OK(accel_device_extra_padding_size(ctx->dev, &pad));
	REQUIRE_OK(accel_device_init_alloc_size(ctx->dev, &init));
	REQUIRE_OK(accel_device_realloc_size(ctx->dev, &re));
	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	chunk = dalloc(ctx, init);
	/* carve a padded, aligned block out of the chunk by arithmetic */
	block = (req + pad + min - 1) / min * min;
	REQUIRE(block * 3 <= init);
	fill_pattern(h, req, 7);
	OK(accel_memory_copy_h2d(ctx->dev, chunk + block * 2, h, req));
	OK(accel_device_memory_set(ctx->dev, chunk + block, 0, block));
	back = read_back(ctx, chunk + block * 2, req);
	CHECK(check_pattern(back, req, 7));
	free(back);
	next = dalloc(ctx, re);
	/* the caller frees with the base pointer and exact size */
	dfree(ctx, next, re);
	dfree(ctx, chunk, init);
	free(h);
}
