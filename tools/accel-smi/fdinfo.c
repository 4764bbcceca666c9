// SPDX-License-Identifier: MIT
/*
 * The processes using DRM devices, the standard DRM way (as gputop, nvtop
 * and intel_gpu_top find them; Documentation/gpu/drm-usage-stats.rst):
 * every open DRM file's /proc/PID/fdinfo/FD names its driver (drm-driver),
 * its device (drm-pdev, the PCI address) and its client (drm-client-id,
 * one per open()), with the memory and engine time of that client. This
 * holds for every driver, simaccel or not: render and primary nodes
 * (/dev/dri, major 226) as accel nodes (/dev/accel, major 261).
 *
 * A user reads the fdinfo of their own processes only; root reads all.
 * Files come and go while they are read: whatever cannot be read, or
 * does not parse, is skipped.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "accel_smi.h"

#define DRM_MAJOR 226
#define ACCEL_MAJOR 261

/* One DRM client: the keys of one fdinfo file. */
struct drm_client {
	char driver[32];
	char pdev[16];			/* as smi_dev.bdf: a longer one is bad */
	char name[32];			/* drm-client-name */
	bool has_client_id;
	uint64_t client_id;
	struct smi_usage usage;
};

bool smi_read_line(const char *path, char *buf, size_t len)
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

void smi_read_comm(const char *proc, int pid, char *comm, size_t len)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%d/comm", proc, pid);
	if (!smi_read_line(path, comm, len))
		snprintf(comm, len, "?");
}

/*
 * The unsigned decimal number @text begins with, and in @rest what follows
 * it past blanks; false if there is none, or it is past 64 bits.
 */
static bool parse_number(const char *text, uint64_t *n, const char **rest)
{
	char *end;

	if (!isdigit((unsigned char)*text))
		return false;
	errno = 0;
	*n = strtoull(text, &end, 10);
	if (errno)
		return false;
	while (*end == ' ' || *end == '\t')
		end++;
	*rest = end;
	return true;
}

/* @text is a number times the multiplier of one of @units; false if not. */
static bool parse_with_unit(const char *text, const char *const *names,
			    const uint64_t *mult, size_t nunits, uint64_t *v)
{
	const char *unit;
	uint64_t n;

	if (!parse_number(text, &n, &unit))
		return false;
	for (size_t i = 0; i < nunits; i++) {
		if (strcmp(unit, names[i]))
			continue;
		if (n > UINT64_MAX / mult[i])
			return false;
		*v = n * mult[i];
		return true;
	}
	return false;
}

bool smi_parse_size(const char *text, uint64_t *bytes)
{
	static const char *const names[] = { "", "B", "KiB", "MiB", "GiB", "TiB" };
	static const uint64_t mult[] = { 1, 1, 1ull << 10, 1ull << 20,
					 1ull << 30, 1ull << 40 };

	return parse_with_unit(text, names, mult, 6, bytes);
}

/* "123 ns" (the unit drm-engine-<name> is given in), or a bare number */
static bool parse_ns(const char *text, uint64_t *ns)
{
	static const char *const names[] = { "", "ns" };
	static const uint64_t mult[] = { 1, 1 };

	return parse_with_unit(text, names, mult, 2, ns);
}

/* drm-maxfreq-<name>: <uint> [Hz|KHz|MHz] */
static bool parse_hz(const char *text, uint64_t *hz)
{
	static const char *const names[] = { "", "Hz", "KHz", "kHz", "MHz" };
	static const uint64_t mult[] = { 1, 1, 1000, 1000, 1000000 };

	return parse_with_unit(text, names, mult, 5, hz);
}

static bool parse_plain(const char *text, uint64_t *n)
{
	const char *rest;

	return parse_number(text, n, &rest) && !*rest;
}

/* A name in a key ("render" in drm-engine-render): not empty, it fits. */
static bool good_name(const char *name)
{
	return *name && strlen(name) < SMI_NAME_LEN;
}

/*
 * The entry called @name of @table, @n entries of @size bytes that each
 * begin with their name; added, zeroed, if new (@added says so). NULL if
 * the name is bad or the table full.
 */
static void *named_entry(void *table, int *n, int max, size_t size,
			 const char *name, bool *added)
{
	char *entry = table;

	*added = false;
	if (!good_name(name))
		return NULL;
	for (int i = 0; i < *n; i++, entry += size)
		if (!strcmp(entry, name))
			return entry;
	if (*n == max)
		return NULL;
	(*n)++;
	memset(entry, 0, size);
	snprintf(entry, SMI_NAME_LEN, "%s", name);
	*added = true;
	return entry;
}

static struct smi_engine *engine(struct smi_usage *u, const char *name)
{
	bool added;
	struct smi_engine *e = named_entry(u->engines, &u->nengines,
					   SMI_MAX_ENGINES, sizeof(*e), name,
					   &added);

	if (added)
		e->util = -1;
	return e;
}

static struct smi_region *region(struct smi_usage *u, const char *name)
{
	bool added;

	return named_entry(u->regions, &u->nregions, SMI_MAX_REGIONS,
			   sizeof(struct smi_region), name, &added);
}

/* @key starts with @prefix: what follows it, else NULL. */
static const char *after(const char *key, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(key, prefix, n) ? NULL : key + n;
}

/* drm-engine-*, drm-cycles-*, ...: false if @key is none of them. */
static bool parse_engine_key(const char *key, const char *value,
			     struct smi_usage *u)
{
	struct smi_engine *e;
	const char *name;
	uint64_t v;

	/* the longer prefixes first: drm-engine-capacity- is drm-engine- too */
	if ((name = after(key, "drm-engine-capacity-"))) {
		if (parse_plain(value, &v) && v && v <= 1024 && (e = engine(u, name)))
			e->capacity = (unsigned int)v;
	} else if ((name = after(key, "drm-engine-"))) {
		if (parse_ns(value, &v) && (e = engine(u, name))) {
			e->busy_ns = v;
			e->has_ns = true;
		}
	} else if ((name = after(key, "drm-total-cycles-"))) {
		if (parse_plain(value, &v) && (e = engine(u, name))) {
			e->total_cycles = v;
			e->has_total_cycles = true;
		}
	} else if ((name = after(key, "drm-cycles-"))) {
		if (parse_plain(value, &v) && (e = engine(u, name))) {
			e->cycles = v;
			e->has_cycles = true;
		}
	} else if ((name = after(key, "drm-maxfreq-"))) {
		if (parse_hz(value, &v) && (e = engine(u, name)))
			e->maxfreq_hz = v;
	} else {
		return false;
	}
	return true;
}

/* drm-total-<region>, drm-shared-, ...: the memory stats of a region. */
static void parse_memory_key(const char *key, const char *value,
			     struct smi_usage *u)
{
	static const struct { const char *prefix; size_t field; } keys[] = {
		{ "drm-total-", offsetof(struct smi_region, total) },
		{ "drm-shared-", offsetof(struct smi_region, shared) },
		{ "drm-resident-", offsetof(struct smi_region, resident) },
		{ "drm-purgeable-", offsetof(struct smi_region, purgeable) },
		{ "drm-active-", offsetof(struct smi_region, active) },
		{ "drm-memory-", offsetof(struct smi_region, legacy) },
	};
	struct smi_region *r;
	const char *name;
	uint64_t bytes;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		name = after(key, keys[i].prefix);
		if (!name)
			continue;
		if (!smi_parse_size(value, &bytes) || !(r = region(u, name)))
			return;
		*(uint64_t *)((char *)r + keys[i].field) = bytes;
		r->has_total |= keys[i].field == offsetof(struct smi_region, total);
		r->has_resident |= keys[i].field == offsetof(struct smi_region, resident);
		r->has_legacy |= keys[i].field == offsetof(struct smi_region, legacy);
		return;
	}
}

static void copy_string(char *dst, size_t len, const char *value)
{
	if (strlen(value) < len)
		snprintf(dst, len, "%s", value);
}

/* One "key:<whitespace>value" line into @c; other keys are ignored. */
static void parse_line(char *line, struct drm_client *c)
{
	char *value = strchr(line, ':');
	size_t end;

	if (!value)
		return;
	*value++ = '\0';
	value += strspn(value, " \t");
	end = strlen(value);
	while (end && isspace((unsigned char)value[end - 1]))
		value[--end] = '\0';
	if (!*value || strpbrk(line, " \t"))
		return;		/* no value, or a key with blanks: not DRM's */

	if (!strcmp(line, "drm-driver"))
		copy_string(c->driver, sizeof(c->driver), value);
	else if (!strcmp(line, "drm-pdev"))
		copy_string(c->pdev, sizeof(c->pdev), value);
	else if (!strcmp(line, "drm-client-name"))
		copy_string(c->name, sizeof(c->name), value);
	else if (!strcmp(line, "drm-client-id"))
		c->has_client_id = parse_plain(value, &c->client_id);
	else if (!parse_engine_key(line, value, &c->usage))
		parse_memory_key(line, value, &c->usage);
}

/* False if the file is unreadable (not ours, or closed meanwhile). */
static bool read_fdinfo(const char *path, struct drm_client *c)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return false;
	memset(c, 0, sizeof(*c));
	/* whole lines, however long: a piece of one is no line */
	while (getline(&line, &cap, f) >= 0)
		parse_line(line, c);
	free(line);
	fclose(f);
	return true;
}

/*
 * What the fd @path (/proc/PID/fd/N) is: 1 a DRM node, whose name goes to
 * @node; 0 something else; -1 unknown (it cannot be stat'ed: closed, or
 * a fake tree), when only its fdinfo can tell.
 */
static int drm_node(const char *path, char *node, size_t len)
{
	struct stat st;
	unsigned int minor;

	node[0] = '\0';
	if (stat(path, &st))
		return -1;
	if (!S_ISCHR(st.st_mode))
		return 0;
	minor = minor(st.st_rdev);
	switch (major(st.st_rdev)) {
	case ACCEL_MAJOR:
		snprintf(node, len, "accel%u", minor);
		return 1;
	case DRM_MAJOR:
		/* DRM's minors: primary nodes from 0, render nodes from 128 */
		snprintf(node, len, minor >= 128 ? "renderD%u" : "card%u", minor);
		return 1;
	default:
		return 0;
	}
}

/*
 * The device of client @c, seen through @node: the one of its drm-pdev,
 * or, without one, of its driver and node; added if new. -1 if the table
 * is full.
 */
static int device_of(struct smi_state *s, const struct drm_client *c,
		     const char *node)
{
	struct smi_dev *d;

	for (int i = 0; i < s->ndevs; i++) {
		d = &s->devs[i];
		if (c->pdev[0] ? strcmp(d->bdf, c->pdev) :
				 d->bdf[0] || strcmp(d->drm_driver, c->driver) ||
				 strcmp(d->node, node))
			continue;
		if (!d->drm_driver[0])
			snprintf(d->drm_driver, sizeof(d->drm_driver), "%s", c->driver);
		if (!d->node[0])
			snprintf(d->node, sizeof(d->node), "%s", node);
		return i;
	}
	if (s->ndevs == SMI_MAX_DEVICES)
		return -1;
	d = &s->devs[s->ndevs];
	memset(d, 0, sizeof(*d));
	snprintf(d->bdf, sizeof(d->bdf), "%s", c->pdev);
	snprintf(d->drm_driver, sizeof(d->drm_driver), "%s", c->driver);
	snprintf(d->node, sizeof(d->node), "%s", node);
	return s->ndevs++;
}

/*
 * True the first time client @id is seen on device @dev. dup() and fork()
 * give one client several fds, in one process or several: it is counted
 * once, for the first process that shows it (the scan goes up the pids:
 * until pids wrap, a parent comes before the children it forked). Past
 * SMI_MAX_CLIENTS clients the rest are counted unchecked.
 */
static bool first_sight(struct smi_state *s, int dev, uint64_t id)
{
	for (int k = 0; k < s->nclients; k++)
		if (s->clients[k].dev == dev && s->clients[k].id == id)
			return false;
	if (s->nclients < SMI_MAX_CLIENTS) {
		s->clients[s->nclients].dev = dev;
		s->clients[s->nclients++].id = id;
	}
	return true;
}

/* @pid's entry on device @dev, made on first use; NULL if the table is full. */
static struct smi_proc *process_entry(struct smi_state *s, const char *proc,
				      int dev, int pid)
{
	struct smi_proc *p;

	for (int k = 0; k < s->nprocs; k++)
		if (s->procs[k].dev == dev && s->procs[k].pid == pid)
			return &s->procs[k];
	if (s->nprocs == SMI_MAX_PROCS) {
		s->truncated = true;
		return NULL;
	}
	p = &s->procs[s->nprocs++];
	memset(p, 0, sizeof(*p));
	p->dev = dev;
	p->pid = pid;
	smi_read_comm(proc, pid, p->comm, sizeof(p->comm));
	return p;
}

/*
 * Add client @c's usage to @sum. Busy time, cycles and memory add up; the
 * total cycles are the engine's clock, the same for every client, and the
 * capacity and frequency are the engine's: those are kept, not added.
 */
static void add_usage(struct smi_usage *sum, const struct smi_usage *c)
{
	for (int i = 0; i < c->nengines; i++) {
		const struct smi_engine *from = &c->engines[i];
		struct smi_engine *to = engine(sum, from->name);

		if (!to)
			continue;
		to->busy_ns = smi_add(to->busy_ns, from->busy_ns);
		to->cycles = smi_add(to->cycles, from->cycles);
		if (from->total_cycles > to->total_cycles)
			to->total_cycles = from->total_cycles;
		if (from->capacity > to->capacity)
			to->capacity = from->capacity;
		if (from->maxfreq_hz > to->maxfreq_hz)
			to->maxfreq_hz = from->maxfreq_hz;
		to->has_ns |= from->has_ns;
		to->has_cycles |= from->has_cycles;
		to->has_total_cycles |= from->has_total_cycles;
	}
	for (int i = 0; i < c->nregions; i++) {
		const struct smi_region *from = &c->regions[i];
		struct smi_region *to = region(sum, from->name);

		if (!to)
			continue;
		to->total = smi_add(to->total, from->total);
		to->shared = smi_add(to->shared, from->shared);
		to->resident = smi_add(to->resident, from->resident);
		to->purgeable = smi_add(to->purgeable, from->purgeable);
		to->active = smi_add(to->active, from->active);
		to->legacy = smi_add(to->legacy, from->legacy);
		to->has_total |= from->has_total;
		to->has_resident |= from->has_resident;
		to->has_legacy |= from->has_legacy;
	}
}

static void count_client(struct smi_state *s, const char *proc, int pid,
			 const struct drm_client *c, const char *node)
{
	int dev = device_of(s, c, node);
	struct smi_proc *p;

	/* without a client id, each fd is taken for a client of its own */
	if (dev < 0 || (c->has_client_id && !first_sight(s, dev, c->client_id)))
		return;
	p = process_entry(s, proc, dev, pid);
	if (!p)
		return;
	if (!p->client_name[0])
		snprintf(p->client_name, sizeof(p->client_name), "%s", c->name);
	add_usage(&p->usage, &c->usage);
	p->clients++;
}

static void read_process(struct smi_state *s, const char *proc, int pid)
{
	char dir[4096], path[4200], node[16];
	struct drm_client c;
	struct dirent *e;
	DIR *fds;
	int kind;

	snprintf(dir, sizeof(dir), "%s/%d/fdinfo", proc, pid);
	fds = opendir(dir);
	if (!fds)
		return;		/* another user's, or gone */
	while ((e = readdir(fds))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		/* the fd first: most are files and sockets, not worth reading */
		snprintf(path, sizeof(path), "%s/%d/fd/%.31s", proc, pid, e->d_name);
		kind = drm_node(path, node, sizeof(node));
		if (!kind)
			continue;
		snprintf(path, sizeof(path), "%s/%.31s", dir, e->d_name);
		if (!read_fdinfo(path, &c))
			continue;
		/* a DRM node says so itself; an fd of unknown kind by its keys */
		if (c.driver[0] || kind == 1)
			count_client(s, proc, pid, &c, node);
	}
	closedir(fds);
}

static int pid_entry(const struct dirent *e)
{
	char *end;
	long pid = strtol(e->d_name, &end, 10);

	return pid > 0 && pid <= INT32_MAX && !*end;
}

static int by_pid(const struct dirent **a, const struct dirent **b)
{
	long x = atol((*a)->d_name), y = atol((*b)->d_name);

	return (x > y) - (x < y);
}

int smi_list_pids(const char *dir, int **pids)
{
	struct dirent **names;
	int n = scandir(dir, &names, pid_entry, by_pid);

	*pids = NULL;
	if (n <= 0)
		return 0;
	*pids = malloc(n * sizeof(**pids));
	for (int i = 0; i < n; i++) {
		if (*pids)
			(*pids)[i] = atoi(names[i]->d_name);
		free(names[i]);
	}
	free(names);
	return *pids ? n : 0;
}

/* @proc's processes by pid, so that a parent comes before its children. */
void smi_read_processes(struct smi_state *s, const char *proc)
{
	int *pids, n = smi_list_pids(proc, &pids);

	for (int i = 0; i < n; i++)
		read_process(s, proc, pids[i]);
	free(pids);
}
