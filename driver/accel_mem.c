// SPDX-License-Identifier: GPL-2.0
/*
 * accel: device memory, contexts, handles and mmap.
 *
 * VRAM is managed by a genalloc pool whose addresses are the device
 * addresses user space sees (ACCEL_VRAM_BASE + VRAM offset). genalloc is
 * lock-free, gives best fit at a 256-byte granularity and aligned first fit
 * for larger alignments. Its bitmap scan is linear, which is acceptable
 * because allocations through the ioctl are few and large: libaccel caches
 * them.
 *
 * Each open file is a context. Its handles live in an xarray, and its
 * allocations in an interval tree by device address, so that any address
 * inside an allocation resolves to it and ranges that leave it are refused.
 */
#include <linux/mm.h>
#include <linux/slab.h>

#include "accel_drv.h"

#define ACCEL_VRAM_ORDER	8	/* 256-byte granules */
/* mmap offset of a handle: handle << ACCEL_MMAP_SHIFT (objects < 64 GiB) */
#define ACCEL_MMAP_SHIFT	36
#define ACCEL_MAX_HANDLE	((1u << 24) - 1)

int accel_mem_init(struct accel_device *adev)
{
	int nid = dev_to_node(&adev->pdev->dev);

	adev->vram_pool = gen_pool_create(ACCEL_VRAM_ORDER, nid);
	if (!adev->vram_pool)
		return -ENOMEM;
	if (gen_pool_add(adev->vram_pool, ACCEL_VRAM_BASE, adev->vram_size, nid)) {
		gen_pool_destroy(adev->vram_pool);
		adev->vram_pool = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Called when the last reference to the device goes: no allocation is left. */
void accel_mem_fini(struct accel_device *adev)
{
	if (adev->vram_pool)
		gen_pool_destroy(adev->vram_pool);
}

u64 accel_vram_used(struct accel_device *adev)
{
	return adev->vram_size - gen_pool_avail(adev->vram_pool);
}

struct accel_ctx *accel_ctx_create(struct accel_device *adev)
{
	struct accel_ctx *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);

	if (!ctx)
		return NULL;
	kref_get(&adev->ref);
	ctx->adev = adev;
	xa_init_flags(&ctx->handles, XA_FLAGS_ALLOC1);
	mutex_init(&ctx->lock);
	ctx->va = RB_ROOT_CACHED;
	return ctx;
}

static void accel_bo_release(struct kref *ref)
{
	struct accel_bo *bo = container_of(ref, struct accel_bo, ref);

	gen_pool_free(bo->adev->vram_pool, accel_bo_addr(bo), bo->alloc_size);
	accel_device_put(bo->adev);
	kfree(bo);
}

void accel_bo_put(struct accel_bo *bo)
{
	kref_put(&bo->ref, accel_bo_release);
}

/* Take @bo out of @ctx; ctx->lock is held. */
static void accel_ctx_unlink(struct accel_ctx *ctx, struct accel_bo *bo)
{
	interval_tree_remove(&bo->node, &ctx->va);
	ctx->vram_used -= bo->alloc_size;
	ctx->nr_allocs--;
}

void accel_ctx_destroy(struct accel_ctx *ctx)
{
	struct accel_bo *bo;
	unsigned long handle;

	xa_for_each(&ctx->handles, handle, bo) {
		accel_ctx_unlink(ctx, bo);
		accel_bo_put(bo);
	}
	xa_destroy(&ctx->handles);
	accel_device_put(ctx->adev);
	kfree(ctx);
}

/* The alignment an allocation gets, or 0 if @args is invalid. */
static u64 accel_alloc_align(const struct accel_alloc *args)
{
	u64 align = args->align ? args->align : ACCEL_ALLOC_MIN_ALIGN;

	if (!is_power_of_2(align) || align > ACCEL_ALLOC_MAX_ALIGN)
		return 0;
	align = max_t(u64, align, ACCEL_ALLOC_MIN_ALIGN);
	/* mappable memory must not share a page with its neighbours */
	if (args->kind == ACCEL_MEM_HOST_VISIBLE)
		align = max_t(u64, align, PAGE_SIZE);
	return align;
}

static unsigned long accel_vram_alloc(struct accel_device *adev, u64 size,
				      u64 align)
{
	struct genpool_data_align data = { .align = align };

	if (align <= ACCEL_ALLOC_MIN_ALIGN)
		return gen_pool_alloc_algo(adev->vram_pool, size,
					   gen_pool_best_fit, NULL);
	return gen_pool_alloc_algo(adev->vram_pool, size,
				   gen_pool_first_fit_align, &data);
}

/* Publish @bo in @ctx: a handle and an address range. */
static int accel_ctx_link(struct accel_ctx *ctx, struct accel_bo *bo,
			  u32 *handle)
{
	int ret;

	mutex_lock(&ctx->lock);
	ret = xa_alloc(&ctx->handles, handle, bo, XA_LIMIT(1, ACCEL_MAX_HANDLE),
		       GFP_KERNEL);
	if (!ret) {
		interval_tree_insert(&bo->node, &ctx->va);
		ctx->vram_used += bo->alloc_size;
		ctx->nr_allocs++;
	}
	mutex_unlock(&ctx->lock);
	return ret == -EBUSY ? -ENOSPC : ret;
}

int accel_bo_alloc(struct accel_ctx *ctx, struct accel_alloc *args)
{
	struct accel_device *adev = ctx->adev;
	struct accel_bo *bo;
	unsigned long addr;
	u64 align, alloc_size;
	u32 handle;
	int ret;

	if (args->flags || args->pad || !args->size)
		return -EINVAL;
	if (args->kind != ACCEL_MEM_DEVICE && args->kind != ACCEL_MEM_HOST_VISIBLE)
		return -EINVAL;
	align = accel_alloc_align(args);
	if (!align)
		return -EINVAL;
	if (args->size > adev->vram_size)
		return -ENOMEM;
	alloc_size = round_up(args->size, args->kind == ACCEL_MEM_HOST_VISIBLE ?
			      PAGE_SIZE : ACCEL_ALLOC_MIN_ALIGN);

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return -ENOMEM;
	addr = accel_vram_alloc(adev, alloc_size, align);
	if (!addr) {
		kfree(bo);
		return -ENOMEM;
	}
	kref_init(&bo->ref);
	kref_get(&adev->ref);
	bo->adev = adev;
	bo->kind = args->kind;
	bo->size = args->size;
	bo->alloc_size = alloc_size;
	bo->node.start = addr;
	bo->node.last = addr + args->size - 1;

	ret = accel_ctx_link(ctx, bo, &handle);
	if (ret) {
		accel_bo_put(bo);
		return ret;
	}
	args->handle = handle;
	args->dev_addr = addr;
	args->mmap_offset = args->kind == ACCEL_MEM_HOST_VISIBLE ?
			    (u64)handle << ACCEL_MMAP_SHIFT : 0;
	return 0;
}

int accel_bo_free(struct accel_ctx *ctx, u32 handle)
{
	struct accel_bo *bo;

	mutex_lock(&ctx->lock);
	bo = handle ? xa_erase(&ctx->handles, handle) : NULL;
	if (bo)
		accel_ctx_unlink(ctx, bo);
	mutex_unlock(&ctx->lock);
	if (!bo)
		return -ENOENT;
	accel_bo_put(bo);
	return 0;
}

/* The allocation of @ctx that holds [addr, addr + size), referenced. */
struct accel_bo *accel_ctx_lookup(struct accel_ctx *ctx, u64 addr, u64 size)
{
	struct interval_tree_node *node;
	struct accel_bo *bo = NULL;

	if (!size || addr + size - 1 < addr)
		return NULL;
	mutex_lock(&ctx->lock);
	node = interval_tree_iter_first(&ctx->va, addr, addr);
	if (node && addr + size - 1 <= node->last) {
		bo = container_of(node, struct accel_bo, node);
		kref_get(&bo->ref);
	}
	mutex_unlock(&ctx->lock);
	return bo;
}

/* A mapping keeps its allocation alive, across fork() and VMA splits too. */
static void accel_vm_open(struct vm_area_struct *vma)
{
	struct accel_bo *bo = vma->vm_private_data;

	kref_get(&bo->ref);
}

static void accel_vm_close(struct vm_area_struct *vma)
{
	accel_bo_put(vma->vm_private_data);
}

static const struct vm_operations_struct accel_vm_ops = {
	.open = accel_vm_open,
	.close = accel_vm_close,
};

static struct accel_bo *accel_mmap_lookup(struct accel_ctx *ctx, u64 offset)
{
	struct accel_bo *bo;

	mutex_lock(&ctx->lock);
	bo = xa_load(&ctx->handles, offset >> ACCEL_MMAP_SHIFT);
	if (bo)
		kref_get(&bo->ref);
	mutex_unlock(&ctx->lock);
	return bo;
}

static int accel_mmap_bo(struct accel_bo *bo, struct vm_area_struct *vma,
			 u64 inner)
{
	struct accel_device *adev = bo->adev;
	unsigned long len = vma->vm_end - vma->vm_start;
	phys_addr_t phys;

	if (bo->kind != ACCEL_MEM_HOST_VISIBLE)
		return -EACCES;
	if (inner >= bo->alloc_size || len > bo->alloc_size - inner)
		return -EINVAL;
	phys = adev->vram_bar + (accel_bo_addr(bo) - ACCEL_VRAM_BASE) + inner;
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_page_prot = pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
	vma->vm_private_data = bo;
	vma->vm_ops = &accel_vm_ops;
	return io_remap_pfn_range(vma, vma->vm_start, phys >> PAGE_SHIFT, len,
				  vma->vm_page_prot);
}

int accel_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct accel_ctx *ctx = file->private_data;
	u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct accel_bo *bo;
	int ret;

	bo = accel_mmap_lookup(ctx, offset);
	if (!bo)
		return -EINVAL;
	down_read(&ctx->adev->remove_lock);
	ret = ctx->adev->removed ? -ENODEV :
	      accel_mmap_bo(bo, vma, offset & ((1ull << ACCEL_MMAP_SHIFT) - 1));
	up_read(&ctx->adev->remove_lock);
	if (ret)
		accel_bo_put(bo);
	return ret;
}
