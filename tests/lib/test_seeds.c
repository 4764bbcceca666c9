// SPDX-License-Identifier: MIT
/*
 * Lifetimes and extents of views, the pool's chunk policy, and the seeds'
 * semantics point by point: Numba (004), OCCA's wrapMemory (001) and
 * typed views (000).
 */
#include <dlfcn.h>

#include <accel/memory.h>

#include "suite.h"

#define U8 accel_dtype(ACCEL_UINT8)
#define I16 accel_dtype(ACCEL_INT16)
#define F32 accel_dtype(ACCEL_FLOAT32)
#define F64 accel_dtype(ACCEL_FLOAT64)

static void *mem_ptr(accel_memory_t m)
{
	struct accel_memory_info info;

	REQUIRE(accel_memory_get_info(m, &info) == ACCEL_SUCCESS);
	return info.ptr;
}

/* ------------------------------------------------------------------ */
/* 5c: raw copies into pool memory are checked against the live block */

/*
 * docs/libaccel.md: ACCEL_FAILED for any range past its allocation. A memory
 * handle's 16 bytes are a block of a pool chunk; its neighbours are other
 * blocks of the same chunk.
 */
TEST(raw_copies_stop_at_the_end_of_a_pool_block)
{
	uint8_t big[1024], back[16];
	accel_memory_t a, b;
	uint8_t *pa, *pb;
	accel_stream_t s;

	memset(big, 0xab, sizeof(big));
	REQUIRE_OK(accel_memory_create(ctx->dev, 16, U8, NULL, 0, &a));
	REQUIRE_OK(accel_memory_create(ctx->dev, 16, U8, NULL, 0, &b));
	pa = mem_ptr(a);
	pb = mem_ptr(b);
	OK(accel_device_memory_set(ctx->dev, pb, 0x11, 16));

	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy_h2d(ctx->dev, pa, big, sizeof(big)));
	FAILS(accel_memory_copy_h2d(ctx->dev, pa, big, 17));
	FAILS(accel_memory_copy_h2d(ctx->dev, pa + 8, big, 9));
	OK(accel_memory_copy_h2d(ctx->dev, pa + 8, big, 8));
	OK(accel_memory_copy_h2d(ctx->dev, pa, big, 16));
	FAILS(accel_memory_copy_d2h(ctx->dev, big, pa, sizeof(big)));
	FAILS(accel_memory_copy_d2d(ctx->dev, pa, pb, 32));
	FAILS(accel_memory_copy_d2d(ctx->dev, pb, pa, 32));
	OK(accel_memory_copy_d2d(ctx->dev, pb, pa, 16));
	FAILS(accel_device_memory_set(ctx->dev, pa, 0, 17));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	FAILS(accel_async_memory_copy_h2d(ctx->dev, s, pa, big, 17));
	FAILS(accel_async_memory_copy_d2h(ctx->dev, s, big, pa, 17));
	FAILS(accel_async_memory_copy_d2d(ctx->dev, s, pa, pb, 17));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));

	/* b was written only by the one 16-byte copy */
	OK(accel_memory_copy_d2h(ctx->dev, back, pb, 16));
	CHECK(check_bytes(back, 16, 0xab));
	OK(accel_memory_release(a));
	OK(accel_memory_release(b));
}

/* A block given back to the pool is no memory of the caller's. */
TEST(raw_copies_into_a_free_pool_block_fail)
{
	accel_pool_t pool;
	uint8_t buf[64] = { 0 };
	void *keep, *p;

	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	/* keep the chunk alive, so that the freed block stays in it */
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &keep, 64));
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &p, 64));
	OK(accel_memory_copy_h2d(ctx->dev, p, buf, 64));
	OK(accel_pool_deallocate(pool, NULL, p, 64));
	FAILS(accel_memory_copy_h2d(ctx->dev, p, buf, 64));
	FAILS(accel_memory_copy_d2h(ctx->dev, buf, p, 1));
	FAILS(accel_device_memory_set(ctx->dev, p, 0, 1));
	OK(accel_pool_deallocate(pool, NULL, keep, 64));
}

TEST_PEER(peer_copies_stop_at_the_end_of_a_pool_block)
{
	accel_memory_t a, b;
	accel_stream_t s;

	REQUIRE_OK(accel_memory_create(ctx->dev, 16, U8, NULL, 0, &a));
	REQUIRE_OK(accel_memory_create(ctx->peer, 1024, U8, NULL, 0, &b));
	FAILS(accel_memory_copy_p2p(ctx->dev, ctx->peer, mem_ptr(a),
				    mem_ptr(b), 1024));
	FAILS(accel_memory_copy_p2p(ctx->peer, ctx->dev, mem_ptr(b),
				    mem_ptr(a), 17));
	OK(accel_memory_copy_p2p(ctx->peer, ctx->dev, mem_ptr(b),
				 mem_ptr(a), 16));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	FAILS(accel_async_memory_copy_p2p(ctx->dev, ctx->peer, s, mem_ptr(a),
					  mem_ptr(b), 17));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_memory_release(a));
	OK(accel_memory_release(b));
}

/* ------------------------------------------------------------------ */
/* 5b: a view from the array interface holds the library's producer */

static void iface_1d(struct accel_array_interface *iface, void *data,
		     size_t n, const char *typestr)
{
	memset(iface, 0, sizeof(*iface));
	iface->version = 3;
	iface->ndim = 1;
	iface->shape[0] = n;
	snprintf(iface->typestr, sizeof(iface->typestr), "%s", typestr);
	iface->data = data;
}

static void *ary_data(accel_array_t a)
{
	struct accel_array_info info;

	REQUIRE(accel_array_get_info(a, &info) == ACCEL_SUCCESS);
	return info.data;
}

/*
 * Numba's as_cuda_array: the view "will acquire a reference from obj". The
 * producer released, its memory stays the view's: the pool does not hand
 * it to the next array, and writes through the view reach no one else.
 */
TEST(interface_view_keeps_its_producer_alive)
{
	const size_t n = 8, shape[1] = { 8 };
	struct accel_array_interface iface;
	float in[8], back[8];
	accel_array_t prod, view, next, host, out;

	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, F32, NULL, 'C',
				      NULL, &prod));
	REQUIRE_OK(accel_array_get_interface(prod, &iface));
	REQUIRE_OK(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	OK(accel_array_release(prod));
	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, F32, NULL, 'C',
				      NULL, &next));
	CHECK(ary_data(next) != ary_data(view));
	memset(back, 0, sizeof(back));
	REQUIRE_OK(accel_host_array(back, 1, shape, F32, NULL, 'C', 0, &out));
	OK(accel_array_copy_to_device(next, out, NULL));
	for (size_t i = 0; i < n; i++)
		in[i] = (float)i + 0.5f;
	REQUIRE_OK(accel_host_array(in, 1, shape, F32, NULL, 'C', 0, &host));
	OK(accel_array_copy_to_device(view, host, NULL));
	OK(accel_array_copy_to_host(next, out, NULL, NULL));
	CHECK(check_bytes(back, sizeof(back), 0));
	memset(back, 0, sizeof(back));
	OK(accel_array_copy_to_host(view, out, NULL, NULL));
	CHECK(!memcmp(back, in, sizeof(in)));
	OK(accel_array_release(view));
	OK(accel_array_release(next));
	OK(accel_array_release(host));
	OK(accel_array_release(out));
}

/* The same for a memory handle's storage, seen at an offset. */
TEST(interface_view_of_a_memory_handle_keeps_it_alive)
{
	struct accel_array_interface iface;
	accel_memory_t m, other;
	accel_array_t view;
	float *p;

	REQUIRE_OK(accel_memory_create(ctx->dev, 16, F32, NULL, 0, &m));
	p = mem_ptr(m);
	iface_1d(&iface, p + 4, 12, "<f4");
	REQUIRE_OK(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	CHECK(ary_data(view) == p + 4);
	OK(accel_memory_release(m));
	REQUIRE_OK(accel_memory_create(ctx->dev, 16, F32, NULL, 0, &other));
	CHECK(mem_ptr(other) != p);
	OK(accel_memory_release(other));
	OK(accel_array_release(view));
}

/* "a shape of 1000 entries over an 8-entry block is accepted": no more */
TEST(interface_extent_must_lie_in_the_memory)
{
	const size_t shape[1] = { 8 };
	struct accel_array_interface iface;
	accel_array_t prod, view;
	accel_pool_t pool;
	float *d;
	void *raw;

	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, F32, NULL, 'C',
				      NULL, &prod));
	d = ary_data(prod);
	iface_1d(&iface, d, 1000, "<f4");
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_array_from_interface(ctx->dev, &iface, 0, &view));
	CHECK(view == NULL);
	iface_1d(&iface, d, 9, "<f4");
	FAILS(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	/* strides: 8 entries 8 bytes apart span 60 bytes of 32 */
	iface_1d(&iface, d, 8, "<f4");
	iface.has_strides = 1;
	iface.strides[0] = 8;
	FAILS(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	iface.strides[0] = -4;	/* backwards from entry 0: before the memory */
	FAILS(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	/* an offset: from entry 4, 4 entries fit and 5 do not */
	iface_1d(&iface, d + 4, 5, "<f4");
	FAILS(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	iface.shape[0] = 4;
	OK(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	OK(accel_array_release(view));
	iface.has_strides = 1;
	iface.ndim = 2;
	iface.shape[0] = 2;
	iface.strides[0] = 16;
	iface.shape[1] = 2;
	iface.strides[1] = 8;	/* 2x2 of every other entry: 28 bytes of 16 */
	FAILS(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	OK(accel_array_release(prod));

	/* memory straight from the pool: its block, not the pool's chunk */
	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &raw, 32));
	iface_1d(&iface, raw, 1000, "<f4");
	FAILS(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	iface.shape[0] = 8;
	OK(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	OK(accel_array_release(view));
	OK(accel_pool_deallocate(pool, NULL, raw, 32));
}

/* ------------------------------------------------------------------ */
/* 7, OCCA (000): typed views at misaligned byte offsets are refused */

TEST(casts_refuse_a_misaligned_offset)
{
	accel_memory_t m, s, c;
	accel_dtype_t v3;

	REQUIRE_OK(accel_memory_create(ctx->dev, 16, U8, NULL, 0, &m));
	REQUIRE_OK(accel_memory_slice(m, 1, 8, &s));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_memory_cast(s, I16, &c));
	CHECK(c == NULL);
	FAILS(accel_memory_cast(s, F32, &c));
	OK(accel_memory_release(s));
	REQUIRE_OK(accel_memory_slice(m, 2, 8, &s));
	OK(accel_memory_cast(s, I16, &c));	/* offset 2: aligned */
	OK(accel_memory_release(c));
	FAILS(accel_memory_cast(s, F32, &c));	/* offset 2: not for 4 bytes */
	OK(accel_memory_release(s));
	/* opaque bytes ("|V3") need no alignment, as NumPy's void types */
	REQUIRE_OK(accel_dtype_register("seeds_rgb", 3, &v3));
	REQUIRE_OK(accel_memory_slice(m, 1, 6, &s));
	OK(accel_memory_cast(s, v3, &c));
	OK(accel_memory_release(c));
	OK(accel_memory_release(s));
	OK(accel_memory_release(m));
}

TEST(wrap_and_interface_refuse_a_misaligned_pointer)
{
	struct accel_array_interface iface;
	accel_memory_t m;
	accel_array_t view;
	char *d = dalloc(ctx, 64);

	FAILS(accel_memory_wrap(ctx->dev, d + 1, 8, I16, &m));
	OK(accel_memory_wrap(ctx->dev, d + 1, 8, U8, &m));
	OK(accel_memory_release(m));
	iface_1d(&iface, d + 1, 8, "<i2");
	FAILS(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	iface_1d(&iface, d + 2, 8, "<i2");
	OK(accel_array_from_interface(ctx->dev, &iface, 0, &view));
	OK(accel_array_release(view));
	dfree(ctx, d, 64);
}

/* ------------------------------------------------------------------ */
/* 6: the chunk policy does not freeze a transient state */

/*
 * A default pool first touched while the device is nearly full, and used
 * after the memory is freed, grows by the policy's chunks: 100 small
 * handles fit one chunk, as they do on an empty device.
 */
TEST(pool_touched_while_nearly_full_recovers)
{
	const size_t n = 100, each = 16 << 10;
	size_t max_alloc, init, filler_size, now;
	struct accel_pool_stats s;
	accel_memory_t small, h[100];
	accel_pool_t pool;
	void *filler;

	REQUIRE_OK(accel_device_init_alloc_size(ctx->dev, &init));
	if (init < n * each)
		suite_skip("the device's chunks hold fewer than 100 16 KiB handles");
	REQUIRE_OK(accel_device_max_alloc_size(ctx->dev, &max_alloc));
	REQUIRE(max_alloc > init);
	/* less free than one chunk of the policy */
	filler_size = max_alloc - init / 2;
	if (accel_device_memory_allocate(ctx->dev, &filler, filler_size) !=
	    ACCEL_SUCCESS)
		suite_skip("the device cannot be filled to nearly full");
	/* the first touch of the default pool (needs_caching() touches it) */
	needs_caching(ctx);
	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	/* growing while nearly full works, within what is free */
	REQUIRE_OK(accel_memory_create(ctx->dev, each, U8, NULL, 0, &small));
	OK(accel_memory_release(small));
	OK(accel_pool_trim(pool));
	OK(accel_device_memory_deallocate(ctx->dev, filler, filler_size));
	/* the policy the plugin reports is the device's, not that moment's */
	REQUIRE_OK(accel_device_init_alloc_size(ctx->dev, &now));
	CHECK(now == init);

	for (size_t i = 0; i < n; i++)
		REQUIRE_OK(accel_memory_create(ctx->dev, each, U8, NULL, 0,
					       &h[i]));
	OK(accel_pool_get_stats(pool, &s));
	if (s.chunks != 1 || s.reserved != init)
		printf("#   %zu chunks, %zu bytes reserved, %zu device allocations\n",
		       s.chunks, s.reserved, s.backend_allocs);
	CHECK(s.chunks == 1);
	CHECK(s.reserved == init);
	for (size_t i = 0; i < n; i++)
		OK(accel_memory_release(h[i]));
}

/* The policy reported while nearly full is the one reported when empty. */
TEST(policy_does_not_follow_free_memory)
{
	size_t init, re, max_chunk, max_alloc, v, total, free_now;
	void *filler;

	REQUIRE_OK(accel_device_init_alloc_size(ctx->dev, &init));
	REQUIRE_OK(accel_device_realloc_size(ctx->dev, &re));
	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	REQUIRE_OK(accel_device_max_alloc_size(ctx->dev, &max_alloc));
	if (accel_device_memory_allocate(ctx->dev, &filler,
					 max_alloc - init / 2) != ACCEL_SUCCESS)
		suite_skip("the device cannot be filled to nearly full");
	OK(accel_device_init_alloc_size(ctx->dev, &v));
	CHECK(v == init);
	OK(accel_device_realloc_size(ctx->dev, &v));
	CHECK(v == re);
	OK(accel_device_max_chunk_size(ctx->dev, &v));
	CHECK(v == max_chunk);
	/*
	 * Only this one is the moment's: no more than is free now (a backend
	 * may hold some back, as cuda does, so it need not be all of it).
	 */
	OK(accel_device_max_alloc_size(ctx->dev, &v));
	OK(accel_device_memory_stats(ctx->dev, &total, &free_now));
	CHECK(v <= free_now && v < max_alloc);
	OK(accel_device_memory_deallocate(ctx->dev, filler,
					  max_alloc - init / 2));
}

/* ------------------------------------------------------------------ */
/* 7, Numba (004) point by point */

static struct accel_array_info info_of(accel_array_t a)
{
	struct accel_array_info info;

	REQUIRE(accel_array_get_info(a, &info) == ACCEL_SUCCESS);
	return info;
}

/* Numba's ravel raises on a 1-D array with gaps: it would need a copy. */
TEST(ravel_of_a_strided_1d_array_fails)
{
	const size_t shape[1] = { 8 };
	const ptrdiff_t every_other[1] = { 8 };
	accel_array_t a, flat = (accel_array_t)1;

	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, F32, every_other,
				      'C', NULL, &a));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_array_ravel(a, 'C', &flat));
	CHECK(flat == NULL);
	FAILS(accel_array_ravel(a, 'A', &flat));
	OK(accel_array_release(a));
}

/* NumPy: the ravel of a 0-d array has shape (1,). */
TEST(ravel_of_a_0d_array_is_1d)
{
	accel_array_t a, flat;
	struct accel_array_info i;

	REQUIRE_OK(accel_device_array(ctx->dev, 0, NULL, F64, NULL, 'C', NULL,
				      &a));
	REQUIRE_OK(accel_array_ravel(a, 'C', &flat));
	i = info_of(flat);
	CHECK(i.ndim == 1 && i.shape[0] == 1 && i.strides[0] == 8);
	CHECK(i.data == info_of(a).data);
	OK(accel_array_release(flat));
	OK(accel_array_release(a));
}

/* Numba's default dtype is float64 (np.float64), in every constructor. */
TEST(a_null_dtype_is_float64)
{
	const size_t shape[2] = { 3, 4 };
	double host[12];
	accel_array_t a;

	REQUIRE_OK(accel_device_array(ctx->dev, 2, shape, NULL, NULL, 'C',
				      NULL, &a));
	CHECK(info_of(a).dtype == F64 && info_of(a).nbytes == 96);
	CHECK(info_of(a).strides[0] == 32);
	OK(accel_array_release(a));
	REQUIRE_OK(accel_pinned_array(ctx->dev, 2, shape, NULL, NULL, 'F', &a));
	CHECK(info_of(a).dtype == F64 && info_of(a).strides[1] == 24);
	OK(accel_array_release(a));
	REQUIRE_OK(accel_mapped_array(ctx->dev, 2, shape, NULL, NULL, 'C',
				      NULL, &a));
	CHECK(info_of(a).dtype == F64);
	OK(accel_array_release(a));
	REQUIRE_OK(accel_host_array(host, 2, shape, NULL, NULL, 'C', 0, &a));
	CHECK(info_of(a).dtype == F64 && info_of(a).nbytes == sizeof(host));
	OK(accel_array_release(a));
}

/* to_device(obj, copy=False): no copy where obj is on the device already */
TEST(to_device_ex_shares_what_is_on_the_device)
{
	const size_t shape[1] = { 16 };
	struct accel_array_info i;
	float in[16], out[16];
	accel_array_t d, m, v, h, o;
	accel_pool_t pool;
	struct accel_pool_stats before, after;

	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, F32, NULL, 'C', NULL,
				      &d));
	REQUIRE_OK(accel_pool_get_stats(pool, &before));
	/* a device array of the device: itself, whatever copy says */
	REQUIRE_OK(accel_to_device_ex(ctx->dev, d, NULL, 1, &v));
	REQUIRE_OK(accel_pool_get_stats(pool, &after));
	CHECK(v != d && info_of(v).data == info_of(d).data);
	CHECK(after.allocated == before.allocated);
	OK(accel_array_release(d));	/* v keeps the memory */
	for (size_t k = 0; k < 16; k++)
		in[k] = (float)k;
	REQUIRE_OK(accel_host_array(in, 1, shape, F32, NULL, 'C', 0, &h));
	OK(accel_array_copy_to_device(v, h, NULL));
	OK(accel_array_release(v));
	/* a mapped array: itself */
	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, shape, F32, NULL, 'C', NULL,
				      &m));
	REQUIRE_OK(accel_to_device_ex(ctx->dev, m, NULL, 1, &v));
	CHECK(info_of(v).data == info_of(m).data &&
	      info_of(v).kind == ACCEL_ARRAY_MAPPED);
	OK(accel_array_release(v));
	OK(accel_array_release(m));
	/* a host array: a new device array, copied or not */
	REQUIRE_OK(accel_to_device_ex(ctx->dev, h, NULL, 1, &v));
	i = info_of(v);
	CHECK(i.kind == ACCEL_ARRAY_DEVICE && i.data != (void *)in);
	memset(out, 0, sizeof(out));
	REQUIRE_OK(accel_host_array(out, 1, shape, F32, NULL, 'C', 0, &o));
	OK(accel_array_copy_to_host(v, o, NULL, NULL));
	CHECK(!memcmp(in, out, sizeof(in)));
	OK(accel_array_release(v));
	REQUIRE_OK(accel_to_device_ex(ctx->dev, h, NULL, 0, &v));
	i = info_of(v);
	CHECK(i.kind == ACCEL_ARRAY_DEVICE && i.shape[0] == 16 &&
	      i.dtype == F32 && i.data != (void *)in);
	OK(accel_array_release(v));
	FAILS(accel_to_device_ex(ctx->dev, NULL, NULL, 0, &v));
	OK(accel_array_release(h));
	OK(accel_array_release(o));
}

static size_t one_shape[1] = { 256 };

/* mapped_array(portable, wc): flags with a documented meaning */
TEST(mapped_array_flags)
{
	accel_array_t a, d, h;
	struct accel_array_info i;
	uint8_t back[256], in[256];

	FAILS(accel_mapped_array_flags(ctx->dev, 1, one_shape, U8, NULL, 'C',
				       NULL, 1u << 7, &a));
	for (unsigned int f = 0; f <= ACCEL_ARRAY_FLAGS_VALID; f++) {
		REQUIRE_OK(accel_mapped_array_flags(ctx->dev, 1, one_shape, U8,
						    NULL, 'C', NULL, f, &a));
		i = info_of(a);
		CHECK(i.kind == ACCEL_ARRAY_MAPPED && i.nbytes == 256);
		CHECK(accel_array_has_interface(a));
		/* the host writes it, the device copies it */
		fill_pattern(in, 256, f);
		memcpy(i.data, in, 256);
		REQUIRE_OK(accel_to_device(ctx->dev, a, NULL, &d));
		memset(back, 0, sizeof(back));
		REQUIRE_OK(accel_host_array(back, 1, one_shape, U8, NULL, 'C',
					    0, &h));
		OK(accel_array_copy_to_host(d, h, NULL, NULL));
		CHECK(!memcmp(back, in, 256));
		OK(accel_array_release(h));
		OK(accel_array_release(d));
		OK(accel_array_release(a));
	}
}

/* Portable: usable by every device, as pinned memory of each. */
TEST_PEER(portable_mapped_arrays_are_pinned_for_every_device)
{
	struct accel_pointer_attributes at;
	accel_array_t a;
	uint8_t *d, back[256];
	void *data;

	REQUIRE_OK(accel_mapped_array_flags(ctx->dev, 1, one_shape, U8, NULL,
					    'C', NULL, ACCEL_ARRAY_PORTABLE,
					    &a));
	data = info_of(a).data;
	fill_pattern(data, 256, 3);
	REQUIRE_OK(accel_device_memory_allocate(ctx->peer, (void **)&d, 256));
	OK(accel_memory_copy_h2d(ctx->peer, d, data, 256));
	OK(accel_memory_copy_d2h(ctx->peer, back, d, 256));
	CHECK(check_pattern(back, 256, 3));
	/* the peer has it registered already */
	FAILS(accel_host_memory_register(ctx->peer, data, 256));
	/* ordinary pages pinned by each device, the first of them @dev */
	OK(accel_pointer_get_attributes(data, &at));
	CHECK(at.type == ACCEL_POINTER_REGISTERED_HOST &&
	      at.device == ctx->dev->id);
	OK(accel_array_release(a));
	OK(accel_pointer_get_attributes(data, &at));
	CHECK(at.type == ACCEL_POINTER_UNREGISTERED);	/* on neither */
	/*
	 * without the flag it is @dev's own pinned memory (which another
	 * device may not be able to pin at all: the accel driver's is not)
	 */
	REQUIRE_OK(accel_mapped_array_flags(ctx->dev, 1, one_shape, U8, NULL,
					    'C', NULL, 0, &a));
	data = info_of(a).data;
	OK(accel_pointer_get_attributes(data, &at));
	CHECK(at.type == ACCEL_POINTER_PINNED_HOST && at.device == ctx->dev->id);
	OK(accel_array_release(a));
	OK(accel_device_memory_deallocate(ctx->peer, d, 256));
}

/* ------------------------------------------------------------------ */
/* 7, OCCA wrapMemory (001): "on CUDA, the pointer allocated through its API" */

/* The CUDA driver functions needed, declared by hand: no CUDA headers. */
struct cuda_mem_api {
	int (*init)(unsigned int flags);
	int (*device_get)(int *dev, int ordinal);
	int (*primary_retain)(void **ctx, int dev);
	int (*primary_release)(int dev);
	int (*ctx_push)(void *ctx);
	int (*ctx_pop)(void **ctx);
	int (*mem_alloc)(unsigned long long *p, size_t size);
	int (*mem_free)(unsigned long long p);
};

static void load_cuda_mem(struct cuda_mem_api *cu)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);

	REQUIRE(lib);
	*(void **)&cu->init = dlsym(lib, "cuInit");
	*(void **)&cu->device_get = dlsym(lib, "cuDeviceGet");
	*(void **)&cu->primary_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&cu->primary_release = dlsym(lib, "cuDevicePrimaryCtxRelease_v2");
	*(void **)&cu->ctx_push = dlsym(lib, "cuCtxPushCurrent_v2");
	*(void **)&cu->ctx_pop = dlsym(lib, "cuCtxPopCurrent_v2");
	*(void **)&cu->mem_alloc = dlsym(lib, "cuMemAlloc_v2");
	*(void **)&cu->mem_free = dlsym(lib, "cuMemFree_v2");
	REQUIRE(cu->init && cu->device_get && cu->primary_retain &&
		cu->primary_release && cu->ctx_push && cu->ctx_pop &&
		cu->mem_alloc && cu->mem_free);
}

/*
 * Memory from cuMemAlloc, not from libaccel: wrapped, copied into and out
 * of, described, with its extent checked against the driver's range.
 */
TEST(cuda_foreign_device_pointers_are_wrapped)
{
	const size_t n = 1024;
	struct accel_pointer_attributes at;
	struct cuda_mem_api cu;
	unsigned long long p = 0;
	float in[1024], out[1024];
	accel_memory_t m;
	void *pctx, *unused;
	int dev;

	if (strncmp(ctx->name, "cuda:", 5))
		suite_skip("a test of the cuda backend");
	load_cuda_mem(&cu);
	REQUIRE(cu.init(0) == 0);
	REQUIRE(cu.device_get(&dev, atoi(ctx->name + 5)) == 0);
	REQUIRE(cu.primary_retain(&pctx, dev) == 0);
	REQUIRE(cu.ctx_push(pctx) == 0);
	REQUIRE(cu.mem_alloc(&p, n * sizeof(float)) == 0);
	cu.ctx_pop(&unused);

	for (size_t i = 0; i < n; i++)
		in[i] = (float)i / 8;
	REQUIRE_OK(accel_memory_wrap(ctx->dev, (void *)(uintptr_t)p, n, F32,
				     &m));
	OK(accel_memory_copy_from(m, in, ACCEL_ALL, 0));
	OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
	CHECK(!memcmp(in, out, sizeof(in)));
	OK(accel_memory_release(m));
	/* past the driver's range: refused */
	FAILS(accel_memory_wrap(ctx->dev, (void *)(uintptr_t)p, n + 1, F32,
				&m));
	/* raw copies take it too, within its range */
	OK(accel_memory_copy_h2d(ctx->dev, (void *)(uintptr_t)(p + 4), in,
				 n * sizeof(float) - 4));
	FAILS(accel_memory_copy_h2d(ctx->dev, (void *)(uintptr_t)(p + 4), in,
				    n * sizeof(float)));
	OK(accel_pointer_get_attributes((void *)(uintptr_t)(p + 8), &at));
	CHECK(at.type == ACCEL_POINTER_DEVICE && at.device == ctx->dev->id &&
	      at.base == (void *)(uintptr_t)p &&
	      at.size == n * sizeof(float) && !at.pooled);

	REQUIRE(cu.ctx_push(pctx) == 0);
	CHECK(cu.mem_free(p) == 0);
	cu.ctx_pop(&unused);
	cu.primary_release(dev);
}
