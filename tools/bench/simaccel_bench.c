// SPDX-License-Identifier: MIT
/*
 * simaccel.ko benchmarks, run in the VM: copy bandwidth per direction and
 * size with HOST buffers and pageable user memory, the latency of a 4 KiB
 * synchronous copy next to a null ioctl (GET_INFO) measured in the same
 * run, what clearing VRAM costs: creating a buffer and having its first
 * job run, against creating one the device has already cleared, and how
 * long a 4 KiB job of one file waits while another process keeps the
 * device saturated, against the same job on an idle device (that alone
 * with --fairness; BENCH_VERBOSE=1 prints each of those waits, in ms, on
 * stderr).
 * Medians; GB/s is 10^9 bytes per second.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "../../uapi/simaccel_accel.h"

static int fd;
static uint32_t queue;

static void die(const char *what)
{
	fprintf(stderr, "simaccel_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct drm_simaccel_bo_create bo(uint64_t size, uint32_t kind)
{
	struct drm_simaccel_bo_create b = { .size = size, .kind = kind };

	if (ioctl(fd, DRM_IOCTL_SIMACCEL_BO_CREATE, &b))
		die("BO_CREATE");
	return b;
}

static void bo_close(uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	if (ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c))
		die("GEM_CLOSE");
}

static void run(uint32_t op, uint32_t flags, uint64_t dst, uint64_t src,
		uint64_t size)
{
	struct drm_simaccel_op o = { .op = op, .flags = flags, .dst = dst,
				     .src = src, .size = size };
	struct drm_simaccel_submit s = {
		.queue = queue, .flags = DRM_SIMACCEL_SUBMIT_WAIT,
		.ops = (uintptr_t)&o, .op_count = 1,
	};

	if (ioctl(fd, DRM_IOCTL_SIMACCEL_SUBMIT, &s))
		die("SUBMIT");
}

static void copy(uint64_t dst, uint64_t src, uint64_t size, uint32_t flags)
{
	run(DRM_SIMACCEL_OP_COPY, flags, dst, src, size);
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

static double median_of(void (*fn)(void *), void *arg, int n)
{
	double t[1000];
	int i;

	for (i = 0; i < n; i++) {
		double t0 = bench_now();

		fn(arg);
		t[i] = bench_now() - t0;
	}
	return bench_median(t, n);
}

static void null_ioctl(void *arg)
{
	struct drm_simaccel_info info = { 0 };

	if (ioctl(fd, DRM_IOCTL_SIMACCEL_GET_INFO, &info))
		die("GET_INFO");
}

struct pair { uint64_t dst, src; uint32_t flags; };

static void copy_4k(void *arg)
{
	struct pair *p = arg;

	copy(p->dst, p->src, 4096, p->flags);
}

static void latency(void)
{
	struct drm_simaccel_bo_create v = bo(4096, DRM_SIMACCEL_BO_VRAM);
	struct drm_simaccel_bo_create h = bo(4096, DRM_SIMACCEL_BO_HOST);
	static char buf[4096];
	struct pair pinned = { v.dev_addr, h.dev_addr, 0 };
	struct pair pageable = { v.dev_addr, (uintptr_t)buf, DRM_SIMACCEL_OP_SRC_USER };

	printf("null ioctl (GET_INFO):           median %7.1f us\n",
	       median_of(null_ioctl, NULL, 1000) * 1e6);
	printf("4 KiB sync copy, HOST to VRAM:   median %7.1f us\n",
	       median_of(copy_4k, &pinned, 1000) * 1e6);
	printf("4 KiB sync copy, pageable H2D:   median %7.1f us\n",
	       median_of(copy_4k, &pageable, 1000) * 1e6);
}

/*
 * A new buffer's first job waits for the device's clearing; the same job
 * on a buffer created long before does not. The difference is the clearing.
 */
static void clearing(uint64_t size, uint64_t host_addr)
{
	double fresh[20], warm[20];
	int i;

	for (i = 0; i < 20; i++) {
		double t0 = bench_now();
		struct drm_simaccel_bo_create v = bo(size, DRM_SIMACCEL_BO_VRAM);

		copy(v.dev_addr, host_addr, 4096, 0);
		fresh[i] = bench_now() - t0;
		t0 = bench_now();
		copy(v.dev_addr, host_addr, 4096, 0);
		warm[i] = bench_now() - t0;
		bo_close(v.handle);
	}
	printf("create %4llu MiB VRAM + first 4 KiB copy: median %8.1f us; "
	       "the copy alone %6.1f us\n", (unsigned long long)(size >> 20),
	       bench_median(fresh, 20) * 1e6, bench_median(warm, 20) * 1e6);
}

/*
 * Another process's load: 256 MiB VRAM copies on four queues, with about
 * 32 of them queued at any time, until it is killed. It writes to @ready
 * once its buffers' clearing is done, which runs ahead of every user's work.
 */
static void saturate(int ready)
{
	struct drm_simaccel_queue_create qc[4] = { 0 };
	struct drm_simaccel_bo_create a, b;
	uint64_t n;
	int q;

	fd = open("/dev/accel/accel0", O_RDWR);
	if (fd < 0)
		die("open /dev/accel/accel0");
	for (q = 0; q < 4; q++)
		if (ioctl(fd, DRM_IOCTL_SIMACCEL_QUEUE_CREATE, &qc[q]))
			die("QUEUE_CREATE");
	a = bo(256 << 20, DRM_SIMACCEL_BO_VRAM);
	b = bo(256 << 20, DRM_SIMACCEL_BO_VRAM);
	queue = qc[0].handle;
	copy(b.dev_addr, a.dev_addr, 4096, 0);
	if (write(ready, "", 1) != 1)
		die("write");
	for (n = 0;; n++) {
		struct drm_simaccel_op o = { .op = DRM_SIMACCEL_OP_COPY,
					     .dst = b.dev_addr, .src = a.dev_addr,
					     .size = 256 << 20 };
		struct drm_simaccel_submit s = {
			.queue = qc[n % 4].handle, .ops = (uintptr_t)&o,
			.op_count = 1,
			.flags = n % 32 == 31 ? DRM_SIMACCEL_SUBMIT_WAIT : 0,
		};

		if (ioctl(fd, DRM_IOCTL_SIMACCEL_SUBMIT, &s))
			die("SUBMIT (load)");
	}
}

static void fill_4k(void *arg)
{
	run(DRM_SIMACCEL_OP_FILL, 0, *(uint64_t *)arg, 0, 4096);
}

/* A 4 KiB job's wait, idle and while another process saturates the device. */
static void fairness(void)
{
	struct drm_simaccel_bo_create v = bo(4096, DRM_SIMACCEL_BO_VRAM);
	double t[40], worst = 0;
	int ready[2], i;
	pid_t load;
	char c;

	printf("4 KiB fill, idle device:         median %9.1f us\n",
	       median_of(fill_4k, &v.dev_addr, 200) * 1e6);
	fflush(stdout);
	if (pipe(ready))
		die("pipe");
	load = fork();
	if (load < 0)
		die("fork");
	if (!load) {
		saturate(ready[1]);
		_exit(0);
	}
	if (read(ready[0], &c, 1) != 1)
		die("read");
	usleep(500000);
	for (i = 0; i < 40; i++) {
		double t0 = bench_now();

		fill_4k(&v.dev_addr);
		t[i] = bench_now() - t0;
		worst = t[i] > worst ? t[i] : worst;
		usleep(25000);
	}
	for (i = 0; getenv("BENCH_VERBOSE") && i < 40; i++)
		fprintf(stderr, "%.1f ", t[i] * 1e3);
	kill(load, SIGKILL);
	waitpid(load, NULL, 0);
	printf("4 KiB fill, another process saturating: median %9.1f us, worst %9.1f us (40 jobs)\n",
	       bench_median(t, 40) * 1e6, worst * 1e6);
	bo_close(v.handle);
}

int main(int argc, char **argv)
{
	uint64_t max = bench_sizes[BENCH_NSIZES - 1];
	struct drm_simaccel_queue_create qc = { 0 };
	struct drm_simaccel_bo_create v0, v1, h;
	char *user;
	unsigned int s;

	fd = open("/dev/accel/accel0", O_RDWR);
	if (fd < 0)
		die("open /dev/accel/accel0");
	if (ioctl(fd, DRM_IOCTL_SIMACCEL_QUEUE_CREATE, &qc))
		die("QUEUE_CREATE");
	queue = qc.handle;
	if (argc > 1 && !strcmp(argv[1], "--fairness")) {
		fairness();
		return 0;
	}
	v0 = bo(max, DRM_SIMACCEL_BO_VRAM);
	v1 = bo(max, DRM_SIMACCEL_BO_VRAM);
	h = bo(max, DRM_SIMACCEL_BO_HOST);
	user = mmap(NULL, max, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (user == MAP_FAILED)
		die("mmap");
	memset(user, 3, max);

	printf("%-24s", "size");
	for (s = 0; s < BENCH_NSIZES; s++)
		printf(" %8lluK", (unsigned long long)bench_sizes[s] >> 10);
	printf("\n");
	row("H2D HOST buffer", v0.dev_addr, h.dev_addr, 0);
	row("H2D pageable", v0.dev_addr, (uintptr_t)user, DRM_SIMACCEL_OP_SRC_USER);
	row("D2H HOST buffer", h.dev_addr, v0.dev_addr, 0);
	row("D2H pageable", (uintptr_t)user, v0.dev_addr, DRM_SIMACCEL_OP_DST_USER);
	row("D2D", v1.dev_addr, v0.dev_addr, 0);
	latency();
	bo_close(v0.handle);
	bo_close(v1.handle);
	clearing(1 << 20, h.dev_addr);
	clearing(64 << 20, h.dev_addr);
	clearing(256 << 20, h.dev_addr);
	fairness();
	return 0;
}
