// SPDX-License-Identifier: MIT
/*
 * accel.h: the host side of a copy is "any host memory: pageable, pinned or
 * unified", pinned and unified memory being "ordinary host pointers". So
 * pinned and unified memory that another device allocated is host memory
 * to every device: each copy direction, synchronous and queued, moves the
 * bytes (CUDA treats another context's pinned memory the same way).
 */
#include <string.h>

#include <accel/accel.h>

#include "suite.h"

#define N (256u << 10)

typedef accel_status_t (*host_alloc_fn)(const accel_device_t, void **, size_t);
typedef accel_status_t (*host_free_fn)(const accel_device_t, void *, size_t);

static void fill(uint8_t *p, uint8_t seed)
{
	for (size_t i = 0; i < N; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static bool filled(const uint8_t *p, uint8_t seed)
{
	for (size_t i = 0; i < N; i++)
		if (p[i] != (uint8_t)(seed + i * 7))
			return false;
	return true;
}

/* @host (of ctx->dev) into the peer's memory and back, @async or not. */
static void round_trip(struct suite_ctx *ctx, uint8_t *host, bool async)
{
	accel_stream_t s = NULL;
	void *d = NULL;

	REQUIRE_OK(accel_device_memory_allocate(ctx->peer, &d, N));
	if (async)
		REQUIRE_OK(accel_stream_create(ctx->peer, &s));
	fill(host, 3);
	if (async)
		OK(accel_async_memory_copy_h2d(ctx->peer, s, d, host, N));
	else
		OK(accel_memory_copy_h2d(ctx->peer, d, host, N));
	if (async)
		OK(accel_stream_synchronize(ctx->peer, s));
	memset(host, 0, N);
	if (async) {
		OK(accel_async_memory_copy_d2h(ctx->peer, s, host, d, N));
		OK(accel_stream_synchronize(ctx->peer, s));
	} else {
		OK(accel_memory_copy_d2h(ctx->peer, host, d, N));
	}
	CHECK(filled(host, 3));
	if (s)
		OK(accel_stream_destroy(ctx->peer, s));
	OK(accel_device_memory_deallocate(ctx->peer, d, N));
}

static void with_host_of_device(struct suite_ctx *ctx, host_alloc_fn alloc,
				host_free_fn release, bool async)
{
	void *host = NULL;

	REQUIRE_OK(alloc(ctx->dev, &host, N));
	round_trip(ctx, host, async);
	OK(release(ctx->dev, host, N));
}

TEST_PEER(other_devices_pinned_memory_in_sync_copies)
{
	with_host_of_device(ctx, accel_host_memory_allocate,
			    accel_host_memory_deallocate, false);
}

TEST_PEER(other_devices_pinned_memory_in_async_copies)
{
	with_host_of_device(ctx, accel_host_memory_allocate,
			    accel_host_memory_deallocate, true);
}

TEST_PEER(other_devices_unified_memory_in_sync_copies)
{
	with_host_of_device(ctx, accel_unified_memory_allocate,
			    accel_unified_memory_deallocate, false);
}

TEST_PEER(other_devices_unified_memory_in_async_copies)
{
	with_host_of_device(ctx, accel_unified_memory_allocate,
			    accel_unified_memory_deallocate, true);
}
