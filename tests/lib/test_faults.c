// SPDX-License-Identifier: MIT
/*
 * Work the device fails is reported, once, and the stream goes on working.
 * Faults are injected through simaccel.ko's debugfs files, so these tests
 * run on the accel backend only, as root with debugfs mounted.
 */
#include <dirent.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "suite.h"

static int cmp_node(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/*
 * The node of device accel:N: the backend numbers the /dev/accel/accelM
 * nodes in their order (M need not be N: a rebind may have moved one).
 * Returns M, or -1.
 */
static int node_of(const char *name)
{
	int nodes[64], n = 0, index = atoi(name + strlen("accel:"));
	DIR *d = opendir("/dev/accel");
	struct dirent *e;

	while (d && (e = readdir(d)) && n < 64)
		if (!strncmp(e->d_name, "accel", 5) && e->d_name[5])
			nodes[n++] = atoi(e->d_name + 5);
	if (d)
		closedir(d);
	qsort(nodes, (size_t)n, sizeof(*nodes), cmp_node);
	return index < n ? nodes[index] : -1;
}

/*
 * Arm (count > 0) or disarm (0) fault injection on every hardware queue of
 * the device: <debugfs>/accel/<PCI address>/qN/fault_inject.
 */
static void inject(struct suite_ctx *ctx, int count)
{
	char node[64], pci[PATH_MAX], pattern[PATH_MAX + 64];
	glob_t g;

	if (strncmp(ctx->name, "accel:", 6))
		suite_skip("needs the accel backend and its debugfs fault injection (root, debugfs)");
	snprintf(node, sizeof(node), "/sys/class/accel/accel%d/device",
		 node_of(ctx->name));
	if (!realpath(node, pci))
		suite_skip("the device has no /sys/class/accel/accelN");
	snprintf(pattern, sizeof(pattern),
		 "/sys/kernel/debug/accel/%s/q*/fault_inject", basename(pci));
	if (glob(pattern, 0, NULL, &g) || !g.gl_pathc)
		suite_skip("needs simaccel.ko's debugfs fault injection (root, debugfs)");
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
	accel_stream_t s;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	fill_pattern(h, n, 131);
	/* the device clears new memory: that is done before faults are armed */
	OK(accel_memory_copy_h2d(ctx->dev, d, h, n));
	inject(ctx, 1);
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	FAILS(accel_stream_synchronize(ctx->dev, s));
	CHECK(strstr(accel_get_last_error(), "failed") != NULL);
	inject(ctx, 0);
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
	OK(accel_memory_copy_h2d(ctx->dev, d, h, n));
	inject(ctx, 1);
	FAILS(accel_memory_copy_h2d(ctx->dev, d, h, n));
	inject(ctx, 0);
	OK(accel_memory_copy_h2d(ctx->dev, d, h, n));
	OK(accel_memory_copy_d2h(ctx->dev, out, d, n));
	CHECK(check_pattern(out, n, 141));
	dfree(ctx, d, n);
}

/* An event reports whether the work before its record failed. */
TEST(an_event_reports_the_failure_of_its_work)
{
	const size_t n = 64 << 10;
	uint8_t *d = dalloc(ctx, n), *h = xmalloc(n);
	accel_stream_t s;
	accel_event_t e;

	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	REQUIRE_OK(accel_event_create(ctx->dev, &e));
	fill_pattern(h, n, 151);
	OK(accel_memory_copy_h2d(ctx->dev, d, h, n));
	inject(ctx, 1);
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	OK(accel_event_record(ctx->dev, s, e));
	FAILS(accel_event_synchronize(ctx->dev, e));
	inject(ctx, 0);
	FAILS(accel_event_query(ctx->dev, e));
	OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	OK(accel_event_record(ctx->dev, s, e));
	OK(accel_event_synchronize(ctx->dev, e));
	OK(accel_event_query(ctx->dev, e));
	/* the stream still reports its failure, once */
	FAILS(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_event_destroy(ctx->dev, e));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, d, n);
	free(h);
}

/* The system memory simaccel.ko has pinned for the device (sysfs). */
static long long host_pinned(struct suite_ctx *ctx)
{
	char path[96];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/accel/accel%d/device/host_pinned",
		 node_of(ctx->name));
	f = fopen(path, "r");
	REQUIRE(f);
	REQUIRE(fscanf(f, "%lld", &v) == 1);
	fclose(f);
	return v;
}

/*
 * Small async copies from pageable memory queued behind a stalled job pin
 * their staging buffers, boundedly: 150 copies of 4 KiB once pinned 150 MiB.
 */
TEST(queued_pageable_copies_pin_boundedly)
{
	const size_t n = 4096, copies = 150;
	uint8_t *d = dalloc(ctx, n), h[4096];
	long long before, queued;
	accel_stream_t s;

	inject(ctx, 0);		/* skips where there is no fault injection */
	REQUIRE_OK(accel_stream_create(ctx->dev, &s));
	fill_pattern(h, n, 161);
	OK(accel_memory_copy_h2d(ctx->dev, d, h, n));
	before = host_pinned(ctx);
	inject(ctx, 0x10000);	/* the next descriptor of each queue stalls */
	for (size_t i = 0; i < copies; i++)
		OK(accel_async_memory_copy_h2d(ctx->dev, s, d, h, n));
	queued = host_pinned(ctx);
	inject(ctx, 0);
	CHECK(queued - before < 32ll << 20);
	/* the stalled copy times out; the others run */
	FAILS(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_synchronize(ctx->dev, s));
	OK(accel_stream_destroy(ctx->dev, s));
	dfree(ctx, d, n);
}
