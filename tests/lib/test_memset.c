// SPDX-License-Identifier: MIT
/* device_memory_set */
#include "suite.h"

TEST(set_whole_and_parts)
{
	const size_t n = (1 << 20) + 3;
	uint8_t *d = dalloc(ctx, n), *back;
	static const struct { size_t off, len; uint8_t v; } parts[] = {
		{ 1, 1, 0x01 }, { 3, 250, 0xff }, { 4095, 2, 0x80 },
		{ 65536 + 7, 100000, 0x00 }, { (1 << 20) + 2, 1, 0x7e },
	};

	OK(accel_device_memory_set(ctx->dev, d, 0xa5, n));
	back = read_back(ctx, d, n);
	CHECK(check_bytes(back, n, 0xa5));
	free(back);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		OK(accel_device_memory_set(ctx->dev, d + parts[i].off,
					   parts[i].v, parts[i].len));
	back = read_back(ctx, d, n);
	for (size_t i = 0, at = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		CHECK(check_bytes(back + at, parts[i].off - at, 0xa5));
		CHECK(check_bytes(back + parts[i].off, parts[i].len, parts[i].v));
		at = parts[i].off + parts[i].len;
	}
	free(back);
	dfree(ctx, d, n);
}

TEST(set_all_byte_values)
{
	uint8_t *d = dalloc(ctx, 256 * 64), *back;

	for (int v = 0; v < 256; v++)
		OK(accel_device_memory_set(ctx->dev, d + v * 64, (unsigned char)v, 64));
	back = read_back(ctx, d, 256 * 64);
	for (int v = 0; v < 256; v++)
		CHECK(check_bytes(back + v * 64, 64, (uint8_t)v));
	free(back);
	dfree(ctx, d, 256 * 64);
}
