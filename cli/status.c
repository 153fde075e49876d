// SPDX-License-Identifier: MIT
/* mroc-cli status: the daemon at a glance (admin command "status"). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fmt.h"

void help_status(FILE *f)
{
	fprintf(f,
		"Usage: " CLI_NAME " status [ show ]\n"
		"       " CLI_NAME " status help\n"
		"Version, uptime, backend (AF_XDP native or generic, zero-copy or copy mode, or\n"
		"the UDP fallback and why), interfaces and queues, XDP program id, clients,\n"
		"QPs, peers and control links; memory pinned for clients against mrocd's\n"
		"RLIMIT_MEMLOCK, and mrocd's page faults (its workers' stay flat once clients\n"
		"registered: their memory is pinned).\n");
}

/* "af_xdp, XDP native, copy mode" or "udp (fallback: why)" */
static void backend_text(const json_t *st, char *buf, size_t len)
{
	const char *be = jget_str(st, "backend"), *mode = jget_str(st, "xdp_mode");
	const json_t *zc = json_object_get(st, "zero_copy");

	snprintf(buf, len, "%s", be ? be : "?");
	if (mode)
		snprintf(buf + strlen(buf), len - strlen(buf), ", XDP %s", mode);
	if (zc)
		snprintf(buf + strlen(buf), len - strlen(buf), ", %s",
			 json_is_true(zc) ? "zero-copy" : "copy mode");
	if (json_is_true(json_object_get(st, "fallback")))
		snprintf(buf + strlen(buf), len - strlen(buf), " (fallback from af_xdp: %s)",
			 jget_str(st, "fallback_reason") ? jget_str(st, "fallback_reason") : "?");
}

/* One line per interface: "eth0: queues 0 1, XDP native, ifindex 2". */
static void print_interfaces(const json_t *st)
{
	const json_t *ifs = json_object_get(st, "interface_info"), *i;
	json_t *out = json_array();
	size_t n;

	json_array_foreach(ifs, n, i) {
		const json_t *qs = json_object_get(i, "queues"), *q;
		json_t *o = json_object(), *jq = json_array();
		char line[512];
		size_t k;

		snprintf(line, sizeof(line), "%s: queue%s", jget_str(i, "name") ?: "?",
			 json_array_size(qs) == 1 ? "" : "s");
		json_array_foreach(qs, k, q) {
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " %lld",
				 (long long)json_integer_value(q));
			json_array_append_new(jq, json_integer(json_integer_value(q)));
		}
		json_object_set_new(o, "name", json_string(jget_str(i, "name") ?: ""));
		json_object_set_new(o, "queues", jq);
		if (json_object_get(i, "ifindex")) {
			snprintf(line + strlen(line), sizeof(line) - strlen(line),
				 ", XDP %s, ifindex %llu", jget_str(i, "xdp_mode") ?: "?",
				 (unsigned long long)jget_u64(i, "ifindex"));
			json_object_set_new(o, "ifindex", json_integer((json_int_t)jget_u64(i, "ifindex")));
			json_object_set_new(o, "xdp_mode", json_string(jget_str(i, "xdp_mode") ?: "?"));
		}
		print_text(0, NULL, n ? "" : "interfaces", line, NULL);
		json_array_append_new(out, o);
	}
	if (!json_array_size(ifs))
		print_text(0, NULL, "interfaces", "-", NULL);
	print_text(0, "interfaces", NULL, NULL, out);
}

/* "12 MiB of unlimited", "page faults: 1234 minor, 0 major (workers 0, 0)" */
static void print_memory(const json_t *st)
{
	char l[128], a[32], b[32];
	json_int_t lim;

	if (!json_object_get(st, "locked_bytes"))
		return;		/* an older mrocd */
	lim = json_integer_value(json_object_get(st, "memlock_limit"));
	if (!print_is_json()) {
		snprintf(l, sizeof(l), "%s of %s (RLIMIT_MEMLOCK)",
			 fmt_bytes(a, sizeof(a), jget_u64(st, "locked_bytes")),
			 lim < 0 ? "unlimited" : fmt_bytes(b, sizeof(b), (uint64_t)lim));
		print_text(0, NULL, "pinned", l, NULL);
	}
	print_uint(0, "locked_bytes", NULL, jget_u64(st, "locked_bytes"));
	print_text(0, "memlock_limit", NULL, NULL, json_integer(lim));
	if (!json_object_get(st, "minor_faults"))
		return;		/* a user's own view (scope uid) */
	if (!print_is_json()) {
		snprintf(l, sizeof(l), "%llu minor, %llu major (workers %llu, %llu)",
			 (unsigned long long)jget_u64(st, "minor_faults"),
			 (unsigned long long)jget_u64(st, "major_faults"),
			 (unsigned long long)jget_u64(st, "worker_minor_faults"),
			 (unsigned long long)jget_u64(st, "worker_major_faults"));
		print_text(0, NULL, "page faults", l, NULL);
	}
	print_uint(0, "minor_faults", NULL, jget_u64(st, "minor_faults"));
	print_uint(0, "major_faults", NULL, jget_u64(st, "major_faults"));
	print_uint(0, "worker_minor_faults", NULL, jget_u64(st, "worker_minor_faults"));
	print_uint(0, "worker_major_faults", NULL, jget_u64(st, "worker_major_faults"));
}

static int status_show(struct cli *c)
{
	json_t *st;
	char be[512];
	int rc;

	rc = cli_no_more(c, help_status);
	if (rc)
		return rc < 0 ? 0 : rc;
	st = cli_request(c, "status", NULL);
	if (!st)
		return 1;
	backend_text(st, be, sizeof(be));
	print_start(&c->po);
	print_str(0, "daemon_version", "version", jget_str(st, "daemon_version"));
	print_uint(0, "pid", "pid", jget_u64(st, "pid"));
	print_duration(0, "uptime_ns", "uptime", jget_u64(st, "uptime_ns"));
	print_str(PRINT_DETAILS, "config_path", "config", jget_str(st, "config_path"));
	print_text(0, NULL, "backend", be, NULL);
	print_str(0, "backend", NULL, jget_str(st, "backend"));
	print_str(PRINT_DETAILS, "backend_detail", "sockets", jget_str(st, "backend_detail"));
	print_uint(0, "workers", "workers", jget_u64(st, "workers"));
	if (json_object_get(st, "xdp_mode"))
		print_str(0, "xdp_mode", NULL, jget_str(st, "xdp_mode"));
	if (json_object_get(st, "zero_copy"))
		print_bool(0, "zero_copy", NULL, json_is_true(json_object_get(st, "zero_copy")));
	print_bool(0, "fallback", NULL, json_is_true(json_object_get(st, "fallback")));
	if (json_object_get(st, "fallback_reason"))
		print_str(0, "fallback_reason", NULL, jget_str(st, "fallback_reason"));
	print_interfaces(st);
	if (json_object_get(st, "xdp_prog_id"))
		print_uint(0, "xdp_prog_id", "xdp_prog_id", jget_u64(st, "xdp_prog_id"));
	else
		print_text(0, NULL, "xdp_prog_id", "-", NULL);
	if (json_object_get(st, "xdp_stamps"))
		print_bool(PRINT_DETAILS, "xdp_stamps", NULL,
			   json_is_true(json_object_get(st, "xdp_stamps")));
	print_uint(0, "udp_port", "udp_port", jget_u64(st, "udp_port"));
	if (json_object_get(st, "scope")) {
		/* A user who is no administrator: its own clients' counts, nothing of others'. */
		char l[96];

		snprintf(l, sizeof(l), "uid %llu's own clients and QPs (not an administrator)",
			 (unsigned long long)jget_u64(st, "uid"));
		print_text(0, NULL, "shown", l, NULL);
		print_str(0, "scope", NULL, jget_str(st, "scope"));
		print_uint(0, "uid", NULL, jget_u64(st, "uid"));
	}
	print_uint(0, "clients", "clients", jget_u64(st, "clients"));
	print_uint(0, "qps", "qps", jget_u64(st, "qps"));
	if (json_object_get(st, "scope")) {
		print_memory(st);
		json_decref(st);
		return cli_print_end(c);
	}
	print_uint(0, "peers", "peers", jget_u64(st, "peers_known"));
	if (!print_is_json()) {
		char l[64];

		snprintf(l, sizeof(l), "%llu up of %llu",
			 (unsigned long long)jget_u64(st, "links_up"),
			 (unsigned long long)jget_u64(st, "links"));
		print_text(0, NULL, "links", l, NULL);
	}
	print_uint(0, "links", NULL, jget_u64(st, "links"));
	print_uint(0, "links_up", NULL, jget_u64(st, "links_up"));
	print_memory(st);
	/* Dead planes (AF_XDP, several ports): which, per peer, is in mroc-cli path show -d. */
	if (json_object_get(st, "ports_down")) {
		char l[64];

		snprintf(l, sizeof(l), "%llu (%llu times since start)",
			 (unsigned long long)jget_u64(st, "ports_down"),
			 (unsigned long long)jget_u64(st, "port_dead"));
		print_text(0, NULL, "ports down", l, NULL);
		print_uint(0, "ports_down", NULL, jget_u64(st, "ports_down"));
		print_uint(0, "port_dead", NULL, jget_u64(st, "port_dead"));
	}
	json_decref(st);
	return cli_print_end(c);
}

int cmd_status(struct cli *c)
{
	static const struct cli_cmd cmds[] = {
		{ "show", status_show, CLI_SHOW_ALIASES },
		{ NULL, NULL, NULL },
	};

	return cli_dispatch(c, cmds, help_status);
}
