/* SPDX-License-Identifier: MIT */
/*
 * One direction of one plane between two hosts: a drop-tail FIFO in front of
 * a serialiser, then a wire with a fixed propagation delay.  ECN marking
 * happens at enqueue, random loss on the wire (the packet has used the link
 * when it is lost), a blackhole drops everything while it is active.
 *
 * PFC (IEEE 802.1Qbb, one lossless priority): a link with pfc_xoff_bytes set
 * ends at a switch that counts, per ingress, the bytes that came in over the
 * link and still wait in any of its output queues.  Above XOFF the switch
 * sends a PAUSE back over the link, at or below XON a RESUME; each takes the
 * cable's propagation delay to reach the transmitter, which finishes the
 * packet it is serialising and then holds the rest of its FIFO (behind the
 * head: head-of-line blocking, whatever each packet's destination).  The
 * headroom above XOFF absorbs what is on the wire meanwhile; packets that
 * came in over a PFC link are never tail-dropped (the class is lossless), so
 * the only PFC drop is a headroom overflow, counted as pfc_overflow.  Since a
 * paused queue holds its own ingresses' bytes, pauses spread hop by hop
 * toward the senders.
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
	bool ecn_virtual;		/* ... above this in a virtual queue, as scripts/fabric's
					 * impair.bpf.c has it (link.c link_ecn_over) */
	double loss;			/* independent random loss probability, 0..1 */
	bool loss_at_enqueue;		/* lose before the queue (a lost packet uses no rate),
					 * as scripts/fabric's impairment in front of its TBF */
	uint64_t burst_bytes;		/* > 0: a token bucket of this depth (TBF) instead of a
					 * serialiser: a packet leaves at once while tokens last */
	/*
	 * Jitter: each delivered packet's propagation delay plus a uniform 0 ..
	 * jitter_ns - 1, so packets on one link overtake each other (a path is
	 * no longer FIFO, as across a switch's hashed member links or a host's
	 * queues); dup: the probability that a delivered packet arrives twice,
	 * its copy with a jitter of its own.  Both 0: the rng is never drawn
	 * for them, and every run is what it was without them.
	 */
	uint64_t jitter_ns;
	double dup;
	uint64_t blackhole_start_ns;	/* SIM_NEVER = no blackhole */
	uint64_t blackhole_end_ns;	/* SIM_NEVER = until the end */
	/* PFC at the far end's ingress (see above); 0 = off. */
	uint64_t pfc_xoff_bytes;
	uint64_t pfc_xon_bytes;		/* < xoff */
	uint64_t pfc_headroom_bytes;	/* above xoff before a packet is lost */
};

struct sim_link_stats {
	uint64_t enqueued;		/* accepted into the queue */
	uint64_t dropped_tail;
	uint64_t dropped_random;
	uint64_t dropped_blackhole;
	uint64_t marked_ce;
	uint64_t delivered;
	uint64_t delivered_bytes;	/* wire bytes, for utilisation */
	uint64_t duplicated;		/* of delivered, sent on twice (cfg.dup) */
	uint64_t max_queue_bytes;
	/* PFC, on the link whose transmitter is paused */
	uint64_t pfc_pauses;		/* PAUSE frames the far end sent */
	uint64_t pfc_paused_ns;		/* time the transmitter was paused */
	uint64_t pfc_overflow;		/* arrivals beyond XOFF + headroom, dropped */
	uint64_t pfc_max_ingress;	/* the far end's largest count for this ingress */
	uint64_t queue_seen_bytes;	/* sum over accepted packets of the queue ahead of them:
					 * / enqueued = the standing queue a packet meets */
};

/* PAUSE / RESUME frames on their way back to the transmitter (see link.h top). */
#define LINK_PFC_FRAMES	8

struct link_pfc {
	uint64_t in_bytes;		/* at the far end: came in here, not yet sent on */
	bool xoff;			/* the far end's state: it sent PAUSE last */
	bool paused;			/* the transmitter's: it received PAUSE last */
	uint64_t paused_at;
	struct sim_event ev;		/* the oldest frame in flight arrives */
	uint64_t at[LINK_PFC_FRAMES];	/* in-flight frames, oldest first (a ring) */
	bool pause[LINK_PFC_FRAMES];
	uint8_t head, n;
};

struct sim_link {
	struct sim_link_cfg cfg;
	struct sim_link_stats st;
	struct sim_event tx_done;	/* head of the queue has been serialised */
	struct sim_pkt *head, *tail;
	uint64_t q_bytes;
	uint64_t ser_rem;		/* carry of the serialisation division */
	uint64_t tokens;		/* token bucket: bits x 1e9 (bit-nanoseconds at 1 bit/s) */
	uint64_t tokens_at;		/* when tokens was last brought up to date */
	uint64_t vq_bytes;		/* ecn_virtual: the virtual queue's backlog ... */
	uint64_t vq_at;			/* ... as of this time */
	bool busy;			/* the head is being serialised */
	struct link_pfc pfc;
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
	SIM_TR_WAIT,		/* queued behind others on pkt->link (link_env.trace_waits) */
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
	bool trace_waits;	/* also SIM_TR_WAIT: a packet queued behind others */
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
/* A link with PFC: its frames arrive as events of pfc_ev_type (link_pfc_arrive). */
void link_pfc_init(struct sim_link *l, uint8_t pfc_ev_type);
static inline bool link_pfc_on(const struct sim_link *l)
{
	return l->cfg.pfc_xoff_bytes != 0;
}
/*
 * Take pkt (arrival events get pkt->ev's type); the link owns or frees it.
 * pkt->link is the link it came in over (NULL from a host): if that one has
 * PFC, the packet counts against its ingress until it leaves this link.
 */
void link_enqueue(struct sim_link *l, struct link_env *env, struct sim_pkt *pkt, uint64_t now);
/* The tx_done event fired: put the head on the wire, start the next one. */
void link_tx_done(struct sim_link *l, struct link_env *env, uint64_t now);
/* The pfc.ev event fired: the oldest PAUSE or RESUME reaches the transmitter. */
void link_pfc_arrive(struct sim_link *l, struct link_env *env, uint64_t now);
/* Free whatever is still queued (at destruction). */
void link_flush(struct sim_link *l, struct link_env *env);
/* Add s to sum (max_queue_bytes: the larger). */
void link_stats_add(struct sim_link_stats *sum, const struct sim_link_stats *s);

#endif
