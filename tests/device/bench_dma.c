// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * DMA bandwidth of the device model through qtest, next to the host's
 * memcpy of the same size measured in the same run: one queue, four queues
 * at once (next to two threads of memcpy), and the device's part of a
 * 4 KiB copy from the doorbell to its MSI-X message.
 *
 * Usage: bench_dma [MiB] [repetitions]
 */
#include <pthread.h>
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

/*
 * Wait for queue @q to go idle as a driver waiting for the interrupt would:
 * every qtest command takes QEMU's big lock, so polling without a pause
 * would measure the contention for it instead of the device.
 */
static uint32_t wait_idle(struct accel_dev *d, unsigned q)
{
	const struct timespec pause = { .tv_nsec = 20000 };
	uint32_t st;

	while ((st = accel_qrd(d, q, ACCEL_Q_STATUS)) & ACCEL_Q_STATUS_BUSY &&
	       !(st & (ACCEL_Q_STATUS_ERROR | ACCEL_Q_STATUS_STALLED)))
		nanosleep(&pause, NULL);
	return st;
}

struct copy_job {
	char *dst;
	const char *src;
	size_t n;
};

static void *memcpy_job(void *arg)
{
	struct copy_job *job = arg;

	memcpy(job->dst, job->src, job->n);
	return NULL;
}

/* Two threads, each copying @n bytes of its own. */
static double time_memcpy_pair(struct copy_job *jobs)
{
	double t0 = bench_now();
	pthread_t th;

	if (pthread_create(&th, NULL, memcpy_job, &jobs[1])) {
		fprintf(stderr, "bench_dma: no thread\n");
		exit(1);
	}
	memcpy_job(&jobs[0]);
	pthread_join(th, NULL);
	return bench_now() - t0;
}

/* Time one descriptor from the doorbell to the queue going idle. */
static double time_desc(struct accel_dev *d, struct accel_desc desc)
{
	double t0 = bench_now();

	accel_submit(d, 0, &desc, 1);
	if (wait_idle(d, 0) != ACCEL_Q_STATUS_ENABLED) {
		fprintf(stderr, "bench_dma: descriptor failed\n");
		exit(1);
	}
	return bench_now() - t0;
}

/*
 * Four queues, each moving @n bytes of its own (two host to VRAM, two VRAM
 * to host), started together; next to two threads of memcpy.
 */
static void bench_queues_at_once(struct accel_dev *d,
				 char *a, char *b, uint64_t n, double *t,
				 int reps)
{
	struct copy_job jobs[2] = { { b, a, n / 2 }, { b + n / 2, a + n / 2, n / 2 } };
	struct accel_desc desc[4];
	unsigned q;
	int i;

	for (i = 0; i < reps; i++)
		t[i] = time_memcpy_pair(jobs);
	report("memcpy, 2 threads (total)", t, reps, n);

	for (q = 0; q < 4; q++) {
		uint64_t ram = TEST_RAM_DATA + q * n, vram = q * n;

		if (q)
			accel_queue_enable(d, q, 64);
		desc[q] = q < 2 ? desc_copy(ram, vram, n, ACCEL_DESC_DST_VRAM)
				: desc_copy(vram, ram, n, ACCEL_DESC_SRC_VRAM);
	}
	for (i = 0; i < reps; i++) {
		double t0 = bench_now();

		for (q = 0; q < 4; q++)
			accel_submit(d, q, &desc[q], 1);
		for (q = 0; q < 4; q++)
			if (wait_idle(d, q) != ACCEL_Q_STATUS_ENABLED) {
				fprintf(stderr, "bench_dma: descriptor failed\n");
				exit(1);
			}
		t[i] = bench_now() - t0;
	}
	report("DMA 4 queues at once (total)", t, reps, 4 * n);
}

/* Seconds in a "PID@SEC.USEC:event" line of QEMU's log trace backend. */
static double trace_time(const char *line)
{
	const char *at = strchr(line, '@');

	return at ? strtod(at + 1, NULL) : -1;
}

/*
 * The device's part of a 4 KiB host-to-VRAM copy: from the doorbell write
 * to its MSI-X message, as QEMU's own trace events time them (a qtest
 * round trip, 30-60 us here, is far longer than what it would measure).
 */
static void bench_small_copy(const char *args)
{
	const int rounds = 1000;
	char full[1200], line[512];
	struct accel_desc desc = desc_copy(TEST_RAM_DATA, 0, 4096,
					   ACCEL_DESC_DST_VRAM | ACCEL_DESC_IRQ);
	double *t = calloc(rounds, sizeof(double)), rung = -1;
	struct accel_dev d;
	struct qtest *qt;
	int i, n = 0;
	FILE *log;

	snprintf(full, sizeof(full), "%s -msg timestamp=on "
		 "-trace accel_doorbell -trace accel_irq_msix", args);
	qt = qtest_start(full);
	if (!t || !qt || accel_dev_init(qt, 0, &d))
		exit(1);
	accel_queue_enable(&d, 0, 64);
	for (i = 0; i < rounds; i++) {
		msi_clear(&d, 0);
		accel_submit(&d, 0, &desc, 1);
		while (!msi_fired(&d, 0))
			;
	}
	log = fopen(qt->logpath, "r");
	while (log && fgets(line, sizeof(line), log) && n < rounds) {
		if (strstr(line, ":accel_doorbell "))
			rung = trace_time(line);
		else if (strstr(line, ":accel_irq_msix ") && rung >= 0)
			t[n++] = trace_time(line) - rung;
	}
	if (log)
		fclose(log);
	qtest_quit(qt);
	if (n < rounds / 2) {
		fprintf(stderr, "bench_dma: %d of %d copies traced\n", n, rounds);
		exit(1);
	}
	qsort(t, n, sizeof(*t), bench_cmp);
	printf("4 KiB h2d, doorbell to MSI-X  median %6.1f us   p10 %6.1f us   p90 %6.1f us   (%d copies, QEMU's trace)\n",
	       t[n / 2] * 1e6, t[n / 10] * 1e6, t[n * 9 / 10] * 1e6, n);
	free(t);
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

	bench_queues_at_once(&d[0], a, b, n, t, reps);

	if (qtest_readl(qt, dst + n - 4) != 0x3c3c3c3c ||
	    qtest_readl(qt, d[1].vram + n - 4) != 0x3c3c3c3c) {
		fprintf(stderr, "bench_dma: copied data is wrong\n");
		return 1;
	}
	qtest_quit(qt);
	bench_small_copy(args);
	free(t);
	free(a);
	free(b);
	return 0;
}
