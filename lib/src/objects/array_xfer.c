// SPDX-License-Identifier: MIT
/*
 * Array transfers (Numba's to_device, copy_to_device and copy_to_host) and
 * the pinned and mapped scopes over host arrays. A transfer moves the bytes
 * an array spans, so both sides have the same layout.
 */
#include "objects/array.h"

/* Copy the span of @src into @dst, whose layouts the caller matched. */
static accel_status_t array_transfer(struct accel_array *dst,
			       struct accel_array *src, accel_stream_t stream)
{
	struct array_layout l;
	struct xfer_end to = { .st = dst->st, .offset = dst->offset };
	struct xfer_end from = { .st = src->st, .offset = src->offset };
	size_t extent;
	accel_status_t ret;

	array_layout_of(src, &l);
	if (layout_extent(&l, &extent) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (storage_use_both(dst->st, "the destination", src->st,
			     "the source") != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	ret = transfer(&to, &from, extent, stream);
	storage_done(src->st);
	storage_done(dst->st);
	return ret;
}

/* @dst may receive @src's data. */
static accel_status_t check_pair(struct accel_array *dst, struct accel_array *src)
{
	struct array_layout a, b;

	if (dst->readonly)
		return accel_error("the destination array is read-only");
	array_layout_of(dst, &a);
	array_layout_of(src, &b);
	if (!layout_compatible(&a, &b))
		return accel_error("the arrays differ in dtype (%s, %s), shape or strides",
				   dst->dtype->name, src->dtype->name);
	return ACCEL_SUCCESS;
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
static accel_status_t to_device(const accel_device_t device, accel_array_t host,
			  accel_stream_t stream, bool share, bool copy,
			  accel_array_t *ary)
{
	struct accel_array *h ACCEL_HANDLE_REF = NULL, *made;
	struct array_layout l;
	struct storage *st;
	size_t extent;
	accel_status_t ret;

	if (array_out_on(ary, device, stream) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	h = array_live(host);
	if (!h)
		return ACCEL_FAILED;
	array_layout_of(h, &l);
	if (share && on_device_already(h, device->id)) {
		storage_get(h->st);
		return array_new(h->st, h->offset, &l, h->stream, h->readonly,
				 ary);
	}
	if (layout_extent(&l, &extent) != ACCEL_SUCCESS ||
	    storage_alloc(device->id, STORAGE_DEVICE, extent, 0, stream,
			  &st) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (array_new(st, 0, &l, stream, false, ary) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (!copy)
		return ACCEL_SUCCESS;
	made = array_lookup(*ary);
	ret = made ? array_transfer(made, h, stream) : ACCEL_FAILED;
	if (made)	/* before the release below, which waits for it */
		accel_handle_put(made);
	if (ret != ACCEL_SUCCESS) {
		accel_array_release(*ary);
		*ary = NULL;
	}
	return ret;
}

accel_status_t accel_to_device(const accel_device_t device, accel_array_t host,
			 accel_stream_t stream, accel_array_t *ary)
{
	ACCEL_ENTER();
	return to_device(device, host, stream, false, true, ary);
}

accel_status_t accel_to_device_ex(const accel_device_t device, accel_array_t host,
			    accel_stream_t stream, int copy, accel_array_t *ary)
{
	ACCEL_ENTER();
	return to_device(device, host, stream, true, copy, ary);
}

accel_status_t accel_array_copy_to_device(accel_array_t dst, accel_array_t src,
				    accel_stream_t stream)
{
	struct accel_array *d ACCEL_HANDLE_REF = NULL;
	struct accel_array *s ACCEL_HANDLE_REF = NULL;
	enum accel_array_kind kind;

	ACCEL_ENTER();
	if (!(d = array_live(dst)) || !(s = array_live(src)))
		return ACCEL_FAILED;
	kind = array_kind(d);
	if (kind != ACCEL_ARRAY_DEVICE && kind != ACCEL_ARRAY_MAPPED)
		return accel_error("the destination is a host array, not a device or mapped array");
	if (check_pair(d, s) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return array_transfer(d, s, stream);
}

accel_status_t accel_array_copy_to_host(accel_array_t ary, accel_array_t dst,
				  accel_stream_t stream, accel_array_t *host)
{
	struct accel_array *a ACCEL_HANDLE_REF = NULL;
	struct accel_array *d = NULL;
	struct array_layout l;
	accel_array_t made = NULL;
	accel_status_t ret;

	ACCEL_ENTER();
	if (host)
		*host = NULL;
	a = array_live(ary);
	if (!a)
		return ACCEL_FAILED;
	if (!dst && !host)
		return accel_error("host is NULL: nowhere to return the new host array");
	if (!dst) {
		array_layout_of(a, &l);
		if (accel_host_array(NULL, l.ndim, l.shape, l.dtype, l.strides,
				     'C', 0, &made) != ACCEL_SUCCESS)
			return ACCEL_FAILED;
		dst = made;
	}
	d = array_live(dst);
	if (!d)
		ret = ACCEL_FAILED;
	else if (!made && array_kind(d) == ACCEL_ARRAY_DEVICE)
		ret = accel_error("the destination is a device array, not a host array");
	else if (!made)
		ret = check_pair(d, a);
	else
		ret = ACCEL_SUCCESS;
	if (ret == ACCEL_SUCCESS)
		ret = array_transfer(d, a, stream);
	if (d)		/* before the release below, which waits for it */
		accel_handle_put(d);
	if (ret != ACCEL_SUCCESS) {
		accel_array_release(made);
		return ACCEL_FAILED;
	}
	if (host)
		*host = dst;
	return ACCEL_SUCCESS;
}

accel_status_t accel_array_register(const accel_device_t device, accel_array_t host,
			      int mapped)
{
	struct accel_array *h ACCEL_HANDLE_REF = NULL;
	struct storage *st;
	accel_status_t ret = ACCEL_SUCCESS;

	ACCEL_ENTER();
	if (!accel_device_lookup(device))
		return ACCEL_FAILED;
	h = array_live(host);
	if (!h)
		return ACCEL_FAILED;
	st = h->st;
	storage_write_lock(st);
	if (st->freed)		/* since array_live() looked */
		ret = accel_handle_error("the array's memory was freed with accel_memory_free()");
	else if (st->kind != STORAGE_HOST || st->dev_id >= 0)
		ret = accel_error(st->registered_dev >= 0 ?
				  "the array is registered already" :
				  "only host arrays are registered; this one is device or pinned memory already");
	else if (st->bytes)
		ret = accel_host_memory_register(device, st->ptr, st->bytes);
	if (ret == ACCEL_SUCCESS) {
		st->registered_dev = device->id;
		st->dev_id = device->id;
		st->kind = STORAGE_PINNED;
		st->mapped_kind = mapped;
	}
	storage_write_unlock(st);
	return ret;
}

accel_status_t accel_array_unregister(accel_array_t host)
{
	struct accel_array *h ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	h = array_live(host);
	if (!h)
		return ACCEL_FAILED;
	return storage_unregister(h->st);
}
