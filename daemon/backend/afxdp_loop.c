// SPDX-License-Identifier: MIT
/*
 * The AF_XDP backend's loopback (see afxdp_loop.h).  A packet the engine
 * sends to this daemon itself goes, in the frame it was written in (no
 * copy), to the receive path: into this view's queue when its QP is this
 * view's, else into the hand-off ring to the view that owns it (an RX
 * entry, given back as any handed frame).  The receiver's checks are the
 * wire's but the ICRC (nothing crossed a wire): the worker's source checks,
 * the token or the AEAD seal, the engine's.  The queue is bounded, and
 * tx_get never hands the engine more buffers than it can take.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/rtnetlink.h>

#include "afxdp_handoff.h"
#include "afxdp_loop.h"
#include "afxdp_state.h"
#include "frame.h"
#include "netlink.h"
#include "peers.h"

/* A worker's TX turn (16 batches of 64) fits: the next turn's receive drains it. */
#define LOOP_SLOTS	1024

enum { SELF_UNKNOWN, SELF_NO, SELF_YES };

struct self_entry {
	uint32_t handle;		/* the handle the answer is for (slot + generation) */
	uint8_t state;
};

struct afxdp_loop {
	uint32_t head, n;
	struct backend_pkt q[LOOP_SLOTS];
	uint32_t nself;			/* entries of self[], by peers_index */
	struct self_entry self[];
};

int afxdp_loop_create(struct afxdp *x)
{
	uint32_t n = x->max_peers ? x->max_peers : 1;

	x->loop = calloc(1, sizeof(*x->loop) + (size_t)n * sizeof(x->loop->self[0]));
	if (!x->loop)
		return -ENOMEM;
	x->loop->nself = n;
	return 0;
}

void afxdp_loop_destroy(struct afxdp *x)
{
	free(x->loop);
	x->loop = NULL;
}

/* a is network.address or a port's own address. */
static bool addr_configured(const struct afxdp *x, const struct mroc_addr *a)
{
	if (x->src.family && addr_eq(a, &x->src))
		return true;
	for (unsigned p = 0; p < x->nports; p++)
		if (x->port_cfg[p].addr.family && addr_eq(a, &x->port_cfg[p].addr))
			return true;
	return false;
}

bool afxdp_loop_src_ours(const struct afxdp *x, const struct mroc_addr *src)
{
	return x->loop && addr_configured(x, src);
}

/* addr is one of this daemon's: configured, or on one of its ports' interfaces (the kernel's). */
static bool addr_is_ours(struct afxdp *x, const struct mroc_addr *a)
{
	struct nl_route rt;

	if (addr_configured(x, a))
		return true;
	/* Not local to the host at all: the common answer, one request. */
	if (!x->nl || nl_route_get(x->nl, a, &rt) || rt.type != RTN_LOCAL)
		return false;
	/* The host's, but another daemon's interface may hold it: ours only if a port has it. */
	for (unsigned p = 0; p < x->nports; p++)
		if (!nl_addr_has(x->nl, x->port_cfg[p].ifindex, a))
			return true;
	return false;
}

bool afxdp_loop_is_self(struct afxdp *x, uint32_t peer)
{
	struct afxdp_loop *l = x->loop;
	uint32_t i = peers_index(peer);
	const struct peer *pe;
	struct self_entry *e;

	if (!l || i >= l->nself)
		return false;
	e = &l->self[i];
	if (e->state != SELF_UNKNOWN && e->handle == peer)
		return e->state == SELF_YES;
	pe = peers_get(x->b.peers, peer);
	if (!pe)
		return false;
	e->handle = peer;
	e->state = addr_is_ours(x, &pe->addr) ? SELF_YES : SELF_NO;
	return e->state == SELF_YES;
}

int afxdp_loop_room(const struct afxdp *x, int n)
{
	uint32_t room = x->loop ? LOOP_SLOTS - x->loop->n : (uint32_t)n;

	return room < (uint32_t)n ? (int)room : n;
}

bool afxdp_loop_pending(const struct afxdp *x)
{
	return x->loop && x->loop->n;
}

/* The view that owns the packet's QP (afxdp_add_views' owner), ours without views. */
static unsigned owner_of(const struct afxdp *x, const struct engine_txbuf *b)
{
	unsigned to;

	if (!x->vs)
		return x->idx;
	to = x->vs->owner(x->vs->owner_ctx, b->data, b->len);
	return to < x->vs->n ? to : x->idx;
}

bool afxdp_loop_send(struct afxdp *x, struct engine_txbuf *b, uint64_t now)
{
	struct afxdp_loop *l = x->loop;
	const struct peer *pe = peers_get(x->b.peers, b->peer);
	uint64_t frame = (uint64_t)(b->data - FRAME_HEADROOM - x->area);
	/* A socket of ours: the frame comes back to this view when released (rx_release). */
	unsigned s = x->own[0], to;
	struct mroc_addr a;

	if (!pe) {
		x->st.tx_no_route++;
		return false;
	}
	a = pe->addr;
	/* Between the peer's address and itself: the receiver opens it with the same two. */
	backend_seal(&x->b, b, &a, &a);
	to = owner_of(x, b);
	if (to != x->idx) {
		struct handoff_entry e = {
			.addr = (uint64_t)(b->data - x->area), .len = b->len, .sock = (uint8_t)s,
			.kind = HANDOFF_RX, .loop = true, .sport = b->sport, .src = a, .dst = a,
			.arrival = now,
		};

		if (!afxdp_hand_loop(x, to, &e)) {
			x->st.loopback_drops++;
			return false;
		}
		x->st.loopback_pkts++;
		x->st.loopback_handed++;
		return true;
	}
	if (l->n == LOOP_SLOTS) {
		x->st.loopback_drops++;
		return false;
	}
	l->q[(l->head + l->n++) % LOOP_SLOTS] = (struct backend_pkt){
		.data = b->data,
		.len = b->len,
		.src = a,
		.dst = a,
		.sport = b->sport,
		.arrival = now,
		.cookie = frame | (uint64_t)s << COOKIE_SOCK_SHIFT | COOKIE_LOOP,
	};
	x->st.loopback_pkts++;
	return true;
}

int afxdp_loop_rx(struct afxdp *x, struct backend_pkt *pkts, int n)
{
	struct afxdp_loop *l = x->loop;
	int got = 0;

	while (l && l->n && got < n) {
		pkts[got++] = l->q[l->head];
		l->head = (l->head + 1) % LOOP_SLOTS;
		l->n--;
	}
	return got;
}
