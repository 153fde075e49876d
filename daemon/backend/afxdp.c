// SPDX-License-Identifier: MIT
/*
 * AF_XDP backend (see afxdp.h).  Frame life cycle: a UMEM frame is either in
 * a socket's fill ring (the kernel may write a received packet into it), held
 * by the worker (received, not yet released; or handed to the engine by
 * tx_get), in a socket's TX ring / completion ring, or on the free stack.
 * Every transition is a batch, and nothing is allocated after creation.
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

#include "afxdp.h"
#include "evfd.h"
#include "frame.h"
#include "handoff.h"
#include "log.h"
#include "netlink.h"
#include "nexthop.h"
#include "peers.h"
#include "porthealth.h"
#include "wire.h"
#include "xdp_prog.h"

#define RX_BATCH	64
#define NO_PORT		0xff
/* RX cookie: frame address in the low 48 bits, socket index above, a handed-over frame's bit. */
#define COOKIE_SOCK_SHIFT 48
#define COOKIE_HANDED	(1ULL << 62)

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

/*
 * Where packets of (peer address, UDP source port) last came in: replies go
 * back through that port.  Direct-mapped, a collision overwrites.
 */
#define ARRIVAL_SLOTS	4096

struct arrival {
	struct mroc_addr src;
	uint16_t sport;
	uint8_t port;
};

/* A port: one interface, with one socket per configured queue. */
struct afxdp_port {
	int ifindex;
	char ifname[IF_NAMESIZE];
	struct mroc_addr addr;		/* its own address (family 0: none) */
	bool up;			/* administratively up, carrier, oper up */
	unsigned first, nsocks;		/* its sockets: socks[first .. first+nsocks) */
};

struct afxdp;

/* The workers' views of one UMEM and its sockets (afxdp_add_views). */
struct afxdp_views {
	unsigned n;
	struct afxdp *v[AFXDP_MAX_VIEWS];
	afxdp_owner_fn owner;		/* which view owns a packet's QP */
	void *owner_ctx;
	struct handoff_ring *rings;	/* [from * n + to] */
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
	struct afxdp_port ports[NEXTHOP_MAX_PORTS];
	unsigned nports;
	uint8_t sock_port[AFXDP_MAX_SOCKS];	/* socket index -> port */
	struct arrival *arrivals;		/* [ARRIVAL_SLOTS] */
	struct nl *nl;
	uint32_t max_peers;
	struct mroc_addr src;
	struct nexthops *hops;		/* per (peer, port) */
	uint64_t port_dead_ns;		/* porthealth.h; 0 = off */
	struct porthealth *health;	/* NULL: off, or one port */
	uint8_t *heard_port;		/* [peer]: the port it was last heard through; NO_PORT */
	int mon_fd;			/* link and route changes; -1 if none */
	uint64_t next_mon_ns, next_expire_ns, next_sweep_ns;
	unsigned rx_rr;
	uint64_t *free;		/* free frame addresses */
	uint32_t nfree, nframes;
	uint32_t tx_reserve;		/* free frames kept for the fill rings */
	/* The sockets this view serves (all of them without workers). */
	unsigned own[AFXDP_MAX_SOCKS], nown;
	/* Workers (NULL without): this view's index, the socket owners, wake-ups. */
	struct afxdp_views *vs;
	unsigned idx;
	uint8_t sock_view[AFXDP_MAX_SOCKS];
	int wake_fd;			/* -1 without workers */
	atomic_bool sleeping;		/* about to sleep: hand-offs must ring wake_fd */
	uint32_t wake_mask;		/* views handed something since the last flush */
	struct backend_stats st;
	char desc[256];
	char why[AFXDP_WHY_LEN];	/* why afxdp_create failed */
};

static struct afxdp *to_afxdp(struct backend *b)
{
	return (struct afxdp *)b;
}

/*
 * Descriptors point anywhere inside a frame (RX data sits after the kernel's
 * headroom, TX after our headers): always keep frame starts on the free
 * stack, or offsets would add up until a frame no longer fits its chunk.
 */
static uint64_t frame_base(const struct afxdp *x, uint64_t addr)
{
	return xsk_umem__extract_addr(addr) & ~(uint64_t)(x->frame_size - 1);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
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
 * TX batch; the rest wait for the next kick) and says EAGAIN both when it
 * stopped there and when the device queue is stopped.  One kick per batch
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
static void refill(struct afxdp *x, struct afxdp_sock *k, uint32_t n)
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

static struct arrival *arrival_of(const struct afxdp *x, const struct mroc_addr *src,
				  uint16_t sport)
{
	return &x->arrivals[(addr_hash(src) ^ sport * 2654435761u) % ARRIVAL_SLOTS];
}

static void note_arrival(struct afxdp *x, const struct mroc_addr *src, uint16_t sport,
			 uint8_t port)
{
	struct arrival *a;

	if (x->nports < 2)
		return;
	a = arrival_of(x, src, sport);
	if (a->port != port || a->sport != sport || !addr_eq(&a->src, src))
		*a = (struct arrival){ .src = *src, .sport = sport, .port = port };
}

#define PORTS_POLL_NS	1000000ull		/* link changes are looked for every 1 ms */
#define HOP_MAX_AGE_NS	(30ull * 1000000000ull)	/* our traffic never confirms a neighbour */

/* Reads every port's link state and says what changed (quiet is for start-up). */
static void ports_read(struct afxdp *x, bool quiet)
{
	for (unsigned p = 0; p < x->nports; p++) {
		struct afxdp_port *port = &x->ports[p];
		struct nl_link l;
		bool up = !nl_link_get(x->nl, port->ifindex, NULL, &l) && (l.flags & IFF_UP) &&
			  (l.flags & IFF_RUNNING);

		if (up == port->up)
			continue;
		port->up = up;
		porthealth_forget_port(x->health, p);
		/* Every worker's view watches the links; the first one says so. */
		if ((quiet && up) || x->idx)
			continue;
		if (x->nports > 1 && up)
			pr_info("af_xdp: port %s is up: it takes its paths back", port->ifname);
		else if (x->nports > 1)
			pr_warn("af_xdp: port %s is down: its paths go out of the other ports",
				port->ifname);
		else
			pr_warn("af_xdp: %s is %s", port->ifname, up ? "up" : "down");
	}
}

static void port_went_down(void *ctx, uint32_t peer, unsigned p);

/* Link or route changes (the monitor socket), ageing of next hops, silent ports. */
static void ports_poll(struct afxdp *x, uint64_t now)
{
	if (now < x->next_mon_ns)
		return;
	x->next_mon_ns = now + PORTS_POLL_NS;
	if (x->mon_fd >= 0 && nl_monitor_drain(x->mon_fd) > 0) {
		ports_read(x, false);
		nexthops_expire(x->hops, now, 0);	/* routes may have changed too */
	}
	if (now >= x->next_expire_ns) {
		nexthops_expire(x->hops, now, HOP_MAX_AGE_NS);
		x->next_expire_ns = now + HOP_MAX_AGE_NS / 3;
	}
	/* Silent ports no packet wants any more still count down (porthealth.h). */
	if (x->health && now >= x->next_sweep_ns) {
		porthealth_sweep(x->health, now, port_went_down, x);
		x->next_sweep_ns = now + x->port_dead_ns / 4;
	}
}

static void forget_peer(void *ctx, uint32_t peer)
{
	struct afxdp *x = ctx;

	nexthops_forget(x->hops, peer);
	porthealth_forget(x->health, peer);
	if (peer < x->max_peers)
		x->heard_port[peer] = NO_PORT;
}

/* ---- workers: hand-off between views (handoff.h) ------------------------------ */

static void submit_tx(struct afxdp *x);

static struct handoff_ring *ring_to(struct afxdp *x, unsigned to)
{
	return &x->vs->rings[x->idx * x->vs->n + to];
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
static bool hand_back(struct afxdp *x, unsigned to, uint64_t addr)
{
	return hand(x, to, &(struct handoff_entry){ .addr = addr, .kind = HANDOFF_RETURN });
}

/* A received frame for another view's QP: true when it is gone (handed, or dropped). */
static bool hand_rx(struct afxdp *x, unsigned s, const struct xdp_desc *d,
		    const struct frame_rx *fr)
{
	unsigned to = x->vs->owner(x->vs->owner_ctx, fr->payload, fr->payload_len);

	if (to == x->idx || to >= x->vs->n)
		return false;
	if (hand(x, to, &(struct handoff_entry){ .addr = (uint64_t)(fr->payload - x->area),
						   .len = fr->payload_len, .sock = (uint8_t)s,
						   .kind = HANDOFF_RX, .sport = fr->sport,
						   .ce = fr->ecn == FRAME_ECN_CE, .src = fr->src })) {
		x->st.handoff_rx_out++;
		return true;
	}
	x->st.handoff_full++;		/* dropped: the sender resends */
	x->free[x->nfree++] = frame_base(x, d->addr);
	return true;
}

/* A built frame for socket s, another view's. */
static bool hand_tx(struct afxdp *x, unsigned s, uint64_t addr, uint32_t len)
{
	if (!hand(x, x->sock_view[s], &(struct handoff_entry){ .addr = addr, .len = len,
							     .sock = (uint8_t)s,
							     .kind = HANDOFF_TX })) {
		x->st.handoff_full++;
		return false;
	}
	x->st.handoff_tx_out++;
	x->st.tx_pkts++;
	x->st.tx_bytes += len;
	return true;
}

/* Never take more TX buffers than the rings to the other views can take. */
static int views_tx_room(struct afxdp *x, int n)
{
	for (unsigned v = 0; v < x->vs->n; v++) {
		uint32_t room = v == x->idx ? (uint32_t)n : handoff_room(ring_to(x, v));

		if (room < (uint32_t)n)
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
		note_arrival(x, &e->src, e->sport, x->sock_port[e->sock]);
		*pkt = (struct backend_pkt){
			.data = x->area + e->addr,
			.len = e->len,
			.src = e->src,
			.sport = e->sport,
			.ce = e->ce,
			.cookie = frame_base(x, e->addr) | (uint64_t)e->sock << COOKIE_SOCK_SHIFT |
				  COOKIE_HANDED,
		};
		(*got)++;
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
		if (x->nfree && hand_back(x, from, x->free[x->nfree - 1]))
			x->nfree--;
		return true;
	default:
		x->free[x->nfree++] = frame_base(x, e->addr);
		return true;
	}
}

/* What the other views handed us: up to n packets into pkts; returns how many. */
static int views_rx(struct afxdp *x, struct backend_pkt *pkts, int n)
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
	submit_tx(x);
	return got;
}

/* Ring the doorbell of every view we handed something that sleeps (see afxdp_may_sleep). */
static void views_wake(struct afxdp *x)
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
static bool afxdp_may_sleep(struct backend *b)
{
	struct afxdp *x = to_afxdp(b);

	if (!x->vs)
		return true;
	atomic_store_explicit(&x->sleeping, true, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	for (unsigned v = 0; v < x->vs->n; v++)
		if (v != x->idx && !handoff_empty(ring_from(x, v)))
			return false;
	return true;
}

static int afxdp_rx(struct backend *b, struct backend_pkt *pkts, int n)
{
	struct afxdp *x = to_afxdp(b);
	int got = 0;

	ports_poll(x, mono_ns());
	if (x->vs)
		got = views_rx(x, pkts, n);
	for (unsigned t = 0; t < x->nown && got < n; t++) {
		unsigned s = x->own[(x->rx_rr + t) % x->nown];
		struct afxdp_sock *k = &x->socks[s];
		uint32_t idx, rcvd = xsk_ring_cons__peek(&k->rx, (uint32_t)(n - got), &idx);

		if (!rcvd) {
			/* The kernel stops filling when it ran dry; tell it to look again. */
			if (xsk_ring_prod__needs_wakeup(&k->fq))
				recvfrom(xsk_socket__fd(k->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
			continue;
		}
		for (uint32_t i = 0; i < rcvd; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&k->rx, idx + i);
			uint64_t addr = frame_base(x, d->addr);
			uint8_t *frame = xsk_umem__get_data(x->area, d->addr);
			struct frame_rx fr;
			enum frame_err why;

			if (frame_parse(frame, d->len, &fr, &why) || fr.dport != x->udp_port) {
				if (why == FRAME_ERR_ICRC)
					x->st.rx_bad_icrc++;
				else
					x->st.rx_bad_frame++;
				x->free[x->nfree++] = addr;	/* back to the fill ring below */
				continue;
			}
			if (x->vs && hand_rx(x, s, d, &fr))
				continue;
			note_arrival(x, &fr.src, fr.sport, x->sock_port[s]);
			pkts[got++] = (struct backend_pkt){
				.data = fr.payload,
				.len = fr.payload_len,
				.src = fr.src,
				.sport = fr.sport,
				.ce = fr.ecn == FRAME_ECN_CE,
				.cookie = addr | (uint64_t)s << COOKIE_SOCK_SHIFT,
			};
			x->st.rx_pkts++;
			x->st.rx_bytes += d->len;
		}
		xsk_ring_cons__release(&k->rx, rcvd);
		if (x->nfree)
			refill(x, k, x->nfree < rcvd ? x->nfree : rcvd);
	}
	x->rx_rr++;
	if (x->vs)
		views_wake(x);
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

		if ((pkts[i].cookie & COOKIE_HANDED) && hand_back(x, x->sock_view[s], addr))
			continue;
		x->free[x->nfree++] = addr;
		per_sock[s < x->nsocks ? s : 0]++;
	}
	for (unsigned i = 0; i < x->nown; i++)
		if (per_sock[x->own[i]])
			refill(x, &x->socks[x->own[i]], per_sock[x->own[i]]);
	if (x->vs)
		views_wake(x);
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
		n = views_tx_room(x, n);
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

static bool arrived_from(const struct afxdp *x, const struct mroc_addr *src, uint16_t sport,
			 unsigned *port)
{
	const struct arrival *a = arrival_of(x, src, sport);

	if (a->sport != sport || !addr_eq(&a->src, src))
		return false;
	*port = a->port;
	return true;
}

/*
 * The port packets of (peer, sport) want: sport % nports, or for a reply on
 * the peer's path (echo) where that path's packets come in, from the peer's
 * port addresses first (its data; the primary carries only CM once it has
 * them).  Connection requests and answers (cm) go by the port the peer was
 * last heard through: the CM sends every try from the same source port
 * (cm.c), and an answer from the answering QP's own source port, which may
 * pick a port whose far end is down (which we cannot see) for every try;
 * the request that an answer answers came in through a port that works.
 */
static unsigned port_wanted(const struct afxdp *x, const struct peer *pe, uint16_t sport,
			    bool echo, bool cm)
{
	unsigned port = sport % x->nports;

	if (x->nports < 2)
		return port;
	if (cm && pe->handle < x->max_peers && x->heard_port[pe->handle] < x->nports)
		return x->heard_port[pe->handle];
	if (!echo)
		return port;
	for (unsigned i = 0; i < PEERS_MAX_ALIASES; i++)
		if ((pe->alias_mask & (1u << i)) && arrived_from(x, &pe->alias[i], sport, &port))
			return port;
	arrived_from(x, &pe->addr, sport, &port);
	return port;
}

/* Port p was just counted down for peer (porthealth.h): count it and say so. */
static void port_went_down(void *ctx, uint32_t peer, unsigned p)
{
	struct afxdp *x = ctx;
	const struct peer *pe = peers_get(x->b.peers, peer);
	char a[MROC_ADDR_STRLEN];

	x->st.port_dead++;
	pr_warn_rl("af_xdp: nothing from %s came back through port %s for %llu ms while other "
		   "ports heard it: its paths to that peer leave by the other ports for %llu s",
		   pe ? addr_str(&pe->addr, a, sizeof(a)) : "?", x->ports[p].ifname,
		   (unsigned long long)(x->port_dead_ns / 1000000),
		   (unsigned long long)(PORTHEALTH_HOLD_FACTOR * x->port_dead_ns / 1000000000));
}

/* Port p may take a packet to peer pe now (porthealth.h). */
static bool port_usable(struct afxdp *x, const struct peer *pe, unsigned p, uint64_t now)
{
	switch (porthealth_check(x->health, pe->handle, p, now)) {
	case PORTHEALTH_UP:
		return true;
	case PORTHEALTH_WENT_DOWN:
		port_went_down(x, pe->handle, p);
		return false;
	default:
		return false;
	}
}

/*
 * The sender of a path picks its port: its UDP source port modulo the
 * number of ports, so a path that the engine moves (a new source port)
 * usually changes port, as ECMP in a routed fabric would move it to another
 * plane.  Replies (echo: the peer's path, its source port echoed) go back
 * through the port that path's packets last came in on, so a path keeps to
 * one plane both ways, also when the sender moved it off a port that went
 * down, or has another number of ports.  A port that is down, cannot reach
 * the peer, or is counted down for it (porthealth.h) hands its paths to the
 * others; one counted down is still better than none.
 *
 * Only replies follow the arrivals.  If a sender followed them too, a
 * reply that had to leave by another port (its next hop on the path's port
 * not yet resolved: seconds while IPv6 link-local addresses are tentative
 * after a port comes up) would move the sender's path there, the replies
 * would follow the path, and it would never come back.  own: not CM (see
 * nexthops_get).
 */
static const struct nexthop *port_for(struct afxdp *x, const struct peer *pe, uint16_t sport,
				      bool echo, bool own, uint64_t now, unsigned *port)
{
	unsigned want = port_wanted(x, pe, sport, echo, !own);

	for (unsigned t = 0; t < 2 * x->nports; t++) {
		const struct nexthop *h;

		*port = porthealth_choice(x->nports, want, sport, t % x->nports);
		if (!x->ports[*port].up || (t < x->nports && !port_usable(x, pe, *port, now)))
			continue;
		h = nexthops_get(x->hops, pe->handle, *port, own, now);
		if (h)
			return h;
	}
	return NULL;
}

/* Where our path's packets would leave (for status), without resolving or judging anything. */
static const char *afxdp_port_name(struct backend *b, uint32_t peer, uint16_t sport)
{
	struct afxdp *x = to_afxdp(b);
	const struct peer *pe = peers_get(x->b.peers, peer);
	uint64_t now = mono_ns();
	unsigned want;

	if (!pe)
		return NULL;
	want = port_wanted(x, pe, sport, false, false);
	for (unsigned t = 0; t < 2 * x->nports; t++) {
		unsigned p = porthealth_choice(x->nports, want, sport, t % x->nports);

		if (x->ports[p].up && !nexthops_err(x->hops, peer, p, true) &&
		    (t >= x->nports || !porthealth_is_down(x->health, peer, p, now)))
			return x->ports[p].ifname;
	}
	return NULL;
}

/* The ports counted down for peer now (porthealth.h), their names into names[]. */
static unsigned afxdp_ports_down(struct backend *b, uint32_t peer, const char **names,
				 unsigned max)
{
	struct afxdp *x = to_afxdp(b);
	uint64_t now = mono_ns();
	unsigned n = 0;

	for (unsigned p = 0; p < x->nports && n < max; p++)
		if (porthealth_is_down(x->health, peer, p, now))
			names[n++] = x->ports[p].ifname;
	return n;
}

/* A packet that the engine took came from peer through the port of its socket. */
static void afxdp_heard(struct backend *b, const struct backend_pkt *pkt, uint32_t peer,
			uint64_t now)
{
	struct afxdp *x = to_afxdp(b);
	unsigned s = (unsigned)(pkt->cookie >> COOKIE_SOCK_SHIFT & (AFXDP_MAX_SOCKS - 1));

	if (s >= x->nsocks || peer >= x->max_peers)
		return;
	x->heard_port[peer] = x->sock_port[s];
	porthealth_rx(x->health, peer, x->sock_port[s], now);
}

static void warn_unreachable(struct afxdp *x, uint32_t peer, uint16_t sport, bool own)
{
	const struct peer *pe = peers_get(x->b.peers, peer);
	unsigned want = sport % x->nports;
	char a[MROC_ADDR_STRLEN];
	int err = nexthops_err(x->hops, peer, want, own);

	if (!err && x->ports[want].up)
		return;		/* still resolving */
	pr_warn_rl("af_xdp: %s is unreachable out of every port (%s: %s%s)",
		   pe ? addr_str(&pe->addr, a, sizeof(a)) : "?", x->ports[want].ifname,
		   x->ports[want].up ? "" : "down", x->ports[want].up ? strerror(-err) : "");
}

static bool send_one(struct afxdp *x, struct engine_txbuf *b, uint64_t now)
{
	const struct peer *pe = peers_get(x->b.peers, b->peer);
	uint64_t addr = buf_addr(x, b);
	const struct nexthop *h;
	struct afxdp_port *port;
	struct afxdp_sock *k;
	struct frame_tx ft;
	struct xdp_desc *d;
	/* CM between the primary addresses: the peer may not know our port addresses yet. */
	bool own = b->len > 1 && !mroc_op_is_cm(b->data[1]);
	unsigned p;
	uint32_t idx;
	int off;

	h = pe ? port_for(x, pe, b->sport, b->echo, own, now, &p) : NULL;
	if (!h) {
		x->st.tx_no_route++;
		if (pe)
			warn_unreachable(x, b->peer, b->sport, own);
		return false;
	}
	/* Only what the peer acknowledges tells whether the port reaches it (porthealth.h). */
	if (b->len > 1 && mroc_op_is_data(b->data[1]))
		porthealth_tx(x->health, b->peer, p, now);
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
	off = frame_build(x->area + addr, b->len, &ft);
	if (off >= 0 && x->vs && x->sock_view[k - x->socks] != x->idx)
		return hand_tx(x, (unsigned)(k - x->socks), addr + (uint64_t)off,
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
	if (used)
		ports_poll(x, now);
	submit_tx(x);
	reclaim(x);
	if (x->vs)
		views_wake(x);
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
	if (x->mon_fd >= 0 && n < max)
		fds[n++] = x->mon_fd;	/* drained by rx */
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
	out->ports_down = porthealth_count_down(x->health, mono_ns());
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
	if (x->mon_fd >= 0)
		close(x->mon_fd);
	if (x->wake_fd >= 0)
		close(x->wake_fd);
	if (x->vs && !x->idx) {
		free(x->vs->rings);
		free(x->vs);
	}
	if (x->hops && x->b.peers)
		peers_set_release_hook(x->b.peers, NULL, NULL);
	nexthops_destroy(x->hops);
	porthealth_destroy(x->health);
	free(x->heard_port);
	free(x->arrivals);
	if (x->area && !x->idx)
		munmap(x->area, x->area_len);
	free(x->free);
	free(x);
}

static const struct backend_ops afxdp_ops = {
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
	.describe = afxdp_describe,
	.destroy = afxdp_destroy,
};

#define BUSY_TRIES	100
#define BUSY_WAIT_US	20000

/*
 * The first socket owns the UMEM and its bind flags say copy or zero-copy
 * and need_wakeup.  Every later one is an XDP_SHARED_UMEM bind, which the
 * kernel refuses (EINVAL) when it carries any of those flags: it inherits
 * the first socket's mode, and libxdp leaves its flags out.  It still gets
 * its own fill and completion rings, per (interface, queue).
 */
static int bind_sock(struct afxdp *x, const struct afxdp_cfg *cfg, unsigned s, bool zc)
{
	struct afxdp_sock *k = &x->socks[s];
	struct xsk_socket_config sc = {
		.rx_size = cfg->ring_size,
		.tx_size = cfg->ring_size,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = s ? 0 : XDP_USE_NEED_WAKEUP | (zc ? XDP_ZEROCOPY : XDP_COPY),
	};

	/* The first socket uses the UMEM's own fill/completion rings. */
	return xsk_socket__create_shared(&k->xsk, k->ifname, k->queue, x->umem, &k->rx, &k->tx,
					 &k->fq, &k->cq, &sc);
}

/* One bind, and for the first socket the zero-copy choice of cfg->zero_copy. */
static int bind_mode(struct afxdp *x, const struct afxdp_cfg *cfg, unsigned s)
{
	struct afxdp_sock *k = &x->socks[s];
	int err;

	if (s)
		return bind_sock(x, cfg, s, false);
	err = cfg->zero_copy == AFXDP_ZC_OFF ? -EOPNOTSUPP : bind_sock(x, cfg, s, true);
	if (err && err != -EBUSY && cfg->zero_copy != AFXDP_ZC_ON) {
		if (cfg->zero_copy == AFXDP_ZC_AUTO)
			pr_info("af_xdp: %s queue %u: no zero-copy (%s), using copy mode",
				k->ifname, k->queue, strerror(-err));
		err = bind_sock(x, cfg, s, false);
	}
	return err;
}

/* Fails with the reason, naming the interface and queue, in x->why. */
static int open_sock(struct afxdp *x, const struct afxdp_cfg *cfg, unsigned s)
{
	struct afxdp_sock *k = &x->socks[s];
	struct xdp_options opts;
	socklen_t len = sizeof(opts);
	int err;

	snprintf(k->ifname, sizeof(k->ifname), "%s", cfg->ifs[s].name);
	k->queue = cfg->ifs[s].queue;
	k->addr = cfg->ifs[s].addr;
	k->ifindex = (int)if_nametoindex(k->ifname);
	if (!k->ifindex) {
		snprintf(x->why, sizeof(x->why), "no interface %s", k->ifname);
		return -ENODEV;
	}
	/*
	 * EBUSY: the queue still has a socket, typically that of an mrocd that was
	 * just killed (the kernel releases it, and the stale program's socket map
	 * holding it, asynchronously).  A restart by systemd comes that fast, so
	 * wait a little for it rather than fail.
	 */
	for (int tries = 0;; tries++) {
		err = bind_mode(x, cfg, s);
		if (err != -EBUSY || tries >= BUSY_TRIES)
			break;
		if (!tries)
			pr_info("af_xdp: %s queue %u is busy (an earlier socket not released yet?): "
				"retrying for up to %d ms", k->ifname, k->queue,
				BUSY_TRIES * BUSY_WAIT_US / 1000);
		usleep(BUSY_WAIT_US);
	}
	if (err) {
		snprintf(x->why, sizeof(x->why), "socket on %s queue %u: %s%s", k->ifname,
			 k->queue, strerror(-err), err == -EINVAL ?
			 " (does the interface have that queue? see ethtool -l)" : "");
		return err;
	}
	if (!getsockopt(xsk_socket__fd(k->xsk), SOL_XDP, XDP_OPTIONS, &opts, &len))
		k->zero_copy = opts.flags & XDP_OPTIONS_ZEROCOPY;
	/* Returns the socket map slot. */
	err = xdp_prog_add_socket(x->prog, (uint32_t)k->ifindex, k->queue, xsk_socket__fd(k->xsk));
	if (err < 0) {
		snprintf(x->why, sizeof(x->why), "registering the socket of %s queue %u: %s",
			 k->ifname, k->queue, strerror(-err));
		return err;
	}
	k->registered = true;
	return 0;
}

/* The ports are the interfaces, in the order of their sockets; each one's sockets are consecutive. */
static int open_ports(struct afxdp *x)
{
	for (unsigned s = 0; s < x->nsocks; s++) {
		struct afxdp_port *port = &x->ports[x->nports - (x->nports > 0)];

		if (!x->nports || port->ifindex != x->socks[s].ifindex) {
			if (x->nports == NEXTHOP_MAX_PORTS) {
				snprintf(x->why, sizeof(x->why), "more than %d interfaces",
					 NEXTHOP_MAX_PORTS);
				return -E2BIG;
			}
			port = &x->ports[x->nports];
			x->nports++;
			port->ifindex = x->socks[s].ifindex;
			port->addr = x->socks[s].addr;
			port->first = s;
			memcpy(port->ifname, x->socks[s].ifname, sizeof(port->ifname));
		} else if (port->first + port->nsocks != s) {
			snprintf(x->why, sizeof(x->why), "the queues of %s are not listed together",
				 port->ifname);
			return -EINVAL;
		}
		port->nsocks++;
		x->sock_port[s] = (uint8_t)(x->nports - 1);
	}
	return 0;
}

/*
 * A view's own routes, neighbours and link monitor (every view sends out of
 * every port).  The monitor opens before the first reading of the links so
 * that no change falls between.
 */
static int open_view_io(struct afxdp *x)
{
	struct nexthops_cfg hc = {
		.nl = x->nl,
		.peers = x->b.peers,
		.max_peers = x->max_peers,
		.src = x->src,
	};
	int ifindex[NEXTHOP_MAX_PORTS];
	struct mroc_addr port_src[NEXTHOP_MAX_PORTS];
	int err;

	for (unsigned p = 0; p < x->nports; p++) {
		ifindex[p] = x->ports[p].ifindex;
		port_src[p] = x->ports[p].addr;
		x->ports[p].up = false;
	}
	hc.port_src = port_src;
	x->arrivals = calloc(ARRIVAL_SLOTS, sizeof(*x->arrivals));
	x->heard_port = malloc(x->max_peers);
	if (!x->arrivals || !x->heard_port)
		return -ENOMEM;
	memset(x->heard_port, NO_PORT, x->max_peers);
	hc.port_ifindex = ifindex;
	hc.nports = x->nports;
	err = nexthops_create(&hc, &x->hops);
	if (err) {
		snprintf(x->why, sizeof(x->why), "next-hop table: %s", strerror(-err));
		return err;
	}
	/* A handle the peer table gives up may come back for another address. */
	peers_set_release_hook(x->b.peers, forget_peer, x);
	err = porthealth_create(x->max_peers, x->nports, x->port_dead_ns, &x->health);
	if (err) {
		snprintf(x->why, sizeof(x->why), "port health table: %s", strerror(-err));
		return err;
	}
	err = nl_monitor_open(&x->mon_fd);
	if (err)
		pr_warn("af_xdp: no link change notifications (%s): a port going down is "
			"noticed by its lost packets only", strerror(-err));
	ports_read(x, true);
	x->next_expire_ns = mono_ns() + HOP_MAX_AGE_NS / 3;
	return 0;
}

int afxdp_create(const struct afxdp_cfg *cfg, struct peers *peers, struct backend **out,
		 char *why, size_t why_len)
{
	struct xsk_umem_config uc = {
		.fill_size = cfg->ring_size,
		.comp_size = cfg->ring_size,
		.frame_size = cfg->frame_size,
	};
	struct afxdp *x;
	size_t off = 0;
	int err;

	if (!cfg->nifs || cfg->nifs > AFXDP_MAX_SOCKS || !cfg->prog) {
		snprintf(why, why_len, "%u sockets (1..%d)", cfg->nifs, AFXDP_MAX_SOCKS);
		return -EINVAL;
	}
	if (cfg->nframes < 2 * cfg->ring_size * cfg->nifs) {
		snprintf(why, why_len, "%u UMEM frames are too few for %u sockets with rings of %u: "
			 "need network.umem_frames >= %u", cfg->nframes, cfg->nifs, cfg->ring_size,
			 2 * cfg->ring_size * cfg->nifs);
		return -EINVAL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->b.ops = &afxdp_ops;
	x->b.peers = peers;
	x->nl = cfg->nl;
	x->mon_fd = -1;
	x->wake_fd = -1;
	x->tx_reserve = cfg->nframes / 8;
	x->frame_size = cfg->frame_size;
	x->udp_port = cfg->udp_port;
	x->prog = cfg->prog;
	x->nframes = cfg->nframes;
	x->area_len = (size_t)cfg->nframes * cfg->frame_size;
	x->area = mmap(NULL, x->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	x->free = calloc(cfg->nframes, sizeof(*x->free));
	if (x->area == MAP_FAILED || !x->free) {
		x->area = x->area == MAP_FAILED ? NULL : x->area;
		err = -ENOMEM;
		goto fail;
	}
	/*
	 * One UMEM for every socket: the engine fills a TX buffer before it
	 * names the packet's peer and path, so only then is the port (socket)
	 * known, and the buffer must be valid on any of them.
	 */
	err = xsk_umem__create(&x->umem, x->area, x->area_len, &x->socks[0].fq, &x->socks[0].cq, &uc);
	if (err) {
		snprintf(x->why, sizeof(x->why), "UMEM of %zu bytes: %s", x->area_len,
			 strerror(-err));
		goto fail;
	}
	for (uint32_t i = 0; i < cfg->nframes; i++)
		x->free[x->nfree++] = (uint64_t)(cfg->nframes - 1 - i) * cfg->frame_size;
	for (unsigned s = 0; s < cfg->nifs; s++) {
		err = open_sock(x, cfg, s);
		if (x->socks[s].xsk) {
			x->own[x->nown++] = s;
			x->nsocks++;	/* destroy deletes it, also when registering failed */
		}
		if (err)
			goto fail;
		refill(x, &x->socks[s], cfg->ring_size);
	}
	x->max_peers = cfg->max_peers;
	x->src = cfg->src;
	x->port_dead_ns = cfg->port_dead_ns;
	err = open_ports(x);
	if (!err)
		err = open_view_io(x);
	if (err)
		goto fail;
	for (unsigned s = 0; s < x->nsocks; s++) {
		int n = snprintf(x->desc + off, sizeof(x->desc) - off, "%s%s:q%u", s ? " " : "",
				 x->socks[s].ifname, x->socks[s].queue);

		off += n > 0 && (size_t)n < sizeof(x->desc) - off ? (size_t)n : 0;
	}
	/* Shared-UMEM sockets take the first one's mode. */
	snprintf(x->desc + off, sizeof(x->desc) - off, " %s", x->socks[0].zero_copy ?
		 "zero-copy" : "copy-mode");
	*out = &x->b;
	return 0;
fail:
	snprintf(why, why_len, "%s", x->why[0] ? x->why : strerror(-err));
	afxdp_destroy(&x->b);
	return err;
}

/* View idx of b0: a copy with its own sockets, frames, next hops and monitor. */
static int make_view(struct afxdp *x0, unsigned idx, struct peers *peers, struct nl *nl,
		     struct afxdp **out)
{
	struct afxdp *x = malloc(sizeof(*x));
	int err;

	if (!x)
		return -ENOMEM;
	*x = *x0;
	x->idx = idx;
	x->b.peers = peers;
	x->nl = nl;
	x->nfree = 0;
	x->nown = 0;
	x->arrivals = NULL;
	x->hops = NULL;
	x->health = NULL;
	x->heard_port = NULL;
	x->mon_fd = -1;
	x->wake_mask = 0;
	atomic_init(&x->sleeping, false);
	memset(&x->st, 0, sizeof(x->st));
	x->free = calloc(x->nframes, sizeof(*x->free));
	x->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	*out = x;
	if (!x->free || x->wake_fd < 0)
		return x->free ? -errno : -ENOMEM;
	err = open_view_io(x);
	if (err)
		snprintf(x0->why, sizeof(x0->why), "worker %u: %.120s", idx, x->why);
	return err;
}

int afxdp_add_views(struct backend *b0, unsigned n, struct peers **peers, struct nl **nls,
		    afxdp_owner_fn owner, void *ctx, struct backend **out, char *why,
		    size_t why_len)
{
	struct afxdp *x0 = to_afxdp(b0);
	struct afxdp_views *vs;
	uint32_t share;
	unsigned k;
	int err = 0;

	if (n < 2 || n > AFXDP_MAX_VIEWS || n > x0->nsocks || x0->vs) {
		snprintf(why, why_len, "%u workers for %u sockets", n, x0->nsocks);
		return -EINVAL;
	}
	vs = calloc(1, sizeof(*vs));
	if (!vs || !(vs->rings = calloc((size_t)n * n, sizeof(*vs->rings)))) {
		free(vs);
		return -ENOMEM;
	}
	vs->n = n;
	vs->owner = owner;
	vs->owner_ctx = ctx;
	x0->vs = vs;
	x0->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	vs->v[0] = x0;
	out[0] = b0;
	for (k = 1; k < n && !err; k++) {
		err = make_view(x0, k, peers[k], nls[k], &vs->v[k]);
		out[k] = &vs->v[k]->b;
	}
	if (x0->wake_fd < 0 && !err)
		err = -errno;
	if (err) {
		snprintf(why, why_len, "%s", x0->why[0] ? x0->why : strerror(-err));
		for (unsigned j = k; j-- > 1;)
			afxdp_destroy(out[j]);
		x0->vs = NULL;
		free(vs->rings);
		free(vs);
		return err;
	}
	/* Socket s to view s % n; the free frames shared out evenly. */
	x0->nown = 0;
	for (unsigned s = 0; s < x0->nsocks; s++) {
		struct afxdp *v = vs->v[s % n];

		v->own[v->nown++] = s;
		for (k = 0; k < n; k++)
			vs->v[k]->sock_view[s] = (uint8_t)(s % n);
	}
	share = x0->nfree / n;
	for (k = 1; k < n; k++) {
		struct afxdp *v = vs->v[k];

		for (uint32_t i = 0; i < share; i++)
			v->free[v->nfree++] = x0->free[--x0->nfree];
	}
	for (k = 0; k < n; k++)
		vs->v[k]->tx_reserve = x0->nframes / 8 / n;
	return 0;
}
