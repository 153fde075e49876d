/* SPDX-License-Identifier: MIT */
/*
 * A cluster fabric: P planes, each its own two-tier leaf/spine network.
 *
 * Every host has one NIC port per plane, cabled to its leaf on that plane.
 * Hosts are spread over the leaves in order (host h on leaf h / hosts per
 * leaf), every leaf of a plane is cabled to every spine of that plane.  Each
 * direction of each cable is a struct sim_link, i.e. the output port that
 * feeds it: a drop-tail byte FIFO with an ECN threshold, a serialiser at the
 * cable's rate, propagation delay, random loss and a blackhole window.
 *
 *   host --up--> leaf --ls--> spine --sl--> leaf --down--> host
 *                     \________________________/
 *                       same leaf: up, then down
 *
 * Routing is what ECMP switches do.  The host picks the plane (its NIC port):
 * by the engine's path index (FAB_PLANE_PATH_ID, MetaRoCE's "a path per
 * plane") or by a hash of the 5-tuple (FAB_PLANE_HASH, a bond of ports with
 * a transmit hash: what one RoCEv2 QP gets).  A leaf picks the spine by a hash
 * of the 5-tuple salted with its own identity, so a UDP source port pins a
 * flow to one spine per plane and another source port may move it.  Spines
 * and the far leaf have one way to go.
 *
 * With pfc, every switch ingress (the far end of an up, leaf->spine and
 * spine->leaf cable) runs PFC as link.h describes, so a congested port
 * pauses the cables feeding it, their queues fill and pause theirs, back to
 * the senders' NIC ports (cnet.c then holds the NIC).  Host ports do not
 * pause the fabric (a host takes every packet it is given).
 *
 * A failed spine or cable drops everything (a blackhole) from the failure on;
 * converge_ns later the routing protocol has noticed and leaves stop hashing
 * onto spines that lost the hop to the destination's leaf.  Until then only
 * the endpoints can route around it, by changing source ports.
 */
#ifndef MROC_SIM_FABRIC_H
#define MROC_SIM_FABRIC_H

#include <stdbool.h>
#include <stdint.h>

#include "link.h"

#define FAB_MAX_PLANES	8
#define FAB_MAX_SPINES	64

enum fab_plane_select {
	FAB_PLANE_PATH_ID = 0,	/* plane = path_id % planes */
	FAB_PLANE_HASH,		/* plane = hash(5-tuple) % planes */
};

struct fab_config {
	uint32_t nhosts;
	uint32_t nplanes;		/* 1..FAB_MAX_PLANES */
	uint32_t leaves;		/* per plane; hosts / leaves hosts each (rounded up) */
	uint32_t spines;		/* per plane, 1..FAB_MAX_SPINES */
	uint64_t host_rate_bps;		/* host <-> leaf, per plane */
	/* leaf <-> spine; 0 = non-blocking (hosts per leaf x host rate / spines) */
	uint64_t core_rate_bps;
	uint64_t delay_ns;		/* propagation per cable */
	uint64_t queue_bytes;		/* every output port: drop-tail limit */
	uint64_t ecn_bytes;		/* every output port: CE above this */
	/*
	 * Random loss.  loss applies on the host's uplink, so every packet (data
	 * and ACKs alike) is lost with exactly this probability end to end;
	 * core_loss applies on every leaf <-> spine cable besides.
	 */
	double loss;
	double core_loss;
	/* On the host's uplink too, once per packet: sim_link_cfg's jitter and dup. */
	uint64_t jitter_ns;
	double dup;
	uint8_t plane_select;		/* enum fab_plane_select */
	uint64_t converge_ns;		/* failure -> ECMP avoids it; SIM_NEVER = never */
	/*
	 * PFC-lossless fabric.  XOFF / XON per ingress; headroom 0 = what a cable
	 * needs: two propagation delays of data plus three jumbo frames (the one
	 * that crossed XOFF, the one on the wire when PAUSE lands, one being
	 * serialised).
	 */
	bool pfc;
	uint64_t pfc_xoff_bytes;
	uint64_t pfc_xon_bytes;
	uint64_t pfc_headroom_bytes;
	uint64_t seed;			/* ECMP hash salts */
};

/*
 * 64 hosts, 4 planes of 8 leaves x 8 spines, 25 Gbit/s, 1 us, 512 KiB / 64 KiB;
 * PFC off, and when on XOFF 128 KiB (twice the ECN threshold, so that ECN
 * speaks first, as DCQCN deployments set it), XON 2 frames below.
 */
void fab_config_default(struct fab_config *cfg);

enum fab_link_kind {
	FAB_UP = 0,	/* host -> leaf (the NIC port) */
	FAB_DOWN,	/* leaf -> host */
	FAB_LS,		/* leaf -> spine */
	FAB_SL,		/* spine -> leaf */
	FAB__KINDS,
};

struct fabric {
	struct fab_config cfg;
	uint32_t per_leaf;		/* hosts per leaf */
	struct sim_link *links;		/* all of them; *_at() index into it */
	uint64_t *dead_since;		/* per link: failure time, SIM_NEVER if alive */
	size_t nlinks;
	size_t base[FAB__KINDS];
};

/* 0 if fab_init would take cfg, else -EINVAL with *why (if not NULL) saying what is wrong. */
int fab_config_check(const struct fab_config *cfg, const char **why);
/*
 * Build every link, with link_ev as its transmit event type and pfc_ev as
 * the type of its PFC frames' arrivals.  0, -EINVAL or -ENOMEM.
 */
int fab_init(struct fabric *f, const struct fab_config *cfg, uint8_t link_ev, uint8_t pfc_ev);
/* Free queued packets to env's pool, then the links. */
void fab_fini(struct fabric *f, struct link_env *env);

static inline uint32_t fab_leaf_of(const struct fabric *f, uint32_t host)
{
	return host / f->per_leaf;
}

static inline struct sim_link *fab_up(const struct fabric *f, uint32_t host, uint32_t plane)
{
	return &f->links[f->base[FAB_UP] + (size_t)host * f->cfg.nplanes + plane];
}

static inline struct sim_link *fab_down(const struct fabric *f, uint32_t host, uint32_t plane)
{
	return &f->links[f->base[FAB_DOWN] + (size_t)host * f->cfg.nplanes + plane];
}

static inline struct sim_link *fab_ls(const struct fabric *f, uint32_t plane, uint32_t leaf,
				      uint32_t spine)
{
	return &f->links[f->base[FAB_LS] +
			 ((size_t)plane * f->cfg.leaves + leaf) * f->cfg.spines + spine];
}

static inline struct sim_link *fab_sl(const struct fabric *f, uint32_t plane, uint32_t spine,
				      uint32_t leaf)
{
	return &f->links[f->base[FAB_SL] +
			 ((size_t)plane * f->cfg.spines + spine) * f->cfg.leaves + leaf];
}

enum fab_link_kind fab_kind(const struct fabric *f, const struct sim_link *l);

/* The NIC port a packet leaves by (sets pkt->plane); plane >= 0 pins it there. */
struct sim_link *fab_first_hop(const struct fabric *f, struct sim_pkt *pkt, int plane);
/* Where a packet goes after crossing pkt->link; NULL = it has reached pkt->dst. */
struct sim_link *fab_next_hop(const struct fabric *f, const struct sim_pkt *pkt, uint64_t now);

/*
 * Fail a spine (all its cables, both ways), one leaf-spine cable (both ways)
 * or one direction of it, spine to leaf (a fibre or an optic's receiver: what
 * crosses it toward the leaf's hosts is lost, what leaves them still goes) at now.
 */
int fab_fail_spine(struct fabric *f, uint32_t plane, uint32_t spine, uint64_t now);
int fab_fail_cable(struct fabric *f, uint32_t plane, uint32_t leaf, uint32_t spine, uint64_t now);
int fab_fail_downlink(struct fabric *f, uint32_t plane, uint32_t spine, uint32_t leaf, uint64_t now);

struct fab_stats {
	struct sim_link_stats kind[FAB__KINDS];	/* sums; max_queue_bytes the largest */
	/*
	 * ECMP spread: bytes carried by the busiest leaf -> spine cable over the
	 * mean of the cables that lead off a leaf that sent anything off-leaf
	 * (1.0 = perfectly even).
	 */
	double core_imbalance;
};

void fab_get_stats(const struct fabric *f, struct fab_stats *out);

#endif
