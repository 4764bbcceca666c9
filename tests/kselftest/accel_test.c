// SPDX-License-Identifier: GPL-2.0
/*
 * Conformance tests for accel.ko, run as root inside the VM.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "accel_util.h"
#include "../../uapi/accel.h"
#include "../../include/accel_hw.h"

#define PCI_DEVICES	"/sys/bus/pci/devices"
#define DRIVER_DIR	"/sys/bus/pci/drivers/accel"

static unsigned long long read_sysfs_num(const char *dir, const char *name)
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

/* The PCI address of /dev/accelN, from the misc device's parent link. */
static int accel_pci_addr(int index, char *addr, size_t len)
{
	char link[256], target[512];
	ssize_t n;

	snprintf(link, sizeof(link), "/sys/class/misc/accel%d/device", index);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -1;
	target[n] = 0;
	snprintf(addr, len, "%s", strrchr(target, '/') + 1);
	return 0;
}

static int count_pci_accels(void)
{
	DIR *d = opendir(PCI_DEVICES);
	struct dirent *e;
	char dir[512];
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), PCI_DEVICES "/%s", e->d_name);
		if (read_sysfs_num(dir, "vendor") == ACCEL_PCI_VENDOR_ID &&
		    read_sysfs_num(dir, "device") == ACCEL_PCI_DEVICE_ID)
			n++;
	}
	closedir(d);
	return n;
}

static int count_nodes(void)
{
	glob_t g;
	int n;

	if (glob("/dev/accel*", 0, NULL, &g))
		return 0;
	n = g.gl_pathc;
	globfree(&g);
	return n;
}


static int get_info(int fd, struct accel_info *info)
{
	memset(info, 0, sizeof(*info));
	return ioctl(fd, ACCEL_IOCTL_GET_INFO, info);
}

FIXTURE(accel) {
	int fd;
};

FIXTURE_SETUP(accel)
{
	self->fd = open("/dev/accel0", O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0) TH_LOG("open /dev/accel0: %s", strerror(errno));
}

FIXTURE_TEARDOWN(accel)
{
	close(self->fd);
}

TEST(every_pci_device_has_a_node)
{
	int n = count_pci_accels(), i;

	ASSERT_GT(n, 0);
	EXPECT_EQ(n, count_nodes());
	for (i = 0; i < n; i++) {
		char path[32];
		int fd;

		snprintf(path, sizeof(path), "/dev/accel%d", i);
		fd = open(path, O_RDWR);
		EXPECT_GE(fd, 0) TH_LOG("open %s: %s", path, strerror(errno));
		close(fd);
	}
}

TEST_F(accel, get_info_matches_sysfs)
{
	struct accel_info info;
	char addr[64], dir[256], expect[64];

	ASSERT_EQ(0, get_info(self->fd, &info));
	ASSERT_EQ(0, accel_pci_addr(0, addr, sizeof(addr)));
	snprintf(dir, sizeof(dir), PCI_DEVICES "/%s", addr);

	EXPECT_EQ(read_sysfs_num(dir, "vendor"), info.vendor_id);
	EXPECT_EQ(read_sysfs_num(dir, "device"), info.device_id);
	EXPECT_EQ(read_sysfs_num(dir, "subsystem_vendor"), info.subsystem_vendor_id);
	EXPECT_EQ(read_sysfs_num(dir, "subsystem_device"), info.subsystem_id);
	EXPECT_EQ(read_sysfs_num(dir, "revision"), info.revision);
	EXPECT_EQ(read_sysfs_num(dir, "class"), info.class_code);
	EXPECT_EQ(ACCEL_PCI_CLASS << 8, info.class_code);
	snprintf(expect, sizeof(expect), "%04x:%02x:%02x.%x", info.pci_domain,
		 info.pci_bus, info.pci_devfn >> 3, info.pci_devfn & 7);
	EXPECT_STREQ(addr, expect);

	EXPECT_EQ(read_sysfs_num("/sys/class/misc/accel0", "vram_size"),
		  info.vram_size);
	EXPECT_EQ(read_sysfs_num("/sys/class/misc/accel0", "num_queues"),
		  info.num_queues);
	EXPECT_EQ(read_sysfs_num("/sys/class/misc/accel0", "caps"), info.caps);
	EXPECT_NE(0, info.caps & ACCEL_INFO_CAP_COPY);
	EXPECT_EQ(ACCEL_HW_VERSION_MAJOR << 16 | ACCEL_HW_VERSION_MINOR,
		  info.hw_version);
	EXPECT_EQ(0x000100, info.driver_version);
	EXPECT_EQ(0, info.index);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(0, info.pad);
}

TEST_F(accel, vram_size_matches_bar)
{
	struct accel_info info;
	char addr[64], path[256];
	unsigned long long start, end, flags;
	FILE *f;
	int bar;

	ASSERT_EQ(0, get_info(self->fd, &info));
	ASSERT_EQ(0, accel_pci_addr(0, addr, sizeof(addr)));
	snprintf(path, sizeof(path), PCI_DEVICES "/%s/resource", addr);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	for (bar = 0; bar <= ACCEL_BAR_VRAM; bar++)
		ASSERT_EQ(3, fscanf(f, "%llx %llx %llx", &start, &end, &flags));
	fclose(f);
	EXPECT_EQ(info.vram_size, end - start + 1);
	EXPECT_NE(0, flags & 0x2000);	/* IORESOURCE_PREFETCH */
}

TEST_F(accel, unknown_ioctls_are_enotty)
{
	struct accel_info info = { 0 };

	EXPECT_EQ(-1, ioctl(self->fd, _IO(ACCEL_IOCTL_TYPE, 0x7f)));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(ACCEL_IOCTL_TYPE, 0x7e,
					    struct accel_info), &info));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR('B', 0x00, struct accel_info), &info));
	EXPECT_EQ(ENOTTY, errno);
	/* the right number with the wrong direction */
	EXPECT_EQ(-1, ioctl(self->fd, _IOR(ACCEL_IOCTL_TYPE, 0x00,
					   struct accel_info), &info));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, TCGETS, &info));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(accel, get_info_bad_pointer_is_efault)
{
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_GET_INFO, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_GET_INFO, (void *)16));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(accel, get_info_flags_and_pad_must_be_zero)
{
	struct accel_info info = { .flags = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_GET_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	memset(&info, 0, sizeof(info));
	info.pad = 0x80000000;
	EXPECT_EQ(-1, ioctl(self->fd, ACCEL_IOCTL_GET_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	/* nothing was written back on failure */
	EXPECT_EQ(0, info.vendor_id);
}

TEST_F(accel, get_info_struct_too_small_is_einval)
{
	char small[16] = { 0 };

	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(ACCEL_IOCTL_TYPE, 0x00, small), small));
	EXPECT_EQ(EINVAL, errno);
}

/* A caller built against a future, longer struct keeps working. */
TEST_F(accel, get_info_newer_struct)
{
	struct {
		struct accel_info info;
		__u64 future[2];
	} big;

	memset(&big, 0, sizeof(big));
	ASSERT_EQ(0, ioctl(self->fd, _IOWR(ACCEL_IOCTL_TYPE, 0x00, big), &big));
	EXPECT_EQ(ACCEL_PCI_VENDOR_ID, big.info.vendor_id);
	EXPECT_EQ(0, big.future[0]);
	EXPECT_EQ(0, big.future[1]);

	/* but not if it asks for something this driver does not know */
	memset(&big, 0, sizeof(big));
	big.future[1] = 5;
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(ACCEL_IOCTL_TYPE, 0x00, big), &big));
	EXPECT_EQ(E2BIG, errno);
}

TEST(several_devices)
{
	int n = count_nodes(), i, j;
	struct accel_info info[8];

	ASSERT_GT(n, 0);
	if (n < 2)
		SKIP(return, "needs two devices, found %d", n);
	ASSERT_LE(n, 8);
	for (i = 0; i < n; i++) {
		char path[32];
		int fd;

		snprintf(path, sizeof(path), "/dev/accel%d", i);
		fd = open(path, O_RDWR);
		ASSERT_GE(fd, 0);
		ASSERT_EQ(0, get_info(fd, &info[i]));
		close(fd);
		EXPECT_EQ(i, info[i].index);
		for (j = 0; j < i; j++)
			EXPECT_NE(info[i].pci_bus, info[j].pci_bus);
	}
}

/* Unbinding with a file open: the file fails cleanly, rebinding works. */
TEST(unbind_rebind_with_open_file)
{
	struct accel_info info;
	char addr[64];
	int fd, i;

	ASSERT_EQ(0, accel_pci_addr(0, addr, sizeof(addr)));
	fd = open("/dev/accel0", O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	EXPECT_EQ(-1, access("/dev/accel0", F_OK));
	EXPECT_EQ(-1, get_info(fd, &info));
	EXPECT_EQ(ENODEV, errno);
	/* rebinding while the old file is still open gets a new node */
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	EXPECT_EQ(count_pci_accels(), count_nodes());
	EXPECT_EQ(-1, get_info(fd, &info));
	EXPECT_EQ(0, close(fd));

	/* a few quick cycles leave the device usable at the same address */
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
		ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	}
	EXPECT_EQ(count_pci_accels(), count_nodes());
	for (i = 0; i < count_nodes(); i++) {
		char path[32], a[64];

		snprintf(path, sizeof(path), "/dev/accel%d", i);
		if (accel_pci_addr(i, a, sizeof(a)) || strcmp(a, addr))
			continue;
		fd = open(path, O_RDWR);
		ASSERT_GE(fd, 0);
		EXPECT_EQ(0, get_info(fd, &info));
		close(fd);
	}
}

static bool booted_with(const char *param)
{
	char cmdline[1024] = "";
	FILE *f = fopen("/proc/cmdline", "r");

	if (f) {
		if (!fgets(cmdline, sizeof(cmdline), f))
			cmdline[0] = 0;
		fclose(f);
	}
	return strstr(cmdline, param);
}

/* With intel_iommu=on, every accel device is translated by the vIOMMU. */
TEST(iommu_translates_when_enabled)
{
	char link[128], target[256];
	ssize_t n;
	int i;

	if (!booted_with("intel_iommu=on"))
		SKIP(return, "booted without intel_iommu=on");
	for (i = 0; i < count_nodes(); i++) {
		snprintf(link, sizeof(link),
			 "/sys/class/misc/accel%d/device/iommu_group/type", i);
		FILE *f = fopen(link, "r");

		ASSERT_NE(NULL, f) TH_LOG("accel%d has no IOMMU group", i);
		n = fread(target, 1, sizeof(target) - 1, f);
		fclose(f);
		target[n > 0 ? n : 0] = 0;
		EXPECT_EQ(0, strncmp(target, "DMA", 3)) TH_LOG("domain type %s", target);
	}
}

/* Memory mapped before an unbind stays usable; closing frees it. */
TEST(unbind_with_mapped_memory)
{
	struct accel_alloc host = { .size = 8192, .kind = ACCEL_MEM_HOST };
	struct accel_alloc vram = { .size = 4096, .kind = ACCEL_MEM_DEVICE };
	struct accel_alloc vis = { .size = 4096, .kind = ACCEL_MEM_HOST_VISIBLE };
	uint8_t *map, *vis_map, *untouched;
	char addr[64];
	int fd, status;
	pid_t pid;

	ASSERT_EQ(0, accel_pci_addr(0, addr, sizeof(addr)));
	fd = open("/dev/accel0", O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, ioctl(fd, ACCEL_IOCTL_ALLOC, &host));
	ASSERT_EQ(0, ioctl(fd, ACCEL_IOCTL_ALLOC, &vram));
	ASSERT_EQ(0, ioctl(fd, ACCEL_IOCTL_ALLOC, &vis));
	map = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   host.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	vis_map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       vis.mmap_offset);
	ASSERT_NE(MAP_FAILED, vis_map);
	/* VRAM is mapped on first touch: one mapping is never touched */
	untouched = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, vis.mmap_offset);
	ASSERT_NE(MAP_FAILED, untouched);
	vis_map[0] = 1;
	map[100] = 7;
	ASSERT_EQ(0, write_file(DRIVER_DIR "/unbind", addr));
	/* pinned host memory stays */
	EXPECT_EQ(7, map[100]);
	map[8191] = 9;
	/* VRAM may belong to someone else after a rebind: the mapping is revoked */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		vis_map[0] = 2;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0)
		_exit(untouched[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
	munmap(untouched, 4096);
	munmap(vis_map, 4096);
	EXPECT_EQ(-1, ioctl(fd, ACCEL_IOCTL_ALLOC, &vram));
	EXPECT_EQ(ENODEV, errno);
	munmap(map, 8192);
	close(fd);
	ASSERT_EQ(0, write_file(DRIVER_DIR "/bind", addr));
	EXPECT_EQ(count_pci_accels(), count_nodes());
}

TEST(rmmod_refused_while_open)
{
	int fd = open("/dev/accel0", O_RDWR);

	ASSERT_GE(fd, 0);
	EXPECT_NE(0, system("rmmod accel 2>/dev/null"));
	EXPECT_EQ(0, access("/dev/accel0", F_OK));
	close(fd);
}

TEST_HARNESS_MAIN
