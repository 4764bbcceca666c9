// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: a devcoredump (/sys/class/devcoredump/devcdN/data) when the
 * recovery fails a job: a time-out, or an error that halted its queue;
 * and when a whole-device reset fails the jobs on the rings (of the first
 * queue with one).
 *
 * The recovery takes the snapshot under the queue's lock, in two steps:
 * the queue's registers and the ring around HEAD before it resets the
 * queue (which clears them), then the job it fails. It allocates nothing
 * there: memory reclaim may wait for the fences the recovery is to signal.
 * Each queue has a snapshot of its own, allocated at probe; a recovery
 * that finds it in use (the last one's text not yet written) takes none.
 * A work item writes the text and hands it to dev_coredumpv(), which keeps
 * one dump per device: while one is pending (until it is read and
 * dismissed by a write, or for 5 minutes), later ones are dropped. The
 * format is in docs/uapi.md.
 */
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>
#include <linux/devcoredump.h>
#include <linux/utsname.h>
#include <linux/vmalloc.h>

#include "simaccel_coredump.h"
#include "simaccel_hw.h"
#include "simaccel_hwq.h"
#include "simaccel_job.h"

/* Ring entries shown either side of HEAD. */
#define SIMACCEL_DUMP_RING	8
/* The failing job's descriptors shown, at most. */
#define SIMACCEL_DUMP_DESCS	64
/* The text's room: the descriptors at about 110 bytes each, and the rest. */
#define SIMACCEL_DUMP_SIZE	SZ_32K

static const struct {
	const char *name;
	u32 reg;
} simaccel_dump_regs[] = {
	{ "RING_BASE_LO", ACCEL_Q_RING_BASE_LO },
	{ "RING_BASE_HI", ACCEL_Q_RING_BASE_HI },
	{ "RING_SIZE", ACCEL_Q_RING_SIZE },
	{ "CTRL", ACCEL_Q_CTRL },
	{ "HEAD", ACCEL_Q_HEAD },
	{ "TAIL", ACCEL_Q_TAIL },
	{ "STATUS", ACCEL_Q_STATUS },
	{ "ERROR", ACCEL_Q_ERROR },
	{ "ERROR_DESC", ACCEL_Q_ERROR_DESC },
	{ "FAULT_INJECT", ACCEL_Q_FAULT_INJECT },
	{ "COMPLETED_LO", ACCEL_Q_COMPLETED_LO },
	{ "COMPLETED_HI", ACCEL_Q_COMPLETED_HI },
};

/**
 * struct simaccel_coredump - what the dump shows, taken under the lock
 * @hwq: its queue
 * @busy: bit 0: taken by a recovery, until its text is written
 * @work: writes the text and hands it over (simaccel_wq), holding the
 *	device
 * @when: ktime_get() at the snapshot
 * @index: the queue's number
 * @name: the queue's name
 * @dev_status: ACCEL_REG_DEV_STATUS
 * @irq_status: ACCEL_REG_IRQ_STATUS
 * @regs: the queue's registers, as simaccel_dump_regs lists them
 * @emitted: descriptors the driver wrote since the queue was started
 * @ring_size: entries in the ring
 * @head: HEAD
 * @ring_start: the ring index of @ring[0]
 * @ring: the ring around HEAD
 * @error: what the job fails with; 0 until simaccel_coredump_job()
 * @reset: the cause of the device reset that fails it, NULL for a
 *	recovery's
 * @id: the job's drm_sched id
 * @fence_ctx: its finished fence's context
 * @fence_seqno: and seqno
 * @hw_seqno: its hardware fence's seqno (context: the queue's)
 * @hw_ctx: that context
 * @client: its file's DRM client id
 * @queue: its user queue's handle, 0 for the kernel's clearing
 * @submission: the submission's seqno in that queue
 * @ring_first: where its first descriptor went, counted as @emitted
 * @ndesc: its descriptors
 * @descs: the first of them
 */
struct simaccel_coredump {
	struct simaccel_hwq *hwq;
	unsigned long busy;
	struct work_struct work;
	ktime_t when;
	u32 index;
	char name[24];
	u32 dev_status;
	u32 irq_status;
	u32 regs[ARRAY_SIZE(simaccel_dump_regs)];
	u64 emitted;
	u32 ring_size;
	u32 head;
	u32 ring_start;
	struct accel_desc ring[2 * SIMACCEL_DUMP_RING];
	int error;
	const char *reset;
	u64 id;
	u64 fence_ctx;
	u64 fence_seqno;
	u64 hw_ctx;
	u64 hw_seqno;
	u64 client;
	u32 queue;
	u64 submission;
	u64 ring_first;
	u32 ndesc;
	struct accel_desc descs[SIMACCEL_DUMP_DESCS];
};

static void simaccel_coredump_work(struct work_struct *work);

/* The queue's snapshot, for the life of the device. */
int simaccel_coredump_init(struct simaccel_hwq *hwq)
{
	hwq->dump = drmm_kzalloc(&hwq->sdev->drm, sizeof(*hwq->dump),
				 GFP_KERNEL);
	if (!hwq->dump)
		return -ENOMEM;
	hwq->dump->hwq = hwq;
	INIT_WORK(&hwq->dump->work, simaccel_coredump_work);
	return 0;
}

/*
 * Take the queue's snapshot and record its state, before its reset clears
 * it. Returns false if the last one is still in use: no dump then.
 */
bool simaccel_coredump_queue(struct simaccel_hwq *hwq)
{
	struct simaccel_coredump *cd = hwq->dump;
	struct simaccel_device *sdev = hwq->sdev;
	u32 i;

	lockdep_assert_held(&hwq->lock);
	if (test_and_set_bit_lock(0, &cd->busy))
		return false;
	cd->error = 0;
	cd->reset = NULL;
	cd->when = ktime_get();
	cd->index = hwq->index;
	strscpy(cd->name, hwq->name);
	cd->dev_status = simaccel_read(sdev, ACCEL_REG_DEV_STATUS);
	cd->irq_status = simaccel_read(sdev, ACCEL_REG_IRQ_STATUS);
	for (i = 0; i < ARRAY_SIZE(simaccel_dump_regs); i++)
		cd->regs[i] = simaccel_read(sdev,
					    ACCEL_QUEUE_REG(hwq->index,
							    simaccel_dump_regs[i].reg));
	cd->emitted = hwq->emitted;
	cd->ring_size = hwq->ring_size;
	cd->head = simaccel_read(sdev, ACCEL_QUEUE_REG(hwq->index, ACCEL_Q_HEAD));
	cd->ring_start = (cd->head - SIMACCEL_DUMP_RING) & (cd->ring_size - 1);
	for (i = 0; i < ARRAY_SIZE(cd->ring); i++)
		cd->ring[i] = hwq->ring[(cd->ring_start + i) & (cd->ring_size - 1)];
	return true;
}

/* The job the recovery fails with @error, before its fence signals. */
void simaccel_coredump_job(struct simaccel_hwq *hwq, struct simaccel_job *job,
			   int error)
{
	struct dma_fence *finished = &job->base.s_fence->finished;
	struct simaccel_coredump *cd = hwq->dump;

	lockdep_assert_held(&hwq->lock);
	cd->error = error;
	cd->id = job->base.id;
	cd->fence_ctx = finished->context;
	cd->fence_seqno = finished->seqno;
	cd->hw_ctx = job->hw_fence->context;
	cd->hw_seqno = job->seqno;
	cd->client = job->usage ? job->usage->client_id : 0;
	cd->queue = simaccel_job_queue_handle(job);
	cd->submission = job->submission;
	cd->ring_first = job->ring_first;
	cd->ndesc = job->ndesc;
	memcpy(cd->descs, job->descs,
	       min(job->ndesc, SIMACCEL_DUMP_DESCS) * sizeof(*cd->descs));
}

static const char *simaccel_op_name(u32 opcode)
{
	static const char * const names[] = { "NOP", "COPY", "FILL", "FENCE" };

	return opcode < ARRAY_SIZE(names) ? names[opcode] : "?";
}

static void simaccel_print_desc(struct drm_printer *p, u32 index,
				const struct accel_desc *d, const char *mark)
{
	drm_printf(p, "  %5u: %-5s flags=%#x src=%#llx dst=%#llx len=%llu%s\n",
		   index, simaccel_op_name(le32_to_cpu(d->opcode)),
		   le32_to_cpu(d->flags), le64_to_cpu(d->src),
		   le64_to_cpu(d->dst), le64_to_cpu(d->len), mark);
}

static void simaccel_coredump_print(struct drm_printer *p,
				    struct simaccel_coredump *cd,
				    struct simaccel_device *sdev)
{
	u32 i;
	struct timespec64 ts = ktime_to_timespec64(cd->when);

	drm_printf(p, "simaccel devcoredump 1\n");
	drm_printf(p, "kernel: %s\n", init_utsname()->release);
	drm_printf(p, "driver: %s %d.%d.%d\n", DRIVER_NAME,
		   SIMACCEL_DRIVER_MAJOR, SIMACCEL_DRIVER_MINOR,
		   SIMACCEL_DRIVER_PATCH);
	drm_printf(p, "device: %s\n", dev_name(sdev->drm.dev));
	drm_printf(p, "time: %lld.%09ld\n", (s64)ts.tv_sec, ts.tv_nsec);
	if (cd->reset)
		drm_printf(p, "reason: device reset (%s)\n", cd->reset);
	else
		drm_printf(p, "reason: %s\n", cd->error == -EIO ?
			   "device error" : "time-out");
	drm_printf(p, "queue: %u %s\n", cd->index, cd->name);
	drm_printf(p, "\n[device]\n");
	drm_printf(p, "DEV_STATUS: %#x\n", cd->dev_status);
	drm_printf(p, "IRQ_STATUS: %#x\n", cd->irq_status);
	drm_printf(p, "\n[registers]\n");
	for (i = 0; i < ARRAY_SIZE(simaccel_dump_regs); i++)
		drm_printf(p, "%s: %#x\n", simaccel_dump_regs[i].name,
			   cd->regs[i]);
	drm_printf(p, "emitted: %llu\n", cd->emitted);
	drm_printf(p, "\n[job]\n");
	drm_printf(p, "error: %d\n", cd->error);
	drm_printf(p, "id: %llu\n", cd->id);
	drm_printf(p, "fence: %llu:%llu\n", cd->fence_ctx, cd->fence_seqno);
	drm_printf(p, "hw: %llu:%llu\n", cd->hw_ctx, cd->hw_seqno);
	drm_printf(p, "client: %llu\n", cd->client);
	drm_printf(p, "user_queue: %u\n", cd->queue);
	drm_printf(p, "submission: %llu\n", cd->submission);
	drm_printf(p, "descriptors: %u\n", cd->ndesc);
	drm_printf(p, "ring_first: %llu\n", cd->ring_first);
	drm_printf(p, "\n[job descriptors]\n");
	for (i = 0; i < min(cd->ndesc, SIMACCEL_DUMP_DESCS); i++)
		simaccel_print_desc(p, i, &cd->descs[i], "");
	drm_printf(p, "\n[ring]\n");
	for (i = 0; i < ARRAY_SIZE(cd->ring); i++) {
		u32 index = (cd->ring_start + i) & (cd->ring_size - 1);

		simaccel_print_desc(p, index, &cd->ring[i],
				    index == cd->head ? " <- HEAD" : "");
	}
}

/* The job a device reset fails, for @cause; after simaccel_coredump_job(). */
void simaccel_coredump_reset(struct simaccel_hwq *hwq, const char *cause)
{
	lockdep_assert_held(&hwq->lock);
	hwq->dump->reset = cause;
}

/*
 * devcoredump looks for a device's pending dump, then adds the new one:
 * two at once (two queues' recoveries, or a time-out and the device reset
 * it leads to) both add theirs, and the second's sysfs link warns.
 */
static DEFINE_MUTEX(simaccel_coredump_lock);

/* Writes the dump and hands it to devcoredump; lets the snapshot go. */
static void simaccel_coredump_work(struct work_struct *work)
{
	struct simaccel_coredump *cd =
		container_of(work, struct simaccel_coredump, work);
	struct drm_print_iterator iter = { .remain = SIMACCEL_DUMP_SIZE };
	struct simaccel_device *sdev = cd->hwq->sdev;
	struct drm_printer p;

	/* no dump, but no allocator report either, when memory is short */
	iter.data = __vmalloc(SIMACCEL_DUMP_SIZE, GFP_KERNEL | __GFP_NOWARN);
	if (iter.data) {
		p = drm_coredump_printer(&iter);
		simaccel_coredump_print(&p, cd, sdev);
		/* devcoredump owns the text now, and vfree()s it */
		mutex_lock(&simaccel_coredump_lock);
		dev_coredumpv(sdev->drm.dev, iter.data,
			      SIMACCEL_DUMP_SIZE - iter.remain, GFP_KERNEL);
		mutex_unlock(&simaccel_coredump_lock);
	}
	clear_bit_unlock(0, &cd->busy);
	/* may be the last reference: the snapshot goes with the device */
	drm_dev_put(&sdev->drm);
}

/* After simaccel_coredump_job(), outside the lock: the text comes later. */
void simaccel_coredump_emit(struct simaccel_hwq *hwq)
{
	drm_dev_get(&hwq->sdev->drm);
	queue_work(simaccel_wq, &hwq->dump->work);
}

/* The recovery failed no job: the snapshot is free again. */
void simaccel_coredump_cancel(struct simaccel_hwq *hwq)
{
	clear_bit_unlock(0, &hwq->dump->busy);
}
