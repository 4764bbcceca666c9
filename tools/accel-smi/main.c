// SPDX-License-Identifier: MIT
/*
 * accel-smi: list the accelerators, with the PCI view (libpci) and the
 * driver's view side by side, as nvidia-smi does for GPUs, and follow
 * every DRM device's processes (any driver's) over time.
 *
 *   accel-smi            a table
 *   accel-smi -q         every detail
 *   accel-smi --json     one JSON object, for scripts
 *   accel-smi dmon       a line per device per interval
 *   accel-smi pmon       a line per process per device per interval
 *   accel-smi --query-gpu=FIELD,... --format=csv
 *
 * Exit status: 0; 1 when no device is found at all; 2 when an accelerator
 * is on the PCI bus but simaccel.ko is not loaded or not bound to it, or
 * for a bad --query-gpu or --format (as nvidia-smi); 3 when libpci fails;
 * 64 for a bad command line.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../include/accel_hw.h"
#include "accel_smi.h"

enum { EXIT_NO_DEVICE = 1, EXIT_NO_DRIVER = 2, EXIT_QUERY = 2, EXIT_PCI = 3,
       EXIT_USAGE = 64 };

enum mode { TABLE, QUERY, JSON, DMON, PMON, QUERY_GPU };

struct options {
	enum mode mode;
	double interval;		/* seconds between samples */
	long count;			/* samples to print; 0: until killed */
	const char *fields;		/* --query-gpu */
	bool header, units;		/* --format */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: accel-smi [-q | --json] [-l SEC] [-c N] [-h] [--version]\n"
		   "       accel-smi dmon|pmon [-d SEC] [-c N]\n"
		   "       accel-smi --query-gpu=FIELD,... --format=csv[,noheader][,nounits]\n"
		   "                 [-l SEC] [-d SEC] [-c N]\n"
		   "  (none)          a table of the devices and their processes\n"
		   "  -q, --query     every detail of each device\n"
		   "  --json          the same as one JSON object\n"
		   "  -l, --loop=SEC  print again every SEC seconds, until interrupted\n"
		   "  -d, --delay=SEC the interval of dmon, pmon and utilization (1 s)\n"
		   "  -c, --count=N   stop after N samples\n"
		   "  dmon            a line per device per interval: utilization, memory\n"
		   "  pmon            a line per process per device per interval\n"
		   "  --query-gpu     fields: count, index, name, pci.bus_id, driver, node,\n"
		   "                  memory.total, memory.used, memory.free, utilization.gpu,\n"
		   "                  processes\n"
		   "Processes come from /proc/PID/fdinfo (ACCEL_SMI_PROC: another tree):\n"
		   "a user sees their own, root everyone's. libaccel's pools come from\n"
		   "the files of ACCEL_STATS_DIR.\n");
}

/*
 * Why the devices cannot be used, said once, on stderr; the exit status.
 * Other drivers' devices need nothing of accel-smi's: only simaccel's on
 * the PCI bus are diagnosed.
 */
static int diagnose(const struct smi_state *s)
{
	int unbound = 0, on_pci = 0;

	if (!s->ndevs) {
		fprintf(stderr, "accel-smi: no accelerator (PCI %04x:%04x) was found on the PCI bus, and no process that accel-smi can see has a DRM device open\n",
			ACCEL_PCI_VENDOR_ID, ACCEL_PCI_DEVICE_ID);
		return EXIT_NO_DEVICE;
	}
	for (int i = 0; i < s->ndevs; i++)
		on_pci += s->devs[i].on_pci;
	if (!on_pci)
		return 0;
	if (!s->driver_loaded) {
		fprintf(stderr, "accel-smi: the " SMI_DRIVER " driver is not loaded: run 'modprobe " SMI_DRIVER "' as root\n");
		return EXIT_NO_DRIVER;
	}
	for (int i = 0; i < s->ndevs; i++) {
		if (!s->devs[i].on_pci || s->devs[i].bound)
			continue;
		fprintf(stderr, "accel-smi: %s is not bound to " SMI_DRIVER ".ko (its driver: %s)\n",
			s->devs[i].bdf,
			s->devs[i].driver[0] ? s->devs[i].driver : "none");
		unbound++;
	}
	return unbound ? EXIT_NO_DRIVER : 0;
}

/*
 * The /proc tree of sample @n: ACCEL_SMI_PROC, a tree or a colon-separated
 * list of them (one per sample, the last one again and again: recorded
 * snapshots, or a test's), or /proc.
 */
static void proc_root(unsigned long n, char *root, size_t len)
{
	const char *list = getenv("ACCEL_SMI_PROC");
	const char *p;
	size_t k;

	if (!list || !*list) {
		snprintf(root, len, "/proc");
		return;
	}
	for (p = list; n && strchr(p, ':'); n--)
		p = strchr(p, ':') + 1;
	k = strcspn(p, ":");
	snprintf(root, len, "%.*s", (int)k, p);
}

/*
 * When the sample was taken: the tree's uptime, so that a tree of
 * snapshots says when each was taken, else the monotonic clock.
 */
static uint64_t sample_time(const char *proc)
{
	char path[4096], line[64];
	struct timespec ts;
	double up;

	snprintf(path, sizeof(path), "%s/uptime", proc);
	if (strcmp(proc, "/proc") && smi_read_line(path, line, sizeof(line)) &&
	    sscanf(line, "%lf", &up) == 1 && up >= 0)
		return (uint64_t)(up * 1e9 + 0.5);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Everything accel-smi knows, afresh; false with @why if libpci failed. */
static bool sample(struct smi_state *s, unsigned long n, char *why, int len)
{
	char proc[2048];

	memset(s, 0, sizeof(*s));
	if (!smi_scan_pci(s, why, len))
		return false;
	smi_read_driver(s);
	proc_root(n, proc, sizeof(proc));
	s->time_ns = sample_time(proc);
	smi_read_processes(s, proc);
	smi_read_pools(s, proc);
	/* on stderr, which leaves CSV and JSON whole */
	if (s->truncated)
		fprintf(stderr, "accel-smi: more than %d (process, device) pairs or %d libaccel pool lines: the rest are left out\n",
			SMI_MAX_PROCS, SMI_MAX_POOLS);
	return true;
}

static void pause_for(double seconds)
{
	struct timespec ts = {
		.tv_sec = (time_t)seconds,
		.tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9),
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void print(const struct smi_state *s, const struct options *o,
		  unsigned long n)
{
	switch (o->mode) {
	case TABLE:
		if (n)
			printf("\n");
		if (s->ndevs || s->npools)
			smi_print_table(s);
		break;
	case QUERY:
		if (s->ndevs || s->npools)
			smi_print_query(s);
		break;
	case JSON:
		smi_print_json(s);
		break;
	case DMON:
		smi_print_dmon(s, !n);
		break;
	case PMON:
		smi_print_pmon(s, !n);
		break;
	case QUERY_GPU:
		smi_print_query_gpu(s, o->fields, o->header && !n, o->units);
		break;
	}
	fflush(stdout);
}

/*
 * Sample and print, @o->count times or forever. What needs utilization
 * (dmon, pmon, utilization.gpu) takes a sample first, one interval
 * before the first it prints.
 */
static int run(const struct options *o)
{
	static struct smi_state states[2];
	struct smi_state *cur = &states[0], *prev = &states[1], *t;
	bool rates = o->mode == DMON || o->mode == PMON ||
		     (o->mode == QUERY_GPU && smi_query_needs_utilization(o->fields));
	unsigned long taken = 0;
	char why[128];

	if (rates) {
		if (!sample(prev, taken++, why, sizeof(why)))
			goto pci_failed;
		pause_for(o->interval);
	}
	for (unsigned long n = 0;; n++) {
		if (!sample(cur, taken++, why, sizeof(why)))
			goto pci_failed;
		if (rates)
			smi_compute_utilization(cur, prev);
		print(cur, o, n);
		if (o->count && n + 1 >= (unsigned long)o->count)
			break;
		pause_for(o->interval);
		t = prev;
		prev = cur;
		cur = t;
	}
	return diagnose(cur);

pci_failed:
	fprintf(stderr, "accel-smi: %s\n", why);
	return EXIT_PCI;
}

/* SEC: seconds, fractions allowed, 0 for no pause (replayed snapshots). */
static bool parse_seconds(const char *text, double *seconds)
{
	char *end;

	errno = 0;
	*seconds = strtod(text, &end);
	return !errno && end != text && !*end && isfinite(*seconds) &&
	       *seconds >= 0 && *seconds <= 86400;
}

/* csv[,noheader][,nounits] */
static bool parse_format(const char *text, struct options *o)
{
	char buf[64], *tok, *save;
	bool csv = false;

	snprintf(buf, sizeof(buf), "%s", text);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "csv"))
			csv = true;
		else if (!strcmp(tok, "noheader"))
			o->header = false;
		else if (!strcmp(tok, "nounits"))
			o->units = false;
		else
			return false;
	}
	return csv && strlen(text) < sizeof(buf);
}

static int set_mode(struct options *o, enum mode mode)
{
	if (o->mode != TABLE && o->mode != mode) {
		fprintf(stderr, "accel-smi: choose one of -q, --json, dmon, pmon and --query-gpu\n");
		return EXIT_USAGE;
	}
	o->mode = mode;
	return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option opts[] = {
		{ "query", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "loop", required_argument, NULL, 'l' },
		{ "delay", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'c' },
		{ "query-gpu", required_argument, NULL, 'g' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	const char *format = NULL;
	bool looping = false;		/* -l given */
	char why[128], *end;
	int c, err = 0;

	while (!err && (c = getopt_long(argc, argv, "ql:d:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'q':
			err = set_mode(o, QUERY);
			break;
		case 'j':
			err = set_mode(o, JSON);
			break;
		case 'g':
			err = set_mode(o, QUERY_GPU);
			o->fields = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case 'l':
		case 'd':
			if (!parse_seconds(optarg, &o->interval)) {
				fprintf(stderr, "accel-smi: -%c wants seconds, not '%s'\n", c, optarg);
				return EXIT_USAGE;
			}
			/* -d: the interval of dmon, pmon and utilization.gpu */
			looping |= c == 'l';
			break;
		case 'c':
			errno = 0;
			o->count = strtol(optarg, &end, 10);
			if (errno || *end || o->count < 1) {
				fprintf(stderr, "accel-smi: -c wants a count of 1 or more, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return -1;
		case 'V':
			printf("accel-smi %s\n", ACCEL_SMI_VERSION);
			return -1;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (err)
		return err;
	/* getopt_long has put the options after dmon or pmon before them */
	if (optind < argc) {
		if (!strcmp(argv[optind], "dmon"))
			err = set_mode(o, DMON);
		else if (!strcmp(argv[optind], "pmon"))
			err = set_mode(o, PMON);
		else
			err = EXIT_USAGE;
		if (!err && ++optind < argc)
			err = EXIT_USAGE;
		if (err == EXIT_USAGE)
			usage(stderr);
		if (err)
			return err;
	}
	if (o->mode == QUERY_GPU) {
		if (!format || !parse_format(format, o)) {
			fprintf(stderr, "accel-smi: --query-gpu wants --format=csv[,noheader][,nounits]\n");
			return EXIT_QUERY;
		}
		if (!smi_query_fields_valid(o->fields, why, sizeof(why))) {
			fprintf(stderr, "accel-smi: %s (see accel-smi --help)\n", why);
			return EXIT_QUERY;
		}
	} else if (format) {
		fprintf(stderr, "accel-smi: --format goes with --query-gpu\n");
		return EXIT_USAGE;
	}
	/* one sample, unless looping: dmon and pmon loop, as nvidia-smi's */
	if (!looping && !o->count && o->mode != DMON && o->mode != PMON)
		o->count = 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { .mode = TABLE, .interval = 1, .header = true,
			     .units = true };
	int err = parse_args(argc, argv, &o);

	if (err)
		return err < 0 ? 0 : err;
	return run(&o);
}
