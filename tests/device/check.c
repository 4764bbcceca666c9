// SPDX-License-Identifier: GPL-2.0-or-later
#include "check.h"

#include <string.h>

bool check_failed_flag;

int run_tests(const struct test *tests, int argc, char **argv,
	      void (*cleanup)(bool *died))
{
	int passed = 0, failed = 0, n = 0;
	const struct test *t;

	for (t = tests; t->name; t++) {
		bool died = false;

		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		check_failed_flag = false;
		t->fn();
		cleanup(&died);
		if (died)
			fprintf(stderr, "  QEMU died during the test\n");
		n++;
		if (check_failed_flag || died) {
			failed++;
			printf("not ok %d - %s\n", n, t->name);
		} else {
			passed++;
			printf("ok %d - %s\n", n, t->name);
		}
		fflush(stdout);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
