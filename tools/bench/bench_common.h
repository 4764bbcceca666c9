/* SPDX-License-Identifier: MIT */
/* Timing helpers shared by the benchmarks. */
#ifndef ACCEL_BENCH_COMMON_H
#define ACCEL_BENCH_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static const uint64_t bench_sizes[] = {
	4096, 65536, 1 << 20, 16 << 20, 64 << 20, 256 << 20,
};
#define BENCH_NSIZES (sizeof(bench_sizes) / sizeof(bench_sizes[0]))

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static inline double bench_median(double *t, int n)
{
	qsort(t, n, sizeof(*t), bench_cmp);
	return t[n / 2];
}

/* Repetitions for a size: enough for a stable median, bounded for big ones. */
static inline int bench_reps(uint64_t size)
{
	if (size >= (256 << 20))
		return 5;
	return size >= (64 << 20) ? 15 : size >= (1 << 20) ? 20 : 200;
}

#endif
