// SPDX-License-Identifier: MIT
/*
 * The accel backend: the accel.ko driver through /dev/accelN.
 *
 * Device memory is VRAM (its device address is the pointer), pinned host
 * memory is the driver's DMA memory mapped into the process, unified memory
 * is VRAM mapped through the BAR. A stream is a driver queue; an event is
 * the fence of the last work on a stream.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/internal.h"
#include "uapi/accel.h"

/* An async copy from pageable memory is staged in pinned memory up to this. */
#define STAGE_MAX (64u << 20)
#define STAGE_MIN (1u << 20)
/* Idle staging buffers kept for reuse, per device. */
#define STAGE_CACHE (128u << 20)
/* A stream checks its fences for errors every so many submissions. */
#define PENDING_REAP 256

struct stage_buf {
	void *va;
	uint64_t dev_addr;
	uint32_t handle;
	size_t cap;
	uint64_t fence;		/* the copy reading it */
	struct stage_buf *next;
};

/*
 * Every device's VRAM starts at the same device address; the pointers the
 * library hands out are moved apart by this much per device, so that a
 * pointer names its device (as CUDA's unified addressing does) and a
 * pointer of the wrong device is refused.
 */
#define DEVICE_VA_STRIDE (1ull << 40)

struct drv_dev {
	int fd;
	uint64_t va_offset;	/* pointer minus device address, for VRAM */
	struct accel_info info;
	pthread_mutex_t stage_lock;
	struct stage_buf *idle, *busy;
	size_t idle_bytes;
};

struct drv_stream {
	uint32_t queue;
	pthread_mutex_t lock;
	_Atomic uint64_t last_fence;	/* 0: nothing yet; written under lock */
	uint64_t *pending;	/* fences not yet checked for errors */
	size_t n_pending, cap_pending;
	unsigned int failed;	/* failed work not yet reported */
};

/* An event is the fence of the last work its record saw (0: complete). */
struct drv_event {
	_Atomic uint64_t fence;
};

static int fd_of(struct accel_device *dev)
{
	return ((struct drv_dev *)dev->priv)->fd;
}

/* ioctl, restarted after signals; -errno on failure */
static int xioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

/* 0 when the fence's work is over (or failed: -EIO), -EBUSY while it runs */
static int wait_fence(int fd, uint64_t fence, int64_t timeout_ns)
{
	struct accel_wait w = { .fence = fence, .timeout_ns = timeout_ns };
	int ret = xioctl(fd, ACCEL_IOCTL_WAIT, &w);

	/* the fence's queue is gone: its work finished before it went */
	return ret == -ENOENT ? 0 : ret;
}

static uint64_t side_addr(const struct accel_side *s, uint32_t user_flag,
			  uint32_t *flags)
{
	if (s->in_alloc)
		return s->alloc.dev_addr + s->offset;
	*flags |= user_flag;
	return (uintptr_t)s->ptr;
}

/* ------------------------------------------------------------------ */
/* Memory */

static C_Status no_memory(struct accel_device *dev, size_t size)
{
	struct accel_mem_stats st = { 0 };

	if (xioctl(fd_of(dev), ACCEL_IOCTL_MEM_STATS, &st))
		return accel_oom_error("out of memory on %s: %zu bytes requested",
				   dev->name, size);
	return accel_oom_error("out of memory on %s: %zu bytes requested, %llu of %llu free",
			   dev->name, size, (unsigned long long)st.vram_free,
			   (unsigned long long)st.vram_total);
}

/* Allocate and, for memory the host reaches, map. */
static C_Status drv_alloc_kind(struct accel_device *dev, uint32_t kind,
			       size_t size, struct accel_allocation *out)
{
	struct accel_alloc a = { .size = size, .kind = kind };
	struct accel_free f = { 0 };
	void *va;
	int ret;

	ret = xioctl(fd_of(dev), ACCEL_IOCTL_ALLOC, &a);
	if (ret == -ENOMEM && kind != ACCEL_MEM_HOST)
		return no_memory(dev, size);
	if (ret)
		return accel_errno_error(-ret, "%s cannot allocate %zu bytes",
					 dev->name, size);
	out->handle = a.handle;
	out->dev_addr = a.dev_addr;
	out->addr = a.dev_addr + ((struct drv_dev *)dev->priv)->va_offset;
	if (kind == ACCEL_MEM_DEVICE)
		return C_SUCCESS;
	va = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_of(dev),
		  (off_t)a.mmap_offset);
	if (va == MAP_FAILED) {
		int err = errno;

		f.handle = a.handle;
		xioctl(fd_of(dev), ACCEL_IOCTL_FREE, &f);
		return accel_errno_error(err, "%s cannot map %zu bytes",
					 dev->name, size);
	}
	out->addr = (uintptr_t)va;
	return C_SUCCESS;
}

static C_Status drv_alloc(struct accel_device *dev, enum accel_kind kind,
			  size_t size, struct accel_allocation *out)
{
	static const uint32_t kinds[] = {
		[ACCEL_KIND_DEVICE] = ACCEL_MEM_DEVICE,
		[ACCEL_KIND_HOST] = ACCEL_MEM_HOST,
		[ACCEL_KIND_UNIFIED] = ACCEL_MEM_HOST_VISIBLE,
	};

	/*
	 * Write-combined host memory: the device's host-visible VRAM, which
	 * the host reaches through BAR2's write-combined mapping (it counts
	 * against device memory); the device reaches it directly.
	 */
	if (kind == ACCEL_KIND_HOST && out->write_combined)
		return drv_alloc_kind(dev, ACCEL_MEM_HOST_VISIBLE, size, out);
	return drv_alloc_kind(dev, kinds[kind], size, out);
}

static C_Status drv_free_handle(struct accel_device *dev, uint32_t handle)
{
	struct accel_free f = { .handle = handle };
	int ret = xioctl(fd_of(dev), ACCEL_IOCTL_FREE, &f);

	if (ret)
		return accel_errno_error(-ret, "%s cannot free handle %u",
					 dev->name, handle);
	return C_SUCCESS;
}

static C_Status drv_free(struct accel_device *dev, const struct accel_allocation *a)
{
	if (a->kind != ACCEL_KIND_DEVICE)
		munmap((void *)a->addr, a->size);
	return drv_free_handle(dev, (uint32_t)a->handle);
}

/* The driver pins the pages and maps them for the device's DMA. */
static C_Status drv_host_register(struct accel_device *dev, void *ptr,
				  size_t size, struct accel_allocation *out)
{
	struct accel_userptr u = { .user_addr = (uintptr_t)ptr, .size = size };
	int ret = xioctl(fd_of(dev), ACCEL_IOCTL_USERPTR, &u);

	if (ret)
		return accel_errno_error(-ret, "%s cannot pin %zu bytes at %p",
					 dev->name, size, ptr);
	out->handle = u.handle;
	out->dev_addr = u.dev_addr;
	return C_SUCCESS;
}

static C_Status drv_host_unregister(struct accel_device *dev,
				    const struct accel_allocation *a)
{
	return drv_free_handle(dev, (uint32_t)a->handle);
}

static C_Status drv_stats(struct accel_device *dev, size_t *total,
			  size_t *free)
{
	struct accel_mem_stats st = { 0 };
	int ret = xioctl(fd_of(dev), ACCEL_IOCTL_MEM_STATS, &st);

	if (ret)
		return accel_errno_error(-ret, "%s cannot read its memory stats",
					 dev->name);
	*total = st.vram_total;
	*free = st.vram_free;
	return C_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Staging buffers for async copies from pageable memory */

/* Move buffers whose copy is over to the idle list. Caller holds stage_lock. */
static void stage_reap(struct accel_device *dev, struct drv_dev *dd)
{
	struct stage_buf **pp = &dd->busy;

	while (*pp) {
		struct stage_buf *b = *pp;

		if (wait_fence(dd->fd, b->fence, 0) == -EBUSY) {
			pp = &b->next;
			continue;
		}
		*pp = b->next;
		if (dd->idle_bytes + b->cap > STAGE_CACHE) {
			munmap(b->va, b->cap);
			drv_free_handle(dev, b->handle);
			free(b);
			continue;
		}
		b->next = dd->idle;
		dd->idle = b;
		dd->idle_bytes += b->cap;
	}
}

static struct stage_buf *stage_get(struct accel_device *dev, size_t size)
{
	struct drv_dev *dd = dev->priv;
	struct stage_buf **pp, **best = NULL, *b;
	struct accel_allocation a;
	size_t cap = STAGE_MIN;

	pthread_mutex_lock(&dd->stage_lock);
	stage_reap(dev, dd);
	for (pp = &dd->idle; *pp; pp = &(*pp)->next)
		if ((*pp)->cap >= size && (!best || (*pp)->cap < (*best)->cap))
			best = pp;
	if (best) {
		b = *best;
		*best = b->next;
		dd->idle_bytes -= b->cap;
		pthread_mutex_unlock(&dd->stage_lock);
		return b;
	}
	pthread_mutex_unlock(&dd->stage_lock);

	while (cap < size)
		cap *= 2;
	b = calloc(1, sizeof(*b));
	if (!b) {
		accel_oom_error("out of host memory");
		return NULL;
	}
	if (drv_alloc_kind(dev, ACCEL_MEM_HOST, cap, &a) != C_SUCCESS) {
		free(b);
		return NULL;
	}
	b->va = (void *)a.addr;
	b->dev_addr = a.dev_addr;
	b->handle = (uint32_t)a.handle;
	b->cap = cap;
	return b;
}

/* @b is read by the work of @fence, or by nothing if @fence is 0. */
static void stage_put(struct accel_device *dev, struct stage_buf *b,
		      uint64_t fence)
{
	struct drv_dev *dd = dev->priv;

	pthread_mutex_lock(&dd->stage_lock);
	if (fence) {
		b->fence = fence;
		b->next = dd->busy;
		dd->busy = b;
	} else {
		b->next = dd->idle;
		dd->idle = b;
		dd->idle_bytes += b->cap;
	}
	pthread_mutex_unlock(&dd->stage_lock);
}

/* ------------------------------------------------------------------ */
/* Submission */

/* Check the oldest fences for failures. Caller holds s->lock. */
static void reap_pending(int fd, struct drv_stream *s)
{
	size_t i;

	for (i = 0; i < s->n_pending; i++) {
		int ret = wait_fence(fd, s->pending[i], 0);

		if (ret == -EBUSY)
			break;
		if (ret)
			s->failed++;
	}
	memmove(s->pending, s->pending + i, (s->n_pending - i) * sizeof(*s->pending));
	s->n_pending -= i;
}

static C_Status track_fence(int fd, struct drv_stream *s, uint64_t fence)
{
	if (s->n_pending >= PENDING_REAP)
		reap_pending(fd, s);
	if (s->n_pending == s->cap_pending) {
		size_t cap = s->cap_pending ? s->cap_pending * 2 : 64;
		uint64_t *p = realloc(s->pending, cap * sizeof(*p));

		if (!p)
			return accel_oom_error("out of host memory");
		s->pending = p;
		s->cap_pending = cap;
	}
	s->pending[s->n_pending++] = fence;
	atomic_store(&s->last_fence, fence);
	return C_SUCCESS;
}

static C_Status submit(struct accel_device *dev, struct drv_stream *s,
		       struct accel_submit *sub)
{
	int ret;

	sub->queue = s->queue;
	pthread_mutex_lock(&s->lock);
	ret = xioctl(fd_of(dev), ACCEL_IOCTL_SUBMIT, sub);
	if (!ret && track_fence(fd_of(dev), s, sub->fence) != C_SUCCESS) {
		pthread_mutex_unlock(&s->lock);
		wait_fence(fd_of(dev), sub->fence, -1);
		return C_FAILED;
	}
	pthread_mutex_unlock(&s->lock);
	if (ret)
		return accel_errno_error(-ret, "%s cannot queue the work",
					 dev->name);
	return C_SUCCESS;
}

static C_Status run_sync(struct accel_device *dev, struct accel_copy *c)
{
	int ret = xioctl(fd_of(dev), ACCEL_IOCTL_COPY, c);

	if (ret)
		return accel_errno_error(-ret, "%s: the copy of %llu bytes failed",
					 dev->name, (unsigned long long)c->size);
	return C_SUCCESS;
}

/* Stage a pageable source so that the caller may reuse it at once. */
static C_Status copy_staged(struct accel_device *dev, struct drv_stream *s,
			    struct accel_submit *sub, const void *src)
{
	struct stage_buf *b = stage_get(dev, sub->size);

	if (!b)
		return C_FAILED;
	memcpy(b->va, src, sub->size);
	sub->src = b->dev_addr;
	sub->flags &= ~(uint32_t)ACCEL_COPY_SRC_USER;
	if (submit(dev, s, sub) != C_SUCCESS) {
		stage_put(dev, b, 0);
		return C_FAILED;
	}
	stage_put(dev, b, sub->fence);
	return C_SUCCESS;
}

/* @s's device address @done bytes in, or the staging buffer's */
static uint64_t piece_addr(const struct accel_side *s, size_t done,
			   const struct stage_buf *b, uint32_t user_flag,
			   uint32_t *flags)
{
	if (s->other_device)
		return b->dev_addr;
	if (s->in_alloc)
		return s->alloc.dev_addr + s->offset + done;
	*flags |= user_flag;
	return (uintptr_t)s->ptr + done;
}

/* One piece of a bounced copy, through @b; *@fence: its work, if queued */
static C_Status bounce_piece(struct accel_device *dev, struct drv_stream *s,
			     const struct accel_side *dst,
			     const struct accel_side *src,
			     const struct stage_buf *b, size_t done,
			     size_t n, uint64_t *fence)
{
	struct accel_submit sub = { .op = ACCEL_SUBMIT_COPY, .size = n };
	struct accel_copy c = { .size = n };

	if (!s) {
		c.dst = piece_addr(dst, done, b, ACCEL_COPY_DST_USER, &c.flags);
		c.src = piece_addr(src, done, b, ACCEL_COPY_SRC_USER, &c.flags);
		return run_sync(dev, &c);
	}
	sub.dst = piece_addr(dst, done, b, ACCEL_COPY_DST_USER, &sub.flags);
	sub.src = piece_addr(src, done, b, ACCEL_COPY_SRC_USER, &sub.flags);
	if (submit(dev, s, &sub) != C_SUCCESS)
		return C_FAILED;
	*fence = sub.fence;
	if (dst->other_device && wait_fence(fd_of(dev), sub.fence, -1))
		return accel_fault_error("%s: the copy of %zu bytes failed",
					 dev->name, n);
	return C_SUCCESS;
}

/*
 * Host memory another device allocated is a mapping of that device, whose
 * pages this one cannot pin: the copy goes through a staging buffer, piece
 * by piece. A source is read at the call; a destination is written before
 * the call returns, which then waits for the copy (as CUDA's copies to
 * pageable memory do).
 */
static C_Status copy_bounced(struct accel_device *dev, struct drv_stream *s,
			     const struct accel_side *dst,
			     const struct accel_side *src, size_t size)
{
	for (size_t done = 0; done < size;) {
		size_t n = size - done < STAGE_MAX ? size - done : STAGE_MAX;
		struct stage_buf *b = stage_get(dev, n);
		uint64_t fence = 0;
		C_Status ret;

		if (!b)
			return C_FAILED;
		if (src->other_device)
			memcpy(b->va, (const char *)src->ptr + done, n);
		ret = bounce_piece(dev, s, dst, src, b, done, n, &fence);
		if (ret == C_SUCCESS && dst->other_device)
			memcpy((char *)dst->ptr + done, b->va, n);
		/* a queued read of the buffer keeps it until it ran */
		stage_put(dev, b, ret == C_SUCCESS && !dst->other_device ?
			  fence : 0);
		if (ret != C_SUCCESS)
			return ret;
		done += n;
	}
	return C_SUCCESS;
}

static C_Status drv_copy(struct accel_device *dev, void *stream,
			 const struct accel_side *dst,
			 const struct accel_side *src, size_t size)
{
	struct accel_submit sub = { .op = ACCEL_SUBMIT_COPY, .size = size };
	struct accel_copy c = { .size = size };
	struct drv_stream *s = stream;

	if (dst->other_device || src->other_device)
		return copy_bounced(dev, s, dst, src, size);
	if (!s) {
		c.dst = side_addr(dst, ACCEL_COPY_DST_USER, &c.flags);
		c.src = side_addr(src, ACCEL_COPY_SRC_USER, &c.flags);
		return run_sync(dev, &c);
	}
	sub.dst = side_addr(dst, ACCEL_COPY_DST_USER, &sub.flags);
	sub.src = side_addr(src, ACCEL_COPY_SRC_USER, &sub.flags);
	if (src->in_alloc)
		return submit(dev, s, &sub);
	if (size <= STAGE_MAX)
		return copy_staged(dev, s, &sub, src->ptr);
	/* too large to stage: the driver pins it; return once it is read */
	if (submit(dev, s, &sub) != C_SUCCESS)
		return C_FAILED;
	if (wait_fence(fd_of(dev), sub.fence, -1))
		return accel_fault_error("%s: the copy of %zu bytes failed", dev->name,
				   size);
	return C_SUCCESS;
}

static C_Status drv_set(struct accel_device *dev, void *stream,
			const struct accel_side *dst, uint8_t value,
			size_t size)
{
	struct accel_memset m = { .size = size, .value = value };
	struct accel_submit sub = { .op = ACCEL_SUBMIT_MEMSET, .size = size,
				    .value = value };
	uint32_t unused = 0;
	int ret;

	if (stream) {
		sub.dst = side_addr(dst, 0, &unused);
		return submit(dev, stream, &sub);
	}
	m.dst = side_addr(dst, 0, &unused);
	ret = xioctl(fd_of(dev), ACCEL_IOCTL_MEMSET, &m);
	if (ret)
		return accel_errno_error(-ret, "%s: setting %zu bytes failed",
					 dev->name, size);
	return C_SUCCESS;
}

/* The engine of @run writes to or reads from the other device's VRAM. */
static C_Status drv_copy_peer(struct accel_device *run, void *stream,
			      struct accel_device *dst_dev,
			      const struct accel_side *dst,
			      struct accel_device *src_dev,
			      const struct accel_side *src, size_t size)
{
	struct accel_submit sub = { .op = ACCEL_SUBMIT_COPY, .size = size };
	bool to_peer = run == src_dev;

	sub.dst = dst->alloc.dev_addr + dst->offset;
	sub.src = src->alloc.dev_addr + src->offset;
	sub.flags = to_peer ? ACCEL_COPY_DST_PEER : ACCEL_COPY_SRC_PEER;
	sub.peer_fd = fd_of(to_peer ? dst_dev : src_dev);
	if (stream)
		return submit(run, stream, &sub);
	return run_sync(run, &(struct accel_copy){
		.dst = sub.dst, .src = sub.src, .size = size,
		.flags = sub.flags, .peer_fd = sub.peer_fd,
	});
}

/* ------------------------------------------------------------------ */
/* Streams and events */

static C_Status drv_stream_create(struct accel_device *dev, void **stream)
{
	struct accel_queue_create qc = { 0 };
	struct drv_stream *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return accel_oom_error("out of host memory");
	ret = xioctl(fd_of(dev), ACCEL_IOCTL_QUEUE_CREATE, &qc);
	if (ret) {
		free(s);
		return accel_errno_error(-ret, "%s cannot create a queue",
					 dev->name);
	}
	s->queue = qc.handle;
	pthread_mutex_init(&s->lock, NULL);
	*stream = s;
	return C_SUCCESS;
}

static void drv_stream_destroy(struct accel_device *dev, void *stream)
{
	struct drv_stream *s = stream;
	struct accel_queue_destroy qd = { .handle = s->queue };

	xioctl(fd_of(dev), ACCEL_IOCTL_QUEUE_DESTROY, &qd);
	pthread_mutex_destroy(&s->lock);
	free(s->pending);
	free(s);
}

static uint64_t last_fence(struct drv_stream *s)
{
	return atomic_load(&s->last_fence);
}

static void drv_stream_drain(struct accel_device *dev, void *stream)
{
	uint64_t f = last_fence(stream);

	if (f)
		wait_fence(fd_of(dev), f, -1);
}

/* Report (and forget) the work that failed. Caller holds s->lock. */
static C_Status report_failures(struct accel_device *dev, struct drv_stream *s)
{
	unsigned int failed = s->failed;

	s->failed = 0;
	if (!failed)
		return C_SUCCESS;
	return accel_fault_error("%u operation(s) on a stream of %s failed: the device reported an error or stopped making progress",
			   failed, dev->name);
}

static C_Status drv_stream_sync(struct accel_device *dev, void *stream)
{
	struct drv_stream *s = stream;
	C_Status ret;

	drv_stream_drain(dev, s);
	pthread_mutex_lock(&s->lock);
	reap_pending(fd_of(dev), s);
	ret = report_failures(dev, s);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static C_Status drv_stream_query(struct accel_device *dev, void *stream)
{
	struct drv_stream *s = stream;
	uint64_t f = last_fence(s);

	if (f && wait_fence(fd_of(dev), f, 0) == -EBUSY)
		return C_WARNING;
	return drv_stream_sync(dev, s);
}

static C_Status drv_event_create(struct accel_device *dev, void **event)
{
	struct drv_event *ev = calloc(1, sizeof(*ev));

	(void)dev;
	if (!ev)
		return accel_oom_error("out of host memory");
	*event = ev;
	return C_SUCCESS;
}

static void drv_event_destroy(struct accel_device *dev, void *event)
{
	(void)dev;
	free(event);
}

static C_Status drv_event_record(struct accel_device *dev, void *stream,
				 void *event)
{
	struct drv_event *ev = event;

	(void)dev;
	atomic_store(&ev->fence, last_fence(stream));
	return C_SUCCESS;
}

static uint64_t event_fence(struct drv_event *ev)
{
	return atomic_load(&ev->fence);
}

static C_Status event_wait(struct accel_device *dev, void *event,
			   int64_t timeout_ns)
{
	uint64_t f = event_fence(event);
	int ret = f ? wait_fence(fd_of(dev), f, timeout_ns) : 0;

	if (ret == -EBUSY)
		return C_WARNING;
	if (ret)
		return accel_errno_error(-ret, "%s: the event's work failed",
					 dev->name);
	return C_SUCCESS;
}

static C_Status drv_event_query(struct accel_device *dev, void *event)
{
	return event_wait(dev, event, 0);
}

static C_Status drv_event_sync(struct accel_device *dev, void *event)
{
	return event_wait(dev, event, -1);
}

static C_Status drv_stream_wait_event(struct accel_device *dev, void *stream,
				      void *event)
{
	struct accel_submit sub = { .op = ACCEL_SUBMIT_BARRIER };

	sub.wait_fence = event_fence(event);
	if (!sub.wait_fence || wait_fence(fd_of(dev), sub.wait_fence, 0) != -EBUSY)
		return C_SUCCESS;
	return submit(dev, stream, &sub);
}

/* ------------------------------------------------------------------ */
/* Probe */

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* The N of every /dev/accelN, sorted; returns how many. */
static int list_nodes(int *nodes, int max)
{
	DIR *d = opendir("/dev");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		char *end;
		long v;

		if (strncmp(e->d_name, "accel", 5) || !e->d_name[5])
			continue;
		v = strtol(e->d_name + 5, &end, 10);
		if (!*end && v >= 0 && v < 1 << 20)
			nodes[n++] = (int)v;
	}
	closedir(d);
	qsort(nodes, (size_t)n, sizeof(*nodes), cmp_int);
	return n;
}

static C_Status open_node(int node, int index, char *why, size_t why_len)
{
	struct drv_dev *dd;
	char path[32];
	int fd, ret;

	snprintf(path, sizeof(path), "/dev/accel%d", node);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, why_len, "cannot open %s: %s%s", path,
			 strerror(errno),
			 errno == EACCES ? " (is the user in the device's group?)" : "");
		return C_FAILED;
	}
	dd = calloc(1, sizeof(*dd));
	if (!dd) {
		close(fd);
		snprintf(why, why_len, "out of host memory");
		return C_FAILED;
	}
	dd->fd = fd;
	dd->va_offset = (uint64_t)index * DEVICE_VA_STRIDE;
	ret = xioctl(fd, ACCEL_IOCTL_GET_INFO, &dd->info);
	if (ret || !accel_device_add(&accel_backend_driver, index, dd,
				     ACCEL_ALLOC_MIN_ALIGN)) {
		snprintf(why, why_len, "%s: %s", path,
			 ret ? strerror(-ret) : "too many devices");
		close(fd);
		free(dd);
		return C_FAILED;
	}
	pthread_mutex_init(&dd->stage_lock, NULL);
	return C_SUCCESS;
}

static C_Status drv_probe(char *why, size_t why_len)
{
	int nodes[ACCEL_MAX_DEVICES];
	int n = list_nodes(nodes, ACCEL_MAX_DEVICES), found = 0;

	if (!n) {
		snprintf(why, why_len, "no /dev/accelN device: accel.ko is not loaded, or found no device");
		return C_FAILED;
	}
	for (int i = 0; i < n; i++)
		if (open_node(nodes[i], found, why, why_len) == C_SUCCESS)
			found++;
	return found ? C_SUCCESS : C_FAILED;
}

const struct accel_backend accel_backend_driver = {
	.name = "accel",
	.probe = drv_probe,
	.alloc = drv_alloc,
	.free = drv_free,
	.host_register = drv_host_register,
	.host_unregister = drv_host_unregister,
	.copy = drv_copy,
	.set = drv_set,
	.copy_peer = drv_copy_peer,
	.stats = drv_stats,
	.stream_create = drv_stream_create,
	.stream_destroy = drv_stream_destroy,
	.stream_query = drv_stream_query,
	.stream_sync = drv_stream_sync,
	.stream_drain = drv_stream_drain,
	.event_create = drv_event_create,
	.event_destroy = drv_event_destroy,
	.event_record = drv_event_record,
	.event_query = drv_event_query,
	.event_sync = drv_event_sync,
	.stream_wait_event = drv_stream_wait_event,
};
