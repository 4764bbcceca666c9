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
 * Built with WITH_CUDA (pool_bench_cuda, for a cuda device), it also runs
 * the pool on a stream, and CUDA's own allocators: cuMemAlloc/cuMemFree,
 * and cuMemAllocAsync/cuMemFreeAsync on a stream from the device's default
 * memory pool, which keeps what is freed (release threshold: unlimited)
 * during the runs and is trimmed after them, so that what it holds is not
 * missing from the runs that follow. The stream runs end with a
 * synchronization of the stream, timed.
 *
 *   pool_bench [-d DEVICE] [-n N[,N...]] [-m MAX_BYTES] [-s SEED] [-r REPS] [-H EVENTS] [-p] [-v]
 *
 * -p runs the pool alone (for profiling; the other columns show "-"); -v
 * prints the pool's statistics after each run; -H makes the pools record
 * their history in a ring of EVENTS (accel_pool_record_history()), for
 * what recording costs.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <accel/accel.h>

#ifdef WITH_CUDA
#include <cuda.h>
#endif

#define MAX_REPS 101

enum allocator {
	POOL, RAW, MALLOC,
#ifdef WITH_CUDA
	POOL_STREAM, CU_ALLOC, CU_ASYNC,
#endif
	NUM_ALLOCATORS
};

static const char *const column[NUM_ALLOCATORS] = {
	[POOL] = "pool ns", [RAW] = "raw ns", [MALLOC] = "malloc ns",
#ifdef WITH_CUDA
	[POOL_STREAM] = "pool+stream", [CU_ALLOC] = "cuMemAlloc",
	[CU_ASYNC] = "cuMemAllocAsync",
#endif
};

struct run {
	enum allocator which;
	struct accel_device_id dev;
	accel_pool_t pool;
	accel_stream_t stream;	/* POOL_STREAM's */
#ifdef WITH_CUDA
	CUstream cu_stream;	/* CU_ASYNC's */
	CUmemoryPool cu_pool;	/* the device's default memory pool */
	CUdevice cu_dev;
#endif
	void **ptrs;
	size_t *sizes;
	size_t history;		/* -H: events the pools record; 0: none */
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

#ifdef WITH_CUDA
static void cu_check(CUresult r, const char *what)
{
	const char *msg = "unknown error";

	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorString(r, &msg);
	fprintf(stderr, "pool_bench: %s: %s (CUDA error %d)\n", what, msg, (int)r);
	exit(1);
}

/*
 * Make the device's primary context current for CUDA's allocators, and
 * let its default memory pool keep what is freed, as libaccel's pool does.
 */
static void cu_setup(struct run *r, const char *name)
{
	cuuint64_t keep_all = UINT64_MAX;
	CUcontext ctx;
	int ordinal;

	if (sscanf(name, "cuda:%d", &ordinal) != 1) {
		fprintf(stderr, "pool_bench: %s is not a cuda device\n", name);
		exit(1);
	}
	cu_check(cuInit(0), "cuInit");
	cu_check(cuDeviceGet(&r->cu_dev, ordinal), "cuDeviceGet");
	cu_check(cuDevicePrimaryCtxRetain(&ctx, r->cu_dev), "cuDevicePrimaryCtxRetain");
	cu_check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	cu_check(cuDeviceGetDefaultMemPool(&r->cu_pool, r->cu_dev),
		 "cuDeviceGetDefaultMemPool");
	cu_check(cuMemPoolSetAttribute(r->cu_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
				       &keep_all), "cuMemPoolSetAttribute");
	cu_check(cuStreamCreate(&r->cu_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

/* What cu_setup took, given back: the stream, the context's reference. */
static void cu_teardown(struct run *r)
{
	cu_check(cuStreamDestroy(r->cu_stream), "cuStreamDestroy");
	cu_check(cuCtxSetCurrent(NULL), "cuCtxSetCurrent");
	cu_check(cuDevicePrimaryCtxRelease(r->cu_dev), "cuDevicePrimaryCtxRelease");
}
#endif

static void *take(struct run *r, size_t size)
{
	void *p = NULL;

	switch (r->which) {
	case POOL:
		if (accel_pool_allocate(r->pool, NULL, &p, size) != ACCEL_SUCCESS)
			die("accel_pool_allocate");
		break;
	case RAW:
		if (accel_device_memory_allocate(&r->dev, &p, size) != ACCEL_SUCCESS)
			die("accel_device_memory_allocate");
		break;
	case MALLOC:
		p = malloc(size);
		if (!p) {
			fprintf(stderr, "pool_bench: malloc(%zu) failed\n", size);
			exit(1);
		}
		break;
#ifdef WITH_CUDA
	case POOL_STREAM:
		if (accel_pool_allocate(r->pool, r->stream, &p, size) != ACCEL_SUCCESS)
			die("accel_pool_allocate");
		break;
	case CU_ALLOC:
		cu_check(cuMemAlloc((CUdeviceptr *)&p, size), "cuMemAlloc");
		break;
	case CU_ASYNC:
		cu_check(cuMemAllocAsync((CUdeviceptr *)&p, size, r->cu_stream),
			 "cuMemAllocAsync");
		break;
#endif
	default:
		abort();
	}
	return p;
}

static void give(struct run *r, void *p, size_t size)
{
	switch (r->which) {
	case POOL:
		if (accel_pool_deallocate(r->pool, NULL, p, size) != ACCEL_SUCCESS)
			die("accel_pool_deallocate");
		break;
	case RAW:
		if (accel_device_memory_deallocate(&r->dev, p, size) != ACCEL_SUCCESS)
			die("accel_device_memory_deallocate");
		break;
	case MALLOC:
		free(p);
		break;
#ifdef WITH_CUDA
	case POOL_STREAM:
		if (accel_pool_deallocate(r->pool, r->stream, p, size) != ACCEL_SUCCESS)
			die("accel_pool_deallocate");
		break;
	case CU_ALLOC:
		cu_check(cuMemFree((CUdeviceptr)p), "cuMemFree");
		break;
	case CU_ASYNC:
		cu_check(cuMemFreeAsync((CUdeviceptr)p, r->cu_stream), "cuMemFreeAsync");
		break;
#endif
	default:
		abort();
	}
}

/* The end of a run on a stream: its work is done. */
static void finish(struct run *r)
{
	switch (r->which) {
#ifdef WITH_CUDA
	case POOL_STREAM:
		if (accel_stream_synchronize(&r->dev, r->stream) != ACCEL_SUCCESS)
			die("accel_stream_synchronize");
		break;
	case CU_ASYNC:
		cu_check(cuStreamSynchronize(r->cu_stream), "cuStreamSynchronize");
		break;
#endif
	default:
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
	finish(r);
	return (now() - t0) * 1e9 / (4.0 * n);
}

static void print_stats(accel_pool_t pool, const char *which)
{
	struct accel_pool_stats s;

	if (accel_pool_get_stats(pool, &s) != ACCEL_SUCCESS)
		die("accel_pool_get_stats");
	printf("  %s: reserved %zu (peak %zu), allocated %zu (peak %zu), requested %zu (peak %zu)\n"
	       "        chunks %zu, blocks %zu, free blocks %zu, largest free %zu, device allocs %zu, frees %zu%s\n",
	       which, s.reserved, s.reserved_peak, s.allocated, s.allocated_peak,
	       s.requested, s.requested_peak, s.chunks, s.blocks, s.free_blocks,
	       s.largest_free, s.backend_allocs, s.backend_frees,
	       s.caching ? "" : " (ACCEL_POOL=off)");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static bool uses_pool(enum allocator w)
{
#ifdef WITH_CUDA
	if (w == POOL_STREAM)
		return true;
#endif
	return w == POOL;
}

static void open_allocator(struct run *r, enum allocator w)
{
	r->which = w;
	if (uses_pool(w) && accel_pool_create(&r->dev, &r->pool) != ACCEL_SUCCESS)
		die("accel_pool_create");
	if (uses_pool(w) && r->history &&
	    accel_pool_record_history(r->pool, r->history) != ACCEL_SUCCESS)
		die("accel_pool_record_history");
#ifdef WITH_CUDA
	if (w == POOL_STREAM && accel_stream_create(&r->dev, &r->stream) != ACCEL_SUCCESS)
		die("accel_stream_create");
#endif
}

/* Fragmentation: for the pool without a stream, 0 for the others. */
static double close_allocator(struct run *r, bool verbose)
{
	struct accel_pool_stats s;
	double frag = 0;

#ifdef WITH_CUDA
	/* the runs ended with a synchronization: all it holds is unused */
	if (r->which == CU_ASYNC)
		cu_check(cuMemPoolTrimTo(r->cu_pool, 0), "cuMemPoolTrimTo");
#endif
	if (!uses_pool(r->which))
		return 0;
	if (accel_pool_get_stats(r->pool, &s) != ACCEL_SUCCESS)
		die("accel_pool_get_stats");
	if (r->which == POOL)
		frag = (double)s.reserved_peak / s.requested_peak;
	if (verbose)
		print_stats(r->pool, r->which == POOL ? "pool" : "pool+stream");
	if (accel_pool_destroy(r->pool) != ACCEL_SUCCESS)
		die("accel_pool_destroy");
	if (r->stream && accel_stream_destroy(&r->dev, r->stream) != ACCEL_SUCCESS)
		die("accel_stream_destroy");
	r->stream = NULL;
	return frag;
}

/* The median of @reps timed runs of @w, after an untimed one. */
static double time_allocator(struct run *r, size_t n, size_t max,
			     uint64_t seed, int reps)
{
	double t[MAX_REPS];

	random_allocations(r, n, max, seed);
	for (int i = 0; i < reps; i++)
		t[i] = random_allocations(r, n, max, seed);
	qsort(t, reps, sizeof(t[0]), cmp_double);
	return (t[(reps - 1) / 2] + t[reps / 2]) / 2;	/* even: the middle two's mean */
}

static int width(enum allocator w)
{
	int len = (int)strlen(column[w]);

	return len > 10 ? len : 10;
}

static void bench(struct run *r, size_t n, size_t max, uint64_t seed,
		  int reps, bool pool_only, bool verbose)
{
	double ns[NUM_ALLOCATORS] = { 0 }, frag = 0;
	int ran = pool_only ? POOL + 1 : NUM_ALLOCATORS;	/* the first ones */

	r->ptrs = calloc(n, sizeof(*r->ptrs));
	r->sizes = calloc(n, sizeof(*r->sizes));
	if (!r->ptrs || !r->sizes) {
		fprintf(stderr, "pool_bench: out of memory\n");
		exit(1);
	}
	for (int w = 0; w < ran; w++) {
		open_allocator(r, w);
		ns[w] = time_allocator(r, n, max, seed, reps);
		frag += close_allocator(r, verbose);
	}
	printf("%8zu", n);
	for (int w = 0; w < NUM_ALLOCATORS; w++) {
		if (w < ran)
			printf(" %*.1f", width(w), ns[w]);
		else
			printf(" %*s", width(w), "-");
	}
	if (RAW < ran)
		printf(" %9.1fx %10.3f\n", ns[RAW] / ns[POOL], frag);
	else
		printf(" %10s %10.3f\n", "-", frag);
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

	while ((opt = getopt(argc, argv, "d:n:m:s:r:H:pv")) != -1) {
		switch (opt) {
		case 'd': device = optarg; break;
		case 'n': counts = optarg; break;
		case 'm': max = strtoull(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'r': reps = atoi(optarg); break;
		case 'H': r.history = strtoull(optarg, NULL, 0); break;
		case 'p': pool_only = true; break;
		case 'v': verbose = true; break;
		default:
			fprintf(stderr, "usage: %s [-d DEVICE] [-n N[,N...]] [-m MAX_BYTES] [-s SEED] [-r REPS] [-H EVENTS] [-p] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	if (!max || !seed || reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "pool_bench: -m and -s must not be 0, -r is 1 to %d\n",
			MAX_REPS);
		return 2;
	}
	if (device && accel_find_device(device, &r.dev.id) != ACCEL_SUCCESS)
		die(device);
	if (accel_get_device_name(&r.dev, &name) != ACCEL_SUCCESS)
		die("no device");
#ifdef WITH_CUDA
	cu_setup(&r, name);
#endif
	printf("random_allocations on %s: sizes 1..%zu bytes, seed %llu, median of %d\n",
	       name, max, (unsigned long long)seed, reps);
	printf("%8s", "blocks");
	for (int w = 0; w < NUM_ALLOCATORS; w++)
		printf(" %*s", width(w), column[w]);
	printf(" %10s %10s\n", "raw/pool", "frag");
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
#ifdef WITH_CUDA
	cu_teardown(&r);
#endif
	return 0;
}
