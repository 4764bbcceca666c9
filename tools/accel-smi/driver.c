// SPDX-License-Identifier: MIT
/*
 * The accel driver's view of its devices: memory and queues from the
 * device's sysfs attributes, processes from debugfs (readable by root).
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel_smi.h"

/* The first line of a small file, without its newline; false if unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

static uint64_t read_u64(const char *dir, const char *name)
{
	char path[512], line[64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return read_line(path, line, sizeof(line)) ?
	       strtoull(line, NULL, 0) : 0;
}

/* The misc device the driver made for @d: /sys/bus/pci/devices/BDF/misc/accelN */
static bool find_node(struct smi_dev *d, char *dir, size_t len)
{
	char misc[128];
	struct dirent *e;
	DIR *md;

	snprintf(misc, sizeof(misc), "/sys/bus/pci/devices/%s/misc", d->bdf);
	md = opendir(misc);
	if (!md)
		return false;
	while ((e = readdir(md))) {
		if (strncmp(e->d_name, "accel", 5))
			continue;
		snprintf(d->node, sizeof(d->node), "%.15s", e->d_name);
		snprintf(dir, len, "%s/%.15s", misc, e->d_name);
		closedir(md);
		return true;
	}
	closedir(md);
	return false;
}

/* Each open context: debugfs accel/accelN/contexts, a header then lines. */
static void read_processes(struct smi_dev *d)
{
	char path[256], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/contexts",
		 d->node);
	f = fopen(path, "r");
	if (!f)
		return;
	d->procs_known = true;
	if (!fgets(line, sizeof(line), f)) {	/* the header */
		fclose(f);
		return;
	}
	while (d->nprocs < SMI_MAX_PROCS && fgets(line, sizeof(line), f)) {
		struct smi_proc *p = &d->procs[d->nprocs];

		if (sscanf(line, "%d\t%31[^\t]\t%" SCNu64 "\t%" SCNu64 "\t%u\t%d",
			   &p->pid, p->comm, &p->vram, &p->host_pinned,
			   &p->allocations, &p->jobs) == 6)
			d->nprocs++;
	}
	fclose(f);
}

void smi_read_driver(struct smi_state *s)
{
	s->driver_loaded = access("/sys/module/accel", F_OK) == 0;
	if (!read_line("/sys/module/accel/version", s->driver_version,
		       sizeof(s->driver_version)))
		s->driver_version[0] = '\0';
	for (int i = 0; i < s->ndevs; i++) {
		struct smi_dev *d = &s->devs[i];
		char dir[256], path[320];

		if (strcmp(d->driver, "accel") || !find_node(d, dir, sizeof(dir)))
			continue;
		d->bound = true;
		d->vram_total = read_u64(dir, "vram_size");
		d->vram_used = read_u64(dir, "vram_used");
		d->vram_free = read_u64(dir, "vram_free");
		d->queues = (unsigned int)read_u64(dir, "num_queues");
		d->caps = (unsigned int)read_u64(dir, "caps");
		snprintf(path, sizeof(path), "%s/hw_version", dir);
		if (!read_line(path, d->hw_version, sizeof(d->hw_version)))
			d->hw_version[0] = '\0';
		read_processes(d);
	}
}
