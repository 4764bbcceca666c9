// SPDX-License-Identifier: MIT
/*
 * memcpy bandwidth at the sizes of accel_bench: the physical limit for an
 * emulated DMA engine, measured natively on the machine that runs QEMU.
 */
#include <stdio.h>
#include <string.h>

#include "bench_common.h"

int main(void)
{
	uint64_t max = bench_sizes[BENCH_NSIZES - 1];
	char *a = malloc(max), *b = malloc(max);
	double t[200];
	unsigned int s;
	int i;

	if (!a || !b)
		return 1;
	memset(a, 1, max);
	memset(b, 2, max);
	printf("%-24s", "native memcpy");
	for (s = 0; s < BENCH_NSIZES; s++) {
		uint64_t n = bench_sizes[s];
		int reps = bench_reps(n);

		for (i = 0; i < reps; i++) {
			double t0 = bench_now();

			memcpy(b, a, n);
			t[i] = bench_now() - t0;
			a[i] ^= b[n - 1];	/* keep the copy observable */
		}
		printf(" %9.2f", n / bench_median(t, reps) / 1e9);
	}
	printf("   GB/s\n");
	return 0;
}
