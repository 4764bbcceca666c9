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
 *
 * The same record counts the user's hangs (simaccel_job_hung()): a user
 * whose jobs time out SIMACCEL_BAN_HANGS times within ban_period_ms, from
 * any number of files, is banned for ban_period_ms from the last of them:
 * each hang holds a hardware queue, other users' work behind it included,
 * for a whole time-out, and a per-file ban alone is undone by opening the
 * device again. Files opened with CAP_SYS_ADMIN have no such record: root
 * may reset the device anyway, and is banned per file only.
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

static unsigned int simaccel_ban_period_ms = 60000;
module_param_named(ban_period_ms, simaccel_ban_period_ms, uint, 0644);
MODULE_PARM_DESC(ban_period_ms,
		 "a user whose jobs time out 3 times within this period (ms) may submit no more work for as long");

/* The most hangs that may ban a user: the times kept. */
#define SIMACCEL_QUOTA_HANGS	8

/**
 * struct simaccel_quota - one user's standing on one device
 * @used: bytes of the user's VRAM buffers
 * @hang_lock: protects @hangs, @hang_at and @banned_until
 * @hangs: the user's jobs that timed out
 * @hang_at: jiffies at the last SIMACCEL_QUOTA_HANGS of them, a ring
 * @banned: @banned_until is set
 * @banned_until: jiffies until which the user's work is refused
 *
 * It lives as long as the device's DRM device, which outlives every buffer
 * and file.
 */
struct simaccel_quota {
	atomic64_t used;
	spinlock_t hang_lock;	/* protects the fields below it */
	unsigned int hangs;
	unsigned long hang_at[SIMACCEL_QUOTA_HANGS];
	bool banned;
	unsigned long banned_until;
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

/**
 * simaccel_quota_of_caller - the calling user's record, made on first use
 * @sdev: the device
 *
 * Return: the record, or an ERR_PTR().
 */
struct simaccel_quota *simaccel_quota_of_caller(struct simaccel_device *sdev)
{
	unsigned long uid = from_kuid(&init_user_ns, current_euid());
	struct simaccel_quota *quota = xa_load(&sdev->quotas, uid), *old;

	if (quota)
		return quota;
	quota = kzalloc(sizeof(*quota), GFP_KERNEL);
	if (!quota)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&quota->hang_lock);
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

/**
 * simaccel_quota_hung - count a job's time-out against its user
 * @quota: the user's record
 * @limit: the hangs within ban_period_ms that ban the user, at most
 *	SIMACCEL_QUOTA_HANGS
 *
 * Any period that holds @limit hangs bans the user: this one and the
 * @limit - 1 before it are looked at, wherever a period would start.
 * Any context.
 */
void simaccel_quota_hung(struct simaccel_quota *quota, unsigned int limit)
{
	unsigned long period = msecs_to_jiffies(READ_ONCE(simaccel_ban_period_ms));
	unsigned long now = jiffies, flags, first;

	spin_lock_irqsave(&quota->hang_lock, flags);
	quota->hang_at[quota->hangs++ % SIMACCEL_QUOTA_HANGS] = now;
	first = quota->hang_at[(quota->hangs - limit) % SIMACCEL_QUOTA_HANGS];
	if (quota->hangs >= limit && !time_after(now, first + period)) {
		WRITE_ONCE(quota->banned_until, now + period);
		WRITE_ONCE(quota->banned, true);
	}
	spin_unlock_irqrestore(&quota->hang_lock, flags);
}

/* Whether the user's work is refused now (any context). */
bool simaccel_quota_banned(struct simaccel_quota *quota)
{
	return READ_ONCE(quota->banned) &&
	       time_before(jiffies, READ_ONCE(quota->banned_until));
}
