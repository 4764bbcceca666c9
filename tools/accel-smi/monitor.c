// SPDX-License-Identifier: MIT
/*
 * The views that follow the devices over time, in nvidia-smi's manner:
 * dmon (a line per device per interval), pmon (a line per process per
 * device per interval) and --query-gpu's CSV. Utilization is over the
 * interval since the sample before (usage.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "accel_smi.h"

#define MIB (1024 * 1024)

static uint64_t mib(uint64_t bytes)
{
	return smi_units(bytes, MIB);
}

/* A percentage with one decimal, "-" where it is not known yet. */
static const char *percent(double util, char *buf, size_t len)
{
	if (util < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", util * 100);
	return buf;
}

/* " render=12.5 copy=0.0": each engine's utilization */
static void print_engines(const struct smi_usage *u)
{
	char pct[16];

	for (int i = 0; i < u->nengines; i++)
		printf(" %s=%s", u->engines[i].name,
		       percent(u->engines[i].util, pct, sizeof(pct)));
	printf("%s\n", u->nengines ? "" : " -");
}

void smi_print_dmon(const struct smi_state *s, bool header)
{
	struct smi_usage engines;
	char pct[16];

	if (header)
		printf("%-5s %-12s %-12s %-10s %6s %8s  %s\n", "# dev", "driver",
		       "bus-id", "node", "busy%", "mem-MiB", "engines-%");
	for (int i = 0; i < s->ndevs; i++) {
		const struct smi_dev *d = &s->devs[i];
		double busy = smi_device_utilization(s, i, &engines);

		printf("%5d %-12.12s %-12s %-10.10s %6s %8" PRIu64 " ", i,
		       d->drm_driver[0] ? d->drm_driver : d->driver[0] ? d->driver : "-",
		       d->bdf[0] ? d->bdf : "-", d->node[0] ? d->node : "-",
		       percent(busy, pct, sizeof(pct)),
		       mib(smi_device_memory_used(s, i)));
		print_engines(&engines);
	}
	fflush(stdout);
}

/* The busiest of a process's engines, -1 if none is known. */
static double busiest(const struct smi_usage *u)
{
	double max = -1;

	for (int i = 0; i < u->nengines; i++)
		if (u->engines[i].util > max)
			max = u->engines[i].util;
	return max;
}

/*
 * A line per process and DRM device, then one per process and libaccel
 * device (from its pools; "dev" is then libaccel's name of the device).
 */
void smi_print_pmon(const struct smi_state *s, bool header)
{
	char pct[16];

	if (header) {
		printf("%-8s %6s %-16s %6s %7s %8s %9s %11s %12s  %s\n", "# dev",
		       "pid", "command", "busy%", "devmem", "hostmem", "pool-res",
		       "pool-alloc", "pool-active", "engines-%");
		printf("%-8s %6s %-16s %6s %7s %8s %9s %11s %12s\n", "# /name",
		       "", "", "", "MiB", "MiB", "MiB", "MiB", "MiB");
	}
	for (int k = 0; k < s->nprocs; k++) {
		const struct smi_proc *p = &s->procs[k];

		printf("%-8d %6d %-16.16s %6s %7" PRIu64 " %8" PRIu64
		       " %9s %11s %12s ", p->dev, p->pid, p->comm,
		       percent(busiest(&p->usage), pct, sizeof(pct)),
		       mib(smi_usage_memory(&p->usage, true)),
		       mib(smi_usage_memory(&p->usage, false)), "-", "-", "-");
		print_engines(&p->usage);
	}
	for (int k = 0; k < s->npools; k++) {
		const struct smi_pool *p = &s->pools[k];

		printf("%-8.8s %6d %-16.16s %6s %7s %8s %9" PRIu64 " %11" PRIu64
		       " %12" PRIu64 "  -\n", p->device, p->pid, p->comm, "-", "-",
		       "-", mib(p->reserved), mib(p->allocated), mib(p->active));
	}
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* --query-gpu=FIELD,... --format=csv */

struct query_field {
	const char *name;
	const char *unit;		/* "MiB", "%", or NULL */
	/* the value of device @i into @buf, without unit; false: [N/A] */
	bool (*value)(const struct smi_state *s, int i, char *buf, size_t len);
};

static bool field_index(const struct smi_state *s, int i, char *buf, size_t len)
{
	(void)s;
	snprintf(buf, len, "%d", i);
	return true;
}

static bool field_count(const struct smi_state *s, int i, char *buf, size_t len)
{
	(void)i;
	snprintf(buf, len, "%d", s->ndevs);
	return true;
}

static bool field_name(const struct smi_state *s, int i, char *buf, size_t len)
{
	const struct smi_dev *d = &s->devs[i];

	snprintf(buf, len, "%s", d->on_pci ? d->device_name : d->drm_driver);
	return buf[0];
}

static bool field_bus_id(const struct smi_state *s, int i, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s->devs[i].bdf);
	return buf[0];
}

static bool field_driver(const struct smi_state *s, int i, char *buf, size_t len)
{
	const struct smi_dev *d = &s->devs[i];

	snprintf(buf, len, "%s", d->drm_driver[0] ? d->drm_driver : d->driver);
	return buf[0];
}

static bool field_node(const struct smi_state *s, int i, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s->devs[i].node);
	return buf[0];
}

static bool field_mem_total(const struct smi_state *s, int i, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64, mib(s->devs[i].vram_total));
	return s->devs[i].bound;	/* simaccel's sysfs: others say nothing */
}

static bool field_mem_used(const struct smi_state *s, int i, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64, mib(smi_device_memory_used(s, i)));
	return !s->devs[i].on_pci || s->devs[i].bound;
}

static bool field_mem_free(const struct smi_state *s, int i, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64, s->devs[i].vram_free / MIB);
	return s->devs[i].bound;
}

static bool field_util(const struct smi_state *s, int i, char *buf, size_t len)
{
	struct smi_usage engines;
	double busy = smi_device_utilization(s, i, &engines);

	snprintf(buf, len, "%.0f", busy * 100);
	return busy >= 0;
}

static bool field_busy_time(const struct smi_state *s, int i, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64, s->devs[i].busy_time_us / 1000);
	return s->devs[i].bound;
}

static bool field_resets(const struct smi_state *s, int i, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64, s->devs[i].resets);
	return s->devs[i].bound;
}

static bool field_power_state(const struct smi_state *s, int i, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s->devs[i].power_state);
	return buf[0];
}

static bool field_processes(const struct smi_state *s, int i, char *buf, size_t len)
{
	int n = 0;

	for (int k = 0; k < s->nprocs; k++)
		n += s->procs[k].dev == i;
	snprintf(buf, len, "%d", n);
	return true;
}

static const struct query_field fields[] = {
	{ "count", NULL, field_count },
	{ "index", NULL, field_index },
	{ "name", NULL, field_name },
	{ "pci.bus_id", NULL, field_bus_id },
	{ "driver", NULL, field_driver },
	{ "node", NULL, field_node },
	{ "memory.total", "MiB", field_mem_total },
	{ "memory.used", "MiB", field_mem_used },
	{ "memory.free", "MiB", field_mem_free },
	{ "utilization.gpu", "%", field_util },
	{ "busy_time", "ms", field_busy_time },
	{ "power.state", NULL, field_power_state },
	{ "resets", NULL, field_resets },
	{ "processes", NULL, field_processes },
};

/* The field named by @name (@len characters, blanks trimmed), or NULL. */
static const struct query_field *find_field(const char *name, size_t len)
{
	while (len && (*name == ' ' || *name == '\t')) {
		name++;
		len--;
	}
	while (len && (name[len - 1] == ' ' || name[len - 1] == '\t'))
		len--;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (strlen(fields[i].name) == len && !strncmp(fields[i].name, name, len))
			return &fields[i];
	return NULL;
}

/* Each of @list's comma-separated fields in turn: @p, @n characters long. */
#define for_each_field(list, p, n) \
	for (const char *p = (list); (n = strcspn(p, ",")), *p; \
	     p += n + (p[n] == ','))

bool smi_query_fields_valid(const char *list, char *why, size_t len)
{
	size_t n;

	if (!*list) {
		snprintf(why, len, "--query-gpu names no field");
		return false;
	}
	for_each_field(list, p, n) {
		if (!find_field(p, n)) {
			snprintf(why, len, "field \"%.*s\" is not a valid field to query",
				 (int)n, p);
			return false;
		}
	}
	return true;
}

bool smi_query_needs_utilization(const char *list)
{
	size_t n;

	for_each_field(list, p, n)
		if (find_field(p, n)->value == field_util)
			return true;
	return false;
}

/* As nvidia-smi: the header has the units even when the values have none. */
void smi_print_query_gpu(const struct smi_state *s, const char *list,
			 bool header, bool units)
{
	const struct query_field *f;
	char value[128];
	size_t n;

	if (header) {
		for_each_field(list, p, n) {
			f = find_field(p, n);
			printf("%s%s", p == list ? "" : ", ", f->name);
			if (f->unit)
				printf(" [%s]", f->unit);
		}
		printf("\n");
	}
	for (int i = 0; i < s->ndevs; i++) {
		for_each_field(list, p, n) {
			f = find_field(p, n);
			printf("%s", p == list ? "" : ", ");
			if (!f->value(s, i, value, sizeof(value)))
				printf("[N/A]");
			else if (units && f->unit)
				printf("%s %s", value, f->unit);
			else
				printf("%s", value);
		}
		printf("\n");
	}
	fflush(stdout);
}
