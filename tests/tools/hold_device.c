// SPDX-License-Identifier: MIT
/*
 * hold_device: open a simaccel device, create a VRAM buffer (and, if
 * asked, a small buffer of system memory), fill the VRAM once with a job,
 * and keep it all until killed, so that accel-smi has a process to show,
 * with memory and copy-engine time.
 *
 *   hold_device /dev/accel/accelN VRAM_MIB READY_FILE [SYSTEM_KIB]
 *
 * The file is dup()ed once: its two fds have one DRM client id, which
 * accel-smi must count once. SYSTEM_KIB that is not a whole MiB makes DRM
 * print drm-total-system in KiB, the unit accel-smi must then read.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../../uapi/simaccel_accel.h"

/* A buffer of @bytes of @kind on @fd at *@dev_addr; false (and why) if not. */
static bool create_buffer(int fd, unsigned int kind, unsigned long long bytes,
			  unsigned long long *dev_addr)
{
	struct drm_simaccel_bo_create bo = { .size = bytes, .kind = kind };

	if (ioctl(fd, DRM_IOCTL_SIMACCEL_BO_CREATE, &bo)) {
		perror("DRM_IOCTL_SIMACCEL_BO_CREATE");
		return false;
	}
	*dev_addr = bo.dev_addr;
	return true;
}

/* One job that fills @bytes at @dev_addr, waited for: engine time to show. */
static bool fill(int fd, unsigned long long dev_addr, unsigned long long bytes)
{
	struct drm_simaccel_queue_create queue = { 0 };
	struct drm_simaccel_op op = {
		.op = DRM_SIMACCEL_OP_FILL, .dst = dev_addr, .src = 0xa5,
		.size = bytes,
	};
	struct drm_simaccel_submit job = {
		.flags = DRM_SIMACCEL_SUBMIT_WAIT, .ops = (uintptr_t)&op,
		.op_count = 1,
	};

	if (ioctl(fd, DRM_IOCTL_SIMACCEL_QUEUE_CREATE, &queue)) {
		perror("DRM_IOCTL_SIMACCEL_QUEUE_CREATE");
		return false;
	}
	job.queue = queue.handle;
	if (ioctl(fd, DRM_IOCTL_SIMACCEL_SUBMIT, &job)) {
		perror("DRM_IOCTL_SIMACCEL_SUBMIT");
		return false;
	}
	return true;
}

static bool write_ready(const char *path)
{
	FILE *ready = fopen(path, "w");

	if (!ready || fprintf(ready, "%d\n", getpid()) < 0 || fclose(ready)) {
		perror(path);
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	unsigned long long vram_mib, system_kib = 0, vram_addr, system_addr;
	int fd;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: hold_device /dev/accel/accelN VRAM_MIB READY_FILE [SYSTEM_KIB]\n");
		return 64;
	}
	vram_mib = strtoull(argv[2], NULL, 0);
	if (argc == 5)
		system_kib = strtoull(argv[4], NULL, 0);
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	if (dup(fd) < 0) {
		perror("dup");
		return 1;
	}
	if (!create_buffer(fd, DRM_SIMACCEL_BO_VRAM, vram_mib << 20, &vram_addr) ||
	    !fill(fd, vram_addr, vram_mib << 20))
		return 1;
	if (system_kib && !create_buffer(fd, DRM_SIMACCEL_BO_HOST,
					 system_kib << 10, &system_addr))
		return 1;
	if (!write_ready(argv[3]))
		return 1;
	for (;;)
		pause();
}
