// SPDX-License-Identifier: MIT
/*
 * ioctl_fuzz: hostile user space for simaccel.ko (DRM accel,
 * uapi/simaccel_accel.h), run inside the VM as root.
 *
 * Worker processes run random sequences of every operation of the
 * interface, with random and boundary arguments:
 * - open (every device's /dev/accel/accelN, stale nodes too), close, dup,
 *   fork (the child acts on the inherited files and dies or is killed);
 * - GET_INFO, MEM_INFO, BO_CREATE, BO_USERPTR (read-only memory, unmapped
 *   ranges, munmap after pinning), BO_INFO, GEM_CLOSE, GEM_FLINK/GEM_OPEN;
 * - mmap and munmap of buffers and dma-bufs, and touching the mappings
 *   (SIGBUS and SIGSEGV are caught: an unbound device's VRAM raises SIGBUS);
 * - QUEUE_CREATE/DESTROY, SUBMIT (copies and fills between the file's
 *   buffers and user memory, bogus addresses, barriers, in-syncs and an
 *   out-sync on binary and timeline syncobjs, SUBMIT_WAIT), QUEUE_QUERY;
 * - every SYNCOBJ ioctl, syncobjs and sync_files as fds, which answer
 *   SYNC_IOC_FILE_INFO and merge after their device and job are gone;
 * - PRIME export and import, on the same device and the other one; the fds
 *   go to other processes by fork and over a Unix socket (SCM_RIGHTS), and
 *   so do device files;
 * - ioctl numbers of any size and direction with random bytes, poll;
 * - arming device faults (debugfs fault_inject: failures and stalls).
 * Three workers in four switch to one of two unprivileged users (uids 1000 and
 * 1001, with an RLIMIT_MEMLOCK of 8 MiB) before or after they open their
 * files, so that each user's files meet the other's and root's exported
 * buffers and syncobjs. The parent kills some workers midway (starting new ones),
 * and unbinds and binds devices again under them: workers then see ENODEV
 * and SIGBUS, and reopen. It also resets devices through the PCI core, and
 * makes them hang or fail fatally as a whole (debugfs fault_inject), which
 * the driver resets them for: workers' jobs then fail with ECANCELED or
 * ETIMEDOUT, and an unprivileged user's may be banned.
 *
 * Everything derives from one seed, printed first; --seed repeats a run
 * (as far as timing lets it). At the end, with every process gone and
 * every device bound again, each device's VRAM in use and pinned host
 * memory must be back at its baseline. A kernel report, a hang, a crash of
 * the fuzzer or a leak fails the run (the VM runner watches the kernel log
 * and the time); every errno is a normal answer.
 *
 *   ioctl_fuzz [--seed N] [--ops N] [--procs N] [--kernel-faults] [--verbose]
 *
 * --kernel-faults has the workers ask for the kernel's fault injection
 * (/proc/self/make-it-fail), once the devices are found and measured.
 * --verbose adds what happened (unbinds, signals caught, ...) on stderr.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "../../uapi/simaccel_accel.h"

#define MAX_DEVS 8
#define MAX_WORKERS 64
#define MAX_FDS 6		/* device files a worker holds */
#define MAX_BOS 48
#define MAX_QUEUES 8
#define MAX_SYNCS 16
#define MAX_MAPS 16
#define MAX_SHARED 16		/* dma-buf, syncobj and sync_file fds */
#define SCRATCH (4u << 20)
#define PAGE 4096u
#define FIRST_USER 1000		/* workers are users 1000 and 1001 */
#define USER_MEMLOCK (8u << 20)
#define DRIVER_DIR "/sys/bus/pci/drivers/simaccel"
#define ACCEL_MAJOR 261
#define MS 1000000ll		/* ns */

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

/* Mostly zero: padding, reserved fields and flags that must be zero. */
static uint32_t mostly_zero(unsigned int percent)
{
	return chance(percent) ? (uint32_t)rnd() | 1 : 0;
}

/* ------------------------------------------------------------------ */
/* The devices, known by their PCI address: a rebind may change the minor */

struct device {
	char pci[64];
	uint64_t vram_size;
	uint32_t num_queues;
};

static struct device devs[MAX_DEVS];
static int ndevs;

static int device_by_pci(const char *pci)
{
	for (int d = 0; d < ndevs; d++)
		if (!strcmp(devs[d].pci, pci))
			return d;
	return -1;
}

/* The PCI address behind a sysfs link (.../0000:01:00.0), in @pci. */
static int pci_of_link(const char *link, char *pci, size_t len)
{
	char target[PATH_MAX];

	if (!realpath(link, target))
		return -1;
	snprintf(pci, len, "%s", basename(target));
	return 0;
}

/* The device an open node belongs to; 0 when it is no longer bound. */
static int device_of_fd(int fd)
{
	char link[96], pci[64];
	struct stat st;
	int d;

	if (fstat(fd, &st) || !S_ISCHR(st.st_mode))
		return 0;
	snprintf(link, sizeof(link), "/sys/dev/char/%u:%u/device",
		 major(st.st_rdev), minor(st.st_rdev));
	if (pci_of_link(link, pci, sizeof(pci)))
		return 0;
	d = device_by_pci(pci);
	return d < 0 ? 0 : d;
}

/* The node of device @d now, or -1 while it is unbound. */
static int node_of(int d, char *path, size_t len)
{
	char dir[128];
	struct dirent *e;
	int ret = -1;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s/accel", devs[d].pci);
	dp = opendir(dir);
	while (dp && ret && (e = readdir(dp))) {
		if (strncmp(e->d_name, "accel", 5))
			continue;
		snprintf(path, len, "/dev/accel/%.32s", e->d_name);
		ret = 0;
	}
	if (dp)
		closedir(dp);
	return ret;
}

static int open_device(int d)
{
	char path[64];

	if (node_of(d, path, sizeof(path)))
		return -1;
	return open(path, O_RDWR | O_CLOEXEC);
}

static bool is_bound(int d)
{
	char path[64];

	return node_of(d, path, sizeof(path)) == 0;
}

static void find_devices(void)
{
	glob_t g;

	if (glob("/sys/class/accel/accel[0-9]*", 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc && ndevs < MAX_DEVS; i++) {
		struct drm_simaccel_info info = { 0 };
		char link[PATH_MAX], drv[PATH_MAX], node[64];
		struct device *dev = &devs[ndevs];
		int fd;

		snprintf(link, sizeof(link), "%s/device", g.gl_pathv[i]);
		snprintf(drv, sizeof(drv), "%s/device/driver", g.gl_pathv[i]);
		if (pci_of_link(link, dev->pci, sizeof(dev->pci)) ||
		    pci_of_link(drv, node, sizeof(node)) ||
		    strcmp(node, "simaccel") || device_by_pci(dev->pci) >= 0)
			continue;
		snprintf(node, sizeof(node), "/dev/accel/%s",
			 basename(g.gl_pathv[i]));
		fd = open(node, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!ioctl(fd, DRM_IOCTL_SIMACCEL_GET_INFO, &info)) {
			dev->vram_size = info.vram_size;
			dev->num_queues = info.num_queues;
			ndevs++;
		}
		close(fd);
	}
	globfree(&g);
}

/* Nodes for every user: the unprivileged workers open them too. */
static void make_nodes_accessible(void)
{
	glob_t g;

	if (glob("/dev/accel/accel[0-9]*", 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		chmod(g.gl_pathv[i], 0666);
	globfree(&g);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* What a worker has */

struct bo {
	uint32_t handle;
	uint32_t kind;
	uint64_t dev_addr, size, mmap_offset;
};

struct sync {
	uint32_t handle;
	bool timeline;
	uint64_t point;		/* the last point given out */
	uint64_t fenced;	/* the last point a job signals (binary: 1) */
};

struct file {
	int fd;			/* -1: not open */
	int dev;
	bool gone;		/* an ioctl said ENODEV: the device was unbound */
	struct bo bos[MAX_BOS];
	int nbos;
	uint32_t queues[MAX_QUEUES];
	int nqueues;
	struct sync syncs[MAX_SYNCS];
	int nsyncs;
};

struct map {
	void *addr;
	size_t len;
	bool writable;
};

/* What an fd of the pool is; the byte sent with it over the socket. */
enum shared_kind { DMABUF = 1, SYNCOBJ_FD, SYNC_FILE, DEVICE_FILE };

struct shared {
	int fd;
	enum shared_kind kind;
};

static struct file files[MAX_FDS];
static struct map maps[MAX_MAPS];
static int nmaps;
static struct shared pool[MAX_SHARED];
static int npool;
static uint8_t *scratch;	/* user memory copies may use */
static uint8_t *rodata;		/* read-only user memory */
static uint8_t *forbidden;	/* PROT_NONE: user pointers that fault */
static uint8_t *hole;		/* unmapped: a range over it cannot be pinned */
static int xfer[2] = { -1, -1 };	/* SCM_RIGHTS between all processes */
static unsigned long drop_at = ULONG_MAX;	/* the op to give up root at */
static uid_t user;				/* the uid it gives it up for */

/*
 * Counters, per worker, reported through a pipe in one write (less than
 * PIPE_BUF): the totals, and for --verbose the answers per DRM ioctl
 * number and SUBMIT's errnos.
 */
struct totals {
	unsigned long ops, ok, err, faults, caught, passed, crashes;
	uint32_t nr_ok[256], nr_err[256];
	uint32_t submit_errno[128];
};

static struct totals t;

static void counted(int ret)
{
	if (ret == 0)
		t.ok++;
	else
		t.err++;
}

/* An ioctl on a file: counted, and an unbound device noticed. */
static int file_ioctl(struct file *f, unsigned long nr, void *arg)
{
	int ret = ioctl(f->fd, nr, arg);

	counted(ret);
	if (ret) {
		t.nr_err[_IOC_NR(nr)]++;
		if (nr == DRM_IOCTL_SIMACCEL_SUBMIT)
			t.submit_errno[errno < 128 ? errno : 0]++;
		if (errno == ENODEV)
			f->gone = true;
	} else {
		t.nr_ok[_IOC_NR(nr)]++;
	}
	return ret;
}

static struct file *some_file(void)
{
	struct file *f = &files[below(MAX_FDS)];

	return f->fd >= 0 ? f : NULL;
}

static struct shared *some_shared(enum shared_kind kind)
{
	struct shared *s;

	if (!npool)
		return NULL;
	s = &pool[below((uint64_t)npool)];
	return !kind || s->kind == kind || chance(15) ? s : NULL;
}

/* An fd for the kernel: mostly of the kind wanted, else anything. */
static int some_fd(enum shared_kind kind)
{
	struct shared *s = some_shared(kind);
	struct file *f;

	if (s && chance(85))
		return s->fd;
	f = some_file();
	if (f && chance(50))
		return f->fd;
	return chance(50) ? -1 : (int)below(64);
}

/* Keep @fd in the pool, making room by closing another. */
static void keep_shared(int fd, enum shared_kind kind)
{
	if (npool == MAX_SHARED) {
		int i = (int)below(MAX_SHARED);

		close(pool[i].fd);
		pool[i] = pool[--npool];
	}
	pool[npool++] = (struct shared){ fd, kind };
}

static void keep_map(void *addr, size_t len, bool writable)
{
	if (nmaps == MAX_MAPS) {
		munmap(addr, len);
		return;
	}
	maps[nmaps++] = (struct map){ addr, len, writable };
}

static struct bo *some_bo(struct file *f)
{
	return f->nbos ? &f->bos[below((uint64_t)f->nbos)] : NULL;
}

static void keep_bo(struct file *f, struct bo bo)
{
	if (f->nbos == MAX_BOS) {
		struct drm_gem_close c = { .handle = bo.handle };

		file_ioctl(f, DRM_IOCTL_GEM_CLOSE, &c);
		return;
	}
	f->bos[f->nbos++] = bo;
}

/* A handle: one of the file's, mostly, or 0, or anything. */
static uint32_t some_bo_handle(struct file *f, int *index)
{
	*index = -1;
	if (f->nbos && chance(85)) {
		*index = (int)below((uint64_t)f->nbos);
		return f->bos[*index].handle;
	}
	return chance(50) ? 0 : (uint32_t)below(chance(50) ? 256 : UINT32_MAX);
}

static struct sync *some_sync(struct file *f)
{
	return f->nsyncs ? &f->syncs[below((uint64_t)f->nsyncs)] : NULL;
}

static uint32_t some_sync_handle(struct file *f)
{
	struct sync *s = some_sync(f);

	if (s && chance(90))
		return s->handle;
	return chance(50) ? 0 : (uint32_t)below(chance(50) ? 64 : UINT32_MAX);
}

/* A point to wait for: one given out, the next, 0, or anything. */
static uint64_t some_point(struct sync *s)
{
	if (!s || chance(5))
		return rnd() >> below(64);
	if (!s->timeline)
		return chance(90) ? 0 : 1;
	return chance(80) ? below(s->point + 1) : s->point + 1 + below(2);
}

/* An absolute CLOCK_MONOTONIC time-out, as the syncobj waits take. */
static int64_t some_deadline(void)
{
	struct timespec now;
	int64_t ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = now.tv_sec * 1000000000ll + now.tv_nsec;
	switch (below(6)) {
	case 0:
		return 0;		/* in the past: a poll */
	case 1:
		return -1 - (int64_t)below(10);
	case 2:
		return ns + (int64_t)below(20 * MS);
	default:
		return ns + (int64_t)below(2 * MS);
	}
}

static uint64_t vram_size_of(struct file *f)
{
	return devs[f->dev].vram_size;
}

/* A device address: inside a buffer of the file, near one, or anywhere. */
static uint64_t some_dev_addr(struct file *f, uint64_t *room)
{
	*room = 0;
	if (f->nbos && chance(85)) {
		struct bo *b = some_bo(f);
		uint64_t off = chance(20) ? 0 : below(b->size + 2);

		*room = b->size > off ? b->size - off : 0;
		return b->dev_addr + off - (chance(3) ? 1 : 0);
	}
	switch (below(4)) {
	case 0:
		return DRM_SIMACCEL_VRAM_BASE + below(vram_size_of(f) + 4096);
	case 1:
		return DRM_SIMACCEL_HOST_BASE + below(1ull << 32);
	case 2:
		return 0;
	default:
		return rnd();
	}
}

/* A user pointer: scratch memory, a mapping, or one that must fault. */
static uint64_t some_user_ptr(uint64_t *room, bool for_write)
{
	*room = 0;
	switch (below(12)) {
	case 0:
		return 0;
	case 1:
		return (uintptr_t)forbidden + below(PAGE);
	case 2:
		return 0xffff888000000000ull + below(1u << 20);	/* kernel */
	case 3:
		return 0x8000000000000000ull;			/* non-canonical */
	case 4:
		*room = 3 * PAGE;
		return (uintptr_t)hole - PAGE;	/* one page before the hole */
	case 5:
		if (!for_write || chance(30)) {
			uint64_t off = below(16 * PAGE);

			*room = 16 * PAGE - off;
			return (uintptr_t)rodata + off;
		}
		/* fall through */
	case 6:
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
	if (room && chance(85))
		return 1 + below(room < (8u << 20) ? room : (8u << 20));
	return any_size(limit);
}

/* ------------------------------------------------------------------ */
/* Touching mappings: SIGBUS and SIGSEGV are answers, not crashes */

static sigjmp_buf touch_env;
static volatile sig_atomic_t touching;

static void on_fault(int sig)
{
	if (touching)
		siglongjmp(touch_env, sig);
	/* not ours: die of it, so that the parent sees a crash */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_faults(void)
{
	struct sigaction sa = { .sa_handler = on_fault };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
}

/* Read or write one byte of a mapping; false if that raised a signal. */
static bool touch(volatile uint8_t *p, bool write)
{
	if (sigsetjmp(touch_env, 1)) {
		touching = 0;
		t.caught++;
		return false;
	}
	touching = 1;
	if (write)
		*p = (uint8_t)rnd();
	else
		(void)*p;
	touching = 0;
	return true;
}

static void touch_some_page(struct map *m)
{
	uint64_t off = chance(50) ? 0 : below(m->len);

	counted(!touch((volatile uint8_t *)m->addr + off,
		       m->writable && chance(50)));
}

/* ------------------------------------------------------------------ */
/* Files */

static void forget_file(struct file *f)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

/* A node of some device; now and then a stale or missing one. */
static void op_open(void)
{
	struct file *f = &files[below(MAX_FDS)];
	glob_t g;

	if (f->fd >= 0)
		return;
	forget_file(f);
	f->dev = (int)below((uint64_t)ndevs);
	if (chance(85)) {
		f->fd = open_device(f->dev);
	} else if (!glob("/dev/accel/accel*", 0, NULL, &g)) {
		int flags = chance(80) ? O_RDWR : (int)below(4) | O_NONBLOCK;

		f->fd = open(g.gl_pathv[below(g.gl_pathc)], flags | O_CLOEXEC);
		globfree(&g);
		if (f->fd >= 0)
			f->dev = device_of_fd(f->fd);
	} else {
		f->fd = open("/dev/accel/accel9", O_RDWR);
	}
	counted(f->fd < 0);
}

static void op_close(void)
{
	struct file *f = some_file();

	if (!f)
		return;
	if (chance(30)) {	/* close a dup first: the file stays */
		int d = chance(50) ? dup(f->fd) : fcntl(f->fd, F_DUPFD_CLOEXEC, 100);

		if (d >= 0) {
			close(f->fd);
			f->fd = d;
			return;
		}
	}
	close(f->fd);
	forget_file(f);
}

/* ------------------------------------------------------------------ */
/* Device and memory */

static void op_info(struct file *f)
{
	struct drm_simaccel_info info = { 0 };

	info.flags = mostly_zero(5);
	info.pad = mostly_zero(3);
	info.pad2 = mostly_zero(3);
	file_ioctl(f, DRM_IOCTL_SIMACCEL_GET_INFO, &info);
}

static void op_mem_info(struct file *f)
{
	struct drm_simaccel_mem_info m = { 0 };

	m.flags = chance(30) ? DRM_SIMACCEL_MEM_INFO_SETTLE : 0;
	if (chance(5))
		m.flags = (uint32_t)rnd();
	m.pad = mostly_zero(3);
	file_ioctl(f, DRM_IOCTL_SIMACCEL_MEM_INFO, &m);
}

static uint32_t some_kind(void)
{
	if (chance(90))
		return DRM_SIMACCEL_BO_VRAM + (uint32_t)below(3);
	return chance(50) ? (uint32_t)below(8) : (uint32_t)rnd();
}

static void op_bo_create(struct file *f)
{
	struct drm_simaccel_bo_create c = { 0 };

	c.size = chance(75) ? 1 + below(1u << (8 + below(14))) :
			      any_size(vram_size_of(f));
	c.kind = some_kind();
	if (chance(70))
		c.align = 0;
	else if (chance(80))
		c.align = 1ull << below(32);
	else
		c.align = rnd() >> below(64);
	c.flags = mostly_zero(4);
	c.pad = mostly_zero(3);
	if (file_ioctl(f, DRM_IOCTL_SIMACCEL_BO_CREATE, &c))
		return;
	keep_bo(f, (struct bo){ c.handle, c.kind, c.dev_addr, c.size,
				c.mmap_offset });
}

static void forget_bo(struct file *f, int i)
{
	f->bos[i] = f->bos[--f->nbos];
}

static void op_gem_close(struct file *f)
{
	struct drm_gem_close c = { 0 };
	int i;

	c.handle = some_bo_handle(f, &i);
	c.pad = mostly_zero(3);
	file_ioctl(f, DRM_IOCTL_GEM_CLOSE, &c);
	if (i >= 0 && chance(90))
		forget_bo(f, i);	/* sometimes keep it: a double close later */
}

/*
 * User memory as a buffer: scratch, read-only memory, a fresh region
 * unmapped once pinned, or ranges that cannot be pinned.
 */
static void op_userptr(struct file *f)
{
	struct drm_simaccel_bo_userptr u = { 0 };
	size_t fresh_len = 0;
	void *fresh = NULL;
	uint64_t room;

	u.flags = chance(30) ? DRM_SIMACCEL_USERPTR_READ_ONLY : 0;
	if (chance(3))
		u.flags = (uint32_t)rnd();
	if (chance(30)) {
		fresh_len = PAGE * (1 + below(64));
		fresh = mmap(NULL, fresh_len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (fresh == MAP_FAILED)
			return;
		if (chance(70))
			memset(fresh, 0x5a, fresh_len);	/* else: not faulted in */
		u.user_addr = (uintptr_t)fresh + below(PAGE);
		room = fresh_len - (u.user_addr - (uintptr_t)fresh);
	} else {
		u.user_addr = some_user_ptr(&room,
					    !(u.flags & DRM_SIMACCEL_USERPTR_READ_ONLY));
	}
	u.size = fitting(room, SCRATCH);
	if (!file_ioctl(f, DRM_IOCTL_SIMACCEL_BO_USERPTR, &u))
		keep_bo(f, (struct bo){ u.handle, DRM_SIMACCEL_BO_USER,
					u.dev_addr, u.size, 0 });
	if (!fresh)
		return;
	/* the pages stay pinned after the process lets go of them */
	if (chance(60))
		munmap(fresh, fresh_len);
	else
		keep_map(fresh, fresh_len, true);
}

static void op_bo_info(struct file *f)
{
	struct drm_simaccel_bo_info info = { 0 };
	int i;

	info.handle = some_bo_handle(f, &i);
	info.flags = mostly_zero(3);
	info.pad = mostly_zero(3);
	file_ioctl(f, DRM_IOCTL_SIMACCEL_BO_INFO, &info);
}

/* GEM names are global per device: root only, as DRM makes them. */
static void op_flink(struct file *f)
{
	struct drm_gem_flink fl = { 0 };
	struct drm_gem_open o = { 0 };
	struct file *other = some_file();
	int i;

	fl.handle = some_bo_handle(f, &i);
	if (chance(70) && file_ioctl(f, DRM_IOCTL_GEM_FLINK, &fl))
		return;
	if (!other)
		other = f;
	o.name = fl.name && chance(90) ? fl.name : (uint32_t)below(64);
	if (!file_ioctl(other, DRM_IOCTL_GEM_OPEN, &o)) {
		struct drm_simaccel_bo_info info = { .handle = o.handle };

		if (!file_ioctl(other, DRM_IOCTL_SIMACCEL_BO_INFO, &info))
			keep_bo(other, (struct bo){ o.handle, info.kind,
						    info.dev_addr, info.size,
						    info.mmap_offset });
	}
}

/* ------------------------------------------------------------------ */
/* Mappings */

/* A buffer's mapping, any offset and length, or a dma-buf's. */
static void op_mmap(struct file *f)
{
	struct shared *s = some_shared(DMABUF);
	uint64_t off, len;
	struct bo *b = some_bo(f);
	int prot, fd = f->fd;
	void *p;

	if (s && s->kind == DMABUF && chance(20)) {
		fd = s->fd;
		off = chance(80) ? 0 : PAGE * below(4);
		len = PAGE * (1 + below(16));
	} else if (b && chance(85)) {
		off = b->mmap_offset + (chance(80) ? 0 : PAGE * below(b->size / PAGE + 2));
		len = chance(80) ? PAGE * (1 + below(b->size / PAGE + 1)) :
				   any_size(b->size);
	} else {
		off = rnd() & ~(uint64_t)(PAGE - 1);
		len = any_size(1u << 20);
	}
	if (!len || len > (64u << 20))
		len = PAGE;
	prot = chance(80) ? PROT_READ | PROT_WRITE : PROT_READ;
	p = mmap(NULL, len, prot, chance(95) ? MAP_SHARED : MAP_PRIVATE, fd,
		 (off_t)off);
	counted(p == MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	keep_map(p, len, prot & PROT_WRITE);
	if (nmaps && maps[nmaps - 1].addr == p && chance(70))
		touch_some_page(&maps[nmaps - 1]);
}

static void op_munmap(void)
{
	int i;

	if (!nmaps)
		return;
	i = (int)below((uint64_t)nmaps);
	munmap(maps[i].addr, maps[i].len);
	maps[i] = maps[--nmaps];
}

static void op_touch(void)
{
	if (nmaps)
		touch_some_page(&maps[below((uint64_t)nmaps)]);
}

/* ------------------------------------------------------------------ */
/* Queues and jobs */

static void op_queue(struct file *f)
{
	if (f->nqueues && chance(40)) {
		int i = (int)below((uint64_t)f->nqueues);
		struct drm_simaccel_queue_destroy d = { .handle = f->queues[i] };

		d.pad = mostly_zero(3);
		file_ioctl(f, DRM_IOCTL_SIMACCEL_QUEUE_DESTROY, &d);
		f->queues[i] = f->queues[--f->nqueues];
		return;
	}
	{
		struct drm_simaccel_queue_create q = { 0 };

		q.flags = mostly_zero(4);
		if (file_ioctl(f, DRM_IOCTL_SIMACCEL_QUEUE_CREATE, &q))
			return;
		if (f->nqueues < MAX_QUEUES)
			f->queues[f->nqueues++] = q.handle;
	}
}

static uint32_t some_queue(struct file *f)
{
	if (f->nqueues && chance(92))
		return f->queues[below((uint64_t)f->nqueues)];
	return chance(50) ? 0 : (uint32_t)below(chance(50) ? 2048 : UINT32_MAX);
}

/* One side of an op: a device address, or a user pointer with @user_flag. */
static uint64_t op_side(struct file *f, struct drm_simaccel_op *o,
			uint32_t user_flag, bool for_write, uint64_t *room)
{
	if (chance(25)) {
		o->flags |= user_flag;
		return some_user_ptr(room, for_write);
	}
	return some_dev_addr(f, room);
}

static void make_op(struct file *f, struct drm_simaccel_op *o)
{
	uint64_t droom, sroom = UINT64_MAX;

	memset(o, 0, sizeof(*o));
	o->op = chance(60) ? DRM_SIMACCEL_OP_COPY : DRM_SIMACCEL_OP_FILL;
	if (chance(3))
		o->op = chance(50) ? (uint32_t)below(4) : (uint32_t)rnd();
	o->dst = op_side(f, o, DRM_SIMACCEL_OP_DST_USER, true, &droom);
	if (o->op == DRM_SIMACCEL_OP_FILL)
		o->src = chance(95) ? below(256) : rnd();
	else
		o->src = op_side(f, o, DRM_SIMACCEL_OP_SRC_USER, false, &sroom);
	if (chance(3))
		o->flags = chance(50) ? (uint32_t)below(8) : (uint32_t)rnd();
	o->size = fitting(droom < sroom ? droom : sroom, vram_size_of(f));
}

/* An in-sync: a syncobj of the file at a point, or nonsense. */
static void make_in_sync(struct file *f, struct drm_simaccel_sync *s)
{
	struct sync *sy = some_sync(f);

	s->handle = sy && chance(90) ? sy->handle : some_sync_handle(f);
	s->point = some_point(sy);
	s->pad = mostly_zero(2);
}

/* An in-sync with a fence, if the file has one: the job is accepted. */
static void make_fenced_in_sync(struct file *f, struct drm_simaccel_sync *s)
{
	struct sync *sy = some_sync(f);

	for (int tries = 0; tries < 4 && sy && !sy->fenced; tries++)
		sy = some_sync(f);
	if (!sy || !sy->fenced) {
		make_in_sync(f, s);
		return;
	}
	memset(s, 0, sizeof(*s));
	s->handle = sy->handle;
	s->point = sy->timeline ? 1 + below(sy->fenced) : 0;
}

/* A job will signal @s: later jobs may wait for it. */
static void note_fenced(struct file *f, const struct drm_simaccel_sync *s)
{
	for (int i = 0; i < f->nsyncs; i++) {
		struct sync *sy = &f->syncs[i];

		if (sy->handle != s->handle)
			continue;
		if (!sy->timeline)
			sy->fenced = 1;
		else if (s->point > sy->fenced)
			sy->fenced = s->point;
	}
}

/* The out-sync: a binary syncobj, or the next point of a timeline. */
static void make_out_sync(struct file *f, struct drm_simaccel_sync *s)
{
	struct sync *sy = some_sync(f);

	if (!sy || chance(5)) {
		s->handle = some_sync_handle(f);
		s->point = chance(50) ? 0 : rnd() >> below(64);
	} else {
		s->handle = sy->handle;
		/* a point given out before, now and then: out of order */
		s->point = !sy->timeline ? 0 :
			   chance(95) ? ++sy->point : below(sy->point + 1);
	}
	s->pad = mostly_zero(2);
}

/* Where the kernel is to read an array from: ours, or not. */
static uint64_t array_ptr(void *array)
{
	if (chance(96))
		return (uintptr_t)array;
	switch (below(3)) {
	case 0:
		return 0;
	case 1:
		return (uintptr_t)forbidden;
	default:
		return rnd();
	}
}

/* One side of a well-formed op: inside a buffer, or in scratch memory. */
static uint64_t sane_side(struct file *f, struct drm_simaccel_op *o,
			  uint32_t user_flag, uint64_t *room)
{
	struct bo *b = some_bo(f);
	uint64_t off;

	if (b && chance(85)) {
		off = below(b->size);
		*room = b->size - off;
		return b->dev_addr + off;
	}
	o->flags |= user_flag;
	off = below(SCRATCH);
	*room = SCRATCH - off;
	return (uintptr_t)scratch + off;
}

/* An op that mostly resolves: the job then reaches the device. */
static void make_sane_op(struct file *f, struct drm_simaccel_op *o)
{
	uint64_t droom, sroom = UINT64_MAX;

	memset(o, 0, sizeof(*o));
	o->op = chance(60) ? DRM_SIMACCEL_OP_COPY : DRM_SIMACCEL_OP_FILL;
	o->dst = sane_side(f, o, DRM_SIMACCEL_OP_DST_USER, &droom);
	if (o->op == DRM_SIMACCEL_OP_FILL)
		o->src = below(256);
	else
		o->src = sane_side(f, o, DRM_SIMACCEL_OP_SRC_USER, &sroom);
	if (sroom < droom)
		droom = sroom;
	o->size = 1 + below(droom < (1u << 20) ? droom : (1u << 20));
}

/*
 * A job: mostly well-formed, so that jobs run, fail on the device, wait
 * for each other and get killed; else anything.
 */
static void op_submit(struct file *f)
{
	static struct drm_simaccel_op ops[DRM_SIMACCEL_MAX_OPS + 1];
	struct drm_simaccel_sync in[DRM_SIMACCEL_MAX_IN_SYNCS + 1];
	struct drm_simaccel_submit s = { 0 };
	bool sane = chance(60);
	uint32_t nops, nin;

	if (sane && !f->nqueues)
		op_queue(f);
	if (chance(10))
		nops = 0;	/* a barrier */
	else if (chance(95))
		nops = 1 + (uint32_t)below(chance(80) ? 2 : 8);
	else
		nops = chance(50) ? DRM_SIMACCEL_MAX_OPS + (uint32_t)below(2) :
				    (uint32_t)rnd();
	for (uint32_t i = 0; i < nops && i <= DRM_SIMACCEL_MAX_OPS; i++) {
		if (sane)
			make_sane_op(f, &ops[i]);
		else
			make_op(f, &ops[i]);
	}
	nin = chance(50) ? 0 : (uint32_t)below(4);
	if (!sane && chance(2))
		nin = DRM_SIMACCEL_MAX_IN_SYNCS + (uint32_t)below(2);
	for (uint32_t i = 0; i < nin; i++) {
		if (sane)
			make_fenced_in_sync(f, &in[i]);
		else
			make_in_sync(f, &in[i]);
	}
	s.queue = sane && f->nqueues ? f->queues[below((uint64_t)f->nqueues)] :
				      some_queue(f);
	s.ops = sane ? (uintptr_t)ops : array_ptr(ops);
	s.op_count = nops;
	s.in_syncs = sane ? (uintptr_t)in : array_ptr(in);
	s.in_sync_count = nin;
	if (chance(50))
		make_out_sync(f, &s.out_sync);
	s.flags = chance(10) ? DRM_SIMACCEL_SUBMIT_WAIT : 0;
	if (!sane && chance(2))
		s.flags = (uint32_t)rnd();
	if (!file_ioctl(f, DRM_IOCTL_SIMACCEL_SUBMIT, &s) && s.out_sync.handle)
		note_fenced(f, &s.out_sync);
}

static void op_queue_query(struct file *f)
{
	struct drm_simaccel_failure recent[DRM_SIMACCEL_QUEUE_FAILURES + 2];
	struct drm_simaccel_queue_query q = { 0 };

	q.handle = some_queue(f);
	q.pad = mostly_zero(3);
	if (chance(60)) {
		q.recent_count = (uint32_t)below(DRM_SIMACCEL_QUEUE_FAILURES + 3);
		q.recent = array_ptr(recent);
	} else if (chance(10)) {
		q.recent_count = (uint32_t)rnd();
		q.recent = chance(50) ? 0 : (uintptr_t)forbidden;
	}
	file_ioctl(f, DRM_IOCTL_SIMACCEL_QUEUE_QUERY, &q);
}

/* ------------------------------------------------------------------ */
/* Syncobjs */

static void keep_sync(struct file *f, uint32_t handle, bool timeline)
{
	struct sync s = { handle, timeline, 0, 0 };

	if (f->nsyncs == MAX_SYNCS) {
		struct drm_syncobj_destroy d = { .handle = handle };

		file_ioctl(f, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
		return;
	}
	f->syncs[f->nsyncs++] = s;
}

static void op_syncobj_create(struct file *f)
{
	struct drm_syncobj_create c = { 0 };

	c.flags = chance(30) ? DRM_SYNCOBJ_CREATE_SIGNALED : 0;
	if (chance(3))
		c.flags = (uint32_t)rnd();
	if (!file_ioctl(f, DRM_IOCTL_SYNCOBJ_CREATE, &c)) {
		keep_sync(f, c.handle, chance(50));
		if (c.flags == DRM_SYNCOBJ_CREATE_SIGNALED &&
		    f->syncs[f->nsyncs - 1].handle == c.handle)
			f->syncs[f->nsyncs - 1].fenced = 1;
	}
}

static void op_syncobj_destroy(struct file *f)
{
	struct drm_syncobj_destroy d = { 0 };
	int i = -1;

	if (f->nsyncs && chance(85)) {
		i = (int)below((uint64_t)f->nsyncs);
		d.handle = f->syncs[i].handle;
	} else {
		d.handle = some_sync_handle(f);
	}
	d.pad = mostly_zero(3);
	file_ioctl(f, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
	if (i >= 0 && chance(90))
		f->syncs[i] = f->syncs[--f->nsyncs];
}

/* Up to a few handles and points of the file's syncobjs; their count. */
static uint32_t some_syncs(struct file *f, uint32_t *handles, uint64_t *points,
			   uint32_t room)
{
	uint32_t n = chance(5) ? (uint32_t)below(room + 1) : (uint32_t)below(4);

	/*
	 * Not beyond 2^16: DRM's syncobj ioctls kmalloc the count asked for,
	 * and a count of 2^32 is a page allocator warning of DRM's own.
	 */
	if (chance(2))
		n = chance(50) ? (uint32_t)below(1u << 16) : 0;
	for (uint32_t i = 0; i < n && i < room; i++) {
		struct sync *s = some_sync(f);

		handles[i] = s && chance(90) ? s->handle : some_sync_handle(f);
		points[i] = some_point(s);
	}
	return n;
}

static uint32_t some_wait_flags(void)
{
	uint32_t flags = 0;

	if (chance(50))
		flags |= DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL;
	if (chance(30))
		flags |= DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
	if (chance(10))
		flags |= DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE;
	if (chance(2))
		flags = (uint32_t)rnd();
	return flags;
}

static void op_syncobj_wait(struct file *f)
{
	uint32_t handles[8];
	uint64_t points[8];
	uint32_t n = some_syncs(f, handles, points, 8);

	if (chance(50)) {
		struct drm_syncobj_wait w = { 0 };

		w.handles = array_ptr(handles);
		w.count_handles = n;
		w.timeout_nsec = some_deadline();
		w.flags = some_wait_flags() & ~(chance(90) ?
			DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE : 0);
		w.pad = mostly_zero(2);
		file_ioctl(f, DRM_IOCTL_SYNCOBJ_WAIT, &w);
	} else {
		struct drm_syncobj_timeline_wait w = { 0 };

		w.handles = array_ptr(handles);
		w.points = array_ptr(points);
		w.count_handles = n;
		w.timeout_nsec = some_deadline();
		w.flags = some_wait_flags();
		w.pad = mostly_zero(2);
		file_ioctl(f, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &w);
	}
}

/* RESET, SIGNAL, TIMELINE_SIGNAL or QUERY of a few syncobjs. */
static void op_syncobj_array(struct file *f)
{
	uint32_t handles[8];
	uint64_t points[8];
	uint32_t n = some_syncs(f, handles, points, 8);

	if (chance(50)) {
		struct drm_syncobj_array a = { 0 };

		a.handles = array_ptr(handles);
		a.count_handles = n;
		a.pad = mostly_zero(2);
		file_ioctl(f, chance(50) ? DRM_IOCTL_SYNCOBJ_RESET :
					   DRM_IOCTL_SYNCOBJ_SIGNAL, &a);
		return;
	}
	{
		struct drm_syncobj_timeline_array a = { 0 };
		bool query = chance(50);

		/* signal a new point of a timeline mostly */
		for (uint32_t i = 0; !query && i < n && i < 8; i++) {
			for (int j = 0; j < f->nsyncs; j++)
				if (f->syncs[j].handle == handles[i] &&
				    f->syncs[j].timeline && chance(90))
					points[i] = ++f->syncs[j].point;
		}
		a.handles = array_ptr(handles);
		a.points = array_ptr(points);
		a.count_handles = n;
		a.flags = query && chance(50) ? DRM_SYNCOBJ_QUERY_FLAGS_LAST_SUBMITTED : 0;
		if (chance(3))
			a.flags = (uint32_t)rnd();
		file_ioctl(f, query ? DRM_IOCTL_SYNCOBJ_QUERY :
				      DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL, &a);
	}
}

static void op_syncobj_transfer(struct file *f)
{
	struct drm_syncobj_transfer x = { 0 };
	struct sync *src = some_sync(f), *dst = some_sync(f);

	x.src_handle = src && chance(90) ? src->handle : some_sync_handle(f);
	x.src_point = some_point(src);
	x.dst_handle = dst && chance(90) ? dst->handle : some_sync_handle(f);
	x.dst_point = dst && dst->timeline && chance(90) ? ++dst->point :
		      some_point(dst);
	/* waiting for a submission takes seconds: rarely */
	x.flags = chance(2) ? DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT : 0;
	if (chance(2))
		x.flags = (uint32_t)rnd() & ~DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
	x.pad = mostly_zero(2);
	file_ioctl(f, DRM_IOCTL_SYNCOBJ_TRANSFER, &x);
}

/* A syncobj as an fd, or its fence as a sync_file. */
static void op_syncobj_export(struct file *f)
{
	struct drm_syncobj_handle h = { 0 };

	h.handle = some_sync_handle(f);
	h.flags = chance(50) ? DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE : 0;
	if (chance(3))
		h.flags = (uint32_t)rnd();
	h.pad = mostly_zero(2);
	h.fd = chance(95) ? 0 : (int)rnd();
	if (!file_ioctl(f, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h))
		keep_shared(h.fd, h.flags ? SYNC_FILE : SYNCOBJ_FD);
}

/* A syncobj fd as a new handle, or a sync_file into one the file has. */
static void op_syncobj_import(struct file *f)
{
	struct drm_syncobj_handle h = { 0 };

	if (chance(50)) {
		h.fd = some_fd(SYNCOBJ_FD);
	} else {
		h.fd = some_fd(SYNC_FILE);
		h.flags = DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE;
		h.handle = some_sync_handle(f);
	}
	if (chance(3))
		h.flags = (uint32_t)rnd();
	h.pad = mostly_zero(2);
	if (!file_ioctl(f, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &h) && !h.flags)
		keep_sync(f, h.handle, chance(50));
}

/* ------------------------------------------------------------------ */
/* Sharing buffers */

static void op_prime_export(struct file *f)
{
	struct drm_prime_handle p = { 0 };
	int i;

	p.handle = some_bo_handle(f, &i);
	p.flags = chance(80) ? DRM_CLOEXEC | DRM_RDWR : DRM_CLOEXEC;
	if (chance(3))
		p.flags = (uint32_t)rnd();
	if (!file_ioctl(f, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p))
		keep_shared(p.fd, DMABUF);
}

/* A dma-buf into this file: of this device, the other one, or anything. */
static void op_prime_import(struct file *f)
{
	struct drm_prime_handle p = { 0 };
	struct drm_simaccel_bo_info info = { 0 };

	p.fd = some_fd(DMABUF);
	p.flags = mostly_zero(2);
	if (file_ioctl(f, DRM_IOCTL_PRIME_FD_TO_HANDLE, &p))
		return;
	info.handle = p.handle;
	if (!file_ioctl(f, DRM_IOCTL_SIMACCEL_BO_INFO, &info))
		keep_bo(f, (struct bo){ p.handle, info.kind, info.dev_addr,
					info.size, info.mmap_offset });
}

/* An fd of the pool, or a device file, to whichever process receives it. */
static void op_send_fd(void)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct msghdr m = { 0 };
	struct shared *s = some_shared(0);
	struct file *f = some_file();
	struct cmsghdr *c;
	struct iovec iov;
	uint8_t kind;
	int fd;

	if (f && (!s || chance(20))) {
		fd = f->fd;
		kind = DEVICE_FILE;
	} else if (s) {
		fd = s->fd;
		kind = (uint8_t)s->kind;
	} else {
		return;
	}
	iov = (struct iovec){ &kind, 1 };
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	counted(sendmsg(xfer[0], &m, MSG_DONTWAIT | MSG_NOSIGNAL) != 1);
	t.passed++;
}

/* A device file received: a new file of this process, if it has room. */
static void adopt_device_file(int fd)
{
	for (int i = 0; i < MAX_FDS; i++) {
		struct file *f = &files[i];

		if (f->fd >= 0)
			continue;
		forget_file(f);
		f->fd = fd;
		f->dev = device_of_fd(fd);
		return;
	}
	close(fd);
}

static void op_recv_fd(void)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct msghdr m = { 0 };
	struct cmsghdr *c;
	struct iovec iov;
	uint8_t kind;
	int fd;

	iov = (struct iovec){ &kind, 1 };
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	if (recvmsg(xfer[1], &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1) {
		t.err++;
		return;
	}
	t.ok++;
	c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	if (kind == DEVICE_FILE)
		adopt_device_file(fd);
	else
		keep_shared(fd, (enum shared_kind)kind);
}

static void op_close_shared(void)
{
	if (npool) {
		int i = (int)below((uint64_t)npool);

		close(pool[i].fd);
		pool[i] = pool[--npool];
	}
}

/* ------------------------------------------------------------------ */
/* The rest */

/* Any ioctl number of DRM's type, any size, any bytes. */
static void op_garbage(struct file *f)
{
	uint8_t buf[512];
	unsigned long nr, num;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	/*
	 * Mostly the driver's range, where the checks are its own. Not
	 * GET_UNIQUE and GET_MAGIC: DRM core (6.12) dereferences the master
	 * that accel files never have, an oops for any user (a bug of DRM's,
	 * not of the driver).
	 */
	num = chance(70) ? DRM_COMMAND_BASE + below(DRM_SIMACCEL_MEM_INFO + 3) :
			   below(256);
	if (num == _IOC_NR(DRM_IOCTL_GET_UNIQUE) ||
	    num == _IOC_NR(DRM_IOCTL_GET_MAGIC))
		num = _IOC_NR(DRM_IOCTL_VERSION);
	nr = _IOC(below(4), chance(95) ? DRM_IOCTL_BASE : below(256), num,
		  below(sizeof(buf)));
	file_ioctl(f, nr, chance(95) ? (void *)buf : (void *)forbidden);
}

static void op_poll(struct file *f)
{
	struct pollfd p[2] = { { .fd = f->fd, .events = POLLIN } };
	struct shared *s = some_shared(SYNC_FILE);

	p[1].fd = s ? s->fd : -1;
	p[1].events = POLLIN;
	counted(poll(p, 2, 0) < 0);
}

/*
 * What a sync_file answers by itself, whatever became of the device, the
 * module's jobs and the file that made it: its fences' names and states
 * (SYNC_IOC_FILE_INFO, with room for some of them or none), or a merge
 * with another sync_file, kept.
 */
static void op_sync_file(void)
{
	struct sync_fence_info fences[4];
	struct sync_file_info info = { 0 };
	struct sync_merge_data merge = { .name = "ioctl_fuzz" };
	int fd = some_fd(SYNC_FILE), ret;

	if (chance(30)) {
		merge.fd2 = some_fd(SYNC_FILE);
		merge.flags = mostly_zero(5);
		ret = ioctl(fd, SYNC_IOC_MERGE, &merge);
		counted(ret);
		if (!ret)
			keep_shared(merge.fence, SYNC_FILE);
		return;
	}
	info.num_fences = (uint32_t)below(5);
	info.sync_fence_info = info.num_fences ? (uintptr_t)fences : 0;
	if (chance(5))
		info.sync_fence_info = (uintptr_t)forbidden;
	info.flags = mostly_zero(5);
	counted(ioctl(fd, SYNC_IOC_FILE_INFO, &info));
}

/* The fault_inject file of one of the device's hardware queues. */
static void fault_path(int d, unsigned int q, char *path, size_t len)
{
	snprintf(path, len, "/sys/kernel/debug/accel/%.63s/q%u/fault_inject",
		 devs[d].pci, q);
}

/* Make a hardware queue fail or stall for a while (root only). */
static void op_fault(struct file *f)
{
	static const char *const values[] = { "1", "2", "3", "0x10000", "0" };
	char path[160];

	fault_path(f->dev, (unsigned int)below(devs[f->dev].num_queues + 1),
		   path, sizeof(path));
	if (!write_file(path, values[below(5)]))
		t.faults++;
}

/* Leave no fault armed for whatever runs next. */
static void disarm_faults(void)
{
	char path[160];

	for (int d = 0; d < ndevs; d++) {
		for (unsigned int q = 0; q < devs[d].num_queues; q++) {
			fault_path(d, q, path, sizeof(path));
			if (write_file(path, "0") && errno != ENOENT)
				perror(path);
		}
	}
}

/*
 * Become the worker's ordinary user, with an ordinary user's limit on
 * locked memory: the files already open stay usable. With --kernel-faults
 * the new credentials may not be allocated: then it stays root, and tries
 * again at its next chance.
 */
static void drop_privileges(void)
{
	const struct rlimit memlock = { USER_MEMLOCK, USER_MEMLOCK };

	if (getuid() != 0)
		return;
	if (setrlimit(RLIMIT_MEMLOCK, &memlock) || setgroups(0, NULL) ||
	    setresgid(user, user, user) || setresuid(user, user, user)) {
		counted(-1);
		/* all of it or none: a root uid with a user's gid is neither */
		if (getuid() == 0 && getgid() != 0 && setresgid(0, 0, 0))
			_exit(2);
		return;
	}
	counted(0);
}

static void run_ops(unsigned long n);

/* A child shares the files (and so their buffers), acts, and dies. */
static void op_fork(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return;
	if (pid == 0) {
		rng ^= (uint64_t)getpid() << 32;
		drop_at = ULONG_MAX;
		run_ops(below(40));
		_exit(0);
	}
	if (chance(50)) {
		usleep((useconds_t)below(3000));
		kill(pid, SIGKILL);
	}
	if (waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
	    WTERMSIG(status) != SIGKILL)
		t.crashes++;
}

static void (*const file_ops[])(struct file *) = {
	op_info, op_mem_info, op_bo_create, op_bo_create, op_bo_create,
	op_gem_close, op_gem_close, op_userptr, op_userptr, op_bo_info,
	op_flink, op_mmap, op_mmap, op_queue, op_submit, op_submit, op_submit,
	op_submit, op_submit, op_queue_query, op_syncobj_create,
	op_syncobj_create, op_syncobj_destroy, op_syncobj_wait,
	op_syncobj_array, op_syncobj_array, op_syncobj_transfer,
	op_syncobj_export, op_syncobj_import, op_prime_export,
	op_prime_export, op_prime_import, op_prime_import, op_garbage, op_poll,
};

static void (*const process_ops[])(void) = {
	op_munmap, op_touch, op_touch, op_send_fd, op_recv_fd, op_close_shared,
	op_sync_file,
};

static void run_ops(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		struct file *f = some_file();

		t.ops++;
		if (t.ops >= drop_at && getuid() == 0)
			drop_privileges();
		/* a file whose device went away: mostly let go of it */
		if (f && f->gone && chance(30)) {
			close(f->fd);
			forget_file(f);
			continue;
		}
		if (!f || chance(2)) {
			op_open();
		} else if (chance(1)) {
			op_close();
		} else if (chance(1)) {
			op_fork();
		} else if (chance(2)) {
			op_fault(f);
		} else if (chance(8)) {
			process_ops[below(sizeof(process_ops) / sizeof(process_ops[0]))]();
		} else {
			file_ops[below(sizeof(file_ops) / sizeof(file_ops[0]))](f);
		}
	}
}

/* ------------------------------------------------------------------ */
/* The campaign */

static bool kernel_faults, verbose;

static void *anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		_exit(2);
	return p;
}

/* The totals, in one write; a pipe buffer may fail under --kernel-faults. */
static void report(int report_fd)
{
	for (int tries = 0; tries < 100; tries++) {
		if (write(report_fd, &t, sizeof(t)) == sizeof(t))
			return;
		usleep(10000);
	}
	_exit(2);
}

/*
 * One worker: as root, as nobody from the start, or root until some op
 * (the files it opened as root stay open).
 */
static void worker(uint64_t seed, unsigned long n, int report_fd)
{
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	for (int i = 0; i < MAX_FDS; i++)
		forget_file(&files[i]);
	scratch = anon(SCRATCH, PROT_READ | PROT_WRITE);
	rodata = anon(16 * PAGE, PROT_READ);
	forbidden = anon(PAGE, PROT_NONE);
	hole = anon(PAGE, PROT_READ | PROT_WRITE);
	munmap(hole, PAGE);
	catch_faults();
	/* the kernel's faults from here: the setup above is not under test */
	if (kernel_faults && write_file("/proc/self/make-it-fail", "1"))
		_exit(2);
	user = FIRST_USER + (uid_t)below(2);
	switch (below(4)) {
	case 0:
		drop_privileges();
		if (getuid() == 0)	/* refused (--kernel-faults): later */
			drop_at = 1;
		break;
	case 1:
	case 2:
		drop_at = 1 + below(n + 1);
		break;
	}
	run_ops(n);
	report(report_fd);
	_exit(t.crashes ? 3 : 0);
}

/* VRAM and pinned host memory in use on device @d, by everyone. */
static int usage(int d, uint64_t *vram, uint64_t *pinned)
{
	struct drm_simaccel_mem_info m = { .flags = DRM_SIMACCEL_MEM_INFO_SETTLE };
	int fd = open_device(d);
	int ret;

	*vram = *pinned = 0;
	if (fd < 0)
		return -1;
	ret = ioctl(fd, DRM_IOCTL_SIMACCEL_MEM_INFO, &m);
	close(fd);
	*vram = m.vram_used;
	*pinned = m.host_pinned;
	return ret;
}

/* The workers and what the parent does to them. */
struct campaign {
	uint64_t seed;
	unsigned long ops_each;
	int report_rd, report_fd;	/* the pipe the workers report through */
	int nworkers;
	pid_t pid[MAX_WORKERS];
	int64_t kill_at_ms[MAX_WORKERS];	/* -1: never */
	unsigned long killed, unbinds, rebind_failures, crashes;
	unsigned long resets, device_faults;
};

static int64_t now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec * 1000ll + now.tv_nsec / 1000000;
}

/*
 * The pinned host memory of the workers' buffers is nobody's RSS, so the
 * OOM killer, which a small VM's memory does call in, would pick among
 * processes of equal size: the campaign's controller must not be one of
 * them (its death would end the run with no verdict). Root may lower its
 * own score; elsewhere the write fails and nothing changes. Workers set
 * theirs back (raising needs no privilege) or do not run.
 */
static bool set_oom_score_adj(const char *adj)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, adj, strlen(adj)) == (ssize_t)strlen(adj);
	close(fd);
	return ok;
}

static pid_t spawn(struct campaign *c, uint64_t seed)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* a worker the OOM killer could not take would be worse */
		if (!set_oom_score_adj("0"))
			_exit(2);
		close(c->report_rd);
		worker(seed, c->ops_each, c->report_fd);
	}
	return pid;
}

/*
 * Reap whatever ended (workers, and the orphans of killed ones); how many
 * workers live. SIGKILL is ours (or the OOM killer's, which the kernel log
 * shows); any other signal is a crash of the fuzzer.
 */
static int reap(struct campaign *c, bool block)
{
	int status, alive = 0;
	pid_t pid;

	while ((pid = waitpid(-1, &status, block ? 0 : WNOHANG)) > 0) {
		for (int w = 0; w < c->nworkers; w++)
			if (c->pid[w] == pid)
				c->pid[w] = 0;
		if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
			printf("ioctl_fuzz: CRASH: process %d died of signal %d\n",
			       pid, WTERMSIG(status));
			c->crashes++;
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
			printf("ioctl_fuzz: CRASH: a child of process %d died of a signal\n",
			       pid);
			c->crashes++;
		}
	}
	for (int w = 0; w < c->nworkers; w++)
		alive += c->pid[w] > 0;
	return alive;
}

/* Take device @d from the driver for a while, under the workers' feet. */
static void unbind_and_rebind(struct campaign *c, int d)
{
	if (write_file(DRIVER_DIR "/unbind", devs[d].pci))
		return;
	c->unbinds++;
	usleep((useconds_t)below(300000));
	for (int tries = 0; tries < 10 && write_file(DRIVER_DIR "/bind", devs[d].pci);
	     tries++)
		usleep(100000);
	make_nodes_accessible();
}

static void pci_reset_path(int d, char *path, size_t len)
{
	snprintf(path, len, "/sys/bus/pci/devices/%.63s/reset", devs[d].pci);
}

/*
 * Make device @d fail as a whole under the workers' feet: a reset through
 * the PCI core, or a hang or a fatal error, for which the driver resets it.
 */
static void disturb_device(struct campaign *c, int d)
{
	char path[160];

	if (chance(34)) {
		pci_reset_path(d, path, sizeof(path));
		if (!write_file(path, "1"))
			c->resets++;
		return;
	}
	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%.63s/fault_inject",
		 devs[d].pci);
	if (!write_file(path, chance(50) ? "1" : "2"))
		c->device_faults++;
}

/* A hang no job ran into is still there: a reset ends it. */
static void reset_devices(void)
{
	char path[160];

	for (int d = 0; d < ndevs; d++) {
		pci_reset_path(d, path, sizeof(path));
		if (write_file(path, "1"))
			perror(path);
	}
}

/* Every device bound again, as at the start. */
static bool all_bound(struct campaign *c)
{
	bool ok = true;

	for (int d = 0; d < ndevs; d++) {
		for (int tries = 0; tries < 20 && !is_bound(d); tries++) {
			write_file(DRIVER_DIR "/bind", devs[d].pci);
			usleep(100000);
		}
		if (!is_bound(d)) {
			printf("ioctl_fuzz: %s could not be bound again\n",
			       devs[d].pci);
			c->rebind_failures++;
			ok = false;
		}
	}
	return ok;
}

/*
 * The parent: kills the workers chosen to die midway (once each, starting
 * another in its place) and unbinds devices now and then, until every
 * worker has ended.
 */
static void control(struct campaign *c)
{
	bool can_unbind = access(DRIVER_DIR "/unbind", W_OK) == 0;
	int64_t start = now_ms();

	while (reap(c, false)) {
		int64_t elapsed = now_ms() - start;

		usleep(10000 + (useconds_t)below(40000));
		for (int w = 0; w < c->nworkers; w++) {
			if (c->pid[w] <= 0 || c->kill_at_ms[w] < 0 ||
			    elapsed < c->kill_at_ms[w])
				continue;
			kill(c->pid[w], SIGKILL);
			waitpid(c->pid[w], NULL, 0);
			c->killed++;
			c->kill_at_ms[w] = -1;
			c->pid[w] = spawn(c, (c->seed + (uint64_t)w) ^ 0xdeadbeef);
		}
		if (can_unbind && chance(4))
			unbind_and_rebind(c, (int)below((uint64_t)ndevs));
		else if (can_unbind && chance(2))
			disturb_device(c, (int)below((uint64_t)ndevs));
	}
}

/* --verbose: what the run did, on stderr */
static void report_details(const struct campaign *c, const struct totals *sum)
{
	fprintf(stderr, "ioctl_fuzz: %lu unbinds, %lu PCI resets, %lu device faults, %lu signals caught in mappings, %lu fds passed over the socket\n",
		c->unbinds, c->resets, c->device_faults, sum->caught, sum->passed);
	for (int i = 0; i < 256; i++)
		if (sum->nr_ok[i] || sum->nr_err[i])
			fprintf(stderr, "ioctl_fuzz: ioctl nr %#04x: %u ok, %u failed\n",
				i, sum->nr_ok[i], sum->nr_err[i]);
	for (int i = 0; i < 128; i++)
		if (sum->submit_errno[i])
			fprintf(stderr, "ioctl_fuzz: SUBMIT %s: %u\n",
				strerror(i), sum->submit_errno[i]);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, 'n' },
		{ "procs", required_argument, NULL, 'p' },
		{ "kernel-faults", no_argument, NULL, 'k' },
		{ "verbose", no_argument, NULL, 'v' },
		{ 0 }
	};
	uint64_t seed = (uint64_t)time(NULL), base_vram[MAX_DEVS], base_pinned[MAX_DEVS];
	unsigned long ops = 20000, procs = 4;
	struct campaign camp = { 0 };
	struct totals sum = { 0 };
	int c, pipefd[2], leaks = 0;
	bool bound;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 's')
			seed = strtoull(optarg, NULL, 0);
		else if (c == 'n')
			ops = strtoul(optarg, NULL, 0);
		else if (c == 'p')
			procs = strtoul(optarg, NULL, 0);
		else if (c == 'k')
			kernel_faults = true;
		else if (c == 'v')
			verbose = true;
		else
			return 64;
	}
	if (!procs || procs > MAX_WORKERS)
		return 64;
	find_devices();
	if (!ndevs) {
		printf("ioctl_fuzz: no /dev/accel/accelN of simaccel\n");
		return 1;
	}
	printf("ioctl_fuzz: seed %llu, %lu operations in %lu processes on %d devices (reproduce with --seed %llu --ops %lu --procs %lu)\n",
	       (unsigned long long)seed, ops, procs, ndevs,
	       (unsigned long long)seed, ops, procs);
	fflush(stdout);
	make_nodes_accessible();
	for (int d = 0; d < ndevs; d++)
		usage(d, &base_vram[d], &base_pinned[d]);
	if (pipe(pipefd) || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, xfer))
		return 1;
	/* orphans of killed workers come back here, to be waited for */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	(void)set_oom_score_adj("-1000");	/* refused unprivileged */
	rng = seed | 1;
	camp.seed = seed;
	camp.ops_each = ops / procs;
	camp.report_rd = pipefd[0];
	camp.report_fd = pipefd[1];
	camp.nworkers = (int)procs;
	for (int w = 0; w < camp.nworkers; w++) {
		/* kill some workers midway: their files close under them */
		camp.kill_at_ms[w] = chance(25) ? (int64_t)below(3000) : -1;
		camp.pid[w] = spawn(&camp, seed + (uint64_t)w);
	}
	control(&camp);
	/* what sits in the socket goes with it; orphans are waited for */
	close(pipefd[1]);
	close(xfer[0]);
	close(xfer[1]);
	reap(&camp, true);
	bound = all_bound(&camp);
	disarm_faults();
	if (bound)
		reset_devices();
	for (;;) {
		struct totals w;

		if (read(pipefd[0], &w, sizeof(w)) != sizeof(w))
			break;
		sum.ops += w.ops;
		sum.ok += w.ok;
		sum.err += w.err;
		sum.faults += w.faults;
		sum.caught += w.caught;
		sum.passed += w.passed;
		for (int i = 0; i < 256; i++) {
			sum.nr_ok[i] += w.nr_ok[i];
			sum.nr_err[i] += w.nr_err[i];
		}
		for (int i = 0; i < 128; i++)
			sum.submit_errno[i] += w.submit_errno[i];
	}
	/*
	 * A killed worker's jobs may still sit behind a stalled queue: their
	 * memory comes back when the time-out fails them (job_timeout_ms,
	 * 2 s by default, detected within twice that) or when drm_sched's
	 * grace for an exiting process ends; SETTLE waits for the clearings
	 * of freed VRAM. Allow far more before calling it a leak.
	 */
	for (int tries = 0; tries < 300 && bound; tries++) {
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
			       devs[d].pci, (unsigned long long)vram,
			       (unsigned long long)base_vram[d],
			       (unsigned long long)pinned,
			       (unsigned long long)base_pinned[d]);
	}
	if (verbose)
		report_details(&camp, &sum);
	printf("ioctl_fuzz: %lu operations (%lu succeeded, %lu refused or failed), %lu faults injected, %lu workers killed midway; memory %s\n",
	       sum.ops, sum.ok, sum.err, sum.faults, camp.killed,
	       leaks ? "LEAKED" : "back at its baseline");
	leaks += !bound + (int)camp.crashes;
	printf("%s: ioctl_fuzz seed %llu\n", leaks ? "not ok" : "ok",
	       (unsigned long long)seed);
	return leaks ? 1 : 0;
}
