/* SPDX-License-Identifier: MIT */
/*
 * One direction of one plane between two hosts: a drop-tail FIFO in front of
 * a serialiser, then a wire with a fixed propagation delay.  ECN marking
 * happens at enqueue, random loss on the wire (the packet has used the link
 * when it is lost), a blackhole drops everything while it is active.
 */
#ifndef MROC_SIM_LINK_H
#define MROC_SIM_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "eventq.h"
#include "pktpool.h"
#include "rng.h"

#define SIM_NEVER	UINT64_MAX

struct sim_link_cfg {
	uint64_t rate_bps;		/* 0 = infinitely fast */
	uint64_t delay_ns;		/* propagation delay */
	uint64_t queue_bytes;		/* drop-tail limit in wire bytes; 0 = unlimited */
	uint64_t ecn_bytes;		/* mark CE on ECT packets arriving above this; 0 = off */
	double loss;			/* independent random loss probability, 0..1 */
	uint64_t blackhole_start_ns;	/* SIM_NEVER = no blackhole */
	uint64_t blackhole_end_ns;	/* SIM_NEVER = until the end */
};

struct sim_link_stats {
	uint64_t enqueued;		/* accepted into the queue */
	uint64_t dropped_tail;
	uint64_t dropped_random;
	uint64_t dropped_blackhole;
	uint64_t marked_ce;
	uint64_t delivered;
	uint64_t delivered_bytes;	/* wire bytes, for utilisation */
	uint64_t max_queue_bytes;
};

struct sim_link {
	struct sim_link_cfg cfg;
	struct sim_link_stats st;
	struct sim_event tx_done;	/* head of the queue has been serialised */
	struct sim_pkt *head, *tail;
	uint64_t q_bytes;
	uint64_t ser_rem;		/* carry of the serialisation division */
	uint32_t src, dst;		/* a downlink: src = dst = its host */
	uint8_t plane;
	bool downlink;			/* the last hop in front of a host (simnet.h) */
};

/* What happened to a packet, for an optional trace callback. */
enum sim_trace_what {
	SIM_TR_SEND = 0,	/* NIC handed it to its plane's link */
	SIM_TR_DROP_TAIL,
	SIM_TR_DROP_RANDOM,
	SIM_TR_DROP_BLACKHOLE,
	SIM_TR_DELIVER,		/* handed to the destination engine */
};

typedef void (*sim_trace_fn)(void *ctx, uint64_t now, enum sim_trace_what what,
			     const struct sim_pkt *pkt);

/* What a link needs from the simulation around it. */
struct link_env {
	struct evq *q;
	struct pktpool *pool;
	struct rng *rng;
	sim_trace_fn trace;	/* NULL: no tracing */
	void *trace_ctx;
};

static inline void link_trace(const struct link_env *env, uint64_t now,
			      enum sim_trace_what what, const struct sim_pkt *pkt)
{
	if (env->trace)
		env->trace(env->trace_ctx, now, what, pkt);
}

/*
 * Nanoseconds to send bytes at rate_bps.  *rem carries the remainder of the
 * division so that a long run of packets keeps the exact rate.
 */
static inline uint64_t sim_ser_ns(uint64_t bytes, uint64_t rate_bps, uint64_t *rem)
{
	unsigned __int128 num;

	if (!rate_bps)
		return 0;
	num = (unsigned __int128)bytes * 8 * 1000000000ULL + *rem;
	*rem = (uint64_t)(num % rate_bps);
	return (uint64_t)(num / rate_bps);
}

void sim_link_cfg_default(struct sim_link_cfg *cfg);

static inline bool link_blackholed(const struct sim_link *l, uint64_t now)
{
	return now >= l->cfg.blackhole_start_ns && now < l->cfg.blackhole_end_ns;
}

void link_init(struct sim_link *l, const struct sim_link_cfg *cfg, uint32_t src, uint32_t dst,
	       uint8_t plane, uint8_t tx_ev_type);
/* Take pkt (arrival events get pkt->ev's type); the link owns or frees it. */
void link_enqueue(struct sim_link *l, struct link_env *env, struct sim_pkt *pkt, uint64_t now);
/* The tx_done event fired: put the head on the wire, start the next one. */
void link_tx_done(struct sim_link *l, struct link_env *env, uint64_t now);
/* Free whatever is still queued (at destruction). */
void link_flush(struct sim_link *l, struct link_env *env);
/* Add s to sum (max_queue_bytes: the larger). */
void link_stats_add(struct sim_link_stats *sum, const struct sim_link_stats *s);

#endif
