// SPDX-License-Identifier: MIT
/*
 * Atomics (issue #14): FETCH_ADD and CMP_SWAP on an 8-byte word of the
 * peer's region, as InfiniBand defines them: the word's original value comes
 * back into the requester's 8 local bytes, the operation is atomic with
 * respect to other atomics on the word, and a retransmission never applies
 * it twice.  Refused: no remote-atomic right, a misaligned word, a word
 * outside the region.
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

#define REG_LEN		4096
#define SVC		42
#define NQP		4

struct fx {
	struct pair_fx x;	/* p, a: A's buffer, b: B's (engine_pair.h) */
	uint32_t qa[NQP];
};

static uint64_t word(struct pair_mem *m, uint64_t off)
{
	uint64_t v;

	memcpy(&v, m->buf + off, sizeof(v));
	return v;
}

static void set_word(struct pair_mem *m, uint64_t off, uint64_t v)
{
	memcpy(m->buf + off, &v, sizeof(v));
}

static struct fx *fx_new(void **state, uint32_t b_access)
{
	struct fx *f = pair_fx_open(state, sizeof(*f), NULL, NULL, REG_LEN, b_access, 0);

	pair_connect(f->x.p, NULL, NULL, SVC);
	f->qa[0] = f->x.p->s[PAIR_A].qpn;
	return f;
}

static int teardown(void **state)
{
	return pair_fx_teardown(state);
}

static struct engine_wr atomic_wr(struct fx *f, uint8_t op, uint64_t id, uint64_t laddr,
				  uint64_t raddr, uint64_t cmp_add, uint64_t swap)
{
	return (struct engine_wr){
		.wr_id = id, .opcode = op, .flags = ENGINE_WR_SIGNALED, .lkey = f->x.a->lkey,
		.laddr = laddr, .len = 8, .rkey = f->x.b->rkey, .raddr = raddr,
		.compare_add = cmp_add, .swap = swap,
	};
}

static void settle(struct fx *f)
{
	pair_run_for(f->x.p, 5 * PAIR_MS);
}

static void test_fetch_add(void **state)
{
	struct fx *f = fx_new(state, ENGINE_ACCESS_ALL);
	struct engine_wr wr = atomic_wr(f, ENGINE_WR_ATOMIC_FETCH_ADD, 1, 64, 128, 5, 0);
	const struct engine_cqe *c;

	set_word(f->x.b, 128, 1000);
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	settle(f);
	c = pair_expect(f->x.p, PAIR_A, ENGINE_WC_ATOMIC_FETCH_ADD, ENGINE_WC_SUCCESS, 1);
	assert_int_equal(c->byte_len, 8);
	assert_int_equal(word(f->x.a, 64), 1000);
	assert_int_equal(word(f->x.b, 128), 1005);
	pair_expect_none(f->x.p, PAIR_B);	/* the responder's application sees nothing */
}

static void test_cmp_swap(void **state)
{
	struct fx *f = fx_new(state, ENGINE_ACCESS_ALL);
	struct engine_wr hit = atomic_wr(f, ENGINE_WR_ATOMIC_CMP_SWP, 1, 0, 8, 7, 99);
	struct engine_wr miss = atomic_wr(f, ENGINE_WR_ATOMIC_CMP_SWP, 2, 8, 8, 7, 123);

	set_word(f->x.b, 8, 7);
	assert_int_equal(pair_post(f->x.p, PAIR_A, &hit), 0);
	assert_int_equal(pair_post(f->x.p, PAIR_A, &miss), 0);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_ATOMIC_CMP_SWP, ENGINE_WC_SUCCESS, 1);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_ATOMIC_CMP_SWP, ENGINE_WC_SUCCESS, 2);
	assert_int_equal(word(f->x.a, 0), 7);	/* swapped: it was 7 */
	assert_int_equal(word(f->x.a, 8), 99);	/* not swapped: it was 99 by then */
	assert_int_equal(word(f->x.b, 8), 99);
}

/* Drop every n-th packet of either side, atomics and their answers included. */
struct lossy {
	unsigned every, seen, dropped, resp_dropped;
};

static bool drop_nth(struct pair *p, struct pair_pkt *pkt, void *arg)
{
	struct lossy *l = arg;

	(void)p;
	if (++l->seen % l->every)
		return true;
	l->dropped++;
	l->resp_dropped += pkt->data[PKT_OPCODE] == MROC_OP_ATOMIC_RESP;
	return false;
}

/*
 * Four QPs add to one counter under 5% loss of every packet (requests,
 * answers and ACKs): the counter ends at exactly the sum, every original
 * value handed out is distinct, and answers were lost on the way, so
 * retransmissions happened without any add applied twice.
 */
static void test_counter_under_loss(void **state)
{
	enum { PER_QP = 60 };
	struct fx *f = fx_new(state, ENGINE_ACCESS_ALL);
	struct lossy l = { .every = 20 };
	uint64_t seen[NQP * PER_QP];
	unsigned n = 0, next[NQP] = { 0 };

	for (int q = 1; q < NQP; q++)
		f->qa[q] = pair_connect_more(f->x.p, 0x100 + q, 100 + q);
	pair_run_for(f->x.p, 200 * PAIR_US);
	while (pair_pending(f->x.p, PAIR_A))
		pair_cqe(f->x.p, PAIR_A);
	while (pair_pending(f->x.p, PAIR_B))
		pair_cqe(f->x.p, PAIR_B);
	set_word(f->x.b, 0, 0);
	f->x.p->filter = drop_nth;
	f->x.p->filter_arg = &l;
	/* Each QP keeps 4 adds outstanding, its results in its own slots of A's region. */
	while (n < NQP * PER_QP) {
		for (int q = 0; q < NQP; q++) {
			while (next[q] < PER_QP && next[q] - (unsigned)(n / NQP) < 4) {
				unsigned i = q * PER_QP + next[q];
				struct engine_wr wr = atomic_wr(f, ENGINE_WR_ATOMIC_FETCH_ADD, i,
								8ULL * i, 0, 1, 0);

				if (engine_post_send(f->x.p->s[PAIR_A].eng, f->qa[q], &wr, pair_clock(f->x.p, PAIR_A)))
					break;
				next[q]++;
			}
		}
		pair_run_for(f->x.p, 100 * PAIR_US);
		while (pair_pending(f->x.p, PAIR_A)) {
			const struct engine_cqe *c = pair_cqe(f->x.p, PAIR_A);

			assert_int_equal(c->opcode, ENGINE_WC_ATOMIC_FETCH_ADD);
			assert_int_equal(c->status, ENGINE_WC_SUCCESS);
			seen[n++] = word(f->x.a, 8 * c->wr_id);
		}
		assert_true(f->x.p->now < 10000 * PAIR_MS);
	}
	assert_int_equal(word(f->x.b, 0), NQP * PER_QP);
	/* The originals are 0 .. sum - 1, each once: no add twice, none lost. */
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			assert_true(seen[i] != seen[j]);
	for (unsigned i = 0; i < n; i++)
		assert_true(seen[i] < NQP * PER_QP);
	assert_true(l.resp_dropped > 0);
	assert_true(pair_stat(f->x.p, PAIR_B, EC_RX_DUP) > 0);
}

static void test_refused(void **state)
{
	struct fx *f = fx_new(state, ENGINE_ACCESS_LOCAL_WRITE | ENGINE_ACCESS_REMOTE_WRITE |
				  ENGINE_ACCESS_REMOTE_READ);
	struct engine_wr wr = atomic_wr(f, ENGINE_WR_ATOMIC_FETCH_ADD, 1, 0, 0, 1, 0);

	/* Locally refused: misaligned, or not 8 bytes. */
	wr.raddr = 4;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), -EINVAL);
	wr.raddr = 0;
	wr.len = 4;
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), -EINVAL);
	wr.len = 8;
	/* The region grants no remote atomics: an access error, the word untouched. */
	set_word(f->x.b, 0, 42);
	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_ATOMIC_FETCH_ADD, ENGINE_WC_REM_ACCESS_ERR, 1);
	assert_int_equal(word(f->x.b, 0), 42);
}

static void test_out_of_bounds(void **state)
{
	struct fx *f = fx_new(state, ENGINE_ACCESS_ALL);
	struct engine_wr wr = atomic_wr(f, ENGINE_WR_ATOMIC_CMP_SWP, 1, 0, REG_LEN, 0, 1);

	assert_int_equal(pair_post(f->x.p, PAIR_A, &wr), 0);
	settle(f);
	pair_expect(f->x.p, PAIR_A, ENGINE_WC_ATOMIC_CMP_SWP, ENGINE_WC_REM_ACCESS_ERR, 1);
	pair_mem_expect(f->x.b, 0, NULL, 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_teardown(fn, teardown)
	const struct CMUnitTest tests[] = {
		T(test_fetch_add),
		T(test_cmp_swap),
		T(test_counter_under_loss),
		T(test_refused),
		T(test_out_of_bounds),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
