// SPDX-License-Identifier: MIT
/*
 * daemon/net/egress.[ch]: which port and next hop a packet leaves by.  The
 * neighbours are mocked here, and only here: this file defines the
 * next-hop table (nexthops_*) and the three netlink calls egress makes
 * (the link state and the change monitor), so the test says which
 * (peer, port) has a next hop, which link is up and when a change comes.
 * The peer table and port health are the real ones.
 *
 * Covered: a sender's path leaves by sport % nports, or by the other port
 * when its own is down, has no next hop, or is counted down for the peer
 * (8 data packets into silence while the other port heard it); a reply
 * leaves by the port its path came in on (the peer's primary or port
 * address); CM by the port the peer was last heard through; a released
 * peer or new port addresses forget what was known; housekeeping only on
 * the tick (link changes at most every 1 ms, next hops aged every 10 s);
 * status (port name, ports down, counters); one port; bad arguments.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "egress.h"
#include "netlink.h"
#include "nexthop.h"
#include "peers.h"
#include "porthealth.h"

#define MS	1000000ull
#define DEAD	(50 * MS)
#define PEERS	16

/* ---- the mocked neighbours ------------------------------------------------------- */

static struct {
	bool reach[PEERS][EGRESS_MAX_PORTS];	/* (peer, port) has a next hop */
	int err[PEERS][EGRESS_MAX_PORTS];	/* why not, for nexthops_err */
	bool link_up[EGRESS_MAX_PORTS + 1];	/* by ifindex (port p: ifindex p + 1) */
	int changes;				/* waiting on the monitor */
	int forgets, expires_all, expires_aged;
	uint64_t last_age;
	struct nexthop hop;
} m;

struct nexthops {
	int unused;
};

static struct nexthops the_table;

int nexthops_create(const struct nexthops_cfg *cfg, struct nexthops **out)
{
	assert_non_null(cfg->peers);
	*out = &the_table;
	return 0;
}

void nexthops_destroy(struct nexthops *t)
{
	(void)t;
}

const struct nexthop *nexthops_get(struct nexthops *t, uint32_t peer, unsigned port, bool own,
				   uint64_t now)
{
	(void)t, (void)own, (void)now;
	if (peer >= PEERS || !m.reach[peer][port])
		return NULL;
	m.hop.ifindex = (int)port + 1;
	return &m.hop;
}

int nexthops_err(const struct nexthops *t, uint32_t peer, unsigned port, bool own)
{
	(void)t, (void)own;
	return peer < PEERS && !m.reach[peer][port] ? m.err[peer][port] : 0;
}

void nexthops_forget(struct nexthops *t, uint32_t peer)
{
	(void)t, (void)peer;
	m.forgets++;
}

void nexthops_expire(struct nexthops *t, uint64_t now, uint64_t max_age_ns)
{
	(void)t, (void)now;
	if (max_age_ns)
		m.expires_aged++;
	else
		m.expires_all++;
	m.last_age = max_age_ns;
}

int nl_link_get(struct nl *nl, int ifindex, const char *name, struct nl_link *out)
{
	(void)nl, (void)name;
	memset(out, 0, sizeof(*out));
	out->ifindex = ifindex;
	if (ifindex > 0 && ifindex <= EGRESS_MAX_PORTS && m.link_up[ifindex])
		out->flags = IFF_UP | IFF_RUNNING;
	return 0;
}

int nl_monitor_open(int *fd)
{
	*fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return *fd < 0 ? -errno : 0;
}

int nl_monitor_drain(int fd)
{
	int n = m.changes;

	(void)fd;
	m.changes = 0;
	return n;
}

/* ---- helpers -------------------------------------------------------------------- */

static const struct egress_port ports[] = {
	{ .ifindex = 1, .ifname = "p0" },
	{ .ifindex = 2, .ifname = "p1" },
};

struct fixture {
	struct peers *peers;
	struct egress *e;
	uint32_t a, b;		/* two peers' handles */
	struct mroc_addr addr_a, addr_b;
	uint64_t now;
};

static struct mroc_addr addr(const char *s)
{
	struct mroc_addr a;

	assert_int_equal(addr_parse(s, &a), 0);
	return a;
}

static int setup_n(void **state, unsigned nports, uint64_t dead_ns)
{
	static struct fixture f;
	struct egress_cfg cfg = {
		.ports = ports,
		.nports = nports,
		.max_peers = PEERS,
		.port_dead_ns = dead_ns,
	};
	char why[160] = "";

	memset(&m, 0, sizeof(m));
	memset(&f, 0, sizeof(f));
	for (unsigned p = 0; p < EGRESS_MAX_PORTS; p++) {
		m.link_up[p + 1] = true;
		for (unsigned h = 0; h < PEERS; h++)
			m.reach[h][p] = true;
	}
	f.peers = peers_create(PEERS);
	assert_non_null(f.peers);
	cfg.peers = f.peers;
	f.addr_a = addr("10.0.0.2");
	f.addr_b = addr("10.0.0.3");
	assert_int_equal(peers_get_handle(f.peers, &f.addr_a, &f.a), 0);
	assert_int_equal(peers_get_handle(f.peers, &f.addr_b, &f.b), 0);
	f.now = 1000 * MS;
	assert_int_equal(egress_create(&cfg, f.now, &f.e, why, sizeof(why)), 0);
	assert_non_null(f.e);
	assert_true(egress_fd(f.e) >= 0);
	*state = &f;
	return 0;
}

static int setup(void **state)
{
	return setup_n(state, 2, DEAD);
}

static int setup_one_port(void **state)
{
	return setup_n(state, 1, DEAD);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	egress_destroy(f->e);
	peers_destroy(f->peers);
	return 0;
}

/* The port a packet to peer from sport leaves by; -1: none. */
static int route(struct fixture *f, uint32_t peer, uint16_t sport, bool echo, bool own,
		 bool data)
{
	unsigned port = 99;
	const struct nexthop *h = egress_route(f->e, peer, sport, echo, own, false, data, f->now,
					       &port);

	if (!h)
		return -1;
	assert_int_equal(h->ifindex, (int)port + 1);	/* the hop of the port it names */
	return (int)port;
}

static int send_data(struct fixture *f, uint32_t peer, uint16_t sport)
{
	return route(f, peer, sport, false, true, true);
}

/* The engine took a packet from peer (its first address, source port 7) through port. */
static void heard(struct fixture *f, uint32_t peer, unsigned port, enum egress_heard_as as)
{
	egress_heard(f->e, peer, peer == f->a ? &f->addr_a : &f->addr_b, 7, port, f->now, as);
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_create_args(void **state)
{
	struct egress_cfg cfg = { .ports = ports, .nports = 0, .max_peers = PEERS };
	struct egress *e = (struct egress *)&cfg;
	char why[160] = "";

	(void)state;
	assert_int_equal(egress_create(&cfg, 0, &e, why, sizeof(why)), -EINVAL);
	assert_null(e);
	assert_non_null(strstr(why, "ports"));
	cfg.nports = EGRESS_MAX_PORTS + 1;
	assert_int_equal(egress_create(&cfg, 0, &e, why, sizeof(why)), -EINVAL);
	egress_destroy(NULL);
}

/* A sender's path: sport % nports; the other port when its own cannot take it. */
static void test_sender_port(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(send_data(f, f->a, 1000), 0);
	assert_int_equal(send_data(f, f->a, 1001), 1);
	/* no next hop on p1 for a (still resolving): p0, and b still takes p1 */
	m.reach[f->a][1] = false;
	assert_int_equal(send_data(f, f->a, 1001), 0);
	assert_int_equal(send_data(f, f->b, 1001), 1);
	/* status says where it would leave without resolving: p1 while that resolves */
	assert_string_equal(egress_port_name(f->e, f->a, 1001, f->now), "p1");
	m.err[f->a][1] = -EHOSTUNREACH;
	assert_string_equal(egress_port_name(f->e, f->a, 1001, f->now), "p0");
	/* no port reaches it: none (the reason is logged) */
	m.reach[f->a][0] = false;
	m.err[f->a][0] = m.err[f->a][1] = -ENETUNREACH;
	assert_int_equal(send_data(f, f->a, 1000), -1);
	assert_null(egress_port_name(f->e, f->a, 1000, f->now));
	/* an unknown handle: none */
	assert_int_equal(send_data(f, PEERS - 1, 1000), -1);
	assert_null(egress_port_name(f->e, PEERS - 1, 1000, f->now));
}

/* A link that goes down hands its paths to the other port, seen on the tick only. */
static void test_link_down_on_tick(void **state)
{
	struct fixture *f = *state;
	int all = m.expires_all;

	m.link_up[2] = false;
	m.changes = 1;
	assert_int_equal(send_data(f, f->a, 1001), 1);	/* not looked at yet */
	assert_int_equal(egress_tick(f->e, f->now), 0);	/* none came up */
	assert_int_equal(send_data(f, f->a, 1001), 0);
	assert_int_equal(m.expires_all, all + 1);	/* routes may have changed too */
	/* back up: the next change is read no sooner than EGRESS_MON_NS later */
	m.link_up[2] = true;
	m.changes = 1;
	assert_int_equal(egress_tick(f->e, f->now + EGRESS_MON_NS - 1), 0);
	assert_int_equal(send_data(f, f->a, 1001), 0);
	/* port 1 came up: the engine gets its paths back (engine_port_up) */
	assert_int_equal(egress_tick(f->e, f->now + EGRESS_MON_NS), 1u << 1);
	assert_int_equal(send_data(f, f->a, 1001), 1);
	/* every link down: none */
	m.link_up[1] = m.link_up[2] = false;
	m.changes = 1;
	assert_int_equal(egress_tick(f->e, f->now + 2 * EGRESS_MON_NS), 0);
	assert_int_equal(send_data(f, f->a, 1000), -1);
}

/* Next hops are learnt again every EGRESS_HOP_MAX_AGE_NS / 3, on the tick. */
static void test_hop_ageing(void **state)
{
	struct fixture *f = *state;
	uint64_t t = f->now + EGRESS_HOP_MAX_AGE_NS / 3;

	egress_tick(f->e, t - MS);
	assert_int_equal(m.expires_aged, 0);
	egress_tick(f->e, t);
	assert_int_equal(m.expires_aged, 1);
	assert_int_equal(m.last_age, EGRESS_HOP_MAX_AGE_NS);
	egress_tick(f->e, t + MS);
	assert_int_equal(m.expires_aged, 1);
	egress_tick(f->e, t + EGRESS_HOP_MAX_AGE_NS / 3);
	assert_int_equal(m.expires_aged, 2);
}

/* A reply leaves by the port its path came in on, also from the peer's port address. */
static void test_reply_follows_arrival(void **state)
{
	struct fixture *f = *state;
	struct mroc_addr alias[PEERS_MAX_ALIASES] = { [1] = addr("10.1.0.2") };

	/* the peer's path 1000 wants p0 here, but came in on p1 */
	egress_arrived(f->e, &f->addr_a, 1000, 1);
	assert_int_equal(route(f, f->a, 1000, true, true, false), 1);	/* reply */
	assert_int_equal(route(f, f->a, 1000, false, true, false), 0);	/* our own path */
	assert_int_equal(route(f, f->b, 1000, true, true, false), 0);	/* another peer */
	/* from its port address: that arrival counts first */
	assert_int_equal(peers_set_aliases(f->peers, f->a, alias, 1u << 1), 1);
	egress_arrived(f->e, &alias[1], 1002, 1);
	egress_arrived(f->e, &f->addr_a, 1002, 0);
	assert_int_equal(route(f, f->a, 1002, true, true, false), 1);
	/* arrival port down: the other one */
	m.link_up[2] = false;
	m.changes = 1;
	egress_tick(f->e, f->now);
	assert_int_equal(route(f, f->a, 1002, true, true, false), 0);
}

/* CM leaves by the port the peer was last heard through; forgotten with the peer. */
static void test_cm_by_heard_port(void **state)
{
	struct fixture *f = *state;
	struct mroc_addr alias[PEERS_MAX_ALIASES] = { [0] = addr("10.1.0.2") };
	int forgets = m.forgets;

	assert_int_equal(route(f, f->a, 1000, false, false, false), 0);
	heard(f, f->a, 1, EGRESS_HEARD_NEWS);
	assert_int_equal(route(f, f->a, 1000, false, false, false), 1);	/* CM */
	assert_int_equal(route(f, f->a, 1000, false, true, false), 0);	/* not CM */
	heard(f, PEERS + 5, 1, EGRESS_HEARD_NEWS);			/* out of range: ignored */
	heard(f, f->b, EGRESS_MAX_PORTS, EGRESS_HEARD_NEWS);
	assert_int_equal(route(f, f->b, 1000, false, false, false), 0);
	/* new port addresses: what was known of the peer goes (the release hook) */
	assert_int_equal(peers_set_aliases(f->peers, f->a, alias, 1u << 0), 1);
	assert_int_equal(m.forgets, forgets + 1);
	assert_int_equal(route(f, f->a, 1000, false, false, false), 0);
}

/* Where a CM answer to a REQ (CONNECT_REP, CONNECT_REJ) to peer from sport leaves. */
static int route_answer(struct fixture *f, uint32_t peer, uint16_t sport)
{
	unsigned port = 99;

	return egress_route(f->e, peer, sport, false, false, true, false, f->now, &port) ?
	       (int)port : -1;
}

/*
 * docs/PROTOCOL.md 11a: a CONNECT_REQ the mode could not authenticate (none,
 * token), spoofed with a live peer's address through another port, moves
 * only where the answers to REQs go, not the CM of its connections
 * (DISCONNECT, our REQs); the peer's next authentic packet takes even that
 * back.  The old code moved every CM packet to the spoofer's port.
 */
static void test_cm_unauthenticated_req(void **state)
{
	struct fixture *f = *state;

	/* sport 1000 alone would pick p0 */
	heard(f, f->a, 1, EGRESS_HEARD_NEWS);		/* a's data, through p1 */
	heard(f, f->a, 0, EGRESS_HEARD_REQ);		/* a spoofed REQ, through p0 */
	assert_int_equal(route(f, f->a, 1000, false, false, false), 1);	/* CM: still p1 */
	assert_int_equal(route_answer(f, f->a, 1001), 0);	/* the REP answers where the REQ came */
	heard(f, f->a, 1, EGRESS_HEARD_NEWS);		/* authentic again */
	assert_int_equal(route_answer(f, f->a, 1000), 1);
	/* A new peer's first REQ (nothing authentic yet): its answer goes back that way. */
	heard(f, f->b, 1, EGRESS_HEARD_REQ);
	assert_int_equal(route_answer(f, f->b, 1000), 1);
	assert_int_equal(route(f, f->b, 1000, false, false, false), 0);	/* other CM: sport */
}

/*
 * A port through which nothing comes back from a peer while the other port
 * hears it is counted down for that peer (porthealth.h): its paths leave by
 * the other port, status says so, and the count goes up once.
 */
static void test_port_counted_down(void **state)
{
	struct fixture *f = *state;
	const char *names[4];

	for (int i = 0; i < PORTHEALTH_DEAD_PKTS; i++, f->now += MS) {
		assert_int_equal(send_data(f, f->a, 1000), 0);
		heard(f, f->a, 1, EGRESS_HEARD_NEWS);
	}
	f->now += DEAD;
	heard(f, f->a, 1, EGRESS_HEARD_NEWS);
	assert_int_equal(egress_port_dead(f->e), 0);
	assert_int_equal(send_data(f, f->a, 1000), 1);		/* went down now */
	assert_int_equal(egress_port_dead(f->e), 1);
	assert_int_equal(send_data(f, f->a, 1000), 1);
	assert_int_equal(egress_port_dead(f->e), 1);
	assert_int_equal(send_data(f, f->b, 1000), 0);		/* another peer */
	assert_int_equal(egress_ports_down(f->e, f->a, names, 4, f->now), 1);
	assert_string_equal(names[0], "p0");
	assert_int_equal(egress_ports_down(f->e, f->b, names, 4, f->now), 0);
	assert_int_equal(egress_count_down(f->e, f->now), 1);
	assert_string_equal(egress_port_name(f->e, f->a, 1000, f->now), "p1");
	/* the only port left cannot reach it: a port counted down beats none */
	m.reach[f->a][1] = false;
	assert_int_equal(send_data(f, f->a, 1000), 0);
}

/*
 * #24: a repeat (engine_rx_repeat: a PSN the engine already had, an ACK
 * without news) is no sign that the port it came through works.  In "aead"
 * an on-path host that cuts p0 replays the peer's old sealed packets
 * through it; heard as news, each one kept p0 counted up and the peer's
 * CM on it.  The answer a repeat is owed still goes back the way it came.
 */
static void test_repeat_not_alive(void **state)
{
	struct fixture *f = *state;

	heard(f, f->a, 1, EGRESS_HEARD_NEWS);				/* CM by p1 */
	/* A repeat's answer goes back the way it came (sport 1000 alone: p0). */
	egress_heard(f->e, f->a, &f->addr_a, 1000, 1, f->now, EGRESS_HEARD_REPEAT);
	assert_int_equal(route(f, f->a, 1000, true, true, false), 1);
	for (int i = 0; i < PORTHEALTH_DEAD_PKTS; i++, f->now += MS) {
		assert_int_equal(send_data(f, f->a, 1000), 0);
		heard(f, f->a, 1, EGRESS_HEARD_NEWS);
		heard(f, f->a, 0, EGRESS_HEARD_REPEAT);			/* a replay through p0 */
	}
	f->now += DEAD;
	heard(f, f->a, 1, EGRESS_HEARD_NEWS);
	heard(f, f->a, 0, EGRESS_HEARD_REPEAT);
	assert_int_equal(route(f, f->a, 1000, false, false, false), 1);	/* CM: still p1 */
	assert_int_equal(send_data(f, f->a, 1000), 1);			/* p0 went down */
	assert_int_equal(egress_port_dead(f->e), 1);
}

/* The sweep counts down silent ports no packet wants any more, on the tick. */
static void test_sweep_on_tick(void **state)
{
	struct fixture *f = *state;

	for (int i = 0; i < PORTHEALTH_DEAD_PKTS; i++, f->now += MS) {
		assert_int_equal(send_data(f, f->a, 1000), 0);
		heard(f, f->a, 1, EGRESS_HEARD_NEWS);
	}
	f->now += DEAD;
	heard(f, f->a, 1, EGRESS_HEARD_NEWS);
	assert_int_equal(egress_count_down(f->e, f->now), 0);
	egress_tick(f->e, f->now);
	assert_int_equal(egress_port_dead(f->e), 1);
	assert_int_equal(egress_count_down(f->e, f->now), 1);
}

/* One port: every packet leaves by it, arrivals are not kept, no port health. */
static void test_one_port(void **state)
{
	struct fixture *f = *state;

	egress_arrived(f->e, &f->addr_a, 1001, 0);
	assert_int_equal(route(f, f->a, 1001, true, true, true), 0);
	assert_int_equal(route(f, f->a, 1000, false, false, true), 0);
	assert_string_equal(egress_port_name(f->e, f->a, 1001, f->now), "p0");
	m.reach[f->a][0] = false;
	assert_int_equal(route(f, f->a, 1001, false, true, true), -1);
	assert_int_equal(egress_count_down(f->e, f->now), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_args),
		cmocka_unit_test_setup_teardown(test_sender_port, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_down_on_tick, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hop_ageing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reply_follows_arrival, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cm_by_heard_port, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cm_unauthenticated_req, setup, teardown),
		cmocka_unit_test_setup_teardown(test_port_counted_down, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repeat_not_alive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sweep_on_tick, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_port, setup_one_port, teardown),
	};

	return cmocka_run_group_tests_name("egress", tests, NULL, NULL);
}
