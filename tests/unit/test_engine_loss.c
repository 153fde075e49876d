// SPDX-License-Identifier: MIT
/*
 * The engine under loss, two engines back to back (loss_fx.h): transfers
 * across the wrap of the PSN and DSN spaces with packets dropped, long idle
 * gaps, very late packets after a retransmission finished the job, echoes
 * that are no send time of ours, and the RoCEv2 baseline's go-back-N.
 * A stalled or dead peer: test_engine_dead.c; paths that lose:
 * test_engine_paths.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "loss_fx.h"

/* ---- wrap of the sequence spaces, with loss ------------------------------------- */

struct wrap_filter {
	unsigned every;			/* drop every n-th data packet of either side */
	uint64_t data[2], dropped;
	bool saw_psn_top, saw_psn_zero, saw_dsn_top, saw_dsn_zero;
};

static bool drop_every_nth(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct wrap_filter *w = arg;
	uint32_t psn, dsn;

	(void)p;
	if (!mroc_op_is_data(pkt->data[PKT_OPCODE]))
		return true;
	psn = pkt_get32(pkt->data, PKT_PSN);
	dsn = pkt_get32(pkt->data, PKT_DSN);
	w->saw_psn_top |= psn == 0xffffffffu;
	w->saw_psn_zero |= psn == 0;
	w->saw_dsn_top |= dsn == 0xffffffffu;
	w->saw_dsn_zero |= dsn == 0;
	if (++w->data[pkt->from] % w->every)
		return true;
	w->dropped++;
	return false;
}

struct wrap_case {
	uint8_t npaths;
	uint32_t nseg;
};

/*
 * Fixed initial sequence numbers just below 2^32 on both sides: a WRITE from
 * A and a READ of it back (B's READ responses) both cross the wrap of the
 * PSN and DSN spaces while every 7th data packet is lost.
 */
static void test_wrap_with_loss(void **state)
{
	const struct wrap_case *wc = *state;
	struct engine_config cfg;
	struct engine_qp_attr qa = attr_of(wc->npaths, 0xa), qb = attr_of(wc->npaths, 0xb);
	uint32_t mtu = 256, len = wc->nseg * mtu - 17;
	struct wrap_filter w = { .every = 7 };
	struct engine_wr wr;
	struct fx *f;

	pair_test_config(&cfg);
	cfg.mtu = mtu;
	qa.fixed_isn = qb.fixed_isn = true;
	qa.isn_psn = qb.isn_psn = 0xffffff00u;
	qa.isn_dsn = qb.isn_dsn = 0xffffff80u;
	f = fx_open(state, &cfg, &cfg, &qa, &qb);
	f->x.p->filter = drop_every_nth;
	f->x.p->filter_arg = &w;

	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, len, 0);
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	run_until_cqe(f, PAIR_A, 500 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, len);

	wr = pair_fx_wr(&f->x, ENGINE_WR_READ, 2, len, len, 0);
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	run_until_cqe(f, PAIR_A, 500 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_SUCCESS, 2);
	assert_memory_equal(f->x.a->buf + len, f->x.a->buf, len);
	pair_expect_none(f->x.p, PAIR_B);

	/* Loss really happened, on both sides, and both spaces really wrapped. */
	assert_true(w.dropped >= 2 * wc->nseg / 7);
	assert_true(w.data[PAIR_A] > wc->nseg && w.data[PAIR_B] > wc->nseg);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_TX_RETX) > 0);
	assert_true(pair_stat(f->x.p, PAIR_B, EC_TX_RETX) > 0);
	assert_true(w.saw_psn_top && w.saw_psn_zero && w.saw_dsn_top && w.saw_dsn_zero);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_CONNECTED);
	assert_int_equal(pair_state(f->x.p, PAIR_B), ENGINE_QPS_CONNECTED);
}

static const struct wrap_case wrap_1path = { 1, 400 };
static const struct wrap_case wrap_4paths = { 4, 1500 };

/*
 * Issue #23 finding 6: both directions cross 2^32 DSNs at once, with every
 * 7th data packet lost, under PFC-style timers (rto_min 50 ms).  The
 * receiver sized its DSN map with a difference that was not serial
 * arithmetic: every segment past the wrap before rcv_cum wrapped was refused
 * (SACKed, not placed), and only the stall safety net, 4 x rto_min later,
 * had it resent: each direction took 200 ms and more.  Now each message
 * completes in a few RTTs (well under one rto_min: the losses are found by
 * SACK, the cross-path rule and the probe, none of which waits for it).
 */
static void test_wrap_both_ways_pfc_timers(void **state)
{
	struct engine_config cfg;
	struct engine_qp_attr qa = attr_of(4, 0xa), qb = attr_of(4, 0xb);
	uint32_t len = 300 * 256 - 5;
	struct wrap_filter w = { .every = 7 };
	struct engine_wr wa, wb;
	struct fx *f;
	uint64_t t0;
	bool done_a = false, done_b = false;

	pair_test_config(&cfg);
	cfg.mtu = 256;
	cfg.rto_min_ns = cfg.rto_init_ns = 50 * PAIR_MS;
	cfg.rto_max_ns = 1000 * PAIR_MS;
	qa.fixed_isn = qb.fixed_isn = true;
	qa.isn_psn = 0x7fffff00u;
	qb.isn_psn = 0xffffffc0u;
	qa.isn_dsn = 0xffffffa0u;
	qb.isn_dsn = 0xfffffff0u;
	f = fx_open(state, &cfg, &cfg, &qa, &qb);
	pair_mem_fill(f->x.b, 2);
	f->x.p->filter = drop_every_nth;
	f->x.p->filter_arg = &w;

	/* A writes its buffer's first half to B's second half, B its first half to A's second. */
	wa = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, len, REG_LEN / 2);
	wb = (struct engine_wr){ .wr_id = 2, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
				 .lkey = f->x.b->lkey, .laddr = 0, .len = len, .rkey = f->x.a->rkey,
				 .raddr = REG_LEN / 2 };
	t0 = f->x.p->now;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wa), 0);
	assert_int_equal(pair_post(f->x.p, PAIR_B, &wb), 0);
	while ((!done_a || !done_b) && f->x.p->now - t0 < 2000 * PAIR_MS) {
		pair_run_for(f->x.p, 100 * PAIR_US);
		if (!done_a && pair_pending(f->x.p, PAIR_A)) {
			pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
			done_a = true;
		}
		if (!done_b && pair_pending(f->x.p, PAIR_B)) {
			pair_expect(f->x.p, PAIR_B, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 2);
			done_b = true;
		}
	}
	print_message("both ways across the DSN wrap: %.1f ms (rto_min %.0f ms)\n",
		      (double)(f->x.p->now - t0) / PAIR_MS, (double)cfg.rto_min_ns / PAIR_MS);
	assert_true(done_a && done_b);
	assert_true(f->x.p->now - t0 < cfg.rto_min_ns);
	assert_memory_equal(f->x.b->buf + REG_LEN / 2, f->x.a->buf, len);
	assert_memory_equal(f->x.a->buf + REG_LEN / 2, f->x.b->buf, len);
	assert_true(w.saw_dsn_top && w.saw_dsn_zero && w.dropped >= 2 * 300 / 7);
	assert_true(w.data[PAIR_A] > 300 && w.data[PAIR_B] > 300);
}

/*
 * One message of more segments than the DSN window (MROC_DSN_WINDOW): the
 * sender stays inside the window and the message completes intact, with
 * loss on the way.
 */
static void test_beyond_dsn_window(void **state)
{
	struct engine_config cfg;
	struct wrap_filter w = { .every = 97 };
	uint32_t len = REG_LEN - 33;
	struct engine_wr wr;
	struct fx *f;

	pair_test_config(&cfg);
	cfg.mtu = 64;
	assert_true(len / cfg.mtu > 2 * MROC_DSN_WINDOW);
	f = fx_open(state, &cfg, &cfg, NULL, NULL);
	f->x.p->filter = drop_every_nth;
	f->x.p->filter_arg = &w;
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, len, 0);
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	run_until_cqe(f, PAIR_A, 1000 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, len);
	assert_true(w.dropped > 0);
	assert_int_equal(pair_stat(f->x.p, PAIR_B, EC_RX_OUT_OF_WINDOW), 0);
}

/* ---- long idle gaps ------------------------------------------------------------- */

/*
 * Hold every n-th last segment of A's messages (offset `last_off`) for
 * `delay` of fake time: it, and so its ACK, comes late, but is not lost.
 */
#define HOLD_MAX 64

struct ack_hold {
	unsigned every;
	uint32_t last_off;
	uint64_t delay, acks;
	unsigned n;
	uint64_t due[HOLD_MAX];
	struct pair_pkt pkt[HOLD_MAX];
};

static bool hold_acks(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct ack_hold *h = arg;

	if (pkt->from != PAIR_A || !mroc_op_is_data(pkt->data[PKT_OPCODE]) ||
	    pkt_get32(pkt->data, PKT_OFFSET) != h->last_off || ++h->acks % h->every ||
	    h->n == HOLD_MAX)
		return true;
	h->due[h->n] = p->now + h->delay;
	h->pkt[h->n++] = *pkt;
	return false;
}

static void hold_release(struct pair *p, struct ack_hold *h)
{
	unsigned k = 0;

	for (unsigned i = 0; i < h->n; i++) {
		if (h->due[i] <= p->now)
			pair_deliver(p, &h->pkt[i]);
		else {
			h->due[k] = h->due[i];
			h->pkt[k++] = h->pkt[i];
		}
	}
	h->n = k;
}

/* WRITEs of len every `every` for `dur`, unsignaled, some ACKs late (h). */
static void stream_writes(struct fx *f, struct ack_hold *h, uint32_t len, uint64_t every,
			  uint64_t dur)
{
	uint64_t end = f->x.p->now + dur;

	f->x.p->filter = hold_acks;
	f->x.p->filter_arg = h;
	for (unsigned i = 0; f->x.p->now < end; i++) {
		struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 100 + i, (i % 64) * 8192, len,
					    (i % 64) * 8192);
		uint64_t next = f->x.p->now + every;

		wr.flags = 0;
		pair_post(f->x.p, PAIR_A, &wr);	/* -ENOSPC when 64 are outstanding: skipped */
		while (f->x.p->now < next) {
			pair_run_for(f->x.p, 5 * PAIR_US);
			hold_release(f->x.p, h);
		}
	}
	while (h->n) {
		pair_run_for(f->x.p, 5 * PAIR_US);
		hold_release(f->x.p, h);
	}
	pair_run_for(f->x.p, 5 * PAIR_MS);
	f->x.p->filter = NULL;
}

struct idle_case {
	uint8_t npaths;
	uint32_t len;		/* of each message, two segments or more */
	uint64_t every;
};

/*
 * Issue #23 finding 5: the send time of the newest delivery (loss detection
 * across paths) was a 32-bit nanosecond stamp kept across idle gaps: after
 * a gap whose length mod 2^32 ns falls in [2^31, 2^32) (3 s here) every new
 * packet compared as sent before it for the next 1.3 s, and the next to
 * come late was declared lost though nothing sent after it had been
 * delivered (no packet is lost in this test: each such loss is spurious,
 * each resend a duplicate).  50 us each way; messages of a few segments
 * over the paths, every 10th last segment 60 us late (past the cross-path
 * rule's wait, before the tail-loss probe's).  Gaps of 1 s, 3 s and 5.5 s
 * (past 2^32 ns and past the timer wheel's reach), each followed by the
 * same traffic as before the first: no loss declared, nothing resent.
 */
static void test_idle_gap_no_spurious_loss(void **state)
{
	static const uint64_t gaps[] = { 1000 * PAIR_MS, 3000 * PAIR_MS, 5500 * PAIR_MS };
	const struct idle_case *ic = *state;
	struct engine_config cfg;
	struct engine_qp_attr qa = attr_of(ic->npaths, 0xa), qb = attr_of(ic->npaths, 0xb);
	struct ack_hold h = { .every = 50, .delay = 150 * PAIR_US, .last_off = ic->len - 1024 };
	uint64_t base_retx, base_rack;
	struct fx *f;

	*state = NULL;
	pair_test_config(&cfg);
	cfg.dead_peer_ns = 10000 * PAIR_MS;
	f = fx_open(state, &cfg, &cfg, &qa, &qb);
	pair_set_delay(f->x.p, PAIR_A, 50 * PAIR_US);
	pair_set_delay(f->x.p, PAIR_B, 50 * PAIR_US);
	stream_writes(f, &h, ic->len, ic->every, 200 * PAIR_MS);
	base_retx = pair_stat(f->x.p, PAIR_A, EC_TX_RETX);
	base_rack = pair_stat(f->x.p, PAIR_A, EC_LOST_RACK);
	print_message("before: %llu resent, %llu lost by the cross-path rule\n",
		      (unsigned long long)base_retx, (unsigned long long)base_rack);
	for (unsigned g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
		uint64_t retx = pair_stat(f->x.p, PAIR_A, EC_TX_RETX);
		uint64_t rack = pair_stat(f->x.p, PAIR_A, EC_LOST_RACK);

		pair_run_for(f->x.p, gaps[g]);
		stream_writes(f, &h, ic->len, ic->every, 200 * PAIR_MS);
		retx = pair_stat(f->x.p, PAIR_A, EC_TX_RETX) - retx;
		rack = pair_stat(f->x.p, PAIR_A, EC_LOST_RACK) - rack;
		print_message("after %.1f s idle: %llu resent, %llu lost by the cross-path rule\n",
			      (double)gaps[g] / 1e9, (unsigned long long)retx,
			      (unsigned long long)rack);
		assert_int_equal(rack, 0);
		assert_true(retx <= base_retx);
	}
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_CONNECTED);
	assert_true(h.acks > 200);
}

static const struct idle_case idle_2paths = { 2, 2048, 500 * PAIR_US };
static const struct idle_case idle_4paths = { 4, 4096, 500 * PAIR_US };

/* ---- very late packets ---------------------------------------------------------- */

/* Capture (and drop) the first transmission of A's data packet with this DSN offset. */
struct first_tx {
	uint32_t seg;			/* which segment of the first message */
	bool have_base, taken;
	uint32_t base_dsn;
	struct pair_pkt pkt;
};

static bool take_first_tx(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct first_tx *ft = arg;

	(void)p;
	if (pkt->from != PAIR_A || !mroc_op_is_data(pkt->data[PKT_OPCODE]))
		return true;
	if (!ft->have_base) {
		ft->have_base = true;
		ft->base_dsn = pkt_get32(pkt->data, PKT_DSN);
	}
	if (ft->taken || pkt_get32(pkt->data, PKT_DSN) != ft->base_dsn + ft->seg)
		return true;
	ft->taken = true;
	ft->pkt = *pkt;
	return false;
}

/*
 * A packet that fills a hole is acknowledged at once (RFC 5681 4.2), not
 * after ack_every packets or ack_delay: the sender measures a route's
 * reordering by how late that ACK comes (qp_ack.c note_reorder), and a
 * held one added the receiver's wait (up to ack_delay) to every window.
 */
static void test_filled_hole_acked_at_once(void **state)
{
	struct engine_qp_attr qa = attr_of(1, 0xa), qb = attr_of(1, 0xb);
	struct engine_config cb;
	struct fx *f;
	struct engine_wr wr;
	struct first_tx ft = { .seg = 0 };
	uint64_t acks, delayed;

	pair_test_config(&cb);
	cb.ack_every = 64;
	cb.ack_delay_ns = PAIR_MS;
	f = fx_open(state, NULL, &cb, &qa, &qb);
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 8 * 1024 - 10, 4096);
	f->x.p->filter = take_first_tx;
	f->x.p->filter_arg = &ft;
	/* 20 us each way: segment 0 is back before any ACK can show it missing. */
	pair_set_delay(f->x.p, PAIR_A, 20 * PAIR_US);
	pair_set_delay(f->x.p, PAIR_B, 20 * PAIR_US);
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	pair_run_for(f->x.p, 25 * PAIR_US);	/* segments 1-7 arrive, 0 held */
	assert_true(ft.taken);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_TX_RETX), 0);
	f->x.p->filter = NULL;
	acks = pair_stat(f->x.p, PAIR_B, EC_TX_ACKS);
	delayed = pair_stat(f->x.p, PAIR_B, EC_TX_ACK_DELAYED);
	assert_int_equal(pair_deliver(f->x.p, &ft.pkt), 0);
	pair_run_for(f->x.p, 5 * PAIR_US);
	assert_int_equal(pair_stat(f->x.p, PAIR_B, EC_TX_ACKS), acks + 1);
	assert_int_equal(pair_stat(f->x.p, PAIR_B, EC_TX_ACK_DELAYED), delayed);
	run_until_cqe(f, PAIR_A, 10 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->x.b, 4096, f->x.a->buf, 8 * 1024 - 10);
}

/*
 * The original of a segment arrives after its retransmission completed the
 * WRITE: a duplicate, nothing written again, no second completion.
 */
static void late_original(void **state, uint8_t npaths, uint32_t nseg, uint32_t seg)
{
	struct engine_qp_attr qa = attr_of(npaths, 0xa), qb = attr_of(npaths, 0xb);
	struct fx *f = fx_open(state, NULL, NULL, &qa, &qb);
	uint32_t len = nseg * 1024 - 10;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, len, 4096);
	struct first_tx ft = { .seg = seg };
	uint64_t dup;

	f->x.p->filter = take_first_tx;
	f->x.p->filter_arg = &ft;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	run_until_cqe(f, PAIR_A, 100 * PAIR_MS);
	assert_true(ft.taken);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->x.b, 4096, f->x.a->buf, len);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_TX_RETX) >= 1);

	/* The application reuses the memory; then the original shows up. */
	memset(f->x.b->buf + 4096, 0x77, len);
	dup = pair_stat(f->x.p, PAIR_B, EC_RX_DUP);
	assert_int_equal(pair_deliver(f->x.p, &ft.pkt), -EALREADY);
	assert_int_equal(pair_stat(f->x.p, PAIR_B, EC_RX_DUP), dup + 1);
	for (uint32_t i = 0; i < len; i++)
		assert_int_equal(f->x.b->buf[4096 + i], 0x77);
	pair_run_for(f->x.p, 5 * PAIR_MS);
	pair_expect_none(f->x.p, PAIR_A);
	pair_expect_none(f->x.p, PAIR_B);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_CONNECTED);
	/* And the QP keeps working. */
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 2, 100, 500, 0);
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	pair_run_for(f->x.p, 5 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 2);
	assert_memory_equal(f->x.b->buf, f->x.a->buf + 100, 500);
}

static void test_late_original_one_path(void **state)
{
	late_original(state, 1, 1, 0);
}

static void test_late_original_four_paths(void **state)
{
	late_original(state, 4, 8, 0);
}

static void test_late_original_tail(void **state)
{
	late_original(state, 4, 8, 7);
}

/* ---- echoes ----------------------------------------------------------------------- */

/*
 * Issue #23 finding 4: the first data packet of a RoCEv2 QP is lost, so the
 * receiver NAKs the second on a path that had received nothing: its echo
 * was the receiver's own clock (1.5 s ahead of or behind ours), which the
 * sender took as an RTT of rto_max into the host's RTT maximum, the floor
 * of every path's RTO for 30-60 s.  The next lost WRITE then waited
 * rto_max (20 ms) instead of about rto_min.  Now the receiver echoes the
 * packet it NAKs, and the sender refuses an echo that is no send time of
 * its own (from the future, or from before the path started).
 */
static void nak_echo_case(void **state, int64_t offset)
{
	struct engine_qp_attr qa = attr_of(1, 0xa), qb = attr_of(1, 0xb);
	struct drop_nth d = { .n = 1 };
	struct engine_config cfg;
	struct engine_wr wr;
	struct fx *f = calloc(1, sizeof(*f));
	uint64_t t0;

	assert_non_null(f);
	*state = f;
	pair_test_config(&cfg);
	qa.mode = qb.mode = MROC_MODE_ROCEV2;
	f->x.p = pair_new(&cfg, &cfg);
	f->x.p->now = 2000 * PAIR_MS;
	pair_set_clock(f->x.p, PAIR_B, offset, 0);
	f->x.a = pair_mem_new(f->x.p, PAIR_A, REG_LEN, 1, ENGINE_ACCESS_ALL);
	f->x.b = pair_mem_new(f->x.p, PAIR_B, REG_LEN, 1, ENGINE_ACCESS_ALL);
	pair_mem_fill(f->x.a, 1);
	pair_connect(f->x.p, &qa, &qb, SVC);

	/* The QP's first data packet is lost: the second is NAKed. */
	f->x.p->filter = drop_nth_a_data;
	f->x.p->filter_arg = &d;
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 4 * cfg.mtu, 0);
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	run_until_cqe(f, PAIR_A, 100 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	assert_true(pair_stat(f->x.p, PAIR_B, EC_RX_SEQ_ERR) >= 1);
	pair_run_for(f->x.p, 1 * PAIR_MS);

	/* A lone WRITE later is lost once: its RTO is not held at rto_max. */
	d = (struct drop_nth){ .n = 1 };
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 2, 0, 100, 0);
	t0 = f->x.p->now;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	run_until_cqe(f, PAIR_A, 100 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 2);
	print_message("receiver's clock %+.1f s: lost WRITE recovered after %.2f ms "
		      "(rto_min %.1f ms, rto_max %.0f ms)\n", (double)offset / 1e9,
		      (double)(f->x.p->now - t0) / PAIR_MS, (double)cfg.rto_min_ns / PAIR_MS,
		      (double)cfg.rto_max_ns / PAIR_MS);
	assert_true(f->x.p->now - t0 < cfg.rto_max_ns / 4);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RTO), 1);
}

static void test_nak_echo_clock_ahead(void **state)
{
	nak_echo_case(state, 1500 * PAIR_MS);
}

static void test_nak_echo_clock_behind(void **state)
{
	nak_echo_case(state, -1500 * (int64_t)PAIR_MS);
}

/*
 * The sender's side of finding 4, against a peer that sends such an echo on
 * purpose: B's ACKs of one WRITE are rewritten to echo 1.5 s before A's
 * clock (older than anything the path ever sent), then 1.5 s after it.
 * Each is refused (counted), takes no RTT sample, and a lost WRITE after
 * them is resent about rto_min later, not rto_max.
 */
static void forge_echo(struct fx *f, uint32_t echo)
{
	struct pair_capture *cap = pair_capture_start(f->x.p, PAIR_B, PAIR_OP_BIT(MROC_OP_ACK),
						      false);
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 7, 0, 100, 0);

	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	pair_pump(f->x.p);
	pair_capture_stop(f->x.p);
	assert_true(cap->n >= 1);
	for (unsigned i = 0; i < cap->n; i++) {
		pkt_put32(cap->pkt[i].data, PKT_ACK_CUM_PSN + 8, echo);
		pair_deliver(f->x.p, &cap->pkt[i]);
	}
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 7);
}

static void test_forged_echo_refused(void **state)
{
	struct fx *f = fx_open(state, NULL, NULL, NULL, NULL);
	struct drop_nth d = { .n = 1 };
	uint64_t t0, a_now;
	struct engine_wr wr;

	f->x.p->now = 3000 * PAIR_MS;
	pair_run_for(f->x.p, 1 * PAIR_MS);
	a_now = pair_clock(f->x.p, PAIR_A);
	forge_echo(f, (uint32_t)(a_now - 1500 * PAIR_MS));
	forge_echo(f, (uint32_t)(a_now + 1500 * PAIR_MS));
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RX_BAD_ECHO), 2);
	f->x.p->filter = drop_nth_a_data;
	f->x.p->filter_arg = &d;
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 8, 0, 100, 0);
	t0 = f->x.p->now;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	run_until_cqe(f, PAIR_A, 100 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 8);
	assert_true(f->x.p->now - t0 < f->x.p->s[PAIR_A].cfg.rto_max_ns / 4);
}

/* ---- RoCEv2 baseline -------------------------------------------------------------- */

struct gbn_filter {
	uint64_t a_data;
	unsigned drop_at;		/* drop A's n-th data packet (1-based) */
	uint32_t dropped_psn, dropped_dsn;
	bool have_expect;
	uint32_t expect;		/* receiver model: next PSN it accepts */
	uint32_t next_new;		/* sender: one above the highest PSN sent */
	uint64_t resends;		/* sender: packets with a PSN sent before */
	uint64_t seq_err;		/* arrivals after a gap, per the model */
	bool resent_same_psn;
	uint16_t nak_seqs[16];
	unsigned nnak;
	bool sack_nonzero;
};

static bool gbn_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct gbn_filter *g = arg;
	const uint8_t *d = pkt->data;
	uint32_t psn, dsn;

	(void)p;
	if (pkt->from == PAIR_B && d[PKT_OPCODE] == MROC_OP_ACK) {
		uint16_t seq = pkt_get16(d, PKT_ACK_NAK_SEQ);

		for (int i = 0; i < MROC_SACK_BYTES; i++)
			g->sack_nonzero |= d[PKT_ACK_SACK + i] != 0;
		if (seq && d[PKT_ACK_NAK_CODE] == MROC_NAK_PSN_SEQ &&
		    (!g->nnak || g->nak_seqs[g->nnak - 1] != seq) && g->nnak < 16)
			g->nak_seqs[g->nnak++] = seq;
		return true;
	}
	if (pkt->from != PAIR_A || !mroc_op_is_data(d[PKT_OPCODE]))
		return true;
	psn = pkt_get32(d, PKT_PSN);
	dsn = pkt_get32(d, PKT_DSN);
	if (!g->have_expect) {
		g->have_expect = true;
		g->expect = g->next_new = psn;
	}
	/* Sender side: a PSN sent before is a go-back resend. */
	if ((int32_t)(psn - g->next_new) < 0)
		g->resends++;
	else
		g->next_new = psn + 1;
	if (++g->a_data == g->drop_at) {
		g->dropped_psn = psn;
		g->dropped_dsn = dsn;
		return false;
	}
	if (g->a_data > g->drop_at && psn == g->dropped_psn)
		g->resent_same_psn = dsn == g->dropped_dsn;
	/* Receiver side: only the expected PSN is taken. */
	if (psn == g->expect)
		g->expect++;
	else if ((int32_t)(psn - g->expect) > 0)
		g->seq_err++;
	return true;
}

static void test_rocev2_go_back_n(void **state)
{
	struct engine_qp_attr qa = attr_of(4, 0xa), qb = attr_of(4, 0xb);
	struct gbn_filter g = { .drop_at = 3 };
	struct engine_qp_info info;
	uint32_t len = 10 * 1024 - 1;
	struct engine_wr wr;
	struct fx *f;
	uint64_t t0;

	qa.mode = qb.mode = MROC_MODE_ROCEV2;
	f = fx_open(state, NULL, NULL, &qa, &qb);
	assert_int_equal(engine_qp_info(f->x.p->s[PAIR_A].eng, f->x.p->s[PAIR_A].qpn, &info), 0);
	assert_int_equal(info.npaths, 1);	/* forced to one path */
	assert_int_equal(info.mode, MROC_MODE_ROCEV2);
	f->x.p->filter = gbn_filter;
	f->x.p->filter_arg = &g;
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, len, 0);
	t0 = f->x.p->now;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	run_until_cqe(f, PAIR_A, 100 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, len);
	/* Recovered by the NAK within the round trip, not by a timeout. */
	assert_true(f->x.p->now - t0 < f->x.p->s[PAIR_A].cfg.rto_min_ns / 2);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RTO), 0);

	/* Every arrival after the gap was refused as out of sequence ... */
	assert_true(g.seq_err >= 1);
	assert_int_equal(pair_stat(f->x.p, PAIR_B, EC_RX_SEQ_ERR), g.seq_err);
	/* ... answered by one PSN_SEQ NAK, and A went back with the same PSNs. */
	assert_int_equal(g.nnak, 1);
	assert_true(g.resent_same_psn);
	assert_false(g.sack_nonzero);
	assert_true(g.resends >= 1);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_TX_RETX), g.resends);
	pair_expect_none(f->x.p, PAIR_B);
}

int main(void)
{
#define T(fn) cmocka_unit_test_teardown(fn, teardown)
#define TWRAP(name, wc) { "test_wrap_with_loss_" name, test_wrap_with_loss, NULL, teardown, \
			   (void *)&(wc) }
#define TIDLE(name, ic) { "test_idle_gap_no_spurious_loss_" name, \
			    test_idle_gap_no_spurious_loss, NULL, teardown, (void *)&(ic) }
	const struct CMUnitTest tests[] = {
		TWRAP("1_path", wrap_1path),
		TWRAP("4_paths", wrap_4paths),
		T(test_wrap_both_ways_pfc_timers),
		T(test_beyond_dsn_window),
		TIDLE("2_paths", idle_2paths),
		TIDLE("4_paths", idle_4paths),
		T(test_late_original_one_path),
		T(test_late_original_four_paths),
		T(test_late_original_tail),
		T(test_filled_hole_acked_at_once),
		T(test_nak_echo_clock_ahead),
		T(test_nak_echo_clock_behind),
		T(test_forged_echo_refused),
		T(test_rocev2_go_back_n),
	};
#undef T
#undef TWRAP
#undef TIDLE

	return cmocka_run_group_tests(tests, NULL, NULL);
}
