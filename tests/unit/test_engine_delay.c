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
 *  - a host_delay longer than the sample is no claim: the sample stays whole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
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

/* A 256 KiB WRITE over 4 paths with the wires above, lead ns stamped on both sides. */
static struct pair_fx *transfer(void **state, uint64_t lead, pair_filter_fn filter,
				struct engine_path_info *pi)
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
	x->p->filter = filter;
	assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
	end = x->p->now + 200 * PAIR_MS;
	while (!pair_pending(x->p, PAIR_A) && x->p->now < end)
		pair_run_for(x->p, 100 * PAIR_US);
	pair_expect(x->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(x->b, 0, x->a->buf, 256 * 1024);
	assert_int_equal(engine_path_info(x->p->s[PAIR_A].eng, x->p->s[PAIR_A].qpn, 0, pi), 0);
	print_message("lead %3u us: min RTT %.1f us, SRTT %.1f us, delay cuts %" PRIu64
		      ", host time in ACKs %.1f us per stamped packet\n",
		      (unsigned)(lead / PAIR_US), pi->min_rtt_ns / 1e3, pi->srtt_ns / 1e3,
		      pi->delay_cuts, (double)pair_stat(x->p, PAIR_A, EC_ACK_HOST_NS) / 1e3 /
		      (double)(pair_stat(x->p, PAIR_A, EC_RX_STAMPED) ?: 1));
	return x;
}

static void test_stamps_keep_host_out(void **state)
{
	struct engine_path_info pi;
	struct pair_fx *x = transfer(state, LEAD_NS, NULL, &pi);

	/* The fabric's, at most the byte's rounding (1/16 of ~180 us) and 1 us above. */
	assert_true(pi.min_rtt_ns >= FABRIC_NS);
	assert_true(pi.min_rtt_ns <= FABRIC_NS + LEAD_NS / 16 + PAIR_US);
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
	struct pair_fx *x = transfer(state, 0, NULL, &pi);

	assert_true(pi.min_rtt_ns >= 2 * WIRE_NS);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_RX_STAMPED), 0);
	assert_int_equal(pair_stat(x->p, PAIR_B, EC_RX_STAMPED), 0);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_ACK_HOST_NS), 0);
}

/* B's ACKs claim the most host time the byte can say (507,904 us). */
static bool claim_forever(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	(void)p;
	(void)arg;
	if (pkt->from == PAIR_B && pkt->data[PKT_OPCODE] == MROC_OP_ACK)
		pkt->data[MROC_HDR_LEN + 31] = 0xff;
	return true;
}

static void test_claim_beyond_sample_ignored(void **state)
{
	struct engine_path_info pi;
	struct pair_fx *x = transfer(state, LEAD_NS, claim_forever, &pi);

	/* A's own wait is still taken out; B's claim is not. */
	assert_true(pi.min_rtt_ns >= 2 * WIRE_NS - LEAD_NS);
	assert_int_equal(pair_stat(x->p, PAIR_A, EC_ACK_HOST_NS), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_stamps_keep_host_out, teardown),
		cmocka_unit_test_teardown(test_unstamped_as_before, teardown),
		cmocka_unit_test_teardown(test_claim_beyond_sample_ignored, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
