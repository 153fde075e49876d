// SPDX-License-Identifier: MIT
/*
 * The worker's completion-channel signaller (daemon/clients/evfd.c): a batch
 * of eventfds signalled in as few system calls as it can; one it cannot
 * signal (here an fd that is no eventfd) is counted as failed and the others
 * are still signalled (issue #22: a signal lost there leaves a client asleep
 * with its completion in the CQ, and only a counter tells that stall apart).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "evfd.h"
#include "log.h"

/* The counter of fd, read (and so reset) without blocking; 0 if nothing was signalled. */
static uint64_t take(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

static void test_signal_many(void **state)
{
	struct evfd_signaller *s;
	unsigned int calls = 0, failed = 0;
	int a = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), b = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int p[2], ok[2] = { a, b }, mixed[3] = { a, -1, b };

	(void)state;
	log_set_level(LOG_EMERG);
	assert_true(a >= 0 && b >= 0);
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(evfd_signaller_create(&s), 0);
	mixed[1] = p[1];

	/* Every one an eventfd: each signalled once, nothing failed. */
	assert_int_equal(evfd_signal_many(s, ok, 2, &calls, &failed), 0);
	assert_true(calls >= 1);
	assert_int_equal(failed, 0);
	assert_int_equal(take(a), 1);
	assert_int_equal(take(b), 1);

	/* A pipe in the middle: refused and counted; those around it still signalled. */
	calls = 0;
	assert_true(evfd_signal_many(s, mixed, 3, &calls, &failed) < 0);
	assert_int_equal(failed, 1);
	assert_int_equal(take(a), 1);
	assert_int_equal(take(b), 1);

	evfd_signaller_destroy(s);
	close(a);
	close(b);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signal_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
