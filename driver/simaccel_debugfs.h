/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: debugfs, for tests: fault injection and status per hardware
 * queue.
 */
#ifndef __SIMACCEL_DEBUGFS_H__
#define __SIMACCEL_DEBUGFS_H__

#include "simaccel_drv.h"

void simaccel_debugfs_init(struct simaccel_device *sdev);

#endif /* __SIMACCEL_DEBUGFS_H__ */
