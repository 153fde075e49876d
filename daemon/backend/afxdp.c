// SPDX-License-Identifier: MIT
/*
 * AF_XDP backend (see afxdp.h).  Frame life cycle: a UMEM frame is either in
 * a socket's fill ring (the kernel may write a received packet into it), held
 * by the worker (received, not yet released; or handed to the engine by
 * tx_get), in a socket's TX ring / completion ring, or on the free stack.
 * Every transition is a batch, and nothing is allocated after creation.
 * Which port and next hop a packet leaves by is egress.h's; the hand-off
 * between workers' views is afxdp_handoff.c's.
 */
#include <errno.h>
#include <net/if.h>
#include <stdatomic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include "afxdp_handoff.h"
#include "afxdp_loop.h"
#include "afxdp_state.h"
#include "frame.h"
#include "handoff.h"
#include "log.h"
#include "mroc_util.h"
#include "wire.h"
#include "xdp_prog.h"


static struct afxdp *to_afxdp(struct backend *b)
{
	return (struct afxdp *)b;
}

/* Descriptors submitted to a TX ring that the kernel has not taken yet. */
static uint32_t tx_queued(const struct xsk_ring_prod *tx)
{
	/* Acquire: pairs with the kernel's release of the consumer index. */
	return __atomic_load_n(tx->producer, __ATOMIC_RELAXED) -
	       __atomic_load_n(tx->consumer, __ATOMIC_ACQUIRE);
}

/*
 * A kick (sendto) sends at most 32 descriptors in copy mode (the kernel's
 * TX batch, unless afxdp_set_tx_budget raised it; the rest wait for the
 * next kick) and says EAGAIN both when it stopped there and when the
 * device queue is stopped.  One kick per batch
 * of 64 left packets in the ring with nobody to send them once the engine
 * had nothing new: they went out only with the next packet, often a
 * tail-loss probe or an RTO.  So kick until the ring is empty or a kick
 * took nothing (queue stopped: the worker comes back, see tx_flush).
 * Zero-copy sends asynchronously: one kick, when the driver asks for it.
 */
int afxdp_tx_kick(struct xsk_ring_prod *tx, int fd, bool zero_copy)
{
	uint32_t left = tx_queued(tx);

	for (unsigned i = 0; left && i < AFXDP_KICKS_MAX; i++) {
		uint32_t before = left;

		if (!xsk_ring_prod__needs_wakeup(tx))
			break;
		if (sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN &&
		    errno != EBUSY && errno != ENOBUFS && errno != ENETDOWN)
			return -errno;
		left = tx_queued(tx);
		if (zero_copy || left >= before)
			break;
	}
	return (int)left;
}

#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET	9	/* linux/if_xdp.h of kernels 6.17 and later */
#endif

int afxdp_set_tx_budget(int fd, uint32_t budget)
{
	unsigned int b = budget;

	return setsockopt(fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &b, sizeof(b)) ? -errno : 0;
}

/* Give a socket's completed TX frames back to the free stack. */
static void reclaim_sock(struct afxdp *x, struct afxdp_sock *k)
{
	uint32_t idx, n = xsk_ring_cons__peek(&k->cq, x->nframes, &idx);

	for (uint32_t i = 0; i < n; i++)
		x->free[x->nfree++] = frame_base(x, *xsk_ring_cons__comp_addr(&k->cq, idx + i));
	if (n)
		xsk_ring_cons__release(&k->cq, n);
}

static void reclaim(struct afxdp *x)
{
	for (unsigned i = 0; i < x->nown; i++)
		reclaim_sock(x, &x->socks[x->own[i]]);
}

/*
 * Kick every socket of ours with descriptors still in its TX ring (its
 * completion ring emptied first: a full one stops the kernel too).
 * Returns how many are still waiting.
 */
static uint32_t flush(struct afxdp *x)
{
	uint32_t left = 0;

	for (unsigned i = 0; i < x->nown; i++) {
		struct afxdp_sock *k = &x->socks[x->own[i]];
		int n;

		if (!tx_queued(&k->tx))
			continue;
		reclaim_sock(x, k);
		n = afxdp_tx_kick(&k->tx, xsk_socket__fd(k->xsk), k->zero_copy);
		if (n < 0) {
			x->st.tx_kick_errors++;
			pr_warn_rl("af_xdp: TX kick on %s: %s", k->ifname, strerror(-n));
			n = (int)tx_queued(&k->tx);
		}
		left += (uint32_t)n;
	}
	return left;
}

/* Put up to n free frames into a socket's fill ring. */
void afxdp_refill(struct afxdp *x, struct afxdp_sock *k, uint32_t n)
{
	uint32_t idx, got;

	if (n > x->nfree)
		n = x->nfree;
	got = xsk_ring_prod__reserve(&k->fq, n, &idx);
	for (uint32_t i = 0; i < got; i++)
		*xsk_ring_prod__fill_addr(&k->fq, idx + i) = x->free[--x->nfree];
	if (got)
		xsk_ring_prod__submit(&k->fq, got);
}

/*
 * Nothing received on k: a fill ring that lost a quarter or more of its
 * frames (its refill after receiving found the free stack empty) is
 * refilled now: refilled only after receiving, one that ran dry stayed
 * dry (#24 item 13).  Normally full, so this costs a compare.
 */
static void refill_idle(struct afxdp *x, struct afxdp_sock *k)
{
	uint32_t room = xsk_prod_nb_free(&k->fq, x->ring_size / 4);

	if (room < x->ring_size / 4 || !x->nfree)
		return;
	x->st.fill_refills++;
	afxdp_refill(x, k, room);
}

static void submit_tx(struct afxdp *x);

/*
 * A received frame was written by the CPU that ran the sender's softirq
 * (on veth, the sending process's CPU; on a NIC, the interrupt's): every
 * line of it misses here, and frame_parse reads them all (the headers,
 * then the ICRC over the packet).  Each frame is a separate 2-4 KiB block,
 * so the hardware prefetcher learns its stream only after a few misses.
 * afxdp_rx asks for frame i + RX_PREFETCH_AHEAD while it parses frame i,
 * so the misses overlap with work (issue #22: the receiving mrocd spent
 * ~200 ns a packet stalled in afxdp_rx, wire_parse_flags and the CRC).
 */
#define RX_PREFETCH_AHEAD	2

static void prefetch_frame(const struct afxdp *x, const struct xdp_desc *d)
{
	/* From the arrival stamp in front of the frame (xdp_prog_rx_stamp) to its end. */
	const uint8_t *p = (const uint8_t *)xsk_umem__get_data(x->area, d->addr) -
			   sizeof(struct mroc_xdp_meta);
	uint32_t len = d->len + (uint32_t)sizeof(struct mroc_xdp_meta);

	for (uint32_t off = 0; off < len; off += 64)
		__builtin_prefetch(p + off, 0, 3);
}

static bool afxdp_may_sleep(struct backend *b)
{
	return !afxdp_loop_pending(to_afxdp(b)) && afxdp_views_may_sleep(to_afxdp(b));
}

static int afxdp_rx(struct backend *b, struct backend_pkt *pkts, int n)
{
	struct afxdp *x = to_afxdp(b);
	int got = 0;

	if (x->vs) {
		got = afxdp_views_rx(x, pkts, n);
		submit_tx(x);	/* the frames other views handed us to send */
		afxdp_views_tx_backlog(x);	/* ours that waited for a full ring */
		afxdp_views_repay(x);
	}
	got += afxdp_loop_rx(x, pkts + got, n - got);
	for (unsigned t = 0; t < x->nown && got < n; t++) {
		unsigned s = x->own[(x->rx_rr + t) % x->nown];
		struct afxdp_sock *k = &x->socks[s];
		uint32_t idx, rcvd = xsk_ring_cons__peek(&k->rx, (uint32_t)(n - got), &idx);

		if (!rcvd) {
			refill_idle(x, k);
			/* The kernel stops filling when it ran dry; tell it to look again. */
			if (xsk_ring_prod__needs_wakeup(&k->fq))
				recvfrom(xsk_socket__fd(k->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
			continue;
		}
		x->st.rx_batches++;
		for (uint32_t i = 0; i < RX_PREFETCH_AHEAD && i < rcvd; i++)
			prefetch_frame(x, xsk_ring_cons__rx_desc(&k->rx, idx + i));
		for (uint32_t i = 0; i < rcvd; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&k->rx, idx + i);
			uint64_t addr = frame_base(x, d->addr);
			uint8_t *frame = xsk_umem__get_data(x->area, d->addr);
			uint64_t arrival = xdp_prog_rx_stamp(frame);
			struct frame_rx fr;
			enum frame_err why;

			if (i + RX_PREFETCH_AHEAD < rcvd)
				prefetch_frame(x, xsk_ring_cons__rx_desc(&k->rx, idx + i +
									 RX_PREFETCH_AHEAD));
			if (frame_parse(frame, d->len, &fr, &why) || fr.dport != x->udp_port) {
				if (why == FRAME_ERR_ICRC)
					x->st.rx_bad_icrc++;
				else
					x->st.rx_bad_frame++;
				x->free[x->nfree++] = addr;	/* back to the fill ring below */
				continue;
			}
			/*
			 * From our own address: not ours (we loop those back,
			 * afxdp_loop.c), a reflection or a forgery (PROTOCOL 11a).
			 */
			if (afxdp_loop_src_ours(x, &fr.src)) {
				x->st.rx_src_ours++;
				x->free[x->nfree++] = addr;
				continue;
			}
			if (x->vs && afxdp_hand_rx(x, s, d, &fr, arrival))
				continue;
			pkts[got++] = (struct backend_pkt){
				.data = fr.payload,
				.len = fr.payload_len,
				.src = fr.src,
				.dst = fr.dst,
				.sport = fr.sport,
				.ce = fr.ecn == FRAME_ECN_CE,
				.arrival = arrival,
				.cookie = addr | (uint64_t)s << COOKIE_SOCK_SHIFT,
				.l2 = frame,
			};
			x->st.rx_pkts++;
			x->st.rx_bytes += d->len;
		}
		xsk_ring_cons__release(&k->rx, rcvd);
		if (x->nfree)
			afxdp_refill(x, k, x->nfree < rcvd ? x->nfree : rcvd);
	}
	x->rx_rr++;
	if (x->vs)
		afxdp_views_wake(x);
	return got;
}

/* Frames back to the free stack, then each socket's fill ring refilled by as many, in one go. */
static void afxdp_rx_release(struct backend *b, struct backend_pkt *pkts, int n)
{
	struct afxdp *x = to_afxdp(b);
	uint32_t per_sock[AFXDP_MAX_SOCKS] = { 0 };

	for (int i = 0; i < n; i++) {
		unsigned s = (unsigned)(pkts[i].cookie >> COOKIE_SOCK_SHIFT & (AFXDP_MAX_SOCKS - 1));
		uint64_t addr = pkts[i].cookie & ((1ULL << COOKIE_SOCK_SHIFT) - 1);

		if (pkts[i].cookie & COOKIE_HANDED) {
			afxdp_give_back(x, x->sock_view[s], addr);
			continue;
		}
		x->free[x->nfree++] = addr;
		/* Looped back (afxdp_loop.c): a TX frame, no fill ring's. */
		if (pkts[i].cookie & COOKIE_LOOP)
			continue;
		per_sock[s < x->nsocks ? s : 0]++;
	}
	for (unsigned i = 0; i < x->nown; i++)
		if (per_sock[x->own[i]])
			afxdp_refill(x, &x->socks[x->own[i]], per_sock[x->own[i]]);
	if (x->vs)
		afxdp_views_wake(x);
}

static int afxdp_tx_get(struct backend *b, struct engine_txbuf *bufs, int n)
{
	struct afxdp *x = to_afxdp(b);
	int i;

	if ((uint32_t)n > x->nfree)
		reclaim(x);
	/*
	 * Never hand the engine more buffers than every TX ring can take: a
	 * packet the ring refused would look to the engine like network loss.
	 */
	for (unsigned j = 0; j < x->nown; j++) {
		uint32_t room = xsk_prod_nb_free(&x->socks[x->own[j]].tx, (uint32_t)n);

		if (room < (uint32_t)n)
			n = (int)room;
	}
	if (x->vs)
		n = afxdp_views_tx_room(x, n);
	n = afxdp_loop_room(x, n);
	/* Short of ring room or frames: what the rings hold must go out first. */
	if (!n) {
		x->st.tx_ring_full++;
		flush(x);
		return 0;
	}
	/* Keep a reserve for the fill rings so RX never starves behind TX. */
	for (i = 0; i < n && x->nfree > x->tx_reserve; i++) {
		uint64_t addr = x->free[--x->nfree];

		bufs[i] = (struct engine_txbuf){
			.data = x->area + addr + FRAME_HEADROOM,
			.cap = x->frame_size - FRAME_HEADROOM - FRAME_ICRC_LEN,
		};
	}
	if (i < n) {
		x->st.tx_ring_full++;
		flush(x);
	}
	return i;
}

static uint64_t buf_addr(const struct afxdp *x, const struct engine_txbuf *b)
{
	return (uint64_t)(b->data - FRAME_HEADROOM - x->area);
}

/*
 * Where our path's packets would leave (for status), without resolving or
 * judging anything; "loopback" for this daemon itself (afxdp_loop.c).
 */
static const char *afxdp_port_name(struct backend *b, uint32_t peer, uint16_t sport)
{
	struct afxdp *x = to_afxdp(b);

	if (afxdp_loop_is_self(x, peer))
		return "loopback";
	return egress_port_name(x->egress, peer, sport, mono_ns());
}

/* The ports counted down for peer now (porthealth.h), their names into names[]. */
static unsigned afxdp_ports_down(struct backend *b, uint32_t peer, const char **names,
				 unsigned max)
{
	return egress_ports_down(to_afxdp(b)->egress, peer, names, max, mono_ns());
}

/* A packet that the engine took came from peer through the port of its socket (egress_heard). */
static void afxdp_heard(struct backend *b, const struct backend_pkt *pkt, uint32_t peer,
			uint64_t now, enum egress_heard_as as)
{
	struct afxdp *x = to_afxdp(b);
	unsigned s = (unsigned)(pkt->cookie >> COOKIE_SOCK_SHIFT & (AFXDP_MAX_SOCKS - 1));

	/* Looped back: it came in through no port, and nothing to ourselves takes one. */
	if (s >= x->nsocks || (pkt->cookie & COOKIE_LOOP))
		return;
	egress_heard(x->egress, peer, &pkt->src, pkt->sport, x->sock_port[s], now, as);
}

/*
 * backend.reply: a frame of ours back the way pkt's came, MACs and addresses
 * swapped, the tag it had, out of a socket of the port it came in by, as
 * an answer on the peer's path (its source port, our UDP port).  No next
 * hop is looked up: the source may be a spoofed one, and resolving it
 * would fill the neighbour table (11a); the frame says where it came from.
 */
static int afxdp_reply(struct backend *b, const struct backend_pkt *pkt, const uint8_t *data,
		       uint32_t len)
{
	struct afxdp *x = to_afxdp(b);
	unsigned s = (unsigned)(pkt->cookie >> COOKIE_SOCK_SHIFT & (AFXDP_MAX_SOCKS - 1));
	const uint8_t *in = pkt->l2;
	struct frame_tx ft = {
		.src = pkt->dst, .dst = pkt->src, .sport = pkt->sport, .dport = x->udp_port,
		.ecn = FRAME_ECN_NOT_ECT, .icrc = true,
	};
	struct afxdp_port *port;
	struct afxdp_sock *k;
	struct xdp_desc *d;
	uint64_t addr;
	uint32_t idx;
	int off;

	if (!in || s >= x->nsocks || len > x->frame_size - FRAME_HEADROOM - FRAME_ICRC_LEN) {
		x->st.tx_no_route++;
		return -EOPNOTSUPP;
	}
	memcpy(ft.dmac, in + 6, sizeof(ft.dmac));
	memcpy(ft.smac, in, sizeof(ft.smac));
	if ((in[12] << 8 | in[13]) == 0x8100)
		ft.vlan = (uint16_t)((in[14] << 8 | in[15]) & 0xfff);
	port = &x->ports[x->sock_port[s]];
	k = &x->socks[port->first + (pkt->sport / x->nports) % port->nsocks];
	if (x->nfree <= x->tx_reserve)
		reclaim(x);
	if (x->nfree <= x->tx_reserve) {
		x->st.tx_ring_full++;
		return -ENOBUFS;
	}
	addr = x->free[--x->nfree];
	memcpy(x->area + addr + FRAME_HEADROOM, data, len);
	off = frame_build(x->area + addr, len, &ft);
	if (off >= 0 && x->vs && x->sock_view[k - x->socks] != x->idx) {
		if (afxdp_hand_tx(x, (unsigned)(k - x->socks), addr + (uint64_t)off,
				  frame_len(off, len, &ft)))
			return 0;
		off = -ENOBUFS;
	}
	if (off < 0 || xsk_ring_prod__reserve(&k->tx, 1, &idx) != 1) {
		x->free[x->nfree++] = addr;
		x->st.tx_ring_full++;
		return off < 0 ? off : -ENOBUFS;
	}
	d = xsk_ring_prod__tx_desc(&k->tx, idx);
	d->addr = addr + (uint64_t)off;
	d->len = frame_len(off, len, &ft);
	k->tx_pending++;		/* submitted with the next batch (tx_send, tx_flush) */
	x->st.tx_pkts++;
	x->st.tx_bytes += d->len;
	return 0;
}

/* Housekeeping on the worker's tick: links, next hops, port health (egress.h). */
static uint32_t afxdp_tick(struct backend *b, uint64_t now)
{
	return egress_tick(to_afxdp(b)->egress, now);
}

static bool send_one(struct afxdp *x, struct engine_txbuf *b, uint64_t now)
{
	uint64_t addr = buf_addr(x, b);
	const struct nexthop *h;
	struct afxdp_port *port;
	struct afxdp_sock *k;
	struct frame_tx ft;
	struct xdp_desc *d;
	/* CM between the primary addresses: the peer may not know our port addresses yet. */
	uint8_t op = mroc_pkt_opcode(b->data, b->len);
	bool own = b->len > 1 && !mroc_op_is_cm(op);
	unsigned p;
	uint32_t idx;
	int off;

	/* To this daemon itself: its receive path, never the wire (afxdp_loop.c). */
	if (afxdp_loop_is_self(x, b->peer))
		return afxdp_loop_send(x, b, now);
	h = egress_route(x->egress, b->peer, b->sport, b->echo, own,
			 op == MROC_OP_CONNECT_REP || op == MROC_OP_CONNECT_REJ,
			 mroc_op_is_data(op), now, &p);
	if (!h) {
		x->st.tx_no_route++;
		return false;
	}
	/* "aead": sealed for the addresses it leaves between (before the length goes into the frame). */
	backend_seal(&x->b, b, &h->src, &h->dst);
	/* Several queues of one port: a path keeps to one of them. */
	port = &x->ports[p];
	k = &x->socks[port->first + (b->sport / x->nports) % port->nsocks];
	ft = (struct frame_tx){
		.src = h->src,
		.dst = h->dst,
		.sport = b->sport,
		.dport = x->udp_port,
		.ecn = b->ect ? FRAME_ECN_ECT0 : FRAME_ECN_NOT_ECT,
		.vlan = h->vlan,
		.icrc = true,		/* instead of the UDP checksum (IPv6 keeps both) */
	};
	memcpy(ft.smac, h->smac, sizeof(ft.smac));
	memcpy(ft.dmac, h->dmac, sizeof(ft.dmac));
	off = frame_build_cached(&x->tmpls, x->area + addr, b->len, &ft);
	if (off >= 0 && x->vs && x->sock_view[k - x->socks] != x->idx)
		return afxdp_hand_tx(x, (unsigned)(k - x->socks), addr + (uint64_t)off,
			       frame_len(off, b->len, &ft));
	if (off < 0 || xsk_ring_prod__reserve(&k->tx, 1, &idx) != 1) {
		x->st.tx_ring_full++;
		return false;
	}
	d = xsk_ring_prod__tx_desc(&k->tx, idx);
	d->addr = addr + (uint64_t)off;
	d->len = frame_len(off, b->len, &ft);
	k->tx_pending++;		/* submitted with the rest of the batch */
	x->st.tx_pkts++;
	x->st.tx_bytes += d->len;
	return true;
}

/*
 * One submit per socket for the whole batch (the producer index is
 * published once, after every descriptor is written), then the kicks
 * (flush: also for what earlier batches left in the rings).
 */
static void submit_tx(struct afxdp *x)
{
	for (unsigned i = 0; i < x->nown; i++) {
		struct afxdp_sock *k = &x->socks[x->own[i]];

		if (!k->tx_pending)
			continue;
		x->st.tx_batches++;
		xsk_ring_prod__submit(&k->tx, k->tx_pending);
		k->tx_pending = 0;
	}
	flush(x);
}

static int afxdp_tx_send(struct backend *b, struct engine_txbuf *bufs, int used, int got)
{
	struct afxdp *x = to_afxdp(b);
	uint64_t now = used ? mono_ns() : 0;
	int sent = 0;

	for (int i = 0; i < used; i++) {
		if (send_one(x, &bufs[i], now))
			sent++;
		else
			x->free[x->nfree++] = buf_addr(x, &bufs[i]);
	}
	for (int i = used; i < got; i++)
		x->free[x->nfree++] = buf_addr(x, &bufs[i]);
	submit_tx(x);
	reclaim(x);
	if (x->vs)
		afxdp_views_wake(x);
	return sent;
}

static uint32_t afxdp_tx_flush(struct backend *b)
{
	struct afxdp *x = to_afxdp(b);
	uint32_t left = flush(x);

	reclaim(x);
	return left;
}

static int afxdp_poll_fds(struct backend *b, int *fds, int max)
{
	struct afxdp *x = to_afxdp(b);
	int n = 0;

	for (unsigned i = 0; i < x->nown && n < max; i++)
		fds[n++] = xsk_socket__fd(x->socks[x->own[i]].xsk);
	if (egress_fd(x->egress) >= 0 && n < max)
		fds[n++] = egress_fd(x->egress);	/* drained by tick */
	if (x->wake_fd >= 0 && n < max)
		fds[n++] = x->wake_fd;	/* drained by rx */
	return n;
}

static void afxdp_get_stats(struct backend *b, struct backend_stats *out)
{
	struct afxdp *x = to_afxdp(b);

	*out = x->st;
	for (unsigned i = 0; i < x->nown; i++) {
		struct xdp_statistics xs;
		socklen_t len = sizeof(xs);

		if (getsockopt(xsk_socket__fd(x->socks[x->own[i]].xsk), SOL_XDP, XDP_STATISTICS, &xs, &len))
			continue;
		out->xsk_rx_dropped += xs.rx_dropped;
		out->xsk_rx_invalid_descs += xs.rx_invalid_descs;
		out->xsk_tx_invalid_descs += xs.tx_invalid_descs;
		out->xsk_rx_ring_full += xs.rx_ring_full;
		out->xsk_rx_fill_ring_empty += xs.rx_fill_ring_empty_descs;
		out->xsk_tx_ring_empty += xs.tx_ring_empty_descs;
	}
	out->handoff_owed = x->owed_total;
	out->port_dead = egress_port_dead(x->egress);
	out->ports_down = egress_count_down(x->egress, mono_ns());
}

static const char *afxdp_describe(struct backend *b)
{
	return to_afxdp(b)->desc;
}

static void afxdp_destroy(struct backend *b)
{
	struct afxdp *x = to_afxdp(b);

	if (!x)
		return;
	/* Each view its own sockets; the first one (last destroyed) the UMEM. */
	for (unsigned i = 0; i < x->nown; i++) {
		struct afxdp_sock *k = &x->socks[x->own[i]];

		if (k->registered)
			xdp_prog_remove_socket(x->prog, (uint32_t)k->ifindex, k->queue);
		/* Frames still in the TX ring are discarded on close: let them go first. */
		for (int tries = 0; tries < 100 && k->xsk; tries++) {
			uint32_t idx;

			if (xsk_ring_prod__needs_wakeup(&k->tx))
				sendto(xsk_socket__fd(k->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
			if (!xsk_ring_cons__peek(&k->cq, 1, &idx))
				break;
			reclaim_sock(x, k);	/* not reclaim(): earlier sockets are gone */
		}
		if (k->xsk)
			xsk_socket__delete(k->xsk);
	}
	if (x->umem && !x->idx)
		xsk_umem__delete(x->umem);
	if (x->wake_fd >= 0)
		close(x->wake_fd);
	if (x->vs && !x->idx) {
		free(x->vs->rings);
		free(x->vs->backlogs);
		free(x->vs);
	}
	egress_destroy(x->egress);
	afxdp_loop_destroy(x);
	if (x->area && !x->idx)
		munmap(x->area, x->area_len);
	free(x->free);
	free(x);
}

const struct backend_ops afxdp_ops = {
	.name = "af_xdp",
	.rx = afxdp_rx,
	.rx_release = afxdp_rx_release,
	.tx_get = afxdp_tx_get,
	.tx_send = afxdp_tx_send,
	.tx_flush = afxdp_tx_flush,
	.poll_fds = afxdp_poll_fds,
	.may_sleep = afxdp_may_sleep,
	.get_stats = afxdp_get_stats,
	.port_name = afxdp_port_name,
	.ports_down = afxdp_ports_down,
	.heard = afxdp_heard,
	.reply = afxdp_reply,
	.tick = afxdp_tick,
	.describe = afxdp_describe,
	.destroy = afxdp_destroy,
};
