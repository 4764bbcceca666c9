/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: queues and jobs, scheduled by drm_sched.
 */
#ifndef __SIMACCEL_JOB_H__
#define __SIMACCEL_JOB_H__

#include <drm/gpu_scheduler.h>
#include <linux/kref.h>
#include <linux/workqueue.h>

#include "simaccel_drv.h"

struct simaccel_bo;
struct simaccel_job_res;
struct simaccel_queue;

/**
 * struct simaccel_job - descriptors that run on one hardware queue
 * @base: the scheduler's job
 * @queue: the user queue it came from, referenced; NULL for the kernel's
 * @usage: the share of the file it runs for (its window), referenced
 * @res: what its descriptors touch, referenced; shared by the jobs of one
 *	submission, released when the last of them is freed
 * @descs: its descriptors, in @res
 * @ndesc: how many
 * @cost: what they take of the hardware's time, in bytes
 * @onboard_link: in its file's jobs on the hardware (struct
 *	simaccel_usage.onboard), from its admission until its fence signals
 * @onboard_fence: its finished fence, referenced while it is there
 * @hw_fence: signalled when the device has run them; allocated with the
 *	job, initialized when it reaches the ring
 * @hw_fence_live: @hw_fence was initialized
 * @link: in the hardware queue's in-flight list
 * @seqno: @hw_fence's seqno
 * @started: when it went on the ring (the last time)
 * @submission: the seqno of its submission in its queue
 * @last: the last job of its submission or clearing
 * @holds_slot: its release frees its submission's slot in its queue
 * @reached_peers: it went to the hardware with the peers' VRAM in @res,
 *	whose removal waits for its fence (simaccel_prime_bo_reach())
 * @ring_first: where its first descriptor is, counted as @emitted is in
 *	struct simaccel_hwq
 * @revoked: a peer it reaches went: its descriptors on the ring move
 *	nothing, and it fails with -ENODEV
 * @ref: held by the scheduler (until free_job) and by the release of its
 *	memory when its fence signals (@done_cb, @done_work)
 * @done_cb: on its finished fence
 * @settle_idx: which of the device's settle_pending counts it is in, from
 *	its push (a clearing) or its fence (the others) to @done_work
 * @done_work: lets go of @res, in process context
 * @sdev: the device, referenced (drm_dev_get())
 * @put_work: drops that reference and frees the job
 */
struct simaccel_job {
	struct drm_sched_job base;
	struct simaccel_queue *queue;
	struct simaccel_usage *usage;
	struct simaccel_job_res *res;
	const struct accel_desc *descs;
	u32 ndesc;
	u64 cost;
	struct list_head onboard_link;
	struct dma_fence *onboard_fence;
	struct dma_fence *hw_fence;
	bool hw_fence_live;
	struct list_head link;
	u64 seqno;
	ktime_t started;
	u64 submission;
	bool last;
	bool holds_slot;
	bool reached_peers;
	u64 ring_first;
	bool revoked;
	struct kref ref;
	struct dma_fence_cb done_cb;
	unsigned int settle_idx;
	struct work_struct done_work;
	struct simaccel_device *sdev;
	struct work_struct put_work;
};

static inline struct simaccel_job *to_simaccel_job(struct drm_sched_job *job)
{
	return container_of(job, struct simaccel_job, base);
}

extern const struct drm_sched_backend_ops simaccel_sched_ops;

int simaccel_job_init(struct simaccel_device *sdev);
struct simaccel_usage *simaccel_usage_new(struct simaccel_device *sdev);
void simaccel_usage_put(struct simaccel_usage *usage);
void simaccel_job_show_fdinfo(struct drm_printer *p, struct drm_file *file);
void simaccel_job_file_fini(struct simaccel_file *sfile);
void simaccel_job_account(struct simaccel_job *job, u64 ns);
u32 simaccel_job_queue_handle(const struct simaccel_job *job);
bool simaccel_job_reaches(struct simaccel_job *job, struct simaccel_bo *bo);
bool simaccel_job_reaches_revoked(struct simaccel_job *job);
void simaccel_job_revoked(struct simaccel_job *job);
void simaccel_job_hung(struct simaccel_job *job);
struct dma_fence *simaccel_job_clear_vram(struct simaccel_device *sdev,
					  struct simaccel_bo *bo,
					  struct simaccel_usage *usage);
int simaccel_queue_create_ioctl(struct drm_device *drm, void *data,
				struct drm_file *file);
int simaccel_queue_destroy_ioctl(struct drm_device *drm, void *data,
				 struct drm_file *file);
int simaccel_submit_ioctl(struct drm_device *drm, void *data,
			  struct drm_file *file);
int simaccel_queue_query_ioctl(struct drm_device *drm, void *data,
			       struct drm_file *file);
bool simaccel_job_settled(struct simaccel_device *sdev);
long simaccel_job_wait_released(struct simaccel_device *sdev, long timeout);

#endif /* __SIMACCEL_JOB_H__ */
