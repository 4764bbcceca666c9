/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: power management: runtime PM with autosuspend, and system
 * sleep.
 */
#ifndef __SIMACCEL_PM_H__
#define __SIMACCEL_PM_H__

#include <linux/pm.h>

#include "simaccel_drv.h"

extern const struct dev_pm_ops simaccel_pm_ops;

void simaccel_pm_init(struct simaccel_device *sdev);
void simaccel_pm_fini(struct simaccel_device *sdev);
int simaccel_pm_get(struct simaccel_device *sdev);
void simaccel_pm_put(struct simaccel_device *sdev);

#endif /* __SIMACCEL_PM_H__ */
