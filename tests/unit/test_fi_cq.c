// SPDX-License-Identifier: MIT
/*
 * The mroc provider's completion mapping (libfabric/cqring.c): order of
 * successes and errors, conversion to every CQ format, growth, and the
 * error entry (FI_ETRUNC with olen, the API-version cut-off of err_data);
 * when a read that found nothing yields the CPU (mfi_idle_read).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "cqring.h"

static struct mfi_cqe ok(void *ctx, uint64_t flags, size_t len, uint64_t tag, uint64_t data,
			 fi_addr_t src)
{
	return (struct mfi_cqe){
		.e = { .op_context = ctx, .flags = flags, .len = len, .tag = tag, .data = data },
		.src = src,
	};
}

static void test_formats(void **state)
{
	struct mfi_cqring r;
	int c;
	struct fi_cq_entry ce;
	struct fi_cq_msg_entry me;
	struct fi_cq_data_entry de;
	struct fi_cq_tagged_entry te;
	fi_addr_t src;

	assert_int_equal(mfi_cqring_init(&r, 4), 0);
	for (int i = 0; i < 4; i++) {
		struct mfi_cqe e = ok(&c, FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA, 100 + i, 0x55,
				      0x77, (fi_addr_t)i);
		assert_int_equal(mfi_cqring_push(&r, &e), 0);
	}
	assert_int_equal(mfi_cqring_read(&r, FI_CQ_FORMAT_CONTEXT, &ce, 1, &src), 1);
	assert_ptr_equal(ce.op_context, &c);
	assert_int_equal(src, 0);
	assert_int_equal(mfi_cqring_read(&r, FI_CQ_FORMAT_MSG, &me, 1, NULL), 1);
	assert_int_equal(me.len, 101);
	assert_int_equal(me.flags, FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA);
	assert_int_equal(mfi_cqring_read(&r, FI_CQ_FORMAT_DATA, &de, 1, NULL), 1);
	assert_int_equal(de.data, 0x77);
	assert_int_equal(mfi_cqring_read(&r, FI_CQ_FORMAT_TAGGED, &te, 1, &src), 1);
	assert_int_equal(te.tag, 0x55);
	assert_int_equal(te.len, 103);
	assert_int_equal(src, 3);
	assert_int_equal(mfi_cqring_read(&r, FI_CQ_FORMAT_TAGGED, &te, 1, NULL), -FI_EAGAIN);
	assert_int_equal(mfi_cqring_read(&r, FI_CQ_FORMAT_UNSPEC, &te, 1, NULL), -FI_EINVAL);
	mfi_cqring_fini(&r);
}

static void test_errors_in_order(void **state)
{
	struct mfi_cqring r;
	struct fi_cq_tagged_entry te[8];
	struct fi_cq_err_entry err;
	int a, b, c;
	struct mfi_cqe e;

	assert_int_equal(mfi_cqring_init(&r, 2), 0);
	e = ok(&a, FI_SEND | FI_MSG, 1, 0, 0, 0);
	mfi_cqring_push(&r, &e);
	e = ok(&b, FI_RECV | FI_MSG, 64, 0, 0, 0);
	e.err = true;
	e.err_no = FI_ETRUNC;
	e.olen = 36;
	mfi_cqring_push(&r, &e);
	e = ok(&c, FI_SEND | FI_MSG, 3, 0, 0, 0);
	mfi_cqring_push(&r, &e);	/* grows past 2 */
	/* Successes up to the error, then the error, then the rest. */
	assert_int_equal(mfi_cqring_read(&r, FI_CQ_FORMAT_TAGGED, te, 8, NULL), 1);
	assert_ptr_equal(te[0].op_context, &a);
	assert_int_equal(mfi_cqring_read(&r, FI_CQ_FORMAT_TAGGED, te, 8, NULL), -FI_EAVAIL);
	assert_int_equal(mfi_cqring_readerr(&r, &err, FI_VERSION(1, 17)), 1);
	assert_ptr_equal(err.op_context, &b);
	assert_int_equal(err.err, FI_ETRUNC);
	assert_int_equal(err.olen, 36);
	assert_int_equal(err.len, 64);
	assert_null(err.err_data);
	assert_int_equal(mfi_cqring_readerr(&r, &err, FI_VERSION(1, 17)), -FI_EAGAIN);
	assert_int_equal(mfi_cqring_read(&r, FI_CQ_FORMAT_TAGGED, te, 8, NULL), 1);
	assert_ptr_equal(te[0].op_context, &c);
	mfi_cqring_fini(&r);
}

/* A NULL buffer with entries asked for, or a NULL error entry: -FI_EINVAL, the entries stay. */
static void test_null_buffers(void **state)
{
	struct mfi_cqring r;
	struct fi_cq_tagged_entry te[1];
	struct fi_cq_err_entry err;
	int a, b;
	struct mfi_cqe e;

	assert_int_equal(mfi_cqring_init(&r, 4), 0);
	e = ok(&a, FI_SEND | FI_MSG, 1, 0, 0, 0);
	mfi_cqring_push(&r, &e);
	assert_int_equal(mfi_cqring_read(&r, FI_CQ_FORMAT_TAGGED, NULL, 1, NULL), -FI_EINVAL);
	assert_int_equal(mfi_cqring_read(&r, FI_CQ_FORMAT_TAGGED, te, 1, NULL), 1);
	assert_ptr_equal(te[0].op_context, &a);
	e = ok(&b, FI_RECV | FI_MSG, 64, 0, 0, 0);
	e.err = true;
	e.err_no = FI_ETRUNC;
	mfi_cqring_push(&r, &e);
	assert_int_equal(mfi_cqring_readerr(&r, NULL, FI_VERSION(1, 17)), -FI_EINVAL);
	assert_int_equal(mfi_cqring_readerr(&r, &err, FI_VERSION(1, 17)), 1);
	assert_ptr_equal(err.op_context, &b);
	mfi_cqring_fini(&r);
}

static void test_old_api_err_data_untouched(void **state)
{
	struct mfi_cqring r;
	struct fi_cq_err_entry err;
	struct mfi_cqe e = ok(NULL, FI_SEND, 0, 0, 0, 0);

	assert_int_equal(mfi_cqring_init(&r, 2), 0);
	e.err = true;
	e.err_no = FI_EIO;
	mfi_cqring_push(&r, &e);
	memset(&err, 0x5a, sizeof(err));
	/* Before 1.5 the caller's struct may end before err_data_size. */
	assert_int_equal(mfi_cqring_readerr(&r, &err, FI_VERSION(1, 4)), 1);
	assert_int_equal(err.err, FI_EIO);
	assert_int_equal(err.err_data_size, 0x5a5a5a5a5a5a5a5aull);
	mfi_cqring_fini(&r);
}

/* Reads find nothing from t = 1000 ns on: no yield for the budget, then one per 5 us at most. */
static void test_idle_yield(void **state)
{
	struct mfi_idle w;
	int yields = 0;

	(void)state;
	mfi_idle_init(&w, 5000);
	assert_false(mfi_idle_read(&w, false, 1000));
	assert_false(mfi_idle_read(&w, false, 5999));		/* within the budget */
	assert_true(mfi_idle_read(&w, false, 6000));		/* the budget is spent */
	assert_false(mfi_idle_read(&w, false, 6500));		/* yielded a moment ago */
	assert_true(mfi_idle_read(&w, false, 11000));
	/* 1 ms of reads every 100 ns: one yield per 5 us, not one per read. */
	for (int64_t t = 11100; t < 1011100; t += 100)
		yields += mfi_idle_read(&w, false, t);
	assert_int_equal(yields, 200);
	/* A read that found something starts the budget again. */
	assert_false(mfi_idle_read(&w, true, 2000000));
	assert_false(mfi_idle_read(&w, false, 2000100));
	assert_false(mfi_idle_read(&w, false, 2005000));
	assert_true(mfi_idle_read(&w, false, 2005100));
	/* -1: never; 0: from the first empty read (still at most once per 5 us). */
	mfi_idle_init(&w, -1);
	for (int64_t t = 0; t < 100000; t += 1000)
		assert_false(mfi_idle_read(&w, false, t));
	mfi_idle_init(&w, 0);
	assert_true(mfi_idle_read(&w, false, 0));
	assert_false(mfi_idle_read(&w, false, 4999));
	assert_true(mfi_idle_read(&w, false, 5000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_errors_in_order),
		cmocka_unit_test(test_null_buffers),
		cmocka_unit_test(test_old_api_err_data_untouched),
		cmocka_unit_test(test_idle_yield),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
