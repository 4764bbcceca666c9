// SPDX-License-Identifier: MIT
/*
 * The allocation registry: live allocations of one address space, sorted
 * by address, so that any pointer into an allocation finds it in O(log n).
 * Callers hold the device's reg_lock.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* index of the last allocation starting at or below addr, or -1 */
static long floor_index(const struct accel_registry *r, uintptr_t addr)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

accel_status_t accel_registry_insert(struct accel_registry *r,
			       const struct accel_allocation *a)
{
	size_t at = (size_t)(floor_index(r, a->addr) + 1);

	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct accel_allocation *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return accel_oom_error("out of host memory for the allocation registry");
		r->v = v;
		r->cap = cap;
	}
	memmove(&r->v[at + 1], &r->v[at], (r->n - at) * sizeof(*r->v));
	r->v[at] = *a;
	r->n++;
	return ACCEL_SUCCESS;
}

const struct accel_allocation *accel_registry_find_addr(const struct accel_registry *r,
						   uintptr_t addr)
{
	long i = floor_index(r, addr);

	if (i < 0 || addr - r->v[i].addr >= r->v[i].size)
		return NULL;
	return &r->v[i];
}

const struct accel_allocation *accel_registry_find(const struct accel_registry *r,
					      uintptr_t addr, size_t size)
{
	const struct accel_allocation *a = accel_registry_find_addr(r, addr);

	if (!a || size > a->size - (addr - a->addr))
		return NULL;
	return a;
}

void accel_registry_remove(struct accel_registry *r,
			   const struct accel_allocation *a)
{
	size_t at = (size_t)(a - r->v);

	memmove(&r->v[at], &r->v[at + 1], (r->n - at - 1) * sizeof(*r->v));
	r->n--;
}

const struct accel_allocation *accel_registry_overlap(const struct accel_registry *r,
						 uintptr_t addr, size_t size)
{
	long i = floor_index(r, addr + size - 1);

	if (i < 0 || r->v[i].addr + r->v[i].size <= addr)
		return NULL;
	return &r->v[i];
}
