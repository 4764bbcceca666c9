// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel.ko on DRM accel: what the subsystem and the uapi header promise,
 * run as root inside the VM with the driver bound to the first device.
 *
 * - the node is /dev/accel/accelN, DRM's accel major, and the DRM version
 *   names the driver, not the subsystem;
 * - GET_INFO describes the PCI function sysfs describes, refuses flags and
 *   padding that are not zero, and serves callers built against a shorter
 *   struct without writing past it;
 * - ioctl numbers the driver does not have are refused;
 * - a file opened before the device is unbound gets -ENODEV afterwards and
 *   closes cleanly; the device bound again works; a bind that finds no
 *   contiguous memory for the rings fails with ENOMEM and says so, with no
 *   allocation failure's stack dump;
 * - buffers: arguments checked, distinct aligned ranges inside VRAM, VRAM
 *   cleared between owners, mappings of mappable buffers only and within
 *   their size, handles and mappings private to their file, and mappings
 *   revoked (SIGBUS) when the device is unbound;
 * - a file opened before an unbind, across the rebind: its HOST and USERPTR
 *   buffers keep their memory (and the pin its user's charge) until it is
 *   closed, its ioctls fail with ENODEV, its fdinfo has no DRM keys, and
 *   the new binding has nothing of it; a killed user's HOST mapping lets
 *   the buffer go;
 * - fdinfo (Documentation/gpu/drm-usage-stats.rst) names the driver, the PCI
 *   function and a client id of each open, and counts the VRAM each file's
 *   buffers hold, page-rounded, and no one else's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <linux/mman.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "simaccel_util.h"
#include "../../include/accel_hw.h"

#define MIB		(1024 * 1024ull)

#define ACCEL_MAJOR	261	/* DRM accel's char major */

#define INFO_CAPS	(DRM_SIMACCEL_CAP_COPY | DRM_SIMACCEL_CAP_FILL | \
			 DRM_SIMACCEL_CAP_FENCE | DRM_SIMACCEL_CAP_P2P | \
			 DRM_SIMACCEL_CAP_FAULT_INJECT)

static unsigned long long sysfs_num(const char *dir, const char *name)
{
	char path[512], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return ~0ull;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtoull(buf, NULL, 0);
}

static int get_info(int fd, struct drm_simaccel_info *info)
{
	return ioctl(fd, DRM_IOCTL_SIMACCEL_GET_INFO, info) ? -errno : 0;
}

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", NODE, strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

TEST_F(dev, node_is_drm_accel)
{
	struct stat st;

	ASSERT_EQ(0, fstat(self->fd, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(ACCEL_MAJOR, major(st.st_rdev));
	EXPECT_EQ(0, minor(st.st_rdev));
}

TEST_F(dev, version_names_the_driver)
{
	char name[64] = "", date[64] = "", desc[128] = "";
	struct drm_version v = {
		.name = name, .name_len = sizeof(name) - 1,
		.date = date, .date_len = sizeof(date) - 1,
		.desc = desc, .desc_len = sizeof(desc) - 1,
	};

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_VERSION, &v));
	EXPECT_STREQ("simaccel", name);
	EXPECT_EQ(0, v.version_major);
	EXPECT_NE(0, strlen(desc));
}

TEST_F(dev, info_matches_sysfs)
{
	struct drm_simaccel_info info = { 0 };
	char addr[64], dir[128];
	unsigned int dom, bus, slot, fn;

	ASSERT_EQ(0, get_info(self->fd, &info));
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	ASSERT_EQ(4, sscanf(addr, "%x:%x:%x.%x", &dom, &bus, &slot, &fn));
	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", addr);
	EXPECT_EQ(sysfs_num(dir, "vendor"), info.vendor_id);
	EXPECT_EQ(sysfs_num(dir, "device"), info.device_id);
	EXPECT_EQ(sysfs_num(dir, "subsystem_vendor"), info.subsystem_vendor_id);
	EXPECT_EQ(sysfs_num(dir, "subsystem_device"), info.subsystem_id);
	EXPECT_EQ(sysfs_num(dir, "revision"), info.revision);
	EXPECT_EQ(sysfs_num(dir, "class"), info.class_code);
	EXPECT_EQ(dom, info.pci_domain);
	EXPECT_EQ(bus, info.pci_bus);
	EXPECT_EQ((slot << 3) | fn, info.pci_devfn);
	EXPECT_EQ(ACCEL_PCI_VENDOR_ID, info.vendor_id);
	EXPECT_EQ(ACCEL_PCI_DEVICE_ID, info.device_id);
	EXPECT_LT(0, info.num_queues);
	EXPECT_GE(ACCEL_MAX_QUEUES, info.num_queues);
	EXPECT_LT(0, info.vram_size);
	EXPECT_EQ(ACCEL_HW_VERSION_MAJOR, info.hw_version >> 16);
	EXPECT_EQ(0, info.caps & ~INFO_CAPS);
	EXPECT_NE(0, info.caps & DRM_SIMACCEL_CAP_COPY);
	EXPECT_EQ(0, info.pad);
	EXPECT_EQ(0, info.pad2);
}

TEST_F(dev, info_refuses_nonzero_flags_and_padding)
{
	struct drm_simaccel_info info;

	info = (struct drm_simaccel_info){ .flags = 1 };
	EXPECT_EQ(-EINVAL, get_info(self->fd, &info));
	info = (struct drm_simaccel_info){ .flags = 1u << 31 };
	EXPECT_EQ(-EINVAL, get_info(self->fd, &info));
	info = (struct drm_simaccel_info){ .pad = 1 };
	EXPECT_EQ(-EINVAL, get_info(self->fd, &info));
	info = (struct drm_simaccel_info){ .pad2 = 1 };
	EXPECT_EQ(-EINVAL, get_info(self->fd, &info));
	/* and nothing was filled in */
	EXPECT_EQ(0, info.vendor_id);
}

/* A caller built when the struct ended after num_queues. */
struct info_v0 {
	__u32 flags, pad;
	__u32 vendor_id, device_id, subsystem_vendor_id, subsystem_id;
	__u32 revision, class_code, pci_domain, pci_bus, pci_devfn;
	__u32 num_queues;
};

TEST_F(dev, info_serves_a_shorter_struct_within_its_size)
{
	struct {
		struct info_v0 info;
		unsigned char guard[64];
	} buf;
	unsigned long nr = DRM_IOWR(DRM_COMMAND_BASE + DRM_SIMACCEL_GET_INFO,
				    struct info_v0);

	memset(&buf, 0xa5, sizeof(buf));
	buf.info.flags = 0;
	buf.info.pad = 0;
	ASSERT_EQ(0, ioctl(self->fd, nr, &buf.info));
	EXPECT_EQ(ACCEL_PCI_VENDOR_ID, buf.info.vendor_id);
	EXPECT_LT(0, buf.info.num_queues);
	for (size_t i = 0; i < sizeof(buf.guard); i++)
		ASSERT_EQ(0xa5, buf.guard[i]);
}

TEST_F(dev, unknown_driver_ioctls_are_refused)
{
	unsigned char arg[64] = { 0 };

	/* the numbers after the last one the driver has */
	for (unsigned int n = DRM_SIMACCEL_MEM_INFO + 1; n < 0x60; n++) {
		unsigned long nr = DRM_IOWR(DRM_COMMAND_BASE + n, arg);

		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, nr, arg)) TH_LOG("ioctl %#x", n);
		EXPECT_EQ(EINVAL, errno);
	}
}

/*
 * DRM core's GET_UNIQUE and GET_MAGIC read a DRM master that files of an
 * accel node never have (an oops on Linux 6.12): refused.
 */
TEST_F(dev, master_ioctls_are_refused)
{
	char unique[64];
	struct drm_unique u = { .unique_len = sizeof(unique), .unique = unique };
	struct drm_auth a = { 0 };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GET_UNIQUE, &u));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GET_MAGIC, &a));
	EXPECT_EQ(EACCES, errno);
}

TEST(unbind_while_open_then_rebind)
{
	struct drm_simaccel_info info = { 0 };
	char addr[64];
	int fd, fd2;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, get_info(fd, &info));

	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_EQ(-ENODEV, get_info(fd, &info));
	EXPECT_EQ(-1, open(NODE, O_RDWR | O_CLOEXEC));
	EXPECT_EQ(0, close(fd));

	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	fd2 = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2) TH_LOG("reopen after rebind: %s", strerror(errno));
	EXPECT_EQ(0, get_info(fd2, &info));
	EXPECT_EQ(ACCEL_PCI_VENDOR_ID, info.vendor_id);
	close(fd2);
}

#define HUGEPAGES_2MIB	"/sys/kernel/mm/hugepages/hugepages-2048kB/"
#define OVERCOMMIT_2MIB	HUGEPAGES_2MIB "nr_overcommit_hugepages"
#define COMPACT_LOCKED	"/proc/sys/vm/compact_unevictable_allowed"
#define SPLIT_THPS	"/sys/kernel/debug/split_huge_pages"

/*
 * Free blocks of 2 MiB or more, in 2 MiB, from /proc/buddyinfo; ZONE_DMA's
 * are left out: its reserve keeps them from the rings as from anyone.
 */
static long long free_2mib_blocks(void)
{
	char *text = read_text("/proc/buddyinfo", 4096), *line, *p, *zone;
	long long n = 0;

	if (!text)
		return -1;
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		/* "Node 0, zone DMA32 n0 n1 ... n10": order 9 and up */
		p = strstr(line, "zone");
		if (!p)
			continue;
		strtok_r(p, " ", &p);
		zone = strtok_r(NULL, " ", &p);
		if (!zone || !strcmp(zone, "DMA"))
			continue;
		for (int order = 0; order <= 10 && p && *p; order++) {
			long long count = strtoll(p, &p, 10);

			if (order >= 9)
				n += count << (order - 9);
		}
	}
	free(text);
	return n;
}

/* Whether the device at @addr's DMA goes through an IOMMU's translation. */
static bool dma_translated(const char *addr)
{
	char path[160], *type;
	bool translated;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group/type", addr);
	type = read_text(path, 64);
	/* "DMA" or "DMA-FQ"; "identity" passes addresses through */
	translated = type && !strncmp(type, "DMA", 3);
	free(type);
	return translated;
}

static int write_number(const char *path, long long value)
{
	char text[32];

	snprintf(text, sizeof(text), "%lld", value);
	return write_file(path, text);
}

/* What the test changes, to be put back. */
struct system_state {
	char addr[64];		/* the device, bound as NODE */
	long long compact;	/* COMPACT_LOCKED */
	long long overcommit;	/* OVERCOMMIT_2MIB */
};

static void put_back(const struct system_state *was)
{
	char path[160];

	write_number(COMPACT_LOCKED, was->compact);
	write_number(OVERCOMMIT_2MIB, was->overcommit);
	if (!access(NODE, F_OK))
		return;
	snprintf(path, sizeof(path), DRIVER_DIR "/%s", was->addr);
	if (!access(path, F_OK))
		write_file(DRIVER_DIR "/unbind", was->addr);
	bind_as(was->addr, NODE);
}

/*
 * A process of its own session that puts the system back (put_back())
 * once the caller's end of a pipe closes, however the caller ends: the
 * harness kills a test's process group when it times out. Its pid, the
 * caller's end in @end; it exits 0 if the device is bound as NODE again.
 */
static pid_t guard(const struct system_state *was, int *end)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid) {
		close(p[0]);
		*end = p[1];
		if (pid < 0)
			close(p[1]);
		return pid;
	}
	setsid();
	close(p[1]);
	while (read(p[0], &c, 1) < 0 && errno == EINTR)
		;
	put_back(was);
	_exit(access(NODE, F_OK) ? 1 : 0);
}

/* Memory fragmented: what holds it that way. */
struct fragments {
	char *kept;	/* one locked 4 KiB page of every 64 KiB of @len */
	size_t len;
	char **huge;	/* @nhuge surplus hugetlb pages of 2 MiB */
	size_t nhuge;
};

/*
 * Take every free block of 2 MiB the allocator has or can make by
 * compaction, as surplus hugetlb pages: the process's own, which go back
 * when it ends, however it ends. Raises OVERCOMMIT_2MIB.
 */
static void take_free_2mib_blocks(struct fragments *f)
{
	long long surplus = read_number(HUGEPAGES_2MIB "surplus_hugepages");
	size_t max = (size_t)meminfo_kib("MemFree") / 2048;
	void *page;

	f->huge = calloc(max + 1, sizeof(*f->huge));
	if (!f->huge || surplus < 0 || write_number(OVERCOMMIT_2MIB, surplus + (long long)max))
		return;
	while (f->nhuge < max &&
	       (page = mmap(NULL, 2 * MIB, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB |
			    MAP_POPULATE, -1, 0)) != MAP_FAILED)
		f->huge[f->nhuge++] = page;
}

static void unfragment_memory(struct fragments *f)
{
	for (size_t i = 0; i < f->nhuge; i++)
		munmap(f->huge[i], 2 * MIB);
	free(f->huge);
	if (f->kept)
		munmap(f->kept, f->len);
	*f = (struct fragments){ 0 };
}

/*
 * Leave the page allocator no free block of 2 MiB, and plenty of free
 * memory: @len bytes of transparent huge pages split (split_huge_pages,
 * this range's), one 4 KiB page of every 64 KiB kept, locked, which
 * compaction then leaves where it is (compact_unevictable_allowed=0, set
 * by the caller); the free blocks left elsewhere taken
 * (take_free_2mib_blocks()). Whether the kept pages are locked (a huge
 * page not split keeps them movable).
 */
static bool fragment_memory(struct fragments *f, size_t len)
{
	long long locked = meminfo_kib("Mlocked");
	char *mem = mmap(NULL, len + 2 * MIB, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *start, *end, range[96];

	*f = (struct fragments){ 0 };
	if (mem == MAP_FAILED)
		return false;
	start = (char *)(((uintptr_t)mem + 2 * MIB - 1) & ~(2 * MIB - 1));
	end = start + len;
	if (start > mem)
		munmap(mem, start - mem);
	munmap(end, mem + len + 2 * MIB - end);
	madvise(start, len, MADV_HUGEPAGE);
	for (size_t off = 0; off < len; off += 4096)
		start[off] = 1;
	/* split while the range is whole: the split stops at a hole */
	snprintf(range, sizeof(range), "%d,%p,%p", getpid(), (void *)start, (void *)end);
	write_file(SPLIT_THPS, range);
	for (size_t off = 0; off < len; off += 65536)
		munmap(start + off + 4096, 65536 - 4096);
	f->kept = start;
	f->len = len;
	for (size_t off = 0; off < len; off += 65536)
		mlock(start + off, 4096);
	take_free_2mib_blocks(f);
	return meminfo_kib("Mlocked") - locked >= (long long)(len / 65536 * 4) * 9 / 10;
}

/* What the kernel logged since @kmsg was opened (and positioned at its end). */
static char *kmsg_since(int kmsg)
{
	size_t cap = 1 << 20, len = 0;
	char *log = calloc(1, cap + 1);
	ssize_t n;

	/* one record per read; EAGAIN at the end, EPIPE for records lost */
	while (log && len < cap - 8192 &&
	       ((n = read(kmsg, log + len, cap - len)) > 0 || (n < 0 && errno == EPIPE)))
		len += n > 0 ? n : 0;
	return log;
}

FIXTURE(memory) {
};

FIXTURE_SETUP(memory)
{
}

FIXTURE_TEARDOWN(memory)
{
}

/*
 * Each queue's ring is 2 MiB contiguous on the bus (without an IOMMU's
 * translation). When no such block is free, a bind fails with ENOMEM, and
 * the kernel's log says what the driver could not allocate, without the
 * allocator's report of a failure (a stack dump, which a VM run counts as
 * a bug); with the memory back, the device binds. With an IOMMU the bind
 * succeeds. SIMACCEL_CAN_FRAGMENT=1 says the guest's memory can be
 * fragmented (make check's VMs): a bind not put to the test then fails the
 * test rather than skipping it.
 */
TEST_F_TIMEOUT(memory, a_bind_without_contiguous_memory_for_its_rings_fails_with_enomem, 120)
{
	bool must = getenv("SIMACCEL_CAN_FRAGMENT") != NULL;
	struct system_state was = {
		.compact = read_number(COMPACT_LOCKED),
		.overcommit = read_number(OVERCOMMIT_2MIB),
	};
	long long free_kib = meminfo_kib("MemFree"), blocks = -1;
	/* three quarters of free memory, at most 1 GiB (a VMA per 64 KiB) */
	size_t len = (size_t)(free_kib * 1024 * 3 / 4) & ~(2 * MIB - 1);
	int kmsg, end, status, unbound, bound = -ENODEV;
	bool iommu, fragmented = false, reported, said;
	struct fragments f = { 0 };
	pid_t guardian;
	char *log;

	ASSERT_EQ(0, pci_addr(was.addr, sizeof(was.addr)));
	iommu = dma_translated(was.addr);
	ASSERT_LT(0, free_kib);
	ASSERT_LE(0, was.compact);
	ASSERT_LE(0, was.overcommit);
	len = len < 1024 * MIB ? len : 1024 * MIB;
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, kmsg);
	lseek(kmsg, 0, SEEK_END);
	guardian = guard(&was, &end);
	if (guardian < 0)
		close(kmsg);
	ASSERT_LT(0, guardian);

	write_file(COMPACT_LOCKED, "0");
	unbound = write_file(DRIVER_DIR "/unbind", was.addr) ? -errno : 0;
	if (!unbound) {
		fragmented = fragment_memory(&f, len);
		blocks = free_2mib_blocks();
		free_kib = meminfo_kib("MemFree");
		bound = write_file(DRIVER_DIR "/bind", was.addr) ? -errno : 0;
		unfragment_memory(&f);
	}
	close(end);
	ASSERT_EQ(guardian, waitpid(guardian, &status, 0));
	log = kmsg_since(kmsg);
	close(kmsg);
	ASSERT_NE(NULL, log);
	reported = strstr(log, "page allocation failure") || strstr(log, "Call Trace:");
	said = strstr(log, "cannot allocate its 2 MiB ring");
	if (reported || (bound == -ENOMEM) != said)
		TH_LOG("the kernel's log:\n%s", log);
	free(log);
	TH_LOG("%lld blocks of 2 MiB free, %lld MiB in all, %s an IOMMU: the bind: %s",
	       blocks, free_kib / 1024, iommu ? "with" : "without", strerror(-bound));
	ASSERT_EQ(0, unbound);
	ASSERT_FALSE(reported);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("not bound again");
	ASSERT_EQ(was.compact, read_number(COMPACT_LOCKED));
	ASSERT_EQ(was.overcommit, read_number(OVERCOMMIT_2MIB));
	if (iommu)
		ASSERT_EQ(0, bound) TH_LOG("the rings need no contiguous memory");
	if (bound == -ENOMEM) {
		ASSERT_TRUE(said);
		return;
	}
	ASSERT_EQ(0, bound);
	ASSERT_FALSE(said) TH_LOG("bound without the ring it could not allocate");
	if (!fragmented || blocks != 0 || !iommu) {
		ASSERT_FALSE(must) TH_LOG("the bind was not put to the test");
		SKIP(return, "memory was not fragmented, or the bind found 2 MiB");
	}
}

struct slow_pin {
	int fd;
	void *mem;
	uint32_t queue;
	int userptr, submit;	/* their results */
};

static void *userptr_in_thread(void *arg)
{
	struct slow_pin *p = arg;
	struct drm_simaccel_bo_userptr u = {
		.user_addr = (uintptr_t)p->mem, .size = 4096,
	};

	p->userptr = ioctl(p->fd, DRM_IOCTL_SIMACCEL_BO_USERPTR, &u) ? -errno : 0;
	return NULL;
}

static void *submit_in_thread(void *arg)
{
	struct slow_pin *p = arg;

	p->submit = run_op(p->fd, p->queue, DRM_SIMACCEL_OP_FILL,
			   DRM_SIMACCEL_OP_DST_USER, (uintptr_t)p->mem + 4096, 0, 4096);
	return NULL;
}

/* Whether process @pid exits (successfully) within @limit seconds; reaped if so. */
static bool exits_within(pid_t pid, double limit)
{
	double end = seconds() + limit;
	int status;

	while (seconds() < end) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) && !WEXITSTATUS(status);
		usleep(10000);
	}
	return false;
}

/*
 * Pinning user memory faults it in, which takes as long as the memory's
 * owner likes (userfaultfd here; a FUSE file for an unprivileged user).
 * BO_USERPTR and SUBMIT pin before they enter the device, so root's unbind
 * does not wait for them; they then fail with ENODEV.
 */
TEST(unbind_does_not_wait_for_a_pin_that_faults_slowly)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_zeropage zero = { 0 };
	struct slow_pin p = { .userptr = 1, .submit = 1 };
	struct uffd_msg msg;
	struct pollfd pfd;
	pthread_t t1, t2;
	char addr[64];
	pid_t unbind;
	bool unbound;
	int uffd;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0)
		SKIP(return, "no userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	p.mem = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p.mem);
	reg.range.start = (uintptr_t)p.mem;
	reg.range.len = 8192;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));
	p.fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, p.fd);
	ASSERT_EQ(0, queue_create(p.fd, &p.queue));
	ASSERT_EQ(0, pthread_create(&t1, NULL, userptr_in_thread, &p));
	ASSERT_EQ(0, pthread_create(&t2, NULL, submit_in_thread, &p));
	pfd = (struct pollfd){ .fd = uffd, .events = POLLIN };
	ASSERT_EQ(1, poll(&pfd, 1, 5000));
	ASSERT_EQ((ssize_t)sizeof(msg), read(uffd, &msg, sizeof(msg)));
	usleep(200000);		/* the other thread faults too */
	unbind = fork();
	ASSERT_LE(0, unbind);
	if (!unbind)
		_exit(write_file(DRIVER_DIR "/unbind", addr) ? 1 : 0);
	unbound = exits_within(unbind, 5);
	/* let the faults through, whatever happened */
	zero.range = reg.range;
	ioctl(uffd, UFFDIO_ZEROPAGE, &zero);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	if (!unbound)
		ASSERT_TRUE(exits_within(unbind, 60));
	EXPECT_TRUE(unbound);
	EXPECT_EQ(-ENODEV, p.userptr);
	EXPECT_EQ(-ENODEV, p.submit);
	close(p.fd);
	close(uffd);
	munmap(p.mem, 8192);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
}

TEST(closed_after_unbind_and_rebind)
{
	struct drm_simaccel_info info = { 0 };
	char addr[64];
	int fd;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	/* the old file belongs to the device that went away */
	EXPECT_EQ(-ENODEV, get_info(fd, &info));
	EXPECT_EQ(0, close(fd));
	/* its minor went with its last file: bound again, it is accel0 */
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, get_info(fd, &info));
	close(fd);
}

/* ------------------------------------------------------------------ */
/* Buffers */

static uint64_t vram_size(int fd)
{
	struct drm_simaccel_info info = { 0 };

	return get_info(fd, &info) ? 0 : info.vram_size;
}

TEST_F(dev, bo_create_refuses_bad_arguments)
{
	struct drm_simaccel_bo_create bo;
	uint64_t vram = vram_size(self->fd);

	ASSERT_LT(0, vram);
	EXPECT_EQ(-EINVAL, bo_create_aligned(self->fd, 0, 0, DRM_SIMACCEL_BO_VRAM, &bo));
	EXPECT_EQ(-EINVAL, bo_create_aligned(self->fd, vram + 1, 0, DRM_SIMACCEL_BO_VRAM, &bo));
	EXPECT_EQ(-EINVAL, bo_create_aligned(self->fd, ~0ull, 0, DRM_SIMACCEL_BO_VRAM, &bo));
	EXPECT_EQ(-EINVAL, bo_create_aligned(self->fd, 4096, 3, DRM_SIMACCEL_BO_VRAM, &bo));
	EXPECT_EQ(-EINVAL, bo_create_aligned(self->fd, 4096, 1ull << 31, DRM_SIMACCEL_BO_VRAM, &bo));
	EXPECT_EQ(-EINVAL, bo_create_aligned(self->fd, 4096, 0, 0, &bo));
	EXPECT_EQ(-EINVAL, bo_create_aligned(self->fd, 4096, 0, DRM_SIMACCEL_BO_HOST + 1, &bo));
	EXPECT_EQ(-EINVAL, bo_create_aligned(self->fd, 4096, 0, 0xffffffff, &bo));
	bo = (struct drm_simaccel_bo_create){ .size = 4096, .kind = 1, .flags = 1 };
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SIMACCEL_BO_CREATE, &bo));
	EXPECT_EQ(EINVAL, errno);
	bo = (struct drm_simaccel_bo_create){ .size = 4096, .kind = 1, .pad = 1 };
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SIMACCEL_BO_CREATE, &bo));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, bo.handle);
}

TEST_F(dev, bo_ranges_are_distinct_aligned_and_inside_vram)
{
	static const uint64_t sizes[] = { 1, 255, 4096, 5000, 1 << 20 };
	static const uint64_t aligns[] = { 0, 256, 4096, 65536, 1 << 21 };
	struct drm_simaccel_bo_create bo[5];
	uint64_t vram = vram_size(self->fd);

	for (int i = 0; i < 5; i++) {
		uint64_t a = aligns[i] ? aligns[i] : DRM_SIMACCEL_BO_MIN_ALIGN;

		ASSERT_EQ(0, bo_create_aligned(self->fd, sizes[i], aligns[i],
				       DRM_SIMACCEL_BO_VRAM, &bo[i]));
		EXPECT_NE(0, bo[i].handle);
		EXPECT_EQ(0, bo[i].mmap_offset);
		EXPECT_LE(DRM_SIMACCEL_VRAM_BASE, bo[i].dev_addr);
		EXPECT_GE(DRM_SIMACCEL_VRAM_BASE + vram, bo[i].dev_addr + sizes[i]);
		EXPECT_EQ(0, (bo[i].dev_addr - DRM_SIMACCEL_VRAM_BASE) % a);
		for (int j = 0; j < i; j++) {
			EXPECT_NE(bo[j].handle, bo[i].handle);
			EXPECT_TRUE(bo[i].dev_addr >= bo[j].dev_addr + sizes[j] ||
				    bo[j].dev_addr >= bo[i].dev_addr + sizes[i]);
		}
	}
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(0, gem_close(self->fd, bo[i].handle));
	/* closed handles, and 0, are no handles */
	EXPECT_EQ(-EINVAL, gem_close(self->fd, bo[0].handle));
	EXPECT_EQ(-EINVAL, gem_close(self->fd, 0));
}

TEST_F(dev, vram_runs_out_with_enospc_and_comes_back)
{
	struct drm_simaccel_bo_create a, b;
	uint64_t vram = vram_size(self->fd);

	ASSERT_EQ(0, bo_create_aligned(self->fd, vram / 2, 0, DRM_SIMACCEL_BO_VRAM, &a));
	EXPECT_EQ(-ENOSPC, bo_create_aligned(self->fd, vram, 0, DRM_SIMACCEL_BO_VRAM, &b));
	ASSERT_EQ(0, gem_close(self->fd, a.handle));
	ASSERT_EQ(0, bo_create_aligned(self->fd, vram, 0, DRM_SIMACCEL_BO_VRAM, &b));
	EXPECT_EQ(0, gem_close(self->fd, b.handle));
}

static int mem_info(int fd, uint32_t flags, struct drm_simaccel_mem_info *m)
{
	*m = (struct drm_simaccel_mem_info){ .flags = flags };
	return ioctl(fd, DRM_IOCTL_SIMACCEL_MEM_INFO, m) ? -errno : 0;
}

/*
 * The administrator's limit on each user's VRAM (sysfs, root only): a user
 * at it gets EDQUOT in any of its files, another user does not, and a
 * buffer freed gives its share back. Users are effective uids here
 * (seteuid; the files are opened as root).
 */
TEST_F(dev, a_users_vram_is_bounded_by_the_administrators_limit)
{
	const char *limit = CLASS_DEVICE "/vram_limit_per_user";
	struct drm_simaccel_mem_info settled;
	struct drm_simaccel_bo_create a, b, c;
	int other = open(NODE, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, other);
	ASSERT_EQ(0, write_file(limit, "16777216"));
	ASSERT_EQ(0, seteuid(1000));
	EXPECT_EQ(0, bo_create(self->fd, 8 * MIB, DRM_SIMACCEL_BO_VRAM, &a));
	EXPECT_EQ(0, bo_create(other, 8 * MIB, DRM_SIMACCEL_BO_VRAM, &b));
	EXPECT_EQ(-EDQUOT, bo_create(self->fd, 4096, DRM_SIMACCEL_BO_VRAM, &c));
	EXPECT_EQ(-EDQUOT, bo_create(other, 4096, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &c));
	/* system memory is the memory cgroup's, not this limit's */
	EXPECT_EQ(0, bo_create(self->fd, 4096, DRM_SIMACCEL_BO_HOST, &c));
	EXPECT_EQ(0, gem_close(self->fd, c.handle));
	ASSERT_EQ(0, seteuid(0));
	ASSERT_EQ(0, seteuid(1001));
	EXPECT_EQ(0, bo_create(self->fd, 16 * MIB, DRM_SIMACCEL_BO_VRAM, &c));
	EXPECT_EQ(0, gem_close(self->fd, c.handle));
	ASSERT_EQ(0, seteuid(0));
	ASSERT_EQ(0, seteuid(1000));
	EXPECT_EQ(0, gem_close(other, b.handle));
	/* freed, once the device let go of it, the share is back */
	EXPECT_EQ(0, mem_info(other, DRM_SIMACCEL_MEM_INFO_SETTLE, &settled));
	EXPECT_EQ(0, bo_create(other, 8 * MIB, DRM_SIMACCEL_BO_VRAM, &b));
	EXPECT_EQ(0, gem_close(other, b.handle));
	ASSERT_EQ(0, seteuid(0));
	/* no limit: the user may take the rest */
	ASSERT_EQ(0, write_file(limit, "0"));
	ASSERT_EQ(0, seteuid(1000));
	EXPECT_EQ(0, bo_create(other, 32 * MIB, DRM_SIMACCEL_BO_VRAM, &b));
	ASSERT_EQ(0, seteuid(0));
	EXPECT_EQ(0, gem_close(self->fd, a.handle));
	close(other);
}

TEST_F(dev, vram_limit_refuses_what_is_not_a_number)
{
	const char *limit = CLASS_DEVICE "/vram_limit_per_user";

	EXPECT_EQ(-1, write_file(limit, "lots"));
	EXPECT_EQ(-1, write_file(limit, "-1"));
	EXPECT_EQ(0, write_file(limit, "0"));
}

TEST_F(dev, mem_info_refuses_bad_flags_and_padding)
{
	struct drm_simaccel_mem_info m = { .pad = 1 };

	EXPECT_EQ(-EINVAL, mem_info(self->fd, 2, &m));
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_SIMACCEL_MEM_INFO, &m));
	EXPECT_EQ(EINVAL, errno);
}

/*
 * MEM_INFO counts what sysfs counts; settled, a buffer freed before the
 * call (its clearing maybe under way) no longer counts.
 */
TEST_F(dev, mem_info_settled_no_longer_counts_freed_buffers)
{
	struct drm_simaccel_mem_info before, with, after;
	struct drm_simaccel_bo_create a;
	uint64_t vram = vram_size(self->fd);

	ASSERT_EQ(0, mem_info(self->fd, DRM_SIMACCEL_MEM_INFO_SETTLE, &before));
	EXPECT_EQ(vram, before.vram_total);
	EXPECT_EQ(device_total("vram_total"), (long long)before.vram_total);
	EXPECT_EQ(device_total("vram_used"), (long long)before.vram_used);
	EXPECT_EQ(device_total("host_pinned"), (long long)before.host_pinned);
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, bo_create(self->fd, vram / 2, DRM_SIMACCEL_BO_VRAM, &a));
		ASSERT_EQ(0, mem_info(self->fd, 0, &with));
		EXPECT_EQ(before.vram_used + vram / 2, with.vram_used);
		ASSERT_EQ(0, gem_close(self->fd, a.handle));
		ASSERT_EQ(0, mem_info(self->fd, DRM_SIMACCEL_MEM_INFO_SETTLE, &after));
		EXPECT_EQ(before.vram_used, after.vram_used);
	}
}

static void *map_bo(int fd, const struct drm_simaccel_bo_create *bo, size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    (off_t)bo->mmap_offset);
}

TEST_F(dev, mappable_bo_keeps_what_is_written)
{
	struct drm_simaccel_bo_create bo;
	uint32_t *p;

	ASSERT_EQ(0, bo_create_aligned(self->fd, 8192, 0, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &bo));
	ASSERT_NE(0, bo.mmap_offset);
	p = map_bo(self->fd, &bo, 8192);
	ASSERT_NE(MAP_FAILED, p);
	for (int i = 0; i < 2048; i++)
		p[i] = 0x5eed0000u + i;
	ASSERT_EQ(0, munmap(p, 8192));
	p = map_bo(self->fd, &bo, 8192);
	ASSERT_NE(MAP_FAILED, p);
	for (int i = 0; i < 2048; i++)
		ASSERT_EQ(0x5eed0000u + i, p[i]);
	munmap(p, 8192);
	/* the mapping holds the buffer past its handle */
	p = map_bo(self->fd, &bo, 8192);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, gem_close(self->fd, bo.handle));
	EXPECT_EQ(0x5eed0000u + 7, p[7]);
	munmap(p, 8192);
}

TEST_F(dev, mappings_stay_within_mappable_buffers)
{
	struct drm_simaccel_bo_create dev_only, bo;

	ASSERT_EQ(0, bo_create_aligned(self->fd, 4096, 0, DRM_SIMACCEL_BO_VRAM, &dev_only));
	ASSERT_EQ(0, bo_create_aligned(self->fd, 4096, 0, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &bo));
	/* no offset is device-only memory's; 0 is nobody's */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, 0));
	/* not past the buffer's pages, not from another offset into it */
	EXPECT_EQ(MAP_FAILED, map_bo(self->fd, &bo, 8192));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
				   (off_t)bo.mmap_offset + 4096));
	/* shared only: a private (copy-on-write) mapping of VRAM is refused */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE, self->fd, (off_t)bo.mmap_offset));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, gem_close(self->fd, dev_only.handle));
	EXPECT_EQ(0, gem_close(self->fd, bo.handle));
}

TEST_F(dev, handles_and_mappings_are_private_to_their_file)
{
	struct drm_simaccel_bo_create bo;
	int other = open(NODE, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, other);
	ASSERT_EQ(0, bo_create_aligned(self->fd, 4096, 0, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &bo));
	EXPECT_EQ(MAP_FAILED, map_bo(other, &bo, 4096));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-EINVAL, gem_close(other, bo.handle));
	EXPECT_EQ(0, gem_close(self->fd, bo.handle));
	close(other);
}

TEST_F(dev, vram_is_cleared_between_owners)
{
	const size_t len = 1 << 20;
	struct drm_simaccel_bo_create bo;
	uint64_t first;
	size_t i;
	uint8_t *p;
	int other;

	ASSERT_EQ(0, bo_create_aligned(self->fd, len, 0, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &bo));
	first = bo.dev_addr;
	p = map_bo(self->fd, &bo, len);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0xa5, len);
	munmap(p, len);
	ASSERT_EQ(0, gem_close(self->fd, bo.handle));

	other = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, bo_create_aligned(other, len, 0, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &bo));
	/* best fit in otherwise empty VRAM: the same range */
	EXPECT_EQ(first, bo.dev_addr);
	p = map_bo(other, &bo, len);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < len && !p[i]; i++)
		;
	EXPECT_EQ(len, i) TH_LOG("byte %zu holds %#x", i, p[i]);
	munmap(p, len);
	close(other);
}

/* ------------------------------------------------------------------ */
/* fdinfo */

TEST_F(dev, fdinfo_names_driver_device_and_client)
{
	char drv[64], pdev[64], addr[64], id1[32], id2[32];
	int other = open(NODE, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, other);
	ASSERT_TRUE(fdinfo(self->fd, "drm-driver", drv, sizeof(drv)));
	EXPECT_STREQ("simaccel", drv);
	ASSERT_TRUE(fdinfo(self->fd, "drm-pdev", pdev, sizeof(pdev)));
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	EXPECT_STREQ(addr, pdev);
	ASSERT_TRUE(fdinfo(self->fd, "drm-client-id", id1, sizeof(id1)));
	ASSERT_TRUE(fdinfo(other, "drm-client-id", id2, sizeof(id2)));
	EXPECT_STRNE(id1, id2);
	close(other);
}

TEST_F(dev, fdinfo_counts_each_files_vram)
{
	struct drm_simaccel_bo_create a, b;
	int other = open(NODE, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, other);
	EXPECT_EQ(0, fdinfo_bytes(self->fd, "drm-total-vram"));
	ASSERT_EQ(0, bo_create_aligned(self->fd, 1 << 20, 0, DRM_SIMACCEL_BO_VRAM, &a));
	ASSERT_EQ(0, bo_create_aligned(self->fd, 5000, 0, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &b));
	EXPECT_EQ((1 << 20) + 8192, fdinfo_bytes(self->fd, "drm-total-vram"));
	EXPECT_EQ((1 << 20) + 8192, fdinfo_bytes(self->fd, "drm-resident-vram"));
	EXPECT_EQ(0, fdinfo_bytes(self->fd, "drm-shared-vram"));
	/* nothing of it is the other file's */
	EXPECT_EQ(0, fdinfo_bytes(other, "drm-total-vram"));
	ASSERT_EQ(0, gem_close(self->fd, a.handle));
	EXPECT_EQ(8192, fdinfo_bytes(self->fd, "drm-total-vram"));
	ASSERT_EQ(0, gem_close(self->fd, b.handle));
	EXPECT_EQ(0, fdinfo_bytes(self->fd, "drm-total-vram"));
	close(other);
}

static sigjmp_buf bus_jump;

static void on_sigbus(int sig)
{
	siglongjmp(bus_jump, sig);
}

/* Whether reading *@p raises SIGBUS, in this process. */
static bool read_faults(volatile uint32_t *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	bool faulted = true;

	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(bus_jump, 1)) {
		(void)*p;
		faulted = false;
	}
	sigaction(SIGBUS, &old, NULL);
	return faulted;
}

TEST(unbind_revokes_mappings)
{
	struct drm_simaccel_bo_create bo;
	char addr[64];
	uint32_t *p;
	int fd;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bo_create_aligned(fd, 4096, 0, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &bo));
	p = map_bo(fd, &bo, 4096);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 42;	/* the page is mapped now */
	ASSERT_FALSE(read_faults(p));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_TRUE(read_faults(p));
	EXPECT_EQ(0, munmap(p, 4096));
	/* every ioctl of an unbound device fails; closing the file frees */
	EXPECT_EQ(-ENODEV, gem_close(fd, bo.handle));
	EXPECT_EQ(0, close(fd));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	close(fd);
}

/*
 * A VRAM buffer mapped through its dma-buf (not the DRM file) goes with the
 * device too: after an unbind the mapping faults, and after a rebind it
 * never shows the VRAM's next owner's bytes.
 */
TEST(unbind_revokes_mappings_made_through_a_dma_buf)
{
	struct drm_prime_handle prime = { .flags = DRM_CLOEXEC | DRM_RDWR };
	struct drm_simaccel_bo_create bo, next;
	char addr[64];
	uint32_t *p, *q;
	int fd;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bo_create_aligned(fd, 4096, 0, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &bo));
	prime.handle = bo.handle;
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime));
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, prime.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 42;	/* the page is mapped now */
	ASSERT_FALSE(read_faults(p));
	close(prime.fd);
	close(fd);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_TRUE(read_faults(p));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	/* the mapping holds the old binding's node: this one has another */
	fd = open_by_pci(addr);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bo_create_aligned(fd, 4096, 0, DRM_SIMACCEL_BO_VRAM_MAPPABLE, &next));
	q = map_bo(fd, &next, 4096);
	ASSERT_NE(MAP_FAILED, q);
	q[0] = 0x77777777;
	EXPECT_TRUE(read_faults(p));
	EXPECT_EQ(0, munmap(q, 4096));
	EXPECT_EQ(0, munmap(p, 4096));
	close(fd);
	/* bound again with nothing held: the device is accel0 again */
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
}

/*
 * A HOST buffer is system memory: a mapping of it keeps its bytes, readable
 * and writable, after the device is unbound, and goes when unmapped.
 */
TEST(a_host_mapping_outlives_the_device)
{
	struct drm_simaccel_bo_create bo;
	char addr[64];
	uint32_t *p;
	int fd;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bo_create(fd, 8192, DRM_SIMACCEL_BO_HOST, &bo));
	p = map_bo(fd, &bo, 8192);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 0x5a5a5a5a;
	close(fd);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_FALSE(read_faults(&p[2048]));
	EXPECT_EQ(0x5a5a5a5a, p[0]);
	p[2048] = 1;
	EXPECT_EQ(1, p[2048]);
	EXPECT_EQ(0, munmap(p, 8192));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("the mapping held the old binding's node");
	close(fd);
}

/*
 * A syncobj holding a job's fence across unbind and rebind: the unbind
 * fails the job, so the fence signals; the old file's ioctls say ENODEV,
 * closing it frees everything, and the new binding's node is the old one.
 */
TEST(a_syncobj_with_a_pending_job_across_unbind_and_rebind)
{
	struct drm_simaccel_op fill = { .op = DRM_SIMACCEL_OP_FILL, .size = 64 << 20 };
	struct drm_simaccel_sync out = { 0 };
	struct drm_simaccel_bo_create bo;
	uint32_t queue, other;
	char addr[64];
	int fd, i;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_create(fd, &queue));
	ASSERT_EQ(0, bo_create(fd, 64 << 20, DRM_SIMACCEL_BO_VRAM, &bo));
	ASSERT_EQ(0, syncobj_create(fd, &out.handle));
	fill.dst = bo.dev_addr;
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, submit(fd, queue, 0, &fill, 1, NULL, 0, &out));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_EQ(-ENODEV, syncobj_signalled(fd, out.handle));
	EXPECT_EQ(-ENODEV, syncobj_create(fd, &other));
	EXPECT_EQ(0, close(fd));
	/* the old binding's node goes once its jobs' work items let it go */
	ASSERT_EQ(0, bind_as(addr, NODE))
		TH_LOG("the syncobj held the old binding's node");
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	close(fd);
}

/*
 * A killed process's mapping of VRAM lets the buffer go: the device's VRAM
 * in use is back where it was. The fdinfo of a file whose device was
 * unbound still reads, without DRM's keys (DRM core prints them only
 * inside drm_dev_enter()).
 */
TEST(fdinfo_and_mappings_of_an_unbound_or_killed_user_go_cleanly)
{
	struct drm_simaccel_mem_info mem = { .flags = DRM_SIMACCEL_MEM_INFO_SETTLE };
	struct drm_simaccel_bo_create bo;
	char addr[64], val[64];
	int fd, ready[2], status;
	uint64_t before;
	pid_t child;
	char c;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_SIMACCEL_MEM_INFO, &mem));
	before = mem.vram_used;
	ASSERT_EQ(0, pipe(ready));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		int cfd = open(NODE, O_RDWR | O_CLOEXEC);
		uint32_t *p;

		if (cfd < 0 || bo_create_aligned(cfd, 1 << 20, 0,
						 DRM_SIMACCEL_BO_VRAM_MAPPABLE, &bo))
			_exit(2);
		p = map_bo(cfd, &bo, 1 << 20);
		if (p == MAP_FAILED)
			_exit(3);
		close(cfd);	/* the mapping alone holds the buffer */
		p[0] = 1;
		if (write(ready[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(5);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_SIMACCEL_MEM_INFO, &mem));
	EXPECT_EQ(before, mem.vram_used);
	ASSERT_EQ(0, bo_create(fd, 4096, DRM_SIMACCEL_BO_VRAM, &bo));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_TRUE(fdinfo(fd, "flags", val, sizeof(val)));
	EXPECT_FALSE(fdinfo(fd, "drm-driver", val, sizeof(val)));
	EXPECT_EQ(0, close(fd));
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
}

/*
 * Unbind and bind the device at @addr again while files of the old binding
 * may be open: the new binding's node then differs, open_by_pci() finds it.
 */
static int rebind(const char *addr)
{
	return write_file(DRIVER_DIR "/unbind", addr) ?:
	       write_file(DRIVER_DIR "/bind", addr);
}

/*
 * The node of the device bound again is accel0 once no file of an older
 * binding holds that minor: whatever a closed file had is gone with it.
 */
static bool rebound_as_accel0(const char *addr)
{
	int fd;

	if (rebind(addr))
		return false;
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* KiB of shmem that the rest of the system may take or free meanwhile */
#define SHMEM_NOISE	1024

/* Wait up to 2 s for /proc/meminfo's Shmem to be at most @kib. */
static long long shmem_down_to(long long kib)
{
	long long v;

	for (int i = 0; (v = meminfo_kib("Shmem")) > kib && i < 100; i++)
		usleep(20000);
	return v;
}

/*
 * A HOST buffer of a file opened before an unbind, across the rebind: the
 * file keeps the memory (not its DMA mapping) while it is open, every
 * ioctl and mmap() of it fails with ENODEV, the new binding counts
 * nothing of it and works, and closing the old file frees the memory.
 */
TEST(a_host_handle_across_unbind_and_rebind)
{
	const size_t len = 32 << 20;
	struct drm_prime_handle prime = { .flags = DRM_CLOEXEC | DRM_RDWR };
	struct drm_simaccel_bo_create bo, other;
	struct drm_simaccel_bo_info info = { 0 };
	long long shmem0;
	char addr[64];
	uint32_t queue;
	int fd, fd2;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	shmem0 = meminfo_kib("Shmem");
	ASSERT_LE(0, shmem0);
	ASSERT_EQ(0, bo_create(fd, len, DRM_SIMACCEL_BO_HOST, &bo));
	/* shmem pages, allocated and pinned at creation */
	EXPECT_LE(shmem0 + (long long)(len >> 10) - SHMEM_NOISE, meminfo_kib("Shmem"));
	ASSERT_EQ(0, rebind(addr));
	fd2 = open_by_pci(addr);
	ASSERT_LE(0, fd2);
	/* the old file keeps the memory while it is open */
	EXPECT_LE(shmem0 + (long long)(len >> 10) - SHMEM_NOISE, meminfo_kib("Shmem"));
	EXPECT_EQ(-ENODEV, gem_close(fd, bo.handle));
	info.handle = bo.handle;
	EXPECT_EQ(-1, ioctl(fd, DRM_IOCTL_SIMACCEL_BO_INFO, &info));
	EXPECT_EQ(ENODEV, errno);
	prime.handle = bo.handle;
	EXPECT_EQ(-1, ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime));
	EXPECT_EQ(ENODEV, errno);
	EXPECT_EQ(MAP_FAILED, map_bo(fd, &bo, len));
	EXPECT_EQ(ENODEV, errno);
	EXPECT_EQ(-ENODEV, bo_create(fd, 4096, DRM_SIMACCEL_BO_HOST, &other));
	/* the new binding has nothing of the old one's, and works */
	EXPECT_EQ(0, device_total_of(addr, "host_pinned"));
	ASSERT_EQ(0, queue_create(fd2, &queue));
	ASSERT_EQ(0, bo_create(fd2, 4096, DRM_SIMACCEL_BO_HOST, &other));
	EXPECT_EQ(0, run_op(fd2, queue, DRM_SIMACCEL_OP_FILL, 0, other.dev_addr, 7, 4096));
	EXPECT_EQ(0, close(fd));
	EXPECT_GT(shmem0 + SHMEM_NOISE, shmem_down_to(shmem0 + SHMEM_NOISE))
		TH_LOG("the old file's buffer outlived it");
	close(fd2);
	EXPECT_TRUE(rebound_as_accel0(addr));
}

/*
 * A USERPTR buffer of a file opened before an unbind, across the rebind:
 * the file keeps the pin while it is open, and with it its user's charge
 * against RLIMIT_MEMLOCK (the pins of one user count together, whichever
 * file and binding holds them); every ioctl of the old file fails with
 * ENODEV; closing it lets go of the pages and gives the charge back.
 */
TEST(a_userptr_handle_across_unbind_and_rebind)
{
	const size_t len = 4 << 20;
	uint8_t *buf = aligned_alloc(4096, len);
	struct drm_simaccel_bo_userptr u;
	uint32_t handle = 0, again;
	pid_t nobody;
	char addr[64];
	int fd, fd2;

	ASSERT_NE(NULL, buf);
	memset(buf, 1, len);
	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	nobody = nobody_lives_on();
	ASSERT_LT(0, nobody);
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pin_as_nobody(fd, buf, len, len + len / 2, &handle));
	ASSERT_NE(0, handle);
	ASSERT_EQ(0, rebind(addr));
	fd2 = open_by_pci(addr);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-ENODEV, gem_close(fd, handle));
	u = (struct drm_simaccel_bo_userptr){ .user_addr = (uintptr_t)buf, .size = 4096 };
	EXPECT_EQ(-1, ioctl(fd, DRM_IOCTL_SIMACCEL_BO_USERPTR, &u));
	EXPECT_EQ(ENODEV, errno);
	/* the old file's pin still counts against the user's limit */
	EXPECT_EQ(-ENOMEM, pin_as_nobody(fd2, buf, len, len + len / 2, &again));
	EXPECT_EQ(0, close(fd));
	/* closed, it gave its charge back */
	EXPECT_EQ(0, pin_as_nobody(fd2, buf, len, len + len / 2, &again));
	EXPECT_EQ((long long)len, device_total_of(addr, "host_pinned"));
	close(fd2);
	kill_child(nobody);
	EXPECT_TRUE(rebound_as_accel0(addr));
	free(buf);
}

/*
 * fdinfo of a file opened before an unbind, across the rebind: it reads,
 * without DRM's keys (the device it was opened on is gone), closes
 * cleanly, and a file of the new binding has keys of its own: the same
 * PCI function, a client id of its own, none of the old file's memory.
 */
TEST(fdinfo_of_a_file_across_unbind_and_rebind)
{
	char addr[64], val[64], old_id[32], new_id[32];
	struct drm_simaccel_bo_create bo;
	int fd, fd2;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bo_create(fd, 1 << 20, DRM_SIMACCEL_BO_VRAM, &bo));
	ASSERT_TRUE(fdinfo(fd, "drm-client-id", old_id, sizeof(old_id)));
	EXPECT_EQ(1 << 20, fdinfo_bytes(fd, "drm-total-vram"));
	ASSERT_EQ(0, rebind(addr));
	fd2 = open_by_pci(addr);
	ASSERT_LE(0, fd2);
	for (int i = 0; i < 2; i++) {
		EXPECT_TRUE(fdinfo(fd, "flags", val, sizeof(val)));
		EXPECT_FALSE(fdinfo(fd, "drm-driver", val, sizeof(val)));
		EXPECT_FALSE(fdinfo(fd, "drm-client-id", val, sizeof(val)));
		EXPECT_EQ(~0ull, fdinfo_bytes(fd, "drm-total-vram"));
		ASSERT_TRUE(fdinfo(fd2, "drm-driver", val, sizeof(val)));
		EXPECT_STREQ("simaccel", val);
		ASSERT_TRUE(fdinfo(fd2, "drm-pdev", val, sizeof(val)));
		EXPECT_STREQ(addr, val);
		ASSERT_TRUE(fdinfo(fd2, "drm-client-id", new_id, sizeof(new_id)));
		EXPECT_STRNE(old_id, new_id);
		EXPECT_EQ(i ? 8192 : 0, fdinfo_bytes(fd2, "drm-total-vram"));
		/* the new file's buffer is its own */
		if (!i)
			ASSERT_EQ(0, bo_create(fd2, 5000, DRM_SIMACCEL_BO_VRAM, &bo));
	}
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(8192, fdinfo_bytes(fd2, "drm-total-vram"));
	close(fd2);
	EXPECT_TRUE(rebound_as_accel0(addr));
}

/*
 * A killed process's mapping of a HOST buffer (its only holder: the file
 * and handle closed) lets the buffer go: the pinned system memory of the
 * device and the shmem pages come back.
 */
TEST(a_killed_users_host_mapping_lets_the_buffer_go)
{
	const size_t len = 16 << 20;
	int ready[2], status;
	long long pinned0, shmem0;
	char addr[64], c;
	pid_t child;

	ASSERT_EQ(0, pci_addr(addr, sizeof(addr)));
	pinned0 = device_total("host_pinned");
	shmem0 = meminfo_kib("Shmem");
	ASSERT_LE(0, pinned0);
	ASSERT_LE(0, shmem0);
	ASSERT_EQ(0, pipe(ready));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		struct drm_simaccel_bo_create bo;
		int cfd = open(NODE, O_RDWR | O_CLOEXEC);
		uint8_t *p;

		if (cfd < 0 || bo_create(cfd, len, DRM_SIMACCEL_BO_HOST, &bo))
			_exit(2);
		p = map_bo(cfd, &bo, len);
		if (p == MAP_FAILED || gem_close(cfd, bo.handle))
			_exit(3);
		close(cfd);	/* the mapping alone holds the buffer */
		memset(p, 0x5a, len);
		if (write(ready[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(5);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	EXPECT_EQ(pinned0 + (long long)len, device_total("host_pinned"));
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(pinned0, wait_device_total_of(addr, "host_pinned", pinned0, 2.0));
	EXPECT_GT(shmem0 + SHMEM_NOISE, shmem_down_to(shmem0 + SHMEM_NOISE))
		TH_LOG("the killed user's buffer outlived its mapping");
	close(ready[0]);
	close(ready[1]);
}

TEST_HARNESS_MAIN
