/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: how much VRAM each user's buffers may hold.
 */
#ifndef __SIMACCEL_QUOTA_H__
#define __SIMACCEL_QUOTA_H__

#include "simaccel_drv.h"

struct simaccel_quota;

int simaccel_quota_init(struct simaccel_device *sdev);
struct simaccel_quota *simaccel_quota_charge(struct simaccel_device *sdev,
					     u64 size);
void simaccel_quota_uncharge(struct simaccel_quota *quota, u64 size);

#endif /* __SIMACCEL_QUOTA_H__ */
