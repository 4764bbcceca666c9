// SPDX-License-Identifier: GPL-2.0
/*
 * accel: a descriptor ring on one hardware queue, with a fence word.
 *
 * Each engine (accel_queue.c) drives its hardware queue through one of
 * these. Completion is tracked by FENCE descriptors that write an
 * increasing sequence number to the fence word and raise the queue's
 * interrupt. Callers serialise access.
 */
#include "accel_drv.h"

static u32 accel_ring_reg(struct accel_ring *ring, u32 reg)
{
	return ACCEL_QUEUE_REG(ring->queue, reg);
}

/* Point the hardware queue at the ring and enable it; the ring is empty. */
static void accel_ring_program(struct accel_ring *ring)
{
	struct accel_device *adev = ring->adev;

	accel_write(adev, accel_ring_reg(ring, ACCEL_Q_RING_BASE_LO),
		    lower_32_bits(ring->descs_dma));
	accel_write(adev, accel_ring_reg(ring, ACCEL_Q_RING_BASE_HI),
		    upper_32_bits(ring->descs_dma));
	accel_write(adev, accel_ring_reg(ring, ACCEL_Q_RING_SIZE), ring->size);
	accel_write(adev, accel_ring_reg(ring, ACCEL_Q_CTRL), ACCEL_Q_CTRL_ENABLE);
	ring->tail = 0;
}

int accel_ring_init(struct accel_ring *ring, struct accel_device *adev, u32 queue,
		    u32 size)
{
	struct device *dev = &adev->pdev->dev;

	ring->adev = adev;
	ring->queue = queue;
	ring->size = size;
	ring->descs = dma_alloc_coherent(dev, size * sizeof(*ring->descs),
					 &ring->descs_dma, GFP_KERNEL);
	ring->fence = dma_alloc_coherent(dev, sizeof(*ring->fence),
					 &ring->fence_dma, GFP_KERNEL);
	if (!ring->descs || !ring->fence) {
		accel_ring_free(ring);
		return -ENOMEM;
	}
	accel_ring_program(ring);
	return 0;
}

/* The device is reset already: nothing reads the ring any more. */
void accel_ring_free(struct accel_ring *ring)
{
	struct device *dev = &ring->adev->pdev->dev;

	if (ring->descs)
		dma_free_coherent(dev, ring->size * sizeof(*ring->descs),
				  ring->descs, ring->descs_dma);
	if (ring->fence)
		dma_free_coherent(dev, sizeof(*ring->fence), ring->fence,
				  ring->fence_dma);
	ring->descs = NULL;
	ring->fence = NULL;
}

/* Stop the hardware queue, drop what is on the ring, and start again. */
void accel_ring_reset(struct accel_ring *ring)
{
	accel_write(ring->adev, accel_ring_reg(ring, ACCEL_Q_CTRL),
		    ACCEL_Q_CTRL_RESET);
	accel_ring_program(ring);
}

/* Free entries: the ring keeps one empty to tell full from empty. */
u32 accel_ring_space(struct accel_ring *ring)
{
	u32 head = accel_read(ring->adev, accel_ring_reg(ring, ACCEL_Q_HEAD));

	return (head - ring->tail - 1) & (ring->size - 1);
}

/* @d is little-endian already, reserved fields zero. */
void accel_ring_push(struct accel_ring *ring, const struct accel_desc *d)
{
	ring->descs[ring->tail] = *d;
	ring->tail = (ring->tail + 1) & (ring->size - 1);
}

/* Push a FENCE with the next sequence number and ring the doorbell. */
u64 accel_ring_submit(struct accel_ring *ring)
{
	struct accel_desc fence = {
		.opcode = cpu_to_le32(ACCEL_OP_FENCE),
		.flags = cpu_to_le32(ACCEL_DESC_IRQ),
		.src = cpu_to_le64(++ring->seq),
		.dst = cpu_to_le64(ring->fence_dma),
	};

	accel_ring_push(ring, &fence);
	/* writel() orders the ring writes before the doorbell */
	accel_write(ring->adev, accel_ring_reg(ring, ACCEL_Q_TAIL), ring->tail);
	return ring->seq;
}

/* The last sequence number the device has written. */
u64 accel_ring_done(struct accel_ring *ring)
{
	return le64_to_cpu(READ_ONCE(*ring->fence));
}

/* The device's error code if the hardware queue halted, else 0. */
u32 accel_ring_error(struct accel_ring *ring)
{
	struct accel_device *adev = ring->adev;

	if (!(accel_read(adev, accel_ring_reg(ring, ACCEL_Q_STATUS)) &
	      ACCEL_Q_STATUS_ERROR))
		return 0;
	return accel_read(adev, accel_ring_reg(ring, ACCEL_Q_ERROR)) ?: U32_MAX;
}
