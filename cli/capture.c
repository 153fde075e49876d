// SPDX-License-Identifier: MIT
/*
 * mroc-cli capture: start tshark (or dumpcap when writing a file) on the
 * daemon's interfaces with a capture filter for its UDP port, so that what
 * is captured is MetaRoCE and the mroc dissector (tools/wireshark/mroc.lua,
 * installed by make install) decodes it.  The daemon is asked for its port
 * and interfaces (admin command "status"); the command line is printed and
 * then exec'd, so an operator can copy and adapt it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define CAPTURE_MAX_IFS 16

void help_capture(FILE *f)
{
	fprintf(f,
		"Usage: " CLI_NAME " capture [ dev IFNAME ]... [ write FILE ] [ count PACKETS ]\n"
		"                         [ duration SECONDS ] [ snaplen BYTES ] [ dry ]\n"
		"       " CLI_NAME " capture help\n"
		"Capture MetaRoCE packets: tshark decoding them live, or dumpcap writing FILE\n"
		"(pcapng; read it with tshark -r FILE -Y mroc).  The capture filter is the\n"
		"daemon's UDP port (udp dst port N: data, ACKs and CM all go to it); the\n"
		"interfaces are the daemon's unless dev names others (e.g. a router's, in\n"
		"another namespace: the admin socket is a path, reachable from there).\n"
		"snaplen keeps the first BYTES of each frame (160 keeps every MetaRoCE header\n"
		"over IPv4 or IPv6, no payload).  dry prints the command without running it.\n"
		"AF_XDP: packets the XDP program redirects to mrocd never reach the host's\n"
		"capture taps, and copy-mode transmissions are not reliably seen either;\n"
		"capture on the next hop (a switch mirror port, a router) or use the UDP backend.\n");
}

struct capture_args {
	const char *devs[CAPTURE_MAX_IFS];
	int ndevs;
	const char *file;
	const char *count;
	const char *duration;
	const char *snaplen;
	bool dry;
};

static int positive_number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	return *s >= '0' && *s <= '9' && !*end && !errno && v > 0 && v <= INT_MAX;
}

static int capture_parse(struct cli *c, struct capture_args *a)
{
	const char *w, *v;

	while ((w = cli_next(c))) {
		if (!strcmp(w, "help")) {
			help_capture(stdout);
			return -1;
		}
		if (!strcmp(w, "dry")) {
			a->dry = true;
			continue;
		}
		v = cli_next(c);
		if (!v || !strcmp(v, "help"))
			return cli_error(c, "\"%s\" needs a value", w);
		if (!strcmp(w, "dev")) {
			if (a->ndevs == CAPTURE_MAX_IFS)
				return cli_error(c, "at most %d interfaces", CAPTURE_MAX_IFS);
			a->devs[a->ndevs++] = v;
		} else if (!strcmp(w, "write")) {
			a->file = v;
		} else if (!strcmp(w, "count") || !strcmp(w, "duration") || !strcmp(w, "snaplen")) {
			if (!positive_number(v))
				return cli_error(c, "%s wants a positive integer, not \"%s\"", w, v);
			*(w[0] == 'c' ? &a->count : w[0] == 'd' ? &a->duration : &a->snaplen) = v;
		} else {
			return cli_error(c, "unknown argument \"%s\" (dev, write, count, duration, snaplen, dry)",
					 w);
		}
	}
	return 0;
}

/* Build argv for tshark/dumpcap in args (strings in store); returns argc. */
static int capture_argv(const struct capture_args *a, unsigned port, const char **args,
			char (*store)[64])
{
	int n = 0;

	args[n++] = a->file ? "dumpcap" : "tshark";
	for (int i = 0; i < a->ndevs; i++) {
		args[n++] = "-i";
		args[n++] = a->devs[i];
	}
	snprintf(store[0], sizeof(store[0]), "udp dst port %u", port);
	args[n++] = "-f";
	args[n++] = store[0];
	if (a->file) {
		args[n++] = "-w";
		args[n++] = a->file;
	}
	if (a->snaplen) {
		args[n++] = "-s";
		args[n++] = a->snaplen;
	}
	if (a->count) {
		args[n++] = "-c";
		args[n++] = a->count;
	}
	if (a->duration) {
		snprintf(store[1], sizeof(store[1]), "duration:%s", a->duration);
		args[n++] = "-a";
		args[n++] = store[1];
	}
	args[n] = NULL;
	return n;
}


int cmd_capture(struct cli *c)
{
	const char *args[2 * CAPTURE_MAX_IFS + 16];
	char store[2][64];
	struct capture_args a = { 0 };
	const json_t *ifs, *i;
	const char *be;
	unsigned port;
	json_t *st;
	size_t k;
	int rc;

	rc = capture_parse(c, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	st = cli_request(c, "status", NULL);
	if (!st)
		return 1;
	port = (unsigned)jget_u64(st, "udp_port");
	be = jget_str(st, "backend") ?: "";
	ifs = json_object_get(st, "interfaces");
	if (!a.ndevs)
		json_array_foreach(ifs, k, i)
			if (a.ndevs < CAPTURE_MAX_IFS && json_string_value(i))
				a.devs[a.ndevs++] = json_string_value(i);
	if (!port || !a.ndevs) {
		json_decref(st);
		return cli_error(c, "the daemon reported no UDP port or interface");
	}
	if (!strcmp(be, "af_xdp") && !json_is_true(json_object_get(st, "fallback")))
		fprintf(stderr, CLI_NAME ": note: AF_XDP backend: received packets bypass this host's "
			"capture; capture on the next hop for both directions\n");
	capture_argv(&a, port, args, store);
	/* The command, quoted where needed: the dry run's output, else a note before exec. */
	fprintf(a.dry ? stdout : stderr, "%s", a.dry ? "" : CLI_NAME ": running: ");
	for (const char **p = args; *p; p++) {
		const char *q = strchr(*p, ' ') ? "'" : "";

		fprintf(a.dry ? stdout : stderr, "%s%s%s%s", p == args ? "" : " ", q, *p, q);
	}
	fputc('\n', a.dry ? stdout : stderr);
	fflush(NULL);
	if (a.dry) {
		json_decref(st);
		return 0;
	}
	/* st owns the interface names in args: it is not freed before exec. */
	execvp(args[0], (char *const *)args);
	fprintf(stderr, CLI_NAME ": cannot run %s: %s%s\n", args[0], strerror(errno),
		errno == ENOENT ? " (apt-get install tshark)" : "");
	json_decref(st);
	return 1;
}
