// SPDX-License-Identifier: MIT
/*
 * The thread-local last error: "function: what failed and why", and its
 * code.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

#define ACCEL_ERROR_LEN sizeof(((struct accel_error_state *)0)->message)

static _Thread_local char last_error[ACCEL_ERROR_LEN];
static ACCEL_TLS_HOT enum accel_error last_code;
static ACCEL_TLS_HOT const char *current_func;
static ACCEL_TLS_HOT const char *current_device;

/* What was current before: accel_leave() puts it back. */
const char *accel_enter(const char *func)
{
	const char *outer = current_func;

	if (!outer) {
		current_func = func;
		current_device = NULL;
	}
	return outer;
}

void accel_leave(const char *const *outer)
{
	current_func = *outer;
	if (!current_func)
		current_device = NULL;
}

/*
 * The device the public call under way works on (the first it resolves):
 * its errors name it, whatever the message says.
 */
void accel_error_device(const struct accel_device *dev)
{
	if (current_func && !current_device)
		current_device = dev->name;
}

/* The same by id, for objects that keep one: none for -1 (host memory). */
void accel_error_device_id(int id)
{
	struct accel_device *dev = accel_device_by_id(id);

	if (dev)
		accel_error_device(dev);
}

static void set_error(enum accel_error code, int err, const char *fmt,
		      va_list ap)
{
	size_t len = 0;

	last_code = code;
	if (current_func)
		len = (size_t)snprintf(last_error, sizeof(last_error), "%s: ",
				       current_func);
	if (len < sizeof(last_error))
		vsnprintf(last_error + len, sizeof(last_error) - len, fmt, ap);
	len = strlen(last_error);
	if (current_device && !strstr(last_error, current_device) &&
	    len < sizeof(last_error))
		snprintf(last_error + len, sizeof(last_error) - len, " (%s)",
			 current_device);
	len = strlen(last_error);
	if (err && len < sizeof(last_error))
		snprintf(last_error + len, sizeof(last_error) - len, ": %s",
			 strerror(err));
}

accel_status_t accel_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_error(ACCEL_ERROR_INVALID_VALUE, 0, fmt, ap);
	va_end(ap);
	return ACCEL_FAILED;
}

accel_status_t accel_fail(enum accel_error code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_error(code, 0, fmt, ap);
	va_end(ap);
	return ACCEL_FAILED;
}

/* What a system call's errno says of the failure. */
static enum accel_error code_of_errno(int err)
{
	switch (err) {
	case ENOMEM:
	case ENOSPC:
		return ACCEL_ERROR_OUT_OF_MEMORY;
	case EINVAL:
	case EFAULT:
	case ERANGE:
	case EOVERFLOW:
		return ACCEL_ERROR_INVALID_VALUE;
	case EIO:
	case ETIMEDOUT:
	case ECANCELED:
		return ACCEL_ERROR_DEVICE_FAULT;
	case ENODEV:
	case ENXIO:
	case ENOENT:
	case EACCES:
	case EPERM:
		return ACCEL_ERROR_UNAVAILABLE;
	case EBUSY:
		return ACCEL_ERROR_IN_USE;
	case EOPNOTSUPP:
	case ENOTTY:
		return ACCEL_ERROR_NOT_SUPPORTED;
	default:
		return ACCEL_ERROR_SYSTEM;
	}
}

accel_status_t accel_errno_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_error(code_of_errno(err), err, fmt, ap);
	va_end(ap);
	return ACCEL_FAILED;
}

const char *accel_get_last_error(void)
{
	return last_error;
}

void accel_clear_last_error(void)
{
	last_error[0] = '\0';
	last_code = ACCEL_ERROR_NONE;
}

void accel_error_keep(struct accel_error_state *s)
{
	s->code = last_code;
	strcpy(s->message, last_error);
}

void accel_error_restore(const struct accel_error_state *s)
{
	last_code = s->code;
	strcpy(last_error, s->message);
}

enum accel_error accel_peek_last_error_code(void)
{
	return last_code;
}

enum accel_error accel_get_last_error_code(void)
{
	enum accel_error code = last_code;

	accel_clear_last_error();
	return code;
}

const char *accel_error_name(enum accel_error code)
{
	static const char *const names[ACCEL_ERROR_COUNT] = {
		[ACCEL_ERROR_NONE] = "ACCEL_ERROR_NONE",
		[ACCEL_ERROR_INVALID_VALUE] = "ACCEL_ERROR_INVALID_VALUE",
		[ACCEL_ERROR_OUT_OF_MEMORY] = "ACCEL_ERROR_OUT_OF_MEMORY",
		[ACCEL_ERROR_INVALID_HANDLE] = "ACCEL_ERROR_INVALID_HANDLE",
		[ACCEL_ERROR_NOT_READY] = "ACCEL_ERROR_NOT_READY",
		[ACCEL_ERROR_DEVICE_FAULT] = "ACCEL_ERROR_DEVICE_FAULT",
		[ACCEL_ERROR_UNAVAILABLE] = "ACCEL_ERROR_UNAVAILABLE",
		[ACCEL_ERROR_IN_USE] = "ACCEL_ERROR_IN_USE",
		[ACCEL_ERROR_NOT_SUPPORTED] = "ACCEL_ERROR_NOT_SUPPORTED",
		[ACCEL_ERROR_SYSTEM] = "ACCEL_ERROR_SYSTEM",
	};

	if ((unsigned int)code >= ACCEL_ERROR_COUNT)
		return "ACCEL_ERROR_UNKNOWN";
	return names[code];
}
