// SPDX-License-Identifier: MIT
/*
 * daemon/status.c, a path's health in words (status_path_health, what
 * `mroc-cli path show` prints as HEALTH and WHY): a port counted down is
 * "denied", a timed-out or backing-off path "assumed_bad", any other "good";
 * the sentence names the source port a moved path left, and says so when
 * the move was taken back (the engine then clears prev_sport, or, after an
 * RTO undone, puts the path back on it): "moved from source port 0" was
 * printed for those.  And a QP in ERROR says why (status_qp's "error", the
 * WHY of `mroc-cli qp show -d`).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "status.h"

static const char down[2][16] = { "p2", "p4" };

static const char *health(const struct engine_path_info *pi, const char *port, char *why)
{
	return status_path_health(pi, port, down, 2, why, 160);
}

static void test_good_never_moved(void **state)
{
	struct engine_path_info pi = { .sport = 50000 };
	char why[160];

	(void)state;
	assert_string_equal(health(&pi, "p1", why), "good");
	assert_string_equal(why, "");
}

static void test_denied_and_assumed_bad(void **state)
{
	struct engine_path_info pi = { .sport = 50000, .timed_out = true, .timeouts = 3 };
	char why[160];

	(void)state;
	assert_string_equal(health(&pi, "p4", why), "denied");
	assert_non_null(strstr(why, "p4"));
	assert_string_equal(health(&pi, "p1", why), "assumed_bad");
	assert_non_null(strstr(why, "timed out"));
	pi.timed_out = false;
	pi.backoff = 2;
	assert_string_equal(health(&pi, "p1", why), "assumed_bad");
	assert_non_null(strstr(why, "2 retransmission timeouts"));
}

static void test_moved(void **state)
{
	struct engine_path_info pi = {
		.sport = 50000, .prev_sport = 61000, .repath_why = ENGINE_REPATH_SLOW,
	};
	char why[160];

	(void)state;
	assert_string_equal(health(&pi, "p1", why), "good");
	assert_non_null(strstr(why, "moved from source port 61000"));
	assert_non_null(strstr(why, engine_repath_name(ENGINE_REPATH_SLOW)));
}

/* A trial that did not pay, or a timeout's move taken back: prev_sport 0. */
static void test_moved_back(void **state)
{
	struct engine_path_info pi = {
		.sport = 50000, .prev_sport = 0, .repath_why = ENGINE_REPATH_SLOW,
	};
	char why[160];

	(void)state;
	assert_string_equal(health(&pi, "p1", why), "good");
	assert_null(strstr(why, "port 0"));
	assert_non_null(strstr(why, "back"));
	assert_non_null(strstr(why, "50000"));
	assert_non_null(strstr(why, engine_repath_name(ENGINE_REPATH_SLOW)));
}

/* An RTO undone (Eifel) puts the path back on the port it left: prev_sport == sport. */
static void test_timeout_undone(void **state)
{
	struct engine_path_info pi = {
		.sport = 50000, .prev_sport = 50000, .repath_why = ENGINE_REPATH_TIMEOUT,
	};
	char why[160];

	(void)state;
	assert_string_equal(health(&pi, "p1", why), "good");
	assert_null(strstr(why, "moved from source port 50000"));
	assert_non_null(strstr(why, "back"));
}

static const char *qp_why(uint8_t state, uint8_t err_status, uint8_t err_why)
{
	static char text[160];
	struct engine_qp_info qi = { .state = state, .err_status = err_status,
				     .err_why = err_why };
	json_t *o = status_qp(&qi);
	const char *e = json_string_value(json_object_get(o, "error"));

	snprintf(text, sizeof(text), "%s", e ? e : "(none)");
	json_decref(o);
	return text;
}

static void test_qp_error_says_why(void **state)
{
	(void)state;
	assert_string_equal(qp_why(ENGINE_QPS_CONNECTED, 0, 0), "(none)");
	assert_string_equal(qp_why(ENGINE_QPS_ERROR, ENGINE_WC_CONNECT_ERR, MROC_CM_SECURITY),
			    "connect refused: the security modes differ");
	assert_string_equal(qp_why(ENGINE_QPS_ERROR, ENGINE_WC_CONNECT_ERR,
				   ENGINE_CONN_NO_ANSWER), "connect failed: no answer");
	assert_string_equal(qp_why(ENGINE_QPS_ERROR, ENGINE_WC_CONNECT_ERR, 99), "connect failed");
	assert_string_equal(qp_why(ENGINE_QPS_ERROR, ENGINE_WC_RETRY_EXC_ERR, 0),
			    "retries exceeded: a packet lost too often, or the peer silent");
	assert_string_equal(qp_why(ENGINE_QPS_ERROR, 200, 0), "error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_never_moved),
		cmocka_unit_test(test_denied_and_assumed_bad),
		cmocka_unit_test(test_moved),
		cmocka_unit_test(test_moved_back),
		cmocka_unit_test(test_timeout_undone),
		cmocka_unit_test(test_qp_error_says_why),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
