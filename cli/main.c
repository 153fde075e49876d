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

const struct cli_object cli_objects[] = {
	{ "status", cmd_status, help_status, "daemon, backend, interfaces, XDP program, counts" },
	{ "path", cmd_path, help_path, "per-path state of each QP: RTTs, windows, losses" },
	{ "qp", cmd_qp, help_qp, "queue pairs: peer, windows, rates, traffic, errors" },
	{ "link", cmd_link, help_link, "control links between daemons" },
	{ "counters", cmd_counters, help_counters, "daemon, XDP and AF_XDP counters; reset; prometheus" },
	{ "config", cmd_config, help_config, "the daemon's effective configuration" },
	{ "capture", cmd_capture, help_capture, "capture MetaRoCE packets (tshark/dumpcap, the daemon's port)" },
	{ "watch", cmd_watch, help_watch, "refresh a view in place, with rates per second" },
	{ "help", cmd_help, help_help, "this text" },
	{ NULL, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " CLI_NAME " [OPTIONS] OBJECT { COMMAND | help }\n"
		"       " CLI_NAME " [OPTIONS] watch [ OBJECT [ COMMAND [ ARGS ] ] ]\n"
		"where  OBJECT := { status | path | qp | link | counters | config | capture | watch | help }\n"
		"       OPTIONS := { -j | -p | -s | -S PATH | -w SECONDS | -V | -h }\n"
		"\n"
		"Options:\n"
		"  -j, --json            one JSON document (snake_case keys, raw integers)\n"
		"  -p, --pretty          indented JSON (implies -j)\n"
		"  -s, --stats           more statistics (extra columns, zero counters)\n"
		"  -S, --socket PATH     mrocd's admin socket (default $" ADMIN_SOCKET_ENV
		", else " ADMIN_SOCKET_DEFAULT ")\n"
		"  -w, --watch SECONDS   refresh in place every SECONDS until interrupted,\n"
		"                        with per-second rates (-j: one document per line)\n"
		"  -V, --version         print the version\n"
		"  -h, --help            this text\n"
		"\n"
		"Objects (COMMAND defaults to the first one, usually show):\n");
	for (const struct cli_object *o = cli_objects; o->name; o++)
		fprintf(f, "  %-10s %s\n", o->name, o->summary);
	fprintf(f, "\n\"" CLI_NAME " OBJECT help\" lists an object's commands.  Words match in full.\n");
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
	for (const struct cli_object *o = cli_objects; o->name; o++)
		if (!strcmp(o->name, w)) {
			o->help(stdout);
			return 0;
		}
	return cli_error(c, "unknown object \"%s\"", w);
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
		if (!strcmp(k->name, w)) {
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
		const char *why = e == -EACCES || e == -EPERM ?
			"run as root or as a member of the socket's group (daemon.socket_group)" :
			"is mrocd running?";

		fprintf(stderr, CLI_NAME ": %s\n", err);
		if (e == -ENOENT || e == -ECONNREFUSED || e == -EACCES || e == -EPERM ||
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
	if (c->argc)
		cli_next(c);
	for (const struct cli_object *o = cli_objects; o->name; o++) {
		if (strcmp(o->name, w))
			continue;
		if (o->fn == cmd_watch || o->fn == cmd_help || o->fn == cmd_capture)
			return cli_error(c, "cannot watch \"%s\"", w);
		c->object = o->name;
		if (!(c->watch_s > 0))
			c->watch_s = 1;
		return cli_watch(c, o);
	}
	return cli_error(c, "unknown object \"%s\" to watch", w);
}

/* ---- options ---------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "stats", no_argument, NULL, 's' },
		{ "socket", required_argument, NULL, 'S' },
		{ "watch", required_argument, NULL, 'w' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c = { 0 };
	const char *env = getenv(ADMIN_SOCKET_ENV);
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+jpsS:w:Vh", opts, NULL)) != -1) {
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
			if (optopt && strchr("Sw", optopt))
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
	if (optind >= argc) {
		usage(stderr);
		return 1;
	}
	c.argc = argc - optind - 1;
	c.argv = argv + optind + 1;
	for (const struct cli_object *o = cli_objects; o->name; o++) {
		if (strcmp(o->name, argv[optind]))
			continue;
		c.object = o->name;
		if (c.watch_s > 0 && o->fn != cmd_watch && o->fn != cmd_help && o->fn != cmd_capture)
			return cli_watch(&c, o);
		return o->fn(&c);
	}
	return cli_error(&c, "unknown object \"%s\"", argv[optind]);
}
