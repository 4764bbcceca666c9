/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A tiny test runner: CHECK macros and TAP-like output. */
#ifndef ACCEL_CHECK_H
#define ACCEL_CHECK_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

extern bool check_failed_flag;

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n",	\
				__FILE__, __LINE__, #cond);		\
			check_failed_flag = true;			\
			return;						\
		}							\
	} while (0)

#define CHECK_EQ(a, b)							\
	do {								\
		uint64_t _a = (a), _b = (b);				\
		if (_a != _b) {						\
			fprintf(stderr, "  %s:%d: %s == 0x%" PRIx64	\
				", expected %s == 0x%" PRIx64 "\n",	\
				__FILE__, __LINE__, #a, _a, #b, _b);	\
			check_failed_flag = true;			\
			return;						\
		}							\
	} while (0)

struct test {
	const char *name;
	void (*fn)(void);
};

/* Run @tests (optionally only those whose name contains argv[1]); print
 * "ok"/"not ok" lines and "N passed, N failed"; return the exit status. */
int run_tests(const struct test *tests, int argc, char **argv,
	      void (*cleanup)(bool *died));

#endif
