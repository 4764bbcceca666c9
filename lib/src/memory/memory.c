// SPDX-License-Identifier: MIT
/*
 * The memory functions: allocation, copies, set, stats and the chunk-size
 * policy. The core resolves every pointer against the registry, so that
 * every backend accepts and refuses the same things, then hands the backend
 * resolved sides.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

/* Pageable host data between devices of different backends goes in pieces. */
#define BOUNCE_CHUNK (4u << 20)

static const char *const kind_names[] = {
	[ACCEL_KIND_DEVICE] = "device",
	[ACCEL_KIND_HOST] = "pinned host",
	[ACCEL_KIND_UNIFIED] = "unified",
};

static struct accel_registry *space_of(struct accel_device *dev,
				       enum accel_kind kind)
{
	return kind == ACCEL_KIND_DEVICE ? &dev->dev_space : &dev->host_space;
}

/* ------------------------------------------------------------------ */
/* Resolving pointers */

static accel_status_t side_in(const struct accel_allocation *a, void *ptr,
			struct accel_side *side)
{
	side->ptr = ptr;
	side->in_alloc = true;
	side->other_device = false;
	side->alloc = *a;
	side->offset = (uintptr_t)ptr - a->addr;
	return ACCEL_SUCCESS;
}

/* [ptr, ptr + size) starts in the allocation at @base but runs past it. */
static accel_status_t runs_past(struct accel_device *dev, const char *what,
			  const void *ptr, size_t size, uintptr_t base,
			  size_t alloc_size)
{
	return accel_error("%s range %p + %zu runs past the end of its allocation (%p, %zu bytes) on %s",
			   what, ptr, size, (void *)base, alloc_size,
			   dev->name);
}

/* Why [ptr, ptr + size) is no device memory of @dev. Caller holds reg_lock. */
static accel_status_t not_device_memory(struct accel_device *dev, const char *what,
				  const void *ptr, size_t size)
{
	const struct accel_allocation *a;

	a = accel_registry_find_addr(&dev->dev_space, (uintptr_t)ptr);
	if (!a) {
		a = accel_registry_find_addr(&dev->host_space, (uintptr_t)ptr);
		if (a && a->kind == ACCEL_KIND_HOST)
			return accel_error("%s %p is pinned host memory, not device memory of %s",
					   what, ptr, dev->name);
	}
	if (a)
		return runs_past(dev, what, ptr, size, a->addr, a->size);
	return accel_error("%s %p is not device memory of %s (never allocated there, or freed)",
			   what, ptr, dev->name);
}

/*
 * A pool's chunk is one allocation to the registry, but the caller owns
 * only a live block of it: [ptr, ptr + size) must lie in that block. No
 * reg_lock held.
 */
static accel_status_t check_pooled(struct accel_device *dev, const char *what,
			     const void *ptr, size_t size,
			     const struct accel_allocation *a)
{
	struct accel_pool_span span;
	uintptr_t p = (uintptr_t)ptr;

	if (!a->pooled)
		return ACCEL_SUCCESS;
	/*
	 * A pooled allocation no pool lists is a block or chunk on its way
	 * back to the device (freed behind queued work): nothing in it is
	 * the caller's.
	 */
	if (!accel_pool_span(dev, a->addr, p, &span) || !span.live)
		return accel_error("%s %p is free memory of a caching pool on %s (freed already, or never allocated)",
				   what, ptr, dev->name);
	/* the block's rounding tail is the pool's, not the caller's */
	if (p - span.base > span.size || size > span.size - (p - span.base))
		return runs_past(dev, what, ptr, size, span.base, span.size);
	return ACCEL_SUCCESS;
}

/*
 * Is [ptr, ptr + size) in device or unified memory of @dev that another
 * library allocated, as the backend tells? Then *side is in it. Caller
 * holds reg_lock, and the pointer is none of the registry's.
 */
static bool foreign_memory(struct accel_device *dev, const void *ptr,
			   size_t size, struct accel_side *side)
{
	struct accel_allocation a;

	memset(&a, 0, sizeof(a));
	if (!accel_foreign_memory(dev, ptr, &a) ||
	    size > a.size - ((uintptr_t)ptr - a.addr))
		return false;
	side_in(&a, (void *)ptr, side);
	return true;
}

/* [ptr, ptr + size) must lie in one device or unified allocation of @dev. */
static accel_status_t resolve_device(struct accel_device *dev, const char *what,
			       const void *ptr, size_t size,
			       struct accel_side *side)
{
	const struct accel_allocation *a;
	accel_status_t ret = ACCEL_SUCCESS;

	if (!ptr)
		return accel_error("%s is NULL", what);
	pthread_mutex_lock(&dev->reg_lock);
	a = accel_registry_find(&dev->dev_space, (uintptr_t)ptr, size);
	if (!a) {
		a = accel_registry_find(&dev->host_space, (uintptr_t)ptr, size);
		if (a && a->kind != ACCEL_KIND_UNIFIED)
			a = NULL;
	}
	if (a)
		ret = side_in(a, (void *)ptr, side);
	else if (!foreign_memory(dev, ptr, size, side))
		ret = not_device_memory(dev, what, ptr, size);
	pthread_mutex_unlock(&dev->reg_lock);
	if (ret == ACCEL_SUCCESS)
		ret = check_pooled(dev, what, ptr, size, &side->alloc);
	return ret;
}

/*
 * Host memory: anything but device memory of @dev. Pinned and unified
 * allocations of @dev are recognised so the backend can use them directly.
 */
static accel_status_t resolve_host(struct accel_device *dev, const char *what,
			     const void *ptr, size_t size,
			     struct accel_side *side)
{
	const struct accel_allocation *a;
	accel_status_t ret = ACCEL_SUCCESS;

	if (!ptr)
		return accel_error("%s is NULL", what);
	memset(side, 0, sizeof(*side));
	side->ptr = (void *)ptr;
	pthread_mutex_lock(&dev->reg_lock);
	a = accel_registry_find_addr(&dev->dev_space, (uintptr_t)ptr);
	if (a) {
		ret = accel_error("%s %p is device memory of %s, not host memory",
				  what, ptr, dev->name);
	} else if ((a = accel_registry_find(&dev->host_space, (uintptr_t)ptr,
					    size))) {
		side_in(a, (void *)ptr, side);
	} else if ((a = accel_registry_find_addr(&dev->host_space,
						 (uintptr_t)ptr)) &&
		   !a->registered) {
		/* the library's pinned or unified memory: its size is known */
		ret = runs_past(dev, what, ptr, size, a->addr, a->size);
	}
	pthread_mutex_unlock(&dev->reg_lock);
	if (ret == ACCEL_SUCCESS && !side->in_alloc)
		side->other_device = accel_host_of_other_device(dev, ptr, size);
	return ret;
}

static struct accel_side side_advance(const struct accel_side *s, size_t n)
{
	struct accel_side r = *s;

	r.ptr = (char *)s->ptr + n;
	r.offset += n;
	return r;
}

/* ------------------------------------------------------------------ */
/* Deferred frees */

/* A freed allocation, given back to the backend once its events complete. */
struct accel_deferred {
	struct accel_allocation alloc;
	struct accel_deferred *next;
	size_t nevents;
	struct accel_mark events[];
};

bool accel_foreign_memory(struct accel_device *dev, const void *ptr,
			  struct accel_allocation *a)
{
	uintptr_t p = (uintptr_t)ptr;
	struct accel_deferred *d;
	bool ours = false;

	if (!dev->be->foreign || dev->be->foreign(dev, ptr, a) != ACCEL_SUCCESS)
		return false;
	pthread_mutex_lock(&dev->deferred_lock);
	d = atomic_load_explicit(&dev->deferred, memory_order_relaxed);
	for (; d && !ours; d = d->next)
		ours = p - d->alloc.addr < d->alloc.size;
	pthread_mutex_unlock(&dev->deferred_lock);
	return !ours;
}

/*
 * Give the backend the deferred allocations whose work is over (@wait: all
 * of them, after waiting for their work). True if any was given back.
 */
static bool reap_deferred(struct accel_device *dev, bool wait)
{
	struct accel_deferred *done = NULL, *kept = NULL, **tail = &kept;
	struct accel_deferred *d, *next;

	if (!atomic_load_explicit(&dev->deferred, memory_order_acquire))
		return false;
	pthread_mutex_lock(&dev->deferred_lock);
	d = atomic_load_explicit(&dev->deferred, memory_order_relaxed);
	for (; d; d = next) {
		next = d->next;
		if (wait)
			accel_marks_sync(d->events, d->nevents);
		if (accel_marks_done(d->events, &d->nevents)) {
			d->next = done;
			done = d;
		} else {
			*tail = d;
			tail = &d->next;
		}
	}
	*tail = NULL;
	atomic_store_explicit(&dev->deferred, kept, memory_order_release);
	pthread_mutex_unlock(&dev->deferred_lock);
	for (d = done; d; d = next) {
		next = d->next;
		dev->be->free(dev, &d->alloc);
		free(d);
	}
	return done;
}

/*
 * Which streams may still touch an allocation of @kind: the device's own,
 * those of devices that queued p2p work on its memory, and for memory the
 * host reaches, those of devices that took it for pageable memory.
 */
static unsigned int users_of(enum accel_kind kind)
{
	return ACCEL_MARK_USERS |
	       (kind != ACCEL_KIND_DEVICE ? ACCEL_MARK_HOST_USERS : 0);
}

/*
 * Give @gone (out of the registry already) back to the backend once the
 * work queued so far on every stream that may touch it is over, with no
 * wait on the host; now if those streams are idle, after a drain if there
 * is no host memory to remember it.
 */
accel_status_t accel_memory_free_behind(struct accel_device *dev,
				  const struct accel_allocation *gone)
{
	struct accel_deferred *d = NULL;
	struct accel_mark *m;
	size_t n;
	accel_status_t ret;

	reap_deferred(dev, false);
	m = accel_device_mark(dev, users_of(gone->kind), &n, &ret);
	if (m)
		d = malloc(sizeof(*d) + n * sizeof(*m));
	if (!d) {
		accel_marks_destroy(m, n);
		free(m);
		if (ret != ACCEL_SUCCESS || m)
			accel_device_drain_for(dev, users_of(gone->kind));
		return dev->be->free(dev, gone);
	}
	d->alloc = *gone;
	d->nevents = n;
	memcpy(d->events, m, n * sizeof(*m));
	free(m);
	pthread_mutex_lock(&dev->deferred_lock);
	d->next = atomic_load_explicit(&dev->deferred, memory_order_relaxed);
	atomic_store_explicit(&dev->deferred, d, memory_order_release);
	pthread_mutex_unlock(&dev->deferred_lock);
	return ACCEL_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Allocation */

/*
 * Out of memory: wait for the work that pending frees are behind and give
 * their memory back; those of the pools too unless a pool is asking (it
 * holds its lock, and has taken back its own). True if any was pending.
 */
static bool settle_frees(struct accel_device *dev, bool pooled)
{
	bool any = reap_deferred(dev, true);

	if (!pooled && accel_pools_reclaim(dev, true))
		any = true;
	return any;
}

/* Allocate and register; the caller has checked its arguments. */
static accel_status_t alloc_registered(struct accel_device *dev, size_t size,
				 enum accel_kind kind, bool pooled, bool wc,
				 void **ptr)
{
	struct accel_error_state before;
	struct accel_allocation a;

	memset(&a, 0, sizeof(a));
	a.write_combined = wc;
	reap_deferred(dev, false);
	accel_error_keep(&before);
	if (dev->be->alloc(dev, kind, size, &a) != ACCEL_SUCCESS &&
	    (!settle_frees(dev, pooled) ||
	     dev->be->alloc(dev, kind, size, &a) != ACCEL_SUCCESS))
		return ACCEL_FAILED;
	accel_error_restore(&before);	/* the first try may have failed */
	a.size = size;
	a.kind = kind;
	a.pooled = pooled;
	pthread_mutex_lock(&dev->reg_lock);
	if (accel_registry_insert(space_of(dev, kind), &a) != ACCEL_SUCCESS) {
		pthread_mutex_unlock(&dev->reg_lock);
		dev->be->free(dev, &a);
		return ACCEL_FAILED;
	}
	pthread_mutex_unlock(&dev->reg_lock);
	*ptr = (void *)a.addr;
	return ACCEL_SUCCESS;
}

static accel_status_t allocate(const accel_device_t device, void **ptr, size_t size,
			 enum accel_kind kind)
{
	struct accel_device *dev;

	if (!ptr)
		return accel_error("ptr is NULL");
	*ptr = NULL;
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	if (!size)
		return ACCEL_SUCCESS;
	return alloc_registered(dev, size, kind, false, false, ptr);
}

accel_status_t accel_memory_alloc(struct accel_device *dev, size_t size,
			    bool pooled, void **ptr)
{
	return alloc_registered(dev, size, ACCEL_KIND_DEVICE, pooled, false,
				ptr);
}

accel_status_t accel_memory_alloc_host(struct accel_device *dev, size_t size,
				 bool wc, void **ptr)
{
	return alloc_registered(dev, size, ACCEL_KIND_HOST, false, wc, ptr);
}

/* Stream-ordered: no wait for the device (pools free chunks under locks). */
void accel_memory_free_pooled(struct accel_device *dev, void *ptr)
{
	const struct accel_allocation *a;
	struct accel_allocation gone;

	pthread_mutex_lock(&dev->reg_lock);
	a = accel_registry_find_addr(&dev->dev_space, (uintptr_t)ptr);
	gone = *a;
	accel_registry_remove(&dev->dev_space, a);
	pthread_mutex_unlock(&dev->reg_lock);
	accel_memory_free_behind(dev, &gone);
}

void accel_memory_free_pooled_idle(struct accel_device *dev, void *ptr)
{
	const struct accel_allocation *a;
	struct accel_allocation gone;

	pthread_mutex_lock(&dev->reg_lock);
	a = accel_registry_find_addr(&dev->dev_space, (uintptr_t)ptr);
	gone = *a;
	accel_registry_remove(&dev->dev_space, a);
	pthread_mutex_unlock(&dev->reg_lock);
	dev->be->free(dev, &gone);
}

/* Why @ptr is not an allocation to free here. Caller holds reg_lock. */
static accel_status_t not_freeable(struct accel_device *dev, enum accel_kind kind,
			     const void *ptr, const struct accel_allocation *a)
{
	if (a && a->addr != (uintptr_t)ptr)
		return accel_error("%p is inside the %s allocation at %p (%zu bytes); pass that base pointer",
				   ptr, kind_names[a->kind], (void *)a->addr,
				   a->size);
	if (a)
		return accel_error("%p is %s memory of %s, not %s memory; free it with the matching function",
				   ptr, kind_names[a->kind], dev->name,
				   kind_names[kind]);
	return accel_error("%p is not a live %s allocation of %s (freed already, or never allocated there)",
			   ptr, kind_names[kind], dev->name);
}

static accel_status_t deallocate(const accel_device_t device, void *ptr, size_t size,
			   enum accel_kind kind)
{
	struct accel_device *dev = accel_device_lookup(device);
	const struct accel_allocation *a;
	struct accel_allocation gone;

	if (!dev)
		return ACCEL_FAILED;
	if (!ptr && !size)
		return ACCEL_SUCCESS;
	if (!ptr)
		return accel_error("ptr is NULL but size is %zu", size);

	pthread_mutex_lock(&dev->reg_lock);
	a = accel_registry_find_addr(space_of(dev, kind), (uintptr_t)ptr);
	if (!a && kind != ACCEL_KIND_DEVICE)	/* for a clear message */
		a = accel_registry_find_addr(&dev->dev_space, (uintptr_t)ptr);
	if (!a || a->addr != (uintptr_t)ptr || a->kind != kind) {
		not_freeable(dev, kind, ptr, a);
		pthread_mutex_unlock(&dev->reg_lock);
		return ACCEL_FAILED;
	}
	if (a->pooled || a->registered || a->ipc) {
		pthread_mutex_unlock(&dev->reg_lock);
		return accel_error(a->pooled ?
				   "%p belongs to a caching pool; free it with accel_pool_deallocate()" :
				   a->ipc ?
				   "%p is another process's memory, opened with accel_ipc_open_mem_handle(); close it with accel_ipc_close_mem_handle()" :
				   "%p is the caller's memory, registered with accel_host_memory_register(); unregister it instead",
				   ptr);
	}
	if (a->size != size) {
		pthread_mutex_unlock(&dev->reg_lock);
		return accel_error("size %zu does not match the size %zu that %p was allocated with",
				   size, a->size, ptr);
	}
	gone = *a;
	accel_registry_remove(space_of(dev, kind), a);
	pthread_mutex_unlock(&dev->reg_lock);
	accel_ipc_revoke(dev, &gone, ptr);

	/* no transfer queued before may still use it when it goes */
	return accel_memory_free_behind(dev, &gone);
}

accel_status_t accel_device_memory_allocate(const accel_device_t device, void **ptr,
				      size_t size)
{
	ACCEL_ENTER();
	return allocate(device, ptr, size, ACCEL_KIND_DEVICE);
}

accel_status_t accel_device_memory_deallocate(const accel_device_t device, void *ptr,
					size_t size)
{
	ACCEL_ENTER();
	return deallocate(device, ptr, size, ACCEL_KIND_DEVICE);
}

accel_status_t accel_host_memory_allocate(const accel_device_t device, void **ptr,
				    size_t size)
{
	ACCEL_ENTER();
	return allocate(device, ptr, size, ACCEL_KIND_HOST);
}

accel_status_t accel_host_memory_deallocate(const accel_device_t device, void *ptr,
				      size_t size)
{
	ACCEL_ENTER();
	return deallocate(device, ptr, size, ACCEL_KIND_HOST);
}

accel_status_t accel_unified_memory_allocate(const accel_device_t device, void **ptr,
				       size_t size)
{
	ACCEL_ENTER();
	return allocate(device, ptr, size, ACCEL_KIND_UNIFIED);
}

accel_status_t accel_unified_memory_deallocate(const accel_device_t device, void *ptr,
					 size_t size)
{
	ACCEL_ENTER();
	return deallocate(device, ptr, size, ACCEL_KIND_UNIFIED);
}

accel_status_t accel_memory_kind_of(struct accel_device *dev, const void *ptr,
			      size_t size, bool *found, enum accel_kind *kind)
{
	const struct accel_allocation *a;
	struct accel_allocation copy;

	memset(&copy, 0, sizeof(copy));
	pthread_mutex_lock(&dev->reg_lock);
	a = accel_registry_find_addr(&dev->dev_space, (uintptr_t)ptr);
	if (!a)
		a = accel_registry_find_addr(&dev->host_space, (uintptr_t)ptr);
	if (a)
		copy = *a;
	pthread_mutex_unlock(&dev->reg_lock);
	/* else memory of the device that another library allocated */
	*found = a || accel_foreign_memory(dev, ptr, &copy);
	if (!*found)
		return ACCEL_SUCCESS;
	*kind = copy.kind;
	if (size > copy.size - ((uintptr_t)ptr - copy.addr))
		return accel_error("%p + %zu runs past the end of its %s allocation (%p, %zu bytes) on %s",
				   ptr, size, kind_names[copy.kind],
				   (void *)copy.addr, copy.size, dev->name);
	return check_pooled(dev, "the", ptr, size, &copy);
}

/* ------------------------------------------------------------------ */
/* Registered host memory */

/* Why [ptr, ptr + size) cannot be registered. Caller holds reg_lock. */
static accel_status_t overlap_error(struct accel_device *dev, const void *ptr,
			      size_t size)
{
	const struct accel_allocation *a;

	a = accel_registry_overlap(&dev->host_space, (uintptr_t)ptr, size);
	if (!a)
		a = accel_registry_overlap(&dev->dev_space, (uintptr_t)ptr,
					   size);
	if (!a)
		return ACCEL_SUCCESS;
	if (a->registered)
		return accel_error("%p + %zu overlaps host memory already registered with %s at %p (%zu bytes)",
				   ptr, size, dev->name, (void *)a->addr,
				   a->size);
	return accel_error("%p + %zu overlaps the %s allocation at %p (%zu bytes) of %s, which needs no registering",
			   ptr, size, kind_names[a->kind], (void *)a->addr,
			   a->size, dev->name);
}

accel_status_t accel_host_memory_register(const accel_device_t device, void *ptr,
				    size_t size)
{
	struct accel_device *dev;
	struct accel_allocation a;
	accel_status_t ret;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	if (!ptr || !size)
		return accel_error("nothing to register: ptr %p, size %zu",
				   ptr, size);
	if (size > UINTPTR_MAX - (uintptr_t)ptr)
		return accel_error("%p + %zu wraps around the address space",
				   ptr, size);
	memset(&a, 0, sizeof(a));
	pthread_mutex_lock(&dev->reg_lock);
	ret = overlap_error(dev, ptr, size);
	if (ret == ACCEL_SUCCESS)
		ret = dev->be->host_register(dev, ptr, size, &a);
	if (ret == ACCEL_SUCCESS) {
		a.addr = (uintptr_t)ptr;
		a.size = size;
		a.kind = ACCEL_KIND_HOST;
		a.registered = true;
		ret = accel_registry_insert(&dev->host_space, &a);
		if (ret != ACCEL_SUCCESS)
			dev->be->host_unregister(dev, &a);
	}
	pthread_mutex_unlock(&dev->reg_lock);
	return ret;
}

accel_status_t accel_host_memory_unregister(const accel_device_t device, void *ptr)
{
	const struct accel_allocation *a;
	struct accel_allocation gone;
	struct accel_device *dev;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	pthread_mutex_lock(&dev->reg_lock);
	a = accel_registry_find_addr(&dev->host_space, (uintptr_t)ptr);
	if (!a || !a->registered || a->addr != (uintptr_t)ptr) {
		pthread_mutex_unlock(&dev->reg_lock);
		return accel_error("%p is not the start of host memory registered with %s",
				   ptr, dev->name);
	}
	gone = *a;
	accel_registry_remove(&dev->host_space, a);
	pthread_mutex_unlock(&dev->reg_lock);

	/* no transfer may still use it */
	accel_device_drain_for(dev, users_of(ACCEL_KIND_HOST));
	return dev->be->host_unregister(dev, &gone);
}

/* ------------------------------------------------------------------ */
/* Copies within one device */

enum direction { H2D, D2H, D2D };

static accel_status_t resolve_pair(struct accel_device *dev, enum direction dir,
			     void *dst, const void *src, size_t size,
			     struct accel_side *d, struct accel_side *s)
{
	accel_status_t ret;

	if (dir == D2H)
		ret = resolve_host(dev, "dst", dst, size, d);
	else
		ret = resolve_device(dev, "dst", dst, size, d);
	if (ret != ACCEL_SUCCESS)
		return ret;
	if (dir == H2D)
		return resolve_host(dev, "src", src, size, s);
	return resolve_device(dev, "src", src, size, s);
}

/*
 * Overlapping ranges have no order of bytes that every backend keeps
 * (CUDA leaves it undefined, a cpu device copies with memcpy()): refused
 * everywhere. The same range is no overlap to order: *@same, and nothing
 * to copy.
 */
static accel_status_t refuse_overlap(const struct accel_device *dev,
				     const void *dst, const void *src,
				     size_t size, bool *same)
{
	uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;

	*same = d == s;
	if (*same || d >= s + size || s >= d + size)
		return ACCEL_SUCCESS;
	return accel_error("the destination %p and the source %p of a %zu-byte copy on %s overlap",
			   dst, src, size, dev->name);
}

static accel_status_t copy_sync(const accel_device_t device, enum direction dir,
			  void *dst, const void *src, size_t size)
{
	struct accel_device *dev = accel_device_lookup(device);
	struct accel_side d, s;

	if (!dev)
		return ACCEL_FAILED;
	bool same = false;

	if (!size)
		return ACCEL_SUCCESS;
	if (resolve_pair(dev, dir, dst, src, size, &d, &s) != ACCEL_SUCCESS ||
	    (dir == D2D && refuse_overlap(dev, dst, src, size, &same)))
		return ACCEL_FAILED;
	accel_device_drain(dev);
	return same ? ACCEL_SUCCESS : dev->be->copy(dev, NULL, &d, &s, size);
}

static accel_status_t copy_async(const accel_device_t device, accel_stream_t stream,
			   enum direction dir, void *dst, const void *src,
			   size_t size)
{
	struct accel_device *dev = accel_device_lookup(device);
	struct accel_stream *st ACCEL_HANDLE_REF = NULL;
	struct accel_side d, s;

	if (!dev)
		return ACCEL_FAILED;
	st = accel_stream_lookup(dev, stream);
	if (!st)
		return ACCEL_FAILED;
	bool same = false;

	if (!size)
		return ACCEL_SUCCESS;
	if (resolve_pair(dev, dir, dst, src, size, &d, &s) != ACCEL_SUCCESS ||
	    (dir == D2D && refuse_overlap(dev, dst, src, size, &same)))
		return ACCEL_FAILED;
	if (same)
		return ACCEL_SUCCESS;
	if ((dir == D2H && !d.in_alloc) || (dir == H2D && !s.in_alloc))
		accel_device_touch_host(dev);	/* maybe another's memory */
	if (dev->be->copy(dev, st->priv, &d, &s, size) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return accel_stream_queued(st);
}

accel_status_t accel_memory_copy_h2d(const accel_device_t device, void *dst,
			       const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_sync(device, H2D, dst, src, size);
}

accel_status_t accel_memory_copy_d2h(const accel_device_t device, void *dst,
			       const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_sync(device, D2H, dst, src, size);
}

accel_status_t accel_memory_copy_d2d(const accel_device_t device, void *dst,
			       const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_sync(device, D2D, dst, src, size);
}

accel_status_t accel_async_memory_copy_h2d(const accel_device_t device, accel_stream_t stream,
				     void *dst, const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_async(device, stream, H2D, dst, src, size);
}

accel_status_t accel_async_memory_copy_d2h(const accel_device_t device, accel_stream_t stream,
				     void *dst, const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_async(device, stream, D2H, dst, src, size);
}

accel_status_t accel_async_memory_copy_d2d(const accel_device_t device, accel_stream_t stream,
				     void *dst, const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_async(device, stream, D2D, dst, src, size);
}

/* ------------------------------------------------------------------ */
/* Copies between devices */

/* Through host memory, for devices of different backends. */
static accel_status_t copy_bounce(struct accel_device *dst_dev,
			    const struct accel_side *d,
			    struct accel_device *src_dev,
			    const struct accel_side *s, size_t size)
{
	size_t chunk = size < BOUNCE_CHUNK ? size : BOUNCE_CHUNK;
	struct accel_side host = { 0 };
	accel_status_t ret = ACCEL_SUCCESS;

	host.ptr = malloc(chunk);
	if (!host.ptr)
		return accel_oom_error("out of host memory for a %zu-byte bounce buffer",
				   chunk);
	for (size_t done = 0; done < size && ret == ACCEL_SUCCESS; done += chunk) {
		struct accel_side dn = side_advance(d, done);
		struct accel_side sn = side_advance(s, done);

		if (chunk > size - done)
			chunk = size - done;
		ret = src_dev->be->copy(src_dev, NULL, &host, &sn, chunk);
		if (ret == ACCEL_SUCCESS)
			ret = dst_dev->be->copy(dst_dev, NULL, &dn, &host, chunk);
	}
	free(host.ptr);
	return ret;
}

static accel_status_t copy_between(const accel_device_t dst_device,
			     const accel_device_t src_device, accel_stream_t stream,
			     void *dst, const void *src, size_t size)
{
	struct accel_device *dd = accel_device_lookup(dst_device);
	struct accel_device *sd = dd ? accel_device_lookup(src_device) : NULL;
	struct accel_stream *st ACCEL_HANDLE_REF = NULL;
	struct accel_device *run = sd;
	struct accel_side d, s;
	bool same = false;

	if (!sd)
		return ACCEL_FAILED;
	if (stream) {
		st = accel_stream_lookup(NULL, stream);
		if (!st)
			return ACCEL_FAILED;
		if (st->dev != dd && st->dev != sd)
			return accel_handle_error("stream %p is not a live stream of %s or %s",
					   (void *)stream, dd->name, sd->name);
		run = st->dev;
	}
	if (!size)
		return ACCEL_SUCCESS;
	if (resolve_device(dd, "dst", dst, size, &d) != ACCEL_SUCCESS ||
	    resolve_device(sd, "src", src, size, &s) != ACCEL_SUCCESS ||
	    refuse_overlap(dd, dst, src, size, &same))
		return ACCEL_FAILED;
	if (dd == sd) {
		/* a d2d copy: synchronous ones wait for what came before */
		if (!st)
			accel_device_drain(dd);
		if (same)
			return ACCEL_SUCCESS;
		if (!st)
			return dd->be->copy(dd, NULL, &d, &s, size);
		if (dd->be->copy(dd, st->priv, &d, &s, size) != ACCEL_SUCCESS)
			return ACCEL_FAILED;
		return accel_stream_queued(st);
	}
	if (dd->be == sd->be && st) {
		/* a free of either side must wait for this stream too */
		accel_device_touch(dd, run);
		accel_device_touch(sd, run);
		if (run->be->copy_peer(run, st->priv, dd, &d, sd, &s, size) !=
		    ACCEL_SUCCESS)
			return ACCEL_FAILED;
		return accel_stream_queued(st);
	}

	/* synchronous from here on: wait for what came before */
	if (st && run->be->stream_sync(run, st->priv) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	/* both devices' streams marked before either is waited for */
	accel_devices_drain((uint64_t)1 << dd->id | (uint64_t)1 << sd->id);
	if (dd->be == sd->be)
		return sd->be->copy_peer(sd, NULL, dd, &d, sd, &s, size);
	return copy_bounce(dd, &d, sd, &s, size);
}

accel_status_t accel_memory_copy_p2p(const accel_device_t dst_device,
			       const accel_device_t src_device, void *dst,
			       const void *src, size_t size)
{
	ACCEL_ENTER();
	return copy_between(dst_device, src_device, NULL, dst, src, size);
}

accel_status_t accel_async_memory_copy_p2p(const accel_device_t dst_device,
				     const accel_device_t src_device,
				     accel_stream_t stream, void *dst,
				     const void *src, size_t size)
{
	ACCEL_ENTER();
	if (!stream)
		return accel_error("the stream is NULL");
	return copy_between(dst_device, src_device, stream, dst, src, size);
}

/* ------------------------------------------------------------------ */
/* Set */

accel_status_t accel_device_memory_set(const accel_device_t device, void *ptr,
				 unsigned char value, size_t size)
{
	struct accel_device *dev;
	struct accel_side d;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	if (!size)
		return ACCEL_SUCCESS;
	if (resolve_device(dev, "ptr", ptr, size, &d) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	accel_device_drain(dev);
	return dev->be->set(dev, NULL, &d, value, size);
}

/* ------------------------------------------------------------------ */
/* Stats and the chunk-size policy */

/*
 * Before free memory is read: the pending frees whose work has completed,
 * the pools' too, are free. No pool lock held.
 */
static void take_back_completed(struct accel_device *dev)
{
	accel_pools_reclaim(dev, false);
	reap_deferred(dev, false);
}

accel_status_t accel_device_memory_stats(const accel_device_t device,
				   size_t *total_memory, size_t *free_memory)
{
	struct accel_device *dev;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	if (!total_memory || !free_memory)
		return accel_error("%s is NULL",
				   total_memory ? "free_memory" : "total_memory");
	take_back_completed(dev);
	return dev->be->stats(dev, total_memory, free_memory);
}

enum policy { MIN_CHUNK, MAX_CHUNK, MAX_ALLOC, EXTRA_PADDING, INIT_ALLOC,
	      REALLOC };

/*
 * Chunks a caching allocator grows by: 1/4096 of the device, 2-64 MiB,
 * whole pages of the device.
 */
#define GROWTH_MIN (2ul << 20)
#define GROWTH_MAX (64ul << 20)

static size_t round_up(size_t size, size_t granule)
{
	return (size + granule - 1) / granule * granule;
}

static size_t growth_size(size_t total)
{
	size_t g = total / 4096;

	return g < GROWTH_MIN ? GROWTH_MIN : g > GROWTH_MAX ? GROWTH_MAX : g;
}

/* The largest allocation worth trying with @free bytes free. */
static size_t max_alloc_of(struct accel_device *dev, size_t free)
{
	return (free - free / 100 * dev->be->reserve_percent) &
	       ~(dev->min_chunk - 1);
}

accel_status_t accel_memory_max_alloc(struct accel_device *dev, size_t *size)
{
	size_t total, free;

	reap_deferred(dev, false);	/* a pool's lock may be held */
	if (dev->be->stats(dev, &total, &free) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	*size = max_alloc_of(dev, free);
	return ACCEL_SUCCESS;
}

/*
 * Blocks up to an eighth of the device come from a caching allocator's
 * chunks. The chunks themselves are small enough that an allocator holds
 * little more than it hands out, and large enough that it rarely calls the
 * device. Both follow from the device's total memory, not from what is
 * free now: an allocator reads them once, and a moment when the device is
 * nearly full must not cripple it for good. Only max_alloc_size is what is
 * free now; an allocator caps an attempt at it (as the pools do).
 */
static accel_status_t dev_policy(struct accel_device *dev, size_t *size,
				 enum policy what)
{
	size_t total, free, min, max_chunk, growth;

	min = dev->min_chunk;
	if (what == MIN_CHUNK || what == EXTRA_PADDING) {
		*size = what == MIN_CHUNK ? min : 0;
		return ACCEL_SUCCESS;
	}
	if (what == MAX_ALLOC)
		take_back_completed(dev);
	if (dev->be->stats(dev, &total, &free) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	max_chunk = (total / 8) & ~(min - 1);
	if (max_chunk >= dev->chunk_granule)
		max_chunk -= max_chunk % dev->chunk_granule;
	if (max_chunk < min)
		max_chunk = min;
	growth = round_up(growth_size(total), dev->chunk_granule);
	switch (what) {
	case MAX_CHUNK:
		*size = max_chunk;
		break;
	case MAX_ALLOC:
		*size = max_alloc_of(dev, free);
		break;
	default:
		*size = growth < max_chunk ? growth : max_chunk;
		break;
	}
	return ACCEL_SUCCESS;
}

static accel_status_t policy(accel_device_t device, size_t *size, enum policy what)
{
	struct accel_device *dev = accel_device_lookup(device);

	if (!dev)
		return ACCEL_FAILED;
	if (!size)
		return accel_error("size is NULL");
	return dev_policy(dev, size, what);
}

accel_status_t accel_memory_chunk_policy(struct accel_device *dev,
					 struct accel_chunk_policy *p)
{
	if (dev_policy(dev, &p->granule, MIN_CHUNK) != ACCEL_SUCCESS ||
	    dev_policy(dev, &p->padding, EXTRA_PADDING) != ACCEL_SUCCESS ||
	    dev_policy(dev, &p->max_chunk, MAX_CHUNK) != ACCEL_SUCCESS ||
	    dev_policy(dev, &p->init_size, INIT_ALLOC) != ACCEL_SUCCESS ||
	    dev_policy(dev, &p->realloc_size, REALLOC) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	p->alloc_granule = dev->chunk_granule;
	return ACCEL_SUCCESS;
}

accel_status_t accel_device_min_chunk_size(accel_device_t device, size_t *size)
{
	ACCEL_ENTER();
	return policy(device, size, MIN_CHUNK);
}

accel_status_t accel_device_max_chunk_size(accel_device_t device, size_t *size)
{
	ACCEL_ENTER();
	return policy(device, size, MAX_CHUNK);
}

accel_status_t accel_device_max_alloc_size(accel_device_t device, size_t *size)
{
	ACCEL_ENTER();
	return policy(device, size, MAX_ALLOC);
}

accel_status_t accel_device_extra_padding_size(accel_device_t device, size_t *size)
{
	ACCEL_ENTER();
	return policy(device, size, EXTRA_PADDING);
}

accel_status_t accel_device_init_alloc_size(const accel_device_t device, size_t *size)
{
	ACCEL_ENTER();
	return policy(device, size, INIT_ALLOC);
}

accel_status_t accel_device_realloc_size(const accel_device_t device, size_t *size)
{
	ACCEL_ENTER();
	return policy(device, size, REALLOC);
}
