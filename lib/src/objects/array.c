// SPDX-License-Identifier: MIT
/*
 * Arrays (Numba's device, pinned and mapped arrays, and NumPy host arrays):
 * a shape, strides and a dtype over a storage; creation and transfers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "objects/array.h"

struct accel_array *array_lookup(accel_array_t ary)
{
	struct accel_array *a = accel_handle_get(ary, ACCEL_HANDLE_ARRAY);

	if (!a)
		accel_handle_error("%p is not a live array (released, or never one)",
				   (void *)ary);
	else
		accel_error_device_id(a->st->dev_id);
	return a;
}

bool array_freed(struct accel_array *a)
{
	return storage_is_freed(a->st);
}

struct accel_array *array_live(accel_array_t ary)
{
	struct accel_array *a = array_lookup(ary);

	if (a && array_freed(a)) {
		accel_handle_put(a);
		accel_handle_error("the memory of array %p was freed with accel_memory_free()",
				   (void *)ary);
		return NULL;
	}
	return a;
}

accel_status_t array_new(struct storage *st, size_t offset,
		   const struct array_layout *l, accel_stream_t stream,
		   bool readonly, accel_array_t *out)
{
	struct accel_array *a = calloc(1, sizeof(*a));

	if (!a || !accel_handle_new(ACCEL_HANDLE_ARRAY, a)) {
		free(a);
		storage_put(st);
		return accel_oom_error("out of host memory for an array");
	}
	a->st = st;
	a->offset = offset;
	a->ndim = l->ndim;
	memcpy(a->shape, l->shape, sizeof(a->shape));
	memcpy(a->strides, l->strides, sizeof(a->strides));
	a->dtype = l->dtype;
	a->stream = stream;
	a->readonly = readonly;
	*out = (accel_array_t)a->handle;
	return ACCEL_SUCCESS;
}

accel_status_t array_new_lent(struct storage *st, size_t offset,
			const struct array_layout *l, accel_stream_t stream,
			bool readonly, const struct lender *lender,
			accel_array_t *out)
{
	if (!lender)
		return array_new(st, offset, l, stream, readonly, out);
	/*
	 * The lender is told only once the array exists, and set before anyone
	 * can release it: our own reference keeps the storage until then.
	 */
	storage_get(st);
	if (array_new(st, offset, l, stream, readonly, out) == ACCEL_SUCCESS) {
		st->lender_release = lender->release;
		st->lender = lender->arg;
	}
	storage_put(st);
	return *out ? ACCEL_SUCCESS : ACCEL_FAILED;
}

accel_status_t array_out(accel_array_t *out, const char *name)
{
	if (!out)
		return accel_error("%s is NULL", name);
	*out = NULL;
	return ACCEL_SUCCESS;
}

accel_status_t array_out_on(accel_array_t *out, const accel_device_t device,
		      accel_stream_t stream)
{
	if (array_out(out, "ary") != ACCEL_SUCCESS || !accel_device_lookup(device))
		return ACCEL_FAILED;
	return stream_check(device->id, stream);
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
static accel_status_t array_alloc(int dev_id, enum storage_kind kind, bool mapped,
			    const struct array_layout *l, accel_stream_t stream,
			    bool readonly, accel_array_t *ary)
{
	unsigned int flags = kind == STORAGE_DEVICE ? 0 :
			     ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE;
	struct storage *st;
	size_t extent;

	if (layout_extent(l, &extent) != ACCEL_SUCCESS ||
	    storage_alloc(dev_id, kind, extent, flags, stream, &st) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	st->mapped_kind = mapped;
	return array_new(st, 0, l, stream, readonly, ary);
}

static accel_status_t make_array(const accel_device_t device, enum storage_kind kind,
			   bool mapped, int ndim, const size_t *shape,
			   accel_dtype_t dtype, const ptrdiff_t *strides,
			   char order, accel_stream_t stream, accel_array_t *ary)
{
	struct array_layout l;

	if (array_out_on(ary, device, stream) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (layout_make(&l, ndim, shape, dtype, strides, order) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return array_alloc(device->id, kind, mapped, &l, stream, false, ary);
}

/* make_array() with @like's shape and dtype, contiguous in its axis order */
static accel_status_t make_like(const accel_device_t device, enum storage_kind kind,
			  bool mapped, accel_array_t like, accel_stream_t stream,
			  accel_array_t *ary)
{
	struct accel_array *a ACCEL_HANDLE_REF = NULL;
	struct array_layout l;

	if (ary)
		*ary = NULL;
	a = array_live(like);
	if (!a)
		return ACCEL_FAILED;
	array_layout_of(a, &l);
	layout_contiguous_like(&l);
	return make_array(device, kind, mapped, l.ndim, l.shape, l.dtype,
			  l.strides, 'C', stream, ary);
}

accel_status_t accel_device_array(const accel_device_t device, int ndim,
			    const size_t *shape, accel_dtype_t dtype,
			    const ptrdiff_t *strides, char order,
			    accel_stream_t stream, accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_array(device, STORAGE_DEVICE, false, ndim, shape, dtype,
			  strides, order, stream, ary);
}

accel_status_t accel_device_array_like(const accel_device_t device, accel_array_t like,
				 accel_stream_t stream, accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_like(device, STORAGE_DEVICE, false, like, stream, ary);
}

accel_status_t accel_pinned_array(const accel_device_t device, int ndim,
			    const size_t *shape, accel_dtype_t dtype,
			    const ptrdiff_t *strides, char order,
			    accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_array(device, STORAGE_PINNED, false, ndim, shape, dtype,
			  strides, order, NULL, ary);
}

accel_status_t accel_pinned_array_like(const accel_device_t device, accel_array_t like,
				 accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_like(device, STORAGE_PINNED, false, like, NULL, ary);
}

accel_status_t accel_mapped_array(const accel_device_t device, int ndim,
			    const size_t *shape, accel_dtype_t dtype,
			    const ptrdiff_t *strides, char order,
			    accel_stream_t stream, accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_array(device, STORAGE_PINNED, true, ndim, shape, dtype,
			  strides, order, stream, ary);
}

/* End the registrations of [ptr, ...) with the devices in @devs. */
static accel_status_t unregister_devs(void *ptr, uint64_t devs)
{
	accel_status_t ret = ACCEL_SUCCESS;

	for (int id = 0; id < ACCEL_MAX_DEVICES; id++) {
		struct accel_device_id d = { id };

		if ((devs & (1ull << id)) &&
		    accel_host_memory_unregister(&d, ptr) != ACCEL_SUCCESS)
			ret = ACCEL_FAILED;
	}
	return ret;
}

static bool backend_in(const struct accel_backend *be,
		       const struct accel_backend *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == be)
			return true;
	return false;
}

/*
 * Register [ptr, ptr + bytes), pinned for @pinned_on already, with every
 * other visible device, but for devices of a backend whose pinned memory
 * is portable (cuda) once per backend; the devices go into *@devs.
 */
static accel_status_t register_everywhere(void *ptr, size_t bytes,
				    struct accel_device *pinned_on,
				    uint64_t *devs)
{
	const struct accel_backend *done[ACCEL_MAX_DEVICES];
	size_t ids[ACCEL_MAX_DEVICES], n, ndone = 0;

	if (accel_get_device_count(&n) != ACCEL_SUCCESS ||
	    accel_get_device_list(ids) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (pinned_on->be->pinned_portable)
		done[ndone++] = pinned_on->be;
	for (size_t i = 0; i < n; i++) {
		struct accel_device_id d = { (int)ids[i] };
		struct accel_device *other = accel_device_lookup(&d);

		if (!other || other == pinned_on ||
		    backend_in(other->be, done, ndone))
			continue;
		if (accel_host_memory_register(&d, ptr, bytes) != ACCEL_SUCCESS)
			return ACCEL_FAILED;
		*devs |= 1ull << d.id;
		if (other->be->pinned_portable)
			done[ndone++] = other->be;
	}
	return ACCEL_SUCCESS;
}

accel_status_t storage_unportable(struct storage *st)
{
	accel_status_t ret = unregister_devs(st->ptr, st->portable_devs);

	st->portable_devs = 0;
	if (st->portable_pages && munmap(st->ptr, st->bytes))
		ret = accel_errno_error(errno, "cannot unmap portable memory");
	return ret;
}

/*
 * Portable pinned memory: ordinary pages of ours, registered with @dev
 * first and then with every other device, so that any device pins them
 * (memory one device allocated, mapped from its driver, may be no memory
 * another can pin).
 */
static accel_status_t portable_pages(struct accel_device *dev, size_t bytes,
			       void **ptr, uint64_t *devs)
{
	struct accel_device_id d = { dev->id };

	*devs = 0;
	*ptr = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*ptr == MAP_FAILED) {
		*ptr = NULL;
		return accel_errno_error(errno, "cannot map %zu bytes of host memory",
					 bytes);
	}
	if (accel_host_memory_register(&d, *ptr, bytes) == ACCEL_SUCCESS) {
		*devs = 1ull << dev->id;
		if (register_everywhere(*ptr, bytes, dev, devs) == ACCEL_SUCCESS)
			return ACCEL_SUCCESS;
	}
	unregister_devs(*ptr, *devs);
	munmap(*ptr, bytes);
	*ptr = NULL;
	return ACCEL_FAILED;
}

/*
 * Mapped storage of @bytes on @dev with ACCEL_ARRAY_* @flags: pinned memory
 * of @dev (write-combined if asked). Portable memory is ordinary pages
 * registered with every device, unless it is write-combined memory of a
 * backend whose pinned memory is portable (cuda): that is registered with
 * the devices of other backends. Elsewhere a device's write-combined memory
 * is no memory other devices can pin, and portability wins.
 */
static accel_status_t mapped_storage(struct accel_device *dev, size_t bytes,
			       unsigned int flags, struct storage **out)
{
	bool wc = flags & ACCEL_ARRAY_WRITE_COMBINED;
	bool portable = bytes && (flags & ACCEL_ARRAY_PORTABLE);
	bool pages = portable && !(wc && dev->be->pinned_portable);
	struct accel_device_id d = { dev->id };
	uint64_t devs = 0;
	struct storage *st;
	void *ptr = NULL;
	accel_status_t ret;

	if (pages)
		ret = portable_pages(dev, bytes, &ptr, &devs);
	else
		ret = bytes ? accel_memory_alloc_host(dev, bytes, wc, &ptr) :
			      ACCEL_SUCCESS;
	if (ret != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (storage_wrap(dev->id, ptr, bytes, true, &st) != ACCEL_SUCCESS) {
		if (pages) {
			unregister_devs(ptr, devs);
			munmap(ptr, bytes);
		} else if (ptr) {
			accel_host_memory_deallocate(&d, ptr, bytes);
		}
		return ACCEL_FAILED;
	}
	if (!bytes) {	/* nothing to find, but a mapped array all the same */
		st->kind = STORAGE_PINNED;
		st->flags = ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE;
	}
	/* from here on the storage gives the memory back */
	st->owned = !pages;
	st->portable_pages = pages;
	st->portable_devs = devs;
	st->mapped_kind = true;
	storage_index_add(st);
	if (portable && !pages &&
	    register_everywhere(ptr, bytes, dev, &st->portable_devs) != ACCEL_SUCCESS) {
		storage_put(st);
		return ACCEL_FAILED;
	}
	*out = st;
	return ACCEL_SUCCESS;
}

accel_status_t accel_mapped_array_flags(const accel_device_t device, int ndim,
				  const size_t *shape, accel_dtype_t dtype,
				  const ptrdiff_t *strides, char order,
				  accel_stream_t stream, unsigned int flags,
				  accel_array_t *ary)
{
	struct accel_device *dev;
	struct array_layout l;
	struct storage *st;
	size_t extent;

	ACCEL_ENTER();
	if (array_out_on(ary, device, stream) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (flags & ~ACCEL_ARRAY_FLAGS_VALID)
		return accel_error("unknown flags %#x",
				   flags & ~ACCEL_ARRAY_FLAGS_VALID);
	dev = accel_device_lookup(device);
	if (!dev ||
	    layout_make(&l, ndim, shape, dtype, strides, order) != ACCEL_SUCCESS ||
	    layout_extent(&l, &extent) != ACCEL_SUCCESS ||
	    mapped_storage(dev, extent, flags, &st) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return array_new(st, 0, &l, stream, false, ary);
}

accel_status_t accel_mapped_array_like(const accel_device_t device, accel_array_t like,
				 accel_stream_t stream, accel_array_t *ary)
{
	ACCEL_ENTER();
	return make_like(device, STORAGE_PINNED, true, like, stream, ary);
}

accel_status_t accel_host_array(void *data, int ndim, const size_t *shape,
			  accel_dtype_t dtype, const ptrdiff_t *strides,
			  char order, int readonly, accel_array_t *ary)
{
	struct array_layout l;
	struct storage *st;
	size_t extent;

	ACCEL_ENTER();
	if (array_out(ary, "ary") != ACCEL_SUCCESS ||
	    layout_make(&l, ndim, shape, dtype, strides, order) != ACCEL_SUCCESS ||
	    layout_extent(&l, &extent) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (!data)
		return array_alloc(-1, STORAGE_HOST, false, &l, NULL,
				   readonly, ary);
	st = storage_host(data, extent);
	if (!st)
		return ACCEL_FAILED;
	st->flags = ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE;
	return array_new(st, 0, &l, NULL, readonly, ary);
}

accel_status_t accel_array_release(accel_array_t ary)
{
	struct accel_array *a;
	struct storage *st;
	accel_status_t ret;

	ACCEL_ENTER();
	if (!ary)
		return ACCEL_SUCCESS;
	a = array_lookup(ary);
	if (!a)
		return ACCEL_FAILED;
	st = a->st;
	/* the calls under way on it return first */
	if (!accel_handle_close(a)) {
		accel_handle_put(a);
		return accel_handle_error("array %p was released by another thread",
					  (void *)ary);
	}
	/* mapped memory keeps its last handle, as a memory handle's does */
	if (storage_last_mapped(st)) {
		accel_handle_reopen(a);
		accel_handle_put(a);
		return ACCEL_FAILED;
	}
	accel_handle_retire(a);
	free(a);
	/*
	 * another handle's release racing this one saw the storage shared:
	 * the last reference on mapped storage stays, and the mapping with it
	 */
	storage_put_unmapped(st, &ret);
	return ret;
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

accel_status_t accel_array_get_info(accel_array_t ary, struct accel_array_info *info)
{
	struct accel_array *a ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	if (!info)
		return accel_error("info is NULL");
	a = array_live(ary);
	if (!a)
		return ACCEL_FAILED;
	memset(info, 0, sizeof(*info));
	info->kind = array_kind(a);
	info->device = a->st->dev_id;
	info->ndim = a->ndim;
	memcpy(info->shape, a->shape, sizeof(info->shape));
	memcpy(info->strides, a->strides, sizeof(info->strides));
	info->dtype = a->dtype;
	info->size = layout_size(a->ndim, a->shape);
	info->nbytes = info->size * a->dtype->size;
	info->data = array_data(a);
	info->stream = a->stream;
	info->readonly = a->readonly;
	return ACCEL_SUCCESS;
}
