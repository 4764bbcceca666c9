// SPDX-License-Identifier: GPL-2.0
/*
 * simaccel: the trace events' definitions (simaccel_trace.h).
 */
#include "simaccel_trace.h"

#ifndef __CHECKER__
#define CREATE_TRACE_POINTS
#include "simaccel_trace.h"
#endif
