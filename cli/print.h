/* SPDX-License-Identifier: MIT */
/*
 * mroc-cli's print layer, the iproute2 rdma tool's way: an object prints
 * each field with one call, and that call writes either the text column (or
 * "label  value" line) or the JSON key with its raw value.  So text and JSON
 * never drift apart, and -j always gives one valid JSON document: the
 * fields build a jansson tree, dumped by print_end().
 *
 * Text comes in two shapes:
 *   - a table (print_table_start): each field of a row is a column, headed by
 *     its column name; columns are aligned when the table ends, numbers to
 *     the right, words to the left;
 *   - a group (print_group_start, and the document itself): each field is a
 *     line "label  value", labels aligned, nested groups indented.
 *
 * Field calls take flags (PRINT_STATS: text only with -s, the counters;
 * PRINT_DETAILS: text only with -d, state such as sequence numbers and timers;
 * JSON always has every field; PRINT_BRIEF: the fields of -br's one-line view,
 * which then prints nothing else, in JSON either), the JSON key (NULL: text only) and the text label or column
 * (NULL: JSON only).  Keys are snake_case and integers raw (ns, bytes, bit/s);
 * the text formats them with units ("12.3us", "64KiB").
 *
 * One document at a time, one thread: the state is this file's.
 */
#ifndef MROC_CLI_PRINT_H
#define MROC_CLI_PRINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct print_opts {
	bool json;		/* -j */
	bool pretty;		/* -p: indented JSON */
	bool stats;		/* -s: PRINT_STATS fields in the text too */
	bool details;		/* -d: PRINT_DETAILS fields in the text too */
	bool brief;		/* -br: only PRINT_BRIEF fields, text and JSON */
	FILE *out;		/* NULL = stdout */
};

enum {
	PRINT_STATS = 1 << 0,	/* text: only with -s */
	PRINT_RIGHT = 1 << 1,	/* print_group_start: values right-aligned (counters) */
	PRINT_DETAILS = 1 << 2,	/* text: only with -d */
	PRINT_BRIEF = 1 << 3,	/* -br: the only fields printed */
};

/* Start a document (a JSON object; in text, a group without a title). */
void print_start(const struct print_opts *o);
/* Write the document out: JSON dumped with a newline, text tables and lines aligned.  0 or -errno. */
int print_end(void);
/* Forget a document without writing it (an error came up half way). */
void print_abort(void);

bool print_is_json(void);
bool print_has_stats(void);

/* JSON "key": [ ... ]; text: a table. */
void print_table_start(const char *key);
void print_table_end(void);
/* JSON { } in the array; text: a row. */
void print_row_start(void);
void print_row_end(void);
/* JSON "key": { ... }; text: "title:" and its fields indented below (title NULL: no line). */
void print_group_start(unsigned flags, const char *key, const char *title);
void print_group_end(void);

/* Fields. */
void print_str(unsigned flags, const char *key, const char *col, const char *v);
void print_uint(unsigned flags, const char *key, const char *col, uint64_t v);
void print_bool(unsigned flags, const char *key, const char *col, bool v);	/* "yes"/"no" */
void print_ns(unsigned flags, const char *key, const char *col, uint64_t ns);	/* "12.3us" */
void print_bytes(unsigned flags, const char *key, const char *col, uint64_t b);	/* "64KiB" */
void print_bps(unsigned flags, const char *key, const char *col, uint64_t bps);	/* "1.2Gbit/s" */
void print_duration(unsigned flags, const char *key, const char *col, uint64_t ns); /* "4m 5s" */
/* Text as given, JSON the value (stolen; NULL = no JSON). */
void print_text(unsigned flags, const char *key, const char *col, const char *text, json_t *jv);
/*
 * A per-second rate: JSON key with the rate rounded to an integer; text: in a
 * group, an extra "N/s" cell on the line of the previous field; in a table,
 * a column of its own.
 */
void print_rate(unsigned flags, const char *key, const char *col, double per_s);

/* Plain text, unaligned, after what was printed so far (text only). */
void print_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
