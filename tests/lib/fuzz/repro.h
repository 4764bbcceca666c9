/* SPDX-License-Identifier: MIT */
/*
 * What a reproducer that lib_fuzz --minimize prints needs: the slot arrays
 * its ops name (p[] raw pointers, s[] streams, e[] events, pl[] pools, m[]
 * memory handles with mp[] their mappings, a[] arrays, hb[] pageable host
 * buffers, src and tmp scratch), and fz_expect(), which checks a status
 * against the model's allowed ones and, for ACCEL_FAILED, the error code
 * (bit masks: 1 << ACCEL_SUCCESS ..., 1 << ACCEL_ERROR_...). Put the
 * printed TEST in a file of tests/lib that includes this header after
 * suite.h to run it; then rewrite it in the suite's plain style, as a test
 * of the feature it breaks, in that feature's file.
 */
#ifndef ACCEL_FUZZ_REPRO_H
#define ACCEL_FUZZ_REPRO_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <accel/accel.h>
#include <accel/memory.h>

#define FZ_HB_SIZE (4u << 20)

static inline bool fz_expect(accel_status_t st, unsigned statuses,
			     unsigned codes)
{
	enum accel_error code = accel_peek_last_error_code();

	if ((unsigned)st >= 32 || !(statuses & (1u << st))) {
		printf("#   status %d, allowed mask 0x%x (%s)\n", st, statuses,
		       accel_get_last_error());
		return false;
	}
	accel_get_last_error_code();	/* the next call's error is its own */
	if (st == ACCEL_FAILED && !(codes & (1u << code))) {
		printf("#   code %s, allowed mask 0x%x\n", accel_error_name(code),
		       codes);
		return false;
	}
	return true;
}

#define FZ_DECLS							\
	void *p[8] = { 0 };						\
	accel_stream_t s[3] = { 0 };					\
	accel_event_t e[3] = { 0 };					\
	accel_pool_t pl[2] = { 0 }, dp = NULL;				\
	accel_memory_t m[6] = { 0 };					\
	void *mp[6] = { 0 };						\
	uint8_t *hb[2] = { calloc(FZ_HB_SIZE, 1), calloc(FZ_HB_SIZE, 1) }; \
	uint8_t *src = malloc(FZ_HB_SIZE + 4096);			\
	uint8_t *tmp = malloc(FZ_HB_SIZE + 4096);			\
	struct accel_memory_info info;					\
	struct accel_pointer_attributes attr;				\
	accel_status_t st;						\
	void *np;							\
	accel_memory_t nm;						\
	accel_stream_t ns;						\
	accel_event_t ne;						\
	accel_pool_t npl;						\
	accel_array_t a[6] = { 0 }, na;					\
	struct accel_array_info ainfo;					\
	struct accel_array_interface iface;				\
	(void)a; (void)na; (void)ainfo; (void)iface;			\
	(void)p; (void)s; (void)e; (void)pl; (void)dp; (void)m;		\
	(void)mp; (void)info; (void)st; (void)np; (void)nm; (void)ns;	\
	(void)ne; (void)npl; (void)attr;				\
	accel_get_last_error_code()

/* The process ends with the test: the library's objects go with it. */
#define FZ_FREE								\
	do {								\
		free(hb[0]);						\
		free(hb[1]);						\
		free(src);						\
		free(tmp);						\
	} while (0)

#endif /* ACCEL_FUZZ_REPRO_H */
