// SPDX-License-Identifier: MIT
/*
 * Device memory shared between processes: the handle names the backend's
 * allocation and the range of it that is the caller's (a pool's block is
 * part of a chunk); the backend moves the memory itself. Opened memory is
 * a registry allocation with ipc set, which only its last close frees.
 */
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "memory/memory.h"

/* whether this process ever made a handle: frees need not revoke before */
static atomic_bool exported;

/*
 * The allocation of this process holding @ptr, and the caller's range of
 * it ([*offset, *offset + *size)), for a handle.
 */
static accel_status_t exportable(struct accel_device *dev, void *ptr,
			   struct accel_allocation *a, uint64_t *offset,
			   uint64_t *size)
{
	const struct accel_allocation *found;
	struct accel_pool_span span;

	pthread_mutex_lock(&dev->reg_lock);
	found = accel_registry_find_addr(&dev->dev_space, (uintptr_t)ptr);
	if (found)
		*a = *found;
	pthread_mutex_unlock(&dev->reg_lock);
	if (!found)
		return accel_error("%p is not device memory of %s (host, unified and registered memory cannot be shared)",
				   ptr, dev->name);
	if (a->ipc)
		return accel_error("%p is another process's memory, opened from its handle: only that process can share it",
				   ptr);
	*offset = 0;
	*size = a->size;
	if (!a->pooled)
		return ACCEL_SUCCESS;
	if (!accel_pool_span(dev, a->addr, (uintptr_t)ptr, &span) ||
	    !span.live)
		return accel_error("%p is free memory of a caching pool on %s",
				   ptr, dev->name);
	*offset = span.base - a->addr;
	*size = span.size;
	return ACCEL_SUCCESS;
}

static accel_status_t no_ipc(struct accel_device *dev)
{
	return accel_fail(ACCEL_ERROR_NOT_SUPPORTED,
			  "%s: the %s backend cannot share memory with other processes",
			  dev->name, dev->be->name);
}

accel_status_t accel_ipc_get_mem_handle(const accel_device_t device,
				  accel_ipc_mem_handle_t *handle, void *ptr)
{
	struct accel_ipc_wire w;
	struct accel_allocation a;
	struct accel_device *dev;

	ACCEL_ENTER();
	if (handle)
		memset(handle, 0, sizeof(*handle));
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	if (!handle)
		return accel_error("handle is NULL");
	if (!ptr)
		return accel_error("ptr is NULL");
	if (!dev->be->ipc_export)
		return no_ipc(dev);
	memset(&w, 0, sizeof(w));
	if (exportable(dev, ptr, &a, &w.offset, &w.size) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	memcpy(w.magic, ACCEL_IPC_MAGIC, sizeof(w.magic));
	w.version = ACCEL_IPC_VERSION;
	memcpy(w.backend, dev->be->name,
	       strnlen(dev->be->name, sizeof(w.backend)));
	w.pid = getpid();
	atomic_store(&exported, true);
	if (dev->be->ipc_export(dev, &a, &w) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	memcpy(handle, &w, sizeof(w));
	return ACCEL_SUCCESS;
}

/* Is @w a handle of @dev's backend? (The backend knows its own.) */
static accel_status_t check_wire(struct accel_device *dev,
			   const struct accel_ipc_wire *w)
{
	if (memcmp(w->magic, ACCEL_IPC_MAGIC, sizeof(w->magic)) ||
	    w->version != ACCEL_IPC_VERSION || w->zero || w->zero2 ||
	    !w->size || w->offset + w->size < w->offset)
		return accel_error("the handle is not an IPC memory handle of libaccel (damaged, or of another version)");
	char name[sizeof(w->backend)] = { 0 };

	memcpy(name, dev->be->name, strnlen(dev->be->name, sizeof(name)));
	if (memcmp(w->backend, name, sizeof(name)))
		return accel_error("the handle is not memory of the %s backend of %s",
				   dev->be->name, dev->name);
	return ACCEL_SUCCESS;
}

/*
 * Register @a, opened memory; if it is open already, count this open and
 * give the backend's new reference back. *ptr: its first byte.
 */
static accel_status_t register_opened(struct accel_device *dev,
				struct accel_allocation *a, void **ptr)
{
	struct accel_allocation *open;
	accel_status_t ret;

	a->kind = ACCEL_KIND_DEVICE;
	a->ipc = true;
	a->ipc_opens = 1;
	pthread_mutex_lock(&dev->reg_lock);
	open = (struct accel_allocation *)
		accel_registry_overlap(&dev->dev_space, a->addr, a->size);
	if (open && open->ipc && open->addr == a->addr &&
	    open->size == a->size) {
		open->ipc_opens++;
		pthread_mutex_unlock(&dev->reg_lock);
		*ptr = (void *)a->addr;
		return dev->be->free(dev, a);
	}
	/*
	 * Another block at the place of one open (its exporter freed a pool
	 * block that is open here, and the pool gave it out again).
	 */
	ret = open ? accel_error("the handle's memory overlaps memory opened from another handle on %s: its exporter reused a block that is open",
				 dev->name) :
		     accel_registry_insert(&dev->dev_space, a);
	pthread_mutex_unlock(&dev->reg_lock);
	if (ret != ACCEL_SUCCESS) {
		dev->be->free(dev, a);
		return ACCEL_FAILED;
	}
	*ptr = (void *)a->addr;
	return ACCEL_SUCCESS;
}

accel_status_t accel_ipc_open_mem_handle(const accel_device_t device, void **ptr,
				   const accel_ipc_mem_handle_t *handle)
{
	struct accel_allocation a;
	struct accel_ipc_wire w;
	struct accel_device *dev;

	ACCEL_ENTER();
	if (!ptr)
		return accel_error("ptr is NULL");
	*ptr = NULL;
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	if (!handle)
		return accel_error("handle is NULL");
	if (!dev->be->ipc_open)
		return no_ipc(dev);
	memcpy(&w, handle, sizeof(w));
	if (check_wire(dev, &w) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	memset(&a, 0, sizeof(a));
	if (dev->be->ipc_open(dev, &w, &a) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	a.size = w.size;
	return register_opened(dev, &a, ptr);
}

accel_status_t accel_ipc_close_mem_handle(const accel_device_t device, void *ptr)
{
	struct accel_allocation *a, gone;
	struct accel_device *dev;

	ACCEL_ENTER();
	dev = accel_device_lookup(device);
	if (!dev)
		return ACCEL_FAILED;
	pthread_mutex_lock(&dev->reg_lock);
	a = (struct accel_allocation *)
		accel_registry_find_addr(&dev->dev_space, (uintptr_t)ptr);
	if (!a || !a->ipc || a->addr != (uintptr_t)ptr) {
		pthread_mutex_unlock(&dev->reg_lock);
		return accel_error("%p is not memory of %s opened with accel_ipc_open_mem_handle() (closed already, or never opened)",
				   ptr, dev->name);
	}
	if (--a->ipc_opens) {
		pthread_mutex_unlock(&dev->reg_lock);
		return ACCEL_SUCCESS;
	}
	gone = *a;
	accel_registry_remove(&dev->dev_space, a);
	pthread_mutex_unlock(&dev->reg_lock);
	/* no transfer queued before may still use it when it goes */
	return accel_memory_free_behind(dev, &gone);
}

void accel_ipc_revoke(struct accel_device *dev,
		      const struct accel_allocation *a, const void *ptr)
{
	if (atomic_load(&exported) && dev->be->ipc_revoke)
		dev->be->ipc_revoke(dev, a, (uintptr_t)ptr - a->addr);
}

void accel_ipc_revoke_block(struct accel_device *dev, const void *ptr)
{
	const struct accel_allocation *found;
	struct accel_allocation a;

	if (!atomic_load(&exported) || !dev->be->ipc_revoke)
		return;
	pthread_mutex_lock(&dev->reg_lock);
	found = accel_registry_find_addr(&dev->dev_space, (uintptr_t)ptr);
	if (found)
		a = *found;
	pthread_mutex_unlock(&dev->reg_lock);
	if (found)
		accel_ipc_revoke(dev, &a, ptr);
}
