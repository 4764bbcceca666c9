// SPDX-License-Identifier: MIT
/* Small helpers shared by the backends. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "core/internal.h"

/* "123", "64K", "256M", "2G" (powers of 1024); -EINVAL for anything else. */
int accel_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		shift = 10;
		end++;
		break;
	case 'M':
		shift = 20;
		end++;
		break;
	case 'G':
		shift = 30;
		end++;
		break;
	default:
		break;
	}
	if (*end || (v << shift) >> shift != v)
		return -EINVAL;
	*out = v << shift;
	return 0;
}
