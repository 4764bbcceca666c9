/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: device totals in sysfs.
 */
#ifndef __SIMACCEL_SYSFS_H__
#define __SIMACCEL_SYSFS_H__

#include "simaccel_drv.h"

int simaccel_sysfs_init(struct simaccel_device *sdev);

#endif /* __SIMACCEL_SYSFS_H__ */
