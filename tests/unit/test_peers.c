// SPDX-License-Identifier: MIT
/*
 * The peer table (daemon/net/peers.c): handles, ageing and eviction of
 * unproven peers, owners' shares, stale handles, and port addresses
 * (aliases).  Nothing here needs root; the netlink module and
 * nexthop_resolve, in network namespaces: test_netlink_ns.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>		/* before linux/if.h */
#include <linux/if.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if_arp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "netlink.h"
#include "nexthop.h"
#include "peers.h"

/* ---- helpers ---------------------------------------------------------------------- */

static struct mroc_addr addr(const char *s)
{
	struct mroc_addr a;

	assert_int_equal(addr_parse(s, &a), 0);
	return a;
}

/* ---- the peer table (no root) --------------------------------------------------------- */

static void test_table_create_args(void **state)
{
	(void)state;
	errno = 0;
	assert_null(peers_create(0));
	assert_int_equal(errno, EINVAL);
	assert_null(peers_create(UINT32_MAX));
	assert_int_equal(errno, EINVAL);
	peers_destroy(NULL);
}

static void test_table_add_lookup_full(void **state)
{
	static const char *const names[] = { "10.0.0.2", "fd00::2", "10.0.0.3", "::ffff:10.0.0.2" };
	struct peers *p = peers_create(4);
	struct mroc_addr a;
	uint32_t h;

	(void)state;
	assert_non_null(p);
	assert_int_equal(peers_count(p), 0);
	assert_null(peers_get(p, 0));
	for (uint32_t i = 0; i < 4; i++) {
		a = addr(names[i]);
		assert_int_equal(peers_lookup(p, &a, &h), -ENOENT);
		assert_int_equal(peers_get_handle(p, &a, &h), 0);
		assert_int_equal(h, i);			/* small integers, in order */
		assert_int_equal(peers_count(p), i + 1);
	}
	for (uint32_t i = 0; i < 4; i++) {
		struct peer *pe;

		a = addr(names[i]);
		assert_int_equal(peers_get_handle(p, &a, &h), 0);	/* known: no new entry */
		assert_int_equal(h, i);
		h = 99;
		assert_int_equal(peers_lookup(p, &a, &h), 0);
		assert_int_equal(h, i);
		pe = peers_get(p, i);
		assert_non_null(pe);
		assert_int_equal(pe->handle, i);
		assert_true(addr_eq(&pe->addr, &a));
	}
	assert_int_equal(peers_count(p), 4);
	a = addr("10.0.0.99");
	assert_int_equal(peers_get_handle(p, &a, &h), -ENOSPC);
	assert_int_equal(peers_lookup(p, &a, &h), -ENOENT);
	assert_int_equal(peers_count(p), 4);
	assert_null(peers_get(p, 4));
	assert_null(peers_get(p, UINT32_MAX));
	a.family = 0;
	assert_int_equal(peers_get_handle(p, &a, &h), -EINVAL);
	assert_int_equal(peers_lookup(p, &a, &h), -EINVAL);
	peers_destroy(p);
}

/* Many entries: every one found again after all the others went in. */
static void test_table_many(void **state)
{
	const uint32_t n = 5000;
	struct peers *p = peers_create(n);
	struct mroc_addr a;
	uint32_t h;

	(void)state;
	assert_non_null(p);
	for (uint32_t i = 0; i < n; i++) {
		memset(&a, 0, sizeof(a));
		a.family = i & 1 ? AF_INET6 : AF_INET;
		a.bytes[0] = 10;
		a.bytes[2] = (uint8_t)(i >> 8);
		a.bytes[3] = (uint8_t)i;
		a.bytes[15] = (uint8_t)(i >> 16);
		assert_int_equal(peers_get_handle(p, &a, &h), 0);
		assert_int_equal(h, i);
	}
	for (uint32_t i = 0; i < n; i++) {
		memset(&a, 0, sizeof(a));
		a.family = i & 1 ? AF_INET6 : AF_INET;
		a.bytes[0] = 10;
		a.bytes[2] = (uint8_t)(i >> 8);
		a.bytes[3] = (uint8_t)i;
		a.bytes[15] = (uint8_t)(i >> 16);
		assert_int_equal(peers_lookup(p, &a, &h), 0);
		assert_int_equal(h, i);
	}
	a = addr("192.0.2.1");
	assert_int_equal(peers_get_handle(p, &a, &h), -ENOSPC);
	peers_destroy(p);
}

/* Address number i (10.1.x.y), for the ageing tests. */
static struct mroc_addr addr_n(uint32_t i)
{
	struct mroc_addr a = { .family = AF_INET };

	a.bytes[0] = 10;
	a.bytes[1] = 1;
	a.bytes[2] = (uint8_t)(i >> 8);
	a.bytes[3] = (uint8_t)i;
	return a;
}

#define SEC	1000000000ull

/* Peers no QP ever used (forged CONNECT_REQs) leave after PEERS_UNPROVEN_NS; handles come back. */
static void test_table_unproven_age_out(void **state)
{
	struct peers *p = peers_create(4);
	struct peers_stats st;
	struct mroc_addr a;
	uint32_t h;

	(void)state;
	peers_sweep(p, SEC);
	for (uint32_t i = 0; i < 4; i++) {
		a = addr_n(i);
		assert_int_equal(peers_get_handle(p, &a, &h), 0);
	}
	a = addr_n(4);
	assert_int_equal(peers_get_handle(p, &a, &h), -ENOSPC);	/* all asked for just now */
	peers_sweep(p, 2 * SEC);
	assert_int_equal(peers_live(p), 4);
	peers_sweep(p, 2 * SEC + PEERS_UNPROVEN_NS);
	assert_int_equal(peers_live(p), 0);
	for (uint32_t i = 0; i < 4; i++) {
		a = addr_n(i);
		assert_int_equal(peers_lookup(p, &a, &h), -ENOENT);
		assert_null(peers_get(p, i));
	}
	peers_get_stats(p, &st);
	assert_int_equal(st.aged_out, 4);
	assert_int_equal(st.full, 1);
	for (uint32_t i = 10; i < 14; i++) {
		a = addr_n(i);
		assert_int_equal(peers_get_handle(p, &a, &h), 0);
		assert_in_range(peers_index(h), 0, 3);	/* released slots, reused */
		assert_true(h > 3);			/* under other handles */
	}
	assert_int_equal(peers_count(p), 4);
	peers_destroy(p);
}

/*
 * A tenant's new peers (peers_get_handle_owned): no more in use than its
 * share, then -EDQUOT (counted), while another owner, the daemon and peers
 * already in the table still get theirs; once a sweep finds them unused
 * they no longer count.
 */
static void test_table_owner_share(void **state)
{
	struct peers *p = peers_create(8);
	struct peers_stats st;
	struct mroc_addr a;
	uint32_t h, h0;

	(void)state;
	peers_sweep(p, SEC);
	for (uint32_t i = 0; i < 3; i++) {
		a = addr_n(i);
		assert_int_equal(peers_get_handle_owned(p, &a, 7, 3, &h), 0);
		assert_int_equal(peers_get(p, h)->owner, 7);
	}
	a = addr_n(3);
	assert_int_equal(peers_get_handle_owned(p, &a, 7, 3, &h), -EDQUOT);
	assert_int_equal(peers_lookup(p, &a, &h), -ENOENT);
	peers_get_stats(p, &st);
	assert_int_equal(st.owner_refused, 1);
	assert_int_equal(st.full, 0);
	/* Found, not added: owner 7 may use a peer the table has (anyone's). */
	a = addr_n(0);
	assert_int_equal(peers_get_handle_owned(p, &a, 7, 3, &h0), 0);
	a = addr_n(10);
	assert_int_equal(peers_get_handle(p, &a, &h), 0);
	assert_int_equal(peers_get(p, h)->owner, 0);
	assert_int_equal(peers_get_handle_owned(p, &a, 7, 3, &h0), 0);
	assert_int_equal(h0, h);
	a = addr_n(11);
	assert_int_equal(peers_get_handle_owned(p, &a, 8, 3, &h), 0);	/* another owner */
	/* Unused at the next sweep (no engine: no QP holds them): room again. */
	peers_sweep(p, 2 * SEC);
	a = addr_n(3);
	assert_int_equal(peers_get_handle_owned(p, &a, 7, 3, &h), 0);
	peers_destroy(p);
}

/*
 * A packet that has not proved itself (an aead packet that does not open)
 * finds its peer without keeping it: an unproven peer that only such packets
 * come from ages out on time; one touched by a proven packet stays.
 */
static void test_find_keeps_nothing(void **state)
{
	struct peers *p = peers_create(4);
	struct mroc_addr a = addr_n(1), b = addr_n(2);
	uint32_t ha, hb, h;

	(void)state;
	peers_sweep(p, SEC);
	assert_int_equal(peers_get_handle(p, &a, &ha), 0);
	assert_int_equal(peers_get_handle(p, &b, &hb), 0);
	for (uint64_t t = 2 * SEC; t < 2 * SEC + PEERS_UNPROVEN_NS; t += PEERS_SWEEP_NS) {
		peers_sweep(p, t);
		assert_int_equal(peers_find(p, &a, &h), 0);
		assert_int_equal(h, ha);
		assert_int_equal(peers_find(p, &b, &h), 0);
		peers_touch(p, h);
	}
	peers_sweep(p, 2 * SEC + PEERS_UNPROVEN_NS);
	assert_int_equal(peers_find(p, &a, &h), -ENOENT);
	assert_int_equal(peers_find(p, &b, &h), 0);
	assert_int_equal(h, hb);
	peers_touch(p, 99);			/* out of range: nothing */
	assert_int_equal(peers_find(p, &(struct mroc_addr){ 0 }, &h), -EINVAL);
	peers_destroy(p);
}

/*
 * A full table makes room from peers unused since the last sweep; the rest
 * of the table (moved by the hash deletions) is still found.
 */
static void test_table_evict_when_full(void **state)
{
	const uint32_t n = 64;
	struct peers *p = peers_create(n);
	struct peers_stats st;
	struct mroc_addr a;
	uint32_t h, found = 0;

	(void)state;
	peers_sweep(p, SEC);
	for (uint32_t i = 0; i < n; i++) {
		a = addr_n(i);
		assert_int_equal(peers_get_handle(p, &a, &h), 0);
	}
	peers_sweep(p, 2 * SEC);	/* no longer "just asked for"; not old enough to age */
	assert_int_equal(peers_live(p), n);
	for (uint32_t i = 1000; i < 1000 + n / 2; i++) {
		a = addr_n(i);
		assert_int_equal(peers_get_handle(p, &a, &h), 0);
		assert_in_range(peers_index(h), 0, n - 1);
		assert_true(addr_eq(&peers_get(p, h)->addr, &a));
	}
	peers_sweep(p, 2 * SEC + 1);
	assert_int_equal(peers_live(p), n);
	for (uint32_t i = 1000; i < 1000 + n / 2; i++) {
		a = addr_n(i);
		assert_int_equal(peers_lookup(p, &a, &h), 0);
		assert_true(addr_eq(&peers_get(p, h)->addr, &a));
	}
	for (uint32_t i = 0; i < n; i++) {
		a = addr_n(i);
		if (!peers_lookup(p, &a, &h)) {
			assert_true(addr_eq(&peers_get(p, h)->addr, &a));
			found++;
		}
	}
	assert_int_equal(found, n / 2);
	peers_get_stats(p, &st);
	assert_int_equal(st.evicted, n / 2);
	peers_destroy(p);
}

/*
 * A handle handed out is never given to another address within the worker's
 * tick (peers_sweep's now): the engine's answer to the packet that asked for
 * it (a REP, a REJ) is sent to that handle at the tick's end.  A flood of
 * REQs from new sources that ran the table's untouched peers out in that
 * tick cleared every "asked for" mark (a fresh look at the engine) and
 * evicted the REQ just handed its handle: the REP, with the listener's QPN
 * and the requester's QPN and key, went to one of the flood's addresses,
 * which could then prove it as the requester (cm_half.c).
 */
static void test_handed_kept_in_tick(void **state)
{
	const uint32_t n = 64;
	struct peers *p = peers_create(n);
	struct mroc_addr a, r = addr_n(5000);
	uint32_t h, hr;

	(void)state;
	peers_sweep(p, SEC);
	for (uint32_t i = 0; i < n; i++) {
		a = addr_n(i);
		assert_int_equal(peers_get_handle_req(p, &a, &h), 0);
	}
	peers_sweep(p, 2 * SEC);	/* nobody asked since: all evictable */
	peers_sweep(p, 2 * SEC + 2 * PEERS_REFS_MIN_NS);	/* the next tick */
	assert_int_equal(peers_get_handle_req(p, &r, &hr), 0);
	/* The rest of the tick's REQs, from as many new sources. */
	for (uint32_t i = 1000; i < 1000 + 3 * n; i++) {
		a = addr_n(i);
		if (!peers_get_handle_req(p, &a, &h))
			assert_int_not_equal(h, hr);
	}
	assert_int_equal(peers_find(p, &r, &h), 0);
	assert_int_equal(h, hr);
	assert_true(addr_eq(&peers_get(p, hr)->addr, &r));
	/* The next tick may take it (its answers have left). */
	peers_sweep(p, 2 * SEC + 4 * PEERS_REFS_MIN_NS);
	for (uint32_t i = 2000; i < 2000 + 3 * n; i++) {
		a = addr_n(i);
		(void)peers_get_handle_req(p, &a, &h);
	}
	assert_int_not_equal(peers_find(p, &r, &h), 0);
	peers_destroy(p);
}

static void count_release(void *ctx, uint32_t handle)
{
	(void)handle;
	(*(unsigned *)ctx)++;
}

/* A peer a QP uses is never released, however full the table or old the peer. */
static void test_table_referenced_stay(void **state)
{
	struct engine_config ec;
	struct engine_qp_attr attr = { .pd = 1, .mode = MROC_MODE_METAROCE, .npaths = 2,
				       .sq_depth = 16, .rq_depth = 16 };
	struct engine *eng;
	struct peers *p = peers_create(2);
	struct mroc_addr a = addr_n(1), b;
	uint32_t used, h, qpn;
	unsigned released = 0;

	(void)state;
	engine_config_default(&ec);
	ec.max_qps = 4;
	eng = engine_create(&ec);
	assert_non_null(eng);
	peers_set_engine(p, eng);
	peers_set_release_hook(p, count_release, &released);
	peers_sweep(p, SEC);
	assert_int_equal(peers_get_handle(p, &a, &used), 0);
	assert_int_equal(engine_qp_create(eng, &attr, &qpn), 0);
	assert_int_equal(engine_qp_connect(eng, qpn, used, 42, SEC), 0);
	for (uint64_t t = 2; t < 200; t++) {
		b = addr_n(100 + (uint32_t)t);
		peers_sweep(p, t * SEC);
		assert_int_equal(peers_get_handle(p, &b, &h), 0);	/* evicts the last one */
		assert_int_not_equal(h, used);
	}
	peers_sweep(p, 1000 * SEC);
	peers_sweep(p, 1000 * SEC + PEERS_UNPROVEN_NS);
	assert_int_equal(peers_lookup(p, &a, &h), 0);
	assert_int_equal(h, used);
	assert_int_equal(peers_live(p), 1);
	assert_true(released >= 198);
	engine_qp_destroy(eng, qpn);
	peers_sweep(p, 1010 * SEC);
	peers_sweep(p, 1010 * SEC + PEERS_IDLE_NS);
	assert_int_equal(peers_live(p), 0);	/* its QP gone, it ages out too */
	peers_destroy(p);
	engine_destroy(eng);
}

/* The first packet eng sends now (one 9 KB buffer): its length, 0 if none; *to: its peer. */
static size_t tx_one(struct engine *eng, uint64_t now, uint8_t *buf, uint32_t *to)
{
	struct engine_txbuf b = { .data = buf, .cap = 9000 };

	if (engine_tx(eng, now, &b, 1) != 1)
		return 0;
	*to = b.peer;
	return b.len;
}

/*
 * #3 of s34: a handle the engine keeps past its peer's release.  A REQ's
 * half-open entry (engine/cm_half.c) holds its peer's handle for
 * dead_peer, but it is no QP: the peer table releases the requester's
 * unproven peer after PEERS_UNPROVEN_NS (or evicts it from a full table),
 * and gives the handle to the next new host.  Whatever the entry sends
 * then (its REP again, a REJ BUSY queued when another requester binds the
 * listener) goes to the handle: to that other host.  Shown with the
 * repeat: host B, given A's old handle, sends A's REQ again (B is on the
 * path, or learned A's QPN) and got A's REP (A's numbers, and in "token"
 * our receive key for A).  Now a handle has the slot's generation: B's
 * differs, A's names nobody (peers_get: NULL, counted `stale`), and B's
 * REQ gets a REP of its own.
 */
static void test_stale_handle_not_reassigned(void **state)
{
	static uint8_t req[9000], rep[9000], out[9000];
	struct engine_qp_attr attr = { .pd = 1, .mode = MROC_MODE_METAROCE, .npaths = 1,
				       .sq_depth = 16, .rq_depth = 16 };
	struct mroc_addr a = addr_n(1), b = addr_n(2);
	struct engine *srv, *cli;
	struct engine_config ec;
	struct wire_pkt first, again;
	struct peers_stats st;
	struct peers *p;
	uint32_t lq, cq, ha, hb, to;
	size_t req_len, n;
	enum wire_err why;
	uint64_t t = SEC;

	(void)state;
	engine_config_default(&ec);
	ec.max_qps = 4;
	ec.dead_peer_ns = 20 * SEC;
	srv = engine_create(&ec);
	cli = engine_create(&ec);
	assert_non_null(srv);
	assert_non_null(cli);
	p = peers_create(4);
	peers_set_engine(p, srv);
	peers_sweep(p, t);
	assert_int_equal(engine_qp_create(srv, &attr, &lq), 0);
	assert_int_equal(engine_qp_listen(srv, lq, 42), 0);
	assert_int_equal(engine_qp_create(cli, &attr, &cq), 0);
	assert_int_equal(engine_qp_connect(cli, cq, 0, 42, t), 0);
	req_len = tx_one(cli, t, req, &to);
	assert_true(req_len > 0);

	/* A's REQ: a half-open entry, and A's REP to A's handle. */
	assert_int_equal(peers_get_handle_req(p, &a, &ha), 0);
	assert_true(engine_rx(srv, t, req, req_len,
			      &(struct engine_rx_meta){ .peer = ha, .sport = 50000 }) >= 0);
	n = tx_one(srv, t, rep, &to);
	assert_true(n > 0);
	assert_int_equal(to, ha);
	assert_int_equal(wire_parse(rep, n, &first, &why), 0);
	assert_int_equal(first.hdr.opcode, MROC_OP_CONNECT_REP);

	/* A never proves: its peer goes, the entry stays; B takes the slot. */
	peers_sweep(p, t += SEC);
	peers_sweep(p, t += PEERS_UNPROVEN_NS);
	assert_int_equal(peers_live(p), 0);
	assert_int_equal(peers_get_handle_req(p, &b, &hb), 0);
	assert_int_equal(peers_index(hb), peers_index(ha));	/* the same slot */
	assert_int_not_equal(hb, ha);				/* another handle */
	assert_null(peers_get(p, ha));

	/* A's REQ again, from B: never A's REP to B. */
	assert_true(engine_rx(srv, t, req, req_len,
			      &(struct engine_rx_meta){ .peer = hb, .sport = 50001 }) >= 0);
	while ((n = tx_one(srv, t, out, &to))) {
		assert_int_equal(wire_parse(out, n, &again, &why), 0);
		if (again.hdr.opcode != MROC_OP_CONNECT_REP)
			continue;
		assert_int_equal(to, hb);
		assert_false(again.cm.isn_psn == first.cm.isn_psn &&
			     again.cm.isn_dsn == first.cm.isn_dsn);
	}
	peers_get_stats(p, &st);
	assert_true(st.stale >= 1);
	peers_destroy(p);
	engine_destroy(cli);
	engine_destroy(srv);
}

/*
 * The other path of #3: a REJ BUSY queued for a half-open entry when
 * another requester binds its listener.  A asks and never proves; its peer
 * leaves and host B gets its slot; C asks and proves.  The BUSY for A's
 * entry went to A's handle, which named B; now it names nobody.
 */
static void test_stale_handle_busy(void **state)
{
	static uint8_t pkt[9000];
	struct engine_qp_attr attr = { .pd = 1, .mode = MROC_MODE_METAROCE, .npaths = 1,
				       .sq_depth = 16, .rq_depth = 16 };
	struct mroc_addr a = addr_n(1), b = addr_n(2), c = addr_n(3);
	struct engine *srv, *ca, *cc;
	struct engine_config ec;
	struct wire_pkt w;
	struct peers *p;
	uint32_t lq, qa, qc, ha, hb, hc, to;
	unsigned busy = 0;
	enum wire_err why;
	uint64_t t = SEC;
	size_t n;

	(void)state;
	engine_config_default(&ec);
	ec.max_qps = 4;
	ec.dead_peer_ns = 20 * SEC;
	srv = engine_create(&ec);
	ca = engine_create(&ec);
	cc = engine_create(&ec);
	assert_true(srv && ca && cc);
	p = peers_create(4);
	peers_set_engine(p, srv);
	peers_sweep(p, t);
	assert_int_equal(engine_qp_create(srv, &attr, &lq), 0);
	assert_int_equal(engine_qp_listen(srv, lq, 42), 0);
	assert_int_equal(engine_qp_create(ca, &attr, &qa), 0);
	assert_int_equal(engine_qp_connect(ca, qa, 0, 42, t), 0);
	assert_int_equal(peers_get_handle_req(p, &a, &ha), 0);
	n = tx_one(ca, t, pkt, &to);
	assert_true(engine_rx(srv, t, pkt, n, &(struct engine_rx_meta){ .peer = ha }) >= 0);
	while (tx_one(srv, t, pkt, &to))
		;					/* A's REP: lost */
	peers_sweep(p, t += SEC);
	peers_sweep(p, t += PEERS_UNPROVEN_NS);
	assert_int_equal(peers_get_handle(p, &b, &hb), 0);
	assert_int_equal(peers_index(hb), peers_index(ha));

	/* C asks, gets its REP, proves: the listener is C's, A's entry is told BUSY. */
	assert_int_equal(peers_get_handle_req(p, &c, &hc), 0);
	assert_int_equal(engine_qp_create(cc, &attr, &qc), 0);
	assert_int_equal(engine_qp_connect(cc, qc, 0, 42, t), 0);
	n = tx_one(cc, t, pkt, &to);
	assert_true(engine_rx(srv, t, pkt, n, &(struct engine_rx_meta){ .peer = hc }) >= 0);
	while ((n = tx_one(srv, t, pkt, &to)))
		if (to == hc)
			engine_rx(cc, t, pkt, n, &(struct engine_rx_meta){ .peer = 0 });
	while ((n = tx_one(cc, t, pkt, &to)))
		engine_rx(srv, t, pkt, n, &(struct engine_rx_meta){ .peer = hc });
	while ((n = tx_one(srv, t, pkt, &to))) {
		assert_int_equal(wire_parse(pkt, n, &w, &why), 0);
		if (w.hdr.opcode != MROC_OP_CONNECT_REJ || w.hdr.dst_qpn != qa)
			continue;
		busy++;
		assert_null(peers_get(p, to));		/* not B */
	}
	assert_int_equal(busy, 1);
	peers_destroy(p);
	engine_destroy(cc);
	engine_destroy(ca);
	engine_destroy(srv);
}

/* ---- port addresses (aliases) ---------------------------------------------------------- */

/* s maps to handle want in p's table (primary or port address). */
static void assert_maps(struct peers *p, const char *s, uint32_t want)
{
	struct mroc_addr a = addr(s);
	uint32_t h;

	assert_int_equal(peers_lookup(p, &a, &h), 0);
	assert_int_equal(h, want);
}

static unsigned hook_calls;
static uint32_t hook_handle;

static void count_hook(void *ctx, uint32_t handle)
{
	(void)ctx;
	hook_calls++;
	hook_handle = handle;
}

/* Port addresses map to their peer's handle, IPv4 and IPv6, and change as announced. */
static void test_alias_add_lookup(void **state)
{
	struct peers *p = peers_create(8);
	struct mroc_addr al[PEERS_MAX_ALIASES] = { 0 }, a;
	struct peers_stats st;
	uint32_t h4, h6, h;

	(void)state;
	peers_set_release_hook(p, count_hook, NULL);
	a = addr("10.9.0.2");
	assert_int_equal(peers_get_handle(p, &a, &h4), 0);
	a = addr("fd09::2");
	assert_int_equal(peers_get_handle(p, &a, &h6), 0);
	assert_false(peers_get(p, h4)->speaks_ports);
	assert_int_equal(peers_set_aliases(p, h4, al, 0), 0);	/* none: still "speaks" */
	assert_true(peers_get(p, h4)->speaks_ports);
	assert_int_equal(hook_calls, 0);			/* nothing changed */

	al[0] = addr("10.1.0.2");
	al[3] = addr("10.4.0.2");
	assert_int_equal(peers_set_aliases(p, h4, al, 0x9), 2);
	assert_int_equal(hook_calls, 1);
	assert_int_equal(hook_handle, h4);
	assert_int_equal(peers_get(p, h4)->alias_mask, 0x9);
	assert_maps(p, "10.1.0.2", h4);
	assert_maps(p, "10.4.0.2", h4);
	/* The same again (a duplicate REP): no change, the next hops stay. */
	assert_int_equal(peers_set_aliases(p, h4, al, 0x9), 2);
	assert_int_equal(hook_calls, 1);

	memset(al, 0, sizeof(al));
	al[1] = addr("fd02::2");
	al[15] = addr("fd10::2");
	assert_int_equal(peers_set_aliases(p, h6, al, 0x8002), 2);
	assert_maps(p, "fd10::2", h6);

	/* A new set replaces the old: port 3 gone, port 0 moved. */
	memset(al, 0, sizeof(al));
	al[0] = addr("10.1.0.12");
	assert_int_equal(peers_set_aliases(p, h4, al, 0x1), 1);
	assert_int_equal(hook_calls, 3);
	a = addr("10.4.0.2");
	assert_int_equal(peers_lookup(p, &a, &h), -ENOENT);
	a = addr("10.1.0.2");
	assert_int_equal(peers_lookup(p, &a, &h), -ENOENT);
	assert_maps(p, "10.1.0.12", h4);
	/* The primary still maps, and an empty address is refused. */
	assert_maps(p, "10.9.0.2", h4);
	memset(al, 0, sizeof(al));
	assert_int_equal(peers_set_aliases(p, h4, al, 0x4), -EINVAL);
	assert_int_equal(peers_set_aliases(p, 7, al, 0), -ENOENT);
	peers_get_stats(p, &st);
	assert_int_equal(st.alias_added, 5);
	assert_int_equal(st.alias_refused, 0);
	peers_destroy(p);
}

/*
 * A live peer's primary is never taken as a port address; a port address
 * two peers claim is both's (neither loses it); a CONNECT_REQ from a port
 * address (#24 item 1: spoofed, it cut the peer off) makes a peer of its
 * own beside the claim and takes nothing from the claimant.
 */
static void test_alias_refused(void **state)
{
	struct peers *p = peers_create(8);
	struct mroc_addr al[PEERS_MAX_ALIASES] = { 0 }, a;
	struct peers_stats st;
	uint32_t ha, hb, h;

	(void)state;
	a = addr("10.9.0.2");
	assert_int_equal(peers_get_handle(p, &a, &ha), 0);
	a = addr("10.9.0.3");
	assert_int_equal(peers_get_handle(p, &a, &hb), 0);
	al[0] = addr("10.1.0.2");
	assert_int_equal(peers_set_aliases(p, ha, al, 0x1), 1);

	/* B claims A's port address, A's primary and its own primary: the primaries refused. */
	al[0] = addr("10.1.0.2");
	al[1] = addr("10.9.0.2");
	al[2] = addr("10.9.0.3");
	al[3] = addr("10.1.0.3");
	assert_int_equal(peers_set_aliases(p, hb, al, 0xf), 2);
	assert_int_equal(peers_get(p, hb)->alias_mask, 0x9);
	assert_maps(p, "10.9.0.2", ha);
	peers_get_stats(p, &st);
	assert_int_equal(st.alias_refused, 2);
	assert_int_equal(st.alias_shared, 1);
	/* A still has its port address; B's claim is B's. */
	a = addr("10.1.0.2");
	assert_true(peers_claims(p, ha, &a));
	assert_true(peers_claims(p, hb, &a));
	a = addr("10.9.0.2");
	assert_false(peers_claims(p, hb, &a));

	/* A connection to B's port address goes to B. */
	a = addr("10.1.0.3");
	assert_int_equal(peers_get_handle(p, &a, &h), 0);
	assert_int_equal(h, hb);
	/* A (spoofed) CONNECT_REQ from A's port address: a peer of its own, A keeps it. */
	a = addr("10.1.0.2");
	assert_int_equal(peers_get_handle_req(p, &a, &h), 0);
	assert_int_not_equal(h, ha);
	assert_int_not_equal(h, hb);
	assert_int_equal(peers_get(p, ha)->alias_mask, 0x1);
	assert_int_equal(peers_get(p, hb)->alias_mask, 0x9);
	assert_true(peers_claims(p, ha, &a));
	assert_true(peers_claims(p, h, &a));
	/* The same again finds that peer; a REQ from A's primary finds A. */
	assert_int_equal(peers_get_handle_req(p, &a, &hb), 0);
	assert_int_equal(hb, h);
	a = addr("10.9.0.2");
	assert_int_equal(peers_get_handle_req(p, &a, &h), 0);
	assert_int_equal(h, ha);
	/* The REQ's peer leaves (never proven): A's claim is whole, lookups still find it. */
	peers_sweep(p, SEC);
	peers_sweep(p, SEC + PEERS_SWEEP_NS);
	peers_sweep(p, SEC + PEERS_SWEEP_NS + PEERS_UNPROVEN_NS);
	a = addr("10.1.0.2");
	assert_true(peers_claims(p, ha, &a) || !peers_get(p, ha));
	peers_destroy(p);
}

/* Port addresses leave with their peer, and the handle comes back without them. */
static void test_alias_leave_with_peer(void **state)
{
	struct peers *p = peers_create(2);
	struct mroc_addr al[PEERS_MAX_ALIASES], a;
	uint32_t h, h2;

	(void)state;
	peers_sweep(p, SEC);
	a = addr("10.9.0.2");
	assert_int_equal(peers_get_handle(p, &a, &h), 0);
	for (unsigned i = 0; i < PEERS_MAX_ALIASES; i++)
		al[i] = addr_n(100 + i);
	assert_int_equal(peers_set_aliases(p, h, al, 0xffff), PEERS_MAX_ALIASES);
	assert_int_equal(peers_lookup(p, &al[15], &h2), 0);
	assert_int_equal(h2, h);
	peers_sweep(p, 2 * SEC);
	peers_sweep(p, 2 * SEC + PEERS_UNPROVEN_NS);
	assert_int_equal(peers_live(p), 0);
	for (unsigned i = 0; i < PEERS_MAX_ALIASES; i++)
		assert_int_equal(peers_lookup(p, &al[i], &h2), -ENOENT);
	/* The slot again, for another host: none of the old addresses. */
	a = addr("10.9.0.7");
	assert_int_equal(peers_get_handle(p, &a, &h2), 0);
	assert_int_equal(peers_index(h2), peers_index(h));
	assert_null(peers_get(p, h));
	assert_false(peers_get(p, h2)->speaks_ports);
	assert_int_equal(peers_get(p, h2)->alias_mask, 0);
	assert_int_equal(peers_lookup(p, &al[0], &h2), -ENOENT);
	/* Now another host may announce them. */
	a = addr("10.9.0.8");
	assert_int_equal(peers_get_handle(p, &a, &h2), 0);
	assert_int_equal(peers_set_aliases(p, h2, al, 0xffff), PEERS_MAX_ALIASES);
	peers_destroy(p);
}

/* A full table of peers with every port address each: all found (the hash never fills). */
static void test_alias_table_full(void **state)
{
	const uint32_t n = 64;
	struct peers *p = peers_create(n);
	struct mroc_addr al[PEERS_MAX_ALIASES], a;
	uint32_t h, h2;

	(void)state;
	for (uint32_t i = 0; i < n; i++) {
		a = addr_n(i);
		assert_int_equal(peers_get_handle(p, &a, &h), 0);
		for (unsigned k = 0; k < PEERS_MAX_ALIASES; k++)
			al[k] = addr_n(1000 + i * PEERS_MAX_ALIASES + k);
		assert_int_equal(peers_set_aliases(p, h, al, 0xffff), PEERS_MAX_ALIASES);
	}
	for (uint32_t i = 0; i < n; i++) {
		a = addr_n(i);
		assert_int_equal(peers_lookup(p, &a, &h), 0);
		for (unsigned k = 0; k < PEERS_MAX_ALIASES; k++) {
			a = addr_n(1000 + i * PEERS_MAX_ALIASES + k);
			assert_int_equal(peers_lookup(p, &a, &h2), 0);
			assert_int_equal(h2, h);
		}
	}
	peers_destroy(p);
}

int main(void)
{
	const struct CMUnitTest table_tests[] = {
		cmocka_unit_test(test_table_create_args),
		cmocka_unit_test(test_table_add_lookup_full),
		cmocka_unit_test(test_table_many),
		cmocka_unit_test(test_table_unproven_age_out),
		cmocka_unit_test(test_find_keeps_nothing),
		cmocka_unit_test(test_table_owner_share),
		cmocka_unit_test(test_table_evict_when_full),
		cmocka_unit_test(test_handed_kept_in_tick),
		cmocka_unit_test(test_table_referenced_stay),
		cmocka_unit_test(test_stale_handle_not_reassigned),
		cmocka_unit_test(test_stale_handle_busy),
		cmocka_unit_test(test_alias_add_lookup),
		cmocka_unit_test(test_alias_refused),
		cmocka_unit_test(test_alias_leave_with_peer),
		cmocka_unit_test(test_alias_table_full),
	};

	return cmocka_run_group_tests_name("peer table", table_tests, NULL, NULL);
}
