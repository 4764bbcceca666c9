/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: the driver's trace events (<tracefs>/events/simaccel/).
 *
 * A job is named as drm_sched names it: id= is the scheduler job's id
 * (drm_sched_job, drm_run_job), fence= the context:seqno of its finished
 * fence and hw= that of its hardware fence (dma_fence_init,
 * dma_fence_signaled). docs/uapi.md follows one job through them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM simaccel

#if !defined(__SIMACCEL_TRACE_H__) || defined(TRACE_HEADER_MULTI_READ)
#define __SIMACCEL_TRACE_H__

#include <linux/tracepoint.h>

#include "../uapi/simaccel_accel.h"

#define simaccel_show_kind(kind)					\
	__print_symbolic(kind,						\
			 { DRM_SIMACCEL_BO_VRAM, "vram" },		\
			 { DRM_SIMACCEL_BO_VRAM_MAPPABLE, "vram_mappable" }, \
			 { DRM_SIMACCEL_BO_HOST, "host" },		\
			 { DRM_SIMACCEL_BO_USER, "user" },		\
			 { DRM_SIMACCEL_BO_IMPORTED, "imported" })

DECLARE_EVENT_CLASS(simaccel_bo,
		    TP_PROTO(const char *dev, u32 kind, u64 addr, u64 size),
		    TP_ARGS(dev, kind, addr, size),
		    TP_STRUCT__entry(__string(dev, dev)
				     __field(u32, kind)
				     __field(u64, addr)
				     __field(u64, size)),
		    TP_fast_assign(__assign_str(dev);
				   __entry->kind = kind;
				   __entry->addr = addr;
				   __entry->size = size;),
		    TP_printk("dev=%s kind=%s addr=%#llx size=%llu", __get_str(dev),
			      simaccel_show_kind(__entry->kind), __entry->addr,
			      __entry->size)
);

/* A buffer got its device address (before any handle to it exists). */
DEFINE_EVENT(simaccel_bo, simaccel_bo_create,
	     TP_PROTO(const char *dev, u32 kind, u64 addr, u64 size),
	     TP_ARGS(dev, kind, addr, size)
);

/* A buffer with a device address was freed: its memory goes back. */
DEFINE_EVENT(simaccel_bo, simaccel_bo_destroy,
	     TP_PROTO(const char *dev, u32 kind, u64 addr, u64 size),
	     TP_ARGS(dev, kind, addr, size)
);

DECLARE_EVENT_CLASS(simaccel_clear,
		    TP_PROTO(const char *dev, u64 addr, u64 size, u32 jobs, int error),
		    TP_ARGS(dev, addr, size, jobs, error),
		    TP_STRUCT__entry(__string(dev, dev)
				     __field(u64, addr)
				     __field(u64, size)
				     __field(u32, jobs)
				     __field(int, error)),
		    TP_fast_assign(__assign_str(dev);
				   __entry->addr = addr;
				   __entry->size = size;
				   __entry->jobs = jobs;
				   __entry->error = error;),
		    TP_printk("dev=%s addr=%#llx size=%llu jobs=%u error=%d",
			      __get_str(dev), __entry->addr, __entry->size, __entry->jobs,
			      __entry->error)
);

/* The clearing of a new VRAM buffer was pushed, in jobs= jobs. */
DEFINE_EVENT(simaccel_clear, simaccel_clear_begin,
	     TP_PROTO(const char *dev, u64 addr, u64 size, u32 jobs, int error),
	     TP_ARGS(dev, addr, size, jobs, error)
);

/* Its last job's fence signalled: the buffer is cleared, unless error=. */
DEFINE_EVENT(simaccel_clear, simaccel_clear_end,
	     TP_PROTO(const char *dev, u64 addr, u64 size, u32 jobs, int error),
	     TP_ARGS(dev, addr, size, jobs, error)
);

DECLARE_EVENT_CLASS(simaccel_job_ids,
		    TP_PROTO(const char *dev, u32 hwq, u64 client, u32 queue,
			     u64 submission, u64 id, u64 context, u64 seqno,
			     u32 ndesc, u64 bytes),
		    TP_ARGS(dev, hwq, client, queue, submission, id, context,
			    seqno, ndesc, bytes),
		    TP_STRUCT__entry(__string(dev, dev)
				     __field(u32, hwq)
				     __field(u64, client)
				     __field(u32, queue)
				     __field(u64, submission)
				     __field(u64, id)
				     __field(u64, context)
				     __field(u64, seqno)
				     __field(u32, ndesc)
				     __field(u64, bytes)),
		    TP_fast_assign(__assign_str(dev);
				   __entry->hwq = hwq;
				   __entry->client = client;
				   __entry->queue = queue;
				   __entry->submission = submission;
				   __entry->id = id;
				   __entry->context = context;
				   __entry->seqno = seqno;
				   __entry->ndesc = ndesc;
				   __entry->bytes = bytes;),
		    TP_printk("dev=%s hwq=%u client=%llu queue=%u submission=%llu id=%llu fence=%llu:%llu descs=%u bytes=%llu",
			      __get_str(dev), __entry->hwq, __entry->client,
			      __entry->queue, __entry->submission, __entry->id, __entry->context,
			      __entry->seqno, __entry->ndesc, __entry->bytes)
);

/*
 * A job was pushed to its entity, armed for hardware queue hwq= (whose
 * scheduler numbers its jobs: id=); queue=0 is the kernel's VRAM clearing.
 */
DEFINE_EVENT(simaccel_job_ids, simaccel_job_submit,
	     TP_PROTO(const char *dev, u32 hwq, u64 client, u32 queue,
		      u64 submission, u64 id, u64 context, u64 seqno,
		      u32 ndesc, u64 bytes),
	     TP_ARGS(dev, hwq, client, queue, submission, id, context,
		     seqno, ndesc, bytes)
);

DECLARE_EVENT_CLASS(simaccel_hw_job,
		    TP_PROTO(const char *dev, u32 hwq, u64 id, u64 context, u64 seqno,
			     u64 ring, int error, u64 busy_ns),
		    TP_ARGS(dev, hwq, id, context, seqno, ring, error, busy_ns),
		    TP_STRUCT__entry(__string(dev, dev)
				     __field(u32, hwq)
				     __field(u64, id)
				     __field(u64, context)
				     __field(u64, seqno)
				     __field(u64, ring)
				     __field(int, error)
				     __field(u64, busy_ns)),
		    TP_fast_assign(__assign_str(dev);
				   __entry->hwq = hwq;
				   __entry->id = id;
				   __entry->context = context;
				   __entry->seqno = seqno;
				   __entry->ring = ring;
				   __entry->error = error;
				   __entry->busy_ns = busy_ns;),
		    TP_printk("dev=%s hwq=%u id=%llu hw=%llu:%llu ring=%llu error=%d busy_ns=%llu",
			      __get_str(dev), __entry->hwq, __entry->id, __entry->context,
			      __entry->seqno, __entry->ring, __entry->error,
			      __entry->busy_ns)
);

/* Its descriptors and FENCE went on the ring, from descriptor ring= on. */
DEFINE_EVENT(simaccel_hw_job, simaccel_job_run,
	     TP_PROTO(const char *dev, u32 hwq, u64 id, u64 context, u64 seqno,
		      u64 ring, int error, u64 busy_ns),
	     TP_ARGS(dev, hwq, id, context, seqno, ring, error, busy_ns)
);

/* Its hardware fence is about to signal, with error=, after busy_ns=. */
DEFINE_EVENT(simaccel_hw_job, simaccel_job_done,
	     TP_PROTO(const char *dev, u32 hwq, u64 id, u64 context, u64 seqno,
		      u64 ring, int error, u64 busy_ns),
	     TP_ARGS(dev, hwq, id, context, seqno, ring, error, busy_ns)
);

/* The recovery found it at the head of a queue that made no progress. */
DEFINE_EVENT(simaccel_hw_job, simaccel_job_timeout,
	     TP_PROTO(const char *dev, u32 hwq, u64 id, u64 context, u64 seqno,
		      u64 ring, int error, u64 busy_ns),
	     TP_ARGS(dev, hwq, id, context, seqno, ring, error, busy_ns)
);

/* A queue halted on an error (docs/hardware.md, Errors). */
TRACE_EVENT(simaccel_fault,
	    TP_PROTO(const char *dev, u32 hwq, u32 status, u32 error, u32 desc),
	    TP_ARGS(dev, hwq, status, error, desc),
	    TP_STRUCT__entry(__string(dev, dev)
			     __field(u32, hwq)
			     __field(u32, status)
			     __field(u32, error)
			     __field(u32, desc)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->hwq = hwq;
			   __entry->status = status;
			   __entry->error = error;
			   __entry->desc = desc;),
	    TP_printk("dev=%s hwq=%u status=%#x error=%u desc=%u",
		      __get_str(dev), __entry->hwq, __entry->status,
		      __entry->error, __entry->desc)
);

/* The recovery reset a queue, failed its job with error=, requeued the rest. */
TRACE_EVENT(simaccel_queue_reset,
	    TP_PROTO(const char *dev, u32 hwq, int error, u32 requeued),
	    TP_ARGS(dev, hwq, error, requeued),
	    TP_STRUCT__entry(__string(dev, dev)
			     __field(u32, hwq)
			     __field(int, error)
			     __field(u32, requeued)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->hwq = hwq;
			   __entry->error = error;
			   __entry->requeued = requeued;),
	    TP_printk("dev=%s hwq=%u error=%d requeued=%u", __get_str(dev),
		      __entry->hwq, __entry->error, __entry->requeued)
);

/* A whole-device reset for cause= (simaccel_reset.c) failed failed= jobs. */
TRACE_EVENT(simaccel_device_reset,
	    TP_PROTO(const char *dev, const char *cause, u32 failed),
	    TP_ARGS(dev, cause, failed),
	    TP_STRUCT__entry(__string(dev, dev)
			     __string(cause, cause)
			     __field(u32, failed)),
	    TP_fast_assign(__assign_str(dev);
			   __assign_str(cause);
			   __entry->failed = failed;),
	    TP_printk("dev=%s cause=%s failed=%u", __get_str(dev),
		      __get_str(cause), __entry->failed)
);

#endif /* __SIMACCEL_TRACE_H__ */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE simaccel_trace
#include <trace/define_trace.h>
