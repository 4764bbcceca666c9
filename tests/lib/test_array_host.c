// SPDX-License-Identifier: MIT
/*
 * Pinned and mapped host arrays, sentence by sentence of Numba's memory
 * management page (seed 004): pinned_array(_like), mapped_array(_like),
 * and the pinned and mapped scopes over existing host arrays.
 */
#include <accel/memory.h>

#include "suite.h"

#define F32 accel_dtype(ACCEL_FLOAT32)

static struct accel_array_info info_of(accel_array_t a)
{
	struct accel_array_info info;

	REQUIRE_OK(accel_array_get_info(a, &info));
	return info;
}

static void fill(float *v, size_t n, float from)
{
	for (size_t i = 0; i < n; i++)
		v[i] = from + (float)i;
}

/* a round trip through a new device array, checked against @want */
static void round_trip(struct suite_ctx *ctx, accel_array_t host,
		       const float *want, size_t n)
{
	accel_array_t d, back;

	REQUIRE_OK(accel_to_device(ctx->dev, host, NULL, &d));
	REQUIRE_OK(accel_array_copy_to_host(d, NULL, NULL, &back));
	CHECK(!memcmp(info_of(back).data, want, n * sizeof(float)));
	OK(accel_array_release(back));
	OK(accel_array_release(d));
}

/* "Allocate an ndarray with a buffer that is pinned (pagelocked). Similar to np.empty()" */
TEST(pinned_array_is_page_locked_host_memory)
{
	const size_t shape[2] = { 64, 32 };
	struct accel_array_info i;
	accel_array_t p, like, d;
	size_t before = free_memory(ctx);
	accel_stream_t s;

	REQUIRE_OK(accel_pinned_array(ctx->dev, 2, shape, F32, NULL, 'C', &p));
	i = info_of(p);
	CHECK(i.kind == ACCEL_ARRAY_PINNED && i.size == 2048 && i.data);
	CHECK(!accel_array_has_interface(p));
	CHECK_FREE_IS(ctx, before);	/* host memory, not device memory */
	fill(i.data, i.size, 0.5f);
	round_trip(ctx, p, i.data, i.size);
	/* pinned memory is the direct end of an asynchronous copy */
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_to_device(ctx->dev, p, s, &d));
	OK(accel_stream_synchronize(ctx->dev, s));
	memset(i.data, 0, i.nbytes);
	OK(accel_array_copy_to_host(d, p, s, NULL));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(((float *)i.data)[2047] == 2047.5f);
	OK(accel_stream_destroy(ctx->dev, s));
	/* "Call pinned_array() with the information from the array" */
	REQUIRE_OK(accel_pinned_array_like(ctx->dev, d, &like));
	i = info_of(like);
	CHECK(i.kind == ACCEL_ARRAY_PINNED && i.shape[0] == 64 && i.shape[1] == 32 &&
	      i.dtype == F32 && accel_array_is_c_contiguous(like));
	OK(accel_array_release(like));
	OK(accel_array_release(d));
	OK(accel_array_release(p));
}

/* "Allocate a mapped ndarray with a buffer that is pinned and mapped on to the device" */
TEST(mapped_array_is_host_memory_the_device_reaches)
{
	const size_t n = 4096;
	struct accel_array_info i;
	struct accel_array_interface ai;
	accel_array_t m, like, d;
	float want[4096];

	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, &n, F32, NULL, 'C', NULL, &m));
	i = info_of(m);
	CHECK(i.kind == ACCEL_ARRAY_MAPPED && i.data);
	/* it stands for a device array: it has the interface... */
	CHECK(accel_array_has_interface(m));
	REQUIRE_OK(accel_array_get_interface(m, &ai));
	CHECK(ai.data == i.data);
	/* ...and takes device data directly; the host reads it in place */
	fill(want, n, 3);
	REQUIRE_OK(accel_device_array_like(ctx->dev, m, NULL, &d));
	{
		accel_array_t h;

		REQUIRE_OK(accel_host_array(want, 1, &n, F32, NULL, 'C', 1, &h));
		OK(accel_array_copy_to_device(d, h, NULL));
		OK(accel_array_release(h));
	}
	OK(accel_array_copy_to_device(m, d, NULL));
	CHECK(!memcmp(i.data, want, sizeof(want)));
	/* and the host's writes go to the device from it */
	fill(i.data, n, -10);
	round_trip(ctx, m, i.data, n);
	/* "Call mapped_array() with the information from the array" */
	REQUIRE_OK(accel_mapped_array_like(ctx->dev, d, NULL, &like));
	CHECK(info_of(like).kind == ACCEL_ARRAY_MAPPED && info_of(like).size == n);
	OK(accel_array_release(like));
	OK(accel_array_release(d));
	OK(accel_array_release(m));
}

/* "A context manager for temporary pinning a sequence of host ndarrays" */
TEST(pinned_scope_over_existing_host_arrays)
{
	const size_t n = 1 << 16;
	float *a = xmalloc(n * 4), *b = xmalloc(n * 4);
	accel_array_t ha, hb;

	fill(a, n, 1);
	fill(b, n, 2);
	REQUIRE_OK(accel_host_array(a, 1, &n, F32, NULL, 'C', 0, &ha));
	REQUIRE_OK(accel_host_array(b, 1, &n, F32, NULL, 'C', 0, &hb));
	/* with cuda.pinned(a, b): */
	REQUIRE_OK(accel_array_register(ctx->dev, ha, 0));
	REQUIRE_OK(accel_array_register(ctx->dev, hb, 0));
	CHECK(info_of(ha).kind == ACCEL_ARRAY_PINNED);
	CHECK(info_of(ha).data == a);	/* pinned in place */
	/* the core sees pinned memory: registering it again is refused */
	FAILS(accel_host_memory_register(ctx->dev, a, n * 4));
	FAILS(accel_array_register(ctx->dev, ha, 0));
	round_trip(ctx, ha, a, n);
	round_trip(ctx, hb, b, n);
	OK(accel_array_unregister(ha));
	OK(accel_array_unregister(hb));
	/* out of the scope: ordinary host arrays again */
	CHECK(info_of(ha).kind == ACCEL_ARRAY_HOST && info_of(ha).device == -1);
	FAILS(accel_array_unregister(ha));
	round_trip(ctx, ha, a, n);
	/* a release ends the scope too */
	REQUIRE_OK(accel_array_register(ctx->dev, hb, 0));
	OK(accel_array_release(hb));
	OK(accel_host_memory_register(ctx->dev, b, n * 4));
	OK(accel_host_memory_unregister(ctx->dev, b));
	OK(accel_array_release(ha));
	free(a);
	free(b);
}

/* "A context manager for temporarily mapping a sequence of host ndarrays" */
TEST(mapped_scope_over_an_existing_host_array)
{
	const size_t n = 1000;
	float *a = xmalloc(n * 4);
	accel_array_t h, d;
	struct accel_array_interface ai;

	fill(a, n, 7);
	REQUIRE_OK(accel_host_array(a, 1, &n, F32, NULL, 'C', 0, &h));
	CHECK(!accel_array_has_interface(h));
	REQUIRE_OK(accel_array_register(ctx->dev, h, 1));
	CHECK(info_of(h).kind == ACCEL_ARRAY_MAPPED);
	REQUIRE_OK(accel_array_get_interface(h, &ai));
	CHECK(ai.data == a);
	REQUIRE_OK(accel_device_array_like(ctx->dev, h, NULL, &d));
	OK(accel_array_copy_to_device(d, h, NULL));
	memset(a, 0, n * 4);
	OK(accel_array_copy_to_device(h, d, NULL));	/* into the mapped array */
	CHECK(a[999] == 1006.0f);
	OK(accel_array_unregister(h));
	CHECK(!accel_array_has_interface(h));
	/* only host arrays are registered */
	FAILS(accel_array_register(ctx->dev, d, 0));
	FAILS(accel_array_register(NULL, h, 0));
	/* a failure inside the library's own calls names the one called */
	FAILS(accel_array_register(&(struct accel_device_id){ .id = 9999 }, h, 0));
	CHECK(!strncmp(accel_get_last_error(), "accel_array_register: ", 22));
	OK(accel_array_release(d));
	OK(accel_array_release(h));
	free(a);
}

/*
 * memory.h: a mapped array is ACCEL_ARRAY_MAPPED, "pinned host memory the
 * device reaches directly", and accel_mapped_array_flags() is
 * accel_mapped_array() with flags. An empty shape leaves no memory under
 * the array (its data is NULL), so its kind cannot be read off its
 * memory: with every flag, and without flags, it is still a mapped array.
 */
TEST(empty_mapped_arrays_are_mapped_with_every_flag)
{
	const size_t shape[3] = { 5, 7, 0 };
	struct accel_array_info i;
	accel_array_t a;

	for (unsigned int f = 0; f <= ACCEL_ARRAY_FLAGS_VALID; f++) {
		REQUIRE_OK(accel_mapped_array_flags(ctx->dev, 3, shape, F32,
						    NULL, 'C', NULL, f, &a));
		i = info_of(a);
		if (i.kind != ACCEL_ARRAY_MAPPED)
			printf("#   flags 0x%x: kind %d\n", f, i.kind);
		CHECK(i.kind == ACCEL_ARRAY_MAPPED && !i.size && !i.data);
		OK(accel_array_release(a));
	}
	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, &shape[2], F32, NULL, 'C',
				      NULL, &a));
	i = info_of(a);
	CHECK(i.kind == ACCEL_ARRAY_MAPPED && !i.size && !i.data);
	OK(accel_array_release(a));
}

TEST(empty_host_arrays_register_trivially)
{
	const size_t zero = 0;
	accel_array_t h;

	REQUIRE_OK(accel_host_array(NULL, 1, &zero, F32, NULL, 'C', 0, &h));
	OK(accel_array_register(ctx->dev, h, 0));
	OK(accel_array_unregister(h));
	OK(accel_array_release(h));
}

/* A device that does not exist is refused before anything is registered. */
TEST(array_register_refuses_a_device_that_does_not_exist)
{
	struct accel_device_id bad[] = { { 99 }, { -5 } };
	size_t empty[1] = { 0 }, four[1] = { 4 };
	struct accel_array_info info;
	accel_array_t h[2];

	REQUIRE_OK(accel_host_array(NULL, 1, empty, NULL, NULL, 'C', 0, &h[0]));
	REQUIRE_OK(accel_host_array(NULL, 1, four, NULL, NULL, 'C', 0, &h[1]));
	for (int i = 0; i < 2; i++) {
		for (int j = 0; j < 2; j++) {
			FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
				   accel_array_register(&bad[j], h[i], j));
			OK(accel_array_get_info(h[i], &info));
			CHECK(info.device == -1 && info.kind == ACCEL_ARRAY_HOST);
		}
		OK(accel_array_release(h[i]));
	}
}
