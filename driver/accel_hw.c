// SPDX-License-Identifier: GPL-2.0
/*
 * accel: bringing the hardware to a known state.
 */
#include <linux/delay.h>
#include <linux/iopoll.h>

#include "accel_drv.h"

#define ACCEL_RESET_TIMEOUT_US	100000

/* Whole-device reset: queues stop, rings and interrupt state are cleared. */
void accel_hw_reset(struct accel_device *adev)
{
	accel_write(adev, ACCEL_REG_DEV_CTRL, ACCEL_DEV_CTRL_RESET);
}

static int accel_hw_wait_ready(struct accel_device *adev)
{
	u32 status;

	return readl_poll_timeout(adev->regs + ACCEL_REG_DEV_STATUS, status,
				  status & ACCEL_DEV_STATUS_READY, 10,
				  ACCEL_RESET_TIMEOUT_US);
}

/* Identify the device, reset it and read its geometry. */
int accel_hw_init(struct accel_device *adev)
{
	struct device *dev = &adev->pdev->dev;
	resource_size_t bar_len;
	u32 magic;

	magic = accel_read(adev, ACCEL_REG_MAGIC);
	if (magic != ACCEL_MAGIC) {
		dev_err(dev, "unexpected magic %#x in BAR0\n", magic);
		return -ENODEV;
	}
	adev->hw_version = accel_read(adev, ACCEL_REG_VERSION);
	if (adev->hw_version >> 16 != ACCEL_HW_VERSION_MAJOR) {
		dev_err(dev, "unsupported hardware version %u.%u\n",
			adev->hw_version >> 16, adev->hw_version & 0xffff);
		return -ENODEV;
	}

	accel_hw_reset(adev);
	if (accel_hw_wait_ready(adev)) {
		dev_err(dev, "device not ready after reset\n");
		return -ETIMEDOUT;
	}

	adev->caps = accel_read(adev, ACCEL_REG_CAPS);
	adev->num_queues = accel_read(adev, ACCEL_REG_NUM_QUEUES);
	adev->vram_size = accel_read(adev, ACCEL_REG_VRAM_SIZE_LO) |
			  (u64)accel_read(adev, ACCEL_REG_VRAM_SIZE_HI) << 32;
	if (!adev->num_queues || adev->num_queues > ACCEL_MAX_QUEUES) {
		dev_err(dev, "invalid queue count %u\n", adev->num_queues);
		return -ENODEV;
	}
	if (accel_read(adev, ACCEL_REG_DESC_SIZE) != sizeof(struct accel_desc)) {
		dev_err(dev, "unsupported descriptor size\n");
		return -ENODEV;
	}

	adev->vram_bar = pci_resource_start(adev->pdev, ACCEL_BAR_VRAM);
	bar_len = pci_resource_len(adev->pdev, ACCEL_BAR_VRAM);
	if (bar_len != adev->vram_size) {
		dev_err(dev, "VRAM BAR is %pa bytes but VRAM is %llu bytes\n",
			&bar_len, adev->vram_size);
		return -ENODEV;
	}
	return 0;
}
