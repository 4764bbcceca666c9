// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel.ko: sharing buffers as dma-bufs, against the uapi header's
 * contract (struct drm_simaccel_bo_info), as root in the VM with two
 * devices.
 *
 * - a VRAM or HOST buffer exported and imported by another process of the
 *   same device is the same buffer, at the same device address, and what
 *   one process's jobs write the other's read (IPC); a USERPTR buffer is
 *   not exported; BO_INFO describes imported handles and checks its
 *   arguments;
 * - a VRAM buffer of one device imported into the other is an IMPORTED
 *   buffer there, and copies to and from it move data peer to peer, both
 *   ways, with a vIOMMU;
 * - a shared buffer lives while any side holds it, and its memory comes
 *   back when the last one lets go;
 * - an import of a peer's VRAM is revoked (ENODEV) when the peer is
 *   unbound, and stays so after a rebind hands the range to someone else;
 *   an import of a peer's HOST buffer stays usable;
 * - an importer that closes its file (or is killed) with work queued on an
 *   import of a peer's VRAM or HOST buffer lets the work run (or fail)
 *   and the import go: the exporter's memory comes back once it lets go;
 *   an importer rebound with an import held in an old file imports afresh;
 *   a sync_file of a job on an import fails with the exporter's unbind;
 * - an export that waits for a new VRAM buffer's clearing, queued behind
 *   the exporter's own slow work, holds no one else up: another process
 *   creates buffers meanwhile, and the exporter dies at once when killed
 *   (on a throttled device with one queue, with SIMACCEL_SLOW_DEVICE set).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/sync_file.h>

#include "kselftest_harness.h"
#include "simaccel_util.h"

#define NODE0		NODE
#define NODE1		"/dev/accel/accel1"

static int bo_info(int fd, uint32_t handle, struct drm_simaccel_bo_info *info)
{
	*info = (struct drm_simaccel_bo_info){ .handle = handle };
	return ioctl(fd, DRM_IOCTL_SIMACCEL_BO_INFO, info) ? -errno : 0;
}

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte = 0;
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	int fd;

	if (recvmsg(sock, &m, 0) != 1 || !CMSG_FIRSTHDR(&m))
		return -1;
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
	return fd;
}

/*
 * A child process opens its own file, receives the dma-buf, imports it
 * and fills it through its own queue; the parent sees the bytes.
 */
static void share_with_a_process(struct __test_metadata *_metadata,
				 uint32_t kind)
{
	struct drm_simaccel_bo_create bo, host;
	int fd = open(NODE0, O_RDWR | O_CLOEXEC), sv[2], dmabuf, status;
	uint32_t queue;
	uint8_t *m;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, bo_create(fd, 8192, kind, &bo));
	ASSERT_EQ(0, bo_create(fd, 8192, DRM_SIMACCEL_BO_HOST, &host));
	ASSERT_EQ(0, prime_export(fd, bo.handle, &dmabuf));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct drm_simaccel_bo_info info;
		int cfd = open(NODE0, O_RDWR | O_CLOEXEC), got;
		uint32_t h, q;

		got = recv_fd(sv[1]);
		if (cfd < 0 || got < 0 || queue_create(cfd, &q))
			_exit(10);
		/* before the import, the address is not this file's */
		if (run_op(cfd, q, DRM_SIMACCEL_OP_FILL, 0, bo.dev_addr, 0x5e, 8192) != -ENOENT)
			_exit(11);
		if (prime_import(cfd, got, &h) || bo_info(cfd, h, &info))
			_exit(12);
		if (info.dev_addr != bo.dev_addr || info.kind != kind || info.size < 8192)
			_exit(13);
		if (run_op(cfd, q, DRM_SIMACCEL_OP_FILL, 0, bo.dev_addr + 1, 0x5e, 8190))
			_exit(14);
		_exit(0);
	}
	ASSERT_EQ(0, send_fd(sv[0], dmabuf));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, run_op(fd, queue, DRM_SIMACCEL_OP_COPY, 0, host.dev_addr,
			    bo.dev_addr, 8192));
	m = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, host.mmap_offset);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, m[0]);
	EXPECT_EQ(0x5e, m[1]);
	EXPECT_EQ(0x5e, m[8190]);
	EXPECT_EQ(0, m[8191]);
	munmap(m, 8192);
	close(dmabuf);
	close(sv[0]);
	close(sv[1]);
	close(fd);
}

TEST(vram_shared_with_another_process_is_the_same_buffer)
{
	share_with_a_process(_metadata, DRM_SIMACCEL_BO_VRAM);
}

TEST(host_memory_shared_with_another_process_is_the_same_buffer)
{
	share_with_a_process(_metadata, DRM_SIMACCEL_BO_HOST);
}

TEST(user_memory_is_not_exported_and_bo_info_checks_its_arguments)
{
	struct drm_simaccel_bo_userptr u = { .size = 4096 };
	struct drm_simaccel_bo_info info;
	struct drm_simaccel_bo_create v;
	void *p = aligned_alloc(4096, 4096);
	int fd = open(NODE0, O_RDWR | O_CLOEXEC), dmabuf;

	ASSERT_LE(0, fd);
	u.user_addr = (uintptr_t)p;
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_SIMACCEL_BO_USERPTR, &u));
	EXPECT_EQ(-EINVAL, prime_export(fd, u.handle, &dmabuf));
	ASSERT_EQ(0, bo_info(fd, u.handle, &info));
	EXPECT_EQ(DRM_SIMACCEL_BO_USER, info.kind);
	EXPECT_EQ(u.dev_addr, info.dev_addr);
	EXPECT_EQ(4096, info.size);
	EXPECT_EQ(0, info.mmap_offset);
	ASSERT_EQ(0, bo_create(fd, 4096, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &v));
	ASSERT_EQ(0, bo_info(fd, v.handle, &info));
	EXPECT_EQ(v.mmap_offset, info.mmap_offset);
	EXPECT_EQ(-ENOENT, bo_info(fd, v.handle + 100, &info));
	info = (struct drm_simaccel_bo_info){ .handle = v.handle, .flags = 1 };
	EXPECT_EQ(-1, ioctl(fd, DRM_IOCTL_SIMACCEL_BO_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	info = (struct drm_simaccel_bo_info){ .handle = v.handle, .pad = 1 };
	EXPECT_EQ(-1, ioctl(fd, DRM_IOCTL_SIMACCEL_BO_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	close(fd);
	free(p);
}

/* Device 1 copies into and out of device 0's VRAM, peer to peer. */
TEST(a_peers_vram_imported_is_reached_peer_to_peer)
{
	const size_t len = 3 * 1024 * 1024 + 4096;
	int fd0 = open(NODE0, O_RDWR | O_CLOEXEC);
	int fd1 = open(NODE1, O_RDWR | O_CLOEXEC);
	struct drm_simaccel_bo_create v0, h0, h1;
	struct drm_simaccel_bo_info info;
	uint32_t q0, q1, imported;
	uint8_t *m0, *m1;
	int dmabuf;

	ASSERT_LE(0, fd0);
	ASSERT_LE(0, fd1) TH_LOG("needs two devices");
	ASSERT_EQ(0, queue_create(fd0, &q0));
	ASSERT_EQ(0, queue_create(fd1, &q1));
	ASSERT_EQ(0, bo_create(fd0, len, DRM_SIMACCEL_BO_VRAM, &v0));
	ASSERT_EQ(0, bo_create(fd0, len, DRM_SIMACCEL_BO_HOST, &h0));
	ASSERT_EQ(0, bo_create(fd1, len, DRM_SIMACCEL_BO_HOST, &h1));
	ASSERT_EQ(0, prime_export(fd0, v0.handle, &dmabuf));
	ASSERT_EQ(0, prime_import(fd1, dmabuf, &imported));
	ASSERT_EQ(0, bo_info(fd1, imported, &info));
	EXPECT_EQ(DRM_SIMACCEL_BO_IMPORTED, info.kind);
	EXPECT_LE(len, info.size);
	EXPECT_EQ(0, info.mmap_offset);
	m0 = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd0, h0.mmap_offset);
	m1 = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd1, h1.mmap_offset);
	ASSERT_NE(MAP_FAILED, m0);
	ASSERT_NE(MAP_FAILED, m1);
	for (size_t i = 0; i < len; i++)
		m1[i] = (uint8_t)(i * 7 + 3);
	/* device 1 writes device 0's VRAM; device 0 reads it back */
	ASSERT_EQ(0, run_op(fd1, q1, DRM_SIMACCEL_OP_COPY, 0, info.dev_addr,
			    h1.dev_addr, len));
	ASSERT_EQ(0, run_op(fd0, q0, DRM_SIMACCEL_OP_COPY, 0, h0.dev_addr,
			    v0.dev_addr, len));
	EXPECT_EQ(0, memcmp(m0, m1, len));
	/* device 0 changes it; device 1 reads it, peer to peer */
	ASSERT_EQ(0, run_op(fd0, q0, DRM_SIMACCEL_OP_FILL, 0, v0.dev_addr + 5, 0xc3, 100));
	ASSERT_EQ(0, run_op(fd1, q1, DRM_SIMACCEL_OP_COPY, 0, h1.dev_addr,
			    info.dev_addr, len));
	EXPECT_EQ(0xc3, m1[5]);
	EXPECT_EQ(0xc3, m1[104]);
	EXPECT_EQ((uint8_t)(105 * 7 + 3), m1[105]);
	munmap(m0, len);
	munmap(m1, len);
	close(dmabuf);
	close(fd0);
	close(fd1);
}

/* The exporter lets go first: the importer's handle keeps the VRAM. */
TEST(a_shared_buffer_lives_while_anyone_holds_it)
{
	long long vram0 = device_total("vram_used");
	int fd0 = open(NODE0, O_RDWR | O_CLOEXEC);
	int fd1 = open(NODE1, O_RDWR | O_CLOEXEC);
	struct drm_simaccel_bo_create v0, h1;
	struct drm_simaccel_bo_info info;
	uint32_t q1, imported;
	int dmabuf;

	ASSERT_LE(0, fd0);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, queue_create(fd1, &q1));
	ASSERT_EQ(0, bo_create(fd0, 1 << 20, DRM_SIMACCEL_BO_VRAM, &v0));
	ASSERT_EQ(0, bo_create(fd1, 1 << 20, DRM_SIMACCEL_BO_HOST, &h1));
	ASSERT_EQ(0, prime_export(fd0, v0.handle, &dmabuf));
	ASSERT_EQ(0, prime_import(fd1, dmabuf, &imported));
	ASSERT_EQ(0, bo_info(fd1, imported, &info));
	close(dmabuf);
	ASSERT_EQ(0, gem_close(fd0, v0.handle));
	close(fd0);
	EXPECT_EQ(vram0 + (1 << 20), device_total("vram_used"));
	EXPECT_EQ(0, run_op(fd1, q1, DRM_SIMACCEL_OP_COPY, 0, info.dev_addr,
			    h1.dev_addr, 1 << 20));
	ASSERT_EQ(0, gem_close(fd1, imported));
	EXPECT_EQ(vram0, device_total("vram_used"));
	close(fd1);
}

/*
 * The importer goes while it holds an import of the other device's HOST
 * buffer: its DMA mapping of those pages goes with it (the exporter's
 * helpers undo it only at detach; check-debug's DMA-API debugging counts
 * a mapping left behind), and the buffer and the exporter live on.
 */
TEST(an_importer_unbound_with_an_import_held_lets_its_mapping_go)
{
	int fd0 = open(NODE0, O_RDWR | O_CLOEXEC);
	int fd1 = open(NODE1, O_RDWR | O_CLOEXEC);
	struct drm_simaccel_bo_create h1;
	uint32_t q1, imported;
	char addr[64];
	int dmabuf;

	ASSERT_LE(0, fd0);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	ASSERT_EQ(0, queue_create(fd1, &q1));
	ASSERT_EQ(0, bo_create(fd1, 168 << 10, DRM_SIMACCEL_BO_HOST, &h1));
	ASSERT_EQ(0, prime_export(fd1, h1.handle, &dmabuf));
	ASSERT_EQ(0, prime_import(fd0, dmabuf, &imported));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_EQ(-1, ioctl(fd0, DRM_IOCTL_GEM_CLOSE, &(struct drm_gem_close){ .handle = imported }));
	EXPECT_EQ(ENODEV, errno);
	close(fd0);
	EXPECT_EQ(0, run_op(fd1, q1, DRM_SIMACCEL_OP_FILL, 0, h1.dev_addr, 3, 168 << 10));
	close(dmabuf);
	/* no file of the old binding is left: it comes back as accel0 */
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	EXPECT_EQ(0, gem_close(fd1, h1.handle));
	close(fd1);
}

/*
 * An import of a peer's VRAM is revoked when the peer is unbound: its VRAM
 * keeps its bytes and goes to new owners after a rebind, and no job of the
 * importer may reach it any more.
 */
TEST(a_peer_import_is_revoked_when_the_exporter_goes)
{
	int fd0 = open(NODE0, O_RDWR | O_CLOEXEC);
	int fd1 = open(NODE1, O_RDWR | O_CLOEXEC);
	struct drm_simaccel_bo_create v0, h1, fresh;
	struct drm_simaccel_bo_info info;
	uint32_t q0, q1, imported;
	char addr[64];
	int dmabuf;

	ASSERT_LE(0, fd0);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	ASSERT_EQ(0, queue_create(fd1, &q1));
	ASSERT_EQ(0, bo_create(fd0, 1 << 20, DRM_SIMACCEL_BO_VRAM, &v0));
	ASSERT_EQ(0, bo_create(fd1, 1 << 20, DRM_SIMACCEL_BO_HOST, &h1));
	ASSERT_EQ(0, prime_export(fd0, v0.handle, &dmabuf));
	ASSERT_EQ(0, prime_import(fd1, dmabuf, &imported));
	ASSERT_EQ(0, bo_info(fd1, imported, &info));
	close(dmabuf);
	close(fd0);
	EXPECT_EQ(0, run_op(fd1, q1, DRM_SIMACCEL_OP_COPY, 0, h1.dev_addr,
			    info.dev_addr, 1 << 20));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_EQ(-ENODEV, run_op(fd1, q1, DRM_SIMACCEL_OP_COPY, 0, h1.dev_addr,
				  info.dev_addr, 1 << 20));
	EXPECT_EQ(-ENODEV, run_op(fd1, q1, DRM_SIMACCEL_OP_FILL, 0, info.dev_addr,
				  0x41, 1 << 20));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	/* the range's next owner is out of reach too */
	fd0 = open_by_pci(addr);
	ASSERT_LE(0, fd0);
	ASSERT_EQ(0, queue_create(fd0, &q0));
	ASSERT_EQ(0, bo_create(fd0, 1 << 20, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &fresh));
	EXPECT_EQ(-ENODEV, run_op(fd1, q1, DRM_SIMACCEL_OP_FILL, 0, info.dev_addr,
				  0x41, 1 << 20));
	{
		uint8_t *m = mmap(NULL, 1 << 20, PROT_READ, MAP_SHARED, fd0,
				  fresh.mmap_offset);

		ASSERT_NE(MAP_FAILED, m);
		EXPECT_EQ(0, m[0]);
		EXPECT_EQ(0, m[(1 << 20) - 1]);
		munmap(m, 1 << 20);
	}
	/* the importer's own work goes on */
	EXPECT_EQ(0, run_op(fd1, q1, DRM_SIMACCEL_OP_FILL, 0, h1.dev_addr, 1, 4096));
	ASSERT_EQ(0, gem_close(fd1, imported));
	close(fd0);
	close(fd1);
}

/*
 * Device 1's import of a new VRAM buffer of device 0, and a queue on
 * device 1 to reach it from; device 0's file is closed (the dma-buf and the
 * import hold the buffer). 0 or -1.
 */
struct peer_import {
	char addr[2][64];
	int fd1;
	uint32_t queue;
	uint32_t handle;
	uint64_t dev_addr;
};

static int import_peer_vram(struct peer_import *p, size_t len)
{
	struct drm_simaccel_bo_create v0;
	struct drm_simaccel_bo_info info;
	int fd0, dmabuf, ret;

	if (bound_devices(p->addr))
		return -1;
	fd0 = open_by_pci(p->addr[0]);
	p->fd1 = open_by_pci(p->addr[1]);
	if (fd0 < 0 || p->fd1 < 0)
		return -1;
	ret = queue_create(p->fd1, &p->queue) ||
	      bo_create(fd0, len, DRM_SIMACCEL_BO_VRAM, &v0) ||
	      prime_export(fd0, v0.handle, &dmabuf);
	close(fd0);
	if (ret)
		return -1;
	ret = prime_import(p->fd1, dmabuf, &p->handle) ||
	      bo_info(p->fd1, p->handle, &info);
	close(dmabuf);
	p->dev_addr = info.dev_addr;
	return ret ? -1 : 0;
}

/*
 * On throttled devices: a peer keeps eight seconds of copies into an
 * import of this device's VRAM queued. Unbinding this device does not
 * drain them: what the peer's hardware is running ends, the rest fail with
 * ENODEV.
 */
TEST(unbind_fails_a_peers_queued_work_on_an_import)
{
	const size_t len = 16 * 1024 * 1024;	/* a second each */
	struct drm_simaccel_op copy = { .op = DRM_SIMACCEL_OP_COPY, .size = len };
	struct drm_simaccel_queue_query q;
	struct drm_simaccel_bo_create h1;
	struct peer_import p;
	double start;
	int i;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs two throttled devices (SIMACCEL_SLOW_DEVICE)");
	ASSERT_EQ(0, import_peer_vram(&p, len));
	ASSERT_EQ(0, bo_create(p.fd1, len, DRM_SIMACCEL_BO_HOST, &h1));
	copy.dst = p.dev_addr;
	copy.src = h1.dev_addr;
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, submit(p.fd1, p.queue, 0, &copy, 1, NULL, 0, NULL));
	usleep(200000);
	start = seconds();
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", p.addr[0]));
	TH_LOG("the unbind took %.2f s", seconds() - start);
	/* a barrier behind them: they are over once it is */
	ASSERT_EQ(0, submit(p.fd1, p.queue, DRM_SIMACCEL_SUBMIT_WAIT, NULL, 0, NULL, 0, NULL));
	ASSERT_EQ(0, queue_query(p.fd1, p.queue, &q));
	EXPECT_LE(6, q.failed);
	EXPECT_EQ(8, q.failed_seqno);
	EXPECT_EQ(ENODEV, q.error);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", p.addr[0]));
	ASSERT_EQ(0, gem_close(p.fd1, p.handle));
	close(p.fd1);
}

/*
 * On throttled devices: a peer's job on an import of this device's VRAM
 * waits for another file's four seconds of copies. Unbinding this device
 * does not wait for that work, which has nothing of this device's: the
 * job fails with ENODEV when its turn comes.
 */
TEST(unbind_does_not_wait_for_what_a_peers_job_waits_for)
{
	const size_t len = 16 * 1024 * 1024;	/* a second each */
	struct drm_simaccel_op slow = { .op = DRM_SIMACCEL_OP_COPY, .size = len };
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .size = 4096 };
	struct drm_simaccel_sync done = { 0 };
	struct drm_simaccel_bo_create a, b;
	struct peer_import p;
	uint32_t q2;
	int fd2, i;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs two throttled devices (SIMACCEL_SLOW_DEVICE)");
	ASSERT_EQ(0, import_peer_vram(&p, 4096));
	fd2 = open_by_pci(p.addr[1]);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, queue_create(fd2, &q2));
	ASSERT_EQ(0, bo_create(fd2, len, DRM_SIMACCEL_BO_HOST, &a));
	ASSERT_EQ(0, bo_create(fd2, len, DRM_SIMACCEL_BO_HOST, &b));
	slow.src = a.dev_addr;
	slow.dst = b.dev_addr;
	ASSERT_EQ(0, syncobj_create(fd2, &done.handle));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, submit(fd2, q2, 0, &slow, 1, NULL, 0, i == 3 ? &done : NULL));
	{
		struct drm_syncobj_handle h = { .handle = done.handle };

		ASSERT_EQ(0, ioctl(fd2, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h));
		h.handle = 0;
		ASSERT_EQ(0, ioctl(p.fd1, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &h));
		close(h.fd);
		done.handle = h.handle;
	}
	fill.dst = p.dev_addr;
	ASSERT_EQ(0, submit(p.fd1, p.queue, 0, &fill, 1, &done, 1, NULL));
	usleep(200000);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", p.addr[0]));
	/* the work waited for is not done: the unbind did not wait for it */
	EXPECT_EQ(-ETIME, syncobj_signalled(p.fd1, done.handle));
	EXPECT_EQ(-ENODEV, submit(p.fd1, p.queue, DRM_SIMACCEL_SUBMIT_WAIT, &fill, 1,
				  NULL, 0, NULL));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", p.addr[0]));
	ASSERT_EQ(0, gem_close(p.fd1, p.handle));
	close(fd2);
	close(p.fd1);
}

/*
 * On throttled devices: 24 files of a user keep the peer's ring busy (a
 * quarter-second descriptor each, their windows' worth), and then a job on
 * an import of this device's VRAM goes on the ring behind them. Unbinding
 * this device does not wait for the others' work ahead of that job: the
 * job is made to move nothing, and fails with ENODEV.
 */
TEST(unbind_does_not_wait_for_other_work_ahead_of_a_peers_job)
{
	const size_t len = 16 * 1024 * 1024;
	struct drm_simaccel_op copy = { .op = DRM_SIMACCEL_OP_COPY, .size = len };
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .size = 4096 };
	struct drm_simaccel_queue_query q;
	struct drm_simaccel_bo_create a, b;
	struct peer_import p;
	int files[24], i;
	uint32_t queue;
	double start;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs two throttled devices (SIMACCEL_SLOW_DEVICE)");
	ASSERT_EQ(0, import_peer_vram(&p, 4096));
	for (i = 0; i < 24; i++) {
		files[i] = open_by_pci(p.addr[1]);
		ASSERT_LE(0, files[i]);
		ASSERT_EQ(0, queue_create(files[i], &queue));
		ASSERT_EQ(0, bo_create(files[i], len, DRM_SIMACCEL_BO_HOST, &a));
		ASSERT_EQ(0, bo_create(files[i], len, DRM_SIMACCEL_BO_HOST, &b));
		copy.src = a.dev_addr;
		copy.dst = b.dev_addr;
		ASSERT_EQ(0, submit(files[i], queue, 0, &copy, 1, NULL, 0, NULL));
	}
	fill.dst = p.dev_addr;
	ASSERT_EQ(0, submit(p.fd1, p.queue, 0, &fill, 1, NULL, 0, NULL));
	usleep(200000);
	start = seconds();
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", p.addr[0]));
	/* 24 quarter seconds are ahead of the job */
	EXPECT_GT(3.0, seconds() - start) TH_LOG("the unbind waited for others' work");
	ASSERT_EQ(0, submit(p.fd1, p.queue, DRM_SIMACCEL_SUBMIT_WAIT, NULL, 0, NULL, 0, NULL));
	ASSERT_EQ(0, queue_query(p.fd1, p.queue, &q));
	EXPECT_EQ(1, q.failed);
	EXPECT_EQ(ENODEV, q.error);
	for (i = 0; i < 24; i++)
		close(files[i]);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", p.addr[0]));
	ASSERT_EQ(0, gem_close(p.fd1, p.handle));
	close(p.fd1);
}

/*
 * A process killed while its job reaches an import of a peer's VRAM lets
 * go of the import: the exporter's unbind then waits for nothing of it.
 */
TEST(a_killed_importer_leaves_nothing_for_the_exporters_unbind)
{
	struct drm_simaccel_bo_create v0;
	char addr[2][64];
	int fd0, ready[2], status, dmabuf;
	double start;
	pid_t child;
	char c;

	ASSERT_EQ(0, bound_devices(addr));
	fd0 = open_by_pci(addr[0]);
	ASSERT_LE(0, fd0);
	ASSERT_EQ(0, bo_create(fd0, 64 << 20, DRM_SIMACCEL_BO_VRAM, &v0));
	ASSERT_EQ(0, prime_export(fd0, v0.handle, &dmabuf));
	ASSERT_EQ(0, pipe(ready));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .size = 64 << 20 };
		struct drm_simaccel_bo_info info;
		int fd1 = open_by_pci(addr[1]);
		uint32_t queue, imported;

		if (fd1 < 0 || queue_create(fd1, &queue) ||
		    prime_import(fd1, dmabuf, &imported) || bo_info(fd1, imported, &info))
			_exit(2);
		fill.dst = info.dev_addr;
		for (int i = 0; i < 16; i++)
			if (submit(fd1, queue, 0, &fill, 1, NULL, 0, NULL))
				_exit(3);
		if (write(ready[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(5);
	}
	close(dmabuf);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	close(fd0);
	start = seconds();
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr[0]));
	EXPECT_GT(2.0, seconds() - start) TH_LOG("the unbind waited for the killed importer");
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr[0]));
}

/*
 * A peer's dma-buf imported by many files of a device is one import there:
 * one attachment and one mapping of the exporter's memory (DMA-API
 * debugging refuses more than seven mappings of a page), at one device
 * address, and it lives while any file holds it.
 */
TEST(a_dma_buf_imported_by_many_files_is_one_import)
{
	struct drm_simaccel_bo_create h0;
	struct drm_simaccel_bo_info info, first = { 0 };
	uint32_t imported[9], queue;
	char addr[2][64];
	int fd0, files[9], dmabuf, i;

	ASSERT_EQ(0, bound_devices(addr));
	fd0 = open_by_pci(addr[0]);
	ASSERT_LE(0, fd0);
	ASSERT_EQ(0, bo_create(fd0, 1 << 20, DRM_SIMACCEL_BO_HOST, &h0));
	ASSERT_EQ(0, prime_export(fd0, h0.handle, &dmabuf));
	for (i = 0; i < 9; i++) {
		files[i] = open_by_pci(addr[1]);
		ASSERT_LE(0, files[i]);
		ASSERT_EQ(0, prime_import(files[i], dmabuf, &imported[i]));
		ASSERT_EQ(0, bo_info(files[i], imported[i], &info));
		if (!i)
			first = info;
		EXPECT_EQ(first.dev_addr, info.dev_addr);
	}
	close(dmabuf);
	for (i = 0; i < 8; i++)
		close(files[i]);
	/* the last file's import is whole */
	ASSERT_EQ(0, queue_create(files[8], &queue));
	EXPECT_EQ(0, run_op(files[8], queue, DRM_SIMACCEL_OP_FILL, 0,
			    first.dev_addr, 0x11, 1 << 20));
	close(files[8]);
	close(fd0);
}

/*
 * An import of a peer's HOST buffer is system memory that the dma-buf
 * holds: unlike VRAM, it stays usable after the exporter is unbound.
 */
TEST(a_peers_host_buffer_import_outlives_the_exporter)
{
	struct drm_simaccel_bo_create h0, h1;
	struct drm_simaccel_bo_info info;
	uint32_t q0, q1, imported;
	char addr[2][64];
	int fd0, fd1, dmabuf;
	uint8_t *m;

	ASSERT_EQ(0, bound_devices(addr));
	fd0 = open_by_pci(addr[0]);
	fd1 = open_by_pci(addr[1]);
	ASSERT_LE(0, fd0);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, queue_create(fd0, &q0));
	ASSERT_EQ(0, queue_create(fd1, &q1));
	ASSERT_EQ(0, bo_create(fd0, 1 << 20, DRM_SIMACCEL_BO_HOST, &h0));
	ASSERT_EQ(0, bo_create(fd1, 1 << 20, DRM_SIMACCEL_BO_HOST, &h1));
	ASSERT_EQ(0, run_op(fd0, q0, DRM_SIMACCEL_OP_FILL, 0, h0.dev_addr, 0x5a, 1 << 20));
	ASSERT_EQ(0, prime_export(fd0, h0.handle, &dmabuf));
	ASSERT_EQ(0, prime_import(fd1, dmabuf, &imported));
	ASSERT_EQ(0, bo_info(fd1, imported, &info));
	close(dmabuf);
	close(fd0);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr[0]));
	EXPECT_EQ(0, run_op(fd1, q1, DRM_SIMACCEL_OP_COPY, 0, h1.dev_addr,
			    info.dev_addr, 1 << 20));
	m = mmap(NULL, 1 << 20, PROT_READ, MAP_SHARED, fd1, h1.mmap_offset);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0x5a, m[0]);
	EXPECT_EQ(0x5a, m[(1 << 20) - 1]);
	munmap(m, 1 << 20);
	EXPECT_EQ(0, run_op(fd1, q1, DRM_SIMACCEL_OP_FILL, 0, info.dev_addr, 1, 4096));
	EXPECT_EQ(0, gem_close(fd1, imported));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr[0]));
	close(fd1);
}

/*
 * The device total that counts a buffer of @kind: vram_used or host_pinned.
 */
static const char *total_of_kind(uint32_t kind)
{
	return kind == DRM_SIMACCEL_BO_HOST ? "host_pinned" : "vram_used";
}

/*
 * A file of device 1 imports device 0's buffer of @kind, maps it through
 * the dma-buf, queues seconds of fills into it and closes,
 * with the dma-buf: close() does not wait for the work, which runs to its
 * end (QUEUE_DESTROY and close() by a live process let jobs run), the
 * mapping shows it, and once the exporter lets go too the buffer's memory
 * comes back: the import is gone with its file and its jobs.
 */
static void close_an_importer_with_work_queued(struct __test_metadata *_metadata,
					       uint32_t kind)
{
	const size_t len = 16 << 20;
	struct drm_simaccel_op load[32];
	struct drm_simaccel_op last = { .op = DRM_SIMACCEL_OP_FILL, .src = 0x22, .size = len / 2 };
	struct drm_simaccel_sync out = { 0 };
	struct sync_file_info sfi = { 0 };
	struct drm_simaccel_bo_create bo;
	struct drm_simaccel_bo_info info;
	const char *total = total_of_kind(kind);
	long long base;
	struct pollfd pfd = { .events = POLLIN };
	uint32_t queue, imported;
	char addr[2][64];
	int fd0, fd1, dmabuf, i;
	double start;
	uint8_t *m;

	ASSERT_EQ(0, bound_devices(addr));
	fd0 = open_by_pci(addr[0]);
	fd1 = open_by_pci(addr[1]);
	ASSERT_LE(0, fd0);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, settle(fd0));
	base = device_total_of(addr[0], total);
	ASSERT_LE(0, base);
	ASSERT_EQ(0, bo_create(fd0, len, kind, &bo));
	ASSERT_EQ(0, prime_export(fd0, bo.handle, &dmabuf));
	ASSERT_EQ(0, prime_import(fd1, dmabuf, &imported));
	ASSERT_EQ(0, bo_info(fd1, imported, &info));
	EXPECT_EQ(DRM_SIMACCEL_BO_IMPORTED, info.kind);
	ASSERT_EQ(0, queue_create(fd1, &queue));
	ASSERT_EQ(0, syncobj_create(fd1, &out.handle));
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, dmabuf, 0);
	ASSERT_NE(MAP_FAILED, m);
	for (i = 0; i < 32; i++)
		load[i] = (struct drm_simaccel_op){
			.op = DRM_SIMACCEL_OP_FILL, .dst = info.dev_addr,
			.src = 0x11, .size = len,
		};
	last.dst = info.dev_addr + len / 2;
	/* 32 GiB of fills: more than a second of work */
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, submit(fd1, queue, 0, load, 32, NULL, 0, NULL));
	ASSERT_EQ(0, submit(fd1, queue, 0, &last, 1, NULL, 0, &out));
	pfd.fd = sync_file_export(fd1, out.handle);
	ASSERT_LE(0, pfd.fd);
	/* the work is queued when the file goes, or this shows nothing */
	ASSERT_EQ(-ETIME, syncobj_signalled(fd1, out.handle));
	close(dmabuf);
	start = seconds();
	EXPECT_EQ(0, close(fd1));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("close() waited for the jobs");
	ASSERT_EQ(1, poll(&pfd, 1, 60000));
	TH_LOG("the work ended %.2f s after the close", seconds() - start);
	ASSERT_EQ(0, ioctl(pfd.fd, SYNC_IOC_FILE_INFO, &sfi));
	EXPECT_EQ(1, sfi.status) TH_LOG("the last job failed: %d", sfi.status);
	close(pfd.fd);
	EXPECT_EQ(0x11, m[0]);
	EXPECT_EQ(0x11, m[len / 2 - 1]);
	EXPECT_EQ(0x22, m[len / 2]);
	EXPECT_EQ(0x22, m[len - 1]);
	EXPECT_EQ(0, munmap(m, len));
	EXPECT_EQ(base + (long long)len, device_total_of(addr[0], total));
	ASSERT_EQ(0, gem_close(fd0, bo.handle));
	/* the importer's file, jobs and import held nothing back */
	EXPECT_EQ(base, wait_device_total_of(addr[0], total, base, 5.0))
		TH_LOG("the exporter's buffer outlived its last user");
	close(fd0);
}

TEST(an_importer_closed_with_work_queued_on_a_peers_vram_lets_it_run_and_go)
{
	close_an_importer_with_work_queued(_metadata, DRM_SIMACCEL_BO_VRAM_MAPPABLE);
}

TEST(an_importer_closed_with_work_queued_on_a_peers_host_buffer_lets_it_run_and_go)
{
	close_an_importer_with_work_queued(_metadata, DRM_SIMACCEL_BO_HOST);
}

/*
 * A process killed with an import of a peer's HOST buffer and work queued
 * on it dies at once, and lets go of the import: the exporter's buffer is
 * still its own to use, and its memory comes back once the exporter lets
 * go (the dma-buf's pages are the exporter's, the import held them).
 */
TEST(a_killed_importer_of_a_peers_host_buffer_lets_it_go)
{
	const size_t len = 16 << 20;
	struct drm_simaccel_bo_create h0;
	long long base;
	char addr[2][64];
	int fd0, ready[2], status, dmabuf;
	uint32_t q0;
	double start;
	pid_t child;
	char c;

	ASSERT_EQ(0, bound_devices(addr));
	fd0 = open_by_pci(addr[0]);
	ASSERT_LE(0, fd0);
	ASSERT_EQ(0, queue_create(fd0, &q0));
	base = device_total_of(addr[0], "host_pinned");
	ASSERT_LE(0, base);
	ASSERT_EQ(0, bo_create(fd0, len, DRM_SIMACCEL_BO_HOST, &h0));
	ASSERT_EQ(0, prime_export(fd0, h0.handle, &dmabuf));
	ASSERT_EQ(0, pipe(ready));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		struct drm_simaccel_op fill = {
			.op = DRM_SIMACCEL_OP_FILL, .src = 0x11, .size = len,
		};
		struct drm_simaccel_bo_info info;
		int fd1 = open_by_pci(addr[1]);
		uint32_t queue, imported;

		if (fd1 < 0 || queue_create(fd1, &queue) ||
		    prime_import(fd1, dmabuf, &imported) || bo_info(fd1, imported, &info))
			_exit(2);
		close(dmabuf);
		fill.dst = info.dev_addr;
		for (int i = 0; i < 64; i++)
			if (submit(fd1, queue, 0, &fill, 1, NULL, 0, NULL))
				_exit(3);
		if (write(ready[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(5);
	}
	close(dmabuf);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	start = seconds();
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_GT(3.0, seconds() - start) TH_LOG("the killed importer lingered");
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(0, run_op(fd0, q0, DRM_SIMACCEL_OP_FILL, 0, h0.dev_addr, 0x33, len));
	EXPECT_EQ(base + (long long)len, device_total_of(addr[0], "host_pinned"));
	ASSERT_EQ(0, gem_close(fd0, h0.handle));
	EXPECT_EQ(base, wait_device_total_of(addr[0], "host_pinned", base, 5.0))
		TH_LOG("the killed importer's import held the buffer");
	close(fd0);
	close(ready[0]);
	close(ready[1]);
}

/*
 * A child creates a VRAM buffer whose clearing queues behind 4 s of
 * clearing (16 MB/s), and exports it; it says so on @ready first.
 */
static void export_behind_slow_work(int ready)
{
	struct drm_simaccel_bo_create vram;
	int fd = open(NODE0, O_RDWR | O_CLOEXEC), dmabuf;

	if (fd < 0)
		_exit(2);
	if (queue_slow_clearing(fd))
		_exit(3);
	if (bo_create(fd, 1 << 20, DRM_SIMACCEL_BO_VRAM, &vram))
		_exit(4);
	if (write(ready, "x", 1) != 1)
		_exit(5);
	_exit(prime_export(fd, vram.handle, &dmabuf) ? 6 : 0);
}

TEST(an_export_waiting_for_a_clearing_holds_no_one_up)
{
	struct drm_simaccel_bo_create bo;
	int fds[2], fd, status = 0;
	double start;
	char c;
	pid_t pid;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a throttled device (SIMACCEL_SLOW_DEVICE)");
	fd = open(NODE0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		export_behind_slow_work(fds[1]);
	ASSERT_EQ(1, read(fds[0], &c, 1));
	ASSERT_TRUE(wait_in_ioctl(pid, DRM_IOCTL_PRIME_HANDLE_TO_FD))
		TH_LOG("the export never waited");
	usleep(100000);			/* asleep in it, whatever it holds */
	start = seconds();
	EXPECT_EQ(0, bo_create(fd, 4096, DRM_SIMACCEL_BO_HOST, &bo));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("another user's buffer waited");
	EXPECT_EQ(0, waitpid(pid, &status, WNOHANG)) TH_LOG("the export did not wait: status 0x%x", status);
	start = seconds();
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("the exporter outlived SIGKILL");
	EXPECT_TRUE(WIFSIGNALED(status));
	close(fd);
}

/*
 * The importer's device is unbound and bound again while a file of its old
 * binding holds an import of a peer's HOST buffer: every ioctl of the old
 * file fails with ENODEV, the new binding imports the same dma-buf afresh
 * and reaches its pages, closing the old file is clean, and once every side
 * lets go the exporter's memory comes back.
 */
TEST(an_import_of_a_peers_host_buffer_across_the_importers_rebind)
{
	const size_t len = 1 << 20;
	struct drm_simaccel_bo_create h0;
	struct drm_simaccel_bo_info info;
	uint32_t q0, q1, imported, again;
	long long base;
	char addr[2][64];
	int fd0, fd1, fd1b, dmabuf;
	uint8_t *m;

	ASSERT_EQ(0, bound_devices(addr));
	fd0 = open_by_pci(addr[0]);
	fd1 = open_by_pci(addr[1]);
	ASSERT_LE(0, fd0);
	ASSERT_LE(0, fd1);
	base = device_total_of(addr[0], "host_pinned");
	ASSERT_LE(0, base);
	ASSERT_EQ(0, queue_create(fd0, &q0));
	ASSERT_EQ(0, bo_create(fd0, len, DRM_SIMACCEL_BO_HOST, &h0));
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd0, h0.mmap_offset);
	ASSERT_NE(MAP_FAILED, m);
	ASSERT_EQ(0, prime_export(fd0, h0.handle, &dmabuf));
	ASSERT_EQ(0, prime_import(fd1, dmabuf, &imported));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr[1]));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr[1]));
	fd1b = open_by_pci(addr[1]);
	ASSERT_LE(0, fd1b);
	/* the old file's import is the old binding's */
	EXPECT_EQ(-ENODEV, bo_info(fd1, imported, &info));
	EXPECT_EQ(-ENODEV, prime_import(fd1, dmabuf, &again));
	EXPECT_EQ(-ENODEV, gem_close(fd1, imported));
	/* the new binding's import is its own, and reaches the pages */
	ASSERT_EQ(0, prime_import(fd1b, dmabuf, &again));
	ASSERT_EQ(0, bo_info(fd1b, again, &info));
	EXPECT_EQ(DRM_SIMACCEL_BO_IMPORTED, info.kind);
	ASSERT_EQ(0, queue_create(fd1b, &q1));
	EXPECT_EQ(0, run_op(fd1b, q1, DRM_SIMACCEL_OP_FILL, 0, info.dev_addr, 0x6b, len));
	EXPECT_EQ(0x6b, m[0]);
	EXPECT_EQ(0x6b, m[len - 1]);
	EXPECT_EQ(0, close(fd1));
	/* the exporter's buffer is whole */
	EXPECT_EQ(0, run_op(fd0, q0, DRM_SIMACCEL_OP_FILL, 0, h0.dev_addr, 0x11, len));
	EXPECT_EQ(0x11, m[len - 1]);
	close(fd1b);
	close(dmabuf);
	EXPECT_EQ(0, munmap(m, len));
	ASSERT_EQ(0, gem_close(fd0, h0.handle));
	EXPECT_EQ(base, wait_device_total_of(addr[0], "host_pinned", base, 2.0))
		TH_LOG("an import held the exporter's buffer");
	close(fd0);
	/* no file of the old binding is left: it comes back as accel1 */
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr[1]));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr[1]));
}

/*
 * A sync_file of a job on an import of a peer's VRAM, queued behind a
 * stalled job: when the peer (the exporter) is unbound, the job fails
 * with ENODEV and so does its fence, which the sync_file shows.
 */
TEST(a_sync_file_of_a_job_on_a_peers_vram_fails_with_the_peer)
{
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .src = 1, .size = 4096 };
	struct drm_simaccel_sync out = { 0 };
	struct sync_file_info sfi = { 0 };
	struct pollfd pfd = { .events = POLLIN };
	struct drm_simaccel_bo_create h1;
	struct peer_import p;
	double start;

	ASSERT_EQ(0, import_peer_vram(&p, 4096));
	ASSERT_EQ(0, bo_create(p.fd1, 4096, DRM_SIMACCEL_BO_HOST, &h1));
	ASSERT_EQ(0, syncobj_create(p.fd1, &out.handle));
	ASSERT_EQ(0, inject_all_of(p.addr[1], "0x10000"));
	fill.dst = h1.dev_addr;
	ASSERT_EQ(0, submit(p.fd1, p.queue, 0, &fill, 1, NULL, 0, NULL));
	fill.dst = p.dev_addr;
	ASSERT_EQ(0, submit(p.fd1, p.queue, 0, &fill, 1, NULL, 0, &out));
	pfd.fd = sync_file_export(p.fd1, out.handle);
	ASSERT_LE(0, pfd.fd);
	usleep(100000);
	ASSERT_EQ(0, ioctl(pfd.fd, SYNC_IOC_FILE_INFO, &sfi));
	EXPECT_EQ(0, sfi.status);
	start = seconds();
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", p.addr[0]));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("the unbind waited for the stalled job");
	/* behind the stalled job's time-out (2 s) */
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	sfi = (struct sync_file_info){ 0 };
	ASSERT_EQ(0, ioctl(pfd.fd, SYNC_IOC_FILE_INFO, &sfi));
	EXPECT_EQ(-ENODEV, sfi.status);
	close(pfd.fd);
	ASSERT_EQ(0, inject_all_of(p.addr[1], "0"));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", p.addr[0]));
	ASSERT_EQ(0, gem_close(p.fd1, p.handle));
	close(p.fd1);
}

TEST_HARNESS_MAIN
