// SPDX-License-Identifier: MIT
/*
 * Memory handles (OCCA's occa::memory): typed views of a storage, with
 * slices, casts, clones, reference counting and an explicit free.
 */
#include <stdlib.h>
#include <string.h>

#include "objects/object.h"

struct accel_memory *memory_lookup(accel_memory_t mem)
{
	struct accel_memory *m = accel_handle_get(mem, ACCEL_HANDLE_MEMORY);

	if (!m)
		accel_handle_error("%p is not a live memory handle (released, or never one)",
				   (void *)mem);
	else
		accel_error_device_id(m->st->dev_id);
	return m;
}

/* A new handle on @st (whose reference it takes over). */
static accel_status_t handle_new(struct storage *st, size_t offset, size_t entries,
			   accel_dtype_t dtype, accel_memory_t *out)
{
	struct accel_memory *m = calloc(1, sizeof(*m));

	if (!m || !accel_handle_new(ACCEL_HANDLE_MEMORY, m)) {
		free(m);
		storage_put(st);
		return accel_oom_error("out of host memory for a memory handle");
	}
	m->st = st;
	m->offset = offset;
	m->entries = entries;
	m->dtype = dtype;
	*out = (accel_memory_t)m->handle;
	return ACCEL_SUCCESS;
}

accel_status_t memory_new(struct storage *st, size_t offset, size_t entries,
		    accel_dtype_t dtype, accel_memory_t *out)
{
	return handle_new(st, offset, entries, dtype, out);
}

/* No handle in *@mem until one is made; a device is needed. */
static accel_status_t memory_out(accel_memory_t *mem, const accel_device_t device)
{
	if (!mem)
		return accel_error("mem is NULL");
	*mem = NULL;
	return accel_device_lookup(device) ? ACCEL_SUCCESS : ACCEL_FAILED;
}

static accel_status_t check_dtype(accel_dtype_t dtype, size_t entries, size_t *bytes)
{
	if (!dtype)
		return accel_error("the dtype is NULL");
	if (!mul_ok(entries, dtype->size, bytes))
		return accel_error("%zu entries of %s (%zu bytes each) overflow",
				   entries, dtype->name, dtype->size);
	return ACCEL_SUCCESS;
}

accel_status_t accel_memory_create(const accel_device_t device, size_t entries,
			     accel_dtype_t dtype, const void *src,
			     unsigned int flags, accel_memory_t *mem)
{
	struct xfer_end to = { 0 }, from = { 0 };
	struct storage *st;
	size_t bytes = 0;

	ACCEL_ENTER();
	if (memory_out(mem, device) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (flags & ~ACCEL_MEMORY_FLAGS_VALID)
		return accel_error("unknown flags %#x", flags & ~ACCEL_MEMORY_FLAGS_VALID);
	if (check_dtype(dtype, entries, &bytes) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (storage_alloc(device->id, flags ? STORAGE_UNIFIED : STORAGE_DEVICE,
			  bytes, flags, NULL, &st) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	to.st = st;
	from.host = (void *)src;
	if (src && bytes && transfer(&to, &from, bytes, NULL) != ACCEL_SUCCESS) {
		storage_put(st);
		return ACCEL_FAILED;
	}
	return handle_new(st, 0, entries, dtype, mem);
}

accel_status_t accel_memory_wrap(const accel_device_t device, void *ptr, size_t entries,
			   accel_dtype_t dtype, accel_memory_t *mem)
{
	struct storage *st;
	size_t bytes = 0;

	ACCEL_ENTER();
	if (memory_out(mem, device) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (check_dtype(dtype, entries, &bytes) != ACCEL_SUCCESS ||
	    dtype_check_aligned((uintptr_t)ptr, dtype, "the pointer") != ACCEL_SUCCESS ||
	    storage_wrap(device->id, ptr, bytes, false, &st) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return handle_new(st, 0, entries, dtype, mem);
}

/*
 * Claim @m's handle (referenced) for a release or a free: the calls under
 * way on it return first, and every call that starts later is refused, a
 * racing release or free among them; handle_unclaim() makes it live again.
 */
static accel_status_t handle_claim(struct accel_memory *m)
{
	if (accel_handle_close(m))
		return ACCEL_SUCCESS;
	accel_handle_put(m);
	return accel_handle_error("the memory handle was released by another thread");
}

/* Caller claimed @m: end its handle and free it. */
static accel_status_t handle_end(struct accel_memory *m)
{
	struct storage *st = m->st;
	accel_status_t ret;

	accel_handle_retire(m);
	free(m);
	/*
	 * another handle's release racing this one saw the storage shared:
	 * the last reference on mapped storage stays, and the mapping with it
	 */
	storage_put_unmapped(st, &ret);
	return ret;
}

/* Caller claimed @m, and cannot go on: @m is live again. */
static accel_status_t handle_unclaim(struct accel_memory *m)
{
	accel_handle_reopen(m);
	accel_handle_put(m);
	return ACCEL_FAILED;
}

accel_status_t accel_memory_release(accel_memory_t mem)
{
	struct accel_memory *m;

	ACCEL_ENTER();
	if (!mem)
		return ACCEL_SUCCESS;
	m = memory_lookup(mem);
	if (!m || handle_claim(m) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	/* mapped memory keeps its last handle */
	if (storage_last_mapped(m->st))
		return handle_unclaim(m);
	return handle_end(m);
}

/*
 * The handle is claimed before the bytes go, not after: a release that
 * starts while the free waits for the device is refused, not the free.
 */
accel_status_t accel_memory_free(accel_memory_t mem)
{
	struct accel_memory *m;

	ACCEL_ENTER();
	m = memory_lookup(mem);
	if (!m || handle_claim(m) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (storage_free(m->st) != ACCEL_SUCCESS)
		return handle_unclaim(m);
	return handle_end(m);
}

int accel_memory_is_valid(accel_memory_t mem)
{
	struct accel_memory *m ACCEL_HANDLE_REF =
		accel_handle_get(mem, ACCEL_HANDLE_MEMORY);

	return m && !storage_is_freed(m->st);
}

struct accel_memory *memory_use(accel_memory_t mem)
{
	struct accel_memory *m = memory_lookup(mem);

	if (m && storage_use(m->st, "the memory") != ACCEL_SUCCESS) {
		accel_handle_put(m);
		return NULL;
	}
	return m;
}

accel_status_t memory_use_both(accel_memory_t a, accel_memory_t b,
			 struct accel_memory **ma, struct accel_memory **mb)
{
	*ma = memory_lookup(a);
	if (!*ma)
		return ACCEL_FAILED;
	*mb = memory_lookup(b);
	if (!*mb) {
		accel_handle_put(*ma);
		return ACCEL_FAILED;
	}
	if (storage_use_both((*ma)->st, "the memory", (*mb)->st,
			     "the memory") == ACCEL_SUCCESS)
		return ACCEL_SUCCESS;
	accel_handle_put(*mb);
	accel_handle_put(*ma);
	return ACCEL_FAILED;
}

void memory_done(struct accel_memory *m)
{
	storage_done(m->st);
	accel_handle_put(m);
}

accel_status_t accel_memory_get_info(accel_memory_t mem,
			       struct accel_memory_info *info)
{
	struct accel_memory *m;
	struct storage *st;

	ACCEL_ENTER();
	if (!info)
		return accel_error("info is NULL");
	m = memory_use(mem);
	if (!m)
		return ACCEL_FAILED;
	st = m->st;
	memset(info, 0, sizeof(*info));
	info->entries = m->entries;
	info->bytes = m->entries * m->dtype->size;
	info->dtype = m->dtype;
	info->device = st->dev_id;
	info->ptr = st->ptr ? (char *)st->ptr + m->offset : NULL;
	info->flags = st->flags;
	info->wrapped = !st->owned;
	info->mapped = atomic_load(&storage_owner(st)->maps);
	memory_done(m);
	return ACCEL_SUCCESS;
}

/* [offset, offset + *count) within @entries; ACCEL_ALL is the rest. */
accel_status_t entry_range(size_t entries, size_t offset, size_t *count)
{
	if (offset > entries)
		return accel_error("offset %zu is past the end of %zu entries",
				   offset, entries);
	if (*count == ACCEL_ALL)
		*count = entries - offset;
	if (*count > entries - offset)
		return accel_error("%zu entries from offset %zu run past the end of %zu entries",
				   *count, offset, entries);
	return ACCEL_SUCCESS;
}

accel_status_t accel_memory_slice(accel_memory_t mem, size_t offset, size_t count,
			    accel_memory_t *slice)
{
	struct accel_memory *m;
	accel_status_t ret;

	ACCEL_ENTER();
	if (!slice)
		return accel_error("slice is NULL");
	*slice = NULL;
	m = memory_use(mem);
	if (!m)
		return ACCEL_FAILED;
	ret = entry_range(m->entries, offset, &count);
	if (ret == ACCEL_SUCCESS) {
		storage_get(m->st);
		ret = handle_new(m->st, m->offset + offset * m->dtype->size,
				 count, m->dtype, slice);
	}
	memory_done(m);
	return ret;
}

/*
 * Where @m's first entry is: the address, or for memory with no bytes
 * yet, the offset into it (aligned storage)
 */
static size_t entry_address(const struct accel_memory *m)
{
	return (size_t)((uintptr_t)m->st->ptr + m->offset);
}

accel_status_t accel_memory_cast(accel_memory_t mem, accel_dtype_t dtype,
			   accel_memory_t *cast)
{
	struct accel_memory *m;
	size_t bytes;
	accel_status_t ret;

	ACCEL_ENTER();
	if (!cast)
		return accel_error("cast is NULL");
	*cast = NULL;
	if (!dtype)
		return accel_error("the dtype is NULL");
	m = memory_use(mem);
	if (!m)
		return ACCEL_FAILED;
	bytes = m->entries * m->dtype->size;
	if (bytes % dtype->size) {
		ret = accel_error("%zu bytes of %s are no whole number of %s (%zu bytes each)",
				  bytes, m->dtype->name, dtype->name,
				  dtype->size);
	} else if (dtype_check_aligned(entry_address(m), dtype,
				       "the memory's address") != ACCEL_SUCCESS) {
		ret = ACCEL_FAILED;
	} else {
		storage_get(m->st);
		ret = handle_new(m->st, m->offset, bytes / dtype->size,
				 dtype, cast);
	}
	memory_done(m);
	return ret;
}

/*
 * The kind a clone of @st gets: its own, but the library's; a cpu device's
 * wrapped host memory becomes unified memory, host-accessible like it.
 */
/*
 * Wrapped host memory (only a cpu device takes any) clones to the device's
 * memory, as memory.h says: host memory there too, so the host keeps the
 * access it had (the clone keeps the flags).
 */
static enum storage_kind clone_kind(const struct storage *st)
{
	return st->kind == STORAGE_HOST ? STORAGE_DEVICE : st->kind;
}

accel_status_t accel_memory_clone(accel_memory_t mem, accel_memory_t *clone)
{
	struct accel_memory *m;
	struct xfer_end to = { 0 }, from = { 0 };
	struct storage *st;
	size_t bytes = 0, entries;
	accel_dtype_t dtype;
	accel_status_t ret;

	ACCEL_ENTER();
	if (!clone)
		return accel_error("clone is NULL");
	*clone = NULL;
	m = memory_use(mem);
	if (!m)
		return ACCEL_FAILED;
	bytes = m->entries * m->dtype->size;
	ret = storage_alloc(m->st->dev_id, clone_kind(m->st), bytes,
			    m->st->flags, NULL, &st);
	if (ret == ACCEL_SUCCESS) {
		to.st = st;
		from.st = m->st;
		from.offset = m->offset;
		ret = transfer(&to, &from, bytes, NULL);
		if (ret != ACCEL_SUCCESS)
			storage_put(st);
	}
	entries = m->entries;
	dtype = m->dtype;
	memory_done(m);
	if (ret != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return handle_new(st, 0, entries, dtype, clone);
}
