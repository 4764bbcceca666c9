// SPDX-License-Identifier: MIT
/*
 * Views of arrays without copying (ravel, reshape), contiguity, and the
 * CUDA array interface both ways.
 */
#include <stdio.h>
#include <string.h>

#include "objects/array.h"

int accel_array_is_c_contiguous(accel_array_t ary)
{
	struct accel_array *a ACCEL_HANDLE_REF = array_live(ary);
	struct array_layout l;

	if (!a)
		return 0;
	array_layout_of(a, &l);
	return layout_is_c_contiguous(&l);
}

int accel_array_is_f_contiguous(accel_array_t ary)
{
	struct accel_array *a ACCEL_HANDLE_REF = array_live(ary);
	struct array_layout l;

	if (!a)
		return 0;
	array_layout_of(a, &l);
	return layout_is_f_contiguous(&l);
}

/* A view of @a's storage with layout @l. */
static accel_status_t view_of(struct accel_array *a, const struct array_layout *l,
			accel_array_t *out)
{
	storage_get(a->st);
	return array_new(a->st, a->offset, l, a->stream, a->readonly, out);
}

/* The order @order means for @l, or 0 if @l is not contiguous in it. */
static char contiguous_order(const struct array_layout *l, char order)
{
	bool c = layout_is_c_contiguous(l), f = layout_is_f_contiguous(l);

	if ((order == 'C' || order == 'A') && c)
		return 'C';
	if ((order == 'F' || order == 'A') && f)
		return 'F';
	return 0;
}

static accel_status_t check_order(char order)
{
	if (order != 'C' && order != 'F' && order != 'A')
		return accel_error("order '%c' is not 'C', 'F' or 'A'", order);
	return ACCEL_SUCCESS;
}

accel_status_t accel_array_ravel(accel_array_t ary, char order,
			   accel_array_t *flat)
{
	struct accel_array *a ACCEL_HANDLE_REF = NULL;
	struct array_layout l;
	char as;

	ACCEL_ENTER();
	if (array_out(flat, "flat") != ACCEL_SUCCESS || !(a = array_live(ary)) || check_order(order) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	array_layout_of(a, &l);
	/* any array, 1-D too (Numba), gives shape (size,); 0-d gives (1,) */
	as = contiguous_order(&l, order);
	if (!as)
		return accel_error("the array is not contiguous in order '%c': flattening it would need a copy",
				   order);
	l.shape[0] = layout_size(l.ndim, l.shape);
	l.ndim = 1;
	layout_contiguous(&l, as);
	return view_of(a, &l, flat);
}

/* @shape with its one -1 (if any) worked out to give @size entries. */
static accel_status_t resolve_shape(int ndim, const size_t *shape, size_t size,
			      size_t *out)
{
	int unknown = -1;
	size_t known = 1;

	if (ndim < 0 || ndim > ACCEL_MAX_DIMS)
		return accel_error("%d dimensions is not 0 to %d", ndim,
				   ACCEL_MAX_DIMS);
	if (ndim && !shape)
		return accel_error("the shape is NULL");
	for (int i = 0; i < ndim; i++) {
		out[i] = shape[i];
		if (shape[i] == (size_t)-1) {
			if (unknown >= 0)
				return accel_error("only one axis may be -1");
			unknown = i;
		} else if (!mul_ok(known, shape[i], &known)) {
			return accel_error("the new shape's product overflows");
		}
	}
	if (unknown >= 0) {
		if (!known || size % known)
			return accel_error("%zu entries do not fill a shape with the known axes' product %zu",
					   size, known);
		out[unknown] = size / known;
		known = size;
	}
	if (known != size)
		return accel_error("a shape of %zu entries cannot hold the array's %zu",
				   known, size);
	return ACCEL_SUCCESS;
}

accel_status_t accel_array_reshape(accel_array_t ary, int ndim, const size_t *shape,
			     char order, accel_array_t *view)
{
	struct accel_array *a ACCEL_HANDLE_REF = NULL;
	struct array_layout l, to;
	char as;

	ACCEL_ENTER();
	if (array_out(view, "view") != ACCEL_SUCCESS || !(a = array_live(ary)) || check_order(order) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	array_layout_of(a, &l);
	to = l;
	if (resolve_shape(ndim, shape, layout_size(l.ndim, l.shape),
			  to.shape) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	to.ndim = ndim;
	if (ndim == l.ndim && !memcmp(to.shape, l.shape, (size_t)ndim * sizeof(*to.shape)))
		return view_of(a, &l, view);
	as = contiguous_order(&l, order);
	if (!as)
		return accel_error("the array is not contiguous in order '%c': reshaping it would need a copy",
				   order);
	memset(to.strides, 0, sizeof(to.strides));
	layout_contiguous(&to, as);
	return view_of(a, &to, view);
}

static bool has_interface(const struct accel_array *a)
{
	enum accel_array_kind kind = array_kind(a);

	return kind == ACCEL_ARRAY_DEVICE || kind == ACCEL_ARRAY_MAPPED;
}

int accel_array_has_interface(accel_array_t ary)
{
	struct accel_array *a ACCEL_HANDLE_REF =
		accel_handle_get(ary, ACCEL_HANDLE_ARRAY);

	/* an array over freed memory has nothing to export */
	return a && !array_freed(a) && has_interface(a);
}

accel_status_t accel_array_get_interface(accel_array_t ary,
				   struct accel_array_interface *iface)
{
	struct accel_array *a ACCEL_HANDLE_REF = NULL;
	struct array_layout l;

	ACCEL_ENTER();
	if (!iface)
		return accel_error("iface is NULL");
	a = array_live(ary);
	if (!a)
		return ACCEL_FAILED;
	if (!has_interface(a))
		return accel_error("a host or pinned array has no CUDA array interface; use a device or mapped array");
	array_layout_of(a, &l);
	memset(iface, 0, sizeof(*iface));
	iface->version = 3;
	iface->ndim = l.ndim;
	memcpy(iface->shape, l.shape, sizeof(iface->shape));
	snprintf(iface->typestr, sizeof(iface->typestr), "%s", l.dtype->typestr);
	iface->data = array_data(a);
	iface->readonly = a->readonly;
	iface->has_strides = !layout_is_c_contiguous(&l);
	if (iface->has_strides)
		memcpy(iface->strides, l.strides, sizeof(iface->strides));
	iface->stream = a->stream;
	return ACCEL_SUCCESS;
}

/* The layout @iface describes. */
static accel_status_t interface_layout(const struct accel_array_interface *iface,
				 struct array_layout *l, size_t *extent)
{
	accel_dtype_t dtype;
	char typestr[sizeof(iface->typestr) + 1] = "";

	if (iface->version < 1 || iface->version > 3)
		return accel_error("array interface version %d is not 1 to 3",
				   iface->version);
	memcpy(typestr, iface->typestr, sizeof(iface->typestr));
	dtype = dtype_by_typestr(typestr);
	if (!dtype)
		return accel_error("no dtype has the typestr \"%s\"", typestr);
	if (layout_make(l, iface->ndim, iface->shape, dtype,
			iface->has_strides ? iface->strides : NULL,
			'C') != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return layout_extent(l, extent);
}

accel_status_t interface_checked(const struct accel_array_interface *iface,
			   struct array_layout *l, size_t *extent)
{
	if (interface_layout(iface, l, extent) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (!*extent)
		return ACCEL_SUCCESS;
	if (!iface->data)
		return accel_error("the data pointer is NULL for %zu bytes",
				   *extent);
	if ((uintptr_t)iface->data + *extent < (uintptr_t)iface->data)
		return accel_error("%zu bytes at %p run past the end of the address space",
				   *extent, iface->data);
	return dtype_check_aligned((uintptr_t)iface->data, l->dtype,
				   "the data pointer");
}

accel_status_t view_of_storage(struct storage *st,
				const struct accel_array_interface *iface,
				const struct array_layout *l, size_t extent,
				const struct lender *lender, accel_array_t *ary)
{
	size_t offset = (size_t)((char *)iface->data - (char *)st->ptr);

	if (extent > st->bytes - offset) {
		accel_error("the interface's %zu bytes at %p run past the end of the memory it lies in (%p, %zu bytes)",
			    extent, iface->data, st->ptr, st->bytes);
		storage_put(st);
		return ACCEL_FAILED;
	}
	if (array_new(st, offset, l, iface->stream, iface->readonly,
		      ary) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (lender)
		lender->release(lender->arg);
	return ACCEL_SUCCESS;
}

/*
 * A view for @device of memory it may use: wrapped for it, holding the
 * reference to the storage @in of another device (or of a host array) that
 * the data lies in, if any, and inside it; a lender is told when the
 * wrapped bytes go.
 */
static accel_status_t view_wrapping(const accel_device_t device, struct storage *in,
			      const struct accel_array_interface *iface,
			      const struct array_layout *l, size_t extent,
			      const struct lender *lender, accel_array_t *ary)
{
	size_t offset = in ? (size_t)((char *)iface->data - (char *)in->ptr) : 0;
	struct storage *st;

	if (in && extent > in->bytes - offset) {
		accel_error("the interface's %zu bytes at %p run past the end of the memory it lies in (%p, %zu bytes)",
			    extent, iface->data, in->ptr, in->bytes);
		storage_put(in);
		return ACCEL_FAILED;
	}
	if (storage_wrap(device->id, extent ? iface->data : NULL, extent, true,
			 &st) != ACCEL_SUCCESS) {
		if (in)
			storage_put(in);
		return ACCEL_FAILED;
	}
	st->backing = in;
	return array_new_lent(st, 0, l, iface->stream, iface->readonly, lender,
			      ary);
}

accel_status_t array_from_interface(const accel_device_t device,
			      const struct accel_array_interface *iface,
			      int sync, const struct lender *lender,
			      accel_array_t *ary)
{
	struct array_layout l;
	struct storage *st;
	size_t extent;

	if (array_out(ary, "ary") != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (!accel_device_lookup(device))
		return ACCEL_FAILED;
	if (!iface)
		return accel_error("iface is NULL");
	/* the view's stream: one of its device */
	if (stream_check(device->id, iface->stream) != ACCEL_SUCCESS ||
	    interface_checked(iface, &l, &extent) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (sync && iface->stream &&
	    accel_stream_synchronize(device, iface->stream) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	st = extent ? storage_index_find(iface->data) : NULL;
	/*
	 * Pinned memory viewed as a device array is mapped memory: a view of
	 * its own storage would be a pinned (host) array, so it gets one that
	 * wraps the bytes for the device, holding the storage.
	 */
	if (st && st->dev_id == device->id &&
	    !(st->kind == STORAGE_PINNED && !st->mapped_kind))
		return view_of_storage(st, iface, &l, extent, lender, ary);
	return view_wrapping(device, st, iface, &l, extent, lender, ary);
}

accel_status_t accel_array_from_interface(const accel_device_t device,
				    const struct accel_array_interface *iface,
				    int sync, accel_array_t *ary)
{
	ACCEL_ENTER();
	return array_from_interface(device, iface, sync, NULL, ary);
}
