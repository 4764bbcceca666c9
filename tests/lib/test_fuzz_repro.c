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







/* issue 17 item 1: a destroyed pool's handle is accepted by accel_pool_allocate once a new pool has its address */
/* lib_fuzz --seed 5046: got C_SUCCESS (); model allows status mask 0x4, codes ACCEL_ERROR_INVALID_HANDLE at op 152 (alloc) */
TEST(fuzz_stale_pool_allocate)
{
	FZ_DECLS;
	/* op 15: pool_create */
	st = accel_pool_create(ctx->dev, &npl); if (st == C_SUCCESS) pl[0] = npl;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 119: pool_destroy */
	st = accel_pool_destroy(pl[0]);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 128: pool_create */
	st = accel_pool_create(ctx->dev, &npl); if (st == C_SUCCESS) pl[1] = npl;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 152: alloc */
	st = accel_pool_allocate(pl[0], NULL, &np, 106); if (st == C_SUCCESS) p[4] = np;
	CHECK(fz_expect(st, 0x4, 0x8));
	FZ_FREE;
}

/* issue 17 item 1: a released memory handle is accepted once a new handle has its address */
/* lib_fuzz --seed 20037: got C_SUCCESS (); model allows status mask 0x4, codes ACCEL_ERROR_INVALID_HANDLE [handle on: default-pool block of 104 bytes] at op 186 (mem_copy_to) */
TEST(fuzz_stale_memory_handle)
{
	FZ_DECLS;
	/* op 135: mem_create */
	fill_pattern(src, 104, 1123345198);
	st = accel_memory_create(ctx->dev, 13, accel_dtype(ACCEL_FLOAT64), src, 0x0, &nm); if (st == C_SUCCESS) m[0] = nm;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 155: stream_create */
	st = accel_stream_create(ctx->dev, &ns); if (st == C_SUCCESS) s[2] = ns;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 163: stream_destroy */
	st = accel_stream_destroy(ctx->dev, s[2]);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 186: mem_copy_to */
	st = accel_memory_copy_to_async(m[0], s[2], hb[1], 0, 9);
	CHECK(fz_expect(st, 0x4, 0x8));
	FZ_FREE;
}

/* issue 17 item 7 (OCCA cast): a cast to a dtype that the view's byte offset is not aligned to is accepted */
/* lib_fuzz --seed 40059: got C_SUCCESS (); model allows status mask 0x4, codes ACCEL_ERROR_INVALID_VALUE [handle on: device of 362 bytes] at op 103 (mem_cast) */
TEST(fuzz_misaligned_cast)
{
	FZ_DECLS;
	/* op 35: alloc */
	st = accel_device_memory_allocate(ctx->dev, &np, 362); if (st == C_SUCCESS) p[2] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 95: mem_wrap */
	st = accel_memory_wrap(ctx->dev, (char *)p[2] + 161, 50, accel_dtype(ACCEL_INT32), &nm); if (st == C_SUCCESS) m[1] = nm;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 103: mem_cast */
	st = accel_memory_cast(m[1], accel_dtype(ACCEL_FLOAT64), &nm); if (st == C_SUCCESS) m[5] = nm;
	CHECK(fz_expect(st, 0x4, 0x2));
	FZ_FREE;
}


/* issue 17 item 1: a destroyed pool's handle, its address now the default pool's, is taken for the default pool */
/* lib_fuzz --seed 60060: got C_FAILED ACCEL_ERROR_INVALID_VALUE (accel_pool_destroy: the default pool of cpu:0 cannot be destroyed); model allows status mask 0x4, codes ACCEL_ERROR_INVALID_HANDLE at op 142 (pool_destroy) */
TEST(fuzz_stale_pool_is_default)
{
	FZ_DECLS;
	/* op 65: pool_create */
	st = accel_pool_create(ctx->dev, &npl); if (st == C_SUCCESS) pl[1] = npl;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 67: pool_destroy */
	st = accel_pool_destroy(pl[1]);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 72: mem_create */
	st = accel_memory_create(ctx->dev, 54, accel_dtype(ACCEL_FLOAT64), NULL, 0x0, &nm); if (st == C_SUCCESS) m[4] = nm;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 142: pool_destroy */
	st = accel_pool_destroy(pl[1]);
	CHECK(fz_expect(st, 0x4, 0x8));
	FZ_FREE;
}

/* issue 17 item 5: a raw copy past the end of a pool block (inside its chunk) is accepted */
/* lib_fuzz --seed 500: got C_SUCCESS (); model allows status mask 0x4, codes ACCEL_ERROR_INVALID_VALUE [raw: default-pool block of 97 bytes] at op 126 (h2d) */
TEST(fuzz_pool_block_range)
{
	FZ_DECLS;
	/* op 31: alloc */
	OK(accel_device_pool(ctx->dev, &dp));
	st = accel_pool_allocate(dp, NULL, &np, 97); if (st == C_SUCCESS) p[3] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 126: h2d */
	fill_pattern(src, 219, 2385526875);
	st = accel_memory_copy_h2d(ctx->dev, (char *)p[3] + 0, src, 219);
	CHECK(fz_expect(st, 0x4, 0x2));
	FZ_FREE;
}


/* issue 17 item 5: releasing the last handle of mapped memory frees it while mapped; the mapped pointer then faults */
/* lib_fuzz --seed 918: crashed (signal 11) at op 135 (mem_touch) */
TEST(fuzz_release_mapped)
{
	FZ_DECLS;
	/* op 61: mem_create */
	st = accel_memory_create(ctx->dev, 27863, accel_dtype(ACCEL_UINT8), NULL, 0x3, &nm); if (st == C_SUCCESS) m[3] = nm;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 79: mem_copy_from */
	fill_pattern(src, 2215, 3103675924);
	st = accel_memory_copy_from(m[3], src, ACCEL_ALL + 0 * 18446744073709551615, 25648);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 99: mem_map */
	st = accel_memory_map(m[3], 1, &mp[3]);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 104: mem_release */
	st = accel_memory_release(m[3]);
	CHECK(fz_expect(st, 0x5, 0x80));
	FZ_FREE;
}


/* issue 17 items 4 and 5: releasing memory that an async copy on another device's stream still reads frees it under the copy (the backend crashes); deallocation must wait for, or be ordered after, the work that uses it */
/* lib_fuzz --seed 3076: crashed (signal 11) at op 162 (h2d) */
TEST_PEER(fuzz_release_under_peer_copy)
{
	FZ_DECLS;
	/* op 12: mem_create */
	st = accel_memory_create(ctx->dev, 48, accel_dtype(ACCEL_FLOAT64), NULL, 0x1, &nm); if (st == C_SUCCESS) m[4] = nm;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 33: mem_create */
	fill_pattern(src, 4194304, 883388799);
	st = accel_memory_create(ctx->peer, 524288, accel_dtype(ACCEL_FLOAT64), src, 0x3, &nm); if (st == C_SUCCESS) m[1] = nm;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 58: stream_create */
	st = accel_stream_create(ctx->dev, &ns); if (st == C_SUCCESS) s[1] = ns;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 152: mem_copy */
	st = accel_memory_copy_async(m[4], m[1], s[1], 6, 42, 267308);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 157: mem_release */
	st = accel_memory_release(m[1]);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 162: h2d */
	/* the end: every device synchronized */
	st = accel_device_synchronize(ctx->dev);
	CHECK(fz_expect(st, 0x1, 0x0));
	st = accel_device_synchronize(ctx->peer);
	CHECK(fz_expect(st, 0x1, 0x0));
	FZ_FREE;
}

/* issue 17 item 3: a synchronous copy (p2p on one device, a d2d) must first wait for the work already queued on the device's streams; after it, a query of such a stream must say C_SUCCESS */
/* lib_fuzz --seed 4139: got C_WARNING (); model allows status mask 0x1 at op 130 (stream_query) */
TEST(fuzz_sync_p2p_waits)
{
	FZ_DECLS;
	/* op 24: alloc */
	st = accel_device_memory_allocate(ctx->dev, &np, 53157); if (st == C_SUCCESS) p[4] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 44: stream_create */
	st = accel_stream_create(ctx->dev, &ns); if (st == C_SUCCESS) s[0] = ns;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 95: alloc */
	st = accel_unified_memory_allocate(ctx->dev, &np, 178); if (st == C_SUCCESS) p[1] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 101: async_h2d */
	st = accel_async_memory_copy_h2d(ctx->dev, s[0], (char *)p[4] + 22876, (char *)p[1] + 151, 27);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 124: p2p */
	st = accel_memory_copy_p2p(ctx->dev, ctx->dev, (char *)p[4] + 0, (char *)p[4] + 26734, 26423);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 130: stream_query */
	st = accel_stream_query(ctx->dev, s[0]);
	CHECK(fz_expect(st, 0x1, 0x0));
	FZ_FREE;
}
