/* SPDX-License-Identifier: MIT */
/*
 * The AF_XDP backend's loopback (afxdp_loop.c): packets to this daemon
 * itself (a QP connected to its own mrocd's address) are delivered to its
 * receive path, never put on the wire.  An AF_XDP TX frame leaves past the
 * kernel's local delivery and comes back only where the next hop routes it
 * back; verbs devices deliver such traffic inside the device, and so does
 * mrocd.  Called by afxdp.c only.
 */
#ifndef MROCD_AFXDP_LOOP_H
#define MROCD_AFXDP_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "afxdp_state.h"

/* The view's queue and its cache of which peers are this daemon.  0 or -errno. */
int afxdp_loop_create(struct afxdp *x);
void afxdp_loop_destroy(struct afxdp *x);
/*
 * Is peer this daemon?  Its primary address is network.address, a port's
 * own address or an address of one of our ports' interfaces.  Worked out
 * at the first packet to the handle (at most a netlink request), then cached.
 */
bool afxdp_loop_is_self(struct afxdp *x, uint32_t peer);
/*
 * Delivers a packet the engine wrote into b (a frame of this view's) to
 * the receive path of the view that owns its QP: queued here or handed
 * over.  Sealed first ("aead"), as a packet between the peer's address and
 * itself.  True when delivered (the frame is the receiver's until its
 * rx_release), false when dropped for a full queue or ring (counted).
 */
bool afxdp_loop_send(struct afxdp *x, struct engine_txbuf *b, uint64_t now);
/*
 * A frame from the wire from src, one of this daemon's configured
 * addresses (network.address, a port's own): a reflection or a forgery,
 * since our packets to ourselves never leave (docs/PROTOCOL.md 11a).
 */
bool afxdp_loop_src_ours(const struct afxdp *x, const struct mroc_addr *src);
/* Up to n looped packets of this view's own into pkts; returns how many. */
int afxdp_loop_rx(struct afxdp *x, struct backend_pkt *pkts, int n);
/* How many TX buffers the queue can take (n or fewer): the engine never loses one to it. */
int afxdp_loop_room(const struct afxdp *x, int n);
/* Packets wait in the queue (the worker must not sleep). */
bool afxdp_loop_pending(const struct afxdp *x);

#endif
