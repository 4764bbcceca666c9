// SPDX-License-Identifier: MIT
/*
 * accel_info: list the accelerators simaccel.ko found, through the
 * DRM_IOCTL_SIMACCEL_GET_INFO ioctl of each /dev/accel/accelN (other DRM
 * accel drivers' nodes are passed over: DRM_IOCTL_VERSION names the driver).
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../uapi/simaccel_accel.h"

static void print_caps(unsigned int caps)
{
	static const char *const names[] = { "copy", "fill", "fence", "p2p",
					     "fault-inject" };
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (caps & (1u << i))
			printf(" %s", names[i]);
	printf("\n");
}

static int is_simaccel(int fd)
{
	char name[16] = "";
	struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };

	return !ioctl(fd, DRM_IOCTL_VERSION, &v) && !strcmp(name, "simaccel");
}

static int show(const char *path)
{
	struct drm_simaccel_info info = { 0 };
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd >= 0 && !is_simaccel(fd)) {
		close(fd);
		return 0;
	}
	if (fd < 0 || ioctl(fd, DRM_IOCTL_SIMACCEL_GET_INFO, &info)) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	close(fd);
	printf("%s: %04x:%02x:%02x.%x  [%04x:%04x] rev %02x  subsystem [%04x:%04x]\n",
	       path, info.pci_domain, info.pci_bus, info.pci_devfn >> 3,
	       info.pci_devfn & 7, info.vendor_id, info.device_id, info.revision,
	       info.subsystem_vendor_id, info.subsystem_id);
	printf("    VRAM %llu MiB, %u DMA queues, hardware %u.%u, driver %u.%u.%u\n",
	       (unsigned long long)info.vram_size >> 20, info.num_queues,
	       info.hw_version >> 16, info.hw_version & 0xffff,
	       info.driver_version >> 16, (info.driver_version >> 8) & 0xff,
	       info.driver_version & 0xff);
	printf("    capabilities:");
	print_caps(info.caps);
	return 0;
}

int main(void)
{
	glob_t g;
	size_t i;
	int rc = 0;

	if (glob("/dev/accel/accel[0-9]*", 0, NULL, &g)) {
		fprintf(stderr, "accel_info: no /dev/accel/accel* device (is simaccel.ko loaded?)\n");
		return 1;
	}
	for (i = 0; i < g.gl_pathc; i++)
		rc |= show(g.gl_pathv[i]);
	globfree(&g);
	return rc;
}
