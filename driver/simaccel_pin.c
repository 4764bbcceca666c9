// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: user memory pinned for the device.
 *
 * Pages are pinned with FOLL_LONGTERM, since a buffer or a queued job may
 * hold them for as long as it likes, and charged against the caller's
 * RLIMIT_MEMLOCK as VFIO and RDMA charge them (account_locked_vm()), so
 * that an unprivileged user cannot pin more than they could mlock(). The
 * charge stays with the address space that paid it, whoever releases it.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
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

static int simaccel_pin_map(struct simaccel_device *sdev,
			    struct simaccel_pin *pin)
{
	int ret;

	ret = sg_alloc_table_from_pages_segment(&pin->sgt, pin->pages,
						pin->npages, 0,
						pin->npages << PAGE_SHIFT,
						UINT_MAX, GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	ret = dma_map_sgtable(sdev->drm.dev, &pin->sgt, pin->dir, 0);
	if (ret)
		sg_free_table(&pin->sgt);
	return ret;
}

/*
 * Pin [user_addr, user_addr + size) of the caller's memory and map it for
 * DMA; the device only reads it if @read_only.
 */
struct simaccel_pin *simaccel_pin_user(struct simaccel_device *sdev,
				       u64 user_addr, u64 size, bool read_only)
{
	struct simaccel_pin *pin;
	u64 end;
	int ret;

	if (!size || check_add_overflow(user_addr, size, &end) ||
	    end > TASK_SIZE)
		return ERR_PTR(-EINVAL);
	pin = kzalloc(sizeof(*pin), GFP_KERNEL_ACCOUNT);
	if (!pin)
		return ERR_PTR(-ENOMEM);
	pin->offset = offset_in_page(user_addr);
	pin->size = size;
	pin->npages = DIV_ROUND_UP(pin->offset + size, PAGE_SIZE);
	pin->dir = read_only ? DMA_TO_DEVICE : DMA_BIDIRECTIONAL;
	pin->pages = kvmalloc_array(pin->npages, sizeof(*pin->pages),
				    GFP_KERNEL_ACCOUNT);
	ret = -ENOMEM;
	if (!pin->pages)
		goto err_free;
	ret = account_locked_vm(current->mm, pin->npages, true);
	if (ret)
		goto err_free;
	pin->mm = current->mm;
	mmgrab(pin->mm);
	ret = simaccel_pin_pages(pin, user_addr, read_only);
	if (ret)
		goto err_unaccount;
	ret = simaccel_pin_map(sdev, pin);
	if (ret)
		goto err_unpin;
	atomic64_add(pin->npages << PAGE_SHIFT, &sdev->host_pinned);
	return pin;

err_unpin:
	unpin_user_pages(pin->pages, pin->npages);
err_unaccount:
	account_locked_vm(pin->mm, pin->npages, false);
	mmdrop(pin->mm);
err_free:
	kvfree(pin->pages);
	kfree(pin);
	return ERR_PTR(ret);
}

/* Once the device can no longer touch the pages. */
void simaccel_unpin(struct simaccel_device *sdev, struct simaccel_pin *pin)
{
	atomic64_sub(pin->npages << PAGE_SHIFT, &sdev->host_pinned);
	dma_unmap_sgtable(sdev->drm.dev, &pin->sgt, pin->dir, 0);
	sg_free_table(&pin->sgt);
	unpin_user_pages_dirty_lock(pin->pages, pin->npages,
				    pin->dir != DMA_TO_DEVICE);
	account_locked_vm(pin->mm, pin->npages, false);
	mmdrop(pin->mm);
	kvfree(pin->pages);
	kfree(pin);
}
