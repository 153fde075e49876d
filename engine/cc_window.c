// SPDX-License-Identifier: MIT
/*
 * MetaRoCE's window algorithm, per path (cc_metaroce).  Each signal moves the
 * window on its own:
 *  - growth: slow start, then one packet per window, only while the window
 *    limits the sender (window_limited);
 *  - ECN: DCTCP's alpha (the marked fraction, g = 1/16 per round) and a cut
 *    of alpha/2 once per marked round;
 *  - delay (delay_target_ns > 0, on a path that never carried CE: where the
 *    fabric marks, ECN speaks for its queues): the smallest RTT of a round above the
 *    path's minimum plus the target cuts the window in proportion to the
 *    excess, as Swift and UEC's NSCC do, when that asks for more than ECN
 *    does.  The round's minimum, not each sample: a standing queue raises
 *    every sample, a scheduler's hiccup only some.  Delay that
 *    DELAY_REBASE_ROUNDS cuts in a row did not lower is not a queue of ours
 *    (a busy host adds it to every ACK): it becomes the path's base RTT and
 *    the window grows back.  A delay cut never takes the window below what
 *    the path delivers in one base RTT (its BDP), nor below dupthresh + 1
 *    packets; a marked round the delay floor holds still gets ECN's cut;
 *  - loss: a burst (loss_md_pkts in a round) halves the window once per
 *    window of data, single random drops do not (the fabric is lossy, not
 *    congested, when one packet in a hundred goes); a burst on a fabric
 *    that marks CE, in rounds not heavily marked, is random loss and cuts
 *    1/8 (loss_uncorroborated);
 *  - timeout: one packet (path.c undoes it when the next ACK shows it
 *    needless).
 * The RoCEv2 baseline's classic window (mode.h) grows without validation,
 * halves for every burst and undoes no timeout.
 */
#include "internal.h"

#define DCTCP_G_SHIFT	4		/* g = 1/16 */
#define DELAY_BETA	(FIX_ONE * 4 / 5)	/* cut 0.8 x the excess delay's share */
#define DELAY_MAX_CUT	(FIX_ONE / 2)
#define DELAY_REBASE_ROUNDS	8	/* delay cuts in a row that must lower the RTT */

uint32_t cc_pwnd_min(const struct engine *eng)
{
	return eng->seg_bytes;
}

uint32_t cc_pwnd_max(const struct engine *eng)
{
	return eng->cfg.max_pwnd_pkts * eng->seg_bytes;
}

static void clamp_pwnd(const struct engine *eng, struct path *p)
{
	if (p->pwnd < cc_pwnd_min(eng))
		p->pwnd = cc_pwnd_min(eng);
	if (p->pwnd > cc_pwnd_max(eng))
		p->pwnd = cc_pwnd_max(eng);
}

/* The window loses num/den of itself and slow start ends. */
static void cut(const struct engine *eng, struct path *p, uint64_t num, uint64_t den)
{
	p->pwnd -= (uint32_t)((uint64_t)p->pwnd * num / den);
	p->ssthresh = p->pwnd;
	clamp_pwnd(eng, p);
}

static void mr_init(const struct engine *eng, struct path *p)
{
	p->pwnd = eng->cfg.init_pwnd_pkts * eng->seg_bytes;
	p->ssthresh = cc_pwnd_max(eng);
	p->alpha = FIX_ONE;
	p->recover_psn = p->next_psn;
	p->cut_this_round = false;
	p->dly_streak = 0;
	clamp_pwnd(eng, p);
}

/*
 * Congestion-window validation (RFC 7661's idea; not for a mode's classic
 * window, mode.h): a window grows only while it limits the sender, judged by
 * the most it had in flight when an ACK came, this round or the last.  In
 * slow start half of it in flight is enough (the next round doubles what
 * flies); after, all of it but one packet.  A window the sender never
 * fills proves nothing about the path: one 4 KiB WRITE at a time grew one
 * to 256 packets (issue #23).
 */
static bool window_limited(const struct engine *eng, const struct path *p)
{
	uint32_t used = p->flight_max > p->flight_max_prev ? p->flight_max : p->flight_max_prev;

	if (p->classic)
		return true;
	if (p->pwnd < p->ssthresh)
		return 2 * (uint64_t)used >= p->pwnd;
	return (uint64_t)used + eng->seg_bytes >= p->pwnd;
}

static void mr_on_ack(const struct engine *eng, struct path *p, uint32_t acked, uint32_t ce_delta)
{
	if (ce_delta && p->pwnd < p->ssthresh)
		p->ssthresh = p->pwnd;	/* congestion seen: leave slow start */
	if (!acked || !window_limited(eng, p))
		return;
	if (p->pwnd < p->ssthresh)
		p->pwnd += acked;
	else
		p->pwnd += (uint32_t)((uint64_t)eng->seg_bytes * acked / p->pwnd);
	clamp_pwnd(eng, p);
}

/*
 * The RTT above which the path queues: its minimum plus the target, at
 * least one base RTT, plus the lag our own sends had lately between their
 * stamp and their kick (engine_tx_done): the samples are the fabric's
 * (PROTOCOL 7.4a) but for that wait, which no stamp of ours sees.
 */
static uint64_t delay_limit(const struct engine *eng, const struct path *p)
{
	return p->min_rtt + max_u64(eng->cfg.delay_target_ns, p->min_rtt) + eng->tx_lag;
}

/* The cut the round's delay asks for (FIX_ONE = all), 0 within the target. */
static uint32_t delay_cut(const struct engine *eng, const struct path *p)
{
	uint64_t target, excess;

	/*
	 * A path whose fabric marks CE where it queues leaves the queue to ECN
	 * (issue #27): on 250 Mbit/s planes the delay limit (a token bucket's
	 * burst made the minimum 23 us) is a few packets of queue, far below the
	 * marking threshold, and held every path at the delay floor, where a
	 * marked round kept it from rebasing.
	 */
	if (!eng->cfg.delay_target_ns || !p->min_rtt || !p->round_min_rtt || p->st_ce)
		return 0;
	target = delay_limit(eng, p);
	if (p->round_min_rtt <= target)
		return 0;
	excess = (p->round_min_rtt - target) * FIX_ONE / p->round_min_rtt;
	return (uint32_t)min_u64(excess * DELAY_BETA / FIX_ONE, DELAY_MAX_CUT);
}

/*
 * The lowest window a delay cut leaves: what the path delivers in one base
 * RTT (a window that size builds no queue), at least dupthresh + 1 packets
 * so that a loss is still found by SACK, not by a timeout.
 */
static uint32_t delay_floor(const struct engine *eng, const struct path *p)
{
	uint64_t bdp = p->rate_ewma / 8 * p->min_rtt / NSEC_PER_SEC;

	return (uint32_t)min_u64(max_u64(bdp, (uint64_t)(eng->cfg.dupthresh + 1) * eng->seg_bytes),
				 cc_pwnd_max(eng));
}

/*
 * What the path carries at the round's RTT (its rate x that RTT), at most its
 * window: a window above it (slow start's overshoot, a sender held back
 * elsewhere) can be cut that far without lowering the RTT.
 */
static uint32_t carried(const struct path *p)
{
	uint64_t b = p->rate_ewma / 8 * p->round_min_rtt / NSEC_PER_SEC;

	return (uint32_t)(p->rate_ewma ? min_u64(b, p->pwnd) : p->pwnd);
}

/*
 * A round whose delay asks for a cut; false if it cut nothing (the window at
 * its floor).  Cuts that work lower the RTT.  When over DELAY_REBASE_ROUNDS
 * such rounds in a row the window fell to half of what the path carried when
 * the streak began (or sat at its floor) and the RTT stayed above 7/8 of
 * where it began, the delay is the hosts' (or a queue the path cannot
 * drain), not one this path builds: it becomes the base RTT.  A window held
 * at the target (cut, grown back, cut) keeps its size and is not rebased
 * (test_sim_delay: a window that overshot in slow start, measured from its
 * size, looked halved by cuts that had not yet reached what it carried).
 */
static bool delay_round(const struct engine *eng, struct path *p, uint32_t delay)
{
	uint32_t floor = delay_floor(eng, p), before = p->pwnd;

	/* A marked queue is the fabric's, not the host's: ECN speaks for it. */
	if (!p->dly_streak || p->round_ce || p->round_had_ce ||
	    p->round_min_rtt * 8 < p->dly_ref_rtt * 7) {
		p->dly_streak = 0;
		p->dly_ref_rtt = p->round_min_rtt;
		p->dly_ref_pwnd = carried(p);
	}
	if (++p->dly_streak >= DELAY_REBASE_ROUNDS &&
	    (p->pwnd <= floor || 2 * (uint64_t)p->pwnd <= p->dly_ref_pwnd)) {
		p->min_rtt = p->round_min_rtt;
		p->dly_streak = 0;
		p->ssthresh = cc_pwnd_max(eng);	/* grow back to what the path carries */
		p->st_delay_rebases++;
		return true;
	}
	if (p->pwnd <= floor)
		return false;
	cut(eng, p, delay, FIX_ONE);
	if (p->pwnd < floor)
		p->pwnd = floor;
	if (p->pwnd < before)
		p->st_delay_cuts++;
	return true;
}

static void mr_on_round(const struct engine *eng, struct path *p, uint32_t ce_frac)
{
	uint32_t delay = delay_cut(eng, p);

	p->alpha = p->alpha - (p->alpha >> DCTCP_G_SHIFT) + (ce_frac >> DCTCP_G_SHIFT);
	if (!delay)
		p->dly_streak = 0;
	if (p->cut_this_round)
		return;		/* a loss already halved it this round */
	/* ECN cuts alpha/2; the delay cut goes instead when it asks for more and can cut. */
	if ((uint64_t)delay * 2 > (p->round_ce ? p->alpha : 0) && delay_round(eng, p, delay))
		return;
	if (p->round_ce)
		cut(eng, p, p->alpha, 2 * (uint64_t)FIX_ONE);
}

/*
 * Whether a loss burst is random loss, not congestion: the path's fabric
 * marks CE where it queues (the path has carried CE), and neither this
 * round so far nor the last had half of its packets marked.  A queue that
 * overflows has been above the marking threshold for a while and marks
 * most of what passes first.  The delay signal does not back a burst here
 * (it stands down where CE is seen, delay_cut): on bench-fabric's 250
 * Mbit/s planes a path's RTT sits above the delay limit all the time, and
 * so does a light CE fraction, so 10% random loss halved windows 9 times
 * in 10 and was answered as congestion (issue #27).  A path that never
 * carried CE (a fabric without ECN, whose drop-tail queues may drop before
 * the RTT rises) treats every burst as congestion.
 */
static bool loss_uncorroborated(const struct path *p)
{
	if (p->classic || !p->st_ce)
		return false;
	return !(p->round_rcv && 2 * (uint64_t)p->round_ce >= p->round_rcv) &&
	       2 * (uint64_t)p->prev_ce_frac < FIX_ONE;
}

static void mr_on_loss(const struct engine *eng, struct path *p, uint32_t psn)
{
	/* Single random drops are not congestion; a burst within a round may be. */
	if (p->round_lost < eng->cfg.loss_md_pkts || !seq_le(p->recover_psn, psn))
		return;
	p->recover_psn = p->next_psn;
	if (loss_uncorroborated(p)) {
		cut(eng, p, 1, 8);
		p->st_loss_trims++;
		return;		/* ECN's and delay's cuts of the round still apply */
	}
	cut(eng, p, 1, 2);
	p->st_loss_cuts++;
	p->cut_this_round = true;
}

static void mr_on_rto(const struct engine *eng, struct path *p)
{
	p->ssthresh = max_u64(p->pwnd / 2, 2 * eng->seg_bytes);
	p->pwnd = cc_pwnd_min(eng);
	p->recover_psn = p->next_psn;
}

const struct cc_ops cc_metaroce = {
	.name = "metaroce",
	.init = mr_init,
	.on_ack = mr_on_ack,
	.on_round = mr_on_round,
	.on_loss = mr_on_loss,
	.on_rto = mr_on_rto,
};
