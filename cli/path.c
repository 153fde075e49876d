// SPDX-License-Identifier: MIT
/* mroc-cli path: the paths of each QP (admin command "qps"), one row per path. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fmt.h"

void help_path(FILE *f)
{
	fprintf(f,
		"Usage: " CLI_NAME " path [ show ] [ qp QPN ]\n"
		"       " CLI_NAME " path help\n"
		"One row per path of every connected QP (or of QP QPN): path id, UDP source\n"
		"port, state, HEALTH in the words of MRC and UEC (good; assumed_bad: timed\n"
		"out or backing off; denied: its port counted down for the peer), smoothed/min\n"
		"RTT and RTT variation, path window (PWND), bytes\n"
		"in flight, packets sent, retransmitted, lost (SACK holes), CE marks, repaths,\n"
		"why the path last moved (MOVED: timeout, loss, ce, slow = congested while\n"
		"delivering under 2/3 of its siblings, keepalive = idle and unanswered) and\n"
		"how long AGO, delivered rate and the peer's rate hint.  -s adds ACKed\n"
		"packets, timeouts and backoff; -d the peer, RTO (the path's own) and\n"
		"RTO_TIMER (what its timer waits now: raised to the host's floor and 5/4 of\n"
		"its largest recent RTT, doubled per backoff), the DCTCP alpha, every\n"
		"move by reason (MOVES, e.g. timeout:3,slow:1), the\n"
		"source port the path moved from (FROM; back: the move was taken back), the\n"
		"ports counted down for the peer (DOWN: nothing came back through them,\n"
		"network.port_dead_ms; its paths avoid them) and WHY the path is in its HEALTH; watching adds SENT/s.  -br: one line per QP: its paths' source\n"
		"ports, the range of their sRTTs, packets sent, retransmitted and lost and\n"
		"repaths summed over them, and DOWN.\n");
}

/* MOVED: why the path last took a new source port; AGO: when; -d: FROM, the port it left. */
static void print_moved(const json_t *p)
{
	const char *why = jget_str(p, "moved");
	uint64_t ns = jget_u64(p, "moved_ago_ns");
	char ago[24];

	if (!why || !strcmp(why, "-")) {
		print_str(0, "moved", "MOVED", "-");
		print_text(0, NULL, "AGO", "-", NULL);
		print_text(PRINT_DETAILS, NULL, "FROM", "-", NULL);
		return;
	}
	print_str(0, "moved", "MOVED", why);
	print_text(0, "moved_ago_ns", "AGO", ns < 1000000000ULL ? fmt_ns(ago, sizeof(ago), ns) :
		   fmt_duration(ago, sizeof(ago), ns), json_integer((json_int_t)ns));
	/* 0: the move was taken back (the path is on the port it left). */
	if (jget_u64(p, "prev_sport"))
		print_uint(PRINT_DETAILS, "prev_sport", "FROM", jget_u64(p, "prev_sport"));
	else
		print_text(PRINT_DETAILS, "prev_sport", "FROM", "back", json_integer(0));
}

/* -d MOVES: the path's moves by reason, "timeout:3,slow:1" ("-" if it never moved). */
static void print_why(const json_t *p)
{
	const json_t *why = json_object_get(p, "repaths_why"), *v;
	char text[160] = "";
	const char *key;

	json_object_foreach((json_t *)why, key, v) {
		if (!json_integer_value(v))
			continue;
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s%s:%lld",
			 text[0] ? "," : "", key, (long long)json_integer_value(v));
	}
	print_text(PRINT_DETAILS, "repaths_why", "MOVES", text[0] ? text : "-",
		   why ? json_deep_copy(why) : json_object());
}

/* DOWN: the ports counted down for the QP's peer (a dead plane): its paths avoid them. */
static void print_down(unsigned flags, const json_t *q)
{
	const json_t *down = json_object_get(q, "ports_down"), *v;
	char text[64] = "";
	size_t i;

	json_array_foreach(down, i, v)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s%s", i ? "," : "",
			 json_string_value(v) ? json_string_value(v) : "?");
	print_text(flags, "ports_down", "DOWN", text[0] ? text : "-",
		   down ? json_deep_copy(down) : json_array());
}

/* The same path one frame ago (watch), for SENT/s. */
static const json_t *prev_path(const json_t *prev, uint64_t qpn, uint64_t id)
{
	const json_t *q, *p;
	size_t i, j;

	json_array_foreach(json_object_get(prev, "qps"), i, q) {
		if (jget_u64(q, "qpn") != qpn)
			continue;
		json_array_foreach(json_object_get(q, "paths"), j, p)
			if (jget_u64(p, "path_id") == id)
				return p;
	}
	return NULL;
}

static void print_path(const json_t *q, const json_t *p, const json_t *prev, double dt)
{
	uint64_t qpn = jget_u64(q, "qpn");
	char alpha[16];

	print_row_start();
	print_uint(0, "qpn", "QPN", qpn);
	print_str(PRINT_DETAILS, "peer", "PEER", jget_str(q, "peer"));
	print_uint(0, "path_id", "PATH", jget_u64(p, "path_id"));
	print_uint(0, "sport", "SPORT", jget_u64(p, "sport"));
	print_str(0, "port", "PORT", jget_str(p, "port") ? jget_str(p, "port") : "-");
	print_down(PRINT_DETAILS, q);
	print_str(0, "state", "STATE", jget_str(p, "state"));
	print_str(0, "health", "HEALTH", jget_str(p, "health") ? jget_str(p, "health") : "-");
	print_ns(0, "srtt_ns", "SRTT", jget_u64(p, "srtt_ns"));
	print_ns(0, "min_rtt_ns", "MINRTT", jget_u64(p, "min_rtt_ns"));
	print_ns(0, "rttvar_ns", "RTTVAR", jget_u64(p, "rttvar_ns"));
	print_ns(PRINT_DETAILS, "rto_ns", "RTO", jget_u64(p, "rto_ns"));
	print_ns(PRINT_DETAILS, "rto_timer_ns", "RTO_TIMER", jget_u64(p, "rto_timer_ns"));
	print_bytes(0, "pwnd_bytes", "PWND", jget_u64(p, "pwnd_bytes"));
	print_bytes(0, "inflight_bytes", "INFLIGHT", jget_u64(p, "inflight_bytes"));
	print_uint(0, "sent", "SENT", jget_u64(p, "sent"));
	if (dt > 0) {
		const json_t *pp = prev_path(prev, qpn, jget_u64(p, "path_id"));

		print_rate(0, "sent_per_s", "SENT/s",
			   pp ? fmt_rate(jget_u64(p, "sent"), jget_u64(pp, "sent"), dt) : 0);
	}
	print_uint(0, "retx", "RETX", jget_u64(p, "retx"));
	print_uint(0, "lost", "LOST", jget_u64(p, "lost"));
	print_uint(0, "ce", "CE", jget_u64(p, "ce"));
	print_uint(0, "repaths", "REPATHS", jget_u64(p, "repaths"));
	print_moved(p);
	print_why(p);
	print_uint(PRINT_STATS, "acked", "ACKED", jget_u64(p, "acked"));
	print_uint(PRINT_STATS, "timeouts", "TIMEOUTS", jget_u64(p, "timeouts"));
	print_uint(PRINT_STATS, "backoff", "BACKOFF", jget_u64(p, "backoff"));
	snprintf(alpha, sizeof(alpha), "%.3f", (double)jget_u64(p, "dctcp_alpha_ppm") / 1e6);
	print_text(PRINT_DETAILS, NULL, "ALPHA", alpha, NULL);
	print_uint(0, "dctcp_alpha_ppm", NULL, jget_u64(p, "dctcp_alpha_ppm"));
	/* Loss bursts that halved the window, and those taken as random loss (JSON only). */
	print_uint(0, "loss_cuts", NULL, jget_u64(p, "loss_cuts"));
	print_uint(0, "loss_trims", NULL, jget_u64(p, "loss_trims"));
	print_bps(0, "rate_bps", "RATE", jget_u64(p, "rate_bps"));
	print_bps(0, NULL, "HINT", jget_u64(q, "rate_hint_mbps") * 1000000ULL);
	print_uint(0, "rate_hint_mbps", NULL, jget_u64(q, "rate_hint_mbps"));
	print_text(PRINT_DETAILS, "why", "WHY", jget_str(p, "why") && *jget_str(p, "why") ?
		   jget_str(p, "why") : "-", json_string(jget_str(p, "why") ? jget_str(p, "why") : ""));
	print_row_end();
}

/* -br: one line per QP, its paths summed up. */
static void print_qp_paths(const json_t *q)
{
	uint64_t sent = 0, retx = 0, lost = 0, repaths = 0, lo = UINT64_MAX, hi = 0, v;
	char ports[16 * 7] = "", rtt[2 * 16 + 2], a[16], b[16];
	json_t *jports = json_array();
	const json_t *p;
	size_t j;

	json_array_foreach(json_object_get(q, "paths"), j, p) {
		v = jget_u64(p, "sport");
		snprintf(ports + strlen(ports), sizeof(ports) - strlen(ports), "%s%llu", j ? "," : "",
			 (unsigned long long)v);
		json_array_append_new(jports, json_integer((json_int_t)v));
		v = jget_u64(p, "srtt_ns");
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
		sent += jget_u64(p, "sent");
		retx += jget_u64(p, "retx");
		lost += jget_u64(p, "lost");
		repaths += jget_u64(p, "repaths");
	}
	if (lo == UINT64_MAX)
		lo = 0;
	snprintf(rtt, sizeof(rtt), "%s-%s", fmt_ns(a, sizeof(a), lo), fmt_ns(b, sizeof(b), hi));
	print_row_start();
	print_uint(PRINT_BRIEF, "qpn", "QPN", jget_u64(q, "qpn"));
	print_str(PRINT_BRIEF, "peer", "PEER", jget_str(q, "peer"));
	print_uint(PRINT_BRIEF, "npaths", "PATHS", json_array_size(jports));
	print_text(PRINT_BRIEF, "sports", "SPORTS", ports, jports);
	print_text(PRINT_BRIEF, NULL, "SRTT", rtt, NULL);
	print_ns(PRINT_BRIEF, "srtt_min_ns", NULL, lo);
	print_ns(PRINT_BRIEF, "srtt_max_ns", NULL, hi);
	print_uint(PRINT_BRIEF, "sent", "SENT", sent);
	print_uint(PRINT_BRIEF, "retx", "RETX", retx);
	print_uint(PRINT_BRIEF, "lost", "LOST", lost);
	print_uint(PRINT_BRIEF, "repaths", "REPATHS", repaths);
	print_down(PRINT_BRIEF, q);
	print_row_end();
}

static int path_show(struct cli *c)
{
	json_t *args = NULL, *r;
	const json_t *q, *p, *prev;
	const char *w;
	unsigned rows = 0;
	bool one;
	size_t i, j;
	double dt;

	while ((w = cli_next(c))) {
		uint32_t qpn;

		if (!strcmp(w, "help")) {
			help_path(stdout);
			json_decref(args);
			return 0;
		}
		if (strcmp(w, "qp") || args) {
			json_decref(args);
			return cli_error(c, "unexpected argument \"%s\"", w);
		}
		w = cli_next(c);
		if (!w || fmt_parse_u32(w, &qpn))
			return cli_error(c, "\"qp\" wants a QP number, not %s%s%s", w ? "\"" : "",
					 w ? w : "nothing", w ? "\"" : "");
		args = json_pack("{s:I}", "qpn", (json_int_t)qpn);
	}
	one = args;
	r = cli_request(c, "qps", args);
	json_decref(args);
	if (!r)
		return 1;
	prev = cli_prev(c, "qps", &dt);
	print_start(&c->po);
	print_table_start(c->po.brief ? "qps" : "paths");
	json_array_foreach(json_object_get(r, "qps"), i, q) {
		if (c->po.brief && json_array_size(json_object_get(q, "paths"))) {
			print_qp_paths(q);
			rows++;
			continue;
		}
		json_array_foreach(json_object_get(q, "paths"), j, p) {
			print_path(q, p, prev, dt);
			rows++;
		}
	}
	print_table_end();
	if (!rows)
		print_line("no paths (no QP is connected%s)\n", one ? "" : " yet");
	json_decref(r);
	return cli_print_end(c);
}

int cmd_path(struct cli *c)
{
	static const struct cli_cmd cmds[] = {
		{ "show", path_show, CLI_SHOW_ALIASES },
		{ NULL, NULL, NULL },
	};

	return cli_dispatch(c, cmds, help_path);
}
