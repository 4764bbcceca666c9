// SPDX-License-Identifier: MIT
/*
 * The pools' answers to the layers below them: the memory layer, the core
 * and the backends ask here, the pools set them at load, so that no layer
 * calls one above it.
 */
#include "core/internal.h"

static const struct accel_pool_hooks *pool_hooks;

void accel_set_pool_hooks(const struct accel_pool_hooks *hooks)
{
	pool_hooks = hooks;
}

bool accel_pool_span(struct accel_device *dev, uintptr_t base, uintptr_t addr,
		     struct accel_pool_span *span)
{
	return pool_hooks && pool_hooks->span(dev, base, addr, span);
}

bool accel_pools_reclaim(struct accel_device *dev, bool wait)
{
	return pool_hooks && pool_hooks->reclaim(dev, wait);
}

void accel_pools_stream_gone(struct accel_device *dev, struct accel_stream *st)
{
	if (pool_hooks)
		pool_hooks->stream_gone(dev, st);
}

void accel_pools_probed(void)
{
	if (pool_hooks)
		pool_hooks->probed();
}

void accel_pools_synchronized(struct accel_device *dev)
{
	if (pool_hooks && atomic_load_explicit(&dev->pools_releasing,
					       memory_order_relaxed))
		pool_hooks->synchronized(dev);
}
