// SPDX-License-Identifier: MIT
/*
 * The processes using the devices, the standard DRM way (as gputop, nvtop
 * and intel_gpu_top find them; Documentation/gpu/drm-usage-stats.rst):
 * every open DRM file's /proc/PID/fdinfo/FD names its driver (drm-driver),
 * its device (drm-pdev, the PCI address) and its client (drm-client-id,
 * one per open()), with the memory and engine time of that client.
 *
 * A user reads the fdinfo of their own processes only; root reads all.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_smi.h"

/* The keys of one DRM fdinfo that accel-smi shows. */
struct drm_fdinfo {
	char driver[32];
	char pdev[32];
	bool has_client_id;
	uint64_t client_id;
	uint64_t total_vram, total_system;
	uint64_t engine_copy_ns;
};

bool smi_parse_size(const char *text, uint64_t *bytes)
{
	static const struct { const char *name; int shift; } units[] = {
		{ "", 0 }, { "B", 0 }, { "KiB", 10 }, { "MiB", 20 },
		{ "GiB", 30 }, { "TiB", 40 },
	};
	char *end;
	uint64_t n;

	if (!isdigit((unsigned char)*text))
		return false;
	errno = 0;
	n = strtoull(text, &end, 10);
	if (errno)
		return false;
	while (*end == ' ' || *end == '\t')
		end++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].name))
			continue;
		if (n > (UINT64_MAX >> units[i].shift))
			return false;
		*bytes = n << units[i].shift;
		return true;
	}
	return false;
}

/* "123 ns" (the unit drm-engine-<name> is given in) */
static bool parse_ns(const char *text, uint64_t *ns)
{
	char *end;

	if (!isdigit((unsigned char)*text))
		return false;
	errno = 0;
	*ns = strtoull(text, &end, 10);
	return !errno && (!strcmp(end, " ns") || !*end);
}

/* One "key:<tabs>value" line into @info; keys it does not show are skipped. */
static void parse_line(char *line, struct drm_fdinfo *info)
{
	char *value = strchr(line, ':');

	if (!value)
		return;
	*value++ = '\0';
	value += strspn(value, " \t");
	value[strcspn(value, "\n")] = '\0';

	if (!strcmp(line, "drm-driver"))
		snprintf(info->driver, sizeof(info->driver), "%s", value);
	else if (!strcmp(line, "drm-pdev"))
		snprintf(info->pdev, sizeof(info->pdev), "%s", value);
	else if (!strcmp(line, "drm-client-id"))
		info->has_client_id = sscanf(value, "%" SCNu64, &info->client_id) == 1;
	else if (!strcmp(line, "drm-total-vram"))
		smi_parse_size(value, &info->total_vram);
	else if (!strcmp(line, "drm-total-system"))
		smi_parse_size(value, &info->total_system);
	else if (!strcmp(line, "drm-engine-copy"))
		parse_ns(value, &info->engine_copy_ns);
}

/* False if the file is unreadable (not ours, or closed meanwhile). */
static bool read_fdinfo(const char *path, struct drm_fdinfo *info)
{
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	memset(info, 0, sizeof(*info));
	while (fgets(line, sizeof(line), f))
		parse_line(line, info);
	fclose(f);
	return true;
}

static struct smi_dev *bound_device(struct smi_state *s, const char *bdf)
{
	for (int i = 0; i < s->ndevs; i++)
		if (s->devs[i].bound && !strcmp(s->devs[i].bdf, bdf))
			return &s->devs[i];
	return NULL;
}

/*
 * True the first time @id is seen on @d. dup() and fork() give one client
 * several fds, in one process or several: it is counted once, for the
 * first process that shows it (the scan goes up the pids: until pids wrap,
 * a parent comes before the children it forked). Past SMI_MAX_CLIENTS
 * clients the rest are counted unchecked.
 */
static bool first_sight(struct smi_dev *d, uint64_t id)
{
	for (int k = 0; k < d->nclients; k++)
		if (d->client_ids[k] == id)
			return false;
	if (d->nclients < SMI_MAX_CLIENTS)
		d->client_ids[d->nclients++] = id;
	return true;
}

/* @pid's entry on @d, made on first use; NULL if the table is full. */
static struct smi_proc *process_entry(struct smi_dev *d, int pid)
{
	struct smi_proc *p;
	char path[64];
	FILE *f;

	for (int k = 0; k < d->nprocs; k++)
		if (d->procs[k].pid == pid)
			return &d->procs[k];
	if (d->nprocs == SMI_MAX_PROCS)
		return NULL;
	p = &d->procs[d->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "r");
	if (!f || !fgets(p->comm, sizeof(p->comm), f))
		snprintf(p->comm, sizeof(p->comm), "?");
	if (f)
		fclose(f);
	p->comm[strcspn(p->comm, "\n")] = '\0';
	return p;
}

static void count_client(struct smi_state *s, int pid,
			 const struct drm_fdinfo *info)
{
	struct smi_dev *d = bound_device(s, info->pdev);
	struct smi_proc *p;

	if (!d || !first_sight(d, info->client_id))
		return;
	p = process_entry(d, pid);
	if (!p)
		return;
	p->vram += info->total_vram;
	p->system += info->total_system;
	p->engine_copy_ns += info->engine_copy_ns;
	p->clients++;
}

static void read_process(struct smi_state *s, int pid)
{
	char dir[64], path[128];
	struct drm_fdinfo info;
	struct dirent *e;
	DIR *fds;

	snprintf(dir, sizeof(dir), "/proc/%d/fdinfo", pid);
	fds = opendir(dir);
	if (!fds)
		return;		/* another user's, or gone */
	while ((e = readdir(fds))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "%s/%.31s", dir, e->d_name); /* an fd number */
		if (read_fdinfo(path, &info) && info.has_client_id &&
		    !strcmp(info.driver, SMI_DRIVER))
			count_client(s, pid, &info);
	}
	closedir(fds);
}

/* /proc's entries in the order readdir gives them, which is by pid. */
void smi_read_processes(struct smi_state *s)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;

	if (!proc)
		return;
	while ((e = readdir(proc))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (pid > 0 && !*end)
			read_process(s, (int)pid);
	}
	closedir(proc);
}
