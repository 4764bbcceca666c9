/* SPDX-License-Identifier: MIT */
/*
 * lib_fuzz: a differential conformance fuzzer for libaccel.
 *
 * A program is a list of operations generated from a seed (gen.c). Each
 * operation is run against a reference model (model.c: plain host bytes,
 * streams as vector clocks, events as captured points, every handle's
 * validity) and against the backend that ACCEL_VISIBLE_DEVICES selects
 * (exec.c), in lockstep; every observable is compared: status, error code,
 * bytes read back. main.c runs programs in child processes, reports the
 * first disagreement with a trace, and minimizes it into a suite TEST.
 */
#ifndef LIB_FUZZ_H
#define LIB_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <accel/accel.h>
#include <accel/memory.h>

/* the suite's pattern: the C that --minimize prints fills buffers with it */
#include "../pattern.h"

/* Slots: operations name objects by slot, so that a program stays valid
 * (and deterministic) when the minimizer masks operations out. */
#define N_RAW	8	/* raw allocations */
#define N_POOL	2	/* created pools */
#define N_STREAM 3
#define N_EVENT	3
#define N_MEM	6	/* memory handles */
#define N_HB	2	/* pageable host buffers */
#define N_ARR	6	/* arrays (the array family) */
#define HB_SIZE	(4u << 20)
#define MAX_LEN	(4u << 20)

/* Op families, for --only and --exclude. */
enum family {
	F_RAW = 1 << 0,		/* raw allocations, frees, sync copies, sets */
	F_ASYNC = 1 << 1,	/* async copies */
	F_SYNC = 1 << 2,	/* streams, events, queries, waits */
	F_POOL = 1 << 3,	/* created pools */
	F_MEM = 1 << 4,		/* memory handles */
	F_MAP = 1 << 5,		/* host mapping */
	F_MISUSE = 1 << 6,	/* deliberate misuse */
	F_P2P = 1 << 7,		/* two devices */
	F_ALL = (1 << 8) - 1,	/* "all": what every seed before arrays made */
	/*
	 * Arrays: not in "all", so that a seed makes the same program it
	 * always did; --only all,array mixes them in (make check does).
	 */
	F_ARRAY = 1 << 8,
};

enum op_kind {
	OP_ALLOC, OP_FREE, OP_H2D, OP_D2H, OP_D2D, OP_SET, OP_P2P,
	OP_HOST_WRITE, OP_HOST_CHECK,
	OP_A_H2D, OP_A_D2H, OP_A_D2D, OP_A_P2P,
	OP_STREAM_CREATE, OP_STREAM_DESTROY, OP_STREAM_SYNC, OP_STREAM_QUERY,
	OP_EVENT_CREATE, OP_EVENT_DESTROY, OP_EVENT_RECORD, OP_EVENT_SYNC,
	OP_EVENT_QUERY, OP_WAIT, OP_DEVICE_SYNC,
	OP_POOL_CREATE, OP_POOL_DESTROY,
	OP_MEM_CREATE, OP_MEM_WRAP, OP_MEM_SLICE, OP_MEM_CAST, OP_MEM_CLONE,
	OP_MEM_FROM, OP_MEM_TO, OP_MEM_COPY, OP_MEM_RELEASE, OP_MEM_FREE,
	OP_MEM_MAP, OP_MEM_UNMAP, OP_MEM_TOUCH, OP_MEM_READ, OP_MEM_WRITE,
	OP_MEM_VALID, OP_WRONG_KIND,
	/* the array family (F_ARRAY): after every older kind, so that the
	 * weights of a run without arrays, and its programs, stay as they were */
	OP_ARR_NEW, OP_ARR_WRITE, OP_ARR_CHECK, OP_ARR_TO_DEV, OP_ARR_TO_HOST,
	OP_ARR_TO_DEVICE, OP_ARR_RESHAPE, OP_ARR_RAVEL, OP_ARR_IFACE,
	OP_ARR_AS_MEM, OP_MEM_AS_ARR, OP_ARR_RELEASE, OP_ARR_INFO,
	OP_COUNT
};

/* Raw allocation kinds. */
enum raw_kind { K_DEV, K_HOST, K_UNI, K_REG, K_POOLDEF, K_POOL, K_COUNT };

/* Flags of an op. */
#define FL_FULL	  0x01	/* the whole object, not a random range */
#define FL_OOR	  0x02	/* misuse: a range past the end */
#define FL_STREAM 0x04	/* the async form (handle ops), or a stream (pools) */
#define FL_BAD	  0x08	/* misuse of the op's own kind (see exec.c) */
#define FL_REPEAT 0x10	/* async: queued several times, to keep a stream busy */

struct op {
	uint8_t kind;
	uint8_t flags;
	uint8_t dev;		/* 0 or 1 */
	uint8_t a, b, c;	/* slots, kinds, dtypes: per kind */
	uint32_t x, y, z;	/* sizes, offsets, counts: per kind */
	uint32_t pat;		/* data pattern */
};

struct program {
	struct op *ops;
	size_t n;
};

/* gen.c */
void gen_program(uint64_t seed, size_t nops, unsigned families,
		 struct program *p);
const char *op_name(int kind);
unsigned op_family(const struct op *o);
int family_parse(const char *list, unsigned *mask);

/* exec.c: run the program's unmasked ops against model and backend */
struct result {
	int failed;		/* a disagreement */
	size_t op;		/* at this op */
	int what;		/* 0 status/code, 1 data */
	char msg[512];
};

/*
 * Known disagreement classes (--known), skipped by the model so that a
 * run can look past a bug of the library that is known, to find others.
 */
enum known {
	KN_CHUNK = 1 << 0,	/* pool-block ranges checked against the chunk */
	KN_STALE = 1 << 2,	/* stale handles (address reuse) accepted */
	KN_KIND = 1 << 3,	/* handles of another kind accepted */
	KN_CAST = 1 << 4,	/* misaligned casts accepted */
	KN_EVENT = 1 << 5,	/* waits bound to the latest record */
	KN_MAPREL = 1 << 6,	/* release frees mapped memory */
	KN_SYNCWAIT = 1 << 7,	/* sync calls that do not wait for queued work */
	KN_RELEASE = 1 << 8,	/* release under another device's copy */
	KN_P2PWAIT = 1 << 10,	/* a sync p2p with one device on both sides
				 * does not wait for the queued work */
	KN_DEFERFREE = 1 << 11,	/* a freed pool block whose free is deferred
				 * behind queued work is still accepted
				 * (ACCEL_POOL=off) */
	KN_ROHOST = 1 << 12,	/* accel_host_array(NULL, ..., readonly 1)
				 * makes a writable array */
	KN_EMPTYMAP = 1 << 13,	/* an empty mapped array says it is a
				 * device array */
};
#define KNOWN(k) (g_known & (k))
extern unsigned g_known;
int known_parse(const char *list, unsigned *mask);

extern FILE *g_emit;		/* when set, the run is printed as C */
extern int g_verbose;
extern volatile size_t *g_progress;	/* the op being run, for crashes */
/* --stats: per op kind, library calls checked and those that failed (in
 * memory shared with the children) */
extern unsigned long (*g_stats)[2];

void exec_program(const struct program *p, const uint8_t *mask,
		  int ndev, struct result *r);
void op_describe(const struct op *o, char *buf, size_t len);

#endif /* LIB_FUZZ_H */
