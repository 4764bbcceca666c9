// SPDX-License-Identifier: MIT
/* device_memory_allocate / device_memory_deallocate, and freeing mistakes. */
#include "suite.h"

TEST(allocate_sizes_aligned_and_disjoint)
{
	static const size_t sizes[] = { 1, 7, 255, 256, 257, 4095, 4096, 65537,
					1 << 20, (3 << 20) + 5 };
	void *p[sizeof(sizes) / sizeof(sizes[0])];
	size_t n = sizeof(sizes) / sizeof(sizes[0]);

	for (size_t i = 0; i < n; i++) {
		p[i] = dalloc(ctx, sizes[i]);
		CHECK((uintptr_t)p[i] % ctx->min_chunk == 0);
		for (size_t j = 0; j < i; j++)
			CHECK((uintptr_t)p[i] + sizes[i] <= (uintptr_t)p[j] ||
			      (uintptr_t)p[j] + sizes[j] <= (uintptr_t)p[i]);
	}
	for (size_t i = 0; i < n; i++)
		dfree(ctx, p[i], sizes[i]);
}

TEST(zero_size_allocations)
{
	void *p = (void *)0x1;

	OK(accel_device_memory_allocate(ctx->dev, &p, 0));
	CHECK(p == NULL);
	p = (void *)0x1;
	OK(accel_host_memory_allocate(ctx->dev, &p, 0));
	CHECK(p == NULL);
	p = (void *)0x1;
	OK(accel_unified_memory_allocate(ctx->dev, &p, 0));
	CHECK(p == NULL);
	OK(accel_device_memory_deallocate(ctx->dev, NULL, 0));
	OK(accel_host_memory_deallocate(ctx->dev, NULL, 0));
	OK(accel_unified_memory_deallocate(ctx->dev, NULL, 0));
}

/* "Out of memory: return ACCEL_FAILED and set *ptr = NULL." */
TEST(out_of_memory)
{
	size_t total, free, max;
	void *p = (void *)0x1, *all;

	REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &free));
	FAILS(accel_device_memory_allocate(ctx->dev, &p, total + 1));
	CHECK(p == NULL);
	CHECK(strstr(accel_get_last_error(), "out of memory") != NULL);
	p = (void *)0x1;
	FAILS(accel_device_memory_allocate(ctx->dev, &p, SIZE_MAX));
	CHECK(p == NULL);
	p = (void *)0x1;
	FAILS(accel_unified_memory_allocate(ctx->dev, &p, total + 1));
	CHECK(p == NULL);

	/* the whole of max_alloc_size, then nothing of that size more */
	REQUIRE_OK(accel_device_max_alloc_size(ctx->dev, &max));
	REQUIRE(max >= ctx->min_chunk);
	all = dalloc(ctx, max);
	CHECK(free_memory(ctx) + max <= free);
	p = (void *)0x1;
	FAILS(accel_device_memory_allocate(ctx->dev, &p, max));
	CHECK(p == NULL);
	dfree(ctx, all, max);
	CHECK_FREE_IS(ctx, free);
	/* and the memory is usable again */
	p = dalloc(ctx, max);
	dfree(ctx, p, max);
}

TEST(null_ptr_argument)
{
	FAILS(accel_device_memory_allocate(ctx->dev, NULL, 64));
	FAILS(accel_host_memory_allocate(ctx->dev, NULL, 64));
	FAILS(accel_unified_memory_allocate(ctx->dev, NULL, 64));
	FAILS(accel_device_memory_deallocate(ctx->dev, NULL, 64));
}

/* A wrong free is refused and the allocation survives it intact. */
TEST(bad_frees_lose_nothing)
{
	const size_t n = 8192;
	size_t before = free_memory(ctx);
	uint8_t *p = dalloc(ctx, n), *h = xmalloc(n), *back, local;

	fill_pattern(h, n, 5);
	REQUIRE_OK(accel_memory_copy_h2d(ctx->dev, p, h, n));

	FAILS(accel_device_memory_deallocate(ctx->dev, p, n - 1));
	CHECK(strstr(accel_get_last_error(), "does not match") != NULL);
	FAILS(accel_device_memory_deallocate(ctx->dev, p, n + 1));
	FAILS(accel_device_memory_deallocate(ctx->dev, p + 256, n - 256));
	CHECK(strstr(accel_get_last_error(), "inside") != NULL);
	FAILS(accel_device_memory_deallocate(ctx->dev, &local, 1));
	FAILS(accel_device_memory_deallocate(ctx->dev, h, n));
	FAILS(accel_host_memory_deallocate(ctx->dev, p, n));
	FAILS(accel_unified_memory_deallocate(ctx->dev, p, n));

	back = read_back(ctx, p, n);
	CHECK(check_pattern(back, n, 5));
	free(back);
	dfree(ctx, p, n);
	/* double free */
	FAILS(accel_device_memory_deallocate(ctx->dev, p, n));
	CHECK(strstr(accel_get_last_error(), "not a live") != NULL);
	CHECK_FREE_IS(ctx, before);
	free(h);
}

TEST_PEER(free_on_the_wrong_device)
{
	void *p = dalloc(ctx, 4096);

	FAILS(accel_device_memory_deallocate(ctx->peer, p, 4096));
	dfree(ctx, p, 4096);
}

TEST(many_allocations_return_to_baseline)
{
	enum { N = 1000 };
	size_t before = free_memory(ctx), *sizes = xmalloc(N * sizeof(size_t));
	void **p = xmalloc(N * sizeof(void *));
	uint32_t seed = 1;

	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245 + 12345;
		sizes[i] = 1 + (seed >> 8) % 20000;
		p[i] = dalloc(ctx, sizes[i]);
	}
	CHECK(free_memory(ctx) < before);
	/* free in an order unrelated to allocation */
	for (int i = 0; i < N; i++) {
		int j = (i * 7919) % N;

		dfree(ctx, p[j], sizes[j]);
	}
	CHECK_FREE_IS(ctx, before);
	free(p);
	free(sizes);
}
