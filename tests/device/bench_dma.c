// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * DMA bandwidth of the device model through qtest, next to the host's
 * memcpy of the same size measured in the same run.
 *
 * Usage: bench_dma [MiB] [repetitions]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel_dev.h"
#include "../../tools/bench/bench_common.h"

static void report(const char *what, double *t, int reps, uint64_t bytes)
{
	qsort(t, reps, sizeof(*t), bench_cmp);
	printf("%-28s best %8.2f ms %7.2f GB/s   median %8.2f ms %7.2f GB/s\n",
	       what, t[0] * 1e3, bytes / t[0] / 1e9,
	       t[reps / 2] * 1e3, bytes / t[reps / 2] / 1e9);
}

/* Time one descriptor from the doorbell to the queue going idle. */
static double time_desc(struct accel_dev *d, struct accel_desc desc)
{
	double t0 = bench_now();

	accel_submit(d, 0, &desc, 1);
	if (accel_wait(d, 0, 0) != ACCEL_Q_STATUS_ENABLED) {
		fprintf(stderr, "bench_dma: descriptor failed\n");
		exit(1);
	}
	return bench_now() - t0;
}

int main(int argc, char **argv)
{
	uint64_t n = (argc > 1 ? strtoull(argv[1], NULL, 0) : 64) << 20;
	int reps = argc > 2 ? atoi(argv[2]) : 7, i;
	uint64_t src = TEST_RAM_DATA, dst = TEST_RAM_DATA + n;
	double *t = calloc(reps, sizeof(double));
	char *a = malloc(n), *b = malloc(n);
	struct accel_dev d[2];
	struct qtest *qt;
	char args[1024];
	size_t off;

	if (!t || !a || !b || reps < 1 || dst + n > TEST_RAM_END) {
		fprintf(stderr, "bench_dma: bad size or out of memory\n");
		return 2;
	}
	memset(a, 1, n);
	memset(b, 2, n);
	for (i = 0; i < reps; i++) {
		double t0 = bench_now();

		memcpy(b, a, n);
		t[i] = bench_now() - t0;
		a[i] = b[n - 1 - i];	/* keep the copies observable */
	}
	report("host memcpy", t, reps, n);

	off = accel_device_args(args, sizeof(args), 0, "vram-size=512M");
	accel_device_args(args + off, sizeof(args) - off, 1, "vram-size=512M");
	qt = qtest_start(args);
	if (!qt || accel_dev_init(qt, 0, &d[0]) || accel_dev_init(qt, 1, &d[1]))
		return 1;
	accel_queue_enable(&d[0], 0, 64);
	qtest_memset(qt, src, 0x3c, n);

	for (i = 0; i < reps; i++)
		t[i] = time_desc(&d[0], desc_copy(src, 0, n, ACCEL_DESC_DST_VRAM));
	report("DMA host->VRAM (h2d)", t, reps, n);
	for (i = 0; i < reps; i++)
		t[i] = time_desc(&d[0], desc_copy(0, dst, n, ACCEL_DESC_SRC_VRAM));
	report("DMA VRAM->host (d2h)", t, reps, n);
	for (i = 0; i < reps; i++)
		t[i] = time_desc(&d[0], desc_copy(0, n, n, ACCEL_DESC_SRC_VRAM |
						  ACCEL_DESC_DST_VRAM));
	report("DMA VRAM->VRAM (d2d)", t, reps, n);
	for (i = 0; i < reps; i++)
		t[i] = time_desc(&d[0], desc_copy(0, d[1].vram, n,
						  ACCEL_DESC_SRC_VRAM));
	report("DMA VRAM->peer BAR (p2p)", t, reps, n);
	for (i = 0; i < reps; i++)
		t[i] = time_desc(&d[0], desc_fill(0, 0x11, n, ACCEL_DESC_DST_VRAM));
	report("DMA fill VRAM", t, reps, n);

	if (qtest_readl(qt, dst + n - 4) != 0x3c3c3c3c ||
	    qtest_readl(qt, d[1].vram + n - 4) != 0x3c3c3c3c) {
		fprintf(stderr, "bench_dma: copied data is wrong\n");
		return 1;
	}
	qtest_quit(qt);
	free(t);
	free(a);
	free(b);
	return 0;
}
