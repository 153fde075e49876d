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

static int teardown(void **state)
{
	return pair_fx_teardown(state);
}

struct net {
	uint64_t rng;
	unsigned loss_pct;	/* every packet, both ways */
	unsigned ack_loss_pct;	/* B's ACKs only, on top */
	uint64_t dropped;
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
	return true;
}

struct scenario {
	uint8_t mode;
	unsigned loss_pct, ack_loss_pct;
	uint64_t delay_a, delay_b;	/* one way, from each side */
	uint64_t idle;			/* quiet between bursts of OUTSTANDING ops */
	uint64_t limit;			/* fake time the whole run may take */
};

static void run(void **state, const struct scenario *sc)
{
	struct engine_qp_attr qa = pair_test_attr(), qb = pair_test_attr();
	struct net n = { .rng = 0x9e3779b97f4a7c15ULL, .loss_pct = sc->loss_pct,
			 .ack_loss_pct = sc->ack_loss_pct };
	struct engine_config ca, cb;
	uint32_t len[OPS];
	unsigned posted = 0, done = 0, out = 0;
	uint64_t t0, end;
	struct pair_fx *x;

	pair_test_config(&ca);
	ca.dead_peer_ns = 1000000 * PAIR_MS;	/* heavy loss is no dead peer */
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
		while (pair_pending(x->p, PAIR_A)) {
			const struct engine_cqe *c = pair_cqe(x->p, PAIR_A);

			if (c->status != ENGINE_WC_SUCCESS)
				print_message("wr %llu status %u\n", (unsigned long long)c->wr_id,
					      c->status);
			assert_int_equal(c->status, ENGINE_WC_SUCCESS);
			done++;
			out--;
			if (sc->idle && !out)
				pair_run_for(x->p, sc->idle);
		}
	}
	print_message("mode %u, loss %u%%, ACK loss %u%%, delays %llu/%llu us, idle %llu ms: "
		      "%u of %u done in %.1f ms, %llu dropped, state %u\n", sc->mode,
		      sc->loss_pct, sc->ack_loss_pct, (unsigned long long)(sc->delay_a / PAIR_US),
		      (unsigned long long)(sc->delay_b / PAIR_US),
		      (unsigned long long)(sc->idle / PAIR_MS), done, OPS,
		      (double)(x->p->now - t0) / PAIR_MS, (unsigned long long)n.dropped,
		      pair_state(x->p, PAIR_A));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_loss_30, teardown),
		cmocka_unit_test_teardown(test_loss_50, teardown),
		cmocka_unit_test_teardown(test_ack_loss_only, teardown),
		cmocka_unit_test_teardown(test_idle_gaps, teardown),
		cmocka_unit_test_teardown(test_rocev2_loss_5, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
