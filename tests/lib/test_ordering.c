// SPDX-License-Identifier: MIT
/*
 * Ordering across streams, threads and releases (and mapped memory): an event wait binds to the record current when it
 * is queued, a query or synchronize to the latest record; a synchronous
 * call waits for the work submitted before it and nothing later; a
 * release does not wait for unrelated streams, and memory is not reused
 * while queued work may still touch it, another device's work included.
 *
 * Work is made observably pending with a chain of large device to device
 * copies. A device fast enough to finish the chain before the checks makes
 * a try inconclusive: the chain doubles and the try runs again.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <accel/memory.h>

#include "suite.h"

#define RELEASE_TRIES 3

/*
 * A stream busy before a release must be busy after it. Done (true) when
 * it is, or when it was not several times with longer and longer chains
 * (the release waited: a failure); not done when it was not busy before.
 */
static bool still_busy_after(bool before, bool after, int *copies,
			     int *misses)
{
	if (!before)
		return !try_longer(copies);
	if (after)
		return true;
	if (++*misses == RELEASE_TRIES) {
		suite_fail(__FILE__, __LINE__, "the release waited for another stream's work");
		return true;
	}
	*copies *= 2;
	return false;
}

/*
 * B produces into @res behind a long chain and records E; A waits on E and
 * copies @res on; E is recorded again on an idle stream C. A must still
 * see B's result: its wait was bound to B's record.
 */
TEST(ordering_rerecord_keeps_wait_bound)
{
	const size_t n = 1 << 20;
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF), *src = dalloc(ctx, n);
	uint8_t *res = dalloc(ctx, n), *out = dalloc(ctx, n);
	uint8_t *h = xmalloc(n), *back;
	accel_stream_t a, b, c;
	accel_event_t e;
	int copies = BUSY_START;
	bool conclusive = false;

	REQUIRE_OK(accel_stream_create(ctx->dev, &a));
	REQUIRE_OK(accel_stream_create(ctx->dev, &b));
	REQUIRE_OK(accel_stream_create(ctx->dev, &c));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	fill_pattern(h, n, 17);
	REQUIRE_OK(accel_memory_copy_h2d(ctx->dev, src, h, n));
	while (!conclusive) {
		REQUIRE_OK(accel_device_memory_set(ctx->dev, res, 0, n));
		REQUIRE_OK(accel_device_memory_set(ctx->dev, out, 0, n));
		busy_chain(ctx->dev, b, big, copies);
		OK(accel_async_memory_copy_d2d(ctx->dev, b, res, src, n));
		OK(accel_event_record(ctx->dev, b, e));
		OK(accel_stream_wait_event(ctx->dev, a, e));
		OK(accel_async_memory_copy_d2d(ctx->dev, a, out, res, n));
		OK(accel_event_record(ctx->dev, c, e));
		conclusive = stream_busy(ctx->dev, b) || !try_longer(&copies);
		OK(accel_stream_synchronize(ctx->dev, a));
		OK(accel_stream_synchronize(ctx->dev, b));
	}
	back = read_back(ctx, out, n);
	CHECK(check_pattern(back, n, 17));
	free(back);
	free(h);
	OK(accel_event_destroy(ctx->dev, e));
	OK(accel_stream_destroy(ctx->dev, a));
	OK(accel_stream_destroy(ctx->dev, b));
	OK(accel_stream_destroy(ctx->dev, c));
	dfree(ctx, big, 2 * BUSY_HALF);
	dfree(ctx, src, n);
	dfree(ctx, res, n);
	dfree(ctx, out, n);
}

/*
 * After E's record on busy B is replaced by one on idle C, a query and a
 * synchronize see C's (complete), while A, which waited on B's record,
 * stays blocked until B is done.
 */
/* whether @e completes within @seconds, polled */
static bool event_done_within(accel_device_t dev, accel_event_t e, double seconds)
{
	double end = now_s() + seconds;
	accel_status_t st;

	while ((st = accel_event_query(dev, e)) == ACCEL_WARNING && now_s() < end)
		usleep(100);
	return st == ACCEL_SUCCESS;
}

TEST(ordering_wait_binds_at_wait_query_at_latest)
{
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	accel_stream_t a, b, c;
	accel_event_t e;
	int copies = BUSY_START;
	bool conclusive = false;

	REQUIRE_OK(accel_stream_create(ctx->dev, &a));
	REQUIRE_OK(accel_stream_create(ctx->dev, &b));
	REQUIRE_OK(accel_stream_create(ctx->dev, &c));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	while (!conclusive) {
		bool a_blocked, query_done;

		busy_chain(ctx->dev, b, big, copies);
		OK(accel_event_record(ctx->dev, b, e));
		OK(accel_stream_wait_event(ctx->dev, a, e));
		OK(accel_event_record(ctx->dev, c, e));
		/* a GPU takes a moment to pass a record on idle C: poll */
		query_done = event_done_within(ctx->dev, e, 0.1);
		OK(accel_event_synchronize(ctx->dev, e));
		usleep(20000);		/* time for A to run, were it released */
		a_blocked = stream_busy(ctx->dev, a);
		conclusive = stream_busy(ctx->dev, b) || !try_longer(&copies);
		if (conclusive) {
			CHECK(query_done);
			CHECK(a_blocked);	/* bound to B's record */
		}
		OK(accel_stream_synchronize(ctx->dev, b));
		OK(accel_stream_synchronize(ctx->dev, a));
		CHECK(!stream_busy(ctx->dev, a));
	}
	OK(accel_event_destroy(ctx->dev, e));
	OK(accel_stream_destroy(ctx->dev, a));
	OK(accel_stream_destroy(ctx->dev, b));
	OK(accel_stream_destroy(ctx->dev, c));
	dfree(ctx, big, 2 * BUSY_HALF);
}

/* ------------------------------------------------------------------ */
/* Synchronous calls against a producer that never lets its stream idle */

#define RING 128			/* batches the producer keeps queued */
#define BATCH 4			/* copies per batch */
#define BATCH_COPY (1u << 20)
#define SYNC_COPIES 10		/* each three synchronous calls */
#define WATCHDOG_MIN_S 10
#define WATCHDOG_MAX_S 100

struct producer {
	struct suite_ctx *ctx;
	accel_stream_t s;
	uint8_t *buf;		/* 2 * BATCH_COPY */
	atomic_bool stop;
	atomic_int batches;
	bool ok;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	accel_event_t ring[RING];
	bool recorded[RING] = { false };

	p->ok = true;
	for (int i = 0; i < RING; i++)
		p->ok &= accel_event_create(p->ctx->dev, &ring[i]) == ACCEL_SUCCESS;
	for (int i = 0; p->ok && !atomic_load(&p->stop); i = (i + 1) % RING) {
		/* the batch RING back must be done: the queue stays bounded */
		if (recorded[i])
			p->ok &= accel_event_synchronize(p->ctx->dev,
							 ring[i]) == ACCEL_SUCCESS;
		for (int k = 0; k < BATCH; k++)
			p->ok &= accel_async_memory_copy_d2d(p->ctx->dev, p->s,
					p->buf + (k & 1) * BATCH_COPY,
					p->buf + !(k & 1) * BATCH_COPY,
					BATCH_COPY) == ACCEL_SUCCESS;
		p->ok &= accel_event_record(p->ctx->dev, p->s,
					    ring[i]) == ACCEL_SUCCESS;
		recorded[i] = true;
		atomic_fetch_add(&p->batches, 1);
	}
	OK(accel_stream_synchronize(p->ctx->dev, p->s));
	for (int i = 0; i < RING; i++)
		accel_event_destroy(p->ctx->dev, ring[i]);
	return NULL;
}

static void starved(int sig)
{
	static const char msg[] = "#   a synchronous copy waited for work queued after it\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

/* Seconds a batch takes, so that the watchdog fits the device. */
static double batch_seconds(struct suite_ctx *ctx, accel_stream_t s, uint8_t *buf)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int k = 0; k < BATCH; k++)
		REQUIRE_OK(accel_async_memory_copy_d2d(ctx->dev, s,
				buf + (k & 1) * BATCH_COPY,
				buf + !(k & 1) * BATCH_COPY, BATCH_COPY));
	REQUIRE_OK(accel_stream_synchronize(ctx->dev, s));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

/*
 * Each synchronous call waits for at most the producer's backlog (RING
 * batches) when it is made: the watchdog allows four times that for every
 * call, and never less than WATCHDOG_MIN_S. A call that waits for the
 * producer's stream to become idle waits until the producer happens to
 * fall behind, if ever.
 */
TEST(ordering_sync_copy_not_starved_by_flood)
{
	struct producer p = { .ctx = ctx };
	uint8_t *d = dalloc(ctx, 16), h[16], back[16];
	double limit;
	pthread_t t;

	REQUIRE_OK(accel_stream_create(ctx->dev, &p.s));
	p.buf = dalloc(ctx, 2 * BATCH_COPY);
	limit = 4.0 * 3 * SYNC_COPIES * RING * batch_seconds(ctx, p.s, p.buf);
	limit = limit < WATCHDOG_MIN_S ? WATCHDOG_MIN_S :
		limit > WATCHDOG_MAX_S ? WATCHDOG_MAX_S : limit;
	REQUIRE(pthread_create(&t, NULL, produce, &p) == 0);
	while (atomic_load(&p.batches) < RING)	/* the backlog is there */
		usleep(1000);
	signal(SIGALRM, starved);
	alarm((unsigned int)limit);
	for (int i = 0; i < SYNC_COPIES; i++) {
		memset(h, i, sizeof(h));
		OK(accel_memory_copy_h2d(ctx->dev, d, h, sizeof(h)));
		OK(accel_memory_copy_d2h(ctx->dev, back, d, sizeof(back)));
		OK(accel_device_memory_set(ctx->dev, d, (uint8_t)i, 16));
		CHECK(!memcmp(h, back, sizeof(h)));
	}
	OK(accel_device_synchronize(ctx->dev));
	alarm(0);
	atomic_store(&p.stop, true);
	pthread_join(t, NULL);
	CHECK(p.ok);
	OK(accel_stream_destroy(ctx->dev, p.s));
	dfree(ctx, p.buf, 2 * BATCH_COPY);
	dfree(ctx, d, 16);
}

/* ------------------------------------------------------------------ */
/* Releases */

/* One small object of every kind that a release or free lets go. */
struct small_objects {
	accel_memory_t m, slice, host;
	accel_array_t ary, pinned, mapped;
	void *raw, *raw_host, *raw_unified;
};

static void make_small_objects(struct suite_ctx *ctx, struct small_objects *o)
{
	const unsigned int rw = ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE;
	const accel_dtype_t f32 = accel_dtype(ACCEL_FLOAT32);
	const size_t shape[1] = { 4 };

	REQUIRE_OK(accel_memory_create(ctx->dev, 4, f32, NULL, 0, &o->m));
	REQUIRE_OK(accel_memory_slice(o->m, 1, 2, &o->slice));
	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, f32, NULL, 'C', NULL,
				      &o->ary));
	REQUIRE_OK(accel_memory_create(ctx->dev, 4, f32, NULL, rw, &o->host));
	REQUIRE_OK(accel_pinned_array(ctx->dev, 1, shape, f32, NULL, 'C',
				      &o->pinned));
	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, shape, f32, NULL, 'C', NULL,
				      &o->mapped));
	REQUIRE_OK(accel_device_memory_allocate(ctx->dev, &o->raw, 16));
	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, &o->raw_host, 16));
	REQUIRE_OK(accel_unified_memory_allocate(ctx->dev, &o->raw_unified, 16));
}

/* Release them all; returns the milliseconds it took. */
static double release_small_objects(struct suite_ctx *ctx,
				    struct small_objects *o)
{
	double t0 = now_s();

	OK(accel_memory_release(o->slice));
	OK(accel_memory_release(o->m));
	OK(accel_array_release(o->ary));
	OK(accel_memory_release(o->host));
	OK(accel_array_release(o->pinned));
	OK(accel_array_release(o->mapped));
	OK(accel_device_memory_deallocate(ctx->dev, o->raw, 16));
	OK(accel_host_memory_deallocate(ctx->dev, o->raw_host, 16));
	OK(accel_unified_memory_deallocate(ctx->dev, o->raw_unified, 16));
	return (now_s() - t0) * 1e3;
}

/*
 * Milliseconds that a chain of @copies on @b still runs once queued: 0
 * when it was over before it could be seen.
 */
static double chain_left_ms(struct suite_ctx *ctx, accel_stream_t b, uint8_t *big,
			    int copies)
{
	double t0;

	busy_chain(ctx->dev, b, big, copies);
	t0 = now_s();
	if (!stream_busy(ctx->dev, b))
		return 0;
	OK(accel_stream_synchronize(ctx->dev, b));
	return (now_s() - t0) * 1e3;
}

/*
 * Releasing a small handle or array, of any kind, or freeing a small raw
 * allocation, leaves another stream's work running.
 *
 * A try is conclusive only where the chain, once queued, runs well longer
 * than the releases take with nothing queued anywhere: on a slow kernel
 * (a debug one) they take tens of milliseconds, while the device keeps up
 * with the queueing, and a chain ends during releases that waited for
 * nothing. Each try measures that first, on a chain of the same length.
 */
TEST(ordering_release_does_not_wait_for_streams)
{
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	struct small_objects o;
	int copies = BUSY_START, misses = 0;
	bool done = false;
	double own_ms;
	accel_stream_t b;

	REQUIRE_OK(accel_stream_create(ctx->dev, &b));
	make_small_objects(ctx, &o);
	own_ms = release_small_objects(ctx, &o);
	while (!done) {
		bool before;

		if (chain_left_ms(ctx, b, big, copies) < 2 * own_ms + 5) {
			try_longer(&copies);
			continue;
		}
		make_small_objects(ctx, &o);
		busy_chain(ctx->dev, b, big, copies);
		before = stream_busy(ctx->dev, b);
		release_small_objects(ctx, &o);
		done = still_busy_after(before, stream_busy(ctx->dev, b), &copies, &misses);
		OK(accel_stream_synchronize(ctx->dev, b));
	}
	OK(accel_stream_destroy(ctx->dev, b));
	dfree(ctx, big, 2 * BUSY_HALF);
}

/*
 * A handle released while a copy into it is still queued: memory allocated
 * after the release (with no stream, and written on another stream at
 * once) must not receive that copy's bytes.
 */
static void no_reuse(struct suite_ctx *ctx, unsigned int flags)
{
	const size_t n = 64 << 10;
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF), *h = xmalloc(n);
	uint8_t *zero = xmalloc(n), *back = xmalloc(n);
	accel_memory_t src, m, fresh;
	struct accel_memory_info mi, fi;
	accel_stream_t b, c;
	int copies = BUSY_START, misses = 0;
	bool done = false;

	REQUIRE_OK(accel_stream_create(ctx->dev, &b));
	REQUIRE_OK(accel_stream_create(ctx->dev, &c));
	fill_pattern(h, n, 29);
	memset(zero, 0, n);
	REQUIRE_OK(accel_memory_create(ctx->dev, n, accel_dtype(ACCEL_UINT8),
				       h, 0, &src));
	while (!done) {
		bool before;

		REQUIRE_OK(accel_memory_create(ctx->dev, n,
					       accel_dtype(ACCEL_UINT8), NULL,
					       flags, &m));
		REQUIRE_OK(accel_memory_get_info(m, &mi));
		busy_chain(ctx->dev, b, big, copies);
		OK(accel_memory_copy_async(m, src, b, ACCEL_ALL, 0, 0));
		before = stream_busy(ctx->dev, b);
		OK(accel_memory_release(m));
		done = still_busy_after(before, stream_busy(ctx->dev, b), &copies, &misses);
		REQUIRE_OK(accel_memory_create(ctx->dev, n,
					       accel_dtype(ACCEL_UINT8), NULL,
					       flags, &fresh));
		REQUIRE_OK(accel_memory_get_info(fresh, &fi));
		OK(accel_memory_copy_from_async(fresh, c, zero, ACCEL_ALL, 0));
		OK(accel_stream_synchronize(ctx->dev, c));
		OK(accel_stream_synchronize(ctx->dev, b));
		OK(accel_memory_copy_to(fresh, back, ACCEL_ALL, 0));
		if (!check_bytes(back, n, 0))
			printf("#   the new memory %s the released one's block\n",
			       fi.ptr == mi.ptr ? "reuses" : "does not reuse");
		CHECK(check_bytes(back, n, 0));
		OK(accel_memory_release(fresh));
	}
	OK(accel_memory_release(src));
	OK(accel_stream_destroy(ctx->dev, b));
	OK(accel_stream_destroy(ctx->dev, c));
	dfree(ctx, big, 2 * BUSY_HALF);
	free(h);
	free(zero);
	free(back);
}

/* device-only memory is pool memory; host-accessible memory is unified */
TEST(ordering_no_reuse_under_queued_transfer)
{
	no_reuse(ctx, 0);
	no_reuse(ctx, ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE);
}

/*
 * The last handle on mapped memory cannot be released: the mapping would
 * point at freed memory. The call fails with ACCEL_ERROR_IN_USE and leaves
 * the handle valid; after the unmap it succeeds. Another handle on the
 * storage may go, as the mapping stays with the storage.
 */
TEST(ordering_release_of_mapped_memory)
{
	const unsigned int rw = ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE;
	accel_memory_t m, slice;
	uint8_t out[64];
	uint8_t *p;

	REQUIRE_OK(accel_memory_create(ctx->dev, 64, accel_dtype(ACCEL_UINT8),
				       NULL, rw, &m));
	REQUIRE_OK(accel_memory_slice(m, 0, 8, &slice));
	REQUIRE_OK(accel_memory_map(m, ACCEL_MAP_WRITE, (void **)&p));
	OK(accel_memory_release(slice));	/* not the last handle */
	FAILS_WITH(ACCEL_ERROR_IN_USE, accel_memory_release(m));
	CHECK(accel_memory_is_valid(m) == 1);
	memset(p, 0x5a, 64);			/* still mapped, still there */
	OK(accel_memory_unmap(m));
	OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
	CHECK(check_bytes(out, sizeof(out), 0x5a));
	OK(accel_memory_release(m));
	CHECK(accel_memory_is_valid(m) == 0);
}

/*
 * The same when the last handle on mapped storage is an array (a view of
 * the memory, or an interface view of it): releasing it would free the
 * mapped bytes. A memory handle made from the array unmaps it.
 */
TEST(ordering_array_keeps_mapped_storage)
{
	const unsigned int rw = ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE;
	const size_t shape[1] = { 64 };
	accel_memory_t m, again;
	accel_array_t a;
	uint8_t out[64];
	uint8_t *p;

	REQUIRE_OK(accel_memory_create(ctx->dev, 64, accel_dtype(ACCEL_UINT8),
				       NULL, rw, &m));
	REQUIRE_OK(accel_memory_as_array(m, 1, shape, NULL, 'C', &a));
	REQUIRE_OK(accel_memory_map(m, ACCEL_MAP_WRITE, (void **)&p));
	OK(accel_memory_release(m));		/* the array holds the storage */
	FAILS_WITH(ACCEL_ERROR_IN_USE, accel_array_release(a));
	memset(p, 0x3c, 64);			/* still mapped, still there */
	REQUIRE_OK(accel_array_as_memory(a, &again));
	OK(accel_memory_unmap(again));
	OK(accel_memory_copy_to(again, out, ACCEL_ALL, 0));
	CHECK(check_bytes(out, sizeof(out), 0x3c));
	OK(accel_memory_release(again));
	OK(accel_array_release(a));
}

struct map_race {
	accel_memory_t m;
	void *p;
	accel_status_t ret;
};

static void *map_racer(void *arg)
{
	struct map_race *r = arg;

	r->ret = accel_memory_map(r->m, ACCEL_MAP_READ, &r->p);
	return NULL;
}

/*
 * A release racing a map (which waits for the device's queued work before
 * it counts the mapping) takes effect either before the map (the map is
 * refused) or after it (the release is refused and the handle stays
 * valid): never a refused release that ended the handle anyway.
 */
TEST(ordering_release_racing_map)
{
	const unsigned int rw = ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE;
	uint8_t *buf = dalloc(ctx, 2 * BUSY_HALF);
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (int i = 0; i < 8; i++) {
		struct map_race r = { 0 };
		pthread_t t;
		accel_status_t rel;

		REQUIRE_OK(accel_memory_create(ctx->dev, 64, accel_dtype(ACCEL_UINT8),
					       NULL, rw, &r.m));
		busy_chain(ctx->dev, s, buf, BUSY_START);
		REQUIRE(pthread_create(&t, NULL, map_racer, &r) == 0);
		usleep(1000 << (i % 4));
		rel = accel_memory_release(r.m);
		pthread_join(t, NULL);
		if (rel == ACCEL_SUCCESS) {
			CHECK(r.ret == ACCEL_FAILED);
			CHECK(accel_memory_is_valid(r.m) == 0);
			continue;
		}
		CHECK(accel_peek_last_error_code() == ACCEL_ERROR_IN_USE);
		CHECK(r.ret == ACCEL_SUCCESS);
		CHECK(accel_memory_is_valid(r.m) == 1);
		OK(accel_memory_unmap(r.m));
		OK(accel_memory_release(r.m));
	}
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, buf, 2 * BUSY_HALF);
}

/* ------------------------------------------------------------------ */
/* Frees wait for the streams of the device that queued the work */

/* Across backends a p2p copy is not queued (accel.h): nothing to observe. */
static void needs_queued_p2p(struct suite_ctx *ctx)
{
	if (peer_on_another_backend(ctx))
		suite_skip("a p2p copy between backends waits for its stream");
}

static uint8_t *alloc_on(accel_device_t dev, size_t n)
{
	void *p = NULL;

	REQUIRE_OK(accel_device_memory_allocate(dev, &p, n));
	return p;
}

/*
 * A p2p copy into memory of the device under test, queued on a busy stream
 * of the peer: freeing that memory (device memory, and unified memory,
 * which is "accepted wherever a device pointer is") does not wait, but
 * leaves it to the copy (on the cpu backend, the bytes are unmapped at the
 * free: the copy would crash), and the device must not count it free while
 * the copy is queued.
 */
static void check_free_waits_for_peer_p2p(
	struct suite_ctx *ctx,
	accel_status_t (*alloc)(const accel_device_t, void **, size_t),
	accel_status_t (*dealloc)(const accel_device_t, void *, size_t))
{
	const size_t n = 1 << 20;
	uint8_t *big = alloc_on(ctx->peer, 2 * BUSY_HALF);
	uint8_t *src = alloc_on(ctx->peer, n);
	int copies = BUSY_START;
	accel_stream_t s;

	needs_queued_p2p(ctx);
	REQUIRE_OK(accel_stream_create(ctx->peer, &s));
	REQUIRE_OK(accel_device_memory_set(ctx->peer, src, 0xAA, n));
	for (;;) {
		void *dst = NULL;
		size_t before, after;
		bool pending;

		REQUIRE_OK(alloc(ctx->dev, &dst, n));
		busy_chain(ctx->peer, s, big, copies);
		OK(accel_async_memory_copy_p2p(ctx->dev, ctx->peer, s, dst,
					       src, n));
		before = free_memory(ctx);
		OK(dealloc(ctx->dev, dst, n));
		after = free_memory(ctx);
		pending = stream_busy(ctx->peer, s);
		OK(accel_stream_synchronize(ctx->peer, s));
		if (pending) {
			CHECK(after == before);	/* not given back yet */
			break;
		}
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->peer, s));
	OK(accel_device_memory_deallocate(ctx->peer, big, 2 * BUSY_HALF));
	OK(accel_device_memory_deallocate(ctx->peer, src, n));
}

TEST_PEER(ordering_free_waits_for_peer_p2p)
{
	check_free_waits_for_peer_p2p(ctx, accel_device_memory_allocate,
				      accel_device_memory_deallocate);
}

TEST_PEER(ordering_unified_free_waits_for_peer_p2p)
{
	check_free_waits_for_peer_p2p(ctx, accel_unified_memory_allocate,
				      accel_unified_memory_deallocate);
}

/*
 * The same with memory handles: a handle created after the release must
 * not get the block that the peer's queued copy still writes into.
 */
TEST_PEER(ordering_release_waits_for_peer_p2p)
{
	const size_t n = 4096;
	uint8_t *big = alloc_on(ctx->peer, 2 * BUSY_HALF);
	uint8_t *src = alloc_on(ctx->peer, n);
	uint8_t ones[4096], out[4096];
	int copies = BUSY_START;
	accel_memory_t from;
	accel_stream_t s;

	needs_queued_p2p(ctx);
	memset(ones, 0x11, n);
	REQUIRE_OK(accel_stream_create(ctx->peer, &s));
	REQUIRE_OK(accel_device_memory_set(ctx->peer, src, 0xAA, n));
	REQUIRE_OK(accel_memory_wrap(ctx->peer, src, n,
				     accel_dtype(ACCEL_UINT8), &from));
	for (;;) {
		accel_memory_t x, y;
		bool pending;

		REQUIRE_OK(accel_memory_create(ctx->dev, n,
					       accel_dtype(ACCEL_UINT8), NULL,
					       0, &x));
		busy_chain(ctx->peer, s, big, copies);
		OK(accel_memory_copy_async(x, from, s, ACCEL_ALL, 0, 0));
		OK(accel_memory_release(x));
		REQUIRE_OK(accel_memory_create(ctx->dev, n,
					       accel_dtype(ACCEL_UINT8), ones,
					       0, &y));
		pending = stream_busy(ctx->peer, s);
		OK(accel_stream_synchronize(ctx->peer, s));
		OK(accel_memory_copy_to(y, out, ACCEL_ALL, 0));
		OK(accel_memory_release(y));
		if (pending) {
			CHECK(check_bytes(out, n, 0x11));
			break;
		}
		try_longer(&copies);
	}
	OK(accel_memory_release(from));
	OK(accel_stream_destroy(ctx->peer, s));
	OK(accel_device_memory_deallocate(ctx->peer, big, 2 * BUSY_HALF));
	OK(accel_device_memory_deallocate(ctx->peer, src, n));
}

/*
 * Pinned memory of the device under test, written by the peer's d2h. A
 * peer for which that memory is pageable (an accel device) copies into
 * it only once its stream is idle, as CUDA does: then nothing is queued
 * when the memory goes, and no longer chain changes that.
 */
TEST_PEER(ordering_pinned_free_waits_for_peer_d2h)
{
	const size_t n = 1 << 20;
	uint8_t *big = alloc_on(ctx->peer, 2 * BUSY_HALF);
	uint8_t *src = alloc_on(ctx->peer, n);
	int copies = BUSY_START, waited = 0;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->peer, &s));
	REQUIRE_OK(accel_device_memory_set(ctx->peer, src, 0xAA, n));
	for (;;) {
		void *pin;
		bool chained, pending;

		REQUIRE_OK(accel_host_memory_allocate(ctx->dev, &pin, n));
		busy_chain(ctx->peer, s, big, copies);
		chained = stream_busy(ctx->peer, s);
		OK(accel_async_memory_copy_d2h(ctx->peer, s, pin, src, n));
		/* twice in a row: a chain may also end just as the copy is queued */
		waited = chained && !stream_busy(ctx->peer, s) ? waited + 1 : 0;
		if (waited == 2)
			suite_skip("the peer's d2h into this device's pinned memory waits for its stream");
		OK(accel_host_memory_deallocate(ctx->dev, pin, n));
		pending = stream_busy(ctx->peer, s);
		/* the copy must still have its memory */
		OK(accel_stream_synchronize(ctx->peer, s));
		if (pending)
			break;
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->peer, s));
	OK(accel_device_memory_deallocate(ctx->peer, big, 2 * BUSY_HALF));
	OK(accel_device_memory_deallocate(ctx->peer, src, n));
}


/*
 * On a cpu device any host memory is the device's host memory, another cpu
 * device's memory too. A pool block of the device that the peer's queued
 * d2h writes into, freed with no stream, is reused only after that copy
 * (accel.h: memory is "never reused under a queued transfer"): a new block
 * keeps what was written into it after the free.
 */
TEST_PEER(ordering_pool_free_waits_for_peer_taking_it_as_host_memory)
{
	const char *name;
	size_t n = 1u << 20;
	int copies = BUSY_START;
	uint8_t *big, *src, *out = malloc(n), *ones = malloc(n);
	accel_pool_t pool;
	accel_stream_t s;

	REQUIRE_OK(accel_get_device_name(ctx->dev, &name));
	if (strncmp(name, "cpu:", 4))
		suite_skip("only a cpu device takes another device's memory for host memory");
	REQUIRE(out && ones);
	memset(ones, 0x11, n);
	big = alloc_on(ctx->peer, 2 * BUSY_HALF);
	src = alloc_on(ctx->peer, n);
	REQUIRE_OK(accel_device_memory_set(ctx->peer, src, 0xaa, n));
	REQUIRE_OK(accel_stream_create(ctx->peer, &s));
	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	for (;;) {
		void *dst, *again;
		bool pending;

		REQUIRE_OK(accel_pool_allocate(pool, NULL, &dst, n));
		busy_chain(ctx->peer, s, big, copies);
		OK(accel_async_memory_copy_d2h(ctx->peer, s, dst, src, n));
		OK(accel_pool_deallocate(pool, NULL, dst, n));
		REQUIRE_OK(accel_pool_allocate(pool, NULL, &again, n));
		OK(accel_memory_copy_h2d(ctx->dev, again, ones, n));
		pending = stream_busy(ctx->peer, s);
		OK(accel_stream_synchronize(ctx->peer, s));
		OK(accel_memory_copy_d2h(ctx->dev, out, again, n));
		OK(accel_pool_deallocate(pool, NULL, again, n));
		if (pending) {
			CHECK(!memcmp(out, ones, n));
			break;
		}
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->peer, s));
	OK(accel_device_memory_deallocate(ctx->peer, big, 2 * BUSY_HALF));
	OK(accel_device_memory_deallocate(ctx->peer, src, n));
	free(out);
	free(ones);
}

/* ------------------------------------------------------------------ */
/* A host array waits for every device that queued a transfer on it */

/*
 * A d2h into a host array queued behind a chain on the device under test,
 * then an h2d from it on the peer: the release must wait for both, so an
 * event recorded after the d2h has completed once it returns.
 */
TEST_PEER(ordering_host_array_release_waits_for_every_device)
{
	const size_t n = 1 << 20;
	size_t shape[1] = { n };
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	int copies = BUSY_START;
	accel_array_t d0, d1;
	accel_stream_t s0, s1;
	accel_event_t e;

	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s0));
	REQUIRE_OK(accel_stream_create(ctx->peer, &s1));
	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape,
				      accel_dtype(ACCEL_UINT8), NULL, 'C',
				      NULL, &d0));
	REQUIRE_OK(accel_device_array(ctx->peer, 1, shape,
				      accel_dtype(ACCEL_UINT8), NULL, 'C',
				      NULL, &d1));
	for (;;) {
		accel_array_t h;
		bool before, after;

		REQUIRE_OK(accel_host_array(NULL, 1, shape,
					    accel_dtype(ACCEL_UINT8), NULL,
					    'C', 0, &h));
		busy_chain(ctx->dev, s0, big, copies);
		OK(accel_array_copy_to_host(d0, h, s0, NULL));
		OK(accel_event_record(ctx->dev, s0, e));
		OK(accel_array_copy_to_device(d1, h, s1));
		before = stream_busy(ctx->dev, s0);
		OK(accel_array_release(h));
		after = accel_event_query(ctx->dev, e) == ACCEL_WARNING;
		OK(accel_stream_synchronize(ctx->dev, s0));
		OK(accel_stream_synchronize(ctx->peer, s1));
		if (before) {
			CHECK(!after);	/* the queued d2h was over */
			break;
		}
		try_longer(&copies);
	}
	OK(accel_array_release(d0));
	OK(accel_array_release(d1));
	OK(accel_stream_destroy(ctx->dev, s0));
	OK(accel_stream_destroy(ctx->peer, s1));
	OK(accel_event_destroy(ctx->dev, e));
	dfree(ctx, big, 2 * BUSY_HALF);
}

/* ------------------------------------------------------------------ */
/* Synchronous calls ignore work queued after they began */

struct sync_call {
	void (*fn)(struct sync_call *c);
	void (*prepare)(struct sync_call *c);	/* before each try, or NULL */
	struct suite_ctx *ctx;
	accel_pool_t pool;
	uint8_t *dst, *src;
	accel_memory_t mdst, msrc;
	accel_device_t later;	/* the device of stream B, or NULL: ctx->dev */
	atomic_int started;
};

static void *run_sync_call(void *arg)
{
	struct sync_call *c = arg;

	atomic_store(&c->started, 1);
	c->fn(c);
	return NULL;
}

/*
 * Stream A (the first a device drains: the newest) is busy when c->fn
 * starts on a thread; while it waits, a longer chain goes on the idle
 * stream B. Once c->fn returns, B must still be busy: the call did not
 * wait for B's later work.
 */
/* the largest copy of stream B's chain: a buffer of 1 GiB */
#define LATER_HALF_MAX (BUSY_HALF << 5)

static void check_ignores_later_work(struct suite_ctx *ctx,
				     struct sync_call *c)
{
	accel_device_t bd = c->later ? c->later : ctx->dev;
	uint8_t *big_a = dalloc(ctx, 2 * BUSY_HALF);
	size_t later_half = BUSY_HALF;
	uint8_t *big_b = alloc_on(bd, 2 * later_half);
	int copies = BUSY_START, later_copies = 2 * BUSY_START;
	accel_stream_t a, b;

	REQUIRE_OK(accel_stream_create(bd, &b));
	REQUIRE_OK(accel_stream_create(ctx->dev, &a));
	c->ctx = ctx;
	for (;;) {
		bool a_busy, b_busy;
		pthread_t t;

		atomic_store(&c->started, 0);
		if (c->prepare)
			c->prepare(c);
		busy_chain(ctx->dev, a, big_a, copies);
		REQUIRE(!pthread_create(&t, NULL, run_sync_call, c));
		while (!atomic_load(&c->started))
			usleep(1000);
		usleep(200000);		/* the call is under way */
		if (!stream_busy(ctx->dev, a)) {
			/*
			 * Over already: inconclusive, and B's chain (slow on
			 * a cpu device in the VM) would only cost time.
			 */
			pthread_join(t, NULL);
			OK(accel_stream_synchronize(ctx->dev, a));
			try_longer(&copies);
			if (later_copies < 2 * copies)
				later_copies = 2 * copies;
			continue;
		}
		busy_chain_of(bd, b, big_b, later_copies, later_half);
		a_busy = stream_busy(ctx->dev, a);	/* the call still waits */
		pthread_join(t, NULL);
		b_busy = stream_busy(bd, b);
		OK(accel_stream_synchronize(ctx->dev, a));
		OK(accel_stream_synchronize(bd, b));
		if (a_busy && (b_busy || later_half >= LATER_HALF_MAX)) {
			CHECK(b_busy);
			break;
		}
		/*
		 * B's chain over first proves nothing when B's device is the
		 * faster (a GPU beside a cpu device): lengthen it until it
		 * outlasts the call, as it always does unless the call waits.
		 * Past BUSY_MAX copies, longer copies: a GPU queues only so
		 * many, so more of them would not keep it busy for longer.
		 */
		if (a_busy && later_copies < BUSY_MAX) {
			later_copies *= 2;
		} else if (a_busy) {
			OK(accel_device_memory_deallocate(bd, big_b, 2 * later_half));
			later_half *= 2;
			big_b = alloc_on(bd, 2 * later_half);
		} else {
			try_longer(&copies);
		}
		if (later_copies < 2 * copies)
			later_copies = 2 * copies;
	}
	OK(accel_stream_destroy(ctx->dev, a));
	OK(accel_stream_destroy(bd, b));
	dfree(ctx, big_a, 2 * BUSY_HALF);
	OK(accel_device_memory_deallocate(bd, big_b, 2 * later_half));
}

static void copy_h2d(struct sync_call *c)
{
	uint8_t h[16] = "hello";

	OK(accel_memory_copy_h2d(c->ctx->dev, c->dst, h, sizeof(h)));
}

TEST(ordering_sync_copy_ignores_later_work)
{
	struct sync_call c = { .fn = copy_h2d };

	c.dst = dalloc(ctx, 16);
	check_ignores_later_work(ctx, &c);
	dfree(ctx, c.dst, 16);
}

static void device_sync(struct sync_call *c)
{
	OK(accel_device_synchronize(c->ctx->dev));
}

TEST(ordering_device_sync_ignores_later_work)
{
	struct sync_call c = { .fn = device_sync };

	check_ignores_later_work(ctx, &c);
}

static void copy_p2p(struct sync_call *c)
{
	OK(accel_memory_copy_p2p(c->ctx->dev, c->later, c->dst, c->src, 16));
}

/*
 * A synchronous p2p waits for both devices' work queued before it: work
 * queued on the second device while it waits for the first's does not
 * delay it (accel.h, Ordering).
 */
TEST_PEER(ordering_sync_p2p_ignores_later_work_on_the_other_device)
{
	struct sync_call c = { .fn = copy_p2p, .later = ctx->peer };

	c.dst = dalloc(ctx, 16);
	c.src = alloc_on(ctx->peer, 16);
	check_ignores_later_work(ctx, &c);
	dfree(ctx, c.dst, 16);
	OK(accel_device_memory_deallocate(ctx->peer, c.src, 16));
}

static void copy_handles(struct sync_call *c)
{
	OK(accel_memory_copy(c->mdst, c->msrc, ACCEL_ALL, 0, 0));
}

static accel_memory_t wrap_pinned(accel_device_t dev, void **p)
{
	accel_memory_t m;

	REQUIRE_OK(accel_host_memory_allocate(dev, p, 16));
	REQUIRE_OK(accel_memory_wrap(dev, *p, 16, accel_dtype(ACCEL_UINT8),
				     &m));
	return m;
}

/* The same for a copy between pinned memory handles of two devices. */
TEST_PEER(ordering_sync_handle_copy_ignores_later_work_on_the_other_device)
{
	struct sync_call c = { .fn = copy_handles, .later = ctx->peer };
	void *pd, *ps;

	c.mdst = wrap_pinned(ctx->dev, &pd);
	c.msrc = wrap_pinned(ctx->peer, &ps);
	check_ignores_later_work(ctx, &c);
	OK(accel_memory_release(c.mdst));
	OK(accel_memory_release(c.msrc));
	OK(accel_host_memory_deallocate(ctx->dev, pd, 16));
	OK(accel_host_memory_deallocate(ctx->peer, ps, 16));
}

static void pool_trim_call(struct sync_call *c)
{
	OK(accel_pool_trim(c->pool));
}

/* Idle chunks for trim to give back. */
static void idle_chunks(struct sync_call *c)
{
	struct accel_pool_stats st;
	void *blk[8];

	for (int i = 0; i < 8; i++)
		REQUIRE_OK(accel_pool_allocate(c->pool, NULL, &blk[i], 3u << 20));
	for (int i = 0; i < 8; i++)
		REQUIRE_OK(accel_pool_deallocate(c->pool, NULL, blk[i], 3u << 20));
	REQUIRE_OK(accel_pool_get_stats(c->pool, &st));
	if (!st.chunks)
		suite_skip("the pool holds no idle chunk (ACCEL_POOL=off)");
}

/* Trim gives back many idle chunks, and waits once, not once a chunk. */
TEST(ordering_trim_ignores_later_work)
{
	struct sync_call c = { .fn = pool_trim_call, .prepare = idle_chunks };
	struct accel_pool_stats st;

	REQUIRE_OK(accel_pool_create(ctx->dev, &c.pool));
	check_ignores_later_work(ctx, &c);
	REQUIRE_OK(accel_pool_get_stats(c.pool, &st));
	CHECK(st.chunks == 0);
	OK(accel_pool_destroy(c.pool));
}

/* ------------------------------------------------------------------ */
/* Synchronous calls wait for the work submitted before them */

/*
 * accel.h, Ordering: "Synchronous functions first wait for the work
 * already submitted to the device's streams", on every stream, whatever
 * memory that work touches. A chain on a stream that never touches the
 * call's memory is busy when c->fn starts: once c->fn returns, a query of
 * that stream must find it done. A try in which the chain was over before
 * the call proves nothing and runs again with a longer chain.
 */
static void check_waits_for_earlier_work(struct suite_ctx *ctx,
					 struct sync_call *c)
{
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	int copies = BUSY_START;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	c->ctx = ctx;
	for (;;) {
		bool before;

		busy_chain(ctx->dev, s, big, copies);
		before = stream_busy(ctx->dev, s);
		c->fn(c);
		if (before) {
			CHECK(accel_stream_query(ctx->dev, s) == ACCEL_SUCCESS);
			break;
		}
		OK(accel_stream_synchronize(ctx->dev, s));
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, big, 2 * BUSY_HALF);
}

static void copy_d2d(struct sync_call *c)
{
	OK(accel_memory_copy_d2d(c->ctx->dev, c->dst, c->src, 16));
}

TEST(ordering_sync_copy_waits_for_earlier_work_on_every_stream)
{
	struct sync_call c = { .fn = copy_d2d };

	c.dst = dalloc(ctx, 16);
	c.src = dalloc(ctx, 16);
	check_waits_for_earlier_work(ctx, &c);
	dfree(ctx, c.dst, 16);
	dfree(ctx, c.src, 16);
}

static void copy_p2p_within_the_device(struct sync_call *c)
{
	OK(accel_memory_copy_p2p(c->ctx->dev, c->ctx->dev, c->dst, c->src, 16));
}

/*
 * accel_memory_copy_p2p() with the same device on both sides "is a d2d
 * copy", and waits as one: no shortcut past the device's streams.
 */
TEST(ordering_sync_p2p_within_one_device_waits_for_earlier_work)
{
	struct sync_call c = { .fn = copy_p2p_within_the_device };

	c.dst = dalloc(ctx, 16);
	c.src = dalloc(ctx, 16);
	check_waits_for_earlier_work(ctx, &c);
	dfree(ctx, c.dst, 16);
	dfree(ctx, c.src, 16);
}
