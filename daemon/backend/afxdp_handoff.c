// SPDX-License-Identifier: MIT
/*
 * The AF_XDP backend with workers: the hand-off between views (afxdp.h,
 * afxdp_add_views; the rings: handoff.h).  A received frame for another
 * view's QP, or a built frame for another view's socket, goes to it through
 * the SPSC ring of the ordered pair; the frame comes back the same way, so
 * every view keeps its number of frames.  A sleeping view is woken by its
 * eventfd, only when it said it sleeps.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "afxdp_handoff.h"
#include "afxdp_state.h"
#include "evfd.h"
#include "handoff.h"
#include "log.h"

static struct handoff_ring *ring_to(struct afxdp *x, unsigned to)
{
	return &x->vs->rings[x->idx * x->vs->n + to];
}

static struct afxdp_backlog *backlog_to(struct afxdp *x, unsigned to)
{
	return &x->vs->backlogs[x->idx * x->vs->n + to];
}

static struct handoff_ring *ring_from(struct afxdp *x, unsigned from)
{
	return &x->vs->rings[from * x->vs->n + x->idx];
}

static bool hand(struct afxdp *x, unsigned to, const struct handoff_entry *e)
{
	if (!handoff_push(ring_to(x, to), e))
		return false;
	x->wake_mask |= 1u << to;
	return true;
}

/* A frame of another view's back to it; false: keep it here (its ring is full). */
bool afxdp_hand_back(struct afxdp *x, unsigned to, uint64_t addr)
{
	return hand(x, to, &(struct handoff_entry){ .addr = addr, .kind = HANDOFF_RETURN });
}

/* We hold one of to's frames more than we should: to be repaid (afxdp_views_repay). */
static void owe(struct afxdp *x, unsigned to)
{
	x->owed[to]++;
	x->owed_total++;
}

void afxdp_give_back(struct afxdp *x, unsigned to, uint64_t addr)
{
	if (afxdp_hand_back(x, to, addr))
		return;
	x->free[x->nfree++] = addr;
	x->st.handoff_return_full++;
	owe(x, to);
}

/*
 * Frames kept for a full ring, or taken without one to give back, go back
 * as soon as the ring has room and we have frames above our TX reserve:
 * without this they drifted for good, and a worker below its reserve sent
 * nothing (no data, no ACKs) and one whose fill rings emptied received
 * nothing (#24 item 13).
 */
void afxdp_views_repay(struct afxdp *x)
{
	if (!x->owed_total)
		return;
	for (unsigned v = 0; v < x->vs->n; v++) {
		while (x->owed[v] && x->nfree > x->tx_reserve &&
		       afxdp_hand_back(x, v, x->free[x->nfree - 1])) {
			x->nfree--;
			x->owed[v]--;
			x->owed_total--;
			x->st.handoff_repaid++;
		}
	}
}

/* A received frame for another view's QP: true when it is gone (handed, or dropped). */
bool afxdp_hand_rx(struct afxdp *x, unsigned s, const struct xdp_desc *d,
		   const struct frame_rx *fr, uint64_t arrival)
{
	unsigned to = x->vs->owner(x->vs->owner_ctx, fr->payload, fr->payload_len);
	const uint8_t *l2 = xsk_umem__get_data(x->area, d->addr);
	ptrdiff_t back = fr->payload - l2;

	if (to == x->idx || to >= x->vs->n)
		return false;
	if (hand(x, to, &(struct handoff_entry){ .addr = (uint64_t)(fr->payload - x->area),
						   .len = fr->payload_len, .sock = (uint8_t)s,
						   .kind = HANDOFF_RX, .sport = fr->sport,
						   .ce = fr->ecn == FRAME_ECN_CE,
						   .l2_back = back > 0 && back <= UINT8_MAX ?
							      (uint8_t)back : 0,
						   .src = fr->src,
						   .dst = fr->dst,
						   .arrival = arrival })) {
		x->st.handoff_rx_out++;
		return true;
	}
	x->st.handoff_full++;		/* dropped: the sender resends */
	x->free[x->nfree++] = frame_base(x, d->addr);
	return true;
}

bool afxdp_hand_loop(struct afxdp *x, unsigned to, const struct handoff_entry *e)
{
	return hand(x, to, e);
}

/* What waits for view to's ring, into it while it has room: the backlog's length after. */
static uint32_t backlog_push(struct afxdp *x, unsigned to)
{
	struct afxdp_backlog *bl = backlog_to(x, to);

	while (bl->n && hand(x, to, &bl->e[bl->head])) {
		bl->head = (bl->head + 1) % AFXDP_BACKLOG;
		bl->n--;
	}
	return bl->n;
}

/*
 * A built frame for socket s, another view's: into the ring to it, or
 * behind what already waits for that ring (order kept).  False when the
 * backlog is full too (a view that takes nothing, #24 item 14): dropped,
 * counted; the engine resends as after network loss.
 */
bool afxdp_hand_tx(struct afxdp *x, unsigned s, uint64_t addr, uint32_t len)
{
	unsigned to = x->sock_view[s];
	struct handoff_entry e = { .addr = addr, .len = len, .sock = (uint8_t)s,
				   .kind = HANDOFF_TX };
	struct afxdp_backlog *bl = backlog_to(x, to);

	if (backlog_push(x, to) || !hand(x, to, &e)) {
		if (bl->n == AFXDP_BACKLOG) {
			x->st.handoff_full++;
			return false;
		}
		bl->e[(bl->head + bl->n++) % AFXDP_BACKLOG] = e;
		x->st.handoff_tx_waited++;
	}
	x->st.handoff_tx_out++;
	x->st.tx_pkts++;
	x->st.tx_bytes += len;
	return true;
}

/* Each loop: frames waiting for the other views' rings, into them as they have room. */
void afxdp_views_tx_backlog(struct afxdp *x)
{
	for (unsigned v = 0; v < x->vs->n; v++)
		if (v != x->idx)
			backlog_push(x, v);
}

/*
 * Never take more TX buffers than the hand-off can take: the ring and the
 * backlog to each other view.  A view whose ring and backlog are both full
 * takes nothing any more (stalled): it no longer limits anyone (#24 item
 * 14: one full ring stopped this view's transmissions on every port); its
 * frames are dropped (afxdp_hand_tx).
 */
int afxdp_views_tx_room(struct afxdp *x, int n)
{
	for (unsigned v = 0; v < x->vs->n; v++) {
		uint32_t room;

		if (v == x->idx)
			continue;
		room = handoff_room(ring_to(x, v)) + AFXDP_BACKLOG - backlog_to(x, v)->n;
		if (room && room < (uint32_t)n)
			n = (int)room;
	}
	return n;
}

/* One entry from view from; false when it must wait (its socket's TX ring is full). */
static bool take_entry(struct afxdp *x, unsigned from, const struct handoff_entry *e,
		       struct backend_pkt *pkt, int *got)
{
	struct afxdp_sock *k;
	uint32_t idx;

	switch (e->kind) {
	case HANDOFF_RX:
		*pkt = (struct backend_pkt){
			.data = x->area + e->addr,
			.len = e->len,
			.src = e->src,
			.dst = e->dst,
			.sport = e->sport,
			.ce = e->ce,
			.arrival = e->arrival,
			.cookie = frame_base(x, e->addr) | (uint64_t)e->sock << COOKIE_SOCK_SHIFT |
				  COOKIE_HANDED | (e->loop ? COOKIE_LOOP : 0),
			.l2 = e->l2_back ? x->area + e->addr - e->l2_back : NULL,
		};
		(*got)++;
		if (!e->loop)
			x->st.handoff_rx_in++;
		return true;
	case HANDOFF_TX:
		k = &x->socks[e->sock];
		if (xsk_ring_prod__reserve(&k->tx, 1, &idx) != 1)
			return false;
		xsk_ring_prod__tx_desc(&k->tx, idx)->addr = e->addr;
		xsk_ring_prod__tx_desc(&k->tx, idx)->len = e->len;
		k->tx_pending++;
		x->st.handoff_tx_in++;
		/* The frame is ours now (our completion ring): one of ours goes back for it. */
		if (x->nfree && afxdp_hand_back(x, from, x->free[x->nfree - 1])) {
			x->nfree--;
		} else {
			x->st.handoff_tx_unpaid++;
			owe(x, from);
		}
		return true;
	default:
		x->free[x->nfree++] = frame_base(x, e->addr);
		return true;
	}
}

/* What the other views handed us: up to n packets into pkts; returns how many. */
int afxdp_views_rx(struct afxdp *x, struct backend_pkt *pkts, int n)
{
	int got = 0;

	if (atomic_load_explicit(&x->sleeping, memory_order_relaxed)) {
		atomic_store_explicit(&x->sleeping, false, memory_order_relaxed);
		evfd_drain(x->wake_fd);
	}
	for (unsigned v = 0; v < x->vs->n; v++) {
		struct handoff_ring *r;
		const struct handoff_entry *e;

		if (v == x->idx)
			continue;
		r = ring_from(x, v);
		while (got < n && (e = handoff_peek(r))) {
			if (!take_entry(x, v, e, &pkts[got], &got))
				break;
			handoff_pop(r);
		}
	}
	return got;
}

/* Ring the doorbell of every view we handed something that sleeps (see afxdp_may_sleep). */
void afxdp_views_wake(struct afxdp *x)
{
	uint64_t one = 1;

	if (!x->wake_mask)
		return;
	atomic_thread_fence(memory_order_seq_cst);
	for (unsigned v = 0; v < x->vs->n; v++)
		if ((x->wake_mask & 1u << v) &&
		    atomic_load_explicit(&x->vs->v[v]->sleeping, memory_order_relaxed) &&
		    write(x->vs->v[v]->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			pr_warn_rl("af_xdp: waking worker %u: %s", v, strerror(errno));
	x->wake_mask = 0;
}

/*
 * About to sleep: from now on, views that hand us something ring wake_fd.
 * The store and their push are each followed by a full fence before the
 * other side's load, so either they see sleeping or we see their entry.
 */
bool afxdp_views_may_sleep(struct afxdp *x)
{
	if (!x->vs)
		return true;
	atomic_store_explicit(&x->sleeping, true, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	for (unsigned v = 0; v < x->vs->n; v++)
		if (v != x->idx && !handoff_empty(ring_from(x, v)))
			return false;
	return true;
}
