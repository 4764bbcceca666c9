// SPDX-License-Identifier: MIT
/*
 * ioctl_fuzz: hostile user space for accel.ko, run inside the VM.
 *
 * Worker processes run random sequences of every ioctl, mmap, munmap,
 * poll, dup, close, fork and kill, with random and boundary arguments,
 * and sometimes make the hardware fail (debugfs fault_inject). Everything
 * derives from one seed, printed first; --seed repeats a run. At the end,
 * with every process gone, the device memory in use must be back at its
 * baseline. A kernel report, a hang or a leak fails the run (the VM runner
 * watches the kernel log and the time).
 *
 *   ioctl_fuzz [--seed N] [--ops N] [--procs N] [--kernel-faults]
 *
 * --kernel-faults has the workers ask for the kernel's fault injection
 * (/proc/self/make-it-fail), once the devices are found and measured.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../uapi/accel.h"

#define MAX_DEVS 8
#define MAX_FDS 6
#define MAX_ALLOCS 48
#define MAX_QUEUES 8
#define MAX_FENCES 32
#define MAX_MAPS 16
#define SCRATCH (4u << 20)

/* ------------------------------------------------------------------ */
/* Randomness */

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static bool chance(unsigned int percent)
{
	return below(100) < percent;
}

/* A size: mostly small, often a boundary, sometimes anything. */
static uint64_t any_size(uint64_t limit)
{
	static const uint64_t edges[] = { 0, 1, 255, 256, 257, 4095, 4096,
					  4097, 65536, 1u << 20, 64u << 20 };

	switch (below(6)) {
	case 0:
		return edges[below(sizeof(edges) / sizeof(edges[0]))];
	case 1:
		return limit + below(3) - 1;
	case 2:
		return rnd() >> below(64);
	case 3:
		return UINT64_MAX - below(4096);
	default:
		return 1 + below(1u << (4 + below(16)));
	}
}

/* ------------------------------------------------------------------ */
/* What a worker has */

struct alloc {
	uint32_t handle;
	uint64_t dev_addr, size, mmap_offset;
};

struct map {
	void *addr;
	size_t len;
};

struct file {
	int fd;			/* -1: not open */
	int dev;
	struct alloc allocs[MAX_ALLOCS];
	int nallocs;
	uint32_t queues[MAX_QUEUES];
	int nqueues;
	uint64_t fences[MAX_FENCES];
	int nfences;
};

static char dev_paths[MAX_DEVS][32];
static uint64_t vram_size[MAX_DEVS];
static int ndevs;

static struct file files[MAX_FDS];
static struct map maps[MAX_MAPS];
static int nmaps;
static uint8_t *scratch;	/* user memory copies may use */
static uint8_t *forbidden;	/* PROT_NONE: user pointers that fault */

/* counters, per worker, reported through the exit status and totals */
static unsigned long ops_done, ok_count, err_count, faults_injected;

static void counted(int ret)
{
	if (ret == 0)
		ok_count++;
	else
		err_count++;
}

static struct file *some_file(void)
{
	struct file *f = &files[below(MAX_FDS)];

	return f->fd >= 0 ? f : NULL;
}

/* An fd for the kernel: ours, another open one, or nonsense. */
static int some_fd(void)
{
	struct file *f = some_file();

	if (f && chance(85))
		return f->fd;
	return chance(50) ? -1 : (int)below(64);
}

/* A device address: inside an allocation, near one, or anywhere. */
static uint64_t some_dev_addr(struct file *f, uint64_t *room)
{
	*room = 0;
	if (f->nallocs && chance(80)) {
		struct alloc *a = &f->allocs[below((uint64_t)f->nallocs)];
		uint64_t off = below(a->size + 2);

		*room = a->size > off ? a->size - off : 0;
		return a->dev_addr + off - (chance(5) ? 1 : 0);
	}
	switch (below(4)) {
	case 0:
		return ACCEL_VRAM_BASE + below(vram_size[f->dev] + 4096);
	case 1:
		return ACCEL_HOST_BASE + below(1ull << 32);
	case 2:
		return 0;
	default:
		return rnd();
	}
}

/* A user pointer: scratch memory, a mapping, or one that must fault. */
static uint64_t some_user_ptr(uint64_t *room)
{
	*room = 0;
	switch (below(8)) {
	case 0:
		return 0;
	case 1:
		return (uintptr_t)forbidden + below(4096);
	case 2:
		return 0xffff888000000000ull + below(1u << 20);	/* kernel */
	case 3:
		return 0x8000000000000000ull;			/* non-canonical */
	case 4:
		if (nmaps) {
			struct map *m = &maps[below((uint64_t)nmaps)];

			*room = m->len;
			return (uintptr_t)m->addr;
		}
		/* fall through */
	default: {
		uint64_t off = below(SCRATCH);

		*room = SCRATCH - off;
		return (uintptr_t)scratch + off;
	}
	}
}

/* A size that mostly fits @room. */
static uint64_t fitting(uint64_t room, uint64_t limit)
{
	if (room && chance(80))
		return below(room < (8u << 20) ? room + 1 : (8u << 20));
	return any_size(limit);
}

/* ------------------------------------------------------------------ */
/* The operations */

static void op_open(void)
{
	struct file *f = &files[below(MAX_FDS)];

	if (f->fd >= 0)
		return;
	memset(f, 0, sizeof(*f));
	f->dev = (int)below((uint64_t)ndevs);
	f->fd = open(dev_paths[f->dev], O_RDWR);
	counted(f->fd < 0);
}

static void op_close(void)
{
	struct file *f = some_file();

	if (!f)
		return;
	if (chance(30)) {	/* close a dup first: the context stays */
		int d = dup(f->fd);

		if (d >= 0) {
			close(f->fd);
			f->fd = d;
			return;
		}
	}
	close(f->fd);
	f->fd = -1;
}

static void op_info(struct file *f)
{
	struct accel_info info;

	memset(&info, 0, sizeof(info));
	if (chance(10))
		info.flags = (uint32_t)rnd();
	counted(ioctl(f->fd, ACCEL_IOCTL_GET_INFO, &info));
}

static void op_alloc(struct file *f)
{
	struct accel_alloc a = { 0 };

	a.size = chance(70) ? 1 + below(1u << (8 + below(14))) :
			      any_size(vram_size[f->dev]);
	a.kind = chance(90) ? 1 + (uint32_t)below(3) : (uint32_t)rnd();
	a.align = chance(70) ? 0 : (chance(70) ? 1ull << below(32) : rnd());
	if (chance(5))
		a.flags = (uint32_t)rnd();
	if (chance(3))
		a.pad = 1;
	if (ioctl(f->fd, ACCEL_IOCTL_ALLOC, &a)) {
		err_count++;
		return;
	}
	ok_count++;
	if (f->nallocs == MAX_ALLOCS) {
		struct accel_free fr = { .handle = a.handle };

		counted(ioctl(f->fd, ACCEL_IOCTL_FREE, &fr));
		return;
	}
	f->allocs[f->nallocs++] = (struct alloc){ a.handle, a.dev_addr, a.size,
						  a.mmap_offset };
}

static void forget_alloc(struct file *f, int i)
{
	f->allocs[i] = f->allocs[--f->nallocs];
}

static void op_free(struct file *f)
{
	struct accel_free fr = { 0 };
	int i = -1;

	if (f->nallocs && chance(85)) {
		i = (int)below((uint64_t)f->nallocs);
		fr.handle = f->allocs[i].handle;
	} else {
		fr.handle = chance(50) ? 0 : (uint32_t)rnd();
	}
	if (chance(3))
		fr.pad = 1;
	counted(ioctl(f->fd, ACCEL_IOCTL_FREE, &fr));
	if (i >= 0 && chance(90))
		forget_alloc(f, i);	/* sometimes keep it: a double free later */
}

static void op_userptr(struct file *f)
{
	struct accel_userptr u = { 0 };
	uint64_t room;

	u.user_addr = some_user_ptr(&room);
	u.size = fitting(room, SCRATCH);
	u.flags = chance(90) ? (uint32_t)below(2) : (uint32_t)rnd();
	if (ioctl(f->fd, ACCEL_IOCTL_USERPTR, &u)) {
		err_count++;
		return;
	}
	ok_count++;
	if (f->nallocs < MAX_ALLOCS)
		f->allocs[f->nallocs++] = (struct alloc){ u.handle, u.dev_addr,
							  u.size, 0 };
}

/* The two sides of a copy, into @c-like fields. */
static void copy_sides(struct file *f, __u64 *dst, __u64 *src, __u64 *size,
		       __u32 *flags, __s32 *peer_fd)
{
	uint64_t droom, sroom;

	*flags = 0;
	if (chance(30)) {
		*dst = some_user_ptr(&droom);
		*flags |= ACCEL_COPY_DST_USER;
	} else {
		*dst = some_dev_addr(f, &droom);
	}
	if (chance(30)) {
		*src = some_user_ptr(&sroom);
		*flags |= ACCEL_COPY_SRC_USER;
	} else {
		*src = some_dev_addr(f, &sroom);
	}
	*peer_fd = -1;
	if (chance(15)) {
		struct file *p = some_file();

		*flags |= chance(50) ? ACCEL_COPY_DST_PEER : ACCEL_COPY_SRC_PEER;
		*peer_fd = p ? p->fd : some_fd();
		if (p && p->nallocs) {
			struct alloc *a = &p->allocs[below((uint64_t)p->nallocs)];

			if (*flags & ACCEL_COPY_DST_PEER) {
				*dst = a->dev_addr;
				droom = a->size;
			} else {
				*src = a->dev_addr;
				sroom = a->size;
			}
		}
	}
	if (chance(3))
		*flags = (uint32_t)rnd();
	*size = fitting(droom < sroom ? droom : sroom, vram_size[f->dev]);
}

static void op_copy(struct file *f)
{
	struct accel_copy c = { 0 };

	copy_sides(f, &c.dst, &c.src, &c.size, &c.flags, &c.peer_fd);
	if (chance(3))
		c.pad2 = 1;
	counted(ioctl(f->fd, ACCEL_IOCTL_COPY, &c));
}

static void op_memset(struct file *f)
{
	struct accel_memset m = { 0 };
	uint64_t room;

	m.dst = some_dev_addr(f, &room);
	m.size = fitting(room, vram_size[f->dev]);
	m.value = chance(95) ? (uint32_t)below(256) : (uint32_t)rnd();
	if (chance(3))
		m.flags = 1;
	counted(ioctl(f->fd, ACCEL_IOCTL_MEMSET, &m));
}

static void op_stats(struct file *f)
{
	struct accel_mem_stats s = { 0 };

	if (chance(5))
		s.flags = 1;
	counted(ioctl(f->fd, ACCEL_IOCTL_MEM_STATS, &s));
}

static void op_queue(struct file *f)
{
	if (f->nqueues && chance(40)) {
		int i = (int)below((uint64_t)f->nqueues);
		struct accel_queue_destroy d = { .handle = f->queues[i] };

		counted(ioctl(f->fd, ACCEL_IOCTL_QUEUE_DESTROY, &d));
		f->queues[i] = f->queues[--f->nqueues];
		return;
	}
	{
		struct accel_queue_create q = { 0 };

		if (chance(5))
			q.flags = 1;
		if (ioctl(f->fd, ACCEL_IOCTL_QUEUE_CREATE, &q)) {
			err_count++;
			return;
		}
		ok_count++;
		if (f->nqueues < MAX_QUEUES)
			f->queues[f->nqueues++] = q.handle;
	}
}

static uint64_t some_fence(struct file *f)
{
	if (f->nfences && chance(80))
		return f->fences[below((uint64_t)f->nfences)];
	return chance(50) ? 0 : rnd();
}

static void op_submit(struct file *f)
{
	struct accel_submit s = { 0 };

	s.queue = f->nqueues && chance(90) ?
		  f->queues[below((uint64_t)f->nqueues)] : (uint32_t)rnd();
	s.op = chance(95) ? 1 + (uint32_t)below(3) : (uint32_t)rnd();
	copy_sides(f, &s.dst, &s.src, &s.size, &s.flags, &s.peer_fd);
	if (s.op != ACCEL_SUBMIT_COPY && chance(90))
		s.flags = 0;
	if (s.op == ACCEL_SUBMIT_MEMSET)
		s.value = (uint32_t)below(256);
	s.wait_fence = chance(40) ? some_fence(f) : 0;
	if (ioctl(f->fd, ACCEL_IOCTL_SUBMIT, &s)) {
		err_count++;
		return;
	}
	ok_count++;
	f->fences[f->nfences < MAX_FENCES ? f->nfences++ : (int)below(MAX_FENCES)] =
		s.fence;
}

static void op_wait(struct file *f)
{
	struct accel_wait w = { 0 };

	w.fence = some_fence(f);
	w.timeout_ns = chance(50) ? 0 : (int64_t)below(5000000);
	if (chance(3))
		w.flags = 1;
	counted(ioctl(f->fd, ACCEL_IOCTL_WAIT, &w));
}

/* Any ioctl number of the type, any size, any bytes. */
static void op_garbage(struct file *f)
{
	uint8_t buf[512];
	unsigned long nr;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	nr = _IOC(below(4), chance(90) ? 'A' : below(256), below(16),
		  below(sizeof(buf)));
	counted(ioctl(f->fd, nr, chance(95) ? (void *)buf : (void *)forbidden));
}

static void op_mmap(struct file *f)
{
	uint64_t off, len, page;
	void *p;
	int prot;

	if (nmaps && chance(40)) {
		int i = (int)below((uint64_t)nmaps);

		munmap(maps[i].addr, maps[i].len);
		maps[i] = maps[--nmaps];
		return;
	}
	if (f->nallocs && chance(85)) {
		struct alloc *a = &f->allocs[below((uint64_t)f->nallocs)];

		off = a->mmap_offset + 4096 * below(a->size / 4096 + 2);
		len = chance(80) ? 4096 * (1 + below(a->size / 4096 + 1)) :
				   any_size(a->size);
	} else {
		off = rnd() & ~4095ull;
		len = any_size(1u << 20);
	}
	if (!len || len > (64u << 20))
		len = 4096;
	prot = chance(80) ? PROT_READ | PROT_WRITE : PROT_READ;
	p = mmap(NULL, len, prot, chance(90) ? MAP_SHARED : MAP_PRIVATE, f->fd,
		 (off_t)off);
	if (p == MAP_FAILED) {
		err_count++;
		return;
	}
	ok_count++;
	if (nmaps == MAX_MAPS) {
		munmap(p, len);
		return;
	}
	maps[nmaps++] = (struct map){ p, len };
	/* fault a page in, the first or any */
	page = len >= 8192 && chance(50) ? below(len / 4096) * 4096 : 0;
	if (prot & PROT_WRITE && chance(50))
		((volatile uint8_t *)p)[page] = (uint8_t)rnd();
	else
		((volatile uint8_t *)p)[page];
}

static void op_poll(struct file *f)
{
	struct pollfd p = { .fd = f->fd, .events = POLLIN };

	counted(poll(&p, 1, 0) < 0);
}

/* Make a hardware queue fail or stall for a while (the VM is root). */
static void op_fault(struct file *f)
{
	char path[96], value[32];
	int fd;

	snprintf(path, sizeof(path),
		 "/sys/kernel/debug/accel/accel%d/fault_inject_q%u", f->dev,
		 (unsigned int)below(4));
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return;
	snprintf(value, sizeof(value), "%s", chance(80) ? "1" : "0x10000");
	if (write(fd, value, strlen(value)) > 0)
		faults_injected++;
	close(fd);
}

/* Leave no fault armed for whatever runs next. */
static void disarm_faults(void)
{
	char path[96];

	for (int d = 0; d < ndevs; d++) {
		for (int q = 0; q < 16; q++) {
			int fd;

			snprintf(path, sizeof(path),
				 "/sys/kernel/debug/accel/accel%d/fault_inject_q%d",
				 d, q);
			fd = open(path, O_WRONLY);
			if (fd < 0)
				continue;
			if (write(fd, "0", 1) != 1)
				perror(path);
			close(fd);
		}
	}
}

static void run_ops(unsigned long n);

/* A child shares the files (and so the contexts), acts, and dies. */
static void op_fork(void)
{
	pid_t pid = fork();

	if (pid < 0)
		return;
	if (pid == 0) {
		rng ^= (uint64_t)getpid() << 32;
		nmaps = 0;	/* the child's mappings are its own copies */
		run_ops(below(40));
		_exit(0);
	}
	if (chance(50)) {
		usleep((useconds_t)below(3000));
		kill(pid, SIGKILL);
	}
	waitpid(pid, NULL, 0);
}

static void (*const file_ops[])(struct file *) = {
	op_info, op_alloc, op_alloc, op_alloc, op_free, op_free, op_userptr,
	op_copy, op_copy, op_copy, op_memset, op_stats, op_queue, op_submit,
	op_submit, op_submit, op_wait, op_wait, op_garbage, op_mmap, op_poll,
};

static void run_ops(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		struct file *f = some_file();

		ops_done++;
		if (!f || chance(2)) {
			op_open();
			continue;
		}
		if (chance(1)) {
			op_close();
		} else if (chance(1)) {
			op_fork();
		} else if (chance(1)) {
			op_fault(f);
		} else {
			file_ops[below(sizeof(file_ops) / sizeof(file_ops[0]))](f);
		}
	}
}

/* ------------------------------------------------------------------ */
/* The campaign */

struct totals {
	unsigned long ops, ok, err, faults;
};

static bool kernel_faults;

static void worker(uint64_t seed, unsigned long n, int report_fd)
{
	struct totals t;

	if (kernel_faults) {
		int fd = open("/proc/self/make-it-fail", O_WRONLY);

		if (fd < 0 || write(fd, "1", 1) != 1)
			_exit(2);
		close(fd);
	}
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	for (int i = 0; i < MAX_FDS; i++)
		files[i].fd = -1;
	scratch = mmap(NULL, SCRATCH, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	forbidden = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	if (scratch == MAP_FAILED || forbidden == MAP_FAILED)
		_exit(2);
	run_ops(n);
	t = (struct totals){ ops_done, ok_count, err_count, faults_injected };
	if (write(report_fd, &t, sizeof(t)) != sizeof(t))
		_exit(2);
	_exit(0);
}

static void find_devices(void)
{
	glob_t g;

	if (glob("/dev/accel[0-9]*", 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc && ndevs < MAX_DEVS; i++) {
		struct accel_info info = { 0 };
		int fd = open(g.gl_pathv[i], O_RDWR);

		if (fd < 0 || ioctl(fd, ACCEL_IOCTL_GET_INFO, &info)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		snprintf(dev_paths[ndevs], sizeof(dev_paths[0]), "%s",
			 g.gl_pathv[i]);
		vram_size[ndevs++] = info.vram_size;
		close(fd);
	}
	globfree(&g);
}

/* VRAM and pinned host memory in use on device @d, by everyone. */
static int usage(int d, uint64_t *vram, uint64_t *pinned)
{
	struct accel_mem_stats s = { 0 };
	int fd = open(dev_paths[d], O_RDWR);
	int ret;

	if (fd < 0)
		return -1;
	ret = ioctl(fd, ACCEL_IOCTL_MEM_STATS, &s);
	close(fd);
	*vram = s.vram_used;
	*pinned = s.host_pinned;
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, 'n' },
		{ "procs", required_argument, NULL, 'p' },
		{ "kernel-faults", no_argument, NULL, 'k' },
		{ 0 }
	};
	uint64_t seed = (uint64_t)time(NULL), base_vram[MAX_DEVS], base_pinned[MAX_DEVS];
	unsigned long ops = 20000, procs = 4, respawned = 0;
	struct totals sum = { 0 };
	int c, pipefd[2], leaks = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 's')
			seed = strtoull(optarg, NULL, 0);
		else if (c == 'n')
			ops = strtoul(optarg, NULL, 0);
		else if (c == 'p')
			procs = strtoul(optarg, NULL, 0);
		else if (c == 'k')
			kernel_faults = true;
		else
			return 64;
	}
	find_devices();
	if (!ndevs) {
		printf("ioctl_fuzz: no /dev/accelN\n");
		return 1;
	}
	printf("ioctl_fuzz: seed %llu, %lu operations in %lu processes on %d devices (reproduce with --seed %llu --ops %lu --procs %lu)\n",
	       (unsigned long long)seed, ops, procs, ndevs,
	       (unsigned long long)seed, ops, procs);
	fflush(stdout);
	for (int d = 0; d < ndevs; d++)
		usage(d, &base_vram[d], &base_pinned[d]);
	if (pipe(pipefd))
		return 1;
	rng = seed | 1;
	for (unsigned long w = 0; w < procs; w++) {
		uint64_t wseed = seed + w;
		pid_t pid = fork();

		if (pid == 0)
			worker(wseed, ops / procs, pipefd[1]);
		/* kill some workers midway: their files close under them */
		if (pid > 0 && chance(25)) {
			usleep((useconds_t)below(200000));
			kill(pid, SIGKILL);
			respawned++;
			pid = fork();
			if (pid == 0)
				worker(wseed ^ 0xdeadbeef, ops / procs, pipefd[1]);
		}
	}
	close(pipefd[1]);
	while (wait(NULL) > 0)
		;
	disarm_faults();
	for (;;) {
		struct totals t;

		if (read(pipefd[0], &t, sizeof(t)) != sizeof(t))
			break;
		sum.ops += t.ops;
		sum.ok += t.ok;
		sum.err += t.err;
		sum.faults += t.faults;
	}
	/*
	 * A killed worker's work may still sit behind a stalled queue: its
	 * memory comes back when the watchdog fails that work (10 s), so
	 * allow three watchdog periods before calling it a leak.
	 */
	for (int tries = 0; tries < 300; tries++) {
		leaks = 0;
		for (int d = 0; d < ndevs; d++) {
			uint64_t vram, pinned;

			leaks += usage(d, &vram, &pinned) || vram != base_vram[d] ||
				 pinned != base_pinned[d];
		}
		if (!leaks)
			break;
		usleep(100000);
	}
	for (int d = 0; d < ndevs && leaks; d++) {
		uint64_t vram, pinned;

		if (usage(d, &vram, &pinned) || vram != base_vram[d] ||
		    pinned != base_pinned[d])
			printf("ioctl_fuzz: LEAK on %s: VRAM used %llu (baseline %llu), host pinned %llu (baseline %llu)\n",
			       dev_paths[d], (unsigned long long)vram,
			       (unsigned long long)base_vram[d],
			       (unsigned long long)pinned,
			       (unsigned long long)base_pinned[d]);
	}
	printf("ioctl_fuzz: %lu operations (%lu succeeded, %lu refused or failed), %lu faults injected, %lu workers killed midway; memory %s\n",
	       sum.ops, sum.ok, sum.err, sum.faults, respawned,
	       leaks ? "LEAKED" : "back at its baseline");
	printf("%s: ioctl_fuzz seed %llu\n", leaks ? "not ok" : "ok",
	       (unsigned long long)seed);
	return leaks ? 1 : 0;
}
