// SPDX-License-Identifier: MIT
/*
 * Two engines on their own clocks (engine_pair: B 2.5 s ahead and 150 ppm
 * faster), sequence numbers starting just below 2^32 (they wrap during the
 * run), a delay of its own each way, and a network that loses heavily, or
 * loses only ACKs, or goes quiet for seconds between bursts: WRITEs, SENDs
 * and READs of random sizes, eight outstanding, all complete successfully
 * and every byte lands where it should, in bounded (fake) time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>

#include "engine_pair.h"

#define SLOT		(64 * 1024)
#define SLOTS		16
#define PART		(SLOTS * SLOT)
#define REG_LEN		(3 * PART)	/* WRITE slots, READ slots, SEND slots */
#define OPS		(3 * SLOTS)
#define OUTSTANDING	8
#define SVC		42

static uint64_t lie_seed;	/* test_lies: the network's seed */

static int teardown(void **state)
{
	return pair_fx_teardown(state);
}

#define HELD_MAX	64

struct net {
	uint64_t rng;
	unsigned loss_pct;	/* every packet, both ways */
	unsigned ack_loss_pct;	/* B's ACKs only, on top */
	unsigned hold_pct;	/* held back, delivered after later ones (reordering) */
	unsigned lie_pct;	/* per mille: one 32-bit word of the header replaced (a peer that lies) */
	uint64_t dropped, held, lies;
	unsigned nheld;
	struct pair_pkt heldq[HELD_MAX];
};

static unsigned rnd(uint64_t *s, unsigned n)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (unsigned)(*s % n);
}

static bool lossy(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct net *n = arg;

	(void)p;
	if (rnd(&n->rng, 100) < n->loss_pct ||
	    (pkt->from == PAIR_B && pkt->data[PKT_OPCODE] == MROC_OP_ACK &&
	     rnd(&n->rng, 100) < n->ack_loss_pct)) {
		n->dropped++;
		return false;
	}
	if (n->lie_pct && rnd(&n->rng, 1000) < n->lie_pct && pkt->len >= 64) {
		unsigned w = rnd(&n->rng, 16);	/* one of the first 64 bytes' words */
		uint32_t v = pkt_get32(pkt->data, 4 * w);

		switch (rnd(&n->rng, 4)) {
		case 0: v++; break;
		case 1: v--; break;
		case 2: v ^= 1u << rnd(&n->rng, 32); break;
		default: v = (uint32_t)n->rng; break;
		}
		pkt_put32(pkt->data, 4 * w, v);
		n->lies++;
	}
	if (n->hold_pct && n->nheld < HELD_MAX && rnd(&n->rng, 100) < n->hold_pct) {
		n->heldq[n->nheld++] = *pkt;
		n->held++;
		return false;
	}
	return true;
}

/* Held packets go now, in a random order: after those sent since. */
static void release_held(struct pair *p, struct net *n)
{
	while (n->nheld) {
		unsigned i = rnd(&n->rng, n->nheld);
		struct pair_pkt pkt = n->heldq[i];

		n->heldq[i] = n->heldq[--n->nheld];
		pair_deliver(p, &pkt);
	}
}

/* A completion of one of A's WRs (not an event, not a RECV). */
static bool is_send_cqe(const struct engine_cqe *c)
{
	return c->opcode != ENGINE_WC_RECV && c->opcode != ENGINE_WC_RECV_RDMA_IMM &&
	       c->opcode != ENGINE_WC_EV_CONNECTED && c->opcode != ENGINE_WC_EV_DISCONNECTED &&
	       c->opcode != ENGINE_WC_EV_ERROR;
}

/* Every guard byte around m's buffer is still canary. */
static void guards_intact(const struct pair_mem *m)
{
	for (unsigned i = 0; i < PAIR_GUARD_LEN; i++) {
		assert_int_equal(m->base[i], PAIR_CANARY);
		assert_int_equal(m->buf[m->len + i], PAIR_CANARY);
	}
}

struct scenario {
	uint8_t mode;
	unsigned loss_pct, ack_loss_pct, hold_pct, lie_pct;
	uint64_t delay_a, delay_b;	/* one way, from each side */
	uint64_t idle;			/* quiet between bursts of OUTSTANDING ops */
	bool a_ahead;			/* A's clock 4 s ahead and 300 ppm fast, B's 200 ppm slow */
	uint64_t limit;			/* fake time the whole run may take */
};

static void run(void **state, const struct scenario *sc)
{
	struct engine_qp_attr qa = pair_test_attr(), qb = pair_test_attr();
	struct net n = { .rng = 0x9e3779b97f4a7c15ULL * (2 * lie_seed + 1), .loss_pct = sc->loss_pct,
			 .ack_loss_pct = sc->ack_loss_pct, .hold_pct = sc->hold_pct,
			 .lie_pct = sc->lie_pct };
	struct engine_config ca, cb;
	uint32_t len[OPS];
	unsigned posted = 0, done = 0, out = 0, failed = 0;
	uint64_t t0, end;
	struct pair_fx *x;

	pair_test_config(&ca);
	/* Heavy loss is no dead peer; a peer a lie took down is. */
	ca.dead_peer_ns = sc->lie_pct ? 3000 * PAIR_MS : 1000000 * PAIR_MS;
	ca.keepalive_ns = 100 * PAIR_MS;
	ca.max_retx = 255;
	ca.cm_retries = 64;
	cb = ca;
	cb.seed = 2;
	qa.mode = qb.mode = sc->mode;
	qa.fixed_isn = qb.fixed_isn = true;
	qa.isn_psn = 0xffffff00u;
	qa.isn_dsn = 0xfffffff0u;
	qb.isn_psn = 0xfffffe00u;
	qb.isn_dsn = 0xffffffe0u;
	x = pair_fx_open(state, sizeof(*x), &ca, &cb, REG_LEN, ENGINE_ACCESS_ALL, 1);
	pair_mem_fill(x->b, 2);
	if (sc->a_ahead) {
		pair_set_clock(x->p, PAIR_A, 4000 * PAIR_MS + 7, 300);
		pair_set_clock(x->p, PAIR_B, 1, -200);
	}
	pair_connect(x->p, &qa, &qb, SVC);
	pair_set_delay(x->p, PAIR_A, sc->delay_a);
	pair_set_delay(x->p, PAIR_B, sc->delay_b);
	x->p->filter = lossy;
	x->p->filter_arg = &n;
	for (unsigned i = 0; i < OPS; i++)
		len[i] = 1 + rnd(&n.rng, SLOT);
	t0 = x->p->now;
	end = t0 + sc->limit;
	while (done < OPS && x->p->now < end) {
		if (sc->lie_pct && (pair_state(x->p, PAIR_A) != ENGINE_QPS_CONNECTED ||
				    pair_state(x->p, PAIR_B) != ENGINE_QPS_CONNECTED)) {
			/*
			 * A lie took a QP down: what A posted completes (flushed, or
			 * failed when B's side went and A learnt it, at the latest
			 * by the dead peer), in bounded time.
			 */
			uint64_t stop = x->p->now + 4 * ca.dead_peer_ns;

			while (out && x->p->now < stop) {
				pair_run_for(x->p, 1 * PAIR_MS);
				while (pair_pending(x->p, PAIR_A)) {
					const struct engine_cqe *c = pair_cqe(x->p, PAIR_A);

					done += is_send_cqe(c);
					out -= is_send_cqe(c);
				}
			}
			assert_int_equal(out, 0);
			break;
		}
		while (posted < OPS && out < OUTSTANDING) {
			unsigned i = posted, slot = i / 3;
			struct engine_wr wr;
			uint64_t off;

			switch (i % 3) {
			case 0:
				off = (uint64_t)slot * SLOT;
				wr = pair_fx_wr(x, ENGINE_WR_WRITE, i, off, len[i], off);
				break;
			case 1:
				off = PART + (uint64_t)slot * SLOT;
				wr = pair_fx_wr(x, ENGINE_WR_READ, i, off, len[i], off);
				break;
			default:
				off = 2 * PART + (uint64_t)slot * SLOT;
				assert_int_equal(pair_post_recv(x->p, PAIR_B, i, x->b->lkey, off,
								SLOT), 0);
				wr = pair_fx_wr(x, ENGINE_WR_SEND, i, off, len[i], 0);
				break;
			}
			assert_int_equal(pair_post(x->p, PAIR_A, &wr), 0);
			posted++;
			out++;
		}
		pair_run_for(x->p, 100 * PAIR_US);
		release_held(x->p, &n);
		while (pair_pending(x->p, PAIR_A)) {
			const struct engine_cqe *c = pair_cqe(x->p, PAIR_A);

			if (!is_send_cqe(c)) {
				assert_true(sc->lie_pct);	/* an event: the QP went down */
				continue;
			}
			if (c->status != ENGINE_WC_SUCCESS && !sc->lie_pct)
				print_message("wr %llu status %u\n", (unsigned long long)c->wr_id,
					      c->status);
			if (!sc->lie_pct)
				assert_int_equal(c->status, ENGINE_WC_SUCCESS);
			failed += c->status != ENGINE_WC_SUCCESS;
			done++;
			out--;
			if (sc->idle && !out)
				pair_run_for(x->p, sc->idle);
		}
	}
	print_message("mode %u, loss %u%%, ACK loss %u%%, delays %llu/%llu us, idle %llu ms: "
		      "%u of %u done (%u failed) in %.1f ms, %llu dropped, %llu held, %llu lies, "
		      "state %u\n", sc->mode,
		      sc->loss_pct, sc->ack_loss_pct, (unsigned long long)(sc->delay_a / PAIR_US),
		      (unsigned long long)(sc->delay_b / PAIR_US),
		      (unsigned long long)(sc->idle / PAIR_MS), done, OPS, failed,
		      (double)(x->p->now - t0) / PAIR_MS, (unsigned long long)n.dropped,
		      (unsigned long long)n.held, (unsigned long long)n.lies,
		      pair_state(x->p, PAIR_A));
	guards_intact(x->a);
	guards_intact(x->b);
	if (sc->lie_pct) {
		/* Whatever a lie did, the run ended: every WR completed, or the QP failed. */
		assert_true(done == OPS || pair_state(x->p, PAIR_A) != ENGINE_QPS_CONNECTED);
		assert_true(x->p->now < end);
		return;
	}
	assert_int_equal(done, OPS);
	x->p->filter = NULL;
	pair_run_for(x->p, 10 * PAIR_MS);
	/* Every byte where it belongs: WRITEs and SENDs in B, READs in A. */
	for (unsigned i = 0; i < OPS; i++) {
		unsigned slot = i / 3;
		uint64_t off = (uint64_t)(i % 3) * PART + (uint64_t)slot * SLOT;

		if (i % 3 == 1)
			assert_memory_equal(x->a->buf + off, x->b->buf + off, len[i]);
		else
			assert_memory_equal(x->b->buf + off, x->a->buf + off, len[i]);
	}
	while (pair_pending(x->p, PAIR_B)) {
		const struct engine_cqe *c = pair_cqe(x->p, PAIR_B);

		if (c->opcode == ENGINE_WC_RECV) {
			assert_int_equal(c->status, ENGINE_WC_SUCCESS);
			assert_int_equal(c->byte_len, len[c->wr_id]);
		}
	}
	assert_int_equal(pair_state(x->p, PAIR_A), ENGINE_QPS_CONNECTED);
}

static void test_loss_30(void **state)
{
	run(state, &(struct scenario){ .loss_pct = 30, .delay_a = 20 * PAIR_US,
				       .delay_b = 70 * PAIR_US, .limit = 60000 * PAIR_MS });
}

static void test_loss_50(void **state)
{
	run(state, &(struct scenario){ .loss_pct = 50, .delay_a = 20 * PAIR_US,
				       .delay_b = 70 * PAIR_US, .limit = 600000 * PAIR_MS });
}

static void test_ack_loss_only(void **state)
{
	run(state, &(struct scenario){ .ack_loss_pct = 60, .delay_a = 50 * PAIR_US,
				       .delay_b = 5 * PAIR_US, .limit = 60000 * PAIR_MS });
}

static void test_idle_gaps(void **state)
{
	run(state, &(struct scenario){ .loss_pct = 5, .delay_a = 20 * PAIR_US,
				       .delay_b = 20 * PAIR_US, .idle = 3000 * PAIR_MS,
				       .limit = 100000 * PAIR_MS });
}

static void test_rocev2_loss_5(void **state)
{
	run(state, &(struct scenario){ .mode = MROC_MODE_ROCEV2, .loss_pct = 5,
				       .delay_a = 20 * PAIR_US, .delay_b = 70 * PAIR_US,
				       .limit = 60000 * PAIR_MS });
}

static void test_reorder(void **state)
{
	run(state, &(struct scenario){ .loss_pct = 5, .hold_pct = 20, .delay_a = 20 * PAIR_US,
				       .delay_b = 40 * PAIR_US, .limit = 60000 * PAIR_MS });
}

/* A peer that lies now and then (3 packets in 1,000, a field at a time), seeds 1-40. */
static void test_lies(void **state)
{
	for (unsigned seed = 1; seed <= 40; seed++) {
		struct scenario sc = { .loss_pct = 2, .lie_pct = 3, .delay_a = 20 * PAIR_US,
				       .delay_b = 40 * PAIR_US, .limit = 60000 * PAIR_MS };

		lie_seed = seed;
		run(state, &sc);
		pair_fx_teardown(state);
	}
}

static void test_rocev2_loss_30(void **state)
{
	run(state, &(struct scenario){ .mode = MROC_MODE_ROCEV2, .loss_pct = 30,
				       .delay_a = 20 * PAIR_US, .delay_b = 70 * PAIR_US,
				       .limit = 600000 * PAIR_MS });
}

static void test_ack_loss_90(void **state)
{
	run(state, &(struct scenario){ .ack_loss_pct = 90, .delay_a = 5 * PAIR_US,
				       .delay_b = 50 * PAIR_US, .limit = 600000 * PAIR_MS });
}

static void test_loss_40_reorder_idle(void **state)
{
	run(state, &(struct scenario){ .loss_pct = 40, .hold_pct = 30, .delay_a = 20 * PAIR_US,
				       .delay_b = 70 * PAIR_US, .idle = 2500 * PAIR_MS,
				       .limit = 600000 * PAIR_MS });
}

static void test_a_ahead_loss_30_idle(void **state)
{
	run(state, &(struct scenario){ .loss_pct = 30, .a_ahead = true, .delay_a = 70 * PAIR_US,
				       .delay_b = 20 * PAIR_US, .idle = 3000 * PAIR_MS,
				       .limit = 600000 * PAIR_MS });
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_loss_30, teardown),
		cmocka_unit_test_teardown(test_loss_50, teardown),
		cmocka_unit_test_teardown(test_ack_loss_only, teardown),
		cmocka_unit_test_teardown(test_idle_gaps, teardown),
		cmocka_unit_test_teardown(test_rocev2_loss_5, teardown),
		cmocka_unit_test_teardown(test_reorder, teardown),
		cmocka_unit_test_teardown(test_rocev2_loss_30, teardown),
		cmocka_unit_test_teardown(test_ack_loss_90, teardown),
		cmocka_unit_test_teardown(test_loss_40_reorder_idle, teardown),
		cmocka_unit_test_teardown(test_a_ahead_loss_30_idle, teardown),
		cmocka_unit_test(test_lies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
