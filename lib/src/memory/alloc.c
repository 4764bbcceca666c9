// SPDX-License-Identifier: MIT
/*
 * Device, pinned and unified allocations: allocate and register, free
 * behind the work queued on them, and the pools' chunks.
 */
#include <string.h>

#include "memory/memory.h"

/*
 * Out of memory: wait for the work that pending frees are behind and give
 * their memory back; those of the pools too unless a pool is asking (it
 * holds its lock, and has taken back its own). True if any was pending.
 */
static bool settle_frees(struct accel_device *dev, bool pooled)
{
	bool any = accel_memory_reap_deferred(dev, true);

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
	accel_memory_reap_deferred(dev, false);
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
	if (accel_registry_insert(accel_space_of(dev, kind), &a) !=
	    ACCEL_SUCCESS) {
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
				   ptr, accel_kind_name(a->kind), (void *)a->addr,
				   a->size);
	if (a)
		return accel_error("%p is %s memory of %s, not %s memory; free it with the matching function",
				   ptr, accel_kind_name(a->kind), dev->name,
				   accel_kind_name(kind));
	return accel_error("%p is not a live %s allocation of %s (freed already, or never allocated there)",
			   ptr, accel_kind_name(kind), dev->name);
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
	a = accel_registry_find_addr(accel_space_of(dev, kind),
				     (uintptr_t)ptr);
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
	accel_registry_remove(accel_space_of(dev, kind), a);
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
