/* SPDX-License-Identifier: MIT */
/*
 * The peer table: engine peer handles <-> IP addresses (primary and port
 * addresses), and their ageing.  How to reach a peer is nexthop.h's (per
 * port, for AF_XDP).  Worker thread only.
 */
#ifndef MROCD_PEERS_H
#define MROCD_PEERS_H

#include <stdbool.h>
#include <stdint.h>

#include "addr.h"

struct engine;

/*
 * A peer's own addresses on its ports (docs/PROTOCOL.md 3.4, port
 * addresses), by port index: at most one per port, NEXTHOP_MAX_PORTS ports.
 */
#define PEERS_MAX_ALIASES	16

struct peer {
	uint32_t handle;		/* its index and generation (peers_index) */
	bool used;			/* the slot was given out before: generations count on */
	struct mroc_addr addr;
	/* ageing (peers.c) */
	bool live;			/* in the table (a released handle is not) */
	bool touched;			/* handed out since the last sweep */
	uint64_t handed_ns;		/* the tick (peers_sweep's now) it was last handed out in */
	bool referenced;		/* a QP used it at the last sweep */
	bool proven;			/* a QP used it at some sweep */
	uint64_t seen_ns;		/* last sweep that found it touched or referenced */
	uint32_t owner;			/* who added it (peers_get_handle_owned), 0: none */
	/*
	 * Port addresses (aliases): packets from alias[i] are the peer's too.
	 * speaks_ports: it sent the port-address extension (maybe empty), so it
	 * takes packets from our port addresses.
	 */
	bool speaks_ports;
	uint16_t alias_mask;		/* bit i: alias[i] is in the table */
	struct mroc_addr alias[PEERS_MAX_ALIASES];
};

struct peers;

/*
 * A handle is a slot of the table (its index, the low PEERS_INDEX_BITS)
 * and that slot's generation (the bits above): a slot given to another
 * address gets another handle, so a handle kept from before names nobody.
 */
#define PEERS_INDEX_BITS	16
#define PEERS_INDEX_MASK	((1u << PEERS_INDEX_BITS) - 1)

/* The slot of handle: what tables kept per peer are indexed by (below peers_count). */
static inline uint32_t peers_index(uint32_t handle)
{
	return handle & PEERS_INDEX_MASK;
}

/* Ageing (see peers.c): how often, and after how long unused a peer goes. */
#define PEERS_SWEEP_NS		1000000000ull	/* 1 s */
#define PEERS_UNPROVEN_NS	2000000000ull	/* no QP ever used it: 2 s */
#define PEERS_IDLE_NS		60000000000ull	/* 1 min */
#define PEERS_REFS_MIN_NS	10000000ull	/* full table: ask the engine at most every 10 ms */

struct peers_stats {
	uint64_t added;			/* peers that got a handle */
	uint64_t aged_out;		/* released by the sweep */
	uint64_t evicted;		/* released to make room in a full table */
	uint64_t full;			/* refused: full, nothing to evict */
	uint64_t owner_refused;		/* refused: its owner holds its share (peers_get_handle_owned) */
	uint64_t alias_added;		/* port addresses registered */
	uint64_t alias_refused;		/* ... refused: another live peer's address */
	uint64_t alias_shared;		/* ... that another peer claims too (both stand) */
	uint64_t alias_bad;		/* announcements that did not decode (portaddr.h) */
	uint64_t stale;			/* handles asked for whose peer went (peers_get: NULL) */
};

/*
 * A table for up to max peers (max < 2^PEERS_INDEX_BITS: slots 0 .. max-1;
 * a released slot is given out again, under another handle).  NULL with
 * errno set on failure.
 */
struct peers *peers_create(uint32_t max);
void peers_destroy(struct peers *p);
/* The engine whose QPs' peers must stay (NULL until it exists: then none do). */
void peers_set_engine(struct peers *p, const struct engine *eng);
/*
 * fn(ctx, handle) when a handle is released or its port addresses change:
 * what is cached per handle goes too.
 */
void peers_set_release_hook(struct peers *p, void (*fn)(void *ctx, uint32_t handle), void *ctx);
/*
 * Handle for addr (a port address gives its peer's), adding it (unresolved)
 * if new, evicting an unused peer when full; -ENOSPC when full of peers in
 * use.
 */
int peers_get_handle(struct peers *p, const struct mroc_addr *addr, uint32_t *handle);
/*
 * The same for a tenant (owner, not 0: clients pass uid + 1): a new peer
 * only while the peers it added that are in use (a QP used them at the last
 * sweep, or they were asked for since) are fewer than max_owned, -EDQUOT
 * otherwise.  Without it one user's QPs connecting to addresses of their own
 * filled the table, and every other client's connection to a new peer, and
 * every new host's CONNECT_REQ, got -ENOSPC.  A peer it found in the table
 * is not counted (another's, or the daemon's).
 */
int peers_get_handle_owned(struct peers *p, const struct mroc_addr *addr, uint32_t owner,
			   uint32_t max_owned, uint32_t *handle);
/* The table's size (peers_create's max). */
uint32_t peers_max(const struct peers *p);
/*
 * The same for the source of a CONNECT_REQ, which a peer sends from its
 * primary address: the peer whose primary it is, or a new one; a port
 * address another peer claims is left to it (the REQ is not authenticated
 * yet: docs/PROTOCOL.md 11a), so nobody can claim a host's address before
 * that host connects, and nobody can take it from a host that has.
 */
int peers_get_handle_req(struct peers *p, const struct mroc_addr *addr, uint32_t *handle);
/*
 * Handle for addr (a primary or a port address) without adding it; -ENOENT
 * if unknown.  An address two peers claim gives one of them: whether a
 * packet is a given peer's is peers_claims'.
 */
int peers_lookup(struct peers *p, const struct mroc_addr *addr, uint32_t *handle);
/*
 * peers_lookup in two steps, for a packet not yet authenticated: find
 * changes nothing; touch (keeps the peer from aging out) only once the
 * packet has proved itself (docs/PROTOCOL.md 11a).
 */
int peers_find(const struct peers *p, const struct mroc_addr *addr, uint32_t *handle);
void peers_touch(struct peers *p, uint32_t handle);
/*
 * The port addresses handle's peer announced (addr[i] for port i where bit
 * i of mask is set), replacing those it had, and marks it speaks_ports.  A
 * live peer's primary address (or its own) is refused and counted; one
 * another peer claims as a port address is the claim of both (counted
 * alias_shared): a claim takes nothing from anyone, since a packet is
 * checked against the addresses of the QP's own peer (peers_claims), and
 * only what the configured mode authenticated is announced (daemon.c).
 * Returns how many are registered, -ENOENT for an unknown handle, -EINVAL
 * for a bad address.
 */
int peers_set_aliases(struct peers *p, uint32_t handle, const struct mroc_addr *addr,
		      uint16_t mask);
/*
 * The engine's CM extension hook (engine_set_cm_ext_hook, ctx = the table):
 * the port addresses handle's peer announced (portaddr.h) become its
 * aliases; one that does not decode is counted (alias_bad) and changes
 * nothing.
 */
void peers_announce(void *p, uint32_t handle, const uint8_t *ext, size_t len);
/*
 * Every tick of the worker: the clock for the table, and every
 * PEERS_SWEEP_NS the sweep that releases unused peers.  Returns when it
 * wants to run next.
 */
uint64_t peers_sweep(struct peers *p, uint64_t now);
/* addr is handle's primary or one of the port addresses it announced. */
bool peers_claims(const struct peers *p, uint32_t handle, const struct mroc_addr *addr);
/*
 * NULL for an unknown or released handle, and for one whose slot went to
 * another address since (counted `stale`: the engine sent to a peer that
 * left, docs/PROTOCOL.md 11a).
 */
struct peer *peers_get(struct peers *p, uint32_t handle);
/* The live peer in slot index (peers_index), whatever its generation; NULL if none. */
struct peer *peers_at(struct peers *p, uint32_t index);
/* Every handle's index is below this (tables indexed by peers_index size on it). */
uint32_t peers_count(const struct peers *p);
/* Peers in the table now. */
uint32_t peers_live(const struct peers *p);
void peers_get_stats(const struct peers *p, struct peers_stats *out);

#endif
