// SPDX-License-Identifier: MIT
/*
 * The pools' figures for accel-smi, opt-in: with ACCEL_STATS_DIR set, a
 * thread of the library rewrites $ACCEL_STATS_DIR/PID every PUBLISH_MS,
 * a line per visible device with what its pools reserve, allocate and
 * keep active, in bytes:
 *
 *   # libaccel pools: device reserved allocated active (bytes)
 *   cpu:0 67108864 33554432 33554432
 *
 * A thread reading the pools' stats, rather than the pools writing
 * them, keeps the allocation paths as they are whether it is on or off;
 * unset, there is no thread and no file. The file is written beside and
 * renamed over, so that a reader sees a whole one; others may read it,
 * not write it. It goes at exit; a process killed leaves it behind, and
 * accel-smi skips files whose pid is not alive.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pool/pool.h"

#define PUBLISH_MS 200
#define MAX_POOLS 64	/* per device, in a file: more are left out */

static struct {
	pthread_mutex_t lock;
	bool stopped;
	pid_t pid;		/* whose file: a forked child's exit leaves it */
	char path[4096], tmp[4160];
} pub = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The handles of @dev's pools, at most @max. */
static size_t pool_handles(struct accel_device *dev, accel_pool_t *handles,
			   size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&dev->pool_lock);
	for (struct accel_pool *p = dev->pools; p && n < max; p = p->next)
		handles[n++] = (accel_pool_t)p->handle;
	pthread_mutex_unlock(&dev->pool_lock);
	return n;
}

/* @dev's line: its pools' sums (a pool destroyed meanwhile is refused). */
static void write_device(FILE *f, struct accel_device *dev)
{
	size_t reserved = 0, allocated = 0, active = 0;
	accel_pool_t handles[MAX_POOLS];
	struct accel_pool_stats st;
	size_t n = pool_handles(dev, handles, MAX_POOLS);

	for (size_t i = 0; i < n; i++) {
		if (accel_pool_get_stats(handles[i], &st) != ACCEL_SUCCESS)
			continue;
		reserved += st.reserved;
		allocated += st.allocated;
		active += st.active;
	}
	fprintf(f, "%s %zu %zu %zu\n", dev->name, reserved, allocated, active);
}

/*
 * A new file at @path, never through what is there: in a directory others
 * can write (/tmp), a link put at our name must not make us write
 * through it.
 */
static int create_new(const char *path)
{
	unlink(path);
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

static void publish(void)
{
	size_t count;
	FILE *f;
	int fd;

	if (accel_get_device_count(&count) != ACCEL_SUCCESS)
		return;
	pthread_mutex_lock(&pub.lock);
	fd = pub.stopped ? -1 : create_new(pub.tmp);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (f) {
		fprintf(f, "# libaccel pools: device reserved allocated active (bytes)\n");
		for (size_t i = 0; i < count; i++)
			write_device(f, accel_device_by_id((int)i));
		if (fclose(f) || rename(pub.tmp, pub.path))
			unlink(pub.tmp);
	} else if (fd >= 0) {
		close(fd);
	}
	pthread_mutex_unlock(&pub.lock);
}

static void *publisher(void *unused)
{
	const struct timespec period = { 0, PUBLISH_MS * 1000000L };

	(void)unused;
	for (;;) {
		publish();
		nanosleep(&period, NULL);
	}
	return NULL;
}

/*
 * A fork waits for a publish under way, which holds pools' locks: the
 * child must not inherit one locked. It has no publisher thread then, and
 * publishes nothing.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&pub.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&pub.lock);
}

static void fork_child(void)
{
	pub.stopped = true;
	pthread_mutex_unlock(&pub.lock);
}

/* At exit: after a publish under way, none, and no file. */
static void stop(void)
{
	if (getpid() != pub.pid)
		return;
	pthread_mutex_lock(&pub.lock);
	pub.stopped = true;
	unlink(pub.path);
	unlink(pub.tmp);
	pthread_mutex_unlock(&pub.lock);
}

void pool_publish_start(void)
{
	const char *dir = getenv("ACCEL_STATS_DIR");
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t thread;

	if (!dir || !*dir)
		return;
	pub.pid = getpid();
	snprintf(pub.path, sizeof(pub.path), "%s/%d", dir, (int)pub.pid);
	snprintf(pub.tmp, sizeof(pub.tmp), "%s.tmp", pub.path);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return;
	atexit(stop);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	/* the program's signals are for its own threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_create(&thread, &attr, publisher, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
