// SPDX-License-Identifier: MIT
/*
 * Service ids and their owners (daemon/clients/services.c, #24 item 8):
 * another owner's reference refused with EADDRINUSE, references counted,
 * a binding gone with its last one; and the table against a plain array
 * through 200,000 random operations (growth, backward-shift deletion).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "services.h"

static int a, b;	/* two owners */

static void test_owner(void **state)
{
	struct services *s;

	(void)state;
	assert_int_equal(services_create(&s), 0);
	assert_null(services_owner(s, 42));
	assert_int_equal(services_ref(s, 42, &a), 0);
	assert_ptr_equal(services_owner(s, 42), &a);
	assert_int_equal(services_ref(s, 42, &b), -EADDRINUSE);	/* rdma_cm's rule */
	assert_int_equal(services_ref(s, 42, &a), 0);		/* the owner's second QP */
	assert_int_equal(services_count(s), 1);
	assert_int_equal(services_unref(s, 42), 1);
	assert_int_equal(services_ref(s, 42, &b), -EADDRINUSE);	/* one QP still holds it */
	assert_int_equal(services_unref(s, 42), 0);
	assert_null(services_owner(s, 42));
	assert_int_equal(services_count(s), 0);
	assert_int_equal(services_ref(s, 42, &b), 0);		/* free: anyone's now */
	assert_int_equal(services_unref(s, 7), 0);		/* nobody's: nothing */
	services_destroy(s);
}

#define IDS	700

static void test_random(void **state)
{
	static uint32_t refs[IDS];
	static void *own[IDS];
	struct services *s;
	uint32_t n = 0;

	(void)state;
	srand(7);
	assert_int_equal(services_create(&s), 0);
	for (int i = 0; i < 200000; i++) {
		/* Ids that share home slots: multiples of a power of two. */
		unsigned k = (unsigned)rand() % IDS;
		uint64_t id = (uint64_t)k << 12;
		void *who = rand() % 2 ? &a : &b;

		if (rand() % 2) {
			int err = services_ref(s, id, who);

			if (refs[k] && own[k] != who) {
				assert_int_equal(err, -EADDRINUSE);
			} else {
				assert_int_equal(err, 0);
				n += !refs[k]++;
				own[k] = who;
			}
		} else {
			assert_int_equal(services_unref(s, id), refs[k] ? refs[k] - 1 : 0);
			if (refs[k])
				n -= !--refs[k];
		}
		if (i % 1000 == 0)
			for (unsigned j = 0; j < IDS; j++)
				assert_ptr_equal(services_owner(s, (uint64_t)j << 12),
						 refs[j] ? own[j] : NULL);
		assert_int_equal(services_count(s), n);
	}
	services_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
