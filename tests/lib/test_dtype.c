// SPDX-License-Identifier: MIT
/* dtypes: the built-in C scalar types and registered ones (occa::dtype_t). */
#include <accel/memory.h>

#include "suite.h"

TEST_NOINIT(builtin_dtypes_have_names_sizes_and_typestrs)
{
	static const struct {
		enum accel_scalar s;
		const char *name;
		size_t size;
		const char *typestr;
	} want[] = {
		{ ACCEL_BOOL, "bool", 1, "|b1" },
		{ ACCEL_INT8, "int8", 1, "|i1" },
		{ ACCEL_UINT8, "uint8", 1, "|u1" },
		{ ACCEL_INT16, "int16", 2, "<i2" },
		{ ACCEL_UINT16, "uint16", 2, "<u2" },
		{ ACCEL_INT32, "int32", 4, "<i4" },
		{ ACCEL_UINT32, "uint32", 4, "<u4" },
		{ ACCEL_INT64, "int64", 8, "<i8" },
		{ ACCEL_UINT64, "uint64", 8, "<u8" },
		{ ACCEL_FLOAT32, "float32", 4, "<f4" },
		{ ACCEL_FLOAT64, "float64", 8, "<f8" },
	};
	accel_dtype_t t;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		t = accel_dtype(want[i].s);
		REQUIRE(t);
		CHECK(!strcmp(accel_dtype_name(t), want[i].name));
		CHECK(accel_dtype_size(t) == want[i].size);
		CHECK(!strcmp(accel_dtype_typestr(t), want[i].typestr));
		OK(accel_dtype_find(want[i].name, &t));
		CHECK(t == accel_dtype(want[i].s));
	}
	CHECK(!accel_dtype(ACCEL_SCALAR_COUNT));
	CHECK(!accel_dtype_name(NULL) && !accel_dtype_size(NULL));
	/* the C names */
	OK(accel_dtype_find("double", &t));
	CHECK(t == accel_dtype(ACCEL_FLOAT64));
	OK(accel_dtype_find("int", &t));
	CHECK(t == accel_dtype(ACCEL_INT32));
	FAILS(accel_dtype_find("complex256", &t));
	FAILS(accel_dtype_find(NULL, &t));
}

TEST_NOINIT(registered_dtypes)
{
	accel_dtype_t rgb, again, t;
	char longname[80];

	REQUIRE_OK(accel_dtype_register("rgb8", 3, &rgb));
	CHECK(accel_dtype_size(rgb) == 3);
	CHECK(!strcmp(accel_dtype_name(rgb), "rgb8"));
	CHECK(!strcmp(accel_dtype_typestr(rgb), "|V3"));
	OK(accel_dtype_find("rgb8", &again));
	CHECK(again == rgb);
	/* names are unique, sizes and names bounded */
	FAILS(accel_dtype_register("rgb8", 3, &t));
	FAILS(accel_dtype_register("float64", 8, &t));
	FAILS(accel_dtype_register("double", 8, &t));
	FAILS(accel_dtype_register("empty", 0, &t));
	FAILS(accel_dtype_register("", 4, &t));
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	FAILS(accel_dtype_register(longname, 4, &t));
	FAILS(accel_dtype_register(NULL, 4, &t));
	/* many registrations keep the earlier handles valid */
	for (int i = 0; i < 300; i++) {
		char name[16];

		snprintf(name, sizeof(name), "t%d", i);
		REQUIRE_OK(accel_dtype_register(name, (size_t)i + 1, &t));
	}
	CHECK(accel_dtype_size(rgb) == 3);
	OK(accel_dtype_find("t299", &t));
	CHECK(accel_dtype_size(t) == 300);
}

TEST(memory_of_a_registered_dtype)
{
	accel_dtype_t rgb;
	accel_memory_t m;
	struct accel_memory_info info;
	uint8_t in[15], out[15];

	REQUIRE_OK(accel_dtype_register("rgb", 3, &rgb));
	fill_pattern(in, sizeof(in), 4);
	REQUIRE_OK(accel_memory_create(ctx->dev, 5, rgb, in, 0, &m));
	OK(accel_memory_get_info(m, &info));
	CHECK(info.entries == 5 && info.bytes == 15 && info.dtype == rgb);
	OK(accel_memory_copy_to(m, out, ACCEL_ALL, 0));
	CHECK(!memcmp(in, out, sizeof(in)));
	OK(accel_memory_release(m));
}
