/* SPDX-License-Identifier: MIT */
/* Arrays: layouts (shape, strides, dtype) and the handles over storages. */
#ifndef ACCEL_ARRAY_H
#define ACCEL_ARRAY_H

#include "objects/object.h"

struct array_layout {
	int ndim;
	size_t shape[ACCEL_MAX_DIMS];
	ptrdiff_t strides[ACCEL_MAX_DIMS];
	accel_dtype_t dtype;
};

/* layout.c */
/* check and fill @l; NULL @strides: contiguous in @order ('C' or 'F') */
accel_status_t layout_make(struct array_layout *l, int ndim, const size_t *shape,
		     accel_dtype_t dtype, const ptrdiff_t *strides,
		     char order);
/* the product of the shape (checked not to overflow by layout_make) */
size_t layout_size(int ndim, const size_t *shape);
/* bytes from entry 0 to the end of the last entry; 0 when empty */
accel_status_t layout_extent(const struct array_layout *l, size_t *extent);
/* contiguous strides with the axes in the order of @l's strides */
void layout_contiguous_like(struct array_layout *l);
/* contiguous strides for @order */
void layout_contiguous(struct array_layout *l, char order);
bool layout_is_c_contiguous(const struct array_layout *l);
bool layout_is_f_contiguous(const struct array_layout *l);
/* same dtype, and shape and strides equal once axes of 1 are dropped */
bool layout_compatible(const struct array_layout *a,
		       const struct array_layout *b);

/* array.c */
/* a new array handle over @st (whose reference it takes over) */
accel_status_t array_new(struct storage *st, size_t offset,
		   const struct array_layout *l, accel_stream_t stream,
		   bool readonly, accel_array_t *out);
/* who lends memory to an array (a DLPack producer), and how it is told */
struct lender {
	void (*release)(void *arg);
	void *arg;
};
/*
 * array_new() over @st, whose bytes @lender (if not NULL) lends: it is told
 * when they are released, unless the array could not be made (then the
 * caller still owns what was lent); *@out must be NULL before
 */
accel_status_t array_new_lent(struct storage *st, size_t offset,
			const struct array_layout *l, accel_stream_t stream,
			bool readonly, const struct lender *lender,
			accel_array_t *out);
/* no array in *@out until one is made; an error if @out is NULL */
accel_status_t array_out(accel_array_t *out, const char *name);
/*
 * array_out() of "ary" for a constructor on @device, which must exist, for
 * @stream, which must be NULL or a live stream of it
 */
accel_status_t array_out_on(accel_array_t *out, const accel_device_t device,
		      accel_stream_t stream);
void array_layout_of(const struct accel_array *a, struct array_layout *l);
enum accel_array_kind array_kind(const struct accel_array *a);
/* the first entry, or NULL when the array is empty */
void *array_data(const struct accel_array *a);

/* array_view.c */
/*
 * The layout @iface describes, and its extent in bytes, checked: a data
 * pointer that is not NULL, does not wrap the address space and is aligned
 * for the dtype (when there are bytes at all)
 */
accel_status_t interface_checked(const struct accel_array_interface *iface,
			   struct array_layout *l, size_t *extent);
/*
 * A view of the library's own storage @st (a reference taken) that holds
 * the interface's data: it keeps the storage alive, as Numba's view keeps
 * its producer, and must lie inside it. A lender's memory is the
 * library's: it is given back at once.
 */
accel_status_t view_of_storage(struct storage *st,
			 const struct accel_array_interface *iface,
			 const struct array_layout *l, size_t extent,
			 const struct lender *lender, accel_array_t *ary);
/*
 * accel_array_from_interface(), told the lender of the memory, if any:
 * called when the view no longer needs it (on success only)
 */
accel_status_t array_from_interface(const accel_device_t device,
			      const struct accel_array_interface *iface,
			      int sync, const struct lender *lender,
			      accel_array_t *ary);

#endif /* ACCEL_ARRAY_H */
