// SPDX-License-Identifier: MIT
/*
 * Error codes: each kind of failure has its own code beside the message,
 * peeked at or taken (and reset) as cudaPeekAtLastError and
 * cudaGetLastError do.
 */
#include <pthread.h>

#include <accel/memory.h>

#include "suite.h"

TEST(error_code_is_none_until_a_call_fails)
{
	void *p;

	accel_clear_last_error();
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NONE);
	OK(accel_device_memory_allocate(ctx->dev, &p, 4096));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NONE);
	OK(accel_device_memory_deallocate(ctx->dev, p, 4096));
}

TEST(peek_keeps_the_code_get_resets_it)
{
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_stream_create(ctx->dev, NULL));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	CHECK(accel_get_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	CHECK(accel_get_last_error_code() == ACCEL_ERROR_NONE);
	CHECK(accel_get_last_error()[0] == '\0');
}

/* A success after a failure leaves the failure's code, as CUDA does. */
TEST(success_leaves_the_code_alone)
{
	accel_stream_t s;

	FAILS(accel_stream_create(ctx->dev, NULL));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	OK(accel_stream_destroy(ctx->dev, s));
}

TEST(out_of_memory_has_its_code)
{
	size_t total, free_mem;
	void *p = (void *)1;

	OK(accel_device_memory_stats(ctx->dev, &total, &free_mem));
	FAILS_WITH(ACCEL_ERROR_OUT_OF_MEMORY,
		   accel_device_memory_allocate(ctx->dev, &p, total + (total >> 1)));
	CHECK(p == NULL);
}

TEST(stale_handles_have_their_code)
{
	accel_stream_t s;
	accel_event_t e;
	void *p;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	OK(accel_stream_destroy(ctx->dev, s));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE, accel_stream_synchronize(ctx->dev, s));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	OK(accel_event_destroy(ctx->dev, e));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE, accel_event_query(ctx->dev, e));
	REQUIRE_OK(accel_device_memory_allocate(ctx->dev, &p, 4096));
	OK(accel_device_memory_deallocate(ctx->dev, p, 4096));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_memory_deallocate(ctx->dev, p, 4096));
}

TEST(a_device_that_does_not_exist_is_an_invalid_value)
{
	struct accel_device_id none = { .id = 1 << 20 };
	size_t total, free_mem;

	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_device_memory_stats(&none, &total, &free_mem));
}

/* accel.h, Errors: a failed maker leaves NULL, not a stale value. */
TEST(failed_makers_leave_null)
{
	struct accel_device_id bad = { 99 };
	accel_pool_t pool = (accel_pool_t)0x1234;
	accel_stream_t s = (accel_stream_t)0x1234;
	accel_event_t e = (accel_event_t)0x1234;
	void *p = (void *)0x1234;

	FAILS(accel_stream_create(&bad, &s));
	CHECK(!s);
	FAILS(accel_event_create(&bad, &e));
	CHECK(!e);
	FAILS(accel_pool_create(&bad, &pool));
	CHECK(!pool);
	pool = (accel_pool_t)0x1234;
	FAILS(accel_device_pool(&bad, &pool));
	CHECK(!pool);
	FAILS(accel_device_memory_allocate(&bad, &p, 16));
	CHECK(!p);
}

TEST_NOINIT(an_unavailable_backend_has_its_code)
{
	size_t count;

	setenv("ACCEL_VISIBLE_DEVICES", "accel:63", 1);
	FAILS_WITH(ACCEL_ERROR_UNAVAILABLE, accel_get_device_count(&count));
}

TEST(mapped_memory_is_in_use)
{
	accel_memory_t m;
	void *p;

	REQUIRE_OK(accel_memory_create(ctx->dev, 16, accel_dtype(ACCEL_UINT8), NULL,
				       ACCEL_MEMORY_HOST_READ, &m));
	REQUIRE_OK(accel_memory_map(m, ACCEL_MAP_READ, &p));
	FAILS_WITH(ACCEL_ERROR_IN_USE, accel_memory_free(m));
	OK(accel_memory_unmap(m));
	OK(accel_memory_free(m));
}

TEST(mapping_device_only_memory_is_not_supported)
{
	accel_memory_t m;
	void *p;

	REQUIRE_OK(accel_memory_create(ctx->dev, 16, accel_dtype(ACCEL_UINT8), NULL,
				       0, &m));
	FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED, accel_memory_map(m, ACCEL_MAP_READ, &p));
	OK(accel_memory_release(m));
}

TEST_NOINIT(every_code_has_a_name)
{
	CHECK(!strcmp(accel_error_name(ACCEL_ERROR_NONE), "ACCEL_ERROR_NONE"));
	CHECK(!strcmp(accel_error_name(ACCEL_ERROR_OUT_OF_MEMORY),
		      "ACCEL_ERROR_OUT_OF_MEMORY"));
	for (int c = 0; c < ACCEL_ERROR_COUNT; c++)
		CHECK(strncmp(accel_error_name((enum accel_error)c), "ACCEL_ERROR_", 12) == 0 &&
		      strcmp(accel_error_name((enum accel_error)c), "ACCEL_ERROR_UNKNOWN"));
	CHECK(!strcmp(accel_error_name((enum accel_error)-1), "ACCEL_ERROR_UNKNOWN"));
	CHECK(!strcmp(accel_error_name(ACCEL_ERROR_COUNT), "ACCEL_ERROR_UNKNOWN"));
}

/* The code, like the message, belongs to the thread. */
static void *fail_elsewhere(void *arg)
{
	(void)arg;
	accel_stream_create(NULL, NULL);
	return (void *)(uintptr_t)accel_peek_last_error_code();
}

TEST(the_code_is_per_thread)
{
	pthread_t t;
	void *code;

	accel_clear_last_error();
	REQUIRE(pthread_create(&t, NULL, fail_elsewhere, NULL) == 0);
	pthread_join(t, &code);
	CHECK((uintptr_t)code == ACCEL_ERROR_INVALID_VALUE);
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NONE);
}

/*
 * A call that succeeds after an attempt inside it failed leaves the
 * thread's error as it was: growing a pool (which may try other arenas
 * and the device first), and an allocation that succeeds only once the
 * memory of pending frees is back.
 */
TEST(a_success_after_inner_failures_leaves_the_error)
{
	struct accel_device_id none = { .id = 1 << 20 };
	size_t total, free_mem;
	accel_pool_t pool;
	accel_memory_t m;
	uint8_t *busy;
	void *p, *big;
	accel_stream_t s;

	REQUIRE_OK(accel_pool_create(ctx->dev, &pool));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE, accel_stream_create(&none, NULL));
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &p, 100));	/* grows */
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	REQUIRE_OK(accel_memory_create(ctx->dev, 16, accel_dtype(ACCEL_UINT8),
				       NULL, 0, &m));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	OK(accel_memory_release(m));
	OK(accel_pool_deallocate(pool, NULL, p, 100));
	OK(accel_pool_destroy(pool));

	/*
	 * most of the device, freed behind queued work and taken again: the
	 * first try runs out of memory, the retry waits for that work
	 */
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	busy = dalloc(ctx, 2 * BUSY_HALF);
	OK(accel_device_memory_stats(ctx->dev, &total, &free_mem));
	free_mem = free_mem / 4 * 3 / ctx->min_chunk * ctx->min_chunk;
	REQUIRE_OK(accel_device_memory_allocate(ctx->dev, &big, free_mem));
	busy_chain(ctx->dev, s, busy, 16);
	OK(accel_device_memory_deallocate(ctx->dev, big, free_mem));
	accel_clear_last_error();
	REQUIRE_OK(accel_device_memory_allocate(ctx->dev, &big, free_mem));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NONE);
	CHECK(accel_get_last_error()[0] == '\0');
	OK(accel_device_memory_deallocate(ctx->dev, big, free_mem));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, busy, 2 * BUSY_HALF);
}

/*
 * accel.h: successful calls leave the thread's error alone. An allocation
 * that first finds the device full, then succeeds once the memory freed
 * behind queued work is back, must not leave the out-of-memory error of
 * the first try, nor erase an error the caller has not read yet.
 */
TEST(alloc_after_reclaim_leaves_error_alone)
{
	size_t n = 16 << 20, total, free_now, big;
	uint8_t *busy = dalloc(ctx, n);
	struct accel_device_id bad = { 99 };
	accel_stream_t s;
	void *p, *q;
	int tries;

	if (!is_cpu(ctx))
		suite_skip("needs a device whose memory the test can fill");
	REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &free_now));
	big = free_now / 4 * 3;
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (tries = 0; tries < 8; tries++) {
		REQUIRE_OK(accel_device_memory_allocate(ctx->dev, &p, big));
		busy_chain_of(ctx->dev, s, busy, 8 << tries, n / 2);
		REQUIRE_OK(accel_device_memory_deallocate(ctx->dev, p, big));
		/* still the device's: the free waits for s */
		REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &free_now));
		if (free_now < big)
			break;
		OK(accel_stream_synchronize(ctx->dev, s));
	}
	if (tries == 8)
		suite_skip("the stream was never busy at the free");
	accel_clear_last_error();
	OK(accel_device_memory_allocate(ctx->dev, &q, big));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NONE);
	CHECK(!accel_get_last_error()[0]);
	OK(accel_device_memory_deallocate(ctx->dev, q, big));
	/* a pending error survives a successful call */
	FAILS(accel_device_memory_allocate(&bad, &p, 16));
	REQUIRE_OK(accel_device_memory_allocate(ctx->dev, &p, big));
	busy_chain_of(ctx->dev, s, busy, 64, n / 2);
	REQUIRE_OK(accel_device_memory_deallocate(ctx->dev, p, big));
	FAILS(accel_device_memory_allocate(&bad, &p, 16));
	OK(accel_device_memory_allocate(ctx->dev, &q, big));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	OK(accel_device_memory_deallocate(ctx->dev, q, big));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, busy, n);
}

/*
 * A pool allocation that grows the pool (or goes to the device for a
 * large block) succeeds and leaves the caller's pending error as it was.
 */
TEST(pool_growth_leaves_error_alone)
{
	struct accel_device_id bad = { 99 };
	size_t max_chunk;
	accel_pool_t pool;
	accel_memory_t m;
	void *p, *q;

	REQUIRE_OK(accel_device_max_chunk_size(ctx->dev, &max_chunk));
	REQUIRE_OK(accel_pool_create(ctx->dev, &pool));
	FAILS(accel_device_memory_allocate(&bad, &p, 16));
	OK(accel_pool_allocate(pool, NULL, &p, 100));	/* the first chunk */
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	CHECK(strstr(accel_get_last_error(), "99"));
	OK(accel_pool_allocate(pool, NULL, &q, max_chunk + 1));	/* direct */
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	OK(accel_pool_deallocate(pool, NULL, q, max_chunk + 1));
	OK(accel_pool_deallocate(pool, NULL, p, 100));
	FAILS(accel_device_memory_allocate(&bad, &p, 16));
	OK(accel_memory_create(ctx->dev, 16, accel_dtype(ACCEL_UINT8), NULL, 0,
			       &m));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_INVALID_VALUE);
	OK(accel_memory_release(m));
	OK(accel_pool_destroy(pool));
}

/*
 * "Successful calls leave the message alone": a host-side copy between a
 * pinned array of one device and a mapped array of another, on a stream
 * of the source's device, must not leave the error of a wrong guess at
 * the stream's device.
 */
TEST_PEER(host_copy_success_leaves_no_error)
{
	size_t shape[1] = { 256 };
	accel_array_t src, dst;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_pinned_array(ctx->dev, 1, shape, NULL, NULL, 'C', &src));
	REQUIRE_OK(accel_mapped_array(ctx->peer, 1, shape, NULL, NULL, 'C',
				      NULL, &dst));
	accel_clear_last_error();
	OK(accel_array_copy_to_device(dst, src, s));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NONE);
	CHECK(!accel_get_last_error()[0]);
	/* a stream of the destination's device works as well */
	OK(accel_array_release(src));
	REQUIRE_OK(accel_pinned_array(ctx->peer, 1, shape, NULL, NULL, 'C',
				      &src));
	OK(accel_array_release(dst));
	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, shape, NULL, NULL, 'C',
				      NULL, &dst));
	OK(accel_array_copy_to_device(dst, src, s));
	CHECK(accel_peek_last_error_code() == ACCEL_ERROR_NONE);
	CHECK(!accel_get_last_error()[0]);
	OK(accel_array_release(src));
	OK(accel_array_release(dst));
	OK(accel_stream_destroy(ctx->dev, s));
}

/* Whether the last error names the device under test. */
static bool names_the_device(struct suite_ctx *ctx)
{
	bool named = strstr(accel_get_last_error(), ctx->name) != NULL;

	if (!named)
		printf("#   no device in: %s\n", accel_get_last_error());
	return named;
}

/*
 * "a message naming the function, the device and the reason": whatever
 * the call was handed (a device, a pool, a stream, a memory handle), its
 * errors name the device it worked on.
 */
TEST(every_error_names_its_device)
{
	accel_memory_t m, out;
	accel_stream_t s;
	accel_pool_t p;
	uint8_t *x;
	char buf[64];

	REQUIRE_OK(accel_device_pool(ctx->dev, &p));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_pool_allocate(p, s, (void **)&x, 1000));
	REQUIRE_OK(accel_memory_create(ctx->dev, 10, accel_dtype(ACCEL_FLOAT32),
				       NULL, 0, &m));
	FAILS(accel_pool_deallocate(p, s, x, 999));
	CHECK(names_the_device(ctx));
	FAILS(accel_device_memory_deallocate(ctx->dev, x + 8, 1000));
	CHECK(names_the_device(ctx));
	FAILS(accel_memory_copy_h2d(ctx->dev, x + 900, buf, 200));
	CHECK(names_the_device(ctx));
	FAILS(accel_stream_wait_event(ctx->dev, s, (accel_event_t)s));
	CHECK(names_the_device(ctx));
	FAILS(accel_event_record(ctx->dev, s, NULL));
	CHECK(names_the_device(ctx));
	FAILS(accel_memory_create(ctx->dev, 10, NULL, NULL, 0, &out));
	CHECK(names_the_device(ctx));
	FAILS(accel_memory_slice(m, 5, 10, &out));
	CHECK(names_the_device(ctx));
	FAILS(accel_memory_copy_from(m, buf, 20, 0));
	CHECK(names_the_device(ctx));
	FAILS(accel_memory_copy(m, m, 5, 0, 2));
	CHECK(names_the_device(ctx));
	/* a missing out-pointer or stream, once the device is known */
	FAILS(accel_stream_create(ctx->dev, NULL));
	CHECK(names_the_device(ctx));
	FAILS(accel_memory_copy_to_async(m, NULL, buf, 1, 0));
	CHECK(names_the_device(ctx));
	FAILS(accel_memory_copy_from_async(m, NULL, buf, 1, 0));
	CHECK(names_the_device(ctx));
	FAILS(accel_memory_copy_async(m, m, NULL, 1, 0, 1));
	CHECK(names_the_device(ctx));
	FAILS(accel_async_memory_copy_p2p(ctx->dev, ctx->dev, NULL, x, x + 500,
					  10));
	CHECK(names_the_device(ctx));
	OK(accel_memory_release(m));
	OK(accel_pool_deallocate(p, s, x, 1000));
	OK(accel_stream_destroy(ctx->dev, s));
}
