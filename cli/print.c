// SPDX-License-Identifier: MIT
/*
 * The print layer (see print.h).  JSON: a stack of jansson containers, the
 * document dumped at the end.  Text: each group or table keeps its lines
 * until it ends (or a nested one starts), then writes them aligned into a
 * memory buffer; print_end copies the buffer out in one write, so a watch
 * frame appears at once.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "print.h"

#define PRINT_DEPTH	8
#define INDENT		2

enum kind { K_GROUP, K_TABLE, K_ROW };

struct cell {
	char *text;
	bool right;
};

struct line {
	struct cell *cells;
	int n;
};

struct level {
	enum kind kind;
	json_t *j;			/* JSON container (borrowed: the document owns it) */
	/* text, groups and tables */
	bool right;			/* group: values right-aligned */
	int indent;			/* of the lines inside */
	char **cols;			/* table: column names */
	int ncols;
	struct line *lines;
	int nlines;
};

static struct {
	struct print_opts o;
	json_t *doc;
	struct level lv[PRINT_DEPTH];
	int depth;			/* lv[depth - 1] is the innermost */
	char *buf;			/* text, until print_end */
	size_t len;
	FILE *mem;
	bool bad;			/* out of memory or nesting too deep */
} P;

static struct level *top(void)
{
	return P.depth ? &P.lv[P.depth - 1] : NULL;
}

/* The group or table text goes to (a row's table). */
static struct level *text_owner(void)
{
	struct level *l = top();

	return l && l->kind == K_ROW ? l - 1 : l;
}

bool print_is_json(void)
{
	return P.o.json;
}

bool print_has_stats(void)
{
	return P.o.stats;
}

/* Text of a field with these flags is left out: -s, -d and -br decide. */
static bool text_hidden(unsigned flags)
{
	if (P.o.brief)
		return !(flags & PRINT_BRIEF);
	return ((flags & PRINT_STATS) && !P.o.stats) || ((flags & PRINT_DETAILS) && !P.o.details);
}

/* ---- text ------------------------------------------------------------------ */

static void free_lines(struct level *l)
{
	for (int i = 0; i < l->nlines; i++) {
		for (int c = 0; c < l->lines[i].n; c++)
			free(l->lines[i].cells[c].text);
		free(l->lines[i].cells);
	}
	free(l->lines);
	l->lines = NULL;
	l->nlines = 0;
}

static void free_level(struct level *l)
{
	free_lines(l);
	for (int c = 0; c < l->ncols; c++)
		free(l->cols[c]);
	free(l->cols);
	l->cols = NULL;
	l->ncols = 0;
}

static struct line *new_line(struct level *l)
{
	struct line *n = realloc(l->lines, (size_t)(l->nlines + 1) * sizeof(*n));

	if (!n) {
		P.bad = true;
		return NULL;
	}
	l->lines = n;
	n = &l->lines[l->nlines++];
	*n = (struct line){ 0 };
	return n;
}

/* Cell i of a line, growing it; the text is copied. */
static void set_cell(struct line *ln, int i, const char *text, bool right)
{
	if (i >= ln->n) {
		struct cell *c = realloc(ln->cells, (size_t)(i + 1) * sizeof(*c));

		if (!c) {
			P.bad = true;
			return;
		}
		memset(c + ln->n, 0, (size_t)(i + 1 - ln->n) * sizeof(*c));
		ln->cells = c;
		ln->n = i + 1;
	}
	free(ln->cells[i].text);
	ln->cells[i].text = strdup(text);
	ln->cells[i].right = right;
	if (!ln->cells[i].text)
		P.bad = true;
}

static int table_col(struct level *t, const char *col)
{
	char **c;

	for (int i = 0; i < t->ncols; i++)
		if (!strcmp(t->cols[i], col))
			return i;
	c = realloc(t->cols, (size_t)(t->ncols + 1) * sizeof(*c));
	if (!c || !(c[t->ncols] = strdup(col))) {
		if (c)
			t->cols = c;
		P.bad = true;
		return -1;
	}
	t->cols = c;
	return t->ncols++;
}

static void text_field(unsigned flags, const char *col, const char *text, bool right)
{
	struct level *o = text_owner();
	struct line *ln;

	if (P.o.json || !col || !o || text_hidden(flags))
		return;
	if (o->kind == K_TABLE) {
		int i = table_col(o, col);

		if (i >= 0 && o->nlines)
			set_cell(&o->lines[o->nlines - 1], i, text, right);
		return;
	}
	ln = new_line(o);
	if (!ln)
		return;
	set_cell(ln, 0, col, false);
	set_cell(ln, 1, text, o->right);
}

static void write_cells(const struct line *ln, const int *w, int n, int indent)
{
	int last = n;

	/* no padding after the last non-empty left-aligned cell */
	while (last > 0 && (last > ln->n || !ln->cells[last - 1].text))
		last--;
	fprintf(P.mem, "%*s", indent, "");
	for (int c = 0; c < last; c++) {
		const struct cell *k = &ln->cells[c];
		const char *t = k->text ? k->text : "";
		int pad = w[c] - (int)strlen(t);

		if (c)
			fputs("  ", P.mem);
		if (k->right)
			fprintf(P.mem, "%*s%s", pad, "", t);
		else if (c + 1 < last)
			fprintf(P.mem, "%s%*s", t, pad, "");
		else
			fputs(t, P.mem);
	}
	fputc('\n', P.mem);
}

/* Write l's pending lines (with a header for a table), aligned among themselves. */
static void flush(struct level *l)
{
	int n = l->kind == K_TABLE ? l->ncols : 0;
	struct line hdr = { 0 };
	int *w;

	if (P.o.json || !l->nlines)
		return;
	for (int i = 0; i < l->nlines; i++)
		n = l->lines[i].n > n ? l->lines[i].n : n;
	w = calloc((size_t)n + 1, sizeof(*w));
	if (!w) {
		P.bad = true;
		return;
	}
	for (int i = 0; i < l->nlines; i++)
		for (int c = 0; c < l->lines[i].n; c++)
			if (l->lines[i].cells[c].text && (int)strlen(l->lines[i].cells[c].text) > w[c])
				w[c] = (int)strlen(l->lines[i].cells[c].text);
	if (l->kind == K_TABLE) {
		/* the header takes each column's alignment from its first value */
		for (int c = 0; c < l->ncols; c++) {
			bool right = false;

			for (int i = 0; i < l->nlines; i++)
				if (c < l->lines[i].n && l->lines[i].cells[c].text) {
					right = l->lines[i].cells[c].right;
					break;
				}
			set_cell(&hdr, c, l->cols[c], right);
			if ((int)strlen(l->cols[c]) > w[c])
				w[c] = (int)strlen(l->cols[c]);
		}
		write_cells(&hdr, w, n, l->indent);
		for (int c = 0; c < hdr.n; c++)
			free(hdr.cells[c].text);
		free(hdr.cells);
	}
	for (int i = 0; i < l->nlines; i++)
		write_cells(&l->lines[i], w, n, l->indent);
	free(w);
	free_lines(l);
}

/* ---- JSON ---------------------------------------------------------------------- */

static void json_field(unsigned flags, const char *key, json_t *v)
{
	struct level *l = top();

	if (!v)
		return;
	/* -br: the brief view's fields only, in JSON too (as iproute2's -j -br). */
	if (!P.o.json || !key || !l || !json_is_object(l->j) || (P.o.brief && !(flags & PRINT_BRIEF))) {
		json_decref(v);
		return;
	}
	json_object_set_new(l->j, key, v);
}

/* A new container in the current one (under key if that is an object). */
static json_t *json_child(const char *key, json_t *c)
{
	struct level *l = top();

	if (!c || !l)
		return c;
	if (json_is_array(l->j))
		json_array_append(l->j, c);
	else if (key)
		json_object_set(l->j, key, c);
	json_decref(c);		/* the parent holds it */
	return c;
}

/* ---- levels ------------------------------------------------------------------------ */

static struct level *push(enum kind kind, json_t *j)
{
	struct level *parent = top(), *l;

	if (P.depth == PRINT_DEPTH) {
		P.bad = true;
		return NULL;
	}
	l = &P.lv[P.depth++];
	*l = (struct level){ .kind = kind, .j = j };
	if (parent)
		l->indent = parent->indent;	/* a group with a title adds INDENT */
	return l;
}

static void pop(enum kind kind)
{
	struct level *l = top();

	if (!l || l->kind != kind) {
		P.bad = true;
		return;
	}
	if (kind != K_ROW)
		flush(l);
	free_level(l);
	P.depth--;
}

void print_start(const struct print_opts *o)
{
	memset(&P, 0, sizeof(P));
	P.o = *o;
	if (!P.o.out)
		P.o.out = stdout;
	P.o.json |= P.o.pretty;
	P.doc = json_object();
	P.mem = open_memstream(&P.buf, &P.len);
	if (!P.doc || !P.mem)
		P.bad = true;
	push(K_GROUP, P.doc);
}

static void reset(void)
{
	while (P.depth)
		free_level(&P.lv[--P.depth]);
	if (P.mem)
		fclose(P.mem);
	free(P.buf);
	json_decref(P.doc);
	memset(&P, 0, sizeof(P));
}

void print_abort(void)
{
	reset();
}

int print_end(void)
{
	FILE *out = P.o.out;
	int err = 0;

	while (P.depth > 1)
		pop(top()->kind);
	if (P.depth)
		flush(top());
	if (P.bad || !P.mem) {
		reset();
		return -ENOMEM;
	}
	if (P.o.json) {
		if (json_dumpf(P.doc, P.mem, P.o.pretty ? JSON_INDENT(2) : JSON_COMPACT))
			err = -ENOMEM;
		fputc('\n', P.mem);
	}
	if (fflush(P.mem))
		err = -ENOMEM;
	if (!err && P.len && (fwrite(P.buf, 1, P.len, out) != P.len || fflush(out)))
		err = -errno ? -errno : -EIO;
	reset();
	return err;
}

void print_table_start(const char *key)
{
	struct level *o = text_owner();

	if (o)
		flush(o);
	push(K_TABLE, P.o.json ? json_child(key, json_array()) : NULL);
}

void print_table_end(void)
{
	pop(K_TABLE);
}

void print_row_start(void)
{
	struct level *t = top();

	if (t && t->kind == K_TABLE && !P.o.json)
		new_line(t);
	push(K_ROW, P.o.json ? json_child(NULL, json_object()) : NULL);
}

void print_row_end(void)
{
	pop(K_ROW);
}

void print_group_start(unsigned flags, const char *key, const char *title)
{
	struct level *o = text_owner(), *l;

	if (o)
		flush(o);
	if (!P.o.json && title && !text_hidden(flags))
		fprintf(P.mem, "%*s%s:\n", o ? o->indent : 0, "", title);
	l = push(K_GROUP, P.o.json ? json_child(key, json_object()) : NULL);
	if (l) {
		l->right = flags & PRINT_RIGHT;
		l->indent += title ? INDENT : 0;
	}
}

void print_group_end(void)
{
	pop(K_GROUP);
}

/* ---- fields ------------------------------------------------------------------------------ */

void print_text(unsigned flags, const char *key, const char *col, const char *text, json_t *jv)
{
	text_field(flags, col, text, false);
	json_field(flags, key, jv);
}

void print_str(unsigned flags, const char *key, const char *col, const char *v)
{
	text_field(flags, col, v ? v : "-", false);
	if (P.o.json && key)
		json_field(flags, key, v ? json_string(v) : json_null());
}

static void num_field(unsigned flags, const char *key, const char *col, const char *text,
		      uint64_t v)
{
	text_field(flags, col, text, true);
	if (P.o.json && key)
		json_field(flags, key, json_integer((json_int_t)v));
}

void print_uint(unsigned flags, const char *key, const char *col, uint64_t v)
{
	char b[FMT_LEN];

	snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
	num_field(flags, key, col, b, v);
}

void print_bool(unsigned flags, const char *key, const char *col, bool v)
{
	text_field(flags, col, v ? "yes" : "no", false);
	if (P.o.json && key)
		json_field(flags, key, json_boolean(v));
}

void print_ns(unsigned flags, const char *key, const char *col, uint64_t ns)
{
	char b[FMT_LEN];

	num_field(flags, key, col, fmt_ns(b, sizeof(b), ns), ns);
}

void print_bytes(unsigned flags, const char *key, const char *col, uint64_t bytes)
{
	char b[FMT_LEN];

	num_field(flags, key, col, fmt_bytes(b, sizeof(b), bytes), bytes);
}

void print_bps(unsigned flags, const char *key, const char *col, uint64_t bps)
{
	char b[FMT_LEN];

	num_field(flags, key, col, fmt_bps(b, sizeof(b), bps), bps);
}

void print_duration(unsigned flags, const char *key, const char *col, uint64_t ns)
{
	char b[FMT_LEN];

	text_field(flags, col, fmt_duration(b, sizeof(b), ns), false);
	if (P.o.json && key)
		json_field(flags, key, json_integer((json_int_t)ns));
}

void print_rate(unsigned flags, const char *key, const char *col, double per_s)
{
	struct level *o = text_owner();
	char b[FMT_LEN + 4];

	fmt_si(b, FMT_LEN, per_s);
	strcat(b, "/s");
	if (!P.o.json && o && o->kind == K_GROUP) {
		if (!text_hidden(flags) && o->nlines) {
			struct line *ln = &o->lines[o->nlines - 1];

			set_cell(ln, ln->n, b, true);
		}
	} else {
		text_field(flags, col, b, true);
	}
	if (P.o.json && key)
		json_field(flags, key, json_integer((json_int_t)(per_s + 0.5)));
}

void print_line(const char *fmt, ...)
{
	struct level *o = text_owner();
	va_list ap;

	if (P.o.json || !P.mem)
		return;
	if (o)
		flush(o);
	va_start(ap, fmt);
	vfprintf(P.mem, fmt, ap);
	va_end(ap);
}
