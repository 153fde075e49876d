// SPDX-License-Identifier: MIT
/*
 * libconfig 1.5 (Debian 12) reads an integer literal that does not fit in
 * 32 bits without complaint and keeps the low bits (5000000000 becomes
 * 705032704); 64-bit values need an "L" suffix.  So the file (and what it
 * @includes) is scanned for integer literals before libconfig reads it, and
 * config.c refuses a key whose value came from such a literal, saying how
 * to write it.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_parse.h"

static void badlit_check(struct cparse *p, const char *file, unsigned int line,
			 const char *name, unsigned int item, const char *tok, size_t len)
{
	char buf[64], *end;
	const char *d = buf;
	bool neg = false, wide = false;
	unsigned long long v;
	int base = 10;

	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, tok, len);
	buf[len] = '\0';
	for (size_t l = len; l && buf[l - 1] == 'L'; l--) {
		buf[l - 1] = '\0';
		wide = true;
	}
	if (*d == '-' || *d == '+')
		neg = *d++ == '-';
	if (d[0] == '0' && (d[1] == 'x' || d[1] == 'X')) {
		base = 16;
		d += 2;
	}
	if (!*d || strspn(d, base == 16 ? "0123456789abcdefABCDEF" : "0123456789") != strlen(d))
		return;			/* a float, or not a number libconfig reads */
	errno = 0;
	v = strtoull(d, &end, base);
	if (errno != ERANGE && v <= (wide ? (unsigned long long)INT64_MAX : INT32_MAX) + neg)
		return;
	if (p->nbad == CONFIG_MAX_BADLIT)
		return;
	snprintf(p->bad[p->nbad].file, sizeof(p->bad[0].file), "%s", file);
	snprintf(p->bad[p->nbad].text, sizeof(p->bad[0].text), "%.*s",
		 (int)(len < sizeof(p->bad[0].text) ? len : sizeof(p->bad[0].text) - 1), tok);
	p->bad[p->nbad].line = line;
	snprintf(p->bad[p->nbad].name, sizeof(p->bad[0].name), "%s", name);
	p->bad[p->nbad].item = item;
	p->bad[p->nbad].wide = wide;
	p->nbad++;
}


/*
 * Scan the text of one file: skip comments and strings, check integers.
 * file_name is the file's name as libconfig reports it in settings.
 */
static void prescan_text(struct cparse *p, const char *file_name, int depth, const char *s,
			 size_t n)
{
	unsigned int line = 1;
	size_t i = 0;
	char name[64] = "";		/* the last setting name: the one a literal belongs to */
	unsigned int item = 0;		/* numbers since that name */

	while (i < n) {
		char c = s[i];

		if (c == '\n') {
			line++;
			i++;
		} else if (c == '#' || (c == '/' && i + 1 < n && s[i + 1] == '/')) {
			while (i < n && s[i] != '\n')
				i++;
		} else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
			for (i += 2; i < n && !(s[i] == '*' && i + 1 < n && s[i + 1] == '/'); i++)
				line += s[i] == '\n';
			i += 2;
		} else if (c == '"') {
			for (i++; i < n && s[i] != '"' && s[i] != '\n'; i++)
				i += s[i] == '\\';
			i++;
		} else if (c == '@' && !strncmp(s + i, "@include", 8)) {
			const char *q = memchr(s + i, '"', n - i), *e;
			char inc[PATH_MAX], path[PATH_MAX + 256];

			e = q ? memchr(q + 1, '"', n - (size_t)(q + 1 - s)) : NULL;
			if (e && (size_t)(e - q - 1) < sizeof(inc)) {
				snprintf(inc, sizeof(inc), "%.*s", (int)(e - q - 1), q + 1);
				snprintf(path, sizeof(path), "%s/%s", p->dir, inc);
				config_prescan_file(p, path, inc, depth + 1);
			}
			while (i < n && s[i] != '\n')
				i++;
		} else if (isalpha((unsigned char)c) || c == '*' || c == '_') {
			size_t start = i;

			while (i < n && (isalnum((unsigned char)s[i]) || (s[i] && strchr("_*-", s[i]))))
				i++;
			snprintf(name, sizeof(name), "%.*s", (int)(i - start), s + start);
			item = 0;
		} else if (isdigit((unsigned char)c) || ((c == '-' || c == '+') && i + 1 < n &&
							 isdigit((unsigned char)s[i + 1]))) {
			size_t start = i++;

			while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '.' ||
					 ((s[i] == '-' || s[i] == '+') &&
					  (s[i - 1] == 'e' || s[i - 1] == 'E'))))
				i++;
			badlit_check(p, file_name, line, name, item++, s + start, i - start);
		} else {
			i++;
		}
	}
}

/*
 * Up to CONFIG_MAX_FILE bytes of f, NUL-terminated, in a buffer that grows
 * with the file (a configuration is a few KiB: 4 MiB each load cost the
 * config fuzzer nine tenths of its time).  NULL when out of memory.
 */
static char *read_head(FILE *f, size_t *len)
{
	size_t cap = 16384, n = 0;
	char *buf = malloc(cap + 1);

	while (buf) {
		size_t k = fread(buf + n, 1, cap - n, f);
		char *bigger;

		n += k;
		if (n < cap || cap >= CONFIG_MAX_FILE)
			break;
		cap = cap * 4 < CONFIG_MAX_FILE ? cap * 4 : CONFIG_MAX_FILE;
		bigger = realloc(buf, cap + 1);
		if (!bigger) {
			free(buf);
			return NULL;
		}
		buf = bigger;
	}
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

void config_prescan_file(struct cparse *p, const char *file, const char *name, int depth)
{
	FILE *f;
	char *buf;
	size_t n;

	if (depth > 10 || !(f = fopen(file, "r")))
		return;			/* libconfig reports it */
	buf = read_head(f, &n);
	if (buf) {
		prescan_text(p, name, depth, buf, n);
		free(buf);
	}
	fclose(f);
}

/*
 * The bad literal of setting s: on its line, in its file, after its name (a
 * group written on one line holds several settings on a line), and for a
 * list's item, at its place.
 */
const struct badlit *config_badlit_find(const struct cparse *p, const config_setting_t *s)
{
	const config_setting_t *named = s;

	while (named && !config_setting_name(named))
		named = config_setting_parent(named);
	for (unsigned int i = 0; i < p->nbad; i++)
		if (p->bad[i].line == config_setting_source_line(s) &&
		    !strcmp(p->bad[i].file, config_src_file(p, s)) &&
		    (!named || !strcmp(p->bad[i].name, config_setting_name(named))) &&
		    (named == s || p->bad[i].item == (unsigned int)config_setting_index(s)))
			return &p->bad[i];
	return NULL;
}
