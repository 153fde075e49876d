// SPDX-License-Identifier: MIT
/* Read-only views of the engine for operators: counters, QPs, paths. */
#include <errno.h>

#include "internal.h"

const char *engine_counter_name(enum engine_counter c)
{
	static const char *const names[EC__COUNT] = {
		[EC_RX_PKTS] = "rx_pkts",
		[EC_RX_MALFORMED] = "rx_malformed",
		[EC_RX_UNKNOWN_QP] = "rx_unknown_qp",
		[EC_RX_BAD_PEER] = "rx_bad_peer",
		[EC_RX_BAD_STATE] = "rx_bad_state",
		[EC_RX_DUP] = "rx_dup",
		[EC_RX_OUT_OF_WINDOW] = "rx_out_of_window",
		[EC_RX_ACCESS_ERR] = "rx_access_err",
		[EC_RX_BOUNDS_ERR] = "rx_bounds_err",
		[EC_RX_RNR] = "rx_rnr",
		[EC_RX_SEQ_ERR] = "rx_seq_err",
		[EC_RX_BYTES_PLACED] = "rx_bytes_placed",
		[EC_TX_PKTS] = "tx_pkts",
		[EC_TX_DATA] = "tx_data",
		[EC_TX_RETX] = "tx_retx",
		[EC_TX_DUP] = "tx_dup",
		[EC_RTT_HELD] = "rtt_held",
		[EC_FLIGHT_SETTLED] = "flight_settled",
		[EC_RX_SACK_UNSENT] = "rx_sack_unsent",
		[EC_REPATH_SLOW_BACK] = "repath_slow_back",
		[EC_TX_PEER_BLOCKED] = "tx_peer_blocked",
		[EC_TX_RUN_CUT] = "tx_run_cut",
		[EC_TX_PATH_BLOCKED] = "tx_path_blocked",
		[EC_TX_PACED] = "tx_paced",
		[EC_TX_BATCH_FULL] = "tx_batch_full",
		[EC_TX_ACK_DELAYED] = "tx_ack_delayed",
		[EC_TX_PEER_KICKED] = "tx_peer_kicked",
		[EC_TX_PEER_GRANT_LEFT] = "tx_peer_grant_left",
		[EC_REPATH_EXPLORE_BACK] = "repath_explore_back",
		[EC_REPATH_LOOK] = "repath_look",
		[EC_REPATH_LOOK_BUSY] = "repath_look_busy",
		[EC_REPATH_SPREAD_BACK] = "repath_spread_back",
		[EC_TX_ACKS] = "tx_acks",
		[EC_TX_CM] = "tx_cm",
		[EC_TX_KEEPALIVE] = "tx_keepalive",
		[EC_RTO] = "rto",
		[EC_REPATH] = "repath",
		[EC_LOST] = "lost",
		[EC_CE] = "ce",
		[EC_KA_RETRY] = "keepalive_retry",
		[EC_RTO_SPURIOUS] = "rto_spurious",
		[EC_RX_BAD_TAG] = "rx_bad_tag",
		[EC_CM_SEC_MISMATCH] = "cm_sec_mismatch",
		[EC_LOST_RACK] = "lost_rack",
		[EC_LOST_RACK_LATE] = "lost_rack_late",
		[EC_TX_SCOUT] = "tx_scout",
		[EC_SCOUT_MOVE] = "scout_move",
		[EC_REORDER] = "reorder",
		[EC_CM_TWIN] = "cm_twin",
		[EC_RX_BAD_ECHO] = "rx_bad_echo",
		[EC_CM_EARLY_RETRY] = "cm_early_retry",
		[EC_REPATH_TIMEOUT] = "repath_timeout",
		[EC_REPATH_LOSS] = "repath_loss",
		[EC_REPATH_CE] = "repath_ce",
		[EC_REPATH_SLOW] = "repath_slow",
		[EC_REPATH_KEEPALIVE] = "repath_keepalive",
		[EC_REPATH_SPREAD] = "repath_spread",
		[EC_REPATH_EXPLORE] = "repath_explore",
		[EC_REPATH_PORT] = "repath_port",
		[EC_RTO_UNDONE] = "rto_undone",
		[EC_RTO_UNLOST] = "rto_unlost",
		[EC_REPATH_BACK] = "repath_back",
		[EC_REPATH_BACK_HELD] = "repath_back_held",
		[EC_CM_HALF_OPEN] = "cm_half_open",
		[EC_CM_HALF_DROPPED] = "cm_half_dropped",
		[EC_CM_BUSY] = "cm_busy",
		[EC_CM_BUSY_RETRY] = "cm_busy_retry",
		[EC_RX_STAMPED] = "rx_stamped",
		[EC_RX_WAIT_NS] = "rx_wait_ns",
		[EC_ACK_HOST_NS] = "ack_host_ns",
		[EC_RX_STALE_KA] = "rx_stale_keepalive",
		[EC_RTO_UNSAMPLED] = "rto_unsampled",
		[EC_RTO_PEER_SILENT] = "rto_peer_silent",
		[EC_RTO_SILENT_ALONE] = "rto_silent_alone",
		[EC_TX_STRANDED] = "tx_stranded",
		[EC_TX_PEER_RESCUED] = "tx_peer_rescued",
		[EC_PEER_HOST_CUT] = "peer_host_cut",
		[EC_PEER_HOST_UNDO] = "peer_host_undo",
		[EC_TX_DATA_FIRST] = "tx_data_first",
		[EC_CM_REQ_AGAIN] = "cm_req_again",
		[EC_CM_COPY] = "cm_copy",
		[EC_RX_ACK_MERGED] = "rx_ack_merged",
		[EC_RX_ANSWER_TIMEOUT] = "rx_answer_timeout",
		[EC_RX_MSG_MISMATCH] = "rx_msg_mismatch",
	};

	return (unsigned)c < EC__COUNT ? names[c] : "unknown";
}

void engine_get_stats(const struct engine *eng, struct engine_stats *out)
{
	*out = eng->st;
}

uint64_t engine_rescued(const struct engine *eng)
{
	return eng->st.c[EC_TX_STRANDED] + eng->st.c[EC_TX_PEER_RESCUED];
}

/* What the QP holds: the struct and every ring at its current size. */
static uint64_t qp_mem(const struct qp *qp)
{
	uint64_t b = sizeof(*qp) + (uint64_t)qp->npaths * sizeof(*qp->paths) +
		     (uint64_t)qp->nrxp * sizeof(*qp->rxp);

	b += (uint64_t)(qp->txm_mask + 1) * sizeof(*qp->txm);
	b += (uint64_t)(qp->dsn_mask + 1) * sizeof(*qp->dsn);
	b += (uint64_t)(qp->rtx_mask + 1) * sizeof(*qp->rtxq);
	b += (uint64_t)(qp->map_mask + 1) * sizeof(*qp->rcv_map);
	b += (uint64_t)(qp->rxm_mask + 1) * sizeof(*qp->rxm);
	b += (uint64_t)(qp->rq_mask + 1) * sizeof(*qp->rq);
	b += (uint64_t)(qp->cq_mask + 1) * sizeof(*qp->cq);
	for (unsigned i = 0; i < qp->npaths; i++)
		b += (uint64_t)(qp->paths[i].sb_mask + 1) * sizeof(*qp->paths[i].sb);
	return b;
}

int engine_qp_info(const struct engine *eng, uint32_t qpn, struct engine_qp_info *o)
{
	struct qp *qp = qp_lookup((struct engine *)eng, qpn);
	uint64_t qwnd = 0;

	if (!qp)
		return -ENOENT;
	if (qp->state == ENGINE_QPS_CONNECTED || qp->state == ENGINE_QPS_CLOSING)
		for (unsigned i = 0; i < qp->npaths; i++)
			qwnd += qp->paths[i].pwnd;
	*o = (struct engine_qp_info){
		.qpn = qp->qpn,
		.peer = qp->peer,
		.peer_qpn = qp->peer_qpn,
		.state = qp->state,
		.mode = qp->mode,
		.npaths = qp->npaths,
		.qwnd_bytes = qwnd,
		.pacing_bps = (uint64_t)qp->hint_mbps * 1000000ULL,
		.rate_hint_mbps = qp->hint_mbps,
		.tx_bytes = qp->tx_bytes,
		.rx_bytes = qp->rx_bytes,
		.tx_msgs = qp->tx_msgs,
		.rx_msgs = qp->rx_msgs,
		.sq_outstanding = qp->sq_used,
		.rq_posted = qp->rq_count,
		.snd_una = qp->snd_una,
		.snd_nxt = qp->snd_nxt,
		.rcv_cum = qp->rcv_cum,
		.msgs_outstanding = qp->msn_tail - qp->msn_head,
		.errors = qp->errors,
		.mem_bytes = qp_mem(qp),
		.inflight_pkts = qp->ph_pkts,
		.peer_inflight_pkts = peer_inflight(qp),
		.peer_window_pkts = peer_window(eng, qp),
		.peer_blocked = qp->ph_blocked,
		.err_status = qp->err_status,
		.err_why = qp->err_why,
	};
	return 0;
}

const char *engine_qp_error_text(uint8_t err_status, uint8_t err_why)
{
	static const char *const conn[] = {
		[MROC_CM_NO_LISTENER] = "connect refused: nobody listens on that service",
		[MROC_CM_BAD_PARAM] = "connect refused: mode, MTU or paths not acceptable",
		[MROC_CM_NO_RESOURCES] = "connect refused: no resources for the QP",
		[MROC_CM_LOCAL_CLOSE] = "connect failed: the peer's QP closed",
		[MROC_CM_ERROR] = "connect refused",
		[MROC_CM_SECURITY] = "connect refused: the security modes differ",
		[MROC_CM_BUSY] = "connect refused: the listener stayed busy",
	};
	static const char *const status[] = {
		[ENGINE_WC_LOC_LEN_ERR] = "a message longer than the receive posted for it",
		[ENGINE_WC_LOC_PROT_ERR] = "a local key, bounds or access refused",
		[ENGINE_WC_REM_ACCESS_ERR] = "the peer refused a key, bounds or access",
		[ENGINE_WC_REM_INV_REQ_ERR] = "the peer refused a request as invalid",
		[ENGINE_WC_RETRY_EXC_ERR] = "retries exceeded: a packet lost too often, or the peer silent",
		[ENGINE_WC_RNR_RETRY_EXC_ERR] = "the peer posted no receive in time",
		[ENGINE_WC_FLUSH_ERR] = "flushed",
	};

	if (err_status == ENGINE_WC_CONNECT_ERR) {
		if (err_why == ENGINE_CONN_NO_ANSWER)
			return "connect failed: no answer";
		return err_why < sizeof(conn) / sizeof(conn[0]) && conn[err_why] ? conn[err_why] :
		       "connect failed";
	}
	return err_status < sizeof(status) / sizeof(status[0]) && status[err_status] ?
	       status[err_status] : "error";
}

const char *engine_repath_name(enum engine_repath_why why)
{
	static const char *const names[ENGINE_REPATH__COUNT] = {
		[ENGINE_REPATH_NONE] = "-",
		[ENGINE_REPATH_TIMEOUT] = "timeout",
		[ENGINE_REPATH_LOSS] = "loss",
		[ENGINE_REPATH_CE] = "ce",
		[ENGINE_REPATH_SLOW] = "slow",
		[ENGINE_REPATH_KEEPALIVE] = "keepalive",
		[ENGINE_REPATH_SPREAD] = "spread",
		[ENGINE_REPATH_EXPLORE] = "explore",
		[ENGINE_REPATH_PORT] = "port",
	};

	return (unsigned)why < ENGINE_REPATH__COUNT ? names[why] : "?";
}

int engine_path_info(const struct engine *eng, uint32_t qpn, unsigned path,
		     struct engine_path_info *o)
{
	struct qp *qp = qp_lookup((struct engine *)eng, qpn);
	const struct path *p;

	if (!qp)
		return -ENOENT;
	if (path >= qp->npaths)
		return -ERANGE;
	p = &qp->paths[path];
	*o = (struct engine_path_info){
		.path_id = p->id,
		.sport = p->sport,
		.prev_sport = p->prev_sport,
		.repath_why = p->repath_why,
		.repath_at_ns = p->last_repath,
		.srtt_ns = p->srtt,
		.rttvar_ns = p->rttvar,
		.min_rtt_ns = p->min_rtt,
		.rto_ns = p->rto,
		.rto_timer_ns = path_rto(eng, p),
		.pwnd_bytes = p->pwnd,
		.inflight_bytes = p->inflight,
		.sent = p->st_sent,
		.retx = p->st_retx,
		.lost = p->st_lost,
		.ce = p->st_ce,
		.acked = p->st_acked,
		.timeouts = p->st_timeouts,
		.repaths = p->st_repaths,
		.rate_bps = p->rate_ewma,
		.timed_out = p->state == PATH_TIMEDOUT,
		.backoff = p->backoff,
		.dctcp_alpha_ppm = (uint32_t)((uint64_t)p->alpha * 1000000 >> 20),
		.delay_cuts = p->st_delay_cuts,
		.delay_rebases = p->st_delay_rebases,
		.loss_cuts = p->st_loss_cuts,
		.loss_trims = p->st_loss_trims,
	};
	for (unsigned i = 0; i < ENGINE_REPATH__COUNT; i++)
		o->repaths_why[i] = p->st_repath_why[i];
	return 0;
}

int engine_qp_list(const struct engine *eng, uint32_t *qpns, int max)
{
	int n = 0;

	/* An operator's view, not the data path: a walk of the table is fine. */
	for (uint32_t i = 0; i < eng->cfg.max_qps; i++) {
		if (!eng->qps[i])
			continue;
		if (n < max)
			qpns[n] = eng->qps[i]->qpn;
		n++;
	}
	return n;
}
