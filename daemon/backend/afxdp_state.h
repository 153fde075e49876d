/* SPDX-License-Identifier: MIT */
/*
 * The AF_XDP backend's state, which afxdp.c (sockets, frames, rings) and
 * afxdp_handoff.c (the hand-off between workers' views) share, and the RX
 * cookie.  Private to daemon/backend/afxdp*.c.
 */
#ifndef MROCD_AFXDP_STATE_H
#define MROCD_AFXDP_STATE_H

#include <net/if.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <xdp/xsk.h>

#include "afxdp.h"
#include "egress.h"
#include "frame.h"
#include "handoff.h"

/*
 * RX cookie: frame address in the low 48 bits, socket index above, a
 * handed-over frame's bit, a looped-back one's (afxdp_loop.c: it came in
 * through no port, and its frame goes back to the free stack of the view
 * that owns socket index, never to a fill ring).
 */
#define COOKIE_SOCK_SHIFT 48
#define COOKIE_HANDED	(1ULL << 62)
#define COOKIE_LOOP	(1ULL << 61)

/*
 * Built frames for another view's socket that its full ring could not take
 * yet, in order (afxdp_handoff.c): a view that is only slow loses none of
 * them; one that takes nothing (stalled) fills this too, and then its
 * frames are dropped, so it never stops the sender's other ports.
 */
#define AFXDP_BACKLOG	256

struct afxdp_backlog {
	uint32_t head, n;
	struct handoff_entry e[AFXDP_BACKLOG];
};

struct afxdp_sock {
	struct xsk_socket *xsk;
	struct xsk_ring_cons rx, cq;
	struct xsk_ring_prod tx, fq;
	char ifname[IF_NAMESIZE];
	int ifindex;
	uint32_t queue;
	struct mroc_addr addr;	/* its port's own address (afxdp_if) */
	bool zero_copy;
	bool registered;	/* in the XDP program's socket map */
	uint32_t tx_pending;	/* descriptors reserved and filled, not yet submitted */
};

/* A port's sockets: socks[first .. first+nsocks), one per configured queue. */
struct afxdp_port {
	unsigned first, nsocks;
};

struct afxdp;
struct afxdp_loop;

/* The workers' views of one UMEM and its sockets (afxdp_add_views). */
struct afxdp_views {
	unsigned n;
	struct afxdp *v[AFXDP_MAX_VIEWS];
	afxdp_owner_fn owner;		/* which view owns a packet's QP */
	void *owner_ctx;
	struct handoff_ring *rings;	/* [from * n + to] */
	struct afxdp_backlog *backlogs;	/* [from * n + to]: the from view's */
};

struct afxdp {
	struct backend b;
	uint8_t *area;
	size_t area_len;
	struct xsk_umem *umem;
	uint32_t frame_size;
	uint16_t udp_port;
	struct xdp_prog *prog;
	struct afxdp_sock socks[AFXDP_MAX_SOCKS];
	unsigned nsocks;
	struct frame_tmpls tmpls;	/* send_one's headers, per path (frame_build_cached) */
	struct egress_port port_cfg[EGRESS_MAX_PORTS];	/* the interfaces, in port order */
	struct afxdp_port ports[EGRESS_MAX_PORTS];
	unsigned nports;
	uint8_t sock_port[AFXDP_MAX_SOCKS];	/* socket index -> port */
	struct nl *nl;
	uint32_t max_peers;
	struct mroc_addr src;
	uint64_t port_dead_ns;		/* porthealth.h; 0 = off */
	struct egress *egress;		/* port and next hop of each packet (egress.h) */
	unsigned rx_rr;
	uint64_t *free;		/* free frame addresses */
	uint32_t nfree, nframes;
	uint32_t tx_reserve;		/* free frames kept for the fill rings */
	uint32_t ring_size;		/* of each socket's rings (the fill ring's) */
	/* Workers: frames this view kept of each other view's, to give back (afxdp_handoff.c). */
	uint32_t owed[AFXDP_MAX_VIEWS], owed_total;
	/* The sockets this view serves (all of them without workers). */
	unsigned own[AFXDP_MAX_SOCKS], nown;
	/* Workers (NULL without): this view's index, the socket owners, wake-ups. */
	struct afxdp_views *vs;
	unsigned idx;
	uint8_t sock_view[AFXDP_MAX_SOCKS];
	int wake_fd;			/* -1 without workers */
	atomic_bool sleeping;		/* about to sleep: hand-offs must ring wake_fd */
	uint32_t wake_mask;		/* views handed something since the last flush */
	struct afxdp_loop *loop;	/* packets to ourselves, this view's (afxdp_loop.c) */
	struct backend_stats st;
	char desc[256];
	char why[AFXDP_WHY_LEN];	/* why afxdp_create failed */
};

/*
 * Descriptors point anywhere inside a frame (RX data sits after the kernel's
 * headroom, TX after our headers): always keep frame starts on the free
 * stack, or offsets would add up until a frame no longer fits its chunk.
 */
static inline uint64_t frame_base(const struct afxdp *x, uint64_t addr)
{
	return xsk_umem__extract_addr(addr) & ~(uint64_t)(x->frame_size - 1);
}

/* afxdp.c's, for afxdp_setup.c: the backend's operations, a socket's fill ring topped up. */
extern const struct backend_ops afxdp_ops;
void afxdp_refill(struct afxdp *x, struct afxdp_sock *k, uint32_t n);

#endif
