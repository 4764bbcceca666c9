// SPDX-License-Identifier: MIT
/*
 * "Each call uses the device it is given, whatever the calling thread's
 * current context is": a thread with a context of its own, or none, keeps
 * it across libaccel calls, and the calls work. Runs on cuda devices only.
 */
#include <dlfcn.h>

#include "suite.h"

/* The few CUDA driver functions needed, declared by hand: no CUDA headers. */
struct cuda_api {
	int (*device_get)(int *dev, int ordinal);
	int (*ctx_create)(void **ctx, void *params, unsigned int flags, int dev);
	int (*ctx_destroy)(void *ctx);
	int (*ctx_get_current)(void **ctx);
	int (*ctx_set_current)(void *ctx);
};

static void load(struct cuda_api *cu)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);

	REQUIRE(lib);
	*(void **)&cu->device_get = dlsym(lib, "cuDeviceGet");
	*(void **)&cu->ctx_create = dlsym(lib, "cuCtxCreate_v4");
	*(void **)&cu->ctx_destroy = dlsym(lib, "cuCtxDestroy_v2");
	*(void **)&cu->ctx_get_current = dlsym(lib, "cuCtxGetCurrent");
	*(void **)&cu->ctx_set_current = dlsym(lib, "cuCtxSetCurrent");
	if (!cu->ctx_create)
		suite_skip("the CUDA driver has no cuCtxCreate_v4 (older than 12.5)");
	REQUIRE(cu->device_get && cu->ctx_destroy && cu->ctx_get_current &&
		cu->ctx_set_current);
}

/* Allocate, copy both ways on a stream and synchronously, and free. */
static void round_trip(struct suite_ctx *ctx, uint32_t seed)
{
	const size_t n = 1 << 20;
	uint8_t *d = dalloc(ctx, n), *h = xmalloc(n), *out = xmalloc(n);
	accel_stream_t s;

	fill_pattern(h, n, seed);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_memory_copy_d2h(ctx->dev, out, d, n));
	CHECK(check_pattern(out, n, seed));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, d, n);
	free(h);
	free(out);
}

TEST(cuda_caller_context_left_alone)
{
	struct cuda_api cu;
	void *foreign = NULL, *cur = (void *)1;
	int dev;

	if (strncmp(ctx->name, "cuda:", 5))
		suite_skip("a test of the cuda backend");
	load(&cu);
	REQUIRE(cu.device_get(&dev, atoi(ctx->name + 5)) == 0);
	REQUIRE(cu.ctx_create(&foreign, NULL, 0, dev) == 0);	/* and current */

	round_trip(ctx, 151);
	CHECK(cu.ctx_get_current(&cur) == 0 && cur == foreign);

	REQUIRE(cu.ctx_set_current(NULL) == 0);
	round_trip(ctx, 152);
	CHECK(cu.ctx_get_current(&cur) == 0 && cur == NULL);
	CHECK(cu.ctx_destroy(foreign) == 0);
}

/* cuda.h's CUmemAllocationProp (CUDA 10.2 on), for a device's memory */
struct cuda_alloc_prop {
	int type;			/* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
	int handle_types;
	int location_type;		/* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
	int location_id;
	void *win32_meta;
	unsigned char alloc_flags[8];
};

/* The device's page: CU_MEM_ALLOC_GRANULARITY_RECOMMENDED. */
static size_t cuda_page(int ordinal)
{
	int (*granularity)(size_t *g, const struct cuda_alloc_prop *prop,
			   int option);
	struct cuda_alloc_prop prop = { .type = 1, .location_type = 1,
					.location_id = ordinal };
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	size_t page = 0;

	REQUIRE(lib);
	*(void **)&granularity = dlsym(lib, "cuMemGetAllocationGranularity");
	if (!granularity)
		suite_skip("the CUDA driver has no cuMemGetAllocationGranularity");
	REQUIRE(granularity(&page, &prop, 1) == 0 && page);
	return page;
}

/* A caching allocator's chunks waste none of the pages they occupy. */
TEST(cuda_chunks_are_whole_pages)
{
	size_t page, init, re, max_chunk;

	if (strncmp(ctx->name, "cuda:", 5))
		suite_skip("a test of the cuda backend");
	page = cuda_page(atoi(ctx->name + 5));
	REQUIRE_OK(accel_device_init_alloc_size(ctx->dev, &init));
	REQUIRE_OK(accel_device_realloc_size(ctx->dev, &re));
	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	CHECK(init % page == 0 && init >= page);
	CHECK(re % page == 0 && re >= page);
	CHECK(max_chunk % page == 0);
}
