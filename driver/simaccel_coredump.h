/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel: a devcoredump of a queue that the recovery or a device reset
 * resets.
 */
#ifndef __SIMACCEL_COREDUMP_H__
#define __SIMACCEL_COREDUMP_H__

#include "simaccel_drv.h"

struct simaccel_coredump;
struct simaccel_hwq;
struct simaccel_job;

int simaccel_coredump_init(struct simaccel_hwq *hwq);
bool simaccel_coredump_queue(struct simaccel_hwq *hwq);
void simaccel_coredump_job(struct simaccel_hwq *hwq, struct simaccel_job *job,
			   int error);
void simaccel_coredump_reset(struct simaccel_hwq *hwq, const char *cause);
void simaccel_coredump_emit(struct simaccel_hwq *hwq);
void simaccel_coredump_cancel(struct simaccel_hwq *hwq);

#endif /* __SIMACCEL_COREDUMP_H__ */
