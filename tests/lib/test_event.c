// SPDX-License-Identifier: MIT
/* Events: record, query, synchronize, and streams waiting on them. */
#include "suite.h"

TEST(event_basics)
{
	accel_event_t e;
	accel_stream_t s;

	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	CHECK(accel_event_query(ctx->dev, e) == ACCEL_SUCCESS);	/* never recorded */
	OK(accel_event_synchronize(ctx->dev, e));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	OK(accel_event_record(ctx->dev, s, e));
	OK(accel_event_synchronize(ctx->dev, e));
	CHECK(accel_event_query(ctx->dev, e) == ACCEL_SUCCESS);
	OK(accel_stream_destroy(ctx->dev, s));
	/* an event outlives the stream it was recorded on */
	CHECK(accel_event_query(ctx->dev, e) == ACCEL_SUCCESS);
	OK(accel_event_destroy(ctx->dev, e));
	FAILS(accel_event_destroy(ctx->dev, e));
	FAILS(accel_event_query(ctx->dev, e));
	FAILS(accel_event_query(ctx->dev, NULL));
	FAILS(accel_event_create(ctx->dev, NULL));
}

TEST(event_covers_work_before_record)
{
	const size_t n = 4 << 20;
	uint8_t *d = dalloc(ctx, n), *h = xmalloc(n), *out = xmalloc(n);
	accel_stream_t s;
	accel_event_t e;
	accel_status_t st;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	fill_pattern(h, n, 81);
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	OK(accel_async_memory_copy_d2h(ctx->dev, s, out, d, n));
	OK(accel_event_record(ctx->dev, s, e));
	st = accel_event_query(ctx->dev, e);
	CHECK(st == ACCEL_SUCCESS || st == ACCEL_WARNING);
	OK(accel_event_synchronize(ctx->dev, e));
	CHECK(accel_event_query(ctx->dev, e) == ACCEL_SUCCESS);
	CHECK(check_pattern(out, n, 81));
	OK(accel_event_destroy(ctx->dev, e));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, d, n);
	free(h);
	free(out);
}

/* Stream B's copy of A's result must wait for A's writes, many times over. */
TEST(stream_waits_for_event_of_another_stream)
{
	enum { ROUNDS = 40 };
	const size_t n = 256 << 10, nb = 8 << 20;
	uint8_t *a = dalloc(ctx, n), *b = dalloc(ctx, n), *h = xmalloc(n);
	uint8_t *out = xmalloc(n), *busy = dalloc(ctx, nb);
	accel_stream_t s1, s2;
	accel_event_t e;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s1));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s2));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	for (int r = 0; r < ROUNDS; r++) {
		fill_pattern(h, n, 900 + r);
		busy_chain_of(ctx->dev, s1, busy, 2, nb / 2);	/* slow work first */
		OK(accel_async_memory_copy_h2d(ctx->dev, s1, a, h, n));
		OK(accel_event_record(ctx->dev, s1, e));
		OK(accel_stream_wait_event(ctx->dev, s2, e));
		OK(accel_async_memory_copy_d2d(ctx->dev, s2, b, a, n));
		OK(accel_async_memory_copy_d2h(ctx->dev, s2, out, b, n));
		OK(accel_stream_synchronize(ctx->dev, s2));
		if (!check_pattern(out, n, 900 + r)) {
			CHECK(!"round saw stale data");
			break;
		}
		/* s1 may not overwrite a before s2 has read it */
		OK(accel_stream_synchronize(ctx->dev, s1));
	}
	OK(accel_event_destroy(ctx->dev, e));
	OK(accel_stream_destroy(ctx->dev, s1));
	OK(accel_stream_destroy(ctx->dev, s2));
	dfree(ctx, a, n);
	dfree(ctx, b, n);
	dfree(ctx, busy, nb);
	free(h);
	free(out);
}

/* "Streams already waiting on it still wait for what it captured." */
TEST(event_destroyed_while_waited_on)
{
	const size_t n = 4 << 20, nb = 8 << 20;
	uint8_t *a = dalloc(ctx, n), *b = dalloc(ctx, n), *h = xmalloc(n), *back;
	uint8_t *busy = dalloc(ctx, nb);
	accel_stream_t s1, s2;
	accel_event_t e;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s1));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s2));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	fill_pattern(h, n, 95);
	busy_chain_of(ctx->dev, s1, busy, 2, nb / 2);	/* slow work first */
	OK(accel_async_memory_copy_h2d(ctx->dev, s1, a, h, n));
	OK(accel_event_record(ctx->dev, s1, e));
	OK(accel_stream_wait_event(ctx->dev, s2, e));
	OK(accel_event_destroy(ctx->dev, e));
	OK(accel_async_memory_copy_d2d(ctx->dev, s2, b, a, n));
	OK(accel_stream_synchronize(ctx->dev, s2));
	back = read_back(ctx, b, n);
	CHECK(check_pattern(back, n, 95));
	free(back);
	OK(accel_stream_destroy(ctx->dev, s1));
	OK(accel_stream_destroy(ctx->dev, s2));
	dfree(ctx, a, n);
	dfree(ctx, b, n);
	dfree(ctx, busy, nb);
	free(h);
}

/*
 * accel.h, accel_stream_destroy(): "Events recorded on it stay valid";
 * accel_event_record() captures the work submitted to the stream so far.
 * The destroy waited for that work, so the event is complete, and stays
 * so while new streams are made, which may take over what the backend
 * held for the destroyed one (on accel, its queue): the event names the
 * work of its record, not whatever the stream's backend handle names
 * later. A query, a synchronize and a new stream's wait all see it done.
 */
TEST(event_of_a_destroyed_stream_stays_complete_after_new_streams)
{
	enum { FRESH = 4 };
	const size_t n = 1 << 20;
	uint8_t *d = dalloc(ctx, n), *h = xmalloc(n);
	accel_stream_t s, fresh[FRESH];
	accel_event_t e;

	fill_pattern(h, n, 97);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	OK(accel_event_record(ctx->dev, s, e));
	OK(accel_stream_destroy(ctx->dev, s));
	for (int i = 0; i < FRESH; i++) {
		REQUIRE_OK(accel_stream_create(ctx->dev, &fresh[i]));
		CHECK(accel_event_query(ctx->dev, e) == ACCEL_SUCCESS);
	}
	OK(accel_event_synchronize(ctx->dev, e));
	OK(accel_stream_wait_event(ctx->dev, fresh[0], e));
	OK(accel_stream_synchronize(ctx->dev, fresh[0]));
	for (int i = 0; i < FRESH; i++)
		OK(accel_stream_destroy(ctx->dev, fresh[i]));
	OK(accel_event_destroy(ctx->dev, e));
	dfree(ctx, d, n);
	free(h);
}

TEST(event_bad_arguments)
{
	accel_stream_t s;
	accel_event_t e;
	int junk;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	FAILS(accel_event_record(ctx->dev, NULL, e));
	FAILS(accel_event_record(ctx->dev, s, NULL));
	FAILS(accel_event_record(ctx->dev, s, (accel_event_t)&junk));
	FAILS(accel_stream_wait_event(ctx->dev, s, (accel_event_t)&junk));
	FAILS(accel_event_synchronize(ctx->dev, (accel_event_t)&junk));
	OK(accel_event_destroy(ctx->dev, e));
	OK(accel_stream_destroy(ctx->dev, s));
}

TEST_PEER(event_of_another_device)
{
	accel_stream_t s, ps;
	accel_event_t pe;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_stream_create(ctx->peer, &ps));
	REQUIRE_OK(accel_event_create(ctx->peer, &pe));
	OK(accel_event_record(ctx->peer, ps, pe));
	FAILS(accel_event_record(ctx->dev, s, pe));	/* recorded where it lives */
	FAILS(accel_event_query(ctx->dev, pe));
	OK(accel_stream_wait_event(ctx->dev, s, pe));	/* a wait may cross */
	OK(accel_event_destroy(ctx->peer, pe));
	OK(accel_stream_destroy(ctx->peer, ps));
	OK(accel_stream_destroy(ctx->dev, s));
}
