// SPDX-License-Identifier: MIT
/*
 * What the engine's receive path refuses from a peer, two engines back to
 * back (refuse_fx.h): packets for unknown QPs, from the wrong peer, with
 * guessed QPNs or after the close; PSN / DSN / MSN windows, paths beyond the
 * peer's count, bogus ACKs, and a flood of READ requests.  Each refusal is
 * counted, answered as the protocol says, and writes nothing.
 *
 * Valid packets are captured from engine_tx, altered at the byte offsets of
 * docs/PROTOCOL.md 3.1-3.3 (the PKT_* names of engine_pair.h) and fed
 * straight to engine_rx.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "refuse_fx.h"

/* ---- who may send ---------------------------------------------------------------- */

static void test_unknown_qp(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 100, 0);
	uint32_t qb = f->x.p->s[PAIR_B].qpn;
	const uint32_t bad[] = { 0, qb + 0x10000, qb ^ 0x8000, qb + 1, 0xffff, 0xffffffffu };
	struct pair_capture *cap;
	struct pair_pkt pk;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pk = cap->pkt[0];
		pkt_put32(pk.data, PKT_DST_QPN, bad[i]);
		assert_int_equal(pair_deliver(f->x.p, &pk), -ENOENT);
		assert_int_equal(stat_b(f, EC_RX_UNKNOWN_QP), i + 1);
	}
	/* A DISCONNECT for an unknown QP is answered, everything else is not. */
	pk = cap->pkt[0];
	pk.len = MROC_HDR_LEN + MROC_CM_HDR_LEN;
	pk.data[PKT_OPCODE] = MROC_OP_DISCONNECT;
	pk.data[PKT_FLAGS] = 0;
	pkt_put32(pk.data, PKT_DST_QPN, qb + 0x10000);
	assert_int_equal(pair_deliver(f->x.p, &pk), -ENOENT);
	assert_int_equal(stat_b(f, EC_RX_UNKNOWN_QP), 7);
	pair_pump(f->x.p);
	assert_int_equal(f->x.p->s[PAIR_B].sent[MROC_OP_DISCONNECT_ACK], 1);
	assert_int_equal(f->x.p->s[PAIR_B].sent[MROC_OP_ACK], 0);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
	pair_mem_untouched(f->x.b);
	pair_expect_none(f->x.p, PAIR_B);
	/* A's own QP is not disturbed by the answer. */
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_CONNECTED);
}

static void test_bad_peer(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt pk;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	/* Right QPs, wrong peer handle. */
	assert_int_equal(pair_rx(f->x.p, PAIR_B, pk.data, pk.len, 7, pk.sport), -EPERM);
	assert_int_equal(pair_rx(f->x.p, PAIR_B, pk.data, pk.len, PAIR_B, pk.sport), -EPERM);
	assert_int_equal(stat_b(f, EC_RX_BAD_PEER), 2);
	/* Right peer, wrong source QP. */
	pkt_put32(pk.data, PKT_SRC_QPN, f->x.p->s[PAIR_A].qpn + 0x10000);
	assert_int_equal(pair_deliver(f->x.p, &pk), -EPERM);
	assert_int_equal(stat_b(f, EC_RX_BAD_PEER), 3);
	pair_pump(f->x.p);
	assert_int_equal(f->x.p->s[PAIR_B].sent[MROC_OP_ACK], 0);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
	pair_mem_untouched(f->x.b);
	/* The genuine packet is still welcome. */
	pair_capture_stop(f->x.p);
	assert_int_equal(pair_deliver(f->x.p, &cap->pkt[0]), 0);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, 100);
}

/*
 * Issue #13: QPNs are random, so an off-path host that spoofs the peer's
 * address must also guess two 32-bit numbers.  Consecutive QPNs show no
 * pattern (they were 0x10004, 0x20004, ... on both ends); a DISCONNECT and an
 * ACK with an ACCESS NAK carrying the old-style guesses (the right
 * destination QPN, a guessed source QPN) are refused, counted, and change
 * nothing.
 */
static void test_spoofed_qpn_guesses(void **state)
{
	struct fx *f = *state;
	struct engine *eb = f->x.p->s[PAIR_B].eng;
	struct engine_qp_attr attr = pair_test_attr();
	uint32_t q[6], qa = f->x.p->s[PAIR_A].qpn;
	struct pair_capture *cap;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 100, 0);
	struct pair_pkt pk;
	int same_step = 0;

	for (int i = 0; i < 6; i++)
		assert_int_equal(engine_qp_create(eb, &attr, &q[i]), 0);
	for (int i = 2; i < 6; i++)
		same_step += q[i] - q[i - 1] == q[i - 1] - q[i - 2];
	assert_int_equal(same_step, 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(engine_qp_destroy(eb, q[i]), 0);

	/* A DISCONNECT from the peer's address with a guessed source QPN. */
	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	pair_capture_stop(f->x.p);
	pk.data[PKT_OPCODE] = MROC_OP_DISCONNECT;
	pkt_put32(pk.data, PKT_SRC_QPN, (qa & 0xffff) + 0x10000);
	if (((qa & 0xffff) + 0x10000) == qa)
		pkt_put32(pk.data, PKT_SRC_QPN, qa ^ 1);
	pk.len = MROC_HDR_LEN + MROC_CM_HDR_LEN;
	memset(pk.data + MROC_HDR_LEN, 0, MROC_CM_HDR_LEN);
	assert_int_equal(pair_deliver(f->x.p, &pk), -EPERM);
	assert_int_equal(stat_b(f, EC_RX_BAD_PEER), 1);
	assert_int_equal(pair_state(f->x.p, PAIR_B), ENGINE_QPS_CONNECTED);
	/* And the data still gets through. */
	assert_int_equal(pair_deliver(f->x.p, &cap->pkt[0]), 0);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_CONNECTED);
}

/* Data for a QP that is no longer connected is dropped and counted. */
static void test_data_after_disconnect(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt pk;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	pair_capture_stop(f->x.p);
	assert_int_equal(engine_qp_disconnect(f->x.p->s[PAIR_A].eng, f->x.p->s[PAIR_A].qpn, pair_clock(f->x.p, PAIR_A)),
			 0);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_FLUSH_ERR, 1);
	pair_pump(f->x.p);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_EV_DISCONNECTED, PAIR_ANY_STATUS, 0xb);
	assert_int_equal(pair_state(f->x.p, PAIR_B), ENGINE_QPS_IDLE);
	assert_true(pair_deliver(f->x.p, &pk) < 0);
	assert_int_equal(stat_b(f, EC_RX_BAD_STATE), 1);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
	pair_mem_untouched(f->x.b);
}

/* ---- windows ----------------------------------------------------------------------- */

static void test_psn_window(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt pk;
	uint32_t psn;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	psn = pkt_get32(pk.data, PKT_PSN);
	assert_int_equal(pkt_get32(pk.data, PKT_PSN_FLOOR), psn);
	/* cum + 257, with a floor too far below it to move the window. */
	pkt_put32(pk.data, PKT_PSN, psn + MROC_SACK_BITS + 1);
	assert_true(pair_deliver(f->x.p, &pk) < 0);
	pkt_put32(pk.data, PKT_PSN, psn + 100000);
	assert_true(pair_deliver(f->x.p, &pk) < 0);
	assert_int_equal(stat_b(f, EC_RX_OUT_OF_WINDOW), 2);
	pair_pump(f->x.p);
	assert_int_equal(f->x.p->s[PAIR_B].sent[MROC_OP_ACK], 0);	/* not acknowledged */
	pair_mem_untouched(f->x.b);
	/* cum + 256 is the last PSN inside: placed. */
	pkt_put32(pk.data, PKT_PSN, psn + MROC_SACK_BITS);
	assert_int_equal(pair_deliver(f->x.p, &pk), 0);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, 100);
	pair_pump(f->x.p);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	/* B's ACKs SACK that PSN, which A never sent: counted, the rest of them taken. */
	assert_true(pair_stat(f->x.p, PAIR_A, EC_RX_SACK_UNSENT) >= 1);
}

static void test_dsn_msn_window(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt pk;
	uint32_t dsn, msn;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	dsn = pkt_get32(pk.data, PKT_DSN);
	msn = pkt_get32(pk.data, PKT_MSN);
	pkt_put32(pk.data, PKT_DSN, dsn + MROC_DSN_WINDOW);
	assert_true(pair_deliver(f->x.p, &pk) < 0);
	pkt_put32(pk.data, PKT_DSN, dsn + 0x40000000u);
	assert_true(pair_deliver(f->x.p, &pk) < 0);
	pkt_put32(pk.data, PKT_DSN, dsn);
	pkt_put32(pk.data, PKT_MSN, msn + 1024);
	assert_true(pair_deliver(f->x.p, &pk) < 0);
	assert_int_equal(stat_b(f, EC_RX_OUT_OF_WINDOW), 3);
	pair_mem_untouched(f->x.b);
	/* The last DSN inside the window is placed (its message never completes). */
	pk = cap->pkt[0];
	pkt_put32(pk.data, PKT_DSN, dsn + MROC_DSN_WINDOW - 1);
	pkt_put32(pk.data, PKT_MSN, msn + 1023);
	assert_int_equal(pair_deliver(f->x.p, &pk), 0);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, 100);
	pair_expect_none(f->x.p, PAIR_A);
}

/*
 * path_id must be below the npaths the sender announced (docs/PROTOCOL.md
 * 6.2): otherwise dropped and counted out of window (12).  (Regression: the
 * peer's npaths was not kept and such packets were placed; fixed in 77defe7.)
 */
static void test_path_beyond_npaths(void **state)
{
	struct engine_qp_attr qa = pair_test_attr();
	struct fx *f;

	f = fx_new(state, NULL, NULL);
	struct engine_wr wr;
	struct pair_capture *cap;
	struct pair_pkt pk;

	qa.npaths = 1;
	qa.user = 0xa;
	pair_connect(f->x.p, &qa, NULL, SVC);
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 100, 0);
	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	assert_int_equal(pk.data[PKT_PATH], 0);
	pk.data[PKT_PATH] = 3;
	assert_true(pair_deliver(f->x.p, &pk) < 0);
	assert_int_equal(stat_b(f, EC_RX_OUT_OF_WINDOW), 1);
	pair_mem_untouched(f->x.b);
}

/* One genuine ACK of B (for a completed WRITE), and a WRITE 2 whose data never arrives. */
static struct pair_pkt bogus_ack_setup(struct fx *f)
{
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt ack;

	cap = pair_capture_start(f->x.p, PAIR_B, PAIR_OP_BIT(MROC_OP_ACK), true);
	post(f, &wr);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	assert_true(cap->n >= 1);
	ack = cap->pkt[cap->n - 1];
	wr.wr_id = 2;
	post(f, &wr);
	capture_a_data(f, 1);
	return ack;
}

/* ACKs acknowledging what A never sent change nothing (docs/PROTOCOL.md 7.9). */
static void test_bogus_acks_ignored(void **state)
{
	struct fx *f = *state;
	struct pair_pkt ack = bogus_ack_setup(f), bad;
	uint32_t cum_dsn = pkt_get32(ack.data, PKT_ACK_CUM_DSN);

	/* cum_dsn past everything A sent must not complete WRITE 2. */
	bad = ack;
	pkt_put32(bad.data, PKT_ACK_CUM_DSN, cum_dsn + 10);
	pair_deliver(f->x.p, &bad);
	pkt_put32(bad.data, PKT_ACK_CUM_DSN, cum_dsn + 0x7fffffffu);
	pair_deliver(f->x.p, &bad);
	/* Nor an ACK whose cum_psn is past every PSN A sent on that path. */
	bad = ack;
	pkt_put32(bad.data, PKT_ACK_CUM_PSN, pkt_get32(ack.data, PKT_ACK_CUM_PSN) + 50);
	pkt_put32(bad.data, PKT_ACK_CUM_DSN, cum_dsn + 1);
	pair_deliver(f->x.p, &bad);
	/* Nor one for a path A does not have. */
	bad = ack;
	bad.data[PKT_PATH] = 9;
	pkt_put32(bad.data, PKT_ACK_CUM_DSN, cum_dsn + 1);
	pair_deliver(f->x.p, &bad);
	pair_expect_none(f->x.p, PAIR_A);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_CONNECTED);
	/* WRITE 2 still completes once its data really arrives. */
	pair_capture_stop(f->x.p);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 2);
}

/*
 * Those ACKs are counted: "ACK for PSNs or DSNs not sent" and "path_id >=
 * npaths" are EC_RX_OUT_OF_WINDOW (docs/PROTOCOL.md 12).  (Regression: they
 * were dropped without a count; fixed in 77defe7.)
 */
static void test_bogus_acks_counted(void **state)
{
	struct fx *f = *state;
	struct pair_pkt ack, bad;
	uint32_t cum_dsn;

	ack = bogus_ack_setup(f);
	cum_dsn = pkt_get32(ack.data, PKT_ACK_CUM_DSN);
	bad = ack;
	pkt_put32(bad.data, PKT_ACK_CUM_DSN, cum_dsn + 10);
	pair_deliver(f->x.p, &bad);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RX_OUT_OF_WINDOW), 1);
	bad = ack;
	pkt_put32(bad.data, PKT_ACK_CUM_PSN, pkt_get32(ack.data, PKT_ACK_CUM_PSN) + 50);
	pair_deliver(f->x.p, &bad);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RX_OUT_OF_WINDOW), 2);
	bad = ack;
	bad.data[PKT_PATH] = 9;
	pair_deliver(f->x.p, &bad);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RX_OUT_OF_WINDOW), 3);
	/*
	 * #24, the second look: a SACK bitmap that claims a PSN A never sent on
	 * the path (here cum_psn + 256, the last bit; then cum_psn + 1) was
	 * skipped silently.  Those bits are still ignored, and counted.
	 */
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RX_SACK_UNSENT), 0);
	bad = ack;
	bad.data[PKT_ACK_SACK + MROC_SACK_BYTES - 1] = 0x80;
	pair_deliver(f->x.p, &bad);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RX_SACK_UNSENT), 1);
	bad = ack;
	bad.data[PKT_ACK_SACK] = 0x01;
	pair_deliver(f->x.p, &bad);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RX_SACK_UNSENT), 2);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RX_OUT_OF_WINDOW), 3);
	pair_expect_none(f->x.p, PAIR_A);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_CONNECTED);
}

/*
 * A requester that ignores the cap of MROC_MAX_RD outstanding READs and
 * atomics (forged: one READ_REQ replayed with the next PSN, DSN and MSN)
 * gets at most that many answers queued: the responder's own sends still
 * post.  Issue #23: every delivered READ_REQ became a queued response up to
 * the message ring's end (sq_depth + 16, rounded up: 128 here), and B's
 * engine_post_send then failed with -ENOSPC with its send queue empty.
 */
static void test_read_flood_bounded(void **state)
{
	enum { FLOOD = 160, SQ = 64 };
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_READ, 1, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt req;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	req = cap->pkt[0];
	assert_int_equal(req.data[PKT_OPCODE], MROC_OP_READ_REQ);
	for (uint32_t i = 0; i < FLOOD; i++) {
		struct pair_pkt r = req;

		pkt_put32(r.data, PKT_PSN, pkt_get32(req.data, PKT_PSN) + i);
		pkt_put32(r.data, PKT_DSN, pkt_get32(req.data, PKT_DSN) + i);
		pkt_put32(r.data, PKT_MSN, pkt_get32(req.data, PKT_MSN) + i);
		assert_int_equal(pair_deliver(f->x.p, &r), 0);
	}
	/* B's whole send queue still posts. */
	for (uint32_t i = 0; i < SQ; i++) {
		struct engine_wr w = {
			.wr_id = 100 + i, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
			.lkey = f->x.b->lkey, .laddr = 0, .len = 64,
			.rkey = f->x.a->rkey, .raddr = 64 * i,
		};

		assert_int_equal(pair_post(f->x.p, PAIR_B, &w), 0);
	}
	pair_capture_stop(f->x.p);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TB(fn) cmocka_unit_test_setup_teardown(fn, setup_bare, teardown)
	const struct CMUnitTest tests[] = {
		T(test_unknown_qp),
		T(test_bad_peer),
		T(test_spoofed_qpn_guesses),
		T(test_data_after_disconnect),
		T(test_psn_window),
		T(test_dsn_msn_window),
		TB(test_path_beyond_npaths),
		T(test_bogus_acks_ignored),
		T(test_bogus_acks_counted),
		T(test_read_flood_bounded),
	};
#undef T
#undef TB

	return cmocka_run_group_tests(tests, NULL, NULL);
}

