// SPDX-License-Identifier: MIT
/* Finding and loading libpaddle-accel.so for the plugin tests. */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load.h"

const char *plugin_path(void)
{
	static char path[PATH_MAX + 64];
	char exe[PATH_MAX];
	const char *env = getenv("ACCEL_PLUGIN");
	ssize_t n;

	if (env && env[0])
		return env;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return "libpaddle-accel.so";
	exe[n] = '\0';
	snprintf(path, sizeof(path), "%s/../plugin/libpaddle-accel.so",
		 dirname(exe));
	return path;
}

void (*plugin_entry(void))(CustomRuntimeParams *)
{
	void (*entry)(CustomRuntimeParams *);
	void *so = dlopen(plugin_path(), RTLD_NOW | RTLD_LOCAL);

	if (!so) {
		printf("Bail out! dlopen %s: %s\n", plugin_path(), dlerror());
		exit(1);
	}
	entry = (void (*)(CustomRuntimeParams *))dlsym(so, "InitPlugin");
	if (!entry) {
		printf("Bail out! %s has no InitPlugin\n", plugin_path());
		exit(1);
	}
	return entry;
}

const C_DeviceInterface *plugin_table(void)
{
	static CustomRuntimeParams params;
	static C_DeviceInterface table;

	if (params.device_type)
		return &table;
	params.size = sizeof(params);
	params.interface = &table;
	table.size = sizeof(table);
	plugin_entry()(&params);
	if (!params.device_type) {
		printf("Bail out! %s refused to load\n", plugin_path());
		exit(1);
	}
	return &table;
}
