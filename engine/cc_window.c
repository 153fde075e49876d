// SPDX-License-Identifier: MIT
/*
 * MetaRoCE's window algorithm, per path (cc_metaroce):
 *  - slow start, then additive increase of one packet per window;
 *  - ECN: DCTCP's alpha (the marked fraction, g = 1/16 per round) and a cut
 *    of alpha/2 once per marked round;
 *  - loss: a burst (loss_md_pkts in a round) halves the window once per
 *    window of data, single random drops do not (the fabric is lossy, not
 *    congested, when one packet in a hundred goes);
 *  - delay (delay_target_ns > 0): where nothing marks ECN, the smallest RTT
 *    of a round above the path's minimum plus the target cuts the window in
 *    proportion to the excess, as Swift and UEC's NSCC do.  The round's
 *    minimum, not each sample: a standing queue raises every sample, a
 *    scheduler's hiccup only some;
 *  - timeout: one packet.
 */
#include "internal.h"

#define DCTCP_G_SHIFT	4		/* g = 1/16 */
#define DELAY_BETA	(FIX_ONE * 4 / 5)	/* cut 0.8 x the excess delay's share */
#define DELAY_MAX_CUT	(FIX_ONE / 2)

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
	clamp_pwnd(eng, p);
}

static void mr_on_ack(const struct engine *eng, struct path *p, uint32_t acked, uint32_t ce_delta)
{
	if (ce_delta && p->pwnd < p->ssthresh)
		p->ssthresh = p->pwnd;	/* congestion seen: leave slow start */
	if (!acked)
		return;
	if (p->pwnd < p->ssthresh)
		p->pwnd += acked;
	else
		p->pwnd += (uint32_t)((uint64_t)eng->seg_bytes * acked / p->pwnd);
	clamp_pwnd(eng, p);
}

/* The cut the round's delay asks for (FIX_ONE = all), 0 within the target. */
static uint32_t delay_cut(const struct engine *eng, const struct path *p)
{
	uint64_t target, excess;

	if (!eng->cfg.delay_target_ns || !p->min_rtt || !p->round_min_rtt)
		return 0;
	/* At least one base RTT of queue: the target scales with the path. */
	target = p->min_rtt + max_u64(eng->cfg.delay_target_ns, p->min_rtt);
	if (p->round_min_rtt <= target)
		return 0;
	excess = (p->round_min_rtt - target) * FIX_ONE / p->round_min_rtt;
	return (uint32_t)min_u64(excess * DELAY_BETA / FIX_ONE, DELAY_MAX_CUT);
}

static void mr_on_round(const struct engine *eng, struct path *p, uint32_t ce_frac)
{
	uint32_t delay = delay_cut(eng, p);

	p->alpha = p->alpha - (p->alpha >> DCTCP_G_SHIFT) + (ce_frac >> DCTCP_G_SHIFT);
	if (p->cut_this_round)
		return;		/* a loss already halved it this round */
	/* ECN cuts alpha/2; the delay cut goes instead when it asks for more. */
	if ((uint64_t)delay * 2 > (p->round_ce ? p->alpha : 0)) {
		/*
		 * Delay alone never takes the window below dupthresh + 1 packets:
		 * on a host whose scheduler adds the delay (not a queue), one
		 * packet in flight turned every loss into an RTO.
		 */
		uint32_t floor = (eng->cfg.dupthresh + 1) * eng->seg_bytes;

		p->st_delay_cuts++;
		if (p->pwnd > floor) {
			cut(eng, p, delay, FIX_ONE);
			if (p->pwnd < floor)
				p->pwnd = floor;
		}
	} else if (p->round_ce) {
		cut(eng, p, p->alpha, 2 * (uint64_t)FIX_ONE);
	}
}

static void mr_on_loss(const struct engine *eng, struct path *p, uint32_t psn)
{
	/* Single random drops are not congestion; a burst within a round is. */
	if (p->round_lost >= eng->cfg.loss_md_pkts && seq_le(p->recover_psn, psn)) {
		cut(eng, p, 1, 2);
		p->recover_psn = p->next_psn;
		p->cut_this_round = true;
	}
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
