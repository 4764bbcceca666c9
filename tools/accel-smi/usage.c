// SPDX-License-Identifier: MIT
/*
 * What a DRM client's usage adds up to: its memory, on the device or in
 * the host, and its engines' utilization between two samples, as
 * Documentation/gpu/drm-usage-stats.rst says to compute it.
 */
#include <stdio.h>
#include <string.h>

#include "accel_smi.h"

/* What a region holds: drm-total, else drm-resident, else drm-memory. */
uint64_t smi_region_bytes(const struct smi_region *r)
{
	if (r->has_total)
		return r->total;
	return r->has_resident ? r->resident : r->legacy;
}

/*
 * Device memory: vram* (amdgpu, xe, simaccel), local* (i915), and the one
 * region "memory" of drivers whose device shares the host's memory
 * (panthor, ivpu). The rest (system, gtt, cpu, stolen) is the host's.
 */
bool smi_device_memory(const struct smi_region *r)
{
	return !strncmp(r->name, "vram", 4) || !strncmp(r->name, "local", 5) ||
	       !strcmp(r->name, "memory");
}

uint64_t smi_usage_memory(const struct smi_usage *u, bool device)
{
	uint64_t sum = 0;

	for (int i = 0; i < u->nregions; i++)
		if (smi_device_memory(&u->regions[i]) == device)
			sum = smi_add(sum, smi_region_bytes(&u->regions[i]));
	return sum;
}

uint64_t smi_usage_busy_ns(const struct smi_usage *u)
{
	uint64_t sum = 0;

	for (int i = 0; i < u->nengines; i++)
		sum = smi_add(sum, u->engines[i].busy_ns);
	return sum;
}

const struct smi_engine *smi_find_engine(const struct smi_usage *u,
					 const char *name)
{
	for (int i = 0; i < u->nengines; i++)
		if (!strcmp(u->engines[i].name, name))
			return &u->engines[i];
	return NULL;
}

/* A counter's growth; one that went back (allowed by the spec) gives 0. */
static uint64_t delta(uint64_t now, uint64_t before)
{
	return now > before ? now - before : 0;
}

/*
 * The busy fraction of engine @e since @was, @wall_ns ago, over all of
 * its capacity: busy cycles over the engine's own clock (xe) where there
 * is one, else busy time over wall time, else busy cycles over the
 * cycles the maximum frequency gives in the wall time; -1 if none.
 */
static double engine_busy(const struct smi_engine *e,
			  const struct smi_engine *was, uint64_t wall_ns)
{
	double capacity = e->capacity ? e->capacity : 1;
	uint64_t clock;

	if (e->has_total_cycles && was->has_total_cycles && e->has_cycles &&
	    (clock = delta(e->total_cycles, was->total_cycles)))
		return delta(e->cycles, was->cycles) / (double)clock / capacity;
	if (!wall_ns)
		return -1;
	if (e->has_ns && was->has_ns)
		return delta(e->busy_ns, was->busy_ns) / (double)wall_ns / capacity;
	if (e->has_cycles && was->has_cycles && e->maxfreq_hz)
		return delta(e->cycles, was->cycles) /
		       (wall_ns * 1e-9 * e->maxfreq_hz) / capacity;
	return -1;
}

/* At most 1: clocks read at slightly different times can give more. */
static double engine_util(const struct smi_engine *e,
			  const struct smi_engine *was, uint64_t wall_ns)
{
	double busy = engine_busy(e, was, wall_ns);

	return busy > 1 ? 1 : busy;
}

static bool same_device(const struct smi_dev *a, const struct smi_dev *b)
{
	return !strcmp(a->bdf, b->bdf) && !strcmp(a->drm_driver, b->drm_driver) &&
	       !strcmp(a->node, b->node);
}

static const struct smi_proc *find_proc(const struct smi_state *s,
					const struct smi_dev *d, int pid)
{
	for (int k = 0; k < s->nprocs; k++)
		if (s->procs[k].pid == pid &&
		    same_device(&s->devs[s->procs[k].dev], d))
			return &s->procs[k];
	return NULL;
}

/*
 * Each engine's utilization in @cur's processes since @prev: a process
 * not in @prev (new, or a pid reused) has none yet.
 */
void smi_compute_utilization(struct smi_state *cur,
			     const struct smi_state *prev)
{
	uint64_t wall_ns = delta(cur->time_ns, prev->time_ns);

	for (int k = 0; k < cur->nprocs; k++) {
		struct smi_proc *p = &cur->procs[k];
		const struct smi_proc *was =
			find_proc(prev, &cur->devs[p->dev], p->pid);

		for (int i = 0; i < p->usage.nengines; i++) {
			struct smi_engine *e = &p->usage.engines[i];
			const struct smi_engine *e0 =
				was ? smi_find_engine(&was->usage, e->name) : NULL;

			e->util = e0 ? engine_util(e, e0, wall_ns) : -1;
		}
	}
}

/*
 * Device @dev's engines, each with the sum of its processes' utilization,
 * into @engines; the busiest one's utilization (0..1), -1 if none is known.
 */
double smi_device_utilization(const struct smi_state *s, int dev,
			      struct smi_usage *engines)
{
	double busiest = -1;

	memset(engines, 0, sizeof(*engines));
	for (int k = 0; k < s->nprocs; k++) {
		const struct smi_usage *u = &s->procs[k].usage;

		if (s->procs[k].dev != dev)
			continue;
		for (int i = 0; i < u->nengines; i++) {
			const struct smi_engine *e = &u->engines[i];
			struct smi_engine *sum =
				(struct smi_engine *)smi_find_engine(engines, e->name);

			if (!sum && engines->nengines < SMI_MAX_ENGINES) {
				sum = &engines->engines[engines->nengines++];
				snprintf(sum->name, sizeof(sum->name), "%s", e->name);
				sum->util = -1;
			}
			if (!sum || e->util < 0)
				continue;
			sum->util = (sum->util < 0 ? 0 : sum->util) + e->util;
		}
	}
	for (int i = 0; i < engines->nengines; i++) {
		if (engines->engines[i].util > 1)
			engines->engines[i].util = 1;	/* a group's share */
		if (engines->engines[i].util > busiest)
			busiest = engines->engines[i].util;
	}
	return busiest;
}

/* simaccel's own count where it is bound, else what its clients hold. */
uint64_t smi_device_memory_used(const struct smi_state *s, int dev)
{
	uint64_t sum = 0;

	if (s->devs[dev].bound)
		return s->devs[dev].vram_used;
	for (int k = 0; k < s->nprocs; k++)
		if (s->procs[k].dev == dev)
			sum = smi_add(sum, smi_usage_memory(&s->procs[k].usage, true));
	return sum;
}
