// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: the fences users hold.
 *
 * A user may keep a fence of a submission for ever, in a syncobj or a
 * sync_file, across an unbind of the device and an unload of the module,
 * and still ask for its names or wait on it. drm_sched's fences cannot be
 * handed out for that: their timeline name is read through the scheduler,
 * which goes with the device, and a job's hardware fence has its lock in
 * the hardware queue and its ops in this module. So a submission's outcome
 * is published as a fence of its own (struct simaccel_fence) that follows
 * the jobs' fence, lets go of it once it has signalled, and itself holds
 * everything its ops touch: its timeline (name and lock) by reference, and
 * the module by a module reference. Both are dropped in an RCU callback,
 * after readers that found the fence under RCU are done with it; the
 * module's exit waits for these callbacks (rcu_barrier()) before its code
 * goes.
 *
 * A timeline's fences signal in seqno order, as dma_fence users assume of
 * one context (a dma_resv or a drm_sched job keeps only the later fence of
 * a context). The jobs' fences need not: drm_sched signals a job that
 * fails before it runs (a failed dependency) at once, while the queue's
 * earlier job is still on the hardware, and the queue's next job may then
 * run on another hardware queue and finish first. So a fence whose jobs
 * are done waits on its timeline's list for the fences before it, and each
 * completion signals every done fence at the head of the list.
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "simaccel_drv.h"
#include "simaccel_fence.h"

/**
 * struct simaccel_timeline - the fences of one user queue
 * @ref: held by the queue and by each of its fences
 * @lock: the fences' lock; protects @pending
 * @context: their dma_fence context; seqnos are the queue's submissions
 * @pending: its fences not yet signalled, in seqno order
 * @name: the timeline's name, as sync_file and debugfs report it
 */
struct simaccel_timeline {
	struct kref ref;
	spinlock_t lock;	/* the fences'; protects pending */
	u64 context;
	struct list_head pending;
	char name[48];
};

/**
 * struct simaccel_fence - a submission's outcome, as users hold it
 * @base: the fence
 * @tl: its timeline, referenced
 * @followed: the jobs' fence, referenced until this one has signalled
 * @cb: on @followed
 * @link: in its timeline's @pending, referenced, until it has signalled
 * @done: @followed has signalled (under the timeline's lock)
 * @rcu: frees it, and drops the references, after a grace period
 */
struct simaccel_fence {
	struct dma_fence base;
	struct simaccel_timeline *tl;
	struct dma_fence *followed;
	struct dma_fence_cb cb;
	struct list_head link;
	bool done;
	struct rcu_head rcu;
};

struct simaccel_timeline *simaccel_timeline_new(const char *name)
{
	struct simaccel_timeline *tl = kzalloc(sizeof(*tl), GFP_KERNEL_ACCOUNT);

	if (!tl)
		return NULL;
	kref_init(&tl->ref);
	spin_lock_init(&tl->lock);
	INIT_LIST_HEAD(&tl->pending);
	tl->context = dma_fence_context_alloc(1);
	strscpy(tl->name, name, sizeof(tl->name));
	return tl;
}

static void simaccel_timeline_release(struct kref *ref)
{
	kfree(container_of(ref, struct simaccel_timeline, ref));
}

void simaccel_timeline_put(struct simaccel_timeline *tl)
{
	kref_put(&tl->ref, simaccel_timeline_release);
}

static struct simaccel_fence *to_simaccel_fence(struct dma_fence *fence)
{
	return container_of(fence, struct simaccel_fence, base);
}

static const char *simaccel_fence_driver_name(struct dma_fence *fence)
{
	return DRIVER_NAME;
}

static const char *simaccel_fence_timeline_name(struct dma_fence *fence)
{
	return to_simaccel_fence(fence)->tl->name;
}

/* The last thing of this module's that runs for the fence. */
static void simaccel_fence_free_rcu(struct rcu_head *rcu)
{
	struct simaccel_fence *fence = container_of(rcu, struct simaccel_fence, rcu);

	simaccel_timeline_put(fence->tl);
	kfree(fence);
	module_put(THIS_MODULE);
}

static void simaccel_fence_release(struct dma_fence *base)
{
	/* not deferred: the unload waits for the module reference */
	call_rcu_hurry(&to_simaccel_fence(base)->rcu, simaccel_fence_free_rcu);
}

static const struct dma_fence_ops simaccel_user_fence_ops = {
	.use_64bit_seqno = true,
	.get_driver_name = simaccel_fence_driver_name,
	.get_timeline_name = simaccel_fence_timeline_name,
	.release = simaccel_fence_release,
};

/* Allocated before the jobs are pushed, so that publishing cannot fail. */
struct simaccel_fence *simaccel_fence_alloc(void)
{
	return kzalloc(sizeof(struct simaccel_fence), GFP_KERNEL_ACCOUNT);
}

/* A fence that simaccel_fence_follow() was not given. */
void simaccel_fence_free(struct simaccel_fence *fence)
{
	kfree(fence);
}

/* Signal the done fences at the head of @tl's list, in order. */
static void simaccel_timeline_signal(struct simaccel_timeline *tl)
{
	struct simaccel_fence *fence, *next;

	lockdep_assert_held(&tl->lock);
	list_for_each_entry_safe(fence, next, &tl->pending, link) {
		if (!fence->done)
			break;
		list_del(&fence->link);
		if (fence->followed->error)
			dma_fence_set_error(&fence->base, fence->followed->error);
		dma_fence_signal_locked(&fence->base);
		/* whoever signalled @followed holds a reference of their own */
		dma_fence_put(fence->followed);
		fence->followed = NULL;
		dma_fence_put(&fence->base);
	}
}

static void simaccel_fence_done(struct simaccel_fence *fence)
{
	struct simaccel_timeline *tl = fence->tl;
	unsigned long flags;

	spin_lock_irqsave(&tl->lock, flags);
	fence->done = true;
	simaccel_timeline_signal(tl);
	spin_unlock_irqrestore(&tl->lock, flags);
}

static void simaccel_fence_followed_signalled(struct dma_fence *followed,
					      struct dma_fence_cb *cb)
{
	simaccel_fence_done(container_of(cb, struct simaccel_fence, cb));
}

/**
 * simaccel_fence_follow - publish a fence that signals when another has
 * @fence: from simaccel_fence_alloc(), which this takes over
 * @tl: its timeline
 * @seqno: its place there, above every earlier one's: the caller
 *	serializes the calls of a timeline, in seqno order
 * @followed: the jobs' fence, whose error it takes
 *
 * Returns @fence's dma_fence, with a reference for the caller.
 */
struct dma_fence *simaccel_fence_follow(struct simaccel_fence *fence,
					struct simaccel_timeline *tl, u64 seqno,
					struct dma_fence *followed)
{
	__module_get(THIS_MODULE);
	kref_get(&tl->ref);
	fence->tl = tl;
	fence->followed = dma_fence_get(followed);
	dma_fence_init(&fence->base, &simaccel_user_fence_ops, &tl->lock,
		       tl->context, seqno);
	/* one reference for the caller, one for the list until signalled */
	dma_fence_get(&fence->base);
	spin_lock_irq(&tl->lock);
	list_add_tail(&fence->link, &tl->pending);
	spin_unlock_irq(&tl->lock);
	if (dma_fence_add_callback(followed, &fence->cb,
				   simaccel_fence_followed_signalled))
		simaccel_fence_done(fence);
	return &fence->base;
}
