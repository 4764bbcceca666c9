// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: user memory pinned for the device.
 *
 * Pages are pinned with FOLL_LONGTERM, since a buffer or a queued job may
 * hold them for as long as it likes, and charged to the caller's user
 * against RLIMIT_MEMLOCK, as io_uring charges its fixed buffers: per user,
 * not per address space, because a buffer outlives the process that pinned
 * it (a child that pins into its parent's file and exits would otherwise
 * take its charge with it). CAP_IPC_LOCK lifts the limit, not the count.
 * The charge is taken before anything is allocated for the pages.
 */
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>

#include "simaccel_pin.h"

static int simaccel_pin_pages(struct simaccel_pin *pin, u64 user_addr,
			      bool read_only)
{
	unsigned int gup = FOLL_LONGTERM | (read_only ? 0 : FOLL_WRITE);
	unsigned long start = user_addr & PAGE_MASK;
	unsigned long done = 0;
	int ret;

	while (done < pin->npages) {
		ret = pin_user_pages_fast(start + done * PAGE_SIZE,
					  min(pin->npages - done, 512UL), gup,
					  pin->pages + done);
		if (ret <= 0) {
			unpin_user_pages(pin->pages, done);
			return ret ? ret : -EFAULT;
		}
		done += ret;
	}
	return 0;
}

static void simaccel_pin_unmap(struct simaccel_dma_map *map)
{
	struct simaccel_pin *pin = container_of(map, struct simaccel_pin, dma);

	dma_sync_sgtable_for_cpu(pin->sdev->drm.dev, &pin->sgt, pin->dir);
	dma_unmap_sgtable(pin->sdev->drm.dev, &pin->sgt, pin->dir,
			  DMA_ATTR_SKIP_CPU_SYNC);
}

/**
 * simaccel_pin_map - map pinned pages for @sdev's DMA
 * @sdev: the device, inside drm_dev_enter(): removal undoes the mapping
 * @pin: from simaccel_pin_user(), not yet mapped
 *
 * Return: 0 or -errno; simaccel_unpin() lets go of @pin either way.
 */
int simaccel_pin_map(struct simaccel_device *sdev, struct simaccel_pin *pin)
{
	int ret;

	ret = sg_alloc_table_from_pages_segment(&pin->sgt, pin->pages,
						pin->npages, 0,
						pin->npages << PAGE_SHIFT,
						UINT_MAX, GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	/*
	 * The same user pages may be pinned by several buffers and jobs at
	 * once: skip the implicit CPU syncs, whose cacheline tracking refuses
	 * overlapping mappings, and sync explicitly instead.
	 */
	ret = dma_map_sgtable(sdev->drm.dev, &pin->sgt, pin->dir,
			      DMA_ATTR_SKIP_CPU_SYNC);
	if (ret) {
		sg_free_table(&pin->sgt);
		return ret;
	}
	dma_sync_sgtable_for_device(sdev->drm.dev, &pin->sgt, pin->dir);
	pin->sdev = sdev;
	simaccel_dma_track(sdev, &pin->dma, simaccel_pin_unmap);
	atomic64_add(pin->npages << PAGE_SHIFT, &sdev->host_pinned);
	return 0;
}

/* Charge @npages to the caller's user, within RLIMIT_MEMLOCK. */
static int simaccel_pin_charge(struct user_struct *user, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	unsigned long cur = atomic_long_read(&user->locked_vm);
	bool unlimited = capable(CAP_IPC_LOCK);

	do {
		if (!unlimited && cur + npages > limit)
			return -ENOMEM;
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur, cur + npages));
	return 0;
}

/*
 * Pin [user_addr, user_addr + size) of the caller's memory, for a device
 * that only reads it if @read_only; simaccel_pin_map() maps it. Faulting
 * the pages in may take as long as the memory's owner likes (a FUSE file,
 * userfaultfd): callers pin outside drm_dev_enter(), which an unbind
 * waits for.
 */
struct simaccel_pin *simaccel_pin_user(u64 user_addr, u64 size, bool read_only)
{
	struct simaccel_pin *pin;
	u64 end;
	int ret;

	if (!size || check_add_overflow(user_addr, size, &end) ||
	    end > TASK_SIZE)
		return ERR_PTR(-EINVAL);
	/* no one pins more than the machine has, CAP_IPC_LOCK or not */
	if (DIV_ROUND_UP(offset_in_page(user_addr) + size, PAGE_SIZE) >
	    totalram_pages())
		return ERR_PTR(-ENOMEM);
	pin = kzalloc(sizeof(*pin), GFP_KERNEL_ACCOUNT);
	if (!pin)
		return ERR_PTR(-ENOMEM);
	pin->offset = offset_in_page(user_addr);
	pin->size = size;
	pin->npages = DIV_ROUND_UP(pin->offset + size, PAGE_SIZE);
	pin->dir = read_only ? DMA_TO_DEVICE : DMA_BIDIRECTIONAL;
	pin->user = get_uid(current_user());
	ret = simaccel_pin_charge(pin->user, pin->npages);
	if (ret)
		goto err_free;
	ret = -ENOMEM;
	pin->pages = kvmalloc_array(pin->npages, sizeof(*pin->pages),
				    GFP_KERNEL_ACCOUNT);
	if (!pin->pages)
		goto err_unaccount;
	ret = simaccel_pin_pages(pin, user_addr, read_only);
	if (ret)
		goto err_unaccount;
	return pin;

err_unaccount:
	atomic_long_sub(pin->npages, &pin->user->locked_vm);
err_free:
	free_uid(pin->user);
	kvfree(pin->pages);
	kfree(pin);
	return ERR_PTR(ret);
}

/* Once the device can no longer touch the pages; mapped or not. */
void simaccel_unpin(struct simaccel_pin *pin)
{
	struct simaccel_device *sdev = pin->sdev;

	if (sdev) {
		atomic64_sub(pin->npages << PAGE_SHIFT, &sdev->host_pinned);
		simaccel_dma_untrack(sdev, &pin->dma);
		sg_free_table(&pin->sgt);
	}
	unpin_user_pages_dirty_lock(pin->pages, pin->npages,
				    pin->dir != DMA_TO_DEVICE);
	atomic_long_sub(pin->npages, &pin->user->locked_vm);
	free_uid(pin->user);
	kvfree(pin->pages);
	kfree(pin);
}
