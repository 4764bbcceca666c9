// SPDX-License-Identifier: MIT
/*
 * libaccel-torch.so: libaccel's caching allocator as PyTorch's CUDA
 * allocator, through torch.cuda.memory.CUDAPluggableAllocator:
 *
 *	alloc = torch.cuda.memory.CUDAPluggableAllocator(
 *		"libaccel-torch.so", "accel_torch_alloc", "accel_torch_free")
 *	torch.cuda.memory.change_current_allocator(alloc)
 *
 * Each CUDA device has a pool of its own (accel_pool_create), so that its
 * statistics are PyTorch's alone. PyTorch passes the stream a block is for,
 * and frees it with that stream; the stream becomes a libaccel stream
 * (accel_stream_create_external) the first time it is seen, so that the
 * pool's stream order applies as with cudaMallocAsync: a block freed on a
 * stream is reused at once for that stream, and for other streams only
 * behind an event recorded on it.
 *
 * The adopted streams are kept for the life of the process, as PyTorch
 * keeps its own streams. So the CUstream of a torch.cuda.ExternalStream
 * that PyTorch allocated on must outlive the process's use of libaccel:
 * once its owner destroys it, libaccel's device-wide waits fail (known,
 * not fixed: torch_allocator_stream_destroyed_by_its_owner). Dropping
 * a stream with its last block would cost a wait on the host at that free.
 * A CUstream destroyed and another one created at the same address would
 * share its blocks without a wait: PyTorch's own caching allocator keys
 * its blocks by stream the same way.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <accel/accel.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_DEVICES 64
#define MAX_STREAMS 256	/* per device: PyTorch's pools hold 32 per priority */

struct adopted {
	void *native;
	accel_stream_t stream;
};

struct torch_device {
	pthread_mutex_t lock;		/* adding a stream, starting the device */
	atomic_bool ready;
	struct accel_device_id dev;
	accel_pool_t pool;
	/* appended under the lock, read without it up to nstreams */
	struct adopted streams[MAX_STREAMS];
	atomic_size_t nstreams;
};

static struct torch_device devices[MAX_DEVICES] = {
	[0 ... MAX_DEVICES - 1] = { .lock = PTHREAD_MUTEX_INITIALIZER },
};

/* PyTorch reports a NULL allocation as out of memory: say why here. */
static void report(int device, const char *what)
{
	fprintf(stderr, "libaccel-torch: cuda:%d: %s: %s\n", device, what,
		accel_get_last_error());
}

/* the device's pool, started on first use; NULL on error, reported */
static struct torch_device *device_of(int device)
{
	struct torch_device *d;
	char name[32];

	if (device < 0 || device >= MAX_DEVICES) {
		fprintf(stderr, "libaccel-torch: no device %d\n", device);
		return NULL;
	}
	d = &devices[device];
	if (atomic_load_explicit(&d->ready, memory_order_acquire))
		return d;
	pthread_mutex_lock(&d->lock);
	if (!atomic_load_explicit(&d->ready, memory_order_relaxed)) {
		snprintf(name, sizeof(name), "cuda:%d", device);
		if (accel_find_device(name, &d->dev.id) != ACCEL_SUCCESS ||
		    accel_pool_create(&d->dev, &d->pool) != ACCEL_SUCCESS)
			report(device, "starting its pool");
		else
			atomic_store_explicit(&d->ready, true,
					      memory_order_release);
	}
	pthread_mutex_unlock(&d->lock);
	return atomic_load(&d->ready) ? d : NULL;
}

static accel_stream_t find_stream(struct torch_device *d, void *native)
{
	size_t n = atomic_load_explicit(&d->nstreams, memory_order_acquire);

	for (size_t i = 0; i < n; i++)
		if (d->streams[i].native == native)
			return d->streams[i].stream;
	return NULL;
}

/* a new adopted stream of @d, under its lock; NULL on error, reported */
static accel_stream_t adopt(struct torch_device *d, int device, void *native)
{
	size_t n = atomic_load_explicit(&d->nstreams, memory_order_relaxed);
	accel_stream_t s;

	if (n == MAX_STREAMS) {
		fprintf(stderr, "libaccel-torch: cuda:%d: more than %d streams\n",
			device, MAX_STREAMS);
		return NULL;
	}
	if (accel_stream_create_external(&d->dev, native, &s) != ACCEL_SUCCESS) {
		report(device, "adopting a stream");
		return NULL;
	}
	d->streams[n] = (struct adopted){ .native = native, .stream = s };
	atomic_store_explicit(&d->nstreams, n + 1, memory_order_release);
	return s;
}

/* PyTorch's stream @native (NULL: the legacy default one) as libaccel's */
static accel_stream_t stream_of(struct torch_device *d, int device, void *native)
{
	accel_stream_t s = find_stream(d, native);

	if (s)
		return s;
	pthread_mutex_lock(&d->lock);
	s = find_stream(d, native);
	if (!s)
		s = adopt(d, device, native);
	pthread_mutex_unlock(&d->lock);
	return s;
}

/* PyTorch's alloc_fn: @size bytes for work on @stream of @device, or NULL */
EXPORT void *accel_torch_alloc(ssize_t size, int device, void *stream)
{
	struct torch_device *d = device_of(device);
	accel_stream_t s;
	void *ptr = NULL;

	if (!d || size < 0)
		return NULL;
	s = stream_of(d, device, stream);
	if (s && accel_pool_allocate(d->pool, s, &ptr, (size_t)size) != ACCEL_SUCCESS)
		report(device, "allocating");
	return ptr;
}

/* PyTorch's free_fn: the block, after the work queued on @stream so far */
EXPORT void accel_torch_free(void *ptr, ssize_t size, int device, void *stream)
{
	struct torch_device *d = device_of(device);
	accel_stream_t s;

	if (!d || size < 0)
		return;
	s = stream_of(d, device, stream);
	if (s && accel_pool_deallocate(d->pool, s, ptr, (size_t)size) != ACCEL_SUCCESS)
		report(device, "freeing");
}

/*
 * One figure of the device's pool (struct accel_pool_stats' field @name,
 * such as "reserved_peak"), for ctypes; (size_t)-1 if there is none.
 */
EXPORT size_t accel_torch_stat(int device, const char *name)
{
	struct torch_device *d = device_of(device);
	struct accel_pool_stats st;
	const struct {
		const char *name;
		const size_t *value;
	} fields[] = {
		{ "reserved", &st.reserved },
		{ "reserved_peak", &st.reserved_peak },
		{ "allocated", &st.allocated },
		{ "allocated_peak", &st.allocated_peak },
		{ "requested", &st.requested },
		{ "requested_peak", &st.requested_peak },
		{ "chunks", &st.chunks },
		{ "blocks", &st.blocks },
		{ "backend_allocs", &st.backend_allocs },
		{ "backend_frees", &st.backend_frees },
	};

	if (!d || !name || accel_pool_get_stats(d->pool, &st) != ACCEL_SUCCESS)
		return (size_t)-1;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!strcmp(fields[i].name, name))
			return *fields[i].value;
	return (size_t)-1;
}

/* start the device's peaks afresh; 0 on success, -1 on error */
EXPORT int accel_torch_reset_peaks(int device)
{
	struct torch_device *d = device_of(device);

	return d && accel_pool_reset_peaks(d->pool) == ACCEL_SUCCESS ? 0 : -1;
}

/* give the device's idle chunks back (torch.cuda.empty_cache's part) */
EXPORT int accel_torch_trim(int device)
{
	struct torch_device *d = device_of(device);

	return d && accel_pool_trim(d->pool) == ACCEL_SUCCESS ? 0 : -1;
}
