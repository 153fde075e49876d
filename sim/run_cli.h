/* SPDX-License-Identifier: MIT */
/* `mroc-sim run` and `mroc-sim incast`: see run_cli.c and `mroc-sim --help`. */
#ifndef MROC_SIM_RUN_CLI_H
#define MROC_SIM_RUN_CLI_H

#include <stdbool.h>

#include "scenario.h"

/* The help text's run and incast sections (mroc_sim.c prints the whole text). */
extern const char run_cli_usage[];

/*
 * argv[0] is "run" or "incast"; usage prints the whole help (-h).  Returns
 * the exit status: 0, 1 (the run failed) or 2 (usage).
 */
int run_cmd(int argc, char **argv, void (*usage)(void));
int incast_cmd(int argc, char **argv, void (*usage)(void));

/* A scn_config/inc_config run_hook: ctx is double[2], the wall clock at start and end. */
void run_time_hook(void *ctx, bool end);
/* A sim_trace_fn writing one line per packet to the FILE * ctx (run and cluster --trace). */
void sim_trace_pkt(void *ctx, uint64_t now, enum sim_trace_what what, const struct sim_pkt *pkt);
/* Goodput so far, also for a transfer that did not finish in time. */
double run_gbps(const struct scn_result *r);

#endif
