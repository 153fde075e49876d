// SPDX-License-Identifier: MIT
/* The mroc provider's address vector table (libfabric/av_table.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "av_table.h"

static struct mfi_addr A(const char *ip, uint16_t port)
{
	struct mfi_addr a = { .port = port };

	inet_pton(AF_INET, ip, &a.ip);
	return a;
}

static void test_insert_lookup_find(void **state)
{
	struct mfi_av av;
	struct mfi_addr a = A("10.0.0.1", 1000), b = A("10.0.0.2", 1000), c = A("10.0.0.1", 1001);

	assert_int_equal(mfi_av_init(&av, 1), 0);
	assert_int_equal(mfi_av_insert(&av, &a), 0);
	assert_int_equal(mfi_av_insert(&av, &b), 1);
	assert_int_equal(mfi_av_insert(&av, &c), 2);	/* grows past the hint */
	assert_true(mfi_addr_eq(mfi_av_get(&av, 1), &b));
	assert_null(mfi_av_get(&av, 3));
	/* Same host, other port: another endpoint. */
	assert_int_equal(mfi_av_find(&av, &c), 2);
	assert_int_equal(mfi_av_find(&av, &(struct mfi_addr){ .ip = b.ip, .port = 9 }), -ENOENT);
	mfi_av_fini(&av);
}

static void test_remove_never_reuses(void **state)
{
	struct mfi_av av;
	struct mfi_addr a = A("10.0.0.1", 7), b = A("10.0.0.2", 7);

	assert_int_equal(mfi_av_init(&av, 4), 0);
	assert_int_equal(mfi_av_insert(&av, &a), 0);
	assert_int_equal(mfi_av_remove(&av, 0), 0);
	assert_int_equal(mfi_av_remove(&av, 0), -EINVAL);	/* twice */
	assert_int_equal(mfi_av_remove(&av, 5), -EINVAL);	/* never inserted */
	assert_null(mfi_av_get(&av, 0));
	assert_int_equal(mfi_av_find(&av, &a), -ENOENT);
	/* A removed fi_addr_t must not come to name a new peer. */
	assert_int_equal(mfi_av_insert(&av, &b), 1);
	mfi_av_fini(&av);
}

static void test_names(void **state)
{
	struct mfi_addr a = A("192.168.1.9", 4242), back;
	struct sockaddr_in sin;
	char buf[64];

	mfi_addr_to_sin(&a, &sin);
	assert_int_equal(sin.sin_family, AF_INET);
	assert_int_equal(ntohs(sin.sin_port), 4242);
	assert_int_equal(mfi_addr_from_sin(&sin, sizeof(sin), &back), 0);
	assert_true(mfi_addr_eq(&a, &back));
	assert_int_equal(mfi_addr_service(&a), MFI_SERVICE_BASE | 4242);
	mfi_addr_str(&a, buf, sizeof(buf));
	assert_string_equal(buf, "fi_sockaddr_in://192.168.1.9:4242");
	/* Refused: short, another family, no port, no address. */
	assert_int_equal(mfi_addr_from_sin(&sin, sizeof(sin) - 1, &back), -EINVAL);
	sin.sin_family = AF_INET6;
	assert_int_equal(mfi_addr_from_sin(&sin, sizeof(sin), &back), -EINVAL);
	mfi_addr_to_sin(&(struct mfi_addr){ .ip = a.ip, .port = 0 }, &sin);
	assert_int_equal(mfi_addr_from_sin(&sin, sizeof(sin), &back), -EINVAL);
	mfi_addr_to_sin(&(struct mfi_addr){ .ip = 0, .port = 1 }, &sin);
	assert_int_equal(mfi_addr_from_sin(&sin, sizeof(sin), &back), -EINVAL);
	assert_int_equal(mfi_addr_from_sin(NULL, 16, &back), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_lookup_find),
		cmocka_unit_test(test_remove_never_reuses),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
