/* SPDX-License-Identifier: MIT */
/*
 * The backend runner: each op is asked of the model first (what must
 * happen: the statuses and error codes the contract allows, the bytes a
 * read must give), then run on the backend, and the two compared. With
 * g_emit set, every backend call is also printed as C, with the model's
 * expectation as a CHECK: the reproducer that --minimize prints.
 *
 * Where the contract leaves a choice, the model allows each choice; where
 * a program would do something undefined (free memory a wrap handle still
 * covers, touch freed memory whose address was handed out again), the op
 * is skipped, in the model and the backend alike.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

FILE *g_emit;
int g_verbose;
unsigned g_known;
volatile size_t *g_progress;
unsigned long (*g_stats)[2];
static const struct op *cur_op;

static struct model M;
static struct accel_device_id devs[2];
static void *bp[N_RAW];
static accel_stream_t bs[N_STREAM];
static accel_event_t be[N_EVENT];
static accel_pool_t bpl[N_POOL];
static accel_memory_t bm[N_MEM];
static uint8_t *hb[N_HB];
static uint8_t *tmp, *src;
static struct result *R;
/* what a create call gives back, kept only when it succeeds */
static accel_memory_t nm_;
static accel_stream_t ns_;
static accel_event_t ne_;
static accel_pool_t npl_;
static size_t cur;
static char what_ctx[192];	/* the operands of the op being run */

static const char *kind_name[] = { "device", "pinned", "unified",
				   "registered", "default-pool block",
				   "pool block" };

static void note_store(const char *role, int st, int freed)
{
	size_t n = strlen(what_ctx);

	snprintf(what_ctx + n, sizeof(what_ctx) - n, " [%s: %s%s of %zu bytes]",
		 role, freed ? "freed " : "",
		 M.st[st].kind < 0 ? "host buffer" : kind_name[M.st[st].kind],
		 M.st[st].size);
}

static const char *devname_c[2] = { "ctx->dev", "ctx->peer" };

static const enum accel_scalar dtypes[4] = {
	ACCEL_UINT8, ACCEL_INT16, ACCEL_INT32, ACCEL_FLOAT64 };
static const char *dtype_c[4] = {
	"ACCEL_UINT8", "ACCEL_INT16", "ACCEL_INT32", "ACCEL_FLOAT64" };
static const size_t dtype_size[4] = { 1, 2, 4, 8 };

/* Allowed outcomes: statuses and, for ACCEL_FAILED, error codes. */
struct expect {
	unsigned st, codes;
};

#define S(x) (1u << (x))
#define X_OK ((struct expect){ S(ACCEL_SUCCESS), 0 })
#define X_FAIL(c) ((struct expect){ S(ACCEL_FAILED), S(c) })
#define X_FAIL2(c, d) ((struct expect){ S(ACCEL_FAILED), S(c) | S(d) })
#define INVAL ACCEL_ERROR_INVALID_VALUE
#define BADH ACCEL_ERROR_INVALID_HANDLE
#define INUSE ACCEL_ERROR_IN_USE

/* Another reason to fail: when several apply, any of their codes will do. */
static void xfail(struct expect *x, unsigned codes)
{
	x->codes = x->st & S(ACCEL_FAILED) ? x->codes | codes : codes;
	x->st = S(ACCEL_FAILED);
}

/* A size of 0 succeeds and does nothing: allow that whatever else. */
static void zero_ok(struct expect *x, size_t len)
{
	if (!len)
		x->st |= S(ACCEL_SUCCESS);
}

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
	va_list ap;

	if (!g_emit)
		return;
	fputc('\t', g_emit);
	va_start(ap, fmt);
	vfprintf(g_emit, fmt, ap);
	va_end(ap);
	fputc('\n', g_emit);
	fflush(g_emit);	/* what ran before a crash is the repro */
}

static void disagree(int what, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void disagree(int what, const char *fmt, ...)
{
	va_list ap;

	if (R->failed)
		return;
	R->failed = 1;
	R->op = cur;
	R->what = what;
	va_start(ap, fmt);
	vsnprintf(R->msg, sizeof(R->msg), fmt, ap);
	va_end(ap);
	snprintf(R->msg + strlen(R->msg), sizeof(R->msg) - strlen(R->msg),
		 "%s", what_ctx);
}

static const char *status_name(accel_status_t st)
{
	static const char *names[] = { "ACCEL_SUCCESS", "ACCEL_WARNING", "ACCEL_FAILED",
				       "ACCEL_ERROR", "ACCEL_INTERNAL_ERROR" };

	return (unsigned)st < 5 ? names[st] : "C_?";
}

/* Compare a status (and code) with what the model allows. */
static int check(accel_status_t st, struct expect x)
{
	enum accel_error code = accel_peek_last_error_code();
	int ok = ((unsigned)st < 32 && (x.st & S(st))) &&
		 (st != ACCEL_FAILED || (x.codes & S(code)));

	emit("CHECK(fz_expect(st, 0x%x, 0x%x));", x.st, x.codes);
	if (g_stats && cur_op) {
		g_stats[cur_op->kind][0]++;
		g_stats[cur_op->kind][1] += st == ACCEL_FAILED;
	}
	if (!ok) {
		char allowed[256] = "";

		for (int c = 0; c < ACCEL_ERROR_COUNT; c++)
			if (x.codes & S(c))
				snprintf(allowed + strlen(allowed),
					 sizeof(allowed) - strlen(allowed),
					 " %s", accel_error_name(c));
		disagree(0, "got %s%s%s (%s); model allows status mask 0x%x%s%s",
			 status_name(st), st == ACCEL_FAILED ? " " : "",
			 st == ACCEL_FAILED ? accel_error_name(code) : "",
			 accel_get_last_error(), x.st,
			 x.codes ? ", codes" : "", allowed);
	}
	accel_get_last_error_code();
	return ok;
}

/* Compare bytes read back with the model's known bytes. */
static void compare(int st, size_t off, const uint8_t *got, size_t len,
		    const char *buf_c)
{
	long i = model_compare(&M, st, off, got, len);

	if (i < 0)
		return;
	emit("CHECK(((uint8_t *)%s)[%ld] == 0x%02x);", buf_c, i,
	     M.st[st].bytes[off + i]);
	disagree(1, "byte %ld of %zu read back is 0x%02x, the model has 0x%02x",
		 i, len, got[i], M.st[st].bytes[off + i]);
}

/* ------------------------------------------------------------------ */
/* Helpers over slots */

static int is_devside(int kind)
{
	return kind == K_DEV || kind == K_UNI || kind == K_POOLDEF ||
	       kind == K_POOL;
}

static int is_hostside(int kind)
{
	return kind == K_HOST || kind == K_REG || kind == K_UNI || kind == -1;
}

/*
 * A live store overlapping [addr, addr + size) (a freed range handed out
 * again, in part: an op on the freed pointer may reach into the new
 * allocation, which is then no misuse the library can see).
 */
static int reused(uintptr_t addr, size_t size)
{
	for (int i = 0; i < M.nst; i++)
		if (M.st[i].live && M.st[i].kind != -1 &&
		    M.st[i].addr < addr + (size ? size : 1) &&
		    addr < M.st[i].addr + (M.st[i].size ? M.st[i].size : 1))
			return 1;
	return 0;
}

/*
 * The raw slot an op may use: live, or freed when the op is a misuse
 * (FL_BAD) and the address has not been handed out again. -1: skip.
 */
static int raw_use(const struct op *o, int slot, int *freed)
{
	int st = M.raw[slot];

	*freed = 0;
	if (M.raw_state[slot] == 1)
		return st;
	if (M.raw_state[slot] == 2 && (o->flags & FL_BAD) && st >= 0 &&
	    M.st[st].size && !reused(M.st[st].addr, M.st[st].size) &&
	    !(KNOWN(KN_DEFERFREE) && (M.st[st].kind == K_POOL ||
				      M.st[st].kind == K_POOLDEF))) {
		*freed = 1;
		return st;
	}
	return -1;
}

static void range(const struct op *o, size_t size, uint32_t x, uint32_t y,
		  size_t *off, size_t *len)
{
	if (o->flags & FL_FULL) {
		*off = 0;
		*len = size;
	} else {
		*off = x % (size + 1);
		*len = y % (size - *off + 1);
	}
	if (o->flags & FL_OOR)
		*len = size - *off + 1 + y % 300;
}

static int stream_dev_ok(int ss, int dev)
{
	return M.s[ss].dev == dev;
}

/* A stream slot for an async op: live, or destroyed under FL_BAD. */
static int stream_use(const struct op *o, int ss, struct expect *x)
{
	if (M.s[ss].live == 1)
		return 1;
	if (M.s[ss].live == 2 && (o->flags & FL_BAD) && !KNOWN(KN_STALE)) {
		xfail(x, S(BADH));
		return 1;
	}
	return 0;
}

/* an entry count as C: ACCEL_ALL or the number */
static const char *count_c(size_t count)
{
	static char buf[4][32];
	static int n;

	if (count == ACCEL_ALL)
		return "ACCEL_ALL";
	n = (n + 1) % 4;
	snprintf(buf[n], sizeof(buf[n]), "%zu", count);
	return buf[n];
}

static const char *hb_c(int i)
{
	static char buf[4][32];
	static int n;

	n = (n + 1) % 4;
	snprintf(buf[n], sizeof(buf[n]), "hb[%d]", i);
	return buf[n];
}

/*
 * A synchronous call that did its work first waited for the device's
 * queued work; one refused, or with nothing to do, may not have.
 */
static void sync_ok(accel_status_t st, int dev, size_t len)
{
	if (st == ACCEL_SUCCESS && len && !KNOWN(KN_SYNCWAIT)) {
		model_sync_device(&M, dev);
		/* what the call waited for is over: every stream says so */
		for (int ss = 0; ss < N_STREAM; ss++)
			if (M.s[ss].live == 1 && M.s[ss].dev == dev &&
			    model_stream_done(&M, M.s[ss].sid) &&
			    accel_stream_query(&devs[dev], bs[ss]) != ACCEL_SUCCESS)
				disagree(0, "stream s[%d] is not complete after a synchronous call that waited for the device", ss);
	}
}

/* ------------------------------------------------------------------ */
/* Raw allocations */

/*
 * What accel_pointer_get_attributes() says of @ptr, @off bytes into a live
 * raw allocation of @kind on @dev (memory.h, struct accel_pointer_attributes):
 * its type and device; for pool memory the live block handed out, with the
 * size asked for; otherwise an allocation holding the bytes. Checked with
 * no draw of its own, so that programs stay what their seeds made them.
 */
static void check_attributes(int kind, int dev, void *ptr, size_t size,
			     size_t off)
{
	static const enum accel_pointer_type type_of[K_COUNT] = {
		[K_DEV] = ACCEL_POINTER_DEVICE,
		[K_HOST] = ACCEL_POINTER_PINNED_HOST,
		[K_UNI] = ACCEL_POINTER_UNIFIED,
		[K_REG] = ACCEL_POINTER_REGISTERED_HOST,
		[K_POOLDEF] = ACCEL_POINTER_DEVICE,
		[K_POOL] = ACCEL_POINTER_DEVICE,
	};
	struct accel_pointer_attributes a;
	uintptr_t p = (uintptr_t)ptr + off, b;
	int pool = kind == K_POOL || kind == K_POOLDEF, ok;

	if (!ptr || !size)
		return;
	emit("OK(accel_pointer_get_attributes((char *)np + %zu, &attr));", off);
	if (accel_pointer_get_attributes((void *)p, &a) != ACCEL_SUCCESS) {
		disagree(0, "accel_pointer_get_attributes failed: %s",
			 accel_get_last_error());
		return;
	}
	b = (uintptr_t)a.base;
	ok = a.type == type_of[kind] && a.device == devs[dev].id &&
	     b <= p && p < b + a.size;
	if (kind == K_REG)	/* the caller's range, as registered */
		ok = ok && b == (uintptr_t)ptr && a.size == size;
	else if (pool && a.pooled)
		ok = ok && a.block_live && a.block_base == ptr &&
		     a.block_size == size;
	else	/* its own allocation (ACCEL_POOL=off: a pool's too) */
		ok = ok && b == (uintptr_t)ptr && a.size >= size;
	emit("CHECK(attr.type == %d && attr.device == %d);", type_of[kind],
	     devs[dev].id);
	if (!ok)
		disagree(0, "pointer attributes of %zu bytes into %zu: type %d device %d base +%td size %zu pooled %d block_live %d block_base +%td block_size %zu",
			 off, size, a.type, a.device,
			 (char *)a.base - (char *)ptr, a.size, a.pooled,
			 a.block_live, (char *)a.block_base - (char *)ptr,
			 a.block_size);
}

static void op_alloc(const struct op *o, int d)
{
	int slot = o->a % N_RAW, kind = o->b % K_COUNT, ps = o->c % N_POOL;
	int ss = (o->c / 4) % N_STREAM, dev = d;
	size_t size = o->x;
	struct expect x = X_OK;
	accel_stream_t stream = NULL;
	const char *stream_c = "NULL";
	accel_pool_t pool = NULL;
	void *ptr = NULL;
	accel_status_t st;

	if (M.raw_state[slot] == 1)
		return;
	if (kind == K_POOL) {
		if (M.pool_state[ps] == 0)
			kind = K_POOLDEF;
		else if (M.pool_state[ps] == 2 &&
			 (!(o->flags & FL_BAD) || KNOWN(KN_STALE)))
			return;
		else if (M.pool_state[ps] == 2)
			xfail(&x, S(BADH));
		else
			dev = M.pool_dev[ps];
	}
	if (kind == K_REG && !size)
		size = 1;
	if ((kind == K_POOL || kind == K_POOLDEF) && (o->flags & FL_STREAM) &&
	    M.s[ss].live == 1 && stream_dev_ok(ss, dev)) {
		stream = bs[ss];
		stream_c = hb_c(0);	/* placeholder, replaced below */
		stream_c = ss == 0 ? "s[0]" : ss == 1 ? "s[1]" : "s[2]";
	}
	switch (kind) {
	case K_DEV:
		emit("st = accel_device_memory_allocate(%s, &np, %zu); if (st == ACCEL_SUCCESS) p[%d] = np;",
		     devname_c[dev], size, slot);
		st = accel_device_memory_allocate(&devs[dev], &ptr, size);
		break;
	case K_HOST:
		emit("st = accel_host_memory_allocate(%s, &np, %zu); if (st == ACCEL_SUCCESS) p[%d] = np;",
		     devname_c[dev], size, slot);
		st = accel_host_memory_allocate(&devs[dev], &ptr, size);
		break;
	case K_UNI:
		emit("st = accel_unified_memory_allocate(%s, &np, %zu); if (st == ACCEL_SUCCESS) p[%d] = np;",
		     devname_c[dev], size, slot);
		st = accel_unified_memory_allocate(&devs[dev], &ptr, size);
		break;
	case K_REG:
		ptr = malloc(size);
		emit("np = malloc(%zu);", size);
		emit("st = accel_host_memory_register(%s, np, %zu); if (st == ACCEL_SUCCESS) p[%d] = np;",
		     devname_c[dev], size, slot);
		st = accel_host_memory_register(&devs[dev], ptr, size);
		if (st != ACCEL_SUCCESS) {
			free(ptr);
			ptr = NULL;
		}
		break;
	case K_POOLDEF:
		emit("OK(accel_device_pool(%s, &dp));", devname_c[dev]);
		accel_device_pool(&devs[dev], &pool);
		emit("st = accel_pool_allocate(dp, %s, &np, %zu); if (st == ACCEL_SUCCESS) p[%d] = np;",
		     stream_c, size, slot);
		st = accel_pool_allocate(pool, stream, &ptr, size);
		break;
	default:
		emit("st = accel_pool_allocate(pl[%d], %s, &np, %zu); if (st == ACCEL_SUCCESS) p[%d] = np;", ps,
		     stream_c, size, slot);
		st = accel_pool_allocate(bpl[ps], stream, &ptr, size);
		break;
	}
	if (!check(st, x) || st != ACCEL_SUCCESS)
		return;
	int s = model_new_store(&M, kind, dev, size);
	if (s < 0)
		return;
	M.st[s].addr = (uintptr_t)ptr;
	M.st[s].pool = ps;
	M.raw[slot] = s;
	M.raw_state[slot] = 1;
	bp[slot] = ptr;
	check_attributes(kind, dev, ptr, size, size ? o->y % size : 0);
	if (kind == K_REG) {
		/* registered memory keeps what the host had there */
		fill_pattern(ptr, size, o->pat);
		emit("fill_pattern(p[%d], %zu, %uu);", slot, size, o->pat);
		model_write(&M, s, 0, ptr, size);
	}
}

/* A pending access to @st from a stream other than @sid, unordered. */
static int pending_elsewhere(int st, int sid)
{
	for (int i = 0; i < M.npend; i++) {
		struct pending *p = &M.pend[i];

		if (p->store == st && M.host[p->sid] < p->seq &&
		    (sid < 0 || (p->sid != sid && M.vc[sid][p->sid] < p->seq)))
			return 1;
	}
	return 0;
}

/* Work queued on a stream of another device than the storage's uses it. */
static int pending_other_device(int st)
{
	for (int i = 0; i < M.npend; i++) {
		struct pending *p = &M.pend[i];

		if (p->store == st && M.host[p->sid] < p->seq &&
		    M.sid_dev[p->sid] != M.st[st].dev)
			return 1;
	}
	return 0;
}

static void op_free(const struct op *o)
{
	int slot = o->a % N_RAW, ss = (o->c / 4) % N_STREAM, freed;
	int s = raw_use(o, slot, &freed), dev;
	struct expect x = X_OK;
	size_t size;
	accel_status_t st;
	const char *stream_c = "NULL";
	accel_stream_t stream = NULL;
	accel_pool_t pool;

	if (s < 0 || M.st[s].wraps)
		return;
	if (!freed && KNOWN(KN_RELEASE) && pending_other_device(s))
		return;
	dev = M.st[s].dev;
	size = M.st[s].size;
	if (freed) {
		xfail(&x, S(INVAL));
		if (M.st[s].kind == K_POOL && M.pool_state[M.st[s].pool] == 2)
			xfail(&x, S(INVAL) | S(BADH));
	} else if (o->flags & FL_BAD) {
		size += 1 + o->y % 64;	/* a wrong size */
		xfail(&x, S(INVAL));
	}
	switch (M.st[s].kind) {
	case K_DEV:
		emit("st = accel_device_memory_deallocate(%s, p[%d], %zu);",
		     devname_c[dev], slot, size);
		st = accel_device_memory_deallocate(&devs[dev], bp[slot], size);
		break;
	case K_HOST:
		emit("st = accel_host_memory_deallocate(%s, p[%d], %zu);",
		     devname_c[dev], slot, size);
		st = accel_host_memory_deallocate(&devs[dev], bp[slot], size);
		break;
	case K_UNI:
		emit("st = accel_unified_memory_deallocate(%s, p[%d], %zu);",
		     devname_c[dev], slot, size);
		st = accel_unified_memory_deallocate(&devs[dev], bp[slot], size);
		break;
	case K_REG:
		if ((o->flags & FL_BAD) && !freed)
			return;	/* unregister takes no size */
		emit("st = accel_host_memory_unregister(%s, p[%d]);",
		     devname_c[dev], slot);
		st = accel_host_memory_unregister(&devs[dev], bp[slot]);
		break;
	default:
		if ((o->flags & FL_STREAM) && M.s[ss].live == 1 &&
		    stream_dev_ok(ss, dev) &&
		    !pending_elsewhere(s, M.s[ss].sid)) {
			stream = bs[ss];
			stream_c = ss == 0 ? "s[0]" : ss == 1 ? "s[1]" : "s[2]";
		}
		if (M.st[s].kind == K_POOLDEF) {
			emit("OK(accel_device_pool(%s, &dp));", devname_c[dev]);
			accel_device_pool(&devs[dev], &pool);
			emit("st = accel_pool_deallocate(dp, %s, p[%d], %zu);",
			     stream_c, slot, size);
		} else {
			pool = bpl[M.st[s].pool];
			emit("st = accel_pool_deallocate(pl[%d], %s, p[%d], %zu);",
			     M.st[s].pool, stream_c, slot, size);
		}
		st = accel_pool_deallocate(pool, stream, bp[slot], size);
		break;
	}
	/*
	 * accel.h: "Deallocation does not wait"; unregistering does ("wait
	 * for the device's queued work, then unpin").
	 */
	if (M.st[s].kind == K_REG)
		sync_ok(st, dev, 1);
	if (!check(st, x) || st != ACCEL_SUCCESS || freed)
		return;
	if (M.st[s].kind == K_REG) {
		emit("free(p[%d]);", slot);
		free(bp[slot]);
	}
	model_free_store(&M, s);
	M.raw_state[slot] = 2;
}

/* The device-side operand of a sync or async copy. */
static int devside(const struct op *o, int slot, struct expect *x)
{
	int freed, s = raw_use(o, slot, &freed);

	if (s < 0)
		return -1;
	note_store("raw", s, freed);
	/* a freed range may lie in a pool chunk, which the model cannot see */
	if ((freed || ((o->flags & FL_OOR) &&
		       (M.st[s].kind == K_POOL || M.st[s].kind == K_POOLDEF))) &&
	    KNOWN(KN_CHUNK))
		return -1;
	if (freed)
		xfail(x, S(INVAL));
	if (!is_devside(M.st[s].kind)) {
		if (!(o->flags & FL_BAD))
			return -1;
		xfail(x, S(INVAL));
	}
	return s;
}

/* The device side of a synchronous h2d, d2h or set: raw slot a. */
struct sync_target {
	int slot, s, dev;
	size_t off, len;
};

/* Pick it, and expect what its range calls for; false: not this op. */
static bool sync_target(const struct op *o, struct expect *x, size_t max,
			struct sync_target *t)
{
	t->slot = o->a % N_RAW;
	t->s = devside(o, t->slot, x);
	if (t->s < 0)
		return false;
	t->dev = M.st[t->s].dev;
	range(o, M.st[t->s].size, o->x, o->y, &t->off, &t->len);
	if (t->len > max)
		t->len = max;
	if (t->off + t->len > M.st[t->s].size)
		xfail(x, S(INVAL));
	zero_ok(x, t->len);
	return true;
}

static void op_h2d(const struct op *o)
{
	struct expect x = X_OK;
	struct sync_target t;
	accel_status_t st;

	if (!sync_target(o, &x, MAX_LEN, &t))
		return;
	fill_pattern(src, t.len, o->pat);
	emit("fill_pattern(src, %zu, %uu);", t.len, o->pat);
	emit("st = accel_memory_copy_h2d(%s, (char *)p[%d] + %zu, src, %zu);",
	     devname_c[t.dev], t.slot, t.off, t.len);
	st = accel_memory_copy_h2d(&devs[t.dev], (char *)bp[t.slot] + t.off,
				   src, t.len);
	sync_ok(st, t.dev, t.len);
	if (!check(st, x) || st != ACCEL_SUCCESS || !(x.st & S(ACCEL_SUCCESS)))
		return;
	model_access(&M, t.s, -1, 1, t.s, t.off, t.len);
	model_write(&M, t.s, t.off, src, t.len);
}

static void op_d2h(const struct op *o)
{
	struct expect x = X_OK;
	struct sync_target t;
	accel_status_t st;

	if (!sync_target(o, &x, MAX_LEN, &t))
		return;
	emit("st = accel_memory_copy_d2h(%s, tmp, (char *)p[%d] + %zu, %zu);",
	     devname_c[t.dev], t.slot, t.off, t.len);
	st = accel_memory_copy_d2h(&devs[t.dev], tmp,
				   (char *)bp[t.slot] + t.off, t.len);
	sync_ok(st, t.dev, t.len);
	if (!check(st, x) || st != ACCEL_SUCCESS || !(x.st & S(ACCEL_SUCCESS)))
		return;
	model_access(&M, t.s, -1, 0, -1, 0, 0);
	compare(t.s, t.off, tmp, t.len, "tmp");
}

/* d2d and p2p, sync or async: dst slot a, src slot b, stream c. */
static void op_copy2(const struct op *o, int p2p, int async)
{
	int da = o->a % N_RAW, sa = o->b % N_RAW, ss = o->c % N_STREAM;
	struct expect x = X_OK;
	int ds = devside(o, da, &x), sst = devside(o, sa, &x);
	size_t doff, len, soff;
	int sid = -1, ddev, sdev, reps;
	accel_status_t st = ACCEL_SUCCESS;

	if (ds < 0 || sst < 0)
		return;
	ddev = M.st[ds].dev;
	sdev = M.st[sst].dev;
	if (!p2p && ddev != sdev)
		return;
	if (p2p && M.ndev < 2)
		return;
	range(o, M.st[ds].size, o->x, o->y, &doff, &len);
	soff = o->z % (M.st[sst].size + 1);
	if (!(o->flags & FL_OOR) && len > M.st[sst].size - soff)
		len = M.st[sst].size - soff;
	if (len > MAX_LEN)
		len = MAX_LEN;
	if (doff + len > M.st[ds].size || soff + len > M.st[sst].size)
		xfail(&x, S(INVAL));
	zero_ok(&x, len);
	if (ds == sst && doff != soff && doff < soff + len && soff < doff + len)
		xfail(&x, S(INVAL));	/* overlap: refused (accel.h) */
	if (async) {
		if (!stream_use(o, ss, &x))
			return;
		if (M.s[ss].dev != ddev && M.s[ss].dev != sdev) {
			if (!(o->flags & FL_BAD))
				return;
			xfail(&x, S(INVAL) | S(BADH));
		}
		sid = M.s[ss].sid;
	}
	reps = async && (o->flags & FL_REPEAT) ? 1 + o->pat % 8 : 1;
	for (int r = 0; r < reps; r++) {
		const char *sn = ss == 0 ? "s[0]" : ss == 1 ? "s[1]" : "s[2]";

		if (!async && !p2p) {
			emit("st = accel_memory_copy_d2d(%s, (char *)p[%d] + %zu, (char *)p[%d] + %zu, %zu);",
			     devname_c[ddev], da, doff, sa, soff, len);
			st = accel_memory_copy_d2d(&devs[ddev], (char *)bp[da] + doff,
						   (char *)bp[sa] + soff, len);
		} else if (!async) {
			emit("st = accel_memory_copy_p2p(%s, %s, (char *)p[%d] + %zu, (char *)p[%d] + %zu, %zu);",
			     devname_c[ddev], devname_c[sdev], da, doff, sa, soff, len);
			st = accel_memory_copy_p2p(&devs[ddev], &devs[sdev],
						   (char *)bp[da] + doff,
						   (char *)bp[sa] + soff, len);
		} else if (!p2p) {
			emit("st = accel_async_memory_copy_d2d(%s, %s, (char *)p[%d] + %zu, (char *)p[%d] + %zu, %zu);",
			     devname_c[ddev], sn, da, doff, sa, soff, len);
			st = accel_async_memory_copy_d2d(&devs[ddev], bs[ss],
							 (char *)bp[da] + doff,
							 (char *)bp[sa] + soff, len);
		} else {
			emit("st = accel_async_memory_copy_p2p(%s, %s, %s, (char *)p[%d] + %zu, (char *)p[%d] + %zu, %zu);",
			     devname_c[ddev], devname_c[sdev], sn, da, doff, sa,
			     soff, len);
			st = accel_async_memory_copy_p2p(&devs[ddev], &devs[sdev],
							 bs[ss],
							 (char *)bp[da] + doff,
							 (char *)bp[sa] + soff, len);
		}
		if (!async && !(p2p && ddev == sdev && KNOWN(KN_P2PWAIT))) {
			sync_ok(st, ddev, len);
			sync_ok(st, sdev, len);
		}
		if (!check(st, x) || st != ACCEL_SUCCESS || !(x.st & S(ACCEL_SUCCESS)))
			return;
		model_access(&M, sst, sid, 0, ds, doff, len);
		model_access(&M, ds, sid, 1, ds, doff, len);
		model_copy(&M, ds, doff, sst, soff, len);
		if (async) {
			model_queue(&M, sid);
			M.s[ss].synced = 0;
		}
	}
}

static void op_set(const struct op *o)
{
	struct expect x = X_OK;
	struct sync_target t;
	uint8_t v = o->pat & 0xff;
	accel_status_t st;

	if (!sync_target(o, &x, SIZE_MAX, &t))
		return;
	emit("st = accel_device_memory_set(%s, (char *)p[%d] + %zu, 0x%02x, %zu);",
	     devname_c[t.dev], t.slot, t.off, v, t.len);
	st = accel_device_memory_set(&devs[t.dev], (char *)bp[t.slot] + t.off,
				     v, t.len);
	sync_ok(st, t.dev, t.len);
	if (!check(st, x) || st != ACCEL_SUCCESS || !(x.st & S(ACCEL_SUCCESS)))
		return;
	model_access(&M, t.s, -1, 1, t.s, t.off, t.len);
	memset(tmp, v, t.len);
	model_write(&M, t.s, t.off, tmp, t.len);
}

/* A host-side operand: a pageable buffer (c odd) or a host-side raw slot. */
static int hostside(const struct op *o, uint8_t sel, uint8_t **ptr,
		    char *name, size_t namelen)
{
	int s;

	if (sel & 1) {
		int i = (sel / 2) % N_HB;

		*ptr = hb[i];
		snprintf(name, namelen, "hb[%d]", i);
		return M.hb[i];
	}
	if (M.raw_state[(sel / 2) % N_RAW] != 1)
		return -1;
	s = M.raw[(sel / 2) % N_RAW];
	if (!is_hostside(M.st[s].kind))
		return -1;
	*ptr = bp[(sel / 2) % N_RAW];
	snprintf(name, namelen, "p[%d]", (sel / 2) % N_RAW);
	(void)o;
	return s;
}

static void op_host_write(const struct op *o)
{
	char name[16];
	uint8_t *ptr;
	int s = hostside(o, o->c, &ptr, name, sizeof(name));
	size_t off, len;

	if (s < 0)
		return;
	range(o, M.st[s].size, o->x, o->y, &off, &len);
	if (off + len > M.st[s].size)
		return;
	if (len > 65536 && !(o->flags & FL_FULL))
		len = 65536;
	emit("fill_pattern((char *)%s + %zu, %zu, %uu);", name, off, len, o->pat);
	fill_pattern(ptr + off, len, o->pat);
	model_access(&M, s, -1, 1, s, off, len);
	model_write(&M, s, off, ptr + off, len);
}

static void op_host_check(const struct op *o)
{
	char name[16];
	uint8_t *ptr;
	int s = hostside(o, o->c, &ptr, name, sizeof(name));
	size_t off, len;

	if (s < 0)
		return;
	range(o, M.st[s].size, o->x, o->y, &off, &len);
	if (off + len > M.st[s].size)
		return;
	/* a stream may still write it: nothing to compare yet */
	if (model_access(&M, s, -1, 0, -1, 0, 0) || pending_elsewhere(s, -1))
		return;
	emit("memcpy(tmp, (char *)%s + %zu, %zu);", name, off, len);
	memcpy(tmp, ptr + off, len);
	compare(s, off, tmp, len, "tmp");
}

/* async h2d (src: host side b, dst: device side a) and d2h (the reverse) */
static void op_async_hd(const struct op *o, int h2d)
{
	int slot = o->a % N_RAW, ss = o->c % N_STREAM, ds, hs, dev, sid;
	struct expect x = X_OK;
	char hname[16];
	uint8_t *hptr;
	size_t off, len, hoff;
	accel_status_t st;
	int reps;

	ds = devside(o, slot, &x);
	hs = hostside(o, o->b, &hptr, hname, sizeof(hname));
	if (ds < 0 || hs < 0 || hs == ds || !stream_use(o, ss, &x))
		return;
	dev = M.st[ds].dev;
	if (M.s[ss].dev != dev) {
		if (!(o->flags & FL_BAD))
			return;
		xfail(&x, S(INVAL) | S(BADH));
	}
	if (M.st[hs].kind != -1 && M.st[hs].dev != dev)
		return;	/* pinned memory of the other device: pageable here */
	sid = M.s[ss].sid;
	range(o, M.st[ds].size, o->x, o->y, &off, &len);
	hoff = o->z % (M.st[hs].size + 1);
	if (len > M.st[hs].size - hoff) {
		if (!(o->flags & FL_OOR))
			len = M.st[hs].size - hoff;
		else
			return;	/* host-side overrun: undefined, not checkable */
	}
	if (off + len > M.st[ds].size)
		xfail(&x, S(INVAL));
	zero_ok(&x, len);
	reps = (o->flags & FL_REPEAT) ? 1 + o->pat % 8 : 1;
	for (int r = 0; r < reps; r++) {
		const char *sn = ss == 0 ? "s[0]" : ss == 1 ? "s[1]" : "s[2]";

		if (h2d) {
			emit("st = accel_async_memory_copy_h2d(%s, %s, (char *)p[%d] + %zu, (char *)%s + %zu, %zu);",
			     devname_c[dev], sn, slot, off, hname, hoff, len);
			st = accel_async_memory_copy_h2d(&devs[dev], bs[ss],
							 (char *)bp[slot] + off,
							 hptr + hoff, len);
		} else {
			emit("st = accel_async_memory_copy_d2h(%s, %s, (char *)%s + %zu, (char *)p[%d] + %zu, %zu);",
			     devname_c[dev], sn, hname, hoff, slot, off, len);
			st = accel_async_memory_copy_d2h(&devs[dev], bs[ss],
							 hptr + hoff,
							 (char *)bp[slot] + off, len);
		}
		if (!check(st, x) || st != ACCEL_SUCCESS || !(x.st & S(ACCEL_SUCCESS)))
			return;
		if (h2d) {
			/*
			 * a pageable source is captured at the call: the
			 * host reads it now (accel.h, "captured before the
			 * call returns"), unordered with a stream's queued
			 * write to it, such as an async d2h into it
			 */
			model_access(&M, hs, M.st[hs].kind != -1 ? sid : -1,
				     0, ds, off, len);
			model_access(&M, ds, sid, 1, ds, off, len);
			model_copy(&M, ds, off, hs, hoff, len);
		} else {
			model_access(&M, ds, sid, 0, hs, hoff, len);
			model_access(&M, hs, sid, 1, hs, hoff, len);
			model_copy(&M, hs, hoff, ds, off, len);
		}
		model_queue(&M, sid);
		M.s[ss].synced = 0;
	}
}

/* ------------------------------------------------------------------ */
/* Streams and events */

static const char *sname(int i)
{
	static const char *n[] = { "s[0]", "s[1]", "s[2]" };

	return n[i];
}

static const char *ename(int i)
{
	static const char *n[] = { "e[0]", "e[1]", "e[2]" };

	return n[i];
}

static void op_stream(const struct op *o, int d)
{
	int ss = o->a % N_STREAM, dev;
	struct expect x = X_OK;
	accel_status_t st;

	if (o->kind == OP_STREAM_CREATE) {
		if (M.s[ss].live == 1 || M.nsid == MAX_SID)
			return;
		emit("st = accel_stream_create(%s, &ns); if (st == ACCEL_SUCCESS) s[%d] = ns;", devname_c[d], ss);
		st = accel_stream_create(&devs[d], &ns_);
		if (st == ACCEL_SUCCESS)
			bs[ss] = ns_;
		if (!check(st, x) || st != ACCEL_SUCCESS)
			return;
		M.s[ss] = (struct mstream){ .live = 1, .dev = d, .sid = M.nsid,
					    .synced = 1 };
		M.sid_dev[M.nsid++] = d;
		return;
	}
	if (M.s[ss].live == 0 ||
	    (M.s[ss].live == 2 && (!(o->flags & FL_BAD) || KNOWN(KN_STALE))))
		return;
	if (M.s[ss].live == 2)
		xfail(&x, S(BADH));
	dev = M.s[ss].dev;
	switch (o->kind) {
	case OP_STREAM_DESTROY:
		emit("st = accel_stream_destroy(%s, s[%d]);", devname_c[dev], ss);
		st = accel_stream_destroy(&devs[dev], bs[ss]);
		break;
	case OP_STREAM_SYNC:
		emit("st = accel_stream_synchronize(%s, s[%d]);", devname_c[dev], ss);
		st = accel_stream_synchronize(&devs[dev], bs[ss]);
		break;
	default:
		/* pending or not is timing, except once all is known done */
		if (x.st == S(ACCEL_SUCCESS) && !model_stream_done(&M, M.s[ss].sid))
			x.st |= S(ACCEL_WARNING);
		emit("st = accel_stream_query(%s, s[%d]);", devname_c[dev], ss);
		st = accel_stream_query(&devs[dev], bs[ss]);
		break;
	}
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	if (o->kind != OP_STREAM_QUERY)
		model_sync_stream(&M, M.s[ss].sid);
	if (o->kind == OP_STREAM_DESTROY)
		M.s[ss].live = 2;
}

static void op_event(const struct op *o, int d)
{
	int es = o->a % N_EVENT, ss = o->b % N_STREAM, dev;
	struct expect x = X_OK;
	struct mevent *e = &M.e[es];
	accel_status_t st;

	if (o->kind == OP_EVENT_CREATE) {
		if (e->live == 1)
			return;
		emit("st = accel_event_create(%s, &ne); if (st == ACCEL_SUCCESS) e[%d] = ne;", devname_c[d], es);
		st = accel_event_create(&devs[d], &ne_);
		if (st == ACCEL_SUCCESS)
			be[es] = ne_;
		if (!check(st, x) || st != ACCEL_SUCCESS)
			return;
		memset(e, 0, sizeof(*e));
		e->live = 1;
		e->dev = d;
		return;
	}
	if (e->live == 0 ||
	    (e->live == 2 && (!(o->flags & FL_BAD) || KNOWN(KN_STALE))))
		return;
	if (e->live == 2)
		xfail(&x, S(BADH));
	dev = e->dev;
	switch (o->kind) {
	case OP_EVENT_DESTROY:
		emit("st = accel_event_destroy(%s, e[%d]);", devname_c[dev], es);
		st = accel_event_destroy(&devs[dev], be[es]);
		if (check(st, x) && st == ACCEL_SUCCESS)
			e->live = 2;
		return;
	case OP_EVENT_RECORD:
		if (M.s[ss].live != 1 || M.s[ss].dev != dev)
			return;
		/* a re-record while a wait may still hang on the old one */
		if (KNOWN(KN_EVENT) && !model_event_done(&M, e))
			return;
		emit("st = accel_event_record(%s, %s, e[%d]);", devname_c[dev],
		     sname(ss), es);
		st = accel_event_record(&devs[dev], bs[ss], be[es]);
		if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
			return;
		memcpy(e->vc, M.vc[M.s[ss].sid], sizeof(e->vc));
		e->vc[M.s[ss].sid] = M.n[M.s[ss].sid];
		e->recorded = 1;
		return;
	case OP_EVENT_SYNC:
		emit("st = accel_event_synchronize(%s, e[%d]);", devname_c[dev], es);
		st = accel_event_synchronize(&devs[dev], be[es]);
		if (check(st, x) && st == ACCEL_SUCCESS && x.st != S(ACCEL_FAILED))
			model_sync_clock(&M, e->vc);
		return;
	case OP_EVENT_QUERY:
		if (x.st == S(ACCEL_SUCCESS) && !model_event_done(&M, e))
			x.st |= S(ACCEL_WARNING);
		emit("st = accel_event_query(%s, e[%d]);", devname_c[dev], es);
		st = accel_event_query(&devs[dev], be[es]);
		check(st, x);
		return;
	default: {	/* OP_WAIT: stream b waits for event a */
		int sid, sdev;

		if (M.s[ss].live != 1)
			return;
		sid = M.s[ss].sid;
		sdev = M.s[ss].dev;
		emit("st = accel_stream_wait_event(%s, %s, e[%d]);",
		     devname_c[sdev], sname(ss), es);
		st = accel_stream_wait_event(&devs[sdev], bs[ss], be[es]);
		if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
			return;
		if (!e->recorded)
			return;
		if (dev != sdev)	/* the caller blocked instead */
			model_sync_clock(&M, e->vc);
		for (int i = 0; i < M.nsid; i++)
			if (e->vc[i] > M.vc[sid][i])
				M.vc[sid][i] = e->vc[i];
		model_queue(&M, sid);
		M.s[ss].synced = 0;
		return;
	}
	}
}

static void op_device_sync(int d)
{
	accel_status_t st;

	emit("st = accel_device_synchronize(%s);", devname_c[d]);
	st = accel_device_synchronize(&devs[d]);
	if (check(st, X_OK))
		model_sync_device(&M, d);
}

/* ------------------------------------------------------------------ */
/* Pools */

static void op_pool(const struct op *o, int d)
{
	int ps = o->a % N_POOL;
	struct expect x = X_OK;
	accel_status_t st;

	if (o->kind == OP_POOL_CREATE) {
		if (M.pool_state[ps] == 1)
			return;
		emit("st = accel_pool_create(%s, &npl); if (st == ACCEL_SUCCESS) pl[%d] = npl;", devname_c[d], ps);
		st = accel_pool_create(&devs[d], &npl_);
		if (st == ACCEL_SUCCESS)
			bpl[ps] = npl_;
		if (check(st, x) && st == ACCEL_SUCCESS) {
			M.pool_state[ps] = 1;
			M.pool_dev[ps] = d;
		}
		return;
	}
	if (M.pool_state[ps] == 0 || (M.pool_state[ps] == 2 &&
				       (!(o->flags & FL_BAD) || KNOWN(KN_STALE))))
		return;
	if (M.pool_state[ps] == 2)
		xfail(&x, S(BADH));
	/* its blocks go with it: none may be under a wrap handle */
	for (int i = 0; i < N_RAW; i++)
		if (M.raw_state[i] == 1 && M.st[M.raw[i]].kind == K_POOL &&
		    M.st[M.raw[i]].pool == ps && M.st[M.raw[i]].wraps)
			return;
	emit("st = accel_pool_destroy(pl[%d]);", ps);
	st = accel_pool_destroy(bpl[ps]);
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	model_sync_device(&M, M.pool_dev[ps]);
	M.pool_state[ps] = 2;
	for (int i = 0; i < N_RAW; i++)
		if (M.raw_state[i] == 1 && M.st[M.raw[i]].kind == K_POOL &&
		    M.st[M.raw[i]].pool == ps) {
			model_free_store(&M, M.raw[i]);
			M.raw_state[i] = 2;
		}
}

/* ------------------------------------------------------------------ */
/* Memory handles */

#define FLAGS_UNKNOWN (~0u)

/* The handle's storage is there: not freed, by any handle on it. */
static int hvalid(const struct mmem *h)
{
	return M.st[h->store].live && !M.gfreed[h->group];
}

/* A handle slot an op may use: live (1), or released/freed storage under
 * FL_BAD (2, with *x set to the refusal). 0: skip. */
static int mem_use(const struct op *o, int ms, struct expect *x)
{
	struct mmem *h = &M.m[ms];

	if (h->state)
		note_store(h->state == 1 ? "handle on" : "released handle on",
			   h->store, !hvalid(h));
	if (h->state == 1 && hvalid(h))
		return 1;
	if (h->state == 0 || !(o->flags & FL_BAD) ||
	    (h->state == 2 && KNOWN(KN_STALE)))
		return 0;
	xfail(x, h->state == 2 ? S(BADH) : S(BADH) | S(INVAL));
	return 2;
}

static size_t mbytes(const struct mmem *h)
{
	return h->entries * h->dsize;
}

static void mem_set(int ms, int group, int store, size_t off,
		    size_t entries, size_t dsize, unsigned flags)
{
	if (group < 0)
		group = M.ngroup < MAX_STORE - 1 ? M.ngroup++ : MAX_STORE - 1;
	M.m[ms] = (struct mmem){ .state = 1, .store = store, .off = off,
				 .entries = entries, .dsize = dsize,
				 .flags = flags, .group = group };
	M.st[store].handles++;
}

/* The last handle on owned storage frees it. */
static void mem_drop(int ms)
{
	struct mmem *h = &M.m[ms];
	struct store *s = &M.st[h->store];

	h->state = 2;
	s->handles--;
	if (!s->owned_by_handles)
		s->wraps--;
	else if (!s->handles && !s->mapped)
		model_free_store(&M, h->store);
}

/* the native address of a handle's storage, for reuse checks */
static uintptr_t mem_addr(accel_memory_t mem)
{
	struct accel_memory_info info;

	if (accel_memory_get_info(mem, &info) != ACCEL_SUCCESS)
		return 0;
	return (uintptr_t)info.ptr;
}

static void op_mem_create(const struct op *o, int d)
{
	int ms = o->a % N_MEM, dt = o->c % 4, s;
	size_t entries = o->x / dtype_size[dt];
	unsigned flags = (unsigned[]){ 0, ACCEL_MEMORY_HOST_READ |
				       ACCEL_MEMORY_HOST_WRITE,
				       ACCEL_MEMORY_HOST_READ }[o->b % 3];
	int init = o->flags & FL_FULL;
	accel_status_t st;

	if (M.m[ms].state == 1)
		return;
	if (init) {
		fill_pattern(src, entries * dtype_size[dt], o->pat);
		emit("fill_pattern(src, %zu, %uu);", entries * dtype_size[dt],
		     o->pat);
	}
	emit("st = accel_memory_create(%s, %zu, accel_dtype(%s), %s, 0x%x, &nm); if (st == ACCEL_SUCCESS) m[%d] = nm;",
	     devname_c[d], entries, dtype_c[dt], init ? "src" : "NULL", flags,
	     ms);
	st = accel_memory_create(&devs[d], entries, accel_dtype(dtypes[dt]),
				 init ? src : NULL, flags, &nm_);
	if (st == ACCEL_SUCCESS)
		bm[ms] = nm_;
	if (!check(st, X_OK) || st != ACCEL_SUCCESS)
		return;
	s = model_new_store(&M, flags ? K_UNI : K_POOLDEF, d,
			    entries * dtype_size[dt]);
	if (s < 0)
		return;
	M.st[s].owned_by_handles = 1;
	M.st[s].addr = mem_addr(bm[ms]);
	mem_set(ms, -1, s, 0, entries, dtype_size[dt], flags);
	if (init)
		model_write(&M, s, 0, src, entries * dtype_size[dt]);
}

static void op_mem_wrap(const struct op *o)
{
	int ms = o->a % N_MEM, slot = o->b % N_RAW, dt = o->c % 4, s, dev;
	struct expect x = X_OK;
	size_t off, bytes, entries;
	accel_status_t st;

	if (M.m[ms].state == 1 || M.raw_state[slot] != 1)
		return;
	s = M.raw[slot];
	if (M.st[s].kind == K_REG || !M.st[s].size)
		return;	/* wrap of registered memory: see the notes */
	dev = M.st[s].dev;
	note_store("wrap", s, 0);
	if ((o->flags & FL_OOR) && KNOWN(KN_CHUNK) &&
	    (M.st[s].kind == K_POOL || M.st[s].kind == K_POOLDEF))
		return;
	off = o->y % M.st[s].size;
	bytes = M.st[s].size - off;
	entries = bytes / dtype_size[dt];
	if (o->flags & FL_OOR)
		entries += 1 + o->z % 16;
	if (off + entries * dtype_size[dt] > M.st[s].size)
		xfail(&x, S(INVAL));
	/* memory.h: @ptr "aligned for @dtype" (its size, built-in types) */
	if ((M.st[s].addr + off) % dtype_size[dt])
		xfail(&x, S(INVAL));
	emit("st = accel_memory_wrap(%s, (char *)p[%d] + %zu, %zu, accel_dtype(%s), &nm); if (st == ACCEL_SUCCESS) m[%d] = nm;",
	     devname_c[dev], slot, off, entries, dtype_c[dt], ms);
	st = accel_memory_wrap(&devs[dev], (char *)bp[slot] + off, entries,
			       accel_dtype(dtypes[dt]), &nm_);
	if (st == ACCEL_SUCCESS)
		bm[ms] = nm_;
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	mem_set(ms, -1, s, off, entries, dtype_size[dt], 0);
	M.st[s].wraps++;
}

static void op_mem_slice(const struct op *o)
{
	int ms = o->a % N_MEM, from = o->b % N_MEM;
	struct expect x = X_OK;
	struct mmem *h = &M.m[from];
	size_t off, count, real;
	accel_status_t st;
	int use;

	if (M.m[ms].state == 1 || ms == from || !(use = mem_use(o, from, &x)))
		return;
	off = o->x % (h->entries + 1);
	count = o->y % (h->entries - off + 1);
	real = count;
	if (o->flags & FL_FULL) {
		count = ACCEL_ALL;
		real = h->entries - off;
	}
	if (o->flags & FL_OOR)
		count = real = h->entries - off + 1 + o->z % 8;
	if (use == 1 && off + real > h->entries)
		xfail(&x, S(INVAL));
	emit("st = accel_memory_slice(m[%d], %zu, %s, &nm); if (st == ACCEL_SUCCESS) m[%d] = nm;",
	     from, off, count_c(count), ms);
	st = accel_memory_slice(bm[from], off, count, &nm_);
	if (st == ACCEL_SUCCESS)
		bm[ms] = nm_;
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	mem_set(ms, h->group, h->store, h->off + off * h->dsize, real, h->dsize,
		h->flags);
	if (!M.st[h->store].owned_by_handles)
		M.st[h->store].wraps++;
}

static void op_mem_cast(const struct op *o)
{
	int ms = o->a % N_MEM, from = o->b % N_MEM, dt = o->c % 4;
	struct expect x = X_OK;
	struct mmem *h = &M.m[from];
	size_t nsize = dtype_size[dt];
	accel_status_t st;
	int use;

	if (M.m[ms].state == 1 || ms == from || !(use = mem_use(o, from, &x)))
		return;
	if (use == 1 && (mbytes(h) % nsize ||
			 (M.st[h->store].addr + h->off) % nsize)) {
		/* a size that does not divide, or a misaligned view (tried
		 * every time: such views are rare) */
		if (!(o->flags & FL_BAD) && mbytes(h) % nsize)
			return;
		if (KNOWN(KN_CAST) && mbytes(h) % nsize == 0)
			return;
		xfail(&x, S(INVAL));
	}
	emit("st = accel_memory_cast(m[%d], accel_dtype(%s), &nm); if (st == ACCEL_SUCCESS) m[%d] = nm;", from,
	     dtype_c[dt], ms);
	st = accel_memory_cast(bm[from], accel_dtype(dtypes[dt]), &nm_);
	if (st == ACCEL_SUCCESS)
		bm[ms] = nm_;
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	mem_set(ms, h->group, h->store, h->off, mbytes(h) / nsize, nsize,
		h->flags);
	if (!M.st[h->store].owned_by_handles)
		M.st[h->store].wraps++;
}

static void op_mem_clone(const struct op *o)
{
	int ms = o->a % N_MEM, from = o->b % N_MEM, s, kind;
	struct expect x = X_OK;
	struct mmem *h = &M.m[from];
	accel_status_t st;
	int use;

	if (M.m[ms].state == 1 || ms == from || !(use = mem_use(o, from, &x)))
		return;
	if (use == 1 && M.st[h->store].mapped) {
		xfail(&x, S(INUSE));
		zero_ok(&x, mbytes(h));
	}
	emit("st = accel_memory_clone(m[%d], &nm); if (st == ACCEL_SUCCESS) m[%d] = nm;", from, ms);
	st = accel_memory_clone(bm[from], &nm_);
	if (st == ACCEL_SUCCESS)
		bm[ms] = nm_;
	if (use == 1)
		sync_ok(st, M.st[h->store].dev, mbytes(h));
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	kind = M.st[h->store].kind == K_UNI && h->flags ? K_UNI : K_POOLDEF;
	s = model_new_store(&M, kind, M.st[h->store].dev, mbytes(h));
	if (s < 0)
		return;
	M.st[s].owned_by_handles = 1;
	M.st[s].addr = mem_addr(bm[ms]);	/* for reuse checks */
	model_access(&M, h->store, -1, 0, s, 0, mbytes(h));
	model_copy(&M, s, 0, h->store, h->off, mbytes(h));
	/* a clone of wrapped memory is device memory: host-accessible or
	 * not is the backend's choice */
	mem_set(ms, -1, s, 0, h->entries, h->dsize,
		!M.st[h->store].owned_by_handles || h->flags == FLAGS_UNKNOWN ?
		FLAGS_UNKNOWN :
		kind == K_UNI ? h->flags : 0);
}

/* entries range of a handle op: offset from x, count from y */
static void mrange(const struct op *o, const struct mmem *h, size_t *off,
		   size_t *count, size_t *real)
{
	*off = o->x % (h->entries + 1);
	*count = *real = o->y % (h->entries - *off + 1);
	if (o->flags & FL_FULL) {
		*count = ACCEL_ALL;
		*real = h->entries - *off;
	}
	if (o->flags & FL_OOR)
		*count = *real = h->entries - *off + 1 + o->z % 8;
}

/* The stream of an async handle op: on the device(s), else misuse. */
static int mem_stream(const struct op *o, int dev1, int dev2,
		      struct expect *x, int *ss)
{
	*ss = o->c % N_STREAM;
	if (!stream_use(o, *ss, x))
		return 0;
	if (M.s[*ss].dev != dev1 && M.s[*ss].dev != dev2) {
		if (!(o->flags & FL_BAD))
			return 0;
		xfail(x, S(INVAL) | S(BADH));
	}
	return 1;
}

static void op_mem_from_to(const struct op *o, int from)
{
	int ms = o->a % N_MEM, async = o->flags & FL_STREAM, ss = -1, sid = -1;
	int hi = o->b % N_HB, use, st_i, dev;
	struct expect x = X_OK;
	struct mmem *h = &M.m[ms];
	size_t off, count, real, boff, bytes;
	accel_status_t st;
	char cnt[48];

	if (!(use = mem_use(o, ms, &x)))
		return;
	st_i = h->store;
	dev = M.st[st_i].dev;
	mrange(o, h, &off, &count, &real);
	if (use == 1 && off + real > h->entries)
		xfail(&x, S(INVAL));
	else if (use == 1 && M.st[st_i].mapped)
		xfail(&x, S(INUSE));
	if (use == 1 && M.st[st_i].mapped)
		zero_ok(&x, real);
	if (async && !mem_stream(o, dev, dev, &x, &ss))
		return;
	if (async)
		sid = M.s[ss].sid;
	if (use == 1 && off + real <= h->entries)
		zero_ok(&x, real);
	bytes = real * h->dsize;
	if (bytes > HB_SIZE)
		return;
	boff = h->off + off * h->dsize;
	snprintf(cnt, sizeof(cnt), "%s", count_c(count));
	if (from) {
		uint8_t *s = async ? hb[hi] : src;

		/* a stream may still use the buffer: leave it alone */
		if (async && pending_elsewhere(M.hb[hi], -1))
			return;
		/* the source is pageable: captured at the call */
		fill_pattern(s, bytes, o->pat);
		emit("fill_pattern(%s, %zu, %uu);", async ? hb_c(hi) : "src",
		     bytes, o->pat);
		if (async) {
			model_access(&M, M.hb[hi], -1, 1, M.hb[hi], 0, bytes);
			model_write(&M, M.hb[hi], 0, s, bytes);
			emit("st = accel_memory_copy_from_async(m[%d], %s, %s, %s, %zu);",
			     ms, sname(ss), hb_c(hi), cnt, off);
			st = accel_memory_copy_from_async(bm[ms], bs[ss], s,
							  count, off);
		} else {
			emit("st = accel_memory_copy_from(m[%d], src, %s, %zu);",
			     ms, cnt, off);
			st = accel_memory_copy_from(bm[ms], s, count, off);
		}
	} else if (async) {
		emit("st = accel_memory_copy_to_async(m[%d], %s, %s, %s, %zu);",
		     ms, sname(ss), hb_c(hi), cnt, off);
		st = accel_memory_copy_to_async(bm[ms], bs[ss], hb[hi], count,
						off);
	} else {
		emit("st = accel_memory_copy_to(m[%d], tmp, %s, %zu);", ms, cnt,
		     off);
		st = accel_memory_copy_to(bm[ms], tmp, count, off);
	}
	if (!async && use == 1)
		sync_ok(st, dev, real);
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	if (from && async) {
		model_access(&M, st_i, sid, 1, st_i, boff, bytes);
		model_copy(&M, st_i, boff, M.hb[hi], 0, bytes);
	} else if (from) {
		model_access(&M, st_i, -1, 1, st_i, boff, bytes);
		model_write(&M, st_i, boff, src, bytes);
	} else if (async) {
		model_access(&M, st_i, sid, 0, M.hb[hi], 0, bytes);
		model_access(&M, M.hb[hi], sid, 1, M.hb[hi], 0, bytes);
		model_copy(&M, M.hb[hi], 0, st_i, boff, bytes);
	} else {
		model_access(&M, st_i, -1, 0, -1, 0, 0);
		compare(st_i, boff, tmp, bytes, "tmp");
	}
	if (async) {
		model_queue(&M, sid);
		M.s[ss].synced = 0;
	}
}

static void op_mem_copy(const struct op *o)
{
	int da = o->a % N_MEM, sa = o->b % N_MEM, async = o->flags & FL_STREAM;
	int ss = -1, sid = -1, ud, us, ddev, sdev;
	struct expect x = X_OK;
	struct mmem *dh = &M.m[da], *sh = &M.m[sa];
	size_t soff, doff, count, real, bytes;
	accel_status_t st;

	if (!(ud = mem_use(o, da, &x)) || !(us = mem_use(o, sa, &x)))
		return;
	ddev = M.st[dh->store].dev;
	sdev = M.st[sh->store].dev;
	soff = o->x % (sh->entries + 1);
	count = real = o->y % (sh->entries - soff + 1);
	if (o->flags & FL_FULL) {
		count = ACCEL_ALL;
		real = sh->entries - soff;
	}
	doff = o->z % (dh->entries + 1);
	if (!(o->flags & FL_OOR) && real > dh->entries - doff) {
		if (count == ACCEL_ALL)
			return;
		count = real = dh->entries - doff;
	}
	if (ud == 1 && us == 1) {
		if (dh->dsize != sh->dsize) {
			if (!(o->flags & FL_BAD))
				return;
			xfail(&x, S(INVAL));
		} else if (doff + real > dh->entries || soff + real > sh->entries) {
			xfail(&x, S(INVAL));
		} else if (M.st[dh->store].mapped || M.st[sh->store].mapped) {
			xfail(&x, S(INUSE));
			zero_ok(&x, real);
		}
		if (dh->store == sh->store && real &&
		    dh->off + doff * dh->dsize < sh->off + (soff + real) * sh->dsize &&
		    sh->off + soff * sh->dsize < dh->off + (doff + real) * dh->dsize) {
			/* overlap: undefined; refusing it is fine */
			if (x.st & S(ACCEL_SUCCESS))
				x = (struct expect){ S(ACCEL_SUCCESS) | S(ACCEL_FAILED),
						     S(INVAL) };
			else
				x.codes |= S(INVAL);
		}
	}
	if (async && !mem_stream(o, ddev, sdev, &x, &ss))
		return;
	if (async && ddev != sdev &&
	    is_devside(M.st[dh->store].kind) !=
	    is_devside(M.st[sh->store].kind) &&
	    M.s[ss].dev != (is_devside(M.st[dh->store].kind) ? ddev : sdev))
		/* memory.h: host<->device on a stream of the device side's */
		xfail(&x, S(BADH));
	if (async)
		sid = M.s[ss].sid;
	if (ud == 1 && us == 1 && doff + real <= dh->entries &&
	    soff + real <= sh->entries)
		zero_ok(&x, real);
	if (async) {
		emit("st = accel_memory_copy_async(m[%d], m[%d], %s, %s, %zu, %zu);",
		     da, sa, sname(ss), count_c(count), doff, soff);
		st = accel_memory_copy_async(bm[da], bm[sa], bs[ss], count, doff,
					     soff);
	} else {
		emit("st = accel_memory_copy(m[%d], m[%d], %s, %zu, %zu);",
		     da, sa, count_c(count), doff, soff);
		st = accel_memory_copy(bm[da], bm[sa], count, doff, soff);
		if (ud == 1 && us == 1) {
			sync_ok(st, ddev, real);
			sync_ok(st, sdev, real);
		}
	}
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	bytes = real * sh->dsize;
	doff = dh->off + doff * dh->dsize;
	soff = sh->off + soff * sh->dsize;
	model_access(&M, sh->store, sid, 0, dh->store, doff, bytes);
	model_access(&M, dh->store, sid, 1, dh->store, doff, bytes);
	model_copy(&M, dh->store, doff, sh->store, soff, bytes);
	if (dh->store == sh->store && doff < soff + bytes && soff < doff + bytes)
		model_undefine(&M, dh->store, doff, bytes);
	if (async) {
		model_queue(&M, sid);
		M.s[ss].synced = 0;
	}
}

static void op_mem_release(const struct op *o, int free_it)
{
	int ms = o->a % N_MEM, use;
	struct expect x = X_OK;
	struct mmem *h = &M.m[ms];
	struct store *s;
	accel_status_t st;

	if (h->state == 0 ||
	    (h->state == 2 && (!(o->flags & FL_BAD) || KNOWN(KN_STALE))))
		return;
	use = h->state == 2 ? 2 : 1;
	if (use == 2)
		xfail(&x, S(BADH));
	s = &M.st[h->store];
	if (use == 1 && KNOWN(KN_RELEASE) && pending_other_device(h->store))
		return;
	if (use == 1 && free_it && s->mapped && hvalid(h))
		xfail(&x, S(INUSE));
	else if (use == 1 && !free_it && s->mapped && s->handles == 1 &&
		 s->owned_by_handles && KNOWN(KN_MAPREL))
		return;
	else if (use == 1 && !free_it && s->mapped && s->handles == 1 &&
		 s->owned_by_handles)
		/* memory.h: "The last handle on mapped memory is not
		 * released ... the call fails with ACCEL_ERROR_IN_USE and the
		 * handle stays valid" */
		xfail(&x, S(INUSE));
	emit("st = accel_memory_%s(m[%d]);", free_it ? "free" : "release", ms);
	st = free_it ? accel_memory_free(bm[ms]) : accel_memory_release(bm[ms]);
	/* no sync_ok(): memory.h, "The call does not wait for the device" */
	if (!check(st, x) || st != ACCEL_SUCCESS || use == 2 ||
	    x.st == S(ACCEL_FAILED))
		return;
	if (free_it && hvalid(h)) {
		M.gfreed[h->group] = 1;
		if (s->owned_by_handles) {
			model_free_store(&M, h->store);
			s->mapped = 0;
		}
	}
	if (h->mapptr && s->mapped) {
		/* released while mapped: the mapping outlives the handle */
		return mem_drop(ms);
	}
	mem_drop(ms);
}

static void op_mem_map(const struct op *o)
{
	int ms = o->a % N_MEM, use;
	unsigned access = 1 + o->b % 3;
	struct expect x = X_OK;
	struct mmem *h = &M.m[ms];
	void *ptr = NULL;
	accel_status_t st;

	if (!(use = mem_use(o, ms, &x)) || h->mapptr)
		return;
	if (use == 1 && h->flags == FLAGS_UNKNOWN)
		return;
	if (use == 1 && !M.st[h->store].owned_by_handles)
		return;	/* wrapped memory: its flags are the backend's */
	if (use == 1 && (access & ~h->flags)) {
		x = (struct expect){ S(ACCEL_FAILED),
				     S(INVAL) | S(ACCEL_ERROR_NOT_SUPPORTED) };
	}
	emit("st = accel_memory_map(m[%d], %u, &mp[%d]);", ms, access, ms);
	st = accel_memory_map(bm[ms], access, &ptr);
	if (use == 1)
		sync_ok(st, M.st[h->store].dev, 1);
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	h->mapptr = ptr;
	M.st[h->store].mapped++;
}

static void op_mem_unmap(const struct op *o)
{
	int ms = o->a % N_MEM;
	struct mmem *h = &M.m[ms];
	struct expect x = X_OK;
	accel_status_t st;

	if (h->state != 1 || !hvalid(h))
		return;
	if (!h->mapptr) {
		if (!(o->flags & FL_BAD) || !M.st[h->store].owned_by_handles ||
		    M.st[h->store].mapped)
			return;
		xfail(&x, S(INVAL));
	}
	emit("st = accel_memory_unmap(m[%d]);", ms);
	st = accel_memory_unmap(bm[ms]);
	if (!check(st, x) || st != ACCEL_SUCCESS || !h->mapptr)
		return;
	h->mapptr = NULL;
	M.st[h->store].mapped--;
}

/* The host through a mapping: write a pattern, read it back. */
static void op_mem_touch(const struct op *o)
{
	int ms = o->a % N_MEM;
	struct mmem *h = &M.m[ms];
	size_t off, len;

	if (!h->mapptr || !M.st[h->store].mapped)
		return;
	range(o, mbytes(h), o->x, o->y, &off, &len);
	if (off + len > mbytes(h))
		return;
	if (h->flags & ACCEL_MEMORY_HOST_WRITE && (o->pat & 1)) {
		emit("fill_pattern((char *)mp[%d] + %zu, %zu, %uu);", ms, off, len,
		     o->pat);
		fill_pattern((uint8_t *)h->mapptr + off, len, o->pat);
		model_access(&M, h->store, -1, 1, h->store, h->off + off, len);
		model_write(&M, h->store, h->off + off,
			    (uint8_t *)h->mapptr + off, len);
	} else {
		emit("memcpy(tmp, (char *)mp[%d] + %zu, %zu);", ms, off, len);
		memcpy(tmp, (uint8_t *)h->mapptr + off, len);
		model_access(&M, h->store, -1, 0, -1, 0, 0);
		compare(h->store, h->off + off, tmp, len, "tmp");
	}
}

static void op_mem_rw(const struct op *o, int write)
{
	int ms = o->a % N_MEM, use;
	struct expect x = X_OK;
	struct mmem *h = &M.m[ms];
	unsigned need = write ? ACCEL_MEMORY_HOST_WRITE : ACCEL_MEMORY_HOST_READ;
	size_t bytes;
	accel_status_t st;

	if (!(use = mem_use(o, ms, &x)))
		return;
	if (use == 1 && (!M.st[h->store].owned_by_handles ||
			 h->flags == FLAGS_UNKNOWN))
		return;
	bytes = (o->flags & FL_FULL) ? mbytes(h) : o->x % (mbytes(h) + 1);
	if (o->flags & FL_OOR)
		bytes = mbytes(h) + 1 + o->y % 64;
	if (bytes > HB_SIZE)
		return;
	if (use == 1 && !(h->flags & need))
		x = (struct expect){ S(ACCEL_FAILED),
				     S(INVAL) | S(ACCEL_ERROR_NOT_SUPPORTED) };
	else if (use == 1 && bytes > mbytes(h))
		xfail(&x, S(INVAL));
	zero_ok(&x, bytes);
	if (write) {
		fill_pattern(src, bytes, o->pat);
		emit("fill_pattern(src, %zu, %uu);", bytes, o->pat);
		emit("st = accel_memory_write(m[%d], src, %zu);", ms, bytes);
		st = accel_memory_write(bm[ms], src, bytes);
	} else {
		emit("st = accel_memory_read(m[%d], tmp, %zu);", ms, bytes);
		st = accel_memory_read(bm[ms], tmp, bytes);
	}
	if (use == 1)
		sync_ok(st, M.st[h->store].dev, bytes);
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	model_access(&M, h->store, -1, write, write ? h->store : -1, h->off,
		     bytes);
	if (write)
		model_write(&M, h->store, h->off, src, bytes);
	else
		compare(h->store, h->off, tmp, bytes, "tmp");
}

static void op_mem_valid(const struct op *o)
{
	int ms = o->a % N_MEM, want, got;
	struct mmem *h = &M.m[ms];

	if (h->state == 0 ||
	    (h->state == 2 && (!(o->flags & FL_BAD) || KNOWN(KN_STALE))))
		return;
	want = h->state == 1 && hvalid(h);
	emit("CHECK(accel_memory_is_valid(m[%d]) == %d);", ms, want);
	got = accel_memory_is_valid(bm[ms]);
	if (got != want)
		disagree(0, "accel_memory_is_valid gave %d, the model %d", got,
			 want);
}

/* A handle of one kind given where another kind is wanted. */
static void op_wrong_kind(const struct op *o)
{
	int ss = o->a % N_STREAM, ms = o->a % N_MEM, es = o->a % N_EVENT;
	struct accel_memory_info info;
	accel_status_t st;

	if (KNOWN(KN_KIND))
		return;
	switch (o->b % 3) {
	case 0:		/* a stream as a memory handle */
		if (M.s[ss].live != 1)
			return;
		emit("st = accel_memory_get_info((accel_memory_t)%s, &info);",
		     sname(ss));
		st = accel_memory_get_info((accel_memory_t)bs[ss], &info);
		break;
	case 1:		/* a memory handle as a stream */
		if (M.m[ms].state != 1 || !hvalid(&M.m[ms]))
			return;
		emit("st = accel_stream_query(%s, (accel_stream_t)m[%d]);",
		     devname_c[M.st[M.m[ms].store].dev], ms);
		st = accel_stream_query(&devs[M.st[M.m[ms].store].dev],
					(accel_stream_t)bm[ms]);
		break;
	default:	/* an event as a pool */
		if (M.e[es].live != 1)
			return;
		emit("st = accel_pool_trim((accel_pool_t)%s);", ename(es));
		st = accel_pool_trim((accel_pool_t)be[es]);
		break;
	}
	check(st, X_FAIL(BADH));
}

/* ------------------------------------------------------------------ */
/*
 * Arrays (the F_ARRAY family; memory.h "Arrays", docs/libaccel.md "Memory
 * objects, host access and arrays"). An array is a layout over a store:
 * its entries lie at off + sum(index * stride); a transfer may move the
 * bytes between them too (docs: "moves the bytes the array spans"), so the
 * model leaves those undefined in the destination.
 */

static accel_array_t ba[N_ARR];
static accel_array_t na_;
static const char *arr_c[N_ARR] = { "a[0]", "a[1]", "a[2]", "a[3]", "a[4]",
				    "a[5]" };

struct layout {
	int ndim;
	size_t shape[A_DIMS];
	ptrdiff_t strides[A_DIMS];
	int given;		/* strides passed, not NULL */
	char order;
};

static size_t a_size(int ndim, const size_t *shape)
{
	size_t n = 1;

	for (int i = 0; i < ndim; i++)
		n *= shape[i];
	return n;
}

/* the bytes from the first entry to the end of the last */
static size_t a_span(const struct marr *a)
{
	size_t s = dtype_size[a->dt];

	if (!a_size(a->ndim, a->shape))
		return 0;
	for (int i = 0; i < a->ndim; i++)
		s += (a->shape[i] - 1) * a->strides[i];
	return s;
}

/* the byte offset of entry @k (C order) from the first */
static size_t a_pos(const struct marr *a, size_t k)
{
	size_t p = 0;

	for (int i = a->ndim - 1; i >= 0; i--) {
		p += (k % a->shape[i]) * a->strides[i];
		k /= a->shape[i];
	}
	return p;
}

/*
 * NumPy's flags: contiguous in C (f == 0) or F order; axes of length 1 do
 * not count, an empty array is both (accel_array_reshape(3)).
 */
static int a_contig(int ndim, const size_t *shape, const ptrdiff_t *strides,
		    size_t dsize, int f)
{
	size_t want = dsize;

	if (!a_size(ndim, shape))
		return 1;
	for (int j = 0; j < ndim; j++) {
		int i = f ? j : ndim - 1 - j;

		if (shape[i] == 1)
			continue;
		if (strides[i] != (ptrdiff_t)want)
			return 0;
		want *= shape[i];
	}
	return 1;
}

static int m_contig(const struct marr *a, int f)
{
	return a_contig(a->ndim, a->shape, a->strides, dtype_size[a->dt], f);
}

/* contiguous strides in @order */
static void contig_strides(int ndim, const size_t *shape, size_t dsize,
			   char order, ptrdiff_t *strides)
{
	size_t s = dsize;

	for (int j = 0; j < ndim; j++) {
		int i = order == 'F' ? j : ndim - 1 - j;

		strides[i] = s;
		s *= shape[i];
	}
}

static int a_valid(const struct marr *a)
{
	return M.st[a->store].live && !M.gfreed[a->group];
}

static int devside_kind(int akind)
{
	return akind == ACCEL_ARRAY_DEVICE || akind == ACCEL_ARRAY_MAPPED;
}

/* squeezed (axes of length 1 dropped) shapes and strides equal: Numba's
 * check_array_compatibility, which memory.h's "same dtype, shape and
 * strides" and the docs' "axes of length 1 aside" describe */
static int a_compatible(const struct marr *x, const struct marr *y)
{
	size_t sx[A_DIMS], sy[A_DIMS];
	ptrdiff_t tx[A_DIMS], ty[A_DIMS];
	int nx = 0, ny = 0;

	if (x->dt != y->dt)
		return 0;
	for (int i = 0; i < x->ndim; i++)
		if (x->shape[i] != 1) {
			sx[nx] = x->shape[i];
			tx[nx++] = x->strides[i];
		}
	for (int i = 0; i < y->ndim; i++)
		if (y->shape[i] != 1) {
			sy[ny] = y->shape[i];
			ty[ny++] = y->strides[i];
		}
	if (nx != ny)
		return 0;
	for (int i = 0; i < nx; i++)
		if (sx[i] != sy[i] || tx[i] != ty[i])
			return 0;
	return 1;
}

/*
 * A live slot from @start on whose array is compatible with slot @with's
 * and of @dev (or a host array), other than @with: two random slots seldom
 * are, so a transfer looks for a partner. -1 if none.
 */
static int compatible_slot(int with, int start, int devside, int dev)
{
	for (int j = 0; j < N_ARR; j++) {
		int i = (start + j) % N_ARR;
		const struct marr *c = &M.a[i];

		if (i == with || c->state != 1 || !a_valid(c) ||
		    c->store == M.a[with].store ||
		    !a_compatible(c, &M.a[with]))
			continue;
		if (devside && (!devside_kind(c->kind) || c->dev != dev))
			continue;
		if (!devside && c->kind != ACCEL_ARRAY_HOST &&
		    (c->kind == ACCEL_ARRAY_DEVICE || c->dev != dev))
			continue;
		return i;
	}
	return -1;
}

/* a layout from the op's numbers: 0-3 dimensions, small extents */
static void gen_layout(const struct op *o, size_t dsize, struct layout *l,
		       int *misaligned)
{
	static const size_t ext[8] = { 1, 2, 3, 4, 5, 7, 8, 0 };
	uint32_t x = o->x, y = o->y;
	size_t s = dsize;

	memset(l, 0, sizeof(*l));
	l->ndim = x % 4;
	for (int i = 0; i < l->ndim; i++)
		l->shape[i] = ext[(x >> (2 + 3 * i)) & 7];
	if (l->ndim == 1 && ((x >> 11) & 1))
		l->shape[0] = (x >> 12) % 1000;
	l->order = (y & 1) ? 'F' : 'C';
	l->given = !(o->flags & FL_FULL);
	/* given strides: contiguous, some axes with gaps */
	for (int j = 0; j < l->ndim; j++) {
		int i = l->order == 'F' ? j : l->ndim - 1 - j;

		if (l->given && ((y >> (1 + 2 * i)) & 3) == 3)
			s *= 2;
		l->strides[i] = s;
		s *= l->shape[i];
	}
	*misaligned = 0;
	if (l->given && (o->flags & FL_BAD))
		for (int i = 0; i < l->ndim; i++)
			if (l->shape[i] > 1) {
				l->strides[i] += 1;
				*misaligned = dsize > 1;
				break;
			}
}

static const char *shape_c(int ndim, const size_t *shape)
{
	static char buf[4][128];
	static int n;
	size_t len;

	n = (n + 1) % 4;
	snprintf(buf[n], sizeof(buf[n]), "(size_t[]){ ");
	for (int i = 0; i < ndim; i++) {
		len = strlen(buf[n]);
		snprintf(buf[n] + len, sizeof(buf[n]) - len, "%zu, ", shape[i]);
	}
	len = strlen(buf[n]);
	snprintf(buf[n] + len, sizeof(buf[n]) - len, "0 }");
	return buf[n];
}

static const char *strides_c(const struct layout *l)
{
	static char buf[2][128];
	static int n;
	size_t len;

	if (!l->given)
		return "NULL";
	n = (n + 1) % 2;
	snprintf(buf[n], sizeof(buf[n]), "(ptrdiff_t[]){ ");
	for (int i = 0; i < l->ndim; i++) {
		len = strlen(buf[n]);
		snprintf(buf[n] + len, sizeof(buf[n]) - len, "%td, ",
			 l->strides[i]);
	}
	len = strlen(buf[n]);
	snprintf(buf[n] + len, sizeof(buf[n]) - len, "0 }");
	return buf[n];
}

/*
 * An array slot an op may use: live (1); live over freed storage (2, the
 * refusal in *x: memory.h, every array function but the release fails with
 * ACCEL_ERROR_INVALID_HANDLE, the *_like constructors too); released, under
 * FL_BAD (2). 0: skip.
 */
static int arr_use(const struct op *o, int as, struct expect *x)
{
	struct marr *a = &M.a[as];

	if (a->state)
		note_store(a->state == 1 ? "array on" : "released array on",
			   a->store, !a_valid(a));
	if (a->state == 1 && a_valid(a))
		return 1;
	if (a->state == 1) {
		xfail(x, S(BADH));
		return 2;
	}
	if (a->state == 0 || !(o->flags & FL_BAD) || KNOWN(KN_STALE))
		return 0;
	xfail(x, S(BADH));
	return 2;
}

static void arr_set(int as, const struct marr *a)
{
	M.a[as] = *a;
	M.a[as].state = 1;
	M.st[a->store].handles++;
	if (!M.st[a->store].owned_by_handles)
		M.st[a->store].wraps++;
}

/* as mem_drop(): the last handle on owned storage frees it */
static void arr_drop(int as)
{
	struct marr *a = &M.a[as];
	struct store *s = &M.st[a->store];

	a->state = 2;
	s->handles--;
	if (!s->owned_by_handles)
		s->wraps--;
	else if (!s->handles && !s->mapped)
		model_free_store(&M, a->store);
}

static int new_group(void)
{
	return M.ngroup < MAX_STORE - 1 ? M.ngroup++ : MAX_STORE - 1;
}

/*
 * What the library says of a live array against the model: ndim, shape,
 * size, dtype, the strides of every axis longer than one entry (the others
 * place no entry), data NULL exactly when empty. 0 on a disagreement.
 */
static int arr_check_info(int as, struct accel_array_info *i)
{
	struct marr *a = &M.a[as];
	size_t n = a_size(a->ndim, a->shape);
	accel_status_t st;
	int ok;

	emit("OK(accel_array_get_info(%s, &ainfo));", arr_c[as]);
	st = accel_array_get_info(ba[as], i);
	if (!check(st, X_OK))
		return 0;
	ok = i->ndim == a->ndim && i->size == n &&
	     i->dtype == accel_dtype(dtypes[a->dt]) &&
	     i->nbytes == n * dtype_size[a->dt] && (!i->data == !n);
	for (int k = 0; ok && k < a->ndim; k++)
		ok = i->shape[k] == a->shape[k] &&
		     (a->shape[k] <= 1 || !n || i->strides[k] == a->strides[k]);
	emit("CHECK(ainfo.ndim == %d && ainfo.size == %zu);", a->ndim, n);
	if (!ok)
		disagree(0, "array info: ndim %d size %zu nbytes %zu data %p shape[0] %zu strides[0] %td; the model has ndim %d size %zu shape[0] %zu strides[0] %td dtype %s",
			 i->ndim, i->size, i->nbytes, i->data, i->shape[0],
			 i->strides[0], a->ndim, n, a->shape[0], a->strides[0],
			 dtype_c[a->dt]);
	return ok;
}

/* The array's data through the model: entries of @a at host pointer @p. */
static void arr_compare(const struct marr *a, const uint8_t *p)
{
	size_t n = a_size(a->ndim, a->shape), ds = dtype_size[a->dt];

	for (size_t k = 0; k < n && !R->failed; k++)
		compare(a->store, a->off + a_pos(a, k), p + a_pos(a, k), ds,
			"ainfo.data");
}

/*
 * The model of an array transfer from @s to @d (compatible layouts) on
 * stream @sid (-1: synchronous): the destination's span is undefined, then
 * every entry copied.
 */
static void arr_copy_model(const struct marr *d, const struct marr *s,
			   int sid)
{
	size_t n = a_size(s->ndim, s->shape), ds = dtype_size[s->dt];
	size_t dspan = a_span(d);

	model_access(&M, s->store, sid, 0, d->store, d->off, dspan);
	model_access(&M, d->store, sid, 1, d->store, d->off, dspan);
	model_undefine(&M, d->store, d->off, dspan);
	for (size_t k = 0; k < n; k++)
		model_copy(&M, d->store, d->off + a_pos(d, k), s->store,
			   s->off + a_pos(s, k), ds);
	if (sid >= 0)
		model_queue(&M, sid);
}

static int store_kind_of(int akind)
{
	return akind == ACCEL_ARRAY_DEVICE ? K_POOLDEF :
	       akind == ACCEL_ARRAY_HOST ? -1 : K_HOST;
}

/* a live stream of @dev for an op with FL_STREAM, else -1 */
static int arr_stream(const struct op *o, int ss, int dev)
{
	if (!(o->flags & FL_STREAM) || M.s[ss].live != 1 || M.s[ss].dev != dev)
		return -1;
	return ss;
}

/* accel_{device,pinned,mapped,host}_array(_like, _flags) */
static void op_arr_new(const struct op *o, int d)
{
	int as = o->a % N_ARR, kind = o->b % 4, dt = o->c % 4;
	int like = (o->c / 4) % N_ARR, ss = (o->c / 32) % N_STREAM;
	int use_like = (o->z & 3) == 0 && kind != ACCEL_ARRAY_HOST;
	unsigned mflags = (o->z >> 2) & 3;
	int null_dtype = dt == 3 && ((o->z >> 5) & 1);
	int own_data = (o->z >> 6) & 1, ro = (o->z >> 7) & 1, mis, s;
	struct expect x = X_OK;
	struct layout l;
	struct marr a = { 0 };
	struct accel_array_info info;
	accel_stream_t stream = NULL;
	accel_dtype_t dtype;
	uint8_t *data = NULL;
	accel_status_t st;
	const char *sc = "NULL";

	if (M.a[as].state == 1)
		return;
	if (kind == ACCEL_ARRAY_DEVICE || kind == ACCEL_ARRAY_MAPPED) {
		ss = arr_stream(o, ss, d);
		if (ss >= 0) {
			stream = bs[ss];
			sc = sname(ss);
		}
	} else {
		ss = -1;
	}
	if (use_like) {
		int u = arr_use(o, like, &x);

		if (!u)
			return;
		if (u == 1)
			dt = M.a[like].dt;
		switch (kind) {
		case ACCEL_ARRAY_DEVICE:
			emit("st = accel_device_array_like(%s, %s, %s, &na); if (st == ACCEL_SUCCESS) %s = na;",
			     devname_c[d], arr_c[like], sc, arr_c[as]);
			st = accel_device_array_like(&devs[d], ba[like], stream,
						     &na_);
			break;
		case ACCEL_ARRAY_PINNED:
			emit("st = accel_pinned_array_like(%s, %s, &na); if (st == ACCEL_SUCCESS) %s = na;",
			     devname_c[d], arr_c[like], arr_c[as]);
			st = accel_pinned_array_like(&devs[d], ba[like], &na_);
			break;
		default:
			if (KNOWN(KN_EMPTYMAP) && M.a[like].state == 1 &&
			    !a_size(M.a[like].ndim, M.a[like].shape))
				return;
			emit("st = accel_mapped_array_like(%s, %s, %s, &na); if (st == ACCEL_SUCCESS) %s = na;",
			     devname_c[d], arr_c[like], sc, arr_c[as]);
			st = accel_mapped_array_like(&devs[d], ba[like], stream,
						     &na_);
			break;
		}
		if (st == ACCEL_SUCCESS)
			ba[as] = na_;
		if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
			return;
		/*
		 * memory.h: "the shape and dtype of @like, contiguous with its
		 * axes in @like's stride order": the strides are the library's,
		 * checked to be dense in @like's order where it has one
		 */
		emit("OK(accel_array_get_info(%s, &ainfo));", arr_c[as]);
		if (!check(accel_array_get_info(ba[as], &info), X_OK))
			return;
		a.ndim = M.a[like].ndim;
		memcpy(a.shape, M.a[like].shape, sizeof(a.shape));
		for (int i = 0; i < a.ndim; i++)
			a.strides[i] = info.strides[i];
		a.dt = dt;
		if (!a_contig(a.ndim, a.shape, a.strides, dtype_size[dt], 0) &&
		    !a_contig(a.ndim, a.shape, a.strides, dtype_size[dt], 1) &&
		    a.ndim <= 2)
			disagree(0, "a *_like array is not contiguous");
		if (m_contig(&M.a[like], 0) && !m_contig(&M.a[like], 1) &&
		    !a_contig(a.ndim, a.shape, a.strides, dtype_size[dt], 0))
			disagree(0, "like a C-contiguous array, not C-contiguous");
		if (m_contig(&M.a[like], 1) && !m_contig(&M.a[like], 0) &&
		    !a_contig(a.ndim, a.shape, a.strides, dtype_size[dt], 1))
			disagree(0, "like an F-contiguous array, not F-contiguous");
	} else {
		gen_layout(o, dtype_size[dt], &l, &mis);
		if (mis)
			xfail(&x, S(INVAL));
		if (kind == ACCEL_ARRAY_MAPPED && (o->flags & FL_BAD) &&
		    ((o->z >> 4) & 1) && mflags) {
			mflags |= 1u << 7;	/* not an ACCEL_ARRAY_* flag */
			xfail(&x, S(INVAL));
		}
		dtype = null_dtype ? NULL : accel_dtype(dtypes[dt]);
		a.ndim = l.ndim;
		memcpy(a.shape, l.shape, sizeof(a.shape));
		if (l.given)
			memcpy(a.strides, l.strides, sizeof(a.strides));
		else
			contig_strides(l.ndim, l.shape, dtype_size[dt], l.order,
				       a.strides);
		a.dt = dt;
		switch (kind) {
		case ACCEL_ARRAY_DEVICE:
			emit("st = accel_device_array(%s, %d, %s, %s, %s, '%c', %s, &na); if (st == ACCEL_SUCCESS) %s = na;",
			     devname_c[d], l.ndim, shape_c(l.ndim, l.shape),
			     null_dtype ? "NULL" : dtype_c[dt], strides_c(&l),
			     l.order, sc, arr_c[as]);
			st = accel_device_array(&devs[d], l.ndim, l.shape, dtype,
						l.given ? l.strides : NULL,
						l.order, stream, &na_);
			break;
		case ACCEL_ARRAY_PINNED:
			emit("st = accel_pinned_array(%s, %d, %s, %s, %s, '%c', &na); if (st == ACCEL_SUCCESS) %s = na;",
			     devname_c[d], l.ndim, shape_c(l.ndim, l.shape),
			     null_dtype ? "NULL" : dtype_c[dt], strides_c(&l),
			     l.order, arr_c[as]);
			st = accel_pinned_array(&devs[d], l.ndim, l.shape, dtype,
						l.given ? l.strides : NULL,
						l.order, &na_);
			break;
		case ACCEL_ARRAY_MAPPED:
			if (KNOWN(KN_EMPTYMAP) && !a_size(l.ndim, l.shape))
				return;
			emit("st = accel_mapped_array_flags(%s, %d, %s, %s, %s, '%c', %s, 0x%x, &na); if (st == ACCEL_SUCCESS) %s = na;",
			     devname_c[d], l.ndim, shape_c(l.ndim, l.shape),
			     null_dtype ? "NULL" : dtype_c[dt], strides_c(&l),
			     l.order, sc, mflags, arr_c[as]);
			st = accel_mapped_array_flags(&devs[d], l.ndim, l.shape,
						      dtype,
						      l.given ? l.strides : NULL,
						      l.order, stream, mflags,
						      &na_);
			break;
		default:
			if (!own_data && ro && KNOWN(KN_ROHOST))
				return;
			if (own_data) {
				/* the caller's data, alive to the end */
				data = malloc(a_span(&a) + 1);
				fill_pattern(data, a_span(&a), o->pat);
				emit("np = malloc(%zu); fill_pattern(np, %zu, %uu);",
				     a_span(&a) + 1, a_span(&a), o->pat);
			}
			emit("st = accel_host_array(%s, %d, %s, %s, %s, '%c', %d, &na); if (st == ACCEL_SUCCESS) %s = na;",
			     data ? "np" : "NULL", l.ndim,
			     shape_c(l.ndim, l.shape),
			     null_dtype ? "NULL" : dtype_c[dt], strides_c(&l),
			     l.order, ro, arr_c[as]);
			st = accel_host_array(data, l.ndim, l.shape, dtype,
					      l.given ? l.strides : NULL,
					      l.order, ro, &na_);
			break;
		}
		if (st == ACCEL_SUCCESS)
			ba[as] = na_;
		if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
			return;
		emit("OK(accel_array_get_info(%s, &ainfo));", arr_c[as]);
		if (!check(accel_array_get_info(ba[as], &info), X_OK))
			return;
		if (!l.given &&
		    !a_contig(a.ndim, a.shape, info.strides, dtype_size[dt],
			      l.order == 'F'))
			disagree(0, "an array made with NULL strides in order %c is not contiguous in it",
				 l.order);
	}
	/* memory.h, struct accel_array_info: what the array is */
	if (info.kind != (enum accel_array_kind)kind ||
	    info.device != (kind == ACCEL_ARRAY_HOST ? -1 : devs[d].id) ||
	    info.stream != stream ||
	    (kind == ACCEL_ARRAY_HOST && !use_like && info.readonly != ro) ||
	    (data && a_span(&a) && info.data != data))
		disagree(0, "array info: kind %d device %d stream %p readonly %d data %p; the model has kind %d device %d stream %p readonly %d",
			 info.kind, info.device, (void *)info.stream,
			 info.readonly, info.data, kind,
			 kind == ACCEL_ARRAY_HOST ? -1 : devs[d].id,
			 (void *)stream, ro);
	s = model_new_store(&M, store_kind_of(kind), d, a_span(&a));
	if (s < 0)
		return;
	M.st[s].owned_by_handles = 1;
	M.st[s].addr = (uintptr_t)info.data;
	a.kind = kind;
	a.dev = d;
	a.store = s;
	a.readonly = kind == ACCEL_ARRAY_HOST && !use_like && ro;
	a.group = new_group();
	a.ss = ss;
	a.sid = ss >= 0 ? M.s[ss].sid : -1;
	arr_set(as, &a);
	arr_check_info(as, &info);
	if (data)
		model_write(&M, s, 0, data, a_span(&a));
}

/* The host writes (o->pat & 1) or reads a host-side array's entries. */
static void op_arr_host(const struct op *o, int write)
{
	int as = o->a % N_ARR;
	struct marr *a = &M.a[as];
	struct accel_array_info info;
	size_t n, ds;
	uint8_t *p;

	/* host-side storage only: pinned, mapped, host arrays, wraps of
	 * pinned memory */
	if (a->state != 1 || !a_valid(a) ||
	    (M.st[a->store].kind != K_HOST && M.st[a->store].kind != -1))
		return;
	if (!arr_check_info(as, &info) || !info.data)
		return;
	p = info.data;
	n = a_size(a->ndim, a->shape);
	ds = dtype_size[a->dt];
	if (write) {
		if (a->readonly)
			return;
		model_access(&M, a->store, -1, 1, a->store, a->off, a_span(a));
		emit("/* the host writes %zu entries of %s */", n, arr_c[as]);
		for (size_t k = 0; k < n; k++) {
			fill_pattern(p + a_pos(a, k), ds, o->pat + k);
			model_write(&M, a->store, a->off + a_pos(a, k),
				    p + a_pos(a, k), ds);
		}
		return;
	}
	/* a stream may still write it: nothing to compare yet */
	if (model_access(&M, a->store, -1, 0, -1, 0, 0) ||
	    pending_elsewhere(a->store, -1))
		return;
	arr_compare(a, p);
}

/*
 * memory.h, accel_memory_map: "Until as many accel_memory_unmap() calls,
 * the device does not use the storage: copies to or from it fail" (array
 * transfers too, IN_USE as for memory handles); nothing to move may pass.
 */
static void arr_mapped(struct expect *x, const struct marr *a, size_t n)
{
	if (!M.st[a->store].mapped)
		return;
	xfail(x, S(INUSE));
	zero_ok(x, n);
}

/*
 * Two empty arrays of the same dtype: the contract's "same shape and
 * strides (axes of length 1 aside)" does not say how empty shapes compare,
 * (1, 0) against (0, 1) say; nothing moves either way, so refusing
 * (INVALID_VALUE) is allowed as well as success.
 */
static void empty_pair(struct expect *x, const struct marr *d,
		       const struct marr *s)
{
	if (x->st == S(ACCEL_SUCCESS) && d->dt == s->dt &&
	    !a_size(d->ndim, d->shape) && !a_size(s->ndim, s->shape))
		*x = (struct expect){ S(ACCEL_SUCCESS) | S(ACCEL_FAILED), S(INVAL) };
}

/* accel_array_copy_to_device(dst a, src b, stream c) */
static void op_arr_to_dev(const struct op *o)
{
	int da = o->a % N_ARR, sa = o->b % N_ARR, ss = o->c % N_STREAM;
	int ud, us, sid = -1, dev;
	struct expect x = X_OK;
	struct marr *d = &M.a[da], *s = &M.a[sa];
	accel_stream_t stream = NULL;
	accel_status_t st;

	if (!(o->flags & FL_BAD) && M.a[da].state == 1 && a_valid(d)) {
		/* a source that fits (any kind: pageable, pinned, device) */
		for (int j = 0; j < N_ARR; j++) {
			int i = (sa + j) % N_ARR;

			if (i != da && M.a[i].state == 1 && a_valid(&M.a[i]) &&
			    M.a[i].store != d->store &&
			    a_compatible(&M.a[i], d) &&
			    (M.a[i].dev == d->dev ||
			     M.a[i].kind == ACCEL_ARRAY_HOST)) {
				sa = i;
				s = &M.a[sa];
				break;
			}
		}
	}
	if (da == sa || !(ud = arr_use(o, da, &x)) || !(us = arr_use(o, sa, &x)))
		return;
	dev = d->dev;
	if (ud == 1 && us == 1) {
		if (d->store == s->store)
			return;	/* overlapping views: undefined */
		if (!devside_kind(d->kind)) {
			if (!(o->flags & FL_BAD))
				return;
			xfail(&x, S(INVAL));
		}
		if (!a_compatible(d, s)) {
			if (!(o->flags & FL_BAD))
				return;
			if (a_size(d->ndim, d->shape) ||
			    a_size(s->ndim, s->shape) || d->dt != s->dt)
				xfail(&x, S(INVAL));
			else	/* nothing to move: refusing is fine too */
				x = (struct expect){ S(ACCEL_SUCCESS) | S(ACCEL_FAILED),
						     S(INVAL) };
		}
		if (s->dev != dev && s->kind != ACCEL_ARRAY_HOST)
			return;	/* another device's memory: not generated */
		empty_pair(&x, d, s);
		arr_mapped(&x, d, a_size(s->ndim, s->shape));
		arr_mapped(&x, s, a_size(s->ndim, s->shape));
	} else if (d->state == 1 && s->state == 1 &&
		   (!devside_kind(d->kind) || !a_compatible(d, s))) {
		/* over freed storage and a bad pair: either reason's code */
		xfail(&x, S(INVAL));
	}
	ss = arr_stream(o, ss, dev);
	if (ss >= 0) {
		stream = bs[ss];
		sid = M.s[ss].sid;
	}
	emit("st = accel_array_copy_to_device(%s, %s, %s);", arr_c[da],
	     arr_c[sa], ss >= 0 ? sname(ss) : "NULL");
	st = accel_array_copy_to_device(ba[da], ba[sa], stream);
	if (sid < 0 && ud == 1 && us == 1)
		sync_ok(st, dev, a_span(s));
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	arr_copy_model(d, s, sid);
	if (sid >= 0)
		M.s[ss].synced = 0;
}

/* accel_array_copy_to_host(src a, dst b or a new array, stream c) */
static void op_arr_to_host(const struct op *o)
{
	int sa = o->a % N_ARR, da = (o->b / 2) % N_ARR, ss = o->c % N_STREAM;
	int fresh = o->b & 1, ud = 1, us, sid = -1, dev;
	struct expect x = X_OK;
	struct marr *s = &M.a[sa], *d = &M.a[da];
	struct accel_array_info info;
	accel_array_t host = NULL;
	accel_stream_t stream = NULL;
	accel_status_t st;

	if (!fresh && !(o->flags & FL_BAD) && M.a[sa].state == 1 &&
	    a_valid(s) && devside_kind(s->kind)) {
		int i = compatible_slot(sa, da, 0, s->dev);

		if (i >= 0 && !M.a[i].readonly) {
			da = i;
			d = &M.a[da];
		}
	}
	if ((!fresh && da == sa) || !(us = arr_use(o, sa, &x)))
		return;
	if (!fresh && !(ud = arr_use(o, da, &x)))
		return;
	dev = s->dev;
	if (us == 1 && !devside_kind(s->kind))
		return;	/* a host-side source: not generated */
	if (!fresh && ud == 1 && us == 1) {
		if (d->store == s->store || (d->dev != dev &&
					     d->kind != ACCEL_ARRAY_HOST))
			return;
		if (d->kind == ACCEL_ARRAY_DEVICE || d->readonly) {
			/* memory.h: "a host (or pinned, or mapped) array";
			 * a read-only array: "copies into it fail" */
			if (!(o->flags & FL_BAD))
				return;
			xfail(&x, S(INVAL));
		}
		if (!a_compatible(d, s)) {
			if (!(o->flags & FL_BAD))
				return;
			if (a_size(d->ndim, d->shape) ||
			    a_size(s->ndim, s->shape) || d->dt != s->dt)
				xfail(&x, S(INVAL));
			else
				x = (struct expect){ S(ACCEL_SUCCESS) | S(ACCEL_FAILED),
						     S(INVAL) };
		}
	} else if (!fresh && d->state == 1 && s->state == 1 &&
		   (d->kind == ACCEL_ARRAY_DEVICE || d->readonly ||
		    !a_compatible(d, s))) {
		/* over freed storage and a bad pair: either reason's code */
		xfail(&x, S(INVAL));
	}
	if (!fresh && ud == 1 && us == 1)
		empty_pair(&x, d, s);
	if (us == 1)
		arr_mapped(&x, s, a_size(s->ndim, s->shape));
	if (!fresh && ud == 1 && us == 1)
		arr_mapped(&x, d, a_size(s->ndim, s->shape));
	if (!fresh) {
		ss = arr_stream(o, ss, dev);
		if (ss >= 0) {
			stream = bs[ss];
			sid = M.s[ss].sid;
		}
	}
	emit("st = accel_array_copy_to_host(%s, %s, %s, &na);", arr_c[sa],
	     fresh ? "NULL" : arr_c[da], ss >= 0 && !fresh ? sname(ss) : "NULL");
	st = accel_array_copy_to_host(ba[sa], fresh ? NULL : ba[da], stream,
				      &host);
	if (sid < 0 && ud == 1 && us == 1)
		sync_ok(st, dev, a_span(s));
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	if (!fresh) {
		if (host != ba[da])
			disagree(0, "copy_to_host into an array did not give it back as *host");
		arr_copy_model(d, s, sid);
		if (sid >= 0)
			M.s[ss].synced = 0;
		return;
	}
	/* a new host array, the source's shape and strides, its data */
	emit("OK(accel_array_get_info(na, &ainfo));");
	if (!check(accel_array_get_info(host, &info), X_OK))
		return;
	if (info.kind != ACCEL_ARRAY_HOST || info.ndim != s->ndim)
		disagree(0, "copy_to_host made kind %d ndim %d, not a host array of ndim %d",
			 info.kind, info.ndim, s->ndim);
	for (int i = 0; i < s->ndim && !R->failed; i++)
		if (info.shape[i] != s->shape[i] ||
		    (s->shape[i] > 1 && a_size(s->ndim, s->shape) &&
		     info.strides[i] != s->strides[i]))
			disagree(0, "copy_to_host made axis %d %zu/%td, the source has %zu/%td",
				 i, info.shape[i], info.strides[i], s->shape[i],
				 s->strides[i]);
	if (!R->failed && info.data) {
		model_access(&M, s->store, -1, 0, -1, 0, 0);
		arr_compare(s, info.data);
	}
	emit("OK(accel_array_release(na));");
	check(accel_array_release(host), X_OK);
}

/* accel_to_device / accel_to_device_ex(src a) into slot b */
static void op_arr_to_device(const struct op *o, int d)
{
	int sa = o->a % N_ARR, as = o->b % N_ARR, ss = o->c % N_STREAM;
	int ex = o->z & 1, copy = (o->z >> 1) & 1, us, sid = -1, same, s;
	struct expect x = X_OK;
	struct marr *src = &M.a[sa], a;
	struct accel_array_info info;
	accel_stream_t stream = NULL;
	accel_status_t st;

	if (M.a[as].state == 1 || as == sa || !(us = arr_use(o, sa, &x)))
		return;
	if (us == 1 && src->dev != d && src->kind != ACCEL_ARRAY_HOST)
		return;	/* another device's memory: not generated */
	ss = arr_stream(o, ss, d);
	if (ss >= 0) {
		stream = bs[ss];
		sid = M.s[ss].sid;
	}
	if (ex) {
		emit("st = accel_to_device_ex(%s, %s, %s, %d, &na); if (st == ACCEL_SUCCESS) %s = na;",
		     devname_c[d], arr_c[sa], ss >= 0 ? sname(ss) : "NULL", copy,
		     arr_c[as]);
		st = accel_to_device_ex(&devs[d], ba[sa], stream, copy, &na_);
	} else {
		emit("st = accel_to_device(%s, %s, %s, &na); if (st == ACCEL_SUCCESS) %s = na;",
		     devname_c[d], arr_c[sa], ss >= 0 ? sname(ss) : "NULL",
		     arr_c[as]);
		st = accel_to_device(&devs[d], ba[sa], stream, &na_);
	}
	if (st == ACCEL_SUCCESS)
		ba[as] = na_;
	/*
	 * memory.h, accel_to_device_ex: an array usable by the device as it
	 * is (a device array of @device, a mapped array of it) comes back
	 * as a new handle on the same memory, nothing copied
	 */
	same = ex && us == 1 && devside_kind(src->kind) && src->dev == d;
	if (us == 1 && !same && (copy || !ex))
		arr_mapped(&x, src, a_size(src->ndim, src->shape));
	if (us == 1 && sid < 0 && !same && (copy || !ex))
		sync_ok(st, d, a_span(src));
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	a = *src;
	if (same) {
		arr_set(as, &a);
		arr_check_info(as, &info);
		if (!R->failed && info.data != (void *)(M.st[src->store].addr +
							src->off) &&
		    info.data)
			disagree(0, "to_device_ex of an array on the device gave other memory");
		return;
	}
	s = model_new_store(&M, K_POOLDEF, d, a_span(src));
	if (s < 0)
		return;
	M.st[s].owned_by_handles = 1;
	a.kind = ACCEL_ARRAY_DEVICE;
	a.dev = d;
	a.store = s;
	a.off = 0;
	a.readonly = 0;
	a.group = new_group();
	a.ss = ss;
	a.sid = sid;
	arr_set(as, &a);
	if (!arr_check_info(as, &info))
		return;
	M.st[s].addr = (uintptr_t)info.data;
	if (info.kind != ACCEL_ARRAY_DEVICE)
		disagree(0, "to_device made kind %d", info.kind);
	if (!ex || copy) {
		arr_copy_model(&M.a[as], src, sid);
		if (sid >= 0)
			M.s[ss].synced = 0;
	}
}

/* a view of @a (slot as) with layout @v into slot @vs: checks and models */
static void arr_view(int as, int vs, const struct marr *v,
		     struct accel_array_info *info)
{
	arr_set(vs, v);
	M.a[vs].ss = -1;
	M.a[vs].sid = -1;
	info->kind = v->kind;
	if (!arr_check_info(vs, info))
		return;
	if (info->data && info->data != (void *)(M.st[v->store].addr + v->off))
		disagree(0, "a view of %s does not start at its first entry",
			 arr_c[as]);
}

static char order_of(uint32_t y)
{
	return "CFAC"[y & 3];
}

/* accel_array_reshape(a) into slot b, or accel_array_ravel (@ravel) */
static void op_arr_reshape(const struct op *o, int ravel)
{
	int as = o->a % N_ARR, vs = o->b % N_ARR, use, neg = -1, ok, f;
	struct expect x = X_OK;
	struct marr *a = &M.a[as], v;
	struct accel_array_info info;
	size_t n, shape[A_DIMS], arg[A_DIMS];
	char order = order_of(o->y);
	int ndim, same = 0;
	accel_status_t st;

	if (M.a[vs].state == 1 || vs == as || !(use = arr_use(o, as, &x)))
		return;
	n = use == 1 ? a_size(a->ndim, a->shape) : 1;
	/* a shape of the same size: n = d1 * d2 * rest */
	ndim = ravel ? 1 : 1 + o->x % 3;
	shape[0] = n;
	if (ndim >= 2) {
		size_t d1 = 1 + (o->x >> 2) % 8, d2 = 1 + (o->x >> 5) % 4;

		while (n % d1)
			d1--;
		shape[0] = d1;
		shape[1] = n / d1;
		if (ndim == 3) {
			while (shape[1] % d2)
				d2--;
			shape[2] = shape[1] / d2;
			shape[1] = d2;
		}
		if (!n) {	/* size 0: (0, k, ..) */
			shape[0] = 0;
			shape[1] = 1 + (o->x >> 8) % 3;
			if (ndim == 3)
				shape[2] = 2;
		}
	}
	memcpy(arg, shape, sizeof(arg));
	if (!ravel && n && ((o->y >> 2) & 1)) {
		neg = (o->y >> 3) % ndim;
		arg[neg] = (size_t)-1;
	}
	if (!ravel && (o->flags & FL_BAD) && use == 1) {
		/* another size, with no -1 to absorb it */
		memcpy(arg, shape, sizeof(arg));
		arg[0] = shape[0] + 1 + (o->z % 3);
		xfail(&x, S(INVAL));
	}
	if (use == 1) {
		/*
		 * memory.h: "An array not contiguous in @order would need a
		 * copy: the call fails" (ravel: "for a one-dimensional array
		 * with gaps too"); 'A': whichever the array is
		 */
		ok = order == 'C' ? m_contig(a, 0) : order == 'F' ?
		     m_contig(a, 1) : m_contig(a, 0) || m_contig(a, 1);
		same = !ravel && ndim == a->ndim &&
		       !memcmp(shape, a->shape, ndim * sizeof(*shape));
		if (!ok && same && x.st == S(ACCEL_SUCCESS))
			/*
			 * the same shape needs no copy in any order: Numba's
			 * reshape returns such a view as it is, NumPy too;
			 * the header's "would need a copy" allows refusing
			 */
			x = (struct expect){ S(ACCEL_SUCCESS) | S(ACCEL_FAILED),
					     S(INVAL) };
		else if (!ok)
			xfail(&x, S(INVAL));
	}
	if (ravel) {
		emit("st = accel_array_ravel(%s, '%c', &na); if (st == ACCEL_SUCCESS) %s = na;",
		     arr_c[as], order, arr_c[vs]);
		st = accel_array_ravel(ba[as], order, &na_);
	} else {
		emit("st = accel_array_reshape(%s, %d, %s, '%c', &na); if (st == ACCEL_SUCCESS) %s = na;",
		     arr_c[as], ndim, shape_c(ndim, arg), order, arr_c[vs]);
		st = accel_array_reshape(ba[as], ndim, arg, order, &na_);
	}
	if (st == ACCEL_SUCCESS)
		ba[vs] = na_;
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	/* read in @order: C, or F, or for 'A' whichever the array is */
	f = order == 'F' || (order == 'A' && !m_contig(a, 0));
	v = *a;
	v.ndim = ndim;
	memcpy(v.shape, shape, sizeof(v.shape));
	if (!same)	/* else the same entries where they were */
		contig_strides(ndim, shape, dtype_size[a->dt], f ? 'F' : 'C',
			       v.strides);
	arr_view(as, vs, &v, &info);
}

/* the live stream slot a stream handle is, or -1 */
static int stream_slot(accel_stream_t s)
{
	for (int i = 0; i < N_STREAM; i++)
		if (s && M.s[i].live == 1 && bs[i] == s)
			return i;
	return -1;
}

/*
 * accel_array_get_interface(a) and accel_array_from_interface() into slot
 * b: the interface checked, then a view made of it, or of it spoiled
 * (FL_OOR: an extent past the storage; FL_BAD: a misaligned first entry or
 * stride); FL_FULL: a 1-D view to the storage's very end.
 */
static void op_arr_iface(const struct op *o)
{
	int as = o->a % N_ARR, vs = o->b % N_ARR, use, has, want, sync;
	struct expect x = X_OK;
	struct marr *a = &M.a[as], v;
	struct accel_array_interface fi;
	struct accel_array_info info;
	size_t ds, room;
	accel_status_t st;

	if (!(use = arr_use(o, as, &x)))
		return;
	want = use == 1 && devside_kind(a->kind);
	emit("CHECK(accel_array_has_interface(%s) == %d);", arr_c[as], want);
	has = accel_array_has_interface(ba[as]);
	if (has != want)
		disagree(0, "accel_array_has_interface gave %d, the model %d",
			 has, want);
	if (use == 1 && !want)
		x = (struct expect){ S(ACCEL_FAILED), S(INVAL) |
				     S(ACCEL_ERROR_NOT_SUPPORTED) };
	emit("st = accel_array_get_interface(%s, &iface);", arr_c[as]);
	st = accel_array_get_interface(ba[as], &fi);
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	ds = dtype_size[a->dt];
	/* memory.h, struct accel_array_interface; docs: "strides is absent
	 * (has_strides 0) for C-contiguous arrays" */
	int bad = fi.version != 3 || fi.ndim != a->ndim ||
		  strcmp(fi.typestr, accel_dtype_typestr(accel_dtype(dtypes[a->dt]))) ||
		  fi.readonly != a->readonly ||
		  (!a_size(a->ndim, a->shape) != !fi.data) ||
		  (fi.data && fi.data != (void *)(M.st[a->store].addr + a->off)) ||
		  (!fi.has_strides && !m_contig(a, 0)) ||
		  (a->ss >= 0 && a->sid == M.s[a->ss].sid &&
		   M.s[a->ss].live == 1 && fi.stream != bs[a->ss]);
	for (int i = 0; i < a->ndim && !bad; i++)
		bad = fi.shape[i] != a->shape[i] ||
		      (fi.has_strides && a->shape[i] > 1 &&
		       fi.strides[i] != a->strides[i]);
	if (bad) {
		disagree(0, "interface: version %d ndim %d typestr %s data %p has_strides %d readonly %d; the model has ndim %d dtype %s",
			 fi.version, fi.ndim, fi.typestr, fi.data,
			 fi.has_strides, fi.readonly, a->ndim, dtype_c[a->dt]);
		return;
	}
	if (M.a[vs].state == 1 || vs == as || !M.st[a->store].owned_by_handles)
		return;	/* views of wrapped memory: see the notes */
	if ((o->flags & (FL_FULL | FL_OOR)) && !M.st[a->store].addr)
		return;	/* empty storage: no address to start from */
	v = *a;
	if (!fi.has_strides)
		contig_strides(fi.ndim, fi.shape, ds, 'C', fi.strides);
	room = M.st[a->store].size - a->off;
	if (o->flags & (FL_FULL | FL_OOR)) {
		/* one axis from the first entry to the storage's end, or past
		 * it by far more than any allocation could round up to */
		fi.ndim = 1;
		fi.shape[0] = room / ds;
		if (o->flags & FL_OOR) {
			fi.shape[0] += 1 + (8192 + o->z % 4096) / ds;
			xfail(&x, S(INVAL));
		}
		fi.has_strides = (o->z >> 12) & 1;
		fi.strides[0] = ds;
		fi.data = (char *)M.st[a->store].addr + a->off;
		if (!fi.shape[0])
			fi.data = NULL;
	}
	if ((o->flags & FL_BAD) && fi.data && ds > 1) {
		if ((o->z >> 13) & 1) {
			fi.data = (char *)fi.data + 1 + o->z % (ds - 1);
			xfail(&x, S(INVAL));
		} else {
			for (int i = 0; i < fi.ndim; i++)
				if (fi.shape[i] > 1) {
					fi.has_strides = 1;
					fi.strides[i] += 1 + o->z % (ds - 1);
					xfail(&x, S(INVAL));
					break;
				}
		}
	}
	sync = (o->y >> 5) & 1;
	if (sync && fi.stream && stream_slot(fi.stream) < 0)
		sync = 0;	/* the stream is gone: not generated */
	emit("/* interface of %s: ndim %d shape[0] %zu data +%td has_strides %d */",
	     arr_c[as], fi.ndim, fi.ndim ? fi.shape[0] : 0,
	     fi.data ? (char *)fi.data - (char *)M.st[a->store].addr : -1,
	     fi.has_strides);
	emit("st = accel_array_from_interface(%s, &iface, %d, &na); if (st == ACCEL_SUCCESS) %s = na;",
	     devname_c[a->dev], sync, arr_c[vs]);
	st = accel_array_from_interface(&devs[a->dev], &fi, sync, &na_);
	if (st == ACCEL_SUCCESS)
		ba[vs] = na_;
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	if (sync && fi.stream)
		model_sync_stream(&M, M.s[stream_slot(fi.stream)].sid);
	/*
	 * memory.h: over the library's own memory "the view holds a
	 * reference to that storage, as a slice does": same store and group
	 */
	v.ndim = fi.ndim;
	memcpy(v.shape, fi.shape, sizeof(v.shape));
	memcpy(v.strides, fi.strides, sizeof(v.strides));
	v.readonly = fi.readonly;
	if (fi.data) {
		v.off = (char *)fi.data - (char *)M.st[a->store].addr;
	} else {
		/*
		 * an empty interface (data NULL) lies in no memory: the view
		 * is of nothing, holds no producer, and no free ends it
		 */
		int e = model_new_store(&M, K_POOLDEF, a->dev, 0);

		if (e < 0)
			return;
		M.st[e].owned_by_handles = 1;
		v.store = e;
		v.off = 0;
		v.group = new_group();
	}
	arr_view(as, vs, &v, &info);
	/* "a device array viewing the memory": over mapped memory, a
	 * mapped array is as good (the contract does not say which) */
	if (!R->failed && !devside_kind(info.kind))
		disagree(0, "an interface view is of kind %d", info.kind);
	M.a[vs].kind = info.kind;
}

/* accel_array_as_memory(a) into memory slot b */
static void op_arr_as_mem(const struct op *o)
{
	int as = o->a % N_ARR, ms = o->b % N_MEM, use, keep;
	struct expect x = X_OK;
	struct marr *a = &M.a[as];
	struct accel_memory_info mi;
	size_t n;
	accel_status_t st;

	if (!(use = arr_use(o, as, &x)))
		return;
	n = a_size(a->ndim, a->shape);
	/* memory.h: "A host array (of no device), a read-only array or one
	 * that is not contiguous ('C' or 'F') has no memory handle" */
	if (use == 1 && (a->kind == ACCEL_ARRAY_HOST || a->readonly ||
			 (!m_contig(a, 0) && !m_contig(a, 1))))
		xfail(&x, S(INVAL));
	emit("st = accel_array_as_memory(%s, &nm);", arr_c[as]);
	st = accel_array_as_memory(ba[as], &nm_);
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	emit("OK(accel_memory_get_info(nm, &info));");
	if (!check(accel_memory_get_info(nm_, &mi), X_OK))
		return;
	if (mi.entries != n || mi.dtype != accel_dtype(dtypes[a->dt]) ||
	    mi.device != devs[a->dev].id ||
	    (n && mi.ptr != (void *)(M.st[a->store].addr + a->off)))
		disagree(0, "array as memory: %zu entries at %p device %d; the model has %zu entries of %s",
			 mi.entries, mi.ptr, mi.device, n, dtype_c[a->dt]);
	/* device storage joins the memory handles; others are let go */
	keep = M.m[ms].state != 1 && M.st[a->store].kind == K_POOLDEF &&
	       M.st[a->store].owned_by_handles;
	if (!keep) {
		emit("OK(accel_memory_release(nm));");
		check(accel_memory_release(nm_), X_OK);
		return;
	}
	emit("m[%d] = nm;", ms);
	bm[ms] = nm_;
	/* in memory order: dense from the first entry's address */
	mem_set(ms, a->group, a->store, a->off, n, dtype_size[a->dt], 0);
}

/* accel_memory_as_array(memory a) into array slot b */
static void op_mem_as_arr(const struct op *o)
{
	int ms = o->a % N_MEM, as = o->b % N_ARR, use, mis, dt;
	struct expect x = X_OK;
	struct mmem *h = &M.m[ms];
	struct layout l;
	struct marr a = { 0 };
	struct accel_array_info info;
	accel_status_t st;

	if (M.a[as].state == 1 || !(use = mem_use(o, ms, &x)))
		return;
	for (dt = 0; dt < 3 && dtype_size[dt] != h->dsize; dt++)
		;
	gen_layout(o, h->dsize, &l, &mis);
	if (mis)
		xfail(&x, S(INVAL));
	a.ndim = l.ndim;
	a.dt = dt;
	memcpy(a.shape, l.shape, sizeof(a.shape));
	if (l.given)
		memcpy(a.strides, l.strides, sizeof(a.strides));
	else
		contig_strides(l.ndim, l.shape, h->dsize, l.order, a.strides);
	if (use == 1 && (o->flags & FL_OOR)) {
		/* one entry more than the handle has */
		a.ndim = l.ndim = 1;
		a.shape[0] = l.shape[0] = h->entries + 1 + o->z % 4;
		a.strides[0] = l.strides[0] = h->dsize;
	}
	/* memory.h: "may span no more than its bytes" */
	if (use == 1 && a_span(&a) > mbytes(h))
		xfail(&x, S(INVAL));
	emit("st = accel_memory_as_array(m[%d], %d, %s, %s, '%c', &na); if (st == ACCEL_SUCCESS) %s = na;",
	     ms, l.ndim, shape_c(l.ndim, l.shape), strides_c(&l), l.order,
	     arr_c[as]);
	st = accel_memory_as_array(bm[ms], l.ndim, l.shape,
				   l.given ? l.strides : NULL, l.order, &na_);
	if (st == ACCEL_SUCCESS)
		ba[as] = na_;
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	emit("OK(accel_array_get_info(%s, &ainfo));", arr_c[as]);
	if (!check(accel_array_get_info(ba[as], &info), X_OK))
		return;
	/* the kind of an array over a memory handle: the contract does not
	 * say; any but a host array (it has a device) */
	a.kind = info.kind;
	if (info.kind == ACCEL_ARRAY_HOST)
		disagree(0, "an array over a memory handle is a host array");
	a.dev = M.st[h->store].dev;
	a.store = h->store;
	a.off = h->off;
	a.group = h->group;
	a.ss = a.sid = -1;
	arr_set(as, &a);
	if (arr_check_info(as, &info) && info.data &&
	    info.data != (void *)(M.st[h->store].addr + h->off))
		disagree(0, "an array over a memory handle does not start at its first entry");
}

static void op_arr_release(const struct op *o)
{
	int as = o->a % N_ARR, use;
	struct expect x = X_OK;
	struct marr *a = &M.a[as];
	struct store *s;
	accel_status_t st;

	if (a->state == 0 ||
	    (a->state == 2 && (!(o->flags & FL_BAD) || KNOWN(KN_STALE))))
		return;
	use = a->state == 2 ? 2 : 1;
	if (use == 2)
		xfail(&x, S(BADH));
	s = &M.st[a->store];
	if (use == 1 && KNOWN(KN_RELEASE) && pending_other_device(a->store))
		return;
	/* memory.h, accel_array_release: "The last handle on mapped memory
	 * (see accel_memory_map()) is not released: the call fails with
	 * ACCEL_ERROR_IN_USE and the array stays valid" */
	if (use == 1 && a_valid(a) && s->mapped && s->handles == 1 &&
	    s->owned_by_handles) {
		if (KNOWN(KN_MAPREL))
			return;
		xfail(&x, S(INUSE));
	}
	emit("st = accel_array_release(%s);", arr_c[as]);
	st = accel_array_release(ba[as]);
	if (!check(st, x) || st != ACCEL_SUCCESS || x.st == S(ACCEL_FAILED))
		return;
	arr_drop(as);
}

/* accel_array_get_info and the predicates; FL_BAD: handles of the other
 * kind (a memory handle as an array, an array as a memory handle) */
static void op_arr_info(const struct op *o)
{
	int as = o->a % N_ARR, ms = o->b % N_MEM, use, c, f;
	struct expect x = X_OK;
	struct marr *a = &M.a[as];
	struct accel_array_info info;
	struct accel_memory_info mi;
	accel_status_t st;

	if ((o->flags & FL_BAD) && (o->b & 8) && !KNOWN(KN_KIND)) {
		if ((o->b & 16) && M.a[as].state == 1) {
			emit("st = accel_memory_get_info((accel_memory_t)%s, &info);",
			     arr_c[as]);
			st = accel_memory_get_info((accel_memory_t)ba[as], &mi);
		} else if (M.m[ms].state == 1) {
			emit("st = accel_array_get_info((accel_array_t)m[%d], &ainfo);",
			     ms);
			st = accel_array_get_info((accel_array_t)bm[ms], &info);
		} else {
			return;
		}
		check(st, X_FAIL(BADH));
		return;
	}
	if (!(use = arr_use(o, as, &x)))
		return;
	if (use == 1) {
		if (!arr_check_info(as, &info))
			return;
		if (info.kind != (enum accel_array_kind)a->kind ||
		    info.readonly != a->readonly)
			disagree(0, "array info: kind %d readonly %d, the model %d %d",
				 info.kind, info.readonly, a->kind, a->readonly);
	} else {
		emit("st = accel_array_get_info(%s, &ainfo);", arr_c[as]);
		check(accel_array_get_info(ba[as], &info), x);
	}
	c = use == 1 && m_contig(a, 0);
	f = use == 1 && m_contig(a, 1);
	emit("CHECK(accel_array_is_c_contiguous(%s) == %d && accel_array_is_f_contiguous(%s) == %d);",
	     arr_c[as], c, arr_c[as], f);
	if (accel_array_is_c_contiguous(ba[as]) != c ||
	    accel_array_is_f_contiguous(ba[as]) != f)
		disagree(0, "contiguity C %d F %d, the model C %d F %d",
			 accel_array_is_c_contiguous(ba[as]),
			 accel_array_is_f_contiguous(ba[as]), c, f);
}

/* ------------------------------------------------------------------ */

static void run_op(const struct op *o)
{
	int d = o->dev % M.ndev;

	switch (o->kind) {
	case OP_ALLOC: op_alloc(o, d); break;
	case OP_FREE: op_free(o); break;
	case OP_H2D: op_h2d(o); break;
	case OP_D2H: op_d2h(o); break;
	case OP_D2D: op_copy2(o, 0, 0); break;
	case OP_SET: op_set(o); break;
	case OP_P2P: op_copy2(o, 1, 0); break;
	case OP_HOST_WRITE: op_host_write(o); break;
	case OP_HOST_CHECK: op_host_check(o); break;
	case OP_A_H2D: op_async_hd(o, 1); break;
	case OP_A_D2H: op_async_hd(o, 0); break;
	case OP_A_D2D: op_copy2(o, 0, 1); break;
	case OP_A_P2P: op_copy2(o, 1, 1); break;
	case OP_STREAM_CREATE: case OP_STREAM_DESTROY: case OP_STREAM_SYNC:
	case OP_STREAM_QUERY:
		op_stream(o, d);
		break;
	case OP_EVENT_CREATE: case OP_EVENT_DESTROY: case OP_EVENT_RECORD:
	case OP_EVENT_SYNC: case OP_EVENT_QUERY: case OP_WAIT:
		op_event(o, d);
		break;
	case OP_DEVICE_SYNC: op_device_sync(d); break;
	case OP_POOL_CREATE: case OP_POOL_DESTROY: op_pool(o, d); break;
	case OP_MEM_CREATE: op_mem_create(o, d); break;
	case OP_MEM_WRAP: op_mem_wrap(o); break;
	case OP_MEM_SLICE: op_mem_slice(o); break;
	case OP_MEM_CAST: op_mem_cast(o); break;
	case OP_MEM_CLONE: op_mem_clone(o); break;
	case OP_MEM_FROM: op_mem_from_to(o, 1); break;
	case OP_MEM_TO: op_mem_from_to(o, 0); break;
	case OP_MEM_COPY: op_mem_copy(o); break;
	case OP_MEM_RELEASE: op_mem_release(o, 0); break;
	case OP_MEM_FREE: op_mem_release(o, 1); break;
	case OP_MEM_MAP: op_mem_map(o); break;
	case OP_MEM_UNMAP: op_mem_unmap(o); break;
	case OP_MEM_TOUCH: op_mem_touch(o); break;
	case OP_MEM_READ: op_mem_rw(o, 0); break;
	case OP_MEM_WRITE: op_mem_rw(o, 1); break;
	case OP_MEM_VALID: op_mem_valid(o); break;
	case OP_WRONG_KIND: op_wrong_kind(o); break;
	case OP_ARR_NEW: op_arr_new(o, d); break;
	case OP_ARR_WRITE: op_arr_host(o, 1); break;
	case OP_ARR_CHECK: op_arr_host(o, 0); break;
	case OP_ARR_TO_DEV: op_arr_to_dev(o); break;
	case OP_ARR_TO_HOST: op_arr_to_host(o); break;
	case OP_ARR_TO_DEVICE: op_arr_to_device(o, d); break;
	case OP_ARR_RESHAPE: op_arr_reshape(o, 0); break;
	case OP_ARR_RAVEL: op_arr_reshape(o, 1); break;
	case OP_ARR_IFACE: op_arr_iface(o); break;
	case OP_ARR_AS_MEM: op_arr_as_mem(o); break;
	case OP_MEM_AS_ARR: op_mem_as_arr(o); break;
	case OP_ARR_RELEASE: op_arr_release(o); break;
	case OP_ARR_INFO: op_arr_info(o); break;
	}
}

void op_describe(const struct op *o, char *buf, size_t len)
{
	snprintf(buf, len, "%-18s dev %d a %u b %u c %u x %u y %u z %u pat %u%s%s%s%s%s",
		 op_name(o->kind), o->dev, o->a, o->b, o->c, o->x, o->y, o->z,
		 o->pat, o->flags & FL_FULL ? " full" : "",
		 o->flags & FL_OOR ? " oor" : "",
		 o->flags & FL_STREAM ? " stream" : "",
		 o->flags & FL_BAD ? " bad" : "",
		 o->flags & FL_REPEAT ? " repeat" : "");
}

/*
 * Run the ops not masked out, in a fresh process (the caller forks): the
 * library's state starts empty, so a program is reproducible.
 */
void exec_program(const struct program *p, const uint8_t *mask, int ndev,
		  struct result *r)
{
	memset(r, 0, sizeof(*r));
	R = r;
	model_init(&M, ndev);
	devs[0].id = 0;
	devs[1].id = ndev > 1 ? 1 : 0;
	for (int i = 0; i < N_HB; i++)
		hb[i] = calloc(HB_SIZE, 1);
	tmp = malloc(HB_SIZE + 4096);
	src = malloc(HB_SIZE + 4096);
	accel_get_last_error_code();
	for (cur = 0; cur < p->n && !r->failed; cur++) {
		if (mask && !mask[cur])
			continue;
		if (g_progress)
			*g_progress = cur;
		what_ctx[0] = 0;
		if (g_emit)
			fprintf(g_emit, "\t/* op %zu: %s */\n", cur,
				op_name(p->ops[cur].kind));
		model_op_begin(&M);
		cur_op = &p->ops[cur];
		run_op(&p->ops[cur]);
		cur_op = NULL;
	}
	if (!r->failed) {
		/* everything queued must complete without error */
		if (g_emit)
			fprintf(g_emit, "\t/* the end: every device synchronized */\n");
		for (int d = 0; d < ndev && !r->failed; d++) {
			cur = p->n;
			op_device_sync(d);
		}
	}
}
