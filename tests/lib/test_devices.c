// SPDX-License-Identifier: MIT
/* Devices, backends, selection and the last-error message. */
#include <pthread.h>

#include "suite.h"

TEST(device_list_and_names)
{
	size_t count, ids[64];
	const char *names[64];

	REQUIRE_OK(accel_get_device_count(&count));
	REQUIRE(count >= 1 && count <= 64);
	REQUIRE_OK(accel_get_device_list(ids));
	for (size_t i = 0; i < count; i++) {
		struct accel_device_id d = { .id = (int)ids[i] };
		int id = -1;

		CHECK(ids[i] == i);
		REQUIRE_OK(accel_get_device_name(&d, &names[i]));
		CHECK(strchr(names[i], ':') != NULL);
		OK(accel_find_device(names[i], &id));
		CHECK(id == (int)i);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(names[i], names[j]) != 0);
	}
}

TEST(find_device_by_backend_and_unknown_name)
{
	char backend[32];
	int id = -1;

	snprintf(backend, sizeof(backend), "%.*s",
		 (int)strcspn(ctx->name, ":"), ctx->name);
	OK(accel_find_device(backend, &id));
	CHECK(id >= 0 && id <= ctx->dev->id);
	id = 12345;
	FAILS(accel_find_device("nosuch:0", &id));
	CHECK(id == 12345);
	FAILS(accel_find_device(NULL, &id));
	FAILS(accel_find_device(ctx->name, NULL));
}

TEST(bad_device_is_an_error)
{
	struct accel_device_id bad = { .id = -1 }, past;
	size_t count, total, free;
	void *p = (void *)0x1;
	char buf[4];

	REQUIRE_OK(accel_get_device_count(&count));
	past.id = (int)count;
	FAILS(accel_device_memory_allocate(NULL, &p, 16));
	CHECK(p == NULL);
	p = (void *)0x1;
	FAILS(accel_device_memory_allocate(&bad, &p, 16));
	FAILS(accel_device_memory_allocate(&past, &p, 16));
	CHECK(strstr(accel_get_last_error(), "does not exist") != NULL);
	FAILS(accel_memory_copy_h2d(&past, (void *)0x1000, buf, 4));
	FAILS(accel_device_memory_stats(&bad, &total, &free));
	FAILS(accel_device_min_chunk_size(&past, &total));
	FAILS(accel_device_synchronize(NULL));
}

TEST(backend_info)
{
	const char *reason = NULL;
	char backend[32];
	int available = -1;

	snprintf(backend, sizeof(backend), "%.*s",
		 (int)strcspn(ctx->name, ":"), ctx->name);
	OK(accel_get_backend_info(backend, &available, &reason));
	CHECK(available == 1);
	CHECK(reason && !reason[0]);
	FAILS(accel_get_backend_info("nosuch", &available, &reason));
	FAILS(accel_get_backend_info(NULL, &available, &reason));
	/* every known backend answers, with a reason when unavailable */
	for (const char *const *b = (const char *const[]){ "accel", "cuda", "cpu", NULL }; *b; b++) {
		OK(accel_get_backend_info(*b, &available, &reason));
		CHECK(available || (reason && reason[0]));
		if (suite_verbose())
			printf("#   %s: %s %s\n", *b, available ? "available" : "unavailable",
			       reason);
	}
}

TEST(last_error_names_function_and_clears)
{
	void *p;

	accel_clear_last_error();
	CHECK(accel_get_last_error()[0] == '\0');
	FAILS(accel_device_memory_allocate(ctx->dev, NULL, 16));
	CHECK(strstr(accel_get_last_error(), "accel_device_memory_allocate") != NULL);
	/* a success does not erase it */
	p = dalloc(ctx, 16);
	CHECK(strstr(accel_get_last_error(), "accel_device_memory_allocate") != NULL);
	dfree(ctx, p, 16);
	accel_clear_last_error();
	CHECK(accel_get_last_error()[0] == '\0');
}

static void *fail_in_thread(void *arg)
{
	struct suite_ctx *ctx = arg;

	accel_device_memory_deallocate(ctx->dev, (void *)0x10, 16);
	return strdup(accel_get_last_error());
}

TEST(last_error_is_per_thread)
{
	pthread_t t;
	char *theirs;

	accel_clear_last_error();
	REQUIRE(pthread_create(&t, NULL, fail_in_thread, ctx) == 0);
	pthread_join(t, (void **)&theirs);
	CHECK(theirs && theirs[0]);
	CHECK(accel_get_last_error()[0] == '\0');
	free(theirs);
}

/* ACCEL_VISIBLE_DEVICES is read when the library starts. */

TEST_NOINIT(visible_devices_empty_hides_all)
{
	size_t count = 99;
	struct accel_device_id d = { 0 };
	void *p;

	setenv("ACCEL_VISIBLE_DEVICES", "", 1);
	OK(accel_get_device_count(&count));
	CHECK(count == 0);
	FAILS(accel_device_memory_allocate(&d, &p, 16));
}

TEST_NOINIT(visible_devices_bad_entry_is_reported)
{
	size_t count;

	setenv("ACCEL_VISIBLE_DEVICES", "cpu,nosuch:3", 1);
	FAILS(accel_get_device_count(&count));
	CHECK(strstr(accel_get_last_error(), "nosuch:3") != NULL);
	setenv("ACCEL_VISIBLE_DEVICES", "cpu:99", 1);	/* read once: no change */
	FAILS(accel_get_device_count(&count));
}

TEST_NOINIT(visible_devices_select_and_order)
{
	const char *want = suite_device_name() ? suite_device_name() : "cpu:0";
	char list[80];
	const char *name;
	struct accel_device_id d = { 0 };
	size_t count;

	/* the device under test, named twice, comes once, first */
	snprintf(list, sizeof(list), " %s , %s", want, want);
	setenv("ACCEL_VISIBLE_DEVICES", list, 1);
	REQUIRE_OK(accel_get_device_count(&count));
	CHECK(count == 1);
	REQUIRE_OK(accel_get_device_name(&d, &name));
	CHECK(!strcmp(name, want));
}

/* The cpu backend's settings are checked; a bad one names itself. */
static void cpu_refuses(const char *var, const char *value)
{
	const char *reason = NULL;
	int available = -1;
	size_t count;

	setenv(var, value, 1);
	setenv("ACCEL_VISIBLE_DEVICES", "cpu", 1);	/* read at the first call */
	OK(accel_get_backend_info("cpu", &available, &reason));
	CHECK(available == 0);
	CHECK(reason && strstr(reason, var) != NULL);
	if (suite_verbose())
		printf("#   cpu: %s\n", reason);
	FAILS(accel_get_device_count(&count));
	CHECK(strstr(accel_get_last_error(), "unavailable") != NULL);
}

TEST_NOINIT(cpu_memory_setting_is_checked)
{
	cpu_refuses("ACCEL_CPU_MEMORY", "lots");
}

TEST_NOINIT(cpu_device_count_is_checked)
{
	cpu_refuses("ACCEL_CPU_DEVICES", "17");
}

TEST_NOINIT(cpu_devices_and_memory_as_set)
{
	struct accel_device_id d = { .id = 2 };
	size_t count, total, free;
	const char *name;

	setenv("ACCEL_VISIBLE_DEVICES", "cpu", 1);
	setenv("ACCEL_CPU_DEVICES", "3", 1);
	setenv("ACCEL_CPU_MEMORY", "64M", 1);
	REQUIRE_OK(accel_get_device_count(&count));
	CHECK(count == 3);
	REQUIRE_OK(accel_get_device_name(&d, &name));
	CHECK(!strcmp(name, "cpu:2"));
	REQUIRE_OK(accel_device_memory_stats(&d, &total, &free));
	CHECK(total == 64 << 20 && free == total);
}
