// SPDX-License-Identifier: MIT
/*
 * load_test: many processes and threads allocating, copying and freeing
 * through libaccel on several streams and every visible device, for a
 * fixed time, with every byte verified end to end. Reports operations per
 * second; fails if any data is wrong, any call fails, or device memory is
 * not back at its baseline once every process has exited.
 *
 *   load_test [--seconds N] [--procs N] [--threads N] [--stop-file PATH]
 *
 * With --stop-file, the run also ends once PATH exists: a test that needs
 * load only while it looks (tests/tools/accel_smi_test.sh) gives a bound
 * for a slow start and stops it when it is done.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <accel/accel.h>

#define MAX_DEVICES 8

struct counts {
	unsigned long rounds, copies, bytes, errors, corrupt;
};

static size_t ndev;
static double deadline;
static const char *stop_file;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = next(&seed);

		memcpy(p + i, &v, n - i < 8 ? n - i : 8);
	}
}

/*
 * One round: h2d into a block of device A, d2d within A, p2p to device B
 * (or d2d again with one device), d2h back, all on streams, then verify.
 */
static bool round_trip(struct accel_device_id *a, struct accel_device_id *b,
		       accel_stream_t sa, size_t n, uint64_t seed, uint8_t *src,
		       uint8_t *dst, struct counts *c)
{
	void *x = NULL, *y = NULL, *z = NULL;
	bool ok = false;

	fill(src, n, seed);
	memset(dst, 0, n);
	if (accel_device_memory_allocate(a, &x, n) ||
	    accel_device_memory_allocate(a, &y, n) ||
	    accel_device_memory_allocate(b, &z, n))
		goto out;
	if (accel_async_memory_copy_h2d(a, sa, x, src, n) ||
	    accel_async_memory_copy_d2d(a, sa, y, x, n) ||
	    accel_async_memory_copy_p2p(b, a, sa, z, y, n) ||
	    accel_stream_synchronize(a, sa) ||
	    accel_memory_copy_d2h(b, dst, z, n))
		goto out;
	c->copies += 4;
	c->bytes += 4 * n;
	ok = true;
	if (memcmp(src, dst, n))
		c->corrupt++;
out:
	if (!ok) {
		c->errors++;
		fprintf(stderr, "load_test: %s\n", accel_get_last_error());
	}
	accel_device_memory_deallocate(a, x, x ? n : 0);
	accel_device_memory_deallocate(a, y, y ? n : 0);
	accel_device_memory_deallocate(b, z, z ? n : 0);
	return ok;
}

struct thread_arg {
	int index;
	uint64_t seed;
	struct counts c;
};

static void *thread_main(void *p)
{
	struct thread_arg *t = p;
	struct accel_device_id devs[MAX_DEVICES];
	accel_stream_t streams[MAX_DEVICES] = { 0 };
	uint8_t *src = malloc(4 << 20), *dst = malloc(4 << 20);
	uint64_t s = t->seed;

	if (!src || !dst)
		return NULL;
	for (size_t d = 0; d < ndev; d++) {
		devs[d].id = (int)d;
		if (accel_stream_create(&devs[d], &streams[d])) {
			t->c.errors++;
			return NULL;
		}
	}
	while (now() < deadline && !(stop_file && access(stop_file, F_OK) == 0)) {
		size_t a = (size_t)(t->index + t->c.rounds) % ndev;
		size_t b = (a + 1) % ndev;
		size_t n = 1 + next(&s) % (4 << 20);

		round_trip(&devs[a], &devs[b], streams[a], n, next(&s), src,
			   dst, &t->c);
		t->c.rounds++;
	}
	for (size_t d = 0; d < ndev; d++)
		accel_stream_destroy(&devs[d], streams[d]);
	free(src);
	free(dst);
	return NULL;
}

static void process_main(int index, int threads, int out)
{
	struct thread_arg args[64];
	pthread_t tid[64];
	struct counts sum = { 0 };

	for (int i = 0; i < threads; i++) {
		args[i] = (struct thread_arg){
			.index = index * 64 + i,
			.seed = 0x9e3779b97f4a7c15ull * (uint64_t)(index * 64 + i + 1),
		};
		pthread_create(&tid[i], NULL, thread_main, &args[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		sum.rounds += args[i].c.rounds;
		sum.copies += args[i].c.copies;
		sum.bytes += args[i].c.bytes;
		sum.errors += args[i].c.errors;
		sum.corrupt += args[i].c.corrupt;
	}
	_exit(write(out, &sum, sizeof(sum)) == sizeof(sum) ? 0 : 1);
}

/*
 * The devices and the memory in use on each, read by a child process: the
 * parent never opens the devices, so that its workers do not inherit its
 * files (which would make them share one context per device).
 */
static size_t survey(size_t *used)
{
	struct { size_t n, used[MAX_DEVICES]; } r = { 0 };
	int fd[2];

	if (pipe(fd))
		return 0;
	if (fork() == 0) {
		if (!accel_get_device_count(&r.n)) {
			if (r.n > MAX_DEVICES)
				r.n = MAX_DEVICES;
			for (size_t d = 0; d < r.n; d++) {
				struct accel_device_id dev = { (int)d };
				size_t total = 0, free = 0;

				accel_device_memory_stats(&dev, &total, &free);
				r.used[d] = total - free;
			}
		}
		_exit(write(fd[1], &r, sizeof(r)) != sizeof(r));
	}
	close(fd[1]);
	if (read(fd[0], &r, sizeof(r)) != sizeof(r))
		r.n = 0;
	close(fd[0]);
	wait(NULL);
	memcpy(used, r.used, sizeof(r.used));
	return r.n;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "procs", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "stop-file", required_argument, NULL, 'f' },
		{ 0 }
	};
	int seconds = 10, procs = 4, threads = 4, c, pipefd[2], leaks = 0;
	size_t base[MAX_DEVICES], after[MAX_DEVICES];
	struct counts sum = { 0 }, part;
	double start;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 's')
			seconds = atoi(optarg);
		else if (c == 'p')
			procs = atoi(optarg);
		else if (c == 't')
			threads = atoi(optarg);
		else if (c == 'f')
			stop_file = optarg;
		else
			return 64;
	}
	if (threads < 1 || threads > 64 || procs < 1 || seconds < 1)
		return 64;
	ndev = survey(base);
	if (!ndev) {
		printf("load_test: no device\n");
		return 1;
	}
	if (pipe(pipefd))
		return 1;
	start = now();
	deadline = start + seconds;
	for (int p = 0; p < procs; p++)
		if (fork() == 0)
			process_main(p, threads, pipefd[1]);
	close(pipefd[1]);
	while (wait(NULL) > 0)
		;
	while (read(pipefd[0], &part, sizeof(part)) == sizeof(part)) {
		sum.rounds += part.rounds;
		sum.copies += part.copies;
		sum.bytes += part.bytes;
		sum.errors += part.errors;
		sum.corrupt += part.corrupt;
	}
	survey(after);
	for (size_t d = 0; d < ndev; d++) {
		if (after[d] != base[d]) {
			printf("load_test: device %zu: %zu bytes in use, %zu before\n",
			       d, after[d], base[d]);
			leaks++;
		}
	}
	printf("load_test: %d processes x %d threads on %zu devices for %.1f s: %lu rounds, %lu copies (%.0f copies/s, %.1f MB/s), %lu errors, %lu corrupt, memory %s\n",
	       procs, threads, ndev, now() - start, sum.rounds, sum.copies,
	       (double)sum.copies / (now() - start),
	       (double)sum.bytes / (now() - start) / 1e6, sum.errors,
	       sum.corrupt, leaks ? "LEAKED" : "back at its baseline");
	c = sum.errors || sum.corrupt || leaks || !sum.rounds;
	printf("%s: load_test\n", c ? "not ok" : "ok");
	return c;
}
