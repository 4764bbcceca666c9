/* SPDX-License-Identifier: MIT */
/*
 * What the libaccel examples share: the device they run on (the first
 * visible one; ACCEL_VISIBLE_DEVICES picks it) and a check that stops the
 * program with the library's message when a call fails.
 */
#ifndef ACCEL_EXAMPLE_H
#define ACCEL_EXAMPLE_H

#include <stdio.h>
#include <stdlib.h>

#include <accel/accel.h>
#include <accel/memory.h>

#define TRY(call)							\
	do {								\
		if ((call) != ACCEL_SUCCESS) {				\
			fprintf(stderr, "%s:%d: %s failed: %s\n",	\
				__FILE__, __LINE__, #call,		\
				accel_get_last_error());		\
			exit(1);					\
		}							\
	} while (0)

/* A result the example promises; a wrong one fails the run. */
#define EXPECT(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: expected %s\n",		\
				__FILE__, __LINE__, #cond);		\
			exit(1);					\
		}							\
	} while (0)

static inline const char *example_device(struct accel_device_id *dev)
{
	const char *name;

	dev->id = 0;
	TRY(accel_get_device_name(dev, &name));
	return name;
}

#endif /* ACCEL_EXAMPLE_H */
