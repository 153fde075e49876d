/* SPDX-License-Identifier: MIT */
/* Command-line values shared by mroc-sim's commands (mroc_sim.c, run_cli.c, cluster_cli.c). */
#ifndef MROC_SIM_CLIARGS_H
#define MROC_SIM_CLIARGS_H

#include <stdint.h>

/* An integer with an optional K, M or G suffix, each a factor of unit (1000 or 1024). */
int sim_parse_scaled(const char *s, uint64_t unit, uint64_t *out);
/* A number in [lo, hi]. */
int sim_parse_double(const char *s, double lo, double hi, double *out);
/* Monotonic wall-clock seconds, for the simulator's own speed (events per second). */
double sim_wall_now(void);

#endif
