// SPDX-License-Identifier: MIT
/*
 * device_memory_stats and the chunk-size policy, and the free-memory
 * figures of frees deferred behind queued work: used until that work is
 * over, free to every figure as soon as it is.
 */
#include <accel/memory.h>

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

/* ------------------------------------------------------------------ */
/* Free-memory figures once the work behind a free has completed */

/*
 * docs/libaccel.md: free-memory figures count memory of a pending free as
 * used until its work completes; once it has, the figure has it back,
 * with no other allocation or free needed to notice.
 */
TEST(stats_count_frees_whose_work_completed)
{
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	int copies = BUSY_START;
	size_t total, before, after, sz = 32u << 20;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (;;) {
		bool pending;
		void *p;

		OK(accel_device_synchronize(ctx->dev));
		REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &before));
		REQUIRE_OK(accel_device_memory_allocate(ctx->dev, &p, sz));
		busy_chain(ctx->dev, s, big, copies);
		OK(accel_async_memory_copy_d2d(ctx->dev, s, p, big, 4096));
		OK(accel_device_memory_deallocate(ctx->dev, p, sz));
		pending = stream_busy(ctx->dev, s);
		OK(accel_device_synchronize(ctx->dev));
		REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &after));
		if (pending) {	/* the free was behind the work */
			CHECK(after == before);
			break;
		}
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, big, 2 * BUSY_HALF);
}

/* @n rounded down to whole MiB */
static size_t mib_down(size_t n)
{
	return n & ~(((size_t)1 << 20) - 1);
}

/*
 * Free memory once the work behind a free is over: the memory of a free
 * deferred behind queued work is free to every figure once that work has
 * completed, with no other call needed to notice.
 */
TEST(max_alloc_size_after_a_deferred_free)
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

TEST(large_pool_block_back_once_its_work_is_over)
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
TEST(raw_allocation_takes_back_a_released_large_block)
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
