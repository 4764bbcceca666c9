// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel.ko: power management, as root in the VM (docs/uapi.md, "Power
 * management"):
 * - an idle device reaches runtime "suspended" and D3hot after the
 *   autosuspend delay, though a file with a queue, a buffer and a mapping
 *   of it is open; a SUBMIT resumes it and its job completes;
 * - a mapped VRAM buffer keeps its contents through a suspend, and a read
 *   through the mapping resumes the device and sees them;
 * - the device does not suspend while a job is on a ring (a stalled
 *   queue), and suspends once the job timed out;
 * - another device's job that reaches this device's VRAM (PRIME peer to
 *   peer) resumes it: the copy lands; a mapping of the dma-buf is zapped
 *   at suspend like the node's, and a read through it resumes the device;
 * - system suspend to RAM (S3, woken by the RTC alarm): a job stalled on
 *   the hardware fails with ECANCELED, buffers keep their contents, and
 *   a job submitted after the resume completes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sync_file.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "simaccel_util.h"

/* accel0's PCI attribute @name (power/runtime_status, power_state...). */
static char *pci_attr(const char *name)
{
	char addr[64], path[300];

	if (pci_addr(addr, sizeof(addr)))
		return NULL;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", addr, name);
	return read_text(path, 64);
}

static bool attr_is(const char *name, const char *want)
{
	char *text = pci_attr(name);
	bool is = text && !strncmp(text, want, strlen(want));

	free(text);
	return is;
}

static int set_attr(const char *name, const char *text)
{
	char addr[64], path[300];

	if (pci_addr(addr, sizeof(addr)))
		return -1;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", addr, name);
	return write_file(path, text);
}

/* Wait up to @s seconds for runtime_status to read @want. */
static bool wait_runtime(const char *want, double s)
{
	double end = seconds() + s;

	while (!attr_is("power/runtime_status", want)) {
		if (seconds() > end)
			return false;
		usleep(20000);
	}
	return true;
}

/* The autosuspend delay is 1 s: 3 s is plenty for an idle device. */
static bool wait_suspended(void)
{
	return wait_runtime("suspended", 3) && attr_is("power_state", "D3hot");
}

static void *map_bo(int fd, const struct drm_simaccel_bo_create *bo)
{
	return mmap(NULL, bo->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    bo->mmap_offset);
}

/* The status of a one-fence sync_file: 1 signalled, 0 pending, -errno. */
static int sync_file_status(int sf)
{
	struct sync_fence_info info = { 0 };
	struct sync_file_info fi = {
		.num_fences = 1, .sync_fence_info = (uintptr_t)&info,
	};

	return ioctl(sf, SYNC_IOC_FILE_INFO, &fi) ? -errno : fi.status;
}

FIXTURE(dev) {
	int fd;
	uint32_t queue;
	struct drm_simaccel_bo_create bo;
	uint8_t *map;
};

/*
 * Every bound device's autosuspend delay: the VM runner loads the driver
 * with a long one (scripts/vm-run.sh), these tests need the default.
 */
static void set_autosuspend_ms(const char *ms)
{
	struct dirent *e;
	DIR *d = opendir(DRIVER_DIR);
	char path[300];

	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "0000:", 5))
			continue;
		snprintf(path, sizeof(path),
			 DRIVER_DIR "/%.63s/power/autosuspend_delay_ms", e->d_name);
		write_file(path, ms);
	}
	if (d)
		closedir(d);
}

FIXTURE_SETUP(dev)
{
	set_autosuspend_ms("1000");
	self->fd = open(NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, queue_create(self->fd, &self->queue));
	ASSERT_EQ(0, bo_create(self->fd, 2 << 20, DRM_SIMACCEL_BO_VRAM_MAPPABLE,
			       &self->bo));
	self->map = map_bo(self->fd, &self->bo);
	ASSERT_NE(MAP_FAILED, self->map);
	/* a page in the mapping, and a fill by the device */
	memset(self->map, 0x5a, 4096);
	ASSERT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
			    self->bo.dev_addr + 4096, 0x33, 4096));
}

FIXTURE_TEARDOWN(dev)
{
	munmap(self->map, self->bo.size);
	close(self->fd);
	set_autosuspend_ms("60000");
}

/* The device's work and the CPU's writes, checked through the mapping. */
static bool contents_kept(const uint8_t *map)
{
	size_t i;

	for (i = 0; i < 4096; i++)
		if (map[i] != 0x5a || map[4096 + i] != 0x33)
			return false;
	return true;
}

TEST_F(dev, an_idle_file_does_not_keep_the_device_awake)
{
	ASSERT_TRUE(wait_suspended());
	/* the open file, its queue and its mapped buffer held it in D0 for none of it */
	ASSERT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
			    self->bo.dev_addr + 8192, 0x77, 4096));
	/* resumed for the job, and not suspended again before the delay */
	EXPECT_TRUE(attr_is("power/runtime_status", "active"));
	EXPECT_TRUE(attr_is("power_state", "D0"));
	EXPECT_EQ(0x77, self->map[8192]);
	EXPECT_EQ(0x77, self->map[8192 + 4095]);
	EXPECT_TRUE(wait_suspended());
}

TEST_F(dev, a_mapped_buffer_survives_a_suspend_and_a_read_resumes_the_device)
{
	ASSERT_TRUE(wait_suspended());
	/* the read faults (the suspend zapped the mapping) and resumes it */
	EXPECT_TRUE(contents_kept(self->map));
	EXPECT_TRUE(attr_is("power/runtime_status", "active"));
	EXPECT_TRUE(attr_is("power_state", "D0"));
	/* a write too, after the next suspend, and the device sees it */
	ASSERT_TRUE(wait_suspended());
	memset(self->map + 8192, 0x19, 4096);
	ASSERT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_COPY, 0,
			    self->bo.dev_addr + 12288, self->bo.dev_addr + 8192,
			    4096));
	EXPECT_EQ(0x19, self->map[12288]);
	EXPECT_EQ(0x19, self->map[12288 + 4095]);
	EXPECT_TRUE(contents_kept(self->map));
}

TEST_F(dev, the_device_stays_in_d0_while_a_job_is_on_a_ring)
{
	struct drm_simaccel_op o = {
		.op = DRM_SIMACCEL_OP_FILL, .dst = self->bo.dev_addr + 8192,
		.src = 0x44, .size = 4096,
	};
	struct drm_simaccel_sync out = { 0 };
	int sf;

	ASSERT_TRUE(wait_suspended());
	ASSERT_EQ(0, syncobj_create(self->fd, &out.handle));
	/*
	 * The stall resumes the device, and the job follows well within the
	 * autosuspend delay; a short delay then would suspend an idle device
	 * while the job waits on the ring (the time-out is 2 s).
	 */
	ASSERT_EQ(0, inject_all("0x10000"));
	ASSERT_EQ(0, submit(self->fd, self->queue, 0, &o, 1, NULL, 0, &out));
	ASSERT_EQ(0, set_attr("power/autosuspend_delay_ms", "200"));
	usleep(1000000);
	EXPECT_TRUE(attr_is("power/runtime_status", "active"));
	EXPECT_TRUE(attr_is("power_state", "D0"));
	ASSERT_EQ(0, syncobj_wait(self->fd, out.handle, 0));
	sf = sync_file_export(self->fd, out.handle);
	ASSERT_LE(0, sf);
	EXPECT_EQ(-ETIMEDOUT, sync_file_status(sf));
	close(sf);
	/* off the ring: it suspends, which also ends the stall (a reset) */
	EXPECT_TRUE(wait_suspended());
	ASSERT_EQ(0, set_attr("power/autosuspend_delay_ms", "1000"));
	EXPECT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
			    self->bo.dev_addr + 8192, 0x45, 4096));
	EXPECT_EQ(0x45, self->map[8192]);
}

TEST_F(dev, a_peers_job_resumes_the_device_whose_vram_it_reaches)
{
	struct drm_simaccel_bo_info info = { 0 };
	struct drm_simaccel_bo_create h1;
	int fd1 = open("/dev/accel/accel1", O_RDWR | O_CLOEXEC);
	uint8_t *m1, *shared;
	uint32_t q1;
	int dmabuf;

	ASSERT_LE(0, fd1) TH_LOG("needs two devices");
	ASSERT_EQ(0, queue_create(fd1, &q1));
	ASSERT_EQ(0, bo_create(fd1, 4096, DRM_SIMACCEL_BO_HOST, &h1));
	m1 = map_bo(fd1, &h1);
	ASSERT_NE(MAP_FAILED, m1);
	memset(m1, 0x61, 4096);
	ASSERT_EQ(0, prime_export(self->fd, self->bo.handle, &dmabuf));
	ASSERT_EQ(0, prime_import(fd1, dmabuf, &info.handle));
	ASSERT_EQ(0, ioctl(fd1, DRM_IOCTL_SIMACCEL_BO_INFO, &info));
	/* the import holds no reference either */
	ASSERT_TRUE(wait_suspended());
	/* device 1 writes device 0's VRAM: its BAR decodes only in D0 */
	EXPECT_EQ(0, run_op(fd1, q1, DRM_SIMACCEL_OP_COPY, 0,
			    info.dev_addr + 16384, h1.dev_addr, 4096));
	EXPECT_EQ(0x61, self->map[16384]);
	EXPECT_EQ(0x61, self->map[16384 + 4095]);
	EXPECT_TRUE(contents_kept(self->map));
	/* the dma-buf's own mapping of the VRAM */
	shared = mmap(NULL, self->bo.size, PROT_READ, MAP_SHARED, dmabuf, 0);
	ASSERT_NE(MAP_FAILED, shared);
	EXPECT_EQ(0x61, shared[16384]);
	ASSERT_TRUE(wait_suspended());
	EXPECT_EQ(0x61, shared[16384]);
	EXPECT_EQ(0x5a, shared[0]);
	EXPECT_TRUE(attr_is("power_state", "D0"));
	munmap(shared, self->bo.size);
	munmap(m1, 4096);
	close(dmabuf);
	close(fd1);
}

/*
 * q35's ICH9 LPC bridge: QEMU resets it on the wakeup from S3, and neither
 * SeaBIOS nor Linux restores its ACPI base (PMBASE, 0x40) and enable
 * (ACPI_CNTL, 0x44), beyond the standard header that the PCI core saves:
 * without them the VM could not power off at the end of the run.
 */
#define LPC_CONFIG	"/sys/bus/pci/devices/0000:00:1f.0/config"
#define LPC_ACPI	0x40
#define LPC_ACPI_LEN	8

/* Suspend to RAM; the RTC alarm wakes the VM 3 s later. */
static int suspend_to_ram(void)
{
	uint8_t acpi[LPC_ACPI_LEN];
	int lpc, ret;

	lpc = open(LPC_CONFIG, O_RDWR | O_CLOEXEC);
	if (lpc < 0 || pread(lpc, acpi, sizeof(acpi), LPC_ACPI) != sizeof(acpi))
		return -1;
	write_file("/sys/class/rtc/rtc0/wakealarm", "0");
	ret = write_file("/sys/class/rtc/rtc0/wakealarm", "+3");
	if (!ret)
		ret = write_file("/sys/power/state", "mem");
	if (pwrite(lpc, acpi, sizeof(acpi), LPC_ACPI) != sizeof(acpi))
		ret = -1;
	close(lpc);
	return ret;
}

TEST_F(dev, system_suspend_cancels_a_stalled_job_and_keeps_the_buffers)
{
	struct drm_simaccel_op o = {
		.op = DRM_SIMACCEL_OP_FILL, .dst = self->bo.dev_addr + 8192,
		.src = 0x44, .size = 4096,
	};
	struct drm_simaccel_sync out = { 0 };
	char *states = read_text("/sys/power/state", 64);
	int sf;

	if (!states || !strstr(states, "mem"))
		SKIP(free(states); return, "no suspend to RAM in this VM");
	free(states);
	ASSERT_EQ(0, syncobj_create(self->fd, &out.handle));
	ASSERT_EQ(0, inject_all("0x10000"));
	ASSERT_EQ(0, submit(self->fd, self->queue, 0, &o, 1, NULL, 0, &out));
	ASSERT_EQ(0, suspend_to_ram());
	ASSERT_EQ(0, syncobj_wait(self->fd, out.handle, 0));
	sf = sync_file_export(self->fd, out.handle);
	ASSERT_LE(0, sf);
	EXPECT_EQ(-ECANCELED, sync_file_status(sf));
	close(sf);
	EXPECT_TRUE(contents_kept(self->map));
	EXPECT_EQ(0, self->map[8192]);
	/* the stall went with the device's state: later work runs */
	EXPECT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
			    self->bo.dev_addr + 8192, 0x46, 4096));
	EXPECT_EQ(0x46, self->map[8192]);

	/* and from runtime suspend, with nothing in flight */
	ASSERT_TRUE(wait_suspended());
	ASSERT_EQ(0, suspend_to_ram());
	EXPECT_TRUE(contents_kept(self->map));
	EXPECT_EQ(0, run_op(self->fd, self->queue, DRM_SIMACCEL_OP_FILL, 0,
			    self->bo.dev_addr + 8192, 0x47, 4096));
	EXPECT_EQ(0x47, self->map[8192]);
}

TEST_HARNESS_MAIN
