// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: queues and jobs, scheduled by drm_sched.
 *
 * A user queue is a drm_sched entity over every hardware queue's scheduler:
 * its jobs run in order, on whichever hardware queue is least loaded when
 * it is idle, and the schedulers share the hardware between the entities
 * of all files. A submission is cut into jobs of a time slice each
 * (simaccel_piece()), and a file's jobs on the hardware at once are bounded
 * (simaccel_usage_admit()): another file's job waits behind a window of
 * work, not behind all that was queued before it. The submission's fence
 * is its jobs' together, a fence array when there are several; so is the
 * device's clearing of a VRAM buffer.
 *
 * A submission's operations are resolved once, in the ioctl: every device
 * address to a buffer of the file (referenced), every user pointer to
 * pinned pages (charged), and then to descriptors (struct
 * simaccel_job_res). Those are let go by a work item as soon as the last
 * job's finished fence signals, when the device is done with the memory or
 * never got it (see simaccel_hwq.c for time-outs), and not when drm_sched
 * frees the job, which it does in ring order, behind other users' slow
 * work.
 *
 * Dependencies are dma_fences held by reference: syncobj fences, and the
 * fence of the device's clearing of each VRAM buffer a job names. No fence
 * is pipelined on a ring (DRM_SCHED_FENCE_DONT_PIPELINE), so that a job
 * whose dependency failed sees the error before it runs, and fails with
 * -ECANCELED instead of running: a clearing that failed never lets a job
 * read what the VRAM held.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <drm/drm_syncobj.h>
#include <linux/dma-fence-array.h>
#include <linux/dma-fence-chain.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "simaccel_gem.h"
#include "simaccel_fence.h"
#include "simaccel_hwq.h"
#include "simaccel_job.h"
#include "simaccel_pin.h"
#include "simaccel_prime.h"
#include "simaccel_quota.h"
#include "simaccel_trace.h"

/**
 * struct simaccel_queue - a user queue
 * @ref: held by the file's table and by each of its jobs
 * @entity: where its jobs queue
 * @lock: arms and pushes its jobs in order; protects @dead
 * @dead: destroyed: nothing more is pushed
 * @jobs: submissions not yet freed (their last job holds the slot)
 * @wq: where submissions wait for @jobs to fall
 * @usage: where its jobs' engine time goes, referenced
 * @timeline: the fences its submissions publish, referenced
 * @submitted: seqno of the last submission, under @lock
 * @err_lock: protects the fields below it
 * @failed: submissions that failed
 * @recent: the last DRM_SIMACCEL_QUEUE_FAILURES of them, a ring; the
 *	newest is at (@failed - 1) % DRM_SIMACCEL_QUEUE_FAILURES
 * @sdev: its device
 * @handle: its handle in its file, for the trace events
 * @drain_work: destroys @entity once its jobs reached the hardware, after
 *	its file let go of it (simaccel_drain_wq)
 */
struct simaccel_queue {
	struct kref ref;
	struct drm_sched_entity entity;
	struct mutex lock;		/* orders pushes; protects dead */
	bool dead;
	atomic_t jobs;
	wait_queue_head_t wq;
	struct simaccel_usage *usage;
	struct simaccel_timeline *timeline;
	u64 submitted;
	spinlock_t err_lock;		/* protects failed, recent */
	u64 failed;
	struct drm_simaccel_failure recent[DRM_SIMACCEL_QUEUE_FAILURES];
	struct simaccel_device *sdev;
	u32 handle;
	struct work_struct drain_work;
};

/**
 * struct simaccel_job_res - what the jobs of a submission touch
 * @ref: one per job
 * @sdev: the device
 * @descs: their descriptors
 * @count: entries used in @bos and @pins
 * @bos: buffers, referenced
 * @pins: user memory, pinned
 * @released: completed once all of it is released, if a waiting submitter
 *	set it (and holds a reference until it waits, or takes it back)
 * @canceled: a job of the submission failed before it reached the
 *	hardware: the jobs after it fail too (only the first job waits for
 *	the submission's dependencies, and a later one must not run on what
 *	a failed one should have written, or on uncleared VRAM)
 * @error_recorded: its queue counted the submission's failure
 */
struct simaccel_job_res {
	struct kref ref;
	struct simaccel_device *sdev;
	struct accel_desc *descs;
	unsigned int count;
	struct simaccel_bo **bos;
	struct simaccel_pin **pins;
	struct completion *released;
	bool canceled;
	atomic_t error_recorded;
};

/* What a descriptor costs beyond its bytes, in bytes: the device's work to fetch it. */
#define SIMACCEL_DESC_COST	SZ_4K

/* One side of an operation, resolved. */
struct simaccel_side {
	struct sg_table *sgt;	/* NULL for VRAM */
	u64 offset;		/* VRAM offset, or offset in @sgt's DMA stream */
};

/* A walk over the bus-contiguous pieces of a side. */
struct simaccel_cursor {
	struct scatterlist *sg;
	u64 addr;
	u64 avail;
};

static void simaccel_usage_release(struct kref *ref)
{
	kfree(container_of(ref, struct simaccel_usage, ref));
}

void simaccel_usage_put(struct simaccel_usage *usage)
{
	kref_put(&usage->ref, simaccel_usage_release);
}

/*
 * A file may have two slices of work per hardware queue on the device at
 * once: enough to keep every queue busy between its jobs, and all another
 * file's job waits for behind it.
 */
/*
 * A file whose jobs hang this often is banned, and a user whose jobs hang
 * this often within a period (simaccel_quota.c): each hang holds a
 * hardware queue, other users' work behind it included, for the whole
 * time-out.
 */
#define SIMACCEL_BAN_HANGS	3

/**
 * simaccel_job_hung - count a time-out against the job's file and user
 * @job: the job the recovery failed with -ETIMEDOUT
 *
 * The file's SIMACCEL_BAN_HANGS-th hang bans it, and so does its user's
 * within the ban period: its jobs not yet on the hardware fail with
 * -ECANCELED, and SUBMIT refuses its later work with ECANCELED. Jobs
 * already on a ring stay there (their fences signal in ring order).
 * Faults (-EIO) do not count: a queue reset ends them at once.
 */
void simaccel_job_hung(struct simaccel_job *job)
{
	if (!job->usage)
		return;
	if (atomic_inc_return(&job->usage->hangs) >= SIMACCEL_BAN_HANGS)
		WRITE_ONCE(job->usage->banned, true);
	if (job->usage->user)
		simaccel_quota_hung(job->usage->user, SIMACCEL_BAN_HANGS);
}

/* Whether the file's work is refused: it, or its user, is banned. */
static bool simaccel_usage_banned(struct simaccel_usage *usage)
{
	return READ_ONCE(usage->banned) ||
	       (usage->user && simaccel_quota_banned(usage->user));
}

struct simaccel_usage *simaccel_usage_new(struct simaccel_device *sdev)
{
	struct simaccel_usage *usage = kzalloc(sizeof(*usage), GFP_KERNEL_ACCOUNT);

	if (!usage)
		return NULL;
	kref_init(&usage->ref);
	spin_lock_init(&usage->lock);
	INIT_LIST_HEAD(&usage->onboard);
	usage->window = 2ULL * sdev->num_queues * sdev->slice_bytes;
	return usage;
}

static void simaccel_usage_leave_locked(struct simaccel_usage *usage,
					struct simaccel_job *job)
{
	lockdep_assert_held(&usage->lock);
	if (list_empty(&job->onboard_link))
		return;
	list_del_init(&job->onboard_link);
	usage->onboard_cost -= job->cost;
	dma_fence_put(job->onboard_fence);
	job->onboard_fence = NULL;
}

/* The job's fence signalled (any context): it is off the hardware. */
static void simaccel_usage_leave(struct simaccel_job *job)
{
	struct simaccel_usage *usage = job->usage;
	unsigned long flags;

	if (!usage)
		return;
	spin_lock_irqsave(&usage->lock, flags);
	simaccel_usage_leave_locked(usage, job);
	spin_unlock_irqrestore(&usage->lock, flags);
}

/* @job's hardware fence once it is on a ring, else NULL. */
static struct dma_fence *simaccel_job_hw_fence(struct simaccel_job *job)
{
	/* pairs with the release in simaccel_hwq_run(): the fence is set up */
	return smp_load_acquire(&job->hw_fence_live) ? job->hw_fence : NULL;
}

/* Whether @job left the hardware; its fence callback may not have run yet. */
static bool simaccel_job_off_hardware(struct simaccel_job *job)
{
	struct dma_fence *hw = simaccel_job_hw_fence(job);

	return test_bit(DMA_FENCE_FLAG_SIGNALED_BIT, &job->onboard_fence->flags) ||
	       (hw && test_bit(DMA_FENCE_FLAG_SIGNALED_BIT, &hw->flags));
}

/*
 * Let @job onto the hardware if its file's jobs there leave room in its
 * window (it may go past it: a file has its window and one job more on
 * the hardware at most); otherwise return the fence of the file's oldest
 * job there, referenced, to wait for. Its entity is not ready meanwhile,
 * so the scheduler serves other files' entities: a large submission is
 * cut into jobs of a slice each, and another file's job waits behind one
 * window of this file's work, not behind all it queued before.
 *
 * The fence waited for is the hardware's, since drm_sched ignores a
 * dependency on an earlier job of the same entity. An admitted job has
 * none until it is on the ring, a moment in its scheduler's work; such a
 * job is of another entity (one entity's jobs are admitted and run by one
 * work, in turn), whose finished fence drm_sched does wait for.
 */
static struct dma_fence *simaccel_usage_admit(struct simaccel_usage *usage,
					      struct simaccel_job *job)
{
	struct dma_fence *wait = NULL;
	struct simaccel_job *oldest;
	unsigned long flags;

	spin_lock_irqsave(&usage->lock, flags);
	while ((oldest = list_first_entry_or_null(&usage->onboard,
						  struct simaccel_job,
						  onboard_link)) &&
	       simaccel_job_off_hardware(oldest))
		simaccel_usage_leave_locked(usage, oldest);
	/*
	 * Room left lets any job in, however large: a job larger than the
	 * window (a clearing of one big descriptor on a throttled device)
	 * would otherwise wait for an empty window, which the file's smaller
	 * jobs keep from coming, and every file's clearing queues behind it.
	 */
	if (oldest && usage->onboard_cost >= usage->window) {
		wait = simaccel_job_hw_fence(oldest) ?: oldest->onboard_fence;
		dma_fence_get(wait);
	} else {
		job->onboard_fence = dma_fence_get(&job->base.s_fence->finished);
		list_add_tail(&job->onboard_link, &usage->onboard);
		usage->onboard_cost += job->cost;
	}
	spin_unlock_irqrestore(&usage->lock, flags);
	return wait;
}

static void simaccel_queue_release(struct kref *ref)
{
	struct simaccel_queue *queue =
		container_of(ref, struct simaccel_queue, ref);

	atomic_dec(&queue->usage->queues);
	simaccel_usage_put(queue->usage);
	simaccel_timeline_put(queue->timeline);
	mutex_destroy(&queue->lock);
	kfree(queue);
}

static void simaccel_queue_put(struct simaccel_queue *queue)
{
	kref_put(&queue->ref, simaccel_queue_release);
}

static void simaccel_res_release(struct kref *ref)
{
	struct simaccel_job_res *res =
		container_of(ref, struct simaccel_job_res, ref);
	struct completion *released;
	unsigned int i;

	for (i = 0; i < res->count; i++) {
		if (res->bos[i]) {
			simaccel_prime_bo_idle(res->bos[i]);
			drm_gem_object_put(&res->bos[i]->base.base);
		}
		if (res->pins[i])
			simaccel_unpin(res->pins[i]);
	}
	released = xchg(&res->released, NULL);
	kvfree(res->descs);
	kvfree(res->bos);
	kvfree(res->pins);
	kfree(res);
	if (released)
		complete(released);
}

static void simaccel_res_put(struct simaccel_job_res *res)
{
	kref_put(&res->ref, simaccel_res_release);
}

/* @res holds @bo (a new reference) in @slot, and the buffer is busy. */
static void simaccel_res_hold_bo(struct simaccel_job_res *res,
				 unsigned int slot, struct simaccel_bo *bo)
{
	drm_gem_object_get(&bo->base.base);
	res->bos[slot] = bo;
	atomic_inc(&bo->active);
}

static struct simaccel_job_res *simaccel_res_new(struct simaccel_device *sdev,
						 unsigned int slots)
{
	struct simaccel_job_res *res = kzalloc(sizeof(*res), GFP_KERNEL_ACCOUNT);

	if (!res)
		return NULL;
	kref_init(&res->ref);
	res->sdev = sdev;
	res->bos = kvcalloc(slots, sizeof(*res->bos), GFP_KERNEL_ACCOUNT);
	res->pins = kvcalloc(slots, sizeof(*res->pins), GFP_KERNEL_ACCOUNT);
	if (!res->bos || !res->pins) {
		simaccel_res_put(res);
		return NULL;
	}
	return res;
}

/**
 * simaccel_job_account - count a job's busy time in its file's fdinfo
 * @job: a job whose hardware fence is signalling
 * @ns: the time it kept its hardware queue busy (simaccel_hwq.c)
 *
 * The kernel's clearings count in no file's.
 */
void simaccel_job_account(struct simaccel_job *job, u64 ns)
{
	if (job->queue)
		atomic64_add(ns, &job->queue->usage->busy_ns);
}

/* The handle of @job's user queue, 0 for the kernel's clearing. */
u32 simaccel_job_queue_handle(const struct simaccel_job *job)
{
	return job->queue ? job->queue->handle : 0;
}

/* The bytes its descriptors move: its cost less theirs and its FENCE's. */
static u64 simaccel_job_bytes(const struct simaccel_job *job)
{
	return job->cost - (job->ndesc + 1ULL) * SIMACCEL_DESC_COST;
}

/*
 * A failed job counts against its queue when its fence signals (any
 * context), before anyone waiting for the fence wakes up.
 */
static void simaccel_job_record_error(struct simaccel_job *job, int error)
{
	struct simaccel_queue *queue = job->queue;
	unsigned long flags;

	/* a submission counts once, though several of its jobs fail */
	if (!queue || !error || atomic_xchg(&job->res->error_recorded, 1))
		return;
	spin_lock_irqsave(&queue->err_lock, flags);
	queue->recent[queue->failed % DRM_SIMACCEL_QUEUE_FAILURES] =
		(struct drm_simaccel_failure){
			.seqno = job->submission, .error = -error,
		};
	queue->failed++;
	spin_unlock_irqrestore(&queue->err_lock, flags);
}

/*
 * A job holds its device: the file that made it may be gone, and the
 * device unbound, while it still references buffers and pins. The last
 * reference goes in a work item of its own, since the release of the
 * device stops the schedulers, and free_job runs in one of their works.
 * It holds the module too, whose code its callbacks and works are: the
 * module's exit drains simaccel_wq, where that reference goes last.
 */
static void simaccel_job_put_device(struct work_struct *work)
{
	struct simaccel_job *job =
		container_of(work, struct simaccel_job, put_work);
	struct drm_device *drm = &job->sdev->drm;

	kfree(job);
	drm_dev_put(drm);
	module_put(THIS_MODULE);
}

static void simaccel_job_release(struct kref *ref)
{
	struct simaccel_job *job = container_of(ref, struct simaccel_job, ref);

	if (job->hw_fence_live)
		dma_fence_put(job->hw_fence);
	else
		kfree(job->hw_fence);
	if (job->queue) {
		if (job->holds_slot) {
			atomic_dec(&job->queue->jobs);
			wake_up(&job->queue->wq);
		}
		simaccel_queue_put(job->queue);
	}
	if (job->res)
		simaccel_res_put(job->res);
	if (job->usage)
		simaccel_usage_put(job->usage);
	INIT_WORK(&job->put_work, simaccel_job_put_device);
	queue_work(simaccel_wq, &job->put_work);
}

static void simaccel_job_put(struct simaccel_job *job)
{
	kref_put(&job->ref, simaccel_job_release);
}

/* Count @job's memory as on its way back, until simaccel_settle_end(). */
static void simaccel_settle_begin(struct simaccel_job *job)
{
	struct simaccel_device *sdev = job->sdev;
	unsigned long flags;

	/* not across an advance: simaccel_settle_advance() */
	spin_lock_irqsave(&sdev->settle_lock, flags);
	job->settle_idx = atomic64_read(&sdev->settle_epoch) & 1;
	atomic_inc(&sdev->settle_pending[job->settle_idx]);
	spin_unlock_irqrestore(&sdev->settle_lock, flags);
}

static void simaccel_settle_end(struct simaccel_job *job)
{
	struct simaccel_device *sdev = job->sdev;

	if (atomic_dec_and_test(&sdev->settle_pending[job->settle_idx]))
		wake_up_all(&sdev->clears_wq);
}

/*
 * The job's fence signalled: the device is done with its memory, or never
 * got it. Let go of its buffers and pages now, not when drm_sched frees
 * the job, which it does in the order jobs went to the hardware, behind
 * other users' slow work.
 */
static void simaccel_job_done_work(struct work_struct *work)
{
	struct simaccel_job *job =
		container_of(work, struct simaccel_job, done_work);

	simaccel_res_put(job->res);
	job->res = NULL;
	simaccel_settle_end(job);
	simaccel_job_put(job);
}

/* The job is off the hardware: so are its buffers in slots [0, @count). */
static void simaccel_job_leave_peers(struct simaccel_job *job,
				     unsigned int count)
{
	unsigned int i;

	for (i = 0; i < count; i++)
		if (job->res->bos[i] && job->res->bos[i]->peer)
			simaccel_prime_bo_left(job->res->bos[i]);
}

/*
 * The job is about to reach the peers' VRAM it names: their removal waits
 * for it from now until its fence signals. A job that would reach a
 * peer's VRAM after the peer was unbound fails instead.
 */
static int simaccel_job_reach_peers(struct simaccel_job *job)
{
	struct simaccel_job_res *res = job->res;
	unsigned int i;

	for (i = 0; res && i < res->count; i++) {
		struct simaccel_bo *bo = res->bos[i];

		if (bo && bo->peer && !simaccel_prime_bo_reach(bo)) {
			simaccel_job_leave_peers(job, i);
			return -ENODEV;
		}
	}
	job->reached_peers = true;
	return 0;
}

/**
 * simaccel_job_reaches - whether a job on the hardware reaches a peer's VRAM
 * @job: a job on a ring (its hardware queue's lock held)
 * @bo: an import of a peer's VRAM
 */
bool simaccel_job_reaches(struct simaccel_job *job, struct simaccel_bo *bo)
{
	unsigned int i;

	if (!job->reached_peers)
		return false;
	for (i = 0; i < job->res->count; i++)
		if (job->res->bos[i] == bo)
			return true;
	return false;
}

/**
 * simaccel_job_reaches_revoked - whether a job reaches a peer that went
 * @job: a job about to go on a ring (its hardware queue's lock held)
 */
bool simaccel_job_reaches_revoked(struct simaccel_job *job)
{
	unsigned int i;

	if (!job->reached_peers)
		return false;
	for (i = 0; i < job->res->count; i++)
		if (job->res->bos[i] && READ_ONCE(job->res->bos[i]->revoked))
			return true;
	return false;
}

/**
 * simaccel_job_revoked - the device will run nothing of a job on a ring
 * @job: the job (its hardware queue's lock held, which its fence's
 *	callbacks run under: simaccel_job_done() does not race this)
 *
 * The peers it reached no longer wait for it.
 */
void simaccel_job_revoked(struct simaccel_job *job)
{
	simaccel_job_leave_peers(job, job->res->count);
	job->reached_peers = false;
}

static void simaccel_job_done(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct simaccel_job *job = container_of(cb, struct simaccel_job, done_cb);

	simaccel_usage_leave(job);
	if (job->reached_peers)
		simaccel_job_leave_peers(job, job->res->count);
	simaccel_job_record_error(job, fence->error);
	if (job->queue)		/* a clearing is counted from its push */
		simaccel_settle_begin(job);
	else if (job->last)	/* its jobs end in order: the entity's */
		trace_simaccel_clear_end(dev_name(job->sdev->drm.dev),
					 job->res->bos[0]->dev_addr,
					 job->res->bos[0]->size, 0, fence->error);
	queue_work(simaccel_wq, &job->done_work);
}

/**
 * simaccel_job_settled - whether freed buffers have let their memory go
 * @sdev: the device
 *
 * Return: true when no clearing is under way and no job whose fence
 * signalled still holds buffers.
 */
bool simaccel_job_settled(struct simaccel_device *sdev)
{
	return !atomic_read(&sdev->settle_pending[0]) &&
	       !atomic_read(&sdev->settle_pending[1]);
}

/* Whether what was counted in @idx's parity before @epoch has ended. */
static bool simaccel_settled_since(struct simaccel_device *sdev, u64 epoch,
				   unsigned int idx)
{
	/* two epochs on, whoever advanced the second saw that parity at 0 */
	return !atomic_read(&sdev->settle_pending[idx]) ||
	       atomic64_read(&sdev->settle_epoch) >= epoch;
}

static long simaccel_settle_wait(struct simaccel_device *sdev, u64 epoch,
				 unsigned int idx, long timeout)
{
	return wait_event_interruptible_timeout(sdev->clears_wq,
						simaccel_settled_since(sdev, epoch, idx),
						timeout);
}

/*
 * Move the epoch on from @epoch, if the older parity is empty (nothing
 * joins it: a begin reads the epoch and counts under the same lock).
 * Whether the epoch has moved on from @epoch, by this call or another's.
 */
static bool simaccel_settle_advance(struct simaccel_device *sdev, u64 epoch)
{
	unsigned long flags;
	bool moved;

	spin_lock_irqsave(&sdev->settle_lock, flags);
	moved = atomic64_read(&sdev->settle_epoch) != epoch;
	if (!moved && !atomic_read(&sdev->settle_pending[(epoch + 1) & 1])) {
		atomic64_set(&sdev->settle_epoch, epoch + 1);
		moved = true;
	}
	spin_unlock_irqrestore(&sdev->settle_lock, flags);
	wake_up_all(&sdev->clears_wq);	/* waiters of "@epoch + 1 or later" */
	return moved;
}

/**
 * simaccel_job_wait_released - wait for the memory on its way back now
 * @sdev: the device
 * @timeout: in jiffies, or MAX_SCHEDULE_TIMEOUT
 *
 * Waits for the clearings and releases under way at the call, not for
 * those that other users start meanwhile, which may never stop: the older
 * parity first (nothing joins it), then the current one, moved to the
 * older by advancing the epoch, as SRCU's grace periods do.
 *
 * Return: what wait_event_interruptible_timeout() does: > 0 once they
 * have ended, 0 on the time-out, -ERESTARTSYS if a signal came first.
 */
long simaccel_job_wait_released(struct simaccel_device *sdev, long timeout)
{
	u64 epoch = atomic64_read(&sdev->settle_epoch);
	unsigned int older = (epoch + 1) & 1;

	do {
		timeout = simaccel_settle_wait(sdev, epoch + 1, older, timeout);
		if (timeout <= 0)
			return timeout;
	} while (!simaccel_settle_advance(sdev, epoch));
	return simaccel_settle_wait(sdev, epoch + 2, epoch & 1, timeout);
}

/* A dependency that failed fails the job: it must not run on bad data. */
static int simaccel_job_dependency_error(struct simaccel_job *job)
{
	struct dma_fence *fence;
	unsigned long index;

	xa_for_each(&job->base.dependencies, index, fence)
		if (fence->error)
			return -ECANCELED;
	return 0;
}

/* Called until it returns NULL, after the job's own dependencies. */
static struct dma_fence *simaccel_prepare_job(struct drm_sched_job *sched_job,
					      struct drm_sched_entity *entity)
{
	struct simaccel_job *job = to_simaccel_job(sched_job);

	return job->usage ? simaccel_usage_admit(job->usage, job) : NULL;
}

static struct dma_fence *simaccel_run_job(struct drm_sched_job *sched_job)
{
	struct simaccel_job *job = to_simaccel_job(sched_job);
	struct simaccel_hwq *hwq = to_simaccel_hwq(sched_job->sched);
	int ret;

	ret = sched_job->s_fence->finished.error;
	if (!ret)
		ret = simaccel_job_dependency_error(job);
	/* the jobs of a submission come here in order, from one worker */
	if (!ret && job->res && READ_ONCE(job->res->canceled))
		ret = -ECANCELED;
	/*
	 * a banned file's clearings still run: one refused would fail its
	 * buffer for good, after the ban too
	 */
	if (!ret && job->queue && simaccel_usage_banned(job->usage))
		ret = -ECANCELED;
	if (!ret)
		ret = simaccel_job_reach_peers(job);
	if (!ret)
		return simaccel_hwq_run(hwq, job);
	if (job->res)
		WRITE_ONCE(job->res->canceled, true);
	return ERR_PTR(ret);
}

static enum drm_gpu_sched_stat
simaccel_timedout_job(struct drm_sched_job *sched_job)
{
	struct drm_gpu_scheduler *sched = sched_job->sched;

	/*
	 * drm_sched took the job off its pending list for this call. Put it
	 * back before the recovery can signal it, so that drm_sched frees it
	 * like any finished job (as DRM_GPU_SCHED_STAT_NO_HANG does in later
	 * kernels); the job is not touched after this.
	 */
	spin_lock(&sched->job_list_lock);
	list_add(&sched_job->list, &sched->pending_list);
	spin_unlock(&sched->job_list_lock);
	if (!simaccel_hwq_recover(to_simaccel_hwq(sched)))
		return DRM_GPU_SCHED_STAT_ENODEV;
	return DRM_GPU_SCHED_STAT_NOMINAL;
}

static void simaccel_free_job(struct drm_sched_job *sched_job)
{
	drm_sched_job_cleanup(sched_job);
	simaccel_job_put(to_simaccel_job(sched_job));
}

const struct drm_sched_backend_ops simaccel_sched_ops = {
	.prepare_job = simaccel_prepare_job,
	.run_job = simaccel_run_job,
	.timedout_job = simaccel_timedout_job,
	.free_job = simaccel_free_job,
};

static void simaccel_cursor_init(struct simaccel_cursor *cur,
				 const struct simaccel_side *side)
{
	u64 skip = side->offset;

	cur->sg = NULL;
	cur->addr = side->offset;
	cur->avail = U64_MAX;
	if (!side->sgt)
		return;
	cur->sg = side->sgt->sgl;
	while (skip >= sg_dma_len(cur->sg)) {
		skip -= sg_dma_len(cur->sg);
		cur->sg = sg_next(cur->sg);
	}
	cur->addr = sg_dma_address(cur->sg) + skip;
	cur->avail = sg_dma_len(cur->sg) - skip;
}

static void simaccel_cursor_advance(struct simaccel_cursor *cur, u64 bytes)
{
	cur->addr += bytes;
	if (!cur->sg)
		return;
	cur->avail -= bytes;
	if (!cur->avail) {
		cur->sg = sg_next(cur->sg);
		if (cur->sg) {
			cur->addr = sg_dma_address(cur->sg);
			cur->avail = sg_dma_len(cur->sg);
		}
	}
}

/*
 * The descriptors of one copy (@src non-NULL) or fill of @byte: one per
 * piece that is contiguous on both sides, at most @max_bytes each. Writes them
 * at @out if it is not NULL; returns how many there are.
 */
static u64 simaccel_emit_op(const struct simaccel_side *dst,
			    const struct simaccel_side *src, u8 byte, u64 size,
			    u64 max_bytes, struct accel_desc *out)
{
	struct simaccel_cursor d, s = { .avail = U64_MAX };
	u32 flags = dst->sgt ? 0 : ACCEL_DESC_DST_VRAM;
	u64 n = 0;

	if (src)
		flags |= src->sgt ? 0 : ACCEL_DESC_SRC_VRAM;
	simaccel_cursor_init(&d, dst);
	if (src)
		simaccel_cursor_init(&s, src);
	while (size) {
		u64 len = min3(size, d.avail, s.avail);

		len = min(len, max_bytes);
		if (out) {
			struct accel_desc *desc = &out[n];

			memset(desc, 0, sizeof(*desc));
			desc->opcode = cpu_to_le32(src ? ACCEL_OP_COPY : ACCEL_OP_FILL);
			desc->flags = cpu_to_le32(flags);
			desc->src = cpu_to_le64(src ? s.addr : byte);
			desc->dst = cpu_to_le64(d.addr);
			desc->len = cpu_to_le64(len);
		}
		n++;
		size -= len;
		simaccel_cursor_advance(&d, len);
		if (src)
			simaccel_cursor_advance(&s, len);
	}
	return n;
}

static void simaccel_side_of_bo(struct simaccel_side *side,
				const struct simaccel_span *span)
{
	struct simaccel_bo *bo = span->bo;

	side->sgt = bo->sgt;
	side->offset = span->offset;
	if (simaccel_bo_is_vram(bo))
		side->offset += bo->node.start;
	else if (bo->pin)
		side->offset += bo->pin->offset;
}

/*
 * Resolve one side of an operation into @res's slot @slot: a device
 * address of the file's buffers, or with @user a pointer pinned there.
 */
static int simaccel_resolve_side(struct simaccel_file *sfile,
				 struct simaccel_job_res *res,
				 unsigned int slot, u64 addr, u64 size,
				 bool user, bool write,
				 struct simaccel_side *side)
{
	struct simaccel_span span;
	struct simaccel_pin *pin;
	int ret;

	if (user) {
		/* pinned before drm_dev_enter(): simaccel_res_pin() */
		pin = res->pins[slot];
		ret = simaccel_pin_map(sfile->sdev, pin);
		if (ret)
			return ret;
		side->sgt = &pin->sgt;
		side->offset = pin->offset;
		return 0;
	}
	ret = simaccel_gem_resolve(sfile, addr, size, &span);
	if (ret)
		return ret;
	/* the lookup's reference becomes the job's */
	res->bos[slot] = span.bo;
	atomic_inc(&span.bo->active);
	/* a peer's VRAM whose device is gone */
	if (READ_ONCE(span.bo->revoked))
		return -ENODEV;
	if (write && !simaccel_bo_writable(span.bo))
		return -EACCES;
	simaccel_side_of_bo(side, &span);
	return 0;
}

static int simaccel_op_check(const struct drm_simaccel_op *op)
{
	if (op->flags & ~DRM_SIMACCEL_OP_FLAGS || !op->size)
		return -EINVAL;
	switch (op->op) {
	case DRM_SIMACCEL_OP_COPY:
		return 0;
	case DRM_SIMACCEL_OP_FILL:
		return op->src > 0xff || op->flags & DRM_SIMACCEL_OP_SRC_USER ?
		       -EINVAL : 0;
	default:
		return -EINVAL;
	}
}

/*
 * Resolve every operation (slots 2i and 2i + 1 of @res are op i's sides),
 * then write their descriptors into @res.
 */
static int simaccel_res_build(struct simaccel_file *sfile,
			      struct simaccel_job_res *res,
			      const struct drm_simaccel_op *ops, u32 count,
			      u64 *ndesc)
{
	struct simaccel_side *sides;
	u64 n = 0, i;
	int ret = 0;

	sides = kvcalloc(2 * count, sizeof(*sides), GFP_KERNEL_ACCOUNT);
	if (!sides)
		return -ENOMEM;
	res->count = 2 * count;
	for (i = 0; i < count && !ret; i++) {
		const struct drm_simaccel_op *op = &ops[i];

		ret = simaccel_resolve_side(sfile, res, 2 * i, op->dst, op->size,
					    op->flags & DRM_SIMACCEL_OP_DST_USER,
					    true, &sides[2 * i]);
		if (!ret && op->op == DRM_SIMACCEL_OP_COPY)
			ret = simaccel_resolve_side(sfile, res, 2 * i + 1, op->src,
						    op->size,
						    op->flags & DRM_SIMACCEL_OP_SRC_USER,
						    false, &sides[2 * i + 1]);
	}
	/* one job: its fence is the submission's, and carries its error */
	for (i = 0; i < count && !ret; i++) {
		n += simaccel_emit_op(&sides[2 * i], ops[i].op == DRM_SIMACCEL_OP_COPY ?
				      &sides[2 * i + 1] : NULL, ops[i].src,
				      ops[i].size, sfile->sdev->desc_bytes, NULL);
		if (n > DRM_SIMACCEL_MAX_DESCS)
			ret = -E2BIG;
	}
	if (!ret) {
		res->descs = kvmalloc_array(n, sizeof(*res->descs),
					    GFP_KERNEL_ACCOUNT);
		ret = res->descs ? 0 : -ENOMEM;
	}
	for (n = 0, i = 0; i < count && !ret; i++)
		n += simaccel_emit_op(&sides[2 * i], ops[i].op == DRM_SIMACCEL_OP_COPY ?
				      &sides[2 * i + 1] : NULL, ops[i].src,
				      ops[i].size, sfile->sdev->desc_bytes,
				      res->descs + n);
	*ndesc = n;
	kvfree(sides);
	return ret;
}

/**
 * struct simaccel_batch - jobs of one submission, before they are pushed
 * @jobs: the jobs, in order
 * @count: how many: one for a user's submission, any for a clearing
 * @fences: with several jobs, room for their fences, which @all stands for
 * @all: with several jobs, the fence array, allocated up front
 */
struct simaccel_batch {
	struct simaccel_job **jobs;
	u32 count;
	struct dma_fence **fences;
	struct dma_fence_array *all;
};

static void simaccel_batch_abort(struct simaccel_batch *batch)
{
	u32 i;

	for (i = 0; i < batch->count; i++) {
		drm_sched_job_cleanup(&batch->jobs[i]->base);
		simaccel_job_put(batch->jobs[i]);
	}
	kfree(batch->jobs);
	kfree(batch->fences);
	kfree(batch->all);
}

/*
 * How many of the @n descriptors at @descs the next job takes: about
 * @slice bytes, one descriptor at least, DRM_SIMACCEL_MAX_DESCS at most.
 * Their cost, with the job's FENCE, goes to @cost.
 */
static u32 simaccel_piece(const struct accel_desc *descs, u64 n, u64 slice,
			  u64 *cost)
{
	u32 count = 0;

	*cost = SIMACCEL_DESC_COST;
	while (count < n && count < DRM_SIMACCEL_MAX_DESCS) {
		u64 more = le64_to_cpu(descs[count].len) + SIMACCEL_DESC_COST;

		if (count && *cost + more > slice)
			break;
		*cost += more;
		count++;
	}
	return count;
}

/* How many jobs simaccel_piece() cuts @n descriptors into; one at least. */
static u64 simaccel_piece_count(const struct accel_desc *descs, u64 n,
				u64 slice)
{
	u64 done = 0, jobs = 0, cost;

	do {
		done += simaccel_piece(descs + done, n - done, slice, &cost);
		jobs++;
	} while (done < n);
	return jobs;
}

/*
 * Cut @res's @ndesc descriptors into jobs of a slice each for @entity,
 * within @usage's window; a job without descriptors is a barrier: its
 * FENCE alone.
 */
static int simaccel_batch_init(struct simaccel_batch *batch,
			       struct drm_sched_entity *entity,
			       struct simaccel_job_res *res, u64 ndesc,
			       struct simaccel_usage *usage, void *owner)
{
	u64 slice = res->sdev->slice_bytes, done = 0;
	u64 njobs = simaccel_piece_count(res->descs, ndesc, slice);
	u32 i;
	int ret;

	batch->count = 0;
	batch->fences = NULL;
	batch->all = NULL;
	batch->jobs = kcalloc(njobs, sizeof(*batch->jobs), GFP_KERNEL_ACCOUNT);
	if (!batch->jobs)
		return -ENOMEM;
	if (njobs > 1) {
		batch->fences = kcalloc(njobs, sizeof(*batch->fences),
					GFP_KERNEL_ACCOUNT);
		batch->all = dma_fence_array_alloc(njobs);
		if (!batch->fences || !batch->all)
			goto err_nomem;
	}
	for (i = 0; i < njobs; i++) {
		struct simaccel_job *job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);

		if (!job)
			goto err_nomem;
		job->hw_fence = kzalloc(sizeof(*job->hw_fence), GFP_KERNEL_ACCOUNT);
		if (!job->hw_fence) {
			kfree(job);
			goto err_nomem;
		}
		job->descs = res->descs + done;
		job->ndesc = simaccel_piece(job->descs, ndesc - done, slice,
					    &job->cost);
		done += job->ndesc;
		kref_init(&job->ref);
		INIT_LIST_HEAD(&job->link);
		INIT_LIST_HEAD(&job->onboard_link);
		INIT_WORK(&job->done_work, simaccel_job_done_work);
		ret = drm_sched_job_init(&job->base, entity, job->ndesc + 1, owner);
		if (ret) {
			kfree(job->hw_fence);
			kfree(job);
			goto err;
		}
		job->sdev = res->sdev;
		drm_dev_get(&job->sdev->drm);
		__module_get(THIS_MODULE);
		kref_get(&res->ref);
		job->res = res;
		kref_get(&usage->ref);
		job->usage = usage;
		batch->jobs[batch->count++] = job;
	}
	return 0;

err_nomem:
	ret = -ENOMEM;
err:
	simaccel_batch_abort(batch);
	return ret;
}

/* The fences every job of the batch waits for, given to its first. */
static int simaccel_batch_add_deps(struct simaccel_batch *batch,
				   struct simaccel_job_res *res)
{
	struct drm_sched_job *first = &batch->jobs[0]->base;
	unsigned int i;
	int ret;

	for (i = 0; i < res->count; i++) {
		struct simaccel_bo *bo = res->bos[i];

		if (!bo || !bo->clear)
			continue;
		ret = drm_sched_job_add_dependency(first, dma_fence_get(bo->clear));
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * After drm_sched_job_arm(), which chose its scheduler, whose count gave
 * the job its id, and its fences.
 */
static void simaccel_job_trace_submit(struct simaccel_job *job)
{
	struct dma_fence *finished = &job->base.s_fence->finished;

	trace_simaccel_job_submit(dev_name(job->sdev->drm.dev),
				  to_simaccel_hwq(job->base.sched)->index,
				  job->usage->client_id,
				  simaccel_job_queue_handle(job),
				  job->submission, job->base.id,
				  finished->context, finished->seqno,
				  job->ndesc, simaccel_job_bytes(job));
}

/*
 * Arm and push the batch, whose caller holds the entity's ordering lock;
 * the jobs belong to the scheduler after this. Returns the fence of them
 * all, referenced: the job's, or an array of the jobs' that signals when
 * all have and carries any one's error.
 */
static struct dma_fence *simaccel_batch_push(struct simaccel_batch *batch,
					     struct simaccel_queue *queue)
{
	struct dma_fence *done = NULL;
	u32 i;

	for (i = 0; i < batch->count; i++) {
		struct simaccel_job *job = batch->jobs[i];

		job->last = i == batch->count - 1;
		if (queue) {
			kref_get(&queue->ref);
			job->queue = queue;
			job->submission = queue->submitted + 1;
			/* drm_sched frees jobs in order: the last goes last */
			job->holds_slot = job->last;
		}
		drm_sched_job_arm(&job->base);
		simaccel_job_trace_submit(job);
		set_bit(DRM_SCHED_FENCE_DONT_PIPELINE,
			&job->base.s_fence->finished.flags);
		if (batch->fences)
			batch->fences[i] = dma_fence_get(&job->base.s_fence->finished);
		else
			done = dma_fence_get(&job->base.s_fence->finished);
		/* a reference for the release at the fence (not yet signalled) */
		kref_get(&job->ref);
		if (!queue)
			simaccel_settle_begin(job);
		dma_fence_add_callback(&job->base.s_fence->finished,
				       &job->done_cb, simaccel_job_done);
		drm_sched_entity_push_job(&job->base);
	}
	if (queue)
		queue->submitted++;
	kfree(batch->jobs);
	if (!batch->all)
		return done;
	/* the array owns the fences now */
	dma_fence_array_init(batch->all, batch->count, batch->fences,
			     dma_fence_context_alloc(1), 1, false);
	return &batch->all->base;
}

/**
 * simaccel_job_clear_vram - have the device clear a new VRAM buffer
 * @sdev: the device
 * @bo: the buffer, which the jobs reference
 * @usage: the share of the file that creates it: the clearing runs ahead of
 *	users' jobs, but within that file's window, so that creating and
 *	freeing buffers does not take the device from other users
 *
 * Return: the fence of the clearing, referenced, or an ERR_PTR.
 */
struct dma_fence *simaccel_job_clear_vram(struct simaccel_device *sdev,
					  struct simaccel_bo *bo,
					  struct simaccel_usage *usage)
{
	struct simaccel_side side = { .offset = bo->node.start };
	struct simaccel_batch batch;
	struct simaccel_job_res *res;
	struct dma_fence *done;
	u64 n;
	int ret;

	res = simaccel_res_new(sdev, 1);
	if (!res)
		return ERR_PTR(-ENOMEM);
	n = simaccel_emit_op(&side, NULL, 0, bo->size, sdev->desc_bytes, NULL);
	res->descs = kvmalloc_array(n, sizeof(*res->descs), GFP_KERNEL_ACCOUNT);
	if (!res->descs) {
		simaccel_res_put(res);
		return ERR_PTR(-ENOMEM);
	}
	simaccel_emit_op(&side, NULL, 0, bo->size, sdev->desc_bytes, res->descs);
	/* the range stays the buffer's until the clearing is over */
	res->count = 1;
	simaccel_res_hold_bo(res, 0, bo);
	ret = simaccel_batch_init(&batch, &sdev->clear_entity, res, n, usage, NULL);
	simaccel_res_put(res);
	if (ret)
		return ERR_PTR(ret);
	mutex_lock(&sdev->clear_lock);
	trace_simaccel_clear_begin(dev_name(sdev->drm.dev), bo->dev_addr,
				   bo->size, batch.count, 0);
	done = simaccel_batch_push(&batch, NULL);
	mutex_unlock(&sdev->clear_lock);
	return done;
}

static void simaccel_clear_entity_fini(struct drm_device *drm, void *unused)
{
	drm_sched_entity_destroy(&to_simaccel(drm)->clear_entity);
}

/* The kernel's own entity, for clearing VRAM, ahead of every user's. */
int simaccel_job_init(struct simaccel_device *sdev)
{
	struct drm_gpu_scheduler **scheds;
	u32 q;
	int ret;

	ret = drmm_mutex_init(&sdev->drm, &sdev->clear_lock);
	if (ret)
		return ret;
	init_waitqueue_head(&sdev->clears_wq);
	spin_lock_init(&sdev->settle_lock);
	scheds = drmm_kcalloc(&sdev->drm, sdev->num_queues, sizeof(*scheds),
			      GFP_KERNEL);
	if (!scheds)
		return -ENOMEM;
	for (q = 0; q < sdev->num_queues; q++)
		scheds[q] = &sdev->hwqs[q].sched;
	/* every entity keeps this list: it lives as long as the device */
	sdev->scheds = scheds;
	ret = drm_sched_entity_init(&sdev->clear_entity,
				    DRM_SCHED_PRIORITY_KERNEL, scheds,
				    sdev->num_queues, NULL);
	if (ret)
		return ret;
	return drmm_add_action_or_reset(&sdev->drm, simaccel_clear_entity_fini,
					NULL);
}

static struct simaccel_queue *simaccel_queue_new(struct simaccel_device *sdev,
						 struct simaccel_usage *usage)
{
	struct simaccel_queue *queue;
	char name[48];
	int ret;

	/* a queue counts until it is freed: one left to drain too */
	if (!atomic_add_unless(&usage->queues, 1, DRM_SIMACCEL_MAX_QUEUES_PER_FILE))
		return ERR_PTR(-EMFILE);
	ret = -ENOMEM;
	queue = kzalloc(sizeof(*queue), GFP_KERNEL_ACCOUNT);
	if (!queue)
		goto err_count;
	snprintf(name, sizeof(name), "%s-user", dev_name(sdev->drm.dev));
	queue->timeline = simaccel_timeline_new(name);
	if (!queue->timeline)
		goto err_free;
	ret = drm_sched_entity_init(&queue->entity, DRM_SCHED_PRIORITY_NORMAL,
				    sdev->scheds, sdev->num_queues, NULL);
	if (ret)
		goto err_timeline;
	kref_get(&usage->ref);
	queue->usage = usage;
	kref_init(&queue->ref);
	queue->sdev = sdev;
	mutex_init(&queue->lock);
	spin_lock_init(&queue->err_lock);
	init_waitqueue_head(&queue->wq);
	return queue;

err_timeline:
	simaccel_timeline_put(queue->timeline);
err_free:
	kfree(queue);
err_count:
	atomic_dec(&usage->queues);
	return ERR_PTR(ret);
}

/* The file let go of the queue: its jobs reach the hardware, then it goes. */
static void simaccel_queue_drain_work(struct work_struct *work)
{
	struct simaccel_queue *queue =
		container_of(work, struct simaccel_queue, drain_work);
	struct drm_device *drm = &queue->sdev->drm;

	drm_sched_entity_destroy(&queue->entity);
	simaccel_queue_put(queue);
	drm_dev_put(drm);
}

/*
 * Nothing more is pushed. A live process's jobs run on: a queue with jobs
 * not yet on the hardware drains in a work item (holding the device, whose
 * schedulers the entity uses), since they get there a window at a time
 * and close() must not wait for that. An exiting process's jobs get until
 * @deadline to reach the hardware, and the rest fail with -ESRCH, as
 * drm_sched does, but with one second for all of the file's queues, not
 * one each.
 */
static void simaccel_queue_destroy(struct simaccel_queue *queue,
				   unsigned long deadline)
{
	mutex_lock(&queue->lock);
	WRITE_ONCE(queue->dead, true);
	mutex_unlock(&queue->lock);
	wake_up(&queue->wq);	/* submissions waiting for a slot */
	if (!(current->flags & PF_EXITING) &&
	    spsc_queue_count(&queue->entity.job_queue)) {
		drm_dev_get(&queue->sdev->drm);
		INIT_WORK(&queue->drain_work, simaccel_queue_drain_work);
		queue_work(simaccel_drain_wq, &queue->drain_work);
		return;
	}
	drm_sched_entity_flush(&queue->entity,
			       time_before(jiffies, deadline) ? deadline - jiffies : 0);
	drm_sched_entity_fini(&queue->entity);
	simaccel_queue_put(queue);
}

/* What an exiting process's queues get to hand their jobs over: drm_sched's. */
static unsigned long simaccel_queue_deadline(void)
{
	return jiffies + msecs_to_jiffies(1000);
}

int simaccel_queue_create_ioctl(struct drm_device *drm, void *data,
				struct drm_file *file)
{
	struct simaccel_file *sfile = to_simaccel_file(file);
	struct drm_simaccel_queue_create *args = data;
	struct simaccel_queue *queue;
	int ret, idx;

	if (args->flags)
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	queue = simaccel_queue_new(to_simaccel(drm), sfile->usage);
	drm_dev_exit(idx);
	if (IS_ERR(queue))
		return PTR_ERR(queue);
	mutex_lock(&sfile->lock);
	ret = xa_alloc_cyclic(&sfile->queues, &args->handle, queue,
			      XA_LIMIT(1, U32_MAX), &sfile->next_queue,
			      GFP_KERNEL_ACCOUNT);
	if (ret >= 0)
		queue->handle = args->handle;
	mutex_unlock(&sfile->lock);
	if (ret < 0) {
		simaccel_queue_destroy(queue, simaccel_queue_deadline());
		return ret;
	}
	return 0;
}

int simaccel_queue_destroy_ioctl(struct drm_device *drm, void *data,
				 struct drm_file *file)
{
	struct simaccel_file *sfile = to_simaccel_file(file);
	struct drm_simaccel_queue_destroy *args = data;
	struct simaccel_queue *queue;

	if (args->pad)
		return -EINVAL;
	mutex_lock(&sfile->lock);
	queue = xa_erase(&sfile->queues, args->handle);
	mutex_unlock(&sfile->lock);
	if (!queue)
		return -ENOENT;
	simaccel_queue_destroy(queue, simaccel_queue_deadline());
	return 0;
}

/* At close, after DRM released the file's handles and syncobjs. */
void simaccel_job_file_fini(struct simaccel_file *sfile)
{
	unsigned long deadline = simaccel_queue_deadline(), handle;
	struct simaccel_queue *queue;

	xa_for_each(&sfile->queues, handle, queue)
		simaccel_queue_destroy(queue, deadline);
	xa_destroy(&sfile->queues);
}

static struct simaccel_queue *simaccel_queue_get(struct simaccel_file *sfile,
						 u32 handle)
{
	struct simaccel_queue *queue;

	mutex_lock(&sfile->lock);
	queue = xa_load(&sfile->queues, handle);
	if (queue)
		kref_get(&queue->ref);
	mutex_unlock(&sfile->lock);
	return queue;
}

/* Take one of the queue's in-flight submission slots, if one is free. */
static bool simaccel_queue_reserve(struct simaccel_queue *queue)
{
	return atomic_add_unless(&queue->jobs, 1, DRM_SIMACCEL_MAX_JOBS_PER_QUEUE);
}

/*
 * What a submission waits for: a job slot of @queue (*@reserved), or the
 * queue destroyed, whose slots may take minutes to free.
 */
static bool simaccel_queue_slot_or_dead(struct simaccel_queue *queue,
					bool *reserved)
{
	if (READ_ONCE(queue->dead))
		return true;
	*reserved = simaccel_queue_reserve(queue);
	return *reserved;
}

static void simaccel_queue_unreserve(struct simaccel_queue *queue)
{
	atomic_dec(&queue->jobs);
	wake_up(&queue->wq);
}

static int simaccel_submit_check(const struct drm_simaccel_submit *args)
{
	if (args->flags & ~DRM_SIMACCEL_SUBMIT_FLAGS || args->out_sync.pad)
		return -EINVAL;
	if (args->op_count > DRM_SIMACCEL_MAX_OPS ||
	    args->in_sync_count > DRM_SIMACCEL_MAX_IN_SYNCS)
		return -EINVAL;
	if (!args->out_sync.handle && args->out_sync.point)
		return -EINVAL;
	return 0;
}

static void *simaccel_copy_array(u64 uptr, u32 count, size_t size)
{
	if (!count)
		return NULL;
	return vmemdup_array_user(u64_to_user_ptr(uptr), count, size);
}

/*
 * The submission's operations and syncobjs, copied in and checked; for a
 * waiting submission, the release of what its jobs held.
 */
struct simaccel_submit {
	struct drm_simaccel_op *ops;
	struct drm_simaccel_sync *in_syncs;
	struct drm_syncobj *out_syncobj;
	struct dma_fence_chain *out_chain;
	struct simaccel_fence *out_fence;
	struct dma_fence *published;
	struct simaccel_job_res *res;
	struct completion released;
};

static void simaccel_submit_fini(struct simaccel_submit *sub)
{
	if (sub->res)
		simaccel_res_put(sub->res);
	kvfree(sub->ops);
	kvfree(sub->in_syncs);
	if (sub->out_syncobj)
		drm_syncobj_put(sub->out_syncobj);
	dma_fence_chain_free(sub->out_chain);
	simaccel_fence_free(sub->out_fence);
	dma_fence_put(sub->published);
}

static int simaccel_submit_init(struct simaccel_submit *sub,
				const struct drm_simaccel_submit *args,
				struct drm_file *file)
{
	u32 i;
	int ret;

	memset(sub, 0, sizeof(*sub));
	init_completion(&sub->released);
	sub->ops = simaccel_copy_array(args->ops, args->op_count,
				       sizeof(*sub->ops));
	if (IS_ERR(sub->ops)) {
		ret = PTR_ERR(sub->ops);
		sub->ops = NULL;
		return ret;
	}
	for (i = 0; i < args->op_count; i++) {
		ret = simaccel_op_check(&sub->ops[i]);
		if (ret)
			return ret;
	}
	sub->in_syncs = simaccel_copy_array(args->in_syncs, args->in_sync_count,
					    sizeof(*sub->in_syncs));
	if (IS_ERR(sub->in_syncs)) {
		ret = PTR_ERR(sub->in_syncs);
		sub->in_syncs = NULL;
		return ret;
	}
	for (i = 0; i < args->in_sync_count; i++)
		if (sub->in_syncs[i].pad)
			return -EINVAL;
	if (!args->out_sync.handle)
		return 0;
	sub->out_syncobj = drm_syncobj_find(file, args->out_sync.handle);
	if (!sub->out_syncobj)
		return -ENOENT;
	sub->out_fence = simaccel_fence_alloc();
	if (!sub->out_fence)
		return -ENOMEM;
	if (args->out_sync.point) {
		sub->out_chain = dma_fence_chain_alloc();
		if (!sub->out_chain)
			return -ENOMEM;
	}
	return 0;
}

static int simaccel_submit_add_syncs(struct simaccel_batch *batch,
				     const struct simaccel_submit *sub,
				     u32 count, struct drm_file *file)
{
	u32 i;
	int ret;

	for (i = 0; i < count; i++) {
		ret = drm_sched_job_add_syncobj_dependency(&batch->jobs[0]->base,
							   file,
							   sub->in_syncs[i].handle,
							   sub->in_syncs[i].point);
		if (ret)
			return ret;
	}
	return 0;
}

/* The out-syncobj gets the fence simaccel_submit_push() published. */
static void simaccel_submit_signal(struct simaccel_submit *sub,
				   const struct drm_simaccel_submit *args)
{
	struct dma_fence *out = sub->published;

	if (!out)
		return;
	sub->published = NULL;
	if (sub->out_chain) {
		drm_syncobj_add_point(sub->out_syncobj, sub->out_chain, out,
				      args->out_sync.point);
		sub->out_chain = NULL;
	} else {
		drm_syncobj_replace_fence(sub->out_syncobj, out);
	}
	dma_fence_put(out);
}

struct simaccel_waiter {
	struct dma_fence_cb cb;
	struct completion done;
};

static void simaccel_waiter_wake(struct dma_fence *fence,
				 struct dma_fence_cb *cb)
{
	complete(&container_of(cb, struct simaccel_waiter, cb)->done);
}

/*
 * Wait for @fence, killably: an ordinary signal must not interrupt a wait
 * whose restart would submit the job again.
 */
static int simaccel_wait_killable(struct dma_fence *fence)
{
	struct simaccel_waiter w;

	init_completion(&w.done);
	if (dma_fence_add_callback(fence, &w.cb, simaccel_waiter_wake))
		return fence->error;
	if (wait_for_completion_killable(&w.done)) {
		if (dma_fence_remove_callback(fence, &w.cb))
			return -EINTR;
		/* the callback is running: it still uses w */
		wait_for_completion(&w.done);
	}
	return fence->error;
}

/*
 * A waiting submission returns once its jobs are done and what they held
 * is released: user pages unpinned and uncharged, buffers unreferenced.
 * Killed, it forgets the release, unless that is under way.
 */
static int simaccel_wait_released(struct simaccel_submit *sub,
				  struct dma_fence *done)
{
	struct simaccel_job_res *res = sub->res;
	int ret = simaccel_wait_killable(done);

	sub->res = NULL;
	if (ret == -EINTR) {
		/* our reference keeps the release from having run */
		xchg(&res->released, NULL);
		simaccel_res_put(res);
		return ret;
	}
	simaccel_res_put(res);
	/* the jobs are done: drm_sched frees them without delay */
	wait_for_completion(&sub->released);
	return ret;
}

/*
 * Pin the user memory that @ops name into @res (slots 2i and 2i + 1 are
 * op i's sides), before drm_dev_enter(): faulting it in may take as long
 * as the memory's owner likes, and an unbind must not wait for that.
 */
static int simaccel_res_pin(struct simaccel_job_res *res,
			    const struct drm_simaccel_op *ops, u32 count)
{
	struct simaccel_pin *pin;
	u32 i;

	for (i = 0; i < 2 * count; i++) {
		const struct drm_simaccel_op *op = &ops[i / 2];
		bool dst = !(i % 2);

		if (!(op->flags & (dst ? DRM_SIMACCEL_OP_DST_USER :
					 DRM_SIMACCEL_OP_SRC_USER)))
			continue;
		pin = simaccel_pin_user(dst ? op->dst : op->src, op->size, !dst);
		if (IS_ERR(pin))
			return PTR_ERR(pin);
		res->pins[i] = pin;
		res->count = i + 1;
	}
	return 0;
}

/* What the submission holds from before drm_dev_enter(): its user memory. */
static struct simaccel_job_res *
simaccel_submit_res(struct simaccel_device *sdev,
		    const struct drm_simaccel_submit *args,
		    struct simaccel_submit *sub)
{
	struct simaccel_job_res *res = simaccel_res_new(sdev, 2 * args->op_count);
	int ret;

	if (!res)
		return ERR_PTR(-ENOMEM);
	if (args->flags & DRM_SIMACCEL_SUBMIT_WAIT) {
		res->released = &sub->released;
		kref_get(&res->ref);
		sub->res = res;
	}
	ret = simaccel_res_pin(res, sub->ops, args->op_count);
	if (ret) {
		simaccel_res_put(res);
		return ERR_PTR(ret);
	}
	return res;
}

/*
 * Resolve, cut into jobs, make them wait for their dependencies; takes over
 * the caller's reference to @res.
 */
static int simaccel_submit_prepare(struct simaccel_file *sfile,
				   struct simaccel_queue *queue,
				   const struct drm_simaccel_submit *args,
				   struct simaccel_submit *sub,
				   struct drm_file *file,
				   struct simaccel_job_res *res,
				   struct simaccel_batch *batch)
{
	u64 ndesc;
	int ret;

	ret = simaccel_res_build(sfile, res, sub->ops, args->op_count, &ndesc);
	if (!ret)
		ret = simaccel_batch_init(batch, &queue->entity, res, ndesc,
					  queue->usage, file);
	simaccel_res_put(res);
	if (ret)
		return ret;
	ret = simaccel_submit_add_syncs(batch, sub, args->in_sync_count, file);
	if (!ret)
		ret = simaccel_batch_add_deps(batch, res);
	if (ret)
		simaccel_batch_abort(batch);
	return ret;
}

/*
 * Push the batch, unless the queue was destroyed meanwhile, and publish
 * what the out-syncobj gets: a fence of the queue's timeline that follows
 * the jobs' (theirs point into the device and the module, which a user's
 * fence may outlive: simaccel_fence.c), in seqno order under the queue's
 * lock.
 */
static struct dma_fence *simaccel_submit_push(struct simaccel_queue *queue,
					      struct simaccel_batch *batch,
					      struct simaccel_submit *sub,
					      u64 *seqno)
{
	struct dma_fence *done;
	bool reserved = false;

	if (wait_event_interruptible(queue->wq,
				     simaccel_queue_slot_or_dead(queue, &reserved))) {
		simaccel_batch_abort(batch);
		return ERR_PTR(-ERESTARTSYS);
	}
	mutex_lock(&queue->lock);
	if (queue->dead) {
		mutex_unlock(&queue->lock);
		if (reserved)
			simaccel_queue_unreserve(queue);
		simaccel_batch_abort(batch);
		return ERR_PTR(-ENOENT);
	}
	done = simaccel_batch_push(batch, queue);
	*seqno = queue->submitted;
	if (sub->out_fence) {
		sub->published = simaccel_fence_follow(sub->out_fence,
						       queue->timeline, *seqno,
						       done);
		sub->out_fence = NULL;
	}
	mutex_unlock(&queue->lock);
	return done;
}

int simaccel_submit_ioctl(struct drm_device *drm, void *data,
			  struct drm_file *file)
{
	struct simaccel_file *sfile = to_simaccel_file(file);
	struct drm_simaccel_submit *args = data;
	struct simaccel_job_res *res;
	struct simaccel_queue *queue;
	struct simaccel_batch batch;
	struct simaccel_submit sub;
	struct dma_fence *done;
	int ret, idx;

	ret = simaccel_submit_check(args);
	if (ret)
		return ret;
	if (simaccel_usage_banned(sfile->usage))
		return -ECANCELED;
	ret = simaccel_submit_init(&sub, args, file);
	if (ret)
		goto out_sub;
	queue = simaccel_queue_get(sfile, args->queue);
	ret = -ENOENT;
	if (!queue)
		goto out_sub;
	res = simaccel_submit_res(to_simaccel(drm), args, &sub);
	ret = PTR_ERR_OR_ZERO(res);
	if (ret)
		goto out_queue;
	if (!drm_dev_enter(drm, &idx)) {
		simaccel_res_put(res);
		ret = -ENODEV;
		goto out_queue;
	}
	ret = simaccel_submit_prepare(sfile, queue, args, &sub, file, res, &batch);
	drm_dev_exit(idx);
	if (ret)
		goto out_queue;
	/* jobs that reach the hardware after an unbind fail there */
	done = simaccel_submit_push(queue, &batch, &sub, &args->seqno);
	if (IS_ERR(done)) {
		ret = PTR_ERR(done);
		goto out_queue;
	}
	simaccel_submit_signal(&sub, args);
	if (args->flags & DRM_SIMACCEL_SUBMIT_WAIT)
		ret = simaccel_wait_released(&sub, done);
	dma_fence_put(done);
out_queue:
	simaccel_queue_put(queue);
out_sub:
	simaccel_submit_fini(&sub);
	simaccel_dbg(to_simaccel(drm), IOCTL, "submit %u ops: %d\n",
		     args->op_count, ret);
	return ret;
}

/*
 * DRM fdinfo (Documentation/gpu/drm-usage-stats.rst): the time the file's
 * finished jobs spent on the copy engine, whose instances are the hardware
 * queues.
 */
void simaccel_job_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct simaccel_file *sfile = to_simaccel_file(file);

	drm_printf(p, "drm-engine-copy:\t%lld ns\n",
		   atomic64_read(&sfile->usage->busy_ns));
	if (sfile->sdev->num_queues > 1)
		drm_printf(p, "drm-engine-capacity-copy:\t%u\n",
			   sfile->sdev->num_queues);
}

/* The queue's counters and last failures, newest first, into @args. */
static u32 simaccel_queue_failures(struct simaccel_queue *queue,
				   struct drm_simaccel_queue_query *args,
				   struct drm_simaccel_failure *recent)
{
	u32 n, i;

	spin_lock_irq(&queue->err_lock);
	args->failed = queue->failed;
	n = min_t(u64, queue->failed, DRM_SIMACCEL_QUEUE_FAILURES);
	for (i = 0; i < n; i++)
		recent[i] = queue->recent[(queue->failed - 1 - i) %
					  DRM_SIMACCEL_QUEUE_FAILURES];
	spin_unlock_irq(&queue->err_lock);
	args->failed_seqno = n ? recent[0].seqno : 0;
	args->error = n ? recent[0].error : 0;
	return n;
}

int simaccel_queue_query_ioctl(struct drm_device *drm, void *data,
			       struct drm_file *file)
{
	struct drm_simaccel_failure recent[DRM_SIMACCEL_QUEUE_FAILURES];
	struct drm_simaccel_queue_query *args = data;
	struct simaccel_queue *queue;
	u32 n;

	if (args->pad || (args->recent_count && !args->recent))
		return -EINVAL;
	queue = simaccel_queue_get(to_simaccel_file(file), args->handle);
	if (!queue)
		return -ENOENT;
	mutex_lock(&queue->lock);
	args->submitted = queue->submitted;
	mutex_unlock(&queue->lock);
	n = simaccel_queue_failures(queue, args, recent);
	simaccel_queue_put(queue);
	args->recent_count = min(args->recent_count, n);
	if (copy_to_user(u64_to_user_ptr(args->recent), recent,
			 args->recent_count * sizeof(*recent)))
		return -EFAULT;
	return 0;
}
