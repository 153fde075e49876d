// SPDX-License-Identifier: MIT
/*
 * The engine's receive path, two engines back to back (engine_pair.h):
 * every operation byte-exact with its completions, out-of-order placement,
 * duplicates, malformed and truncated packets of every type, rkey and bounds
 * checks with canaries around every region, RNR, packets for unknown QPs or
 * from the wrong peer, and the PSN / DSN / MSN windows.
 *
 * Packets are altered at the byte offsets of docs/PROTOCOL.md 3.1-3.3 (the
 * PKT_* names of engine_pair.h) and fed straight to engine_rx.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_pair.h"

#define REG_LEN		(256 * 1024)
#define MTU		1024
#define SVC		42

struct fx {
	struct pair *p;
	struct pair_mem *a, *b;	/* A: source and READ destination; B: target */
	struct pair_pkt *rec[256];	/* first packet of each opcode seen (test_malformed_*) */
};

static struct fx *fx_new(void **state, const struct engine_config *ca,
			 const struct engine_config *cb)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	*state = f;
	f->p = pair_new(ca, cb);
	f->a = pair_mem_new(f->p, PAIR_A, REG_LEN, 1, ENGINE_ACCESS_ALL);
	f->b = pair_mem_new(f->p, PAIR_B, REG_LEN, 1, ENGINE_ACCESS_ALL);
	pair_mem_fill(f->a, 1);
	return f;
}

static int setup(void **state)
{
	struct fx *f = fx_new(state, NULL, NULL);

	pair_connect(f->p, NULL, NULL, SVC);
	return 0;
}

static int setup_bare(void **state)
{
	*state = NULL;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f)
		return 0;
	for (int i = 0; i < 256; i++)
		free(f->rec[i]);
	pair_free(f->p);
	free(f);
	return 0;
}

static struct engine_wr wr_of(struct fx *f, uint8_t op, uint64_t id, uint64_t laddr, uint32_t len,
			      uint64_t raddr)
{
	return (struct engine_wr){
		.wr_id = id, .opcode = op, .flags = ENGINE_WR_SIGNALED, .lkey = f->a->lkey,
		.laddr = laddr, .len = len, .rkey = f->b->rkey, .raddr = raddr,
	};
}

static void post(struct fx *f, const struct engine_wr *wr)
{
	assert_int_equal(pair_post(f->p, PAIR_A, wr), 0);
}

static void recv_b(struct fx *f, uint64_t id, uint64_t laddr, uint32_t len)
{
	assert_int_equal(pair_post_recv(f->p, PAIR_B, id, f->b->lkey, laddr, len), 0);
}

static void settle(struct fx *f)
{
	pair_run_for(f->p, 3 * PAIR_MS);
}

static uint64_t stat_b(struct fx *f, enum engine_counter c)
{
	return pair_stat(f->p, PAIR_B, c);
}

static void get_stats(struct fx *f, int side, struct engine_stats *st)
{
	engine_get_stats(f->p->s[side].eng, st);
}

/* Since *before, side counted exactly n more packets, all malformed for `why`, nothing else. */
static void expect_only_malformed(struct fx *f, int side, const struct engine_stats *before,
				  enum wire_err why, uint64_t n)
{
	struct engine_stats now, want = *before;

	get_stats(f, side, &now);
	want.c[EC_RX_PKTS] += n;
	want.c[EC_RX_MALFORMED] += n;
	want.rx_malformed[why] += n;
	for (int c = 0; c < EC__COUNT; c++)
		if (now.c[c] != want.c[c])
			fail_msg("side %c: %s is %llu, want %llu", "AB"[side],
				 engine_counter_name((enum engine_counter)c),
				 (unsigned long long)now.c[c], (unsigned long long)want.c[c]);
	for (int w = 0; w < WIRE_ERR__COUNT; w++)
		if (now.rx_malformed[w] != want.rx_malformed[w])
			fail_msg("side %c: rx_malformed[%s] is %llu, want %llu", "AB"[side],
				 wire_err_name((enum wire_err)w),
				 (unsigned long long)now.rx_malformed[w],
				 (unsigned long long)want.rx_malformed[w]);
}

/* Capture A's data packets (dropping them) while the work posted so far goes out. */
static struct pair_capture *capture_a_data(struct fx *f, unsigned want)
{
	struct pair_capture *cap = pair_capture_start(f->p, PAIR_A, 0, false);

	pair_pump(f->p);
	assert_int_equal(cap->n, want);
	return cap;
}

/* ---- transfers ------------------------------------------------------------------- */

static void test_connected(void **state)
{
	struct fx *f = *state;
	struct engine_qp_info ia, ib;

	assert_int_equal(engine_qp_info(f->p->s[PAIR_A].eng, f->p->s[PAIR_A].qpn, &ia), 0);
	assert_int_equal(engine_qp_info(f->p->s[PAIR_B].eng, f->p->s[PAIR_B].qpn, &ib), 0);
	assert_int_equal(ia.peer, PAIR_B);
	assert_int_equal(ib.peer, PAIR_A);
	assert_int_equal(ia.peer_qpn, f->p->s[PAIR_B].qpn);
	assert_int_equal(ib.peer_qpn, f->p->s[PAIR_A].qpn);
	assert_int_equal(ia.npaths, 4);
	assert_int_equal(ia.mode, MROC_MODE_METAROCE);
	assert_int_equal(f->p->s[PAIR_A].sent[MROC_OP_CONNECT_REQ], 1);
	assert_int_equal(f->p->s[PAIR_B].sent[MROC_OP_CONNECT_REP], 1);
	assert_int_equal(f->p->s[PAIR_A].stray + f->p->s[PAIR_B].stray, 0);
	pair_expect_none(f->p, PAIR_A);
	pair_expect_none(f->p, PAIR_B);
}

static const uint32_t sizes[] = {
	1, 100, MTU - 1, MTU, MTU + 1, 3 * MTU, 5 * MTU + 77, 40000,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void test_write(void **state)
{
	struct fx *f = *state;

	for (unsigned i = 0; i < NSIZES; i++) {
		uint64_t placed = stat_b(f, EC_RX_BYTES_PLACED);
		struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 10 + i, 13 * i, sizes[i], 1000 + i);
		const struct engine_cqe *c;

		pair_mem_reset(f->b);
		post(f, &wr);
		settle(f);
		c = pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 10 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		assert_int_equal(c->qpn, f->p->s[PAIR_A].qpn);
		pair_expect_none(f->p, PAIR_A);
		pair_expect_none(f->p, PAIR_B);	/* a plain WRITE is silent at the target */
		pair_mem_expect(f->b, 1000 + i, f->a->buf + 13 * i, sizes[i]);
		assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED) - placed, sizes[i]);
	}
}

static void test_write_imm(void **state)
{
	struct fx *f = *state;

	for (unsigned i = 0; i < NSIZES; i++) {
		struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE_IMM, 20 + i, 7 * i, sizes[i], 64 * i);
		const struct engine_cqe *c;

		wr.imm = 0xabc00000u + i;
		pair_mem_reset(f->b);
		/* The RECV a WRITE_IMM consumes needs no buffer. */
		assert_int_equal(pair_post_recv(f->p, PAIR_B, 200 + i, 0, 0, 0), 0);
		post(f, &wr);
		settle(f);
		c = pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE_IMM, MROC_WC_SUCCESS, 20 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		c = pair_expect(f->p, PAIR_B, ENGINE_WC_RECV_RDMA_IMM, MROC_WC_SUCCESS, 200 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		assert_int_equal(c->imm, 0xabc00000u + i);
		assert_int_equal(c->flags, ENGINE_WC_WITH_IMM);
		assert_int_equal(c->qpn, f->p->s[PAIR_B].qpn);
		pair_mem_expect(f->b, 64 * i, f->a->buf + 7 * i, sizes[i]);
		pair_expect_none(f->p, PAIR_A);
		pair_expect_none(f->p, PAIR_B);
	}
}

static void do_send(struct fx *f, uint8_t op)
{
	for (unsigned i = 0; i < NSIZES; i++) {
		struct engine_wr wr = wr_of(f, op, 30 + i, 5 * i, sizes[i], 0);
		const struct engine_cqe *c;

		wr.rkey = 0;
		wr.imm = 0x5e000000u + i;
		pair_mem_reset(f->b);
		recv_b(f, 300 + i, 500, 64 * 1024);
		post(f, &wr);
		settle(f);
		c = pair_expect(f->p, PAIR_A, op == ENGINE_WR_SEND ? ENGINE_WC_SEND :
				ENGINE_WC_SEND_IMM, MROC_WC_SUCCESS, 30 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		c = pair_expect(f->p, PAIR_B, ENGINE_WC_RECV, MROC_WC_SUCCESS, 300 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		if (op == ENGINE_WR_SEND_IMM) {
			assert_int_equal(c->flags, ENGINE_WC_WITH_IMM);
			assert_int_equal(c->imm, 0x5e000000u + i);
		} else {
			assert_int_equal(c->flags, 0);
		}
		pair_mem_expect(f->b, 500, f->a->buf + 5 * i, sizes[i]);
		pair_expect_none(f->p, PAIR_A);
		pair_expect_none(f->p, PAIR_B);
	}
}

static void test_send(void **state)
{
	do_send(*state, ENGINE_WR_SEND);
}

static void test_send_imm(void **state)
{
	do_send(*state, ENGINE_WR_SEND_IMM);
}

static void test_read(void **state)
{
	struct fx *f = *state;

	pair_mem_fill(f->b, 77);
	for (unsigned i = 0; i < NSIZES; i++) {
		struct engine_wr wr = wr_of(f, ENGINE_WR_READ, 40 + i, 300 + i, sizes[i], 11 * i);
		const struct engine_cqe *c;

		pair_mem_reset(f->a);
		post(f, &wr);
		settle(f);
		c = pair_expect(f->p, PAIR_A, ENGINE_WC_READ, MROC_WC_SUCCESS, 40 + i);
		assert_int_equal(c->byte_len, sizes[i]);
		pair_mem_expect(f->a, 300 + i, f->b->buf + 11 * i, sizes[i]);
		pair_expect_none(f->p, PAIR_A);
		pair_expect_none(f->p, PAIR_B);	/* the responder reports nothing */
	}
}

static void test_zero_length(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr;
	const struct engine_cqe *c;

	recv_b(f, 301, 0, 0);
	recv_b(f, 302, 0, 16);
	recv_b(f, 303, 0, 0);
	wr = wr_of(f, ENGINE_WR_SEND, 1, 0, 0, 0);
	post(f, &wr);
	wr = wr_of(f, ENGINE_WR_SEND_IMM, 2, 0, 0, 0);
	wr.imm = 0x1111;
	post(f, &wr);
	wr = wr_of(f, ENGINE_WR_WRITE_IMM, 3, 0, 0, 0);
	wr.imm = 0x2222;
	post(f, &wr);
	wr = wr_of(f, ENGINE_WR_WRITE, 4, 0, 0, 0);
	post(f, &wr);
	wr = wr_of(f, ENGINE_WR_READ, 5, 0, 0, 0);
	post(f, &wr);
	settle(f);
	for (int i = 0; i < 5; i++) {
		static const uint8_t ops[] = { ENGINE_WC_SEND, ENGINE_WC_SEND_IMM,
					       ENGINE_WC_WRITE_IMM, ENGINE_WC_WRITE, ENGINE_WC_READ };

		c = pair_expect(f->p, PAIR_A, ops[i], MROC_WC_SUCCESS, 1 + i);
		assert_int_equal(c->byte_len, 0);
	}
	c = pair_expect(f->p, PAIR_B, ENGINE_WC_RECV, MROC_WC_SUCCESS, 301);
	assert_int_equal(c->byte_len, 0);
	assert_int_equal(c->flags, 0);
	c = pair_expect(f->p, PAIR_B, ENGINE_WC_RECV, MROC_WC_SUCCESS, 302);
	assert_int_equal(c->byte_len, 0);
	assert_int_equal(c->flags, ENGINE_WC_WITH_IMM);
	assert_int_equal(c->imm, 0x1111);
	c = pair_expect(f->p, PAIR_B, ENGINE_WC_RECV_RDMA_IMM, MROC_WC_SUCCESS, 303);
	assert_int_equal(c->byte_len, 0);
	assert_int_equal(c->imm, 0x2222);
	pair_expect_none(f->p, PAIR_B);
	pair_mem_untouched(f->b);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
}

/* Mixed work: completions in posting order on A, RECVs consumed in order on B. */
static void test_completion_order(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr;
	const struct engine_cqe *c;

	pair_mem_fill(f->b, 5);
	recv_b(f, 101, 100000, 4096);
	recv_b(f, 102, 0, 0);
	recv_b(f, 103, 110000, 4096);
	post(f, &(struct engine_wr){ .wr_id = 1, .opcode = ENGINE_WR_WRITE,
				     .flags = ENGINE_WR_SIGNALED, .lkey = f->a->lkey, .laddr = 0,
				     .len = 3000, .rkey = f->b->rkey, .raddr = 50000 });
	wr = wr_of(f, ENGINE_WR_SEND, 2, 4000, 2000, 0);
	post(f, &wr);
	/* Reads what WRITE 1 wrote: delivery is in order. */
	wr = wr_of(f, ENGINE_WR_READ, 3, 60000, 3000, 50000);
	post(f, &wr);
	wr = wr_of(f, ENGINE_WR_WRITE_IMM, 4, 0, 100, 70000);
	wr.imm = 4;
	post(f, &wr);
	wr = wr_of(f, ENGINE_WR_SEND_IMM, 5, 8000, 1500, 0);
	wr.imm = 5;
	post(f, &wr);
	wr = wr_of(f, ENGINE_WR_WRITE, 6, 0, 10, 80000);
	wr.flags = 0;	/* unsignaled: no completion on success */
	post(f, &wr);
	wr = wr_of(f, ENGINE_WR_WRITE, 7, 0, 10, 80010);
	post(f, &wr);
	settle(f);

	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 1);
	pair_expect(f->p, PAIR_A, ENGINE_WC_SEND, MROC_WC_SUCCESS, 2);
	pair_expect(f->p, PAIR_A, ENGINE_WC_READ, MROC_WC_SUCCESS, 3);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE_IMM, MROC_WC_SUCCESS, 4);
	pair_expect(f->p, PAIR_A, ENGINE_WC_SEND_IMM, MROC_WC_SUCCESS, 5);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 7);
	pair_expect_none(f->p, PAIR_A);
	c = pair_expect(f->p, PAIR_B, ENGINE_WC_RECV, MROC_WC_SUCCESS, 101);
	assert_int_equal(c->byte_len, 2000);
	c = pair_expect(f->p, PAIR_B, ENGINE_WC_RECV_RDMA_IMM, MROC_WC_SUCCESS, 102);
	assert_int_equal(c->imm, 4);
	c = pair_expect(f->p, PAIR_B, ENGINE_WC_RECV, MROC_WC_SUCCESS, 103);
	assert_int_equal(c->imm, 5);
	pair_expect_none(f->p, PAIR_B);
	assert_memory_equal(f->b->buf + 50000, f->a->buf, 3000);
	assert_memory_equal(f->a->buf + 60000, f->a->buf, 3000);
	assert_memory_equal(f->b->buf + 100000, f->a->buf + 4000, 2000);
	assert_memory_equal(f->b->buf + 110000, f->a->buf + 8000, 1500);
	assert_memory_equal(f->b->buf + 70000, f->a->buf, 100);
	assert_memory_equal(f->b->buf + 80000, f->a->buf, 10);
	assert_memory_equal(f->b->buf + 80010, f->a->buf, 10);
}

/* ---- order of arrival ---------------------------------------------------------- */

/* A 5-segment WRITE delivered last segment first. */
static void test_reverse_order(void **state)
{
	struct fx *f = *state;
	uint32_t len = 5 * MTU - 100;
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, len, 100);
	struct pair_capture *cap;
	struct pair_pkt seg[5];

	post(f, &wr);
	cap = capture_a_data(f, 5);
	memcpy(seg, cap->pkt, sizeof(seg));
	for (int k = 0; k < 5; k++) {
		assert_int_equal(seg[k].data[PKT_OPCODE], MROC_OP_WRITE);
		assert_int_equal(pkt_get32(seg[k].data, PKT_DSN), pkt_get32(seg[0].data, PKT_DSN) + k);
		assert_int_equal(pkt_get32(seg[k].data, PKT_OFFSET), k * MTU);
	}
	for (int k = 4; k >= 0; k--) {
		uint32_t from = k * MTU, to = len;

		assert_int_equal(pair_deliver(f->p, &seg[k]), 0);
		/* Placed at once, wherever it falls in the message. */
		pair_mem_expect(f->b, 100 + from, f->a->buf + from, to - from);
		/*
		 * ACKs flow back, delayed ones too (A's probes and resends stay
		 * captured): no completion before the last segment.
		 */
		pair_run_for(f->p, 20 * PAIR_US);
		if (k)
			pair_expect_none(f->p, PAIR_A);
	}
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 1);
	pair_capture_stop(f->p);
	settle(f);
	pair_expect_none(f->p, PAIR_A);
	pair_expect_none(f->p, PAIR_B);
	pair_mem_expect(f->b, 100, f->a->buf, len);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), len);
}

/* A WRITE_IMM completes at the target only once the WRITE before it is placed. */
static void test_write_imm_waits_for_write(void **state)
{
	struct fx *f = *state;
	struct engine_wr w1 = wr_of(f, ENGINE_WR_WRITE, 1, 0, 3 * MTU, 0);
	struct engine_wr w2 = wr_of(f, ENGINE_WR_WRITE_IMM, 2, 5000, 200, 10000);
	struct pair_capture *cap;
	struct pair_pkt pk[4];
	const struct engine_cqe *c;

	w2.imm = 0xfeed;
	recv_b(f, 77, 0, 0);
	post(f, &w1);
	post(f, &w2);
	cap = capture_a_data(f, 4);
	memcpy(pk, cap->pkt, sizeof(pk));
	assert_int_equal(pk[3].data[PKT_OPCODE], MROC_OP_WRITE_IMM);

	assert_int_equal(pair_deliver(f->p, &pk[3]), 0);
	pair_run_for(f->p, 20 * PAIR_US);
	pair_expect_none(f->p, PAIR_B);
	pair_expect_none(f->p, PAIR_A);
	/* Its payload is placed already; only its completion waits. */
	assert_memory_equal(f->b->buf + 10000, f->a->buf + 5000, 200);
	for (int k = 2; k >= 0; k--) {
		assert_int_equal(pair_deliver(f->p, &pk[k]), 0);
		pair_run_for(f->p, 20 * PAIR_US);
		if (k) {
			pair_expect_none(f->p, PAIR_B);
			pair_expect_none(f->p, PAIR_A);
		}
	}
	c = pair_expect(f->p, PAIR_B, ENGINE_WC_RECV_RDMA_IMM, MROC_WC_SUCCESS, 77);
	assert_int_equal(c->imm, 0xfeed);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 1);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE_IMM, MROC_WC_SUCCESS, 2);
	assert_memory_equal(f->b->buf, f->a->buf, 3 * MTU);
	assert_memory_equal(f->b->buf + 10000, f->a->buf + 5000, 200);
}

/* ---- duplicates ------------------------------------------------------------------ */

static void test_duplicate_write(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, 200, 300);
	struct pair_capture *cap;
	struct pair_pkt pk;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	assert_int_equal(pair_deliver(f->p, &pk), 0);
	pair_mem_expect(f->b, 300, f->a->buf, 200);
	/* The application reuses the buffer: a duplicate must not place again. */
	memset(f->b->buf + 300, 0x77, 200);
	assert_int_equal(pair_deliver(f->p, &pk), -EALREADY);
	assert_int_equal(stat_b(f, EC_RX_DUP), 1);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 200);
	for (int i = 0; i < 200; i++)
		assert_int_equal(f->b->buf[300 + i], 0x77);
	pair_capture_stop(f->p);
	settle(f);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 1);
	pair_expect_none(f->p, PAIR_A);
	pair_expect_none(f->p, PAIR_B);
}

/* A duplicated SEND consumes one RECV, not two. */
static void test_duplicate_send(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_SEND, 1, 0, 300, 0);
	struct pair_capture *cap;
	struct engine_qp_info info;
	struct pair_pkt pk;

	recv_b(f, 11, 0, 1000);
	recv_b(f, 12, 1000, 1000);
	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	assert_int_equal(pair_deliver(f->p, &pk), 0);
	assert_int_equal(pair_deliver(f->p, &pk), -EALREADY);
	assert_int_equal(pair_deliver(f->p, &pk), -EALREADY);
	assert_int_equal(stat_b(f, EC_RX_DUP), 2);
	pair_capture_stop(f->p);
	settle(f);
	pair_expect(f->p, PAIR_B, ENGINE_WC_RECV, MROC_WC_SUCCESS, 11);
	pair_expect_none(f->p, PAIR_B);
	pair_expect(f->p, PAIR_A, ENGINE_WC_SEND, MROC_WC_SUCCESS, 1);
	pair_expect_none(f->p, PAIR_A);
	assert_int_equal(engine_qp_info(f->p->s[PAIR_B].eng, f->p->s[PAIR_B].qpn, &info), 0);
	assert_int_equal(info.rq_posted, 1);
	pair_mem_expect(f->b, 0, f->a->buf, 300);
}

/*
 * The same DSN again under a PSN its path has not seen (as a resend on another
 * path would be): a DSN duplicate, acknowledged but not placed again, both
 * while the message is incomplete (the DSN map) and after (below cum_dsn).
 */
static void test_duplicate_dsn_new_psn(void **state)
{
	struct fx *f = *state;
	uint32_t len = 2 * MTU + 50;
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, len, 0);
	struct pair_capture *cap;
	struct pair_pkt seg[3], fake;

	post(f, &wr);
	cap = capture_a_data(f, 3);
	memcpy(seg, cap->pkt, sizeof(seg));
	/* One segment per path, so PSN + 1 is a PSN its path has not used. */
	assert_int_not_equal(seg[0].data[PKT_PATH], seg[2].data[PKT_PATH]);
	assert_int_not_equal(seg[1].data[PKT_PATH], seg[2].data[PKT_PATH]);

	assert_int_equal(pair_deliver(f->p, &seg[2]), 0);
	memset(f->b->buf + 2 * MTU, 0x77, 50);
	fake = seg[2];
	pkt_put32(fake.data, PKT_PSN, pkt_get32(seg[2].data, PKT_PSN) + 1);
	fake.data[PKT_FLAGS] |= MROC_F_RETX;
	assert_int_equal(pair_deliver(f->p, &fake), -EALREADY);
	assert_int_equal(stat_b(f, EC_RX_DUP), 1);
	for (int i = 0; i < 50; i++)
		assert_int_equal(f->b->buf[2 * MTU + i], 0x77);

	assert_int_equal(pair_deliver(f->p, &seg[0]), 0);
	assert_int_equal(pair_deliver(f->p, &seg[1]), 0);
	pair_run_for(f->p, 20 * PAIR_US);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 1);

	memset(f->b->buf, 0x66, MTU);
	fake = seg[0];
	pkt_put32(fake.data, PKT_PSN, pkt_get32(seg[0].data, PKT_PSN) + 1);
	fake.data[PKT_FLAGS] |= MROC_F_RETX;
	assert_int_equal(pair_deliver(f->p, &fake), -EALREADY);
	assert_int_equal(stat_b(f, EC_RX_DUP), 2);
	for (int i = 0; i < MTU; i++)
		assert_int_equal(f->b->buf[i], 0x66);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), len);
	pair_capture_stop(f->p);
	settle(f);
	pair_expect_none(f->p, PAIR_A);
	pair_expect_none(f->p, PAIR_B);
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_CONNECTED);
}

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
	MROC_OP_READ_RESP, MROC_OP_ACK, MROC_OP_CONNECT_REQ, MROC_OP_CONNECT_REP,
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

	f->p->filter = record_filter;
	f->p->filter_arg = f;
	pair_connect(f->p, NULL, NULL, SVC);
	recv_b(f, 1, 0, 0);
	recv_b(f, 2, 4096, 4096);
	recv_b(f, 3, 0, 4096);
	for (uint8_t op = ENGINE_WR_WRITE; op <= ENGINE_WR_READ; op++) {
		wr = wr_of(f, op, op, 0, 100, 8192);
		post(f, &wr);
	}
	settle(f);
	/* CONNECT_REJ: nobody listens on 999. */
	q2 = pair_qp_create(f->p, PAIR_A, &attr);
	assert_int_equal(engine_qp_connect(f->p->s[PAIR_A].eng, q2, PAIR_B, 999, f->p->now), 0);
	pair_pump(f->p);
	/* DISCONNECT and DISCONNECT_ACK: a second connection, closed. */
	q3b = pair_qp_create(f->p, PAIR_B, &attr);
	q3a = pair_qp_create(f->p, PAIR_A, &attr);
	assert_int_equal(engine_qp_listen(f->p->s[PAIR_B].eng, q3b, 43), 0);
	assert_int_equal(engine_qp_connect(f->p->s[PAIR_A].eng, q3a, PAIR_B, 43, f->p->now), 0);
	pair_pump(f->p);
	assert_int_equal(engine_qp_disconnect(f->p->s[PAIR_A].eng, q3a, f->p->now), 0);
	settle(f);
	f->p->filter = NULL;
	for (unsigned i = 0; i < NOPS; i++)
		if (!f->rec[all_ops[i]])
			fail_msg("no packet with opcode 0x%02x was seen", all_ops[i]);
	for (uint8_t op = ENGINE_WR_WRITE; op <= ENGINE_WR_READ; op++)
		pair_expect(f->p, PAIR_A, op, MROC_WC_SUCCESS, op);
	/* Consume the rest; later checks look for new completions only. */
	while (pair_cqe(f->p, PAIR_A))
		;
	while (pair_cqe(f->p, PAIR_B))
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
	memcpy(s->a, f->a->base, n);
	memcpy(s->b, f->b->base, n);
}

static void check_mem(struct fx *f, struct mem_snap *s)
{
	size_t n = REG_LEN + 2 * PAIR_GUARD_LEN;

	assert_memory_equal(s->a, f->a->base, n);
	assert_memory_equal(s->b, f->b->base, n);
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
			int ret = pair_rx(f->p, to, pk->data, len, (uint32_t)pk->from, pk->sport);

			if (ret != -EMSGSIZE)
				fail_msg("opcode 0x%02x cut to %zu bytes: %d", all_ops[i], len, ret);
		}
		expect_only_malformed(f, to, &before, WIRE_ERR_SHORT, need);
		pair_pump(f->p);
		pair_expect_none(f->p, PAIR_A);
		pair_expect_none(f->p, PAIR_B);
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
	ret = pair_deliver(f->p, &bad);
	if (ret != -EBADMSG)
		fail_msg("opcode 0x%02x, byte %u = 0x%02x: %d", pk->data[PKT_OPCODE], off, val, ret);
	expect_only_malformed(f, to, &before, why, 1);
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
		for (unsigned bit = 2; bit < 8; bit++)
			feed_bad(f, pk, PKT_FLAGS, (uint8_t)(pk->data[PKT_FLAGS] | 1u << bit),
				 WIRE_ERR_FLAGS);
		feed_bad(f, pk, PKT_FLAGS, 0xff, WIRE_ERR_FLAGS);
		for (unsigned k = 0; k < sizeof(paths); k++)
			feed_bad(f, pk, PKT_PATH, paths[k], WIRE_ERR_PATH);
		for (unsigned op = 0; op < 256; op++)
			if (!op_defined(op))
				feed_bad(f, pk, PKT_OPCODE, (uint8_t)op, WIRE_ERR_OPCODE);
		pair_pump(f->p);
		pair_expect_none(f->p, PAIR_A);
		pair_expect_none(f->p, PAIR_B);
	}
	check_mem(f, &ms);
}

/* Data lengths that do not add up (docs/PROTOCOL.md 3.2, 5.2). */
static void test_malformed_lengths(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, 2 * MTU + 10, 0);
	struct engine_stats before;
	struct pair_capture *cap;
	struct pair_pkt seg[3], bad;

	post(f, &wr);
	wr = wr_of(f, ENGINE_WR_READ, 2, 0, 500, 0);
	post(f, &wr);
	cap = capture_a_data(f, 4);
	memcpy(seg, cap->pkt, sizeof(seg));

	/* A header and no payload although msg_len > 0. */
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_rx(f->p, PAIR_B, seg[0].data, MROC_DATA_OVERHEAD, PAIR_A, seg[0].sport),
			 -EBADMSG);
	expect_only_malformed(f, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
	/* offset + payload beyond msg_len. */
	bad = seg[2];
	pkt_put32(bad.data, PKT_MSG_LEN, 2 * MTU + 9);
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_deliver(f->p, &bad), -EBADMSG);
	expect_only_malformed(f, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
	bad = seg[1];
	pkt_put32(bad.data, PKT_OFFSET, 0xffffff00u);
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_deliver(f->p, &bad), -EBADMSG);
	expect_only_malformed(f, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
	/* A READ_REQ with a payload, or an offset. */
	bad = cap->pkt[3];
	assert_int_equal(bad.data[PKT_OPCODE], MROC_OP_READ_REQ);
	bad.len++;
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_deliver(f->p, &bad), -EBADMSG);
	expect_only_malformed(f, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
	bad = cap->pkt[3];
	pkt_put32(bad.data, PKT_OFFSET, MTU);
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_deliver(f->p, &bad), -EBADMSG);
	expect_only_malformed(f, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
	/* An offset that is not a multiple of the sender's MTU (checked by the engine). */
	bad = seg[1];
	pkt_put32(bad.data, PKT_OFFSET, MTU - 24);
	get_stats(f, PAIR_B, &before);
	assert_int_equal(pair_deliver(f->p, &bad), -EBADMSG);
	expect_only_malformed(f, PAIR_B, &before, WIRE_ERR_LENGTH, 1);

	pair_mem_untouched(f->b);
	pair_pump(f->p);
	pair_expect_none(f->p, PAIR_A);
	pair_expect_none(f->p, PAIR_B);
	/* The real packets still go through. */
	pair_capture_stop(f->p);
	for (int k = 0; k < 4; k++)
		assert_int_equal(pair_deliver(f->p, &cap->pkt[k]), 0);
	settle(f);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 1);
	pair_expect(f->p, PAIR_A, ENGINE_WC_READ, MROC_WC_SUCCESS, 2);
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
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, 2 * MTU + 100, 0);
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
			ret = pair_rx(f->p, PAIR_B, seg[k].data, MROC_DATA_OVERHEAD + plen, PAIR_A,
				      seg[k].sport);
			if (ret >= 0 || stat_b(f, EC_RX_BYTES_PLACED) != placed)
				fail_msg("segment %d cut to %u of %u payload bytes: accepted (%d), "
					 "%llu bytes placed", k, plen, full, ret,
					 (unsigned long long)(stat_b(f, EC_RX_BYTES_PLACED) - placed));
			expect_only_malformed(f, PAIR_B, &before, WIRE_ERR_LENGTH, 1);
		}
	}
	pair_mem_untouched(f->b);
	/* The whole segments complete the WRITE intact. */
	pair_capture_stop(f->p);
	for (int k = 0; k < 3; k++)
		pair_deliver(f->p, &seg[k]);
	settle(f);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 1);
	pair_mem_expect(f->b, 0, f->a->buf, 2 * MTU + 100);
}

/* ---- keys and bounds ------------------------------------------------------------- */

enum alter {
	ALTER_KEY_FLIP,		/* an rkey nobody registered */
	ALTER_KEY_NO_WRITE,	/* a region without REMOTE_WRITE */
	ALTER_KEY_OTHER_PD,	/* a region of another protection domain */
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
	struct pair_mem *ro, *pd2;
	uint32_t len = bc->alter == ALTER_OFFSET_WRAP ? 2 * MTU + 10 : 100;
	uint64_t raddr = bc->alter == ALTER_PAST_END ? REG_LEN - 100 : 0;
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 9, 0, len, raddr);
	struct pair_capture *cap;
	struct pair_pkt pk;
	uint64_t other = bc->counter == EC_RX_ACCESS_ERR ? EC_RX_BOUNDS_ERR : EC_RX_ACCESS_ERR;

	ro = pair_mem_new(f->p, PAIR_B, 4096, 1, ENGINE_ACCESS_LOCAL_WRITE | ENGINE_ACCESS_REMOTE_READ);
	pd2 = pair_mem_new(f->p, PAIR_B, 4096, 2, ENGINE_ACCESS_ALL);
	pair_connect(f->p, NULL, NULL, SVC);
	post(f, &wr);
	cap = capture_a_data(f, bc->alter == ALTER_OFFSET_WRAP ? 3 : 1);
	pk = cap->pkt[bc->alter == ALTER_OFFSET_WRAP ? 1 : 0];
	switch (bc->alter) {
	case ALTER_KEY_FLIP:
		pkt_put32(pk.data, PKT_KEY, f->b->rkey ^ 0x00f0f000u);
		break;
	case ALTER_KEY_NO_WRITE:
		pkt_put32(pk.data, PKT_KEY, ro->rkey);
		break;
	case ALTER_KEY_OTHER_PD:
		pkt_put32(pk.data, PKT_KEY, pd2->rkey);
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
	assert_true(pair_deliver(f->p, &pk) < 0);
	assert_int_equal(stat_b(f, bc->counter), 1);
	assert_int_equal(stat_b(f, other), 0);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
	pair_mem_untouched(f->b);
	pair_mem_untouched(ro);
	pair_mem_untouched(pd2);

	/* The NAK reaches A: the WR fails, the QP is in error, B is told. */
	pair_capture_stop(f->p);
	settle(f);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_REM_ACCESS_ERR, 9);
	pair_expect(f->p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	pair_expect_none(f->p, PAIR_A);
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_ERROR);
	pair_expect(f->p, PAIR_B, ENGINE_WC_EV_DISCONNECTED, PAIR_ANY_STATUS, 0xb);
	pair_mem_untouched(f->b);
	pair_mem_untouched(ro);
	pair_mem_untouched(pd2);
	/* Work posted now is refused. */
	assert_true(pair_post(f->p, PAIR_A, &wr) < 0);
}

static const struct bounds_case bc_key_flip = { ALTER_KEY_FLIP, EC_RX_ACCESS_ERR };
static const struct bounds_case bc_no_write = { ALTER_KEY_NO_WRITE, EC_RX_ACCESS_ERR };
static const struct bounds_case bc_other_pd = { ALTER_KEY_OTHER_PD, EC_RX_ACCESS_ERR };
static const struct bounds_case bc_past_end = { ALTER_PAST_END, EC_RX_BOUNDS_ERR };
static const struct bounds_case bc_at_end = { ALTER_START_AT_END, EC_RX_BOUNDS_ERR };
static const struct bounds_case bc_huge = { ALTER_RADDR_HUGE, EC_RX_BOUNDS_ERR };
static const struct bounds_case bc_wrap = { ALTER_OFFSET_WRAP, EC_RX_BOUNDS_ERR };

/* The control: exactly up to the last byte of the region is fine. */
static void test_write_to_region_end(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, 3 * MTU, REG_LEN - 3 * MTU);

	post(f, &wr);
	wr = wr_of(f, ENGINE_WR_WRITE, 2, 0, 1, REG_LEN - 1);
	post(f, &wr);
	settle(f);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 1);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 2);
	assert_memory_equal(f->b->buf + REG_LEN - 3 * MTU, f->a->buf, 3 * MTU - 1);
	assert_int_equal(f->b->buf[REG_LEN - 1], f->a->buf[0]);
	for (int i = 0; i < PAIR_GUARD_LEN; i++)
		assert_int_equal(f->b->buf[REG_LEN + i], PAIR_CANARY);
}

static void expect_read_refused(struct fx *f, struct engine_wr *wr, enum engine_counter ctr)
{
	pair_mem_reset(f->a);
	post(f, wr);
	settle(f);
	assert_int_equal(stat_b(f, ctr), 1);
	pair_expect(f->p, PAIR_A, ENGINE_WC_READ, MROC_WC_REM_ACCESS_ERR, wr->wr_id);
	pair_expect(f->p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_ERROR);
	pair_mem_untouched(f->a);
}

static void test_read_without_remote_read(void **state)
{
	struct fx *f = fx_new(state, NULL, NULL);
	struct pair_mem *wo = pair_mem_new(f->p, PAIR_B, 4096, 1, ENGINE_ACCESS_REMOTE_WRITE);
	struct engine_wr wr;

	pair_mem_fill(wo, 3);
	pair_connect(f->p, NULL, NULL, SVC);
	wr = wr_of(f, ENGINE_WR_READ, 5, 0, 100, 0);
	wr.rkey = wo->rkey;
	expect_read_refused(f, &wr, EC_RX_ACCESS_ERR);
}

static void test_read_past_end(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_READ, 6, 0, 100, REG_LEN - 99);

	expect_read_refused(f, &wr, EC_RX_BOUNDS_ERR);
}

static void test_send_too_long_for_recv(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_SEND, 7, 0, 101, 0);

	recv_b(f, 70, 1000, 100);
	post(f, &wr);
	settle(f);
	assert_int_equal(stat_b(f, EC_RX_BOUNDS_ERR), 1);
	pair_expect(f->p, PAIR_A, ENGINE_WC_SEND, MROC_WC_REM_INV_REQ_ERR, 7);
	pair_expect(f->p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	/* The RECV was never written; the QP closes under it. */
	pair_expect(f->p, PAIR_B, ENGINE_WC_RECV, MROC_WC_FLUSH_ERR, 70);
	pair_expect(f->p, PAIR_B, ENGINE_WC_EV_DISCONNECTED, PAIR_ANY_STATUS, 0xb);
	pair_mem_untouched(f->b);
}

/* ---- RNR --------------------------------------------------------------------------- */

/*
 * SEND with no RECV posted: RNR NAK, nothing completes; the RECV is posted,
 * and one RNR delay after the NAK the SEND is resent and completes
 * (docs/PROTOCOL.md 8.4), not only after the 4 * rto_min stall net (8.7).
 * (Regression: the NAK was acted on before the ACK's SACK walk, so no
 * segment waited in RNR state and the SEND completed at t0 + 800 us instead
 * of about t0 + 100 us; fixed in 77defe7.)
 */
static void test_rnr_then_recv(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_SEND, 1, 0, 2 * MTU + 5, 0);
	uint64_t t0 = f->p->now, delay = f->p->s[PAIR_A].cfg.rnr_delay_ns;
	const struct engine_cqe *c;

	post(f, &wr);
	pair_run_for(f->p, delay / 2);
	assert_true(stat_b(f, EC_RX_RNR) >= 1);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
	pair_expect_none(f->p, PAIR_A);
	pair_expect_none(f->p, PAIR_B);
	pair_mem_untouched(f->b);

	recv_b(f, 50, 200, 8192);
	/* One RNR delay after the NAK, the SEND goes again and completes. */
	pair_run(f->p, t0 + delay + delay / 2);
	c = pair_expect(f->p, PAIR_B, ENGINE_WC_RECV, MROC_WC_SUCCESS, 50);
	assert_int_equal(c->byte_len, 2 * MTU + 5);
	pair_expect(f->p, PAIR_A, ENGINE_WC_SEND, MROC_WC_SUCCESS, 1);
	pair_mem_expect(f->b, 200, f->a->buf, 2 * MTU + 5);
	settle(f);
	pair_expect_none(f->p, PAIR_A);
	pair_expect_none(f->p, PAIR_B);
}

static void rnr_exceeded(void **state, uint32_t retries)
{
	struct engine_config ca;
	struct fx *f;
	struct engine_wr wr;

	pair_test_config(&ca);
	ca.rnr_retry = retries;
	f = fx_new(state, &ca, NULL);
	pair_connect(f->p, NULL, NULL, SVC);
	wr = wr_of(f, ENGINE_WR_SEND_IMM, 3, 0, 100, 0);
	post(f, &wr);
	pair_run_for(f->p, 20 * PAIR_MS);
	/* The first NAK and one more per retry. */
	assert_int_equal(stat_b(f, EC_RX_RNR), retries + 1);
	pair_expect(f->p, PAIR_A, ENGINE_WC_SEND_IMM, MROC_WC_RNR_RETRY_EXC_ERR, 3);
	pair_expect(f->p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_ERROR);
	pair_mem_untouched(f->b);
}

static void test_rnr_retry_zero(void **state)
{
	rnr_exceeded(state, 0);
}

static void test_rnr_retry_two(void **state)
{
	rnr_exceeded(state, 2);
}

/* ---- who may send ---------------------------------------------------------------- */

static void test_unknown_qp(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, 100, 0);
	uint32_t qb = f->p->s[PAIR_B].qpn;
	const uint32_t bad[] = { 0, qb + 0x10000, qb ^ 0x8000, qb + 1, 0xffff, 0xffffffffu };
	struct pair_capture *cap;
	struct pair_pkt pk;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pk = cap->pkt[0];
		pkt_put32(pk.data, PKT_DST_QPN, bad[i]);
		assert_int_equal(pair_deliver(f->p, &pk), -ENOENT);
		assert_int_equal(stat_b(f, EC_RX_UNKNOWN_QP), i + 1);
	}
	/* A DISCONNECT for an unknown QP is answered, everything else is not. */
	pk = cap->pkt[0];
	pk.len = MROC_HDR_LEN + MROC_CM_HDR_LEN;
	pk.data[PKT_OPCODE] = MROC_OP_DISCONNECT;
	pk.data[PKT_FLAGS] = 0;
	pkt_put32(pk.data, PKT_DST_QPN, qb + 0x10000);
	assert_int_equal(pair_deliver(f->p, &pk), -ENOENT);
	assert_int_equal(stat_b(f, EC_RX_UNKNOWN_QP), 7);
	pair_pump(f->p);
	assert_int_equal(f->p->s[PAIR_B].sent[MROC_OP_DISCONNECT_ACK], 1);
	assert_int_equal(f->p->s[PAIR_B].sent[MROC_OP_ACK], 0);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
	pair_mem_untouched(f->b);
	pair_expect_none(f->p, PAIR_B);
	/* A's own QP is not disturbed by the answer. */
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_CONNECTED);
}

static void test_bad_peer(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt pk;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	/* Right QPs, wrong peer handle. */
	assert_int_equal(pair_rx(f->p, PAIR_B, pk.data, pk.len, 7, pk.sport), -EPERM);
	assert_int_equal(pair_rx(f->p, PAIR_B, pk.data, pk.len, PAIR_B, pk.sport), -EPERM);
	assert_int_equal(stat_b(f, EC_RX_BAD_PEER), 2);
	/* Right peer, wrong source QP. */
	pkt_put32(pk.data, PKT_SRC_QPN, f->p->s[PAIR_A].qpn + 0x10000);
	assert_int_equal(pair_deliver(f->p, &pk), -EPERM);
	assert_int_equal(stat_b(f, EC_RX_BAD_PEER), 3);
	pair_pump(f->p);
	assert_int_equal(f->p->s[PAIR_B].sent[MROC_OP_ACK], 0);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
	pair_mem_untouched(f->b);
	/* The genuine packet is still welcome. */
	pair_capture_stop(f->p);
	assert_int_equal(pair_deliver(f->p, &cap->pkt[0]), 0);
	settle(f);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 1);
	pair_mem_expect(f->b, 0, f->a->buf, 100);
}

/* Data for a QP that is no longer connected is dropped and counted. */
static void test_data_after_disconnect(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt pk;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	pair_capture_stop(f->p);
	assert_int_equal(engine_qp_disconnect(f->p->s[PAIR_A].eng, f->p->s[PAIR_A].qpn, f->p->now),
			 0);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_FLUSH_ERR, 1);
	pair_pump(f->p);
	pair_expect(f->p, PAIR_B, ENGINE_WC_EV_DISCONNECTED, PAIR_ANY_STATUS, 0xb);
	assert_int_equal(pair_state(f->p, PAIR_B), ENGINE_QPS_IDLE);
	assert_true(pair_deliver(f->p, &pk) < 0);
	assert_int_equal(stat_b(f, EC_RX_BAD_STATE), 1);
	assert_int_equal(stat_b(f, EC_RX_BYTES_PLACED), 0);
	pair_mem_untouched(f->b);
}

/* ---- windows ----------------------------------------------------------------------- */

static void test_psn_window(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt pk;
	uint32_t psn;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	psn = pkt_get32(pk.data, PKT_PSN);
	assert_int_equal(pkt_get32(pk.data, PKT_PSN_FLOOR), psn);
	/* cum + 257, with a floor too far below it to move the window. */
	pkt_put32(pk.data, PKT_PSN, psn + MROC_SACK_BITS + 1);
	assert_true(pair_deliver(f->p, &pk) < 0);
	pkt_put32(pk.data, PKT_PSN, psn + 100000);
	assert_true(pair_deliver(f->p, &pk) < 0);
	assert_int_equal(stat_b(f, EC_RX_OUT_OF_WINDOW), 2);
	pair_pump(f->p);
	assert_int_equal(f->p->s[PAIR_B].sent[MROC_OP_ACK], 0);	/* not acknowledged */
	pair_mem_untouched(f->b);
	/* cum + 256 is the last PSN inside: placed. */
	pkt_put32(pk.data, PKT_PSN, psn + MROC_SACK_BITS);
	assert_int_equal(pair_deliver(f->p, &pk), 0);
	pair_mem_expect(f->b, 0, f->a->buf, 100);
	pair_pump(f->p);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 1);
}

static void test_dsn_msn_window(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt pk;
	uint32_t dsn, msn;

	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	dsn = pkt_get32(pk.data, PKT_DSN);
	msn = pkt_get32(pk.data, PKT_MSN);
	pkt_put32(pk.data, PKT_DSN, dsn + MROC_DSN_WINDOW);
	assert_true(pair_deliver(f->p, &pk) < 0);
	pkt_put32(pk.data, PKT_DSN, dsn + 0x40000000u);
	assert_true(pair_deliver(f->p, &pk) < 0);
	pkt_put32(pk.data, PKT_DSN, dsn);
	pkt_put32(pk.data, PKT_MSN, msn + 1024);
	assert_true(pair_deliver(f->p, &pk) < 0);
	assert_int_equal(stat_b(f, EC_RX_OUT_OF_WINDOW), 3);
	pair_mem_untouched(f->b);
	/* The last DSN inside the window is placed (its message never completes). */
	pk = cap->pkt[0];
	pkt_put32(pk.data, PKT_DSN, dsn + MROC_DSN_WINDOW - 1);
	pkt_put32(pk.data, PKT_MSN, msn + 1023);
	assert_int_equal(pair_deliver(f->p, &pk), 0);
	pair_mem_expect(f->b, 0, f->a->buf, 100);
	pair_expect_none(f->p, PAIR_A);
}

/*
 * path_id must be below the npaths the sender announced (docs/PROTOCOL.md
 * 6.2): otherwise dropped and counted out of window (12).  (Regression: the
 * peer's npaths was not kept and such packets were placed; fixed in 77defe7.)
 */
static void test_path_beyond_npaths(void **state)
{
	struct engine_qp_attr qa = pair_test_attr();
	struct fx *f;

	f = fx_new(state, NULL, NULL);
	struct engine_wr wr;
	struct pair_capture *cap;
	struct pair_pkt pk;

	qa.npaths = 1;
	qa.user = 0xa;
	pair_connect(f->p, &qa, NULL, SVC);
	wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, 100, 0);
	post(f, &wr);
	cap = capture_a_data(f, 1);
	pk = cap->pkt[0];
	assert_int_equal(pk.data[PKT_PATH], 0);
	pk.data[PKT_PATH] = 3;
	assert_true(pair_deliver(f->p, &pk) < 0);
	assert_int_equal(stat_b(f, EC_RX_OUT_OF_WINDOW), 1);
	pair_mem_untouched(f->b);
}

/* One genuine ACK of B (for a completed WRITE), and a WRITE 2 whose data never arrives. */
static struct pair_pkt bogus_ack_setup(struct fx *f)
{
	struct engine_wr wr = wr_of(f, ENGINE_WR_WRITE, 1, 0, 100, 0);
	struct pair_capture *cap;
	struct pair_pkt ack;

	cap = pair_capture_start(f->p, PAIR_B, PAIR_OP_BIT(MROC_OP_ACK), true);
	post(f, &wr);
	settle(f);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 1);
	assert_true(cap->n >= 1);
	ack = cap->pkt[cap->n - 1];
	wr.wr_id = 2;
	post(f, &wr);
	capture_a_data(f, 1);
	return ack;
}

/* ACKs acknowledging what A never sent change nothing (docs/PROTOCOL.md 7.9). */
static void test_bogus_acks_ignored(void **state)
{
	struct fx *f = *state;
	struct pair_pkt ack = bogus_ack_setup(f), bad;
	uint32_t cum_dsn = pkt_get32(ack.data, PKT_ACK_CUM_DSN);

	/* cum_dsn past everything A sent must not complete WRITE 2. */
	bad = ack;
	pkt_put32(bad.data, PKT_ACK_CUM_DSN, cum_dsn + 10);
	pair_deliver(f->p, &bad);
	pkt_put32(bad.data, PKT_ACK_CUM_DSN, cum_dsn + 0x7fffffffu);
	pair_deliver(f->p, &bad);
	/* Nor an ACK whose cum_psn is past every PSN A sent on that path. */
	bad = ack;
	pkt_put32(bad.data, PKT_ACK_CUM_PSN, pkt_get32(ack.data, PKT_ACK_CUM_PSN) + 50);
	pkt_put32(bad.data, PKT_ACK_CUM_DSN, cum_dsn + 1);
	pair_deliver(f->p, &bad);
	/* Nor one for a path A does not have. */
	bad = ack;
	bad.data[PKT_PATH] = 9;
	pkt_put32(bad.data, PKT_ACK_CUM_DSN, cum_dsn + 1);
	pair_deliver(f->p, &bad);
	pair_expect_none(f->p, PAIR_A);
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_CONNECTED);
	/* WRITE 2 still completes once its data really arrives. */
	pair_capture_stop(f->p);
	settle(f);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, MROC_WC_SUCCESS, 2);
}

/*
 * Those ACKs are counted: "ACK for PSNs or DSNs not sent" and "path_id >=
 * npaths" are EC_RX_OUT_OF_WINDOW (docs/PROTOCOL.md 12).  (Regression: they
 * were dropped without a count; fixed in 77defe7.)
 */
static void test_bogus_acks_counted(void **state)
{
	struct fx *f = *state;
	struct pair_pkt ack, bad;
	uint32_t cum_dsn;

	ack = bogus_ack_setup(f);
	cum_dsn = pkt_get32(ack.data, PKT_ACK_CUM_DSN);
	bad = ack;
	pkt_put32(bad.data, PKT_ACK_CUM_DSN, cum_dsn + 10);
	pair_deliver(f->p, &bad);
	assert_int_equal(pair_stat(f->p, PAIR_A, EC_RX_OUT_OF_WINDOW), 1);
	bad = ack;
	pkt_put32(bad.data, PKT_ACK_CUM_PSN, pkt_get32(ack.data, PKT_ACK_CUM_PSN) + 50);
	pair_deliver(f->p, &bad);
	assert_int_equal(pair_stat(f->p, PAIR_A, EC_RX_OUT_OF_WINDOW), 2);
	bad = ack;
	bad.data[PKT_PATH] = 9;
	pair_deliver(f->p, &bad);
	assert_int_equal(pair_stat(f->p, PAIR_A, EC_RX_OUT_OF_WINDOW), 3);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TB(fn) cmocka_unit_test_setup_teardown(fn, setup_bare, teardown)
#define TBOUNDS(name, bc) \
	{ "test_write_refused_" name, run_bounds_case, NULL, teardown, (void *)&(bc) }
	const struct CMUnitTest tests[] = {
		T(test_connected),
		T(test_write),
		T(test_write_imm),
		T(test_send),
		T(test_send_imm),
		T(test_read),
		T(test_zero_length),
		T(test_completion_order),
		T(test_reverse_order),
		T(test_write_imm_waits_for_write),
		T(test_duplicate_write),
		T(test_duplicate_send),
		T(test_duplicate_dsn_new_psn),
		TB(test_malformed_truncated),
		TB(test_malformed_fields),
		T(test_malformed_lengths),
		T(test_truncated_payload),
		TBOUNDS("bad_rkey", bc_key_flip),
		TBOUNDS("no_remote_write", bc_no_write),
		TBOUNDS("other_pd", bc_other_pd),
		TBOUNDS("one_past_end", bc_past_end),
		TBOUNDS("start_at_end", bc_at_end),
		TBOUNDS("raddr_overflow", bc_huge),
		TBOUNDS("raddr_offset_wrap", bc_wrap),
		T(test_write_to_region_end),
		TB(test_read_without_remote_read),
		T(test_read_past_end),
		T(test_send_too_long_for_recv),
		T(test_rnr_then_recv),
		TB(test_rnr_retry_zero),
		TB(test_rnr_retry_two),
		T(test_unknown_qp),
		T(test_bad_peer),
		T(test_data_after_disconnect),
		T(test_psn_window),
		T(test_dsn_msn_window),
		TB(test_path_beyond_npaths),
		T(test_bogus_acks_ignored),
		T(test_bogus_acks_counted),
	};
#undef T
#undef TB
#undef TBOUNDS

	return cmocka_run_group_tests(tests, NULL, NULL);
}
