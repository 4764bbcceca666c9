// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: power management.
 *
 * Runtime PM: the device goes to D3hot once it has been idle for the
 * autosuspend delay (the module parameter autosuspend_ms, 1000 by default,
 * or the device's power/autosuspend_delay_ms). What keeps it in D0 is a
 * runtime-PM reference, and only work holds one: each job from its going
 * on a ring to the signalling of its fence (simaccel_hwq.c), each job of a
 * peer that reaches this device's VRAM for as long (simaccel_prime.c), a
 * fault that maps VRAM while it maps it, a register access from debugfs,
 * and the driver's own reset. An open file holds none, nor do its
 * buffers, queues or mappings: an idle file cannot keep the device awake.
 *
 * D3hot resets the device (docs/hardware.md, "Power states"): its
 * registers are lost, VRAM is kept. Its BARs do not decode in D3hot, so
 * suspend zaps the CPU's mappings of VRAM (those of the device's files and
 * of its dma-bufs: all share the DRM device's address space), and the
 * next access faults, which resumes the device. Nothing is on the rings
 * when the device suspends; resume programs them again, as after a reset.
 *
 * System sleep: the schedulers stop, so that no job goes on a ring; the
 * jobs on the rings get SIMACCEL_PM_DRAIN_MS to finish, and those that
 * have not fail with -ECANCELED, as at a reset. The PCI core then puts the
 * device in D3hot. Resume resets the device (the firmware may have, or
 * not), programs the rings and starts the schedulers: the jobs held in
 * them run. Buffers are kept: VRAM is, and so is system memory.
 */
#include <drm/drm_drv.h>
#include <linux/mm.h>
#include <linux/pm_runtime.h>

#include "simaccel_hw.h"
#include "simaccel_hwq.h"
#include "simaccel_pm.h"

/* How long system suspend waits for the jobs on the rings. */
#define SIMACCEL_PM_DRAIN_MS	1000

static unsigned int simaccel_autosuspend_ms = 1000;
module_param_named(autosuspend_ms, simaccel_autosuspend_ms, uint, 0644);
MODULE_PARM_DESC(autosuspend_ms,
		 "put an idle device in D3hot after this long (ms; for devices bound afterwards; power/autosuspend_delay_ms changes it per device)");

/**
 * simaccel_pm_get - keep the device in D0, resuming it if need be
 * @sdev: the device
 *
 * Sleeps. Return: 0, or a negative errno if the device could not resume;
 * no reference is held then.
 */
int simaccel_pm_get(struct simaccel_device *sdev)
{
	return pm_runtime_resume_and_get(sdev->drm.dev);
}

/**
 * simaccel_pm_put - let the device suspend after the autosuspend delay
 * @sdev: the device, referenced by simaccel_pm_get()
 *
 * Safe from interrupt and under spinlocks.
 */
void simaccel_pm_put(struct simaccel_device *sdev)
{
	pm_runtime_mark_last_busy(sdev->drm.dev);
	pm_runtime_put_autosuspend(sdev->drm.dev);
}

/* The CPU's mappings of VRAM go: the BAR stops decoding. */
static void simaccel_pm_zap_vram(struct simaccel_device *sdev)
{
	unmap_mapping_range(sdev->drm.anon_inode->i_mapping, 0, 0, 1);
}

/* The device comes back from D3hot or from system sleep reset: the rings. */
static void simaccel_pm_restart_rings(struct simaccel_device *sdev)
{
	u32 q;

	if (simaccel_hw_reset_wait(sdev))
		drm_err(&sdev->drm, "device not ready after resume\n");
	for (q = 0; q < sdev->num_queues; q++)
		simaccel_hwq_reset_done(&sdev->hwqs[q]);
}

/*
 * No reference is held: nothing is on the rings, no fault maps VRAM, no
 * register access is under way.
 */
static int simaccel_pm_runtime_suspend(struct device *dev)
{
	struct simaccel_device *sdev = pci_get_drvdata(to_pci_dev(dev));

	simaccel_pm_zap_vram(sdev);
	return 0;
}

static int simaccel_pm_runtime_resume(struct device *dev)
{
	struct simaccel_device *sdev = pci_get_drvdata(to_pci_dev(dev));

	simaccel_pm_restart_rings(sdev);
	return 0;
}

/* Wait, a while at most, for the jobs on the rings to finish. */
static void simaccel_pm_drain(struct simaccel_device *sdev)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(SIMACCEL_PM_DRAIN_MS);
	struct dma_fence *fence;
	u32 q;

	lockdep_assert_held(&sdev->reset_lock);
	for (q = 0; q < sdev->num_queues; q++) {
		long left = (long)(deadline - jiffies);

		/* the schedulers are stopped: the last job stays the last */
		fence = simaccel_hwq_last_fence(&sdev->hwqs[q]);
		if (!fence)
			continue;
		if (left > 0)
			dma_fence_wait_timeout(fence, false, left);
		dma_fence_put(fence);
	}
}

static int simaccel_pm_suspend(struct device *dev)
{
	struct simaccel_device *sdev = pci_get_drvdata(to_pci_dev(dev));
	u32 q, failed = 0;

	/*
	 * A reset of the driver's own would start the schedulers again;
	 * resume resets the device anyway.
	 */
	cancel_work_sync(&sdev->reset_work);
	mutex_lock(&sdev->reset_lock);
	for (q = 0; q < sdev->num_queues; q++)
		drm_sched_wqueue_stop(&sdev->hwqs[q].sched);
	simaccel_pm_drain(sdev);
	for (q = 0; q < sdev->num_queues; q++)
		failed += simaccel_hwq_reset_prepare(&sdev->hwqs[q]);
	mutex_unlock(&sdev->reset_lock);
	if (failed)
		drm_warn(&sdev->drm, "system suspend canceled %u jobs\n", failed);
	simaccel_pm_zap_vram(sdev);
	return 0;
}

static int simaccel_pm_resume(struct device *dev)
{
	struct simaccel_device *sdev = pci_get_drvdata(to_pci_dev(dev));
	u32 q;

	mutex_lock(&sdev->reset_lock);
	simaccel_pm_restart_rings(sdev);
	/* the device is reset: a PCI error recovery that gave up is over */
	sdev->pci_error_stopped = false;
	for (q = 0; q < sdev->num_queues; q++)
		drm_sched_wqueue_start(&sdev->hwqs[q].sched);
	mutex_unlock(&sdev->reset_lock);
	return 0;
}

const struct dev_pm_ops simaccel_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(simaccel_pm_suspend, simaccel_pm_resume)
	RUNTIME_PM_OPS(simaccel_pm_runtime_suspend, simaccel_pm_runtime_resume,
		       NULL)
};

/*
 * At the end of probe. The PCI core holds a reference across probe and
 * forbids runtime PM until a driver allows it: both are let go here.
 */
void simaccel_pm_init(struct simaccel_device *sdev)
{
	struct device *dev = sdev->drm.dev;

	pm_runtime_set_autosuspend_delay(dev, simaccel_autosuspend_ms);
	pm_runtime_use_autosuspend(dev);
	pm_runtime_allow(dev);
	simaccel_pm_put(sdev);
}

/*
 * At removal, which the PCI core began with the device resumed: the
 * references simaccel_pm_init() let go of are taken back, for the PCI
 * core to drop after the removal.
 */
void simaccel_pm_fini(struct simaccel_device *sdev)
{
	struct device *dev = sdev->drm.dev;

	pm_runtime_get_noresume(dev);
	pm_runtime_forbid(dev);
	pm_runtime_dont_use_autosuspend(dev);
}
