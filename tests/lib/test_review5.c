// SPDX-License-Identifier: MIT
/*
 * Promises of the pools a fifth review found broken, once pools were held
 * by hazard pointers: the output of a refused allocation, peaks against a
 * reset racing an allocation, counts against a free of a block being
 * handed out, and per-thread state of threads that call the library from
 * their last destructors.
 */
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

#include "suite.h"

TEST(review5_refused_pool_allocate_leaves_null)
{
	accel_pool_t pool, dead;
	accel_stream_t s;
	void *p;

	REQUIRE_OK(accel_pool_create(ctx->dev, &dead));
	OK(accel_pool_destroy(dead));
	p = (void *)0xdeadbeef;
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_pool_allocate(dead, NULL, &p, 64));
	CHECK(p == NULL);
	p = (void *)0xdeadbeef;
	FAILS(accel_pool_allocate(NULL, NULL, &p, 64));
	CHECK(p == NULL);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	p = (void *)0xdeadbeef;
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_pool_allocate((accel_pool_t)s, NULL, &p, 64));
	CHECK(p == NULL);
	OK(accel_stream_destroy(ctx->dev, s));
	/* and a live pool with a destroyed stream */
	REQUIRE_OK(accel_pool_create(ctx->dev, &pool));
	p = (void *)0xdeadbeef;
	FAILS(accel_pool_allocate(pool, s, &p, 64));
	CHECK(p == NULL);
	OK(accel_pool_destroy(pool));
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

TEST(review5_peaks_stay_at_least_current_after_a_racing_reset)
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

TEST(review5_exiting_threads_leave_no_state_behind)
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
