// SPDX-License-Identifier: MIT
/*
 * The cuda backend: NVIDIA GPUs through the CUDA driver API.
 *
 * libcuda.so.1 is loaded at run time, so the library builds and runs on
 * machines without CUDA; the backend then reports why it is unavailable.
 * Each call makes the device's primary context current for its duration, so
 * the caller's own current context never matters. Device pointers are
 * CUDA's unified virtual addresses; pinned memory comes from cuMemHostAlloc
 * and unified memory from cuMemAllocManaged, placed on the device.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#ifndef ACCEL_WITH_CUDA

static accel_status_t cuda_probe(char *why, size_t why_len)
{
	snprintf(why, why_len,
		 "libaccel was built without the CUDA headers (set CUDA_HOME, or install them in /usr/local/cuda, and rebuild)");
	return ACCEL_FAILED;
}

const struct accel_backend accel_backend_cuda = {
	.name = "cuda",
	.known_as = ACCEL_FOREIGN_CUDA,
	.probe = cuda_probe,
};

#else

#include <cuda.h>

#define CUDA_MIN_CHUNK 256

#define STR(x) #x
#define SYMBOL(x) STR(x)	/* the versioned name cuda.h maps x to */

/* The driver functions used; cuda.h's macros pick the current versions. */
#define CUDA_FUNCTIONS(X)						\
	X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet)			\
	X(cuDevicePrimaryCtxRetain) X(cuCtxPushCurrent) X(cuCtxPopCurrent) \
	X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)	\
	X(cuMemHostRegister) X(cuMemHostUnregister)			\
	X(cuMemAllocManaged) X(cuMemcpyAsync) X(cuMemcpyHtoDAsync)	\
	X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemcpyPeerAsync)	\
	X(cuMemsetD8Async)						\
	X(cuMemGetInfo) X(cuStreamCreate) X(cuStreamDestroy)		\
	X(cuStreamQuery) X(cuStreamSynchronize) X(cuStreamWaitEvent)	\
	X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)		\
	X(cuEventQuery) X(cuEventSynchronize) X(cuGetErrorString)	\
	X(cuDeviceCanAccessPeer) X(cuCtxEnablePeerAccess)

/* Newer than some drivers: used when present. */
#define CUDA_OPTIONAL_FUNCTIONS(X)					\
	X(cuMemPrefetchAsync) X(cuMemGetAllocationGranularity)		\
	X(cuPointerGetAttribute) X(cuStreamGetCtx)

#define FIELD(f) __typeof__(f) *f;
static struct {
	CUDA_FUNCTIONS(FIELD)
	CUDA_OPTIONAL_FUNCTIONS(FIELD)
} cu;
#undef FIELD

struct cuda_dev {
	CUdevice dev;
	CUcontext ctx;
	int ordinal;
	pthread_mutex_t peer_lock;
	uint64_t peers_enabled;		/* bit i: access to ordinal i tried */
};

/* The library's code for a CUDA driver error. */
static enum accel_error cuda_code(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_OUT_OF_MEMORY:
		return ACCEL_ERROR_OUT_OF_MEMORY;
	case CUDA_ERROR_INVALID_VALUE:
		return ACCEL_ERROR_INVALID_VALUE;
	case CUDA_ERROR_INVALID_HANDLE:
	case CUDA_ERROR_INVALID_CONTEXT:
		return ACCEL_ERROR_INVALID_HANDLE;
	case CUDA_ERROR_NOT_READY:
		return ACCEL_ERROR_NOT_READY;
	case CUDA_ERROR_NOT_SUPPORTED:
		return ACCEL_ERROR_NOT_SUPPORTED;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_NOT_INITIALIZED:
	case CUDA_ERROR_DEINITIALIZED:
		return ACCEL_ERROR_UNAVAILABLE;
	default:
		return ACCEL_ERROR_DEVICE_FAULT;
	}
}

static accel_status_t cuda_error(CUresult r, struct accel_device *dev,
			   const char *what)
{
	const char *msg = NULL;

	if (cu.cuGetErrorString(r, &msg) != CUDA_SUCCESS || !msg)
		msg = "unknown CUDA error";
	return accel_fail(cuda_code(r), "%s: %s failed: %s (CUDA error %d)",
			  dev->name, what, msg, (int)r);
}

static CUcontext ctx_of(struct accel_device *dev)
{
	return ((struct cuda_dev *)dev->priv)->ctx;
}

/* Make @dev's context current for one call; pop() puts the caller's back. */
static accel_status_t push(struct accel_device *dev)
{
	CUresult r = cu.cuCtxPushCurrent(ctx_of(dev));

	return r ? cuda_error(r, dev, "making the context current") : ACCEL_SUCCESS;
}

static void pop(void)
{
	CUcontext unused;

	cu.cuCtxPopCurrent(&unused);
}

/* The end of a call: pop, and report @r about @what. */
static accel_status_t done(CUresult r, struct accel_device *dev, const char *what)
{
	pop();
	return r ? cuda_error(r, dev, what) : ACCEL_SUCCESS;
}

static CUdeviceptr dptr(const struct accel_side *s)
{
	return (CUdeviceptr)(uintptr_t)s->ptr;
}

/* ------------------------------------------------------------------ */
/* Memory */

/*
 * Synchronous work runs on a non-blocking stream of the calling thread's
 * own (one per device), then waits for it: the core has already waited for
 * the work the call must follow, and nothing queued later may delay it.
 * CUDA's default streams would: the legacy one waits for the blocking
 * streams (libaccel's, with work queued after the call began), and the
 * per-thread one for the legacy one (PyTorch's default stream, say).
 */
#define SYNC_DEVICES 64

struct sync_stream {
	CUcontext ctx;
	CUstream stream;
};

static pthread_key_t sync_key;
static pthread_once_t sync_key_once = PTHREAD_ONCE_INIT;

/* a thread's streams go with it */
static void sync_streams_free(void *p)
{
	struct sync_stream *ss = p;
	CUcontext unused;

	for (int i = 0; i < SYNC_DEVICES; i++)
		if (ss[i].stream && !cu.cuCtxPushCurrent(ss[i].ctx)) {
			cu.cuStreamDestroy(ss[i].stream);
			cu.cuCtxPopCurrent(&unused);
		}
	free(ss);
}

static void sync_key_create(void)
{
	pthread_key_create(&sync_key, sync_streams_free);
}

/* The calling thread's stream for synchronous work on @dev (current). */
static CUresult sync_stream(struct accel_device *dev, CUstream *out)
{
	struct cuda_dev *cd = dev->priv;
	struct sync_stream *ss;
	CUresult r;

	if (cd->ordinal >= SYNC_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_once(&sync_key_once, sync_key_create);
	ss = pthread_getspecific(sync_key);
	if (!ss) {
		ss = calloc(SYNC_DEVICES, sizeof(*ss));
		if (!ss || pthread_setspecific(sync_key, ss)) {
			free(ss);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	ss += cd->ordinal;
	if (!ss->stream) {
		r = cu.cuStreamCreate(&ss->stream, CU_STREAM_NON_BLOCKING);
		if (r)
			return r;
		ss->ctx = cd->ctx;
	}
	*out = ss->stream;
	return CUDA_SUCCESS;
}

/* @r of work queued on @stream, then the wait for it */
static CUresult finish_sync(CUresult r, CUstream stream)
{
	return r ? r : cu.cuStreamSynchronize(stream);
}

/* Managed memory starts on the device, where it counts in the stats. */
static CUresult place_on_device(struct accel_device *dev, CUdeviceptr p,
				size_t size)
{
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE,
			      .id = ((struct cuda_dev *)dev->priv)->ordinal };
	CUstream s = NULL;
	CUresult r;

	if (!cu.cuMemPrefetchAsync)
		return CUDA_SUCCESS;
	r = sync_stream(dev, &s);
	return r ? r : finish_sync(cu.cuMemPrefetchAsync(p, size, loc, 0, s), s);
}

/*
 * Managed memory may exceed the device, and a program that asks for more
 * than is free can hang the GPU; unified memory is device memory here, so
 * it must fit in what is free.
 */
static CUresult managed_fits(size_t size)
{
	size_t free = 0, total = 0;
	CUresult r = cu.cuMemGetInfo(&free, &total);

	if (!r && size > free)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	return r;
}

static accel_status_t cuda_alloc(struct accel_device *dev, enum accel_kind kind,
			   size_t size, struct accel_allocation *out)
{
	CUdeviceptr p = 0;
	void *host = NULL;
	CUresult r;

	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	switch (kind) {
	case ACCEL_KIND_DEVICE:
		r = cu.cuMemAlloc(&p, size);
		break;
	case ACCEL_KIND_HOST:
		r = cu.cuMemHostAlloc(&host, size, CU_MEMHOSTALLOC_PORTABLE |
				      (out->write_combined ?
				       CU_MEMHOSTALLOC_WRITECOMBINED : 0));
		p = (CUdeviceptr)(uintptr_t)host;
		break;
	default:
		r = managed_fits(size);
		if (!r)
			r = cu.cuMemAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL);
		if (!r && place_on_device(dev, p, size)) {
			cu.cuMemFree(p);
			r = CUDA_ERROR_OUT_OF_MEMORY;
		}
		break;
	}
	if (r == CUDA_ERROR_OUT_OF_MEMORY && kind != ACCEL_KIND_HOST) {
		size_t free = 0, total = 0;

		cu.cuMemGetInfo(&free, &total);
		pop();
		return accel_oom_error("out of memory on %s: %zu bytes requested, %zu of %zu free",
				   dev->name, size, free, total);
	}
	out->addr = (uintptr_t)p;
	out->dev_addr = p;
	return done(r, dev, "allocating memory");
}

static accel_status_t cuda_free(struct accel_device *dev,
			  const struct accel_allocation *a)
{
	CUresult r;

	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (a->kind == ACCEL_KIND_HOST)
		r = cu.cuMemFreeHost((void *)a->addr);
	else
		r = cu.cuMemFree((CUdeviceptr)a->addr);
	return done(r, dev, "freeing memory");
}

static accel_status_t cuda_host_register(struct accel_device *dev, void *ptr,
				   size_t size, struct accel_allocation *out)
{
	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	out->dev_addr = (uintptr_t)ptr;
	return done(cu.cuMemHostRegister(ptr, size, CU_MEMHOSTREGISTER_PORTABLE),
		    dev, "pinning host memory");
}

/* One attribute of @p into @data; false if the driver does not know @p. */
static bool attribute(void *data, CUpointer_attribute what, CUdeviceptr p)
{
	return cu.cuPointerGetAttribute(data, what, p) == CUDA_SUCCESS;
}

/*
 * Device or managed memory of @dev that another library (or the driver API)
 * allocated: the driver tells the range, the kind and the device of any
 * pointer into it.
 */
static accel_status_t cuda_foreign(struct accel_device *dev, const void *ptr,
			     struct accel_allocation *out)
{
	CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr, start = 0;
	unsigned int type = 0, managed = 0;
	int ordinal = -1;
	size_t size = 0;
	bool known;

	if (!cu.cuPointerGetAttribute || push(dev) != ACCEL_SUCCESS)
		return ACCEL_WARNING;
	known = attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) &&
		attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) &&
		attribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) &&
		attribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) &&
		attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p);
	pop();
	/* pinned host memory is host memory here, whoever pinned it */
	if (!known || ordinal != ((struct cuda_dev *)dev->priv)->ordinal ||
	    (type != CU_MEMORYTYPE_DEVICE && !managed) || !size)
		return ACCEL_WARNING;
	out->addr = (uintptr_t)start;
	out->size = size;
	out->kind = managed ? ACCEL_KIND_UNIFIED : ACCEL_KIND_DEVICE;
	out->dev_addr = start;
	return ACCEL_SUCCESS;
}

static accel_status_t cuda_host_unregister(struct accel_device *dev,
				     const struct accel_allocation *a)
{
	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return done(cu.cuMemHostUnregister((void *)a->addr), dev,
		    "unpinning host memory");
}

static bool on_device(const struct accel_side *s)
{
	return s->in_alloc && s->alloc.kind == ACCEL_KIND_DEVICE;
}

/*
 * The copy functions of a known direction where the sides say it (they
 * skip the driver's pointer lookups); unified addressing otherwise.
 */
static CUresult copy_async(const struct accel_side *dst,
			   const struct accel_side *src, size_t size,
			   CUstream stream)
{
	if (on_device(dst) && on_device(src))
		return cu.cuMemcpyDtoDAsync(dptr(dst), dptr(src), size, stream);
	if (on_device(dst) && !src->in_alloc)
		return cu.cuMemcpyHtoDAsync(dptr(dst), src->ptr, size, stream);
	if (!dst->in_alloc && on_device(src))
		return cu.cuMemcpyDtoHAsync(dst->ptr, dptr(src), size, stream);
	return cu.cuMemcpyAsync(dptr(dst), dptr(src), size, stream);
}

static accel_status_t cuda_copy(struct accel_device *dev, void *stream,
			  const struct accel_side *dst,
			  const struct accel_side *src, size_t size)
{
	CUstream s = stream;
	CUresult r = CUDA_SUCCESS;

	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	/* a pageable source is staged by the driver before the call returns */
	if (!stream)
		r = sync_stream(dev, &s);
	if (!r)
		r = copy_async(dst, src, size, s);
	if (!stream)
		r = finish_sync(r, s);
	return done(r, dev, "copying");
}

static accel_status_t cuda_set(struct accel_device *dev, void *stream,
			 const struct accel_side *dst, uint8_t value,
			 size_t size)
{
	CUstream s = stream;
	CUresult r = CUDA_SUCCESS;

	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (!stream)
		r = sync_stream(dev, &s);
	if (!r)
		r = cu.cuMemsetD8Async(dptr(dst), value, size, s);
	if (!stream)
		r = finish_sync(r, s);
	return done(r, dev, "setting memory");
}

/*
 * Let @from's context reach @to's memory directly where the hardware
 * allows; cuMemcpyPeer goes through the host by itself where it does not.
 * Caller has @from's context current.
 */
static void enable_peer_access(struct accel_device *from,
			       struct accel_device *to)
{
	struct cuda_dev *f = from->priv, *t = to->priv;
	uint64_t bit = 1ull << (t->ordinal & 63);
	int can = 0;

	pthread_mutex_lock(&f->peer_lock);
	if (!(f->peers_enabled & bit)) {
		f->peers_enabled |= bit;
		if (!cu.cuDeviceCanAccessPeer(&can, f->dev, t->dev) && can)
			cu.cuCtxEnablePeerAccess(t->ctx, 0);
	}
	pthread_mutex_unlock(&f->peer_lock);
}

static accel_status_t cuda_copy_peer(struct accel_device *run, void *stream,
			       struct accel_device *dst_dev,
			       const struct accel_side *dst,
			       struct accel_device *src_dev,
			       const struct accel_side *src, size_t size)
{
	CUstream s = stream;
	CUresult r = CUDA_SUCCESS;

	if (push(run) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	enable_peer_access(run, run == src_dev ? dst_dev : src_dev);
	if (!stream)
		r = sync_stream(run, &s);
	if (!r)
		r = cu.cuMemcpyPeerAsync(dptr(dst), ctx_of(dst_dev), dptr(src),
					 ctx_of(src_dev), size, s);
	if (!stream)
		r = finish_sync(r, s);
	return done(r, run, "copying between devices");
}

static accel_status_t cuda_stats(struct accel_device *dev, size_t *total,
			   size_t *free)
{
	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return done(cu.cuMemGetInfo(free, total), dev, "reading memory info");
}

/* ------------------------------------------------------------------ */
/* Streams and events */

static accel_status_t cuda_stream_create(struct accel_device *dev, void **stream)
{
	CUstream s = NULL;
	CUresult r;

	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	/* a blocking stream: synchronous calls wait for it */
	r = cu.cuStreamCreate(&s, CU_STREAM_DEFAULT);
	*stream = s;
	return done(r, dev, "creating a stream");
}

/*
 * The per-thread default stream is a different stream on each thread, and
 * libaccel queues some work from threads of its own: it cannot be adopted.
 * Where the driver tells a stream's context, one of another device is
 * refused, since work queued on it would run there.
 */
static accel_status_t cuda_stream_adopt(struct accel_device *dev, void *native,
				  void **stream)
{
	CUcontext ctx = NULL;
	CUresult r;

	if (native == CU_STREAM_PER_THREAD)
		return accel_error("CUDA's per-thread default stream is another stream on each thread: adopt a stream of its own");
	*stream = native ? native : CU_STREAM_LEGACY;
	if (!native || native == CU_STREAM_LEGACY || !cu.cuStreamGetCtx)
		return ACCEL_SUCCESS;
	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	r = cu.cuStreamGetCtx(native, &ctx);
	pop();
	if (r)
		return cuda_error(r, dev, "reading the stream's context");
	if (ctx != ctx_of(dev))
		return accel_error("stream %p belongs to another CUDA context than %s's primary one",
				   native, dev->name);
	return ACCEL_SUCCESS;
}

static void cuda_stream_destroy(struct accel_device *dev, void *stream)
{
	if (push(dev) == ACCEL_SUCCESS)
		done(cu.cuStreamDestroy(stream), dev, "destroying a stream");
}

/* CUDA_SUCCESS -> ACCEL_SUCCESS, NOT_READY -> ACCEL_WARNING, else an error */
static accel_status_t ready(CUresult r, struct accel_device *dev, const char *what)
{
	pop();
	if (r == CUDA_ERROR_NOT_READY)
		return ACCEL_WARNING;
	return r ? cuda_error(r, dev, what) : ACCEL_SUCCESS;
}

static accel_status_t cuda_stream_query(struct accel_device *dev, void *stream)
{
	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return ready(cu.cuStreamQuery(stream), dev, "the stream's work");
}

static accel_status_t cuda_stream_sync(struct accel_device *dev, void *stream)
{
	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return done(cu.cuStreamSynchronize(stream), dev, "the stream's work");
}

static void cuda_stream_drain(struct accel_device *dev, void *stream)
{
	if (push(dev) != ACCEL_SUCCESS)
		return;
	cu.cuStreamSynchronize(stream);
	pop();
}

static accel_status_t cuda_event_create(struct accel_device *dev, void **event)
{
	CUevent e = NULL;
	CUresult r;

	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	r = cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
	*event = e;
	return done(r, dev, "creating an event");
}

static void cuda_event_destroy(struct accel_device *dev, void *event)
{
	if (push(dev) == ACCEL_SUCCESS)
		done(cu.cuEventDestroy(event), dev, "destroying an event");
}

static accel_status_t cuda_event_record(struct accel_device *dev, void *stream,
				  void *event)
{
	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return done(cu.cuEventRecord(event, stream), dev, "recording an event");
}

static accel_status_t cuda_event_query(struct accel_device *dev, void *event)
{
	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return ready(cu.cuEventQuery(event), dev, "the event's work");
}

static accel_status_t cuda_event_sync(struct accel_device *dev, void *event)
{
	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return done(cu.cuEventSynchronize(event), dev, "the event's work");
}

static accel_status_t cuda_stream_wait_event(struct accel_device *dev, void *stream,
				       void *event)
{
	if (push(dev) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return done(cu.cuStreamWaitEvent(stream, event, 0), dev,
		    "making a stream wait");
}

/* ------------------------------------------------------------------ */
/* Probe */

static bool load_driver(char *why, size_t why_len)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		snprintf(why, why_len, "cannot load the CUDA driver: %s", dlerror());
		return false;
	}
#define LOAD(f)								\
	cu.f = (__typeof__(f) *)dlsym(lib, SYMBOL(f));			\
	if (!cu.f) {							\
		snprintf(why, why_len, "the CUDA driver lacks %s (too old?)", \
			 SYMBOL(f));					\
		return false;						\
	}
	CUDA_FUNCTIONS(LOAD)
#undef LOAD
#define LOAD_OPTIONAL(f) cu.f = (__typeof__(f) *)dlsym(lib, SYMBOL(f));
	CUDA_OPTIONAL_FUNCTIONS(LOAD_OPTIONAL)
#undef LOAD_OPTIONAL
	return true;
}

/*
 * The page the device backs its allocations with (2 MiB on current GPUs):
 * what the caching allocator's chunks are multiples of, so that none of
 * the memory they occupy is wasted. The min chunk where the driver cannot
 * tell.
 */
static size_t page_of(int ordinal)
{
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = ordinal },
	};
	size_t page = 0;

	if (!cu.cuMemGetAllocationGranularity ||
	    cu.cuMemGetAllocationGranularity(&page, &prop,
					     CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) ||
	    !page || page % CUDA_MIN_CHUNK)
		return CUDA_MIN_CHUNK;
	return page;
}

static accel_status_t add_device(int ordinal, char *why, size_t why_len)
{
	struct cuda_dev *cd = calloc(1, sizeof(*cd));
	struct accel_device *dev;
	const char *msg = "";
	CUresult r;

	if (!cd) {
		snprintf(why, why_len, "out of host memory");
		return ACCEL_FAILED;
	}
	cd->ordinal = ordinal;
	r = cu.cuDeviceGet(&cd->dev, ordinal);
	if (!r)
		r = cu.cuDevicePrimaryCtxRetain(&cd->ctx, cd->dev);
	if (r) {
		cu.cuGetErrorString(r, &msg);
		snprintf(why, why_len, "CUDA device %d: %s", ordinal, msg);
		free(cd);
		return ACCEL_FAILED;
	}
	pthread_mutex_init(&cd->peer_lock, NULL);
	dev = accel_device_add(&accel_backend_cuda, ordinal, cd, CUDA_MIN_CHUNK);
	if (!dev) {
		snprintf(why, why_len, "too many devices");
		pthread_mutex_destroy(&cd->peer_lock);
		free(cd);
		return ACCEL_FAILED;
	}
	dev->chunk_granule = page_of(ordinal);
	return ACCEL_SUCCESS;
}

static accel_status_t cuda_probe(char *why, size_t why_len)
{
	const char *msg = "";
	int count = 0;
	CUresult r;

	if (!load_driver(why, why_len))
		return ACCEL_FAILED;
	r = cu.cuInit(0);
	if (!r)
		r = cu.cuDeviceGetCount(&count);
	if (r) {
		cu.cuGetErrorString(r, &msg);
		snprintf(why, why_len, "CUDA found no usable GPU: %s", msg);
		return ACCEL_FAILED;
	}
	for (int i = 0; i < count; i++)
		if (add_device(i, why, why_len) != ACCEL_SUCCESS)
			return ACCEL_FAILED;
	return ACCEL_SUCCESS;
}

const struct accel_backend accel_backend_cuda = {
	.name = "cuda",
	.known_as = ACCEL_FOREIGN_CUDA,
	/* cuMemAlloc cannot have all that cuMemGetInfo calls free */
	.reserve_percent = 5,
	.pinned_portable = true,	/* cuMemHostAlloc(PORTABLE) */
	.probe = cuda_probe,
	.alloc = cuda_alloc,
	.free = cuda_free,
	.host_register = cuda_host_register,
	.host_unregister = cuda_host_unregister,
	.foreign = cuda_foreign,
	.copy = cuda_copy,
	.set = cuda_set,
	.copy_peer = cuda_copy_peer,
	.stats = cuda_stats,
	.stream_create = cuda_stream_create,
	.stream_adopt = cuda_stream_adopt,
	.stream_destroy = cuda_stream_destroy,
	.stream_query = cuda_stream_query,
	.stream_sync = cuda_stream_sync,
	.stream_drain = cuda_stream_drain,
	.event_create = cuda_event_create,
	.event_destroy = cuda_event_destroy,
	.event_record = cuda_event_record,
	.event_query = cuda_event_query,
	.event_sync = cuda_event_sync,
	.stream_wait_event = cuda_stream_wait_event,
};

#endif /* ACCEL_WITH_CUDA */
