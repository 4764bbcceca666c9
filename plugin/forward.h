/* SPDX-License-Identifier: MIT */
/*
 * Paddle's types to libaccel's and back. accel/accel.h gives its status,
 * device, stream and event Paddle's layout and values under names of its
 * own, so that both headers fit in one translation unit: the plugin passes
 * Paddle's values on with these casts, which the assertions keep exact.
 */
#ifndef PADDLE_FORWARD_H
#define PADDLE_FORWARD_H

#include <accel/accel.h>

#include "paddle_abi.h"

static_assert(C_SUCCESS == (int)ACCEL_SUCCESS && C_WARNING == (int)ACCEL_WARNING &&
	      C_FAILED == (int)ACCEL_FAILED && C_ERROR == (int)ACCEL_ERROR &&
	      C_INTERNAL_ERROR == (int)ACCEL_INTERNAL_ERROR,
	      "C_Status and accel_status_t have the same values");
static_assert(sizeof(C_Status) == sizeof(accel_status_t), "one status size");
static_assert(sizeof(struct C_Device_st) == sizeof(struct accel_device_id) &&
	      offsetof(struct C_Device_st, id) == offsetof(struct accel_device_id, id),
	      "a device is its id in both");

static inline accel_device_t to_accel_device(const C_Device device)
{
	return (accel_device_t)device;
}

static inline accel_stream_t to_accel_stream(C_Stream stream)
{
	return (accel_stream_t)stream;
}

static inline accel_event_t to_accel_event(C_Event event)
{
	return (accel_event_t)event;
}

static inline C_Status to_paddle(accel_status_t status)
{
	return (C_Status)status;
}

/* Fill the table's entries that are libaccel's calls as they are. */
void forward_fill(C_DeviceInterface *t);

#endif /* PADDLE_FORWARD_H */
