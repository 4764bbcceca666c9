// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: whole-device reset through the PCI core (the PCI function's
 * sysfs "reset", root's only, or any pci_reset_function() caller), as
 * ivpu's reset_prepare/reset_done.
 *
 * Before the reset every scheduler stops feeding its ring, every queue
 * stops, and the jobs on the rings fail with -ECANCELED, whichever file
 * they came from: the reset loses the rings, and a job the device was
 * running may be partly done. Jobs not yet on a ring are held in their
 * schedulers and run after it. The device's reset keeps VRAM, so buffers
 * and their mappings survive; the PCI core restores config space and
 * MSI-X, and the rings are programmed again before the schedulers start.
 * A reset waits for no job: the schedulers' workers are stopped, not
 * drained, and the time-out handler leaves a resetting queue alone.
 *
 * The PCI core holds the device lock across both calls, so a reset does
 * not overlap probe or removal.
 */
#include "simaccel_hwq.h"
#include "simaccel_reset.h"
#include "simaccel_trace.h"

static void simaccel_reset_prepare(struct pci_dev *pdev)
{
	struct simaccel_device *sdev = pci_get_drvdata(pdev);
	u32 q, failed = 0;

	drm_info(&sdev->drm, "device reset\n");
	for (q = 0; q < sdev->num_queues; q++)
		drm_sched_wqueue_stop(&sdev->hwqs[q].sched);
	for (q = 0; q < sdev->num_queues; q++)
		failed += simaccel_hwq_reset_prepare(&sdev->hwqs[q]);
	sdev->reset_failed = failed;
}

static void simaccel_reset_done(struct pci_dev *pdev)
{
	struct simaccel_device *sdev = pci_get_drvdata(pdev);
	u32 q;

	for (q = 0; q < sdev->num_queues; q++)
		simaccel_hwq_reset_done(&sdev->hwqs[q]);
	atomic_inc(&sdev->reset_count);
	trace_simaccel_device_reset(dev_name(&pdev->dev), sdev->reset_failed);
	for (q = 0; q < sdev->num_queues; q++)
		drm_sched_wqueue_start(&sdev->hwqs[q].sched);
}

const struct pci_error_handlers simaccel_err_handlers = {
	.reset_prepare = simaccel_reset_prepare,
	.reset_done = simaccel_reset_done,
};
