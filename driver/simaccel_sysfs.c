// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: device totals in sysfs, on the PCI function
 * (/sys/class/accel/accelN/device/): what all users together hold, for
 * tools that show the device as a whole; each file's own usage is in its
 * DRM fdinfo. The attributes go with the binding. vram_limit_per_user is
 * the administrator's (simaccel_quota.c).
 *
 * busy_time_us is the copy engine's busy time since the binding, as ivpu's
 * npu_busy_time_us: the sum over the hardware queues, each counting from
 * the later of a job's going on its ring and the end of the job before it
 * to the job's end (simaccel_hwq.c), the running job included. fdinfo's
 * drm-engine-copy is a file's share of the same sum: the device's total
 * is at least the sum of its files', and never decreases.
 *
 * reset_count is the whole-device resets since the binding
 * (simaccel_reset.c), and resets/ the same by cause: requested (the PCI
 * core), hang, fatal and pci_error; reset_count is their sum.
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "simaccel_hwq.h"
#include "simaccel_sysfs.h"

static struct simaccel_device *to_sdev(struct device *dev)
{
	return pci_get_drvdata(to_pci_dev(dev));
}

static ssize_t vram_total_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", to_sdev(dev)->vram_size);
}
static DEVICE_ATTR_RO(vram_total);

static ssize_t vram_used_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&to_sdev(dev)->vram_used));
}
static DEVICE_ATTR_RO(vram_used);

static ssize_t host_pinned_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&to_sdev(dev)->host_pinned));
}
static DEVICE_ATTR_RO(host_pinned);

static ssize_t busy_time_us_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct simaccel_device *sdev = to_sdev(dev);
	u64 busy = 0;
	u32 q;

	for (q = 0; q < sdev->num_queues; q++)
		busy += simaccel_hwq_busy_ns(&sdev->hwqs[q]);
	return sysfs_emit(buf, "%llu\n", div_u64(busy, NSEC_PER_USEC));
}
static DEVICE_ATTR_RO(busy_time_us);

static ssize_t reset_count_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct simaccel_device *sdev = to_sdev(dev);
	unsigned int total = 0, cause;

	for (cause = 0; cause < SIMACCEL_RESET_CAUSES; cause++)
		total += atomic_read(&sdev->resets[cause]);
	return sysfs_emit(buf, "%u\n", total);
}
static DEVICE_ATTR_RO(reset_count);

/* resets/CAUSE: the attribute's var is the enum simaccel_reset_cause */
static ssize_t reset_cause_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	unsigned long cause = (unsigned long)
		container_of(attr, struct dev_ext_attribute, attr)->var;

	return sysfs_emit(buf, "%d\n",
			  atomic_read(&to_sdev(dev)->resets[cause]));
}

#define SIMACCEL_RESET_ATTR(_name, _cause)				\
	struct dev_ext_attribute dev_attr_reset_##_name = {		\
		__ATTR(_name, 0444, reset_cause_show, NULL),		\
		(void *)(_cause)					\
	}

static SIMACCEL_RESET_ATTR(requested, SIMACCEL_RESET_REQUESTED);
static SIMACCEL_RESET_ATTR(hang, SIMACCEL_RESET_HANG);
static SIMACCEL_RESET_ATTR(fatal, SIMACCEL_RESET_FATAL);
static SIMACCEL_RESET_ATTR(pci_error, SIMACCEL_RESET_PCI_ERROR);

static struct attribute *simaccel_reset_attrs[] = {
	&dev_attr_reset_requested.attr.attr,
	&dev_attr_reset_hang.attr.attr,
	&dev_attr_reset_fatal.attr.attr,
	&dev_attr_reset_pci_error.attr.attr,
	NULL,
};

static const struct attribute_group simaccel_reset_group = {
	.name = "resets",
	.attrs = simaccel_reset_attrs,
};

/* root's, to change at any time: see simaccel_quota.c */
static ssize_t vram_limit_per_user_show(struct device *dev,
					struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  READ_ONCE(to_sdev(dev)->vram_limit_per_user));
}

static ssize_t vram_limit_per_user_store(struct device *dev,
					 struct device_attribute *attr,
					 const char *buf, size_t count)
{
	u64 limit;
	int ret = kstrtou64(buf, 0, &limit);

	if (ret)
		return ret;
	WRITE_ONCE(to_sdev(dev)->vram_limit_per_user, limit);
	return count;
}
static DEVICE_ATTR_RW(vram_limit_per_user);

static struct attribute *simaccel_attrs[] = {
	&dev_attr_vram_total.attr,
	&dev_attr_vram_used.attr,
	&dev_attr_host_pinned.attr,
	&dev_attr_busy_time_us.attr,
	&dev_attr_vram_limit_per_user.attr,
	&dev_attr_reset_count.attr,
	NULL,
};

static const struct attribute_group simaccel_attr_group = {
	.attrs = simaccel_attrs,
};

int simaccel_sysfs_init(struct simaccel_device *sdev)
{
	int ret = devm_device_add_group(sdev->drm.dev, &simaccel_attr_group);

	return ret ?: devm_device_add_group(sdev->drm.dev,
					    &simaccel_reset_group);
}
