// SPDX-License-Identifier: MIT
/*
 * The accel backend's jobs, streams and events over simaccel.ko's queues
 * and syncobjs.
 *
 * A stream's job N signals point N of its timeline syncobj. An event is a
 * binary syncobj that a record fills with the fence of the stream's last
 * job (DRM_IOCTL_SYNCOBJ_TRANSFER), so that it outlives the stream, and
 * the job's queue and number, by which the queue's failure records tell
 * whether that job failed. Syncobj waits do not report a fence's error:
 * the queue's counters (DRM_IOCTL_SIMACCEL_QUEUE_QUERY) do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/driver.h"

/* An event: what its latest record saw. */
struct drv_event {
	pthread_mutex_t lock;
	uint32_t syncobj;	/* the fence of the recorded job */
	uint32_t queue;		/* that job's queue */
	uint64_t job;		/* and number; 0: nothing to wait for */
	uint64_t first;		/* the first job of the same operation */
};

/* The absolute CLOCK_MONOTONIC time syncobj waits take; <0: forever */
static int64_t deadline(int64_t timeout_ns)
{
	struct timespec now;

	if (timeout_ns < 0)
		return INT64_MAX;
	if (timeout_ns == 0)
		return 0;	/* poll */
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + timeout_ns;
}

/*
 * 0 once @handle's fence at @point has signalled, -EBUSY on time-out. The
 * points waited for were all queued before: a point with no fence is a
 * syncobj destroyed (and its handle maybe reused) meanwhile, -EINVAL at
 * once rather than a wait for a fence that may never come.
 */
static int wait_syncobj(int fd, uint32_t handle, uint64_t point,
			int64_t timeout_ns)
{
	struct drm_syncobj_timeline_wait w = {
		.handles = (uintptr_t)&handle,
		.points = (uintptr_t)&point,
		.count_handles = 1,
		.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL,
		.timeout_nsec = deadline(timeout_ns),
	};
	int ret = drv_ioctl(fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &w);

	return ret == -ETIME ? -EBUSY : ret;
}

int drv_wait_point(int fd, uint32_t timeline, uint64_t point,
		   int64_t timeout_ns)
{
	return point ? wait_syncobj(fd, timeline, point, timeout_ns) : 0;
}

int drv_stream_wait(int fd, struct drv_stream *s, uint64_t point,
		    int64_t timeout_ns)
{
	return drv_wait_point(fd, s->timeline, point, timeout_ns);
}

static int syncobj_create(int fd, uint32_t *handle)
{
	struct drm_syncobj_create c = { 0 };
	int ret = drv_ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &c);

	*handle = c.handle;
	return ret;
}

static void syncobj_destroy(int fd, uint32_t handle)
{
	struct drm_syncobj_destroy d = { .handle = handle };

	drv_ioctl(fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
}

/* ------------------------------------------------------------------ */
/* Jobs */

/* Queue one job on @s, signalling its next point. Returns 0 or -errno. */
static int submit_on_stream(int fd, struct drv_stream *s,
			    struct drm_simaccel_submit *sub, uint64_t *job)
{
	int ret;

	sub->queue = s->queue;
	sub->out_sync.handle = s->timeline;
	pthread_mutex_lock(&s->lock);
	sub->out_sync.point = atomic_load(&s->last) + 1;
	ret = drv_ioctl(fd, DRM_IOCTL_SIMACCEL_SUBMIT, sub);
	if (sub->seqno)		/* queued: its number is its point */
		atomic_store(&s->last, sub->seqno);
	pthread_mutex_unlock(&s->lock);
	if (job && sub->seqno)
		*job = sub->seqno;
	return ret;
}

/* One job of @p's first @size bytes, @done bytes in */
static int submit_piece(struct accel_device *dev, struct drv_stream *s,
			const struct drv_piece *p, uint64_t done,
			uint64_t size, uint64_t *job)
{
	struct drm_simaccel_op op = {
		.op = p->op, .flags = p->flags, .dst = p->dst + done,
		.src = p->op == DRM_SIMACCEL_OP_COPY ? p->src + done : p->src,
		.size = size,
	};
	struct drm_simaccel_submit sub = {
		.ops = (uintptr_t)&op, .op_count = 1,
	};
	struct drv_dev *dd = drv_of(dev);

	if (s)
		return submit_on_stream(dd->fd, s, &sub, job);
	sub.queue = dd->sync_queue;
	sub.flags = DRM_SIMACCEL_SUBMIT_WAIT;
	return drv_ioctl(dd->fd, DRM_IOCTL_SIMACCEL_SUBMIT, &sub);
}

static bool in_vram(uint64_t dev_addr)
{
	return dev_addr >= DRM_SIMACCEL_VRAM_BASE &&
	       dev_addr < DRM_SIMACCEL_HOST_BASE;
}

/* The piece size for @p: larger where it names no user memory. */
static _Atomic uint64_t *piece_max_of(struct drv_dev *dd,
				      const struct drv_piece *p)
{
	if (p->flags)
		return &dd->piece_max;
	if (in_vram(p->dst) &&
	    (p->op != DRM_SIMACCEL_OP_COPY || in_vram(p->src)))
		return &dd->vram_piece_max;
	return &dd->bo_piece_max;
}

/*
 * A job has at most DRM_SIMACCEL_MAX_DESCS descriptors, each of which
 * moves a range contiguous on the bus on both sides (4 KiB of scattered
 * system memory, less on a throttled device): large work is split, into
 * smaller pieces where the driver says E2BIG.
 */
int drv_run(struct accel_device *dev, struct drv_stream *s,
	    const struct drv_piece *p, uint64_t *last)
{
	_Atomic uint64_t *piece_max = piece_max_of(drv_of(dev), p);
	uint64_t done = 0, job = 0;

	while (done < p->size) {
		uint64_t max = atomic_load(piece_max);
		uint64_t n = p->size - done < max ? p->size - done : max;
		int ret = submit_piece(dev, s, p, done, n, &job);

		/* an event recorded after the work answers for all its jobs */
		if (s && done == 0 && job)
			atomic_store(&s->op_first, job);
		if (last)
			*last = job;

		if (ret == -E2BIG && n > 4096) {
			atomic_compare_exchange_strong(piece_max, &max, n / 2);
			continue;
		}
		if (ret)
			return ret;
		done += n;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Streams */

accel_status_t drv_stream_create(struct accel_device *dev, void **stream)
{
	struct drm_simaccel_queue_create qc = { 0 };
	int fd = drv_of(dev)->fd;
	struct drv_stream *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return accel_oom_error("out of host memory");
	ret = drv_ioctl(fd, DRM_IOCTL_SIMACCEL_QUEUE_CREATE, &qc);
	if (!ret) {
		ret = syncobj_create(fd, &s->timeline);
		if (ret) {
			struct drm_simaccel_queue_destroy qd = {
				.handle = qc.handle,
			};

			drv_ioctl(fd, DRM_IOCTL_SIMACCEL_QUEUE_DESTROY, &qd);
		}
	}
	if (ret) {
		free(s);
		if (ret == -EMFILE)
			return accel_errno_error(EMFILE, "%s cannot create a queue: a process has at most %d per device, one of them the library's",
						 dev->name, DRM_SIMACCEL_MAX_QUEUES_PER_FILE);
		return accel_errno_error(-ret, "%s cannot create a queue",
					 dev->name);
	}
	s->queue = qc.handle;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->report_lock, NULL);
	*stream = s;
	return ACCEL_SUCCESS;
}

/* The core drains the stream first: none of its jobs is left. */
void drv_stream_destroy(struct accel_device *dev, void *stream)
{
	struct drv_stream *s = stream;
	struct drm_simaccel_queue_destroy qd = { .handle = s->queue };
	int fd = drv_of(dev)->fd;

	drv_stage_forget(dev, s);
	drv_ioctl(fd, DRM_IOCTL_SIMACCEL_QUEUE_DESTROY, &qd);
	syncobj_destroy(fd, s->timeline);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->report_lock);
	free(s);
}

void drv_stream_drain(struct accel_device *dev, void *stream)
{
	struct drv_stream *s = stream;

	drv_stream_wait(drv_of(dev)->fd, s, atomic_load(&s->last), -1);
}

static int queue_query(int fd, uint32_t queue,
		       struct drm_simaccel_queue_query *q,
		       struct drm_simaccel_failure *recent)
{
	*q = (struct drm_simaccel_queue_query){
		.handle = queue,
		.recent_count = recent ? DRM_SIMACCEL_QUEUE_FAILURES : 0,
		.recent = (uintptr_t)recent,
	};
	return drv_ioctl(fd, DRM_IOCTL_SIMACCEL_QUEUE_QUERY, q);
}

/* Report (and forget) the stream's jobs that failed since the last report. */
static accel_status_t report_failures(struct accel_device *dev, struct drv_stream *s)
{
	struct drm_simaccel_queue_query q;
	uint64_t failed;
	int ret;

	pthread_mutex_lock(&s->report_lock);
	ret = queue_query(drv_of(dev)->fd, s->queue, &q, NULL);
	failed = ret ? 0 : q.failed - s->failed_seen;
	if (!ret)
		s->failed_seen = q.failed;
	pthread_mutex_unlock(&s->report_lock);
	if (ret)
		return accel_errno_error(-ret, "%s cannot query a stream",
					 dev->name);
	if (!failed)
		return ACCEL_SUCCESS;
	return accel_fault_error("%llu operation(s) on a stream of %s failed, the last with: %s",
				 (unsigned long long)failed, dev->name,
				 strerror(q.error));
}

accel_status_t drv_stream_sync(struct accel_device *dev, void *stream)
{
	drv_stream_drain(dev, stream);
	return report_failures(dev, stream);
}

accel_status_t drv_stream_query(struct accel_device *dev, void *stream)
{
	struct drv_stream *s = stream;

	if (drv_stream_wait(drv_of(dev)->fd, s, atomic_load(&s->last), 0) ==
	    -EBUSY)
		return ACCEL_WARNING;
	return report_failures(dev, s);
}

/* ------------------------------------------------------------------ */
/* Events */

accel_status_t drv_event_create(struct accel_device *dev, void **event)
{
	struct drv_event *ev = calloc(1, sizeof(*ev));
	int ret;

	if (!ev)
		return accel_oom_error("out of host memory");
	ret = syncobj_create(drv_of(dev)->fd, &ev->syncobj);
	if (ret) {
		free(ev);
		return accel_errno_error(-ret, "%s cannot create an event",
					 dev->name);
	}
	pthread_mutex_init(&ev->lock, NULL);
	*event = ev;
	return ACCEL_SUCCESS;
}

void drv_event_destroy(struct accel_device *dev, void *event)
{
	struct drv_event *ev = event;

	syncobj_destroy(drv_of(dev)->fd, ev->syncobj);
	pthread_mutex_destroy(&ev->lock);
	free(ev);
}

accel_status_t drv_event_record(struct accel_device *dev, void *stream,
			  void *event)
{
	struct drv_stream *s = stream;
	struct drv_event *ev = event;
	uint64_t job = atomic_load(&s->last), first = atomic_load(&s->op_first);
	struct drm_syncobj_transfer t = {
		.src_handle = s->timeline, .src_point = job,
		.dst_handle = ev->syncobj,
	};
	int ret = 0;

	pthread_mutex_lock(&ev->lock);
	if (job)
		ret = drv_ioctl(drv_of(dev)->fd, DRM_IOCTL_SYNCOBJ_TRANSFER, &t);
	if (!ret) {
		ev->queue = s->queue;
		ev->job = job;
		ev->first = first && first <= job ? first : job;
	}
	pthread_mutex_unlock(&ev->lock);
	if (ret)
		return accel_errno_error(-ret, "%s cannot record an event",
					 dev->name);
	return ACCEL_SUCCESS;
}

/*
 * Whether a job @first to @last of @queue failed, as far as the queue
 * remembers (DRM_SIMACCEL_QUEUE_FAILURES failures back): its errno, or 0.
 * A queue that is gone (its stream destroyed) no longer tells.
 */
static int jobs_error(int fd, uint32_t queue, uint64_t first, uint64_t last)
{
	struct drm_simaccel_failure recent[DRM_SIMACCEL_QUEUE_FAILURES];
	struct drm_simaccel_queue_query q;

	if (queue_query(fd, queue, &q, recent))
		return 0;
	for (uint32_t i = 0; i < q.recent_count; i++)
		if (recent[i].seqno >= first && recent[i].seqno <= last)
			return recent[i].error;
	return 0;
}

static accel_status_t event_wait(struct accel_device *dev, struct drv_event *ev,
			   int64_t timeout_ns)
{
	int fd = drv_of(dev)->fd, ret = 0, error;
	uint64_t job, first;
	uint32_t queue;

	pthread_mutex_lock(&ev->lock);
	queue = ev->queue;
	job = ev->job;
	first = ev->first;
	pthread_mutex_unlock(&ev->lock);
	if (job)
		ret = wait_syncobj(fd, ev->syncobj, 0, timeout_ns);
	if (ret == -EBUSY)
		return ACCEL_WARNING;
	if (ret)
		return accel_errno_error(-ret, "%s cannot wait for an event",
					 dev->name);
	error = job ? jobs_error(fd, queue, first, job) : 0;
	if (error)
		return accel_fault_error("%s: the event's work failed: %s",
					 dev->name, strerror(error));
	return ACCEL_SUCCESS;
}

accel_status_t drv_event_query(struct accel_device *dev, void *event)
{
	return event_wait(dev, event, 0);
}

accel_status_t drv_event_sync(struct accel_device *dev, void *event)
{
	return event_wait(dev, event, -1);
}

/* A job of no operations that waits for the event's fence (a barrier). */
accel_status_t drv_stream_wait_event(struct accel_device *dev, void *stream,
			       void *event)
{
	struct drv_event *ev = event;
	struct drm_simaccel_sync in = { .handle = ev->syncobj };
	struct drm_simaccel_submit sub = {
		.in_syncs = (uintptr_t)&in, .in_sync_count = 1,
	};
	int fd = drv_of(dev)->fd, ret = 0;

	/* the record current now: a later one does not change the barrier */
	pthread_mutex_lock(&ev->lock);
	if (ev->job && wait_syncobj(fd, ev->syncobj, 0, 0) == -EBUSY)
		ret = submit_on_stream(fd, stream, &sub, NULL);
	pthread_mutex_unlock(&ev->lock);
	if (ret)
		return accel_errno_error(-ret, "%s cannot make a stream wait for an event",
					 dev->name);
	return ACCEL_SUCCESS;
}
