/* SPDX-License-Identifier: MIT */
/*
 * Incast: N senders, each with its own connected QP, write the same number
 * of bytes to one receiver at the same time.  Hosts 0..N-1 send, host N
 * receives; every host is on every plane.  The simulation has downlinks
 * (simnet.h): each plane's last hop in front of the receiver is one queue
 * that all N senders share, so the receiver's downlinks are the bottleneck
 * (N x the receiver's link rate offered into 1 x).
 *
 * Each sender runs a transfer workload (workload.h) with its own data
 * pattern (wl.seed + i) and service id (wl.service_id + i); completions are
 * routed to the right workload by QP number, and at the end every sender's
 * destination region is compared byte for byte with its source.
 *
 * Every engine's link_rate_bps is its access rate (planes x plane rate), so
 * a receiver with rate hints on can compute a fair share.
 *
 * Fairness is Jain's index, (sum x)^2 / (n sum x^2): 1 when all x are
 * equal, 1/n when one sender has everything.  It is computed twice: over
 * each sender's goodput for its whole transfer, and over the rates the
 * senders got while all of them were active (from the last sender's first
 * post to the first sender's last completion), which is the stricter one:
 * a sender that finishes early leaves the link to the others, which evens
 * out whole-transfer figures.
 */
#ifndef MROC_SIM_INCAST_H
#define MROC_SIM_INCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "simnet.h"
#include "workload.h"

#define INC_MAX_SENDERS	32

struct inc_config {
	uint32_t senders;		/* 1..INC_MAX_SENDERS */
	/* fabric: host-pair links and downlinks alike */
	uint32_t planes;
	uint64_t plane_rate_bps;
	uint64_t delay_ns;		/* host-pair links; downlinks add none */
	uint64_t queue_bytes;		/* drop-tail limit */
	uint64_t ecn_bytes;		/* CE marking threshold */
	uint8_t route;			/* enum sim_route */
	/*
	 * Faults, as in scn_config: random loss on every host-pair link (the
	 * downlinks lose nothing more), a plane's own loss instead (1: dead
	 * from the start), a plane blackholed blackhole_at_ns after the first
	 * post, for blackhole_ns (0: for good; blackhole_plane -1: none),
	 * jitter and duplicates on the host-pair links (sim_link_cfg).
	 */
	double loss;
	uint64_t jitter_ns;
	double dup;
	double plane_loss[SIM_MAX_PLANES];
	uint64_t plane_loss_set;	/* bit p: plane_loss[p] applies */
	int32_t blackhole_plane;
	uint64_t blackhole_at_ns, blackhole_ns;
	/* engines (0 = the engine's default) */
	bool rate_hints;
	uint64_t hint_interval_ns;
	uint32_t mtu;
	uint64_t rto_min_ns;
	/*
	 * Each sender's workload: client = i and server = senders are set by
	 * inc_run; total_bytes is per sender.
	 */
	struct wl_config wl;
	uint64_t time_limit_ns;		/* simulated, from 0 */
	uint64_t seed;			/* simulation seed */
	bool verify;			/* byte-compare every sender's data at the end */
	/*
	 * Optional: called once the simulation and the workloads exist, before
	 * anything runs, e.g. to sim_schedule a link change or a sampler.
	 */
	void (*setup)(struct sim *sim, void *ctx);
	void *setup_ctx;
	/* Optional, as in scn_config. */
	sim_trace_fn trace;
	void *trace_ctx;
	void (*run_hook)(void *ctx, bool end);
	void *run_hook_ctx;
	void (*inspect)(struct sim *sim, struct workload *const *wl, uint32_t n, void *ctx);
	void *inspect_ctx;
};

/*
 * Defaults: 3 senders; 4 planes x 25 Gbit/s, 2 us propagation, 512 KiB
 * queues, ECN above 64 KiB, ROUTE_PATH_ID (4 paths on 4 planes); MTU 4096,
 * 200 us minimum RTO, rate hints on; 16 MiB per sender of 64 KiB WRITEs,
 * 16 outstanding; 1 s time limit; verify.
 */
void inc_config_default(struct inc_config *cfg);

struct inc_sender {
	struct wl_result wl;
	double gbps;			/* bytes over its own first post .. last completion */
	double contended_gbps;		/* while every sender was active */
	uint32_t hint_mbps;		/* rate hint it had when the first sender finished */
	struct engine_stats eng;
};

struct inc_result {
	int err;			/* 0, or the first failure */
	char why[384];
	uint32_t senders;
	bool done;			/* every sender completed */
	struct inc_sender s[INC_MAX_SENDERS];
	double total_gbps;		/* all bytes over first post .. last completion */
	double capacity_gbps;		/* goodput capacity of the receiver's downlinks on the
					 * planes that stay alive (a plane dead for good counts
					 * for nothing) */
	double jain;			/* over s[].gbps */
	double jain_contended;		/* over s[].contended_gbps; 0 if no such window */
	uint64_t t_first_post, t_last_cqe;
	uint64_t t_contended_start, t_contended_end;
	uint64_t t_end_ns;
	/* The receiver's downlinks, summed (max_queue_bytes: the largest). */
	struct sim_link_stats bottleneck;
	struct sim_link_stats bottleneck_plane[SIM_MAX_PLANES];
	struct sim_stats sim;
	struct engine_stats rx_eng;	/* the receiver's engine */
};

/* Build, run and tear down.  0 when every sender completed and every check passed. */
int inc_run(const struct inc_config *cfg, struct inc_result *res);

/* Jain's fairness index of x[0..n-1]; 0 if n = 0 or every x is 0. */
double inc_jain(const double *x, uint32_t n);

#endif
