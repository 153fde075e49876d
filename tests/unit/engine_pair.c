// SPDX-License-Identifier: MIT
/* Two engines back to back with a fake clock (see engine_pair.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "engine_pair.h"

/* Far more than any test needs; hitting it means the engines livelock. */
#define PAIR_GUARD	2000000

void pair_test_config(struct engine_config *cfg)
{
	engine_config_default(cfg);
	cfg->max_qps = 8;
	cfg->max_mrs = 16;
	cfg->ack_delay_ns = 5 * PAIR_US;
	cfg->rto_init_ns = 1 * PAIR_MS;
	cfg->rto_min_ns = 200 * PAIR_US;
	cfg->rto_max_ns = 20 * PAIR_MS;
	cfg->rnr_delay_ns = 100 * PAIR_US;
	cfg->hint_interval_ns = 100 * PAIR_US;
	cfg->seed = 1;
}

struct engine_qp_attr pair_test_attr(void)
{
	return (struct engine_qp_attr){
		.pd = 1,
		.mode = MROC_MODE_METAROCE,
		.npaths = 4,
		.sq_depth = 64,
		.rq_depth = 64,
		.max_rd = 16,
	};
}

/* The engines and clocks of a zeroed pair (pair_new, pair_reset). */
static void pair_init(struct pair *p, const struct engine_config *a, const struct engine_config *b)
{
	if (a) {
		p->s[PAIR_A].cfg = *a;
	} else {
		pair_test_config(&p->s[PAIR_A].cfg);
	}
	if (b) {
		p->s[PAIR_B].cfg = *b;
	} else {
		pair_test_config(&p->s[PAIR_B].cfg);
		p->s[PAIR_B].cfg.seed = 2;
	}
	for (int i = 0; i < 2; i++) {
		p->s[i].eng = engine_create(&p->s[i].cfg);
		assert_non_null(p->s[i].eng);
	}
	p->now = PAIR_T0;
	pair_set_clock(p, PAIR_B, PAIR_SKEW_NS, PAIR_SKEW_PPM);
}

struct pair *pair_new(const struct engine_config *a, const struct engine_config *b)
{
	struct pair *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	pair_init(p, a, b);
	return p;
}

/* Spans of struct pair to leave alone, in order: [off, off + len). */
struct span {
	size_t off, len;
};

static void zero_but(struct pair *p, const struct span *keep, unsigned n)
{
	size_t at = 0;

	for (unsigned i = 0; i < n; i++) {
		memset((uint8_t *)p + at, 0, keep[i].off - at);
		at = keep[i].off + keep[i].len;
	}
	memset((uint8_t *)p + at, 0, sizeof(*p) - at);
}

void pair_reset(struct pair *p, const struct engine_config *a, const struct engine_config *b)
{
	struct pair_mem *mems[PAIR_MAX_MEMS];
	struct pair_wire wire[2];
	unsigned nmems = p->nmems;

	engine_destroy(p->s[PAIR_A].eng);
	engine_destroy(p->s[PAIR_B].eng);
	free(p->cap);
	memcpy(mems, p->mems, sizeof(mems));
	memcpy(wire, p->wire, sizeof(wire));
	/*
	 * Everything else as calloc left it: no field of a past run survives.
	 * But for the arrays written before they are read (completions past
	 * ncqe, the transmit buffers): 80 % of the struct, and zeroing them was
	 * fuzz_engine_rx's largest cost per input.
	 */
	zero_but(p, (const struct span[]){
		{ offsetof(struct pair, s[0].cqe), sizeof(p->s[0].cqe) },
		{ offsetof(struct pair, s[1].cqe), sizeof(p->s[1].cqe) },
		{ offsetof(struct pair, tx), sizeof(p->tx) },
	}, 3);
	memcpy(p->mems, mems, sizeof(mems));
	p->nmems = nmems;
	for (int i = 0; i < 2; i++) {
		p->wire[i].q = wire[i].q;
		p->wire[i].due = wire[i].due;
	}
	for (unsigned i = 0; i < nmems; i++) {
		pair_mem_reset(mems[i]);
		mems[i]->lkey = mems[i]->rkey = 0;
	}
	pair_init(p, a, b);
}

void pair_set_clock(struct pair *p, int side, int64_t offset, int32_t ppm)
{
	assert_true(ppm > -1000000 && ppm < 1000000);
	p->s[side].clk_offset = offset;
	p->s[side].clk_ppm = ppm;
	assert_true((int64_t)p->now + (int64_t)p->now * ppm / 1000000 + offset > 0);
}

uint64_t pair_clock(const struct pair *p, int side)
{
	const struct pair_side *s = &p->s[side];
	__int128 t = (__int128)p->now + (__int128)p->now * s->clk_ppm / 1000000 + s->clk_offset;

	assert_true(t > 0);
	return (uint64_t)t;
}

uint64_t pair_base_of(const struct pair *p, int side, uint64_t t)
{
	const struct pair_side *s = &p->s[side];
	__int128 x = ((__int128)t - s->clk_offset) * 1000000 / (1000000 + s->clk_ppm);

	if (x < 0)
		return 0;
	/* Rounding: step to the first base time whose local time reaches t. */
	while ((__int128)x + (__int128)x * s->clk_ppm / 1000000 + s->clk_offset < (__int128)t)
		x++;
	while (x > 0 && (__int128)(x - 1) + (__int128)(x - 1) * s->clk_ppm / 1000000 +
			s->clk_offset >= (__int128)t)
		x--;
	return x > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)x;
}

void pair_free(struct pair *p)
{
	if (!p)
		return;
	engine_destroy(p->s[PAIR_A].eng);
	engine_destroy(p->s[PAIR_B].eng);
	for (unsigned i = 0; i < p->nmems; i++) {
		free(p->mems[i]->base);
		free(p->mems[i]);
	}
	free(p->cap);
	for (int i = 0; i < 2; i++) {
		free(p->wire[i].q);
		free(p->wire[i].due);
	}
	free(p);
}

void pair_set_stamp_lead(struct pair *p, int side, uint64_t lead)
{
	p->s[side].stamp_lead = lead;
}

void pair_set_rx_lag(struct pair *p, int side, uint64_t lag)
{
	p->s[side].rx_lag = lag;
}

/*
 * Side's time for an engine call with work to do (a post, a timer due,
 * packets to send), which its later packets may not be taken before
 * (pair_set_rx_lag): a worker reads its clock after such work, not before.
 */
static uint64_t pair_call_clock(struct pair *p, int side)
{
	return p->s[side].called = pair_clock(p, side);
}

/* Every engine call of the pair leaves the engine's counts true (engine_check). */
static void pair_check(struct pair *p, int side)
{
	char why[200];

	if (!p->unchecked && engine_check(p->s[side].eng, why, sizeof(why)))
		fail_msg("engine %c at %llu: %s", side == PAIR_A ? 'A' : 'B',
			 (unsigned long long)p->now, why);
}

static void pair_advance(struct pair *p, int side)
{
	uint64_t now = pair_clock(p, side);

	if (engine_next_deadline(p->s[side].eng) <= now)
		p->s[side].called = now;
	engine_advance(p->s[side].eng, now);
	pair_check(p, side);
}

void pair_set_delay(struct pair *p, int side, uint64_t delay)
{
	struct pair_wire *w = &p->wire[side];

	if (!w->q) {
		w->q = calloc(PAIR_WIRE_MAX, sizeof(*w->q));
		w->due = calloc(PAIR_WIRE_MAX, sizeof(*w->due));
		assert_non_null(w->q);
		assert_non_null(w->due);
	}
	w->delay = delay;
}

/* Deliver what side's wire holds that is due by now.  Returns the count. */
static unsigned wire_arrive(struct pair *p, int side)
{
	struct pair_wire *w = &p->wire[side];
	unsigned n = 0;

	while (w->n && w->due[w->head] <= p->now) {
		struct pair_pkt *pkt = &w->q[w->head];

		w->head = (w->head + 1) % PAIR_WIRE_MAX;
		w->n--;
		pair_deliver(p, pkt);
		n++;
	}
	return n;
}

uint32_t pair_qp_create(struct pair *p, int side, const struct engine_qp_attr *attr)
{
	uint32_t qpn = 0;

	assert_int_equal(engine_qp_create(p->s[side].eng, attr, &qpn), 0);
	assert_int_not_equal(qpn, 0);
	return qpn;
}

uint32_t pair_connect_more(struct pair *p, uint64_t user, uint64_t service_id)
{
	struct engine_qp_attr a = pair_test_attr();
	uint32_t qa, qb;

	a.user = user;
	qb = pair_qp_create(p, PAIR_B, &a);
	qa = pair_qp_create(p, PAIR_A, &a);
	assert_int_equal(engine_qp_listen(p->s[PAIR_B].eng, qb, service_id), 0);
	assert_int_equal(engine_qp_connect(p->s[PAIR_A].eng, qa, PAIR_B, service_id,
					   pair_clock(p, PAIR_A)), 0);
	return qa;
}

void pair_connect(struct pair *p, const struct engine_qp_attr *a, const struct engine_qp_attr *b,
		  uint64_t service_id)
{
	struct engine_qp_attr da = pair_test_attr(), db = pair_test_attr();
	const struct engine_cqe *c;

	da.user = 0xa;
	db.user = 0xb;
	if (!a)
		a = &da;
	if (!b)
		b = &db;
	p->s[PAIR_B].qpn = pair_qp_create(p, PAIR_B, b);
	p->s[PAIR_A].qpn = pair_qp_create(p, PAIR_A, a);
	assert_int_equal(engine_qp_listen(p->s[PAIR_B].eng, p->s[PAIR_B].qpn, service_id), 0);
	assert_int_equal(engine_qp_connect(p->s[PAIR_A].eng, p->s[PAIR_A].qpn, PAIR_B, service_id,
					   pair_clock(p, PAIR_A)), 0);
	pair_pump(p);
	c = pair_expect(p, PAIR_B, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, b->user);
	assert_int_equal(c->qpn, p->s[PAIR_B].qpn);
	c = pair_expect(p, PAIR_A, ENGINE_WC_EV_CONNECTED, ENGINE_WC_SUCCESS, a->user);
	assert_int_equal(c->qpn, p->s[PAIR_A].qpn);
	assert_int_equal(pair_state(p, PAIR_A), ENGINE_QPS_CONNECTED);
	assert_int_equal(pair_state(p, PAIR_B), ENGINE_QPS_CONNECTED);
}

int pair_rx(struct pair *p, int to, const uint8_t *buf, size_t len, uint32_t peer, uint16_t sport)
{
	struct engine_rx_meta meta = { .peer = peer, .sport = sport,
				       .sealed = p->s[to].sealed ? ENGINE_RX_SEALED : ENGINE_RX_PLAIN };
	/* An exact-size heap copy: a sanitizer build catches any read past the end. */
	uint8_t *copy = malloc(len ? len : 1);
	uint64_t now;
	int ret;

	assert_non_null(copy);
	memcpy(copy, buf, len);
	p->s[to].heard[sport / 8] |= (uint8_t)(1u << sport % 8);
	now = pair_clock(p, to);
	if (p->s[to].stamp_lead)
		meta.arrival = now - p->s[to].stamp_lead;
	if (p->s[to].rx_lag) {
		meta.arrival = now;
		now = now - p->s[to].called > p->s[to].rx_lag ? now - p->s[to].rx_lag :
								 p->s[to].called;
	}
	ret = engine_rx(p->s[to].eng, now, copy, len, &meta);
	free(copy);
	pair_poll(p);
	return ret;
}

int pair_deliver(struct pair *p, const struct pair_pkt *pkt)
{
	return pair_rx(p, 1 - pkt->from, pkt->data, pkt->len, (uint32_t)pkt->from, pkt->sport);
}

/*
 * Whether a packet is an answer on the peer's path (engine_txbuf.echo: the
 * AF_XDP backend sends it back the way that path came): 1, 0, or -1 for
 * either (CONNECT_REJ, DISCONNECT and DISCONNECT_ACK come from a QP on its
 * own path, or answer a packet for none).
 */
static int answer_of(const uint8_t *pkt)
{
	uint8_t op = pkt[PKT_OPCODE];

	if (op == MROC_OP_ACK)
		return 1;
	if (op == MROC_OP_KEEPALIVE)
		return !(pkt[PKT_FLAGS] & MROC_F_ACK_REQ);
	if (mroc_op_is_data(op) || op == MROC_OP_CONNECT_REQ || op == MROC_OP_CONNECT_REP)
		return 0;
	return -1;
}

/* FNV-1a of n bytes into *h. */
static void digest_add(uint64_t *h, const void *data, size_t n)
{
	const uint8_t *b = data;

	for (size_t i = 0; i < n; i++)
		*h = (*h ^ b[i]) * 0x100000001b3ULL;
}

/*
 * A batch of side `from`'s (one engine_tx call, or with offer_want as
 * many as the driver's offers take), every packet through the filter.
 */
static unsigned pump_side(struct pair *p, int from)
{
	struct engine *eng = p->s[from].eng;
	struct engine_txbuf b[PAIR_TX_BATCH];
	int n = 0, want, used;

	for (int i = 0; i < PAIR_TX_BATCH; i++)
		b[i] = (struct engine_txbuf){ .data = p->tx[i].data, .cap = PAIR_MAX_PKT };
	if (!p->offer_want) {
		/* Nothing wanted, nothing sent: the worker does not call engine_tx then. */
		want = engine_tx_want(eng, PAIR_TX_BATCH);
		n = engine_tx(eng, pair_clock(p, from), b, PAIR_TX_BATCH);
		assert_true(want || !n);
		p->offered += PAIR_TX_BATCH;
	} else
		do {
			want = engine_tx_want(eng, PAIR_TX_BATCH - n);
			assert_in_range(want, 0, PAIR_TX_BATCH - n);
			used = want ? engine_tx(eng, pair_clock(p, from), b + n, want) : 0;
			assert_in_range(used, 0, want);
			p->offered += (uint64_t)want;
			n += used;
		} while (used && used == want && n < PAIR_TX_BATCH);
	assert_in_range(n, 0, PAIR_TX_BATCH);
	pair_check(p, from);
	for (int i = 0; i < n; i++) {
		digest_add(&p->digest, &from, sizeof(from));
		digest_add(&p->digest, &b[i].len, sizeof(b[i].len));
		digest_add(&p->digest, &b[i].peer, sizeof(b[i].peer));
		digest_add(&p->digest, &b[i].sport, sizeof(b[i].sport));
		digest_add(&p->digest, &b[i].path_id, sizeof(b[i].path_id));
		digest_add(&p->digest, &b[i].echo, sizeof(b[i].echo));
		digest_add(&p->digest, b[i].data, b[i].len);
	}
	if (n)
		p->s[from].called = pair_clock(p, from);
	for (int i = 0; i < n; i++) {
		struct pair_pkt *pkt = &p->tx[i];

		assert_in_range(b[i].len, MROC_HDR_LEN, PAIR_MAX_PKT);
		pkt->from = from;
		pkt->len = b[i].len;
		pkt->sport = b[i].sport;
		p->s[from].sent[pkt->data[1]]++;
		/* Data is ECN-capable, control is not (docs/PROTOCOL.md 1). */
		assert_int_equal(b[i].ect, mroc_op_is_data(pkt->data[1]));
		/* Answers say so, on a source port the peer sent from; nothing else does. */
		if (answer_of(pkt->data) >= 0)
			assert_int_equal(b[i].echo, answer_of(pkt->data));
		if (b[i].echo)
			assert_true(p->s[from].heard[pkt->sport / 8] & 1u << pkt->sport % 8);
		if (b[i].peer != (uint32_t)(1 - from)) {
			p->s[from].stray++;
			continue;
		}
		if (p->filter && !p->filter(p, pkt, p->filter_arg))
			continue;
		if (p->wire[from].delay) {
			struct pair_wire *w = &p->wire[from];
			unsigned at = (w->head + w->n) % PAIR_WIRE_MAX;

			assert_true(w->n < PAIR_WIRE_MAX);
			w->q[at] = *pkt;
			w->due[at] = p->now + w->delay;
			w->n++;
			continue;
		}
		pair_deliver(p, pkt);
	}
	return (unsigned)n;
}

unsigned pair_pump(struct pair *p)
{
	unsigned total = 0;

	for (int guard = 0;; guard++) {
		unsigned moved;

		if (guard > PAIR_GUARD)
			fail_msg("pair_pump: engines never go quiet");
		moved = wire_arrive(p, PAIR_A) + wire_arrive(p, PAIR_B);
		moved += pump_side(p, PAIR_A);
		moved += pump_side(p, PAIR_B);
		pair_poll(p);
		if (!moved)
			return total;
		total += moved;
	}
}

/* The earliest of both engines' deadlines, in pair->now's time (0: now). */
static uint64_t next_deadline(struct pair *p)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 2; i++) {
		uint64_t d = engine_next_deadline(p->s[i].eng);

		if (d == UINT64_MAX)
			continue;
		d = d ? pair_base_of(p, i, d) : 0;
		if (d < best)
			best = d;
	}
	for (int i = 0; i < 2; i++)
		if (p->wire[i].n && p->wire[i].due[p->wire[i].head] < best)
			best = p->wire[i].due[p->wire[i].head];
	return best;
}

void pair_run(struct pair *p, uint64_t until)
{
	bool advanced = false;

	for (int guard = 0;; guard++) {
		uint64_t d;

		if (guard > PAIR_GUARD)
			fail_msg("pair_run: deadline never passes (now %llu)",
				 (unsigned long long)p->now);
		pair_pump(p);
		d = next_deadline(p);
		if (advanced && d <= p->now) {
			/* Timers ran at now and still want to run at now. */
			p->stuck_deadlines++;
			d = p->now + 1;
		}
		if (advanced && d < p->now + p->tick) {
			p->ticked++;
			d = p->now + p->tick;
		}
		if (d > until)
			break;
		if (d > p->now)
			p->now = d;
		pair_advance(p, PAIR_A);
		pair_advance(p, PAIR_B);
		p->wakeups++;
		advanced = true;
	}
	if (p->now < until)
		p->now = until;
}

void pair_run_for(struct pair *p, uint64_t dt)
{
	pair_run(p, p->now + dt);
}

void pair_poll(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		struct pair_side *s = &p->s[i];
		int n;

		do {
			assert_true(s->ncqe + 16 <= PAIR_MAX_CQE);
			n = engine_poll_cq(s->eng, &s->cqe[s->ncqe], 16);
			assert_in_range(n, 0, 16);
			s->ncqe += (unsigned)n;
		} while (n == 16);
	}
}

const struct engine_cqe *pair_cqe(struct pair *p, int side)
{
	struct pair_side *s = &p->s[side];

	pair_poll(p);
	return s->next < s->ncqe ? &s->cqe[s->next++] : NULL;
}

unsigned pair_pending(struct pair *p, int side)
{
	pair_poll(p);
	return p->s[side].ncqe - p->s[side].next;
}

const struct engine_cqe *pair_expect(struct pair *p, int side, uint8_t opcode, uint8_t status,
				     uint64_t wr_id)
{
	const struct engine_cqe *c = pair_cqe(p, side);

	if (!c)
		fail_msg("side %c: no completion, want opcode %u status %u", "AB"[side], opcode,
			 status);
	if (c->opcode != opcode || (status != PAIR_ANY_STATUS && c->status != status) ||
	    (wr_id != PAIR_ANY_ID && c->wr_id != wr_id))
		fail_msg("side %c: completion opcode %u status %u wr_id %llu, want %u %u %llu",
			 "AB"[side], c->opcode, c->status, (unsigned long long)c->wr_id, opcode,
			 status, (unsigned long long)wr_id);
	return c;
}

void pair_expect_none(struct pair *p, int side)
{
	const struct engine_cqe *c = pair_cqe(p, side);

	if (c)
		fail_msg("side %c: unexpected completion opcode %u status %u wr_id %llu",
			 "AB"[side], c->opcode, c->status, (unsigned long long)c->wr_id);
}

uint64_t pair_stat(struct pair *p, int side, enum engine_counter c)
{
	struct engine_stats st;

	engine_get_stats(p->s[side].eng, &st);
	return st.c[c];
}

void pair_expect_only_malformed(struct pair *p, int side, const struct engine_stats *before,
				enum wire_err why, uint64_t n)
{
	struct engine_stats now, want = *before;

	engine_get_stats(p->s[side].eng, &now);
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

uint8_t pair_state(struct pair *p, int side)
{
	struct engine_qp_info info;

	assert_int_equal(engine_qp_info(p->s[side].eng, p->s[side].qpn, &info), 0);
	return info.state;
}

int pair_post(struct pair *p, int side, const struct engine_wr *wr)
{
	return engine_post_send(p->s[side].eng, p->s[side].qpn, wr, pair_call_clock(p, side));
}

int pair_post_recv(struct pair *p, int side, uint64_t wr_id, uint32_t lkey, uint64_t laddr,
		   uint32_t len)
{
	struct engine_recv_wr r = { .wr_id = wr_id, .lkey = lkey, .laddr = laddr, .len = len };

	return engine_post_recv(p->s[side].eng, p->s[side].qpn, &r);
}

/* ---- memory ------------------------------------------------------------------ */

struct pair_mem *pair_mem_new(struct pair *p, int side, uint64_t len, uint64_t pd, uint32_t access)
{
	struct pair_mem *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	assert_true(p->nmems < PAIR_MAX_MEMS);
	m->base = malloc(len + 2 * PAIR_GUARD_LEN);
	assert_non_null(m->base);
	m->buf = m->base + PAIR_GUARD_LEN;
	m->len = len;
	m->side = side;
	m->pd = pd;
	m->access = access;
	p->mems[p->nmems++] = m;
	pair_mem_reset(m);
	pair_mem_register(p, m);
	return m;
}

void pair_mem_register(struct pair *p, struct pair_mem *m)
{
	assert_int_equal(engine_mr_register(p->s[m->side].eng, m->pd, m->buf, m->len, m->access,
					    &m->lkey, &m->rkey), 0);
}

void pair_mem_fill(struct pair_mem *m, uint32_t seed)
{
	for (uint64_t i = 0; i < m->len; i++)
		m->buf[i] = pair_pattern(seed, i);
}

void *pair_fx_open(void **state, size_t size, const struct engine_config *ca,
		   const struct engine_config *cb, uint64_t len, uint32_t b_access,
		   uint32_t fill_a)
{
	struct pair_fx *f = calloc(1, size);

	assert_non_null(f);
	assert_true(size >= sizeof(*f));
	*state = f;
	f->p = pair_new(ca, cb);
	f->a = pair_mem_new(f->p, PAIR_A, len, 1, ENGINE_ACCESS_ALL);
	f->b = pair_mem_new(f->p, PAIR_B, len, 1, b_access);
	if (fill_a)
		pair_mem_fill(f->a, fill_a);
	return f;
}

int pair_fx_teardown(void **state)
{
	struct pair_fx *f = *state;

	if (f) {
		pair_free(f->p);
		free(f);
	}
	return 0;
}

struct engine_wr pair_fx_wr(const struct pair_fx *x, uint8_t op, uint64_t id, uint64_t laddr,
			    uint32_t len, uint64_t raddr)
{
	return (struct engine_wr){
		.wr_id = id, .opcode = op, .flags = ENGINE_WR_SIGNALED, .lkey = x->a->lkey,
		.laddr = laddr, .len = len, .rkey = x->b->rkey, .raddr = raddr,
	};
}

void pair_mem_reset(struct pair_mem *m)
{
	memset(m->base, PAIR_CANARY, m->len + 2 * PAIR_GUARD_LEN);
}

void pair_mem_expect(const struct pair_mem *m, uint64_t off, const uint8_t *want, uint64_t n)
{
	uint64_t total = m->len + 2 * PAIR_GUARD_LEN, start = PAIR_GUARD_LEN + off;

	assert_true(off + n <= m->len);
	for (uint64_t i = 0; i < total; i++) {
		bool in = i >= start && i < start + n;
		uint8_t w = in ? want[i - start] : PAIR_CANARY;

		if (m->base[i] != w)
			fail_msg("memory byte %lld (buffer offset %lld) is 0x%02x, want 0x%02x%s",
				 (long long)i, (long long)i - PAIR_GUARD_LEN, m->base[i], w,
				 in ? "" : " (canary)");
	}
}

void pair_mem_untouched(const struct pair_mem *m)
{
	pair_mem_expect(m, 0, NULL, 0);
}

/* ---- capturing ------------------------------------------------------------- */

bool pair_capture_filter(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct pair_capture *cap = arg;
	uint8_t op = pkt->data[1];
	bool match;

	(void)p;
	if (pkt->from != cap->from)
		return true;
	match = cap->ops ? op < 64 && (cap->ops & PAIR_OP_BIT(op)) : mroc_op_is_data(op);
	if (!match)
		return true;
	assert_true(cap->n < PAIR_CAPTURE_MAX);
	cap->pkt[cap->n++] = *pkt;
	return cap->pass;
}

struct pair_capture *pair_capture_start(struct pair *p, int from, uint64_t ops, bool pass)
{
	struct pair_capture *cap = calloc(1, sizeof(*cap));

	assert_non_null(cap);
	free(p->cap);
	p->cap = cap;
	cap->from = from;
	cap->ops = ops;
	cap->pass = pass;
	p->filter = pair_capture_filter;
	p->filter_arg = cap;
	return cap;
}

struct pair_capture *pair_capture_data(struct pair *p, int from, unsigned want)
{
	struct pair_capture *cap = pair_capture_start(p, from, 0, false);

	pair_pump(p);
	assert_int_equal(cap->n, want);
	return cap;
}

void pair_capture_stop(struct pair *p)
{
	p->filter = NULL;
	p->filter_arg = NULL;
}
