/* SPDX-License-Identifier: MIT */
/*
 * The generator: a program of random operations, a pure function of the
 * seed. Ops name slots, kinds and raw numbers only; exec.c turns the
 * numbers into ranges against what the slots hold when the op runs, so
 * that masking ops out (the minimizer) keeps every program meaningful.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static const struct {
	const char *name;
	unsigned family;
	unsigned weight;
} kinds[OP_COUNT] = {
	[OP_ALLOC] = { "alloc", F_RAW, 10 },
	[OP_FREE] = { "free", F_RAW, 5 },
	[OP_H2D] = { "h2d", F_RAW, 8 },
	[OP_D2H] = { "d2h", F_RAW, 8 },
	[OP_D2D] = { "d2d", F_RAW, 5 },
	[OP_SET] = { "set", F_RAW, 5 },
	[OP_P2P] = { "p2p", F_P2P, 3 },
	[OP_HOST_WRITE] = { "host_write", F_RAW, 3 },
	[OP_HOST_CHECK] = { "host_check", F_RAW, 4 },
	[OP_A_H2D] = { "async_h2d", F_ASYNC, 6 },
	[OP_A_D2H] = { "async_d2h", F_ASYNC, 6 },
	[OP_A_D2D] = { "async_d2d", F_ASYNC, 6 },
	[OP_A_P2P] = { "async_p2p", F_P2P, 3 },
	[OP_STREAM_CREATE] = { "stream_create", F_SYNC, 3 },
	[OP_STREAM_DESTROY] = { "stream_destroy", F_SYNC, 1 },
	[OP_STREAM_SYNC] = { "stream_sync", F_SYNC, 3 },
	[OP_STREAM_QUERY] = { "stream_query", F_SYNC, 2 },
	[OP_EVENT_CREATE] = { "event_create", F_SYNC, 3 },
	[OP_EVENT_DESTROY] = { "event_destroy", F_SYNC, 1 },
	[OP_EVENT_RECORD] = { "event_record", F_SYNC, 6 },
	[OP_EVENT_SYNC] = { "event_sync", F_SYNC, 2 },
	[OP_EVENT_QUERY] = { "event_query", F_SYNC, 2 },
	[OP_WAIT] = { "stream_wait_event", F_SYNC, 6 },
	[OP_DEVICE_SYNC] = { "device_sync", F_SYNC, 1 },
	[OP_POOL_CREATE] = { "pool_create", F_POOL, 2 },
	[OP_POOL_DESTROY] = { "pool_destroy", F_POOL, 1 },
	[OP_MEM_CREATE] = { "mem_create", F_MEM, 6 },
	[OP_MEM_WRAP] = { "mem_wrap", F_MEM, 3 },
	[OP_MEM_SLICE] = { "mem_slice", F_MEM, 4 },
	[OP_MEM_CAST] = { "mem_cast", F_MEM, 3 },
	[OP_MEM_CLONE] = { "mem_clone", F_MEM, 2 },
	[OP_MEM_FROM] = { "mem_copy_from", F_MEM, 5 },
	[OP_MEM_TO] = { "mem_copy_to", F_MEM, 5 },
	[OP_MEM_COPY] = { "mem_copy", F_MEM, 4 },
	[OP_MEM_RELEASE] = { "mem_release", F_MEM, 4 },
	[OP_MEM_FREE] = { "mem_free", F_MEM, 2 },
	[OP_MEM_MAP] = { "mem_map", F_MAP, 3 },
	[OP_MEM_UNMAP] = { "mem_unmap", F_MAP, 3 },
	[OP_MEM_TOUCH] = { "mem_touch", F_MAP, 3 },
	[OP_MEM_READ] = { "mem_read", F_MAP, 2 },
	[OP_MEM_WRITE] = { "mem_write", F_MAP, 2 },
	[OP_MEM_VALID] = { "mem_is_valid", F_MEM, 2 },
	[OP_WRONG_KIND] = { "wrong_kind", F_MISUSE, 1 },
	[OP_ARR_NEW] = { "arr_new", F_ARRAY, 10 },
	[OP_ARR_WRITE] = { "arr_host_write", F_ARRAY, 4 },
	[OP_ARR_CHECK] = { "arr_host_check", F_ARRAY, 5 },
	[OP_ARR_TO_DEV] = { "arr_copy_to_device", F_ARRAY, 6 },
	[OP_ARR_TO_HOST] = { "arr_copy_to_host", F_ARRAY, 6 },
	[OP_ARR_TO_DEVICE] = { "arr_to_device", F_ARRAY, 4 },
	[OP_ARR_RESHAPE] = { "arr_reshape", F_ARRAY, 4 },
	[OP_ARR_RAVEL] = { "arr_ravel", F_ARRAY, 3 },
	[OP_ARR_IFACE] = { "arr_interface", F_ARRAY, 5 },
	[OP_ARR_AS_MEM] = { "arr_as_memory", F_ARRAY, 3 },
	[OP_MEM_AS_ARR] = { "mem_as_array", F_ARRAY, 4 },
	[OP_ARR_RELEASE] = { "arr_release", F_ARRAY, 5 },
	[OP_ARR_INFO] = { "arr_info", F_ARRAY, 3 },
};

const char *op_name(int kind)
{
	return kind >= 0 && kind < OP_COUNT ? kinds[kind].name : "?";
}

/* Misuse flags put an op in the misuse family too. */
unsigned op_family(const struct op *o)
{
	unsigned f = kinds[o->kind].family;

	if (o->flags & (FL_OOR | FL_BAD))
		f |= F_MISUSE;
	if (o->dev)
		f |= F_P2P;
	return f;
}

static const struct {
	const char *name;
	unsigned mask;
} family_names[] = {
	{ "raw", F_RAW }, { "async", F_ASYNC }, { "sync", F_SYNC },
	{ "pool", F_POOL }, { "mem", F_MEM }, { "map", F_MAP },
	{ "misuse", F_MISUSE }, { "p2p", F_P2P }, { "all", F_ALL },
	{ "array", F_ARRAY },
};

/* "a,b,c" into a mask; -1 for an unknown name */
int family_parse(const char *list, unsigned *mask)
{
	char buf[256], *save, *tok;

	*mask = 0;
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(family_names) / sizeof(family_names[0]); i++)
			if (!strcmp(tok, family_names[i].name))
				break;
		if (i == sizeof(family_names) / sizeof(family_names[0]))
			return -1;
		*mask |= family_names[i].mask;
	}
	return 0;
}

/* Sizes: mostly small, some pages, a few large enough to keep a stream
 * busy for a while. */
static uint32_t pick_size(uint64_t *s)
{
	uint64_t r = next(s);

	switch (r % 32) {
	case 0:
		return 0;
	case 1 ... 19:
		return 1 + (r >> 8) % 512;
	case 20 ... 26:
		return 4096 + (r >> 8) % 65536;
	case 27 ... 30:
		return 1u << 20;
	default:
		return MAX_LEN;
	}
}

static void gen_op(uint64_t *s, unsigned families, struct op *o)
{
	unsigned total = 0, pick;
	int k;

	for (k = 0; k < OP_COUNT; k++)
		if (kinds[k].family & families)
			total += kinds[k].weight;
	pick = next(s) % total;
	for (k = 0; k < OP_COUNT; k++) {
		if (!(kinds[k].family & families))
			continue;
		if (pick < kinds[k].weight)
			break;
		pick -= kinds[k].weight;
	}
	memset(o, 0, sizeof(*o));
	o->kind = k;
	uint64_t r = next(s);
	o->a = r & 0xff;
	o->b = (r >> 8) & 0xff;
	o->c = (r >> 16) & 0xff;
	o->dev = (families & F_P2P) && ((r >> 24) & 3) == 0;
	r = next(s);
	if ((r & 3) == 0)
		o->flags |= FL_FULL;
	if ((families & F_MISUSE) && ((r >> 2) & 15) == 0)
		o->flags |= FL_OOR;
	if ((r >> 6) & 1)
		o->flags |= FL_STREAM;
	if ((families & F_MISUSE) && ((r >> 7) & 15) == 0)
		o->flags |= FL_BAD;
	if (((r >> 11) & 7) == 0)
		o->flags |= FL_REPEAT;
	o->x = k == OP_ALLOC || k == OP_MEM_CREATE ? pick_size(s) :
	       (uint32_t)next(s);
	o->y = (uint32_t)next(s);
	o->z = (uint32_t)next(s);
	o->pat = (uint32_t)next(s);
}

/*
 * A chain that crosses streams through a re-recorded event (an event wait
 * binds to the record current when it is queued): stream B copies a large buffer, event E records it, stream A
 * waits for E and reads what B wrote, then E is recorded again on an idle
 * stream C. Plain ops on random slots, so that it mixes with the rest and
 * minimizes like the rest.
 */
static size_t gen_chain(uint64_t *s, struct op *o, size_t room)
{
	uint8_t x = next(s) % N_RAW, y = next(s) % N_RAW, z = next(s) % N_RAW;
	uint8_t sa = 0, sb = 1, sc = 2, e = next(s) % N_EVENT;
	uint32_t pat = next(s);
	const struct op chain[] = {
		{ .kind = OP_ALLOC, .a = x, .b = K_DEV, .x = MAX_LEN },
		{ .kind = OP_ALLOC, .a = y, .b = K_DEV, .x = MAX_LEN },
		{ .kind = OP_ALLOC, .a = z, .b = K_DEV, .x = MAX_LEN },
		{ .kind = OP_H2D, .a = y, .flags = FL_FULL, .pat = pat },
		{ .kind = OP_STREAM_CREATE, .a = sa },
		{ .kind = OP_STREAM_CREATE, .a = sb },
		{ .kind = OP_STREAM_CREATE, .a = sc },
		{ .kind = OP_EVENT_CREATE, .a = e },
		{ .kind = OP_A_D2D, .a = x, .b = y, .c = sb,
		  .flags = FL_FULL | FL_REPEAT, .pat = 7 },
		{ .kind = OP_EVENT_RECORD, .a = e, .b = sb },
		{ .kind = OP_WAIT, .a = e, .b = sa },
		{ .kind = OP_EVENT_RECORD, .a = e, .b = sc },
		{ .kind = OP_A_D2D, .a = z, .b = x, .c = sa, .flags = FL_FULL },
		{ .kind = OP_STREAM_SYNC, .a = sa },
		{ .kind = OP_D2H, .a = z, .flags = FL_FULL },
	};
	size_t n = sizeof(chain) / sizeof(chain[0]);

	if (n > room)
		return 0;
	memcpy(o, chain, sizeof(chain));
	return n;
}

/*
 * Array chains (F_ARRAY only): what random ops seldom line up. (0) mapped
 * storage whose last handle is an array: its release is refused; (1) views
 * (reshape, interface) of an array over memory that accel_memory_free()
 * ends: refused; (2) an interface view of a device array outlives the
 * array's release, while new arrays take memory: it still reads what the
 * array held.
 */
static size_t gen_array_chain(uint64_t *s, struct op *o, size_t room)
{
	uint8_t m = next(s) % N_MEM, b = next(s) % N_ARR, dt = next(s) % 4;
	uint8_t a0 = b, a1 = (b + 1) % N_ARR, a2 = (b + 2) % N_ARR;
	uint8_t a3 = (b + 3) % N_ARR, a4 = (b + 4) % N_ARR;
	uint32_t pat = next(s), pick = next(s) % 3;
	/* 1-D, 4 or 8 entries, contiguous (FL_FULL: NULL strides) */
	uint32_t x4 = 1 | 3 << 2, x8 = 1 | 6 << 2;
	const struct op mapped[] = {
		{ .kind = OP_MEM_RELEASE, .a = m },
		{ .kind = OP_ARR_RELEASE, .a = a0 },
		{ .kind = OP_MEM_CREATE, .a = m, .b = 1, .c = dt, .x = 64,
		  .flags = FL_FULL, .pat = pat },
		{ .kind = OP_MEM_MAP, .a = m, .b = 2 },
		{ .kind = OP_MEM_AS_ARR, .a = m, .b = a0, .x = x4,
		  .flags = FL_FULL },
		{ .kind = OP_MEM_RELEASE, .a = m },
		{ .kind = OP_ARR_RELEASE, .a = a0 },
		{ .kind = OP_ARR_INFO, .a = a0 },
	};
	const struct op freed[] = {
		{ .kind = OP_MEM_RELEASE, .a = m },
		{ .kind = OP_ARR_RELEASE, .a = a0 },
		{ .kind = OP_ARR_RELEASE, .a = a1 },
		{ .kind = OP_ARR_RELEASE, .a = a2 },
		{ .kind = OP_MEM_CREATE, .a = m, .b = 0, .c = dt, .x = 256,
		  .flags = FL_FULL, .pat = pat },
		{ .kind = OP_MEM_AS_ARR, .a = m, .b = a0, .x = x4,
		  .flags = FL_FULL },
		{ .kind = OP_ARR_RESHAPE, .a = a0, .b = a1, .x = 0, .y = 0 },
		{ .kind = OP_ARR_IFACE, .a = a0, .b = a2 },
		{ .kind = OP_MEM_FREE, .a = m },
		{ .kind = OP_ARR_RESHAPE, .a = a1, .b = a3, .x = 0, .y = 0 },
		{ .kind = OP_ARR_INFO, .a = a2 },
		{ .kind = OP_ARR_TO_HOST, .a = a2, .b = 1 },
	};
	const struct op held[] = {
		{ .kind = OP_ARR_RELEASE, .a = a0 },
		{ .kind = OP_ARR_RELEASE, .a = a1 },
		{ .kind = OP_ARR_RELEASE, .a = a2 },
		{ .kind = OP_ARR_RELEASE, .a = a3 },
		{ .kind = OP_ARR_RELEASE, .a = a4 },
		{ .kind = OP_ARR_NEW, .a = a0, .b = 0, .c = dt, .x = x8,
		  .z = 1, .flags = FL_FULL },
		{ .kind = OP_ARR_NEW, .a = a1, .b = 3, .c = dt, .x = x8,
		  .z = 1 | 1 << 6, .flags = FL_FULL, .pat = pat },
		{ .kind = OP_ARR_TO_DEV, .a = a0, .b = a1 },
		{ .kind = OP_ARR_IFACE, .a = a0, .b = a2 },
		{ .kind = OP_ARR_RELEASE, .a = a0 },
		{ .kind = OP_ARR_NEW, .a = a3, .b = 0, .c = dt, .x = x8,
		  .z = 1, .flags = FL_FULL },
		{ .kind = OP_ARR_RELEASE, .a = a1 },
		{ .kind = OP_ARR_NEW, .a = a1, .b = 3, .c = dt, .x = x8,
		  .z = 1 | 1 << 6, .flags = FL_FULL, .pat = ~pat },
		{ .kind = OP_ARR_TO_DEV, .a = a3, .b = a1 },
		{ .kind = OP_ARR_TO_HOST, .a = a2, .b = 1 },
	};
	const struct op *chain = pick == 0 ? mapped : pick == 1 ? freed : held;
	size_t n = pick == 0 ? sizeof(mapped) / sizeof(mapped[0]) :
		   pick == 1 ? sizeof(freed) / sizeof(freed[0]) :
		   sizeof(held) / sizeof(held[0]);

	if (n > room)
		return 0;
	memcpy(o, chain, n * sizeof(*o));
	return n;
}

void gen_program(uint64_t seed, size_t nops, unsigned families,
		 struct program *p)
{
	uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
	unsigned chain = F_RAW | F_ASYNC | F_SYNC;

	p->ops = calloc(nops ? nops : 1, sizeof(*p->ops));
	p->n = nops;
	for (size_t i = 0; i < nops; i++) {
		if ((families & chain) == chain && next(&s) % 64 == 0) {
			size_t n = gen_chain(&s, &p->ops[i], nops - i);

			if (n) {
				i += n - 1;
				continue;
			}
		}
		/* a draw of its own only with arrays: other runs unchanged */
		if ((families & F_ARRAY) && next(&s) % 32 == 0) {
			size_t n = gen_array_chain(&s, &p->ops[i], nops - i);

			if (n) {
				i += n - 1;
				continue;
			}
		}
		gen_op(&s, families, &p->ops[i]);
		/* drop misuse outside the selected families */
		while (op_family(&p->ops[i]) & ~families & (F_MISUSE | F_P2P))
			gen_op(&s, families, &p->ops[i]);
	}
}

static const struct {
	const char *name;
	unsigned mask;
} known_names[] = {
	{ "chunk", KN_CHUNK }, { "stale", KN_STALE },
	{ "kind", KN_KIND }, { "cast", KN_CAST }, { "event", KN_EVENT },
	{ "maprel", KN_MAPREL }, { "syncwait", KN_SYNCWAIT },
	{ "release", KN_RELEASE },
	{ "p2pwait", KN_P2PWAIT }, { "deferfree", KN_DEFERFREE },
	{ "rohost", KN_ROHOST }, { "emptymap", KN_EMPTYMAP },
};

/* "a,b" of known classes into a mask; -1 for an unknown name */
int known_parse(const char *list, unsigned *mask)
{
	char buf[256], *save, *tok;

	*mask = 0;
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		size_t i, n = sizeof(known_names) / sizeof(known_names[0]);

		for (i = 0; i < n; i++)
			if (!strcmp(tok, known_names[i].name))
				break;
		if (i == n)
			return -1;
		*mask |= known_names[i].mask;
	}
	return 0;
}
