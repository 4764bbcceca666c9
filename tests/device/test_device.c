// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Device-model tests: every opcode, every error code, ring wrap-around,
 * several queues, both resets, MSI-X, fault injection, throttling and
 * peer-to-peer copies, through QEMU's qtest protocol with no guest.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accel_dev.h"
#include "check.h"

#define MAX_QEMUS 2

static struct qtest *qemus[MAX_QEMUS];
static int nqemus;
static struct accel_dev dev[8];

/*
 * Start QEMU with @ndev devices, each with @props, and the machine options
 * @extra, and initialise them.
 */
static struct qtest *boot_with(int ndev, const char *props, const char *extra)
{
	char args[1024];
	size_t off;
	struct qtest *qt;
	int i;

	off = snprintf(args, sizeof(args), "%s ", extra);
	for (i = 0; i < ndev; i++)
		off += accel_device_args(args + off, sizeof(args) - off, i, props);
	qt = qtest_start(args);
	if (!qt)
		return NULL;
	qemus[nqemus++] = qt;
	for (i = 0; i < ndev; i++)
		if (accel_dev_init(qt, i, &dev[i]))
			return NULL;
	return qt;
}

static struct qtest *boot(int ndev, const char *props)
{
	return boot_with(ndev, props, "");
}

static void cleanup(bool *died)
{
	while (nqemus)
		if (!qtest_quit(qemus[--nqemus]))
			*died = true;
}

static void fill_random(uint8_t *buf, size_t n, uint32_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = x;
	}
}

static bool ram_equals(struct qtest *qt, uint64_t addr, const uint8_t *want,
		       size_t n)
{
	uint8_t *got = malloc(n);
	bool same;

	qtest_memread(qt, addr, got, n);
	same = !memcmp(got, want, n);
	free(got);
	return same;
}

static bool ram_all(struct qtest *qt, uint64_t addr, uint8_t byte, size_t n)
{
	uint8_t *want = malloc(n);
	bool same;

	memset(want, byte, n);
	same = ram_equals(qt, addr, want, n);
	free(want);
	return same;
}

/* Run a NOP with the IRQ flag on queue @q; returns the status once idle. */
static uint32_t nop_with_irq(struct accel_dev *d, unsigned q)
{
	accel_submit(d, q, &(struct accel_desc){ .opcode = ACCEL_OP_NOP,
		     .flags = ACCEL_DESC_IRQ }, 1);
	return accel_wait(d, q, 0);
}

/* Identity */

static void test_identity(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	int msix;

	CHECK(qt);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x00, 2), ACCEL_PCI_VENDOR_ID);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x02, 2), ACCEL_PCI_DEVICE_ID);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x08, 4),
		 ACCEL_PCI_CLASS << 16 | ACCEL_PCI_REVISION);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x2c, 2), ACCEL_PCI_SUBSYS_VENDOR_ID);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x2e, 2), ACCEL_PCI_SUBSYS_ID);
	CHECK(pci_find_cap(qt, 1, 0, 0x10));	/* PCI Express */
	msix = pci_find_cap(qt, 1, 0, 0x11);
	CHECK(msix);
	CHECK_EQ((pci_cfg_read(qt, 1, 0, msix + 2, 2) & 0x7ff) + 1, 4 + 1);
	/* BAR2: 64-bit prefetchable memory covering all of VRAM */
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x18, 4) & 0xf, 0xc);
	CHECK_EQ(d->vram_size, 256ull << 20);

	CHECK_EQ(accel_rd(d, ACCEL_REG_MAGIC), ACCEL_MAGIC);
	CHECK_EQ(accel_rd(d, ACCEL_REG_VERSION), ACCEL_HW_VERSION_MAJOR << 16 |
		 ACCEL_HW_VERSION_MINOR);
	CHECK_EQ(accel_rd(d, ACCEL_REG_NUM_QUEUES), 4);
	CHECK_EQ(accel_rd(d, ACCEL_REG_VRAM_SIZE_LO), 256u << 20);
	CHECK_EQ(accel_rd(d, ACCEL_REG_VRAM_SIZE_HI), 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_DESC_SIZE), sizeof(struct accel_desc));
	CHECK_EQ(accel_rd(d, ACCEL_REG_MAX_RING_SIZE), ACCEL_RING_MAX_SIZE);
	CHECK_EQ(accel_rd(d, ACCEL_REG_DEV_STATUS), ACCEL_DEV_STATUS_READY);
	CHECK(accel_rd(d, ACCEL_REG_CAPS) & ACCEL_CAP_P2P);
	accel_wr(d, ACCEL_REG_SCRATCH, 0xdeadbeef);
	CHECK_EQ(accel_rd(d, ACCEL_REG_SCRATCH), 0xdeadbeef);
	/* read-only registers ignore writes */
	accel_wr(d, ACCEL_REG_MAGIC, 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_MAGIC), ACCEL_MAGIC);

	/* VRAM is host-accessible through BAR2 */
	qtest_writel(qt, d->vram + 0x1000, 0x12345678);
	CHECK_EQ(qtest_readl(qt, d->vram + 0x1000), 0x12345678);
}

static void test_properties(void)
{
	static const struct {
		const char *props;
		const char *msg;
	} bad[] = {
		{ "vram-size=3M", "vram-size must be a power of two" },
		{ "vram-size=512K", "vram-size must be a power of two" },
		{ "vram-size=128G", "vram-size must be a power of two" },
		{ "queues=0", "queues must be from 1 to 16" },
		{ "queues=17", "queues must be from 1 to 16" },
	};
	char args[512], err[1024];
	unsigned i;
	struct qtest *qt;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		accel_device_args(args, sizeof(args), 0, bad[i].props);
		CHECK_EQ(qemu_run_expect_exit(args, err, sizeof(err)), 1);
		if (!strstr(err, bad[i].msg))
			fprintf(stderr, "  %s: unexpected message: %s\n",
				bad[i].props, err);
		CHECK(strstr(err, bad[i].msg));
	}

	qt = boot(1, "vram-size=4G,queues=16");
	CHECK(qt);
	CHECK_EQ(dev[0].vram_size, 4ull << 30);
	CHECK_EQ(accel_rd(&dev[0], ACCEL_REG_VRAM_SIZE_HI), 1);
	CHECK_EQ(accel_rd(&dev[0], ACCEL_REG_NUM_QUEUES), 16);
	/* the last byte of a 4 GiB VRAM is reachable by DMA and through BAR2 */
	qtest_writel(qt, TEST_RAM_DATA, 0xa1b2c3d4);
	accel_queue_enable(&dev[0], 15, 8);
	accel_submit(&dev[0], 15, &(struct accel_desc){ .opcode = ACCEL_OP_COPY,
		     .flags = ACCEL_DESC_DST_VRAM, .src = TEST_RAM_DATA,
		     .dst = (4ull << 30) - 4, .len = 4 }, 1);
	CHECK_EQ(accel_wait(&dev[0], 15, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(qtest_readl(qt, dev[0].vram + (4ull << 30) - 4), 0xa1b2c3d4);
}

/* Opcodes */

static void test_copy_directions(void)
{
	const size_t n = (4 << 20) + 3;	/* crosses a 4 MiB slice, odd size */
	uint64_t src = TEST_RAM_DATA + 5, back = TEST_RAM_DATA + 0x800001;
	uint64_t host2 = TEST_RAM_DATA + 0x1000007;
	struct accel_desc descs[4];
	struct accel_dev *d;
	uint8_t *data = malloc(n);
	struct qtest *qt = boot(1, "");

	CHECK(qt && data);
	d = &dev[0];
	fill_random(data, n, 1);
	qtest_memwrite(qt, src, data, n);
	accel_queue_enable(d, 0, 16);
	descs[0] = desc_copy(src, 0x777, n, ACCEL_DESC_DST_VRAM);	/* H2D */
	descs[1] = desc_copy(0x777, 0x800011, n,			/* D2D */
			     ACCEL_DESC_SRC_VRAM | ACCEL_DESC_DST_VRAM);
	descs[2] = desc_copy(0x800011, back, n, ACCEL_DESC_SRC_VRAM); /* D2H */
	descs[3] = desc_copy(back, host2, n, 0);			/* H2H */
	accel_submit(d, 0, descs, 4);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_HEAD), 4);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_COMPLETED_LO), 4);
	CHECK(ram_equals(qt, d->vram + 0x777, data, 4096));
	CHECK(ram_equals(qt, d->vram + 0x800011 + n - 4096, data + n - 4096, 4096));
	CHECK(ram_equals(qt, back, data, n));
	CHECK(ram_equals(qt, host2, data, n));
	/* nothing outside the ranges was written */
	CHECK_EQ(qtest_readl(qt, d->vram + 0x773), 0);
	CHECK_EQ(qtest_readl(qt, d->vram + 0x777 + n), 0);
	free(data);
}

static void test_copy_bytes_and_alignment(void)
{
	static const uint64_t sizes[] = { 1, 2, 3, 63, 64, 65, 4095, 4097 };
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	uint8_t data[4097], zero[8] = { 0 };
	unsigned i;

	CHECK(qt);
	accel_queue_enable(d, 1, 4);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t src = TEST_RAM_DATA + 0x10000 * i + i;
		uint64_t vram = 0x10000 * i + 2 * i + 1;

		fill_random(data, sizes[i], i + 10);
		qtest_memwrite(qt, src, data, sizes[i]);
		accel_submit(d, 1, &(struct accel_desc){ .opcode = ACCEL_OP_COPY,
			     .flags = ACCEL_DESC_DST_VRAM, .src = src,
			     .dst = vram, .len = sizes[i] }, 1);
		CHECK_EQ(accel_wait(d, 1, 0), ACCEL_Q_STATUS_ENABLED);
		CHECK(ram_equals(qt, d->vram + vram, data, sizes[i]));
		CHECK(ram_equals(qt, d->vram + vram + sizes[i], zero, 8));
	}
}

static void test_fill(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	struct accel_desc descs[2];

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	descs[0] = desc_fill(3, 0x5a, 100001, ACCEL_DESC_DST_VRAM);
	descs[1] = desc_fill(TEST_RAM_DATA + 1, 0xc3, 3 << 20, 0);
	accel_submit(d, 0, descs, 2);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK(ram_all(qt, d->vram + 3, 0x5a, 100001));
	CHECK(ram_all(qt, d->vram, 0, 3));
	CHECK(ram_all(qt, d->vram + 3 + 100001, 0, 8));
	CHECK(ram_all(qt, TEST_RAM_DATA + 1, 0xc3, 3 << 20));
	CHECK_EQ(qtest_readl(qt, TEST_RAM_DATA + 1 + (3 << 20)), 0);
	CHECK_EQ(qtest_readl(qt, TEST_RAM_DATA - 3), 0);
}

static void test_fence_and_irq(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	struct accel_desc descs[2];

	CHECK(qt);
	accel_queue_enable(d, 2, 8);
	msi_clear(d, 2);
	descs[0] = desc_fence(TEST_RAM_DATA + 8, 0x1122334455667788ull, 0);
	descs[1] = desc_fence(0x100, 42, ACCEL_DESC_DST_VRAM | ACCEL_DESC_IRQ);
	accel_submit(d, 2, descs, 2);
	CHECK_EQ(accel_wait(d, 2, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(qtest_readq(qt, TEST_RAM_DATA + 8), 0x1122334455667788ull);
	CHECK_EQ(qtest_readq(qt, d->vram + 0x100), 42);
	CHECK(msi_fired(d, 2));
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), ACCEL_IRQ_QUEUE(2));
	accel_wr(d, ACCEL_REG_IRQ_STATUS, ACCEL_IRQ_QUEUE(2));
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), 0);
	/* no other vector fired */
	CHECK(!msi_fired(d, 0));
	CHECK(!msi_fired(d, d->num_queues));
}

static void test_nop_and_completed(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	struct accel_desc nops[5];
	int i;

	CHECK(qt);
	for (i = 0; i < 5; i++)
		nops[i] = desc_nop(0);
	accel_queue_enable(d, 3, 8);
	accel_submit(d, 3, nops, 5);
	CHECK_EQ(accel_wait(d, 3, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(accel_qrd(d, 3, ACCEL_Q_HEAD), 5);
	CHECK_EQ(accel_qrd(d, 3, ACCEL_Q_COMPLETED_LO), 5);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), 0);
}

static void test_ring_wraparound(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	struct accel_desc descs[3];
	int round, i;

	CHECK(qt);
	accel_queue_enable(d, 0, 4);
	for (round = 0; round < 7; round++) {
		for (i = 0; i < 3; i++)
			descs[i] = desc_fill(TEST_RAM_DATA + 16 * (3 * round + i),
					     3 * round + i + 1, 16, 0);
		accel_submit(d, 0, descs, 3);
		CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
		CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_HEAD), (3 * round + 3) % 4);
	}
	for (i = 0; i < 21; i++)
		CHECK(ram_all(qt, TEST_RAM_DATA + 16 * i, i + 1, 16));
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_COMPLETED_LO), 21);
}

static void test_queues_run_independently(void)
{
	const size_t n = 3 << 20;
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	unsigned q;

	CHECK(qt);
	for (q = 0; q < d->num_queues; q++) {
		accel_queue_enable(d, q, 8);
		msi_clear(d, q);
		qtest_memset(qt, TEST_RAM_DATA + q * n, 0x10 + q, n);
	}
	/* queue 3 halts on a bad descriptor; the others are not affected */
	accel_submit(d, 3, &(struct accel_desc){ .opcode = 99 }, 1);
	for (q = 0; q < 3; q++) {
		struct accel_desc descs[2] = {
			desc_copy(TEST_RAM_DATA + q * n, q * n, n,
				  ACCEL_DESC_DST_VRAM),
			desc_fence(TEST_RAM_DATA + 0x1000000 + 8 * q, q + 1,
				   ACCEL_DESC_IRQ),
		};

		accel_submit(d, q, descs, 2);
	}
	for (q = 0; q < 3; q++) {
		CHECK_EQ(accel_wait(d, q, 0), ACCEL_Q_STATUS_ENABLED);
		CHECK(msi_fired(d, q));
		CHECK_EQ(qtest_readq(qt, TEST_RAM_DATA + 0x1000000 + 8 * q), q + 1);
		CHECK(ram_all(qt, d->vram + q * n + n - 4096, 0x10 + q, 4096));
	}
	CHECK(accel_wait(d, 3, 0) & ACCEL_Q_STATUS_ERROR);
	CHECK(!msi_fired(d, 3));
}

/* Errors */

struct error_case {
	const char *name;
	struct accel_desc desc;
	uint32_t error;
};

static void expect_halt(struct accel_dev *d, unsigned q, uint32_t error,
			uint32_t index);

static void test_descriptor_errors(void)
{
	const uint64_t vram_size = 256ull << 20;
	const struct error_case cases[] = {
		{ "unknown opcode", { .opcode = 4 }, ACCEL_ERR_BAD_OPCODE },
		{ "reserved flag", { .opcode = ACCEL_OP_NOP, .flags = 1u << 3 },
		  ACCEL_ERR_BAD_FLAGS },
		{ "reserved field", { .opcode = ACCEL_OP_COPY, .src = TEST_RAM_DATA,
		  .dst = TEST_RAM_DATA + 64, .len = 8, .reserved = { 0, 0, 1 } },
		  ACCEL_ERR_BAD_FLAGS },
		{ "nop with length", { .opcode = ACCEL_OP_NOP, .len = 1 },
		  ACCEL_ERR_BAD_FLAGS },
		{ "fill value > 255", { .opcode = ACCEL_OP_FILL, .src = 0x100,
		  .dst = TEST_RAM_DATA, .len = 8 }, ACCEL_ERR_BAD_FLAGS },
		{ "fill from vram", desc_fill(0, 1, 8, ACCEL_DESC_SRC_VRAM |
		  ACCEL_DESC_DST_VRAM), ACCEL_ERR_BAD_FLAGS },
		{ "fence with length", { .opcode = ACCEL_OP_FENCE,
		  .dst = TEST_RAM_DATA, .len = 8 }, ACCEL_ERR_BAD_FLAGS },
		{ "zero-length copy", desc_copy(TEST_RAM_DATA, 0, 0,
		  ACCEL_DESC_DST_VRAM), ACCEL_ERR_BAD_LENGTH },
		{ "zero-length fill", desc_fill(0, 1, 0, ACCEL_DESC_DST_VRAM),
		  ACCEL_ERR_BAD_LENGTH },
		{ "source wraps", desc_copy(~0ull - 0xfff, 0, 0x2000,
		  ACCEL_DESC_DST_VRAM), ACCEL_ERR_BAD_LENGTH },
		{ "destination wraps", desc_fill(~0ull, 1, 2, 0),
		  ACCEL_ERR_BAD_LENGTH },
		{ "vram dst past end", desc_copy(TEST_RAM_DATA, vram_size - 10,
		  11, ACCEL_DESC_DST_VRAM), ACCEL_ERR_VRAM_RANGE },
		{ "vram src at end", desc_copy(vram_size, TEST_RAM_DATA, 1,
		  ACCEL_DESC_SRC_VRAM), ACCEL_ERR_VRAM_RANGE },
		{ "vram huge length", desc_copy(0, 8, ~0ull,
		  ACCEL_DESC_SRC_VRAM | ACCEL_DESC_DST_VRAM), ACCEL_ERR_VRAM_RANGE },
		{ "fence past vram", desc_fence(vram_size - 4, 1,
		  ACCEL_DESC_DST_VRAM), ACCEL_ERR_VRAM_RANGE },
		{ "dma read fault", desc_copy(TEST_UNMAPPED_ADDR, 0, 4096,
		  ACCEL_DESC_DST_VRAM), ACCEL_ERR_DMA_READ },
		{ "dma write fault", desc_copy(0, TEST_UNMAPPED_ADDR, 4096,
		  ACCEL_DESC_SRC_VRAM), ACCEL_ERR_DMA_WRITE },
		{ "fill write fault", desc_fill(TEST_UNMAPPED_ADDR, 1, 64, 0),
		  ACCEL_ERR_DMA_WRITE },
		{ "fence write fault", desc_fence(TEST_UNMAPPED_ADDR, 1, 0),
		  ACCEL_ERR_DMA_WRITE },
	};
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	unsigned i;

	CHECK(qt);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct accel_desc descs[2] = { desc_nop(0), cases[i].desc };

		accel_queue_reset(d, 1);
		accel_queue_enable(d, 1, 8);
		accel_submit(d, 1, descs, 2);
		expect_halt(d, 1, cases[i].error, 1);
		if (check_failed_flag) {
			fprintf(stderr, "  in case: %s\n", cases[i].name);
			return;
		}
	}
}

/* Check a halted queue, then reset it and show that it works again. */
static void expect_halt(struct accel_dev *d, unsigned q, uint32_t error,
			uint32_t index)
{
	unsigned ev = d->num_queues;
	uint32_t st;

	st = accel_wait(d, q, 0);
	CHECK(st & ACCEL_Q_STATUS_ERROR);
	CHECK_EQ(accel_qrd(d, q, ACCEL_Q_ERROR), error);
	CHECK_EQ(accel_qrd(d, q, ACCEL_Q_ERROR_DESC), index);
	CHECK_EQ(accel_qrd(d, q, ACCEL_Q_HEAD), index);
	CHECK(accel_rd(d, ACCEL_REG_DEV_STATUS) & ACCEL_DEV_STATUS_ERROR);
	CHECK(accel_rd(d, ACCEL_REG_IRQ_STATUS) & ACCEL_IRQ_ERROR);
	CHECK(msi_fired(d, ev));

	msi_clear(d, ev);
	accel_wr(d, ACCEL_REG_IRQ_STATUS, ACCEL_IRQ_ERROR);
	accel_queue_reset(d, q);
	CHECK_EQ(accel_qrd(d, q, ACCEL_Q_STATUS), 0);
	CHECK_EQ(accel_qrd(d, q, ACCEL_Q_ERROR), 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_DEV_STATUS), ACCEL_DEV_STATUS_READY);
	accel_qwr(d, q, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	accel_submit(d, q, &(struct accel_desc){ .opcode = ACCEL_OP_FENCE,
		     .dst = TEST_RAM_DATA + 0x100000, .src = 0x77 }, 1);
	CHECK_EQ(accel_wait(d, q, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(qtest_readq(d->qt, TEST_RAM_DATA + 0x100000), 0x77);
	qtest_writeq(d->qt, TEST_RAM_DATA + 0x100000, 0);
}

static void test_ring_errors(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	/* a doorbell past the ring */
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_NOP }, 1);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
	accel_qwr(d, 0, ACCEL_Q_TAIL, 8);
	expect_halt(d, 0, ACCEL_ERR_BAD_DOORBELL, 1);

	/* ring size not a power of two, too small, too big; base unaligned */
	accel_qwr(d, 0, ACCEL_Q_CTRL, 0);
	accel_qwr(d, 0, ACCEL_Q_RING_SIZE, 3);
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), ACCEL_ERR_BAD_RING);
	accel_queue_reset(d, 0);
	accel_qwr(d, 0, ACCEL_Q_RING_SIZE, 1);
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), ACCEL_ERR_BAD_RING);
	accel_queue_reset(d, 0);
	accel_qwr(d, 0, ACCEL_Q_RING_SIZE, ACCEL_RING_MAX_SIZE * 2);
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), ACCEL_ERR_BAD_RING);
	accel_queue_reset(d, 0);
	accel_qwr(d, 0, ACCEL_Q_RING_SIZE, 8);
	accel_qwr(d, 0, ACCEL_Q_RING_BASE_LO, 0x1020);
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), ACCEL_ERR_BAD_RING);
	CHECK(msi_fired(d, d->num_queues));
	accel_queue_reset(d, 0);

	/* a ring nothing decodes: the fetch fails */
	accel_qwr(d, 1, ACCEL_Q_RING_BASE_LO, 0);
	accel_qwr(d, 1, ACCEL_Q_RING_BASE_HI, TEST_UNMAPPED_ADDR >> 32);
	accel_qwr(d, 1, ACCEL_Q_RING_SIZE, 8);
	accel_qwr(d, 1, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	accel_qwr(d, 1, ACCEL_Q_TAIL, 1);
	CHECK(accel_wait(d, 1, 0) & ACCEL_Q_STATUS_ERROR);
	CHECK_EQ(accel_qrd(d, 1, ACCEL_Q_ERROR), ACCEL_ERR_DESC_FETCH);
	CHECK_EQ(accel_qrd(d, 1, ACCEL_Q_ERROR_DESC), 0);

	/* ring registers are read-only while enabled */
	accel_queue_enable(d, 2, 8);
	accel_qwr(d, 2, ACCEL_Q_RING_SIZE, 16);
	accel_qwr(d, 2, ACCEL_Q_RING_BASE_LO, 0x40);
	CHECK_EQ(accel_qrd(d, 2, ACCEL_Q_RING_SIZE), 8);
	CHECK_EQ(accel_qrd(d, 2, ACCEL_Q_RING_BASE_LO),
		 (uint32_t)accel_ring_addr(d, 2));

	/* a doorbell on a disabled queue is ignored */
	accel_qwr(d, 3, ACCEL_Q_TAIL, 1);
	CHECK_EQ(accel_qrd(d, 3, ACCEL_Q_TAIL), 0);
	CHECK_EQ(accel_qrd(d, 3, ACCEL_Q_STATUS), 0);

	/* registers of queues that do not exist read as zero */
	CHECK_EQ(accel_rd(d, ACCEL_QUEUE_REG(d->num_queues, ACCEL_Q_STATUS)), 0);
	accel_wr(d, ACCEL_QUEUE_REG(d->num_queues, ACCEL_Q_CTRL), 1);
	CHECK_EQ(accel_rd(d, ACCEL_QUEUE_REG(d->num_queues, ACCEL_Q_CTRL)), 0);
}

static void test_bus_master_disabled(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	accel_set_bus_master(d, false);
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_NOP }, 1);
	CHECK(accel_wait(d, 0, 0) & ACCEL_Q_STATUS_ERROR);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), ACCEL_ERR_DESC_FETCH);
	/* with MSI-X and bus mastering off, nothing reaches memory */
	CHECK(!msi_fired(d, d->num_queues));
	accel_set_bus_master(d, true);
	accel_queue_reset(d, 0);
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_NOP }, 1);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
}

static void test_dma_into_own_registers(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	/* a device reset written by the device itself must not re-enter it */
	qtest_writel(qt, TEST_RAM_DATA, ACCEL_DEV_CTRL_RESET);
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_COPY,
		     .src = TEST_RAM_DATA, .dst = d->regs + ACCEL_REG_DEV_CTRL,
		     .len = 4 }, 1);
	CHECK(accel_wait(d, 0, 0) & ACCEL_Q_STATUS_ERROR);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), ACCEL_ERR_DMA_WRITE);
	CHECK(accel_qrd(d, 0, ACCEL_Q_STATUS) & ACCEL_Q_STATUS_ENABLED);
}

/* Bridge Control's Secondary Bus Reset, and Slot Control's power off. */
#define PORT_BRIDGE_CONTROL	0x3e
#define PORT_BUS_RESET		0x40
#define PCI_CAP_ID_EXP		0x10
#define PCI_EXP_SLTCTL		0x18
#define PCI_EXP_SLTCTL_OFF	0x0700	/* power and its indicator off */

/*
 * The device's own DMA writes @val to config register @off of its root
 * port (with IRQ on the descriptor, and a FENCE after it): the write
 * resets or unplugs the device in the middle of the queue's work.
 */
static void dma_into_port_config(struct accel_dev *d, int off, uint16_t val)
{
	struct accel_desc descs[2] = {
		desc_copy(TEST_RAM_DATA, accel_port_ecam(d, off), 2,
			  ACCEL_DESC_IRQ),
		desc_fence(TEST_RAM_DATA + 8, 0x5a5a, ACCEL_DESC_IRQ),
	};
	struct timespec pause = { .tv_nsec = 100 * 1000 * 1000 };

	pci_ecam_enable(d->qt);
	qtest_writel(d->qt, TEST_RAM_DATA, val);
	qtest_writeq(d->qt, TEST_RAM_DATA + 8, 0);
	msi_clear(d, 0);
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, descs, 2);
	nanosleep(&pause, NULL);
}

static void test_reset_by_own_dma(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	dma_into_port_config(d, PORT_BRIDGE_CONTROL, PORT_BUS_RESET);
	pci_cfg_write(qt, 0, accel_port_devfn(d), PORT_BRIDGE_CONTROL, 2, 0);
	CHECK(accel_dev_init(qt, 0, d) == 0);
	/* the reset queue finished nothing after it: no completion, no IRQ */
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_STATUS), 0);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_HEAD), 0);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_COMPLETED_LO), 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), 0);
	CHECK(!msi_fired(d, 0));
	CHECK_EQ(qtest_readq(qt, TEST_RAM_DATA + 8), 0);
	/* and it works again */
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_NOP }, 1);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
}

/* With the root port's native hotplug, as q35 has it without ACPI's. */
static void test_unplug_by_own_dma(void)
{
	struct qtest *qt = boot_with(1, "", "-global "
		"ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off");
	struct accel_dev *d = &dev[0];
	int exp = pci_find_cap(qt, 0, accel_port_devfn(d), PCI_CAP_ID_EXP);
	uint16_t sltctl;

	CHECK(qt && exp);
	sltctl = pci_cfg_read(qt, 0, accel_port_devfn(d), exp + PCI_EXP_SLTCTL, 2);
	dma_into_port_config(d, exp + PCI_EXP_SLTCTL, sltctl | PCI_EXP_SLTCTL_OFF);
	/* the device is gone, QEMU lives, nothing ran after the unplug */
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0, 4), 0xffffffff);
	CHECK(!msi_fired(d, 0));
	CHECK_EQ(qtest_readq(qt, TEST_RAM_DATA + 8), 0);
	CHECK(qtest_alive(qt));
}

/*
 * Whether the device on @bus is gone (its config space reads all ones)
 * within a second: a message or a worker's step may unplug it just after
 * the access that made it due.
 */
static bool unplugged(struct qtest *qt, int bus)
{
	for (int i = 0; i < 100 && pci_cfg_read(qt, bus, 0, 0, 4) != 0xffffffff; i++)
		usleep(10000);
	return pci_cfg_read(qt, bus, 0, 0, 4) == 0xffffffff;
}

/*
 * @a's vector 0 sends a message to its root port's Slot Control that
 * powers the slot off (unplugging @a), and queue 0's completion waits for
 * it behind IRQ_MASK: unmasking source 0 makes the message due.
 */
static void pending_message_unplugs(struct accel_dev *a)
{
	struct qtest *qt = a->qt;
	int exp = pci_find_cap(qt, 0, accel_port_devfn(a), PCI_CAP_ID_EXP);
	uint16_t sltctl;

	CHECK(exp);
	pci_ecam_enable(qt);
	sltctl = pci_cfg_read(qt, 0, accel_port_devfn(a), exp + PCI_EXP_SLTCTL, 2);
	qtest_writel(qt, a->msix_table, accel_port_ecam(a, exp + PCI_EXP_SLTCTL));
	qtest_writel(qt, a->msix_table + 4, 0);
	qtest_writel(qt, a->msix_table + 8, sltctl | PCI_EXP_SLTCTL_OFF);
	accel_wr(a, ACCEL_REG_IRQ_MASK, ACCEL_IRQ_QUEUE(0));
	accel_queue_enable(a, 0, 8);
	CHECK_EQ(nop_with_irq(a, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(accel_rd(a, ACCEL_REG_IRQ_STATUS), ACCEL_IRQ_QUEUE(0));
}

/*
 * Device B copies from RAM into device A's registers, from IRQ_MASK on.
 * Its first access unmasks a completion that A has pending, whose message
 * goes to A's root port's Slot Control and unplugs A; the copy's later
 * accesses (one piece of B's, under the BQL) go on into A's queue 0, up to
 * a doorbell beyond its ring, which would halt it and raise an interrupt
 * on the unplugged device (a use after free, under ASan).
 */
static void test_unplug_under_a_peers_copy_into_its_registers(void)
{
	struct qtest *qt = boot_with(2, "", "-global "
		"ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off");
	struct accel_dev *a = &dev[0], *b = &dev[1];
	uint32_t words[(ACCEL_QUEUE_REG(0, ACCEL_Q_TAIL) - ACCEL_REG_IRQ_MASK) / 4 + 1] = { 0 };

	CHECK(qt);
	pending_message_unplugs(a);

	words[(ACCEL_QUEUE_REG(0, ACCEL_Q_CTRL) - ACCEL_REG_IRQ_MASK) / 4] = ACCEL_Q_CTRL_ENABLE;
	words[(ACCEL_QUEUE_REG(0, ACCEL_Q_TAIL) - ACCEL_REG_IRQ_MASK) / 4] = 0xffff;
	qtest_memwrite(qt, TEST_RAM_DATA, words, sizeof(words));
	accel_queue_enable(b, 0, 8);
	accel_submit(b, 0, &(struct accel_desc){ .opcode = ACCEL_OP_COPY,
		     .src = TEST_RAM_DATA, .dst = a->regs + ACCEL_REG_IRQ_MASK,
		     .len = sizeof(words) }, 1);
	accel_wait(b, 0, 0);
	/* A is gone, QEMU lives, and B answers */
	CHECK(qtest_alive(qt));
	CHECK(unplugged(qt, 1));
	CHECK_EQ(accel_rd(b, ACCEL_REG_MAGIC), ACCEL_MAGIC);
}

/*
 * The same through the MSI-X table: B's copy into A's table unmasks a
 * vector whose message QEMU's MSI-X holds pending, to A's root port's Slot
 * Control, and goes on into the next vectors' entries.
 */
static void test_unplug_under_a_peers_copy_into_its_msix_table(void)
{
	struct qtest *qt = boot_with(2, "", "-global "
		"ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off");
	struct accel_dev *a = &dev[0], *b = &dev[1];
	uint32_t words[1 + 4 * 3] = { 0 };	/* vector 0's control, then 1 to 3 */
	int exp = pci_find_cap(qt, 0, accel_port_devfn(a), PCI_CAP_ID_EXP);
	uint16_t sltctl;

	CHECK(qt && exp);
	pci_ecam_enable(qt);
	sltctl = pci_cfg_read(qt, 0, accel_port_devfn(a), exp + PCI_EXP_SLTCTL, 2);
	qtest_writel(qt, a->msix_table + 12, 1);	/* vector 0 masked */
	qtest_writel(qt, a->msix_table, accel_port_ecam(a, exp + PCI_EXP_SLTCTL));
	qtest_writel(qt, a->msix_table + 4, 0);
	qtest_writel(qt, a->msix_table + 8, sltctl | PCI_EXP_SLTCTL_OFF);
	accel_queue_enable(a, 0, 8);
	CHECK_EQ(nop_with_irq(a, 0), ACCEL_Q_STATUS_ENABLED);

	qtest_memwrite(qt, TEST_RAM_DATA, words, sizeof(words));
	accel_queue_enable(b, 0, 8);
	accel_submit(b, 0, &(struct accel_desc){ .opcode = ACCEL_OP_COPY,
		     .src = TEST_RAM_DATA, .dst = a->msix_table + 12,
		     .len = sizeof(words) }, 1);
	accel_wait(b, 0, 0);
	CHECK(qtest_alive(qt));
	CHECK(unplugged(qt, 1));
	CHECK_EQ(accel_rd(b, ACCEL_REG_MAGIC), ACCEL_MAGIC);
}

/*
 * As above, with A's MSI-X table (BAR4) moved over the second 4 KiB of its
 * BAR0: one access goes from IRQ_MASK, whose unmasking makes A's pending
 * message due (unplugging A), on into A's table; by a guest's string
 * store (one qtest write) when @peer is NULL, else by @peer's copy. The
 * message goes after the access, so the access meets a device that is
 * still there. A may survive: the access rewrote the table entry (address
 * 0) before the message went.
 */
static void unplug_under_one_access_into_a_moved_msix_table(struct accel_dev *peer)
{
	struct qtest *qt = boot_with(2, "", "-global "
		"ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off");
	struct accel_dev *a = &dev[0];
	uint32_t words[(0x1000 - ACCEL_REG_IRQ_MASK + 16) / 4] = { 0 };

	CHECK(qt);
	pending_message_unplugs(a);
	pci_cfg_write(qt, 1, 0, 0x20, 4, (uint32_t)(a->regs + 0x1000));
	pci_cfg_write(qt, 1, 0, 0x24, 4, 0);

	if (!peer) {
		qtest_memwrite(qt, a->regs + ACCEL_REG_IRQ_MASK, words, sizeof(words));
	} else {
		qtest_memwrite(qt, TEST_RAM_DATA, words, sizeof(words));
		accel_queue_enable(peer, 0, 8);
		accel_submit(peer, 0, &(struct accel_desc){ .opcode = ACCEL_OP_COPY,
			     .src = TEST_RAM_DATA, .dst = a->regs + ACCEL_REG_IRQ_MASK,
			     .len = sizeof(words) }, 1);
		accel_wait(peer, 0, 0);
		CHECK_EQ(accel_rd(peer, ACCEL_REG_MAGIC), ACCEL_MAGIC);
	}
	CHECK(qtest_alive(qt));
}

static void test_unplug_under_one_access_into_a_moved_msix_table(void)
{
	unplug_under_one_access_into_a_moved_msix_table(NULL);
	unplug_under_one_access_into_a_moved_msix_table(&dev[1]);
}

/*
 * One access (a guest's string store, another device's DMA) from queue
 * 15's TAIL on into the MSI-X table, moved to @bar4_off of BAR0: the
 * doorbell's work is a copy into the root port's Slot Control, which
 * unplugs the device. A doorbell leaves such a step to the worker, after
 * the access: the access meets a device that is still there.
 */
static void unplug_by_a_doorbell_inside_one_access(uint64_t bar4_off)
{
	struct qtest *qt = boot_with(1, "queues=16", "-global "
		"ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off");
	struct accel_dev *a = &dev[0];
	int exp = pci_find_cap(qt, 0, accel_port_devfn(a), PCI_CAP_ID_EXP);
	uint64_t start = a->regs + ACCEL_QUEUE_REG(15, ACCEL_Q_TAIL);
	size_t len = a->regs + bar4_off + 16 - start;
	uint32_t *words = calloc(1, len);

	CHECK(qt && exp && words);
	pci_ecam_enable(qt);
	qtest_writel(qt, TEST_RAM_DATA, pci_cfg_read(qt, 0, accel_port_devfn(a),
		     exp + PCI_EXP_SLTCTL, 2) | PCI_EXP_SLTCTL_OFF);
	pci_cfg_write(qt, 1, 0, 0x20, 4, (uint32_t)(a->regs + bar4_off));
	pci_cfg_write(qt, 1, 0, 0x24, 4, 0);
	accel_queue_enable(a, 15, 8);
	accel_qwr(a, 15, ACCEL_Q_TAIL, 0);
	qtest_memwrite(qt, accel_ring_addr(a, 15), &(struct accel_desc){
		.opcode = ACCEL_OP_COPY, .src = TEST_RAM_DATA,
		.dst = accel_port_ecam(a, exp + PCI_EXP_SLTCTL), .len = 2 },
		sizeof(struct accel_desc));
	words[0] = 1;		/* TAIL */
	qtest_memwrite(qt, start, words, len);
	free(words);
	CHECK(qtest_alive(qt));
	CHECK(unplugged(qt, 1));
}

static void test_unplug_by_a_doorbell_inside_one_access_to_the_msix_table(void)
{
	unplug_by_a_doorbell_inside_one_access(0x4000);	/* BAR4 after BAR0 */
	unplug_by_a_doorbell_inside_one_access(0x2000);	/* BAR4 over BAR0 */
}

/* A completion while MSI-X is off is a message once MSI-X is on. */
static void test_a_source_pending_while_msix_is_off_is_sent_when_on(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *a = &dev[0];

	CHECK(qt);
	pci_cfg_write(qt, 1, 0, a->msix_cap + 2, 2, 0);
	msi_clear(a, 0);
	accel_queue_enable(a, 0, 8);
	CHECK_EQ(nop_with_irq(a, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK(!msi_fired(a, 0));
	pci_cfg_write(qt, 1, 0, a->msix_cap + 2, 2, 0x8000);
	CHECK(msi_fired(a, 0));
	CHECK_EQ(accel_rd(a, ACCEL_REG_IRQ_STATUS), ACCEL_IRQ_QUEUE(0));
}

/* The bus address of @d's own config register @off, through ECAM. */
static uint64_t dev_ecam(const struct accel_dev *d, int off)
{
	return TEST_ECAM_BASE + ((uint64_t)(d->index + 1) << 20) + off;
}

/*
 * A's vector 0 is masked in its table and holds queue 0's completion in
 * the PBA. B's doorbell then runs, in one write, a copy that unmasks it
 * (releasing the message, which goes after the write) and @then.
 */
static void release_a_message_then(struct accel_dev *a, struct accel_dev *b,
				   struct accel_desc then)
{
	struct accel_desc d[2] = {
		desc_copy(TEST_RAM_DATA, a->msix_table + 12, 4, 0), then,
	};
	uint32_t words[2] = { 0, ACCEL_DEV_CTRL_RESET };

	pci_ecam_enable(a->qt);
	qtest_writel(a->qt, a->msix_table + 12, 1);
	accel_queue_enable(a, 0, 8);
	CHECK_EQ(nop_with_irq(a, 0), ACCEL_Q_STATUS_ENABLED);
	msi_clear(a, 0);
	qtest_memwrite(a->qt, TEST_RAM_DATA, words, sizeof(words));
	accel_queue_enable(b, 0, 8);
	accel_submit(b, 0, d, 2);
	CHECK_EQ(accel_wait(b, 0, 0), ACCEL_Q_STATUS_ENABLED);
}

/* MSI-X turned off before the released message went: it waits for MSI-X. */
static void test_a_released_message_waits_for_msix(void)
{
	struct qtest *qt = boot(2, "");
	struct accel_dev *a = &dev[0];

	CHECK(qt);
	release_a_message_then(a, &dev[1], desc_copy(TEST_RAM_DATA,
			       dev_ecam(a, a->msix_cap + 2), 2, 0));
	CHECK(!msi_fired(a, 0));
	pci_cfg_write(qt, 1, 0, a->msix_cap + 2, 2, 0x8000);	/* on again */
	CHECK(msi_fired(a, 0));
}

/* A device reset cancels a released message, and one held in the PBA. */
static void test_a_reset_cancels_messages(void)
{
	struct qtest *qt = boot(2, "");
	struct accel_dev *a = &dev[0];

	CHECK(qt);
	release_a_message_then(a, &dev[1], desc_copy(TEST_RAM_DATA + 4,
			       a->regs + ACCEL_REG_DEV_CTRL, 4, 0));
	CHECK_EQ(accel_rd(a, ACCEL_REG_IRQ_STATUS), 0);
	CHECK(!msi_fired(a, 0));

	qtest_writel(qt, a->msix_table + 12, 1);
	accel_queue_enable(a, 0, 8);
	CHECK_EQ(nop_with_irq(a, 0), ACCEL_Q_STATUS_ENABLED);
	accel_wr(a, ACCEL_REG_DEV_CTRL, ACCEL_DEV_CTRL_RESET);
	qtest_writel(qt, a->msix_table + 12, 0);
	CHECK(!msi_fired(a, 0));
}

/* A source acknowledged while MSI-X is off leaves nothing in the PBA. */
static void test_an_ack_with_msix_off_cancels_the_held_message(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *a = &dev[0];

	CHECK(qt);
	qtest_writel(qt, a->msix_table + 12, 1);
	accel_queue_enable(a, 0, 8);
	CHECK_EQ(nop_with_irq(a, 0), ACCEL_Q_STATUS_ENABLED);
	msi_clear(a, 0);
	pci_cfg_write(qt, 1, 0, a->msix_cap + 2, 2, 0);
	accel_wr(a, ACCEL_REG_IRQ_STATUS, ACCEL_IRQ_QUEUE(0));
	pci_cfg_write(qt, 1, 0, a->msix_cap + 2, 2, 0x8000);
	qtest_writel(qt, a->msix_table + 12, 0);
	CHECK(!msi_fired(a, 0));
}

/* Budgets: what one register write, or one slice of a queue, may do */

/*
 * What a guest command may wait for the BQL, generously: the budgets
 * bound it to milliseconds, where a ring of tiny descriptors run inline
 * took 0.8 s (18 s under ASan).
 */
#define BQL_WAIT_MAX_S 0.5

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * Queue @q of @d gets a ring of @entries descriptors at @base (guest RAM),
 * all but one of them 1-byte copies from RAM to RAM, not yet rung.
 */
static void ring_of_tiny_copies(struct accel_dev *d, unsigned q, uint64_t base,
				uint32_t entries)
{
	struct accel_desc *ring = calloc(entries, sizeof(*ring));
	uint32_t i;

	CHECK(ring);
	for (i = 0; i + 1 < entries; i++)
		ring[i] = desc_copy(TEST_RAM_DATA + i, TEST_RAM_DATA + 0x100000 + i, 1, 0);
	qtest_memwrite(d->qt, base, ring, (size_t)entries * sizeof(*ring));
	free(ring);
	accel_qwr(d, q, ACCEL_Q_RING_BASE_LO, (uint32_t)base);
	accel_qwr(d, q, ACCEL_Q_RING_BASE_HI, base >> 32);
	accel_qwr(d, q, ACCEL_Q_RING_SIZE, entries);
	accel_qwr(d, q, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
}

/* The time since @start, within BQL_WAIT_MAX_S, printed. */
static void check_waited(const char *what, double start)
{
	double waited = now_s() - start;

	printf("# %s took %.1f ms\n", what, waited * 1e3);
	CHECK(waited < BQL_WAIT_MAX_S);
}

/* QEMU's arguments for a QMP socket of its own at @path, which they name. */
static const char *with_qmp(char *path, size_t len)
{
	static char args[160];
	static int n;

	snprintf(path, len, "/tmp/accel-qmp-%d-%d", (int)getpid(), n++);
	snprintf(args, sizeof(args), "-qmp unix:%s,server=on,wait=off", path);
	return args;
}

/*
 * While @d's queue @q works, a register read (qtest) and a QMP command
 * each wait no longer than BQL_WAIT_MAX_S.
 */
static void check_answers_while_busy(struct accel_dev *d, unsigned q, const char *qmp_path)
{
	double reg = 0, qmp = 0, t;
	int fd = qmp_connect(qmp_path), i;

	CHECK(fd >= 0);
	for (i = 0; i < 20 && (accel_qrd(d, q, ACCEL_Q_STATUS) & ACCEL_Q_STATUS_BUSY); i++) {
		t = now_s();
		CHECK_EQ(accel_rd(d, ACCEL_REG_MAGIC), ACCEL_MAGIC);
		if (now_s() - t > reg)
			reg = now_s() - t;
		t = now_s();
		CHECK(qmp_execute(fd, "{\"execute\": \"query-status\"}"));
		if (now_s() - t > qmp)
			qmp = now_s() - t;
	}
	printf("# meanwhile, the longest of %d register reads took %.1f ms, of QMP commands %.1f ms\n",
	       i, reg * 1e3, qmp * 1e3);
	CHECK(reg < BQL_WAIT_MAX_S && qmp < BQL_WAIT_MAX_S);
	close(fd);
	unlink(qmp_path);
}

/*
 * A full ring of 1-byte copies: the doorbell write does a few of them and
 * returns, and the worker's slices let register reads and QMP through.
 */
static void test_tiny_descriptors_bound_a_doorbell(void)
{
	const uint32_t entries = ACCEL_RING_MAX_SIZE;
	char qmp[64];
	struct qtest *qt = boot_with(1, "", with_qmp(qmp, sizeof(qmp)));
	struct accel_dev *d = &dev[0];
	double t;

	CHECK(qt);
	ring_of_tiny_copies(d, 0, TEST_RAM_DATA + 0x1000000, entries);
	t = now_s();
	accel_qwr(d, 0, ACCEL_Q_TAIL, entries - 1);
	check_waited("the doorbell write", t);
	/* it left most of the ring to the worker's slices */
	CHECK(accel_qrd(d, 0, ACCEL_Q_STATUS) & ACCEL_Q_STATUS_BUSY);
	check_answers_while_busy(d, 0, qmp);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_COMPLETED_LO), entries - 1);
}

/*
 * The same through a peer: device A's descriptors are 4-byte copies into
 * device B's doorbell, whose ring is full of 1-byte copies. A doorbell
 * rung by a device's DMA only wakes that queue's worker.
 */
static void test_tiny_descriptors_through_a_peer_bound_a_doorbell(void)
{
	const uint32_t entries = ACCEL_RING_MAX_SIZE, tail = entries - 1;
	enum { COPIES = 255 };
	struct accel_desc rings[COPIES];
	char qmp[64];
	struct qtest *qt = boot_with(2, "", with_qmp(qmp, sizeof(qmp)));
	struct accel_dev *a = &dev[0], *b = &dev[1];
	double t;

	CHECK(qt);
	ring_of_tiny_copies(b, 0, TEST_RAM_DATA + 0x1000000, entries);
	qtest_memwrite(qt, TEST_RAM_DATA + 0x800000, &tail, sizeof(tail));
	for (unsigned i = 0; i < COPIES; i++)
		rings[i] = desc_copy(TEST_RAM_DATA + 0x800000,
				     b->regs + ACCEL_QUEUE_REG(0, ACCEL_Q_TAIL), 4, 0);
	accel_queue_enable(a, 0, 256);
	qtest_memwrite(qt, accel_ring_addr(a, 0), rings, sizeof(rings));
	t = now_s();
	accel_qwr(a, 0, ACCEL_Q_TAIL, COPIES);
	check_waited("the first device's doorbell write", t);
	/*
	 * A's worker rings B (a copy into registers is no doorbell's inline
	 * work), and B's doorbell, rung from A's copies, leaves B's ring to
	 * B's worker
	 */
	for (int i = 0; i < 100 && accel_qrd(b, 0, ACCEL_Q_TAIL) != tail; i++)
		usleep(1000);
	CHECK(accel_qrd(b, 0, ACCEL_Q_STATUS) & ACCEL_Q_STATUS_BUSY);
	check_answers_while_busy(b, 0, qmp);
	CHECK_EQ(accel_wait(a, 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(accel_wait(b, 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(accel_qrd(b, 0, ACCEL_Q_COMPLETED_LO), tail);
}

/*
 * A copy whose source is MMIO (config space, read 4 bytes at a time under
 * the BQL) runs for seconds; MMIO to the device is served meanwhile.
 */
static void test_mmio_copy_lets_others_run(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	struct timespec pause = { .tv_nsec = 20 * 1000 * 1000 };
	int i;

	CHECK(qt);
	pci_ecam_enable(qt);
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_COPY,
		     .flags = ACCEL_DESC_DST_VRAM, .src = TEST_ECAM_BASE,
		     .len = 128 << 20 }, 1);
	for (i = 0; i < 5; i++) {
		nanosleep(&pause, NULL);
		CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_STATUS),
			 ACCEL_Q_STATUS_ENABLED | ACCEL_Q_STATUS_BUSY);
	}
	accel_queue_reset(d, 0);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_STATUS), 0);
	/* what it copied is config space: bus 0's host bridge first */
	CHECK_EQ(qtest_readl(qt, d->vram), pci_cfg_read(qt, 0, 0, 0, 4));
}

/*
 * An MSI-X message aimed at the device's own registers is refused, whether
 * the doorbell write sends it or the queue's worker does (after a fill
 * longer than what a doorbell does itself).
 */
static void test_msix_into_own_registers(void)
{
	struct accel_desc descs[2] = {
		desc_fill(0, 1, 16 << 20, ACCEL_DESC_DST_VRAM),
		desc_nop(ACCEL_DESC_IRQ),
	};
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	accel_wr(d, ACCEL_REG_SCRATCH, 5);
	qtest_writel(qt, d->msix_table, d->regs + ACCEL_REG_SCRATCH);
	qtest_writel(qt, d->msix_table + 8, 0x1234);
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, descs, 2);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), 1);
	CHECK_EQ(accel_rd(d, ACCEL_REG_SCRATCH), 5);
	CHECK(qtest_alive(qt));
}

/*
 * A doorbell beyond the ring halts a queue that is copying: the descriptor
 * in progress does not complete after the halt (HEAD stays at it).
 */
static void test_bad_doorbell_halts_a_copying_queue(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	struct timespec pause = { .tv_nsec = 20 * 1000 * 1000 };
	struct accel_desc descs[6];
	int trial, i;

	CHECK(qt);
	for (i = 0; i < 6; i++)
		descs[i] = desc_copy(TEST_RAM_DATA, (uint64_t)i << 22, 4 << 20,
				     ACCEL_DESC_DST_VRAM | ACCEL_DESC_IRQ);
	for (trial = 0; trial < 20; trial++) {
		struct timespec early = { .tv_nsec = 1000000 + trial * 97000 };

		accel_queue_enable(d, 0, 8);
		accel_submit(d, 0, descs, 6);
		nanosleep(&early, NULL);
		accel_qwr(d, 0, ACCEL_Q_TAIL, 8);
		nanosleep(&pause, NULL);
		CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), ACCEL_ERR_BAD_DOORBELL);
		CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_HEAD),
			 accel_qrd(d, 0, ACCEL_Q_ERROR_DESC));
		CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_COMPLETED_LO),
			 accel_qrd(d, 0, ACCEL_Q_HEAD));
		accel_queue_reset(d, 0);
	}
}

/*
 * HEAD survives a disable; a ring made smaller meanwhile does not hold it.
 * Enabling then fails with BAD_RING instead of fetching outside the ring
 * (here past 2^64, wrapping to low memory).
 */
static void test_ring_resized_while_disabled(void)
{
	const uint64_t base = 0xffffffffffffff40ull;	/* room for 2 entries */
	struct accel_desc nops[5] = { desc_nop(0), desc_nop(0), desc_nop(0),
				      desc_nop(0), desc_nop(0) };
	struct accel_desc fence = desc_fence(TEST_RAM_DATA, 0xbadc0ffee, 0);
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, nops, 5);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
	accel_qwr(d, 0, ACCEL_Q_CTRL, 0);
	accel_qwr(d, 0, ACCEL_Q_RING_BASE_LO, (uint32_t)base);
	accel_qwr(d, 0, ACCEL_Q_RING_BASE_HI, base >> 32);
	accel_qwr(d, 0, ACCEL_Q_RING_SIZE, 2);
	qtest_writeq(qt, TEST_RAM_DATA, 0);
	qtest_memwrite(qt, 0x80, &fence, sizeof(fence));	/* base + 5 * 64 */
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), ACCEL_ERR_BAD_RING);
	accel_qwr(d, 0, ACCEL_Q_TAIL, 1);
	CHECK_EQ(accel_wait(d, 0, 0) & ACCEL_Q_STATUS_ERROR, ACCEL_Q_STATUS_ERROR);
	CHECK_EQ(qtest_readq(qt, TEST_RAM_DATA), 0);
}

/*
 * Unmasking MSI-X in config space sends the messages held pending; one
 * aimed at the device's own registers is refused there too.
 */
static void test_msix_unmask_does_not_reenter(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	accel_wr(d, ACCEL_REG_SCRATCH, 5);
	pci_cfg_write(qt, 1, 0, d->msix_cap + 2, 2, 0xc000);	/* function masked */
	qtest_writel(qt, d->msix_table, d->regs + ACCEL_REG_DEV_CTRL);
	qtest_writel(qt, d->msix_table + 8, ACCEL_DEV_CTRL_RESET);
	accel_queue_enable(d, 0, 8);
	CHECK_EQ(nop_with_irq(d, 0), ACCEL_Q_STATUS_ENABLED);
	pci_cfg_write(qt, 1, 0, d->msix_cap + 2, 2, 0x8000);	/* unmasked */
	CHECK_EQ(accel_rd(d, ACCEL_REG_SCRATCH), 5);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_RING_SIZE), 8);
}

/* A source acknowledged while its vector was masked sends nothing later. */
static void test_acked_source_sends_no_pending_message(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	qtest_writel(qt, d->msix_table + 12, 1);	/* vector 0 masked */
	msi_clear(d, 0);
	accel_queue_enable(d, 0, 8);
	CHECK_EQ(nop_with_irq(d, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK(!msi_fired(d, 0));
	accel_wr(d, ACCEL_REG_IRQ_STATUS, ACCEL_IRQ_QUEUE(0));
	qtest_writel(qt, d->msix_table + 12, 0);	/* unmasked */
	CHECK(!msi_fired(d, 0));
	/* a source still pending is sent at the unmask, as before */
	qtest_writel(qt, d->msix_table + 12, 1);
	CHECK_EQ(nop_with_irq(d, 0), ACCEL_Q_STATUS_ENABLED);
	qtest_writel(qt, d->msix_table + 12, 0);
	CHECK(msi_fired(d, 0));
}

/* A ring may end at the last byte of the bus: 2^64 - 1. */
static void test_ring_ending_at_the_top(void)
{
	const uint64_t base = 0xffffffffffffff80ull;	/* 2 entries */
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	accel_qwr(d, 0, ACCEL_Q_RING_BASE_LO, (uint32_t)base);
	accel_qwr(d, 0, ACCEL_Q_RING_BASE_HI, base >> 32);
	accel_qwr(d, 0, ACCEL_Q_RING_SIZE, 2);
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_STATUS), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), 0);
}

/* Resets */

/* Offset of the first zero word of [@addr, @addr + @len), whose written part
 * is a prefix (a fill runs from low to high addresses). */
static uint64_t fill_frontier(struct qtest *qt, uint64_t addr, uint64_t len)
{
	uint64_t lo = 0, hi = len;

	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2 & ~3ull;

		if (qtest_readl(qt, addr + mid))
			lo = mid + 4;
		else
			hi = mid;
	}
	return lo;
}

static void stop_by_disable(struct accel_dev *d)
{
	accel_qwr(d, 0, ACCEL_Q_CTRL, 0);
}

static void stop_by_queue_reset(struct accel_dev *d)
{
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_RESET);
}

static void stop_by_device_reset(struct accel_dev *d)
{
	accel_wr(d, ACCEL_REG_DEV_CTRL, ACCEL_DEV_CTRL_RESET);
}

static void stop_by_bus_master_off(struct accel_dev *d)
{
	accel_set_bus_master(d, false);
}

/*
 * Once the register write that stops a queue (or turns off its DMA) has
 * returned, the device writes no more memory. A long fill of guest RAM is
 * stopped early, its frontier read at once and again later: it must not
 * have moved. The copy in flight ends within a millisecond, so a stop that
 * does not wait for it is caught only if the first reading is quick
 * enough: each stop is tried several times, Bus Master Enable most (the
 * config write rebuilds QEMU's memory map, which takes about as long as
 * the copy in flight).
 */
static void test_stop_freezes_memory(void)
{
	static void (*const stops[])(struct accel_dev *) = {
		stop_by_disable, stop_by_queue_reset, stop_by_device_reset,
		stop_by_bus_master_off, stop_by_bus_master_off,
		stop_by_bus_master_off,
	};
	const uint64_t area = TEST_RAM_DATA, len = 256 << 20;
	struct timespec pause = { .tv_nsec = 20 * 1000 * 1000 };
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	struct accel_desc fill = desc_fill(area, 0xab, len, 0);
	const unsigned nstops = sizeof(stops) / sizeof(stops[0]);
	uint64_t first, written = len;
	unsigned i;

	CHECK(qt);
	for (i = 0; i < 4 * nstops; i++) {
		unsigned tries = 0;

		/*
		 * A fill that ended before its stop (this process was not
		 * scheduled for the fill's 25 ms) tells nothing: tried again,
		 * up to five times. Only what the last fill wrote is cleared:
		 * clearing all 256 MiB each time was most of the test's time.
		 */
		do {
			accel_set_bus_master(d, true);
			qtest_memset(qt, area, 0, written);
			accel_queue_reset(d, 0);
			accel_queue_enable(d, 0, 8);
			accel_submit(d, 0, &fill, 1);
			while (!qtest_readl(qt, area))
				;
			stops[i % nstops](d);
			first = fill_frontier(qt, area, len);
			written = first;
		} while (first == len && ++tries < 5);
		CHECK(first < len);
		nanosleep(&pause, NULL);
		CHECK_EQ(fill_frontier(qt, area, len), first);
	}
	accel_set_bus_master(d, true);
}

/*
 * Unplugging the device ends all of its work: a fill of guest RAM that
 * QEMU's thread pool is moving stops with the unplug (its frontier stays
 * where it was), and a fill waiting for its throttled link writes nothing
 * once the virtual clock passes the link's time.
 */
static void test_unplug_stops_transfers_and_timers(void)
{
	const uint64_t area = TEST_RAM_DATA, len = 256 << 20;
	const uint64_t late = area + len + (16 << 20), late_len = 1 << 20;
	struct timespec pause = { .tv_nsec = 20 * 1000 * 1000 };
	struct qtest *qt = boot_with(1, "dma-bandwidth=1G", "-global "
		"ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off");
	struct accel_dev *d = &dev[0];
	struct accel_desc fill = desc_fill(area, 0xab, len, 0);
	struct accel_desc late_fill = desc_fill(late, 0xcd, late_len, 0);
	int exp = pci_find_cap(qt, 0, accel_port_devfn(d), PCI_CAP_ID_EXP);
	uint16_t sltctl;
	uint64_t first;

	CHECK(qt && exp);
	qtest_memset(qt, area, 0, len);
	qtest_memset(qt, late, 0, late_len);
	accel_queue_enable(d, 0, 8);
	accel_queue_enable(d, 1, 8);
	/* the link's time for the whole fill passes at once */
	accel_submit(d, 0, &fill, 1);
	qtest_clock_step(qt, 1000 * 1000 * 1000);
	while (!qtest_readl(qt, area))
		;
	/* queue 1's link makes it wait a millisecond of virtual time */
	accel_submit(d, 1, &late_fill, 1);
	sltctl = pci_cfg_read(qt, 0, accel_port_devfn(d), exp + PCI_EXP_SLTCTL, 2);
	pci_cfg_write(qt, 0, accel_port_devfn(d), exp + PCI_EXP_SLTCTL, 2,
		      sltctl | PCI_EXP_SLTCTL_OFF);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0, 4), 0xffffffff);
	first = fill_frontier(qt, area, len);
	CHECK(first < len);
	qtest_clock_step(qt, 1000 * 1000 * 1000);
	nanosleep(&pause, NULL);
	CHECK_EQ(fill_frontier(qt, area, len), first);
	CHECK(ram_all(qt, late, 0, late_len));
	CHECK(qtest_alive(qt));
}

/* A disabled queue enabled again touches nothing until it is rung. */
static void test_reenabled_queue_waits_for_doorbell(void)
{
	const uint64_t area = TEST_RAM_DATA, len = 256 << 20;
	struct timespec pause = { .tv_nsec = 50 * 1000 * 1000 };
	struct accel_desc fill = desc_fill(area, 0xcd, len, 0);
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	uint64_t first;

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, &fill, 1);
	while (!qtest_readl(qt, area))
		;
	stop_by_disable(d);
	first = fill_frontier(qt, area, len);
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	nanosleep(&pause, NULL);
	CHECK_EQ(fill_frontier(qt, area, len), first);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_STATUS),
		 ACCEL_Q_STATUS_ENABLED | ACCEL_Q_STATUS_BUSY);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_HEAD), 0);
	/* rung again, it runs the descriptor from the start */
	accel_qwr(d, 0, ACCEL_Q_TAIL, 1);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK(ram_all(qt, area + len - 4096, 0xcd, 4096));
}

static void test_queue_reset(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	struct accel_desc nops[3] = { desc_nop(0), desc_nop(0), desc_nop(0) };

	CHECK(qt);
	accel_queue_enable(d, 1, 16);
	accel_submit(d, 1, nops, 3);
	CHECK_EQ(accel_wait(d, 1, 0), ACCEL_Q_STATUS_ENABLED);
	accel_queue_reset(d, 1);
	CHECK_EQ(accel_qrd(d, 1, ACCEL_Q_CTRL), 0);
	CHECK_EQ(accel_qrd(d, 1, ACCEL_Q_HEAD), 0);
	CHECK_EQ(accel_qrd(d, 1, ACCEL_Q_TAIL), 0);
	CHECK_EQ(accel_qrd(d, 1, ACCEL_Q_COMPLETED_LO), 0);
	/* the ring configuration survives a queue reset */
	CHECK_EQ(accel_qrd(d, 1, ACCEL_Q_RING_SIZE), 16);
	CHECK_EQ(accel_qrd(d, 1, ACCEL_Q_RING_BASE_LO),
		 (uint32_t)accel_ring_addr(d, 1));
}

static void test_device_reset(void)
{
	struct qtest *qt = boot(1, "dma-bandwidth=1M");
	struct accel_dev *d = &dev[0];
	unsigned q;

	CHECK(qt);
	accel_wr(d, ACCEL_REG_SCRATCH, 5);
	accel_wr(d, ACCEL_REG_IRQ_MASK, 0x3);
	for (q = 0; q < d->num_queues; q++)
		accel_queue_enable(d, q, 8);
	accel_qwr(d, 2, ACCEL_Q_FAULT_INJECT, 3);
	/* a slow copy is in flight when the reset comes */
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_FILL,
		     .flags = ACCEL_DESC_DST_VRAM, .src = 1, .len = 64 << 20 }, 1);
	qtest_clock_step(qt, 5000000);
	CHECK(accel_qrd(d, 0, ACCEL_Q_STATUS) & ACCEL_Q_STATUS_BUSY);
	accel_wr(d, ACCEL_REG_DEV_CTRL, ACCEL_DEV_CTRL_RESET);
	CHECK_EQ(accel_rd(d, ACCEL_REG_SCRATCH), 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_MASK), 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), 0);
	for (q = 0; q < d->num_queues; q++) {
		CHECK_EQ(accel_qrd(d, q, ACCEL_Q_STATUS), 0);
		CHECK_EQ(accel_qrd(d, q, ACCEL_Q_RING_SIZE), 0);
		CHECK_EQ(accel_qrd(d, q, ACCEL_Q_RING_BASE_LO), 0);
		CHECK_EQ(accel_qrd(d, q, ACCEL_Q_FAULT_INJECT), 0);
	}
	/* the aborted fill stops: time passes and VRAM far ahead stays zero */
	qtest_clock_step(qt, 100000000);
	CHECK_EQ(qtest_readl(qt, d->vram + (60 << 20)), 0);
	/* and the device works again */
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_NOP }, 1);
	CHECK_EQ(accel_wait(d, 0, 1000000), ACCEL_Q_STATUS_ENABLED);
}

/* Power states */

#define PCI_CAP_ID_PM		0x01
#define PCI_PM_PMC		2
#define PCI_PM_CTRL		4

/*
 * D3hot: the BARs do not decode, and the device resets on its way in: the
 * work in flight is abandoned, the registers read their reset values back
 * in D0, and VRAM keeps its contents.
 */
static void test_power_states(void)
{
	struct qtest *qt = boot(1, "dma-bandwidth=1M");
	struct accel_dev *d = &dev[0];
	uint64_t kept = d->vram + (128 << 20);
	int pm;
	unsigned q;

	CHECK(qt);
	pm = pci_find_cap(qt, 1, 0, PCI_CAP_ID_PM);
	CHECK(pm);
	/* version 1.2, neither D1 nor D2, and no No_Soft_Reset */
	CHECK_EQ(pci_cfg_read(qt, 1, 0, pm + PCI_PM_PMC, 2) & 0x607, 3);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, pm + PCI_PM_CTRL, 2) & 0xb, 0);
	qtest_writel(qt, kept, 0x12345678);
	accel_wr(d, ACCEL_REG_SCRATCH, 5);
	accel_wr(d, ACCEL_REG_IRQ_MASK, 0x3);
	for (q = 0; q < d->num_queues; q++)
		accel_queue_enable(d, q, 8);
	/* a slow fill, with an interrupt after it, is in flight */
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_FILL,
		     .flags = ACCEL_DESC_DST_VRAM | ACCEL_DESC_IRQ, .src = 1,
		     .len = 64 << 20 }, 1);
	qtest_clock_step(qt, 5000000);
	CHECK(accel_qrd(d, 0, ACCEL_Q_STATUS) & ACCEL_Q_STATUS_BUSY);
	msi_clear(d, 0);

	pci_cfg_write(qt, 1, 0, pm + PCI_PM_CTRL, 2, 3);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, pm + PCI_PM_CTRL, 2) & 3, 3);
	/* neither BAR decodes */
	CHECK(accel_rd(d, ACCEL_REG_MAGIC) != ACCEL_MAGIC);
	CHECK(qtest_readl(qt, kept) != 0x12345678);
	/* D1 is refused: the device stays in D3hot */
	pci_cfg_write(qt, 1, 0, pm + PCI_PM_CTRL, 2, 1);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, pm + PCI_PM_CTRL, 2) & 3, 3);
	/* time passes in D3hot: no DMA, no interrupt */
	qtest_clock_step(qt, 100000000);
	CHECK(!msi_fired(d, 0));

	pci_cfg_write(qt, 1, 0, pm + PCI_PM_CTRL, 2, 0);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, pm + PCI_PM_CTRL, 2) & 3, 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_MAGIC), ACCEL_MAGIC);
	CHECK(accel_rd(d, ACCEL_REG_DEV_STATUS) & ACCEL_DEV_STATUS_READY);
	CHECK_EQ(accel_rd(d, ACCEL_REG_SCRATCH), 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_MASK), 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), 0);
	for (q = 0; q < d->num_queues; q++) {
		CHECK_EQ(accel_qrd(d, q, ACCEL_Q_STATUS), 0);
		CHECK_EQ(accel_qrd(d, q, ACCEL_Q_RING_SIZE), 0);
		CHECK_EQ(accel_qrd(d, q, ACCEL_Q_RING_BASE_LO), 0);
	}
	CHECK(!msi_fired(d, 0));
	/* the abandoned fill stopped short; VRAM kept what it held */
	CHECK_EQ(qtest_readl(qt, d->vram + (60 << 20)), 0);
	CHECK_EQ(qtest_readl(qt, kept), 0x12345678);
	/* and the device works again */
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_NOP }, 1);
	CHECK_EQ(accel_wait(d, 0, 1000000), ACCEL_Q_STATUS_ENABLED);
}

/* Fault injection */

static void test_fault_inject_fail(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	struct accel_desc fill = desc_fill(TEST_RAM_DATA, 0xee, 64, 0);

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	accel_queue_enable(d, 1, 8);
	accel_qwr(d, 0, ACCEL_Q_FAULT_INJECT, 2);
	accel_submit(d, 0, &fill, 1);
	CHECK(accel_wait(d, 0, 0) & ACCEL_Q_STATUS_ERROR);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), ACCEL_ERR_INJECTED);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR_DESC), 0);
	CHECK_EQ(qtest_readl(qt, TEST_RAM_DATA), 0);	/* nothing executed */
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_FAULT_INJECT), 1);

	/* the other queue is unaffected */
	accel_submit(d, 1, &fill, 1);
	CHECK_EQ(accel_wait(d, 1, 0), ACCEL_Q_STATUS_ENABLED);
	qtest_writel(qt, TEST_RAM_DATA, 0);

	/* the count spans queue resets: one more failure, then success */
	accel_queue_reset(d, 0);
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	accel_submit(d, 0, &fill, 1);
	CHECK(accel_wait(d, 0, 0) & ACCEL_Q_STATUS_ERROR);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), ACCEL_ERR_INJECTED);
	accel_queue_reset(d, 0);
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	accel_submit(d, 0, &fill, 1);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK(ram_all(qt, TEST_RAM_DATA, 0xee, 64));
}

static void test_fault_inject_stall(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	struct accel_desc fence = desc_fence(TEST_RAM_DATA, 9, 0);
	int i;

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	accel_queue_enable(d, 1, 8);
	accel_qwr(d, 0, ACCEL_Q_FAULT_INJECT, ACCEL_FAULT_STALL);
	accel_submit(d, 0, &fence, 1);
	accel_wait(d, 0, 0);
	for (i = 0; i < 100; i++)
		CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_STATUS), ACCEL_Q_STATUS_ENABLED |
			 ACCEL_Q_STATUS_BUSY | ACCEL_Q_STATUS_STALLED);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_HEAD), 0);
	CHECK_EQ(qtest_readq(qt, TEST_RAM_DATA), 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), 0);
	/* other queues keep running */
	accel_submit(d, 1, &(struct accel_desc){ .opcode = ACCEL_OP_NOP }, 1);
	CHECK_EQ(accel_wait(d, 1, 0), ACCEL_Q_STATUS_ENABLED);
	/* a queue reset recovers */
	accel_queue_reset(d, 0);
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	accel_submit(d, 0, &fence, 1);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(qtest_readq(qt, TEST_RAM_DATA), 9);

	/* a stall leaves the count of failures to come where it was */
	accel_qwr(d, 0, ACCEL_Q_FAULT_INJECT, ACCEL_FAULT_STALL | 1);
	accel_submit(d, 0, &fence, 1);
	CHECK(accel_wait(d, 0, 0) & ACCEL_Q_STATUS_STALLED);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_FAULT_INJECT), 1);
	accel_queue_reset(d, 0);
	accel_qwr(d, 0, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	accel_submit(d, 0, &fence, 1);
	CHECK(accel_wait(d, 0, 0) & ACCEL_Q_STATUS_ERROR);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_ERROR), ACCEL_ERR_INJECTED);
}

/*
 * A hung device: a slow fill in flight stops where it is, nothing else
 * runs, queue control does nothing and CTRL reads its reset pending; a
 * device reset ends it. FATAL adds DEV_STATUS FATAL and an error interrupt.
 */
static void test_device_hang_and_fatal(void)
{
	struct qtest *qt = boot(1, "dma-bandwidth=1M");
	struct accel_dev *d = &dev[0];
	struct accel_desc fence = desc_fence(TEST_RAM_DATA, 9, 0);
	uint32_t head;

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	accel_queue_enable(d, 1, 8);
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_FILL,
		     .flags = ACCEL_DESC_DST_VRAM, .src = 1, .len = 64 << 20 }, 1);
	qtest_clock_step(qt, 5000000);
	accel_wr(d, ACCEL_REG_DEV_FAULT_INJECT, ACCEL_DEV_FAULT_HANG);
	CHECK_EQ(accel_rd(d, ACCEL_REG_DEV_FAULT_INJECT), ACCEL_DEV_FAULT_HANG);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_DEV_STATUS), ACCEL_DEV_STATUS_READY);
	head = accel_qrd(d, 0, ACCEL_Q_HEAD);
	accel_submit(d, 1, &fence, 1);
	qtest_clock_step(qt, 100000000);
	/* the fill went no further, the fence never ran */
	CHECK_EQ(qtest_readl(qt, d->vram + (60 << 20)), 0);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_HEAD), head);
	CHECK_EQ(accel_qrd(d, 0, ACCEL_Q_STATUS),
		 ACCEL_Q_STATUS_ENABLED | ACCEL_Q_STATUS_BUSY);
	CHECK_EQ(qtest_readq(qt, TEST_RAM_DATA), 0);
	/* a queue reset does not take, and writing 0 clears nothing */
	accel_queue_reset(d, 1);
	accel_wr(d, ACCEL_REG_DEV_FAULT_INJECT, 0);
	CHECK_EQ(accel_qrd(d, 1, ACCEL_Q_CTRL),
		 ACCEL_Q_CTRL_ENABLE | ACCEL_Q_CTRL_RESET);
	CHECK_EQ(accel_qrd(d, 1, ACCEL_Q_STATUS),
		 ACCEL_Q_STATUS_ENABLED | ACCEL_Q_STATUS_BUSY);
	/* FATAL on top: reported, with an error interrupt */
	accel_wr(d, ACCEL_REG_DEV_FAULT_INJECT, ACCEL_DEV_FAULT_FATAL);
	CHECK_EQ(accel_rd(d, ACCEL_REG_DEV_STATUS),
		 ACCEL_DEV_STATUS_READY | ACCEL_DEV_STATUS_FATAL);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), ACCEL_IRQ_ERROR);
	/* a device reset brings it back */
	accel_wr(d, ACCEL_REG_DEV_CTRL, ACCEL_DEV_CTRL_RESET);
	CHECK_EQ(accel_rd(d, ACCEL_REG_DEV_FAULT_INJECT), 0);
	CHECK_EQ(accel_rd(d, ACCEL_REG_DEV_STATUS), ACCEL_DEV_STATUS_READY);
	CHECK_EQ(accel_qrd(d, 1, ACCEL_Q_CTRL), 0);
	accel_queue_enable(d, 1, 8);
	accel_submit(d, 1, &fence, 1);
	CHECK_EQ(accel_wait(d, 1, 1000000), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(qtest_readq(qt, TEST_RAM_DATA), 9);
}

/* Interrupts */

static void test_irq_mask(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	unsigned ev;

	CHECK(qt);
	ev = d->num_queues;
	accel_queue_enable(d, 1, 8);
	accel_wr(d, ACCEL_REG_IRQ_MASK, ACCEL_IRQ_QUEUE(1) | ACCEL_IRQ_ERROR);
	accel_submit(d, 1, &(struct accel_desc){ .opcode = ACCEL_OP_NOP,
		     .flags = ACCEL_DESC_IRQ }, 1);
	CHECK_EQ(accel_wait(d, 1, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), ACCEL_IRQ_QUEUE(1));
	CHECK(!msi_fired(d, 1));
	accel_submit(d, 1, &(struct accel_desc){ .opcode = 77 }, 1);
	CHECK(accel_wait(d, 1, 0) & ACCEL_Q_STATUS_ERROR);
	CHECK(!msi_fired(d, ev));
	/* unmasking delivers what is pending */
	accel_wr(d, ACCEL_REG_IRQ_MASK, 0);
	CHECK(msi_fired(d, 1));
	CHECK(msi_fired(d, ev));
	/* acknowledged sources are not delivered again */
	accel_wr(d, ACCEL_REG_IRQ_STATUS, ~0u);
	CHECK_EQ(accel_rd(d, ACCEL_REG_IRQ_STATUS), 0);
	msi_clear(d, 1);
	accel_wr(d, ACCEL_REG_IRQ_MASK, ACCEL_IRQ_QUEUE(1));
	accel_wr(d, ACCEL_REG_IRQ_MASK, 0);
	CHECK(!msi_fired(d, 1));
}

/* Without MSI-X the device asserts INTx while an unmasked source is
 * pending; PCI_STATUS bit 3 shows the level. */
static void test_intx_without_msix(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	pci_cfg_write(qt, 1, 0, d->msix_cap + 2, 2, 0);	/* MSI-X off */
	accel_queue_enable(d, 0, 8);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x06, 2) & 0x8, 0);
	CHECK_EQ(nop_with_irq(d, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x06, 2) & 0x8, 0x8);
	CHECK(!msi_fired(d, 0));
	/* masking the source drops the line, unmasking raises it again */
	accel_wr(d, ACCEL_REG_IRQ_MASK, ACCEL_IRQ_QUEUE(0));
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x06, 2) & 0x8, 0);
	accel_wr(d, ACCEL_REG_IRQ_MASK, 0);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x06, 2) & 0x8, 0x8);
	/* acknowledging drops it */
	accel_wr(d, ACCEL_REG_IRQ_STATUS, ACCEL_IRQ_QUEUE(0));
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x06, 2) & 0x8, 0);
}

/* A source pending when MSI-X is turned off asserts INTA at once. */
static void test_intx_follows_msix_disable(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	CHECK_EQ(nop_with_irq(d, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK(msi_fired(d, 0));
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x06, 2) & 0x8, 0);
	pci_cfg_write(qt, 1, 0, d->msix_cap + 2, 2, 0);	/* MSI-X off */
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x06, 2) & 0x8, 0x8);
	pci_cfg_write(qt, 1, 0, d->msix_cap + 2, 2, 0x8000);	/* and on */
	CHECK_EQ(pci_cfg_read(qt, 1, 0, 0x06, 2) & 0x8, 0);
}

/* Throttling */

/*
 * A throttled queue pays for bytes in virtual time before it moves them, in
 * real time. So the test holds the clock just short of the link time and
 * lets real time pass (the queue must not finish), then moves the clock to
 * it and only waits (the queue must finish with no more virtual time). The
 * queues were rung with the clock where it is now.
 */
static bool busy_until(struct accel_dev *d, const unsigned *qs, unsigned nq,
		       int64_t link_ns)
{
	struct timespec pause = { .tv_nsec = 50 * 1000 * 1000 };
	unsigned i;

	qtest_clock_step(d->qt, link_ns - 1);
	nanosleep(&pause, NULL);
	for (i = 0; i < nq; i++)
		if (!(accel_qrd(d, qs[i], ACCEL_Q_STATUS) & ACCEL_Q_STATUS_BUSY))
			return false;
	qtest_clock_step(d->qt, 1);
	for (i = 0; i < nq; i++)
		if (accel_wait(d, qs[i], 0) != ACCEL_Q_STATUS_ENABLED)
			return false;
	return true;
}

static void test_bandwidth_throttle(void)
{
	const uint64_t n = 4 << 20;	/* 4 MiB at 1 GiB/s: 3.906 ms */
	const int64_t link_ns = 3906250;
	const unsigned both[] = { 0, 1 };
	struct qtest *qt = boot(1, "dma-bandwidth=1G");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	accel_queue_enable(d, 1, 8);
	CHECK_EQ(accel_rd(d, ACCEL_REG_DMA_BW_LO), 1u << 30);

	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_FILL,
		     .flags = ACCEL_DESC_DST_VRAM, .src = 1, .len = n }, 1);
	CHECK(busy_until(d, both, 1, link_ns));

	/* two queues overlap: both finish in the time of one */
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_FILL,
		     .flags = ACCEL_DESC_DST_VRAM, .src = 2, .len = n }, 1);
	accel_submit(d, 1, &(struct accel_desc){ .opcode = ACCEL_OP_FILL,
		     .flags = ACCEL_DESC_DST_VRAM, .src = 3, .dst = n, .len = n },
		     1);
	CHECK(busy_until(d, both, 2, link_ns));
	CHECK(ram_all(qt, d->vram + n - 64, 2, 64));
	CHECK(ram_all(qt, d->vram + 2 * n - 64, 3, 64));
}

/* Bandwidths of 4 GB/s and more (beyond 32 bits) throttle exactly too. */
static void test_bandwidth_beyond_32_bits(void)
{
	const unsigned q0[] = { 0 };
	struct qtest *qt = boot(1, "dma-bandwidth=4G");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	CHECK_EQ(accel_rd(d, ACCEL_REG_DMA_BW_HI), 1);
	/* 4 MiB at 4 GiB/s: 976562.5 ns, rounded down */
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_FILL,
		     .flags = ACCEL_DESC_DST_VRAM, .src = 1, .len = 4 << 20 }, 1);
	CHECK(busy_until(d, q0, 1, 976562));
	CHECK(qtest_alive(qt));
}

static void test_doorbell_returns_before_copy(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, &(struct accel_desc){ .opcode = ACCEL_OP_FILL,
		     .flags = ACCEL_DESC_DST_VRAM, .src = 7, .len = 128 << 20 }, 1);
	/* the doorbell write returned while the fill is still running */
	CHECK(accel_qrd(d, 0, ACCEL_Q_STATUS) & ACCEL_Q_STATUS_BUSY);
	CHECK_EQ(accel_rd(d, ACCEL_REG_MAGIC), ACCEL_MAGIC);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK(ram_all(qt, d->vram + (128 << 20) - 4096, 7, 4096));
}

/* Peer to peer */

static void test_peer_to_peer(void)
{
	const size_t n = 256 * 1024 + 17;
	struct qtest *qt = boot(2, "");
	uint8_t *data = malloc(n);

	CHECK(qt && data);
	fill_random(data, n, 77);
	qtest_memwrite(qt, dev[0].vram + 0x100, data, n);
	accel_queue_enable(&dev[0], 0, 8);
	accel_queue_enable(&dev[1], 0, 8);

	/* device 0 pushes from its VRAM into device 1's BAR */
	accel_submit(&dev[0], 0, &(struct accel_desc){ .opcode = ACCEL_OP_COPY,
		     .flags = ACCEL_DESC_SRC_VRAM, .src = 0x100,
		     .dst = dev[1].vram + 0x3000, .len = n }, 1);
	CHECK_EQ(accel_wait(&dev[0], 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK(ram_equals(qt, dev[1].vram + 0x3000, data, n));

	/* device 1 pulls from device 0's BAR into its VRAM */
	accel_submit(&dev[1], 0, &(struct accel_desc){ .opcode = ACCEL_OP_COPY,
		     .flags = ACCEL_DESC_DST_VRAM, .src = dev[0].vram + 0x100,
		     .dst = 0x900000, .len = n }, 1);
	CHECK_EQ(accel_wait(&dev[1], 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK(ram_equals(qt, dev[1].vram + 0x900000, data, n));

	/* a peer with memory decoding off is a DMA error, not a crash */
	pci_cfg_write(qt, 2, 0, 0x04, 2, 0);
	accel_submit(&dev[0], 0, &(struct accel_desc){ .opcode = ACCEL_OP_COPY,
		     .flags = ACCEL_DESC_SRC_VRAM, .src = 0,
		     .dst = dev[1].vram, .len = 64 }, 1);
	CHECK(accel_wait(&dev[0], 0, 0) & ACCEL_Q_STATUS_ERROR);
	CHECK_EQ(accel_qrd(&dev[0], 0, ACCEL_Q_ERROR), ACCEL_ERR_DMA_WRITE);
	free(data);
}

/*
 * Transfers between RAM and VRAM, in and out of the doorbell's inline
 * budget, move no piece under the BQL: not even an empty one past their
 * end, which a strict IOMMU reports as a fault.
 */
static void test_ram_transfers_move_nothing_under_the_bql(void)
{
	struct qtest *qt = boot_with(1, "", "-trace accel_dma_locked");
	struct accel_dev *d = &dev[0];
	struct accel_desc descs[] = {
		desc_fill(TEST_RAM_DATA, 0x5a, 3 << 20, ACCEL_DESC_IRQ),
		desc_copy(TEST_RAM_DATA, 0, 3 << 20, ACCEL_DESC_DST_VRAM),
		desc_copy(0, TEST_RAM_DATA + (4 << 20), 3 << 20, ACCEL_DESC_SRC_VRAM),
		desc_fill(TEST_RAM_DATA, 0xa5, 4096, 0),
		desc_copy(TEST_RAM_DATA, TEST_RAM_DATA + (8 << 20), 100000, 0),
	};
	char cmd[300];

	CHECK(qt);
	accel_queue_enable(d, 0, 8);
	accel_submit(d, 0, descs, 5);
	CHECK_EQ(accel_wait(d, 0, 0), ACCEL_Q_STATUS_ENABLED);
	CHECK(ram_all(qt, TEST_RAM_DATA + (4 << 20), 0x5a, 3 << 20));
	snprintf(cmd, sizeof(cmd), "! grep -q accel_dma_locked %s", qt->logpath);
	CHECK(system(cmd) == 0);
}

/*
 * One register write, many doorbells: A's 16 completions wait behind
 * IRQ_MASK, and A's vector q is a message to B's queue q TAIL, whose ring
 * holds 1-byte copies. Unmasking them all in one write sends the messages
 * after the write, as A's own work: B's doorbells only wake B's workers
 * (QEMU's trace shows no inline copy).
 */
static void test_one_register_write_rings_no_peers_inline_work(void)
{
	struct qtest *qt = boot_with(2, "queues=16", "-trace accel_dma_inline");
	struct accel_dev *a = &dev[0], *b = &dev[1];
	struct accel_desc ring[8];
	char cmd[300];
	unsigned q;

	CHECK(qt);
	for (q = 0; q < 8; q++)
		ring[q] = desc_copy(TEST_RAM_DATA + 0x100, TEST_RAM_DATA + 0x200 + q, 1, 0);
	accel_wr(a, ACCEL_REG_IRQ_MASK, 0xffff);
	for (q = 0; q < 16; q++) {
		accel_queue_enable(a, q, 8);
		CHECK_EQ(nop_with_irq(a, q), ACCEL_Q_STATUS_ENABLED);
		qtest_writel(qt, a->msix_table + 16 * q, b->regs + ACCEL_QUEUE_REG(q, ACCEL_Q_TAIL));
		qtest_writel(qt, a->msix_table + 16 * q + 4, 0);
		qtest_writel(qt, a->msix_table + 16 * q + 8, 7);
		accel_queue_enable(b, q, 8);
		qtest_memwrite(qt, accel_ring_addr(b, q), ring, sizeof(ring));
	}
	accel_wr(a, ACCEL_REG_IRQ_MASK, 0);
	for (q = 0; q < 16; q++)
		CHECK_EQ(accel_wait(b, q, 0), ACCEL_Q_STATUS_ENABLED);
	snprintf(cmd, sizeof(cmd), "! grep -q accel_dma_inline %s", qt->logpath);
	CHECK(system(cmd) == 0);
}

/*
 * Descriptors that cost little by bytes and much in the machine: 20-byte
 * copies into a peer's BARs through ECAM, each rebuilding the memory map
 * several times, with 8 devices' BARs in it. The slices' time bound keeps
 * qtest answering, and so does the main loop's rest after each such slice:
 * without it QEMU's RCU thread, which frees the old maps under the BQL,
 * held the lock for 20-110 ms at a time in 4 runs of 10.
 */
/* Seen: 3-5 ms, ASan 4 ms, ThreadSanitizer 8 ms; 280 ms with no time bound */
#define REMAP_WAIT_MAX_S 0.03

/*
 * Queue @q of @a gets a ring of @entries descriptors, each copying 20
 * bytes into @b's BARs through ECAM, alternating between two layouts.
 */
static void remap_ring(struct accel_dev *a, struct accel_dev *b, unsigned q,
		       uint32_t entries)
{
	struct qtest *qt = a->qt;
	const uint64_t layouts = TEST_RAM_DATA, rings = TEST_RAM_DATA + 0x1000000;
	const uint64_t base = rings + (uint64_t)q * entries * sizeof(struct accel_desc);
	struct accel_desc *ring = calloc(entries, sizeof(*ring));
	uint32_t layout[2][5];

	CHECK(ring);
	for (int k = 0; k < 2; k++) {
		uint64_t regs = b->regs + (k ? 0x40000 : 0);

		layout[k][0] = (uint32_t)regs;
		layout[k][1] = (uint32_t)b->vram | 0xc;
		layout[k][2] = b->vram >> 32;
		layout[k][3] = (uint32_t)(regs + 0x100000 + (k ? 0x1000 : 0)) | 4;
		layout[k][4] = 0;
	}
	qtest_memwrite(qt, layouts, layout, sizeof(layout));
	for (uint32_t i = 0; i + 1 < entries; i++)
		ring[i] = desc_copy(layouts + (i & 1) * 20, dev_ecam(b, 0x10), 20, 0);
	qtest_memwrite(qt, base, ring, entries * sizeof(*ring));
	free(ring);
	accel_qwr(a, q, ACCEL_Q_RING_BASE_LO, (uint32_t)base);
	accel_qwr(a, q, ACCEL_Q_RING_BASE_HI, base >> 32);
	accel_qwr(a, q, ACCEL_Q_RING_SIZE, entries);
	accel_qwr(a, q, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
}

/* The longest of qtest reads made while queue @q of @d is busy. */
static double longest_read_while_busy(struct accel_dev *d, unsigned q)
{
	double longest = 0, t;

	for (int i = 0; i < 200 && (accel_qrd(d, q, ACCEL_Q_STATUS) & ACCEL_Q_STATUS_BUSY); i++) {
		t = now_s();
		qtest_readl(d->qt, TEST_RAM_DATA);
		if (now_s() - t > longest)
			longest = now_s() - t;
	}
	return longest;
}

static void test_bar_remapping_descriptors_bound_a_slice(void)
{
	const uint32_t entries = 1024;
	struct qtest *qt = boot(8, "");
	struct accel_dev *a = &dev[0], *b = &dev[1];
	double longest, t;

	CHECK(qt);
	pci_ecam_enable(qt);
	remap_ring(a, b, 0, entries);
	t = now_s();
	accel_qwr(a, 0, ACCEL_Q_TAIL, entries - 1);
	check_waited("the doorbell write", t);
	longest = longest_read_while_busy(a, 0);
	printf("# the longest qtest read meanwhile took %.1f ms\n", longest * 1e3);
	CHECK(longest < REMAP_WAIT_MAX_S);
	/* a thousand map rebuilds: minutes under ThreadSanitizer on a busy machine */
	for (int i = 0; i < 4 && (accel_qrd(a, 0, ACCEL_Q_STATUS) & ACCEL_Q_STATUS_BUSY); i++)
		accel_wait(a, 0, 0);
	CHECK_EQ(accel_wait(a, 0, 0), ACCEL_Q_STATUS_ENABLED);
}

/*
 * The same on 16 queues at once, whose bottom halves run back to back in
 * one turn of the main loop: they share the bound, each does not get its
 * own (a qtest read waited 120 ms, a QMP command 335).
 */
static void test_bar_remapping_on_many_queues_bounds_a_turn(void)
{
	const uint32_t entries = 64;
	struct qtest *qt = boot(8, "queues=16");
	struct accel_dev *a = &dev[0], *b = &dev[1];
	double longest;
	unsigned q;

	CHECK(qt);
	pci_ecam_enable(qt);
	for (q = 0; q < 16; q++)
		remap_ring(a, b, q, entries);
	for (q = 0; q < 16; q++)
		accel_qwr(a, q, ACCEL_Q_TAIL, entries - 1);
	longest = longest_read_while_busy(a, 15);
	printf("# the longest qtest read meanwhile took %.1f ms\n", longest * 1e3);
	CHECK(longest < REMAP_WAIT_MAX_S);
	for (q = 0; q < 16; q++)
		CHECK_EQ(accel_wait(a, q, 0), ACCEL_Q_STATUS_ENABLED);
}

/*
 * Advanced Error Reporting at ACCEL_AER_OFFSET, the first extended
 * capability: the OS can enable error reporting in Device Control, set
 * severities, and clear status bits.
 */
static void test_aer_capability(void)
{
	struct qtest *qt = boot(1, "");
	struct accel_dev *d = &dev[0];
	int exp = pci_find_cap(qt, 1, 0, PCI_CAP_ID_EXP);
	uint64_t aer = dev_ecam(d, ACCEL_AER_OFFSET);

	CHECK(qt);
	pci_ecam_enable(qt);
	/* ID 1 (AER), version 2, no next capability */
	CHECK_EQ(qtest_readl(qt, aer), 0x00020001);
	/* the PCIe defaults: DLP, SDN, FCP, RXOF, MALF, internal fatal */
	CHECK_EQ(qtest_readl(qt, aer + 0x0c), 0x00462030);
	qtest_writel(qt, aer + 0x0c, 0x00462010);
	CHECK_EQ(qtest_readl(qt, aer + 0x0c), 0x00462010);
	/* no error yet; a write of ones to the status leaves it clear */
	CHECK_EQ(qtest_readl(qt, aer + 0x04), 0);
	qtest_writel(qt, aer + 0x04, 0xffffffff);
	CHECK_EQ(qtest_readl(qt, aer + 0x04), 0);
	/* correctable, non-fatal, fatal and unsupported request reporting */
	pci_cfg_write(qt, 1, 0, exp + 8, 2, 0x000f);
	CHECK_EQ(pci_cfg_read(qt, 1, 0, exp + 8, 2) & 0x000f, 0x000f);
	/* the device works on */
	CHECK_EQ(accel_rd(d, ACCEL_REG_DEV_STATUS), ACCEL_DEV_STATUS_READY);
}

static const struct test tests[] = {
	{ "identity", test_identity },
	{ "aer_capability", test_aer_capability },
	{ "properties", test_properties },
	{ "copy_directions", test_copy_directions },
	{ "copy_bytes_and_alignment", test_copy_bytes_and_alignment },
	{ "fill", test_fill },
	{ "fence_and_irq", test_fence_and_irq },
	{ "nop_and_completed", test_nop_and_completed },
	{ "ring_wraparound", test_ring_wraparound },
	{ "queues_run_independently", test_queues_run_independently },
	{ "descriptor_errors", test_descriptor_errors },
	{ "ring_errors", test_ring_errors },
	{ "bus_master_disabled", test_bus_master_disabled },
	{ "dma_into_own_registers", test_dma_into_own_registers },
	{ "reset_by_own_dma", test_reset_by_own_dma },
	{ "unplug_by_own_dma", test_unplug_by_own_dma },
	{ "unplug_under_a_peers_copy_into_its_registers",
	  test_unplug_under_a_peers_copy_into_its_registers },
	{ "unplug_under_a_peers_copy_into_its_msix_table",
	  test_unplug_under_a_peers_copy_into_its_msix_table },
	{ "unplug_under_one_access_into_a_moved_msix_table",
	  test_unplug_under_one_access_into_a_moved_msix_table },
	{ "unplug_by_a_doorbell_inside_one_access_to_the_msix_table",
	  test_unplug_by_a_doorbell_inside_one_access_to_the_msix_table },
	{ "a_source_pending_while_msix_is_off_is_sent_when_on",
	  test_a_source_pending_while_msix_is_off_is_sent_when_on },
	{ "a_released_message_waits_for_msix", test_a_released_message_waits_for_msix },
	{ "a_reset_cancels_messages", test_a_reset_cancels_messages },
	{ "an_ack_with_msix_off_cancels_the_held_message",
	  test_an_ack_with_msix_off_cancels_the_held_message },
	{ "tiny_descriptors_bound_a_doorbell", test_tiny_descriptors_bound_a_doorbell },
	{ "tiny_descriptors_through_a_peer_bound_a_doorbell",
	  test_tiny_descriptors_through_a_peer_bound_a_doorbell },
	{ "mmio_copy_lets_others_run", test_mmio_copy_lets_others_run },
	{ "one_register_write_rings_no_peers_inline_work",
	  test_one_register_write_rings_no_peers_inline_work },
	{ "ram_transfers_move_nothing_under_the_bql",
	  test_ram_transfers_move_nothing_under_the_bql },
	{ "bar_remapping_descriptors_bound_a_slice",
	  test_bar_remapping_descriptors_bound_a_slice },
	{ "bar_remapping_on_many_queues_bounds_a_turn",
	  test_bar_remapping_on_many_queues_bounds_a_turn },
	{ "msix_into_own_registers", test_msix_into_own_registers },
	{ "bad_doorbell_halts_a_copying_queue",
	  test_bad_doorbell_halts_a_copying_queue },
	{ "ring_resized_while_disabled", test_ring_resized_while_disabled },
	{ "msix_unmask_does_not_reenter", test_msix_unmask_does_not_reenter },
	{ "acked_source_sends_no_pending_message",
	  test_acked_source_sends_no_pending_message },
	{ "ring_ending_at_the_top", test_ring_ending_at_the_top },
	{ "queue_reset", test_queue_reset },
	{ "stop_freezes_memory", test_stop_freezes_memory },
	{ "unplug_stops_transfers_and_timers",
	  test_unplug_stops_transfers_and_timers },
	{ "reenabled_queue_waits_for_doorbell",
	  test_reenabled_queue_waits_for_doorbell },
	{ "device_reset", test_device_reset },
	{ "power_states", test_power_states },
	{ "fault_inject_fail", test_fault_inject_fail },
	{ "fault_inject_stall", test_fault_inject_stall },
	{ "device_hang_and_fatal", test_device_hang_and_fatal },
	{ "irq_mask", test_irq_mask },
	{ "intx_without_msix", test_intx_without_msix },
	{ "intx_follows_msix_disable", test_intx_follows_msix_disable },
	{ "bandwidth_throttle", test_bandwidth_throttle },
	{ "bandwidth_beyond_32_bits", test_bandwidth_beyond_32_bits },
	{ "doorbell_returns_before_copy", test_doorbell_returns_before_copy },
	{ "peer_to_peer", test_peer_to_peer },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return run_tests(tests, argc, argv, cleanup);
}
