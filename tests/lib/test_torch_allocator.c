// SPDX-License-Identifier: MIT
/*
 * libaccel-torch.so, PyTorch's CUDAPluggableAllocator contract: alloc(size,
 * device, stream) gives device memory of that CUDA device for work on that
 * stream, or NULL; free(ptr, size, device, stream) takes back what alloc
 * gave, with the stream it was allocated on. Called as PyTorch calls it,
 * with CUstreams; runs on cuda devices only.
 */
#include <pthread.h>

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
