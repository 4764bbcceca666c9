// SPDX-License-Identifier: MIT
/*
 * What a CUDA user expects of the API: pointer attributes as
 * cudaPointerGetAttributes() reports them, and going between a memory
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
	REQUIRE(accel_pointer_get_attributes(p, &a) == ACCEL_SUCCESS);
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

/* ------------------------------------------------------------------ */
/* Between a memory handle and an array over the same storage */

static struct accel_array_info ainfo(accel_array_t a)
{
	struct accel_array_info i;

	REQUIRE(accel_array_get_info(a, &i) == ACCEL_SUCCESS);
	return i;
}

static struct accel_memory_info minfo(accel_memory_t m)
{
	struct accel_memory_info i;

	REQUIRE(accel_memory_get_info(m, &i) == ACCEL_SUCCESS);
	return i;
}

TEST(memory_as_array_shares_the_storage)
{
	const size_t shape[2] = { 3, 4 }, big[2] = { 4, 4 };
	float in[16], out[12];
	accel_memory_t m, s;
	accel_array_t a, h;

	for (int i = 0; i < 16; i++)
		in[i] = (float)i;
	REQUIRE_OK(accel_memory_create(ctx->dev, 16, F32, in, 0, &m));
	REQUIRE_OK(accel_memory_slice(m, 4, ACCEL_ALL, &s));
	REQUIRE_OK(accel_memory_as_array(s, 2, shape, NULL, 'C', &a));
	CHECK(ainfo(a).data == minfo(s).ptr && ainfo(a).dtype == F32);
	CHECK(ainfo(a).kind == ACCEL_ARRAY_DEVICE &&
	      ainfo(a).device == ctx->dev->id);
	/* no more than the handle's 12 entries */
	FAILS(accel_memory_as_array(s, 2, big, NULL, 'C', &h));
	CHECK(h == NULL);
	OK(accel_memory_release(s));
	OK(accel_memory_release(m));	/* the array holds the storage */
	REQUIRE_OK(accel_host_array(out, 2, shape, F32, NULL, 'C', 0, &h));
	OK(accel_array_copy_to_host(a, h, NULL, NULL));
	CHECK(!memcmp(out, in + 4, sizeof(out)));
	OK(accel_array_release(h));
	OK(accel_array_release(a));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_memory_as_array(m, 2, shape, NULL, 'C', &a));
}

TEST(array_as_memory_shares_the_storage)
{
	const size_t shape[2] = { 4, 8 };
	const ptrdiff_t gaps[2] = { 64, 4 };
	float in[32], out[32];
	accel_array_t a, g, h, v;
	accel_memory_t m;

	for (int i = 0; i < 32; i++)
		in[i] = (float)i * 2;
	REQUIRE_OK(accel_host_array(in, 2, shape, F32, NULL, 'C', 0, &h));
	REQUIRE_OK(accel_to_device(ctx->dev, h, NULL, &a));
	REQUIRE_OK(accel_array_as_memory(a, &m));
	CHECK(minfo(m).ptr == ainfo(a).data && minfo(m).entries == 32 &&
	      minfo(m).dtype == F32 && minfo(m).device == ctx->dev->id);
	OK(accel_array_release(a));	/* the handle holds the storage */
	OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
	CHECK(!memcmp(in, out, sizeof(in)));
	/* and back: the same bytes */
	REQUIRE_OK(accel_memory_as_array(m, 2, shape, NULL, 'C', &v));
	CHECK(ainfo(v).data == minfo(m).ptr);
	OK(accel_array_release(v));
	OK(accel_memory_release(m));

	/* not contiguous, host, read-only: no memory handle */
	REQUIRE_OK(accel_device_array(ctx->dev, 2, shape, F32, gaps, 'C',
				      NULL, &g));
	FAILS(accel_array_as_memory(g, &m));
	CHECK(m == NULL);
	OK(accel_array_release(g));
	FAILS(accel_array_as_memory(h, &m));
	OK(accel_array_release(h));
	REQUIRE_OK(accel_host_array(in, 2, shape, F32, NULL, 'C', 1, &h));
	FAILS(accel_array_as_memory(h, &m));
	OK(accel_array_release(h));
	FAILS(accel_array_as_memory(h, &m));	/* released */
}

/* An explicit free through either side ends both, as for slices. */
TEST(memory_free_ends_its_array_views)
{
	const size_t shape[1] = { 8 };
	accel_memory_t m;
	accel_array_t a, h;
	float out[8];

	REQUIRE_OK(accel_memory_create(ctx->dev, 8, F32, NULL, 0, &m));
	REQUIRE_OK(accel_memory_as_array(m, 1, shape, NULL, 'C', &a));
	OK(accel_memory_free(m));
	REQUIRE_OK(accel_host_array(out, 1, shape, F32, NULL, 'C', 0, &h));
	FAILS(accel_array_copy_to_host(a, h, NULL, NULL));
	FAILS(accel_array_as_memory(a, &m));
	OK(accel_array_release(h));
	OK(accel_array_release(a));
}

/*
 * memory.h: after accel_memory_free() every other handle on the storage
 * "fails and says so". An array over it must hand out neither the freed
 * pointer nor new views of it; only its release works.
 */
TEST(array_over_freed_memory_refused)
{
	size_t shape[2] = { 4, 8 }, flat[1] = { 32 };
	accel_dtype_t f32 = accel_dtype(ACCEL_FLOAT32);
	struct accel_array_interface ifc;
	struct accel_array_info info;
	accel_array_t a, v, other, h;
	accel_memory_t m, m2;
	float host[32] = { 0 };

	REQUIRE_OK(accel_memory_create(ctx->dev, 32, f32, NULL, 0, &m));
	REQUIRE_OK(accel_memory_as_array(m, 2, shape, NULL, 'C', &a));
	REQUIRE_OK(accel_array_get_interface(a, &ifc));	/* while live */
	REQUIRE_OK(accel_device_array(ctx->dev, 2, shape, f32, NULL, 'C', NULL,
				      &other));
	REQUIRE_OK(accel_host_array(host, 2, shape, f32, NULL, 'C', 0, &h));
	REQUIRE_OK(accel_memory_free(m));

	FAILS_FREED(accel_array_get_info(a, &info));
	FAILS_FREED(accel_array_get_interface(a, &ifc));
	CHECK(!accel_array_has_interface(a));
	CHECK(!accel_array_is_c_contiguous(a));
	CHECK(!accel_array_is_f_contiguous(a));
	FAILS_FREED(accel_array_reshape(a, 1, flat, 'C', &v));
	FAILS_FREED(accel_array_ravel(a, 'C', &v));
	FAILS_FREED(accel_to_device_ex(ctx->dev, a, NULL, 0, &v));
	FAILS_FREED(accel_to_device_ex(ctx->dev, a, NULL, 1, &v));
	FAILS_FREED(accel_to_device(ctx->dev, a, NULL, &v));
	FAILS_FREED(accel_device_array_like(ctx->dev, a, NULL, &v));
	FAILS_FREED(accel_pinned_array_like(ctx->dev, a, &v));
	FAILS_FREED(accel_mapped_array_like(ctx->dev, a, NULL, &v));
	FAILS_FREED(accel_array_as_memory(a, &m2));
	FAILS_FREED(accel_array_copy_to_device(a, other, NULL));
	FAILS_FREED(accel_array_copy_to_device(other, a, NULL));
	FAILS_FREED(accel_array_copy_to_host(a, h, NULL, NULL));
	FAILS_FREED(accel_array_copy_to_host(a, NULL, NULL, &v));
	FAILS_FREED(accel_array_register(ctx->dev, a, 0));
	FAILS_FREED(accel_array_unregister(a));
	OK(accel_array_release(a));
	OK(accel_array_release(other));
	OK(accel_array_release(h));
}
