// SPDX-License-Identifier: MIT
/*
 * libaccel's pools, per process: with ACCEL_STATS_DIR set, each process
 * using libaccel keeps the file $ACCEL_STATS_DIR/PID up to date (the
 * library's core/publish.c), a line per device:
 *
 *   # libaccel pools: device reserved allocated active (bytes)
 *   cpu:0 67108864 33554432 33554432
 *
 * The process holds a shared flock(2) on its file while it lives and runs
 * libaccel: a file no one holds a lock on (its process killed, or gone to
 * another program by exec) is skipped, as one whose pid is not in /proc.
 * Anyone may write the directory: only regular files are read, and
 * without waiting.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel_smi.h"

static bool alive(const char *proc, int pid)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%d", proc, pid);
	return !stat(path, &st);
}

/*
 * @path open for reading if it is a regular file that its process still
 * holds locked, else NULL.
 */
static FILE *open_live(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	FILE *f;

	if (fd < 0)
		return NULL;
	/* our exclusive lock taken: no one holds the shared one */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    !flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

static void read_pool_file(struct smi_state *s, const char *path,
			   const char *proc, int pid)
{
	FILE *f = open_live(path);
	char line[256], comm[32];
	struct smi_pool *p;

	if (!f)
		return;
	smi_read_comm(proc, pid, comm, sizeof(comm));
	while (fgets(line, sizeof(line), f)) {
		if (s->npools == SMI_MAX_POOLS) {
			s->truncated = true;
			break;
		}
		p = &s->pools[s->npools];
		if (line[0] == '#' ||
		    sscanf(line, "%23s %" SCNu64 " %" SCNu64 " %" SCNu64,
			   p->device, &p->reserved, &p->allocated, &p->active) != 4)
			continue;
		p->pid = pid;
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
		s->npools++;
	}
	fclose(f);
}

void smi_read_pools(struct smi_state *s, const char *proc)
{
	const char *dir = getenv("ACCEL_STATS_DIR");
	char path[4096];
	int *pids, n;

	if (!dir || !*dir)
		return;
	n = smi_list_pids(dir, &pids);
	for (int i = 0; i < n; i++) {
		if (!alive(proc, pids[i]))
			continue;
		snprintf(path, sizeof(path), "%s/%d", dir, pids[i]);
		read_pool_file(s, path, proc, pids[i]);
	}
	free(pids);
}
