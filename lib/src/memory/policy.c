// SPDX-License-Identifier: MIT
/*
 * The device's memory statistics and the chunk-size policy that caching
 * allocators (the pools, Paddle's) read.
 */

#include "memory/memory.h"

/*
 * Before free memory is read: the pending frees whose work has completed,
 * the pools' too, are free. No pool lock held.
 */
static void take_back_completed(struct accel_device *dev)
{
	accel_pools_reclaim(dev, false);
	accel_memory_reap_deferred(dev, false);
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

	accel_memory_reap_deferred(dev, false);	/* a pool's lock may be held */
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
