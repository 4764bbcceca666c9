/*
 * accel: a simulated PCIe accelerator with device memory and DMA queues.
 *
 * The register and descriptor layout is in include/hw/misc/accel_hw.h (the
 * same header the Linux driver uses) and documented in docs/hardware.md of
 * the accel project.
 *
 * DMA runs in bottom halves, one per queue, in slices of at most
 * ACCEL_SLICE_BYTES so that a large copy never holds the BQL for long and
 * queues make progress independently. An optional per-queue bandwidth limit
 * spaces the slices out on the virtual clock.
 *
 * Copyright (c) 2026 The accel authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qom/object.h"
#include "hw/misc/accel_hw.h"

#define TYPE_ACCEL_DEVICE "accel-pci"
OBJECT_DECLARE_SIMPLE_TYPE(AccelState, ACCEL_DEVICE)

/* Bytes a queue moves before it yields the main loop. */
#define ACCEL_SLICE_BYTES   (4 * MiB)
/* Cost charged for a descriptor that moves no data, to bound a slice. */
#define ACCEL_DESC_COST     4096

#define ACCEL_VRAM_MIN      (1 * MiB)
#define ACCEL_VRAM_MAX      (64 * GiB)

typedef struct AccelQueue {
    AccelState *dev;
    unsigned index;

    uint64_t ring_base;
    uint32_t ring_size;
    bool enabled;
    uint32_t head;
    uint32_t tail;
    uint32_t error;
    uint32_t error_desc;
    bool stalled;
    uint32_t fault_inject;
    uint64_t completed;

    /* Descriptor in progress and how many of its bytes are done. */
    bool active;
    struct accel_desc desc;
    uint64_t done;
    /* Bytes already paid for on the throttled link. */
    uint64_t credit;

    QEMUBH *bh;
    QEMUTimer *throttle;
} AccelQueue;

struct AccelState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion vram;
    uint8_t *vram_ptr;

    uint32_t irq_status;
    uint32_t irq_mask;
    uint32_t scratch;

    AccelQueue queues[ACCEL_MAX_QUEUES];
    uint8_t *bounce;

    /* Properties */
    uint64_t vram_size;
    uint32_t num_queues;
    uint64_t dma_bandwidth;
};

/* Interrupts */

static void accel_update_intx(AccelState *s)
{
    pci_set_irq(PCI_DEVICE(s), (s->irq_status & ~s->irq_mask) != 0);
}

static unsigned accel_irq_vector(AccelState *s, uint32_t bit)
{
    return bit == ACCEL_IRQ_ERROR ? ACCEL_MSIX_ERROR_VECTOR(s->num_queues)
                                  : ctz32(bit);
}

static void accel_raise_irq(AccelState *s, uint32_t bit)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    s->irq_status |= bit;
    if (!msix_enabled(pdev)) {
        accel_update_intx(s);
    } else if (!(s->irq_mask & bit)) {
        msix_notify(pdev, accel_irq_vector(s, bit));
    }
}

static void accel_write_irq_mask(AccelState *s, uint32_t mask)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint32_t unmasked = s->irq_mask & ~mask & s->irq_status;

    s->irq_mask = mask;
    if (!msix_enabled(pdev)) {
        accel_update_intx(s);
        return;
    }
    /* A source pending while masked is delivered when it is unmasked. */
    while (unmasked) {
        uint32_t bit = unmasked & -unmasked;

        unmasked &= ~bit;
        if (bit == ACCEL_IRQ_ERROR || ctz32(bit) < s->num_queues) {
            msix_notify(pdev, accel_irq_vector(s, bit));
        }
    }
}

/* Queue state */

static bool accel_queue_runnable(AccelQueue *q)
{
    return q->enabled && !q->error && !q->stalled && q->head != q->tail;
}

static void accel_queue_kick(AccelQueue *q)
{
    if (accel_queue_runnable(q) && !timer_pending(q->throttle)) {
        qemu_bh_schedule(q->bh);
    }
}

static void accel_queue_halt(AccelQueue *q, uint32_t error)
{
    AccelState *s = q->dev;

    q->error = error;
    q->error_desc = q->head;
    q->active = false;
    qemu_log_mask(LOG_GUEST_ERROR, "accel: queue %u halted at descriptor %u "
                  "with error %u\n", q->index, q->head, error);
    accel_raise_irq(s, ACCEL_IRQ_ERROR);
}

static void accel_queue_stop(AccelQueue *q)
{
    qemu_bh_cancel(q->bh);
    timer_del(q->throttle);
    q->enabled = false;
    q->active = false;
    q->credit = 0;
}

/*
 * A queue reset keeps the ring configuration and pending fault injection
 * (so that "fail the next N descriptors" spans resets); a device reset
 * clears them too.
 */
static void accel_queue_reset(AccelQueue *q, bool device_reset)
{
    accel_queue_stop(q);
    if (device_reset) {
        q->ring_base = 0;
        q->ring_size = 0;
        q->fault_inject = 0;
    }
    q->head = 0;
    q->tail = 0;
    q->error = ACCEL_ERR_NONE;
    q->error_desc = 0;
    q->stalled = false;
    q->completed = 0;
    q->done = 0;
}

static bool accel_ring_valid(AccelQueue *q)
{
    uint64_t ring_bytes = (uint64_t)q->ring_size * ACCEL_DESC_SIZE;

    return is_power_of_2(q->ring_size) &&
           q->ring_size >= ACCEL_RING_MIN_SIZE &&
           q->ring_size <= ACCEL_RING_MAX_SIZE &&
           QEMU_IS_ALIGNED(q->ring_base, ACCEL_RING_ALIGN) &&
           q->ring_base <= UINT64_MAX - ring_bytes;
}

static void accel_queue_write_ctrl(AccelQueue *q, uint32_t val)
{
    if (val & ACCEL_Q_CTRL_RESET) {
        accel_queue_reset(q, false);
        return;
    }
    if (!(val & ACCEL_Q_CTRL_ENABLE)) {
        /* Disabling stops fetching; work in flight is abandoned. */
        accel_queue_stop(q);
        return;
    }
    if (q->enabled) {
        return;
    }
    q->enabled = true;
    if (!accel_ring_valid(q)) {
        accel_queue_halt(q, ACCEL_ERR_BAD_RING);
    }
}

static void accel_queue_write_tail(AccelQueue *q, uint32_t val)
{
    if (!q->enabled) {
        qemu_log_mask(LOG_GUEST_ERROR, "accel: doorbell of disabled queue %u\n",
                      q->index);
        return;
    }
    if (q->error) {
        return;
    }
    if (val >= q->ring_size) {
        accel_queue_halt(q, ACCEL_ERR_BAD_DOORBELL);
        return;
    }
    q->tail = val;
    accel_queue_kick(q);
}

/* Descriptor validation */

static bool accel_bus_range_ok(uint64_t addr, uint64_t len)
{
    return len - 1 <= UINT64_MAX - addr;
}

static uint32_t accel_check_range(AccelState *s, uint64_t addr, uint64_t len,
                                  bool vram)
{
    if (!vram) {
        return accel_bus_range_ok(addr, len) ? 0 : ACCEL_ERR_BAD_LENGTH;
    }
    if (addr >= s->vram_size || len > s->vram_size - addr) {
        return ACCEL_ERR_VRAM_RANGE;
    }
    return 0;
}

static uint32_t accel_validate_desc(AccelState *s, const struct accel_desc *d)
{
    bool src_vram = d->flags & ACCEL_DESC_SRC_VRAM;
    bool dst_vram = d->flags & ACCEL_DESC_DST_VRAM;
    uint32_t err;
    int i;

    if (d->flags & ~ACCEL_DESC_FLAGS_VALID) {
        return ACCEL_ERR_BAD_FLAGS;
    }
    for (i = 0; i < ARRAY_SIZE(d->reserved); i++) {
        if (d->reserved[i]) {
            return ACCEL_ERR_BAD_FLAGS;
        }
    }

    switch (d->opcode) {
    case ACCEL_OP_NOP:
        if (src_vram || dst_vram || d->src || d->dst || d->len) {
            return ACCEL_ERR_BAD_FLAGS;
        }
        return 0;
    case ACCEL_OP_FENCE:
        if (src_vram || d->len) {
            return ACCEL_ERR_BAD_FLAGS;
        }
        return accel_check_range(s, d->dst, sizeof(uint64_t), dst_vram);
    case ACCEL_OP_FILL:
        if (src_vram || d->src > UINT8_MAX) {
            return ACCEL_ERR_BAD_FLAGS;
        }
        if (!d->len) {
            return ACCEL_ERR_BAD_LENGTH;
        }
        return accel_check_range(s, d->dst, d->len, dst_vram);
    case ACCEL_OP_COPY:
        if (!d->len) {
            return ACCEL_ERR_BAD_LENGTH;
        }
        err = accel_check_range(s, d->src, d->len, src_vram);
        return err ? err : accel_check_range(s, d->dst, d->len, dst_vram);
    default:
        return ACCEL_ERR_BAD_OPCODE;
    }
}

static uint32_t accel_fetch_desc(AccelQueue *q)
{
    AccelState *s = q->dev;
    struct accel_desc *d = &q->desc;
    int i;

    if (pci_dma_read(PCI_DEVICE(s), q->ring_base +
                     (uint64_t)q->head * ACCEL_DESC_SIZE,
                     d, sizeof(*d)) != MEMTX_OK) {
        return ACCEL_ERR_DESC_FETCH;
    }
    d->opcode = le32_to_cpu(d->opcode);
    d->flags = le32_to_cpu(d->flags);
    d->src = le64_to_cpu(d->src);
    d->dst = le64_to_cpu(d->dst);
    d->len = le64_to_cpu(d->len);
    for (i = 0; i < ARRAY_SIZE(d->reserved); i++) {
        d->reserved[i] = le64_to_cpu(d->reserved[i]);
    }
    return accel_validate_desc(s, d);
}

/* Data movement: each step moves at most ACCEL_SLICE_BYTES. */

static uint32_t accel_copy_step(AccelState *s, const struct accel_desc *d,
                                uint64_t off, uint64_t n)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint64_t src = d->src + off, dst = d->dst + off;
    bool src_vram = d->flags & ACCEL_DESC_SRC_VRAM;
    bool dst_vram = d->flags & ACCEL_DESC_DST_VRAM;

    if (src_vram && dst_vram) {
        memmove(s->vram_ptr + dst, s->vram_ptr + src, n);
        return 0;
    }
    if (src_vram) {
        return pci_dma_write(pdev, dst, s->vram_ptr + src, n) == MEMTX_OK ?
               0 : ACCEL_ERR_DMA_WRITE;
    }
    if (dst_vram) {
        return pci_dma_read(pdev, src, s->vram_ptr + dst, n) == MEMTX_OK ?
               0 : ACCEL_ERR_DMA_READ;
    }
    if (pci_dma_read(pdev, src, s->bounce, n) != MEMTX_OK) {
        return ACCEL_ERR_DMA_READ;
    }
    return pci_dma_write(pdev, dst, s->bounce, n) == MEMTX_OK ?
           0 : ACCEL_ERR_DMA_WRITE;
}

static uint32_t accel_fill_step(AccelState *s, const struct accel_desc *d,
                                uint64_t off, uint64_t n)
{
    if (d->flags & ACCEL_DESC_DST_VRAM) {
        memset(s->vram_ptr + d->dst + off, d->src, n);
        return 0;
    }
    memset(s->bounce, d->src, n);
    return pci_dma_write(PCI_DEVICE(s), d->dst + off, s->bounce, n) ==
           MEMTX_OK ? 0 : ACCEL_ERR_DMA_WRITE;
}

static uint32_t accel_fence(AccelState *s, const struct accel_desc *d)
{
    if (d->flags & ACCEL_DESC_DST_VRAM) {
        stq_le_p(s->vram_ptr + d->dst, d->src);
        return 0;
    }
    return stq_le_pci_dma(PCI_DEVICE(s), d->dst, d->src,
                          MEMTXATTRS_UNSPECIFIED) == MEMTX_OK ?
           0 : ACCEL_ERR_DMA_WRITE;
}

/* Run up to @budget bytes of the current descriptor; returns bytes charged. */
static uint64_t accel_exec(AccelQueue *q, uint64_t budget, uint32_t *err)
{
    AccelState *s = q->dev;
    const struct accel_desc *d = &q->desc;
    uint64_t n;

    switch (d->opcode) {
    case ACCEL_OP_COPY:
    case ACCEL_OP_FILL:
        n = MIN(d->len - q->done, budget);
        *err = d->opcode == ACCEL_OP_COPY ? accel_copy_step(s, d, q->done, n)
                                          : accel_fill_step(s, d, q->done, n);
        q->done += n;
        return n;
    case ACCEL_OP_FENCE:
        *err = accel_fence(s, d);
        return ACCEL_DESC_COST;
    default:
        *err = 0;
        return ACCEL_DESC_COST;
    }
}

static bool accel_desc_finished(AccelQueue *q)
{
    const struct accel_desc *d = &q->desc;

    return (d->opcode != ACCEL_OP_COPY && d->opcode != ACCEL_OP_FILL) ||
           q->done == d->len;
}

static void accel_complete_desc(AccelQueue *q)
{
    q->head = (q->head + 1) & (q->ring_size - 1);
    q->completed++;
    q->active = false;
    if (q->desc.flags & ACCEL_DESC_IRQ) {
        accel_raise_irq(q->dev, ACCEL_IRQ_QUEUE(q->index));
    }
}

/* Fetch the next descriptor, applying fault injection; false if halted. */
static bool accel_start_desc(AccelQueue *q)
{
    uint32_t err = accel_fetch_desc(q);

    if (err) {
        accel_queue_halt(q, err);
        return false;
    }
    if (q->fault_inject & ACCEL_FAULT_STALL) {
        q->fault_inject = 0;
        q->stalled = true;
        return false;
    }
    if (q->fault_inject & ACCEL_FAULT_COUNT_MASK) {
        q->fault_inject--;
        accel_queue_halt(q, ACCEL_ERR_INJECTED);
        return false;
    }
    q->active = true;
    q->done = 0;
    return true;
}

/* Bytes the next step of the current descriptor will be charged. */
static uint64_t accel_step_cost(AccelQueue *q, uint64_t budget)
{
    const struct accel_desc *d = &q->desc;

    if (d->opcode == ACCEL_OP_COPY || d->opcode == ACCEL_OP_FILL) {
        return MIN(d->len - q->done, budget);
    }
    return ACCEL_DESC_COST;
}

/*
 * On a throttled queue a step runs only once the link time for its bytes
 * has passed, so a transfer of L bytes takes L / dma-bandwidth. Returns
 * false if the queue must wait for the throttle timer.
 */
static bool accel_pay_for_step(AccelQueue *q, uint64_t budget)
{
    AccelState *s = q->dev;
    uint64_t cost = accel_step_cost(q, budget);

    if (!s->dma_bandwidth || q->credit >= cost) {
        return true;
    }
    timer_mod(q->throttle, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
              muldiv64(cost - q->credit, NANOSECONDS_PER_SECOND,
                       s->dma_bandwidth));
    q->credit = cost;
    return false;
}

static void accel_queue_run(void *opaque)
{
    AccelQueue *q = opaque;
    uint64_t moved = 0, n;
    uint32_t err;

    while (accel_queue_runnable(q) && moved < ACCEL_SLICE_BYTES) {
        if (!q->active && !accel_start_desc(q)) {
            return;
        }
        if (!accel_pay_for_step(q, ACCEL_SLICE_BYTES - moved)) {
            return;
        }
        n = accel_exec(q, ACCEL_SLICE_BYTES - moved, &err);
        q->credit -= MIN(q->credit, n);
        moved += n;
        if (err) {
            accel_queue_halt(q, err);
            return;
        }
        if (accel_desc_finished(q)) {
            accel_complete_desc(q);
        }
    }
    if (accel_queue_runnable(q)) {
        qemu_bh_schedule(q->bh);
    }
}

static void accel_throttle_expired(void *opaque)
{
    AccelQueue *q = opaque;

    if (accel_queue_runnable(q)) {
        qemu_bh_schedule(q->bh);
    }
}

/* Registers */

static uint32_t accel_queue_status(AccelQueue *q)
{
    return (q->enabled ? ACCEL_Q_STATUS_ENABLED : 0) |
           (q->head != q->tail ? ACCEL_Q_STATUS_BUSY : 0) |
           (q->error ? ACCEL_Q_STATUS_ERROR : 0) |
           (q->stalled ? ACCEL_Q_STATUS_STALLED : 0);
}

static uint64_t accel_queue_read(AccelQueue *q, hwaddr reg)
{
    switch (reg) {
    case ACCEL_Q_RING_BASE_LO:
        return extract64(q->ring_base, 0, 32);
    case ACCEL_Q_RING_BASE_HI:
        return extract64(q->ring_base, 32, 32);
    case ACCEL_Q_RING_SIZE:
        return q->ring_size;
    case ACCEL_Q_CTRL:
        return q->enabled ? ACCEL_Q_CTRL_ENABLE : 0;
    case ACCEL_Q_HEAD:
        return q->head;
    case ACCEL_Q_TAIL:
        return q->tail;
    case ACCEL_Q_STATUS:
        return accel_queue_status(q);
    case ACCEL_Q_ERROR:
        return q->error;
    case ACCEL_Q_ERROR_DESC:
        return q->error_desc;
    case ACCEL_Q_FAULT_INJECT:
        return q->fault_inject;
    case ACCEL_Q_COMPLETED_LO:
        return extract64(q->completed, 0, 32);
    case ACCEL_Q_COMPLETED_HI:
        return extract64(q->completed, 32, 32);
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "accel: read of unknown queue "
                      "register 0x%" HWADDR_PRIx "\n", reg);
        return 0;
    }
}

static void accel_queue_write(AccelQueue *q, hwaddr reg, uint32_t val)
{
    bool ring_reg = reg == ACCEL_Q_RING_BASE_LO ||
                    reg == ACCEL_Q_RING_BASE_HI || reg == ACCEL_Q_RING_SIZE;

    if (ring_reg && q->enabled) {
        qemu_log_mask(LOG_GUEST_ERROR, "accel: ring of enabled queue %u "
                      "is read-only\n", q->index);
        return;
    }
    switch (reg) {
    case ACCEL_Q_RING_BASE_LO:
        q->ring_base = deposit64(q->ring_base, 0, 32, val);
        break;
    case ACCEL_Q_RING_BASE_HI:
        q->ring_base = deposit64(q->ring_base, 32, 32, val);
        break;
    case ACCEL_Q_RING_SIZE:
        q->ring_size = val;
        break;
    case ACCEL_Q_CTRL:
        accel_queue_write_ctrl(q, val);
        break;
    case ACCEL_Q_TAIL:
        accel_queue_write_tail(q, val);
        break;
    case ACCEL_Q_FAULT_INJECT:
        q->fault_inject = val & (ACCEL_FAULT_COUNT_MASK | ACCEL_FAULT_STALL);
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "accel: write to read-only or unknown "
                      "queue register 0x%" HWADDR_PRIx "\n", reg);
    }
}

static AccelQueue *accel_queue_at(AccelState *s, hwaddr addr, hwaddr *reg)
{
    hwaddr qi;

    if (addr < ACCEL_QUEUE_BASE) {
        return NULL;
    }
    qi = (addr - ACCEL_QUEUE_BASE) / ACCEL_QUEUE_STRIDE;
    if (qi >= s->num_queues) {
        return NULL;
    }
    *reg = (addr - ACCEL_QUEUE_BASE) % ACCEL_QUEUE_STRIDE;
    return &s->queues[qi];
}

static uint32_t accel_dev_status(AccelState *s)
{
    uint32_t status = ACCEL_DEV_STATUS_READY;
    unsigned i;

    for (i = 0; i < s->num_queues; i++) {
        if (s->queues[i].error) {
            status |= ACCEL_DEV_STATUS_ERROR;
        }
    }
    return status;
}

static uint64_t accel_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    AccelState *s = opaque;
    AccelQueue *q;
    hwaddr reg;

    q = accel_queue_at(s, addr, &reg);
    if (q) {
        return accel_queue_read(q, reg);
    }
    switch (addr) {
    case ACCEL_REG_MAGIC:
        return ACCEL_MAGIC;
    case ACCEL_REG_VERSION:
        return ACCEL_HW_VERSION_MAJOR << 16 | ACCEL_HW_VERSION_MINOR;
    case ACCEL_REG_CAPS:
        return ACCEL_CAP_COPY | ACCEL_CAP_FILL | ACCEL_CAP_FENCE |
               ACCEL_CAP_P2P | ACCEL_CAP_FAULT_INJECT;
    case ACCEL_REG_NUM_QUEUES:
        return s->num_queues;
    case ACCEL_REG_VRAM_SIZE_LO:
        return extract64(s->vram_size, 0, 32);
    case ACCEL_REG_VRAM_SIZE_HI:
        return extract64(s->vram_size, 32, 32);
    case ACCEL_REG_DESC_SIZE:
        return ACCEL_DESC_SIZE;
    case ACCEL_REG_MAX_RING_SIZE:
        return ACCEL_RING_MAX_SIZE;
    case ACCEL_REG_DEV_STATUS:
        return accel_dev_status(s);
    case ACCEL_REG_IRQ_STATUS:
        return s->irq_status;
    case ACCEL_REG_IRQ_MASK:
        return s->irq_mask;
    case ACCEL_REG_SCRATCH:
        return s->scratch;
    case ACCEL_REG_DMA_BW_LO:
        return extract64(s->dma_bandwidth, 0, 32);
    case ACCEL_REG_DMA_BW_HI:
        return extract64(s->dma_bandwidth, 32, 32);
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "accel: read of unknown register 0x%"
                      HWADDR_PRIx "\n", addr);
        return 0;
    }
}

static void accel_reset(DeviceState *dev);

static void accel_regs_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    AccelState *s = opaque;
    AccelQueue *q;
    hwaddr reg;

    q = accel_queue_at(s, addr, &reg);
    if (q) {
        accel_queue_write(q, reg, val);
        return;
    }
    switch (addr) {
    case ACCEL_REG_DEV_CTRL:
        if (val & ACCEL_DEV_CTRL_RESET) {
            accel_reset(DEVICE(s));
        }
        break;
    case ACCEL_REG_IRQ_STATUS:
        s->irq_status &= ~val;
        if (!msix_enabled(PCI_DEVICE(s))) {
            accel_update_intx(s);
        }
        break;
    case ACCEL_REG_IRQ_MASK:
        accel_write_irq_mask(s, val);
        break;
    case ACCEL_REG_SCRATCH:
        s->scratch = val;
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "accel: write to read-only or unknown "
                      "register 0x%" HWADDR_PRIx "\n", addr);
    }
}

static const MemoryRegionOps accel_regs_ops = {
    .read = accel_regs_read,
    .write = accel_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

/* Lifecycle */

static void accel_reset(DeviceState *dev)
{
    AccelState *s = ACCEL_DEVICE(dev);
    unsigned i;

    for (i = 0; i < s->num_queues; i++) {
        accel_queue_reset(&s->queues[i], true);
    }
    s->irq_status = 0;
    s->irq_mask = 0;
    s->scratch = 0;
    accel_update_intx(s);
}

static bool accel_check_properties(AccelState *s, Error **errp)
{
    if (!is_power_of_2(s->vram_size) || s->vram_size < ACCEL_VRAM_MIN ||
        s->vram_size > ACCEL_VRAM_MAX) {
        error_setg(errp, "accel: vram-size must be a power of two from 1 MiB "
                   "to 64 GiB, got %" PRIu64 " bytes", s->vram_size);
        return false;
    }
    if (s->num_queues < 1 || s->num_queues > ACCEL_MAX_QUEUES) {
        error_setg(errp, "accel: queues must be from 1 to %d, got %" PRIu32,
                   ACCEL_MAX_QUEUES, s->num_queues);
        return false;
    }
    return true;
}

static void accel_init_queues(AccelState *s)
{
    DeviceState *dev = DEVICE(s);
    unsigned i;

    for (i = 0; i < s->num_queues; i++) {
        AccelQueue *q = &s->queues[i];

        q->dev = s;
        q->index = i;
        q->bh = qemu_bh_new_guarded(accel_queue_run, q,
                                    &dev->mem_reentrancy_guard);
        q->throttle = timer_new_ns(QEMU_CLOCK_VIRTUAL,
                                   accel_throttle_expired, q);
    }
}

static void accel_realize(PCIDevice *pdev, Error **errp)
{
    ERRP_GUARD();
    AccelState *s = ACCEL_DEVICE(pdev);
    unsigned nvec;
    unsigned i;

    if (!accel_check_properties(s, errp)) {
        return;
    }

    pci_config_set_interrupt_pin(pdev->config, 1);
    if (pci_is_express(pdev) && pcie_endpoint_cap_init(pdev, 0) < 0) {
        error_setg(errp, "accel: cannot add the PCI Express capability");
        return;
    }

    memory_region_init_io(&s->regs, OBJECT(s), &accel_regs_ops, s,
                          "accel-regs", ACCEL_REGS_SIZE);
    pci_register_bar(pdev, ACCEL_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);

    memory_region_init_ram(&s->vram, OBJECT(s), "accel-vram", s->vram_size,
                           errp);
    if (*errp) {
        return;
    }
    s->vram_ptr = memory_region_get_ram_ptr(&s->vram);
    pci_register_bar(pdev, ACCEL_BAR_VRAM, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->vram);

    nvec = s->num_queues + 1;
    if (msix_init_exclusive_bar(pdev, nvec, ACCEL_BAR_MSIX, errp)) {
        return;
    }
    for (i = 0; i < nvec; i++) {
        msix_vector_use(pdev, i);
    }

    s->bounce = g_malloc(ACCEL_SLICE_BYTES);
    accel_init_queues(s);
}

static void accel_exit(PCIDevice *pdev)
{
    AccelState *s = ACCEL_DEVICE(pdev);
    unsigned i;

    for (i = 0; i < s->num_queues; i++) {
        qemu_bh_delete(s->queues[i].bh);
        timer_free(s->queues[i].throttle);
    }
    g_free(s->bounce);
    msix_uninit_exclusive_bar(pdev);
}

static Property accel_properties[] = {
    DEFINE_PROP_SIZE("vram-size", AccelState, vram_size, 256 * MiB),
    DEFINE_PROP_UINT32("queues", AccelState, num_queues, 4),
    DEFINE_PROP_SIZE("dma-bandwidth", AccelState, dma_bandwidth, 0),
    DEFINE_PROP_END_OF_LIST(),
};

static const VMStateDescription vmstate_accel = {
    .name = "accel",
    .unmigratable = 1,
};

static void accel_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = accel_realize;
    k->exit = accel_exit;
    k->vendor_id = ACCEL_PCI_VENDOR_ID;
    k->device_id = ACCEL_PCI_DEVICE_ID;
    k->revision = ACCEL_PCI_REVISION;
    k->class_id = ACCEL_PCI_CLASS;
    k->subsystem_vendor_id = ACCEL_PCI_SUBSYS_VENDOR_ID;
    k->subsystem_id = ACCEL_PCI_SUBSYS_ID;
    dc->desc = "accel PCIe accelerator with VRAM and DMA queues";
    dc->reset = accel_reset;
    dc->vmsd = &vmstate_accel;
    device_class_set_props(dc, accel_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo accel_info = {
    .name = TYPE_ACCEL_DEVICE,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(AccelState),
    .class_init = accel_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { },
    },
};

static void accel_register_types(void)
{
    type_register_static(&accel_info);
}

type_init(accel_register_types)
