// SPDX-License-Identifier: MIT
/*
 * A QP's paths judged against each other (path_check_siblings): the moves
 * of paths that deliver or mark worse than their siblings, the looks before
 * them, the trial moves their QP's rate judges (explore, repath_spread) and
 * the timeout moves taken back.
 */
#include <string.h>

#include "internal.h"
#include "path_priv.h"

/* A move taken back (timeout_move_back, trial_judged): the old route's RTT is learnt anew. */
static void back_to_prev_port(struct path *p)
{
	route_changed(p);
	p->sport = p->prev_sport;
	p->prev_sport = 0;
	p->min_rtt = 0;
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
