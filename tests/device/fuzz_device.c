// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Seeded random fuzzer of the device model through qtest.
 *
 * Two devices (one throttled) get random register writes, random
 * descriptors (valid, malformed, out of range, faulting, aimed at the peer's
 * BAR or at their own registers), resets, fault injection, bus-master
 * toggles and clock steps. Every descriptor the fuzzer builds writes only
 * inside the data window, VRAM, a peer BAR or unmapped space, so guest RAM
 * in the guard regions must never change. At the end QEMU must still be
 * alive and answering.
 *
 * Usage: fuzz_device [--seed N] [--ops N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel_dev.h"

#define DATA_LO		TEST_RAM_DATA
#define DATA_SIZE	(4ull << 20)
#define VRAM_SIZE	(1ull << 20)

/* Guest RAM the fuzzer never programs: it must stay as it was. */
static const struct {
	uint64_t addr;
	uint64_t len;
} guards[] = {
	{ 0x00100000, 0x00f00000 },		/* below the device areas */
	{ 0x03000000, 0x00400000 },		/* after the device areas */
	{ DATA_LO + DATA_SIZE, 0x00400000 },	/* after the data window */
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static struct accel_dev dev[2];
/* What the queues were seen doing, to show the campaign's coverage. */
static uint64_t seen_error[ACCEL_ERR_INJECTED + 2];
static uint64_t seen_completed;

static uint64_t interesting_u64(void)
{
	static const uint64_t v[] = { 0, 1, 2, 63, 64, 4095, 4096, 65536,
				      VRAM_SIZE - 1, VRAM_SIZE, VRAM_SIZE + 1,
				      0x7fffffffffffffffull, ~0ull, ~0ull - 63 };

	return rnd_below(4) ? v[rnd_below(sizeof(v) / sizeof(v[0]))] : rnd();
}

static uint32_t random_register(struct accel_dev *d)
{
	switch (rnd_below(4)) {
	case 0:
		return rnd_below(0x50) & ~3u;
	case 1:
		return ACCEL_QUEUE_REG(rnd_below(d->num_queues + 1),
				       rnd_below(0x30) & ~3u);
	default:
		return rnd_below(ACCEL_REGS_SIZE) & ~3u;
	}
}

static uint32_t random_value(struct accel_dev *d, uint32_t reg)
{
	uint32_t r = (reg - ACCEL_QUEUE_BASE) % ACCEL_QUEUE_STRIDE;

	if (reg >= ACCEL_QUEUE_BASE && r == ACCEL_Q_RING_BASE_LO && rnd_below(2))
		return (uint32_t)accel_ring_addr(d, rnd_below(d->num_queues));
	if (reg >= ACCEL_QUEUE_BASE && r == ACCEL_Q_RING_BASE_HI && rnd_below(2))
		return 0;
	if (reg >= ACCEL_QUEUE_BASE && r == ACCEL_Q_FAULT_INJECT)
		return rnd_below(8) ? 0 : rnd_below(3) | (rnd_below(4) ? 0 : ACCEL_FAULT_STALL);
	if (reg == ACCEL_REG_DEV_CTRL && rnd_below(16))
		return 0;	/* resets are frequent enough as it is */
	switch (rnd_below(4)) {
	case 0:
		return rnd_below(17);
	case 1:
		return 1u << rnd_below(32);
	case 2:
		return ~0u;
	default:
		return rnd();
	}
}

/* A (dst, len) pair that, if it writes anything, writes an allowed place. */
static void random_target(struct accel_dev *d, struct accel_dev *peer,
			  uint64_t *addr, uint64_t *len, bool *vram)
{
	uint64_t n = rnd_below(4) ? 1 + rnd_below(rnd_below(2) ? 256 : 65536)
				  : interesting_u64();

	*vram = false;
	*len = n;
	switch (rnd_below(7)) {
	case 0:		/* VRAM, in range or not: the device checks */
		*vram = true;
		*addr = rnd_below(2) ? rnd_below(VRAM_SIZE) : interesting_u64();
		return;
	case 1:
	case 2:		/* the data window, always fully inside */
		if (n == 0 || n > DATA_SIZE)
			*len = n = 1 + rnd_below(DATA_SIZE);
		*addr = DATA_LO + rnd_below(DATA_SIZE - n + 1);
		return;
	case 3:		/* the peer's VRAM BAR, possibly running off its end */
		*addr = peer->vram + rnd_below(VRAM_SIZE);
		if (n > 2 * VRAM_SIZE)
			*len = 1 + rnd_below(2 * VRAM_SIZE);
		return;
	case 4:		/* registers: its own (blocked) or the peer's */
		*addr = (rnd_below(2) ? d : peer)->regs + (rnd_below(0x2000) & ~3u);
		*len = 4 * (1 + rnd_below(4));
		return;
	case 5:		/* nothing decodes there */
		*addr = TEST_UNMAPPED_ADDR + rnd_below(1 << 20);
		return;
	default:	/* wrapping or absurd addresses */
		*addr = ~0ull - rnd_below(65536);
		return;
	}
}

static struct accel_desc random_desc(struct accel_dev *d, struct accel_dev *peer)
{
	struct accel_desc desc = { 0 };
	uint64_t src, dst, len, unused;
	bool src_vram, dst_vram;

	desc.opcode = rnd_below(8) ? rnd_below(4) : (uint32_t)rnd();
	random_target(d, peer, &dst, &len, &dst_vram);
	desc.dst = dst;
	desc.len = len;
	if (dst_vram)
		desc.flags |= ACCEL_DESC_DST_VRAM;
	switch (desc.opcode) {
	case ACCEL_OP_COPY:
		/* any source is fine: reading never changes guest RAM */
		random_target(d, peer, &src, &unused, &src_vram);
		desc.src = src;
		if (src_vram)
			desc.flags |= ACCEL_DESC_SRC_VRAM;
		break;
	case ACCEL_OP_FILL:
		desc.src = rnd_below(16) ? rnd_below(256) : rnd();
		break;
	case ACCEL_OP_FENCE:
		desc.src = rnd();
		if (len < 8 && !dst_vram && dst >= DATA_LO &&
		    dst < DATA_LO + DATA_SIZE)
			desc.dst = DATA_LO + rnd_below(DATA_SIZE - 8);
		desc.len = rnd_below(8) ? 0 : len;
		break;
	default:
		if (rnd_below(2))
			desc.len = desc.dst = desc.src = desc.flags = 0;
	}
	if (!rnd_below(8))
		desc.flags |= ACCEL_DESC_IRQ;
	if (!rnd_below(32))
		desc.flags |= 1u << rnd_below(32);
	if (!rnd_below(32))
		desc.reserved[rnd_below(4)] = rnd();
	return desc;
}

static void reset_queue(struct accel_dev *d, unsigned q)
{
	seen_completed += accel_qrd(d, q, ACCEL_Q_COMPLETED_LO);
	accel_queue_reset(d, q);
}

static void submit_random(struct accel_dev *d, struct accel_dev *peer)
{
	unsigned q = rnd_below(d->num_queues), n = 1 + rnd_below(4), i;
	struct accel_desc descs[4];

	/* random register writes and resets often leave the queue off */
	if (!d->ring_size[q] ||
	    !(accel_qrd(d, q, ACCEL_Q_STATUS) & ACCEL_Q_STATUS_ENABLED) ||
	    !rnd_below(64)) {
		reset_queue(d, q);
		accel_queue_enable(d, q, 1u << (1 + rnd_below(6)));
	}
	for (i = 0; i < n; i++)
		descs[i] = random_desc(d, peer);
	accel_submit(d, q, descs, n);
	if (!rnd_below(32))	/* a doorbell past the ring */
		accel_qwr(d, q, ACCEL_Q_TAIL, d->ring_size[q] + rnd_below(8));
	if (accel_qrd(d, q, ACCEL_Q_STATUS) & ACCEL_Q_STATUS_ERROR) {
		uint32_t err = accel_qrd(d, q, ACCEL_Q_ERROR);

		seen_error[err <= ACCEL_ERR_INJECTED ? err : ACCEL_ERR_INJECTED + 1]++;
		reset_queue(d, q);
	}
}

static void print_coverage(void)
{
	unsigned e;

	printf("# descriptors completed: %llu; halts by error code:",
	       (unsigned long long)seen_completed);
	for (e = 1; e <= ACCEL_ERR_INJECTED; e++)
		printf(" %u:%llu", e, (unsigned long long)seen_error[e]);
	printf("\n");
}

static void one_op(struct qtest *qt)
{
	unsigned i = rnd_below(2);
	struct accel_dev *d = &dev[i], *peer = &dev[!i];
	uint32_t reg;

	switch (rnd_below(16)) {
	case 0 ... 5:
		reg = random_register(d);
		accel_wr(d, reg, random_value(d, reg));
		break;
	case 6 ... 11:
		submit_random(d, peer);
		break;
	case 12:
		reset_queue(d, rnd_below(d->num_queues));
		break;
	case 13:
		qtest_clock_step(qt, rnd_below(2000000));
		break;
	case 14:
		if (!rnd_below(16)) {
			accel_set_bus_master(d, false);
			accel_rd(d, ACCEL_REG_MAGIC);
		}
		accel_set_bus_master(d, true);
		break;
	default:
		accel_rd(d, random_register(d));
	}
}

static uint8_t *snapshot_guards(struct qtest *qt)
{
	uint64_t total = 0, off = 0;
	unsigned g;
	uint8_t *buf;

	for (g = 0; g < sizeof(guards) / sizeof(guards[0]); g++)
		total += guards[g].len;
	buf = malloc(total);
	if (!buf)
		abort();
	for (g = 0; g < sizeof(guards) / sizeof(guards[0]); g++) {
		qtest_memread(qt, guards[g].addr, buf + off, guards[g].len);
		off += guards[g].len;
	}
	return buf;
}

static int compare_guards(const uint8_t *before, const uint8_t *after)
{
	uint64_t off = 0, i;
	unsigned g;

	for (g = 0; g < sizeof(guards) / sizeof(guards[0]); g++) {
		for (i = 0; i < guards[g].len; i++)
			if (before[off + i] != after[off + i]) {
				printf("not ok: guest RAM at 0x%llx changed\n",
				       (unsigned long long)(guards[g].addr + i));
				return 1;
			}
		off += guards[g].len;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t seed = time(NULL), ops = 100000, op;
	uint8_t *before, *after;
	struct qtest *qt;
	char args[1024];
	size_t off;
	int i, bad;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seed"))
			seed = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--ops"))
			ops = strtoull(argv[i + 1], NULL, 0);
	}
	rng_state = seed;
	printf("# fuzz_device: seed %llu, %llu operations (reproduce with "
	       "--seed %llu --ops %llu)\n", (unsigned long long)seed,
	       (unsigned long long)ops, (unsigned long long)seed,
	       (unsigned long long)ops);
	fflush(stdout);

	off = accel_device_args(args, sizeof(args), 0, "vram-size=1M");
	accel_device_args(args + off, sizeof(args) - off, 1,
			  "vram-size=1M,queues=2,dma-bandwidth=256M");
	qt = qtest_start(args);
	if (!qt || accel_dev_init(qt, 0, &dev[0]) || accel_dev_init(qt, 1, &dev[1])) {
		printf("not ok: QEMU did not start\n");
		return 1;
	}
	/* make the guards distinctive, then remember them */
	qtest_memset(qt, guards[1].addr, 0xa5, guards[1].len);
	qtest_memset(qt, guards[2].addr, 0x5a, guards[2].len);
	before = snapshot_guards(qt);

	for (op = 0; op < ops; op++)
		one_op(qt);

	print_coverage();
	bad = accel_rd(&dev[0], ACCEL_REG_MAGIC) != ACCEL_MAGIC ||
	      accel_rd(&dev[1], ACCEL_REG_MAGIC) != ACCEL_MAGIC;
	if (bad)
		printf("not ok: a device stopped answering\n");
	after = snapshot_guards(qt);
	bad |= compare_guards(before, after);
	if (!qtest_quit(qt)) {
		printf("not ok: QEMU died\n");
		bad = 1;
	}
	free(before);
	free(after);
	printf("%s: %llu random operations, QEMU alive, guard RAM unchanged\n",
	       bad ? "not ok" : "ok", (unsigned long long)ops);
	return bad;
}
