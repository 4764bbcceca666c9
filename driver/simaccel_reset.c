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
 * cancels the driver's own before the queues go. PCI error recovery is
 * the exception: its callbacks are separate calls that the PCI core may
 * not finish (see simaccel_error_detected()).
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

/*
 * Stop the schedulers and the queues, failing the jobs on the rings, the
 * first of them in a devcoredump for @cause. A device stopped already (by
 * a PCI error recovery that did not finish) is stopped again harmlessly:
 * its rings are empty, and the failures add up.
 */
static void simaccel_reset_stop_locked(struct simaccel_device *sdev,
				       enum simaccel_reset_cause cause)
{
	u32 q, failed = 0;

	lockdep_assert_held(&sdev->reset_lock);
	for (q = 0; q < sdev->num_queues; q++)
		drm_sched_wqueue_stop(&sdev->hwqs[q].sched);
	for (q = 0; q < sdev->num_queues; q++)
		if (simaccel_hwq_dump_reset(&sdev->hwqs[q],
					    simaccel_reset_cause_name(cause)))
			break;
	for (q = 0; q < sdev->num_queues; q++)
		failed += simaccel_hwq_reset_prepare(&sdev->hwqs[q]);
	if (sdev->pci_error_stopped)
		sdev->reset_failed += failed;
	else
		sdev->reset_failed = failed;
	/* the rings are empty: a failure from now on asks for a new reset */
	atomic_set(&sdev->reset_pending, 0);
}

/* Program the rings again, count the reset and start the schedulers. */
static void simaccel_reset_restart_locked(struct simaccel_device *sdev,
					  enum simaccel_reset_cause cause)
{
	u32 q;

	lockdep_assert_held(&sdev->reset_lock);
	for (q = 0; q < sdev->num_queues; q++)
		simaccel_hwq_reset_done(&sdev->hwqs[q]);
	atomic_inc(&sdev->resets[cause]);
	trace_simaccel_device_reset(dev_name(sdev->drm.dev),
				    simaccel_reset_cause_name(cause),
				    sdev->reset_failed);
	sdev->pci_error_stopped = false;
	for (q = 0; q < sdev->num_queues; q++)
		drm_sched_wqueue_start(&sdev->hwqs[q].sched);
}

/**
 * simaccel_reset_stop - stop the device's work for a reset
 * @sdev: the device; takes @sdev->reset_lock, which
 *	simaccel_reset_restart() releases
 * @cause: why, for the devcoredump of the first job it fails
 */
static void simaccel_reset_stop(struct simaccel_device *sdev,
				enum simaccel_reset_cause cause)
	__acquires(&sdev->reset_lock)
{
	mutex_lock(&sdev->reset_lock);
	__acquire(&sdev->reset_lock);	/* for sparse: mutex_lock() is not annotated */
	simaccel_reset_stop_locked(sdev, cause);
}

/**
 * simaccel_reset_restart - start the device's work again after a reset
 * @sdev: the device, stopped by simaccel_reset_stop()
 * @cause: why it was reset, for its counter and trace event
 */
static void simaccel_reset_restart(struct simaccel_device *sdev,
				   enum simaccel_reset_cause cause)
	__releases(&sdev->reset_lock)
{
	simaccel_reset_restart_locked(sdev, cause);
	__release(&sdev->reset_lock);
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
		goto out;
	/* its registers are reached in D0 (simaccel_pm.c) */
	if (simaccel_pm_get(sdev)) {
		drm_dev_exit(idx);
		goto out;
	}
	mutex_lock(&sdev->reset_lock);
	/*
	 * A PCI error recovery under way resets the device itself, and a
	 * reset through the PCI core since the request did (it cleared
	 * @reset_pending): this one would fail later work for nothing.
	 */
	if (!sdev->pci_error_stopped && atomic_read(&sdev->reset_pending)) {
		drm_warn(&sdev->drm, "device reset (%s)\n",
			 simaccel_reset_cause_name(cause));
		simaccel_reset_stop_locked(sdev, cause);
		if (simaccel_hw_reset_wait(sdev))
			drm_err(&sdev->drm, "device not ready after reset\n");
		simaccel_reset_restart_locked(sdev, cause);
	}
	mutex_unlock(&sdev->reset_lock);
	simaccel_pm_put(sdev);
	drm_dev_exit(idx);
out:
	atomic_set(&sdev->reset_pending, 0);
}

/**
 * simaccel_reset_schedule - reset the device soon, from a worker
 * @sdev: the device
 * @cause: why
 *
 * Safe from interrupt and from the schedulers' time-out handlers. A reset
 * asked for while one is pending, until it has emptied the rings, is the
 * same reset, with the first request's cause.
 *
 * Return: whether this call asked for it (the first since the last reset).
 */
bool simaccel_reset_schedule(struct simaccel_device *sdev,
			     enum simaccel_reset_cause cause)
{
	if (atomic_xchg(&sdev->reset_pending, 1))
		return false;
	WRITE_ONCE(sdev->reset_cause, cause);
	queue_work(system_unbound_wq, &sdev->reset_work);
	return true;
}

/* Whether a reset of the driver's own is asked for and has not stopped the queues yet. */
bool simaccel_reset_pending(struct simaccel_device *sdev)
{
	return atomic_read(&sdev->reset_pending);
}

int simaccel_reset_init(struct simaccel_device *sdev)
{
	INIT_WORK(&sdev->reset_work, simaccel_reset_work);
	return drmm_mutex_init(&sdev->drm, &sdev->reset_lock);
}

/*
 * At removal, after the device is unplugged and its queues killed: no
 * reset runs after this. A PCI error recovery that never finished left
 * the schedulers stopped: they start, so that the jobs they hold reach
 * run_job and fail there instead of waiting for a restart.
 */
void simaccel_reset_fini(struct simaccel_device *sdev)
{
	u32 q;

	cancel_work_sync(&sdev->reset_work);
	mutex_lock(&sdev->reset_lock);
	if (sdev->pci_error_stopped) {
		for (q = 0; q < sdev->num_queues; q++)
			drm_sched_wqueue_start(&sdev->hwqs[q].sched);
		sdev->pci_error_stopped = false;
	}
	mutex_unlock(&sdev->reset_lock);
}

/* reset_lock is held from reset_prepare to reset_done */
static void simaccel_reset_prepare(struct pci_dev *pdev)
	__acquires(&sdev->reset_lock)
{
	struct simaccel_device *sdev = pci_get_drvdata(pdev);

	drm_info(&sdev->drm, "device reset (%s)\n",
		 simaccel_reset_cause_name(SIMACCEL_RESET_REQUESTED));
	simaccel_reset_stop(sdev, SIMACCEL_RESET_REQUESTED);
}

static void simaccel_reset_done(struct pci_dev *pdev)
	__releases(&sdev->reset_lock)
{
	/*
	 * The PCI core restored config space from the state it saved before
	 * the reset. Older kernels' pci_restore_state() consumes the saved
	 * state, which would leave none for PCI error recovery's link reset.
	 */
	pci_save_state(pdev);
	simaccel_reset_restart(pci_get_drvdata(pdev), SIMACCEL_RESET_REQUESTED);
}

/*
 * PCI error recovery (AER): error_detected, then (unless the recovery
 * fails) slot_reset and resume, each under the device lock but not in one
 * critical section. The PCI core calls no more of them when the recovery
 * fails (an error on another function of the link, a link reset that did
 * not take, DISCONNECT from any driver), so @reset_lock is not held from
 * one callback to the next: error_detected stops the device and marks it
 * @pci_error_stopped, which keeps the driver's own reset away until
 * resume restarts it. A device whose recovery failed stays stopped, with
 * its jobs held in their schedulers, until a reset through the PCI core
 * (sysfs "reset") restarts it or its removal fails them.
 *
 * Correctable errors are the AER driver's alone: it logs and clears them
 * and calls none of these.
 */
static pci_ers_result_t simaccel_error_detected(struct pci_dev *pdev,
						pci_channel_state_t state)
{
	struct simaccel_device *sdev = pci_get_drvdata(pdev);

	drm_warn(&sdev->drm, "PCI error (channel %s)\n",
		 state == pci_channel_io_normal ? "normal" :
		 state == pci_channel_io_frozen ? "frozen" : "failed");
	/*
	 * Whether the link is usable (non-fatal) or not (fatal, frozen), a
	 * job the error hit may be corrupt: every job on the rings fails,
	 * and the device is reset before it runs more.
	 */
	mutex_lock(&sdev->reset_lock);
	simaccel_reset_stop_locked(sdev, SIMACCEL_RESET_PCI_ERROR);
	sdev->pci_error_stopped = true;
	mutex_unlock(&sdev->reset_lock);
	if (state == pci_channel_io_perm_failure)
		return PCI_ERS_RESULT_DISCONNECT;
	return PCI_ERS_RESULT_NEED_RESET;
}

/*
 * After a fatal error the PCI core reset the link, and with it config
 * space; after a non-fatal one it reset nothing. Either way the device's
 * own reset clears the rings and error state before resume programs them.
 */
static pci_ers_result_t simaccel_slot_reset(struct pci_dev *pdev)
{
	struct simaccel_device *sdev = pci_get_drvdata(pdev);
	pci_ers_result_t result = PCI_ERS_RESULT_RECOVERED;

	/*
	 * Config space as saved at probe (or after the last reset), saved
	 * again for the next error: older kernels' restore consumes it.
	 */
	pci_restore_state(pdev);
	pci_save_state(pdev);
	mutex_lock(&sdev->reset_lock);
	/* unless a reset through the PCI core has restarted it meanwhile */
	if (sdev->pci_error_stopped && simaccel_hw_reset_wait(sdev)) {
		drm_err(&sdev->drm, "device not ready after reset\n");
		result = PCI_ERS_RESULT_DISCONNECT;
	}
	mutex_unlock(&sdev->reset_lock);
	return result;
}

static void simaccel_resume(struct pci_dev *pdev)
{
	struct simaccel_device *sdev = pci_get_drvdata(pdev);

	mutex_lock(&sdev->reset_lock);
	if (sdev->pci_error_stopped) {
		drm_info(&sdev->drm, "device reset (%s)\n",
			 simaccel_reset_cause_name(SIMACCEL_RESET_PCI_ERROR));
		simaccel_reset_restart_locked(sdev, SIMACCEL_RESET_PCI_ERROR);
	}
	mutex_unlock(&sdev->reset_lock);
}

const struct pci_error_handlers simaccel_err_handlers = {
	.error_detected = simaccel_error_detected,
	.slot_reset = simaccel_slot_reset,
	.resume = simaccel_resume,
	.reset_prepare = simaccel_reset_prepare,
	.reset_done = simaccel_reset_done,
};
