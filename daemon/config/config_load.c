// SPDX-License-Identifier: MIT
/*
 * Loading a configuration file (config_load, config.h): libconfig reads it
 * after the scan for literals it would read wrong (config_lit.c); the walk
 * then parses every setting through the key table (config.c), refusing an
 * unknown one with the closest known name, and runs the checks across keys
 * (config_check.c).  Loading walks the file, not the table: every setting
 * must name a key of the table (or an interface's name/queues), so a typo
 * is an error.
 */
#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "config_parse.h"

static const char *const config_groups[] = { "daemon", "network", "transport", "limits",
					    "security" };
#define NGROUPS	(sizeof(config_groups) / sizeof(config_groups[0]))

/* Room for every key's name (a suggestion's candidates). */
#define CONFIG_MAX_KEYS	256

static int unknown_key(struct cparse *p, const config_setting_t *s, const char *full)
{
	const char *names[CONFIG_MAX_KEYS];
	const char *dot = strchr(full, '.'), *hint = NULL;
	size_t nkeys = config_key_count();

	if (!dot) {
		/* A group name, or a key written outside its group. */
		hint = config_suggest(full, config_groups, NGROUPS);
		for (size_t i = 0; !hint && i < nkeys; i++)
			if (!strcmp(strchr(config_key_at(i)->name, '.') + 1, full))
				hint = config_key_at(i)->name;
	} else {
		for (size_t i = 0; i < nkeys; i++)
			names[i] = config_key_at(i)->name;
		hint = config_suggest(full, names, nkeys);
		/* The right key in the wrong group. */
		for (size_t i = 0; !hint && i < nkeys; i++)
			if (!strcmp(strchr(config_key_at(i)->name, '.'), dot))
				hint = config_key_at(i)->name;
	}
	if (hint)
		return config_err(p, s, NULL, "unknown key '%s' (did you mean '%s'?)", full, hint);
	return config_err(p, s, NULL, "unknown key '%s'", full);
}

static bool is_group(const char *name)
{
	for (size_t i = 0; i < NGROUPS; i++)
		if (!strcmp(name, config_groups[i]))
			return true;
	return false;
}

static int walk(struct cparse *p, struct mrocd_config *c)
{
	const config_setting_t *root = config_root_setting(p->cf);
	char full[128];

	for (int i = 0; i < config_setting_length(root); i++) {
		const config_setting_t *g = config_setting_get_elem(root, (unsigned int)i);
		const char *gname = config_setting_name(g);

		if (!is_group(gname))
			return unknown_key(p, g, gname);
		if (!config_setting_is_group(g))
			return config_err(p, g, gname, "expected a group, %s = { ... };, got %s", gname,
				    config_type_name(g));
		for (int j = 0; j < config_setting_length(g); j++) {
			const config_setting_t *s = config_setting_get_elem(g, (unsigned int)j);
			const struct config_key *k;
			int rc;

			snprintf(full, sizeof(full), "%s.%s", gname, config_setting_name(s));
			k = config_key_find(full);
			if (!k)
				return unknown_key(p, s, full);
			rc = config_key_parse(p, k, s, full, c);
			if (rc)
				return rc;
		}
	}
	config_derive(p, c);
	return config_check_all(p, c);
}

/* Open the file ourselves first: libconfig says only "file I/O error". */
static int check_readable(struct cparse *p)
{
	struct stat st;
	FILE *f = fopen(p->path, "r");
	int rc = 0;

	if (!f) {
		rc = -errno;
		snprintf(p->err, p->errlen, "%s: cannot open: %s", p->path, strerror(-rc));
		return rc;
	}
	if (!fstat(fileno(f), &st) && S_ISDIR(st.st_mode)) {
		snprintf(p->err, p->errlen, "%s: is a directory", p->path);
		rc = -EISDIR;
	}
	fclose(f);
	return rc;
}

/* Is there a setting "name =" or "name:" in text[0, end)? */
static bool set_before(const char *text, size_t end, const char *name, size_t l)
{
	for (const char *p = text; (p = memmem(p, end - (size_t)(p - text), name, l)); p++) {
		const char *q = p + l + strspn(p + l, " \t\n");

		if ((p == text || (!isalnum((unsigned char)p[-1]) && !strchr("-_*", p[-1]))) &&
		    (*q == '=' || *q == ':') && (size_t)(q - text) < end)
			return true;
	}
	return false;
}

/*
 * libconfig says "duplicate setting name" with the line but not the name: read
 * the file and take the first name set on that line that was already set
 * before it (in any group: a hint, not a parser).  0, or -ENOENT.
 */
static int dup_key_on_line(const char *path, int lineno, char *key, size_t len)
{
	char text[65536];
	size_t n, at = 0;
	FILE *f = fopen(path, "re");
	int i = 1;

	if (!f)
		return -ENOENT;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	while (i < lineno && at < n)
		if (text[at++] == '\n')
			i++;
	for (const char *p = text + at; *p && *p != '\n';) {
		size_t l = 0;

		if (*p == '#' || (p[0] == '/' && (p[1] == '/' || p[1] == '*')))
			break;
		if (*p == '"') {	/* skip strings: "a = b" inside one is no setting */
			const char *q = strchr(p + 1, '"');

			p = q ? q + 1 : p + strlen(p);
			continue;
		}
		if (!isalpha((unsigned char)*p) && *p != '*') {
			p++;
			continue;
		}
		while (isalnum((unsigned char)p[l]) || (p[l] && strchr("-_*", p[l])))
			l++;
		if (l < 64 && set_before(text, (size_t)(p - text), p, l))
			return snprintf(key, len, "\"%.*s\"", (int)l, p), 0;
		p += l;
	}
	return -ENOENT;
}

int config_load(const char *path, struct mrocd_config *out, char *err, size_t errlen)
{
	struct cparse *p;
	struct mrocd_config *c;
	config_t cf;
	char dir[PATH_MAX];
	const char *slash;
	int rc;

	if (errlen)
		err[0] = '\0';
	p = calloc(1, sizeof(*p));
	c = malloc(sizeof(*c));
	if (!p || !c) {
		free(p);
		free(c);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	*p = (struct cparse){ .path = path, .cf = &cf, .err = err, .errlen = errlen };
	rc = check_readable(p);
	if (rc)
		goto out_free;

	/* @include "x" is relative to the file's folder. */
	slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	p->dir = dir;
	config_prescan_file(p, path, path, 0);

	config_init(&cf);
	config_set_include_dir(&cf, dir);
	if (!config_read_file(&cf, path)) {
		const char *f = config_error_file(&cf);

		char key[64] = "";

		if (config_error_type(&cf) == CONFIG_ERR_FILE_IO)
			snprintf(err, errlen, "%s: cannot read the file", f ? f : path);
		else if (!strcmp(config_error_text(&cf), "duplicate setting name") &&
			 !dup_key_on_line(f ? f : path, config_error_line(&cf), key, sizeof(key)))
			snprintf(err, errlen, "%s:%d: %s is set twice in its group", f ? f : path,
				 config_error_line(&cf), key);
		else
			snprintf(err, errlen, "%s:%d: %s", f ? f : path, config_error_line(&cf),
				 config_error_text(&cf));
		rc = config_error_type(&cf) == CONFIG_ERR_FILE_IO ? -EIO : -EINVAL;
		goto out_destroy;
	}
	config_defaults(c);
	rc = walk(p, c);
	if (!rc)
		*out = *c;
out_destroy:
	config_destroy(&cf);
out_free:
	free(c);
	free(p);
	/*
	 * One line, whatever the file held: a value quoted back with a newline
	 * or terminal escapes in it would forge log lines (fuzz_config found it).
	 */
	for (size_t i = 0; rc && i < errlen && err[i]; i++)
		if ((unsigned char)err[i] < 0x20 || err[i] == 0x7f)
			err[i] = '?';
	return rc;
}
