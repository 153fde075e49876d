/* SPDX-License-Identifier: MIT */
/*
 * simnet: a seeded, deterministic discrete-event network for mroc engines.
 *
 * H hosts, each running one struct engine, are joined by N planes.  Every
 * ordered host pair has, on every plane, one link (struct sim_link: rate,
 * propagation delay, drop-tail queue, ECN threshold, random loss,
 * blackhole); the two directions are separate links.  Each host sends
 * through one egress NIC that serialises a packet at a time and pulls the
 * next one from the engine only when it is free, so the engine's windows
 * and pacing, not a driver queue, decide what goes out.
 *
 * Optionally (sim_config.downlinks) every host also has one downlink per
 * plane: the switch port in front of the host's NIC port on that plane.
 * A packet to host h on plane p crosses its host-pair link, then h's
 * downlink on p, so every sender to h shares h's downlink queues: this is
 * where incast congests.  Without downlinks (the default) the host-pair
 * links are the only hops and no two senders share a queue.
 *
 * The engine's peer handle for a host is the host's index.  Time is in
 * nanoseconds and starts at 0.  Nothing here reads a clock, spawns a thread
 * or calls rand(): the same configuration and seed give the same run.
 *
 * Functions return 0 on success and a negative errno otherwise; sim_create
 * returns NULL and sets errno.
 */
#ifndef MROC_SIM_SIMNET_H
#define MROC_SIM_SIMNET_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "link.h"
#include "simhost.h"

#define SIM_MAX_PLANES	64

/*
 * Under SIM_ROUTE_HASH the two directions are hashed apart, as ECMP does
 * with a reversed 5-tuple: a path works only if its data and its ACKs both
 * miss a dead plane.  Under SIM_ROUTE_PATH_ID an ACK sent on path p comes
 * back on plane p.
 */
enum sim_route {
	SIM_ROUTE_HASH = 0,	/* ECMP: plane = hash(src, dst, sport, seed) % N */
	SIM_ROUTE_PATH_ID,	/* plane = path_id % N: a NIC port per plane */
	SIM_ROUTE_LINUX,	/* ECMP as scripts/fabric's Linux leaves (ecmp.h): the plane
				 * the real fabric gives the source port; an ACK takes its
				 * data's plane */
};

struct sim;

/* Called once per host before its engine is created, to adjust its config. */
typedef void (*sim_engine_setup_fn)(uint32_t host, struct engine_config *cfg, void *ctx);

struct sim_config {
	uint32_t nhosts;		/* >= 2 */
	uint32_t nplanes;		/* 1..SIM_MAX_PLANES */
	uint8_t route;			/* enum sim_route */
	uint64_t seed;			/* losses, hashes, and the engines' seeds */
	/*
	 * SIM_ROUTE_LINUX: the leaves' net.ipv4.fib_multipath_hash_seed (0 =
	 * scripts/fabric's, ECMP_FABRIC_SEED) and the fabric's address plan
	 * 10.NET.x.y (0 = NET drawn from seed in 20..219, as bench runs' fabric
	 * names give it); both replay a real run's placement exactly.
	 */
	uint32_t ecmp_seed;
	uint32_t ecmp_net;
	uint64_t nic_rate_bps;		/* 0 = sum of the plane rates of link */
	uint32_t wire_overhead;		/* Ethernet/IP/UDP bytes per packet on the wire */
	struct sim_link_cfg link;	/* every link starts with this */
	struct engine_config engine;	/* every host; seed mixed with host index */
	sim_engine_setup_fn engine_setup;	/* optional per-host override */
	void *engine_setup_ctx;
	/*
	 * Per-host downlinks (see above): false = none, packets go straight
	 * from their host-pair link to the host.  Every downlink starts with
	 * the config downlink (rate, queue, ECN threshold, loss, blackhole;
	 * its delay adds to the host-pair link's).
	 */
	bool downlinks;
	struct sim_link_cfg downlink;
	/*
	 * Each host's engine clock (simhost.h): offset in [0, clock_skew_ns),
	 * drift within +-clock_drift_ppm, drawn from seed; 0 and 0: every host
	 * on the simulation's clock.
	 */
	uint64_t clock_skew_ns;
	uint32_t clock_drift_ppm;
};

/*
 * Defaults: 2 hosts, 4 planes of 25 Gbit/s, 2 us, 512 KiB queue, ECN at
 * 64 KiB; no downlinks (downlink, if turned on: the same link without the
 * propagation delay, so the round trip does not change).
 */
void sim_config_default(struct sim_config *cfg);

/*
 * 0 if sim_create would take cfg, else -EINVAL with *why (if why is not
 * NULL) saying what is wrong: a bad count or loss, an engine configuration
 * engine_config_check refuses, or a queue that holds no full packet (the
 * transfer would stall for ever).
 */
int sim_config_check(const struct sim_config *cfg, const char **why);

/*
 * A simulated engine's minimum RTO: its first RTO, before any RTT sample,
 * may not be below it, so that rises with it (the engine refuses
 * rto_min > rto_init).
 */
static inline void sim_engine_rto_min(struct engine_config *e, uint64_t rto_min_ns)
{
	e->rto_min_ns = rto_min_ns;
	if (e->rto_init_ns < rto_min_ns)
		e->rto_init_ns = rto_min_ns;
}

struct sim *sim_create(const struct sim_config *cfg);
void sim_destroy(struct sim *sim);

uint64_t sim_now(const struct sim *sim);
const struct sim_config *sim_config(const struct sim *sim);
struct engine *sim_host_engine(struct sim *sim, uint32_t host);

/* ---- running ---------------------------------------------------------------- */

/* Run every event due at or before t, then set the clock to t. */
int sim_run_until(struct sim *sim, uint64_t t);

typedef bool (*sim_pred_fn)(struct sim *sim, void *ctx);

/*
 * Run events while pred(sim, ctx) holds (checked before each event).
 * Returns 0 when pred turned false, -ETIMEDOUT when the next event is after
 * time_limit (the clock is then time_limit), -EDEADLK when nothing is left
 * to happen: no packet in flight and no engine wants a timer.
 */
int sim_run_while(struct sim *sim, sim_pred_fn pred, void *ctx, uint64_t time_limit);

typedef void (*sim_call_fn)(struct sim *sim, void *ctx);

/* Call fn(sim, ctx) at time at (>= now), e.g. to change a link mid-run. */
int sim_schedule(struct sim *sim, uint64_t at, sim_call_fn fn, void *ctx);

/* ---- hosts: completions and work --------------------------------------------- */

/*
 * The simulation polls every host's completion queue after each engine call
 * and hands each entry to the host's callback (entries are dropped if there
 * is none).  The callback may post work; the host is driven afterwards.
 */
typedef void (*sim_cqe_fn)(struct sim *sim, uint32_t host, const struct engine_cqe *cqe,
			   void *ctx);
void sim_host_set_cqe_cb(struct sim *sim, uint32_t host, sim_cqe_fn fn, void *ctx);

/* engine_* calls with the simulation clock, then drive the host. */
int sim_post_send(struct sim *sim, uint32_t host, uint32_t qpn, const struct engine_wr *wr);
int sim_post_recv(struct sim *sim, uint32_t host, uint32_t qpn, const struct engine_recv_wr *wr);
int sim_qp_connect(struct sim *sim, uint32_t host, uint32_t qpn, uint32_t peer,
		   uint64_t service_id);
/* After calling the engine directly: send what it now has, rearm its timer. */
void sim_host_kick(struct sim *sim, uint32_t host);

/* ---- links ---------------------------------------------------------------------- */

/* Change one link now (queued packets stay; the packet on the wire keeps its timing). */
int sim_link_set(struct sim *sim, uint32_t src, uint32_t dst, uint32_t plane,
		 const struct sim_link_cfg *cfg);
int sim_link_get(const struct sim *sim, uint32_t src, uint32_t dst, uint32_t plane,
		 struct sim_link_cfg *out);
/*
 * Every packet that reaches host from now on waits ns more before its engine
 * sees it (0: none): a host whose scheduler or interrupt moderation holds
 * its receive path, not a queue in the fabric.  Returns 0 or -EINVAL.
 */
int sim_set_host_rx_delay(struct sim *sim, uint32_t host, uint64_t ns);

/*
 * A host's receive path after that delay: its arrival stamp (what the XDP
 * program writes), then the wait for the worker, which takes its ring every
 * poll_ns (its batches) and is off its CPU for stall_ns about every
 * stall_every_ns (each gap drawn from 1/2 to 3/2 of it, from the host's
 * own generator): mrocd on a host whose CPUs it shares.  The order of
 * packets is kept.  stamp false: the engine hears of no arrival time (a
 * driver without stamps) and takes its own now.  All 0 and stamp true (the
 * default): packets go to the engine at once, stamped.  0 or -EINVAL.
 */
struct sim_host_rx {
	uint64_t poll_ns;
	uint64_t stall_ns, stall_every_ns;
	bool no_stamp;
	/*
	 * A stall holds the whole worker, not only its receive ring: no timer
	 * runs and nothing is sent until it ends, as for mrocd's worker off its
	 * CPU.  false: timers fire and the NIC is fed through a stall (the
	 * model the tests before session 19 were tuned on).
	 */
	bool hold_worker;
};
int sim_set_host_rx(struct sim *sim, uint32_t host, const struct sim_host_rx *rx);

/* Change every link of a plane, both directions, every host pair. */
int sim_plane_set(struct sim *sim, uint32_t plane, const struct sim_link_cfg *cfg);
int sim_link_stats(const struct sim *sim, uint32_t src, uint32_t dst, uint32_t plane,
		   struct sim_link_stats *out);
/* Sum over every link of a plane (both directions). */
int sim_plane_stats(const struct sim *sim, uint32_t plane, struct sim_link_stats *out);

/*
 * Host host's downlink on plane plane (-ENODEV when the simulation has no
 * downlinks).  A change applies as sim_link_set's does.
 */
int sim_downlink_set(struct sim *sim, uint32_t host, uint32_t plane,
		     const struct sim_link_cfg *cfg);
int sim_downlink_get(const struct sim *sim, uint32_t host, uint32_t plane,
		     struct sim_link_cfg *out);
int sim_downlink_stats(const struct sim *sim, uint32_t host, uint32_t plane,
		       struct sim_link_stats *out);
/* Sum over a host's downlinks on every plane (max_queue_bytes: the largest). */
int sim_host_downlink_stats(const struct sim *sim, uint32_t host, struct sim_link_stats *out);

/*
 * Call fn for every packet sent, dropped or delivered (NULL turns it off).
 * pkt and its data are only valid during the call.
 */
void sim_set_trace(struct sim *sim, sim_trace_fn fn, void *ctx);

/*
 * Tests: fn sees every packet a NIC hands to the fabric (plane chosen) and
 * returns true to drop it there, counted in the sender's tx_dropped (NULL
 * turns it off).  A loss placed exactly, where random loss cannot.
 */
typedef bool (*sim_drop_fn)(void *ctx, const struct sim_pkt *pkt);
void sim_set_drop(struct sim *sim, sim_drop_fn fn, void *ctx);

/* ---- statistics ------------------------------------------------------------------ */

struct sim_stats {
	uint64_t now;
	uint64_t events;
	uint64_t pool_pkts;		/* packet buffers ever allocated */
	uint64_t pkts_in_use;
	struct sim_link_stats links;	/* sum over every host-pair link (max_queue: the largest) */
	struct sim_link_stats downlinks;	/* the same over every downlink (zero without) */
	struct simhost_stats hosts;	/* sum over every host */
};

void sim_get_stats(const struct sim *sim, struct sim_stats *out);
int sim_host_stats(const struct sim *sim, uint32_t host, struct simhost_stats *out);

/* Payload bits per second a link of rate_bps carries with full data packets. */
uint64_t sim_goodput_capacity(const struct sim *sim, uint64_t rate_bps);

#endif
