// SPDX-License-Identifier: GPL-2.0
/*
 * accel.ko queues and fences: asynchronous copies and fills, ordering,
 * waits across queues, fault and time-out recovery, poll, fairness between
 * contexts, and a process killed with work in flight. Run as root in the VM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "accel_util.h"
#include "../../uapi/accel.h"

#define MiB (1ull << 20)
#define DEBUGFS "/sys/kernel/debug/accel/accel0"
#define DMA_TIMEOUT "/sys/module/accel/parameters/dma_timeout_ms"


static uint32_t queue_create(int fd, uint32_t *hw)
{
	struct accel_queue_create c = { 0 };

	if (ioctl(fd, ACCEL_IOCTL_QUEUE_CREATE, &c))
		return 0;
	if (hw)
		*hw = c.hw_queue;
	return c.handle;
}

static int queue_destroy(int fd, uint32_t q)
{
	struct accel_queue_destroy d = { .handle = q };

	return ioctl(fd, ACCEL_IOCTL_QUEUE_DESTROY, &d);
}

static uint64_t alloc_vram(int fd, uint64_t size)
{
	struct accel_alloc a = { .size = size, .kind = ACCEL_MEM_DEVICE };

	return ioctl(fd, ACCEL_IOCTL_ALLOC, &a) ? 0 : a.dev_addr;
}

static uint64_t submit(int fd, uint32_t q, uint32_t op, uint64_t dst,
		       uint64_t src, uint64_t size, uint32_t flags,
		       uint32_t value, uint64_t wait_fence)
{
	struct accel_submit s = { .queue = q, .op = op, .dst = dst, .src = src,
				  .size = size, .flags = flags, .value = value,
				  .wait_fence = wait_fence };

	return ioctl(fd, ACCEL_IOCTL_SUBMIT, &s) ? 0 : s.fence;
}

static uint64_t submit_fill(int fd, uint32_t q, uint64_t dst, uint64_t size,
			    uint32_t value)
{
	return submit(fd, q, ACCEL_SUBMIT_MEMSET, dst, 0, size, 0, value, 0);
}

static uint64_t submit_d2h(int fd, uint32_t q, void *dst, uint64_t src,
			   uint64_t size)
{
	return submit(fd, q, ACCEL_SUBMIT_COPY, (uintptr_t)dst, src, size,
		      ACCEL_COPY_DST_USER, 0, 0);
}

static int wait_fence(int fd, uint64_t fence, int64_t timeout_ns)
{
	struct accel_wait w = { .fence = fence, .timeout_ns = timeout_ns };

	return ioctl(fd, ACCEL_IOCTL_WAIT, &w) ? -errno : 0;
}


static int fault_inject(uint32_t hw_queue, const char *value)
{
	char path[128];

	snprintf(path, sizeof(path), DEBUGFS "/fault_inject_q%u", hw_queue);
	return write_file(path, value);
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static uint64_t vram_used(int fd)
{
	struct accel_mem_stats s = { 0 };

	ioctl(fd, ACCEL_IOCTL_MEM_STATS, &s);
	return s.vram_used;
}

FIXTURE(q) {
	int fd;
	uint32_t queue;
	uint32_t hw;
	uint64_t base_used;
};

FIXTURE_SETUP(q)
{
	self->fd = dev_open();
	ASSERT_GE(self->fd, 0);
	self->base_used = vram_used(self->fd);
	self->queue = queue_create(self->fd, &self->hw);
	ASSERT_NE(0, self->queue);
	ASSERT_GE(self->hw, 1);
}

FIXTURE_TEARDOWN(q)
{
	int fd;

	write_file(DMA_TIMEOUT, "10000");
	close(self->fd);
	fd = dev_open();
	ASSERT_GE(fd, 0);
	EXPECT_EQ(self->base_used, vram_used(fd));
	close(fd);
}

TEST_F(q, create_and_destroy)
{
	struct accel_queue_create c = { .flags = 1 };
	uint32_t other = queue_create(self->fd, NULL);

	EXPECT_NE(0, other);
	EXPECT_NE(self->queue, other);
	EXPECT_EQ(0, queue_destroy(self->fd, other));
	EXPECT_EQ(-1, queue_destroy(self->fd, other));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, queue_destroy(self->fd, 0));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_QUEUE_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	/* queues belong to their file */
	int fd2 = dev_open();

	EXPECT_EQ(-1, queue_destroy(fd2, self->queue));
	EXPECT_EQ(ENOENT, errno);
	close(fd2);
}

TEST_F(q, async_fill_and_copy)
{
	uint64_t n = 3 * MiB + 7, a = alloc_vram(self->fd, n), f1, f2;
	uint8_t *out = malloc(n);

	ASSERT_NE(0, a);
	ASSERT_NE(NULL, out);
	memset(out, 0, n);
	f1 = submit_fill(self->fd, self->queue, a, n, 0x3c);
	f2 = submit_d2h(self->fd, self->queue, out, a, n);
	ASSERT_NE(0, f1);
	ASSERT_NE(0, f2);
	EXPECT_LT(f1, f2);
	EXPECT_EQ(0, wait_fence(self->fd, f2, -1));
	EXPECT_TRUE(all_bytes(out, n, 0x3c));
	/* in order: the earlier fence is done too */
	EXPECT_EQ(0, wait_fence(self->fd, f1, 0));
	free(out);
}

/* Work on one queue runs in order: each copy sees the fill before it. */
TEST_F(q, ordering_within_a_queue)
{
	uint64_t n = 64 * 1024, a = alloc_vram(self->fd, n), last = 0;
	uint8_t *out = malloc(32 * n);
	int i;

	ASSERT_NE(0, a);
	ASSERT_NE(NULL, out);
	for (i = 0; i < 32; i++) {
		ASSERT_NE(0, submit_fill(self->fd, self->queue, a, n, i + 1));
		last = submit_d2h(self->fd, self->queue, out + i * n, a, n);
		ASSERT_NE(0, last);
	}
	ASSERT_EQ(0, wait_fence(self->fd, last, -1));
	for (i = 0; i < 32; i++)
		EXPECT_TRUE(all_bytes(out + i * n, n, i + 1)) TH_LOG("copy %d", i);
	free(out);
}

TEST_F(q, submit_rejects_bad_input)
{
	uint64_t a = alloc_vram(self->fd, 4096), f;
	struct accel_submit s = { 0 };
	uint8_t buf[64], *heap;

	ASSERT_NE(0, a);
	EXPECT_EQ(0, submit_fill(self->fd, 0, a, 64, 1));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, submit_fill(self->fd, 999, a, 64, 1));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, submit(self->fd, self->queue, 0, a, 0, 64, 0, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, submit(self->fd, self->queue, 77, a, 0, 64, 0, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, submit_fill(self->fd, self->queue, a, 64, 256));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, submit(self->fd, self->queue, ACCEL_SUBMIT_BARRIER, 0, 0, 8,
			    0, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, submit(self->fd, self->queue, ACCEL_SUBMIT_COPY, a,
			    (uintptr_t)buf, 64, 0x40, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	/* ranges the caller does not own */
	EXPECT_EQ(0, submit_fill(self->fd, self->queue, a + 1, 4096, 1));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0, submit_d2h(self->fd, self->queue, NULL, a, 64));
	EXPECT_EQ(EFAULT, errno);
	/* user ranges larger than the RAM: refused before anything is pinned */
	heap = malloc(64);
	ASSERT_NE(NULL, heap);
	EXPECT_EQ(0, submit(self->fd, self->queue, ACCEL_SUBMIT_COPY,
			    (uintptr_t)heap, (uintptr_t)heap + (1ull << 40),
			    1ull << 40, ACCEL_COPY_SRC_USER | ACCEL_COPY_DST_USER,
			    0, 0));
	EXPECT_EQ(ENOMEM, errno);
	free(heap);
	/* a fence nobody issued */
	f = submit_fill(self->fd, self->queue, a, 64, 1);
	ASSERT_NE(0, f);
	EXPECT_EQ(0, submit(self->fd, self->queue, ACCEL_SUBMIT_BARRIER, 0, 0, 0,
			    0, 0, f + 1));
	EXPECT_EQ(EINVAL, errno);
	s.queue = self->queue;
	s.op = ACCEL_SUBMIT_BARRIER;
	s.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_SUBMIT, &s));
	EXPECT_EQ(EINVAL, errno);
	/* a size of 0 does nothing but signal */
	f = submit_fill(self->fd, self->queue, a, 0, 1);
	ASSERT_NE(0, f);
	EXPECT_EQ(0, wait_fence(self->fd, f, -1));
}

TEST_F(q, wait_rejects_bad_fences)
{
	struct accel_wait w = { 0 };
	uint64_t a = alloc_vram(self->fd, 4096), f;

	ASSERT_NE(0, a);
	f = submit_fill(self->fd, self->queue, a, 64, 1);
	ASSERT_NE(0, f);
	EXPECT_EQ(-EINVAL, wait_fence(self->fd, 0, 0));
	EXPECT_EQ(-EINVAL, wait_fence(self->fd, f + 1, 0));
	EXPECT_EQ(-ENOENT, wait_fence(self->fd, f + (1ull << 50), 0));
	w.fence = f;
	w.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, wait_fence(self->fd, f, -1));
	/* a destroyed queue's fences are gone */
	ASSERT_EQ(0, queue_destroy(self->fd, self->queue));
	EXPECT_EQ(-ENOENT, wait_fence(self->fd, f, 0));
	/* and stay gone when a new queue is made */
	self->queue = queue_create(self->fd, NULL);
	ASSERT_NE(0, self->queue);
	EXPECT_EQ(-ENOENT, wait_fence(self->fd, f, 0));
}

/* A queue waits for another queue's fence without a trip to user space. */
TEST_F(q, cross_queue_wait)
{
	uint64_t x = alloc_vram(self->fd, 4096), f1, f2, fb;
	uint32_t hw2, q2 = queue_create(self->fd, &hw2);
	uint8_t out[4096];

	ASSERT_NE(0, x);
	ASSERT_NE(0, q2);
	ASSERT_NE(self->hw, hw2);
	/* queue 1's fill stalls in the device until the driver gives up */
	ASSERT_EQ(0, write_file(DMA_TIMEOUT, "600"));
	ASSERT_EQ(0, fault_inject(self->hw, "0x10000"));
	f1 = submit_fill(self->fd, self->queue, x, 4096, 0x77);
	ASSERT_NE(0, f1);
	/* queue 2, on another hardware queue, copies x only after f1 */
	f2 = submit(self->fd, q2, ACCEL_SUBMIT_COPY, (uintptr_t)out, x, 4096,
		    ACCEL_COPY_DST_USER, 0, f1);
	fb = submit(self->fd, q2, ACCEL_SUBMIT_BARRIER, 0, 0, 0, 0, 0, f1);
	ASSERT_NE(0, f2);
	ASSERT_NE(0, fb);
	EXPECT_EQ(-ETIMEDOUT, wait_fence(self->fd, f2, 200 * 1000 * 1000));
	EXPECT_EQ(-EBUSY, wait_fence(self->fd, fb, 0));
	/* the stalled job fails; the waiters then run */
	EXPECT_EQ(-EIO, wait_fence(self->fd, f1, -1));
	EXPECT_EQ(0, wait_fence(self->fd, f2, -1));
	EXPECT_EQ(0, wait_fence(self->fd, fb, -1));

	/* and with no fault, the copy sees what the other queue wrote */
	f1 = submit_fill(self->fd, self->queue, x, 4096, 0x55);
	f2 = submit(self->fd, q2, ACCEL_SUBMIT_COPY, (uintptr_t)out, x, 4096,
		    ACCEL_COPY_DST_USER, 0, f1);
	ASSERT_EQ(0, wait_fence(self->fd, f2, -1));
	EXPECT_TRUE(all_bytes(out, sizeof(out), 0x55));
}

/* A device fault fails that job with EIO; the queue carries on. */
TEST_F(q, device_fault_fails_the_job)
{
	uint64_t a = alloc_vram(self->fd, 4096), f1, f2, f3;
	uint8_t out[4096];

	ASSERT_NE(0, a);
	ASSERT_EQ(0, fault_inject(self->hw, "1"));
	f1 = submit_fill(self->fd, self->queue, a, 4096, 0x11);
	f2 = submit_fill(self->fd, self->queue, a, 4096, 0x22);
	f3 = submit_d2h(self->fd, self->queue, out, a, sizeof(out));
	ASSERT_TRUE(f1 && f2 && f3);
	EXPECT_EQ(-EIO, wait_fence(self->fd, f1, -1));
	EXPECT_EQ(0, wait_fence(self->fd, f2, -1));
	EXPECT_EQ(0, wait_fence(self->fd, f3, -1));
	EXPECT_TRUE(all_bytes(out, sizeof(out), 0x22));
	/* and keeps reporting it */
	EXPECT_EQ(-EIO, wait_fence(self->fd, f1, 0));
}

/* A stalled job: the wait times out, the driver gives up on the job. */
TEST_F(q, stall_is_recovered)
{
	uint64_t a = alloc_vram(self->fd, 4096), f1, f2;
	struct pollfd p = { .fd = self->fd, .events = POLLIN };
	uint8_t out[4096];

	ASSERT_NE(0, a);
	ASSERT_EQ(0, write_file(DMA_TIMEOUT, "500"));
	ASSERT_EQ(0, fault_inject(self->hw, "0x10000"));
	f1 = submit_fill(self->fd, self->queue, a, 4096, 0x33);
	ASSERT_NE(0, f1);
	EXPECT_EQ(-EBUSY, wait_fence(self->fd, f1, 0));
	EXPECT_EQ(0, poll(&p, 1, 0));		/* work in flight */
	EXPECT_EQ(-ETIMEDOUT, wait_fence(self->fd, f1, 50 * 1000 * 1000));
	EXPECT_EQ(-EIO, wait_fence(self->fd, f1, -1));
	EXPECT_EQ(1, poll(&p, 1, 0));		/* all done */
	f2 = submit_fill(self->fd, self->queue, a, 4096, 0x44);
	ASSERT_NE(0, f2);
	ASSERT_NE(0, submit_d2h(self->fd, self->queue, out, a, sizeof(out)));
	EXPECT_EQ(0, wait_fence(self->fd, f2 + 1, -1));
	EXPECT_TRUE(all_bytes(out, sizeof(out), 0x44));
}

/*
 * Another context's work on the same hardware queue is not starved: it runs
 * after at most a few jobs of a long backlog, not after all of it. How long
 * "long" must be depends on how fast the other context gets its wait in (a
 * debug kernel is slow), so the backlog grows until it outlasts that: a
 * device that ran all of it first is never caught with some left.
 */
TEST_F(q, contexts_share_the_hardware)
{
	int other = dev_open(), i, tries, round;
	uint64_t n = 64 * MiB, a = alloc_vram(self->fd, n), b, last = 0, f;
	uint32_t q2 = 0, hw2 = 0;
	bool overtaken = false;

	ASSERT_GE(other, 0);
	ASSERT_NE(0, a);
	b = alloc_vram(other, 4096);
	ASSERT_NE(0, b);
	/* a queue of the other context on the same hardware queue */
	for (tries = 0; tries < 16 && hw2 != self->hw; tries++)
		q2 = queue_create(other, &hw2);
	ASSERT_EQ(self->hw, hw2);
	for (round = 0; round < 3 && !overtaken; round++) {
		for (i = 0; i < 40 << (2 * round); i++) {
			last = submit_fill(self->fd, self->queue, a, n, i);
			ASSERT_NE(0, last);
		}
		f = submit_fill(other, q2, b, 4096, 9);
		ASSERT_NE(0, f);
		ASSERT_EQ(0, wait_fence(other, f, -1));
		overtaken = wait_fence(self->fd, last, 0) == -EBUSY;
		ASSERT_EQ(0, wait_fence(self->fd, last, -1));
	}
	EXPECT_TRUE(overtaken) TH_LOG("the other context waited for %d jobs",
				      40 << (2 * (round - 1)));
	close(other);
}

/* Queued peer-to-peer work: device 0 pushes into device 1's VRAM. */
TEST_F(q, async_peer_to_peer)
{
	uint64_t n = 5 * MiB + 3, a = alloc_vram(self->fd, n), b;
	int peer = open("/dev/accel1", O_RDWR | O_CLOEXEC);
	struct accel_submit s = { 0 };
	struct accel_copy c = { 0 };
	uint8_t *out = malloc(n);

	if (peer < 0)
		SKIP(return, "needs a second device");
	ASSERT_NE(0, a);
	ASSERT_NE(NULL, out);
	b = alloc_vram(peer, n);
	ASSERT_NE(0, b);
	ASSERT_NE(0, submit_fill(self->fd, self->queue, a, n, 0x6d));
	s.queue = self->queue;
	s.op = ACCEL_SUBMIT_COPY;
	s.dst = b;
	s.src = a;
	s.size = n;
	s.flags = ACCEL_COPY_DST_PEER;
	s.peer_fd = peer;
	ASSERT_EQ(0, ioctl(self->fd, ACCEL_IOCTL_SUBMIT, &s));
	ASSERT_EQ(0, wait_fence(self->fd, s.fence, -1));
	c.dst = (uintptr_t)out;
	c.src = b;
	c.size = n;
	c.flags = ACCEL_COPY_DST_USER;
	ASSERT_EQ(0, ioctl(peer, ACCEL_IOCTL_COPY, &c));
	EXPECT_TRUE(all_bytes(out, n, 0x6d));
	/* a file that is not an accel device is not a peer */
	s.peer_fd = 0;
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_SUBMIT, &s));
	EXPECT_EQ(EINVAL, errno);
	close(peer);
	free(out);
}

static int peer_pci_addr(char *addr, size_t len)
{
	char target[512];
	ssize_t n = readlink("/sys/class/misc/accel1/device", target,
			     sizeof(target) - 1);

	if (n < 0)
		return -1;
	target[n] = 0;
	snprintf(addr, len, "%s", strrchr(target, '/') + 1);
	return 0;
}

/*
 * Unbinding a device waits for queued work of other devices that targets
 * its BAR: here a stalled peer copy, until the driver gives up on it.
 */
TEST_F(q, unbind_peer_with_work_queued)
{
	uint64_t a = alloc_vram(self->fd, 4096), b;
	struct accel_submit s = { 0 };
	char addr[64];
	int peer = open("/dev/accel1", O_RDWR | O_CLOEXEC);

	if (peer < 0 || peer_pci_addr(addr, sizeof(addr)))
		SKIP(return, "needs a second device");
	ASSERT_NE(0, a);
	b = alloc_vram(peer, 4096);
	ASSERT_NE(0, b);
	ASSERT_EQ(0, write_file(DMA_TIMEOUT, "500"));
	ASSERT_EQ(0, fault_inject(self->hw, "0x10000"));
	s.queue = self->queue;
	s.op = ACCEL_SUBMIT_COPY;
	s.dst = b;
	s.src = a;
	s.size = 4096;
	s.flags = ACCEL_COPY_DST_PEER;
	s.peer_fd = peer;
	ASSERT_EQ(0, ioctl(self->fd, ACCEL_IOCTL_SUBMIT, &s));
	EXPECT_EQ(-EBUSY, wait_fence(self->fd, s.fence, 0));
	/* returns once the stalled job has failed and released the BAR */
	ASSERT_EQ(0, write_file("/sys/bus/pci/drivers/accel/unbind", addr));
	EXPECT_EQ(-EIO, wait_fence(self->fd, s.fence, 0));
	close(peer);
	ASSERT_EQ(0, write_file("/sys/bus/pci/drivers/accel/bind", addr));
	EXPECT_EQ(0, access("/dev/accel1", F_OK));
}

/* A process killed with work in flight gives everything back. */
TEST_F(q, killed_with_work_in_flight)
{
	int ready[2], status;
	char c;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = dev_open(), i;
		uint32_t q = queue_create(fd, NULL);
		uint64_t n = 16 * MiB, a = alloc_vram(fd, n);
		uint8_t *buf = malloc(n);

		if (fd < 0 || !q || !a || !buf)
			_exit(1);
		memset(buf, 5, n);
		for (i = 0; i < 40; i++)
			submit(fd, q, ACCEL_SUBMIT_COPY, a, (uintptr_t)buf, n,
			       ACCEL_COPY_SRC_USER, 0, 0);
		write(ready[1], "x", 1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(self->base_used, vram_used(self->fd));
	close(ready[0]);
	close(ready[1]);
}

/* Closing with queued work waits for it: the memory stays valid till then. */
TEST_F(q, close_waits_for_work)
{
	int fd = dev_open();
	uint32_t q = queue_create(fd, NULL);
	uint64_t n = 32 * MiB, a = alloc_vram(fd, n);
	int i;

	ASSERT_TRUE(fd >= 0 && q && a);
	for (i = 0; i < 8; i++)
		ASSERT_NE(0, submit_fill(fd, q, a, n, i));
	close(fd);
	EXPECT_EQ(self->base_used, vram_used(self->fd));
}

TEST_HARNESS_MAIN
