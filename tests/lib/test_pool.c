// SPDX-License-Identifier: MIT
/* The caching allocator: policy, best fit, reuse, statistics, bad input. */
#include "suite.h"

#include <accel/memory.h>

static size_t policy(struct suite_ctx *ctx,
		     accel_status_t (*fn)(accel_device_t, size_t *))
{
	size_t v;

	REQUIRE_OK(fn(ctx->dev, &v));
	return v;
}

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static size_t padding(struct suite_ctx *ctx)
{
	return policy(ctx, accel_device_extra_padding_size);
}

/* Blocks are device memory: distinct, aligned, and hold their data. */
TEST(pool_blocks_hold_their_data)
{
	enum { N = 24 };
	accel_pool_t p = new_pool(ctx);
	uint8_t *blk[N], *h = xmalloc(300000);
	size_t size[N];

	for (int i = 0; i < N; i++) {
		size[i] = 1 + (size_t)i * 12345 % 300000;
		blk[i] = palloc(p, NULL, size[i]);
		CHECK((uintptr_t)blk[i] % ctx->min_chunk == 0);
		fill_pattern(h, size[i], 50 + i);
		OK(accel_memory_copy_h2d(ctx->dev, blk[i], h, size[i]));
	}
	for (int i = 0; i < N; i++) {
		uint8_t *back = read_back(ctx, blk[i], size[i]);

		CHECK(check_pattern(back, size[i], 50 + i));
		free(back);
	}
	for (int i = 0; i < N; i++)
		OK(accel_pool_deallocate(p, NULL, blk[i], size[i]));
	CHECK(stats_of(p).blocks == 0);
	OK(accel_pool_destroy(p));
	free(h);
}

/* "Requests are padded ... and rounded to its min chunk size" */
TEST(pool_rounds_requests_to_the_min_chunk)
{
	accel_pool_t p = new_pool(ctx);
	size_t min = policy(ctx, accel_device_min_chunk_size);
	size_t pad = policy(ctx, accel_device_extra_padding_size);
	const size_t sizes[] = { 1, min - 1, min, min + 1, 3 * min + 7 };
	void *ptr[5];
	size_t want = 0, asked = 0;
	struct accel_pool_stats s;

	needs_caching(ctx);
	for (int i = 0; i < 5; i++) {
		ptr[i] = palloc(p, NULL, sizes[i]);
		want += round_up(sizes[i] + pad, min);
		asked += sizes[i];
	}
	s = stats_of(p);
	CHECK(s.allocated == want);
	CHECK(s.requested == asked);
	CHECK(s.blocks == 5);
	/* consecutive blocks of a fresh chunk lie back to back */
	for (int i = 1; i < 5; i++)
		CHECK((uintptr_t)ptr[i] - (uintptr_t)ptr[i - 1] ==
		      round_up(sizes[i - 1] + pad, min));
	for (int i = 0; i < 5; i++)
		OK(accel_pool_deallocate(p, NULL, ptr[i], sizes[i]));
	s = stats_of(p);
	CHECK(s.allocated == 0 && s.requested == 0 && s.blocks == 0);
	OK(accel_pool_destroy(p));
}

/* "chunks are taken in init_alloc_size first and realloc_size later" */
TEST(pool_chunks_follow_the_policy)
{
	size_t init = policy(ctx, accel_device_init_alloc_size);
	size_t re = policy(ctx, accel_device_realloc_size);
	size_t max_chunk = policy(ctx, accel_device_max_chunk_size);
	size_t before = free_memory(ctx);
	accel_pool_t p = new_pool(ctx);
	struct accel_pool_stats s;
	void *a, *b, *big, *large;
	size_t mid;

	needs_caching(ctx);
	a = palloc(p, NULL, init);		/* fills the first chunk */
	s = stats_of(p);
	CHECK(s.chunks == 1 && s.reserved == init && s.backend_allocs == 1);
	CHECK(before - free_memory(ctx) >= init);
	b = palloc(p, NULL, 1);			/* needs a second one */
	s = stats_of(p);
	CHECK(s.chunks == 2 && s.reserved == init + re);
	/* larger than realloc_size: a chunk of its own size */
	big = palloc(p, NULL, re + ctx->min_chunk);
	s = stats_of(p);
	/* rounded to the device's page, which may be more than min_chunk */
	CHECK(s.chunks == 3 && s.reserved >= init + re + re + ctx->min_chunk);
	CHECK(before - free_memory(ctx) == s.reserved);
	mid = s.reserved;
	/* "larger than max_chunk_size go straight to the backend", padded and rounded */
	large = palloc(p, NULL, max_chunk + 1);
	s = stats_of(p);
	CHECK(s.chunks == 3 && s.backend_allocs == 4);
	CHECK(s.reserved - mid >= round_up(max_chunk + 1 + padding(ctx), ctx->min_chunk));
	CHECK(before - free_memory(ctx) == s.reserved);
	{	/* the rounded tail is the block's too */
		size_t end = s.reserved - mid;
		struct accel_pointer_attributes at;

		OK(accel_pointer_get_attributes((char *)large + end - 1, &at));
		CHECK(at.type == ACCEL_POINTER_DEVICE && at.base == large &&
		      at.size == end && at.pooled);
	}
	OK(accel_pool_deallocate(p, NULL, large, max_chunk + 1));
	s = stats_of(p);
	CHECK(s.backend_frees == 1);
	OK(accel_pool_deallocate(p, NULL, a, init));
	OK(accel_pool_deallocate(p, NULL, b, 1));
	OK(accel_pool_deallocate(p, NULL, big, re + ctx->min_chunk));
	OK(accel_pool_destroy(p));
	CHECK_FREE_IS(ctx, before);
}

/* "Best fit ..., splitting of free blocks and coalescing of neighbours" */
TEST(pool_best_fit_split_and_merge)
{
	accel_pool_t p = new_pool(ctx);
	size_t g = ctx->min_chunk;
	uint8_t *blk[6], *q;
	struct accel_pool_stats s;
	size_t chunk;

	needs_caching(ctx);
	/* holes of 4g (lower) and 2g (higher), kept apart by used blocks */
	blk[0] = palloc(p, NULL, 4 * g);
	blk[1] = palloc(p, NULL, g);
	blk[2] = palloc(p, NULL, 2 * g);
	blk[3] = palloc(p, NULL, g);
	for (int i = 1; i < 4; i++)
		REQUIRE(blk[i] > blk[i - 1]);
	chunk = stats_of(p).reserved;
	OK(accel_pool_deallocate(p, NULL, blk[0], 4 * g));
	OK(accel_pool_deallocate(p, NULL, blk[2], 2 * g));
	/* the smallest hole that fits, not the first one */
	q = palloc(p, NULL, 2 * g);
	CHECK(q == blk[2]);
	/* a split: g from the 4g hole, the rest stays free */
	blk[4] = palloc(p, NULL, g);
	CHECK(blk[4] == blk[0]);
	blk[5] = palloc(p, NULL, 3 * g);
	CHECK(blk[5] == blk[0] + g);
	CHECK(stats_of(p).backend_allocs == 1);
	/* freeing everything merges the chunk back into one block */
	OK(accel_pool_deallocate(p, NULL, blk[1], g));
	OK(accel_pool_deallocate(p, NULL, blk[4], g));
	OK(accel_pool_deallocate(p, NULL, blk[3], g));
	OK(accel_pool_deallocate(p, NULL, q, 2 * g));
	OK(accel_pool_deallocate(p, NULL, blk[5], 3 * g));
	s = stats_of(p);
	CHECK(s.free_blocks == 1);
	CHECK(s.largest_free == chunk);
	CHECK(s.blocks == 0);
	OK(accel_pool_destroy(p));
}

/* A warm pool serves allocations without calling the device. */
TEST(pool_reuses_memory)
{
	accel_pool_t p = new_pool(ctx);
	size_t calls = 0;
	void *ptr[64];

	needs_caching(ctx);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 64; i++)
			ptr[i] = palloc(p, NULL, 1000 + (size_t)i * 3000);
		for (int i = 63; i >= 0; i--)
			OK(accel_pool_deallocate(p, NULL, ptr[i], 1000 + (size_t)i * 3000));
		if (round == 0)
			calls = stats_of(p).backend_allocs;
	}
	CHECK(stats_of(p).backend_allocs == calls);
	CHECK(stats_of(p).backend_frees == 0);
	OK(accel_pool_destroy(p));
}

/* "An explicit trim releases every idle chunk." */
TEST(pool_trim_releases_idle_chunks)
{
	size_t before = free_memory(ctx);
	size_t re = policy(ctx, accel_device_realloc_size);
	accel_pool_t p = new_pool(ctx);
	void *keep, *ptr[8];
	struct accel_pool_stats s;

	needs_caching(ctx);
	keep = palloc(p, NULL, 100);
	for (int i = 0; i < 8; i++)
		ptr[i] = palloc(p, NULL, re);
	for (int i = 0; i < 8; i++)
		OK(accel_pool_deallocate(p, NULL, ptr[i], re));
	CHECK(stats_of(p).chunks >= 2);
	OK(accel_pool_trim(p));
	s = stats_of(p);
	CHECK(s.chunks == 1);		/* the one holding 'keep' */
	CHECK(s.reserved == before - free_memory(ctx));
	OK(accel_pool_deallocate(p, NULL, keep, 100));
	OK(accel_pool_trim(p));
	s = stats_of(p);
	CHECK(s.chunks == 0 && s.reserved == 0);
	CHECK(s.backend_frees == s.backend_allocs);
	CHECK_FREE_IS(ctx, before);
	OK(accel_pool_destroy(p));
}

/* "On out-of-memory: release idle chunks and retry once, then fail" */
TEST(pool_out_of_memory_releases_and_retries)
{
	size_t before = free_memory(ctx);
	size_t re = policy(ctx, accel_device_realloc_size);
	size_t max_chunk = policy(ctx, accel_device_max_chunk_size);
	accel_pool_t p = new_pool(ctx), other = new_pool(ctx);
	size_t n = 0, cap = before / re + 1;
	void **ptr = xmalloc(cap * sizeof(*ptr)), *q = (void *)1;
	struct accel_pool_stats s;

	needs_caching(ctx);
	/* fill the device with chunks of p, one block each */
	while (n < cap && accel_pool_allocate(p, NULL, &ptr[n], re) == ACCEL_SUCCESS)
		n++;
	REQUIRE(n < cap);
	CHECK(strstr(accel_get_last_error(), "out of device memory"));
	/* another pool cannot have any: fails cleanly */
	FAILS(accel_pool_allocate(other, NULL, &q, max_chunk));
	CHECK(q == NULL);
	CHECK(stats_of(other).reserved == 0);
	/* idle, p's chunks still hold the memory; a request that needs it
	 * makes p give them back and try again */
	for (size_t i = 0; i < n; i++)
		OK(accel_pool_deallocate(p, NULL, ptr[i], re));
	CHECK(stats_of(p).reserved >= n * re);
	q = palloc(p, NULL, max_chunk);
	s = stats_of(p);
	CHECK(s.backend_frees > 0);
	CHECK(s.blocks == 1);
	OK(accel_pool_deallocate(p, NULL, q, max_chunk));
	OK(accel_pool_destroy(p));
	OK(accel_pool_destroy(other));
	CHECK_FREE_IS(ctx, before);
	free(ptr);
}

/* Peaks follow the highest point and can start afresh. */
TEST(pool_statistics_peaks)
{
	accel_pool_t p = new_pool(ctx);
	void *a = palloc(p, NULL, 5000), *b = palloc(p, NULL, 7000);
	struct accel_pool_stats s;

	needs_caching(ctx);
	OK(accel_pool_deallocate(p, NULL, b, 7000));
	s = stats_of(p);
	CHECK(s.requested == 5000 && s.requested_peak == 12000);
	CHECK(s.allocated_peak >= 12000 && s.allocated < s.allocated_peak);
	CHECK(s.reserved_peak >= s.reserved && s.reserved >= s.allocated);
	CHECK(s.caching == 1);
	OK(accel_pool_reset_peaks(p));
	s = stats_of(p);
	CHECK(s.requested_peak == 5000);
	CHECK(s.allocated_peak == s.allocated);
	OK(accel_pool_deallocate(p, NULL, a, 5000));
	OK(accel_pool_destroy(p));
}

/* "Bad input gets a clear error and loses nothing" */
TEST(pool_refuses_bad_input)
{
	accel_pool_t p = new_pool(ctx), dead = new_pool(ctx), def;
	uint8_t *a = palloc(p, NULL, 3000), *raw = dalloc(ctx, 4096);
	struct accel_pool_stats s, s2;
	void *q = (void *)1;

	FAILS(accel_pool_create(ctx->dev, NULL));
	FAILS(accel_pool_allocate(NULL, NULL, &q, 16));
	FAILS(accel_pool_allocate(p, NULL, NULL, 16));
	OK(accel_pool_allocate(p, NULL, &q, 0));
	CHECK(q == NULL);
	OK(accel_pool_deallocate(p, NULL, NULL, 0));
	s = stats_of(p);

	FAILS(accel_pool_deallocate(p, NULL, NULL, 16));
	FAILS(accel_pool_deallocate(p, NULL, a, 3001));	/* wrong size */
	FAILS(accel_pool_deallocate(p, NULL, a + 256, 3000));	/* interior */
	FAILS(accel_pool_deallocate(p, NULL, raw, 4096));	/* not the pool's */
	FAILS(accel_pool_deallocate(dead, NULL, a, 3000));	/* other pool */
	/* the chunk is the pool's: the plain free refuses it */
	FAILS(accel_device_memory_deallocate(ctx->dev, a, 3000));
	CHECK(strstr(accel_get_last_error(), "pool"));
	q = (void *)1;
	FAILS(accel_pool_allocate(p, (accel_stream_t)&q, &q, 16));	/* no stream */
	CHECK(q == NULL);
	FAILS(accel_pool_get_stats(p, NULL));
	s2 = stats_of(p);
	CHECK(s2.blocks == s.blocks && s2.allocated == s.allocated &&
	      s2.reserved == s.reserved);
	/* the block is intact and still frees once */
	OK(accel_device_memory_set(ctx->dev, a, 7, 3000));
	OK(accel_pool_deallocate(p, NULL, a, 3000));
	FAILS(accel_pool_deallocate(p, NULL, a, 3000));	/* double free */

	OK(accel_pool_destroy(dead));
	FAILS(accel_pool_allocate(dead, NULL, &q, 16));
	FAILS(accel_pool_destroy(dead));
	FAILS(accel_pool_trim(dead));
	REQUIRE_OK(accel_device_pool(ctx->dev, &def));
	FAILS(accel_pool_destroy(def));
	OK(accel_pool_destroy(p));
	dfree(ctx, raw, 4096);
}

/*
 * A block's bounds are the bytes asked for, not the pool's rounding of
 * them: a range that starts past them is refused, whatever lies there,
 * as the destination of a copy or a set and as the source of a copy.
 */
TEST(pool_range_in_a_blocks_rounding_refused)
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
			   accel_memory_copy_d2h(ctx->dev, out, p, 93));
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

/* A refused allocation leaves NULL, whatever was wrong: the pool or the stream. */
TEST(pool_refused_allocate_leaves_null)
{
	accel_pool_t pool, dead;
	accel_stream_t s;
	void *p;

	REQUIRE_OK(accel_pool_create(ctx->dev, &dead));
	OK(accel_pool_destroy(dead));
	p = (void *)0xdeadbeef;
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_pool_allocate(dead, NULL, &p, 64));
	CHECK(p == NULL);
	p = (void *)0xdeadbeef;
	FAILS(accel_pool_allocate(NULL, NULL, &p, 64));
	CHECK(p == NULL);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	p = (void *)0xdeadbeef;
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_pool_allocate((accel_pool_t)s, NULL, &p, 64));
	CHECK(p == NULL);
	OK(accel_stream_destroy(ctx->dev, s));
	/* and a live pool with a destroyed stream */
	REQUIRE_OK(accel_pool_create(ctx->dev, &pool));
	p = (void *)0xdeadbeef;
	FAILS(accel_pool_allocate(pool, s, &p, 64));
	CHECK(p == NULL);
	OK(accel_pool_destroy(pool));
}

/* The default pool is one per device, and usable like any other. */
TEST(pool_default_pool)
{
	accel_pool_t a, b;
	void *q;

	REQUIRE_OK(accel_device_pool(ctx->dev, &a));
	REQUIRE_OK(accel_device_pool(ctx->dev, &b));
	CHECK(a == b);
	q = palloc(a, NULL, 100);
	OK(accel_device_memory_set(ctx->dev, q, 1, 100));
	OK(accel_pool_deallocate(b, NULL, q, 100));
	FAILS(accel_device_pool(ctx->dev, NULL));
}

/* Destroying a pool gives back everything, live blocks included. */
TEST(pool_destroy_returns_everything)
{
	size_t before = free_memory(ctx);
	size_t max_chunk = policy(ctx, accel_device_max_chunk_size);
	accel_pool_t p = new_pool(ctx);
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	palloc(p, NULL, 100);
	palloc(p, s, 5000);
	palloc(p, NULL, max_chunk + 1);
	OK(accel_pool_destroy(p));
	OK(accel_stream_destroy(ctx->dev, s));
	CHECK_FREE_IS(ctx, before);
}

/* "switchable off by an environment variable" */
TEST_NOINIT(pool_off_sends_everything_to_the_device)
{
	struct accel_device_id d = { 0 };
	struct accel_pool_stats s;
	size_t granule, pad, total, free0, free1;
	accel_pool_t p;
	void *a, *b;

	setenv("ACCEL_POOL", "off", 1);
	if (suite_device_name())
		REQUIRE_OK(accel_find_device(suite_device_name(), &d.id));
	REQUIRE_OK(accel_device_min_chunk_size(&d, &granule));
	REQUIRE_OK(accel_device_extra_padding_size(&d, &pad));
	REQUIRE_OK(accel_pool_create(&d, &p));
	REQUIRE_OK(accel_device_memory_stats(&d, &total, &free0));
	REQUIRE_OK(accel_pool_allocate(p, NULL, &a, 100));
	REQUIRE_OK(accel_pool_allocate(p, NULL, &b, 100));
	REQUIRE_OK(accel_device_memory_stats(&d, &total, &free1));
	s = stats_of(p);
	CHECK(s.caching == 0 && s.backend_allocs == 2 && s.chunks == 0);
	/* "padded and rounded", as the device rounds them: what it took */
	CHECK(s.reserved >= 2 * round_up(100 + pad, granule));
	CHECK(s.reserved == free0 - free1);
	CHECK(s.allocated == s.reserved && s.requested == 200);
	OK(accel_pool_deallocate(p, NULL, a, 100));
	FAILS(accel_pool_deallocate(p, NULL, a, 100));
	OK(accel_pool_deallocate(p, NULL, b, 100));
	s = stats_of(p);
	CHECK(s.backend_frees == 2 && s.reserved == 0);
	OK(accel_pool_destroy(p));

	setenv("ACCEL_POOL", "sometimes", 1);
	FAILS(accel_pool_create(&d, &p));
	CHECK(strstr(accel_get_last_error(), "ACCEL_POOL"));
}
