// SPDX-License-Identifier: MIT
/*
 * mroc-perf output (see report.h).  The column heads are perftest's own
 * (RESULT_FMT, RESULT_FMT_G with --report_gbits, and RESULT_FMT_LAT in
 * perftest_parameters.h); each value is printed where its head starts, so scripts
 * written for perftest's tables read ours.  JSON is written one field per
 * call by a small writer that tracks commas.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* A column: its head, and the 0-based text column where head and values start. */
struct col {
	const char *head;
	int at;
};

/* perftest's RESULT_FMT (MB/sec, its default) and RESULT_FMT_G (--report_gbits). */
static const struct col bw_cols[] = {
	{ "#bytes", 1 },
	{ "#iterations", 12 },
	{ "BW peak[MB/sec]", 27 },
	{ "BW average[MB/sec]", 46 },
	{ "MsgRate[Mpps]", 67 },
	{ "CPU_Util[%]", 85 },		/* --cpu_util only (perftest's REPORT_EXT_CPU_UTIL) */
};

static const struct col bw_cols_gbits[] = {
	{ "#bytes", 1 },
	{ "#iterations", 12 },
	{ "BW peak[Gb/sec]", 27 },
	{ "BW average[Gb/sec]", 46 },
	{ "MsgRate[Mpps]", 67 },
	{ "CPU_Util[%]", 85 },
};

/* perftest's MB is 2^20 bytes (0x100000 in its format_factor); Gb is 10^9 bits. */
static double bw_in(double gbps, bool gbits)
{
	return gbits ? gbps : gbps * 1e9 / 8 / 1048576;
}

static const struct col lat_cols[] = {
	{ "#bytes", 1 },
	{ "#iterations", 8 },
	{ "t_min[usec]", 23 },
	{ "t_max[usec]", 38 },
	{ "t_typical[usec]", 51 },
	{ "t_avg[usec]", 70 },
	{ "t_stdev[usec]", 85 },
	{ "99% percentile[usec]", 101 },
	{ "99.9% percentile[usec]", 124 },
};

#define NCOLS(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Print cells[i] starting at cols[i].at (at least one space after the
 * previous cell when a value is wider than its column), then trail.
 */
static void print_cells(FILE *f, const struct col *cols, size_t n, char cells[][32],
			const char *trail)
{
	int pos = 0;

	for (size_t i = 0; i < n; i++) {
		int pad = cols[i].at - pos;

		if (pad < 1)
			pad = 1;
		pos += fprintf(f, "%*s%s", pad, "", cells[i]);
	}
	fputs(trail, f);
}

static void print_heads(FILE *f, const struct col *cols, size_t n, const char *trail)
{
	char cells[16][32];

	for (size_t i = 0; i < n; i++)
		snprintf(cells[i], sizeof(cells[i]), "%s", cols[i].head);
	print_cells(f, cols, n, cells, trail);
}

void report_rule(FILE *f)
{
	fprintf(f, "%s\n", REPORT_RULE);
}

void report_bw_head(FILE *f, bool gbits, bool cpu)
{
	print_heads(f, gbits ? bw_cols_gbits : bw_cols, NCOLS(bw_cols) - !cpu, "\n");
}

void report_lat_head(FILE *f)
{
	/* perftest's latency head ends with a space. */
	print_heads(f, lat_cols, NCOLS(lat_cols), " \n");
}

void report_bw_line(FILE *f, const struct bw_result *bw, bool gbits, const struct cpu_util *cpu)
{
	char c[NCOLS(bw_cols)][32];

	snprintf(c[0], sizeof(c[0]), "%" PRIu64, bw->size);
	snprintf(c[1], sizeof(c[1]), "%" PRIu64, bw->iters);
	snprintf(c[2], sizeof(c[2]), "%.2f", bw_in(bw->peak_gbps, gbits));
	snprintf(c[3], sizeof(c[3]), "%.2f", bw_in(bw->avg_gbps, gbits));
	snprintf(c[4], sizeof(c[4]), "%.6f", bw->mpps);
	if (cpu)
		snprintf(c[5], sizeof(c[5]), "%.2f", cpu->host);
	print_cells(f, bw_cols, NCOLS(bw_cols) - !cpu, c, "\n");
}

void report_lat_line(FILE *f, uint64_t size, uint64_t iters, const struct lat_stats *st)
{
	const double v[] = { st->min, st->max, st->typical, st->avg, st->stdev, st->p99, st->p999 };
	char c[NCOLS(lat_cols)][32];

	snprintf(c[0], sizeof(c[0]), "%" PRIu64, size);
	snprintf(c[1], sizeof(c[1]), "%" PRIu64, iters);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		snprintf(c[2 + i], sizeof(c[0]), "%.2f", v[i]);
	print_cells(f, lat_cols, NCOLS(lat_cols), c, "\n");
}

/* ---- text header ------------------------------------------------------------------ */

static const char *on_off(bool b)
{
	return b ? "ON" : "OFF";
}

static void text_header(struct report *r)
{
	const struct report_hdr *h = &r->hdr;
	char paths[24], depth[24];

	if (h->paths)
		snprintf(paths, sizeof(paths), "%u", h->paths);
	else
		snprintf(paths, sizeof(paths), "mrocd's");
	if (h->rx_depth)
		snprintf(depth, sizeof(depth), "%u", h->rx_depth);
	else
		snprintf(depth, sizeof(depth), "-");

	fprintf(r->out, "\n%s\n", REPORT_RULE);
	fprintf(r->out, "%*s%s\n", 20, "", h->title);
	fprintf(r->out, " %-16s: %-13u %-15s: %s\n", "Number of qps", h->qps, "Transport type",
		"MetaRoCE (mrocd)");
	fprintf(r->out, " %-16s: %-13s %-15s: %s\n", "Connection type", "RC", "Mode", h->mode);
	fprintf(r->out, " %-16s: %-13s %-15s: %s\n", "Paths per QP", paths, "Using SRQ", "OFF");
	fprintf(r->out, " %-16s: %-13u %-15s: %s\n", "TX depth", h->tx_depth, "RX depth", depth);
	fprintf(r->out, " %-16s: %-13u %-15s: %s\n", "CQ Moderation", h->cq_mod, "Verify",
		on_off(h->verify));
	fprintf(r->out, " %-16s: %-13s %-15s: %s\n", "Mtu", "mrocd's", "Completions",
		h->sleep ? "channel (sleep)" : "busy polling");
	if (h->duration_s)
		fprintf(r->out, " %-16s: %u[sec]\n", "Duration", h->duration_s);
	if (h->bidir)
		fprintf(r->out, " %-16s: ON (rows: both directions added)\n", "Bidirectional");
	fprintf(r->out, " %-16s: TCP, port %u\n", "Data ex. method", h->port);
	fprintf(r->out, " %-16s: %s\n", "mrocd socket", h->socket_path);
	fprintf(r->out, "%s\n", REPORT_RULE);
	for (unsigned int i = 0; i < r->nqps; i++) {
		const struct report_qp *q = &r->qps[i];

		fprintf(r->out, " local address: QPN 0x%04" PRIx32 " RKey 0x%08" PRIx32
			" Region %" PRIu64 "[B]\n", q->qpn, q->rkey, q->region_len);
		fprintf(r->out, " remote address: QPN 0x%04" PRIx32 " RKey 0x%08" PRIx32
			" Region %" PRIu64 "[B] mrocd %s service 0x%016" PRIx64 "\n",
			q->rqpn, q->rrkey, q->rregion_len, q->mrocd ? q->mrocd : "-", q->service_id);
	}
	fprintf(r->out, "%s\n", REPORT_RULE);
	if (h->lat)
		report_lat_head(r->out);
	else
		report_bw_head(r->out, r->hdr.gbits, r->hdr.cpu_util);
	r->table_open = true;
}

/* ---- JSON ------------------------------------------------------------------------- */

#define JW_DEPTH 8

struct jw {
	FILE *f;
	int depth;
	bool comma[JW_DEPTH];
};

void report_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* Comma if needed, then "key": when key is not NULL (NULL: an array element). */
static void jw_key(struct jw *j, const char *key)
{
	if (j->comma[j->depth])
		fputc(',', j->f);
	j->comma[j->depth] = true;
	if (key) {
		report_json_string(j->f, key);
		fputc(':', j->f);
	}
}

static void jw_open(struct jw *j, const char *key, char c)
{
	if (j->depth >= 0)
		jw_key(j, key);
	fputc(c, j->f);
	j->depth++;
	j->comma[j->depth] = false;
}

static void jw_close(struct jw *j, char c)
{
	j->depth--;
	fputc(c, j->f);
}

static void jw_str(struct jw *j, const char *key, const char *v)
{
	jw_key(j, key);
	if (v)
		report_json_string(j->f, v);
	else
		fputs("null", j->f);
}

static void jw_u64(struct jw *j, const char *key, uint64_t v)
{
	jw_key(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

static void jw_dbl(struct jw *j, const char *key, double v)
{
	jw_key(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.6f", v);
	else
		fputs("null", j->f);
}

static void jw_bool(struct jw *j, const char *key, bool v)
{
	jw_key(j, key);
	fputs(v ? "true" : "false", j->f);
}

static void jw_hex(struct jw *j, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
	jw_str(j, key, buf);
}

static void json_params(struct jw *j, const struct report_hdr *h)
{
	jw_open(j, "params", '{');
	jw_u64(j, "qps", h->qps);
	jw_str(j, "mode", h->mode);
	if (h->paths)
		jw_u64(j, "paths", h->paths);
	else
		jw_str(j, "paths", NULL);
	jw_u64(j, "tx_depth", h->tx_depth);
	jw_u64(j, "rx_depth", h->rx_depth);
	jw_u64(j, "cq_mod", h->cq_mod);
	if (h->duration_s)
		jw_str(j, "iterations", NULL);
	else
		jw_u64(j, "iterations", h->iters);
	jw_u64(j, "duration_s", h->duration_s);
	jw_bool(j, "verify", h->verify);
	jw_bool(j, "sleep", h->sleep);
	jw_bool(j, "bidirectional", h->bidir);
	jw_u64(j, "port", h->port);
	jw_str(j, "socket", h->socket_path);
	jw_close(j, '}');
}

static void json_qps(struct jw *j, const struct report *r)
{
	jw_open(j, "qps", '[');
	for (unsigned int i = 0; i < r->nqps; i++) {
		const struct report_qp *q = &r->qps[i];

		jw_open(j, NULL, '{');
		jw_open(j, "local", '{');
		jw_u64(j, "qpn", q->qpn);
		jw_u64(j, "rkey", q->rkey);
		jw_u64(j, "region_bytes", q->region_len);
		jw_close(j, '}');
		jw_open(j, "remote", '{');
		jw_u64(j, "qpn", q->rqpn);
		jw_u64(j, "rkey", q->rrkey);
		jw_u64(j, "region_bytes", q->rregion_len);
		jw_str(j, "mrocd", q->mrocd);
		jw_hex(j, "service_id", q->service_id);
		jw_close(j, '}');
		jw_close(j, '}');
	}
	jw_close(j, ']');
}

static void json_row(struct jw *j, const struct report_row *w, bool cpu_util)
{
	jw_open(j, NULL, '{');
	if (w->lat) {
		jw_u64(j, "bytes", w->size);
		jw_u64(j, "iterations", w->iters);
		jw_dbl(j, "t_min_us", w->st.min);
		jw_dbl(j, "t_max_us", w->st.max);
		jw_dbl(j, "t_typical_us", w->st.typical);
		jw_dbl(j, "t_avg_us", w->st.avg);
		jw_dbl(j, "t_stdev_us", w->st.stdev);
		jw_dbl(j, "p99_us", w->st.p99);
		jw_dbl(j, "p99_9_us", w->st.p999);
	} else {
		jw_u64(j, "bytes", w->bw.size);
		jw_u64(j, "iterations", w->bw.iters);
		jw_u64(j, "messages", w->bw.msgs);
		jw_dbl(j, "bw_peak_gbps", w->bw.peak_gbps);
		jw_dbl(j, "bw_avg_gbps", w->bw.avg_gbps);
		jw_dbl(j, "msg_rate_mpps", w->bw.mpps);
		jw_dbl(j, "seconds", (double)w->bw.ns / 1e9);
	}
	jw_str(j, "measured_by", w->measured_by);
	if (cpu_util) {
		jw_dbl(j, "cpu_util_host_pct", w->cpu.host);
		jw_dbl(j, "cpu_util_self_pct", w->cpu.self);
	}
	jw_close(j, '}');
}

static void json_document(struct report *r, const char *error)
{
	struct jw j = { .f = r->out, .depth = -1 };

	jw_open(&j, NULL, '{');
	jw_u64(&j, "version", 1);
	jw_str(&j, "test", r->hdr.test);
	jw_str(&j, "side", r->hdr.side);
	json_params(&j, &r->hdr);
	json_qps(&j, r);
	jw_open(&j, "results", '[');
	for (size_t i = 0; i < r->nrows; i++)
		json_row(&j, &r->rows[i], r->hdr.cpu_util);
	jw_close(&j, ']');
	jw_str(&j, "status", error ? "error" : "ok");
	if (error)
		jw_str(&j, "error", error);
	jw_close(&j, '}');
	fputc('\n', r->out);
}

/* ---- the report ------------------------------------------------------------------- */

void report_init(struct report *r, FILE *out, bool json, const struct report_hdr *hdr)
{
	memset(r, 0, sizeof(*r));
	r->out = out;
	r->json = json;
	r->hdr = *hdr;
}

int report_begin(struct report *r, const struct report_qp *qps, unsigned int n)
{
	free(r->qps);
	r->qps = NULL;
	r->nqps = 0;
	if (n) {
		r->qps = calloc(n, sizeof(*qps));
		if (!r->qps)
			return -ENOMEM;
		memcpy(r->qps, qps, n * sizeof(*qps));
		r->nqps = n;
	}
	if (!r->json)
		text_header(r);
	return 0;
}

int report_row(struct report *r, const struct report_row *row)
{
	if (!r->json) {
		if (!r->table_open)
			text_header(r);
		if (row->lat)
			report_lat_line(r->out, row->size, row->iters, &row->st);
		else
			report_bw_line(r->out, &row->bw, r->hdr.gbits,
				       r->hdr.cpu_util ? &row->cpu : NULL);
		fflush(r->out);
		return 0;
	}
	if (r->nrows == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 32;
		struct report_row *rows = realloc(r->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		r->rows = rows;
		r->cap = cap;
	}
	r->rows[r->nrows++] = *row;
	return 0;
}

void report_end(struct report *r, const char *error)
{
	if (r->json)
		json_document(r, error);
	else if (r->table_open)
		report_rule(r->out);
	fflush(r->out);
}

void report_free(struct report *r)
{
	free(r->qps);
	free(r->rows);
	r->qps = NULL;
	r->rows = NULL;
	r->nqps = 0;
	r->nrows = r->cap = 0;
}
