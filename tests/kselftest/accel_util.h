/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the accel kselftests. */
#ifndef ACCEL_KSELFTEST_UTIL_H
#define ACCEL_KSELFTEST_UTIL_H

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Write @s to a sysfs, debugfs or module-parameter file; 0 on success. */
static inline int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static inline int dev_open(void)
{
	return open("/dev/accel0", O_RDWR | O_CLOEXEC);
}

#endif
