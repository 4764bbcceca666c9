/*
 * accel: a simulated PCIe accelerator with device memory and DMA queues.
 *
 * The register and descriptor layout is in include/hw/misc/accel_hw.h (the
 * same header the Linux driver uses) and documented in docs/hardware.md of
 * the accel project.
 *
 * Each queue runs in a bottom half guarded by the device's re-entrancy
 * guard, as hw/nvme's queues do: it fetches and validates descriptors,
 * translates addresses, moves what is small or not RAM, completes
 * descriptors and raises interrupts, a bounded slice at a time. The bytes
 * of a large copy or fill between RAM and VRAM are handed to QEMU's thread
 * pool (thread_pool_submit_aio()), which moves them with the BQL released,
 * so queues move data in parallel and neither MMIO nor the vCPUs wait for
 * them; the completion hands the queue back to its bottom half. Whatever
 * stops a queue (disable, queue reset, device reset, unplug) runs under
 * the BQL and waits for the bytes in flight. An optional per-queue
 * bandwidth limit spaces the steps out on the virtual clock. A doorbell
 * that finds its queue idle does up to ACCEL_INLINE_BYTES of the work
 * itself, in the MMIO write, so a small copy wakes nothing.
 *
 * Copyright (c) 2026 The accel authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/host-utils.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qapi/error.h"
#include "block/thread-pool.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/pcie_aer.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qom/object.h"
#include "hw/misc/accel_hw.h"
#include "trace.h"

/* Not "AccelState": QEMU's core has that name (include/qemu/accel.h). */
#define TYPE_ACCEL_PCI "accel-pci"
OBJECT_DECLARE_SIMPLE_TYPE(AccelPCIState, ACCEL_PCI)

/*
 * Work a queue's bottom half does, counted in bytes, before it lets the
 * main loop run.
 */
#define ACCEL_SLICE_BYTES   (4 * MiB)
/* ... and in time: what each step costs in the rest of the machine varies. */
#define ACCEL_SLICE_NS      (2 * SCALE_MS)
/* Messages the bottom half sends before it lets the main loop run. */
#define ACCEL_MSIX_BATCH    4
/* Work a doorbell does itself, in the vCPU, when it finds the queue idle. */
#define ACCEL_INLINE_BYTES  (64 * KiB)
/* Link time, in bytes, of a descriptor that moves no data. */
#define ACCEL_DESC_COST     4096
/*
 * The least a step of a descriptor counts toward a slice, whatever it
 * moves: a doorbell runs at most 4 steps, a slice 256, each with its
 * fetch, checks and mapping (about 10 us), so that a ring of 1-byte
 * copies holds the BQL for a few milliseconds at a time as big copies do.
 */
#define ACCEL_STEP_MIN_COST (16 * KiB)
/*
 * A byte moved under the BQL (MMIO, such as config space read 4 bytes at a
 * time) counts this many times toward the slice, so that a slice of such
 * work holds the BQL about as long as a slice of RAM copies runs.
 */
#define ACCEL_LOCKED_COST   64
/*
 * RAM moved by a thread of QEMU's pool in one transfer, and the least:
 * less is moved in place, under the BQL, where a trip through the pool
 * would cost more than the bytes.
 */
#define ACCEL_XFER_BYTES    (16 * MiB)
#define ACCEL_XFER_MIN      (64 * KiB)
/* RAM pieces mapped for one transfer (an IOMMU maps page by page). */
#define ACCEL_MAX_CHUNKS    64
/*
 * Bytes a pool thread copies before it looks whether the queue was
 * stopped: a stop waits for the transfer in flight, with the BQL held,
 * and a device reset or unplug stops every queue.
 */
#define ACCEL_STOP_PIECE    (256 * KiB)
/*
 * Bytes moved at a time, under the BQL, where an end is not RAM: a few
 * accesses, since each can cost milliseconds (one into a root port's or a
 * peer's config space can rebuild the machine's memory map).
 */
#define ACCEL_BQL_PIECE     16

#define ACCEL_VRAM_MIN      (1 * MiB)
#define ACCEL_VRAM_MAX      (64 * GiB)

/* A piece of a transfer between host pointers; src NULL for a fill. */
typedef struct AccelChunk {
    void *src;
    void *dst;
    hwaddr len;
    bool src_mapped;
    bool dst_mapped;
} AccelChunk;

/* The mapped RAM and VRAM of one step of a copy or fill. */
typedef struct AccelPieces {
    AccelChunk chunk[ACCEL_MAX_CHUNKS];
    unsigned count;
    uint64_t bytes;
    int fill;               /* the byte of a fill */
} AccelPieces;

typedef enum AccelXferState {
    ACCEL_XFER_QUEUED,      /* submitted; no pool thread has it yet */
    ACCEL_XFER_RUNNING,     /* a pool thread moves its bytes */
    ACCEL_XFER_DONE,        /* the pool thread has left it */
    ACCEL_XFER_CANCELLED,   /* stopped before it started: it moves nothing */
} AccelXferState;

typedef struct AccelQueue AccelQueue;

/*
 * Pieces a thread of QEMU's pool moves without the BQL. It belongs to the
 * pool from submission to its completion callback, which frees it; the
 * queue owns its mapping (under the BQL) until it lets it go.
 */
typedef struct AccelXfer {
    /* The queue, under the BQL; NULL once a stop unmapped and let it go. */
    AccelQueue *q;
    /* Set by a stop or a halt: the pool thread moves no further piece. */
    bool abandon;
    QemuMutex lock;
    QemuCond left;          /* broadcast when state leaves RUNNING */
    AccelXferState state;   /* under lock */
    uint64_t moved;         /* under lock: bytes moved by the pool thread */
    AccelPieces pieces;     /* written before submission, read-only after */
} AccelXfer;

struct AccelQueue {
    AccelPCIState *dev;
    unsigned index;

    /* All of the queue's state is the BQL's. */

    uint64_t ring_base;
    uint32_t ring_size;
    bool enabled;
    uint32_t head;
    uint32_t tail;
    uint32_t error;
    uint32_t error_desc;
    bool stalled;
    /* The doorbell was written since the queue was last stopped. */
    bool rung;
    uint32_t fault_inject;
    /* A reset written while the device hangs: it takes at a device reset. */
    bool reset_stuck;
    uint64_t completed;

    /* Descriptor in progress and how many of its bytes are done. */
    bool active;
    struct accel_desc desc;
    uint64_t done;
    /* Bytes already paid for on the throttled link. */
    uint64_t credit;
    /* The link has been busy since link_start with link_paid bytes. */
    int64_t link_start;
    uint64_t link_paid;

    QEMUTimer *throttle;
    /* Runs the queue's next slice once the main loop's rest is over. */
    QEMUTimer *rest;
    /* The current slice moved a piece under the BQL. */
    bool slice_locked;
    /* Runs the queue's slices (guarded by the device's re-entrancy guard). */
    QEMUBH *bh;
    /* The transfer in QEMU's pool, if any: the queue waits for it. */
    AccelXfer *xfer;
    /*
     * Bumped by accel_queue_stop(). A slice notes it when it starts and
     * gives up, touching nothing, once it has changed: anything it calls
     * (a DMA into a root port's config space, an interrupt) can stop,
     * reset or unplug the device.
     */
    uint32_t gen;
    uint32_t slice_gen;
    /* Pieces a step moves in place, under the BQL. */
    AccelPieces in_place;
    /* Bytes of a piece that moves under the BQL. */
    uint8_t bounce[ACCEL_BQL_PIECE];
};

struct AccelPCIState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion vram;
    uint8_t *vram_ptr;

    uint32_t irq_status;
    uint32_t irq_mask;
    uint32_t scratch;
    /* ACCEL_DEV_FAULT_*: the whole device hangs until it is reset. */
    uint32_t dev_fault;

    AccelQueue queues[ACCEL_MAX_QUEUES];

    /*
     * Vectors whose message is due from msix_bh: raised by a register
     * write rather than the device's own work, or held pending in the PBA
     * while masked and released by an unmasking (accel_msix_signal()).
     */
    uint64_t msix_due;
    QEMUBH *msix_bh;

    /* Properties */
    uint64_t vram_size;
    uint32_t num_queues;
    uint64_t dma_bandwidth;
};

/*
 * The device whose queue slice, or message bottom half, this thread runs;
 * NULL for a vCPU's, qtest's or the main loop's own access. A doorbell
 * rung meanwhile (by that work's DMA or messages: a peer's TAIL, chains
 * of peers) only schedules its bottom half, so that one register write
 * does at most one doorbell's bounded work. And a device sends a message
 * at once only from its own work: raised by anything else (a register
 * write, which a peer's copy may be making), the message goes from
 * msix_bh once that access is over, so that it cannot unplug the device
 * under it.
 */
static __thread AccelPCIState *accel_running_dev;
/* ... and that work is a doorbell's inline work, inside the access that rang it. */
static __thread bool accel_running_inline;
/*
 * Until when the main loop rests from the queues of every accel device
 * (QEMU_CLOCK_REALTIME, under the BQL): set by a slice that moved pieces
 * under the BQL through the memory API, so that all the devices' queues,
 * whose bottom halves run back to back in one main-loop turn, take one
 * such slice per rest between them, not one each.
 */
static int64_t accel_rest_until;

/*
 * A removed device's handlers and bottom halves touch nothing: a peer's
 * copy into the registers can unplug the device between two of its
 * accesses (a message that an unmasking sends goes to a root port's Slot
 * Control), and the copy's later accesses still reach these handlers.
 */
static bool accel_gone(AccelPCIState *s)
{
    return !qdev_is_realized(DEVICE(s));
}

static void accel_unref_bh(void *opaque)
{
    object_unref(opaque);
}

/*
 * A bottom half whose work can unplug the device (DMA, a message) holds
 * it: QEMU restores the device's re-entrancy guard after a guarded bottom
 * half returns, so a device removed meanwhile is let go from a later
 * bottom half. While it is realized, its bus holds it.
 */
static void accel_hold(AccelPCIState *s)
{
    object_ref(OBJECT(s));
}

static void accel_let_go(AccelPCIState *s)
{
    if (accel_gone(s)) {
        aio_bh_schedule_oneshot(qemu_get_aio_context(), accel_unref_bh,
                                OBJECT(s));
    } else {
        object_unref(OBJECT(s));
    }
}

/*
 * Whether the byte at bus address @addr is RAM the device reaches directly,
 * not registers, config space or nothing, which an access can reset or
 * unplug a device through.
 */
static bool accel_bus_is_ram(AccelPCIState *s, uint64_t addr, bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    hwaddr xlat, len = 1;
    MemoryRegion *mr;

    RCU_READ_LOCK_GUARD();
    mr = address_space_translate(as, addr, &xlat, &len, is_write,
                                 MEMTXATTRS_UNSPECIFIED);
    return memory_access_is_direct(mr, is_write, MEMTXATTRS_UNSPECIFIED);
}

/* Interrupts */

static void accel_update_intx(AccelPCIState *s)
{
    int level = (s->irq_status & ~s->irq_mask) != 0;

    trace_accel_irq_pin(level);
    pci_set_irq(PCI_DEVICE(s), level);
}

static void accel_msix_notify(AccelPCIState *s, unsigned vector)
{
    trace_accel_irq_msix(vector);
    msix_notify(PCI_DEVICE(s), vector);
}

/*
 * Whether @vector's message goes to the interrupt controller (x86's MSI
 * window) or to RAM, where it can reset or unplug nothing.
 */
static bool accel_msix_harmless(AccelPCIState *s, unsigned vector)
{
    uint64_t addr = msix_get_message(PCI_DEVICE(s), vector).address;

    return (addr >> 20) == 0xfee || accel_bus_is_ram(s, addr, true);
}

/*
 * Send @vector's message now from the device's own work, else from
 * msix_bh; from a doorbell's inline work only if it is harmless, since
 * the access that rang the doorbell goes on after it.
 */
static void accel_msix_signal(AccelPCIState *s, unsigned vector)
{
    if (accel_running_dev == s &&
        (!accel_running_inline || accel_msix_harmless(s, vector))) {
        accel_msix_notify(s, vector);
        return;
    }
    s->msix_due |= BIT_ULL(vector);
    qemu_bh_schedule(s->msix_bh);
}

/* Whether the PBA holds @vector's message (msix.c keeps its own test static). */
static bool accel_msix_pending(PCIDevice *pdev, unsigned vector)
{
    return pdev->msix_pba[vector / 8] & (1u << (vector % 8));
}

/*
 * MSI-X vector notifier: @vector was unmasked. It runs before msix.c would
 * send the pending message itself, in the middle of the unmasking write.
 */
static int accel_msix_vector_use(PCIDevice *pdev, unsigned vector,
                                 MSIMessage msg)
{
    AccelPCIState *s = ACCEL_PCI(pdev);

    if (accel_msix_pending(pdev, vector)) {
        msix_clr_pending(pdev, vector);
        s->msix_due |= BIT_ULL(vector);
        qemu_bh_schedule(s->msix_bh);
    }
    return 0;
}

/* MSI-X vector notifier: @vector was masked; a later message waits in the PBA. */
static void accel_msix_vector_release(PCIDevice *pdev, unsigned vector)
{
}

static uint32_t accel_vector_source(AccelPCIState *s, unsigned vector);

/*
 * The messages due, under the device's re-entrancy guard, a few per run.
 * One whose source was acknowledged, reset or masked by IRQ_MASK since is
 * no longer due; one that finds MSI-X off waits in the PBA for it to be
 * on again. A message can unplug the device (a root port's Slot Control is
 * memory too): look again after each, holding the device meanwhile.
 */
static void accel_msix_send_due(void *opaque)
{
    AccelPCIState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    unsigned sent = 0;

    accel_hold(s);
    accel_running_dev = s;
    while (!accel_gone(s) && s->msix_due) {
        unsigned vector = ctz64(s->msix_due);

        if (sent++ == ACCEL_MSIX_BATCH) {
            qemu_bh_schedule(s->msix_bh);
            break;
        }
        s->msix_due &= ~BIT_ULL(vector);
        if (!(s->irq_status & ~s->irq_mask & accel_vector_source(s, vector))) {
            continue;
        }
        if (msix_enabled(pdev)) {
            accel_msix_notify(s, vector);
        } else {
            msix_set_pending(pdev, vector);
        }
    }
    accel_running_dev = NULL;
    accel_let_go(s);
}

/* IRQ_STATUS bits that have a vector: the queues' and the error's. */
static uint32_t accel_irq_sources(AccelPCIState *s)
{
    return ACCEL_IRQ_ERROR | MAKE_64BIT_MASK(0, s->num_queues);
}

static unsigned accel_irq_vector(AccelPCIState *s, uint32_t bit)
{
    return bit == ACCEL_IRQ_ERROR ? ACCEL_MSIX_ERROR_VECTOR(s->num_queues)
                                  : ctz32(bit);
}

/* The IRQ_STATUS bit whose vector @vector is. */
static uint32_t accel_vector_source(AccelPCIState *s, unsigned vector)
{
    return vector == ACCEL_MSIX_ERROR_VECTOR(s->num_queues) ? ACCEL_IRQ_ERROR
                                                            : BIT(vector);
}

static void accel_raise_irq(AccelPCIState *s, uint32_t bit)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    s->irq_status |= bit;
    if (!msix_enabled(pdev)) {
        accel_update_intx(s);
    } else if (!(s->irq_mask & bit)) {
        accel_msix_signal(s, accel_irq_vector(s, bit));
    } else {
        trace_accel_irq_masked(bit);
    }
}

/*
 * Acknowledge sources: their line drops, and a message held pending by
 * MSI-X masking is no longer due.
 */
static void accel_ack_irq(AccelPCIState *s, uint32_t bits)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint32_t acked = s->irq_status & bits & accel_irq_sources(s);

    s->irq_status &= ~bits;
    while (acked) {
        uint32_t bit = acked & -acked;

        acked &= ~bit;
        msix_clr_pending(pdev, accel_irq_vector(s, bit));
    }
    if (!msix_enabled(pdev)) {
        accel_update_intx(s);
    }
}

/* The messages of the sources @bits. */
static void accel_signal_sources(AccelPCIState *s, uint32_t bits)
{
    while (bits) {
        uint32_t bit = bits & -bits;

        bits &= ~bit;
        accel_msix_signal(s, accel_irq_vector(s, bit));
    }
}

static void accel_write_irq_mask(AccelPCIState *s, uint32_t mask)
{
    uint32_t unmasked = s->irq_mask & ~mask & accel_irq_sources(s);

    s->irq_mask = mask;
    if (!msix_enabled(PCI_DEVICE(s))) {
        accel_update_intx(s);
        return;
    }
    /* A source pending while masked is delivered when it is unmasked. */
    accel_signal_sources(s, unmasked & s->irq_status);
}

/* Queue state */

static bool accel_queue_runnable(AccelQueue *q)
{
    return q->enabled && !q->error && !q->stalled && !q->dev->dev_fault &&
           q->head != q->tail;
}

/*
 * Runnable, rung since it was last stopped, and waiting neither for the
 * link nor for a transfer in QEMU's pool.
 */
static bool accel_queue_has_work(AccelQueue *q)
{
    return accel_queue_runnable(q) && q->rung && !q->xfer &&
           !timer_pending(q->throttle) && !timer_pending(q->rest);
}

/* The queue's next slice runs from its bottom half, after this access. */
static void accel_queue_kick(AccelQueue *q)
{
    if (accel_queue_has_work(q)) {
        qemu_bh_schedule(q->bh);
    }
}

static void accel_queue_halt(AccelQueue *q, uint32_t error)
{
    AccelPCIState *s = q->dev;

    /* The descriptor in progress is abandoned, its transfer included. */
    q->gen++;
    if (q->xfer) {
        qatomic_set(&q->xfer->abandon, true);
    }
    q->error = error;
    q->error_desc = q->head;
    q->active = false;
    trace_accel_err_queue_halt(q->index, q->head, error);
    qemu_log_mask(LOG_GUEST_ERROR, "accel: queue %u halted at descriptor %u "
                  "with error %u\n", q->index, q->head, error);
    accel_raise_irq(s, ACCEL_IRQ_ERROR);
}

static void accel_unmap_pieces(AccelPCIState *s, AccelPieces *p);

/*
 * Tell every queue's transfer in the pool to stop at its next piece, before
 * waiting for any: a device reset or Bus Master Enable cleared then waits
 * for one piece per queue, not for the transfers of the queues before it.
 */
static void accel_abandon_transfers(AccelPCIState *s)
{
    unsigned i;

    for (i = 0; i < s->num_queues; i++) {
        if (s->queues[i].xfer) {
            qatomic_set(&s->queues[i].xfer->abandon, true);
        }
    }
}

/*
 * Wait until no pool thread moves @x's bytes: one that has not started
 * never will, one that runs is waited for.
 */
static void accel_xfer_quiesce(AccelXfer *x)
{
    qemu_mutex_lock(&x->lock);
    if (x->state == ACCEL_XFER_QUEUED) {
        x->state = ACCEL_XFER_CANCELLED;
    }
    while (x->state == ACCEL_XFER_RUNNING) {
        qemu_cond_wait(&x->left, &x->lock);
    }
    qemu_mutex_unlock(&x->lock);
}

/*
 * Abandon the transfer in flight: its pool thread stops at its next piece
 * and is waited for; the queue unmaps the pieces and lets the transfer
 * go, so that its completion, whenever the pool runs it, only frees it.
 */
static void accel_queue_drop_xfer(AccelQueue *q)
{
    AccelXfer *x = q->xfer;

    if (!x) {
        return;
    }
    qatomic_set(&x->abandon, true);
    accel_xfer_quiesce(x);
    accel_unmap_pieces(q->dev, &x->pieces);
    x->q = NULL;
    q->xfer = NULL;
}

/* Abandon the work in flight, once the bytes being moved have moved. */
/* The queue does nothing more; the descriptor in progress is abandoned. */
static void accel_queue_freeze(AccelQueue *q)
{
    q->gen++;
    accel_queue_drop_xfer(q);
    timer_del(q->throttle);
    timer_del(q->rest);
    q->active = false;
}

static void accel_queue_stop(AccelQueue *q)
{
    accel_queue_freeze(q);
    q->enabled = false;
    q->rung = false;
    q->credit = 0;
    q->link_start = 0;
    q->link_paid = 0;
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
        q->reset_stuck = false;
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

    /* HEAD and TAIL survive a disable, the ring size may not have. */
    return is_power_of_2(q->ring_size) &&
           q->ring_size >= ACCEL_RING_MIN_SIZE &&
           q->ring_size <= ACCEL_RING_MAX_SIZE &&
           q->head < q->ring_size && q->tail < q->ring_size &&
           QEMU_IS_ALIGNED(q->ring_base, ACCEL_RING_ALIGN) &&
           ring_bytes - 1 <= UINT64_MAX - q->ring_base;
}

static void accel_queue_write_ctrl(AccelQueue *q, uint32_t val)
{
    if (q->dev->dev_fault) {
        /* A hung device answers no queue control; a reset stays pending. */
        trace_accel_err_queue_ctrl_hung(q->index, val);
        q->reset_stuck |= !!(val & ACCEL_Q_CTRL_RESET);
        return;
    }
    if (val & ACCEL_Q_CTRL_RESET) {
        trace_accel_queue_reset(q->index);
        accel_queue_reset(q, false);
        return;
    }
    if (!(val & ACCEL_Q_CTRL_ENABLE)) {
        /* Disabling stops fetching; work in flight is abandoned. */
        trace_accel_queue_disable(q->index);
        accel_queue_stop(q);
        return;
    }
    if (q->enabled) {
        return;
    }
    trace_accel_queue_enable(q->index, q->ring_base, q->ring_size);
    q->enabled = true;
    if (!accel_ring_valid(q)) {
        accel_queue_halt(q, ACCEL_ERR_BAD_RING);
    }
}

static void accel_queue_run(AccelQueue *q, uint64_t budget, bool in_mmio);

/*
 * Virtual time at which a throttled link has carried the bytes paid for.
 * Computed from the total, in 128 bits (the bandwidth may not fit in 32,
 * as muldiv64() wants), so that rounding does not add up step by step.
 */
static int64_t accel_link_free(AccelQueue *q)
{
    uint64_t lo, hi;

    mulu64(&lo, &hi, q->link_paid, NANOSECONDS_PER_SECOND);
    divu128(&lo, &hi, q->dev->dma_bandwidth);
    if (hi || lo > INT64_MAX - q->link_start) {
        return INT64_MAX;
    }
    return q->link_start + lo;
}

static void accel_queue_write_tail(AccelQueue *q, uint32_t val)
{
    trace_accel_doorbell(q->index, val);
    if (!q->enabled) {
        trace_accel_err_doorbell_disabled(q->index);
        qemu_log_mask(LOG_GUEST_ERROR, "accel: doorbell of disabled queue %u\n",
                      q->index);
        return;
    }
    if (q->error) {
        return;
    }
    if (val >= q->ring_size) {
        trace_accel_err_doorbell_range(q->index, val, q->ring_size);
        accel_queue_halt(q, ACCEL_ERR_BAD_DOORBELL);
        return;
    }
    if (q->dev->dma_bandwidth && (!q->rung || q->head == q->tail)) {
        /* The link was idle: its time for these bytes starts now. */
        q->link_start = MAX(accel_link_free(q),
                            qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
        q->link_paid = 0;
    }
    q->tail = val;
    q->rung = true;
    /*
     * Where the worker is idle, the write does the first of the work
     * itself: a small transfer then completes without waking a thread.
     */
    if (!accel_running_dev && accel_queue_has_work(q)) {
        accel_queue_run(q, ACCEL_INLINE_BYTES, true);
    }
    accel_queue_kick(q);
}

/* Descriptor validation */

static bool accel_bus_range_ok(uint64_t addr, uint64_t len)
{
    return len - 1 <= UINT64_MAX - addr;
}

static uint32_t accel_check_range(AccelPCIState *s, uint64_t addr, uint64_t len,
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

static uint32_t accel_validate_desc(AccelPCIState *s,
                                    const struct accel_desc *d)
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

/* The slice was abandoned: the queue was stopped under it. */
static bool accel_slice_stopped(AccelQueue *q)
{
    return q->gen != q->slice_gen;
}

static bool accel_dma_locked(AccelPCIState *s, dma_addr_t addr, void *buf,
                             dma_addr_t len, DMADirection dir)
{
    return pci_dma_rw(PCI_DEVICE(s), addr, buf, len, dir,
                      MEMTXATTRS_UNSPECIFIED) == MEMTX_OK;
}

static uint32_t accel_fetch_desc(AccelQueue *q)
{
    AccelPCIState *s = q->dev;
    struct accel_desc *d = &q->desc;
    int i;

    if (!accel_dma_locked(s, q->ring_base + (uint64_t)q->head * ACCEL_DESC_SIZE,
                          d, sizeof(*d), DMA_DIRECTION_TO_DEVICE)) {
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
    trace_accel_desc_fetch(q->index, q->head, d->opcode, d->flags, d->src,
                           d->dst, d->len);
    return accel_validate_desc(s, d);
}

/*
 * Data movement. A copy or fill maps what it can of both ends as RAM and
 * moves those bytes in place, or in QEMU's pool without the BQL where
 * they are many; a piece whose end is not RAM (MMIO, nothing, an IOMMU
 * fault) moves under the BQL through the memory API, which reports the
 * error.
 */

/*
 * A host pointer to @len bytes (shortened to what is contiguous) of one
 * end, or NULL if that end is not RAM. Translating first keeps
 * dma_memory_map() from bouncing: the map is then direct.
 */
static void *accel_map_end(AccelPCIState *s, uint64_t addr, bool vram,
                           hwaddr *len, DMADirection dir, bool *mapped)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    bool is_write = dir == DMA_DIRECTION_FROM_DEVICE;
    MemoryRegion *mr;
    hwaddr xlat, l = *len;
    void *ptr;

    *mapped = false;
    if (vram) {
        return s->vram_ptr + addr;
    }
    RCU_READ_LOCK_GUARD();
    mr = address_space_translate(as, addr, &xlat, &l, is_write,
                                 MEMTXATTRS_UNSPECIFIED);
    if (!memory_access_is_direct(mr, is_write, MEMTXATTRS_UNSPECIFIED)) {
        return NULL;
    }
    ptr = dma_memory_map(as, addr, len, dir, MEMTXATTRS_UNSPECIFIED);
    *mapped = ptr != NULL;
    return ptr;
}

/*
 * Direct RAM needs only the access length on unmap: it marks the bytes
 * dirty (and drops translated code over them) and releases the region,
 * which can drop the last reference to a peer unplugged meanwhile: under
 * the BQL, which its finalization needs.
 */
static void accel_unmap_end(AccelPCIState *s, void *ptr, bool mapped,
                            hwaddr len, DMADirection dir)
{
    if (mapped) {
        dma_memory_unmap(pci_get_address_space(PCI_DEVICE(s)), ptr, len, dir,
                         len);
    }
}

static void accel_unmap_pieces(AccelPCIState *s, AccelPieces *p)
{
    unsigned i;

    for (i = 0; i < p->count; i++) {
        AccelChunk *c = &p->chunk[i];

        accel_unmap_end(s, c->src, c->src_mapped, c->len,
                        DMA_DIRECTION_TO_DEVICE);
        accel_unmap_end(s, c->dst, c->dst_mapped, c->len,
                        DMA_DIRECTION_FROM_DEVICE);
    }
    p->count = 0;
}

/* Map a piece of at most @n bytes at @off; false if an end is not RAM. */
static bool accel_map_chunk(AccelQueue *q, uint64_t off, uint64_t n,
                            AccelChunk *c)
{
    AccelPCIState *s = q->dev;
    const struct accel_desc *d = &q->desc;
    hwaddr len = n, dst_len;

    c->src = NULL;
    c->src_mapped = false;
    if (d->opcode == ACCEL_OP_COPY) {
        c->src = accel_map_end(s, d->src + off, d->flags & ACCEL_DESC_SRC_VRAM,
                               &len, DMA_DIRECTION_TO_DEVICE, &c->src_mapped);
        if (!c->src) {
            return false;
        }
    }
    dst_len = len;
    c->dst = accel_map_end(s, d->dst + off, d->flags & ACCEL_DESC_DST_VRAM,
                           &dst_len, DMA_DIRECTION_FROM_DEVICE, &c->dst_mapped);
    c->len = MIN(len, dst_len);
    if (!c->dst) {
        accel_unmap_end(s, c->src, c->src_mapped, 0, DMA_DIRECTION_TO_DEVICE);
        return false;
    }
    return true;
}

/* Map pieces of [@off, @off + @n) of the current descriptor into @p. */
static void accel_map_pieces(AccelQueue *q, uint64_t off, uint64_t n,
                             AccelPieces *p)
{
    p->count = 0;
    p->bytes = 0;
    p->fill = q->desc.src;
    while (p->bytes < n && p->count < ACCEL_MAX_CHUNKS &&
           accel_map_chunk(q, off + p->bytes, n - p->bytes,
                           &p->chunk[p->count])) {
        p->bytes += p->chunk[p->count].len;
        p->count++;
    }
}

/*
 * The bytes of one piece, in guest RAM or VRAM. Other queues, peers and
 * vCPUs may access the same bytes meanwhile, as DMA engines and CPUs do
 * on real hardware: the guest sees whatever order it did not enforce.
 * ThreadSanitizer runs are told so by this function's name
 * (tests/device/tsan.supp); nothing else may happen in it.
 */
static void __attribute__((noinline)) accel_move_guest_bytes(void *dst,
                                                             const void *src,
                                                             int fill,
                                                             size_t len)
{
    if (src) {
        memmove(dst, src, len);
    } else {
        memset(dst, fill, len);
    }
}

/*
 * Move the bytes of @p, a piece of ACCEL_STOP_PIECE at a time, until
 * *@abandon (if given) is set. Returns the bytes moved.
 */
static uint64_t accel_move_pieces(const AccelPieces *p, const bool *abandon)
{
    uint64_t moved = 0;
    unsigned i;

    for (i = 0; i < p->count; i++) {
        const AccelChunk *c = &p->chunk[i];
        hwaddr off, n;

        for (off = 0; off < c->len; off += n) {
            if (abandon && qatomic_read(abandon)) {
                return moved;
            }
            n = MIN(c->len - off, ACCEL_STOP_PIECE);
            accel_move_guest_bytes(c->dst + off, c->src ? c->src + off : NULL,
                                   p->fill, n);
            moved += n;
        }
    }
    return moved;
}

/* A pool thread takes @x; false if it was cancelled before it started. */
static bool accel_xfer_begin(AccelXfer *x)
{
    bool run;

    qemu_mutex_lock(&x->lock);
    run = x->state == ACCEL_XFER_QUEUED;
    if (run) {
        x->state = ACCEL_XFER_RUNNING;
    }
    qemu_mutex_unlock(&x->lock);
    return run;
}

/*
 * A thread of QEMU's pool, without the BQL: it touches only @x, and the
 * guest's bytes through the pieces the queue mapped for it.
 */
static int accel_xfer_run(void *opaque)
{
    AccelXfer *x = opaque;
    uint64_t moved;

    if (!accel_xfer_begin(x)) {
        return 0;
    }
    moved = accel_move_pieces(&x->pieces, &x->abandon);
    qemu_mutex_lock(&x->lock);
    x->moved = moved;
    x->state = ACCEL_XFER_DONE;
    qemu_cond_broadcast(&x->left);
    qemu_mutex_unlock(&x->lock);
    return 0;
}

static void accel_xfer_free(AccelXfer *x)
{
    qemu_mutex_destroy(&x->lock);
    qemu_cond_destroy(&x->left);
    g_free(x);
}

/*
 * The pool's completion, in the main loop with the BQL: the queue takes
 * its pieces back and goes on from its bottom half. A transfer that a
 * stop let go only needs freeing: its device may be gone.
 */
static void accel_xfer_complete(void *opaque, int ret)
{
    AccelXfer *x = opaque;
    AccelQueue *q = x->q;
    uint64_t moved;

    if (q) {
        qemu_mutex_lock(&x->lock);
        moved = x->moved;
        qemu_mutex_unlock(&x->lock);
        trace_accel_dma_pool_done(q->index, moved);
        accel_unmap_pieces(q->dev, &x->pieces);
        q->done += moved;
        q->xfer = NULL;
        accel_queue_kick(q);
    }
    accel_xfer_free(x);
}

/* Hand the pieces mapped in q->in_place to QEMU's pool. */
static void accel_submit_xfer(AccelQueue *q)
{
    AccelXfer *x = g_new0(AccelXfer, 1);

    x->q = q;
    qemu_mutex_init(&x->lock);
    qemu_cond_init(&x->left);
    x->state = ACCEL_XFER_QUEUED;
    x->pieces = q->in_place;
    q->in_place.count = 0;
    q->xfer = x;
    trace_accel_dma_pool(q->index, x->pieces.bytes, x->pieces.count);
    thread_pool_submit_aio(accel_xfer_run, x, accel_xfer_complete, x);
}

/* Move @n bytes at @off through the memory API, under the BQL. */
static uint32_t accel_move_locked(AccelQueue *q, uint64_t off, uint64_t n)
{
    AccelPCIState *s = q->dev;
    const struct accel_desc *d = &q->desc;
    bool src_vram = d->flags & ACCEL_DESC_SRC_VRAM;
    bool dst_vram = d->flags & ACCEL_DESC_DST_VRAM;
    uint8_t *dst_buf = dst_vram ? s->vram_ptr + d->dst + off : q->bounce;

    trace_accel_dma_locked(q->index, off, n);
    q->slice_locked = true;
    if (d->opcode == ACCEL_OP_FILL) {
        memset(dst_buf, d->src, n);
    } else if (src_vram) {
        memmove(dst_buf, s->vram_ptr + d->src + off, n);
    } else if (!accel_dma_locked(s, d->src + off, dst_buf, n,
                                 DMA_DIRECTION_TO_DEVICE)) {
        return ACCEL_ERR_DMA_READ;
    }
    if (dst_vram || accel_slice_stopped(q)) {
        return 0;
    }
    if (!accel_dma_locked(s, d->dst + off, q->bounce, n,
                          DMA_DIRECTION_FROM_DEVICE)) {
        return ACCEL_ERR_DMA_WRITE;
    }
    return 0;
}

/*
 * Up to @n bytes of the current copy or fill: mapped RAM in place, or in
 * the pool where a bottom half finds many; else a few bytes under the
 * BQL. Returns the bytes moved (or handed to the pool); *cost is what the
 * step counts toward the slice.
 */
static uint64_t accel_move(AccelQueue *q, uint64_t n, bool in_mmio,
                           uint32_t *err, uint64_t *cost)
{
    AccelPieces *p = &q->in_place;

    accel_map_pieces(q, q->done, n, p);
    if (accel_slice_stopped(q)) {
        accel_unmap_pieces(q->dev, p);
        return 0;
    }
    if (!p->count) {
        n = MIN(n, ACCEL_BQL_PIECE);
        *err = accel_move_locked(q, q->done, n);
        q->done += n;
        *cost = n * ACCEL_LOCKED_COST;
        return n;
    }
    *cost = p->bytes;
    if (!in_mmio && p->bytes >= ACCEL_XFER_MIN) {
        accel_submit_xfer(q);
        return *cost;
    }
    if (in_mmio) {
        trace_accel_dma_inline(q->index, p->bytes, p->count);
    } else {
        trace_accel_dma_in_place(q->index, p->bytes, p->count);
    }
    n = p->bytes;
    accel_move_pieces(p, NULL);
    accel_unmap_pieces(q->dev, p);
    q->done += n;
    return n;
}

static uint32_t accel_fence(AccelPCIState *s, const struct accel_desc *d)
{
    MemTxResult res;

    if (d->flags & ACCEL_DESC_DST_VRAM) {
        stq_le_p(s->vram_ptr + d->dst, d->src);
        return 0;
    }
    /* One 8-byte store: a waiter polling the value never sees it torn. */
    res = stq_le_pci_dma(PCI_DEVICE(s), d->dst, d->src, MEMTXATTRS_UNSPECIFIED);
    return res == MEMTX_OK ? 0 : ACCEL_ERR_DMA_WRITE;
}

static bool accel_desc_moves_data(const struct accel_desc *d)
{
    return d->opcode == ACCEL_OP_COPY || d->opcode == ACCEL_OP_FILL;
}

/*
 * Bytes the next step of the current descriptor is charged on the link,
 * and the most it moves: a doorbell's inline work what is left of its
 * budget, a bottom half up to a transfer.
 */
static uint64_t accel_step_bytes(AccelQueue *q, uint64_t budget, bool in_mmio)
{
    const struct accel_desc *d = &q->desc;

    if (accel_desc_moves_data(d)) {
        return MIN(d->len - q->done, in_mmio ? budget : ACCEL_XFER_BYTES);
    }
    return ACCEL_DESC_COST;
}

/*
 * Run the next step of the current descriptor, of at most @n bytes.
 * Returns the bytes charged to the link; *cost is what the step counts
 * toward the slice.
 */
static uint64_t accel_exec(AccelQueue *q, uint64_t n, bool in_mmio,
                           uint32_t *err, uint64_t *cost)
{
    const struct accel_desc *d = &q->desc;

    *err = 0;
    *cost = ACCEL_DESC_COST;
    switch (d->opcode) {
    case ACCEL_OP_COPY:
    case ACCEL_OP_FILL:
        return accel_move(q, n, in_mmio, err, cost);
    case ACCEL_OP_FENCE:
        *err = accel_fence(q->dev, d);
        return ACCEL_DESC_COST;
    default:
        return ACCEL_DESC_COST;
    }
}

static bool accel_desc_finished(AccelQueue *q)
{
    return !accel_desc_moves_data(&q->desc) || q->done == q->desc.len;
}

static void accel_complete_desc(AccelQueue *q)
{
    trace_accel_desc_complete(q->index, q->head, q->completed + 1);
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

    if (accel_slice_stopped(q)) {
        return false;
    }
    if (err) {
        accel_queue_halt(q, err);
        return false;
    }
    if (q->fault_inject & ACCEL_FAULT_STALL) {
        q->fault_inject &= ~ACCEL_FAULT_STALL;
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

/*
 * On a throttled queue a step of @bytes runs only once the link time for
 * them has passed, so a transfer of L bytes takes L / dma-bandwidth from
 * the doorbell. The link time runs on the virtual clock from the
 * doorbell, not from when the bottom half gets to the step, so it does
 * not depend on the host's scheduling. Returns false if the queue must
 * wait for the throttle timer.
 */
static bool accel_pay_for_step(AccelQueue *q, uint64_t bytes)
{
    AccelPCIState *s = q->dev;
    int64_t now, link_free;

    if (!s->dma_bandwidth || q->credit >= bytes) {
        return true;
    }
    q->link_paid += bytes - q->credit;
    q->credit = bytes;
    link_free = accel_link_free(q);
    now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    if (link_free <= now) {
        return true;
    }
    trace_accel_throttle(q->index, bytes, link_free - now);
    timer_mod(q->throttle, link_free);
    return false;
}

/*
 * Whether the next step of the current descriptor touches only RAM and
 * VRAM. A doorbell's inline work leaves any other step to the bottom
 * half: a write into registers or config space (a root port's Slot
 * Control) could reset or unplug the device, or a peer, in the middle of
 * the access that rang the doorbell, which goes on into their registers
 * afterwards.
 */
static bool accel_step_on_ram(AccelQueue *q)
{
    AccelPCIState *s = q->dev;
    const struct accel_desc *d = &q->desc;
    bool dst_ram = (d->flags & ACCEL_DESC_DST_VRAM) ||
                   accel_bus_is_ram(s, d->dst + q->done, true);

    switch (d->opcode) {
    case ACCEL_OP_COPY:
        return dst_ram && ((d->flags & ACCEL_DESC_SRC_VRAM) ||
                           accel_bus_is_ram(s, d->src + q->done, false));
    case ACCEL_OP_FILL:
    case ACCEL_OP_FENCE:
        return dst_ram;
    default:
        return true;
    }
}

/*
 * A slice of at most @budget of the queue's work and ACCEL_SLICE_NS,
 * under the BQL. It ends early where a step went to QEMU's pool, the
 * link must wait, or (in a doorbell's MMIO write) a step is not RAM.
 */
static void accel_queue_run_slice(AccelQueue *q, uint64_t budget, bool in_mmio)
{
    int64_t end = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + ACCEL_SLICE_NS;
    uint64_t spent = 0, n, cost;
    uint32_t err;

    q->slice_gen = q->gen;
    q->slice_locked = false;
    while (!accel_slice_stopped(q) && accel_queue_runnable(q) && !q->xfer &&
           spent < budget && qemu_clock_get_ns(QEMU_CLOCK_REALTIME) < end) {
        if (!q->active && !accel_start_desc(q)) {
            return;
        }
        if (accel_desc_moves_data(&q->desc) && q->done == q->desc.len) {
            /* The thread pool moved the rest of it. */
            accel_complete_desc(q);
            continue;
        }
        if (in_mmio && !accel_step_on_ram(q)) {
            return;
        }
        n = accel_step_bytes(q, budget - spent, in_mmio);
        if (!accel_pay_for_step(q, n)) {
            return;
        }
        n = accel_exec(q, n, in_mmio, &err, &cost);
        if (accel_slice_stopped(q)) {
            return;
        }
        q->credit -= MIN(q->credit, n);
        spent += MAX(cost, ACCEL_STEP_MIN_COST);
        if (err) {
            accel_queue_halt(q, err);
            return;
        }
        if (!q->xfer && accel_desc_finished(q)) {
            accel_complete_desc(q);
        }
    }
}

/* A slice, as the device's own work (accel_running_dev). */
static void accel_queue_run(AccelQueue *q, uint64_t budget, bool in_mmio)
{
    accel_running_dev = q->dev;
    accel_running_inline = in_mmio;
    accel_queue_run_slice(q, budget, in_mmio);
    accel_running_dev = NULL;
    accel_running_inline = false;
}

/*
 * The queue's bottom half, guarded by the device's re-entrancy guard: a
 * DMA or a message that reaches the device's own registers is refused.
 * With work left it runs again at the main loop's next turn, so that the
 * vCPUs and the monitor get the BQL between slices however long the ring.
 * A slice that moved pieces under the BQL through the memory API (another
 * device's registers, config space) then leaves the main loop alone, from
 * every accel queue (accel_rest_until), as long as it took: such pieces
 * can rebuild the machine's memory map, whose old copies QEMU's RCU thread
 * frees under the BQL, and slices back to back would leave it the lock
 * only in bursts of tens of milliseconds.
 */
static void accel_queue_bh(void *opaque)
{
    AccelQueue *q = opaque;
    AccelPCIState *s = q->dev;
    int64_t start = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);

    if (start < accel_rest_until) {
        timer_mod(q->rest, accel_rest_until);
        return;
    }
    accel_hold(s);
    accel_queue_run(q, ACCEL_SLICE_BYTES, false);
    if (q->slice_locked) {
        int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);

        accel_rest_until = now + (now - start);
    }
    if (!accel_gone(s)) {   /* else its own work unplugged it: timers stopped */
        accel_queue_kick(q);
    }
    accel_let_go(s);
}

/* The throttled link has carried what the queue paid for, or its rest is over. */
static void accel_timer_expired(void *opaque)
{
    accel_queue_kick(opaque);
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
        return (q->enabled ? ACCEL_Q_CTRL_ENABLE : 0) |
               (q->reset_stuck ? ACCEL_Q_CTRL_RESET : 0);
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
        trace_accel_err_mmio_read(ACCEL_QUEUE_BASE +
                                  q->index * ACCEL_QUEUE_STRIDE + reg);
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
        trace_accel_err_ring_read_only(q->index);
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
        trace_accel_err_mmio_write(ACCEL_QUEUE_BASE +
                                   q->index * ACCEL_QUEUE_STRIDE + reg, val);
        qemu_log_mask(LOG_GUEST_ERROR, "accel: write to read-only or unknown "
                      "queue register 0x%" HWADDR_PRIx "\n", reg);
    }
}

static AccelQueue *accel_queue_at(AccelPCIState *s, hwaddr addr, hwaddr *reg)
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

static uint32_t accel_dev_status(AccelPCIState *s)
{
    uint32_t status = ACCEL_DEV_STATUS_READY;
    unsigned i;

    if (s->dev_fault & ACCEL_DEV_FAULT_FATAL) {
        status |= ACCEL_DEV_STATUS_FATAL;
    }
    for (i = 0; i < s->num_queues; i++) {
        if (s->queues[i].error) {
            status |= ACCEL_DEV_STATUS_ERROR;
        }
    }
    return status;
}

static uint64_t accel_reg_value(AccelPCIState *s, hwaddr addr)
{
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
    case ACCEL_REG_DEV_FAULT_INJECT:
        return s->dev_fault;
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
        trace_accel_err_mmio_read(addr);
        qemu_log_mask(LOG_GUEST_ERROR, "accel: read of unknown register 0x%"
                      HWADDR_PRIx "\n", addr);
        return 0;
    }
}

/* A removed device reads as all ones and ignores writes (accel_gone()). */
static uint64_t accel_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    uint64_t val = UINT32_MAX;

    if (!accel_gone(opaque)) {
        val = accel_reg_value(opaque, addr);
    }

    trace_accel_mmio_read(addr, val);
    return val;
}

static void accel_reset(AccelPCIState *s);

/*
 * The device hangs: every queue stops where it is, as if its clock had
 * stopped, its descriptor in progress abandoned; the registers still
 * read. Only a device reset ends it.
 */
static void accel_inject_dev_fault(AccelPCIState *s, uint32_t val)
{
    uint32_t added = val & (ACCEL_DEV_FAULT_HANG | ACCEL_DEV_FAULT_FATAL) &
                     ~s->dev_fault;
    unsigned i;

    if (!added) {
        return;
    }
    trace_accel_dev_fault(added);
    s->dev_fault |= added;
    for (i = 0; i < s->num_queues; i++) {
        accel_queue_freeze(&s->queues[i]);
    }
    if (added & ACCEL_DEV_FAULT_FATAL) {
        accel_raise_irq(s, ACCEL_IRQ_ERROR);
    }
}

static void accel_regs_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    AccelPCIState *s = opaque;
    AccelQueue *q;
    hwaddr reg;

    trace_accel_mmio_write(addr, val);
    if (accel_gone(s)) {
        return;
    }
    q = accel_queue_at(s, addr, &reg);
    if (q) {
        accel_queue_write(q, reg, val);
        return;
    }
    switch (addr) {
    case ACCEL_REG_DEV_CTRL:
        if (val & ACCEL_DEV_CTRL_RESET) {
            accel_reset(s);
        }
        break;
    case ACCEL_REG_DEV_FAULT_INJECT:
        accel_inject_dev_fault(s, val);
        break;
    case ACCEL_REG_IRQ_STATUS:
        accel_ack_irq(s, val);
        break;
    case ACCEL_REG_IRQ_MASK:
        accel_write_irq_mask(s, val);
        break;
    case ACCEL_REG_SCRATCH:
        s->scratch = val;
        break;
    default:
        trace_accel_err_mmio_write(addr, val);
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

/* No message of the device's is due any more, sent or held in the PBA. */
static void accel_clear_messages(AccelPCIState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    unsigned vector;

    s->msix_due = 0;
    for (vector = 0; msix_present(pdev) && vector < s->num_queues + 1;
         vector++) {
        msix_clr_pending(pdev, vector);
    }
}

static void accel_reset(AccelPCIState *s)
{
    unsigned i;

    trace_accel_reset();
    accel_abandon_transfers(s);
    for (i = 0; i < s->num_queues; i++) {
        accel_queue_reset(&s->queues[i], true);
    }
    s->irq_status = 0;
    s->irq_mask = 0;
    s->scratch = 0;
    s->dev_fault = 0;
    accel_clear_messages(s);
    accel_update_intx(s);
}

static void accel_reset_hold(Object *obj, ResetType type)
{
    PCIDevice *pdev = PCI_DEVICE(obj);

    if (pci_is_express(pdev)) {
        pcie_cap_deverr_reset(pdev);
    }
    accel_reset(ACCEL_PCI(obj));
}

static bool accel_check_properties(AccelPCIState *s, Error **errp)
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

static void accel_start_queues(AccelPCIState *s)
{
    unsigned i;

    for (i = 0; i < s->num_queues; i++) {
        s->queues[i].bh = qemu_bh_new_guarded(accel_queue_bh, &s->queues[i],
                                              &DEVICE(s)->mem_reentrancy_guard);
    }
}

/*
 * Stop every queue, waiting for the transfers in flight: after unrealize
 * no slice, completion or timer of the device runs.
 */
static void accel_stop_queues(AccelPCIState *s)
{
    unsigned i;

    accel_abandon_transfers(s);
    for (i = 0; i < s->num_queues; i++) {
        AccelQueue *q = &s->queues[i];

        accel_queue_stop(q);
        qemu_bh_delete(q->bh);
        q->bh = NULL;
    }
}

static void accel_realize(PCIDevice *pdev, Error **errp)
{
    ERRP_GUARD();
    AccelPCIState *s = ACCEL_PCI(pdev);
    unsigned nvec;
    unsigned i;

    if (!accel_check_properties(s, errp)) {
        return;
    }

    pci_config_set_interrupt_pin(pdev->config, 1);
    if (pci_is_express(pdev)) {
        if (pcie_endpoint_cap_init(pdev, 0) < 0) {
            error_setg(errp, "accel: cannot add the PCI Express capability");
            return;
        }
        /*
         * Advanced Error Reporting, so that the OS can recover from the
         * errors QMP's pcie_aer_inject_error reports for the device; the
         * device reports them only once the OS enables it to in Device
         * Control
         */
        pcie_cap_deverr_init(pdev);
        if (pcie_aer_init(pdev, PCI_ERR_VER, ACCEL_AER_OFFSET, PCI_ERR_SIZEOF,
                          errp) < 0) {
            return;
        }
    }

    /*
     * D0 and D3hot only, without No_Soft_Reset: the PCI core stops the
     * BARs' decoding in D3hot, and accel_write_config() resets the device
     * on its way in (docs/hardware.md, "Power states").
     */
    if (pci_pm_init(pdev, 0, errp) < 0) {
        return;
    }
    pci_set_word(pdev->config + pdev->pm_cap + PCI_PM_PMC, PCI_PM_CAP_VER_1_2);
    pci_set_word(pdev->wmask + pdev->pm_cap + PCI_PM_CTRL,
                 PCI_PM_CTRL_STATE_MASK);

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
    s->msix_bh = qemu_bh_new_guarded(accel_msix_send_due, s,
                                     &DEVICE(s)->mem_reentrancy_guard);
    msix_set_vector_notifiers(pdev, accel_msix_vector_use,
                              accel_msix_vector_release, NULL);

    accel_start_queues(s);
}

static void accel_exit(PCIDevice *pdev)
{
    AccelPCIState *s = ACCEL_PCI(pdev);

    if (pci_is_express(pdev)) {
        pcie_aer_exit(pdev);
    }

    accel_stop_queues(s);
    msix_unset_vector_notifiers(pdev);
    qemu_bh_delete(s->msix_bh);
    msix_uninit_exclusive_bar(pdev);
    /* Free VRAM's name for a new device before finalize, which may be late. */
    vmstate_unregister_ram(&s->vram, DEVICE(s));
}

/*
 * MSI-X turned on: the sources pending (and unmasked in IRQ_MASK) had
 * INTx while it was off, which msix.c has just lowered; each is due as a
 * message now.
 */
static void accel_msix_resend(AccelPCIState *s)
{
    accel_signal_sources(s, s->irq_status & ~s->irq_mask &
                            accel_irq_sources(s));
}

/* The power state in the PM capability's PMCSR: 0 for D0, 3 for D3hot. */
static uint16_t accel_power_state(PCIDevice *pdev)
{
    return pci_get_word(pdev->config + pdev->pm_cap + PCI_PM_CTRL) &
           PCI_PM_CTRL_STATE_MASK;
}

/* Wait until no pool thread moves bytes of the transfers just abandoned. */
static void accel_quiesce_transfers(AccelPCIState *s)
{
    unsigned i;

    for (i = 0; i < s->num_queues; i++) {
        if (s->queues[i].xfer) {
            accel_xfer_quiesce(s->queues[i].xfer);
        }
    }
}

/*
 * With Bus Master Enable cleared the device must not touch memory, so the
 * write returns once the pieces in flight, mapped before it, have moved:
 * a transfer in the pool stops at its next piece (one that no pool thread
 * had started is cancelled), and its completion counts what it moved. The
 * next piece goes through the memory API and fails. With MSI-X turned off,
 * a pending source asserts INTA again. Messages that unmasking MSI-X
 * releases go from msix_bh, after the write.
 */
static void accel_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                               int len)
{
    AccelPCIState *s = ACCEL_PCI(pdev);
    bool was_master = pci_get_word(pdev->config + PCI_COMMAND) &
                      PCI_COMMAND_MASTER;
    bool was_msix = msix_enabled(pdev);
    uint16_t was_state = accel_power_state(pdev);

    pci_default_write_config(pdev, addr, val, len);
    if (!qdev_is_realized(DEVICE(s))) {
        return;
    }
    /* clearing the first error's status bit releases its header log */
    if (pci_is_express(pdev) && ranges_overlap(addr, len, ACCEL_AER_OFFSET,
                                               PCI_ERR_SIZEOF)) {
        pcie_aer_write_config(pdev, addr, val, len);
    }
    /*
     * Into D3hot the device loses its state, as one without No_Soft_Reset
     * does on its way back to D0: it is reset now, so that in D3hot it
     * runs nothing, moves no byte and raises no interrupt; VRAM is kept.
     * Its BARs stopped decoding in pci_default_write_config().
     */
    if (!was_state && accel_power_state(pdev) == PCI_PM_CTRL_STATE_MASK) {
        trace_accel_power_state(3);
        accel_reset(s);
        accel_quiesce_transfers(s);
    } else if (was_state && !accel_power_state(pdev)) {
        trace_accel_power_state(0);
    }
    if (was_master && !(pci_get_word(pdev->config + PCI_COMMAND) &
                        PCI_COMMAND_MASTER)) {
        accel_abandon_transfers(s);
        accel_quiesce_transfers(s);
    }
    if (was_msix && !msix_enabled(pdev)) {
        accel_update_intx(s);
    } else if (!was_msix && msix_enabled(pdev)) {
        accel_msix_resend(s);
    }
}

static void accel_instance_init(Object *obj)
{
    AccelPCIState *s = ACCEL_PCI(obj);
    unsigned i;

    for (i = 0; i < ACCEL_MAX_QUEUES; i++) {
        AccelQueue *q = &s->queues[i];

        q->dev = s;
        q->index = i;
        q->throttle = timer_new_ns(QEMU_CLOCK_VIRTUAL, accel_timer_expired, q);
        q->rest = timer_new_ns(QEMU_CLOCK_REALTIME, accel_timer_expired, q);
    }
}

static void accel_instance_finalize(Object *obj)
{
    AccelPCIState *s = ACCEL_PCI(obj);
    unsigned i;

    for (i = 0; i < ACCEL_MAX_QUEUES; i++) {
        timer_free(s->queues[i].throttle);
        timer_free(s->queues[i].rest);
    }
}

static const Property accel_properties[] = {
    DEFINE_PROP_SIZE("vram-size", AccelPCIState, vram_size, 256 * MiB),
    DEFINE_PROP_UINT32("queues", AccelPCIState, num_queues, 4),
    DEFINE_PROP_SIZE("dma-bandwidth", AccelPCIState, dma_bandwidth, 0),
};

static const VMStateDescription vmstate_accel = {
    .name = "accel",
    .unmigratable = 1,
};

static void accel_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = accel_realize;
    k->exit = accel_exit;
    k->config_write = accel_write_config;
    k->vendor_id = ACCEL_PCI_VENDOR_ID;
    k->device_id = ACCEL_PCI_DEVICE_ID;
    k->revision = ACCEL_PCI_REVISION;
    k->class_id = ACCEL_PCI_CLASS;
    k->subsystem_vendor_id = ACCEL_PCI_SUBSYS_VENDOR_ID;
    k->subsystem_id = ACCEL_PCI_SUBSYS_ID;
    dc->desc = "accel PCIe accelerator with VRAM and DMA queues";
    rc->phases.hold = accel_reset_hold;
    dc->vmsd = &vmstate_accel;
    device_class_set_props(dc, accel_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo accel_info = {
    .name = TYPE_ACCEL_PCI,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(AccelPCIState),
    .instance_init = accel_instance_init,
    .instance_finalize = accel_instance_finalize,
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
