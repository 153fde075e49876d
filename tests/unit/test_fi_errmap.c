// SPDX-License-Identifier: MIT
/*
 * The mroc provider's error mapping (libfabric/errmap.c): libfabric's codes
 * pass unchanged, libmroc's errnos that fi_errno.h lacks (EDQUOT from mrocd's
 * per-client limits above all) become the nearest FI_E* code, and nothing
 * outside fi_errno.h's set comes out.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rdma/fi_errno.h>

#include "errmap.h"

static void test_fi_codes_unchanged(void **state)
{
	static const int codes[] = { 0, -FI_ENOMEM, -FI_EINVAL, -FI_EAGAIN, -FI_ENOSPC,
				     -FI_ECONNREFUSED, -FI_EADDRINUSE, -FI_ETIMEDOUT, -FI_EOTHER,
				     -FI_ENORX, -FI_ETRUNC, -FI_ECANCELED, 5 };

	(void)state;
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		assert_int_equal(mfi_errno_map(codes[i]), codes[i]);
}

static void test_mroc_errnos_mapped(void **state)
{
	(void)state;
	assert_int_equal(mfi_errno_map(-EDQUOT), -FI_ENOSPC);
	assert_int_equal(mfi_errno_map(-EUSERS), -FI_EBUSY);
	assert_int_equal(mfi_errno_map(-EPROTO), -FI_EIO);
	assert_int_equal(mfi_errno_map(-EBADMSG), -FI_EIO);
	assert_int_equal(mfi_errno_map(-ENFILE), -FI_EMFILE);
	assert_int_equal(mfi_errno_map(-ELOOP), -FI_EOTHER);
}

/* Whatever goes in, what comes out is 0 or one of fi_errno.h's codes. */
static void test_always_fi(void **state)
{
	(void)state;
	for (int e = 1; e < FI_ERRNO_MAX + 10; e++) {
		int m = mfi_errno_map(-e);

		assert_true(m < 0);
		assert_true(mfi_is_fi_errno(m));
	}
	assert_false(mfi_is_fi_errno(-EDQUOT));
	assert_false(mfi_is_fi_errno(-FI_ERRNO_MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fi_codes_unchanged),
		cmocka_unit_test(test_mroc_errnos_mapped),
		cmocka_unit_test(test_always_fi),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
