// SPDX-License-Identifier: MIT
/*
 * A process that holds libaccel pool memory for accel-smi's test: on
 * each visible device, from its default pool, a block of MIB MiB, freed
 * at once, and another kept (so the pool reserves more than it has
 * allocated); then it says so in READY_FILE and waits for SIGTERM, to
 * exit as a program does (the library's exit handlers run), or, with
 * --exec, once its figures are published, runs COMMAND in its place.
 *
 *   hold_pool MIB READY_FILE [--exec COMMAND [ARG...]]
 */
#include <string.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <accel/accel.h>

static void quit(int sig)
{
	(void)sig;
}

static int hold(int id, size_t bytes)
{
	struct accel_device_id dev = { .id = id };
	accel_pool_t pool;
	void *freed, *kept;

	if (accel_device_pool(&dev, &pool) != ACCEL_SUCCESS ||
	    accel_pool_allocate(pool, NULL, &freed, bytes) != ACCEL_SUCCESS ||
	    accel_pool_allocate(pool, NULL, &kept, bytes) != ACCEL_SUCCESS ||
	    accel_pool_deallocate(pool, NULL, freed, bytes) != ACCEL_SUCCESS ||
	    accel_device_synchronize(&dev) != ACCEL_SUCCESS) {
		fprintf(stderr, "hold_pool: device %d: %s\n", id, accel_get_last_error());
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t count;
	FILE *ready;

	if (argc < 3 || (argc > 3 && (strcmp(argv[3], "--exec") || argc == 4))) {
		fprintf(stderr, "usage: hold_pool MIB READY_FILE [--exec COMMAND [ARG...]]\n");
		return 64;
	}
	if (accel_get_device_count(&count) != ACCEL_SUCCESS)
		return 1;
	for (size_t i = 0; i < count; i++)
		if (hold((int)i, strtoull(argv[1], NULL, 0) << 20))
			return 1;
	ready = fopen(argv[2], "w");
	if (!ready)
		return 1;
	signal(SIGTERM, quit);
	fprintf(ready, "%d\n", getpid());
	fclose(ready);
	if (argc > 3) {
		usleep(600 * 1000);	/* three of the library's publishes */
		execvp(argv[4], &argv[4]);
		return 127;
	}
	pause();
	return 0;
}
