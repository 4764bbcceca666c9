/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: how much VRAM each user's buffers may hold, and how often
 * the user's jobs may hang.
 */
#ifndef __SIMACCEL_QUOTA_H__
#define __SIMACCEL_QUOTA_H__

#include "simaccel_drv.h"

struct simaccel_quota;

int simaccel_quota_init(struct simaccel_device *sdev);
struct simaccel_quota *simaccel_quota_charge(struct simaccel_device *sdev,
					     u64 size);
void simaccel_quota_uncharge(struct simaccel_quota *quota, u64 size);
struct simaccel_quota *simaccel_quota_of_caller(struct simaccel_device *sdev);
void simaccel_quota_hung(struct simaccel_quota *quota, unsigned int limit);
bool simaccel_quota_banned(struct simaccel_quota *quota);

#endif /* __SIMACCEL_QUOTA_H__ */
