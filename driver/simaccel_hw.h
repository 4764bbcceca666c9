/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: registers, identification and reset of the hardware.
 */
#ifndef __SIMACCEL_HW_H__
#define __SIMACCEL_HW_H__

#include "simaccel_drv.h"

static inline u32 simaccel_read(struct simaccel_device *sdev, u32 reg)
{
	return readl(sdev->regs + reg);
}

static inline void simaccel_write(struct simaccel_device *sdev, u32 reg,
				  u32 val)
{
	writel(val, sdev->regs + reg);
}

int simaccel_hw_init(struct simaccel_device *sdev);
void simaccel_hw_reset(struct simaccel_device *sdev);
int simaccel_hw_reset_wait(struct simaccel_device *sdev);

#endif /* __SIMACCEL_HW_H__ */
