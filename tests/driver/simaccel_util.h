/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the simaccel.ko kselftests: the ioctls as functions that
 * return 0 or -errno, and what the tests read from sysfs and fdinfo.
 */
#ifndef SIMACCEL_UTIL_H
#define SIMACCEL_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../../uapi/simaccel_accel.h"

#define NODE		"/dev/accel/accel0"
#define CLASS_DEVICE	"/sys/class/accel/accel0/device"
#define DRIVER_DIR	"/sys/bus/pci/drivers/simaccel"

static inline int bo_create_aligned(int fd, uint64_t size, uint64_t align,
				    uint32_t kind,
				    struct drm_simaccel_bo_create *out)
{
	*out = (struct drm_simaccel_bo_create){
		.size = size, .align = align, .kind = kind,
	};
	return ioctl(fd, DRM_IOCTL_SIMACCEL_BO_CREATE, out) ? -errno : 0;
}

static inline int bo_create(int fd, uint64_t size, uint32_t kind,
			    struct drm_simaccel_bo_create *out)
{
	return bo_create_aligned(fd, size, 0, kind, out);
}

static inline int gem_close(int fd, uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	return ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c) ? -errno : 0;
}

static inline int queue_create(int fd, uint32_t *handle)
{
	struct drm_simaccel_queue_create q = { 0 };
	int ret = ioctl(fd, DRM_IOCTL_SIMACCEL_QUEUE_CREATE, &q) ? -errno : 0;

	*handle = q.handle;
	return ret;
}

static inline int queue_destroy(int fd, uint32_t handle)
{
	struct drm_simaccel_queue_destroy q = { .handle = handle };

	return ioctl(fd, DRM_IOCTL_SIMACCEL_QUEUE_DESTROY, &q) ? -errno : 0;
}

static inline int submit(int fd, uint32_t queue, uint32_t flags,
			 const struct drm_simaccel_op *ops, uint32_t count,
			 const struct drm_simaccel_sync *in, uint32_t nin,
			 const struct drm_simaccel_sync *out)
{
	struct drm_simaccel_submit s = {
		.queue = queue, .flags = flags,
		.ops = (uintptr_t)ops, .op_count = count,
		.in_syncs = (uintptr_t)in, .in_sync_count = nin,
	};

	if (out)
		s.out_sync = *out;
	return ioctl(fd, DRM_IOCTL_SIMACCEL_SUBMIT, &s) ? -errno : 0;
}

/* One copy or fill, waited for: the job's error, or the call's. */
static inline int run_op(int fd, uint32_t queue, uint32_t op, uint32_t flags,
			 uint64_t dst, uint64_t src, uint64_t size)
{
	struct drm_simaccel_op o = {
		.op = op, .flags = flags, .dst = dst, .src = src, .size = size,
	};

	return submit(fd, queue, DRM_SIMACCEL_SUBMIT_WAIT, &o, 1, NULL, 0, NULL);
}

/* Export @handle of @fd as a dma-buf into *@dmabuf: 0 or -errno. */
static inline int prime_export(int fd, uint32_t handle, int *dmabuf)
{
	struct drm_prime_handle p = { .handle = handle, .flags = DRM_CLOEXEC | DRM_RDWR };
	int ret = ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p) ? -errno : 0;

	*dmabuf = p.fd;
	return ret;
}

/* Import @dmabuf into @fd, its handle into *@handle: 0 or -errno. */
static inline int prime_import(int fd, int dmabuf, uint32_t *handle)
{
	struct drm_prime_handle p = { .fd = dmabuf };
	int ret = ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &p) ? -errno : 0;

	*handle = p.handle;
	return ret;
}

/* The PCI address behind accel0, from its class device's link (bound). */
static inline int pci_addr(char *addr, size_t len)
{
	char target[512];
	ssize_t n = readlink(CLASS_DEVICE, target, sizeof(target) - 1);

	if (n < 0)
		return -1;
	target[n] = 0;
	snprintf(addr, len, "%s", strrchr(target, '/') + 1);
	return 0;
}

static inline int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/*
 * The node of the device at a PCI address: a rebound device may get a new
 * minor while files of its old binding (or dma-bufs) hold the old one.
 */
static inline int open_by_pci(const char *addr)
{
	char path[300];
	struct dirent *e;
	DIR *d;
	int fd = -1;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/accel", addr);
	d = opendir(path);
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "accel", 5)) {
			snprintf(path, sizeof(path), "/dev/accel/%s", e->d_name);
			fd = open(path, O_RDWR | O_CLOEXEC);
			break;
		}
	if (d)
		closedir(d);
	return fd;
}

/* The PCI addresses of the first two devices bound to the driver. */
static inline int bound_devices(char addr[2][64])
{
	struct dirent *e;
	DIR *d = opendir(DRIVER_DIR);
	int n = 0;

	while (d && n < 2 && (e = readdir(d)))
		if (!strncmp(e->d_name, "0000:", 5))
			snprintf(addr[n++], 64, "%.63s", e->d_name);
	if (d)
		closedir(d);
	return n == 2 ? 0 : -1;
}

/* QUEUE_QUERY without the recent failures. */
static inline int queue_query(int fd, uint32_t queue, struct drm_simaccel_queue_query *q)
{
	*q = (struct drm_simaccel_queue_query){ .handle = queue };
	return ioctl(fd, DRM_IOCTL_SIMACCEL_QUEUE_QUERY, q) ? -errno : 0;
}

static inline int syncobj_create(int fd, uint32_t *handle)
{
	struct drm_syncobj_create c = { 0 };
	int ret = ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &c) ? -errno : 0;

	*handle = c.handle;
	return ret;
}

/* The debugfs folder of the device at PCI address @addr (mounted if not). */
static inline const char *debugfs_dir_of(const char *addr, char *buf, size_t len)
{
	mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	snprintf(buf, len, "/sys/kernel/debug/accel/%s", addr);
	return buf;
}

/* accel0's debugfs folder. */
static inline const char *debugfs_dir(char *buf, size_t len)
{
	char addr[64];

	if (pci_addr(addr, sizeof(addr)))
		return NULL;
	return debugfs_dir_of(addr, buf, len);
}

/*
 * Inject @what into every hardware queue of the device at PCI address
 * @addr (a queue runs on any of them).
 */
static inline int inject_all_of(const char *addr, const char *what)
{
	char dir[256], path[300];
	int q, done = 0;

	debugfs_dir_of(addr, dir, sizeof(dir));
	for (q = 0; q < 16; q++) {
		snprintf(path, sizeof(path), "%s/q%d/fault_inject", dir, q);
		if (access(path, F_OK))
			break;
		if (write_file(path, what))
			return -1;
		done++;
	}
	return done ? 0 : -1;
}

/* The same, into accel0. */
static inline int inject_all(const char *what)
{
	char addr[64];

	if (pci_addr(addr, sizeof(addr)))
		return -1;
	return inject_all_of(addr, what);
}

/*
 * Whether process @pid sleeps in system call @nr (x86-64 numbers) with
 * @arg among its arguments, if @arg: /proc/PID/syscall names the call and
 * its arguments while it sleeps.
 */
static inline bool in_syscall(pid_t pid, long nr, const char *arg)
{
	char path[64], line[256] = "", call[24];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	snprintf(call, sizeof(call), "%ld ", nr);
	return !strncmp(line, call, strlen(call)) && (!arg || strstr(line, arg));
}

/* Wait up to 2 s for @pid to sleep in system call @nr (see in_syscall()). */
static inline bool wait_in_syscall(pid_t pid, long nr, const char *arg)
{
	for (int i = 0; i < 100; i++) {
		if (in_syscall(pid, nr, arg))
			return true;
		usleep(20000);
	}
	return false;
}

/* Whether process @pid is in the ioctl @cmd (x86-64: system call 16). */
static inline bool in_ioctl(pid_t pid, unsigned long cmd)
{
	char arg[32];

	snprintf(arg, sizeof(arg), " %#lx ", cmd);
	return in_syscall(pid, 16, arg);
}

/* Wait up to 2 s for @pid to be in the ioctl @cmd. */
static inline bool wait_in_ioctl(pid_t pid, unsigned long cmd)
{
	char arg[32];

	snprintf(arg, sizeof(arg), " %#lx ", cmd);
	return wait_in_syscall(pid, 16, arg);
}

static inline double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* A job's fence, through its syncobj, as a sync_file: its fd or -errno. */
static inline int sync_file_export(int fd, uint32_t syncobj)
{
	struct drm_syncobj_handle h = {
		.handle = syncobj,
		.flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE,
		.fd = -1,
	};

	return ioctl(fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h) ? -errno : h.fd;
}

/* 0 if the binary syncobj's fence has signalled, -ETIME if not (yet). */
static inline int syncobj_signalled(int fd, uint32_t handle)
{
	struct drm_syncobj_wait w = {
		.handles = (uintptr_t)&handle, .count_handles = 1,
		.timeout_nsec = 0,
	};

	return ioctl(fd, DRM_IOCTL_SYNCOBJ_WAIT, &w) ? -errno : 0;
}

/* Wait up to 10 s for a syncobj's fence at @point (0: a binary syncobj). */
static inline int syncobj_wait(int fd, uint32_t handle, uint64_t point)
{
	struct timespec now;
	struct drm_syncobj_timeline_wait w = {
		.handles = (uintptr_t)&handle, .points = (uintptr_t)&point,
		.count_handles = 1,
		.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
	};

	clock_gettime(CLOCK_MONOTONIC, &now);
	w.timeout_nsec = (now.tv_sec + 10) * 1000000000ll + now.tv_nsec;
	return ioctl(fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &w) ? -errno : 0;
}

/*
 * Slow work ahead of the next clearing on a throttled device (16 MB/s): a
 * 64 MiB VRAM buffer, freed at once, whose clearing takes 4 s. The
 * kernel's clearings run in order, ahead of users' jobs, so the next one
 * waits behind it (a user's jobs would not hold it up: a file has only a
 * window of work on the hardware). 0 or -errno.
 */
static inline int queue_slow_clearing(int fd)
{
	struct drm_simaccel_bo_create big;
	int ret = bo_create(fd, 64 << 20, DRM_SIMACCEL_BO_VRAM, &big);

	return ret ? ret : gem_close(fd, big.handle);
}

/*
 * Wait until no clearing is under way and no finished job holds buffers:
 * MEM_INFO's SETTLE waits two seconds at most, so ask again while it took
 * that long (a minute in all). 0 or -errno.
 */
static inline int settle(int fd)
{
	struct drm_simaccel_mem_info mem = { .flags = DRM_SIMACCEL_MEM_INFO_SETTLE };

	for (int i = 0; i < 30; i++) {
		double start = seconds();

		if (ioctl(fd, DRM_IOCTL_SIMACCEL_MEM_INFO, &mem))
			return -errno;
		if (seconds() - start < 1.5)
			return 0;
	}
	return -ETIME;
}

/* Up to @max bytes of the file at @path, NUL-terminated, malloc'd; NULL if unreadable. */
static inline char *read_text(const char *path, size_t max)
{
	char *buf = calloc(1, max + 1);
	int fd = open(path, O_RDONLY);
	size_t len = 0;
	ssize_t n;

	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while (len < max && (n = read(fd, buf + len, max - len)) > 0)
		len += n;
	close(fd);
	return buf;
}

/* A device total from sysfs (vram_used, host_pinned, ...); -1 if absent. */
/* The number in the file at @path; -1 if it cannot be opened. */
static inline long long read_number(const char *path)
{
	char buf[64] = "";
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtoll(buf, NULL, 0);
}

static inline long long device_total(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), CLASS_DEVICE "/%s", name);
	return read_number(path);
}

/* The value of a DRM fdinfo key of @fd. */
static inline bool fdinfo(int fd, const char *key, char *val, size_t len)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		snprintf(val, len, "%s", line + klen + 1 + strspn(line + klen + 1, " \t"));
		val[strcspn(val, "\n")] = 0;
		found = true;
	}
	fclose(f);
	return found;
}

/* An fdinfo size ("123", "4 KiB", "8 MiB") in bytes; ~0 if absent. */
static inline uint64_t fdinfo_bytes(int fd, const char *key)
{
	char val[64], unit[8] = "";
	unsigned long long n;

	if (!fdinfo(fd, key, val, sizeof(val)) ||
	    sscanf(val, "%llu %7s", &n, unit) < 1)
		return ~0ull;
	if (!strcmp(unit, "KiB"))
		return n << 10;
	if (!strcmp(unit, "MiB"))
		return n << 20;
	return unit[0] ? ~0ull : n;
}

/* A number from fdinfo ("123 ns" gives 123); -1 if absent. */
static inline long long fdinfo_num(int fd, const char *key)
{
	char val[64];

	return fdinfo(fd, key, val, sizeof(val)) ? strtoll(val, NULL, 10) : -1;
}

/* A device total of the device at PCI address @addr; -1 if absent. */
static inline long long device_total_of(const char *addr, const char *name)
{
	char path[300];

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", addr, name);
	return read_number(path);
}

/*
 * Wait up to @secs seconds for the device total @name of the device at
 * @addr to be @want (a buffer is let go in a work item once its last job
 * or mapping is gone); the last value read.
 */
static inline long long wait_device_total_of(const char *addr, const char *name,
					     long long want, double secs)
{
	double end = seconds() + secs;
	long long v;

	while ((v = device_total_of(addr, name)) != want && seconds() < end)
		usleep(20000);
	return v;
}

/* A /proc/meminfo line's value in KiB (Shmem, Unevictable, ...); -1 if absent. */
static inline long long meminfo_kib(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	long long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (v < 0 && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':')
			v = strtoll(line + klen + 1, NULL, 10);
	fclose(f);
	return v;
}

/*
 * Become an unprivileged user (nobody) with an RLIMIT_MEMLOCK of @limit
 * bytes, in a child of a root parent that keeps its open files. 0 or -1.
 */
static inline int as_nobody_with_memlock(uint64_t limit)
{
	struct rlimit r = { limit, limit };

	if (setrlimit(RLIMIT_MEMLOCK, &r) || setgid(65534) || setuid(65534))
		return -1;
	return 0;
}

/*
 * In a child, as nobody with an RLIMIT_MEMLOCK of @limit, pin @len bytes
 * at @buf into @fd; the handle in *@handle. 0 or the pin's -errno.
 */
static inline int pin_as_nobody(int fd, void *buf, size_t len, uint64_t limit,
				uint32_t *handle)
{
	int pipefd[2], status;
	uint32_t h = 0;
	pid_t pid;

	if (pipe(pipefd))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		struct drm_simaccel_bo_userptr u = {
			.user_addr = (uintptr_t)buf, .size = len,
		};
		int ret;

		if (as_nobody_with_memlock(limit))
			_exit(255);
		ret = ioctl(fd, DRM_IOCTL_SIMACCEL_BO_USERPTR, &u) ? errno : 0;
		if (write(pipefd[1], &u.handle, sizeof(u.handle)) != sizeof(u.handle))
			_exit(254);
		_exit(ret);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &h, sizeof(h)) != sizeof(h))
		h = 0;
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -ECHILD;
	if (handle)
		*handle = h;
	return -WEXITSTATUS(status);
}

/*
 * A child that lives as nobody until killed: the kernel keeps a user's
 * struct (and its count of pinned pages, locked_vm) only while something
 * of the user's lives, so a charge left behind shows only then. Its pid,
 * once it is nobody, or -1.
 */
static inline pid_t nobody_lives_on(void)
{
	int ready[2];
	pid_t pid;
	char c;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (!pid) {
		close(ready[0]);
		/* after setuid(), which clears it: it dies with the test */
		if (!as_nobody_with_memlock(0) && !prctl(PR_SET_PDEATHSIG, SIGKILL) &&
		    write(ready[1], "x", 1) == 1)
			pause();
		_exit(1);
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &c, 1) != 1) {
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(ready[0]);
	return pid;
}

/* Kill and reap @pid, a child. */
static inline void kill_child(pid_t pid)
{
	if (pid > 0 && !kill(pid, SIGKILL))
		waitpid(pid, NULL, 0);
}

/*
 * Unload simaccel.ko: the unload goes through once the last fence's free
 * has run (RCU).
 */
static inline int unload_module(void)
{
	for (int i = 0; i < 100; i++) {
		if (!syscall(SYS_delete_module, "simaccel", O_NONBLOCK))
			return 0;
		if (errno != EWOULDBLOCK)
			return -errno;
		usleep(50000);
	}
	return -EWOULDBLOCK;
}

#define TIMEOUT_PARAM	"/sys/module/simaccel/parameters/job_timeout_ms"

/*
 * Bind the device at PCI address @addr again, as @node: the old binding's
 * DRM device goes only with the last reference, which its jobs drop in
 * work items; until then its minor is taken and a new binding gets
 * another. Bound with another node, it is unbound and bound again, for
 * up to 10 s. Only for a device whose files are all closed.
 */
static inline int bind_as(const char *addr, const char *node)
{
	for (int tries = 0; tries < 100; tries++) {
		if (write_file(DRIVER_DIR "/bind", addr))
			return -1;
		if (!access(node, F_OK))
			return 0;
		if (write_file(DRIVER_DIR "/unbind", addr))
			return -1;
		usleep(100000);
	}
	return -1;
}

/* Bind accel0's device again with job_timeout_ms @ms. */
static inline int rebind_with_timeout(const char *ms)
{
	char addr[64];

	if (pci_addr(addr, sizeof(addr)) || write_file(TIMEOUT_PARAM, ms) ||
	    write_file(DRIVER_DIR "/unbind", addr) || bind_as(addr, NODE))
		return -1;
	return 0;
}

/* Load the module at @ko; it binds the devices. */
static inline int load_module(const char *ko)
{
	int fd = open(ko, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	/* the long autosuspend delay the VM runner loads it with */
	ret = syscall(SYS_finit_module, fd, "autosuspend_ms=60000", 0) ? -errno : 0;
	close(fd);
	for (int i = 0; !ret && access("/sys/bus/pci/drivers/simaccel/module", F_OK) && i < 100; i++)
		usleep(50000);
	return ret;
}

/* The guest's end of scripts/vm-run.sh --qmp: QMP commands to its QEMU. */
#define QMP_PORT	"/dev/accel-qmp"

/*
 * Send the QMP command @cmd (JSON on one line) to the VM's QEMU; its reply,
 * a line of JSON ({"return": ...} or {"error": ...}), in @reply. Returns
 * 0, -ENOENT without the channel, -ETIMEDOUT if no reply came in 30 s.
 */
static inline int qmp(const char *cmd, char *reply, size_t size)
{
	struct pollfd p = { .events = POLLIN };
	struct termios t;
	size_t n = 0;
	int ret = 0;

	p.fd = open(QMP_PORT, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (p.fd < 0)
		return -errno;
	/* bytes as they are: no echo, no line editing, no CR/LF mapping */
	if (tcgetattr(p.fd, &t) == 0) {
		cfmakeraw(&t);
		cfsetspeed(&t, B115200);
		tcsetattr(p.fd, TCSANOW, &t);
	}
	tcflush(p.fd, TCIOFLUSH);
	if (dprintf(p.fd, "%s\n", cmd) < 0)
		ret = -errno;
	while (!ret && n + 1 < size) {
		if (poll(&p, 1, 30000) <= 0) {
			ret = -ETIMEDOUT;
		} else if (read(p.fd, reply + n, 1) != 1) {
			ret = -EIO;
		} else if (reply[n] == '\n') {
			break;
		} else if (reply[n] != '\r') {
			n++;
		}
	}
	reply[n] = 0;
	close(p.fd);
	return ret;
}

/* An HMP command line through QMP's human-monitor-command; as qmp(). */
static inline int hmp(const char *line, char *reply, size_t size)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "{\"execute\": \"human-monitor-command\", "
		 "\"arguments\": {\"command-line\": \"%s\"}}", line);
	return qmp(cmd, reply, size);
}

static inline int is_accel_device(const struct dirent *d)
{
	char path[300], *id;
	bool accel;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", d->d_name);
	id = read_text(path, 32);
	accel = id && strtoul(id, NULL, 16) == 0xacc1;
	free(id);
	return accel;
}

/*
 * QEMU's id of the device at PCI address @addr: vm-run.sh gives the i-th
 * device the id acc<i>, behind the i-th root port, whose buses come in
 * that order. -1 if it is no accel device.
 */
static inline int qdev_id_of(const char *addr, char *id, size_t len)
{
	struct dirent **list;
	int i, n, found = -1;

	n = scandir("/sys/bus/pci/devices", &list, is_accel_device, alphasort);
	for (i = 0; i < n; i++) {
		if (!strcmp(list[i]->d_name, addr)) {
			snprintf(id, len, "acc%d", i);
			found = 0;
		}
		free(list[i]);
	}
	if (n >= 0)
		free(list);
	return found;
}

#endif /* SIMACCEL_UTIL_H */
