// SPDX-License-Identifier: MIT
/* "Allocations may come from several threads at once." */
#include <pthread.h>

#include "suite.h"

enum { THREADS = 8, ROUNDS = 150 };

struct worker {
	struct suite_ctx *ctx;
	int index;
	int rounds;
	int errors;
};

static void *alloc_copy_free(void *arg)
{
	struct worker *w = arg;
	uint32_t seed = (uint32_t)w->index * 7777 + 1;
	uint8_t *h = malloc(70000), *back = malloc(70000);
	accel_stream_t s;

	if (!h || !back || accel_stream_create(w->ctx->dev, &s) != ACCEL_SUCCESS) {
		w->errors++;
		goto out;
	}
	for (int r = 0; r < w->rounds; r++) {
		size_t n;
		void *d = NULL;

		seed = seed * 1103515245 + 12345;
		n = 1 + (seed >> 8) % 70000;
		if (accel_device_memory_allocate(w->ctx->dev, &d, n) != ACCEL_SUCCESS) {
			w->errors++;
			continue;
		}
		fill_pattern(h, n, seed);
		if (r % 2) {
			w->errors += accel_async_memory_copy_h2d(w->ctx->dev, s, d, h, n) != ACCEL_SUCCESS;
			w->errors += accel_async_memory_copy_d2h(w->ctx->dev, s, back, d, n) != ACCEL_SUCCESS;
			w->errors += accel_stream_synchronize(w->ctx->dev, s) != ACCEL_SUCCESS;
		} else {
			w->errors += accel_memory_copy_h2d(w->ctx->dev, d, h, n) != ACCEL_SUCCESS;
			w->errors += accel_memory_copy_d2h(w->ctx->dev, back, d, n) != ACCEL_SUCCESS;
		}
		w->errors += memcmp(back, h, n) != 0;
		w->errors += accel_device_memory_deallocate(w->ctx->dev, d, n) != ACCEL_SUCCESS;
	}
	w->errors += accel_stream_destroy(w->ctx->dev, s) != ACCEL_SUCCESS;
out:
	free(h);
	free(back);
	return NULL;
}

static int run_workers(struct suite_ctx *ctx, int rounds)
{
	struct worker w[THREADS];
	pthread_t t[THREADS];
	int errors = 0;

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .ctx = ctx, .index = i, .rounds = rounds };
		REQUIRE(pthread_create(&t[i], NULL, alloc_copy_free, &w[i]) == 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		errors += w[i].errors;
	}
	return errors;
}

/*
 * "stats returning to baseline": the baseline is taken after a first round,
 * which lets a backend make its lazy per-thread and per-stream allocations.
 */
TEST(threads_allocate_copy_and_free)
{
	size_t before;

	CHECK(run_workers(ctx, 2) == 0);
	before = free_memory(ctx);
	CHECK(run_workers(ctx, ROUNDS) == 0);
	CHECK_FREE_IS(ctx, before);
}

static void *create_and_destroy(void *arg)
{
	struct worker *w = arg;

	for (int r = 0; r < w->rounds; r++) {
		accel_stream_t s;
		accel_event_t e;

		if (accel_stream_create(w->ctx->dev, &s) != ACCEL_SUCCESS ||
		    accel_event_create(w->ctx->dev, &e) != ACCEL_SUCCESS) {
			w->errors++;
			return NULL;
		}
		w->errors += accel_event_record(w->ctx->dev, s, e) != ACCEL_SUCCESS;
		w->errors += accel_event_synchronize(w->ctx->dev, e) != ACCEL_SUCCESS;
		w->errors += accel_event_destroy(w->ctx->dev, e) != ACCEL_SUCCESS;
		w->errors += accel_stream_destroy(w->ctx->dev, s) != ACCEL_SUCCESS;
	}
	return NULL;
}

TEST(threads_create_and_destroy_streams)
{
	struct worker w[THREADS];
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .ctx = ctx, .index = i, .rounds = ROUNDS };
		REQUIRE(pthread_create(&t[i], NULL, create_and_destroy, &w[i]) == 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		CHECK(w[i].errors == 0);
	}
}

/* The same allocation freed by two threads at once: exactly one wins. */
static void *free_it(void *arg)
{
	void **args = arg;
	struct suite_ctx *ctx = args[0];

	return (void *)(uintptr_t)(accel_device_memory_deallocate(ctx->dev, args[1], 4096) == ACCEL_SUCCESS);
}

TEST(racing_double_free)
{
	for (int r = 0; r < 50; r++) {
		void *args[2] = { ctx, dalloc(ctx, 4096) };
		pthread_t a, b;
		void *ra, *rb;

		REQUIRE(pthread_create(&a, NULL, free_it, args) == 0);
		REQUIRE(pthread_create(&b, NULL, free_it, args) == 0);
		pthread_join(a, &ra);
		pthread_join(b, &rb);
		CHECK((uintptr_t)ra + (uintptr_t)rb == 1);
	}
}
