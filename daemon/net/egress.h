/* SPDX-License-Identifier: MIT */
/*
 * Egress: which port (interface) and next hop a packet leaves by, for a
 * backend with several ports (AF_XDP).  One owner for that decision and
 * what it rests on:
 *
 * - port choice: a path (a UDP source port) leaves by sport % nports, or,
 *   when that port is down, cannot reach the peer or is counted down for
 *   it (porthealth.h), by the others in the order porthealth_choice gives;
 * - the arrival table: a reply (the peer's path, its source port echoed)
 *   leaves by the port that path's packets last came in on, so a path keeps
 *   to one plane both ways; CM leaves by the port the peer was last heard
 *   through;
 * - next hops per (peer, port) (nexthop.h), aged and forgotten;
 * - the link monitor (netlink.h): ports going down and up, route changes;
 * - port health (porthealth.h): fed with what went out and what came back.
 *
 * Housekeeping (link changes, ageing of next hops, the port-health sweep)
 * runs in egress_tick, on the worker's tick (backend op `tick`), never on
 * the receive path.  Worker thread only: every worker's backend view has
 * its own egress.
 */
#ifndef MROCD_EGRESS_H
#define MROCD_EGRESS_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "nexthop.h"

#define EGRESS_MAX_PORTS	NEXTHOP_MAX_PORTS
/* Link changes are looked for every 1 ms; next hops are learnt again every 30 s at most. */
#define EGRESS_MON_NS		1000000ull
#define EGRESS_HOP_MAX_AGE_NS	(30ull * 1000000000ull)	/* our traffic never confirms a neighbour */

struct nl;
struct peers;
struct egress;

/* A port: an interface. */
struct egress_port {
	int ifindex;
	char ifname[IF_NAMESIZE];
	struct mroc_addr addr;		/* its own address (family 0: none) */
};

struct egress_cfg {
	const struct egress_port *ports;	/* [nports], in port order */
	unsigned nports;			/* 1 .. EGRESS_MAX_PORTS */
	struct nl *nl;				/* routes, neighbours, links */
	struct peers *peers;			/* handle -> addresses; its release hook is ours */
	uint32_t max_peers;			/* handles 0 .. max_peers-1 */
	struct mroc_addr src;			/* source of every frame; family 0 = the route's */
	uint64_t port_dead_ns;			/* porthealth.h; 0 = off */
	bool mute;				/* says nothing of link changes (another says it) */
};

/*
 * Creates the tables, opens the link monitor (without one a port going down
 * is noticed by its lost packets only: a warning) and reads every port's
 * link.  now: the worker's clock.  Returns 0 or -errno with the reason in why.
 */
int egress_create(const struct egress_cfg *cfg, uint64_t now, struct egress **out, char *why,
		  size_t why_len);
void egress_destroy(struct egress *e);

/*
 * A packet from (src, sport) came in through port and was authenticated
 * (the engine took it; docs/PROTOCOL.md 11a): replies to it go back that way.
 */
void egress_arrived(struct egress *e, const struct mroc_addr *src, uint16_t sport, unsigned port);
/* What a packet the engine took from a peer says of the port it came in through. */
enum egress_heard_as {
	/*
	 * A CONNECT_REQ the mode could not authenticate (docs/PROTOCOL.md
	 * 11a): only the answers to REQs (CONNECT_REP, CONNECT_REJ) go there,
	 * until the peer's next authentic packet.
	 */
	EGRESS_HEARD_REQ,
	/*
	 * Authenticated but nothing its peer sent since (engine_rx_repeat: a
	 * PSN already had, an ACK without news): its answer goes back that way
	 * (egress_arrived), but a replay is no sign that the port works.
	 */
	EGRESS_HEARD_REPEAT,
	/* Authenticated and new: the CM goes there and the port works (port health). */
	EGRESS_HEARD_NEWS,
};

/* The engine took a packet from peer, from (src, sport), that came in through port. */
void egress_heard(struct egress *e, uint32_t peer, const struct mroc_addr *src, uint16_t sport,
		  unsigned port, uint64_t now, enum egress_heard_as as);

/*
 * The next hop of a packet to peer from source port sport, and the port
 * it leaves by (*port); NULL when no port reaches the peer now (a
 * rate-limited warning says why, unless it is still being resolved).
 * echo: a reply on the peer's path (engine_txbuf.echo); own: not CM,
 * between the port addresses where there are some (nexthops_get); answer:
 * a CM answer to a REQ (CONNECT_REP, CONNECT_REJ); data: a data packet,
 * which the peer acknowledges (port health counts it).
 */
const struct nexthop *egress_route(struct egress *e, uint32_t peer, uint16_t sport, bool echo,
				   bool own, bool answer, bool data, uint64_t now, unsigned *port);

/* Where peer's path sport would leave now (for status), without resolving or judging anything. */
const char *egress_port_name(const struct egress *e, uint32_t peer, uint16_t sport, uint64_t now);
/* The ports counted down for peer now, their names (valid while e lives) into names[]. */
unsigned egress_ports_down(const struct egress *e, uint32_t peer, const char **names,
			   unsigned max, uint64_t now);
/* (peer, port) pairs counted down now. */
unsigned egress_count_down(const struct egress *e, uint64_t now);
/* Ports counted down for a peer so far (events). */
uint64_t egress_port_dead(const struct egress *e);

/*
 * Housekeeping, on the worker's tick: link and route changes (every
 * EGRESS_MON_NS at most), ageing of next hops, the port-health sweep.
 * Returns the ports whose link came back up (bit p: port p; 0 with one
 * port): the engine re-places its paths onto them (engine_port_up).
 */
uint32_t egress_tick(struct egress *e, uint64_t now);
/* The link monitor's fd (readable on a change: wake up and tick), -1 if none. */
int egress_fd(const struct egress *e);

#endif
