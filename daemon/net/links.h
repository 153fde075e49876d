/* SPDX-License-Identifier: MIT */
/*
 * Control connections between daemons: mrocd keeps one QP to every peer its
 * config names (service MROCD_SERVICE_CONTROL), reconnecting with backoff,
 * and accepts such connections from any daemon.  Keepalives on these QPs
 * tell an operator which peers are alive before any application connects.
 * Worker thread only.
 */
#ifndef MROCD_LINKS_H
#define MROCD_LINKS_H

#include <stdbool.h>
#include <stdint.h>

#include "addr.h"
#include "engine.h"

#define MROCD_SERVICE_CONTROL	0x6d726f6300000001ULL	/* "mroc", 1 */

/*
 * Service ids 0x6d726f63_00000000 .. _ffffffff ("mroc", n) are the daemons'
 * own: clients may neither listen on them (and capture a peer daemon's
 * control link) nor connect to them (and pose as a daemon).
 */
static inline bool mrocd_service_reserved(uint64_t service_id)
{
	return service_id >> 32 == MROCD_SERVICE_CONTROL >> 32;
}
#define LINKS_MAX		64

struct peers;
struct links;

enum link_state { LINK_IDLE = 0, LINK_CONNECTING, LINK_UP };

struct link_info {
	struct mroc_addr addr;
	uint32_t qpn;
	uint8_t state;			/* enum link_state */
	bool outgoing;			/* we connect to it (it is in our config) */
	uint64_t connects, failures;
	uint64_t up_since_ns;
};

/* Incoming links (links.c give_way): counters. */
struct links_stats {
	uint64_t in_accepted;		/* incoming links taken */
	uint64_t in_evicted;		/* ... closed for a newer one (table full: the peer's own
					 * oldest, or the oldest of the peer holding the most, or
					 * for a peer we name the oldest of one we do not) */
	uint64_t in_refused;		/* ... refused: full, each a different peer's, and the
					 * newcomer not named in our config */
};

struct links *links_create(struct engine *eng, struct peers *peers, const struct mroc_addr *addrs,
			   unsigned n);
/*
 * Paths and mode of the QPs created from now on (transport.paths and
 * transport.mode, [reload]): set before the first links_tick and by the
 * daemon's reload hook.  Links already up keep theirs.
 */
void links_set_qp_defaults(struct links *l, uint8_t npaths, uint8_t mode);
void links_destroy(struct links *l);
/* Start due (re)connections; returns the next time it wants to run. */
uint64_t links_tick(struct links *l, uint64_t now);
/* A completion or event of the engine: true if it was one of ours. */
bool links_on_cqe(struct links *l, const struct engine_cqe *c, uint64_t now);
int links_info(const struct links *l, struct link_info *out, int max);
void links_get_stats(const struct links *l, struct links_stats *out);
/* Disconnect every link (shutdown). */
void links_close_all(struct links *l, uint64_t now);

#endif
