// SPDX-License-Identifier: MIT
/*
 * Between memory handles and arrays over the same storage: an array view of
 * a memory handle's entries, a memory handle on a contiguous array's. Both
 * share the storage, reference counted as slices are.
 */
#include "array.h"

C_Status accel_memory_as_array(accel_memory_t mem, int ndim,
			       const size_t *shape, const ptrdiff_t *strides,
			       char order, accel_array_t *ary)
{
	struct array_layout l;
	size_t extent, bytes;
	C_Status ret;

	ACCEL_ENTER();
	if (array_out(ary, "ary") != C_SUCCESS || !memory_use(mem))
		return C_FAILED;
	bytes = mem->entries * mem->dtype->size;
	ret = layout_make(&l, ndim, shape, mem->dtype, strides, order);
	if (ret == C_SUCCESS)
		ret = layout_extent(&l, &extent);
	if (ret == C_SUCCESS && extent > bytes)
		ret = accel_error("the array spans %zu bytes; the memory has %zu",
				  extent, bytes);
	if (ret == C_SUCCESS) {
		storage_get(mem->st);
		ret = array_new(mem->st, mem->offset, &l, NULL, false, ary);
	}
	storage_done(mem->st);
	return ret;
}

C_Status accel_array_as_memory(accel_array_t ary, accel_memory_t *mem)
{
	struct array_layout l;
	C_Status ret = C_SUCCESS;

	ACCEL_ENTER();
	if (!mem)
		return accel_error("mem is NULL");
	*mem = NULL;
	if (!array_lookup(ary))
		return C_FAILED;
	if (storage_use(ary->st, "the array's memory") != C_SUCCESS)
		return C_FAILED;
	array_layout_of(ary, &l);
	if (ary->st->dev_id < 0)
		ret = accel_error("a host array belongs to no device; a memory handle needs one");
	else if (ary->readonly)
		ret = accel_error("the array is read-only; a memory handle would let it be written");
	else if (!layout_is_c_contiguous(&l) && !layout_is_f_contiguous(&l))
		ret = accel_error("the array is not contiguous; a memory handle's entries are");
	if (ret == C_SUCCESS) {
		storage_get(ary->st);
		ret = memory_new(ary->st, ary->offset,
				 layout_size(l.ndim, l.shape), l.dtype, mem);
	}
	storage_done(ary->st);
	return ret;
}
