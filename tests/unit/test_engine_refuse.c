// SPDX-License-Identifier: MIT
/*
 * What the engine's receive path refuses in a packet, two engines back to
 * back (refuse_fx.h): malformed and truncated packets of every type, bad
 * lengths, rkeys and bounds (with canaries around every region), RECVs too
 * small, READ responses it did not ask for.  Each refusal is counted,
 * answered as the protocol says, and writes nothing.  Packets from whom
 * and where in the windows: test_engine_refuse_peer.c.
 *
 * Valid packets are captured from engine_tx, altered at the byte offsets of
 * docs/PROTOCOL.md 3.1-3.3 (the PKT_* names of engine_pair.h) and fed
 * straight to engine_rx.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "refuse_fx.h"

/* ---- malformed packets ----------------------------------------------------------- */

static bool record_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct fx *f = arg;
	uint8_t op = pkt->data[PKT_OPCODE];

	(void)p;
	if (!f->rec[op]) {
		f->rec[op] = malloc(sizeof(*pkt));
		assert_non_null(f->rec[op]);
		*f->rec[op] = *pkt;
	}
	return true;
}

static const uint8_t all_ops[] = {
	MROC_OP_WRITE, MROC_OP_WRITE_IMM, MROC_OP_SEND, MROC_OP_SEND_IMM, MROC_OP_READ_REQ,
	MROC_OP_READ_RESP, MROC_OP_FETCH_ADD, MROC_OP_CMP_SWAP, MROC_OP_ATOMIC_RESP,
	MROC_OP_ACK, MROC_OP_CONNECT_REQ, MROC_OP_CONNECT_REP,
	MROC_OP_CONNECT_REJ, MROC_OP_DISCONNECT, MROC_OP_DISCONNECT_ACK,
};
#define NOPS (sizeof(all_ops) / sizeof(all_ops[0]))

/* A connected pair, and a valid packet of every opcode recorded on the way. */
static struct fx *record_all(void **state)
{
	struct fx *f = fx_new(state, NULL, NULL);
	struct engine_qp_attr attr = pair_test_attr();
	struct engine_wr wr;
	uint32_t q2, q3a, q3b;

	f->x.p->filter = record_filter;
	f->x.p->filter_arg = f;
	pair_connect(f->x.p, NULL, NULL, SVC);
	recv_b(f, 1, 0, 0);
	recv_b(f, 2, 4096, 4096);
	recv_b(f, 3, 0, 4096);
	for (uint8_t op = ENGINE_WR_WRITE; op <= ENGINE_WR_READ; op++) {
		wr = pair_fx_wr(&f->x, op, op, 0, 100, 8192);
		post(f, &wr);
	}
	for (uint8_t op = ENGINE_WR_ATOMIC_FETCH_ADD; op <= ENGINE_WR_ATOMIC_CMP_SWP; op++) {
		wr = pair_fx_wr(&f->x, op, op, 8 * op, 8, 8 * op);
		post(f, &wr);
	}
	settle(f);
	/* CONNECT_REJ: nobody listens on 999. */
	q2 = pair_qp_create(f->x.p, PAIR_A, &attr);
	assert_int_equal(engine_qp_connect(f->x.p->s[PAIR_A].eng, q2, PAIR_B, 999, pair_clock(f->x.p, PAIR_A)), 0);
	pair_pump(f->x.p);
	/* DISCONNECT and DISCONNECT_ACK: a second connection, closed. */
	q3b = pair_qp_create(f->x.p, PAIR_B, &attr);
	q3a = pair_qp_create(f->x.p, PAIR_A, &attr);
	assert_int_equal(engine_qp_listen(f->x.p->s[PAIR_B].eng, q3b, 43), 0);
	assert_int_equal(engine_qp_connect(f->x.p->s[PAIR_A].eng, q3a, PAIR_B, 43, pair_clock(f->x.p, PAIR_A)), 0);
	pair_pump(f->x.p);
	assert_int_equal(engine_qp_disconnect(f->x.p->s[PAIR_A].eng, q3a, pair_clock(f->x.p, PAIR_A)), 0);
	settle(f);
	f->x.p->filter = NULL;
	for (unsigned i = 0; i < NOPS; i++)
		if (!f->rec[all_ops[i]])
			fail_msg("no packet with opcode 0x%02x was seen", all_ops[i]);
	for (uint8_t op = ENGINE_WR_WRITE; op <= ENGINE_WR_READ; op++)
		pair_expect(f->x.p, PAIR_A, op, ENGINE_WC_SUCCESS, op);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_ATOMIC_FETCH_ADD, ENGINE_WC_SUCCESS,
		    ENGINE_WR_ATOMIC_FETCH_ADD);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_ATOMIC_CMP_SWP, ENGINE_WC_SUCCESS,
		    ENGINE_WR_ATOMIC_CMP_SWP);
	/* Consume the rest; later checks look for new completions only. */
	while (pair_cqe(f->x.p, PAIR_A))
		;
	while (pair_cqe(f->x.p, PAIR_B))
		;
	return f;
}

static size_t hdr_len(uint8_t op)
{
	if (mroc_op_is_data(op))
		return MROC_DATA_OVERHEAD;
	return MROC_HDR_LEN + (op == MROC_OP_ACK ? MROC_ACK_HDR_LEN : MROC_CM_HDR_LEN);
}

/* Feed an altered copy of a recorded packet; expect it refused as malformed for why. */
struct mem_snap {
	uint8_t *a, *b;
};

static void snap_mem(struct fx *f, struct mem_snap *s)
{
	size_t n = REG_LEN + 2 * PAIR_GUARD_LEN;

	s->a = malloc(n);
	s->b = malloc(n);
	assert_non_null(s->a);
	assert_non_null(s->b);
	memcpy(s->a, f->x.a->base, n);
	memcpy(s->b, f->x.b->base, n);
}

static void check_mem(struct fx *f, struct mem_snap *s)
{
	size_t n = REG_LEN + 2 * PAIR_GUARD_LEN;

	assert_memory_equal(s->a, f->x.a->base, n);
	assert_memory_equal(s->b, f->x.b->base, n);
	free(s->a);
	free(s->b);
}

static void test_malformed_truncated(void **state)
{
	struct fx *f = record_all(state);
	struct mem_snap ms;

	snap_mem(f, &ms);
	for (unsigned i = 0; i < NOPS; i++) {
		const struct pair_pkt *pk = f->rec[all_ops[i]];
		int to = 1 - pk->from;
		struct engine_stats before;
		size_t need = hdr_len(all_ops[i]);

		assert_true(pk->len >= need);
		get_stats(f, to, &before);
		for (size_t len = 0; len < need; len++) {
			int ret = pair_rx(f->x.p, to, pk->data, len, (uint32_t)pk->from, pk->sport);

			if (ret != -EMSGSIZE)
				fail_msg("opcode 0x%02x cut to %zu bytes: %d", all_ops[i], len, ret);
		}
		pair_expect_only_malformed(f->x.p, to, &before, WIRE_ERR_SHORT, need);
		pair_pump(f->x.p);
		pair_expect_none(f->x.p, PAIR_A);
		pair_expect_none(f->x.p, PAIR_B);
	}
	check_mem(f, &ms);
}

/* Does wire_parse know this opcode?  (A data header's worth of zeros follows it.) */
static int op_defined(unsigned op)
{
	uint8_t b[MROC_DATA_OVERHEAD + MROC_ACK_HDR_LEN] = { MROC_WIRE_VERSION, (uint8_t)op };
	struct wire_pkt pkt;
	enum wire_err why;

	wire_parse(b, sizeof(b), &pkt, &why);
	return why != WIRE_ERR_OPCODE;
}

static void feed_bad(struct fx *f, const struct pair_pkt *pk, unsigned off, uint8_t val,
		     enum wire_err why)
{
	int to = 1 - pk->from;
	struct engine_stats before;
	struct pair_pkt bad = *pk;
	int ret;

	bad.data[off] = val;
	get_stats(f, to, &before);
	ret = pair_deliver(f->x.p, &bad);
	if (ret != -EBADMSG)
		fail_msg("opcode 0x%02x, byte %u = 0x%02x: %d", pk->data[PKT_OPCODE], off, val, ret);
	pair_expect_only_malformed(f->x.p, to, &before, why, 1);
}

static void test_malformed_fields(void **state)
{
	static const uint8_t versions[] = { 0, 2, 3, 0x81, 0xff };
	static const uint8_t paths[] = { MROC_MAX_PATHS, MROC_MAX_PATHS + 1, 0x80, 0xff };
	struct fx *f = record_all(state);
	struct mem_snap ms;
	unsigned ndefined = 0;

	for (unsigned op = 0; op < 256; op++)
		ndefined += op_defined(op);
	/* The opcodes of docs/PROTOCOL.md 3.5, and hardly anything else. */
	for (unsigned i = 0; i < NOPS; i++)
		assert_true(op_defined(all_ops[i]));
	assert_in_range(ndefined, NOPS, NOPS + 2);
	snap_mem(f, &ms);
	for (unsigned i = 0; i < NOPS; i++) {
		const struct pair_pkt *pk = f->rec[all_ops[i]];

		for (unsigned k = 0; k < sizeof(versions); k++)
			feed_bad(f, pk, PKT_VERSION, versions[k], WIRE_ERR_VERSION);
		/* 0x01 ACK_REQ, 0x02 RETX, 0x04 SPLIT (test_engine_split) */
		for (unsigned bit = 3; bit < 8; bit++)
			feed_bad(f, pk, PKT_FLAGS, (uint8_t)(pk->data[PKT_FLAGS] | 1u << bit),
				 WIRE_ERR_FLAGS);
		feed_bad(f, pk, PKT_FLAGS, 0xff, WIRE_ERR_FLAGS);
		for (unsigned k = 0; k < sizeof(paths); k++)
			feed_bad(f, pk, PKT_PATH, paths[k], WIRE_ERR_PATH);
		for (unsigned op = 0; op < 256; op++)
			if (!op_defined(op))
				feed_bad(f, pk, PKT_OPCODE, (uint8_t)op, WIRE_ERR_OPCODE);
		pair_pump(f->x.p);
		pair_expect_none(f->x.p, PAIR_A);
		pair_expect_none(f->x.p, PAIR_B);
	}
	check_mem(f, &ms);
}

/* Data lengths that do not add up (docs/PROTOCOL.md 3.2, 5.2). */
static void test_malformed_lengths(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 2 * MTU + 10, 0);
	struct engine_stats before;
	struct pair_capture *cap;
	struct pair_pkt seg[3], bad;

	post(f, &wr);
	wr = pair_fx_wr(&f->x, ENGINE_WR_READ, 2, 0, 500, 0);
	post(f, &wr);
	cap = capture_a_data(f, 4);
	memcpy(seg, cap->pkt, sizeof(seg));

	/* A header and no payload although msg_len > 0. */
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_rx(f->x.p, PAIR_B, seg[0].data, MROC_DATA_OVERHEAD, PAIR_A, seg[0].sport),
			 -EBADMSG);
	pair_expect_only_malformed(f->x.p, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
	/* offset + payload beyond msg_len. */
	bad = seg[2];
	pkt_put32(bad.data, PKT_MSG_LEN, 2 * MTU + 9);
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_deliver(f->x.p, &bad), -EBADMSG);
	pair_expect_only_malformed(f->x.p, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
	bad = seg[1];
	pkt_put32(bad.data, PKT_OFFSET, 0xffffff00u);
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_deliver(f->x.p, &bad), -EBADMSG);
	pair_expect_only_malformed(f->x.p, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
	/* A READ_REQ with a payload, or an offset. */
	bad = cap->pkt[3];
	assert_int_equal(bad.data[PKT_OPCODE], MROC_OP_READ_REQ);
	bad.len++;
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_deliver(f->x.p, &bad), -EBADMSG);
	pair_expect_only_malformed(f->x.p, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
	bad = cap->pkt[3];
	pkt_put32(bad.data, PKT_OFFSET, MTU);
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_deliver(f->x.p, &bad), -EBADMSG);
	pair_expect_only_malformed(f->x.p, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
	/* An offset that is not a multiple of the sender's MTU (checked by the engine). */
	bad = seg[1];
	pkt_put32(bad.data, PKT_OFFSET, MTU - 24);
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_deliver(f->x.p, &bad), -EBADMSG);
	pair_expect_only_malformed(f->x.p, PAIR_B, &before, WIRE_ERR_LENGTH, 1);

	pair_mem_untouched(f->x.b);
	pair_pump(f->x.p);
	pair_expect_none(f->x.p, PAIR_A);
	pair_expect_none(f->x.p, PAIR_B);
	/* The real packets still go through. */
	pair_capture_stop(f->x.p);
	for (int k = 0; k < 4; k++)
		assert_int_equal(pair_deliver(f->x.p, &cap->pkt[k]), 0);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_SUCCESS, 2);
}

/*
 * A data segment cut short inside its payload still parses (offset + payload
 * <= msg_len), but its payload is not min(mtu, msg_len - offset) bytes
 * (docs/PROTOCOL.md 5.2): it must be refused as malformed and nothing of it
 * written.  (Regression: such segments used to be placed, their DSN marked
 * received, and the message completed with bytes missing; fixed in 77defe7.)
 */
static void test_truncated_payload(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 2 * MTU + 100, 0);
	struct pair_capture *cap;
	struct pair_pkt seg[3];

	post(f, &wr);
	cap = capture_a_data(f, 3);
	memcpy(seg, cap->pkt, sizeof(seg));
	for (int k = 0; k < 3; k++) {
		uint32_t full = seg[k].len - MROC_DATA_OVERHEAD;

		for (uint32_t plen = 1; plen < full; plen += (plen < 8 ? 1 : 97)) {
			struct engine_stats before;
			uint64_t placed = stat_b(f, EC_RX_BYTES_PLACED);
			int ret;

			get_stats(f, PAIR_B, &before);
			ret = pair_rx(f->x.p, PAIR_B, seg[k].data, MROC_DATA_OVERHEAD + plen, PAIR_A,
				      seg[k].sport);
			if (ret >= 0 || stat_b(f, EC_RX_BYTES_PLACED) != placed)
				fail_msg("segment %d cut to %u of %u payload bytes: accepted (%d), "
					 "%llu bytes placed", k, plen, full, ret,
					 (unsigned long long)(stat_b(f, EC_RX_BYTES_PLACED) - placed));
			pair_expect_only_malformed(f->x.p, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
		}
	}
	pair_mem_untouched(f->x.b);
	/* The whole segments complete the WRITE intact. */
	pair_capture_stop(f->x.p);
	for (int k = 0; k < 3; k++)
		pair_deliver(f->x.p, &seg[k]);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_mem_expect(f->x.b, 0, f->x.a->buf, 2 * MTU + 100);
}

/* ---- keys and bounds ------------------------------------------------------------- */

enum alter {
	ALTER_KEY_FLIP,		/* an rkey nobody registered */
	ALTER_KEY_NO_WRITE,	/* a region without REMOTE_WRITE */
	ALTER_KEY_OTHER_PD,	/* a region of another protection domain */
	ALTER_KEY_WRAPPED_PD,	/* ... one whose id is the QP's plus 2^32 (#24 item 9) */
	ALTER_PAST_END,		/* last byte one past the region */
	ALTER_START_AT_END,	/* raddr = region length */
	ALTER_RADDR_HUGE,	/* raddr + len overflows 64 bits */
	ALTER_OFFSET_WRAP,	/* raddr + offset wraps to 0 */
};

struct bounds_case {
	enum alter alter;
	enum engine_counter counter;
};

static void run_bounds_case(void **state)
{
	const struct bounds_case *bc = *state;
	struct fx *f = fx_new(state, NULL, NULL);
	struct pair_mem *ro, *pd2, *pdw;
	uint32_t len = bc->alter == ALTER_OFFSET_WRAP ? 2 * MTU + 10 : 100;
	uint64_t raddr = bc->alter == ALTER_PAST_END ? REG_LEN - 100 : 0;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 9, 0, len, raddr);
	struct pair_capture *cap;
	struct pair_pkt pk;
	uint64_t other = bc->counter == EC_RX_ACCESS_ERR ? EC_RX_BOUNDS_ERR : EC_RX_ACCESS_ERR;

	ro = pair_mem_new(f->x.p, PAIR_B, 4096, 1, ENGINE_ACCESS_LOCAL_WRITE | ENGINE_ACCESS_REMOTE_READ);
	pd2 = pair_mem_new(f->x.p, PAIR_B, 4096, 2, ENGINE_ACCESS_ALL);
	/*
	 * Domain 2^32 + 1: mrocd's 2^32-th client after the first (whose domain,
	 * 1, B's QP has).  Ids cut to 32 bits were one domain: a client could
	 * reach the other's memory (test_clients.c test_pd_no_wrap: mrocd never
	 * hands out the same id; here: the engine tells them apart).
	 */
	pdw = pair_mem_new(f->x.p, PAIR_B, 4096, (1ULL << 32) + 1, ENGINE_ACCESS_ALL);
	pair_connect(f->x.p, NULL, NULL, SVC);
	post(f, &wr);
	cap = capture_a_data(f, bc->alter == ALTER_OFFSET_WRAP ? 3 : 1);
	pk = cap->pkt[bc->alter == ALTER_OFFSET_WRAP ? 1 : 0];
	switch (bc->alter) {
	case ALTER_KEY_FLIP:
		pkt_put32(pk.data, PKT_KEY, f->x.b->rkey ^ 0x00f0f000u);
		break;
	case ALTER_KEY_NO_WRITE:
		pkt_put32(pk.data, PKT_KEY, ro->rkey);
		break;
	case ALTER_KEY_OTHER_PD:
		pkt_put32(pk.data, PKT_KEY, pd2->rkey);
		break;
	case ALTER_KEY_WRAPPED_PD:
		pkt_put32(pk.data, PKT_KEY, pdw->rkey);
		break;
	case ALTER_PAST_END:
		pkt_put64(pk.data, PKT_RADDR, REG_LEN - 99);
		break;
	case ALTER_START_AT_END:
		pkt_put64(pk.data, PKT_RADDR, REG_LEN);
		break;
	case ALTER_RADDR_HUGE:
		pkt_put64(pk.data, PKT_RADDR, UINT64_MAX - 49);
		break;
	case ALTER_OFFSET_WRAP:
		assert_int_equal(pkt_get32(pk.data, PKT_OFFSET), MTU);
		pkt_put64(pk.data, PKT_RADDR, 0 - (uint64_t)MTU);
		break;
	}
	assert_true(pair_deliver(f->x.p, &pk) < 0);
	assert_int_equal(stat_b(f, bc->counter), 1);
	assert_int_equal(stat_b(f, other), 0);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
	pair_mem_untouched(f->x.b);
	pair_mem_untouched(ro);
	pair_mem_untouched(pd2);
	pair_mem_untouched(pdw);

	/* The NAK reaches A: the WR fails, the QP is in error, B is told. */
	pair_capture_stop(f->x.p);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_REM_ACCESS_ERR, 9);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	pair_expect_none(f->x.p, PAIR_A);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_ERROR);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_EV_DISCONNECTED, PAIR_ANY_STATUS, 0xb);
	pair_mem_untouched(f->x.b);
	pair_mem_untouched(ro);
	pair_mem_untouched(pd2);
	pair_mem_untouched(pdw);
	/* Work posted now is refused. */
	assert_true(pair_post(f->x.p, PAIR_A, &wr) < 0);
}

static const struct bounds_case bc_key_flip = { ALTER_KEY_FLIP, EC_RX_ACCESS_ERR };
static const struct bounds_case bc_no_write = { ALTER_KEY_NO_WRITE, EC_RX_ACCESS_ERR };
static const struct bounds_case bc_other_pd = { ALTER_KEY_OTHER_PD, EC_RX_ACCESS_ERR };
static const struct bounds_case bc_wrapped_pd = { ALTER_KEY_WRAPPED_PD, EC_RX_ACCESS_ERR };
static const struct bounds_case bc_past_end = { ALTER_PAST_END, EC_RX_BOUNDS_ERR };
static const struct bounds_case bc_at_end = { ALTER_START_AT_END, EC_RX_BOUNDS_ERR };
static const struct bounds_case bc_huge = { ALTER_RADDR_HUGE, EC_RX_BOUNDS_ERR };
static const struct bounds_case bc_wrap = { ALTER_OFFSET_WRAP, EC_RX_BOUNDS_ERR };

/* The control: exactly up to the last byte of the region is fine. */
static void test_write_to_region_end(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 1, 0, 3 * MTU, REG_LEN - 3 * MTU);

	post(f, &wr);
	wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE, 2, 0, 1, REG_LEN - 1);
	post(f, &wr);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 2);
	assert_memory_equal(f->x.b->buf + REG_LEN - 3 * MTU, f->x.a->buf, 3 * MTU - 1);
	assert_int_equal(f->x.b->buf[REG_LEN - 1], f->x.a->buf[0]);
	for (int i = 0; i < PAIR_GUARD_LEN; i++)
		assert_int_equal(f->x.b->buf[REG_LEN + i], PAIR_CANARY);
}

static void expect_read_refused(struct fx *f, struct engine_wr *wr, enum engine_counter ctr)
{
	pair_mem_reset(f->x.a);
	post(f, wr);
	settle(f);
	assert_int_equal(stat_b(f, ctr), 1);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_REM_ACCESS_ERR, wr->wr_id);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	assert_int_equal(pair_state(f->x.p, PAIR_A), ENGINE_QPS_ERROR);
	pair_mem_untouched(f->x.a);
}

static void test_read_without_remote_read(void **state)
{
	struct fx *f = fx_new(state, NULL, NULL);
	struct pair_mem *wo = pair_mem_new(f->x.p, PAIR_B, 4096, 1, ENGINE_ACCESS_REMOTE_WRITE);
	struct engine_wr wr;

	pair_mem_fill(wo, 3);
	pair_connect(f->x.p, NULL, NULL, SVC);
	wr = pair_fx_wr(&f->x, ENGINE_WR_READ, 5, 0, 100, 0);
	wr.rkey = wo->rkey;
	expect_read_refused(f, &wr, EC_RX_ACCESS_ERR);
}

static void test_read_past_end(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_READ, 6, 0, 100, REG_LEN - 99);

	expect_read_refused(f, &wr, EC_RX_BOUNDS_ERR);
}

static void test_send_too_long_for_recv(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_SEND, 7, 0, 101, 0);

	recv_b(f, 70, 1000, 100);
	post(f, &wr);
	settle(f);
	assert_int_equal(stat_b(f, EC_RX_BOUNDS_ERR), 1);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_SEND, ENGINE_WC_REM_INV_REQ_ERR, 7);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	/* The RECV was never written; the QP closes under it. */
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_FLUSH_ERR, 70);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_EV_DISCONNECTED, PAIR_ANY_STATUS, 0xb);
	pair_mem_untouched(f->x.b);
}

/* A refused WRITE_IMM does not consume its RECV: the RECV is flushed, not completed. */
static void test_write_imm_refused_keeps_recv(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_WRITE_IMM, 4, 0, 100, REG_LEN - 50);

	recv_b(f, 60, 0, 0);
	post(f, &wr);
	settle(f);
	assert_int_equal(stat_b(f, EC_RX_BOUNDS_ERR), 1);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_WRITE_IMM, ENGINE_WC_REM_ACCESS_ERR, 4);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_RECV, ENGINE_WC_FLUSH_ERR, 60);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_EV_DISCONNECTED, PAIR_ANY_STATUS, 0xb);
	pair_mem_untouched(f->x.b);
}

/*
 * A READ_RESP that names no outstanding READ of the requester, or does not
 * match its length, is refused at the requester, nothing written; the NAK
 * (INVALID) puts the responder in error, and the READ is flushed.  ctr is
 * the counter it must move, or EC__COUNT for either of ACCESS and BOUNDS.
 */
static void read_resp_refused(void **state, bool other_key, enum engine_counter ctr)
{
	struct fx *f = *state;
	struct engine_wr wr = pair_fx_wr(&f->x, ENGINE_WR_READ, 8, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt pk;

	pair_mem_reset(f->x.a);
	post(f, &wr);
	cap = pair_capture_data(f->x.p, PAIR_B, 1);
	pk = cap->pkt[0];
	assert_int_equal(pk.data[PKT_OPCODE], MROC_OP_READ_RESP);
	if (other_key) {
		pkt_put32(pk.data, PKT_KEY, pkt_get32(pk.data, PKT_KEY) + 5);
	} else {
		/* The first MTU of a longer READ than A asked for. */
		pkt_put32(pk.data, PKT_MSG_LEN, 2 * MTU);
		pk.len = MROC_DATA_OVERHEAD + MTU;
		memset(pk.data + MROC_DATA_OVERHEAD, 0x11, MTU);
	}
	assert_true(pair_deliver(f->x.p, &pk) < 0);
	if (ctr == EC__COUNT)
		assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RX_ACCESS_ERR) +
				 pair_stat(f->x.p, PAIR_A, EC_RX_BOUNDS_ERR), 1);
	else
		assert_int_equal(pair_stat(f->x.p, PAIR_A, ctr), 1);
	assert_int_equal(pair_stat(f->x.p, PAIR_A, EC_RX_BYTES_PLACED), 0);
	pair_mem_untouched(f->x.a);
	pair_capture_stop(f->x.p);
	settle(f);
	pair_expect(f->x.p, PAIR_B, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xb);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_FLUSH_ERR, 8);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_EV_DISCONNECTED, PAIR_ANY_STATUS, 0xa);
	pair_mem_untouched(f->x.a);
}

static void test_read_resp_no_read(void **state)
{
	read_resp_refused(state, true, EC__COUNT);
}

/*
 * ... counted as "READ_RESP for no outstanding READ": EC_RX_ACCESS_ERR
 * (docs/PROTOCOL.md 12).  (Regression: it was counted EC_RX_BOUNDS_ERR;
 * fixed in 5203210.)
 */
static void test_read_resp_no_read_counter(void **state)
{
	read_resp_refused(state, true, EC_RX_ACCESS_ERR);
}

/* "larger than ... the READ": EC_RX_BOUNDS_ERR (docs/PROTOCOL.md 12). */
static void test_read_resp_too_long(void **state)
{
	read_resp_refused(state, false, EC_RX_BOUNDS_ERR);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TB(fn) cmocka_unit_test_setup_teardown(fn, setup_bare, teardown)
#define TBOUNDS(name, bc) \
	{ "test_write_refused_" name, run_bounds_case, NULL, teardown, (void *)&(bc) }
	const struct CMUnitTest tests[] = {
		TB(test_malformed_truncated),
		TB(test_malformed_fields),
		T(test_malformed_lengths),
		T(test_truncated_payload),
		TBOUNDS("bad_rkey", bc_key_flip),
		TBOUNDS("no_remote_write", bc_no_write),
		TBOUNDS("other_pd", bc_other_pd),
		TBOUNDS("wrapped_pd", bc_wrapped_pd),
		TBOUNDS("one_past_end", bc_past_end),
		TBOUNDS("start_at_end", bc_at_end),
		TBOUNDS("raddr_overflow", bc_huge),
		TBOUNDS("raddr_offset_wrap", bc_wrap),
		T(test_write_to_region_end),
		TB(test_read_without_remote_read),
		T(test_read_past_end),
		T(test_send_too_long_for_recv),
		T(test_write_imm_refused_keeps_recv),
		T(test_read_resp_no_read),
		T(test_read_resp_no_read_counter),
		T(test_read_resp_too_long),
	};
#undef T
#undef TB
#undef TBOUNDS

	return cmocka_run_group_tests(tests, NULL, NULL);
}

