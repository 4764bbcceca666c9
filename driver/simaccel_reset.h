/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: whole-device reset, on request of the PCI core and on the
 * driver's own when the device hangs or reports a fatal error.
 */
#ifndef __SIMACCEL_RESET_H__
#define __SIMACCEL_RESET_H__

#include <linux/pci.h>

struct simaccel_device;

/**
 * enum simaccel_reset_cause - why the device was reset, counted in sysfs
 * @SIMACCEL_RESET_REQUESTED: through the PCI core (sysfs "reset", a bus or
 *	function reset by another driver or by VFIO)
 * @SIMACCEL_RESET_HANG: a job timed out and its queue's reset did not
 *	take: the whole device stopped answering
 * @SIMACCEL_RESET_FATAL: the device reported a fatal error
 * @SIMACCEL_RESET_PCI_ERROR: PCI error recovery (AER) reset the link or
 *	the slot
 * @SIMACCEL_RESET_CAUSES: how many there are
 */
enum simaccel_reset_cause {
	SIMACCEL_RESET_REQUESTED,
	SIMACCEL_RESET_HANG,
	SIMACCEL_RESET_FATAL,
	SIMACCEL_RESET_PCI_ERROR,
	SIMACCEL_RESET_CAUSES,
};

extern const struct pci_error_handlers simaccel_err_handlers;

int simaccel_reset_init(struct simaccel_device *sdev);
void simaccel_reset_fini(struct simaccel_device *sdev);
bool simaccel_reset_schedule(struct simaccel_device *sdev,
			     enum simaccel_reset_cause cause);
bool simaccel_reset_pending(struct simaccel_device *sdev);
const char *simaccel_reset_cause_name(enum simaccel_reset_cause cause);

#endif /* __SIMACCEL_RESET_H__ */
