// SPDX-License-Identifier: MIT
/*
 * Interface views made for one device over the library's memory of another
 * (accel_array_from_interface() with the second device): the view holds the
 * producer's storage as a slice does, so maps through any handle on the
 * bytes hold the device off them, and copies between such a view and memory
 * of the device that owns them run peer to peer (overlapping ones refused
 * as within one storage).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

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
 * memory.h accel_array_from_interface: where the data lies in the
 * library's own memory, the view holds that storage and outlives the
 * producer, whatever device the view is made for: here a portable mapped
 * array of one device, viewed for the other.
 */
TEST_PEER(interface_view_on_peer_holds_producer)
{
	size_t shape[1] = { 1024 };
	double host[1024], back[1024];
	struct accel_array_interface ifc;
	struct accel_array_info info;
	accel_array_t a, v, h, out;
	accel_memory_t m;

	REQUIRE_OK(accel_mapped_array_flags(ctx->dev, 1, shape, NULL, NULL,
					    'C', NULL, ACCEL_ARRAY_PORTABLE, &a));
	REQUIRE_OK(accel_array_get_interface(a, &ifc));
	REQUIRE_OK(accel_array_from_interface(ctx->peer, &ifc, 0, &v));
	REQUIRE_OK(accel_array_get_info(v, &info));
	CHECK(info.device == ctx->peer->id);
	REQUIRE_OK(accel_array_as_memory(a, &m));
	REQUIRE_OK(accel_array_release(a));	/* the view keeps the storage */
	for (int i = 0; i < 1024; i++)
		host[i] = i + 0.5;
	REQUIRE_OK(accel_host_array(host, 1, shape, NULL, NULL, 'C', 0, &h));
	OK(accel_array_copy_to_device(v, h, NULL));
	REQUIRE_OK(accel_host_array(back, 1, shape, NULL, NULL, 'C', 0, &out));
	OK(accel_array_copy_to_host(v, out, NULL, NULL));
	CHECK(!memcmp(host, back, sizeof(host)));
	/* freed through another handle (which that ends), the view says so */
	OK(accel_memory_free(m));
	FAILS_FREED(accel_array_copy_to_device(v, h, NULL));
	FAILS_FREED(accel_array_get_info(v, &info));
	OK(accel_array_release(v));
	OK(accel_array_release(h));
	OK(accel_array_release(out));
}

/*
 * memory.h accel_memory_map: "Until as many accel_memory_unmap() calls,
 * the device does not use the storage: copies to or from it fail." The
 * view for the peer lies in the mapped storage: copies through it too.
 */
TEST_PEER(view_of_mapped_memory_is_not_copied)
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
TEST_PEER(last_view_of_mapped_memory_is_kept)
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
TEST_PEER(memory_mapped_through_view_is_not_freed)
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

/*
 * A memory handle on a view for the peer of the device's device memory
 * (*@vm), the memory under it (*@m), its bytes patterned: only a cpu
 * device takes another's device memory.
 */
static void device_memory_and_view(struct suite_ctx *ctx, accel_memory_t *m,
				   accel_memory_t *vm)
{
	uint8_t pat[ENTRIES];
	size_t shape[1] = { ENTRIES };
	struct accel_array_interface ifc;
	struct accel_memory_info info;
	accel_array_t a, v;

	if (!is_cpu(ctx))
		suite_skip("only a cpu device takes another's device memory");
	fill_pattern(pat, sizeof(pat), 3);
	REQUIRE_OK(accel_memory_create(ctx->dev, ENTRIES,
				       accel_dtype(ACCEL_UINT8), pat, 0, m));
	REQUIRE_OK(accel_memory_as_array(*m, 1, shape, NULL, 'C', &a));
	REQUIRE_OK(accel_array_get_interface(a, &ifc));
	REQUIRE_OK(accel_array_from_interface(ctx->peer, &ifc, 0, &v));
	REQUIRE_OK(accel_array_as_memory(v, vm));
	REQUIRE_OK(accel_memory_get_info(*vm, &info));
	CHECK(info.device == ctx->peer->id);
	OK(accel_array_release(v));
	OK(accel_array_release(a));
}

/*
 * memory.h accel_memory_copy: "Memory of two devices is copied peer to
 * peer": a handle on the peer's view of the device's memory and another
 * handle of the device copy both ways.
 */
TEST_PEER(view_copies_with_memory_of_its_bytes_device)
{
	uint8_t pat[ENTRIES], back[ENTRIES];
	accel_memory_t m, vm, n;
	accel_stream_t s;

	device_memory_and_view(ctx, &m, &vm);
	fill_pattern(pat, sizeof(pat), 3);
	REQUIRE_OK(accel_memory_create(ctx->dev, ENTRIES,
				       accel_dtype(ACCEL_UINT8), NULL, 0, &n));
	OK(accel_memory_copy(n, vm, 16, 0, 0));	/* view -> device */
	OK(accel_memory_copy_to(n, back, 16, 0));
	CHECK(!memcmp(back, pat, 16));
	OK(accel_memory_copy(vm, n, 16, 100, 0));	/* device -> view */
	OK(accel_memory_copy_to(m, back, 16, 100));
	CHECK(!memcmp(back, pat, 16));
	/* the device's engine runs it: queued, on a stream of that device */
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	OK(accel_memory_copy_async(n, vm, s, 16, 32, 200));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_memory_copy_to(n, back, 16, 32));
	CHECK(!memcmp(back, pat + 200, 16));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_memory_release(n));
	OK(accel_memory_release(vm));
	OK(accel_memory_release(m));
}

/*
 * docs "Memory objects": copies "refuse overlapping ranges of one
 * storage". The view holds the device's storage as a slice does: a copy
 * between it and that storage over the same bytes is refused as an
 * overlap, and disjoint ranges of it are copied.
 */
TEST_PEER(view_and_its_producer_overlap_as_one_storage)
{
	uint8_t pat[ENTRIES], back[ENTRIES];
	accel_memory_t m, vm;

	device_memory_and_view(ctx, &m, &vm);
	fill_pattern(pat, sizeof(pat), 3);
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy(vm, m, ENTRIES - 1, 1, 0));
	CHECK(strstr(accel_get_last_error(), "overlap"));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy(m, vm, ENTRIES - 1, 0, 1));
	CHECK(strstr(accel_get_last_error(), "overlap"));
	OK(accel_memory_copy(vm, m, 16, 512, 0));
	OK(accel_memory_copy_to(m, back, ACCEL_ALL, 0));
	CHECK(!memcmp(back + 512, pat, 16));
	CHECK(!memcmp(back, pat, 512));
	OK(accel_memory_release(vm));
	OK(accel_memory_release(m));
}

/*
 * memory.h accel_memory_map: the host sees what queued work wrote. A view
 * for the peer of host memory of the device under test, mapped through
 * the view while the device's copy into that memory is queued.
 */
TEST_PEER(map_through_a_view_waits_for_the_producers_device)
{
	enum { N = 1024 };
	uint8_t *buf = dalloc(ctx, 2 * BUSY_HALF);
	size_t shape[1] = { N };
	int copies = BUSY_START;
	uint8_t pattern[N];
	accel_stream_t s;

	fill_pattern(pattern, N, 77);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	for (;;) {
		struct accel_array_interface ifc;
		accel_memory_t src, vm;
		accel_array_t a, v;
		bool pending;
		void *p;

		REQUIRE_OK(accel_mapped_array_flags(ctx->dev, 1, shape,
						    accel_dtype(ACCEL_UINT8),
						    NULL, 'C', NULL,
						    ACCEL_ARRAY_PORTABLE, &a));
		REQUIRE_OK(accel_array_get_interface(a, &ifc));
		REQUIRE_OK(accel_array_from_interface(ctx->peer, &ifc, 0, &v));
		REQUIRE_OK(accel_array_as_memory(v, &vm));
		REQUIRE_OK(accel_memory_create(ctx->dev, N,
					       accel_dtype(ACCEL_UINT8),
					       pattern, 0, &src));
		busy_chain(ctx->dev, s, buf, copies);
		OK(accel_memory_copy_async(vm, src, s, ACCEL_ALL, 0, 0));
		pending = stream_busy(ctx->dev, s);
		REQUIRE_OK(accel_memory_map(vm, ACCEL_MAP_READ, &p));
		if (pending)
			CHECK(!memcmp(p, pattern, N));
		OK(accel_memory_unmap(vm));
		OK(accel_stream_synchronize(ctx->dev, s));
		OK(accel_memory_release(vm));
		OK(accel_memory_release(src));
		OK(accel_array_release(v));
		OK(accel_array_release(a));
		if (pending)
			break;
		try_longer(&copies);
	}
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, buf, 2 * BUSY_HALF);
}

/*
 * On a cpu device any host memory is the device's, memory of the other
 * cpu device too; but where it lies in an allocation or storage of the
 * library, the extent is checked against it and a view holds the storage.
 */
TEST_PEER(cpu_memory_of_other_device_checked_and_held)
{
	accel_dtype_t f32 = accel_dtype(ACCEL_FLOAT32);
	size_t shape[1] = { 16 };
	struct accel_array_interface ifc, big;
	struct accel_pointer_attributes at;
	accel_array_t a, v;
	accel_memory_t m;

	if (!is_cpu(ctx))
		suite_skip("only a cpu device takes any host memory");
	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape, f32, NULL, 'C', NULL,
				      &a));
	REQUIRE_OK(accel_array_get_interface(a, &ifc));
	big = ifc;
	big.shape[0] = 1 << 20;		/* 4 MiB over a 64-byte block */
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_array_from_interface(ctx->peer, &big, 0, &v));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_wrap(ctx->peer, ifc.data, 1 << 20, f32, &m));
	/* within it: fine, and the view holds the block */
	OK(accel_memory_wrap(ctx->peer, ifc.data, 16, f32, &m));
	OK(accel_memory_release(m));
	REQUIRE_OK(accel_array_from_interface(ctx->peer, &ifc, 0, &v));
	REQUIRE_OK(accel_array_release(a));
	REQUIRE_OK(accel_pointer_get_attributes(ifc.data, &at));
	CHECK(at.block_live || !at.pooled);
	CHECK(at.type != ACCEL_POINTER_UNREGISTERED);
	OK(accel_array_release(v));
	/* the last handle gone, the block is free */
	REQUIRE_OK(accel_pointer_get_attributes(ifc.data, &at));
	CHECK(!at.block_live);
}

#define VIEW_BYTES (32u << 20)

struct view_copier {
	accel_array_t view, host;
	atomic_int copies;
	atomic_bool refused;
};

static void *copy_into_view(void *arg)
{
	struct view_copier *c = arg;

	while (accel_array_copy_to_device(c->view, c->host, NULL) == ACCEL_SUCCESS)
		atomic_fetch_add(&c->copies, 1);
	atomic_store(&c->refused, true);
	return NULL;
}

/*
 * docs/libaccel.md: a free waits for copies running through other handles,
 * so a racing copy is whole or refused; memory.h: an interface view holds
 * the producer's storage "as a slice does". A view made for the peer over
 * host-accessible memory of the device: its copies run on the host, and the
 * producer's free must wait for them, not free the bytes under them (a
 * crash, or a new handle overwritten).
 */
TEST_PEER(free_waits_for_copies_through_another_devices_view)
{
	size_t shape[1] = { VIEW_BYTES };
	uint8_t *pattern = malloc(VIEW_BYTES), *out = malloc(VIEW_BYTES);
	uint8_t *ones = malloc(VIEW_BYTES);

	REQUIRE(pattern && out && ones);
	memset(pattern, 0xaa, VIEW_BYTES);
	memset(ones, 0x11, VIEW_BYTES);
	for (int round = 0; round < 4; round++) {
		struct view_copier c = { 0 };
		struct accel_array_interface ifc;
		accel_memory_t m, again;
		accel_array_t a;
		pthread_t t;

		REQUIRE_OK(accel_memory_create(ctx->dev, VIEW_BYTES,
					       accel_dtype(ACCEL_UINT8), NULL,
					       ACCEL_MEMORY_HOST_READ |
					       ACCEL_MEMORY_HOST_WRITE, &m));
		REQUIRE_OK(accel_memory_as_array(m, 1, shape, NULL, 'C', &a));
		REQUIRE_OK(accel_array_get_interface(a, &ifc));
		/* on a cpu device: the other device's memory is host memory */
		if (accel_array_from_interface(ctx->peer, &ifc, 0, &c.view) !=
		    ACCEL_SUCCESS)
			suite_skip("the peer takes no view of the device's memory");
		REQUIRE_OK(accel_host_array(pattern, 1, shape,
					    accel_dtype(ACCEL_UINT8), NULL, 'C',
					    0, &c.host));
		REQUIRE(!pthread_create(&t, NULL, copy_into_view, &c));
		while (atomic_load(&c.copies) < 2)
			usleep(100);
		OK(accel_memory_free(m));
		OK(accel_memory_create(ctx->dev, VIEW_BYTES,
				       accel_dtype(ACCEL_UINT8), ones,
				       ACCEL_MEMORY_HOST_READ |
				       ACCEL_MEMORY_HOST_WRITE, &again));
		pthread_join(t, NULL);
		CHECK(atomic_load(&c.refused));
		OK(accel_memory_copy_to(again, out, ACCEL_ALL, 0));
		CHECK(!memcmp(out, ones, VIEW_BYTES));
		OK(accel_array_release(c.view));
		OK(accel_array_release(c.host));
		OK(accel_array_release(a));
		OK(accel_memory_release(again));
	}
	free(pattern);
	free(out);
	free(ones);
}
