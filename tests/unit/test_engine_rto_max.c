// SPDX-License-Identifier: MIT
/*
 * rto_max beyond the reach of the 32-bit send stamps (PROTOCOL 3.1 `ts`):
 * a packet carries its send time mod 2^32 ns, and an ACK echoes it.  Read
 * as a signed serial number, an echo held only while its packet was
 * younger than 2^31 ns; a timer may run up to rto_max (mrocd allows
 * 600 s; the simulator's PFC transports set rto_min = rto_init = rto_max
 * to an IB-style local ACK timeout, 4.096 us x 2^exp, exp up to 31).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "engine_pair.h"

#define REG_LEN		(256 * 1024)
#define SVC		42
#define PAIR_S		(1000 * PAIR_MS)

static int teardown(void **state)
{
	return pair_fx_teardown(state);
}

/* A's data packets are dropped until `until` (pair->now). */
struct drop_until {
	uint64_t until;
	uint64_t dropped;
};

static bool drop_data_until(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct drop_until *d = arg;

	if (pkt->from != PAIR_A || !mroc_op_is_data(pkt->data[PKT_OPCODE]) || p->now >= d->until)
		return true;
	d->dropped++;
	return false;
}

static void run_until_cqe(struct pair *p, int side, uint64_t limit)
{
	uint64_t end = p->now + limit;

	while (!pair_pending(p, side) && p->now < end)
		pair_run_for(p, 1 * PAIR_MS);
}

static void config_fixed_rto(struct engine_config *c, uint64_t rto)
{
	pair_test_config(c);
	c->rto_min_ns = c->rto_init_ns = c->rto_max_ns = rto;
	c->dead_peer_ns = 20 * rto;
	c->keepalive_ns = 0;
}

/*
 * A NIC-style fixed timeout of `rto`: a WRITE whose every packet (and
 * probe) is lost until just before the timeout, then the timeout resends
 * it.  It completes once, after about one timeout, and nothing the ACKs
 * echo is refused.
 */
static void lost_until_timeout(void **state, uint64_t rto, uint8_t mode)
{
	struct engine_qp_attr qa = pair_test_attr(), qb = pair_test_attr();
	struct drop_until d = { 0 };
	struct engine_config ca, cb;
	struct engine_wr wr;
	struct pair_fx *x;
	uint64_t t0, bad, rtos;

	config_fixed_rto(&ca, rto);
	cb = ca;
	cb.seed = 2;
	qa.mode = qb.mode = mode;
	x = pair_fx_open(state, sizeof(*x), &ca, &cb, REG_LEN, ENGINE_ACCESS_ALL, 1);
	pair_connect(x->p, &qa, &qb, SVC);
	pair_set_delay(x->p, PAIR_A, 10 * PAIR_US);
	pair_set_delay(x->p, PAIR_B, 10 * PAIR_US);
	wr = pair_fx_wr(x, ENGINE_WR_WRITE, 1, 0, 16 * 1024, 0);
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	run_until_cqe(x->p, PAIR_A, 10 * PAIR_MS);
	pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);

	bad = pair_stat(x->p, PAIR_A, EC_RX_BAD_ECHO);
	rtos = pair_stat(x->p, PAIR_A, EC_RTO);
	x->p->filter = drop_data_until;
	x->p->filter_arg = &d;
	t0 = x->p->now;
	d.until = t0 + rto - rto / 8;
	wr = pair_fx_wr(x, ENGINE_WR_WRITE, 2, 0, 16 * 1024, 0);
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	run_until_cqe(x->p, PAIR_A, 3 * rto);
	print_message("rto %.3f s, mode %u: done after %.3f s, %llu dropped, %llu RTOs, "
		      "%llu echoes refused, %llu spurious, %llu undone\n",
		      (double)rto / PAIR_S, mode, (double)(x->p->now - t0) / PAIR_S,
		      (unsigned long long)d.dropped,
		      (unsigned long long)(pair_stat(x->p, PAIR_A, EC_RTO) - rtos),
		      (unsigned long long)(pair_stat(x->p, PAIR_A, EC_RX_BAD_ECHO) - bad),
		      (unsigned long long)pair_stat(x->p, PAIR_A, EC_RTO_SPURIOUS),
		      (unsigned long long)pair_stat(x->p, PAIR_A, EC_RTO_UNDONE));
	pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 2);
	assert_true(x->p->now - t0 < rto + rto / 4);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RX_BAD_ECHO), bad);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RTO_UNDONE), 0);
}

static void test_lost_until_timeout_2s(void **state)
{
	lost_until_timeout(state, 2 * PAIR_S, MROC_MODE_METAROCE);
}

static void test_lost_until_timeout_3s(void **state)
{
	lost_until_timeout(state, 3 * PAIR_S, MROC_MODE_METAROCE);
}

static void test_lost_until_timeout_5s(void **state)
{
	lost_until_timeout(state, 5 * PAIR_S, MROC_MODE_METAROCE);
}

static void test_lost_until_timeout_5s_rocev2(void **state)
{
	lost_until_timeout(state, 5 * PAIR_S, MROC_MODE_ROCEV2);
}

static void test_lost_until_timeout_9s_rocev2(void **state)
{
	lost_until_timeout(state, 9 * PAIR_S, MROC_MODE_ROCEV2);
}

/*
 * The peer answers late, `late` after each packet (its ACKs are that long
 * on the way back), under a fixed timeout of `rto` beyond it: the WRITE
 * completes without a timeout, and the path's RTT is what the ACKs took.
 */
static void answered_late(void **state, uint64_t rto, uint64_t late)
{
	struct engine_config ca, cb;
	struct engine_path_info pi;
	struct engine_wr wr;
	struct pair_fx *x;
	uint64_t t0, bad, rtos;

	config_fixed_rto(&ca, rto);
	cb = ca;
	cb.seed = 2;
	x = pair_fx_open(state, sizeof(*x), &ca, &cb, REG_LEN, ENGINE_ACCESS_ALL, 1);
	pair_connect(x->p, NULL, NULL, SVC);
	pair_set_delay(x->p, PAIR_A, 10 * PAIR_US);
	pair_set_delay(x->p, PAIR_B, late);
	bad = pair_stat(x->p, PAIR_A, EC_RX_BAD_ECHO);
	rtos = pair_stat(x->p, PAIR_A, EC_RTO);
	t0 = x->p->now;
	wr = pair_fx_wr(x, ENGINE_WR_WRITE, 1, 0, 4 * 1024, 0);
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	run_until_cqe(x->p, PAIR_A, 3 * rto);
	assert_int_equal(engine_path_info(x->p->s[PAIR_A].eng, x->p->s[PAIR_A].qpn, 0, &pi), 0);
	print_message("rto %.3f s, ACKs %.3f s late: done after %.3f s, %llu RTOs, "
		      "%llu echoes refused, srtt %.3f s, spurious %llu undone %llu\n",
		      (double)rto / PAIR_S, (double)late / PAIR_S,
		      (double)(x->p->now - t0) / PAIR_S,
		      (unsigned long long)(pair_stat(x->p, PAIR_A, EC_RTO) - rtos),
		      (unsigned long long)(pair_stat(x->p, PAIR_A, EC_RX_BAD_ECHO) - bad),
		      (double)pi.srtt_ns / PAIR_S,
		      (unsigned long long)pair_stat(x->p, PAIR_A, EC_RTO_SPURIOUS),
		      (unsigned long long)pair_stat(x->p, PAIR_A, EC_RTO_UNDONE));
	pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RTO), rtos);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RX_BAD_ECHO), bad);
	assert_true(pi.srtt_ns >= late && pi.srtt_ns < late + late / 8);
}

static void test_answered_late_1s(void **state)
{
	answered_late(state, 8 * PAIR_S, 1 * PAIR_S);
}

static void test_answered_late_3s(void **state)
{
	answered_late(state, 8 * PAIR_S, 3 * PAIR_S);
}

/*
 * Past 2^32 ns: the echo's 32 bits name its packet's send time and one
 * 4.29 s later, both after anything the path still tracks.  The ACK
 * acknowledges that packet, whose whole send time the sender has: the
 * RTT is the 5 s the ACK took, not 0.705 s.
 */
static void test_answered_late_5s(void **state)
{
	answered_late(state, 12 * PAIR_S, 5 * PAIR_S);
}

/* And once more round the 32 bits, a little past 2 x 4.29 s. */
static void test_answered_late_9s(void **state)
{
	answered_late(state, 20 * PAIR_S, 8600 * PAIR_MS);
}

/*
 * The same 5 s on the way, by an ACK whose receiver also held it 1 ms past
 * its ACK delay (its echo is the packet's stamp plus that hold, no packet's
 * stamp): the echo names a time 1 ms after the packet it acknowledges, and
 * the sample is the 4.999 s that leaves, not 0.704 s.  B's ACKs are kept
 * from A; the first, rewritten so, arrives 5 s after the WRITE went.
 */
static void test_answered_late_held_5s(void **state)
{
	struct engine_config ca, cb;
	struct engine_path_info pi;
	struct pair_capture *cap;
	struct engine_wr wr;
	struct pair_pkt ack;
	struct pair_fx *x;
	uint64_t t0, bad;

	config_fixed_rto(&ca, 12 * PAIR_S);
	cb = ca;
	cb.seed = 2;
	x = pair_fx_open(state, sizeof(*x), &ca, &cb, REG_LEN, ENGINE_ACCESS_ALL, 1);
	pair_connect(x->p, NULL, NULL, SVC);
	bad = pair_stat(x->p, PAIR_A, EC_RX_BAD_ECHO);
	cap = pair_capture_start(x->p, PAIR_B, PAIR_OP_BIT(MROC_OP_ACK), false);
	t0 = x->p->now;
	wr = pair_fx_wr(x, ENGINE_WR_WRITE, 1, 0, 100, 0);
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	pair_run_for(x->p, 5 * PAIR_S);
	pair_capture_stop(x->p);
	assert_true(cap->n >= 1);
	ack = cap->pkt[0];
	pkt_put32(ack.data, PKT_ACK_CUM_PSN + 8,
		  pkt_get32(ack.data, PKT_ACK_CUM_PSN + 8) + (uint32_t)(1 * PAIR_MS));
	pair_deliver(x->p, &ack);
	pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	/* The path the WRITE went by: the only one with a sample. */
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(engine_path_info(x->p->s[PAIR_A].eng, x->p->s[PAIR_A].qpn, i, &pi),
				 0);
		if (pi.srtt_ns)
			break;
	}
	print_message("ACK 5 s late, held 1 ms: srtt %.4f s after %.4f s, %llu echoes refused\n",
		      (double)pi.srtt_ns / PAIR_S, (double)(x->p->now - t0) / PAIR_S,
		      (unsigned long long)(pair_stat(x->p, PAIR_A, EC_RX_BAD_ECHO) - bad));
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RX_BAD_ECHO), bad);
	assert_true(pi.srtt_ns > 4 * PAIR_S && pi.srtt_ns < 5 * PAIR_S);
}

/*
 * rto_max up to an IB timeout exponent of 31 (2^43 ns) is taken; beyond it
 * path_rto's doubling and now + RTO come near 64-bit overflow (an RTO of 0).
 */
static void test_rto_max_bound(void **state)
{
	struct engine_config c;
	const char *why = NULL;

	(void)state;
	config_fixed_rto(&c, ENGINE_RTO_MAX_NS);
	assert_int_equal(engine_config_check(&c, &why), 0);
	c.rto_max_ns = ENGINE_RTO_MAX_NS + 1;
	assert_int_equal(engine_config_check(&c, &why), -EINVAL);
	assert_non_null(why);
	assert_memory_equal(why, "rto_max", 7);
	c.rto_max_ns = UINT64_MAX;
	assert_null(engine_create(&c));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_lost_until_timeout_2s, teardown),
		cmocka_unit_test_teardown(test_lost_until_timeout_3s, teardown),
		cmocka_unit_test_teardown(test_lost_until_timeout_5s, teardown),
		cmocka_unit_test_teardown(test_lost_until_timeout_5s_rocev2, teardown),
		cmocka_unit_test_teardown(test_lost_until_timeout_9s_rocev2, teardown),
		cmocka_unit_test_teardown(test_answered_late_1s, teardown),
		cmocka_unit_test_teardown(test_answered_late_3s, teardown),
		cmocka_unit_test_teardown(test_answered_late_5s, teardown),
		cmocka_unit_test_teardown(test_answered_late_9s, teardown),
		cmocka_unit_test_teardown(test_answered_late_held_5s, teardown),
		cmocka_unit_test(test_rto_max_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
