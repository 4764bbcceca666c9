// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: buffers as GEM objects, their device addresses, and the VRAM
 * range allocator.
 *
 * VRAM ranges come from a drm_mm, not a drm_buddy: a DMA descriptor names
 * one contiguous VRAM range, and drm_mm hands out exactly the size and
 * alignment asked for, where a buddy allocator rounds to powers of two and
 * would have to trim every contiguous allocation. drm_mm comes with drm.ko.
 * A second drm_mm hands out the device addresses of system memory.
 *
 * A VRAM buffer is cleared by the device before anyone can use it: the
 * clearing job's fence is a dependency of every job that names the buffer,
 * and its mapping waits for it. HOST buffers are shmem (zeroed, charged to
 * the creator's memory cgroup), pinned and mapped for DMA at creation.
 * Their shmem files live on a tmpfs of the device's own, mounted with
 * huge=within_size as i915's gemfs is: the pages are then mostly 2 MiB
 * folios, and since every contiguous DMA segment is one descriptor, a
 * 64 MiB buffer is a few dozen descriptors instead of 16384, which cost
 * copy bandwidth (docs/CHANGELOG.md, 2026-11-24).
 *
 * Device addresses resolve per file: each file keeps a maple tree of the
 * ranges of the buffers it holds handles to, maintained by the GEM open and
 * close hooks (a buffer can have several handles in a file, through
 * GEM_OPEN). A lookup takes a reference under the tree's lock, so that a
 * concurrent GEM_CLOSE cannot free the buffer under it.
 *
 * Mappable VRAM is mapped write-combined through BAR2, a page at a time at
 * fault time, between drm_dev_enter() and drm_dev_exit(): removal
 * (drm_dev_unplug()) zaps every mapping of the device's files, and later
 * faults raise SIGBUS. So does the device's runtime suspend, since its
 * BARs do not decode in D3hot: a fault resumes it, and the page is mapped
 * while it is in D0 (simaccel_pm.c).
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/shmem_fs.h>

#include "simaccel_gem.h"
#include "simaccel_job.h"
#include "simaccel_pm.h"
#include "simaccel_prime.h"
#include "simaccel_quota.h"
#include "simaccel_trace.h"

/* Device addresses of system memory: 16 TiB of them. */
#define SIMACCEL_HOST_SPACE	BIT_ULL(44)

/* A buffer's range in a file's address tree, and its handles there. */
struct simaccel_addr {
	struct simaccel_bo *bo;
	unsigned int handles;
};

static void simaccel_gem_fini(struct drm_device *drm, void *unused)
{
	struct simaccel_device *sdev = to_simaccel(drm);

	drm_mm_takedown(&sdev->vram_mm);
	drm_mm_takedown(&sdev->host_mm);
	/* after the last buffer: each shmem file held the mount */
	if (sdev->hostfs)
		kern_unmount(sdev->hostfs);
}

/* Where the kernel has no transparent huge pages, HOST buffers do without. */
static void simaccel_hostfs_mount(struct simaccel_device *sdev)
{
	char opts[] = "huge=within_size";
	struct file_system_type *type;
	struct vfsmount *mnt;

	if (!IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE))
		return;
	type = get_fs_type("tmpfs");
	if (!type)
		return;
	mnt = vfs_kern_mount(type, SB_KERNMOUNT, type->name, opts);
	if (IS_ERR(mnt)) {
		drm_info(&sdev->drm, "HOST buffers without huge pages: %pe\n",
			 mnt);
		return;
	}
	sdev->hostfs = mnt;
}

/* The allocators and the kernel's write-combined view of VRAM. */
int simaccel_gem_init(struct simaccel_device *sdev)
{
	struct pci_dev *pdev = to_pci(sdev);
	int ret;

	ret = drmm_mutex_init(&sdev->drm, &sdev->addr_lock);
	if (ret)
		return ret;
	drm_mm_init(&sdev->vram_mm, 0, sdev->vram_size);
	drm_mm_init(&sdev->host_mm, 0, SIMACCEL_HOST_SPACE);
	simaccel_hostfs_mount(sdev);
	ret = drmm_add_action_or_reset(&sdev->drm, simaccel_gem_fini, NULL);
	if (ret)
		return ret;
	sdev->vram = devm_ioremap_wc(&pdev->dev, sdev->vram_bar,
				     sdev->vram_size);
	return sdev->vram ? 0 : -ENOMEM;
}

void simaccel_gem_file_init(struct simaccel_file *sfile)
{
	mt_init(&sfile->addrs);
}

/* After DRM closed every handle of the file, the tree is empty. */
void simaccel_gem_file_fini(struct simaccel_file *sfile)
{
	drm_WARN_ON(&sfile->sdev->drm, !mtree_empty(&sfile->addrs));
	mtree_destroy(&sfile->addrs);
}

static int simaccel_addr_take(struct simaccel_device *sdev,
			      struct drm_mm *mm, struct drm_mm_node *node,
			      u64 size, u64 align)
{
	int ret;

	mutex_lock(&sdev->addr_lock);
	ret = drm_mm_insert_node_generic(mm, node, size, align, 0,
					 DRM_MM_INSERT_BEST);
	mutex_unlock(&sdev->addr_lock);
	if (!ret && mm == &sdev->vram_mm)
		atomic64_add(size, &sdev->vram_used);
	return ret;
}

static void simaccel_addr_release(struct simaccel_device *sdev,
				  struct drm_mm_node *node)
{
	if (!drm_mm_node_allocated(node))
		return;
	if (node->mm == &sdev->vram_mm)
		atomic64_sub(node->size, &sdev->vram_used);
	mutex_lock(&sdev->addr_lock);
	drm_mm_remove_node(node);
	mutex_unlock(&sdev->addr_lock);
}

/* A device address of system memory for @bo's @size bytes. */
int simaccel_gem_take_host_range(struct simaccel_device *sdev,
				 struct simaccel_bo *bo, u64 size)
{
	int ret = simaccel_addr_take(sdev, &sdev->host_mm, &bo->node,
				     round_up(size, PAGE_SIZE), PAGE_SIZE);

	if (ret)
		return ret;
	bo->dev_addr = DRM_SIMACCEL_HOST_BASE + bo->node.start;
	bo->size = size;
	return 0;
}

/* @bo is complete, with its device address: the trace event says so. */
void simaccel_gem_created(struct simaccel_device *sdev, struct simaccel_bo *bo)
{
	trace_simaccel_bo_create(dev_name(sdev->drm.dev), bo->kind,
				 bo->dev_addr, bo->size);
}

/* Every buffer's free: its device address, VRAM included, goes back. */
void simaccel_gem_release_range(struct simaccel_device *sdev,
				struct simaccel_bo *bo)
{
	if (drm_mm_node_allocated(&bo->node))
		trace_simaccel_bo_destroy(dev_name(sdev->drm.dev), bo->kind,
					  bo->dev_addr, bo->size);
	simaccel_addr_release(sdev, &bo->node);
}

/* GEM open hook: the file got a handle; its range resolves in the file. */
int simaccel_bo_open(struct drm_gem_object *obj, struct drm_file *file)
{
	struct simaccel_file *sfile = to_simaccel_file(file);
	struct simaccel_bo *bo = to_simaccel_bo(obj);
	struct simaccel_addr *entry;
	int ret = 0;

	mutex_lock(&sfile->lock);
	entry = mtree_load(&sfile->addrs, bo->dev_addr);
	if (entry) {
		entry->handles++;
		goto out;
	}
	ret = -ENOMEM;
	entry = kmalloc(sizeof(*entry), GFP_KERNEL_ACCOUNT);
	if (!entry)
		goto out;
	entry->bo = bo;
	entry->handles = 1;
	ret = mtree_store_range(&sfile->addrs, bo->dev_addr,
				bo->dev_addr + bo->size - 1, entry,
				GFP_KERNEL_ACCOUNT);
	if (ret)
		kfree(entry);
out:
	mutex_unlock(&sfile->lock);
	return ret;
}

/* GEM close hook: one handle of the file is going. */
void simaccel_bo_close(struct drm_gem_object *obj, struct drm_file *file)
{
	struct simaccel_file *sfile = to_simaccel_file(file);
	struct simaccel_bo *bo = to_simaccel_bo(obj);
	struct simaccel_addr *entry;

	mutex_lock(&sfile->lock);
	entry = mtree_load(&sfile->addrs, bo->dev_addr);
	if (!drm_WARN_ON(obj->dev, !entry || entry->bo != bo) &&
	    !--entry->handles) {
		mtree_erase(&sfile->addrs, bo->dev_addr);
		kfree(entry);
	}
	mutex_unlock(&sfile->lock);
}

/**
 * simaccel_gem_resolve - the buffer of this file that holds a range
 * @sfile: the file
 * @addr: device address of the range
 * @size: its bytes, at least 1
 * @span: out: the buffer, referenced, and the offset in it
 *
 * Return: 0, or -ENOENT when no buffer of the file holds all of the range.
 */
int simaccel_gem_resolve(struct simaccel_file *sfile, u64 addr, u64 size,
			 struct simaccel_span *span)
{
	MA_STATE(mas, &sfile->addrs, addr, addr);
	struct simaccel_addr *entry;
	int ret = -ENOENT;

	mtree_lock(&sfile->addrs);
	entry = mas_walk(&mas);
	if (entry) {
		span->bo = entry->bo;
		span->offset = addr - entry->bo->dev_addr;
		if (size <= span->bo->size - span->offset) {
			drm_gem_object_get(&span->bo->base.base);
			ret = 0;
		}
	}
	mtree_unlock(&sfile->addrs);
	return ret;
}

static void simaccel_vram_bo_free(struct drm_gem_object *obj)
{
	struct simaccel_bo *bo = to_simaccel_bo(obj);

	/* the clearing's jobs held the buffer: they are over */
	dma_fence_put(bo->clear);
	simaccel_gem_release_range(to_simaccel(obj->dev), bo);
	simaccel_quota_uncharge(bo->quota, bo->size);
	drm_gem_object_release(obj);
	kfree(bo);
}

struct simaccel_fence_waiter {
	struct dma_fence_cb cb;
	struct completion done;
};

static void simaccel_fence_waiter_wake(struct dma_fence *fence,
				       struct dma_fence_cb *cb)
{
	complete(&container_of(cb, struct simaccel_fence_waiter, cb)->done);
}

/* dma_fence_wait() has no killable form: 0 once signalled, or -ERESTARTSYS. */
static int simaccel_fence_wait_killable(struct dma_fence *fence)
{
	struct simaccel_fence_waiter w;
	int ret = 0;

	init_completion(&w.done);
	if (dma_fence_add_callback(fence, &w.cb, simaccel_fence_waiter_wake))
		return 0;	/* signalled already */
	if (wait_for_completion_killable(&w.done))
		ret = -ERESTARTSYS;
	/* under the fence's lock, which the callback runs under: not running */
	dma_fence_remove_callback(fence, &w.cb);
	return ret;
}

/*
 * A fault's wait for @clear. Any signal ends a user-mode fault's (it is
 * taken again after the handler); only a fatal one ends a fault the kernel
 * takes for the process (a system call's copy, a futex), which the kernel
 * takes again at once with the signal still pending: an interruptible wait
 * there would spin until the clearing ends.
 */
static int simaccel_clear_wait(struct vm_fault *vmf, struct dma_fence *clear)
{
	if ((vmf->flags & FAULT_FLAG_USER) &&
	    (vmf->flags & FAULT_FLAG_ALLOW_RETRY))
		return dma_fence_wait(clear, true);
	return simaccel_fence_wait_killable(clear);
}

/*
 * The device clears a VRAM buffer before anyone can read it: a fault waits
 * for that. The clearing may be queued behind minutes of work, so where
 * the fault may be retried it waits without the mmap lock (other threads
 * of the process map and unmap meanwhile, and readers of its address space
 * such as ps do not queue behind it), and is retried, as TTM's faults do.
 * Returns 0 once cleared, or what the fault returns now.
 */
static vm_fault_t simaccel_vram_bo_fault_wait(struct vm_fault *vmf,
					      struct simaccel_bo *bo)
{
	struct dma_fence *clear = bo->clear;
	long err;

	if (!clear || dma_fence_is_signaled(clear))
		return clear && clear->error ? VM_FAULT_SIGBUS : 0;
	if (vmf->flags & FAULT_FLAG_ALLOW_RETRY) {
		if (vmf->flags & FAULT_FLAG_RETRY_NOWAIT)
			return VM_FAULT_RETRY;
		dma_fence_get(clear);
		release_fault_lock(vmf);
		/* a signal ends the wait; the retry sees it */
		simaccel_clear_wait(vmf, clear);
		dma_fence_put(clear);
		return VM_FAULT_RETRY;
	}
	/*
	 * One that cannot be retried is the kernel's, for the process (a
	 * futex's fixup_user_fault()): a kill fails it, and the dying call
	 * gets EFAULT.
	 */
	err = simaccel_clear_wait(vmf, clear);
	return err || clear->error ? VM_FAULT_SIGBUS : 0;
}

static vm_fault_t simaccel_vram_bo_fault(struct vm_fault *vmf)
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
	ret = simaccel_vram_bo_fault_wait(vmf, bo);
	if (ret)
		return ret;
	if (!drm_dev_enter(obj->dev, &idx))
		return VM_FAULT_SIGBUS;
	/* a suspend after the put zaps the page again */
	if (simaccel_pm_get(sdev)) {
		drm_dev_exit(idx);
		return VM_FAULT_SIGBUS;
	}
	ret = vmf_insert_pfn(vma, vmf->address,
			     PHYS_PFN(sdev->vram_bar + bo->node.start) + page);
	simaccel_pm_put(sdev);
	drm_dev_exit(idx);
	return ret;
}

static const struct vm_operations_struct simaccel_vram_bo_vm_ops = {
	.fault = simaccel_vram_bo_fault,
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static int simaccel_vram_bo_mmap(struct drm_gem_object *obj,
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
	vma->vm_ops = &simaccel_vram_bo_vm_ops;
	return 0;
}

static const struct drm_gem_object_funcs simaccel_vram_bo_funcs = {
	.free = simaccel_vram_bo_free,
	.open = simaccel_bo_open,
	.close = simaccel_bo_close,
	.export = simaccel_prime_export,
	.mmap = simaccel_vram_bo_mmap,
	.vm_ops = &simaccel_vram_bo_vm_ops,
};

/* The shmem helper's DMA mapping of a HOST buffer, undone. */
static void simaccel_host_bo_unmap(struct simaccel_dma_map *map)
{
	struct simaccel_bo *bo = container_of(map, struct simaccel_bo, dma);
	struct drm_gem_shmem_object *shmem = &bo->base;

	dma_resv_lock(shmem->base.resv, NULL);
	dma_unmap_sgtable(shmem->base.dev->dev, shmem->sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(shmem->sgt);
	kfree(shmem->sgt);
	shmem->sgt = NULL;
	bo->sgt = NULL;
	dma_resv_unlock(shmem->base.resv);
}

static void simaccel_host_bo_free(struct drm_gem_object *obj)
{
	struct simaccel_device *sdev = to_simaccel(obj->dev);
	struct simaccel_bo *bo = to_simaccel_bo(obj);

	simaccel_gem_release_range(sdev, bo);
	if (bo->dma.unmap) {
		atomic64_sub(obj->size, &sdev->host_pinned);
		simaccel_dma_untrack(sdev, &bo->dma);
	}
	/* unpins and frees the pages (unmapped above), and the buffer */
	drm_gem_shmem_free(&bo->base);
}

static const struct drm_gem_object_funcs simaccel_host_bo_funcs = {
	.free = simaccel_host_bo_free,
	.open = simaccel_bo_open,
	.close = simaccel_bo_close,
	.export = simaccel_prime_export,
	.print_info = drm_gem_shmem_object_print_info,
	.pin = drm_gem_shmem_object_pin,
	.unpin = drm_gem_shmem_object_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = drm_gem_shmem_object_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = drm_gem_shmem_object_mmap,
	.vm_ops = &drm_gem_shmem_vm_ops,
};

/* drm_driver.gem_create_object: drm_gem_shmem_create() allocates ours. */
struct drm_gem_object *simaccel_gem_create_object(struct drm_device *drm,
						  size_t size)
{
	struct simaccel_bo *bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);

	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->kind = DRM_SIMACCEL_BO_HOST;
	bo->base.base.funcs = &simaccel_host_bo_funcs;
	return &bo->base.base;
}

static void simaccel_userptr_bo_free(struct drm_gem_object *obj)
{
	struct simaccel_device *sdev = to_simaccel(obj->dev);
	struct simaccel_bo *bo = to_simaccel_bo(obj);

	simaccel_gem_release_range(sdev, bo);
	simaccel_unpin(bo->pin);
	drm_gem_object_release(obj);
	kfree(bo);
}

static const struct drm_gem_object_funcs simaccel_userptr_bo_funcs = {
	.free = simaccel_userptr_bo_free,
	.open = simaccel_bo_open,
	.close = simaccel_bo_close,
	.export = simaccel_prime_export,
};

static int simaccel_bo_check(struct simaccel_device *sdev,
			     const struct drm_simaccel_bo_create *args)
{
	if (args->flags || args->pad)
		return -EINVAL;
	if (args->align && (!is_power_of_2(args->align) ||
			    args->align > DRM_SIMACCEL_BO_MAX_ALIGN))
		return -EINVAL;
	switch (args->kind) {
	case DRM_SIMACCEL_BO_VRAM:
	case DRM_SIMACCEL_BO_VRAM_MAPPABLE:
		return args->size && args->size <= sdev->vram_size ? 0 : -EINVAL;
	case DRM_SIMACCEL_BO_HOST:
		return args->size && args->size <= totalram_pages() << PAGE_SHIFT ?
		       0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

static struct simaccel_bo *simaccel_vram_bo_new(struct simaccel_device *sdev,
						u64 size, u64 align, u32 kind,
						struct simaccel_usage *usage)
{
	struct simaccel_quota *quota;
	struct simaccel_bo *bo;
	struct dma_fence *clear;
	int ret;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->kind = kind;
	bo->base.base.funcs = &simaccel_vram_bo_funcs;
	drm_gem_private_object_init(&sdev->drm, &bo->base.base, size);
	quota = simaccel_quota_charge(sdev, size);
	if (IS_ERR(quota)) {
		ret = PTR_ERR(quota);
		goto err_put;
	}
	bo->quota = quota;
	bo->size = size;
	/* whole pages, so that a mapping shows nothing of a neighbour */
	ret = simaccel_addr_take(sdev, &sdev->vram_mm, &bo->node, size,
				 max_t(u64, align, PAGE_SIZE));
	if (ret)
		goto err_put;
	bo->dev_addr = DRM_SIMACCEL_VRAM_BASE + bo->node.start;
	if (kind == DRM_SIMACCEL_BO_VRAM_MAPPABLE) {
		ret = drm_gem_create_mmap_offset(&bo->base.base);
		if (ret)
			goto err_put;
	}
	simaccel_gem_created(sdev, bo);
	clear = simaccel_job_clear_vram(sdev, bo, usage);
	if (IS_ERR(clear)) {
		ret = PTR_ERR(clear);
		goto err_put;
	}
	bo->clear = clear;
	return bo;

err_put:
	drm_gem_object_put(&bo->base.base);
	return ERR_PTR(ret);
}

/*
 * drm_gem_shmem_create() (6.12 has no variant that takes a mount) made the
 * buffer's file on the kernel's shmem mount; before it has any page, it is
 * replaced by one on @sdev's tmpfs, with the same allocation flags.
 */
static int simaccel_host_bo_move_to_hostfs(struct simaccel_device *sdev,
					   struct drm_gem_object *obj)
{
	struct file *filp;

	if (!sdev->hostfs)
		return 0;
	filp = shmem_file_setup_with_mnt(sdev->hostfs, "simaccel host",
					 obj->size, VM_NORESERVE);
	if (IS_ERR(filp))
		return PTR_ERR(filp);
	mapping_set_gfp_mask(filp->f_mapping,
			     mapping_gfp_mask(obj->filp->f_mapping));
	fput(obj->filp);
	obj->filp = filp;
	return 0;
}

static struct simaccel_bo *simaccel_host_bo_new(struct simaccel_device *sdev,
						u64 size)
{
	struct drm_gem_shmem_object *shmem;
	struct simaccel_bo *bo;
	int ret;

	shmem = drm_gem_shmem_create(&sdev->drm, size);
	if (IS_ERR(shmem))
		return ERR_CAST(shmem);
	bo = to_simaccel_bo(&shmem->base);
	ret = simaccel_host_bo_move_to_hostfs(sdev, &shmem->base);
	if (ret)
		goto err_put;
	bo->sgt = drm_gem_shmem_get_pages_sgt(shmem);
	if (IS_ERR(bo->sgt)) {
		ret = PTR_ERR(bo->sgt);
		bo->sgt = NULL;
		goto err_put;
	}
	simaccel_dma_track(sdev, &bo->dma, simaccel_host_bo_unmap);
	atomic64_add(shmem->base.size, &sdev->host_pinned);
	ret = simaccel_gem_take_host_range(sdev, bo, size);
	if (ret)
		goto err_put;
	simaccel_gem_created(sdev, bo);
	return bo;

err_put:
	drm_gem_object_put(&shmem->base);
	return ERR_PTR(ret);
}

/*
 * DRM fdinfo (Documentation/gpu/drm-usage-stats.rst): the memory of the
 * buffers this file holds handles to, each counted once. A buffer is
 * resident from its creation; it is shared when another file has a handle
 * to it, or it was exported or imported; active while a job that uses it
 * has not finished.
 */
void simaccel_gem_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct simaccel_file *sfile = to_simaccel_file(file);
	struct drm_memory_stats vram = { 0 }, system = { 0 };
	struct simaccel_addr *entry;
	unsigned long index = 0;

	mtree_lock(&sfile->addrs);
	mt_for_each(&sfile->addrs, entry, index, ULONG_MAX) {
		struct drm_gem_object *obj = &entry->bo->base.base;
		struct drm_memory_stats *stats =
			simaccel_bo_is_vram(entry->bo) ? &vram : &system;

		if (obj->handle_count > entry->handles || obj->dma_buf ||
		    obj->import_attach)
			stats->shared += obj->size;
		else
			stats->private += obj->size;
		stats->resident += obj->size;
		if (atomic_read(&entry->bo->active))
			stats->active += obj->size;
	}
	mtree_unlock(&sfile->addrs);
	/* 6.12 prints drm-active-* whatever the supported status */
	drm_print_memory_stats(p, &vram, DRM_GEM_OBJECT_RESIDENT, "vram");
	drm_print_memory_stats(p, &system, DRM_GEM_OBJECT_RESIDENT, "system");
}

/* One try, while the device is there, for the file of @usage. */
static struct simaccel_bo *simaccel_bo_try_new(struct simaccel_device *sdev,
					       const struct drm_simaccel_bo_create *args,
					       struct simaccel_usage *usage)
{
	u64 align = max_t(u64, args->align, DRM_SIMACCEL_BO_MIN_ALIGN);
	u64 size = round_up(args->size, PAGE_SIZE);
	struct simaccel_bo *bo;
	int idx;

	if (!drm_dev_enter(&sdev->drm, &idx))
		return ERR_PTR(-ENODEV);
	if (args->kind == DRM_SIMACCEL_BO_HOST)
		bo = simaccel_host_bo_new(sdev, size);
	else
		bo = simaccel_vram_bo_new(sdev, size, align, args->kind, usage);
	drm_dev_exit(idx);
	return bo;
}

/*
 * VRAM buffers just freed are let go when their clearing, or the last job
 * that used them, has ended: on a full VRAM, wait for those under way and
 * try again (unless none was, and the first try saw all there is). Not for
 * those that start meanwhile: another user creating and freeing buffers
 * would keep the wait going for as long as they liked. The wait is outside
 * drm_dev_enter(), whose read side an unbind waits for: removal must not
 * wait for users' work; it fails the jobs, and so ends the wait.
 */
static struct simaccel_bo *simaccel_bo_new(struct simaccel_device *sdev,
					   const struct drm_simaccel_bo_create *args,
					   struct simaccel_usage *usage)
{
	bool settled = simaccel_job_settled(sdev);
	struct simaccel_bo *bo = simaccel_bo_try_new(sdev, args, usage);

	if (args->kind == DRM_SIMACCEL_BO_HOST ||
	    PTR_ERR_OR_ZERO(bo) != -ENOSPC || settled)
		return bo;
	if (simaccel_job_wait_released(sdev, MAX_SCHEDULE_TIMEOUT) < 0)
		return ERR_PTR(-ERESTARTSYS);
	return simaccel_bo_try_new(sdev, args, usage);
}

/* A handle for a new buffer: the handle holds it then, or nothing does. */
static int simaccel_bo_publish(struct drm_file *file, struct simaccel_bo *bo,
			       u32 *handle)
{
	int ret = drm_gem_handle_create(file, &bo->base.base, handle);

	drm_gem_object_put(&bo->base.base);
	return ret;
}

int simaccel_bo_create_ioctl(struct drm_device *drm, void *data,
			     struct drm_file *file)
{
	struct simaccel_device *sdev = to_simaccel(drm);
	struct drm_simaccel_bo_create *args = data;
	struct simaccel_bo *bo;
	int ret;

	ret = simaccel_bo_check(sdev, args);
	if (ret)
		return ret;
	bo = simaccel_bo_new(sdev, args, to_simaccel_file(file)->usage);
	if (IS_ERR(bo))
		return PTR_ERR(bo);
	args->dev_addr = bo->dev_addr;
	args->mmap_offset = bo->kind != DRM_SIMACCEL_BO_VRAM ?
			    drm_vma_node_offset_addr(&bo->base.base.vma_node) : 0;
	ret = simaccel_bo_publish(file, bo, &args->handle);
	simaccel_dbg(sdev, IOCTL, "bo_create kind %u size %llu: %d\n",
		     args->kind, args->size, ret);
	return ret;
}

/* A buffer of @pin's pages, which it owns from now on, mapped for @sdev. */
static struct simaccel_bo *
simaccel_userptr_bo_new(struct simaccel_device *sdev, struct simaccel_pin *pin)
{
	struct simaccel_bo *bo;
	int ret;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo) {
		simaccel_unpin(pin);
		return ERR_PTR(-ENOMEM);
	}
	bo->kind = DRM_SIMACCEL_BO_USER;
	bo->pin = pin;
	bo->sgt = &pin->sgt;
	bo->base.base.funcs = &simaccel_userptr_bo_funcs;
	drm_gem_private_object_init(&sdev->drm, &bo->base.base,
				    pin->npages << PAGE_SHIFT);
	ret = simaccel_pin_map(sdev, pin);
	if (!ret)
		ret = simaccel_gem_take_host_range(sdev, bo,
						   pin->npages << PAGE_SHIFT);
	if (ret) {
		drm_gem_object_put(&bo->base.base);
		return ERR_PTR(ret);
	}
	/* the range is the caller's bytes, not the whole pages around them */
	bo->dev_addr += pin->offset;
	bo->size = pin->size;
	simaccel_gem_created(sdev, bo);
	return bo;
}

int simaccel_bo_userptr_ioctl(struct drm_device *drm, void *data,
			      struct drm_file *file)
{
	struct simaccel_device *sdev = to_simaccel(drm);
	struct drm_simaccel_bo_userptr *args = data;
	struct simaccel_pin *pin;
	struct simaccel_bo *bo;
	int ret, idx;

	if (args->flags & ~DRM_SIMACCEL_USERPTR_FLAGS)
		return -EINVAL;
	/* before drm_dev_enter(): faulting the pages in may take forever */
	pin = simaccel_pin_user(args->user_addr, args->size,
				args->flags & DRM_SIMACCEL_USERPTR_READ_ONLY);
	if (IS_ERR(pin))
		return PTR_ERR(pin);
	if (!drm_dev_enter(drm, &idx)) {
		simaccel_unpin(pin);
		return -ENODEV;
	}
	bo = simaccel_userptr_bo_new(sdev, pin);
	drm_dev_exit(idx);
	if (IS_ERR(bo))
		return PTR_ERR(bo);
	args->dev_addr = bo->dev_addr;
	ret = simaccel_bo_publish(file, bo, &args->handle);
	simaccel_dbg(sdev, IOCTL, "bo_userptr size %llu: %d\n", args->size,
		     ret);
	return ret;
}

/* Whether the device may write the buffer. */
bool simaccel_bo_writable(const struct simaccel_bo *bo)
{
	return !bo->pin || bo->pin->dir != DMA_TO_DEVICE;
}

int simaccel_bo_info_ioctl(struct drm_device *drm, void *data,
			   struct drm_file *file)
{
	struct drm_simaccel_bo_info *args = data;
	struct drm_gem_object *obj;
	struct simaccel_bo *bo;

	if (args->flags || args->pad)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	bo = to_simaccel_bo(obj);
	args->size = bo->size;
	args->kind = bo->kind;
	args->dev_addr = bo->dev_addr;
	args->mmap_offset = drm_mm_node_allocated(&obj->vma_node.vm_node) &&
			    !obj->import_attach ?
			    drm_vma_node_offset_addr(&obj->vma_node) : 0;
	drm_gem_object_put(obj);
	return 0;
}

/* Long enough for the clearings of a normal device, bounded for a slow one. */
#define SIMACCEL_SETTLE_TIMEOUT	(2 * HZ)

int simaccel_mem_info_ioctl(struct drm_device *drm, void *data,
			    struct drm_file *file)
{
	struct simaccel_device *sdev = to_simaccel(drm);
	struct drm_simaccel_mem_info *args = data;

	if (args->flags & ~DRM_SIMACCEL_MEM_INFO_FLAGS || args->pad)
		return -EINVAL;
	if ((args->flags & DRM_SIMACCEL_MEM_INFO_SETTLE) &&
	    simaccel_job_wait_released(sdev, SIMACCEL_SETTLE_TIMEOUT) < 0)
		return -ERESTARTSYS;
	args->vram_total = sdev->vram_size;
	args->vram_used = atomic64_read(&sdev->vram_used);
	args->host_pinned = atomic64_read(&sdev->host_pinned);
	simaccel_dbg(sdev, IOCTL, "mem_info\n");
	return 0;
}
