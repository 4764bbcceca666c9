/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: the DRM accel driver for the simulated PCIe accelerator.
 */
#ifndef __SIMACCEL_DRV_H__
#define __SIMACCEL_DRV_H__

#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_mm.h>
#include <drm/drm_print.h>
#include <drm/gpu_scheduler.h>
#include <linux/kref.h>
#include <linux/maple_tree.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/xarray.h>

#include "../include/accel_hw.h"
#include "../uapi/simaccel_accel.h"
#include "simaccel_reset.h"

#define DRIVER_NAME		"simaccel"
#define DRIVER_DESC		"Driver for the simulated accel PCIe accelerator"
#define SIMACCEL_DRIVER_MAJOR	0
#define SIMACCEL_DRIVER_MINOR	2
#define SIMACCEL_DRIVER_PATCH	0

/* Debug output by category: the module parameter dbg_mask selects them. */
#define SIMACCEL_DBG_REG	BIT(0)
#define SIMACCEL_DBG_IOCTL	BIT(1)
#define SIMACCEL_DBG_JOB	BIT(2)
#define SIMACCEL_DBG_IRQ	BIT(3)

extern unsigned int simaccel_dbg_mask;

#define simaccel_dbg(sdev, type, fmt, ...)				\
	do {								\
		if (unlikely(SIMACCEL_DBG_##type & simaccel_dbg_mask))	\
			drm_dbg(&(sdev)->drm, "[%s] " fmt, #type,	\
				##__VA_ARGS__);				\
	} while (0)

/**
 * struct simaccel_device - one bound PCI function
 * @drm: the DRM device; its lifetime (drmm) is the structure's
 * @regs: BAR0, the control registers
 * @vram_bar: bus address of BAR2, all of VRAM
 * @vram_size: bytes of VRAM
 * @hw_version: ACCEL_REG_VERSION
 * @caps: ACCEL_CAP_* bits
 * @num_queues: hardware DMA queues
 * @hostfs: the tmpfs that HOST buffers' pages come from, mounted with
 *	huge=within_size; NULL where it could not be (no THP): the kernel's
 *	shmem mount serves them then
 * @vram: the kernel's write-combined mapping of BAR2
 * @vram_mm: free and used VRAM ranges, under @addr_lock
 * @host_mm: free and used device addresses of system memory (offsets from
 *	DRM_SIMACCEL_HOST_BASE), under @addr_lock
 * @addr_lock: protects @vram_mm and @host_mm
 * @hwqs: the hardware queues, @num_queues of them
 * @scheds: their schedulers, the list every entity is given
 * @desc_bytes: the most bytes one descriptor moves
 * @slice_bytes: the most bytes one job moves, unless one descriptor does
 * @clear_entity: where the jobs that clear VRAM queue
 * @clear_lock: arms and pushes those jobs in order
 * @settle_pending: memory on its way back: clearing jobs, and jobs whose
 *	fence signalled, whose buffers are not yet let go; counted by the
 *	parity of @settle_epoch when each began (simaccel_job_wait_released())
 * @settle_epoch: advanced by a creation that found VRAM full, so that it
 *	waits for what was under way then, not for what others start later
 * @settle_lock: a job's reading of @settle_epoch and its count, against
 *	an advance
 * @clears_wq: where a creation that found VRAM full, and MEM_INFO's
 *	SETTLE, wait for those counts
 * @dma_maps: DMA mappings of system memory for the device (struct
 *	simaccel_dma_map), undone at removal
 * @dma_lock: protects @dma_maps and their state
 * @peer_imports: other devices' buffers that are imports of this one's
 *	VRAM (struct simaccel_bo.peer_link), revoked at removal
 * @peer_lock: protects @peer_imports
 * @imports: this device's imports of other devices' dma-bufs, one each
 *	(struct simaccel_bo.import_link)
 * @import_lock: protects @imports
 * @vram_used: bytes of VRAM in buffers, for sysfs
 * @host_pinned: bytes of system memory pinned for the device (HOST
 *	buffers, USERPTR buffers, user memory of jobs), for sysfs
 * @quotas: VRAM charged to each user (struct simaccel_quota by uid)
 * @vram_limit_per_user: bytes of VRAM one user may hold, 0 for no limit
 * @resets: whole-device resets since the binding, by enum
 *	simaccel_reset_cause (simaccel_reset.c)
 * @reset_failed: jobs the reset under way failed, for its trace event
 * @reset_lock: held from the stop of a whole-device reset to its restart
 * @reset_work: the driver's own reset (simaccel_reset_schedule())
 * @reset_cause: why @reset_work was queued
 * @reset_pending: @reset_work is asked for and has not emptied the rings
 *	yet: the first to set it queues the work (simaccel_reset_schedule())
 * @pci_error_stopped: PCI error recovery stopped the device and has not
 *	restarted it (simaccel_reset.c); under @reset_lock
 *
 * The fields above @vram are set at probe and constant afterwards.
 */
struct simaccel_device {
	struct drm_device drm;
	void __iomem *regs;
	resource_size_t vram_bar;
	u64 vram_size;
	u32 hw_version;
	u32 caps;
	u32 num_queues;
	struct vfsmount *hostfs;
	void __iomem *vram;
	struct drm_mm vram_mm;
	struct drm_mm host_mm;
	struct mutex addr_lock;		/* protects vram_mm, host_mm */
	struct simaccel_hwq *hwqs;
	struct drm_gpu_scheduler **scheds;
	u64 desc_bytes;
	u64 slice_bytes;
	struct drm_sched_entity clear_entity;
	struct mutex clear_lock;	/* orders clear_entity's jobs */
	atomic_t settle_pending[2];
	atomic64_t settle_epoch;
	spinlock_t settle_lock;		/* @settle_epoch against the counts */
	wait_queue_head_t clears_wq;
	struct list_head dma_maps;
	struct mutex dma_lock;		/* protects dma_maps */
	struct list_head peer_imports;
	struct mutex peer_lock;		/* protects peer_imports */
	struct list_head imports;
	struct mutex import_lock;	/* protects imports */
	atomic64_t vram_used;
	atomic64_t host_pinned;
	struct xarray quotas;
	u64 vram_limit_per_user;
	atomic_t resets[SIMACCEL_RESET_CAUSES];
	u32 reset_failed;
	struct mutex reset_lock;	/* serializes whole-device resets */
	struct work_struct reset_work;
	enum simaccel_reset_cause reset_cause;
	atomic_t reset_pending;
	bool pci_error_stopped;
};

/**
 * struct simaccel_usage - a file's share of the device
 * @ref: held by the file and by each of its queues, which outlive it
 * @client_id: the file's DRM client id (fdinfo's drm-client-id), for the
 *	trace events and the devcoredump
 * @busy_ns: the time its jobs kept the hardware queues busy (see
 *	simaccel_hwq.c), for DRM fdinfo
 * @lock: protects @onboard and @onboard_cost (taken in fence callbacks)
 * @onboard: its jobs let onto the hardware whose fence has not signalled
 *	(struct simaccel_job.onboard_link), oldest first
 * @onboard_cost: their cost
 * @window: the cost of its jobs let onto the hardware at once, at most
 * @queues: its queues not yet freed, those left to drain included
 * @hangs: its jobs that made no progress until the time-out
 * @banned: @hangs reached SIMACCEL_BAN_HANGS: its jobs not yet on the
 *	hardware fail, and SUBMIT refuses more (simaccel_job_hung())
 * @user: the record of the user who opened the file, whose hangs are
 *	counted and banned together (simaccel_quota.c); NULL for a file
 *	opened with CAP_SYS_ADMIN
 */
struct simaccel_usage {
	struct kref ref;
	u64 client_id;
	atomic64_t busy_ns;
	spinlock_t lock;		/* protects onboard, onboard_cost */
	struct list_head onboard;
	u64 onboard_cost;
	u64 window;
	atomic_t queues;
	atomic_t hangs;
	bool banned;
	struct simaccel_quota *user;
};

/**
 * struct simaccel_file - what one open file holds
 * @sdev: its device
 * @lock: protects the handle counts in @addrs, and @queues' creation and
 *	destruction
 * @addrs: device-address ranges of the buffers this file has handles to,
 *	each a struct simaccel_addr; readers take the tree's own lock
 * @queues: its queues by handle
 * @next_queue: where the search for a free queue handle starts
 * @usage: its jobs' engine time
 * @syncobj_lock: makes its syncobjs one at a time, within the limit
 */
struct simaccel_file {
	struct simaccel_device *sdev;
	struct mutex lock;		/* protects addrs' counts, queues */
	struct maple_tree addrs;
	struct xarray queues;
	u32 next_queue;
	struct simaccel_usage *usage;
	struct mutex syncobj_lock;	/* makes syncobjs one at a time */
};

/*
 * Where jobs let go of their memory and of their device reference. The last
 * of those works may release a device that was unbound and has no file
 * left, with no module reference held: module exit drains the queue.
 */
extern struct workqueue_struct *simaccel_wq;

/*
 * Where queues that their file let go of drain: their jobs reach the
 * hardware a window at a time, which may take minutes, and neither close()
 * nor QUEUE_DESTROY waits for that. Module exit drains it too.
 */
extern struct workqueue_struct *simaccel_drain_wq;

static inline struct simaccel_file *to_simaccel_file(struct drm_file *file)
{
	return file->driver_priv;
}

static inline struct simaccel_device *to_simaccel(struct drm_device *drm)
{
	return container_of(drm, struct simaccel_device, drm);
}

static inline struct pci_dev *to_pci(struct simaccel_device *sdev)
{
	return to_pci_dev(sdev->drm.dev);
}

#endif /* __SIMACCEL_DRV_H__ */
