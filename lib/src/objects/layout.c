// SPDX-License-Identifier: MIT
/*
 * Array layouts, as NumPy defines them: shapes, byte strides, contiguity,
 * and the extent of memory an array spans.
 */
#include <string.h>

#include "objects/array.h"

size_t layout_size(int ndim, const size_t *shape)
{
	size_t n = 1;

	for (int i = 0; i < ndim; i++)
		n *= shape[i];
	return n;
}

static accel_status_t check_shape(int ndim, const size_t *shape,
			    accel_dtype_t dtype)
{
	size_t n, bytes;

	if (!dtype)
		return accel_error("the dtype is NULL");
	if (ndim < 0 || ndim > ACCEL_MAX_DIMS)
		return accel_error("%d dimensions is not 0 to %d", ndim,
				   ACCEL_MAX_DIMS);
	if (ndim && !shape)
		return accel_error("the shape is NULL");
	/*
	 * An empty axis does not make the others' product fit: contiguous
	 * strides are made of it (NumPy refuses such shapes too)
	 */
	n = 1;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] > PTRDIFF_MAX ||
		    !mul_ok(n, shape[i] ? shape[i] : 1, &n))
			return accel_error("the shape's product overflows at axis %d (%zu)",
					   i, shape[i]);
	}
	if (!mul_ok(n, dtype->size, &bytes) || bytes > PTRDIFF_MAX)
		return accel_error("the shape's %zu entries (empty axes counted as 1) of %s overflow",
				   n, dtype->name);
	return ACCEL_SUCCESS;
}

void layout_contiguous(struct array_layout *l, char order)
{
	ptrdiff_t stride = (ptrdiff_t)l->dtype->size;

	for (int k = 0; k < l->ndim; k++) {
		int i = order == 'F' ? k : l->ndim - 1 - k;

		l->strides[i] = stride;
		stride *= (ptrdiff_t)(l->shape[i] ? l->shape[i] : 1);
	}
}

accel_status_t layout_make(struct array_layout *l, int ndim, const size_t *shape,
		     accel_dtype_t dtype, const ptrdiff_t *strides,
		     char order)
{
	size_t extent;

	memset(l, 0, sizeof(*l));
	if (!dtype)	/* Numba's default, as numpy.empty's */
		dtype = accel_dtype(ACCEL_FLOAT64);
	if (check_shape(ndim, shape, dtype) != ACCEL_SUCCESS)
		return ACCEL_FAILED;
	if (order != 'C' && order != 'F')
		return accel_error("order '%c' is not 'C' or 'F'", order);
	l->ndim = ndim;
	l->dtype = dtype;
	if (ndim)
		memcpy(l->shape, shape, (size_t)ndim * sizeof(*shape));
	if (!strides) {
		layout_contiguous(l, order);
		return ACCEL_SUCCESS;
	}
	for (int i = 0; i < ndim; i++) {
		if (strides[i] < 0)
			return accel_error("stride %td of axis %d is negative; arrays here have strides of 0 or more",
					   strides[i], i);
		/* an axis of one entry or none never steps to a next one */
		if (shape[i] > 1 &&
		    (size_t)strides[i] % dtype_align(dtype))
			return accel_error("stride %td of axis %d is not a multiple of %zu, the alignment of %s: its entries would be misaligned",
					   strides[i], i, dtype_align(dtype),
					   dtype->name);
		l->strides[i] = strides[i];
	}
	return layout_extent(l, &extent);
}

accel_status_t layout_extent(const struct array_layout *l, size_t *extent)
{
	size_t end = l->dtype->size, step;

	*extent = 0;
	if (!layout_size(l->ndim, l->shape))
		return ACCEL_SUCCESS;
	for (int i = 0; i < l->ndim; i++) {
		if (!mul_ok(l->shape[i] - 1, (size_t)l->strides[i], &step) ||
		    __builtin_add_overflow(end, step, &end) || end > PTRDIFF_MAX)
			return accel_error("the strides reach past the address space at axis %d",
					   i);
	}
	*extent = end;
	return ACCEL_SUCCESS;
}

void layout_contiguous_like(struct array_layout *l)
{
	int axes[ACCEL_MAX_DIMS];
	ptrdiff_t stride = (ptrdiff_t)l->dtype->size;

	/* axes from the smallest stride up; ties keep C order */
	for (int i = 0; i < l->ndim; i++)
		axes[i] = l->ndim - 1 - i;
	for (int i = 1; i < l->ndim; i++) {
		for (int j = i; j > 0 &&
		     l->strides[axes[j]] < l->strides[axes[j - 1]]; j--) {
			int t = axes[j];

			axes[j] = axes[j - 1];
			axes[j - 1] = t;
		}
	}
	for (int k = 0; k < l->ndim; k++) {
		l->strides[axes[k]] = stride;
		stride *= (ptrdiff_t)(l->shape[axes[k]] ? l->shape[axes[k]] : 1);
	}
}

/* Contiguous from the last axis back (C) or the first on (F). */
static bool contiguous(const struct array_layout *l, bool fortran)
{
	ptrdiff_t expect = (ptrdiff_t)l->dtype->size;

	if (!layout_size(l->ndim, l->shape))
		return true;
	for (int k = 0; k < l->ndim; k++) {
		int i = fortran ? k : l->ndim - 1 - k;

		if (l->shape[i] == 1)
			continue;
		if (l->strides[i] != expect)
			return false;
		expect *= (ptrdiff_t)l->shape[i];
	}
	return true;
}

bool layout_is_c_contiguous(const struct array_layout *l)
{
	return contiguous(l, false);
}

bool layout_is_f_contiguous(const struct array_layout *l)
{
	return contiguous(l, true);
}

/* The axes that are not 1 long, as (extent, stride) pairs. */
static int squeeze(const struct array_layout *l, size_t *shape,
		   ptrdiff_t *strides)
{
	int n = 0;

	for (int i = 0; i < l->ndim; i++) {
		if (l->shape[i] == 1)
			continue;
		shape[n] = l->shape[i];
		strides[n++] = l->strides[i];
	}
	return n;
}

bool layout_compatible(const struct array_layout *a,
		       const struct array_layout *b)
{
	size_t sa[ACCEL_MAX_DIMS], sb[ACCEL_MAX_DIMS];
	ptrdiff_t ta[ACCEL_MAX_DIMS], tb[ACCEL_MAX_DIMS];
	int na, nb;

	if (a->dtype != b->dtype)
		return false;
	if (!layout_size(a->ndim, a->shape) || !layout_size(b->ndim, b->shape))
		return a->ndim == b->ndim &&
		       !memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(*a->shape));
	na = squeeze(a, sa, ta);
	nb = squeeze(b, sb, tb);
	return na == nb && !memcmp(sa, sb, (size_t)na * sizeof(*sa)) &&
	       !memcmp(ta, tb, (size_t)na * sizeof(*ta));
}
