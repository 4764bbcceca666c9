// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: whole-device reset, as ivpu's and amdgpu's recovery.
 *
 * A reset comes from the PCI core (the function's sysfs "reset", root's
 * only, or any pci_reset_function() caller: reset_prepare/reset_done), or
 * from the driver itself (simaccel_reset_schedule()): when a job times out
 * and its queue's reset does not take (the device hangs), or when the
 * device reports a fatal error.
 *
 * Before the reset every scheduler stops feeding its ring, every queue
 * stops, and the jobs on the rings fail with -ECANCELED, whichever file
 * they came from: the reset loses the rings, and a job the device was
 * running may be partly done (the job that timed out has failed with
 * -ETIMEDOUT already, and counts against its file). Jobs not yet on a
 * ring are held in their schedulers and run after it. The device's reset
 * keeps VRAM, so buffers and their mappings survive; the rings are
 * programmed again before the schedulers start. A reset waits for no
 * job: the schedulers' workers are stopped, not drained, and the time-out
 * handler leaves a resetting queue alone.
 *
 * @reset_lock is held from the stop to the restart, so that resets do not
 * overlap; the PCI core also holds the device lock across its calls, so a
 * reset it asks for does not overlap probe or removal, and removal
 * cancels the driver's own before the queues go.
 */
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>

#include "simaccel_hw.h"
#include "simaccel_hwq.h"
#include "simaccel_pm.h"
#include "simaccel_reset.h"
#include "simaccel_trace.h"

static const char *const simaccel_reset_causes[SIMACCEL_RESET_CAUSES] = {
	[SIMACCEL_RESET_REQUESTED] = "requested",
	[SIMACCEL_RESET_HANG] = "hang",
	[SIMACCEL_RESET_FATAL] = "fatal",
	[SIMACCEL_RESET_PCI_ERROR] = "pci_error",
};

const char *simaccel_reset_cause_name(enum simaccel_reset_cause cause)
{
	return simaccel_reset_causes[cause];
}

/**
 * simaccel_reset_stop - stop the device's work for a reset
 * @sdev: the device; takes @sdev->reset_lock, which
 *	simaccel_reset_restart() releases
 */
void simaccel_reset_stop(struct simaccel_device *sdev)
	__acquires(&sdev->reset_lock)
{
	u32 q, failed = 0;

	mutex_lock(&sdev->reset_lock);
	for (q = 0; q < sdev->num_queues; q++)
		drm_sched_wqueue_stop(&sdev->hwqs[q].sched);
	for (q = 0; q < sdev->num_queues; q++)
		failed += simaccel_hwq_reset_prepare(&sdev->hwqs[q]);
	sdev->reset_failed = failed;
}

/**
 * simaccel_reset_restart - start the device's work again after a reset
 * @sdev: the device, stopped by simaccel_reset_stop()
 * @cause: why it was reset, for its counter and trace event
 */
void simaccel_reset_restart(struct simaccel_device *sdev,
			    enum simaccel_reset_cause cause)
	__releases(&sdev->reset_lock)
{
	u32 q;

	lockdep_assert_held(&sdev->reset_lock);
	for (q = 0; q < sdev->num_queues; q++)
		simaccel_hwq_reset_done(&sdev->hwqs[q]);
	atomic_inc(&sdev->resets[cause]);
	trace_simaccel_device_reset(dev_name(sdev->drm.dev),
				    simaccel_reset_cause_name(cause),
				    sdev->reset_failed);
	for (q = 0; q < sdev->num_queues; q++)
		drm_sched_wqueue_start(&sdev->hwqs[q].sched);
	mutex_unlock(&sdev->reset_lock);
}

/*
 * The driver's own reset: the device's reset register, then the rings
 * again. The IRQ mask and everything else the device loses were set at
 * probe to their reset values.
 */
static void simaccel_reset_work(struct work_struct *work)
{
	struct simaccel_device *sdev =
		container_of(work, struct simaccel_device, reset_work);
	enum simaccel_reset_cause cause = READ_ONCE(sdev->reset_cause);
	int idx;

	/* a device that is gone is not reset: its removal follows */
	if (!pci_device_is_present(to_pci_dev(sdev->drm.dev)) ||
	    !drm_dev_enter(&sdev->drm, &idx))
		return;
	/* its registers are reached in D0 (simaccel_pm.c) */
	if (simaccel_pm_get(sdev)) {
		drm_dev_exit(idx);
		return;
	}
	drm_warn(&sdev->drm, "device reset (%s)\n",
		 simaccel_reset_cause_name(cause));
	simaccel_reset_stop(sdev);
	if (simaccel_hw_reset_wait(sdev))
		drm_err(&sdev->drm, "device not ready after reset\n");
	simaccel_reset_restart(sdev, cause);
	simaccel_pm_put(sdev);
	drm_dev_exit(idx);
}

/**
 * simaccel_reset_schedule - reset the device soon, from a worker
 * @sdev: the device
 * @cause: why
 *
 * Safe from interrupt and from the schedulers' time-out handlers; a reset
 * asked for while one is pending is the same reset.
 */
void simaccel_reset_schedule(struct simaccel_device *sdev,
			     enum simaccel_reset_cause cause)
{
	if (!work_pending(&sdev->reset_work))
		WRITE_ONCE(sdev->reset_cause, cause);
	queue_work(system_unbound_wq, &sdev->reset_work);
}

int simaccel_reset_init(struct simaccel_device *sdev)
{
	INIT_WORK(&sdev->reset_work, simaccel_reset_work);
	return drmm_mutex_init(&sdev->drm, &sdev->reset_lock);
}

/* At removal, after the device is unplugged: no reset runs after this. */
void simaccel_reset_fini(struct simaccel_device *sdev)
{
	cancel_work_sync(&sdev->reset_work);
}

static void simaccel_reset_prepare(struct pci_dev *pdev)
{
	struct simaccel_device *sdev = pci_get_drvdata(pdev);

	drm_info(&sdev->drm, "device reset (%s)\n",
		 simaccel_reset_cause_name(SIMACCEL_RESET_REQUESTED));
	simaccel_reset_stop(sdev);
}

static void simaccel_reset_done(struct pci_dev *pdev)
{
	simaccel_reset_restart(pci_get_drvdata(pdev), SIMACCEL_RESET_REQUESTED);
}

const struct pci_error_handlers simaccel_err_handlers = {
	.reset_prepare = simaccel_reset_prepare,
	.reset_done = simaccel_reset_done,
};
