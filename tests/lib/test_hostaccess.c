// SPDX-License-Identifier: MIT
/*
 * Host-accessible memory, sentence by sentence of the Taichi runtime's
 * memory example (seed 003): device memory is not accessible from the
 * CPU; host-accessible memory is; map gives a host pointer, unmap ends the
 * access; read and write for convenience; mapping device-only memory is
 * refused here where Taichi crashes.
 */
#include <accel/memory.h>

#include "suite.h"

#define U32 accel_dtype(ACCEL_UINT32)
#define RW (ACCEL_MEMORY_HOST_READ | ACCEL_MEMORY_HOST_WRITE)

/* "Device memory is usually local to the compute device and is not accessible from the CPU" */
TEST(device_only_memory_cannot_be_mapped)
{
	uint32_t v[4] = { 1, 2, 3, 4 }, out[4];
	accel_memory_t m;
	void *p = (void *)1;

	REQUIRE_OK(accel_memory_create(ctx->dev, 4, U32, v, 0, &m));
	/* "Attempts to map non-host-accessible memory can lead to ... segfault" */
	FAILS(accel_memory_map(m, ACCEL_MAP_READ, &p));
	CHECK(strstr(accel_get_last_error(), "device-only") != NULL);
	CHECK(p == NULL);
	/* "The same rule applies to read() and write()" */
	FAILS(accel_memory_read(m, out, sizeof(out)));
	FAILS(accel_memory_write(m, v, sizeof(v)));
	/* and nothing broke */
	OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
	CHECK(!memcmp(v, out, sizeof(v)));
	OK(accel_memory_release(m));
}

/* "You can map the device memory to get a host visible pointer" ... "unmap" */
TEST(host_accessible_memory_maps_writes_and_reads_back)
{
	uint32_t readback[4] = { 9, 9, 9, 9 }, dev_view[4];
	struct accel_memory_info info;
	accel_memory_t m;
	uint32_t *mapped;

	REQUIRE_OK(accel_memory_create(ctx->dev, 4, U32, NULL, RW, &m));
	OK(accel_memory_get_info(m, &info));
	CHECK(info.flags == RW);
	REQUIRE_OK(accel_memory_map(m, ACCEL_MAP_WRITE, (void **)&mapped));
	REQUIRE(mapped);
	for (uint32_t i = 0; i < 4; i++)
		mapped[i] = i;
	OK(accel_memory_get_info(m, &info));
	CHECK(info.mapped == 1);
	OK(accel_memory_unmap(m));
	/* "You can also use read() and write() for convenience" */
	OK(accel_memory_read(m, readback, sizeof(readback)));
	for (uint32_t i = 0; i < 4; i++)
		CHECK(readback[i] == i);
	/* the device sees what the host wrote */
	OK(accel_memory_copy_to(m, dev_view, ACCEL_ALL, 0));
	CHECK(!memcmp(dev_view, readback, sizeof(readback)));
	for (uint32_t i = 0; i < 4; i++)
		readback[i] = 100 + i;
	OK(accel_memory_write(m, readback, sizeof(readback)));
	OK(accel_memory_copy_to(m, dev_view, ACCEL_ALL, 0));
	CHECK(!memcmp(dev_view, readback, sizeof(readback)));
	OK(accel_memory_release(m));
}

TEST(map_waits_for_the_device)
{
	const size_t n = 1 << 18;
	uint32_t *in = xmalloc(n * 4);
	accel_memory_t m;
	accel_stream_t s;
	void *p;

	for (size_t i = 0; i < n; i++)
		in[i] = (uint32_t)i * 3;
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_memory_create(ctx->dev, n, U32, NULL, RW, &m));
	OK(accel_memory_copy_from_async(m, s, in, ACCEL_ALL, 0));
	/* no synchronization by the caller */
	REQUIRE_OK(accel_memory_map(m, ACCEL_MAP_READ, &p));
	CHECK(!memcmp(p, in, n * 4));
	OK(accel_memory_unmap(m));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_memory_release(m));
	free(in);
}

/* "host_access": read and write access are separate */
TEST(host_access_flags_are_enforced)
{
	uint32_t v[4] = { 5, 6, 7, 8 }, out[4];
	accel_memory_t ro, wo;
	void *p;

	REQUIRE_OK(accel_memory_create(ctx->dev, 4, U32, v, ACCEL_MEMORY_HOST_READ, &ro));
	REQUIRE_OK(accel_memory_create(ctx->dev, 4, U32, NULL, ACCEL_MEMORY_HOST_WRITE, &wo));
	OK(accel_memory_read(ro, out, sizeof(out)));
	CHECK(!memcmp(v, out, sizeof(v)));
	FAILS(accel_memory_write(ro, v, sizeof(v)));
	CHECK(strstr(accel_get_last_error(), "write") != NULL);
	FAILS(accel_memory_map(ro, ACCEL_MAP_READ | ACCEL_MAP_WRITE, &p));
	OK(accel_memory_write(wo, v, sizeof(v)));
	FAILS(accel_memory_read(wo, out, sizeof(out)));
	FAILS(accel_memory_map(wo, 0, &p));
	FAILS(accel_memory_map(wo, 8, &p));
	OK(accel_memory_copy_to(wo, out, ACCEL_ALL, 0));
	CHECK(!memcmp(v, out, sizeof(v)));
	OK(accel_memory_release(ro));
	OK(accel_memory_release(wo));
}

/* "Some platforms don't allow the CPU and the GPU to access the same piece of memory at the same time" */
TEST(mapped_memory_is_the_hosts_until_unmapped)
{
	uint32_t v[8] = { 0 };
	accel_memory_t m, s;
	void *p, *q;

	REQUIRE_OK(accel_memory_create(ctx->dev, 8, U32, v, RW, &m));
	REQUIRE_OK(accel_memory_slice(m, 4, 4, &s));
	REQUIRE_OK(accel_memory_map(m, ACCEL_MAP_WRITE, &p));
	/* nested maps count; a slice maps at its offset */
	REQUIRE_OK(accel_memory_map(s, ACCEL_MAP_READ, &q));
	CHECK((char *)q == (char *)p + 16);
	FAILS(accel_memory_copy_from(m, v, ACCEL_ALL, 0));
	CHECK(strstr(accel_get_last_error(), "unmap") != NULL);
	FAILS(accel_memory_copy_to(s, v, ACCEL_ALL, 0));
	FAILS(accel_memory_free(s));
	OK(accel_memory_unmap(s));
	FAILS(accel_memory_copy_to(m, v, ACCEL_ALL, 0));
	OK(accel_memory_unmap(m));
	FAILS(accel_memory_unmap(m));
	CHECK(strstr(accel_get_last_error(), "not mapped") != NULL);
	OK(accel_memory_copy_to(m, v, ACCEL_ALL, 0));
	OK(accel_memory_release(s));
	OK(accel_memory_free(m));
}

TEST(read_and_write_sizes_are_checked)
{
	uint32_t buf[5] = { 0 };
	accel_memory_t m;

	REQUIRE_OK(accel_memory_create(ctx->dev, 4, U32, NULL, RW, &m));
	FAILS(accel_memory_read(m, buf, sizeof(buf)));
	FAILS(accel_memory_write(m, buf, 17));
	FAILS(accel_memory_read(m, NULL, 4));
	OK(accel_memory_read(m, buf, 0));
	OK(accel_memory_write(m, buf, 16));
	FAILS(accel_memory_map(m, ACCEL_MAP_READ, NULL));
	OK(accel_memory_release(m));
	FAILS(accel_memory_read(m, buf, 4));
}
