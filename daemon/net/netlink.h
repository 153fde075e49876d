/* SPDX-License-Identifier: MIT */
/*
 * The kernel's routing, neighbour and link tables over rtnetlink (libmnl),
 * for building frames that AF_XDP sends past the kernel's own IP stack.
 *
 * One request at a time, answered synchronously: each request carries a
 * sequence number and asks for an ACK, replies to older (timed-out)
 * requests are skipped, and a request the kernel does not answer within
 * the timeout fails with -ETIMEDOUT.  Everything works in the network
 * namespace that was current at nl_open().  Not thread-safe: one struct nl
 * per thread.  Nothing here prints; nl_errmsg() gives the kernel's
 * extended-ACK message of the last failure, if any.
 */
#ifndef MROCD_NETLINK_H
#define MROCD_NETLINK_H

#include <net/if.h>
#include <stdint.h>

#include "addr.h"

struct nl;

#define NL_TIMEOUT_MS_DEFAULT	1000

/* Opens a NETLINK_ROUTE socket; returns 0 on success, negative errno otherwise. */
int nl_open(struct nl **out);
void nl_close(struct nl *nl);
/* Per-request timeout in milliseconds (> 0). */
void nl_set_timeout(struct nl *nl, int timeout_ms);
/* The kernel's message for the last failed request, or "". */
const char *nl_errmsg(const struct nl *nl);

struct nl_route {
	int ifindex;			/* egress interface */
	uint8_t type;			/* RTN_UNICAST, RTN_LOCAL, ... */
	struct mroc_addr src;		/* preferred source address; family 0 if none */
	struct mroc_addr gw;		/* next-hop router; family 0 if on-link (the
					 * family may differ from dst: RTA_VIA) */
};

/*
 * The route the kernel would use for dst (RTM_GETROUTE, like `ip route get`).
 * Returns 0 on success, -ENETUNREACH / -EHOSTUNREACH / ... as the kernel
 * says, -ENODATA if it answered without a route, negative errno otherwise.
 */
int nl_route_get(struct nl *nl, const struct mroc_addr *dst, struct nl_route *out);
/*
 * The same, out of interface oif (`ip route get DST oif DEV`): the route
 * whose next hop uses that interface, also one next hop of a multipath
 * route.  -ENETUNREACH when no route leaves there (or the link is down),
 * also where IPv4 would only assume dst on that link (no route at all).
 */
int nl_route_get_oif(struct nl *nl, const struct mroc_addr *dst, int oif, struct nl_route *out);

struct nlmsghdr;
/*
 * One RTM_NEWROUTE message of a length the caller checked (the parsing
 * behind the two above; tests feed it canned replies): with want_oif, the
 * next hop of a multipath route (RTA_MULTIPATH, as a RTM_F_FIB_MATCH reply
 * has it) that leaves by want_oif.  Returns 0, or -ENODATA for another or
 * a short message.
 */
int nl_route_parse(const struct nlmsghdr *nlh, int want_oif, struct nl_route *out);

/*
 * The MAC address of ip on interface ifindex (RTM_GETNEIGH).  Returns 0 and
 * fills mac when the entry is usable (REACHABLE, STALE, DELAY, PROBE,
 * PERMANENT or NOARP with an address); -EAGAIN when it is absent,
 * INCOMPLETE, FAILED or NONE; -EOPNOTSUPP for a non-Ethernet address;
 * negative errno otherwise.  state (may be NULL) receives the NUD_* state
 * whenever an entry exists (so a caller can refresh STALE entries).
 */
int nl_neigh_get(struct nl *nl, int ifindex, const struct mroc_addr *ip, uint8_t mac[6],
		 uint16_t *state);

/*
 * Makes the kernel resolve ip on ifindex (ARP or neighbour solicitation)
 * without sending anything else: RTM_NEWNEIGH with NTF_USE, which creates
 * the entry if needed and "uses" it as a packet would (NONE/FAILED ->
 * INCOMPLETE + probe, STALE -> DELAY -> probe; REACHABLE entries are left
 * alone).  Needs CAP_NET_ADMIN.  Returns 0 on success (resolution started,
 * not finished: poll nl_neigh_get), negative errno otherwise.
 */
int nl_neigh_resolve(struct nl *nl, int ifindex, const struct mroc_addr *ip);

struct nl_link {
	int ifindex;
	char name[IF_NAMESIZE];
	uint16_t type;			/* ARPHRD_ETHER, ARPHRD_LOOPBACK, ... */
	uint8_t mac[6];			/* zero when the link has no 6-byte address */
	uint32_t mtu;
	uint32_t flags;			/* IFF_UP, IFF_RUNNING, ... */
	uint8_t operstate;		/* IF_OPER_UP, ... */
	uint32_t speed_mbps;		/* from ethtool; 0 = unknown */
	int link_ifindex;		/* IFLA_LINK: lower device (VLAN, veth peer); 0 = none */
	uint16_t vlan_id;		/* the link is an 802.1Q VLAN device: its id; else 0 */
};

/*
 * One interface by index (ifindex > 0) or else by name (RTM_GETLINK); the
 * speed comes from ETHTOOL_GLINKSETTINGS when the driver reports one.
 * Returns 0 on success, -ENODEV if there is no such link, negative errno
 * otherwise.
 */
int nl_link_get(struct nl *nl, int ifindex, const char *name, struct nl_link *out);

/*
 * The first global (not link-local, not tentative) address of family
 * (AF_INET, AF_INET6, or 0 for either) on interface ifindex (RTM_GETADDR).
 * Returns 0 on success, -EADDRNOTAVAIL if it has none, negative errno
 * otherwise.
 */
int nl_addr_first(struct nl *nl, int ifindex, int family, struct mroc_addr *out);
/* 0 if addr is one of ifindex's addresses (tentative ones count), else -EADDRNOTAVAIL or negative errno. */
int nl_addr_has(struct nl *nl, int ifindex, const struct mroc_addr *addr);

/*
 * A non-blocking socket that becomes readable when links or routes change
 * (RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE).  Returns 0 and the
 * fd (the caller closes it), negative errno otherwise.
 */
int nl_monitor_open(int *fd);
/*
 * The same for addresses added to or removed from any interface
 * (RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR): mrocd keeps the XDP program's
 * set of our addresses current with it.
 */
int nl_addr_monitor_open(int *fd);
/* Reads every waiting notification; returns how many (lost ones count as one). */
int nl_monitor_drain(int fd);

#endif
