// SPDX-License-Identifier: MIT
/*
 * Send side: the path each packet goes by (tx_pick_path and the rules
 * before it): the most free window, runs of ack_every, a message sent alone
 * split over the ports with the least backlog, a small message by its
 * driver's own ports (home_mod), hedged tails and idle paths; the ports'
 * backlog the transmit scheduler notes (qp_tx_ports_note).
 */
#include "internal.h"
#include "qp_tx.h"

/*
 * The path with the most free window that can take this packet, the free
 * window counted up to PICK_FREE_SEGS packets; ties round-robin.  The cap
 * (issue #16): a path whose window grew while it alone carried a QP's
 * traffic had the most free window for good and took every packet, so a
 * 4-packet message went out on one path of eight (88% of them in a 64-rank
 * 1 MiB ring AllReduce); with it, paths with room share the packets and a
 * nearly full one still yields.  Timed-out paths carry only probes while
 * any path is alive.  A path with nothing in flight counts as having the
 * whole cap free, whatever its window: one whose window a loss burst cut
 * below the cap lost every pick to siblings with more room while the QP was
 * held back elsewhere (the application's outstanding messages, the peer's
 * room), so it never filled its window, which grows only while it limits
 * the sender (cc_window.c), and stayed starved for good: the paths moved
 * back onto a port that came up carried 6 Mbit/s beside siblings' 100
 * (test_fabric_ports.sh, "p2 came back up, but its paths did not").
 */
#define PICK_FREE_SEGS	4

/*
 * Runs (issue #22): the path picked goes on taking the QP's next packets, up
 * to ack_every in a row, while it is active and can.  The receiver ACKs a
 * path after ack_every packets or, failing that, after ack_delay; sprayed
 * one packet per path, a QP's packets reached each path one per round of
 * the host's QPs, the delayed ACK fired for every one of them, and ACK frames
 * (each a whole frame through the kernel at both ends) grew with the QPs:
 * per data packet 0.062 at 1 QP, 0.25 at 16, 1.00 from 256 up (mroc-sim
 * engine).  A run of ack_every is ACKed at once, by one ACK; the next run
 * takes the path with the most free window, so the paths still share the
 * QP's packets.  Only a message that gives every path a whole run (at
 * least npaths x ack_every segments) runs, and only its first
 * transmissions (qp->run_ok): shorter messages and resends are sprayed,
 * as issue #16 wants (a lost packet is then found across paths, a short
 * message's packets do not wait behind each other).  A short message in
 * runs crossed one plane of several: in a 64-host AllToAll of 1 MiB each
 * host posts 63 messages of 4 packets at once, each went whole onto one
 * of 4 planes picked by chance, the planes' shares at both ends were
 * uneven, and the AllToAll took 216 us against 175 sprayed (a packet per
 * plane), 19 % behind a QP per plane (issue #23).  Sprayed, such a message
 * costs an ACK per path it used, as a run per path would; a host that
 * gave its runs to its lanes in turn made it worse (780 us: every host
 * turned the same way at once).
 *
 * And only where spraying would not let the delayed ACK gather packets
 * (sparse_qp): a QP that sent fewer than npaths x ack_every / 2 data
 * packets in its last ack_delay (one of many QPs on the host: at 256 QPs
 * each sends a packet every 25 us).  A QP that has the host to itself
 * reaches every path often enough: in a 64-host permutation of 16 MiB
 * (one QP per host, 8 paths, a packet every 0.6 us) runs saved no ACK
 * (345k packets either way), made the lossless run 1 % faster and the one
 * at 1 % loss 1.4 % slower: the goodput kept at 1 % loss fell from 0.999
 * to 0.979 median and from 0.981 to 0.943 min (seeds 31-35, issue #23).
 */
bool sparse_qp(const struct engine *eng, const struct qp *qp, const struct tx_msg *m)
{
	return m->nseg >= (uint32_t)eng->cfg.ack_every * qp->npaths && !qp->tx_dense;
}

/* Bytes the QP has in flight on all its paths. */
static uint64_t qp_flight(const struct qp *qp)
{
	uint64_t flight = 0;

	for (unsigned i = 0; i < qp->npaths; i++)
		flight += qp->paths[i].inflight;
	return flight;
}

/*
 * A packet of a bulk transfer's last round: what the QP has left to send
 * after it is less than it has in flight (the paths' windows take the rest
 * before this one's ACK is due), and its message is long enough to be
 * ACKed by runs of ack_every on every path (a shorter one is ACKed per
 * path anyway).  Its path may carry nothing after it, so the receiver's
 * delayed ACK would hold it: asked for at once, a lost one is found by the
 * cross-path rule (qp_ack.c rack_wait) and the probe without the ACK
 * delay's allowance (20 us by default).  At the end of a 64-host
 * permutation at 1 % loss the slowest flow's lost tail packets waited
 * sRTT + 4 RTTVAR + 20 us (70-95 us against RTTs of 40-50) and its tail,
 * last new packet to done, was 76-97 us against 33 lossless (seed 131, 4
 * draws of the loss in 5; issue #23).  Not in a mode without tail-loss
 * probes (the RoCEv2 baseline: no probe, no cross-path rule, nothing that
 * waits for the ACK delay's allowance): a RoCE NIC asks for an ACK on a
 * message's last packet, not on its last round, and there the rule only
 * made the yardstick ask for more ACKs than a NIC does (mroc-sim bench,
 * RoCEv2 at 5 % loss: 11.05 -> 11.01 Gbit/s).
 */
bool bulk_tail(const struct engine *eng, const struct qp *qp, const struct path *p,
	       const struct tx_msg *m)
{
	uint64_t left = (uint64_t)(uint32_t)(qp->dsn_alloc - qp->snd_nxt) * eng->seg_bytes;

	if (!qp->mops->tail_probe || left >= (uint64_t)qp->npaths * p->pwnd ||
	    m->nseg < (uint32_t)eng->cfg.ack_every * qp->npaths)
		return false;
	return left < qp_flight(qp);
}

/* One data packet sent at now: count it in the QP's ack_delay window. */
void tx_count_window(struct engine *eng, struct qp *qp, uint64_t now)
{
	if (now - qp->tx_win_at >= eng->cfg.ack_delay_ns) {
		/* An idle spell of more than a window is a sparse one too. */
		qp->tx_dense = now - qp->tx_win_at < 2 * eng->cfg.ack_delay_ns &&
			       2 * qp->tx_win_pkts >= (uint32_t)eng->cfg.ack_every * qp->npaths;
		qp->tx_win_at = now;
		qp->tx_win_pkts = 0;
	}
	qp->tx_win_pkts++;
}
/*
 * The path after id, round the QP's paths: where the next pick starts
 * (qp->rr, drawn below npaths at qp_alloc and only ever set here, so the
 * picks start their walk at it as it is).  Not id + 1 modulo npaths: the
 * picks ran two integer divisions a data packet, tens of cycles of latency
 * each (issue #22).
 */
static inline uint32_t path_after(const struct qp *qp, unsigned id)
{
	return id + 1u < qp->npaths ? id + 1u : 0;
}

/* A path's free window as the picks weigh it: at most PICK_FREE_SEGS packets, idle as that. */
static uint32_t pick_free(const struct engine *eng, const struct path *p)
{
	return p->inflight ? (uint32_t)min_u64(path_free(p), PICK_FREE_SEGS * eng->seg_bytes) :
			     PICK_FREE_SEGS * eng->seg_bytes;
}

/*
 * From qp->rr on, the path with the most free window that can take bytes,
 * the first of equals; only live ones (*alive: whether there is one), or
 * any.
 */
static inline struct path *most_free(const struct engine *eng, struct qp *qp, uint32_t bytes,
				     bool live, bool *alive)
{
	struct path *best = NULL;
	uint32_t best_free = 0;

	for (unsigned k = 0, i = qp->rr; k < qp->npaths;
	     k++, i = i + 1 == qp->npaths ? 0 : i + 1) {
		struct path *p = &qp->paths[i];
		uint32_t f;

		if (live) {
			if (p->state != PATH_ACTIVE)
				continue;
			*alive = true;
		}
		if (!path_can_send(eng, p, bytes))
			continue;
		f = pick_free(eng, p);
		if (!best || f > best_free) {
			best = p;
			best_free = f;
		}
	}
	return best;
}

struct path *tx_pick_path(struct engine *eng, struct qp *qp, uint32_t bytes)
{
	struct path *best;
	bool any_alive = false;

	if (!qp->run_ok)
		qp->run_left = 0;
	if (qp->run_left && qp->run_path < qp->npaths) {
		struct path *p = &qp->paths[qp->run_path];

		if (p->state == PATH_ACTIVE && path_can_send(eng, p, bytes)) {
			qp->run_left--;
			return p;
		}
	}
	qp->run_left = 0;
	/*
	 * The live paths, in one walk that also finds whether any is; all of
	 * them only when none is (a walk of its own to find that first was ~30
	 * instructions a data packet, issue #22).
	 */
	best = most_free(eng, qp, bytes, true, &any_alive);
	if (!any_alive)
		best = most_free(eng, qp, bytes, false, &any_alive);
	if (best) {
		qp->rr = path_after(qp, best->id);
		qp->run_path = best->id;
		qp->run_left = qp->run_ok ? (uint8_t)min_u64(eng->cfg.ack_every - 1, UINT8_MAX) : 0;
	}
	return best;
}

/*
 * A message posted alone (tx_msg.alone) waits for nothing but the network:
 * each of its packets goes where it should arrive first, the path with the
 * least smoothed RTT (a path without a sample: its siblings' best, or the
 * host's) plus the time its bytes in flight take at a path's share of the
 * link; ties round-robin.  Spread by most free window, a message split in 8
 * met the deepest of 8 paths' queues beside a half-loaded permutation (a
 * 512 B AllReduce step 1.8x slower than one packet), and a lone packet took
 * whichever path came next (issue #23).  Timed-out paths carry only probes
 * while any path is alive.  A copy (dup) avoids the paths that carry its
 * segment: it is there for the case that path is held up.
 */
/* Whether p has a transmission of a DSN in [lo, lo + n) in flight. */
static bool path_carries(const struct path *p, uint32_t lo, uint32_t n)
{
	for (uint32_t q = p->floor; q != p->next_psn; q++) {
		const struct sb_entry *s = &p->sb[q & p->sb_mask];

		if (s->state == SB_INFLIGHT && s->dsn - lo < n)
			return true;
	}
	return false;
}

/* The port a path leaves by, or -1 when the driver did not say (engine_config). */
static int path_port(const struct engine *eng, const struct path *p)
{
	if (eng->cfg.sport_classes > 1)
		return p->sport % eng->cfg.sport_classes;
	return eng->cfg.path_ports ? (int)(p->id % eng->cfg.path_ports) : -1;
}

/*
 * A port's backlog: what this engine sent by it lately (ACKs included), at
 * the port's share of the link, still to leave; the parts of a split
 * message count it in their cost, so the first parts leave by the ports
 * that are free.  In a ring AllReduce a rank sends the ACKs of the step it
 * received (each by the port its part came in on), then the next step's
 * parts: a part sent by the port of an ACK just sent waited behind it (46
 * ns at 25 Gbit/s), and the rank's turn from a step received to the next
 * sent took 31 ns against a QP per plane's 26.6 (32 ranks packed, 8 KiB;
 * issue #23).  Only with split messages (split_unit) and a link rate, and
 * for ports the driver names (at most MROC_MAX_PATHS).
 */
#define PORT_FRAMING	64	/* Ethernet, IP and UDP headers and framing, about */

static int buf_port(const struct engine *eng, const struct engine_txbuf *b)
{
	if (eng->cfg.sport_classes > 1)
		return b->sport % eng->cfg.sport_classes;
	return eng->cfg.path_ports ? (int)(b->path_id % eng->cfg.path_ports) : -1;
}

static uint32_t port_count(const struct engine *eng)
{
	return eng->cfg.sport_classes > 1 ? eng->cfg.sport_classes : eng->cfg.path_ports;
}

/* A data segment's bytes on the wire beyond its payload: headers, tag, framing. */
static uint32_t seg_overhead(const struct engine *eng)
{
	return MROC_DATA_OVERHEAD + eng->sec_tag_len + PORT_FRAMING;
}

/* The ports lone_first's bytes are multiplied by (at least 1: no ports configured). */
static uint32_t ahead_ports(const struct engine *eng)
{
	uint32_t ports = port_count(eng);

	return ports > 1 ? ports : 1;
}

uint32_t qp_tx_full_pkt(const struct engine *eng)
{
	return eng->cfg.mtu + seg_overhead(eng);
}

uint32_t qp_tx_ahead_cost(const struct engine *eng, uint32_t len)
{
	return (len + eng->sec_tag_len + PORT_FRAMING) * ahead_ports(eng);
}

/*
 * Times the ports: behind data spread over them, an ACK waits for its
 * port's share at the port's share of the link; behind data all on its
 * port, for all of it.  So the product bounds its wait, NIC and port.
 */
uint32_t qp_tx_lone_left(const struct engine *eng, const struct qp *qp, uint32_t msn)
{
	const struct tx_msg *m;
	uint32_t left;
	uint64_t bytes;

	if (qp->state != ENGINE_QPS_CONNECTED || qp->msn_seg != msn || msn + 1 != qp->msn_tail ||
	    qp->rtx_head != qp->rtx_tail || qp->gbn_active)
		return 0;
	m = &qp->txm[msn & qp->txm_mask];
	if (!m->alone)
		return 0;
	left = m->first_dsn + m->nseg - qp->snd_nxt;
	bytes = (uint64_t)m->len - (uint64_t)(qp->snd_nxt - m->first_dsn) * m->seg_len +
		(uint64_t)left * seg_overhead(eng);
	bytes *= ahead_ports(eng);
	return bytes < UINT32_MAX ? (uint32_t)bytes : UINT32_MAX;
}

void qp_tx_ports_note(struct engine *eng, const struct engine_txbuf *bufs, int lo, int hi,
		      uint64_t now)
{
	uint32_t nports = port_count(eng);

	if (!eng->cfg.split_unit || !eng->cfg.link_rate_bps || nports < 2 ||
	    nports > MROC_MAX_PATHS)
		return;
	for (int i = lo; i < hi; i++) {
		int port = buf_port(eng, &bufs[i]);

		eng->port_free[port] = max_u64(eng->port_free[port], now) +
				       ((uint64_t)bufs[i].len + PORT_FRAMING) * 8 * NSEC_PER_SEC *
				       nports / eng->cfg.link_rate_bps;
	}
}

static uint64_t port_backlog(const struct engine *eng, const struct path *p, uint64_t now)
{
	int port = path_port(eng, p);

	if (port < 0 || port >= MROC_MAX_PATHS || eng->port_free[port] <= now)
		return 0;
	return eng->port_free[port] - now;
}

/* Whether a path of qp that leaves by p's port carries a DSN of [lo, lo + n). */
static bool port_carries(const struct engine *eng, const struct qp *qp, const struct path *p,
			 uint32_t lo, uint32_t n)
{
	int port = path_port(eng, p);

	if (port < 0)
		return path_carries(p, lo, n);
	for (unsigned i = 0; i < qp->npaths; i++)
		if (path_port(eng, &qp->paths[i]) == port && path_carries(&qp->paths[i], lo, n))
			return true;
	return false;
}

/*
 * Whether a part goes by path p (its port's backlog bl, port, cost) before
 * the best so far: the free ports first, then by port, then by cost
 * (pick_alone_off).
 */
static bool part_before(uint64_t bl, int port, uint64_t cost, uint64_t best_bl, int best_port,
			uint64_t best_cost)
{
	if (bl != best_bl)
		return bl < best_bl;
	return port != best_port ? port < best_port : cost < best_cost;
}

/*
 * The path of least cost that carries no DSN of [lo, lo + n) (n = 0: any),
 * nor, with by_port, shares a port with a path that does; with now (else
 * 0: a copy, or this host's RTTs were held up lately), the cost adds the
 * port's backlog.  Ordered (now, a message of one part a port, ports the
 * driver names), a part takes the ports in their order instead,
 * port 0 first, the free ones before those still sending what this host
 * sent by them (port_backlog), and on its port the path of least cost.
 * Every host then sends its parts in the same order of ports, so two
 * messages that meet at a host's ports meet there at the same time on each
 * of them, or on none.  By RTT, each host took its own order, and a part
 * met the ACK of the receiver's own last part, which the receiver's other
 * neighbour sends back by the port that part took, on whichever port the
 * two orders crossed: in the 32-rank ring AllReduce with packed ranks
 * (4 KiB, 4 parts of 32 B, a part a plane), a step in 4 of a cross-leaf
 * hop ended 20-48 ns late, a part behind such an ACK on the cable into
 * the receiver (a QP per plane's parts, in plane order on every host,
 * never waited), and the ring took 150.90 us against a QP per plane's
 * 150.79, now 150.79 (issue #23).
 * The RTTs of paths that are not held up differ by what a packet or two
 * met on the way (an ACK, a part), which says nothing of the next part's
 * way; held up, the least cost decides as before.  Other messages keep
 * the least cost: with fewer parts than ports, in port order every host
 * would put every such message on the same first ports (32 ranks beside a
 * permutation, 64 B in 2 parts: 20.06 -> 20.19 us, median of seeds 1-5);
 * with two parts a port, it cost the recursive-doubling steps more than
 * it gained (idle, 4 KiB in 8 parts: 22.00 -> 22.05 us on 2 seeds of 5;
 * the packed ring's 32 KiB: 162.16 -> 162.14).
 */
static struct path *pick_alone_off(struct engine *eng, struct qp *qp, uint32_t bytes,
				   uint32_t lo, uint32_t n, bool by_port, uint64_t now, bool ordered)
{
	uint64_t rate = eng->cfg.link_rate_bps / qp->npaths, sib = 0, best_cost = 0, best_bl = 0;
	struct path *best = NULL;
	bool any_alive = false;
	int best_port = -1;

	for (unsigned k = 0; k < qp->npaths; k++) {
		const struct path *p = &qp->paths[k];

		any_alive |= p->state == PATH_ACTIVE;
		if (p->srtt && (!sib || p->srtt < sib))
			sib = p->srtt;
	}
	if (!sib)
		sib = eng->host_srtt;
	for (unsigned k = 0, i = qp->rr; k < qp->npaths;
	     k++, i = i + 1 == qp->npaths ? 0 : i + 1) {
		struct path *p = &qp->paths[i];
		int port = ordered ? path_port(eng, p) : -1;
		uint64_t cost, bl;

		if ((any_alive && p->state != PATH_ACTIVE) || !path_can_send(eng, p, bytes) ||
		    (n && (by_port ? port_carries(eng, qp, p, lo, n) : path_carries(p, lo, n))))
			continue;
		cost = (p->srtt ? p->srtt : sib) +
		       (rate ? (uint64_t)p->inflight * 8 * NSEC_PER_SEC / rate : 0);
		bl = now ? port_backlog(eng, p, now) : 0;
		if (!best || (port < 0 ? cost + bl < best_cost + best_bl :
				 part_before(bl, port, cost, best_bl, best_port, best_cost))) {
			best = p;
			best_cost = cost;
			best_bl = bl;
			best_port = port;
		}
	}
	if (best)
		qp->rr = path_after(qp, best->id);
	return best;
}

/*
 * A copy avoids the paths that carry its segment, and goes late (NULL) if
 * every path does.  A part of a split message (first_dsn: its first; the
 * DSN itself for any other) keeps off the ports, then the paths, that carry
 * the parts of its message sent before it while another can take it: two
 * parts on one path or port queue one behind the other, and the cost above
 * (the path's RTT plus its bytes in flight at a path's share of the link)
 * let the RTTs' noise of a few tens of ns outweigh a part already waiting
 * there.  In the 32-rank ring AllReduce of 4 KiB (parts of 32 B, no
 * copies), 4 paths: 45 % of the steps put two parts on one path, and those
 * steps took 27-47 ns longer (266.28 us against 265.76 with each part on a
 * path of its own; 265.74 with a QP per plane); 8 paths on 4 planes: 36 %
 * of the steps put two parts on one plane (266.32 us against 265.77 with
 * each on a port of its own; issue #23).  Only split messages: they have
 * at most a part per path, so the look at the paths' packets in flight
 * stays short of a large message's windows.  With now (else 0), the parts
 * also count their port's backlog (port_backlog).
 */
struct path *pick_path_alone(struct engine *eng, struct qp *qp, uint32_t bytes, bool dup,
			     uint32_t dsn, const struct tx_msg *m, uint64_t now)
{
	uint32_t first_dsn = m->split ? m->first_dsn : dsn;
	bool ordered = now && m->nseg == port_count(eng);
	struct path *p = NULL;

	if (dup)
		return pick_alone_off(eng, qp, bytes, dsn, 1, false, now, false);
	if (dsn != first_dsn) {
		p = pick_alone_off(eng, qp, bytes, first_dsn, dsn - first_dsn, true, now, ordered);
		if (!p && path_port(eng, &qp->paths[0]) >= 0)
			p = pick_alone_off(eng, qp, bytes, first_dsn, dsn - first_dsn, false, now,
					   ordered);
	}
	return p ? p : pick_alone_off(eng, qp, bytes, 0, 0, false, now, ordered);
}

/*
 * A message of one packet with at most HOME_BURST_SEGS - 1 segments queued
 * behind it (a small collective's step, a ping-pong, a few such steps posted
 * together) leaves by a path of this engine's own thread's ports
 * (cfg.home_mod/home_mask), the one with most free window; its ACK comes back
 * on the same port.  On the other ports every packet, and its ACK, crossed
 * between the driver's threads (mrocd: a hand-off ring and often a wake-up
 * of a sleeping worker), about one hand-off a packet in an 8 B ring (issue
 * #26).  NULL: no home path alive with room; the usual pick then.
 */
struct path *pick_path_home(struct engine *eng, struct qp *qp, uint32_t bytes)
{
	struct path *best = NULL;
	uint32_t best_free = 0;

	for (unsigned k = 0, i = qp->rr; k < qp->npaths;
	     k++, i = i + 1 == qp->npaths ? 0 : i + 1) {
		struct path *p = &qp->paths[i];
		uint32_t f;

		if (p->state != PATH_ACTIVE ||
		    !(eng->cfg.home_mask >> (p->sport % eng->cfg.home_mod) & 1) ||
		    !path_can_send(eng, p, bytes))
			continue;
		f = pick_free(eng, p);
		if (!best || f > best_free) {
			best = p;
			best_free = f;
		}
	}
	if (best)
		qp->rr = path_after(qp, best->id);
	return best;
}

/* Packets a QP may have in flight with a resend for the resend to be its tail (hedge_tail). */
#define HEDGE_PKTS	2

/*
 * A resend that is all a QP with nothing new to send has in flight but a
 * packet is the transfer's tail: lost again, nothing sent after it can
 * show it (the cross-path rule needs a later packet acknowledged), and only
 * its path's tail-loss probe finds it, two sRTTs of a path whose queue the
 * transfer itself built.  With cfg.tail_hedge it also goes as a copy (the
 * dup_max copies' mechanism, owed once) on a path with nothing in flight:
 * a packet per such resend.  Seen: the 64-host 16 MiB permutation at 1 %
 * loss, 16 paths, seed 882: the slowest flow's last resend was dropped too
 * and sent again 110 us later, 115 us after every other packet of it was
 * in (2085.6 us against 1918.1 lossless; hedged, 1943.5).  docs/PERF.md,
 * session 25, has the fresh seeds.
 */
bool hedge_tail(const struct engine *eng, const struct qp *qp)
{
	return eng->cfg.tail_hedge && qp->mode == MROC_MODE_METAROCE && qp->npaths >= 2 &&
	       qp->snd_nxt == qp->dsn_alloc && qp->dup_next == qp->dup_end &&
	       qp_flight(qp) <= HEDGE_PKTS * (uint64_t)eng->seg_bytes;
}

/*
 * Whether no live path of the QP has anything in flight: where the
 * ALONE_AFTER_TRIES resends wait.  A path with nothing in flight is no idle
 * link where the QP's paths share one: 9 paths on one plane, a 601-byte
 * queue (one packet of MTU 256), no propagation delay; the QP's new data on
 * the other paths kept the queue full, and a SEND's segment, resent 33
 * times on whichever path had drained, was tail-dropped each time until
 * RETRY_EXC (sweep seed 64, test_sim_sweep test_one_packet_queue_shared).
 * Timed-out paths do not count: they carry probes, and drain only at their
 * RTO.
 */
bool qp_drained(const struct qp *qp)
{
	for (unsigned k = 0; k < qp->npaths; k++)
		if (qp->paths[k].state == PATH_ACTIVE && qp->paths[k].inflight)
			return false;
	return true;
}

struct path *idle_path(struct engine *eng, struct qp *qp, uint32_t bytes)
{
	bool any_alive = false;

	for (unsigned k = 0; k < qp->npaths; k++) {
		struct path *p = &qp->paths[k];

		if (p->state != PATH_ACTIVE)
			continue;
		any_alive = true;
		if (!p->inflight && !path_sb_full(p))
			return p;
	}
	/* No path alive: the timed-out ones carry it as they carry everything. */
	return any_alive ? NULL : tx_pick_path(eng, qp, bytes);
}
