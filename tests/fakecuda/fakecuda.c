// SPDX-License-Identifier: MIT
/*
 * fakecuda: a model of the CUDA driver API, as a libcuda.so.1 that
 * libaccel's cuda backend loads where there is no GPU (make check puts it
 * first in LD_LIBRARY_PATH). It is a test double, not ground truth: it
 * models what CUDA's driver API reference and its "API synchronization
 * behavior" and "Stream synchronization behavior" pages say, as strictly as
 * they allow, so that the library's mistakes show here and not only on a
 * GPU. scripts/gpu-check.sh on a real GPU remains the authority.
 *
 * What it models:
 *  - FAKECUDA_DEVICES devices (2), FAKECUDA_MEMORY bytes each (256M; K, M
 *    and G suffixes), cuMemGetInfo's free and total exact, and
 *    CUDA_ERROR_OUT_OF_MEMORY past them.
 *  - Device memory the host cannot touch: each device's addresses are a
 *    PROT_NONE mapping of a memfd, which the model maps a second time
 *    read-write for its own copies and sets. A host access by the library
 *    to a device pointer faults. Devices' ranges are disjoint and no host
 *    memory can be there (unified addressing): cuMemcpy infers the
 *    direction from the addresses. Managed memory is a read-write mapping
 *    of its own, counted against the device; pinned memory is what
 *    cuMemHostAlloc returned or cuMemHostRegister pinned.
 *  - Bounds: a copy or set that touches device memory outside one live
 *    allocation fails with CUDA_ERROR_INVALID_VALUE, where a GPU would
 *    fault or corrupt memory. Freed device memory is poisoned.
 *  - Streams: a worker thread each, running its operations in order,
 *    really asynchronously, after FAKECUDA_DELAY_US microseconds (0) each.
 *    The legacy default stream waits for the prior work of the context's
 *    blocking streams, and they for its; CU_STREAM_NON_BLOCKING streams do
 *    neither. CU_STREAM_PER_THREAD is a blocking stream per thread. The
 *    synchronous calls return when the documented rules say, no sooner:
 *    a device-to-device copy or a device memset may still be running, a
 *    pageable source is staged before the call returns. The asynchronous
 *    ones return at once except from host to host.
 *  - Events: a record marks the stream's work so far; a wait binds to the
 *    record of the moment; an event never recorded is complete.
 *  - Contexts: primary contexts, cuCtxCreate's, a stack per thread, and
 *    CUDA_ERROR_INVALID_CONTEXT where one is needed and none is current.
 *  - Handles: unknown or destroyed streams, events and contexts give the
 *    errors the reference lists. FAKECUDA_TRACE=1 prints the calls that fail.
 *  - The stream-ordered allocator, on each device's default memory pool:
 *    cuMemAllocAsync's allocation is an operation on the stream (work
 *    queued after it there may use the memory); cuMemFreeAsync's free is
 *    one too, and work that names the memory after the call is refused as
 *    out of bounds, a second free too; the stream reaching the free poisons
 *    the memory and gives it back to the pool. The pool's reserved bytes
 *    are the device's (cuMemGetInfo), reused before it grows, released at
 *    a stream, event or context synchronize above the release threshold
 *    (0 by default) and at cuMemPoolTrimTo; the reserved and used
 *    attributes and their high watermarks are exact.
 *
 * What it does not: kernels, timing (events accept the flags and record
 * no time), arrays and 2D/3D copies, IPC, graphs, the virtual memory
 * management API (but its granularity), stream priorities and callbacks,
 * managed memory's migration and oversubscription, peer access limits
 * (every pair of devices can), primary context reset on release, errors
 * of device code (sticky errors), and a fork after cuInit (the child's
 * calls fail with CUDA_ERROR_NOT_INITIALIZED, as CUDA's do). Of the
 * stream-ordered allocator: pools other than the default ones
 * (cuMemPoolCreate, cuDeviceSetMemPool, cuMemAllocFromPoolAsync), access
 * from peers, the reuse policies (the attributes are kept, not acted on),
 * the pool's fragmentation (it counts bytes), and use of an allocation by
 * another stream before its allocation completes (not caught).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FC_MAX_DEVICES 16
#define FC_ALIGN 256			/* cuMemAlloc's alignment */
#define FC_GRANULE (2u << 20)		/* a GPU's page */
#define FC_POISON 0xdb			/* what freed device memory reads */
#define FC_STACK_DEPTH 64
#define FC_PER_THREAD_MAX 16
#define FC_STREAM_LEGACY_H ((CUstream)0x1)
#define FC_STREAM_PER_THREAD_H ((CUstream)0x2)

/* ------------------------------------------------------------------ */
/* State */

struct fc_stream;

struct fc_ctx {
	struct fc_ctx *next;		/* fc.contexts */
	int dev;
	bool primary;
	bool destroyed;
	struct fc_stream *legacy;	/* the legacy default stream, at first use */
	uint32_t peers;			/* bit d: access to device d enabled */
};

/* A point in a stream's work: done when the stream completed @seq. */
struct fc_dep {
	struct fc_stream *s;
	uint64_t seq;
};

/* FC_OP_FREE: cuMemFreeAsync's, the memory back to its pool when reached */
enum fc_op_kind { FC_OP_COPY, FC_OP_SET, FC_OP_MARK, FC_OP_FREE };

struct fc_op {
	struct fc_op *next;
	enum fc_op_kind kind;
	uint64_t seq;
	void *dst;			/* model addresses: device memory's shadow */
	const void *src;
	size_t size;
	uint8_t value;
	uintptr_t freed;		/* FC_OP_FREE: the allocation's address */
	void *staging;			/* a pageable source, copied at the call */
	struct fc_dep *deps;		/* what must complete first */
	int ndeps;
};

struct fc_stream {
	struct fc_stream *next;		/* fc.streams */
	struct fc_ctx *ctx;
	unsigned int flags;
	bool legacy;
	bool destroyed;			/* no handle any more; drains, then exits */
	bool exited;			/* its worker returned */
	int refs;			/* handle, events, deps that name it */
	uint64_t submitted, completed;
	struct fc_op *head, **tail;
	pthread_cond_t work;
	pthread_t thread;
};

struct fc_event {
	struct fc_event *next;		/* fc.events */
	struct fc_ctx *ctx;
	unsigned int flags;
	struct fc_dep rec;		/* the last record; .s NULL if none */
};

enum fc_kind { FC_DEVICE, FC_MANAGED, FC_HOST_ALLOC, FC_HOST_REGISTERED };

struct fc_alloc {
	uintptr_t base;
	size_t size;			/* as asked: the bounds checked */
	size_t charged;			/* what the device's memory lost */
	enum fc_kind kind;
	int dev;
	struct fc_ctx *ctx;
	unsigned long long id;
	bool pooled;			/* cuMemAllocAsync's: its pool's bytes */
	bool freeing;			/* its free is queued: no use from now */
};

/*
 * A device's default memory pool (cuMemAllocAsync's). The model counts
 * bytes, not ranges: @reserved is what the pool holds of the device's
 * memory (charged to it, as cuMemGetInfo shows on a GPU), @used what its
 * live allocations take of that, queued frees included until the stream
 * reaches them. What is reserved and not used is reused before the pool
 * grows; it goes back to the device at a synchronize above the release
 * threshold, and at cuMemPoolTrimTo.
 */
struct fc_pool {
	cuuint64_t threshold;		/* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
	int reuse[3];			/* the REUSE_* attributes: kept, not acted on */
	size_t reserved, reserved_high;
	size_t used, used_high;
};

struct fc_device {
	char *base;			/* its addresses: PROT_NONE to the host */
	char *shadow;			/* the same memory, for the model */
	size_t va_size;
	size_t used;
	int memfd;
	struct fc_ctx *primary;
	unsigned int primary_refs;
	struct fc_pool pool;		/* its default memory pool */
};

static struct {
	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t done;		/* some operation completed */
	bool initialized;
	bool forked;			/* a child of a process that had cuInit */
	bool exiting;
	int ndev;
	size_t memory;
	unsigned int delay_us;
	struct fc_device dev[FC_MAX_DEVICES];
	struct fc_ctx *contexts;
	struct fc_stream *streams;
	struct fc_event *events;
	struct fc_alloc *allocs;	/* sorted by base, disjoint */
	size_t nallocs, cap;
	unsigned long long next_id;
	pthread_key_t thread_key;
} fc = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
};

/* The calling thread's context stack and per-thread default streams. */
static _Thread_local struct {
	struct fc_ctx *stack[FC_STACK_DEPTH];
	int depth;
	struct fc_stream *per_thread[FC_PER_THREAD_MAX];
} tls;

static void lock(void)
{
	pthread_mutex_lock(&fc.lock);
}

/*
 * The end of a call under the lock. FAKECUDA_TRACE=1 prints the calls that
 * fail, to tell the model's refusals from the library's own errors.
 */
static CUresult unlock_ret_in(const char *fn, CUresult r)
{
	static int trace = -1;

	pthread_mutex_unlock(&fc.lock);
	if (trace < 0)
		trace = getenv("FAKECUDA_TRACE") != NULL;
	if (r && r != CUDA_ERROR_NOT_READY && trace)
		fprintf(stderr, "fakecuda: %s: CUDA error %d\n", fn, (int)r);
	return r;
}

#define unlock_ret(r) unlock_ret_in(__func__, (r))

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

/* ------------------------------------------------------------------ */
/* Configuration and devices */

/* "256M" -> bytes; @def where unset or unreadable. */
static size_t env_size(const char *name, size_t def)
{
	const char *v = getenv(name);
	unsigned long long n;
	char *end;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtoull(v, &end, 0);
	if (errno || end == v)
		return def;
	switch (*end) {
	case 'G': case 'g': n <<= 10;	/* fall through */
	case 'M': case 'm': n <<= 10;	/* fall through */
	case 'K': case 'k': n <<= 10; end++; break;
	}
	return *end ? def : (size_t)n;
}

/*
 * A device's address range, twice the memory so that freed holes never
 * make an allocation that fits fail: PROT_NONE where the library sees it,
 * read-write in the model's second mapping of the same memfd.
 */
static bool device_map(struct fc_device *d, size_t memory)
{
	d->va_size = round_up(memory, FC_GRANULE) * 2;
	d->memfd = memfd_create("fakecuda-vram", MFD_CLOEXEC);
	if (d->memfd < 0 || ftruncate(d->memfd, (off_t)d->va_size))
		return false;
	d->base = mmap(NULL, d->va_size, PROT_NONE, MAP_SHARED | MAP_NORESERVE,
		       d->memfd, 0);
	d->shadow = mmap(NULL, d->va_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_NORESERVE, d->memfd, 0);
	return d->base != MAP_FAILED && d->shadow != MAP_FAILED;
}

static int device_at(uintptr_t p)
{
	for (int i = 0; i < fc.ndev; i++)
		if (p >= (uintptr_t)fc.dev[i].base &&
		    p - (uintptr_t)fc.dev[i].base < fc.dev[i].va_size)
			return i;
	return -1;
}

/* ------------------------------------------------------------------ */
/* The allocation table: device, managed, pinned and registered ranges */

/* Index of the first allocation whose base is above @p. */
static size_t alloc_upper(uintptr_t p)
{
	size_t lo = 0, hi = fc.nallocs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (fc.allocs[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct fc_alloc *alloc_find(uintptr_t p)
{
	size_t i = alloc_upper(p);
	struct fc_alloc *a;

	if (!i)
		return NULL;
	a = &fc.allocs[i - 1];
	return p - a->base < round_up(a->size, FC_ALIGN) ? a : NULL;
}

static bool alloc_insert(const struct fc_alloc *a)
{
	size_t i = alloc_upper(a->base);

	if (fc.nallocs == fc.cap) {
		size_t cap = fc.cap ? fc.cap * 2 : 64;
		struct fc_alloc *n = realloc(fc.allocs, cap * sizeof(*n));

		if (!n)
			return false;
		fc.allocs = n;
		fc.cap = cap;
	}
	memmove(&fc.allocs[i + 1], &fc.allocs[i],
		(fc.nallocs - i) * sizeof(*fc.allocs));
	fc.allocs[i] = *a;
	fc.allocs[i].id = ++fc.next_id;
	fc.nallocs++;
	return true;
}

static void alloc_remove(struct fc_alloc *a)
{
	size_t i = (size_t)(a - fc.allocs);

	memmove(a, a + 1, (fc.nallocs - i - 1) * sizeof(*a));
	fc.nallocs--;
}

/* Whether [p, p + n) meets an allocation of any kind. */
static bool alloc_overlaps(uintptr_t p, size_t n)
{
	size_t i = alloc_upper(p + n - 1);

	return i && fc.allocs[i - 1].base + fc.allocs[i - 1].size > p;
}

/* First fit in the device's range, at FC_ALIGN. */
static uintptr_t device_place(int dev, size_t charged)
{
	uintptr_t at = (uintptr_t)fc.dev[dev].base;
	uintptr_t end = at + fc.dev[dev].va_size;

	for (size_t i = alloc_upper(at - 1); i < fc.nallocs &&
	     fc.allocs[i].base < end; i++) {
		if (fc.allocs[i].base - at >= charged)
			break;
		at = fc.allocs[i].base + fc.allocs[i].charged;
	}
	return end - at >= charged ? at : 0;
}

/* ------------------------------------------------------------------ */
/* Contexts */

static bool ctx_live(struct fc_ctx *c)
{
	for (struct fc_ctx *i = fc.contexts; i; i = i->next)
		if (i == c)
			return !c->destroyed;
	return false;
}

/* The calling thread's current context, or why there is none. */
static CUresult current(struct fc_ctx **out)
{
	if (fc.forked || !fc.initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!tls.depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = tls.stack[tls.depth - 1];
	return ctx_live(*out) ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

/*
 * The start of a call that needs a context: the lock taken and the calling
 * thread's context in *c, or the error, traced for @fn, with the lock let go
 */
static CUresult enter_in(const char *fn, struct fc_ctx **c)
{
	CUresult r;

	lock();
	r = current(c);
	return r ? unlock_ret_in(fn, r) : CUDA_SUCCESS;
}

#define enter(c) enter_in(__func__, c)

static CUresult ready(void)
{
	return fc.forked || !fc.initialized ? CUDA_ERROR_NOT_INITIALIZED :
		CUDA_SUCCESS;
}

static struct fc_ctx *ctx_new(int dev, bool primary)
{
	struct fc_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->dev = dev;
	c->primary = primary;
	c->next = fc.contexts;
	fc.contexts = c;
	return c;
}

/* ------------------------------------------------------------------ */
/* Memory pools: the accounting of cuMemAllocAsync's memory */

static int pool_device(const struct fc_pool *p)
{
	return (int)((const struct fc_device *)((const char *)p -
		offsetof(struct fc_device, pool)) - fc.dev);
}

/* A handle as the reference reads it: a device's default pool, or none. */
static struct fc_pool *pool_of(CUmemoryPool h)
{
	for (int i = 0; i < fc.ndev; i++)
		if (h == (CUmemoryPool)&fc.dev[i].pool)
			return &fc.dev[i].pool;
	return NULL;
}

/*
 * Room for @charged more bytes in use: what the pool holds unused first,
 * then the device's free memory.
 */
static CUresult pool_take(struct fc_pool *p, size_t charged)
{
	struct fc_device *d = &fc.dev[pool_device(p)];
	size_t grow = 0;

	if (p->used + charged < p->used)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (p->used + charged > p->reserved)
		grow = p->used + charged - p->reserved;
	if (grow > fc.memory - d->used)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->used += grow;
	p->reserved += grow;
	p->used += charged;
	if (p->reserved > p->reserved_high)
		p->reserved_high = p->reserved;
	if (p->used > p->used_high)
		p->used_high = p->used;
	return CUDA_SUCCESS;
}

/* Unused memory back to the device, down to @keep bytes reserved at least. */
static void pool_trim(struct fc_pool *p, size_t keep)
{
	size_t target = keep > p->used ? keep : p->used;

	if (p->reserved <= target)
		return;
	fc.dev[pool_device(p)].used -= p->reserved - target;
	p->reserved = target;
}

/* "the allocator will try to release memory back to the OS on the next
 * call to stream, event or context synchronize" above the threshold */
static void pool_sync_release(int dev)
{
	struct fc_pool *p = &fc.dev[dev].pool;

	if (p->reserved > p->threshold)
		pool_trim(p, (size_t)p->threshold);
}

/*
 * A pool allocation's end (cuMemFree, or a stream reaching cuMemFreeAsync's
 * free): its bytes stay reserved by the pool, and its range is free for
 * the next placement. The memory was poisoned first.
 */
static void pool_put_back(uintptr_t base)
{
	struct fc_alloc *a = alloc_find(base);

	if (!a || a->base != base || !a->pooled)
		abort();		/* the model's own bookkeeping is broken */
	fc.dev[a->dev].pool.used -= a->charged;
	alloc_remove(a);
}

/* ------------------------------------------------------------------ */
/* Streams: a worker thread each, operations in order */

static void stream_get(struct fc_stream *s)
{
	s->refs++;
}

static void stream_put(struct fc_stream *s)
{
	s->refs--;
}

static bool deps_done(const struct fc_op *op)
{
	for (int i = 0; i < op->ndeps; i++)
		if (op->deps[i].s->completed < op->deps[i].seq)
			return false;
	return true;
}

static void op_free(struct fc_op *op)
{
	for (int i = 0; i < op->ndeps; i++)
		stream_put(op->deps[i].s);
	free(op->deps);
	free(op->staging);
	free(op);
}

/* Outside the lock: the operation's effect on memory. */
static void op_run(const struct fc_op *op)
{
	if (fc.delay_us)
		usleep(fc.delay_us);
	switch (op->kind) {
	case FC_OP_COPY:
		memmove(op->dst, op->staging ? op->staging : op->src, op->size);
		break;
	case FC_OP_SET:
		memset(op->dst, op->value, op->size);
		break;
	case FC_OP_FREE:
		/* the stream reached the free: later reads see garbage */
		memset(op->dst, FC_POISON, op->size);
		break;
	case FC_OP_MARK:
		break;
	}
}

static void *stream_worker(void *arg)
{
	struct fc_stream *s = arg;

	lock();
	for (;;) {
		struct fc_op *op;

		while (!s->head && !s->destroyed && !fc.exiting)
			pthread_cond_wait(&s->work, &fc.lock);
		if (!s->head)
			break;
		op = s->head;
		while (!deps_done(op))
			pthread_cond_wait(&fc.done, &fc.lock);
		pthread_mutex_unlock(&fc.lock);
		op_run(op);
		lock();
		if (op->kind == FC_OP_FREE)
			pool_put_back(op->freed);
		s->head = op->next;
		if (!s->head)
			s->tail = &s->head;
		s->completed = op->seq;
		op_free(op);
		pthread_cond_broadcast(&fc.done);
	}
	s->exited = true;
	pthread_cond_broadcast(&fc.done);
	pthread_mutex_unlock(&fc.lock);
	return NULL;
}

/* Join and free streams that are gone and that nothing names. */
static void streams_reap(void)
{
	for (struct fc_stream **p = &fc.streams; *p;) {
		struct fc_stream *s = *p;

		if (!s->exited || s->refs) {
			p = &s->next;
			continue;
		}
		*p = s->next;
		pthread_join(s->thread, NULL);
		pthread_cond_destroy(&s->work);
		free(s);
	}
}

static struct fc_stream *stream_new(struct fc_ctx *c, unsigned int flags,
				    bool legacy)
{
	struct fc_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ctx = c;
	s->flags = flags;
	s->legacy = legacy;
	s->refs = 1;
	s->tail = &s->head;
	pthread_cond_init(&s->work, NULL);
	if (pthread_create(&s->thread, NULL, stream_worker, s)) {
		pthread_cond_destroy(&s->work);
		free(s);
		return NULL;
	}
	s->next = fc.streams;
	fc.streams = s;
	return s;
}

static bool stream_blocking(const struct fc_stream *s)
{
	return !s->legacy && !(s->flags & CU_STREAM_NON_BLOCKING);
}

static bool stream_idle(const struct fc_stream *s)
{
	return s->completed == s->submitted;
}

static struct fc_stream *legacy_of(struct fc_ctx *c)
{
	if (!c->legacy)
		c->legacy = stream_new(c, CU_STREAM_DEFAULT, true);
	return c->legacy;
}

static void thread_exit(void *unused)
{
	(void)unused;
	lock();
	for (int i = 0; i < FC_PER_THREAD_MAX; i++)
		if (tls.per_thread[i]) {
			tls.per_thread[i]->destroyed = true;
			stream_put(tls.per_thread[i]);
			pthread_cond_signal(&tls.per_thread[i]->work);
		}
	pthread_mutex_unlock(&fc.lock);
}

/* The calling thread's per-thread default stream of @c: a blocking stream. */
static struct fc_stream *per_thread_of(struct fc_ctx *c)
{
	int free_slot = -1;

	for (int i = 0; i < FC_PER_THREAD_MAX; i++) {
		struct fc_stream *s = tls.per_thread[i];

		if (s && s->ctx == c)
			return s;
		if (!s && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
		return NULL;
	tls.per_thread[free_slot] = stream_new(c, CU_STREAM_DEFAULT, false);
	pthread_setspecific(fc.thread_key, &tls);
	return tls.per_thread[free_slot];
}

static bool stream_live(const struct fc_stream *h)
{
	for (struct fc_stream *s = fc.streams; s; s = s->next)
		if (s == h)
			return !s->destroyed && !s->ctx->destroyed;
	return false;
}

/* A handle as CUDA reads it: NULL and the two special default streams. */
static CUresult stream_of(CUstream h, struct fc_stream **out)
{
	struct fc_ctx *c;
	CUresult r;

	if (h && h != FC_STREAM_LEGACY_H && h != FC_STREAM_PER_THREAD_H) {
		if (ready())
			return ready();
		*out = (struct fc_stream *)h;
		return stream_live(*out) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
	}
	r = current(&c);
	if (r)
		return r;
	*out = h == FC_STREAM_PER_THREAD_H ? per_thread_of(c) : legacy_of(c);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static bool dep_add(struct fc_op *op, struct fc_stream *s, uint64_t seq)
{
	struct fc_dep *d = realloc(op->deps, (op->ndeps + 1) * sizeof(*d));

	if (!d)
		return false;
	op->deps = d;
	d[op->ndeps++] = (struct fc_dep){ s, seq };
	stream_get(s);
	return true;
}

/*
 * The legacy default stream's rule: its work waits for the prior work of
 * every blocking stream of the context, and theirs for its prior work.
 */
static bool legacy_deps(struct fc_stream *s, struct fc_op *op)
{
	if (s->legacy) {
		for (struct fc_stream *t = fc.streams; t; t = t->next)
			if (t->ctx == s->ctx && stream_blocking(t) &&
			    !stream_idle(t) && !dep_add(op, t, t->submitted))
				return false;
	} else if (stream_blocking(s) && s->ctx->legacy &&
		   !stream_idle(s->ctx->legacy)) {
		return dep_add(op, s->ctx->legacy, s->ctx->legacy->submitted);
	}
	return true;
}

static struct fc_op *op_new(enum fc_op_kind kind)
{
	struct fc_op *op = calloc(1, sizeof(*op));

	if (op)
		op->kind = kind;
	return op;
}

/* Queue @op on @s; it owns the op from here, even on failure. */
static CUresult submit(struct fc_stream *s, struct fc_op *op, uint64_t *seq)
{
	if (!legacy_deps(s, op)) {
		op_free(op);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	op->seq = ++s->submitted;
	if (seq)
		*seq = op->seq;
	/* a marker with nothing before it is complete at once, as on a fast
	 * GPU: a record on an idle stream is not left pending */
	if (op->kind == FC_OP_MARK && !s->head && deps_done(op)) {
		s->completed = op->seq;
		op_free(op);
		pthread_cond_broadcast(&fc.done);
		return CUDA_SUCCESS;
	}
	*s->tail = op;
	s->tail = &op->next;
	pthread_cond_signal(&s->work);
	return CUDA_SUCCESS;
}

static void wait_for(struct fc_stream *s, uint64_t seq)
{
	while (s->completed < seq)
		pthread_cond_wait(&fc.done, &fc.lock);
}

/* A marker on @s, waited for: the stream's work so far (and on the legacy
 * stream, the blocking streams' too). */
static CUresult stream_drain(struct fc_stream *s)
{
	struct fc_op *op = op_new(FC_OP_MARK);
	uint64_t seq;
	CUresult r;

	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = submit(s, op, &seq);
	if (!r)
		wait_for(s, seq);
	return r;
}

/* All work on @dev, in every context: what freeing memory waits for. */
static void device_drain(int dev)
{
	for (struct fc_stream *s = fc.streams; s; s = s->next)
		if (dev < 0 || s->ctx->dev == dev)
			wait_for(s, s->submitted);
}

/* ------------------------------------------------------------------ */
/* Memory as operations see it */

enum fc_where { FC_PAGEABLE, FC_PINNED, FC_ON_DEVICE, FC_IN_MANAGED };

struct fc_span {
	enum fc_where where;
	int dev;
	void *model;			/* where the model reads or writes it */
};

/*
 * What [p, p + n) is. Device memory (and managed) must lie in one live
 * allocation: a GPU would fault or corrupt past it; the model refuses.
 */
static CUresult span_of(uintptr_t p, size_t n, struct fc_span *s)
{
	int dev = device_at(p);
	struct fc_alloc *a;

	if (p + n < p)
		return CUDA_ERROR_INVALID_VALUE;
	a = alloc_find(p);
	s->dev = a ? a->dev : dev;
	s->model = (void *)p;
	if (dev >= 0) {
		/* freed in stream order: no work queued from then may use it */
		if (!a || a->kind != FC_DEVICE || a->freeing ||
		    p + n > a->base + a->size)
			return CUDA_ERROR_INVALID_VALUE;
		s->where = FC_ON_DEVICE;
		s->model = fc.dev[dev].shadow + (p - (uintptr_t)fc.dev[dev].base);
		return CUDA_SUCCESS;
	}
	if (a && a->kind == FC_MANAGED) {
		if (p + n > a->base + a->size)
			return CUDA_ERROR_INVALID_VALUE;
		s->where = FC_IN_MANAGED;
		return CUDA_SUCCESS;
	}
	/* pinned only if all of it is; the driver stages the rest */
	s->where = a && p + n <= a->base + a->size ? FC_PINNED : FC_PAGEABLE;
	if (s->where == FC_PAGEABLE)
		s->dev = -1;
	return CUDA_SUCCESS;
}

static bool host_side(const struct fc_span *s)
{
	return s->where == FC_PAGEABLE || s->where == FC_PINNED;
}

/* What a device can reach: all but pageable host memory. */
static bool device_side(const struct fc_span *s)
{
	return s->where != FC_PAGEABLE;
}

/* Which way a copy goes, for the documented synchronization rules. */
enum fc_dir { FC_ANY, FC_HTOD, FC_DTOH, FC_DTOD };

static bool dir_ok(enum fc_dir dir, const struct fc_span *d,
		   const struct fc_span *s)
{
	switch (dir) {
	case FC_HTOD:
		return device_side(d) && s->where != FC_ON_DEVICE;
	case FC_DTOH:
		return d->where != FC_ON_DEVICE && device_side(s);
	case FC_DTOD:
		return device_side(d) && device_side(s);
	default:
		return true;
	}
}

/*
 * Whether the call returns only once the copy is done ("API
 * synchronization behavior"). Synchronous calls: from pinned host memory
 * to the device, from the device to the host, host to host, and anything
 * with managed memory; not device to device, nor a pageable source (staged,
 * then returns). Asynchronous calls: host to host only.
 */
static bool copy_waits(bool sync, const struct fc_span *d,
		       const struct fc_span *s)
{
	if (host_side(d) && host_side(s))
		return true;
	if (!sync)
		return false;
	if (d->where == FC_IN_MANAGED || s->where == FC_IN_MANAGED)
		return true;
	if (s->where == FC_PAGEABLE)
		return false;
	return host_side(d) || s->where == FC_PINNED;
}

/*
 * One copy on @h (a synchronous call on the legacy stream where @sync).
 * Caller holds the lock.
 */
static CUresult copy(uintptr_t dst, uintptr_t src, size_t n, CUstream h,
		     bool sync, enum fc_dir dir)
{
	struct fc_span d, s;
	struct fc_stream *st;
	struct fc_op *op;
	uint64_t seq;
	CUresult r;

	r = stream_of(sync ? NULL : h, &st);
	if (r)
		return r;
	if (!n)
		return CUDA_SUCCESS;
	if (span_of(dst, n, &d) || span_of(src, n, &s) || !dir_ok(dir, &d, &s))
		return CUDA_ERROR_INVALID_VALUE;
	op = op_new(FC_OP_COPY);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->dst = d.model;
	op->src = s.model;
	op->size = n;
	/* pageable memory is copied to staging before the call returns */
	if (s.where == FC_PAGEABLE && !copy_waits(sync, &d, &s)) {
		op->staging = malloc(n);
		if (!op->staging) {
			op_free(op);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(op->staging, s.model, n);
	}
	r = submit(st, op, &seq);
	if (!r && copy_waits(sync, &d, &s))
		wait_for(st, seq);
	return r;
}

/* A device can set its own memory, a peer's where access is enabled, and
 * pinned or managed memory. */
static CUresult set(uintptr_t dst, uint8_t value, size_t n, CUstream h,
		    bool sync)
{
	struct fc_stream *st;
	struct fc_span d;
	struct fc_op *op;
	uint64_t seq;
	CUresult r;

	r = stream_of(sync ? NULL : h, &st);
	if (r)
		return r;
	if (!n)
		return CUDA_SUCCESS;
	if (span_of(dst, n, &d) || !device_side(&d))
		return CUDA_ERROR_INVALID_VALUE;
	if (d.where == FC_ON_DEVICE && d.dev != st->ctx->dev &&
	    !(st->ctx->peers & (1u << d.dev)))
		return CUDA_ERROR_INVALID_VALUE;
	op = op_new(FC_OP_SET);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->dst = d.model;
	op->value = value;
	op->size = n;
	r = submit(st, op, &seq);
	/* synchronous only to pinned or managed memory */
	if (!r && sync && d.where != FC_ON_DEVICE)
		wait_for(st, seq);
	return r;
}

/* ------------------------------------------------------------------ */
/* Initialization, devices and contexts */

static void after_fork(void)
{
	/* the workers are not in the child: nothing may wait for them */
	pthread_mutex_init(&fc.lock, NULL);
	pthread_cond_init(&fc.done, NULL);
	if (fc.initialized)
		fc.forked = true;
	fc.streams = NULL;
	for (struct fc_ctx *c = fc.contexts; c; c = c->next)
		c->legacy = NULL;
	memset(tls.per_thread, 0, sizeof(tls.per_thread));
}

static void prepare_fork(void)
{
	lock();
}

static void parent_fork(void)
{
	pthread_mutex_unlock(&fc.lock);
}

CUresult cuInit(unsigned int flags)
{
	size_t memory;
	int n;

	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	lock();
	if (fc.forked || fc.initialized)
		return unlock_ret(fc.forked ? CUDA_ERROR_NOT_INITIALIZED :
				  CUDA_SUCCESS);
	n = (int)env_size("FAKECUDA_DEVICES", 2);
	memory = env_size("FAKECUDA_MEMORY", 256u << 20);
	if (!n)
		return unlock_ret(CUDA_ERROR_NO_DEVICE);
	if (n > FC_MAX_DEVICES || !memory)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < n; i++) {
		if (!device_map(&fc.dev[i], memory))
			return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
		/* the reuse policies are enabled, the threshold 0 */
		fc.dev[i].pool = (struct fc_pool){ .reuse = { 1, 1, 1 } };
	}
	fc.ndev = n;
	fc.memory = memory;
	fc.delay_us = (unsigned int)env_size("FAKECUDA_DELAY_US", 0);
	pthread_key_create(&fc.thread_key, thread_exit);
	pthread_atfork(prepare_fork, parent_fork, after_fork);
	fc.initialized = true;
	return unlock_ret(CUDA_SUCCESS);
}

CUresult cuDeviceGetCount(int *count)
{
	if (ready())
		return ready();
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = fc.ndev;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (ready())
		return ready();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= fc.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

static bool device_valid(CUdevice d)
{
	return d >= 0 && d < fc.ndev;
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
	if (ready())
		return ready();
	if (!can)
		return CUDA_ERROR_INVALID_VALUE;
	if (!device_valid(dev) || !device_valid(peer))
		return CUDA_ERROR_INVALID_DEVICE;
	*can = dev != peer;		/* a device is not its own peer */
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	if (ready())
		return ready();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!device_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	lock();
	if (!fc.dev[dev].primary)
		fc.dev[dev].primary = ctx_new(dev, true);
	if (!fc.dev[dev].primary)
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	fc.dev[dev].primary_refs++;
	*pctx = (CUcontext)fc.dev[dev].primary;
	return unlock_ret(CUDA_SUCCESS);
}

/* The context stays, resources and all: a reset is not modeled. */
CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	if (ready())
		return ready();
	if (!device_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	lock();
	if (!fc.dev[dev].primary_refs)
		return unlock_ret(CUDA_ERROR_INVALID_CONTEXT);
	fc.dev[dev].primary_refs--;
	return unlock_ret(CUDA_SUCCESS);
}

CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params,
		     unsigned int flags, CUdevice dev)
{
	struct fc_ctx *c;

	(void)flags;
	if (ready())
		return ready();
	if (!pctx || (params && (params->execAffinityParams ||
				 params->cigParams)))
		return CUDA_ERROR_INVALID_VALUE;
	if (!device_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if (tls.depth == FC_STACK_DEPTH)
		return CUDA_ERROR_OUT_OF_MEMORY;
	lock();
	c = ctx_new(dev, false);
	pthread_mutex_unlock(&fc.lock);
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	tls.stack[tls.depth++] = c;	/* and current */
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

/* Its streams go (their work completes); its record stays, destroyed. */
CUresult cuCtxDestroy(CUcontext ctx)
{
	struct fc_ctx *c = (struct fc_ctx *)ctx;

	if (ready())
		return ready();
	lock();
	if (!ctx_live(c) || c->primary)
		return unlock_ret(CUDA_ERROR_INVALID_CONTEXT);
	device_drain(-1);
	c->destroyed = true;
	for (struct fc_stream *s = fc.streams; s; s = s->next)
		if (s->ctx == c && !s->destroyed) {
			s->destroyed = true;
			if (s == c->legacy)
				stream_put(s);
			pthread_cond_signal(&s->work);
		}
	pthread_mutex_unlock(&fc.lock);
	if (tls.depth && tls.stack[tls.depth - 1] == c)
		tls.depth--;
	return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
	bool live;

	if (ready())
		return ready();
	lock();
	live = ctx_live((struct fc_ctx *)ctx);
	pthread_mutex_unlock(&fc.lock);
	if (!live)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (tls.depth == FC_STACK_DEPTH)
		return CUDA_ERROR_OUT_OF_MEMORY;
	tls.stack[tls.depth++] = (struct fc_ctx *)ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
	if (ready())
		return ready();
	if (!tls.depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	tls.depth--;
	if (pctx)
		*pctx = (CUcontext)tls.stack[tls.depth];
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	if (ready())
		return ready();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = tls.depth ? (CUcontext)tls.stack[tls.depth - 1] : NULL;
	return CUDA_SUCCESS;
}

/* Replaces the top of the stack; NULL pops it. */
CUresult cuCtxSetCurrent(CUcontext ctx)
{
	bool live;

	if (ready())
		return ready();
	if (!ctx) {
		if (tls.depth)
			tls.depth--;
		return CUDA_SUCCESS;
	}
	lock();
	live = ctx_live((struct fc_ctx *)ctx);
	pthread_mutex_unlock(&fc.lock);
	if (!live)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!tls.depth)
		tls.depth = 1;
	tls.stack[tls.depth - 1] = (struct fc_ctx *)ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
	struct fc_ctx *c, *p = (struct fc_ctx *)peer;
	CUresult r;

	r = enter(&c);
	if (r)
		return r;
	if (!ctx_live(p))
		return unlock_ret(CUDA_ERROR_INVALID_CONTEXT);
	if (flags)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	if (p->dev == c->dev)
		return unlock_ret(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
	if (c->peers & (1u << p->dev))
		return unlock_ret(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
	c->peers |= 1u << p->dev;
	return unlock_ret(CUDA_SUCCESS);
}

/* The work of the current context's streams so far, the legacy one's too. */
CUresult cuCtxSynchronize(void)
{
	struct fc_ctx *c;
	CUresult r;

	r = enter(&c);
	if (r)
		return r;
	for (struct fc_stream *s = fc.streams; s; s = s->next)
		if (s->ctx == c) {
			stream_get(s);	/* not reaped while the wait lets go */
			wait_for(s, s->submitted);
			stream_put(s);
		}
	pool_sync_release(c->dev);
	return unlock_ret(CUDA_SUCCESS);
}

/* ------------------------------------------------------------------ */
/* Memory */

/* Device memory and managed memory count against the device. */
static CUresult charge(int dev, size_t size, size_t *charged)
{
	*charged = round_up(size, FC_ALIGN);
	if (*charged < size || *charged > fc.memory - fc.dev[dev].used)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t size)
{
	struct fc_alloc a = { .kind = FC_DEVICE };
	struct fc_ctx *c;
	CUresult r;

	r = enter(&c);
	if (r)
		return r;
	if (!dptr || !size)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	r = charge(c->dev, size, &a.charged);
	if (r)
		return unlock_ret(r);
	a.base = device_place(c->dev, a.charged);
	a.size = size;
	a.dev = c->dev;
	a.ctx = c;
	if (!a.base || !alloc_insert(&a))
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	fc.dev[c->dev].used += a.charged;
	*dptr = a.base;
	return unlock_ret(CUDA_SUCCESS);
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
	struct fc_alloc a = { .kind = FC_MANAGED };
	struct fc_ctx *c;
	void *p;
	CUresult r;

	r = enter(&c);
	if (r)
		return r;
	if (!dptr || !size ||
	    (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	r = charge(c->dev, size, &a.charged);
	if (r)
		return unlock_ret(r);
	p = mmap(NULL, a.charged, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	a.base = (uintptr_t)p;
	a.size = size;
	a.dev = c->dev;
	a.ctx = c;
	if (!alloc_insert(&a)) {
		munmap(p, a.charged);
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	}
	fc.dev[c->dev].used += a.charged;
	*dptr = a.base;
	return unlock_ret(CUDA_SUCCESS);
}

static void *shadow_of(const struct fc_alloc *a)
{
	return fc.dev[a->dev].shadow + (a->base - (uintptr_t)fc.dev[a->dev].base);
}

/*
 * Device or managed memory. Implicitly synchronizes (as the reference
 * allows) so that no queued operation touches freed memory; device memory
 * is then poisoned, so that a use after free reads garbage. Memory of
 * cuMemAllocAsync goes back to its pool at once: the reference says this
 * call does not synchronize for it, the caller must have.
 */
CUresult cuMemFree(CUdeviceptr p)
{
	struct fc_alloc *a;
	struct fc_ctx *c;
	CUresult r;

	r = enter(&c);
	if (r)
		return r;
	a = alloc_find(p);
	if (!a || a->base != p || a->freeing ||
	    (a->kind != FC_DEVICE && a->kind != FC_MANAGED))
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	if (a->pooled) {
		memset(shadow_of(a), FC_POISON, a->charged);
		pool_put_back(p);
		return unlock_ret(CUDA_SUCCESS);
	}
	device_drain(-1);
	a = alloc_find(p);		/* others may have moved it meanwhile */
	if (!a || a->base != p)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	fc.dev[a->dev].used -= a->charged;
	if (a->kind == FC_DEVICE)
		memset(shadow_of(a), FC_POISON, a->charged);
	else
		munmap((void *)a->base, a->charged);
	alloc_remove(a);
	return unlock_ret(CUDA_SUCCESS);
}

CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
	struct fc_alloc a = { .kind = FC_HOST_ALLOC };
	struct fc_ctx *c;
	CUresult r;
	void *p;

	r = enter(&c);
	if (r)
		return r;
	if (!pp || !size || (flags & ~(CU_MEMHOSTALLOC_PORTABLE |
				       CU_MEMHOSTALLOC_DEVICEMAP |
				       CU_MEMHOSTALLOC_WRITECOMBINED)))
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	a.charged = round_up(size, (size_t)sysconf(_SC_PAGESIZE));
	p = mmap(NULL, a.charged, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	a.base = (uintptr_t)p;
	a.size = size;
	a.dev = c->dev;
	a.ctx = c;
	if (!alloc_insert(&a)) {
		munmap(p, a.charged);
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	}
	*pp = p;
	return unlock_ret(CUDA_SUCCESS);
}

CUresult cuMemFreeHost(void *p)
{
	struct fc_alloc *a;
	struct fc_ctx *c;
	CUresult r;

	r = enter(&c);
	if (r)
		return r;
	a = alloc_find((uintptr_t)p);
	if (!a || a->base != (uintptr_t)p || a->kind != FC_HOST_ALLOC)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	device_drain(-1);
	a = alloc_find((uintptr_t)p);
	if (!a || a->base != (uintptr_t)p)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	munmap(p, a->charged);
	alloc_remove(a);
	return unlock_ret(CUDA_SUCCESS);
}

/* Whether the host has [p, p + n) mapped: what pinning needs. */
static bool host_mapped(uintptr_t p, size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = p / page * page;
	size_t len = round_up(p + n - start, page);
	unsigned char *vec = malloc(len / page);
	bool ok;

	if (!vec)
		return false;
	ok = !mincore((void *)start, len, vec);
	free(vec);
	return ok;
}

CUresult cuMemHostRegister(void *p, size_t size, unsigned int flags)
{
	struct fc_alloc a = { .kind = FC_HOST_REGISTERED };
	uintptr_t u = (uintptr_t)p;
	struct fc_ctx *c;
	CUresult r;

	r = enter(&c);
	if (r)
		return r;
	if (!p || !size || u + size < u ||
	    (flags & ~(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
		       CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)))
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	if (alloc_overlaps(u, size))
		return unlock_ret(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	if (device_at(u) >= 0 || device_at(u + size - 1) >= 0 ||
	    !host_mapped(u, size))
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	a.base = u;
	a.size = size;
	a.dev = c->dev;
	a.ctx = c;
	if (!alloc_insert(&a))
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	return unlock_ret(CUDA_SUCCESS);
}

CUresult cuMemHostUnregister(void *p)
{
	struct fc_alloc *a;
	struct fc_ctx *c;
	CUresult r;

	r = enter(&c);
	if (r)
		return r;
	a = alloc_find((uintptr_t)p);
	if (!a || a->base != (uintptr_t)p || a->kind != FC_HOST_REGISTERED)
		return unlock_ret(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	device_drain(-1);
	a = alloc_find((uintptr_t)p);
	if (!a || a->base != (uintptr_t)p)
		return unlock_ret(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	alloc_remove(a);
	return unlock_ret(CUDA_SUCCESS);
}

CUresult cuMemGetInfo(size_t *free, size_t *total)
{
	struct fc_ctx *c;
	CUresult r;

	r = enter(&c);
	if (r)
		return r;
	if (!free || !total)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	*total = fc.memory;
	*free = fc.memory - fc.dev[c->dev].used;
	return unlock_ret(CUDA_SUCCESS);
}

CUresult cuMemGetAllocationGranularity(size_t *granularity,
				       const CUmemAllocationProp *prop,
				       CUmemAllocationGranularity_flags option)
{
	if (ready())
		return ready();
	if (!granularity || !prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
	     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	if (!device_valid(prop->location.id))
		return CUDA_ERROR_INVALID_DEVICE;
	*granularity = FC_GRANULE;
	return CUDA_SUCCESS;
}

/* One attribute of an allocation the model knows. */
static CUresult attribute(void *data, CUpointer_attribute what,
			  const struct fc_alloc *a, uintptr_t p)
{
	bool host = a->kind == FC_HOST_ALLOC || a->kind == FC_HOST_REGISTERED;

	switch (what) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = (CUcontext)a->ctx;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = host ? CU_MEMORYTYPE_HOST :
			CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = p;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (a->kind == FC_DEVICE)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = (void *)p;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned int *)data = a->kind == FC_MANAGED;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = a->dev;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = a->base;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = a->size;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(unsigned int *)data = 1;
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = a->id;
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(unsigned int *)data = 0;
		break;
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return CUDA_SUCCESS;
}

/* Pointers no allocation holds are CUDA_ERROR_INVALID_VALUE. */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute what,
			       CUdeviceptr p)
{
	struct fc_alloc *a;
	struct fc_ctx *c;
	CUresult r;

	lock();
	if (ready())
		return unlock_ret(ready());
	if (!data)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	a = alloc_find(p);
	if (a && p >= a->base + a->size)
		a = NULL;		/* the alignment's slack */
	if (a && a->freeing)
		a = NULL;		/* "undefined behavior" once its free is queued */
	if (!a)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	if (what == CU_POINTER_ATTRIBUTE_DEVICE_POINTER && (r = current(&c)))
		return unlock_ret(r);
	return unlock_ret(attribute(data, what, a, p));
}

/* Managed memory only; the model's managed memory has one place. */
CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc,
			    unsigned int flags, CUstream h)
{
	struct fc_stream *s;
	struct fc_alloc *a;
	struct fc_op *op;
	CUresult r;

	lock();
	r = stream_of(h, &s);
	if (r)
		return unlock_ret(r);
	a = alloc_find(p);
	if (flags || !a || a->kind != FC_MANAGED || !n || p + n < p ||
	    p + n > a->base + a->size)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	if (loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? !device_valid(loc.id) :
	    loc.type != CU_MEM_LOCATION_TYPE_HOST)
		return unlock_ret(CUDA_ERROR_INVALID_DEVICE);
	op = op_new(FC_OP_MARK);
	if (!op)
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	return unlock_ret(submit(s, op, NULL));
}

/* ------------------------------------------------------------------ */
/* The stream-ordered allocator: each device's default memory pool */

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
	if (ready())
		return ready();
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	if (!device_valid(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*pool = (CUmemoryPool)&fc.dev[dev].pool;
	return CUDA_SUCCESS;
}

/*
 * Short of memory, a pool may reuse what frees queued before on the same
 * stream will return (stream order makes that safe); the model waits for
 * the stream to reach them instead of tracking which bytes they are.
 */
static CUresult pool_take_on(struct fc_pool *p, struct fc_stream *s,
			     size_t charged)
{
	CUresult r = pool_take(p, charged);

	if (r != CUDA_ERROR_OUT_OF_MEMORY || stream_idle(s))
		return r;
	stream_get(s);			/* the wait lets go of the lock */
	wait_for(s, s->submitted);
	stream_put(s);
	if (!stream_live(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return pool_take(p, charged);
}

/*
 * From the pool of the stream's device. The pointer is returned at once
 * and the allocation is an operation on the stream, so that work queued
 * after it there may use the memory. Use from another stream before the
 * allocation completes is not caught.
 */
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream h)
{
	struct fc_alloc a = { .kind = FC_DEVICE, .pooled = true };
	struct fc_stream *s;
	struct fc_pool *p;
	struct fc_op *op;
	CUresult r;

	lock();
	r = stream_of(h, &s);
	if (r)
		return unlock_ret(r);
	if (!dptr || !size)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	a.charged = round_up(size, FC_ALIGN);
	if (a.charged < size)
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	a.dev = s->ctx->dev;
	a.ctx = s->ctx;
	a.size = size;
	p = &fc.dev[a.dev].pool;
	op = op_new(FC_OP_MARK);
	if (!op)
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	r = pool_take_on(p, s, a.charged);
	if (r) {
		op_free(op);
		return unlock_ret(r);
	}
	a.base = device_place(a.dev, a.charged);
	if (!a.base || !alloc_insert(&a)) {
		p->used -= a.charged;
		op_free(op);
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	}
	r = submit(s, op, NULL);
	if (r) {
		pool_put_back(a.base);
		return unlock_ret(r);
	}
	*dptr = a.base;
	return unlock_ret(CUDA_SUCCESS);
}

/*
 * Queued: the memory goes back to its pool when the stream reaches the
 * free, poisoned. From the call on, work that names it is refused (the
 * reference: "accessing the memory from any subsequent work ... results
 * in undefined behavior"), as is a second free. Only the stream-ordered
 * allocator's memory: the reference names no other.
 */
CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream h)
{
	struct fc_stream *s;
	struct fc_alloc *a;
	struct fc_op *op;
	CUresult r;

	lock();
	r = stream_of(h, &s);
	if (r)
		return unlock_ret(r);
	a = alloc_find(ptr);
	if (!a || a->base != ptr || !a->pooled || a->freeing)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	op = op_new(FC_OP_FREE);
	if (!op)
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	op->dst = shadow_of(a);
	op->size = a->charged;
	op->freed = ptr;
	a->freeing = true;
	r = submit(s, op, NULL);
	if (r) {
		a = alloc_find(ptr);
		a->freeing = false;
	}
	return unlock_ret(r);
}

/* The reference: the high watermarks "can only be reset to zero". */
static CUresult pool_reset_high(size_t *high, size_t current,
				const void *value)
{
	if (*(const cuuint64_t *)value)
		return CUDA_ERROR_INVALID_VALUE;
	*high = current;		/* it tracks from the present on */
	return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
			       void *value)
{
	struct fc_pool *p;

	lock();
	if (ready())
		return unlock_ret(ready());
	p = pool_of(pool);
	if (!p || !value)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] =
			*(const int *)value != 0;
		return unlock_ret(CUDA_SUCCESS);
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		p->threshold = *(const cuuint64_t *)value;
		return unlock_ret(CUDA_SUCCESS);
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		return unlock_ret(pool_reset_high(&p->reserved_high,
						  p->reserved, value));
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		return unlock_ret(pool_reset_high(&p->used_high, p->used, value));
	default:			/* the CURRENT ones are read-only */
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	}
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
			       void *value)
{
	struct fc_pool *p;
	size_t bytes;

	lock();
	if (ready())
		return unlock_ret(ready());
	p = pool_of(pool);
	if (!p || !value)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*(int *)value =
			p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
		return unlock_ret(CUDA_SUCCESS);
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*(cuuint64_t *)value = p->threshold;
		return unlock_ret(CUDA_SUCCESS);
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: bytes = p->reserved; break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: bytes = p->reserved_high; break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: bytes = p->used; break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH: bytes = p->used_high; break;
	default:
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	}
	*(cuuint64_t *)value = bytes;
	return unlock_ret(CUDA_SUCCESS);
}

/*
 * Frees whose stream has not reached them still count as in use, as the
 * reference allows ("can count as outstanding").
 */
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
	struct fc_pool *p;

	lock();
	if (ready())
		return unlock_ret(ready());
	p = pool_of(pool);
	if (!p)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	pool_trim(p, keep);
	return unlock_ret(CUDA_SUCCESS);
}

/* ------------------------------------------------------------------ */
/* Copies and sets */

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	lock();
	return unlock_ret(copy(dst, src, n, NULL, true, FC_ANY));
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{
	lock();
	return unlock_ret(copy(dst, src, n, h, false, FC_ANY));
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
	lock();
	return unlock_ret(copy(dst, (uintptr_t)src, n, NULL, true, FC_HTOD));
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
	lock();
	return unlock_ret(copy((uintptr_t)dst, src, n, NULL, true, FC_DTOH));
}

CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	lock();
	return unlock_ret(copy(dst, src, n, NULL, true, FC_DTOD));
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n,
			   CUstream h)
{
	lock();
	return unlock_ret(copy(dst, (uintptr_t)src, n, h, false, FC_HTOD));
}

CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream h)
{
	lock();
	return unlock_ret(copy((uintptr_t)dst, src, n, h, false, FC_DTOH));
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n,
			   CUstream h)
{
	lock();
	return unlock_ret(copy(dst, src, n, h, false, FC_DTOD));
}

/* Device memory of @c's device, or managed memory (any device reaches it). */
static bool peer_side(const struct fc_span *s, const struct fc_ctx *c)
{
	return s->where == FC_IN_MANAGED ||
		(s->where == FC_ON_DEVICE && s->dev == c->dev);
}

/* Each side must be memory of its context's device. */
static CUresult peer_check(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
			   CUcontext sctx, size_t n)
{
	struct fc_ctx *d = (struct fc_ctx *)dctx, *s = (struct fc_ctx *)sctx;
	struct fc_span ds, ss;

	if (!ctx_live(d) || !ctx_live(s))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!n)
		return CUDA_SUCCESS;
	if (span_of(dst, n, &ds) || span_of(src, n, &ss) ||
	    !peer_side(&ds, d) || !peer_side(&ss, s))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
		      CUcontext sctx, size_t n)
{
	CUresult r;

	lock();
	r = ready() ? ready() : peer_check(dst, dctx, src, sctx, n);
	return unlock_ret(r ? r : copy(dst, src, n, NULL, true, FC_DTOD));
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
			   CUcontext sctx, size_t n, CUstream h)
{
	CUresult r;

	lock();
	r = ready() ? ready() : peer_check(dst, dctx, src, sctx, n);
	return unlock_ret(r ? r : copy(dst, src, n, h, false, FC_DTOD));
}

CUresult cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t n)
{
	lock();
	return unlock_ret(set(dst, value, n, NULL, true));
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n,
			 CUstream h)
{
	lock();
	return unlock_ret(set(dst, value, n, h, false));
}

/* ------------------------------------------------------------------ */
/* Streams */

CUresult cuStreamCreate(CUstream *ph, unsigned int flags)
{
	struct fc_stream *s;
	struct fc_ctx *c;
	CUresult r;

	r = enter(&c);
	if (r)
		return r;
	if (!ph || (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	streams_reap();
	s = stream_new(c, flags, false);
	if (!s)
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	*ph = (CUstream)s;
	return unlock_ret(CUDA_SUCCESS);
}

/* Returns at once; the stream's work still completes. */
CUresult cuStreamDestroy(CUstream h)
{
	struct fc_stream *s = (struct fc_stream *)h;

	lock();
	if (ready())
		return unlock_ret(ready());
	if (!h || h == FC_STREAM_LEGACY_H || h == FC_STREAM_PER_THREAD_H ||
	    !stream_live(s))
		return unlock_ret(CUDA_ERROR_INVALID_HANDLE);
	s->destroyed = true;
	stream_put(s);
	pthread_cond_signal(&s->work);
	return unlock_ret(CUDA_SUCCESS);
}

/* NULL and the special handles name the current context's. */
CUresult cuStreamGetCtx(CUstream h, CUcontext *pctx)
{
	struct fc_stream *s;
	CUresult r;

	lock();
	r = stream_of(h, &s);
	if (r)
		return unlock_ret(r);
	if (!pctx)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	*pctx = (CUcontext)s->ctx;
	return unlock_ret(CUDA_SUCCESS);
}

/* The legacy stream is idle when its work and the blocking streams' is. */
static bool stream_done(struct fc_stream *s)
{
	if (!stream_idle(s))
		return false;
	if (s->legacy)
		for (struct fc_stream *t = fc.streams; t; t = t->next)
			if (t->ctx == s->ctx && stream_blocking(t) &&
			    !stream_idle(t))
				return false;
	return true;
}

CUresult cuStreamQuery(CUstream h)
{
	struct fc_stream *s;
	CUresult r;

	lock();
	r = stream_of(h, &s);
	if (r)
		return unlock_ret(r);
	return unlock_ret(stream_done(s) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY);
}

CUresult cuStreamSynchronize(CUstream h)
{
	struct fc_stream *s;
	CUresult r;

	lock();
	r = stream_of(h, &s);
	if (r)
		return unlock_ret(r);
	r = stream_drain(s);
	if (!r)
		pool_sync_release(s->ctx->dev);
	return unlock_ret(r);
}

static bool event_live(const struct fc_event *e)
{
	for (struct fc_event *i = fc.events; i; i = i->next)
		if (i == e)
			return true;
	return false;
}

/* Later work on @h waits for the event's record of this moment. */
CUresult cuStreamWaitEvent(CUstream h, CUevent ev, unsigned int flags)
{
	struct fc_event *e = (struct fc_event *)ev;
	struct fc_stream *s;
	struct fc_op *op;
	CUresult r;

	lock();
	r = stream_of(h, &s);
	if (r)
		return unlock_ret(r);
	if (!event_live(e))
		return unlock_ret(CUDA_ERROR_INVALID_HANDLE);
	if (flags & ~(unsigned int)CU_EVENT_WAIT_EXTERNAL)
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	op = op_new(FC_OP_MARK);
	if (!op)
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	if (e->rec.s && !dep_add(op, e->rec.s, e->rec.seq)) {
		op_free(op);
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	}
	return unlock_ret(submit(s, op, NULL));
}

/* ------------------------------------------------------------------ */
/* Events */

CUresult cuEventCreate(CUevent *ph, unsigned int flags)
{
	const unsigned int known = CU_EVENT_BLOCKING_SYNC |
		CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
	struct fc_event *e;
	struct fc_ctx *c;
	CUresult r;

	r = enter(&c);
	if (r)
		return r;
	if (!ph || (flags & ~known) || ((flags & CU_EVENT_INTERPROCESS) &&
					!(flags & CU_EVENT_DISABLE_TIMING)))
		return unlock_ret(CUDA_ERROR_INVALID_VALUE);
	e = calloc(1, sizeof(*e));
	if (!e)
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	e->ctx = c;
	e->flags = flags;
	e->next = fc.events;
	fc.events = e;
	*ph = (CUevent)e;
	return unlock_ret(CUDA_SUCCESS);
}

CUresult cuEventDestroy(CUevent ev)
{
	struct fc_event *e = (struct fc_event *)ev;

	lock();
	if (ready())
		return unlock_ret(ready());
	for (struct fc_event **p = &fc.events; *p; p = &(*p)->next) {
		if (*p != e)
			continue;
		*p = e->next;
		if (e->rec.s)
			stream_put(e->rec.s);
		free(e);
		return unlock_ret(CUDA_SUCCESS);
	}
	return unlock_ret(CUDA_ERROR_INVALID_HANDLE);
}

/* The event stands for @h's work so far: a marker queued on it. */
CUresult cuEventRecord(CUevent ev, CUstream h)
{
	struct fc_event *e = (struct fc_event *)ev;
	struct fc_stream *s;
	struct fc_op *op;
	uint64_t seq;
	CUresult r;

	lock();
	r = stream_of(h, &s);
	if (r)
		return unlock_ret(r);
	if (!event_live(e) || e->ctx != s->ctx)
		return unlock_ret(CUDA_ERROR_INVALID_HANDLE);
	op = op_new(FC_OP_MARK);
	if (!op)
		return unlock_ret(CUDA_ERROR_OUT_OF_MEMORY);
	r = submit(s, op, &seq);
	if (r)
		return unlock_ret(r);
	if (e->rec.s)
		stream_put(e->rec.s);
	stream_get(s);
	e->rec = (struct fc_dep){ s, seq };
	return unlock_ret(CUDA_SUCCESS);
}

static bool event_done(const struct fc_event *e)
{
	return !e->rec.s || e->rec.s->completed >= e->rec.seq;
}

CUresult cuEventQuery(CUevent ev)
{
	struct fc_event *e = (struct fc_event *)ev;

	lock();
	if (ready())
		return unlock_ret(ready());
	if (!event_live(e))
		return unlock_ret(CUDA_ERROR_INVALID_HANDLE);
	return unlock_ret(event_done(e) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY);
}

CUresult cuEventSynchronize(CUevent ev)
{
	struct fc_event *e = (struct fc_event *)ev;

	lock();
	if (ready())
		return unlock_ret(ready());
	if (!event_live(e))
		return unlock_ret(CUDA_ERROR_INVALID_HANDLE);
	if (e->rec.s)
		wait_for(e->rec.s, e->rec.seq);
	pool_sync_release(e->ctx->dev);
	return unlock_ret(CUDA_SUCCESS);
}

/* ------------------------------------------------------------------ */
/* Errors */

static const struct {
	CUresult code;
	const char *string;
} fc_errors[] = {
	{ CUDA_SUCCESS, "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "initialization error" },
	{ CUDA_ERROR_DEINITIALIZED, "driver shutting down" },
	{ CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected" },
	{ CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal" },
	{ CUDA_ERROR_INVALID_CONTEXT, "invalid device context" },
	{ CUDA_ERROR_INVALID_HANDLE, "invalid resource handle" },
	{ CUDA_ERROR_NOT_READY, "device not ready" },
	{ CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered" },
	{ CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
	  "peer access is not supported between these two devices" },
	{ CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
	  "peer access is already enabled" },
	{ CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled" },
	{ CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed" },
	{ CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
	  "part or all of the requested memory range is already mapped" },
	{ CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
	  "pointer does not correspond to a registered memory region" },
	{ CUDA_ERROR_NOT_SUPPORTED, "operation not supported" },
	{ CUDA_ERROR_UNKNOWN, "unknown error" },
};

CUresult cuGetErrorString(CUresult code, const char **str)
{
	if (!str)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(fc_errors) / sizeof(fc_errors[0]); i++)
		if (fc_errors[i].code == code) {
			*str = fc_errors[i].string;
			return CUDA_SUCCESS;
		}
	*str = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------ */
/* Exit */

/*
 * At exit the workers finish what is queued and return, and are joined,
 * so that none outlives the process's teardown.
 */
__attribute__((destructor)) static void fakecuda_exit(void)
{
	lock();
	if (!fc.initialized || fc.forked)
		return (void)pthread_mutex_unlock(&fc.lock);
	fc.exiting = true;
	for (struct fc_stream *s = fc.streams; s; s = s->next)
		pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&fc.lock);
	/* all joined before any is freed: a worker may wait on another */
	for (struct fc_stream *s = fc.streams; s; s = s->next)
		pthread_join(s->thread, NULL);
	lock();
	while (fc.streams) {
		struct fc_stream *s = fc.streams;

		fc.streams = s->next;
		pthread_cond_destroy(&s->work);
		free(s);
	}
	for (struct fc_ctx *c = fc.contexts; c; c = c->next)
		c->legacy = NULL;
	for (struct fc_event *e = fc.events; e; e = e->next)
		e->rec.s = NULL;
	pthread_mutex_unlock(&fc.lock);
}
