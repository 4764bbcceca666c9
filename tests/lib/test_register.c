// SPDX-License-Identifier: MIT
/* host_memory_register: the caller's memory pinned for the device. */
#include "suite.h"

TEST(registered_memory_copies_like_pinned)
{
	const size_t n = (1 << 20) + 3;
	uint8_t *buf = xmalloc(n + 1), *back = xmalloc(n);
	uint8_t *d = dalloc(ctx, n);
	accel_stream_t s;

	/* any alignment */
	REQUIRE_OK(accel_host_memory_register(ctx->dev, buf + 1, n));
	fill_pattern(buf + 1, n, 21);
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, buf + 1, n));
	OK(accel_stream_synchronize(ctx->dev, s));
	memset(buf + 1, 0, n);
	OK(accel_async_memory_copy_d2h(ctx->dev, s, buf + 1, d, n));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(check_pattern(buf + 1, n, 21));
	OK(accel_memory_copy_d2h(ctx->dev, back, d, n));
	CHECK(check_pattern(back, n, 21));
	OK(accel_stream_destroy(ctx->dev, s));
	OK(accel_host_memory_unregister(ctx->dev, buf + 1));
	/* unregistered, it is pageable memory again, still usable */
	OK(accel_memory_copy_d2h(ctx->dev, buf + 1, d, n));
	dfree(ctx, d, n);
	free(buf);
	free(back);
}

TEST(register_mistakes_are_refused)
{
	const size_t pg = 4096;	/* CUDA pins whole pages: keep ranges apart */
	uint8_t *buf = aligned_alloc(pg, 3 * pg), *pinned = NULL;

	REQUIRE(buf);
	FAILS(accel_host_memory_register(ctx->dev, NULL, 10));
	FAILS(accel_host_memory_register(ctx->dev, buf, 0));
	REQUIRE_OK(accel_host_memory_register(ctx->dev, buf + pg, pg));
	/* overlaps on either side, and inside */
	FAILS(accel_host_memory_register(ctx->dev, buf, pg + 1));
	FAILS(accel_host_memory_register(ctx->dev, buf + 2 * pg - 1, 10));
	FAILS(accel_host_memory_register(ctx->dev, buf + pg + 200, 10));
	CHECK(strstr(accel_get_last_error(), "registered") != NULL);
	/* but not the bytes next to it */
	OK(accel_host_memory_register(ctx->dev, buf + 2 * pg, pg));
	OK(accel_host_memory_register(ctx->dev, buf, pg));
	/* registered memory is not freed as an allocation */
	FAILS(accel_host_memory_deallocate(ctx->dev, buf + pg, pg));
	CHECK(strstr(accel_get_last_error(), "unregister") != NULL);
	FAILS(accel_host_memory_unregister(ctx->dev, buf + pg + 1));
	OK(accel_host_memory_unregister(ctx->dev, buf + pg));
	FAILS(accel_host_memory_unregister(ctx->dev, buf + pg));
	OK(accel_host_memory_unregister(ctx->dev, buf + 2 * pg));
	OK(accel_host_memory_unregister(ctx->dev, buf));

	/* allocations need no registering, and are not unregistered */
	REQUIRE_OK(accel_host_memory_allocate(ctx->dev, (void **)&pinned, 4096));
	FAILS(accel_host_memory_register(ctx->dev, pinned + 10, 10));
	FAILS(accel_host_memory_unregister(ctx->dev, pinned));
	OK(accel_host_memory_deallocate(ctx->dev, pinned, 4096));
	free(buf);
}
