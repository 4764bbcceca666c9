// SPDX-License-Identifier: GPL-2.0
/*
 * accel: asynchronous queues, fences and the engines that run them.
 *
 * Each hardware queue has an engine: a ring, a fence word, and a work item
 * that completes finished jobs and pushes new ones. Engine 0 runs every
 * context's synchronous queue (synchronous calls are work and a wait); user
 * queues (streams) are spread over the other engines. An engine takes jobs
 * from the queues bound to it round-robin, so contexts share the hardware
 * fairly. A job
 * is pushed in chunks that fit the ring, each ending with a FENCE that
 * writes the engine's sequence number and raises its interrupt.
 *
 * A job that waits for a fence is held back until the fence signals. A
 * device error, or no progress for dma_timeout_ms, fails the job that was
 * running with -EIO; the hardware queue is reset and the jobs behind it,
 * none of which ran, are pushed again.
 *
 * Fences are (user queue handle << 40 | sequence number in that queue).
 */
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "accel_drv.h"

#define ACCEL_ENGINE_RING_SIZE	4096
#define ACCEL_FENCE_SEQ_BITS	40
#define ACCEL_FENCE_SEQ_MASK	((1ull << ACCEL_FENCE_SEQ_BITS) - 1)
#define ACCEL_MAX_UQUEUE	((1u << 20) - 1)
/*
 * Jobs an engine keeps on the ring at once. Few, so that a context with a
 * long backlog cannot fill the ring ahead of the others: the round-robin
 * pick then decides the order.
 */
#define ACCEL_ENGINE_MAX_INFLIGHT 4

struct accel_engine {
	struct accel_ring ring;	/* under @lock */
	struct mutex lock;	/* the ring and everything below */
	struct list_head rr;		/* user queues with pending jobs */
	struct list_head replay;	/* jobs to push again after a reset */
	struct list_head inflight;	/* jobs on the ring, in order */
	unsigned int nr_inflight;
	struct accel_job *partial;	/* job whose chunks are being pushed */
	unsigned long progress;		/* jiffies of the last completion */
	bool dead;
	struct work_struct work;
	struct delayed_work watchdog;
};

struct accel_uqueue {
	struct kref ref;
	struct rcu_head rcu;	/* accel_fence_signalled() reads it under RCU */
	struct accel_ctx *ctx;
	struct accel_engine *eng;
	u32 handle;
	u64 next_seq;		/* last submitted (eng->lock) */
	u64 done_seq;		/* all up to here completed (eng->lock) */
	struct list_head pending;
	struct list_head rr_link;
	struct xarray errors;	/* seq -> xa_mk_value(errno) of failed jobs */
	wait_queue_head_t wq;
	bool dead;
};

struct accel_job {
	struct list_head link;
	struct accel_uqueue *uq;	/* a reference is held */
	u64 seq;
	u64 wait_fence;
	struct accel_xfer *xfer;
	struct accel_desc *descs;
	unsigned int ndescs;
	unsigned int pushed;
	u64 hw_seq;
};

static unsigned int accel_timeout_ms(void)
{
	return accel_dma_timeout_ms();
}

static void accel_uqueue_release(struct kref *ref)
{
	struct accel_uqueue *uq = container_of(ref, struct accel_uqueue, ref);

	xa_destroy(&uq->errors);
	kfree_rcu(uq, rcu);
}

static void accel_uqueue_put(struct accel_uqueue *uq)
{
	kref_put(&uq->ref, accel_uqueue_release);
}

/* Push up to @space - 1 descriptors of @job and a FENCE behind them. */
static void accel_engine_push(struct accel_engine *eng, struct accel_job *job,
			      u32 space)
{
	unsigned int n = min(job->ndescs - job->pushed, space - 1), i;

	for (i = 0; i < n; i++)
		accel_ring_push(&eng->ring, &job->descs[job->pushed++]);
	job->hw_seq = accel_ring_submit(&eng->ring);
}

/* Completion */

static void accel_kick_engines(struct accel_device *adev)
{
	unsigned int i;

	for (i = 0; i < adev->nr_engines; i++)
		queue_work(adev->wq, &adev->engines[i].work);
}

/* eng->lock is held. */
static void accel_job_complete(struct accel_engine *eng, struct accel_job *job,
			       int error)
{
	struct accel_uqueue *uq = job->uq;
	struct accel_ctx *ctx = uq->ctx;

	list_del(&job->link);
	if (eng->partial == job)
		eng->partial = NULL;
	accel_xfer_release(eng->ring.adev, job->xfer);
	if (error)
		xa_store(&uq->errors, job->seq, xa_mk_value(-error), GFP_KERNEL);
	WRITE_ONCE(uq->done_seq, job->seq);
	eng->progress = jiffies;
	if (atomic_dec_and_test(&ctx->inflight))
		wake_up_all(&ctx->poll_wq);
	wake_up_all(&uq->wq);
	accel_uqueue_put(uq);
	kfree(job);
}

static void accel_engine_reap(struct accel_engine *eng)
{
	struct accel_job *job, *next;
	u64 done = accel_ring_done(&eng->ring);
	bool any = false;

	list_for_each_entry_safe(job, next, &eng->inflight, link) {
		if (job == eng->partial || job->hw_seq > done)
			break;
		eng->nr_inflight--;
		accel_job_complete(eng, job, 0);
		any = true;
	}
	/* a job of another engine may wait for what just completed */
	if (any)
		accel_kick_engines(eng->ring.adev);
}

/* The job at the head failed: fail it, reset, and push the rest again. */
static void accel_engine_fail_head(struct accel_engine *eng, int error)
{
	struct accel_job *job;

	accel_engine_reap(eng);
	job = list_first_entry_or_null(&eng->inflight, struct accel_job, link);
	if (job) {
		accel_job_complete(eng, job, error);
		/* a failed fence has signalled too: its waiters may run */
		accel_kick_engines(eng->ring.adev);
	}
	accel_ring_reset(&eng->ring);
	list_for_each_entry(job, &eng->inflight, link)
		job->pushed = 0;
	list_splice_init(&eng->inflight, &eng->replay);
	eng->nr_inflight = 0;
	eng->partial = NULL;
	eng->progress = jiffies;
}

/* Scheduling */

static bool accel_fence_signalled(struct accel_ctx *ctx, u64 fence)
{
	struct accel_uqueue *uq;
	bool done = true;

	rcu_read_lock();
	uq = xa_load(&ctx->queues, fence >> ACCEL_FENCE_SEQ_BITS);
	if (uq)
		done = READ_ONCE(uq->done_seq) >= (fence & ACCEL_FENCE_SEQ_MASK);
	rcu_read_unlock();
	return done;
}

/*
 * The next job to push, moved to the in-flight list: jobs to replay first,
 * then the first runnable job of the user queues, round-robin.
 */
static struct accel_job *accel_engine_pick(struct accel_engine *eng)
{
	struct accel_uqueue *uq;
	struct accel_job *job;

	if (eng->nr_inflight >= ACCEL_ENGINE_MAX_INFLIGHT)
		return NULL;
	job = list_first_entry_or_null(&eng->replay, struct accel_job, link);
	if (job) {
		list_move_tail(&job->link, &eng->inflight);
		eng->nr_inflight++;
		return job;
	}
	list_for_each_entry(uq, &eng->rr, rr_link) {
		job = list_first_entry(&uq->pending, struct accel_job, link);
		if (job->wait_fence &&
		    !accel_fence_signalled(uq->ctx, job->wait_fence))
			continue;
		list_move_tail(&job->link, &eng->inflight);
		eng->nr_inflight++;
		if (list_empty(&uq->pending))
			list_del_init(&uq->rr_link);
		else
			list_move_tail(&uq->rr_link, &eng->rr);
		return job;
	}
	return NULL;
}

static void accel_engine_fill(struct accel_engine *eng)
{
	struct accel_job *job;
	u32 space;

	for (;;) {
		space = accel_ring_space(&eng->ring);
		if (space < 2)
			return;
		job = eng->partial;
		if (!job) {
			bool idle = list_empty(&eng->inflight);

			job = accel_engine_pick(eng);
			if (!job)
				return;
			if (idle)
				eng->progress = jiffies;
		}
		accel_engine_push(eng, job, space);
		eng->partial = job->pushed < job->ndescs ? job : NULL;
		mod_delayed_work(eng->ring.adev->wq, &eng->watchdog,
				 msecs_to_jiffies(accel_timeout_ms()));
	}
}

static void accel_engine_work(struct work_struct *work)
{
	struct accel_engine *eng = container_of(work, struct accel_engine, work);
	u32 error;

	mutex_lock(&eng->lock);
	if (!eng->dead) {
		error = accel_ring_error(&eng->ring);
		if (error) {
			dev_err_ratelimited(&eng->ring.adev->pdev->dev,
					    "queue %u: device error %u, job failed\n",
					    eng->ring.queue, error);
			accel_engine_fail_head(eng, -EIO);
		}
		accel_engine_reap(eng);
		accel_engine_fill(eng);
	}
	mutex_unlock(&eng->lock);
}

static void accel_engine_watchdog(struct work_struct *work)
{
	struct accel_engine *eng = container_of(to_delayed_work(work),
						struct accel_engine, watchdog);
	unsigned long limit = msecs_to_jiffies(accel_timeout_ms());

	mutex_lock(&eng->lock);
	accel_engine_reap(eng);
	if (!eng->dead && !list_empty(&eng->inflight)) {
		if (time_after(jiffies, eng->progress + limit)) {
			dev_err_ratelimited(&eng->ring.adev->pdev->dev,
					    "queue %u: no progress in %u ms, job failed\n",
					    eng->ring.queue, accel_timeout_ms());
			accel_engine_fail_head(eng, -EIO);
			accel_engine_fill(eng);
		}
		mod_delayed_work(eng->ring.adev->wq, &eng->watchdog, limit);
	}
	mutex_unlock(&eng->lock);
}

/* Engines of a device */

static int accel_engine_init(struct accel_engine *eng, struct accel_device *adev,
			     u32 q)
{
	mutex_init(&eng->lock);
	INIT_LIST_HEAD(&eng->rr);
	INIT_LIST_HEAD(&eng->replay);
	INIT_LIST_HEAD(&eng->inflight);
	INIT_WORK(&eng->work, accel_engine_work);
	INIT_DELAYED_WORK(&eng->watchdog, accel_engine_watchdog);
	return accel_ring_init(&eng->ring, adev, q, ACCEL_ENGINE_RING_SIZE);
}

int accel_engines_init(struct accel_device *adev)
{
	unsigned int i;
	int ret = 0;

	adev->nr_engines = adev->num_queues;
	adev->wq = alloc_workqueue("%s", WQ_UNBOUND | WQ_HIGHPRI, 0, adev->name);
	adev->engines = kcalloc(adev->nr_engines, sizeof(*adev->engines),
				GFP_KERNEL);
	if (!adev->wq || !adev->engines) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = 0; i < adev->nr_engines && !ret; i++)
		ret = accel_engine_init(&adev->engines[i], adev, i);
	if (!ret)
		return 0;
err:
	for (i = 0; adev->engines && i < adev->nr_engines; i++)
		if (adev->engines[i].ring.adev)
			accel_ring_free(&adev->engines[i].ring);
	kfree(adev->engines);
	if (adev->wq)
		destroy_workqueue(adev->wq);
	adev->engines = NULL;
	adev->nr_engines = 0;
	return ret;
}

/* Fail everything still queued: the device is gone. eng->lock is held. */
static void accel_engine_drain_dead(struct accel_engine *eng)
{
	struct accel_uqueue *uq, *next_uq;
	struct accel_job *job, *next;

	list_splice_init(&eng->replay, &eng->inflight);
	list_for_each_entry_safe(uq, next_uq, &eng->rr, rr_link) {
		list_splice_tail_init(&uq->pending, &eng->inflight);
		list_del_init(&uq->rr_link);
	}
	list_for_each_entry_safe(job, next, &eng->inflight, link)
		accel_job_complete(eng, job, -ENODEV);
	eng->nr_inflight = 0;
}

/* The device is reset already: no DMA runs. */
void accel_engines_fini(struct accel_device *adev)
{
	unsigned int i;

	for (i = 0; i < adev->nr_engines; i++) {
		struct accel_engine *eng = &adev->engines[i];

		mutex_lock(&eng->lock);
		eng->dead = true;
		accel_engine_drain_dead(eng);
		mutex_unlock(&eng->lock);
	}
	/* dead engines re-arm nothing; then nothing is left on the queue */
	for (i = 0; i < adev->nr_engines; i++)
		cancel_delayed_work_sync(&adev->engines[i].watchdog);
	if (adev->wq)
		destroy_workqueue(adev->wq);
	for (i = 0; i < adev->nr_engines; i++)
		accel_ring_free(&adev->engines[i].ring);
	kfree(adev->engines);
	adev->engines = NULL;
	adev->nr_engines = 0;
}

void accel_engine_irq(struct accel_device *adev, u32 queue)
{
	if (queue < adev->nr_engines)
		queue_work(adev->wq, &adev->engines[queue].work);
}

void accel_engines_error_irq(struct accel_device *adev)
{
	accel_kick_engines(adev);
}

/* User queues */

static struct accel_uqueue *accel_uqueue_new(struct accel_ctx *ctx,
					     struct accel_engine *eng)
{
	struct accel_uqueue *uq = kzalloc(sizeof(*uq), GFP_KERNEL);

	if (!uq)
		return NULL;
	kref_init(&uq->ref);
	uq->ctx = ctx;
	uq->eng = eng;
	INIT_LIST_HEAD(&uq->pending);
	INIT_LIST_HEAD(&uq->rr_link);
	xa_init(&uq->errors);
	init_waitqueue_head(&uq->wq);
	return uq;
}

/* User queues go round-robin to the engines but 0, which runs sync work. */
static struct accel_engine *accel_next_engine(struct accel_device *adev)
{
	unsigned int n = adev->nr_engines;

	if (n == 1)
		return &adev->engines[0];
	return &adev->engines[1 + atomic_inc_return(&adev->next_engine) % (n - 1)];
}

int accel_queue_create(struct accel_ctx *ctx, struct accel_queue_create *args)
{
	struct accel_uqueue *uq;
	u32 handle;
	int ret;

	if (args->flags || args->pad)
		return -EINVAL;
	uq = accel_uqueue_new(ctx, accel_next_engine(ctx->adev));
	if (!uq)
		return -ENOMEM;
	/*
	 * Cyclic: a fence names its queue's handle, so a handle given again
	 * at once would make the fences of the destroyed queue look like the
	 * new one's (-EINVAL where the uapi promises -ENOENT).
	 */
	ret = xa_alloc_cyclic(&ctx->queues, &handle, uq,
			      XA_LIMIT(1, ACCEL_MAX_UQUEUE), &ctx->next_queue,
			      GFP_KERNEL);
	if (ret < 0) {
		accel_uqueue_put(uq);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	uq->handle = handle;
	args->handle = handle;
	args->hw_queue = uq->eng->ring.queue;
	return 0;
}

static void accel_uqueue_drain(struct accel_uqueue *uq)
{
	struct accel_engine *eng = uq->eng;
	u64 last;

	mutex_lock(&eng->lock);
	uq->dead = true;
	last = uq->next_seq;
	mutex_unlock(&eng->lock);
	wait_event(uq->wq, READ_ONCE(uq->done_seq) >= last);
}

int accel_queue_destroy(struct accel_ctx *ctx, u32 handle)
{
	struct accel_uqueue *uq;

	uq = handle ? xa_erase(&ctx->queues, handle) : NULL;
	if (!uq)
		return -ENOENT;
	accel_uqueue_drain(uq);
	accel_uqueue_put(uq);
	return 0;
}

/* At close: finish every queue's work before the context's memory goes. */
void accel_queues_fini(struct accel_ctx *ctx)
{
	struct accel_uqueue *uq;
	unsigned long handle;

	xa_for_each(&ctx->queues, handle, uq)
		accel_queue_destroy(ctx, handle);
	xa_destroy(&ctx->queues);
	if (ctx->sync_queue) {
		accel_uqueue_drain(ctx->sync_queue);
		accel_uqueue_put(ctx->sync_queue);
	}
}

/* A referenced user queue of @ctx, or NULL. */
static struct accel_uqueue *accel_uqueue_get(struct accel_ctx *ctx, u32 handle)
{
	struct accel_uqueue *uq;

	xa_lock(&ctx->queues);
	uq = xa_load(&ctx->queues, handle);
	if (uq)
		kref_get(&uq->ref);
	xa_unlock(&ctx->queues);
	return uq;
}

/* Is @fence one this context has issued? */
static bool accel_fence_valid(struct accel_ctx *ctx, u64 fence)
{
	struct accel_uqueue *uq;
	u64 seq = fence & ACCEL_FENCE_SEQ_MASK;
	bool valid = false;

	uq = accel_uqueue_get(ctx, fence >> ACCEL_FENCE_SEQ_BITS);
	if (uq) {
		mutex_lock(&uq->eng->lock);
		valid = seq && seq <= uq->next_seq;
		mutex_unlock(&uq->eng->lock);
		accel_uqueue_put(uq);
	}
	return valid;
}

static int accel_submit_check(struct accel_ctx *ctx,
			      const struct accel_submit *args)
{
	if (args->pad)
		return -EINVAL;
	switch (args->op) {
	case ACCEL_SUBMIT_COPY:
		if (args->value)
			return -EINVAL;
		break;
	case ACCEL_SUBMIT_MEMSET:
		if (args->flags || args->value > 0xff)
			return -EINVAL;
		break;
	case ACCEL_SUBMIT_BARRIER:
		if (args->flags || args->value || args->size)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (args->wait_fence && !accel_fence_valid(ctx, args->wait_fence))
		return -EINVAL;
	return 0;
}

static int accel_submit_job(struct accel_uqueue *uq, struct accel_job *job,
			    u64 *fence)
{
	struct accel_engine *eng = uq->eng;

	mutex_lock(&eng->lock);
	if (uq->dead || eng->dead || uq->next_seq == ACCEL_FENCE_SEQ_MASK) {
		mutex_unlock(&eng->lock);
		return uq->dead ? -ENOENT : eng->dead ? -ENODEV : -ENOSPC;
	}
	job->seq = ++uq->next_seq;
	list_add_tail(&job->link, &uq->pending);
	if (list_empty(&uq->rr_link))
		list_add_tail(&uq->rr_link, &eng->rr);
	atomic_inc(&uq->ctx->inflight);
	*fence = (u64)uq->handle << ACCEL_FENCE_SEQ_BITS | job->seq;
	/* push it now rather than wake the engine's worker: one hop less */
	accel_engine_fill(eng);
	mutex_unlock(&eng->lock);
	return 0;
}

/* Queue @args on @uq (whose reference goes to the job); returns its fence. */
static int accel_uqueue_submit(struct accel_ctx *ctx, struct accel_uqueue *uq,
			       struct accel_submit *args)
{
	struct accel_job *job;
	int ret;

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job) {
		accel_uqueue_put(uq);
		return -ENOMEM;
	}
	job->uq = uq;	/* the reference goes with the job */
	job->wait_fence = args->wait_fence;
	ret = accel_xfer_prepare(ctx, args, &job->xfer, &job->descs, &job->ndescs);
	if (!ret)
		ret = accel_submit_job(uq, job, &args->fence);
	if (ret) {
		accel_xfer_release(ctx->adev, job->xfer);
		kfree(job);
		accel_uqueue_put(uq);
	}
	return ret;
}

int accel_queue_submit(struct accel_ctx *ctx, struct accel_submit *args)
{
	struct accel_uqueue *uq;
	int ret;

	ret = accel_submit_check(ctx, args);
	if (ret)
		return ret;
	uq = accel_uqueue_get(ctx, args->queue);
	if (!uq)
		return -ENOENT;
	return accel_uqueue_submit(ctx, uq, args);
}

/* The context's synchronous queue on engine 0, created on first use. */
static struct accel_uqueue *accel_sync_queue(struct accel_ctx *ctx)
{
	struct accel_uqueue *uq;

	mutex_lock(&ctx->lock);
	if (!ctx->sync_queue)
		ctx->sync_queue = accel_uqueue_new(ctx, &ctx->adev->engines[0]);
	uq = ctx->sync_queue;
	if (uq)
		kref_get(&uq->ref);
	mutex_unlock(&ctx->lock);
	return uq;
}

/*
 * Run @args on the context's synchronous queue and wait for it. A fatal
 * signal ends the wait early; the work itself holds what it uses.
 */
int accel_queue_run_sync(struct accel_ctx *ctx, struct accel_submit *args)
{
	struct accel_uqueue *uq = accel_sync_queue(ctx);
	u64 seq;
	void *err;
	int ret;

	if (!uq)
		return -ENOMEM;
	kref_get(&uq->ref);	/* one for the job, one for us */
	ret = accel_uqueue_submit(ctx, uq, args);
	if (!ret) {
		seq = args->fence & ACCEL_FENCE_SEQ_MASK;
		ret = wait_event_killable(uq->wq, READ_ONCE(uq->done_seq) >= seq);
		err = ret ? NULL : xa_erase(&uq->errors, seq);
		if (err)
			ret = -(int)xa_to_value(err);
	}
	accel_uqueue_put(uq);
	return ret;
}

static int accel_uqueue_wait(struct accel_uqueue *uq, u64 seq, s64 timeout_ns)
{
	long left = MAX_SCHEDULE_TIMEOUT;

	if (!seq || seq > READ_ONCE(uq->next_seq))
		return -EINVAL;
	if (READ_ONCE(uq->done_seq) >= seq)
		return 0;
	if (!timeout_ns)
		return -EBUSY;
	if (timeout_ns > 0)
		left = max_t(long, nsecs_to_jiffies(timeout_ns), 1);
	left = wait_event_interruptible_timeout(uq->wq,
						READ_ONCE(uq->done_seq) >= seq,
						left);
	if (left < 0)
		return left;
	return left ? 0 : -ETIMEDOUT;
}

int accel_queue_wait(struct accel_ctx *ctx, const struct accel_wait *args)
{
	u64 seq = args->fence & ACCEL_FENCE_SEQ_MASK;
	struct accel_uqueue *uq;
	void *err;
	int ret;

	if (args->flags || args->pad)
		return -EINVAL;
	uq = accel_uqueue_get(ctx, args->fence >> ACCEL_FENCE_SEQ_BITS);
	if (!uq)
		return args->fence ? -ENOENT : -EINVAL;
	ret = accel_uqueue_wait(uq, seq, args->timeout_ns);
	if (!ret) {
		err = xa_load(&uq->errors, seq);
		if (err)
			ret = -(int)xa_to_value(err);
	}
	accel_uqueue_put(uq);
	return ret;
}

__poll_t accel_poll(struct file *file, poll_table *wait)
{
	struct accel_ctx *ctx = file->private_data;

	poll_wait(file, &ctx->poll_wq, wait);
	return atomic_read(&ctx->inflight) ? 0 : EPOLLIN | EPOLLRDNORM;
}
