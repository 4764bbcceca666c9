// SPDX-License-Identifier: MIT
/*
 * accel_stream_create_external(): another library's CUstream as a libaccel
 * stream (accel.h). The work libaccel queues on it runs in order with the
 * other library's; destroying it leaves the CUstream alive; the pool reuses
 * a block freed on it at once for it. Other backends refuse it.
 */
#include <dlfcn.h>

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
