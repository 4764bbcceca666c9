// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel.ko: the fences a user holds outlive the device and keep the
 * module, as root in the VM.
 *
 * A job's outcome reaches users as a fence in a syncobj, and from there as
 * a sync_file, which any process may keep for ever and hand to other
 * drivers. Whatever happens to the device and the module meanwhile, the
 * sync_file answers SYNC_IOC_FILE_INFO and poll() and closes cleanly:
 * - a signalled job's fence, after its file is closed and the device
 *   unbound;
 * - a job's fence still pending when the device is unbound, which then
 *   signals with the job's error (ENODEV);
 * - a fence held while root unloads the module: the unload is refused
 *   until the sync_file is closed, and then goes through (with
 *   SIMACCEL_KO naming the module to load again afterwards; skipped
 *   without it);
 * - a syncobj exported as an fd of its own while its job is pending, its
 *   file closed, across unbind and bind, keeps the module and gives the
 *   job's error to a file of the device bound again;
 * - a sync_file that a killed process's pending job left signals (the
 *   job's time-out), whoever holds it;
 * - jobs in flight keep the module too, after their file is closed (on a
 *   throttled device, with SIMACCEL_SLOW_DEVICE and SIMACCEL_KO set);
 * - a queue's fences signal in seqno order, also when a job fails before
 *   it runs while an earlier one is still on the hardware and a later one
 *   could finish first on another hardware queue (on a throttled device,
 *   with SIMACCEL_SLOW_DEVICE set; skipped without it).
 * - a pending job's sync_file across unbind and bind, and a syncobj fd of
 *   a killed process's pending job, signal;
 * - like fences, a dma-buf, a mapping (VRAM or HOST), an import of a
 *   peer's buffer and a USERPTR pin keep the module while they exist,
 *   and the unload goes through once they are gone (SIMACCEL_KO).
 * A VM run fails on the oops or KASAN report that a dangling fence gives.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/sync_file.h>

#include "kselftest_harness.h"
#include "simaccel_util.h"

/*
 * The first accel node there is and its device's PCI address: a device
 * rebound while a file held its old node has a new one (other tests).
 */
static int first_node(char *node, size_t node_len, char *addr, size_t addr_len)
{
	char link[300], target[512];
	struct dirent *e;
	int ret = -ENODEV;
	ssize_t n;
	DIR *d = opendir("/sys/class/accel");

	if (!d)
		return -errno;
	while (ret && (e = readdir(d))) {
		if (strncmp(e->d_name, "accel", 5))
			continue;
		snprintf(link, sizeof(link), "/sys/class/accel/%s/device", e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		snprintf(addr, addr_len, "%s", strrchr(target, '/') + 1);
		snprintf(node, node_len, "/dev/accel/%s", e->d_name);
		ret = 0;
	}
	closedir(d);
	return ret;
}

/*
 * SYNC_IOC_FILE_INFO of a sync_file of one fence, which it describes in
 * @info: the status (1 signalled, 0 pending, -errno its error), or the
 * call's -errno.
 */
static int sync_file_status(int sf, struct sync_fence_info *info)
{
	struct sync_file_info fi = {
		.num_fences = 1, .sync_fence_info = (uintptr_t)info,
	};

	memset(info, 0, sizeof(*info));
	return ioctl(sf, SYNC_IOC_FILE_INFO, &fi) ? -errno : fi.status;
}

static bool sync_file_readable(int sf)
{
	struct pollfd p = { .fd = sf, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/*
 * On @fd, one fill of a HOST buffer whose fence goes to a new syncobj,
 * *@syncobj. With @stalled the device of @addr stalls the job first, so
 * that the fence is still pending.
 */
static int fill_into_a_syncobj(int fd, const char *addr, bool stalled, uint32_t *syncobj)
{
	struct drm_simaccel_bo_create bo;
	struct drm_simaccel_op op = { .op = DRM_SIMACCEL_OP_FILL, .size = 4096 };
	struct drm_simaccel_sync out = { 0 };
	uint32_t queue;
	int ret;

	ret = queue_create(fd, &queue) ?: bo_create(fd, 4096, DRM_SIMACCEL_BO_HOST, &bo) ?:
	      syncobj_create(fd, &out.handle);
	if (ret)
		return ret;
	op.dst = bo.dev_addr;
	if (stalled && inject_all_of(addr, "0x10000"))
		return -EIO;
	*syncobj = out.handle;
	return submit(fd, queue, stalled ? 0 : DRM_SIMACCEL_SUBMIT_WAIT, &op, 1, NULL, 0, &out);
}

/*
 * On a new file of @node, a fill (fill_into_a_syncobj()) whose fence is
 * exported as a sync_file; the file is closed.
 */
static int sync_file_of_a_job(const char *node, const char *addr, bool stalled)
{
	uint32_t syncobj;
	int fd, sf;

	fd = open(node, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	sf = fill_into_a_syncobj(fd, addr, stalled, &syncobj) ?: sync_file_export(fd, syncobj);
	close(fd);
	return sf;
}

static bool module_refused_unload(void)
{
	return syscall(SYS_delete_module, "simaccel", O_NONBLOCK) == -1 &&
	       errno == EWOULDBLOCK;
}

TEST(signalled_jobs_sync_file_outlives_the_device)
{
	struct sync_fence_info info;
	char node[300], addr[64];
	int sf;

	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	sf = sync_file_of_a_job(node, addr, false);
	ASSERT_LE(0, sf);
	EXPECT_EQ(1, sync_file_status(sf, &info));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	/* the device and everything of it is gone; the fence is not */
	EXPECT_EQ(1, sync_file_status(sf, &info));
	EXPECT_STREQ("simaccel", info.driver_name);
	EXPECT_NE(0, info.obj_name[0]);
	EXPECT_TRUE(sync_file_readable(sf));
	close(sf);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
}

TEST(pending_jobs_sync_file_fails_with_the_device)
{
	struct sync_fence_info info;
	char node[300], addr[64];
	int sf;

	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	sf = sync_file_of_a_job(node, addr, true);
	ASSERT_LE(0, sf);
	usleep(100000);
	EXPECT_EQ(0, sync_file_status(sf, &info));
	EXPECT_FALSE(sync_file_readable(sf));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_EQ(-ENODEV, sync_file_status(sf, &info));
	EXPECT_EQ(-ENODEV, info.status);
	EXPECT_STREQ("simaccel", info.driver_name);
	EXPECT_TRUE(sync_file_readable(sf));
	close(sf);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
}

/* The status of the fence in a syncobj, through a sync_file. */
static int syncobj_status(int fd, uint32_t handle)
{
	struct sync_fence_info info;
	int sf = sync_file_export(fd, handle), ret;

	if (sf < 0)
		return sf;
	ret = sync_file_status(sf, &info);
	close(sf);
	return ret;
}

/* A syncobj as an fd of its own (not a sync_file): its fd or -errno. */
static int syncobj_fd_export(int fd, uint32_t syncobj)
{
	struct drm_syncobj_handle h = { .handle = syncobj, .fd = -1 };

	return ioctl(fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h) ? -errno : h.fd;
}

static int syncobj_fd_import(int fd, int syncobj_fd, uint32_t *handle)
{
	struct drm_syncobj_handle h = { .fd = syncobj_fd };

	if (ioctl(fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &h))
		return -errno;
	*handle = h.handle;
	return 0;
}

/*
 * A syncobj is DRM core's, and lives as long as an fd of it; the fence in
 * it is ours. Exported while its job is pending, it outlives its file and
 * the device, keeps the module meanwhile, and a file of the device bound
 * again reads the job's error from it.
 */
TEST(a_syncobj_fd_outlives_its_device_and_keeps_the_module)
{
	const char *ko = getenv("SIMACCEL_KO");
	char node[300], addr[64];
	uint32_t syncobj;
	int fd, sfd;

	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fill_into_a_syncobj(fd, addr, true, &syncobj));
	sfd = syncobj_fd_export(fd, syncobj);
	ASSERT_LE(0, sfd);
	close(fd);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	if (ko)
		EXPECT_TRUE(module_refused_unload());
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	fd = open_by_pci(addr);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, syncobj_fd_import(fd, sfd, &syncobj));
	EXPECT_EQ(-ENODEV, syncobj_status(fd, syncobj));
	close(fd);
	close(sfd);
}

/*
 * A process of its own submits a stalled job on a new file of @node,
 * exports its fence with @export (as a sync_file, or a syncobj's fd),
 * and is killed. Returns the exported fd, taken from the process
 * (pidfd_getfd) before it died, or -errno.
 */
static int fence_fd_of_a_killed_process(const char *node, const char *addr,
					int (*export)(int fd, uint32_t syncobj))
{
	int ready[2], pidfd, fd = -1, status;
	pid_t pid;

	if (pipe(ready))
		return -errno;
	pid = fork();
	if (!pid) {
		int dev = open(node, O_RDWR | O_CLOEXEC);
		uint32_t syncobj;

		fd = dev < 0 ? -errno : fill_into_a_syncobj(dev, addr, true, &syncobj) ?:
		     export(dev, syncobj);
		if (write(ready[1], &fd, sizeof(fd)) != sizeof(fd))
			_exit(1);
		pause();
		_exit(0);
	}
	if (pid > 0 && read(ready[0], &fd, sizeof(fd)) == sizeof(fd) && fd >= 0) {
		pidfd = syscall(SYS_pidfd_open, pid, 0);
		fd = pidfd < 0 ? -errno : syscall(SYS_pidfd_getfd, pidfd, fd, 0);
		if (pidfd >= 0)
			close(pidfd);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	close(ready[0]);
	close(ready[1]);
	return fd;
}

/*
 * A sync_file of a job that another process submitted and then was killed
 * with: the job goes on (or fails) without its file, and the fence
 * signals, here with the time-out's error on a stalled device, never
 * staying pending for whoever holds it.
 */
TEST(a_killed_submitters_sync_file_still_signals)
{
	struct sync_fence_info info;
	char node[300], addr[64];
	int sf;

	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	sf = fence_fd_of_a_killed_process(node, addr, sync_file_export);
	ASSERT_LE(0, sf);
	for (int i = 0; i < 100 && !sync_file_readable(sf); i++)
		usleep(100000);		/* the job's time-out is 2 s */
	EXPECT_TRUE(sync_file_readable(sf));
	EXPECT_GT(0, sync_file_status(sf, &info));
	ASSERT_EQ(0, inject_all_of(addr, "0"));
	close(sf);
}

TEST(a_pending_jobs_sync_file_across_unbind_and_rebind)
{
	struct sync_fence_info info;
	char node[300], addr[64];
	int sf, sf2;

	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	sf = sync_file_of_a_job(node, addr, true);
	ASSERT_LE(0, sf);
	usleep(100000);
	EXPECT_EQ(0, sync_file_status(sf, &info));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	ASSERT_EQ(0, inject_all_of(addr, "0"));
	EXPECT_EQ(-ENODEV, sync_file_status(sf, &info));
	EXPECT_STREQ("simaccel", info.driver_name);
	EXPECT_TRUE(sync_file_readable(sf));
	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	sf2 = sync_file_of_a_job(node, addr, false);
	ASSERT_LE(0, sf2);
	EXPECT_EQ(1, sync_file_status(sf2, &info));
	EXPECT_EQ(-ENODEV, sync_file_status(sf, &info));
	close(sf);
	close(sf2);
}

/*
 * A syncobj exported as an fd by a process that is then killed with the
 * job still pending: the syncobj is DRM core's and lives with the fd, and
 * its fence signals (the stalled job's time-out), whoever holds it.
 */
TEST(a_killed_processs_syncobj_lives_on_and_signals)
{
	char node[300], addr[64];
	uint32_t syncobj = 0;
	int sfd, fd;

	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	sfd = fence_fd_of_a_killed_process(node, addr, syncobj_fd_export);
	ASSERT_LE(0, sfd);
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, syncobj_fd_import(fd, sfd, &syncobj));
	EXPECT_EQ(0, syncobj_wait(fd, syncobj, 0));
	EXPECT_GT(0, syncobj_status(fd, syncobj));
	ASSERT_EQ(0, inject_all_of(addr, "0"));
	close(fd);
	close(sfd);
}

TEST(a_held_fence_keeps_the_module)
{
	const char *ko = getenv("SIMACCEL_KO");
	struct sync_fence_info info;
	char node[300], addr[64];
	int sf;

	if (!ko)
		SKIP(return, "SIMACCEL_KO names no module to load again");
	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	sf = sync_file_of_a_job(node, addr, false);
	ASSERT_LE(0, sf);
	EXPECT_TRUE(module_refused_unload());
	EXPECT_EQ(1, sync_file_status(sf, &info));
	EXPECT_STREQ("simaccel", info.driver_name);
	close(sf);
	EXPECT_EQ(0, unload_module());
	ASSERT_EQ(0, load_module(ko));
}

TEST(jobs_in_flight_keep_the_module)
{
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .size = 8 << 20 };
	const char *ko = getenv("SIMACCEL_KO");
	struct drm_simaccel_bo_create bo;
	char node[300], addr[64];
	uint32_t queue;
	int fd;

	if (!ko || !getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a throttled device and SIMACCEL_KO");
	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, bo_create(fd, 8 << 20, DRM_SIMACCEL_BO_HOST, &bo));
	fill.dst = bo.dev_addr;
	for (int i = 0; i < 4; i++)		/* 2 s at 16 MB/s */
		ASSERT_EQ(0, submit(fd, queue, 0, &fill, 1, NULL, 0, NULL));
	close(fd);			/* the jobs go on */
	EXPECT_TRUE(module_refused_unload());
	EXPECT_EQ(0, unload_module());
	ASSERT_EQ(0, load_module(ko));
}

/*
 * Queue B: #1 a long fill, #2 a job whose in-fence failed (drm_sched fails
 * it before it runs, at once), #3 a short fill, which could run on an idle
 * hardware queue and finish before #1. When #3's fence has signalled, #1's
 * has: a dma_resv or a job that keeps only the later fence of a context
 * relies on it.
 */
TEST(a_queues_fences_signal_in_order)
{
	struct drm_simaccel_bo_create big, small;
	struct drm_simaccel_sync failed = { 0 }, s1 = { 0 }, s2 = { 0 }, s3 = { 0 };
	struct drm_simaccel_op fill_small = { .op = DRM_SIMACCEL_OP_FILL, .size = 4096 };
	struct drm_simaccel_op fill_big = { .op = DRM_SIMACCEL_OP_FILL, .size = 32 << 20 };
	char node[300], addr[64];
	uint32_t qa, qb;
	int fd;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a throttled device (SIMACCEL_SLOW_DEVICE)");
	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &qa));
	ASSERT_EQ(0, queue_create(fd, &qb));
	ASSERT_EQ(0, bo_create(fd, 32 << 20, DRM_SIMACCEL_BO_HOST, &big));
	ASSERT_EQ(0, bo_create(fd, 4096, DRM_SIMACCEL_BO_HOST, &small));
	ASSERT_EQ(0, syncobj_create(fd, &failed.handle));
	ASSERT_EQ(0, syncobj_create(fd, &s1.handle));
	ASSERT_EQ(0, syncobj_create(fd, &s2.handle));
	ASSERT_EQ(0, syncobj_create(fd, &s3.handle));
	fill_small.dst = small.dev_addr;
	fill_big.dst = big.dev_addr;
	ASSERT_EQ(0, inject_all_of(addr, "1"));
	EXPECT_EQ(-EIO, submit(fd, qa, DRM_SIMACCEL_SUBMIT_WAIT, &fill_small, 1,
			       NULL, 0, &failed));
	ASSERT_EQ(0, inject_all_of(addr, "0"));
	ASSERT_EQ(0, submit(fd, qb, 0, &fill_big, 1, NULL, 0, &s1));
	usleep(20000);
	ASSERT_EQ(0, submit(fd, qb, 0, &fill_small, 1, &failed, 1, &s2));
	usleep(50000);
	ASSERT_EQ(0, submit(fd, qb, 0, &fill_small, 1, NULL, 0, &s3));
	ASSERT_EQ(0, syncobj_wait(fd, s3.handle, 0));
	EXPECT_EQ(1, syncobj_status(fd, s1.handle));
	EXPECT_EQ(-ECANCELED, syncobj_status(fd, s2.handle));
	EXPECT_EQ(1, syncobj_status(fd, s3.handle));
	close(fd);
}

/*
 * What else a user holds keeps the module as the fences do: the unload is
 * refused while it exists, and goes through once it is gone.
 */

/*
 * A dma-buf of a buffer of @kind, its file closed, keeps the module: the
 * unload is refused, and the dma-buf still maps the buffer's bytes; once
 * it is closed, the unload goes through.
 */
static void dma_buf_keeps_the_module(struct __test_metadata *_metadata,
				     const char *ko, uint32_t kind)
{
	struct drm_simaccel_bo_create bo;
	char node[300], addr[64];
	int fd, dmabuf;
	uint8_t *m;

	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bo_create(fd, 1 << 20, kind, &bo));
	ASSERT_EQ(0, prime_export(fd, bo.handle, &dmabuf));
	m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, dmabuf, 0);
	ASSERT_NE(MAP_FAILED, m);
	m[0] = 0x5a;
	m[(1 << 20) - 1] = 0xa5;
	EXPECT_EQ(0, munmap(m, 1 << 20));
	close(fd);
	EXPECT_TRUE(module_refused_unload()) TH_LOG("kind %u", kind);
	m = mmap(NULL, 1 << 20, PROT_READ, MAP_SHARED, dmabuf, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0x5a, m[0]);
	EXPECT_EQ(0xa5, m[(1 << 20) - 1]);
	EXPECT_EQ(0, munmap(m, 1 << 20));
	close(dmabuf);
	EXPECT_EQ(0, unload_module());
	ASSERT_EQ(0, load_module(ko));
}

TEST(an_exported_dma_buf_keeps_the_module)
{
	const char *ko = getenv("SIMACCEL_KO");

	if (!ko)
		SKIP(return, "SIMACCEL_KO names no module to load again");
	dma_buf_keeps_the_module(_metadata, ko, DRM_SIMACCEL_BO_VRAM_MAPPABLE);
	dma_buf_keeps_the_module(_metadata, ko, DRM_SIMACCEL_BO_HOST);
}

/*
 * A mapping of a buffer of @kind, its handle and file closed, keeps the
 * module: the unload is refused and the mapping keeps its bytes; once it
 * is unmapped, the unload goes through.
 */
static void mapping_keeps_the_module(struct __test_metadata *_metadata,
				     const char *ko, uint32_t kind)
{
	const size_t len = 64 << 10;
	struct drm_simaccel_bo_create bo;
	char node[300], addr[64];
	uint8_t *m;
	int fd;

	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bo_create(fd, len, kind, &bo));
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, bo.mmap_offset);
	ASSERT_NE(MAP_FAILED, m);
	memset(m, 0x3c, len);
	ASSERT_EQ(0, gem_close(fd, bo.handle));
	close(fd);
	EXPECT_TRUE(module_refused_unload());
	EXPECT_EQ(0x3c, m[0]);
	EXPECT_EQ(0x3c, m[len - 1]);
	EXPECT_EQ(0, munmap(m, len));
	EXPECT_EQ(0, unload_module());
	ASSERT_EQ(0, load_module(ko));
}

TEST(a_vram_mapping_keeps_the_module)
{
	const char *ko = getenv("SIMACCEL_KO");

	if (!ko)
		SKIP(return, "SIMACCEL_KO names no module to load again");
	mapping_keeps_the_module(_metadata, ko, DRM_SIMACCEL_BO_VRAM_MAPPABLE);
}

TEST(a_host_mapping_keeps_the_module)
{
	const char *ko = getenv("SIMACCEL_KO");

	if (!ko)
		SKIP(return, "SIMACCEL_KO names no module to load again");
	mapping_keeps_the_module(_metadata, ko, DRM_SIMACCEL_BO_HOST);
}

/*
 * Device 1's imports of device 0's VRAM and HOST buffers, the exporter's
 * file and the dma-bufs closed: the importer's file holds them and the
 * module. Once it is closed, nothing of the imports is left (an import
 * holds its dma-buf, which holds the module) and the unload goes through;
 * both devices come back.
 */
TEST(imports_of_a_peers_buffers_keep_the_module)
{
	const char *ko = getenv("SIMACCEL_KO");
	struct drm_simaccel_bo_create v0, h0;
	struct drm_simaccel_bo_info vi = { 0 }, hi = { 0 };
	uint32_t vimp, himp, queue;
	int fd0, fd1, vbuf, hbuf;
	char addr[2][64];

	if (!ko)
		SKIP(return, "SIMACCEL_KO names no module to load again");
	if (bound_devices(addr))
		SKIP(return, "needs two devices");
	fd0 = open_by_pci(addr[0]);
	fd1 = open_by_pci(addr[1]);
	ASSERT_LE(0, fd0);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, bo_create(fd0, 1 << 20, DRM_SIMACCEL_BO_VRAM, &v0));
	ASSERT_EQ(0, bo_create(fd0, 1 << 20, DRM_SIMACCEL_BO_HOST, &h0));
	ASSERT_EQ(0, prime_export(fd0, v0.handle, &vbuf));
	ASSERT_EQ(0, prime_export(fd0, h0.handle, &hbuf));
	ASSERT_EQ(0, prime_import(fd1, vbuf, &vimp));
	ASSERT_EQ(0, prime_import(fd1, hbuf, &himp));
	vi.handle = vimp;
	hi.handle = himp;
	ASSERT_EQ(0, ioctl(fd1, DRM_IOCTL_SIMACCEL_BO_INFO, &vi));
	ASSERT_EQ(0, ioctl(fd1, DRM_IOCTL_SIMACCEL_BO_INFO, &hi));
	close(vbuf);
	close(hbuf);
	close(fd0);
	ASSERT_EQ(0, queue_create(fd1, &queue));
	EXPECT_EQ(0, run_op(fd1, queue, DRM_SIMACCEL_OP_COPY, 0, vi.dev_addr,
			    hi.dev_addr, 1 << 20));
	EXPECT_TRUE(module_refused_unload());
	close(fd1);
	EXPECT_EQ(0, unload_module()) TH_LOG("something of the imports was left");
	ASSERT_EQ(0, load_module(ko));
	fd0 = open_by_pci(addr[0]);
	fd1 = open_by_pci(addr[1]);
	EXPECT_LE(0, fd0);
	EXPECT_LE(0, fd1);
	close(fd0);
	close(fd1);
}

/*
 * A USERPTR buffer pinned by an unprivileged user keeps the module with
 * its file; once the file is closed, the unload goes through, and the
 * user's charge against RLIMIT_MEMLOCK went with the pin: the user pins
 * as much again on the module loaded again.
 */
TEST(a_user_pin_keeps_the_module_and_its_charge_goes_with_it)
{
	const char *ko = getenv("SIMACCEL_KO");
	const size_t len = 4 << 20;
	char node[300], addr[64];
	uint32_t handle;
	pid_t nobody;
	uint8_t *buf;
	int fd;

	if (!ko)
		SKIP(return, "SIMACCEL_KO names no module to load again");
	buf = aligned_alloc(4096, len);
	ASSERT_NE(NULL, buf);
	memset(buf, 1, len);
	nobody = nobody_lives_on();
	ASSERT_LT(0, nobody);
	ASSERT_EQ(0, first_node(node, sizeof(node), addr, sizeof(addr)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pin_as_nobody(fd, buf, len, len + len / 2, &handle));
	/* charged: no room for as much again */
	EXPECT_EQ(-ENOMEM, pin_as_nobody(fd, buf, len, len + len / 2, NULL));
	EXPECT_TRUE(module_refused_unload());
	close(fd);
	EXPECT_EQ(0, unload_module());
	ASSERT_EQ(0, load_module(ko));
	fd = open_by_pci(addr);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, pin_as_nobody(fd, buf, len, len + len / 2, &handle));
	close(fd);
	kill_child(nobody);
	free(buf);
}

TEST_HARNESS_MAIN
