// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: bringing the hardware to a known state.
 */
#include <linux/iopoll.h>

#include "simaccel_hw.h"

#define SIMACCEL_RESET_TIMEOUT_US	100000

/* Whole-device reset: queues stop, rings and interrupt state are cleared. */
void simaccel_hw_reset(struct simaccel_device *sdev)
{
	simaccel_dbg(sdev, REG, "device reset\n");
	simaccel_write(sdev, ACCEL_REG_DEV_CTRL, ACCEL_DEV_CTRL_RESET);
}

/* Reset the device and wait until it is ready: 0 or -ETIMEDOUT. */
int simaccel_hw_reset_wait(struct simaccel_device *sdev)
{
	u32 status;

	simaccel_hw_reset(sdev);
	return readl_poll_timeout(sdev->regs + ACCEL_REG_DEV_STATUS, status,
				  status & ACCEL_DEV_STATUS_READY, 10,
				  SIMACCEL_RESET_TIMEOUT_US);
}

static int simaccel_hw_identify(struct simaccel_device *sdev)
{
	u32 magic = simaccel_read(sdev, ACCEL_REG_MAGIC);

	if (magic != ACCEL_MAGIC) {
		drm_err(&sdev->drm, "unexpected magic %#x in BAR0\n", magic);
		return -ENODEV;
	}
	sdev->hw_version = simaccel_read(sdev, ACCEL_REG_VERSION);
	if (sdev->hw_version >> 16 != ACCEL_HW_VERSION_MAJOR) {
		drm_err(&sdev->drm, "unsupported hardware version %u.%u\n",
			sdev->hw_version >> 16, sdev->hw_version & 0xffff);
		return -ENODEV;
	}
	return 0;
}

/* The geometry the device reports, checked against what the driver handles. */
static int simaccel_hw_read_geometry(struct simaccel_device *sdev)
{
	resource_size_t bar_len;

	sdev->caps = simaccel_read(sdev, ACCEL_REG_CAPS);
	sdev->num_queues = simaccel_read(sdev, ACCEL_REG_NUM_QUEUES);
	sdev->vram_size = simaccel_read(sdev, ACCEL_REG_VRAM_SIZE_LO) |
			  (u64)simaccel_read(sdev, ACCEL_REG_VRAM_SIZE_HI) << 32;
	if (!sdev->num_queues || sdev->num_queues > ACCEL_MAX_QUEUES) {
		drm_err(&sdev->drm, "invalid queue count %u\n",
			sdev->num_queues);
		return -ENODEV;
	}
	if (simaccel_read(sdev, ACCEL_REG_DESC_SIZE) != ACCEL_DESC_SIZE) {
		drm_err(&sdev->drm, "unsupported descriptor size\n");
		return -ENODEV;
	}
	sdev->vram_bar = pci_resource_start(to_pci(sdev), ACCEL_BAR_VRAM);
	bar_len = pci_resource_len(to_pci(sdev), ACCEL_BAR_VRAM);
	if (bar_len != sdev->vram_size) {
		drm_err(&sdev->drm, "VRAM BAR is %pa bytes but VRAM is %llu bytes\n",
			&bar_len, sdev->vram_size);
		return -ENODEV;
	}
	return 0;
}

/* Identify the device, reset it and read its geometry. */
int simaccel_hw_init(struct simaccel_device *sdev)
{
	int ret;

	ret = simaccel_hw_identify(sdev);
	if (ret)
		return ret;
	if (simaccel_hw_reset_wait(sdev)) {
		drm_err(&sdev->drm, "device not ready after reset\n");
		return -ETIMEDOUT;
	}
	return simaccel_hw_read_geometry(sdev);
}
