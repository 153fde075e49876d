// SPDX-License-Identifier: MIT
/*
 * The sender's timers (qp_timers): a path's RTO and tail-loss probe, a
 * path with nothing left to answer for (flight_settled), the RNR delay, the
 * stall of the peer's cumulative DSN, the dead peer and keepalives.
 */
#include "internal.h"

static void path_timeout(struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	qp->mops->on_timeout(eng, qp, p);
	path_on_rto(eng, qp, p, now);
	path_set_rto_deadline(qp, p, 0);
	qp_wake(eng, qp);
}

/* Resend DSNs waiting out an RNR delay or a stall of the peer's cumulative DSN. */
static void requeue(struct engine *eng, struct qp *qp, uint8_t state)
{
	for (uint32_t d = qp->snd_una; seq_lt(d, qp->snd_nxt); d++) {
		struct dsn_entry *e = dsn_ent(qp, d);

		if (e->state != state)
			continue;
		e->tx_count = 0;	/* refused or stalled, not lost: not a retry */
		if (qp->mops->resend(eng, qp, d))
			return;
	}
}

/* MetaRoCE: a refused or stalled DSN is queued like a lost one. */
bool ack_resend_one(struct engine *eng, struct qp *qp, uint32_t d)
{
	dsn_ent(qp, d)->state = DSN_INFLIGHT;
	qp_mark_lost(eng, qp, d);
	return false;
}

/*
 * Idle: ask the peer for a sign of life.  The first request goes once per
 * keepalive interval of silence; an unanswered one is repeated on the next
 * path, sooner (from the path RTO, doubling up to a quarter interval), and
 * the path it went on moves to a new source port: an idle path has no other
 * way to learn that its route died, and a dead plane must not look like a
 * dead peer.  A path with data in flight moves only once it timed out (its
 * RTO backs off to a second: a QP of one path that waits for it tries a few
 * ports before dead_peer).  Requests and answers share a source port, so
 * one that gets through has a working route both ways.
 */
static void keepalive_next(struct engine *eng, struct qp *qp, uint64_t now)
{
	uint64_t cap = max_u64(eng->cfg.keepalive_ns / 4, eng->cfg.rto_min_ns);

	if (qp->ka_sent > qp_heard(qp)) {	/* unanswered */
		struct path *p = &qp->paths[qp->ka_path];

		eng->st.c[EC_KA_RETRY]++;
		if (eng->cfg.repath && qp->mops->repath &&
		    (!p->inflight || p->state == PATH_TIMEDOUT))
			path_repath(eng, qp, p, now, ENGINE_REPATH_KEEPALIVE);
		qp->ka_path = (uint8_t)((qp->ka_path + 1) % qp->npaths);
		qp->ka_wait = min_u64(qp->ka_wait * 2, cap);
	} else {
		qp->ka_wait = min_u64(path_rto(eng, &qp->paths[qp->ka_path]), cap);
	}
	qp->ka_request = true;
	qp_wake(eng, qp);
}

/*
 * Whether a packet of the QP sent before p's newest is still unanswered on
 * another live path (paths keep their packets in send order, so a path's
 * oldest one in flight is the one to look at).  With sampled_only, only on
 * a sibling with an RTT sample: one never answered, silent as long as p,
 * is as suspect as p and says nothing of a queue they share.  Two new
 * paths on one dead plane each waited for the other's older packets,
 * neither probed nor timed out before rto_init, and the QP's window stood
 * full of their holes (mroc-sim run --planes 4 --paths 8 --route path
 * --plane-loss 1:1 --bytes 16M --mix 1,0,0,0: 0.118 of the capacity; now
 * 0.71).  Before p's silence is suspect (path_silence_end), all count: in
 * a lossless 64-host AllToAll, new paths queued at their receivers 70 us
 * and sibling packets unanswered there held 2.4 % of needless probes back.
 */
static bool older_unanswered(struct qp *qp, struct path *p, uint64_t now, bool sampled_only)
{
	uint64_t mine = sb_ent(p, p->next_psn - 1)->sent;

	for (unsigned i = 0; i < qp->npaths; i++) {
		struct path *s = &qp->paths[i];

		if (s == p || s->state != PATH_ACTIVE || !s->inflight || (sampled_only && !s->srtt))
			continue;
		for (uint32_t q = s->floor; q != s->next_psn; q++) {
			struct sb_entry *e = sb_ent(s, q);

			if (e->state != SB_INFLIGHT || e->copy)
				continue;
			if (e->sent < mine)
				return true;
			break;
		}
	}
	return false;
}

/* path_silent_at has come and the silence is p's alone. */
static bool silent_alone(const struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	bool answering = false;

	if (now < path_silent_at(eng, p) || !p->inflight || qp_heard(qp) <= p->rto_armed)
		return false;
	for (unsigned i = 0; i < qp->npaths; i++)
		answering |= &qp->paths[i] != p && qp->paths[i].srtt &&
			     qp->paths[i].state == PATH_ACTIVE;
	return answering && !older_unanswered(qp, p, now, true);
}

/*
 * Whether every packet in flight on p carries a DSN the peer has already
 * acknowledged (cumulatively: through another path, by a probe's copy or a
 * retransmission there).
 */
static bool path_settled(const struct qp *qp, struct path *p)
{
	for (uint32_t q = p->floor; q != p->next_psn; q++) {
		const struct sb_entry *s = sb_ent(p, q);

		if (s->state == SB_INFLIGHT && !seq_lt(s->dsn, qp->snd_una))
			return false;
	}
	return true;
}


/*
 * The answers a requester is owed (READ_RESP, ATOMIC_RESP).  Once the peer
 * acknowledged a request, nothing of it is in flight: no RTO runs, and a
 * peer that answers keepalives is not dead, so a responder that is broken
 * or hostile (it acknowledges and never answers) held the requester's WR,
 * and the QP's READ slots, for good.  The answer is timed as a packet is:
 * each wait a backed-off RTO of the QP's paths (as its slowest path
 * would time out) without a new data packet from the peer (an answer
 * streaming, or the peer's own sends its answer waits behind) is a retry
 * of the request (EC_RX_ANSWER_TIMEOUT), and past max_retx the request
 * fails with RETRY_EXC and the QP goes to error, as a segment lost too
 * often does.  The request is not sent again: the responder took its DSN
 * (a copy would be a duplicate to it), and its answer is its own message,
 * which it resends until we acknowledge it; what is retried is the wait.
 */
static uint64_t answer_wait(const struct engine *eng, const struct qp *qp)
{
	uint64_t w = 0;

	for (unsigned i = 0; i < qp->npaths; i++)
		w = max_u64(w, path_rto(eng, &qp->paths[i]));
	for (unsigned i = 0; i < qp->ans_tries && w < eng->cfg.rto_max_ns; i++)
		w <<= 1;
	return min_u64(w, eng->cfg.rto_max_ns);
}

void answer_arm(struct engine *eng, struct qp *qp, uint64_t now)
{
	qp->ans_tries = 0;
	qp->ans_progress = now;
	qp->ans_deadline = now + answer_wait(eng, qp);
}

/* The oldest request whose answer has not come (NULL: none). */
static struct tx_msg *answer_owed(struct qp *qp)
{
	for (uint32_t msn = qp->msn_head; msn != qp->msn_tail; msn++) {
		struct tx_msg *m = qp_msg(qp, msn);

		if (m->state == TXM_ACTIVE && mroc_op_is_request(m->op) && m->started &&
		    !m->read_done)
			return m;
	}
	return NULL;
}

/* ans_deadline came: true when the QP failed. */
static bool answer_timer(struct engine *eng, struct qp *qp, uint64_t now)
{
	struct tx_msg *m = answer_owed(qp);
	uint64_t wait;

	if (!m) {
		qp->ans_deadline = qp->ans_tries = 0;
		return false;
	}
	/* Not all of it acknowledged yet: the request's own timers run. */
	if (!seq_lt(m->first_dsn + m->nseg - 1, qp->snd_una)) {
		answer_arm(eng, qp, now);
		return false;
	}
	wait = answer_wait(eng, qp);
	if (now - qp->ans_progress < wait) {
		qp->ans_deadline = qp->ans_progress + wait;
		return false;
	}
	eng->st.c[EC_RX_ANSWER_TIMEOUT]++;
	if (++qp->ans_tries > eng->cfg.max_retx) {
		m->status = ENGINE_WC_RETRY_EXC_ERR;
		m->state = TXM_DONE;
		qp_set_error(eng, qp, ENGINE_WC_RETRY_EXC_ERR, now);
		return true;
	}
	qp->ans_progress = now;
	qp->ans_deadline = now + answer_wait(eng, qp);
	return false;
}

/*
 * A path with no RTT sample of its own whose timer (probe or RTO) comes due
 * with only settled packets in flight lets them go, as drop_dups does copies: nothing waits for them, a
 * probe would resend delivered data and an RTO would count a timeout, cut
 * the window and move the path for it.  In a 1 MiB AllToAll at 1 % loss
 * (seed 1) 146 of 255 RTOs were such: each QP's message is one packet on
 * each of 4 new paths, a sibling's probe carried the lost packet's DSN, and
 * the lost first transmission stayed in flight on its path until the RTO.
 * Not a loss either: the packet may only be slow (a plane's deeper queue;
 * lossless, 116 such packets in the same AllToAll), and its data arrived.
 * Its ACK, if one comes, finds nothing in flight.  Counted in
 * flight_settled.  Only on a path no ACK has reached yet (a new QP's: its
 * first packet says nothing about its route): a path that had answered
 * and now times out, even over delivered data, may have lost its route,
 * and its RTO moves it (released on every path, a dark plane's paths kept
 * their ports and carried 0.32 of 0.48 Gbit/s after the plane came back,
 * test_sim_cc test_plane_back_found; and test_engine_atomic's lossy
 * fetch-and-adds sent no request twice, so its replay cache went untried).
 * Nor on a path that timed out and moved (PATH_TIMEDOUT, no ACK since):
 * what it has in flight is the probe of its new port, and a probe of a
 * delivered DSN is settled at once; let go, the path had nothing in
 * flight, no timer, and carried nothing again (it sends only probes until
 * an ACK shows it alive): 2 paths on 4 planes, one dead, a timeout move
 * back onto the dead plane, and the QP ran on one path for the rest of its
 * transfer (mroc-sim run --like-fabric --paths 2 --plane-loss 3:1 --loss
 * 0.01 --mix 1,0,0,0 --seed 324431496 --wl-seed 109303425: 0.250 of
 * capacity, the 8 s limit hit).  Its unanswered probe is an RTO: it moves.
 *
 * Only within path_silence_floor of the first packet let go (settled_from,
 * until an ACK reaches the path or it moves): a path whose data is
 * delivered round after round and never answered has lost the route of its
 * ACKs (the receiver answers by the port of the packet it had).  Released
 * every round, it never timed out: a spine that died 11 us into a 16-host
 * AllReduce of 2-path QPs, on the way back of one path, left it on that
 * port for the whole collective, sending a window at each probe time with
 * no congestion control (mroc-sim
 * cluster --verify --transport metaroce --limit 60000 --hosts 16 --planes 4
 * --leaves 4 --spines 2 --op allreduce --bytes 4M --loss 0.001 --rto-min
 * 200 --paths 2 --fail spine --fail-at 11 --fail-plane 0 --seed 23434278:
 * 1.70 x the time without the failure, 1.38 x now).  It times out then
 * (counted rto_silent_alone: its silence is its own, the peer had its data).
 */
static void release_settled(struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	for (uint32_t q = p->floor; q != p->next_psn; q++) {
		struct sb_entry *s = sb_ent(p, q);

		if (s->state != SB_INFLIGHT)
			continue;
		s->state = SB_LOST;
		p->inflight -= s->bytes;
		peer_release(eng, qp, 1);
		eng->st.c[EC_FLIGHT_SETTLED]++;
	}
	advance_floor(p, now);
	if (!p->settled_from)
		p->settled_from = p->rto_armed;
	path_set_rto_deadline(qp, p, 0);
}

void qp_timers(struct engine *eng, struct qp *qp, uint64_t now)
{
	if (qp->state != ENGINE_QPS_CONNECTED && qp->state != ENGINE_QPS_CLOSING)
		return;
	/*
	 * A QP's timer comes at least once per dead_peer_ns while it is
	 * connected (the dead-peer check), and engine_advance wakes every QP
	 * whose timer ran: work that nothing would have sent (a bug,
	 * engine_check) goes out then.  Counted here, before the keepalive
	 * below wakes it for its own reasons.
	 */
	if (qp->state == ENGINE_QPS_CONNECTED && qp_stranded(qp))
		eng->st.c[EC_TX_STRANDED]++;
	peer_rescue(eng, qp);
	for (unsigned i = 0; i < qp->npaths; i++) {
		struct path *p = &qp->paths[i];
		uint64_t at;

		/*
		 * A timed-out path probes when its probe time comes; with a probe
		 * still in flight its RTO is armed and will probe again, so the
		 * probe time is spent either way (left set, it is a deadline in
		 * the past that the driver would spin on).
		 */
		if (p->state == PATH_TIMEDOUT && p->probe_at && now >= p->probe_at) {
			path_set_probe_at(qp, p, 0);
			if (!p->inflight) {
				path_probe_owed(qp, p, true);
				qp_wake(eng, qp);
			}
		}
		if (!p->rto_deadline || now < p->rto_deadline)
			continue;
		if (qp->mops->tail_probe && !p->srtt && p->inflight && p->state != PATH_TIMEDOUT &&
		    path_settled(qp, p)) {
			if (!p->settled_from || now - p->settled_from < path_silence_floor(eng)) {
				release_settled(eng, qp, p, now);
				continue;
			}
			/* Delivered, yet never answered: its ACKs' route is dead. */
			eng->st.c[EC_RTO_SILENT_ALONE]++;
			path_timeout(eng, qp, p, now);
			continue;
		}
		if (now < p->rto_at) {
			/*
			 * The tail-loss probe's time.  RoCEv2 mode has no probe: it
			 * waits for its RTO proper, as a RoCE NIC does (timing out here
			 * made the baseline recover faster than it should, and burn
			 * its retries within milliseconds of an outage).
			 *
			 * A path with no RTT sample of its own times its probe by a
			 * borrowed RTT (path.c probe_srtt).  While a packet the QP
			 * sent before this path's newest is unanswered on another path
			 * too, the silence is the QP's, not this path's: a queue on
			 * the way to the peer (in a 64-host AllToAll, receivers' queues
			 * of 70 us against a borrowed RTT of 10 us).  The probe waits
			 * another probe time (the RTO still bounds it); the older
			 * packet's ACK lends its RTT (path_lend_rtt), or its own path's
			 * probe or RTO speaks first.  Probing anyway resent
			 * 2,374 packets the receiver had or was about to get in a
			 * lossless 1 MiB AllToAll, 15 % more bytes (issue #23).
			 */
			if (!p->probes && qp->mops->tail_probe && !p->srtt &&
			    older_unanswered(qp, p, now, now >= path_silence_end(eng, p))) {
				path_arm_probe(eng, qp, p, now);
				continue;
			}
			if (p->probes < path_probe_max(qp, p) && qp->mops->tail_probe) {
				if (!p->probes)
					p->quiet_psn = p->next_psn;	/* path_repath.c note_leaving */
				p->probes++;
				path_probe_owed(qp, p, true);
				qp_wake(eng, qp);
				path_arm_probe(eng, qp, p, now);	/* the next probe, or the RTO */
				continue;
			}
			if (silent_alone(eng, qp, p, now)) {
				eng->st.c[EC_RTO_SILENT_ALONE]++;
				path_timeout(eng, qp, p, now);
				continue;
			}
			/* Not alone yet (older packets unanswered): look again, never in the past. */
			at = path_silent_at(eng, p);
			if (at <= now)
				at = now + eng->cfg.rto_min_ns / 4 + 1;
			path_set_rto_deadline(qp, p, min_u64(p->rto_at, at));
			continue;
		}
		if (path_rto_due(eng, qp, p, now))
			path_timeout(eng, qp, p, now);
	}
	if (qp->rack_deadline && now >= qp->rack_deadline) {
		rack_scan(eng, qp, now, true);
		qp_wake(eng, qp);
	}
	if (qp->rnr_deadline && now >= qp->rnr_deadline) {
		qp->rnr_deadline = 0;
		requeue(eng, qp, DSN_RNR_WAIT);
	}
	if (qp->ans_deadline && now >= qp->ans_deadline && answer_timer(eng, qp, now))
		return;
	if (qp->stall_since && now >= qp->stall_since + eng->cfg.rto_min_ns * 4) {
		qp->stall_since = 0;
		/*
		 * Each stall is a retry of snd_una (max_retx), though its resends
		 * are not (requeue): a peer whose cumulative DSN stays below a
		 * segment it acknowledged on its path, and that never NAKs it
		 * (an RNR NAK starts the count again), was resent to every 4
		 * rto_min for good, each resend's ACK news enough to keep the
		 * dead-peer clock back (an ACK that lied about its cum_dsn
		 * once: 5,000 packets a second, the WR never done nor failed).
		 */
		if (++qp->una_retries > eng->cfg.max_retx) {
			fail_msg_of(eng, qp, qp->snd_una, ENGINE_WC_RETRY_EXC_ERR, now);
			return;
		}
		rewind_acked(qp, qp->snd_una, DSN_RNR_WAIT);
		requeue(eng, qp, DSN_RNR_WAIT);
	}
	/* >=: the deadline qp_update_deadline asked for must find something to do. */
	if ((qp->snd_una != qp->snd_nxt && now - qp->last_progress >= eng->cfg.dead_peer_ns) ||
	    (eng->cfg.keepalive_ns && now - qp_heard(qp) >= eng->cfg.dead_peer_ns)) {
		fail_msg_of(eng, qp, qp->snd_una, ENGINE_WC_RETRY_EXC_ERR, now);
		return;
	}
	if (eng->cfg.keepalive_ns && qp->state == ENGINE_QPS_CONNECTED && !qp->ka_request &&
	    now >= qp_keepalive_due(eng, qp))
		keepalive_next(eng, qp, now);
}
