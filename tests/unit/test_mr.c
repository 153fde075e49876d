// SPDX-License-Identifier: MIT
/*
 * Memory regions, through engine.h only: key values, the table's limits,
 * argument checks, and that a deregistered key reaches nothing any more,
 * locally (posting fails) and remotely (the peer refuses it, checked with a
 * connected pair of engines from engine_pair.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "engine_pair.h"

#define BUF_LEN		8192
#define CANARY		0x5a

static struct engine *new_engine(uint32_t max_mrs)
{
	struct engine_config cfg;
	struct engine *eng;

	pair_test_config(&cfg);
	cfg.max_mrs = max_mrs;
	eng = engine_create(&cfg);
	assert_non_null(eng);
	return eng;
}

static void reg_ok(struct engine *eng, uint32_t pd, void *addr, uint64_t len, uint32_t access,
		   uint32_t *lkey, uint32_t *rkey)
{
	*lkey = *rkey = 0;
	assert_int_equal(engine_mr_register(eng, pd, addr, len, access, lkey, rkey), 0);
	assert_int_not_equal(*lkey, 0);
	assert_int_not_equal(*rkey, 0);
}

/* ---- the table, without a connection -------------------------------------------- */

static void test_keys_nonzero_distinct(void **state)
{
	static uint8_t buf[16][64];
	struct engine *eng = new_engine(16);
	uint32_t lkey[16], rkey[16], l, r;

	(void)state;
	for (int i = 0; i < 16; i++)
		reg_ok(eng, 1, buf[i], sizeof(buf[i]), ENGINE_ACCESS_ALL, &lkey[i], &rkey[i]);
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < i; j++) {
			assert_int_not_equal(lkey[i], lkey[j]);
			assert_int_not_equal(rkey[i], rkey[j]);
		}
	/* Full: the next one fails and hands back no key. */
	l = r = 0x77;
	assert_int_equal(engine_mr_register(eng, 1, buf[0], 8, 0, &l, &r), -ENOSPC);
	assert_int_equal(l, 0x77);
	assert_int_equal(r, 0x77);

	/* A freed slot is reused with keys unlike the old ones. */
	assert_int_equal(engine_mr_deregister(eng, lkey[5]), 0);
	reg_ok(eng, 1, buf[5], 32, ENGINE_ACCESS_ALL, &l, &r);
	assert_int_not_equal(l, lkey[5]);
	assert_int_not_equal(r, rkey[5]);
	for (int i = 0; i < 16; i++) {
		assert_int_not_equal(l, lkey[i]);
		assert_int_not_equal(r, rkey[i]);
	}
	assert_int_equal(engine_mr_register(eng, 1, buf[0], 8, 0, &l, &r), -ENOSPC);
	engine_destroy(eng);
}

/* One slot registered and deregistered over and over: never the same lkey twice. */
static void test_reuse_changes_keys(void **state)
{
	static uint8_t buf[64];
	static uint32_t seen_l[500];
	struct engine *eng = new_engine(1);
	uint32_t l, r, prev_r = 0;

	(void)state;
	for (int i = 0; i < 500; i++) {
		reg_ok(eng, 3, buf, sizeof(buf), ENGINE_ACCESS_REMOTE_WRITE, &l, &r);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(l, seen_l[j]);
		assert_int_not_equal(r, prev_r);
		seen_l[i] = l;
		prev_r = r;
		assert_int_equal(engine_mr_deregister(eng, l), 0);
		/* Gone: a second deregistration of the same key fails. */
		assert_int_equal(engine_mr_deregister(eng, l), -ENOENT);
	}
	engine_destroy(eng);
}

static void test_table_full(void **state)
{
	static uint8_t buf[64];
	struct engine *eng = new_engine(4);
	uint32_t l[4], r[4], x, y;

	(void)state;
	for (int i = 0; i < 4; i++)
		reg_ok(eng, 1, buf, sizeof(buf), ENGINE_ACCESS_ALL, &l[i], &r[i]);
	assert_int_equal(engine_mr_register(eng, 1, buf, 1, 0, &x, &y), -ENOSPC);
	assert_int_equal(engine_mr_register(eng, 2, buf, 64, ENGINE_ACCESS_ALL, &x, &y), -ENOSPC);
	assert_int_equal(engine_mr_deregister(eng, l[2]), 0);
	reg_ok(eng, 1, buf, 1, 0, &x, &y);
	assert_int_equal(engine_mr_register(eng, 1, buf, 1, 0, &x, &y), -ENOSPC);
	engine_destroy(eng);
}

/* The largest table the config allows: every slot has its own keys. */
static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void test_table_4096(void **state)
{
	static uint8_t buf[16];
	static uint32_t l[4096], r[4096], sorted[4096];
	struct engine *eng = new_engine(4096);
	uint32_t x, y;

	(void)state;
	for (int i = 0; i < 4096; i++)
		reg_ok(eng, 1, buf, sizeof(buf), ENGINE_ACCESS_ALL, &l[i], &r[i]);
	assert_int_equal(engine_mr_register(eng, 1, buf, 1, 0, &x, &y), -ENOSPC);
	for (int k = 0; k < 2; k++) {
		memcpy(sorted, k ? r : l, sizeof(sorted));
		qsort(sorted, 4096, sizeof(sorted[0]), cmp_u32);
		for (int i = 1; i < 4096; i++)
			assert_int_not_equal(sorted[i - 1], sorted[i]);
	}
	for (int i = 0; i < 4096; i++)
		assert_int_equal(engine_mr_deregister(eng, l[i]), 0);
	reg_ok(eng, 1, buf, sizeof(buf), ENGINE_ACCESS_ALL, &x, &y);
	engine_destroy(eng);
}

static void test_bad_args(void **state)
{
	static uint8_t buf[64];
	struct engine *eng = new_engine(2);
	uint32_t l = 0x11, r = 0x22, l1, r1, l2, r2;

	(void)state;
	assert_int_equal(engine_mr_register(eng, 1, NULL, 64, ENGINE_ACCESS_ALL, &l, &r), -EINVAL);
	assert_int_equal(engine_mr_register(eng, 1, buf, 0, ENGINE_ACCESS_ALL, &l, &r), -EINVAL);
	assert_int_equal(engine_mr_register(eng, 1, buf, 64, 0x10, &l, &r), -EINVAL);
	assert_int_equal(engine_mr_register(eng, 1, buf, 64, ENGINE_ACCESS_ALL | 0x100, &l, &r),
			 -EINVAL);
	assert_int_equal(engine_mr_register(eng, 1, buf, 64, ~0u, &l, &r), -EINVAL);
	/* addr + len past the end of the address space. */
	assert_int_equal(engine_mr_register(eng, 1, buf, UINT64_MAX, ENGINE_ACCESS_ALL, &l, &r),
			 -EINVAL);
	assert_int_equal(engine_mr_register(eng, 1, buf, UINT64_MAX - (uintptr_t)buf + 1,
					    ENGINE_ACCESS_ALL, &l, &r), -EINVAL);
	assert_int_equal(engine_mr_register(eng, 1, (void *)(UINTPTR_MAX - 15), 17,
					    ENGINE_ACCESS_ALL, &l, &r), -EINVAL);
	assert_int_equal(l, 0x11);
	assert_int_equal(r, 0x22);

	/* None of that took a slot: both still register. */
	reg_ok(eng, 1, buf, 64, ENGINE_ACCESS_ALL, &l1, &r1);
	reg_ok(eng, 1, buf, 64, 0, &l2, &r2);

	/* Deregistering what is not an lkey. */
	assert_int_equal(engine_mr_deregister(eng, 0), -ENOENT);
	assert_int_equal(engine_mr_deregister(eng, l1 ^ 0x1000), -ENOENT);	/* other generation */
	assert_int_equal(engine_mr_deregister(eng, l1 | 0xfff), -ENOENT);	/* slot >= max_mrs */
	if (r1 != l1)
		assert_int_equal(engine_mr_deregister(eng, r1), -ENOENT);
	assert_int_equal(engine_mr_deregister(eng, l1), 0);
	assert_int_equal(engine_mr_deregister(eng, l1), -ENOENT);
	assert_int_equal(engine_mr_deregister(eng, l2), 0);
	engine_destroy(eng);
}

/* ---- keys in use: a connected pair ----------------------------------------------- */

struct fx {
	struct pair *p;
	uint8_t *a, *b;		/* BUF_LEN each */
	uint32_t a_lkey, a_rkey, b_lkey, b_rkey;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->p = pair_new(NULL, NULL);
	f->a = malloc(BUF_LEN);
	f->b = malloc(BUF_LEN);
	if (!f->a || !f->b)
		return -1;
	for (int i = 0; i < BUF_LEN; i++)
		f->a[i] = (uint8_t)(i * 7 + 1);
	memset(f->b, CANARY, BUF_LEN);
	pair_connect(f->p, NULL, NULL, 42);
	reg_ok(f->p->s[PAIR_A].eng, 1, f->a, BUF_LEN, ENGINE_ACCESS_ALL, &f->a_lkey, &f->a_rkey);
	reg_ok(f->p->s[PAIR_B].eng, 1, f->b, BUF_LEN, ENGINE_ACCESS_ALL, &f->b_lkey, &f->b_rkey);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f) {
		pair_free(f->p);
		free(f->a);
		free(f->b);
		free(f);
	}
	return 0;
}

static struct engine_wr wr_of(uint8_t op, uint64_t id, uint32_t lkey, uint64_t laddr,
			      uint32_t len, uint32_t rkey, uint64_t raddr)
{
	return (struct engine_wr){
		.wr_id = id, .opcode = op, .flags = ENGINE_WR_SIGNALED, .lkey = lkey,
		.laddr = laddr, .len = len, .rkey = rkey, .raddr = raddr,
	};
}

static void assert_all(const uint8_t *b, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != v)
			fail_msg("byte %zu is 0x%02x, want 0x%02x", i, b[i], v);
}

/* A WRITE that must be refused by B with an access error. */
static void expect_remote_refusal(struct fx *f, const struct engine_wr *wr)
{
	uint64_t acc = pair_stat(f->p, PAIR_B, EC_RX_ACCESS_ERR);

	assert_int_equal(pair_post(f->p, PAIR_A, wr), 0);
	pair_run_for(f->p, 1 * PAIR_MS);
	assert_int_equal(pair_stat(f->p, PAIR_B, EC_RX_ACCESS_ERR), acc + 1);
	pair_expect(f->p, PAIR_A, wr->opcode == ENGINE_WR_READ ? ENGINE_WC_READ : ENGINE_WC_WRITE,
		    ENGINE_WC_REM_ACCESS_ERR, wr->wr_id);
	pair_expect(f->p, PAIR_A, ENGINE_WC_EV_ERROR, PAIR_ANY_STATUS, 0xa);
	assert_int_equal(pair_state(f->p, PAIR_A), ENGINE_QPS_ERROR);
}

static void test_stale_lkey_local(void **state)
{
	struct fx *f = *state;
	struct engine *ea = f->p->s[PAIR_A].eng;
	struct engine_wr wr;
	uint32_t l2, r2;

	wr = wr_of(ENGINE_WR_WRITE, 1, f->a_lkey, 0, 100, f->b_rkey, 0);
	assert_int_equal(engine_mr_deregister(ea, f->a_lkey), 0);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), -EFAULT);
	wr.opcode = ENGINE_WR_SEND;
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), -EFAULT);
	wr.opcode = ENGINE_WR_READ;
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), -EFAULT);
	assert_int_equal(pair_post_recv(f->p, PAIR_A, 2, f->a_lkey, 0, 100), -EFAULT);

	/* The slot is reused: the old key still fails, the new one works. */
	reg_ok(ea, 1, f->a, BUF_LEN, ENGINE_ACCESS_ALL, &l2, &r2);
	assert_int_not_equal(l2, f->a_lkey);
	wr.opcode = ENGINE_WR_WRITE;
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), -EFAULT);
	assert_int_equal(pair_post_recv(f->p, PAIR_A, 2, f->a_lkey, 0, 100), -EFAULT);
	wr.lkey = l2;
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	pair_run_for(f->p, 1 * PAIR_MS);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	assert_memory_equal(f->b, f->a, 100);
	assert_all(f->b + 100, BUF_LEN - 100, CANARY);
	/* Nothing was posted by the failed calls. */
	pair_expect_none(f->p, PAIR_A);
	pair_expect_none(f->p, PAIR_B);
}

/* Local keys are checked for pd, rights and bounds when work is posted. */
static void test_lkey_checks(void **state)
{
	struct fx *f = *state;
	struct engine *ea = f->p->s[PAIR_A].eng;
	uint32_t l_pd2, r_pd2, l_ro, r_ro;
	struct engine_wr wr;

	reg_ok(ea, 2, f->a, BUF_LEN, ENGINE_ACCESS_ALL, &l_pd2, &r_pd2);
	reg_ok(ea, 1, f->a, BUF_LEN, ENGINE_ACCESS_REMOTE_READ, &l_ro, &r_ro);

	wr = wr_of(ENGINE_WR_WRITE, 1, l_pd2, 0, 10, f->b_rkey, 0);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), -EFAULT);
	assert_int_equal(pair_post_recv(f->p, PAIR_A, 2, l_pd2, 0, 10), -EFAULT);
	/* No LOCAL_WRITE: fine as a source, not as a READ or RECV destination. */
	wr = wr_of(ENGINE_WR_READ, 3, l_ro, 0, 10, f->b_rkey, 0);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), -EFAULT);
	assert_int_equal(pair_post_recv(f->p, PAIR_A, 4, l_ro, 0, 10), -EFAULT);
	/* Bounds, including a laddr + len that overflows. */
	wr = wr_of(ENGINE_WR_WRITE, 5, f->a_lkey, BUF_LEN - 9, 10, f->b_rkey, 0);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), -EFAULT);
	wr.laddr = UINT64_MAX - 4;
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), -EFAULT);
	wr.laddr = BUF_LEN;
	wr.len = 1;
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), -EFAULT);
	assert_int_equal(pair_post_recv(f->p, PAIR_A, 6, f->a_lkey, BUF_LEN - 9, 10), -EFAULT);
	assert_int_equal(pair_post_recv(f->p, PAIR_A, 6, f->a_lkey, UINT64_MAX, 2), -EFAULT);

	/* The edges that are inside work. */
	wr = wr_of(ENGINE_WR_WRITE, 7, l_ro, BUF_LEN - 10, 10, f->b_rkey, 0);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	wr = wr_of(ENGINE_WR_READ, 8, f->a_lkey, BUF_LEN - 10, 10, f->b_rkey, 0);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	pair_run_for(f->p, 1 * PAIR_MS);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 7);
	pair_expect(f->p, PAIR_A, ENGINE_WC_READ, ENGINE_WC_SUCCESS, 8);
	pair_expect_none(f->p, PAIR_A);
}

/* B deregisters its region: A's WRITE and READ with the old rkey are refused. */
static void test_stale_rkey_write(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(ENGINE_WR_WRITE, 1, f->a_lkey, 0, 64, f->b_rkey, 0);

	/* Works while registered. */
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	pair_run_for(f->p, 1 * PAIR_MS);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	assert_memory_equal(f->b, f->a, 64);
	memset(f->b, CANARY, BUF_LEN);

	assert_int_equal(engine_mr_deregister(f->p->s[PAIR_B].eng, f->b_lkey), 0);
	wr.wr_id = 2;
	expect_remote_refusal(f, &wr);
	assert_all(f->b, BUF_LEN, CANARY);
}

static void test_stale_rkey_read(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(ENGINE_WR_READ, 9, f->a_lkey, 0, 64, f->b_rkey, 0);

	memset(f->a, 0x33, BUF_LEN);
	assert_int_equal(engine_mr_deregister(f->p->s[PAIR_B].eng, f->b_lkey), 0);
	expect_remote_refusal(f, &wr);
	assert_all(f->a, BUF_LEN, 0x33);
}

/* The old rkey must not reach the region that now occupies its slot. */
static void test_stale_rkey_reused_slot(void **state)
{
	struct fx *f = *state;
	struct engine *eb = f->p->s[PAIR_B].eng;
	uint8_t *other = malloc(BUF_LEN);
	uint32_t l2, r2;
	struct engine_wr wr;

	assert_non_null(other);
	memset(other, CANARY, BUF_LEN);
	assert_int_equal(engine_mr_deregister(eb, f->b_lkey), 0);
	reg_ok(eb, 1, other, BUF_LEN, ENGINE_ACCESS_ALL, &l2, &r2);
	assert_int_not_equal(r2, f->b_rkey);

	/* The new key works ... */
	wr = wr_of(ENGINE_WR_WRITE, 1, f->a_lkey, 0, 32, r2, 100);
	assert_int_equal(pair_post(f->p, PAIR_A, &wr), 0);
	pair_run_for(f->p, 1 * PAIR_MS);
	pair_expect(f->p, PAIR_A, ENGINE_WC_WRITE, ENGINE_WC_SUCCESS, 1);
	assert_memory_equal(other + 100, f->a, 32);
	memset(other, CANARY, BUF_LEN);

	/* ... the old one does not. */
	wr = wr_of(ENGINE_WR_WRITE, 2, f->a_lkey, 0, 32, f->b_rkey, 100);
	expect_remote_refusal(f, &wr);
	assert_all(other, BUF_LEN, CANARY);
	assert_all(f->b, BUF_LEN, CANARY);
	free(other);
}

/* An rkey is not an lkey: B's lkey given as rkey is refused. */
static void test_lkey_is_not_rkey(void **state)
{
	struct fx *f = *state;
	struct engine_wr wr = wr_of(ENGINE_WR_WRITE, 1, f->a_lkey, 0, 16, f->b_lkey, 0);

	assert_int_not_equal(f->b_lkey, f->b_rkey);
	expect_remote_refusal(f, &wr);
	assert_all(f->b, BUF_LEN, CANARY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_nonzero_distinct),
		cmocka_unit_test(test_reuse_changes_keys),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_table_4096),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test_setup_teardown(test_stale_lkey_local, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lkey_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_rkey_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_rkey_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_rkey_reused_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lkey_is_not_rkey, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
