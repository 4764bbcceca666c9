// SPDX-License-Identifier: GPL-2.0
/*
 * accel: sysfs attributes of /sys/class/misc/accelN.
 *
 * They show values read at probe or kept by the driver, so they stay
 * readable while the device is being removed.
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "accel_drv.h"

static struct accel_device *to_accel(struct device *dev)
{
	struct miscdevice *misc = dev_get_drvdata(dev);

	return container_of(misc, struct accel_device, misc);
}

static ssize_t vram_size_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", to_accel(dev)->vram_size);
}
static DEVICE_ATTR_RO(vram_size);

static ssize_t num_queues_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_accel(dev)->num_queues);
}
static DEVICE_ATTR_RO(num_queues);

static ssize_t hw_version_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	u32 version = to_accel(dev)->hw_version;

	return sysfs_emit(buf, "%u.%u\n", version >> 16, version & 0xffff);
}
static DEVICE_ATTR_RO(hw_version);

static ssize_t caps_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%#x\n", to_accel(dev)->caps);
}
static DEVICE_ATTR_RO(caps);

static ssize_t vram_used_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", accel_vram_used(to_accel(dev)));
}
static DEVICE_ATTR_RO(vram_used);

static ssize_t vram_free_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct accel_device *adev = to_accel(dev);

	return sysfs_emit(buf, "%llu\n", adev->vram_size - accel_vram_used(adev));
}
static DEVICE_ATTR_RO(vram_free);

static struct attribute *accel_attrs[] = {
	&dev_attr_vram_used.attr,
	&dev_attr_vram_free.attr,
	&dev_attr_vram_size.attr,
	&dev_attr_num_queues.attr,
	&dev_attr_hw_version.attr,
	&dev_attr_caps.attr,
	NULL,
};

static const struct attribute_group accel_group = {
	.attrs = accel_attrs,
};

const struct attribute_group *accel_groups[] = {
	&accel_group,
	NULL,
};
