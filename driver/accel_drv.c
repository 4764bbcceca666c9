// SPDX-License-Identifier: GPL-2.0
/*
 * accel: PCI probe and removal, and the /dev/accelN character device.
 *
 * The device structure is reference counted: the PCI binding holds one
 * reference and every open file another, so a file opened before an unbind
 * stays valid. Once the PCI device is removed its ioctls fail with -ENODEV.
 */
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "accel_drv.h"

static DEFINE_IDA(accel_ida);

static void accel_device_release(struct kref *ref)
{
	struct accel_device *adev = container_of(ref, struct accel_device, ref);

	accel_mem_fini(adev);
	ida_free(&accel_ida, adev->index);
	kfree(adev);
}

void accel_device_put(struct accel_device *adev)
{
	kref_put(&adev->ref, accel_device_release);
}

static int accel_open(struct inode *inode, struct file *file)
{
	struct accel_device *adev = container_of(file->private_data,
						 struct accel_device, misc);
	struct accel_ctx *ctx;

	/* misc_open() holds misc_mtx, so the device is still registered. */
	ctx = accel_ctx_create(adev, file->f_mapping);
	if (!ctx)
		return -ENOMEM;
	file->private_data = ctx;
	return 0;
}

static int accel_release(struct inode *inode, struct file *file)
{
	accel_ctx_destroy(file->private_data);
	return 0;
}

static const struct file_operations accel_fops = {
	.owner = THIS_MODULE,
	.open = accel_open,
	.release = accel_release,
	.unlocked_ioctl = accel_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = accel_mmap,
	.poll = accel_poll,
	.llseek = noop_llseek,
};

/* The context of @file if it is an open /dev/accelN, else NULL. */
struct accel_ctx *accel_file_ctx(struct file *file)
{
	return file->f_op == &accel_fops ? file->private_data : NULL;
}

static struct accel_device *accel_device_alloc(struct pci_dev *pdev)
{
	struct accel_device *adev;

	adev = kzalloc(sizeof(*adev), GFP_KERNEL);
	if (!adev)
		return NULL;
	adev->index = ida_alloc(&accel_ida, GFP_KERNEL);
	if (adev->index < 0) {
		kfree(adev);
		return NULL;
	}
	kref_init(&adev->ref);
	init_rwsem(&adev->remove_lock);
	INIT_LIST_HEAD(&adev->ctxs);
	mutex_init(&adev->ctxs_lock);
	init_waitqueue_head(&adev->p2p_wq);
	adev->pdev = pdev;
	snprintf(adev->name, sizeof(adev->name), "accel%d", adev->index);
	return adev;
}

static int accel_pci_init(struct accel_device *adev)
{
	struct pci_dev *pdev = adev->pdev;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(ACCEL_BAR_REGS), DRIVER_NAME);
	if (ret)
		return ret;
	ret = pci_request_region(pdev, ACCEL_BAR_VRAM, DRIVER_NAME);
	if (ret)
		return ret;
	adev->regs = pcim_iomap_table(pdev)[ACCEL_BAR_REGS];
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret) {
		dev_err(&pdev->dev, "no usable DMA configuration\n");
		return ret;
	}
	/* a descriptor moves up to 2^64 - 1 bytes: keep DMA runs merged */
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);
	return 0;
}

static int accel_misc_register(struct accel_device *adev)
{
	adev->misc.minor = MISC_DYNAMIC_MINOR;
	adev->misc.name = adev->name;
	adev->misc.fops = &accel_fops;
	adev->misc.parent = &adev->pdev->dev;
	adev->misc.groups = accel_groups;
	return misc_register(&adev->misc);
}

static int accel_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct accel_device *adev;
	int ret;

	adev = accel_device_alloc(pdev);
	if (!adev)
		return -ENOMEM;
	ret = accel_pci_init(adev);
	if (ret)
		goto err_put;
	ret = accel_hw_init(adev);
	if (ret)
		goto err_put;
	ret = accel_mem_init(adev);
	if (ret)
		goto err_reset;
	ret = accel_engines_init(adev);
	if (ret)
		goto err_reset;
	ret = accel_irq_init(adev);
	if (ret)
		goto err_engines;
	pci_set_drvdata(pdev, adev);
	ret = accel_misc_register(adev);
	if (ret)
		goto err_irq;
	accel_debugfs_init(adev);

	dev_info(&pdev->dev, "%s: %llu MiB VRAM, %u queues, hardware %u.%u\n",
		 adev->name, adev->vram_size >> 20, adev->num_queues,
		 adev->hw_version >> 16, adev->hw_version & 0xffff);
	return 0;

err_irq:
	accel_irq_fini(adev);
err_engines:
	accel_hw_reset(adev);
	accel_engines_fini(adev);
err_reset:
	accel_hw_reset(adev);
err_put:
	accel_device_put(adev);
	return ret;
}

static void accel_remove(struct pci_dev *pdev)
{
	struct accel_device *adev = pci_get_drvdata(pdev);

	accel_debugfs_fini(adev);
	misc_deregister(&adev->misc);
	/* Waits for ioctls in progress; later ones fail with -ENODEV. */
	down_write(&adev->remove_lock);
	adev->removed = true;
	up_write(&adev->remove_lock);
	/* Queued work of other devices may still target our BAR. */
	wait_event(adev->p2p_wq, !atomic_read(&adev->p2p_users));
	/* Stop all DMA before the device loses its driver. */
	accel_hw_reset(adev);
	accel_irq_fini(adev);
	accel_engines_fini(adev);
	accel_mem_revoke_mappings(adev);
	accel_mem_unmap_all(adev);
	adev->pdev = NULL;
	accel_device_put(adev);
}

static const struct pci_device_id accel_pci_ids[] = {
	{ PCI_DEVICE(ACCEL_PCI_VENDOR_ID, ACCEL_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, accel_pci_ids);

static struct pci_driver accel_pci_driver = {
	.name = DRIVER_NAME,
	.id_table = accel_pci_ids,
	.probe = accel_probe,
	.remove = accel_remove,
};

static int __init accel_module_init(void)
{
	int ret;

	accel_debugfs_register();
	ret = pci_register_driver(&accel_pci_driver);
	if (ret)
		accel_debugfs_unregister();
	return ret;
}
module_init(accel_module_init);

static void __exit accel_module_exit(void)
{
	pci_unregister_driver(&accel_pci_driver);
	accel_debugfs_unregister();
}
module_exit(accel_module_exit);

MODULE_DESCRIPTION("Driver for the accel PCIe accelerator");
MODULE_LICENSE("GPL");
MODULE_VERSION(__stringify(ACCEL_DRIVER_MAJOR) "."
	       __stringify(ACCEL_DRIVER_MINOR) "."
	       __stringify(ACCEL_DRIVER_PATCH));
