// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: debugfs, for tests: fault injection and status per hardware
 * queue.
 *
 * <debugfs>/accel/<PCI address>/qN/fault_inject is the queue's FAULT_INJECT
 * register (docs/hardware.md): writing N fails the next N descriptors the
 * queue starts, 0x10000 stalls the next one. qN/status is its STATUS
 * register, so that a test sees a queue left stalled or halted.
 * <debugfs>/accel/<PCI address>/fault_inject is the device's
 * DEV_FAULT_INJECT: 1 hangs the whole device, 2 makes it report a fatal
 * error, until a device reset. Only root reaches debugfs.
 */
#include <drm/drm_drv.h>
#include <linux/debugfs.h>

#include "simaccel_debugfs.h"
#include "simaccel_hw.h"
#include "simaccel_hwq.h"
#include "simaccel_pm.h"

/*
 * The registers are read and written with the device in D0. What is
 * written to them is lost when it next suspends, as at a reset: a fault
 * injected into an idle device lasts the autosuspend delay.
 */
static int simaccel_debugfs_enter(struct simaccel_device *sdev, int *idx)
{
	int ret;

	if (!drm_dev_enter(&sdev->drm, idx))
		return -ENODEV;
	ret = simaccel_pm_get(sdev);
	if (ret)
		drm_dev_exit(*idx);
	return ret;
}

static void simaccel_debugfs_exit(struct simaccel_device *sdev, int idx)
{
	simaccel_pm_put(sdev);
	drm_dev_exit(idx);
}

static int simaccel_fault_inject_get(void *data, u64 *val)
{
	struct simaccel_hwq *hwq = data;
	int idx, ret;

	ret = simaccel_debugfs_enter(hwq->sdev, &idx);
	if (ret)
		return ret;
	*val = simaccel_read(hwq->sdev,
			     ACCEL_QUEUE_REG(hwq->index, ACCEL_Q_FAULT_INJECT));
	simaccel_debugfs_exit(hwq->sdev, idx);
	return 0;
}

static int simaccel_fault_inject_set(void *data, u64 val)
{
	struct simaccel_hwq *hwq = data;
	int idx, ret;

	if (val & ~(u64)(ACCEL_FAULT_COUNT_MASK | ACCEL_FAULT_STALL))
		return -EINVAL;
	ret = simaccel_debugfs_enter(hwq->sdev, &idx);
	if (ret)
		return ret;
	simaccel_write(hwq->sdev,
		       ACCEL_QUEUE_REG(hwq->index, ACCEL_Q_FAULT_INJECT), val);
	simaccel_debugfs_exit(hwq->sdev, idx);
	return 0;
}

static int simaccel_status_get(void *data, u64 *val)
{
	struct simaccel_hwq *hwq = data;
	int idx, ret;

	ret = simaccel_debugfs_enter(hwq->sdev, &idx);
	if (ret)
		return ret;
	*val = simaccel_read(hwq->sdev,
			     ACCEL_QUEUE_REG(hwq->index, ACCEL_Q_STATUS));
	simaccel_debugfs_exit(hwq->sdev, idx);
	return 0;
}

static int simaccel_dev_fault_get(void *data, u64 *val)
{
	struct simaccel_device *sdev = data;
	int idx, ret;

	ret = simaccel_debugfs_enter(sdev, &idx);
	if (ret)
		return ret;
	*val = simaccel_read(sdev, ACCEL_REG_DEV_FAULT_INJECT);
	simaccel_debugfs_exit(sdev, idx);
	return 0;
}

static int simaccel_dev_fault_set(void *data, u64 val)
{
	struct simaccel_device *sdev = data;
	int idx, ret;

	if (val & ~(u64)(ACCEL_DEV_FAULT_HANG | ACCEL_DEV_FAULT_FATAL))
		return -EINVAL;
	ret = simaccel_debugfs_enter(sdev, &idx);
	if (ret)
		return ret;
	simaccel_write(sdev, ACCEL_REG_DEV_FAULT_INJECT, val);
	simaccel_debugfs_exit(sdev, idx);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(simaccel_dev_fault_fops, simaccel_dev_fault_get,
			 simaccel_dev_fault_set, "%#llx\n");
DEFINE_DEBUGFS_ATTRIBUTE(simaccel_status_fops, simaccel_status_get, NULL,
			 "%#llx\n");
DEFINE_DEBUGFS_ATTRIBUTE(simaccel_fault_inject_fops, simaccel_fault_inject_get,
			 simaccel_fault_inject_set, "%#llx\n");

/* After drm_dev_register(), which made the device's directory. */
void simaccel_debugfs_init(struct simaccel_device *sdev)
{
	struct dentry *root = sdev->drm.debugfs_root;
	char name[8];
	u32 q;

	debugfs_create_file_unsafe("fault_inject", 0600, root, sdev,
				   &simaccel_dev_fault_fops);
	for (q = 0; q < sdev->num_queues; q++) {
		struct dentry *dir;

		snprintf(name, sizeof(name), "q%u", q);
		dir = debugfs_create_dir(name, root);
		debugfs_create_file_unsafe("fault_inject", 0600, dir,
					   &sdev->hwqs[q],
					   &simaccel_fault_inject_fops);
		debugfs_create_file_unsafe("status", 0400, dir, &sdev->hwqs[q],
					   &simaccel_status_fops);
	}
}
