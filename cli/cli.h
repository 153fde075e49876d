/* SPDX-License-Identifier: MIT */
/*
 * mroc-cli: `mroc-cli [OPTIONS] OBJECT [COMMAND] [ARGS]`, iproute2's rdma
 * tool grammar.  main.c parses the options and picks the object; each
 * object (status.c, path.c, qp.c, link.c, counters.c, config.c) has a table
 * of commands whose first entry is the default, a help text, and prints
 * through print.h.  Words match in full only (no prefixes); "help" is
 * understood after every object and command.
 *
 * Object and command functions return the exit status: 0, or 1 after
 * printing why (a usage error, mrocd unreachable or refusing).
 */
#ifndef MROC_CLI_CLI_H
#define MROC_CLI_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "print.h"

#define CLI_NAME	"mroc-cli"
#define CLI_VERSION	"0.1.0"

struct cli {
	struct print_opts po;		/* -j, -p, -s */
	const char *sock;		/* the admin socket */
	const char *sock_origin;	/* where it came from: "-S", "$MROC_ADMIN_SOCKET", NULL */
	double watch_s;			/* -w: seconds between frames, 0 = once */
	bool watching;			/* in a watch loop now */
	const char *object;		/* for messages */
	int argc;			/* words after the object/command */
	char **argv;
	/* watch: each frame's replies by command, to compute rates */
	json_t *cur, *prev;
	double cur_t, prev_t;		/* monotonic seconds of the frames */
};

struct cli_cmd {
	const char *name;
	int (*fn)(struct cli *c);
	const char *aliases;		/* fixed short names, space-separated; NULL: none */
};

/* The aliases of every object's "show" (iproute2's: ip a s, ip a sh, ip a list, ip a ls). */
#define CLI_SHOW_ALIASES	"s sh list ls"

struct cli_object {
	const char *name;
	int (*fn)(struct cli *c);	/* runs with c->argv after the object word */
	void (*help)(FILE *f);
	const char *summary;
	const char *aliases;		/* fixed short names, space-separated; NULL: none */
	bool brief;			/* has a -br view */
};

/* main.c */
/* Is w the name or one of the space-separated aliases (whole words only)? */
bool cli_word_is(const char *w, const char *name, const char *aliases);
/* The object named w (or aliased), or NULL. */
const struct cli_object *cli_object_find(const char *w);
/* Run "OBJECT [COMMAND] [ARGS]" (argc >= 1) with c's options; the exit status. */
int cli_run(struct cli *c, int argc, char **argv);
/* Run the command named by the next word (the first of cmds when none), or help. */
int cli_dispatch(struct cli *c, const struct cli_cmd *cmds, void (*help)(FILE *f));
/* "mroc-cli: ..." on stderr and a pointer to help; returns 1. */
int cli_error(struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The next word, consumed, or NULL. */
const char *cli_next(struct cli *c);
/* 0 if no words are left; 1 (and a message) for an unexpected one; "help" prints help and returns -1. */
int cli_no_more(struct cli *c, void (*help)(FILE *f));
/* The request; NULL after printing why (daemon unreachable: with the socket path). */
json_t *cli_request(struct cli *c, const char *cmd, const json_t *args);
/* Watch: the reply to cmd one frame ago and the seconds since (NULL/0 when not watching or first frame). */
const json_t *cli_prev(const struct cli *c, const char *cmd, double *dt);
/* Print the document (print_end); 0, or 1 with a message. */
int cli_print_end(struct cli *c);

/* json helpers */
uint64_t jget_u64(const json_t *o, const char *key);
const char *jget_str(const json_t *o, const char *key);

/* the objects */
extern const struct cli_object cli_objects[];
int cmd_status(struct cli *c);
void help_status(FILE *f);
int cmd_path(struct cli *c);
void help_path(FILE *f);
int cmd_qp(struct cli *c);
void help_qp(FILE *f);
int cmd_link(struct cli *c);
void help_link(FILE *f);
int cmd_counters(struct cli *c);
void help_counters(FILE *f);
int cmd_config(struct cli *c);
void help_config(FILE *f);
int cmd_capture(struct cli *c);
void help_capture(FILE *f);
int cmd_watch(struct cli *c);
void help_watch(FILE *f);

/* prom.c: the counters, QPs and paths in Prometheus text format. */
int counters_prometheus(struct cli *c);

/* batch.c: run each line of path ("-": stdin) as a command; stop at a failure unless force. */
int cli_batch(struct cli *c, const char *path, bool force);

/* watch.c: run the object in c->argv every c->watch_s seconds until interrupted. */
int cli_watch(struct cli *c, const struct cli_object *obj);

#endif
