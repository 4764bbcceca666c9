/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: the hardware queues: rings, completion fences, interrupts and
 * recovery.
 */
#ifndef __SIMACCEL_HWQ_H__
#define __SIMACCEL_HWQ_H__

#include <linux/dma-fence.h>
#include <linux/spinlock.h>

#include "simaccel_drv.h"

struct simaccel_bo;
struct simaccel_coredump;
struct simaccel_job;

/**
 * struct simaccel_hwq - one hardware DMA queue and its scheduler
 * @sdev: the device
 * @index: the queue's number in the hardware
 * @sched: the drm_sched instance that feeds it
 * @lock: protects everything below, and is the lock of its fences
 * @ring: the descriptor ring, @ring_size entries, coherent DMA memory
 * @ring_dma: its bus address
 * @ring_size: entries, a power of two
 * @tail: where the next descriptor goes
 * @emitted: descriptors written since the queue was started, which is
 *	what the device's ACCEL_Q_COMPLETED counts toward
 * @done: where the device's FENCE descriptors write the last job's seqno
 * @done_dma: its bus address
 * @context: the dma_fence context of the queue's hardware fences
 * @seqno: the last seqno handed out
 * @inflight: jobs on the ring, in ring order
 * @last_completed: ACCEL_Q_COMPLETED at the last time-out check
 * @dead: the device is gone: nothing more reaches the ring
 * @resetting: a device reset is under way (simaccel_reset.c): the ring
 *	is empty and the queue stopped until it ends
 * @busy_ns: the time its jobs kept it busy, summed as each one's fence
 *	signals: from the later of the job's going on the ring and the end of
 *	the job before it, to its own end; idle time is not in it
 * @last_done: when the last job's fence signalled
 * @dump: its devcoredump's snapshot (simaccel_coredump.c)
 * @name: for the scheduler and the interrupt
 */
struct simaccel_hwq {
	struct simaccel_device *sdev;
	u32 index;
	struct drm_gpu_scheduler sched;
	spinlock_t lock;		/* protects the ring and in-flight jobs */
	struct accel_desc *ring;
	dma_addr_t ring_dma;
	u32 ring_size;
	u32 tail;
	u64 emitted;
	__le64 *done;
	dma_addr_t done_dma;
	u64 context;
	u64 seqno;
	struct list_head inflight;
	u64 last_completed;
	bool dead;
	bool resetting;
	u64 busy_ns;
	ktime_t last_done;
	struct simaccel_coredump *dump;
	char name[24];
};

static inline struct simaccel_hwq *to_simaccel_hwq(struct drm_gpu_scheduler *sched)
{
	return container_of(sched, struct simaccel_hwq, sched);
}

int simaccel_hwq_init(struct simaccel_device *sdev);
int simaccel_irq_init(struct simaccel_device *sdev);
struct dma_fence *simaccel_hwq_run(struct simaccel_hwq *hwq,
				   struct simaccel_job *job);
bool simaccel_hwq_recover(struct simaccel_hwq *hwq);
u64 simaccel_hwq_busy_ns(struct simaccel_hwq *hwq);
bool simaccel_hwq_dump_reset(struct simaccel_hwq *hwq, const char *cause);
u32 simaccel_hwq_reset_prepare(struct simaccel_hwq *hwq);
void simaccel_hwq_reset_done(struct simaccel_hwq *hwq);
struct dma_fence *simaccel_hwq_last_fence(struct simaccel_hwq *hwq);
void simaccel_hwq_kill_all(struct simaccel_device *sdev);
void simaccel_hwq_revoke_import(struct simaccel_device *sdev,
				struct simaccel_bo *bo);

#endif /* __SIMACCEL_HWQ_H__ */
