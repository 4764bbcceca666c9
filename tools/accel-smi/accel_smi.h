/* SPDX-License-Identifier: MIT */
/*
 * accel-smi: what it knows of each accelerator. The PCI view comes from
 * libpci; simaccel.ko's view from sysfs (/sys/class/accel/accelN/device/);
 * the processes, on simaccel's devices and on every other DRM driver's,
 * from DRM fdinfo (/proc/PID/fdinfo/FD, Documentation/gpu/drm-usage-stats.rst);
 * libaccel's pools from the files its processes publish (ACCEL_STATS_DIR).
 */
#ifndef ACCEL_SMI_H
#define ACCEL_SMI_H

#include <stdbool.h>
#include <stdint.h>

#define SMI_DRIVER "simaccel"
#define SMI_MAX_DEVICES 64
#define SMI_MAX_PROCS 512	/* (process, device) pairs, all devices */
#define SMI_MAX_CLIENTS 1024	/* DRM clients (open files), all devices */
#define SMI_MAX_ENGINES 12	/* per client: drm-engine-<name> ... */
#define SMI_MAX_REGIONS 10	/* per client: drm-total-<region> ... */
#define SMI_MAX_POOLS 128	/* libaccel devices, all processes */
#define SMI_NAME_LEN 24

struct smi_bar {
	int index;
	uint64_t addr, size;
	bool io, is64, prefetchable;
};

/* One engine of a DRM client: drm-engine-, -capacity-, -cycles-, ... */
struct smi_engine {
	char name[SMI_NAME_LEN];	/* first: see fdinfo.c's named_entry */
	uint64_t busy_ns;		/* drm-engine-<name> */
	uint64_t cycles;		/* drm-cycles-<name> */
	uint64_t total_cycles;		/* drm-total-cycles-<name> */
	uint64_t maxfreq_hz;		/* drm-maxfreq-<name> */
	unsigned int capacity;		/* drm-engine-capacity-<name>; 0: 1 */
	bool has_ns, has_cycles, has_total_cycles;
	double util;			/* busy fraction, -1 if unknown */
};

/* One memory region of a DRM client, in bytes. */
struct smi_region {
	char name[SMI_NAME_LEN];	/* first: see fdinfo.c's named_entry */
	uint64_t total, shared, resident, purgeable, active;
	uint64_t legacy;		/* drm-memory-<region>: resident */
	bool has_total, has_resident, has_legacy;
};

struct smi_usage {
	struct smi_engine engines[SMI_MAX_ENGINES];
	int nengines;
	struct smi_region regions[SMI_MAX_REGIONS];
	int nregions;
};

/* What one process holds on one device, summed over its DRM clients. */
struct smi_proc {
	int dev;			/* index in smi_state.devs */
	int pid;
	char comm[32];
	char client_name[32];		/* drm-client-name, "" if none */
	unsigned int clients;		/* distinct drm-client-id */
	struct smi_usage usage;
};

/* libaccel's pools in one process on one of its devices (ACCEL_STATS_DIR). */
struct smi_pool {
	int pid;
	char comm[32];
	char device[SMI_NAME_LEN];	/* libaccel's name: "cpu:0", "accel:1" */
	uint64_t reserved, allocated, active;
};

struct smi_dev {
	/* PCI, from libpci: simaccel's devices (on_pci) */
	bool on_pci;
	char bdf[16];			/* domain:bus:dev.fn, or drm-pdev */
	unsigned int vendor, device, subvendor, subdevice, revision;
	char vendor_name[96], device_name[96];
	char link_speed[16], link_max_speed[16];	/* "" if unknown */
	int link_width, link_max_width;			/* 0 if unknown */
	struct smi_bar bars[6];
	int nbars;
	char driver[32];		/* bound kernel driver, "" if none */

	/* the simaccel driver's view, when it is bound */
	bool bound;
	char node[16];			/* "accel0", "renderD128", "" if unknown */
	uint64_t vram_total, vram_used, vram_free, host_pinned;
	uint64_t busy_time_us;		/* the copy engines', since probe */
	uint64_t resets;		/* whole-device resets since probe */
	char power_state[16];		/* the PCI core's: "D0", "D3hot"; "" if unknown */
	char runtime_pm[16];		/* "active", "suspended"...; "" if unknown */

	/* from DRM fdinfo: the driver's name; "" if no client was seen */
	char drm_driver[32];
};

/*
 * Sums and units that stop at the largest figure rather than wrap: a
 * fdinfo file may say anything up to 64 bits.
 */
static inline uint64_t smi_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* @x in whole @unit, rounded up so that any use shows */
static inline uint64_t smi_units(uint64_t x, uint64_t unit)
{
	return x / unit + (x % unit != 0);
}

struct smi_state {
	bool driver_loaded;
	char driver_version[32];	/* "" if the module has none */
	bool all_processes;		/* root: every process's fdinfo is readable */
	uint64_t time_ns;		/* when the processes were read */
	struct smi_dev devs[SMI_MAX_DEVICES];
	int ndevs;
	struct smi_proc procs[SMI_MAX_PROCS];
	int nprocs;
	/* clients already counted: dup'ed and inherited fds share one */
	struct { int dev; uint64_t id; } clients[SMI_MAX_CLIENTS];
	int nclients;
	struct smi_pool pools[SMI_MAX_POOLS];
	int npools;
	bool truncated;			/* a table was full: some were left out */
};

/* pci.c: fill the PCI view of every accelerator; false if libpci failed */
bool smi_scan_pci(struct smi_state *s, char *why, int why_len);

/* driver.c: the driver's view of the devices it drives (sysfs) */
void smi_read_driver(struct smi_state *s);

/* fdinfo.c: the processes that have a DRM device open, under @proc */
void smi_read_processes(struct smi_state *s, const char *proc);
/* A DRM fdinfo size ("4096 KiB", "4 MiB", "12"): false if malformed. */
bool smi_parse_size(const char *text, uint64_t *bytes);
/* The first line of a small file, without its newline; false if unreadable. */
bool smi_read_line(const char *path, char *buf, size_t len);
/* The numeric entries of @dir, sorted, into *@pids (to free); their count. */
int smi_list_pids(const char *dir, int **pids);
/* @pid's command name under @proc, "?" if gone */
void smi_read_comm(const char *proc, int pid, char *comm, size_t len);

/* pools.c: libaccel's published pool figures of the live processes */
void smi_read_pools(struct smi_state *s, const char *proc);

/* usage.c: what a usage adds up to, and utilization between two samples */
uint64_t smi_region_bytes(const struct smi_region *r);
bool smi_device_memory(const struct smi_region *r);
uint64_t smi_usage_memory(const struct smi_usage *u, bool device);
uint64_t smi_usage_busy_ns(const struct smi_usage *u);
const struct smi_engine *smi_find_engine(const struct smi_usage *u,
					 const char *name);
void smi_compute_utilization(struct smi_state *cur,
			     const struct smi_state *prev);
/* The busiest engine's utilization on @dev (0..1), -1 if unknown. */
double smi_device_utilization(const struct smi_state *s, int dev,
			      struct smi_usage *engines);
uint64_t smi_device_memory_used(const struct smi_state *s, int dev);

/* output.c */
void smi_print_table(const struct smi_state *s);
void smi_print_query(const struct smi_state *s);
void smi_print_json(const struct smi_state *s);

/* monitor.c: dmon, pmon and --query-gpu */
void smi_print_dmon(const struct smi_state *s, bool header);
void smi_print_pmon(const struct smi_state *s, bool header);
/* false, with the reason, if a field of @fields is unknown */
bool smi_query_fields_valid(const char *fields, char *why, size_t len);
bool smi_query_needs_utilization(const char *fields);
void smi_print_query_gpu(const struct smi_state *s, const char *fields,
			 bool header, bool units);

#endif /* ACCEL_SMI_H */
