// SPDX-License-Identifier: MIT
/*
 * Control links (daemon/net/links.c): who keeps an incoming link when all
 * incoming slots are taken (a daemon our config names before hosts it
 * does not).  A daemon's engine with its links and peer
 * table, and "hosts" that are engines of their own behind addresses of the
 * table, exchanging packets in memory: each handshake is a real one
 * (CONNECT_REQ, REP, the requester's proof), one at a time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "engine.h"
#include "links.h"
#include "log.h"
#include "peers.h"

#define SEC	1000000000ull
#define HOSTS	(LINKS_MAX + 2)

static struct {
	struct engine *srv, *host[HOSTS];
	uint32_t handle[HOSTS];		/* each host's at the daemon */
	struct peers *peers;
	struct links *links;
	uint64_t now;
} g;

static struct mroc_addr addr_n(uint32_t i)
{
	struct mroc_addr a = { .family = AF_INET };

	a.bytes[0] = 10;
	a.bytes[1] = 7;
	a.bytes[2] = (uint8_t)(i >> 8);
	a.bytes[3] = (uint8_t)(i + 1);
	return a;
}

/* Packets both ways, the daemon's events to its links, until nothing moves. */
static void pump(void)
{
	static uint8_t buf[9000];
	struct engine_txbuf b = { .data = buf, .cap = sizeof(buf) };
	struct engine_cqe c[16];
	bool moved;
	int n;

	do {
		moved = false;
		g.now += 1000;
		links_tick(g.links, g.now);
		while (engine_tx(g.srv, g.now, &b, 1) == 1) {
			for (int h = 0; h < HOSTS; h++)
				if (g.host[h] && g.handle[h] == b.peer)
					engine_rx(g.host[h], g.now, buf, b.len,
						  &(struct engine_rx_meta){ .peer = 0 });
			moved = true;
			b.cap = sizeof(buf);
		}
		for (int h = 0; h < HOSTS; h++) {
			while (g.host[h] && engine_tx(g.host[h], g.now, &b, 1) == 1) {
				engine_rx(g.srv, g.now, buf, b.len,
					  &(struct engine_rx_meta){ .peer = g.handle[h] });
				moved = true;
				b.cap = sizeof(buf);
			}
			while (g.host[h] && engine_poll_cq(g.host[h], c, 16) > 0)
				;
		}
		while ((n = engine_poll_cq(g.srv, c, 16)) > 0)
			for (int i = 0; i < n; i++)
				links_on_cqe(g.links, &c[i], g.now);
	} while (moved);
}

/* Host h connects one more QP to the control service; true if it got connected. */
static bool link_from(int h)
{
	struct engine_qp_attr a = { .mode = MROC_MODE_METAROCE, .npaths = 1, .sq_depth = 16,
				    .rq_depth = 16 };
	struct engine_qp_info qi;
	uint32_t qpn;

	if (!g.host[h]) {
		struct engine_config ec;
		struct mroc_addr ad = addr_n((uint32_t)h);

		engine_config_default(&ec);
		ec.max_qps = 2 * LINKS_MAX;
		ec.seed = 1000 + (uint64_t)h;
		g.host[h] = engine_create(&ec);
		assert_non_null(g.host[h]);
		assert_int_equal(peers_get_handle(g.peers, &ad, &g.handle[h]), 0);
	}
	assert_int_equal(engine_qp_create(g.host[h], &a, &qpn), 0);
	assert_int_equal(engine_qp_connect(g.host[h], qpn, 0, MROCD_SERVICE_CONTROL, g.now), 0);
	pump();
	return !engine_qp_info(g.host[h], qpn, &qi) && qi.state == ENGINE_QPS_CONNECTED;
}

/* Incoming links up at the daemon from host h. */
static int links_of(int h)
{
	struct link_info li[LINKS_MAX];
	struct mroc_addr a = addr_n((uint32_t)h);
	int n = links_info(g.links, li, LINKS_MAX), k = 0;

	for (int i = 0; i < n; i++)
		k += !li[i].outgoing && li[i].state == LINK_UP && addr_eq(&li[i].addr, &a);
	return k;
}

/* The daemon, its config naming the n peers at named. */
static int setup_with(const struct mroc_addr *named, unsigned n)
{
	struct engine_config ec;

	memset(&g, 0, sizeof(g));
	engine_config_default(&ec);
	ec.max_qps = 4 * LINKS_MAX;
	g.srv = engine_create(&ec);
	g.peers = peers_create(4 * LINKS_MAX);
	g.links = links_create(g.srv, g.peers, named, n);
	assert_true(g.srv && g.peers && g.links);
	peers_set_engine(g.peers, g.srv);
	g.now = SEC;
	peers_sweep(g.peers, g.now);
	links_set_qp_defaults(g.links, 1, MROC_MODE_METAROCE);
	pump();
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return setup_with(NULL, 0);
}

static int teardown(void **state)
{
	(void)state;
	links_destroy(g.links);
	for (int h = 0; h < HOSTS; h++)
		engine_destroy(g.host[h]);
	engine_destroy(g.srv);
	peers_destroy(g.peers);
	return 0;
}

/*
 * One host takes every incoming slot (64 handshakes from one address); a
 * second host still links, by the slot of the host holding the most, and
 * the first host's next link replaces its own oldest.  Before, first come
 * first served: the second host's link was closed at once, for as long as
 * the first held its 64.
 */
static void test_one_host_holds_all(void **state)
{
	struct links_stats st;

	(void)state;
	for (int i = 0; i < LINKS_MAX; i++)
		assert_true(link_from(0));
	assert_int_equal(links_of(0), LINKS_MAX);
	assert_true(link_from(1));
	assert_int_equal(links_of(1), 1);
	assert_int_equal(links_of(0), LINKS_MAX - 1);
	assert_true(link_from(0));		/* its own oldest gives way */
	assert_int_equal(links_of(1), 1);
	assert_int_equal(links_of(0), LINKS_MAX - 1);
	links_get_stats(g.links, &st);
	assert_int_equal(st.in_accepted, LINKS_MAX + 2);
	assert_int_equal(st.in_evicted, 2);
	assert_int_equal(st.in_refused, 0);
}

/* Every slot a different host's: the next host is refused, nobody loses a link. */
static void test_distinct_hosts_refused(void **state)
{
	struct links_stats st;

	(void)state;
	for (int h = 0; h < LINKS_MAX; h++)
		assert_true(link_from(h));
	assert_false(link_from(LINKS_MAX));
	for (int h = 0; h < LINKS_MAX; h++)
		assert_int_equal(links_of(h), 1);
	links_get_stats(g.links, &st);
	assert_int_equal(st.in_refused, 1);
	assert_int_equal(st.in_evicted, 0);
}

/* The daemon's config names host LINKS_MAX. */
static int setup_named(void **state)
{
	struct mroc_addr named = addr_n(LINKS_MAX);

	(void)state;
	return setup_with(&named, 1);
}

/*
 * As many hosts as incoming slots, each linking once, filled them, and a
 * daemon of the job (one our config names, as every daemon of a job names
 * the others) was refused for as long as they held them.  It now takes the
 * oldest link of a host we do not name; one we do not name is still
 * refused.
 */
static void test_named_daemon_links(void **state)
{
	struct links_stats st;

	(void)state;
	for (int h = 0; h < LINKS_MAX - 1; h++)
		assert_true(link_from(h));
	assert_false(link_from(LINKS_MAX + 1));		/* not named: refused */
	assert_true(link_from(LINKS_MAX));		/* named */
	assert_int_equal(links_of(LINKS_MAX), 1);
	assert_int_equal(links_of(0), 0);		/* the oldest gave way */
	for (int h = 1; h < LINKS_MAX - 1; h++)
		assert_int_equal(links_of(h), 1);
	links_get_stats(g.links, &st);
	assert_int_equal(st.in_refused, 1);
	assert_int_equal(st.in_evicted, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_host_holds_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_distinct_hosts_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_named_daemon_links, setup_named, teardown),
	};

	log_set_level(LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
