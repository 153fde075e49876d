/* SPDX-License-Identifier: MIT */
/*
 * The AF_XDP backend with workers: the hand-off between views
 * (afxdp_handoff.c).  Called by afxdp.c only, when x->vs is set.
 */
#ifndef MROCD_AFXDP_HANDOFF_H
#define MROCD_AFXDP_HANDOFF_H

#include <stdbool.h>
#include <stdint.h>

#include "afxdp_state.h"

/* A frame of another view's back to it; false: keep it here (its ring is full). */
bool afxdp_hand_back(struct afxdp *x, unsigned to, uint64_t addr);
/* The same, or kept on our stack (its ring is full): owed to it, counted. */
void afxdp_give_back(struct afxdp *x, unsigned to, uint64_t addr);
/* Each loop: owed frames back to their views, as their rings have room and we have spare. */
void afxdp_views_repay(struct afxdp *x);
/* A received frame for another view's QP: true when it is gone (handed, or dropped). */
bool afxdp_hand_rx(struct afxdp *x, unsigned s, const struct xdp_desc *d,
		   const struct frame_rx *fr, uint64_t arrival);
/* A packet to ourselves for to's QP (afxdp_loop.c): false when the ring is full. */
bool afxdp_hand_loop(struct afxdp *x, unsigned to, const struct handoff_entry *e);
/*
 * A built frame for socket s, another view's: true when handed or waiting
 * in the backlog for its full ring; false: dropped (the backlog is full).
 */
bool afxdp_hand_tx(struct afxdp *x, unsigned s, uint64_t addr, uint32_t len);
/* Each loop: what waits in the backlogs into the rings, as far as they have room. */
void afxdp_views_tx_backlog(struct afxdp *x);
/*
 * TX buffers the hand-off can take (n or fewer): rings and backlogs to the
 * other views; one that can take nothing at all (a stalled view) does not limit.
 */
int afxdp_views_tx_room(struct afxdp *x, int n);
/*
 * What the other views handed us: up to n packets into pkts, frames to
 * send into our TX rings (tx_pending: the caller submits); returns how many
 * packets.
 */
int afxdp_views_rx(struct afxdp *x, struct backend_pkt *pkts, int n);
/* Ring the doorbell of every view we handed something that sleeps. */
void afxdp_views_wake(struct afxdp *x);
/* About to sleep (backend op may_sleep): false when a view handed us something meanwhile. */
bool afxdp_views_may_sleep(struct afxdp *x);

#endif
