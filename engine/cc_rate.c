// SPDX-License-Identifier: MIT
/*
 * Rate-based congestion control: the receiver's fair share (its link rate
 * split over the hosts, then each host's QPs, that sent to it lately,
 * carried in every ACK as a hint)
 * and the sender's pacing to the hint it got.  The window (cc_window.c)
 * still bounds what is in flight; the hint spreads an incast's senders
 * before the switch's queue has to.
 */
#include "internal.h"

/*
 * Receiver fair share: link rate split over the hosts that sent to us
 * lately, and a host's share over its QPs that did.  Split over QPs, a peer
 * with k QPs got k shares and everyone else less (issue #23: one host of 8
 * QPs beside one of 1 took 8/9 of the link).
 */
uint32_t cc_rate_hint(struct engine *eng, struct qp *qp, uint64_t now)
{
	uint32_t n, k;

	if (!eng->cfg.rate_hints || !eng->cfg.link_rate_bps)
		return 0;
	if (now >= eng->hint_epoch_end) {
		/*
		 * "The epoch before" is the one just ended only if this one
		 * follows it: after an idle gap the last epoch anything sent in
		 * was seconds ago, and a QP sending alone was told the share it
		 * had had beside others then.  Two epochs on, every host's
		 * count of its own (peer_hint_qps) is stale too.
		 */
		bool next = now - eng->hint_epoch_end < eng->cfg.hint_interval_ns;

		eng->active_prev = next ? eng->active_now : 0;
		eng->active_now = 0;
		eng->hint_epoch += next ? 1 : 2;
		eng->hint_epoch_end = now + eng->cfg.hint_interval_ns;
	}
	if (qp->hint_epoch != eng->hint_epoch) {
		qp->hint_epoch = eng->hint_epoch;
		if (peer_hint_join(eng, qp))
			eng->active_now++;
	}
	n = eng->active_now > eng->active_prev ? eng->active_now : eng->active_prev;
	k = peer_hint_qps(eng, qp);
	if ((uint64_t)n * k < 2)
		return 0;	/* alone: the window is enough */
	return (uint32_t)(eng->cfg.link_rate_bps / 1000000 * 95 / 100 / n / k);
}

/*
 * Pacing to the peer's rate hint.  A driver wakes late now and then (a busy
 * CPU, timer slack); time lost that way is made up, up to PACE_SLACK_NS or 16
 * packets (at least 2), or a pacer that is always a little late delivers
 * well under its rate (it did: 76% of the hint on a loaded 2-core machine).
 * The bound keeps the catch-up a short burst, not a line-rate flood.
 */
#define PACE_SLACK_NS	(100 * 1000ULL)

void cc_pace(struct engine *eng, struct qp *qp, uint64_t now, uint32_t bytes)
{
	uint64_t rate, gap, slack;

	if (!qp->hint_mbps) {
		qp->pace_next = 0;
		return;
	}
	rate = (uint64_t)qp->hint_mbps * 1000000ULL;
	if (eng->cfg.link_rate_bps && rate > eng->cfg.link_rate_bps)
		rate = eng->cfg.link_rate_bps;
	gap = (uint64_t)bytes * 8 * NSEC_PER_SEC / rate;
	slack = max_u64(min_u64(PACE_SLACK_NS, 16 * gap), 2 * gap);
	if (qp->pace_next + slack < now)
		qp->pace_next = now - slack;
	qp->pace_next += gap;
}
