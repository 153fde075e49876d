/* SPDX-License-Identifier: MIT */
/*
 * What both simulated networks (simnet.c: `mroc-sim run`, `incast` and the
 * two-host tests; cnet.c: the cluster) share: the event loop (the clock, the
 * event queue, scheduled calls) and the host driver, which drives an engine
 * as mrocd does: after every packet, post or timer the host runs due timers,
 * hands completions to the network, takes one packet from engine_tx whenever
 * its NIC is free and keeps exactly one timer at engine_next_deadline, all on
 * the host's own clock (an offset and a drift from the simulation's, as real
 * hosts' CLOCK_MONOTONIC differ).  A network owns the rest: where a packet
 * goes once the NIC has it, what the links do, its own events.
 */
#ifndef MROC_SIM_SIMHOST_H
#define MROC_SIM_SIMHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "eventq.h"
#include "pktpool.h"

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* ---- the event loop ------------------------------------------------------------ */

/* Event types both networks use (a network numbers its own from SIMLOOP_EV_NET). */
enum simloop_ev_type {
	SIMLOOP_EV_HOST_TIMER = 1,	/* a host's engine deadline */
	SIMLOOP_EV_NIC_DONE,		/* a host's NIC is done with its packet */
	SIMLOOP_EV_PKT_ARRIVE,		/* a packet reaches the far end of its link */
	SIMLOOP_EV_CALL,		/* simloop_schedule */
	SIMLOOP_EV_NET,
};

struct simloop_call {
	struct sim_event ev;
	struct simloop_call *prev, *next;	/* pending, freed by simloop_drain */
	void (*fn)(void);		/* the network's call type: cast back to it to call */
	void *ctx;
};

struct simloop {
	uint64_t now;			/* the simulation's time, ns */
	uint64_t events;		/* dispatched */
	struct evq q;
	struct simloop_call *calls;
};

/* fn(ctx) at time at (>= now); fn is the network's call type, cast.  0 or -errno. */
int simloop_schedule(struct simloop *l, uint64_t at, void (*fn)(void), void *ctx);
/* A call that came due, out of the pending list: the caller calls it, then frees it. */
struct simloop_call *simloop_call_take(struct simloop *l, struct sim_event *ev);
/*
 * The next event, if there is one by time_limit: the clock moves to it and
 * it is counted (0).  -EDEADLK when there is none; -ETIMEDOUT when the next
 * is later (the clock then moves to time_limit).
 */
int simloop_next(struct simloop *l, uint64_t time_limit, struct sim_event **ev);
/* Every packet still on its way back to pool, every pending call freed. */
void simloop_drain(struct simloop *l, struct pktpool *pool);

/* ---- a host's own clock ---------------------------------------------------------- */

/*
 * A host's engine reads now + now * ppm / 10^6 + offset (offset >= 0), as
 * hosts' CLOCK_MONOTONIC differ by an offset and a drift (issue #23).  Zero:
 * the simulation's clock, exactly.
 */
struct host_clock {
	uint64_t offset;
	int32_t ppm;
};

/* Draw host i's clock: offset in [0, skew_ns), drift in [-ppm, ppm]; from seed. */
void host_clock_draw(struct host_clock *c, uint64_t skew_ns, uint32_t ppm, uint64_t seed,
		     uint32_t i);
/* The host's time at simulation time now. */
uint64_t host_clock_local(const struct host_clock *c, uint64_t now);
/* The first simulation time at which the host's clock reads at least t (UINT64_MAX stays). */
uint64_t host_clock_sim(const struct host_clock *c, uint64_t t);

/* ---- the hosts ----------------------------------------------------------------- */

/* A simulated host's counters (a network leaves at 0 what it has not). */
struct simhost_stats {
	uint64_t tx_pkts, tx_bytes;	/* handed to the fabric (bytes after UDP) */
	uint64_t rx_pkts, rx_bytes;	/* handed to engine_rx */
	uint64_t rx_rejected;		/* engine_rx returned an error */
	uint64_t tx_errors;		/* engine_tx returned an error */
	uint64_t tx_bad_peer;		/* engine named a peer that is no host */
	uint64_t timer_fires;
	uint64_t timer_spins;		/* a deadline stayed <= now with nothing to send */
	uint64_t tx_dropped;		/* simnet: dropped by the test's sim_set_drop hook */
	uint64_t nic_waits;		/* cnet, PFC: the NIC held because its port was full */
	uint64_t cqes;
};

void simhost_stats_add(struct simhost_stats *sum, const struct simhost_stats *s);

/*
 * How often a host's engine is checked against itself (engine_check): a
 * disagreement is an engine bug, and the run stops there with its message.
 */
#define SIMHOST_CHECK_EVERY	256

/* A deadline that stays <= now this many times in one instant is a spin. */
#define HOST_SPIN_LIMIT	64

struct host_spin {
	uint64_t at;		/* the instant being counted (the host's clock) */
	uint32_t n;		/* due-now rearms in it */
};

struct simhost;

/* What a network gives its hosts. */
struct simhost_env {
	struct simloop *loop;
	struct pktpool *pool;
	uint32_t wire_overhead;		/* bytes on the wire per packet beyond what engine_tx wrote */
	/* A completion of host h for the network (net: the network). */
	void (*cqe)(void *net, struct simhost *h, const struct engine_cqe *cqe);
	/*
	 * Optional: when host h's worker, off its CPU at simulation time now,
	 * runs again (0: it runs now).  Its timers and sends wait for that.
	 */
	uint64_t (*held_until)(void *net, struct simhost *h, uint64_t now);
	void *net;
};

struct simhost {
	struct sim_event timer;		/* exactly one pending engine timer */
	struct sim_event nic_done;
	struct engine *eng;
	struct sim_pkt *nic_pkt;	/* being taken in, NULL when the NIC is free */
	uint64_t nic_rate;		/* bit/s */
	uint64_t nic_rem;
	bool in_drive, dirty;
	uint32_t drives;		/* simhost_drive calls: every SIMHOST_CHECK_EVERY-th checks the engine */
	struct host_spin spin;
	struct host_clock clk;		/* the engine's own clock */
	uint32_t idx;			/* the host's index = its engine peer handle */
	struct simhost_stats st;
};

/*
 * Host i's engine configuration from the network's: a distinct, seed-derived
 * engine seed (ports and keys differ per host), and with no link rate set,
 * the NIC's (exactly its planes' sum, so the engine may judge spreading).
 */
void simhost_engine_config(struct engine_config *ec, const struct engine_config *base,
			   uint64_t seed, uint32_t i, uint64_t nic_rate);

/* Host idx with engine eng (NULL: engine_create failed), a NIC of nic_rate bit/s, clock clk. */
void simhost_init(struct simhost *h, uint32_t idx, struct engine *eng, uint64_t nic_rate,
		  const struct host_clock *clk);
/* Its NIC's packet back to pool, its engine destroyed. */
void simhost_fini(struct simhost *h, struct pktpool *pool);

/* What host h's engine takes as now (its clock at the simulation's time). */
static inline uint64_t simhost_now(const struct simhost *h, const struct simloop *l)
{
	return host_clock_local(&h->clk, l->now);
}

/* engine_post_send and engine_qp_connect on the host's clock, then the host driven. */
int simhost_post_send(struct simhost *h, const struct simhost_env *env, uint32_t qpn,
		      const struct engine_wr *wr);
int simhost_qp_connect(struct simhost *h, const struct simhost_env *env, uint32_t qpn,
		       uint32_t peer, uint64_t service_id);

/* Payload bits per second a link of rate_bps carries with full data packets. */
static inline uint64_t simhost_goodput_capacity(uint64_t rate_bps, uint32_t mtu,
						uint32_t wire_overhead)
{
	return (uint64_t)((unsigned __int128)rate_bps * mtu /
			  (mtu + MROC_DATA_OVERHEAD + wire_overhead));
}

/*
 * The driver loop: due timers, completions to the network (which may post
 * work here or on another host: a host already being driven is only marked
 * dirty and loops once more), the NIC fed while it is free, the one timer
 * rearmed.  A network calls it after anything it did to the host.
 */
void simhost_drive(struct simhost *h, const struct simhost_env *env);
/* Its timer fired. */
void simhost_timer(struct simhost *h, const struct simhost_env *env);
/* A packet for it arrived: into its engine, back to the pool, the host driven. */
void simhost_rx(struct simhost *h, const struct simhost_env *env, struct sim_pkt *pkt);

#endif
