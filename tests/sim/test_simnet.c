// SPDX-License-Identifier: MIT
/*
 * The simulator's own mechanics, against a mock engine defined in this file:
 * event order, serialisation rates, drop-tail, ECN marking, random loss,
 * blackholes, routing, downlinks shared by several senders, the
 * one-timer-per-host rule, each host's own clock and determinism.
 *
 * The mock defines every engine_* function simnet.o calls, so the linker
 * takes no member of libmroc_engine.a: these tests do not depend on the
 * real engine being finished or correct.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ecmp.h"
#include "eventq.h"
#include "rng.h"
#include "simnet.h"

/* ---- mock engine --------------------------------------------------------------- */

#define MOCK_TIMERS 16

struct engine {
	struct engine_config cfg;
	/* sender: count packets of len bytes to peer, path = seq % npaths */
	uint32_t to_send, seq, len, peer, npaths;
	uint16_t sport_base;
	uint64_t gap_ns, next_tx;
	/* receiver */
	uint64_t rx, rx_ce, rx_bytes, first_rx, last_rx, rx_per_path[MROC_MAX_PATHS];
	/* timers: fire at these times, each fire queues a completion */
	uint64_t timers[MOCK_TIMERS];
	int ntimers;
	uint64_t fired[MOCK_TIMERS];
	int nfired, cqes_pending;
	uint64_t advance_calls;
};

void engine_config_default(struct engine_config *cfg)
{
	*cfg = (struct engine_config){ .mtu = 1024, .max_qps = 1 };
}

int engine_config_check(const struct engine_config *cfg, const char **why)
{
	return 0;
}

struct engine *engine_create(const struct engine_config *cfg)
{
	struct engine *e = calloc(1, sizeof(*e));

	if (e)
		e->cfg = *cfg;
	return e;
}

void engine_destroy(struct engine *eng)
{
	free(eng);
}

int engine_poll_cq(struct engine *eng, struct engine_cqe *out, int max)
{
	int n = 0;

	while (n < max && eng->cqes_pending) {
		out[n++] = (struct engine_cqe){ .wr_id = eng->fired[eng->nfired -
								     eng->cqes_pending] };
		eng->cqes_pending--;
	}
	return n;
}

/* The mock keeps no counts to disagree (simhost checks the real engine). */
int engine_check(struct engine *eng, char *why, size_t len)
{
	(void)eng;
	(void)why;
	(void)len;
	return 0;
}

int engine_tx(struct engine *eng, uint64_t now, struct engine_txbuf *bufs, int n)
{
	struct engine_txbuf *b = &bufs[0];
	uint32_t path;

	if (!eng->to_send || now < eng->next_tx || n < 1)
		return 0;
	assert_true(b->cap >= eng->len);
	path = eng->seq % eng->npaths;
	memset(b->data, 0, eng->len);
	memcpy(b->data, &eng->seq, 4);
	b->data[4] = (uint8_t)path;
	b->len = eng->len;
	b->peer = eng->peer;
	b->path_id = (uint8_t)path;
	b->sport = (uint16_t)(eng->sport_base + path);
	b->ect = true;
	eng->seq++;
	eng->to_send--;
	eng->next_tx = now + eng->gap_ns;
	return 1;
}

int engine_rx(struct engine *eng, uint64_t now, const uint8_t *pkt, size_t len,
	      const struct engine_rx_meta *meta)
{
	if (!eng->rx)
		eng->first_rx = now;
	eng->rx++;
	eng->rx_bytes += len;
	eng->rx_ce += meta->ce;
	eng->rx_per_path[pkt[4] % MROC_MAX_PATHS]++;
	eng->last_rx = now;
	return 0;
}

void engine_advance(struct engine *eng, uint64_t now)
{
	int i = 0;

	eng->advance_calls++;
	while (i < eng->ntimers) {
		if (eng->timers[i] <= now) {
			/* The sim must call us exactly when due, never late. */
			assert_int_equal(eng->timers[i], now);
			eng->fired[eng->nfired++] = now;
			eng->cqes_pending++;
			eng->timers[i] = eng->timers[--eng->ntimers];
		} else {
			i++;
		}
	}
}

uint64_t engine_next_deadline(struct engine *eng)
{
	uint64_t d = UINT64_MAX;

	for (int i = 0; i < eng->ntimers; i++)
		if (eng->timers[i] < d)
			d = eng->timers[i];
	if (eng->to_send && eng->next_tx < d)
		d = eng->next_tx;
	return d;
}

int engine_post_send(struct engine *eng, uint32_t qpn, const struct engine_wr *wr, uint64_t now)
{
	return -ENOTCONN;
}

int engine_post_recv(struct engine *eng, uint32_t qpn, const struct engine_recv_wr *wr)
{
	return -ENOTCONN;
}

int engine_qp_connect(struct engine *eng, uint32_t qpn, uint32_t peer, uint64_t service_id,
		      uint64_t now)
{
	return -ENOTCONN;
}

/* ---- helpers ------------------------------------------------------------------------ */

static void mock_send(struct sim *sim, uint32_t host, uint32_t peer, uint32_t count,
		      uint32_t len, uint32_t npaths, uint64_t gap_ns)
{
	struct engine *e = sim_host_engine(sim, host);

	e->peer = peer;
	e->to_send = count;
	e->len = len;
	e->npaths = npaths;
	e->gap_ns = gap_ns;
	e->next_tx = sim_now(sim);
	e->sport_base = 49152;
	sim_host_kick(sim, host);
}

static struct sim *make_sim(uint32_t planes, uint64_t rate, uint8_t route, uint64_t seed)
{
	struct sim_config cfg;
	struct sim *sim;

	sim_config_default(&cfg);
	cfg.nplanes = planes;
	cfg.link.rate_bps = rate;
	cfg.route = route;
	cfg.seed = seed;
	sim = sim_create(&cfg);
	assert_non_null(sim);
	return sim;
}

/*
 * SIM_ROUTE_LINUX is the kernel's choice, bit for bit: the planes Linux 6.18's
 * leaves gave UDP datagrams to port 4793 from 10.124.1.1 to 10.124.2.1 and
 * back (scripts/fabric up --name cc13 --planes 4: seed 12345, policy 1; each
 * source port's 5 datagrams counted on the planes' devices), and the source
 * ports of four-path QPs that bench-fabric's quiet lossless runs ended on
 * (session 12, fabric-runs/0*-loss-fabric-0-metaroce4-*.paths-end.json, all at
 * 0.96 Gbit/s with each plane carrying a quarter): one path per plane.
 */
static void test_linux_route_kernel_planes(void **state)
{
	static const struct { uint16_t sport; unsigned plane; } seen[] = {
		{ 49152, 1 },
		{ 49999, 0 },
		{ 50712, 3 },
		{ 51547, 1 },
		{ 52000, 0 },
		{ 53210, 2 },
		{ 54618, 1 },
		{ 55555, 3 },
		{ 56912, 1 },
		{ 58000, 0 },
		{ 60001, 2 },
		{ 61234, 2 },
		{ 62843, 2 },
		{ 63333, 3 },
		{ 64102, 1 },
		{ 65535, 1 },
	};
	static const struct { unsigned net; uint16_t sport[4]; } spread[] = {
		{ 128, { 55216, 52614, 64375, 50641 } },
		{ 128, { 56484, 58579, 49205, 49754 } },
		{ 128, { 50327, 49305, 54560, 51760 } },
		{ 128, { 56029, 61279, 55333, 61455 } },
		{ 28, { 63626, 59067, 55740, 62550 } },
	};
	uint32_t a = ecmp_fabric_addr(124, 0, 2), b = ecmp_fabric_addr(124, 1, 2);

	(void)state;
	assert_int_equal(a, 0x0a7c0101);
	assert_int_equal(b, 0x0a7c0201);
	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++) {
		uint32_t there = ecmp_linux_hash(a, b, seen[i].sport, ECMP_MROC_PORT, ECMP_PROTO_UDP,
						 ECMP_FABRIC_SEED);
		uint32_t back = ecmp_linux_hash(b, a, seen[i].sport, ECMP_MROC_PORT, ECMP_PROTO_UDP,
						ECMP_FABRIC_SEED);

		assert_int_equal(ecmp_linux_nexthop(there, 4), seen[i].plane);
		assert_int_equal(ecmp_linux_nexthop(back, 4), seen[i].plane);
	}
	for (size_t i = 0; i < sizeof(spread) / sizeof(spread[0]); i++) {
		unsigned used = 0;

		for (int j = 0; j < 4; j++) {
			uint32_t h = ecmp_linux_hash(ecmp_fabric_addr(spread[i].net, 0, 2),
						     ecmp_fabric_addr(spread[i].net, 1, 2),
						     spread[i].sport[j], ECMP_MROC_PORT,
						     ECMP_PROTO_UDP, ECMP_FABRIC_SEED);

			used |= 1u << ecmp_linux_nexthop(h, 4);
		}
		assert_int_equal(used, 0xf);
	}
	/* One nexthop takes all; the bounds split the 31-bit hash evenly. */
	assert_int_equal(ecmp_linux_nexthop(0x7fffffff, 1), 0);
	assert_int_equal(ecmp_linux_nexthop(0x1fffffff, 4), 0);
	assert_int_equal(ecmp_linux_nexthop(0x20000000, 4), 1);
	assert_int_equal(ecmp_linux_nexthop(0x7fffffff, 4), 3);
}

static void run_all(struct sim *sim)
{
	sim_run_until(sim, 1000000000ULL);
}

/* ---- event queue ------------------------------------------------------------------- */

static void test_evq_order(void **state)
{
	struct sim_event ev[200];
	struct evq q;
	struct rng r;
	uint64_t last_t = 0, last_seq = 0;

	assert_int_equal(evq_init(&q, 4), 0);
	rng_seed(&r, 7);
	for (int i = 0; i < 200; i++) {
		evq_event_init(&ev[i], 1);
		assert_int_equal(evq_push(&q, &ev[i], rng_below(&r, 20)), 0);
	}
	/* Move some, cancel some: the heap must stay ordered. */
	for (int i = 0; i < 200; i += 7)
		evq_push(&q, &ev[i], rng_below(&r, 20));
	for (int i = 3; i < 200; i += 11)
		evq_cancel(&q, &ev[i]);
	for (int n = 0;; n++) {
		struct sim_event *e = evq_pop(&q);

		if (!e)
			break;
		assert_false(evq_queued(e));
		/* Equal times come out in push order. */
		assert_true(e->time > last_t || (e->time == last_t && (n == 0 ||
								      e->seq > last_seq)));
		last_t = e->time;
		last_seq = e->seq;
	}
	evq_fini(&q);
}

/* ---- links ------------------------------------------------------------------------------ */

/* Back-to-back packets arrive at exactly the serialisation rate. */
static void test_rate_exact(void **state)
{
	struct sim *sim = make_sim(1, 10000000000ULL, SIM_ROUTE_PATH_ID, 1);
	struct engine *rx = sim_host_engine(sim, 1);
	const uint32_t n = 10000, len = 1000;

	mock_send(sim, 0, 1, n, len, 1, 0);
	run_all(sim);
	assert_int_equal(rx->rx, n);
	/* NIC at 10G and link at 10G: pipeline of 1064-byte packets, 851.2 ns each. */
	uint64_t per = (len + 64) * 8 * 1000000000ULL;
	uint64_t expect = (per * n) / 10000000000ULL + (per / 10000000000ULL) + 2000;

	assert_in_range(rx->last_rx, expect - 2, expect + 2);
	sim_destroy(sim);
}

/* A 4x faster NIC into one slow link: queue, mark, drop at the tail. */
static void test_droptail_ecn(void **state)
{
	struct sim_link_stats ls;
	struct simhost_stats hs;
	struct sim_config cfg;
	struct engine *rx;
	struct sim *sim;

	sim_config_default(&cfg);
	cfg.nplanes = 1;
	cfg.link.rate_bps = 10000000000ULL;
	cfg.link.queue_bytes = 100000;
	cfg.link.ecn_bytes = 20000;
	cfg.nic_rate_bps = 40000000000ULL;
	sim = sim_create(&cfg);
	assert_non_null(sim);
	rx = sim_host_engine(sim, 1);
	mock_send(sim, 0, 1, 2000, 1000, 1, 0);
	run_all(sim);
	sim_link_stats(sim, 0, 1, 0, &ls);
	sim_host_stats(sim, 0, &hs);
	assert_int_equal(hs.tx_pkts, 2000);
	assert_int_equal(ls.enqueued + ls.dropped_tail, 2000);
	assert_true(ls.dropped_tail > 0);
	assert_int_equal(ls.delivered, rx->rx);
	assert_int_equal(ls.delivered, ls.enqueued);
	assert_true(ls.max_queue_bytes <= 100000);
	assert_true(ls.max_queue_bytes > 100000 - 1064);
	assert_true(ls.marked_ce > 0);
	assert_int_equal(ls.marked_ce, rx->rx_ce);
	/* Packets accepted while the queue was at most 20000 bytes went unmarked. */
	assert_true(rx->rx - rx->rx_ce >= 20000 / 1064);
	sim_destroy(sim);
}

static void test_random_loss(void **state)
{
	struct sim *sim = make_sim(1, 100000000000ULL, SIM_ROUTE_PATH_ID, 3);
	struct sim_link_cfg lc;
	struct sim_link_stats ls;
	const uint32_t n = 100000;

	sim_link_get(sim, 0, 1, 0, &lc);
	lc.loss = 0.1;
	sim_link_set(sim, 0, 1, 0, &lc);
	mock_send(sim, 0, 1, n, 100, 1, 0);
	run_all(sim);
	sim_link_stats(sim, 0, 1, 0, &ls);
	assert_int_equal(ls.dropped_random + ls.delivered, n);
	/* 10000 +- 3 sigma (sigma ~ 95). */
	assert_in_range(ls.dropped_random, 9715, 10285);
	assert_int_equal(sim_host_engine(sim, 1)->rx, ls.delivered);
	sim_destroy(sim);
}

/*
 * Two senders at 10 Gbit/s into one host whose 10 Gbit/s downlink they
 * share: the downlink queues, marks and drops, the host-pair links do not,
 * and the host receives at exactly the downlink's rate.
 */
static void test_downlink_shared(void **state)
{
	struct sim_link_stats dl, sum, l0, l1;
	struct sim_link_cfg lc;
	struct sim_config cfg;
	struct sim_stats st;
	struct engine *rx;
	struct sim *sim;

	sim_config_default(&cfg);
	cfg.nhosts = 3;
	cfg.nplanes = 1;
	cfg.link.rate_bps = 10000000000ULL;
	cfg.downlinks = true;
	cfg.downlink.rate_bps = 10000000000ULL;
	cfg.downlink.queue_bytes = 100000;
	cfg.downlink.ecn_bytes = 20000;
	sim = sim_create(&cfg);
	assert_non_null(sim);
	rx = sim_host_engine(sim, 2);
	mock_send(sim, 0, 2, 2000, 1000, 1, 0);
	mock_send(sim, 1, 2, 2000, 1000, 1, 0);
	run_all(sim);
	sim_link_stats(sim, 0, 2, 0, &l0);
	sim_link_stats(sim, 1, 2, 0, &l1);
	assert_int_equal(sim_downlink_stats(sim, 2, 0, &dl), 0);
	/*
	 * NIC = link rate: a host-pair link holds the packet on its wire and,
	 * for the instant both finish together, the NIC's next one.
	 */
	assert_int_equal(l0.delivered, 2000);
	assert_int_equal(l1.delivered, 2000);
	assert_true(l0.max_queue_bytes <= 2 * 1064 && l1.max_queue_bytes <= 2 * 1064);
	/* 20 Gbit/s into 10: the downlink fills, marks and drops. */
	assert_int_equal(dl.enqueued + dl.dropped_tail, 4000);
	assert_true(dl.dropped_tail > 0);
	assert_int_equal(dl.delivered, rx->rx);
	assert_true(dl.max_queue_bytes <= 100000 && dl.max_queue_bytes > 100000 - 1064);
	assert_true(dl.marked_ce > 0);
	assert_int_equal(dl.marked_ce, rx->rx_ce);
	/* Busy from the first arrival on: one 1064-byte packet every 851.2 ns. */
	assert_in_range(rx->last_rx - rx->first_rx, (dl.delivered - 1) * 8512 / 10 - 2,
			(dl.delivered - 1) * 8512 / 10 + 2);
	assert_int_equal(sim_host_downlink_stats(sim, 2, &sum), 0);
	assert_memory_equal(&sum, &dl, sizeof(sum));
	sim_get_stats(sim, &st);
	assert_int_equal(st.downlinks.delivered, dl.delivered);
	assert_int_equal(st.links.delivered, 4000);
	/* Downlinks can be changed like links; host indexes are checked. */
	assert_int_equal(sim_downlink_get(sim, 2, 0, &lc), 0);
	assert_int_equal(lc.queue_bytes, 100000);
	assert_int_equal(lc.delay_ns, 0);
	assert_int_equal(sim_downlink_set(sim, 3, 0, &lc), -EINVAL);
	assert_int_equal(sim_downlink_stats(sim, 2, 1, &dl), -EINVAL);
	sim_destroy(sim);

	/* Without downlinks (the default) there are none to ask about. */
	sim = make_sim(1, 10000000000ULL, SIM_ROUTE_PATH_ID, 1);
	assert_int_equal(sim_downlink_stats(sim, 1, 0, &dl), -ENODEV);
	assert_int_equal(sim_downlink_get(sim, 1, 0, &lc), -ENODEV);
	mock_send(sim, 0, 1, 100, 1000, 1, 0);
	run_all(sim);
	sim_get_stats(sim, &st);
	assert_int_equal(st.downlinks.enqueued, 0);
	assert_int_equal(sim_host_engine(sim, 1)->rx, 100);
	sim_destroy(sim);
}

/* Paced packets, one every 1 us; a blackhole from 100 us to 300 us. */
static void test_blackhole(void **state)
{
	struct sim *sim = make_sim(2, 25000000000ULL, SIM_ROUTE_PATH_ID, 1);
	struct sim_link_cfg lc;
	struct sim_link_stats ls0, ls1;
	struct engine *rx = sim_host_engine(sim, 1);

	sim_link_get(sim, 0, 1, 0, &lc);
	lc.blackhole_start_ns = 100000;
	lc.blackhole_end_ns = 300000;
	assert_int_equal(sim_plane_set(sim, 0, &lc), 0);
	mock_send(sim, 0, 1, 1000, 500, 2, 1000);
	run_all(sim);
	sim_link_stats(sim, 0, 1, 0, &ls0);
	sim_link_stats(sim, 0, 1, 1, &ls1);
	assert_int_equal(ls1.delivered, 500);
	assert_int_equal(ls0.delivered + ls0.dropped_blackhole, 500);
	assert_in_range(ls0.dropped_blackhole, 99, 101);
	assert_int_equal(rx->rx_per_path[0], ls0.delivered);
	sim_destroy(sim);
}

/* PATH_ID maps path k to plane k % N; HASH keeps a sport on one plane. */
static void test_routing(void **state)
{
	struct sim *sim = make_sim(4, 25000000000ULL, SIM_ROUTE_PATH_ID, 1);
	struct sim_link_stats ls;
	uint32_t used = 0;

	mock_send(sim, 0, 1, 800, 200, 8, 0);
	run_all(sim);
	for (uint32_t p = 0; p < 4; p++) {
		sim_link_stats(sim, 0, 1, p, &ls);
		assert_int_equal(ls.delivered, 200);
	}
	sim_destroy(sim);

	/* Under HASH each of 8 sports lands on one plane: counts are multiples of 100. */
	sim = make_sim(4, 25000000000ULL, SIM_ROUTE_HASH, 5);
	mock_send(sim, 0, 1, 800, 200, 8, 0);
	run_all(sim);
	for (uint32_t p = 0; p < 4; p++) {
		sim_link_stats(sim, 0, 1, p, &ls);
		assert_int_equal(ls.delivered % 100, 0);
		used += ls.delivered > 0;
	}
	assert_true(used >= 2);
	sim_destroy(sim);
}

/* Timers fire exactly at the deadline; completions reach the callback. */
static uint64_t cb_seen[MOCK_TIMERS];
static int cb_n;

static void count_cqe(struct sim *sim, uint32_t host, const struct engine_cqe *c, void *ctx)
{
	assert_int_equal(c->wr_id, sim_now(sim));
	cb_seen[cb_n++] = c->wr_id;
}

static void test_timers(void **state)
{
	struct sim *sim = make_sim(1, 25000000000ULL, SIM_ROUTE_PATH_ID, 1);
	struct engine *e = sim_host_engine(sim, 0);
	const uint64_t t[] = { 5000, 1000, 3000, 3000, 9000 };
	struct sim_stats st;

	cb_n = 0;
	sim_host_set_cqe_cb(sim, 0, count_cqe, NULL);
	for (unsigned i = 0; i < 5; i++)
		e->timers[e->ntimers++] = t[i];
	sim_host_kick(sim, 0);
	sim_run_until(sim, 4000);
	assert_int_equal(cb_n, 3);
	/* A new, earlier deadline replaces the pending timer. */
	e->timers[e->ntimers++] = 4500;
	sim_host_kick(sim, 0);
	run_all(sim);
	assert_int_equal(cb_n, 6);
	assert_int_equal(cb_seen[0], 1000);
	assert_int_equal(cb_seen[3], 4500);
	assert_int_equal(cb_seen[5], 9000);
	sim_get_stats(sim, &st);
	/* Exactly one timer event per distinct deadline: 1000, 3000, 4500, 5000, 9000. */
	assert_int_equal(st.hosts.timer_fires, 5);
	assert_int_equal(st.hosts.timer_spins, 0);
	sim_destroy(sim);
}

/*
 * Each host's engine on its own clock (simhost.h): with offsets only, its
 * timers fire when its clock reads their deadline, and a packet arrives when
 * it would on one clock, stamped in the receiver's clock.  With drift, every
 * deadline converts to the first simulation instant its clock reaches it.
 */
static uint64_t clk_local, clk_sim;

static void clock_cqe(struct sim *sim, uint32_t host, const struct engine_cqe *c, void *ctx)
{
	clk_local = c->wr_id;
	clk_sim = sim_now(sim);
}

static void test_host_clocks(void **state)
{
	struct host_clock c0, c1, d;
	struct sim_config cfg;
	struct sim *one, *own;
	struct engine *e;
	uint64_t t0;

	sim_config_default(&cfg);
	cfg.nplanes = 1;
	cfg.route = SIM_ROUTE_PATH_ID;
	cfg.seed = 3;
	one = sim_create(&cfg);
	cfg.clock_skew_ns = 1000000000ULL;
	own = sim_create(&cfg);
	assert_non_null(one);
	assert_non_null(own);
	host_clock_draw(&c0, cfg.clock_skew_ns, 0, cfg.seed, 0);
	host_clock_draw(&c1, cfg.clock_skew_ns, 0, cfg.seed, 1);
	assert_true(c0.offset != c1.offset);

	mock_send(one, 0, 1, 3, 1000, 1, 2000);
	mock_send(own, 0, 1, 3, 1000, 1, 2000);
	run_all(one);
	run_all(own);
	assert_int_equal(sim_host_engine(own, 1)->rx, 3);
	assert_int_equal(sim_host_engine(own, 1)->first_rx,
			 sim_host_engine(one, 1)->first_rx + c1.offset);
	assert_int_equal(sim_host_engine(own, 1)->last_rx,
			 sim_host_engine(one, 1)->last_rx + c1.offset);

	e = sim_host_engine(own, 0);
	t0 = sim_now(own);
	sim_host_set_cqe_cb(own, 0, clock_cqe, NULL);
	e->timers[e->ntimers++] = host_clock_local(&c0, t0) + 5000;
	sim_host_kick(own, 0);
	sim_run_until(own, t0 + 1000000);
	assert_int_equal(clk_sim, t0 + 5000);
	assert_int_equal(clk_local, c0.offset + t0 + 5000);
	sim_destroy(one);
	sim_destroy(own);

	/* Drifting clocks: the conversion back is the first instant at or past the deadline. */
	for (uint32_t i = 0; i < 64; i++) {
		host_clock_draw(&d, 5000000000ULL, 1000, 7, i);
		for (uint64_t t = d.offset; t < d.offset + 100000; t += 997) {
			uint64_t x = host_clock_sim(&d, t);

			assert_true(host_clock_local(&d, x) >= t);
			assert_true(x == 0 || host_clock_local(&d, x - 1) < t);
		}
	}
}

static int scheduled_calls;

static void change_loss(struct sim *sim, void *ctx)
{
	struct sim_link_cfg lc;

	scheduled_calls++;
	sim_link_get(sim, 0, 1, 0, &lc);
	lc.loss = 1.0;
	sim_link_set(sim, 0, 1, 0, &lc);
}

/* The same seed gives the same run; a live change applies from its time on. */
static void test_determinism(void **state)
{
	struct sim_stats a, b, c;

	for (int round = 0; round < 3; round++) {
		struct sim *sim = make_sim(4, 25000000000ULL, SIM_ROUTE_HASH,
					   round == 2 ? 99 : 42);
		struct sim_link_cfg lc;

		for (uint32_t p = 0; p < 4; p++) {
			sim_link_get(sim, 0, 1, p, &lc);
			lc.loss = 0.05;
			sim_plane_set(sim, p, &lc);
		}
		scheduled_calls = 0;
		assert_int_equal(sim_schedule(sim, 200000, change_loss, NULL), 0);
		mock_send(sim, 0, 1, 20000, 700, 8, 0);
		run_all(sim);
		assert_int_equal(scheduled_calls, 1);
		sim_get_stats(sim, round == 0 ? &a : round == 1 ? &b : &c);
		sim_destroy(sim);
	}
	assert_memory_equal(&a, &b, sizeof(a));
	assert_true(a.links.dropped_random != c.links.dropped_random ||
		    a.links.delivered != c.links.delivered);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evq_order),
		cmocka_unit_test(test_rate_exact),
		cmocka_unit_test(test_droptail_ecn),
		cmocka_unit_test(test_random_loss),
		cmocka_unit_test(test_blackhole),
		cmocka_unit_test(test_routing),
		cmocka_unit_test(test_downlink_shared),
		cmocka_unit_test(test_timers),
		cmocka_unit_test(test_host_clocks),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_linux_route_kernel_planes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
