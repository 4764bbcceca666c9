// SPDX-License-Identifier: GPL-2.0
/*
 * accel.ko memory conformance: allocation, handles, device addresses,
 * copies and fills in every direction, mmap, and recovery from device
 * faults. Run as root inside the VM. Every test checks that VRAM usage is
 * back to its baseline once its file is closed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "accel_util.h"
#include "../../uapi/accel.h"

#define MiB (1ull << 20)
#define FAULT_INJECT "/sys/kernel/debug/accel/accel0/fault_inject"
#define DMA_TIMEOUT "/sys/module/accel/parameters/dma_timeout_ms"


static int mem_alloc(int fd, uint64_t size, uint64_t align, uint32_t kind,
		     struct accel_alloc *a)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	a->align = align;
	a->kind = kind;
	return ioctl(fd, ACCEL_IOCTL_ALLOC, a);
}

static int mem_free(int fd, uint32_t handle)
{
	struct accel_free f = { .handle = handle };

	return ioctl(fd, ACCEL_IOCTL_FREE, &f);
}

static int copy(int fd, uint64_t dst, uint64_t src, uint64_t size,
		uint32_t flags)
{
	struct accel_copy c = { .dst = dst, .src = src, .size = size,
				.flags = flags };

	return ioctl(fd, ACCEL_IOCTL_COPY, &c);
}

static int h2d(int fd, uint64_t dst, const void *src, uint64_t size)
{
	return copy(fd, dst, (uintptr_t)src, size, ACCEL_COPY_SRC_USER);
}

static int d2h(int fd, void *dst, uint64_t src, uint64_t size)
{
	return copy(fd, (uintptr_t)dst, src, size, ACCEL_COPY_DST_USER);
}

static int fill(int fd, uint64_t dst, uint64_t size, uint32_t value)
{
	struct accel_memset m = { .dst = dst, .size = size, .value = value };

	return ioctl(fd, ACCEL_IOCTL_MEMSET, &m);
}

static struct accel_mem_stats stats(int fd)
{
	struct accel_mem_stats s = { 0 };

	if (ioctl(fd, ACCEL_IOCTL_MEM_STATS, &s))
		s.vram_total = 0;
	return s;
}

/* Bytes that depend on their position, so that any shift shows. */
static void pattern(uint8_t *buf, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = (uint8_t)((i * 2654435761u + seed * 40503u) >> 13) ^ (i >> 9);
}


FIXTURE(mem) {
	int fd;
	uint64_t base_used;
	uint64_t base_pinned;
};

FIXTURE_SETUP(mem)
{
	self->fd = dev_open();
	ASSERT_GE(self->fd, 0);
	self->base_used = stats(self->fd).vram_used;
	self->base_pinned = stats(self->fd).host_pinned;
	ASSERT_EQ(0, stats(self->fd).ctx_allocations);
}

/* Whatever the test did, closing its file gives all of it back. */
FIXTURE_TEARDOWN(mem)
{
	int fd;

	close(self->fd);
	fd = dev_open();
	ASSERT_GE(fd, 0);
	EXPECT_EQ(self->base_used, stats(fd).vram_used);
	EXPECT_EQ(self->base_pinned, stats(fd).host_pinned);
	close(fd);
}

TEST_F(mem, alloc_free_sizes)
{
	static const uint64_t sizes[] = { 1, 255, 256, 257, 4095, 4096, 4097,
					  MiB, MiB + 1 };
	struct accel_mem_stats s0 = stats(self->fd), s;
	struct accel_alloc a;
	unsigned int i;

	ASSERT_NE(0, s0.vram_total);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t rounded = (sizes[i] + 255) & ~255ull;

		ASSERT_EQ(0, mem_alloc(self->fd, sizes[i], 0, ACCEL_MEM_DEVICE, &a));
		EXPECT_NE(0, a.handle);
		EXPECT_EQ(0, a.dev_addr % ACCEL_ALLOC_MIN_ALIGN);
		EXPECT_GE(a.dev_addr, ACCEL_VRAM_BASE);
		EXPECT_LE(a.dev_addr + sizes[i], ACCEL_VRAM_BASE + s0.vram_total);
		EXPECT_EQ(0, a.mmap_offset);
		s = stats(self->fd);
		EXPECT_EQ(1, s.ctx_allocations);
		EXPECT_EQ(rounded, s.ctx_vram_used);
		EXPECT_EQ(s0.vram_used + rounded, s.vram_used);
		EXPECT_EQ(s.vram_total - s.vram_used, s.vram_free);
		ASSERT_EQ(0, mem_free(self->fd, a.handle));
		s = stats(self->fd);
		EXPECT_EQ(0, s.ctx_allocations);
		EXPECT_EQ(s0.vram_used, s.vram_used);
	}
}

TEST_F(mem, alloc_rejects_bad_input)
{
	uint64_t total = stats(self->fd).vram_total;
	struct accel_alloc a;

	EXPECT_EQ(-1, mem_alloc(self->fd, 0, 0, ACCEL_MEM_DEVICE, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, mem_alloc(self->fd, 64, 0, 0, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, mem_alloc(self->fd, 64, 0, ACCEL_MEM_HOST + 1, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, mem_alloc(self->fd, 64, 0, 0x100, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, mem_alloc(self->fd, 64, 3, ACCEL_MEM_DEVICE, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, mem_alloc(self->fd, 64, 1ull << 31, ACCEL_MEM_DEVICE, &a));
	EXPECT_EQ(EINVAL, errno);
	memset(&a, 0, sizeof(a));
	a.size = 64;
	a.kind = ACCEL_MEM_DEVICE;
	a.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_ALLOC, &a));
	EXPECT_EQ(EINVAL, errno);
	a.flags = 0;
	a.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_ALLOC, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, mem_alloc(self->fd, total + 1, 0, ACCEL_MEM_DEVICE, &a));
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_EQ(-1, mem_alloc(self->fd, ~0ull, 0, ACCEL_MEM_DEVICE, &a));
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_EQ(0, stats(self->fd).ctx_allocations);
}

TEST_F(mem, alloc_alignment)
{
	static const uint64_t aligns[] = { 1, 64, 4096, 65536, MiB, 64 * MiB };
	struct accel_alloc small, a;
	unsigned int i;

	/* something small first, so that alignment is not free */
	ASSERT_EQ(0, mem_alloc(self->fd, 100, 0, ACCEL_MEM_DEVICE, &small));
	for (i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		uint64_t want = aligns[i] < 256 ? 256 : aligns[i];

		ASSERT_EQ(0, mem_alloc(self->fd, 1000, aligns[i], ACCEL_MEM_DEVICE, &a));
		EXPECT_EQ(0, (a.dev_addr - ACCEL_VRAM_BASE) % want);
		EXPECT_EQ(0, mem_free(self->fd, a.handle));
	}
	/* host-visible memory is page aligned whatever is asked */
	ASSERT_EQ(0, mem_alloc(self->fd, 10, 0, ACCEL_MEM_HOST_VISIBLE, &a));
	EXPECT_EQ(0, a.dev_addr % 4096);
}

TEST_F(mem, alloc_until_full)
{
	uint64_t chunk = 4 * MiB, n = 0;
	struct accel_mem_stats s;
	struct accel_alloc a;

	while (!mem_alloc(self->fd, chunk, 0, ACCEL_MEM_DEVICE, &a))
		n++;
	EXPECT_EQ(ENOMEM, errno);
	s = stats(self->fd);
	EXPECT_LT(s.vram_free, chunk);
	EXPECT_EQ(n, s.ctx_allocations);
	EXPECT_EQ(n * chunk, s.ctx_vram_used);
	/* a small allocation may still fit; a big one does not */
	EXPECT_EQ(-1, mem_alloc(self->fd, chunk, 0, ACCEL_MEM_DEVICE, &a));
}

TEST_F(mem, free_rejects_bad_handles)
{
	struct accel_free f = { 0 };
	struct accel_alloc a;

	EXPECT_EQ(-1, mem_free(self->fd, 0));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, mem_free(self->fd, 12345));
	EXPECT_EQ(ENOENT, errno);
	ASSERT_EQ(0, mem_alloc(self->fd, 64, 0, ACCEL_MEM_DEVICE, &a));
	f.handle = a.handle;
	f.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_FREE, &f));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, mem_free(self->fd, a.handle));
	EXPECT_EQ(-1, mem_free(self->fd, a.handle));
	EXPECT_EQ(ENOENT, errno);
}

/* Another open() is another context: it owns none of this one's memory. */
TEST_F(mem, handles_and_addresses_are_per_open)
{
	struct accel_alloc a;
	uint8_t buf[64] = { 0 };
	int other = dev_open();

	ASSERT_GE(other, 0);
	ASSERT_EQ(0, mem_alloc(self->fd, 4096, 0, ACCEL_MEM_DEVICE, &a));
	EXPECT_EQ(-1, mem_free(other, a.handle));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, h2d(other, a.dev_addr, buf, sizeof(buf)));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, fill(other, a.dev_addr, 64, 1));
	EXPECT_EQ(EFAULT, errno);
	close(other);
	/* still ours */
	EXPECT_EQ(0, h2d(self->fd, a.dev_addr, buf, sizeof(buf)));
}

/* A fork shares the file, so the child may use the parent's memory. */
TEST_F(mem, fork_shares_the_context)
{
	uint8_t in[4096], out[4096];
	struct accel_alloc a;
	int status;
	pid_t pid;

	ASSERT_EQ(0, mem_alloc(self->fd, sizeof(in), 0, ACCEL_MEM_DEVICE, &a));
	pattern(in, sizeof(in), 9);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0)
		_exit(h2d(self->fd, a.dev_addr, in, sizeof(in)) ? 1 : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, d2h(self->fd, out, a.dev_addr, sizeof(out)));
	EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
}

/* Every direction, odd sizes, unaligned host and interior device addresses. */
TEST_F(mem, copy_roundtrip)
{
	static const uint64_t sizes[] = { 1, 2, 3, 7, 255, 4095, 4096, 4097,
					  3 * 4096 + 5, MiB + 7, 9 * MiB + 13 };
	uint64_t max = 9 * MiB + 13 + 64;
	uint8_t *in = malloc(max + 8), *out = malloc(max + 8), *edge = malloc(max);
	struct accel_alloc a, b;
	unsigned int i;

	ASSERT_TRUE(in && out && edge);
	ASSERT_EQ(0, mem_alloc(self->fd, max, 0, ACCEL_MEM_DEVICE, &a));
	ASSERT_EQ(0, mem_alloc(self->fd, max, 0, ACCEL_MEM_DEVICE, &b));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i];

		pattern(in + 1, n, i);
		ASSERT_EQ(0, fill(self->fd, a.dev_addr, max, 0xee));
		ASSERT_EQ(0, fill(self->fd, b.dev_addr, max, 0xdd));
		ASSERT_EQ(0, h2d(self->fd, a.dev_addr + 3, in + 1, n));	/* H2D */
		ASSERT_EQ(0, copy(self->fd, b.dev_addr + 5, a.dev_addr + 3, n, 0));
		ASSERT_EQ(0, d2h(self->fd, out + 2, b.dev_addr + 5, n));	/* D2H */
		EXPECT_EQ(0, memcmp(in + 1, out + 2, n)) TH_LOG("size %llu",
							(unsigned long long)n);
		/* nothing around the ranges was written */
		ASSERT_EQ(0, d2h(self->fd, edge, b.dev_addr, n + 10));
		EXPECT_EQ(0xdd, edge[4]);
		EXPECT_EQ(0xdd, edge[5 + n]);
		ASSERT_EQ(0, d2h(self->fd, edge, a.dev_addr, n + 8));
		EXPECT_EQ(0xee, edge[2]);
		EXPECT_EQ(0xee, edge[3 + n]);
	}
	free(in);
	free(out);
	free(edge);
}

/* Larger than the driver's 64 MiB pinning window, on scattered pages. */
TEST_F(mem, copy_large)
{
	uint64_t n = 64 * MiB + 4096 + 3;
	uint8_t *in = malloc(n), *out = malloc(n);
	struct accel_alloc a;

	ASSERT_TRUE(in && out);
	pattern(in, n, 77);
	memset(out, 0, n);
	ASSERT_EQ(0, mem_alloc(self->fd, n, 0, ACCEL_MEM_DEVICE, &a));
	ASSERT_EQ(0, h2d(self->fd, a.dev_addr, in, n));
	ASSERT_EQ(0, d2h(self->fd, out, a.dev_addr, n));
	EXPECT_EQ(0, memcmp(in, out, n));
	free(in);
	free(out);
}

TEST_F(mem, copy_user_to_user)
{
	uint8_t in[10000], out[10000];

	pattern(in, sizeof(in), 5);
	memset(out, 0, sizeof(out));
	ASSERT_EQ(0, copy(self->fd, (uintptr_t)out, (uintptr_t)in, sizeof(in),
			  ACCEL_COPY_SRC_USER | ACCEL_COPY_DST_USER));
	EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
}

TEST_F(mem, copy_rejects_bad_ranges)
{
	struct accel_alloc a, b;
	struct accel_copy c = { 0 };
	uint8_t buf[8192];
	void *ro, *gone;

	ASSERT_EQ(0, mem_alloc(self->fd, 4096, 0, ACCEL_MEM_DEVICE, &a));
	ASSERT_EQ(0, mem_alloc(self->fd, 4096, 0, ACCEL_MEM_DEVICE, &b));
	/* one byte past the end, and a range across two allocations */
	EXPECT_EQ(-1, h2d(self->fd, a.dev_addr + 1, buf, 4096));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, d2h(self->fd, buf, a.dev_addr, 8192));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, copy(self->fd, b.dev_addr, a.dev_addr + 4095, 2, 0));
	EXPECT_EQ(EFAULT, errno);
	/* addresses nobody allocated, and ranges that wrap */
	EXPECT_EQ(-1, h2d(self->fd, ACCEL_VRAM_BASE - 4096, buf, 16));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, h2d(self->fd, 16, buf, 16));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, copy(self->fd, a.dev_addr, ~0ull - 8, 64, ACCEL_COPY_SRC_USER));
	EXPECT_EQ(EFAULT, errno);
	/* user memory that is not there or not writable */
	EXPECT_EQ(-1, h2d(self->fd, a.dev_addr, NULL, 16));
	EXPECT_EQ(EFAULT, errno);
	gone = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, gone);
	munmap((char *)gone + 4096, 4096);
	EXPECT_EQ(-1, h2d(self->fd, a.dev_addr, (char *)gone + 4000, 200));
	EXPECT_EQ(EFAULT, errno);
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(0, h2d(self->fd, a.dev_addr, ro, 4096));	/* reading is fine */
	EXPECT_EQ(-1, d2h(self->fd, ro, a.dev_addr, 4096));	/* writing is not */
	EXPECT_EQ(EFAULT, errno);
	/* bad flags and padding */
	c.dst = a.dev_addr;
	c.src = b.dev_addr;
	c.size = 16;
	c.flags = 4;
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_COPY, &c));
	EXPECT_EQ(EINVAL, errno);
	c.flags = 0;
	c.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_COPY, &c));
	EXPECT_EQ(EINVAL, errno);
	/* a zero-size copy does nothing, even with addresses nobody owns */
	EXPECT_EQ(0, copy(self->fd, 16, 32, 0, 0));
	/* a freed allocation is gone */
	ASSERT_EQ(0, mem_free(self->fd, b.handle));
	EXPECT_EQ(-1, copy(self->fd, b.dev_addr, a.dev_addr, 16, 0));
	EXPECT_EQ(EFAULT, errno);
	munmap(gone, 4096);
	munmap(ro, 4096);
}

TEST_F(mem, memset_interior)
{
	uint64_t n = MiB;
	uint8_t *out = malloc(n);
	struct accel_alloc a;
	struct accel_memset m = { 0 };
	uint64_t i;

	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, mem_alloc(self->fd, n, 0, ACCEL_MEM_DEVICE, &a));
	ASSERT_EQ(0, fill(self->fd, a.dev_addr, n, 0));
	ASSERT_EQ(0, fill(self->fd, a.dev_addr + 1000, 4097, 0xab));
	ASSERT_EQ(0, d2h(self->fd, out, a.dev_addr, n));
	for (i = 0; i < n; i++)
		if (out[i] != (i >= 1000 && i < 1000 + 4097 ? 0xab : 0))
			break;
	EXPECT_EQ(n, i);
	EXPECT_EQ(0, fill(self->fd, a.dev_addr, 0, 1));
	EXPECT_EQ(-1, fill(self->fd, a.dev_addr, 16, 256));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, fill(self->fd, a.dev_addr + n - 1, 2, 1));
	EXPECT_EQ(EFAULT, errno);
	m.dst = a.dev_addr;
	m.size = 1;
	m.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_MEMSET, &m));
	EXPECT_EQ(EINVAL, errno);
	free(out);
}

TEST_F(mem, mmap_host_visible)
{
	uint64_t n = 3 * 4096 + 100;
	uint8_t in[3 * 4096 + 100], out[3 * 4096 + 100];
	struct accel_alloc a;
	uint8_t *map;

	ASSERT_EQ(0, mem_alloc(self->fd, n, 0, ACCEL_MEM_HOST_VISIBLE, &a));
	ASSERT_NE(0, a.mmap_offset);
	map = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		   a.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	/* CPU writes are seen by the device */
	pattern(in, n, 3);
	memcpy(map, in, n);
	ASSERT_EQ(0, d2h(self->fd, out, a.dev_addr, n));
	EXPECT_EQ(0, memcmp(in, out, n));
	/* device writes are seen by the CPU */
	pattern(in, n, 4);
	ASSERT_EQ(0, h2d(self->fd, a.dev_addr, in, n));
	EXPECT_EQ(0, memcmp(in, map, n));
	/* a mapping of the second page starts at the right byte */
	munmap(map, 4 * 4096);
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, a.mmap_offset + 4096);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(0, memcmp(in + 4096, map, 4096));
	munmap(map, 4096);
}

/*
 * A mapping larger than what one fault maps (2 MiB), from the second page
 * of the allocation: every page is the right one, whichever is touched
 * first.
 */
TEST_F(mem, mmap_host_visible_large)
{
	const uint64_t n = (5 << 20) + 3 * 4096, len = n - 4096;
	uint8_t *in = malloc(n), *out = malloc(n), *map;
	struct accel_alloc a;

	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, mem_alloc(self->fd, n, 0, ACCEL_MEM_HOST_VISIBLE, &a));
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		   a.mmap_offset + 4096);
	ASSERT_NE(MAP_FAILED, map);
	pattern(in, n, 31);
	ASSERT_EQ(0, h2d(self->fd, a.dev_addr, in, n));
	/* the last page first, then one in the middle, then all */
	EXPECT_EQ(0, memcmp(in + n - 4096, map + len - 4096, 4096));
	EXPECT_EQ(0, memcmp(in + (3 << 20), map + (3 << 20) - 4096, 4096));
	EXPECT_EQ(0, memcmp(in + 4096, map, len));
	/* CPU writes through the mapping land at the right device address */
	pattern(in, n, 32);
	memcpy(map, in + 4096, len);
	ASSERT_EQ(0, d2h(self->fd, out, a.dev_addr + 4096, len));
	EXPECT_EQ(0, memcmp(in + 4096, out, len));
	munmap(map, len);
	free(in);
	free(out);
}

TEST_F(mem, mmap_rejects)
{
	struct accel_alloc dev, vis;
	void *map;

	ASSERT_EQ(0, mem_alloc(self->fd, 4096, 0, ACCEL_MEM_DEVICE, &dev));
	ASSERT_EQ(0, mem_alloc(self->fd, 8192, 0, ACCEL_MEM_HOST_VISIBLE, &vis));
	/* device-only memory cannot be mapped, even at its handle's offset */
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
		   vis.mmap_offset / vis.handle * dev.handle);
	EXPECT_EQ(MAP_FAILED, map);
	EXPECT_EQ(EACCES, errno);
	/* longer than the allocation, or starting past it */
	map = mmap(NULL, 3 * 4096, PROT_READ, MAP_SHARED, self->fd, vis.mmap_offset);
	EXPECT_EQ(MAP_FAILED, map);
	EXPECT_EQ(EINVAL, errno);
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
		   vis.mmap_offset + 2 * 4096);
	EXPECT_EQ(MAP_FAILED, map);
	EXPECT_EQ(EINVAL, errno);
	/* an offset no handle has */
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, map);
	EXPECT_EQ(EINVAL, errno);
}

/*
 * Only shared mappings: a private one would be copy-on-write, which pages
 * the kernel does not own cannot be. Refused, whatever its protection;
 * touched if it was not, as a program would.
 */
TEST_F(mem, mmap_private_refused)
{
	static const uint32_t kinds[] = { ACCEL_MEM_HOST_VISIBLE, ACCEL_MEM_HOST };
	static const int prots[] = { PROT_READ | PROT_WRITE, PROT_READ };
	struct accel_alloc a;
	uint8_t *map;

	for (unsigned int k = 0; k < 2; k++) {
		ASSERT_EQ(0, mem_alloc(self->fd, 4096, 0, kinds[k], &a));
		for (unsigned int p = 0; p < 2; p++) {
			map = mmap(NULL, 4096, prots[p], MAP_PRIVATE, self->fd,
				   a.mmap_offset);
			if (map == MAP_FAILED) {
				EXPECT_EQ(EINVAL, errno);
				continue;
			}
			TH_LOG("kind %u, prot %d: mapped", kinds[k], prots[p]);
			if (prots[p] & PROT_WRITE)
				map[0] = 1;
			EXPECT_EQ(0, map[1]);
			munmap(map, 4096);
			EXPECT_EQ(MAP_FAILED, map);
		}
		/* the allocation is still whole and can be shared */
		map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
			   self->fd, a.mmap_offset);
		ASSERT_NE(MAP_FAILED, map);
		map[0] = 7;
		EXPECT_EQ(7, map[0]);
		munmap(map, 4096);
		ASSERT_EQ(0, mem_free(self->fd, a.handle));
	}
}

/* A mapping keeps its memory: freeing the handle does not free VRAM. */
TEST_F(mem, mapping_outlives_free)
{
	uint64_t before = stats(self->fd).vram_used;
	struct accel_alloc a;
	uint8_t *map;
	int status;
	pid_t pid;

	ASSERT_EQ(0, mem_alloc(self->fd, 4096, 0, ACCEL_MEM_HOST_VISIBLE, &a));
	map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		   a.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mem_free(self->fd, a.handle));
	EXPECT_EQ(before + 4096, stats(self->fd).vram_used);
	map[0] = 42;
	/* a child inherits the mapping */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		map[1] = map[0] + 1;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(43, map[1]);
	EXPECT_EQ(before + 4096, stats(self->fd).vram_used);
	munmap(map, 4096);
	EXPECT_EQ(before, stats(self->fd).vram_used);
}

TEST_F(mem, stats_in_sysfs)
{
	struct accel_alloc a;
	char buf[64] = "";
	FILE *f;

	ASSERT_EQ(0, mem_alloc(self->fd, MiB, 0, ACCEL_MEM_DEVICE, &a));
	f = fopen("/sys/class/misc/accel0/vram_used", "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(buf, sizeof(buf), f));
	fclose(f);
	EXPECT_EQ(stats(self->fd).vram_used, strtoull(buf, NULL, 0));
}

/* debugfs lists each open file with its process and usage. */
TEST_F(mem, per_context_usage_in_debugfs)
{
	struct accel_alloc a, h;
	char line[256];
	int found = 0, other = dev_open();
	FILE *f;

	ASSERT_GE(other, 0);
	ASSERT_EQ(0, mem_alloc(self->fd, 3 * MiB, 0, ACCEL_MEM_DEVICE, &a));
	ASSERT_EQ(0, mem_alloc(self->fd, 8192, 0, ACCEL_MEM_HOST, &h));
	f = fopen("/sys/kernel/debug/accel/accel0/contexts", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long vram, pinned;
		unsigned int allocs;
		char comm[32];
		int pid, jobs;

		if (sscanf(line, "%d %31s %llu %llu %u %d", &pid, comm, &vram,
			   &pinned, &allocs, &jobs) != 6 || pid != getpid())
			continue;
		/* our two files: this one with its memory, the other empty */
		if (allocs == 2) {
			EXPECT_EQ(3 * MiB, vram);
			EXPECT_EQ(8192, pinned);
			found++;
		} else {
			EXPECT_EQ(0, vram);
			EXPECT_EQ(0, allocs);
			found += 10;
		}
	}
	fclose(f);
	EXPECT_EQ(11, found);
	close(other);
}

/* Device faults fail the transfer with EIO; the next one works. */
TEST_F(mem, fault_injection_recovers)
{
	uint8_t in[4096], out[4096];
	struct accel_alloc a;

	ASSERT_EQ(0, mem_alloc(self->fd, sizeof(in), 0, ACCEL_MEM_DEVICE, &a));
	pattern(in, sizeof(in), 1);
	ASSERT_EQ(0, write_file(FAULT_INJECT, "1"));
	EXPECT_EQ(-1, h2d(self->fd, a.dev_addr, in, sizeof(in)));
	EXPECT_EQ(EIO, errno);
	ASSERT_EQ(0, h2d(self->fd, a.dev_addr, in, sizeof(in)));
	ASSERT_EQ(0, d2h(self->fd, out, a.dev_addr, sizeof(out)));
	EXPECT_EQ(0, memcmp(in, out, sizeof(in)));

	/* a stalled queue is given up on after dma_timeout_ms, and reset */
	ASSERT_EQ(0, write_file(DMA_TIMEOUT, "300"));
	ASSERT_EQ(0, write_file(FAULT_INJECT, "0x10000"));
	EXPECT_EQ(-1, h2d(self->fd, a.dev_addr, in, sizeof(in)));
	EXPECT_EQ(EIO, errno);
	ASSERT_EQ(0, write_file(DMA_TIMEOUT, "10000"));
	EXPECT_EQ(0, d2h(self->fd, out, a.dev_addr, sizeof(out)));
	EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
}

/* Several processes allocating and copying at once. */
TEST_F(mem, many_processes)
{
	const int nproc = 4, rounds = 10;
	int i, status, ok = 0;

	for (i = 0; i < nproc; i++) {
		if (fork() == 0) {
			int fd = dev_open(), r;
			size_t n = MiB + i;
			uint8_t *in = malloc(n), *out = malloc(n);
			struct accel_alloc a;

			for (r = 0; r < rounds; r++) {
				pattern(in, n, i * 100 + r);
				if (fd < 0 || !in || !out ||
				    mem_alloc(fd, n, 0, ACCEL_MEM_DEVICE, &a) ||
				    h2d(fd, a.dev_addr, in, n) ||
				    d2h(fd, out, a.dev_addr, n) ||
				    memcmp(in, out, n) || mem_free(fd, a.handle))
					_exit(1);
			}
			_exit(0);
		}
	}
	for (i = 0; i < nproc; i++)
		if (wait(&status) > 0 && WIFEXITED(status) && !WEXITSTATUS(status))
			ok++;
	EXPECT_EQ(nproc, ok);
}

/* Pinned host memory: mappable, and a copy source or target by address. */
TEST_F(mem, host_memory)
{
	uint64_t n = 3 * 4096 + 100;
	uint8_t in[3 * 4096 + 100], out[3 * 4096 + 100];
	struct accel_alloc h, v;
	uint8_t *map;

	ASSERT_EQ(0, mem_alloc(self->fd, n, 0, ACCEL_MEM_HOST, &h));
	EXPECT_GE(h.dev_addr, ACCEL_HOST_BASE);
	EXPECT_NE(0, h.mmap_offset);
	EXPECT_EQ(self->base_pinned + 4 * 4096, stats(self->fd).host_pinned);
	EXPECT_EQ(4 * 4096, stats(self->fd).ctx_host_pinned);
	EXPECT_EQ(0, stats(self->fd).ctx_vram_used);
	map = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		   h.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(0, map[n - 1]);	/* new memory is zeroed */
	ASSERT_EQ(0, mem_alloc(self->fd, n + 64, 0, ACCEL_MEM_DEVICE, &v));

	/* host allocation -> VRAM -> user memory */
	pattern(in, n, 21);
	memcpy(map, in, n);
	ASSERT_EQ(0, copy(self->fd, v.dev_addr + 9, h.dev_addr, n, 0));
	ASSERT_EQ(0, d2h(self->fd, out, v.dev_addr + 9, n));
	EXPECT_EQ(0, memcmp(in, out, n));
	/* VRAM -> host allocation, at an interior address */
	ASSERT_EQ(0, copy(self->fd, h.dev_addr + 5, v.dev_addr + 9, n - 5, 0));
	EXPECT_EQ(0, memcmp(in, map + 5, n - 5));
	/* user memory -> host allocation, and a fill */
	pattern(in, n, 22);
	ASSERT_EQ(0, h2d(self->fd, h.dev_addr, in, n));
	EXPECT_EQ(0, memcmp(in, map, n));
	ASSERT_EQ(0, fill(self->fd, h.dev_addr + 4000, 5000, 0x5a));
	EXPECT_EQ(in[3999], map[3999]);
	EXPECT_EQ(0x5a, map[4000]);
	EXPECT_EQ(0x5a, map[8999]);
	EXPECT_EQ(in[9000], map[9000]);
	/* past the end is refused */
	EXPECT_EQ(-1, copy(self->fd, v.dev_addr, h.dev_addr + 1, n, 0));
	EXPECT_EQ(EFAULT, errno);
	/* the mapping keeps the pages after the handle is freed */
	ASSERT_EQ(0, mem_free(self->fd, h.handle));
	EXPECT_EQ(self->base_pinned + 4 * 4096, stats(self->fd).host_pinned);
	EXPECT_EQ(0x5a, map[4000]);
	munmap(map, 4 * 4096);
	EXPECT_EQ(self->base_pinned, stats(self->fd).host_pinned);
}

TEST_F(mem, host_memory_large)
{
	uint64_t n = 48 * MiB + 12345;
	struct accel_alloc h, v;
	uint8_t *map, *in = malloc(n);

	ASSERT_NE(NULL, in);
	ASSERT_EQ(0, mem_alloc(self->fd, n, 0, ACCEL_MEM_HOST, &h));
	ASSERT_EQ(0, mem_alloc(self->fd, n, 0, ACCEL_MEM_DEVICE, &v));
	map = mmap(NULL, (n + 4095) & ~4095ull, PROT_READ | PROT_WRITE, MAP_SHARED,
		   self->fd, h.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	pattern(in, n, 8);
	memcpy(map, in, n);
	ASSERT_EQ(0, copy(self->fd, v.dev_addr, h.dev_addr, n, 0));
	memset(map, 0, n);
	ASSERT_EQ(0, copy(self->fd, h.dev_addr, v.dev_addr, n, 0));
	EXPECT_EQ(0, memcmp(in, map, n));
	munmap(map, (n + 4095) & ~4095ull);
	free(in);
}

TEST_F(mem, host_alloc_rejects)
{
	struct accel_alloc h;

	EXPECT_EQ(-1, mem_alloc(self->fd, 1ull << 50, 0, ACCEL_MEM_HOST, &h));
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_EQ(-1, mem_alloc(self->fd, 0, 0, ACCEL_MEM_HOST, &h));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(self->base_pinned, stats(self->fd).host_pinned);
}

/* Pinned host memory, all contexts together, stays under half of the RAM. */
TEST_F(mem, host_pin_limit)
{
	uint64_t third = (uint64_t)sysconf(_SC_PHYS_PAGES) * 4096 * 3 / 10;
	struct accel_alloc a, b;

	ASSERT_EQ(0, mem_alloc(self->fd, third, 0, ACCEL_MEM_HOST, &a));
	/* below the RAM, but past the limit with the first */
	EXPECT_EQ(-1, mem_alloc(self->fd, third, 0, ACCEL_MEM_HOST, &b));
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_EQ(0, mem_free(self->fd, a.handle));
	EXPECT_EQ(self->base_pinned, stats(self->fd).host_pinned);
	ASSERT_EQ(0, mem_alloc(self->fd, third, 0, ACCEL_MEM_HOST, &b));
	EXPECT_EQ(0, mem_free(self->fd, b.handle));
}

static int userptr(int fd, void *addr, uint64_t size, uint32_t flags,
		   struct accel_userptr *u)
{
	memset(u, 0, sizeof(*u));
	u->user_addr = (uintptr_t)addr;
	u->size = size;
	u->flags = flags;
	return ioctl(fd, ACCEL_IOCTL_USERPTR, u);
}

/* Registered user memory is used by device address, with no pinning per copy. */
TEST_F(mem, userptr_copies)
{
	uint64_t n = 3 * 4096 + 1000;
	uint8_t *buf = malloc(n + 16), *in = malloc(n);
	struct accel_userptr u;
	struct accel_alloc v;

	ASSERT_TRUE(buf && in);
	memset(buf, 0, n + 16);
	ASSERT_EQ(0, userptr(self->fd, buf + 3, n, 0, &u));
	EXPECT_NE(0, u.handle);
	EXPECT_GE(u.dev_addr, ACCEL_HOST_BASE);
	EXPECT_EQ(((uintptr_t)buf + 3) % 4096, u.dev_addr % 4096);
	EXPECT_LT(self->base_pinned, stats(self->fd).host_pinned);
	ASSERT_EQ(0, mem_alloc(self->fd, n, 0, ACCEL_MEM_DEVICE, &v));

	pattern(in, n, 31);
	ASSERT_EQ(0, h2d(self->fd, v.dev_addr, in, n));
	ASSERT_EQ(0, copy(self->fd, u.dev_addr + 7, v.dev_addr, n - 7, 0));
	EXPECT_EQ(0, memcmp(in, buf + 3 + 7, n - 7));
	EXPECT_EQ(0, buf[3 + 6]);		/* the byte before is untouched */
	EXPECT_EQ(0, buf[3 + n]);		/* and the one after the range */
	pattern(buf + 3, n, 32);
	ASSERT_EQ(0, copy(self->fd, v.dev_addr, u.dev_addr, n, 0));
	ASSERT_EQ(0, d2h(self->fd, in, v.dev_addr, n));
	EXPECT_EQ(0, memcmp(in, buf + 3, n));
	EXPECT_EQ(-1, copy(self->fd, v.dev_addr, u.dev_addr + 1, n, 0));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, mem_free(self->fd, u.handle));
	EXPECT_EQ(self->base_pinned, stats(self->fd).host_pinned);
	EXPECT_EQ(-1, copy(self->fd, v.dev_addr, u.dev_addr, 16, 0));
	EXPECT_EQ(EFAULT, errno);
	free(buf);
	free(in);
}

TEST_F(mem, userptr_read_only)
{
	uint8_t buf[8192], out[8192];
	struct accel_userptr u;
	struct accel_alloc v, vis;
	void *map;

	pattern(buf, sizeof(buf), 41);
	ASSERT_EQ(0, userptr(self->fd, buf, sizeof(buf), ACCEL_USERPTR_READ_ONLY, &u));
	ASSERT_EQ(0, mem_alloc(self->fd, sizeof(buf), 0, ACCEL_MEM_DEVICE, &v));
	ASSERT_EQ(0, copy(self->fd, v.dev_addr, u.dev_addr, sizeof(buf), 0));
	ASSERT_EQ(0, d2h(self->fd, out, v.dev_addr, sizeof(out)));
	EXPECT_EQ(0, memcmp(buf, out, sizeof(buf)));
	/* the device may not write it */
	EXPECT_EQ(-1, copy(self->fd, u.dev_addr, v.dev_addr, 16, 0));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, fill(self->fd, u.dev_addr, 16, 0));
	EXPECT_EQ(EFAULT, errno);
	/* registered memory is the caller's already: not mappable */
	ASSERT_EQ(0, mem_alloc(self->fd, 4096, 0, ACCEL_MEM_HOST_VISIBLE, &vis));
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
		   vis.mmap_offset / vis.handle * u.handle);
	EXPECT_EQ(MAP_FAILED, map);
	EXPECT_EQ(EACCES, errno);
}

TEST_F(mem, userptr_rejects)
{
	struct accel_userptr u;
	void *ro, *gone, *heap;
	uint8_t buf[64];

	EXPECT_EQ(-1, userptr(self->fd, buf, 0, 0, &u));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, userptr(self->fd, buf, sizeof(buf), 2, &u));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, userptr(self->fd, NULL, 4096, 0, &u));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, userptr(self->fd, (void *)0xffff888000000000ull, 4096, 0, &u));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, userptr(self->fd, (void *)(~0ull - 100), 4096, 0, &u));
	EXPECT_EQ(EFAULT, errno);
	/* larger than the RAM: refused before the page array is allocated */
	heap = malloc(64);
	ASSERT_NE(NULL, heap);
	EXPECT_EQ(-1, userptr(self->fd, heap, 1ull << 40, 0, &u));
	EXPECT_EQ(ENOMEM, errno);
	free(heap);
	gone = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, gone);
	munmap((char *)gone + 4096, 4096);
	EXPECT_EQ(-1, userptr(self->fd, gone, 3 * 4096, 0, &u));
	EXPECT_EQ(EFAULT, errno);
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-1, userptr(self->fd, ro, 4096, 0, &u));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0, userptr(self->fd, ro, 4096, ACCEL_USERPTR_READ_ONLY, &u));
	EXPECT_EQ(0, mem_free(self->fd, u.handle));
	EXPECT_EQ(self->base_pinned, stats(self->fd).host_pinned);
	EXPECT_EQ(0, stats(self->fd).ctx_allocations);
	munmap(gone, 4096);
	munmap((char *)gone + 2 * 4096, 4096);
	munmap(ro, 4096);
}

static int copy_peer(int fd, uint64_t dst, uint64_t src, uint64_t size,
		     uint32_t flags, int peer_fd)
{
	struct accel_copy c = { .dst = dst, .src = src, .size = size,
				.flags = flags, .peer_fd = peer_fd };

	return ioctl(fd, ACCEL_IOCTL_COPY, &c);
}

/* Device to device through the peer's BAR, in both directions. */
TEST_F(mem, peer_to_peer)
{
	uint64_t n = 9 * MiB + 5;
	uint8_t *in = malloc(n), *out = malloc(n);
	struct accel_alloc v0, v1;
	int peer = open("/dev/accel1", O_RDWR | O_CLOEXEC);

	if (peer < 0)
		SKIP(return, "needs a second device");
	ASSERT_TRUE(in && out);
	ASSERT_EQ(0, mem_alloc(self->fd, n + 128, 0, ACCEL_MEM_DEVICE, &v0));
	ASSERT_EQ(0, mem_alloc(peer, n + 16, 0, ACCEL_MEM_DEVICE, &v1));
	pattern(in, n, 51);
	ASSERT_EQ(0, h2d(self->fd, v0.dev_addr, in, n));
	ASSERT_EQ(0, copy_peer(self->fd, v1.dev_addr + 3, v0.dev_addr, n,
			       ACCEL_COPY_DST_PEER, peer));
	ASSERT_EQ(0, d2h(peer, out, v1.dev_addr + 3, n));
	EXPECT_EQ(0, memcmp(in, out, n));
	/* and back, pulled by the first device */
	ASSERT_EQ(0, copy_peer(self->fd, v0.dev_addr + 100, v1.dev_addr + 3, n,
			       ACCEL_COPY_SRC_PEER, peer));
	ASSERT_EQ(0, d2h(self->fd, out, v0.dev_addr + 100, n));
	EXPECT_EQ(0, memcmp(in, out, n));
	close(peer);
	free(in);
	free(out);
}

TEST_F(mem, peer_rejects)
{
	struct accel_alloc v0, v1, h1;
	struct accel_copy c = { 0 };
	int peer = open("/dev/accel1", O_RDWR | O_CLOEXEC);
	int null = open("/dev/null", O_RDWR);

	if (peer < 0)
		SKIP(return, "needs a second device");
	ASSERT_EQ(0, mem_alloc(self->fd, 4096, 0, ACCEL_MEM_DEVICE, &v0));
	ASSERT_EQ(0, mem_alloc(peer, 4096, 0, ACCEL_MEM_DEVICE, &v1));
	ASSERT_EQ(0, mem_alloc(peer, 4096, 0, ACCEL_MEM_HOST, &h1));
	EXPECT_EQ(-1, copy_peer(self->fd, v1.dev_addr, v0.dev_addr, 64,
				ACCEL_COPY_DST_PEER, -1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, copy_peer(self->fd, v1.dev_addr, v0.dev_addr, 64,
				ACCEL_COPY_DST_PEER, null));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, copy_peer(self->fd, v1.dev_addr, v0.dev_addr, 64,
				ACCEL_COPY_DST_PEER | ACCEL_COPY_DST_USER, peer));
	EXPECT_EQ(EINVAL, errno);
	/* past the end of the peer's allocation, or not the peer's at all */
	EXPECT_EQ(-1, copy_peer(self->fd, v1.dev_addr + 1, v0.dev_addr, 4096,
				ACCEL_COPY_DST_PEER, peer));
	EXPECT_EQ(EFAULT, errno);
	/* (device addresses are per device: pick one the peer did not allocate) */
	EXPECT_EQ(-1, copy_peer(self->fd, v1.dev_addr + MiB, v0.dev_addr, 64,
				ACCEL_COPY_DST_PEER, peer));
	EXPECT_EQ(EFAULT, errno);
	/* the peer side must be device memory */
	EXPECT_EQ(-1, copy_peer(self->fd, h1.dev_addr, v0.dev_addr, 64,
				ACCEL_COPY_DST_PEER, peer));
	EXPECT_EQ(EINVAL, errno);
	c.dst = v1.dev_addr;
	c.src = v0.dev_addr;
	c.size = 64;
	c.flags = ACCEL_COPY_DST_PEER;
	c.peer_fd = peer;
	c.pad2 = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_COPY, &c));
	EXPECT_EQ(EINVAL, errno);
	close(null);
	close(peer);
}

/* Another open of the same device can be named as the peer too. */
TEST_F(mem, peer_on_the_same_device)
{
	uint8_t in[5000], out[5000];
	struct accel_alloc a, b;
	int other = dev_open();

	ASSERT_GE(other, 0);
	ASSERT_EQ(0, mem_alloc(self->fd, sizeof(in), 0, ACCEL_MEM_DEVICE, &a));
	ASSERT_EQ(0, mem_alloc(other, sizeof(in), 0, ACCEL_MEM_DEVICE, &b));
	pattern(in, sizeof(in), 61);
	ASSERT_EQ(0, h2d(self->fd, a.dev_addr, in, sizeof(in)));
	ASSERT_EQ(0, copy_peer(self->fd, b.dev_addr, a.dev_addr, sizeof(in),
			       ACCEL_COPY_DST_PEER, other));
	ASSERT_EQ(0, d2h(other, out, b.dev_addr, sizeof(out)));
	EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
	close(other);
}

/* A caller built against the first, shorter struct accel_copy still works. */
TEST_F(mem, copy_old_struct_size)
{
	struct accel_copy_v1 {
		__u64 dst, src, size;
		__u32 flags, pad;
	} c = { 0 };
	uint8_t in[100], out[100];
	struct accel_alloc a;

	ASSERT_EQ(0, mem_alloc(self->fd, sizeof(in), 0, ACCEL_MEM_DEVICE, &a));
	pattern(in, sizeof(in), 71);
	c.dst = a.dev_addr;
	c.src = (uintptr_t)in;
	c.size = sizeof(in);
	c.flags = ACCEL_COPY_SRC_USER;
	ASSERT_EQ(0, ioctl(self->fd, _IOW(ACCEL_IOCTL_TYPE, 0x03, c), &c));
	ASSERT_EQ(0, d2h(self->fd, out, a.dev_addr, sizeof(out)));
	EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
}

TEST_HARNESS_MAIN
