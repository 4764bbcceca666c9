// SPDX-License-Identifier: MIT
/*
 * Host access to memory handles (the Taichi runtime's map, unmap, read and
 * write). Taichi crashes when device-only memory is mapped; here the call
 * fails and says why.
 */
#include <string.h>

#include "objects/object.h"

static const char *access_name(unsigned int access)
{
	switch (access) {
	case ACCEL_MAP_READ:
		return "read";
	case ACCEL_MAP_WRITE:
		return "write";
	default:
		return "read and write";
	}
}

/* Whether @st lets the host @access it. */
static accel_status_t may_access(const struct storage *st, unsigned int access)
{
	if (!access || access & ~(unsigned int)(ACCEL_MAP_READ | ACCEL_MAP_WRITE))
		return accel_error("access %#x is not ACCEL_MAP_READ and/or ACCEL_MAP_WRITE",
				   access);
	if (!st->flags)
		return accel_fail(ACCEL_ERROR_NOT_SUPPORTED, "device-only memory cannot be mapped, read or written by the host; allocate it with ACCEL_MEMORY_HOST_READ and/or ACCEL_MEMORY_HOST_WRITE");
	if (access & ~st->flags)
		return accel_error("the memory was allocated without host %s access",
				   access_name(access & ~st->flags));
	return ACCEL_SUCCESS;
}

/*
 * The devices whose queued work may write @st's bytes: its own, that of
 * the storage the bytes belong to (a view's producer), and those that
 * queued transfers on host memory.
 */
static uint64_t writers_of(struct storage *st)
{
	struct storage *own = storage_owner(st);

	return atomic_load(&st->async_devs) | atomic_load(&own->async_devs) |
	       device_bits(st->dev_id) | device_bits(own->dev_id);
}

/* Map @mem, which is in use, once more. */
static accel_status_t map_used(struct accel_memory *mem, unsigned int access,
			 void **ptr)
{
	struct storage *st = mem->st;
	uint64_t ids = writers_of(st);

	if (may_access(st, access) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	/* the host must see what queued work wrote */
	if (ids && accel_devices_synchronize(ids) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	atomic_fetch_add(&storage_owner(st)->maps, 1);
	*ptr = st->ptr ? (char *)st->ptr + mem->offset : NULL;
	return ACCEL_SUCCESS;
}

static accel_status_t unmap_used(struct accel_memory *mem)
{
	struct storage *own = storage_owner(mem->st);
	int maps = atomic_load(&own->maps);

	do {
		if (!maps)
			return accel_error("the memory is not mapped");
	} while (!atomic_compare_exchange_weak(&own->maps, &maps, maps - 1));
	/* write-combined stores reach the device before its next transfer */
	atomic_thread_fence(memory_order_seq_cst);
	return ACCEL_SUCCESS;
}

accel_status_t accel_memory_map(accel_memory_t mem, unsigned int access,
			  void **ptr)
{
	struct accel_memory *m;
	accel_status_t ret;

	ACCEL_ENTER();
	if (!ptr)
		return accel_error("ptr is NULL");
	*ptr = NULL;
	m = memory_use(mem);
	if (!m)
		return ACCEL_FAILED;
	ret = map_used(m, access, ptr);
	memory_done(m);
	return ret;
}

accel_status_t accel_memory_unmap(accel_memory_t mem)
{
	struct accel_memory *m;
	accel_status_t ret;

	ACCEL_ENTER();
	m = memory_use(mem);
	if (!m)
		return ACCEL_FAILED;
	ret = unmap_used(m);
	memory_done(m);
	return ret;
}

/* Copy between the start of @mem and @host through a mapping. */
static accel_status_t through_map(accel_memory_t mem, void *host, size_t bytes,
			    unsigned int access)
{
	struct accel_memory *m;
	void *mapped;
	accel_status_t ret;

	m = memory_use(mem);
	if (!m)
		return ACCEL_FAILED;
	if (bytes > m->entries * m->dtype->size)
		ret = accel_error("%zu bytes are more than the memory's %zu",
				  bytes, m->entries * m->dtype->size);
	else if (bytes && !host)
		ret = accel_error("the host buffer is NULL");
	else
		ret = map_used(m, access, &mapped);
	if (ret == ACCEL_SUCCESS) {
		if (bytes && access == ACCEL_MAP_READ)
			memcpy(host, mapped, bytes);
		else if (bytes)
			memcpy(mapped, host, bytes);
		ret = unmap_used(m);
	}
	memory_done(m);
	return ret;
}

accel_status_t accel_memory_read(accel_memory_t mem, void *dst, size_t bytes)
{
	ACCEL_ENTER();
	return through_map(mem, dst, bytes, ACCEL_MAP_READ);
}

accel_status_t accel_memory_write(accel_memory_t mem, const void *src,
			    size_t bytes)
{
	ACCEL_ENTER();
	return through_map(mem, (void *)src, bytes, ACCEL_MAP_WRITE);
}
