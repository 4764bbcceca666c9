// SPDX-License-Identifier: MIT
/*
 * accel.ko benchmarks, run in the VM: copy bandwidth per direction and
 * size with pinned (ACCEL_MEM_HOST) and pageable host memory, the latency
 * of a 4 KiB synchronous copy, and the latency of allocate + free.
 * Medians; GB/s is 10^9 bytes per second.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench_common.h"
#include "../../uapi/accel.h"

static int fd;

static void die(const char *what)
{
	fprintf(stderr, "accel_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct accel_alloc alloc(uint64_t size, uint32_t kind)
{
	struct accel_alloc a = { .size = size, .kind = kind };

	if (ioctl(fd, ACCEL_IOCTL_ALLOC, &a))
		die("ALLOC");
	return a;
}

static void copy(uint64_t dst, uint64_t src, uint64_t size, uint32_t flags)
{
	struct accel_copy c = { .dst = dst, .src = src, .size = size,
				.flags = flags };

	if (ioctl(fd, ACCEL_IOCTL_COPY, &c))
		die("COPY");
}

/* Median seconds of one copy of @n bytes. */
static double time_copy(uint64_t dst, uint64_t src, uint64_t n, uint32_t flags)
{
	int reps = bench_reps(n), i;
	double t[200];

	copy(dst, src, n, flags);	/* warm up */
	for (i = 0; i < reps; i++) {
		double t0 = bench_now();

		copy(dst, src, n, flags);
		t[i] = bench_now() - t0;
	}
	return bench_median(t, reps);
}

static void row(const char *name, uint64_t dst, uint64_t src, uint32_t flags)
{
	unsigned int s;

	printf("%-24s", name);
	for (s = 0; s < BENCH_NSIZES; s++) {
		uint64_t n = bench_sizes[s];

		printf(" %9.2f", n / time_copy(dst, src, n, flags) / 1e9);
		fflush(stdout);
	}
	printf("   GB/s\n");
}

static void latency(void)
{
	struct accel_alloc v = alloc(4096, ACCEL_MEM_DEVICE);
	struct accel_alloc h = alloc(4096, ACCEL_MEM_HOST);
	static char buf[4096];
	double t[1000];
	int i;

	for (i = 0; i < 1000; i++) {
		double t0 = bench_now();

		copy(v.dev_addr, h.dev_addr, 4096, 0);
		t[i] = bench_now() - t0;
	}
	printf("4 KiB sync copy, pinned H2D:   median %7.1f us\n",
	       bench_median(t, 1000) * 1e6);
	for (i = 0; i < 1000; i++) {
		double t0 = bench_now();

		copy(v.dev_addr, (uintptr_t)buf, 4096, ACCEL_COPY_SRC_USER);
		t[i] = bench_now() - t0;
	}
	printf("4 KiB sync copy, pageable H2D: median %7.1f us\n",
	       bench_median(t, 1000) * 1e6);
	for (i = 0; i < 1000; i++) {
		double t0 = bench_now();
		struct accel_alloc a = alloc(1 << 20, ACCEL_MEM_DEVICE);
		struct accel_free f = { .handle = a.handle };

		if (ioctl(fd, ACCEL_IOCTL_FREE, &f))
			die("FREE");
		t[i] = bench_now() - t0;
	}
	printf("allocate + free 1 MiB VRAM:    median %7.1f us\n",
	       bench_median(t, 1000) * 1e6);
}

int main(void)
{
	uint64_t max = bench_sizes[BENCH_NSIZES - 1];
	struct accel_alloc v0, v1, h;
	char *user;
	unsigned int s;

	fd = open("/dev/accel0", O_RDWR);
	if (fd < 0)
		die("open /dev/accel0");
	v0 = alloc(max, ACCEL_MEM_DEVICE);
	v1 = alloc(max, ACCEL_MEM_DEVICE);
	h = alloc(max, ACCEL_MEM_HOST);
	user = mmap(NULL, max, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (user == MAP_FAILED)
		die("mmap");
	memset(user, 3, max);

	printf("%-24s", "size");
	for (s = 0; s < BENCH_NSIZES; s++)
		printf(" %8lluK", (unsigned long long)bench_sizes[s] >> 10);
	printf("\n");
	row("H2D pinned", v0.dev_addr, h.dev_addr, 0);
	row("H2D pageable", v0.dev_addr, (uintptr_t)user, ACCEL_COPY_SRC_USER);
	row("D2H pinned", h.dev_addr, v0.dev_addr, 0);
	row("D2H pageable", (uintptr_t)user, v0.dev_addr, ACCEL_COPY_DST_USER);
	row("D2D", v1.dev_addr, v0.dev_addr, 0);
	latency();
	return 0;
}
