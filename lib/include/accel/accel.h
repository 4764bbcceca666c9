/* SPDX-License-Identifier: MIT */
/*
 * libaccel: device memory, copies, streams and events over several backends.
 *
 * The memory functions have the signatures of the PaddlePaddle custom-device
 * plugin interface with libaccel's own types in place of Paddle's:
 * accel_status_t, accel_device_t, accel_stream_t and accel_event_t have the
 * layout and values of C_Status, C_Device, C_Stream and C_Event
 * (paddle/phi/backends/device_ext.h), whose names this header leaves to
 * Paddle, so that a plugin includes both and forwards each call with casts
 * (plugin/ does; docs/paddle.md).
 *
 * Devices. Every device of every available backend gets an id, 0 to
 * count - 1: first simaccel.ko's devices (/dev/accel/accelN), then NVIDIA GPUs
 * ("cuda", through libcuda.so.1 loaded at run time), then host-memory devices
 * ("cpu"). A device is named "backend:N". ACCEL_VISIBLE_DEVICES
 * (comma-separated "backend" or "backend:N" entries, in the order wanted)
 * selects and orders them; an empty value hides every device. The cpu
 * backend has ACCEL_CPU_DEVICES devices (1) of ACCEL_CPU_MEMORY bytes each
 * (half of the machine's memory; K, M and G suffixes are accepted).
 * An accel_device_t is a pointer to a struct accel_device_id whose id the
 * caller sets; the library never relies on a "current" device.
 *
 * Pointers. Device memory is addressed linearly: for an allocation of size n
 * at p, p + k with k + len <= n is valid for every copy and set. Device
 * pointers of different devices never coincide. Pinned host
 * memory and unified memory are ordinary host pointers; unified pointers are
 * also accepted wherever a device pointer is.
 *
 * Errors. Every function returns ACCEL_SUCCESS or an error status; after an
 * error, accel_get_last_error() describes what failed and why, and
 * accel_peek_last_error_code() tells what kind of failure it was. Bad
 * arguments are reported, never acted on: nothing is freed, written or
 * leaked, except that a function that makes a handle or allocates memory
 * sets its output (when given one) to NULL first, so that a failure never
 * leaves a stale or half-made value there.
 *
 * Handles. An accel_stream_t, accel_event_t or accel_pool_t (and
 * <accel/memory.h>'s accel_memory_t and accel_array_t) is an opaque value,
 * not the address of anything: keep it, compare it, never dereference it.
 * A value names one object for the life of the process. Once that object
 * is destroyed or released, every function refuses the value with
 * ACCEL_ERROR_INVALID_HANDLE, and no object made later ever gets it,
 * however often objects are made and freed. A value of another kind (a
 * stream passed as an event) or one the library never gave out is refused
 * the same way. NULL, where a stream, event or pool is required, is a bad
 * argument (ACCEL_ERROR_INVALID_VALUE).
 *
 * Threads. Every function may be called from any number of threads at once.
 * A thread may destroy or release a handle while other threads use it: the
 * calls already under way on it finish first (the destroy waits for them),
 * and calls that start later are refused as above.
 *
 * Processes. The library is not for the child of a fork() of a process
 * that has used it (as CUDA): the child would share the parent's device
 * contexts, and what it allocates would outlive it. Use it in the parent
 * only, or in children of a process that has not called it.
 *
 * Ordering. Synchronous functions first wait for the work already submitted
 * to the device's streams (like CUDA's legacy default stream), and return
 * once their own work is complete. They wait for the work submitted before
 * the call only: work that any thread submits later never delays them, so a
 * thread that keeps a stream busy cannot starve another thread's
 * synchronous calls. The synchronize functions wait the same way.
 * Deallocation does not wait: memory is reused (or given back to the
 * device) only once the work submitted before the free, on every stream,
 * has completed, so it is never reused under a queued transfer. Work on one
 * stream runs in submission order; streams are otherwise independent until
 * joined by events, but for CUDA's own rule on cuda devices: a stream that
 * accel_stream_create() makes there is a CUDA blocking stream, ordered
 * with the legacy default stream as cudaStreamCreate()'s are, so that work
 * other libraries queue on the legacy stream (PyTorch's and Numba's default
 * streams) is ordered with it without events.
 */
#ifndef ACCEL_ACCEL_H
#define ACCEL_ACCEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ACCEL_EXPORT __attribute__((visibility("default")))

/* The status every function returns; only ACCEL_SUCCESS means success. */
typedef enum {
	ACCEL_SUCCESS = 0,	/* done */
	ACCEL_WARNING,		/* not an error: a query found work pending */
	ACCEL_FAILED,		/* failed; see accel_get_last_error() */
	ACCEL_ERROR,		/* not returned; Paddle's C_ERROR */
	ACCEL_INTERNAL_ERROR	/* not returned; Paddle's C_INTERNAL_ERROR */
} accel_status_t;

/* A device, by id. The caller owns the struct. */
typedef struct accel_device_id {
	int id;
} *accel_device_t;

/* An ordered queue of asynchronous work on one device. */
typedef struct accel_stream_handle *accel_stream_t;

/*
 * How much a stream holds, on every backend: once ACCEL_STREAM_DEPTH
 * operations (copies, event records and waits) are queued on it and not
 * complete, a call that queues more waits until the oldest quarter of
 * them has completed, as a CUDA launch waits on a full queue; when a call
 * returns, the stream holds at most ACCEL_STREAM_DEPTH +
 * ACCEL_STREAM_DEPTH / 4 operations, so at any moment at most that plus
 * one for each thread then in a call queueing on it. So threads cannot
 * queue without bound, and a synchronous call waits for at most that much
 * of other threads' work. (A simaccel.ko queue holds 256
 * jobs: on accel devices the driver's bound comes first.)
 */
#define ACCEL_STREAM_DEPTH 1024

/* A marker in a stream's work, to wait for or to make another stream wait. */
typedef struct accel_event_handle *accel_event_t;

/* ------------------------------------------------------------------ */
/* Errors */

/*
 * accel_get_last_error - what the calling thread's last failed call reported
 *
 * Returns a message naming the function, the device and the reason, or ""
 * when no call of this thread has failed since accel_clear_last_error().
 * Successful calls leave the message alone. The string belongs to the
 * thread and is valid until its next libaccel call.
 */
ACCEL_EXPORT const char *accel_get_last_error(void);

/* accel_clear_last_error - forget the calling thread's last error */
ACCEL_EXPORT void accel_clear_last_error(void);

/*
 * What kind of failure a call reported, beside its message. A failed call
 * returns ACCEL_FAILED and sets both; the values are stable across versions.
 */
enum accel_error {
	ACCEL_ERROR_NONE = 0,		/* no call has failed since the reset */
	ACCEL_ERROR_INVALID_VALUE,	/* an argument is out of its range */
	ACCEL_ERROR_OUT_OF_MEMORY,	/* device or host memory ran short */
	ACCEL_ERROR_INVALID_HANDLE,	/* not a live handle: released,
					 * destroyed, never made, or of
					 * another kind */
	ACCEL_ERROR_NOT_READY,		/* work is still pending: what
					 * ACCEL_WARNING from a query means (a
					 * query records no error) */
	ACCEL_ERROR_DEVICE_FAULT,	/* the device or its driver failed the
					 * work */
	ACCEL_ERROR_UNAVAILABLE,	/* the backend or device cannot be used */
	ACCEL_ERROR_IN_USE,		/* the object is in use (mapped memory,
					 * a registered range) */
	ACCEL_ERROR_NOT_SUPPORTED,	/* this device or kind of memory cannot
					 * do that */
	ACCEL_ERROR_SYSTEM,		/* a system call failed */
	ACCEL_ERROR_COUNT
};

/*
 * accel_peek_last_error_code - the code of the calling thread's last failed
 * call, leaving it in place (cudaPeekAtLastError)
 */
ACCEL_EXPORT enum accel_error accel_peek_last_error_code(void);

/*
 * accel_get_last_error_code - the code of the calling thread's last failed
 * call; resets the code to ACCEL_ERROR_NONE and the message to ""
 * (cudaGetLastError)
 */
ACCEL_EXPORT enum accel_error accel_get_last_error_code(void);

/*
 * accel_error_name - the code's name, such as "ACCEL_ERROR_OUT_OF_MEMORY",
 * or "ACCEL_ERROR_UNKNOWN" for a value that is not a code
 */
ACCEL_EXPORT const char *accel_error_name(enum accel_error code);

/* ------------------------------------------------------------------ */
/* Devices and backends */

/* accel_get_device_count - number of visible devices, into *count */
ACCEL_EXPORT accel_status_t accel_get_device_count(size_t *count);

/*
 * accel_get_device_list - the ids of the visible devices
 * @ids: room for accel_get_device_count() entries; filled with 0..count-1
 */
ACCEL_EXPORT accel_status_t accel_get_device_list(size_t *ids);

/*
 * accel_get_device_name - the device's name, such as "accel:0" or "cpu:1"
 * @name: set to a string that stays valid for the life of the process
 */
ACCEL_EXPORT accel_status_t accel_get_device_name(const accel_device_t device,
						  const char **name);

/*
 * accel_find_device - the id of the visible device called @name
 * @name: "backend:N", or a bare backend name for its first visible device
 *
 * Fails if no visible device has that name.
 */
ACCEL_EXPORT accel_status_t accel_find_device(const char *name, int *id);

/*
 * accel_get_backend_info - whether a backend can be used, and why not
 * @backend: "accel", "cuda" or "cpu"
 * @available: set to 1 if the backend found devices, else 0
 * @reason: set to "" when available, else to why not in words (for
 *	example that no /dev/accel/accelN exists because simaccel.ko is not loaded)
 *
 * Fails only for a backend name this library does not know.
 */
ACCEL_EXPORT accel_status_t accel_get_backend_info(const char *backend,
						   int *available,
						   const char **reason);

/*
 * accel_device_synchronize - wait for all work submitted to the device's
 * streams so far
 */
ACCEL_EXPORT accel_status_t accel_device_synchronize(
	const accel_device_t device);

/* ------------------------------------------------------------------ */
/* Streams and events */

/* accel_stream_create - a new stream on @device, into *stream */
ACCEL_EXPORT accel_status_t accel_stream_create(const accel_device_t device,
						accel_stream_t *stream);

/*
 * accel_stream_destroy - wait for the stream's work, then destroy it
 *
 * Events recorded on it stay valid. Work that other threads are queueing on
 * it when it is destroyed is queued, and waited for, first; their later
 * calls with it are refused.
 */
ACCEL_EXPORT accel_status_t accel_stream_destroy(const accel_device_t device,
						 accel_stream_t stream);

/*
 * accel_stream_query - ACCEL_SUCCESS if all work submitted to @stream has
 * completed, ACCEL_WARNING if some is still pending, ACCEL_FAILED on an error
 */
ACCEL_EXPORT accel_status_t accel_stream_query(const accel_device_t device,
					       accel_stream_t stream);

/*
 * accel_stream_synchronize - wait until all work submitted to @stream has
 * completed
 *
 * Fails if any of that work failed since the last synchronization.
 */
ACCEL_EXPORT accel_status_t accel_stream_synchronize(
	const accel_device_t device, accel_stream_t stream);

/*
 * accel_stream_get_native - the backend's own handle of @stream, into
 * *native: its CUstream on a cuda device, which other CUDA libraries take
 * (the stream of __cuda_array_interface__ and of DLPack)
 *
 * Fails with ACCEL_ERROR_NOT_SUPPORTED on the other backends, whose
 * streams no other library knows.
 */
ACCEL_EXPORT accel_status_t accel_stream_get_native(const accel_device_t device,
						    accel_stream_t stream,
						    void **native);

/*
 * accel_native_stream_synchronize - wait for the work queued so far on
 * another library's stream of @device: a CUstream on a cuda device, where
 * 1 and 2 name CUDA's legacy and per-thread default streams (as the CUDA
 * array interface numbers them)
 *
 * Fails with ACCEL_ERROR_NOT_SUPPORTED on the other backends.
 */
ACCEL_EXPORT accel_status_t accel_native_stream_synchronize(
	const accel_device_t device, void *native);

/*
 * accel_native_stream_wait_event - make later work on another library's
 * stream @native of @device (a CUstream; NULL or 1: the legacy default
 * stream, 2: the calling thread's per-thread default stream) wait until the
 * work before @event's current record has completed, without blocking the
 * caller: how a consumer's stream is ordered after a libaccel stream (the
 * stream argument of DLPack's __dlpack__)
 *
 * As accel_stream_wait_event(): bound to the record current at the call;
 * an event of another device makes the caller wait instead. Fails with
 * ACCEL_ERROR_NOT_SUPPORTED on the other backends.
 */
ACCEL_EXPORT accel_status_t accel_native_stream_wait_event(
	const accel_device_t device, void *native, accel_event_t event);

/*
 * accel_stream_create_external - another library's stream @native of
 * @device as a libaccel stream, into *stream: work libaccel queues on it
 * (copies, sets, event records and waits, pool frees) runs in order with
 * that library's own work on it
 * @native: a CUstream of the device's primary context (the one the CUDA
 *	runtime, PyTorch, CuPy and Numba use); NULL or 1 for CUDA's legacy
 *	default stream. The per-thread default stream (2) is refused: it is
 *	another stream on each thread.
 *
 * The stream stays the other library's, which must keep it alive until
 * accel_stream_destroy() has returned: that waits for the work queued on
 * it so far, the other library's too, and leaves the CUstream alive.
 * Fails with ACCEL_ERROR_NOT_SUPPORTED on the other backends, and where
 * the driver tells, for a stream of another context.
 */
ACCEL_EXPORT accel_status_t accel_stream_create_external(
	const accel_device_t device, void *native, accel_stream_t *stream);

/*
 * accel_stream_wait_event - make later work on @stream wait until the work
 * before @event's last record has completed, without blocking the caller
 *
 * The wait is bound to the record current at this call (as CUDA's
 * cudaStreamWaitEvent): recording @event again later, on any stream, does
 * not change what @stream waits for. The event may belong to another
 * device; the caller then blocks until it has completed instead. An event
 * never recorded is already complete.
 */
ACCEL_EXPORT accel_status_t accel_stream_wait_event(const accel_device_t device,
						    accel_stream_t stream,
						    accel_event_t event);

/* accel_event_create - a new event on @device, into *event */
ACCEL_EXPORT accel_status_t accel_event_create(const accel_device_t device,
					       accel_event_t *event);

/*
 * accel_event_record - capture the work submitted to @stream so far in
 * @event, replacing what it captured before
 *
 * A query or synchronize sees the latest record only; waits queued before
 * this call keep the record they were bound to. A record on a stream with
 * no pending work is complete at once.
 */
ACCEL_EXPORT accel_status_t accel_event_record(const accel_device_t device,
					       accel_stream_t stream,
					       accel_event_t event);

/*
 * accel_event_query - ACCEL_SUCCESS if the captured work has completed,
 * ACCEL_WARNING if not yet, ACCEL_FAILED on an error
 */
ACCEL_EXPORT accel_status_t accel_event_query(const accel_device_t device,
					      accel_event_t event);

/* accel_event_synchronize - wait for the captured work to complete */
ACCEL_EXPORT accel_status_t accel_event_synchronize(const accel_device_t device,
						    accel_event_t event);

/*
 * accel_event_destroy - destroy @event
 *
 * Streams already waiting on it still wait for what it captured.
 */
ACCEL_EXPORT accel_status_t accel_event_destroy(const accel_device_t device,
						accel_event_t event);

/* ------------------------------------------------------------------ */
/* Memory: allocation */

/*
 * accel_device_memory_allocate - allocate @size bytes of device memory
 *
 * *ptr is set to the device address of the first byte, aligned to the
 * device's min chunk size. A size of 0 sets *ptr to NULL and succeeds. When
 * the device has not enough memory, *ptr is set to NULL and ACCEL_FAILED is
 * returned.
 */
ACCEL_EXPORT accel_status_t accel_device_memory_allocate(
	const accel_device_t device, void **ptr, size_t size);

/*
 * accel_device_memory_deallocate - free device memory
 * @ptr: exactly what accel_device_memory_allocate() returned (NULL with a
 *	size of 0 does nothing)
 * @size: the size it was allocated with
 *
 * A pointer that is not a live allocation of @device, or a size that does
 * not match, is an error and frees nothing. The call does not wait for the
 * device: the memory goes back to it once the work submitted before the
 * call, on every stream, has completed.
 */
ACCEL_EXPORT accel_status_t accel_device_memory_deallocate(
	const accel_device_t device, void *ptr, size_t size);

/*
 * accel_host_memory_allocate - allocate pinned host memory for @device
 *
 * The memory is ordinary host memory to the caller; copies between it and
 * @device need no staging and run asynchronously from it. Rules of
 * accel_device_memory_allocate() apply.
 */
ACCEL_EXPORT accel_status_t accel_host_memory_allocate(
	const accel_device_t device, void **ptr, size_t size);

/* accel_host_memory_deallocate - free pinned host memory; as above */
ACCEL_EXPORT accel_status_t accel_host_memory_deallocate(
	const accel_device_t device, void *ptr, size_t size);

/*
 * accel_unified_memory_allocate - allocate memory that is both host memory
 * and device memory of @device
 *
 * The one pointer may be dereferenced by the host and passed as the device
 * side or the host side of every copy and set of @device. It is device
 * memory: it must fit in the free memory, and it counts in the stats (the
 * cuda backend's CUDA managed memory is placed on the device when
 * allocated; the CUDA driver returns it to the free memory lazily after the
 * free). Rules of accel_device_memory_allocate() apply.
 */
ACCEL_EXPORT accel_status_t accel_unified_memory_allocate(
	const accel_device_t device, void **ptr, size_t size);

/*
 * accel_unified_memory_deallocate - free unified memory; as above
 *
 * (The plugin document writes void **ptr; Paddle's header and this library
 * take the pointer itself.)
 */
ACCEL_EXPORT accel_status_t accel_unified_memory_deallocate(
	const accel_device_t device, void *ptr, size_t size);

/*
 * accel_host_memory_register - pin the caller's host memory for @device
 * @ptr: start of the memory, any alignment
 * @size: bytes, at least 1
 *
 * Until unregistered, the range counts as pinned host memory of @device:
 * copies use it directly, and asynchronous ones read and write it when they
 * run (like cudaHostRegister). The memory stays the caller's; it must not
 * be freed before it is unregistered. A range that overlaps registered
 * memory or an allocation of @device is refused.
 */
ACCEL_EXPORT accel_status_t accel_host_memory_register(
	const accel_device_t device, void *ptr, size_t size);

/*
 * accel_host_memory_unregister - wait for the device's queued work, then
 * unpin memory registered at @ptr
 * @ptr: exactly what accel_host_memory_register() was given
 */
ACCEL_EXPORT accel_status_t accel_host_memory_unregister(
	const accel_device_t device, void *ptr);

/* ------------------------------------------------------------------ */
/* Memory: sharing device memory with other processes (CUDA's IPC calls) */

#define ACCEL_IPC_HANDLE_SIZE 128

/*
 * A handle on device memory that another process opens: plain bytes, which
 * the program passes as it likes (a pipe, a socket, a file, shared memory).
 */
typedef struct accel_ipc_mem_handle {
	unsigned char reserved[ACCEL_IPC_HANDLE_SIZE];
} accel_ipc_mem_handle_t;

/*
 * accel_ipc_get_mem_handle - a handle that another process opens on device
 * memory of this one (cudaIpcGetMemHandle)
 * @handle: set to the handle
 * @ptr: a byte of device memory of @device that this process allocated
 *	(accel_device_memory_allocate(), a pool, a memory object or array)
 *
 * The handle names the allocation holding @ptr (for a pool's memory, the
 * block): accel_ipc_open_mem_handle() gives its first byte. The same
 * allocation gives the same handle every time; an allocation made later at
 * the same address gives another. The handle can be opened while this
 * process lives and the allocation is not freed, by processes of the same
 * user. It is a capability: whoever has its bytes can open the memory, and
 * with it the whole backend allocation the memory is part of; a pool's
 * chunk holds other blocks too, so share pool memory only with processes
 * trusted with them, or allocate with ACCEL_POOL=off.
 *
 * Host, unified and registered memory, and memory opened from another
 * process's handle, are refused (ACCEL_ERROR_INVALID_VALUE). A backend that
 * cannot share memory fails with ACCEL_ERROR_NOT_SUPPORTED: today only the
 * accel backend can.
 */
ACCEL_EXPORT accel_status_t accel_ipc_get_mem_handle(
	const accel_device_t device, accel_ipc_mem_handle_t *handle, void *ptr);

/*
 * accel_ipc_open_mem_handle - open device memory that another process
 * exported (cudaIpcOpenMemHandle)
 * @ptr: set to the memory's first byte, device memory of @device
 * @handle: what accel_ipc_get_mem_handle() gave the other process
 *
 * Copies, fills and streams of @device use the memory as any of its device
 * memory, over the allocation's size and no further. @device may be
 * another device of the backend than the one the memory is on: its engine
 * then reaches the memory peer to peer. The memory stays allocated while
 * it is open, even after its exporter frees it or exits; but a pool's block
 * that its exporter frees goes back to that pool, which may give it out
 * again (as with PyTorch's caching allocator): the exporter keeps pool
 * memory until the processes that opened it are done with it. Opening a
 * handle that is open on @device gives the same pointer again; every open
 * needs its close.
 *
 * A handle on this process's own memory, of another backend or damaged is
 * refused with ACCEL_ERROR_INVALID_VALUE; one whose exporter has exited or
 * freed the memory, or does not know it (a changed handle), with
 * ACCEL_ERROR_INVALID_HANDLE.
 */
ACCEL_EXPORT accel_status_t accel_ipc_open_mem_handle(
	const accel_device_t device, void **ptr,
	const accel_ipc_mem_handle_t *handle);

/*
 * accel_ipc_close_mem_handle - close memory opened with
 * accel_ipc_open_mem_handle() (cudaIpcCloseMemHandle)
 * @ptr: exactly what accel_ipc_open_mem_handle() gave
 *
 * After the last close of @ptr the process no longer holds the memory;
 * work queued on it before the call still completes (as with a free).
 * The exporter's memory is untouched. The device memory deallocate
 * functions refuse opened memory.
 */
ACCEL_EXPORT accel_status_t accel_ipc_close_mem_handle(
	const accel_device_t device, void *ptr);

/* ------------------------------------------------------------------ */
/* Memory: copies and set */

/*
 * accel_memory_copy_h2d - copy @size bytes from host memory to device memory
 * and wait for completion
 * @dst: device (or unified) memory of @device
 * @src: any host memory: pageable, pinned or unified
 *
 * Sizes of 0 succeed and do nothing.
 */
ACCEL_EXPORT accel_status_t accel_memory_copy_h2d(const accel_device_t device,
						  void *dst, const void *src,
						  size_t size);

/* accel_memory_copy_d2h - copy device memory to host memory; as h2d */
ACCEL_EXPORT accel_status_t accel_memory_copy_d2h(const accel_device_t device,
						  void *dst, const void *src,
						  size_t size);

/*
 * accel_memory_copy_d2d - copy within the device memory of @device
 *
 * Ranges that overlap are refused (ACCEL_ERROR_INVALID_VALUE) on every
 * backend, by every d2d and p2p call: no backend orders their bytes (CUDA
 * leaves it undefined). The same range as source and destination is
 * allowed and changes nothing.
 */
ACCEL_EXPORT accel_status_t accel_memory_copy_d2d(const accel_device_t device,
						  void *dst, const void *src,
						  size_t size);

/*
 * accel_memory_copy_p2p - copy from device memory of @src_device to device
 * memory of @dst_device
 *
 * Devices of the accel backend copy directly, device to device. Between
 * devices of different backends the data goes through host memory. With the
 * same device on both sides this is a d2d copy.
 */
ACCEL_EXPORT accel_status_t accel_memory_copy_p2p(
	const accel_device_t dst_device, const accel_device_t src_device,
	void *dst, const void *src, size_t size);

/*
 * accel_async_memory_copy_h2d - queue an h2d copy on @stream and return
 *
 * A pageable source is captured before the call returns: the caller may
 * reuse or free it at once. A pinned or unified source is read when the copy
 * runs, so it must not change before the stream reaches that point.
 */
ACCEL_EXPORT accel_status_t accel_async_memory_copy_h2d(
	const accel_device_t device, accel_stream_t stream, void *dst,
	const void *src, size_t size);

/*
 * accel_async_memory_copy_d2h - queue a d2h copy on @stream and return
 *
 * @dst is written when the copy runs: read it after synchronizing.
 */
ACCEL_EXPORT accel_status_t accel_async_memory_copy_d2h(
	const accel_device_t device, accel_stream_t stream, void *dst,
	const void *src, size_t size);

/* accel_async_memory_copy_d2d - queue a d2d copy on @stream and return */
ACCEL_EXPORT accel_status_t accel_async_memory_copy_d2d(
	const accel_device_t device, accel_stream_t stream, void *dst,
	const void *src, size_t size);

/*
 * accel_async_memory_copy_p2p - queue a p2p copy and return
 * @stream: a stream of @dst_device or of @src_device; its device runs the
 *	copy
 *
 * Between devices of different backends the copy goes through host memory
 * and is not queued: the call waits for the work queued on @stream before
 * it and for both devices, copies, and returns when the copy is done.
 */
ACCEL_EXPORT accel_status_t accel_async_memory_copy_p2p(
	const accel_device_t dst_device, const accel_device_t src_device,
	accel_stream_t stream, void *dst, const void *src, size_t size);

/*
 * accel_device_memory_set - set @size bytes of device (or unified) memory at
 * @ptr to @value and wait for completion
 */
ACCEL_EXPORT accel_status_t accel_device_memory_set(const accel_device_t device,
						    void *ptr,
						    unsigned char value,
						    size_t size);

/* ------------------------------------------------------------------ */
/* Memory: stats and allocation policy */

/*
 * accel_device_memory_stats - bytes of device memory, in total and free
 *
 * free is what device allocations (and unified ones) can still take, for
 * all processes; total >= free.
 */
ACCEL_EXPORT accel_status_t accel_device_memory_stats(
	const accel_device_t device, size_t *total_memory, size_t *free_memory);

/*
 * accel_device_min_chunk_size - the allocation granule: a power of two that
 * every device allocation is aligned to, and the modulus a caching
 * allocator rounds its chunks to
 */
ACCEL_EXPORT accel_status_t accel_device_min_chunk_size(accel_device_t device,
							size_t *size);

/*
 * accel_device_max_chunk_size - the largest block a caching allocator should
 * carve from its chunks; larger requests should go to the device directly.
 * An eighth of the device's memory, at least the min chunk size.
 *
 * The chunk sizes (this one, the init and realloc sizes) follow from the
 * device's total memory, not from what is free at the moment of the call:
 * an allocator that reads them once, while the device is nearly full, is
 * not crippled for good. An allocator caps each attempt at what is free
 * then (accel_device_max_alloc_size()), as libaccel's pools do.
 */
ACCEL_EXPORT accel_status_t accel_device_max_chunk_size(accel_device_t device,
							size_t *size);

/*
 * accel_device_max_alloc_size - the largest single allocation worth trying
 * now: the free memory, rounded down to the min chunk size
 */
ACCEL_EXPORT accel_status_t accel_device_max_alloc_size(accel_device_t device,
							size_t *size);

/*
 * accel_device_extra_padding_size - bytes a caching allocator adds to each
 * request (0: allocations need no padding)
 */
ACCEL_EXPORT accel_status_t accel_device_extra_padding_size(
	accel_device_t device, size_t *size);

/*
 * accel_device_init_alloc_size - size of a caching allocator's first chunk:
 * 1/4096 of the device's memory, at least 2 MiB and at most 64 MiB, in
 * whole pages of the device, but no more than the max chunk size
 */
ACCEL_EXPORT accel_status_t accel_device_init_alloc_size(
	const accel_device_t device, size_t *size);

/*
 * accel_device_realloc_size - size of a caching allocator's later chunks;
 * as the init alloc size
 */
ACCEL_EXPORT accel_status_t accel_device_realloc_size(
	const accel_device_t device, size_t *size);

/* ------------------------------------------------------------------ */
/* Caching allocator */

/*
 * A pool caches device memory of one device: it takes chunks from the
 * device (accel_device_init_alloc_size() bytes first, then
 * accel_device_realloc_size() bytes, or the request if larger) and hands
 * out blocks carved from them, best fit, merging freed neighbours. Requests
 * are padded by accel_device_extra_padding_size() and rounded up to
 * accel_device_min_chunk_size(); larger ones than
 * accel_device_max_chunk_size() go to the device directly, and take whole
 * pages of the device (2 MiB on a CUDA GPU, the page on a simaccel device,
 * the min chunk size on a cpu device): such a block counts in the
 * statistics as the memory the device took for it.
 *
 * Streams. A block is allocated and freed for a stream (or for none). A
 * block freed on stream A is reused at once by later allocations for A,
 * since A runs its work in order; other streams get its memory only behind
 * an event recorded on A (they wait for A's earlier work on the device), and
 * allocations with no stream only once that work has completed. Freeing with
 * no stream does not wait: the block is reused (and a large one given back
 * to the device) only once the work submitted to every stream of the device
 * before the free has completed, as with cudaFreeAsync.
 *
 * Out of device memory, a pool waits for the work that its pending frees
 * are behind, takes those blocks back, gives back its idle chunks and tries
 * once more before it fails. Threads allocate with no global lock: each stream,
 * and each group of threads allocating with no stream, has its own arena.
 *
 * ACCEL_POOL=off in the environment makes every pool send every request
 * to the device (for debugging with tools that watch device allocations).
 * Block pointers are device pointers of the device: every copy and set
 * accepts them, with their bounds checked against the live block (the bytes
 * asked for): a range past it, or in a free part of a chunk, is refused.
 */
typedef struct accel_pool_handle *accel_pool_t;

/*
 * A pool's statistics, in bytes unless said otherwise. Once the calls that
 * change the pool have returned, every figure is exact and every peak is at
 * least its value; taken while other threads allocate and free, each figure
 * is exact at some moment of the call, not all at the same moment.
 */
struct accel_pool_stats {
	size_t reserved;	/* held from the device: chunks, large blocks */
	size_t reserved_peak;
	size_t allocated;	/* in live blocks, padded and rounded */
	size_t allocated_peak;
	size_t requested;	/* asked for by the live blocks' callers */
	size_t requested_peak;
	size_t chunks;		/* chunks held */
	size_t blocks;		/* live blocks */
	size_t free_blocks;	/* free blocks in the chunks */
	size_t largest_free;	/* the largest of them */
	size_t backend_allocs;	/* allocations from the device, in all */
	size_t backend_frees;	/* and frees */
	int caching;		/* 0 if ACCEL_POOL=off */
	/* Since LIBACCEL_1.1: */
	size_t active;		/* allocated, and freed blocks not yet reusable */
	size_t inactive_split;	/* free in chunks that hold other blocks */
	size_t allocations;	/* blocks handed out, in all */
	size_t frees;		/* blocks freed, in all */
	size_t ooms;		/* allocations that failed out of memory */
	size_t oom_retries;	/* tries again that an out-of-memory handler asked for */
	size_t limit;		/* accel_pool_set_limit(); 0: none */
	size_t release_threshold;	/* accel_pool_set_release_threshold() */
};

/*
 * accel_pool_create - a new, empty pool for @device
 *
 * Fails if ACCEL_POOL has a value other than "on", "off", "1" or "0".
 */
ACCEL_EXPORT accel_status_t accel_pool_create(const accel_device_t device,
					      accel_pool_t *pool);

/*
 * accel_device_pool - the device's default pool, created on first use and
 * kept for the life of the process
 */
ACCEL_EXPORT accel_status_t accel_device_pool(const accel_device_t device,
					      accel_pool_t *pool);

/*
 * accel_pool_destroy - wait for the device's queued work, then give all of
 * the pool's memory back to the device
 *
 * Blocks still allocated from it are freed too. The default pool cannot be
 * destroyed. A destroyed pool's handle is refused by every function.
 */
ACCEL_EXPORT accel_status_t accel_pool_destroy(accel_pool_t pool);

/*
 * accel_pool_allocate - a block of @size bytes of device memory for work on
 * @stream (NULL: no stream)
 *
 * *ptr is aligned to the min chunk size. A size of 0 sets *ptr to NULL and
 * succeeds. Out of memory, *ptr is NULL and ACCEL_FAILED is returned.
 */
ACCEL_EXPORT accel_status_t accel_pool_allocate(accel_pool_t pool,
						accel_stream_t stream,
						void **ptr, size_t size);

/*
 * accel_pool_deallocate - free a block after the work queued on @stream
 * so far (NULL: after all queued work of the device), without waiting for
 * it on the host (but a block larger than the max chunk size freed on a
 * stream waits for that stream's work)
 * @ptr: exactly what accel_pool_allocate() returned (NULL with a size of 0
 *	does nothing)
 * @size: the size it was allocated with
 *
 * The stream need not be the one the block was allocated for. A block the
 * pool took from the device (larger than the max chunk size, or any with
 * ACCEL_POOL=off) goes back to the device only once the work queued on
 * every stream has completed: a stream still using it by mistake gets
 * wrong data at worst, never memory the device has taken back. A pointer
 * that is not a live block of @pool, or a wrong size, is an error and frees
 * nothing.
 */
ACCEL_EXPORT accel_status_t accel_pool_deallocate(accel_pool_t pool,
						  accel_stream_t stream,
						  void *ptr, size_t size);

/*
 * accel_pool_trim - wait for the device's queued work, then give every
 * chunk with no live block back to the device
 */
ACCEL_EXPORT accel_status_t accel_pool_trim(accel_pool_t pool);

/* accel_pool_get_stats - the pool's statistics, into *stats */
ACCEL_EXPORT accel_status_t accel_pool_get_stats(
	accel_pool_t pool, struct accel_pool_stats *stats);

/*
 * accel_pool_reset_peaks - start the peaks afresh from the current
 * reserved, allocated and requested bytes
 */
ACCEL_EXPORT accel_status_t accel_pool_reset_peaks(accel_pool_t pool);

/*
 * accel_pool_set_limit - at most @bytes reserved from the device by @pool
 * (0: no limit, the default)
 *
 * An allocation that would take the pool's reserved bytes past the limit
 * fails with ACCEL_ERROR_OUT_OF_MEMORY, after the pool has settled its
 * pending frees and given back its idle chunks, even if the device has
 * room (as CuPy's set_limit). A limit below what the pool reserves now
 * takes nothing back: later allocations that need more memory from the
 * device fail until frees and trims bring it under (those the pool meets
 * from what it holds do not). The limit counts what the device holds for the pool: a chunk
 * it gives back while queued work may still use it stays reserved (in
 * the statistics, the limit and the cap) until that work is over, and an
 * allocation that needs its room waits for that work.
 */
ACCEL_EXPORT accel_status_t accel_pool_set_limit(accel_pool_t pool,
						 size_t bytes);

/*
 * accel_device_set_memory_fraction - at most @fraction of @device's total
 * memory reserved by all pools of @device in this process together
 * (torch.cuda.set_per_process_memory_fraction)
 * @fraction: greater than 0, at most 1 (1, the default: no cap)
 *
 * A pool allocation past the cap fails as one past a pool's limit. Memory
 * allocated with accel_device_memory_allocate() and the other raw
 * functions is not counted.
 */
ACCEL_EXPORT accel_status_t accel_device_set_memory_fraction(
	const accel_device_t device, double fraction);

/*
 * accel_pool_set_release_threshold - the idle memory @pool keeps
 *
 * At each synchronization of its device (accel_device_synchronize(), and
 * accel_stream_synchronize() and accel_event_synchronize() on its
 * streams and events), a pool that reserves more than @bytes gives idle
 * chunks back to the device until it reserves at most @bytes or has none
 * left, as CUDA's cudaMemPoolAttrReleaseThreshold. 0 gives back every idle
 * chunk; SIZE_MAX, the default, keeps them all (unlike CUDA, whose default
 * is 0) until accel_pool_trim() or an allocation that the device cannot
 * meet.
 */
ACCEL_EXPORT accel_status_t accel_pool_set_release_threshold(accel_pool_t pool,
							     size_t bytes);

/*
 * An out-of-memory handler: called when an allocation of @size bytes from
 * @pool cannot be met, with @user as it was given. It may free memory (of
 * this pool or any other) and returns nonzero for the pool to try once
 * more, 0 for the allocation to fail.
 */
typedef int (*accel_pool_oom_handler_t)(accel_pool_t pool, size_t size,
					void *user);

/*
 * accel_pool_set_oom_handler - call @handler (NULL: none, the default) when
 * an allocation from @pool fails out of memory, after the pool's own
 * retries
 *
 * The handler runs on the allocating thread, holding none of the pool's
 * locks: it may allocate and free with @pool itself. An allocation that
 * fails inside a handler (of any pool, on that thread) calls no handler
 * again; it fails. A try the handler asked for that fails too ends the
 * allocation with ACCEL_ERROR_OUT_OF_MEMORY. A handler must return: one
 * that leaves by longjmp() leaves its thread without handlers.
 */
ACCEL_EXPORT accel_status_t accel_pool_set_oom_handler(
	accel_pool_t pool, accel_pool_oom_handler_t handler, void *user);

/* ------------------------------------------------------------------ */
/* Allocation history and snapshots of a pool (since LIBACCEL_1.1) */

/* What a history event records. */
enum accel_pool_action {
	ACCEL_POOL_ALLOC,		/* a block handed out */
	ACCEL_POOL_FREE_REQUESTED,	/* a block freed by its caller */
	ACCEL_POOL_FREE_COMPLETED,	/* its memory reusable (or given back) */
	ACCEL_POOL_SEGMENT_ALLOC,	/* memory taken from the device */
	ACCEL_POOL_SEGMENT_FREE,	/* memory given back to the device */
};

/* A block's state, in a snapshot and after an event. */
enum accel_pool_block_state {
	ACCEL_POOL_BLOCK_FREE,		/* free, reusable */
	ACCEL_POOL_BLOCK_ALLOCATED,	/* live: handed out, not freed */
	ACCEL_POOL_BLOCK_PENDING_FREE,	/* freed, behind queued work */
};

/*
 * One event of a pool's history. A free that is not behind queued work
 * records FREE_REQUESTED and FREE_COMPLETED at once; one behind a stream's
 * work records FREE_COMPLETED when the pool finds that work over. Segment
 * events are a chunk or a block the pool took from the device (or gave
 * back): @size is the whole segment, @requested 0.
 */
struct accel_pool_event {
	int action;		/* enum accel_pool_action */
	int state;		/* enum accel_pool_block_state, after the event */
	uintptr_t addr;
	size_t size;		/* padded and rounded, as the pool counts it */
	size_t requested;	/* what the caller asked for */
	accel_stream_t stream;	/* of the call; NULL: none */
	uint64_t time_ns;	/* CLOCK_MONOTONIC, increasing along the history */
	/*
	 * The return address in the code that called accel_pool_allocate()
	 * or accel_pool_deallocate() (inside libaccel for the memory objects'
	 * storage, which allocates through them); NULL for the events that
	 * no such call caused.
	 */
	void *caller;
	uint64_t context;	/* the thread's accel_pool_set_history_context() */
};

/*
 * accel_pool_record_history - start recording @pool's allocation history
 * in a ring of the last @max_entries events, or stop (0), dropping what was
 * recorded
 *
 * A new size keeps the latest events that fit. Recording costs a lock and
 * a clock read per event; off, nothing measurable. The history is the
 * pool's, kept until it stops or the pool is destroyed.
 */
ACCEL_EXPORT accel_status_t accel_pool_record_history(accel_pool_t pool,
						      size_t max_entries);

/*
 * accel_pool_set_history_context - tag the events that the calling thread
 * causes from now on with @context (0: none, the default)
 *
 * The library only keeps the value: a caller (a language binding) maps it
 * to what it knows of the call, such as the Python frames that allocated.
 */
ACCEL_EXPORT void accel_pool_set_history_context(uint64_t context);

/* A block of a snapshot's segment, in address order. */
struct accel_pool_block_info {
	uintptr_t addr;
	size_t size;		/* padded and rounded */
	size_t requested;	/* 0 if free */
	int state;		/* enum accel_pool_block_state */
	/* the recorded events within [addr, addr + size), oldest first */
	size_t nhistory;
	const struct accel_pool_event *history;
};

/*
 * A segment: a chunk the pool took from the device, carved into blocks, or
 * a block it took from the device directly (larger than the max chunk
 * size, or any with ACCEL_POOL=off), a segment of one block.
 */
struct accel_pool_segment {
	uintptr_t addr;
	size_t size;
	/*
	 * the stream whose arena holds it; NULL for the arenas of calls with
	 * no stream, idle chunks that no arena holds, and direct blocks
	 * (their stream is in their history's ALLOC event)
	 */
	accel_stream_t stream;
	int direct;		/* a block from the device directly */
	size_t allocated;	/* in its ALLOCATED blocks */
	size_t active;		/* and in its PENDING_FREE ones */
	size_t nblocks;
	struct accel_pool_block_info *blocks;
};

/*
 * A pool at one moment: every segment with every block, and the history.
 * The totals are the segments' and the blocks': @reserved is what the
 * segments hold (accel_pool_stats.reserved), @allocated what ALLOCATED
 * blocks hold (.allocated), @active that and what PENDING_FREE blocks hold
 * (.active; a block freed behind queued work is pending, counted neither
 * as allocated nor as free, direct blocks as much as chunks' ones).
 */
struct accel_pool_snapshot {
	size_t reserved, allocated, active, requested;
	size_t nsegments;
	struct accel_pool_segment *segments;	/* by address */
	size_t history_max;	/* accel_pool_record_history()'s; 0: off */
	size_t nevents;
	struct accel_pool_event *events;	/* the history, oldest first */
};

/*
 * accel_pool_get_snapshot - every segment and block of @pool, with its
 * history, into a new *snapshot (NULL on failure) to free with
 * accel_pool_snapshot_free()
 *
 * The pool is held still while it is copied: the snapshot is one moment
 * of it, even while other threads allocate and free. Its totals agree
 * with accel_pool_get_stats() taken while no other call changes the
 * pool. It is the caller's: it stays valid after the pool is destroyed.
 */
ACCEL_EXPORT accel_status_t accel_pool_get_snapshot(
	accel_pool_t pool, struct accel_pool_snapshot **snapshot);

/* accel_pool_snapshot_free - free a snapshot (NULL: nothing) */
ACCEL_EXPORT void accel_pool_snapshot_free(struct accel_pool_snapshot *snapshot);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_H */
