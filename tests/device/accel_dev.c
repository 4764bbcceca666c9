// SPDX-License-Identifier: GPL-2.0-or-later
#include "accel_dev.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define PCI_CONFIG_ADDR		0xcf8
#define PCI_CONFIG_DATA		0xcfc
#define PCI_COMMAND		0x04
#define PCI_COMMAND_MEMORY	0x2
#define PCI_COMMAND_MASTER	0x4
#define PCI_STATUS		0x06
#define PCI_STATUS_CAP_LIST	0x10
#define PCI_CAP_PTR		0x34
#define PCI_CAP_ID_MSIX		0x11

/* Per-device windows: registers and MSI-X below 4 GiB, VRAM above. */
#define MMIO32_BASE(i)		(0xc0000000ull + (uint64_t)(i) * 0x200000)
#define MMIO32_SIZE		0x200000ull
#define MMIO64_BASE(i)		(0x100000000ull + (uint64_t)(i) * 0x200000000ull)

int accel_device_args(char *buf, size_t len, int i, const char *props)
{
	return snprintf(buf, len,
			"-device pcie-root-port,id=rp%d,bus=pcie.0,chassis=%d,addr=0x%x "
			"-device accel-pci,bus=rp%d%s%s ",
			i, i + 1, i + 2, i, *props ? "," : "", props);
}

static uint32_t cfg_addr(int bus, int devfn, int off)
{
	return 0x80000000u | bus << 16 | devfn << 8 | (off & 0xfc);
}

uint32_t pci_cfg_read(struct qtest *qt, int bus, int devfn, int off, int size)
{
	qtest_outl(qt, PCI_CONFIG_ADDR, cfg_addr(bus, devfn, off));
	switch (size) {
	case 1:
		return qtest_inb(qt, PCI_CONFIG_DATA + (off & 3));
	case 2:
		return qtest_inw(qt, PCI_CONFIG_DATA + (off & 2));
	default:
		return qtest_inl(qt, PCI_CONFIG_DATA);
	}
}

void pci_cfg_write(struct qtest *qt, int bus, int devfn, int off, int size,
		   uint32_t val)
{
	qtest_outl(qt, PCI_CONFIG_ADDR, cfg_addr(bus, devfn, off));
	switch (size) {
	case 1:
		qtest_outb(qt, PCI_CONFIG_DATA + (off & 3), val);
		break;
	case 2:
		qtest_outw(qt, PCI_CONFIG_DATA + (off & 2), val);
		break;
	default:
		qtest_outl(qt, PCI_CONFIG_DATA, val);
	}
}

int pci_find_cap(struct qtest *qt, int bus, int devfn, uint8_t id)
{
	int pos, guard = 48;

	if (!(pci_cfg_read(qt, bus, devfn, PCI_STATUS, 2) & PCI_STATUS_CAP_LIST))
		return 0;
	pos = pci_cfg_read(qt, bus, devfn, PCI_CAP_PTR, 1) & ~3;
	while (pos && guard--) {
		if (pci_cfg_read(qt, bus, devfn, pos, 1) == id)
			return pos;
		pos = pci_cfg_read(qt, bus, devfn, pos + 1, 1) & ~3;
	}
	return 0;
}

static void setup_root_port(struct qtest *qt, int i, uint64_t vram_size)
{
	int devfn = accel_port_devfn(&(struct accel_dev){ .index = i });
	uint64_t lo = MMIO32_BASE(i), lo_end = lo + MMIO32_SIZE - 1;
	uint64_t hi = MMIO64_BASE(i), hi_end = hi + vram_size - 1;

	/* primary 0, secondary and subordinate i + 1 */
	pci_cfg_write(qt, 0, devfn, 0x18, 4, (i + 1) << 8 | (i + 1) << 16);
	pci_cfg_write(qt, 0, devfn, 0x20, 2, (lo >> 16) & 0xfff0);
	pci_cfg_write(qt, 0, devfn, 0x22, 2, (lo_end >> 16) & 0xfff0);
	pci_cfg_write(qt, 0, devfn, 0x24, 2, ((hi >> 16) & 0xfff0) | 1);
	pci_cfg_write(qt, 0, devfn, 0x26, 2, ((hi_end >> 16) & 0xfff0) | 1);
	pci_cfg_write(qt, 0, devfn, 0x28, 4, hi >> 32);
	pci_cfg_write(qt, 0, devfn, 0x2c, 4, hi_end >> 32);
	pci_cfg_write(qt, 0, devfn, PCI_COMMAND, 2,
		      PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
}

/* Size a 64-bit BAR the way firmware does. */
static uint64_t bar64_size(struct qtest *qt, int bus, int off)
{
	uint32_t lo, hi;

	pci_cfg_write(qt, bus, 0, off, 4, 0xffffffff);
	pci_cfg_write(qt, bus, 0, off + 4, 4, 0xffffffff);
	lo = pci_cfg_read(qt, bus, 0, off, 4) & ~0xfu;
	hi = pci_cfg_read(qt, bus, 0, off + 4, 4);
	return ~((uint64_t)hi << 32 | lo) + 1;
}

static void set_bar64(struct qtest *qt, int bus, int off, uint64_t addr)
{
	pci_cfg_write(qt, bus, 0, off, 4, (uint32_t)addr);
	pci_cfg_write(qt, bus, 0, off + 4, 4, addr >> 32);
}

static void setup_msix(struct accel_dev *d, int bus)
{
	struct qtest *qt = d->qt;
	uint32_t table = pci_cfg_read(qt, bus, 0, d->msix_cap + 4, 4);
	unsigned v;

	d->msix_table = d->regs + MMIO32_SIZE / 2 + (table & ~7u);
	for (v = 0; v <= d->num_queues; v++) {
		uint64_t e = d->msix_table + 16 * v;

		qtest_writel(qt, e, d->msi_area + 4 * v);
		qtest_writel(qt, e + 4, 0);
		qtest_writel(qt, e + 8, MSI_DATA(v));
		qtest_writel(qt, e + 12, 0);
	}
	pci_cfg_write(qt, bus, 0, d->msix_cap + 2, 2, 0x8000);
}

int accel_dev_init(struct qtest *qt, int index, struct accel_dev *d)
{
	int bus = index + 1;
	uint64_t vram_size;

	memset(d, 0, sizeof(*d));
	d->qt = qt;
	d->index = index;
	if (pci_cfg_read(qt, bus, 0, 0, 4) == 0xffffffff) {
		/* bus numbers are not set yet: program the port first */
		setup_root_port(qt, index, 1ull << 20);
	}
	vram_size = bar64_size(qt, bus, 0x18);
	setup_root_port(qt, index, vram_size);
	if (pci_cfg_read(qt, bus, 0, 0, 4) !=
	    (uint32_t)(ACCEL_PCI_DEVICE_ID << 16 | ACCEL_PCI_VENDOR_ID))
		return -1;

	d->regs = MMIO32_BASE(index);
	d->vram = MMIO64_BASE(index);
	d->vram_size = vram_size;
	pci_cfg_write(qt, bus, 0, 0x10, 4, (uint32_t)d->regs);
	set_bar64(qt, bus, 0x18, d->vram);
	set_bar64(qt, bus, 0x20, d->regs + MMIO32_SIZE / 2);
	pci_cfg_write(qt, bus, 0, PCI_COMMAND, 2,
		      PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);

	d->num_queues = accel_rd(d, ACCEL_REG_NUM_QUEUES);
	d->msi_area = TEST_RAM_DEV_AREA(index);
	d->ring_area = d->msi_area + 0x10000;
	d->msix_cap = pci_find_cap(qt, bus, 0, PCI_CAP_ID_MSIX);
	if (!d->msix_cap)
		return -1;
	setup_msix(d, bus);
	return 0;
}

void accel_set_bus_master(struct accel_dev *d, bool on)
{
	pci_cfg_write(d->qt, d->index + 1, 0, PCI_COMMAND, 2,
		      PCI_COMMAND_MEMORY | (on ? PCI_COMMAND_MASTER : 0));
}

void pci_ecam_enable(struct qtest *qt)
{
	/* MCH PCIEXBAR: base, length field 0 (256 MiB), enable */
	pci_cfg_write(qt, 0, 0, 0x64, 4, TEST_ECAM_BASE >> 32);
	pci_cfg_write(qt, 0, 0, 0x60, 4, (uint32_t)TEST_ECAM_BASE | 1);
}

int accel_port_devfn(const struct accel_dev *d)
{
	return (d->index + 2) << 3;
}

uint64_t accel_port_ecam(const struct accel_dev *d, int off)
{
	return TEST_ECAM_BASE + ((uint64_t)accel_port_devfn(d) << 12) + off;
}

uint32_t accel_rd(struct accel_dev *d, uint32_t reg)
{
	return qtest_readl(d->qt, d->regs + reg);
}

void accel_wr(struct accel_dev *d, uint32_t reg, uint32_t val)
{
	qtest_writel(d->qt, d->regs + reg, val);
}

uint32_t accel_qrd(struct accel_dev *d, unsigned q, uint32_t reg)
{
	return accel_rd(d, ACCEL_QUEUE_REG(q, reg));
}

void accel_qwr(struct accel_dev *d, unsigned q, uint32_t reg, uint32_t val)
{
	accel_wr(d, ACCEL_QUEUE_REG(q, reg), val);
}

uint64_t accel_ring_addr(struct accel_dev *d, unsigned q)
{
	return d->ring_area + (uint64_t)q * 0x40000;	/* 4096 entries each */
}

void accel_queue_enable(struct accel_dev *d, unsigned q, uint32_t entries)
{
	uint64_t base = accel_ring_addr(d, q);

	accel_qwr(d, q, ACCEL_Q_RING_BASE_LO, (uint32_t)base);
	accel_qwr(d, q, ACCEL_Q_RING_BASE_HI, base >> 32);
	accel_qwr(d, q, ACCEL_Q_RING_SIZE, entries);
	accel_qwr(d, q, ACCEL_Q_CTRL, ACCEL_Q_CTRL_ENABLE);
	d->ring_size[q] = entries;
	d->tail[q] = 0;
}

void accel_submit(struct accel_dev *d, unsigned q,
		  const struct accel_desc *desc, unsigned n)
{
	uint64_t base = accel_ring_addr(d, q);
	unsigned i;

	for (i = 0; i < n; i++) {
		qtest_memwrite(d->qt, base + (uint64_t)d->tail[q] * ACCEL_DESC_SIZE,
			       &desc[i], sizeof(desc[i]));
		d->tail[q] = (d->tail[q] + 1) % d->ring_size[q];
	}
	accel_qwr(d, q, ACCEL_Q_TAIL, d->tail[q]);
}

uint32_t accel_wait(struct accel_dev *d, unsigned q, int64_t step_ns)
{
	time_t deadline = time(NULL) + 30;
	uint32_t st;

	for (;;) {
		st = accel_qrd(d, q, ACCEL_Q_STATUS);
		if (!(st & ACCEL_Q_STATUS_BUSY) ||
		    (st & (ACCEL_Q_STATUS_ERROR | ACCEL_Q_STATUS_STALLED)) ||
		    time(NULL) > deadline)
			return st;
		if (step_ns)
			qtest_clock_step(d->qt, step_ns);
	}
}

void accel_queue_reset(struct accel_dev *d, unsigned q)
{
	accel_qwr(d, q, ACCEL_Q_CTRL, ACCEL_Q_CTRL_RESET);
	d->tail[q] = 0;
}

void msi_clear(struct accel_dev *d, unsigned v)
{
	qtest_writel(d->qt, d->msi_area + 4 * v, 0);
}

bool msi_fired(struct accel_dev *d, unsigned v)
{
	return qtest_readl(d->qt, d->msi_area + 4 * v) == MSI_DATA(v);
}

struct accel_desc desc_copy(uint64_t src, uint64_t dst, uint64_t len,
			    uint32_t flags)
{
	return (struct accel_desc){ .opcode = ACCEL_OP_COPY, .flags = flags,
				    .src = src, .dst = dst, .len = len };
}

struct accel_desc desc_fill(uint64_t dst, uint8_t byte, uint64_t len,
			    uint32_t flags)
{
	return (struct accel_desc){ .opcode = ACCEL_OP_FILL, .flags = flags,
				    .src = byte, .dst = dst, .len = len };
}

struct accel_desc desc_fence(uint64_t dst, uint64_t value, uint32_t flags)
{
	return (struct accel_desc){ .opcode = ACCEL_OP_FENCE, .flags = flags,
				    .src = value, .dst = dst };
}

struct accel_desc desc_nop(uint32_t flags)
{
	return (struct accel_desc){ .opcode = ACCEL_OP_NOP, .flags = flags };
}
