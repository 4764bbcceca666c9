/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: whole-device reset through the PCI core.
 */
#ifndef __SIMACCEL_RESET_H__
#define __SIMACCEL_RESET_H__

#include <linux/pci.h>

extern const struct pci_error_handlers simaccel_err_handlers;

#endif /* __SIMACCEL_RESET_H__ */
