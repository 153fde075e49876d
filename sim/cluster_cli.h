/* SPDX-License-Identifier: MIT */
/* `mroc-sim cluster`: see cluster_cli.c and `mroc-sim cluster --help`. */
#ifndef MROC_SIM_CLUSTER_CLI_H
#define MROC_SIM_CLUSTER_CLI_H

/* argv[0] is "cluster".  Returns the exit status: 0, 1 (a run failed) or 2 (usage). */
int cluster_cmd(int argc, char **argv);

#endif
