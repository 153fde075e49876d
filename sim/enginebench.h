/* SPDX-License-Identifier: MIT */
/* mroc-sim engine: the engine's CPU cost per data packet at any QP count (enginebench.c). */
#ifndef MROC_SIM_ENGINEBENCH_H
#define MROC_SIM_ENGINEBENCH_H

int enginebench_cmd(int argc, char **argv);

#endif
