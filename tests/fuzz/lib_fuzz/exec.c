/* SPDX-License-Identifier: MIT */
/*
 * The backend runner: each op is asked of the model first (what must
 * happen: the statuses and error codes the contract allows, the bytes a
 * read must give), then run on the backend, and the two compared. With
 * g_emit set, every backend call is also printed as C, with the model's
 * expectation as a CHECK, for tests/lib/test_fuzz_repro.c.
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

static struct model M;
static struct C_Device_st devs[2];
static void *bp[N_RAW];
static C_Stream bs[N_STREAM];
static C_Event be[N_EVENT];
static accel_pool_t bpl[N_POOL];
static accel_memory_t bm[N_MEM];
static uint8_t *hb[N_HB];
static uint8_t *tmp, *src;
static struct result *R;
/* what a create call gives back, kept only when it succeeds */
static accel_memory_t nm_;
static C_Stream ns_;
static C_Event ne_;
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

/* Allowed outcomes: statuses and, for C_FAILED, error codes. */
struct expect {
	unsigned st, codes;
};

#define S(x) (1u << (x))
#define X_OK ((struct expect){ S(C_SUCCESS), 0 })
#define X_FAIL(c) ((struct expect){ S(C_FAILED), S(c) })
#define X_FAIL2(c, d) ((struct expect){ S(C_FAILED), S(c) | S(d) })
#define INVAL ACCEL_ERROR_INVALID_VALUE
#define BADH ACCEL_ERROR_INVALID_HANDLE
#define INUSE ACCEL_ERROR_IN_USE

/* Another reason to fail: when several apply, any of their codes will do. */
static void xfail(struct expect *x, unsigned codes)
{
	x->codes = x->st & S(C_FAILED) ? x->codes | codes : codes;
	x->st = S(C_FAILED);
}

/* A size of 0 succeeds and does nothing: allow that whatever else. */
static void zero_ok(struct expect *x, size_t len)
{
	if (!len)
		x->st |= S(C_SUCCESS);
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

static const char *status_name(C_Status st)
{
	static const char *names[] = { "C_SUCCESS", "C_WARNING", "C_FAILED",
				       "C_ERROR", "C_INTERNAL_ERROR" };

	return (unsigned)st < 5 ? names[st] : "C_?";
}

/* Compare a status (and code) with what the model allows. */
static int check(C_Status st, struct expect x)
{
	enum accel_error code = accel_peek_last_error_code();
	int ok = ((unsigned)st < 32 && (x.st & S(st))) &&
		 (st != C_FAILED || (x.codes & S(code)));

	emit("CHECK(fz_expect(st, 0x%x, 0x%x));", x.st, x.codes);
	if (!ok) {
		char allowed[256] = "";

		for (int c = 0; c < ACCEL_ERROR_COUNT; c++)
			if (x.codes & S(c))
				snprintf(allowed + strlen(allowed),
					 sizeof(allowed) - strlen(allowed),
					 " %s", accel_error_name(c));
		disagree(0, "got %s%s%s (%s); model allows status mask 0x%x%s%s",
			 status_name(st), st == C_FAILED ? " " : "",
			 st == C_FAILED ? accel_error_name(code) : "",
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
static void sync_ok(C_Status st, int dev, size_t len)
{
	if (st == C_SUCCESS && len && !KNOWN(KN_SYNCWAIT))
		model_sync_device(&M, dev);
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
	if (accel_pointer_get_attributes((void *)p, &a) != C_SUCCESS) {
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
	C_Stream stream = NULL;
	const char *stream_c = "NULL";
	accel_pool_t pool = NULL;
	void *ptr = NULL;
	C_Status st;

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
		emit("st = accel_device_memory_allocate(%s, &np, %zu); if (st == C_SUCCESS) p[%d] = np;",
		     devname_c[dev], size, slot);
		st = accel_device_memory_allocate(&devs[dev], &ptr, size);
		break;
	case K_HOST:
		emit("st = accel_host_memory_allocate(%s, &np, %zu); if (st == C_SUCCESS) p[%d] = np;",
		     devname_c[dev], size, slot);
		st = accel_host_memory_allocate(&devs[dev], &ptr, size);
		break;
	case K_UNI:
		emit("st = accel_unified_memory_allocate(%s, &np, %zu); if (st == C_SUCCESS) p[%d] = np;",
		     devname_c[dev], size, slot);
		st = accel_unified_memory_allocate(&devs[dev], &ptr, size);
		break;
	case K_REG:
		ptr = malloc(size);
		emit("np = malloc(%zu);", size);
		emit("st = accel_host_memory_register(%s, np, %zu); if (st == C_SUCCESS) p[%d] = np;",
		     devname_c[dev], size, slot);
		st = accel_host_memory_register(&devs[dev], ptr, size);
		if (st != C_SUCCESS) {
			free(ptr);
			ptr = NULL;
		}
		break;
	case K_POOLDEF:
		emit("OK(accel_device_pool(%s, &dp));", devname_c[dev]);
		accel_device_pool(&devs[dev], &pool);
		emit("st = accel_pool_allocate(dp, %s, &np, %zu); if (st == C_SUCCESS) p[%d] = np;",
		     stream_c, size, slot);
		st = accel_pool_allocate(pool, stream, &ptr, size);
		break;
	default:
		emit("st = accel_pool_allocate(pl[%d], %s, &np, %zu); if (st == C_SUCCESS) p[%d] = np;", ps,
		     stream_c, size, slot);
		st = accel_pool_allocate(bpl[ps], stream, &ptr, size);
		break;
	}
	if (!check(st, x) || st != C_SUCCESS)
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
		fz_fill(ptr, size, o->pat);
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
	C_Status st;
	const char *stream_c = "NULL";
	C_Stream stream = NULL;
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
	if (!check(st, x) || st != C_SUCCESS || freed)
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

static void op_h2d(const struct op *o)
{
	int slot = o->a % N_RAW;
	struct expect x = X_OK;
	int s = devside(o, slot, &x), dev;
	size_t off, len;
	C_Status st;

	if (s < 0)
		return;
	dev = M.st[s].dev;
	range(o, M.st[s].size, o->x, o->y, &off, &len);
	if (len > MAX_LEN)
		len = MAX_LEN;
	if (off + len > M.st[s].size)
		xfail(&x, S(INVAL));
	zero_ok(&x, len);
	fz_fill(src, len, o->pat);
	emit("fill_pattern(src, %zu, %uu);", len, o->pat);
	emit("st = accel_memory_copy_h2d(%s, (char *)p[%d] + %zu, src, %zu);",
	     devname_c[dev], slot, off, len);
	st = accel_memory_copy_h2d(&devs[dev], (char *)bp[slot] + off, src, len);
	sync_ok(st, dev, len);
	if (!check(st, x) || st != C_SUCCESS || !(x.st & S(C_SUCCESS)))
		return;
	model_access(&M, s, -1, 1, s, off, len);
	model_write(&M, s, off, src, len);
}

static void op_d2h(const struct op *o)
{
	int slot = o->a % N_RAW;
	struct expect x = X_OK;
	int s = devside(o, slot, &x), dev;
	size_t off, len;
	C_Status st;

	if (s < 0)
		return;
	dev = M.st[s].dev;
	range(o, M.st[s].size, o->x, o->y, &off, &len);
	if (len > MAX_LEN)
		len = MAX_LEN;
	if (off + len > M.st[s].size)
		xfail(&x, S(INVAL));
	zero_ok(&x, len);
	emit("st = accel_memory_copy_d2h(%s, tmp, (char *)p[%d] + %zu, %zu);",
	     devname_c[dev], slot, off, len);
	st = accel_memory_copy_d2h(&devs[dev], tmp, (char *)bp[slot] + off, len);
	sync_ok(st, dev, len);
	if (!check(st, x) || st != C_SUCCESS || !(x.st & S(C_SUCCESS)))
		return;
	model_access(&M, s, -1, 0, -1, 0, 0);
	compare(s, off, tmp, len, "tmp");
}

/* d2d and p2p, sync or async: dst slot a, src slot b, stream c. */
static void op_copy2(const struct op *o, int p2p, int async)
{
	int da = o->a % N_RAW, sa = o->b % N_RAW, ss = o->c % N_STREAM;
	struct expect x = X_OK;
	int ds = devside(o, da, &x), sst = devside(o, sa, &x);
	size_t doff, len, soff;
	int sid = -1, ddev, sdev, reps;
	C_Status st = C_SUCCESS;

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
	if (ds == sst && doff < soff + len && soff < doff + len &&
	    x.st == S(C_SUCCESS))
		/* overlap: undefined; refusing it is fine */
		x = (struct expect){ S(C_SUCCESS) | S(C_FAILED), S(INVAL) };
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
		if (!check(st, x) || st != C_SUCCESS || !(x.st & S(C_SUCCESS)))
			return;
		model_access(&M, sst, sid, 0, ds, doff, len);
		model_access(&M, ds, sid, 1, ds, doff, len);
		model_copy(&M, ds, doff, sst, soff, len);
		if (ds == sst && doff < soff + len && soff < doff + len)
			model_undefine(&M, ds, doff, len);	/* memcpy overlap */
		if (async) {
			model_queue(&M, sid);
			M.s[ss].synced = 0;
		}
	}
}

static void op_set(const struct op *o)
{
	int slot = o->a % N_RAW;
	struct expect x = X_OK;
	int s = devside(o, slot, &x), dev;
	size_t off, len;
	uint8_t v = o->pat & 0xff;
	C_Status st;

	if (s < 0)
		return;
	dev = M.st[s].dev;
	range(o, M.st[s].size, o->x, o->y, &off, &len);
	if (off + len > M.st[s].size)
		xfail(&x, S(INVAL));
	zero_ok(&x, len);
	emit("st = accel_device_memory_set(%s, (char *)p[%d] + %zu, 0x%02x, %zu);",
	     devname_c[dev], slot, off, v, len);
	st = accel_device_memory_set(&devs[dev], (char *)bp[slot] + off, v, len);
	sync_ok(st, dev, len);
	if (!check(st, x) || st != C_SUCCESS || !(x.st & S(C_SUCCESS)))
		return;
	model_access(&M, s, -1, 1, s, off, len);
	memset(tmp, v, len);
	model_write(&M, s, off, tmp, len);
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
	fz_fill(ptr + off, len, o->pat);
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
	C_Status st;
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
		if (!check(st, x) || st != C_SUCCESS || !(x.st & S(C_SUCCESS)))
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
	C_Status st;

	if (o->kind == OP_STREAM_CREATE) {
		if (M.s[ss].live == 1 || M.nsid == MAX_SID)
			return;
		emit("st = accel_stream_create(%s, &ns); if (st == C_SUCCESS) s[%d] = ns;", devname_c[d], ss);
		st = accel_stream_create(&devs[d], &ns_);
		if (st == C_SUCCESS)
			bs[ss] = ns_;
		if (!check(st, x) || st != C_SUCCESS)
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
		if (x.st == S(C_SUCCESS) && !model_stream_done(&M, M.s[ss].sid))
			x.st |= S(C_WARNING);
		emit("st = accel_stream_query(%s, s[%d]);", devname_c[dev], ss);
		st = accel_stream_query(&devs[dev], bs[ss]);
		break;
	}
	if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
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
	C_Status st;

	if (o->kind == OP_EVENT_CREATE) {
		if (e->live == 1)
			return;
		emit("st = accel_event_create(%s, &ne); if (st == C_SUCCESS) e[%d] = ne;", devname_c[d], es);
		st = accel_event_create(&devs[d], &ne_);
		if (st == C_SUCCESS)
			be[es] = ne_;
		if (!check(st, x) || st != C_SUCCESS)
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
		if (check(st, x) && st == C_SUCCESS)
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
		if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
			return;
		memcpy(e->vc, M.vc[M.s[ss].sid], sizeof(e->vc));
		e->vc[M.s[ss].sid] = M.n[M.s[ss].sid];
		e->recorded = 1;
		return;
	case OP_EVENT_SYNC:
		emit("st = accel_event_synchronize(%s, e[%d]);", devname_c[dev], es);
		st = accel_event_synchronize(&devs[dev], be[es]);
		if (check(st, x) && st == C_SUCCESS && x.st != S(C_FAILED))
			model_sync_clock(&M, e->vc);
		return;
	case OP_EVENT_QUERY:
		if (x.st == S(C_SUCCESS) && !model_event_done(&M, e))
			x.st |= S(C_WARNING);
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
		if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
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
	C_Status st;

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
	C_Status st;

	if (o->kind == OP_POOL_CREATE) {
		if (M.pool_state[ps] == 1)
			return;
		emit("st = accel_pool_create(%s, &npl); if (st == C_SUCCESS) pl[%d] = npl;", devname_c[d], ps);
		st = accel_pool_create(&devs[d], &npl_);
		if (st == C_SUCCESS)
			bpl[ps] = npl_;
		if (check(st, x) && st == C_SUCCESS) {
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
	if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
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

	if (accel_memory_get_info(mem, &info) != C_SUCCESS)
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
	C_Status st;

	if (M.m[ms].state == 1)
		return;
	if (init) {
		fz_fill(src, entries * dtype_size[dt], o->pat);
		emit("fill_pattern(src, %zu, %uu);", entries * dtype_size[dt],
		     o->pat);
	}
	emit("st = accel_memory_create(%s, %zu, accel_dtype(%s), %s, 0x%x, &nm); if (st == C_SUCCESS) m[%d] = nm;",
	     devname_c[d], entries, dtype_c[dt], init ? "src" : "NULL", flags,
	     ms);
	st = accel_memory_create(&devs[d], entries, accel_dtype(dtypes[dt]),
				 init ? src : NULL, flags, &nm_);
	if (st == C_SUCCESS)
		bm[ms] = nm_;
	if (!check(st, X_OK) || st != C_SUCCESS)
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
	C_Status st;

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
	emit("st = accel_memory_wrap(%s, (char *)p[%d] + %zu, %zu, accel_dtype(%s), &nm); if (st == C_SUCCESS) m[%d] = nm;",
	     devname_c[dev], slot, off, entries, dtype_c[dt], ms);
	st = accel_memory_wrap(&devs[dev], (char *)bp[slot] + off, entries,
			       accel_dtype(dtypes[dt]), &nm_);
	if (st == C_SUCCESS)
		bm[ms] = nm_;
	if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
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
	C_Status st;
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
	emit("st = accel_memory_slice(m[%d], %zu, %s, &nm); if (st == C_SUCCESS) m[%d] = nm;",
	     from, off, count_c(count), ms);
	st = accel_memory_slice(bm[from], off, count, &nm_);
	if (st == C_SUCCESS)
		bm[ms] = nm_;
	if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
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
	C_Status st;
	int use;

	if (M.m[ms].state == 1 || ms == from || !(use = mem_use(o, from, &x)))
		return;
	if (use == 1 && (mbytes(h) % nsize ||
			 (M.st[h->store].addr + h->off) % nsize)) {
		/* a size that does not divide, or a misaligned view */
		if (!(o->flags & FL_BAD))
			return;
		if (KNOWN(KN_CAST) && mbytes(h) % nsize == 0)
			return;
		xfail(&x, S(INVAL));
	}
	emit("st = accel_memory_cast(m[%d], accel_dtype(%s), &nm); if (st == C_SUCCESS) m[%d] = nm;", from,
	     dtype_c[dt], ms);
	st = accel_memory_cast(bm[from], accel_dtype(dtypes[dt]), &nm_);
	if (st == C_SUCCESS)
		bm[ms] = nm_;
	if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
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
	C_Status st;
	int use;

	if (M.m[ms].state == 1 || ms == from || !(use = mem_use(o, from, &x)))
		return;
	if (use == 1 && M.st[h->store].mapped) {
		xfail(&x, S(INUSE));
		zero_ok(&x, mbytes(h));
	}
	emit("st = accel_memory_clone(m[%d], &nm); if (st == C_SUCCESS) m[%d] = nm;", from, ms);
	st = accel_memory_clone(bm[from], &nm_);
	if (st == C_SUCCESS)
		bm[ms] = nm_;
	if (use == 1)
		sync_ok(st, M.st[h->store].dev, mbytes(h));
	if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
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
	C_Status st;
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
		fz_fill(s, bytes, o->pat);
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
	if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
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
	C_Status st;

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
			if (x.st & S(C_SUCCESS))
				x = (struct expect){ S(C_SUCCESS) | S(C_FAILED),
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
	if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
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
	C_Status st;

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
	if (!check(st, x) || st != C_SUCCESS || use == 2 ||
	    x.st == S(C_FAILED))
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
	C_Status st;

	if (!(use = mem_use(o, ms, &x)) || h->mapptr)
		return;
	if (use == 1 && h->flags == FLAGS_UNKNOWN)
		return;
	if (use == 1 && !M.st[h->store].owned_by_handles)
		return;	/* wrapped memory: its flags are the backend's */
	if (use == 1 && (access & ~h->flags)) {
		x = (struct expect){ S(C_FAILED),
				     S(INVAL) | S(ACCEL_ERROR_NOT_SUPPORTED) };
	}
	emit("st = accel_memory_map(m[%d], %u, &mp[%d]);", ms, access, ms);
	st = accel_memory_map(bm[ms], access, &ptr);
	if (use == 1)
		sync_ok(st, M.st[h->store].dev, 1);
	if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
		return;
	h->mapptr = ptr;
	M.st[h->store].mapped++;
}

static void op_mem_unmap(const struct op *o)
{
	int ms = o->a % N_MEM;
	struct mmem *h = &M.m[ms];
	struct expect x = X_OK;
	C_Status st;

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
	if (!check(st, x) || st != C_SUCCESS || !h->mapptr)
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
		fz_fill((uint8_t *)h->mapptr + off, len, o->pat);
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
	C_Status st;

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
		x = (struct expect){ S(C_FAILED),
				     S(INVAL) | S(ACCEL_ERROR_NOT_SUPPORTED) };
	else if (use == 1 && bytes > mbytes(h))
		xfail(&x, S(INVAL));
	zero_ok(&x, bytes);
	if (write) {
		fz_fill(src, bytes, o->pat);
		emit("fill_pattern(src, %zu, %uu);", bytes, o->pat);
		emit("st = accel_memory_write(m[%d], src, %zu);", ms, bytes);
		st = accel_memory_write(bm[ms], src, bytes);
	} else {
		emit("st = accel_memory_read(m[%d], tmp, %zu);", ms, bytes);
		st = accel_memory_read(bm[ms], tmp, bytes);
	}
	if (use == 1)
		sync_ok(st, M.st[h->store].dev, bytes);
	if (!check(st, x) || st != C_SUCCESS || x.st == S(C_FAILED))
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
	C_Status st;

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
		emit("st = accel_stream_query(%s, (C_Stream)m[%d]);",
		     devname_c[M.st[M.m[ms].store].dev], ms);
		st = accel_stream_query(&devs[M.st[M.m[ms].store].dev],
					(C_Stream)bm[ms]);
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
		run_op(&p->ops[cur]);
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
