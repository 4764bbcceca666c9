// SPDX-License-Identifier: GPL-2.0
/*
 * accel: device memory, host memory, contexts, handles and mmap.
 *
 * VRAM is managed by a genalloc pool whose addresses are the device
 * addresses user space sees (ACCEL_VRAM_BASE + VRAM offset). genalloc is
 * lock-free, gives best fit at a 256-byte granularity and aligned first fit
 * for larger alignments. Its bitmap scan is linear, which is acceptable
 * because allocations through the ioctl are few and large: libaccel caches
 * them. A second pool hands out device addresses for host memory.
 *
 * Host memory (ACCEL_MEM_HOST, and user memory registered with
 * ACCEL_IOCTL_USERPTR) is a set of pages mapped for DMA once, as a
 * scatter-gather table. The device keeps a list of them so that the DMA
 * mappings can be torn down when the PCI device goes away, while the pages
 * stay for whoever still maps them.
 *
 * Each open file is a context. Its handles live in an xarray, and its
 * allocations in an interval tree by device address, so that any address
 * inside an allocation resolves to it and ranges that leave it are refused.
 */
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "accel_drv.h"

#define ACCEL_VRAM_ORDER	8	/* 256-byte granules */
#define ACCEL_HOST_ORDER	16	/* 64 KiB granules of host addresses */
#define ACCEL_HOST_SPAN		BIT_ULL(38)
#define ACCEL_HOST_CHUNK_ORDER	9	/* 2 MiB pieces of ACCEL_MEM_HOST */
/* mmap offset of a handle: handle << ACCEL_MMAP_SHIFT (objects < 64 GiB) */
#define ACCEL_MMAP_SHIFT	36
#define ACCEL_MAX_HANDLE	((1u << 24) - 1)
#define ACCEL_VM_PREFAULT	512	/* VRAM pages mapped per fault: 2 MiB */

static struct gen_pool *accel_pool_create(int order, unsigned long base,
					  u64 size, int nid)
{
	struct gen_pool *pool = gen_pool_create(order, nid);

	if (pool && gen_pool_add(pool, base, size, nid)) {
		gen_pool_destroy(pool);
		pool = NULL;
	}
	return pool;
}

/* After remove(), when @adev may be gone: the BAR is read off the PCI device. */
static void accel_vram_memtype_free(void *data)
{
	struct pci_dev *pdev = data;

	arch_io_free_memtype_wc(pci_resource_start(pdev, ACCEL_BAR_VRAM),
				pci_resource_len(pdev, ACCEL_BAR_VRAM));
}

/*
 * User mappings of VRAM are filled at fault time (accel_vm_fault()), so
 * the BAR is made write-combining once here, where io_remap_pfn_range()
 * would have done it for each mapping. Undone after the device is removed.
 */
static int accel_vram_memtype_reserve(struct accel_device *adev)
{
	int ret = arch_io_reserve_memtype_wc(adev->vram_bar, adev->vram_size);

	if (ret)
		return ret;
	return devm_add_action_or_reset(&adev->pdev->dev,
					accel_vram_memtype_free, adev->pdev);
}

int accel_mem_init(struct accel_device *adev)
{
	int nid = dev_to_node(&adev->pdev->dev);
	int ret;

	ret = accel_vram_memtype_reserve(adev);
	if (ret)
		return ret;
	INIT_LIST_HEAD(&adev->host_bos);
	mutex_init(&adev->host_lock);
	adev->vram_pool = accel_pool_create(ACCEL_VRAM_ORDER, ACCEL_VRAM_BASE,
					    adev->vram_size, nid);
	adev->host_pool = accel_pool_create(ACCEL_HOST_ORDER, ACCEL_HOST_BASE,
					    ACCEL_HOST_SPAN, nid);
	return adev->vram_pool && adev->host_pool ? 0 : -ENOMEM;
}

/* Called when the last reference to the device goes: no allocation is left. */
void accel_mem_fini(struct accel_device *adev)
{
	if (adev->vram_pool)
		gen_pool_destroy(adev->vram_pool);
	if (adev->host_pool)
		gen_pool_destroy(adev->host_pool);
}

u64 accel_vram_used(struct accel_device *adev)
{
	return adev->vram_size - gen_pool_avail(adev->vram_pool);
}

struct accel_ctx *accel_ctx_create(struct accel_device *adev,
				   struct address_space *mapping)
{
	struct accel_ctx *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);

	if (!ctx)
		return NULL;
	kref_get(&adev->ref);
	ctx->adev = adev;
	ctx->mapping = mapping;
	ctx->pid = get_pid(task_tgid(current));
	get_task_comm(ctx->comm, current);
	xa_init_flags(&ctx->handles, XA_FLAGS_ALLOC1);
	xa_init_flags(&ctx->queues, XA_FLAGS_ALLOC1);
	init_waitqueue_head(&ctx->poll_wq);
	mutex_init(&ctx->lock);
	ctx->va = RB_ROOT_CACHED;
	mutex_lock(&adev->ctxs_lock);
	list_add(&ctx->link, &adev->ctxs);
	mutex_unlock(&adev->ctxs_lock);
	return ctx;
}

/*
 * The device is going away: zap every user mapping of it. VRAM that was
 * mapped may be handed out again once the device comes back, so touching
 * an old VRAM mapping now raises SIGBUS; host memory faults back in.
 */
void accel_mem_revoke_mappings(struct accel_device *adev)
{
	struct accel_ctx *ctx;

	mutex_lock(&adev->ctxs_lock);
	list_for_each_entry(ctx, &adev->ctxs, link)
		unmap_mapping_range(ctx->mapping, 0, 0, 1);
	mutex_unlock(&adev->ctxs_lock);
}

/* Host pages: DMA mapping */

/* Index the DMA runs of @bo by their offset in the allocation. */
static int accel_host_index(struct accel_bo *bo)
{
	struct scatterlist *sg;
	u64 start = 0;
	unsigned int i;

	bo->dma_segs = kvmalloc_array(bo->sgt.nents, sizeof(*bo->dma_segs),
				      GFP_KERNEL);
	if (!bo->dma_segs)
		return -ENOMEM;
	for_each_sgtable_dma_sg(&bo->sgt, sg, i) {
		bo->dma_segs[i].start = start;
		bo->dma_segs[i].addr = sg_dma_address(sg);
		bo->dma_segs[i].len = sg_dma_len(sg);
		start += sg_dma_len(sg);
	}
	bo->dma_nsegs = bo->sgt.nents;
	return 0;
}

static int accel_host_map(struct accel_bo *bo, unsigned int offset)
{
	struct accel_device *adev = bo->adev;
	enum dma_data_direction dir = bo->writable ? DMA_BIDIRECTIONAL :
						     DMA_TO_DEVICE;
	int ret;

	ret = sg_alloc_table_from_pages(&bo->sgt, bo->pages, bo->npages, offset,
					bo->size, GFP_KERNEL);
	if (ret)
		return ret;
	/* callers are ioctls: the PCI device cannot go away meanwhile */
	mutex_lock(&adev->host_lock);
	/* overlapping pins: explicit syncs, as in accel_dma.c */
	ret = dma_map_sgtable(&adev->pdev->dev, &bo->sgt, dir,
			      DMA_ATTR_SKIP_CPU_SYNC);
	if (!ret) {
		dma_sync_sgtable_for_device(&adev->pdev->dev, &bo->sgt, dir);
		bo->dma_mapped = true;
		list_add(&bo->host_link, &adev->host_bos);
	}
	mutex_unlock(&adev->host_lock);
	if (ret) {
		sg_free_table(&bo->sgt);
		return ret;
	}
	/* from here on, the release path undoes the mapping */
	return accel_host_index(bo);
}

/* adev->host_lock is held. */
static void accel_host_unmap_locked(struct accel_bo *bo)
{
	enum dma_data_direction dir =
		bo->writable ? DMA_BIDIRECTIONAL : DMA_TO_DEVICE;

	if (!bo->dma_mapped)
		return;
	dma_sync_sgtable_for_cpu(&bo->adev->pdev->dev, &bo->sgt, dir);
	dma_unmap_sgtable(&bo->adev->pdev->dev, &bo->sgt, dir,
			  DMA_ATTR_SKIP_CPU_SYNC);
	bo->dma_mapped = false;
}

/* The device is going away: no DMA mapping of host memory may remain. */
void accel_mem_unmap_all(struct accel_device *adev)
{
	struct accel_bo *bo;

	mutex_lock(&adev->host_lock);
	list_for_each_entry(bo, &adev->host_bos, host_link)
		accel_host_unmap_locked(bo);
	mutex_unlock(&adev->host_lock);
}

/*
 * Host memory pinned for all the devices, and its limit: half of the RAM,
 * the share TTM lets GPU drivers pin, so that no caller can pin the machine
 * into the OOM killer.
 */
static atomic64_t accel_pinned_total = ATOMIC64_INIT(0);

static int accel_pin_charge(struct accel_device *adev, unsigned int npages)
{
	u64 bytes = (u64)npages << PAGE_SHIFT;
	u64 limit = (u64)totalram_pages() << (PAGE_SHIFT - 1);

	if (atomic64_add_return(bytes, &accel_pinned_total) > limit) {
		atomic64_sub(bytes, &accel_pinned_total);
		return -ENOMEM;
	}
	atomic64_add(bytes, &adev->host_pinned);
	return 0;
}

static void accel_pin_uncharge(struct accel_device *adev, unsigned int npages)
{
	u64 bytes = (u64)npages << PAGE_SHIFT;

	atomic64_sub(bytes, &accel_pinned_total);
	atomic64_sub(bytes, &adev->host_pinned);
}

static void accel_host_release(struct accel_bo *bo)
{
	struct accel_device *adev = bo->adev;
	unsigned int i;

	if (bo->sgt.sgl) {
		mutex_lock(&adev->host_lock);
		accel_host_unmap_locked(bo);
		list_del(&bo->host_link);
		mutex_unlock(&adev->host_lock);
		sg_free_table(&bo->sgt);
	}
	kvfree(bo->dma_segs);
	if (bo->kind == ACCEL_BO_USERPTR) {
		unpin_user_pages_dirty_lock(bo->pages, bo->npages, bo->writable);
	} else {
		for (i = 0; i < bo->npages && bo->pages[i]; i++)
			__free_page(bo->pages[i]);
	}
	kvfree(bo->pages);
	accel_pin_uncharge(adev, bo->npages);
}

static void accel_bo_release(struct kref *ref)
{
	struct accel_bo *bo = container_of(ref, struct accel_bo, ref);
	struct accel_device *adev = bo->adev;

	if (accel_bo_is_host(bo))
		accel_host_release(bo);
	if (bo->pool_addr)
		gen_pool_free(accel_bo_is_host(bo) ? adev->host_pool :
			      adev->vram_pool, bo->pool_addr, bo->alloc_size);
	accel_device_put(adev);
	kfree(bo);
}

void accel_bo_put(struct accel_bo *bo)
{
	kref_put(&bo->ref, accel_bo_release);
}

static struct accel_bo *accel_bo_new(struct accel_device *adev, u32 kind,
				     u64 size)
{
	struct accel_bo *bo = kzalloc(sizeof(*bo), GFP_KERNEL);

	if (!bo)
		return NULL;
	kref_init(&bo->ref);
	kref_get(&adev->ref);
	bo->adev = adev;
	bo->kind = kind;
	bo->size = size;
	return bo;
}

/* Contexts */

static void accel_ctx_account(struct accel_ctx *ctx, struct accel_bo *bo,
			      int sign)
{
	if (accel_bo_is_host(bo))
		ctx->host_pinned += sign * ((u64)bo->npages << PAGE_SHIFT);
	else
		ctx->vram_used += sign * bo->alloc_size;
	ctx->nr_allocs += sign;
}

/* Take @bo out of @ctx; ctx->lock is held. */
static void accel_ctx_unlink(struct accel_ctx *ctx, struct accel_bo *bo)
{
	interval_tree_remove(&bo->node, &ctx->va);
	accel_ctx_account(ctx, bo, -1);
}

void accel_ctx_destroy(struct accel_ctx *ctx)
{
	struct accel_device *adev = ctx->adev;
	struct accel_bo *bo;
	unsigned long handle;

	/* queued work may still use the context's memory: let it finish */
	accel_queues_fini(ctx);
	mutex_lock(&adev->ctxs_lock);
	list_del(&ctx->link);
	mutex_unlock(&adev->ctxs_lock);
	xa_for_each(&ctx->handles, handle, bo) {
		accel_ctx_unlink(ctx, bo);
		accel_bo_put(bo);
	}
	xa_destroy(&ctx->handles);
	put_pid(ctx->pid);
	accel_device_put(ctx->adev);
	kfree(ctx);
}

/* Publish @bo in @ctx, at device address @addr: a handle and a range. */
static int accel_ctx_link(struct accel_ctx *ctx, struct accel_bo *bo, u64 addr,
			  u32 *handle)
{
	int ret;

	bo->node.start = addr;
	bo->node.last = addr + bo->size - 1;
	mutex_lock(&ctx->lock);
	ret = xa_alloc(&ctx->handles, handle, bo, XA_LIMIT(1, ACCEL_MAX_HANDLE),
		       GFP_KERNEL);
	if (!ret) {
		interval_tree_insert(&bo->node, &ctx->va);
		accel_ctx_account(ctx, bo, 1);
	}
	mutex_unlock(&ctx->lock);
	return ret == -EBUSY ? -ENOSPC : ret;
}

/* Allocation */

/* The alignment an allocation gets, or 0 if @args is invalid. */
static u64 accel_alloc_align(const struct accel_alloc *args)
{
	u64 align = args->align ? args->align : ACCEL_ALLOC_MIN_ALIGN;

	if (!is_power_of_2(align) || align > ACCEL_ALLOC_MAX_ALIGN)
		return 0;
	align = max_t(u64, align, ACCEL_ALLOC_MIN_ALIGN);
	/* mappable memory must not share a page with its neighbours */
	if (args->kind != ACCEL_MEM_DEVICE)
		align = max_t(u64, align, PAGE_SIZE);
	return align;
}

static int accel_vram_reserve(struct accel_bo *bo, u64 align)
{
	struct accel_device *adev = bo->adev;
	struct genpool_data_align data = { .align = align };

	bo->alloc_size = round_up(bo->size, bo->kind == ACCEL_MEM_HOST_VISIBLE ?
				  PAGE_SIZE : ACCEL_ALLOC_MIN_ALIGN);
	if (align <= ACCEL_ALLOC_MIN_ALIGN)
		bo->pool_addr = gen_pool_alloc_algo(adev->vram_pool, bo->alloc_size,
						    gen_pool_best_fit, NULL);
	else
		bo->pool_addr = gen_pool_alloc_algo(adev->vram_pool, bo->alloc_size,
						    gen_pool_first_fit_align, &data);
	return bo->pool_addr ? 0 : -ENOMEM;
}

/* Device addresses for @bo's pages, which start @offset bytes into a page. */
static int accel_host_reserve(struct accel_bo *bo, u64 align)
{
	struct genpool_data_align data = { .align = align };

	bo->alloc_size = round_up((u64)bo->npages << PAGE_SHIFT,
				  1ull << ACCEL_HOST_ORDER);
	bo->pool_addr = gen_pool_alloc_algo(bo->adev->host_pool, bo->alloc_size,
					    gen_pool_first_fit_align, &data);
	return bo->pool_addr ? 0 : -ENOMEM;
}

/*
 * Up to 2^order zeroed pages in one physically contiguous piece, split
 * into single pages, trying smaller pieces when memory is fragmented.
 * Contiguous pieces become long DMA runs, hence few descriptors. The size
 * is the caller's to choose: when memory runs out the allocation fails
 * rather than invoke the OOM killer, and it is charged to the caller's
 * memory cgroup.
 */
static struct page *accel_host_alloc_chunk(unsigned int *order)
{
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN;
	struct page *page;

	for (;; (*order)--) {
		page = alloc_pages(gfp | (*order ? __GFP_NORETRY :
					  __GFP_RETRY_MAYFAIL), *order);
		if (page || !*order)
			break;
	}
	if (page && *order)
		split_page(page, *order);
	return page;
}

static int accel_host_alloc_pages(struct accel_bo *bo)
{
	unsigned int npages = DIV_ROUND_UP(bo->size, PAGE_SIZE);
	unsigned int i = 0, j, order;
	struct page *page;

	bo->writable = true;
	bo->pages = kvcalloc(npages, sizeof(*bo->pages),
			     GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL |
			     __GFP_NOWARN);
	if (!bo->pages || accel_pin_charge(bo->adev, npages))
		return -ENOMEM;
	/* from here on the release frees the pages and the charge */
	bo->npages = npages;
	while (i < bo->npages) {
		order = min_t(unsigned int, ACCEL_HOST_CHUNK_ORDER,
			      ilog2(bo->npages - i));
		page = accel_host_alloc_chunk(&order);
		if (!page)
			return -ENOMEM;
		for (j = 0; j < 1u << order; j++)
			bo->pages[i++] = page + j;
	}
	return accel_host_map(bo, 0);
}

int accel_bo_alloc(struct accel_ctx *ctx, struct accel_alloc *args)
{
	struct accel_device *adev = ctx->adev;
	struct accel_bo *bo;
	u64 align;
	u32 handle;
	int ret;

	if (args->flags || args->pad || !args->size)
		return -EINVAL;
	if (args->kind < ACCEL_MEM_DEVICE || args->kind > ACCEL_MEM_HOST)
		return -EINVAL;
	align = accel_alloc_align(args);
	if (!align)
		return -EINVAL;
	if (args->kind == ACCEL_MEM_HOST ?
	    args->size > totalram_pages() << PAGE_SHIFT :
	    args->size > adev->vram_size)
		return -ENOMEM;

	bo = accel_bo_new(adev, args->kind, args->size);
	if (!bo)
		return -ENOMEM;
	if (args->kind == ACCEL_MEM_HOST) {
		ret = accel_host_alloc_pages(bo);
		if (!ret)
			ret = accel_host_reserve(bo, align);
	} else {
		ret = accel_vram_reserve(bo, align);
	}
	if (!ret)
		ret = accel_ctx_link(ctx, bo, bo->pool_addr, &handle);
	if (ret) {
		accel_bo_put(bo);
		return ret;
	}
	args->handle = handle;
	args->dev_addr = accel_bo_addr(bo);
	args->mmap_offset = args->kind == ACCEL_MEM_DEVICE ? 0 :
			    (u64)handle << ACCEL_MMAP_SHIFT;
	return 0;
}

int accel_bo_userptr(struct accel_ctx *ctx, struct accel_userptr *args)
{
	unsigned int offset = offset_in_page(args->user_addr);
	struct accel_bo *bo;
	int pinned, want, ret;
	u32 handle;

	if (args->flags & ~ACCEL_USERPTR_FLAGS_VALID || !args->size)
		return -EINVAL;
	if (args->user_addr + args->size < args->user_addr ||
	    !access_ok(u64_to_user_ptr(args->user_addr), args->size))
		return -EFAULT;
	/* more than the RAM cannot be pinned: fail before the page array */
	if (DIV_ROUND_UP(offset + args->size, PAGE_SIZE) > totalram_pages())
		return -ENOMEM;

	bo = accel_bo_new(ctx->adev, ACCEL_BO_USERPTR, args->size);
	if (!bo)
		return -ENOMEM;
	bo->writable = !(args->flags & ACCEL_USERPTR_READ_ONLY);
	want = DIV_ROUND_UP(offset + args->size, PAGE_SIZE);
	bo->pages = kvcalloc(want, sizeof(*bo->pages),
			     GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL |
			     __GFP_NOWARN);
	if (!bo->pages || accel_pin_charge(ctx->adev, want)) {
		accel_bo_put(bo);
		return -ENOMEM;
	}
	pinned = pin_user_pages_fast(args->user_addr & PAGE_MASK, want,
				     FOLL_LONGTERM | (bo->writable ? FOLL_WRITE : 0),
				     bo->pages);
	/* what is pinned is released with the bo, and charged until then */
	bo->npages = max(pinned, 0);
	accel_pin_uncharge(ctx->adev, want - bo->npages);
	if (pinned != want) {
		accel_bo_put(bo);
		return pinned < 0 ? pinned : -EFAULT;
	}

	ret = accel_host_map(bo, offset);
	if (!ret)
		ret = accel_host_reserve(bo, PAGE_SIZE);
	if (!ret)
		ret = accel_ctx_link(ctx, bo, bo->pool_addr + offset, &handle);
	if (ret) {
		accel_bo_put(bo);
		return ret;
	}
	args->handle = handle;
	args->dev_addr = accel_bo_addr(bo);
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

/* mmap */

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

/*
 * VRAM: from the faulting page on, up to ACCEL_VM_PREFAULT pages of the
 * mapping at once. Nothing is mapped before the first touch, so a mapping
 * that mmap() links after the device was removed (and its mappings
 * revoked) has nothing in it, and its faults see the removal.
 */
static vm_fault_t accel_vm_fault_vram(struct vm_fault *vmf,
				      struct accel_bo *bo, pgoff_t page)
{
	struct vm_area_struct *vma = vmf->vma;
	struct accel_device *adev = bo->adev;
	unsigned long addr = vmf->address;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	unsigned long pfn;
	unsigned int i;

	if (page >= DIV_ROUND_UP(bo->alloc_size, PAGE_SIZE))
		return VM_FAULT_SIGBUS;
	/* mmap_lock is held: trylock, for the reason given in accel_mmap() */
	if (!down_read_trylock(&adev->remove_lock))
		return VM_FAULT_SIGBUS;
	if (adev->removed)
		goto out;
	pfn = (accel_vram_phys(adev, bo->pool_addr) >> PAGE_SHIFT) + page;
	for (i = 0; i < ACCEL_VM_PREFAULT && addr < vma->vm_end; i++) {
		ret = vmf_insert_pfn_prot(vma, addr, pfn + i, vma->vm_page_prot);
		if (ret & VM_FAULT_ERROR) {
			/* the faulting page is what must be there */
			if (i)
				ret = VM_FAULT_NOPAGE;
			break;
		}
		addr += PAGE_SIZE;
	}
out:
	up_read(&adev->remove_lock);
	return ret;
}

/*
 * Host memory is inserted page by page on first touch, and again after the
 * mappings were revoked: its pages stay with the mapping after the device
 * is gone. VRAM faults once removed.
 */
static vm_fault_t accel_vm_fault(struct vm_fault *vmf)
{
	struct accel_bo *bo = vmf->vma->vm_private_data;
	pgoff_t page = vmf->pgoff & ((1ul << (ACCEL_MMAP_SHIFT - PAGE_SHIFT)) - 1);

	if (bo->kind == ACCEL_MEM_HOST_VISIBLE)
		return accel_vm_fault_vram(vmf, bo, page);
	if (bo->kind != ACCEL_MEM_HOST || page >= bo->npages)
		return VM_FAULT_SIGBUS;
	return vmf_insert_pfn(vmf->vma, vmf->address,
			      page_to_pfn(bo->pages[page]));
}

static const struct vm_operations_struct accel_vm_ops = {
	.open = accel_vm_open,
	.close = accel_vm_close,
	.fault = accel_vm_fault,
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
	unsigned long len = vma->vm_end - vma->vm_start;
	u64 mappable = bo->kind == ACCEL_MEM_HOST ?
		       (u64)bo->npages << PAGE_SHIFT : bo->alloc_size;

	if (bo->kind != ACCEL_MEM_HOST_VISIBLE && bo->kind != ACCEL_MEM_HOST)
		return -EACCES;
	if (inner >= mappable || len > mappable - inner)
		return -EINVAL;
	vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	if (bo->kind == ACCEL_MEM_HOST_VISIBLE) {
		vm_flags_set(vma, VM_IO);
		vma->vm_page_prot =
			pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
	}
	vma->vm_private_data = bo;
	vma->vm_ops = &accel_vm_ops;
	return 0;
}

int accel_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct accel_ctx *ctx = file->private_data;
	u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct accel_bo *bo;
	int ret;

	/* Copy-on-write cannot copy pages the kernel does not own. */
	if (is_cow_mapping(vma->vm_flags))
		return -EINVAL;
	bo = accel_mmap_lookup(ctx, offset);
	if (!bo)
		return -EINVAL;
	/*
	 * mmap() holds mmap_lock, which ioctls take under remove_lock when
	 * they pin user pages: waiting here could deadlock against a removal
	 * waiting for such an ioctl. A removal under way is a refusal anyway.
	 */
	if (!down_read_trylock(&ctx->adev->remove_lock)) {
		accel_bo_put(bo);
		return -ENODEV;
	}
	ret = ctx->adev->removed ? -ENODEV :
	      accel_mmap_bo(bo, vma, offset & ((1ull << ACCEL_MMAP_SHIFT) - 1));
	up_read(&ctx->adev->remove_lock);
	if (ret)
		accel_bo_put(bo);
	return ret;
}
