// SPDX-License-Identifier: MIT
/* The collectives' kinds and algorithms (see coll_algo.h). */
#include <errno.h>
#include <string.h>

#include "coll_algo.h"

static const char *const kind_names[COLL__KINDS] = {
	[COLL_ALLREDUCE] = "allreduce",
	[COLL_ALLTOALL] = "alltoall",
	[COLL_PERMUTATION] = "permutation",
	[COLL_INCAST] = "incast",
	[COLL_ALLGATHER] = "allgather",
	[COLL_REDUCESCATTER] = "reducescatter",
};

static const char *const algo_names[COLL__ALGOS] = {
	[COLL_ALGO_AUTO] = "auto",
	[COLL_ALGO_RING] = "ring",
	[COLL_ALGO_RD] = "rd",
};

/* Index of s in names[0 .. n-1], or -EINVAL. */
static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -EINVAL;
}

const char *coll_kind_name(enum coll_kind k)
{
	return k < COLL__KINDS ? kind_names[k] : "?";
}

int coll_kind_parse(const char *s, enum coll_kind *out)
{
	int i = name_index(kind_names, COLL__KINDS, s);

	if (i < 0)
		return i;
	*out = (enum coll_kind)i;
	return 0;
}

const char *coll_algo_name(enum coll_algo a)
{
	return a < COLL__ALGOS ? algo_names[a] : "?";
}

int coll_algo_parse(const char *s, enum coll_algo *out)
{
	int i = name_index(algo_names, COLL__ALGOS, s);

	if (i < 0)
		return i;
	*out = (enum coll_algo)i;
	return 0;
}

bool coll_stepped(enum coll_kind k)
{
	return k == COLL_ALLREDUCE || k == COLL_ALLGATHER || k == COLL_REDUCESCATTER;
}

uint32_t coll_log2_exact(uint32_t n)
{
	uint32_t l = 0;

	while ((1u << l) < n)
		l++;
	return (1u << l) == n ? l : 0;
}

enum coll_algo coll_algo_pick(enum coll_kind k, enum coll_algo want, uint32_t n, uint64_t bytes,
			      uint64_t nic_bps)
{
	uint32_t l = n >= 2 ? coll_log2_exact(n) : 0;
	double ring_steps, ring_bytes, rd_steps, rd_bytes, ns_per_byte;

	if (!coll_stepped(k) || !l)
		return COLL_ALGO_RING;
	if (want != COLL_ALGO_AUTO)
		return want;
	/* Bytes a rank sends, in chunks of bytes / n: AllReduce 2(n-1) vs n log2 n. */
	ring_steps = k == COLL_ALLREDUCE ? 2.0 * (n - 1) : n - 1;
	ring_bytes = (double)bytes / n * ring_steps;
	rd_steps = l;
	rd_bytes = k == COLL_ALLREDUCE ? (double)bytes * l : (double)bytes / n * (n - 1);
	ns_per_byte = nic_bps ? 8e9 / (double)nic_bps : 0;
	return rd_steps * COLL_STEP_NS + rd_bytes * ns_per_byte <=
	       ring_steps * COLL_STEP_NS + ring_bytes * ns_per_byte ? COLL_ALGO_RD : COLL_ALGO_RING;
}

double coll_bus_factor(enum coll_kind k, uint32_t n)
{
	switch (k) {
	case COLL_ALLREDUCE:
		return 2.0 * (n - 1) / n;
	case COLL_ALLTOALL:
	case COLL_ALLGATHER:
	case COLL_REDUCESCATTER:
		return (double)(n - 1) / n;
	default:
		return 1.0;
	}
}
