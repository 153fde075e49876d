/* SPDX-License-Identifier: MIT */
/*
 * The peer table: engine peer handles <-> IP addresses, and for AF_XDP how
 * to reach each one (egress interface, source address, next-hop MAC),
 * learnt from the kernel's route and neighbour tables over netlink.
 * Worker thread only.
 */
#ifndef MROCD_PEERS_H
#define MROCD_PEERS_H

#include <stdbool.h>
#include <stdint.h>

#include "addr.h"
#include "frame.h"

struct nl;			/* netlink.h */

struct peer {
	uint32_t handle;
	struct mroc_addr addr;
	/* next hop, valid when resolved */
	bool resolved;
	int ifindex;			/* device to send on (a VLAN device's lower link) */
	uint16_t vlan;			/* 802.1Q id to tag with, 0 = untagged */
	struct mroc_addr src;		/* our address towards this peer */
	uint8_t smac[ETH_ALEN_], dmac[ETH_ALEN_];
	uint64_t next_try_ns;		/* unresolved: when to ask the kernel again */
	uint64_t resolved_at_ns;
	uint32_t tries;			/* failed resolutions since the last success */
	int last_err;			/* why the last resolution failed (negative errno), 0 */
};

struct peers;

/* Unresolved peers are retried after 1 ms, 2 ms, 4 ms, ... at most 1 s apart. */
#define PEERS_BACKOFF_MIN_NS	1000000ull
#define PEERS_BACKOFF_MAX_NS	1000000000ull

/*
 * A table for up to max peers (handles 0 .. max-1, in the order added).
 * nl may be NULL (no AF_XDP: peers_route then always fails with
 * last_err -EOPNOTSUPP).  NULL with errno set on failure.
 */
struct peers *peers_create(uint32_t max, struct nl *nl);
void peers_destroy(struct peers *p);
/* Handle for addr, adding it (unresolved) if new; -ENOSPC when full. */
int peers_get_handle(struct peers *p, const struct mroc_addr *addr, uint32_t *handle);
/* Handle for addr without adding it; -ENOENT if unknown. */
int peers_lookup(const struct peers *p, const struct mroc_addr *addr, uint32_t *handle);
/* NULL for an unknown handle. */
struct peer *peers_get(struct peers *p, uint32_t handle);
/*
 * A peer we can send to now, resolving it through netlink first if needed
 * and due (now in ns); NULL while unresolved (resolution was triggered, the
 * next try is at next_try_ns, last_err says why).  Resolving: route ->
 * egress device, source address, gateway; neighbour entry of the gateway
 * (or of the peer when on-link) -> dmac, asking the kernel to resolve it
 * when missing; the device's MAC -> smac.  Non-unicast routes (local,
 * blackhole...) and non-Ethernet devices fail.
 */
struct peer *peers_route(struct peers *p, uint32_t handle, uint64_t now);
/* Forget resolutions older than max_age_ns so routes and MACs are re-learnt. */
void peers_expire(struct peers *p, uint64_t now, uint64_t max_age_ns);
uint32_t peers_count(const struct peers *p);

#endif
