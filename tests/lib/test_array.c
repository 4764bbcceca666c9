// SPDX-License-Identifier: MIT
/*
 * Device arrays and transfers, sentence by sentence of Numba's memory
 * management page (seed 004): device_array, device_array_like, to_device
 * with and without a stream, copy_to_host to a new or an existing array,
 * synchronous unless a stream is given.
 */
#include <accel/memory.h>

#include "suite.h"

#define F64 accel_dtype(ACCEL_FLOAT64)
#define I64 accel_dtype(ACCEL_INT64)

/* np.arange(n) as int64, over caller memory */
static accel_array_t arange(int64_t *buf, size_t n)
{
	accel_array_t a;

	for (size_t i = 0; i < n; i++)
		buf[i] = (int64_t)i;
	REQUIRE_OK(accel_host_array(buf, 1, &n, I64, NULL, 'C', 0, &a));
	return a;
}

static struct accel_array_info info_of(accel_array_t a)
{
	struct accel_array_info info;

	REQUIRE_OK(accel_array_get_info(a, &info));
	return info;
}

/* "Allocate an empty device ndarray. Similar to numpy.empty()" */
TEST(device_array_is_numpy_empty_on_the_device)
{
	const size_t shape[2] = { 3, 4 };
	const ptrdiff_t wide[2] = { 64, 8 };
	struct accel_array_info i;
	accel_array_t a, f, s;

	REQUIRE_OK(accel_device_array(ctx->dev, 2, shape, F64, NULL, 'C', NULL, &a));
	i = info_of(a);
	CHECK(i.kind == ACCEL_ARRAY_DEVICE && i.device == ctx->dev->id);
	CHECK(i.ndim == 2 && i.shape[0] == 3 && i.shape[1] == 4);
	CHECK(i.strides[0] == 32 && i.strides[1] == 8);
	CHECK(i.size == 12 && i.nbytes == 96 && i.dtype == F64 && i.data);
	CHECK(!i.readonly && !i.stream);
	/* the data is device memory of the device */
	OK(accel_device_memory_set(ctx->dev, i.data, 0, i.nbytes));
	CHECK(pool_blocks(ctx) == 1);
	REQUIRE_OK(accel_device_array(ctx->dev, 2, shape, F64, NULL, 'F', NULL, &f));
	i = info_of(f);
	CHECK(i.strides[0] == 8 && i.strides[1] == 24);
	/* given strides are kept */
	REQUIRE_OK(accel_device_array(ctx->dev, 2, shape, F64, wide, 'C', NULL, &s));
	i = info_of(s);
	CHECK(i.strides[0] == 64 && i.strides[1] == 8);
	OK(accel_array_release(a));
	OK(accel_array_release(f));
	OK(accel_array_release(s));
	CHECK(pool_blocks(ctx) == 0);
}

TEST(device_array_mistakes_are_refused)
{
	size_t shape[ACCEL_MAX_DIMS + 1], huge[2] = { SIZE_MAX / 2, 4 };
	const ptrdiff_t neg[2] = { -8, 8 };
	accel_array_t a = (accel_array_t)1;

	for (int i = 0; i <= ACCEL_MAX_DIMS; i++)
		shape[i] = 1;
	FAILS(accel_device_array(ctx->dev, ACCEL_MAX_DIMS + 1, shape, F64, NULL, 'C', NULL, &a));
	CHECK(a == NULL);
	FAILS(accel_device_array(ctx->dev, -1, shape, F64, NULL, 'C', NULL, &a));
	FAILS(accel_device_array(ctx->dev, 2, NULL, F64, NULL, 'C', NULL, &a));
	FAILS(accel_device_array(ctx->dev, 2, shape, F64, NULL, 'X', NULL, &a));
	FAILS(accel_device_array(ctx->dev, 2, shape, F64, neg, 'C', NULL, &a));
	FAILS(accel_device_array(ctx->dev, 2, huge, F64, NULL, 'C', NULL, &a));
	FAILS(accel_device_array(NULL, 2, shape, F64, NULL, 'C', NULL, &a));
	FAILS(accel_device_array(ctx->dev, 2, shape, F64, NULL, 'C', NULL, NULL));
	/* 32 dimensions and 0 (a scalar) are fine */
	OK(accel_device_array(ctx->dev, ACCEL_MAX_DIMS, shape, F64, NULL, 'C', NULL, &a));
	CHECK(info_of(a).size == 1);
	OK(accel_array_release(a));
	OK(accel_device_array(ctx->dev, 0, NULL, F64, NULL, 'C', NULL, &a));
	CHECK(info_of(a).size == 1 && info_of(a).nbytes == 8);
	OK(accel_array_release(a));
	FAILS(accel_array_release(a));
}

/* An empty axis makes the array empty, not its shape's overflow acceptable. */
TEST(empty_axis_does_not_hide_an_overflow)
{
	size_t huge[3] = { 0, 2, (size_t)1 << 60 };
	size_t wide[2] = { (size_t)1 << 62, 0 };
	size_t fine[2] = { 0, 5 };
	struct accel_array_info info;
	accel_array_t a;

	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_array(ctx->dev, 3, huge, NULL, NULL, 'C', NULL,
				      &a));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_array(ctx->dev, 2, wide, NULL, NULL, 'F', NULL,
				      &a));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_host_array(NULL, 3, huge, NULL, NULL, 'C', 0, &a));
	REQUIRE_OK(accel_device_array(ctx->dev, 2, fine, NULL, NULL, 'C', NULL,
				      &a));
	OK(accel_array_get_info(a, &info));
	CHECK(info.strides[0] == 40 && info.strides[1] == 8 && !info.size);
	OK(accel_array_release(a));
}

/* "Call device_array() with information from the array" */
TEST(device_array_like_takes_shape_dtype_and_order)
{
	const size_t shape[3] = { 2, 3, 4 };
	const ptrdiff_t gappy[3] = { 200, 40, 8 };
	double *buf = xmalloc(400);
	struct accel_array_info i;
	accel_array_t f, g, d;

	REQUIRE_OK(accel_host_array(NULL, 3, shape, F64, NULL, 'F', 0, &f));
	REQUIRE_OK(accel_device_array_like(ctx->dev, f, NULL, &d));
	i = info_of(d);
	CHECK(i.kind == ACCEL_ARRAY_DEVICE && i.dtype == F64 && i.ndim == 3);
	CHECK(i.shape[0] == 2 && i.shape[1] == 3 && i.shape[2] == 4);
	CHECK(accel_array_is_f_contiguous(d) && !accel_array_is_c_contiguous(d));
	OK(accel_array_release(d));
	/* a non-contiguous array gives a contiguous one */
	REQUIRE_OK(accel_host_array(buf, 3, shape, F64, gappy, 'C', 0, &g));
	REQUIRE_OK(accel_device_array_like(ctx->dev, g, NULL, &d));
	i = info_of(d);
	CHECK(i.strides[0] == 96 && i.strides[1] == 32 && i.strides[2] == 8);
	OK(accel_array_release(d));
	FAILS(accel_device_array_like(ctx->dev, NULL, NULL, &d));
	OK(accel_array_release(f));
	OK(accel_array_release(g));
	free(buf);
}

/* "To copy host->device a numpy array" ... "To copy device->host" */
TEST(to_device_and_copy_to_host)
{
	int64_t buf[10];
	accel_array_t ary = arange(buf, 10), d, h;
	struct accel_array_info i;

	REQUIRE_OK(accel_to_device(ctx->dev, ary, NULL, &d));
	i = info_of(d);
	CHECK(i.kind == ACCEL_ARRAY_DEVICE && i.size == 10 && i.dtype == I64);
	memset(buf, 0, sizeof(buf));	/* the copy is the device's own */
	REQUIRE_OK(accel_array_copy_to_host(d, NULL, NULL, &h));
	i = info_of(h);
	CHECK(i.kind == ACCEL_ARRAY_HOST && i.device == -1 && i.size == 10);
	for (int k = 0; k < 10; k++)
		CHECK(((int64_t *)i.data)[k] == k);
	OK(accel_array_release(h));
	OK(accel_array_release(d));
	OK(accel_array_release(ary));
}

/* "To copy device->host to an existing array" */
TEST(copy_to_host_into_an_existing_array)
{
	int64_t buf[10], out[10] = { 0 };
	accel_array_t ary = arange(buf, 10), d, e, got = NULL;
	struct accel_array_info i;
	size_t shape = 10;

	REQUIRE_OK(accel_to_device(ctx->dev, ary, NULL, &d));
	i = info_of(d);
	/* ary = np.empty(shape=d_ary.shape, dtype=d_ary.dtype) */
	REQUIRE_OK(accel_host_array(out, i.ndim, i.shape, i.dtype, NULL, 'C', 0, &e));
	/* "Always returns the host array" */
	REQUIRE_OK(accel_array_copy_to_host(d, e, NULL, &got));
	CHECK(got == e);
	for (int k = 0; k < 10; k++)
		CHECK(out[k] == k);
	OK(accel_array_copy_to_host(d, e, NULL, NULL));
	OK(accel_array_release(e));
	/* the destination must match */
	shape = 9;
	REQUIRE_OK(accel_host_array(out, 1, &shape, I64, NULL, 'C', 0, &e));
	FAILS(accel_array_copy_to_host(d, e, NULL, NULL));
	OK(accel_array_release(e));
	shape = 10;
	REQUIRE_OK(accel_host_array(out, 1, &shape, F64, NULL, 'C', 0, &e));
	FAILS(accel_array_copy_to_host(d, e, NULL, NULL));
	OK(accel_array_release(e));
	memset(out, 0, sizeof(out));
	REQUIRE_OK(accel_host_array(out, 1, &shape, I64, NULL, 'C', 1, &e));
	FAILS(accel_array_copy_to_host(d, e, NULL, NULL));
	CHECK(strstr(accel_get_last_error(), "read-only") != NULL);
	CHECK(check_bytes(out, sizeof(out), 0));
	OK(accel_array_release(e));
	/* a device array is no host array */
	REQUIRE_OK(accel_device_array_like(ctx->dev, d, NULL, &e));
	FAILS(accel_array_copy_to_host(d, e, NULL, NULL));
	FAILS(accel_array_copy_to_host(d, NULL, NULL, NULL));
	OK(accel_array_release(e));
	OK(accel_array_release(d));
	OK(accel_array_release(ary));
}

/*
 * memory.h, accel_host_array(): "@readonly: 1 if the array must not be
 * written (copies into it fail)". The flag is the array's, whoever owns
 * the memory: over new host memory (@data NULL) the array says readonly
 * too, and a copy from the device into it fails, synchronous or queued,
 * as into the caller's read-only memory above, and writes nothing.
 */
TEST(read_only_host_array_over_new_memory_refuses_copies)
{
	int64_t buf[10], before[10];
	accel_array_t ary = arange(buf, 10), d, ro;
	struct accel_array_info i;
	const size_t n = 10;
	accel_stream_t s;

	REQUIRE_OK(accel_to_device(ctx->dev, ary, NULL, &d));
	REQUIRE_OK(accel_host_array(NULL, 1, &n, I64, NULL, 'C', 1, &ro));
	i = info_of(ro);
	CHECK(i.readonly == 1 && i.kind == ACCEL_ARRAY_HOST && i.data);
	memcpy(before, i.data, sizeof(before));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_array_copy_to_host(d, ro, NULL, NULL));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_array_copy_to_host(d, ro, s, NULL));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(!memcmp(i.data, before, sizeof(before)));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_array_release(ro));
	OK(accel_array_release(d));
	OK(accel_array_release(ary));
}

/* "To enqueue the transfer to a stream" (both ways) */
TEST(transfers_on_a_stream)
{
	const size_t n = 1 << 16;
	int64_t *buf = xmalloc(n * 8);
	accel_array_t ary = arange(buf, n), d, h;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_to_device(ctx->dev, ary, s, &d));
	CHECK(info_of(d).stream == s);
	REQUIRE_OK(accel_array_copy_to_host(d, NULL, s, &h));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(!memcmp(info_of(h).data, buf, n * 8));
	/* into an existing array, on the stream */
	memset(info_of(h).data, 0, n * 8);
	OK(accel_array_copy_to_host(d, h, s, NULL));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(!memcmp(info_of(h).data, buf, n * 8));
	OK(accel_stream_destroy(ctx->dev, s));
	/* the array outlives the stream it was made for */
	OK(accel_array_copy_to_host(d, h, NULL, NULL));
	OK(accel_array_release(h));
	OK(accel_array_release(d));
	OK(accel_array_release(ary));
	free(buf);
}

/* "Otherwise, the transfer is synchronous: the function returns after the copy is finished" */
TEST(copy_to_host_without_a_stream_is_synchronous)
{
	const size_t n = 1 << 20;
	int64_t *buf = xmalloc(n * 8), *out = xmalloc(n * 8);
	accel_array_t ary = arange(buf, n), d, e;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_to_device(ctx->dev, ary, s, &d));	/* queued */
	REQUIRE_OK(accel_host_array(out, 1, &n, I64, NULL, 'C', 0, &e));
	OK(accel_array_copy_to_host(d, e, NULL, NULL));
	CHECK(!memcmp(out, buf, n * 8));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_array_release(e));
	OK(accel_array_release(d));
	OK(accel_array_release(ary));
	free(buf);
	free(out);
}

TEST(copy_to_device_into_an_existing_array)
{
	int64_t buf[10], other[10];
	accel_array_t ary = arange(buf, 10), d, d2, h;

	for (int k = 0; k < 10; k++)
		other[k] = 100 - k;
	REQUIRE_OK(accel_device_array_like(ctx->dev, ary, NULL, &d));
	OK(accel_array_copy_to_device(d, ary, NULL));
	REQUIRE_OK(accel_device_array_like(ctx->dev, ary, NULL, &d2));
	OK(accel_array_copy_to_device(d2, d, NULL));	/* device to device */
	REQUIRE_OK(accel_array_copy_to_host(d2, NULL, NULL, &h));
	CHECK(!memcmp(info_of(h).data, buf, sizeof(buf)));
	/* a host array is no destination */
	FAILS(accel_array_copy_to_device(h, d, NULL));
	memcpy(buf, other, sizeof(buf));
	OK(accel_array_copy_to_device(d, ary, NULL));
	OK(accel_array_copy_to_host(d, h, NULL, NULL));
	CHECK(!memcmp(info_of(h).data, other, sizeof(other)));
	OK(accel_array_release(h));
	OK(accel_array_release(d2));
	OK(accel_array_release(d));
	OK(accel_array_release(ary));
}

TEST(zero_size_arrays_copy_nothing)
{
	const size_t shape[2] = { 0, 5 };
	accel_array_t h, d, back;
	struct accel_array_info i;

	REQUIRE_OK(accel_host_array(NULL, 2, shape, F64, NULL, 'C', 0, &h));
	REQUIRE_OK(accel_to_device(ctx->dev, h, NULL, &d));
	i = info_of(d);
	CHECK(i.size == 0 && i.nbytes == 0 && i.data == NULL);
	CHECK(accel_array_is_c_contiguous(d) && accel_array_is_f_contiguous(d));
	CHECK(pool_blocks(ctx) == 0);
	REQUIRE_OK(accel_array_copy_to_host(d, NULL, NULL, &back));
	CHECK(info_of(back).size == 0 && info_of(back).shape[1] == 5);
	OK(accel_array_copy_to_device(d, h, NULL));
	OK(accel_array_release(back));
	OK(accel_array_release(d));
	OK(accel_array_release(h));
}

/* a strided host view goes over with its strides, as in Numba */
TEST(strided_arrays_keep_their_layout)
{
	int64_t buf[20];
	const size_t n = 10;
	const ptrdiff_t every_other = 16;
	accel_array_t h, d, back;
	struct accel_array_info i;

	for (int k = 0; k < 20; k++)
		buf[k] = k;
	REQUIRE_OK(accel_host_array(buf, 1, &n, I64, &every_other, 'C', 0, &h));
	CHECK(!accel_array_is_c_contiguous(h));
	REQUIRE_OK(accel_to_device(ctx->dev, h, NULL, &d));
	CHECK(info_of(d).strides[0] == 16);
	REQUIRE_OK(accel_array_copy_to_host(d, NULL, NULL, &back));
	i = info_of(back);
	for (size_t k = 0; k < n; k++)
		CHECK(*(int64_t *)((char *)i.data + k * 16) == (int64_t)(2 * k));
	OK(accel_array_release(back));
	OK(accel_array_release(d));
	OK(accel_array_release(h));
}

/*
 * Misaligned typed views are refused: every stride of an axis with more
 * than one entry is a multiple of the dtype's alignment too, or the
 * entries after the first are misaligned.
 */
TEST(misaligned_strides_refused)
{
	accel_dtype_t i32 = accel_dtype(ACCEL_INT32);
	struct accel_array_interface ifc;
	accel_array_t a, v;
	accel_memory_t m;

	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_array(ctx->dev, 1, (size_t[]){ 4 }, i32,
				      (ptrdiff_t[]){ 3 }, 'C', NULL, &a));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_array(ctx->dev, 2, (size_t[]){ 2, 3 }, i32,
				      (ptrdiff_t[]){ 14, 4 }, 'C', NULL, &a));
	REQUIRE_OK(accel_memory_create(ctx->dev, 16, i32, NULL, 0, &m));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_as_array(m, 1, (size_t[]){ 5 },
					 (ptrdiff_t[]){ 5 }, 'C', &a));
	/* aligned strides, and any stride of an axis of one entry, are fine */
	OK(accel_memory_as_array(m, 2, (size_t[]){ 1, 4 },
				 (ptrdiff_t[]){ 3, 8 }, 'C', &a));
	OK(accel_array_release(a));
	REQUIRE_OK(accel_device_array(ctx->dev, 1, (size_t[]){ 4 }, i32,
				      (ptrdiff_t[]){ 8 }, 'C', NULL, &a));
	REQUIRE_OK(accel_array_get_interface(a, &ifc));
	ifc.strides[0] = 6;
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_array_from_interface(ctx->dev, &ifc, 0, &v));
	ifc.strides[0] = 4;
	OK(accel_array_from_interface(ctx->dev, &ifc, 0, &v));
	OK(accel_array_release(v));
	OK(accel_array_release(a));
	OK(accel_memory_release(m));
}

/* "Allocate and transfer a numpy ndarray or structured scalar to the device" */
TEST(to_device_a_structured_scalar)
{
	struct { int32_t id; float x, y; } point = { 7, 1.5f, -2.5f }, back;
	accel_dtype_t pt;
	accel_array_t h, d, hb;
	struct accel_array_info i;

	REQUIRE_OK(accel_dtype_register("point", sizeof(point), &pt));
	REQUIRE_OK(accel_host_array(&point, 0, NULL, pt, NULL, 'C', 0, &h));
	REQUIRE_OK(accel_to_device(ctx->dev, h, NULL, &d));
	i = info_of(d);
	CHECK(i.ndim == 0 && i.size == 1 && i.nbytes == sizeof(point));
	REQUIRE_OK(accel_array_copy_to_host(d, NULL, NULL, &hb));
	memcpy(&back, info_of(hb).data, sizeof(back));
	CHECK(back.id == 7 && back.x == 1.5f && back.y == -2.5f);
	OK(accel_array_release(hb));
	OK(accel_array_release(d));
	OK(accel_array_release(h));
}
