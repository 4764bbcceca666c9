// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: PCI probe and removal, and the DRM accel device.
 *
 * The simaccel_device is the drm_device's container, allocated with
 * devm_drm_dev_alloc(): it lives while the PCI binding or any open file
 * holds the drm_device. Removal unplugs the drm_device first, so that every
 * ioctl after it fails with -ENODEV and every one under way (between
 * drm_dev_enter() and drm_dev_exit()) is waited for; then the hardware is
 * reset. Files opened before the removal stay valid until they are closed.
 */
#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_syncobj.h>
#include <linux/compat.h>
#include <linux/dma-fence-chain.h>
#include <linux/dma-fence-unwrap.h>
#include <linux/module.h>
#include <linux/workqueue.h>

#include "simaccel_debugfs.h"
#include "simaccel_dma.h"
#include "simaccel_drv.h"
#include "simaccel_gem.h"
#include "simaccel_hw.h"
#include "simaccel_hwq.h"
#include "simaccel_job.h"
#include "simaccel_pm.h"
#include "simaccel_prime.h"
#include "simaccel_quota.h"
#include "simaccel_reset.h"
#include "simaccel_sysfs.h"

unsigned int simaccel_dbg_mask;
module_param_named(dbg_mask, simaccel_dbg_mask, uint, 0644);
MODULE_PARM_DESC(dbg_mask,
		 "debug output categories: 1 registers, 2 ioctls, 4 jobs, 8 interrupts");

#define SIMACCEL_INFO_CAPS	(DRM_SIMACCEL_CAP_COPY | DRM_SIMACCEL_CAP_FILL | \
				 DRM_SIMACCEL_CAP_FENCE | DRM_SIMACCEL_CAP_P2P | \
				 DRM_SIMACCEL_CAP_FAULT_INJECT)

static_assert(DRM_SIMACCEL_CAP_COPY == ACCEL_CAP_COPY);
static_assert(DRM_SIMACCEL_CAP_FILL == ACCEL_CAP_FILL);
static_assert(DRM_SIMACCEL_CAP_FENCE == ACCEL_CAP_FENCE);
static_assert(DRM_SIMACCEL_CAP_P2P == ACCEL_CAP_P2P);
static_assert(DRM_SIMACCEL_CAP_FAULT_INJECT == ACCEL_CAP_FAULT_INJECT);

static void simaccel_fill_info(struct simaccel_device *sdev,
			       struct drm_simaccel_info *info)
{
	struct pci_dev *pdev = to_pci(sdev);

	info->vendor_id = pdev->vendor;
	info->device_id = pdev->device;
	info->subsystem_vendor_id = pdev->subsystem_vendor;
	info->subsystem_id = pdev->subsystem_device;
	info->revision = pdev->revision;
	info->class_code = pdev->class;
	info->pci_domain = pci_domain_nr(pdev->bus);
	info->pci_bus = pdev->bus->number;
	info->pci_devfn = pdev->devfn;
	info->num_queues = sdev->num_queues;
	info->vram_size = sdev->vram_size;
	info->hw_version = sdev->hw_version;
	info->driver_version = SIMACCEL_DRIVER_MAJOR << 16 |
			       SIMACCEL_DRIVER_MINOR << 8 |
			       SIMACCEL_DRIVER_PATCH;
	info->caps = sdev->caps & SIMACCEL_INFO_CAPS;
}

static int simaccel_get_info_ioctl(struct drm_device *drm, void *data,
				   struct drm_file *file)
{
	struct simaccel_device *sdev = to_simaccel(drm);
	struct drm_simaccel_info *info = data;
	int idx;

	if (info->flags || info->pad || info->pad2)
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	simaccel_fill_info(sdev, info);
	drm_dev_exit(idx);
	simaccel_dbg(sdev, IOCTL, "get_info\n");
	return 0;
}

static int simaccel_open(struct drm_device *drm, struct drm_file *file)
{
	struct simaccel_file *sfile;

	sfile = kzalloc(sizeof(*sfile), GFP_KERNEL_ACCOUNT);
	if (!sfile)
		return -ENOMEM;
	sfile->usage = simaccel_usage_new(to_simaccel(drm));
	if (!sfile->usage) {
		kfree(sfile);
		return -ENOMEM;
	}
	sfile->usage->client_id = file->client_id;
	if (!capable(CAP_SYS_ADMIN)) {
		sfile->usage->user = simaccel_quota_of_caller(to_simaccel(drm));
		if (IS_ERR(sfile->usage->user)) {
			int ret = PTR_ERR(sfile->usage->user);

			simaccel_usage_put(sfile->usage);
			kfree(sfile);
			return ret;
		}
	}
	sfile->sdev = to_simaccel(drm);
	mutex_init(&sfile->lock);
	mutex_init(&sfile->syncobj_lock);
	simaccel_gem_file_init(sfile);
	xa_init_flags(&sfile->queues, XA_FLAGS_ALLOC1);
	file->driver_priv = sfile;
	return 0;
}

/* After DRM released the file's handles and syncobjs. */
static void simaccel_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct simaccel_file *sfile = to_simaccel_file(file);

	simaccel_job_file_fini(sfile);
	simaccel_gem_file_fini(sfile);
	simaccel_usage_put(sfile->usage);
	mutex_destroy(&sfile->syncobj_lock);
	mutex_destroy(&sfile->lock);
	kfree(sfile);
}

/* DRM fdinfo: the file's memory and engine time. */
static void simaccel_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	simaccel_gem_show_fdinfo(p, file);
	simaccel_job_show_fdinfo(p, file);
}

static const struct drm_ioctl_desc simaccel_ioctls[] = {
	DRM_IOCTL_DEF_DRV(SIMACCEL_GET_INFO, simaccel_get_info_ioctl, 0),
	DRM_IOCTL_DEF_DRV(SIMACCEL_BO_CREATE, simaccel_bo_create_ioctl, 0),
	DRM_IOCTL_DEF_DRV(SIMACCEL_BO_USERPTR, simaccel_bo_userptr_ioctl, 0),
	DRM_IOCTL_DEF_DRV(SIMACCEL_QUEUE_CREATE, simaccel_queue_create_ioctl, 0),
	DRM_IOCTL_DEF_DRV(SIMACCEL_QUEUE_DESTROY, simaccel_queue_destroy_ioctl, 0),
	DRM_IOCTL_DEF_DRV(SIMACCEL_SUBMIT, simaccel_submit_ioctl, 0),
	DRM_IOCTL_DEF_DRV(SIMACCEL_QUEUE_QUERY, simaccel_queue_query_ioctl, 0),
	DRM_IOCTL_DEF_DRV(SIMACCEL_BO_INFO, simaccel_bo_info_ioctl, 0),
	DRM_IOCTL_DEF_DRV(SIMACCEL_MEM_INFO, simaccel_mem_info_ioctl, 0),
};

/*
 * DRM core's GET_UNIQUE and GET_MAGIC use the file's DRM master, which a
 * file of an accel node never has: Linux 6.12 dereferences it, an oops for
 * any user who can open the node. They mean nothing here: refuse them, as
 * render nodes refuse them.
 */
static bool simaccel_ioctl_masterless(unsigned int cmd)
{
	unsigned int nr = DRM_IOCTL_NR(cmd);

	return nr == DRM_IOCTL_NR(DRM_IOCTL_GET_UNIQUE) ||
	       nr == DRM_IOCTL_NR(DRM_IOCTL_GET_MAGIC);
}

/*
 * DRM_IOCTL_SYNCOBJ_TRANSFER of Linux 6.12 leaks a reference to the source
 * syncobj when its flags are invalid: drm_syncobj_find_fence() takes it
 * before it checks them, so any user could pin kernel memory without bound.
 * The driver serves the ioctl itself, as DRM core does, with the flags
 * checked first.
 */
static int simaccel_syncobj_transfer(struct drm_file *file,
				     const struct drm_syncobj_transfer *args)
{
	struct dma_fence *fence, *found;
	struct dma_fence_chain *chain;
	struct drm_syncobj *dst;
	int ret;

	if (args->pad || args->flags & ~DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT)
		return -EINVAL;
	dst = drm_syncobj_find(file, args->dst_handle);
	if (!dst)
		return -ENOENT;
	ret = drm_syncobj_find_fence(file, args->src_handle, args->src_point,
				     args->flags, &found);
	if (ret)
		goto out;
	if (!args->dst_point) {
		drm_syncobj_replace_fence(dst, found);
		dma_fence_put(found);
		goto out;
	}
	/* a timeline point holds no container of fences */
	fence = dma_fence_unwrap_merge(found);
	dma_fence_put(found);
	chain = fence ? dma_fence_chain_alloc() : NULL;
	if (chain)
		drm_syncobj_add_point(dst, chain, fence, args->dst_point);
	else
		ret = -ENOMEM;
	dma_fence_put(fence);
out:
	drm_syncobj_put(dst);
	return ret;
}

/*
 * DRM core allocates a syncobj for any user without charging its cgroup: a
 * file has at most DRM_SIMACCEL_MAX_SYNCOBJS_PER_FILE. Core gives a new one
 * the lowest free handle, so the file is full when no handle up to the
 * limit is free; a probe under core's table lock finds out.
 */
static bool simaccel_syncobjs_full(struct drm_file *file)
{
	int id;

	idr_preload(GFP_KERNEL);
	spin_lock(&file->syncobj_table_lock);
	id = idr_alloc(&file->syncobj_idr, NULL, 1,
		       DRM_SIMACCEL_MAX_SYNCOBJS_PER_FILE + 1, GFP_NOWAIT);
	if (id > 0)
		idr_remove(&file->syncobj_idr, id);
	spin_unlock(&file->syncobj_table_lock);
	idr_preload_end();
	return id == -ENOSPC;
}

static bool simaccel_ioctl_makes_syncobj(unsigned int cmd)
{
	unsigned int nr = DRM_IOCTL_NR(cmd);

	return nr == DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_CREATE) ||
	       nr == DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE);
}

/*
 * A syncobj is made after the probe, under the file's lock for it, so that
 * threads creating at once do not pass the limit together. Neither call
 * waits for the device or another file while it holds the lock (a fault
 * on its argument holds up only the file's other creations, killably).
 */
static long simaccel_syncobj_make_ioctl(struct file *filp, unsigned int cmd,
					unsigned long arg,
					long (*core)(struct file *, unsigned int,
						     unsigned long))
{
	struct drm_file *file = filp->private_data;
	struct simaccel_file *sfile = to_simaccel_file(file);
	long ret;

	if (mutex_lock_killable(&sfile->syncobj_lock))
		return -EINTR;
	ret = simaccel_syncobjs_full(file) ? -EMFILE : core(filp, cmd, arg);
	mutex_unlock(&sfile->syncobj_lock);
	return ret;
}

/* The argument as drm_ioctl() reads it: the caller's size, zero-filled. */
static long simaccel_transfer_ioctl(struct file *filp, unsigned int cmd,
				    void __user *uarg)
{
	struct drm_file *file = filp->private_data;
	struct drm_syncobj_transfer args = {};
	size_t size = min_t(size_t, _IOC_SIZE(cmd), sizeof(args));

	if (drm_dev_is_unplugged(file->minor->dev))
		return -ENODEV;
	if ((_IOC_DIR(cmd) & _IOC_WRITE) && copy_from_user(&args, uarg, size))
		return -EFAULT;
	return simaccel_syncobj_transfer(file, &args);
}

static bool simaccel_ioctl_is_transfer(unsigned int cmd)
{
	return DRM_IOCTL_NR(cmd) == DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_TRANSFER);
}

/*
 * DRM core keeps each SYNCOBJ_EVENTFD registration until its point signals,
 * which may be never, allocated for any user and charged to no one: it is
 * refused (poll a sync_file of the point instead).
 */
static bool simaccel_ioctl_unbounded(unsigned int cmd)
{
	return DRM_IOCTL_NR(cmd) == DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_EVENTFD);
}

/* -errno for an ioctl the driver refuses before DRM core sees it, or 0. */
static int simaccel_ioctl_refused(unsigned int cmd)
{
	if (simaccel_ioctl_masterless(cmd))
		return -EACCES;
	if (simaccel_ioctl_unbounded(cmd))
		return -EOPNOTSUPP;
	return 0;
}

static long simaccel_ioctl(struct file *filp, unsigned int cmd,
			   unsigned long arg)
{
	int ret = simaccel_ioctl_refused(cmd);

	if (ret)
		return ret;
	if (simaccel_ioctl_is_transfer(cmd))
		return simaccel_transfer_ioctl(filp, cmd, (void __user *)arg);
	if (simaccel_ioctl_makes_syncobj(cmd))
		return simaccel_syncobj_make_ioctl(filp, cmd, arg, drm_ioctl);
	return drm_ioctl(filp, cmd, arg);
}

#ifdef CONFIG_COMPAT
static long simaccel_compat_ioctl(struct file *filp, unsigned int cmd,
				  unsigned long arg)
{
	int ret = simaccel_ioctl_refused(cmd);

	if (ret)
		return ret;
	if (simaccel_ioctl_is_transfer(cmd))
		return simaccel_transfer_ioctl(filp, cmd, compat_ptr(arg));
	if (simaccel_ioctl_makes_syncobj(cmd))
		return simaccel_syncobj_make_ioctl(filp, cmd, arg,
						   drm_compat_ioctl);
	return drm_compat_ioctl(filp, cmd, arg);
}
#endif

/* DRM_ACCEL_FOPS, with the ioctls above refused */
static const struct file_operations simaccel_fops = {
	.owner = THIS_MODULE,
	.open = accel_open,
	.release = drm_release,
	.unlocked_ioctl = simaccel_ioctl,
#ifdef CONFIG_COMPAT
	.compat_ioctl = simaccel_compat_ioctl,
#endif
	.poll = drm_poll,
	.read = drm_read,
	.llseek = noop_llseek,
	.mmap = drm_gem_mmap,
	.fop_flags = FOP_UNSIGNED_OFFSET,
	.show_fdinfo = drm_show_fdinfo,
};

static const struct drm_driver simaccel_drm_driver = {
	.driver_features = DRIVER_COMPUTE_ACCEL | DRIVER_GEM |
			   DRIVER_SYNCOBJ | DRIVER_SYNCOBJ_TIMELINE,
	.fops = &simaccel_fops,
	.open = simaccel_open,
	.postclose = simaccel_postclose,
	.gem_create_object = simaccel_gem_create_object,
	.prime_handle_to_fd = simaccel_prime_handle_to_fd,
	.gem_prime_import = simaccel_prime_import,
	.gem_prime_import_sg_table = simaccel_prime_import_sg_table,
	.show_fdinfo = simaccel_show_fdinfo,
	.ioctls = simaccel_ioctls,
	.num_ioctls = ARRAY_SIZE(simaccel_ioctls),
	.name = DRIVER_NAME,
	.desc = DRIVER_DESC,
	.date = "20261123",
	.major = SIMACCEL_DRIVER_MAJOR,
	.minor = SIMACCEL_DRIVER_MINOR,
	.patchlevel = SIMACCEL_DRIVER_PATCH,
};

static int simaccel_pci_init(struct simaccel_device *sdev)
{
	struct pci_dev *pdev = to_pci(sdev);
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(ACCEL_BAR_REGS), DRIVER_NAME);
	if (ret)
		return ret;
	sdev->regs = pcim_iomap_table(pdev)[ACCEL_BAR_REGS];
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret) {
		drm_err(&sdev->drm, "no usable DMA configuration\n");
		return ret;
	}
	/* a descriptor moves up to 2^64 - 1 bytes: keep DMA runs merged */
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);
	return 0;
}

static int simaccel_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct simaccel_device *sdev;
	int ret;

	sdev = devm_drm_dev_alloc(&pdev->dev, &simaccel_drm_driver,
				  struct simaccel_device, drm);
	if (IS_ERR(sdev))
		return PTR_ERR(sdev);
	pci_set_drvdata(pdev, sdev);
	ret = simaccel_pci_init(sdev);
	if (ret)
		return ret;
	ret = simaccel_hw_init(sdev);
	if (ret)
		return ret;
	ret = simaccel_dma_init(sdev);
	if (ret)
		return ret;
	ret = simaccel_prime_init(sdev);
	if (ret)
		return ret;
	ret = simaccel_gem_init(sdev);
	if (ret)
		return ret;
	ret = simaccel_quota_init(sdev);
	if (ret)
		return ret;
	ret = simaccel_reset_init(sdev);
	if (ret)
		return ret;
	ret = simaccel_hwq_init(sdev);
	if (ret)
		goto err_reset;
	ret = simaccel_irq_init(sdev);
	if (ret)
		goto err_reset;
	ret = simaccel_job_init(sdev);
	if (ret)
		goto err_reset;
	ret = simaccel_sysfs_init(sdev);
	if (ret)
		goto err_reset;
	/*
	 * Config space as set up (bus mastering, MSI-X on), for PCI error
	 * recovery to restore after a link reset. Recent kernels' PCI core
	 * saves it when it adds the device; older ones save it only around
	 * their own resets, and restore nothing without a saved state.
	 */
	pci_save_state(pdev);
	ret = drm_dev_register(&sdev->drm, 0);
	if (ret)
		goto err_reset;
	simaccel_debugfs_init(sdev);
	simaccel_pm_init(sdev);
	drm_info(&sdev->drm, "%llu MiB VRAM, %u queues, hardware %u.%u\n",
		 sdev->vram_size >> 20, sdev->num_queues,
		 sdev->hw_version >> 16, sdev->hw_version & 0xffff);
	return 0;

err_reset:
	/* the rings go with the binding: the device must not reach them */
	simaccel_hw_reset(sdev);
	return ret;
}

static void simaccel_remove(struct pci_dev *pdev)
{
	struct simaccel_device *sdev = pci_get_drvdata(pdev);

	/* the PCI core resumed the device: it stays in D0 from now on */
	simaccel_pm_fini(sdev);
	/*
	 * ioctls and faults under way finish, later ones fail, and every
	 * mapping is zapped
	 */
	drm_dev_unplug(&sdev->drm);
	/* stop the queues and fail their jobs; later jobs fail in run_job */
	simaccel_hwq_kill_all(sdev);
	/* the driver's own reset would program the rings again */
	simaccel_reset_fini(sdev);
	/* other devices' jobs must not reach this VRAM any more either */
	simaccel_prime_revoke_importers(sdev);
	/* stop all DMA before the device loses its driver and its rings */
	simaccel_hw_reset(sdev);
	/* buffers of files still open keep their memory, not its mappings */
	simaccel_dma_revoke_all(sdev);
}

static const struct pci_device_id simaccel_pci_ids[] = {
	{ PCI_DEVICE(ACCEL_PCI_VENDOR_ID, ACCEL_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, simaccel_pci_ids);

static struct pci_driver simaccel_pci_driver = {
	.name = DRIVER_NAME,
	.id_table = simaccel_pci_ids,
	.probe = simaccel_probe,
	.remove = simaccel_remove,
	.driver.pm = pm_ptr(&simaccel_pm_ops),
	.err_handler = &simaccel_err_handlers,
};

struct workqueue_struct *simaccel_wq;
struct workqueue_struct *simaccel_drain_wq;

static int __init simaccel_init(void)
{
	int ret = -ENOMEM;

	simaccel_wq = alloc_workqueue(DRIVER_NAME, WQ_UNBOUND, 0);
	if (!simaccel_wq)
		return ret;
	simaccel_drain_wq = alloc_workqueue(DRIVER_NAME "-drain", WQ_UNBOUND, 0);
	if (simaccel_drain_wq)
		ret = pci_register_driver(&simaccel_pci_driver);
	if (!ret)
		return 0;
	if (simaccel_drain_wq)
		destroy_workqueue(simaccel_drain_wq);
	destroy_workqueue(simaccel_wq);
	return ret;
}
module_init(simaccel_init);

static void __exit simaccel_exit(void)
{
	pci_unregister_driver(&simaccel_pci_driver);
	/* a drain's last put may queue a job's release: drains go first */
	destroy_workqueue(simaccel_drain_wq);
	destroy_workqueue(simaccel_wq);
	/* the frees of users' fences, which dropped their module references */
	rcu_barrier();
}
module_exit(simaccel_exit);

MODULE_DESCRIPTION(DRIVER_DESC);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(DMA_BUF);
MODULE_VERSION(__stringify(SIMACCEL_DRIVER_MAJOR) "."
	       __stringify(SIMACCEL_DRIVER_MINOR) "."
	       __stringify(SIMACCEL_DRIVER_PATCH));
