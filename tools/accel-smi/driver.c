// SPDX-License-Identifier: MIT
/*
 * simaccel.ko's view of its devices from sysfs: the accel node
 * (/sys/class/accel/accelN, whose "device" link is the PCI function) and
 * the device totals the driver puts on the PCI function. Everyone may read
 * them.
 */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel_smi.h"

static uint64_t read_u64(const char *dir, const char *name)
{
	char path[512], line[64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return smi_read_line(path, line, sizeof(line)) ?
	       strtoull(line, NULL, 0) : 0;
}

/* The first line of @dir/@name into @buf, "" if there is none. */
static void read_word(const char *dir, const char *name, char *buf, size_t len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!smi_read_line(path, buf, len))
		buf[0] = '\0';
}

/* The PCI address an accel node's "device" link points to, "" if none. */
static void node_bdf(const char *node, char *bdf, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/sys/class/accel/%s/device", node);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0) {
		bdf[0] = '\0';
		return;
	}
	target[n] = '\0';
	snprintf(bdf, len, "%s", basename(target));
}

/*
 * The accel node of @d: the /sys/class/accel entry whose device is @d's
 * PCI function. DRM accel names nodes accelN whichever driver made them,
 * so the link, not the name, says which is ours.
 */
static bool find_node(struct smi_dev *d)
{
	DIR *dir = opendir("/sys/class/accel");
	struct dirent *e;
	char bdf[64];
	bool found = false;

	if (!dir)
		return false;
	while (!found && (e = readdir(dir))) {
		if (strncmp(e->d_name, "accel", 5))
			continue;
		node_bdf(e->d_name, bdf, sizeof(bdf));
		if (strcmp(bdf, d->bdf))
			continue;
		snprintf(d->node, sizeof(d->node), "%.15s", e->d_name);
		found = true;
	}
	closedir(dir);
	return found;
}

static void read_device_totals(struct smi_dev *d)
{
	char dir[64];

	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", d->bdf);
	d->vram_total = read_u64(dir, "vram_total");
	d->vram_used = read_u64(dir, "vram_used");
	d->vram_free = d->vram_total > d->vram_used ?
		       d->vram_total - d->vram_used : 0;
	d->host_pinned = read_u64(dir, "host_pinned");
	d->busy_time_us = read_u64(dir, "busy_time_us");
	d->resets = read_u64(dir, "reset_count");
	read_word(dir, "power_state", d->power_state, sizeof(d->power_state));
	read_word(dir, "power/runtime_status", d->runtime_pm,
		  sizeof(d->runtime_pm));
}

void smi_read_driver(struct smi_state *s)
{
	/* registered with the PCI core: it drives whatever it is bound to */
	s->driver_loaded = access("/sys/bus/pci/drivers/" SMI_DRIVER, F_OK) == 0;
	if (!smi_read_line("/sys/module/" SMI_DRIVER "/version", s->driver_version,
		       sizeof(s->driver_version)))
		s->driver_version[0] = '\0';
	s->all_processes = geteuid() == 0;
	for (int i = 0; i < s->ndevs; i++) {
		struct smi_dev *d = &s->devs[i];

		if (strcmp(d->driver, SMI_DRIVER) || !find_node(d))
			continue;
		d->bound = true;
		read_device_totals(d);
	}
}
