// SPDX-License-Identifier: MIT
/*
 * Deferred frees: an allocation freed while queued work may still touch
 * it goes back to the backend once that work is over, with no wait on the
 * host.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

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
bool accel_memory_reap_deferred(struct accel_device *dev, bool wait)
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
unsigned int accel_memory_users_of(enum accel_kind kind)
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

	accel_memory_reap_deferred(dev, false);
	m = accel_device_mark(dev, accel_memory_users_of(gone->kind), &n,
			      &ret);
	if (m)
		d = malloc(sizeof(*d) + n * sizeof(*m));
	if (!d) {
		accel_marks_destroy(m, n);
		free(m);
		if (ret != ACCEL_SUCCESS || m)
			accel_device_drain_for(dev,
				accel_memory_users_of(gone->kind));
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
