/* SPDX-License-Identifier: GPL-2.0 */
/*
 * accel: driver-wide definitions.
 */
#ifndef __ACCEL_DRV_H__
#define __ACCEL_DRV_H__

#include <linux/interrupt.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/pci.h>
#include <linux/rwsem.h>

#include "../include/accel_hw.h"
#include "../uapi/accel.h"

#define DRIVER_NAME		"accel"
#define ACCEL_DRIVER_MAJOR	0
#define ACCEL_DRIVER_MINOR	1
#define ACCEL_DRIVER_PATCH	0

struct accel_device;

/**
 * struct accel_queue_vector - context of one queue's MSI-X vector
 * @adev: the device
 * @queue: the queue index
 */
struct accel_queue_vector {
	struct accel_device *adev;
	u32 queue;
};

/**
 * struct accel_device - one accelerator
 * @pdev: the PCI device, or NULL once it is removed
 * @regs: BAR0 control registers
 * @vram_bar: bus address of BAR2 (all of VRAM)
 * @vram_size: bytes of VRAM
 * @num_queues: DMA queues the hardware has
 * @hw_version: the device's version register
 * @caps: the device's capability register
 * @index: N of /dev/accelN
 * @name: "accelN"
 * @misc: the character device
 * @ref: held by the PCI binding and by every open file
 * @remove_lock: writers remove the device; readers use the hardware
 * @removed: set under @remove_lock when the PCI device goes away
 * @vectors: context of each queue's MSI-X vector
 * @irq_count: interrupts handled per queue vector
 * @error_irq_count: error interrupts handled
 */
struct accel_device {
	struct pci_dev *pdev;
	void __iomem *regs;
	resource_size_t vram_bar;
	u64 vram_size;
	u32 num_queues;
	u32 hw_version;
	u32 caps;
	int index;
	char name[16];
	struct miscdevice misc;
	struct kref ref;
	struct rw_semaphore remove_lock;
	bool removed;
	struct accel_queue_vector vectors[ACCEL_MAX_QUEUES];
	atomic64_t irq_count[ACCEL_MAX_QUEUES];
	atomic64_t error_irq_count;
};

static inline u32 accel_read(struct accel_device *adev, u32 reg)
{
	return readl(adev->regs + reg);
}

static inline void accel_write(struct accel_device *adev, u32 reg, u32 val)
{
	writel(val, adev->regs + reg);
}

void accel_device_put(struct accel_device *adev);

/* accel_hw.c */
int accel_hw_init(struct accel_device *adev);
void accel_hw_reset(struct accel_device *adev);

/* accel_irq.c */
int accel_irq_init(struct accel_device *adev);
void accel_irq_fini(struct accel_device *adev);

/* accel_ioctl.c */
long accel_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* accel_sysfs.c */
extern const struct attribute_group *accel_groups[];

#endif /* __ACCEL_DRV_H__ */
