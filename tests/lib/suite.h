/* SPDX-License-Identifier: MIT */
/*
 * The libaccel conformance suite: one set of tests, run against whatever
 * device it is given, on every backend.
 *
 * Each test runs in a child process of its own, so that one crash or leak
 * cannot hide behind another test, and so that a test may set the
 * environment before the library starts. The parent never calls libaccel.
 */
#ifndef ACCEL_SUITE_H
#define ACCEL_SUITE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <accel/accel.h>

#include "pattern.h"

struct suite_ctx {
	accel_device_t dev;		/* the device under test */
	accel_device_t peer;		/* a second device, or NULL */
	struct accel_device_id dev_s, peer_s;
	const char *name;	/* the device's name */
	size_t min_chunk;
};

enum suite_needs {
	NEEDS_DEVICE,	/* the harness opens the devices first */
	NEEDS_PEER,	/* ... and skips the test without a second device */
	NEEDS_NOTHING,	/* the test starts the library itself */
};

struct suite_test {
	const char *name;
	void (*fn)(struct suite_ctx *ctx);
	enum suite_needs needs;
	struct suite_test *next;
};

void suite_register(struct suite_test *t);
void suite_fail(const char *file, int line, const char *what);
void suite_skip(const char *why) __attribute__((noreturn));
bool suite_verbose(void);
/* the device named in the suite's -d option (or NULL), for NEEDS_NOTHING tests */
const char *suite_device_name(void);
/*
 * open the devices as the harness does for @needs (NEEDS_DEVICE or
 * NEEDS_PEER): for a NEEDS_NOTHING test, or a process it forked
 */
void suite_open(struct suite_ctx *ctx, enum suite_needs needs);
/* end the process: status 1 if a check failed, else 0 */
void suite_exit(void) __attribute__((noreturn));
/* the time-out of a test, for a process it forked (alarms are not inherited) */
void suite_start_timer(void);
/*
 * A test of a bug that is known and not fixed skips unless
 * ACCEL_SUITE_KNOWN_BUGS=1 is set, so that the suite stays green while the
 * bug stays reproducible; @what says which promise it shows broken.
 */
void suite_known_bug(const char *what);

#define SUITE_TEST(fname, need)						\
	static void test_##fname(struct suite_ctx *ctx);		\
	static struct suite_test reg_##fname = {			\
		.name = #fname, .fn = test_##fname, .needs = need };	\
	__attribute__((constructor)) static void add_##fname(void)	\
	{								\
		suite_register(&reg_##fname);				\
	}								\
	static void test_##fname(struct suite_ctx *ctx __attribute__((unused)))

#define TEST(fname) SUITE_TEST(fname, NEEDS_DEVICE)
#define TEST_PEER(fname) SUITE_TEST(fname, NEEDS_PEER)
#define TEST_NOINIT(fname) SUITE_TEST(fname, NEEDS_NOTHING)

/* A failed CHECK marks the test failed and goes on. */
#define CHECK(cond)							\
	do {								\
		if (!(cond))						\
			suite_fail(__FILE__, __LINE__, #cond);		\
	} while (0)

/* A failed REQUIRE ends the test. */
#define REQUIRE(cond)							\
	do {								\
		if (!(cond)) {						\
			suite_fail(__FILE__, __LINE__, #cond);		\
			exit(1);					\
		}							\
	} while (0)

#define OK(call) CHECK((call) == ACCEL_SUCCESS)
#define REQUIRE_OK(call) REQUIRE((call) == ACCEL_SUCCESS)

/* The call must fail with ACCEL_FAILED and leave a message. */
#define FAILS(call)							\
	do {								\
		accel_clear_last_error();				\
		if ((call) != ACCEL_FAILED)					\
			suite_fail(__FILE__, __LINE__, #call " should fail"); \
		else if (!accel_get_last_error()[0])			\
			suite_fail(__FILE__, __LINE__, #call " left no message"); \
		else if (suite_verbose())				\
			printf("#   expected: %s\n", accel_get_last_error()); \
	} while (0)

/* The call must fail as FAILS() does, with the error code @code. */
#define FAILS_WITH(code, call)						\
	do {								\
		FAILS(call);						\
		if (accel_peek_last_error_code() != (code)) {		\
			printf("#   code %s, not %s\n",			\
			       accel_error_name(accel_peek_last_error_code()), \
			       accel_error_name(code));			\
			suite_fail(__FILE__, __LINE__, #call " gave the wrong code"); \
		}							\
	} while (0)

/* The call must fail as a handle on freed storage: INVALID_HANDLE, "freed". */
#define FAILS_FREED(call)						\
	do {								\
		FAILS_WITH(ACCEL_ERROR_INVALID_HANDLE, call);		\
		CHECK(strstr(accel_get_last_error(), "freed"));		\
	} while (0)

/* ------------------------------------------------------------------ */
/* Helpers for tests (and pattern_byte(), fill_pattern() of pattern.h) */

/* true if p holds the pattern; reports the first difference */
bool check_pattern(const void *p, size_t n, uint32_t seed);
/* true if all n bytes at p are v */
bool check_bytes(const void *p, size_t n, uint8_t v);

/* malloc that fails the test when out of memory */
void *xmalloc(size_t n);

/* device memory read back through a d2h copy into a fresh buffer */
uint8_t *read_back(struct suite_ctx *ctx, const void *dptr, size_t n);

/* free device memory, checking that it succeeds */
void dfree(struct suite_ctx *ctx, void *p, size_t n);
/* allocate device memory, requiring success */
void *dalloc(struct suite_ctx *ctx, size_t n);

/* the device's free memory now */
size_t free_memory(struct suite_ctx *ctx);

/* live blocks of the device's default pool */
size_t pool_blocks(struct suite_ctx *ctx);
/* a new pool of the device, requiring success */
accel_pool_t new_pool(struct suite_ctx *ctx);
/* @p's statistics, requiring success */
struct accel_pool_stats stats_of(accel_pool_t p);
/* a block of @n bytes from @p for @s, requiring success */
void *palloc(accel_pool_t p, accel_stream_t s, size_t n);
/* give the default pool's idle chunks back to the device */
void pool_trim(struct suite_ctx *ctx);
/* skip a test of caching when ACCEL_POOL=off sends everything to the device */
void needs_caching(struct suite_ctx *ctx);
/* whether the device is a cpu device, whose memory is host memory */
bool is_cpu(struct suite_ctx *ctx);
/* whether the second device is of another backend than the first */
bool peer_on_another_backend(struct suite_ctx *ctx);

/*
 * Work made observably pending: a chain of copies of BUSY_HALF bytes to
 * and fro in a buffer of 2 * BUSY_HALF. A try whose chain was over before
 * its checks is inconclusive, and runs again with a chain twice as long.
 * Every test that keeps a stream busy queues its work with these.
 */
#define BUSY_HALF (16u << 20)	/* each copy of a chain */
#define BUSY_START 32		/* copies in the first try */
#define BUSY_MAX 4096
/* queue @copies copies of BUSY_HALF bytes on stream @s of @dev, in @busy */
void busy_chain(accel_device_t dev, accel_stream_t s, uint8_t *busy, int copies);
/* the same with copies of @half bytes, in a buffer of 2 * @half */
void busy_chain_of(accel_device_t dev, accel_stream_t s, uint8_t *busy, int copies,
		   size_t half);
/* whether @s still has work */
bool stream_busy(accel_device_t dev, accel_stream_t s);
/* a try found the work over too soon: a longer chain, or skip; true */
bool try_longer(int *copies);

/* whether the device under test is a cuda device */
bool on_cuda(struct suite_ctx *ctx);
/* its CUDA ordinal; skips the test on other backends */
int cuda_ordinal(struct suite_ctx *ctx);
/*
 * The start of a NEEDS_NOTHING test of the cuda backend that needs slow
 * work: every queued operation of fakecuda's model takes @delay_us
 * (FAKECUDA_DELAY_US, which a GPU ignores: there the test checks what it
 * can, and says so when inconclusive), then the devices open as for
 * NEEDS_DEVICE; skips on the other backends.
 */
void open_slow(struct suite_ctx *ctx, unsigned int delay_us);
/*
 * A CUstream of the device, as another CUDA library would have one: a new
 * libaccel stream's (*owner, which the test destroys)
 */
void *native_stream(struct suite_ctx *ctx, accel_stream_t *owner);

/* libaccel-torch.so's functions, as PyTorch's CUDAPluggableAllocator calls them */
struct torch_alloc {
	void *(*alloc)(ssize_t size, int device, void *stream);
	void (*free)(void *ptr, ssize_t size, int device, void *stream);
	size_t (*stat)(int device, const char *name);
	int (*trim)(int device);
};
/* build/interop/libaccel-torch.so, beside the suite; skips if it is not built */
void torch_alloc_load(struct torch_alloc *t);

/* seconds on the monotonic clock */
double now_s(void);

/*
 * Whether free memory @now is back at @before. Exactly, unless
 * ACCEL_SUITE_DRIVER_SLACK gives bytes that the device's own driver may
 * keep or give back meanwhile: CUDA's driver was seen keeping 2 and 4 MiB
 * after tests that made streams from several threads, with every chunk
 * of libaccel's given back (scripts/gpu-check.sh sets it; fakecuda and
 * the other backends are checked exactly).
 */
bool free_memory_is(size_t now, size_t before);

/* The free memory must be back at @before; says by how much it is not. */
#define CHECK_FREE_IS(ctx, before)					\
	do {								\
		size_t now_ = free_memory(ctx);				\
		if (!free_memory_is(now_, (before))) {			\
			printf("#   free memory %zu, baseline %zu\n", now_, \
			       (size_t)(before));			\
			suite_fail(__FILE__, __LINE__, "free memory back at its baseline"); \
		}							\
	} while (0)

#endif /* ACCEL_SUITE_H */
