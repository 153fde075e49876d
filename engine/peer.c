// SPDX-License-Identifier: MIT
/*
 * What the engine keeps per peer host, shared by all its QPs to that host:
 *
 * The window: data packets in flight to the peer over all QPs and paths,
 * never above cfg.peer_window_pkts (0: no cap) but for the rest of a run
 * (peer_room).  Every path's congestion
 * window is sized for the network and never goes below a packet or two;
 * with thousands of QPs to one peer that floor alone is tens of thousands
 * of packets at once, and the first thing to overflow is not a switch
 * queue but the peer's own receive ring (an AF_XDP RX ring holds a few
 * thousand frames, a NIC ring the same): 4,000 QPs of 4 paths started with
 * 256k packets and lost 40-65k of them to `xsk_rx_ring_full` on a lossless
 * fabric.  Packets, not bytes: a ring slot holds one packet whatever its
 * size.  A QP that finds the window full leaves the engine's data list for
 * the peer's blocked list, and so does a QP that finds others waiting there
 * (FIFO: nobody overtakes them).  Blocked QPs get their turns in FIFO order
 * as packets leave flight (acknowledged, declared lost, flushed), one QP
 * for each whole run the free room holds (peer_kick), so the QPs to one peer
 * share its window round-robin and nobody walks the blocked list.  Control
 * packets (ACKs, CM, keepalives) are not counted.
 * The window opens as TCP's slow start does: an eighth of the cap (at least
 * 16 packets) at first, one more per packet acknowledged, so the queue it
 * builds at a slow peer grows by at most double per round trip and the RTT
 * estimates follow it (opened at once, 4,000 QPs put 512 packets into a
 * receiver draining 10k a second: 50 ms of queue before any sample, and
 * every path's RTO, still at rto_init, fired: 1,246 needless RTOs).  After
 * an idle spell longer than the host's RTO with nothing in flight, it
 * starts again from there (TCP's restart after idle, RFC 5681 4.1): what
 * the peer could take before says little about its ring and its other
 * senders now, and 4,000 QPs waking at once would otherwise put the whole
 * cap into it before any RTT sample (issue #23).
 *
 * The hosts' own queues (cfg.peer_host_delay_ns, Swift's endpoint delay):
 * the delay signal of each path leaves out what an ACK says its packet
 * waited in the peer host and what the ACK waited in ours (a worker that
 * takes its ring in batches and shares its CPUs is no queue on the path),
 * so nothing but this window bounds what waits there (qp_ack.c
 * endpoint_delay gives it the two together).  A receiver slower than its senders (a worker
 * short of CPU) holds the whole window in its ring: 512 packets of 3.4 KB
 * are 4.6 ms at 3 Gbit/s, and every QP's message to it, a ping-pong's 8
 * bytes too, waits behind them (write_lat beside a write_bw on the 4-plane
 * fabric: p99 3-10 ms, issue #22).  With a target, a round trip in which
 * every ACK said its packet waited longer (a standing queue, not a worker
 * that was off its CPU for a while: the ACKs of the packets that came
 * while it ran say less) cuts the window by the excess's share of the
 * least wait (at most half), never below four runs (host_floor); it then
 * grows by one packet a window, as Swift's does.  Cut on each long wait,
 * a host off its CPU 500 us every 2 ms cut its senders' windows at every
 * stall (mroc-sim run --host-rx 50,500,2000 --peer-window 512, 100 Gbit/s:
 * 20-29 against 23-42 Gbit/s).  A cut the waits do not answer two rounds
 * later was not the window's queue and is undone (cut_paid).
 *
 * Liveness: when anything last came from the peer, on any QP.  An idle QP
 * asks for a sign of life only when the whole peer has been silent for the
 * keepalive interval: per-QP requests were thousands of packets a second
 * at 4,000 QPs, answered late behind a busy peer's data, asked again and
 * repathed in a storm (45k keepalives and 23k retries in 8 s).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "internal.h"

struct peer_host {
	uint32_t peer;		/* the driver's handle */
	uint32_t refs;		/* connected QPs */
	uint32_t inflight;	/* data packets in flight, all its QPs */
	uint32_t wnd;		/* what may be: opens up to cfg.peer_window_pkts */
	uint32_t ssthresh;	/* after a host-delay cut: where the opening slows (0: none) */
	uint32_t ai_acked;	/* packets acknowledged toward the next +1 above ssthresh */
	uint64_t round_at;	/* start of the round peer_host_delay takes the least wait of */
	uint64_t round_min;	/* the least wait an ACK gave in it (UINT64_MAX: none yet) */
	uint32_t cut_wnd;	/* the window before the last cut, until a round judges it (0: none) */
	uint32_t cut_ssthresh;	/* ... and its ssthresh */
	uint64_t cut_least;	/* the least wait that cut it */
	bool cut_judged_next;	/* the next round judges it (the one after the cut has passed) */
	uint16_t hold;		/* rounds left in which no cut is tried (cuts that did not pay) */
	uint8_t hold_shift;	/* ... 2^hold_shift after the next one that does not (one less per cut that pays) */
	uint32_t granted;	/* room promised to kicked QPs, not yet sent (qp->ph_grant) */
	uint64_t last_rx;	/* last packet from it, any QP */
	uint64_t last_tx;	/* last data packet to it, any QP (0: none yet) */
	struct list blocked;	/* QPs waiting for room, by their tx_node */
	/* its QPs that sent to us in the engine's hint epoch and the one before (cc_rate.c) */
	uint64_t hint_epoch;
	uint32_t hint_now, hint_prev;
	struct peer_host *next;	/* hash chain */
};

int peer_init(struct engine *eng)
{
	eng->ph_hash = calloc(eng->hash_mask + 1, sizeof(*eng->ph_hash));
	return eng->ph_hash ? 0 : -ENOMEM;
}

void peer_free(struct engine *eng)
{
	if (eng->ph_hash)
		for (uint32_t i = 0; i <= eng->hash_mask; i++)
			while (eng->ph_hash[i]) {
				struct peer_host *h = eng->ph_hash[i];

				eng->ph_hash[i] = h->next;
				free(h);
			}
	free(eng->ph_hash);
}

static struct peer_host **bucket(struct engine *eng, uint32_t peer)
{
	return &eng->ph_hash[(peer * 0x9e3779b1u) >> 5 & eng->hash_mask];
}

/* Where the window opens from: an eighth of the cap, at least 16 packets. */
static uint32_t wnd_init(const struct engine *eng)
{
	return eng->cfg.peer_window_pkts / 8 > 16 ? eng->cfg.peer_window_pkts / 8 : 16;
}

/*
 * The least a host-delay cut leaves: four runs (one ACK each) in flight.
 * The window opens from an eighth of the cap, but a receiver short of CPU
 * takes 60-100k packets a second, and 64 packets in its ring were still
 * 0.4-0.9 ms of wait for every other QP's message (issue #22).
 */
static uint32_t host_floor(const struct engine *eng)
{
	uint32_t f = 4 * (eng->cfg.ack_every ? eng->cfg.ack_every : 1), init = wnd_init(eng);

	return f < init ? f : init;
}

/*
 * A QP connects: it joins its peer host's state.  Without memory for a new
 * peer the QP runs on its own (no window cap, its own liveness only).
 */
void peer_attach(struct engine *eng, struct qp *qp)
{
	struct peer_host **b, *h;

	if (qp->ph)
		return;
	b = bucket(eng, qp->peer);
	for (h = *b; h && h->peer != qp->peer; h = h->next)
		;
	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return;
		h->peer = qp->peer;
		h->wnd = wnd_init(eng);
		list_init(&h->blocked);
		h->next = *b;
		*b = h;
	}
	h->refs++;
	qp->ph = h;
}

/* The QP's packets leave flight for good (flushed, reset, destroyed). */
void peer_detach(struct engine *eng, struct qp *qp)
{
	struct peer_host *h = qp->ph, **pp;

	if (!h)
		return;
	/*
	 * Off the blocked list before the kicks below: a kick that picked this
	 * QP gave it a turn with no peer behind it (a reset QP's next turn end
	 * read qp->ph: NULL), or kept its room granted for good (a destroyed one).
	 */
	if (qp->ph_blocked) {
		list_del(&qp->tx_node);
		qp->ph_blocked = false;
	}
	h->granted -= qp->ph_grant;	/* a turn it was given passes on (peer_release kicks) */
	qp->ph_grant = 0;
	peer_release(eng, qp, qp->ph_pkts);
	qp->ph = NULL;
	if (--h->refs) {
		peer_kick(eng, h);
		return;
	}
	for (pp = bucket(eng, h->peer); *pp != h; pp = &(*pp)->next)
		;
	*pp = h->next;
	free(h);
}

void peer_heard(struct qp *qp, uint64_t now)
{
	qp->last_rx = now;
	if (qp->ph)
		qp->ph->last_rx = now;
}

/* When the QP last heard from its peer host, on this QP or another. */
uint64_t qp_heard(const struct qp *qp)
{
	return qp->ph && qp->ph->last_rx > qp->last_rx ? qp->ph->last_rx : qp->last_rx;
}

static uint32_t peer_wnd(const struct engine *eng, const struct peer_host *h)
{
	return h->wnd < eng->cfg.peer_window_pkts ? h->wnd : eng->cfg.peer_window_pkts;
}

uint32_t peer_inflight(const struct qp *qp)
{
	return qp->ph ? qp->ph->inflight : 0;
}

/*
 * Room for one more data packet?  If not, the QP waits on the blocked list.
 * A QP given a turn (peer_kick) sends what it was granted: that room was
 * kept for it.  Any other QP goes behind the blocked ones while there are
 * any (it would take the room their turns wait for, and a QP woken by its
 * own ACKs again and again would starve them), and needs room beyond what
 * is promised to others.  A run once started goes out whole (qp->run_left,
 * tx_pick_path): the window may be exceeded by the rest of a run, so by at
 * most ack_every - 1 packets over all QPs (every packet not granted is
 * checked against the one count, and grants are given only within the
 * window).  Cut at the window, a run of ack_every left its path's ACK to
 * the receiver's ack_delay, and each turn a blocked QP got was a single
 * packet: at 4,000 QPs to a peer the sender parked 1.1 QPs and cut 0.31
 * runs a data packet, and 0.41 of the receiver's ACKs waited for ack_delay
 * (issue #22, bench-scale 16 x 250 at load 12, tx_peer_blocked /
 * tx_run_cut / tx_ack_delayed; test_window_run_not_cut).
 */
bool peer_room(const struct engine *eng, struct qp *qp)
{
	const struct peer_host *h = qp->ph;

	if (!h || !eng->cfg.peer_window_pkts || qp->ph_grant)
		return true;
	/*
	 * The slack is the whole run's, not what is left of it: a run started
	 * with one packet of room needs ack_every - 1 more at its end.
	 */
	if (qp->run_left ? h->inflight + h->granted < peer_wnd(eng, h) + eng->cfg.ack_every - 1 :
	    list_empty(&h->blocked) && h->inflight + h->granted < peer_wnd(eng, h))
		return true;
	qp->ph_blocked = true;
	return false;
}

void peer_sent(struct engine *eng, struct qp *qp, uint64_t now)
{
	struct peer_host *h = qp->ph;
	uint64_t idle = max_u64(eng->cfg.rto_min_ns, eng->host_srtt + 4 * eng->host_rttvar);

	if (!h)
		return;
	if (!h->inflight && h->last_tx && now - h->last_tx > idle && h->wnd > wnd_init(eng)) {
		h->wnd = wnd_init(eng);		/* restart after idle */
		h->ssthresh = 0;
		h->cut_wnd = 0;			/* nothing of before to undo */
		h->cut_judged_next = false;
	}
	h->last_tx = now;
	h->inflight++;
	qp->ph_pkts++;
	if (qp->ph_grant) {
		qp->ph_grant--;
		h->granted--;
	}
}

/*
 * The receiver's fair share is split over hosts, then over each host's QPs
 * (cc_rate.c).  qp received data for the first time in the engine's hint
 * epoch: it counts for its host; true when the host is new to the epoch
 * (a QP without a peer host is a host of its own).
 */
bool peer_hint_join(const struct engine *eng, struct qp *qp)
{
	struct peer_host *h = qp->ph;
	bool first;

	if (!h)
		return true;
	first = h->hint_epoch != eng->hint_epoch;
	if (first) {
		h->hint_prev = h->hint_epoch + 1 == eng->hint_epoch ? h->hint_now : 0;
		h->hint_now = 0;
		h->hint_epoch = eng->hint_epoch;
	}
	h->hint_now++;
	return first;
}

/* QPs of qp's host that sent lately: the larger of this epoch's and the last's, at least 1. */
uint32_t peer_hint_qps(const struct engine *eng, const struct qp *qp)
{
	const struct peer_host *h = qp->ph;
	uint32_t now = 0, prev = 0;

	if (!h)
		return 1;
	if (h->hint_epoch == eng->hint_epoch) {
		now = h->hint_now;
		prev = h->hint_prev;
	} else if (h->hint_epoch + 1 == eng->hint_epoch) {
		prev = h->hint_now;
	}
	now = now > prev ? now : prev;
	return now ? now : 1;
}

/* engine_tx took qp off tx_ready because its peer's window was full. */
void peer_park(struct qp *qp)
{
	list_add_tail(&qp->ph->blocked, &qp->tx_node);
}

/*
 * Blocked QPs get their turns, first come first served, one for each whole
 * run (ack_every packets) the free room holds: the room is granted to the
 * QP kicked (qp->ph_grant), and what it does not send comes back at its
 * turn's end (peer_turn_end).  A turn for every packet freed woke a QP per
 * packet while an ACK frees a run's worth, so one of the QPs woken sent a
 * run and the others found the window full and parked again: 1.08 QPs
 * parked per data packet at 4,000 QPs (issue #22, bench-scale 16 x 250),
 * each a cold QP's cache lines touched for nothing.  With nothing in
 * flight and nothing granted the whole window is free, and it holds a
 * run (or is smaller than one: then the whole window is the run), so the
 * blocked QPs never wait for an ACK that will not come.
 */
void peer_kick(struct engine *eng, struct peer_host *h)
{
	uint32_t run, wnd;

	if (!h || list_empty(&h->blocked))
		return;
	wnd = peer_wnd(eng, h);
	run = eng->cfg.ack_every < wnd ? eng->cfg.ack_every : wnd;
	while (!list_empty(&h->blocked) && h->inflight + h->granted + run <= wnd) {
		struct qp *next = list_first(&h->blocked, struct qp, tx_node);

		list_del(&next->tx_node);
		next->ph_blocked = false;
		next->ph_grant = (uint8_t)run;
		h->granted += run;
		list_add_tail(&eng->tx_ready, &next->tx_node);
		eng->st.c[EC_TX_PEER_KICKED]++;
	}
}

/*
 * qp's turn in engine_tx ended (its quantum spent, or nothing more it could
 * send): room it was granted and did not use goes to the next blocked QP.
 */
void peer_turn_end(struct engine *eng, struct qp *qp)
{
	if (!qp->ph_grant)
		return;
	qp->ph->granted -= qp->ph_grant;
	qp->ph_grant = 0;
	eng->st.c[EC_TX_PEER_GRANT_LEFT]++;
	peer_kick(eng, qp->ph);
}

/*
 * qp_timers' part, for a parked QP: with nothing in flight to its host and
 * no room granted, no release is coming and nobody would ever kick the
 * blocked list.  No code path should leave that state (peer_check fails on
 * it); a daemon built without the check would hold the QP for good (the
 * write_bw stalls of session 17 looked like that from outside), so the
 * QP's own timer, which comes at least once per dead-peer interval, kicks
 * the list and counts it.
 */
void peer_rescue(struct engine *eng, struct qp *qp)
{
	const struct peer_host *h = qp->ph;

	if (!qp->ph_blocked || !h || h->inflight || h->granted)
		return;
	eng->st.c[EC_TX_PEER_RESCUED]++;
	peer_kick(eng, qp->ph);
}

/*
 * n of qp's packets were acknowledged: the window opens by one for each.
 * Summed, one kick after (one ACK acknowledges several packets: #22, the
 * sender's cost per ACK): turns are whole runs handed out while the room
 * holds one, so a kick per packet would give the same turns in the same
 * order.
 */
void peer_acked(struct engine *eng, struct qp *qp, uint32_t n)
{
	struct peer_host *h = qp->ph;
	uint32_t cap = eng->cfg.peer_window_pkts;

	if (!h)
		return;
	if (h->wnd < cap) {
		if (!h->ssthresh || h->wnd < h->ssthresh) {
			h->wnd += n < cap - h->wnd ? n : cap - h->wnd;
		} else {
			h->ai_acked += n;
			if (h->ai_acked >= h->wnd) {
				h->ai_acked -= h->wnd;
				h->wnd++;
			}
		}
	}
	peer_release(eng, qp, n);
}

/*
 * The second round after a cut: the cut paid if its least wait's excess
 * over the target is at most half what cut.  The first round still ACKs
 * packets queued before the cut (a round is about the least wait plus the
 * fabric's round trip: a queue's new tail comes back at its end), and no
 * cut comes in it: one cut at a time, judged by what it did.  A queue the
 * window builds in the hosts drains by what the cut took; a wait it did
 * not build does not: a worker off its CPU most of the time (4 daemons and
 * 4 ranks on 2 CPUs: its packets and ACKs waited ms whatever the window)
 * or a loop that is long whatever is in flight.  Cut at every round, such
 * a wait held the window at its floor: a ring
 * AllReduce's hops moved 16 packets a round trip of milliseconds (bench-
 * nccl 64 MiB busbw 0.09-0.13 GB/s against 0.18-0.21 without the target,
 * issue #26).  A cut that did not pay is undone, and the next is tried
 * only after 1, 2, 4 .. 64 rounds (halved again by each that pays: a wait
 * whose least swings pays now and then by chance; reset at once, a third of
 * the cuts stayed in the ring AllReduce): a standing queue is still cut
 * every other round, a wait that is not the window's costs two rounds at a
 * smaller window now and then (Eifel's undo, with a backoff).
 */
static bool cut_paid(const struct peer_host *h, uint64_t least, uint64_t target)
{
	return least <= h->cut_least - (h->cut_least - target) / 2;
}

/*
 * An ACK of qp's said its packet waited host ns in the peer host
 * (MROC_HOST_DELAY_OVER: longer than the byte holds).  A round lasts the
 * host's smoothed RTT (or the least wait, if longer: the packets sent
 * before a cut are still in that queue); at its end, if its least wait is
 * above the target, the window is cut by (least - target) / least of it,
 * at most half, unless the last cut did not pay (cut_paid).
 */
void peer_host_delay(struct engine *eng, struct qp *qp, uint64_t host, uint64_t now)
{
	struct peer_host *h = qp->ph;
	uint64_t target = eng->cfg.peer_host_delay_ns, least;
	uint32_t wnd, cut, floor = host_floor(eng);

	if (!h || !target || !eng->cfg.peer_window_pkts)
		return;
	if (host == MROC_HOST_DELAY_OVER)
		host = 2 * target;	/* longer than the byte says: the most a cut takes */
	if (!h->round_at) {
		h->round_at = now;
		h->round_min = host;
		return;
	}
	if (host < h->round_min)
		h->round_min = host;
	least = h->round_min;
	if (now - h->round_at < (eng->host_srtt > least ? eng->host_srtt : least))
		return;
	h->round_at = now;
	h->round_min = UINT64_MAX;
	if (h->cut_wnd && !h->cut_judged_next) {
		h->cut_judged_next = true;
		return;
	}
	if (h->cut_wnd) {
		bool paid = cut_paid(h, least, target);

		if (!paid) {
			h->wnd = h->wnd > h->cut_wnd ? h->wnd : h->cut_wnd;
			h->ssthresh = h->cut_ssthresh;
			h->hold = (uint16_t)(1u << h->hold_shift);
			h->hold_shift += h->hold_shift < 6;
			eng->st.c[EC_PEER_HOST_UNDO]++;
		} else if (h->hold_shift) {
			h->hold_shift--;	/* one paid by chance does not undo the backoff */
		}
		h->cut_wnd = 0;
		h->cut_judged_next = false;
		if (!paid)
			return;
	}
	if (h->hold) {
		h->hold--;
		return;
	}
	if (least <= target)
		return;
	wnd = peer_wnd(eng, h);
	cut = (uint32_t)((uint64_t)wnd * (least - target) / least);
	if (cut > wnd / 2)
		cut = wnd / 2;
	h->cut_wnd = h->wnd;
	h->cut_ssthresh = h->ssthresh;
	h->cut_least = least;
	wnd -= cut;
	h->wnd = wnd > floor ? wnd : floor;
	h->ssthresh = h->wnd;
	h->ai_acked = 0;
	eng->st.c[EC_PEER_HOST_CUT]++;
}

uint32_t peer_window(const struct engine *eng, const struct qp *qp)
{
	return qp->ph ? peer_wnd(eng, qp->ph) : 0;
}

/* n of qp's packets left flight: blocked QPs get the room. */
void peer_release(struct engine *eng, struct qp *qp, uint32_t n)
{
	struct peer_host *h = qp->ph;

	if (!h || !n)
		return;
	if (n > qp->ph_pkts)
		n = qp->ph_pkts;	/* never below what this QP put in */
	qp->ph_pkts -= n;
	h->inflight -= n;
	peer_kick(eng, h);
}

/*
 * engine_check's part: each host's count is its QPs' (the window's packets
 * are released by the QP that sent them), its blocked list holds its own
 * parked QPs, and a parked QP has a release still to come to wake it: with
 * nothing in flight to the host, nobody kicks the list (unless a QP of the
 * host is on tx_ready, whose turn passes the kick on).
 */
int peer_check(struct engine *eng, char *why, size_t len)
{
	for (uint32_t b = 0; b <= eng->hash_mask; b++)
		for (struct peer_host *h = eng->ph_hash[b]; h; h = h->next) {
			uint64_t sum = 0, grants = 0;
			uint32_t refs = 0, blocked = 0, parked = 0;
			bool ready = false;

			for (uint32_t i = 0; i < eng->cfg.max_qps; i++) {
				struct qp *qp = eng->qps[i];

				if (!qp || qp->ph != h)
					continue;
				sum += qp->ph_pkts;
				grants += qp->ph_grant;
				refs++;
				blocked += qp->ph_blocked;
				/* Room granted is used or given back at the turn's end: on tx_ready. */
				if (qp->ph_grant && (qp->ph_blocked || !list_linked(&qp->tx_node)))
					return check_fail(why, len, "peer %u: QP 0x%x holds %u granted, %s",
							  h->peer, qp->qpn, qp->ph_grant,
							  qp->ph_blocked ? "parked" : "on no list");
			}
			if (grants != h->granted)
				return check_fail(why, len, "peer %u: granted %u, its QPs' grants %" PRIu64,
						  h->peer, h->granted, grants);
			for (struct list *n = h->blocked.next; n != &h->blocked; n = n->next) {
				struct qp *qp = list_entry(n, struct qp, tx_node);

				if (qp->ph != h || !qp->ph_blocked)
					return check_fail(why, len, "peer %u: QP 0x%x on its blocked list"
							  " (%s host, blocked %d)", h->peer, qp->qpn,
							  qp->ph == h ? "its" : "another", qp->ph_blocked);
				parked++;
			}
			for (struct list *n = eng->tx_ready.next; n != &eng->tx_ready; n = n->next)
				ready |= list_entry(n, struct qp, tx_node)->ph == h;
			if (sum != h->inflight || refs != h->refs)
				return check_fail(why, len, "peer %u: inflight %u, its QPs' %" PRIu64
						  "; refs %u, QPs %u", h->peer, h->inflight, sum, h->refs,
						  refs);
			if (parked != blocked)
				return check_fail(why, len, "peer %u: %u QPs parked, %u marked blocked",
						  h->peer, parked, blocked);
			if (parked && !h->inflight && !h->granted && !ready)
				return check_fail(why, len, "peer %u: %u QPs parked with nothing in flight",
						  h->peer, parked);
		}
	return 0;
}
