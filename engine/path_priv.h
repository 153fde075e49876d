/* SPDX-License-Identifier: MIT */
/*
 * What path.c, path_repath.c and path_trial.c share and no other file of
 * the engine needs: the repath judgments' constants and the helpers the
 * three call across.
 */
#ifndef MROC_ENGINE_PATH_PRIV_H
#define MROC_ENGINE_PATH_PRIV_H

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

/* Whether a path's rates are trusted: MATURE_ROUNDS of its rounds (round_weight) behind it. */
static inline bool path_mature(const struct path *p)
{
	return p->age >= MATURE_ROUNDS;
}

/*
 * No probe time below the timer wheel's tick (timer.c): a path waiting for an
 * older packet's answer re-arms a probe time on (qp_timers), and on RTTs of
 * nanoseconds (echoes that claim them: fuzz_engine_rx's slowest inputs) it
 * woke every 2 ns until its RTO, 800,000 times in 1.7 ms.  No real fabric's
 * probe time is that short.
 */
#define PTO_MIN_NS	1024

/* path.c */
uint16_t pick_sport(struct engine *eng, struct qp *qp, const struct path *self, int cls);
void restart_window(struct engine *eng, struct path *p);
bool prev_port_free(const struct qp *qp, const struct path *p);
void route_changed(struct path *p);
void scouts_clear(struct qp *qp, struct path *p);

/* path_repath.c */
uint64_t explore_ns(const struct qp *qp);
void repath(struct engine *eng, struct qp *qp, struct path *p, uint64_t now,
	    enum engine_repath_why why, int cls, uint16_t port);

#endif
