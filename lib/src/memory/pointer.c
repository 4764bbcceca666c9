// SPDX-License-Identifier: MIT
/*
 * Pointer attributes: what the registries of the visible devices, and the
 * pools for their chunks, know of an address (cudaPointerGetAttributes).
 */
#include <string.h>

#include <accel/memory.h>

#include "memory/memory.h"

static enum accel_pointer_type type_of(const struct accel_allocation *a)
{
	switch (a->kind) {
	case ACCEL_KIND_DEVICE:
		return ACCEL_POINTER_DEVICE;
	case ACCEL_KIND_UNIFIED:
		return ACCEL_POINTER_UNIFIED;
	default:
		return a->registered ? ACCEL_POINTER_REGISTERED_HOST :
				       ACCEL_POINTER_PINNED_HOST;
	}
}

/* The allocation of @dev holding @ptr, into *@a; false if none. */
static bool find_in(struct accel_device *dev, const void *ptr,
		    struct accel_allocation *a)
{
	const struct accel_allocation *found;

	pthread_mutex_lock(&dev->reg_lock);
	found = accel_registry_find_addr(&dev->dev_space, (uintptr_t)ptr);
	if (!found)
		found = accel_registry_find_addr(&dev->host_space,
						 (uintptr_t)ptr);
	if (found)
		*a = *found;
	pthread_mutex_unlock(&dev->reg_lock);
	if (found)
		return true;
	/* memory of the device that another library allocated */
	memset(a, 0, sizeof(*a));
	return accel_foreign_memory(dev, ptr, a);
}

static void describe(struct accel_device *dev, const void *ptr,
		     const struct accel_allocation *a,
		     struct accel_pointer_attributes *attr)
{
	struct accel_pool_span span;

	attr->type = type_of(a);
	attr->device = dev->id;
	attr->base = (void *)a->addr;
	attr->size = a->size;
	if (!a->pooled)
		return;
	attr->pooled = 1;
	/* a chunk no pool lists is on its way out, with nothing live in it */
	if (!accel_pool_span(dev, a->addr, (uintptr_t)ptr, &span) ||
	    !span.live)
		return;
	/* the block's rounding tail is the pool's, not the caller's */
	if ((uintptr_t)ptr - span.base >= span.size)
		return;
	attr->block_live = 1;
	attr->block_base = (void *)span.base;
	attr->block_size = span.size;
}

accel_status_t accel_pointer_get_attributes(const void *ptr,
				      struct accel_pointer_attributes *attr)
{
	size_t ids[ACCEL_MAX_DEVICES], n;

	ACCEL_ENTER();
	if (!attr)
		return accel_error("attr is NULL");
	memset(attr, 0, sizeof(*attr));
	attr->type = ACCEL_POINTER_UNREGISTERED;
	attr->device = -1;
	if (accel_get_device_count(&n) != ACCEL_SUCCESS ||
	    accel_get_device_list(ids) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	for (size_t i = 0; ptr && i < n; i++) {
		struct accel_device_id d = { (int)ids[i] };
		struct accel_device *dev = accel_device_lookup(&d);
		struct accel_allocation a;

		if (dev && find_in(dev, ptr, &a)) {
			describe(dev, ptr, &a, attr);
			break;
		}
	}
	return ACCEL_SUCCESS;
}
