// SPDX-License-Identifier: MIT
/*
 * mrocd logging (daemon/log.[ch]): the "<N>" prefix, one line per message
 * (and per line of a multi-line message), the level filter, level names,
 * errno and %m, long messages, the per-call-site rate limiter on a fake
 * clock, and whole lines from threads logging at once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"

/* Test hooks defined in log.c (log.h is the fixed API, so they are not there). */
void log_test_set_clock(uint64_t (*now_ms)(void));
void log_test_set_fd(int fd);

static int out_fd = -1;
static char out_path[64];
static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

/* Each test logs into a fresh O_APPEND file at level info on the real clock. */
static int setup(void **state)
{
	snprintf(out_path, sizeof(out_path), "/tmp/mroc-test-log.XXXXXX");
	out_fd = mkstemp(out_path);
	if (out_fd < 0)
		return -1;
	fcntl(out_fd, F_SETFL, O_APPEND);
	log_test_set_fd(out_fd);
	log_test_set_clock(NULL);
	log_set_level(LOG_INFO);
	return 0;
}

static int teardown(void **state)
{
	log_test_set_fd(-1);
	log_test_set_clock(NULL);
	close(out_fd);
	unlink(out_path);
	return 0;
}

/* Everything logged since the last call (the file is emptied). */
static char *take_output(void)
{
	static char buf[4 << 20];
	ssize_t n = pread(out_fd, buf, sizeof(buf) - 1, 0);

	assert_true(n >= 0);
	buf[n] = '\0';
	assert_int_equal(ftruncate(out_fd, 0), 0);
	return buf;
}

static void expect_output(const char *want)
{
	assert_string_equal(take_output(), want);
}

static unsigned int count_lines(const char *s, const char *needle)
{
	unsigned int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_prefix(void **state)
{
	log_msg(LOG_ERR, "hello %d", 5);
	expect_output("<3>hello 5\n");
	pr_err("e");
	pr_warn("w");
	pr_info("i");
	log_msg(LOG_NOTICE, "n");
	expect_output("<3>e\n<4>w\n<6>i\n<5>n\n");
	/* Trailing newlines are dropped: one line, one '\n'. */
	pr_info("with newline\n");
	pr_info("two\n\n");
	expect_output("<6>with newline\n<6>two\n");
	/* Facility bits do not reach the prefix. */
	log_msg(LOG_DAEMON | LOG_WARNING, "facility");
	expect_output("<4>facility\n");
	/* Empty message: still one prefixed line. */
	log_msg(LOG_INFO, "%s", "");
	expect_output("<6>\n");
}

static void test_multiline(void **state)
{
	pr_warn("first\nsecond\n\nfourth");
	expect_output("<4>first\n<4>second\n<4>\n<4>fourth\n");
}

static void vwrap(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(prio, fmt, ap);
	va_end(ap);
}

static void test_vmsg(void **state)
{
	vwrap(LOG_ERR, "%s=%u", "x", 7u);
	expect_output("<3>x=7\n");
}

static void test_level_filter(void **state)
{
	assert_int_equal(log_get_level(), LOG_INFO);
	pr_debug("hidden");
	pr_info("shown");
	expect_output("<6>shown\n");

	log_set_level(LOG_WARNING);
	assert_int_equal(log_get_level(), LOG_WARNING);
	pr_info("hidden");
	log_msg(LOG_NOTICE, "hidden");
	pr_warn("w");
	pr_err("e");
	expect_output("<4>w\n<3>e\n");

	log_set_level(LOG_DEBUG);
	pr_debug("d");
	expect_output("<7>d\n");

	log_set_level(LOG_ERR);
	pr_warn("hidden");
	pr_err("e");
	log_msg(LOG_CRIT, "c");
	expect_output("<3>e\n<2>c\n");

	/* Out of range levels are clamped. */
	log_set_level(99);
	assert_int_equal(log_get_level(), LOG_DEBUG);
	log_set_level(-5);
	assert_int_equal(log_get_level(), LOG_EMERG);
	pr_err("hidden");
	log_msg(LOG_EMERG, "m");
	expect_output("<0>m\n");
}

static void test_level_parse(void **state)
{
	assert_int_equal(log_level_parse("err"), LOG_ERR);
	assert_int_equal(log_level_parse("warning"), LOG_WARNING);
	assert_int_equal(log_level_parse("info"), LOG_INFO);
	assert_int_equal(log_level_parse("debug"), LOG_DEBUG);
	assert_int_equal(log_level_parse("notice"), LOG_NOTICE);
	assert_int_equal(log_level_parse("error"), LOG_ERR);
	assert_int_equal(log_level_parse("warn"), LOG_WARNING);
	assert_int_equal(log_level_parse("verbose"), -EINVAL);
	assert_int_equal(log_level_parse(""), -EINVAL);
	assert_int_equal(log_level_parse("INFO"), -EINVAL);
	assert_int_equal(log_level_parse("info "), -EINVAL);
	assert_int_equal(log_level_parse(NULL), -EINVAL);
}

static void test_errno(void **state)
{
	errno = ENOENT;
	pr_err("open: %m");
	assert_int_equal(errno, ENOENT);
	expect_output("<3>open: No such file or directory\n");
	/* Filtered messages leave errno alone too. */
	errno = EBUSY;
	pr_debug("x");
	assert_int_equal(errno, EBUSY);
	pr_warn_rl("rl %m");
	assert_int_equal(errno, EBUSY);
	expect_output("<4>rl Device or resource busy\n");
}

static void test_long_message(void **state)
{
	static char big[10000];
	char *out;
	size_t len;

	memset(big, 'x', sizeof(big) - 1);
	pr_info("%s", big);
	out = take_output();
	len = strlen(out);
	/* Cut to one write of at most PIPE_BUF bytes, one line, marked. */
	assert_true(len <= 4096);
	assert_true(len > 4000);
	assert_int_equal(strncmp(out, "<6>xxx", 6), 0);
	assert_string_equal(out + len - 4, "...\n");
	assert_int_equal(count_lines(out, "\n"), 1);

	/* Just below the limit: whole. */
	big[4096 - 4] = '\0';		/* "<6>" + 4092 + "\n" = 4096 */
	pr_info("%s", big);
	out = take_output();
	assert_int_equal(strlen(out), 4096);
	assert_int_equal(out[4094], 'x');

	/* Many short lines, longer than the buffer together: cut at a line. */
	static char lines[6000];
	for (size_t i = 0; i + 2 < sizeof(lines); i += 2)
		memcpy(lines + i, "a\n", 2);
	pr_info("%s", lines);
	out = take_output();
	assert_true(strlen(out) <= 4096);
	assert_string_equal(out + strlen(out) - 4, "...\n");
	assert_int_equal(strncmp(out, "<6>a\n<6>a\n", 10), 0);
}

static void test_rate_limit(void **state)
{
	struct log_rl rl = { 0 };
	char *out;

	log_test_set_clock(fake_clock);
	fake_now = 5000;
	for (int i = 0; i < 25; i++)
		log_msg_rl(&rl, LOG_WARNING, "drop %d", i);
	out = take_output();
	assert_int_equal(count_lines(out, "\n"), 10);
	assert_non_null(strstr(out, "<4>drop 0\n"));
	assert_non_null(strstr(out, "<4>drop 9\n"));
	assert_null(strstr(out, "drop 10"));
	assert_int_equal(rl.suppressed, 15);

	/* Still inside the window: nothing. */
	fake_now = 5999;
	log_msg_rl(&rl, LOG_WARNING, "drop %d", 25);
	expect_output("");

	/* The next window: the count of the last one, then the message. */
	fake_now = 6000;
	log_msg_rl(&rl, LOG_WARNING, "drop %d", 26);
	expect_output("<4>16 messages suppressed\n<4>drop 26\n");
	for (int i = 0; i < 9; i++)
		log_msg_rl(&rl, LOG_WARNING, "more");
	assert_int_equal(count_lines(take_output(), "\n"), 9);
	log_msg_rl(&rl, LOG_WARNING, "over");
	expect_output("");

	/* One lost in the last window; a window after one without losses says nothing. */
	fake_now = 7000;
	log_msg_rl(&rl, LOG_WARNING, "a");
	expect_output("<4>1 message suppressed\n<4>a\n");
	fake_now = 9000;
	log_msg_rl(&rl, LOG_WARNING, "b");
	expect_output("<4>b\n");
}

/* Each pr_*_rl call site has its own limiter; filtered messages do not count. */
static void rl_site_a(int i)
{
	pr_warn_rl("site a %d", i);
}

static void rl_site_b(int i)
{
	pr_err_rl("site b %d", i);
}

static void rl_site_debug(int i)
{
	pr_rl(LOG_DEBUG, "debug %d", i);
}

/* As mrocd's lines an outsider triggers ("client connected", "client gone"). */
static void rl_site_info(int i)
{
	pr_info_rl("client %d connected", i);
}

static void rl_site_info2(int i)
{
	pr_info_rl("client %d gone", i);
}

static void test_rate_limit_sites(void **state)
{
	char *out;

	log_test_set_clock(fake_clock);
	fake_now = 100000;
	for (int i = 0; i < 20; i++) {
		rl_site_a(i);
		rl_site_b(i);
		rl_site_debug(i);	/* below the level */
	}
	out = take_output();
	assert_int_equal(count_lines(out, "<4>site a"), 10);
	assert_int_equal(count_lines(out, "<3>site b"), 10);
	assert_int_equal(count_lines(out, "debug"), 0);

	/* Raising the level later: the debug site starts with a clean slate. */
	log_set_level(LOG_DEBUG);
	fake_now = 101000;
	rl_site_a(99);
	rl_site_debug(99);
	expect_output("<4>10 messages suppressed\n<4>site a 99\n<7>debug 99\n");

	/* Clock at 0 (or any value): a fresh limiter still prints its burst. */
	struct log_rl rl = { 0 };
	fake_now = 0;
	for (int i = 0; i < 12; i++)
		log_msg_rl(&rl, LOG_ERR, "z");
	assert_int_equal(count_lines(take_output(), "\n"), 10);
	fake_now = 999;
	log_msg_rl(&rl, LOG_ERR, "z");
	expect_output("");
	fake_now = 1000;
	log_msg_rl(&rl, LOG_ERR, "z");
	expect_output("<3>3 messages suppressed\n<3>z\n");
}

/*
 * 2,000 clients connecting and going within 1.5 s of the clock: two call
 * sites, 10 lines each a window of 1 s and one "suppressed" line at the
 * next window's first message, not 4,000 lines.
 */
static void test_rate_limit_info(void **state)
{
	char *out;

	log_test_set_clock(fake_clock);
	fake_now = 200000;
	for (int i = 0; i < 2000; i++) {
		fake_now = 200000 + (uint64_t)i * 1500 / 2000;
		rl_site_info(i);
		rl_site_info2(i);
	}
	out = take_output();
	assert_int_equal(count_lines(out, "<6>client"), 40);
	assert_int_equal(count_lines(out, "<6>1324 messages suppressed\n"), 2);
	assert_non_null(strstr(out, "<6>client 0 connected\n<6>client 0 gone\n"));
	assert_non_null(strstr(out, "<6>client 1334 connected\n"));
	assert_null(strstr(out, "client 1999"));
	/* Below the level: neither printed nor counted. */
	log_set_level(LOG_WARNING);
	fake_now = 300000;
	rl_site_info(1);
	expect_output("");
	log_set_level(LOG_INFO);
	rl_site_info(2);
	expect_output("<6>656 messages suppressed\n<6>client 2 connected\n");
}

/* ---- threads --------------------------------------------------------------------- */

#define NTHREADS	4
#define NLINES		2000

static struct log_rl shared_rl;

static void *writer(void *arg)
{
	int t = (int)(intptr_t)arg;
	char pad[200];

	memset(pad, 'a' + t, sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (int i = 0; i < NLINES; i++) {
		/* Multi-line messages stay together too. */
		if (i % 100 == 0)
			pr_info("t%d %05d %s\nt%d cont", t, i, pad, t);
		else
			pr_info("t%d %05d %s", t, i, pad);
		log_msg_rl(&shared_rl, LOG_ERR, "rl t%d", t);
	}
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t th[NTHREADS];
	unsigned int seen[NTHREADS] = { 0 }, rl_lines = 0, cont = 0;
	char *out, *line, *save;

	log_test_set_clock(fake_clock);
	fake_now = 50;
	memset(&shared_rl, 0, sizeof(shared_rl));
	for (int t = 0; t < NTHREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t), 0);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);

	out = take_output();
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int t, i, n = 0;

		if (!strncmp(line, "<3>rl t", 7)) {
			rl_lines++;
			continue;
		}
		if (sscanf(line, "<6>t%d cont%n", &t, &n) == 1 && n == (int)strlen(line)) {
			cont++;
			continue;
		}
		/* "<6>tT NNNNN " + 199 pad characters of the same thread. */
		if (sscanf(line, "<6>t%d %d %n", &t, &i, &n) != 2 || t < 0 || t >= NTHREADS)
			fail_msg("mangled line: %s", line);
		if (strlen(line + n) != 199)
			fail_msg("mangled line: %s", line);
		assert_int_equal(strspn(line + n, (char[]){ (char)('a' + t), 0 }), 199);
		assert_int_equal(i, (int)seen[t]);	/* each thread's lines in order */
		seen[t]++;
	}
	for (int t = 0; t < NTHREADS; t++)
		assert_int_equal(seen[t], NLINES);
	assert_int_equal(cont, NTHREADS * NLINES / 100);
	/* The shared limiter let exactly one burst through. */
	assert_int_equal(rl_lines, 10);
	assert_int_equal(shared_rl.printed + shared_rl.suppressed, NTHREADS * NLINES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_prefix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_multiline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vmsg, setup, teardown),
		cmocka_unit_test_setup_teardown(test_level_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_level_parse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errno, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_message, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_limit_sites, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_limit_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
