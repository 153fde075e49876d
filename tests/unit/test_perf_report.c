// SPDX-License-Identifier: MIT
/*
 * mroc-perf statistics and output (cli/perf/stats.c, cli/perf/report.c):
 * nearest-rank percentiles, the median perftest calls t_typical, the
 * population standard deviation, half round trips, sample growth; the
 * bandwidth peak over 1 ms windows (never below the average, the average
 * when the run is shorter than a window), Gb/sec and Mpps; perftest's
 * column heads byte for byte, every value under its head; the text header
 * block; one valid JSON document (parsed back with jansson) for results and
 * for errors, strings escaped.
 *
 * The code under test is compiled into this program (the Makefile links unit
 * tests with the project's libraries, not with cli/perf objects).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/perf/stats.c"
#include "../../cli/perf/report.c"
#include "../../cli/perf/cpu.c"

#define PERFTEST_BW_HEAD \
	" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
#define PERFTEST_BW_HEAD_MB \
	" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
#define PERFTEST_LAT_HEAD \
	" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    " \
	"t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"

/* Output of the report calls in a string (free it). */
struct capture {
	char *buf;
	size_t len;
	FILE *f;
};

static void cap_open(struct capture *c)
{
	c->buf = NULL;
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
}

static char *cap_close(struct capture *c)
{
	fclose(c->f);
	return c->buf;
}

/* ---- statistics --------------------------------------------------------------------- */

static void test_percentile_nearest_rank(void **state)
{
	uint64_t v[1000];

	for (int i = 0; i < 1000; i++)
		v[i] = (uint64_t)i + 1;
	assert_int_equal(stats_percentile(v, 100, 99.0), 99);
	assert_int_equal(stats_percentile(v, 100, 99.9), 100);
	assert_int_equal(stats_percentile(v, 100, 50.0), 50);
	assert_int_equal(stats_percentile(v, 100, 100.0), 100);
	assert_int_equal(stats_percentile(v, 1000, 99.9), 999);
	assert_int_equal(stats_percentile(v, 1000, 99.0), 990);
	assert_int_equal(stats_percentile(v, 1, 99.9), 1);
	assert_int_equal(stats_percentile(v, 10, 99.0), 10);	/* ceil(9.9) = 10th */
	assert_int_equal(stats_percentile(v, 0, 99.0), 0);
}

static void test_lat_odd(void **state)
{
	/* 1..5 us, unsorted; a ping-pong reports half of each. */
	uint64_t ns[] = { 10000, 2000, 6000, 4000, 8000 };
	struct lat_stats st;

	stats_lat(ns, 5, 2.0, &st);
	assert_int_equal(st.n, 5);
	assert_float_equal(st.min, 1.0, 1e-9);
	assert_float_equal(st.max, 5.0, 1e-9);
	assert_float_equal(st.typical, 3.0, 1e-9);
	assert_float_equal(st.avg, 3.0, 1e-9);
	assert_float_equal(st.stdev, sqrt(2.0), 1e-9);
	assert_float_equal(st.p99, 5.0, 1e-9);
	assert_float_equal(st.p999, 5.0, 1e-9);
	/* Sorted in place. */
	for (int i = 1; i < 5; i++)
		assert_true(ns[i - 1] <= ns[i]);
}

static void test_lat_even_median_is_upper_middle(void **state)
{
	uint64_t ns[] = { 4000, 1000, 3000, 2000 };
	struct lat_stats st;

	stats_lat(ns, 4, 1.0, &st);
	assert_float_equal(st.typical, 3.0, 1e-9);	/* perftest: delta[n / 2] */
	assert_float_equal(st.avg, 2.5, 1e-9);
	assert_float_equal(st.stdev, sqrt(1.25), 1e-9);
}

static void test_lat_tail(void **state)
{
	uint64_t ns[1000];
	struct lat_stats st;

	/* 989 samples of 1 us, then 2 us .. 12 us: p99 = 990th = 2 us, p99.9 = 999th = 11 us. */
	for (int i = 0; i < 1000; i++)
		ns[i] = i < 989 ? 1000 : (uint64_t)(i - 987) * 1000;
	stats_lat(ns, 1000, 1.0, &st);
	assert_float_equal(st.p99, 2.0, 1e-9);
	assert_float_equal(st.p999, 11.0, 1e-9);
	assert_float_equal(st.max, 12.0, 1e-9);
	assert_float_equal(st.typical, 1.0, 1e-9);
}

static void test_lat_empty_and_one(void **state)
{
	uint64_t one = 7000;
	struct lat_stats st;

	stats_lat(NULL, 0, 2.0, &st);
	assert_int_equal(st.n, 0);
	assert_float_equal(st.max, 0, 0);
	stats_lat(&one, 1, 1.0, &st);
	assert_float_equal(st.min, 7.0, 1e-9);
	assert_float_equal(st.typical, 7.0, 1e-9);
	assert_float_equal(st.stdev, 0.0, 1e-9);
}

static void test_samples_grow(void **state)
{
	struct samples s = { 0 };

	for (uint64_t i = 0; i < 5000; i++)
		assert_int_equal(samples_add(&s, i), 0);
	assert_int_equal(s.n, 5000);
	assert_int_equal(s.v[4999], 4999);
	samples_reset(&s);
	assert_int_equal(s.n, 0);
	samples_free(&s);
	assert_null(s.v);
}

static void test_units(void **state)
{
	/* 125 MB in 1 s is 1 Gb/sec; 10^6 messages in 1 s is 1 Mpps. */
	assert_float_equal(stats_gbps(125000000, 1000000000), 1.0, 1e-12);
	assert_float_equal(stats_mpps(1000000, 1000000000), 1.0, 1e-12);
	assert_float_equal(stats_gbps(1, 0), 0, 0);
	assert_float_equal(stats_mpps(1, 0), 0, 0);
}

static void test_peak_windows(void **state)
{
	struct peak p;
	struct bw_result r;

	peak_init(&p, PEAK_WINDOW_NS);
	peak_update(&p, 1000000000, 0);
	/* Under a window: no peak yet. */
	peak_update(&p, 1000500000, 1000000);
	assert_false(p.closed);
	/* First window, 1 ms, 2 MB: 2e9 B/s. */
	peak_update(&p, 1001000000, 2000000);
	assert_true(p.closed);
	assert_float_equal(p.best_bps, 2e9, 1);
	/* Slower window (2 ms, 1 MB) keeps the best; a faster one (1 ms, 3 MB) wins. */
	peak_update(&p, 1003000000, 3000000);
	assert_float_equal(p.best_bps, 2e9, 1);
	peak_update(&p, 1004000000, 6000000);
	assert_float_equal(p.best_bps, 3e9, 1);
	/* 6 MB in 4 ms on 1 QP of 1000-byte messages: 12 Gb/s average, 24 peak. */
	stats_bw(&r, 1000, 6000, 1, 4000000, &p);
	assert_float_equal(r.avg_gbps, 12.0, 1e-9);
	assert_float_equal(r.peak_gbps, 24.0, 1e-6);
	assert_float_equal(r.mpps, 1.5, 1e-9);
	assert_int_equal(r.iters, 6000);
}

static void test_peak_short_run_and_floor(void **state)
{
	struct peak p;
	struct bw_result r;

	/* Shorter than a window: the peak is the average. */
	peak_init(&p, 0);
	assert_int_equal(p.window_ns, PEAK_WINDOW_NS);
	peak_update(&p, 0, 0);
	peak_update(&p, 400000, 1000);
	stats_bw(&r, 100, 10, 2, 400000, &p);
	assert_float_equal(r.peak_gbps, r.avg_gbps, 1e-12);
	assert_int_equal(r.iters, 5);		/* per QP */
	assert_int_equal(r.msgs, 10);
	/* A peak below the average (a slow first window) is raised to it. */
	peak_init(&p, PEAK_WINDOW_NS);
	peak_update(&p, 0, 0);
	peak_update(&p, 1000000, 1);
	stats_bw(&r, 1000, 10000, 1, 2000000, &p);
	assert_float_equal(r.peak_gbps, r.avg_gbps, 1e-12);
	/* No peak tracker. */
	stats_bw(&r, 1000, 10, 1, 1000, NULL);
	assert_float_equal(r.peak_gbps, r.avg_gbps, 1e-12);
}

/* ---- text --------------------------------------------------------------------------- */

static void test_heads_are_perftests(void **state)
{
	struct capture c;

	cap_open(&c);
	report_bw_head(c.f, true, false);
	assert_string_equal(cap_close(&c), PERFTEST_BW_HEAD);
	free(c.buf);
	cap_open(&c);
	report_bw_head(c.f, false, false);
	assert_string_equal(cap_close(&c), PERFTEST_BW_HEAD_MB);
	free(c.buf);
	cap_open(&c);
	report_lat_head(c.f);
	assert_string_equal(cap_close(&c), PERFTEST_LAT_HEAD);
	free(c.buf);
}

/* Each of the n values of row starts where heads[i] starts in the head line. */
static void assert_under_heads(const char *head, const char *row, const char *const *heads,
			       const char *const *values, int n)
{
	for (int i = 0; i < n; i++) {
		const char *h = strstr(head, heads[i]);
		long at;

		assert_non_null(h);
		at = h - head;
		assert_true((long)strlen(row) > at);
		assert_true(at == 0 || row[at - 1] == ' ');
		assert_memory_equal(row + at, values[i], strlen(values[i]));
	}
}

static void test_bw_line_under_heads(void **state)
{
	static const char *const heads[] = { "#bytes", "#iterations", "BW peak", "BW average",
					     "MsgRate" };
	static const char *const values[] = { "65536", "5000", "11.20", "10.99", "0.020960" };
	struct bw_result r = { .size = 65536, .iters = 5000, .peak_gbps = 11.2, .avg_gbps = 10.99,
			       .mpps = 0.02096 };
	struct capture c;

	static const char *const values_mb[] = { "65536", "5000", "1335.14", "1310.11", "0.020960" };

	cap_open(&c);
	report_bw_line(c.f, &r, true, NULL);
	cap_close(&c);
	assert_under_heads(PERFTEST_BW_HEAD, c.buf, heads, values, 5);
	assert_int_equal(c.buf[strlen(c.buf) - 1], '\n');
	free(c.buf);
	/* perftest's default: MB/sec of 2^20 bytes. */
	cap_open(&c);
	report_bw_line(c.f, &r, false, NULL);
	cap_close(&c);
	assert_under_heads(PERFTEST_BW_HEAD_MB, c.buf, heads, values_mb, 5);
	free(c.buf);
}

/* --cpu_util: perftest's CPU_Util[%] head after MsgRate, the value under it. */
static void test_cpu_util_column(void **state)
{
	static const char *const heads[] = { "MsgRate", "CPU_Util[%]" };
	static const char *const values[] = { "0.020960", "37.50" };
	struct bw_result r = { .size = 65536, .iters = 5000, .peak_gbps = 11.2, .avg_gbps = 10.99,
			       .mpps = 0.02096 };
	struct cpu_util u = { .host = 37.5, .self = 99.0 };
	struct capture c;
	char *head;

	cap_open(&c);
	report_bw_head(c.f, true, true);
	head = cap_close(&c);
	assert_int_equal(strncmp(head, PERFTEST_BW_HEAD, strlen(PERFTEST_BW_HEAD) - 1), 0);
	assert_string_equal(head + strlen(PERFTEST_BW_HEAD) - 1, "     CPU_Util[%]\n");
	cap_open(&c);
	report_bw_line(c.f, &r, true, &u);
	cap_close(&c);
	assert_under_heads(head, c.buf, heads, values, 2);
	free(c.buf);
	free(head);
}

/* /proc/stat's first line: busy = all - idle - iowait; anything else is refused. */
static void test_cpu_parse_stat(void **state)
{
	uint64_t busy = 0, total = 0;

	assert_int_equal(cpu_parse_stat("cpu  100 5 50 800 40 3 2 0 0 0\n", &busy, &total), 0);
	assert_int_equal(total, 1000);
	assert_int_equal(busy, 160);
	/* old kernels: four fields */
	assert_int_equal(cpu_parse_stat("cpu 1 2 3 4\n", &busy, &total), 0);
	assert_int_equal(total, 10);
	assert_int_equal(busy, 6);
	assert_int_equal(cpu_parse_stat("cpu0 1 2 3 4\n", &busy, &total), -EINVAL);
	assert_int_equal(cpu_parse_stat("cpu 1 2\n", &busy, &total), -EINVAL);
	assert_int_equal(cpu_parse_stat("", &busy, &total), -EINVAL);
}

/* Between two samples: busy/total of the host, CPU time over wall time of the process. */
static void test_cpu_util_between(void **state)
{
	struct cpu_sample a = { .busy = 100, .total = 1000, .self_ns = 0, .wall_ns = 0,
				.host_ok = true };
	struct cpu_sample b = { .busy = 350, .total = 2000, .self_ns = 500000000,
				.wall_ns = 1000000000, .host_ok = true };
	struct cpu_util u;

	cpu_util_between(&a, &b, &u);
	assert_true(fabs(u.host - 25.0) < 1e-9);
	assert_true(fabs(u.self - 50.0) < 1e-9);
	b.host_ok = false;	/* no /proc/stat: 0, not garbage */
	cpu_util_between(&a, &b, &u);
	assert_true(u.host == 0.0);
	cpu_sample(&a);		/* the real thing: sane values */
	cpu_sample(&b);
	cpu_util_between(&a, &b, &u);
	assert_true(u.host >= 0.0 && u.host <= 100.0);
	assert_true(u.self >= 0.0);
}

static void test_lat_line_under_heads(void **state)
{
	static const char *const heads[] = { "#bytes", "#iterations", "t_min", "t_max",
					     "t_typical", "t_avg", "t_stdev", "99% percentile",
					     "99.9% percentile" };
	static const char *const values[] = { "8", "1000", "1.02", "40.50", "1.20", "1.31",
					      "0.44", "2.51", "30.00" };
	struct lat_stats st = { .n = 1000, .min = 1.02, .max = 40.5, .typical = 1.2, .avg = 1.31,
				.stdev = 0.44, .p99 = 2.51, .p999 = 30.0 };
	struct capture c;

	cap_open(&c);
	report_lat_line(c.f, 8, 1000, &st);
	cap_close(&c);
	assert_under_heads(PERFTEST_LAT_HEAD, c.buf, heads, values, 9);
	free(c.buf);
}

static void test_wide_values_stay_apart(void **state)
{
	struct bw_result r = { .size = 8388608, .iters = 12345678901234ull, .peak_gbps = 1e6,
			       .avg_gbps = 1e6, .mpps = 1 };
	struct capture c;

	cap_open(&c);
	report_bw_line(c.f, &r, true, NULL);
	cap_close(&c);
	assert_non_null(strstr(c.buf, "12345678901234 1000000.00"));
	free(c.buf);
}

static struct report_hdr hdr_bw(void)
{
	return (struct report_hdr){
		.test = "write_bw", .title = "RDMA_Write BW Test", .side = "client", .qps = 2,
		.mode = "metaroce", .paths = 4, .tx_depth = 128, .cq_mod = 100, .iters = 5000,
		.port = 18515, .socket_path = "/run/mroc/mrocd.sock",
	};
}

static void test_text_report(void **state)
{
	struct report_hdr h = hdr_bw();
	struct report_qp qps[2] = {
		{ .qpn = 0x12, .rkey = 0xdeadbeef, .region_len = 4096, .rqpn = 0x34,
		  .rrkey = 0x1234, .rregion_len = 8192, .mrocd = "10.0.0.2", .service_id = 7 },
		{ .qpn = 0x13, .rqpn = 0x35, .mrocd = "10.0.0.2", .service_id = 8 },
	};
	struct report_row row = { .measured_by = "client",
				  .bw = { .size = 65536, .iters = 5000, .peak_gbps = 1.5,
					  .avg_gbps = 1.25, .mpps = 0.002 } };
	struct report r;
	struct capture c;

	cap_open(&c);
	report_init(&r, c.f, false, &h);
	assert_int_equal(report_begin(&r, qps, 2), 0);
	assert_int_equal(report_row(&r, &row), 0);
	report_end(&r, NULL);
	report_free(&r);
	cap_close(&c);
	assert_non_null(strstr(c.buf, "RDMA_Write BW Test"));
	assert_non_null(strstr(c.buf, " Number of qps   : 2"));
	assert_non_null(strstr(c.buf, "Mode           : metaroce"));
	assert_non_null(strstr(c.buf, " TX depth        : 128"));
	assert_non_null(strstr(c.buf, " local address: QPN 0x0012 RKey 0xdeadbeef Region 4096[B]"));
	assert_non_null(strstr(c.buf, " remote address: QPN 0x0034 RKey 0x00001234 Region 8192[B] "
				      "mrocd 10.0.0.2 service 0x0000000000000007"));
	assert_non_null(strstr(c.buf, PERFTEST_BW_HEAD_MB " 65536      5000           178.81"));
	/* Closed by a rule. */
	assert_non_null(strstr(c.buf, "0.002000\n" REPORT_RULE "\n"));
	free(c.buf);
}

/* ---- JSON --------------------------------------------------------------------------- */

static json_t *parse(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	if (!j)
		fail_msg("invalid JSON (%s, line %d col %d): %s", e.text, e.line, e.column, text);
	return j;
}

static void test_json_bw(void **state)
{
	struct report_hdr h = hdr_bw();
	struct report_qp qp = { .qpn = 1, .rkey = 2, .region_len = 3, .rqpn = 4, .rrkey = 5,
				.rregion_len = 6, .mrocd = "fd00::2", .service_id = 0xabc };
	struct report_row row = { .measured_by = "server",
				  .bw = { .size = 4096, .iters = 10, .msgs = 20, .ns = 2000000000,
					  .peak_gbps = 9.5, .avg_gbps = 9.25, .mpps = 0.25 } };
	struct report r;
	struct capture c;
	json_t *j, *res;

	h.paths = 0;
	cap_open(&c);
	report_init(&r, c.f, true, &h);
	assert_int_equal(report_begin(&r, &qp, 1), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(report_row(&r, &row), 0);
	report_end(&r, NULL);
	report_free(&r);
	cap_close(&c);
	/* One document, on one line. */
	assert_int_equal(strchr(c.buf, '\n') - c.buf, (long)strlen(c.buf) - 1);
	j = parse(c.buf);
	assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
	assert_string_equal(json_string_value(json_object_get(j, "test")), "write_bw");
	assert_string_equal(json_string_value(json_object_get(j, "side")), "client");
	assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
	assert_null(json_object_get(j, "error"));
	assert_true(json_is_null(json_object_get(json_object_get(j, "params"), "paths")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "params"),
							    "tx_depth")), 128);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
				json_array_get(json_object_get(j, "qps"), 0), "remote"), "service_id")),
			    "0x0000000000000abc");
	res = json_object_get(j, "results");
	assert_int_equal(json_array_size(res), 3);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(res, 2), "bytes")), 4096);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(res, 0), "messages")),
			 20);
	assert_float_equal(json_real_value(json_object_get(json_array_get(res, 0),
							   "bw_avg_gbps")), 9.25, 1e-6);
	assert_float_equal(json_real_value(json_object_get(json_array_get(res, 0), "seconds")), 2.0,
			   1e-6);
	assert_string_equal(json_string_value(json_object_get(json_array_get(res, 1),
							      "measured_by")), "server");
	json_decref(j);
	free(c.buf);
}

static void test_json_lat_and_error(void **state)
{
	struct report_hdr h = hdr_bw();
	struct report_row row = { .lat = true, .measured_by = "client", .size = 8, .iters = 1000,
				  .st = { .n = 1000, .min = 1, .max = 2, .typical = 1.5,
					  .avg = 1.5, .stdev = 0.1, .p99 = 1.9, .p999 = 2 } };
	struct report r;
	struct capture c;
	json_t *j, *w;

	h.lat = true;
	h.duration_s = 5;
	cap_open(&c);
	report_init(&r, c.f, true, &h);
	assert_int_equal(report_row(&r, &row), 0);
	report_end(&r, "verify: qp 0 \"x\"\\ \n\t\x01 failed");
	report_free(&r);
	cap_close(&c);
	j = parse(c.buf);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "error");
	assert_string_equal(json_string_value(json_object_get(j, "error")),
			    "verify: qp 0 \"x\"\\ \n\t\x01 failed");
	assert_true(json_is_null(json_object_get(json_object_get(j, "params"), "iterations")));
	assert_int_equal(json_array_size(json_object_get(j, "qps")), 0);
	w = json_array_get(json_object_get(j, "results"), 0);
	assert_float_equal(json_real_value(json_object_get(w, "t_typical_us")), 1.5, 1e-6);
	assert_float_equal(json_real_value(json_object_get(w, "p99_9_us")), 2.0, 1e-6);
	json_decref(j);
	free(c.buf);
}

/* A failure before any QP exists still gives one valid document. */
static void test_json_early_error(void **state)
{
	struct report_hdr h = hdr_bw();
	struct report r;
	struct capture c;
	json_t *j;

	cap_open(&c);
	report_init(&r, c.f, true, &h);
	report_end(&r, "cannot use mrocd at /run/mroc/mrocd.sock: No such file or directory");
	report_free(&r);
	cap_close(&c);
	j = parse(c.buf);
	assert_int_equal(json_array_size(json_object_get(j, "results")), 0);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "error");
	json_decref(j);
	free(c.buf);
}

static void test_json_non_finite(void **state)
{
	struct report_hdr h = hdr_bw();
	struct report_row row = { .bw = { .size = 1, .avg_gbps = NAN, .peak_gbps = INFINITY } };
	struct report r;
	struct capture c;
	json_t *j;

	cap_open(&c);
	report_init(&r, c.f, true, &h);
	report_row(&r, &row);
	report_end(&r, NULL);
	report_free(&r);
	cap_close(&c);
	j = parse(c.buf);
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(j, "results"), 0),
						 "bw_avg_gbps")));
	json_decref(j);
	free(c.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_percentile_nearest_rank),
		cmocka_unit_test(test_lat_odd),
		cmocka_unit_test(test_lat_even_median_is_upper_middle),
		cmocka_unit_test(test_lat_tail),
		cmocka_unit_test(test_lat_empty_and_one),
		cmocka_unit_test(test_samples_grow),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_peak_windows),
		cmocka_unit_test(test_peak_short_run_and_floor),
		cmocka_unit_test(test_heads_are_perftests),
		cmocka_unit_test(test_bw_line_under_heads),
		cmocka_unit_test(test_cpu_util_column),
		cmocka_unit_test(test_cpu_parse_stat),
		cmocka_unit_test(test_cpu_util_between),
		cmocka_unit_test(test_lat_line_under_heads),
		cmocka_unit_test(test_wide_values_stay_apart),
		cmocka_unit_test(test_text_report),
		cmocka_unit_test(test_json_bw),
		cmocka_unit_test(test_json_lat_and_error),
		cmocka_unit_test(test_json_early_error),
		cmocka_unit_test(test_json_non_finite),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
