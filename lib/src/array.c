// SPDX-License-Identifier: MIT
/*
 * Arrays (Numba's device, pinned and mapped arrays, and NumPy host arrays):
 * a shape, strides and a dtype over a storage; creation and transfers.
 */
#include <stdlib.h>
#include <string.h>

#include "array.h"

struct accel_array *array_lookup(accel_array_t ary)
{
	if (!ary || !accel_handle_live(ary) || ary->magic != ARRAY_MAGIC) {
		accel_handle_error("%p is not a live array (released, or never one)",
			    (void *)ary);
		return NULL;
	}
	return ary;
}

C_Status array_new(struct storage *st, size_t offset,
		   const struct array_layout *l, C_Stream stream,
		   bool readonly, accel_array_t *out)
{
	struct accel_array *a = calloc(1, sizeof(*a));

	if (!a || !accel_handle_add(a)) {
		free(a);
		storage_put(st);
		return accel_oom_error("out of host memory for an array");
	}
	a->magic = ARRAY_MAGIC;
	a->st = st;
	a->offset = offset;
	a->ndim = l->ndim;
	memcpy(a->shape, l->shape, sizeof(a->shape));
	memcpy(a->strides, l->strides, sizeof(a->strides));
	a->dtype = l->dtype;
	a->stream = stream;
	a->readonly = readonly;
	*out = a;
	return C_SUCCESS;
}

C_Status array_out(accel_array_t *out, const char *name)
{
	if (!out)
		return accel_error("%s is NULL", name);
	*out = NULL;
	return C_SUCCESS;
}

C_Status array_out_on(accel_array_t *out, const C_Device device)
{
	if (array_out(out, "ary") != C_SUCCESS)
		return C_FAILED;
	return device ? C_SUCCESS : accel_error("the device is NULL");
}

void array_layout_of(const struct accel_array *a, struct array_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->ndim = a->ndim;
	memcpy(l->shape, a->shape, sizeof(l->shape));
	memcpy(l->strides, a->strides, sizeof(l->strides));
	l->dtype = a->dtype;
}

/* New, uninitialised storage of @kind for layout @l. */
static C_Status array_alloc(int dev_id, enum storage_kind kind, bool mapped,
			    const struct array_layout *l, C_Stream stream,
			    accel_array_t *ary)
{
	unsigned int flags = kind == STORAGE_DEVICE ? 0 :
			     ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE;
	struct storage *st;
	size_t extent;

	if (layout_extent(l, &extent) != C_SUCCESS ||
	    storage_alloc(dev_id, kind, extent, flags, stream, &st) != C_SUCCESS)
		return C_FAILED;
	st->mapped_kind = mapped;
	return array_new(st, 0, l, stream, false, ary);
}

static C_Status make_array(const C_Device device, enum storage_kind kind,
			   bool mapped, int ndim, const size_t *shape,
			   accel_dtype_t dtype, const ptrdiff_t *strides,
			   char order, C_Stream stream, accel_array_t *ary)
{
	struct array_layout l;

	if (array_out_on(ary, device) != C_SUCCESS)
		return C_FAILED;
	if (layout_make(&l, ndim, shape, dtype, strides, order) != C_SUCCESS)
		return C_FAILED;
	return array_alloc(device->id, kind, mapped, &l, stream, ary);
}

/* make_array() with @like's shape and dtype, contiguous in its axis order */
static C_Status make_like(const C_Device device, enum storage_kind kind,
			  bool mapped, accel_array_t like, C_Stream stream,
			  accel_array_t *ary)
{
	struct array_layout l;

	if (ary)
		*ary = NULL;
	if (!array_lookup(like))
		return C_FAILED;
	array_layout_of(like, &l);
	layout_contiguous_like(&l);
	return make_array(device, kind, mapped, l.ndim, l.shape, l.dtype,
			  l.strides, 'C', stream, ary);
}

C_Status accel_device_array(const C_Device device, int ndim,
			    const size_t *shape, accel_dtype_t dtype,
			    const ptrdiff_t *strides, char order,
			    C_Stream stream, accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_array(device, STORAGE_DEVICE, false, ndim, shape, dtype,
			  strides, order, stream, ary);
}

C_Status accel_device_array_like(const C_Device device, accel_array_t like,
				 C_Stream stream, accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_like(device, STORAGE_DEVICE, false, like, stream, ary);
}

C_Status accel_pinned_array(const C_Device device, int ndim,
			    const size_t *shape, accel_dtype_t dtype,
			    const ptrdiff_t *strides, char order,
			    accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_array(device, STORAGE_PINNED, false, ndim, shape, dtype,
			  strides, order, NULL, ary);
}

C_Status accel_pinned_array_like(const C_Device device, accel_array_t like,
				 accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_like(device, STORAGE_PINNED, false, like, NULL, ary);
}

C_Status accel_mapped_array(const C_Device device, int ndim,
			    const size_t *shape, accel_dtype_t dtype,
			    const ptrdiff_t *strides, char order,
			    C_Stream stream, accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_array(device, STORAGE_PINNED, true, ndim, shape, dtype,
			  strides, order, stream, ary);
}

/* Register @st's bytes with every visible device but @dev's and its kin. */
static C_Status make_portable(struct storage *st, struct accel_device *dev)
{
	size_t ids[ACCEL_MAX_DEVICES], n;

	if (accel_get_device_count(&n) != C_SUCCESS ||
	    accel_get_device_list(ids) != C_SUCCESS)
		return C_FAILED;
	for (size_t i = 0; i < n; i++) {
		struct C_Device_st d = { (int)ids[i] };
		struct accel_device *other = accel_device_lookup(&d);

		if (!other || other == dev ||
		    (other->be == dev->be && dev->be->pinned_portable))
			continue;
		if (accel_host_memory_register(&d, st->ptr, st->bytes) != C_SUCCESS)
			return C_FAILED;
		st->portable_devs |= 1ull << d.id;
	}
	return C_SUCCESS;
}

C_Status storage_unportable(struct storage *st)
{
	C_Status ret = C_SUCCESS;

	for (int id = 0; id < ACCEL_MAX_DEVICES; id++) {
		struct C_Device_st d = { id };

		if ((st->portable_devs & (1ull << id)) &&
		    accel_host_memory_unregister(&d, st->ptr) != C_SUCCESS)
			ret = C_FAILED;
	}
	st->portable_devs = 0;
	return ret;
}

/* Mapped storage of @bytes on @dev with ACCEL_ARRAY_* @flags. */
static C_Status mapped_storage(struct accel_device *dev, size_t bytes,
			       unsigned int flags, struct storage **out)
{
	struct storage *st;
	void *ptr = NULL;

	if (bytes && accel_memory_alloc_host(dev, bytes,
					     flags & ACCEL_ARRAY_WRITE_COMBINED,
					     &ptr) != C_SUCCESS)
		return C_FAILED;
	if (storage_wrap(dev->id, ptr, bytes, true, &st) != C_SUCCESS) {
		if (ptr)
			accel_host_memory_deallocate(&(struct C_Device_st){ dev->id },
						     ptr, bytes);
		return C_FAILED;
	}
	st->owned = true;	/* from here on the storage frees it */
	st->mapped_kind = true;
	storage_index_add(st);
	if (bytes && (flags & ACCEL_ARRAY_PORTABLE) &&
	    make_portable(st, dev) != C_SUCCESS) {
		storage_put(st);
		return C_FAILED;
	}
	*out = st;
	return C_SUCCESS;
}

C_Status accel_mapped_array_flags(const C_Device device, int ndim,
				  const size_t *shape, accel_dtype_t dtype,
				  const ptrdiff_t *strides, char order,
				  C_Stream stream, unsigned int flags,
				  accel_array_t *ary)
{
	struct accel_device *dev;
	struct array_layout l;
	struct storage *st;
	size_t extent;

	ACCEL_ENTER();
	if (array_out_on(ary, device) != C_SUCCESS)
		return C_FAILED;
	if (flags & ~ACCEL_ARRAY_FLAGS_VALID)
		return accel_error("unknown flags %#x",
				   flags & ~ACCEL_ARRAY_FLAGS_VALID);
	dev = accel_device_lookup(device);
	if (!dev ||
	    layout_make(&l, ndim, shape, dtype, strides, order) != C_SUCCESS ||
	    layout_extent(&l, &extent) != C_SUCCESS ||
	    mapped_storage(dev, extent, flags, &st) != C_SUCCESS)
		return C_FAILED;
	return array_new(st, 0, &l, stream, false, ary);
}

C_Status accel_mapped_array_like(const C_Device device, accel_array_t like,
				 C_Stream stream, accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_like(device, STORAGE_PINNED, true, like, stream, ary);
}

C_Status accel_host_array(void *data, int ndim, const size_t *shape,
			  accel_dtype_t dtype, const ptrdiff_t *strides,
			  char order, int readonly, accel_array_t *ary)
{
	struct array_layout l;
	struct storage *st;
	size_t extent;

	ACCEL_ENTER();
	if (array_out(ary, "ary") != C_SUCCESS ||
	    layout_make(&l, ndim, shape, dtype, strides, order) != C_SUCCESS ||
	    layout_extent(&l, &extent) != C_SUCCESS)
		return C_FAILED;
	if (!data)
		return array_alloc(-1, STORAGE_HOST, false, &l, NULL, ary);
	st = storage_host(data, extent);
	if (!st)
		return C_FAILED;
	st->flags = ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE;
	return array_new(st, 0, &l, NULL, readonly, ary);
}

C_Status accel_array_release(accel_array_t ary)
{
	struct storage *st;

	ACCEL_ENTER();
	if (!ary)
		return C_SUCCESS;
	if (!array_lookup(ary))
		return C_FAILED;
	st = ary->st;
	accel_handle_remove(ary);
	ary->magic = 0;
	free(ary);
	return storage_put(st);
}

enum accel_array_kind array_kind(const struct accel_array *a)
{
	switch (a->st->kind) {
	case STORAGE_PINNED:
		return a->st->mapped_kind ? ACCEL_ARRAY_MAPPED : ACCEL_ARRAY_PINNED;
	case STORAGE_HOST:
		/* a cpu device's memory is host memory */
		return a->st->dev_id >= 0 ? ACCEL_ARRAY_DEVICE : ACCEL_ARRAY_HOST;
	default:
		return ACCEL_ARRAY_DEVICE;
	}
}

void *array_data(const struct accel_array *a)
{
	if (!layout_size(a->ndim, a->shape) || !a->st->ptr)
		return NULL;
	return (char *)a->st->ptr + a->offset;
}

C_Status accel_array_get_info(accel_array_t ary, struct accel_array_info *info)
{
	ACCEL_ENTER();
	if (!info)
		return accel_error("info is NULL");
	if (!array_lookup(ary))
		return C_FAILED;
	memset(info, 0, sizeof(*info));
	info->kind = array_kind(ary);
	info->device = ary->st->dev_id;
	info->ndim = ary->ndim;
	memcpy(info->shape, ary->shape, sizeof(info->shape));
	memcpy(info->strides, ary->strides, sizeof(info->strides));
	info->dtype = ary->dtype;
	info->size = layout_size(ary->ndim, ary->shape);
	info->nbytes = info->size * ary->dtype->size;
	info->data = array_data(ary);
	info->stream = ary->stream;
	info->readonly = ary->readonly;
	return C_SUCCESS;
}
