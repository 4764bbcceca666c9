// SPDX-License-Identifier: MIT
/*
 * libaccel-torch.so, PyTorch's CUDAPluggableAllocator contract: alloc(size,
 * device, stream) gives device memory of that CUDA device for work on that
 * stream, or NULL; free(ptr, size, device, stream) takes back what alloc
 * gave, with the stream it was allocated on. Called as PyTorch calls it,
 * with CUstreams; runs on cuda devices only.
 */
#include <limits.h>
#include <pthread.h>
#include <sys/types.h>

#include "suite.h"

/* The memory is the device's: libaccel's copies reach it, both ways. */
TEST(torch_allocator_gives_device_memory)
{
	const size_t n = 1 << 20;
	int dev = cuda_ordinal(ctx);
	struct torch_alloc t;
	uint8_t *h = xmalloc(n), *back;
	void *p;

	torch_alloc_load(&t);
	p = t.alloc(n, dev, NULL);	/* the legacy default stream */
	REQUIRE(p);
	fill_pattern(h, n, 401);
	OK(accel_memory_copy_h2d(ctx->dev, p, h, n));
	back = read_back(ctx, p, n);
	CHECK(check_pattern(back, n, 401));
	CHECK(t.stat(dev, "requested") == n);
	t.free(p, n, dev, NULL);
	CHECK(t.stat(dev, "requested") == 0);
	CHECK(t.stat(dev, "requested_peak") == n);
	CHECK(t.stat(dev, "reserved_peak") >= n);
	CHECK(t.stat(dev, "no such figure") == (size_t)-1);
	CHECK(t.alloc(0, dev, NULL) == NULL);
	free(back);
	free(h);
}

/* cudaMallocAsync's order: a block freed on a stream is its next one. */
TEST(torch_allocator_reuses_on_the_stream)
{
	const size_t n = 3 << 20;
	int dev = cuda_ordinal(ctx);
	struct torch_alloc t;
	accel_stream_t owner;
	void *s, *p, *q;

	torch_alloc_load(&t);
	needs_caching(ctx);
	s = native_stream(ctx, &owner);
	p = t.alloc(n, dev, s);
	REQUIRE(p);
	t.free(p, n, dev, s);
	q = t.alloc(n, dev, s);
	CHECK(q == p);
	t.free(q, n, dev, s);
	CHECK(t.stat(dev, "blocks") == 0);
	CHECK(t.trim(dev) == 0);
	CHECK(t.stat(dev, "reserved") == 0);
	OK(accel_stream_destroy(ctx->dev, owner));
}

/* Bad input gets NULL or nothing, and loses nothing. */
TEST(torch_allocator_refuses_bad_input)
{
	const size_t n = 1 << 16;
	int dev = cuda_ordinal(ctx), x;
	struct torch_alloc t;
	void *p;

	torch_alloc_load(&t);
	CHECK(t.alloc(n, -1, NULL) == NULL);
	CHECK(t.alloc(n, 64, NULL) == NULL);
	CHECK(t.alloc(n, 63, NULL) == NULL);	/* no such CUDA device */
	CHECK(t.alloc(-1, dev, NULL) == NULL);
	CHECK(t.alloc(2, dev, (void *)2) == NULL);	/* per-thread default */
	p = t.alloc(n, dev, NULL);
	REQUIRE(p);
	t.free(&x, n, dev, NULL);	/* never allocated */
	t.free(p, n + 1, dev, NULL);	/* the wrong size */
	t.free(p, n, -1, NULL);
	CHECK(t.stat(dev, "blocks") == 1);
	t.free(p, n, dev, NULL);
	CHECK(t.stat(dev, "blocks") == 0);
}

struct churn {
	struct suite_ctx *ctx;
	struct torch_alloc *t;
	void *stream;
	bool ok;
};

/* allocations of mixed sizes, each written and freed, on one stream */
static void *churn(void *arg)
{
	struct churn *c = arg;
	int dev = atoi(c->ctx->name + 5);
	uint8_t h[256];

	c->ok = true;
	for (int i = 0; i < 500 && c->ok; i++) {
		size_t n = 256 + (size_t)(i * 7919 % 64) * 4096;
		void *p = c->t->alloc(n, dev, c->stream);

		c->ok = p && accel_memory_copy_h2d(c->ctx->dev, p, h,
						   sizeof(h)) == ACCEL_SUCCESS;
		if (p)
			c->t->free(p, n, dev, c->stream);
	}
	return NULL;
}

/* Threads on streams of their own, and two on one, as PyTorch's are. */
TEST(torch_allocator_threads)
{
	enum { THREADS = 4 };
	struct churn c[THREADS];
	pthread_t th[THREADS];
	accel_stream_t owners[THREADS];
	struct torch_alloc t;

	cuda_ordinal(ctx);
	torch_alloc_load(&t);
	for (int i = 0; i < THREADS; i++) {
		c[i] = (struct churn){ .ctx = ctx, .t = &t };
		c[i].stream = i == THREADS - 1 ? c[0].stream :
			      native_stream(ctx, &owners[i]);
		REQUIRE(!pthread_create(&th[i], NULL, churn, &c[i]));
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		CHECK(c[i].ok);
	}
	CHECK(t.stat(atoi(ctx->name + 5), "blocks") == 0);
	for (int i = 0; i < THREADS - 1; i++)
		OK(accel_stream_destroy(ctx->dev, owners[i]));
}

/* ------------------------------------------------------------------ */
/* Stream order, limits and threads */

/*
 * PyTorch's stream-ordered reuse through the allocator: a block freed on
 * stream S1 with a slow write of S1 still queued, then allocated for S2:
 * S2's data must survive S1's late write.
 */
TEST_NOINIT(torch_allocator_no_clobber_across_streams)
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
TEST(torch_allocator_limits_and_bad_frees)
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
TEST(torch_allocator_more_streams_than_its_limit)
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
TEST(torch_allocator_first_use_from_threads)
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
TEST(torch_allocator_stream_destroyed_by_its_owner)
{
	const size_t n = 1 << 16;
	int dev = cuda_ordinal(ctx);
	struct torch_alloc t;
	accel_pool_t pool;
	accel_stream_t owner;
	void *s, *p, *q = NULL;

	suite_known_bug("libaccel-torch.so keeps adopted CUstreams forever; once "
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
