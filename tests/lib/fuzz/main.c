/* SPDX-License-Identifier: MIT */
/*
 * lib_fuzz - differential conformance fuzzer for libaccel
 *
 *   lib_fuzz [--seed N] [--programs N] [--ops N] [--only F,..]
 *	      [--exclude F,..] [--known K,..] [--minimize] [-v]
 *
 * Program i has the seed N + i; each runs in a child process of its own
 * against the backend ACCEL_VISIBLE_DEVICES selects (two devices when there
 * are two: p2p ops then cross them). On the first disagreement it prints
 * the seed, the op index and the program's trace, and exits 1. --minimize
 * reduces a failing program (delta debugging over the ops, deterministic)
 * and prints it as a suite TEST in lib_fuzz's own notation (slot arrays,
 * FZ_DECLS, fz_expect() of fuzz/repro.h, which says how to run it): a
 * reproducer to rewrite in the suite's plain style, as a test of the
 * feature it breaks, in that feature's file of tests/lib.
 * Families: raw async sync pool mem map misuse p2p all array ("all" is
 * every family but array, so that old seeds keep their programs; "all,array"
 * mixes arrays in). --known names
 * disagreement classes the model skips (see fuzz.h), to look past them.
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

#define CHILD_TIMEOUT 60

struct outcome {
	int failed;	/* 0 agree, 1 disagreement, 2 crash, 3 hang */
	size_t op;
	int kind;	/* the failing op's kind */
	int what;
	char msg[512];
};

static struct outcome *shared;
static int ndev = 1;

/*
 * Children end with _exit(): the exit handlers they inherited are the
 * parent's. A build with gcov's counters (-DLIB_FUZZ_COVERAGE, for
 * scripts/coverage.sh) writes them first, as only exit() would.
 */
static void child_exit(void)
{
#ifdef LIB_FUZZ_COVERAGE
	extern void __gcov_dump(void);

	__gcov_dump();
#endif
	_exit(0);
}

/* Run one program (the unmasked ops) in a child. */
static void run_child(const struct program *p, const uint8_t *mask,
		      struct outcome *out)
{
	pid_t pid;
	int status;

	memset(shared, 0, sizeof(*shared));
	shared->op = (size_t)-1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct result r;

		alarm(CHILD_TIMEOUT);
		g_progress = &shared->op;
		exec_program(p, mask, ndev, &r);
		if (r.failed) {
			shared->failed = 1;
			shared->op = r.op;
			shared->what = r.what;
			snprintf(shared->msg, sizeof(shared->msg), "%s", r.msg);
		}
		fflush(stdout);
		child_exit();
	}
	waitpid(pid, &status, 0);
	*out = *shared;
	if (WIFSIGNALED(status)) {
		out->failed = WTERMSIG(status) == SIGALRM ? 3 : 2;
		snprintf(out->msg, sizeof(out->msg), "%s (signal %d)",
			 out->failed == 3 ? "hung" : "crashed", WTERMSIG(status));
	} else if (!out->failed && WEXITSTATUS(status)) {
		out->failed = 2;
		snprintf(out->msg, sizeof(out->msg), "exited %d",
			 WEXITSTATUS(status));
	}
	out->kind = out->op < p->n ? p->ops[out->op].kind : -1;
}

/*
 * The devices, counted in a child: this process never opens one, so that
 * what each program's child allocates goes with that child (a child of a
 * process that opened the accel driver would share its context, and its
 * memory would outlive it).
 */
static size_t count_devices(void)
{
	size_t count = 0;
	pid_t pid;

	memset(shared, 0, sizeof(*shared));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (accel_get_device_count(&count) != ACCEL_SUCCESS)
			snprintf(shared->msg, sizeof(shared->msg), "%s",
				 accel_get_last_error());
		shared->op = count;
		child_exit();
	}
	if (pid < 0 || waitpid(pid, NULL, 0) != pid)
		snprintf(shared->msg, sizeof(shared->msg), "cannot run a child");
	return pid > 0 ? shared->op : 0;
}

static void print_trace(const struct program *p, const uint8_t *mask,
			size_t upto)
{
	char buf[256];

	for (size_t i = 0; i < p->n && i <= upto; i++) {
		if (mask && !mask[i])
			continue;
		op_describe(&p->ops[i], buf, sizeof(buf));
		printf("#   %4zu %s\n", i, buf);
	}
}

/* The same failure: the same kind of op failing in the same way. */
static int same_failure(const struct outcome *a, const struct outcome *b)
{
	return b->failed && a->failed == b->failed && a->kind == b->kind &&
	       a->what == b->what;
}

/*
 * Whether the masked program fails the same way; a failure that depends
 * on timing (work that should have waited and did not) gets a few tries.
 */
static int fails_again(const struct program *p, const uint8_t *mask,
		       const struct outcome *want)
{
	struct outcome o;

	for (int i = 0; i < 4; i++) {
		run_child(p, mask, &o);
		if (same_failure(want, &o))
			return 1;
	}
	return 0;
}

/* Delta debugging (ddmin) over the unmasked ops. */
static void minimize(const struct program *p, uint8_t *mask,
		     const struct outcome *want)
{
	size_t n = p->n, live, chunk;
	uint8_t *trial = malloc(n);

	for (chunk = n / 2; chunk >= 1; ) {
		int progress = 0;

		for (size_t start = 0; start < n; ) {
			size_t removed = 0, i;

			memcpy(trial, mask, n);
			for (i = start; i < n && removed < chunk; i++)
				if (trial[i]) {
					trial[i] = 0;
					removed++;
				}
			if (removed && fails_again(p, trial, want)) {
				memcpy(mask, trial, n);
				progress = 1;
				continue;	/* same start, fewer ops */
			}
			start = i;
		}
		live = 0;
		for (size_t i = 0; i < n; i++)
			live += mask[i];
		if (!progress) {
			if (chunk == 1)
				break;
			chunk /= 2;
		} else if (chunk > live / 2 && chunk > 1) {
			chunk = live / 2 ? live / 2 : 1;
		}
	}
	free(trial);
}

static void print_test(const struct program *p, const uint8_t *mask,
		       uint64_t seed, const struct outcome *o)
{
	struct result r;
	int peer = 0;

	for (size_t i = 0; i < p->n; i++)
		if (mask[i] && p->ops[i].dev % ndev)
			peer = 1;
	printf("/* lib_fuzz --seed %llu: %s at op %zu (%s) */\n",
	       (unsigned long long)seed, o->msg, o->op, op_name(o->kind));
	printf("#include \"fuzz/repro.h\"\n\n");
	printf("%s(fuzz_seed_%llu)\n{\n", peer ? "TEST_PEER" : "TEST",
	       (unsigned long long)seed);
	printf("\tFZ_DECLS;\n");
	fflush(stdout);
	g_emit = stdout;
	/* in a child: the emitted program is what runs */
	pid_t pid = fork();
	if (pid == 0) {
		exec_program(p, mask, ndev, &r);
		fflush(stdout);
		child_exit();
	}
	waitpid(pid, NULL, 0);
	g_emit = NULL;
	printf("\tFZ_FREE;\n}\n");
}

static void usage(const char *argv0, int status)
{
	fprintf(status ? stderr : stdout, "usage: %s [--seed N] [--programs N] [--ops N] "
		"[--only F,..] [--exclude F,..] [--known K,..] [--minimize] [--stats] [-v]\n"
		"families: raw async sync pool mem map misuse p2p all array (all,array: everything)\n"
		"known classes: chunk stale kind cast event maprel syncwait release p2pwait deferfree rohost emptymap\n",
		argv0);
	exit(status);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "programs", required_argument, NULL, 'p' },
		{ "ops", required_argument, NULL, 'n' },
		{ "only", required_argument, NULL, 'o' },
		{ "exclude", required_argument, NULL, 'x' },
		{ "known", required_argument, NULL, 'k' },
		{ "minimize", no_argument, NULL, 'm' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "stats", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t seed = (uint64_t)time(NULL);
	size_t programs = 1, nops = 200, count;
	unsigned families = F_ALL, excl = 0;
	int c, do_min = 0, fails = 0, stats = 0;

	while ((c = getopt_long(argc, argv, "v", opts, NULL)) != -1) {
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'p': programs = strtoull(optarg, NULL, 0); break;
		case 'n': nops = strtoull(optarg, NULL, 0); break;
		case 'o':
			if (family_parse(optarg, &families))
				usage(argv[0], 2);
			break;
		case 'x':
			if (family_parse(optarg, &excl))
				usage(argv[0], 2);
			break;
		case 'k':
			if (known_parse(optarg, &g_known))
				usage(argv[0], 2);
			break;
		case 'm': do_min = 1; break;
		case 'v': g_verbose = 1; break;
		case 'S': stats = 1; break;
		case 'h': usage(argv[0], 0); break;
		default: usage(argv[0], 2);
		}
	}
	families &= ~excl;
	if (!(families & (F_RAW | F_ASYNC | F_SYNC | F_POOL | F_MEM | F_MAP)))
		families |= F_RAW;
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	count = count_devices();
	if (!count) {
		printf("lib_fuzz: no device: %s\n", shared->msg);
		return 1;
	}
	ndev = count > 1 ? 2 : 1;
	if (ndev < 2)
		families &= ~F_P2P;
	if (stats)
		g_stats = mmap(NULL, OP_COUNT * sizeof(*g_stats),
			       PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	printf("lib_fuzz: seed %llu, %zu programs of %zu ops, %d device(s)\n",
	       (unsigned long long)seed, programs, nops, ndev);
	for (size_t i = 0; i < programs; i++) {
		struct program p;
		struct outcome o;

		gen_program(seed + i, nops, families, &p);
		run_child(&p, NULL, &o);
		if (g_verbose)
			printf("# seed %llu: %s\n", (unsigned long long)(seed + i),
			       o.failed ? o.msg : "agrees");
		if (!o.failed) {
			free(p.ops);
			continue;
		}
		fails++;
		printf("lib_fuzz: DISAGREEMENT: seed %llu (--ops %zu), op %zu (%s): %s\n",
		       (unsigned long long)(seed + i), nops, o.op,
		       op_name(o.kind), o.msg);
		print_trace(&p, NULL, o.op);
		if (do_min) {
			uint8_t *mask = malloc(p.n);
			size_t live = 0;

			memset(mask, 1, p.n);
			minimize(&p, mask, &o);
			for (size_t k = 0; k < p.n; k++)
				live += mask[k];
			printf("# minimized to %zu ops:\n", live);
			print_trace(&p, mask, p.n);
			print_test(&p, mask, seed + i, &o);
			free(mask);
		}
		free(p.ops);
		break;
	}
	for (int k = 0; g_stats && k < OP_COUNT; k++)
		if (g_stats[k][0])
			printf("# %-20s %8lu calls checked, %8lu failed\n",
			       op_name(k), g_stats[k][0], g_stats[k][1]);
	printf("%d passed, %d failed\n", fails ? 0 : 1, fails ? 1 : 0);
	return fails ? 1 : 0;
}
