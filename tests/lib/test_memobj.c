// SPDX-License-Identifier: MIT
/*
 * Memory handles, sentence by sentence of OCCA's occa::memory page
 * (seed 000): a handle to memory allocated by a device; copyTo/copyFrom
 * defaulting to the full array; slices; clone; cast; free and reference
 * counting.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include <accel/memory.h>

#include "suite.h"

#define F64 accel_dtype(ACCEL_FLOAT64)
#define I32 accel_dtype(ACCEL_INT32)
#define I16 accel_dtype(ACCEL_INT16)
#define U8 accel_dtype(ACCEL_UINT8)

static void iota(double *v, size_t n, double from)
{
	for (size_t i = 0; i < n; i++)
		v[i] = from + (double)i;
}

/* "a handle to memory allocated by a device" */
TEST(memory_is_a_handle_to_device_memory)
{
	const size_t n = 1000;
	double in[1000], out[1000];
	struct accel_memory_info info;
	accel_memory_t m;

	REQUIRE_OK(accel_memory_create(ctx->dev, n, F64, NULL, 0, &m));
	CHECK(accel_memory_is_valid(m));
	OK(accel_memory_get_info(m, &info));
	CHECK(info.entries == n && info.bytes == n * 8 && info.dtype == F64);
	CHECK(info.device == ctx->dev->id && info.ptr && !info.flags &&
	      !info.wrapped && !info.mapped);
	/* the native pointer is device memory of the device */
	iota(in, n, 1);
	OK(accel_memory_copy_h2d(ctx->dev, info.ptr, in, sizeof(in)));
	OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
	CHECK(!memcmp(in, out, sizeof(in)));
	CHECK(pool_blocks(ctx) == 1);	/* from the device's pool */
	OK(accel_memory_release(m));
	CHECK(pool_blocks(ctx) == 0);
}

TEST(memory_initialised_from_host)
{
	double in[64], out[64];
	accel_memory_t m;

	iota(in, 64, -5);
	REQUIRE_OK(accel_memory_create(ctx->dev, 64, F64, in, 0, &m));
	OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
	CHECK(!memcmp(in, out, sizeof(in)));
	OK(accel_memory_release(m));
}

/* "passing the bytes to copy defaults to the full array" */
TEST(copies_default_to_the_full_memory)
{
	double in[300], out[300];
	accel_memory_t m;

	REQUIRE_OK(accel_memory_create(ctx->dev, 300, F64, NULL, 0, &m));
	iota(in, 300, 7);
	memset(out, 0, sizeof(out));
	OK(accel_memory_copy_from(m, in, ACCEL_ALL, 0));
	OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
	CHECK(!memcmp(in, out, sizeof(in)));
	/* from an offset, the default is the rest */
	memset(out, 0, sizeof(out));
	OK(accel_memory_copy_to(m, out, ACCEL_ALL, 100));
	CHECK(!memcmp(out, in + 100, 200 * sizeof(double)));
	CHECK(check_bytes(out + 200, 100 * sizeof(double), 0));
	OK(accel_memory_release(m));
}

TEST(copy_counts_and_offsets_are_in_entries)
{
	double zero[50] = { 0 }, in[10], out[50];
	accel_memory_t m;

	REQUIRE_OK(accel_memory_create(ctx->dev, 50, F64, zero, 0, &m));
	iota(in, 10, 1);
	OK(accel_memory_copy_from(m, in, 10, 5));
	OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
	for (size_t i = 0; i < 50; i++)
		CHECK(out[i] == (i >= 5 && i < 15 ? (double)(i - 4) : 0.0));
	OK(accel_memory_copy_to(m, out, 3, 6));
	CHECK(out[0] == 2 && out[1] == 3 && out[2] == 4);
	OK(accel_memory_release(m));
}

TEST(copy_ranges_are_checked)
{
	double in[20], out[20];
	accel_memory_t m;

	iota(in, 20, 1);
	REQUIRE_OK(accel_memory_create(ctx->dev, 20, F64, in, 0, &m));
	FAILS(accel_memory_copy_from(m, in, 21, 0));
	FAILS(accel_memory_copy_from(m, in, 1, 20));
	FAILS(accel_memory_copy_from(m, in, ACCEL_ALL, 21));
	FAILS(accel_memory_copy_from(m, in, SIZE_MAX - 1, 2));
	FAILS(accel_memory_copy_to(m, out, 5, 16));
	CHECK(strstr(accel_get_last_error(), "past the end") != NULL);
	FAILS(accel_memory_copy_from(m, NULL, 1, 0));
	FAILS(accel_memory_copy_to(m, NULL, ACCEL_ALL, 0));
	FAILS(accel_memory_copy_from(NULL, in, 1, 0));
	/* an empty range at the end is fine */
	OK(accel_memory_copy_from(m, in, ACCEL_ALL, 20));
	OK(accel_memory_copy_from(m, in, 0, 20));
	/* nothing was written by the failures */
	OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
	CHECK(!memcmp(in, out, sizeof(in)));
	OK(accel_memory_release(m));
}

TEST(memory_to_memory_copies)
{
	double in[40], out[40];
	accel_memory_t a, b, c, lo, hi;

	iota(in, 40, 100);
	REQUIRE_OK(accel_memory_create(ctx->dev, 40, F64, in, 0, &a));
	REQUIRE_OK(accel_memory_create(ctx->dev, 40, F64, NULL, 0, &b));
	OK(accel_memory_copy(b, a, ACCEL_ALL, 0, 0));
	OK(accel_memory_copy_to(b, out, ACCEL_ALL, 0));
	CHECK(!memcmp(in, out, sizeof(in)));
	OK(accel_memory_copy(b, a, 10, 3, 7));
	OK(accel_memory_copy_to(b, out, 10, 3));
	CHECK(!memcmp(out, in + 7, 10 * sizeof(double)));
	/* checked: ranges on both sides, entry sizes, overlap */
	FAILS(accel_memory_copy(b, a, 10, 31, 0));
	FAILS(accel_memory_copy(b, a, ACCEL_ALL, 1, 0));
	FAILS(accel_memory_copy(b, a, 1, 0, 40));
	REQUIRE_OK(accel_memory_create(ctx->dev, 80, I32, NULL, 0, &c));
	FAILS(accel_memory_copy(c, a, 1, 0, 0));
	CHECK(strstr(accel_get_last_error(), "cast") != NULL);
	FAILS(accel_memory_copy(a, a, 10, 5, 0));
	/* disjoint parts of one storage may be copied */
	REQUIRE_OK(accel_memory_slice(a, 0, 20, &lo));
	REQUIRE_OK(accel_memory_slice(a, 20, 20, &hi));
	OK(accel_memory_copy(hi, lo, ACCEL_ALL, 0, 0));
	OK(accel_memory_copy_to(a, out, ACCEL_ALL, 0));
	CHECK(!memcmp(out + 20, in, 20 * sizeof(double)));
	FAILS(accel_memory_copy(lo, a, 20, 0, 10));
	/* the same range, as accel_memory_copy_d2d() allows it: no change */
	OK(accel_memory_copy(a, a, 10, 5, 5));
	OK(accel_memory_copy(lo, a, 20, 0, 0));
	OK(accel_memory_copy_to(a, out, ACCEL_ALL, 0));
	CHECK(!memcmp(out, in, 20 * sizeof(double)));
	OK(accel_memory_release(lo));
	OK(accel_memory_release(hi));
	OK(accel_memory_release(a));
	OK(accel_memory_release(b));
	OK(accel_memory_release(c));
}

TEST(async_copies_take_a_stream)
{
	double in[500], out[500];
	accel_memory_t a, b;
	accel_stream_t s;

	iota(in, 500, 3);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_memory_create(ctx->dev, 500, F64, NULL, 0, &a));
	REQUIRE_OK(accel_memory_create(ctx->dev, 500, F64, NULL, 0, &b));
	OK(accel_memory_copy_from_async(a, s, in, ACCEL_ALL, 0));
	memset(in, 0, sizeof(in));	/* pageable: captured at the call */
	OK(accel_memory_copy_async(b, a, s, ACCEL_ALL, 0, 0));
	OK(accel_memory_copy_to_async(b, s, out, 100, 400));
	OK(accel_stream_synchronize(ctx->dev, s));
	for (size_t i = 0; i < 100; i++)
		CHECK(out[i] == 403.0 + (double)i);
	FAILS(accel_memory_copy_from_async(a, NULL, in, ACCEL_ALL, 0));
	FAILS(accel_memory_copy_to_async(a, s, out, 501, 0));
	OK(accel_stream_destroy(ctx->dev, s));
	/* a stream of another device is refused */
	if (ctx->peer) {
		REQUIRE_OK(accel_stream_create(ctx->peer, &s));
		FAILS(accel_memory_copy_from_async(a, s, in, ACCEL_ALL, 0));
		OK(accel_stream_destroy(ctx->peer, s));
	}
	OK(accel_memory_release(a));
	OK(accel_memory_release(b));
}

/* "a reference to the original but will keep track of the offset and size" */
TEST(slices_share_storage_with_their_own_offset_and_size)
{
	double in[200], out[200], v[5] = { -1, -2, -3, -4, -5 };
	struct accel_memory_info mi, si, ti;
	accel_memory_t m, s, t, rest;

	iota(in, 200, 0);
	REQUIRE_OK(accel_memory_create(ctx->dev, 200, F64, in, 0, &m));
	REQUIRE_OK(accel_memory_slice(m, 100, 50, &s));
	OK(accel_memory_get_info(m, &mi));
	OK(accel_memory_get_info(s, &si));
	CHECK(si.entries == 50 && si.bytes == 400);
	CHECK((char *)si.ptr == (char *)mi.ptr + 800);
	OK(accel_memory_copy_to(s, out, ACCEL_ALL, 0));
	CHECK(!memcmp(out, in + 100, 50 * sizeof(double)));
	/* writes through the slice land in the original */
	OK(accel_memory_copy_from(s, v, 5, 2));
	OK(accel_memory_copy_to(m, out, 5, 102));
	CHECK(!memcmp(out, v, sizeof(v)));
	/* a slice of a slice, and the default count */
	REQUIRE_OK(accel_memory_slice(s, 10, ACCEL_ALL, &t));
	OK(accel_memory_get_info(t, &ti));
	CHECK(ti.entries == 40 && (char *)ti.ptr == (char *)mi.ptr + 110 * 8);
	/* bounds are checked against the slice, not the storage */
	FAILS(accel_memory_copy_from(s, in, 51, 0));
	FAILS(accel_memory_slice(s, 51, 0, &rest));
	CHECK(rest == NULL);
	FAILS(accel_memory_slice(s, 10, 41, &rest));
	FAILS(accel_memory_slice(m, 0, 1, NULL));
	REQUIRE_OK(accel_memory_slice(m, 200, ACCEL_ALL, &rest));
	OK(accel_memory_get_info(rest, &si));
	CHECK(si.entries == 0);
	OK(accel_memory_release(rest));
	OK(accel_memory_release(t));
	OK(accel_memory_release(s));
	OK(accel_memory_release(m));
}

TEST(clone_copies_into_new_memory)
{
	double in[100], out[100], v = 42;
	struct accel_memory_info mi, ci;
	accel_memory_t m, s, c, cs;

	iota(in, 100, 1);
	REQUIRE_OK(accel_memory_create(ctx->dev, 100, F64, in, 0, &m));
	REQUIRE_OK(accel_memory_clone(m, &c));
	OK(accel_memory_get_info(m, &mi));
	OK(accel_memory_get_info(c, &ci));
	CHECK(ci.ptr != mi.ptr && ci.entries == 100 && ci.dtype == F64 &&
	      ci.device == mi.device && !ci.wrapped);
	OK(accel_memory_copy_to(c, out, ACCEL_ALL, 0));
	CHECK(!memcmp(in, out, sizeof(in)));
	/* independent of the original */
	OK(accel_memory_copy_from(c, &v, 1, 0));
	OK(accel_memory_copy_to(m, out, 1, 0));
	CHECK(out[0] == 1);
	/* a clone of a slice holds just the slice */
	REQUIRE_OK(accel_memory_slice(m, 60, 10, &s));
	REQUIRE_OK(accel_memory_clone(s, &cs));
	OK(accel_memory_get_info(cs, &ci));
	CHECK(ci.entries == 10);
	OK(accel_memory_copy_to(cs, out, ACCEL_ALL, 0));
	CHECK(!memcmp(out, in + 60, 10 * sizeof(double)));
	CHECK(pool_blocks(ctx) == 3);
	OK(accel_memory_release(cs));
	OK(accel_memory_release(s));
	OK(accel_memory_release(c));
	OK(accel_memory_release(m));
	CHECK(pool_blocks(ctx) == 0);
}

/* "a reference to the original memory object but with a different type" */
TEST(cast_views_the_same_bytes_as_another_type)
{
	double in[10];
	int32_t words[20];
	struct accel_memory_info mi, ci;
	accel_memory_t m, c, odd, bad = NULL;
	accel_dtype_t three;

	iota(in, 10, 0.5);
	REQUIRE_OK(accel_memory_create(ctx->dev, 10, F64, in, 0, &m));
	REQUIRE_OK(accel_memory_cast(m, I32, &c));
	OK(accel_memory_get_info(m, &mi));
	OK(accel_memory_get_info(c, &ci));
	CHECK(ci.entries == 20 && ci.dtype == I32 && ci.ptr == mi.ptr);
	OK(accel_memory_copy_to(c, words, ACCEL_ALL, 0));
	CHECK(!memcmp(words, in, sizeof(in)));
	/* the size must divide */
	REQUIRE_OK(accel_dtype_register("three", 3, &three));
	FAILS(accel_memory_cast(m, three, &bad));
	CHECK(bad == NULL);
	REQUIRE_OK(accel_memory_slice(c, 0, 5, &odd));
	FAILS(accel_memory_cast(odd, F64, &bad));
	FAILS(accel_memory_cast(m, NULL, &bad));
	OK(accel_memory_release(odd));
	OK(accel_memory_release(c));
	OK(accel_memory_release(m));
}

/*
 * memory.h, accel_memory_cast(): "The first entry's address must be a
 * multiple of @dtype's alignment". The address, not the entry's offset in
 * its handle: bytes wrapped at an odd address start at offset 0 of their
 * handle and still are no int16 memory, while a slice of them from the
 * second byte starts at an even address and is. (accel_memory_wrap()
 * holds its pointer to the same rule, so the odd bytes are wrapped as
 * uint8, which any address is aligned for.)
 */
TEST(cast_checks_the_alignment_of_the_address_not_the_offset)
{
	uint8_t *d = dalloc(ctx, 64);
	accel_memory_t bytes, tail, c = NULL;
	struct accel_memory_info info;

	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_wrap(ctx->dev, d + 1, 16, I16, &bytes));
	REQUIRE_OK(accel_memory_wrap(ctx->dev, d + 1, 34, U8, &bytes));
	/* 34 bytes divide into int16 entries: only the address is wrong */
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_memory_cast(bytes, I16, &c));
	CHECK(c == NULL);
	REQUIRE_OK(accel_memory_slice(bytes, 1, 32, &tail));	/* at d + 2 */
	REQUIRE_OK(accel_memory_cast(tail, I16, &c));
	OK(accel_memory_get_info(c, &info));
	CHECK(info.ptr == d + 2 && info.entries == 16);
	OK(accel_memory_release(c));
	OK(accel_memory_release(tail));
	OK(accel_memory_release(bytes));
	dfree(ctx, d, 64);
}

/* "OCCA implemented reference counting by default" */
TEST(handles_keep_the_storage_alive)
{
	double in[30], out[30];
	accel_memory_t m, s, c;

	iota(in, 30, 9);
	REQUIRE_OK(accel_memory_create(ctx->dev, 30, F64, in, 0, &m));
	REQUIRE_OK(accel_memory_slice(m, 10, 10, &s));
	REQUIRE_OK(accel_memory_cast(m, I32, &c));
	OK(accel_memory_release(m));
	CHECK(!accel_memory_is_valid(m));
	FAILS(accel_memory_get_info(m, &(struct accel_memory_info){ 0 }));
	CHECK(accel_memory_is_valid(s) && accel_memory_is_valid(c));
	CHECK(pool_blocks(ctx) == 1);
	OK(accel_memory_copy_to(s, out, ACCEL_ALL, 0));
	CHECK(!memcmp(out, in + 10, 10 * sizeof(double)));
	OK(accel_memory_release(s));
	CHECK(pool_blocks(ctx) == 1);
	OK(accel_memory_release(c));
	CHECK(pool_blocks(ctx) == 0);	/* the last one freed it */
	FAILS(accel_memory_release(c));
	OK(accel_memory_release(NULL));
}

/* "The free function can be called to free the memory" */
TEST(free_releases_the_storage_for_every_handle)
{
	size_t before = free_memory(ctx);
	double in[1 << 16], out[4];
	accel_memory_t m, s, c;

	iota(in, 1 << 16, 0);
	REQUIRE_OK(accel_memory_create(ctx->dev, 1 << 16, F64, in, 0, &m));
	REQUIRE_OK(accel_memory_slice(m, 8, 4, &s));
	REQUIRE_OK(accel_memory_cast(s, I32, &c));
	OK(accel_memory_free(m));
	CHECK(pool_blocks(ctx) == 0);
	CHECK(!accel_memory_is_valid(s) && !accel_memory_is_valid(c));
	FAILS(accel_memory_copy_to(s, out, ACCEL_ALL, 0));
	CHECK(strstr(accel_get_last_error(), "freed") != NULL);
	FAILS(accel_memory_copy_from(c, in, ACCEL_ALL, 0));
	FAILS(accel_memory_get_info(c, &(struct accel_memory_info){ 0 }));
	FAILS(accel_memory_clone(s, &m));
	FAILS(accel_memory_slice(s, 0, 1, &m));
	/* the other handles are still released, one by free */
	OK(accel_memory_free(c));
	OK(accel_memory_release(s));
	pool_trim(ctx);
	CHECK_FREE_IS(ctx, before);
}

TEST(zero_entries_make_an_empty_handle)
{
	struct accel_memory_info info;
	accel_memory_t m, c;

	REQUIRE_OK(accel_memory_create(ctx->dev, 0, F64, NULL, 0, &m));
	OK(accel_memory_get_info(m, &info));
	CHECK(info.entries == 0 && info.bytes == 0 && info.ptr == NULL);
	OK(accel_memory_copy_from(m, NULL, ACCEL_ALL, 0));
	OK(accel_memory_copy_to(m, NULL, ACCEL_ALL, 0));
	REQUIRE_OK(accel_memory_clone(m, &c));
	OK(accel_memory_release(c));
	OK(accel_memory_free(m));
}

TEST(creation_mistakes_are_refused)
{
	accel_memory_t m = (accel_memory_t)1;
	struct accel_device_id nodev = { 999 };
	size_t total, free_now;

	FAILS(accel_memory_create(ctx->dev, 10, NULL, NULL, 0, &m));
	CHECK(m == NULL);
	FAILS(accel_memory_create(ctx->dev, 10, F64, NULL, 0, NULL));
	FAILS(accel_memory_create(ctx->dev, 10, F64, NULL, 4, &m));
	FAILS(accel_memory_create(NULL, 10, F64, NULL, 0, &m));
	FAILS(accel_memory_create(&nodev, 10, F64, NULL, 0, &m));
	FAILS(accel_memory_create(ctx->dev, SIZE_MAX / 4, F64, NULL, 0, &m));
	REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &free_now));
	FAILS(accel_memory_create(ctx->dev, total / 8 + 1024, F64, NULL, 0, &m));
	CHECK(m == NULL);
	CHECK(pool_blocks(ctx) == 0);
}

struct reader {
	accel_memory_t slice;
	int copies, refused, other;
};

static void *read_until_freed(void *arg)
{
	struct reader *r = arg;
	double v[64];

	for (int i = 0; i < 20000 && r->refused < 5; i++) {
		accel_status_t s = accel_memory_copy_to(r->slice, v, ACCEL_ALL, 0);

		if (s == ACCEL_SUCCESS)
			r->copies++;
		else if (strstr(accel_get_last_error(), "freed"))
			r->refused++;
		else
			r->other++;
	}
	return NULL;
}

/* a free racing with copies through other handles: each copy is whole or refused */
TEST(free_while_other_threads_copy)
{
	enum { THREADS = 4 };
	struct reader r[THREADS];
	pthread_t t[THREADS];
	accel_memory_t m;

	REQUIRE_OK(accel_memory_create(ctx->dev, THREADS * 64, F64, NULL, 0, &m));
	for (int i = 0; i < THREADS; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		REQUIRE_OK(accel_memory_slice(m, (size_t)i * 64, 64, &r[i].slice));
		REQUIRE(!pthread_create(&t[i], NULL, read_until_freed, &r[i]));
	}
	while (r[0].copies < 10)
		sched_yield();
	OK(accel_memory_free(m));
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		CHECK(r[i].other == 0);
		CHECK(!accel_memory_is_valid(r[i].slice));
		OK(accel_memory_release(r[i].slice));
	}
	CHECK(pool_blocks(ctx) == 0);
}

struct copier {
	accel_memory_t view;
	accel_memory_t own;	/* copied into, or NULL: host memory */
	void *buf;
	size_t entries;
	atomic_bool copied;
	atomic_bool done;
	bool refused;
	char error[256];	/* why its copies ended */
};

static accel_status_t copy_once(struct copier *c)
{
	if (c->own)
		return accel_memory_copy(c->own, c->view, c->entries, 0, 0);
	return accel_memory_copy_to(c->view, c->buf, ACCEL_ALL, 0);
}

static void *copy_until_refused(void *arg)
{
	struct copier *c = arg;

	while (copy_once(c) == ACCEL_SUCCESS)
		atomic_store(&c->copied, true);
	snprintf(c->error, sizeof(c->error), "%s", accel_get_last_error());
	c->refused = strstr(c->error, "freed") != NULL;
	atomic_store(&c->done, true);
	return NULL;
}

/*
 * Copies that other threads start back to back, overlapping one another,
 * do not hold a free off forever (a reader-preferring lock did): the free
 * returns, and every copy after it is refused. Half of them copy into
 * memory of their own, so the freed memory is the second they take.
 */
TEST(free_is_not_starved_by_copies)
{
	enum { THREADS = 12 };
	const size_t entries = 1 << 17;
	struct copier c[THREADS];
	pthread_t t[THREADS];
	accel_memory_t m;

	REQUIRE_OK(accel_memory_create(ctx->dev, entries, F64, NULL, 0, &m));
	for (int i = 0; i < THREADS; i++) {
		c[i] = (struct copier){ .entries = entries };
		if (i & 1)
			REQUIRE_OK(accel_memory_create(ctx->dev, entries, F64,
						       NULL, 0, &c[i].own));
		else
			c[i].buf = xmalloc(entries * 8);
		REQUIRE_OK(accel_memory_slice(m, 0, entries, &c[i].view));
		REQUIRE(!pthread_create(&t[i], NULL, copy_until_refused, &c[i]));
	}
	/* each has copied once (or failed to: the check below says why) */
	for (int i = 0; i < THREADS; i++)
		while (!atomic_load(&c[i].copied) && !atomic_load(&c[i].done))
			sched_yield();
	OK(accel_memory_free(m));
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		if (!c[i].refused)
			printf("#   copier %d stopped: %s\n", i, c[i].error);
		CHECK(c[i].refused);
		OK(accel_memory_release(c[i].view));
		if (c[i].own)
			OK(accel_memory_release(c[i].own));
		free(c[i].buf);
	}
	CHECK(pool_blocks(ctx) == 0);
}

/*
 * accel_memory_free() under way while another thread releases the same
 * handle: the free, which started first, succeeds and the release is
 * refused (docs/libaccel.md: "one succeeds, the other is refused"; a
 * refused call frees nothing).
 */
struct freer {
	accel_memory_t mem;
	accel_status_t ret;
	atomic_int started, done;
};

static void *free_memory_handle(void *arg)
{
	struct freer *f = arg;

	atomic_store(&f->started, 1);
	f->ret = accel_memory_free(f->mem);
	atomic_store(&f->done, 1);
	return NULL;
}

/*
 * The handle is a view of registered host memory: its free unregisters the
 * memory, which waits for the device's queued work. A release of the
 * handle made while the free waits must be refused (INVALID_HANDLE), and
 * the free must succeed. If the release came first after all (the freeing
 * thread had not reached the library), the free is refused having freed
 * nothing, and the try runs again.
 */
TEST(free_under_way_wins_over_release)
{
	const size_t n = 1 << 20;
	size_t shape[1] = { n };
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	int copies = BUSY_START;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (;;) {
		struct freer f = { 0 };
		void *data = aligned_alloc(4096, n);
		struct accel_array_info info;
		accel_array_t host;
		accel_status_t rel;
		bool under_way, decided;
		pthread_t t;

		REQUIRE(data);
		REQUIRE_OK(accel_host_array(data, 1, shape,
					    accel_dtype(ACCEL_UINT8), NULL,
					    'C', 0, &host));
		REQUIRE_OK(accel_array_register(ctx->dev, host, 0));
		REQUIRE_OK(accel_array_as_memory(host, &f.mem));
		busy_chain(ctx->dev, s, big, copies);
		REQUIRE(!pthread_create(&t, NULL, free_memory_handle, &f));
		while (!atomic_load(&f.started))
			usleep(1000);
		usleep(30000);		/* the free waits for the device */
		under_way = accel_stream_query(ctx->dev, s) == ACCEL_WARNING &&
			    !atomic_load(&f.done);
		accel_clear_last_error();
		rel = accel_memory_release(f.mem);
		if (rel != ACCEL_SUCCESS)
			CHECK(accel_peek_last_error_code() ==
			      ACCEL_ERROR_INVALID_HANDLE);
		pthread_join(t, NULL);
		OK(accel_stream_synchronize(ctx->dev, s));
		if (f.ret == ACCEL_SUCCESS) {
			/* the free claimed the handle: the release is refused */
			CHECK(rel == ACCEL_FAILED);
			FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
				   accel_array_get_info(host, &info));
			decided = under_way || rel == ACCEL_SUCCESS;
		} else {
			/* the release came first: the refused free freed nothing */
			bool freed = accel_array_get_info(host, &info) != ACCEL_SUCCESS;

			CHECK(rel == ACCEL_SUCCESS && !freed);
			decided = rel != ACCEL_SUCCESS || freed;
		}
		OK(accel_array_release(host));
		free(data);
		if (decided)
			break;
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, big, 2 * BUSY_HALF);
}

/* memory of two devices is copied peer to peer, sync and on either's stream */
TEST_PEER(memory_copies_between_devices_p2p)
{
	double in[256], out[256];
	accel_memory_t a, b;
	struct accel_memory_info info;
	accel_stream_t s;

	iota(in, 256, 11);
	REQUIRE_OK(accel_memory_create(ctx->dev, 256, F64, in, 0, &a));
	REQUIRE_OK(accel_memory_create(ctx->peer, 256, F64, NULL, 0, &b));
	OK(accel_memory_get_info(b, &info));
	CHECK(info.device == ctx->peer->id);
	OK(accel_memory_copy(b, a, ACCEL_ALL, 0, 0));
	OK(accel_memory_copy_to(b, out, ACCEL_ALL, 0));
	CHECK(!memcmp(in, out, sizeof(in)));
	/* on a stream of the destination's device, then of the source's */
	OK(accel_memory_copy_from(b, in + 128, 128, 0));
	REQUIRE_OK(accel_stream_create(ctx->peer, &s));
	OK(accel_memory_copy_async(a, b, s, 128, 0, 0));
	OK(accel_stream_synchronize(ctx->peer, s));
	OK(accel_stream_destroy(ctx->peer, s));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	OK(accel_memory_copy_async(b, a, s, 64, 128, 0));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_memory_copy_to(a, out, 128, 0));
	CHECK(!memcmp(out, in + 128, 128 * sizeof(double)));
	OK(accel_memory_copy_to(b, out, 64, 128));
	CHECK(!memcmp(out, in + 128, 64 * sizeof(double)));
	OK(accel_memory_release(a));
	OK(accel_memory_release(b));
}

/*
 * memory.h, accel_memory_copy_async(): between host memory (of any device)
 * and a device's memory the stream must be one of that device, whose
 * engine runs the copy; a stream of another device, the one the host
 * memory is pinned for included, cannot order it and is refused with
 * ACCEL_ERROR_INVALID_HANDLE, writing nothing. Both directions, between
 * pinned memory of the device under test and device memory of the peer.
 */
TEST_PEER(async_copy_between_host_and_device_memory_takes_that_devices_stream)
{
	int16_t init[16], ones[16], out[16];
	accel_memory_t host, peer_mem;
	accel_stream_t s, ps;
	int16_t *pinned;

	for (int i = 0; i < 16; i++) {
		init[i] = 0x5a5a;
		ones[i] = 0x1111;
	}
	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, (void **)&pinned,
					      sizeof(init)));
	memcpy(pinned, init, sizeof(init));
	REQUIRE_OK(accel_memory_wrap(ctx->dev, pinned, 16, I16, &host));
	REQUIRE_OK(accel_memory_create(ctx->peer, 16, I16, ones, 0, &peer_mem));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_stream_create(ctx->peer, &ps));

	/* the peer's memory into the host memory: entries 8 to 15 */
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_memory_copy_async(host, peer_mem, s, 8, 8, 0));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(!memcmp(pinned, init, sizeof(init)));
	OK(accel_memory_copy_async(host, peer_mem, ps, 8, 8, 0));
	OK(accel_stream_synchronize(ctx->peer, ps));
	CHECK(!memcmp(pinned, init, 8 * sizeof(int16_t)));
	CHECK(!memcmp(pinned + 8, ones, 8 * sizeof(int16_t)));

	/* the host memory into the peer's: entries 0 to 7 */
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_memory_copy_async(peer_mem, host, s, 8, 0, 0));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_memory_copy_to(peer_mem, out, ACCEL_ALL, 0));
	CHECK(!memcmp(out, ones, sizeof(ones)));
	OK(accel_memory_copy_async(peer_mem, host, ps, 8, 0, 0));
	OK(accel_stream_synchronize(ctx->peer, ps));
	OK(accel_memory_copy_to(peer_mem, out, ACCEL_ALL, 0));
	CHECK(!memcmp(out, init, 8 * sizeof(int16_t)));
	CHECK(!memcmp(out + 8, ones, 8 * sizeof(int16_t)));

	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_stream_destroy(ctx->peer, ps));
	OK(accel_memory_release(peer_mem));
	OK(accel_memory_release(host));
	OK(accel_host_memory_deallocate(ctx->dev, pinned, sizeof(init)));
}

TEST(handles_of_another_kind_are_refused)
{
	const size_t n = 4;
	accel_memory_t m;
	accel_array_t a;

	REQUIRE_OK(accel_memory_create(ctx->dev, 4, F64, NULL, 0, &m));
	REQUIRE_OK(accel_device_array(ctx->dev, 1, &n, F64, NULL, 'C', NULL, &a));
	FAILS(accel_memory_get_info((accel_memory_t)a, &(struct accel_memory_info){ 0 }));
	FAILS(accel_array_get_info((accel_array_t)m, &(struct accel_array_info){ 0 }));
	FAILS(accel_memory_release((accel_memory_t)a));
	FAILS(accel_array_release((accel_array_t)m));
	CHECK(!accel_memory_is_valid((accel_memory_t)a));
	OK(accel_array_release(a));
	OK(accel_memory_release(m));
}
