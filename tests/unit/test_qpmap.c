// SPDX-License-Identifier: MIT
/*
 * daemon/qpmap.[ch]: add, get, replace, delete, the capacity, QPN 0, and a
 * long random run of adds and deletes (backward-shift deletion keeps every
 * key findable) against a plain array as the reference.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "qpmap.h"

static void test_basic(void **state)
{
	struct qpmap m;
	int a, b;

	(void)state;
	assert_int_equal(qpmap_init(&m, 2), 0);
	assert_null(qpmap_get(&m, 5));
	assert_int_equal(qpmap_add(&m, 0, &a), -EINVAL);
	assert_int_equal(qpmap_add(&m, 5, &a), 0);
	assert_int_equal(qpmap_add(&m, 5, &b), -EEXIST);
	assert_int_equal(qpmap_add(&m, 0x10005, &b), 0);
	assert_int_equal(qpmap_add(&m, 7, &b), -ENOSPC);
	assert_ptr_equal(qpmap_get(&m, 5), &a);
	assert_ptr_equal(qpmap_get(&m, 0x10005), &b);
	assert_int_equal(qpmap_set(&m, 5, &b), 0);
	assert_int_equal(qpmap_set(&m, 6, &b), -ENOENT);
	assert_ptr_equal(qpmap_del(&m, 5), &b);
	assert_null(qpmap_del(&m, 5));
	assert_null(qpmap_get(&m, 0));
	assert_ptr_equal(qpmap_get(&m, 0x10005), &b);
	assert_int_equal(qpmap_add(&m, 7, &a), 0);
	qpmap_free(&m);
}

/* Random adds and deletes of clustered QPNs (same low bits, other generations). */
static void test_random(void **state)
{
	enum { CAP = 4096, KEYS = 3 * CAP };
	static uint32_t key[KEYS];
	static uint8_t in[KEYS];
	struct qpmap m;
	uint32_t n = 0;

	(void)state;
	srandom(1);
	for (uint32_t i = 0; i < KEYS; i++)
		key[i] = ((i % 97) << 16) | (i / 97 + 1);
	assert_int_equal(qpmap_init(&m, CAP), 0);
	for (int step = 0; step < 400000; step++) {
		uint32_t i = (uint32_t)random() % KEYS;

		if (in[i]) {
			assert_ptr_equal(qpmap_del(&m, key[i]), &key[i]);
			in[i] = 0;
			n--;
		} else {
			int rc = qpmap_add(&m, key[i], &key[i]);

			assert_int_equal(rc, n < CAP ? 0 : -ENOSPC);
			if (!rc) {
				in[i] = 1;
				n++;
			}
		}
		if (step % 1000 == 0)
			for (uint32_t k = 0; k < KEYS; k++)
				assert_ptr_equal(qpmap_get(&m, key[k]), in[k] ? &key[k] : NULL);
	}
	assert_int_equal(m.n, n);
	qpmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
