/* SPDX-License-Identifier: (GPL-2.0-or-later OR MIT) */
/*
 * accel: hardware interface of the simulated PCIe accelerator.
 *
 * This header is the single description of the device's registers and DMA
 * descriptors. It is included by the QEMU device model, the Linux driver and
 * the qtest device tests; docs/hardware.md is its prose datasheet.
 *
 * All registers are little-endian and 32 bits wide; 64-bit values are split
 * into _LO/_HI pairs. Descriptors in guest memory are little-endian.
 */
#ifndef ACCEL_HW_H
#define ACCEL_HW_H

#ifdef __KERNEL__
#include <linux/types.h>
#define ACCEL_LE32 __le32
#define ACCEL_LE64 __le64
#else
#include <stdint.h>
#define ACCEL_LE32 uint32_t
#define ACCEL_LE64 uint64_t
#endif

/* BIT() is not available to every user of this header. */
#define ACCEL_BIT(n)			(1U << (n))

/* PCI identity */
#define ACCEL_PCI_VENDOR_ID		0x1234
#define ACCEL_PCI_DEVICE_ID		0xacc1
#define ACCEL_PCI_SUBSYS_VENDOR_ID	0x1234
#define ACCEL_PCI_SUBSYS_ID		0x0001
#define ACCEL_PCI_REVISION		0x01
#define ACCEL_PCI_CLASS			0x1200	/* processing accelerator */
/* config space: Advanced Error Reporting, the first extended capability */
#define ACCEL_AER_OFFSET		0x100

/* BARs */
#define ACCEL_BAR_REGS			0	/* 32-bit MMIO, control registers */
#define ACCEL_BAR_VRAM			2	/* 64-bit prefetchable, all of VRAM */
#define ACCEL_BAR_MSIX			4	/* MSI-X table and PBA */
#define ACCEL_REGS_SIZE			0x4000

/* Device version reported in ACCEL_REG_VERSION: major << 16 | minor */
#define ACCEL_HW_VERSION_MAJOR		1
#define ACCEL_HW_VERSION_MINOR		0

/* Global registers (BAR0) */
#define ACCEL_REG_MAGIC			0x000	/* RO: ACCEL_MAGIC */
#define ACCEL_REG_VERSION		0x004	/* RO */
#define ACCEL_REG_CAPS			0x008	/* RO: ACCEL_CAP_* */
#define ACCEL_REG_NUM_QUEUES		0x00c	/* RO */
#define ACCEL_REG_VRAM_SIZE_LO		0x010	/* RO, bytes */
#define ACCEL_REG_VRAM_SIZE_HI		0x014	/* RO */
#define ACCEL_REG_DESC_SIZE		0x018	/* RO: sizeof(struct accel_desc) */
#define ACCEL_REG_MAX_RING_SIZE		0x01c	/* RO: entries */
#define ACCEL_REG_DEV_CTRL		0x020	/* WO: ACCEL_DEV_CTRL_* */
#define ACCEL_REG_DEV_STATUS		0x024	/* RO: ACCEL_DEV_STATUS_* */
#define ACCEL_REG_DEV_FAULT_INJECT	0x028	/* RW: ACCEL_DEV_FAULT_*, sticky */
#define ACCEL_REG_IRQ_STATUS		0x030	/* RW1C: ACCEL_IRQ_* */
#define ACCEL_REG_IRQ_MASK		0x034	/* RW: 1 masks the source */
#define ACCEL_REG_SCRATCH		0x040	/* RW: no effect, for probing */
#define ACCEL_REG_DMA_BW_LO		0x048	/* RO: per-queue bytes/s, 0 = unthrottled */
#define ACCEL_REG_DMA_BW_HI		0x04c	/* RO */

#define ACCEL_MAGIC			0x4c434341	/* "ACCL" */

#define ACCEL_CAP_COPY			ACCEL_BIT(0)
#define ACCEL_CAP_FILL			ACCEL_BIT(1)
#define ACCEL_CAP_FENCE			ACCEL_BIT(2)
#define ACCEL_CAP_P2P			ACCEL_BIT(3)
#define ACCEL_CAP_FAULT_INJECT		ACCEL_BIT(4)

#define ACCEL_DEV_CTRL_RESET		ACCEL_BIT(0)	/* whole-device reset */
#define ACCEL_DEV_STATUS_READY		ACCEL_BIT(0)
#define ACCEL_DEV_STATUS_ERROR		ACCEL_BIT(1)	/* a queue is halted */
#define ACCEL_DEV_STATUS_FATAL		ACCEL_BIT(2)	/* until a device reset */

/*
 * DEV_FAULT_INJECT: bits written set, only a device reset clears them.
 * HANG: no queue fetches or completes a descriptor, and queue resets do
 * not take (Q_CTRL reads RESET set). FATAL: the same, and DEV_STATUS
 * reports FATAL with an error interrupt.
 */
#define ACCEL_DEV_FAULT_HANG		ACCEL_BIT(0)
#define ACCEL_DEV_FAULT_FATAL		ACCEL_BIT(1)

/* IRQ_STATUS / IRQ_MASK: bit q for queue q completion, bit 31 for errors */
#define ACCEL_IRQ_QUEUE(q)		ACCEL_BIT(q)
#define ACCEL_IRQ_ERROR			ACCEL_BIT(31)

/* Per-queue registers: BAR0 + ACCEL_QUEUE_BASE + q * ACCEL_QUEUE_STRIDE */
#define ACCEL_QUEUE_BASE		0x1000
#define ACCEL_QUEUE_STRIDE		0x100
#define ACCEL_QUEUE_REG(q, r)		(ACCEL_QUEUE_BASE + (q) * ACCEL_QUEUE_STRIDE + (r))
#define ACCEL_MAX_QUEUES		16

#define ACCEL_Q_RING_BASE_LO		0x00	/* RW while disabled; 64-byte aligned */
#define ACCEL_Q_RING_BASE_HI		0x04
#define ACCEL_Q_RING_SIZE		0x08	/* RW while disabled; power of two */
#define ACCEL_Q_CTRL			0x0c	/* RW: ACCEL_Q_CTRL_* */
#define ACCEL_Q_HEAD			0x10	/* RO: next descriptor the device runs */
#define ACCEL_Q_TAIL			0x14	/* RW doorbell: one past the last valid */
#define ACCEL_Q_STATUS			0x18	/* RO: ACCEL_Q_STATUS_* */
#define ACCEL_Q_ERROR			0x1c	/* RO: ACCEL_ERR_* of a halted queue */
#define ACCEL_Q_ERROR_DESC		0x20	/* RO: ring index of the faulting descriptor */
#define ACCEL_Q_FAULT_INJECT		0x24	/* RW: ACCEL_FAULT_* */
#define ACCEL_Q_COMPLETED_LO		0x28	/* RO: descriptors completed since reset */
#define ACCEL_Q_COMPLETED_HI		0x2c	/* RO */

#define ACCEL_Q_CTRL_ENABLE		ACCEL_BIT(0)
#define ACCEL_Q_CTRL_RESET		ACCEL_BIT(1)	/* self-clearing */

#define ACCEL_Q_STATUS_ENABLED		ACCEL_BIT(0)
#define ACCEL_Q_STATUS_BUSY		ACCEL_BIT(1)	/* head != tail */
#define ACCEL_Q_STATUS_ERROR		ACCEL_BIT(2)	/* halted until queue reset */
#define ACCEL_Q_STATUS_STALLED		ACCEL_BIT(3)	/* halted by fault injection */

#define ACCEL_RING_MIN_SIZE		2
#define ACCEL_RING_MAX_SIZE		65536
#define ACCEL_RING_ALIGN		64

/* FAULT_INJECT: the next COUNT descriptors fail (or the next one stalls) */
#define ACCEL_FAULT_COUNT_MASK		0xffffu
#define ACCEL_FAULT_STALL		ACCEL_BIT(16)

/* Error codes in ACCEL_Q_ERROR */
#define ACCEL_ERR_NONE			0
#define ACCEL_ERR_BAD_OPCODE		1
#define ACCEL_ERR_BAD_FLAGS		2	/* reserved flag or field not zero */
#define ACCEL_ERR_BAD_LENGTH		3	/* zero, or address + length wraps */
#define ACCEL_ERR_VRAM_RANGE		4	/* VRAM offset + length beyond VRAM */
#define ACCEL_ERR_DMA_READ		5	/* bus error reading the source */
#define ACCEL_ERR_DMA_WRITE		6	/* bus error writing the destination */
#define ACCEL_ERR_DESC_FETCH		7	/* bus error reading the descriptor */
#define ACCEL_ERR_BAD_DOORBELL		8	/* tail written >= ring size */
#define ACCEL_ERR_BAD_RING		9	/* enabled with bad base or size */
#define ACCEL_ERR_INJECTED		10	/* fault injection */

/* DMA descriptor: 64 bytes, little-endian */
struct accel_desc {
	ACCEL_LE32 opcode;	/* ACCEL_OP_* */
	ACCEL_LE32 flags;	/* ACCEL_DESC_* */
	ACCEL_LE64 src;		/* COPY: source; FENCE: value; FILL: byte in bits 7:0 */
	ACCEL_LE64 dst;		/* COPY, FILL, FENCE: destination */
	ACCEL_LE64 len;		/* COPY, FILL: bytes, 1 .. 2^64-1 */
	ACCEL_LE64 reserved[4];	/* must be zero */
};

#define ACCEL_DESC_SIZE			64

#define ACCEL_OP_NOP			0
#define ACCEL_OP_COPY			1
#define ACCEL_OP_FILL			2
#define ACCEL_OP_FENCE			3

#define ACCEL_DESC_SRC_VRAM		ACCEL_BIT(0)	/* src is a VRAM offset */
#define ACCEL_DESC_DST_VRAM		ACCEL_BIT(1)	/* dst is a VRAM offset */
#define ACCEL_DESC_IRQ			ACCEL_BIT(2)	/* raise the queue vector when done */
#define ACCEL_DESC_FLAGS_VALID		(ACCEL_DESC_SRC_VRAM | ACCEL_DESC_DST_VRAM | \
					 ACCEL_DESC_IRQ)

/* MSI-X: vector q for queue q, vector num_queues for errors */
#define ACCEL_MSIX_ERROR_VECTOR(nq)	(nq)

#endif /* ACCEL_HW_H */
