// SPDX-License-Identifier: GPL-2.0
/*
 * accel: debugfs, for tests.
 *
 * /sys/kernel/debug/accel/accelN/fault_inject_qQ writes the FAULT_INJECT
 * register of hardware queue Q: N makes the next N descriptors fail,
 * 0x10000 makes the next one stall (see docs/hardware.md). Queue 0 runs
 * synchronous work; fault_inject is the same as fault_inject_q0.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "accel_drv.h"

static struct dentry *accel_debugfs_root;
/* the root is the kernel's DRM accel subsystem's, when that is built in */
static bool accel_debugfs_root_shared;

/* The files' data: the device's per-queue array, indexed by queue. */
static struct accel_device *accel_fault_dev(void *data, u32 *queue)
{
	struct accel_fault_file *f = data;

	*queue = f->queue;
	return f->adev;
}

static int accel_fault_inject_get(void *data, u64 *val)
{
	u32 q;
	struct accel_device *adev = accel_fault_dev(data, &q);
	int ret = -ENODEV;

	down_read(&adev->remove_lock);
	if (!adev->removed) {
		*val = accel_read(adev, ACCEL_QUEUE_REG(q, ACCEL_Q_FAULT_INJECT));
		ret = 0;
	}
	up_read(&adev->remove_lock);
	return ret;
}

static int accel_fault_inject_set(void *data, u64 val)
{
	u32 q;
	struct accel_device *adev = accel_fault_dev(data, &q);
	int ret = -ENODEV;

	if (val & ~(u64)(ACCEL_FAULT_COUNT_MASK | ACCEL_FAULT_STALL))
		return -EINVAL;
	down_read(&adev->remove_lock);
	if (!adev->removed) {
		accel_write(adev, ACCEL_QUEUE_REG(q, ACCEL_Q_FAULT_INJECT), val);
		ret = 0;
	}
	up_read(&adev->remove_lock);
	return ret;
}

DEFINE_DEBUGFS_ATTRIBUTE(accel_fault_inject_fops, accel_fault_inject_get,
			 accel_fault_inject_set, "0x%llx\n");

static int accel_contexts_show(struct seq_file *m, void *unused)
{
	struct accel_device *adev = m->private;
	struct accel_ctx *ctx;

	seq_puts(m, "pid\tcomm\tvram_bytes\thost_pinned_bytes\tallocations\tjobs_in_flight\n");
	mutex_lock(&adev->ctxs_lock);
	list_for_each_entry(ctx, &adev->ctxs, link) {
		mutex_lock(&ctx->lock);
		seq_printf(m, "%d\t%s\t%llu\t%llu\t%u\t%d\n", pid_nr(ctx->pid),
			   ctx->comm, ctx->vram_used, ctx->host_pinned,
			   ctx->nr_allocs, atomic_read(&ctx->inflight));
		mutex_unlock(&ctx->lock);
	}
	mutex_unlock(&adev->ctxs_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(accel_contexts);

void accel_debugfs_register(void)
{
	accel_debugfs_root = debugfs_lookup(DRIVER_NAME, NULL);
	accel_debugfs_root_shared = accel_debugfs_root;
	if (!accel_debugfs_root)
		accel_debugfs_root = debugfs_create_dir(DRIVER_NAME, NULL);
}

void accel_debugfs_unregister(void)
{
	if (accel_debugfs_root_shared)
		dput(accel_debugfs_root);
	else
		debugfs_remove_recursive(accel_debugfs_root);
}

void accel_debugfs_init(struct accel_device *adev)
{
	char name[32];
	u32 q;

	adev->debugfs = debugfs_create_dir(adev->name, accel_debugfs_root);
	for (q = 0; q < adev->num_queues; q++) {
		adev->fault_files[q].adev = adev;
		adev->fault_files[q].queue = q;
		snprintf(name, sizeof(name), "fault_inject_q%u", q);
		debugfs_create_file_unsafe(name, 0600, adev->debugfs,
					   &adev->fault_files[q],
					   &accel_fault_inject_fops);
	}
	debugfs_create_file_unsafe("fault_inject", 0600, adev->debugfs,
				   &adev->fault_files[0], &accel_fault_inject_fops);
	debugfs_create_file("contexts", 0400, adev->debugfs, adev,
			    &accel_contexts_fops);
}

void accel_debugfs_fini(struct accel_device *adev)
{
	debugfs_remove_recursive(adev->debugfs);
}
