// SPDX-License-Identifier: MIT
/*
 * The engine against a peer that stalls or dies, two engines back to back
 * (loss_fx.h): ACKs held by a stalled peer (RTO learnt, spurious RTOs
 * undone), a dead peer with data outstanding and idle, keepalives, and the
 * retry count.
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

/* ---- a stalled peer ------------------------------------------------------------ */

/* B's packets (its ACKs) wait while `hold`, as behind a worker off its CPU. */
struct stall {
	bool hold;
	unsigned n;
	struct pair_pkt pkts[512];
};

static bool hold_b(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct stall *st = arg;

	(void)p;
	if (!st->hold || pkt->from != PAIR_B)
		return true;
	assert_true(st->n < sizeof(st->pkts) / sizeof(st->pkts[0]));
	st->pkts[st->n++] = *pkt;
	return false;
}

/* A WRITE whose ACKs B holds for `len` of fake time from its start; then all arrive. */
static void write_through_stall(struct fx *f, struct stall *st, uint64_t id, uint64_t len)
{
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, id, 0, 256 * 1024, 0);

	st->hold = true;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	pair_run_for(f->x.p, len);
	st->hold = false;
	for (unsigned i = 0; i < st->n; i++)
		pair_deliver(f->x.p, &st->pkts[i]);
	st->n = 0;
	run_until_cqe(f, PAIR_A, 100 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, id);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, 256 * 1024);
}

/*
 * The peer goes silent for 10 x rto_min with data in flight, nothing lost.
 * The first time the RTO fires and the late ACKs show it was needless
 * (rto_spurious); the RTO has learned the stall: the same stall again costs
 * no RTO and no resend but the tail-loss probes.
 */
static void test_stall_learned(void **state)
{
	struct engine_qp_attr qa = attr_of(4, 0xa), qb = attr_of(4, 0xb);
	struct fx *f = fx_open(state, NULL, NULL, &qa, &qb);
	struct stall *st = calloc(1, sizeof(*st));
	uint64_t rto, retx;

	assert_non_null(st);
	f->x.p->filter = hold_b;
	f->x.p->filter_arg = st;
	write_through_stall(f, st, 1, 2 * PAIR_MS);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_RTO) >= 1);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_RTO_SPURIOUS) >= 1);
	/* No path had an ACK before the stall: each RTO was on rto_init (rto_unsampled). */
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RTO_UNSAMPLED), pair_stat(f->x.p, PAIR_A, EC_RTO));
	/* B held everything: each RTO came with the peer host silent. */
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RTO_PEER_SILENT), pair_stat(f->x.p, PAIR_A, EC_RTO));
	rto = pair_stat(f->x.p, PAIR_A, EC_RTO);
	retx = pair_stat(f->x.p, PAIR_A, EC_TX_RETX);
	write_through_stall(f, st, 2, 2 * PAIR_MS);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RTO), rto);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_TX_RETX) - retx <= qa.npaths);
	free(st);
}

/* B's packets to A's QP qpn[i] wait while hold[i]; the others pass. */
struct qp_hold {
	uint32_t qpn[2];
	bool hold[2];
	unsigned n[2];
	struct pair_pkt pkts[2][16];
};

static bool hold_per_qp(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct qp_hold *h = arg;

	(void)p;
	if (pkt->from != PAIR_B)
		return true;
	for (int i = 0; i < 2; i++) {
		if (!h->hold[i] || pkt_get32(pkt->data, PKT_DST_QPN) != h->qpn[i])
			continue;
		assert_true(h->n[i] < 16);
		h->pkts[i][h->n[i]++] = *pkt;
		return false;
	}
	return true;
}

static void release_qp(struct pair *p, struct qp_hold *h, int i)
{
	h->hold[i] = false;
	for (unsigned k = 0; k < h->n[i]; k++)
		pair_deliver(p, &h->pkts[i][k]);
	h->n[i] = 0;
}

/*
 * The host's RTT grows while a path's RTO runs (a queue at the peer filling
 * as hundreds of QPs' first packets open its window): two QPs send one
 * packet each at once, on paths with no RTT sample, so each RTO is armed at
 * rto_init.  QP 1's ACK, held 0.9 rto_init, shows the host an RTT near
 * rto_init before QP 2's RTO comes due; QP 2's own ACK comes at 1.2
 * rto_init.  Its RTO, reckoned again at expiry by what the host knows then
 * (path_rto_due), waits for it: no RTO, nothing resent.  Fired on the figure
 * it was armed with, it was needless (1 x 256 QPs through mrocd: 216 of a
 * run's 220 RTOs, all in the first half second, were on paths with no
 * sample of their own while the host's sRTT climbed).
 */
static void test_rto_follows_host_rtt(void **state)
{
	struct engine_qp_attr qa = attr_of(4, 0xa), qb = attr_of(4, 0xb);
	struct fx *f = fx_open(state, NULL, NULL, &qa, &qb);
	struct pair *p = f->x.p;
	uint64_t rto_init = p->s[PAIR_A].cfg.rto_init_ns, t0;
	struct qp_hold h = { .hold = { true, true } };
	struct engine_wr w1 = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 1000, 0);
	struct engine_wr w2 = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 2, 4096, 1000, 4096);
	bool done[3] = { false };

	h.qpn[0] = p->s[PAIR_A].qpn;
	h.qpn[1] = pair_connect_more(p, 0x100, SVC + 1);
	pair_run_for(p, 200 * PAIR_US);
	while (pair_pending(p, PAIR_A))
		pair_cqe(p, PAIR_A);
	while (pair_pending(p, PAIR_B))
		pair_cqe(p, PAIR_B);
	assert_int_equal(pair_stat(p, PAIR_A, EC_RTO), 0);
	p->filter = hold_per_qp;
	p->filter_arg = &h;
	t0 = p->now;
	assert_int_equal(pair_post(p, PAIR_A, &w1), 0);
	assert_int_equal(engine_post_send(p->s[PAIR_A].eng, h.qpn[1], &w2, pair_clock(p, PAIR_A)), 0);
	pair_run(p, t0 + rto_init * 9 / 10);
	assert_int_equal(h.n[0], 1);
	release_qp(p, &h, 0);
	pair_run(p, t0 + rto_init * 12 / 10);
	assert_int_equal(pair_stat(p, PAIR_A, EC_RTO), 0);
	assert_int_equal(h.n[1], 1);
	release_qp(p, &h, 1);
	pair_run_for(p, 10 * rto_init);
	while (pair_pending(p, PAIR_A)) {
		const struct engine_cqe *c = pair_cqe(p, PAIR_A);

		assert_int_equal(c->status, ENGINE_WC_SUCCESS);
		assert_true(c->wr_id == 1 || c->wr_id == 2);
		done[c->wr_id] = true;
	}
	assert_true(done[1] && done[2]);
	assert_int_equal(pair_stat(p, PAIR_A, EC_RTO), 0);
	assert_int_equal(pair_stat(p, PAIR_A, EC_RTO_SPURIOUS), 0);
	assert_int_equal(pair_stat(p, PAIR_A, EC_TX_RETX), 0);
}

/*
 * Eifel's response (RFC 4015, issue #23): the stall's RTO was needless, so
 * the late ACKs undo it: every path that timed out has its window back
 * (not the one packet an RTO leaves), carries data again (not probes only)
 * and leaves by the port it had before the RTO moved it.
 */
static void test_stall_undone(void **state)
{
	struct engine_qp_attr qa = attr_of(4, 0xa), qb = attr_of(4, 0xb);
	struct fx *f = fx_open(state, NULL, NULL, &qa, &qb);
	struct stall *st = calloc(1, sizeof(*st));
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 256 * 1024, 0);
	struct engine_path_info pi[4], after;
	unsigned timed_out = 0;

	assert_non_null(st);
	f->x.p->filter = hold_b;
	f->x.p->filter_arg = st;
	st->hold = true;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	pair_run_for(f->x.p, 2 * PAIR_MS);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_RTO) >= 1);
	for (unsigned i = 0; i < qa.npaths; i++) {
		assert_int_equal(engine_path_info(f->x.p->s[PAIR_A].eng, f->x.p->s[PAIR_A].qpn, i,
						  &pi[i]), 0);
		/* What the timer waits: never below the path's own RTO, doubled once backed off. */
		assert_true(pi[i].rto_timer_ns >= pi[i].rto_ns);
		if (pi[i].backoff)
			assert_true(pi[i].rto_timer_ns >= 2 * pi[i].rto_ns);
	}
	st->hold = false;
	for (unsigned i = 0; i < st->n; i++)
		pair_deliver(f->x.p, &st->pkts[i]);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_RTO_SPURIOUS) >= 1);
	for (unsigned i = 0; i < qa.npaths; i++) {
		if (!pi[i].timed_out || pi[i].timeouts != 1)
			continue;
		timed_out++;
		assert_int_equal(engine_path_info(f->x.p->s[PAIR_A].eng, f->x.p->s[PAIR_A].qpn, i,
						  &after), 0);
		print_message("path %u: window %u -> %u bytes, port %u -> %u\n", i,
			      pi[i].pwnd_bytes, after.pwnd_bytes, pi[i].sport, after.sport);
		assert_false(after.timed_out);
		assert_int_equal(after.backoff, 0);
		assert_true(after.pwnd_bytes > pi[i].pwnd_bytes);
		assert_int_equal(after.sport, pi[i].prev_sport);
	}
	assert_true(timed_out >= 1);
	run_until_cqe(f, PAIR_A, 100 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, 256 * 1024);
	free(st);
}

/*
 * What a needless RTO declared lost is taken back, not resent (issue #23).
 * A's third data packet is lost and B's ACKs come late, all of them, past
 * the first RTO of each path (one each, so each can be undone): every path
 * times out and declares its packets in flight lost.  The late ACKs undo
 * the RTOs (rto_undone) and, though B's cumulative DSN stays at the lost
 * packet, SACK what B has (rto_unlost): A does not resend the packets B
 * had, but for each path's last few, which only a cumulative PSN of the
 * RTO's end could vouch for (it says nothing once a later packet's floor
 * moved it there): at most ack_every per path reach B twice (31 before).
 */
#define UNLOST_HOLD_NS	(1100 * PAIR_US)	/* past the first RTO (rto_init 1 ms), before a second */

struct stall_drop {
	struct stall st;
	unsigned data;
};

static bool hold_b_drop_third(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct stall_drop *sd = arg;

	if (pkt->from == PAIR_A && mroc_op_is_data(pkt->data[PKT_OPCODE]) && ++sd->data == 3)
		return false;
	return hold_b(p, pkt, &sd->st);
}

static void test_stall_unlost(void **state)
{
	struct engine_qp_attr qa = attr_of(4, 0xa), qb = attr_of(4, 0xb);
	struct fx *f = fx_open(state, NULL, NULL, &qa, &qb);
	struct stall_drop *sd = calloc(1, sizeof(*sd));
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 256 * 1024, 0);
	uint64_t retx, dup;

	assert_non_null(sd);
	f->x.p->filter = hold_b_drop_third;
	f->x.p->filter_arg = sd;
	sd->st.hold = true;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	pair_run_for(f->x.p, UNLOST_HOLD_NS);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_RTO) >= 1);
	sd->st.hold = false;
	retx = pair_stat(f->x.p, PAIR_A, EC_TX_RETX);
	dup = pair_stat(f->x.p, PAIR_B, EC_RX_DUP);
	for (unsigned i = 0; i < sd->st.n; i++)
		pair_deliver(f->x.p, &sd->st.pkts[i]);
	run_until_cqe(f, PAIR_A, 100 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, 256 * 1024);
	print_message("rto %lu undone %lu unlost %lu, after the stall: retx %lu, B's duplicates %lu\n",
		      (unsigned long)pair_stat(f->x.p, PAIR_A, EC_RTO),
		      (unsigned long)pair_stat(f->x.p, PAIR_A, EC_RTO_UNDONE),
		      (unsigned long)pair_stat(f->x.p, PAIR_A, EC_RTO_UNLOST),
		      (unsigned long)(pair_stat(f->x.p, PAIR_A, EC_TX_RETX) - retx),
		      (unsigned long)(pair_stat(f->x.p, PAIR_B, EC_RX_DUP) - dup));
	assert_true(pair_stat(f->x.p, PAIR_A, EC_RTO_UNDONE) >= 1);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_RTO_UNLOST) >= 1);
	assert_true(pair_stat(f->x.p, PAIR_B, EC_RX_DUP) - dup <=
		    (uint64_t)f->x.p->s[PAIR_A].cfg.ack_every * qa.npaths);
	free(sd);
}

/* ---- dead peer and retry count -------------------------------------------------- */

static bool drop_from_b(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	(void)p;
	(void)arg;
	return pkt->from != PAIR_B;
}

static bool drop_a_data(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	(void)p;
	(void)arg;
	return pkt->from != PAIR_A || !mroc_op_is_data(pkt->data[PKT_OPCODE]);
}

/* B goes silent with A's WRITE outstanding: RETRY_EXC_ERR after dead_peer_ns. */
static void test_dead_peer(void **state)
{
	struct engine_config cfg;
	struct fx *f;
	struct engine_wr wr;
	uint64_t t0;

	dead_peer_config(&cfg);
	f = fx_open(state, &cfg, &cfg, NULL, NULL);
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 5000, 0);
	f->x.p->filter = drop_from_b;
	t0 = f->x.p->now;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	pair_run(f->x.p, t0 + cfg.dead_peer_ns - 1 * PAIR_MS);
	pair_expect_none(f->x.p, PAIR_A);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_CONNECTED);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_RTO) >= 2);

	run_until_cqe(f, PAIR_A, cfg.rto_max_ns + 5 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_RETRY_EXC_ERR, 1);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	assert_true(f->x.p->now >= t0 + cfg.dead_peer_ns);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_ERROR);
	/* B got the data all along (only its answers were lost), and hears of the error. */
	pair_mem_expect(f->x.b, 0, f->x.a->buf, 5000);
	pair_run_for(f->x.p, 5 * PAIR_MS);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_EV_DISCONNECTED, PAIR_ANY_STATUS, 0xb);
}

/*
 * A QP idle for longer than dead_peer_ns (no keepalives, as when other QPs
 * show its peer alive), then sends with its ACKs late: the silence before
 * its first packet is not lack of progress.  This passes on the code before
 * issue #10's fix too (the post already restarts the progress clock); the
 * case that failed, a QP waiting seconds for its turn in the peer window
 * after the post, is exercised by tests/e2e/test_scale.sh and bench-scale.
 */
static void test_idle_then_send(void **state)
{
	struct engine_config cfg;
	struct stall st = { 0 };
	struct fx *f;
	struct engine_wr wr;

	dead_peer_config(&cfg);
	cfg.keepalive_ns = 0;	/* as when other QPs to the same peer show it alive */
	f = fx_open(state, &cfg, &cfg, NULL, NULL);
	pair_run_for(f->x.p, 2 * cfg.dead_peer_ns);
	pair_expect_none(f->x.p, PAIR_A);
	/* B's answers to the WRITE are late: timers run with it in flight. */
	f->x.p->filter = hold_b;
	f->x.p->filter_arg = &st;
	st.hold = true;
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 5000, 0);
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	pair_run_for(f->x.p, 2 * PAIR_MS);
	st.hold = false;
	for (unsigned i = 0; i < st.n; i++)
		pair_deliver(f->x.p, &st.pkts[i]);
	run_until_cqe(f, PAIR_A, 20 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, 5000);
}

/* An idle QP finds out too, through keepalives nobody answers. */
static void test_dead_peer_idle(void **state)
{
	struct engine_config cfg;
	struct fx *f;
	uint64_t t0;

	dead_peer_config(&cfg);
	f = fx_open(state, &cfg, &cfg, NULL, NULL);
	f->x.p->filter = drop_from_b;
	t0 = f->x.p->now;
	pair_run(f->x.p, t0 + cfg.dead_peer_ns - 1 * PAIR_MS);
	pair_expect_none(f->x.p, PAIR_A);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_TX_KEEPALIVE) >= 3);
	run_until_cqe(f, PAIR_A, 5 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_ERROR);
}

/*
 * The dead-peer deadline the engine asks for is one at which its timers act.
 * Regression: the check used to be strict (now - last_rx > dead_peer_ns), so
 * engine_advance() at exactly that deadline did nothing and the engine kept
 * asking for the same, already passed, deadline: a driver sleeping until
 * its deadlines spun.
 */
static void test_dead_peer_deadline_exact(void **state)
{
	struct engine_config cfg;
	struct fx *f;

	dead_peer_config(&cfg);
	f = fx_open(state, &cfg, &cfg, NULL, NULL);
	f->x.p->filter = drop_from_b;
	pair_run_for(f->x.p, cfg.dead_peer_ns + 1 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	assert_int_equal(f->x.p->stuck_deadlines, 0);
}

/* ... while an idle QP whose peer answers stays up for ever. */
static void test_idle_peer_alive(void **state)
{
	struct engine_config cfg;
	struct fx *f;

	dead_peer_config(&cfg);
	f = fx_open(state, &cfg, &cfg, NULL, NULL);
	pair_run_for(f->x.p, 10 * cfg.dead_peer_ns);
	pair_expect_none(f->x.p, PAIR_A);
	pair_expect_none(f->x.p, PAIR_B);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_CONNECTED);
	assert_int_equal(pair_state(f->x.p, PAIR_B), ENGINE_QPS_CONNECTED);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_TX_KEEPALIVE) >= 5);
}

/* Every data packet of A is lost (B is alive): the retry count ends it, long before dead_peer. */
static void test_retry_count(void **state)
{
	struct engine_config cfg;
	struct fx *f;
	struct engine_wr wr;
	uint64_t t0;

	pair_test_config(&cfg);
	cfg.max_retx = 3;
	f = fx_open(state, &cfg, NULL, NULL, NULL);
	f->x.p->filter = drop_a_data;
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 100, 0);
	t0 = f->x.p->now;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	run_until_cqe(f, PAIR_A, 500 * PAIR_MS);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_RETRY_EXC_ERR, 1);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	assert_true(f->x.p->now - t0 < cfg.dead_peer_ns / 4);
	assert_true(pair_stat(f->x.p, PAIR_A, EC_TX_RETX) >= cfg.max_retx);
	assert_int_equal(pair_stat(f->x.p, PAIR_B, EC_RX_BYTES_PLACED), 0);
	pair_mem_untouched(f->x.b);
}

int main(void)
{
#define T(fn) cmocka_unit_test_teardown(fn, teardown)
	const struct CMUnitTest tests[] = {
		T(test_stall_learned),
		T(test_rto_follows_host_rtt),
		T(test_stall_undone),
		T(test_stall_unlost),
		T(test_dead_peer),
		T(test_dead_peer_idle),
		T(test_idle_then_send),
		T(test_dead_peer_deadline_exact),
		T(test_idle_peer_alive),
		T(test_retry_count),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
