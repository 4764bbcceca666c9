// SPDX-License-Identifier: GPL-2.0
/*
 * accel: ioctl dispatch.
 *
 * The size in the ioctl number is the caller's struct size. Arguments are
 * copied with copy_struct_from_user(), so a shorter (older) struct is
 * zero-extended and a longer (newer) one is accepted when the fields this
 * driver does not know are zero. Only the caller's size is copied back.
 */
#include <linux/uaccess.h>

#include "accel_drv.h"

struct accel_ioctl_desc {
	unsigned int cmd;
	/* the size of the first version of the argument */
	size_t min_size;
	int (*func)(struct accel_ctx *ctx, void *args);
};

union accel_ioctl_args {
	struct accel_info info;
	struct accel_alloc alloc;
	struct accel_free free;
	struct accel_copy copy;
	struct accel_memset memset;
	struct accel_mem_stats stats;
	struct accel_userptr userptr;
	struct accel_queue_create queue_create;
	struct accel_queue_destroy queue_destroy;
	struct accel_submit submit;
	struct accel_wait wait;
};

static int accel_ioctl_get_info(struct accel_ctx *ctx, void *args)
{
	struct accel_device *adev = ctx->adev;
	struct accel_info *info = args;
	struct pci_dev *pdev = adev->pdev;

	if (info->flags || info->pad)
		return -EINVAL;
	info->vendor_id = pdev->vendor;
	info->device_id = pdev->device;
	info->subsystem_vendor_id = pdev->subsystem_vendor;
	info->subsystem_id = pdev->subsystem_device;
	info->revision = pdev->revision;
	info->class_code = pdev->class;
	info->pci_domain = pci_domain_nr(pdev->bus);
	info->pci_bus = pdev->bus->number;
	info->pci_devfn = pdev->devfn;
	info->num_queues = adev->num_queues;
	info->vram_size = adev->vram_size;
	info->hw_version = adev->hw_version;
	info->driver_version = ACCEL_DRIVER_MAJOR << 16 |
			       ACCEL_DRIVER_MINOR << 8 | ACCEL_DRIVER_PATCH;
	info->caps = adev->caps;
	info->index = adev->index;
	return 0;
}

static int accel_ioctl_alloc(struct accel_ctx *ctx, void *args)
{
	return accel_bo_alloc(ctx, args);
}

static int accel_ioctl_free(struct accel_ctx *ctx, void *args)
{
	struct accel_free *free = args;

	if (free->pad)
		return -EINVAL;
	return accel_bo_free(ctx, free->handle);
}

static int accel_ioctl_copy(struct accel_ctx *ctx, void *args)
{
	return accel_dma_copy(ctx, args);
}

static int accel_ioctl_memset(struct accel_ctx *ctx, void *args)
{
	return accel_dma_memset(ctx, args);
}

static int accel_ioctl_mem_stats(struct accel_ctx *ctx, void *args)
{
	struct accel_device *adev = ctx->adev;
	struct accel_mem_stats *stats = args;

	if (stats->flags || stats->pad || stats->pad2)
		return -EINVAL;
	stats->vram_total = adev->vram_size;
	stats->vram_used = accel_vram_used(adev);
	stats->vram_free = adev->vram_size - stats->vram_used;
	stats->host_pinned = atomic64_read(&adev->host_pinned);
	mutex_lock(&ctx->lock);
	stats->ctx_vram_used = ctx->vram_used;
	stats->ctx_host_pinned = ctx->host_pinned;
	stats->ctx_allocations = ctx->nr_allocs;
	mutex_unlock(&ctx->lock);
	return 0;
}

static int accel_ioctl_userptr(struct accel_ctx *ctx, void *args)
{
	return accel_bo_userptr(ctx, args);
}

static int accel_ioctl_queue_create(struct accel_ctx *ctx, void *args)
{
	return accel_queue_create(ctx, args);
}

static int accel_ioctl_queue_destroy(struct accel_ctx *ctx, void *args)
{
	struct accel_queue_destroy *destroy = args;

	if (destroy->pad)
		return -EINVAL;
	return accel_queue_destroy(ctx, destroy->handle);
}

static int accel_ioctl_submit(struct accel_ctx *ctx, void *args)
{
	return accel_queue_submit(ctx, args);
}

static int accel_ioctl_wait(struct accel_ctx *ctx, void *args)
{
	return accel_queue_wait(ctx, args);
}

static const struct accel_ioctl_desc accel_ioctls[] = {
	[_IOC_NR(ACCEL_IOCTL_GET_INFO)] = {
		.cmd = ACCEL_IOCTL_GET_INFO,
		.min_size = offsetofend(struct accel_info, index),
		.func = accel_ioctl_get_info,
	},
	[_IOC_NR(ACCEL_IOCTL_ALLOC)] = {
		.cmd = ACCEL_IOCTL_ALLOC,
		.min_size = offsetofend(struct accel_alloc, mmap_offset),
		.func = accel_ioctl_alloc,
	},
	[_IOC_NR(ACCEL_IOCTL_FREE)] = {
		.cmd = ACCEL_IOCTL_FREE,
		.min_size = offsetofend(struct accel_free, pad),
		.func = accel_ioctl_free,
	},
	[_IOC_NR(ACCEL_IOCTL_COPY)] = {
		.cmd = ACCEL_IOCTL_COPY,
		.min_size = offsetofend(struct accel_copy, pad),
		.func = accel_ioctl_copy,
	},
	[_IOC_NR(ACCEL_IOCTL_MEMSET)] = {
		.cmd = ACCEL_IOCTL_MEMSET,
		.min_size = offsetofend(struct accel_memset, flags),
		.func = accel_ioctl_memset,
	},
	[_IOC_NR(ACCEL_IOCTL_MEM_STATS)] = {
		.cmd = ACCEL_IOCTL_MEM_STATS,
		.min_size = offsetofend(struct accel_mem_stats, ctx_host_pinned),
		.func = accel_ioctl_mem_stats,
	},
	[_IOC_NR(ACCEL_IOCTL_USERPTR)] = {
		.cmd = ACCEL_IOCTL_USERPTR,
		.min_size = offsetofend(struct accel_userptr, dev_addr),
		.func = accel_ioctl_userptr,
	},
	[_IOC_NR(ACCEL_IOCTL_QUEUE_CREATE)] = {
		.cmd = ACCEL_IOCTL_QUEUE_CREATE,
		.min_size = offsetofend(struct accel_queue_create, pad),
		.func = accel_ioctl_queue_create,
	},
	[_IOC_NR(ACCEL_IOCTL_QUEUE_DESTROY)] = {
		.cmd = ACCEL_IOCTL_QUEUE_DESTROY,
		.min_size = offsetofend(struct accel_queue_destroy, pad),
		.func = accel_ioctl_queue_destroy,
	},
	[_IOC_NR(ACCEL_IOCTL_SUBMIT)] = {
		.cmd = ACCEL_IOCTL_SUBMIT,
		.min_size = offsetofend(struct accel_submit, fence),
		.func = accel_ioctl_submit,
	},
	[_IOC_NR(ACCEL_IOCTL_WAIT)] = {
		.cmd = ACCEL_IOCTL_WAIT,
		.min_size = offsetofend(struct accel_wait, pad),
		.func = accel_ioctl_wait,
	},
};

static const struct accel_ioctl_desc *accel_ioctl_lookup(unsigned int cmd)
{
	const struct accel_ioctl_desc *desc;
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != ACCEL_IOCTL_TYPE || nr >= ARRAY_SIZE(accel_ioctls))
		return NULL;
	desc = &accel_ioctls[nr];
	if (!desc->func || _IOC_DIR(cmd) != _IOC_DIR(desc->cmd))
		return NULL;
	return desc;
}

long accel_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct accel_ctx *ctx = file->private_data;
	struct accel_device *adev = ctx->adev;
	const struct accel_ioctl_desc *desc = accel_ioctl_lookup(cmd);
	void __user *uarg = (void __user *)arg;
	union accel_ioctl_args args;
	size_t usize = _IOC_SIZE(cmd), ksize;
	int ret;

	if (!desc)
		return -ENOTTY;
	ksize = _IOC_SIZE(desc->cmd);
	BUILD_BUG_ON(sizeof(args) > 512);
	if (usize < desc->min_size)
		return -EINVAL;
	ret = copy_struct_from_user(&args, ksize, uarg, usize);
	if (ret)
		return ret;

	down_read(&adev->remove_lock);
	ret = adev->removed ? -ENODEV : desc->func(ctx, &args);
	up_read(&adev->remove_lock);

	if (!ret && (_IOC_DIR(cmd) & _IOC_READ) &&
	    copy_to_user(uarg, &args, min(usize, ksize)))
		ret = -EFAULT;
	return ret;
}
