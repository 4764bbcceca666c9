// SPDX-License-Identifier: MIT
/*
 * RMM's random_allocations benchmark, ported: N blocks of random sizes
 * (uniform from 1 byte to a maximum) are allocated, then freed and
 * replaced at random N times, then freed. The same sequence runs through
 * libaccel's caching allocator, straight to the device (the raw backend),
 * and through glibc malloc as a reference; each is reported in ns per
 * operation (an allocation or a free). As in RMM, where the benchmark loop
 * reuses one memory resource, the sequence runs once untimed first, so
 * that the pool is warm and glibc has its heap; then REPS timed times
 * (5; -r), of which the median is reported. For the pool, the
 * fragmentation: peak bytes reserved from the device over peak bytes
 * requested, over both runs.
 *
 *   pool_bench [-d DEVICE] [-n N[,N...]] [-m MAX_BYTES] [-s SEED] [-r REPS] [-p] [-v]
 *
 * -p runs the pool alone (for profiling); -v prints the pool's statistics
 * after each run.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <accel/accel.h>

#define MAX_REPS 101

enum allocator { POOL, RAW, MALLOC };

struct run {
	enum allocator which;
	struct C_Device_st dev;
	accel_pool_t pool;
	void **ptrs;
	size_t *sizes;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* xorshift64*: the same sequence for every allocator */
static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static void die(const char *what)
{
	fprintf(stderr, "pool_bench: %s: %s\n", what, accel_get_last_error());
	exit(1);
}

static void *take(struct run *r, size_t size)
{
	void *p = NULL;

	switch (r->which) {
	case POOL:
		if (accel_pool_allocate(r->pool, NULL, &p, size) != C_SUCCESS)
			die("accel_pool_allocate");
		break;
	case RAW:
		if (accel_device_memory_allocate(&r->dev, &p, size) != C_SUCCESS)
			die("accel_device_memory_allocate");
		break;
	case MALLOC:
		p = malloc(size);
		if (!p) {
			fprintf(stderr, "pool_bench: malloc(%zu) failed\n", size);
			exit(1);
		}
		break;
	}
	return p;
}

static void give(struct run *r, void *p, size_t size)
{
	switch (r->which) {
	case POOL:
		if (accel_pool_deallocate(r->pool, NULL, p, size) != C_SUCCESS)
			die("accel_pool_deallocate");
		break;
	case RAW:
		if (accel_device_memory_deallocate(&r->dev, p, size) != C_SUCCESS)
			die("accel_device_memory_deallocate");
		break;
	case MALLOC:
		free(p);
		break;
	}
}

/* ns per operation of the whole sequence */
static double random_allocations(struct run *r, size_t n, size_t max,
				 uint64_t seed)
{
	uint64_t rng = seed;
	double t0 = now();

	for (size_t i = 0; i < n; i++) {
		r->sizes[i] = 1 + next_random(&rng) % max;
		r->ptrs[i] = take(r, r->sizes[i]);
	}
	for (size_t k = 0; k < n; k++) {
		size_t i = next_random(&rng) % n;

		give(r, r->ptrs[i], r->sizes[i]);
		r->sizes[i] = 1 + next_random(&rng) % max;
		r->ptrs[i] = take(r, r->sizes[i]);
	}
	for (size_t i = 0; i < n; i++)
		give(r, r->ptrs[i], r->sizes[i]);
	return (now() - t0) * 1e9 / (4.0 * n);
}

static void print_stats(accel_pool_t pool)
{
	struct accel_pool_stats s;

	if (accel_pool_get_stats(pool, &s) != C_SUCCESS)
		die("accel_pool_get_stats");
	printf("  pool: reserved %zu (peak %zu), allocated %zu (peak %zu), requested %zu (peak %zu)\n"
	       "        chunks %zu, blocks %zu, free blocks %zu, largest free %zu, device allocs %zu, frees %zu%s\n",
	       s.reserved, s.reserved_peak, s.allocated, s.allocated_peak,
	       s.requested, s.requested_peak, s.chunks, s.blocks, s.free_blocks,
	       s.largest_free, s.backend_allocs, s.backend_frees,
	       s.caching ? "" : " (ACCEL_POOL=off)");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void bench(struct run *r, size_t n, size_t max, uint64_t seed,
		  int reps, bool pool_only, bool verbose)
{
	double ns[3] = { 0 };
	struct accel_pool_stats s;

	r->ptrs = calloc(n, sizeof(*r->ptrs));
	r->sizes = calloc(n, sizeof(*r->sizes));
	if (!r->ptrs || !r->sizes) {
		fprintf(stderr, "pool_bench: out of memory\n");
		exit(1);
	}
	for (int w = POOL; w <= (pool_only ? POOL : MALLOC); w++) {
		r->which = w;
		if (w == POOL && accel_pool_create(&r->dev, &r->pool) != C_SUCCESS)
			die("accel_pool_create");
		double t[MAX_REPS];

		random_allocations(r, n, max, seed);
		for (int i = 0; i < reps; i++)
			t[i] = random_allocations(r, n, max, seed);
		qsort(t, reps, sizeof(t[0]), cmp_double);
		ns[w] = t[reps / 2];
	}
	if (accel_pool_get_stats(r->pool, &s) != C_SUCCESS)
		die("accel_pool_get_stats");
	printf("%8zu %10.1f %10.1f %10.1f %9.1fx %10.3f\n", n, ns[POOL],
	       ns[RAW], ns[MALLOC], ns[RAW] / ns[POOL],
	       (double)s.reserved_peak / s.requested_peak);
	if (verbose)
		print_stats(r->pool);
	if (accel_pool_destroy(r->pool) != C_SUCCESS)
		die("accel_pool_destroy");
	free(r->ptrs);
	free(r->sizes);
}

int main(int argc, char **argv)
{
	const char *device = NULL, *counts = "1000,10000,100000";
	struct run r = { 0 };
	size_t max = 64 << 10;
	uint64_t seed = 1;
	bool verbose = false, pool_only = false;
	int reps = 5;
	const char *name;
	int opt;

	while ((opt = getopt(argc, argv, "d:n:m:s:r:pv")) != -1) {
		switch (opt) {
		case 'd': device = optarg; break;
		case 'n': counts = optarg; break;
		case 'm': max = strtoull(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'r': reps = atoi(optarg); break;
		case 'p': pool_only = true; break;
		case 'v': verbose = true; break;
		default:
			fprintf(stderr, "usage: %s [-d DEVICE] [-n N[,N...]] [-m MAX_BYTES] [-s SEED] [-r REPS] [-p] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	if (!max || !seed || reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "pool_bench: -m and -s must not be 0, -r is 1 to %d\n",
			MAX_REPS);
		return 2;
	}
	if (device && accel_find_device(device, &r.dev.id) != C_SUCCESS)
		die(device);
	if (accel_get_device_name(&r.dev, &name) != C_SUCCESS)
		die("no device");
	printf("random_allocations on %s: sizes 1..%zu bytes, seed %llu, no stream, median of %d\n",
	       name, max, (unsigned long long)seed, reps);
	printf("%8s %10s %10s %10s %10s %10s\n", "blocks", "pool ns", "raw ns",
	       "malloc ns", "raw/pool", "frag");
	for (const char *p = counts; *p;) {
		char *end;
		size_t n = strtoull(p, &end, 10);

		if (!n || (*end && *end != ',')) {
			fprintf(stderr, "pool_bench: bad -n list \"%s\"\n", counts);
			return 2;
		}
		bench(&r, n, max, seed, reps, pool_only, verbose);
		p = *end ? end + 1 : end;
	}
	return 0;
}
