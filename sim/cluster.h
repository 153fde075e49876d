/* SPDX-License-Identifier: MIT */
/*
 * One cluster run: build the fabric and the hosts (cnet.h), place a job's
 * ranks on hosts, connect its QPs, run one collective (collective.h) with an
 * optional failure in the middle, and collect the figures and counters.
 * Shared by the tests and `mroc-sim cluster`.
 */
#ifndef MROC_SIM_CLUSTER_H
#define MROC_SIM_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "background.h"
#include "cnet.h"
#include "collective.h"

/*
 * What runs on the hosts, and on which fabric.  The RoCEv2 baselines use the
 * engine's RoCEv2 mode (one path, go-back-N on a sequence NAK or a timeout)
 * with the engine's own ECN AIMD as the stand-in for DCQCN.
 *  - rocev2-lossy: today's lossy fabric with the simulator's aggressive
 *    200 us minimum RTO, for reference (what issue #7 compared against);
 *  - rocev2-qps: the same with k QPs per connection, each hashed onto a plane;
 *  - rocev2-pfc: RoCEv2 as deployed: a PFC-lossless fabric and the NIC's
 *    local ACK timeout (fixed, no backoff: nic_timeout_ns, nic_retry);
 *  - rocev2-qp-per-plane: rocev2-pfc with one QP per plane per connection,
 *    each pinned to its plane's port, as NCCL runs a QP per NIC port.
 */
enum clu_transport {
	CLU_METAROCE = 0,	/* npaths paths per QP, a NIC port per path's plane */
	CLU_ROCEV2,		/* rocev2-lossy: one path per QP; the NIC hashes it onto a plane */
	CLU_ROCEV2_QPS,		/* rocev2-lossy with k QPs per connection (QP scaling) */
	CLU_ROCEV2_PFC,		/* rocev2-pfc */
	CLU_ROCEV2_QPP,		/* rocev2-qp-per-plane */
	CLU__TRANSPORTS,
};

/* NCCL_IB_TIMEOUT's default, 18: the local ACK timeout is 4.096 us x 2^18 = 1.07 s. */
#define CLU_IB_TIMEOUT_DEFAULT	18
#define CLU_IB_RETRY_DEFAULT	7	/* NCCL_IB_RETRY_CNT's default */
static inline uint64_t clu_ib_timeout_ns(unsigned exp)
{
	return exp > 31 ? 0 : (4096ULL << exp);
}

static inline bool clu_transport_pfc(uint8_t t)
{
	return t == CLU_ROCEV2_PFC || t == CLU_ROCEV2_QPP;
}

/*
 * Where rank i of an n-rank job lives.  packed: host i (ring neighbours share
 * a leaf); fragmented: leaf i mod L, round-robin, so every ring hop and most
 * flows cross the spines, as a job scattered by a busy scheduler does;
 * random: a seeded shuffle of the hosts.
 */
enum clu_placement {
	CLU_PACKED = 0,
	CLU_FRAGMENTED,
	CLU_RANDOM,
	CLU__PLACEMENTS,
};

enum clu_failure {
	CLU_FAIL_NONE = 0,
	CLU_FAIL_SPINE,		/* fail_plane's fail_spine, every cable */
	CLU_FAIL_CABLE,		/* fail_plane: fail_leaf <-> fail_spine, both ways */
	CLU_FAIL_DOWNLINK,	/* fail_plane: fail_spine -> fail_leaf only */
};

struct clu_config {
	struct cnet_config net;
	uint8_t transport;		/* enum clu_transport */
	uint8_t npaths;			/* MetaRoCE paths per QP; 0 = 2 per plane, at most 16 */
	uint32_t qps;			/* CLU_ROCEV2_QPS: k */
	uint64_t nic_timeout_ns;	/* PFC transports: local ACK timeout (fixed) */
	uint32_t nic_retry;		/* ... and retries after it */
	uint8_t kind;			/* enum coll_kind */
	uint8_t algo;			/* enum coll_algo (stepped kinds; auto by default) */
	uint32_t nranks;		/* 0 = every host */
	uint8_t placement;		/* enum clu_placement */
	const uint32_t *rank_hosts;	/* nranks hosts: overrides placement (tests) */
	uint64_t bytes;
	uint32_t msg_bytes;
	uint32_t senders;		/* incast */
	bool verify;
	uint8_t failure;		/* enum clu_failure */
	uint32_t fail_plane, fail_leaf, fail_spine;
	uint64_t fail_after_ns;		/* after the operation starts */
	uint64_t time_limit_ns;		/* simulated, for the operation */
	uint64_t seed;			/* everything: fabric hashes, losses, engines, data */
	/*
	 * Background: a second job (background.h) on the hosts the measured job
	 * does not use (all hosts if it uses them all), started bg_warmup_ns
	 * before the first operation and running until the last ends.
	 */
	uint8_t bg;			/* enum bg_kind; BG_NONE = an idle fabric */
	double bg_load;			/* per sender, share of its NIC */
	uint32_t bg_senders;		/* incast; 0 = 7 */
	uint32_t bg_msg_bytes;		/* 0 = 64 KiB */
	uint64_t bg_warmup_ns;
	const uint32_t *bg_hosts;	/* the background job's hosts (incast: receiver first); */
	uint32_t bg_nhosts;		/* NULL = as above */
	/* The operation this many times back to back (>= 1; 0 = 1): a distribution. */
	uint32_t iters;
	/* Optional: called once, before the first operation's QPs connect (traces see the CM). */
	void (*setup)(struct cnet *cn, void *ctx);
	void *setup_ctx;
	/* Optional: called after each operation, before its QPs go (per-flow reports). */
	void (*report)(struct cnet *cn, const struct coll *c, void *ctx);
	void *report_ctx;
};

/*
 * Defaults: cnet_config_default (64 hosts, 4 planes of 8 leaves x 8 spines,
 * 25 Gbit/s, 1 us cables, 512 KiB queues, ECN above 64 KiB, converge 10 ms),
 * MetaRoCE, fragmented ring AllReduce of 1 MiB in WRs of at most 1 MiB,
 * 7 incast senders, 4 QPs for QP scaling, 2 s limit, no verify, seed 1;
 * PFC transports: NCCL's IB timeout 18 (1.07 s) and retry count 7; no
 * background (64 KiB WRITEs, 7 incast senders, 200 us warm-up when asked), one
 * iteration.
 */
void clu_config_default(struct clu_config *cfg);

struct clu_result {
	int err;
	char why[320];
	struct coll_result coll;
	struct cnet_stats net;
	struct engine_stats eng;	/* summed over every host */
	uint64_t t_connected;		/* when every QP was connected (the operation starts) */
	uint64_t payload_placed;	/* EC_RX_BYTES_PLACED over every host */
	uint32_t hosts_on_leaf_max;	/* of the job: the most ranks on one leaf */
	struct bg_stats bg;
	/* Over the iterations (coll is the last one's): completion times in us */
	uint32_t iters_done;
	double t_min_us, t_p50_us, t_p99_us, t_max_us, t_mean_us;
};

/* 0 when the operation completed (and, with verify, its data checked out). */
int clu_run(const struct clu_config *cfg, struct clu_result *res);

const char *clu_transport_name(enum clu_transport t);
int clu_transport_parse(const char *s, enum clu_transport *out);
const char *clu_placement_name(enum clu_placement p);
int clu_placement_parse(const char *s, enum clu_placement *out);

/* rank -> host for n ranks (n <= hosts); 0 or -EINVAL. */
int clu_place(const struct fabric *f, enum clu_placement p, uint32_t n, uint64_t seed,
	      uint32_t *rank_host);

#endif
