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
	return (bytes + MIB - 1) / MIB;
}

/* Nanoseconds in whole milliseconds, rounded up so that any use shows. */
static uint64_t ms(uint64_t ns)
{
	return (ns + NS_PER_MS - 1) / NS_PER_MS;
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

static void table_row(int i, const struct smi_dev *d)
{
	char link[24], mem[48], pinned[24] = "-";

	link_text(d, link, sizeof(link));
	if (d->bound) {
		snprintf(mem, sizeof(mem), "%" PRIu64 " / %" PRIu64 " MiB",
			 mib(d->vram_used), mib(d->vram_total));
		snprintf(pinned, sizeof(pinned), "%" PRIu64 " MiB",
			 mib(d->host_pinned));
	} else {
		snprintf(mem, sizeof(mem), "not bound");
	}
	printf("| %3d | %-6s | %-12s | %-24.24s | %-11s | %19s | %11s |\n", i,
	       d->bound ? d->node : "-", d->bdf, d->device_name, link, mem,
	       pinned);
}

/* A line of text inside the processes' box. */
static void table_note(const char *text)
{
	int width = (int)strlen(proc_rule) - 1 - 4;	/* "| " ... " |\n" */

	printf("| %-*s |\n", width, text);
}

static void table_processes(const struct smi_state *s)
{
	bool any = false;

	printf("\nProcesses:\n%s", proc_rule);
	printf("| Dev | PID     | Process          | VRAM        | System      | Copy busy  |\n%s",
	       proc_rule);
	for (int i = 0; i < s->ndevs; i++) {
		const struct smi_dev *d = &s->devs[i];

		for (int k = 0; k < d->nprocs; k++) {
			const struct smi_proc *p = &d->procs[k];

			printf("| %3d | %7d | %-16.16s | %7" PRIu64 " MiB | %7" PRIu64
			       " MiB | %7" PRIu64 " ms |\n",
			       i, p->pid, p->comm, mib(p->vram), mib(p->system),
			       ms(p->engine_copy_ns));
			any = true;
		}
	}
	if (!any)
		table_note(s->all_processes ? "no process is using a device" :
					      "none of your processes is using a device");
	if (!s->all_processes)
		table_note("only your own processes are listed: root sees everyone's");
	printf("%s", proc_rule);
}

void smi_print_table(const struct smi_state *s)
{
	printf("accel-smi %s, ", ACCEL_SMI_VERSION);
	driver_line(s);
	printf("%s", dev_rule);
	printf("| Dev | Node   | Bus-Id       | Name                     | Link        | VRAM used / total   | Pinned host |\n");
	printf("%s", dev_rule);
	for (int i = 0; i < s->ndevs; i++)
		table_row(i, &s->devs[i]);
	printf("%s", dev_rule);
	table_processes(s);
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

static void query_driver_view(const struct smi_state *s,
			      const struct smi_dev *d)
{
	char a[32], b[32], c[32];

	printf("    Node                  : /dev/accel/%s\n", d->node);
	printf("    VRAM total            : %s\n", human(d->vram_total, a, sizeof(a)));
	printf("    VRAM used             : %s\n", human(d->vram_used, b, sizeof(b)));
	printf("    VRAM free             : %s\n", human(d->vram_free, c, sizeof(c)));
	printf("    Pinned host memory    : %s\n", human(d->host_pinned, a, sizeof(a)));
	printf("    Processes             : %d%s\n", d->nprocs,
	       s->all_processes ? "" : " of yours (root sees everyone's)");
	for (int k = 0; k < d->nprocs; k++) {
		const struct smi_proc *p = &d->procs[k];

		printf("        PID %-8d      : %s, VRAM %s, system memory %s, %u DRM client%s, copy engine busy %" PRIu64 " ms\n",
		       p->pid, p->comm, human(p->vram, a, sizeof(a)),
		       human(p->system, b, sizeof(b)), p->clients,
		       p->clients == 1 ? "" : "s", ms(p->engine_copy_ns));
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
		if (d->bound)
			query_driver_view(s, d);
	}
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

static void json_processes(const struct smi_dev *d)
{
	printf("\"processes\": ");
	if (!d->bound) {
		printf("null");
		return;
	}
	printf("[");
	for (int k = 0; k < d->nprocs; k++) {
		const struct smi_proc *p = &d->procs[k];

		printf("%s{\"pid\": %d, ", k ? ", " : "", p->pid);
		json_key_string("name", p->comm, true);
		printf("\"vram_bytes\": %" PRIu64 ", \"system_bytes\": %" PRIu64
		       ", \"clients\": %u, \"engine_copy_ns\": %" PRIu64 "}",
		       p->vram, p->system, p->clients, p->engine_copy_ns);
	}
	printf("]");
}

static void json_device(const struct smi_dev *d)
{
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
	json_key_string("node", d->bound ? d->node : NULL, true);
	if (d->bound)
		printf("\"memory\": {\"total_bytes\": %" PRIu64 ", \"used_bytes\": %" PRIu64
		       ", \"free_bytes\": %" PRIu64 ", \"host_pinned_bytes\": %" PRIu64 "}, ",
		       d->vram_total, d->vram_used, d->vram_free, d->host_pinned);
	else
		printf("\"memory\": null, ");
	json_processes(d);
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
		json_device(&s->devs[i]);
	}
	printf("]}\n");
}
