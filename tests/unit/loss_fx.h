// SPDX-License-Identifier: MIT
/*
 * What the engine's loss tests share (test_engine_loss.c, test_engine_dead.c,
 * test_engine_paths.c): two engines back to back (engine_pair.h) with one QP
 * connected, and the filters more than one of them uses.  Include after
 * cmocka.h.
 */
#ifndef MROC_TEST_LOSS_FX_H
#define MROC_TEST_LOSS_FX_H

#include "engine_pair.h"

#define REG_LEN		(1024 * 1024)
#define SVC		42

struct fx {
	struct pair_fx x;	/* p, a: A's buffer, b: B's (engine_pair.h) */
};

static inline struct fx *fx_open(void **state, const struct engine_config *ca,
			  const struct engine_config *cb, const struct engine_qp_attr *qa,
			  const struct engine_qp_attr *qb)
{
	struct fx *f = pair_fx_open(state, sizeof(*f), ca, cb, REG_LEN, ENGINE_ACCESS_ALL, 1);

	pair_connect(f->x.p, qa, qb, SVC);
	return f;
}

static inline int teardown(void **state)
{
	return pair_fx_teardown(state);
}

static inline struct engine_qp_attr attr_of(uint8_t npaths, uint64_t user)
{
	struct engine_qp_attr a = pair_test_attr();

	a.npaths = npaths;
	a.user = user;
	return a;
}

/* Run until side has a completion to look at, at most `limit` of fake time. */
static inline void run_until_cqe(struct fx *f, int side, uint64_t limit)
{
	uint64_t end = f->x.p->now + limit;

	while (!pair_pending(f->x.p, side) && f->x.p->now < end)
		pair_run_for(f->x.p, 10 * PAIR_US);
}

/* Drop the n-th data packet A sends (1-based). */
struct drop_nth {
	unsigned n, seen;
};

static inline bool drop_nth_a_data(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct drop_nth *d = arg;

	(void)p;
	if (pkt->from != PAIR_A || !mroc_op_is_data(pkt->data[PKT_OPCODE]))
		return true;
	return ++d->seen != d->n;
}

static inline void dead_peer_config(struct engine_config *cfg)
{
	pair_test_config(cfg);
	cfg->dead_peer_ns = 50 * PAIR_MS;
	cfg->keepalive_ns = 10 * PAIR_MS;
	cfg->max_retx = 255;	/* the dead-peer timer, not the retry count, must fire */
}

#endif
