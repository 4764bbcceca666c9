// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: buffers as GEM objects, and the VRAM range allocator.
 *
 * VRAM ranges come from a drm_mm, not a drm_buddy: a DMA descriptor names
 * one contiguous VRAM range, and drm_mm hands out exactly the size and
 * alignment asked for, where a buddy allocator rounds to powers of two and
 * would have to trim every contiguous allocation. drm_mm comes with drm.ko.
 *
 * A VRAM buffer is cleared before its handle exists, so that no one reads
 * what the range held for an earlier owner. Until jobs run on the device
 * (drm_sched, to come), the CPU clears it through the BAR.
 *
 * Mappable buffers are mapped write-combined through BAR2, a page at a time
 * at fault time, between drm_dev_enter() and drm_dev_exit(): removal
 * (drm_dev_unplug()) zaps every mapping of the device's files, and later
 * faults raise SIGBUS.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <linux/io.h>
#include <linux/mm.h>

#include "simaccel_gem.h"

static void simaccel_vram_fini(struct drm_device *drm, void *unused)
{
	drm_mm_takedown(&to_simaccel(drm)->vram_mm);
}

/* The allocator and the kernel's write-combined view of VRAM. */
int simaccel_vram_init(struct simaccel_device *sdev)
{
	struct pci_dev *pdev = to_pci(sdev);
	int ret;

	ret = drmm_mutex_init(&sdev->drm, &sdev->vram_lock);
	if (ret)
		return ret;
	drm_mm_init(&sdev->vram_mm, 0, sdev->vram_size);
	ret = drmm_add_action_or_reset(&sdev->drm, simaccel_vram_fini, NULL);
	if (ret)
		return ret;
	sdev->vram = devm_ioremap_wc(&pdev->dev, sdev->vram_bar,
				     sdev->vram_size);
	return sdev->vram ? 0 : -ENOMEM;
}

static void simaccel_bo_free(struct drm_gem_object *obj)
{
	struct simaccel_device *sdev = to_simaccel(obj->dev);
	struct simaccel_bo *bo = to_simaccel_bo(obj);

	mutex_lock(&sdev->vram_lock);
	drm_mm_remove_node(&bo->node);
	mutex_unlock(&sdev->vram_lock);
	drm_gem_object_release(obj);
	kfree(bo);
}

static vm_fault_t simaccel_bo_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct drm_gem_object *obj = vma->vm_private_data;
	struct simaccel_device *sdev = to_simaccel(obj->dev);
	struct simaccel_bo *bo = to_simaccel_bo(obj);
	unsigned long page = vmf->pgoff - drm_vma_node_start(&obj->vma_node);
	vm_fault_t ret;
	int idx;

	if (page >= obj->size >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	if (!drm_dev_enter(obj->dev, &idx))
		return VM_FAULT_SIGBUS;
	ret = vmf_insert_pfn(vma, vmf->address,
			     PHYS_PFN(sdev->vram_bar + bo->node.start) + page);
	drm_dev_exit(idx);
	return ret;
}

static const struct vm_operations_struct simaccel_bo_vm_ops = {
	.fault = simaccel_bo_fault,
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static int simaccel_bo_mmap(struct drm_gem_object *obj,
			    struct vm_area_struct *vma)
{
	if (to_simaccel_bo(obj)->kind != DRM_SIMACCEL_BO_VRAM_MAPPABLE)
		return -EACCES;
	/* PFN mappings cannot be copied on write (vmf_insert_pfn() BUGs) */
	if (is_cow_mapping(vma->vm_flags))
		return -EINVAL;
	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot =
		pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
	vma->vm_ops = &simaccel_bo_vm_ops;
	return 0;
}

static const struct drm_gem_object_funcs simaccel_bo_funcs = {
	.free = simaccel_bo_free,
	.mmap = simaccel_bo_mmap,
	.vm_ops = &simaccel_bo_vm_ops,
};

static int simaccel_bo_check(struct simaccel_device *sdev,
			     const struct drm_simaccel_bo_create *args)
{
	if (args->flags || args->pad)
		return -EINVAL;
	if (args->kind != DRM_SIMACCEL_BO_VRAM &&
	    args->kind != DRM_SIMACCEL_BO_VRAM_MAPPABLE)
		return -EINVAL;
	if (!args->size || args->size > sdev->vram_size)
		return -EINVAL;
	if (args->align && (!is_power_of_2(args->align) ||
			    args->align > DRM_SIMACCEL_BO_MAX_ALIGN))
		return -EINVAL;
	return 0;
}

/* A VRAM range of @size bytes at @align, cleared; -ENOSPC if none is free. */
static int simaccel_vram_take(struct simaccel_device *sdev,
			      struct drm_mm_node *node, u64 size, u64 align)
{
	int ret;

	mutex_lock(&sdev->vram_lock);
	ret = drm_mm_insert_node_generic(&sdev->vram_mm, node, size, align, 0,
					 DRM_MM_INSERT_BEST);
	mutex_unlock(&sdev->vram_lock);
	if (ret)
		return ret;
	memset_io(sdev->vram + node->start, 0, size);
	return 0;
}

static struct simaccel_bo *simaccel_bo_new(struct simaccel_device *sdev,
					   const struct drm_simaccel_bo_create *args)
{
	u64 align = max_t(u64, args->align, DRM_SIMACCEL_BO_MIN_ALIGN);
	u64 size = round_up(args->size, PAGE_SIZE);
	struct simaccel_bo *bo;
	int ret;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->kind = args->kind;
	bo->base.funcs = &simaccel_bo_funcs;
	drm_gem_private_object_init(&sdev->drm, &bo->base, size);
	/* whole pages, so that a mapping shows nothing of a neighbour */
	ret = simaccel_vram_take(sdev, &bo->node, size,
				 max_t(u64, align, PAGE_SIZE));
	if (ret) {
		drm_gem_object_release(&bo->base);
		kfree(bo);
		return ERR_PTR(ret);
	}
	if (bo->kind == DRM_SIMACCEL_BO_VRAM_MAPPABLE) {
		ret = drm_gem_create_mmap_offset(&bo->base);
		if (ret) {
			drm_gem_object_put(&bo->base);
			return ERR_PTR(ret);
		}
	}
	return bo;
}

/*
 * DRM fdinfo (Documentation/gpu/drm-usage-stats.rst): the VRAM this file's
 * handles hold. A buffer is resident from its creation; none is shared
 * until buffers can be exported.
 */
void simaccel_gem_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct drm_memory_stats vram = { 0 };
	struct drm_gem_object *obj;
	int id;

	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, obj, id) {
		if (obj->handle_count > 1)
			vram.shared += obj->size;
		else
			vram.private += obj->size;
		vram.resident += obj->size;
	}
	spin_unlock(&file->table_lock);
	drm_print_memory_stats(p, &vram, DRM_GEM_OBJECT_RESIDENT, "vram");
}

int simaccel_bo_create_ioctl(struct drm_device *drm, void *data,
			     struct drm_file *file)
{
	struct simaccel_device *sdev = to_simaccel(drm);
	struct drm_simaccel_bo_create *args = data;
	struct simaccel_bo *bo;
	u32 handle;
	int ret, idx;

	ret = simaccel_bo_check(sdev, args);
	if (ret)
		return ret;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	bo = simaccel_bo_new(sdev, args);
	drm_dev_exit(idx);
	if (IS_ERR(bo))
		return PTR_ERR(bo);
	ret = drm_gem_handle_create(file, &bo->base, &handle);
	if (!ret) {
		args->handle = handle;
		args->dev_addr = DRM_SIMACCEL_VRAM_BASE + bo->node.start;
		args->mmap_offset = bo->kind == DRM_SIMACCEL_BO_VRAM_MAPPABLE ?
				    drm_vma_node_offset_addr(&bo->base.vma_node) : 0;
	}
	/* the handle holds the buffer now, or nothing does */
	drm_gem_object_put(&bo->base);
	simaccel_dbg(sdev, IOCTL, "bo_create kind %u size %llu: %d\n",
		     args->kind, args->size, ret);
	return ret;
}
