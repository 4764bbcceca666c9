// SPDX-License-Identifier: MIT
/*
 * Issue 17, item 8: what a CUDA user expects of the API. Pointer attributes
 * as cudaPointerGetAttributes() reports them, and going between a memory
 * handle and an array over the same storage.
 */
#include <accel/memory.h>

#include "suite.h"

#define U8 accel_dtype(ACCEL_UINT8)
#define F32 accel_dtype(ACCEL_FLOAT32)

static struct accel_pointer_attributes attrs_of(const void *p)
{
	struct accel_pointer_attributes a;

	memset(&a, 0x5a, sizeof(a));
	REQUIRE(accel_pointer_get_attributes(p, &a) == C_SUCCESS);
	return a;
}

static bool unregistered(const struct accel_pointer_attributes *a)
{
	return a->type == ACCEL_POINTER_UNREGISTERED && a->device == -1 &&
	       !a->base && !a->size && !a->pooled && !a->block_live &&
	       !a->block_base && !a->block_size;
}

TEST(pointer_attributes_of_each_kind)
{
	const size_t n = 12345;
	struct accel_pointer_attributes a;
	char *d = dalloc(ctx, n), *h, *u, *r = xmalloc(8192);

	a = attrs_of(d + 100);
	CHECK(a.type == ACCEL_POINTER_DEVICE && a.device == ctx->dev->id);
	CHECK(a.base == d && a.size == n && !a.pooled && !a.block_live);
	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, (void **)&h, n));
	a = attrs_of(h + n - 1);
	CHECK(a.type == ACCEL_POINTER_PINNED_HOST && a.device == ctx->dev->id);
	CHECK(a.base == h && a.size == n);
	REQUIRE_OK(accel_unified_memory_allocate(ctx->dev, (void **)&u, n));
	a = attrs_of(u);
	CHECK(a.type == ACCEL_POINTER_UNIFIED && a.base == u && a.size == n);
	REQUIRE_OK(accel_host_memory_register(ctx->dev, r + 4096, 4096));
	a = attrs_of(r + 5000);
	CHECK(a.type == ACCEL_POINTER_REGISTERED_HOST && a.base == r + 4096 &&
	      a.size == 4096 && a.device == ctx->dev->id);
	/* the unregistered rest of the same buffer */
	a = attrs_of(r + 100);
	CHECK(unregistered(&a));
	OK(accel_host_memory_unregister(ctx->dev, r + 4096));
	a = attrs_of(r + 5000);
	CHECK(unregistered(&a));
	OK(accel_unified_memory_deallocate(ctx->dev, u, n));
	OK(accel_host_memory_deallocate(ctx->dev, h, n));
	dfree(ctx, d, n);
	free(r);
}

/* CUDA 11+: an unknown pointer is unregistered host memory, not an error. */
TEST(unknown_pointers_are_unregistered_host_memory)
{
	struct accel_pointer_attributes a;
	int on_stack;
	char *d = dalloc(ctx, 64);

	a = attrs_of(&on_stack);
	CHECK(unregistered(&a));
	a = attrs_of(NULL);
	CHECK(unregistered(&a));
	dfree(ctx, d, 64);
	a = attrs_of(d);	/* freed */
	CHECK(unregistered(&a));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_pointer_get_attributes(&on_stack, NULL));
}

/* Pool memory: the allocation is the pool's, the block the caller's. */
TEST(pointer_attributes_of_pool_memory)
{
	struct accel_pointer_attributes a;
	accel_memory_t m, keep;
	struct accel_memory_info info;
	char *p;

	REQUIRE_OK(accel_memory_create(ctx->dev, 1, U8, NULL, 0, &keep));
	REQUIRE_OK(accel_memory_create(ctx->dev, 40, U8, NULL, 0, &m));
	REQUIRE_OK(accel_memory_get_info(m, &info));
	p = info.ptr;
	a = attrs_of(p + 39);
	CHECK(a.type == ACCEL_POINTER_DEVICE && a.device == ctx->dev->id);
	CHECK(a.pooled && a.block_live);
	CHECK(a.block_base == p && a.block_size == 40);
	CHECK((char *)a.base <= p && p + 40 <= (char *)a.base + a.size);
	OK(accel_memory_release(m));
	a = attrs_of(p);
	/* a free part of a chunk, or (ACCEL_POOL=off) no memory at all */
	CHECK(a.type == ACCEL_POINTER_UNREGISTERED ||
	      (a.pooled && !a.block_live && !a.block_base));
	OK(accel_memory_release(keep));
}

TEST_PEER(pointer_attributes_name_the_device)
{
	char *d = dalloc(ctx, 64), *e;
	struct accel_pointer_attributes a;

	REQUIRE_OK(accel_device_memory_allocate(ctx->peer, (void **)&e, 64));
	a = attrs_of(e);
	CHECK(a.type == ACCEL_POINTER_DEVICE && a.device == ctx->peer->id);
	a = attrs_of(d);
	CHECK(a.type == ACCEL_POINTER_DEVICE && a.device == ctx->dev->id);
	OK(accel_device_memory_deallocate(ctx->peer, e, 64));
	dfree(ctx, d, 64);
}
