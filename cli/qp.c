// SPDX-License-Identifier: MIT
/* mroc-cli qp: queue pairs (admin command "qps"), one row each. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fmt.h"

void help_qp(FILE *f)
{
	fprintf(f,
		"Usage: " CLI_NAME " qp [ show ] [ QPN ] [ pid PID ] [ comm NAME ]\n"
		"       " CLI_NAME " qp help\n"
		"One row per QP (or QP QPN; or the QPs of process PID, or of processes whose\n"
		"command name is NAME, as rdma's \"res show qp pid/comm\"): the owning process\n"
		"(PID and COMM; mrocd for its own control links), peer address and QP, state,\n"
		"mode (metaroce or rocev2), paths and their states in words (PATH_STATES:\n"
		"good, assumed_bad = timed out or backing off, denied = its port counted down\n"
		"for the peer; \"path show\" says why, path by path), QP window (QWND, the\n"
		"paths' windows summed), paced rate, bytes and messages each way, outstanding\n"
		"send work, errors.  -s adds posted receives and messages in flight; -d why a\n"
		"QP in error is (WHY: \"connect refused: the security modes differ\", \"retries\n"
		"exceeded ...\"), the owner's uid and client id, the peer's rate hint, the\n"
		"sequence numbers and a client's rings (RINGS: producer/consumer/flags of\n"
		"the SQ and CQ, hot or cold: is mrocd polling it or waiting for its doorbell);\n"
		"watching adds TX and RX rates.  -br: QPN, PID, COMM, peer, state, mode, paths,\n"
		"bytes each way and errors.\n");
}

static const json_t *prev_qp(const json_t *prev, uint64_t qpn)
{
	const json_t *q;
	size_t i;

	json_array_foreach(json_object_get(prev, "qps"), i, q)
		if (jget_u64(q, "qpn") == qpn)
			return q;
	return NULL;
}

/* bytes/s of key since the previous frame, as bit/s */
static void print_traffic_rate(const char *key, const char *json_key, const char *col,
			       const json_t *q, const json_t *pq, double dt)
{
	double r = pq ? fmt_rate(jget_u64(q, key), jget_u64(pq, key), dt) : 0;

	print_bps(0, json_key, col, (uint64_t)(r * 8 + 0.5));
}

/* PATH_STATES: how many paths are good, assumed bad, denied ("good=8"; "-" without paths). */
static void print_path_states(const json_t *q)
{
	static const char *const names[] = { "good", "assumed_bad", "denied" };
	unsigned n[3] = { 0 }, i;
	json_t *j = json_object();
	char text[64] = "";
	const json_t *p;
	size_t k;

	json_array_foreach(json_object_get(q, "paths"), k, p)
		for (i = 0; i < 3; i++)
			if (jget_str(p, "health") && !strcmp(jget_str(p, "health"), names[i]))
				n[i]++;
	for (i = 0; i < 3; i++) {
		json_object_set_new(j, names[i], json_integer(n[i]));
		if (n[i])
			snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s%s=%u",
				 text[0] ? "," : "", names[i], n[i]);
	}
	print_text(0, "path_states", "PATH_STATES", text[0] ? text : "-", j);
}

/*
 * RINGS (-d, a client's QP): "sq P/C/F cq P/C/F hot|cold", producer and
 * consumer index and flags of its send queue and CQ as mrocd sees them now
 * (a stall: posts the daemon has not taken, completions the client has not
 * read); the JSON has rq too.
 */
static void print_rings(const json_t *q)
{
	const json_t *r = json_object_get(q, "rings"), *sq, *cq;
	char text[96] = "-";

	sq = json_object_get(r, "sq");
	cq = json_object_get(r, "cq");
	if (json_array_size(sq) == 3 && json_array_size(cq) == 3)
		snprintf(text, sizeof(text), "sq %lld/%lld/%lld cq %lld/%lld/%lld %s",
			 (long long)json_integer_value(json_array_get(sq, 0)),
			 (long long)json_integer_value(json_array_get(sq, 1)),
			 (long long)json_integer_value(json_array_get(sq, 2)),
			 (long long)json_integer_value(json_array_get(cq, 0)),
			 (long long)json_integer_value(json_array_get(cq, 1)),
			 (long long)json_integer_value(json_array_get(cq, 2)),
			 json_is_true(json_object_get(r, "hot")) ? "hot" : "cold");
	print_text(PRINT_DETAILS, r ? "rings" : NULL, "RINGS", text, r ? json_deep_copy(r) : NULL);
}

static void print_qp(const json_t *q, const json_t *prev, double dt)
{
	const char *peer = jget_str(q, "peer"), *comm = jget_str(q, "comm");

	print_row_start();
	print_uint(PRINT_BRIEF, "qpn", "QPN", jget_u64(q, "qpn"));
	print_uint(PRINT_BRIEF, "pid", "PID", jget_u64(q, "pid"));
	print_str(PRINT_BRIEF, "comm", "COMM", comm && *comm ? comm : "-");
	print_str(PRINT_DETAILS, "owner", "OWNER", jget_str(q, "owner"));
	if (json_object_get(q, "uid")) {
		print_uint(PRINT_DETAILS, "uid", "UID", jget_u64(q, "uid"));
		print_uint(PRINT_DETAILS, "client", "CLIENT", jget_u64(q, "client"));
	} else {
		print_text(PRINT_DETAILS, NULL, "UID", "-", NULL);
		print_text(PRINT_DETAILS, NULL, "CLIENT", "-", NULL);
	}
	print_str(PRINT_BRIEF, "peer", "PEER", peer);
	print_uint(PRINT_BRIEF, "peer_qpn", "PEER_QPN", jget_u64(q, "peer_qpn"));
	print_str(PRINT_BRIEF, "state", "STATE", jget_str(q, "state"));
	print_str(PRINT_DETAILS, "error", "WHY", jget_str(q, "error") ?: "-");
	print_uint(PRINT_DETAILS, "worker", "WORKER", jget_u64(q, "worker"));
	print_str(PRINT_BRIEF, "mode", "MODE", jget_str(q, "mode"));
	print_uint(PRINT_BRIEF, "npaths", "PATHS", jget_u64(q, "npaths"));
	print_path_states(q);
	print_bytes(0, "qwnd_bytes", "QWND", jget_u64(q, "qwnd_bytes"));
	print_bps(0, "pacing_bps", "PACING", jget_u64(q, "pacing_bps"));
	print_bytes(PRINT_BRIEF, "tx_bytes", "TX_BYTES", jget_u64(q, "tx_bytes"));
	print_bytes(PRINT_BRIEF, "rx_bytes", "RX_BYTES", jget_u64(q, "rx_bytes"));
	if (dt > 0) {
		const json_t *pq = prev_qp(prev, jget_u64(q, "qpn"));

		print_traffic_rate("tx_bytes", "tx_rate_bps", "TX_RATE", q, pq, dt);
		print_traffic_rate("rx_bytes", "rx_rate_bps", "RX_RATE", q, pq, dt);
	}
	print_uint(0, "tx_msgs", "TX_MSGS", jget_u64(q, "tx_msgs"));
	print_uint(0, "rx_msgs", "RX_MSGS", jget_u64(q, "rx_msgs"));
	print_uint(0, "sq_outstanding", "SQ_OUT", jget_u64(q, "sq_outstanding"));
	print_uint(PRINT_STATS, "rq_posted", "RQ_POSTED", jget_u64(q, "rq_posted"));
	print_uint(PRINT_STATS, "msgs_outstanding", "MSGS_OUT", jget_u64(q, "msgs_outstanding"));
	print_bps(PRINT_DETAILS, NULL, "HINT", jget_u64(q, "rate_hint_mbps") * 1000000ULL);
	print_uint(0, "rate_hint_mbps", NULL, jget_u64(q, "rate_hint_mbps"));
	print_uint(PRINT_DETAILS, "snd_una", "SND_UNA", jget_u64(q, "snd_una"));
	print_uint(PRINT_DETAILS, "snd_nxt", "SND_NXT", jget_u64(q, "snd_nxt"));
	print_uint(PRINT_DETAILS, "rcv_cum", "RCV_CUM", jget_u64(q, "rcv_cum"));
	print_uint(PRINT_DETAILS, "inflight_pkts", "INFL_PKTS", jget_u64(q, "inflight_pkts"));
	print_uint(PRINT_DETAILS, "peer_inflight_pkts", "PEER_INFL", jget_u64(q, "peer_inflight_pkts"));
	print_uint(PRINT_DETAILS, "peer_window_pkts", "PEER_WND", jget_u64(q, "peer_window_pkts"));
	print_bool(PRINT_DETAILS, "peer_blocked", "PEER_WAIT", json_is_true(json_object_get(q, "peer_blocked")));
	print_rings(q);
	print_bytes(PRINT_DETAILS, "mem_bytes", "MEM", jget_u64(q, "mem_bytes"));
	print_uint(PRINT_BRIEF, "errors", "ERRORS", jget_u64(q, "errors"));
	print_row_end();
}

/* The filters of "qp show": a QPN (asked of mrocd), pid PID, comm NAME. */
struct qp_filter {
	bool by_qpn, by_pid;
	uint32_t qpn, pid;
	const char *comm;
};

static bool qp_selected(const struct qp_filter *f, const json_t *q)
{
	const char *comm = jget_str(q, "comm");

	if (f->by_pid && jget_u64(q, "pid") != f->pid)
		return false;
	return !f->comm || (comm && !strcmp(comm, f->comm));
}

static int qp_parse(struct cli *c, struct qp_filter *f)
{
	const char *w;

	while ((w = cli_next(c))) {
		if (!strcmp(w, "help")) {
			help_qp(stdout);
			return -1;
		}
		if (!strcmp(w, "pid") || !strcmp(w, "comm")) {
			const char *v = cli_next(c);

			if (!v)
				return cli_error(c, "\"%s\" wants a %s", w, *w == 'p' ? "process id" :
						 "command name");
			if (*w == 'c')
				f->comm = v;
			else if (fmt_parse_u32(v, &f->pid))
				return cli_error(c, "\"%s\" is not a process id", v);
			else
				f->by_pid = true;
			continue;
		}
		if (f->by_qpn || fmt_parse_u32(w, &f->qpn))
			return cli_error(c, "\"%s\" is not a QP number", w);
		f->by_qpn = true;
	}
	return 0;
}

static int qp_show(struct cli *c)
{
	struct qp_filter f = { 0 };
	json_t *args = NULL, *r;
	const json_t *q, *prev;
	unsigned rows = 0;
	size_t i;
	double dt;
	int rc;

	rc = qp_parse(c, &f);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (f.by_qpn)
		args = json_pack("{s:I}", "qpn", (json_int_t)f.qpn);
	r = cli_request(c, "qps", args);
	json_decref(args);
	if (!r)
		return 1;
	prev = cli_prev(c, "qps", &dt);
	print_start(&c->po);
	print_table_start("qps");
	json_array_foreach(json_object_get(r, "qps"), i, q) {
		if (!qp_selected(&f, q))
			continue;
		print_qp(q, prev, dt);
		rows++;
	}
	print_table_end();
	if (!rows)
		print_line(f.by_pid || f.comm ? "no QPs of that process\n" : "no QPs\n");
	json_decref(r);
	return cli_print_end(c);
}

int cmd_qp(struct cli *c)
{
	static const struct cli_cmd cmds[] = {
		{ "show", qp_show, CLI_SHOW_ALIASES },
		{ NULL, NULL, NULL },
	};

	return cli_dispatch(c, cmds, help_qp);
}
