// SPDX-License-Identifier: MIT
/*
 * Sender's reaction to ACKs: walk the path scoreboard with the
 * cumulative PSN and the 256-bit SACK, detect loss (holes below dupthresh
 * acknowledged packets, by time on a path and across a QP's paths; at an
 * RTO: ack_lose_all), feed RTT/CE/loss to the path's congestion control,
 * advance the QP's cumulative DSN, act on NAKs.  The timers: qp_timers.c.
 */
#include <errno.h>

#include "internal.h"

/*
 * What one ACK acknowledged, gathered over its transmissions and applied to
 * the path, the QP and the peer once (acked_apply) instead of per packet:
 * an ACK covers ~4.6 of them, and each one's stores (one byte's, which may
 * alias anything) made the compiler reload every field it read again
 * (issue #22: the sender's ~2,600 instructions an ACK).
 */
struct acked {
	uint32_t bytes;		/* window bytes of the transmissions it acknowledged */
	uint32_t n;		/* how many (each has bytes: qp_tx.c counts its headers) */
	uint32_t newest;	/* the highest PSN acknowledged (n > 0) */
	uint32_t oldest;	/* the lowest (n > 0) */
	uint64_t sent_max;	/* the latest send time among them (n > 0) */
};

/* One transmission acknowledged: counted in *ak (nothing if it was not in flight). */
static inline void sb_ack(struct qp *qp, struct path *p, uint32_t psn, uint64_t now,
			  struct acked *ak)
{
	struct sb_entry *s = sb_ent(p, psn);
	uint32_t dsn = s->dsn;
	uint64_t t;

	if (s->state != SB_INFLIGHT)
		return;
	s->state = SB_ACKED;
	t = s->sent;
	if (!ak->n || t > ak->sent_max)
		ak->sent_max = t;
	if (!ak->n)
		ak->oldest = psn;	/* walk_sack goes up in PSN */
	ak->n++;
	ak->bytes += s->bytes;
	ak->newest = psn;	/* walk_sack goes up in PSN */
	if (p->route_probe == ROUTE_PROBE_SENT && psn == p->probe_psn)
		p->left_alive = true;	/* the port a timeout move left carried it (path.c) */
	if (!seq_lt(dsn, qp->snd_una) && seq_lt(dsn, qp->snd_nxt)) {
		struct dsn_entry *e = dsn_ent(qp, dsn);

		/* After an RNR NAK the receiver refuses these: they wait to be resent. */
		if (e->state == DSN_INFLIGHT || e->state == DSN_LOST)
			e->state = qp->rnr_deadline && !seq_lt(dsn, qp->rnr_from) ?
				   DSN_RNR_WAIT : DSN_ACKED;
	}
}

/* What sb_ack gathered, as if each transmission had been applied in turn. */
static void acked_apply(struct engine *eng, struct qp *qp, struct path *p,
			const struct acked *ak)
{
	if (!ak->n)
		return;
	p->inflight -= ak->bytes;
	peer_acked(eng, qp, ak->n);
	if (!qp->rack_valid || ak->sent_max > qp->rack_sent)
		qp->rack_sent = ak->sent_max;
	qp->rack_valid = true;
	p->st_acked += ak->n;
	if (!p->any_acked || seq_lt(p->high_acked, ak->newest))
		p->high_acked = ak->newest;
	p->any_acked = true;
}

/* One transmission lost: its DSN goes back to the queue. */
static void sb_lose(struct engine *eng, struct qp *qp, struct path *p, uint32_t psn)
{
	struct sb_entry *s = sb_ent(p, psn);

	if (s->state != SB_INFLIGHT)
		return;
	s->state = SB_LOST;
	p->inflight -= s->bytes;
	peer_release(eng, qp, 1);
	if (!s->copy)
		qp_mark_lost(eng, qp, s->dsn);
}

/*
 * Let go of the path's resolved transmissions at its floor.  An
 * acknowledged one raises the oldest echo the path accepts (now 0: leave
 * it): the receiver had it, so its later ACKs echo that packet or newer.
 * Not while a RoCEv2 go-back resends PSNs it sent before: ACKs of the first
 * transmissions may still be on their way.
 */
void advance_floor(struct path *p, uint64_t now)
{
	/* In locals: each slot's one-byte store would have them read again (struct acked). */
	uint32_t floor = p->floor, next = p->next_psn;
	bool echo = now && p->psn_hw == next;
	uint64_t lo = p->echo_lo;

	for (; floor != next; floor++) {
		struct sb_entry *s = sb_ent(p, floor);

		if (s->state == SB_INFLIGHT)
			break;
		if (echo && s->state == SB_ACKED && s->sent > lo)
			lo = s->sent;
		s->state = SB_FREE;
	}
	p->floor = floor;
	p->echo_lo = lo;
}

void fail_msg_of(struct engine *eng, struct qp *qp, uint32_t dsn, uint8_t status,
		 uint64_t now)
{
	if (!seq_lt(dsn, qp->snd_una) && seq_lt(dsn, qp->snd_nxt)) {
		struct tx_msg *m = qp_msg(qp, dsn_ent(qp, dsn)->msn);

		m->status = status;
		m->state = TXM_DONE;
	}
	qp_set_error(eng, qp, status, now);
}

/* Segments the receiver dropped after acknowledging the path: resend later. */
void rewind_acked(struct qp *qp, uint32_t from, uint8_t state)
{
	if (seq_lt(from, qp->snd_una))
		from = qp->snd_una;
	for (uint32_t d = from; seq_lt(d, qp->snd_nxt); d++) {
		struct dsn_entry *e = dsn_ent(qp, d);

		if (e->state == DSN_ACKED) {
			e->state = state;
			e->tx_count = 0;	/* the receiver refused it; the network did not lose it */
		}
	}
}

static void on_nak(struct engine *eng, struct qp *qp, struct path *p,
		   const struct mroc_ack_hdr *a, uint64_t now)
{
	struct tx_msg *m;

	/* ACKs of different paths overtake each other: act on newer NAKs only. */
	if (!a->nak_seq || (int16_t)(a->nak_seq - qp->nak_seen) <= 0)
		return;
	qp->nak_seen = a->nak_seq;
	switch (a->nak_code) {
	case MROC_NAK_RNR:
		if (seq_lt(a->nak_dsn, qp->snd_una) || !seq_lt(a->nak_dsn, qp->snd_nxt))
			return;
		m = qp_msg(qp, dsn_ent(qp, a->nak_dsn)->msn);
		/*
		 * rnr_retry counts episodes, as IB's RNR retry count does: every
		 * segment of a message is refused in one, and those NAKs arrive
		 * while its RNR delay runs.  The receiver answered, so the network
		 * lost nothing: the resends do not count against max_retx.
		 */
		qp->una_retries = 0;
		if (!qp->rnr_deadline && eng->cfg.rnr_retry != 7 &&
		    ++m->rnr_tries > eng->cfg.rnr_retry) {
			fail_msg_of(eng, qp, a->nak_dsn, ENGINE_WC_RNR_RETRY_EXC_ERR, now);
			return;
		}
		rewind_acked(qp, m->first_dsn, DSN_RNR_WAIT);
		qp->rnr_from = seq_lt(m->first_dsn, qp->snd_una) ? qp->snd_una : m->first_dsn;
		qp->rnr_deadline = now + eng->cfg.rnr_delay_ns;
		return;
	case MROC_NAK_ACCESS:
		fail_msg_of(eng, qp, a->nak_dsn, ENGINE_WC_REM_ACCESS_ERR, now);
		return;
	case MROC_NAK_INVALID:
		fail_msg_of(eng, qp, a->nak_dsn, ENGINE_WC_REM_INV_REQ_ERR, now);
		return;
	case MROC_NAK_PSN_SEQ:
		if (qp->mops->on_seq_nak)
			qp->mops->on_seq_nak(eng, qp, p, a->cum_psn);
		return;
	default:
		return;
	}
}

/*
 * The ACK just walked acknowledged q, a hole below hi, the path's highest
 * PSN acknowledged before it (at hi_at): the packet came after a later one
 * (each transmission has a PSN of its own, so this is no resend's ACK).  A
 * path is FIFO per route, and its loss rule counts on it (dupthresh later
 * PSNs make a hole a loss): where the route reorders (a switch spraying a
 * flow's packets, netem's jitter), late packets were declared lost and
 * resent and every declaration cut the window (mroc-sim run --jitter 20:
 * 0.40-0.54 of the capacity, against 0.99-1.07 in order).  From here the
 * path's holes are lost by time alone, after SRTT plus the lateness seen
 * (RFC 8985's reordering window, measured rather than stepped; at most an
 * SRTT), for 16 SRTTs after the last late packet, then half that wait.
 * Not where the order says nothing of the route: a packet of the route the
 * path left (route_old), a look or a scout (another route), RoCEv2 mode's
 * go-back (PSNs sent again).
 */
static void note_reorder(struct engine *eng, const struct qp *qp, struct path *p, uint32_t q,
			 uint32_t hi, uint64_t hi_at, uint64_t now)
{
	uint64_t late = now > hi_at ? now - hi_at : 0;

	if (!qp->mops->rtx_queue || !p->srtt || q == p->look_psn || hi == p->look_psn ||
	    sb_ent(p, q)->scout || sb_ent(p, hi)->scout ||
	    (p->route_old && (seq_lt(q, p->route_psn) || seq_lt(hi, p->route_psn))))
		return;
	late = max_u64(late, p->min_rtt / 4);
	p->reo_ns = min_u64(max_u64(p->reo_ns, late), p->srtt);
	p->reo_at = now;
	eng->st.c[EC_REORDER]++;
}

/* Mark transmissions [from, to) and SACKed ones acknowledged; returns bytes. */
static uint32_t walk_sack(struct engine *eng, struct qp *qp, struct path *p, const struct mroc_ack_hdr *a,
			  uint32_t *newest, uint64_t now)
{
	struct acked ak = { 0 };
	uint32_t span, hi = p->high_acked;
	bool had = p->any_acked;
	uint64_t hi_at = p->high_acked_at;
	uint32_t end = seq_lt(a->cum_psn, p->next_psn) ? a->cum_psn : p->next_psn;

	for (uint32_t q = p->floor; seq_lt(q, end); q++)
		sb_ack(qp, p, q, now, &ak);
	/*
	 * Only the bits of PSNs sent so far count: the scan ends there.  An
	 * ACK without loss has an empty bitmap, and reading all of its 32
	 * bytes was ~330 instructions an ACK on the sender (issue #22,
	 * scripts/pkt-instr.sh with RX_BATCH=7).
	 */
	span = seq_lt(a->cum_psn, p->next_psn) ? (uint32_t)seq_diff(p->next_psn, a->cum_psn) - 1 : 0;
	if (span > MROC_SACK_BITS)
		span = MROC_SACK_BITS;
	for (unsigned i = 0; i < span; i++) {
		uint32_t q = a->cum_psn + 1 + i;

		if (!a->sack[i >> 3]) {
			i |= 7;		/* skip an empty byte */
			continue;
		}
		if (seq_lt(q, p->floor) || !sack_bytes_test(a->sack, i))
			continue;
		sb_ack(qp, p, q, now, &ak);
	}
	acked_apply(eng, qp, p, &ak);
	if (!ak.n)
		return 0;
	*newest = ak.newest;
	if (!had || p->high_acked != hi)
		p->high_acked_at = now;
	if (had && seq_lt(ak.oldest, hi))
		note_reorder(eng, qp, p, ak.oldest, hi, hi_at, now);
	return ak.bytes;
}

/*
 * Loss across paths, by time (RACK, RFC 8985, over a QP's paths): a packet
 * still in flight that was sent before one the receiver has since
 * acknowledged, on any path, is lost once it has had its path's smoothed
 * RTT plus a reorder window, max(SRTT / 4, 4 x RTTVAR), and the receiver's
 * ACK delay if it did not ask for an immediate ACK.  This is what catches a
 * lone lost packet (the last one on its path, whose path has nothing later
 * to SACK) within about an RTT, as RoCEv2's sequence NAK does, instead of
 * the tail-loss probe's two RTTs plus ACK delay or the RTO.
 *
 * Safe under path delay skew: each packet waits for its own path's RTT, so a
 * slow plane's packets are not overtaken into loss by a fast plane's.  A
 * path without an RTT sample of its own is left to its probe and RTO.  Only
 * an application-limited QP (every posted segment sent once) is scanned: a
 * QP with data waiting has its windows full, and its later packets on the
 * same path reveal losses by SACK anyway.  (Paths that had seen CE were
 * skipped too, for a bulk AllToAll's deep queues; since bulk QPs are not
 * scanned that only disabled the rule on a marking fabric, whose CE
 * average never decays to zero: at the end of a 64-host permutation at 10 %
 * loss lone losses waited for the probe and, when it was lost too, the
 * RTO: 37-57 RTOs a run, 10-15 without the skip, issue #27.)
 * Losses are declared only from the QP's timer (rack_deadline), never while
 * ACKs are being taken in: the driver drains its receive ring before timers
 * run, so an ACK that arrived in the same batch as a later packet's is
 * counted first, and a busy host does not turn into spurious loss.
 *
 * With cfg.rack_reo_srtt the reorder window is SRTT / 4 alone, the wait of
 * the path's own time rule (ack_detect_loss: a hole with a later PSN of
 * its path acknowledged is lost after SRTT + SRTT / 4).  4 RTTVAR is an
 * RTO's margin for a host's stalls; under a fabric's queues it reaches
 * 1.6 SRTT (64-host permutation, 16 paths: SRTT 30-75 us, RTTVAR 1-23 us),
 * and every bulk flow ends application-limited with a lost packet or two
 * among its paths' last ones at 1 % loss: they waited 1.3-2.7 SRTT, and
 * the slowest flow's wait set the makespan (issue #23 target D: the lossy
 * run 1.5 % slower than its lossless twin, 0.75 % with the rule).  Off by
 * default, and in the cluster simulator too: a packet that was only late
 * is now and then declared lost and copied (~170 in a lossless 16-path
 * permutation of 262,000 packets; 22 of test_sim_cluster's lossless
 * 8-host permutation's 512 at 4 paths, whose test wants none; none there
 * at 8 paths; ~16,000 of 65,536 in a 4 MiB permutation at 16 paths).  Its
 * late ACK is now a sample (rack_late); RFC 8985's wider window after a
 * late packet made the lossy runs slower (rack_late).
 */
static uint64_t rack_wait(const struct engine *eng, const struct path *p,
			  const struct sb_entry *s)
{
	uint64_t reo = eng->cfg.rack_reo_srtt ? p->srtt / 4 : max_u64(p->srtt / 4, 4 * p->rttvar);

	reo = max_u64(reo, p->reo_ns);	/* the route reorders (note_reorder) */
	return p->srtt + reo + (s->ack_req ? 0 : eng->cfg.ack_delay_ns);
}

/*
 * Walk each path from its floor over packets sent before rack_sent: with lose,
 * declare those whose time is up; either way, set rack_deadline to the
 * first one still waiting (0: none).
 */
void rack_scan(struct engine *eng, struct qp *qp, uint64_t now, bool lose)
{
	uint64_t next = 0;

	qp->rack_deadline = 0;
	if (!qp->rack_valid || qp->snd_nxt != qp->dsn_alloc)
		return;
	for (unsigned i = 0; i < qp->npaths; i++) {
		struct path *p = &qp->paths[i];
		uint32_t nlost = 0, last = 0;

		if (!p->srtt || !p->inflight)
			continue;
		for (uint32_t q = p->floor; q != p->next_psn; q++) {
			struct sb_entry *s = sb_ent(p, q);
			uint64_t due;

			if (s->state != SB_INFLIGHT)
				continue;
			if (s->sent >= qp->rack_sent)
				break;		/* nothing sent after it has been delivered */
			due = s->sent + rack_wait(eng, p, s);
			if ((int64_t)(due - now) > 0 || !lose) {
				/* Later packets on the path left later: this one is due first. */
				next = next && next < due ? next : max_u64(due, now);
				break;
			}
			if (!p->rack_hi)
				p->rack_lo = s->sent;
			p->rack_hi = s->sent;
			sb_lose(eng, qp, p, q);
			if (s->scout)
				continue;	/* another route's loss, as a look's */
			nlost++;
			last = q;
		}
		if (!nlost)
			continue;
		eng->st.c[EC_LOST_RACK] += nlost;
		path_on_loss(eng, qp, p, last, nlost);
		advance_floor(p, now);
		if (!p->inflight) {
			if (!p->silent_from && p->rto_deadline)
				p->silent_from = p->rto_armed;
			path_set_rto_deadline(qp, p, 0);
		}
	}
	qp->rack_deadline = next;
}

/*
 * The highest PSN acknowledged of those the path sent by the route it left
 * (path.c route_changed), or route_psn if none; clears route_old once
 * nothing of that route is in flight.  Scans back from route_psn, and only
 * in the round or so after a move.
 */
static uint32_t old_route_high(struct path *p)
{
	if (!seq_lt(p->floor, p->route_psn)) {
		p->route_old = false;
		return p->route_psn;
	}
	for (uint32_t q = p->route_psn; q != p->floor; q--)
		if (sb_ent(p, q - 1)->state == SB_ACKED)
			return q - 1;
	return p->route_psn;
}

/*
 * A hole below an acknowledged PSN is lost (paths are FIFO) once dupthresh
 * later PSNs are acknowledged, or once it has had an RTT and a quarter to
 * be acknowledged (RACK's time rule, which also catches a lost tail that a
 * probe exposed); on a route seen to reorder (note_reorder) by time alone,
 * after SRTT + max(SRTT / 4, reo_ns).  Then the rule across paths above.
 */
void ack_detect_loss(struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	uint32_t nlost = 0, last = 0, reo, count = eng->cfg.dupthresh;
	bool old = p->route_old;
	uint32_t old_high = old ? old_route_high(p) : 0;
	uint32_t old_reo = (uint32_t)(max_u64(p->srtt, p->route_srtt) * 5 / 4);

	if (p->reo_ns && now - p->reo_at > 16 * p->srtt) {
		p->reo_ns = p->reo_ns / 2 < p->min_rtt / 4 ? 0 : p->reo_ns / 2;
		p->reo_at = now;
	}
	reo = (uint32_t)min_u64(p->srtt + max_u64(p->srtt / 4, p->reo_ns), UINT32_MAX);
	if (p->reo_ns)
		count = MROC_SACK_BITS + 1;	/* more than a path has in flight: time alone */
	for (uint32_t q = p->floor; p->any_acked && seq_lt(q, p->high_acked); q++) {
		struct sb_entry *s = sb_ent(p, q);
		uint32_t waited;

		if (s->state != SB_INFLIGHT)
			continue;
		waited = (uint32_t)min_u64(now - s->sent, UINT32_MAX);
		/*
		 * Sent by the route the path has left (path.c route_changed):
		 * paths are FIFO per route, so only that route's later packets
		 * say it is lost, within that route's RTT.  The new route's ACKs
		 * overtake it when it is the faster (a move to a clear plane),
		 * and counted, they declared its late packets lost: like-fabric
		 * runs resent 1-20 packets a lossless run, each a loss of the
		 * path's (s17-cc17 6).  With none of its later packets
		 * acknowledged (its tail was lost), twice that time, as a look.
		 */
		if (old && seq_lt(q, p->route_psn)) {
			bool later = old_high != p->route_psn && seq_lt(q, old_high);

			if (!old_reo || (later ? seq_diff(old_high, q) < (int32_t)eng->cfg.dupthresh &&
						 waited <= old_reo : waited <= 2 * old_reo))
				continue;
		} else if (seq_diff(p->high_acked, q) < (int32_t)count &&
			   (!p->srtt || waited <= reo)) {
			continue;
		}
		/*
		 * A look (path_trial.c path_look_sample) went by another route, whose
		 * queue may be longer: the path's order says nothing of it, and
		 * only twice the time says it is lost (8 paths on 4 busy planes:
		 * 5 looks of 148 lost so, each resent and its late ACK's echo
		 * refused); lost, it is no loss of the path's (looks at a dead
		 * plane made 36-57 "loss" moves a run in test_sim_cc).
		 */
		if (q == p->look_psn && p->look == LOOK_SENT) {
			if (waited <= 2 * reo)
				continue;
			sb_lose(eng, qp, p, q);	/* resent, but another route's loss (path.c) */
			continue;
		}
		sb_lose(eng, qp, p, q);
		if (s->scout)
			continue;	/* a scout's route's loss (path_repath.c path_scout), not the path's */
		nlost++;
		last = q;
	}
	if (nlost)
		path_on_loss(eng, qp, p, last, nlost);
	rack_scan(eng, qp, now, false);	/* across paths: when the next is due */
}

/*
 * Copies (qp_tx.c dup_max) of DSNs the peer has acknowledged leave flight:
 * they were there for a held-up or lost first transmission, and that is
 * settled.  Left in flight, a lost copy held its path's window and, with
 * nothing else on the path to reveal it, fired the path's RTO: at 1 %
 * loss a 512 B AllReduce (copies of one segment) timed out 16 times
 * against 13 and its p50 went from 64.3 to 80.1 us.  Its ACK, if one still
 * comes, finds nothing in flight.
 */
static void drop_dups(struct engine *eng, struct qp *qp, uint64_t now)
{
	bool left = false;

	for (unsigned i = 0; i < qp->npaths; i++) {
		struct path *p = &qp->paths[i];
		bool dropped = false;

		for (uint32_t q = p->floor; q != p->next_psn; q++) {
			struct sb_entry *s = sb_ent(p, q);

			if (s->state != SB_INFLIGHT || !s->dup)
				continue;
			if (!seq_lt(s->dsn, qp->snd_una)) {
				left = true;
				continue;
			}
			s->state = SB_LOST;
			p->inflight -= s->bytes;
			peer_release(eng, qp, 1);
			dropped = true;
		}
		if (!dropped)
			continue;
		advance_floor(p, now);
		/*
		 * The timer may have been armed by the copy, which no ACK will
		 * re-arm now: left so, it fired on the packets sent after it
		 * (a lossless ring AllReduce, 4 KiB: 66 needless RTOs).
		 */
		path_rearm(eng, qp, p, now);
	}
	qp->dups_out = left;
}

static void advance_una(struct engine *eng, struct qp *qp, uint32_t cum, uint64_t now)
{
	if (!seq_lt(qp->snd_una, cum) || seq_lt(qp->snd_nxt, cum))
		return;
	for (uint32_t d = qp->snd_una; d != cum; d++)
		dsn_ent(qp, d)->state = DSN_FREE;
	qp->snd_una = cum;
	if (qp->dups_out)
		drop_dups(eng, qp, now);
	qp->una_retries = 0;
	qp->stall_since = 0;
	qp->last_progress = now;
	/* A READ_REQ waiting for room in the message ring can go now. */
	if (qp_complete_sends(eng, qp) && qp->state == ENGINE_QPS_CONNECTED)
		qp_deliver(eng, qp);
}

/*
 * After an RTO was undone (path.c rto_undo: an ACK echoed a send from
 * before it), each ACK of the path takes back what that RTO declared lost
 * and the ACK shows delivered: a DSN still waiting in the retransmit queue
 * is acknowledged instead of resent (pick_dsn drops it), counted in
 * rto_unlost.  The range's slots are kept from the RTO until an ACK
 * settles it (path_sb_low in qp_tx.c).  A PSN is shown delivered by a SACK
 * bit, or by the cumulative PSN only while it is below the RTO's end: a
 * packet sent after the RTO carries the new floor (rto_hi), which moves
 * the receiver's cumulative PSN to it whether the packets below arrived or
 * not, so a cumulative PSN of rto_hi or more says nothing about them.
 * Nothing is taken back once the ACK covers the range.
 */
static void ack_unlose(struct engine *eng, struct qp *qp, struct path *p,
		       const struct mroc_ack_hdr *a)
{
	bool cum_ok = seq_lt(a->cum_psn, p->rto_hi);

	if ((uint32_t)seq_diff(p->next_psn, p->rto_lo) > p->sb_mask + 1u) {
		p->rto_range = p->unlose = false;
		return;
	}
	for (uint32_t q = p->rto_lo; q != p->rto_hi; q++) {
		struct sb_entry *s = sb_ent(p, q);
		int32_t above = seq_diff(q, a->cum_psn);
		struct dsn_entry *e;

		if (!s->rto_lost)
			continue;
		if (above < 0 ? !cum_ok :
		    above == 0 || above > MROC_SACK_BITS || !sack_bytes_test(a->sack, (unsigned)above - 1))
			continue;
		s->rto_lost = 0;
		if (seq_lt(s->dsn, qp->snd_una) || !seq_lt(s->dsn, qp->snd_nxt))
			continue;
		e = dsn_ent(qp, s->dsn);
		if (e->state != DSN_LOST)
			continue;	/* resent already (or refused since): its own ACK settles it */
		e->state = DSN_ACKED;
		eng->st.c[EC_RTO_UNLOST]++;
	}
	if (!seq_lt(a->cum_psn, p->rto_hi))
		p->rto_range = p->unlose = false;
}

/*
 * The RTT the delay signal sees: from the ACK's arrival (the driver's stamp,
 * not the worker's poll: engine_rx_meta.arrival), less the host time the
 * receiver says its echo still holds (host_delay).  Swift's fabric delay:
 * on a host that takes its rings in batches and shares its CPUs, every
 * sample of a round held tens to hundreds of microseconds of waiting for a
 * worker, and the delay signal cut every window to its floor (issue #22).
 * 0: none (the receiver held it longer than the byte says: a stall, no
 * sample of the fabric).  A claim longer than the sample is no claim: the
 * sample stays whole.
 */
static uint64_t fabric_rtt(struct engine *eng, const struct mroc_ack_hdr *a, uint64_t rtt,
			   uint64_t sent, uint64_t at)
{
	uint64_t host = mroc_host_delay_dec(a->host_delay);

	if (host == MROC_HOST_DELAY_OVER)
		return 0;
	if (at > sent && at - sent < rtt)
		rtt = at - sent;
	if (host >= rtt)
		return rtt;
	eng->st.c[EC_ACK_HOST_NS] += host;
	return rtt - host;
}

/*
 * A packet the cross-path rule declared lost that was only late (RFC 8985
 * 7.2's spurious loss, which a DSACK shows there; here the echo does): an
 * ACK with news that echoes a send time within those of the path's losses
 * declared by the rule since the path last delivered a later packet is
 * the late ACK of one of them.  Counted (EC_LOST_RACK_LATE), and its echo
 * is an RTT sample of the path even where the path's echo floor has passed
 * it (path_on_echo: the floor moves past a lost packet, and a send with
 * nothing else in flight raises it): refused, the long samples the rule's
 * wait should learn were lost, and counted as bad echoes, with clock
 * errors and forgeries (244-355 a run in test_sim_loss test_tail_in_queues'
 * lossless 64-host 4 MiB permutation at 16 paths with cfg.rack_reo_srtt;
 * now 1, half as many packets declared lost, and the runs faster).  A
 * forged echo in the range names a time between two of our own sends.
 * The range closes at an echo of a later send: paths are FIFO, so the
 * late ones came first.
 *
 * RFC 8985's answer, a reorder window widened for 16 recoveries after
 * one, was tried and not kept: a quarter SRTT more per late packet, up to
 * an SRTT, the QP's window, for 16 SRTTs.  In the cluster simulator's 4 MiB
 * permutation at 16 paths with rack_reo_srtt (seeds 1-12) it cut the
 * lossless run's needless copies from 9,504 to 1,984-2,322 and made it 4 %
 * faster, but the 1 % loss run 7-11 % slower (643 -> 691-716 us): there the
 * copies hedge the flows' tails queued on slow paths, and the widened wait
 * held them (docs/PERF.md, session 25).
 */
static bool rack_late(struct engine *eng, struct path *p, const struct mroc_ack_hdr *a,
		      uint64_t now, uint64_t at)
{
	uint64_t sent;

	if (!p->rack_hi || !echo_sent(max_u64(now, at), a->ts_echo, p->rack_lo, &sent))
		return false;
	if (sent > p->rack_hi) {
		p->rack_lo = p->rack_hi = 0;
		return false;
	}
	eng->st.c[EC_LOST_RACK_LATE]++;
	return true;
}

/*
 * Swift's endpoint delay, what the peer window's target bounds (peer.c):
 * the wait in the peer host the ACK reports plus the ACK's own in ours,
 * from its arrival stamp to now.  Both are queues of the hosts' own making
 * that the delay signal leaves out (fabric_rtt), and a sender whose worker
 * is busy sending holds the ACKs in its receive ring: beside a write_bw on
 * the 4-plane fabric they waited 3.6 ms there against 0.76 ms for the data
 * in the receiver's (issue #22), and a ping-pong's answer waits behind them.
 */
static uint64_t endpoint_delay(const struct mroc_ack_hdr *a, uint64_t now, uint64_t at)
{
	uint64_t host = mroc_host_delay_dec(a->host_delay);

	if (host == MROC_HOST_DELAY_OVER)
		return host;
	return host + (now > at ? now - at : 0);
}

/*
 * A sample of a message posted alone (psn: the packet it acknowledged) held
 * up on its way (qp_tx.c held_up): longer than the best any path of the QP
 * has shown by more than an mtu packet and twice the message take at the
 * link rate, what a part waits behind another host's full packet beyond
 * what it may wait behind its own message's parts at our NIC and its ACK
 * behind the peer's message at the peer's (a collective's step sends both
 * ways at once; with the message once, an idle 4 KiB AllReduce still saw
 * 48 samples "held" and copied: 22.05 us against 22.00).  The QP's
 * paths, not this path's own history: a collective's QPs are new every
 * operation and a path carries one part of one message, so the parts of
 * that message, sent together over equal routes, are what a part can be
 * compared with.  Bulk messages' samples say nothing here: their own queues
 * fill them (an idle 4 KiB AllReduce, 8 parts of 512 B, copied on shared
 * paths when they counted: 22.10 us against 22.00).
 */
static void note_held(struct engine *eng, struct qp *qp, struct path *p, uint32_t psn,
		      uint64_t fabric, uint64_t now)
{
	uint32_t dsn = sb_ent(p, psn)->dsn;
	const struct tx_msg *m;
	uint64_t best = 0;

	/* Only a split QP sends messages alone (mrocd's dup_max is on, split_unit off). */
	if (!fabric || !eng->cfg.link_rate_bps || !eng->cfg.dup_max || !qp->peer_split ||
	    seq_lt(dsn, qp->snd_una) || !seq_lt(dsn, qp->snd_nxt))
		return;
	m = qp_msg(qp, dsn_ent(qp, dsn)->msn);
	if (!m->alone)
		return;
	for (unsigned i = 0; i < qp->npaths; i++) {
		uint64_t r = qp->paths[i].min_rtt;

		if (r && (!best || r < best))
			best = r;
	}
	if (best && fabric > best &&
	    fabric - best > ((uint64_t)eng->cfg.mtu + MROC_DATA_OVERHEAD + 2ULL * m->len) * 8 *
			    NSEC_PER_SEC / eng->cfg.link_rate_bps) {
		eng->held_at = now ? now : 1;
		eng->st.c[EC_RTT_HELD]++;
	}
}

int qp_rx_ack(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt, uint64_t now,
	      uint64_t at)
{
	const struct mroc_ack_hdr *a = &pkt->ack;
	struct path *p;
	uint32_t bytes, newest = 0, rcv_delta = 0, ce_delta = 0;
	uint16_t nak_seen = qp->nak_seen;
	bool echo_ok, look, news, late;
	uint64_t sent = 0, known;
	int last;

	/* An ACK for a path or PSNs we never used is bogus; one from before the floor is just old. */
	if (pkt->hdr.path_id >= qp->npaths ||
	    seq_lt(qp->paths[pkt->hdr.path_id].psn_hw, a->cum_psn) ||
	    seq_lt(qp->snd_nxt, a->cum_dsn)) {
		eng->st.c[EC_RX_OUT_OF_WINDOW]++;
		return -EINVAL;
	}
	p = &qp->paths[pkt->hdr.path_id];
	/*
	 * A SACK bit for a PSN never sent on the path: walk_sack stops short
	 * of it, and it is counted (#24).  The ACK's other news is still
	 * taken: a receiver keeps such a bit until its cum passes it, so one
	 * forged data packet (none; test_engine_refuse_peer test_psn_window) would
	 * otherwise poison every later ACK of the path.
	 */
	last = sack_bytes_last(a->sack);
	if (last >= 0 && !seq_lt(a->cum_psn + 1 + (uint32_t)last, p->psn_hw))
		eng->st.c[EC_RX_SACK_UNSENT]++;
	/* In flight as the ACK came: whether the window limits the sender (cc_window.c). */
	if (p->inflight > p->flight_max)
		p->flight_max = p->inflight;

	on_nak(eng, qp, p, a, now);
	if (qp->state != ENGINE_QPS_CONNECTED && qp->state != ENGINE_QPS_CLOSING)
		return 0;

	bytes = walk_sack(eng, qp, p, a, &newest, now);
	known = bytes ? sb_ent(p, newest)->sent : 0;	/* before a look moves newest */
	look = path_look_acked(p, &newest);
	/*
	 * News (PSNs acknowledged, packets received, a NAK) the peer sent since
	 * the last ACK that had some.  Only such an ACK's echo is a sample
	 * (path_on_echo): one without news is a replay or a copy of an ACK we
	 * had, and its echo, as old as that ACK, showed an RTT that grew with
	 * each replay up to rto_max in the host's RTT maximum (s20-cc20).
	 */
	news = bytes || qp->nak_seen != nak_seen ||
	       (a->rcv_pkts != p->last_rcv_pkts &&
		(!p->ack_seen || seq_lt(p->last_rcv_pkts, a->rcv_pkts)));
	/* The echo is timed to when we took the ACK: no earlier than it arrived (rx_taken). */
	late = news && rack_late(eng, p, a, now, at);
	echo_ok = news && path_on_echo(eng, qp, p, a->ts_echo, max_u64(now, at), late, known,
				       &sent);
	if (bytes || late) {
		bool first = !p->srtt;

		if (echo_ok) {
			uint64_t rtt = max_u64(now, at) - sent;

			uint64_t fabric = fabric_rtt(eng, a, rtt, sent, at);

			peer_host_delay(eng, qp, endpoint_delay(a, now, at), now);

			/* A look's sample is another route's, not the path's. */
			if (look && a->ts_echo == p->look_ts) {
				path_look_sample(eng, qp, p, fabric, now);
			} else {
				if (bytes)
					note_held(eng, qp, p, newest, fabric, now);
				path_on_rtt(eng, p, rtt, fabric);
			}
		}
		if (look && p->look == LOOK_SENT)
			path_look_sample(eng, qp, p, 0, now);	/* the echo was another packet's */
		if (first && p->srtt)
			path_lend_rtt(eng, qp, p, now);
		if (p->scouts)
			path_scout_answered(eng, qp, p, echo_ok, sent);
		p->backoff = 0;
		p->mute_rtos = 0;
		p->probes = 0;
		p->state = PATH_ACTIVE;
		path_set_probe_at(qp, p, 0);
	}
	if (qp->mops->detect_loss) {
		/*
		 * The floor first: what the ACK resolved is no hole, and
		 * ack_detect_loss walked it all (~70 instructions an ACK,
		 * issue #22).  The same result: the walk skips what is not in
		 * flight, and the echo's floor (path_on_echo) is checked above.
		 */
		advance_floor(p, now);
		qp->mops->detect_loss(eng, qp, p, now);
	}
	advance_floor(p, now);
	if (seq_lt(p->next_psn, a->cum_psn)) {
		/* RoCEv2 mode went back, but the receiver had these: skip ahead. */
		p->next_psn = p->floor = a->cum_psn;
	}
	if (!p->ack_seen || seq_lt(p->last_rcv_pkts, a->rcv_pkts)) {
		rcv_delta = a->rcv_pkts - p->last_rcv_pkts;
		ce_delta = a->ce_pkts - p->last_ce_pkts;
		if (ce_delta > rcv_delta)
			ce_delta = rcv_delta;
		p->last_rcv_pkts = a->rcv_pkts;
		p->last_ce_pkts = a->ce_pkts;
		p->ack_seen = true;
		p->st_ce += ce_delta;
	}
	if (p->undo_rate && !p->left_alive)
		path_note_left(p, a);	/* a timeout move: was the port it left alive? */
	/*
	 * News is a sign of life, and progress for the data-in-flight clock
	 * (qp_timers).  A replayed ACK has none: with keepalives off it reset
	 * that clock, and a QP whose real ACKs an on-path host dropped lived
	 * on until max_retx (#24 item 6).
	 */
	if (news) {
		peer_heard(qp, now);
		qp->last_progress = now;
	} else {
		eng->rx_repeat = true;
	}
	if (bytes || rcv_delta) {
		p->settled_from = 0;	/* its answers' route works */
		path_on_ack(eng, qp, p, bytes, rcv_delta, ce_delta, bytes ? newest : p->floor - 1,
			    now);
	}
	if (bytes) {
		p->silent_from = 0;
		path_rearm(eng, qp, p, now);
	} else if (!p->inflight)
		path_set_rto_deadline(qp, p, 0);

	qp->hint_mbps = a->rate_hint;
	if (!qp->hint_mbps)
		qp->pace_next = 0;
	advance_una(eng, qp, a->cum_dsn, now);
	if (p->unlose)
		ack_unlose(eng, qp, p, a);
	else if (!p->rto_fired_at)
		p->rto_range = false;	/* the RTO was needed, or settled: nothing to take back */
	if (qp->gbn_active && seq_lt(qp->gbn_next, qp->snd_una))
		qp->gbn_next = qp->snd_una;
	if (qp->snd_una != qp->snd_nxt && dsn_ent(qp, qp->snd_una)->state == DSN_ACKED &&
	    !qp->stall_since)
		qp->stall_since = now;
	qp_wake(eng, qp);
	return 0;
}

/*
 * MetaRoCE: a timed-out path's packets in flight are each lost.  They stay
 * marked (rto_lost) in their slots, below the new floor, while rto_range:
 * ack_unlose may take them back.
 */
void ack_lose_all(struct engine *eng, struct qp *qp, struct path *p)
{
	p->rto_range = true;
	p->unlose = false;
	p->rto_lo = p->floor;
	p->rto_hi = p->next_psn;
	for (uint32_t q = p->floor; q != p->next_psn; q++) {
		struct sb_entry *s = sb_ent(p, q);

		s->rto_lost = s->state == SB_INFLIGHT && !s->copy;
		sb_lose(eng, qp, p, q);
	}
	advance_floor(p, 0);
}
