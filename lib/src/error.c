// SPDX-License-Identifier: MIT
/*
 * The thread-local last error: "function: what failed and why".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define ACCEL_ERROR_LEN 512

static _Thread_local char last_error[ACCEL_ERROR_LEN];
static _Thread_local const char *current_func;

/* What was current before: accel_leave() puts it back. */
const char *accel_enter(const char *func)
{
	const char *outer = current_func;

	if (!outer)
		current_func = func;
	return outer;
}

void accel_leave(const char *const *outer)
{
	current_func = *outer;
}

static void set_error(int err, const char *fmt, va_list ap)
{
	size_t len = 0;

	if (current_func)
		len = (size_t)snprintf(last_error, sizeof(last_error), "%s: ",
				       current_func);
	if (len < sizeof(last_error))
		vsnprintf(last_error + len, sizeof(last_error) - len, fmt, ap);
	len = strlen(last_error);
	if (err && len < sizeof(last_error))
		snprintf(last_error + len, sizeof(last_error) - len, ": %s",
			 strerror(err));
}

C_Status accel_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_error(0, fmt, ap);
	va_end(ap);
	return C_FAILED;
}

C_Status accel_errno_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_error(err, fmt, ap);
	va_end(ap);
	return C_FAILED;
}

const char *accel_get_last_error(void)
{
	return last_error;
}

void accel_clear_last_error(void)
{
	last_error[0] = '\0';
}
