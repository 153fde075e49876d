// SPDX-License-Identifier: MIT
/*
 * -b FILE / -batch FILE: one command per line ("qp show 17", "-" reads stdin),
 * run with the command line's options, as iproute2's -batch.  Words are
 * separated by blanks; # starts a comment.  With -j each command prints its
 * own JSON document.  The first failing command stops the batch (with its file
 * and line) unless -force, which runs on and exits 1 at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define BATCH_MAX_WORDS 64

/* Split line into words in place; returns their number, -E2BIG for too many. */
static int batch_words(char *line, char **words)
{
	int n = 0;

	line[strcspn(line, "#\n")] = '\0';
	for (char *w = strtok(line, " \t\r"); w; w = strtok(NULL, " \t\r")) {
		if (n == BATCH_MAX_WORDS)
			return -E2BIG;
		words[n++] = w;
	}
	return n;
}

int cli_batch(struct cli *c, const char *path, bool force)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	char *line = NULL, *words[BATCH_MAX_WORDS];
	unsigned lineno = 0, failed = 0;
	size_t cap = 0;
	int n, rc = 0;

	if (!f)
		return cli_error(c, "-b: cannot open %s: %s", path, strerror(errno));
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		n = batch_words(line, words);
		if (!n)
			continue;
		rc = n < 0 ? cli_error(c, "more than %d words", BATCH_MAX_WORDS) : cli_run(c, n, words);
		fflush(stdout);
		if (!rc)
			continue;
		failed++;
		fprintf(stderr, CLI_NAME ": command failed %s:%u\n", path, lineno);
		if (!force)
			break;
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return failed ? 1 : 0;
}
