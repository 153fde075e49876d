// SPDX-License-Identifier: MIT
/*
 * One path of a QP, sender side: RTT estimator, RTO, the rounds and counts
 * congestion control acts on (the window itself: cc.h), and repathing.
 * The scoreboard itself is walked by qp_ack.c; this file owns the numbers.
 */
#include <string.h>

#include "internal.h"

#define EWMA_SHIFT	4		/* repath EWMAs: weight 1/16 per round */
#define BAD_ROUNDS	3		/* rounds a path must look bad before it moves */
#define SLOW_ROUNDS	16		/* ... when only its delivery rate is low */
#define MATURE_ROUNDS	16		/* rounds before a path's delivery rate is trusted */
#define ROUND_W_MAX	4		/* the most one round counts for (round_weight) */
#define EXPLORE_NS	(625 * NSEC_PER_MSEC)	/* / npaths: a QP's exploratory looks at most */
#define TRIAL_FREE	4		/* trial moves in a row that may gain nothing before ... */
#define TRIAL_WAIT_NS	(100 * NSEC_PER_MSEC)	/* ... the QP's next waits this, x8 after each more */
#define TRIAL_FAILS_MAX	(TRIAL_FREE + 4)	/* ... up to 100 ms << 9: 51 s */
#define LOOK_CLEAR	4		/* looks in a row that must find a route clear to move there */
#define LOOK_TRIES	(2 * LOOK_CLEAR)	/* ... of at most this many sent (lost ones tell nothing) */
#define SPREAD_FREE	4		/* "spread" tries in a row that may gain nothing before ... */
#define SPREAD_FAILS_MAX	(SPREAD_FREE + 7)	/* ... the next waits 1, 2, 4 ... 64 trials */

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
static uint16_t pick_sport(struct engine *eng, struct qp *qp, const struct path *self, int cls)
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
static void restart_window(struct engine *eng, struct path *p)
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
 * runs of 8 (test_sim_cc test_dead_plane_new_paths_time_out).  The paths'
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
 * No probe time below the timer wheel's tick (timer.c): a path waiting for an
 * older packet's answer re-arms a probe time on (qp_timers), and on RTTs of
 * nanoseconds (echoes that claim them: fuzz_engine_rx's slowest inputs) it
 * woke every 2 ns until its RTO, 800,000 times in 1.7 ms.  No real fabric's
 * probe time is that short.
 */
#define PTO_MIN_NS	1024

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
			at = max_u64(now, sent_at(now, last->ts) + p->srtt + p->srtt / 2 +
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
static bool prev_port_free(const struct qp *qp, const struct path *p)
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
static void route_changed(struct path *p)
{
	p->silent_from = p->settled_from = 0;	/* a new route's silence is its own */
	p->route_psn = p->next_psn;
	p->route_old = p->floor != p->next_psn;
	p->route_srtt = p->srtt;
}

/* A move taken back (timeout_move_back, trial_judged): the old route's RTT is learnt anew. */
static void back_to_prev_port(struct path *p)
{
	route_changed(p);
	p->sport = p->prev_sport;
	p->prev_sport = 0;
	p->min_rtt = 0;
}

/*
 * No scouts (left) for p: the round is over, answered, undone, or moved on.
 * The probe owed is taken back only where path_scout owed it for a scout:
 * one owed for the round's first probe (not sent yet: nothing outstanding
 * to copy) stays, as before scouts, across a move that is not a timeout.
 */
static void scouts_clear(struct qp *qp, struct path *p)
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
 * packet it has let go of), is not, and is refused (false): no RTT
 * sample, no stall.  A RoCEv2 NAK from a path that had received nothing
 * echoed the receiver's own clock, and held every path's RTO near rto_max
 * for a minute (issue #23, finding 4); any peer could send one.  Except
 * late: qp_ack.c rack_late found it the send time of a packet the path
 * declared lost, which the floor has passed.
 */
bool path_on_echo(struct engine *eng, struct qp *qp, struct path *p, uint32_t ts_echo,
		  uint64_t now, bool late)
{
	uint64_t rtt = (uint32_t)((uint32_t)now - ts_echo);

	if ((int32_t)((uint32_t)now - ts_echo) < 0 || (now - rtt < p->echo_lo && !late)) {
		/*
		 * A look's echo (path_look_sample) come after the path's own
		 * newer packets: a send time of ours from another route, no
		 * sample (test_sim_transfer test_own_clocks: 1 such echo).
		 */
		if (!p->look_ts || ts_echo != p->look_ts)
			eng->st.c[EC_RX_BAD_ECHO]++;
		return false;
	}
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

/* Whether a path's rates are trusted: MATURE_ROUNDS of its rounds (round_weight) behind it. */
static bool path_mature(const struct path *p)
{
	return p->age >= MATURE_ROUNDS;
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

/*
 * Where routes hash per direction, a new port works both ways one time in
 * four when one plane of two is dead (its data or its ACKs cross it), and a
 * QP of few paths whose every path timed out waits an RTO, backed off after
 * a few, between draws: 8 hashed senders of 3 paths each over 2 planes,
 * one dead (mroc-sim incast --planes 2 --paths 3 --route hash --plane-loss
 * 1:1 --senders 8 --bytes 64K --seed 25), one took 1.33 s for its 64 KiB,
 * 24 RTOs; a QP of one path delivered 0.09-0.5 of one plane.  With no live
 * path left the QP sends its probes by SCOUT_PORTS ports in all at each
 * timeout (each path its new port and the scouts of scouts_for), and the
 * first ACK to come back names a port that works both ways (its echo: the
 * receiver answers by the port of the packet it last had; matched by send
 * time, path_scout_answered).  Only for a QP of up to SCOUT_PORTS / 2
 * paths (with more its own moves draw as many ports), and only where
 * ports are routes: not with the driver placing paths by id (path_ports)
 * without ECMP behind it, which the engine cannot tell, so scouts there
 * are probes more, bounded as every probe is by the RTO and its backoff.
 *
 * A path that timed out beside live siblings sends SCOUT_LIVE scouts with
 * its probe: its new port lands on a dead spine again as often as the old
 * one did (one time in two with two spines a plane), each time an RTO more,
 * and a collective's ring step waits for its slowest QP.  A spine dying
 * under a 16-host AllReduce of 2-path QPs (mroc-sim cluster --hosts 16
 * --planes 4 --leaves 4 --spines 2 --op allreduce --bytes 4M --loss 0.001
 * --paths 2 --fail spine --fail-at 11 --fail-plane 0, seeds 1-8 and
 * 23434278): 1.29-2.18 x the time without the failure and 20-39 RTOs,
 * 1.19-1.70 x and 12-22 RTOs with them.
 */
#define SCOUT_PORTS	8
#define SCOUT_LIVE	2

static uint8_t scouts_for(const struct engine *eng, const struct qp *qp)
{
	unsigned n;

	if (!eng->cfg.repath || !qp->mops->repath || !qp->mops->tail_probe ||
	    qp->npaths > SCOUT_PORTS / 2)
		return 0;
	n = (SCOUT_PORTS + qp->npaths - 1) / qp->npaths - 1;
	for (unsigned i = 0; i < qp->npaths; i++)
		if (qp->paths[i].state == PATH_ACTIVE)
			n = n < SCOUT_LIVE ? n : SCOUT_LIVE;
	return (uint8_t)(n < SCOUT_MAX ? n : SCOUT_MAX);
}

/*
 * The port of the probe qp_tx sends now for timed-out path p: its own for
 * the round's first, then a new one for each scout, recorded with its send
 * time (the ACK's echo names it).  Re-owes the probe while scouts are left.
 */
uint16_t path_scout(struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	uint16_t port = p->sport;

	if (p->scout_next && p->scouts_sent < p->scouts && p->scouts_sent < SCOUT_MAX) {
		port = pick_sport(eng, qp, p, -1);
		p->scout_sport[p->scouts_sent] = port;
		p->scout_ts[p->scouts_sent] = (uint32_t)now;
		p->scouts_sent++;
		eng->st.c[EC_TX_SCOUT]++;
	}
	p->scout_next = true;
	if (p->scouts_sent < p->scouts)
		path_probe_owed(qp, p, true);
	return port;
}

/*
 * An ACK with news revives timed-out path p: if its echo (echo_ok: one of
 * our send times, path_on_echo) is a scout's send time or later (the
 * receiver's answer echoes the last packet it had and goes back by that
 * packet's port), the newest such scout's port worked both ways, and the
 * path moves there.  An echo older than every scout is the path's own
 * port's answer.
 */
void path_scout_answered(struct engine *eng, struct qp *qp, struct path *p, bool echo_ok,
			 uint32_t ts_echo)
{
	int best = -1;

	for (int i = 0; echo_ok && i < p->scouts_sent; i++)
		if ((int32_t)(ts_echo - p->scout_ts[i]) >= 0 &&
		    (best < 0 || (int32_t)(p->scout_ts[i] - p->scout_ts[best]) > 0))
			best = i;
	if (best >= 0 && p->scout_sport[best] != p->sport) {
		/*
		 * prev_sport stays the port the timeout left: the one drawn then
		 * never answered, and a move back (timeout_move_back) must judge
		 * the route it came from (a live sibling's path went back to a
		 * drawn port on a dead plane, test_sim_cc
		 * test_timeout_move_not_back_to_dead_plane).
		 */
		route_changed(p);
		p->sport = p->scout_sport[best];
		p->min_rtt = 0;
		eng->st.c[EC_SCOUT_MOVE]++;
	}
	scouts_clear(qp, p);
}

void path_on_rto(struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	p->st_timeouts++;
	eng->st.c[EC_RTO]++;
	/* No ACK on the path yet: armed on rto_init or the host's floors alone. */
	if (!p->srtt)
		eng->st.c[EC_RTO_UNSAMPLED]++;
	/*
	 * Nothing from the peer host (on any QP or path) since the timer was
	 * armed: with many QPs to it, a host off the CPU or cut off rather than
	 * a lost path (every path to it with packets in flight times out at
	 * once).  A lone QP whose only unanswered packets were on the lost path
	 * looks the same: the peer had nothing left to answer.
	 */
	if (qp_heard(qp) <= p->rto_armed)
		eng->st.c[EC_RTO_PEER_SILENT]++;
	/* The first RTO since the last ACK can be undone (rto_undo), a second cannot. */
	p->undo_ok = !p->rto_fired_at;
	p->undo_pwnd = p->pwnd;
	p->rto_fired_at = now ? now : 1;
	p->backoff++;
	if (p->mute_rtos < UINT8_MAX)
		p->mute_rtos++;
	eng->cc->on_rto(eng, p);
	if (p->state != PATH_TIMEDOUT)
		p->timedout_at = now;
	p->state = PATH_TIMEDOUT;
	if (eng->cfg.repath && qp->mops->repath)
		path_repath(eng, qp, p, now, ENGINE_REPATH_TIMEOUT);
	p->scouts = scouts_for(eng, qp);
	/*
	 * Until an ACK shows it alive, the path carries only probe copies.  A
	 * move that kept no backoff (a sibling alive, or the peer heard since:
	 * repath) probes its new port at once: a route died, not the peer, and
	 * the probe's ACK tells within an RTT whether the new one works.  It
	 * waited an RTO for its first probe (5 ms on bench-fabric's planes,
	 * 15-25 RTTs) before it could carry data again, and as long again
	 * before it left a dead plane it had landed on.  A copy, so cheap.
	 * mroc-sim run --like-fabric-held --loss 0.1, 4 paths, seeds 1-10:
	 * capacity mean 0.974 -> 0.981, RTOs 18 -> 13, moves 44 -> 29 (with
	 * qp_tx.c's re-owed probe turns 0.988, 11, 29).  Otherwise (no move,
	 * or the peer silent) one RTO, backed off.
	 */
	if (p->backoff || !eng->cfg.repath || !qp->mops->repath || !qp->mops->tail_probe) {
		path_set_probe_at(qp, p, now + path_rto(eng, p));
		return;
	}
	path_set_probe_at(qp, p, 0);
	path_probe_owed(qp, p, true);
}

static uint64_t explore_ns(const struct qp *qp)
{
	return EXPLORE_NS / qp->npaths;
}

/* EC_REPATH_<why> counts the moves of each reason, in the reasons' order. */
static_assert(EC_REPATH_PORT - EC_REPATH_TIMEOUT == ENGINE_REPATH_PORT - ENGINE_REPATH_TIMEOUT,
	      "enum engine_counter's repath reasons follow enum engine_repath_why");

/*
 * A timeout move leaves a port that may be dead (a blackholed plane, a
 * cable, a NIC port the daemon counts down) or alive (random loss took a
 * tail, its probes and their ACKs).  Both look alike at the RTO: silence
 * since the last ACK.  What tells them apart comes later, in the peer's
 * count of packets received on the path (rcv_pkts, every ACK): a dead
 * route took none of the packets sent once the path had been silent for
 * two sRTTs (its tail-loss probes, from quiet_psn on), a live one took
 * most.  Paths are FIFO, so the peer's count at the last ACK (last_rcv_pkts)
 * holds every packet it will ever get up to the highest PSN acknowledged;
 * of those sent after it and before quiet_psn it may have had any number
 * (their ACKs lost, or sent after the route died), and of the new port's
 * no more than up to the highest PSN an ACK shows.  A count above all that
 * proves a packet from quiet_psn on got through: the old route was alive
 * (path_note_left).  Before p leaves: p->next_psn is the new port's first.
 */
static void note_leaving(const struct qp *qp, struct path *p)
{
	uint32_t known = p->any_acked ? p->high_acked + 1 : qp->isn_psn;
	uint32_t quiet = p->probes ? p->quiet_psn : p->next_psn;	/* no probe: nothing after */

	p->left_psn = p->next_psn;
	p->left_rcv = (p->ack_seen ? p->last_rcv_pkts : 0) +
		      (seq_lt(known, quiet) ? quiet - known : 0);
	p->left_alive = false;
	p->route_probe = ROUTE_PROBE_NONE;
}

void path_note_left(struct path *p, const struct mroc_ack_hdr *a)
{
	int last = sack_bytes_last(a->sack);
	uint32_t hi = last >= 0 ? a->cum_psn + 1 + (uint32_t)last : a->cum_psn - 1;
	uint32_t newer = seq_le(p->left_psn, hi) ? hi - p->left_psn + 1 : 0;

	if ((int32_t)(a->rcv_pkts - p->left_rcv - newer) > 0)
		p->left_alive = true;
}

/*
 * The backoff a timed-out path keeps across its moves although a sibling is
 * alive or the peer was heard (repath): none for its first MUTE_MOVES_FREE
 * RTOs without an ACK, then doubling, up to MUTE_BACKOFF_MAX.  Each move
 * probes its new port at once and the next RTO comes at the path's RTO,
 * which is cheap while a probe is small beside the RTO; a path that can
 * never leave a dead plane (a path pinned to a plane, a dead NIC port)
 * probed for good, and several such paths' probes, which go before data,
 * filled a slow NIC: 1 Gbit/s against 4 planes of 100-400 Gbit/s, MTU
 * 8192 (66 us a packet against an RTO of ~240 us), a plane blackholed under
 * 16 pinned paths: 15,000 probes in 1 s and the transfer's last 17 packets
 * never sent; at MTU 1500 0.35 of the NIC (test_sim_cc
 * test_dead_plane_probes_leave_room: now 0.80-0.94).  A route that works
 * is found as soon as before in the common case (a hashed move lands on
 * one dead plane of four three times running one time in 64), and a plane
 * that comes back within MUTE_BACKOFF_MAX doublings of the RTO.
 */
#define MUTE_MOVES_FREE		3
#define MUTE_BACKOFF_MAX	4

static uint32_t mute_backoff(const struct path *p)
{
	return p->mute_rtos > MUTE_MOVES_FREE ?
		       (uint32_t)min_u64(p->mute_rtos - MUTE_MOVES_FREE, MUTE_BACKOFF_MAX) : 0;
}

/* A move to port (0: a new source port of class cls, random_sport, or any: -1). */
static void repath(struct engine *eng, struct qp *qp, struct path *p, uint64_t now,
		   enum engine_repath_why why, int cls, uint16_t port)
{
	uint32_t backoff = p->backoff, pwnd = p->pwnd, ssthresh = p->ssthresh;

	route_changed(p);
	p->prev_sport = p->sport;
	p->repath_why = (uint8_t)why;
	p->sport = port ? port : pick_sport(eng, qp, p, cls);
	p->look = LOOK_NONE;	/* a look was at the route it had */
	scouts_clear(qp, p);	/* scouts were the old round's */
	p->st_repaths++;
	eng->st.c[EC_REPATH]++;
	if (why != ENGINE_REPATH_NONE && why < ENGINE_REPATH__COUNT) {
		p->st_repath_why[why]++;
		eng->st.c[EC_REPATH_TIMEOUT + (why - ENGINE_REPATH_TIMEOUT)]++;
	}
	p->last_repath = now;
	p->undo_rate = why == ENGINE_REPATH_TIMEOUT ? p->rate_ewma : 0;
	p->trial = false;	/* path_check_siblings and explore start one (trial_start) */
	if (p->undo_rate)
		note_leaving(qp, p);
	qp->explore_at = now + explore_ns(qp);	/* any move explores */
	p->min_rtt = 0;
	restart_window(eng, p);
	/*
	 * Moved for congestion (not a timeout): keep the window, as PLB does; a
	 * slow start from scratch costs many round trips on a deep-buffered
	 * route, and the new route's own signals trim it.
	 */
	if (why != ENGINE_REPATH_TIMEOUT && why != ENGINE_REPATH_KEEPALIVE && !backoff) {
		p->pwnd = pwnd;
		p->ssthresh = ssthresh;
	}
	/*
	 * A timed-out path starts small.  A new route deserves a fresh RTO
	 * while a sibling is alive (probes are copies, so probing often costs
	 * little), or once the peer host was heard from since the path timed
	 * out (on another QP, or a keepalive's answer on another route): the
	 * route died, not the peer, and a QP of one path must try new ports at
	 * its RTO, not a backed-off one (1 path over 2 planes, one dead: a port
	 * works both ways one time in four, and 3 s of doubling RTOs gave it
	 * some 9 tries).  While nothing is heard the peer or the whole fabric
	 * is dead, and the backoff stays so a long outage is not probed at the
	 * RTO floor.
	 */
	if (backoff)
		p->pwnd = cc_pwnd_min(eng);
	for (unsigned i = 0; i < qp->npaths; i++)
		if (&qp->paths[i] != p && qp->paths[i].state == PATH_ACTIVE)
			backoff = min_u64(backoff, mute_backoff(p));
	if (p->state == PATH_TIMEDOUT && qp_heard(qp) > p->timedout_at)
		backoff = min_u64(backoff, mute_backoff(p));
	p->backoff = backoff;
	p->probes = 0;
}

void path_repath(struct engine *eng, struct qp *qp, struct path *p, uint64_t now,
		 enum engine_repath_why why)
{
	repath(eng, qp, p, now, why, -1, 0);
}

/* Paths of qp whose source port is of class cls (sport mod c). */
static unsigned class_paths(const struct qp *qp, uint32_t c, uint32_t cls)
{
	unsigned n = 0;

	for (unsigned i = 0; i < qp->npaths; i++)
		n += qp->paths[i].sport % c == cls;
	return n;
}

/* Of two paths, the one to move onto a port that came back: a live one, delivering least. */
static bool better_to_move(const struct path *p, const struct path *than)
{
	if ((p->state == PATH_ACTIVE) != (than->state == PATH_ACTIVE))
		return p->state == PATH_ACTIVE;
	return p->rate_ewma < than->rate_ewma;
}

/*
 * Port cls came back (engine_port_up): while it was down, its paths left by
 * the others and those that moved meanwhile (timeouts, slow rounds) drew
 * their ports at random, so the QP may have few or none of class cls left,
 * and no rule of this file moves a path onto a port because it is idle
 * (explore: one path per EXPLORE_NS / npaths, to any port).  Paths move
 * from the fullest class onto cls until it has its share (npaths / c), the
 * live one delivering least of that class first (a timed-out one would
 * bring the port nothing until an ACK revives it), keeping their windows
 * (a move that is not a timeout).  Those of class cls that stay now leave by a
 * route new to them: their minimum RTT, the delay signal's base, was the
 * other port's, and is learnt anew (cc_window.c).
 */
void path_port_up(struct engine *eng, struct qp *qp, uint32_t cls, uint64_t now)
{
	uint32_t c = eng->cfg.sport_classes;
	unsigned share = qp->npaths / c;

	for (unsigned i = 0; i < qp->npaths; i++)
		if (qp->paths[i].sport % c == cls)
			qp->paths[i].min_rtt = 0;
	if (!eng->cfg.repath || !qp->mops->repath)
		return;
	while (class_paths(qp, c, cls) < share) {
		struct path *move = NULL;
		unsigned most = 0;

		/* The fullest class other than cls has more than its share (the sum is npaths). */
		for (unsigned i = 0; i < qp->npaths; i++) {
			struct path *p = &qp->paths[i];
			unsigned n = class_paths(qp, c, p->sport % c);

			if (p->sport % c == cls || n < most)
				continue;
			if (n > most || better_to_move(p, move))
				move = p;
			most = n;
		}
		if (!move || most <= share)
			return;
		repath(eng, qp, move, now, ENGINE_REPATH_PORT, (int)cls, 0);
		if (move->sport % c != cls)
			return;		/* no port of that class in [sport_min, sport_max] */
	}
}

/*
 * Paths that collide evenly (two on one link, another link idle) deliver
 * alike, so comparing siblings cannot see it.  Where the link rate is what
 * the fabric can carry for us (a NIC port per plane; repath_spread): every
 * path mature and congested, no rate hint holding the QP back (then the
 * receiver is the bottleneck), and the QP delivering under 2/3 of the link
 * rate, some path should try another route: it looks first, and the move
 * is a trial the QP's rate judges (path_check_siblings).  Off by default:
 * where the bottleneck is past the NIC (an oversubscribed fabric; veth's
 * 10 Gbit/s in front of 250 Mbit/s planes) it moved paths without end
 * when moves were neither looked at first nor judged.
 */
static bool underused(const struct engine *eng, const struct qp *qp, uint64_t rate, unsigned n)
{
	if (!eng->cfg.repath_spread || !eng->cfg.link_rate_bps || qp->hint_mbps || n < qp->npaths)
		return false;
	for (unsigned j = 0; j < qp->npaths; j++)
		if (!qp->paths[j].ce_ewma && !qp->paths[j].loss_ewma)
			return false;
	return rate * 3 < eng->cfg.link_rate_bps * 2;
}

/* The median of n values (n <= MROC_MAX_PATHS), sorting them in place. */
static uint64_t median(uint64_t *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j && v[j - 1] > v[j]; j--) {
			uint64_t t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Whether a path of qp is on a trial move not judged yet, or looking before one. */
static bool trial_on(const struct qp *qp)
{
	for (unsigned j = 0; j < qp->npaths; j++)
		if (qp->paths[j].trial || qp->paths[j].look)
			return true;
	return false;
}

/*
 * Whether qp may start a trial move ("slow", "explore") now: one at a time
 * (a move onto a sibling's plane makes that sibling slow and marked,
 * and it moved too before the first was judged: cascades of 16 moves in
 * 80 ms), and none while the QP waits after failed ones (trial_judged).
 */
static bool trial_free(const struct qp *qp, uint64_t now)
{
	return now >= qp->trial_at && !trial_on(qp);
}

/*
 * The rate a "slow" or "explore" move must reach to stay: half the way from
 * the path's rate to its median sibling's, and a quarter above its own.  A
 * slow path is under 2/3 of the median, so for it the first is the larger;
 * an exploring path is the QP's slowest, often by noise alone a hair under
 * the median, and "half its gap" to that was met by the noise of a move
 * between equally busy planes.  A free plane gives far more (a path of
 * three on a plane, moved to an idle one: three times its rate).
 */
static uint64_t rate_goal(uint64_t rate, uint64_t mid)
{
	return max_u64((rate + mid) / 2, rate + rate / 4);
}

static void trial_start(struct path *p, uint64_t goal)
{
	p->trial = true;
	p->trial_goal = goal;
}

/* What qp delivers: its paths' rates summed. */
static uint64_t qp_rate(const struct qp *qp)
{
	uint64_t rate = 0;

	for (unsigned j = 0; j < qp->npaths; j++)
		rate += qp->paths[j].rate_ewma;
	return rate;
}

/*
 * A "spread" move's goal (issue #23 target D, #27): the QP, not the path,
 * must deliver more by half the moved path's rate.  Paths colliding evenly
 * on a plane while another idles gain that at once (the mover doubles, its
 * former plane-mate follows); where the bottleneck is the fabric's core,
 * a move only takes a share from another flow, and the QP gains nothing.
 */
static uint64_t spread_goal(const struct qp *qp, const struct path *p)
{
	return qp_rate(qp) + p->rate_ewma / 2;
}

/*
 * A "spread" look that found a queue, or a move that did not raise the
 * QP's rate.  The first SPREAD_FREE in a row cost no wait (on two planes
 * with both paths on one, a look finds the free one one time in two; a
 * colliding path of 8 over 8 planes, one in three); after that the next
 * waits MATURE_ROUNDS of the path's sRTT (about a trial's length), twice
 * that after each further failure, up to 64 trials: where every route is
 * as busy (a 64-host permutation whose core is the bottleneck: every QP
 * under 2/3 of its NIC, every path marked) the tries die out, and a move
 * that gained clears the count.
 */
static void spread_failed(struct qp *qp, const struct path *p, uint64_t now)
{
	uint64_t srtt = p->srtt ? p->srtt : PTO_MIN_NS;

	if (qp->spread_fails < SPREAD_FAILS_MAX)
		qp->spread_fails++;
	if (qp->spread_fails > SPREAD_FREE)
		qp->spread_at = now + ((MATURE_ROUNDS * srtt) << (qp->spread_fails - SPREAD_FREE - 1));
}

/*
 * Look before a "slow" or "explore" move (issue #27): the path's next
 * packet goes by the port it would move to, answered at once, and the path
 * moves only if LOOK_CLEAR such looks in a row find that route clear
 * (path_look_sample).  Where every plane is as busy, a move can gain
 * nothing, and rates cannot tell that from a plane left idle: 8 paths
 * hashed 3/2/2/1 over 4 equally busy planes put three paths at 2/3 of the
 * median, the "slow" rule's line, and noise took them over it 7 times in
 * 2 s, each a move and a move back (bench-fabric's lossless 8-path runs:
 * 9-14 moves a run, target under 3).  Holding those trials back starved
 * the placements only noise finds (2/2/0/0, 4/3/1/0: no path under 2/3 of
 * the median).  A look costs a packet sent by another route, not a move.
 */
static void look_start(struct engine *eng, struct qp *qp, struct path *p,
		       enum engine_repath_why why, uint64_t goal)
{
	p->look = LOOK_WANT;
	p->look_sport = pick_sport(eng, qp, p, -1);
	p->look_clear = 0;
	p->look_tries = 0;
	p->look_why = (uint8_t)why;
	p->look_goal = goal;
	p->bad_rounds = p->bad_age = 0;
	eng->st.c[EC_REPATH_LOOK]++;
}

/* A look that found a queue, or too few answers: no move. */
static void look_busy(struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	p->look = LOOK_NONE;
	eng->st.c[EC_REPATH_LOOK_BUSY]++;
	if (p->look_why == ENGINE_REPATH_EXPLORE)
		qp->explore_at = now + explore_ns(qp);
	if (p->look_why == ENGINE_REPATH_SPREAD)
		spread_failed(qp, p, now);
}

/*
 * Whether the ACK just walked acknowledged the path's look (p->look_psn).
 * The look went by another route and may have overtaken packets of the
 * path still queued on its own: as the newest PSN acknowledged it made
 * them holes dupthresh below it, lost (spurious resends and a loss signal
 * for the path).  high_acked and *newest go back to the newest PSN below
 * it that the path's own route delivered.
 */
bool path_look_acked(struct path *p, uint32_t *newest)
{
	uint32_t q = p->look_psn;

	if (p->look != LOOK_SENT || seq_lt(q, p->floor) || sb_ent(p, q)->state != SB_ACKED)
		return false;
	if (p->high_acked == p->look_psn) {
		while (q != p->floor && sb_ent(p, q - 1)->state != SB_ACKED)
			q--;
		p->high_acked = q - 1;
		if (*newest == p->look_psn)
			*newest = q - 1;
	}
	return true;
}

/*
 * The look's fabric RTT (0: its ACK echoed another packet, or held a
 * stall: sent again, LOOK_TRIES in all; a look lost ends it, in
 * path_check_siblings): the route is clear if it is within half the
 * path's minimum RTT of that minimum, plus the host's own send lag
 * (tx_lag, as the delay signal allows it, cc_window.c): a busy sender's
 * look waits in its own queue before the wire, and without it every look
 * at an idle plane read busy, so paths that shared a plane never left it
 * (bench-fabric 4 paths at 1 % loss: 6 of 17 runs at 0.48-0.84 Gbit/s with
 * 0-2 repaths; with it 0 of 6, load 1.2-2.1, session 18).  On bench-fabric's busy planes
 * (mroc-sim run --like-fabric-busy) one ACK's sample in 6-10 is (the token
 * bucket lets a burst through), hence LOOK_CLEAR in a row, a round of the
 * path apart (sent back to back, four fitted in one drained moment); an
 * idle plane has no queue at all.  Clear LOOK_CLEAR times: the path moves
 * there, a trial judged as before (trial_judged).  On a route that
 * reorders, the band is the path's reorder window if that is wider
 * (note_reorder: how far packets of the path overtake each other, which
 * no queue does): an idle route's samples spread as far, and with packets
 * 0-20 us late on a 6-12 us route every look read busy, so paths hashed
 * onto one plane never left it (mroc-sim run --jitter 20 --mix 1,0,0,0
 * --seed 1..12: goodput median 0.674 of capacity, 0.801 with it).
 */
void path_look_sample(struct engine *eng, struct qp *qp, struct path *p, uint64_t fabric,
		      uint64_t now)
{
	p->look_tries++;
	if (fabric && (!p->min_rtt ||
		       fabric > p->min_rtt + max_u64(p->min_rtt / 2, p->reo_ns) + eng->tx_lag)) {
		look_busy(eng, qp, p, now);
		return;
	}
	if (!fabric && p->look_tries >= LOOK_TRIES) {
		look_busy(eng, qp, p, now);
		return;
	}
	/* Not clear yet, or its ACK was lost and a later one echoed another packet: again. */
	if (!fabric || ++p->look_clear < LOOK_CLEAR) {
		p->look = LOOK_NEXT;	/* the next at the path's next round (end_round) */
		return;
	}
	for (unsigned i = 0; i < qp->npaths; i++)
		if (qp->paths[i].sport == p->look_sport) {
			look_busy(eng, qp, p, now);	/* a sibling moved there meanwhile */
			return;
		}
	repath(eng, qp, p, now, (enum engine_repath_why)p->look_why, -1, p->look_sport);
	if (p->look_why != ENGINE_REPATH_CE)
		trial_start(p, p->look_goal);
}

/*
 * Exploration: no path is worse than another, yet a route may have come
 * back or freed up that none uses (every path moved off a port that went
 * down, and all share the ports left alike; 8 paths hashed 3/3/2/0 over 4
 * planes, where the paths' rates, 1/3 and 1/2 of a plane, set none apart).
 * The QP's slowest path looks at a random port (look_start), if every
 * path is mature and it is congested, at most once per EXPLORE_NS /
 * npaths after the QP's last look or move: a look costs a packet, not a
 * move, and it moves only where the route is clear, a trial like a slow
 * one (trial_judged, rate_goal).  Moving at once, once per 2.5 s after any
 * move (8 paths), left the 3/3/2/0 trap at 0.848 of capacity (mroc-sim run
 * --like-fabric --paths 8 --bytes 480M --seed 3); looking, 0.966.
 */
static void explore(struct engine *eng, struct qp *qp, struct path *p, uint64_t mid, uint64_t now)
{
	uint64_t goal = rate_goal(p->rate_ewma, mid);

	for (unsigned j = 0; j < qp->npaths; j++) {
		const struct path *s = &qp->paths[j];

		if (!path_mature(s) || s->rate_ewma < p->rate_ewma)
			return;
	}
	if (!qp->explore_at)
		qp->explore_at = now;	/* a look costs no move: the first at once */
	if (now >= qp->explore_at && (p->ce_ewma || p->loss_ewma) && trial_free(qp, now))
		look_start(eng, qp, p, ENGINE_REPATH_EXPLORE, goal);
}

/*
 * A timeout moves a path to a random port, for the route may be dead; on a
 * fabric with random loss it was not, and with as many paths as planes the
 * new port lands on a sibling's plane three times in four, leaving its old
 * plane idle until some other move finds it (bench-fabric at 10 % loss, 4
 * paths: ~44 RTOs a run, 0.80 of lossless; issue #27).  So when the moved
 * path has matured on its new port, if it delivers less than it did before
 * the move it goes back to the port it left (unless a sibling took it),
 * keeping its window: Eifel's undo for the move, judged by the outcome.
 *
 * Only to a route shown alive since the path fell silent: a path timed out
 * off a dead plane, moved onto a sibling's plane, delivers less than it did
 * alone, and went back to the dead plane for another RTO, again and again
 * (4 paths on 4 planes, one blackholed: 1-4 times a run).  The peer's count
 * of packets often shows it (note_leaving); when it does not (random loss
 * took every probe too: one RTO in four at 10 %), one packet goes by the
 * old port (route_probe, qp_tx.c), and the move back waits for its ACK; if
 * it is lost the move stays (repath_back_held), as it does where the port
 * left is the daemon's counted-down NIC port (nothing comes back there).
 * Returns whether it went back; until it is decided (undo_rate 0) it is
 * asked again at each of the path's rounds.
 */
static bool timeout_move_back(struct engine *eng, const struct qp *qp, struct path *p)
{
	if (p->rate_ewma >= p->undo_rate || !prev_port_free(qp, p)) {
		p->undo_rate = 0;
		return false;
	}
	if (!p->left_alive) {
		if (p->route_probe == ROUTE_PROBE_NONE)
			p->route_probe = ROUTE_PROBE_WANT;
		if (p->route_probe == ROUTE_PROBE_WANT || !seq_lt(p->probe_psn, p->floor))
			return false;	/* not sent, or not answered yet */
		eng->st.c[EC_REPATH_BACK_HELD]++;	/* lost: the route is dead */
		p->undo_rate = 0;
		return false;
	}
	p->undo_rate = 0;
	back_to_prev_port(p);
	eng->st.c[EC_REPATH_BACK]++;
	return true;
}

/*
 * A "slow" move is a trial (issue #27), and so is an "explore" move.  Rates
 * cannot tell a path that shares its plane while another plane idles (worth
 * a move) from one whose plane-mate took more of a plane as busy as the
 * others, or from one of a QP with more paths than planes (5 paths on 4
 * planes: two always share, and each of their moves lands on a plane as
 * full; 450 moves in 2 s).  The outcome can: once the moved path has
 * matured on its new port it keeps it if it reached the trial's goal
 * (trial_goal, rate_goal: half the way from its rate to the median
 * sibling's of the moment it moved, and a quarter above its own; "more than
 * before" alone was often met by noise: a path is judged slow at its
 * lowest); if not, it goes back to the port it left (a live route: it was
 * delivering there), keeping its window.  A QP's first TRIAL_FREE failures
 * in a row cost no wait (on 4 paths over 4 planes with one idle, a move
 * finds it one time in four, and the transfer should not wait for it);
 * after that its next trial waits TRIAL_WAIT_NS, 8 times longer after each
 * further failure (100 ms, 0.8 s, 6.4 s, 51 s), so where no move can gain
 * (every plane as busy) the moves die out; a move that gained clears the
 * count.  A "spread" move is judged by the QP's rate instead (spread_goal),
 * and its failures make "spread" wait, not the other trials
 * (spread_failed).  Returns whether it went back.
 */
static bool trial_judged(struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	uint32_t pwnd = p->pwnd, ssthresh = p->ssthresh;
	bool spread = p->repath_why == ENGINE_REPATH_SPREAD;

	p->trial = false;
	if (spread ? qp_rate(qp) >= p->trial_goal : p->rate_ewma >= p->trial_goal) {
		if (spread)
			qp->spread_fails = 0;
		else
			qp->trial_fails = 0;
		return false;
	}
	if (spread) {
		spread_failed(qp, p, now);
	} else {
		if (qp->trial_fails < TRIAL_FAILS_MAX)
			qp->trial_fails++;
		if (qp->trial_fails > TRIAL_FREE)
			qp->trial_at = now + (TRIAL_WAIT_NS << (3 * (qp->trial_fails - TRIAL_FREE - 1)));
	}
	if (!prev_port_free(qp, p))
		return false;
	back_to_prev_port(p);
	restart_window(eng, p);	/* its averages were the trial port's */
	p->pwnd = pwnd;
	p->ssthresh = ssthresh;
	eng->st.c[spread ? EC_REPATH_SPREAD_BACK : p->repath_why == ENGINE_REPATH_EXPLORE ?
		  EC_REPATH_EXPLORE_BACK : EC_REPATH_SLOW_BACK]++;
	return true;
}

/*
 * PLB-style: a path moves to a new source port (another ECMP route) when,
 * for BAD_ROUNDS of its rounds, its loss or CE fraction stays far above its
 * siblings', or when for SLOW_ROUNDS it is congested while delivering under
 * two thirds of what the median sibling delivers: the signature of two
 * paths hashed onto one link while another link idles.  The median, not
 * the mean, and 16 rounds, not 3: where every plane is equally busy a
 * path's rate is noisy (at 10% loss, and between two paths sharing a
 * plane) and one low sibling pulled the mean down; 8 paths on 4 equally
 * loaded planes moved 61 times in 2 s.  A path that sees it moves with
 * probability 1/2 per round, so colliding paths do not chase each other.
 */
void path_check_siblings(struct engine *eng, struct qp *qp, struct path *p, uint64_t now)
{
	uint64_t loss = 0, ce = 0, rate = 0, rates[MROC_MAX_PATHS], mid;
	unsigned mature = 0;
	enum engine_repath_why why = ENGINE_REPATH_NONE;
	bool slow;

	if (!eng->cfg.repath || qp->npaths < 2 || !path_mature(p))
		return;
	if (p->look == LOOK_SENT && seq_lt(p->look_psn, p->floor))
		look_busy(eng, qp, p, now);	/* lost: no clear route (a dead plane's) */
	if (p->undo_rate && timeout_move_back(eng, qp, p))
		return;
	/*
	 * Only paths with MATURE_ROUNDS behind them judge or are judged: a path
	 * that just moved has its averages reset, and counting its clean zeros
	 * pulled the siblings' mean down until every path looked bad (on a
	 * fabric marking CE: 70 moves per path per second).
	 */
	for (unsigned j = 0; j < qp->npaths; j++) {
		const struct path *s = &qp->paths[j];

		if (s == p || !path_mature(s))
			continue;
		loss += s->loss_ewma;
		ce += s->ce_ewma;
		rate += s->rate_ewma;
		rates[mature++] = s->rate_ewma;
	}
	if (!mature)
		return;
	loss /= mature;
	ce /= mature;
	mid = median(rates, mature);
	if (p->trial && trial_judged(eng, qp, p, now))
		return;
	slow = (p->ce_ewma || p->loss_ewma) && p->rate_ewma * 3 < mid * 2;
	if (p->loss_ewma > 2 * loss + FIX_ONE / 20)
		why = ENGINE_REPATH_LOSS;
	else if (p->ce_ewma > ce + FIX_ONE * 3 / 10)
		why = ENGINE_REPATH_CE;
	else if (slow)
		why = ENGINE_REPATH_SLOW;
	else if (p->rate_ewma <= mid && underused(eng, qp, rate + p->rate_ewma, mature + 1))
		why = ENGINE_REPATH_SPREAD;	/* a path no faster than its median sibling */
	if (why == ENGINE_REPATH_NONE) {
		p->bad_rounds = p->bad_age = 0;
		explore(eng, qp, p, mid, now);
		return;
	}
	if (p->bad_rounds < UINT8_MAX)
		p->bad_rounds++;
	p->bad_age = (uint8_t)min_u64((uint64_t)p->bad_age + p->round_w, UINT8_MAX);
	/*
	 * Slow moves are trials (trial_judged): one at a time, and not while
	 * the QP waits.  Not ce moves: judged so, 10 % loss with quiet hosts
	 * (test_sim_busy's, seeds 1-8) kept 0.740 of capacity at the least
	 * against 0.847 without.  But a ce move looks first, as a slow one
	 * (one look at a time per QP, no wait): moved at once it landed on a
	 * sibling's plane three times in four, that sibling's CE rose and it
	 * moved too (mroc-sim run --like-fabric-busy --paths 4 --bytes 480M
	 * --loss 0.01 --seed 17: 8 ce moves in two cascades, 0.901 of
	 * capacity; looking, 2 moves, 0.993).
	 */
	if (why == ENGINE_REPATH_SLOW && !trial_free(qp, now))
		return;
	if (why == ENGINE_REPATH_CE && trial_on(qp))
		return;
	/*
	 * A spread move looks first and is a trial too, judged by the QP's
	 * rate (spread_goal), with waits of its own (spread_failed).  Moved at
	 * once and kept, on a 64-host permutation whose core is the bottleneck
	 * (every QP under 2/3 of its NIC, every path marked) they came about
	 * once a round of a QP without end, 8-34 a run, each taking a share of
	 * another flow's links: they set target D's minimum (issue #23, seeds
	 * 141-160 at 1 %: kept min 0.941 with them, 0.959 without).
	 */
	if (why == ENGINE_REPATH_SPREAD && (now < qp->spread_at || trial_on(qp)))
		return;
	/* SPREAD is the whole QP's signal: about one of its paths moves per round. */
	if ((why == ENGINE_REPATH_SLOW ? p->bad_age >= SLOW_ROUNDS : p->bad_rounds >= BAD_ROUNDS) &&
	    !prng_below(&eng->rng, why == ENGINE_REPATH_SPREAD ? 2 * qp->npaths : 2)) {
		if (why == ENGINE_REPATH_SLOW)
			look_start(eng, qp, p, why, rate_goal(p->rate_ewma, mid));
		else if (why == ENGINE_REPATH_CE)
			look_start(eng, qp, p, why, 0);
		else if (why == ENGINE_REPATH_SPREAD)
			look_start(eng, qp, p, why, spread_goal(qp, p));
		else
			path_repath(eng, qp, p, now, why);
	}
}
