// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel.ko: memory kinds, device addresses, queues and jobs, against the
 * uapi header's contract, as root in the VM (an unprivileged child where the
 * contract is about limits).
 *
 * - HOST buffers are mappable system memory, USERPTR buffers are the
 *   caller's memory; both and VRAM are reachable by copies and fills in
 *   every direction, and by pointers to unregistered memory (*_USER);
 * - device addresses resolve per file: base + k inside a buffer works, a
 *   range past its end, an address no buffer holds, and another file's
 *   buffer do not (ENOENT); a READ_ONLY USERPTR is never written (EACCES);
 * - SUBMIT checks every field; queues are bounded per file and their
 *   handles are not reused at once;
 * - syncobjs: a job signals a binary syncobj or a timeline point, and a job
 *   that waits for another queue's point runs after it;
 * - failures: a descriptor failed by fault injection fails its job with
 *   EIO and a stalled one with ETIMEDOUT, the queue's later work runs, a
 *   slow job that progresses survives the time-out (on a throttled device,
 *   with SIMACCEL_SLOW_DEVICE set), and a buffer whose clearing failed is
 *   read by no job and no mapping;
 * - USERPTR and *_USER pins are charged against RLIMIT_MEMLOCK, per user
 *   (children pinning into a parent's file and exiting included), huge
 *   ones refused before anything is allocated, and the device's sysfs
 *   totals count buffers and pins and return to baseline;
 * - a submission is one job: it fails as a whole, past 16383 descriptors
 *   it is refused, and a job that fails at once returns at once, whatever
 *   other files' jobs are slow on the same hardware queue; fdinfo shows
 *   the buffers of a running job as active;
 * - fdinfo's drm-engine-copy counts each file's own jobs' engine time;
 * - sysfs busy_time_us grows by at least a job's drm-engine-copy, not while
 *   the device is idle, never decreases while jobs run, and is at least
 *   the sum of the files' drm-engine-copy;
 * - a device fault and a time-out leave a devcoredump (root's only) that
 *   names the queue, its registers, the failed job and its descriptors,
 *   dismissed by a write; one pending outlives unbind (and the module's
 *   unload, with SIMACCEL_KO naming the module to load again);
 * - unbinding the device with jobs queued fails them (or lets them finish)
 *   and every file operation afterwards is safe, and does not wait for a
 *   BO_CREATE waiting on full VRAM for clearings behind another user's
 *   slow work, and a fault waiting for a clearing holds no mmap lock (on a
 *   throttled device); a process killed with
 *   jobs stuck in flight dies within 3 s and what they held comes back; a
 *   queue with jobs queued across unbind and bind fails them, its file's
 *   ioctls fail with ENODEV, and closing it leaves nothing behind;
 * - a queue's jobs run in order; user memory to user memory works.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>
#include <linux/sync_file.h>

#include "kselftest_harness.h"
#include "simaccel_util.h"
#include "simaccel_devcd.h"
#include "../../include/accel_hw.h"

#define MIB		(1024 * 1024ull)

static int userptr(int fd, void *p, uint64_t size, uint32_t flags,
		   struct drm_simaccel_bo_userptr *out)
{
	*out = (struct drm_simaccel_bo_userptr){
		.user_addr = (uintptr_t)p, .size = size, .flags = flags,
	};
	return ioctl(fd, DRM_IOCTL_SIMACCEL_BO_USERPTR, out) ? -errno : 0;
}

static int copy(int fd, uint32_t queue, uint64_t dst, uint64_t src,
		uint64_t size)
{
	return run_op(fd, queue, DRM_SIMACCEL_OP_COPY, 0, dst, src, size);
}

static void *map_bo(int fd, const struct drm_simaccel_bo_create *bo)
{
	return mmap(NULL, bo->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    bo->mmap_offset);
}

static void fill_pattern(uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 12));
}

FIXTURE(job) {
	int fd;
	uint32_t queue;
};

FIXTURE_SETUP(job)
{
	self->fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", NODE, strerror(errno));
	ASSERT_EQ(0, queue_create(self->fd, &self->queue));
}

FIXTURE_TEARDOWN(job)
{
	close(self->fd);
}

TEST_F(job, host_buffers_are_mappable_zeroed_system_memory)
{
	struct drm_simaccel_bo_create bo;
	uint8_t *p;

	ASSERT_EQ(0, bo_create(self->fd, 3 * 4096 + 5, DRM_SIMACCEL_BO_HOST, &bo));
	EXPECT_NE(0, bo.handle);
	EXPECT_LE(DRM_SIMACCEL_HOST_BASE, bo.dev_addr);
	ASSERT_NE(0, bo.mmap_offset);
	p = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 bo.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	for (size_t i = 0; i < 4 * 4096; i++)
		ASSERT_EQ(0, p[i]);
	memset(p, 0x5a, 4 * 4096);
	EXPECT_EQ(0x5a, p[4 * 4096 - 1]);
	/* copy-on-write mappings are refused */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_PRIVATE,
				   self->fd, bo.mmap_offset));
	munmap(p, 4 * 4096);
	EXPECT_EQ(0, gem_close(self->fd, bo.handle));
}

/* host -> vram -> vram -> host, and user memory in and out */
TEST_F(job, copies_in_every_direction_keep_the_bytes)
{
	const size_t len = 3 * MIB + 123;
	struct drm_simaccel_bo_create h1, h2, v1, v2;
	struct drm_simaccel_bo_userptr u;
	uint8_t *src = malloc(len), *dst = malloc(len), *m1, *m2;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	fill_pattern(src, len, 1);
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_HOST, &h1));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_HOST, &h2));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_VRAM, &v1));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &v2));
	m1 = map_bo(self->fd, &h1);
	m2 = map_bo(self->fd, &h2);
	ASSERT_NE(MAP_FAILED, m1);
	ASSERT_NE(MAP_FAILED, m2);
	memcpy(m1, src, len);
	ASSERT_EQ(0, copy(self->fd, self->queue, v1.dev_addr, h1.dev_addr, len));
	ASSERT_EQ(0, copy(self->fd, self->queue, v2.dev_addr, v1.dev_addr, len));
	ASSERT_EQ(0, copy(self->fd, self->queue, h2.dev_addr, v2.dev_addr, len));
	EXPECT_EQ(0, memcmp(src, m2, len));
	/* a registered user buffer, and a plain user pointer */
	ASSERT_EQ(0, userptr(self->fd, dst, len, 0, &u));
	ASSERT_EQ(0, copy(self->fd, self->queue, u.dev_addr, v1.dev_addr, len));
	EXPECT_EQ(0, memcmp(src, dst, len));
	memset(dst, 0, len);
	ASSERT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_COPY,
			    DRM_SIMACCEL_OP_DST_USER, (uintptr_t)dst,
			    v2.dev_addr, len));
	EXPECT_EQ(0, memcmp(src, dst, len));
	fill_pattern(src, len, 2);
	ASSERT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_COPY,
			    DRM_SIMACCEL_OP_SRC_USER, h2.dev_addr,
			    (uintptr_t)src, len));
	EXPECT_EQ(0, memcmp(src, m2, len));
	munmap(m1, h1.size);
	munmap(m2, h2.size);
	free(src);
	free(dst);
}

TEST_F(job, fills_write_the_byte_and_nothing_else)
{
	struct drm_simaccel_bo_create v;
	uint8_t *m;
	size_t i;

	ASSERT_EQ(0, bo_create(self->fd, 2 * 4096, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &v));
	m = map_bo(self->fd, &v);
	ASSERT_NE(MAP_FAILED, m);
	memset(m, 0x11, 2 * 4096);
	ASSERT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
			    v.dev_addr + 100, 0xab, 5000));
	for (i = 0; i < 2 * 4096; i++)
		ASSERT_EQ(i >= 100 && i < 5100 ? 0xab : 0x11, m[i]) TH_LOG("byte %zu", i);
	munmap(m, v.size);
}

TEST_F(job, addresses_resolve_inside_this_files_buffers_only)
{
	struct drm_simaccel_bo_create a, b, other;
	int fd2 = open(NODE, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, bo_create(self->fd, 8192, DRM_SIMACCEL_BO_VRAM, &a));
	ASSERT_EQ(0, bo_create(self->fd, 8192, DRM_SIMACCEL_BO_HOST, &b));
	ASSERT_EQ(0, bo_create(fd2, 8192, DRM_SIMACCEL_BO_VRAM, &other));
	/* base + k, to the last byte */
	EXPECT_EQ(0, copy(self->fd, self->queue, a.dev_addr + 4095, b.dev_addr + 17, 4097));
	EXPECT_EQ(0, copy(self->fd, self->queue, a.dev_addr + 8191, b.dev_addr, 1));
	/* one byte past the end, an address between buffers, none at all */
	EXPECT_EQ(-ENOENT, copy(self->fd, self->queue, a.dev_addr + 4096, b.dev_addr, 4097));
	EXPECT_EQ(-ENOENT, copy(self->fd, self->queue, a.dev_addr, b.dev_addr + 8192, 1));
	EXPECT_EQ(-ENOENT, copy(self->fd, self->queue, 0, b.dev_addr, 1));
	EXPECT_EQ(-ENOENT, copy(self->fd, self->queue, ~0ull, b.dev_addr, 1));
	/* another file's buffer, either side */
	EXPECT_EQ(-ENOENT, copy(self->fd, self->queue, other.dev_addr, b.dev_addr, 1));
	EXPECT_EQ(-ENOENT, copy(self->fd, self->queue, b.dev_addr, other.dev_addr, 1));
	/* a closed handle's range is gone */
	ASSERT_EQ(0, gem_close(self->fd, a.handle));
	EXPECT_EQ(-ENOENT, copy(self->fd, self->queue, a.dev_addr, b.dev_addr, 1));
	close(fd2);
}

TEST_F(job, read_only_user_memory_is_never_written)
{
	struct drm_simaccel_bo_create v;
	struct drm_simaccel_bo_userptr u;
	uint8_t *ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_EQ(0, bo_create(self->fd, 8192, DRM_SIMACCEL_BO_VRAM, &v));
	/* writable registration of read-only memory fails */
	EXPECT_EQ(-EFAULT, userptr(self->fd, ro, 8192, 0, &u));
	ASSERT_EQ(0, userptr(self->fd, ro, 8192, DRM_SIMACCEL_USERPTR_READ_ONLY, &u));
	EXPECT_EQ(0, copy(self->fd, self->queue, v.dev_addr, u.dev_addr, 8192));
	EXPECT_EQ(-EACCES, copy(self->fd, self->queue, u.dev_addr, v.dev_addr, 8192));
	EXPECT_EQ(-EACCES, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
				  u.dev_addr, 1, 1));
	/* nor through a plain pointer */
	EXPECT_EQ(-EFAULT, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_COPY,
				  DRM_SIMACCEL_OP_DST_USER, (uintptr_t)ro,
				  v.dev_addr, 8192));
	for (int i = 0; i < 8192; i++)
		ASSERT_EQ(0, ro[i]);
	munmap(ro, 8192);
}

TEST_F(job, submit_refuses_bad_arguments)
{
	struct drm_simaccel_bo_create v;
	struct drm_simaccel_op ops[DRM_SIMACCEL_MAX_OPS + 1];
	struct drm_simaccel_sync in = { .handle = 0x7fffffff }, out = { 0 };
	struct drm_simaccel_submit s;

	ASSERT_EQ(0, bo_create(self->fd, 4096, DRM_SIMACCEL_BO_VRAM, &v));
	for (int i = 0; i <= DRM_SIMACCEL_MAX_OPS; i++)
		ops[i] = (struct drm_simaccel_op){
			.op = DRM_SIMACCEL_OP_FILL, .dst = v.dev_addr, .size = 1,
		};
	EXPECT_EQ(0, submit(self->fd, self->queue, 0, ops, 1, NULL, 0, NULL));
	EXPECT_EQ(0, submit(self->fd, self->queue, DRM_SIMACCEL_SUBMIT_WAIT, ops,
			    DRM_SIMACCEL_MAX_OPS, NULL, 0, NULL));
	EXPECT_EQ(-EINVAL, submit(self->fd, self->queue, 2, ops, 1, NULL, 0, NULL));
	EXPECT_EQ(-EINVAL, submit(self->fd, self->queue, 0, ops,
				  DRM_SIMACCEL_MAX_OPS + 1, NULL, 0, NULL));
	EXPECT_EQ(-ENOENT, submit(self->fd, 0, 0, ops, 1, NULL, 0, NULL));
	EXPECT_EQ(-ENOENT, submit(self->fd, self->queue + 1000, 0, ops, 1, NULL, 0, NULL));
	EXPECT_EQ(-EFAULT, submit(self->fd, self->queue, 0, (void *)8, 1, NULL, 0, NULL));
	EXPECT_EQ(-ENOENT, submit(self->fd, self->queue, 0, ops, 1, &in, 1, NULL));
	EXPECT_EQ(-EINVAL, submit(self->fd, self->queue, 0, ops, 1, &in,
				  DRM_SIMACCEL_MAX_IN_SYNCS + 1, NULL));
	out.pad = 1;
	EXPECT_EQ(-EINVAL, submit(self->fd, self->queue, 0, ops, 1, NULL, 0, &out));
	out = (struct drm_simaccel_sync){ .point = 1 };
	EXPECT_EQ(-EINVAL, submit(self->fd, self->queue, 0, ops, 1, NULL, 0, &out));
	out = (struct drm_simaccel_sync){ .handle = 0x7fffffff };
	EXPECT_EQ(-ENOENT, submit(self->fd, self->queue, 0, ops, 1, NULL, 0, &out));
	/* each field of an operation */
	ops[0].op = 3;
	EXPECT_EQ(-EINVAL, submit(self->fd, self->queue, 0, ops, 1, NULL, 0, NULL));
	ops[0].op = 0;
	EXPECT_EQ(-EINVAL, submit(self->fd, self->queue, 0, ops, 1, NULL, 0, NULL));
	ops[0].op = DRM_SIMACCEL_OP_FILL;
	ops[0].src = 256;
	EXPECT_EQ(-EINVAL, submit(self->fd, self->queue, 0, ops, 1, NULL, 0, NULL));
	ops[0].src = 0;
	ops[0].flags = DRM_SIMACCEL_OP_SRC_USER;
	EXPECT_EQ(-EINVAL, submit(self->fd, self->queue, 0, ops, 1, NULL, 0, NULL));
	ops[0].flags = 4;
	EXPECT_EQ(-EINVAL, submit(self->fd, self->queue, 0, ops, 1, NULL, 0, NULL));
	ops[0].flags = 0;
	ops[0].size = 0;
	EXPECT_EQ(-EINVAL, submit(self->fd, self->queue, 0, ops, 1, NULL, 0, NULL));
	ops[0].size = 1;
	/* a bad op after a good one refuses the whole submission */
	ops[1].size = 4097;
	EXPECT_EQ(-ENOENT, submit(self->fd, self->queue, 0, ops, 2, NULL, 0, NULL));
	/* seqnos count this queue's jobs */
	s = (struct drm_simaccel_submit){ .queue = self->queue, .op_count = 1,
					  .ops = (uintptr_t)ops };
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SIMACCEL_SUBMIT, &s));
	EXPECT_EQ(3, s.seqno);
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SIMACCEL_SUBMIT, &s));
	EXPECT_EQ(4, s.seqno);
}

TEST_F(job, queue_query_checks_its_arguments)
{
	struct drm_simaccel_queue_query q = { .handle = self->queue, .pad = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SIMACCEL_QUEUE_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
	q = (struct drm_simaccel_queue_query){ .handle = self->queue, .recent_count = 1 };
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SIMACCEL_QUEUE_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
	/* no failure yet: nothing written, not even through a bad pointer */
	q = (struct drm_simaccel_queue_query){ .handle = self->queue, .recent_count = 1,
					       .recent = 8 };
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_SIMACCEL_QUEUE_QUERY, &q));
	EXPECT_EQ(0, q.recent_count);
	EXPECT_EQ(-ENOENT, queue_query(self->fd, self->queue + 1, &q));
	EXPECT_EQ(-ENOENT, queue_query(self->fd, 0, &q));
	ASSERT_EQ(0, queue_query(self->fd, self->queue, &q));
	EXPECT_EQ(0, q.submitted);
	EXPECT_EQ(0, q.failed);
}

TEST_F(job, queues_are_bounded_and_handles_not_reused_at_once)
{
	uint32_t h[DRM_SIMACCEL_MAX_QUEUES_PER_FILE], extra, again;
	struct drm_simaccel_queue_create bad = { .flags = 1 };
	struct drm_simaccel_queue_destroy pad = { .handle = self->queue, .pad = 1 };
	int n;

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SIMACCEL_QUEUE_CREATE, &bad));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SIMACCEL_QUEUE_DESTROY, &pad));
	EXPECT_EQ(EINVAL, errno);
	/* the fixture's queue is one of them */
	for (n = 0; n < DRM_SIMACCEL_MAX_QUEUES_PER_FILE - 1; n++)
		ASSERT_EQ(0, queue_create(self->fd, &h[n]));
	EXPECT_EQ(-EMFILE, queue_create(self->fd, &extra));
	ASSERT_EQ(0, queue_destroy(self->fd, h[0]));
	EXPECT_EQ(-ENOENT, queue_destroy(self->fd, h[0]));
	EXPECT_EQ(-ENOENT, queue_destroy(self->fd, 0));
	ASSERT_EQ(0, queue_create(self->fd, &again));
	EXPECT_NE(h[0], again);
	EXPECT_NE(0, again);
}

/*
 * MEM_INFO settled: a buffer freed after the job that used it signalled
 * no longer counts, although the job lets it go in a work item after.
 */
TEST_F(job, mem_info_settled_waits_for_finished_jobs_to_let_go)
{
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .src = 7, .size = MIB };
	struct drm_simaccel_mem_info before = { .flags = DRM_SIMACCEL_MEM_INFO_SETTLE };
	struct drm_simaccel_sync out = { 0 };
	struct drm_simaccel_bo_create v;

	ASSERT_EQ(0, syncobj_create(self->fd, &out.handle));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SIMACCEL_MEM_INFO, &before));
	for (int i = 0; i < 50; i++) {
		struct drm_simaccel_mem_info after = { .flags = DRM_SIMACCEL_MEM_INFO_SETTLE };

		ASSERT_EQ(0, bo_create(self->fd, 64 * MIB, DRM_SIMACCEL_BO_VRAM, &v));
		fill.dst = v.dev_addr;
		ASSERT_EQ(0, submit(self->fd, self->queue, 0, &fill, 1, NULL, 0, &out));
		ASSERT_EQ(0, syncobj_wait(self->fd, out.handle, 0));
		ASSERT_EQ(0, gem_close(self->fd, v.handle));
		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SIMACCEL_MEM_INFO, &after));
		ASSERT_EQ(before.vram_used, after.vram_used) TH_LOG("round %d", i);
	}
}

static int syncobj_transfer(int fd, uint32_t src, uint64_t src_point,
			    uint32_t dst, uint64_t dst_point, uint32_t flags)
{
	struct drm_syncobj_transfer t = {
		.src_handle = src, .src_point = src_point,
		.dst_handle = dst, .dst_point = dst_point, .flags = flags,
	};

	return ioctl(fd, DRM_IOCTL_SYNCOBJ_TRANSFER, &t) ? -errno : 0;
}

/*
 * SYNCOBJ_TRANSFER moves a job's fence between binary syncobjs and timeline
 * points; bad flags are refused without a trace (Linux 6.12's own
 * transfer leaked the source syncobj then: check-debug's kmemleak counts
 * it, a thousand times here).
 */
TEST_F(job, syncobj_transfer_moves_fences_and_refuses_bad_flags)
{
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .src = 5, .size = MIB };
	struct drm_simaccel_sync out = { 0 };
	struct drm_simaccel_bo_create v;
	uint32_t timeline, binary, again;

	ASSERT_EQ(0, syncobj_create(self->fd, &out.handle));
	ASSERT_EQ(0, syncobj_create(self->fd, &timeline));
	ASSERT_EQ(0, syncobj_create(self->fd, &binary));
	ASSERT_EQ(0, syncobj_create(self->fd, &again));
	ASSERT_EQ(0, bo_create(self->fd, MIB, DRM_SIMACCEL_BO_VRAM, &v));
	fill.dst = v.dev_addr;
	ASSERT_EQ(0, submit(self->fd, self->queue, 0, &fill, 1, NULL, 0, &out));
	for (int i = 0; i < 1000; i++)
		ASSERT_EQ(-EINVAL, syncobj_transfer(self->fd, out.handle, 0,
						    binary, 0, i % 2 ? 1 : 4u << (i % 30)));
	EXPECT_EQ(-ENOENT, syncobj_transfer(self->fd, out.handle, 0, 0, 0, 0));
	EXPECT_EQ(-ENOENT, syncobj_transfer(self->fd, 0, 0, binary, 0, 0));
	/* binary to a timeline point, back to a binary syncobj */
	ASSERT_EQ(0, syncobj_transfer(self->fd, out.handle, 0, timeline, 3, 0));
	ASSERT_EQ(0, syncobj_transfer(self->fd, timeline, 3, binary, 0,
				      DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT));
	ASSERT_EQ(0, syncobj_wait(self->fd, binary, 0));
	ASSERT_EQ(0, syncobj_signalled(self->fd, out.handle));
	/* a point not there yet: EINVAL without WAIT_FOR_SUBMIT */
	EXPECT_EQ(-EINVAL, syncobj_transfer(self->fd, again, 0, binary, 0, 0));
	EXPECT_EQ(0, gem_close(self->fd, v.handle));
}

/* A job of no operations: a barrier between queues. */
TEST_F(job, a_barrier_waits_for_its_in_syncs_and_signals)
{
	struct drm_simaccel_bo_create v;
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .src = 1, .size = 64 * MIB };
	struct drm_simaccel_sync a = { 0 }, b = { 0 };
	struct drm_simaccel_queue_query q;
	uint32_t q2;

	ASSERT_EQ(0, queue_create(self->fd, &q2));
	ASSERT_EQ(0, syncobj_create(self->fd, &a.handle));
	ASSERT_EQ(0, syncobj_create(self->fd, &b.handle));
	ASSERT_EQ(0, bo_create(self->fd, 64 * MIB, DRM_SIMACCEL_BO_VRAM, &v));
	fill.dst = v.dev_addr;
	ASSERT_EQ(0, submit(self->fd, self->queue, 0, &fill, 1, NULL, 0, &a));
	ASSERT_EQ(0, submit(self->fd, q2, 0, NULL, 0, &a, 1, &b));
	ASSERT_EQ(0, syncobj_wait(self->fd, b.handle, 0));
	/* the fill was over before the barrier signalled */
	EXPECT_EQ(0, syncobj_signalled(self->fd, a.handle));
	ASSERT_EQ(0, queue_query(self->fd, self->queue, &q));
	EXPECT_EQ(0, q.failed);
	EXPECT_EQ(0, submit(self->fd, q2, DRM_SIMACCEL_SUBMIT_WAIT, NULL, 0, NULL, 0, NULL));
}

TEST_F(job, a_job_waiting_for_another_queues_point_runs_after_it)
{
	const size_t len = 32 * MIB;
	struct drm_simaccel_bo_create x, y, z;
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .src = 0x3c, .size = len };
	struct drm_simaccel_op cp1 = { .op = DRM_SIMACCEL_OP_COPY, .size = len };
	struct drm_simaccel_op cp2 = { .op = DRM_SIMACCEL_OP_COPY, .size = len };
	struct drm_simaccel_sync point = { .point = 7 }, bin = { 0 };
	uint32_t q2;
	uint8_t *m;
	size_t i;

	ASSERT_EQ(0, queue_create(self->fd, &q2));
	ASSERT_EQ(0, syncobj_create(self->fd, &point.handle));
	ASSERT_EQ(0, syncobj_create(self->fd, &bin.handle));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_VRAM, &x));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_VRAM, &y));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_HOST, &z));
	fill.dst = x.dev_addr;
	cp1.dst = y.dev_addr;
	cp1.src = x.dev_addr;
	cp2.dst = z.dev_addr;
	cp2.src = y.dev_addr;
	/* queue 1: fill x, copy x to y, signal point 7; queue 2 waits for it */
	ASSERT_EQ(0, submit(self->fd, self->queue, 0, &fill, 1, NULL, 0, NULL));
	ASSERT_EQ(0, submit(self->fd, self->queue, 0, &cp1, 1, NULL, 0, &point));
	ASSERT_EQ(0, submit(self->fd, q2, 0, &cp2, 1, &point, 1, &bin));
	ASSERT_EQ(0, syncobj_wait(self->fd, bin.handle, 0));
	m = map_bo(self->fd, &z);
	ASSERT_NE(MAP_FAILED, m);
	for (i = 0; i < len; i += 4093)
		ASSERT_EQ(0x3c, m[i]) TH_LOG("byte %zu", i);
	EXPECT_EQ(0x3c, m[len - 1]);
	munmap(m, len);
}

/*
 * A submission is one job: a descriptor that fails fails all of it, and
 * what came after the failure in it does not run.
 */
TEST_F(job, a_submission_fails_as_a_whole)
{
	struct drm_simaccel_bo_create v;
	struct drm_simaccel_op ops[2] = {
		{ .op = DRM_SIMACCEL_OP_FILL, .src = 1, .size = 4096 },
		{ .op = DRM_SIMACCEL_OP_FILL, .src = 2, .size = 4096 },
	};
	uint8_t *m;

	ASSERT_EQ(0, bo_create(self->fd, 8192, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &v));
	m = map_bo(self->fd, &v);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, m[0]);
	ops[0].dst = v.dev_addr;
	ops[1].dst = v.dev_addr + 4096;
	ASSERT_EQ(0, inject_all("1"));
	EXPECT_EQ(-EIO, submit(self->fd, self->queue, DRM_SIMACCEL_SUBMIT_WAIT,
			       ops, 2, NULL, 0, NULL));
	ASSERT_EQ(0, inject_all("0"));
	EXPECT_EQ(0, m[0]);
	EXPECT_EQ(0, m[4096]);
	munmap(m, 8192);
}

TEST_F(job, a_submission_past_the_descriptor_limit_is_refused)
{
	static struct drm_simaccel_op ops[DRM_SIMACCEL_MAX_OPS];
	struct drm_simaccel_bo_create v;

	if (bo_create(self->fd, 256 * MIB, DRM_SIMACCEL_BO_VRAM, &v))
		SKIP(return, "needs 256 MiB of free VRAM");
	/* 256 fills of 256 MiB: 16384 descriptors of 4 MiB at most */
	for (int i = 0; i < DRM_SIMACCEL_MAX_OPS; i++)
		ops[i] = (struct drm_simaccel_op){
			.op = DRM_SIMACCEL_OP_FILL, .dst = v.dev_addr, .size = 256 * MIB,
		};
	EXPECT_EQ(-E2BIG, submit(self->fd, self->queue, 0, ops,
				 DRM_SIMACCEL_MAX_OPS, NULL, 0, NULL));
	EXPECT_EQ(0, submit(self->fd, self->queue, DRM_SIMACCEL_SUBMIT_WAIT, ops,
			    DRM_SIMACCEL_MAX_OPS / 2, NULL, 0, NULL));
	ASSERT_EQ(0, gem_close(self->fd, v.handle));
}

/* Whether some hardware queue is stalled or halted. */
static bool a_queue_is_stuck(void)
{
	char dir[256], path[300], buf[32];
	bool stuck = false;
	FILE *f;

	if (!debugfs_dir(dir, sizeof(dir)))
		return true;
	for (int q = 0; q < 16; q++) {
		snprintf(path, sizeof(path), "%s/q%d/status", dir, q);
		f = fopen(path, "r");
		if (!f)
			break;
		if (!fgets(buf, sizeof(buf), f) ||
		    strtoul(buf, NULL, 0) & (ACCEL_Q_STATUS_ERROR | ACCEL_Q_STATUS_STALLED))
			stuck = true;
		fclose(f);
	}
	return stuck;
}

TEST_F(job, a_failed_descriptor_fails_its_job_and_later_work_runs)
{
	struct drm_simaccel_failure recent[4];
	struct drm_simaccel_queue_query q;
	struct drm_simaccel_bo_create v;
	uint8_t *m;

	ASSERT_EQ(0, bo_create(self->fd, 4096, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &v));
	m = map_bo(self->fd, &v);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, m[0]);		/* cleared, before any injection */
	ASSERT_EQ(0, queue_query(self->fd, self->queue, &q));
	EXPECT_EQ(0, q.failed);
	EXPECT_EQ(0, q.failed_seqno);
	ASSERT_EQ(0, inject_all("1"));
	EXPECT_EQ(-EIO, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
			       v.dev_addr, 0x77, 4096));
	ASSERT_EQ(0, inject_all("0"));
	EXPECT_FALSE(a_queue_is_stuck());
	/* the queue's record says which job failed, and why */
	q = (struct drm_simaccel_queue_query){
		.handle = self->queue, .recent = (uintptr_t)recent, .recent_count = 4,
	};
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SIMACCEL_QUEUE_QUERY, &q));
	EXPECT_EQ(1, q.failed);
	EXPECT_EQ(q.submitted, q.failed_seqno);
	EXPECT_EQ(EIO, q.error);
	ASSERT_EQ(1, q.recent_count);
	EXPECT_EQ(q.submitted, recent[0].seqno);
	EXPECT_EQ(EIO, recent[0].error);
	EXPECT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
			    v.dev_addr, 0x78, 4096));
	EXPECT_EQ(0x78, m[4095]);
	ASSERT_EQ(0, queue_query(self->fd, self->queue, &q));
	EXPECT_EQ(1, q.failed);
	EXPECT_EQ(q.submitted - 1, q.failed_seqno);
	munmap(m, 4096);
}

/* The driver remembers the last 16 failures of a queue, newest first. */
TEST_F(job, a_queue_remembers_its_last_failures)
{
	struct drm_simaccel_failure recent[32];
	struct drm_simaccel_queue_query q;
	struct drm_simaccel_bo_create v;
	uint64_t seqno[20];
	int i;

	ASSERT_EQ(0, bo_create(self->fd, 4096, DRM_SIMACCEL_BO_VRAM, &v));
	ASSERT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0, v.dev_addr, 1, 1));
	ASSERT_EQ(0, inject_all("100"));
	for (i = 0; i < 20; i++) {
		struct drm_simaccel_op op = {
			.op = DRM_SIMACCEL_OP_FILL, .dst = v.dev_addr, .size = 1,
		};
		struct drm_simaccel_submit s = {
			.queue = self->queue, .flags = DRM_SIMACCEL_SUBMIT_WAIT,
			.ops = (uintptr_t)&op, .op_count = 1,
		};

		EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SIMACCEL_SUBMIT, &s));
		EXPECT_EQ(EIO, errno);
		seqno[i] = s.seqno;
	}
	ASSERT_EQ(0, inject_all("0"));
	q = (struct drm_simaccel_queue_query){
		.handle = self->queue, .recent = (uintptr_t)recent, .recent_count = 32,
	};
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SIMACCEL_QUEUE_QUERY, &q));
	EXPECT_EQ(20, q.failed);
	ASSERT_EQ(DRM_SIMACCEL_QUEUE_FAILURES, q.recent_count);
	for (i = 0; i < DRM_SIMACCEL_QUEUE_FAILURES; i++) {
		EXPECT_EQ(seqno[19 - i], recent[i].seqno);
		EXPECT_EQ(EIO, recent[i].error);
	}
	EXPECT_FALSE(a_queue_is_stuck());
}

TEST(a_stalled_job_times_out_and_its_queue_goes_on)
{
	struct drm_simaccel_bo_create v;
	uint32_t queue;
	struct timespec t0, t1;
	uint8_t *m;
	int fd;

	ASSERT_EQ(0, rebind_with_timeout("300"));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, bo_create(fd, 8192, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &v));
	m = map_bo(fd, &v);
	ASSERT_NE(MAP_FAILED, m);
	ASSERT_EQ(0, run_op(fd, queue, DRM_SIMACCEL_OP_FILL, 0, v.dev_addr, 1, 1));
	ASSERT_EQ(0, inject_all("0x10000"));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT_EQ(-ETIMEDOUT, run_op(fd, queue, DRM_SIMACCEL_OP_FILL, 0,
				     v.dev_addr, 2, 1));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* within twice the time-out, and a margin */
	EXPECT_GT(2, t1.tv_sec - t0.tv_sec);
	/* the stalls the other hardware queues still hold */
	ASSERT_EQ(0, inject_all("0"));
	EXPECT_FALSE(a_queue_is_stuck());
	EXPECT_EQ(0, run_op(fd, queue, DRM_SIMACCEL_OP_FILL, 0, v.dev_addr + 4096, 3, 1));
	/* the timed-out job was stopped, not run late */
	usleep(100000);
	EXPECT_EQ(1, m[0]);
	EXPECT_EQ(3, m[4096]);
	munmap(m, 8192);
	close(fd);
	ASSERT_EQ(0, rebind_with_timeout("2000"));
}

TEST_F(job, a_device_fault_leaves_a_coredump_of_the_queue_and_the_job)
{
	struct drm_simaccel_op op = {
		.op = DRM_SIMACCEL_OP_FILL, .src = 0x77, .size = 4096,
	};
	struct drm_simaccel_submit s = {
		.queue = self->queue, .flags = DRM_SIMACCEL_SUBMIT_WAIT,
		.ops = (uintptr_t)&op, .op_count = 1,
	};
	char addr[64], dir[256], path[300], want[256], client[32];
	struct drm_simaccel_bo_create v;
	char *text, *again;
	struct stat st;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	EXPECT_NE(1, read_number(DEVCD "/disabled"));
	ASSERT_TRUE(fdinfo(self->fd, "drm-client-id", client, sizeof(client)));
	ASSERT_EQ(0, bo_create(self->fd, 8192, DRM_SIMACCEL_BO_VRAM, &v));
	ASSERT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
			    v.dev_addr, 1, 1));
	ASSERT_TRUE(no_coredump(addr));
	op.dst = v.dev_addr + 4096;
	ASSERT_EQ(0, inject_all("1"));
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SIMACCEL_SUBMIT, &s));
	EXPECT_EQ(EIO, errno);
	ASSERT_EQ(0, inject_all("0"));
	ASSERT_TRUE(wait_coredump(addr, dir, sizeof(dir)));

	/* root's alone, as devcoredump makes it */
	snprintf(path, sizeof(path), "%s/data", dir);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);

	text = read_coredump(dir);
	ASSERT_NE(NULL, text);
	EXPECT_EQ(0, strncmp(text, "simaccel devcoredump 1\n", 23));
	snprintf(want, sizeof(want), "\ndevice: %s\n", addr);
	EXPECT_NE(NULL, strstr(text, want));
	EXPECT_NE(NULL, strstr(text, "\nreason: device error\n"));
	snprintf(want, sizeof(want), "\nqueue: %lld %s-q%lld\n",
		 dump_value(text, "queue"), addr, dump_value(text, "queue"));
	EXPECT_NE(NULL, strstr(text, want)) TH_LOG("no %s in:\n%s", want, text);
	/* the device's error state, before the reset cleared it */
	EXPECT_EQ(ACCEL_ERR_INJECTED, dump_value(text, "ERROR"));
	EXPECT_TRUE(dump_value(text, "STATUS") & ACCEL_Q_STATUS_ERROR);
	EXPECT_TRUE(dump_value(text, "DEV_STATUS") & ACCEL_DEV_STATUS_ERROR);
	/* the job: this file's, this queue's, this submission */
	EXPECT_EQ(-EIO, dump_value(text, "error"));
	EXPECT_EQ(strtoll(client, NULL, 10), dump_value(text, "client"));
	EXPECT_EQ(self->queue, dump_value(text, "user_queue"));
	EXPECT_EQ(s.seqno, dump_value(text, "submission"));
	EXPECT_EQ(1, dump_value(text, "descriptors"));
	snprintf(want, sizeof(want), "FILL  flags=%#x src=0x77 dst=%#llx len=4096\n",
		 ACCEL_DESC_DST_VRAM,
		 (unsigned long long)(v.dev_addr + 4096 - DRM_SIMACCEL_VRAM_BASE));
	EXPECT_NE(NULL, strstr(text, want)) TH_LOG("no %s in:\n%s", want, text);
	/* the ring shows where the device stopped: the same descriptor */
	EXPECT_NE(NULL, strstr(text, "len=4096 <- HEAD\n"));

	/* while it is pending, the next failure writes none */
	ASSERT_EQ(0, inject_all("1"));
	EXPECT_EQ(-EIO, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
			       v.dev_addr, 3, 1));
	ASSERT_EQ(0, inject_all("0"));
	usleep(200000);
	again = read_coredump(dir);
	ASSERT_NE(NULL, again);
	EXPECT_STREQ(text, again);
	free(again);
	free(text);
	EXPECT_TRUE(dismiss_coredump(dir));
}

TEST(a_timed_out_job_leaves_a_coredump)
{
	struct drm_simaccel_op op = {
		.op = DRM_SIMACCEL_OP_FILL, .src = 2, .size = 1,
	};
	struct drm_simaccel_submit s = {
		.flags = DRM_SIMACCEL_SUBMIT_WAIT, .ops = (uintptr_t)&op,
		.op_count = 1,
	};
	struct drm_simaccel_bo_create v;
	char addr[64], dir[256];
	char *text;
	int fd;

	ASSERT_EQ(0, rebind_with_timeout("300"));
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &s.queue));
	ASSERT_EQ(0, bo_create(fd, 4096, DRM_SIMACCEL_BO_VRAM, &v));
	ASSERT_EQ(0, run_op(fd, s.queue, DRM_SIMACCEL_OP_FILL, 0, v.dev_addr, 1, 1));
	ASSERT_TRUE(no_coredump(addr));
	op.dst = v.dev_addr;
	ASSERT_EQ(0, inject_all("0x10000"));
	EXPECT_EQ(-1, ioctl(fd, DRM_IOCTL_SIMACCEL_SUBMIT, &s));
	EXPECT_EQ(ETIMEDOUT, errno);
	ASSERT_EQ(0, inject_all("0"));
	ASSERT_TRUE(wait_coredump(addr, dir, sizeof(dir)));
	text = read_coredump(dir);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "\nreason: time-out\n"));
	EXPECT_EQ(-ETIMEDOUT, dump_value(text, "error"));
	EXPECT_TRUE(dump_value(text, "STATUS") & ACCEL_Q_STATUS_STALLED);
	EXPECT_EQ(0, dump_value(text, "ERROR"));
	EXPECT_EQ(s.queue, dump_value(text, "user_queue"));
	EXPECT_EQ(s.seqno, dump_value(text, "submission"));
	EXPECT_NE(NULL, strstr(text, "len=1 <- HEAD\n")) TH_LOG("%s", text);
	free(text);
	EXPECT_TRUE(dismiss_coredump(dir));
	close(fd);
	ASSERT_EQ(0, rebind_with_timeout("2000"));
}

/*
 * A dump is devcoredump's: it outlives the binding, and the module
 * (SIMACCEL_KO), whose code it does not use; the VM's run fails on a
 * warning either gives.
 */
TEST(a_pending_coredump_outlives_unbind_and_the_module)
{
	const char *ko = getenv("SIMACCEL_KO");
	struct drm_simaccel_bo_create v;
	char addr[64], dir[256], *text;
	uint32_t queue;
	int fd;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, bo_create(fd, 4096, DRM_SIMACCEL_BO_VRAM, &v));
	ASSERT_EQ(0, run_op(fd, queue, DRM_SIMACCEL_OP_FILL, 0, v.dev_addr, 1, 1));
	ASSERT_TRUE(no_coredump(addr));
	ASSERT_EQ(0, inject_all("1"));
	EXPECT_EQ(-EIO, run_op(fd, queue, DRM_SIMACCEL_OP_FILL, 0, v.dev_addr, 2, 1));
	ASSERT_EQ(0, inject_all("0"));
	close(fd);
	ASSERT_TRUE(wait_coredump(addr, dir, sizeof(dir)));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	if (ko) {
		EXPECT_EQ(0, unload_module());
	}
	text = read_coredump(dir);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "\nreason: device error\n"));
	free(text);
	if (ko) {
		ASSERT_EQ(0, load_module(ko));
	} else {
		ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	}
	/* still the one from before: a pending dump is not replaced */
	EXPECT_TRUE(find_coredump(addr, dir, sizeof(dir)));
	EXPECT_TRUE(dismiss_coredump(dir));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, bo_create(fd, 4096, DRM_SIMACCEL_BO_VRAM, &v));
	EXPECT_EQ(0, run_op(fd, queue, DRM_SIMACCEL_OP_FILL, 0, v.dev_addr, 3, 1));
	close(fd);
}

static sigjmp_buf bus_jump;

static void on_sigbus(int sig)
{
	siglongjmp(bus_jump, 1);
}

static bool read_faults(volatile uint8_t *p)
{
	bool faulted = false;

	signal(SIGBUS, on_sigbus);
	if (sigsetjmp(bus_jump, 1))
		faulted = true;
	else
		(void)*p;
	signal(SIGBUS, SIG_DFL);
	return faulted;
}

/* What a failed clearing leaves in VRAM is never seen, by a job or a mapping. */
TEST_F(job, a_buffer_whose_clearing_failed_is_never_read)
{
	struct drm_simaccel_bo_create v, h;
	uint8_t *m;

	ASSERT_EQ(0, bo_create(self->fd, 4096, DRM_SIMACCEL_BO_HOST, &h));
	ASSERT_EQ(0, inject_all("1"));
	ASSERT_EQ(0, bo_create(self->fd, 4096, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &v));
	m = map_bo(self->fd, &v);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_TRUE(read_faults(m));
	ASSERT_EQ(0, inject_all("0"));
	EXPECT_EQ(-ECANCELED, copy(self->fd, self->queue, h.dev_addr, v.dev_addr, 4096));
	EXPECT_EQ(-ECANCELED, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
				     v.dev_addr, 1, 1));
	munmap(m, 4096);
}

/*
 * Run alone on a device whose one queue moves 16 MiB/s (check.sh): a
 * 32 MiB copy takes 2 s, more than six time-outs of 300 ms, in small steps.
 */
TEST(a_slow_job_that_progresses_survives_the_time_out)
{
	const size_t len = 32 * MIB;
	struct drm_simaccel_bo_create a, b;
	struct drm_simaccel_sync done = { 0 };
	struct drm_simaccel_op op = { .op = DRM_SIMACCEL_OP_COPY, .size = len };
	struct drm_simaccel_queue_query q;
	uint32_t queue;
	struct timespec t0, t1;
	int fd;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	ASSERT_EQ(0, rebind_with_timeout("300"));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, syncobj_create(fd, &done.handle));
	ASSERT_EQ(0, bo_create(fd, len, DRM_SIMACCEL_BO_HOST, &a));
	ASSERT_EQ(0, bo_create(fd, len, DRM_SIMACCEL_BO_HOST, &b));
	op.dst = b.dev_addr;
	op.src = a.dev_addr;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(0, submit(fd, queue, 0, &op, 1, NULL, 0, &done));
	/* fdinfo: both buffers are in use while it runs */
	usleep(200000);
	EXPECT_EQ(2 * len, fdinfo_bytes(fd, "drm-active-system"));
	ASSERT_EQ(0, syncobj_wait(fd, done.handle, 0));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* it really was slow, and it did not fail */
	EXPECT_LE(1, t1.tv_sec - t0.tv_sec);
	ASSERT_EQ(0, queue_query(fd, queue, &q));
	EXPECT_EQ(0, q.failed);
	/* let go by a work item just after the fence */
	for (int i = 0; i < 100 && fdinfo_bytes(fd, "drm-active-system"); i++)
		usleep(10000);
	EXPECT_EQ(0, fdinfo_bytes(fd, "drm-active-system"));
	close(fd);
	ASSERT_EQ(0, rebind_with_timeout("2000"));
}

/*
 * On a one-queue throttled device, user A frees a 64 MiB buffer and takes
 * over half of VRAM, whose clearings take 12 s; B's BO_CREATE of the rest
 * finds VRAM full and waits for the clearings. Root's unbind does not wait
 * for B, nor for the clearings: it fails them, B gets its answer, and both
 * return within a second.
 */
TEST(unbind_does_not_wait_for_a_creation_waiting_on_full_vram)
{
	struct drm_simaccel_mem_info mem = { 0 };
	struct drm_simaccel_bo_create half, rest;
	double start;
	char addr[64];
	int fa, status;
	pid_t b;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fa = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fa);
	ASSERT_EQ(0, ioctl(fa, DRM_IOCTL_SIMACCEL_MEM_INFO, &mem));
	ASSERT_EQ(0, queue_slow_clearing(fa));
	ASSERT_EQ(0, bo_create(fa, mem.vram_total / 2 + MIB, DRM_SIMACCEL_BO_VRAM, &half));
	b = fork();
	ASSERT_LE(0, b);
	if (b == 0) {
		int fb = open(NODE, O_RDWR | O_CLOEXEC);

		_exit(fb < 0 ? 100 : -bo_create(fb, mem.vram_total / 2,
						DRM_SIMACCEL_BO_VRAM, &rest));
	}
	ASSERT_TRUE(wait_in_ioctl(b, DRM_IOCTL_SIMACCEL_BO_CREATE))
		TH_LOG("B did not wait");
	usleep(100000);		/* asleep in it */
	ASSERT_EQ(0, waitpid(b, &status, WNOHANG));
	start = seconds();
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("the unbind waited for a user");
	ASSERT_EQ(b, waitpid(b, &status, 0));
	EXPECT_GT(1.5, seconds() - start) TH_LOG("the creation outlived the unbind");
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(ENODEV, WEXITSTATUS(status));
	close(fa);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
}

/*
 * A process that makes and frees a 2 MiB VRAM buffer every 40 ms for
 * @seconds: on a throttled device each clearing takes 125 ms, so some are
 * always under way. Its pid, or -1.
 */
static pid_t keep_clearing(double seconds_)
{
	pid_t pid = fork();

	if (!pid) {
		struct drm_simaccel_bo_create bo;
		double end = seconds() + seconds_;
		int fd = open(NODE, O_RDWR | O_CLOEXEC);

		while (fd >= 0 && seconds() < end) {
			if (!bo_create(fd, 2 * MIB, DRM_SIMACCEL_BO_VRAM, &bo))
				gem_close(fd, bo.handle);
			usleep(40000);
		}
		_exit(0);
	}
	return pid;
}

/*
 * On a one-queue throttled device with 64 MiB of VRAM, A holds all of it
 * but 48 MiB while another process keeps clearings under way (until VRAM
 * is full of them, 2 s, and then for as long again while they drain). B
 * asks for 56 MiB, more than can be free: its creation waits for the
 * memory on its way back when it found VRAM full, not for what the other
 * process frees later, and fails with ENOSPC at once.
 */
TEST(a_creation_on_full_vram_waits_only_for_what_is_under_way)
{
	struct drm_simaccel_mem_info mem = { 0 };
	struct drm_simaccel_bo_create hold, big;
	double start;
	pid_t churn;
	int fa, fb;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fa = open(NODE, O_RDWR | O_CLOEXEC);
	fb = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	ASSERT_EQ(0, ioctl(fa, DRM_IOCTL_SIMACCEL_MEM_INFO, &mem));
	if (mem.vram_total > 64 * MIB)
		SKIP(return, "needs a device with 64 MiB of VRAM");
	ASSERT_EQ(0, bo_create(fa, mem.vram_total - mem.vram_used - 48 * MIB,
			       DRM_SIMACCEL_BO_VRAM, &hold));
	ASSERT_EQ(0, settle(fa));
	churn = keep_clearing(8.0);
	ASSERT_LT(0, churn);
	usleep(300000);
	start = seconds();
	EXPECT_EQ(-ENOSPC, bo_create(fb, 56 * MIB, DRM_SIMACCEL_BO_VRAM, &big));
	TH_LOG("B's answer took %.2f s", seconds() - start);
	EXPECT_GT(1.5, seconds() - start) TH_LOG("B waited for the churn");
	kill_child(churn);
	close(fb);
	close(fa);
}

/*
 * MEM_INFO's SETTLE waits, as a creation on a full VRAM does, for the
 * memory on its way back when it was called, not for what another process
 * that keeps freeing buffers starts later: it returns before its 2 s
 * bound.
 */
TEST(settling_waits_only_for_what_is_under_way)
{
	struct drm_simaccel_mem_info mem = { .flags = DRM_SIMACCEL_MEM_INFO_SETTLE };
	double start;
	pid_t churn;
	int fd;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, settle(fd));
	churn = keep_clearing(4.0);
	ASSERT_LT(0, churn);
	usleep(100000);
	start = seconds();
	EXPECT_EQ(0, ioctl(fd, DRM_IOCTL_SIMACCEL_MEM_INFO, &mem));
	TH_LOG("settling took %.2f s", seconds() - start);
	EXPECT_GT(1.5, seconds() - start) TH_LOG("it waited for the churn");
	kill_child(churn);
	close(fd);
}

static void *touch_first_byte(void *p)
{
	return (void *)(uintptr_t)*(volatile uint8_t *)p;
}

/*
 * A new mappable VRAM buffer of @fd, mapped, whose clearing waits behind
 * 4 s of clearing on a one-queue throttled device: the mapping, or
 * MAP_FAILED.
 */
static void *mapping_being_cleared(int fd, struct drm_simaccel_bo_create *vram)
{
	if (queue_slow_clearing(fd) ||
	    bo_create(fd, MIB, DRM_SIMACCEL_BO_VRAM_MAPPABLE, vram))
		return MAP_FAILED;
	return map_bo(fd, vram);
}

/*
 * On a one-queue throttled device, a fault on a new mappable VRAM buffer
 * waits for its clearing, queued behind 4 s of clearing: meanwhile another
 * thread of the process maps and unmaps memory at once (the fault does not
 * wait holding the process's mmap lock), and the fault then reads zeros.
 */
TEST(a_fault_waiting_for_a_clearing_holds_no_mmap_lock)
{
	struct drm_simaccel_bo_create vram;
	pthread_t toucher;
	double start;
	void *m, *anon, *byte;
	int fd;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	m = mapping_being_cleared(fd, &vram);
	ASSERT_NE(MAP_FAILED, m);
	ASSERT_EQ(0, pthread_create(&toucher, NULL, touch_first_byte, m));
	usleep(300000);		/* the toucher waits in the fault */
	start = seconds();
	anon = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, anon);
	EXPECT_EQ(0, munmap(anon, 1 << 20));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("the fault held the mmap lock");
	ASSERT_EQ(0, pthread_join(toucher, &byte));
	EXPECT_EQ(0, (uintptr_t)byte);
	munmap(m, vram.size);
	close(fd);
}

static void note_signal(int sig)
{
	(void)sig;
}

/*
 * A child that writes the first word of @m with FUTEX_WAKE_OP: the kernel
 * faults the page in for the futex itself (fixup_user_fault()), a fault
 * that cannot drop the mmap lock and be retried. The child catches SIGUSR1
 * and exits with the call's errno, 0 if it succeeded. Its pid once it
 * sleeps in the call, or -1.
 */
static pid_t futex_writer_of(void *m)
{
	static uint32_t word;
	pid_t pid = fork();

	if (!pid) {
		struct sigaction sa = { .sa_handler = note_signal };
		long r;

		sigaction(SIGUSR1, &sa, NULL);	/* no SA_RESTART */
		r = syscall(SYS_futex, &word,
				 FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 0, NULL, m,
				 FUTEX_OP(FUTEX_OP_SET, 1, FUTEX_OP_CMP_EQ, 0));

		_exit(r < 0 ? errno : 0);
	}
	if (pid > 0 && !wait_in_syscall(pid, SYS_futex, NULL)) {
		kill_child(pid);
		return -1;
	}
	return pid;
}

/*
 * On a one-queue throttled device, a futex on a new mappable VRAM buffer
 * waits for its clearing (4 s of clearing ahead) in a fault that holds the
 * mmap lock: a signal ends that wait, and the killed process is reaped at
 * once, not when the clearing is done.
 */
TEST(a_futex_waiting_for_a_clearing_ends_with_a_kill)
{
	struct drm_simaccel_bo_create vram;
	double start;
	pid_t child;
	void *m;
	int fd;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	m = mapping_being_cleared(fd, &vram);
	ASSERT_NE(MAP_FAILED, m);
	child = futex_writer_of(m);
	ASSERT_LT(0, child) TH_LOG("the futex did not wait");
	usleep(200000);
	ASSERT_EQ(0, waitpid(child, NULL, WNOHANG)) TH_LOG("no wait for the clearing");
	start = seconds();
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("the kill waited for the clearing");
	munmap(m, vram.size);
	ASSERT_EQ(0, settle(fd));
	close(fd);
}

/*
 * Only a kill ends that wait: a caught signal does not fail the futex
 * with EFAULT (the kernel would take the fault again at once, with the
 * signal pending); it goes on once the clearing ends.
 */
TEST(a_futex_waiting_for_a_clearing_goes_on_after_a_caught_signal)
{
	struct drm_simaccel_bo_create vram;
	int fd, status;
	pid_t child;
	void *m;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	m = mapping_being_cleared(fd, &vram);
	ASSERT_NE(MAP_FAILED, m);
	child = futex_writer_of(m);
	ASSERT_LT(0, child) TH_LOG("the futex did not wait");
	ASSERT_EQ(0, kill(child, SIGUSR1));
	usleep(200000);
	EXPECT_EQ(0, waitpid(child, &status, WNOHANG)) TH_LOG("a caught signal ended it");
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	munmap(m, vram.size);
	close(fd);
}

/*
 * A system call copying from a new mapping (write() to a pipe) waits in
 * the kernel's fault for the clearing: caught signals every 100 ms do not
 * end that wait, nor make it spin (the kernel takes the fault again at
 * once while a signal is pending): it sleeps, and the write completes.
 */
TEST(a_system_call_copying_from_a_mapping_being_cleared_sleeps_through_signals)
{
	struct itimerval every = { { 0, 100000 }, { 0, 100000 } }, off = { 0 };
	struct sigaction sa = { .sa_handler = note_signal };
	struct drm_simaccel_bo_create vram;
	struct rusage r0, r1;
	double system;
	int fd, pipefd[2];
	void *m;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(pipefd));
	m = mapping_being_cleared(fd, &vram);
	ASSERT_NE(MAP_FAILED, m);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, getrusage(RUSAGE_SELF, &r0));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &every, NULL));
	EXPECT_EQ(4096, write(pipefd[1], m, 4096));
	setitimer(ITIMER_REAL, &off, NULL);
	ASSERT_EQ(0, getrusage(RUSAGE_SELF, &r1));
	system = r1.ru_stime.tv_sec - r0.ru_stime.tv_sec +
		 (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
	TH_LOG("%.2f s of system time", system);
	EXPECT_GT(1.0, system) TH_LOG("the fault spun");
	munmap(m, vram.size);
	close(pipefd[0]);
	close(pipefd[1]);
	close(fd);
}

/*
 * The same futex, waiting in its fault for the clearing, while root
 * unbinds the device: the unbind fails the clearing rather than wait for
 * it, and the futex fails with EFAULT (the page cannot be mapped).
 */
TEST(a_futex_waiting_for_a_clearing_holds_up_no_unbind)
{
	struct drm_simaccel_bo_create vram;
	char addr[64];
	double start;
	int fd, status;
	pid_t child;
	void *m;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	m = mapping_being_cleared(fd, &vram);
	ASSERT_NE(MAP_FAILED, m);
	child = futex_writer_of(m);
	ASSERT_LT(0, child) TH_LOG("the futex did not wait");
	start = seconds();
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("the unbind waited for a fault");
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_GT(1.5, seconds() - start) TH_LOG("the fault outlived the unbind");
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(EFAULT, WEXITSTATUS(status));
	munmap(m, vram.size);
	close(fd);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
}

/*
 * On a one-queue throttled device: a job that fails at once (its in-fence
 * carries an error) returns from SUBMIT_WAIT at once, though another
 * file's slow job went to the hardware before it.
 */
TEST(a_failed_job_returns_without_waiting_for_others)
{
	struct drm_simaccel_queue_query q;
	const size_t len = 32 * MIB;
	struct drm_simaccel_bo_create a, b, v;
	struct drm_simaccel_sync failed = { 0 };
	struct drm_simaccel_op slow = { .op = DRM_SIMACCEL_OP_COPY, .size = len };
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .size = 1 };
	uint32_t qa, qb;
	struct timespec t0, t1;
	int fa, fb;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fa = open(NODE, O_RDWR | O_CLOEXEC);
	fb = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	ASSERT_EQ(0, queue_create(fa, &qa));
	ASSERT_EQ(0, queue_create(fb, &qb));
	ASSERT_EQ(0, syncobj_create(fb, &failed.handle));
	ASSERT_EQ(0, bo_create(fa, len, DRM_SIMACCEL_BO_HOST, &a));
	ASSERT_EQ(0, bo_create(fa, len, DRM_SIMACCEL_BO_HOST, &b));
	ASSERT_EQ(0, bo_create(fb, 4096, DRM_SIMACCEL_BO_HOST, &v));
	fill.dst = v.dev_addr;
	ASSERT_EQ(0, inject_all("1"));
	ASSERT_EQ(-EIO, submit(fb, qb, DRM_SIMACCEL_SUBMIT_WAIT, &fill, 1, NULL, 0, &failed));
	ASSERT_EQ(0, inject_all("0"));
	slow.dst = b.dev_addr;
	slow.src = a.dev_addr;
	ASSERT_EQ(0, submit(fa, qa, 0, &slow, 1, NULL, 0, NULL));
	usleep(100000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT_EQ(-ECANCELED, submit(fb, qb, DRM_SIMACCEL_SUBMIT_WAIT, &fill, 1,
				     &failed, 1, NULL));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_GT(0.5, t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	/* and it is counted already, not when drm_sched frees it */
	ASSERT_EQ(0, queue_query(fb, qb, &q));
	EXPECT_EQ(2, q.failed);
	EXPECT_EQ(2, q.failed_seqno);
	EXPECT_EQ(ECANCELED, q.error);
	close(fa);
	close(fb);
}

/*
 * Fairness between files, on a one-queue throttled device: one file keeps
 * eight seconds of copies queued on four queues, submitted before another
 * file's 4 KiB fill. The fill waits behind a slice of that work, not behind
 * all of it: it is done while most of the first file's copies are not.
 */
TEST(a_small_job_waits_behind_a_slice_of_another_files_work)
{
	const size_t len = 16 * MIB;	/* a second each, four descriptors */
	struct drm_simaccel_bo_create a, b, v;
	struct drm_simaccel_op copy = { .op = DRM_SIMACCEL_OP_COPY, .size = len };
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .size = 4096 };
	struct drm_simaccel_sync done[8] = { 0 };
	uint32_t qa[4], qb;
	int fa, fb, i, finished = 0;
	double t0;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fa = open(NODE, O_RDWR | O_CLOEXEC);
	fb = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, queue_create(fa, &qa[i]));
	ASSERT_EQ(0, queue_create(fb, &qb));
	ASSERT_EQ(0, bo_create(fa, len, DRM_SIMACCEL_BO_HOST, &a));
	ASSERT_EQ(0, bo_create(fa, len, DRM_SIMACCEL_BO_HOST, &b));
	ASSERT_EQ(0, bo_create(fb, 4096, DRM_SIMACCEL_BO_HOST, &v));
	copy.src = a.dev_addr;
	copy.dst = b.dev_addr;
	fill.dst = v.dev_addr;
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, syncobj_create(fa, &done[i].handle));
		ASSERT_EQ(0, submit(fa, qa[i % 4], 0, &copy, 1, NULL, 0, &done[i]));
	}
	usleep(100000);
	t0 = seconds();
	ASSERT_EQ(0, submit(fb, qb, DRM_SIMACCEL_SUBMIT_WAIT, &fill, 1, NULL, 0, NULL));
	TH_LOG("the 4 KiB fill took %.2f s", seconds() - t0);
	for (i = 0; i < 8; i++)
		finished += !syncobj_signalled(fa, done[i].handle);
	EXPECT_GT(4, finished);
	close(fb);
	close(fa);
}

/*
 * A submission cut into several jobs (here four descriptors of a second
 * each) that all fail is one failure of its queue, with the first error.
 */
TEST(a_submission_of_several_jobs_fails_once)
{
	const size_t len = 16 * MIB;
	struct drm_simaccel_queue_query q;
	struct drm_simaccel_bo_create a, b;
	uint32_t queue;
	int fd;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, bo_create(fd, len, DRM_SIMACCEL_BO_HOST, &a));
	ASSERT_EQ(0, bo_create(fd, len, DRM_SIMACCEL_BO_HOST, &b));
	ASSERT_EQ(0, inject_all("4"));
	EXPECT_EQ(-EIO, run_op(fd, queue, DRM_SIMACCEL_OP_COPY, 0, b.dev_addr,
			       a.dev_addr, len));
	ASSERT_EQ(0, inject_all("0"));
	ASSERT_EQ(0, queue_query(fd, queue, &q));
	EXPECT_EQ(1, q.failed);
	EXPECT_EQ(1, q.failed_seqno);
	EXPECT_EQ(EIO, q.error);
	close(fd);
}

/*
 * A one-queue throttled device's queue with every job slot taken, and a
 * syncobj its last job signals.
 */
struct full_queue {
	int fd;
	uint32_t queue;
	struct drm_simaccel_bo_create a, b, v;
	struct drm_simaccel_sync last;
};

/*
 * Open a file and a queue and take all its DRM_SIMACCEL_MAX_JOBS_PER_QUEUE
 * slots: four copies of a second each, then small fills behind them.
 * 0 or -errno.
 */
static int fill_every_slot(struct full_queue *fq)
{
	struct drm_simaccel_op copy = { .op = DRM_SIMACCEL_OP_COPY, .size = 16 * MIB };
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .size = 1 };
	int i, ret;

	fq->fd = open(NODE, O_RDWR | O_CLOEXEC);
	if (fq->fd < 0)
		return -errno;
	ret = queue_create(fq->fd, &fq->queue);
	if (!ret)
		ret = bo_create(fq->fd, copy.size, DRM_SIMACCEL_BO_HOST, &fq->a);
	if (!ret)
		ret = bo_create(fq->fd, copy.size, DRM_SIMACCEL_BO_HOST, &fq->b);
	if (!ret)
		ret = bo_create(fq->fd, 4096, DRM_SIMACCEL_BO_HOST, &fq->v);
	fq->last = (struct drm_simaccel_sync){ 0 };
	if (!ret)
		ret = syncobj_create(fq->fd, &fq->last.handle);
	copy.src = fq->a.dev_addr;
	copy.dst = fq->b.dev_addr;
	fill.dst = fq->v.dev_addr;
	for (i = 0; !ret && i < DRM_SIMACCEL_MAX_JOBS_PER_QUEUE; i++)
		ret = submit(fq->fd, fq->queue, 0, i < 4 ? &copy : &fill, 1,
			     NULL, 0, i == DRM_SIMACCEL_MAX_JOBS_PER_QUEUE - 1 ?
			     &fq->last : NULL);
	return ret;
}

/*
 * Wait for the queue's work (in order: its last job is the last to end),
 * then close: a queue left draining holds the device, whose next binding
 * would then get another minor than NODE's.
 */
static int empty_full_queue(struct full_queue *fq)
{
	int ret, tries = 0;

	/* 252 jobs and 4 s of copies: beyond one wait's 10 s under TCG */
	while ((ret = syncobj_wait(fq->fd, fq->last.handle, 0)) == -ETIME &&
	       ++tries < 4)
		;

	close(fq->fd);
	usleep(200000);		/* the jobs' references go in work items */
	return ret;
}

/*
 * A child submitting one more fill to the full queue, which waits for a
 * slot; a SIGUSR1 interrupts it (no SA_RESTART). It exits with the call's
 * errno, 0 if it succeeded. Its pid once it waits, or -1.
 */
static pid_t slot_waiter_of(struct full_queue *fq)
{
	pid_t pid = fork();

	if (!pid) {
		struct sigaction sa = { .sa_handler = note_signal };

		sigaction(SIGUSR1, &sa, NULL);
		_exit(-run_op(fq->fd, fq->queue, DRM_SIMACCEL_OP_FILL, 0,
			      fq->v.dev_addr, 0, 1));
	}
	if (pid > 0 && !wait_in_ioctl(pid, DRM_IOCTL_SIMACCEL_SUBMIT)) {
		kill_child(pid);
		return -1;
	}
	return pid;
}

static int exit_code(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * On a one-queue throttled device, a SUBMIT to a queue with all its job
 * slots taken waits for one, before anything of it is queued: a signal
 * ends the wait with EINTR and queues nothing, and so does a kill.
 */
TEST(a_submit_waiting_for_a_job_slot_ends_with_a_signal)
{
	struct drm_simaccel_queue_query q;
	struct full_queue fq;
	double start;
	pid_t child;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	ASSERT_EQ(0, fill_every_slot(&fq));
	child = slot_waiter_of(&fq);
	ASSERT_LT(0, child) TH_LOG("the submission did not wait");
	start = seconds();
	ASSERT_EQ(0, kill(child, SIGUSR1));
	EXPECT_EQ(EINTR, exit_code(child));
	EXPECT_GT(0.5, seconds() - start) TH_LOG("the signal waited for a slot");
	child = slot_waiter_of(&fq);
	ASSERT_LT(0, child) TH_LOG("the submission did not wait");
	start = seconds();
	kill_child(child);
	EXPECT_GT(0.5, seconds() - start) TH_LOG("the kill waited for a slot");
	ASSERT_EQ(0, queue_query(fq.fd, fq.queue, &q));
	EXPECT_EQ(DRM_SIMACCEL_MAX_JOBS_PER_QUEUE, q.submitted);
	EXPECT_EQ(0, empty_full_queue(&fq));
}

/*
 * While a SUBMIT waits for a slot of its full queue, another user's small
 * job runs in its turn, and destroying the queue ends the wait at once
 * with ENOENT (the queue is gone), not when a slot frees.
 */
TEST(a_submit_waiting_for_a_job_slot_holds_no_one_up)
{
	struct drm_simaccel_bo_create v;
	struct full_queue fq;
	uint32_t qb;
	double start;
	pid_t child;
	int fb;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	ASSERT_EQ(0, fill_every_slot(&fq));
	child = slot_waiter_of(&fq);
	ASSERT_LT(0, child) TH_LOG("the submission did not wait");
	fb = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fb);
	ASSERT_EQ(0, queue_create(fb, &qb));
	ASSERT_EQ(0, bo_create(fb, 4096, DRM_SIMACCEL_BO_HOST, &v));
	start = seconds();
	EXPECT_EQ(0, run_op(fb, qb, DRM_SIMACCEL_OP_FILL, 0, v.dev_addr, 0, 4096));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("another user waited");
	start = seconds();
	ASSERT_EQ(0, queue_destroy(fq.fd, fq.queue));
	EXPECT_EQ(ENOENT, exit_code(child));
	EXPECT_GT(0.5, seconds() - start) TH_LOG("the destroyed queue's submission waited on");
	close(fb);
	EXPECT_EQ(0, empty_full_queue(&fq));
}

/*
 * Root's unbind does not wait for a SUBMIT waiting for a slot: the
 * queue's jobs fail, and the waiting submission fails with ENODEV.
 */
TEST(a_submit_waiting_for_a_job_slot_holds_up_no_unbind)
{
	struct full_queue fq;
	char addr[64];
	double start;
	pid_t child;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	ASSERT_EQ(0, fill_every_slot(&fq));
	child = slot_waiter_of(&fq);
	ASSERT_LT(0, child) TH_LOG("the submission did not wait");
	start = seconds();
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("the unbind waited for a submission");
	EXPECT_EQ(ENODEV, exit_code(child));
	EXPECT_GT(1.5, seconds() - start) TH_LOG("the submission outlived the unbind");
	close(fq.fd);
	ASSERT_EQ(0, bind_as(addr, NODE));
}

/*
 * DRM core does not charge syncobjs to anyone: a file may make
 * DRM_SIMACCEL_MAX_SYNCOBJS_PER_FILE of them, created or imported, then
 * EMFILE; one destroyed makes room, and another file has its own.
 */
TEST_F(job, a_file_makes_a_bounded_number_of_syncobjs)
{
	struct drm_syncobj_handle exp = { 0 };
	struct drm_syncobj_destroy d = { 0 };
	uint32_t h, first, last = 0;
	int other = open(NODE, O_RDWR | O_CLOEXEC);
	int i;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, syncobj_create(self->fd, &first));
	for (i = 1; i < DRM_SIMACCEL_MAX_SYNCOBJS_PER_FILE; i++)
		ASSERT_EQ(0, syncobj_create(self->fd, &last));
	EXPECT_EQ(-EMFILE, syncobj_create(self->fd, &h));
	exp.handle = first;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &exp));
	exp.handle = 0;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &exp));
	EXPECT_EQ(EMFILE, errno);
	EXPECT_EQ(0, syncobj_create(other, &h));
	d.handle = last;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d));
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &exp));
	EXPECT_EQ(-EMFILE, syncobj_create(self->fd, &h));
	close(exp.fd);
	close(other);
}

struct syncobj_race {
	int fd;
	volatile bool stop;
};

static void *create_syncobjs(void *arg)
{
	struct syncobj_race *race = arg;
	uint32_t h;

	while (!race->stop)
		syncobj_create(race->fd, &h);
	return NULL;
}

/* Whether the file has a syncobj of handle @h. */
static bool syncobj_exists(int fd, uint32_t h)
{
	struct drm_syncobj_array a = { .handles = (uintptr_t)&h, .count_handles = 1 };

	return !ioctl(fd, DRM_IOCTL_SYNCOBJ_RESET, &a);
}

/*
 * Threads that create syncobjs while another destroys them, one at a time,
 * never take a file past the limit. (16384 syncobjs made and freed take
 * over the harness's 30 s on the debug kernel, KASAN and lockdep under TCG.)
 */
TEST_F_TIMEOUT(job, racing_threads_make_no_more_syncobjs_than_the_limit, 180)
{
	struct syncobj_race race = { .fd = self->fd };
	pthread_t t[2];
	double end;
	uint32_t h;
	int i, above = 0;

	while (!syncobj_create(self->fd, &h))
		;
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, create_syncobjs, &race));
	end = seconds() + 2;
	for (h = 1; seconds() < end; h = h % DRM_SIMACCEL_MAX_SYNCOBJS_PER_FILE + 1) {
		struct drm_syncobj_destroy d = { .handle = h };

		ioctl(self->fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
	}
	race.stop = true;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (h = DRM_SIMACCEL_MAX_SYNCOBJS_PER_FILE + 1;
	     h <= DRM_SIMACCEL_MAX_SYNCOBJS_PER_FILE + 4096; h++)
		above += syncobj_exists(self->fd, h);
	EXPECT_EQ(0, above);
}

#ifndef DRM_IOCTL_SYNCOBJ_EVENTFD
/* Linux 6.6's, for libdrm headers older than that */
struct drm_syncobj_eventfd {
	__u32 handle;
	__u32 flags;
	__u64 point;
	__s32 fd;
	__u32 pad;
};
#define DRM_IOCTL_SYNCOBJ_EVENTFD	DRM_IOWR(0xCF, struct drm_syncobj_eventfd)
#endif

/*
 * DRM core keeps a SYNCOBJ_EVENTFD registration until its point signals,
 * charged to no one: refused.
 */
TEST_F(job, syncobj_eventfd_is_refused)
{
	struct drm_syncobj_eventfd e = { .point = 1 };

	ASSERT_EQ(0, syncobj_create(self->fd, &e.handle));
	e.fd = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, e.fd);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SYNCOBJ_EVENTFD, &e));
	EXPECT_EQ(EOPNOTSUPP, errno);
	close(e.fd);
}

/*
 * On a one-queue throttled device: a user at the administrator's VRAM limit
 * is told EDQUOT at once, not after another user's clearings (4 s here).
 */
TEST(a_user_past_the_vram_limit_is_told_at_once)
{
	const char *limit = CLASS_DEVICE "/vram_limit_per_user";
	struct drm_simaccel_bo_create mine, more;
	double start;
	int fd;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, seteuid(1001));
	ASSERT_EQ(0, queue_slow_clearing(fd)) TH_LOG("another user's clearing");
	ASSERT_EQ(0, seteuid(0));
	ASSERT_EQ(0, write_file(limit, "1048576"));
	ASSERT_EQ(0, seteuid(1000));
	ASSERT_EQ(0, bo_create(fd, MIB, DRM_SIMACCEL_BO_VRAM, &mine));
	start = seconds();
	EXPECT_EQ(-EDQUOT, bo_create(fd, MIB, DRM_SIMACCEL_BO_VRAM, &more));
	EXPECT_GT(0.5, seconds() - start) TH_LOG("EDQUOT waited for others");
	ASSERT_EQ(0, seteuid(0));
	ASSERT_EQ(0, write_file(limit, "0"));
	close(fd);
}

/*
 * On a one-queue throttled device: one file frees two new 64 MiB buffers,
 * eight seconds of clearing, which run ahead of users' jobs but within
 * that file's window: another file's 4 KiB fill is done while most of
 * that clearing is not (the buffers' VRAM is still held).
 */
TEST(a_files_clearings_do_not_hold_up_another_files_job)
{
	struct drm_simaccel_mem_info mem = { 0 };
	struct drm_simaccel_bo_create big, v;
	uint32_t queue;
	double start;
	int fa, fb;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fa = open(NODE, O_RDWR | O_CLOEXEC);
	fb = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	ASSERT_EQ(0, settle(fb));
	ASSERT_EQ(0, queue_create(fb, &queue));
	ASSERT_EQ(0, bo_create(fb, 4096, DRM_SIMACCEL_BO_HOST, &v));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, bo_create(fa, 64 * MIB, DRM_SIMACCEL_BO_VRAM, &big));
		ASSERT_EQ(0, gem_close(fa, big.handle));
	}
	usleep(100000);
	start = seconds();
	ASSERT_EQ(0, run_op(fb, queue, DRM_SIMACCEL_OP_FILL, 0, v.dev_addr, 1, 4096));
	TH_LOG("the 4 KiB fill took %.2f s", seconds() - start);
	ASSERT_EQ(0, ioctl(fb, DRM_IOCTL_SIMACCEL_MEM_INFO, &mem));
	EXPECT_LE(64 * MIB, mem.vram_used) TH_LOG("the clearings were done first");
	close(fa);
	close(fb);
}

/*
 * On a one-queue throttled device: a user streams ten seconds of small jobs
 * and then creates a VRAM buffer, whose clearing (one descriptor, larger
 * than the file's window) must still get in between that user's jobs:
 * another user's new buffer, whose clearing queues behind it, is cleared
 * and filled within a second.
 */
TEST(a_large_clearing_is_not_kept_out_by_its_files_smaller_jobs)
{
	struct drm_simaccel_bo_create mine;
	int ready[2], status, fb;
	uint32_t queue;
	double start;
	pid_t child;
	char c;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fb = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fb);
	/* earlier tests' clearings are not in the way */
	ASSERT_EQ(0, settle(fb));
	ASSERT_EQ(0, pipe(ready));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		static struct drm_simaccel_op ops[16];
		struct drm_simaccel_bo_create h, big;
		int fa = open(NODE, O_RDWR | O_CLOEXEC), i;
		uint32_t qa;

		if (fa < 0 || seteuid(1000) || queue_create(fa, &qa) ||
		    bo_create(fa, MIB, DRM_SIMACCEL_BO_HOST, &h))
			_exit(2);
		/* jobs of four 64 KiB fills, 17 ms each, two in the window */
		for (i = 0; i < 16; i++)
			ops[i] = (struct drm_simaccel_op){
				.op = DRM_SIMACCEL_OP_FILL, .src = i,
				.dst = h.dev_addr + i * 65536, .size = 65536,
			};
		for (i = 0; i < 160; i++)	/* 64 ms each */
			if (submit(fa, qa, 0, ops, 16, NULL, 0, NULL))
				_exit(3);
		usleep(200000);
		if (bo_create(fa, MIB, DRM_SIMACCEL_BO_VRAM, &big) ||
		    write(ready[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(5);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	usleep(200000);
	ASSERT_EQ(0, queue_create(fb, &queue));
	start = seconds();
	ASSERT_EQ(0, bo_create(fb, 4096, DRM_SIMACCEL_BO_VRAM, &mine));
	ASSERT_EQ(0, run_op(fb, queue, DRM_SIMACCEL_OP_FILL, 0, mine.dev_addr, 1, 4096));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("the clearing waited for the other user's jobs");
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	close(fb);
}

/*
 * On a one-queue throttled device: close() of a file with four seconds of
 * copies queued returns at once (its jobs reach the hardware a window at
 * a time, and its queue drains without the caller), and the jobs run to
 * their end.
 */
TEST(closing_a_file_does_not_wait_for_its_queued_work)
{
	const size_t len = 16 * MIB;	/* a second each */
	struct drm_simaccel_op copy = { .op = DRM_SIMACCEL_OP_COPY, .size = len };
	struct drm_simaccel_bo_create a, b;
	struct drm_simaccel_sync done = { 0 };
	struct sync_file_info info = { 0 };
	struct pollfd pfd;
	uint32_t queue;
	double start;
	int fd, i;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	/* earlier tests' clearings are not in the way */
	ASSERT_EQ(0, settle(fd));
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, bo_create(fd, len, DRM_SIMACCEL_BO_HOST, &a));
	ASSERT_EQ(0, bo_create(fd, len, DRM_SIMACCEL_BO_HOST, &b));
	ASSERT_EQ(0, syncobj_create(fd, &done.handle));
	copy.src = a.dev_addr;
	copy.dst = b.dev_addr;
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, submit(fd, queue, 0, &copy, 1, NULL, 0, i == 3 ? &done : NULL));
	pfd.fd = sync_file_export(fd, done.handle);
	pfd.events = POLLIN;
	ASSERT_LE(0, pfd.fd);
	start = seconds();
	EXPECT_EQ(0, close(fd));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("close() waited for the jobs");
	ASSERT_EQ(1, poll(&pfd, 1, 30000));
	ASSERT_EQ(0, ioctl(pfd.fd, SYNC_IOC_FILE_INFO, &info));
	EXPECT_EQ(1, info.status) TH_LOG("the last job failed: %d", info.status);
	close(pfd.fd);
}

/*
 * On a one-queue throttled device: a process killed with a job queued on
 * each of 32 queues (all but a window of them held back) is reaped within
 * a second or two: its queues share drm_sched's one second of grace.
 */
TEST(a_killed_process_with_many_busy_queues_is_reaped_at_once)
{
	const size_t len = 16 * MIB;
	int ready[2], status;
	double start;
	pid_t child;
	char c;

	if (!getenv("SIMACCEL_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 16 MiB/s per queue");
	ASSERT_EQ(0, pipe(ready));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		struct drm_simaccel_op copy = { .op = DRM_SIMACCEL_OP_COPY, .size = len };
		struct drm_simaccel_bo_create a, b;
		int fd = open(NODE, O_RDWR | O_CLOEXEC);
		uint32_t queue;

		if (fd < 0 || bo_create(fd, len, DRM_SIMACCEL_BO_HOST, &a) ||
		    bo_create(fd, len, DRM_SIMACCEL_BO_HOST, &b))
			_exit(2);
		copy.src = a.dev_addr;
		copy.dst = b.dev_addr;
		for (int i = 0; i < 32; i++)
			if (queue_create(fd, &queue) ||
			    submit(fd, queue, 0, &copy, 1, NULL, 0, NULL))
				_exit(3);
		if (write(ready[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(5);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	usleep(200000);
	start = seconds();
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_GT(3.0, seconds() - start) TH_LOG("the killed process lingered");
	EXPECT_TRUE(WIFSIGNALED(status));
}

static size_t count_byte(const uint8_t *p, size_t len, uint8_t byte)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += p[i] == byte;
	return n;
}

/*
 * A submission cut into several jobs whose in-sync failed: none of its jobs
 * runs, not only the first (which alone waits for the in-sync).
 */
TEST_F(job, no_job_of_a_submission_runs_after_its_in_sync_failed)
{
	const size_t len = 64 * MIB;
	struct drm_simaccel_op op = { .op = DRM_SIMACCEL_OP_COPY, .size = 4096 };
	struct drm_simaccel_bo_create a, b, c;
	struct drm_simaccel_sync bad = { 0 };
	uint8_t *pa, *pb;
	uint32_t other;

	ASSERT_EQ(0, queue_create(self->fd, &other));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_HOST, &a));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_HOST, &b));
	ASSERT_EQ(0, bo_create(self->fd, 8192, DRM_SIMACCEL_BO_HOST, &c));
	pa = map_bo(self->fd, &a);
	pb = map_bo(self->fd, &b);
	ASSERT_NE(MAP_FAILED, pa);
	ASSERT_NE(MAP_FAILED, pb);
	memset(pa, 0xaa, len);
	ASSERT_EQ(0, syncobj_create(self->fd, &bad.handle));
	ASSERT_EQ(0, inject_all("1"));
	op.dst = c.dev_addr;
	op.src = c.dev_addr + 4096;
	EXPECT_EQ(-EIO, submit(self->fd, other, DRM_SIMACCEL_SUBMIT_WAIT, &op, 1,
			       NULL, 0, &bad));
	ASSERT_EQ(0, inject_all("0"));
	op.dst = b.dev_addr;
	op.src = a.dev_addr;
	op.size = len;
	EXPECT_EQ(-ECANCELED, submit(self->fd, self->queue, DRM_SIMACCEL_SUBMIT_WAIT,
				     &op, 1, &bad, 1, NULL));
	EXPECT_EQ(0, count_byte(pb, len, 0xaa));
	munmap(pa, len);
	munmap(pb, len);
}

/*
 * A VRAM buffer whose clearing failed is never read, by any job of a
 * submission cut into several: what its range held before (another
 * owner's bytes) does not reach the reader.
 */
TEST_F(job, no_job_reads_a_buffer_whose_clearing_failed)
{
	const size_t len = 32 * MIB;
	struct drm_simaccel_op ops[2] = {
		{ .op = DRM_SIMACCEL_OP_FILL, .size = 24 * MIB, .src = 1 },
		{ .op = DRM_SIMACCEL_OP_COPY, .size = len },
	};
	struct drm_simaccel_bo_create old, v, h, s;
	uint8_t *p;

	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &old));
	p = map_bo(self->fd, &old);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0x5a, len);
	munmap(p, len);
	ASSERT_EQ(0, gem_close(self->fd, old.handle));
	ASSERT_EQ(0, settle(self->fd));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_HOST, &h));
	ASSERT_EQ(0, bo_create(self->fd, 24 * MIB, DRM_SIMACCEL_BO_HOST, &s));
	ASSERT_EQ(0, inject_all("1"));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_VRAM, &v));
	ASSERT_EQ(old.dev_addr, v.dev_addr) TH_LOG("the range went elsewhere");
	usleep(300000);		/* its clearing failed by now */
	ASSERT_EQ(0, inject_all("0"));
	ops[0].dst = s.dev_addr;
	ops[1].dst = h.dev_addr;
	ops[1].src = v.dev_addr;
	EXPECT_EQ(-ECANCELED, submit(self->fd, self->queue, DRM_SIMACCEL_SUBMIT_WAIT,
				     ops, 2, NULL, 0, NULL));
	p = map_bo(self->fd, &h);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, count_byte(p, len, 0x5a));
	munmap(p, len);
}

/* sysfs totals count every user's buffers and pins, and come back. */
TEST_F(job, device_totals_count_buffers_and_pins_and_return_to_baseline)
{
	long long vram0 = device_total("vram_used");
	long long pinned0 = device_total("host_pinned");
	struct drm_simaccel_bo_create v, h;
	struct drm_simaccel_bo_userptr u;
	uint8_t *buf = aligned_alloc(4096, 64 * 1024);
	int fd2 = open(NODE, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd2);
	ASSERT_NE(NULL, buf);
	ASSERT_LE(0, vram0);
	ASSERT_LE(0, pinned0);
	EXPECT_LT(0, device_total("vram_total"));
	ASSERT_EQ(0, bo_create(self->fd, MIB + 1, DRM_SIMACCEL_BO_VRAM, &v));
	ASSERT_EQ(0, bo_create(fd2, MIB, DRM_SIMACCEL_BO_HOST, &h));
	ASSERT_EQ(0, userptr(self->fd, buf, 64 * 1024, 0, &u));
	EXPECT_EQ(vram0 + MIB + 4096, device_total("vram_used"));
	EXPECT_EQ(pinned0 + MIB + 64 * 1024, device_total("host_pinned"));
	/* a job's user memory is pinned only while the job lives */
	EXPECT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_COPY,
			    DRM_SIMACCEL_OP_DST_USER, (uintptr_t)buf + 100,
			    v.dev_addr, 8192));
	EXPECT_EQ(pinned0 + MIB + 64 * 1024, device_total("host_pinned"));
	ASSERT_EQ(0, gem_close(self->fd, v.handle));
	ASSERT_EQ(0, gem_close(self->fd, u.handle));
	close(fd2);
	EXPECT_EQ(vram0, device_total("vram_used"));
	EXPECT_EQ(pinned0, device_total("host_pinned"));
	free(buf);
}

/* drm-engine-copy: the engine time of this file's jobs, and no one else's. */
TEST_F(job, fdinfo_counts_each_files_engine_time)
{
	const size_t len = 16 * MIB;
	struct drm_simaccel_bo_create a, b;
	int fd2 = open(NODE, O_RDWR | O_CLOEXEC);
	long long before;

	ASSERT_LE(0, fd2);
	before = fdinfo_num(self->fd, "drm-engine-copy");
	ASSERT_LE(0, before);
	EXPECT_EQ(0, fdinfo_num(fd2, "drm-engine-copy"));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_VRAM, &a));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_HOST, &b));
	ASSERT_EQ(0, copy(self->fd, self->queue, a.dev_addr, b.dev_addr, len));
	/* a 16 MiB copy takes more than 100 us anywhere */
	EXPECT_LT(before + 100000, fdinfo_num(self->fd, "drm-engine-copy"));
	EXPECT_EQ(0, fdinfo_num(fd2, "drm-engine-copy"));
	close(fd2);
}

/* The device's busy time in ns, from sysfs's microseconds. */
static long long busy_ns(void)
{
	return device_total("busy_time_us") * 1000;
}

/*
 * busy_time_us: the device's busy time grows by at least what a job adds
 * to its file's drm-engine-copy, and not while the device is idle.
 */
TEST_F(job, busy_time_grows_by_each_jobs_engine_time_and_not_while_idle)
{
	const size_t len = 16 * MIB;
	struct drm_simaccel_bo_create a, b;
	long long busy0, busy1, idle0, idle1, engine0, engine1;

	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_VRAM, &a));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_HOST, &b));
	ASSERT_EQ(0, settle(self->fd));
	busy0 = busy_ns();
	engine0 = fdinfo_num(self->fd, "drm-engine-copy");
	ASSERT_LE(0, busy0);
	ASSERT_EQ(0, copy(self->fd, self->queue, a.dev_addr, b.dev_addr, len));
	busy1 = busy_ns();
	engine1 = fdinfo_num(self->fd, "drm-engine-copy");
	/* a 16 MiB copy takes more than 100 us anywhere */
	EXPECT_LT(100000, engine1 - engine0);
	/* both in ns; the microseconds' rounding takes up to 1 us off */
	EXPECT_LE(busy0 + engine1 - engine0, busy1 + 1000)
		TH_LOG("busy %lld -> %lld ns, the job's engine time %lld ns",
		       busy0, busy1, engine1 - engine0);
	ASSERT_EQ(0, settle(self->fd));
	idle0 = busy_ns();
	usleep(300000);
	idle1 = busy_ns();
	EXPECT_EQ(idle0, idle1);
	EXPECT_LE(busy1, idle0);
}

/* Whether @fd's queue @queue has finished what was submitted to it. */
static int wait_queue(int fd, uint32_t queue)
{
	return submit(fd, queue, DRM_SIMACCEL_SUBMIT_WAIT, NULL, 0, NULL, 0, NULL);
}

/*
 * A new binding's busy_time_us is its files' drm-engine-copy and its own
 * clearings': once the clearings are over, it grows by at least the sum of
 * what two files' jobs add to theirs, and it never goes back, sampled
 * while those jobs queue up on the rings.
 */
TEST(busy_time_is_at_least_its_files_and_never_decreases)
{
	const size_t len = 32 * MIB;
	struct drm_simaccel_bo_create a[2], b[2];
	long long base, prev, now, files;
	uint32_t queue[2];
	int fd[2], decreases = 0;

	ASSERT_EQ(0, rebind_with_timeout("2000"));
	for (int f = 0; f < 2; f++) {
		fd[f] = open(NODE, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd[f]);
		ASSERT_EQ(0, queue_create(fd[f], &queue[f]));
		ASSERT_EQ(0, bo_create(fd[f], len, DRM_SIMACCEL_BO_VRAM, &a[f]));
		ASSERT_EQ(0, bo_create(fd[f], len, DRM_SIMACCEL_BO_HOST, &b[f]));
		/* the clearings count in the device's total, in no file's */
		ASSERT_EQ(0, settle(fd[f]));
	}
	base = prev = busy_ns();
	ASSERT_LE(0, prev);
	for (int i = 0; i < 4; i++)
		for (int f = 0; f < 2; f++) {
			struct drm_simaccel_op op = {
				.op = DRM_SIMACCEL_OP_COPY, .dst = a[f].dev_addr,
				.src = b[f].dev_addr, .size = len,
			};

			ASSERT_EQ(0, submit(fd[f], queue[f], 0, &op, 1, NULL, 0, NULL));
		}
	for (int i = 0; i < 200; i++) {
		now = busy_ns();
		if (now < prev)
			decreases++;
		prev = now;
		usleep(1000);
	}
	EXPECT_EQ(0, decreases);
	for (int f = 0; f < 2; f++) {
		ASSERT_EQ(0, wait_queue(fd[f], queue[f]));
		ASSERT_EQ(0, settle(fd[f]));
	}
	now = busy_ns();
	EXPECT_LE(prev, now);
	files = fdinfo_num(fd[0], "drm-engine-copy") +
		fdinfo_num(fd[1], "drm-engine-copy");
	EXPECT_LT(0, files);
	/* what the device did since: these jobs alone */
	EXPECT_LE(files, now - base + 1000)
		TH_LOG("files %lld ns, device %lld ns since", files, now - base);
	for (int f = 0; f < 2; f++)
		close(fd[f]);
}

/* Jobs of one queue run in submission order, without waits between them. */
TEST_F(job, a_queues_jobs_run_in_order)
{
	const size_t len = 8 * MIB;
	struct drm_simaccel_bo_create a, b, h;
	struct drm_simaccel_op ops[3] = {
		{ .op = DRM_SIMACCEL_OP_FILL, .src = 0x21, .size = len },
		{ .op = DRM_SIMACCEL_OP_COPY, .size = len },
		{ .op = DRM_SIMACCEL_OP_FILL, .src = 0x42, .size = len },
	};
	uint8_t *m;

	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_VRAM, &a));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_VRAM, &b));
	ASSERT_EQ(0, bo_create(self->fd, len, DRM_SIMACCEL_BO_HOST, &h));
	ops[0].dst = a.dev_addr;
	ops[1].dst = b.dev_addr;
	ops[1].src = a.dev_addr;
	ops[2].dst = a.dev_addr;
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 3; i++)
			ASSERT_EQ(0, submit(self->fd, self->queue, 0, &ops[i], 1, NULL, 0, NULL));
		ASSERT_EQ(0, copy(self->fd, self->queue, h.dev_addr, b.dev_addr, len));
		m = map_bo(self->fd, &h);
		ASSERT_NE(MAP_FAILED, m);
		EXPECT_EQ(0x21, m[0]);
		EXPECT_EQ(0x21, m[len - 1]);
		munmap(m, len);
	}
}

TEST_F(job, user_memory_to_user_memory)
{
	const size_t len = 5 * MIB + 7;
	uint8_t *src = malloc(len), *dst = calloc(1, len);

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	fill_pattern(src, len, 9);
	ASSERT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_COPY,
			    DRM_SIMACCEL_OP_SRC_USER | DRM_SIMACCEL_OP_DST_USER,
			    (uintptr_t)dst + 1, (uintptr_t)src + 3, len - 3));
	EXPECT_EQ(0, dst[0]);
	EXPECT_EQ(0, memcmp(dst + 1, src + 3, len - 3));
	free(src);
	free(dst);
}

static char proc_state(pid_t pid)
{
	char path[64], line[128];
	char state = '?';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "State:", 6))
			sscanf(line + 6, " %c", &state);
	fclose(f);
	return state;
}

/*
 * SIGKILL a process whose jobs are stuck on a stalled device and that is
 * waiting in SUBMIT: it dies within a bounded time, and what its jobs held
 * comes back.
 */
TEST(killed_with_jobs_in_flight_dies_and_lets_go)
{
	long long pinned0, vram0;
	int status, i;
	pid_t pid;

	/* longer than the bound below: the time-out must not end the wait */
	ASSERT_EQ(0, rebind_with_timeout("5000"));
	pinned0 = device_total("host_pinned");
	vram0 = device_total("vram_used");
	ASSERT_EQ(0, inject_all("0x10000"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = open(NODE, O_RDWR | O_CLOEXEC);
		struct drm_simaccel_bo_create v;
		static uint8_t buf[1 << 20];
		uint32_t q;

		if (fd < 0 || queue_create(fd, &q) ||
		    bo_create(fd, 1 << 20, DRM_SIMACCEL_BO_VRAM, &v))
			_exit(10);
		for (i = 0; i < 8; i++)
			run_op(fd, q, DRM_SIMACCEL_OP_COPY, DRM_SIMACCEL_OP_DST_USER,
			       (uintptr_t)buf, v.dev_addr, sizeof(buf));
		_exit(11);
	}
	usleep(300000);
	/*
	 * It sleeps killably (shown as D). Exiting, drm_sched gives its
	 * queue's unscheduled jobs a second (MAX_WAIT_SCHED_ENTITY_Q_EMPTY)
	 * before it fails them: 3 s is the bound.
	 */
	ASSERT_EQ(0, kill(pid, SIGKILL));
	for (i = 0; i < 150 && waitpid(pid, &status, WNOHANG) == 0; i++)
		usleep(20000);
	EXPECT_GT(150, i) TH_LOG("still %c after 3 s", proc_state(pid));
	if (i == 150)
		waitpid(pid, &status, 0);
	EXPECT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, inject_all("0"));
	/* the stalled job times out, then everything is let go */
	for (i = 0; i < 150 && (device_total("host_pinned") != pinned0 ||
				device_total("vram_used") != vram0); i++)
		usleep(100000);
	EXPECT_EQ(pinned0, device_total("host_pinned"));
	EXPECT_EQ(vram0, device_total("vram_used"));
	EXPECT_FALSE(a_queue_is_stuck());
	ASSERT_EQ(0, rebind_with_timeout("2000"));
}

/*
 * Run alone on a device whose queue moves 1 MB/s (check.sh): clearing a
 * 4 MiB buffer takes 4 s, twice the default time-out, so it survives only
 * if its descriptors are sized to the advertised bandwidth.
 */
TEST(descriptors_are_sized_to_a_slow_devices_bandwidth)
{
	struct drm_simaccel_bo_create v;
	uint32_t queue;
	int fd;

	if (!getenv("SIMACCEL_VERY_SLOW_DEVICE"))
		SKIP(return, "needs a device throttled to 1 MB/s per queue");
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, bo_create(fd, 4 * MIB, DRM_SIMACCEL_BO_VRAM, &v));
	EXPECT_EQ(0, run_op(fd, queue, DRM_SIMACCEL_OP_FILL, 0, v.dev_addr, 7, 1));
	close(fd);
}

TEST_F(job, pins_are_charged_against_rlimit_memlock)
{
	const size_t len = 4 * MIB;
	uint8_t *buf = aligned_alloc(4096, len);
	pid_t pid;
	int status;

	ASSERT_NE(NULL, buf);
	memset(buf, 1, len);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct drm_simaccel_bo_userptr u1, u2;
		struct drm_simaccel_bo_create v;

		if (as_nobody_with_memlock(len + len / 2))
			_exit(10);
		/* refused before anything is allocated for it */
		if (userptr(self->fd, buf, 1ull << 41, 0, &u1) != -ENOMEM)
			_exit(18);
		if (userptr(self->fd, buf, len, 0, &u1))
			_exit(11);
		/* a second pin of the same pages counts again */
		if (userptr(self->fd, buf, len, 0, &u2) != -ENOMEM)
			_exit(12);
		if (bo_create(self->fd, len, DRM_SIMACCEL_BO_VRAM, &v))
			_exit(13);
		if (run_op(self->fd, self->queue, DRM_SIMACCEL_OP_COPY,
			   DRM_SIMACCEL_OP_SRC_USER, v.dev_addr,
			   (uintptr_t)buf, len) != -ENOMEM)
			_exit(14);
		/* the charge comes back with the buffer */
		if (gem_close(self->fd, u1.handle))
			_exit(15);
		if (run_op(self->fd, self->queue, DRM_SIMACCEL_OP_COPY,
			   DRM_SIMACCEL_OP_SRC_USER, v.dev_addr,
			   (uintptr_t)buf, len))
			_exit(16);
		if (userptr(self->fd, buf, len, 0, &u2))
			_exit(17);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	free(buf);
}

/*
 * The pins of one user count together: children that pin into their
 * parent's file and exit leave their charge with the user, not with their
 * gone address spaces.
 */
TEST_F(job, pins_count_per_user_whichever_process_made_them)
{
	const size_t len = 4 * MIB;
	uint8_t *buf = aligned_alloc(4096, len);
	pid_t pid;
	int status;

	ASSERT_NE(NULL, buf);
	memset(buf, 1, len);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct drm_simaccel_bo_userptr u;
		int pinned = 0;

		if (as_nobody_with_memlock(3 * len))
			_exit(10);
		for (int i = 0; i < 8; i++) {
			pid_t child = fork();

			if (child == 0)
				_exit(userptr(self->fd, buf, len, 0, &u) ? 1 : 0);
			if (child < 0 || waitpid(child, &status, 0) != child)
				_exit(11);
			pinned += WEXITSTATUS(status) == 0;
		}
		_exit(pinned == 3 ? 0 : 20 + pinned);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	free(buf);
}

/*
 * Jobs stuck on a stalled device when it is unbound fail with ENODEV, the
 * waiter returns, and the file is safe to use and close.
 */
TEST(unbind_with_jobs_queued_fails_them_and_files_stay_safe)
{
	struct drm_simaccel_bo_create a, b;
	struct drm_simaccel_op op = { .op = DRM_SIMACCEL_OP_COPY, .size = 4096 };
	char addr[64];
	uint32_t queue;
	int fd, status;
	pid_t pid;

	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, bo_create(fd, 4096, DRM_SIMACCEL_BO_VRAM, &a));
	ASSERT_EQ(0, bo_create(fd, 4096, DRM_SIMACCEL_BO_HOST, &b));
	op.dst = b.dev_addr;
	op.src = a.dev_addr;
	ASSERT_EQ(0, copy(fd, queue, b.dev_addr, a.dev_addr, 4096));
	ASSERT_EQ(0, inject_all("0x10000"));
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, submit(fd, queue, 0, &op, 1, NULL, 0, NULL));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(-submit(fd, queue, DRM_SIMACCEL_SUBMIT_WAIT, &op, 1, NULL, 0, NULL));
	usleep(200000);
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(ENODEV, WEXITSTATUS(status));
	/* DRM refuses every ioctl of an unplugged device; close cleans up */
	EXPECT_EQ(-ENODEV, submit(fd, queue, 0, &op, 1, NULL, 0, NULL));
	EXPECT_EQ(-ENODEV, queue_destroy(fd, queue));
	EXPECT_EQ(-ENODEV, gem_close(fd, a.handle));
	close(fd);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
}

/*
 * A queue with jobs queued (the first stalled) on a file opened before an
 * unbind, across the rebind: the jobs failed with the device (ENODEV, in
 * the fence a sync_file holds), every ioctl of the old file on its queue
 * fails with ENODEV, the new binding's queues work, closing the old file
 * is clean and quick, and it leaves nothing behind: bound again, the
 * device gets its old node back.
 */
TEST(a_queue_with_jobs_queued_across_unbind_and_rebind)
{
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .src = 3, .size = 4096 };
	struct drm_simaccel_sync out = { 0 };
	struct drm_simaccel_queue_query q;
	struct drm_simaccel_bo_create bo, mine;
	struct sync_file_info sfi = { 0 };
	struct pollfd pfd = { .events = POLLIN };
	uint32_t queue, other;
	char addr[64];
	double start;
	int fd, fd2, i;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, bo_create(fd, 4096, DRM_SIMACCEL_BO_HOST, &bo));
	ASSERT_EQ(0, syncobj_create(fd, &out.handle));
	fill.dst = bo.dev_addr;
	ASSERT_EQ(0, inject_all("0x10000"));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, submit(fd, queue, 0, &fill, 1, NULL, 0, i == 7 ? &out : NULL));
	pfd.fd = sync_file_export(fd, out.handle);
	ASSERT_LE(0, pfd.fd);
	EXPECT_EQ(-ETIME, syncobj_signalled(fd, out.handle));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	fd2 = open_by_pci(addr);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, inject_all_of(addr, "0"));
	/* the jobs failed with the device they were queued on */
	ASSERT_EQ(1, poll(&pfd, 1, 5000));
	ASSERT_EQ(0, ioctl(pfd.fd, SYNC_IOC_FILE_INFO, &sfi));
	EXPECT_EQ(-ENODEV, sfi.status);
	close(pfd.fd);
	/* the old file's queue is the old device's */
	EXPECT_EQ(-ENODEV, submit(fd, queue, 0, &fill, 1, NULL, 0, NULL));
	EXPECT_EQ(-ENODEV, submit(fd, queue, DRM_SIMACCEL_SUBMIT_WAIT, NULL, 0, NULL, 0, NULL));
	EXPECT_EQ(-ENODEV, queue_query(fd, queue, &q));
	EXPECT_EQ(-ENODEV, queue_destroy(fd, queue));
	EXPECT_EQ(-ENODEV, queue_create(fd, &other));
	/* the new binding's queues work, whatever the old one's handles */
	ASSERT_EQ(0, queue_create(fd2, &other));
	ASSERT_EQ(0, bo_create(fd2, 4096, DRM_SIMACCEL_BO_HOST, &mine));
	EXPECT_EQ(-ENOENT, queue_query(fd2, other + 1, &q));
	EXPECT_EQ(0, run_op(fd2, other, DRM_SIMACCEL_OP_FILL, 0, mine.dev_addr, 5, 4096));
	ASSERT_EQ(0, queue_query(fd2, other, &q));
	EXPECT_EQ(1, q.submitted);
	EXPECT_EQ(0, q.failed);
	start = seconds();
	EXPECT_EQ(0, close(fd));
	EXPECT_GT(1.0, seconds() - start) TH_LOG("closing the old file waited");
	close(fd2);
	/* no file of an older binding is left: bound again, it is accel0 */
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("the old file's queue held the old binding");
	close(fd);
}

TEST_HARNESS_MAIN
