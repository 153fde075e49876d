/* SPDX-License-Identifier: MIT */
/*
 * mroc-perf output: perftest's header block and result tables in text, or
 * one JSON document (-j) with the same facts.  No libmroc, no globals:
 * tests/unit/test_perf_report.c links this file with stats.c alone.
 *
 * Text rows are printed as they come; the JSON document is printed whole by
 * report_end(), so that an error at any point still gives one valid document
 * (with "status": "error" and the message).
 */
#ifndef MROC_PERF_REPORT_H
#define MROC_PERF_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cpu.h"
#include "stats.h"

/* perftest's RESULT_LINE, without the newline. */
#define REPORT_RULE	"---------------------------------------------------------------------------------------"

/* What the header block shows (strings are borrowed, not copied). */
struct report_hdr {
	const char *test;		/* "write_bw" */
	const char *title;		/* "RDMA_Write BW Test" */
	const char *side;		/* "client" or "server" */
	bool lat;			/* latency table instead of bandwidth */
	unsigned int qps;
	const char *mode;		/* "metaroce" or "rocev2" */
	unsigned int paths;		/* 0: the daemon's default */
	unsigned int tx_depth;
	unsigned int rx_depth;		/* receives posted per QP; 0: none (not a SEND test) */
	unsigned int cq_mod;		/* a completion every cq_mod work requests */
	uint64_t iters;			/* per size; 0 with a duration */
	unsigned int duration_s;	/* 0: iterations */
	bool verify;
	bool sleep;			/* completion channel instead of busy polling */
	unsigned int port;		/* TCP side channel */
	const char *socket_path;	/* mrocd client socket */
	bool gbits;			/* --report_gbits: Gb/sec, else perftest's MB/sec (2^20 B) */
	bool bidir;			/* -b: rows are both directions added */
	bool cpu_util;			/* --cpu_util: a CPU_Util[%] column */
};

/* One QP's two ends, for the "local address" / "remote address" lines. */
struct report_qp {
	uint32_t qpn, rkey;
	uint64_t region_len;
	uint32_t rqpn, rrkey;
	uint64_t rregion_len;
	const char *mrocd;		/* the server's mrocd address (borrowed) */
	uint64_t service_id;
};

struct report_row {
	bool lat;
	const char *measured_by;	/* "client" or "server" (JSON only) */
	struct bw_result bw;		/* !lat */
	uint64_t size, iters;		/* lat */
	struct lat_stats st;		/* lat */
	struct cpu_util cpu;		/* this side's, during the run (hdr.cpu_util) */
};

struct report {
	FILE *out;
	bool json;
	struct report_hdr hdr;
	struct report_qp *qps;		/* copied */
	unsigned int nqps;
	struct report_row *rows;	/* copied (JSON) */
	size_t nrows, cap;
	bool table_open;		/* text: the column heads are printed */
};

void report_init(struct report *r, FILE *out, bool json, const struct report_hdr *hdr);
/* Header block, the QPs' address lines and the column heads (text); remembered for JSON. 0 or -ENOMEM. */
int report_begin(struct report *r, const struct report_qp *qps, unsigned int n);
/* One result row. 0 or -ENOMEM. */
int report_row(struct report *r, const struct report_row *row);
/* Closing line (text) or the whole document (JSON); error is NULL on success. */
void report_end(struct report *r, const char *error);
void report_free(struct report *r);

/* The pieces, for tests and for callers that print a table of their own. */
void report_bw_head(FILE *f, bool gbits, bool cpu);
/* cpu: NULL, or the CPU_Util[%] column's value */
void report_bw_line(FILE *f, const struct bw_result *bw, bool gbits, const struct cpu_util *cpu);
void report_lat_head(FILE *f);
void report_lat_line(FILE *f, uint64_t size, uint64_t iters, const struct lat_stats *st);
void report_rule(FILE *f);
/* s as a JSON string, quotes included. */
void report_json_string(FILE *f, const char *s);

#endif
