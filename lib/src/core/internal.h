/* SPDX-License-Identifier: MIT */
/*
 * libaccel internals: devices, the backend interface, the allocation
 * registry and error reporting.
 */
#ifndef ACCEL_INTERNAL_H
#define ACCEL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <accel/accel.h>

#define ACCEL_MAX_DEVICES 64

/* What an allocation is. */
enum accel_kind {
	ACCEL_KIND_DEVICE,	/* device memory; addr is a device address */
	ACCEL_KIND_HOST,	/* pinned host memory; addr is a host pointer */
	ACCEL_KIND_UNIFIED,	/* both; addr is a host pointer */
};

/* One live allocation, as the registry keeps it. */
struct accel_allocation {
	uintptr_t addr;		/* the pointer the caller got */
	size_t size;		/* the size the caller asked for */
	enum accel_kind kind;
	uint64_t dev_addr;	/* where the device's DMA finds it */
	uint64_t handle;	/* the backend's name for it */
	bool pooled;		/* a chunk of a caching pool */
	bool registered;	/* the caller's host memory, pinned for us */
	/*
	 * in, to alloc() of HOST memory: the host writes it through a
	 * write-combined mapping and rarely reads it
	 */
	bool write_combined;
	/*
	 * memory another process exported, opened here ipc_opens times
	 * (accel_ipc_open_mem_handle): only its close frees it
	 */
	bool ipc;
	uint32_t ipc_opens;
	uint64_t buf_offset;	/* ... starting this far into its buffer */
};

/* Allocations of one address space, sorted by address. */
struct accel_registry {
	struct accel_allocation *v;
	size_t n, cap;
};

/*
 * One side of a transfer. A side inside a registered allocation carries a
 * copy of its record (pinned memory, device memory); a side in pageable
 * host memory has in_alloc false.
 */
struct accel_side {
	void *ptr;
	bool in_alloc;
	/*
	 * host memory that another device allocated (pinned or unified): a
	 * mapping of that device, which this one may be unable to pin
	 */
	bool other_device;
	struct accel_allocation alloc;
	size_t offset;		/* ptr - alloc.addr */
};

struct accel_device;

/*
 * What a backend provides. Every function returns ACCEL_SUCCESS or reports
 * the error with accel_error() and returns ACCEL_FAILED. The core has checked
 * every argument before it calls: devices, streams and events are live and
 * belong to the device, ranges lie inside allocations of the right kind,
 * sizes are not 0.
 *
 * A stream or event function gets the backend's own object (priv). Copy and
 * set functions get a stream's priv, or NULL for synchronous work, which
 * must be complete when they return.
 */
/* The bytes of an accel_ipc_mem_handle_t. */
struct accel_ipc_wire {
	char magic[4];		/* ACCEL_IPC_MAGIC */
	uint16_t version;	/* ACCEL_IPC_VERSION */
	uint16_t zero;
	char backend[8];	/* the backend's name */
	int32_t pid;		/* the exporting process */
	uint32_t zero2;
	uint64_t offset;	/* the memory in the backend's allocation */
	uint64_t size;
	unsigned char backend_data[88];
};

#define ACCEL_IPC_MAGIC "AIPC"
#define ACCEL_IPC_VERSION 1
_Static_assert(sizeof(struct accel_ipc_wire) == ACCEL_IPC_HANDLE_SIZE,
	       "an IPC handle's layout fills it");

/* What other libraries (DLPack's users, CUDA's) know a backend's memory as. */
enum accel_foreign {
	ACCEL_FOREIGN_OTHER,	/* devices of their own kind (DLPack's kDLExtDev) */
	ACCEL_FOREIGN_HOST,	/* host memory, all of it */
	ACCEL_FOREIGN_CUDA,	/* CUDA's devices, managed and pinned memory, streams */
};

struct accel_backend {
	const char *name;
	enum accel_foreign known_as;
	/*
	 * Percent of the free memory a single allocation cannot have (the
	 * driver's own needs); max_alloc_size leaves it out.
	 */
	unsigned int reserve_percent;
	/*
	 * Pinned host memory of one device is pinned for every device of
	 * this backend (CUDA's portable memory): it needs no registering
	 * with them.
	 */
	bool pinned_portable;
	/*
	 * Device memory is host memory: another device of the library may
	 * take it for pageable host memory in its transfers.
	 */
	bool device_memory_is_host;
	/* find devices; add each with accel_device_add() */
	accel_status_t (*probe)(char *why, size_t why_len);
	accel_status_t (*alloc)(struct accel_device *dev, enum accel_kind kind,
			  size_t size, struct accel_allocation *out);
	accel_status_t (*free)(struct accel_device *dev,
			 const struct accel_allocation *alloc);
	/* pin the caller's host memory [ptr, ptr + size) for transfers */
	accel_status_t (*host_register)(struct accel_device *dev, void *ptr,
				  size_t size, struct accel_allocation *out);
	accel_status_t (*host_unregister)(struct accel_device *dev,
				    const struct accel_allocation *alloc);
	/*
	 * Device or unified memory of @dev that the library did not allocate
	 * (another library's, the driver API's): the allocation holding @ptr
	 * into *out (addr, size, kind, dev_addr), or ACCEL_WARNING, reporting no
	 * error, if @ptr is none of @dev's. NULL: the backend cannot tell, and
	 * only the registry's allocations are @dev's.
	 */
	accel_status_t (*foreign)(struct accel_device *dev, const void *ptr,
			    struct accel_allocation *out);
	accel_status_t (*copy)(struct accel_device *dev, void *stream,
			 const struct accel_side *dst,
			 const struct accel_side *src, size_t size);
	accel_status_t (*set)(struct accel_device *dev, void *stream,
			const struct accel_side *dst, uint8_t value,
			size_t size);
	/*
	 * device to device between two devices of this backend; @run is the
	 * device whose engine (and stream, when not NULL) does the work
	 */
	accel_status_t (*copy_peer)(struct accel_device *run, void *stream,
			      struct accel_device *dst_dev,
			      const struct accel_side *dst,
			      struct accel_device *src_dev,
			      const struct accel_side *src, size_t size);
	accel_status_t (*stats)(struct accel_device *dev, size_t *total,
			  size_t *free);
	/*
	 * Sharing device memory with other processes; NULL if the backend
	 * cannot. ipc_export fills the backend's part of @w (whose offset
	 * and size are set) for its allocation @a; ipc_open imports the
	 * memory @w names for @dev into *out (addr, dev_addr and handle of
	 * its first byte), which free() gives back.
	 */
	accel_status_t (*ipc_export)(struct accel_device *dev,
			       const struct accel_allocation *a,
			       struct accel_ipc_wire *w);
	accel_status_t (*ipc_open)(struct accel_device *dev,
			     const struct accel_ipc_wire *w,
			     struct accel_allocation *out);
	/* the block at @offset of @a was freed: handles on it open nothing */
	void (*ipc_revoke)(struct accel_device *dev,
			   const struct accel_allocation *a, uint64_t offset);

	accel_status_t (*stream_create)(struct accel_device *dev, void **stream);
	/*
	 * Optional: another library's stream @native (NULL: CUDA's legacy
	 * default stream) as a stream of @dev, into *stream. It stays that
	 * library's: stream_destroy is not called for it.
	 */
	accel_status_t (*stream_adopt)(struct accel_device *dev, void *native,
				 void **stream);
	/* called after stream_drain: the stream is idle */
	void (*stream_destroy)(struct accel_device *dev, void *stream);
	/* ACCEL_SUCCESS idle, ACCEL_WARNING busy, ACCEL_FAILED work failed */
	accel_status_t (*stream_query)(struct accel_device *dev, void *stream);
	/*
	 * wait for the work queued before the call (work queued later, by any
	 * thread, must not delay it), report work that failed since the last
	 * report
	 */
	accel_status_t (*stream_sync)(struct accel_device *dev, void *stream);
	/* the same, reporting nothing */
	void (*stream_drain)(struct accel_device *dev, void *stream);

	accel_status_t (*event_create)(struct accel_device *dev, void **event);
	void (*event_destroy)(struct accel_device *dev, void *event);
	/*
	 * An event names the work queued before its latest record: a query or
	 * synchronize sees the latest record, a stream_wait_event the record
	 * current when it is called, whatever records follow; an event never
	 * recorded is complete (as CUDA's events).
	 */
	accel_status_t (*event_record)(struct accel_device *dev, void *stream,
				 void *event);
	accel_status_t (*event_query)(struct accel_device *dev, void *event);
	accel_status_t (*event_sync)(struct accel_device *dev, void *event);
	accel_status_t (*stream_wait_event)(struct accel_device *dev, void *stream,
				      void *event);
};

struct accel_pool;
struct accel_deferred;

struct accel_device {
	int id;			/* visible id, -1 while hidden */
	char name[32];		/* "backend:N" */
	const struct accel_backend *be;
	void *priv;		/* the backend's device */
	size_t min_chunk;	/* allocation granule, a power of two */
	/*
	 * What the device rounds an allocation's memory to (its page), a
	 * multiple of min_chunk: a caching allocator's chunks are multiples
	 * of it, so that none of what they occupy is lost. min_chunk unless
	 * the backend knows better.
	 */
	size_t chunk_granule;

	pthread_mutex_t reg_lock;
	struct accel_registry dev_space;	/* DEVICE allocations */
	struct accel_registry host_space;	/* HOST and UNIFIED ones */

	/*
	 * Readers wait for the streams (synchronous calls); writers add or
	 * remove a stream.
	 */
	pthread_rwlock_t stream_lock;
	struct accel_stream *streams;
	atomic_int nstreams;	/* so that draining no stream costs no lock */
	/*
	 * Bits of the visible devices whose streams queued work touching this
	 * device's memory (p2p copies): its frees wait for them too.
	 */
	_Atomic uint64_t users;

	/* freed allocations the backend gets back behind events (memory/deferred.c) */
	pthread_mutex_t deferred_lock;
	struct accel_deferred *_Atomic deferred;

	pthread_mutex_t pool_lock;	/* the list of pools */
	struct accel_pool *pools;
	/*
	 * What the pools reserve together, and at most
	 * (accel_device_set_memory_fraction(); SIZE_MAX: no cap); how many
	 * pools give idle memory back at synchronizations
	 */
	atomic_size_t pools_reserved;
	_Atomic size_t pools_cap;
	atomic_int pools_releasing;
	pthread_mutex_t default_pool_lock;
	struct accel_pool *default_pool;
};

/*
 * A stream and an event. The public struct accel_stream_handle and accel_event_handle are
 * never defined: an accel_stream_t or accel_event_t is a handle value, resolved through
 * the handle table, and cannot be dereferenced by mistake.
 */
/* A stream's checkpoints: a backend event every quarter of its depth. */
#define ACCEL_CHECKPOINTS 4

/* A backend event recorded after the stream's first @upto operations. */
struct accel_checkpoint {
	void *ev;
	uint64_t upto;
};

struct accel_stream {
	uintptr_t handle;	/* first: see handles.c */
	struct accel_device *dev;
	struct accel_stream *next;
	void *priv;
	bool external;	/* another library's, adopted: never destroyed */
	/*
	 * accel_stream_queued(): operations queued, how many of the first are
	 * known complete, and the checkpoints not yet waited for (room for
	 * twice those a stream needs, as threads may record out of order)
	 */
	_Atomic uint64_t queued;
	_Atomic uint64_t completed;
	pthread_mutex_t depth_lock;
	struct accel_checkpoint checkpoint[2 * ACCEL_CHECKPOINTS];
	unsigned int ncheckpoints;
};

struct accel_event {
	uintptr_t handle;	/* first: see handles.c */
	struct accel_device *dev;
	void *priv;
};

/*
 * A small thread-local variable every call touches: in the static TLS
 * block, reached without a call to __tls_get_addr. Kept to a few words, so
 * that a libaccel loaded with dlopen() (the Paddle plugin's) fits in the
 * room the dynamic loader keeps for such variables.
 */
#define ACCEL_TLS_HOT _Thread_local __attribute__((tls_model("initial-exec")))

/* error.c */
/* an error with the code ACCEL_ERROR_INVALID_VALUE: a bad argument */
accel_status_t accel_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* an error with another code */
accel_status_t accel_fail(enum accel_error code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define accel_oom_error(...) accel_fail(ACCEL_ERROR_OUT_OF_MEMORY, __VA_ARGS__)
#define accel_handle_error(...) accel_fail(ACCEL_ERROR_INVALID_HANDLE, __VA_ARGS__)
#define accel_fault_error(...) accel_fail(ACCEL_ERROR_DEVICE_FAULT, __VA_ARGS__)
/*
 * The thread's error as it was, to put back when a call succeeds after an
 * attempt inside it failed: a successful call leaves the error alone.
 */
struct accel_error_state {
	enum accel_error code;
	char message[512];
};
void accel_error_keep(struct accel_error_state *s);
void accel_error_restore(const struct accel_error_state *s);
/* an error with the code that @err (an errno) implies, and its text */
accel_status_t accel_errno_error(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * Name the public function whose errors follow, for their messages, until
 * it returns. A public function that another one calls does not rename
 * the error: the caller named in a message is the one the program called.
 */
const char *accel_enter(const char *func);
void accel_error_device(const struct accel_device *dev);
void accel_error_device_id(int id);
void accel_leave(const char *const *outer);
#define ACCEL_ENTER()							\
	const char *accel_outer_ __attribute__((cleanup(accel_leave), unused)) = \
		accel_enter(__func__)

/* device.c */
struct accel_device *accel_device_add(const struct accel_backend *be,
				      int index, void *priv,
				      size_t min_chunk);
struct accel_device *accel_device_lookup(const accel_device_t device);
struct accel_device *accel_device_by_id(int id);
/* Note that a stream of @run queued work touching memory of @owner. */
void accel_device_touch(struct accel_device *owner, struct accel_device *run);
/*
 * Note that a stream of @run queued an async transfer with a host side
 * none of @run's allocations (it may be memory of another device).
 */
void accel_device_touch_host(struct accel_device *run);
/* whether [ptr, ptr + size) shares a byte with host memory of a visible
 * device other than @dev */
bool accel_host_of_other_device(const struct accel_device *dev,
				const void *ptr, size_t size);

/* An event recorded on a stream of @dev. */
struct accel_mark {
	struct accel_device *dev;
	void *ev;
};

/* Which streams to mark: @dev's own ... */
#define ACCEL_MARK_OWN		0u
/* ... and those of devices that queued work touching its memory ... */
#define ACCEL_MARK_USERS	1u
/* ... and of devices that queued transfers with pageable memory to them */
#define ACCEL_MARK_HOST_USERS	2u

/*
 * Mark the work queued so far: an event recorded now on every busy stream
 * of @dev (and of the devices @which names), in a new array of *n (NULL
 * and 0 when every stream is idle). NULL with ACCEL_FAILED in *ret on error.
 */
struct accel_mark *accel_device_mark(struct accel_device *dev,
				     unsigned int which, size_t *n,
				     accel_status_t *ret);
/* whether all *n marks completed; destroys those that have, keeps the rest */
bool accel_marks_done(struct accel_mark *m, size_t *n);
/* wait for the n marks (ACCEL_FAILED if the backend reports a failure) */
accel_status_t accel_marks_sync(struct accel_mark *m, size_t n);
/* destroy the n marks' events (not the array) */
void accel_marks_destroy(struct accel_mark *m, size_t n);
/*
 * wait for the work queued before the call on every stream of @dev (and of
 * the devices @which names; no errors reported); work queued later does
 * not delay it
 */
void accel_device_drain_for(struct accel_device *dev, unsigned int which);
void accel_device_drain(struct accel_device *dev);
/* the same for every visible device whose bit (1 << id) @ids has */
void accel_devices_drain(uint64_t ids);
/*
 * accel_device_synchronize() of the visible devices whose bits @ids has,
 * at once: every stream is marked before any is waited for
 */
accel_status_t accel_devices_synchronize(uint64_t ids);

/* hooks.c */
/* What an address in a pool's backend allocation is part of. */
struct accel_pool_span {
	bool live;		/* a live block: base and size are the caller's */
	uintptr_t base;		/* the block's first byte */
	size_t size;		/* what the caller asked for (live), else its size */
};

/*
 * What the pools, a layer above, answer for the layers below them (the
 * pools set it once, at load: hooks.c). Until they do, no allocation is a
 * pool's and nothing is pending.
 */
struct accel_pool_hooks {
	bool (*span)(struct accel_device *dev, uintptr_t base, uintptr_t addr,
		     struct accel_pool_span *span);
	bool (*reclaim)(struct accel_device *dev, bool wait);
	void (*stream_gone)(struct accel_device *dev, struct accel_stream *st);
	void (*synchronized)(struct accel_device *dev);
	void (*probed)(void);
};

void accel_set_pool_hooks(const struct accel_pool_hooks *hooks);
/*
 * what @addr, in the backend allocation at @base that a pool of @dev took
 * (accel_allocation.pooled), is part of; false if no pool has that
 * allocation. Takes the pool locks: call it holding no reg_lock.
 */
bool accel_pool_span(struct accel_device *dev, uintptr_t base, uintptr_t addr,
		     struct accel_pool_span *span);
/*
 * give the device the large blocks of @dev's pools whose pending free is
 * over; @wait: after waiting for the work they are behind. Whether any was
 * pending. Call it holding no pool's lock.
 */
bool accel_pools_reclaim(struct accel_device *dev, bool wait);
/* @st was drained and is being destroyed: the pools let go of it */
void accel_pools_stream_gone(struct accel_device *dev, struct accel_stream *st);
/*
 * the host synchronized with @dev's work: pools with a release threshold
 * give idle memory back (cheap when none has one)
 */
void accel_pools_synchronized(struct accel_device *dev);
/* the devices are probed: the pools may start what watches them */
void accel_pools_probed(void);

/* stream.c */
/*
 * @stream if it is a live stream (of @dev, unless NULL), referenced
 * (accel_handle_put() it); else NULL with the error set
 */
struct accel_stream *accel_stream_lookup(struct accel_device *dev,
					 accel_stream_t stream);
/* after an operation was queued on @s: waits while @s holds too many */
accel_status_t accel_stream_queued(struct accel_stream *s);

/*
 * handles.c: the handle table. The values of accel_pool_t, accel_memory_t,
 * accel_array_t, accel_stream_t and accel_event_t name slots of it, not addresses: an
 * object the table serves begins with its uintptr_t handle value, which
 * accel_handle_new() sets.
 */
enum accel_handle_kind {
	ACCEL_HANDLE_POOL = 1,
	ACCEL_HANDLE_MEMORY,
	ACCEL_HANDLE_ARRAY,
	ACCEL_HANDLE_STREAM,
	ACCEL_HANDLE_EVENT,
};
/* give @obj a handle value (its first member); false when out of memory */
bool accel_handle_new(enum accel_handle_kind kind, void *obj);
/*
 * The live object of @kind that @value names, with a reference that keeps
 * it from being freed until accel_handle_put(); NULL for anything else:
 * ended handles, other kinds, forged values, NULL. Lock-free.
 */
void *accel_handle_get(const void *value, enum accel_handle_kind kind);
void accel_handle_put(const void *obj);
/* for __attribute__((cleanup)): put *@objp if not NULL */
void accel_handle_drop(void *objp);
#define ACCEL_HANDLE_REF __attribute__((cleanup(accel_handle_drop)))
/*
 * With a reference to @obj held: end its handle, so that every lookup of it
 * fails from now on, wait for the other calls that hold references to
 * return, and take the caller's reference with it; then the object is the
 * caller's alone, to free. False if another thread ended it first: the
 * caller's reference is still held.
 */
bool accel_handle_end(void *obj);
/*
 * accel_handle_end() in two steps, for a release that must look at the
 * object once it is alone with it and may then refuse: close (false as
 * above), then either retire (the handle is ended) or reopen (the handle
 * is live again, the caller's reference still held; lookups that came
 * between were refused).
 */
bool accel_handle_close(void *obj);
void accel_handle_retire(void *obj);
void accel_handle_reopen(void *obj);

/*
 * hazard.c: a hazard pointer per thread, a reference that costs its holder
 * no atomic read-modify-write. Take: publish @p as held by this thread
 * (false: it holds one already, or the kernel lacks membarrier(2); count a
 * reference instead). Drop: end this thread's hold of @p (false: it held
 * none). An ender marks its object dead, calls accel_hazard_sync(), then
 * waits while accel_hazard_held() says a thread still holds it.
 */
struct accel_hazard {
	_Atomic(const void *) held;
	atomic_bool taken;		/* by a live thread */
	struct accel_hazard *next;
};

extern ACCEL_TLS_HOT struct accel_hazard *accel_hazard_mine;
struct accel_hazard *accel_hazard_claim(void);
void accel_hazard_sync(void);
bool accel_hazard_held(const void *p);

static inline bool accel_hazard_take(const void *p)
{
	struct accel_hazard *r = accel_hazard_mine;

	if (!r && !(r = accel_hazard_claim()))
		return false;
	if (atomic_load_explicit(&r->held, memory_order_relaxed))
		return false;
	atomic_store_explicit(&r->held, p, memory_order_relaxed);
	/* the ender's membarrier() is the other half */
	atomic_signal_fence(memory_order_seq_cst);
	return true;
}

static inline bool accel_hazard_drop(const void *p)
{
	struct accel_hazard *r = accel_hazard_mine;

	if (!r || atomic_load_explicit(&r->held, memory_order_relaxed) != p)
		return false;
	atomic_store_explicit(&r->held, NULL, memory_order_release);
	return true;
}

/* registry.c */
accel_status_t accel_registry_insert(struct accel_registry *r,
			       const struct accel_allocation *a);
/* the allocation containing [addr, addr + size), or NULL */
const struct accel_allocation *accel_registry_find(const struct accel_registry *r,
					      uintptr_t addr, size_t size);
/* the allocation containing addr, or NULL */
const struct accel_allocation *accel_registry_find_addr(const struct accel_registry *r,
						   uintptr_t addr);
void accel_registry_remove(struct accel_registry *r,
			   const struct accel_allocation *a);
/* an allocation sharing a byte with [addr, addr + size), or NULL */
const struct accel_allocation *accel_registry_overlap(const struct accel_registry *r,
						 uintptr_t addr, size_t size);

/* util.c */
int accel_parse_size(const char *s, uint64_t *out);

extern const struct accel_backend accel_backend_driver;
extern const struct accel_backend accel_backend_cpu;
extern const struct accel_backend accel_backend_cuda;

#endif /* ACCEL_INTERNAL_H */
