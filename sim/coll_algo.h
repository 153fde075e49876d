/* SPDX-License-Identifier: MIT */
/*
 * The collectives' kinds and algorithms (collective.h runs them): names,
 * which algorithm a stepped collective runs (a latency-bandwidth cost, as
 * NCCL's tuner), nccl-tests' bus-bandwidth factors.  Pure functions.
 */
#ifndef MROC_SIM_COLL_ALGO_H
#define MROC_SIM_COLL_ALGO_H

#include <stdbool.h>
#include <stdint.h>

enum coll_kind {
	COLL_ALLREDUCE = 0,
	COLL_ALLTOALL,
	COLL_PERMUTATION,
	COLL_INCAST,
	COLL_ALLGATHER,
	COLL_REDUCESCATTER,
	COLL__KINDS,
};

/*
 * How a stepped collective (AllReduce, AllGather, ReduceScatter) runs.
 * auto picks, as NCCL's tuner does, the algorithm with the smaller
 * latency-bandwidth cost: steps x COLL_STEP_NS + bytes a rank sends /
 * the NIC rate (recursive doubling only for a power-of-two rank count).
 * COLL_STEP_NS is one step's latency on the cluster fabric (4.2 us
 * measured: a 32-rank ring AllReduce of 8 B takes 62 steps in 260 us).
 */
enum coll_algo {
	COLL_ALGO_AUTO = 0,
	COLL_ALGO_RING,
	COLL_ALGO_RD,			/* recursive doubling / halving */
	COLL__ALGOS,
};

#define COLL_STEP_NS	4200ULL

const char *coll_algo_name(enum coll_algo a);
/* -EINVAL if the name is none of auto, ring, rd. */
int coll_algo_parse(const char *s, enum coll_algo *out);
/* The algorithm auto (or a request rd cannot honour) resolves to. */
enum coll_algo coll_algo_pick(enum coll_kind k, enum coll_algo want, uint32_t nranks,
			      uint64_t bytes, uint64_t nic_bps);

const char *coll_kind_name(enum coll_kind k);
/* -EINVAL if the name is none of allreduce, alltoall, permutation, incast, allgather, reducescatter. */
int coll_kind_parse(const char *s, enum coll_kind *out);

/* busbw / algbw for this kind and rank count (nccl-tests' factors). */
double coll_bus_factor(enum coll_kind k, uint32_t nranks);
/* AllReduce, AllGather and ReduceScatter run in dependent steps; the others at once. */
bool coll_stepped(enum coll_kind k);
/* log2 n for a power of two n, else 0. */
uint32_t coll_log2_exact(uint32_t n);

#endif
