// SPDX-License-Identifier: MIT
/*
 * Contract violations a review found (review 3) in interface views made
 * for one device over the library's memory of another: maps through any
 * handle on the bytes, and copies between such a view and memory of the
 * device that owns them.
 */
#include <accel/memory.h>

#include "suite.h"

#define ENTRIES 1024

/*
 * A view for the peer (*@v) of a portable mapped array of the device under
 * test, and a memory handle on that array (*@m), which holds its storage.
 */
static void mapped_and_view(struct suite_ctx *ctx, accel_memory_t *m,
			    accel_array_t *v)
{
	size_t shape[1] = { ENTRIES };
	struct accel_array_interface ifc;
	accel_array_t a;

	REQUIRE_OK(accel_mapped_array_flags(ctx->dev, 1, shape, NULL, NULL,
					    'C', NULL, ACCEL_ARRAY_PORTABLE, &a));
	REQUIRE_OK(accel_array_get_interface(a, &ifc));
	REQUIRE_OK(accel_array_from_interface(ctx->peer, &ifc, 0, v));
	REQUIRE_OK(accel_array_as_memory(a, m));
	REQUIRE_OK(accel_array_release(a));
}

/*
 * memory.h accel_memory_map: "Until as many accel_memory_unmap() calls,
 * the device does not use the storage: copies to or from it fail." The
 * view for the peer lies in the mapped storage: copies through it too.
 */
TEST_PEER(review3_view_of_mapped_memory_is_not_copied)
{
	size_t shape[1] = { ENTRIES };
	double host[ENTRIES] = { 0 };
	struct accel_memory_info info;
	accel_memory_t m, vm;
	accel_array_t v, h;
	void *p;

	mapped_and_view(ctx, &m, &v);
	REQUIRE_OK(accel_host_array(host, 1, shape, NULL, NULL, 'C', 0, &h));
	REQUIRE_OK(accel_array_as_memory(v, &vm));
	REQUIRE_OK(accel_memory_map(m, ACCEL_MAP_READ | ACCEL_MAP_WRITE, &p));
	FAILS_WITH(ACCEL_ERROR_IN_USE, accel_array_copy_to_device(v, h, NULL));
	FAILS_WITH(ACCEL_ERROR_IN_USE,
		   accel_array_copy_to_host(v, h, NULL, NULL));
	/* the view's handle says the bytes are mapped */
	OK(accel_memory_get_info(vm, &info));
	CHECK(info.mapped == 1);
	OK(accel_memory_unmap(m));
	OK(accel_array_copy_to_device(v, h, NULL));
	/* and a map through the view holds the producer's device off */
	REQUIRE_OK(accel_memory_map(vm, ACCEL_MAP_READ, &p));
	FAILS_WITH(ACCEL_ERROR_IN_USE, accel_memory_copy_from(m, host,
							      ACCEL_ALL, 0));
	OK(accel_memory_unmap(vm));
	OK(accel_memory_copy_from(m, host, ACCEL_ALL, 0));
	OK(accel_memory_release(vm));
	OK(accel_memory_release(m));
	OK(accel_array_release(v));
	OK(accel_array_release(h));
}

/*
 * memory.h accel_memory_release: "The last handle on mapped memory is not
 * released"; docs "Mapped memory": when the last handle is an interface
 * view, its release is refused the same way.
 */
TEST_PEER(review3_last_view_of_mapped_memory_is_kept)
{
	accel_memory_t m, vm;
	accel_array_t v;
	double *p;

	mapped_and_view(ctx, &m, &v);
	REQUIRE_OK(accel_memory_map(m, ACCEL_MAP_READ | ACCEL_MAP_WRITE,
				    (void **)&p));
	OK(accel_memory_release(m));	/* the view still holds the bytes */
	FAILS_WITH(ACCEL_ERROR_IN_USE, accel_array_release(v));
	p[ENTRIES - 1] = 1.5;		/* the mapping still points at them */
	/* a handle on the view to unmap with, then the view may go */
	REQUIRE_OK(accel_array_as_memory(v, &vm));
	FAILS_WITH(ACCEL_ERROR_IN_USE, accel_memory_free(vm));
	OK(accel_array_release(v));	/* not the last handle now */
	FAILS_WITH(ACCEL_ERROR_IN_USE, accel_memory_release(vm));
	OK(accel_memory_unmap(vm));
	OK(accel_memory_release(vm));
}

/*
 * memory.h accel_memory_free: "Mapped memory is not freed: the call fails
 * until it is unmapped", mapped through a view of it too.
 */
TEST_PEER(review3_memory_mapped_through_view_is_not_freed)
{
	accel_memory_t m, vm;
	accel_array_t v;
	double *p;

	mapped_and_view(ctx, &m, &v);
	REQUIRE_OK(accel_array_as_memory(v, &vm));
	REQUIRE_OK(accel_memory_map(vm, ACCEL_MAP_READ | ACCEL_MAP_WRITE,
				    (void **)&p));
	FAILS_WITH(ACCEL_ERROR_IN_USE, accel_memory_free(m));
	CHECK(accel_memory_is_valid(m));
	p[ENTRIES - 1] = 2.5;
	OK(accel_memory_unmap(vm));
	OK(accel_memory_free(m));
	CHECK(!accel_memory_is_valid(vm));
	OK(accel_memory_release(vm));
	OK(accel_array_release(v));
}
