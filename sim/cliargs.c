// SPDX-License-Identifier: MIT
/* Command-line values shared by mroc-sim's commands (see cliargs.h). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "cliargs.h"

int sim_parse_scaled(const char *s, uint64_t unit, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k': v *= unit; end++; break;
	case 'M': case 'm': v *= unit * unit; end++; break;
	case 'G': case 'g': v *= unit * unit * unit; end++; break;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int sim_parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || *out < lo || *out > hi ? -EINVAL : 0;
}

double sim_wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
