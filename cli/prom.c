// SPDX-License-Identifier: MIT
/*
 * mroc-cli counters prometheus: the daemon's counters, QPs and paths in the
 * Prometheus text exposition format (version 0.0.4), for node_exporter's
 * textfile collector or a scrape through a wrapper.  Every family has its
 * # HELP and # TYPE lines and all its samples together; names start with
 * mroc_, counters end in _total, times are in seconds and rates in bytes
 * per second.  Counters are the daemon's raw, monotonic values: a
 * "counters reset" does not touch them (Prometheus handles restarts).
 * The output is written at once, or not at all when a request fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fmt.h"

#define NAME_MAX_	128
#define LABEL_MAX	256

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_u64(FILE *f, const char *name, const char *labels, uint64_t v)
{
	fprintf(f, "%s%s %llu\n", name, labels ? labels : "", (unsigned long long)v);
}

static void sample_f(FILE *f, const char *name, const char *labels, double v)
{
	fprintf(f, "%s%s %.9g\n", name, labels ? labels : "", v);
}

/* {k1="v1",k2="v2"} into buf, values escaped; pairs NULL-terminated. */
static void labels(char *buf, size_t len, const char *const *kv)
{
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; kv[i] && kv[i + 1]; i += 2) {
		char v[LABEL_MAX];

		if (fmt_prom_label(v, sizeof(v), kv[i + 1]))
			snprintf(v, sizeof(v), "?");
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s=\"%s\"", i ? "," : "{",
				      kv[i], v);
	}
	if (n && n + 2 < len)
		strcat(buf, "}");
}

/* ---- counter groups ------------------------------------------------------- */

/* HELP texts of the counters we know; others get a generic one. */
static const char *const helps[][2] = {
	{ "mroc_engine_rx_pkts_total", "Packets the engine received." },
	{ "mroc_engine_rx_malformed_total", "Packets that failed to parse (by reason: "
	  "mroc_engine_rx_malformed_by_reason_total)." },
	{ "mroc_engine_rx_unknown_qp_total", "Packets for a QP that does not exist." },
	{ "mroc_engine_rx_bad_peer_total", "Packets for a QP from another host than its peer." },
	{ "mroc_engine_rx_bad_state_total", "Packets the QP's state does not allow." },
	{ "mroc_engine_rx_dup_total", "Data packets whose data was already placed." },
	{ "mroc_engine_rx_out_of_window_total", "Packets beyond the receive window." },
	{ "mroc_engine_rx_access_err_total", "Requests with a bad rkey, PD or access rights." },
	{ "mroc_engine_rx_bounds_err_total", "Requests outside the memory region or RECV." },
	{ "mroc_engine_rx_rnr_total", "SEND or WRITE_IMM without a posted RECV." },
	{ "mroc_engine_rx_seq_err_total", "RoCEv2 mode: out-of-order packets dropped." },
	{ "mroc_engine_rx_msg_mismatch_total", "Segments that disagree with their message "
	  "(opcode, length, key, address): not placed, NAK INVALID." },
	{ "mroc_engine_rx_answer_timeout_total", "Timeouts waiting for a READ or atomic answer "
	  "the peer acknowledged (each counts as a retry)." },
	{ "mroc_engine_rx_bytes_placed_total", "Payload bytes placed into memory." },
	{ "mroc_engine_tx_pkts_total", "Packets the engine sent." },
	{ "mroc_engine_tx_data_total", "Data packets sent." },
	{ "mroc_engine_tx_retx_total", "Data packets retransmitted." },
	{ "mroc_engine_tx_acks_total", "ACK packets sent." },
	{ "mroc_engine_tx_cm_total", "Connection management packets sent." },
	{ "mroc_engine_tx_keepalive_total", "Keepalive packets sent." },
	{ "mroc_engine_rto_total", "Retransmission timeouts." },
	{ "mroc_engine_repath_total", "Paths moved to a new UDP source port." },
	{ "mroc_engine_lost_total", "Packets declared lost (SACK holes)." },
	{ "mroc_engine_ce_total", "Packets acknowledged with a CE mark." },
	{ "mroc_engine_keepalive_retry_total", "Keepalives unanswered, asked again on another path." },
	{ "mroc_engine_rto_spurious_total", "RTOs the next ACK showed needless (it echoed an "
	  "older send)." },
	{ "mroc_engine_rx_bad_tag_total", "Packets refused by the security mode: no or a wrong "
	  "tag (token), not sealed (aead)." },
	{ "mroc_engine_cm_sec_mismatch_total", "Connections refused for another security mode." },
	{ "mroc_engine_lost_rack_total", "Of the packets declared lost, those found by time across "
	  "a QP's paths (a later-sent packet acknowledged)." },
	{ "mroc_engine_lost_rack_late_total", "Of those, packets an ACK then showed delivered, "
	  "only late (a needless resend): the ACK's echo is taken as an RTT sample." },
	{ "mroc_engine_tx_scout_total", "Probes sent by a port of their own (scouts): a timed-out "
	  "path of a QP with no live path tries several routes at once." },
	{ "mroc_engine_scout_move_total", "Paths moved to the port of a scout that an ACK answered "
	  "(its route worked both ways)." },
	{ "mroc_engine_reorder_total", "Packets a path's own route delivered after a later one "
	  "(no loss): that path then declares losses by time alone, with a reorder window." },
	{ "mroc_engine_cm_twin_total", "Connection requests and RTUs sent a second time at once "
	  "by another port, in a try after the first (the first try's four sends went unanswered)." },
	{ "mroc_engine_rx_bad_echo_total", "ACKs whose timestamp echo is no send time of ours "
	  "(from the future, or older than the path tracks): no RTT sample taken." },
	{ "mroc_engine_cm_early_retry_total", "Connection requests repeated at once: the peer sent "
	  "to the QP as if connected (its answer was lost)." },
	{ "mroc_engine_rto_undone_total", "Needless RTOs undone: window, backoff and port back." },
	{ "mroc_engine_rto_unlost_total", "Packets an undone RTO had declared lost that ACKs then "
	  "showed delivered (not resent)." },
	{ "mroc_engine_repath_back_total", "Paths moved by a timeout that went back to their former "
	  "port: the new one delivered less." },
	{ "mroc_engine_repath_back_held_total", "Timeout moves whose new port delivered less but "
	  "that stayed: the port left delivered nothing once the path had fallen silent." },
	{ "mroc_engine_cm_half_open_total", "Connection requests answered; the listener is bound "
	  "only when the requester proves it got the answer." },
	{ "mroc_engine_cm_half_dropped_total", "Answered connection requests never proven (expired, "
	  "pushed out, refused, or their listener went to another requester)." },
	{ "mroc_engine_cm_busy_total", "Requesters told their listener went to another (CONNECT_REJ "
	  "BUSY): they ask again." },
	{ "mroc_engine_cm_busy_retry_total", "Connection requests sent again after a BUSY refusal." },
	{ "mroc_engine_cm_req_again_total", "Connection requests sent again because the proof that "
	  "we got the answer went unanswered (the server may have dropped the request)." },
	{ "mroc_engine_cm_copy_total", "Connection requests and proofs (RTU) sent again within "
	  "their try (up to three times): nothing had come back by a quarter, half, three "
	  "quarters of its wait." },
	{ "mroc_engine_rx_stamped_total", "Packets whose arrival time the driver stamped (the XDP "
	  "program), not the worker's poll." },
	{ "mroc_engine_rx_wait_ns_total", "Nanoseconds stamped packets waited from their arrival to "
	  "the engine (receive rings, the worker's batches), summed." },
	{ "mroc_engine_ack_host_ns_total", "Nanoseconds of host time peers' ACKs said their echo "
	  "held (kept out of the delay signal), summed." },
	{ "mroc_engine_rx_stale_keepalive_total", "Keepalives not above the last one taken (replayed, "
	  "or overtaken by a newer one): no sign of life." },
	{ "mroc_engine_rx_ack_merged_total", "ACKs a later ACK of their path in the same receive "
	  "batch said all of: applied as that one." },
	{ "mroc_engine_rx_sack_unsent_total", "ACKs whose SACK bitmap claimed a PSN never sent on "
	  "its path (those bits ignored)." },
	{ "mroc_engine_repath_slow_back_total", "Paths moved for delivering less than their "
	  "siblings that went back to their former port: the new one gave them no more." },
	{ "mroc_engine_tx_peer_blocked_total", "QPs that stopped sending because their peer host's "
	  "window (transport.peer_window_pkts) was full." },
	{ "mroc_engine_tx_run_cut_total", "Of those, QPs stopped in the middle of a run of ack_every "
	  "packets: the receiver's ACK for the run waits for ack_delay." },
	{ "mroc_engine_tx_path_blocked_total", "QPs with a segment to send that found no path with "
	  "room in its congestion window." },
	{ "mroc_engine_tx_paced_total", "QPs held back by their pacing gap." },
	{ "mroc_engine_tx_batch_full_total", "Send batches the engine filled: the driver's batch size, "
	  "not the engine, ended them." },
	{ "mroc_engine_tx_ack_delayed_total", "ACKs sent when ack_delay ran out, before ack_every "
	  "packets had come." },
	{ "mroc_engine_tx_peer_kicked_total", "QPs waiting for room in their peer host's window "
	  "that were given a turn: room for a whole run of ack_every packets kept for each." },
	{ "mroc_engine_tx_peer_grant_left_total", "Of those turns, the ones that ended with room "
	  "kept and not used (the QP had less to send, or was paced): it went to the next QP." },
	{ "mroc_engine_repath_explore_back_total", "Paths moved to explore that went back to their "
	  "former port: the new one gave them no more." },
	{ "mroc_engine_repath_look_total", "Looks before a slow, ce, spread or explore move: packets "
	  "of the path sent by the port it would move to, answered at once." },
	{ "mroc_engine_repath_look_busy_total", "Of those looks, the ones that found a queue on that "
	  "route (or no answer): the path did not move." },
	{ "mroc_engine_repath_spread_back_total", "Paths moved to spread a QP under its link rate "
	  "that went back to their former port: the QP delivered no more." },
	{ "mroc_engine_rto_unsampled_total", "Of the RTOs, those on a path with no RTT sample of its "
	  "own yet (armed on the initial RTO or the host's estimate)." },
	{ "mroc_engine_tx_stranded_total", "QPs found with work to send and nothing that would "
	  "send it (no packet in flight, no timer, not queued): woken when their timer ran. "
	  "Always 0 but for a bug." },
	{ "mroc_engine_tx_peer_rescued_total", "QPs parked for room in their peer host's window "
	  "while nothing was in flight to it nor granted (no release would wake them): kicked when "
	  "their timer ran. Always 0 but for a bug." },
	{ "mroc_engine_peer_host_cut_total", "Peer windows cut because a round's ACKs all "
	  "waited in the hosts (the peer's part the ACK says, and the ACK's own in our ring) longer "
	  "than transport.peer_host_delay_us (Swift's endpoint delay; 0 with the option off)." },
	{ "mroc_engine_peer_host_undo_total", "Of those cuts, the ones undone because two rounds "
	  "later the hosts' waits had not fallen (a wait the window did not build: a worker "
	  "short of CPU); the next cut is then tried only after 1, 2, 4 .. 64 rounds." },
	{ "mroc_engine_tx_data_first_total", "Data packets of a small message posted alone sent "
	  "before the ACKs owed at that moment (at most a full packet's time ahead of them; only "
	  "with transport.split_unit)." },
	{ "mroc_engine_rto_peer_silent_total", "Of the RTOs, those with nothing heard from the peer host "
	  "(on any QP or path) since the timer was armed: a stalled or cut-off host, not a lost "
	  "path." },
	{ "mroc_engine_rto_silent_alone_total", "Of the RTOs, those taken before the initial RTO "
	  "on a path with no RTT sample of its own: its probe unanswered while its siblings "
	  "answered everything older (a route dead from the QP's start)." },
	{ "mroc_worker_aead_tx_sealed_total", "Packets sealed with AES-GCM (security aead)." },
	{ "mroc_worker_aead_rx_opened_total", "Sealed packets opened and verified." },
	{ "mroc_worker_aead_rx_bad_tag_total", "Sealed packets that failed to verify (altered, or "
	  "sent between other addresses than they were sealed for)." },
	{ "mroc_worker_aead_rx_bad_key_total", "Sealed packets with a key id not in the key file, or "
	  "sealed without their IP addresses (an older mrocd)." },
	{ "mroc_worker_aead_cookie_sent_total", "Cookie replies made for CONNECT_REQs over the key "
	  "derivation budget (a flood of forged REQs is on)." },
	{ "mroc_worker_aead_cookie_limited_total", "CONNECT_REQs over the derivation budget left "
	  "unanswered: cookie replies over theirs." },
	{ "mroc_worker_aead_cookie_ok_total", "CONNECT_REQs whose cookie checked (their source's own "
	  "derivation budget)." },
	{ "mroc_worker_aead_cookie_bad_total", "CONNECT_REQs whose cookie did not check (made up, "
	  "expired, from another address), and cookie replies that answered no REQ of ours." },
	{ "mroc_worker_aead_cookie_got_total", "Cookie replies taken: the next CONNECT_REQ to that "
	  "responder carries the cookie." },
	{ "mroc_backend_rx_pkts_total", "Packets the backend received." },
	{ "mroc_backend_rx_bytes_total", "Bytes the backend received." },
	{ "mroc_backend_tx_pkts_total", "Packets the backend sent." },
	{ "mroc_backend_tx_bytes_total", "Bytes the backend sent." },
	{ "mroc_backend_rx_bad_frame_total", "Frames that failed to parse or were not ours." },
	{ "mroc_backend_rx_bad_icrc_total", "Packets dropped as corrupted: their ICRC did not match." },
	{ "mroc_backend_rx_not_unicast_total", "UDP backend: packets to a broadcast or group address, dropped." },
	{ "mroc_backend_tx_no_route_total", "Packets dropped for an unresolved peer (resent)." },
	{ "mroc_backend_tx_ring_full_total", "Sends that found the TX ring full." },
	{ "mroc_backend_loopback_pkts_total", "AF_XDP: packets to this mrocd itself (a QP connected "
	  "to its own address), delivered to its receive path, never put on the wire." },
	{ "mroc_backend_loopback_handed_total", "Of those, packets handed to the worker that owns "
	  "their QP." },
	{ "mroc_backend_rx_src_ours_total", "AF_XDP: frames from the wire whose source is this "
	  "mrocd's own configured address (ours never leave it): reflections or forgeries, dropped." },
	{ "mroc_backend_loopback_drops_total", "Packets to this mrocd itself dropped for a full "
	  "queue or hand-off ring (the engine resends)." },
	{ "mroc_backend_tx_kick_errors_total", "AF_XDP TX kicks that failed (not EAGAIN)." },
	{ "mroc_backend_xsk_rx_dropped_total", "AF_XDP XDP_STATISTICS rx_dropped, summed." },
	{ "mroc_backend_xsk_rx_invalid_descs_total", "AF_XDP XDP_STATISTICS rx_invalid_descs." },
	{ "mroc_backend_xsk_tx_invalid_descs_total", "AF_XDP XDP_STATISTICS tx_invalid_descs." },
	{ "mroc_backend_xsk_rx_ring_full_total", "AF_XDP XDP_STATISTICS rx_ring_full." },
	{ "mroc_backend_xsk_rx_fill_ring_empty_total",
	  "AF_XDP XDP_STATISTICS rx_fill_ring_empty_descs." },
	{ "mroc_backend_xsk_tx_ring_empty_total", "AF_XDP XDP_STATISTICS tx_ring_empty_descs." },
};

static const char *help_of(const char *name)
{
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++)
		if (!strcmp(helps[i][0], name))
			return helps[i][1];
	return NULL;
}

/* mroc_<group>_<key>_total for each integer of a group, but the keys in skip. */
static void plain_counters(FILE *f, const char *group, const json_t *o, const char *const *skip,
			   const char *what)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v) {
		char name[NAME_MAX_], help[192];
		bool skipped = false;

		for (const char *const *s = skip; s && *s && !skipped; s++)
			skipped = !strcmp(*s, k);
		if (skipped || !json_is_integer(v))
			continue;
		if (fmt_prom_name(name, sizeof(name), group, k, "_total"))
			continue;
		snprintf(help, sizeof(help), "mrocd %s counter %s.", what, k);
		head(f, name, "counter", help_of(name) ?: help);
		sample_u64(f, name, NULL, jget_u64(o, k));
	}
}

/* One family with a label for every key of o that starts with prefix (prefix cut off). */
static void labelled(FILE *f, const char *name, const char *help, const char *label,
		     const json_t *o, const char *prefix)
{
	const char *k;
	json_t *v;
	bool any = false;

	json_object_foreach((json_t *)o, k, v) {
		const char *kv[3] = { label, k + strlen(prefix), NULL };
		char l[LABEL_MAX];

		if (strncmp(k, prefix, strlen(prefix)) || !json_is_integer(v))
			continue;
		if (!any)
			head(f, name, "counter", help);
		any = true;
		labels(l, sizeof(l), kv);
		sample_u64(f, name, l, jget_u64(o, k));
	}
}

static void engine(FILE *f, const json_t *e)
{
	static const char *const skip[] = { "rx_malformed_by_reason", NULL };

	plain_counters(f, "mroc_engine_", e, skip, "engine");
	labelled(f, "mroc_engine_rx_malformed_by_reason_total",
		 "Packets the engine dropped as malformed, by reason.", "reason",
		 json_object_get(e, "rx_malformed_by_reason"), "");
}

static void xdp(FILE *f, const json_t *x)
{
	static const char *const skip[] = { "rx_total", "redirected", NULL };
	json_t *rest = json_deep_copy(x);
	const char *k;
	json_t *v;
	void *tmp;

	if (!x)
		return;
	head(f, "mroc_xdp_rx_packets_total", "counter",
	     "Packets the XDP program saw, summed over CPUs.");
	sample_u64(f, "mroc_xdp_rx_packets_total", NULL, jget_u64(x, "rx_total"));
	head(f, "mroc_xdp_redirected_packets_total", "counter",
	     "Packets the XDP program redirected to an AF_XDP socket.");
	sample_u64(f, "mroc_xdp_redirected_packets_total", NULL, jget_u64(x, "redirected"));
	labelled(f, "mroc_xdp_passed_packets_total",
		 "Packets the XDP program passed to the kernel, by reason.", "reason", x, "pass_");
	labelled(f, "mroc_xdp_dropped_packets_total",
		 "Packets the XDP program dropped, by reason.", "reason", x, "drop_");
	/* anything a newer program counts */
	json_object_foreach_safe(rest, tmp, k, v)
		if (!strncmp(k, "pass_", 5) || !strncmp(k, "drop_", 5))
			json_object_del(rest, k);
	plain_counters(f, "mroc_xdp_", rest, skip, "XDP program");
	json_decref(rest);
}

static void worker(FILE *f, const json_t *w)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)w, k, v) {
		size_t n = strlen(k);
		char name[NAME_MAX_], base[64], help[192];

		if (!json_is_integer(v))
			continue;
		if (n > 3 && !strcmp(k + n - 3, "_ns")) {
			snprintf(base, sizeof(base), "%.*s", (int)(n - 3), k);
			if (fmt_prom_name(name, sizeof(name), "mroc_worker_", base, "_seconds_total"))
				continue;
			snprintf(help, sizeof(help), "Seconds the data-plane worker spent %s.",
				 !strcmp(base, "busy") ? "with work" : !strcmp(base, "idle") ?
				 "asleep or spinning idle" : base);
			head(f, name, "counter", help);
			sample_f(f, name, NULL, (double)jget_u64(w, k) / 1e9);
			continue;
		}
		if (fmt_prom_name(name, sizeof(name), "mroc_worker_", k, "_total"))
			continue;
		snprintf(help, sizeof(help), "mrocd worker counter %s.", k);
		head(f, name, "counter", help);
		sample_u64(f, name, NULL, jget_u64(w, k));
	}
}

static void clients(FILE *f, const json_t *c)
{
	static const char *const gauges[] = { "clients", "qps", "mrs", "qps_sending", NULL };

	if (!c)
		return;
	head(f, "mroc_clients", "gauge", "libmroc clients connected.");
	sample_u64(f, "mroc_clients", NULL, jget_u64(c, "clients"));
	head(f, "mroc_client_qps", "gauge", "QPs of libmroc clients.");
	sample_u64(f, "mroc_client_qps", NULL, jget_u64(c, "qps"));
	head(f, "mroc_client_mrs", "gauge", "Memory regions of libmroc clients.");
	sample_u64(f, "mroc_client_mrs", NULL, jget_u64(c, "mrs"));
	head(f, "mroc_client_qps_sending", "gauge",
	     "QPs of libmroc clients that have posted a send work request.");
	sample_u64(f, "mroc_client_qps_sending", NULL, jget_u64(c, "qps_sending"));
	plain_counters(f, "mroc_clients_", c, gauges, "clients");
}

/* ---- status, QPs, paths ------------------------------------------------------------ */

static void status(FILE *f, const json_t *st)
{
	const char *kv[] = {
		"version", jget_str(st, "daemon_version") ?: "",
		"backend", jget_str(st, "backend") ?: "",
		"xdp_mode", jget_str(st, "xdp_mode") ?: "",
		"zero_copy", json_is_true(json_object_get(st, "zero_copy")) ? "true" : "false",
		"fallback", json_is_true(json_object_get(st, "fallback")) ? "true" : "false",
		NULL,
	};
	char l[LABEL_MAX * 2];

	head(f, "mroc_up", "gauge", "1 when mrocd answered on its admin socket.");
	sample_u64(f, "mroc_up", NULL, 1);
	labels(l, sizeof(l), kv);
	head(f, "mroc_info", "gauge", "mrocd version and backend (always 1).");
	sample_u64(f, "mroc_info", l, 1);
	head(f, "mroc_uptime_seconds", "gauge", "Seconds since mrocd started.");
	sample_f(f, "mroc_uptime_seconds", NULL, (double)jget_u64(st, "uptime_ns") / 1e9);
	head(f, "mroc_qps", "gauge", "QPs in the engine (clients' and control links').");
	sample_u64(f, "mroc_qps", NULL, jget_u64(st, "qps"));
	head(f, "mroc_peers", "gauge", "Peer addresses mrocd knows.");
	sample_u64(f, "mroc_peers", NULL, jget_u64(st, "peers_known"));
	head(f, "mroc_links", "gauge", "Control links to other daemons.");
	sample_u64(f, "mroc_links", NULL, jget_u64(st, "links"));
	head(f, "mroc_links_up", "gauge", "Control links that are up.");
	sample_u64(f, "mroc_links_up", NULL, jget_u64(st, "links_up"));
}

struct metric {
	const char *name, *type, *help, *key;
	double scale;			/* 0: the integer as is */
};

static const struct metric qp_metrics[] = {
	{ "mroc_qp_tx_bytes_total", "counter", "Payload bytes the QP sent.", "tx_bytes", 0 },
	{ "mroc_qp_rx_bytes_total", "counter", "Payload bytes the QP received.", "rx_bytes", 0 },
	{ "mroc_qp_tx_messages_total", "counter", "Messages the QP sent.", "tx_msgs", 0 },
	{ "mroc_qp_rx_messages_total", "counter", "Messages the QP received.", "rx_msgs", 0 },
	{ "mroc_qp_errors_total", "counter", "Work completed in error on the QP.", "errors", 0 },
	{ "mroc_qp_window_bytes", "gauge", "QP window (QWND): its paths' windows summed.",
	  "qwnd_bytes", 0 },
	{ "mroc_qp_pacing_rate_bytes_per_second", "gauge", "Paced rate, 0 when unpaced.",
	  "pacing_bps", 1.0 / 8 },
	{ "mroc_qp_send_queue_outstanding", "gauge", "Send work requests not completed yet.",
	  "sq_outstanding", 0 },
	{ "mroc_qp_paths", "gauge", "Paths of the QP.", "npaths", 0 },
};

static const struct metric path_metrics[] = {
	{ "mroc_path_srtt_seconds", "gauge", "Smoothed round-trip time.", "srtt_ns", 1e-9 },
	{ "mroc_path_min_rtt_seconds", "gauge", "Minimum round-trip time.", "min_rtt_ns", 1e-9 },
	{ "mroc_path_rttvar_seconds", "gauge", "Round-trip time variation.", "rttvar_ns", 1e-9 },
	{ "mroc_path_rto_seconds", "gauge", "Retransmission timeout.", "rto_ns", 1e-9 },
	{ "mroc_path_window_bytes", "gauge", "Path window (PWND).", "pwnd_bytes", 0 },
	{ "mroc_path_inflight_bytes", "gauge", "Bytes sent and not acknowledged.",
	  "inflight_bytes", 0 },
	{ "mroc_path_delivery_rate_bytes_per_second", "gauge", "Delivered rate, smoothed.",
	  "rate_bps", 1.0 / 8 },
	{ "mroc_path_udp_source_port", "gauge", "UDP source port the path uses now.", "sport", 0 },
	{ "mroc_path_sent_packets_total", "counter", "Packets sent on the path.", "sent", 0 },
	{ "mroc_path_retransmitted_packets_total", "counter", "Packets retransmitted on the path.",
	  "retx", 0 },
	{ "mroc_path_lost_packets_total", "counter", "Packets lost on the path (SACK holes).",
	  "lost", 0 },
	{ "mroc_path_ce_marked_packets_total", "counter", "Packets that came back CE-marked.",
	  "ce", 0 },
	{ "mroc_path_acked_packets_total", "counter", "Packets acknowledged on the path.", "acked",
	  0 },
	{ "mroc_path_timeouts_total", "counter", "Retransmission timeouts on the path.",
	  "timeouts", 0 },
	{ "mroc_path_repaths_total", "counter", "Times the path moved to a new source port.",
	  "repaths", 0 },
};

static void value(FILE *f, const struct metric *m, const char *l, const json_t *o)
{
	if (m->scale)
		sample_f(f, m->name, l, (double)jget_u64(o, m->key) * m->scale);
	else
		sample_u64(f, m->name, l, jget_u64(o, m->key));
}

static void qps(FILE *f, const json_t *r)
{
	const json_t *arr = json_object_get(r, "qps"), *q, *p;
	size_t i, j;

	for (size_t m = 0; m < sizeof(qp_metrics) / sizeof(qp_metrics[0]) && json_array_size(arr);
	     m++) {
		head(f, qp_metrics[m].name, qp_metrics[m].type, qp_metrics[m].help);
		json_array_foreach(arr, i, q) {
			char qpn[16], l[LABEL_MAX * 2];
			const char *kv[] = { "qpn", qpn, "peer", jget_str(q, "peer") ?: "", NULL };

			snprintf(qpn, sizeof(qpn), "%llu", (unsigned long long)jget_u64(q, "qpn"));
			labels(l, sizeof(l), kv);
			value(f, &qp_metrics[m], l, q);
		}
	}
	for (size_t m = 0; m < sizeof(path_metrics) / sizeof(path_metrics[0]); m++) {
		bool any = false;

		json_array_foreach(arr, i, q) {
			json_array_foreach(json_object_get(q, "paths"), j, p) {
				char qpn[16], path[8], l[LABEL_MAX * 2];
				const char *kv[] = { "qpn", qpn, "peer", jget_str(q, "peer") ?: "",
						     "path", path, NULL };

				if (!any)
					head(f, path_metrics[m].name, path_metrics[m].type,
					     path_metrics[m].help);
				any = true;
				snprintf(qpn, sizeof(qpn), "%llu",
					 (unsigned long long)jget_u64(q, "qpn"));
				snprintf(path, sizeof(path), "%llu",
					 (unsigned long long)jget_u64(p, "path_id"));
				labels(l, sizeof(l), kv);
				value(f, &path_metrics[m], l, p);
			}
		}
	}
}

int counters_prometheus(struct cli *c)
{
	json_t *raw = json_pack("{s:b}", "raw", 1);
	json_t *st = cli_request(c, "status", NULL);
	json_t *cn = st ? cli_request(c, "counters", raw) : NULL;
	json_t *qp = cn ? cli_request(c, "qps", NULL) : NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc = 1;

	json_decref(raw);
	if (!qp)
		goto out;
	f = open_memstream(&buf, &len);
	if (!f)
		goto out;
	status(f, st);
	engine(f, json_object_get(cn, "engine"));
	xdp(f, json_object_get(cn, "xdp"));
	plain_counters(f, "mroc_backend_", json_object_get(cn, "backend"), NULL, "backend");
	worker(f, json_object_get(cn, "worker"));
	clients(f, json_object_get(cn, "clients"));
	qps(f, qp);
	if (fclose(f) || fwrite(buf, 1, len, stdout) != len || fflush(stdout))
		fprintf(stderr, CLI_NAME ": writing the output failed\n");
	else
		rc = 0;
out:
	free(buf);
	json_decref(st);
	json_decref(cn);
	json_decref(qp);
	return rc;
}
