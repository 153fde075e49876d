/* SPDX-License-Identifier: MIT */
/*
 * Scenarios: one call that builds a two-host simulation, runs a transfer
 * workload over it and measures it.  The tests and `mroc-sim bench` share
 * these so a figure in the benchmark and a target in a test mean the same
 * thing.
 *
 * Capacities are goodput capacities: the payload rate a plane carries when
 * every packet is a full data packet (rate x mtu / (mtu + mroc headers +
 * wire overhead)).  A perfect transport reaches 1.0 of it.
 */
#ifndef MROC_SIM_SCENARIO_H
#define MROC_SIM_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>

#include "simnet.h"
#include "workload.h"

struct scn_config {
	/* fabric */
	uint32_t planes;
	uint64_t plane_rate_bps;
	uint64_t nic_rate_bps;		/* 0 = planes x plane_rate_bps */
	uint64_t delay_ns;
	uint64_t queue_bytes;
	uint64_t ecn_bytes;
	bool ecn_virtual;		/* mark on a virtual queue blind to the TBF's bucket, as
					 * scripts/fabric does (sim_link_cfg.ecn_virtual) */
	double loss;			/* every link, both directions */
	bool loss_at_enqueue;		/* lost before the queue, using no rate (scripts/fabric) */
	uint64_t jitter_ns;		/* every link: sim_link_cfg.jitter_ns (reordering) */
	double dup;			/* ... and sim_link_cfg.dup (duplicates) */
	uint64_t burst_bytes;		/* > 0: planes shape with a token bucket this deep (TBF) */
	uint8_t route;			/* enum sim_route */
	uint32_t ecmp_net, ecmp_seed;	/* SIM_ROUTE_LINUX (sim_config; 0 = its defaults) */
	int32_t blackhole_plane;	/* -1 = none; else both directions of it */
	uint64_t blackhole_at_ns;	/* after the first post */
	uint64_t blackhole_ns;		/* > 0: the plane comes back after this long */
	uint64_t outage_ns;		/* > 0: every plane goes dark this long at blackhole_at_ns */
	uint64_t settle_ns;		/* measure "after" goodput from blackhole + this */
	uint64_t clock_skew_ns;		/* each host's clock: offset below this (sim_config) */
	uint32_t clock_drift_ppm;	/* ... and drift within +- this */
	/* engine (0 = the engine's default) */
	uint32_t mtu;
	uint64_t rto_min_ns;
	uint64_t rto_init_ns;		/* 0: the simulator's (at least rto_min_ns) */
	bool daemon_engine;		/* mrocd's defaults: no link rate (no rate hints, no
					 * repath_spread), as bench-fabric's daemons run */
	bool delay_target_set;		/* use delay_target_ns, not the engine's default */
	uint64_t delay_target_ns;
	uint32_t peer_window_pkts;	/* engine's peer window (0: none, the engine's default) */
	uint64_t peer_host_delay_ns;	/* ... and its endpoint delay target (0: off) */
	uint32_t repath_round_rtts;	/* engine_config.repath_round_rtts (0: off) */
	/* workload */
	struct wl_config wl;
	uint64_t time_limit_ns;		/* of simulated time, from 0 */
	uint64_t seed;			/* simulation seed (the workload has its own) */
	bool verify;			/* byte-compare both destinations at the end */
	/* Optional: every packet event (see sim_set_trace). */
	sim_trace_fn trace;
	void *trace_ctx;
	/* Optional: drop chosen packets (see sim_set_drop). */
	sim_drop_fn drop;
	void *drop_ctx;
	/*
	 * A busy client host: from host_delay_at_ns (simulated time) on, every
	 * packet it receives (the ACKs) waits host_delay_ns more; after_gbps is
	 * then measured from the step + settle_ns to the end.
	 */
	uint64_t host_delay_ns, host_delay_at_ns;
	/* Every host's receive path after its arrival stamp: polls and stalls (sim_set_host_rx). */
	struct sim_host_rx host_rx;
	/* Per plane, both directions: > 0 replaces delay_ns (path delay skew). */
	uint64_t plane_delay_ns[SIM_MAX_PLANES];
	/*
	 * Per plane, both directions: bit p of plane_loss_set replaces loss on
	 * plane p by plane_loss[p] (one plane lossier than the rest: the `loss`
	 * move's case, issue #27).
	 */
	uint64_t plane_loss_set;
	double plane_loss[SIM_MAX_PLANES];
	/*
	 * Optional: called right before (end = false) and after (end = true)
	 * the simulation runs, so a benchmark can time the event loop alone,
	 * without buffer set-up and verification (this library reads no clock).
	 */
	void (*run_hook)(void *ctx, bool end);
	void *run_hook_ctx;
	/* Optional: look at the simulation before it is torn down (debugging). */
	void (*inspect)(struct sim *sim, struct workload *wl, void *ctx);
	void *inspect_ctx;
};

/*
 * Defaults (datacenter-like): 4 planes x 25 Gbit/s, 2 us propagation,
 * 512 KiB drop-tail queues, ECN marking above 64 KiB, MTU 4096, ROUTE_HASH,
 * no loss; 64 MiB of 64 KiB messages, 16 outstanding, WRITE/WRITE_IMM/SEND/
 * READ in equal shares, 4 paths; 1 s time limit; verify.
 */
void scn_config_default(struct scn_config *cfg);
/*
 * The benchmark's and the targets' setup: the defaults with WRITEs only, so
 * data flows one way and "fraction of capacity" is plain, 32 outstanding
 * (enough for 8 planes), and ROUTE_PATH_ID, so P paths use P planes
 * whatever the hash.
 */
void scn_config_bench(struct scn_config *cfg);
/*
 * scripts/bench-fabric.sh's fabric-bound half, as the simulator can have it
 * (issue #27): 4 planes of 250 Mbit/s shaped by TBF (burst 64 KiB, limit
 * rate x 20 ms + burst = 675 KiB), CE above 64 KiB of a virtual queue in
 * front of the TBF (bpf/impair.bpf.c: blind to the bucket), loss in front of
 * the shaper, veth NICs far faster than the planes (10 Gbit/s); the leaves'
 * Linux ECMP hash giving a source port the plane the real fabric would
 * (SIM_ROUTE_LINUX); hosts whose worker takes its ring every 16 us and is
 * off its CPU for 200 us about every millisecond; its
 * daemons' engines (MTU 3380, rto_min 5 ms, rto_init 20 ms, no link rate)
 * and mroc-perf write_bw's 128 x 64 KiB WRITEs in flight, 256 MiB.  Sets
 * those on cfg and leaves the rest (scn_config_default first for a run of
 * its own; mroc-sim run --like-fabric then takes later options over it).
 *
 * The busy hosts are what the real run has and a quiet simulation lacked:
 * two daemons, two mroc-perf and the planes' softirqs on 2 cores.  Its paths
 * show SRTTs of 0.29-0.55 ms with a plane each (the simulation without: 0.10),
 * and their rates are uneven enough that paths hashed two to a plane while
 * another idles find the idle one (every quiet real 4-path lossless run ended
 * with a plane per path at 0.96 Gbit/s); without it, 2/2/0/0 and 3/1/0/0
 * placements (a third of the draws) deliver alike and stay at half the
 * capacity for the whole run.
 */
void scn_config_like_fabric(struct scn_config *cfg);

/*
 * scn_config_like_fabric with hosts as busy as bench-fabric's were in its
 * quiet runs of session 15 (mroc-sim run --like-fabric-busy, issue #27): a
 * worker that takes its ring every 50 us and is off its CPU for 500 us about
 * every 2 ms, where --like-fabric's takes it every 16 us with 200 us off
 * about every 1 ms.  Chosen by those runs' per-path counters, not by
 * goodput: with --like-fabric's hosts an ACK comes back so soon that the
 * next packet nearly always finds the token bucket still queueing, so 0.94
 * of the packets are marked (4 paths, 4 s), alpha sits at 1.0 and windows
 * at one packet; the real runs had 0.72-0.78 of their packets marked, alpha
 * 0.41-0.60 and windows of 10-15 KB.  Later ACKs let the bucket's queue
 * drain before the next packet, as the real hosts' did: 0.78 marked, alpha
 * 0.82-0.86, windows of 4-8 KB (docs/notes/2026-12-05/s15-sim15.md has the
 * table, and what still differs).  The real daemons stamp a packet's
 * arrival behind the fabric's own forwarding (softirqs on the same 2
 * cores), so part of the real hosts' delay is in their RTTs, where this
 * model puts all of it in the host's wait: its rx_wait per packet is
 * 60-78 us against a real 10-42.
 */
void scn_config_like_fabric_busy(struct scn_config *cfg);

/*
 * scn_config_like_fabric with each stall holding the whole worker, not only
 * its receive ring (mroc-sim run --like-fabric-held, issue #27, session 19):
 * a worker off its CPU runs no timer and sends nothing, so a tail-loss probe
 * due in a stall goes out after it, later, and an RTO loses the probes it
 * would have had.  The one model with the real 10 % row's timeouts: 4 paths,
 * 240M, seeds 1-6, 1.9-2.7 RTOs per 10,000 data packets (real, quiet:
 * 2.8-3.7; --like-fabric-busy 0.4-0.8, --like-fabric 1.8-2.8), about half
 * of them after only two probes (a probe's turn taken by a retransmission
 * on a sibling path), and the real waits (20 us a packet against a real
 * 19-31; busy 77).
 */
void scn_config_like_fabric_held(struct scn_config *cfg);

struct scn_result {
	int err;			/* 0, or the first failure */
	char why[384];
	struct wl_result wl;
	double goodput_gbps;		/* whole transfer */
	double capacity_gbps;		/* goodput capacity of all planes */
	double after_gbps;		/* blackhole or host delay step: goodput from it + settle
					 * to the end */
	double after_capacity_gbps;	/* blackhole: capacity of the planes left */
	uint64_t t_end_ns;
	struct sim_stats sim;
	struct engine_stats eng[2];	/* client, server */
	struct sim_link_stats plane[SIM_MAX_PLANES];	/* both directions summed */
};

/* Build, run and tear down.  0 when the transfer completed and every check passed. */
int scn_run(const struct scn_config *cfg, struct scn_result *res);

#endif
