// SPDX-License-Identifier: MIT
/*
 * The mroc provider's FI_ATOMIC table (libfabric/atomic_ops.c): which
 * (family, datatype, operation) are valid and with what count, every
 * operation's result and original value on integers and floats, compares
 * that fail store nothing, bad input refused, and atomicity under threads.
 * Also the ATOMIC header's operation descriptor (proto.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <cmocka.h>
#include <rdma/fi_errno.h>

#include "atomic_ops.h"
#include "proto.h"

static const enum fi_datatype ints[] = {
	FI_INT8, FI_UINT8, FI_INT16, FI_UINT16, FI_INT32, FI_UINT32, FI_INT64, FI_UINT64,
};

static void test_valid_table(void **state)
{
	size_t n;

	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		size_t sz = mfi_atomic_dtsize(ints[i]);

		for (int op = FI_MIN; op <= FI_BXOR; op++) {
			assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_WRITE, ints[i], op, &n), 0);
			assert_int_equal(n, MFI_ATOMIC_MAX_BYTES / sz);
			assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_FETCH, ints[i], op, NULL), 0);
			assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_COMPARE, ints[i], op, NULL),
					 -FI_EOPNOTSUPP);
		}
		for (int op = FI_CSWAP; op <= FI_MSWAP; op++) {
			assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_COMPARE, ints[i], op, NULL), 0);
			assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_FETCH, ints[i], op, NULL),
					 -FI_EOPNOTSUPP);
		}
		/* READ only fetches; WRITE both ways. */
		assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_WRITE, ints[i], FI_ATOMIC_READ, NULL),
				 -FI_EOPNOTSUPP);
		assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_FETCH, ints[i], FI_ATOMIC_READ, NULL), 0);
		assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_WRITE, ints[i], FI_ATOMIC_WRITE, NULL), 0);
	}
	/* Floats: arithmetic and compares, nothing logical or bitwise. */
	for (enum fi_datatype dt = FI_FLOAT; dt <= FI_DOUBLE; dt++) {
		assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_FETCH, dt, FI_SUM, &n), 0);
		assert_int_equal(n, MFI_ATOMIC_MAX_BYTES / mfi_atomic_dtsize(dt));
		assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_WRITE, dt, FI_MIN, NULL), 0);
		assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_COMPARE, dt, FI_CSWAP_GT, NULL), 0);
		assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_WRITE, dt, FI_BOR, NULL),
				 -FI_EOPNOTSUPP);
		assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_WRITE, dt, FI_LAND, NULL),
				 -FI_EOPNOTSUPP);
		assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_COMPARE, dt, FI_MSWAP, NULL),
				 -FI_EOPNOTSUPP);
	}
	assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_FETCH, FI_LONG_DOUBLE, FI_SUM, NULL),
			 -FI_EOPNOTSUPP);
	assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_FETCH, FI_DOUBLE_COMPLEX, FI_SUM, NULL),
			 -FI_EOPNOTSUPP);
	assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_FETCH, FI_UINT64, FI_ATOMIC_OP_LAST, NULL),
			 -FI_EOPNOTSUPP);
	assert_int_equal(mfi_atomic_valid(MFI_ATOMIC_FETCH, (enum fi_datatype)200, FI_SUM, NULL),
			 -FI_EOPNOTSUPP);
}

struct u64_case {
	enum fi_op op;
	uint64_t start, operand, compare, want;
};

static void test_u64_ops(void **state)
{
	static const struct u64_case cases[] = {
		{ FI_MIN, 7, 3, 0, 3 },		{ FI_MIN, 3, 7, 0, 3 },
		{ FI_MAX, 7, 3, 0, 7 },		{ FI_MAX, 3, 7, 0, 7 },
		{ FI_SUM, 40, 2, 0, 42 },	{ FI_SUM, UINT64_MAX, 2, 0, 1 },
		{ FI_PROD, 6, 7, 0, 42 },
		{ FI_LOR, 0, 5, 0, 1 },		{ FI_LOR, 0, 0, 0, 0 },
		{ FI_LAND, 3, 5, 0, 1 },	{ FI_LAND, 3, 0, 0, 0 },
		{ FI_LXOR, 3, 5, 0, 0 },	{ FI_LXOR, 0, 5, 0, 1 },
		{ FI_BOR, 0x0f, 0xf0, 0, 0xff },	{ FI_BAND, 0x3c, 0x0f, 0, 0x0c },
		{ FI_BXOR, 0xff, 0x0f, 0, 0xf0 },	{ FI_ATOMIC_READ, 9, 1, 0, 9 },
		{ FI_ATOMIC_WRITE, 9, 1, 0, 1 },
		{ FI_CSWAP, 5, 8, 5, 8 },	{ FI_CSWAP, 5, 8, 4, 5 },
		{ FI_CSWAP_NE, 5, 8, 4, 8 },	{ FI_CSWAP_NE, 5, 8, 5, 5 },
		{ FI_CSWAP_LE, 5, 8, 5, 8 },	{ FI_CSWAP_LE, 5, 8, 6, 5 },
		{ FI_CSWAP_LT, 5, 8, 4, 8 },	{ FI_CSWAP_LT, 5, 8, 5, 5 },
		{ FI_CSWAP_GE, 5, 8, 5, 8 },	{ FI_CSWAP_GE, 5, 8, 4, 5 },
		{ FI_CSWAP_GT, 5, 8, 6, 8 },	{ FI_CSWAP_GT, 5, 8, 5, 5 },
		{ FI_MSWAP, 0xaaaa, 0x5555, 0x00ff, 0xaa55 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct u64_case *c = &cases[i];
		uint64_t v = c->start, old = 0xdead;

		assert_int_equal(mfi_atomic_apply(FI_UINT64, c->op, &v, &c->operand, &c->compare,
						  &old, 1), 0);
		if (v != c->want || old != c->start)
			fail_msg("case %zu (op %d): %#lx (old %#lx), want %#lx (old %#lx)", i, c->op,
				 (unsigned long)v, (unsigned long)old, (unsigned long)c->want,
				 (unsigned long)c->start);
	}
}

static void test_signed_and_small(void **state)
{
	int8_t s8[3] = { -5, 100, 127 }, a8[3] = { -9, -1, 1 }, o8[3];
	int32_t s32 = -3, a32 = 2, o32;
	uint16_t u16 = 65535, a16 = 65535;

	/* Signed order for MIN/MAX; SUM wraps rather than being undefined. */
	assert_int_equal(mfi_atomic_apply(FI_INT8, FI_MIN, s8, a8, NULL, o8, 3), 0);
	assert_int_equal(s8[0], -9);
	assert_int_equal(s8[1], -1);
	assert_int_equal(s8[2], 1);
	assert_int_equal(o8[0], -5);
	assert_int_equal(o8[2], 127);
	s8[0] = 127;
	assert_int_equal(mfi_atomic_apply(FI_INT8, FI_SUM, s8, &a8[2], NULL, NULL, 1), 0);
	assert_int_equal(s8[0], -128);
	assert_int_equal(mfi_atomic_apply(FI_INT32, FI_MAX, &s32, &a32, NULL, &o32, 1), 0);
	assert_int_equal(s32, 2);
	assert_int_equal(o32, -3);
	assert_int_equal(mfi_atomic_apply(FI_UINT16, FI_PROD, &u16, &a16, NULL, NULL, 1), 0);
	assert_int_equal(u16, 1);	/* 65535^2 mod 2^16 */
}

static void test_floats(void **state)
{
	double d[2] = { 1.5, -2.0 }, ad[2] = { 2.25, -3.0 }, od[2], cd = 3.75;
	float f = 4.0f, af = 2.5f, of, cf = 4.0f;

	assert_int_equal(mfi_atomic_apply(FI_DOUBLE, FI_SUM, d, ad, NULL, od, 2), 0);
	assert_true(d[0] == 3.75 && d[1] == -5.0 && od[0] == 1.5 && od[1] == -2.0);
	assert_int_equal(mfi_atomic_apply(FI_DOUBLE, FI_MIN, d, ad, NULL, NULL, 2), 0);
	assert_true(d[0] == 2.25 && d[1] == -5.0);
	ad[0] = 9.0;
	assert_int_equal(mfi_atomic_apply(FI_DOUBLE, FI_CSWAP, d, ad, &cd, od, 1), 0);
	assert_true(d[0] == 2.25 && od[0] == 2.25);	/* 3.75 != 2.25: nothing stored */
	cd = 2.25;
	assert_int_equal(mfi_atomic_apply(FI_DOUBLE, FI_CSWAP, d, ad, &cd, od, 1), 0);
	assert_true(d[0] == 9.0);
	assert_int_equal(mfi_atomic_apply(FI_FLOAT, FI_PROD, &f, &af, NULL, &of, 1), 0);
	assert_true(f == 10.0f && of == 4.0f);
	assert_int_equal(mfi_atomic_apply(FI_FLOAT, FI_CSWAP_LT, &f, &af, &cf, &of, 1), 0);
	assert_true(f == 2.5f && of == 10.0f);	/* 4 < 10: swapped */
	assert_int_equal(mfi_atomic_apply(FI_FLOAT, FI_ATOMIC_WRITE, &f, &cf, NULL, &of, 1), 0);
	assert_true(f == 4.0f && of == 2.5f);
}

static void test_bad_input(void **state)
{
	uint64_t w[2] = { 1, 2 }, a = 1;

	assert_int_equal(mfi_atomic_apply(FI_UINT64, FI_SUM, (uint8_t *)w + 4, &a, NULL, NULL, 1),
			 -FI_EINVAL);	/* not aligned */
	assert_int_equal(mfi_atomic_apply(FI_UINT64, FI_SUM, w, NULL, NULL, NULL, 1), -FI_EINVAL);
	assert_int_equal(mfi_atomic_apply(FI_UINT64, FI_CSWAP, w, &a, NULL, NULL, 1), -FI_EINVAL);
	assert_int_equal(mfi_atomic_apply(FI_DOUBLE, FI_BOR, w, &a, NULL, NULL, 1),
			 -FI_EOPNOTSUPP);
	assert_int_equal(mfi_atomic_apply(FI_LONG_DOUBLE, FI_SUM, w, &a, NULL, NULL, 1),
			 -FI_EOPNOTSUPP);
	assert_int_equal(w[0], 1);
	assert_int_equal(w[1], 2);
	/* ATOMIC_READ needs no operand. */
	assert_int_equal(mfi_atomic_apply(FI_UINT64, FI_ATOMIC_READ, w, NULL, NULL, &a, 1), 0);
	assert_int_equal(a, 1);
}

#define THREADS	4
#define ADDS	20000

static uint64_t counter, cas_counter;

/* Each thread adds 1 ADDS times, and increments another word by a CSWAP loop. */
static void *adder(void *arg)
{
	uint64_t one = 1, old, seen = 0;

	for (int i = 0; i < ADDS; i++) {
		uint64_t next;

		mfi_atomic_apply(FI_UINT64, FI_SUM, &counter, &one, NULL, &old, 1);
		do {
			next = seen + 1;
			mfi_atomic_apply(FI_UINT64, FI_CSWAP, &cas_counter, &next, &seen, &old, 1);
		} while (old != seen && (seen = old, true));
		seen = next;
	}
	return arg;
}

static void test_threads(void **state)
{
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, adder, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(counter, THREADS * ADDS);
	assert_int_equal(cas_counter, THREADS * ADDS);
}

static void test_desc(void **state)
{
	struct mfi_atomic_desc d = { .op = FI_MSWAP, .datatype = FI_DOUBLE,
				     .kind = MFI_ATOMIC_COMPARE, .count = 4096 };
	struct mfi_atomic_desc e = mfi_atomic_desc_decode(mfi_atomic_desc_encode(&d));

	assert_int_equal(e.op, FI_MSWAP);
	assert_int_equal(e.datatype, FI_DOUBLE);
	assert_int_equal(e.kind, MFI_ATOMIC_COMPARE);
	assert_int_equal(e.count, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_table),
		cmocka_unit_test(test_u64_ops),
		cmocka_unit_test(test_signed_and_small),
		cmocka_unit_test(test_floats),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_desc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
