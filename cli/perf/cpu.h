/* SPDX-License-Identifier: MIT */
/*
 * mroc-perf --cpu_util: the CPU a run used, as perftest reports it (the
 * host's busy share from /proc/stat over the run: with mroc most of the work
 * is mrocd's, not the benchmark's) and this process's own share (getrusage).
 * No libmroc: tests/unit/test_perf_report.c links it.
 */
#ifndef MROC_PERF_CPU_H
#define MROC_PERF_CPU_H

#include <stdbool.h>
#include <stdint.h>

struct cpu_sample {
	uint64_t busy, total;		/* /proc/stat "cpu" line, in ticks (all CPUs) */
	uint64_t self_ns;		/* this process: user + system */
	uint64_t wall_ns;		/* CLOCK_MONOTONIC */
	bool host_ok;			/* /proc/stat was readable */
};

struct cpu_util {
	double host;			/* % of all CPUs busy (perftest's CPU_Util[%]) */
	double self;			/* % of one CPU used by this process */
};

/* Busy and total ticks from the first ("cpu ") line of /proc/stat text; 0 or -EINVAL. */
int cpu_parse_stat(const char *text, uint64_t *busy, uint64_t *total);
/* Take a sample now. */
void cpu_sample(struct cpu_sample *s);
/* Utilisation between two samples (0 where nothing was measured). */
void cpu_util_between(const struct cpu_sample *a, const struct cpu_sample *b, struct cpu_util *u);

#endif
