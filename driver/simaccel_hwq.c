// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: the hardware queues: rings, completion fences, interrupts and
 * recovery.
 *
 * Each hardware queue has a ring of descriptors that only its scheduler
 * writes, and a fence page. A job is its descriptors followed by a FENCE
 * descriptor that writes the job's seqno to the fence page and raises the
 * queue's vector; the handler signals every in-flight job up to the seqno
 * found there. drm_sched's credits are ring entries, so the ring never
 * overflows: a job's entries count until its fence has signalled, and by
 * then the device has passed them.
 *
 * Recovery, from drm_sched's time-out handler (a time-out, or an error
 * interrupt through drm_sched_fault()): a queue whose completion counter
 * moved since the last check is making progress and is left alone.
 * Otherwise the queue is reset first, so the device no longer touches
 * anything; then the jobs it completed are signalled, the one it was
 * running is signalled with an error (-EIO for a device error, -ETIMEDOUT
 * for no progress), and the rest are written to the ring again from its
 * start. Their memory is released by drm_sched after their fences signal,
 * so never while the device can still reach it. The failed job, the queue's
 * registers and its ring go to a devcoredump (simaccel_coredump.c).
 *
 * Busy time: a job keeps its queue busy from the later of its going on the
 * ring and the end of the job before it, to its own end (the signalling of
 * its fence: the device has no clock of its own). The queue's total is the
 * sum of its jobs', and each file's fdinfo gets its own jobs' share, so the
 * device's total is at least the sum of any files' (simaccel_sysfs.c).
 *
 * Power: a job holds a runtime-PM reference from its going on the ring to
 * the signalling of its fence, so that the device is in D0 while anything
 * is on a ring (simaccel_pm.c).
 */
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <linux/interrupt.h>
#include <linux/iopoll.h>

#include "simaccel_coredump.h"
#include "simaccel_hw.h"
#include "simaccel_hwq.h"
#include "simaccel_job.h"
#include "simaccel_pm.h"
#include "simaccel_trace.h"

#define SIMACCEL_RING_SIZE	32768
/* The most bytes a descriptor moves, unthrottled. */
#define SIMACCEL_DESC_MAX	SZ_4M
/* The most bytes a job moves, unthrottled: a few ms at memory speed. */
#define SIMACCEL_SLICE_MAX	SZ_16M

static unsigned int simaccel_job_timeout_ms = 2000;
module_param_named(job_timeout_ms, simaccel_job_timeout_ms, uint, 0644);
MODULE_PARM_DESC(job_timeout_ms,
		 "fail a job after this long without device progress (ms; for devices bound afterwards)");

static unsigned int simaccel_slice_ms = 20;
module_param_named(slice_ms, simaccel_slice_ms, uint, 0644);
MODULE_PARM_DESC(slice_ms,
		 "cut submissions into jobs of about this long at the device's advertised bandwidth, one descriptor at least (ms; for devices bound afterwards)");

/* A job, its FENCE included, takes at most half a ring. */
static_assert(DRM_SIMACCEL_MAX_DESCS + 1 <= SIMACCEL_RING_SIZE / 2);

/*
 * The time-out sees progress only when a descriptor completes: size them
 * so that one takes at most a quarter of the time-out at the bandwidth
 * the device advertises (a throttled device), 4 MiB at most.
 */
static u64 simaccel_hwq_desc_bytes(struct simaccel_device *sdev)
{
	u64 bw = simaccel_read(sdev, ACCEL_REG_DMA_BW_LO) |
		 (u64)simaccel_read(sdev, ACCEL_REG_DMA_BW_HI) << 32;
	u64 bytes;

	if (!bw)
		return SIMACCEL_DESC_MAX;
	bytes = mul_u64_u32_div(bw, max(simaccel_job_timeout_ms, 10U), 4000);
	return clamp_t(u64, bytes ? rounddown_pow_of_two(bytes) : 0, SZ_4K,
		       SIMACCEL_DESC_MAX);
}

/*
 * The bytes one job moves at most, so that the scheduler can serve
 * another file's work between the jobs of a large submission: a slice of
 * the advertised bandwidth, SIMACCEL_SLICE_MAX unthrottled.
 */
static u64 simaccel_hwq_slice_bytes(struct simaccel_device *sdev)
{
	u64 bw = simaccel_read(sdev, ACCEL_REG_DMA_BW_LO) |
		 (u64)simaccel_read(sdev, ACCEL_REG_DMA_BW_HI) << 32;

	if (!bw)
		return SIMACCEL_SLICE_MAX;
	return clamp_t(u64, mul_u64_u32_div(bw, simaccel_slice_ms, 1000), SZ_4K,
		       SIMACCEL_SLICE_MAX);
}

static const char *simaccel_fence_driver_name(struct dma_fence *fence)
{
	return DRIVER_NAME;
}

static const char *simaccel_fence_timeline_name(struct dma_fence *fence)
{
	struct simaccel_hwq *hwq =
		container_of(fence->lock, struct simaccel_hwq, lock);

	return hwq->name;
}

static const struct dma_fence_ops simaccel_fence_ops = {
	.get_driver_name = simaccel_fence_driver_name,
	.get_timeline_name = simaccel_fence_timeline_name,
};

/* The device's name, for the trace events. */
static const char *simaccel_hwq_dev(struct simaccel_hwq *hwq)
{
	return dev_name(hwq->sdev->drm.dev);
}

static u32 simaccel_hwq_read(struct simaccel_hwq *hwq, u32 reg)
{
	return simaccel_read(hwq->sdev, ACCEL_QUEUE_REG(hwq->index, reg));
}

static void simaccel_hwq_write(struct simaccel_hwq *hwq, u32 reg, u32 val)
{
	simaccel_write(hwq->sdev, ACCEL_QUEUE_REG(hwq->index, reg), val);
}

static u64 simaccel_hwq_completed(struct simaccel_hwq *hwq)
{
	u32 lo = simaccel_hwq_read(hwq, ACCEL_Q_COMPLETED_LO);

	return lo | (u64)simaccel_hwq_read(hwq, ACCEL_Q_COMPLETED_HI) << 32;
}

/* Program the ring of a stopped queue and start it, empty. */
static void simaccel_hwq_start(struct simaccel_hwq *hwq)
{
	lockdep_assert_held(&hwq->lock);
	simaccel_hwq_write(hwq, ACCEL_Q_RING_BASE_LO, lower_32_bits(hwq->ring_dma));
	simaccel_hwq_write(hwq, ACCEL_Q_RING_BASE_HI, upper_32_bits(hwq->ring_dma));
	simaccel_hwq_write(hwq, ACCEL_Q_RING_SIZE, hwq->ring_size);
	simaccel_hwq_write(hwq, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	hwq->tail = 0;
	hwq->emitted = 0;
	hwq->last_completed = 0;
}

/*
 * Stop the queue: when this returns, the device runs nothing of it.
 * Returns false if the queue's reset did not take (its bit stays set):
 * the device hangs, and only a whole-device reset brings it back.
 */
static bool simaccel_hwq_stop(struct simaccel_hwq *hwq)
{
	lockdep_assert_held(&hwq->lock);
	simaccel_hwq_write(hwq, ACCEL_Q_CTRL, ACCEL_Q_CTRL_RESET);
	/* the read flushes the posted write; the device acts on the write */
	return !(simaccel_hwq_read(hwq, ACCEL_Q_CTRL) & ACCEL_Q_CTRL_RESET);
}

static void simaccel_hwq_emit(struct simaccel_hwq *hwq,
			      const struct accel_desc *desc)
{
	lockdep_assert_held(&hwq->lock);
	hwq->ring[hwq->tail] = *desc;
	hwq->tail = (hwq->tail + 1) & (hwq->ring_size - 1);
	hwq->emitted++;
}

/*
 * What a revoked job's descriptors become: a FENCE that writes what the
 * fence page holds by the time the device gets there (the seqno of the job
 * before it on the ring), without an interrupt: nothing.
 */
static struct accel_desc simaccel_hwq_nothing(struct simaccel_hwq *hwq,
					      struct simaccel_job *job)
{
	return (struct accel_desc){
		.opcode = cpu_to_le32(ACCEL_OP_FENCE),
		.src = cpu_to_le64(job->seqno - 1),
		.dst = cpu_to_le64(hwq->done_dma),
	};
}

/* A job's descriptors and its FENCE, without the doorbell. */
static void simaccel_hwq_emit_job(struct simaccel_hwq *hwq,
				  struct simaccel_job *job)
{
	struct accel_desc nothing = simaccel_hwq_nothing(hwq, job);
	struct accel_desc fence = {
		.opcode = cpu_to_le32(ACCEL_OP_FENCE),
		.flags = cpu_to_le32(ACCEL_DESC_IRQ),
		.src = cpu_to_le64(job->seqno),
		.dst = cpu_to_le64(hwq->done_dma),
	};
	u32 i;

	job->started = ktime_get();
	job->ring_first = hwq->emitted;
	for (i = 0; i < job->ndesc; i++)
		simaccel_hwq_emit(hwq, job->revoked ? &nothing : &job->descs[i]);
	simaccel_hwq_emit(hwq, &fence);
}

/*
 * Keep @job, on @hwq's ring, from moving anything: its descriptors become
 * nothing (it fails with -ENODEV when its FENCE passes). Returns whether
 * the device had not reached them yet: the device fetches the descriptor
 * at its completion count, so if that count is still below the job's
 * first one after the rewrite, it will only ever fetch the new ones.
 */
static bool simaccel_hwq_revoke_job(struct simaccel_hwq *hwq,
				    struct simaccel_job *job)
{
	struct accel_desc nothing = simaccel_hwq_nothing(hwq, job);
	u32 i;

	lockdep_assert_held(&hwq->lock);
	/* done but for its FENCE: it moved all it had to, and did no harm */
	if (simaccel_hwq_completed(hwq) >= job->ring_first + job->ndesc)
		return false;
	job->revoked = true;
	for (i = 0; i < job->ndesc; i++)
		hwq->ring[(job->ring_first + i) & (hwq->ring_size - 1)] = nothing;
	/* the ring's stores before the read of where the device is */
	wmb();
	return simaccel_hwq_completed(hwq) < job->ring_first;
}

/**
 * simaccel_hwq_revoke_import - keep the jobs on the rings that reach @bo
 *	from running
 * @sdev: the device that imported @bo
 * @bo: an import of a peer's VRAM, revoked: the peer is going
 *
 * Jobs that the device has not reached stop counting as on the hardware
 * (simaccel_job_revoked()), so that the peer's removal does not wait for
 * them, nor for the other users' work on the ring ahead of them; the peer
 * waits only for a job the device is running.
 */
void simaccel_hwq_revoke_import(struct simaccel_device *sdev,
				struct simaccel_bo *bo)
{
	struct simaccel_job *job;
	unsigned long flags;
	u32 q;

	for (q = 0; q < sdev->num_queues; q++) {
		struct simaccel_hwq *hwq = &sdev->hwqs[q];

		spin_lock_irqsave(&hwq->lock, flags);
		list_for_each_entry(job, &hwq->inflight, link)
			if (!job->revoked && simaccel_job_reaches(job, bo) &&
			    simaccel_hwq_revoke_job(hwq, job))
				simaccel_job_revoked(job);
		spin_unlock_irqrestore(&hwq->lock, flags);
	}
}

static void simaccel_hwq_doorbell(struct simaccel_hwq *hwq)
{
	lockdep_assert_held(&hwq->lock);
	/* writel() orders the ring's stores before the doorbell */
	simaccel_hwq_write(hwq, ACCEL_Q_TAIL, hwq->tail);
}

/* When the oldest job on the ring started keeping the queue busy. */
static ktime_t simaccel_hwq_busy_since(struct simaccel_hwq *hwq,
				       struct simaccel_job *job)
{
	lockdep_assert_held(&hwq->lock);
	return max(job->started, hwq->last_done);
}

static void simaccel_hwq_signal(struct simaccel_hwq *hwq,
				struct simaccel_job *job, int error)
{
	ktime_t now = ktime_get();
	u64 busy;

	lockdep_assert_held(&hwq->lock);
	busy = ktime_to_ns(ktime_sub(now, simaccel_hwq_busy_since(hwq, job)));
	hwq->busy_ns += busy;
	hwq->last_done = now;
	simaccel_job_account(job, busy);
	list_del_init(&job->link);
	/* the reference simaccel_hwq_run() took */
	simaccel_pm_put(hwq->sdev);
	if (!error && job->revoked)
		error = -ENODEV;
	trace_simaccel_job_done(simaccel_hwq_dev(hwq), hwq->index, job->base.id,
				hwq->context, job->seqno, job->ring_first,
				error, busy);
	if (error)
		dma_fence_set_error(job->hw_fence, error);
	dma_fence_signal_timestamp_locked(job->hw_fence, now);
}

/**
 * simaccel_hwq_busy_ns - the queue's busy time
 * @hwq: the queue
 *
 * Return: the busy time of its finished jobs and of the one it is on now,
 * in ns; it never decreases.
 */
u64 simaccel_hwq_busy_ns(struct simaccel_hwq *hwq)
{
	struct simaccel_job *job;
	unsigned long flags;
	u64 busy;

	spin_lock_irqsave(&hwq->lock, flags);
	busy = hwq->busy_ns;
	job = list_first_entry_or_null(&hwq->inflight, struct simaccel_job,
				       link);
	if (job)
		busy += ktime_to_ns(ktime_sub(ktime_get(),
					      simaccel_hwq_busy_since(hwq, job)));
	spin_unlock_irqrestore(&hwq->lock, flags);
	return busy;
}

/* Signal the jobs whose FENCE the device has written. */
static void simaccel_hwq_retire(struct simaccel_hwq *hwq)
{
	struct simaccel_job *job, *next;
	u64 done = le64_to_cpu(READ_ONCE(*hwq->done));

	lockdep_assert_held(&hwq->lock);
	list_for_each_entry_safe(job, next, &hwq->inflight, link) {
		if (job->seqno > done)
			break;
		simaccel_hwq_signal(hwq, job, 0);
	}
}

/**
 * simaccel_hwq_run - put a job on the ring
 * @hwq: the hardware queue its scheduler feeds
 * @job: the job
 *
 * Return: its hardware fence, referenced for the scheduler, or
 * ERR_PTR(-ENODEV) once the device is gone, or the error of its resume.
 */
struct dma_fence *simaccel_hwq_run(struct simaccel_hwq *hwq,
				   struct simaccel_job *job)
{
	unsigned long flags;
	int ret;

	/* the device stays in D0 until simaccel_hwq_signal() */
	ret = simaccel_pm_get(hwq->sdev);
	if (ret)
		return ERR_PTR(ret);
	spin_lock_irqsave(&hwq->lock, flags);
	if (hwq->dead) {
		spin_unlock_irqrestore(&hwq->lock, flags);
		simaccel_pm_put(hwq->sdev);
		return ERR_PTR(-ENODEV);
	}
	job->seqno = ++hwq->seqno;
	dma_fence_init(job->hw_fence, &simaccel_fence_ops, &hwq->lock,
		       hwq->context, job->seqno);
	/*
	 * A peer went between the job's check and here: a revocation that
	 * looked at the ring before it was on it did not see it.
	 */
	if (simaccel_job_reaches_revoked(job)) {
		job->revoked = true;
		simaccel_job_revoked(job);
	}
	/* its file's admission may wait for the fence from now on */
	smp_store_release(&job->hw_fence_live, true);
	list_add_tail(&job->link, &hwq->inflight);
	simaccel_hwq_emit_job(hwq, job);
	trace_simaccel_job_run(simaccel_hwq_dev(hwq), hwq->index, job->base.id,
			       hwq->context, job->seqno, job->ring_first, 0, 0);
	simaccel_hwq_doorbell(hwq);
	spin_unlock_irqrestore(&hwq->lock, flags);
	simaccel_dbg(hwq->sdev, JOB, "%s: job %llu, %u descriptors\n",
		     hwq->name, job->seqno, job->ndesc);
	return dma_fence_get(job->hw_fence);
}

/* Whether the device moved on since the last check, which it records. */
static bool simaccel_hwq_progressed(struct simaccel_hwq *hwq, u32 status)
{
	u64 completed = simaccel_hwq_completed(hwq);
	bool moved = completed != hwq->last_completed;

	lockdep_assert_held(&hwq->lock);
	hwq->last_completed = completed;
	return moved && !(status & (ACCEL_Q_STATUS_ERROR | ACCEL_Q_STATUS_STALLED));
}

/**
 * simaccel_hwq_recover - the time-out handler's work
 * @hwq: the queue whose oldest job timed out, or that reported an error
 *
 * Return: false if the device is gone.
 */
bool simaccel_hwq_recover(struct simaccel_hwq *hwq)
{
	struct simaccel_job *job, *guilty;
	bool dumping, stopped, failed = false;
	unsigned long flags;
	u32 status, requeued = 0;
	int error;

	spin_lock_irqsave(&hwq->lock, flags);
	if (hwq->dead) {
		spin_unlock_irqrestore(&hwq->lock, flags);
		return false;
	}
	/*
	 * a device reset failed what was on the ring, and restarts it; or one
	 * is on its way (another queue found the device hung, or it failed):
	 * it fails this ring's jobs too, none of them the hang's
	 */
	if (hwq->resetting || simaccel_reset_pending(hwq->sdev))
		goto out;
	simaccel_hwq_retire(hwq);
	/* an empty ring holds no runtime-PM reference: the device may be off */
	if (list_empty(&hwq->inflight))
		goto out;
	status = simaccel_hwq_read(hwq, ACCEL_Q_STATUS);
	if (simaccel_hwq_progressed(hwq, status))
		goto out;
	error = status & ACCEL_Q_STATUS_ERROR ? -EIO : -ETIMEDOUT;
	/* the reset clears the registers */
	dumping = simaccel_coredump_queue(hwq);
	stopped = simaccel_hwq_stop(hwq);
	/* the device hangs: the first queue to see it blames its job */
	if (!stopped && !simaccel_reset_schedule(hwq->sdev, SIMACCEL_RESET_HANG)) {
		spin_unlock_irqrestore(&hwq->lock, flags);
		if (dumping)
			simaccel_coredump_cancel(hwq);
		return true;
	}
	simaccel_hwq_retire(hwq);
	guilty = list_first_entry_or_null(&hwq->inflight, struct simaccel_job,
					  link);
	if (guilty) {
		drm_warn(&hwq->sdev->drm, "%s: job %llu %s\n", hwq->name,
			 guilty->seqno, error == -EIO ?
			 "failed on the device" : "made no progress");
		if (error == -ETIMEDOUT) {
			simaccel_job_hung(guilty);
			trace_simaccel_job_timeout(simaccel_hwq_dev(hwq),
						   hwq->index, guilty->base.id,
						   hwq->context, guilty->seqno,
						   guilty->ring_first, error, 0);
		}
		if (dumping)
			simaccel_coredump_job(hwq, guilty, error);
		failed = true;
		simaccel_hwq_signal(hwq, guilty, error);
	}
	if (!stopped) {
		/* the device reset fails the rest of the ring, then restarts it */
		drm_warn(&hwq->sdev->drm, "%s: queue reset did not take\n",
			 hwq->name);
		goto dump;
	}
	simaccel_hwq_start(hwq);
	list_for_each_entry(job, &hwq->inflight, link) {
		simaccel_hwq_emit_job(hwq, job);
		requeued++;
	}
	simaccel_hwq_doorbell(hwq);
	trace_simaccel_queue_reset(simaccel_hwq_dev(hwq), hwq->index, error,
				   requeued);
dump:
	spin_unlock_irqrestore(&hwq->lock, flags);
	if (dumping && failed)
		simaccel_coredump_emit(hwq);
	else if (dumping)
		simaccel_coredump_cancel(hwq);
	return true;

out:
	spin_unlock_irqrestore(&hwq->lock, flags);
	return true;
}

/**
 * simaccel_hwq_dump_reset - a devcoredump for a device reset
 * @hwq: the queue, its scheduler stopped
 * @cause: why the device is reset
 *
 * Of the queue's oldest job on the ring, which the reset is to fail, with
 * the queue's registers before the reset clears them.
 *
 * Return: whether there was one to dump.
 */
bool simaccel_hwq_dump_reset(struct simaccel_hwq *hwq, const char *cause)
{
	struct simaccel_job *job;
	unsigned long flags;
	bool dumping = false;

	spin_lock_irqsave(&hwq->lock, flags);
	simaccel_hwq_retire(hwq);
	job = list_first_entry_or_null(&hwq->inflight, struct simaccel_job,
				       link);
	if (job && !hwq->dead && simaccel_coredump_queue(hwq)) {
		simaccel_coredump_job(hwq, job, -ECANCELED);
		simaccel_coredump_reset(hwq, cause);
		dumping = true;
	}
	spin_unlock_irqrestore(&hwq->lock, flags);
	if (dumping)
		simaccel_coredump_emit(hwq);
	return dumping;
}

/**
 * simaccel_hwq_reset_prepare - stop a queue for a device reset
 * @hwq: the queue; its scheduler is stopped
 *
 * The queue stops, the jobs it completed are signalled and the others on
 * its ring fail with -ECANCELED: the reset loses the ring's registers, and
 * what a job had half done is not known. Nothing is put on the ring until
 * simaccel_hwq_reset_done(), and the time-out handler leaves it alone.
 *
 * Return: how many jobs failed.
 */
u32 simaccel_hwq_reset_prepare(struct simaccel_hwq *hwq)
{
	struct simaccel_job *job, *next;
	unsigned long flags;
	u32 failed = 0;

	spin_lock_irqsave(&hwq->lock, flags);
	if (!hwq->dead) {
		hwq->resetting = true;
		simaccel_hwq_stop(hwq);
	}
	simaccel_hwq_retire(hwq);
	list_for_each_entry_safe(job, next, &hwq->inflight, link) {
		simaccel_hwq_signal(hwq, job, -ECANCELED);
		failed++;
	}
	spin_unlock_irqrestore(&hwq->lock, flags);
	return failed;
}

/**
 * simaccel_hwq_reset_done - start a queue again after a device reset
 * @hwq: the queue, prepared by simaccel_hwq_reset_prepare()
 *
 * The reset cleared the ring's base and size: they are programmed again,
 * and the queue starts empty.
 */
void simaccel_hwq_reset_done(struct simaccel_hwq *hwq)
{
	unsigned long flags;

	spin_lock_irqsave(&hwq->lock, flags);
	if (!hwq->dead)
		simaccel_hwq_start(hwq);
	hwq->resetting = false;
	spin_unlock_irqrestore(&hwq->lock, flags);
}

/**
 * simaccel_hwq_last_fence - the hardware fence of the last job on the ring
 * @hwq: the queue
 *
 * Return: the fence, referenced, or NULL if the ring is empty. The jobs
 * before it on the ring signal before it does.
 */
struct dma_fence *simaccel_hwq_last_fence(struct simaccel_hwq *hwq)
{
	struct dma_fence *fence = NULL;
	struct simaccel_job *job;
	unsigned long flags;

	spin_lock_irqsave(&hwq->lock, flags);
	if (!list_empty(&hwq->inflight)) {
		job = list_last_entry(&hwq->inflight, struct simaccel_job, link);
		fence = dma_fence_get(job->hw_fence);
	}
	spin_unlock_irqrestore(&hwq->lock, flags);
	return fence;
}

/*
 * After drm_dev_unplug(): stop every queue and fail what was on them.
 * Jobs that reach run_job later fail there.
 */
void simaccel_hwq_kill_all(struct simaccel_device *sdev)
{
	struct simaccel_job *job, *next;
	unsigned long flags;
	u32 q;

	for (q = 0; q < sdev->num_queues; q++) {
		struct simaccel_hwq *hwq = &sdev->hwqs[q];

		spin_lock_irqsave(&hwq->lock, flags);
		hwq->dead = true;
		simaccel_hwq_stop(hwq);
		simaccel_hwq_retire(hwq);
		list_for_each_entry_safe(job, next, &hwq->inflight, link)
			simaccel_hwq_signal(hwq, job, -ENODEV);
		spin_unlock_irqrestore(&hwq->lock, flags);
	}
}

static irqreturn_t simaccel_hwq_irq(int irq, void *arg)
{
	struct simaccel_hwq *hwq = arg;
	unsigned long flags;

	/* acknowledge first: a completion after this raises the vector again */
	simaccel_write(hwq->sdev, ACCEL_REG_IRQ_STATUS, ACCEL_IRQ_QUEUE(hwq->index));
	spin_lock_irqsave(&hwq->lock, flags);
	simaccel_hwq_retire(hwq);
	spin_unlock_irqrestore(&hwq->lock, flags);
	return IRQ_HANDLED;
}

/* A queue halted: its scheduler's time-out handler runs now. */
static irqreturn_t simaccel_error_irq(int irq, void *arg)
{
	struct simaccel_device *sdev = arg;
	u32 q, dev_status;

	simaccel_write(sdev, ACCEL_REG_IRQ_STATUS, ACCEL_IRQ_ERROR);
	dev_status = simaccel_read(sdev, ACCEL_REG_DEV_STATUS);
	/* all ones: the device is gone, and removal follows */
	if (dev_status != U32_MAX && dev_status & ACCEL_DEV_STATUS_FATAL) {
		int idx;

		drm_err_ratelimited(&sdev->drm, "fatal device error\n");
		/* not after removal's drm_dev_unplug(): it cancels the work */
		if (drm_dev_enter(&sdev->drm, &idx)) {
			simaccel_reset_schedule(sdev, SIMACCEL_RESET_FATAL);
			drm_dev_exit(idx);
		}
		return IRQ_HANDLED;
	}
	for (q = 0; q < sdev->num_queues; q++) {
		struct simaccel_hwq *hwq = &sdev->hwqs[q];
		u32 status = simaccel_hwq_read(hwq, ACCEL_Q_STATUS);
		u32 error, desc;

		if (!(status & ACCEL_Q_STATUS_ERROR))
			continue;
		error = simaccel_hwq_read(hwq, ACCEL_Q_ERROR);
		desc = simaccel_hwq_read(hwq, ACCEL_Q_ERROR_DESC);
		simaccel_dbg(sdev, IRQ, "%s halted, error %u\n", hwq->name, error);
		trace_simaccel_fault(simaccel_hwq_dev(hwq), hwq->index, status,
				     error, desc);
		drm_sched_fault(&hwq->sched);
	}
	return IRQ_HANDLED;
}

/* MSI-X: a vector per queue, and one for errors. */
int simaccel_irq_init(struct simaccel_device *sdev)
{
	struct pci_dev *pdev = to_pci(sdev);
	u32 nq = sdev->num_queues, q;
	int ret;

	ret = pci_alloc_irq_vectors(pdev, nq + 1, nq + 1, PCI_IRQ_MSIX);
	if (ret < 0)
		return ret;
	for (q = 0; q < nq; q++) {
		ret = devm_request_irq(&pdev->dev, pci_irq_vector(pdev, q),
				       simaccel_hwq_irq, 0, sdev->hwqs[q].name,
				       &sdev->hwqs[q]);
		if (ret)
			return ret;
	}
	return devm_request_irq(&pdev->dev,
				pci_irq_vector(pdev, ACCEL_MSIX_ERROR_VECTOR(nq)),
				simaccel_error_irq, 0, DRIVER_NAME "-error", sdev);
}

static void simaccel_sched_fini(struct drm_device *drm, void *arg)
{
	drm_sched_fini(arg);
}

/*
 * The ring is 2 MiB contiguous on the bus: without an IOMMU, a high-order
 * allocation, which users' pinned buffers can leave nothing for. Binding
 * then fails with ENOMEM and says why, without the allocator's stack
 * dump, which reads as a kernel bug.
 */
static int simaccel_hwq_alloc_ring(struct simaccel_hwq *hwq)
{
	struct device *dev = hwq->sdev->drm.dev;
	size_t bytes = (size_t)hwq->ring_size * ACCEL_DESC_SIZE;

	hwq->ring = dmam_alloc_attrs(dev, bytes, &hwq->ring_dma, GFP_KERNEL,
				     DMA_ATTR_NO_WARN);
	if (!hwq->ring) {
		drm_err(&hwq->sdev->drm,
			"queue %u: cannot allocate its %zu MiB ring (contiguous on the bus: without an IOMMU, in memory): the bind fails\n",
			hwq->index, bytes / SZ_1M);
		return -ENOMEM;
	}
	return 0;
}

static int simaccel_hwq_init_one(struct simaccel_device *sdev,
				 struct simaccel_hwq *hwq, u32 index)
{
	struct device *dev = sdev->drm.dev;
	unsigned long flags;
	int ret;

	hwq->sdev = sdev;
	hwq->index = index;
	hwq->ring_size = SIMACCEL_RING_SIZE;
	spin_lock_init(&hwq->lock);
	INIT_LIST_HEAD(&hwq->inflight);
	hwq->context = dma_fence_context_alloc(1);
	snprintf(hwq->name, sizeof(hwq->name), "%s-q%u", dev_name(dev), index);
	ret = simaccel_hwq_alloc_ring(hwq);
	if (ret)
		return ret;
	hwq->done = dmam_alloc_coherent(dev, sizeof(*hwq->done),
					&hwq->done_dma, GFP_KERNEL);
	if (!hwq->done)
		return -ENOMEM;
	ret = simaccel_coredump_init(hwq);
	if (ret)
		return ret;
	ret = drm_sched_init(&hwq->sched, &simaccel_sched_ops, NULL,
			     DRM_SCHED_PRIORITY_COUNT, hwq->ring_size - 1, 0,
			     msecs_to_jiffies(max(simaccel_job_timeout_ms, 10U)), NULL,
			     NULL, hwq->name, dev);
	if (ret)
		return ret;
	/* the scheduler outlives the binding: files may hold its entities */
	ret = drmm_add_action_or_reset(&sdev->drm, simaccel_sched_fini,
				       &hwq->sched);
	if (ret)
		return ret;
	spin_lock_irqsave(&hwq->lock, flags);
	simaccel_hwq_start(hwq);
	spin_unlock_irqrestore(&hwq->lock, flags);
	return 0;
}

int simaccel_hwq_init(struct simaccel_device *sdev)
{
	u32 q;
	int ret;

	sdev->hwqs = drmm_kcalloc(&sdev->drm, sdev->num_queues,
				  sizeof(*sdev->hwqs), GFP_KERNEL);
	if (!sdev->hwqs)
		return -ENOMEM;
	sdev->desc_bytes = simaccel_hwq_desc_bytes(sdev);
	sdev->slice_bytes = simaccel_hwq_slice_bytes(sdev);
	for (q = 0; q < sdev->num_queues; q++) {
		ret = simaccel_hwq_init_one(sdev, &sdev->hwqs[q], q);
		if (ret)
			return ret;
	}
	return 0;
}
