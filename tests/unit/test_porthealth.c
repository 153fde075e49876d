// SPDX-License-Identifier: MIT
/*
 * daemon/porthealth.[ch]: off (dead_ns 0, one port); a port that hears the
 * peer stays up; one that sent N (8) packets into silence goes down for that
 * peer only once the Nth is dead_ns old and the peer was heard through
 * another port since, however far apart the packets went (the engine's
 * repathing leaves a dead plane within an RTO, and comes back now and then);
 * a peer silent everywhere counts no port down; an answer after a quiet
 * spell; the sweep for ports no packet wants any more; the hold ends with a
 * fresh allowance; forget (a peer, a port whose link changed); the counts
 * for status; the order in which a path tries the
 * ports (porthealth_choice): every port once, the paths of a down port
 * spread evenly over the others.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "porthealth.h"

#define MS 1000000ULL
#define DEAD (50 * MS)
#define N PORTHEALTH_DEAD_PKTS

static void test_off(void **state)
{
	struct porthealth *ph;

	(void)state;
	assert_int_equal(porthealth_create(16, 2, 0, &ph), 0);
	assert_null(ph);
	assert_int_equal(porthealth_create(16, 1, DEAD, &ph), 0);
	assert_null(ph);
	for (int i = 0; i < 1000; i++) {
		porthealth_tx(NULL, 1, 1, (uint64_t)i * MS);
		assert_int_equal(porthealth_check(NULL, 1, 1, (uint64_t)i * MS), PORTHEALTH_UP);
	}
	assert_false(porthealth_is_down(NULL, 1, 1, 0));
	assert_int_equal(porthealth_count_down(NULL, 0), 0);
}

/* n packets to peer out of port, one a millisecond from *now, each checked first. */
static int send_n(struct porthealth *ph, uint32_t peer, unsigned port, int n, uint64_t *now)
{
	int went = 0;

	for (int i = 0; i < n; i++, *now += MS) {
		enum porthealth_state st = porthealth_check(ph, peer, port, *now);

		went += st == PORTHEALTH_WENT_DOWN;
		if (st == PORTHEALTH_UP)
			porthealth_tx(ph, peer, port, *now);
	}
	return went;
}

static void test_down_and_back(void **state)
{
	struct porthealth *ph;
	uint64_t now = 1000 * MS;

	(void)state;
	assert_int_equal(porthealth_create(16, 2, DEAD, &ph), 0);
	assert_non_null(ph);
	/* Port 0 hears the peer after every packet: never down. */
	for (int i = 0; i < 200; i++, now += MS) {
		assert_int_equal(send_n(ph, 3, 0, 1, &now), 0);
		porthealth_rx(ph, 3, 0, now);
	}
	/* Port 1 sends into silence while port 0 keeps hearing the peer. */
	assert_int_equal(send_n(ph, 3, 1, N, &now), 0);	/* the Nth goes out */
	now += DEAD - 2 * MS;
	porthealth_rx(ph, 3, 0, now);
	assert_int_equal(porthealth_check(ph, 3, 1, now), PORTHEALTH_UP);	/* not old enough */
	now += 2 * MS;
	assert_int_equal(porthealth_check(ph, 3, 1, now), PORTHEALTH_WENT_DOWN);
	assert_int_equal(porthealth_check(ph, 3, 1, now), PORTHEALTH_DOWN);
	assert_true(porthealth_is_down(ph, 3, 1, now));
	assert_int_equal(porthealth_check(ph, 3, 0, now), PORTHEALTH_UP);	/* the other port */
	assert_int_equal(porthealth_check(ph, 4, 1, now), PORTHEALTH_UP);	/* another peer */
	assert_int_equal(porthealth_count_down(ph, now), 1);
	/* A packet with nowhere better to go proves nothing either way. */
	porthealth_tx(ph, 3, 1, now);
	/* Held HOLD_FACTOR x dead, then tried again with a fresh allowance. */
	now += PORTHEALTH_HOLD_FACTOR * DEAD - MS;
	assert_int_equal(porthealth_check(ph, 3, 1, now), PORTHEALTH_DOWN);
	now += MS;
	assert_false(porthealth_is_down(ph, 3, 1, now));
	assert_int_equal(porthealth_count_down(ph, now), 0);
	assert_int_equal(porthealth_check(ph, 3, 1, now), PORTHEALTH_UP);
	assert_int_equal(send_n(ph, 3, 1, N - 1, &now), 0);
	porthealth_rx(ph, 3, 1, now);			/* the plane is back */
	porthealth_rx(ph, 3, 0, now);
	assert_int_equal(send_n(ph, 3, 1, N - 1, &now), 0);
	now += 10 * DEAD;
	porthealth_rx(ph, 3, 0, now);
	assert_int_equal(porthealth_check(ph, 3, 1, now), PORTHEALTH_UP);	/* N - 1 only */
	porthealth_destroy(ph);
}

/*
 * The engine moves a path off a dead plane within an RTO and lands one
 * there again now and then: 2 packets per landing, landings 10 x dead_ns
 * apart, still add up.
 */
static void test_packets_far_apart(void **state)
{
	struct porthealth *ph;
	uint64_t now = 5000 * MS;
	int went = 0;

	(void)state;
	assert_int_equal(porthealth_create(8, 4, DEAD, &ph), 0);
	for (int landing = 0; landing < N / 2 + 1; landing++) {
		went += send_n(ph, 1, 2, 2, &now);
		now += 10 * DEAD;
		porthealth_rx(ph, 1, 0, now);
		porthealth_rx(ph, 1, 3, now);
	}
	assert_int_equal(went, 1);
	assert_true(porthealth_is_down(ph, 1, 2, now));
	assert_false(porthealth_is_down(ph, 1, 1, now));
	porthealth_destroy(ph);
}

/* A peer silent on every port (gone, restarting, starved): no port is to blame. */
static void test_peer_silent_everywhere(void **state)
{
	struct porthealth *ph;
	uint64_t now = 5000 * MS;

	(void)state;
	assert_int_equal(porthealth_create(8, 2, DEAD, &ph), 0);
	porthealth_rx(ph, 2, 0, now);
	porthealth_rx(ph, 2, 1, now);
	assert_int_equal(send_n(ph, 2, 0, 5 * N, &now), 0);
	assert_int_equal(send_n(ph, 2, 1, 5 * N, &now), 0);
	now += 100 * DEAD;
	assert_int_equal(send_n(ph, 2, 0, 5 * N, &now), 0);
	assert_int_equal(send_n(ph, 2, 1, 5 * N, &now), 0);
	/* Heard through port 0 only before port 1's Nth packet: still not port 1's fault. */
	assert_int_equal(porthealth_count_down(ph, now), 0);
	/* Port 0 hears it again: port 1, silent all along, is the plane's. */
	porthealth_rx(ph, 2, 0, now);
	assert_int_equal(porthealth_check(ph, 2, 1, now), PORTHEALTH_WENT_DOWN);
	porthealth_destroy(ph);
}

/* A quiet spell, then packets that are answered; calls out of range change nothing. */
static void test_quiet_then_answered(void **state)
{
	struct porthealth *ph;
	uint64_t now = 5000 * MS;

	(void)state;
	assert_int_equal(porthealth_create(8, 2, DEAD, &ph), 0);
	porthealth_rx(ph, 5, 1, now);
	assert_int_equal(send_n(ph, 5, 1, N - 1, &now), 0);	/* one answer missing */
	now += 10000 * MS;					/* idle for 10 s */
	porthealth_rx(ph, 5, 0, now);
	assert_int_equal(send_n(ph, 5, 1, 1, &now), 0);	/* a path lands: the Nth... */
	porthealth_rx(ph, 5, 1, now);				/* ... and is answered */
	assert_int_equal(porthealth_check(ph, 5, 1, now + 100 * DEAD), PORTHEALTH_UP);
	porthealth_rx(ph, 8, 0, now);
	porthealth_tx(ph, 5, 2, now);
	assert_int_equal(porthealth_check(ph, 8, 0, now), PORTHEALTH_UP);
	porthealth_destroy(ph);
}

struct downs {
	unsigned n;
	uint32_t peer[4];
	unsigned port[4];
};

static void note_down(void *ctx, uint32_t peer, unsigned port)
{
	struct downs *d = ctx;

	assert_true(d->n < 4);
	d->peer[d->n] = peer;
	d->port[d->n++] = port;
}

/* The paths that lost packets on a port have moved on: the sweep still counts it down. */
static void test_sweep(void **state)
{
	struct porthealth *ph;
	struct downs d = { 0 };
	uint64_t now = 5000 * MS;

	(void)state;
	assert_int_equal(porthealth_create(8, 3, DEAD, &ph), 0);
	porthealth_sweep(ph, now, note_down, &d);
	assert_int_equal(d.n, 0);
	send_n(ph, 7, 2, N, &now);
	send_n(ph, 4, 1, N - 1, &now);		/* one short */
	now += DEAD;
	porthealth_rx(ph, 7, 0, now);
	porthealth_rx(ph, 4, 0, now);
	porthealth_sweep(ph, now, note_down, &d);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.peer[0], 7);
	assert_int_equal(d.port[0], 2);
	assert_int_equal(porthealth_check(ph, 7, 2, now), PORTHEALTH_DOWN);
	porthealth_sweep(ph, now + MS, note_down, &d);	/* once only */
	assert_int_equal(d.n, 1);
	assert_int_equal(porthealth_count_down(ph, now), 1);
	porthealth_sweep(NULL, now, note_down, &d);
	porthealth_destroy(ph);
}

static void test_forget(void **state)
{
	struct porthealth *ph;
	uint64_t now = 5000 * MS;

	(void)state;
	assert_int_equal(porthealth_create(8, 2, DEAD, &ph), 0);
	send_n(ph, 6, 1, N, &now);
	now += DEAD;
	porthealth_rx(ph, 6, 0, now);
	assert_int_equal(porthealth_check(ph, 6, 1, now), PORTHEALTH_WENT_DOWN);
	/* The handle given up goes to another address: it starts over. */
	porthealth_forget(ph, 6);
	assert_false(porthealth_is_down(ph, 6, 1, now));
	send_n(ph, 6, 1, N, &now);
	now += DEAD;
	assert_int_equal(porthealth_check(ph, 6, 1, now), PORTHEALTH_UP);	/* never heard */
	porthealth_forget(ph, 99);
	/* A link down and up again: what the port's silence said is forgotten, for every peer. */
	porthealth_rx(ph, 6, 0, now);
	porthealth_rx(ph, 5, 0, now);
	assert_int_equal(porthealth_check(ph, 6, 1, now), PORTHEALTH_WENT_DOWN);
	send_n(ph, 5, 1, N, &now);
	porthealth_forget_port(ph, 1);
	assert_false(porthealth_is_down(ph, 6, 1, now));
	now += DEAD;
	porthealth_rx(ph, 5, 0, now);
	assert_int_equal(porthealth_check(ph, 5, 1, now), PORTHEALTH_UP);
	porthealth_forget_port(ph, 7);
	porthealth_forget_port(NULL, 0);
	porthealth_destroy(ph);
}

static void test_choice(void **state)
{
	(void)state;
	for (unsigned nports = 1; nports <= 5; nports++) {
		for (unsigned want = 0; want < nports; want++) {
			unsigned took[8] = { 0 };

			for (unsigned sport = 49152; sport < 49152 + 60 * nports; sport++) {
				unsigned seen = 0, first = nports;

				for (unsigned t = 0; t < nports; t++) {
					unsigned p = porthealth_choice(nports, want, (uint16_t)sport, t);

					assert_true(p < nports);
					assert_false(seen & 1u << p);		/* each port once */
					seen |= 1u << p;
					if (!t)
						assert_int_equal(p, want);
					else if (first == nports)
						first = p;
				}
				/* want is down: where the path goes instead */
				if (first < nports)
					took[first]++;
			}
			/* ... evenly over the others */
			for (unsigned p = 0; p < nports && nports > 1; p++)
				assert_int_equal(took[p], p == want ? 0 : 60 * nports / (nports - 1));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_down_and_back),
		cmocka_unit_test(test_packets_far_apart),
		cmocka_unit_test(test_peer_silent_everywhere),
		cmocka_unit_test(test_quiet_then_answered),
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_forget),
		cmocka_unit_test(test_choice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
