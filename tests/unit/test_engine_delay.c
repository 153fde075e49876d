// SPDX-License-Identifier: MIT
/*
 * Host delay kept out of the delay signal (issue #22, PROTOCOL 3.3 and
 * 9.3a): a packet's arrival stamp (engine_rx_meta.arrival, the XDP
 * program's in mrocd) and the ACK's host_delay byte.  Each direction's wire
 * takes 200 us, of which the packet spends the last 180 us in the receiving
 * host's ring (pair_set_stamp_lead): the path itself is 2 x 20 us.
 *  - the path's minimum RTT is the fabric's (within the byte's rounding,
 *    never below), while the smoothed RTT, which the RTO is built on, keeps
 *    the hosts' waits;
 *  - counters show the waits (rx_stamped, rx_wait_ns, ack_host_ns);
 *  - unstamped (a driver without stamps): every wait counts, as before;
 *  - a host_delay longer than the sample is no claim: the sample stays whole;
 *  - "over" (the receiver held it longer than the byte says) is no fabric
 *    sample: the timers take it, the delay signal does not;
 *  - the lag between a batch's stamp and its kick (engine_tx_done), which
 *    no stamp sees, is allowed for;
 *  - a packet stamped after the clock its host takes it with (a worker's
 *    clock read before a preemption) is taken at its stamp: no RTT below
 *    the wire's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "engine_pair.h"

#define REG_LEN		(1024 * 1024)
#define SVC		42
#define WIRE_NS		(200 * PAIR_US)
#define LEAD_NS		(180 * PAIR_US)
#define FABRIC_NS	(2 * (WIRE_NS - LEAD_NS))

static int teardown(void **state)
{
	return pair_fx_teardown(state);
}

/*
 * A 256 KiB WRITE over 4 paths with the wires above, lead ns stamped on
 * both sides, both taking packets with a clock up to lag behind
 * (pair_set_rx_lag).
 */
static struct pair_fx *transfer_lag(void **state, uint64_t lead, uint64_t lag,
				    pair_filter_fn filter, void *arg, struct engine_path_info *pi)
{
	struct pair_fx *x = pair_fx_open(state, sizeof(*x), NULL, NULL, REG_LEN,
					 ENGINE_ACCESS_ALL, 1);
	struct engine_wr wr = pair_fx_wr(x, ENGINE_WR_WRITE, 1, 0, 256 * 1024, 0);
	uint64_t end;

	pair_connect(x->p, NULL, NULL, SVC);
	pair_set_delay(x->p, PAIR_A, WIRE_NS);
	pair_set_delay(x->p, PAIR_B, WIRE_NS);
	pair_set_stamp_lead(x->p, PAIR_A, lead);
	pair_set_stamp_lead(x->p, PAIR_B, lead);
	pair_set_rx_lag(x->p, PAIR_A, lag);
	pair_set_rx_lag(x->p, PAIR_B, lag);
	x->p->filter = filter;
	x->p->filter_arg = arg;
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	end = x->p->now + 200 * PAIR_MS;
	while (!pair_pending(x->p, PAIR_A) && x->p->now < end)
		pair_run_for(x->p, 100 * PAIR_US);
	pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(x->b, 0, x->a->buf, 256 * 1024);
	assert_int_equal(engine_path_info(x->p->s[PAIR_A].eng, x->p->s[PAIR_A].qpn, 0, pi), 0);
	print_message("lead %3u us, lag %3u us: min RTT %.1f us, SRTT %.1f us, delay cuts %" PRIu64
		      ", host time in ACKs %.1f us per stamped packet\n",
		      (unsigned)(lead / PAIR_US), (unsigned)(lag / PAIR_US), pi->min_rtt_ns / 1e3, pi->srtt_ns / 1e3,
		      pi->delay_cuts, (double)pair_stat(x->p, PAIR_A, EC_ACK_HOST_NS) / 1e3 /
		      (double)(pair_stat(x->p, PAIR_A, EC_RX_STAMPED) ?: 1));
	return x;
}

static struct pair_fx *transfer_arg(void **state, uint64_t lead, pair_filter_fn filter,
				    void *arg, struct engine_path_info *pi)
{
	return transfer_lag(state, lead, 0, filter, arg, pi);
}

static struct pair_fx *transfer(void **state, uint64_t lead, struct engine_path_info *pi)
{
	return transfer_arg(state, lead, NULL, NULL, pi);
}

static void test_stamps_keep_host_out(void **state)
{
	struct engine_path_info pi;
	struct pair_fx *x = transfer(state, LEAD_NS, &pi);

	/* The fabric's, at most the byte's rounding (4 us) and 1 us above. */
	assert_true(pi.min_rtt_ns >= FABRIC_NS);
	assert_true(pi.min_rtt_ns <= FABRIC_NS + 5 * PAIR_US);
	/* The timers still see both hosts' waits. */
	assert_true(pi.srtt_ns >= 2 * WIRE_NS);
	for (int side = PAIR_A; side <= PAIR_B; side++) {
		uint64_t n = pair_stat(x->p, side, EC_RX_STAMPED);

		assert_true(n > 0 && n <= pair_stat(x->p, side, EC_RX_PKTS));
		assert_int_equal(pair_stat(x->p, side, EC_RX_WAIT_NS), n * LEAD_NS);
	}
	assert_true(pair_stat(x->p, PAIR_A, EC_ACK_HOST_NS) > 0);
}

static void test_unstamped_as_before(void **state)
{
	struct engine_path_info pi;
	struct pair_fx *x = transfer(state, 0, &pi);

	assert_true(pi.min_rtt_ns >= 2 * WIRE_NS);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RX_STAMPED), 0);
	assert_int_equal(pair_stat(x->p, PAIR_B, EC_RX_STAMPED), 0);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_ACK_HOST_NS), 0);
}

/*
 * A host that read its clock before a packet arrived and took it after (a
 * worker that lost its CPU in between, at load): the packet's stamp is
 * later than the engine's now.  Taken at that now, the receiver claimed
 * the time from its stale clock to the ACK as host time and the sender
 * timed the ACK's echo to its stale clock: min RTTs of 150 ns - 8.8 us
 * against 18-27 us on test_port_addrs's fabric at load 15 (s13-lead), a
 * delay target set from nothing.  A packet is taken no earlier than it
 * arrived: the path's minimum stays the wire's.
 */
static void test_stale_clock_not_below_wire(void **state)
{
	struct engine_path_info pi;
	struct pair_fx *x = transfer_lag(state, 0, 150 * PAIR_US, NULL, NULL, &pi);

	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(engine_path_info(x->p->s[PAIR_A].eng, x->p->s[PAIR_A].qpn, i,
						  &pi), 0);
		print_message("path %u: min RTT %.1f us, SRTT %.1f us\n", i, pi.min_rtt_ns / 1e3,
			      pi.srtt_ns / 1e3);
		assert_true(pi.min_rtt_ns >= 2 * WIRE_NS);
		assert_true(pi.min_rtt_ns <= 2 * WIRE_NS + 5 * PAIR_US);
		assert_true(pi.srtt_ns >= 2 * WIRE_NS);
	}
	/* Both hosts took packets stamped ahead of their clocks: no wait was counted. */
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RX_WAIT_NS), 0);
	assert_int_equal(pair_stat(x->p, PAIR_B, EC_RX_WAIT_NS), 0);
}

/* B's ACKs claim host_delay code *arg. */
static bool claim(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	(void)p;
	if (pkt->from == PAIR_B && pkt->data[PKT_OPCODE] == MROC_OP_ACK)
		pkt->data[MROC_HDR_LEN + 31] = *(const uint8_t *)arg;
	return true;
}

static void test_claim_beyond_sample_ignored(void **state)
{
	static const uint8_t code = 254;	/* 2,528 us, more than the sample */
	struct engine_path_info pi;
	struct pair_fx *x = transfer_arg(state, LEAD_NS, claim, (void *)&code, &pi);

	/* A's own wait is still taken out; B's claim is not. */
	assert_true(pi.min_rtt_ns >= 2 * WIRE_NS - LEAD_NS);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_ACK_HOST_NS), 0);
}

/* "Over" (255): the receiver held the packet longer than the byte can say: no fabric sample. */
static void test_over_is_no_sample(void **state)
{
	static const uint8_t code = 255;
	struct engine_path_info pi;
	struct pair_fx *x = transfer_arg(state, LEAD_NS, claim, (void *)&code, &pi);

	assert_int_equal(pi.min_rtt_ns, 0);
	assert_true(pi.srtt_ns >= 2 * WIRE_NS);
	assert_int_equal(pi.delay_cuts, 0);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_ACK_HOST_NS), 0);
}

/*
 * engine_tx_done: A's sends take turns leaving at once and 100 us after
 * their stamp (a worker that loses its CPU between building a batch and
 * kicking it; here on the wire A -> B, 200 us at a time).  Told of the lag,
 * the delay signal allows for it and does not cut; not told (the engine
 * before it, a driver that does not say), it cuts in every slow turn.
 */
static uint64_t tx_lag_cuts(void **state, bool told)
{
	struct pair_fx *x = pair_fx_open(state, sizeof(*x), NULL, NULL, REG_LEN,
					 ENGINE_ACCESS_ALL, 1);
	struct engine_path_info pi;
	uint64_t cuts = 0, id = 0, done = 0;

	pair_connect(x->p, NULL, NULL, SVC);
	pair_set_delay(x->p, PAIR_B, 10 * PAIR_US);
	/* 20 ms of 1 MiB WRITEs, two at a time: a stream of rounds. */
	for (unsigned step = 0; step < 2000; step++) {
		uint64_t lag = step / 20 % 2 ? 100 * PAIR_US : 0;

		while (pair_pending(x->p, PAIR_A)) {
			pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, ++done);
		}
		while (id < done + 2) {
			struct engine_wr wr = pair_fx_wr(x, ENGINE_WR_WRITE, ++id, 0, REG_LEN, 0);

			assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
		}
		pair_set_delay(x->p, PAIR_A, 10 * PAIR_US + lag);
		if (told)
			engine_tx_done(x->p->s[PAIR_A].eng, pair_clock(x->p, PAIR_A),
				       pair_clock(x->p, PAIR_A) + lag);
		pair_run_for(x->p, 10 * PAIR_US);
	}
	assert_true(done >= 10);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(engine_path_info(x->p->s[PAIR_A].eng, x->p->s[PAIR_A].qpn, i,
						  &pi), 0);
		cuts += pi.delay_cuts;
	}
	print_message("tx lag %s: %" PRIu64 " WRITEs of 1 MiB, %" PRIu64 " delay cuts\n",
		      told ? "told" : "not told", done, cuts);
	pair_fx_teardown(state);
	*state = NULL;
	return cuts;
}

static void test_tx_lag_allowed(void **state)
{
	uint64_t told = tx_lag_cuts(state, true), untold = tx_lag_cuts(state, false);

	assert_true(untold >= 10);
	assert_true(told * 10 <= untold);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_stamps_keep_host_out, teardown),
		cmocka_unit_test_teardown(test_unstamped_as_before, teardown),
		cmocka_unit_test_teardown(test_claim_beyond_sample_ignored, teardown),
		cmocka_unit_test_teardown(test_over_is_no_sample, teardown),
		cmocka_unit_test(test_tx_lag_allowed),
		cmocka_unit_test_teardown(test_stale_clock_not_below_wire, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
