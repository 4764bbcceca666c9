/* SPDX-License-Identifier: MIT */
/*
 * accel-smi: what it knows of each accelerator. The PCI view comes from
 * libpci; the driver's view from simaccel.ko: the device's totals from
 * sysfs (/sys/class/accel/accelN/device/), the processes from DRM fdinfo
 * (/proc/PID/fdinfo/FD, Documentation/gpu/drm-usage-stats.rst).
 */
#ifndef ACCEL_SMI_H
#define ACCEL_SMI_H

#include <stdbool.h>
#include <stdint.h>

#define SMI_DRIVER "simaccel"
#define SMI_MAX_DEVICES 64
#define SMI_MAX_PROCS 128
#define SMI_MAX_CLIENTS 1024	/* DRM clients (open files) per device */

struct smi_bar {
	int index;
	uint64_t addr, size;
	bool io, is64, prefetchable;
};

/* What one process holds on one device, summed over its DRM clients. */
struct smi_proc {
	int pid;
	char comm[32];
	uint64_t vram, system;		/* drm-total-vram, drm-total-system */
	uint64_t engine_copy_ns;	/* drm-engine-copy: its finished jobs' time */
	unsigned int clients;		/* distinct drm-client-id */
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

	/* the simaccel driver's view, when it is bound */
	bool bound;
	char node[16];			/* "accel0" */
	uint64_t vram_total, vram_used, vram_free, host_pinned;
	struct smi_proc procs[SMI_MAX_PROCS];
	int nprocs;
	/* clients already counted: dup'ed and inherited fds share one */
	uint64_t client_ids[SMI_MAX_CLIENTS];
	int nclients;
};

struct smi_state {
	bool driver_loaded;
	char driver_version[32];	/* "" if the module has none */
	bool all_processes;		/* root: every process's fdinfo is readable */
	struct smi_dev devs[SMI_MAX_DEVICES];
	int ndevs;
};

/* pci.c: fill the PCI view of every accelerator; false if libpci failed */
bool smi_scan_pci(struct smi_state *s, char *why, int why_len);

/* driver.c: the driver's view of the devices it drives (sysfs) */
void smi_read_driver(struct smi_state *s);

/* fdinfo.c: the processes that have a bound device open */
void smi_read_processes(struct smi_state *s);
/* A DRM fdinfo size ("4096 KiB", "4 MiB", "12"): false if malformed. */
bool smi_parse_size(const char *text, uint64_t *bytes);

/* output.c */
void smi_print_table(const struct smi_state *s);
void smi_print_query(const struct smi_state *s);
void smi_print_json(const struct smi_state *s);

#endif /* ACCEL_SMI_H */
