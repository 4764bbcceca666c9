// SPDX-License-Identifier: MIT
/*
 * A hostile review of the interop pieces, against their contracts:
 * accel_stream_create_external() (accel.h, accel_stream_create(3)), the
 * pool's stream rules with adopted streams (accel.h, "Streams" of the
 * caching allocator), libaccel-torch.so as PyTorch's CUDAPluggableAllocator
 * (docs/libaccel.md, "PyTorch's allocator"), and the cuda backend's
 * synchronous calls on the per-thread default stream (accel.h, Ordering).
 *
 * Most tests need a cuda device (fakecuda's model of the driver will do)
 * and skip elsewhere. The slow-work tests set FAKECUDA_DELAY_US before the
 * library starts, so that each queued operation of the model takes a while;
 * on a real GPU the variable does nothing and the busy chains are short, so
 * those tests check what they can and say so when inconclusive.
 *
 * Tests of bugs that are known and not fixed here skip unless
 * ACCEL_REVIEW_KNOWN_BUGS=1 is set, so that the suite stays green while
 * the bug stays reproducible: each says which clause it shows broken.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <unistd.h>

#include "suite.h"

#define LEGACY ((void *)1)	/* CU_STREAM_LEGACY */
#define PER_THREAD ((void *)2)	/* CU_STREAM_PER_THREAD */

static void needs_cuda(struct suite_ctx *ctx)
{
	if (!on_cuda(ctx))
		suite_skip("a test of the cuda backend");
}

/* a known, unfixed bug: run only with ACCEL_REVIEW_KNOWN_BUGS=1 */
static void known_bug(const char *what)
{
	const char *on = getenv("ACCEL_REVIEW_KNOWN_BUGS");

	if (!on || strcmp(on, "1")) {
		char why[512];

		snprintf(why, sizeof(why),
			 "known bug (ACCEL_REVIEW_KNOWN_BUGS=1 runs it): %s", what);
		suite_skip(strdup(why));
	}
}

/* a NEEDS_NOTHING test's start: every queued operation of fakecuda slowed */
static void open_slow(struct suite_ctx *ctx, unsigned int delay_us)
{
	char v[32];

	snprintf(v, sizeof(v), "%u", delay_us);
	setenv("FAKECUDA_DELAY_US", v, 1);
	suite_open(ctx, NEEDS_DEVICE);
	needs_cuda(ctx);
}

/* ------------------------------------------------------------------ */
/* accel_stream_create_external: arguments and handles */

/*
 * A failed adoption sets *stream to NULL and changes nothing: the device
 * keeps working, its synchronous calls and device-wide waits included
 * (accel.h, Errors; accel_stream_create(3), RETURN VALUE).
 */
TEST(review_interop_failed_adopt_changes_nothing)
{
	struct accel_device_id none = { .id = 9999 };
	accel_stream_t s = (accel_stream_t)&s;
	uint8_t h[64] = { 1 };
	void *d;

	needs_cuda(ctx);
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_stream_create_external(ctx->dev, PER_THREAD, &s));
	CHECK(s == NULL);
	s = (accel_stream_t)&s;
	FAILS(accel_stream_create_external(&none, LEGACY, &s));
	CHECK(s == NULL);
	s = (accel_stream_t)&s;
	FAILS(accel_stream_create_external(NULL, LEGACY, &s));
	CHECK(s == NULL);
	d = dalloc(ctx, sizeof(h));
	OK(accel_memory_copy_h2d(ctx->dev, d, h, sizeof(h)));
	OK(accel_device_synchronize(ctx->dev));
	dfree(ctx, d, sizeof(h));
}

/*
 * An adopted stream's handle, once destroyed, is refused by every function
 * and never given out again, however many streams are adopted since
 * (accel.h, Handles).
 */
TEST(review_interop_destroyed_adopted_handle_stays_invalid)
{
	enum { MORE = 200 };
	accel_stream_t gone, s[MORE];
	accel_event_t ev;
	accel_pool_t pool;
	void *p = NULL, *native = NULL;
	uint8_t h[16] = { 0 };

	needs_cuda(ctx);
	REQUIRE_OK(accel_stream_create_external(ctx->dev, LEGACY, &gone));
	OK(accel_stream_destroy(ctx->dev, gone));
	for (int i = 0; i < MORE; i++) {
		REQUIRE_OK(accel_stream_create_external(ctx->dev,
							i & 1 ? NULL : LEGACY,
							&s[i]));
		CHECK(s[i] != gone);
	}
	REQUIRE_OK(accel_event_create(ctx->dev, &ev));
	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_stream_query(ctx->dev, gone));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_stream_synchronize(ctx->dev, gone));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_stream_get_native(ctx->dev, gone, &native));
	CHECK(native == NULL);
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_event_record(ctx->dev, gone, ev));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_stream_wait_event(ctx->dev, gone, ev));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_pool_allocate(pool, gone, &p, 4096));
	CHECK(p == NULL);
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_async_memory_copy_h2d(ctx->dev, gone, h, h, 16));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_stream_destroy(ctx->dev, gone));
	for (int i = 0; i < MORE; i++)
		OK(accel_stream_destroy(ctx->dev, s[i]));
	OK(accel_event_destroy(ctx->dev, ev));
	OK(accel_device_synchronize(ctx->dev));
}

/* ------------------------------------------------------------------ */
/* accel_stream_create_external: threads */

struct adopter {
	struct suite_ctx *ctx;
	void *native;		/* a CUstream shared by the threads */
	accel_pool_t pool;
	int seed;
	atomic_bool ok;
};

/*
 * Adopt, use (copies, a pool block freed on it, an event), destroy, over
 * and over, on the legacy stream and on a shared CUstream; every call
 * must succeed and the data must come back.
 */
static void *adopt_loop(void *arg)
{
	struct adopter *a = arg;
	accel_device_t dev = a->ctx->dev;
	uint8_t h[512], back[512];
	bool ok = true;

	for (int i = 0; i < 60 && ok; i++) {
		void *natives[3] = { NULL, LEGACY, a->native };
		accel_stream_t s = NULL;
		accel_event_t ev = NULL;
		void *p = NULL;

		fill_pattern(h, sizeof(h), (uint32_t)(a->seed * 1000 + i));
		memset(back, 0, sizeof(back));
		ok = accel_stream_create_external(dev, natives[i % 3], &s) ==
			ACCEL_SUCCESS &&
		     accel_pool_allocate(a->pool, s, &p, sizeof(h)) ==
			ACCEL_SUCCESS &&
		     accel_async_memory_copy_h2d(dev, s, p, h, sizeof(h)) ==
			ACCEL_SUCCESS &&
		     accel_async_memory_copy_d2h(dev, s, back, p, sizeof(h)) ==
			ACCEL_SUCCESS &&
		     accel_event_create(dev, &ev) == ACCEL_SUCCESS &&
		     accel_event_record(dev, s, ev) == ACCEL_SUCCESS &&
		     accel_pool_deallocate(a->pool, s, p, sizeof(h)) ==
			ACCEL_SUCCESS &&
		     accel_stream_destroy(dev, s) == ACCEL_SUCCESS &&
		     accel_event_synchronize(dev, ev) == ACCEL_SUCCESS &&
		     accel_event_destroy(dev, ev) == ACCEL_SUCCESS &&
		     !memcmp(h, back, sizeof(h));
		if (!ok)
			printf("# thread %d, round %d: %s\n", a->seed, i,
			       accel_get_last_error());
	}
	atomic_store(&a->ok, ok);
	return NULL;
}

/* synchronous calls and device-wide frees meanwhile */
static void *sync_loop(void *arg)
{
	struct adopter *a = arg;
	accel_device_t dev = a->ctx->dev;
	uint8_t h[256], back[256];
	bool ok = true;

	for (int i = 0; i < 150 && ok; i++) {
		void *p = NULL;

		fill_pattern(h, sizeof(h), (uint32_t)(a->seed * 1000 + i));
		ok = accel_pool_allocate(a->pool, NULL, &p, sizeof(h)) ==
			ACCEL_SUCCESS &&
		     accel_memory_copy_h2d(dev, p, h, sizeof(h)) == ACCEL_SUCCESS &&
		     accel_memory_copy_d2h(dev, back, p, sizeof(h)) ==
			ACCEL_SUCCESS &&
		     accel_pool_deallocate(a->pool, NULL, p, sizeof(h)) ==
			ACCEL_SUCCESS &&
		     (i % 10 || accel_device_synchronize(dev) == ACCEL_SUCCESS) &&
		     !memcmp(h, back, sizeof(h));
		if (!ok)
			printf("# sync thread %d, round %d: %s\n", a->seed, i,
			       accel_get_last_error());
	}
	atomic_store(&a->ok, ok);
	return NULL;
}

/*
 * Every function may be called from any number of threads at once
 * (accel.h, Threads): streams adopted and destroyed concurrently, over
 * the same CUstreams, while others make synchronous calls and free with
 * no stream (which mark every stream of the device, the adopted ones
 * included).
 */
TEST(review_interop_adopt_and_destroy_from_threads)
{
	enum { ADOPTERS = 6, SYNCERS = 2, N = ADOPTERS + SYNCERS };
	struct adopter a[N];
	pthread_t th[N];
	accel_stream_t owner;
	void *native = NULL;
	accel_pool_t pool;

	needs_cuda(ctx);
	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	REQUIRE_OK(accel_stream_create(ctx->dev, &owner));
	REQUIRE_OK(accel_stream_get_native(ctx->dev, owner, &native));
	for (int i = 0; i < N; i++) {
		a[i] = (struct adopter){ .ctx = ctx, .native = native,
					 .pool = pool, .seed = i };
		REQUIRE(!pthread_create(&th[i], NULL,
					i < ADOPTERS ? adopt_loop : sync_loop,
					&a[i]));
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		CHECK(atomic_load(&a[i].ok));
	}
	OK(accel_device_synchronize(ctx->dev));
	CHECK(pool_blocks(ctx) == 0);
	OK(accel_stream_destroy(ctx->dev, owner));
}

/* ------------------------------------------------------------------ */
/* The pool's stream order with adopted streams */

/*
 * A block freed on adopted stream E, with a slow write into it still
 * queued on E, then allocated for stream T (or for no stream): T's data
 * must not be overwritten by E's late write (accel.h, caching allocator,
 * Streams: "other streams get its memory only behind an event recorded on
 * A ..., and allocations with no stream only once that work has
 * completed").
 */
static void check_no_clobber(struct suite_ctx *ctx, bool to_no_stream)
{
	const size_t n = 256 << 10;
	uint8_t *a = xmalloc(n), *b = xmalloc(n), *back;
	void *native = NULL, *scratch, *p = NULL, *q = NULL;
	accel_stream_t owner, e, t;
	accel_pool_t pool;

	needs_caching(ctx);
	REQUIRE_OK(accel_pool_create(ctx->dev, &pool));
	REQUIRE_OK(accel_stream_create(ctx->dev, &owner));
	REQUIRE_OK(accel_stream_get_native(ctx->dev, owner, &native));
	REQUIRE_OK(accel_stream_create_external(ctx->dev, native, &e));
	REQUIRE_OK(accel_stream_create(ctx->dev, &t));
	scratch = dalloc(ctx, 4096);
	fill_pattern(a, n, 611);
	fill_pattern(b, n, 612);

	REQUIRE_OK(accel_pool_allocate(pool, e, &p, n));
	busy_chain_of(ctx->dev, e, scratch, 10, 2048);		/* ~10 delays */
	OK(accel_async_memory_copy_h2d(ctx->dev, e, p, a, n));	/* late */
	OK(accel_pool_deallocate(pool, e, p, n));
	/* a block for no stream, then used on T (no synchronous call, which
	 * would wait for E anyway) */
	REQUIRE_OK(accel_pool_allocate(pool, to_no_stream ? NULL : t, &q, n));
	OK(accel_async_memory_copy_h2d(ctx->dev, t, q, b, n));
	OK(accel_stream_synchronize(ctx->dev, t));
	if (suite_verbose())
		printf("# block %p freed on E, %p for %s\n", p, q,
		       to_no_stream ? "no stream" : "T");
	OK(accel_stream_synchronize(ctx->dev, e));
	back = read_back(ctx, q, n);
	CHECK(check_pattern(back, n, 612));
	OK(accel_pool_deallocate(pool, NULL, q, n));
	OK(accel_stream_destroy(ctx->dev, e));
	OK(accel_stream_destroy(ctx->dev, t));
	OK(accel_stream_destroy(ctx->dev, owner));
	OK(accel_pool_destroy(pool));
	dfree(ctx, scratch, 4096);
	free(back);
	free(a);
	free(b);
}

TEST_NOINIT(review_interop_pool_freed_on_adopted_stream_to_another)
{
	open_slow(ctx, 20000);
	check_no_clobber(ctx, false);
}

TEST_NOINIT(review_interop_pool_freed_on_adopted_stream_to_no_stream)
{
	open_slow(ctx, 20000);
	check_no_clobber(ctx, true);
}

/*
 * A free with no stream is behind the work queued before it on every
 * stream of the device, an adopted one's included, and the other
 * library's work on that CUstream with it (accel.h, Streams: "Freeing with
 * no stream ... reused ... only once the work submitted to every stream of
 * the device before the free has completed").
 */
TEST_NOINIT(review_interop_pool_free_no_stream_waits_for_adopted)
{
	const size_t n = 256 << 10;
	uint8_t *a = xmalloc(n), *b = xmalloc(n), *back;
	void *native = NULL, *scratch, *p = NULL, *q = NULL;
	accel_stream_t owner, e, t;
	accel_pool_t pool;

	open_slow(ctx, 20000);
	needs_caching(ctx);
	REQUIRE_OK(accel_pool_create(ctx->dev, &pool));
	REQUIRE_OK(accel_stream_create(ctx->dev, &owner));
	REQUIRE_OK(accel_stream_get_native(ctx->dev, owner, &native));
	REQUIRE_OK(accel_stream_create_external(ctx->dev, native, &e));
	REQUIRE_OK(accel_stream_create(ctx->dev, &t));
	scratch = dalloc(ctx, 4096);
	fill_pattern(a, n, 621);
	fill_pattern(b, n, 622);
	REQUIRE_OK(accel_pool_allocate(pool, t, &p, n));
	/* "the other library's" late write, on the CUstream, not through e */
	busy_chain_of(ctx->dev, owner, scratch, 10, 2048);
	OK(accel_async_memory_copy_h2d(ctx->dev, owner, p, a, n));
	OK(accel_pool_deallocate(pool, NULL, p, n));
	REQUIRE_OK(accel_pool_allocate(pool, t, &q, n));
	OK(accel_async_memory_copy_h2d(ctx->dev, t, q, b, n));
	OK(accel_stream_synchronize(ctx->dev, t));
	OK(accel_stream_synchronize(ctx->dev, owner));
	back = read_back(ctx, q, n);
	CHECK(check_pattern(back, n, 622));
	OK(accel_pool_deallocate(pool, t, q, n));
	OK(accel_stream_destroy(ctx->dev, e));
	OK(accel_stream_destroy(ctx->dev, t));
	OK(accel_stream_destroy(ctx->dev, owner));
	OK(accel_pool_destroy(pool));
	dfree(ctx, scratch, 4096);
	free(back);
	free(a);
	free(b);
}

/* ------------------------------------------------------------------ */
/* Synchronous calls on the per-thread default stream */

struct sync_copy {
	struct suite_ctx *ctx;
	void *dst;
	atomic_bool started;
	double took;
	accel_status_t st;
};

static void *sync_copy_thread(void *arg)
{
	struct sync_copy *c = arg;
	uint8_t h[16] = "later";
	double t0;

	atomic_store(&c->started, true);
	t0 = now_s();
	c->st = accel_memory_copy_h2d(c->ctx->dev, c->dst, h, sizeof(h));
	c->took = now_s() - t0;
	return NULL;
}

/*
 * accel.h, Ordering: a synchronous call waits for the work submitted
 * before it, and "work that any thread submits later never delays them".
 * The call waits for slow work W0 queued before it on a libaccel stream;
 * meanwhile another thread queues longer work W1 on an adopted stream of
 * CUDA's legacy default stream (which accel_stream_create_external
 * accepts: NULL or 1). W1 came later: the call must return once W0 and
 * its own copy are done, with W1 still running. Both are chains of real
 * copies, lengthened until they can be observed on the device at hand.
 *
 * It did not when the copy ran on the per-thread default stream, which
 * CUDA orders behind all prior work of the legacy default stream, W1
 * included: any thread or library keeping the legacy stream busy
 * (PyTorch's default stream is the legacy one) starved every synchronous
 * call. Synchronous work now runs on a non-blocking stream per thread.
 */
TEST_NOINIT(review_interop_sync_call_not_delayed_by_later_legacy_work)
{
	uint8_t *big0, *big1, *dst;
	int copies = BUSY_START, later_copies = 2 * BUSY_START;
	accel_stream_t s, legacy;

	open_slow(ctx, 1000);
	dst = dalloc(ctx, 16);
	big0 = dalloc(ctx, 2 * BUSY_HALF);
	big1 = dalloc(ctx, 2 * BUSY_HALF);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_stream_create_external(ctx->dev, NULL, &legacy));
	for (;;) {
		struct sync_copy c = { .ctx = ctx, .dst = dst };
		bool w0_busy, w1_pending;
		pthread_t th;

		busy_chain(ctx->dev, s, big0, copies);		/* W0 */
		REQUIRE(!pthread_create(&th, NULL, sync_copy_thread, &c));
		while (!atomic_load(&c.started))
			usleep(1000);
		usleep(50000);				/* the call waits for W0 */
		busy_chain(ctx->dev, legacy, big1, later_copies);	/* W1, later */
		w0_busy = stream_busy(ctx->dev, s);
		pthread_join(th, NULL);
		w1_pending = stream_busy(ctx->dev, legacy);
		OK(c.st);
		OK(accel_stream_synchronize(ctx->dev, s));
		OK(accel_stream_synchronize(ctx->dev, legacy));
		if (w0_busy && (w1_pending || later_copies >= BUSY_MAX)) {
			printf("# the synchronous copy took %.3f s; W1 %s when it returned\n",
			       c.took, w1_pending ? "still pending" : "already over");
			CHECK(w1_pending);
			break;
		}
		/* W0 over too soon proves nothing, nor W1 over before the call */
		if (w0_busy)
			later_copies *= 2;
		else
			try_longer(&copies);
		if (later_copies < 2 * copies)
			later_copies = 2 * copies;
	}
	OK(accel_stream_destroy(ctx->dev, legacy));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, dst, 16);
	dfree(ctx, big0, 2 * BUSY_HALF);
	dfree(ctx, big1, 2 * BUSY_HALF);
}

/*
 * The other half of the clause: a synchronous call does wait for work
 * submitted before it on an adopted stream, the other library's work on
 * that CUstream included (its data is there when the call reads it).
 */
TEST_NOINIT(review_interop_sync_call_waits_for_earlier_adopted_work)
{
	const size_t n = 64 << 10;
	uint8_t *h = xmalloc(n), *out = xmalloc(n);
	void *scratch, *d;
	accel_stream_t legacy, own, ext;
	void *native = NULL;

	open_slow(ctx, 20000);
	d = dalloc(ctx, n);
	scratch = dalloc(ctx, 4096);
	REQUIRE_OK(accel_stream_create_external(ctx->dev, LEGACY, &legacy));
	REQUIRE_OK(accel_stream_create(ctx->dev, &own));
	REQUIRE_OK(accel_stream_get_native(ctx->dev, own, &native));
	REQUIRE_OK(accel_stream_create_external(ctx->dev, native, &ext));
	for (int k = 0; k < 2; k++) {
		accel_stream_t s = k ? ext : legacy;

		fill_pattern(h, n, 630 + k);
		busy_chain_of(ctx->dev, s, scratch, 5, 2048);
		OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
		memset(out, 0, n);
		OK(accel_memory_copy_d2h(ctx->dev, out, d, n));
		CHECK(check_pattern(out, n, 630 + k));
	}
	OK(accel_stream_destroy(ctx->dev, ext));
	OK(accel_stream_destroy(ctx->dev, own));
	OK(accel_stream_destroy(ctx->dev, legacy));
	dfree(ctx, d, n);
	dfree(ctx, scratch, 4096);
	free(h);
	free(out);
}

/* ------------------------------------------------------------------ */
/* libaccel-torch.so */

/*
 * PyTorch's stream-ordered reuse through the allocator: a block freed on
 * stream S1 with a slow write of S1 still queued, then allocated for S2:
 * S2's data must survive S1's late write.
 */
TEST_NOINIT(review_interop_torch_no_clobber_across_streams)
{
	const size_t n = 256 << 10;
	uint8_t *a = xmalloc(n), *b = xmalloc(n), *back;
	accel_stream_t o1, o2;
	void *s1, *s2, *p, *q, *scratch;
	struct torch_alloc t;
	int dev;

	open_slow(ctx, 20000);
	dev = cuda_ordinal(ctx);
	needs_caching(ctx);
	torch_alloc_load(&t);
	s1 = native_stream(ctx, &o1);
	s2 = native_stream(ctx, &o2);
	scratch = dalloc(ctx, 4096);
	fill_pattern(a, n, 641);
	fill_pattern(b, n, 642);
	p = t.alloc((ssize_t)n, dev, s1);
	REQUIRE(p);
	busy_chain_of(ctx->dev, o1, scratch, 10, 2048);
	OK(accel_async_memory_copy_h2d(ctx->dev, o1, p, a, n));
	t.free(p, (ssize_t)n, dev, s1);
	q = t.alloc((ssize_t)n, dev, s2);
	REQUIRE(q);
	OK(accel_async_memory_copy_h2d(ctx->dev, o2, q, b, n));
	OK(accel_stream_synchronize(ctx->dev, o2));
	OK(accel_stream_synchronize(ctx->dev, o1));
	back = read_back(ctx, q, n);
	CHECK(check_pattern(back, n, 642));
	t.free(q, (ssize_t)n, dev, s2);
	CHECK(t.stat(dev, "blocks") == 0);
	dfree(ctx, scratch, 4096);
	free(back);
	free(a);
	free(b);
	/* the CUstreams stay alive: the allocator keeps them adopted */
}

/*
 * Sizes at the limits, and frees that PyTorch would never make but a
 * broken caller might: NULL or nothing, never a crash, a leak or a block
 * lost (CUDAPluggableAllocator: alloc gives memory or NULL).
 */
TEST(review_interop_torch_limits_and_bad_frees)
{
	const size_t n = 1 << 16;
	int dev = cuda_ordinal(ctx), x;
	struct torch_alloc t;
	accel_stream_t o1, o2;
	void *s1, *s2, *p, *q;

	torch_alloc_load(&t);
	s1 = native_stream(ctx, &o1);
	s2 = native_stream(ctx, &o2);
	CHECK(t.alloc(SSIZE_MAX, dev, s1) == NULL);
	CHECK(t.alloc(SSIZE_MAX - 4095, dev, s1) == NULL);
	CHECK(t.alloc(-SSIZE_MAX - 1, dev, s1) == NULL);
	CHECK(t.alloc(0, dev, s1) == NULL);
	t.free(NULL, 0, dev, s1);
	CHECK(t.alloc(n, INT_MIN, s1) == NULL);
	CHECK(t.alloc(n, INT_MAX, s1) == NULL);
	CHECK(t.stat(dev, "blocks") == 0);

	p = t.alloc((ssize_t)n, dev, s1);
	REQUIRE(p);
	t.free(p, (ssize_t)n, INT_MAX, s1);	/* no such device */
	t.free(p, -1, dev, s1);
	t.free(p, SSIZE_MAX, dev, s1);
	t.free((uint8_t *)p + 1, (ssize_t)n, dev, s1);
	t.free(&x, (ssize_t)n, dev, s1);
	CHECK(t.stat(dev, "blocks") == 1);
	t.free(p, (ssize_t)n, dev, s2);	/* another stream than its own */
	CHECK(t.stat(dev, "blocks") == 0);
	t.free(p, (ssize_t)n, dev, s2);	/* twice */
	t.free(p, (ssize_t)n, dev, s1);
	CHECK(t.stat(dev, "blocks") == 0);
	q = t.alloc((ssize_t)n, dev, s1);
	REQUIRE(q);
	t.free(q, (ssize_t)n, dev, s1);
	CHECK(t.stat(dev, "blocks") == 0);
	CHECK(t.stat(dev, "requested") == 0);
	OK(accel_device_synchronize(ctx->dev));
}

/*
 * More streams than the allocator adopts (256 a device): the next gets
 * NULL, and the streams it has go on working.
 */
TEST(review_interop_torch_more_streams_than_its_limit)
{
	enum { STREAMS = 260 };
	accel_stream_t *owners = xmalloc(STREAMS * sizeof(*owners));
	void **natives = xmalloc(STREAMS * sizeof(*natives));
	int dev = cuda_ordinal(ctx), got = 0;
	struct torch_alloc t;

	torch_alloc_load(&t);
	for (int i = 0; i < STREAMS; i++) {
		void *p;

		natives[i] = native_stream(ctx, &owners[i]);
		p = t.alloc(4096, dev, natives[i]);
		if (p) {
			got++;
			t.free(p, 4096, dev, natives[i]);
		}
	}
	printf("# %d of %d streams got memory\n", got, STREAMS);
	CHECK(got >= 250 && got < STREAMS);
	for (int i = 0; i < 8; i++) {
		void *p = t.alloc(4096, dev, natives[i]);

		CHECK(p != NULL);
		t.free(p, 4096, dev, natives[i]);
	}
	CHECK(t.stat(dev, "blocks") == 0);
	OK(accel_device_synchronize(ctx->dev));
	free(owners);
	free(natives);
}

struct torch_thread {
	struct suite_ctx *ctx;
	struct torch_alloc *t;
	void *stream;
	pthread_barrier_t *go;
	bool ok;
};

/* the first call for a device and for a stream, from many threads at once */
static void *torch_first_use(void *arg)
{
	struct torch_thread *c = arg;
	int dev = atoi(c->ctx->name + 5);
	uint8_t h[128], back[128];

	pthread_barrier_wait(c->go);
	c->ok = true;
	for (int i = 0; i < 200 && c->ok; i++) {
		size_t n = 128 + (size_t)(i % 17) * 8192;
		void *p = c->t->alloc((ssize_t)n, dev, c->stream);

		fill_pattern(h, sizeof(h), (uint32_t)i);
		c->ok = p &&
			accel_memory_copy_h2d(c->ctx->dev, p, h, sizeof(h)) ==
				ACCEL_SUCCESS &&
			accel_memory_copy_d2h(c->ctx->dev, back, p,
					      sizeof(h)) == ACCEL_SUCCESS &&
			!memcmp(h, back, sizeof(h));
		if (p)
			c->t->free(p, (ssize_t)n, dev, c->stream);
	}
	return NULL;
}

/* "called from any thread": the device's start and the adoptions race */
TEST(review_interop_torch_first_use_from_threads)
{
	enum { THREADS = 8 };
	struct torch_thread c[THREADS];
	pthread_t th[THREADS];
	accel_stream_t owners[THREADS];
	pthread_barrier_t go;
	struct torch_alloc t;
	int dev = cuda_ordinal(ctx);

	torch_alloc_load(&t);
	pthread_barrier_init(&go, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		c[i] = (struct torch_thread){ .ctx = ctx, .t = &t, .go = &go };
		/* half on streams of their own, half on two shared ones */
		c[i].stream = i < THREADS / 2 ? native_stream(ctx, &owners[i]) :
			      i % 2 ? NULL : c[0].stream;
		REQUIRE(!pthread_create(&th[i], NULL, torch_first_use, &c[i]));
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		CHECK(c[i].ok);
	}
	pthread_barrier_destroy(&go);
	CHECK(t.stat(dev, "blocks") == 0);
	OK(accel_device_synchronize(ctx->dev));
}

/*
 * A stream PyTorch was given by another library (torch.cuda.ExternalStream,
 * for example a libaccel stream's CUstream from the accel module) is
 * destroyed by its owner once every block allocated on it has been freed:
 * CUDA and PyTorch allow that. libaccel-torch.so keeps its adopted handle
 * for the life of the process, so the device's stream list holds a dead
 * CUstream: accel_stream_create_external's "must keep it alive until
 * accel_stream_destroy() has returned" is broken by the allocator itself,
 * and from then on every device-wide wait marks it. On fakecuda
 * accel_device_synchronize() and a pool free with no stream fail (for
 * every user of the device, the block of that free leaked); on a GPU it is
 * a use of a destroyed CUstream handle, undefined.
 */
TEST(review_interop_torch_stream_destroyed_by_its_owner)
{
	const size_t n = 1 << 16;
	int dev = cuda_ordinal(ctx);
	struct torch_alloc t;
	accel_pool_t pool;
	accel_stream_t owner;
	void *s, *p, *q = NULL;

	known_bug("libaccel-torch.so keeps adopted CUstreams forever; once "
		  "their owner destroys one, device-wide waits fail "
		  "(accel_stream_create_external's lifetime rule)");
	torch_alloc_load(&t);
	s = native_stream(ctx, &owner);
	p = t.alloc((ssize_t)n, dev, s);
	REQUIRE(p);
	t.free(p, (ssize_t)n, dev, s);
	OK(accel_stream_destroy(ctx->dev, owner));	/* the owner's right */
	OK(accel_device_synchronize(ctx->dev));
	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &q, n));
	OK(accel_pool_deallocate(pool, NULL, q, n));
	CHECK(pool_blocks(ctx) == 0);
}
