// SPDX-License-Identifier: MIT
/*
 * Ordering promises a review of issue 17 found broken (accel.h, Ordering):
 * memory is reused only after the work submitted before its free, on every
 * stream that may touch it (another device's too), has completed; a
 * synchronous call waits for the work submitted before it only, whatever
 * other threads queue meanwhile; an async copy from pageable memory is not
 * starved by a thread that keeps its stream busy.
 *
 * Work is made observably pending with a chain of large device to device
 * copies; a device that finishes the chain before the checks makes a try
 * inconclusive: the chain doubles and the try runs again. No check depends
 * on how long anything takes.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <accel/memory.h>

#include "suite.h"

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

/* ------------------------------------------------------------------ */
/* Frees wait for the streams of the device that queued the work (1) */

/*
 * A p2p copy into memory of the device under test, queued on a busy stream
 * of the peer: freeing that memory must leave it to the copy (on the cpu
 * backend, the bytes are unmapped at the free: the copy would crash), and
 * the device must not count it free while the copy is queued.
 */
TEST_PEER(review_free_waits_for_peer_p2p)
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
		uint8_t *dst = dalloc(ctx, n);
		size_t before, after;
		bool pending;

		busy_chain(ctx->peer, s, big, copies);
		OK(accel_async_memory_copy_p2p(ctx->dev, ctx->peer, s, dst,
					       src, n));
		before = free_memory(ctx);
		OK(accel_device_memory_deallocate(ctx->dev, dst, n));
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

/*
 * The same with memory handles: a handle created after the release must
 * not get the block that the peer's queued copy still writes into.
 */
TEST_PEER(review_release_waits_for_peer_p2p)
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

/* Pinned memory of the device under test, written by the peer's d2h. */
TEST_PEER(review_pinned_free_waits_for_peer_d2h)
{
	const size_t n = 1 << 20;
	uint8_t *big = alloc_on(ctx->peer, 2 * BUSY_HALF);
	uint8_t *src = alloc_on(ctx->peer, n);
	int copies = BUSY_START;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->peer, &s));
	REQUIRE_OK(accel_device_memory_set(ctx->peer, src, 0xAA, n));
	for (;;) {
		void *pin;
		bool pending;

		REQUIRE_OK(accel_host_memory_allocate(ctx->dev, &pin, n));
		busy_chain(ctx->peer, s, big, copies);
		OK(accel_async_memory_copy_d2h(ctx->peer, s, pin, src, n));
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

/* ------------------------------------------------------------------ */
/* A host array waits for every device that queued a transfer on it (4) */

/*
 * A d2h into a host array queued behind a chain on the device under test,
 * then an h2d from it on the peer: the release must wait for both, so an
 * event recorded after the d2h has completed once it returns.
 */
TEST_PEER(review_host_array_release_waits_for_every_device)
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
/* Synchronous calls ignore work queued after they began (9, 11) */

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

TEST(review_sync_copy_ignores_later_work)
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

TEST(review_device_sync_ignores_later_work)
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
TEST_PEER(review_sync_p2p_ignores_later_work_on_the_other_device)
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
TEST_PEER(review_sync_handle_copy_ignores_later_work_on_the_other_device)
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
TEST(review_trim_ignores_later_work)
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
/* A large pageable async copy is not starved by a busy stream (10) */

#define STARVE_LIMIT_S 20	/* the producer gives up after this long */

struct producer {
	struct suite_ctx *ctx;
	accel_stream_t s;
	uint8_t *big;
	atomic_int stop;
	atomic_int gave_up;
};

/* Keep @p->s busy (never idle) until told to stop, or for a while. */
static void *keep_busy(void *arg)
{
	struct producer *p = arg;
	double t0 = now_s();
	accel_event_t e;

	REQUIRE_OK(accel_event_create(p->ctx->dev, &e));
	while (!atomic_load(&p->stop)) {
		if (now_s() - t0 > STARVE_LIMIT_S) {
			atomic_store(&p->gave_up, 1);
			break;
		}
		/* the second half keeps it busy while this thread sleeps */
		busy_chain(p->ctx->dev, p->s, p->big, 16);
		REQUIRE_OK(accel_event_record(p->ctx->dev, p->s, e));
		busy_chain(p->ctx->dev, p->s, p->big, 16);
		REQUIRE_OK(accel_event_synchronize(p->ctx->dev, e));
	}
	REQUIRE_OK(accel_event_destroy(p->ctx->dev, e));
	return NULL;
}

TEST(review_big_pageable_copy_not_starved)
{
	const size_t n = 80u << 20;	/* more than any staging buffer */
	struct producer p = { .ctx = ctx };
	uint8_t *h = xmalloc(n), *d = dalloc(ctx, n), *back;
	pthread_t t;

	p.big = dalloc(ctx, 2 * BUSY_HALF);
	REQUIRE_OK(accel_stream_create(ctx->dev, &p.s));
	fill_pattern(h, n, 33);
	REQUIRE(!pthread_create(&t, NULL, keep_busy, &p));
	while (!stream_busy(ctx->dev, p.s))
		usleep(1000);
	OK(accel_async_memory_copy_h2d(ctx->dev, p.s, d, h, n));
	memset(h, 0, n);	/* the source was captured: ours again */
	atomic_store(&p.stop, 1);
	pthread_join(t, NULL);
	CHECK(!atomic_load(&p.gave_up));
	OK(accel_stream_synchronize(ctx->dev, p.s));
	back = read_back(ctx, d, n);
	CHECK(check_pattern(back, n, 33));
	free(back);
	free(h);
	OK(accel_stream_destroy(ctx->dev, p.s));
	dfree(ctx, p.big, 2 * BUSY_HALF);
	dfree(ctx, d, n);
}

/* ------------------------------------------------------------------ */
/* Free-memory figures once the work behind a free has completed */

/*
 * docs/libaccel.md: free-memory figures count memory of a pending free as
 * used until its work completes; once it has, the figure has it back,
 * with no other allocation or free needed to notice.
 */
TEST(review_stats_count_frees_whose_work_completed)
{
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF);
	int copies = BUSY_START;
	size_t total, before, after, sz = 32u << 20;
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (;;) {
		bool pending;
		void *p;

		OK(accel_device_synchronize(ctx->dev));
		REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &before));
		REQUIRE_OK(accel_device_memory_allocate(ctx->dev, &p, sz));
		busy_chain(ctx->dev, s, big, copies);
		OK(accel_async_memory_copy_d2d(ctx->dev, s, p, big, 4096));
		OK(accel_device_memory_deallocate(ctx->dev, p, sz));
		pending = stream_busy(ctx->dev, s);
		OK(accel_device_synchronize(ctx->dev));
		REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &after));
		if (pending) {	/* the free was behind the work */
			CHECK(after == before);
			break;
		}
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, big, 2 * BUSY_HALF);
}

/*
 * On a cpu device any host memory is the device's host memory, another cpu
 * device's memory too. A pool block of the device that the peer's queued
 * d2h writes into, freed with no stream, is reused only after that copy
 * (accel.h: memory is "never reused under a queued transfer"): a new block
 * keeps what was written into it after the free.
 */
TEST_PEER(review_pool_free_waits_for_peer_taking_it_as_host_memory)
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
/* A free waits for copies through views made for another device */

#define VIEW_BYTES (32u << 20)

struct view_copier {
	accel_array_t view, host;
	atomic_int copies;
	atomic_bool refused;
};

static void *copy_into_view(void *arg)
{
	struct view_copier *c = arg;

	while (accel_array_copy_to_device(c->view, c->host, NULL) == ACCEL_SUCCESS)
		atomic_fetch_add(&c->copies, 1);
	atomic_store(&c->refused, true);
	return NULL;
}

/*
 * docs/libaccel.md: a free waits for copies running through other handles,
 * so a racing copy is whole or refused; memory.h: an interface view holds
 * the producer's storage "as a slice does". A view made for the peer over
 * host-accessible memory of the device: its copies run on the host, and the
 * producer's free must wait for them, not free the bytes under them (a
 * crash, or a new handle overwritten).
 */
TEST_PEER(review_free_waits_for_copies_through_another_devices_view)
{
	size_t shape[1] = { VIEW_BYTES };
	uint8_t *pattern = malloc(VIEW_BYTES), *out = malloc(VIEW_BYTES);
	uint8_t *ones = malloc(VIEW_BYTES);

	REQUIRE(pattern && out && ones);
	memset(pattern, 0xaa, VIEW_BYTES);
	memset(ones, 0x11, VIEW_BYTES);
	for (int round = 0; round < 4; round++) {
		struct view_copier c = { 0 };
		struct accel_array_interface ifc;
		accel_memory_t m, again;
		accel_array_t a;
		pthread_t t;

		REQUIRE_OK(accel_memory_create(ctx->dev, VIEW_BYTES,
					       accel_dtype(ACCEL_UINT8), NULL,
					       ACCEL_MEMORY_HOST_READ |
					       ACCEL_MEMORY_HOST_WRITE, &m));
		REQUIRE_OK(accel_memory_as_array(m, 1, shape, NULL, 'C', &a));
		REQUIRE_OK(accel_array_get_interface(a, &ifc));
		/* on a cpu device: the other device's memory is host memory */
		if (accel_array_from_interface(ctx->peer, &ifc, 0, &c.view) !=
		    ACCEL_SUCCESS)
			suite_skip("the peer takes no view of the device's memory");
		REQUIRE_OK(accel_host_array(pattern, 1, shape,
					    accel_dtype(ACCEL_UINT8), NULL, 'C',
					    0, &c.host));
		REQUIRE(!pthread_create(&t, NULL, copy_into_view, &c));
		while (atomic_load(&c.copies) < 2)
			usleep(100);
		OK(accel_memory_free(m));
		OK(accel_memory_create(ctx->dev, VIEW_BYTES,
				       accel_dtype(ACCEL_UINT8), ones,
				       ACCEL_MEMORY_HOST_READ |
				       ACCEL_MEMORY_HOST_WRITE, &again));
		pthread_join(t, NULL);
		CHECK(atomic_load(&c.refused));
		OK(accel_memory_copy_to(again, out, ACCEL_ALL, 0));
		CHECK(!memcmp(out, ones, VIEW_BYTES));
		OK(accel_array_release(c.view));
		OK(accel_array_release(c.host));
		OK(accel_array_release(a));
		OK(accel_memory_release(again));
	}
	free(pattern);
	free(out);
	free(ones);
}
