// SPDX-License-Identifier: MIT
/*
 * accel_stream_create_external(): another library's CUstream as a libaccel
 * stream (accel.h). The work libaccel queues on it runs in order with the
 * other library's; destroying it leaves the CUstream alive; the pool reuses
 * a block freed on it at once for it, and other streams only in its order.
 * Other backends refuse it. Streams are adopted and destroyed from threads
 * at once; the cuda backend's synchronous calls wait for the work queued
 * before them on an adopted stream, and for none queued later on CUDA's
 * legacy default stream.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "suite.h"

#define LEGACY ((void *)1)	/* CU_STREAM_LEGACY */
#define PER_THREAD ((void *)2)	/* CU_STREAM_PER_THREAD */

TEST(external_streams_are_cudas)
{
	accel_stream_t s = (accel_stream_t)&s;

	FAILS(accel_stream_create_external(ctx->dev, LEGACY, NULL));
	if (on_cuda(ctx))
		return;
	FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED,
		   accel_stream_create_external(ctx->dev, LEGACY, &s));
	CHECK(s == NULL);
}

TEST(external_per_thread_default_stream_refused)
{
	accel_stream_t s = (accel_stream_t)&s;

	if (!on_cuda(ctx))
		suite_skip("a test of the cuda backend");
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_stream_create_external(ctx->dev, PER_THREAD, &s));
	CHECK(s == NULL);
}

/* A copy there and back on @s, waited for with a stream synchronize. */
static void round_trip_on(struct suite_ctx *ctx, accel_stream_t s, uint32_t seed)
{
	const size_t n = 1 << 20;
	uint8_t *d = dalloc(ctx, n), *h = xmalloc(n), *out = xmalloc(n);

	fill_pattern(h, n, seed);
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	OK(accel_async_memory_copy_d2h(ctx->dev, s, out, d, n));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(check_pattern(out, n, seed));
	dfree(ctx, d, n);
	free(h);
	free(out);
}

/* The legacy default stream, as NULL and as 1 (the CUDA array interface's). */
TEST(external_legacy_default_stream)
{
	accel_stream_t a, b;

	if (!on_cuda(ctx))
		suite_skip("a test of the cuda backend");
	REQUIRE_OK(accel_stream_create_external(ctx->dev, NULL, &a));
	REQUIRE_OK(accel_stream_create_external(ctx->dev, LEGACY, &b));
	CHECK(a != NULL && b != NULL && a != b);
	round_trip_on(ctx, a, 301);
	round_trip_on(ctx, b, 302);
	OK(accel_stream_destroy(ctx->dev, a));
	round_trip_on(ctx, b, 303);
	OK(accel_stream_destroy(ctx->dev, b));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE, accel_stream_query(ctx->dev, b));
}

/*
 * accel.h: on a cuda device a stream accel_stream_create() makes is a CUDA
 * blocking stream, ordered with the legacy default stream as
 * cudaStreamCreate()'s are. A copy on it queued behind a chain on the
 * (adopted) legacy stream waits for that chain: given 100 ms to run, it is
 * still pending while the chain is. A try whose chain ended first runs
 * again with a longer one.
 */
TEST(a_created_stream_is_ordered_with_the_legacy_stream)
{
	uint8_t *big = dalloc(ctx, 2 * BUSY_HALF), *d = dalloc(ctx, 64);
	uint8_t h[64] = { 1 };
	int copies = BUSY_START;
	accel_stream_t legacy, s;

	if (!on_cuda(ctx))
		suite_skip("a test of the cuda backend");
	REQUIRE_OK(accel_stream_create_external(ctx->dev, LEGACY, &legacy));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (;;) {
		bool chain_pending, copy_pending;

		double t0;

		busy_chain(ctx->dev, legacy, big, copies);
		OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, sizeof(h)));
		/* time for the copy to run, if nothing holds it */
		t0 = now_s();
		while (stream_busy(ctx->dev, s) && now_s() - t0 < 0.1)
			usleep(1000);
		copy_pending = stream_busy(ctx->dev, s);
		chain_pending = stream_busy(ctx->dev, legacy);
		OK(accel_stream_synchronize(ctx->dev, legacy));
		OK(accel_stream_synchronize(ctx->dev, s));
		if (chain_pending) {
			CHECK(copy_pending);
			break;
		}
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, legacy));
	dfree(ctx, big, 2 * BUSY_HALF);
	dfree(ctx, d, 64);
}

/*
 * A stream of "another library" (one of libaccel's own, by its CUstream):
 * work queued through either handle runs in one order, and destroying the
 * adopted one leaves the CUstream working.
 */
TEST(external_stream_shares_the_order)
{
	const size_t n = 32u << 20;
	uint8_t *d = dalloc(ctx, n), *h = xmalloc(n), *out = xmalloc(n);
	void *native = NULL;
	accel_stream_t own, ext;

	if (!on_cuda(ctx))
		suite_skip("a test of the cuda backend");
	REQUIRE_OK(accel_stream_create(ctx->dev, &own));
	REQUIRE_OK(accel_stream_get_native(ctx->dev, own, &native));
	REQUIRE_OK(accel_stream_create_external(ctx->dev, native, &ext));
	/* a large write through one handle, its read through the other */
	memset(h, 0x5a, n);
	OK(accel_async_memory_copy_h2d(ctx->dev, own, d, h, n));
	OK(accel_async_memory_copy_d2h(ctx->dev, ext, out, d, n));
	OK(accel_stream_synchronize(ctx->dev, own));
	CHECK(check_bytes(out, n, 0x5a));

	OK(accel_stream_destroy(ctx->dev, ext));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_async_memory_copy_d2h(ctx->dev, ext, out, d, n));
	round_trip_on(ctx, own, 304);	/* the CUstream lives on */
	OK(accel_stream_destroy(ctx->dev, own));
	dfree(ctx, d, n);
	free(h);
	free(out);
}

/* Two handles over one CUstream: each destroyed on its own. */
TEST(external_stream_adopted_twice)
{
	void *native = NULL;
	accel_stream_t own, a, b;

	if (!on_cuda(ctx))
		suite_skip("a test of the cuda backend");
	REQUIRE_OK(accel_stream_create(ctx->dev, &own));
	REQUIRE_OK(accel_stream_get_native(ctx->dev, own, &native));
	REQUIRE_OK(accel_stream_create_external(ctx->dev, native, &a));
	REQUIRE_OK(accel_stream_create_external(ctx->dev, native, &b));
	CHECK(a != b);
	OK(accel_stream_destroy(ctx->dev, a));
	round_trip_on(ctx, b, 305);
	OK(accel_stream_destroy(ctx->dev, b));
	round_trip_on(ctx, own, 306);
	OK(accel_stream_destroy(ctx->dev, own));
}

/*
 * The pool's stream order on an adopted stream: a block freed on it is
 * reused at once by the next allocation for it (accel.h, "Streams").
 */
TEST(external_stream_pool_reuse)
{
	const size_t n = 1 << 20;
	uint8_t *h = xmalloc(n);
	accel_pool_t pool;
	void *native = NULL, *p = NULL, *q = NULL;
	accel_stream_t own, ext;

	if (!on_cuda(ctx))
		suite_skip("a test of the cuda backend");
	needs_caching(ctx);
	REQUIRE_OK(accel_pool_create(ctx->dev, &pool));
	REQUIRE_OK(accel_stream_create(ctx->dev, &own));
	REQUIRE_OK(accel_stream_get_native(ctx->dev, own, &native));
	REQUIRE_OK(accel_stream_create_external(ctx->dev, native, &ext));
	REQUIRE_OK(accel_pool_allocate(pool, ext, &p, n));
	OK(accel_async_memory_copy_h2d(ctx->dev, ext, p, h, n));
	OK(accel_pool_deallocate(pool, ext, p, n));
	REQUIRE_OK(accel_pool_allocate(pool, ext, &q, n));
	CHECK(q == p);
	OK(accel_pool_deallocate(pool, ext, q, n));
	/* a stream destroyed with a freed block pending: the pool lets go */
	OK(accel_stream_destroy(ctx->dev, ext));
	OK(accel_pool_destroy(pool));
	round_trip_on(ctx, own, 307);
	OK(accel_stream_destroy(ctx->dev, own));
	free(h);
}

/* The driver functions for a context and stream of another library's. */
struct foreign_cuda {
	int (*device_get)(int *dev, int ordinal);
	int (*ctx_create)(void **ctx, void *params, unsigned int flags, int dev);
	int (*ctx_destroy)(void *ctx);
	int (*stream_create)(void **stream, unsigned int flags);
	int (*stream_destroy)(void *stream);
	int (*stream_get_ctx)(void *stream, void **ctx);
};

static void load_foreign(struct foreign_cuda *cu)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);

	REQUIRE(lib);
	*(void **)&cu->device_get = dlsym(lib, "cuDeviceGet");
	*(void **)&cu->ctx_create = dlsym(lib, "cuCtxCreate_v4");
	*(void **)&cu->ctx_destroy = dlsym(lib, "cuCtxDestroy_v2");
	*(void **)&cu->stream_create = dlsym(lib, "cuStreamCreate");
	*(void **)&cu->stream_destroy = dlsym(lib, "cuStreamDestroy_v2");
	*(void **)&cu->stream_get_ctx = dlsym(lib, "cuStreamGetCtx");
	if (!cu->ctx_create || !cu->stream_get_ctx)
		suite_skip("the CUDA driver has no cuCtxCreate_v4 or cuStreamGetCtx");
	REQUIRE(cu->device_get && cu->ctx_destroy && cu->stream_create &&
		cu->stream_destroy);
}

/* A stream of a context other than the device's primary one is refused. */
TEST(external_stream_of_another_context_refused)
{
	struct foreign_cuda cu;
	void *foreign = NULL, *native = NULL;
	accel_stream_t s = (accel_stream_t)&s;
	int dev;

	if (!on_cuda(ctx))
		suite_skip("a test of the cuda backend");
	load_foreign(&cu);
	REQUIRE(cu.device_get(&dev, atoi(ctx->name + 5)) == 0);
	REQUIRE(cu.ctx_create(&foreign, NULL, 0, dev) == 0);	/* and current */
	REQUIRE(cu.stream_create(&native, 0) == 0);
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_stream_create_external(ctx->dev, native, &s));
	CHECK(s == NULL);
	CHECK(cu.stream_destroy(native) == 0);
	CHECK(cu.ctx_destroy(foreign) == 0);
}

/* A stream of the peer device is refused too. */
TEST_PEER(external_stream_of_the_peer_refused)
{
	const char *peer_name = "";
	void *native = NULL;
	accel_stream_t peer_s, s = (accel_stream_t)&s;

	REQUIRE_OK(accel_get_device_name(ctx->peer, &peer_name));
	if (!on_cuda(ctx) || strncmp(peer_name, "cuda:", 5))
		suite_skip("a test of two cuda devices");
	REQUIRE_OK(accel_stream_create(ctx->peer, &peer_s));
	REQUIRE_OK(accel_stream_get_native(ctx->peer, peer_s, &native));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_stream_create_external(ctx->dev, native, &s));
	CHECK(s == NULL);
	OK(accel_stream_destroy(ctx->peer, peer_s));
}

/*
 * Another library on the device, through the driver by hand: a
 * non-blocking stream of its own (as PyTorch's are), and its reads.
 */
struct consumer {
	int (*push)(void *ctx);
	int (*pop)(void **ctx);
	int (*d2h_async)(void *dst, unsigned long long src, size_t n, void *s);
	int (*stream_sync)(void *s);
	int (*stream_destroy)(void *s);
	void *ctx;
	void *stream;
};

static void consumer_open(struct suite_ctx *ctx, struct consumer *c)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW), *unused;
	int (*device_get)(int *dev, int ordinal);
	int (*primary_retain)(void **ctx, int dev);
	int (*stream_create)(void **s, unsigned int flags);
	int dev;

	REQUIRE(lib);
	*(void **)&device_get = dlsym(lib, "cuDeviceGet");
	*(void **)&primary_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&stream_create = dlsym(lib, "cuStreamCreate");
	*(void **)&c->push = dlsym(lib, "cuCtxPushCurrent_v2");
	*(void **)&c->pop = dlsym(lib, "cuCtxPopCurrent_v2");
	*(void **)&c->d2h_async = dlsym(lib, "cuMemcpyDtoHAsync_v2");
	*(void **)&c->stream_sync = dlsym(lib, "cuStreamSynchronize");
	*(void **)&c->stream_destroy = dlsym(lib, "cuStreamDestroy_v2");
	REQUIRE(device_get && primary_retain && stream_create && c->push &&
		c->pop && c->d2h_async && c->stream_sync && c->stream_destroy);
	REQUIRE(device_get(&dev, atoi(ctx->name + 5)) == 0);
	REQUIRE(primary_retain(&c->ctx, dev) == 0 && c->push(c->ctx) == 0);
	REQUIRE(stream_create(&c->stream, 1 /* CU_STREAM_NON_BLOCKING */) == 0);
	c->pop(&unused);
}

/* read @n bytes at @d into @out on the consumer's stream, past libaccel */
static void consumer_read(struct consumer *c, void *out, const void *d,
			  size_t n)
{
	void *unused;

	REQUIRE(c->push(c->ctx) == 0);
	CHECK(c->d2h_async(out, (uintptr_t)d, n, c->stream) == 0);
	CHECK(c->stream_sync(c->stream) == 0);
	c->pop(&unused);
}

static void consumer_close(struct consumer *c)
{
	void *unused;

	REQUIRE(c->push(c->ctx) == 0);
	CHECK(c->stream_destroy(c->stream) == 0);
	c->pop(&unused);
}

/*
 * accel_native_stream_wait_event(): a consumer's CUstream waits, on the
 * device, for a libaccel stream's work (DLPack's stream argument).
 */
TEST(native_stream_waits_for_an_event)
{
	const size_t n = 32u << 20;
	uint8_t *d = dalloc(ctx, n), *out = xmalloc(n);
	struct consumer c;
	void *busy, *src;
	accel_stream_t producer;
	accel_event_t e;

	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	if (!on_cuda(ctx)) {
		FAILS_WITH(ACCEL_ERROR_NOT_SUPPORTED,
			   accel_native_stream_wait_event(ctx->dev, LEGACY, e));
		OK(accel_event_destroy(ctx->dev, e));
		goto out;
	}
	consumer_open(ctx, &c);
	REQUIRE_OK(accel_stream_create(ctx->dev, &producer));
	OK(accel_device_memory_set(ctx->dev, d, 0, n));
	src = dalloc(ctx, n);
	OK(accel_device_memory_set(ctx->dev, src, 0x3c, n));
	busy = dalloc(ctx, 2 * BUSY_HALF);	/* the producer's write comes late */
	busy_chain(ctx->dev, producer, busy, BUSY_START);
	OK(accel_async_memory_copy_d2d(ctx->dev, producer, d, src, n));
	OK(accel_event_record(ctx->dev, producer, e));
	OK(accel_native_stream_wait_event(ctx->dev, c.stream, e));
	consumer_read(&c, out, d, n);
	CHECK(check_bytes(out, n, 0x3c));
	/* the legacy and per-thread default streams by their numbers */
	OK(accel_native_stream_wait_event(ctx->dev, LEGACY, e));
	OK(accel_native_stream_wait_event(ctx->dev, PER_THREAD, e));
	OK(accel_native_stream_wait_event(ctx->dev, NULL, e));
	OK(accel_stream_destroy(ctx->dev, producer));
	consumer_close(&c);
	dfree(ctx, busy, 2 * BUSY_HALF);
	dfree(ctx, src, n);
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_native_stream_wait_event(ctx->dev, LEGACY, NULL));
	OK(accel_event_destroy(ctx->dev, e));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_native_stream_wait_event(ctx->dev, LEGACY, e));
out:
	dfree(ctx, d, n);
	free(out);
}

static void needs_cuda(struct suite_ctx *ctx)
{
	if (!on_cuda(ctx))
		suite_skip("a test of the cuda backend");
}

/* ------------------------------------------------------------------ */
/* accel_stream_create_external: arguments and handles */

/*
 * A failed adoption sets *stream to NULL and changes nothing: the device
 * keeps working, its synchronous calls and device-wide waits included
 * (accel.h, Errors; accel_stream_create(3), RETURN VALUE).
 */
TEST(external_failed_adopt_changes_nothing)
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
TEST(external_destroyed_adopted_handle_stays_invalid)
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
TEST(external_adopt_and_destroy_from_threads)
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

TEST_NOINIT(external_pool_freed_on_adopted_stream_to_another)
{
	open_slow(ctx, 20000);
	check_no_clobber(ctx, false);
}

TEST_NOINIT(external_pool_freed_on_adopted_stream_to_no_stream)
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
TEST_NOINIT(external_pool_free_no_stream_waits_for_adopted)
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
TEST_NOINIT(external_sync_call_not_delayed_by_later_legacy_work)
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
TEST_NOINIT(external_sync_call_waits_for_earlier_adopted_work)
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
