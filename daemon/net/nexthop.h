/* SPDX-License-Identifier: MIT */
/*
 * Next hops for AF_XDP, per (peer, port): what frame_build needs to send to
 * a peer out of one of the host's ports (interfaces), learnt from the
 * kernel's route and neighbour tables over netlink.  A host with a port per
 * fabric plane reaches a peer through each of them: the route out of a port
 * is `ip route get PEER oif PORT`, which also picks that port's next hop of
 * a multipath (ECMP) route (IPv6 may answer with another port's: then the
 * FIB entry's next hop on that port, `... fibmatch`, netlink.c).  The source address of every frame is the
 * configured network.address when there is one (a service address on lo,
 * say), else the route's preferred source.
 *
 * Port addresses (a routed fabric whose planes route only their own
 * subnets): a port may have an address of its own, and a peer may announce
 * its own (peers.h, alias[]).  Each (peer, port) then has two next hops: the
 * primary one, from network.address to the peer's primary address (CM, and
 * peers that did not announce), and the port one, from the port's address
 * (else network.address) to the peer's address on the same port index (else
 * its primary).  Worker thread only.
 */
#ifndef MROCD_NEXTHOP_H
#define MROCD_NEXTHOP_H

#include <stdbool.h>
#include <stdint.h>

#include "addr.h"
#include "frame.h"

struct nl;
struct peers;

#define NEXTHOP_MAX_PORTS	16	/* network.interfaces entries */

struct nexthop {
	int ifindex;			/* device to send on (a VLAN device's lower link) */
	uint16_t vlan;			/* 802.1Q id to tag with, 0 = untagged */
	struct mroc_addr src;		/* our address towards the peer */
	struct mroc_addr dst;		/* the peer's address it goes to (nexthops_get) */
	uint8_t smac[ETH_ALEN_], dmac[ETH_ALEN_];
};

/*
 * How to reach dst: the kernel's route (out of interface oif when > 0),
 * the next hop's MAC from the neighbour table, the egress device's MAC.
 * Returns 0 on success; -EAGAIN when the neighbour is being resolved (the
 * kernel was asked to: try again later); -ENETUNREACH for a route that is
 * not unicast; -EADDRNOTAVAIL without a source address of dst's family;
 * -EOPNOTSUPP for a non-Ethernet device; other negative errno from netlink.
 */
int nexthop_resolve(struct nl *nl, const struct mroc_addr *dst, int oif, struct nexthop *out);

struct nexthops;

struct nexthops_cfg {
	struct nl *nl;
	struct peers *peers;		/* handle -> address */
	uint32_t max_peers;		/* handles 0 .. max_peers-1 */
	const int *port_ifindex;	/* the ports, in order */
	unsigned nports;
	struct mroc_addr src;		/* source of every frame; family 0 = the route's */
	const struct mroc_addr *port_src;	/* [nports]: a port's own address, family 0 =
						 * none (src); NULL: no port has one */
};

/* Unresolved (peer, port)s are retried after 1 ms, 2 ms, 4 ms, ... at most 1 s apart. */
#define NEXTHOP_BACKOFF_MIN_NS	1000000ull
#define NEXTHOP_BACKOFF_MAX_NS	1000000000ull

/* Returns 0 on success, negative errno otherwise. */
int nexthops_create(const struct nexthops_cfg *cfg, struct nexthops **out);
void nexthops_destroy(struct nexthops *t);
/*
 * The next hop of peer out of port, resolving it first when it is not
 * known and a try is due (now in ns); NULL while it cannot be reached
 * there (nexthops_err() says why).  own: between the port addresses where
 * they are (a packet that is not CM, to a peer that speaks_ports), else
 * between the primary addresses.
 */
const struct nexthop *nexthops_get(struct nexthops *t, uint32_t peer, unsigned port, bool own,
				   uint64_t now);
/*
 * Why peer was last unreachable out of port: negative errno; 0 when it was
 * not, or while its neighbour is still being resolved (up to a second).
 */
int nexthops_err(const struct nexthops *t, uint32_t peer, unsigned port, bool own);
/*
 * The peer table gave peer's handle up, or its port addresses changed
 * (peers_set_release_hook): forget its next hops.
 */
void nexthops_forget(struct nexthops *t, uint32_t peer);
/*
 * Forget resolutions older than max_age_ns (0: all of them, after a link
 * or route change) so that routes and MACs are learnt again.
 */
void nexthops_expire(struct nexthops *t, uint64_t now, uint64_t max_age_ns);

#endif
