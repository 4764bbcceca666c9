// SPDX-License-Identifier: MIT
/*
 * Array views and the array interface, sentence by sentence of Numba's
 * memory management page (seed 004): is_c_contiguous, is_f_contiguous,
 * ravel and reshape without copying, the cuda array interface,
 * as_cuda_array and is_cuda_array.
 */
#include <accel/memory.h>

#include "suite.h"

#define F64 accel_dtype(ACCEL_FLOAT64)
#define I64 accel_dtype(ACCEL_INT64)

static struct accel_array_info info_of(accel_array_t a)
{
	struct accel_array_info info;

	REQUIRE_OK(accel_array_get_info(a, &info));
	return info;
}

static accel_array_t device_2d(struct suite_ctx *ctx, size_t r, size_t c,
			       char order)
{
	const size_t shape[2] = { r, c };
	accel_array_t a;

	REQUIRE_OK(accel_device_array(ctx->dev, 2, shape, F64, NULL, order, NULL, &a));
	return a;
}

/* "Returns True if the array is C-contiguous" / "Fortran-contiguous" */
TEST(contiguity_follows_numpy)
{
	const size_t row[2] = { 1, 5 }, shape[2] = { 3, 4 };
	const ptrdiff_t gappy[2] = { 64, 8 };
	accel_array_t c = device_2d(ctx, 3, 4, 'C'), f = device_2d(ctx, 3, 4, 'F');
	accel_array_t r, g, flat;

	CHECK(accel_array_is_c_contiguous(c) && !accel_array_is_f_contiguous(c));
	CHECK(!accel_array_is_c_contiguous(f) && accel_array_is_f_contiguous(f));
	/* axes of length 1 do not count */
	REQUIRE_OK(accel_device_array(ctx->dev, 2, row, F64, NULL, 'C', NULL, &r));
	CHECK(accel_array_is_c_contiguous(r) && accel_array_is_f_contiguous(r));
	REQUIRE_OK(accel_device_array(ctx->dev, 2, shape, F64, gappy, 'C', NULL, &g));
	CHECK(!accel_array_is_c_contiguous(g) && !accel_array_is_f_contiguous(g));
	REQUIRE_OK(accel_array_ravel(c, 'C', &flat));
	CHECK(accel_array_is_c_contiguous(flat) && accel_array_is_f_contiguous(flat));
	CHECK(!accel_array_is_c_contiguous(NULL) && !accel_array_is_f_contiguous(NULL));
	OK(accel_array_release(flat));
	OK(accel_array_release(g));
	OK(accel_array_release(r));
	OK(accel_array_release(f));
	OK(accel_array_release(c));
}

/* "Flattens a contiguous array without changing its contents" */
TEST(ravel_flattens_without_copying)
{
	accel_array_t c = device_2d(ctx, 3, 4, 'C'), f = device_2d(ctx, 3, 4, 'F');
	accel_array_t flat, again;
	struct accel_array_info i;
	size_t blocks = pool_blocks(ctx);

	REQUIRE_OK(accel_array_ravel(c, 'C', &flat));
	i = info_of(flat);
	CHECK(i.ndim == 1 && i.shape[0] == 12 && i.strides[0] == 8);
	CHECK(i.data == info_of(c).data);
	CHECK(pool_blocks(ctx) == blocks);	/* no copy */
	REQUIRE_OK(accel_array_ravel(flat, 'F', &again));	/* 1-d: itself */
	CHECK(info_of(again).data == i.data);
	OK(accel_array_release(again));
	OK(accel_array_release(flat));
	REQUIRE_OK(accel_array_ravel(f, 'F', &flat));
	CHECK(info_of(flat).shape[0] == 12);
	OK(accel_array_release(flat));
	REQUIRE_OK(accel_array_ravel(f, 'A', &flat));
	OK(accel_array_release(flat));
	/* "If the array is not contiguous, raises an exception" */
	FAILS(accel_array_ravel(f, 'C', &flat));
	CHECK(strstr(accel_get_last_error(), "copy") != NULL);
	CHECK(flat == NULL);
	FAILS(accel_array_ravel(c, 'F', &flat));
	FAILS(accel_array_ravel(c, 'K', &flat));
	OK(accel_array_release(c));
	OK(accel_array_release(f));
}

/* the seed's example: d_arr.reshape(2, 5, order='F') of 2 * arange(10) */
TEST(reshape_in_fortran_order_like_the_example)
{
	int64_t buf[10];
	const size_t n = 10, two_by_five[2] = { 2, 5 };
	static const int64_t want[2][5] = { { 0, 4, 8, 12, 16 }, { 2, 6, 10, 14, 18 } };
	accel_array_t h, d, r, back;
	struct accel_array_info i;

	for (int k = 0; k < 10; k++)
		buf[k] = 2 * k;
	REQUIRE_OK(accel_host_array(buf, 1, &n, I64, NULL, 'C', 0, &h));
	REQUIRE_OK(accel_to_device(ctx->dev, h, NULL, &d));
	REQUIRE_OK(accel_array_reshape(d, 2, two_by_five, 'F', &r));
	i = info_of(r);
	CHECK(i.data == info_of(d).data);	/* "without changing its contents" */
	CHECK(i.strides[0] == 8 && i.strides[1] == 16);
	REQUIRE_OK(accel_array_copy_to_host(r, NULL, NULL, &back));
	i = info_of(back);
	for (size_t a = 0; a < 2; a++)
		for (size_t b = 0; b < 5; b++)
			CHECK(*(int64_t *)((char *)i.data + a * i.strides[0] +
					   b * i.strides[1]) == want[a][b]);
	OK(accel_array_release(back));
	OK(accel_array_release(r));
	OK(accel_array_release(d));
	OK(accel_array_release(h));
}

TEST(reshape_rules)
{
	const size_t ok3[3] = { 2, (size_t)-1, 3 }, two[2] = { (size_t)-1, (size_t)-1 };
	const size_t bad[2] = { 5, 5 }, odd[2] = { 5, (size_t)-1 }, same[2] = { 4, 6 };
	const ptrdiff_t gappy[2] = { 64, 8 };
	accel_array_t c = device_2d(ctx, 4, 6, 'C'), g, r;
	struct accel_array_info i;

	REQUIRE_OK(accel_array_reshape(c, 3, ok3, 'C', &r));
	i = info_of(r);
	CHECK(i.shape[1] == 4 && i.strides[0] == 96 && i.strides[1] == 24 &&
	      i.strides[2] == 8);
	OK(accel_array_release(r));
	FAILS(accel_array_reshape(c, 2, two, 'C', &r));
	FAILS(accel_array_reshape(c, 2, bad, 'C', &r));
	FAILS(accel_array_reshape(c, 2, odd, 'C', &r));
	FAILS(accel_array_reshape(c, 2, (size_t[]){ 6, 4 }, 'F', &r));	/* C data */
	FAILS(accel_array_reshape(c, 2, NULL, 'C', &r));
	/* a non-contiguous array reshapes only to its own shape */
	REQUIRE_OK(accel_device_array(ctx->dev, 2, same, F64, gappy, 'C', NULL, &g));
	FAILS(accel_array_reshape(g, 1, (size_t[]){ 24 }, 'A', &r));
	CHECK(strstr(accel_get_last_error(), "copy") != NULL);
	REQUIRE_OK(accel_array_reshape(g, 2, same, 'C', &r));
	CHECK(info_of(r).strides[0] == 64);
	OK(accel_array_release(r));
	OK(accel_array_release(g));
	OK(accel_array_release(c));
}

/* A gapped array reshaped to its own shape is a view with its strides. */
TEST(reshape_to_the_same_shape_keeps_the_strides)
{
	size_t shape[1] = { 4 }, two[2] = { 2, 2 };
	ptrdiff_t gaps[1] = { 16 };
	struct accel_array_info info;
	accel_array_t a, v;

	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, NULL, gaps, 'C', NULL,
				      &a));
	REQUIRE_OK(accel_array_reshape(a, 1, shape, 'C', &v));
	OK(accel_array_get_info(v, &info));
	CHECK(info.ndim == 1 && info.shape[0] == 4 && info.strides[0] == 16);
	OK(accel_array_release(v));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_array_reshape(a, 2, two, 'C', &v));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_array_ravel(a, 'C', &v));
	OK(accel_array_release(a));
}

TEST(views_outlive_the_array_they_came_from)
{
	int64_t buf[12];
	const size_t n = 12, shape[2] = { 3, 4 };
	accel_array_t h, d, r, back;

	for (int k = 0; k < 12; k++)
		buf[k] = k * k;
	REQUIRE_OK(accel_host_array(buf, 1, &n, I64, NULL, 'C', 0, &h));
	REQUIRE_OK(accel_to_device(ctx->dev, h, NULL, &d));
	REQUIRE_OK(accel_array_reshape(d, 2, shape, 'C', &r));
	OK(accel_array_release(d));
	CHECK(pool_blocks(ctx) == 1);
	REQUIRE_OK(accel_array_copy_to_host(r, NULL, NULL, &back));
	CHECK(!memcmp(info_of(back).data, buf, sizeof(buf)));
	OK(accel_array_release(r));
	CHECK(pool_blocks(ctx) == 0);
	OK(accel_array_release(back));
	OK(accel_array_release(h));
}

/* "DeviceNDArray defines the cuda array interface" */
TEST(device_arrays_export_the_array_interface)
{
	accel_array_t c = device_2d(ctx, 3, 4, 'C'), f = device_2d(ctx, 3, 4, 'F');
	accel_array_t h, s;
	struct accel_array_interface ai;
	accel_stream_t st;

	CHECK(accel_array_has_interface(c));
	REQUIRE_OK(accel_array_get_interface(c, &ai));
	CHECK(ai.version == 3 && ai.ndim == 2 && ai.shape[0] == 3 && ai.shape[1] == 4);
	CHECK(!strcmp(ai.typestr, "<f8") && ai.data == info_of(c).data);
	CHECK(!ai.readonly && !ai.has_strides && !ai.stream);
	REQUIRE_OK(accel_array_get_interface(f, &ai));
	CHECK(ai.has_strides && ai.strides[0] == 8 && ai.strides[1] == 24);
	/* the stream an array was made for */
	REQUIRE_OK(accel_stream_create(ctx->dev, &st));
	REQUIRE_OK(accel_device_array(ctx->dev, 1, (size_t[]){ 4 }, F64, NULL, 'C', st, &s));
	REQUIRE_OK(accel_array_get_interface(s, &ai));
	CHECK(ai.stream == st);
	/* "is_cuda_array": host arrays have none */
	REQUIRE_OK(accel_host_array(NULL, 1, (size_t[]){ 4 }, F64, NULL, 'C', 0, &h));
	CHECK(!accel_array_has_interface(h) && !accel_array_has_interface(NULL));
	FAILS(accel_array_get_interface(h, &ai));
	OK(accel_array_release(h));
	OK(accel_array_release(s));
	OK(accel_stream_destroy(ctx->dev, st));
	OK(accel_array_release(f));
	OK(accel_array_release(c));
}

/* "Create a DeviceNDArray from any object that implements the cuda array interface" */
TEST(as_cuda_array_views_without_copying)
{
	int64_t buf[6] = { 1, 2, 3, 4, 5, 6 };
	const size_t n = 6;
	accel_array_t h, d, v, back;
	struct accel_array_interface ai;
	size_t blocks;

	REQUIRE_OK(accel_host_array(buf, 1, &n, I64, NULL, 'C', 0, &h));
	REQUIRE_OK(accel_to_device(ctx->dev, h, NULL, &d));
	REQUIRE_OK(accel_array_get_interface(d, &ai));
	blocks = pool_blocks(ctx);
	REQUIRE_OK(accel_array_from_interface(ctx->dev, &ai, 1, &v));
	CHECK(pool_blocks(ctx) == blocks);	/* "No copying of the data is done" */
	CHECK(info_of(v).data == ai.data && info_of(v).dtype == I64);
	CHECK(info_of(v).kind == ACCEL_ARRAY_DEVICE);
	REQUIRE_OK(accel_array_copy_to_host(v, NULL, NULL, &back));
	CHECK(!memcmp(info_of(back).data, buf, sizeof(buf)));
	OK(accel_array_release(back));
	/* a read-only interface gives a read-only array */
	ai.readonly = 1;
	OK(accel_array_release(v));
	REQUIRE_OK(accel_array_from_interface(ctx->dev, &ai, 0, &v));
	FAILS(accel_array_copy_to_device(v, h, NULL));
	OK(accel_array_release(v));
	OK(accel_array_release(d));
	OK(accel_array_release(h));
}

/* "If sync is True, then the imported stream (if present) will be synchronized" */
TEST(as_cuda_array_synchronizes_the_stream)
{
	const size_t n = 1 << 18;
	int64_t *buf = xmalloc(n * 8), *out = xmalloc(n * 8);
	accel_array_t h, d, v;
	struct accel_array_interface ai;
	accel_stream_t s;

	for (size_t k = 0; k < n; k++)
		buf[k] = (int64_t)k - 7;
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_host_array(buf, 1, &n, I64, NULL, 'C', 0, &h));
	REQUIRE_OK(accel_to_device(ctx->dev, h, s, &d));
	REQUIRE_OK(accel_array_get_interface(d, &ai));
	CHECK(ai.stream == s);
	REQUIRE_OK(accel_array_from_interface(ctx->dev, &ai, 1, &v));
	CHECK(accel_stream_query(ctx->dev, s) == ACCEL_SUCCESS);
	/* the raw pointer is now safe to use from anywhere */
	OK(accel_memory_copy_d2h(ctx->dev, out, ai.data, n * 8));
	CHECK(!memcmp(out, buf, n * 8));
	OK(accel_array_release(v));
	OK(accel_array_release(d));
	OK(accel_array_release(h));
	OK(accel_stream_destroy(ctx->dev, s));
	free(buf);
	free(out);
}

TEST(bad_array_interfaces_are_refused)
{
	accel_array_t d = device_2d(ctx, 2, 2, 'C'), v = NULL;
	struct accel_array_interface ai, bad;
	void *host = xmalloc(64);

	REQUIRE_OK(accel_array_get_interface(d, &ai));
	bad = ai;
	bad.version = 4;
	FAILS(accel_array_from_interface(ctx->dev, &bad, 0, &v));
	bad = ai;
	strcpy(bad.typestr, "<c16");
	FAILS(accel_array_from_interface(ctx->dev, &bad, 0, &v));
	bad = ai;
	bad.data = NULL;
	FAILS(accel_array_from_interface(ctx->dev, &bad, 0, &v));
	bad = ai;
	bad.data = dalloc(ctx, 32);
	bad.shape[0] = 3;	/* past the end of the allocation */
	FAILS(accel_array_from_interface(ctx->dev, &bad, 0, &v));
	CHECK(strstr(accel_get_last_error(), "past the end") != NULL);
	bad.shape[0] = 2;
	OK(accel_array_from_interface(ctx->dev, &bad, 0, &v));
	OK(accel_array_release(v));
	v = NULL;
	dfree(ctx, bad.data, 32);
	bad = ai;
	bad.has_strides = 1;
	bad.strides[0] = -16;
	FAILS(accel_array_from_interface(ctx->dev, &bad, 0, &v));
	bad = ai;
	bad.ndim = ACCEL_MAX_DIMS + 1;
	FAILS(accel_array_from_interface(ctx->dev, &bad, 0, &v));
	FAILS(accel_array_from_interface(ctx->dev, NULL, 0, &v));
	if (!is_cpu(ctx)) {
		bad = ai;
		bad.data = host;
		FAILS(accel_array_from_interface(ctx->dev, &bad, 0, &v));
	}
	CHECK(v == NULL);
	OK(accel_array_release(d));
	free(host);
}
