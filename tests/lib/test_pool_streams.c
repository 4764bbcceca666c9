// SPDX-License-Identifier: MIT
/*
 * The caching allocator and streams: "a block freed on stream A is reusable
 * at once by later work on A, and by other streams only after A's work up
 * to the free has completed".
 */
#include <accel/memory.h>

#include "suite.h"

/*
 * Slow work that keeps a stream busy, so that what follows is really
 * queued: a chain of KEEP_BUSY copies of BUSY_COPY bytes, in a buffer of
 * 2 * BUSY_COPY.
 */
#define BUSY_COPY (8u << 20)
#define KEEP_BUSY 8

/*
 * Work on @s that writes @x (@n bytes): a copy from the busy buffer, of no
 * more than it holds (a block of its own may be the larger, on a GPU).
 */
static void write_on(struct suite_ctx *ctx, accel_stream_t s, void *x, size_t n,
		     uint8_t *busy)
{
	OK(accel_async_memory_copy_d2d(ctx->dev, s, x, busy,
				       n < 2 * BUSY_COPY ? n : 2 * BUSY_COPY));
}

static bool stats_reserved_is_zero(accel_pool_t p)
{
	struct accel_pool_stats s;

	return accel_pool_get_stats(p, &s) == ACCEL_SUCCESS && !s.reserved;
}

/* A block's size that gets a chunk of its own. */
static size_t own_chunk_size(struct suite_ctx *ctx)
{
	size_t re, max_chunk;

	REQUIRE_OK(accel_device_realloc_size(ctx->dev, &re));
	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	REQUIRE(re + ctx->min_chunk <= max_chunk);
	return re + ctx->min_chunk;
}

TEST(pool_same_stream_reuses_at_once)
{
	uint8_t *busy = dalloc(ctx, 2 * BUSY_COPY);
	accel_pool_t p;
	accel_stream_t s;
	void *x, *y;

	needs_caching(ctx);
	REQUIRE_OK(accel_pool_create(ctx->dev, &p));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_pool_allocate(p, s, &x, 4096));
	busy_chain_of(ctx->dev, s, busy, KEEP_BUSY, BUSY_COPY);
	OK(accel_async_memory_copy_d2d(ctx->dev, s, x, busy, 4096));
	OK(accel_pool_deallocate(p, s, x, 4096));
	/* the stream is still busy: reuse on it is ordered anyway */
	REQUIRE_OK(accel_pool_allocate(p, s, &y, 4096));
	CHECK(y == x);
	OK(accel_pool_deallocate(p, s, y, 4096));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_pool_destroy(p));
	dfree(ctx, busy, 2 * BUSY_COPY);
}

/*
 * Stream B may get memory stream A freed while A is still writing it; B's
 * work must then wait for A's: what B writes is what stays.
 */
TEST(pool_other_stream_waits_for_the_freeing_stream)
{
	enum { ROUNDS = 8 };
	size_t n = own_chunk_size(ctx);
	uint8_t *busy = dalloc(ctx, 2 * BUSY_COPY);
	uint8_t *h = xmalloc(n), *fives = xmalloc(n);
	accel_pool_t p;
	accel_stream_t sa, sb;
	int reused = 0;

	needs_caching(ctx);
	REQUIRE_OK(accel_pool_create(ctx->dev, &p));
	REQUIRE_OK(accel_stream_create(ctx->dev, &sa));
	REQUIRE_OK(accel_stream_create(ctx->dev, &sb));
	fill_pattern(h, n, 77);
	memset(fives, 0x5a, n);
	for (int r = 0; r < ROUNDS; r++) {
		uint8_t *x, *y, *back;

		REQUIRE_OK(accel_pool_allocate(p, sa, (void **)&x, n));
		busy_chain_of(ctx->dev, sa, busy, KEEP_BUSY, BUSY_COPY);
		OK(accel_async_memory_copy_h2d(ctx->dev, sa, x, h, n));
		OK(accel_pool_deallocate(p, sa, x, n));
		REQUIRE_OK(accel_pool_allocate(p, sb, (void **)&y, n));
		reused += y == x;
		OK(accel_async_memory_copy_h2d(ctx->dev, sb, y, fives, n));
		OK(accel_stream_synchronize(ctx->dev, sb));
		OK(accel_stream_synchronize(ctx->dev, sa));
		back = read_back(ctx, y, n);
		if (!check_bytes(back, n, 0x5a))
			CHECK(!"stream A's copy landed after stream B's");
		free(back);
		OK(accel_pool_deallocate(p, sb, y, n));
	}
	CHECK(reused > 0);	/* the memory did move between the streams */
	OK(accel_stream_destroy(ctx->dev, sa));
	OK(accel_stream_destroy(ctx->dev, sb));
	OK(accel_pool_destroy(p));
	dfree(ctx, busy, 2 * BUSY_COPY);
	free(h);
	free(fives);
}

/*
 * The ordering itself: A writes a pattern into x and frees it; B gets the
 * memory and sets it. With B waiting for A, the set comes last.
 */
TEST(pool_reuse_across_streams_is_ordered)
{
	enum { ROUNDS = 8 };
	size_t n = own_chunk_size(ctx);
	uint8_t *busy = dalloc(ctx, 2 * BUSY_COPY);
	uint8_t *h = xmalloc(n), *out = xmalloc(n);
	accel_pool_t p;
	accel_stream_t sa, sb;

	needs_caching(ctx);
	REQUIRE_OK(accel_pool_create(ctx->dev, &p));
	REQUIRE_OK(accel_stream_create(ctx->dev, &sa));
	REQUIRE_OK(accel_stream_create(ctx->dev, &sb));
	fill_pattern(h, n, 78);
	for (int r = 0; r < ROUNDS; r++) {
		uint8_t *x, *y;

		REQUIRE_OK(accel_pool_allocate(p, sa, (void **)&x, n));
		busy_chain_of(ctx->dev, sa, busy, KEEP_BUSY, BUSY_COPY);
		OK(accel_async_memory_copy_h2d(ctx->dev, sa, x, h, n));
		OK(accel_pool_deallocate(p, sa, x, n));
		REQUIRE_OK(accel_pool_allocate(p, sb, (void **)&y, n));
		if (y != x) {
			OK(accel_pool_deallocate(p, sb, y, n));
			OK(accel_stream_synchronize(ctx->dev, sa));
			continue;
		}
		/* B reads what it sees: A's data, complete */
		OK(accel_async_memory_copy_d2h(ctx->dev, sb, out, y, n));
		OK(accel_stream_synchronize(ctx->dev, sb));
		if (!check_pattern(out, n, 78)) {
			CHECK(!"stream B saw the memory before A's copy into it had completed");
			break;
		}
		OK(accel_pool_deallocate(p, sb, y, n));
		OK(accel_stream_synchronize(ctx->dev, sa));
	}
	OK(accel_stream_destroy(ctx->dev, sa));
	OK(accel_stream_destroy(ctx->dev, sb));
	OK(accel_pool_destroy(p));
	dfree(ctx, busy, 2 * BUSY_COPY);
	free(h);
	free(out);
}

/*
 * Rounds of the tests below: a round proves something only when the stream
 * was still busy after what the test did, since a fast device may finish
 * the work first.
 */
enum { BUSY_ROUNDS = 10 };

/* With no stream, memory a busy stream freed is not handed out. */
TEST(pool_no_stream_takes_only_completed_memory)
{
	size_t n = own_chunk_size(ctx);
	uint8_t *busy = dalloc(ctx, 2 * BUSY_COPY);
	int observed = 0;
	accel_pool_t p;
	accel_stream_t sa;

	REQUIRE_OK(accel_pool_create(ctx->dev, &p));
	REQUIRE_OK(accel_stream_create(ctx->dev, &sa));
	for (int r = 1; r <= BUSY_ROUNDS; r++) {
		void *x, *y, *z;

		REQUIRE_OK(accel_pool_allocate(p, sa, &x, n));
		write_on(ctx, sa, x, n, busy);
		for (int k = 0; k < r; k++)
			busy_chain_of(ctx->dev, sa, busy, KEEP_BUSY, BUSY_COPY);
		OK(accel_pool_deallocate(p, sa, x, n));
		REQUIRE_OK(accel_pool_allocate(p, NULL, &y, n));
		if (stream_busy(ctx->dev, sa)) {
			observed++;
			CHECK(y != x);
		}
		OK(accel_stream_synchronize(ctx->dev, sa));
		if (y != x) {	/* completed: now it may */
			REQUIRE_OK(accel_pool_allocate(p, NULL, &z, n));
			CHECK(z == x);
			OK(accel_pool_deallocate(p, NULL, z, n));
		}
		OK(accel_pool_deallocate(p, NULL, y, n));
	}
	OK(accel_stream_destroy(ctx->dev, sa));
	OK(accel_pool_destroy(p));
	dfree(ctx, busy, 2 * BUSY_COPY);
	if (!observed)
		suite_skip("the stream's work always completed before it could be observed");
}

/*
 * Freed on another stream than its own: the block is free once that
 * stream's work up to the free has completed, and not before.
 */
TEST(pool_free_on_another_stream)
{
	size_t before = free_memory(ctx);
	size_t n = own_chunk_size(ctx);
	uint8_t *busy = dalloc(ctx, 2 * BUSY_COPY);
	int observed = 0;
	accel_pool_t p;
	accel_stream_t sa, sb;

	before -= 2 * BUSY_COPY;
	REQUIRE_OK(accel_pool_create(ctx->dev, &p));
	REQUIRE_OK(accel_stream_create(ctx->dev, &sa));
	REQUIRE_OK(accel_stream_create(ctx->dev, &sb));
	for (int r = 1; r <= BUSY_ROUNDS; r++) {
		void *x, *y;

		REQUIRE_OK(accel_pool_allocate(p, sa, &x, n));
		write_on(ctx, sb, x, n, busy);
		for (int k = 0; k < r; k++)
			busy_chain_of(ctx->dev, sb, busy, KEEP_BUSY, BUSY_COPY);
		OK(accel_pool_deallocate(p, sb, x, n));
		FAILS(accel_pool_deallocate(p, sb, x, n));	/* freed already */
		REQUIRE_OK(accel_pool_allocate(p, sa, &y, n));
		if (stream_busy(ctx->dev, sb)) {
			observed++;
			CHECK(y != x);	/* B may still be writing x */
		}
		OK(accel_pool_deallocate(p, sa, y, n));
		OK(accel_stream_synchronize(ctx->dev, sb));
	}
	OK(accel_pool_trim(p));
	CHECK(stats_reserved_is_zero(p));
	OK(accel_stream_destroy(ctx->dev, sa));
	OK(accel_stream_destroy(ctx->dev, sb));
	OK(accel_pool_destroy(p));
	CHECK_FREE_IS(ctx, before);
	dfree(ctx, busy, 2 * BUSY_COPY);
	if (!observed)
		suite_skip("the stream's work always completed before it could be observed");
}

/* A stream destroyed with live blocks: they stay valid and free later. */
TEST(pool_blocks_outlive_their_stream)
{
	size_t before = free_memory(ctx);
	accel_pool_t p;
	accel_stream_t s;
	uint8_t *x, *back, h[300];
	void *q;

	fill_pattern(h, sizeof(h), 5);
	REQUIRE_OK(accel_pool_create(ctx->dev, &p));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_pool_allocate(p, s, (void **)&x, 300));
	OK(accel_async_memory_copy_h2d(ctx->dev, s, x, h, 300));
	OK(accel_stream_destroy(ctx->dev, s));
	FAILS(accel_pool_allocate(p, s, &q, 16));
	FAILS(accel_pool_deallocate(p, s, x, 300));
	back = read_back(ctx, x, 300);
	CHECK(check_pattern(back, 300, 5));
	free(back);
	OK(accel_pool_deallocate(p, NULL, x, 300));
	OK(accel_pool_trim(p));
	CHECK(stats_reserved_is_zero(p));
	OK(accel_pool_destroy(p));
	CHECK_FREE_IS(ctx, before);
}

/* A pool that sends every request to the device (ACCEL_POOL=off). */
static accel_pool_t pool_off(struct suite_ctx *ctx)
{
	accel_pool_t p;

	setenv("ACCEL_POOL", "off", 1);
	REQUIRE_OK(accel_pool_create(ctx->dev, &p));
	unsetenv("ACCEL_POOL");
	return p;
}

/*
 * "without waiting for it on the host (but a block larger than the max
 * chunk size freed on a stream waits for that stream's work)": with the
 * pool off too, a 1 MiB block freed on its busy stream returns while the
 * stream is still busy.
 */
TEST(pool_off_free_on_a_busy_stream_does_not_wait)
{
	size_t n = 1 << 20, max_chunk, before = free_memory(ctx);
	uint8_t *busy = dalloc(ctx, 2 * BUSY_COPY);
	accel_pool_t p = pool_off(ctx);
	int observed = 0;
	accel_stream_t s;

	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	REQUIRE(n <= max_chunk);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (int r = 0; r < BUSY_ROUNDS && !observed; r++) {
		void *x;

		REQUIRE_OK(accel_pool_allocate(p, s, &x, n));
		busy_chain_of(ctx->dev, s, busy, KEEP_BUSY, BUSY_COPY);
		write_on(ctx, s, x, n, busy);
		OK(accel_pool_deallocate(p, s, x, n));
		observed += stream_busy(ctx->dev, s);
		OK(accel_stream_synchronize(ctx->dev, s));
	}
	CHECK(observed);
	OK(accel_pool_trim(p));
	CHECK(stats_reserved_is_zero(p));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_pool_destroy(p));
	dfree(ctx, busy, 2 * BUSY_COPY);
	CHECK_FREE_IS(ctx, before);
}

/*
 * A block freed on an idle stream while another stream's queued copy still
 * writes it is a misuse (the copy may write memory handed out again), but
 * the process lives on: with the pool off the block goes back to the
 * device only behind that copy, not under it.
 */
TEST(pool_off_block_freed_under_another_streams_copy)
{
	size_t n = 8 << 20, before = free_memory(ctx);
	uint8_t *busy = dalloc(ctx, 2 * BUSY_COPY);
	accel_pool_t p = pool_off(ctx);
	accel_stream_t sa, sb;

	REQUIRE_OK(accel_stream_create(ctx->dev, &sa));
	REQUIRE_OK(accel_stream_create(ctx->dev, &sb));
	for (int r = 0; r < BUSY_ROUNDS; r++) {
		void *x;

		REQUIRE_OK(accel_pool_allocate(p, sa, &x, n));
		busy_chain_of(ctx->dev, sa, busy, KEEP_BUSY, BUSY_COPY);
		write_on(ctx, sa, x, n, busy);
		OK(accel_pool_deallocate(p, sb, x, n));
	}
	OK(accel_stream_synchronize(ctx->dev, sa));
	OK(accel_pool_trim(p));
	CHECK(stats_reserved_is_zero(p));
	OK(accel_stream_destroy(ctx->dev, sa));
	OK(accel_stream_destroy(ctx->dev, sb));
	OK(accel_pool_destroy(p));
	dfree(ctx, busy, 2 * BUSY_COPY);
	CHECK_FREE_IS(ctx, before);
}

/*
 * accel.h, accel_pool_deallocate(): a block the pool took from the device
 * (with ACCEL_POOL=off, any block, however small) goes back to the device
 * only once the work queued on every stream has completed; and copies check
 * block pointers "against the live block ...: a range past it, or in a free
 * part of a chunk, is refused". So a block freed with no stream behind a
 * queued copy from it: the copy still reads the block's bytes (the memory
 * is not taken back under it), while a synchronous copy from the freed
 * block is refused with ACCEL_ERROR_INVALID_VALUE although the device still
 * holds the memory. A try is conclusive when the stream was still busy
 * after the free.
 */
TEST(pool_off_small_block_freed_behind_queued_work_is_refused)
{
	enum { N = 85 };
	uint8_t *busy = dalloc(ctx, 2 * BUSY_COPY), got[N], out[32];
	accel_pool_t p = pool_off(ctx);
	bool observed = false;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (int r = 0; r < BUSY_ROUNDS && !observed; r++) {
		uint8_t *blk;

		REQUIRE_OK(accel_pool_allocate(p, NULL, (void **)&blk, N));
		REQUIRE_OK(accel_device_memory_set(ctx->dev, blk, 0x5a, N));
		memset(got, 0, sizeof(got));
		busy_chain_of(ctx->dev, s, busy, KEEP_BUSY, BUSY_COPY);
		OK(accel_async_memory_copy_d2h(ctx->dev, s, got, blk, N));
		OK(accel_pool_deallocate(p, NULL, blk, N));
		observed = stream_busy(ctx->dev, s);
		FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
			   accel_memory_copy_d2h(ctx->dev, out, blk + 7, 21));
		OK(accel_stream_synchronize(ctx->dev, s));
		CHECK(check_bytes(got, N, 0x5a));
	}
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_pool_trim(p));
	CHECK(stats_reserved_is_zero(p));
	OK(accel_pool_destroy(p));
	dfree(ctx, busy, 2 * BUSY_COPY);
	if (!observed)
		suite_skip("the stream was never busy at the free");
}

/*
 * "A freed pointer gets ACCEL_FAILED, nothing is written": a block larger than
 * the largest chunk (with ACCEL_POOL=off, any block) freed behind queued
 * work waits for that work out of the pool's books; copies into it must
 * be refused all the same.
 */
TEST(pool_freed_large_block_refused)
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
