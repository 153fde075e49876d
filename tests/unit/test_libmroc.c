// SPDX-License-Identifier: MIT
/*
 * libmroc against a fake mrocd (test_libmroc_fake.h): contexts (the socket
 * path from the options, $MROC_SOCKET or the default; ENOENT and
 * ECONNREFUSED with no daemon; EPROTO, EUSERS, EACCES from the handshake;
 * options structs that grow), memory regions (allocated and the
 * application's own memfd: sizes, seals, shared contents, keys, errors),
 * requests (the daemon's status passed on, a daemon that goes away or
 * answers out of step, without SIGPIPE), mroc_close cleaning up, several threads on one
 * context, error texts and the print callback.  QPs, work requests and
 * completions are in test_libmroc_qp.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_libmroc_fake.h"

/* ---- contexts --------------------------------------------------------------- */

static void test_open_close(void **state)
{
	struct mroc_ctx *ctx = fake_open();

	assert_non_null(ctx);
	assert_int_equal(F.conns, 1);
	assert_int_equal(F.msgs[MROC_MSG_HELLO], 1);
	assert_true(F.doorbell >= 0);	/* an eventfd arrived with HELLO (the fake checked) */
	mroc_close(ctx);
	mroc_close(NULL);
	/* The fake sees the connection end (poll until its thread got there). */
	for (int i = 0; i < 200 && !F.closed; i++)
		sleep_ms(5);
	assert_int_equal(F.closed, 1);
}

/* mroc_ctx_limits gives what HELLO's reply said; a smaller (older) struct gets its part. */
static void test_ctx_limits(void **state)
{
	struct mroc_ctx *ctx = fake_open();
	struct mroc_ctx_limits l = { .sz = sizeof(l) };
	struct { size_t sz; uint32_t max_qps; } old = { .sz = sizeof(old) };
	struct mroc_ctx_limits tiny = { .sz = sizeof(size_t) };

	assert_non_null(ctx);
	assert_int_equal(mroc_ctx_limits(ctx, &l), 0);
	assert_int_equal(l.sz, sizeof(l));
	assert_int_equal(l.max_qps, FAKE_MAX_QPS);
	assert_int_equal(l.max_mrs, FAKE_MAX_MRS);
	assert_true(l.max_mr_bytes == 1ull << 30);
	assert_int_equal(l.max_sq_depth, FAKE_SQ_MAX);
	assert_int_equal(l.max_rq_depth, FAKE_RQ_MAX);
	assert_int_equal(l.default_paths, 4);
	assert_int_equal(mroc_ctx_limits(ctx, (struct mroc_ctx_limits *)&old), 0);
	assert_int_equal(old.sz, sizeof(old));
	assert_int_equal(old.max_qps, FAKE_MAX_QPS);
	assert_int_equal(mroc_ctx_limits(ctx, &tiny), -EINVAL);
	assert_int_equal(mroc_ctx_limits(NULL, &l), -EINVAL);
	assert_int_equal(mroc_ctx_limits(ctx, NULL), -EINVAL);
	mroc_close(ctx);
}

static void test_open_socket_path(void **state)
{
	struct mroc_ctx_opts opts = { .sz = sizeof(opts) };
	struct mroc_ctx *ctx;

	/* $MROC_SOCKET when the options name none. */
	setenv("MROC_SOCKET", F.path, 1);
	ctx = mroc_open(NULL);
	assert_non_null(ctx);
	mroc_close(ctx);
	ctx = mroc_open(&opts);
	assert_non_null(ctx);
	mroc_close(ctx);
	/* The options win over the environment. */
	setenv("MROC_SOCKET", "/nonexistent/mrocd.sock", 1);
	ctx = fake_open();
	assert_non_null(ctx);
	mroc_close(ctx);
	errno = 0;
	assert_null(mroc_open(NULL));
	assert_int_equal(errno, ENOENT);
	unsetenv("MROC_SOCKET");
	assert_int_equal(F.conns, 3);
}

static void test_open_no_daemon(void **state)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct mroc_ctx_opts opts = { .sz = sizeof(opts) };
	char stale[128], longp[200];
	int fd;

	/* No socket file. */
	snprintf(stale, sizeof(stale), "%s/none.sock", F.dir);
	opts.socket_path = stale;
	errno = 0;
	assert_null(mroc_open(&opts));
	assert_int_equal(errno, ENOENT);

	/* A socket file nobody listens on (a daemon that died). */
	snprintf(stale, sizeof(stale), "%s/stale.sock", F.dir);
	strcpy(sun.sun_path, stale);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	errno = 0;
	assert_null(mroc_open(&opts));
	assert_int_equal(errno, ECONNREFUSED);
	assert_string_equal(mroc_strerror(-ECONNREFUSED),
			    "mrocd is not running or refused the connection (is the socket path right?)");
	unlink(stale);

	/* A socket of another type there is no daemon either. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fd, 1), 0);
	errno = 0;
	assert_null(mroc_open(&opts));
	assert_int_equal(errno, ECONNREFUSED);
	close(fd);
	unlink(stale);

	memset(longp, 'x', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	opts.socket_path = longp;
	errno = 0;
	assert_null(mroc_open(&opts));
	assert_int_equal(errno, ENAMETOOLONG);
	assert_int_equal(F.conns, 0);
}

static void test_open_handshake_errors(void **state)
{
	static const struct {
		uint32_t abi;
		int32_t status;
		int err;
	} cases[] = {
		{ MROC_ABI_VERSION + 1, 0, EPROTO },	/* a daemon of another version */
		{ 0, -EPROTO, EPROTO },			/* one that refuses ours */
		{ 0, -EUSERS, EUSERS },
		{ 0, -EACCES, EACCES },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		F.hello_abi = cases[i].abi;
		F.fail[MROC_MSG_HELLO] = cases[i].status;
		errno = 0;
		assert_null(fake_open());
		assert_int_equal(errno, cases[i].err);
	}
	F.hello_abi = 0;
	F.fail[MROC_MSG_HELLO] = 0;

	/* A daemon that closes the connection instead of answering refused it. */
	F.close_on = MROC_MSG_HELLO;
	errno = 0;
	assert_null(fake_open());
	assert_int_equal(errno, ECONNREFUSED);
}

static void test_open_opts_size(void **state)
{
	struct {
		struct mroc_ctx_opts o;
		uint64_t newer;		/* a field of a later version */
	} big = { .o = { .sz = sizeof(big), .socket_path = F.path } };
	struct mroc_ctx *ctx;

	/* A longer struct is fine while what we do not know is zero... */
	ctx = mroc_open(&big.o);
	assert_non_null(ctx);
	mroc_close(ctx);
	/* ...and refused when it asks for something we cannot do. */
	big.newer = 1;
	errno = 0;
	assert_null(mroc_open(&big.o));
	assert_int_equal(errno, EINVAL);
	/* A struct without even its size. */
	big.o.sz = 0;
	errno = 0;
	assert_null(mroc_open(&big.o));
	assert_int_equal(errno, EINVAL);
}

/* ---- memory regions ------------------------------------------------------------- */

static void test_mr_alloc(void **state)
{
	struct mroc_ctx *ctx = fake_open();
	unsigned int access = MROC_ACCESS_LOCAL_WRITE | MROC_ACCESS_REMOTE_WRITE | MROC_ACCESS_REMOTE_ATOMIC;
	struct fake_mr *fm;
	struct mroc_mr *mr;
	uint8_t *p;
	uint32_t lkey;

	assert_non_null(ctx);
	mr = mroc_mr_alloc(ctx, 10000, access);
	assert_non_null(mr);
	p = mroc_mr_addr(mr);
	assert_non_null(p);
	assert_int_equal(mroc_mr_len(mr), 10000);
	fm = fake_mr_by_lkey(mroc_mr_lkey(mr));
	assert_non_null(fm);	/* the key is the daemon's */
	assert_int_equal(mroc_mr_rkey(mr), fm->rkey);
	assert_int_equal(fm->len, 10000);
	assert_int_equal(fm->access, access);

	/* Zero-filled, and one memory with the daemon's mapping. */
	for (int i = 0; i < 10000; i++)
		assert_int_equal(p[i], 0);
	memset(p, 0x5a, 10000);
	assert_int_equal(fm->map[0], 0x5a);
	assert_int_equal(fm->map[9999], 0x5a);
	fm->map[4242] = 0x17;
	assert_int_equal(p[4242], 0x17);

	lkey = mroc_mr_lkey(mr);
	assert_int_equal(mroc_mr_dereg(mr), 0);
	assert_int_equal(F.msgs[MROC_MSG_MR_DEREG], 1);
	assert_int_equal(F.last_dereg, lkey);
	assert_null(fake_mr_by_lkey(lkey));

	/* Bad arguments never reach the daemon. */
	errno = 0;
	assert_null(mroc_mr_alloc(ctx, 0, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(mroc_mr_alloc(ctx, 4096, 0x80));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(mroc_mr_alloc(NULL, 4096, 0));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(mroc_mr_dereg(NULL), -EINVAL);
	assert_int_equal(F.msgs[MROC_MSG_MR_REG], 1);

	/* The daemon's refusal comes back as errno. */
	F.fail[MROC_MSG_MR_REG] = -EDQUOT;
	errno = 0;
	assert_null(mroc_mr_alloc(ctx, 4096, 0));
	assert_int_equal(errno, EDQUOT);
	F.fail[MROC_MSG_MR_REG] = 0;

	/* The getters take NULL. */
	assert_null(mroc_mr_addr(NULL));
	assert_int_equal(mroc_mr_len(NULL), 0);
	assert_int_equal(mroc_mr_lkey(NULL), 0);
	assert_int_equal(mroc_mr_rkey(NULL), 0);
	mroc_close(ctx);
}

static void test_mr_reg_memfd(void **state)
{
	struct mroc_ctx *ctx = fake_open();
	struct mroc_mr *mr, *mr2;
	uint8_t *p, *p2;
	int fd, plain;

	assert_non_null(ctx);
	fd = memfd_create("app", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 8192), 0);
	assert_int_equal(pwrite(fd, "hello", 5, 100), 5);

	/* Longer than the file: refused here. */
	errno = 0;
	assert_null(mroc_mr_reg_memfd(ctx, fd, 8193, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(mroc_mr_reg_memfd(ctx, -1, 4096, 0));
	assert_int_equal(errno, EBADF);

	/* A prefix of the file is fine; the library maps it. */
	mr = mroc_mr_reg_memfd(ctx, fd, 4096, MROC_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	p = mroc_mr_addr(mr);
	assert_memory_equal(p + 100, "hello", 5);
	assert_int_equal(fake_mr_by_lkey(mroc_mr_lkey(mr))->len, 4096);
	/* Sealed against shrinking now, as the daemon requires. */
	assert_true(fcntl(fd, F_GET_SEALS) & F_SEAL_SHRINK);
	/*
	 * The daemon sealed it against new writable mappings (the fake does as
	 * mrocd): registered again, longer, the library's mapping is a copy of
	 * the live region's, the pages beyond it populated.
	 */
	assert_true(fcntl(fd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE);
	mr2 = mroc_mr_reg_memfd(ctx, fd, 8192, MROC_ACCESS_REMOTE_READ);
	assert_non_null(mr2);
	p2 = mroc_mr_addr(mr2);
	assert_memory_equal(p2 + 100, "hello", 5);
	p2[200] = 0x33;
	assert_int_equal(p[200], 0x33);
	p2[5000] = 0x44;
	assert_int_equal(fake_mr_by_lkey(mroc_mr_lkey(mr2))->map[5000], 0x44);
	assert_int_equal(mroc_mr_dereg(mr2), 0);
	/* The application mapped something else over the region's address: not copied. */
	assert_true(mmap(p, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0) == p);
	errno = 0;
	assert_null(mroc_mr_reg_memfd(ctx, fd, 4096, 0));
	assert_int_equal(errno, EPERM);
	assert_int_equal(mroc_mr_dereg(mr), 0);
	/*
	 * No region of it left, and the last one's mapping was the
	 * application's by then: nothing of ours maps the file to copy.
	 */
	errno = 0;
	assert_null(mroc_mr_reg_memfd(ctx, fd, 4096, 0));
	assert_int_equal(errno, EPERM);
	/* The fd is still the application's. */
	assert_true(fcntl(fd, F_GETFD) >= 0);
	close(fd);

	/*
	 * An application's memfd registered, deregistered and registered again
	 * (a registration cache): the library kept a page of its mapping (and
	 * asked mrocd to keep one: MROC_MR_REG_KEEP_FILE), and copies it.
	 */
	fd = memfd_create("app", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 8192), 0);
	assert_int_equal(pwrite(fd, "again", 5, 4100), 5);
	mr = mroc_mr_reg_memfd(ctx, fd, 4096, 0);
	assert_non_null(mr);
	assert_true(fake_mr_by_lkey(mroc_mr_lkey(mr))->keep);
	assert_int_equal(mroc_mr_dereg(mr), 0);
	mr = mroc_mr_reg_memfd(ctx, fd, 8192, MROC_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	p = mroc_mr_addr(mr);
	assert_memory_equal(p + 4100, "again", 5);
	p[7000] = 0x55;
	assert_int_equal(fake_mr_by_lkey(mroc_mr_lkey(mr))->map[7000], 0x55);
	assert_int_equal(mroc_mr_dereg(mr), 0);
	close(fd);

	/* A memfd that cannot be sealed cannot be registered. */
	plain = memfd_create("app-plain", MFD_CLOEXEC);
	assert_true(plain >= 0);
	assert_int_equal(ftruncate(plain, 4096), 0);
	errno = 0;
	assert_null(mroc_mr_reg_memfd(ctx, plain, 4096, 0));
	assert_int_equal(errno, EPERM);
	close(plain);
	assert_int_equal(F.msgs[MROC_MSG_MR_REG], 4);
	mroc_close(ctx);
}

/* ---- requests ----------------------------------------------------------------- */

static void test_daemon_gone(void **state)
{
	struct mroc_ctx *ctx = fake_open();
	struct mroc_mr *mr;

	assert_non_null(ctx);
	mr = mroc_mr_alloc(ctx, 4096, 0);
	assert_non_null(mr);
	/* The daemon goes away mid-request: an error, not SIGPIPE or a hang. */
	F.close_on = MROC_MSG_MR_REG;
	errno = 0;
	assert_null(mroc_mr_alloc(ctx, 4096, 0));
	assert_int_equal(errno, ENOTCONN);
	/* Every later request fails at once, and nothing is sent. */
	errno = 0;
	assert_null(mroc_qp_create(ctx, NULL));
	assert_int_equal(errno, ENOTCONN);
	/* Local resources still go. */
	assert_int_equal(mroc_mr_dereg(mr), -ENOTCONN);
	assert_int_equal(F.msgs[MROC_MSG_QP_CREATE], 0);
	mroc_close(ctx);

	/* Gone between requests: the next one meets a closed socket (EPIPE, no SIGPIPE). */
	for (int i = 0; i < 200 && F.cfd >= 0; i++)
		sleep_ms(5);
	ctx = fake_open();
	assert_non_null(ctx);
	assert_int_equal(shutdown(F.cfd, SHUT_RDWR), 0);
	errno = 0;
	assert_null(mroc_mr_alloc(ctx, 4096, 0));
	assert_int_equal(errno, ENOTCONN);
	mroc_close(ctx);
}

static void test_reply_out_of_step(void **state)
{
	mroc_print_fn old = mroc_set_print(count_print);
	struct mroc_ctx *ctx = fake_open();

	assert_non_null(ctx);
	printed = 0;
	F.bad_seq_on = MROC_MSG_MR_REG;
	errno = 0;
	assert_null(mroc_mr_alloc(ctx, 4096, 0));
	assert_int_equal(errno, EPROTO);
	assert_true(printed > 0);	/* surprising: the library says so */
	assert_non_null(strstr(last_print, "bad reply"));
	/* No later reply can be trusted either. */
	errno = 0;
	assert_null(mroc_mr_alloc(ctx, 4096, 0));
	assert_int_equal(errno, ENOTCONN);
	mroc_close(ctx);
	assert_ptr_equal(mroc_set_print(old), count_print);
}

static void test_close_cleans_up(void **state)
{
	struct mroc_ctx *ctx = fake_open();

	assert_non_null(ctx);
	assert_non_null(mroc_mr_alloc(ctx, 4096, 0));
	assert_non_null(mroc_mr_alloc(ctx, 8192, 0));
	assert_non_null(mroc_qp_create(ctx, NULL));
	assert_non_null(mroc_qp_create(ctx, NULL));
	/* Everything the context still holds is destroyed (and freed: see ASan). */
	mroc_close(ctx);
	for (int i = 0; i < 200 && !F.closed; i++)
		sleep_ms(5);
	assert_int_equal(F.msgs[MROC_MSG_QP_DESTROY], 2);
	assert_int_equal(F.msgs[MROC_MSG_MR_DEREG], 2);
	assert_int_equal(F.closed, 1);
}

#define THREADS 4
#define ROUNDS	50

static void *mr_churn(void *arg)
{
	struct mroc_ctx *ctx = arg;

	for (int i = 0; i < ROUNDS; i++) {
		struct mroc_mr *mr = mroc_mr_alloc(ctx, 4096 * (1 + i % 3), 0);

		if (!mr || mroc_mr_dereg(mr))
			return (void *)1;
	}
	return NULL;
}

/* Several threads on one context: requests are serialised, none gets another's reply. */
static void test_threads(void **state)
{
	struct mroc_ctx *ctx = fake_open();
	pthread_t t[THREADS];
	void *ret;

	assert_non_null(ctx);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, mr_churn, ctx), 0);
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	assert_int_equal(F.msgs[MROC_MSG_MR_REG], THREADS * ROUNDS);
	assert_int_equal(F.msgs[MROC_MSG_MR_DEREG], THREADS * ROUNDS);
	mroc_close(ctx);
}

/* ---- errors and diagnostics --------------------------------------------------------- */

static void test_strerror(void **state)
{
	/* Either sign; our own words for what the API documents. */
	assert_string_equal(mroc_strerror(ECONNREFUSED), mroc_strerror(-ECONNREFUSED));
	assert_non_null(strstr(mroc_strerror(-ENOENT), "mrocd"));
	assert_non_null(strstr(mroc_strerror(-EPROTO), "version"));
	assert_non_null(strstr(mroc_strerror(-EUSERS), "clients"));
	assert_non_null(strstr(mroc_strerror(-EFAULT), "region"));
	assert_non_null(strstr(mroc_strerror(-EBADMSG), "corrupted"));
	assert_non_null(strstr(mroc_strerror(-EPERM), "MFD_ALLOW_SEALING"));
	assert_string_equal(mroc_strerror(0), "success");
	/* libc's for the rest; a static text for what libc does not know. */
	assert_string_equal(mroc_strerror(-EIO), "Input/output error");
	assert_string_equal(mroc_strerror(-99999), "unknown error");
	assert_string_equal(mroc_strerror(INT32_MIN + 1), "unknown error");

	assert_string_equal(mroc_wc_status_str(MROC_WC_SUCCESS), "success");
	assert_string_equal(mroc_wc_status_str(MROC_WC_FLUSH_ERR), "work request flushed");
	assert_string_equal(mroc_wc_status_str(MROC_WC_BAD_WR), "work request refused by mrocd");
	assert_string_equal(mroc_wc_status_str(MROC_WC_BAD_WR + 1), "unknown status");
	assert_string_equal(mroc_wc_status_str(-1), "unknown status");
}

static void test_print_silent_by_default(void **state)
{
	struct mroc_ctx *ctx;

	/* NULL is the default and silences; set_print returns what was there. */
	assert_null(mroc_set_print(count_print));
	assert_ptr_equal(mroc_set_print(NULL), count_print);
	assert_null(mroc_set_print(NULL));
	/* A normal session prints nothing even with a callback. */
	printed = 0;
	mroc_set_print(count_print);
	ctx = fake_open();
	assert_non_null(ctx);
	mroc_mr_dereg(mroc_mr_alloc(ctx, 4096, 0));
	mroc_qp_destroy(mroc_qp_create(ctx, NULL));
	mroc_close(ctx);
	mroc_set_print(NULL);
	assert_int_equal(printed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_close, fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_ctx_limits, fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_open_socket_path, fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_open_no_daemon, fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_open_handshake_errors, fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_open_opts_size, fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_mr_alloc, fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_mr_reg_memfd, fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_daemon_gone, fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_reply_out_of_step, fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_close_cleans_up, fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_threads, fake_start, fake_stop),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test_setup_teardown(test_print_silent_by_default, fake_start, fake_stop),
	};

	alarm(120);	/* a hang is a failure */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
