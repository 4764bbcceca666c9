// SPDX-License-Identifier: MIT
/*
 * Resolving pointers: which allocation of the registry, pool block or
 * foreign allocation holds a range, so that every backend accepts and
 * refuses the same things and gets resolved sides.
 */
#include <string.h>

#include "memory/memory.h"

static const char *const kind_names[] = {
	[ACCEL_KIND_DEVICE] = "device",
	[ACCEL_KIND_HOST] = "pinned host",
	[ACCEL_KIND_UNIFIED] = "unified",
};

struct accel_registry *accel_space_of(struct accel_device *dev,
				       enum accel_kind kind)
{
	return kind == ACCEL_KIND_DEVICE ? &dev->dev_space : &dev->host_space;
}

const char *accel_kind_name(enum accel_kind kind)
{
	return kind_names[kind];
}

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
accel_status_t accel_resolve_device(struct accel_device *dev, const char *what,
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
accel_status_t accel_resolve_host(struct accel_device *dev, const char *what,
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
