// SPDX-License-Identifier: MIT
/*
 * A program that loads libaccel, has it probe its devices, and unloads it
 * (dlclose()), then lives on a while: whatever the library started must
 * be over by then. Exits 0 if it lived.
 *
 *   unload_lib LIBACCEL_SO
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int (*count)(size_t *);
	size_t n;
	void *lib;

	if (argc != 2) {
		fprintf(stderr, "usage: unload_lib LIBACCEL_SO\n");
		return 64;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "unload_lib: %s\n", dlerror());
		return 1;
	}
	*(void **)&count = dlsym(lib, "accel_get_device_count");
	if (!count || count(&n)) {
		fprintf(stderr, "unload_lib: no devices\n");
		return 1;
	}
	usleep(300 * 1000);	/* a publish or two */
	if (dlclose(lib)) {
		fprintf(stderr, "unload_lib: %s\n", dlerror());
		return 1;
	}
	usleep(600 * 1000);
	return 0;
}
