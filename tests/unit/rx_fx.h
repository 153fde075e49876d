// SPDX-License-Identifier: MIT
/*
 * What the engine's receive-path tests share (test_engine_rx.c,
 * test_engine_split.c): two engines back to back (engine_pair.h), connected
 * plain, with split messages (PROTOCOL 5.2) or split by ports, and the
 * small helpers both use.  Include after cmocka.h.
 */
#ifndef MROC_TEST_RX_FX_H
#define MROC_TEST_RX_FX_H

#include "engine_pair.h"

#define REG_LEN		(256 * 1024)
#define MTU		1024
#define SVC		42

struct fx {
	struct pair_fx x;	/* p, a: A's buffer, b: B's (engine_pair.h) */
};

static inline struct fx *fx_new(void **state, const struct engine_config *ca,
			 const struct engine_config *cb)
{
	return pair_fx_open(state, sizeof(struct fx), ca, cb, REG_LEN, ENGINE_ACCESS_ALL, 1);
}

static inline int setup(void **state)
{
	struct fx *f = fx_new(state, NULL, NULL);

	pair_connect(f->x.p, NULL, NULL, SVC);
	return 0;
}

static inline int setup_bare(void **state)
{
	*state = NULL;
	return 0;
}

static inline int teardown(void **state)
{
	return pair_fx_teardown(state);
}

static inline void post(struct fx *f, const struct engine_wr *wr)
{
	assert_int_equal(pair_post(f->x.p, PAIR_A, wr), 0);
}

static inline void recv_b(struct fx *f, uint64_t id, uint64_t laddr, uint32_t len)
{
	assert_int_equal(pair_post_recv(f->x.p, PAIR_B, id, f->x.b->lkey, laddr, len), 0);
}

static inline void settle(struct fx *f)
{
	pair_run_for(f->x.p, 3 * PAIR_MS);
}

static inline uint64_t stat_b(struct fx *f, enum engine_counter c)
{
	return pair_stat(f->x.p, PAIR_B, c);
}

/* Capture A's data packets (dropping them) while the work posted so far goes out. */
static inline struct pair_capture *capture_a_data(struct fx *f, unsigned want)
{
	return pair_capture_data(f->x.p, PAIR_A, want);
}

#define SPLIT	128	/* bytes: 8 units of 16 */

static inline void split_config(struct engine_config *c, uint32_t unit, uint64_t seed)
{
	pair_test_config(c);
	c->split_unit = unit;
	c->seed = seed;
}

/* A announces SPLIT, B unit_b; A copies up to dup_max bytes and has classes ports. */
static inline int split_pair(void **state, uint32_t unit_b, uint32_t dup_max, uint16_t classes)
{
	struct engine_config ca, cb;
	struct fx *f;

	split_config(&ca, SPLIT, 1);
	split_config(&cb, unit_b, 2);
	ca.dup_max = dup_max;
	ca.sport_classes = classes;
	f = fx_new(state, &ca, &cb);
	pair_connect(f->x.p, NULL, NULL, SVC);
	return 0;
}

/* Both ends announce a unit of SPLIT bytes: a lone small message goes in parts. */
static inline int setup_split(void **state)
{
	return split_pair(state, SPLIT, 0, 0);
}

#define PLANES	4	/* ports, path i on port i mod PLANES (the simulator's planes) */

/* The ports bits of a REQ or REP, as from a peer from before them. */
static inline bool strip_ports(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	uint8_t op = pkt->data[PKT_OPCODE];

	(void)p;
	(void)arg;
	if (op == MROC_OP_CONNECT_REQ || op == MROC_OP_CONNECT_REP)
		pkt->data[MROC_HDR_LEN + 22] &= (uint8_t)~(MROC_CM_F_PORTS | 0xf0);
	return true;
}

/*
 * Both ends as the cluster simulator runs them: unit 32, 8 paths over 4
 * ports (link rate); with old, each end's announcement of its ports lost
 * (peers before them).
 */
static inline int split_planes(void **state, uint64_t link_rate_bps, bool old)
{
	struct engine_qp_attr attr = pair_test_attr();
	struct engine_config c[2];
	struct fx *f;

	for (int i = 0; i < 2; i++) {
		split_config(&c[i], 32, 1 + (uint64_t)i);
		c[i].path_ports = PLANES;
		c[i].link_rate_bps = link_rate_bps;
	}
	attr.npaths = 8;
	f = fx_new(state, &c[0], &c[1]);
	f->x.p->filter = old ? strip_ports : NULL;
	pair_connect(f->x.p, &attr, &attr, SVC);
	f->x.p->filter = NULL;
	return 0;
}

static inline int setup_split_planes(void **state)
{
	return split_planes(state, 0, false);
}

#endif
