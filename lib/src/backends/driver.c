// SPDX-License-Identifier: MIT
/*
 * The accel backend: simaccel.ko, the DRM accel driver, through
 * /dev/accel/accelN.
 *
 * Device memory is a VRAM buffer (its device address is the pointer),
 * pinned host memory a HOST buffer mapped into the process, unified memory
 * a VRAM buffer mapped through the BAR. Copies and fills are jobs:
 * synchronous ones on a queue of the device's own, waited for in the
 * submission; a stream's on its queue (driver_stream.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backends/driver.h"

/* An async copy from pageable memory is staged in pinned memory up to this. */
#define STAGE_MAX (64u << 20)
#define STAGE_MIN (64u << 10)
/* Idle staging buffers kept for reuse, per device. */
#define STAGE_CACHE (128u << 20)
/*
 * Staging buffers that queued copies still read, per device: past this, a
 * new one waits for the oldest copy, so that queued small copies cannot
 * pin memory without bound (a stream holds up to 256 jobs).
 */
#define STAGE_BUSY_MAX (128u << 20)
/*
 * The first size of a job's piece: 4096 pages of scattered system memory
 * on both sides, misaligned, stay below DRM_SIMACCEL_MAX_DESCS.
 */
#define PIECE_MAX (16u << 20)
/*
 * The first size of a piece of buffers alone: 64 descriptors within VRAM.
 * Larger pieces cost fewer submissions (and a synchronous copy's pieces
 * run one after the other); smaller ones let other queues' jobs in sooner.
 */
#define BO_PIECE_MAX (256u << 20)

/*
 * Every device's VRAM starts at the same device address; the pointers the
 * library hands out are moved apart by this much per device, so that a
 * pointer names its device (as CUDA's unified addressing does) and a
 * pointer of the wrong device is refused.
 */
#define DEVICE_VA_STRIDE (1ull << 40)

struct stage_buf {
	void *va;
	uint64_t dev_addr;
	uint32_t handle;
	size_t cap;
	struct drv_stream *stream;	/* the copy reading it: its stream */
	uint64_t job;			/* and job */
	struct stage_buf *next;
};

static int fd_of(struct accel_device *dev)
{
	return drv_of(dev)->fd;
}

/* ioctl, restarted after signals; -errno on failure */
int drv_ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
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

int drv_gem_close(int fd, uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	return drv_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);
}

/* The device's memory; with @settle, once freed buffers let theirs go. */
static int mem_info(struct drv_dev *dd, bool settle,
		    struct drm_simaccel_mem_info *m)
{
	*m = (struct drm_simaccel_mem_info){
		.flags = settle ? DRM_SIMACCEL_MEM_INFO_SETTLE : 0,
	};
	return drv_ioctl(dd->fd, DRM_IOCTL_SIMACCEL_MEM_INFO, m);
}

static accel_status_t no_memory(struct accel_device *dev, size_t size)
{
	struct drm_simaccel_mem_info m;

	if (mem_info(drv_of(dev), false, &m) || m.vram_used > m.vram_total)
		return accel_oom_error("out of memory on %s: %zu bytes requested",
				       dev->name, size);
	return accel_oom_error("out of memory on %s: %zu bytes requested, %llu of %llu free",
			       dev->name, size,
			       (unsigned long long)(m.vram_total - m.vram_used),
			       (unsigned long long)m.vram_total);
}

/* Allocate and, for memory the host reaches, map. */
static accel_status_t drv_alloc_kind(struct accel_device *dev, uint32_t kind,
			       size_t size, struct accel_allocation *out)
{
	struct drm_simaccel_bo_create c = { .size = size, .kind = kind };
	void *va;
	int ret;

	if (kind != DRM_SIMACCEL_BO_HOST && size > drv_of(dev)->info.vram_size)
		return no_memory(dev, size);
	ret = drv_ioctl(fd_of(dev), DRM_IOCTL_SIMACCEL_BO_CREATE, &c);
	if (ret == -ENOSPC)
		return no_memory(dev, size);
	/* the arguments are checked: only the size can be refused */
	if (kind == DRM_SIMACCEL_BO_HOST && (ret == -EINVAL || ret == -ENOMEM))
		return accel_oom_error("out of host memory on %s: %zu bytes of pinned memory requested",
				       dev->name, size);
	if (ret)
		return accel_errno_error(-ret, "%s cannot allocate %zu bytes",
					 dev->name, size);
	out->handle = c.handle;
	out->dev_addr = c.dev_addr;
	out->addr = c.dev_addr + drv_of(dev)->va_offset;
	if (kind == DRM_SIMACCEL_BO_VRAM)
		return ACCEL_SUCCESS;
	va = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_of(dev),
		  (off_t)c.mmap_offset);
	if (va == MAP_FAILED) {
		int err = errno;

		drv_gem_close(fd_of(dev), c.handle);
		return accel_errno_error(err, "%s cannot map %zu bytes",
					 dev->name, size);
	}
	out->addr = (uintptr_t)va;
	return ACCEL_SUCCESS;
}

static accel_status_t drv_alloc(struct accel_device *dev, enum accel_kind kind,
			  size_t size, struct accel_allocation *out)
{
	static const uint32_t kinds[] = {
		[ACCEL_KIND_DEVICE] = DRM_SIMACCEL_BO_VRAM,
		[ACCEL_KIND_HOST] = DRM_SIMACCEL_BO_HOST,
		[ACCEL_KIND_UNIFIED] = DRM_SIMACCEL_BO_VRAM_MAPPABLE,
	};

	/*
	 * Write-combined host memory: the device's mappable VRAM, which the
	 * host reaches through BAR2's write-combined mapping (it counts
	 * against device memory); the device reaches it directly.
	 */
	if (kind == ACCEL_KIND_HOST && out->write_combined)
		return drv_alloc_kind(dev, DRM_SIMACCEL_BO_VRAM_MAPPABLE, size,
				      out);
	return drv_alloc_kind(dev, kinds[kind], size, out);
}

static accel_status_t drv_free_handle(struct accel_device *dev, uint32_t handle)
{
	int ret = drv_gem_close(fd_of(dev), handle);

	if (ret)
		return accel_errno_error(-ret, "%s cannot free handle %u",
					 dev->name, handle);
	return ACCEL_SUCCESS;
}

/* Jobs that still use the buffer keep it until they are over. */
static accel_status_t drv_free(struct accel_device *dev, const struct accel_allocation *a)
{
	if (a->ipc)
		return drv_ipc_close(dev, a);
	drv_ipc_forget(dev, (uint32_t)a->handle);
	if (a->kind != ACCEL_KIND_DEVICE)
		munmap((void *)a->addr, a->size);
	return drv_free_handle(dev, (uint32_t)a->handle);
}

/* The driver pins the pages and maps them for the device's DMA. */
static accel_status_t drv_host_register(struct accel_device *dev, void *ptr,
				  size_t size, struct accel_allocation *out)
{
	struct drm_simaccel_bo_userptr u = {
		.user_addr = (uintptr_t)ptr, .size = size,
	};
	int ret = drv_ioctl(fd_of(dev), DRM_IOCTL_SIMACCEL_BO_USERPTR, &u);

	if (ret)
		return accel_errno_error(-ret, "%s cannot pin %zu bytes at %p%s",
					 dev->name, size, ptr, ret == -ENOMEM ?
					 " (RLIMIT_MEMLOCK?)" : "");
	out->handle = u.handle;
	out->dev_addr = u.dev_addr;
	return ACCEL_SUCCESS;
}

static accel_status_t drv_host_unregister(struct accel_device *dev,
				    const struct accel_allocation *a)
{
	return drv_free_handle(dev, (uint32_t)a->handle);
}

/* What the device has free once the buffers freed so far let theirs go */
static accel_status_t drv_stats(struct accel_device *dev, size_t *total,
			  size_t *free)
{
	struct drm_simaccel_mem_info m;
	int ret = mem_info(drv_of(dev), true, &m);

	if (ret)
		return accel_errno_error(-ret, "%s cannot read its memory use",
					 dev->name);
	*total = m.vram_total;
	*free = m.vram_used < m.vram_total ? m.vram_total - m.vram_used : 0;
	return ACCEL_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Staging buffers for async copies from pageable memory */

static void stage_free(struct accel_device *dev, struct stage_buf *b)
{
	munmap(b->va, b->cap);
	drv_free_handle(dev, b->handle);
	free(b);
}

/* Keep @b for reuse, or free it. Caller holds stage_lock. */
static void stage_idle(struct accel_device *dev, struct drv_dev *dd,
		       struct stage_buf *b)
{
	if (dd->idle_bytes + b->cap > STAGE_CACHE) {
		stage_free(dev, b);
		return;
	}
	b->next = dd->idle;
	dd->idle = b;
	dd->idle_bytes += b->cap;
}

/*
 * Move the busy buffers that @done says are over to the idle list. Caller
 * holds stage_lock.
 */
static void stage_reap(struct accel_device *dev, struct drv_dev *dd,
		       bool (*done)(struct drv_dev *, struct stage_buf *,
				    const void *),
		       const void *arg)
{
	struct stage_buf **pp = &dd->busy;

	while (*pp) {
		struct stage_buf *b = *pp;

		if (!done(dd, b, arg)) {
			pp = &b->next;
			continue;
		}
		*pp = b->next;
		dd->busy_bytes -= b->cap;
		stage_idle(dev, dd, b);
	}
}

static bool stage_read(struct drv_dev *dd, struct stage_buf *b,
		       const void *unused)
{
	(void)unused;
	return drv_stream_wait(dd->fd, b->stream, b->job, 0) != -EBUSY;
}

static bool stage_of_stream(struct drv_dev *dd, struct stage_buf *b,
			    const void *stream)
{
	(void)dd;
	return b->stream == stream;
}

/* @s is idle and going away: the buffers its jobs read are free. */
void drv_stage_forget(struct accel_device *dev, struct drv_stream *s)
{
	struct drv_dev *dd = drv_of(dev);

	pthread_mutex_lock(&dd->stage_lock);
	stage_reap(dev, dd, stage_of_stream, s);
	pthread_mutex_unlock(&dd->stage_lock);
}

/*
 * Wait for the oldest copy that reads a staging buffer. Caller holds
 * stage_lock, which is let go meanwhile: the buffer may be reaped, and its
 * stream destroyed (then the wait ends at once), by other threads.
 */
static void stage_wait_oldest(struct drv_dev *dd)
{
	struct stage_buf *b = dd->busy;
	uint32_t timeline;
	uint64_t job;

	while (b->next)
		b = b->next;
	job = b->job;
	timeline = b->stream->timeline;
	pthread_mutex_unlock(&dd->stage_lock);
	drv_wait_point(dd->fd, timeline, job, -1);
	pthread_mutex_lock(&dd->stage_lock);
}

static struct stage_buf *stage_get(struct accel_device *dev, size_t size)
{
	struct drv_dev *dd = drv_of(dev);
	struct stage_buf **pp, **best = NULL, *b;
	struct accel_allocation a = { 0 };
	size_t cap = STAGE_MIN;

	while (cap < size)
		cap *= 2;
	pthread_mutex_lock(&dd->stage_lock);
	stage_reap(dev, dd, stage_read, NULL);
	while (dd->busy && dd->busy_bytes + cap > STAGE_BUSY_MAX) {
		stage_wait_oldest(dd);
		stage_reap(dev, dd, stage_read, NULL);
	}
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

	b = calloc(1, sizeof(*b));
	if (!b) {
		accel_oom_error("out of host memory");
		return NULL;
	}
	if (drv_alloc_kind(dev, DRM_SIMACCEL_BO_HOST, cap, &a) != ACCEL_SUCCESS) {
		free(b);
		return NULL;
	}
	b->va = (void *)a.addr;
	b->dev_addr = a.dev_addr;
	b->handle = (uint32_t)a.handle;
	b->cap = cap;
	return b;
}

/* @b is read by job @job of @s, or by nothing if @job is 0. */
static void stage_put(struct accel_device *dev, struct stage_buf *b,
		      struct drv_stream *s, uint64_t job)
{
	struct drv_dev *dd = drv_of(dev);

	pthread_mutex_lock(&dd->stage_lock);
	if (job) {
		b->stream = s;
		b->job = job;
		b->next = dd->busy;
		dd->busy = b;
		dd->busy_bytes += b->cap;
	} else {
		stage_idle(dev, dd, b);
	}
	pthread_mutex_unlock(&dd->stage_lock);
}

/* ------------------------------------------------------------------ */
/* Copies and fills */

/* Run @p on @s (NULL: synchronously); *@job: its last job on @s */
static accel_status_t run_work(struct accel_device *dev, struct drv_stream *s,
		    const struct drv_piece *p, uint64_t *job)
{
	int ret = drv_run(dev, s, p, job);

	if (ret)
		return accel_errno_error(-ret, "%s: the work on %llu bytes failed",
					 dev->name, (unsigned long long)p->size);
	return ACCEL_SUCCESS;
}

/* Run @p on @s and wait until it is over */
static accel_status_t run_and_wait(struct accel_device *dev, struct drv_stream *s,
			     const struct drv_piece *p)
{
	uint64_t job = 0;
	accel_status_t ret = run_work(dev, s, p, &job);

	/* after a failure too: pieces queued before it still read */
	if (s && job)
		drv_stream_wait(fd_of(dev), s, job, -1);
	return ret;
}

/* Stage a pageable source so that the caller may reuse it at once. */
static accel_status_t copy_staged(struct accel_device *dev, struct drv_stream *s,
			    struct drv_piece *p, const void *src)
{
	struct stage_buf *b = stage_get(dev, p->size);
	uint64_t job = 0;

	if (!b)
		return ACCEL_FAILED;
	memcpy(b->va, src, p->size);
	p->src = b->dev_addr;
	p->flags &= ~(uint32_t)DRM_SIMACCEL_OP_SRC_USER;
	if (run_work(dev, s, p, &job) != ACCEL_SUCCESS) {
		/* the pieces queued before the failure may still read it */
		if (job)
			drv_stream_wait(fd_of(dev), s, job, -1);
		stage_put(dev, b, NULL, 0);
		return ACCEL_FAILED;
	}
	stage_put(dev, b, s, job);
	return ACCEL_SUCCESS;
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

/*
 * Host memory another device allocated is a mapping of that device, whose
 * pages this one cannot pin: the copy goes through a staging buffer, piece
 * by piece. A source is read at the call; a destination is written before
 * the call returns, which then waits for the copy (as CUDA's copies to
 * pageable memory do).
 */
static accel_status_t copy_bounced(struct accel_device *dev, struct drv_stream *s,
			     const struct accel_side *dst,
			     const struct accel_side *src, size_t size)
{
	for (size_t done = 0; done < size;) {
		size_t n = size - done < STAGE_MAX ? size - done : STAGE_MAX;
		struct stage_buf *b = stage_get(dev, n);
		struct drv_piece p = { .op = DRM_SIMACCEL_OP_COPY, .size = n };
		uint64_t job = 0;
		accel_status_t ret;

		if (!b)
			return ACCEL_FAILED;
		if (src->other_device)
			memcpy(b->va, (const char *)src->ptr + done, n);
		p.dst = piece_addr(dst, done, b, DRM_SIMACCEL_OP_DST_USER,
				   &p.flags);
		p.src = piece_addr(src, done, b, DRM_SIMACCEL_OP_SRC_USER,
				   &p.flags);
		ret = run_work(dev, s, &p, &job);
		if (s && job && (dst->other_device || ret != ACCEL_SUCCESS))
			drv_stream_wait(fd_of(dev), s, job, -1);
		if (ret == ACCEL_SUCCESS && dst->other_device)
			memcpy((char *)dst->ptr + done, b->va, n);
		/* a queued read of the buffer keeps it until it ran */
		stage_put(dev, b, s, ret == ACCEL_SUCCESS && !dst->other_device ?
			  job : 0);
		if (ret != ACCEL_SUCCESS)
			return ret;
		done += n;
	}
	return ACCEL_SUCCESS;
}

static accel_status_t drv_copy(struct accel_device *dev, void *stream,
			 const struct accel_side *dst,
			 const struct accel_side *src, size_t size)
{
	struct drv_piece p = { .op = DRM_SIMACCEL_OP_COPY, .size = size };
	struct drv_stream *s = stream;

	if (dst->other_device || src->other_device)
		return copy_bounced(dev, s, dst, src, size);
	p.dst = side_addr(dst, DRM_SIMACCEL_OP_DST_USER, &p.flags);
	p.src = side_addr(src, DRM_SIMACCEL_OP_SRC_USER, &p.flags);
	if (!s || src->in_alloc)
		return run_work(dev, s, &p, NULL);
	if (size <= STAGE_MAX)
		return copy_staged(dev, s, &p, src->ptr);
	/* too large to stage: the driver pins it; return once it is read */
	return run_and_wait(dev, s, &p);
}

static accel_status_t drv_set(struct accel_device *dev, void *stream,
			const struct accel_side *dst, uint8_t value,
			size_t size)
{
	struct drv_piece p = {
		.op = DRM_SIMACCEL_OP_FILL, .src = value, .size = size,
	};

	p.dst = side_addr(dst, DRM_SIMACCEL_OP_DST_USER, &p.flags);
	return run_work(dev, stream, &p, NULL);
}

/* ------------------------------------------------------------------ */
/* Peer to peer */

int drv_import(struct drv_dev *dd, int dmabuf, uint32_t *handle,
	       uint64_t *dev_addr)
{
	struct drm_prime_handle imp = { .fd = dmabuf };
	struct drm_simaccel_bo_info info = { 0 };
	int ret;

	ret = drv_ioctl(dd->fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp);
	if (ret)
		return ret;
	info.handle = imp.handle;
	ret = drv_ioctl(dd->fd, DRM_IOCTL_SIMACCEL_BO_INFO, &info);
	if (ret) {
		drv_import_close(dd, imp.handle);
		return ret;
	}
	*handle = imp.handle;
	*dev_addr = info.dev_addr;
	return 0;
}

void drv_import_close(struct drv_dev *dd, uint32_t handle)
{
	for (size_t i = 0; i < dd->n_ipc_refs; i++)
		if (dd->ipc_refs[i].handle == handle)
			return;
	drv_gem_close(dd->fd, handle);
}

/*
 * @a, a buffer of @owner, imported into @run's file (a PRIME dma-buf):
 * its handle there and the device address of its first byte. Caller holds
 * @run's peer_lock.
 */
static int import_peer(struct accel_device *run, struct accel_device *owner,
		       const struct accel_allocation *a, uint32_t *handle,
		       uint64_t *dev_addr)
{
	struct drm_prime_handle exp = {
		.handle = (uint32_t)a->handle, .flags = DRM_CLOEXEC,
	};
	int ret;

	ret = drv_ioctl(fd_of(owner), DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp);
	if (ret)
		return ret;
	ret = drv_import(drv_of(run), exp.fd, handle, dev_addr);
	close(exp.fd);
	return ret;
}

/*
 * The engine of @run writes to or reads from the other device's VRAM,
 * which it reaches through an import of the buffer; the import's handle
 * goes once the jobs are queued (they hold the buffer).
 */
static accel_status_t drv_copy_peer(struct accel_device *run, void *stream,
			      struct accel_device *dst_dev,
			      const struct accel_side *dst,
			      struct accel_device *src_dev,
			      const struct accel_side *src, size_t size)
{
	struct drv_piece p = { .op = DRM_SIMACCEL_OP_COPY, .size = size };
	bool to_peer = run == src_dev;
	const struct accel_side *peer = to_peer ? dst : src;
	struct drv_dev *dd = drv_of(run);
	uint64_t base;
	uint32_t handle;
	accel_status_t ret;
	int err;

	pthread_mutex_lock(&dd->peer_lock);
	err = import_peer(run, to_peer ? dst_dev : src_dev, &peer->alloc,
			  &handle, &base);
	if (err) {
		pthread_mutex_unlock(&dd->peer_lock);
		return accel_errno_error(-err, "%s cannot reach the memory of %s",
					 run->name, (to_peer ? dst_dev : src_dev)->name);
	}
	/* opened memory starts buf_offset into its buffer */
	base += peer->alloc.buf_offset;
	p.dst = to_peer ? base + dst->offset : dst->alloc.dev_addr + dst->offset;
	p.src = to_peer ? src->alloc.dev_addr + src->offset : base + src->offset;
	ret = run_work(run, stream, &p, NULL);
	drv_import_close(dd, handle);
	pthread_mutex_unlock(&dd->peer_lock);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Probe */

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* The N of every /dev/accel/accelN, sorted; returns how many. */
static int list_nodes(int *nodes, int max)
{
	DIR *d = opendir("/dev/accel");
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

/* Whether @fd is a simaccel device: other DRM accel drivers have nodes too */
static bool is_simaccel(int fd)
{
	char name[16] = "";
	struct drm_version v = {
		.name = name, .name_len = sizeof(name) - 1,
	};

	return !drv_ioctl(fd, DRM_IOCTL_VERSION, &v) &&
	       v.name_len == strlen("simaccel") && !strcmp(name, "simaccel");
}

/* What the device is, and its queue of synchronous work. Returns -errno. */
static int dev_init(struct drv_dev *dd)
{
	struct drm_simaccel_queue_create qc = { 0 };
	int ret;

	ret = drv_ioctl(dd->fd, DRM_IOCTL_SIMACCEL_GET_INFO, &dd->info);
	if (!ret)
		ret = drv_ioctl(dd->fd, DRM_IOCTL_SIMACCEL_QUEUE_CREATE, &qc);
	if (ret)
		return ret;
	dd->sync_queue = qc.handle;
	dd->piece_max = PIECE_MAX;
	dd->vram_piece_max = BO_PIECE_MAX;
	dd->bo_piece_max = BO_PIECE_MAX;
	return 0;
}

static accel_status_t open_node(int node, int index, char *why, size_t why_len)
{
	struct accel_device *dev;
	struct drv_dev *dd;
	char path[32];
	int fd, ret;

	snprintf(path, sizeof(path), "/dev/accel/accel%d", node);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, why_len, "cannot open %s: %s%s", path,
			 strerror(errno),
			 errno == EACCES ? " (is the user in the device's group?)" : "");
		return ACCEL_FAILED;
	}
	if (!is_simaccel(fd)) {
		snprintf(why, why_len, "%s is not a simaccel device", path);
		close(fd);
		return ACCEL_FAILED;
	}
	dd = calloc(1, sizeof(*dd));
	if (!dd) {
		close(fd);
		snprintf(why, why_len, "out of host memory");
		return ACCEL_FAILED;
	}
	dd->fd = fd;
	dd->va_offset = (uint64_t)index * DEVICE_VA_STRIDE;
	ret = dev_init(dd);
	dev = ret ? NULL : accel_device_add(&accel_backend_driver, index, dd,
					    DRM_SIMACCEL_BO_MIN_ALIGN);
	if (!dev) {
		snprintf(why, why_len, "%s: %s", path,
			 ret ? strerror(-ret) : "too many devices");
		close(fd);	/* its queue goes with it */
		free(dd);
		return ACCEL_FAILED;
	}
	/* a buffer's VRAM is whole pages (docs/uapi.md) */
	dev->chunk_granule = (size_t)sysconf(_SC_PAGESIZE);
	pthread_mutex_init(&dd->stage_lock, NULL);
	pthread_mutex_init(&dd->peer_lock, NULL);
	return ACCEL_SUCCESS;
}

static accel_status_t drv_probe(char *why, size_t why_len)
{
	int nodes[ACCEL_MAX_DEVICES];
	int n = list_nodes(nodes, ACCEL_MAX_DEVICES), found = 0;

	if (!n) {
		snprintf(why, why_len, "no /dev/accel/accelN device: simaccel.ko is not loaded, or found no device");
		return ACCEL_FAILED;
	}
	for (int i = 0; i < n; i++)
		if (open_node(nodes[i], found, why, why_len) == ACCEL_SUCCESS)
			found++;
	return found ? ACCEL_SUCCESS : ACCEL_FAILED;
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
	.ipc_export = drv_ipc_export,
	.ipc_open = drv_ipc_open,
	.ipc_revoke = drv_ipc_revoke,
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
