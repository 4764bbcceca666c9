// SPDX-License-Identifier: MIT
/*
 * accel_memory_wrap, sentence by sentence of OCCA's device::wrapMemory
 * (seed 001): wrap a native backend pointer; the type gives the bytes;
 * on Serial a malloc'd pointer, on CUDA a pointer from its API; no
 * automatic garbage collection for wrapped memory.
 */
#include <accel/memory.h>

#include "suite.h"

#define F32 accel_dtype(ACCEL_FLOAT32)

/* "Wrap a native backend pointer ... it takes the pointer allocated through their API" */
TEST(wrap_a_device_pointer)
{
	const size_t n = 4096;
	float *d = dalloc(ctx, n * sizeof(float)), in[4096];
	struct accel_memory_info info;
	accel_memory_t m;
	uint8_t *back;

	for (size_t i = 0; i < n; i++)
		in[i] = (float)i / 4;
	REQUIRE_OK(accel_memory_wrap(ctx->dev, d, n, F32, &m));
	OK(accel_memory_get_info(m, &info));
	/* "Uses the type to determine the type and bytes" */
	CHECK(info.ptr == d && info.entries == n && info.bytes == n * 4 &&
	      info.wrapped && info.device == ctx->dev->id && !info.flags);
	OK(accel_memory_copy_from(m, in, ACCEL_ALL, 0));
	back = read_back(ctx, d, sizeof(in));
	CHECK(!memcmp(back, in, sizeof(in)));
	free(back);
	OK(accel_memory_release(m));
	dfree(ctx, d, n * sizeof(float));	/* still ours to free */
}

/* "automatic garbage collection is not set for wrapped memory objects" */
TEST(wrapped_memory_is_never_freed_by_the_library)
{
	const size_t bytes = 1 << 20;
	size_t before = free_memory(ctx);
	void *d = dalloc(ctx, bytes);
	accel_memory_t m, s, c;

	REQUIRE_OK(accel_memory_wrap(ctx->dev, d, bytes / 4, F32, &m));
	REQUIRE_OK(accel_memory_slice(m, 10, 10, &s));
	REQUIRE_OK(accel_memory_clone(s, &c));	/* a clone is the library's */
	OK(accel_memory_release(c));
	OK(accel_memory_release(s));
	OK(accel_memory_release(m));
	/* not freed by the last release... */
	OK(accel_device_memory_set(ctx->dev, d, 1, bytes));
	REQUIRE_OK(accel_memory_wrap(ctx->dev, d, bytes / 4, F32, &m));
	REQUIRE_OK(accel_memory_slice(m, 0, 1, &s));
	/* ...nor by an explicit free, which still ends every handle */
	OK(accel_memory_free(m));
	CHECK(!accel_memory_is_valid(s));
	OK(accel_memory_release(s));
	OK(accel_device_memory_set(ctx->dev, d, 2, bytes));
	dfree(ctx, d, bytes);
	pool_trim(ctx);
	CHECK_FREE_IS(ctx, before);
}

TEST(wrap_pinned_unified_registered_and_pool_memory)
{
	float in[256], out[256];
	void *pinned, *unified, *block, *user = xmalloc(sizeof(in));
	struct accel_memory_info info;
	accel_memory_t m;
	accel_pool_t pool;

	for (size_t i = 0; i < 256; i++)
		in[i] = (float)i;
	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, &pinned, sizeof(in)));
	REQUIRE_OK(accel_unified_memory_allocate(ctx->dev, &unified, sizeof(in)));
	REQUIRE_OK(accel_host_memory_register(ctx->dev, user, sizeof(in)));
	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &block, sizeof(in)));
	void *ptrs[] = { pinned, unified, user, block };

	for (size_t i = 0; i < 4; i++) {
		REQUIRE_OK(accel_memory_wrap(ctx->dev, ptrs[i], 256, F32, &m));
		OK(accel_memory_get_info(m, &info));
		CHECK(info.wrapped && info.ptr == ptrs[i]);
		/* host memory and unified memory may be mapped */
		CHECK(!info.flags == (ptrs[i] == block));
		OK(accel_memory_copy_from(m, in, ACCEL_ALL, 0));
		memset(out, 0, sizeof(out));
		OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
		CHECK(!memcmp(in, out, sizeof(in)));
		OK(accel_memory_release(m));
	}
	OK(accel_pool_deallocate(pool, NULL, block, sizeof(in)));
	OK(accel_host_memory_unregister(ctx->dev, user));
	OK(accel_unified_memory_deallocate(ctx->dev, unified, sizeof(in)));
	OK(accel_host_memory_deallocate(ctx->dev, pinned, sizeof(in)));
	free(user);
}

/* "on a Serial or OpenMP device ... a regular pointer allocated through malloc" */
TEST(wrap_host_memory_only_where_it_is_native)
{
	float in[64], *host = xmalloc(sizeof(in)), out[64];
	accel_memory_t m = NULL;

	for (size_t i = 0; i < 64; i++)
		in[i] = (float)-i;
	if (is_cpu(ctx)) {
		REQUIRE_OK(accel_memory_wrap(ctx->dev, host, 64, F32, &m));
		OK(accel_memory_copy_from(m, in, ACCEL_ALL, 0));
		CHECK(!memcmp(host, in, sizeof(in)));
		OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
		CHECK(!memcmp(out, in, sizeof(in)));
		OK(accel_memory_release(m));
	} else {
		/* pageable host memory is no native pointer of a device */
		FAILS(accel_memory_wrap(ctx->dev, host, 64, F32, &m));
		CHECK(m == NULL);
	}
	free(host);
}

TEST(wrap_mistakes_are_refused)
{
	void *d = dalloc(ctx, 1024);
	accel_memory_t m = NULL;

	/* the entries must fit in the allocation */
	FAILS(accel_memory_wrap(ctx->dev, d, 257, F32, &m));
	FAILS(accel_memory_wrap(ctx->dev, (char *)d + 4, 256, F32, &m));
	CHECK(strstr(accel_get_last_error(), "past the end") != NULL);
	FAILS(accel_memory_wrap(ctx->dev, NULL, 1, F32, &m));
	FAILS(accel_memory_wrap(ctx->dev, d, 1, NULL, &m));
	FAILS(accel_memory_wrap(NULL, d, 1, F32, &m));
	CHECK(m == NULL);
	/* the interior of an allocation may be wrapped */
	OK(accel_memory_wrap(ctx->dev, (char *)d + 4, 255, F32, &m));
	OK(accel_memory_release(m));
	dfree(ctx, d, 1024);
	/* freed memory is no memory of the device */
	if (!is_cpu(ctx))
		FAILS(accel_memory_wrap(ctx->dev, d, 1, F32, &m));
}

/*
 * "A clone of wrapped memory is owned by the library: device memory, or on
 * a cpu device, for wrapped host memory, device memory too": a clone of
 * the caller's host memory wrapped on a cpu device is a block of the
 * device's memory, holds the bytes, and the host may still map it.
 */
TEST(a_clone_of_wrapped_host_memory_is_device_memory)
{
	float in[64], *mapped;
	struct accel_pointer_attributes at;
	struct accel_memory_info info;
	accel_memory_t m, c;

	if (!is_cpu(ctx))
		suite_skip("only a cpu device wraps any host memory");
	for (int i = 0; i < 64; i++)
		in[i] = (float)i;
	REQUIRE_OK(accel_memory_wrap(ctx->dev, in, 64, F32, &m));
	REQUIRE_OK(accel_memory_clone(m, &c));
	OK(accel_memory_get_info(c, &info));
	CHECK(!info.wrapped && info.ptr != in);
	OK(accel_pointer_get_attributes(info.ptr, &at));
	CHECK(at.type == ACCEL_POINTER_DEVICE && at.device == ctx->dev->id);
	REQUIRE_OK(accel_memory_map(c, ACCEL_MAP_READ, (void **)&mapped));
	CHECK(!memcmp(mapped, in, sizeof(in)));
	OK(accel_memory_unmap(c));
	OK(accel_memory_release(c));
	OK(accel_memory_release(m));
}
