// SPDX-License-Identifier: MIT
/*
 * Handles: a released or destroyed pool, memory handle, array, stream or
 * event is refused by every function for the life of the process, however
 * the allocator reuses memory; so is a handle of another kind, a forged
 * value, and a handle that another thread releases while this one uses it.
 */
#include <pthread.h>
#include <sched.h>

#include <accel/memory.h>

#include "suite.h"

#define REUSE 64	/* objects made and freed, to make malloc reuse them */

static accel_dtype_t int32(void)
{
	return accel_dtype(ACCEL_INT32);
}

/* The call fails as a stale, foreign or forged handle does. */
#define REFUSED(call) FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE, call)

/* ------------------------------------------------------------------ */
/* Released handles stay invalid when their memory or address is reused */

TEST(released_slice_does_not_write_into_memory_made_since)
{
	int32_t data[4] = { 1, 2, 3, 4 }, out[64];
	accel_memory_t a, b, old[16], fresh[16];

	REQUIRE_OK(accel_memory_create(ctx->dev, 64, int32(), NULL, 0, &a));
	for (int i = 0; i < 16; i++)
		REQUIRE_OK(accel_memory_slice(a, (size_t)i * 4, 4, &old[i]));
	for (int i = 0; i < 16; i++)
		OK(accel_memory_release(old[i]));
	memset(out, 0, sizeof(out));
	REQUIRE_OK(accel_memory_create(ctx->dev, 64, int32(), out, 0, &b));
	for (int i = 0; i < 16; i++)
		REQUIRE_OK(accel_memory_slice(b, (size_t)i * 4, 4, &fresh[i]));
	for (int i = 0; i < 16; i++)
		REFUSED(accel_memory_copy_from(old[i], data, 4, 0));
	OK(accel_memory_copy_to(b, out, ACCEL_ALL, 0));
	CHECK(check_bytes(out, sizeof(out), 0));
	for (int i = 0; i < 16; i++)
		OK(accel_memory_release(fresh[i]));
	OK(accel_memory_release(a));
	OK(accel_memory_release(b));
}

TEST_PEER(destroyed_pool_is_not_the_pool_made_since_on_another_device)
{
	accel_pool_t old, fresh;
	void *p = NULL;

	REQUIRE_OK(accel_pool_create(ctx->dev, &old));
	OK(accel_pool_destroy(old));
	REQUIRE_OK(accel_pool_create(ctx->peer, &fresh));
	REFUSED(accel_pool_allocate(old, NULL, &p, 64));
	CHECK(!p);
	REFUSED(accel_pool_destroy(old));
	OK(accel_pool_destroy(fresh));
}

/* ------------------------------------------------------------------ */
/* Every kind: refused after release, whatever malloc hands out since */

TEST(destroyed_pools_stay_refused)
{
	accel_pool_t old[REUSE], fresh[REUSE];
	struct accel_pool_stats stats;
	void *p = NULL;

	for (int i = 0; i < REUSE; i++)
		REQUIRE_OK(accel_pool_create(ctx->dev, &old[i]));
	for (int i = 0; i < REUSE; i++)
		OK(accel_pool_destroy(old[i]));
	for (int i = 0; i < REUSE; i++)
		REQUIRE_OK(accel_pool_create(ctx->dev, &fresh[i]));
	for (int i = 0; i < REUSE; i++) {
		REFUSED(accel_pool_get_stats(old[i], &stats));
		REFUSED(accel_pool_allocate(old[i], NULL, &p, 16));
		REFUSED(accel_pool_deallocate(old[i], NULL, NULL, 0));
		REFUSED(accel_pool_trim(old[i]));
		REFUSED(accel_pool_reset_peaks(old[i]));
		REFUSED(accel_pool_destroy(old[i]));
	}
	for (int i = 0; i < REUSE; i++)
		OK(accel_pool_destroy(fresh[i]));
}

TEST(released_memory_handles_stay_refused)
{
	accel_memory_t old[REUSE], fresh[REUSE], m = NULL;
	struct accel_memory_info info;
	int32_t v[4] = { 0 };
	void *ptr = NULL;

	for (int i = 0; i < REUSE; i++)
		REQUIRE_OK(accel_memory_create(ctx->dev, 4, int32(), NULL,
					       ACCEL_MEMORY_HOST_READ, &old[i]));
	for (int i = 0; i < REUSE; i++)
		OK(accel_memory_release(old[i]));
	for (int i = 0; i < REUSE; i++)
		REQUIRE_OK(accel_memory_create(ctx->dev, 4, int32(), NULL,
					       ACCEL_MEMORY_HOST_READ, &fresh[i]));
	for (int i = 0; i < REUSE; i++) {
		CHECK(!accel_memory_is_valid(old[i]));
		REFUSED(accel_memory_get_info(old[i], &info));
		REFUSED(accel_memory_copy_to(old[i], v, ACCEL_ALL, 0));
		REFUSED(accel_memory_copy(fresh[i], old[i], ACCEL_ALL, 0, 0));
		REFUSED(accel_memory_slice(old[i], 0, 1, &m));
		REFUSED(accel_memory_clone(old[i], &m));
		REFUSED(accel_memory_map(old[i], ACCEL_MAP_READ, &ptr));
		REFUSED(accel_memory_read(old[i], v, sizeof(v)));
		REFUSED(accel_memory_free(old[i]));
		REFUSED(accel_memory_release(old[i]));
	}
	for (int i = 0; i < REUSE; i++)
		OK(accel_memory_release(fresh[i]));
}

TEST(released_arrays_stay_refused)
{
	accel_array_t old[REUSE], fresh[REUSE], v = NULL;
	struct accel_array_info info;
	struct accel_array_interface iface;
	size_t shape[1] = { 8 };

	for (int i = 0; i < REUSE; i++)
		REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, int32(), NULL,
					      'C', NULL, &old[i]));
	for (int i = 0; i < REUSE; i++)
		OK(accel_array_release(old[i]));
	for (int i = 0; i < REUSE; i++)
		REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, int32(), NULL,
					      'C', NULL, &fresh[i]));
	for (int i = 0; i < REUSE; i++) {
		REFUSED(accel_array_get_info(old[i], &info));
		REFUSED(accel_array_ravel(old[i], 'C', &v));
		REFUSED(accel_array_get_interface(old[i], &iface));
		REFUSED(accel_array_copy_to_device(fresh[i], old[i], NULL));
		REFUSED(accel_device_array_like(ctx->dev, old[i], NULL, &v));
		CHECK(!accel_array_has_interface(old[i]));
		CHECK(!accel_array_is_c_contiguous(old[i]));
		REFUSED(accel_array_release(old[i]));
	}
	for (int i = 0; i < REUSE; i++)
		OK(accel_array_release(fresh[i]));
}

TEST(destroyed_streams_stay_refused)
{
	accel_stream_t old[REUSE], fresh[REUSE];
	uint8_t *d = dalloc(ctx, 64), h[64] = { 0 };
	accel_event_t e;

	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	for (int i = 0; i < REUSE; i++)
		REQUIRE_OK(accel_stream_create(ctx->dev, &old[i]));
	for (int i = 0; i < REUSE; i++)
		OK(accel_stream_destroy(ctx->dev, old[i]));
	for (int i = 0; i < REUSE; i++)
		REQUIRE_OK(accel_stream_create(ctx->dev, &fresh[i]));
	for (int i = 0; i < REUSE; i++) {
		REFUSED(accel_stream_query(ctx->dev, old[i]));
		REFUSED(accel_stream_synchronize(ctx->dev, old[i]));
		REFUSED(accel_async_memory_copy_h2d(ctx->dev, old[i], d, h, 64));
		REFUSED(accel_event_record(ctx->dev, old[i], e));
		REFUSED(accel_stream_wait_event(ctx->dev, old[i], e));
		REFUSED(accel_stream_destroy(ctx->dev, old[i]));
	}
	for (int i = 0; i < REUSE; i++)
		OK(accel_stream_destroy(ctx->dev, fresh[i]));
	OK(accel_event_destroy(ctx->dev, e));
	dfree(ctx, d, 64);
}

TEST(destroyed_events_stay_refused)
{
	accel_event_t old[REUSE], fresh[REUSE];
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (int i = 0; i < REUSE; i++)
		REQUIRE_OK(accel_event_create(ctx->dev, &old[i]));
	for (int i = 0; i < REUSE; i++)
		OK(accel_event_destroy(ctx->dev, old[i]));
	for (int i = 0; i < REUSE; i++)
		REQUIRE_OK(accel_event_create(ctx->dev, &fresh[i]));
	for (int i = 0; i < REUSE; i++) {
		REFUSED(accel_event_query(ctx->dev, old[i]));
		REFUSED(accel_event_synchronize(ctx->dev, old[i]));
		REFUSED(accel_event_record(ctx->dev, s, old[i]));
		REFUSED(accel_stream_wait_event(ctx->dev, s, old[i]));
		REFUSED(accel_event_destroy(ctx->dev, old[i]));
	}
	for (int i = 0; i < REUSE; i++)
		OK(accel_event_destroy(ctx->dev, fresh[i]));
	OK(accel_stream_destroy(ctx->dev, s));
}

/* ------------------------------------------------------------------ */
/* Other kinds, forged values */

TEST(a_handle_of_another_kind_is_refused)
{
	size_t shape[1] = { 4 };
	struct accel_memory_info minfo;
	struct accel_array_info ainfo;
	struct accel_pool_stats stats;
	accel_memory_t m;
	accel_array_t a;
	accel_pool_t p;
	accel_stream_t s;
	accel_event_t e;

	REQUIRE_OK(accel_memory_create(ctx->dev, 4, int32(), NULL, 0, &m));
	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, int32(), NULL, 'C',
				      NULL, &a));
	REQUIRE_OK(accel_pool_create(ctx->dev, &p));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));

	REFUSED(accel_event_query(ctx->dev, (accel_event_t)s));
	REFUSED(accel_event_query(ctx->dev, (accel_event_t)m));
	REFUSED(accel_stream_query(ctx->dev, (accel_stream_t)e));
	REFUSED(accel_stream_query(ctx->dev, (accel_stream_t)p));
	REFUSED(accel_memory_get_info((accel_memory_t)a, &minfo));
	REFUSED(accel_memory_get_info((accel_memory_t)s, &minfo));
	REFUSED(accel_array_get_info((accel_array_t)m, &ainfo));
	REFUSED(accel_array_get_info((accel_array_t)e, &ainfo));
	REFUSED(accel_pool_get_stats((accel_pool_t)m, &stats));
	REFUSED(accel_pool_get_stats((accel_pool_t)s, &stats));
	REFUSED(accel_memory_release((accel_memory_t)a));
	REFUSED(accel_array_release((accel_array_t)m));
	REFUSED(accel_stream_destroy(ctx->dev, (accel_stream_t)e));
	REFUSED(accel_event_destroy(ctx->dev, (accel_event_t)s));
	REFUSED(accel_pool_destroy((accel_pool_t)a));

	/* and every one of them is still alive */
	OK(accel_memory_get_info(m, &minfo));
	OK(accel_array_get_info(a, &ainfo));
	OK(accel_pool_get_stats(p, &stats));
	OK(accel_stream_query(ctx->dev, s));
	OK(accel_event_query(ctx->dev, e));
	OK(accel_event_destroy(ctx->dev, e));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_pool_destroy(p));
	OK(accel_array_release(a));
	OK(accel_memory_release(m));
}

TEST(forged_handles_are_refused)
{
	/* what a forger might pass: small numbers, all ones, a struct */
	uintptr_t stack[64];
	void *forged[] = { (void *)1, (void *)2, (void *)17, (void *)-1,
			   (void *)(uintptr_t)0xdeadbeef, stack, &stack[1],
			   &stack[3], (char *)stack + 1 };
	struct accel_memory_info minfo;
	struct accel_array_info ainfo;
	struct accel_pool_stats stats;
	void *p = NULL;

	/* the struct looks like a live object of every kind */
	for (int i = 0; i < 64; i++)
		stack[i] = 0x0101010101010101ull * (uintptr_t)(i & 7);
	for (size_t i = 0; i < sizeof(forged) / sizeof(*forged); i++) {
		REFUSED(accel_pool_allocate(forged[i], NULL, &p, 16));
		REFUSED(accel_pool_get_stats(forged[i], &stats));
		REFUSED(accel_memory_get_info(forged[i], &minfo));
		REFUSED(accel_memory_release(forged[i]));
		REFUSED(accel_array_get_info(forged[i], &ainfo));
		REFUSED(accel_array_release(forged[i]));
		REFUSED(accel_stream_query(ctx->dev, forged[i]));
		REFUSED(accel_stream_destroy(ctx->dev, forged[i]));
		REFUSED(accel_event_query(ctx->dev, forged[i]));
		REFUSED(accel_event_destroy(ctx->dev, forged[i]));
	}
}

TEST(null_handles_are_refused_as_before)
{
	struct accel_memory_info minfo;
	struct accel_array_info ainfo;
	struct accel_pool_stats stats;

	/* documented as argument errors */
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_pool_get_stats(NULL, &stats));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_stream_query(ctx->dev, NULL));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_event_query(ctx->dev, NULL));
	/* not a live handle */
	REFUSED(accel_memory_get_info(NULL, &minfo));
	REFUSED(accel_array_get_info(NULL, &ainfo));
	/* releasing nothing is no error */
	OK(accel_memory_release(NULL));
	OK(accel_array_release(NULL));
}

/* Each way a stream can be wrong for ctx->dev: destroyed, an event, another device's. */
static void bad_streams(struct suite_ctx *ctx, accel_stream_t bad[3], int *n,
			accel_event_t *ev)
{
	accel_stream_t dead;

	REQUIRE_OK(accel_stream_create(ctx->dev, &dead));
	REQUIRE_OK(accel_stream_destroy(ctx->dev, dead));
	REQUIRE_OK(accel_event_create(ctx->dev, ev));
	bad[0] = dead;
	bad[1] = (accel_stream_t)*ev;
	*n = 2;
	if (ctx->peer)
		REQUIRE_OK(accel_stream_create(ctx->peer, &bad[(*n)++]));
}

/*
 * A stream argument is checked even where the call has no use for it (an
 * empty copy, an array made without a transfer).
 */
TEST(unneeded_stream_arguments_still_checked)
{
	size_t shape[1] = { 4 }, empty[1] = { 0 };
	accel_array_t d, dz, hz, out;
	double buf[4] = { 0 };
	accel_stream_t bad[3];
	accel_memory_t m;
	accel_event_t ev;
	int n;

	bad_streams(ctx, bad, &n, &ev);
	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, NULL, NULL, 'C', NULL,
				      &d));
	REQUIRE_OK(accel_device_array(ctx->dev, 1, empty, NULL, NULL, 'C', NULL,
				      &dz));
	REQUIRE_OK(accel_host_array(NULL, 1, empty, NULL, NULL, 'C', 0, &hz));
	REQUIRE_OK(accel_memory_create(ctx->dev, 4, accel_dtype(ACCEL_FLOAT64),
				       NULL, 0, &m));
	for (int i = 0; i < n; i++) {
		accel_stream_t s = bad[i];

		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_mapped_array(ctx->dev, 1, shape, NULL, NULL,
					      'C', s, &out));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_mapped_array_flags(ctx->dev, 1, shape, NULL,
						    NULL, 'C', s, 0, &out));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_device_array(ctx->dev, 1, empty, NULL, NULL,
					      'C', s, &out));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_to_device_ex(ctx->dev, d, s, 1, &out));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_memory_copy_from_async(m, s, buf, 0, 0));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_memory_copy_to_async(m, s, buf, 0, 0));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_memory_copy_async(m, m, s, 0, 0, 0));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_array_copy_to_device(dz, hz, s));
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
			   accel_array_copy_to_host(dz, hz, s, NULL));
	}
	OK(accel_array_release(d));
	OK(accel_array_release(dz));
	OK(accel_array_release(hz));
	OK(accel_memory_release(m));
	OK(accel_event_destroy(ctx->dev, ev));
}

/* ------------------------------------------------------------------ */
/* Release while other threads use the handle */

#define USERS 3
#define ROUNDS 40

/*
 * What a user thread saw: every call succeeded or was refused. Users write
 * bytes of their own only, so that a race detector sees the library's races.
 */
struct user {
	void *handle;
	accel_device_t dev;
	void *dptr;		/* device memory of this user's own */
	int ok, refused, other;
};

static void tally(struct user *u, accel_status_t st)
{
	if (st == ACCEL_SUCCESS)
		u->ok++;
	else if (accel_peek_last_error_code() == ACCEL_ERROR_INVALID_HANDLE)
		u->refused++;
	else
		u->other++;
}

static void *use_memory(void *arg)
{
	struct user *u = arg;
	int32_t buf[256];

	for (int i = 0; i < 2000 && u->refused < 50; i++) {
		tally(u, accel_memory_copy_to(u->handle, buf, ACCEL_ALL, 0));
		tally(u, accel_memory_copy_to(u->handle, buf, 16, 8));
	}
	return NULL;
}

static void *use_array(void *arg)
{
	struct user *u = arg;
	struct accel_array_info info;
	accel_array_t v;

	for (int i = 0; i < 2000 && u->refused < 50; i++) {
		accel_status_t st = accel_array_ravel(u->handle, 'C', &v);

		tally(u, st);
		if (st == ACCEL_SUCCESS)
			OK(accel_array_release(v));
		tally(u, accel_array_get_info(u->handle, &info));
	}
	return NULL;
}

static void *use_stream(void *arg)
{
	struct user *u = arg;
	uint8_t buf[256];

	fill_pattern(buf, sizeof(buf), 6);
	for (int i = 0; i < 2000 && u->refused < 50; i++) {
		tally(u, accel_async_memory_copy_h2d(u->dev, u->handle, u->dptr,
						     buf, sizeof(buf)));
		if (!(i % 16))
			tally(u, accel_stream_synchronize(u->dev, u->handle));
	}
	return NULL;
}

static void *use_event(void *arg)
{
	struct user *u = arg;

	for (int i = 0; i < 2000 && u->refused < 50; i++) {
		accel_status_t st = accel_event_query(u->dev, u->handle);

		/* a GPU may take a moment to pass a record on an idle stream */
		tally(u, st == ACCEL_WARNING ? ACCEL_SUCCESS : st);
		tally(u, accel_event_synchronize(u->dev, u->handle));
	}
	return NULL;
}

static void *use_pool(void *arg)
{
	struct user *u = arg;

	for (int i = 0; i < 2000 && u->refused < 50; i++) {
		void *p = NULL;
		accel_status_t st = accel_pool_allocate(u->handle, NULL, &p, 256);

		tally(u, st);
		/* a block of a destroyed pool went with it */
		if (st == ACCEL_SUCCESS)
			tally(u, accel_pool_deallocate(u->handle, NULL, p, 256));
	}
	return NULL;
}

/* Start USERS threads running @fn on @handle, end it with @end, join. */
static void race(struct suite_ctx *ctx, void *(*fn)(void *), void *handle,
		 void *dptr, accel_status_t (*end)(struct suite_ctx *, void *))
{
	struct user u[USERS];
	pthread_t t[USERS];

	for (int i = 0; i < USERS; i++) {
		u[i] = (struct user){ handle, ctx->dev,
				      dptr ? (char *)dptr + i * 256 : NULL,
				      0, 0, 0 };
		REQUIRE(pthread_create(&t[i], NULL, fn, &u[i]) == 0);
	}
	for (int i = 0; i < 20; i++)
		sched_yield();
	OK(end(ctx, handle));
	for (int i = 0; i < USERS; i++) {
		pthread_join(t[i], NULL);
		CHECK(u[i].other == 0);
	}
	/* and now nobody may use it */
	REFUSED(end(ctx, handle));
}

static accel_status_t end_memory(struct suite_ctx *ctx, void *h)
{
	(void)ctx;
	return accel_memory_release(h);
}

static accel_status_t end_array(struct suite_ctx *ctx, void *h)
{
	(void)ctx;
	return accel_array_release(h);
}

static accel_status_t end_stream(struct suite_ctx *ctx, void *h)
{
	return accel_stream_destroy(ctx->dev, h);
}

static accel_status_t end_event(struct suite_ctx *ctx, void *h)
{
	return accel_event_destroy(ctx->dev, h);
}

static accel_status_t end_pool(struct suite_ctx *ctx, void *h)
{
	(void)ctx;
	return accel_pool_destroy(h);
}

TEST(release_while_other_threads_use_the_handle)
{
	size_t shape[1] = { 256 };
	void *d = dalloc(ctx, 256 * USERS);

	for (int round = 0; round < ROUNDS; round++) {
		accel_memory_t m;
		accel_array_t a;
		accel_pool_t p;
		accel_stream_t s;
		accel_event_t e;

		REQUIRE_OK(accel_memory_create(ctx->dev, 256, int32(), NULL, 0, &m));
		race(ctx, use_memory, m, NULL, end_memory);
		REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, int32(), NULL,
					      'C', NULL, &a));
		race(ctx, use_array, a, NULL, end_array);
		REQUIRE_OK(accel_stream_create(ctx->dev, &s));
		race(ctx, use_stream, s, d, end_stream);
		REQUIRE_OK(accel_stream_create(ctx->dev, &s));
		REQUIRE_OK(accel_event_create(ctx->dev, &e));
		OK(accel_event_record(ctx->dev, s, e));
		race(ctx, use_event, e, NULL, end_event);
		OK(accel_stream_destroy(ctx->dev, s));
		REQUIRE_OK(accel_pool_create(ctx->dev, &p));
		race(ctx, use_pool, p, NULL, end_pool);
	}
	dfree(ctx, d, 256 * USERS);
}
