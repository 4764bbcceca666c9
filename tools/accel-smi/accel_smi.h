/* SPDX-License-Identifier: MIT */
/*
 * accel-smi: what it knows of each accelerator. The PCI view comes from
 * libpci; the driver's view from sysfs (/sys/class/misc/accelN) and, for
 * the processes, from debugfs.
 */
#ifndef ACCEL_SMI_H
#define ACCEL_SMI_H

#include <stdbool.h>
#include <stdint.h>

#define SMI_MAX_DEVICES 64
#define SMI_MAX_PROCS 128

struct smi_bar {
	int index;
	uint64_t addr, size;
	bool io, is64, prefetchable;
};

struct smi_proc {
	int pid;
	char comm[32];
	uint64_t vram, host_pinned;
	unsigned int allocations;
	int jobs;
};

struct smi_dev {
	/* PCI, from libpci */
	char bdf[16];			/* domain:bus:dev.fn */
	unsigned int vendor, device, subvendor, subdevice, revision;
	char vendor_name[96], device_name[96];
	char link_speed[16], link_max_speed[16];	/* "" if unknown */
	int link_width, link_max_width;			/* 0 if unknown */
	struct smi_bar bars[6];
	int nbars;
	char driver[32];		/* bound kernel driver, "" if none */

	/* the accel driver's view, when it is bound */
	bool bound;
	char node[16];			/* "accel0" */
	uint64_t vram_total, vram_used, vram_free;
	unsigned int queues;
	char hw_version[16];
	unsigned int caps;
	bool procs_known;		/* debugfs was readable */
	struct smi_proc procs[SMI_MAX_PROCS];
	int nprocs;
};

struct smi_state {
	bool driver_loaded;
	char driver_version[32];
	struct smi_dev devs[SMI_MAX_DEVICES];
	int ndevs;
};

/* pci.c: fill the PCI view of every accelerator; false if libpci failed */
bool smi_scan_pci(struct smi_state *s, char *why, int why_len);

/* driver.c: the driver's view of the devices it drives */
void smi_read_driver(struct smi_state *s);

/* output.c */
void smi_print_table(const struct smi_state *s);
void smi_print_query(const struct smi_state *s);
void smi_print_json(const struct smi_state *s);

#endif /* ACCEL_SMI_H */
