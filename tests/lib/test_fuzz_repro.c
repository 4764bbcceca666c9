/* SPDX-License-Identifier: MIT */
/*
 * Minimized reproducers of disagreements that lib_fuzz (tests/lib/fuzz)
 * found between libaccel and its contract, one TEST per class, as
 * `lib_fuzz --seed S --minimize` printed them (the comment above each names
 * the seed, the issue-17 item, and what the model expected).
 *
 * The printed program uses the slots below: p[] raw pointers, s[] streams,
 * e[] events, pl[] pools, m[] memory handles with mp[] their mappings, hb[]
 * pageable host buffers, src and tmp scratch buffers. fz_expect() checks a
 * status against the model's allowed statuses and, for ACCEL_FAILED, error
 * codes (bit masks: 1 << ACCEL_SUCCESS ..., 1 << ACCEL_ERROR_...).
 */
#include <stdint.h>
#include <stdlib.h>

#include <accel/accel.h>
#include <accel/memory.h>

#include "suite.h"

#define FZ_HB_SIZE (4u << 20)

static bool fz_expect(accel_status_t st, unsigned statuses, unsigned codes)
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
	accel_stream_t s[3] = { 0 };						\
	accel_event_t e[3] = { 0 };						\
	accel_pool_t pl[2] = { 0 }, dp = NULL;				\
	accel_memory_t m[6] = { 0 };					\
	void *mp[6] = { 0 };						\
	uint8_t *hb[2] = { calloc(FZ_HB_SIZE, 1), calloc(FZ_HB_SIZE, 1) }; \
	uint8_t *src = malloc(FZ_HB_SIZE + 4096);			\
	uint8_t *tmp = malloc(FZ_HB_SIZE + 4096);			\
	struct accel_memory_info info;					\
	struct accel_pointer_attributes attr;				\
	accel_status_t st;							\
	void *np;							\
	accel_memory_t nm;						\
	accel_stream_t ns;							\
	accel_event_t ne;							\
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








/*
 * Issue 17 item 5 (raw copies into pool memory): a copy past the end of a
 * pool block, inside its chunk, is accepted; docs/libaccel.md promises
 * ACCEL_FAILED for any range past its allocation.
 * Found with ACCEL_CPU_DEVICES=1, --known maprel,stale,cast,syncwait,release,peerstream,event.
 */
/* lib_fuzz --seed 1000003: got ACCEL_SUCCESS (); model allows status mask 0x4, codes ACCEL_ERROR_INVALID_VALUE [raw: default-pool block of 1 bytes] at op 91 (d2h) */
TEST(fuzz_pool_block_range)
{
	FZ_DECLS;
	/* op 48: alloc */
	OK(accel_device_pool(ctx->dev, &dp));
	st = accel_pool_allocate(dp, NULL, &np, 1); if (st == ACCEL_SUCCESS) p[0] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 91: d2h */
	st = accel_memory_copy_d2h(ctx->dev, tmp, (char *)p[0] + 1, 93);
	CHECK(fz_expect(st, 0x4, 0x2));
	FZ_FREE;
}

/*
 * Issue 17 item 5 (lifetimes): releasing the last handle of mapped memory
 * frees it while mapped; touching the mapped pointer then faults. memory.h:
 * "The last handle on mapped memory is not released ... the call fails
 * with ACCEL_ERROR_IN_USE and the handle stays valid".
 * Found with ACCEL_CPU_DEVICES=1, --known chunk,stale,cast,syncwait,release,peerstream,event.
 */
/* lib_fuzz --seed 1000211: crashed (signal 11) at op 115 (mem_touch) */
TEST(fuzz_release_mapped)
{
	FZ_DECLS;
	/* op 34: mem_create */
	st = accel_memory_create(ctx->dev, 1048576, accel_dtype(ACCEL_UINT8), NULL, 0x3, &nm); if (st == ACCEL_SUCCESS) m[4] = nm;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 47: mem_map */
	st = accel_memory_map(m[4], 3, &mp[4]);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 94: mem_release: the last handle on mapped memory stays */
	st = accel_memory_release(m[4]);
	CHECK(fz_expect(st, 0x4, 0x80));
	/* op 115: mem_touch */
	fill_pattern((char *)mp[4] + 1042499, 2439, 1485274233u);
	/* unmapped, it goes */
	OK(accel_memory_unmap(m[4]));
	OK(accel_memory_release(m[4]));
	FZ_FREE;
}

/*
 * Issue 17 item 1 (handles recognised by address): a destroyed pool's
 * handle is accepted once a new pool has its address.
 * Found with ACCEL_CPU_DEVICES=1, --known chunk,maprel,cast,syncwait,release,peerstream,event.
 */
/* lib_fuzz --seed 1000124: got ACCEL_SUCCESS (); model allows status mask 0x4, codes ACCEL_ERROR_INVALID_HANDLE at op 172 (pool_destroy) */
TEST(fuzz_stale_pool)
{
	FZ_DECLS;
	/* op 45: pool_create */
	st = accel_pool_create(ctx->dev, &npl); if (st == ACCEL_SUCCESS) pl[1] = npl;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 96: pool_destroy */
	st = accel_pool_destroy(pl[1]);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 161: mem_create */
	st = accel_memory_create(ctx->dev, 305, accel_dtype(ACCEL_UINT8), NULL, 0x0, &nm); if (st == ACCEL_SUCCESS) m[0] = nm;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 172: pool_destroy */
	st = accel_pool_destroy(pl[1]);
	CHECK(fz_expect(st, 0x4, 0x8));
	FZ_FREE;
}

/*
 * Issue 17 item 7 (OCCA cast): a cast to a dtype that the view's byte
 * offset is not aligned to is accepted; it must fail with
 * ACCEL_ERROR_INVALID_VALUE.
 * Found with ACCEL_CPU_DEVICES=1, --known chunk,maprel,stale,syncwait,release,peerstream,event.
 * As found, the program wrapped the odd address as int16 and cast that to
 * int16; the contract now refuses the misaligned wrap itself (memory.h:
 * @ptr "aligned for @dtype"), so the same bytes are wrapped as uint8, which
 * any address is aligned for, and the cast to int16 must be refused.
 */
/* lib_fuzz --seed 2000112: got ACCEL_SUCCESS (); model allows status mask 0x4, codes ACCEL_ERROR_INVALID_VALUE [handle on: default-pool block of 69483 bytes] at op 199 (mem_cast) */
TEST(fuzz_misaligned_cast)
{
	FZ_DECLS;
	/* op 28: alloc */
	OK(accel_device_pool(ctx->dev, &dp));
	st = accel_pool_allocate(dp, NULL, &np, 69483); if (st == ACCEL_SUCCESS) p[4] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* the misaligned wrap is refused; as bytes it is accepted */
	st = accel_memory_wrap(ctx->dev, (char *)p[4] + 33565, 17959, accel_dtype(ACCEL_INT16), &nm);
	CHECK(fz_expect(st, 0x4, 0x2));
	st = accel_memory_wrap(ctx->dev, (char *)p[4] + 33565, 35918, accel_dtype(ACCEL_UINT8), &nm); if (st == ACCEL_SUCCESS) m[4] = nm;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 199: mem_cast, 35918 bytes divide into int16 but start at an odd address */
	st = accel_memory_cast(m[4], accel_dtype(ACCEL_INT16), &nm); if (st == ACCEL_SUCCESS) m[3] = nm;
	CHECK(fz_expect(st, 0x4, 0x2));
	/* a slice from an even offset is int16 memory */
	OK(accel_memory_slice(m[4], 1, 35916, &m[2]));
	st = accel_memory_cast(m[2], accel_dtype(ACCEL_INT16), &nm); if (st == ACCEL_SUCCESS) m[3] = nm;
	CHECK(fz_expect(st, 0x1, 0x0));
	FZ_FREE;
}

/*
 * Issue 17 item 3 (synchronous calls wait for what came before them):
 * after a synchronous copy, the work queued before it on the device's
 * streams must be complete, so a query of such a stream says ACCEL_SUCCESS.
 * Found with ACCEL_CPU_DEVICES=1, --known chunk,maprel,stale,cast,release,peerstream,event.
 * As found, the synchronous call was accel_memory_free(), which the
 * contract now says does not wait (accel.h: "Deallocation does not wait");
 * the free stays, and a synchronous d2d copy after it is the call that
 * must have waited. The async copy is queued several times so that the
 * stream is likely still busy when the synchronous call comes.
 */
/* lib_fuzz --seed 3000195: got ACCEL_WARNING (); model allows status mask 0x1 at op 70 (stream_query) */
TEST(fuzz_sync_copy_waits)
{
	FZ_DECLS;
	/* op 7: alloc */
	OK(accel_device_pool(ctx->dev, &dp));
	st = accel_pool_allocate(dp, NULL, &np, 112); if (st == ACCEL_SUCCESS) p[7] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 18: alloc */
	st = accel_device_memory_allocate(ctx->dev, &np, 4194304); if (st == ACCEL_SUCCESS) p[3] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 21: stream_create */
	st = accel_stream_create(ctx->dev, &ns); if (st == ACCEL_SUCCESS) s[1] = ns;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 43: mem_wrap */
	/* found at + 977294, which the contract now refuses for int32 */
	st = accel_memory_wrap(ctx->dev, (char *)p[3] + 977296, 804252, accel_dtype(ACCEL_INT32), &nm); if (st == ACCEL_SUCCESS) m[2] = nm;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 66: async_d2h */
	for (int i = 0; i < 8; i++) {
		st = accel_async_memory_copy_d2h(ctx->dev, s[1], (char *)hb[0] + 155410, (char *)p[7] + 100, 10);
		CHECK(fz_expect(st, 0x1, 0x0));
		st = accel_async_memory_copy_d2h(ctx->dev, s[1], hb[1], p[3], 4194304);
		CHECK(fz_expect(st, 0x1, 0x0));
	}
	/* op 68: mem_free, which does not wait */
	st = accel_memory_free(m[2]);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* a synchronous copy: waits for s[1]'s work first */
	st = accel_memory_copy_d2d(ctx->dev, (char *)p[3] + 4096, p[3], 4096);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 70: stream_query */
	st = accel_stream_query(ctx->dev, s[1]);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* the end: every device synchronized */
	st = accel_device_synchronize(ctx->dev);
	CHECK(fz_expect(st, 0x1, 0x0));
	FZ_FREE;
}

/*
 * Issue 17 items 4 and 5 (releases are stream-ordered; memory is never
 * freed under a running transfer): deallocating memory that an async copy
 * on another device's stream still writes frees it under the copy, and
 * the backend faults.
 * Found with ACCEL_CPU_DEVICES=2, --known chunk,maprel,stale,cast,syncwait,peerstream,event.
 */
/* lib_fuzz --seed 2000041: crashed (signal 11) at op 125 (h2d) */
TEST_PEER(fuzz_release_under_peer_copy)
{
	FZ_DECLS;
	/* op 43: alloc */
	st = accel_unified_memory_allocate(ctx->peer, &np, 1048576); if (st == ACCEL_SUCCESS) p[2] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 66: alloc */
	st = accel_device_memory_allocate(ctx->dev, &np, 4194304); if (st == ACCEL_SUCCESS) p[4] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 71: stream_create */
	st = accel_stream_create(ctx->dev, &ns); if (st == ACCEL_SUCCESS) s[1] = ns;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 116: async_p2p */
	st = accel_async_memory_copy_p2p(ctx->peer, ctx->dev, s[1], (char *)p[2] + 1022038, (char *)p[4] + 447295, 3574);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 123: free */
	st = accel_unified_memory_deallocate(ctx->peer, p[2], 1048576);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 125: h2d */
	/* the end: every device synchronized */
	st = accel_device_synchronize(ctx->dev);
	CHECK(fz_expect(st, 0x1, 0x0));
	st = accel_device_synchronize(ctx->peer);
	CHECK(fz_expect(st, 0x1, 0x0));
	FZ_FREE;
}

/*
 * Issue 17 item 1 (handles recognised by address): a released memory
 * handle is accepted once a new handle has its address. lib_fuzz found it
 * with --seed 4000011 --only mem,misuse (ACCEL_CPU_DEVICES=1, every known
 * class but stale): the minimized program releases handles and creates
 * others until malloc hands an address back, then releases the stale
 * handle again and the call succeeds. Which address comes back depends on
 * the process's malloc history, so the test makes reuse certain as the
 * issue's example does: 16 slices released, 16 slices of another memory.
 */
TEST(fuzz_stale_memory_handle)
{
	FZ_DECLS;
	accel_memory_t old[16], fresh[16];
	uint8_t byte = 0x5a;

	OK(accel_memory_create(ctx->dev, 64, accel_dtype(ACCEL_UINT8), NULL, 0,
			       &m[0]));
	OK(accel_memory_create(ctx->dev, 64, accel_dtype(ACCEL_UINT8), NULL, 0,
			       &m[1]));
	for (int i = 0; i < 16; i++)
		OK(accel_memory_slice(m[0], i, 1, &old[i]));
	for (int i = 0; i < 16; i++)
		OK(accel_memory_release(old[i]));
	for (int i = 0; i < 16; i++)
		OK(accel_memory_slice(m[1], i, 1, &fresh[i]));
	for (int i = 0; i < 16; i++) {
		st = accel_memory_copy_from(old[i], &byte, 1, 0);
		CHECK(fz_expect(st, 0x4, 1u << ACCEL_ERROR_INVALID_HANDLE));
		st = accel_memory_release(old[i]);
		CHECK(fz_expect(st, 0x4, 1u << ACCEL_ERROR_INVALID_HANDLE));
	}
	FZ_FREE;
}

/*
 * Issue 17 item 2 (events bind at record time, waits bind at wait time):
 * the chain lib_fuzz generates for item 2 (gen_chain: B copies, E recorded
 * on B, A waits for E, E recorded again on an idle C, A reads what B
 * wrote) fails on the base, for example --seed 600010 with
 * ACCEL_CPU_DEVICES=2 and every known class but event; the minimized
 * program (15 ops) fails only when B has not run yet when C's record
 * completes, which fresh streams make likely: here it is repeated on
 * fresh streams until that happens, as the minimized program does once.
 */
TEST(fuzz_wait_binds_at_wait_time)
{
	FZ_DECLS;
	size_t n = 4096;
	int stale = 0;

	OK(accel_device_memory_allocate(ctx->dev, &p[0], n));	/* x */
	OK(accel_device_memory_allocate(ctx->dev, &p[1], n));	/* y */
	OK(accel_device_memory_allocate(ctx->dev, &p[2], n));	/* z */
	fill_pattern(src, n, 1234u);
	OK(accel_memory_copy_h2d(ctx->dev, p[1], src, n));
	OK(accel_event_create(ctx->dev, &e[0]));
	for (int round = 0; round < 50 && !stale; round++) {
		OK(accel_device_memory_set(ctx->dev, p[0], 0, n));
		OK(accel_device_memory_set(ctx->dev, p[2], 0, n));
		for (int i = 0; i < 3; i++)
			OK(accel_stream_create(ctx->dev, &s[i]));	/* A B C */
		for (int i = 0; i < 8; i++)
			OK(accel_async_memory_copy_d2d(ctx->dev, s[1], p[0], p[1], n));
		OK(accel_event_record(ctx->dev, s[1], e[0]));
		OK(accel_stream_wait_event(ctx->dev, s[0], e[0]));
		OK(accel_event_record(ctx->dev, s[2], e[0]));
		OK(accel_async_memory_copy_d2d(ctx->dev, s[0], p[2], p[0], n));
		OK(accel_stream_synchronize(ctx->dev, s[0]));
		OK(accel_memory_copy_d2h(ctx->dev, tmp, p[2], n));
		stale = memcmp(tmp, src, n) != 0;
		for (int i = 0; i < 3; i++)
			OK(accel_stream_destroy(ctx->dev, s[i]));
	}
	CHECK(!stale);
	FZ_FREE;
}

/*
 * memory.h: accel_memory_copy_async() between host memory and a device's
 * memory is queued on a stream of that device (the stream of the host
 * memory's device cannot order that device's engine); two devices'
 * memories take a stream of either. lib_fuzz --seed 400028
 * (ACCEL_CPU_DEVICES=2) found the header promising "either" for both
 * while the library refused the host memory's device's stream: the header
 * now says which. Checked here: the refusal, which writes nothing, then
 * the same copy on a stream of the peer.
 */
TEST_PEER(fuzz_copy_async_on_stream_of_dst_device)
{
	FZ_DECLS;
	int16_t v[15], ones[168];
	accel_stream_t ps;

	for (int i = 0; i < 168; i++)
		ones[i] = 0x1111;
	OK(accel_host_memory_allocate(ctx->dev, &p[7], 79));
	memset(p[7], 0x5a, 79);
	OK(accel_memory_wrap(ctx->dev, (char *)p[7] + 22, 28,
			     accel_dtype(ACCEL_INT16), &m[5]));
	OK(accel_memory_slice(m[5], 13, 15, &m[2]));
	OK(accel_device_memory_allocate(ctx->peer, &p[6], 364));
	OK(accel_memory_wrap(ctx->peer, (char *)p[6] + 26, 168,
			     accel_dtype(ACCEL_INT16), &m[0]));
	OK(accel_memory_copy_from(m[0], ones, ACCEL_ALL, 0));
	OK(accel_stream_create(ctx->dev, &s[0]));
	FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE,
		   accel_memory_copy_async(m[2], m[0], s[0], 6, 9, 34));
	OK(accel_stream_synchronize(ctx->dev, s[0]));
	OK(accel_memory_copy_to(m[2], v, ACCEL_ALL, 0));
	for (int i = 0; i < 15; i++)
		CHECK(v[i] == 0x5a5a);
	OK(accel_stream_create(ctx->peer, &ps));
	OK(accel_memory_copy_async(m[2], m[0], ps, 6, 9, 34));
	OK(accel_stream_synchronize(ctx->peer, ps));
	OK(accel_memory_copy_to(m[2], v, ACCEL_ALL, 0));
	for (int i = 0; i < 15; i++)
		CHECK(v[i] == (i >= 9 ? 0x1111 : 0x5a5a));
	OK(accel_stream_destroy(ctx->peer, ps));
	FZ_FREE;
}

/*
 * Issue 17 items 4 and 5 (stream-ordered frees; block ranges): with
 * ACCEL_POOL=off, a pool block freed with no stream while the device still
 * has queued work is accepted by a later synchronous copy: the free is
 * deferred behind the queued work (accel.h: "Deallocation does not wait"),
 * and the copy's range check finds the block's device allocation still
 * there. The caller freed it: docs/libaccel.md, "Ranges in pool memory":
 * a range "in a part of the chunk that is free fails with ACCEL_FAILED and
 * ACCEL_ERROR_INVALID_VALUE"; pointer attributes report freed memory as
 * unregistered. With caching on, the same program is refused.
 * lib_fuzz --seed 12000254 (ACCEL_POOL=off, ACCEL_CPU_DEVICES=1) found it;
 * minimized to this, with the queued work made long so the free is
 * deferred for certain. A pool of its own, created after ACCEL_POOL=off.
 */
TEST_NOINIT(fuzz_pool_off_freed_block_refused)
{
	struct accel_device_id d = { 0 };
	accel_device_t dev = &d;
	accel_pool_t pool;
	accel_stream_t s0;
	void *blk, *big;
	uint8_t *host = malloc(FZ_HB_SIZE), out[32];
	size_t big_size = FZ_HB_SIZE;

	setenv("ACCEL_POOL", "off", 1);
	if (suite_device_name())
		REQUIRE_OK(accel_find_device(suite_device_name(), &d.id));
	REQUIRE_OK(accel_pool_create(dev, &pool));
	REQUIRE_OK(accel_stream_create(dev, &s0));
	REQUIRE_OK(accel_device_memory_allocate(dev, &big, big_size));
	REQUIRE_OK(accel_pool_allocate(pool, NULL, &blk, 85));
	/* op 79: async_d2h from the block, then a long queue behind it */
	OK(accel_async_memory_copy_d2h(dev, s0, host, (char *)blk + 70, 2));
	for (int i = 0; i < 16; i++)
		OK(accel_async_memory_copy_d2h(dev, s0, host, big, big_size));
	/* op 80: free with no stream: does not wait */
	OK(accel_pool_deallocate(pool, NULL, blk, 85));
	/* op 88: a synchronous copy from the freed block */
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_memory_copy_d2h(dev, out, (char *)blk + 7, 21));
	OK(accel_device_synchronize(dev));
	free(host);
}

/*
 * Issue 17 item 3 (synchronous calls wait for what came before them), for
 * accel_memory_copy_p2p() with the same device on both sides, which
 * accel.h makes "a d2d copy": after it returns, the work queued before it
 * on the device's streams is complete, so a query of such a stream says
 * ACCEL_SUCCESS. lib_fuzz --seed 12000101 (ACCEL_CPU_DEVICES=2) found a
 * ACCEL_WARNING there; minimized, with the queued work made longer and the
 * program repeated so that it fails every run rather than sometimes.
 */
TEST(fuzz_sync_p2p_same_device_waits)
{
	FZ_DECLS;
	size_t n = FZ_HB_SIZE;
	int pending = 0;

	OK(accel_device_memory_allocate(ctx->dev, &p[7], n));
	OK(accel_device_pool(ctx->dev, &dp));
	OK(accel_pool_allocate(dp, NULL, &p[0], 83));
	for (int round = 0; round < 20 && !pending; round++) {
		OK(accel_stream_create(ctx->dev, &s[1]));
		/* op 36: async_p2p on one device, then a longer queue */
		OK(accel_async_memory_copy_p2p(ctx->dev, ctx->dev, s[1], (char *)p[7] + 3542706, (char *)p[0] + 19, 64));
		for (int i = 0; i < 4; i++)
			OK(accel_async_memory_copy_d2h(ctx->dev, s[1], hb[0], p[7], n));
		/* op 39: p2p */
		OK(accel_memory_copy_p2p(ctx->dev, ctx->dev, (char *)p[0] + 0, (char *)p[7] + 2176604, 83));
		/* op 42: stream_query */
		st = accel_stream_query(ctx->dev, s[1]);
		pending = st != ACCEL_SUCCESS;
		CHECK(fz_expect(st, 0x1, 0x0));
		OK(accel_stream_destroy(ctx->dev, s[1]));
	}
	FZ_FREE;
}

/*
 * memory.h, accel_host_array: "@readonly: 1 if the array must not be
 * written (copies into it fail)"; it holds for new host memory (@data
 * NULL) as for the caller's. lib_fuzz --seed 5 --only all,array
 * (ACCEL_CPU_DEVICES=2) found a host array made over new memory with
 * readonly 1 that says readonly 0; a copy into it is then accepted.
 * Known class rohost.
 */
TEST(fuzz_host_array_readonly_new_memory)
{
	size_t shape[1] = { 4 };
	accel_array_t ro, dev;
	struct accel_array_info info;

	REQUIRE_OK(accel_host_array(NULL, 1, shape, accel_dtype(ACCEL_INT32),
				    NULL, 'C', 1, &ro));
	REQUIRE_OK(accel_array_get_info(ro, &info));
	CHECK(info.readonly == 1);
	REQUIRE_OK(accel_device_array(ctx->dev, 1, shape,
				      accel_dtype(ACCEL_INT32), NULL, 'C',
				      NULL, &dev));
	FAILS_WITH(ACCEL_ERROR_INVALID_VALUE,
		   accel_array_copy_to_host(dev, ro, NULL, NULL));
	OK(accel_array_release(dev));
	OK(accel_array_release(ro));
}

/*
 * memory.h, enum accel_array_kind: ACCEL_ARRAY_MAPPED is "pinned host
 * memory the device reaches directly", and accel_mapped_array_flags() is
 * accel_mapped_array() with flags; an empty one is no device array.
 * lib_fuzz --seed 10 --only all,array (ACCEL_CPU_DEVICES=2) found
 * accel_mapped_array_flags(dev, 3, {5, 7, 0}, int32, ..., WRITE_COMBINED)
 * reporting ACCEL_ARRAY_DEVICE: a mapped array of no bytes has no
 * pinned memory under it and is taken for device memory (the flags path
 * only; accel_mapped_array() of an empty shape, checked after, is
 * mapped). Known class emptymap.
 */
TEST(fuzz_empty_mapped_array_kind)
{
	size_t shape[3] = { 5, 7, 0 };
	accel_array_t ary;
	struct accel_array_info info;

	REQUIRE_OK(accel_mapped_array_flags(ctx->dev, 3, shape,
					    accel_dtype(ACCEL_INT32), NULL,
					    'C', NULL,
					    ACCEL_ARRAY_WRITE_COMBINED, &ary));
	REQUIRE_OK(accel_array_get_info(ary, &info));
	CHECK(info.kind == ACCEL_ARRAY_MAPPED);
	OK(accel_array_release(ary));
	REQUIRE_OK(accel_mapped_array(ctx->dev, 1, &shape[2],
				      accel_dtype(ACCEL_INT32), NULL, 'C',
				      NULL, &ary));
	REQUIRE_OK(accel_array_get_info(ary, &info));
	CHECK(info.kind == ACCEL_ARRAY_MAPPED);
	OK(accel_array_release(ary));
}

/*
 * An event recorded on a stream that was destroyed since stays valid and,
 * its work done (the destroy waited for it), complete (accel.h: an event
 * names the work of its record), also once a new stream was created. On
 * accel the new queue took the destroyed one's handle, and the event's
 * fence then named the new queue: the query failed with EINVAL. The
 * driver no longer gives a queue handle again at once. lib_fuzz --seed 192
 * on accel (two devices) found it; minimized.
 */
TEST(fuzz_event_of_a_destroyed_stream)
{
	FZ_DECLS;
	OK(accel_stream_create(ctx->dev, &s[2]));
	OK(accel_memory_create(ctx->dev, 69186, accel_dtype(ACCEL_UINT8),
			       NULL, 0x0, &m[0]));
	fill_pattern(hb[0], 17681, 2487220235u);
	OK(accel_memory_copy_from_async(m[0], s[2], hb[0], ACCEL_ALL, 51505));
	OK(accel_event_create(ctx->dev, &e[0]));
	OK(accel_event_record(ctx->dev, s[2], e[0]));
	OK(accel_stream_destroy(ctx->dev, s[2]));
	OK(accel_stream_create(ctx->dev, &s[0]));
	OK(accel_event_query(ctx->dev, e[0]));
	OK(accel_event_synchronize(ctx->dev, e[0]));
	FZ_FREE;
}

/*
 * accel.h: a freed pointer is refused. A free behind queued work is
 * deferred, and until then the backend still holds the memory; on cuda the
 * driver, asked about a pointer the library does not know, described it as
 * another library's unified memory, and a copy into the freed block was
 * taken (now foreign memory excludes the library's own deferred frees).
 * Found on cuda with fakecuda, the model of the CUDA driver.
 */
/* lib_fuzz --seed 1 --only all,array: seed 77, op 150 (async_h2d) */
TEST(fuzz_freed_unified_refused_while_its_free_is_deferred)
{
	FZ_DECLS;
	/* op 4, 5: alloc */
	st = accel_device_memory_allocate(ctx->dev, &np, 4194304); if (st == ACCEL_SUCCESS) p[1] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	st = accel_device_memory_allocate(ctx->dev, &np, 4194304); if (st == ACCEL_SUCCESS) p[5] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 8, 10: stream_create */
	st = accel_stream_create(ctx->dev, &ns); if (st == ACCEL_SUCCESS) s[0] = ns;
	CHECK(fz_expect(st, 0x1, 0x0));
	st = accel_stream_create(ctx->dev, &ns); if (st == ACCEL_SUCCESS) s[2] = ns;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 103: alloc */
	st = accel_unified_memory_allocate(ctx->dev, &np, 379); if (st == ACCEL_SUCCESS) p[6] = np;
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 115: async_p2p, queued work the free below is deferred behind */
	st = accel_async_memory_copy_p2p(ctx->dev, ctx->dev, s[0], (char *)p[1] + 2053102, (char *)p[5] + 957424, 478695);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 118: free */
	st = accel_unified_memory_deallocate(ctx->dev, p[6], 379);
	CHECK(fz_expect(st, 0x1, 0x0));
	/* op 150: async_h2d into the freed block */
	st = accel_async_memory_copy_h2d(ctx->dev, s[2], (char *)p[6] + 227, (char *)hb[0] + 42349, 29);
	CHECK(fz_expect(st, 0x4, 0x2));
	FZ_FREE;
}
