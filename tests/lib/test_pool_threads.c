// SPDX-License-Identifier: MIT
/*
 * The caching allocator under many threads: "Thread safety without a
 * global lock on the fast path; a test with many threads allocating and
 * freeing at once."
 */
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

#include "suite.h"

enum { THREADS = 8, ROUNDS = 300, HANDOFF = 4, CROWD = 24 };

struct pool_worker {
	struct suite_ctx *ctx;
	accel_pool_t pool;
	int index;
	int errors;
	bool own_stream;	/* half the threads use a stream each */
	accel_stream_t shared;	/* or all of them one stream */
};

/* Blocks one thread allocated and the next one frees. */
static struct {
	pthread_mutex_t lock;
	void *ptr[THREADS][HANDOFF];
	size_t size[THREADS][HANDOFF];
} handoff = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int write_and_check(struct pool_worker *w, accel_stream_t s, uint8_t *d,
			   size_t n, uint32_t seed, uint8_t *h, uint8_t *back)
{
	accel_device_t dev = w->ctx->dev;
	int errors = 0;

	fill_pattern(h, n, seed);
	if (s) {
		errors += accel_async_memory_copy_h2d(dev, s, d, h, n) != ACCEL_SUCCESS;
		errors += accel_async_memory_copy_d2h(dev, s, back, d, n) != ACCEL_SUCCESS;
		errors += accel_stream_synchronize(dev, s) != ACCEL_SUCCESS;
	} else {
		errors += accel_memory_copy_h2d(dev, d, h, n) != ACCEL_SUCCESS;
		errors += accel_memory_copy_d2h(dev, back, d, n) != ACCEL_SUCCESS;
	}
	return errors + (memcmp(back, h, n) != 0);
}

/* Free what the previous thread left, leave some for the next one. */
static void pass_on(struct pool_worker *w, int round, void *d, size_t n)
{
	int prev = (w->index + THREADS - 1) % THREADS, slot = round % HANDOFF;
	void *theirs;
	size_t their_size;

	pthread_mutex_lock(&handoff.lock);
	theirs = handoff.ptr[prev][slot];
	their_size = handoff.size[prev][slot];
	handoff.ptr[prev][slot] = NULL;
	pthread_mutex_unlock(&handoff.lock);
	if (theirs)
		w->errors += accel_pool_deallocate(w->pool, NULL, theirs,
						   their_size) != ACCEL_SUCCESS;
	pthread_mutex_lock(&handoff.lock);
	if (!handoff.ptr[w->index][slot]) {
		handoff.ptr[w->index][slot] = d;
		handoff.size[w->index][slot] = n;
		d = NULL;
	}
	pthread_mutex_unlock(&handoff.lock);
	if (d)
		w->errors += accel_pool_deallocate(w->pool, NULL, d, n) != ACCEL_SUCCESS;
}

static void *pool_worker(void *arg)
{
	struct pool_worker *w = arg;
	uint32_t seed = (uint32_t)w->index * 7919 + 3;
	uint8_t *h = malloc(100000), *back = malloc(100000);
	accel_stream_t s = w->shared;

	if (!h || !back || (w->own_stream &&
			    accel_stream_create(w->ctx->dev, &s) != ACCEL_SUCCESS)) {
		w->errors++;
		goto out;
	}
	for (int r = 0; r < ROUNDS; r++) {
		void *d[3] = { NULL };
		size_t n[3];

		for (int k = 0; k < 3; k++) {
			seed = seed * 1103515245 + 12345;
			n[k] = 1 + (seed >> 8) % 100000;
			if (accel_pool_allocate(w->pool, s, &d[k], n[k]) != ACCEL_SUCCESS) {
				w->errors++;
				goto out;
			}
			if (w->shared)	/* small work, to crowd the allocator */
				continue;
			w->errors += write_and_check(w, s, d[k], n[k], seed, h, back);
		}
		/* the blocks are still intact after their neighbours' writes */
		w->errors += write_and_check(w, s, d[0], n[0], seed + 1, h, back);
		if (w->shared && d[1] == d[2])
			w->errors++;
		w->errors += accel_pool_deallocate(w->pool, s, d[1], n[1]) != ACCEL_SUCCESS;
		w->errors += accel_pool_deallocate(w->pool, s, d[2], n[2]) != ACCEL_SUCCESS;
		if (s)	/* freed on its stream, the block may move to others */
			w->errors += accel_pool_deallocate(w->pool, s, d[0], n[0]) != ACCEL_SUCCESS;
		else
			pass_on(w, r, d[0], n[0]);
	}
	if (w->own_stream)
		w->errors += accel_stream_destroy(w->ctx->dev, s) != ACCEL_SUCCESS;
out:
	free(h);
	free(back);
	return NULL;
}

TEST(pool_threads_allocate_and_free_at_once)
{
	size_t before = free_memory(ctx);
	struct pool_worker w[THREADS];
	pthread_t t[THREADS];
	struct accel_pool_stats st;
	accel_pool_t p;

	REQUIRE_OK(accel_pool_create(ctx->dev, &p));
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct pool_worker){ .ctx = ctx, .pool = p, .index = i,
					     .own_stream = i % 2 };
		REQUIRE(pthread_create(&t[i], NULL, pool_worker, &w[i]) == 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		CHECK(w[i].errors == 0);
	}
	for (int i = 0; i < THREADS; i++)	/* what is left to hand on */
		for (int k = 0; k < HANDOFF; k++)
			if (handoff.ptr[i][k])
				OK(accel_pool_deallocate(p, NULL, handoff.ptr[i][k],
							 handoff.size[i][k]));
	REQUIRE_OK(accel_pool_get_stats(p, &st));
	CHECK(st.blocks == 0 && st.allocated == 0 && st.requested == 0);
	CHECK(st.requested_peak > 0);
	OK(accel_pool_trim(p));
	REQUIRE_OK(accel_pool_get_stats(p, &st));
	CHECK(st.reserved == 0 && st.chunks == 0);
	CHECK(st.backend_allocs == st.backend_frees);
	CHECK_FREE_IS(ctx, before);
	OK(accel_pool_destroy(p));
}

/* Many threads on one stream share its arena and its lock. */
TEST(pool_threads_share_one_stream)
{
	size_t before = free_memory(ctx);
	struct pool_worker w[CROWD];
	pthread_t t[CROWD];
	struct accel_pool_stats st;
	accel_pool_t p;
	accel_stream_t s;

	REQUIRE_OK(accel_pool_create(ctx->dev, &p));
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (int i = 0; i < CROWD; i++) {
		w[i] = (struct pool_worker){ .ctx = ctx, .pool = p, .index = i,
					     .shared = s };
		REQUIRE(pthread_create(&t[i], NULL, pool_worker, &w[i]) == 0);
	}
	for (int i = 0; i < CROWD; i++) {
		pthread_join(t[i], NULL);
		CHECK(w[i].errors == 0);
	}
	REQUIRE_OK(accel_pool_get_stats(p, &st));
	CHECK(st.blocks == 0 && st.allocated == 0);
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_pool_destroy(p));
	CHECK_FREE_IS(ctx, before);
}

/* ------------------------------------------------------------------ */
/* A reset of the peaks racing an allocation */

#define PEAK_TRIALS 20000

struct peak_race {
	accel_pool_t pool;
	atomic_int go, done;
};

/* both sides arrive at round @round of @g before either goes on */
static void meet(atomic_int *g, int round)
{
	atomic_fetch_add(g, 1);
	while (atomic_load(g) < 2 * (round + 1))
		;
}

static void spin(unsigned int *seed)
{
	for (int n = rand_r(seed) % 400; n > 0; n--)
		atomic_signal_fence(memory_order_seq_cst);
}

static void *reset_peaks(void *arg)
{
	struct peak_race *r = arg;
	unsigned int seed = 7;

	for (int i = 0; i < PEAK_TRIALS; i++) {
		meet(&r->go, i);
		spin(&seed);
		OK(accel_pool_reset_peaks(r->pool));
		meet(&r->done, i);
	}
	return NULL;
}

TEST(pool_peaks_stay_at_least_current_after_a_racing_reset)
{
	struct peak_race r = { 0 };
	unsigned int seed = 3;
	int below = 0;
	pthread_t t;

	REQUIRE_OK(accel_pool_create(ctx->dev, &r.pool));
	REQUIRE(!pthread_create(&t, NULL, reset_peaks, &r));
	for (int i = 0; i < PEAK_TRIALS; i++) {
		struct accel_pool_stats s;
		void *big, *p;

		/* a high peak, then nothing held */
		REQUIRE_OK(accel_pool_allocate(r.pool, NULL, &big, 1 << 20));
		REQUIRE_OK(accel_pool_deallocate(r.pool, NULL, big, 1 << 20));
		meet(&r.go, i);
		spin(&seed);
		REQUIRE_OK(accel_pool_allocate(r.pool, NULL, &p, 4096));
		meet(&r.done, i);
		REQUIRE_OK(accel_pool_get_stats(r.pool, &s));
		below += s.allocated > s.allocated_peak ||
			 s.requested > s.requested_peak ||
			 s.reserved > s.reserved_peak;
		REQUIRE_OK(accel_pool_deallocate(r.pool, NULL, p, 4096));
	}
	pthread_join(t, NULL);
	if (below)
		printf("# %d of %d trials left a peak below its value\n",
		       below, PEAK_TRIALS);
	CHECK(below == 0);
	OK(accel_pool_destroy(r.pool));
}

/* ------------------------------------------------------------------ */
/* Threads that call the library from their last destructors */

#define EXIT_THREADS 2000

static accel_pool_t exit_pool;
static pthread_key_t rearm_key;

static void pool_calls(void)
{
	void *p;

	OK(accel_pool_allocate(exit_pool, NULL, &p, 777));
	OK(accel_pool_deallocate(exit_pool, NULL, p, 777));
}

/* runs every destructor round, as exit hooks that must run last do */
static void rearm(void *v)
{
	uintptr_t round = (uintptr_t)v;

	pool_calls();
	if (round < PTHREAD_DESTRUCTOR_ITERATIONS)
		pthread_setspecific(rearm_key, (void *)(round + 1));
}

static void *exiting_thread(void *arg)
{
	(void)arg;
	pool_calls();
	pthread_setspecific(rearm_key, (void *)1);
	return NULL;
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static void run_exiting_threads(int n)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;

		REQUIRE(!pthread_create(&t, NULL, exiting_thread, NULL));
		pthread_join(t, NULL);
	}
}

TEST(pool_exiting_threads_leave_no_state_behind)
{
	size_t before, after;

#ifdef __SANITIZE_ADDRESS__
	suite_skip("ASan's allocator does not fill in mallinfo2()");
#endif
	/*
	 * The library's own thread-exit hook comes first, so that a call from
	 * the last round of this key's destructor comes after it.
	 */
	REQUIRE_OK(accel_pool_create(ctx->dev, &exit_pool));
	pool_calls();
	REQUIRE(!pthread_key_create(&rearm_key, rearm));
	run_exiting_threads(100);	/* what the first ones set up */
	before = heap_in_use();
	run_exiting_threads(EXIT_THREADS);
	after = heap_in_use();
	if (after > before)
		printf("# the heap grew %zu bytes over %d threads\n",
		       after - before, EXIT_THREADS);
	CHECK(after <= before + 16 * EXIT_THREADS);
	OK(accel_pool_destroy(exit_pool));
	pthread_key_delete(rearm_key);
}
