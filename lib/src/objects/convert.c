// SPDX-License-Identifier: MIT
/*
 * Between memory handles and arrays over the same storage: an array view of
 * a memory handle's entries, a memory handle on a contiguous array's. Both
 * share the storage, reference counted as slices are.
 */
#include "objects/array.h"

accel_status_t accel_memory_as_array(accel_memory_t mem, int ndim,
			       const size_t *shape, const ptrdiff_t *strides,
			       char order, accel_array_t *ary)
{
	struct accel_memory *m;
	struct array_layout l;
	size_t extent, bytes;
	accel_status_t ret;

	ACCEL_ENTER();
	if (array_out(ary, "ary") != ACCEL_SUCCESS || !(m = memory_use(mem)))
		return ACCEL_FAILED;
	bytes = m->entries * m->dtype->size;
	ret = layout_make(&l, ndim, shape, m->dtype, strides, order);
	if (ret == ACCEL_SUCCESS)
		ret = layout_extent(&l, &extent);
	if (ret == ACCEL_SUCCESS && extent > bytes)
		ret = accel_error("the array spans %zu bytes; the memory has %zu",
				  extent, bytes);
	if (ret == ACCEL_SUCCESS) {
		storage_get(m->st);
		ret = array_new(m->st, m->offset, &l, NULL, false, ary);
	}
	memory_done(m);
	return ret;
}

accel_status_t accel_array_as_memory(accel_array_t ary, accel_memory_t *mem)
{
	struct accel_array *a ACCEL_HANDLE_REF = NULL;
	struct array_layout l;
	accel_status_t ret = ACCEL_SUCCESS;

	ACCEL_ENTER();
	if (!mem)
		return accel_error("mem is NULL");
	*mem = NULL;
	a = array_live(ary);
	if (!a || storage_use(a->st, "the array's memory") != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	array_layout_of(a, &l);
	if (a->st->dev_id < 0)
		ret = accel_error("a host array belongs to no device; a memory handle needs one");
	else if (a->readonly)
		ret = accel_error("the array is read-only; a memory handle would let it be written");
	else if (!layout_is_c_contiguous(&l) && !layout_is_f_contiguous(&l))
		ret = accel_error("the array is not contiguous; a memory handle's entries are");
	if (ret == ACCEL_SUCCESS) {
		storage_get(a->st);
		ret = memory_new(a->st, a->offset,
				 layout_size(l.ndim, l.shape), l.dtype, mem);
	}
	storage_done(a->st);
	return ret;
}
