/* SPDX-License-Identifier: MIT */
/*
 * Collectives on a cnet: the traffic of NCCL-style operations between the
 * ranks of one job, carried by WRITE_WITH_IMM work requests on connected
 * QPs, with nccl-tests' measures (time, algbw, busbw).
 *
 *  - ring AllReduce: 2(n-1) steps (reduce-scatter, then all-gather) over
 *    the ring rank r -> r+1; a rank sends step s+1 as soon as it has all of
 *    step s, so there is no global barrier, as in NCCL's ring;
 *  - ring ReduceScatter and AllGather: the first and the last n-1 of those;
 *  - recursive doubling (n a power of two, log2 n steps; MPICH's choice for
 *    small messages, where NCCL uses a tree): AllReduce exchanges the whole
 *    buffer with rank r ^ 2^s and adds; ReduceScatter halves (recursive
 *    halving: send the half of the current block not holding one's own
 *    chunk to r ^ n/2^(s+1), add the half received); AllGather doubles
 *    (send the 2^s chunks one has to r ^ 2^s);
 *  - AllToAll: every rank sends bytes / n to every other rank at once;
 *  - permutation: every rank sends bytes to one other (a seeded derangement);
 *  - incast: ranks 1..senders each send bytes to rank 0.
 *
 * Sizes are nccl-tests': AllReduce's buffer; AllGather's whole output and
 * ReduceScatter's whole input (n chunks of bytes / n); AllToAll's send
 * buffer per rank; bytes per flow for permutation and incast.
 *
 * A connection joins two ranks with k QPs (k > 1 is "RoCEv2 with QP
 * scaling": each QP has its own source port, so its own ECMP hash); a piece
 * of data between them is cut into k equal parts, one per QP, each posted as
 * WRITE_IMMs of at most msg_bytes.  The immediate says which step or flow the
 * bytes belong to; the receiver counts them.  Both ends of a connection send.
 *
 * With verify, every rank has its own memory and real data: AllReduce adds
 * bytes modulo 256 (reduce-scatter) and copies (all-gather), so at the end
 * every rank must hold the sum of every rank's input; the others compare
 * each destination with its source byte for byte.  Without verify, every host
 * registers one shared scratch buffer (payload is still copied by the
 * engines, only its content is not checked), so 64 hosts x 64 MiB fit.
 *
 * Functions return 0 or a negative errno; coll_create returns NULL, errno set.
 */
#ifndef MROC_SIM_COLLECTIVE_H
#define MROC_SIM_COLLECTIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "cnet.h"
#include "coll_algo.h"

struct coll_config {
	uint8_t kind;			/* enum coll_kind */
	uint8_t algo;			/* enum coll_algo, stepped kinds */
	uint64_t nic_bps;		/* a host's rate, for COLL_ALGO_AUTO */
	uint32_t nranks;		/* >= 2 */
	const uint32_t *rank_host;	/* rank -> host, nranks entries */
	uint64_t bytes;			/* nccl-tests' size (see above) */
	uint8_t mode;			/* enum mroc_mode */
	uint8_t npaths;			/* per QP (MetaRoCE) */
	uint32_t qps_per_conn;		/* k >= 1 */
	uint32_t pin_planes;		/* > 0: QP q of a connection leaves by plane q mod this */
	uint32_t msg_bytes;		/* largest WR */
	uint32_t senders;		/* incast */
	bool verify;
	uint64_t seed;			/* data, derangement */
};

struct coll_result {
	bool done;			/* every rank has everything */
	int err;			/* first failure, 0 if none */
	char why[256];
	uint64_t t_start, t_end;	/* first post, last receive completion */
	double time_us;
	double algbw_gbps;		/* GB/s, as nccl-tests (10^9 bytes) */
	double busbw_gbps;
	uint64_t payload_bytes;		/* bytes the operation moves over the network */
	uint8_t algo;			/* enum coll_algo the operation ran (stepped kinds) */
	/* payload a rank received (its WRITE_IMMs' byte_len): the least and the most */
	uint64_t rank_rx_min, rank_rx_max;
	uint32_t qps;			/* QPs in the job (both ends counted once) */
	/* incast: per sender, time until all its bytes were there; Jain's index of goodputs */
	double flow_min_us, flow_max_us;
	double jain;
};

struct coll;

/* Create the QPs and memory regions, listen and connect (the run continues in coll_start). */
struct coll *coll_create(struct cnet *cn, const struct coll_config *cfg);
void coll_destroy(struct coll *c);

/* Every QP of the job is connected. */
bool coll_connected(const struct coll *c);
/* Post the operation now. */
int coll_start(struct coll *c);
bool coll_finished(const struct coll *c);
/* After coll_finished: check the data (verify), fill the result. */
int coll_verify(struct coll *c);
const struct coll_result *coll_result(const struct coll *c);

/*
 * Flow i of a flow kind (permutation, AllToAll, incast; not the stepped
 * ones): its ranks, hosts, the sender's QP (its first, of k), and for a
 * permutation when its receiver had everything (ns after the start; 0: not
 * done, or another kind).  -ENOENT past the last flow.
 */
struct coll_flow {
	uint32_t src, dst, src_host, dst_host;
	uint32_t qpn;
	uint64_t t_done_ns;
};
int coll_flow_get(const struct coll *c, uint32_t i, struct coll_flow *out);


#endif
