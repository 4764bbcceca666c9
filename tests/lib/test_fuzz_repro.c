/* SPDX-License-Identifier: MIT */
/*
 * Minimized reproducers of disagreements that lib_fuzz (tests/fuzz/lib_fuzz)
 * found between libaccel and its contract, one TEST per class, as
 * `lib_fuzz --seed S --minimize` printed them (the comment above each names
 * the seed, the issue-17 item, and what the model expected).
 *
 * The printed program uses the slots below: p[] raw pointers, s[] streams,
 * e[] events, pl[] pools, m[] memory handles with mp[] their mappings, hb[]
 * pageable host buffers, src and tmp scratch buffers. fz_expect() checks a
 * status against the model's allowed statuses and, for C_FAILED, error
 * codes (bit masks: 1 << C_SUCCESS ..., 1 << ACCEL_ERROR_...).
 */
#include <stdint.h>
#include <stdlib.h>

#include <accel/accel.h>
#include <accel/memory.h>

#include "suite.h"

#define FZ_HB_SIZE (4u << 20)

static bool fz_expect(C_Status st, unsigned statuses, unsigned codes)
{
	enum accel_error code = accel_get_last_error_code();

	if ((unsigned)st >= 32 || !(statuses & (1u << st))) {
		printf("#   status %d, allowed mask 0x%x (%s)\n", st, statuses,
		       accel_get_last_error());
		return false;
	}
	if (st == C_FAILED && !(codes & (1u << code))) {
		printf("#   code %s, allowed mask 0x%x\n", accel_error_name(code),
		       codes);
		return false;
	}
	return true;
}

#define FZ_DECLS							\
	void *p[8] = { 0 };						\
	C_Stream s[3] = { 0 };						\
	C_Event e[3] = { 0 };						\
	accel_pool_t pl[2] = { 0 }, dp = NULL;				\
	accel_memory_t m[6] = { 0 };					\
	void *mp[6] = { 0 };						\
	uint8_t *hb[2] = { calloc(FZ_HB_SIZE, 1), calloc(FZ_HB_SIZE, 1) }; \
	uint8_t *src = malloc(FZ_HB_SIZE + 4096);			\
	uint8_t *tmp = malloc(FZ_HB_SIZE + 4096);			\
	struct accel_memory_info info;					\
	C_Status st;							\
	void *np;							\
	accel_memory_t nm;						\
	C_Stream ns;							\
	C_Event ne;							\
	accel_pool_t npl;						\
	(void)p; (void)s; (void)e; (void)pl; (void)dp; (void)m;		\
	(void)mp; (void)info; (void)st; (void)np; (void)nm; (void)ns;	\
	(void)ne; (void)npl;						\
	accel_get_last_error_code()

/* The process ends with the test: the library's objects go with it. */
#define FZ_FREE								\
	do {								\
		free(hb[0]);						\
		free(hb[1]);						\
		free(src);						\
		free(tmp);						\
	} while (0)

