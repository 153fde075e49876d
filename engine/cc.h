/* SPDX-License-Identifier: MIT */
/*
 * Congestion control, behind an ops table as Linux's tcp_congestion_ops:
 * path.c counts what a path sees (ACKed bytes, CE marks, losses, RTT, the
 * end of a round) and asks the algorithm what that does to the window.
 * cc_window.c: MetaRoCE's window algorithm; cc_rate.c: pacing to the
 * receiver's fair-share hint and the hint itself.
 */
#ifndef MROC_ENGINE_CC_H
#define MROC_ENGINE_CC_H

#include <stdint.h>

struct engine;
struct path;
struct qp;

#define FIX_ONE		(1u << 20)	/* fixed-point 1.0 for fractions and EWMAs */

struct cc_ops {
	const char *name;
	/* A path (re)starts: its initial window. */
	void (*init)(const struct engine *eng, struct path *p);
	/* An ACK: acked bytes newly acknowledged, ce_delta newly CE-marked packets. */
	void (*on_ack)(const struct engine *eng, struct path *p, uint32_t acked, uint32_t ce_delta);
	/* A round (about an RTT) ended; ce_frac of its packets were marked (FIX_ONE = all). */
	void (*on_round)(const struct engine *eng, struct path *p, uint32_t ce_frac);
	/* Packets up to psn were declared lost; p->round_lost counts this round's. */
	void (*on_loss)(const struct engine *eng, struct path *p, uint32_t psn);
	/* The path timed out. */
	void (*on_rto)(const struct engine *eng, struct path *p);
};

/* DCTCP-style ECN AIMD, loss MD on bursts, and a delay target (cc_window.c). */
extern const struct cc_ops cc_metaroce;

/* Smallest and largest window a path may have, bytes. */
uint32_t cc_pwnd_min(const struct engine *eng);
uint32_t cc_pwnd_max(const struct engine *eng);

/* cc_rate.c: pacing to the peer's hint; the hint we give our senders. */
void cc_pace(struct engine *eng, struct qp *qp, uint64_t now, uint32_t bytes);
uint32_t cc_rate_hint(struct engine *eng, struct qp *qp, uint64_t now);

#endif
