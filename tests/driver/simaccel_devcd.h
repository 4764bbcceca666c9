/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simaccel kselftests: the device's devcoredumps in
 * /sys/class/devcoredump (docs/uapi.md, "Crash dumps"), as root.
 */
#ifndef SIMACCEL_DEVCD_H
#define SIMACCEL_DEVCD_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simaccel_util.h"

#define DEVCD		"/sys/class/devcoredump"

/* Dismiss every pending devcoredump: a write to its data frees it. */
static inline void dismiss_coredumps(void)
{
	DIR *d = opendir(DEVCD);
	struct dirent *e;
	char path[300];

	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "devcd", 5))
			continue;
		snprintf(path, sizeof(path), DEVCD "/%.63s/data", e->d_name);
		write_file(path, "1");
	}
	if (d)
		closedir(d);
}

/* The folder of the devcoredump of the device at @addr, if there is one. */
static inline bool find_coredump(const char *addr, char *dir, size_t len)
{
	DIR *d = opendir(DEVCD);
	char link[300], target[512];
	struct dirent *e;
	bool found = false;
	ssize_t n;

	while (!found && d && (e = readdir(d))) {
		if (strncmp(e->d_name, "devcd", 5))
			continue;
		snprintf(link, sizeof(link), DEVCD "/%.63s/failing_device", e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		found = !strcmp(strrchr(target, '/') + 1, addr);
		if (found)
			snprintf(dir, len, DEVCD "/%.63s", e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * Dismiss the dumps until the device at @addr has none: devcoredump frees
 * a dismissed dump in a work item, and an earlier test's failure may have
 * just written one (the recovery writes it after the job's fence).
 */
static inline bool no_coredump(const char *addr)
{
	char dir[256];

	for (int i = 0; i < 40; i++) {
		dismiss_coredumps();
		usleep(50000);
		if (!find_coredump(addr, dir, sizeof(dir)))
			return true;
	}
	return false;
}

/* The same, waited for: the recovery writes it after the job's fence. */
static inline bool wait_coredump(const char *addr, char *dir, size_t len)
{
	for (int i = 0; i < 40; i++) {
		if (find_coredump(addr, dir, len))
			return true;
		usleep(50000);
	}
	return false;
}

/* The text of the devcoredump in @dir, NUL-terminated; NULL if unreadable. */
static inline char *read_coredump(const char *dir)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/data", dir);
	return read_text(path, 65536);
}

/* Write to the dump in @dir, which frees it: whether it went. */
static inline bool dismiss_coredump(const char *dir)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/data", dir);
	if (write_file(path, "1"))
		return false;
	for (int i = 0; i < 20; i++) {
		if (access(dir, F_OK))
			return true;
		usleep(50000);
	}
	return false;
}

/* A register's value in a dump ("STATUS: 0xb"); -1 if absent. */
static inline long long dump_value(const char *text, const char *key)
{
	char tag[64];
	const char *p;

	snprintf(tag, sizeof(tag), "\n%s: ", key);
	p = strstr(text, tag);
	return p ? strtoll(p + strlen(tag), NULL, 0) : -1;
}

#endif /* SIMACCEL_DEVCD_H */
