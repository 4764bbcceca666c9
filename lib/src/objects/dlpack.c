// SPDX-License-Identifier: MIT
/*
 * Arrays as DLPack tensors and back (<accel/dlpack.h>): the device type
 * that tells the truth about the memory, a reference held by every
 * exported tensor, and imported tensors given back when the memory goes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <accel/dlpack.h>

#include "objects/array.h"

/* An exported tensor, with the shape and strides it points to. */
struct export {
	DLManagedTensor tensor;
	struct storage *st;	/* referenced until the deleter */
	int64_t shape[ACCEL_MAX_DIMS];
	int64_t strides[ACCEL_MAX_DIMS];
};

/* The built-in types DLPack 0.6 has, in enum accel_scalar's order. */
static const DLDataType dl_types[ACCEL_SCALAR_COUNT] = {
	[ACCEL_BOOL] = { 0, 0, 0 },	/* none: lanes 0 */
	[ACCEL_INT8] = { kDLInt, 8, 1 },
	[ACCEL_UINT8] = { kDLUInt, 8, 1 },
	[ACCEL_INT16] = { kDLInt, 16, 1 },
	[ACCEL_UINT16] = { kDLUInt, 16, 1 },
	[ACCEL_INT32] = { kDLInt, 32, 1 },
	[ACCEL_UINT32] = { kDLUInt, 32, 1 },
	[ACCEL_INT64] = { kDLInt, 64, 1 },
	[ACCEL_UINT64] = { kDLUInt, 64, 1 },
	[ACCEL_FLOAT32] = { kDLFloat, 32, 1 },
	[ACCEL_FLOAT64] = { kDLFloat, 64, 1 },
};

static accel_status_t dl_type_of(accel_dtype_t dtype, DLDataType *type)
{
	for (int i = 0; i < ACCEL_SCALAR_COUNT; i++) {
		if (accel_dtype(i) == dtype && dl_types[i].lanes) {
			*type = dl_types[i];
			return ACCEL_SUCCESS;
		}
	}
	return accel_fail(ACCEL_ERROR_NOT_SUPPORTED,
			  "DLPack 0.6 has no type for dtype %s",
			  accel_dtype_name(dtype));
}

static accel_status_t dtype_of_dl(DLDataType type, accel_dtype_t *dtype)
{
	for (int i = 0; i < ACCEL_SCALAR_COUNT; i++) {
		if (dl_types[i].lanes && type.lanes == 1 &&
		    dl_types[i].code == type.code &&
		    dl_types[i].bits == type.bits) {
			*dtype = accel_dtype(i);
			return ACCEL_SUCCESS;
		}
	}
	return accel_fail(ACCEL_ERROR_NOT_SUPPORTED,
			  "no dtype for the DLPack type code %u, %u bits, %u lanes",
			  type.code, type.bits, type.lanes);
}

/* N of the device's name "backend:N": its index in its backend. */
static int backend_index(const struct accel_device *dev)
{
	const char *colon = strchr(dev->name, ':');

	return colon ? atoi(colon + 1) : 0;
}

static bool known_as(const struct accel_device *dev, enum accel_foreign what)
{
	return dev->be->known_as == what;
}

static DLDevice dl_device_of(const struct storage *st)
{
	struct accel_device_id d = { st->dev_id };
	struct accel_device *dev = st->dev_id >= 0 ? accel_device_lookup(&d) :
				   NULL;
	bool cuda = dev && known_as(dev, ACCEL_FOREIGN_CUDA);

	/* a cpu device's memory, of every kind, is host memory */
	if (!dev || known_as(dev, ACCEL_FOREIGN_HOST))
		return (DLDevice){ kDLCPU, 0 };
	switch (st->kind) {
	case STORAGE_DEVICE:
		if (cuda)
			return (DLDevice){ kDLCUDA, backend_index(dev) };
		return (DLDevice){ kDLExtDev, backend_index(dev) };
	case STORAGE_UNIFIED:
		if (cuda)
			return (DLDevice){ kDLCUDAManaged, backend_index(dev) };
		return (DLDevice){ kDLCPU, 0 };
	case STORAGE_PINNED:
		return (DLDevice){ cuda ? kDLCUDAHost : kDLCPU, 0 };
	default:
		return (DLDevice){ kDLCPU, 0 };
	}
}

accel_status_t accel_array_dlpack_device(accel_array_t ary, DLDevice *device)
{
	struct accel_array *a ACCEL_HANDLE_REF = NULL;

	ACCEL_ENTER();
	if (!device)
		return accel_error("device is NULL");
	a = array_live(ary);
	if (!a)
		return ACCEL_FAILED;
	*device = dl_device_of(a->st);
	return ACCEL_SUCCESS;
}

static void export_deleter(DLManagedTensor *tensor)
{
	struct export *e = tensor->manager_ctx;
	accel_status_t ret;

	/* mapped bytes keep their last reference, as a handle's release does */
	storage_put_unmapped(e->st, &ret);
	free(e);
}

/* The tensor's shape and strides (in entries) from @a's. */
static accel_status_t export_layout(const struct accel_array *a, struct export *e)
{
	size_t size = a->dtype->size;

	for (int i = 0; i < a->ndim; i++) {
		if (a->strides[i] % (ptrdiff_t)size)
			return accel_error("axis %d's stride of %td bytes is no multiple of the dtype's %zu: DLPack counts strides in entries",
					   i, a->strides[i], size);
		e->shape[i] = (int64_t)a->shape[i];
		e->strides[i] = a->strides[i] / (ptrdiff_t)size;
	}
	return ACCEL_SUCCESS;
}

static accel_status_t sync_stream(const struct accel_array *a)
{
	struct accel_device_id d = { a->st->dev_id };

	if (!a->stream)
		return ACCEL_SUCCESS;
	return accel_stream_synchronize(&d, a->stream);
}

accel_status_t accel_array_to_dlpack(accel_array_t ary, int sync,
			       DLManagedTensor **tensor)
{
	struct accel_array *a ACCEL_HANDLE_REF = NULL;
	struct export *e;
	DLTensor *t;

	ACCEL_ENTER();
	if (!tensor)
		return accel_error("tensor is NULL");
	*tensor = NULL;
	a = array_live(ary);
	if (!a)
		return ACCEL_FAILED;
	if (a->readonly)
		return accel_fail(ACCEL_ERROR_NOT_SUPPORTED,
				  "a read-only array cannot be exported: DLPack cannot say it is read-only");
	e = calloc(1, sizeof(*e));
	if (!e)
		return accel_oom_error("out of host memory for a DLPack tensor");
	t = &e->tensor.dl_tensor;
	if (dl_type_of(a->dtype, &t->dtype) != ACCEL_SUCCESS ||
	    export_layout(a, e) != ACCEL_SUCCESS ||
	    (sync && sync_stream(a) != ACCEL_SUCCESS)) {
		free(e);
		return ACCEL_FAILED;
	}
	t->data = array_data(a);
	t->device = dl_device_of(a->st);
	t->ndim = a->ndim;
	t->shape = e->shape;
	t->strides = e->strides;
	storage_get(a->st);
	e->st = a->st;
	e->tensor.manager_ctx = e;
	e->tensor.deleter = export_deleter;
	*tensor = &e->tensor;
	return ACCEL_SUCCESS;
}

/* The array interface (device pointer, layout in bytes) of @t. */
static accel_status_t interface_of(const DLTensor *t,
			     struct accel_array_interface *iface)
{
	accel_dtype_t dtype = NULL;
	size_t size;

	memset(iface, 0, sizeof(*iface));
	if (t->ndim < 0 || t->ndim > ACCEL_MAX_DIMS)
		return accel_error("the tensor has %d dimensions: 0 to %d are supported",
				   t->ndim, ACCEL_MAX_DIMS);
	if (t->ndim && !t->shape)
		return accel_error("the tensor's shape is NULL");
	if (dtype_of_dl(t->dtype, &dtype) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	size = accel_dtype_size(dtype);
	iface->version = 3;
	iface->ndim = t->ndim;
	snprintf(iface->typestr, sizeof(iface->typestr), "%s",
		 accel_dtype_typestr(dtype));
	iface->has_strides = t->strides != NULL;
	for (int i = 0; i < t->ndim; i++) {
		if (t->shape[i] < 0)
			return accel_error("axis %d of the tensor has %lld entries",
					   i, (long long)t->shape[i]);
		iface->shape[i] = (size_t)t->shape[i];
		if (!t->strides)
			continue;
		if (t->strides[i] < 0 ||
		    __builtin_mul_overflow(t->strides[i], (int64_t)size,
					   &iface->strides[i]))
			return accel_error("axis %d's stride of %lld entries is not supported",
					   i, (long long)t->strides[i]);
	}
	if (t->data &&
	    (uintptr_t)t->data + t->byte_offset < (uintptr_t)t->data)
		return accel_error("the tensor's byte_offset %llu runs past the end of the address space",
				   (unsigned long long)t->byte_offset);
	iface->data = t->data ? (char *)t->data + t->byte_offset : NULL;
	return ACCEL_SUCCESS;
}

/* Whether @dev may use memory of the tensor's device @dl at all. */
static accel_status_t device_takes(const struct accel_device *dev, DLDevice dl)
{
	bool cuda = known_as(dev, ACCEL_FOREIGN_CUDA);
	bool same_index = dl.device_id == backend_index(dev);

	switch ((int)dl.device_type) {
	case kDLCPU:
		return ACCEL_SUCCESS;	/* storage_wrap() says if it may */
	case kDLCUDA:
	case kDLCUDAManaged:
		if (cuda && same_index)
			return ACCEL_SUCCESS;
		break;
	case kDLCUDAHost:
		if (cuda)
			return ACCEL_SUCCESS;
		break;
	case kDLExtDev:
		if (known_as(dev, ACCEL_FOREIGN_OTHER) && same_index)
			return ACCEL_SUCCESS;
		break;
	}
	return accel_error("memory of DLPack device type %d, index %d, is not memory of %s",
			   (int)dl.device_type, dl.device_id, dev->name);
}

static bool host_accessible(DLDevice dl)
{
	return dl.device_type == kDLCPU || dl.device_type == kDLCUDAHost ||
	       dl.device_type == kDLCUDAManaged;
}

static void call_deleter(void *arg)
{
	DLManagedTensor *tensor = arg;

	if (tensor->deleter)
		tensor->deleter(tensor);
}

/*
 * A host array over the tensor's host-accessible memory, lent by it, or a
 * view of the library's own memory that holds it.
 */
static accel_status_t host_view(DLDevice dl, const struct accel_array_interface *iface,
			  const struct lender *lender, accel_array_t *ary)
{
	struct array_layout l;
	struct storage *st;
	size_t extent;

	if (!host_accessible(dl))
		return accel_error("memory of DLPack device type %d is not host memory: name the device it is memory of",
				   (int)dl.device_type);
	if (interface_checked(iface, &l, &extent) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	/* the library's own memory: shared, as a view of it (a cpu device's too) */
	st = extent ? storage_index_find(iface->data) : NULL;
	if (st)
		return view_of_storage(st, iface, &l, extent, lender, ary);
	st = storage_host(extent ? iface->data : NULL, extent);
	if (!st)
		return ACCEL_FAILED;
	st->flags = ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE;
	return array_new_lent(st, 0, &l, NULL, false, lender, ary);
}

accel_status_t accel_array_from_dlpack(const accel_device_t device,
				 DLManagedTensor *tensor, accel_array_t *ary)
{
	struct lender lender = { call_deleter, tensor };
	struct accel_array_interface iface;
	struct accel_device *dev;

	ACCEL_ENTER();
	if (array_out(ary, "ary") != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (!tensor)
		return accel_error("tensor is NULL");
	if (interface_of(&tensor->dl_tensor, &iface) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (!device)
		return host_view(tensor->dl_tensor.device, &iface, &lender, ary);
	dev = accel_device_lookup(device);
	if (!dev || device_takes(dev, tensor->dl_tensor.device) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	return array_from_interface(device, &iface, 0, &lender, ary);
}
