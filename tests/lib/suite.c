// SPDX-License-Identifier: MIT
/*
 * The conformance suite's runner.
 *
 *   accel_lib_test [-d DEVICE] [-p PEER] [-t SUBSTRING] [-x SUBSTRING] [-u] [-v]
 *
 * DEVICE and PEER are device names ("accel:0", "cpu:1"); by default the
 * first and second visible devices. -t runs only the tests whose name
 * contains its SUBSTRING, -x only those whose name does not contain its. Prints kselftest-style TAP and ends
 * with "# Totals: ..." and "N passed, N failed, N skipped".
 *
 * -u: where a backend that ACCEL_VISIBLE_DEVICES names is unavailable (the
 * cuda backend on a machine without a GPU), the suite is reported as one
 * skip with the backend's reason instead of failing.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

#define SKIP_STATUS 4
#define TEST_TIMEOUT_S 120

static struct suite_test *tests, **tail = &tests;
static const char *opt_device, *opt_peer;
static bool verbose;
static bool failed;

void suite_register(struct suite_test *t)
{
	*tail = t;
	tail = &t->next;
}

bool suite_verbose(void)
{
	return verbose;
}

const char *suite_device_name(void)
{
	return opt_device;
}

void suite_fail(const char *file, int line, const char *what)
{
	const char *err = accel_get_last_error();

	printf("#   FAIL %s:%d: %s%s%s\n", file, line, what,
	       err[0] ? " -- last error: " : "", err);
	fflush(stdout);
	failed = true;
}

/* A check that failed before the skip still fails the test. */
void suite_skip(const char *why)
{
	printf("#   SKIP: %s\n", why);
	fflush(stdout);
	exit(failed ? 1 : SKIP_STATUS);
}

bool check_pattern(const void *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		if (((const uint8_t *)p)[i] != pattern_byte(seed, i)) {
			printf("#   byte %zu is 0x%02x, expected 0x%02x\n", i,
			       ((const uint8_t *)p)[i], pattern_byte(seed, i));
			return false;
		}
	}
	return true;
}

bool check_bytes(const void *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++) {
		if (((const uint8_t *)p)[i] != v) {
			printf("#   byte %zu is 0x%02x, expected 0x%02x\n", i,
			       ((const uint8_t *)p)[i], v);
			return false;
		}
	}
	return true;
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	REQUIRE(p);
	return p;
}

uint8_t *read_back(struct suite_ctx *ctx, const void *dptr, size_t n)
{
	uint8_t *h = xmalloc(n);

	REQUIRE_OK(accel_memory_copy_d2h(ctx->dev, h, dptr, n));
	return h;
}

void *dalloc(struct suite_ctx *ctx, size_t n)
{
	void *p = NULL;

	REQUIRE_OK(accel_device_memory_allocate(ctx->dev, &p, n));
	REQUIRE(p);
	return p;
}

void dfree(struct suite_ctx *ctx, void *p, size_t n)
{
	OK(accel_device_memory_deallocate(ctx->dev, p, n));
}

size_t free_memory(struct suite_ctx *ctx)
{
	size_t total, free;

	REQUIRE_OK(accel_device_memory_stats(ctx->dev, &total, &free));
	return free;
}

bool free_memory_is(size_t now, size_t before)
{
	const char *slack = getenv("ACCEL_SUITE_DRIVER_SLACK");
	size_t most = slack ? strtoull(slack, NULL, 0) : 0;

	size_t off = now > before ? now - before : before - now;

	if (off && off <= most)
		printf("#   free memory %zu, baseline %zu: within the driver's slack\n",
		       now, before);
	return off <= most;
}

size_t pool_blocks(struct suite_ctx *ctx)
{
	struct accel_pool_stats st;
	accel_pool_t pool;

	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	REQUIRE_OK(accel_pool_get_stats(pool, &st));
	return st.blocks;
}

void pool_trim(struct suite_ctx *ctx)
{
	accel_pool_t pool;

	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	REQUIRE_OK(accel_pool_trim(pool));
}

void needs_caching(struct suite_ctx *ctx)
{
	struct accel_pool_stats st;
	accel_pool_t pool;

	REQUIRE_OK(accel_device_pool(ctx->dev, &pool));
	REQUIRE_OK(accel_pool_get_stats(pool, &st));
	if (!st.caching)
		suite_skip("ACCEL_POOL=off: the pools do not cache");
}

bool is_cpu(struct suite_ctx *ctx)
{
	return !strncmp(ctx->name, "cpu", 3);
}

bool peer_on_another_backend(struct suite_ctx *ctx)
{
	const char *peer;
	size_t n = strcspn(ctx->name, ":");

	REQUIRE_OK(accel_get_device_name(ctx->peer, &peer));
	return strcspn(peer, ":") != n || strncmp(peer, ctx->name, n);
}

void busy_chain_of(accel_device_t dev, accel_stream_t s, uint8_t *busy, int copies,
		   size_t half)
{
	for (int i = 0; i < copies; i++) {
		uint8_t *a = busy + (i & 1) * half;
		uint8_t *b = busy + !(i & 1) * half;

		REQUIRE_OK(accel_async_memory_copy_d2d(dev, s, b, a, half));
	}
}

void busy_chain(accel_device_t dev, accel_stream_t s, uint8_t *busy, int copies)
{
	busy_chain_of(dev, s, busy, copies, BUSY_HALF);
}

double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

bool stream_busy(accel_device_t dev, accel_stream_t s)
{
	accel_status_t st = accel_stream_query(dev, s);

	REQUIRE(st == ACCEL_SUCCESS || st == ACCEL_WARNING);
	return st == ACCEL_WARNING;
}

bool try_longer(int *copies)
{
	*copies *= 2;
	if (*copies > BUSY_MAX)
		suite_skip("the device finishes every chain before it can be observed");
	return true;
}

void suite_open(struct suite_ctx *ctx, enum suite_needs needs)
{
	size_t count = 0;

	if (opt_device) {
		REQUIRE_OK(accel_find_device(opt_device, &ctx->dev_s.id));
	} else {
		REQUIRE_OK(accel_get_device_count(&count));
		if (!count)
			suite_skip("no visible device");
		ctx->dev_s.id = 0;
	}
	ctx->dev = &ctx->dev_s;
	if (opt_peer) {
		REQUIRE_OK(accel_find_device(opt_peer, &ctx->peer_s.id));
		ctx->peer = &ctx->peer_s;
	} else if (!opt_device && count > 1) {
		ctx->peer_s.id = 1;
		ctx->peer = &ctx->peer_s;
	}
	REQUIRE_OK(accel_get_device_name(ctx->dev, &ctx->name));
	REQUIRE_OK(accel_device_min_chunk_size(ctx->dev, &ctx->min_chunk));
	if (needs == NEEDS_PEER && !ctx->peer)
		suite_skip("needs a second device (-p)");
}

void suite_exit(void)
{
	fflush(stdout);
	exit(failed ? 1 : 0);
}

/*
 * A test that outlives its time prints each of its threads' stack before
 * it dies: where it waits, on a machine without a debugger (a lent GPU).
 * The frames are the binaries' offsets, for addr2line where they were built.
 */
static volatile sig_atomic_t stack_printed;

static void print_stack(void)
{
	void *frames[64];
	char head[48];
	int n = backtrace(frames, 64);
	int len = snprintf(head, sizeof(head), "#   thread %ld:\n",
			   (long)syscall(SYS_gettid));

	if (write(STDOUT_FILENO, head, len) < 0)
		return;
	backtrace_symbols_fd(frames, n, STDOUT_FILENO);
}

static void print_stack_on_request(int sig)
{
	(void)sig;
	print_stack();
	stack_printed = 1;
}

/* each thread in turn, for at most a second each: one may be stuck */
static void print_other_threads_stacks(void)
{
	long self = syscall(SYS_gettid);
	DIR *tasks = opendir("/proc/self/task");
	struct dirent *e;

	if (!tasks)
		return;
	while ((e = readdir(tasks))) {
		long tid = atol(e->d_name);

		if (tid <= 0 || tid == self)
			continue;
		stack_printed = 0;
		if (syscall(SYS_tgkill, getpid(), tid, SIGUSR2))
			continue;
		for (int ms = 0; !stack_printed && ms < 1000; ms++)
			usleep(1000);
	}
	closedir(tasks);
}

static void print_stacks_and_die(int sig)
{
	print_stack();
	print_other_threads_stacks();
	signal(sig, SIG_DFL);
	raise(sig);
}

void suite_start_timer(void)
{
	void *warm[1];

	backtrace(warm, 1);	/* loads what backtrace() needs, outside a handler */
	signal(SIGUSR2, print_stack_on_request);
	signal(SIGALRM, print_stacks_and_die);
	alarm(TEST_TIMEOUT_S);
}

static void run_child(struct suite_test *t)
{
	struct suite_ctx ctx = { 0 };

	suite_start_timer();
	if (t->needs != NEEDS_NOTHING)
		suite_open(&ctx, t->needs);
	t->fn(&ctx);
	suite_exit();
}

/*
 * Why a backend that ACCEL_VISIBLE_DEVICES names cannot be used, or NULL
 * when all can (or the variable names none).
 */
static const char *unavailable_backend(char *why, size_t len)
{
	const char *visible = getenv("ACCEL_VISIBLE_DEVICES");
	char name[32];

	for (const char *p = visible; p && *p; p += *p == ',') {
		size_t n = strcspn(p, ":,");
		const char *reason;
		int available;

		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		p += strcspn(p, ",");
		if (accel_get_backend_info(name, &available, &reason) != ACCEL_SUCCESS)
			return NULL;	/* a bad name: the tests say so */
		if (!available) {
			snprintf(why, len, "backend %s is unavailable: %s", name,
				 reason);
			return why;
		}
	}
	return NULL;
}

/* 0 passed, 1 failed, 2 skipped */
static int run_test(struct suite_test *t)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (!pid)
		run_child(t);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP_STATUS)
		return 2;
	if (WIFSIGNALED(status))
		printf("#   killed by signal %d%s\n", WTERMSIG(status),
		       WTERMSIG(status) == SIGALRM ? " (time-out)" : "");
	return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Whether test @name is to run: it contains @filter and not @exclude. */
static bool selected(const char *name, const char *filter, const char *exclude)
{
	return (!filter || strstr(name, filter)) &&
	       (!exclude || !strstr(name, exclude));
}

int main(int argc, char **argv)
{
	const char *filter = NULL, *exclude = NULL, *unavailable = NULL;
	int n = 0, counts[3] = { 0 }, c, i = 0;
	static const char *const verdict[] = { "ok", "not ok", "ok" };
	bool skip_unavailable = false;
	char why[512];

	while ((c = getopt(argc, argv, "d:p:t:x:uv")) != -1) {
		switch (c) {
		case 'd': opt_device = optarg; break;
		case 'p': opt_peer = optarg; break;
		case 't': filter = optarg; break;
		case 'x': exclude = optarg; break;
		case 'u': skip_unavailable = true; break;
		case 'v': verbose = true; break;
		default:
			fprintf(stderr, "usage: %s [-d DEVICE] [-p PEER] [-t FILTER] [-x EXCLUDE] [-u] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	if (skip_unavailable)
		unavailable = unavailable_backend(why, sizeof(why));
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (unavailable) {
		/* one skip with its reason, not one per test */
		printf("TAP version 13\n1..0 # SKIP %s\n", unavailable);
		printf("0 passed, 0 failed, 1 skipped\n");
		return 0;
	}
	for (struct suite_test *t = tests; t; t = t->next)
		n += selected(t->name, filter, exclude);
	printf("TAP version 13\n1..%d\n", n);
	for (struct suite_test *t = tests; t; t = t->next) {
		int r;

		if (!selected(t->name, filter, exclude))
			continue;
		printf("# %s\n", t->name);
		r = run_test(t);
		counts[r]++;
		printf("%s %d %s%s\n", verdict[r], ++i, t->name,
		       r == 2 ? " # SKIP " : "");
	}
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0\n",
	       counts[0], counts[1], counts[2]);
	printf("%d passed, %d failed, %d skipped\n", counts[0], counts[1],
	       counts[2]);
	return counts[1] ? 1 : 0;
}

bool on_cuda(struct suite_ctx *ctx)
{
	return !strncmp(ctx->name, "cuda:", 5);
}

int cuda_ordinal(struct suite_ctx *ctx)
{
	if (!on_cuda(ctx))
		suite_skip("a test of the cuda backend");
	return atoi(ctx->name + 5);
}

void open_slow(struct suite_ctx *ctx, unsigned int delay_us)
{
	char v[32];

	snprintf(v, sizeof(v), "%u", delay_us);
	setenv("FAKECUDA_DELAY_US", v, 1);
	suite_open(ctx, NEEDS_DEVICE);
	if (!on_cuda(ctx))
		suite_skip("a test of the cuda backend");
}

void suite_known_bug(const char *what)
{
	const char *on = getenv("ACCEL_SUITE_KNOWN_BUGS");

	if (!on || strcmp(on, "1")) {
		char why[512];

		snprintf(why, sizeof(why),
			 "known bug (ACCEL_SUITE_KNOWN_BUGS=1 runs it): %s", what);
		suite_skip(strdup(why));
	}
}

void *native_stream(struct suite_ctx *ctx, accel_stream_t *owner)
{
	void *native = NULL;

	REQUIRE(accel_stream_create(ctx->dev, owner) == ACCEL_SUCCESS);
	REQUIRE(accel_stream_get_native(ctx->dev, *owner, &native) == ACCEL_SUCCESS);
	return native;
}

void torch_alloc_load(struct torch_alloc *t)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	void *lib;

	REQUIRE(n > 0);
	exe[n] = '\0';
	snprintf(path, sizeof(path), "%s/../interop/libaccel-torch.so",
		 dirname(exe));
	if (access(path, F_OK))
		suite_skip("libaccel-torch.so is not built beside the suite");
	lib = dlopen(path, RTLD_NOW);
	REQUIRE(lib);
	*(void **)&t->alloc = dlsym(lib, "accel_torch_alloc");
	*(void **)&t->free = dlsym(lib, "accel_torch_free");
	*(void **)&t->stat = dlsym(lib, "accel_torch_stat");
	*(void **)&t->trim = dlsym(lib, "accel_torch_trim");
	REQUIRE(t->alloc && t->free && t->stat && t->trim);
}

accel_pool_t new_pool(struct suite_ctx *ctx)
{
	accel_pool_t p;

	REQUIRE_OK(accel_pool_create(ctx->dev, &p));
	return p;
}

struct accel_pool_stats stats_of(accel_pool_t p)
{
	struct accel_pool_stats s;

	REQUIRE_OK(accel_pool_get_stats(p, &s));
	return s;
}

void *palloc(accel_pool_t p, accel_stream_t s, size_t n)
{
	void *ptr = NULL;

	REQUIRE_OK(accel_pool_allocate(p, s, &ptr, n));
	REQUIRE(ptr);
	return ptr;
}
