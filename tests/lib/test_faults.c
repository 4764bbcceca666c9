// SPDX-License-Identifier: MIT
/*
 * Work the device fails is reported, once, and the stream goes on working.
 * Faults are injected through the accel driver's debugfs files, so these
 * tests run on the accel backend only, as root with debugfs mounted; the
 * device accel:N is assumed to be /dev/accelN.
 */
#include <glob.h>
#include <unistd.h>

#include "suite.h"

/* Arm (count > 0) or disarm (0) fault injection on every queue of the device. */
static void inject(struct suite_ctx *ctx, const char *files, int count)
{
	char pattern[128];
	glob_t g;

	snprintf(pattern, sizeof(pattern), "/sys/kernel/debug/accel/accel%s/%s",
		 ctx->name + strlen("accel:"), files);
	if (strncmp(ctx->name, "accel:", 6) ||
	    glob(pattern, 0, NULL, &g) || !g.gl_pathc)
		suite_skip("needs the accel backend and its debugfs fault injection (root, debugfs)");
	for (size_t i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "w");

		REQUIRE(f);
		fprintf(f, "%d\n", count);
		REQUIRE(fclose(f) == 0);
	}
	globfree(&g);
}

TEST(failed_async_work_is_reported_once)
{
	const size_t n = 64 << 10;
	uint8_t *d = dalloc(ctx, n), *h = xmalloc(n), *out = xmalloc(n);
	C_Stream s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	inject(ctx, "fault_inject_q*", 1);
	fill_pattern(h, n, 131);
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	FAILS(accel_stream_synchronize(ctx->dev, s));
	CHECK(strstr(accel_get_last_error(), "failed") != NULL);
	inject(ctx, "fault_inject_q*", 0);
	/* reported once; the stream works again */
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	OK(accel_async_memory_copy_d2h(ctx->dev, s, out, d, n));
	OK(accel_stream_synchronize(ctx->dev, s));
	CHECK(check_pattern(out, n, 131));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, d, n);
	free(h);
	free(out);
}

TEST(failed_sync_copy_is_reported)
{
	const size_t n = 4096;
	uint8_t *d = dalloc(ctx, n), h[4096], out[4096];

	fill_pattern(h, n, 141);
	inject(ctx, "fault_inject", 1);
	FAILS(accel_memory_copy_h2d(ctx->dev, d, h, n));
	inject(ctx, "fault_inject", 0);
	OK(accel_memory_copy_h2d(ctx->dev, d, h, n));
	OK(accel_memory_copy_d2h(ctx->dev, out, d, n));
	CHECK(check_pattern(out, n, 141));
	dfree(ctx, d, n);
}
