// SPDX-License-Identifier: MIT
/*
 * The plugin loader test: load libpaddle-accel.so the way Paddle's loader
 * (paddle/phi/backends/custom/custom_device.cc) does, step by step, then
 * run the conformance cases through the function table only.
 *
 *   plugin_test [-t SUBSTRING]
 *
 * The plugin is $ACCEL_PLUGIN, or the build tree's; ACCEL_VISIBLE_DEVICES
 * chooses the devices, as for libaccel.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load.h"

/* What a newer Paddle passes: bigger structs than the plugin knows. */
struct big_params {
	CustomRuntimeParams p;
	char newer[64];
};

struct big_interface {
	C_DeviceInterface t;
	char newer[512];
};

static const C_DeviceInterface *t;
static struct C_Device_st dev0 = { 0 }, dev1 = { 1 };
static size_t ndevices;
static int failures, checks;

#define CHECK(cond)							\
	do {								\
		checks++;						\
		if (!(cond)) {						\
			failures++;					\
			printf("#   FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		}							\
	} while (0)
#define OK(call) CHECK((call) == C_SUCCESS)

static bool all_zero(const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (((const uint8_t *)p)[i])
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* Loading */

static void (*init_plugin)(CustomRuntimeParams *);

static void test_refuses_smaller_structs(void)
{
	static struct big_params bp;
	static struct big_interface bi;

	/* an interface smaller than the plugin's */
	memset(&bp, 0, sizeof(bp));
	memset(&bi, 0, sizeof(bi));
	bp.p.size = sizeof(bp);
	bp.p.interface = &bi.t;
	bi.t.size = offsetof(C_DeviceInterface, device_realloc_size);
	init_plugin(&bp.p);
	CHECK(bp.p.device_type == NULL);
	CHECK(all_zero(&bi.t.initialize, sizeof(bi) - sizeof(size_t)));
	/* params smaller than the oldest layout */
	bi.t.size = sizeof(bi);
	bp.p.size = offsetof(CustomRuntimeParams, reserved);
	init_plugin(&bp.p);
	CHECK(bp.p.device_type == NULL);
	CHECK(all_zero(&bi.t.initialize, sizeof(bi) - sizeof(size_t)));
	bp.p.size = sizeof(bp);
	bp.p.interface = NULL;
	init_plugin(&bp.p);
	CHECK(bp.p.device_type == NULL);
}

/* The required functions of every Paddle version, and the optional ones. */
static void check_table(const C_DeviceInterface *x)
{
	const void *required[] = {
		x->set_device, x->get_device, x->create_stream,
		x->destroy_stream, x->synchronize_stream, x->stream_wait_event,
		x->create_event, x->record_event, x->destroy_event,
		x->synchronize_event, x->device_memory_allocate,
		x->device_memory_deallocate, x->memory_copy_h2d,
		x->memory_copy_d2h, x->memory_copy_d2d, x->device_memory_stats,
		x->device_min_chunk_size, x->get_device_count,
		x->get_device_list,
	};
	const void *more[] = {
		x->initialize, x->finalize, x->init_device, x->deinit_device,
		x->query_stream, x->stream_add_callback, x->query_event,
		x->synchronize_device, x->device_memory_set,
		x->host_memory_allocate, x->host_memory_deallocate,
		x->unified_memory_allocate, x->unified_memory_deallocate,
		x->memory_copy_p2p, x->async_memory_copy_h2d,
		x->async_memory_copy_d2h, x->async_memory_copy_d2d,
		x->async_memory_copy_p2p, x->device_max_chunk_size,
		x->device_max_alloc_size, x->device_extra_padding_size,
		x->device_init_alloc_size, x->device_realloc_size,
	};

	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		CHECK(required[i] != NULL);
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		CHECK(more[i] != NULL);
	CHECK(all_zero(x->reserved_dev_api, sizeof(x->reserved_dev_api)));
	CHECK(all_zero(x->reserved_mem_api, sizeof(x->reserved_mem_api)));
}

/* Paddle's loader: zero both structs, set the sizes, call, validate. */
static void test_loads_like_paddle(void)
{
	static struct big_params bp;
	static struct big_interface bi;
	size_t version;

	memset(&bp, 0, sizeof(bp));
	memset(&bi, 0, sizeof(bi));
	bp.p.size = sizeof(bp);
	bp.p.interface = &bi.t;
	bi.t.size = sizeof(bi);
	init_plugin(&bp.p);
	CHECK(bp.p.device_type && !strcmp(bp.p.device_type, "accel"));
	CHECK(bp.p.sub_device_type && bp.p.sub_device_type[0]);
	version = bp.p.version.major * 10000 + bp.p.version.minor * 100 +
		  bp.p.version.patch;
	CHECK(version >= 101);
	check_table(&bi.t);
	/* nothing written past the plugin's fields */
	CHECK(all_zero(bi.newer, sizeof(bi.newer)));
	CHECK(all_zero(bp.p.reserved, sizeof(bp.p.reserved)));
	CHECK(all_zero(bp.newer, sizeof(bp.newer)));
	printf("# device_type %s, sub_device_type %s, version %zu.%zu.%zu\n",
	       bp.p.device_type, bp.p.sub_device_type, bp.p.version.major,
	       bp.p.version.minor, bp.p.version.patch);
	t = &bi.t;
}

/* CustomDevice::Initialize(): initialize, then the device list. */
static void test_initialize_and_devices(void)
{
	size_t list[64];

	OK(t->initialize());
	OK(t->get_device_count(&ndevices));
	CHECK(ndevices > 0 && ndevices <= 64);
	memset(list, 0xff, sizeof(list));
	OK(t->get_device_list(list));
	for (size_t i = 0; i < ndevices; i++) {
		struct C_Device_st d = { (int)list[i] };

		CHECK(list[i] == i);
		OK(t->init_device(&d));
		CHECK(d.id == (int)i);
	}
}

/* ------------------------------------------------------------------ */
/* The conformance cases, through the table */

static void test_current_device_is_per_thread(void)
{
	struct C_Device_st d = { -1 }, bad = { 1000 };

	OK(t->set_device(&dev0));
	OK(t->get_device(&d));
	CHECK(d.id == 0);
	if (ndevices > 1) {
		OK(t->set_device(&dev1));
		OK(t->get_device(&d));
		CHECK(d.id == 1);
	}
	CHECK(t->set_device(&bad) != C_SUCCESS);
	CHECK(t->init_device(&bad) != C_SUCCESS);
	OK(t->get_device(&d));
	CHECK(d.id == (ndevices > 1 ? 1 : 0));
	OK(t->set_device(&dev0));
}

/* Paddle's allocator: chunks of the min chunk size, interior pointers. */
static void test_chunks_and_interior_pointers(void)
{
	size_t min = 0, pad = 1, chunk, off, n = 4096;
	uint8_t *base = NULL, in[4096], out[4096];

	OK(t->device_min_chunk_size(&dev0, &min));
	CHECK(min && !(min & (min - 1)));
	OK(t->device_extra_padding_size(&dev0, &pad));
	chunk = 64 * min + pad;
	OK(t->device_memory_allocate(&dev0, (void **)&base, chunk));
	CHECK(base && (uintptr_t)base % min == 0);
	for (size_t i = 0; i < n; i++)
		in[i] = (uint8_t)(i * 7 + 1);
	off = 3 * min + 5;
	OK(t->memory_copy_h2d(&dev0, base + off, in, n));
	OK(t->memory_copy_d2d(&dev0, base + off + n, base + off, n));
	OK(t->device_memory_set(&dev0, base + off + 10, 0xab, 20));
	OK(t->memory_copy_d2h(&dev0, out, base + off + n, n));
	CHECK(!memcmp(in, out, n));
	OK(t->memory_copy_d2h(&dev0, out, base + off, n));
	CHECK(out[9] == in[9] && out[10] == 0xab && out[29] == 0xab &&
	      out[30] == in[30]);
	/* size 0 is accepted */
	OK(t->memory_copy_h2d(&dev0, base, in, 0));
	OK(t->memory_copy_d2h(&dev0, out, base, 0));
	/* deallocate gets the base and the exact size */
	CHECK(t->device_memory_deallocate(&dev0, base + min, chunk) != C_SUCCESS);
	CHECK(t->device_memory_deallocate(&dev0, base, chunk + 1) != C_SUCCESS);
	OK(t->device_memory_deallocate(&dev0, base, chunk));
	CHECK(t->device_memory_deallocate(&dev0, base, chunk) != C_SUCCESS);
}

/* Allocation goes to the backend: the stats see it at once. */
static void test_stats_see_allocations(void)
{
	size_t total, free0, free1, min, size;
	void *p = NULL;

	OK(t->device_memory_stats(&dev0, &total, &free0));
	OK(t->device_min_chunk_size(&dev0, &min));
	CHECK(total >= free0 && free0 > min);
	size = free0 / 4 / min * min;
	OK(t->device_memory_allocate(&dev0, &p, size));
	OK(t->device_memory_stats(&dev0, &total, &free1));
	CHECK(free1 + size <= free0);
	OK(t->device_memory_deallocate(&dev0, p, size));
	OK(t->device_memory_stats(&dev0, &total, &free1));
	CHECK(free1 == free0);
}

static void test_out_of_memory(void)
{
	size_t total, free, max_alloc;
	void *p = (void *)1;

	OK(t->device_memory_stats(&dev0, &total, &free));
	OK(t->device_max_alloc_size(&dev0, &max_alloc));
	CHECK(max_alloc <= free);
	CHECK(t->device_memory_allocate(&dev0, &p, total + (64 << 20)) == C_FAILED);
	CHECK(p == NULL);
}

static void test_chunk_policy(void)
{
	size_t min, max, init, re, alloc;

	OK(t->device_min_chunk_size(&dev0, &min));
	OK(t->device_max_chunk_size(&dev0, &max));
	OK(t->device_init_alloc_size(&dev0, &init));
	OK(t->device_realloc_size(&dev0, &re));
	OK(t->device_max_alloc_size(&dev0, &alloc));
	CHECK(max >= min && init >= min && re >= min);
	CHECK(init % min == 0 && re % min == 0 && init <= max);
}

static void test_host_and_unified_memory(void)
{
	uint8_t *h = NULL, *u = NULL, *d = NULL;

	OK(t->host_memory_allocate(&dev0, (void **)&h, 8192));
	OK(t->unified_memory_allocate(&dev0, (void **)&u, 8192));
	OK(t->device_memory_allocate(&dev0, (void **)&d, 8192));
	memset(h, 0x5a, 8192);
	OK(t->memory_copy_h2d(&dev0, d, h, 8192));
	OK(t->memory_copy_d2d(&dev0, u, d, 8192));
	CHECK(u[0] == 0x5a && u[8191] == 0x5a);	/* the host reads unified memory */
	OK(t->unified_memory_deallocate(&dev0, u, 8192));
	OK(t->host_memory_deallocate(&dev0, h, 8192));
	OK(t->device_memory_deallocate(&dev0, d, 8192));
}

/* "the plugin must have captured the data before returning" */
static void test_async_copies_capture_the_source(void)
{
	const size_t n = 1 << 20;
	uint8_t *src = malloc(n), *out = malloc(n), *d = NULL, *e = NULL;
	C_Stream s = NULL;
	C_Event ev = NULL;

	OK(t->create_stream(&dev0, &s));
	OK(t->create_event(&dev0, &ev));
	OK(t->device_memory_allocate(&dev0, (void **)&d, n));
	OK(t->device_memory_allocate(&dev0, (void **)&e, n));
	memset(src, 1, n);
	OK(t->async_memory_copy_h2d(&dev0, s, d, src, n));
	memset(src, 2, n);	/* Paddle reuses the buffer at once */
	OK(t->async_memory_copy_d2d(&dev0, s, e, d, n));
	OK(t->async_memory_copy_d2h(&dev0, s, out, e, n));
	OK(t->record_event(&dev0, s, ev));
	OK(t->synchronize_event(&dev0, ev));
	CHECK(t->query_event(&dev0, ev) == C_SUCCESS);
	CHECK(out[0] == 1 && out[n - 1] == 1);
	OK(t->synchronize_stream(&dev0, s));
	CHECK(t->query_stream(&dev0, s) == C_SUCCESS);
	OK(t->destroy_event(&dev0, ev));
	OK(t->destroy_stream(&dev0, s));
	OK(t->device_memory_deallocate(&dev0, d, n));
	OK(t->device_memory_deallocate(&dev0, e, n));
	free(src);
	free(out);
}

static void test_stream_waits_for_event(void)
{
	const size_t n = 4 << 20;
	uint8_t *src = malloc(n), *out = malloc(n), *d = NULL, *e = NULL;
	C_Stream a = NULL, b = NULL;
	C_Event ev = NULL;

	OK(t->create_stream(&dev0, &a));
	OK(t->create_stream(&dev0, &b));
	OK(t->create_event(&dev0, &ev));
	OK(t->device_memory_allocate(&dev0, (void **)&d, n));
	OK(t->device_memory_allocate(&dev0, (void **)&e, n));
	memset(src, 9, n);
	OK(t->async_memory_copy_h2d(&dev0, a, d, src, n));
	OK(t->record_event(&dev0, a, ev));
	OK(t->stream_wait_event(&dev0, b, ev));
	OK(t->async_memory_copy_d2d(&dev0, b, e, d, n));
	OK(t->async_memory_copy_d2h(&dev0, b, out, e, n));
	OK(t->synchronize_stream(&dev0, b));
	CHECK(out[0] == 9 && out[n - 1] == 9);
	OK(t->synchronize_device(&dev0));
	OK(t->destroy_event(&dev0, ev));
	OK(t->destroy_stream(&dev0, a));
	OK(t->destroy_stream(&dev0, b));
	OK(t->device_memory_deallocate(&dev0, d, n));
	OK(t->device_memory_deallocate(&dev0, e, n));
	free(src);
	free(out);
}

struct cb_log {
	pthread_mutex_t lock;
	int order[8];
	int n;
	uint8_t seen;		/* the byte the copy before it wrote */
	const uint8_t *watch;
};

static void note_callback(C_Device device, C_Stream stream, void *user_data,
			  C_Status *status)
{
	struct cb_log *log = user_data;

	(void)device;
	(void)stream;
	pthread_mutex_lock(&log->lock);
	if (*status == C_SUCCESS && log->n < 8) {
		if (!log->n)
			log->seen = log->watch[0];
		log->order[log->n] = log->n;
		log->n++;
	}
	pthread_mutex_unlock(&log->lock);
}

/* callbacks run after the work before them, in order; sync waits for them */
static void test_stream_callbacks(void)
{
	const size_t n = 8 << 20;
	static struct cb_log log = { .lock = PTHREAD_MUTEX_INITIALIZER };
	uint8_t *src = malloc(n), *out = malloc(n), *d = NULL;
	C_Stream s = NULL;

	OK(t->create_stream(&dev0, &s));
	OK(t->device_memory_allocate(&dev0, (void **)&d, n));
	memset(src, 7, n);
	memset(out, 0, n);
	log.watch = out;
	OK(t->async_memory_copy_h2d(&dev0, s, d, src, n));
	OK(t->async_memory_copy_d2h(&dev0, s, out, d, n));
	for (int i = 0; i < 3; i++)
		OK(t->stream_add_callback(&dev0, s, note_callback, &log));
	OK(t->synchronize_stream(&dev0, s));
	pthread_mutex_lock(&log.lock);
	CHECK(log.n == 3);
	CHECK(log.order[0] == 0 && log.order[1] == 1 && log.order[2] == 2);
	CHECK(log.seen == 7);
	pthread_mutex_unlock(&log.lock);
	CHECK(t->query_stream(&dev0, s) == C_SUCCESS);
	CHECK(t->stream_add_callback(&dev0, s, NULL, &log) != C_SUCCESS);
	OK(t->stream_add_callback(&dev0, s, note_callback, &log));
	OK(t->destroy_stream(&dev0, s));	/* runs what is queued */
	CHECK(log.n == 4);
	OK(t->device_memory_deallocate(&dev0, d, n));
	free(src);
	free(out);
}

static void test_peer_copies(void)
{
	const size_t n = 1 << 16;
	uint8_t *a = NULL, *b = NULL, in[1 << 16], out[1 << 16];
	C_Stream s = NULL;

	if (ndevices < 2) {
		printf("# skipped: one device\n");
		return;
	}
	OK(t->device_memory_allocate(&dev0, (void **)&a, n));
	OK(t->device_memory_allocate(&dev1, (void **)&b, n));
	for (size_t i = 0; i < n; i++)
		in[i] = (uint8_t)(i ^ 0x33);
	OK(t->memory_copy_h2d(&dev0, a, in, n));
	OK(t->memory_copy_p2p(&dev1, &dev0, b, a, n));
	OK(t->memory_copy_d2h(&dev1, out, b, n));
	CHECK(!memcmp(in, out, n));
	OK(t->device_memory_set(&dev1, b, 0, n));
	OK(t->create_stream(&dev1, &s));
	OK(t->async_memory_copy_p2p(&dev1, &dev0, s, b, a, n));
	OK(t->synchronize_stream(&dev1, s));
	OK(t->destroy_stream(&dev1, s));
	OK(t->memory_copy_d2h(&dev1, out, b, n));
	CHECK(!memcmp(in, out, n));
	OK(t->device_memory_deallocate(&dev0, a, n));
	OK(t->device_memory_deallocate(&dev1, b, n));
}

#define THREADS 8

static void *alloc_and_copy(void *arg)
{
	size_t bytes = 4096 + 512 * (uintptr_t)arg;
	uint8_t in[8192], out[8192];
	int bad = 0;

	memset(in, (int)(uintptr_t)arg, sizeof(in));
	for (int i = 0; i < 200; i++) {
		void *p = NULL;

		if (t->device_memory_allocate(&dev0, &p, bytes) != C_SUCCESS ||
		    t->memory_copy_h2d(&dev0, p, in, bytes) != C_SUCCESS ||
		    t->memory_copy_d2h(&dev0, out, p, bytes) != C_SUCCESS ||
		    memcmp(in, out, bytes) ||
		    t->device_memory_deallocate(&dev0, p, bytes) != C_SUCCESS)
			bad++;
	}
	return (void *)(uintptr_t)bad;
}

/* "Allocations may come from several threads at once" */
static void test_threads(void)
{
	pthread_t th[THREADS];
	void *bad;

	for (uintptr_t i = 0; i < THREADS; i++)
		CHECK(!pthread_create(&th[i], NULL, alloc_and_copy, (void *)i));
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], &bad);
		CHECK(bad == NULL);
	}
}

static void test_deinit_and_finalize(void)
{
	for (size_t i = 0; i < ndevices; i++) {
		struct C_Device_st d = { (int)i };

		OK(t->deinit_device(&d));
	}
	OK(t->finalize());
}

/* ------------------------------------------------------------------ */

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "refuses_smaller_structs", test_refuses_smaller_structs },
	{ "loads_like_paddle", test_loads_like_paddle },
	{ "initialize_and_devices", test_initialize_and_devices },
	{ "current_device_is_per_thread", test_current_device_is_per_thread },
	{ "chunks_and_interior_pointers", test_chunks_and_interior_pointers },
	{ "stats_see_allocations", test_stats_see_allocations },
	{ "out_of_memory", test_out_of_memory },
	{ "chunk_policy", test_chunk_policy },
	{ "host_and_unified_memory", test_host_and_unified_memory },
	{ "async_copies_capture_the_source", test_async_copies_capture_the_source },
	{ "stream_waits_for_event", test_stream_waits_for_event },
	{ "stream_callbacks", test_stream_callbacks },
	{ "peer_copies", test_peer_copies },
	{ "threads", test_threads },
	{ "deinit_and_finalize", test_deinit_and_finalize },
};

int main(int argc, char **argv)
{
	const char *filter = NULL;
	int c, passed = 0, failed = 0, n = 0;

	while ((c = getopt(argc, argv, "t:")) != -1) {
		if (c != 't')
			return 2;
		filter = optarg;
	}
	init_plugin = plugin_entry();
	printf("TAP version 13\n1..%zu\n", sizeof(tests) / sizeof(tests[0]));
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		int before = failures;

		/* loading and initialising come first, filtered or not */
		if (filter && i > 2 && !strstr(tests[i].name, filter))
			continue;
		tests[i].fn();
		n++;
		if (failures == before) {
			passed++;
			printf("ok %d %s\n", n, tests[i].name);
		} else {
			failed++;
			printf("not ok %d %s\n", n, tests[i].name);
		}
		if (!t && i >= 1) {
			printf("Bail out! the plugin did not load\n");
			return 1;
		}
	}
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       passed, failed);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
