/* SPDX-License-Identifier: MIT */
/*
 * The accel backend's internals, shared by its files: driver.c (devices,
 * memory, copies) and driver_stream.c (jobs, streams, events).
 */
#ifndef ACCEL_BACKEND_DRIVER_H
#define ACCEL_BACKEND_DRIVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"
#include "uapi/simaccel_accel.h"

struct stage_buf;

/* A buffer of another process, opened in this file, and its opens. */
struct drv_ipc_ref {
	uint32_t handle;
	uint32_t refs;
};

struct drv_dev {
	int fd;			/* /dev/accel/accelN */
	uint64_t va_offset;	/* pointer minus device address, for VRAM */
	struct drm_simaccel_info info;
	uint32_t sync_queue;	/* the queue of synchronous work */
	/*
	 * Largest piece of a copy or fill one job moves, halved on E2BIG: of
	 * work on user memory (4 KiB pages, pinned per job), of work within
	 * VRAM (contiguous: a descriptor moves 4 MiB), and of other work on
	 * buffers (HOST buffers: mostly 2 MiB pages, and peers' VRAM).
	 */
	_Atomic uint64_t piece_max, vram_piece_max, bo_piece_max;
	/*
	 * Held from importing a peer's buffer to closing the import: the
	 * file has one handle per imported buffer, which a second thread
	 * would otherwise close under the first one's job.
	 */
	pthread_mutex_t peer_lock;
	/*
	 * The imports that memory opened from other processes holds, under
	 * peer_lock: a peer copy importing the same buffer gets the same
	 * handle, and must leave it open.
	 */
	struct drv_ipc_ref *ipc_refs;
	size_t n_ipc_refs;
	pthread_mutex_t stage_lock;
	struct stage_buf *idle, *busy;
	size_t idle_bytes, busy_bytes;
};

/*
 * A stream is a queue and a timeline syncobj: the queue's job N signals
 * the timeline's point N, so that the stream, an event or a staging buffer
 * waits for any job by its number.
 */
struct drv_stream {
	uint32_t queue;
	uint32_t timeline;
	pthread_mutex_t lock;	/* keeps points in submission order */
	_Atomic uint64_t last;	/* the last job's number, 0: none yet */
	/* the first job of the last operation (one split into several) */
	_Atomic uint64_t op_first;
	pthread_mutex_t report_lock;	/* guards failed_seen */
	uint64_t failed_seen;	/* the queue's failures already reported */
};

/* Where one job of a copy or fill goes: a piece of the whole. */
struct drv_piece {
	uint32_t op;		/* DRM_SIMACCEL_OP_* */
	uint32_t flags;		/* DRM_SIMACCEL_OP_*_USER */
	uint64_t dst, src;	/* src: the byte of a fill */
	uint64_t size;
};

static inline struct drv_dev *drv_of(struct accel_device *dev)
{
	return dev->priv;
}

int drv_ioctl(int fd, unsigned long req, void *arg);
int drv_gem_close(int fd, uint32_t handle);

/*
 * Import the dma-buf @dmabuf into @dd's file: the handle and the device
 * address of its first byte. 0 or -errno. Caller holds peer_lock.
 */
int drv_import(struct drv_dev *dd, int dmabuf, uint32_t *handle,
	       uint64_t *dev_addr);
/* close an import, unless opened memory holds it. Caller holds peer_lock. */
void drv_import_close(struct drv_dev *dd, uint32_t handle);

/* driver_ipc.c: sharing buffers with other processes */
accel_status_t drv_ipc_export(struct accel_device *dev,
			const struct accel_allocation *a,
			struct accel_ipc_wire *w);
accel_status_t drv_ipc_open(struct accel_device *dev, const struct accel_ipc_wire *w,
		      struct accel_allocation *out);
/* the opened memory @a goes: its import goes with its last open */
accel_status_t drv_ipc_close(struct accel_device *dev,
		       const struct accel_allocation *a);
/* the block at @offset of this process's buffer @a is freed: its handles go */
void drv_ipc_revoke(struct accel_device *dev, const struct accel_allocation *a,
		    uint64_t offset);
/* this process's buffer @handle is freed: no process may open it now */
void drv_ipc_forget(struct accel_device *dev, uint32_t handle);

/*
 * Run @p in jobs of at most piece_max bytes: on @s (NULL: synchronously,
 * on the device's queue of synchronous work). Returns 0 or -errno; *@last
 * (if not NULL) gets the number of the last job queued on @s, 0 if none
 * was: on failure, earlier pieces may still be queued.
 */
int drv_run(struct accel_device *dev, struct drv_stream *s,
	    const struct drv_piece *p, uint64_t *last);
/*
 * 0 once job @point of the stream whose timeline is @timeline is over (or
 * @point is 0), -EBUSY if it is not after @timeout_ns
 */
int drv_wait_point(int fd, uint32_t timeline, uint64_t point,
		   int64_t timeout_ns);
int drv_stream_wait(int fd, struct drv_stream *s, uint64_t point,
		    int64_t timeout_ns);
void drv_stage_forget(struct accel_device *dev, struct drv_stream *s);

accel_status_t drv_stream_create(struct accel_device *dev, void **stream);
void drv_stream_destroy(struct accel_device *dev, void *stream);
accel_status_t drv_stream_query(struct accel_device *dev, void *stream);
accel_status_t drv_stream_sync(struct accel_device *dev, void *stream);
void drv_stream_drain(struct accel_device *dev, void *stream);
accel_status_t drv_event_create(struct accel_device *dev, void **event);
void drv_event_destroy(struct accel_device *dev, void *event);
accel_status_t drv_event_record(struct accel_device *dev, void *stream,
			  void *event);
accel_status_t drv_event_query(struct accel_device *dev, void *event);
accel_status_t drv_event_sync(struct accel_device *dev, void *event);
accel_status_t drv_stream_wait_event(struct accel_device *dev, void *stream,
			       void *event);

#endif
