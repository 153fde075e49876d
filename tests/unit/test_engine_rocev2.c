// SPDX-License-Identifier: MIT
/*
 * The RoCEv2 baseline's go-back-N (mode_rocev2.c) when two of its go-backs
 * overlap: one from an RNR delay's end (or the stall net), which goes back
 * to the refused DSN with new PSNs while later DSNs are still in flight at
 * older PSNs, and one from a PSN_SEQ NAK (or an RTO) for one of those older
 * PSNs.  The second went back to the DSN its PSN carried, later than the
 * refused one: the refused DSN's resend, at a PSN after it, was forgotten
 * with the PSNs it freed, and never sent again.  The peer's cumulative DSN
 * stood still, nothing was in flight and no timer ran but the dead-peer
 * clock, and 3 s later the QP failed (RETRY_EXC) with a live peer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>

#include "engine_pair.h"

#define REG_LEN		(1024 * 1024)
#define SVC		42

static int teardown(void **state)
{
	return pair_fx_teardown(state);
}

/*
 * From B's RNR NAK on, A's first transmissions go out one late (held here
 * until the next); the one still held when A's go-back begins (its first
 * resend) is lost: a packet in flight, at a PSN before the go-back's.
 */
struct hold_last {
	bool rnr_seen, dropped;
	bool have;
	struct pair_pkt held;
	uint32_t dropped_psn;
};

static bool drop_last_before_go_back(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct hold_last *h = arg;

	if (pkt->from == PAIR_B) {
		if (pkt->data[PKT_OPCODE] == MROC_OP_ACK &&
		    pkt->data[PKT_ACK_NAK_CODE] == MROC_NAK_RNR)
			h->rnr_seen = true;
		return true;
	}
	if (!mroc_op_is_data(pkt->data[PKT_OPCODE]) || !h->rnr_seen || h->dropped)
		return true;
	if (pkt->data[PKT_FLAGS] & MROC_F_RETX) {
		if (h->have) {
			h->dropped = true;
			h->dropped_psn = pkt_get32(h->held.data, PKT_PSN);
		}
		return true;
	}
	if (h->have)
		pair_deliver(p, &h->held);
	h->held = *pkt;
	h->have = true;
	return false;
}

static void test_go_backs_overlap(void **state)
{
	struct engine_qp_attr qa = pair_test_attr(), qb = pair_test_attr();
	struct hold_last h = { 0 };
	struct pair_fx *x;
	struct engine_wr wr;
	uint64_t t0;

	qa.mode = qb.mode = MROC_MODE_ROCEV2;
	x = pair_fx_open(state, sizeof(*x), NULL, NULL, REG_LEN, ENGINE_ACCESS_ALL, 1);
	pair_connect(x->p, &qa, &qb, SVC);
	pair_set_delay(x->p, PAIR_A, 5 * PAIR_US);
	pair_set_delay(x->p, PAIR_B, 5 * PAIR_US);
	x->p->filter = drop_last_before_go_back;
	x->p->filter_arg = &h;

	/* A SEND B has no RECV for yet, then a WRITE long enough to be in flight throughout. */
	wr = pair_fx_wr(x, ENGINE_WR_SEND, 1, 0, 100, 0);
	wr.rkey = 0;
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	wr = pair_fx_wr(x, ENGINE_WR_WRITE, 2, 4096, 512 * 1024, 4096);
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	t0 = x->p->now;
	pair_run_for(x->p, 20 * PAIR_US);
	assert_true(h.rnr_seen);
	assert_int_equal(pair_post_recv(x->p, PAIR_B, 7, x->b->lkey, 0, 100), 0);
	pair_run_for(x->p, 200 * PAIR_MS);
	print_message("lost PSN %u (in flight when the go-back began): %u completions at A, "
		      "QP state %u, after %.1f ms\n", h.dropped_psn, pair_pending(x->p, PAIR_A),
		      pair_state(x->p, PAIR_A), (double)(x->p->now - t0) / PAIR_MS);
	assert_true(h.dropped);
	pair_expect(x->p, PAIR_A, ENGINE_WC_SEND, ENGINE_WC_SUCCESS, 1);
	pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 2);
	pair_expect(x->p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_SUCCESS, 7);
	assert_memory_equal(x->b->buf, x->a->buf, 100);
	assert_memory_equal(x->b->buf + 4096, x->a->buf + 4096, 512 * 1024);
	assert_int_equal(pair_state(x->p, PAIR_A), ENGINE_QPS_CONNECTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_go_backs_overlap, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
