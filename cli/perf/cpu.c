// SPDX-License-Identifier: MIT
/* mroc-perf --cpu_util (see cpu.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cpu.h"

/*
 * "cpu  user nice system idle iowait irq softirq steal guest guest_nice":
 * idle and iowait are the idle time, guest time is already inside user and
 * nice (proc(5)), so it is not added again.
 */
int cpu_parse_stat(const char *text, uint64_t *busy, uint64_t *total)
{
	uint64_t v[8] = { 0 };
	int n;

	if (strncmp(text, "cpu ", 4))
		return -EINVAL;
	n = sscanf(text + 4, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %" SCNu64 " %" SCNu64 " %" SCNu64, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		   &v[6], &v[7]);
	if (n < 4)
		return -EINVAL;
	*total = 0;
	for (int i = 0; i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - v[4];
	return 0;
}

static uint64_t tv_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000000ull + (uint64_t)tv->tv_usec * 1000ull;
}

void cpu_sample(struct cpu_sample *s)
{
	char line[256];
	struct rusage ru;
	struct timespec ts;
	FILE *f;

	memset(s, 0, sizeof(*s));
	f = fopen("/proc/stat", "re");
	if (f) {
		s->host_ok = fgets(line, sizeof(line), f) &&
			     !cpu_parse_stat(line, &s->busy, &s->total);
		fclose(f);
	}
	if (!getrusage(RUSAGE_SELF, &ru))
		s->self_ns = tv_ns(&ru.ru_utime) + tv_ns(&ru.ru_stime);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->wall_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cpu_util_between(const struct cpu_sample *a, const struct cpu_sample *b, struct cpu_util *u)
{
	memset(u, 0, sizeof(*u));
	if (a->host_ok && b->host_ok && b->total > a->total && b->busy >= a->busy)
		u->host = 100.0 * (double)(b->busy - a->busy) / (double)(b->total - a->total);
	if (b->wall_ns > a->wall_ns && b->self_ns >= a->self_ns)
		u->self = 100.0 * (double)(b->self_ns - a->self_ns) / (double)(b->wall_ns - a->wall_ns);
}
