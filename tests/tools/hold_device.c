// SPDX-License-Identifier: MIT
/*
 * hold_device: open an accelerator, allocate some VRAM and keep it until
 * killed, so that accel-smi has a process to show.
 *
 *   hold_device /dev/accelN MIB READY_FILE
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../../uapi/accel.h"

int main(int argc, char **argv)
{
	struct accel_alloc a = { .kind = ACCEL_MEM_DEVICE };
	FILE *ready;
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: hold_device /dev/accelN MIB READY_FILE\n");
		return 64;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	a.size = strtoull(argv[2], NULL, 0) << 20;
	if (ioctl(fd, ACCEL_IOCTL_ALLOC, &a)) {
		perror("ACCEL_IOCTL_ALLOC");
		return 1;
	}
	ready = fopen(argv[3], "w");
	if (!ready || fprintf(ready, "%d\n", getpid()) < 0 || fclose(ready)) {
		perror(argv[3]);
		return 1;
	}
	for (;;)
		pause();
}
