/* SPDX-License-Identifier: MIT */
/*
 * The data pattern of the suite (suite.h) and of lib_fuzz (fuzz/fuzz.h):
 * one definition, since the reproducers lib_fuzz prints refill their
 * buffers with fill_pattern() and must see the bytes that lib_fuzz wrote.
 */
#ifndef ACCEL_TEST_PATTERN_H
#define ACCEL_TEST_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* a deterministic pattern: byte i of stream seed */
static inline uint8_t pattern_byte(uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u + seed * 40503u + 17;

	x ^= x >> 13;
	return (uint8_t)(x * 0x5bd1e995u >> 24);
}

static inline void fill_pattern(void *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		((uint8_t *)p)[i] = pattern_byte(seed, i);
}

#endif /* ACCEL_TEST_PATTERN_H */
