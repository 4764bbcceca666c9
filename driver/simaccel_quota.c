// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: how much VRAM each user's buffers may hold.
 *
 * Without a limit, one user can take all of VRAM and every other user's
 * BO_CREATE fails with ENOSPC. The administrator sets a limit per user
 * (effective uid) and device: the module parameter vram_limit_per_user for
 * devices bound afterwards, and the device's sysfs attribute of the same
 * name at any time (bytes, 0 for none). A VRAM buffer is charged to the
 * user who creates it, for its whole life (whoever it is shared with, and
 * until the device has let go of it: its clearing or last job ended), and
 * a creation past the limit fails with EDQUOT at once: waiting, as a full
 * VRAM does, would wait for every user's clearings. Upstream's answer from Linux
 * 6.14 is the dmem cgroup controller; the charge and uncharge here are
 * where dmem_cgroup_try_charge() and dmem_cgroup_uncharge() go, with the
 * creator's cgroup in place of its uid and dmem.max in place of the limit.
 */
#include <drm/drm_managed.h>
#include <linux/cred.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "simaccel_quota.h"

static u64 simaccel_vram_limit_per_user;
module_param_named(vram_limit_per_user, simaccel_vram_limit_per_user, ullong, 0644);
MODULE_PARM_DESC(vram_limit_per_user,
		 "bytes of VRAM one user's buffers may hold on a device, 0 for no limit (for devices bound afterwards; sysfs changes it per device)");

/**
 * struct simaccel_quota - VRAM charged to one user on one device
 * @used: bytes of the user's VRAM buffers
 *
 * It lives as long as the device's DRM device, which outlives every buffer.
 */
struct simaccel_quota {
	atomic64_t used;
};

static void simaccel_quota_fini(struct drm_device *drm, void *unused)
{
	struct simaccel_device *sdev = to_simaccel(drm);
	struct simaccel_quota *quota;
	unsigned long uid;

	xa_for_each(&sdev->quotas, uid, quota)
		kfree(quota);
	xa_destroy(&sdev->quotas);
}

int simaccel_quota_init(struct simaccel_device *sdev)
{
	xa_init(&sdev->quotas);
	sdev->vram_limit_per_user = READ_ONCE(simaccel_vram_limit_per_user);
	return drmm_add_action_or_reset(&sdev->drm, simaccel_quota_fini, NULL);
}

/* The caller's entry, made on its first charge. */
static struct simaccel_quota *simaccel_quota_of_caller(struct simaccel_device *sdev)
{
	unsigned long uid = from_kuid(&init_user_ns, current_euid());
	struct simaccel_quota *quota = xa_load(&sdev->quotas, uid), *old;

	if (quota)
		return quota;
	quota = kzalloc(sizeof(*quota), GFP_KERNEL);
	if (!quota)
		return ERR_PTR(-ENOMEM);
	old = xa_cmpxchg(&sdev->quotas, uid, NULL, quota, GFP_KERNEL);
	if (!old)
		return quota;
	kfree(quota);
	return xa_is_err(old) ? ERR_PTR(xa_err(old)) : old;
}

/**
 * simaccel_quota_charge - charge a new VRAM buffer to the calling user
 * @sdev: the device
 * @size: its bytes
 *
 * Return: what simaccel_quota_uncharge() takes back when the buffer goes,
 * or ERR_PTR(-EDQUOT) past the user's limit, or ERR_PTR(-ENOMEM).
 */
struct simaccel_quota *simaccel_quota_charge(struct simaccel_device *sdev,
					     u64 size)
{
	u64 limit = READ_ONCE(sdev->vram_limit_per_user);
	struct simaccel_quota *quota = simaccel_quota_of_caller(sdev);

	if (IS_ERR(quota))
		return quota;
	if (atomic64_add_return(size, &quota->used) > limit && limit) {
		atomic64_sub(size, &quota->used);
		return ERR_PTR(-EDQUOT);
	}
	return quota;
}

void simaccel_quota_uncharge(struct simaccel_quota *quota, u64 size)
{
	if (quota)
		atomic64_sub(size, &quota->used);
}
