// SPDX-License-Identifier: MIT
/*
 * Configuration errors: every one names the file and line (the included
 * file's, as a path the user can open) and the key; a name that is not
 * known gets the closest known one (config_parse.h).
 */
#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config_parse.h"


/* The same, as a path the user can open: an included name is relative to dir. */
static const char *src_path(const struct cparse *p, const config_setting_t *s, char *buf,
			    size_t len)
{
	const char *f = config_src_file(p, s);

	if (f == p->path || !strcmp(f, p->path) || f[0] == '/')
		return f;
	snprintf(buf, len, "%s/%s", p->dir, f);
	return buf;
}

/* "FILE:LINE: key 'KEY': MESSAGE"; without a setting, "FILE: key 'KEY': ...". */
__attribute__((format(printf, 4, 5)))
int config_err(struct cparse *p, const config_setting_t *s, const char *key, const char *fmt, ...)
{
	char file[PATH_MAX];
	size_t n = 0;
	va_list ap;

	if (!p->errlen)
		return -EINVAL;
	if (s && config_setting_source_line(s))
		n = (size_t)snprintf(p->err, p->errlen, "%s:%u: ",
				     src_path(p, s, file, sizeof(file)),
				     config_setting_source_line(s));
	else
		n = (size_t)snprintf(p->err, p->errlen, "%s: ", src_path(p, s, file, sizeof(file)));
	if (key && n < p->errlen)
		n += (size_t)snprintf(p->err + n, p->errlen - n, "key '%s': ", key);
	if (n < p->errlen) {
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

const char *config_type_name(const config_setting_t *s)
{
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_GROUP:		return "a group";
	case CONFIG_TYPE_INT:		return "an integer";
	case CONFIG_TYPE_INT64:		return "a 64-bit integer";
	case CONFIG_TYPE_FLOAT:		return "a float";
	case CONFIG_TYPE_STRING:	return "a string";
	case CONFIG_TYPE_BOOL:		return "a boolean";
	case CONFIG_TYPE_ARRAY:		return "an array";
	case CONFIG_TYPE_LIST:		return "a list";
	default:			return "nothing";
	}
}

/* Levenshtein distance of two short strings (longer ones: "far"). */
static unsigned int edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned int row[65];

	if (la > 64 || lb > 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned int)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned int diag = row[0], tmp;

		row[0] = (unsigned int)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned int best = diag + (a[i - 1] != b[j - 1]);

			tmp = row[j];
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = tmp;
		}
	}
	return row[lb];
}

/* The closest of cands[] to name, if close enough to be a typo. */
const char *config_suggest(const char *name, const char *const *cands, size_t n)
{
	const char *best = NULL;
	unsigned int bd = 3;		/* at most 2 edits */

	for (size_t i = 0; i < n; i++) {
		unsigned int d = edit_distance(name, cands[i]);

		if (d < bd) {
			bd = d;
			best = cands[i];
		}
	}
	return best;
}
