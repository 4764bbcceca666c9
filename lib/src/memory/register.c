// SPDX-License-Identifier: MIT
/*
 * Registered host memory: the caller's pages, known to a device so that
 * its copies can use them directly.
 */
#include <string.h>

#include "memory/memory.h"

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
			   ptr, size, accel_kind_name(a->kind), (void *)a->addr,
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
	accel_device_drain_for(dev, accel_memory_users_of(ACCEL_KIND_HOST));
	return dev->be->host_unregister(dev, &gone);
}
