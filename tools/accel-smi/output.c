// SPDX-License-Identifier: MIT
/* accel-smi's three outputs: the table, the detailed query, JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "accel_smi.h"

#define MIB (1024 * 1024)
#define NS_PER_MS 1000000

/* Bytes in whole MiB, rounded up so that any use shows. */
static uint64_t mib(uint64_t bytes)
{
	return smi_units(bytes, MIB);
}

/* Nanoseconds in whole milliseconds, rounded up so that any use shows. */
static uint64_t ms(uint64_t ns)
{
	return smi_units(ns, NS_PER_MS);
}

/* A size in the largest unit that keeps it whole: "4 KiB", "256 MiB". */
static const char *human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (u < 4 && bytes && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", bytes, units[u]);
	return buf;
}

static void link_text(const struct smi_dev *d, char *buf, size_t len)
{
	if (d->link_speed[0])
		snprintf(buf, len, "%s x%d", d->link_speed, d->link_width);
	else
		snprintf(buf, len, "n/a");
}

static void driver_line(const struct smi_state *s)
{
	if (!s->driver_loaded)
		printf("driver " SMI_DRIVER ": not loaded\n");
	else if (s->driver_version[0])
		printf("driver " SMI_DRIVER " %s (loaded)\n", s->driver_version);
	else
		printf("driver " SMI_DRIVER " (loaded, the module has no version)\n");
}

/* ------------------------------------------------------------------ */
/* The table */

static const char dev_rule[] =
	"+-----+--------+--------------+--------------------------+-------------+---------------------+-------------+\n";
static const char proc_rule[] =
	"+-----+---------+------------------+-------------+-------------+------------+\n";

/* A device's name: the PCI name, or its DRM driver's for the others. */
static const char *dev_name(const struct smi_dev *d)
{
	return d->on_pci ? d->device_name : d->drm_driver;
}

static const char *or_dash(const char *s)
{
	return s[0] ? s : "-";
}

static void table_row(const struct smi_state *s, int i)
{
	const struct smi_dev *d = &s->devs[i];
	char link[24], mem[48], pinned[24] = "-";

	link_text(d, link, sizeof(link));
	if (!d->on_pci) {
		/* another driver's: what its clients hold, of a total unknown */
		snprintf(mem, sizeof(mem), "%" PRIu64 " MiB / n/a",
			 mib(smi_device_memory_used(s, i)));
	} else if (d->bound) {
		snprintf(mem, sizeof(mem), "%" PRIu64 " / %" PRIu64 " MiB",
			 mib(d->vram_used), mib(d->vram_total));
		snprintf(pinned, sizeof(pinned), "%" PRIu64 " MiB",
			 mib(d->host_pinned));
	} else {
		snprintf(mem, sizeof(mem), "not bound");
	}
	printf("| %3d | %-6.10s | %-12s | %-24.24s | %-11s | %19s | %11s |\n", i,
	       d->on_pci && !d->bound ? "-" : or_dash(d->node), or_dash(d->bdf),
	       dev_name(d), link, mem, pinned);
}

/* A line of text inside the processes' box. */
static void table_note(const char *text)
{
	int width = (int)strlen(proc_rule) - 1 - 4;	/* "| " ... " |\n" */

	printf("| %-*s |\n", width, text);
}

/* A box's title, then its column names between two rules */
static void table_head(const char *title, const char *rule, const char *columns)
{
	printf("\n%s:\n%s%s\n%s", title, rule, columns, rule);
}

static void table_processes(const struct smi_state *s)
{
	bool any = false;

	table_head("Processes", proc_rule,
		   "| Dev | PID     | Process          | Device mem  | Host mem    | Busy       |");
	for (int k = 0; k < s->nprocs; k++) {
		const struct smi_proc *p = &s->procs[k];

		printf("| %3d | %7d | %-16.16s | %7" PRIu64 " MiB | %7" PRIu64
		       " MiB | %7" PRIu64 " ms |\n",
		       p->dev, p->pid, p->comm,
		       mib(smi_usage_memory(&p->usage, true)),
		       mib(smi_usage_memory(&p->usage, false)),
		       ms(smi_usage_busy_ns(&p->usage)));
		any = true;
	}
	if (!any)
		table_note(s->all_processes ? "no process is using a device" :
					      "none of your processes is using a device");
	if (!s->all_processes)
		table_note("only your own processes are listed: root sees everyone's");
	printf("%s", proc_rule);
}

static const char pool_rule[] =
	"+---------+------------------+----------+-------------+-------------+-------------+\n";

/* libaccel's pools, where processes publish them (ACCEL_STATS_DIR) */
static void table_pools(const struct smi_state *s)
{
	if (!s->npools)
		return;
	table_head("libaccel pools", pool_rule,
		   "| PID     | Process          | Device   | Reserved    | Allocated   | Active      |");
	for (int k = 0; k < s->npools; k++) {
		const struct smi_pool *p = &s->pools[k];

		printf("| %7d | %-16.16s | %-8.8s | %7" PRIu64 " MiB | %7" PRIu64
		       " MiB | %7" PRIu64 " MiB |\n", p->pid, p->comm, p->device,
		       mib(p->reserved), mib(p->allocated), mib(p->active));
	}
	printf("%s", pool_rule);
}

void smi_print_table(const struct smi_state *s)
{
	printf("accel-smi %s, ", ACCEL_SMI_VERSION);
	driver_line(s);
	printf("%s", dev_rule);
	printf("| Dev | Node   | Bus-Id       | Name                     | Link        | VRAM used / total   | Pinned host |\n");
	printf("%s", dev_rule);
	for (int i = 0; i < s->ndevs; i++)
		table_row(s, i);
	printf("%s", dev_rule);
	table_processes(s);
	table_pools(s);
}

/* ------------------------------------------------------------------ */
/* The query (-q) */

static void query_bar(const struct smi_bar *b)
{
	char size[32];

	printf("    BAR%d                  : %s at 0x%" PRIx64 ", %s", b->index,
	       b->io ? "I/O ports" : "memory", b->addr,
	       human(b->size, size, sizeof(size)));
	if (!b->io)
		printf(", %s, %sprefetchable", b->is64 ? "64-bit" : "32-bit",
		       b->prefetchable ? "" : "non-");
	printf("\n");
}

static void query_node(const struct smi_dev *d)
{
	if (d->node[0])
		printf("    Node                  : /dev/%s/%s\n",
		       strncmp(d->node, "accel", 5) ? "dri" : "accel", d->node);
}

/* The processes on device @dev, their memory and each engine's busy time */
static void query_processes(const struct smi_state *s, int dev)
{
	char a[32], b[32];
	int n = 0;

	for (int k = 0; k < s->nprocs; k++)
		n += s->procs[k].dev == dev;
	printf("    Processes             : %d%s\n", n,
	       s->all_processes ? "" : " of yours (root sees everyone's)");
	for (int k = 0; k < s->nprocs; k++) {
		const struct smi_proc *p = &s->procs[k];

		if (p->dev != dev)
			continue;
		printf("        PID %-8d      : %s%s%s%s, VRAM %s, system memory %s, %u DRM client%s, engines busy:",
		       p->pid, p->comm, p->client_name[0] ? " (client " : "",
		       p->client_name, p->client_name[0] ? ")" : "",
		       human(smi_usage_memory(&p->usage, true), a, sizeof(a)),
		       human(smi_usage_memory(&p->usage, false), b, sizeof(b)),
		       p->clients, p->clients == 1 ? "" : "s");
		for (int i = 0; i < p->usage.nengines; i++)
			printf(" %s %" PRIu64 " ms", p->usage.engines[i].name,
			       ms(p->usage.engines[i].busy_ns));
		printf("%s\n", p->usage.nengines ? "" : " none");
	}
}

static void query_driver_view(const struct smi_dev *d)
{
	char a[32], b[32], c[32];

	query_node(d);
	printf("    VRAM total            : %s\n", human(d->vram_total, a, sizeof(a)));
	printf("    VRAM used             : %s\n", human(d->vram_used, b, sizeof(b)));
	printf("    VRAM free             : %s\n", human(d->vram_free, c, sizeof(c)));
	printf("    Pinned host memory    : %s\n", human(d->host_pinned, a, sizeof(a)));
	printf("    Busy time             : %" PRIu64 " ms\n", d->busy_time_us / 1000);
	printf("    Resets                : %" PRIu64 "\n", d->resets);
	printf("    Power state           : %s (runtime PM: %s)\n",
	       d->power_state[0] ? d->power_state : "unknown",
	       d->runtime_pm[0] ? d->runtime_pm : "unknown");
}

/* A device of another DRM driver, known from its clients' fdinfo only */
static void query_drm_device(const struct smi_state *s, int i)
{
	const struct smi_dev *d = &s->devs[i];
	char a[32];

	printf("\nDevice %d, %s\n", i, d->bdf[0] ? d->bdf : "no PCI address");
	printf("    DRM driver            : %s\n", d->drm_driver);
	query_node(d);
	printf("    Device memory used    : %s (by its clients)\n",
	       human(smi_device_memory_used(s, i), a, sizeof(a)));
	query_processes(s, i);
}

static void query_pools(const struct smi_state *s)
{
	char a[32], b[32], c[32];

	if (s->npools)
		printf("\nlibaccel pools (ACCEL_STATS_DIR)\n");
	for (int k = 0; k < s->npools; k++) {
		const struct smi_pool *p = &s->pools[k];

		printf("    PID %-8d          : %s, %s: reserved %s, allocated %s, active %s\n",
		       p->pid, p->comm, p->device, human(p->reserved, a, sizeof(a)),
		       human(p->allocated, b, sizeof(b)), human(p->active, c, sizeof(c)));
	}
}

void smi_print_query(const struct smi_state *s)
{
	char link[24], max[24];

	printf("==============ACCEL-SMI QUERY==============\n");
	printf("accel-smi version         : %s\n", ACCEL_SMI_VERSION);
	printf("Driver                    : ");
	driver_line(s);
	printf("Attached devices          : %d\n", s->ndevs);
	for (int i = 0; i < s->ndevs; i++) {
		const struct smi_dev *d = &s->devs[i];

		if (!d->on_pci) {
			query_drm_device(s, i);
			continue;
		}
		printf("\nDevice %d, %s\n", i, d->bdf);
		printf("    Vendor                : %s [%04x]\n", d->vendor_name, d->vendor);
		printf("    Device                : %s [%04x]\n", d->device_name, d->device);
		printf("    Subsystem             : %04x:%04x\n", d->subvendor, d->subdevice);
		printf("    Revision              : %#04x\n", d->revision);
		link_text(d, link, sizeof(link));
		if (d->link_max_speed[0])
			snprintf(max, sizeof(max), "%s x%d", d->link_max_speed,
				 d->link_max_width);
		else
			snprintf(max, sizeof(max), "n/a");
		printf("    PCIe link             : %s (max %s)\n", link, max);
		for (int k = 0; k < d->nbars; k++)
			query_bar(&d->bars[k]);
		printf("    Kernel driver         : %s\n", d->driver[0] ? d->driver : "none");
		if (!d->bound)
			continue;
		query_driver_view(d);
		query_processes(s, i);
	}
	query_pools(s);
}

/* ------------------------------------------------------------------ */
/* JSON (--json) */

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_key_string(const char *key, const char *value, bool comma)
{
	printf("\"%s\": ", key);
	if (value && value[0])
		json_string(value);
	else
		printf("null");
	printf("%s", comma ? ", " : "");
}

static void json_bars(const struct smi_dev *d)
{
	printf("\"bars\": [");
	for (int k = 0; k < d->nbars; k++) {
		const struct smi_bar *b = &d->bars[k];

		printf("%s{\"index\": %d, \"type\": \"%s\", \"address\": %" PRIu64
		       ", \"size\": %" PRIu64 ", \"64bit\": %s, \"prefetchable\": %s}",
		       k ? ", " : "", b->index, b->io ? "io" : "memory", b->addr,
		       b->size, b->is64 ? "true" : "false",
		       b->prefetchable ? "true" : "false");
	}
	printf("], ");
}

/* {"render": 12, ...}: each engine's busy time, each region's bytes */
static void json_usage(const struct smi_usage *u)
{
	printf("\"engines_ns\": {");
	for (int i = 0; i < u->nengines; i++) {
		printf("%s", i ? ", " : "");
		json_string(u->engines[i].name);
		printf(": %" PRIu64, u->engines[i].busy_ns);
	}
	printf("}, \"memory_bytes\": {");
	for (int i = 0; i < u->nregions; i++) {
		printf("%s", i ? ", " : "");
		json_string(u->regions[i].name);
		printf(": %" PRIu64, smi_region_bytes(&u->regions[i]));
	}
	printf("}");
}

static void json_processes(const struct smi_state *s, int dev)
{
	const struct smi_engine *copy;
	bool first = true;

	printf("\"processes\": ");
	if (s->devs[dev].on_pci && !s->devs[dev].bound) {
		printf("null");
		return;
	}
	printf("[");
	for (int k = 0; k < s->nprocs; k++) {
		const struct smi_proc *p = &s->procs[k];

		if (p->dev != dev)
			continue;
		copy = smi_find_engine(&p->usage, "copy");
		printf("%s{\"pid\": %d, ", first ? "" : ", ", p->pid);
		json_key_string("name", p->comm, true);
		/* the keys older versions printed first, in their order */
		printf("\"vram_bytes\": %" PRIu64 ", \"system_bytes\": %" PRIu64
		       ", \"clients\": %u, \"engine_copy_ns\": %" PRIu64 ", ",
		       smi_usage_memory(&p->usage, true),
		       smi_usage_memory(&p->usage, false), p->clients,
		       copy ? copy->busy_ns : 0);
		json_key_string("client_name", p->client_name, true);
		json_usage(&p->usage);
		printf("}");
		first = false;
	}
	printf("]");
}

static void json_pools(const struct smi_state *s)
{
	printf("\"libaccel_pools\": [");
	for (int k = 0; k < s->npools; k++) {
		const struct smi_pool *p = &s->pools[k];

		printf("%s{\"pid\": %d, ", k ? ", " : "", p->pid);
		json_key_string("name", p->comm, true);
		json_key_string("device", p->device, true);
		printf("\"reserved_bytes\": %" PRIu64 ", \"allocated_bytes\": %" PRIu64
		       ", \"active_bytes\": %" PRIu64 "}", p->reserved, p->allocated,
		       p->active);
	}
	printf("]");
}

static void json_device(const struct smi_state *s, int i)
{
	const struct smi_dev *d = &s->devs[i];

	printf("{");
	json_key_string("bus_id", d->bdf, true);
	printf("\"vendor_id\": %u, \"device_id\": %u, \"subsystem_vendor_id\": %u, "
	       "\"subsystem_id\": %u, \"revision\": %u, ", d->vendor, d->device,
	       d->subvendor, d->subdevice, d->revision);
	json_key_string("vendor", d->vendor_name, true);
	json_key_string("device", d->device_name, true);
	printf("\"link\": {");
	json_key_string("speed", d->link_speed, true);
	printf("\"width\": %d, ", d->link_width);
	json_key_string("max_speed", d->link_max_speed, true);
	printf("\"max_width\": %d}, ", d->link_max_width);
	json_bars(d);
	json_key_string("kernel_driver", d->driver, true);
	json_key_string("drm_driver", d->drm_driver, true);
	json_key_string("node", !d->on_pci || d->bound ? d->node : NULL, true);
	if (d->bound)
		printf("\"memory\": {\"total_bytes\": %" PRIu64 ", \"used_bytes\": %" PRIu64
		       ", \"free_bytes\": %" PRIu64 ", \"host_pinned_bytes\": %" PRIu64 "}, "
		       "\"busy_time_us\": %" PRIu64 ", \"resets\": %" PRIu64 ", ",
		       d->vram_total, d->vram_used, d->vram_free, d->host_pinned,
		       d->busy_time_us, d->resets);
	else
		printf("\"memory\": null, \"busy_time_us\": null, \"resets\": null, ");
	json_key_string("power_state", d->power_state[0] ? d->power_state : NULL, true);
	json_processes(s, i);
	printf("}");
}

void smi_print_json(const struct smi_state *s)
{
	printf("{\"version\": \"%s\", \"driver\": {\"loaded\": %s, ",
	       ACCEL_SMI_VERSION, s->driver_loaded ? "true" : "false");
	json_key_string("name", SMI_DRIVER, true);
	json_key_string("version", s->driver_version, false);
	printf("}, \"all_processes\": %s, \"devices\": [",
	       s->all_processes ? "true" : "false");
	for (int i = 0; i < s->ndevs; i++) {
		printf("%s", i ? ", " : "");
		json_device(s, i);
	}
	printf("], ");
	json_pools(s);
	printf("}\n");
}
