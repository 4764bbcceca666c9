// SPDX-License-Identifier: MIT
/* memory_copy_p2p and async_memory_copy_p2p between two devices. */
#include "suite.h"

static uint8_t *peer_alloc(struct suite_ctx *ctx, size_t n)
{
	void *p = NULL;

	REQUIRE_OK(accel_device_memory_allocate(ctx->peer, &p, n));
	return p;
}

static uint8_t *peer_read(struct suite_ctx *ctx, const void *p, size_t n)
{
	uint8_t *h = xmalloc(n);

	REQUIRE_OK(accel_memory_copy_d2h(ctx->peer, h, p, n));
	return h;
}

TEST_PEER(p2p_both_directions)
{
	const size_t n = (3 << 20) + 7;
	uint8_t *d = dalloc(ctx, n), *p = peer_alloc(ctx, n), *h = xmalloc(n);
	uint8_t *back;

	fill_pattern(h, n, 101);
	REQUIRE_OK(accel_memory_copy_h2d(ctx->dev, d, h, n));
	OK(accel_memory_copy_p2p(ctx->peer, ctx->dev, p, d, n));
	back = peer_read(ctx, p, n);
	CHECK(check_pattern(back, n, 101));
	free(back);

	OK(accel_device_memory_set(ctx->dev, d, 0, n));
	OK(accel_memory_copy_p2p(ctx->dev, ctx->peer, d + 1, p + 1, n - 2));
	back = read_back(ctx, d, n);
	CHECK(back[0] == 0 && back[n - 1] == 0);
	CHECK(!memcmp(back + 1, h + 1, n - 2));
	free(back);
	dfree(ctx, d, n);
	OK(accel_device_memory_deallocate(ctx->peer, p, n));
	free(h);
}

TEST_PEER(p2p_pointers_must_match_devices)
{
	uint8_t *d = dalloc(ctx, 4096), *p = peer_alloc(ctx, 4096), h[16];

	/* each pointer is checked against its own device */
	FAILS(accel_memory_copy_p2p(ctx->peer, ctx->dev, d, p, 16));
	FAILS(accel_memory_copy_p2p(ctx->peer, ctx->dev, p, h, 16));
	FAILS(accel_memory_copy_p2p(ctx->peer, ctx->dev, p + 4090, d, 16));
	FAILS(accel_memory_copy_p2p(ctx->peer, NULL, p, d, 16));
	OK(accel_memory_copy_p2p(ctx->peer, ctx->dev, p, d, 0));
	dfree(ctx, d, 4096);
	OK(accel_device_memory_deallocate(ctx->peer, p, 4096));
}

TEST(p2p_to_the_same_device_is_d2d)
{
	uint8_t *a = dalloc(ctx, 8192), *b = dalloc(ctx, 8192), *h = xmalloc(8192);
	uint8_t *back;

	fill_pattern(h, 8192, 111);
	REQUIRE_OK(accel_memory_copy_h2d(ctx->dev, a, h, 8192));
	OK(accel_memory_copy_p2p(ctx->dev, ctx->dev, b, a, 8192));
	back = read_back(ctx, b, 8192);
	CHECK(check_pattern(back, 8192, 111));
	free(back);
	dfree(ctx, a, 8192);
	dfree(ctx, b, 8192);
	free(h);
}

/* The stream may belong to either device; a third stream is refused. */
TEST_PEER(async_p2p_on_either_stream)
{
	const size_t n = 2 << 20;
	uint8_t *d = dalloc(ctx, n), *p = peer_alloc(ctx, n), *h = xmalloc(n);
	uint8_t *back;
	accel_stream_t s, ps;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_stream_create(ctx->peer, &ps));
	fill_pattern(h, n, 121);
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	OK(accel_async_memory_copy_p2p(ctx->peer, ctx->dev, s, p, d, n));
	OK(accel_stream_synchronize(ctx->dev, s));
	back = peer_read(ctx, p, n);
	CHECK(check_pattern(back, n, 121));
	free(back);

	OK(accel_device_memory_set(ctx->dev, d, 0, n));
	OK(accel_async_memory_copy_p2p(ctx->dev, ctx->peer, ps, d, p, n));
	OK(accel_stream_synchronize(ctx->peer, ps));
	back = read_back(ctx, d, n);
	CHECK(check_pattern(back, n, 121));
	free(back);

	FAILS(accel_async_memory_copy_p2p(ctx->dev, ctx->peer, NULL, d, p, n));
	OK(accel_stream_destroy(ctx->dev, s));
	FAILS(accel_async_memory_copy_p2p(ctx->dev, ctx->peer, s, d, p, n));
	OK(accel_stream_destroy(ctx->peer, ps));
	dfree(ctx, d, n);
	OK(accel_device_memory_deallocate(ctx->peer, p, n));
	free(h);
}

/*
 * Between backends an async p2p copy is not queued (accel.h): it waits for
 * the work before it on its stream, and its bytes are there when it returns.
 */
TEST_PEER(async_p2p_across_backends_is_done_at_return)
{
	const size_t n = 8 << 20;
	uint8_t *d = dalloc(ctx, n), *a = peer_alloc(ctx, n);
	uint8_t *b = peer_alloc(ctx, n), *h = xmalloc(n), *back;
	accel_stream_t ps;

	if (!peer_on_another_backend(ctx))
		suite_skip("both devices are of one backend: the copy is queued");
	REQUIRE_OK(accel_stream_create(ctx->peer, &ps));
	fill_pattern(h, n, 131);
	REQUIRE_OK(accel_memory_copy_h2d(ctx->peer, a, h, n));
	REQUIRE_OK(accel_device_memory_set(ctx->peer, b, 0, n));
	for (int i = 0; i < 8; i++)	/* b has the pattern after the first */
		OK(accel_async_memory_copy_d2d(ctx->peer, ps, i & 1 ? a : b,
					       i & 1 ? b : a, n));
	OK(accel_async_memory_copy_p2p(ctx->dev, ctx->peer, ps, d, b, n));
	CHECK(accel_stream_query(ctx->peer, ps) == ACCEL_SUCCESS);
	back = read_back(ctx, d, n);
	CHECK(check_pattern(back, n, 131));
	free(back);
	OK(accel_stream_destroy(ctx->peer, ps));
	dfree(ctx, d, n);
	OK(accel_device_memory_deallocate(ctx->peer, a, n));
	OK(accel_device_memory_deallocate(ctx->peer, b, n));
	free(h);
}
