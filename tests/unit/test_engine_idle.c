// SPDX-License-Identifier: MIT
/*
 * Engine state that outlives an idle gap longer than 2^31 ns, the reach of
 * the 32-bit stamps on the wire (PROTOCOL 3.1 `ts`, 3.3 `ts_echo`): a
 * stamp kept across such a gap and compared with a new one as a 32-bit
 * serial number reads as before it once the gap is 2.15-4.29 s (mod 4.29 s).
 *  - a path's last RTO, which the next ACK's echo judges (Eifel's test,
 *    path.c path_on_echo): a path timed out on a dead route, the message went
 *    by its sibling, and its first ACK after a 3 s gap, of a packet sent
 *    long after the RTO, showed the RTO "needless": undone, and the path
 *    moved back onto the route that had died.
 *  - the receiver's fair share (cc_rate.c): the hosts and QPs that sent in
 *    "the last hint epoch", which after an idle gap was the last epoch
 *    anything sent in, seconds before: a QP sending alone after the gap
 *    was told the share it had had beside 3 others.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>

#include "engine_pair.h"
#include "internal.h"

#define REG_LEN		(1024 * 1024)
#define SVC		42

static int teardown(void **state)
{
	return pair_fx_teardown(state);
}

static struct engine_qp_attr attr_of(uint8_t npaths, uint64_t user)
{
	struct engine_qp_attr a = pair_test_attr();

	a.npaths = npaths;
	a.user = user;
	return a;
}

/* Run until side has a completion to look at, at most `limit` of fake time. */
static void run_until_cqe(struct pair *p, int side, uint64_t limit)
{
	uint64_t end = p->now + limit;

	while (!pair_pending(p, side) && p->now < end)
		pair_run_for(p, 10 * PAIR_US);
}

/* A's data packets by this source port are lost (0: the first port path 0 sends by). */
struct dead_route {
	uint16_t sport;
	bool all;			/* every packet of A's path 0, whatever its port */
	uint64_t dropped;
};

static bool drop_dead_route(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct dead_route *d = arg;

	(void)p;
	if (pkt->from != PAIR_A || !mroc_op_is_data(pkt->data[PKT_OPCODE]))
		return true;
	if (pkt->data[PKT_PATH] == 0 && !d->sport)
		d->sport = pkt->sport;
	if (pkt->sport != d->sport && !(d->all && pkt->data[PKT_PATH] == 0))
		return true;
	d->dropped++;
	return false;
}

static void write_one(struct pair_fx *x, uint64_t id, uint32_t len)
{
	struct engine_wr wr = pair_fx_wr(x, ENGINE_WR_WRITE, id, 0, len, 0);

	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	run_until_cqe(x->p, PAIR_A, 200 * PAIR_MS);
	pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, id);
}

/*
 * Path 0 of two: its route dies while a 64 KiB WRITE is under way, and with
 * it every packet path 0 sends until the WRITE is done (its new port's
 * probe too): the RTO moves it, the WRITE goes by path 1.  Then 3 s of
 * nothing (keepalives answered), the route still dead, and a WRITE: path 0
 * probes its new port, which works, and the ACK echoes that probe, sent 3 s
 * after the RTO.  The RTO was needed; the path stays on its new port.
 */
static void test_rto_judged_after_idle(void **state)
{
	struct engine_qp_attr qa = attr_of(2, 0xa), qb = attr_of(2, 0xb);
	struct dead_route d = { 0 };
	struct engine_path_info pi;
	struct engine_config ca, cb;
	struct pair_fx *x;
	uint64_t spurious, undone, dropped;

	pair_test_config(&ca);
	ca.dead_peer_ns = 10000 * PAIR_MS;
	cb = ca;
	cb.seed = 2;
	x = pair_fx_open(state, sizeof(*x), &ca, &cb, REG_LEN, ENGINE_ACCESS_ALL, 1);
	pair_connect(x->p, &qa, &qb, SVC);
	pair_set_delay(x->p, PAIR_A, 10 * PAIR_US);
	pair_set_delay(x->p, PAIR_B, 10 * PAIR_US);
	write_one(x, 1, 16 * 1024);	/* both paths have RTT samples */

	x->p->filter = drop_dead_route;
	x->p->filter_arg = &d;
	d.all = true;
	write_one(x, 2, 64 * 1024);
	pair_run_for(x->p, 100 * PAIR_MS);	/* path 0's timers run out: nothing to probe with */
	assert_int_equal(engine_path_info(x->p->s[PAIR_A].eng, x->p->s[PAIR_A].qpn, 0, &pi), 0);
	print_message("path 0: %llu RTOs, port %u (dead %u), timed out %d, %llu dropped\n",
		      (unsigned long long)pi.timeouts, pi.sport, d.sport, pi.timed_out,
		      (unsigned long long)d.dropped);
	assert_true(pi.timeouts >= 1);
	assert_int_not_equal(pi.sport, d.sport);

	d.all = false;			/* the old port stays dead, the new one works */
	spurious = pair_stat(x->p, PAIR_A, EC_RTO_SPURIOUS);
	undone = pair_stat(x->p, PAIR_A, EC_RTO_UNDONE);
	pair_run_for(x->p, 3000 * PAIR_MS);
	dropped = d.dropped;
	write_one(x, 3, 64 * 1024);
	write_one(x, 4, 64 * 1024);
	assert_int_equal(engine_path_info(x->p->s[PAIR_A].eng, x->p->s[PAIR_A].qpn, 0, &pi), 0);
	print_message("after 3 s idle: %llu RTOs called needless, %llu undone, path 0 by port %u, "
		      "%llu more dropped\n",
		      (unsigned long long)(pair_stat(x->p, PAIR_A, EC_RTO_SPURIOUS) - spurious),
		      (unsigned long long)(pair_stat(x->p, PAIR_A, EC_RTO_UNDONE) - undone),
		      pi.sport, (unsigned long long)(d.dropped - dropped));
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RTO_SPURIOUS), spurious);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RTO_UNDONE), undone);
	assert_int_not_equal(pi.sport, d.sport);
	assert_int_equal(d.dropped, dropped);
}

/* The rate hint of B's last ACK (PROTOCOL 3.3 rate_hint), Mbit/s. */
struct hint_watch {
	uint32_t last;
	uint64_t acks;
};

static bool watch_hint(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct hint_watch *h = arg;

	(void)p;
	if (pkt->from == PAIR_B && pkt->data[PKT_OPCODE] == MROC_OP_ACK) {
		h->last = pkt_get32(pkt->data, PKT_ACK_CUM_DSN + 16);
		h->acks++;
	}
	return true;
}

static void write_on(struct pair_fx *x, uint32_t qpn, uint64_t id)
{
	struct engine_wr wr = pair_fx_wr(x, ENGINE_WR_WRITE, id, 0, 8 * 1024, 0);

	assert_int_equal(engine_post_send(x->p->s[PAIR_A].eng, qpn, &wr,
					  pair_clock(x->p, PAIR_A)), 0);
}

/*
 * Four QPs of A write to B at once, and B's hints split its link four
 * ways; 3 s later one of them writes alone: its hint is none (a sender
 * alone needs none), not the quarter of before.
 */
static void test_hint_after_idle(void **state)
{
	struct engine_config ca, cb;
	struct hint_watch h = { 0 };
	struct pair_fx *x;
	uint32_t qpn[4];
	unsigned done = 0;

	pair_test_config(&ca);
	ca.dead_peer_ns = 10000 * PAIR_MS;
	cb = ca;
	cb.seed = 2;
	cb.link_rate_bps = 10000000000ULL;
	x = pair_fx_open(state, sizeof(*x), &ca, &cb, REG_LEN, ENGINE_ACCESS_ALL, 1);
	pair_connect(x->p, NULL, NULL, SVC);
	qpn[0] = x->p->s[PAIR_A].qpn;
	for (unsigned i = 1; i < 4; i++)
		qpn[i] = pair_connect_more(x->p, 0x100 + i, SVC + i);
	pair_run_for(x->p, 1 * PAIR_MS);
	while (pair_cqe(x->p, PAIR_A) || pair_cqe(x->p, PAIR_B))
		;
	pair_set_delay(x->p, PAIR_A, 10 * PAIR_US);
	pair_set_delay(x->p, PAIR_B, 10 * PAIR_US);
	x->p->filter = watch_hint;
	x->p->filter_arg = &h;

	for (unsigned i = 0; i < 4; i++)
		write_on(x, qpn[i], i + 1);
	pair_run_for(x->p, 5 * PAIR_MS);
	while (pair_cqe(x->p, PAIR_A))
		done++;
	assert_int_equal(done, 4);
	print_message("4 QPs at once: hint %u Mbit/s\n", h.last);
	assert_int_equal(h.last, 10000 * 95 / 100 / 4);

	pair_run_for(x->p, 3000 * PAIR_MS);
	h = (struct hint_watch){ 0 };
	write_on(x, qpn[0], 5);
	pair_run_for(x->p, 5 * PAIR_MS);
	pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 5);
	print_message("one QP alone 3 s later: hint %u Mbit/s (%llu ACKs)\n", h.last,
		      (unsigned long long)h.acks);
	assert_true(h.acks > 0);
	assert_int_equal(h.last, 0);
}

/*
 * The lag between a batch's stamp and its kick (engine_tx_done, the delay
 * signal's allowance for it: cc_window.c delay_limit) is a decaying
 * maximum.  It decayed per batch reported, not with time: a 2 ms lag (a
 * worker off its CPU), then 3 s with nothing sent, and the first batches
 * after the gap were still allowed 1.75 ms of queue on every path.
 */
static void test_tx_lag_after_idle(void **state)
{
	struct pair_fx *x = pair_fx_open(state, sizeof(*x), NULL, NULL, REG_LEN,
					 ENGINE_ACCESS_ALL, 1);
	struct engine *eng = x->p->s[PAIR_A].eng;
	uint64_t t;

	pair_connect(x->p, NULL, NULL, SVC);
	t = pair_clock(x->p, PAIR_A);
	engine_tx_done(eng, t, t + 2 * PAIR_MS);
	assert_int_equal(eng->tx_lag, 2 * PAIR_MS);
	engine_tx_done(eng, t + 2 * PAIR_MS, t + 2 * PAIR_MS);
	assert_int_equal(eng->tx_lag, 2 * PAIR_MS - (2 * PAIR_MS >> 3));	/* still recent */
	pair_run_for(x->p, 3000 * PAIR_MS);
	t = pair_clock(x->p, PAIR_A);
	engine_tx_done(eng, t, t + 1 * PAIR_US);
	print_message("lag after 3 s idle and a batch of 1 us: %llu ns\n",
		      (unsigned long long)eng->tx_lag);
	assert_int_equal(eng->tx_lag, 1 * PAIR_US);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_rto_judged_after_idle, teardown),
		cmocka_unit_test_teardown(test_hint_after_idle, teardown),
		cmocka_unit_test_teardown(test_tx_lag_after_idle, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
