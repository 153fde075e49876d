// SPDX-License-Identifier: MIT
/*
 * One path of a QP, sender side: RTT estimator, RTO, the rounds and counts
 * congestion control acts on (the window itself: cc.h).  Repathing:
 * path_repath.c (the moves) and path_trial.c (judging siblings, trials).
 * The scoreboard itself is walked by qp_ack.c; this file owns the numbers.
 */
#include <string.h>

#include "internal.h"
#include "path_priv.h"

/*
 * A random source port of class cls: one that leaves by port cls of the
 * cfg.sport_classes ports (sport mod N).
 */
static uint16_t class_sport(struct engine *eng, uint32_t cls)
{
	uint32_t lo = eng->cfg.sport_min, span = (uint32_t)eng->cfg.sport_max - lo + 1;
	uint32_t c = eng->cfg.sport_classes;
	uint32_t off = (cls % c + c - lo % c) % c;

	return (uint16_t)(lo + off + c * prng_below(&eng->rng, (span - 1 - off) / c + 1));
}

/*
 * A random source port; on a host of N ports (cfg.sport_classes) one of
 * class cls when cls >= 0, and at a path's first start one of class
 * (id + QPN) mod N.
 */
static uint16_t random_sport(struct engine *eng, struct qp *qp, const struct path *self, int cls)
{
	uint32_t lo = eng->cfg.sport_min, span = (uint32_t)eng->cfg.sport_max - lo + 1;
	uint32_t c = eng->cfg.sport_classes;

	if (c > 1 && span >= c && cls >= 0)
		return class_sport(eng, (uint32_t)cls);
	if (c > 1 && span >= c && self->sport == 0)
		return class_sport(eng, (self->id + qp->qpn) % c);
	return (uint16_t)(lo + prng_below(&eng->rng, span));
}

/* cls: the class wanted (random_sport), or -1. */
uint16_t pick_sport(struct engine *eng, struct qp *qp, const struct path *self, int cls)
{
	uint16_t port = 0;

	/* A few tries to avoid a sibling's port: the same port would hash alike. */
	for (int tries = 0; tries < 8; tries++) {
		bool clash = false;

		port = random_sport(eng, qp, self, cls);
		for (unsigned i = 0; i < qp->npaths; i++)
			if (&qp->paths[i] != self && qp->paths[i].sport == port)
				clash = true;
		if (self->sport == port)
			clash = true;
		if (!clash)
			break;
	}
	return port;
}

/* A fresh start: the algorithm's window, and the repathing statistics. */
void restart_window(struct engine *eng, struct path *p)
{
	p->loss_ewma = p->ce_ewma = 0;
	p->rate_ewma = 0;
	p->rounds = 0;
	p->bad_rounds = 0;
	p->age = p->bad_age = 0;
	p->round_w = 1;
	p->round_end_psn = p->next_psn;
	p->round_rcv = p->round_ce = p->round_lost = p->round_acked = 0;
	p->round_min_rtt = 0;
	eng->cc->init(eng, p);
}

/*
 * A QP's paths draw their first ports at its first connection, for it and
 * for every QP created before it that has not connected yet, in creation
 * order (eng->undrawn): drawn by each QP as it connected, the next draws of
 * the engine's one generator went to whichever of the host's QPs finished
 * connecting first.  In the 64-host permutation a lost CONNECT packet
 * swapped the draws of one host's two QPs, so the run at 1 % loss took
 * other routes than the lossless run it is measured against (seed 114: one
 * flow's 8 paths joined the slowest flow's links, 4.9 % of the run; 9
 * hosts' paths on seed 123; issue #23, target D).  QPs that connect in the
 * order they were created draw exactly what they drew before (every
 * two-host run, and the unit tests' QPs, unchanged).
 */
void path_first_ports(struct engine *eng, struct qp *qp)
{
	while (list_linked(&qp->undrawn_node)) {
		struct qp *q = list_first(&eng->undrawn, struct qp, undrawn_node);

		for (unsigned i = 0; i < q->npaths; i++) {
			struct path *p = &q->paths[i];

			p->id = (uint8_t)i;
			p->sport = pick_sport(eng, q, p, -1);
		}
		list_del(&q->undrawn_node);
	}
}

/*
 * A new path's RTO before its first RTT sample: three times the handshake's
 * round trip (cm.c: the RTU's first try to its answer, the REP to the
 * proof of it), within [rto_min, rto_init], as TCP takes its SYN's (RFC
 * 6298 2.2 with R the handshake: SRTT R, RTTVAR R/2), else rto_init.  With
 * rto_init alone, where every path of a QP crossed a dead plane one way or
 * the other (routes hashed per direction: each works both ways one time in
 * four over 2 planes, one dead), nothing was ever heard on any of them and
 * each timeout and move waited rto_init (10 ms): 16 MiB over 2 planes, one
 * dead from the start, 2 or 4 paths, seeds 1-8: 0.04-0.18 of capacity in 5
 * runs of 8 (test_sim_deadplane test_dead_plane_new_paths_time_out).  The paths'
 * own routes may be slower than the handshake's: rto_min is the floor, as
 * for a sampled path, and the host's floors (path_rto) still apply.
 */
static uint64_t first_rto(const struct engine *eng, const struct qp *qp)
{
	if (!qp->hs_rtt)
		return eng->cfg.rto_init_ns;
	return min_u64(max_u64(3 * qp->hs_rtt, eng->cfg.rto_min_ns), eng->cfg.rto_init_ns);
}

void path_init(struct engine *eng, struct qp *qp, struct path *p, uint8_t id, uint64_t now)
{
	struct sb_entry *sb = p->sb;
	uint32_t mask = p->sb_mask;

	uint16_t first = qp->starts == 1 ? p->sport : 0;	/* path_first_ports' */

	*p = (struct path){ .sb = sb, .sb_mask = mask, .id = id };
	memset(sb, 0, (mask + 1) * sizeof(*sb));
	p->sport = first ? first : pick_sport(eng, qp, p, -1);
	p->next_psn = p->floor = p->psn_hw = qp->isn_psn;
	p->rto = first_rto(eng, qp);
	p->echo_lo = now;	/* nothing was sent on it before */
	p->classic = qp->mops->classic_window;
	restart_window(eng, p);
}

/*
 * The RTO never goes below what the host as a whole sees: with thousands of
 * QPs each path has few samples, and when the host is the bottleneck (a
 * CPU shared with applications, a worker waiting for its slice, ACKs queued
 * in our receive ring) every path's RTT grows at once.  The host estimate,
 * fed by every path, follows within a few samples; a path of its own would
 * time out first, spuriously.
 */
static uint64_t host_rto_floor(const struct engine *eng)
{
	return eng->host_srtt ? eng->host_srtt + 4 * eng->host_rttvar + eng->cfg.ack_delay_ns : 0;
}

/*
 * Nor below a quarter more than the largest RTT any ACK showed lately (this
 * window of RTT_MAX_WINDOW_NS and the last, so 30 to 60 s).  Where workers
 * share CPUs with other work, a worker at either end (or the softirq that
 * moves one plane's packets) is off its CPU for milliseconds now and then,
 * and a path's ACKs arrive late all at once while its siblings' keep coming:
 * a stall seen once will come again, and an RTO shorter than it fires
 * spuriously each time (at 1 QP on a loaded 2-core host: 200-300 RTOs in
 * 8 s, every resend a duplicate).  A real RTO then waits as long as the
 * stalls; a lost tail is still found by the probe and holes by the SACK,
 * neither of which waits for it.  Remembered for 4-8 s, stalls came back
 * as bursts of hundreds of RTOs every 8-18 s at 4,000 QPs: a host's stalls
 * recur on the scale of its other work, so the memory is long.
 */
#define RTT_MAX_WINDOW_NS	(30 * NSEC_PER_SEC)

static uint64_t host_rtt_max(const struct engine *eng)
{
	return max_u64(eng->rtt_max_cur, eng->rtt_max_prev);
}

uint64_t path_rto(const struct engine *eng, const struct path *p)
{
	uint64_t rto = max_u64(max_u64(p->rto, host_rto_floor(eng)), host_rtt_max(eng) * 5 / 4);

	for (uint32_t i = 0; i < p->backoff && rto < eng->cfg.rto_max_ns; i++)
		rto <<= 1;
	return min_u64(rto, eng->cfg.rto_max_ns);
}

/*
 * The path's smoothed RTT, or (no sample yet) the smallest of its siblings',
 * or, for a QP with nothing left to send, the host's: a QP that sends one
 * message per collective step to each partner may have no sample on any
 * path for a while, and its lone lost packet waited the RTO (issue #16).  A
 * QP with data waiting keeps its RTO: its paths' first packets are many, a
 * probe may exceed the window, and a bulk AllToAll's deep queues made the
 * host's RTT far too short for them (16 MiB, 64 hosts: 19% slower).
 */
static uint64_t probe_srtt(const struct engine *eng, const struct qp *qp, const struct path *p)
{
	uint64_t srtt = 0;

	if (p->srtt)
		return p->srtt;
	for (unsigned i = 0; i < qp->npaths; i++)
		if (qp->paths[i].srtt && (!srtt || qp->paths[i].srtt < srtt))
			srtt = qp->paths[i].srtt;
	return srtt || qp->snd_nxt != qp->dsn_alloc ? srtt : eng->host_srtt;
}

/*
 * A new path borrows its siblings' RTT: a lost first packet need not wait
 * an RTO.  The receiver's ACK delay counts only if the newest packet did
 * not ask for an immediate ACK (RFC 8985's PTO: 2 SRTT, plus the delayed
 * ACK's allowance where one can apply); a collective step's lone packet
 * always asks.  0: no RTT to go by, no probe.
 */
static uint64_t probe_timeout(const struct engine *eng, const struct qp *qp, struct path *p)
{
	uint64_t srtt = probe_srtt(eng, qp, p), pto;

	if (!srtt)
		return 0;
	pto = 2 * srtt + (sb_ent(p, p->next_psn - 1)->ack_req ? 0 : eng->cfg.ack_delay_ns);
	return pto > PTO_MIN_NS ? pto : PTO_MIN_NS;
}

/*
 * Up to TLP_MAX (internal.h) probes go out before the RTO, a probe time apart
 * (2, 4, 6 sRTTs after the last progress): one that is lost, or whose ACK
 * is, leaves the next to expose the tail.  Not spaced wider: where the
 * hosts' stalls inflate sRTT and RTTVAR (load 16 on 2 cores: sRTT 2-8 ms,
 * RTO 6-29 ms), probes spaced 2, 4, 8 sRTTs fitted one before the RTO.  With one, a path of a window of a packet or two
 * at 10 % loss both ways timed out on one lost tail in five: bench-fabric's
 * planes, where CE marks begin with any queue, hold windows that small,
 * and each RTO cost the path an RTO of silence, a probe time, a new port
 * and a window of one (85-290 RTOs per 4 s run, issue #27).  A probe carries
 * new data when there is some, so on a busy QP it costs nothing; a QP with
 * nothing new sends copies, at most TLP_MAX per RTO.
 */
/*
 * A path without an RTT sample of its own times its probe by a borrowed one
 * (probe_srtt), a guess: it probes once.  Probing again on the guess copied
 * a slow plane's first packet three times (test_skew_lossless: a 30 us plane
 * timing its probes by a 2 us sibling).
 *
 * A live path of a QP with new data to send that loses more than 1 packet in
 * 32 (its `loss` average) probes up to TLP_BULK times, as long as each is
 * before the RTO: those probes carry the new data, and each one that is answered saves
 * the path an RTO, a window of one and (with siblings alive) a move that
 * lands on a sibling's plane three times in four with as many paths as
 * planes (issue #27).  On bench-fabric's planes at 10 % loss both ways a
 * probe goes unanswered one time in five, and with three a path timed out
 * on one tail event in 150 or so: 2.8-3.7 RTOs per 10,000 data packets on
 * the quiet real fabric, 42-52 a 4 s run with 4 paths (mroc-sim run
 * --like-fabric-held, which has the real RTOs, seeds 1-10: 1.3-2.8 per
 * 10,000, 0.903-0.975 of capacity -> 0-0.35, 0.939-0.996).  A QP
 * with nothing new keeps TLP_MAX: its probes are copies.  So does a path
 * that loses little: there a silence is mostly a queue (a plane shared
 * after a failure), each probe is a packet beyond the window into it, and
 * five made mroc-sim bench's ROUTE_HASH failover lose up to 6 % after the
 * failure (seeds 1, 4 and 8 of 1-9), where the RTO itself was no sooner.
 */
unsigned path_probe_max(const struct qp *qp, const struct path *p)
{
	if (!p->srtt)
		return 1;
	return p->state == PATH_ACTIVE && qp->snd_nxt != qp->dsn_alloc &&
	       p->loss_ewma > FIX_ONE / 32 ? TLP_BULK : TLP_MAX;
}

/*
 * A path with no RTT sample of its own waits rto_init for its first RTO
 * (mrocd: 10 ms, five times rto_min): nothing says yet how long its route
 * takes.  Its route is dead, not slow, once its one probe is out
 * (path_probe_max), rto_min has passed since its timer was armed (and 5/4
 * of the largest RTT seen lately, path_rto's floor: a plane's softirq off
 * its CPU stalls one path while its siblings answer), a live sibling has an
 * RTT sample, the peer was heard since, and everything the QP sent before
 * the path's newest packet on its other live paths was answered
 * (older_unanswered: the silence is this path's alone, not a queue toward
 * the peer that its siblings wait in too).  It times out then (qp_ack.c
 * silent_alone, counted rto_silent_alone).  A plane silently dead when a
 * QP starts held that QP's packets on it for rto_init (mroc-sim run
 * --route path --plane-loss 1:1, 4 MiB: 20.3 ms, 0.017 of capacity; now
 * 0.52); a slow plane's first answer (30 us against a sibling's 2 us,
 * test_skew_lossless) comes far within rto_min.
 */
uint64_t path_silent_at(const struct engine *eng, const struct path *p)
{
	if (p->srtt || !p->probes)
		return UINT64_MAX;
	return path_silence_end(eng, p);
}

/* How long a silence is more than a queue's. */
uint64_t path_silence_floor(const struct engine *eng)
{
	return max_u64(eng->cfg.rto_min_ns, host_rtt_max(eng) * 5 / 4);
}

/* When a silence of p since its timer was armed is more than a queue's. */
uint64_t path_silence_end(const struct engine *eng, const struct path *p)
{
	return p->rto_armed + path_silence_floor(eng);
}

void path_arm_probe(const struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	uint64_t pto = probe_timeout(eng, qp, p);

	if (p->probes < path_probe_max(qp, p) && pto && now + pto < p->rto_at)
		path_set_rto_deadline(qp, p, now + pto);
	else
		path_set_rto_deadline(qp, p, min_u64(p->rto_at, path_silent_at(eng, p)));
}

/*
 * Arm the path's timer.  Before the RTO proper, a tail-loss probe goes out
 * after two smoothed RTTs without progress (and more, spaced wider, while
 * none is answered: path_arm_probe): its ACK exposes a lost tail that no
 * later packet would reveal (RACK-TLP's idea).
 */
void path_rearm(const struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	if (!p->inflight) {
		path_set_rto_deadline(qp, p, 0);
		return;
	}
	p->rto_armed = now;
	p->rto_at = now + path_rto(eng, p);
	path_arm_probe(eng, qp, p, now);
}

/*
 * Arm the timer of a path that had nothing in flight, for a packet leaving
 * now.  Its RTO runs from now, unless RACK emptied the path of packets no
 * ACK had answered (qp_ack.c rack_scan, silent_from) within two RTOs: it
 * then runs on from when they were armed, as a timer does that no ACK
 * restarted (RFC 6298 5.1).  Each lost packet goes again on a sibling, so
 * a path whose route died kept sending into it: RACK emptied it, its next
 * packet armed a fresh RTO, and it never timed out, so never moved, taking
 * its share of every collective step into the dead route (mroc-sim cluster
 * --verify --transport metaroce --seed 731149151 --hosts 32 --planes 4
 * --leaves 2 --spines 2 --op allreduce --bytes 1M --loss 0.001 --fail spine
 * --fail-at 269 --fail-plane 2: 3.70 x the time without the failure; now
 * 1.63 x).  An idle gap is no silence: after two RTOs the path starts
 * afresh.
 */
void path_rearm_send(const struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	uint64_t from = p->silent_from, rto = path_rto(eng, p);

	p->silent_from = 0;
	if (!from || now - from >= 2 * rto) {
		path_rearm(eng, qp, p, now);
		return;
	}
	p->rto_armed = from;
	p->rto_at = from + rto > now ? from + rto : now + 1;
	path_arm_probe(eng, qp, p, now);
}

/*
 * The RTO was armed with what the host knew then; by the time it comes due,
 * other paths' ACKs may show the RTT grew (a queue at the peer filling as
 * thousands of QPs' first packets open its window, or the peer's worker
 * slowing down) and path_rto now says later.  The timer then runs on to
 * that, as it would had it been armed now: it is never early against the
 * host's current estimate.  Re-arming every path at each rise of the host's
 * estimates would cost a walk over all of them; this costs one path_rto at
 * expiry.  A path with no RTT sample of its own depends on it most: its RTO
 * is rto_init or the host's floors at its first send, and nothing of its
 * own moves it before it fires (1 x 256 QPs through mrocd on a loaded
 * host: 216 of a run's 220 RTOs were on such paths, in bursts of tens
 * armed by one batch, all in the first half second of data while the
 * host's sRTT climbed from 1 to 57 ms).  The timer only moves later, so a
 * loss still times out by the estimate of the moment, and the backoff
 * doubles from it.
 */
bool path_rto_due(const struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	uint64_t at = p->rto_armed + path_rto(eng, p);

	if (at <= now)
		return true;
	p->rto_at = at;
	path_arm_probe(eng, qp, p, now);
	return false;
}

/*
 * p just took its first RTT sample: siblings that sent before any path had
 * one armed only their RTO; give them the tail-loss probe they could not
 * have then, 2 of p's RTTs and the ACK delay from now.  A part of a split
 * message of at most an mtu (one packet's bytes, posted while nothing else
 * waited for the NIC, in parts one to a path: they left together) that is
 * not copied (a copy already covers one loss; with the rule, a 64 B step's
 * slowest iteration at 1 % loss went from 17.1 to 31 us at the median) is
 * probed an RTT and a half after its stamp plus the message's time at the
 * link rate (the parts ahead of it at the NIC), and the ACK delay only if
 * it did not ask for an immediate ACK (probe_timeout's rule): its siblings
 * that left with it were answered within one RTT.  A 512 B AllReduce step
 * split over 8 new paths at 1 % loss (cluster sim, 32 ranks) waited for
 * its lost part 2 sRTT + 20 us from the first ACK, 32-45 us after the send
 * with sRTTs of 4-8 us: p50 64.3 us against 17.8 lossless, now 31.7
 * (issue #23).  Only such parts: the 2 KiB parts of the 16 KiB message a
 * 64-host AllToAll posts first on each host met the receivers' queues
 * building (the 1 MiB AllToAll at 1 % loss took 444-481 us at the median
 * of 15 seeds against 379), and without the ACK delay a path on a slower
 * plane than its lender (test_sim_loss test_skew_lossless: 12 and 30 us
 * planes lending a 2 us one's RTT) was probed needlessly.
 */
void path_lend_rtt(const struct engine *eng, struct qp *qp, const struct path *p,
		   uint64_t now)
{
	for (unsigned i = 0; i < qp->npaths; i++) {
		struct path *s = &qp->paths[i];
		const struct sb_entry *last;
		uint64_t at;

		if (s == p || s->srtt || s->probes || !s->inflight || !s->rto_deadline ||
		    s->rto_deadline != s->rto_at)
			continue;
		last = sb_ent(s, s->next_psn - 1);
		if (last->part)
			at = max_u64(now, last->sent + p->srtt + p->srtt / 2 +
					  (eng->cfg.link_rate_bps ?
					   (uint64_t)qp->npaths * last->bytes * 8 * NSEC_PER_SEC /
					   eng->cfg.link_rate_bps : 0)) +
			     (last->ack_req ? 0 : eng->cfg.ack_delay_ns);
		else
			at = now + 2 * p->srtt + eng->cfg.ack_delay_ns;
		if (at < s->rto_at)
			path_set_rto_deadline(qp, s, at);
	}
}

/* RFC 6298's smoothed RTT and its deviation (srtt 0: no sample yet). */
static void rtt_sample(uint64_t *srtt, uint64_t *rttvar, uint64_t rtt)
{
	uint64_t err;

	if (!*srtt) {
		*srtt = rtt;
		*rttvar = rtt / 2;
		return;
	}
	err = rtt > *srtt ? rtt - *srtt : *srtt - rtt;
	*rttvar = (3 * *rttvar + err) / 4;
	*srtt = (7 * *srtt + rtt) / 8;
}

/*
 * rtt: from the send to the engine's taking the ACK, less what the receiver
 * held it beyond its delayed-ACK allowance: the timers' RTT, hosts' stalls
 * included (they recur, and an RTO shorter than them fires spuriously).
 * fabric (<= rtt; 0: none, a stall): without the hosts' receive waits at
 * either end (qp_ack.c, fabric_rtt): the delay signal's, the path's minimum
 * and round minimum.
 */
void path_on_rtt(struct engine *eng, struct path *p, uint64_t rtt, uint64_t fabric)
{
	uint64_t var;

	if (!rtt)
		rtt = 1;
	if (fabric > rtt)
		fabric = rtt;
	rtt_sample(&p->srtt, &p->rttvar, rtt);
	rtt_sample(&eng->host_srtt, &eng->host_rttvar, rtt);
	if (fabric && (!p->min_rtt || fabric < p->min_rtt))
		p->min_rtt = fabric;
	if (fabric && (!p->round_min_rtt || fabric < p->round_min_rtt))
		p->round_min_rtt = fabric;
	var = max_u64(4 * p->rttvar, eng->cfg.ack_delay_ns);
	p->rto = p->srtt + var + eng->cfg.ack_delay_ns;
	if (p->rto < eng->cfg.rto_min_ns)
		p->rto = eng->cfg.rto_min_ns;
	if (p->rto > eng->cfg.rto_max_ns)
		p->rto = eng->cfg.rto_max_ns;
}

/* Whether p has a port it moved from that no sibling has moved to since. */
bool prev_port_free(const struct qp *qp, const struct path *p)
{
	if (!p->prev_sport)
		return false;
	for (unsigned i = 0; i < qp->npaths; i++)
		if (&qp->paths[i] != p && qp->paths[i].sport == p->prev_sport)
			return false;
	return true;
}

/*
 * The path's port changed: what it sent before went by another route, whose
 * order says nothing about the new one's (qp_ack.c ack_detect_loss).
 */
void route_changed(struct path *p)
{
	p->silent_from = p->settled_from = 0;	/* a new route's silence is its own */
	p->route_psn = p->next_psn;
	p->route_old = p->floor != p->next_psn;
	p->route_srtt = p->srtt;
}

/*
 * No scouts (left) for p: the round is over, answered, undone, or moved on.
 * The probe owed is taken back only where path_scout owed it for a scout:
 * one owed for the round's first probe (not sent yet: nothing outstanding
 * to copy) stays, as before scouts, across a move that is not a timeout.
 */
void scouts_clear(struct qp *qp, struct path *p)
{
	if (p->scout_next && p->scouts_sent < p->scouts)
		path_probe_owed(qp, p, false);
	p->scouts = p->scouts_sent = 0;
	p->scout_next = false;
}

/*
 * An RTO the next ACK showed needless (Eifel's response, RFC 4015): the
 * path was slow, not dead.  Only the first RTO since the last ACK is
 * undone: after a second one, the probe sent between them may be what the
 * ACK echoes.  The threshold goes back to the window before the RTO, and
 * the window to what is in flight plus the initial window, so the path
 * slow-starts back to where it was within a few RTTs rather than sending
 * a whole window at once (what the RTO declared lost left the flight).
 * What it declared lost and is not resent yet is taken back as ACKs show
 * it delivered (unlose, qp_ack.c), not resent as a duplicate; undos are
 * counted (rto_undone).  The backoff ends, the path carries data again
 * instead of probes only, and if the RTO moved it, it goes back to the
 * port the ACK came over (unless a sibling took that port since).
 */
static void rto_undo(struct engine *eng, struct qp *qp, struct path *p)
{
	p->ssthresh = (uint32_t)max_u64(p->ssthresh, p->undo_pwnd);
	p->pwnd = (uint32_t)min_u64(max_u64(p->pwnd, (uint64_t)p->inflight +
					    eng->cfg.init_pwnd_pkts * eng->seg_bytes),
				    p->ssthresh);
	p->backoff = 0;
	p->mute_rtos = 0;
	path_set_probe_at(qp, p, 0);
	scouts_clear(qp, p);	/* the port it had is the one */
	p->state = PATH_ACTIVE;
	p->unlose = true;	/* what it declared lost: qp_ack.c takes back what ACKs show delivered */
	p->undo_rate = 0;	/* the move, if any, is undone here: nothing left to judge */
	eng->st.c[EC_RTO_UNDONE]++;
	if (p->repath_why != ENGINE_REPATH_TIMEOUT || p->last_repath != p->rto_fired_at)
		return;
	if (prev_port_free(qp, p)) {
		route_changed(p);
		p->sport = p->prev_sport;
	}
}

/*
 * A round trip for the host's largest lately (path_rto's floor): every
 * ACK's echo with news (path_on_echo), and each handshake's (cm.c): 2,000
 * QPs starting at once on a busy 2-core host answered their first packets
 * late, all together, and their paths' first RTO (first_rto) fired at
 * rto_min where the handshakes before them had already taken as long.
 */
void path_note_rtt_max(struct engine *eng, uint64_t rtt, uint64_t now)
{
	if (rtt > eng->cfg.rto_max_ns)
		rtt = eng->cfg.rto_max_ns;	/* ancient: never hold timers longer */
	if (now >= eng->rtt_max_until) {
		eng->rtt_max_prev = now - eng->rtt_max_until < RTT_MAX_WINDOW_NS ? eng->rtt_max_cur : 0;
		eng->rtt_max_cur = 0;
		eng->rtt_max_until = now + RTT_MAX_WINDOW_NS;
	}
	if (rtt > eng->rtt_max_cur)
		eng->rtt_max_cur = rtt;
}

/*
 * Every ACK's echo that has news (qp_rx_ack: PSNs acknowledged, packets
 * received or a NAK), also one that acknowledges nothing new (the packets
 * it answers were declared lost by an RTO while the peer was stalled; it
 * still reports them received): the late ones are exactly the samples that
 * show a stall.  An ACK without news is not asked: a replay's echo is as
 * old as the ACK, and it held every path's RTO at rto_max (s20-cc20).  It also settles
 * whether the path's last RTO was needed (Eifel's test, RFC 3522): an ACK
 * that echoes a packet sent before the RTO shows the peer had it, and the
 * RTO is undone (rto_undo).
 *
 * An echo is a send time of ours: one from the future, or from before
 * anything the path still tracks (its start, or the newest acknowledged
 * packet it has let go of), is not: refused (false), no RTT sample, no
 * stall.  One that may name two times (that floor 4.29 s or more back) is
 * read as the later (echo_sent) unless it is near known's stamp.  A RoCEv2 NAK from a path that had received nothing
 * echoed the receiver's own clock, and held every path's RTO near rto_max
 * for a minute (issue #23, finding 4); any peer could send one.  Except
 * late: qp_ack.c rack_late found it the send time of a packet the path
 * declared lost, which the floor has passed.  *sent: the send time it
 * names (echo_sent), when true.
 *
 * known: the send time of the newest packet the ACK acknowledged (0:
 * none).  An echo up to 2.15 s after it names a time that far after it:
 * the echo is the stamp of the receiver's newest packet, that one or one
 * near it, plus what the receiver held the ACK past its ACK delay.  32 bits
 * alone name the latest time with those bits, and an ACK 4.29 s or more on
 * its way (a PFC pause, a fixed timeout of seconds) read as 4.29 s
 * shorter: the RTO and the host's RTT maximum learnt 0.7 s for 5 s
 * (test_engine_rto_max test_answered_late_5s, _held_5s).  The two differ
 * only there.
 */
bool path_on_echo(struct engine *eng, struct qp *qp, struct path *p, uint32_t ts_echo,
		  uint64_t now, bool late, uint64_t known, uint64_t *sent)
{
	uint64_t lo = late ? p->rack_lo : p->echo_lo;
	uint32_t after = ts_echo - (uint32_t)known;
	uint64_t rtt;

	if (known && after < (1u << 31) && known + after >= lo && known + after <= now)
		*sent = known + after;
	else if (!echo_sent(now, ts_echo, lo, sent)) {
		/*
		 * A look's echo (path_look_sample) come after the path's own
		 * newer packets: a send time of ours from another route, no
		 * sample (test_sim_transfer test_own_clocks: 1 such echo).
		 */
		if (!p->look_ts || ts_echo != p->look_ts)
			eng->st.c[EC_RX_BAD_ECHO]++;
		return false;
	}
	rtt = now - *sent;
	path_note_rtt_max(eng, rtt, now);
	if (p->rto_fired_at) {
		/*
		 * In engine time, not as 32-bit stamps: a path's last RTO stays
		 * here until an ACK of it comes, and after an idle gap of
		 * 2.15-4.29 s (mod 4.29 s) a probe sent long after the RTO
		 * compared as sent before it, and a needed RTO was undone.
		 */
		if (now - rtt < p->rto_fired_at) {
			eng->st.c[EC_RTO_SPURIOUS]++;
			if (p->undo_ok && !p->classic)
				rto_undo(eng, qp, p);
		}
		p->rto_fired_at = 0;
		p->undo_ok = false;
	}
	return true;
}

static uint32_t frac(uint32_t num, uint32_t den)
{
	if (!den)
		return 0;
	if (num >= den)
		return FIX_ONE;
	return (uint32_t)(((uint64_t)num << 20) / den);
}

static uint32_t ewma(uint32_t avg, uint32_t sample)
{
	return avg - (avg >> EWMA_SHIFT) + (sample >> EWMA_SHIFT);
}

/*
 * The CE fraction's average: like the rate's (rate_avg), the plain mean of
 * the path's first MATURE_ROUNDS rounds, then the EWMA.  An EWMA from zero
 * held 64 % of a path's CE fraction when it matured: a path that had just
 * moved or gone back pulled its siblings' mean down, and a sibling marking
 * as much as the rest stood 0.3 above it (bench-fabric at 1 % loss, 4
 * paths: 8-18 "ce" moves a run, 0-1 lossless; issue #27).  Not the loss
 * fraction's: a move's first rounds lose to reordering between the routes,
 * and at full weight those losses moved paths again (hashed lossless
 * planes in test_sim_cc: 2-4 "loss" moves a run, none with the EWMA).
 */
static uint32_t frac_avg(uint32_t avg, uint32_t sample, uint32_t n)
{
	if (n < MATURE_ROUNDS)
		return (uint32_t)(((uint64_t)avg * n + sample) / (n + 1));
	return ewma(avg, sample);
}

/*
 * The delivery rate: the plain mean of a path's first MATURE_ROUNDS rounds,
 * then the EWMA.  Seeded by its first round alone, the EWMA still held a
 * third of that round when the path was first judged, and a path whose
 * first round after a move was slow looked slow and moved again ~18
 * rounds later (issue #27).
 */
static uint64_t rate_avg(uint64_t avg, uint64_t sample, uint32_t n)
{
	if (n < MATURE_ROUNDS)
		return (avg * n + sample) / (n + 1);
	return avg - (avg >> EWMA_SHIFT) + (sample >> EWMA_SHIFT);
}

/* The QP's base RTT: its paths' least minimum RTT (0: none sampled yet). */
static uint64_t qp_base_rtt(const struct qp *qp)
{
	uint64_t base = 0;

	for (unsigned j = 0; j < qp->npaths; j++) {
		uint64_t m = qp->paths[j].min_rtt;

		if (m && (!base || m < base))
			base = m;
	}
	return base;
}

/*
 * What a round of len ns counts for in the repath judgments' round counts
 * (age: MATURE_ROUNDS; bad_age: SLOW_ROUNDS).  Counted in rounds alone, a
 * path is judged later the longer its rounds, and a round is long exactly
 * where the path is bad: under a 64-host permutation's queues a round is
 * 50-100 us against a base RTT of ~10 us, so a QP's paths were first
 * judged ~1 ms into a 2.5 ms run and a slow one moved ~0.8 ms after that
 * (issue #23 target D, s22-tail22 section 2).  With repath_round_rtts = N
 * a round counts as its length in N base RTTs of the QP (the least minimum
 * RTT of its paths: a path's own minimum on a route that never drained is
 * its queue's), so a path is judged after about as much time queued as
 * clear.  At least 1 (a clear path's rounds count as before), at most
 * ROUND_W_MAX: a rate is still the mean of a few rounds, and a round that
 * spans an idle gap is not that much evidence.  0 = 1 a round.
 */
static uint8_t round_weight(const struct engine *eng, const struct qp *qp, uint64_t len)
{
	uint64_t unit = eng->cfg.repath_round_rtts * qp_base_rtt(qp);

	if (!unit)
		return 1;
	return (uint8_t)min_u64(max_u64(len / unit, 1), ROUND_W_MAX);
}

/* End of a round (about one RTT): congestion control, repath statistics. */
/*
 * The loss fraction for the `loss` move, smoothed per packet sent (weight
 * 1/LOSS_PKTS each, a round's packets at once), not per round: a round of
 * a bench-fabric path is 3-4 packets, and per round (1/16) one loss in it
 * raised the average by 2 %, three in 16 rounds took it over the 5 % line
 * with 1 % random loss on every plane (mroc-sim run --like-fabric-busy
 * --paths 4 --loss 0.01: 3-9 `loss` moves in 4 s, each from a path at
 * 5-8 % against siblings at 0-0.4 %, and a sibling's plane shared after
 * it).  Over 256 packets 1 % random loss crosses it never; a route losing
 * 30 % does within some 50 packets.
 */
#define LOSS_PKTS	256

static uint32_t loss_avg(uint32_t avg, uint32_t lost, uint32_t sent)
{
	int64_t d = (int64_t)frac(lost, sent) - avg;

	return (uint32_t)((int64_t)avg + d * (sent < LOSS_PKTS / 4 ? sent : LOSS_PKTS / 4) / LOSS_PKTS);
}

static void end_round(struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	uint32_t f = frac(p->round_ce, p->round_rcv);
	uint32_t sent = p->round_rcv + p->round_lost;

	eng->cc->on_round(eng, p, f);
	if (sent) {
		p->loss_ewma = loss_avg(p->loss_ewma, p->round_lost, sent);
		p->ce_ewma = frac_avg(p->ce_ewma, f, p->rounds);
	}
	if (p->round_start && now > p->round_start) {
		uint64_t rate = (uint64_t)p->round_acked * 8 * NSEC_PER_SEC / (now - p->round_start);

		p->rate_ewma = rate_avg(p->rate_ewma, rate, p->rounds);
		p->rounds++;
		p->round_w = round_weight(eng, qp, now - p->round_start);
		p->age = (uint8_t)min_u64((uint64_t)p->age + p->round_w, UINT8_MAX);
	}
	p->round_start = now;
	if (p->look == LOOK_NEXT)
		p->look = LOOK_WANT;
	p->round_had_ce = p->round_ce != 0;
	p->prev_ce_frac = f;
	p->flight_max_prev = p->flight_max;
	p->flight_max = 0;
	p->round_end_psn = p->next_psn;
	p->round_rcv = p->round_ce = p->round_lost = p->round_acked = 0;
	p->round_min_rtt = 0;
	p->cut_this_round = false;
}

void path_on_ack(struct engine *eng, struct qp *qp, struct path *p, uint32_t acked_bytes,
		 uint32_t rcv_delta, uint32_t ce_delta, uint32_t acked_psn, uint64_t now)
{
	p->round_rcv += rcv_delta;
	p->round_ce += ce_delta;
	p->round_acked += acked_bytes;
	eng->cc->on_ack(eng, p, acked_bytes, ce_delta);
	if (seq_le(p->round_end_psn, acked_psn)) {
		end_round(eng, qp, p, now);
		path_check_siblings(eng, qp, p, now);
	}
}

void path_on_loss(struct engine *eng, struct qp *qp, struct path *p, uint32_t psn, uint32_t nlost)
{
	(void)qp;
	p->round_lost += nlost;
	p->st_lost += nlost;
	eng->st.c[EC_LOST] += nlost;
	eng->cc->on_loss(eng, p, psn);
}
