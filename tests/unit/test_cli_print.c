// SPDX-License-Identifier: MIT
/*
 * mroc-cli's formatting helpers (cli/fmt.c: units, rates, argument parsing,
 * Prometheus names) and its print layer (cli/print.c): aligned text tables
 * and "label value" groups, -s/-d/-br fields, and the same calls giving one valid
 * JSON document with raw values.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fmt.h"
#include "print.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- fmt.c ------------------------------------------------------------------ */

static void test_fmt_ns(void **state)
{
	static const struct {
		uint64_t ns;
		const char *s;
	} t[] = {
		{ 0, "0" }, { 1, "1ns" }, { 850, "850ns" }, { 999, "999ns" }, { 1000, "1us" },
		{ 12345, "12.3us" }, { 123456, "123us" }, { 999499, "999us" }, { 999500, "1ms" },
		{ 1230000, "1.23ms" }, { 20000000, "20ms" }, { 1500000000, "1.5s" },
		{ 3600000000000ULL, "3600s" },
	};
	char b[FMT_LEN];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		assert_string_equal(fmt_ns(b, sizeof(b), t[i].ns), t[i].s);
}

static void test_fmt_bytes(void **state)
{
	static const struct {
		uint64_t v;
		const char *s;
	} t[] = {
		{ 0, "0B" }, { 512, "512B" }, { 999, "999B" }, { 1000, "0.98KiB" }, { 1024, "1KiB" },
		{ 17344, "16.9KiB" }, { 65536, "64KiB" }, { 1572864, "1.5MiB" },
		{ 10ULL << 30, "10GiB" }, { UINT64_MAX, "16EiB" },
	};
	char b[FMT_LEN];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		assert_string_equal(fmt_bytes(b, sizeof(b), t[i].v), t[i].s);
}

static void test_fmt_bps_si(void **state)
{
	char b[FMT_LEN];

	(void)state;
	assert_string_equal(fmt_bps(b, sizeof(b), 0), "0");
	assert_string_equal(fmt_bps(b, sizeof(b), 999), "999bit/s");
	assert_string_equal(fmt_bps(b, sizeof(b), 12500000), "12.5Mbit/s");
	assert_string_equal(fmt_bps(b, sizeof(b), 1000000000), "1Gbit/s");
	assert_string_equal(fmt_bps(b, sizeof(b), 100000000000ULL), "100Gbit/s");
	assert_string_equal(fmt_si(b, sizeof(b), 0), "0");
	assert_string_equal(fmt_si(b, sizeof(b), 17), "17");
	assert_string_equal(fmt_si(b, sizeof(b), 2.5), "2.5");
	assert_string_equal(fmt_si(b, sizeof(b), 1234), "1.23k");
	assert_string_equal(fmt_si(b, sizeof(b), 45600000), "45.6M");
	assert_string_equal(fmt_si(b, sizeof(b), -1), "-");
	/* a buffer too small truncates but stays a string */
	assert_true(strlen(fmt_bytes(b, 4, 17344)) <= 3);
	assert_true(strlen(fmt_ns(b, 3, 12345)) <= 2);
}

static void test_fmt_duration(void **state)
{
	char b[FMT_LEN];

	(void)state;
	assert_string_equal(fmt_duration(b, sizeof(b), 0), "0.0s");
	assert_string_equal(fmt_duration(b, sizeof(b), 7250000000ULL), "7.2s");
	assert_string_equal(fmt_duration(b, sizeof(b), 306000000000ULL), "5m 6s");
	assert_string_equal(fmt_duration(b, sizeof(b), (4 * 3600 + 5 * 60 + 9) * 1000000000ULL),
			    "4h 5m");
	assert_string_equal(fmt_duration(b, sizeof(b), (3 * 86400 + 4 * 3600) * 1000000000ULL),
			    "3d 4h");
}

static void test_fmt_rate(void **state)
{
	(void)state;
	assert_true(fmt_rate(200, 100, 2.0) == 50.0);
	assert_true(fmt_rate(100, 100, 1.0) == 0.0);
	assert_true(fmt_rate(100, 200, 1.0) == 0.0);	/* reset in between */
	assert_true(fmt_rate(200, 100, 0.0) == 0.0);
	assert_true(fmt_rate(200, 100, -1.0) == 0.0);
}

static void test_fmt_parse(void **state)
{
	uint32_t v = 7;
	double d = 0;

	(void)state;
	assert_int_equal(fmt_parse_u32("65537", &v), 0);
	assert_int_equal(v, 65537);
	assert_int_equal(fmt_parse_u32("0x10001", &v), 0);
	assert_int_equal(v, 65537);
	assert_int_equal(fmt_parse_u32("4294967295", &v), 0);
	assert_int_equal(v, UINT32_MAX);
	v = 7;
	assert_int_equal(fmt_parse_u32("4294967296", &v), -EINVAL);
	assert_int_equal(fmt_parse_u32("", &v), -EINVAL);
	assert_int_equal(fmt_parse_u32(NULL, &v), -EINVAL);
	assert_int_equal(fmt_parse_u32("-1", &v), -EINVAL);
	assert_int_equal(fmt_parse_u32("+1", &v), -EINVAL);
	assert_int_equal(fmt_parse_u32(" 1", &v), -EINVAL);
	assert_int_equal(fmt_parse_u32("12x", &v), -EINVAL);
	assert_int_equal(fmt_parse_u32("qp", &v), -EINVAL);
	assert_int_equal(v, 7);

	assert_int_equal(fmt_parse_interval("1", &d), 0);
	assert_true(d == 1.0);
	assert_int_equal(fmt_parse_interval("0.5", &d), 0);
	assert_true(d == 0.5);
	assert_int_equal(fmt_parse_interval("0.05", &d), -EINVAL);
	assert_int_equal(fmt_parse_interval("0", &d), -EINVAL);
	assert_int_equal(fmt_parse_interval("3601", &d), -EINVAL);
	assert_int_equal(fmt_parse_interval("nan", &d), -EINVAL);
	assert_int_equal(fmt_parse_interval("1s", &d), -EINVAL);
	assert_int_equal(fmt_parse_interval("", &d), -EINVAL);
}

static void test_fmt_snake_case(void **state)
{
	static const char *const good[] = { "rx_pkts", "srtt_ns", "a", "xsk_rx_ring_full", "p2p" };
	static const char *const bad[] = {
		"", "RxPkts", "rx__pkts", "_rx", "rx_", "9lives", "rx-pkts", "rx pkts", "rxPkts",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		assert_true(fmt_is_snake_case(good[i]));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_false(fmt_is_snake_case(bad[i]));
	assert_false(fmt_is_snake_case(NULL));
}

static void test_fmt_prom(void **state)
{
	char b[64];

	(void)state;
	assert_int_equal(fmt_prom_name(b, sizeof(b), "mroc_engine_", "rx_pkts", "_total"), 0);
	assert_string_equal(b, "mroc_engine_rx_pkts_total");
	assert_int_equal(fmt_prom_name(b, sizeof(b), "mroc_", "rx-bad.frame", NULL), 0);
	assert_string_equal(b, "mroc_rx_bad_frame");
	assert_int_equal(fmt_prom_name(b, sizeof(b), NULL, "9lives", NULL), 0);
	assert_string_equal(b, "_9lives");
	assert_int_equal(fmt_prom_name(b, sizeof(b), "", "a:b", ""), 0);
	assert_string_equal(b, "a:b");
	assert_int_equal(fmt_prom_name(b, 8, "mroc_", "rx_pkts", NULL), -ENOSPC);
	assert_int_equal(fmt_prom_name(b, sizeof(b), "", "", ""), -ENOSPC);

	assert_int_equal(fmt_prom_label(b, sizeof(b), "a\"b\\c\nd"), 0);
	assert_string_equal(b, "a\\\"b\\\\c\\nd");
	assert_int_equal(fmt_prom_label(b, sizeof(b), "fd00::1"), 0);
	assert_string_equal(b, "fd00::1");
	assert_int_equal(fmt_prom_label(b, 4, "abcd"), -ENOSPC);
	assert_int_equal(fmt_prom_label(b, 4, "a\"b"), -ENOSPC);
	assert_int_equal(fmt_prom_label(b, 4, "abc"), 0);
}

/* ---- print.c ------------------------------------------------------------------ */

struct capture {
	char *buf;
	size_t len;
	FILE *f;
};

static void cap_start(struct capture *c, bool json, bool pretty, bool stats)
{
	struct print_opts o = { .json = json, .pretty = pretty, .stats = stats };

	memset(c, 0, sizeof(*c));
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
	o.out = c->f;
	print_start(&o);
}

static char *cap_end(struct capture *c)
{
	assert_int_equal(print_end(), 0);
	assert_int_equal(fclose(c->f), 0);
	return c->buf;
}

/* Two paths in a table, the way path.c prints them. */
static void paths_document(void)
{
	static const struct {
		uint32_t qpn, id;
		const char *state;
		uint64_t srtt, pwnd, sent, rto;
	} rows[] = {
		{ 65537, 0, "active", 12345, 65536, 7, 20000000 },
		{ 65538, 12, "timed_out", 0, 17344, 123456, 1000000 },
	};

	print_table_start("paths");
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		print_row_start();
		print_uint(0, "qpn", "QPN", rows[i].qpn);
		print_uint(0, "path_id", "PATH", rows[i].id);
		print_str(0, "state", "STATE", rows[i].state);
		print_ns(0, "srtt_ns", "SRTT", rows[i].srtt);
		print_ns(PRINT_STATS, "rto_ns", "RTO", rows[i].rto);
		print_bytes(0, "pwnd_bytes", "PWND", rows[i].pwnd);
		print_uint(0, "sent", "SENT", rows[i].sent);
		print_uint(0, "internal", NULL, 1);	/* JSON only */
		print_row_end();
	}
	print_table_end();
}

static void test_print_table_text(void **state)
{
	struct capture c;

	(void)state;
	cap_start(&c, false, false, false);
	paths_document();
	assert_string_equal(cap_end(&c),
		"  QPN  PATH  STATE        SRTT     PWND    SENT\n"
		"65537     0  active     12.3us    64KiB       7\n"
		"65538    12  timed_out       0  16.9KiB  123456\n");
	free(c.buf);

	cap_start(&c, false, false, true);		/* -s: RTO too */
	paths_document();
	assert_string_equal(cap_end(&c),
		"  QPN  PATH  STATE        SRTT   RTO     PWND    SENT\n"
		"65537     0  active     12.3us  20ms    64KiB       7\n"
		"65538    12  timed_out       0   1ms  16.9KiB  123456\n");
	free(c.buf);
}

/* -d shows PRINT_DETAILS fields; -br only PRINT_BRIEF ones, in JSON too. */
static void views_document(const struct print_opts *o, struct capture *c)
{
	struct print_opts oo = *o;

	memset(c, 0, sizeof(*c));
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
	oo.out = c->f;
	print_start(&oo);
	print_table_start("qps");
	print_row_start();
	print_uint(PRINT_BRIEF, "qpn", "QPN", 17);
	print_str(PRINT_BRIEF, "state", "STATE", "connected");
	print_uint(0, "tx_msgs", "TX_MSGS", 5);
	print_uint(PRINT_STATS, "rq_posted", "RQ_POSTED", 3);
	print_uint(PRINT_DETAILS, "snd_nxt", "SND_NXT", 99);
	print_row_end();
	print_table_end();
}

static void test_print_details_brief(void **state)
{
	struct print_opts o = { 0 };
	struct capture c;
	json_error_t je;
	json_t *doc, *row;

	(void)state;
	views_document(&o, &c);
	assert_string_equal(cap_end(&c), "QPN  STATE      TX_MSGS\n 17  connected        5\n");
	free(c.buf);
	o.details = true;
	views_document(&o, &c);
	assert_string_equal(cap_end(&c), "QPN  STATE      TX_MSGS  SND_NXT\n 17  connected        5       99\n");
	free(c.buf);
	o = (struct print_opts){ .stats = true, .details = true };
	views_document(&o, &c);
	assert_string_equal(cap_end(&c),
			    "QPN  STATE      TX_MSGS  RQ_POSTED  SND_NXT\n 17  connected        5          3       99\n");
	free(c.buf);
	o = (struct print_opts){ .brief = true, .stats = true, .details = true };
	views_document(&o, &c);
	assert_string_equal(cap_end(&c), "QPN  STATE\n 17  connected\n");
	free(c.buf);
	o = (struct print_opts){ .brief = true, .json = true };
	views_document(&o, &c);
	doc = json_loads(cap_end(&c), 0, &je);
	assert_non_null(doc);
	row = json_array_get(json_object_get(doc, "qps"), 0);
	assert_int_equal(json_object_size(row), 2);
	assert_int_equal(json_integer_value(json_object_get(row, "qpn")), 17);
	json_decref(doc);
	free(c.buf);
	o = (struct print_opts){ .json = true };
	views_document(&o, &c);
	doc = json_loads(cap_end(&c), 0, &je);
	assert_non_null(doc);
	assert_int_equal(json_object_size(json_array_get(json_object_get(doc, "qps"), 0)), 5);
	json_decref(doc);
	free(c.buf);
}

static void test_print_table_json(void **state)
{
	struct capture c;
	json_error_t je;
	json_t *doc, *row;

	(void)state;
	cap_start(&c, true, false, false);
	paths_document();
	doc = json_loads(cap_end(&c), 0, &je);
	assert_non_null(doc);
	assert_int_equal(json_array_size(json_object_get(doc, "paths")), 2);
	row = json_array_get(json_object_get(doc, "paths"), 1);
	assert_int_equal(json_integer_value(json_object_get(row, "qpn")), 65538);
	assert_int_equal(json_integer_value(json_object_get(row, "pwnd_bytes")), 17344);
	assert_int_equal(json_integer_value(json_object_get(row, "rto_ns")), 1000000);
	assert_int_equal(json_integer_value(json_object_get(row, "internal")), 1);
	assert_string_equal(json_string_value(json_object_get(row, "state")), "timed_out");
	assert_int_equal(json_object_size(row), 8);
	/* one line, compact, ending in a newline */
	assert_ptr_equal(strchr(c.buf, '\n'), c.buf + strlen(c.buf) - 1);
	json_decref(doc);
	free(c.buf);

	cap_start(&c, false, true, false);		/* -p implies -j */
	paths_document();
	doc = json_loads(cap_end(&c), 0, &je);
	assert_non_null(doc);
	assert_non_null(strstr(c.buf, "\n  \"paths\": [\n"));
	json_decref(doc);
	free(c.buf);
}

/* A status-like document: fields, a group of counters with rates, a nested group. */
static void counters_document(void)
{
	print_str(0, "daemon_version", "version", "0.1.0");
	print_duration(0, "uptime_ns", "uptime", 306000000000ULL);
	print_text(0, NULL, "backend", "af_xdp, XDP native", NULL);
	print_str(0, "backend", NULL, "af_xdp");
	print_group_start(PRINT_RIGHT, "engine", "engine");
	print_uint(0, "rx_pkts", "rx_pkts", 471);
	print_rate(0, NULL, NULL, 20);
	print_uint(0, "tx_keepalive", "tx_keepalive", 12345);
	print_rate(0, NULL, NULL, 1234);
	print_group_start(PRINT_RIGHT, "by_reason", "by reason");
	print_uint(0, "short", "short", 3);
	print_group_end();
	print_group_end();
	print_line("(1 zero counter not shown)\n");
	print_bool(0, "fallback", NULL, false);
}

static void test_print_group_text(void **state)
{
	struct capture c;

	(void)state;
	cap_start(&c, false, false, false);
	counters_document();
	assert_string_equal(cap_end(&c),
		"version  0.1.0\n"
		"uptime   5m 6s\n"
		"backend  af_xdp, XDP native\n"
		"engine:\n"
		"  rx_pkts         471     20/s\n"
		"  tx_keepalive  12345  1.23k/s\n"
		"  by reason:\n"
		"    short  3\n"
		"(1 zero counter not shown)\n");
	free(c.buf);
}

static void test_print_group_json(void **state)
{
	struct capture c;
	json_error_t je;
	json_t *doc;

	(void)state;
	cap_start(&c, true, false, false);
	counters_document();
	doc = json_loads(cap_end(&c), 0, &je);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "backend")), "af_xdp");
	assert_int_equal(json_integer_value(json_object_get(doc, "uptime_ns")), 306000000000LL);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "engine"),
							    "tx_keepalive")), 12345);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
		json_object_get(doc, "engine"), "by_reason"), "short")), 3);
	assert_true(json_is_false(json_object_get(doc, "fallback")));
	assert_null(strstr(c.buf, "zero counter"));	/* print_line is text only */
	json_decref(doc);
	free(c.buf);
}

static void test_print_rate_json(void **state)
{
	struct capture c;
	json_error_t je;
	json_t *doc;

	(void)state;
	cap_start(&c, true, false, false);
	print_group_start(0, "rates_per_s", NULL);
	print_rate(0, "rx_pkts", NULL, 19.6);
	print_group_end();
	doc = json_loads(cap_end(&c), 0, &je);
	assert_non_null(doc);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "rates_per_s"),
							    "rx_pkts")), 20);
	json_decref(doc);
	free(c.buf);
}

static void test_print_empty_and_abort(void **state)
{
	struct capture c;

	(void)state;
	cap_start(&c, true, false, false);
	assert_string_equal(cap_end(&c), "{}\n");
	free(c.buf);

	cap_start(&c, false, false, false);
	print_table_start("paths");
	print_table_end();
	assert_string_equal(cap_end(&c), "");
	free(c.buf);

	cap_start(&c, false, false, false);
	print_uint(0, "a", "a", 1);
	print_abort();
	assert_int_equal(fclose(c.f), 0);
	assert_int_equal(c.len, 0);
	free(c.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fmt_ns),
		cmocka_unit_test(test_fmt_bytes),
		cmocka_unit_test(test_fmt_bps_si),
		cmocka_unit_test(test_fmt_duration),
		cmocka_unit_test(test_fmt_rate),
		cmocka_unit_test(test_fmt_parse),
		cmocka_unit_test(test_fmt_snake_case),
		cmocka_unit_test(test_fmt_prom),
		cmocka_unit_test(test_print_table_text),
		cmocka_unit_test(test_print_table_json),
		cmocka_unit_test(test_print_details_brief),
		cmocka_unit_test(test_print_group_text),
		cmocka_unit_test(test_print_group_json),
		cmocka_unit_test(test_print_rate_json),
		cmocka_unit_test(test_print_empty_and_abort),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
