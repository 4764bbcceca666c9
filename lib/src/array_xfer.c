// SPDX-License-Identifier: MIT
/*
 * Array transfers (Numba's to_device, copy_to_device and copy_to_host) and
 * the pinned and mapped scopes over host arrays. A transfer moves the bytes
 * an array spans, so both sides have the same layout.
 */
#include "array.h"

/* Copy the span of @src into @dst, whose layouts the caller matched. */
static C_Status array_transfer(struct accel_array *dst,
			       struct accel_array *src, C_Stream stream)
{
	struct array_layout l;
	struct xfer_end to = { .st = dst->st, .offset = dst->offset };
	struct xfer_end from = { .st = src->st, .offset = src->offset };
	size_t extent;
	C_Status ret;

	array_layout_of(src, &l);
	if (layout_extent(&l, &extent) != C_SUCCESS)
		return C_FAILED;
	if (storage_use(dst->st, "the destination") != C_SUCCESS)
		return C_FAILED;
	if (src->st != dst->st && storage_use(src->st, "the source") != C_SUCCESS) {
		storage_done(dst->st);
		return C_FAILED;
	}
	ret = transfer(&to, &from, extent, stream);
	if (src->st != dst->st)
		storage_done(src->st);
	storage_done(dst->st);
	return ret;
}

/* @dst may receive @src's data. */
static C_Status check_pair(struct accel_array *dst, struct accel_array *src)
{
	struct array_layout a, b;

	if (dst->readonly)
		return accel_error("the destination array is read-only");
	array_layout_of(dst, &a);
	array_layout_of(src, &b);
	if (!layout_compatible(&a, &b))
		return accel_error("the arrays differ in dtype (%s, %s), shape or strides",
				   dst->dtype->name, src->dtype->name);
	return C_SUCCESS;
}

/*
 * Is @a already usable by @dev's device code (Numba's _is_cuda_ndarray):
 * a device array of it, or a mapped array (or registered-mapped host
 * array) of it?
 */
static bool on_device_already(const struct accel_array *a, int dev)
{
	enum accel_array_kind kind = array_kind(a);

	return a->st->dev_id == dev &&
	       (kind == ACCEL_ARRAY_DEVICE || kind == ACCEL_ARRAY_MAPPED);
}

/*
 * A device array with @host's layout; @share: @host itself (a new handle on
 * it) if it is on the device already; @copy: holding a copy of its data
 */
static C_Status to_device(const C_Device device, accel_array_t host,
			  C_Stream stream, bool share, bool copy,
			  accel_array_t *ary)
{
	struct array_layout l;
	struct storage *st;
	size_t extent;

	if (array_out_on(ary, device) != C_SUCCESS)
		return C_FAILED;
	if (!array_lookup(host))
		return C_FAILED;
	array_layout_of(host, &l);
	if (share && on_device_already(host, device->id)) {
		storage_get(host->st);
		return array_new(host->st, host->offset, &l, host->stream,
				 host->readonly, ary);
	}
	if (layout_extent(&l, &extent) != C_SUCCESS ||
	    storage_alloc(device->id, STORAGE_DEVICE, extent, 0, stream,
			  &st) != C_SUCCESS)
		return C_FAILED;
	if (array_new(st, 0, &l, stream, false, ary) != C_SUCCESS)
		return C_FAILED;
	if (copy && array_transfer(*ary, host, stream) != C_SUCCESS) {
		accel_array_release(*ary);
		*ary = NULL;
		return C_FAILED;
	}
	return C_SUCCESS;
}

C_Status accel_to_device(const C_Device device, accel_array_t host,
			 C_Stream stream, accel_array_t *ary)
{
	ACCEL_ENTER();
	return to_device(device, host, stream, false, true, ary);
}

C_Status accel_to_device_ex(const C_Device device, accel_array_t host,
			    C_Stream stream, int copy, accel_array_t *ary)
{
	ACCEL_ENTER();
	return to_device(device, host, stream, true, copy, ary);
}

C_Status accel_array_copy_to_device(accel_array_t dst, accel_array_t src,
				    C_Stream stream)
{
	enum accel_array_kind kind;

	ACCEL_ENTER();
	if (!array_lookup(dst) || !array_lookup(src))
		return C_FAILED;
	kind = array_kind(dst);
	if (kind != ACCEL_ARRAY_DEVICE && kind != ACCEL_ARRAY_MAPPED)
		return accel_error("the destination is a host array, not a device or mapped array");
	if (check_pair(dst, src) != C_SUCCESS)
		return C_FAILED;
	return array_transfer(dst, src, stream);
}

C_Status accel_array_copy_to_host(accel_array_t ary, accel_array_t dst,
				  C_Stream stream, accel_array_t *host)
{
	struct array_layout l;
	accel_array_t made = NULL;

	ACCEL_ENTER();
	if (host)
		*host = NULL;
	if (!array_lookup(ary))
		return C_FAILED;
	if (!dst && !host)
		return accel_error("host is NULL: nowhere to return the new host array");
	if (dst && !array_lookup(dst))
		return C_FAILED;
	if (dst && array_kind(dst) == ACCEL_ARRAY_DEVICE)
		return accel_error("the destination is a device array, not a host array");
	if (dst && check_pair(dst, ary) != C_SUCCESS)
		return C_FAILED;
	if (!dst) {
		array_layout_of(ary, &l);
		if (accel_host_array(NULL, l.ndim, l.shape, l.dtype, l.strides,
				     'C', 0, &made) != C_SUCCESS)
			return C_FAILED;
		dst = made;
	}
	if (array_transfer(dst, ary, stream) != C_SUCCESS) {
		accel_array_release(made);
		return C_FAILED;
	}
	if (host)
		*host = dst;
	return C_SUCCESS;
}

C_Status accel_array_register(const C_Device device, accel_array_t host,
			      int mapped)
{
	struct storage *st;
	C_Status ret = C_SUCCESS;

	ACCEL_ENTER();
	if (!device)
		return accel_error("the device is NULL");
	if (!array_lookup(host))
		return C_FAILED;
	st = host->st;
	pthread_rwlock_wrlock(&st->lock);
	if (st->kind != STORAGE_HOST || st->dev_id >= 0)
		ret = accel_error(st->registered_dev >= 0 ?
				  "the array is registered already" :
				  "only host arrays are registered; this one is device or pinned memory already");
	else if (st->bytes)
		ret = accel_host_memory_register(device, st->ptr, st->bytes);
	if (ret == C_SUCCESS) {
		st->registered_dev = device->id;
		st->dev_id = device->id;
		st->kind = STORAGE_PINNED;
		st->mapped_kind = mapped;
	}
	pthread_rwlock_unlock(&st->lock);
	return ret;
}

C_Status accel_array_unregister(accel_array_t host)
{
	ACCEL_ENTER();
	if (!array_lookup(host))
		return C_FAILED;
	return storage_unregister(host->st);
}
