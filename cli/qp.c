// SPDX-License-Identifier: MIT
/* mroc-cli qp: queue pairs (admin command "qps"), one row each. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fmt.h"

void help_qp(FILE *f)
{
	fprintf(f,
		"Usage: " CLI_NAME " qp [ show ] [ QPN ]\n"
		"       " CLI_NAME " qp help\n"
		"One row per QP (or QP QPN): peer address and QP, state, mode (metaroce or\n"
		"rocev2), paths, QP window (QWND, the paths' windows summed), paced rate,\n"
		"bytes and messages each way, outstanding send work, errors.  -s adds posted\n"
		"receives and messages in flight; -d the peer's rate hint and the sequence\n"
		"numbers; watching adds TX and RX rates.  -br: QPN, peer, state, mode, paths,\n"
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

static void print_qp(const json_t *q, const json_t *prev, double dt)
{
	const char *peer = jget_str(q, "peer");

	print_row_start();
	print_uint(PRINT_BRIEF, "qpn", "QPN", jget_u64(q, "qpn"));
	print_str(PRINT_BRIEF, "peer", "PEER", peer);
	print_uint(PRINT_BRIEF, "peer_qpn", "PEER_QPN", jget_u64(q, "peer_qpn"));
	print_str(PRINT_BRIEF, "state", "STATE", jget_str(q, "state"));
	print_uint(PRINT_DETAILS, "worker", "WORKER", jget_u64(q, "worker"));
	print_str(PRINT_BRIEF, "mode", "MODE", jget_str(q, "mode"));
	print_uint(PRINT_BRIEF, "npaths", "PATHS", jget_u64(q, "npaths"));
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
	print_bool(PRINT_DETAILS, "peer_blocked", "PEER_WAIT", json_is_true(json_object_get(q, "peer_blocked")));
	print_uint(PRINT_BRIEF, "errors", "ERRORS", jget_u64(q, "errors"));
	print_row_end();
}

static int qp_show(struct cli *c)
{
	json_t *args = NULL, *r;
	const json_t *q, *prev;
	const char *w = cli_next(c);
	uint32_t qpn;
	size_t i;
	double dt;
	int rc;

	if (w && !strcmp(w, "help")) {
		help_qp(stdout);
		return 0;
	}
	if (w) {
		if (fmt_parse_u32(w, &qpn))
			return cli_error(c, "\"%s\" is not a QP number", w);
		args = json_pack("{s:I}", "qpn", (json_int_t)qpn);
	}
	rc = cli_no_more(c, help_qp);
	if (rc) {
		json_decref(args);
		return rc < 0 ? 0 : rc;
	}
	r = cli_request(c, "qps", args);
	json_decref(args);
	if (!r)
		return 1;
	prev = cli_prev(c, "qps", &dt);
	print_start(&c->po);
	print_table_start("qps");
	json_array_foreach(json_object_get(r, "qps"), i, q)
		print_qp(q, prev, dt);
	print_table_end();
	if (!json_array_size(json_object_get(r, "qps")))
		print_line("no QPs\n");
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
