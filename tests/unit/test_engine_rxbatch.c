// SPDX-License-Identifier: MIT
/*
 * A receive batch's ACKs (engine_rx_begin .. engine_rx_end, engine/engine.c
 * ack_hold): a sender that takes its peer's ACKs tens at a time, as mrocd's
 * worker does, applies the newest of each path once and moves the same
 * data; a forged ACK in a batch is refused and holds nothing back; an older
 * ACK that comes after a newer one (or a replay of it) is not merged into
 * it; a QP destroyed mid-batch takes its held ACKs with it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "engine_pair.h"

#define SVC		7
#define LEN		(256 * 1024)
#define HOLD_MAX	64
#define PKT_ACK_RCV	(PKT_ACK_CUM_PSN + 12)	/* rcv_pkts (PROTOCOL 3.3) */

struct fx {
	struct pair *p;
	struct pair_mem *a, *b;
};

/*
 * B's ACKs to A held back (up to HOLD_MAX; more go through as usual) and
 * given to A in batches; every 17th data packet dropped.  batch: inside
 * engine_rx_begin .. _end; forge: each batch's first ACK with its tag
 * broken (given as an extra packet before the batch's own).
 */
struct held {
	unsigned drop;
	bool batch, forge;
	int n;
	struct pair_pkt pkt[HOLD_MAX];
};

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f)
		pair_free(f->p);
	free(f);
	return 0;
}

static struct fx *open_fx(void **state, uint8_t mode, bool merge)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct engine_config ca, cb;

	assert_non_null(f);
	pair_test_config(&ca);
	pair_test_config(&cb);
	ca.sec_mode = cb.sec_mode = mode;
	ca.merge_acks = cb.merge_acks = merge;
	ca.seed = 11;
	cb.seed = 12;
	f->p = pair_new(&ca, &cb);
	f->a = pair_mem_new(f->p, PAIR_A, LEN, 1, ENGINE_ACCESS_ALL);
	f->b = pair_mem_new(f->p, PAIR_B, LEN, 1, ENGINE_ACCESS_ALL);
	*state = f;
	return f;
}

static bool hold_acks(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct held *h = arg;

	(void)p;
	if (mroc_op_is_data(pkt->data[PKT_OPCODE]) && ++h->drop % 17 == 0)
		return false;
	if (pkt->from != PAIR_B || pkt->data[PKT_OPCODE] != MROC_OP_ACK || h->n == HOLD_MAX)
		return true;
	h->pkt[h->n++] = *pkt;
	return false;
}

static void give_acks(struct pair *p, struct held *h)
{
	struct engine *eng = p->s[PAIR_A].eng;

	if (h->batch)
		engine_rx_begin(eng);
	if (h->forge) {
		struct pair_pkt bad = h->pkt[0];

		bad.data[bad.len - 1] ^= 0x10;
		assert_int_equal(pair_deliver(p, &bad), -EBADMSG);
	}
	for (int i = 0; i < h->n; i++)
		pair_deliver(p, &h->pkt[i]);
	if (h->batch)
		engine_rx_end(eng, pair_clock(p, PAIR_A));
	pair_poll(p);
	h->n = 0;
}

/* A WRITE of LEN through loss with B's ACKs given in batches; returns A's merged ACKs. */
static uint64_t batched_run(struct fx *f, struct held *h)
{
	struct engine_wr wr = {
		.wr_id = 1, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
		.lkey = f->a->lkey, .len = LEN, .rkey = f->b->rkey,
	};
	uint64_t end;

	pair_connect(f->p, NULL, NULL, SVC);
	pair_mem_fill(f->a, 3);
	f->p->filter = hold_acks;
	f->p->filter_arg = h;
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	for (end = f->p->now + 500 * PAIR_MS; f->p->now < end && !pair_pending(f->p, PAIR_A);) {
		pair_run_for(f->p, 20 * PAIR_US);
		if (h->n)
			give_acks(f->p, h);
	}
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->b, 0, f->a->buf, LEN);
	assert_true(pair_stat(f->p, PAIR_A, EC_TX_RETX) > 0);
	return pair_stat(f->p, PAIR_A, EC_RX_ACK_MERGED);
}

/* The ACKs in batches: nothing merged without engine_rx_begin, or without merge_acks. */
static void test_unbatched_merges_none(void **state)
{
	static struct held h;
	struct fx *f = open_fx(state, MROC_SEC_TOKEN, true);

	h = (struct held){ .batch = false };
	assert_int_equal(batched_run(f, &h), 0);
}

static void test_merge_off_merges_none(void **state)
{
	static struct held h;
	struct fx *f = open_fx(state, MROC_SEC_TOKEN, false);

	h = (struct held){ .batch = true };
	assert_int_equal(batched_run(f, &h), 0);
}

/* In batches: most ACKs merged, the data intact, the transfer through loss completes. */
static void test_batched_merges(void **state)
{
	static struct held h;
	struct fx *f = open_fx(state, MROC_SEC_TOKEN, true);
	uint64_t merged, acks;

	h = (struct held){ .batch = true };
	merged = batched_run(f, &h);
	acks = pair_stat(f->p, PAIR_B, EC_TX_ACKS);
	assert_true(merged > 0);
	assert_true(merged < acks);
}

/* A forged ACK before each batch: refused and counted, the batch's own still taken. */
static void test_batched_forged_refused(void **state)
{
	static struct held h;
	struct fx *f = open_fx(state, MROC_SEC_TOKEN, true);

	h = (struct held){ .batch = true, .forge = true };
	assert_true(batched_run(f, &h) > 0);
	assert_true(pair_stat(f->p, PAIR_A, EC_RX_BAD_TAG) > 0);
}

/*
 * Two ACKs of one path in a batch, the newer first: the older is not merged
 * into it (it says less); the newer's news is taken all the same.  A replay
 * of the newer in the same batch is merged and says nothing new.
 */
static void test_older_not_merged(void **state)
{
	struct fx *f = open_fx(state, MROC_SEC_NONE, true);
	struct engine_wr wr = {
		.wr_id = 1, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
		.lkey = f->a->lkey, .len = 64 * 1024, .rkey = f->b->rkey,
	};
	struct pair_capture *cap;
	struct pair_pkt *older = NULL, *newer = NULL;
	struct engine *eng;

	pair_connect(f->p, NULL, NULL, SVC);
	eng = f->p->s[PAIR_A].eng;
	cap = pair_capture_start(f->p, PAIR_B, PAIR_OP_BIT(MROC_OP_ACK), true);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	pair_run_for(f->p, 5 * PAIR_MS);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	/* Two ACKs B sent on one path, after A took them: all they say is old news now. */
	for (unsigned i = 0; i < cap->n && !newer; i++) {
		if (cap->pkt[i].data[PKT_OPCODE] != MROC_OP_ACK)
			continue;
		if (!older)
			older = &cap->pkt[i];
		else if (cap->pkt[i].data[PKT_PATH] == older->data[PKT_PATH] &&
			 pkt_get32(cap->pkt[i].data, PKT_ACK_RCV) != pkt_get32(older->data, PKT_ACK_RCV))
			newer = &cap->pkt[i];
	}
	assert_non_null(newer);
	engine_rx_begin(eng);
	assert_int_equal(pair_deliver(f->p, newer), 0);
	assert_true(engine_rx_repeat(eng));
	assert_int_equal(pair_deliver(f->p, older), 0);
	assert_true(engine_rx_repeat(eng));
	engine_rx_end(eng, pair_clock(f->p, PAIR_A));
	assert_int_equal(pair_stat(f->p, PAIR_A, EC_RX_ACK_MERGED), 0);
	engine_rx_begin(eng);
	assert_int_equal(pair_deliver(f->p, older), 0);
	assert_int_equal(pair_deliver(f->p, newer), 0);
	assert_int_equal(pair_deliver(f->p, newer), 0);
	assert_true(engine_rx_repeat(eng));
	engine_rx_end(eng, pair_clock(f->p, PAIR_A));
	assert_int_equal(pair_stat(f->p, PAIR_A, EC_RX_ACK_MERGED), 2);
	pair_capture_stop(f->p);
}

/* A QP destroyed with ACKs held: they go with it, engine_rx_end touches nothing of it. */
static void test_destroy_mid_batch(void **state)
{
	struct fx *f = open_fx(state, MROC_SEC_NONE, true);
	struct engine_wr wr = {
		.wr_id = 1, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
		.lkey = f->a->lkey, .len = 16 * 1024, .rkey = f->b->rkey,
	};
	struct pair_capture *cap;
	struct engine *eng;
	unsigned acks = 0;

	pair_connect(f->p, NULL, NULL, SVC);
	eng = f->p->s[PAIR_A].eng;
	cap = pair_capture_start(f->p, PAIR_B, PAIR_OP_BIT(MROC_OP_ACK), true);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	pair_run_for(f->p, 5 * PAIR_MS);
	engine_rx_begin(eng);
	for (unsigned i = 0; i < cap->n; i++)
		if (cap->pkt[i].data[PKT_OPCODE] == MROC_OP_ACK) {
			assert_int_equal(pair_deliver(f->p, &cap->pkt[i]), 0);
			acks++;
		}
	assert_true(acks > 0);
	assert_int_equal(engine_qp_destroy(eng, f->p->s[PAIR_A].qpn), 0);
	engine_rx_end(eng, pair_clock(f->p, PAIR_A));
	pair_capture_stop(f->p);
	f->p->unchecked = true;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_unbatched_merges_none, teardown),
		cmocka_unit_test_teardown(test_merge_off_merges_none, teardown),
		cmocka_unit_test_teardown(test_batched_merges, teardown),
		cmocka_unit_test_teardown(test_batched_forged_refused, teardown),
		cmocka_unit_test_teardown(test_older_not_merged, teardown),
		cmocka_unit_test_teardown(test_destroy_mid_batch, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
