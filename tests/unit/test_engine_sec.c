// SPDX-License-Identifier: MIT
/*
 * Security modes in the engine (engine/sec.c, docs/PROTOCOL.md 1.2):
 * "token" transfers carry a tag on every packet after the handshake, a
 * forged packet with the right QPNs but no or a wrong tag changes nothing,
 * a CONNECT between different modes is refused and counted on both sides,
 * and "aead" refuses what its frame layer did not open.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "engine_pair.h"

#define SVC		7
#define LEN		(64 * 1024)

struct fx {
	struct pair *p;
	struct pair_mem *a, *b;
};

static struct engine_config cfg_of(uint8_t mode, uint64_t seed)
{
	struct engine_config c;

	pair_test_config(&c);
	c.sec_mode = mode;
	c.seed = seed;
	return c;
}

static struct fx *open_fx(void **state, uint8_t mode_a, uint8_t mode_b)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct engine_config ca = cfg_of(mode_a, 11), cb = cfg_of(mode_b, 12);

	assert_non_null(f);
	f->p = pair_new(&ca, &cb);
	f->a = pair_mem_new(f->p, PAIR_A, LEN, 1, ENGINE_ACCESS_ALL);
	f->b = pair_mem_new(f->p, PAIR_B, LEN, 1, ENGINE_ACCESS_ALL);
	*state = f;
	return f;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f)
		pair_free(f->p);
	free(f);
	return 0;
}

static uint64_t stat_of(struct fx *f, int side, enum engine_counter c)
{
	return pair_stat(f->p, side, c);
}

static struct engine_wr write_of(struct fx *f, uint64_t id, uint32_t len)
{
	return (struct engine_wr){
		.wr_id = id, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
		.lkey = f->a->lkey, .len = len, .rkey = f->b->rkey,
	};
}

/* Drops every 17th data packet: retransmissions are tagged too. */
static bool drop_some(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	unsigned *n = arg;

	(void)p;
	return !(mroc_op_is_data(pkt->data[PKT_OPCODE]) && ++*n % 17 == 0);
}

/* A token transfer: every packet after the REQ is tagged, the data arrive intact. */
static void test_token_transfer(void **state)
{
	struct fx *f = open_fx(state, MROC_SEC_TOKEN, MROC_SEC_TOKEN);
	struct engine_wr wr = write_of(f, 1, LEN);
	struct pair_capture *cap;
	unsigned n = 0;

	pair_connect(f->p, NULL, NULL, SVC);
	pair_mem_fill(f->a, 3);
	/* One data packet looked at: flag set, 8 bytes after the payload. */
	wr.len = 100;
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	cap = pair_capture_data(f->p, PAIR_A, 1);
	assert_true(cap->pkt[0].data[PKT_FLAGS] & MROC_F_TAG);
	assert_int_equal(cap->pkt[0].len, MROC_DATA_OVERHEAD + 100 + MROC_TAG_LEN);
	pair_capture_stop(f->p);
	assert_int_equal(pair_deliver(f->p, &cap->pkt[0]), 0);
	pair_run_for(f->p, 5 * PAIR_MS);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);

	wr = write_of(f, 2, LEN);
	f->p->filter = drop_some;
	f->p->filter_arg = &n;
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	pair_run_for(f->p, 200 * PAIR_MS);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 2);
	assert_true(stat_of(f, PAIR_A, EC_TX_RETX) > 0);
	pair_mem_expect(f->b, 0, f->a->buf, LEN);
	assert_int_equal(stat_of(f, PAIR_A, EC_RX_BAD_TAG), 0);
	assert_int_equal(stat_of(f, PAIR_B, EC_RX_BAD_TAG), 0);
}

/* Deliver pk to B; it must be refused as badly tagged and change nothing. */
static void expect_refused(struct fx *f, const struct pair_pkt *pk, uint64_t *bad)
{
	struct engine_stats before;

	engine_get_stats(f->p->s[PAIR_B].eng, &before);
	assert_int_equal(pair_deliver(f->p, pk), -EBADMSG);
	assert_int_equal(stat_of(f, PAIR_B, EC_RX_BAD_TAG), ++*bad);
	assert_int_equal(stat_of(f, PAIR_B, EC_RX_BYTES_PLACED), before.c[EC_RX_BYTES_PLACED]);
	assert_int_equal(pair_state(f->p, PAIR_B), ENGINE_QPS_CONNECTED);
	pair_pump(f->p);
	pair_expect_none(f->p, PAIR_B);
}

/*
 * Forgeries with the right QPNs, from the right peer: no tag, a wrong tag,
 * a header changed under a good tag, a DISCONNECT and an ACK NAK without
 * one.  None is looked at; the real packet still goes through.
 */
static void test_token_forged(void **state)
{
	struct fx *f = open_fx(state, MROC_SEC_TOKEN, MROC_SEC_TOKEN);
	struct engine_wr wr = write_of(f, 1, 200);
	struct pair_capture *cap;
	struct pair_pkt pk;
	uint64_t bad = 0;

	pair_connect(f->p, NULL, NULL, SVC);
	pair_mem_fill(f->a, 5);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	cap = pair_capture_data(f->p, PAIR_A, 1);
	pair_capture_stop(f->p);

	pk = cap->pkt[0];			/* no tag */
	pk.data[PKT_FLAGS] &= (uint8_t)~MROC_F_TAG;
	pk.len -= MROC_TAG_LEN;
	expect_refused(f, &pk, &bad);
	pk = cap->pkt[0];			/* a wrong tag */
	pk.data[pk.len - 1] ^= 0x01;
	expect_refused(f, &pk, &bad);
	pk = cap->pkt[0];			/* the window dragged under the old tag */
	pkt_put32(pk.data, PKT_PSN_FLOOR, pkt_get32(pk.data, PKT_PSN) + 100000);
	pkt_put32(pk.data, PKT_PSN, pkt_get32(pk.data, PKT_PSN) + 100000);
	expect_refused(f, &pk, &bad);
	pk = cap->pkt[0];			/* a DISCONNECT, untagged */
	pk.data[PKT_OPCODE] = MROC_OP_DISCONNECT;
	pk.data[PKT_FLAGS] = 0;
	memset(pk.data + MROC_HDR_LEN, 0, MROC_CM_HDR_LEN);
	pk.len = MROC_HDR_LEN + MROC_CM_HDR_LEN;
	expect_refused(f, &pk, &bad);
	pk.data[PKT_FLAGS] = MROC_F_TAG;	/* ... with a made-up tag */
	pk.len += MROC_TAG_LEN;
	expect_refused(f, &pk, &bad);
	pk = cap->pkt[0];			/* a truncated one: shorter than a tag */
	pk.len = MROC_HDR_LEN + 4;
	expect_refused(f, &pk, &bad);

	assert_int_equal(pair_deliver(f->p, &cap->pkt[0]), 0);
	pair_run_for(f->p, 5 * PAIR_MS);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->b, 0, f->a->buf, 200);
	/* A clean close still works: DISCONNECT and its ACK are tagged. */
	assert_int_equal(engine_qp_disconnect(f->p->s[PAIR_A].eng, f->p->s[PAIR_A].qpn,
					      pair_clock(f->p, PAIR_A)), 0);
	pair_run_for(f->p, 5 * PAIR_MS);
	pair_expect(f->p, PAIR_B, ENGINE_WC_EV_DISCONNECTED, ENGINE_WC_SUCCESS, PAIR_ANY_ID);
	pair_expect(f->p, PAIR_A, ENGINE_WC_EV_DISCONNECTED, ENGINE_WC_SUCCESS, PAIR_ANY_ID);
	assert_int_equal(stat_of(f, PAIR_A, EC_RX_BAD_TAG), 0);
}

/* A connects in mode_a to B listening in mode_b: refused, counted on both sides. */
static void check_mismatch(void **state, uint8_t mode_a, uint8_t mode_b, bool a_told)
{
	struct fx *f = open_fx(state, mode_a, mode_b);
	struct engine_qp_attr aa = pair_test_attr(), ab = pair_test_attr();
	struct pair_capture *cap;
	uint32_t qa, qb;

	aa.user = 0xa;
	qb = pair_qp_create(f->p, PAIR_B, &ab);
	assert_int_equal(engine_qp_listen(f->p->s[PAIR_B].eng, qb, SVC), 0);
	qa = pair_qp_create(f->p, PAIR_A, &aa);
	f->p->s[PAIR_A].qpn = qa;
	f->p->s[PAIR_B].qpn = qb;
	assert_int_equal(engine_qp_connect(f->p->s[PAIR_A].eng, qa, PAIR_B, SVC, pair_clock(f->p, PAIR_A)), 0);
	cap = pair_capture_start(f->p, PAIR_B, PAIR_OP_BIT(MROC_OP_CONNECT_REJ), true);
	pair_pump(f->p);
	assert_int_equal(cap->n, 1);
	assert_int_equal(cap->pkt[0].data[PKT_CM_REASON], MROC_CM_SECURITY);
	assert_int_equal(stat_of(f, PAIR_B, EC_CM_SEC_MISMATCH), 1);
	assert_int_equal(stat_of(f, PAIR_A, EC_CM_SEC_MISMATCH), 1);
	assert_int_equal(pair_state(f->p, PAIR_B), ENGINE_QPS_LISTEN);
	if (a_told) {
		assert_int_equal(pair_expect(f->p, PAIR_A, ENGINE_WC_EV_ERROR,
					     ENGINE_WC_CONNECT_ERR, 0xa)->reason, MROC_CM_SECURITY);
	} else {
		/* The refusal could not be checked: A waits for its retries to run out. */
		pair_expect_none(f->p, PAIR_A);
		pair_capture_stop(f->p);
		pair_run_for(f->p, 30 * 1000 * PAIR_MS);
		pair_expect(f->p, PAIR_A, ENGINE_WC_EV_ERROR, ENGINE_WC_CONNECT_ERR, 0xa);
	}
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_ERROR);
	/* The QP keeps why, for mroc-cli qp show. */
	struct engine_qp_info qi;

	assert_int_equal(engine_qp_info(f->p->s[PAIR_A].eng, qa, &qi), 0);
	assert_int_equal(qi.err_status, ENGINE_WC_CONNECT_ERR);
	assert_int_equal(qi.err_why, a_told ? MROC_CM_SECURITY : ENGINE_CONN_NO_ANSWER);
}

static void test_mismatch_token_none(void **state)
{
	check_mismatch(state, MROC_SEC_TOKEN, MROC_SEC_NONE, true);
}

static void test_mismatch_none_token(void **state)
{
	check_mismatch(state, MROC_SEC_NONE, MROC_SEC_TOKEN, true);
}

static void test_mismatch_token_aead(void **state)
{
	check_mismatch(state, MROC_SEC_TOKEN, MROC_SEC_AEAD, true);
}

/* Both "aead", but nothing here seals: A's plain REQ is refused, B's plain REJ not believed. */
static void test_aead_refuses_plain(void **state)
{
	check_mismatch(state, MROC_SEC_AEAD, MROC_SEC_AEAD, false);
}

/* "none" refuses a tag as an undefined flag. */
static void test_none_refuses_tag(void **state)
{
	struct fx *f = open_fx(state, MROC_SEC_NONE, MROC_SEC_NONE);
	struct engine_wr wr = write_of(f, 1, 100);
	struct pair_capture *cap;
	struct pair_pkt pk;

	pair_connect(f->p, NULL, NULL, SVC);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	cap = pair_capture_data(f->p, PAIR_A, 1);
	pair_capture_stop(f->p);
	assert_int_equal(cap->pkt[0].len, MROC_DATA_OVERHEAD + 100);
	pk = cap->pkt[0];
	pk.data[PKT_FLAGS] |= MROC_F_TAG;
	memset(pk.data + pk.len, 0, MROC_TAG_LEN);
	pk.len += MROC_TAG_LEN;
	assert_true(pair_deliver(f->p, &pk) < 0);
	assert_int_equal(stat_of(f, PAIR_B, EC_RX_MALFORMED), 1);
	assert_int_equal(stat_of(f, PAIR_B, EC_RX_BYTES_PLACED), 0);
}

static bool drop_from_b(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	(void)p;
	(void)arg;
	return pkt->from != PAIR_B;
}

/* The first packet of opcode op in cap. */
static const struct pair_pkt *captured(const struct pair_capture *cap, uint8_t op)
{
	for (unsigned i = 0; i < cap->n; i++)
		if (cap->pkt[i].data[PKT_OPCODE] == op)
			return &cap->pkt[i];
	fail_msg("no packet of opcode 0x%02x captured", op);
	return NULL;
}

/*
 * #24 item 6: an on-path host drops everything B sends and replays, every
 * half keepalive interval, B's packets it captured before: a keepalive, an
 * ACK, a data packet.  In "aead" they open (B sealed them for these
 * addresses: the frame layer lets them through), in "token" their tags are
 * right.  None is a sign of life: A's QP is declared dead within dead_peer
 * of B's last real packet (the keepalive interval of slack for the timer),
 * and the keepalives are counted (rx_stale_keepalive).  Each replay used to
 * reset A's dead-peer clock, and the QP lived on as long as they came.
 * Before the attack, an idle QP whose keepalives get through lives on and
 * counts none of them stale; a keepalive without its number (a peer from
 * before it) is taken only where nothing seals.
 */
static void replayed_not_alive(void **state, uint8_t mode)
{
	struct engine_config ca = cfg_of(mode, 11), cb = cfg_of(mode, 12);
	struct fx *f = calloc(1, sizeof(*f));
	struct engine_wr wa, wb;
	struct pair_capture *cap;
	const struct pair_pkt *replay[3];
	struct pair_pkt old;
	uint64_t t0, stale;

	assert_non_null(f);
	*state = f;
	ca.keepalive_ns = cb.keepalive_ns = 2 * PAIR_MS;
	ca.dead_peer_ns = cb.dead_peer_ns = 8 * PAIR_MS;
	f->p = pair_new(&ca, &cb);
	f->p->s[PAIR_A].sealed = f->p->s[PAIR_B].sealed = mode == MROC_SEC_AEAD;
	f->a = pair_mem_new(f->p, PAIR_A, LEN, 1, ENGINE_ACCESS_ALL);
	f->b = pair_mem_new(f->p, PAIR_B, LEN, 1, ENGINE_ACCESS_ALL);
	pair_connect(f->p, NULL, NULL, SVC);

	/* Traffic both ways, then idle: B's ACK, data and keepalives captured. */
	cap = pair_capture_start(f->p, PAIR_B, PAIR_OP_BIT(MROC_OP_WRITE) |
				 PAIR_OP_BIT(MROC_OP_ACK) | PAIR_OP_BIT(MROC_OP_KEEPALIVE), true);
	wa = write_of(f, 1, 100);
	wb = (struct engine_wr){ .wr_id = 2, .opcode = ENGINE_WR_WRITE, .flags = ENGINE_WR_SIGNALED,
				 .lkey = f->b->lkey, .len = 100, .rkey = f->a->rkey };
	assert_int_equal(pair_post(f->p, PAIR_A, &wa), 0);
	assert_int_equal(pair_post(f->p, PAIR_B, &wb), 0);
	pair_run_for(f->p, 3 * ca.keepalive_ns);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_expect(f->p, PAIR_B, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 2);
	replay[0] = captured(cap, MROC_OP_KEEPALIVE);
	replay[1] = captured(cap, MROC_OP_ACK);
	replay[2] = captured(cap, MROC_OP_WRITE);
	assert_int_equal(replay[0]->len, MROC_HDR_LEN + MROC_KA_LEN +
					 (mode == MROC_SEC_TOKEN ? MROC_TAG_LEN : 0));
	pair_capture_stop(f->p);

	/* Idle with keepalives getting through: alive, none of them stale. */
	pair_run_for(f->p, 3 * ca.dead_peer_ns);
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_CONNECTED);
	assert_int_equal(pair_state(f->p, PAIR_B), ENGINE_QPS_CONNECTED);
	assert_true(stat_of(f, PAIR_A, EC_TX_KEEPALIVE) + stat_of(f, PAIR_B, EC_TX_KEEPALIVE) >= 6);
	assert_int_equal(stat_of(f, PAIR_A, EC_RX_STALE_KA), 0);
	assert_int_equal(stat_of(f, PAIR_B, EC_RX_STALE_KA), 0);
	pair_expect_none(f->p, PAIR_A);

	/* Without its number, as a peer from before it sends it ("token": its tag would not fit). */
	if (mode != MROC_SEC_TOKEN) {
		old = *replay[0];
		old.len = MROC_HDR_LEN;
		stale = stat_of(f, PAIR_A, EC_RX_STALE_KA);
		assert_int_equal(pair_deliver(f->p, &old), mode == MROC_SEC_AEAD ? -ESTALE : 0);
		assert_int_equal(stat_of(f, PAIR_A, EC_RX_STALE_KA),
				 stale + (mode == MROC_SEC_AEAD));
	}

	/* The attack. */
	f->p->filter = drop_from_b;
	t0 = f->p->now;
	stale = stat_of(f, PAIR_A, EC_RX_STALE_KA);
	for (unsigned k = 0; f->p->now < t0 + 3 * ca.dead_peer_ns &&
			     pair_state(f->p, PAIR_A) == ENGINE_QPS_CONNECTED; k++) {
		pair_run_for(f->p, ca.keepalive_ns / 2);
		if (pair_state(f->p, PAIR_A) == ENGINE_QPS_CONNECTED)
			assert_true(pair_deliver(f->p, replay[k % 3]) < 0 || k % 3 == 1);
	}
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_ERROR);
	assert_true(f->p->now <= t0 + ca.dead_peer_ns + ca.keepalive_ns);
	assert_true(stat_of(f, PAIR_A, EC_RX_STALE_KA) >= stale + 2);
}

static void test_replayed_not_alive_none(void **state)
{
	replayed_not_alive(state, MROC_SEC_NONE);
}

static void test_replayed_not_alive_token(void **state)
{
	replayed_not_alive(state, MROC_SEC_TOKEN);
}

static void test_replayed_not_alive_aead(void **state)
{
	replayed_not_alive(state, MROC_SEC_AEAD);
}

/* A's and B's first connection, in mode, its dead-peer time dead and keepalives ka. */
static struct fx *alive_fx(void **state, uint8_t mode, uint64_t ka, uint64_t dead)
{
	struct engine_config ca = cfg_of(mode, 11), cb = cfg_of(mode, 12);
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	*state = f;
	ca.keepalive_ns = cb.keepalive_ns = ka;
	ca.dead_peer_ns = cb.dead_peer_ns = dead;
	ca.max_retx = cb.max_retx = 255;	/* only the dead-peer clocks end a QP here */
	f->p = pair_new(&ca, &cb);
	f->p->s[PAIR_A].sealed = f->p->s[PAIR_B].sealed = mode == MROC_SEC_AEAD;
	f->a = pair_mem_new(f->p, PAIR_A, LEN, 1, ENGINE_ACCESS_ALL);
	f->b = pair_mem_new(f->p, PAIR_B, LEN, 1, ENGINE_ACCESS_ALL);
	pair_connect(f->p, NULL, NULL, SVC);
	return f;
}

/*
 * #24, s12's first gap: the engine says which packets it took are repeats
 * (engine_rx_repeat): a data packet again (its PSN the path had) and an ACK
 * without news; the driver then sends the answer back but does not count
 * the port as working (egress.h, test_egress test_repeat_not_alive).  The
 * packets themselves, the first time, and a resend of delivered data under
 * a new PSN are news.
 */
static void repeat_flagged(void **state, uint8_t mode)
{
	struct fx *f = alive_fx(state, mode, 2 * PAIR_MS, 8 * PAIR_MS);
	struct engine *eb = f->p->s[PAIR_B].eng, *ea = f->p->s[PAIR_A].eng;
	struct engine_wr wa = write_of(f, 1, 100);
	struct pair_capture *cap;
	struct pair_pkt data, ack;
	uint64_t dup;

	cap = pair_capture_start(f->p, PAIR_A, PAIR_OP_BIT(MROC_OP_WRITE), false);
	assert_int_equal(pair_post(f->p, PAIR_A, &wa), 0);
	pair_run_for(f->p, 100 * PAIR_US);
	data = *captured(cap, MROC_OP_WRITE);
	assert_int_equal(pair_deliver(f->p, &data), 0);
	assert_false(engine_rx_repeat(eb));
	cap = pair_capture_start(f->p, PAIR_B, PAIR_OP_BIT(MROC_OP_ACK), true);
	pair_run_for(f->p, 100 * PAIR_US);
	ack = *captured(cap, MROC_OP_ACK);
	pair_capture_stop(f->p);
	assert_false(engine_rx_repeat(ea));	/* delivered by the run: news */
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);

	dup = stat_of(f, PAIR_B, EC_RX_DUP);
	assert_int_equal(pair_deliver(f->p, &data), -EALREADY);
	assert_true(engine_rx_repeat(eb));
	assert_int_equal(stat_of(f, PAIR_B, EC_RX_DUP), dup + 1);
	assert_int_equal(pair_deliver(f->p, &ack), 0);
	assert_true(engine_rx_repeat(ea));
	/* Anything else taken resets it: B's keepalive. */
	pair_run_for(f->p, 3 * PAIR_MS);
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_CONNECTED);
	assert_false(engine_rx_repeat(ea));
	assert_false(engine_rx_repeat(eb));
}

static void test_repeat_flagged_none(void **state)
{
	repeat_flagged(state, MROC_SEC_NONE);
}

static void test_repeat_flagged_aead(void **state)
{
	repeat_flagged(state, MROC_SEC_AEAD);
}

/* The WRITE wa completes; B's first ACK of it, captured. */
static struct pair_pkt acked_write(struct fx *f, const struct engine_wr *wa)
{
	struct pair_capture *cap = pair_capture_start(f->p, PAIR_B, PAIR_OP_BIT(MROC_OP_ACK), true);
	struct pair_pkt ack;

	assert_int_equal(pair_post(f->p, PAIR_A, wa), 0);
	pair_run_for(f->p, PAIR_MS);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, wa->wr_id);
	ack = *captured(cap, MROC_OP_ACK);
	pair_capture_stop(f->p);
	return ack;
}

/*
 * #24, s12's second gap: with keepalives off, the dead-peer clock of a QP
 * with data in flight (last_progress) moved on any ACK, a replayed old one
 * included.  An on-path host that drops B's packets and replays B's old
 * ACK to A every dead/4 kept A's QP alive until max_retx; now it fails one
 * dead-peer time after its last real progress, and the replays changed
 * nothing (engine_rx_repeat).
 */
static void test_replayed_ack_no_progress(void **state)
{
	const uint64_t dead = 8 * PAIR_MS;
	struct fx *f = alive_fx(state, MROC_SEC_AEAD, 0, dead);
	struct engine_wr wa = write_of(f, 1, 100);
	struct pair_pkt ack = acked_write(f, &wa);
	uint64_t t0;

	/* Idle without keepalives: nothing in flight, nothing times out. */
	pair_run_for(f->p, 3 * dead);
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_CONNECTED);

	/* The attack: B's packets dropped, its old ACK replayed; A has data in flight. */
	f->p->filter = drop_from_b;
	wa.wr_id = 2;
	assert_int_equal(pair_post(f->p, PAIR_A, &wa), 0);
	t0 = f->p->now;
	while (f->p->now < t0 + 3 * dead && pair_state(f->p, PAIR_A) == ENGINE_QPS_CONNECTED) {
		pair_run_for(f->p, dead / 4);
		if (pair_state(f->p, PAIR_A) != ENGINE_QPS_CONNECTED)
			break;
		assert_int_equal(pair_deliver(f->p, &ack), 0);
		assert_true(engine_rx_repeat(f->p->s[PAIR_A].eng));
	}
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_ERROR);
	assert_true(f->p->now <= t0 + dead + dead / 4);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_RETRY_EXC_ERR, 2);
}

/* A's data packets dropped while *arg. */
static bool drop_a_data(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	(void)p;
	return !(*(bool *)arg && pkt->from == PAIR_A && mroc_op_is_data(pkt->data[PKT_OPCODE]));
}

/*
 * s20-cc20 section 6: a replayed old ACK brings no news, and its echo (the
 * send time of the packet it acknowledged) is no RTT sample.  Taken as one,
 * each replay showed an RTT as old as the ACK, up to rto_max, in the host's
 * RTT maximum, and every path's RTO was held at rto_max for 30-60 s
 * (path_rto): in test_replayed_ack_no_progress the timers came 20 ms apart.
 * Here B's ACK of an idle QP is replayed four times, 2 ms apart; then A's
 * data is lost until a path times out: its first RTO comes 1 ms after the
 * post (its own RTO, at most rto_init), not 11.25 ms (5/4 of the last
 * replay's "RTT" of 9 ms; 20 ms once the replays reach rto_max).
 */
static void test_replayed_ack_no_rtt(void **state)
{
	struct fx *f = alive_fx(state, MROC_SEC_AEAD, 0, 100 * PAIR_MS);
	const struct engine_config *ca = &f->p->s[PAIR_A].cfg;
	struct engine_wr wa = write_of(f, 1, 100);
	struct pair_pkt ack = acked_write(f, &wa);
	bool drop = false;
	uint64_t t0;

	for (int i = 0; i < 4; i++) {
		pair_run_for(f->p, 2 * PAIR_MS);
		assert_int_equal(pair_deliver(f->p, &ack), 0);
		assert_true(engine_rx_repeat(f->p->s[PAIR_A].eng));
	}

	f->p->filter = drop_a_data;
	f->p->filter_arg = &drop;
	drop = true;
	wa.wr_id = 2;
	t0 = f->p->now;
	assert_int_equal(pair_post(f->p, PAIR_A, &wa), 0);
	while (!stat_of(f, PAIR_A, EC_RTO) && f->p->now < t0 + 2 * ca->rto_max_ns)
		pair_run_for(f->p, 10 * PAIR_US);
	print_message("first RTO %.2f ms after the post (rto_min %.1f ms, rto_max %.0f ms)\n",
		      (double)(f->p->now - t0) / PAIR_MS, (double)ca->rto_min_ns / PAIR_MS,
		      (double)ca->rto_max_ns / PAIR_MS);
	assert_int_equal(stat_of(f, PAIR_A, EC_RTO), 1);
	assert_true(f->p->now - t0 < ca->rto_max_ns / 4);
	drop = false;
	pair_run_for(f->p, ca->rto_max_ns);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 2);
}

/*
 * #24 item 4: QPNs, rkeys (and initial sequence numbers) come from a keyed
 * generator (sec.c), not from the seed alone: two engines with the same
 * seed and different secrets share none of them (xoshiro, what this was,
 * gave both the same QPNs, and 24 of them gave away the rest); the same
 * secret and seed give the same ones (the simulator's runs stay
 * reproducible).
 */
static void numbers_of(const uint8_t secret[16], uint32_t out[24])
{
	struct engine_config c = cfg_of(MROC_SEC_TOKEN, 42);
	struct engine_qp_attr qa = { .mode = MROC_MODE_METAROCE, .npaths = 1, .sq_depth = 4,
				     .rq_depth = 4, .max_rd = 1 };
	static uint8_t buf[4096];
	struct engine *eng;
	uint32_t lkey;

	memcpy(c.sec_secret, secret, 16);
	c.max_qps = 64;
	eng = engine_create(&c);
	assert_non_null(eng);
	for (int i = 0; i < 16; i++)
		assert_int_equal(engine_qp_create(eng, &qa, &out[i]), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(engine_mr_register(eng, 1, buf, sizeof(buf), ENGINE_ACCESS_ALL,
						    &lkey, &out[16 + i]), 0);
	engine_destroy(eng);
}

static void test_numbers_keyed(void **state)
{
	uint8_t s1[16] = { 1 }, s2[16] = { 2 };
	uint32_t a[24], b[24], c[24];

	(void)state;
	numbers_of(s1, a);
	numbers_of(s2, b);
	numbers_of(s1, c);
	assert_memory_equal(a, c, sizeof(a));
	for (int i = 0; i < 24; i++)
		for (int j = 0; j < 24; j++)
			assert_true(a[i] != b[j]);
}

/*
 * engine_tx readies a buffer (the tag's room kept back, the flags cleared)
 * only as it gets to it, and gives those their room back: past the one
 * after the last it filled (where it found nothing more to send), what the
 * driver offered stays as given.  A receiver that offered 64 to send an ACK
 * or two paid for all 64, before and after (issue #22).
 */
static void test_tx_touches_only_filled(void **state)
{
	static uint8_t mem[64][PAIR_MAX_PKT];
	struct fx *f = open_fx(state, MROC_SEC_TOKEN, MROC_SEC_TOKEN);
	struct engine_wr wr = write_of(f, 1, 100);
	struct engine_txbuf b[64], was[64];
	int n;

	pair_connect(f->p, NULL, NULL, SVC);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	for (int i = 0; i < 64; i++)
		b[i] = (struct engine_txbuf){ .data = mem[i], .cap = PAIR_MAX_PKT, .len = 77,
					      .peer = 5, .sport = 9, .plain = true, .echo = true };
	memcpy(was, b, sizeof(b));
	n = engine_tx(f->p->s[PAIR_A].eng, pair_clock(f->p, PAIR_A), b, 64);
	assert_in_range(n, 1, 62);
	for (int i = 0; i < n; i++) {
		assert_int_equal(b[i].cap, PAIR_MAX_PKT);
		assert_false(b[i].plain);
		assert_true(b[i].data[PKT_FLAGS] & MROC_F_TAG);
	}
	assert_int_equal(b[n - 1].len, MROC_DATA_OVERHEAD + 100 + MROC_TAG_LEN);
	assert_int_equal(b[n].cap, PAIR_MAX_PKT);
	assert_memory_equal(&b[n + 1], &was[n + 1], (size_t)(63 - n) * sizeof(b[0]));
}

/*
 * One run of test_tx_want's: WRITEs of A's, and READs whose responses B
 * sends, through loss, in token mode; each side's engine_tx offered whole
 * batches or what engine_tx_want says.  Returns the digest of every packet
 * sent; *offered: the buffers offered.
 */
static uint64_t offer_run(void **state, bool want, uint64_t *offered)
{
	struct fx *f = open_fx(state, MROC_SEC_TOKEN, MROC_SEC_TOKEN);
	unsigned n = 0;
	uint64_t digest;

	f->p->offer_want = want;
	pair_connect(f->p, NULL, NULL, SVC);
	pair_mem_fill(f->a, 3);
	f->p->filter = drop_some;
	f->p->filter_arg = &n;
	for (uint64_t i = 0; i < 4; i++) {
		struct engine_wr wr = write_of(f, 1 + i, LEN / 8);

		wr.laddr = wr.raddr = i * (LEN / 8);
		assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
		wr.wr_id += 4;
		wr.opcode = ENGINE_WR_READ;
		wr.laddr = wr.raddr = LEN / 2 + i * (LEN / 8);
		assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	}
	pair_run_for(f->p, 200 * PAIR_MS);
	pair_poll(f->p);
	assert_int_equal(pair_pending(f->p, PAIR_A), 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(pair_cqe(f->p, PAIR_A)->status, ENGINE_WC_SUCCESS);
	pair_mem_expect(f->b, 0, f->a->buf, LEN / 2);
	assert_true(stat_of(f, PAIR_A, EC_TX_RETX) > 0);
	assert_true(stat_of(f, PAIR_B, EC_TX_RETX) > 0);
	digest = f->p->digest;
	*offered = f->p->offered;
	teardown(state);
	*state = NULL;
	return digest;
}

/*
 * A driver that offers engine_tx only what engine_tx_want says (mrocd's
 * worker, issue #22: a receiver's ACK took 64 buffers built and 62 put
 * back) sends the very packets of one that offers whole batches, and
 * offers fewer buffers.  Every pump of every engine test checks that
 * engine_tx sends nothing when engine_tx_want says 0 (engine_pair.c).
 */
static void test_tx_want(void **state)
{
	uint64_t whole, offered;
	uint64_t d_whole = offer_run(state, false, &whole);
	uint64_t d_want = offer_run(state, true, &offered);

	assert_true(d_whole == d_want);
	assert_true(offered < whole / 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_token_transfer, teardown),
		cmocka_unit_test_teardown(test_token_forged, teardown),
		cmocka_unit_test_teardown(test_mismatch_token_none, teardown),
		cmocka_unit_test_teardown(test_mismatch_none_token, teardown),
		cmocka_unit_test_teardown(test_mismatch_token_aead, teardown),
		cmocka_unit_test_teardown(test_aead_refuses_plain, teardown),
		cmocka_unit_test_teardown(test_none_refuses_tag, teardown),
		cmocka_unit_test(test_numbers_keyed),
		cmocka_unit_test_teardown(test_replayed_not_alive_none, teardown),
		cmocka_unit_test_teardown(test_replayed_not_alive_token, teardown),
		cmocka_unit_test_teardown(test_replayed_not_alive_aead, teardown),
		cmocka_unit_test_teardown(test_repeat_flagged_none, teardown),
		cmocka_unit_test_teardown(test_repeat_flagged_aead, teardown),
		cmocka_unit_test_teardown(test_replayed_ack_no_progress, teardown),
		cmocka_unit_test_teardown(test_replayed_ack_no_rtt, teardown),
		cmocka_unit_test_teardown(test_tx_touches_only_filled, teardown),
		cmocka_unit_test_teardown(test_tx_want, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
