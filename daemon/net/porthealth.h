/* SPDX-License-Identifier: MIT */
/*
 * A port that reaches a peer in name only (AF_XDP, several ports): its link
 * is up and its next hop known, but nothing comes back from the peer through
 * it (a dead plane, a blackholing switch).  Per (peer, port): the data
 * packets sent since the last packet that came in (the caller counts only
 * packets the peer acknowledges: a data packet is ACKed within a round
 * trip and the ACK comes back by the same port; ACKs themselves expect no
 * answer).  When PORTHEALTH_DEAD_PKTS (8) went out, the 8th at least dead_ns
 * ago, nothing came back through the port since, and the peer was heard
 * through another port after that 8th packet, the port counts as down for
 * that peer for HOLD_FACTOR x dead_ns: its paths leave by the other ports
 * (afxdp.c), as when its link is down; then it is tried again with a fresh
 * allowance.
 *
 * Why these rules:
 * - Silence is measured from the packets, not from a quiet spell: the
 *   engine's repathing moves a path off a dead plane within an RTO, so no
 *   port ever sends into silence for long at a stretch; what adds up is the
 *   packets that each path that landed there lost.
 * - 8 packets, not 1: a packet lost on a port that then carries nothing
 *   else is no sign; 8 in a row with no answer is.
 * - The peer heard elsewhere: a peer that is gone, restarting or starved
 *   of CPU is silent on every port, which is no port's fault.
 * - Replies come back by the port their packets went out of (afxdp.c: both
 *   sides answer by the arrival port, and a plane joins the same port of
 *   every host), so silence on one port is the plane's.
 *
 * A port is judged when a packet wants it (porthealth_check) and by a sweep
 * (porthealth_sweep): the paths that lost packets there have usually moved
 * on by the time the silence has lasted dead_ns, and the port must still
 * count down, or the next path the engine moves would land there again.
 * One table per worker's view, for the peers of that worker; worker thread
 * only.
 */
#ifndef MROCD_PORTHEALTH_H
#define MROCD_PORTHEALTH_H

#include <stdbool.h>
#include <stdint.h>

#define PORTHEALTH_DEAD_PKTS	8	/* unanswered data packets before silence counts */
#define PORTHEALTH_HOLD_FACTOR	20	/* counted down for 20 x dead_ns, then tried again */

struct porthealth;

enum porthealth_state {
	PORTHEALTH_UP,
	PORTHEALTH_DOWN,		/* counted down for the peer */
	PORTHEALTH_WENT_DOWN,		/* ... by this very call (count it, say so) */
};

/* dead_ns 0 or one port: never counts a port down (*out is NULL, and every call takes NULL). */
int porthealth_create(uint32_t max_peers, unsigned nports, uint64_t dead_ns,
		      struct porthealth **out);
void porthealth_destroy(struct porthealth *ph);
/* A packet from peer came in on port. */
void porthealth_rx(struct porthealth *ph, uint32_t peer, unsigned port, uint64_t now);
/* A data packet (one the peer acknowledges) to peer went out of port. */
void porthealth_tx(struct porthealth *ph, uint32_t peer, unsigned port, uint64_t now);
/* Whether a packet to peer may take port: judges it, and ends a hold that is over. */
enum porthealth_state porthealth_check(struct porthealth *ph, uint32_t peer, unsigned port,
				       uint64_t now);
/* peer: the slot (peers_index) of the handles the other calls were given. */
typedef void (*porthealth_down_fn)(void *ctx, uint32_t peer, unsigned port);
/* Judges every (peer, port) as porthealth_check would: fn for each counted down just now. */
void porthealth_sweep(struct porthealth *ph, uint64_t now, porthealth_down_fn fn, void *ctx);
/* Counted down for peer now (changes nothing: for status). */
bool porthealth_is_down(const struct porthealth *ph, uint32_t peer, unsigned port,
			uint64_t now);
/* (peer, port) pairs counted down now. */
unsigned porthealth_count_down(const struct porthealth *ph, uint64_t now);
/* A handle given up: forget its ports. */
void porthealth_forget(struct porthealth *ph, uint32_t peer);
/*
 * The port's link went down or came up: forget what its silence said.  A
 * link that is down says it all (and the packets lost with it would count
 * the port down for 20 x dead_ns more, after the link is back).
 */
void porthealth_forget_port(struct porthealth *ph, unsigned port);

/*
 * The t-th port (t < nports) that a path wanting port want tries: want
 * itself, then the others in an order its source port rotates, so that the
 * paths of a port that is down spread evenly over the rest instead of all
 * landing on the next one.
 */
static inline unsigned porthealth_choice(unsigned nports, unsigned want, uint16_t sport,
					 unsigned t)
{
	unsigned others = nports - 1;

	if (!t || !others)
		return want;
	return (want + 1 + (sport / nports + t - 1) % others) % nports;
}

#endif
