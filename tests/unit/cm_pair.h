// SPDX-License-Identifier: MIT
/*
 * The connection tests' shared set-up (test_engine_cm*.c, test_engine_api.c):
 * two engines back to back (engine_pair.h), B listening, A connecting, a
 * filter that drops a message's first copy, and a WRITE that proves A's
 * side of a connection.  Static inline: each test file takes what it uses.
 */
#ifndef MROC_TEST_CM_PAIR_H
#define MROC_TEST_CM_PAIR_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_pair.h"

#define SVC		42

static inline int teardown(void **state)
{
	pair_free(*state);
	return 0;
}

static inline struct pair *open_pair(void **state, const struct engine_config *ca,
				     const struct engine_config *cb)
{
	struct pair *p = pair_new(ca, cb);

	*state = p;
	return p;
}

static inline struct engine_qp_attr attr_of(uint8_t mode, uint64_t user)
{
	struct engine_qp_attr a = pair_test_attr();

	a.mode = mode;
	a.user = user;
	return a;
}

/* B listens with attr b, A connects with attr a; returns A's QPN. */
static inline uint32_t start_connect(struct pair *p, const struct engine_qp_attr *a,
				     const struct engine_qp_attr *b, uint64_t listen_svc,
				     uint64_t svc)
{
	uint32_t qa;

	if (b) {
		p->s[PAIR_B].qpn = pair_qp_create(p, PAIR_B, b);
		assert_int_equal(engine_qp_listen(p->s[PAIR_B].eng, p->s[PAIR_B].qpn, listen_svc), 0);
	}
	qa = pair_qp_create(p, PAIR_A, a);
	p->s[PAIR_A].qpn = qa;
	assert_int_equal(engine_qp_connect(p->s[PAIR_A].eng, qa, PAIR_B, svc, pair_clock(p, PAIR_A)), 0);
	return qa;
}

/* The first packet of opcode op that `from` sends, dropped; the rest pass. */
struct drop_first {
	int from;
	uint8_t op;
	unsigned dropped;
};

static inline bool drop_first_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct drop_first *d = arg;

	(void)p;
	if (pkt->from != d->from || pkt->data[PKT_OPCODE] != d->op || d->dropped)
		return true;
	d->dropped++;
	return false;
}

/* A sends B a packet on the connected QP (a WRITE): the proof that it got B's REP. */
static inline void a_writes(struct pair *p)
{
	struct pair_mem *ma = pair_mem_new(p, PAIR_A, 4096, 1, ENGINE_ACCESS_ALL);
	struct pair_mem *mb = pair_mem_new(p, PAIR_B, 4096, 1, ENGINE_ACCESS_ALL);
	struct engine_wr wr = { .wr_id = 77, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
				.lkey = ma->lkey, .len = 100, .rkey = mb->rkey };

	assert_int_equal(pair_post(p, PAIR_A, &wr), 0);
	pair_run_for(p, 5 * p->s[PAIR_A].cfg.rto_init_ns);
	pair_expect(p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 77);
}

#endif
