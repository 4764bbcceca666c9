/* SPDX-License-Identifier: MIT */
/*
 * The reference model, written for clarity: every allocation is a plain
 * host byte array with a "defined" mask; async work is applied eagerly, in
 * program order, which is a valid order whenever the program orders its
 * conflicting accesses. Where it does not (two streams touching the same
 * storage without an event between them, the host touching memory a
 * stream may still use), the bytes involved become undefined and are not
 * compared. Ordering is tracked with vector clocks: each stream counts its
 * ops, knows up to which op of every other stream it is ordered after
 * (through waits), an event captures a stream's clock at its record (a
 * wait binds to the record current when the wait is queued), and the host
 * knows up to which op each stream has completed (synchronizations).
 * Pools are invisible: a pool block is an allocation like any other.
 */
#ifndef LIB_FUZZ_MODEL_H
#define LIB_FUZZ_MODEL_H

#include "fuzz.h"

#define MAX_SID 64		/* streams a program creates */
#define MAX_STORE 1024

struct store {
	int live;		/* not freed */
	int kind;		/* enum raw_kind, or -1: pageable host buffer */
	int dev;
	size_t size;
	uint8_t *bytes, *def;	/* contents; which bytes are known */
	uintptr_t addr;		/* the backend's pointer (for reuse checks) */
	int handles;		/* memory handles on it */
	int mapped;		/* times mapped */
	int wraps;		/* wrap handles on it (raw stores) */
	int owned_by_handles;	/* freed with its last handle */
	int pool;		/* K_POOL: the pool slot */
};

struct mstream {
	int live;
	int dev;
	int sid;		/* index into the clocks */
	int synced;		/* no work since a synchronization */
};

struct mevent {
	int live;
	int dev;
	int recorded;
	int vc[MAX_SID];	/* the clock captured at the last record */
};

struct mmem {
	int state;		/* 0 empty, 1 live, 2 released */
	int store;
	size_t off;		/* bytes into the store */
	size_t entries, dsize;
	unsigned flags;
	void *mapptr;
	int group;		/* the library's storage object */
};

/*
 * An array handle: a layout (shape, byte strides, dtype) over a store from
 * byte @off. Views (reshape, ravel, interface views, arrays over memory
 * handles and memory handles over arrays) share the store and the storage
 * object (@group) of what they were made from, as slices do.
 */
#define A_DIMS 3		/* the most dimensions the fuzzer makes */
struct marr {
	int state;		/* 0 empty, 1 live, 2 released */
	int kind;		/* enum accel_array_kind */
	int dev;		/* the device slot (0 or 1) */
	int store;
	size_t off;
	int ndim;
	size_t shape[A_DIMS];
	ptrdiff_t strides[A_DIMS];
	int dt;			/* index into exec.c's dtypes */
	int readonly;
	int group;
	int ss, sid;		/* the stream it was made for, or -1 */
};

struct pending {
	int store, sid, seq, write;
	int dst, dst_off, dst_len;	/* what it wrote, to undefine */
};

struct model {
	int ndev;
	struct store st[MAX_STORE];
	int nst;
	int raw[N_RAW];		/* store index or -1 */
	int raw_state[N_RAW];	/* 0 empty, 1 live, 2 freed */
	struct mstream s[N_STREAM];
	struct mevent e[N_EVENT];
	int pool_state[N_POOL];	/* 0 none, 1 live, 2 destroyed */
	int pool_dev[N_POOL];
	struct mmem m[N_MEM];
	int hb[N_HB];		/* stores of the host buffers */
	struct marr a[N_ARR];
	int gfreed[MAX_STORE];	/* storage objects freed by accel_memory_free */
	int ngroup;
	int nsid;
	int sid_dev[MAX_SID];
	int n[MAX_SID];		/* ops queued per stream */
	int vc[MAX_SID][MAX_SID];	/* per stream: ordered after */
	int host[MAX_SID];	/* completed, as the host knows */
	struct pending *pend;
	int npend, cap;
	/*
	 * What the current op writes where it conflicts: undefined again
	 * after the op's own write (model_write, model_copy), which would
	 * otherwise make the bytes look known.
	 */
	struct { int st; size_t off, len; } late[64];
	int nlate;
};

void model_init(struct model *m, int ndev);
void model_fini(struct model *m);
int model_new_store(struct model *m, int kind, int dev, size_t size);
void model_free_store(struct model *m, int st);
/* the host waits for every stream of @dev (-1: all devices) */
void model_sync_device(struct model *m, int dev);
void model_sync_stream(struct model *m, int sid);
void model_sync_clock(struct model *m, const int *vc);
int model_stream_done(const struct model *m, int sid);
int model_event_done(const struct model *m, const struct mevent *e);
/*
 * An access to @st by stream @sid (-1: the host, after the syncs it implies)
 * that writes or only reads; on a conflict with unordered pending work,
 * what either wrote becomes undefined. Returns 1 on a conflict.
 */
int model_access(struct model *m, int st, int sid, int write,
		 int dst, size_t dst_off, size_t dst_len);
/* a new op begins: forget the previous op's conflicts */
void model_op_begin(struct model *m);
/* queue one op on stream @sid (after its model_access calls) */
void model_queue(struct model *m, int sid);
void model_write(struct model *m, int st, size_t off, const uint8_t *src,
		 size_t len);
void model_copy(struct model *m, int dst, size_t doff, int src, size_t soff,
		size_t len);
void model_undefine(struct model *m, int st, size_t off, size_t len);
/* the first byte of @len that differs from the model, or -1 */
long model_compare(const struct model *m, int st, size_t off,
		   const uint8_t *got, size_t len);

#endif /* LIB_FUZZ_MODEL_H */
