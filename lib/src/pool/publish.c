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
 * not write it. The process holds a shared flock(2) on it through a
 * close-on-exec descriptor: once it exits, is killed or execs another
 * program, the lock is gone and accel-smi knows the file is stale. It is
 * removed at exit and when the library is unloaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pool/pool.h"

#define PUBLISH_MS 200
#define MAX_POOLS 64	/* per device, in a file: more are left out */

/*
 * @reading is held while the pools are read (a fork waits for it: the
 * child must not inherit a pool's lock taken); @lock only around the
 * file, never with a pool's lock, so that exit and unload never wait for
 * a pool.
 */
static struct {
	pthread_mutex_t reading, lock;
	pthread_cond_t wake;
	bool started, stopped;
	pthread_t thread;
	int fd;			/* the published file, locked; -1 if none */
	pid_t pid;		/* whose file: a forked child's exit leaves it */
	char path[4096], tmp[4160];
} pub = {
	.reading = PTHREAD_MUTEX_INITIALIZER,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.fd = -1,
};

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

/* The file's text, in a new buffer of *@len bytes; NULL if out of memory. */
static char *pools_text(size_t *len)
{
	size_t count;
	char *text = NULL;
	FILE *f;

	if (accel_get_device_count(&count) != ACCEL_SUCCESS)
		return NULL;
	f = open_memstream(&text, len);
	if (!f)
		return NULL;
	pthread_mutex_lock(&pub.reading);
	fprintf(f, "# libaccel pools: device reserved allocated active (bytes)\n");
	for (size_t i = 0; i < count; i++)
		write_device(f, accel_device_by_id((int)i));
	pthread_mutex_unlock(&pub.reading);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
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

/*
 * pub.lock held: @text as the file, locked before it takes the name, so
 * that a reader never finds the file unlocked while this process lives.
 */
static void replace_file(const char *text, size_t len)
{
	int fd = create_new(pub.tmp);

	if (fd < 0)
		return;
	/* the mode others read it with, whatever the umask */
	if (fchmod(fd, 0644) || write(fd, text, len) != (ssize_t)len ||
	    flock(fd, LOCK_SH) || rename(pub.tmp, pub.path)) {
		unlink(pub.tmp);
		close(fd);
		return;
	}
	if (pub.fd >= 0)
		close(pub.fd);
	pub.fd = fd;
}

static void *publisher(void *unused)
{
	struct timespec next;

	(void)unused;
	pthread_mutex_lock(&pub.lock);
	while (!pub.stopped) {
		size_t len;
		char *text;

		pthread_mutex_unlock(&pub.lock);
		text = pools_text(&len);
		pthread_mutex_lock(&pub.lock);
		if (text && !pub.stopped)
			replace_file(text, len);
		free(text);
		clock_gettime(CLOCK_REALTIME, &next);
		next.tv_nsec += PUBLISH_MS * 1000000L;
		next.tv_sec += next.tv_nsec / 1000000000L;
		next.tv_nsec %= 1000000000L;
		while (!pub.stopped &&
		       pthread_cond_timedwait(&pub.wake, &pub.lock, &next) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&pub.lock);
	return NULL;
}

/*
 * A fork waits for a reading of the pools under way, which takes pools'
 * locks: the child must not inherit one locked. It has no publisher
 * thread, and publishes nothing.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&pub.reading);
	pthread_mutex_lock(&pub.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&pub.lock);
	pthread_mutex_unlock(&pub.reading);
}

static void fork_child(void)
{
	pub.stopped = true;
	pub.started = false;
	pthread_mutex_unlock(&pub.lock);
	pthread_mutex_unlock(&pub.reading);
}

/* No publish after this, and no file: at exit and at unload. */
static void stop(void)
{
	if (getpid() != pub.pid)
		return;
	pthread_mutex_lock(&pub.lock);
	pub.stopped = true;
	pthread_cond_signal(&pub.wake);
	unlink(pub.path);
	unlink(pub.tmp);
	if (pub.fd >= 0)
		close(pub.fd);
	pub.fd = -1;
	pthread_mutex_unlock(&pub.lock);
}

/*
 * Unloaded (dlclose(), or at exit): the thread must be out of the
 * library's code before it goes. It waits for nothing but one reading of
 * the pools; a reading held up by a pool lock that the exiting thread
 * holds (an exit from a signal handler) is not waited for past a second.
 */
__attribute__((destructor)) static void publisher_end(void)
{
	struct timespec limit;

	if (!pub.started)
		return;
	stop();
	clock_gettime(CLOCK_REALTIME, &limit);
	limit.tv_sec += 1;
	pthread_timedjoin_np(pub.thread, NULL, &limit);
}

void pool_publish_start(void)
{
	const char *dir = getenv("ACCEL_STATS_DIR");
	sigset_t all, old;

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
	pub.started = !pthread_create(&pub.thread, NULL, publisher, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
