// SPDX-License-Identifier: MIT
/*
 * accel-smi: list the accelerators, with the PCI view (libpci) and the
 * driver's view side by side, as nvidia-smi does for GPUs.
 *
 *   accel-smi            a table
 *   accel-smi -q         every detail
 *   accel-smi --json     one JSON object, for scripts
 *
 * Exit status: 0; 1 when no accelerator is on the PCI bus; 2 when one is
 * but simaccel.ko is not loaded or not bound to it; 3 when libpci fails;
 * 64 for a bad command line.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../../include/accel_hw.h"
#include "accel_smi.h"

enum { EXIT_NO_DEVICE = 1, EXIT_NO_DRIVER = 2, EXIT_PCI = 3, EXIT_USAGE = 64 };

static void usage(FILE *f)
{
	fprintf(f, "usage: accel-smi [-q | --json] [-h] [--version]\n"
		   "  (none)      a table of the accelerators and their processes\n"
		   "  -q, --query every detail of each accelerator\n"
		   "  --json      the same as one JSON object\n"
		   "Processes come from /proc/PID/fdinfo: a user sees their own, root everyone's.\n");
}

/* Why the devices cannot be used, said once, on stderr; the exit status. */
static int diagnose(const struct smi_state *s)
{
	int unbound = 0;

	if (!s->ndevs) {
		fprintf(stderr, "accel-smi: no accelerator (PCI %04x:%04x) was found on the PCI bus\n",
			ACCEL_PCI_VENDOR_ID, ACCEL_PCI_DEVICE_ID);
		return EXIT_NO_DEVICE;
	}
	if (!s->driver_loaded) {
		fprintf(stderr, "accel-smi: the " SMI_DRIVER " driver is not loaded: run 'modprobe " SMI_DRIVER "' as root\n");
		return EXIT_NO_DRIVER;
	}
	for (int i = 0; i < s->ndevs; i++) {
		if (s->devs[i].bound)
			continue;
		fprintf(stderr, "accel-smi: %s is not bound to " SMI_DRIVER ".ko (its driver: %s)\n",
			s->devs[i].bdf,
			s->devs[i].driver[0] ? s->devs[i].driver : "none");
		unbound++;
	}
	return unbound ? EXIT_NO_DRIVER : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "query", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	static struct smi_state state;
	int c, mode = 0, status;
	char why[128];

	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'q':
		case 'j':
			if (mode && mode != c) {
				fprintf(stderr, "accel-smi: -q and --json exclude each other\n");
				return EXIT_USAGE;
			}
			mode = c;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("accel-smi %s\n", ACCEL_SMI_VERSION);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!smi_scan_pci(&state, why, sizeof(why))) {
		fprintf(stderr, "accel-smi: %s\n", why);
		return EXIT_PCI;
	}
	smi_read_driver(&state);
	smi_read_processes(&state);
	if (mode == 'j')
		smi_print_json(&state);
	else if (state.ndevs && mode == 'q')
		smi_print_query(&state);
	else if (state.ndevs)
		smi_print_table(&state);
	status = diagnose(&state);
	return status;
}
