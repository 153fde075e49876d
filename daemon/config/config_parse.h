/* SPDX-License-Identifier: MIT */
/*
 * One parse of a configuration file, as the parts of mrocd's configuration
 * loader share it: its state (struct cparse), the errors reported against
 * it (config_err.c), parsing one key (config.c), the literals libconfig
 * would read wrong (config_lit.c) and the checks across keys
 * (config_check.c); config_load.c drives them.  Not for the rest of the
 * daemon: config.h is its interface.
 */
#ifndef MROCD_CONFIG_PARSE_H
#define MROCD_CONFIG_PARSE_H

#include <libconfig.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define CONFIG_MAX_BADLIT	8
#define CONFIG_MAX_FILE		(4u << 20)	/* what the literal scan reads of a file */

/* An integer literal the file holds that libconfig would have read wrong. */
struct badlit {
	char file[256];
	unsigned int line;
	bool wide;			/* had the L suffix: too big even for 64 bits */
	char text[32];
	char name[64];			/* the setting's name before it (a list's, for its items) */
	unsigned int item;		/* its place among the numbers after that name */
};

struct cparse {
	const char *path;
	const char *dir;		/* @include files are relative to it */
	config_t *cf;
	char *err;
	size_t errlen;
	struct badlit bad[CONFIG_MAX_BADLIT];
	unsigned int nbad;
};

/* The file a setting came from as libconfig names it: @include names as written. */
static inline const char *config_src_file(const struct cparse *p, const config_setting_t *s)
{
	const char *f = s ? config_setting_source_file(s) : NULL;

	return f ? f : p->path;
}

/* config_err.c: "FILE:LINE: key 'KEY': MESSAGE" into p->err (s, key may be NULL); -EINVAL. */
__attribute__((format(printf, 4, 5)))
int config_err(struct cparse *p, const config_setting_t *s, const char *key, const char *fmt, ...);
/* What s is, for an error: "an integer", "a group", ... */
const char *config_type_name(const config_setting_t *s);
/* The closest of cands[] to name, if close enough to be a typo (2 edits); else NULL. */
const char *config_suggest(const char *name, const char *const *cands, size_t n);

/* config.c: setting s (key's full name) into c by k's type; 0 or config_err's -EINVAL. */
int config_key_parse(struct cparse *p, const struct config_key *k, const config_setting_t *s,
		     const char *key, struct mrocd_config *c);

/*
 * Scan file (and what it @includes, up to a depth) for integer literals that
 * do not fit where libconfig 1.5 puts them, into p->bad (config_lit.c).
 */
void config_prescan_file(struct cparse *p, const char *file, const char *name, int depth);
/* The bad literal setting s came from, or NULL. */
const struct badlit *config_badlit_find(const struct cparse *p, const config_setting_t *s);

/*
 * Values derived from others where the file leaves a key out (config_check.c):
 * network.umem_frames from the AF_XDP sockets the interfaces ask for.
 */
void config_derive(struct cparse *p, struct mrocd_config *c);
/* Every check across keys (config_check.c): 0, or config_err's -EINVAL. */
int config_check_all(struct cparse *p, const struct mrocd_config *c);

#endif
