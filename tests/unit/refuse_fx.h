// SPDX-License-Identifier: MIT
/*
 * What the engine's refusal tests share (test_engine_refuse.c,
 * test_engine_refuse_peer.c): two engines back to back (engine_pair.h),
 * connected or bare, and the small helpers both use.  Include after
 * cmocka.h.
 */
#ifndef MROC_TEST_REFUSE_FX_H
#define MROC_TEST_REFUSE_FX_H

#include "engine_pair.h"

#define REG_LEN		(256 * 1024)
#define MTU		1024
#define SVC		42

struct fx {
	struct pair_fx x;	/* p, a: A's source and READ destination, b: B's target */
	struct pair_pkt *rec[256];	/* first packet of each opcode seen (test_malformed_*) */
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
	struct fx *f = *state;

	for (int i = 0; f && i < 256; i++)
		free(f->rec[i]);
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

static inline void get_stats(struct fx *f, int side, struct engine_stats *st)
{
	engine_get_stats(f->x.p->s[side].eng, st);
}

/* Capture A's data packets (dropping them) while the work posted so far goes out. */
static inline struct pair_capture *capture_a_data(struct fx *f, unsigned want)
{
	return pair_capture_data(f->x.p, PAIR_A, want);
}

#endif
