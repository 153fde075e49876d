// SPDX-License-Identifier: MIT
/*
 * mroc-cli: options, the object table and the grammar shared by every
 * object (see cli.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin_client.h"
#include "cli.h"
#include "fmt.h"

static void help_help(FILE *f);
static int cmd_help(struct cli *c);

/*
 * Objects and commands match in full or by the short aliases listed here, never by
 * prefix (a new word would change what old abbreviations mean, which is why
 * iproute2 stopped adding prefix matches).  -br applies to the objects marked for it.
 */
const struct cli_object cli_objects[] = {
	{ "status", cmd_status, help_status, "daemon, backend, interfaces, XDP program, counts", "st", false },
	{ "path", cmd_path, help_path, "per-path state of each QP: RTTs, windows, losses", "p", true },
	{ "qp", cmd_qp, help_qp, "queue pairs: peer, windows, rates, traffic, errors", "q", true },
	{ "link", cmd_link, help_link, "control links between daemons", "l", true },
	{ "counters", cmd_counters, help_counters, "daemon, XDP and AF_XDP counters; reset; prometheus",
	  "c", false },
	{ "config", cmd_config, help_config, "the daemon's effective configuration", "conf", false },
	{ "capture", cmd_capture, help_capture, "capture MetaRoCE packets (tshark/dumpcap, the daemon's port)",
	  "cap", false },
	{ "watch", cmd_watch, help_watch, "refresh a view in place, with rates per second", "w", false },
	{ "help", cmd_help, help_help, "this text", NULL, false },
	{ NULL, NULL, NULL, NULL, NULL, false },
};

bool cli_word_is(const char *w, const char *name, const char *aliases)
{
	size_t n = strlen(w);

	if (!strcmp(w, name))
		return true;
	for (const char *a = aliases; a && *a; a += strcspn(a, " "), a += strspn(a, " "))
		if (n && !strncmp(a, w, n) && (a[n] == ' ' || !a[n]))
			return true;
	return false;
}

const struct cli_object *cli_object_find(const char *w)
{
	for (const struct cli_object *o = cli_objects; o->name; o++)
		if (cli_word_is(w, o->name, o->aliases))
			return o;
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " CLI_NAME " [OPTIONS] OBJECT { COMMAND | help }\n"
		"       " CLI_NAME " [OPTIONS] watch [ OBJECT [ COMMAND [ ARGS ] ] ]\n"
		"       " CLI_NAME " [OPTIONS] -b FILE\n"
		"where  OBJECT := { status | path | qp | link | counters | config | capture | watch | help }\n"
		"       OPTIONS := { -j | -p | -s | -d | -br | -b FILE | -force | -S PATH | -w SECONDS |\n"
		"                    -V | -h }\n"
		"\n"
		"Options (one dash or two, as iproute2: -json = --json):\n"
		"  -j, -json             one JSON document (snake_case keys, raw integers)\n"
		"  -p, -pretty           indented JSON (implies -j)\n"
		"  -s, -stats, -statistics\n"
		"                        more statistics (counter columns, zero counters)\n"
		"  -d, -details          more details (sequence numbers, timers, peers, ports)\n"
		"  -br, -brief           one line per QP (path, qp) or link, fewer fields\n"
		"  -b, -batch FILE       run the commands in FILE (- = stdin), one per line,\n"
		"                        with these options; stops at the first failure\n"
		"  -force                in a batch, go on after a failure (exit 1 at the end)\n"
		"  -S, --socket PATH     mrocd's admin socket (default $" ADMIN_SOCKET_ENV
		", else " ADMIN_SOCKET_DEFAULT ")\n"
		"  -w, --watch SECONDS   refresh in place every SECONDS until interrupted,\n"
		"                        with per-second rates (-j: one document per line)\n"
		"  -V, --version         print the version\n"
		"  -h, --help            this text\n"
		"\n"
		"Objects (COMMAND defaults to the first one, usually show) and their aliases:\n");
	for (const struct cli_object *o = cli_objects; o->name; o++)
		fprintf(f, "  %-9s %-5s %s\n", o->name, o->aliases ? o->aliases : "", o->summary);
	fprintf(f, "\n\"" CLI_NAME " OBJECT help\" lists an object's commands.  Words match in full\n"
		"or by the aliases listed (show: s, sh, list, ls), never by other prefixes:\n"
		CLI_NAME " p s = " CLI_NAME " path show.\n");
}

static void help_help(FILE *f)
{
	usage(f);
}

static int cmd_help(struct cli *c)
{
	const char *w = cli_next(c);

	if (!w) {
		usage(stdout);
		return 0;
	}
	const struct cli_object *o = cli_object_find(w);

	if (!o)
		return cli_error(c, "unknown object \"%s\"", w);
	o->help(stdout);
	return 0;
}

/* ---- the grammar ----------------------------------------------------------- */

int cli_error(struct cli *c, const char *fmt, ...)
{
	va_list ap;

	fputs(CLI_NAME ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (c->object && strcmp(c->object, "help"))
		fprintf(stderr, "\nTry \"" CLI_NAME " %s help\".\n", c->object);
	else
		fputs("\nTry \"" CLI_NAME " help\".\n", stderr);
	return 1;
}

const char *cli_next(struct cli *c)
{
	if (!c->argc)
		return NULL;
	c->argc--;
	return *c->argv++;
}

int cli_no_more(struct cli *c, void (*help)(FILE *f))
{
	if (!c->argc)
		return 0;
	if (!strcmp(c->argv[0], "help")) {
		help(stdout);
		return -1;
	}
	return cli_error(c, "unexpected argument \"%s\"", c->argv[0]);
}

int cli_dispatch(struct cli *c, const struct cli_cmd *cmds, void (*help)(FILE *f))
{
	const char *w = c->argc ? c->argv[0] : NULL;
	char names[256] = "";

	if (!w)
		return cmds[0].fn(c);
	if (!strcmp(w, "help")) {
		help(stdout);
		return 0;
	}
	for (const struct cli_cmd *k = cmds; k->name; k++) {
		if (cli_word_is(w, k->name, k->aliases)) {
			cli_next(c);
			return k->fn(c);
		}
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 k == cmds ? "" : " | ", k->name);
	}
	return cli_error(c, "unknown command \"%s\" for object \"%s\" (commands: %s | help)", w,
			 c->object, names);
}

/* ---- requests -------------------------------------------------------------------- */

json_t *cli_request(struct cli *c, const char *cmd, const json_t *args)
{
	char err[512];
	json_t *r = NULL;
	int e = admin_request(c->sock, cmd, args, &r, err, sizeof(err));

	if (e) {
		const char *why = e == -EACCES ?
			"run as root or as a member of the socket's group (daemon.socket_group)" :
			"is mrocd running?";

		fprintf(stderr, CLI_NAME ": %s\n", err);
		if (e == -ENOENT || e == -ECONNREFUSED || e == -EACCES ||
		    e == -ENOTSOCK || e == -ENAMETOOLONG)
			fprintf(stderr, CLI_NAME ": %s (%s %s; -S PATH or $" ADMIN_SOCKET_ENV
				" names another)\n", why, c->sock,
				!c->sock_origin ? "is the default socket" :
				c->sock_origin[0] == '-' ? "was given with -S" :
				"came from $" ADMIN_SOCKET_ENV);
		return NULL;
	}
	if (c->watching && c->cur)
		json_object_set(c->cur, cmd, r);
	return r;
}

const json_t *cli_prev(const struct cli *c, const char *cmd, double *dt)
{
	*dt = 0;
	if (!c->watching || !c->prev)
		return NULL;
	*dt = c->cur_t - c->prev_t;
	return json_object_get(c->prev, cmd);
}

int cli_print_end(struct cli *c)
{
	int e = print_end();

	if (e) {
		fprintf(stderr, CLI_NAME ": writing the output: %s\n", strerror(-e));
		return 1;
	}
	return 0;
}

uint64_t jget_u64(const json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v > 0 ? (uint64_t)v : 0;
}

const char *jget_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* ---- watch as an object ------------------------------------------------------------ */

void help_watch(FILE *f)
{
	fprintf(f,
		"Usage: " CLI_NAME " [ -w SECONDS ] watch [ OBJECT [ COMMAND [ ARGS ] ] ]\n"
		"       " CLI_NAME " -w SECONDS OBJECT [ COMMAND [ ARGS ] ]\n"
		"Refresh a view in place until interrupted (Ctrl-C), every SECONDS (default 1),\n"
		"with per-second rates for counters, QP traffic and path packets.  OBJECT\n"
		"defaults to counters.  With -j each refresh is one JSON document on its own line.\n");
}

int cmd_watch(struct cli *c)
{
	const char *w = c->argc ? c->argv[0] : "counters";

	if (!strcmp(w, "help")) {
		help_watch(stdout);
		return 0;
	}
	const struct cli_object *o;

	if (c->argc)
		cli_next(c);
	o = cli_object_find(w);
	if (!o)
		return cli_error(c, "unknown object \"%s\" to watch", w);
	if (o->fn == cmd_watch || o->fn == cmd_help || o->fn == cmd_capture)
		return cli_error(c, "cannot watch \"%s\"", w);
	c->object = o->name;
	if (!(c->watch_s > 0))
		c->watch_s = 1;
	return cli_watch(c, o);
}

/* ---- options ---------------------------------------------------------------------------- */

int cli_run(struct cli *c, int argc, char **argv)
{
	const struct cli_object *o = cli_object_find(argv[0]);
	bool brief = c->po.brief;
	int rc;

	c->argc = argc - 1;
	c->argv = argv + 1;
	c->object = NULL;
	if (!o)
		return cli_error(c, "unknown object \"%s\"", argv[0]);
	c->object = o->name;
	/* -br where an object has no brief view: its normal view, as iproute2 does. */
	c->po.brief = brief && o->brief;
	if (c->watch_s > 0 && o->fn != cmd_watch && o->fn != cmd_help && o->fn != cmd_capture)
		rc = cli_watch(c, o);
	else
		rc = o->fn(c);
	c->po.brief = brief;
	return rc;
}

int main(int argc, char **argv)
{
	/*
	 * getopt_long_only: -json as --json; a single letter is still a short option (-s, -j).
	 * Options may also follow the object and command (`path show -d`, as the docs and the
	 * demo write them): no argument of a command starts with "-".
	 */
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "stats", no_argument, NULL, 's' },
		{ "statistics", no_argument, NULL, 's' },
		{ "details", no_argument, NULL, 'd' },
		{ "brief", no_argument, NULL, 'B' },
		{ "br", no_argument, NULL, 'B' },
		{ "batch", required_argument, NULL, 'b' },
		{ "force", no_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 'S' },
		{ "watch", required_argument, NULL, 'w' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c = { 0 };
	const char *env = getenv(ADMIN_SOCKET_ENV), *batch = NULL;
	bool force = false;
	int opt;

	opterr = 0;
	while ((opt = getopt_long_only(argc, argv, "jpsdb:S:w:Vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			c.po.json = true;
			break;
		case 'p':
			c.po.json = c.po.pretty = true;
			break;
		case 's':
			c.po.stats = true;
			break;
		case 'd':
			c.po.details = true;
			break;
		case 'B':
			c.po.brief = true;
			break;
		case 'b':
			batch = optarg;
			break;
		case 'f':
			force = true;
			break;
		case 'S':
			c.sock = optarg;
			c.sock_origin = "-S";
			break;
		case 'w':
			if (fmt_parse_interval(optarg, &c.watch_s))
				return cli_error(&c, "-w wants seconds between 0.1 and 3600, not \"%s\"",
						 optarg);
			break;
		case 'V':
			printf(CLI_NAME " %s\n", CLI_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			if (optopt && strchr("bSw", optopt))
				return cli_error(&c, "option -%c needs an argument", optopt);
			if (optopt)
				return cli_error(&c, "unknown option \"-%c\"", optopt);
			return cli_error(&c, "unknown option \"%s\"", argv[optind - 1]);
		}
	}
	if (!c.sock && env && *env) {
		c.sock = env;
		c.sock_origin = "$" ADMIN_SOCKET_ENV;
	}
	if (!c.sock)
		c.sock = ADMIN_SOCKET_DEFAULT;
	if (batch) {
		if (optind < argc)
			return cli_error(&c, "-b FILE takes its commands from FILE, not \"%s\"", argv[optind]);
		if (c.watch_s > 0)
			return cli_error(&c, "-w and -b do not go together");
		return cli_batch(&c, batch, force);
	}
	if (optind >= argc) {
		usage(stderr);
		return 1;
	}
	return cli_run(&c, argc - optind, argv + optind);
}
