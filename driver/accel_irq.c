// SPDX-License-Identifier: GPL-2.0
/*
 * accel: MSI-X vectors, one per DMA queue and one for errors.
 */
#include "accel_drv.h"

static unsigned int accel_error_vector(struct accel_device *adev)
{
	return ACCEL_MSIX_ERROR_VECTOR(adev->num_queues);
}

/* The dev_id of vector @i: the queue's context, or the device for errors. */
static void *accel_irq_context(struct accel_device *adev, unsigned int i)
{
	if (i == accel_error_vector(adev))
		return adev;
	adev->vectors[i].adev = adev;
	adev->vectors[i].queue = i;
	return &adev->vectors[i];
}

static irqreturn_t accel_queue_irq(int irq, void *data)
{
	struct accel_queue_vector *vec = data;
	struct accel_device *adev = vec->adev;

	accel_write(adev, ACCEL_REG_IRQ_STATUS, ACCEL_IRQ_QUEUE(vec->queue));
	accel_engine_irq(adev, vec->queue);
	return IRQ_HANDLED;
}

static irqreturn_t accel_error_irq(int irq, void *data)
{
	struct accel_device *adev = data;
	unsigned int q;

	accel_write(adev, ACCEL_REG_IRQ_STATUS, ACCEL_IRQ_ERROR);
	for (q = 0; q < adev->num_queues; q++) {
		u32 status = accel_read(adev, ACCEL_QUEUE_REG(q, ACCEL_Q_STATUS));
		u32 error, index;

		if (!(status & ACCEL_Q_STATUS_ERROR))
			continue;
		error = accel_read(adev, ACCEL_QUEUE_REG(q, ACCEL_Q_ERROR));
		index = accel_read(adev, ACCEL_QUEUE_REG(q, ACCEL_Q_ERROR_DESC));
		dev_err_ratelimited(&adev->pdev->dev,
				    "queue %u halted: error %u at descriptor %u\n",
				    q, error, index);
	}
	/* the engines see the halt and recover */
	accel_engines_error_irq(adev);
	return IRQ_HANDLED;
}

int accel_irq_init(struct accel_device *adev)
{
	struct pci_dev *pdev = adev->pdev;
	unsigned int nvec = adev->num_queues + 1, i;
	int ret;

	ret = pci_alloc_irq_vectors(pdev, nvec, nvec, PCI_IRQ_MSIX);
	if (ret < 0) {
		dev_err(&pdev->dev, "cannot allocate %u MSI-X vectors: %d\n",
			nvec, ret);
		return ret;
	}
	for (i = 0; i < nvec; i++) {
		ret = request_irq(pci_irq_vector(pdev, i),
				  i == accel_error_vector(adev) ?
				  accel_error_irq : accel_queue_irq,
				  0, adev->name, accel_irq_context(adev, i));
		if (ret)
			goto err_free;
	}
	return 0;

err_free:
	while (i--)
		free_irq(pci_irq_vector(pdev, i), accel_irq_context(adev, i));
	pci_free_irq_vectors(pdev);
	return ret;
}

void accel_irq_fini(struct accel_device *adev)
{
	unsigned int i;

	for (i = 0; i <= adev->num_queues; i++)
		free_irq(pci_irq_vector(adev->pdev, i),
			 accel_irq_context(adev, i));
	pci_free_irq_vectors(adev->pdev);
}
