/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test-side view of an accel device under qtest: what firmware and the
 * driver would do (bus numbers, bridge windows, BARs, MSI-X, rings), done
 * by hand through the qtest protocol.
 */
#ifndef ACCEL_DEV_H
#define ACCEL_DEV_H

#include "qtest.h"
#include "accel_hw.h"

/* Guest RAM layout used by the tests (the VM has 512 MiB). */
#define TEST_RAM_DEV_AREA(i)	(0x01000000ull + (uint64_t)(i) * 0x01000000)
#define TEST_RAM_DATA		0x08000000ull	/* free for test buffers */
#define TEST_RAM_END		0x20000000ull
#define TEST_UNMAPPED_ADDR	0x0000700000000000ull	/* nothing decodes it */

struct accel_dev {
	struct qtest *qt;
	int index;		/* root port index; the device sits on bus index+1 */
	uint64_t regs;		/* BAR0 */
	uint64_t vram;		/* BAR2 */
	uint64_t vram_size;
	uint64_t msix_table;
	uint64_t msi_area;	/* vector v writes MSI_DATA(v) to msi_area + 4 v */
	uint64_t ring_area;
	unsigned num_queues;
	uint32_t ring_size[ACCEL_MAX_QUEUES];
	uint32_t tail[ACCEL_MAX_QUEUES];
	int msix_cap;
};

#define MSI_DATA(v)		(0x4000u + (v))

/* "-device pcie-root-port,... -device accel,..." for device @i with @props. */
int accel_device_args(char *buf, size_t len, int i, const char *props);

/* Where tests map q35's PCIe config space (ECAM), as firmware does. */
#define TEST_ECAM_BASE		0xb0000000ull
#define TEST_ECAM_SIZE		0x10000000ull

uint32_t pci_cfg_read(struct qtest *qt, int bus, int devfn, int off, int size);
void pci_cfg_write(struct qtest *qt, int bus, int devfn, int off, int size,
		   uint32_t val);
int pci_find_cap(struct qtest *qt, int bus, int devfn, uint8_t id);

/* Program the root port and the device: bus numbers, windows, BARs,
 * memory and bus-master enable, MSI-X pointed at guest RAM. */
int accel_dev_init(struct qtest *qt, int index, struct accel_dev *d);
void accel_set_bus_master(struct accel_dev *d, bool on);
/* Map ECAM at TEST_ECAM_BASE (q35's PCIEXBAR, 256 buses). */
void pci_ecam_enable(struct qtest *qt);
/* Bus 0 devfn of the root port above device @d, and the bus address of its
 * config register @off through ECAM. */
int accel_port_devfn(const struct accel_dev *d);
uint64_t accel_port_ecam(const struct accel_dev *d, int off);

uint32_t accel_rd(struct accel_dev *d, uint32_t reg);
void accel_wr(struct accel_dev *d, uint32_t reg, uint32_t val);
uint32_t accel_qrd(struct accel_dev *d, unsigned q, uint32_t reg);
void accel_qwr(struct accel_dev *d, unsigned q, uint32_t reg, uint32_t val);

/* Place queue @q's ring of @entries descriptors in guest RAM and enable it. */
void accel_queue_enable(struct accel_dev *d, unsigned q, uint32_t entries);
uint64_t accel_ring_addr(struct accel_dev *d, unsigned q);
/* Write @n descriptors at the tail and ring the doorbell once. */
void accel_submit(struct accel_dev *d, unsigned q,
		  const struct accel_desc *desc, unsigned n);
/* Wait until the queue is idle, halted or stalled (stepping the virtual
 * clock when @step_ns is non-zero); returns the queue status. */
uint32_t accel_wait(struct accel_dev *d, unsigned q, int64_t step_ns);
/* After a queue reset: the ring is kept, the software tail restarts. */
void accel_queue_reset(struct accel_dev *d, unsigned q);

/* MSI-X observation: clear, then read what vector @v last wrote. */
void msi_clear(struct accel_dev *d, unsigned v);
bool msi_fired(struct accel_dev *d, unsigned v);

struct accel_desc desc_copy(uint64_t src, uint64_t dst, uint64_t len,
			    uint32_t flags);
struct accel_desc desc_fill(uint64_t dst, uint8_t byte, uint64_t len,
			    uint32_t flags);
struct accel_desc desc_fence(uint64_t dst, uint64_t value, uint32_t flags);
struct accel_desc desc_nop(uint32_t flags);

#endif
