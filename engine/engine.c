// SPDX-License-Identifier: MIT
/*
 * The engine's front door: configuration, the QP table, packet dispatch,
 * the transmit scheduler (round-robin over QPs), timers, completions and
 * statistics.  Protocol logic lives in qp_*.c, path.c and cm.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"


void engine_config_default(struct engine_config *c)
{
	*c = (struct engine_config){
		.max_qps = 1024,
		.max_mrs = 1024,
		.mtu = 1024,
		.link_rate_bps = 0,
		.ack_every = 4,
		.ack_delay_ns = 20 * NSEC_PER_USEC,
		.rto_init_ns = 10 * NSEC_PER_MSEC,
		.rto_min_ns = 2 * NSEC_PER_MSEC,
		.rto_max_ns = 1 * NSEC_PER_SEC,
		.dupthresh = 3,
		.init_pwnd_pkts = 16,
		.max_pwnd_pkts = MROC_SACK_BITS,
		.loss_md_pkts = 4,
		.delay_target_ns = 50 * NSEC_PER_USEC,
		.hint_interval_ns = 200 * NSEC_PER_USEC,
		.max_retx = 32,
		.rnr_retry = 7,
		.rnr_delay_ns = 1 * NSEC_PER_MSEC,
		.dead_peer_ns = 3 * NSEC_PER_SEC,
		.keepalive_ns = 1 * NSEC_PER_SEC,
		.cm_retries = 8,
		.rate_hints = true,
		.repath = true,
		.tail_hedge = true,
		.sport_min = 49152,
		.sport_max = 65535,
		.seed = 1,
	};
}

int engine_config_check(const struct engine_config *c, const char **why)
{
#define BAD(msg) do { if (why) *why = msg; return -EINVAL; } while (0)
	if (!c->max_qps || c->max_qps > 65534)
		BAD("max_qps must be 1..65534");
	if (!c->max_mrs || c->max_mrs > 4096)
		BAD("max_mrs must be 1..4096");
	if (c->mtu < 64 || c->mtu > 8192)
		BAD("mtu must be 64..8192");
	if (!c->ack_every || c->ack_every > 64)
		BAD("ack_every must be 1..64");
	if (!c->rto_min_ns || c->rto_min_ns > c->rto_init_ns || c->rto_init_ns > c->rto_max_ns)
		BAD("need 0 < rto_min <= rto_init <= rto_max");
	/*
	 * Timers are sums and doublings of it in 64-bit ns (path_rto's backoff,
	 * now + RTO): far from overflow at this, which is an IB local ACK
	 * timeout's largest (4.096 us x 2^31, the simulator's PFC transports).
	 */
	if (c->rto_max_ns > ENGINE_RTO_MAX_NS)
		BAD("rto_max must be at most 2^43 ns (2.4 hours)");
	if (!c->dupthresh || c->dupthresh > 64)
		BAD("dupthresh must be 1..64");
	if (!c->max_pwnd_pkts || c->max_pwnd_pkts > MROC_SACK_BITS)
		BAD("max_pwnd_pkts must be 1..256");
	if (!c->init_pwnd_pkts || c->init_pwnd_pkts > c->max_pwnd_pkts)
		BAD("init_pwnd_pkts must be 1..max_pwnd_pkts");
	if (!c->loss_md_pkts)
		BAD("loss_md_pkts must be >= 1");
	if (!c->max_retx || c->max_retx > 255)
		BAD("max_retx must be 1..255");
	if (c->rnr_retry > 7)
		BAD("rnr_retry must be 0..7 (7 = forever)");
	if (!c->cm_retries || !c->dead_peer_ns || !c->hint_interval_ns)
		BAD("cm_retries, dead_peer_ns and hint_interval_ns must be > 0");
	if (c->keepalive_ns && c->keepalive_ns >= c->dead_peer_ns)
		BAD("keepalive_ns must be below dead_peer_ns");
	if (c->split_unit % MROC_SPLIT_ALIGN || c->split_unit > MROC_SPLIT_MAX)
		BAD("split_unit must be a multiple of 16 up to 4080");
	if (c->sport_min < 1024 || c->sport_min > c->sport_max)
		BAD("need 1024 <= sport_min <= sport_max");
	if (c->home_mod > 64 || (c->home_mod && !c->home_mask))
		BAD("home_mod must be 0..64, with a class in home_mask");
	/* A CONNECT_REQ with its key and extension fits the buffers (mtu + data header). */
	if (c->cm_ext_len > MROC_CM_EXT_MAX ||
	    MROC_HDR_LEN + MROC_CM_HDR_LEN + MROC_CM_KEY_LEN + 2u + c->cm_ext_len >
	    c->mtu + MROC_DATA_OVERHEAD)
		BAD("cm_ext_len must be at most 512 and fit a packet of mtu");
	return 0;
#undef BAD
}

struct engine *engine_create(const struct engine_config *cfg)
{
	struct engine *eng;

	if (engine_config_check(cfg, NULL))
		return NULL;
	eng = calloc(1, sizeof(*eng));
	if (!eng)
		return NULL;
	eng->cfg = *cfg;
	eng->cc = &cc_metaroce;
	eng->dsn_window = MROC_DSN_WINDOW;
	prng_seed(&eng->rng, cfg->seed);
	sec_init(eng);
	eng->seg_bytes = MROC_DATA_OVERHEAD + cfg->mtu + eng->sec_tag_len + ENGINE_L2L4_OVERHEAD;
	if (qp_table_init(eng) || mr_table_init(eng) || timer_init(eng) || cm_hash_init(eng) ||
	    peer_init(eng)) {
		engine_destroy(eng);
		return NULL;
	}
	return eng;
}

void engine_destroy(struct engine *eng)
{
	if (!eng)
		return;
	if (eng->qps)
		for (uint32_t i = 0; i < eng->cfg.max_qps; i++)
			qp_free(eng->qps[i]);
	qp_table_free(eng);
	mr_table_free(eng);
	peer_free(eng);
	cm_hash_free(eng);
	free(eng);
}

int engine_qp_create(struct engine *eng, const struct engine_qp_attr *attr, uint32_t *out)
{
	struct qp *qp;
	uint32_t qpn;

	if (!mode_ops_of(attr->mode) || !attr->npaths || attr->npaths > MROC_MAX_PATHS ||
	    !attr->sq_depth || !attr->rq_depth ||
	    attr->sq_depth + MROC_MAX_RD > MROC_MSG_WINDOW || attr->rq_depth > 65536)
		return -EINVAL;
	if (!eng->nfree)
		return -ENOSPC;
	qp = qp_alloc(eng, attr);
	if (!qp)
		return -ENOMEM;
	do
		qpn = engine_qpn_fit(&eng->cfg, sec_rand32(eng));
	while (!qpn || qp_lookup(eng, qpn));
	qp_table_add(eng, qp, qpn);
	list_add_tail(&eng->undrawn, &qp->undrawn_node);	/* path_first_ports */
	*out = qpn;
	return 0;
}

int engine_qp_destroy(struct engine *eng, uint32_t qpn)
{
	struct qp *qp = qp_lookup(eng, qpn);

	if (!qp)
		return -ENOENT;
	peer_detach(eng, qp);
	if (eng->lone == qp)
		eng->lone = NULL;
	list_del(&qp->tx_node);
	list_del(&qp->undrawn_node);
	list_del(&qp->ctl_node);
	list_del(&qp->cq_node);
	timer_cancel(eng, qp);
	cm_unlink(eng, qp);
	qp_table_remove(eng, qp);
	/* Its ACKs held in a receive batch go with it. */
	for (uint32_t i = 0; i < eng->nheld; )
		if (eng->held[i].qp == qp)
			eng->held[i] = eng->held[--eng->nheld];
		else
			i++;
	qp_free(qp);
	return 0;
}

int engine_post_send(struct engine *eng, uint32_t qpn, const struct engine_wr *wr, uint64_t now)
{
	struct qp *qp = qp_lookup(eng, qpn);
	int err;

	if (!qp)
		return -ENOENT;
	err = qp_post_send(eng, qp, wr, now);
	if (err)
		return err;
	/* Only a QP whose peer takes split messages posts one alone (qp_tx.c sent_alone). */
	if (qp->peer_split && qp_tx_lone_left(eng, qp, qp->msn_tail - 1)) {
		eng->lone = qp;
		eng->lone_msn = qp->msn_tail - 1;
	}
	qp_update_deadline(eng, qp);
	return 0;
}

int engine_post_recv(struct engine *eng, uint32_t qpn, const struct engine_recv_wr *wr)
{
	struct qp *qp = qp_lookup(eng, qpn);

	if (!qp)
		return -ENOENT;
	return qp_post_recv(eng, qp, wr);
}

/* Only QPs with completions are visited, oldest first; each QP's in order. */
int engine_poll_cq(struct engine *eng, struct engine_cqe *out, int max)
{
	int n = 0;

	while (n < max && !list_empty(&eng->cq_ready)) {
		struct qp *qp = list_first(&eng->cq_ready, struct qp, cq_node);

		while (n < max && qp->cq_head != qp->cq_tail)
			out[n++] = qp->cq[qp->cq_head++ & qp->cq_mask];
		if (qp->cq_head == qp->cq_tail)
			list_del(&qp->cq_node);
	}
	return n;
}

bool engine_rx_repeat(const struct engine *eng)
{
	return eng->rx_repeat;
}

/*
 * Whether ACK n of a path says all that the path's held ACK h says, so h
 * need not be applied (engine_rx_begin): acknowledges every PSN and DSN h
 * does (the receiver keeps a SACK bit until its cum passes it), has seen
 * as many packets (rcv_pkts, ce_pkts: cumulative) and the same NAK (each
 * ACK repeats the QP's newest; on_nak acts on a new nak_seq).  Bytes
 * nobody checked are fine here: a forged h is dropped either way, and n
 * passed every check.
 */
static bool ack_covers(const struct mroc_ack_hdr *n, const struct mroc_ack_hdr *h)
{
	return !seq_lt(n->cum_psn, h->cum_psn) && !seq_lt(n->cum_dsn, h->cum_dsn) &&
	       !seq_lt(n->rcv_pkts, h->rcv_pkts) && n->nak_seq == h->nak_seq;
}

static void ack_apply(struct engine *eng, struct held_ack *h, uint64_t now)
{
	qp_rx_ack(eng, h->qp, &h->pkt, now, h->at);
	qp_wake(eng, h->qp);
	qp_update_deadline(eng, h->qp);
}

/*
 * In a batch: hold an ACK that passed qp_rx_ack's own checks, in place of
 * the path's held one if it covers it, else after applying that one (the
 * order they came).  Returns false if it must be applied now (no room).
 */
static bool ack_hold(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt, uint64_t now,
		     uint64_t at)
{
	const struct mroc_ack_hdr *a = &pkt->ack;
	const struct path *p;
	struct held_ack *h = NULL;
	uint32_t rcv;

	if (pkt->hdr.path_id >= qp->npaths ||
	    seq_lt(qp->paths[pkt->hdr.path_id].psn_hw, a->cum_psn) ||
	    seq_lt(qp->snd_nxt, a->cum_dsn))
		return false;	/* out of window: qp_rx_ack counts it */
	p = &qp->paths[pkt->hdr.path_id];
	for (uint32_t i = 0; i < eng->nheld; i++)
		if (eng->held[i].qp == qp && eng->held[i].pkt.hdr.path_id == pkt->hdr.path_id) {
			h = &eng->held[i];
			break;
		}
	/* News as qp_rx_ack counts it: packets received or a NAK since what was taken or held. */
	rcv = h ? h->pkt.ack.rcv_pkts : p->last_rcv_pkts;
	eng->rx_repeat = !((!h && !p->ack_seen) || seq_lt(rcv, a->rcv_pkts) ||
			   a->nak_seq != (h ? h->pkt.ack.nak_seq : qp->nak_seen));
	if (h && ack_covers(a, &h->pkt.ack)) {
		eng->st.c[EC_RX_ACK_MERGED]++;
	} else if (h) {
		ack_apply(eng, h, now);
	} else if (eng->nheld < ENGINE_HELD_ACKS) {
		h = &eng->held[eng->nheld++];
	} else {
		return false;
	}
	*h = (struct held_ack){ .qp = qp, .at = at, .pkt = *pkt };
	return true;
}

void engine_rx_begin(struct engine *eng)
{
	eng->rx_batch = eng->cfg.merge_acks;
}

void engine_rx_end(struct engine *eng, uint64_t now)
{
	for (uint32_t i = 0; i < eng->nheld; i++)
		ack_apply(eng, &eng->held[i], now);
	eng->nheld = 0;
	eng->rx_batch = false;
}

int engine_rx(struct engine *eng, uint64_t now, const uint8_t *buf, size_t len,
	      const struct engine_rx_meta *meta)
{
	struct wire_pkt pkt;
	enum wire_err why;
	struct qp *qp;
	int err;

	eng->st.c[EC_RX_PKTS]++;
	eng->rx_repeat = false;
	if (meta->arrival) {
		eng->st.c[EC_RX_STAMPED]++;
		eng->st.c[EC_RX_WAIT_NS] += rx_taken(eng, meta, now) - rx_arrival(eng, meta, now);
	}
	err = sec_rx_check(eng, buf, &len, meta);
	if (err)
		return err;
	err = wire_parse_flags(buf, len, eng->sec_tag_len ? MROC_F_TAG : 0, &pkt, &why);
	if (err) {
		eng->st.c[EC_RX_MALFORMED]++;
		eng->st.rx_malformed[why]++;
		return err;
	}
	if (mroc_op_is_cm(pkt.hdr.opcode)) {
		err = cm_rx(eng, &pkt, meta, now);
		qp = qp_lookup(eng, pkt.hdr.dst_qpn);
		if (qp)
			qp_update_deadline(eng, qp);
		return err;
	}
	qp = qp_lookup(eng, pkt.hdr.dst_qpn);
	if (!qp) {
		eng->st.c[EC_RX_UNKNOWN_QP]++;
		return -ENOENT;
	}
	/* A listener is bound by the packet that proves a REQ it answered (cm_half.c). */
	if (qp->state == ENGINE_QPS_LISTEN)
		cm_bind_proven(eng, qp, &pkt, meta, now);
	else if (eng->half_tagged)
		goto lost;	/* "token": under the key of a REP of ours, not the QP's */
	/* Our RTU's answer, or anything else of the QP that bound us: connected. */
	if (qp->state == ENGINE_QPS_CONNECTING && qp->cm_pending == CM_SEND_RTU &&
	    qp->peer_qpn == pkt.hdr.src_qpn && cm_peer_ok(eng, qp, meta))
		cm_rtu_answered(eng, qp, &pkt, meta, now);
	if (qp->state == ENGINE_QPS_CONNECTING && qp->peer == meta->peer) {
		cm_peer_early(eng, qp, now);	/* our REQ was answered, the answer lost */
		qp_update_deadline(eng, qp);
	}
	if (qp->peer_qpn != pkt.hdr.src_qpn || !cm_peer_ok(eng, qp, meta))
		goto lost;
	if (qp->state == ENGINE_QPS_LISTEN || qp->state == ENGINE_QPS_CONNECTING ||
	    qp->state == ENGINE_QPS_IDLE) {
		eng->st.c[EC_RX_BAD_STATE]++;
		return -EPERM;
	}
	/*
	 * The dead-peer clock moves only for a packet the peer sent since the
	 * last one that moved it (#24 item 6: replayed packets, sealed ones
	 * included, keep no QP alive): a keepalive above the last number, a
	 * data packet new on its path (qp_rx_data), an ACK with news
	 * (qp_rx_ack).
	 */
	if (pkt.hdr.opcode == MROC_OP_KEEPALIVE) {
		if (!qp_ka_fresh(eng, qp, &pkt))
			return -ESTALE;
		peer_heard(qp, now);
		if (pkt.hdr.flags & MROC_F_ACK_REQ) {
			qp->ka_reply = true;
			qp->ka_reply_path = pkt.hdr.path_id;
			qp->ka_reply_sport = meta->sport;
			qp_wake_ctl(eng, qp);
		}
		err = 0;
	} else if (pkt.hdr.opcode == MROC_OP_ACK) {
		if (eng->rx_batch && ack_hold(eng, qp, &pkt, now, rx_arrival(eng, meta, now)))
			return 0;
		err = qp_rx_ack(eng, qp, &pkt, now, rx_arrival(eng, meta, now));
	} else {
		err = qp_rx_data(eng, qp, &pkt, meta, now);
		qp_wake_ctl(eng, qp);	/* an ACK may be owed now */
	}
	qp_wake(eng, qp);
	qp_update_deadline(eng, qp);
	return err;
lost:
	/* The proof of a requester whose listener went to another: told again (cm_half.c). */
	if (!cm_half_busy(eng, qp->qpn, &pkt, meta, now))
		eng->st.c[EC_RX_BAD_PEER]++;
	return -EPERM;
}

void engine_port_up(struct engine *eng, unsigned port, uint64_t now)
{
	if (eng->cfg.sport_classes < 2 || port >= eng->cfg.sport_classes)
		return;
	for (uint32_t i = 0; i < eng->cfg.max_qps; i++) {
		struct qp *qp = eng->qps[i];

		if (qp && qp->state == ENGINE_QPS_CONNECTED)
			path_port_up(eng, qp, port, now);
	}
}

/*
 * A decaying maximum: a lag counts at once, and fades by 1/8 a batch and by
 * half each rto_min without one.  By batches alone, a 2 ms lag before 3 s
 * of nothing sent still allowed the first batches after it 1.75 ms of
 * queue (test_engine_idle test_tx_lag_after_idle): a host that was busy is
 * not busy after an idle gap.
 */
void engine_tx_done(struct engine *eng, uint64_t stamped, uint64_t sent)
{
	uint64_t lag = sent > stamped ? sent - stamped : 0;
	uint64_t idle = stamped > eng->tx_lag_at ? (stamped - eng->tx_lag_at) / eng->cfg.rto_min_ns : 0;

	eng->tx_lag = idle < 64 ? eng->tx_lag >> idle : 0;
	eng->tx_lag -= eng->tx_lag >> 3;
	if (lag > eng->tx_lag)
		eng->tx_lag = min_u64(lag, eng->cfg.rto_max_ns);
	eng->tx_lag_at = sent;
}

/* qp_tx_ctl's work once something may be owed. */
static int qp_tx_ctl_owed(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b)
{
	if (cm_tx(eng, qp, now, b))
		return 1;
	if (qp->state == ENGINE_QPS_LISTEN || qp->state == ENGINE_QPS_IDLE ||
	    qp->state == ENGINE_QPS_CONNECTING)
		return 0;
	return qp_tx_ack(eng, qp, now, b) || qp_tx_keepalive(eng, qp, now, b);
}

/*
 * One control packet (CM, ACK, keepalive) from this QP.  Returns 1 or 0.
 * Asked before every data packet, and almost always nothing is owed: that
 * is decided inline, without a call (~80 instructions a data packet on a
 * sender, issue #22).
 */
static inline int qp_tx_ctl(struct engine *eng, struct qp *qp, uint64_t now,
			    struct engine_txbuf *b)
{
	if (!cm_tx_due(qp, now) && !qp_ack_maybe_due(qp, now) && !qp_ka_owed(qp))
		return 0;
	return qp_tx_ctl_owed(eng, qp, now, b);
}

/* One packet from this QP: control first, then data. */
static int qp_tx_one(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b)
{
	if (qp_tx_ctl(eng, qp, now, b))
		return 1;
	if (qp->state != ENGINE_QPS_CONNECTED)
		return 0;
	return qp_tx_data(eng, qp, now, b);
}

/*
 * Tags are added in batches (sec_tx_seal_all: several SipHashes at once),
 * keys[i - *sealed] the key of bufs[i]: those from *sealed to count now.
 */
static void seal_pending(struct engine *eng, const uint8_t **keys, struct engine_txbuf *bufs,
			 int *sealed, int count)
{
	if (count > *sealed && eng->sec_tag_len)
		sec_tx_seal_all(eng, keys, bufs + *sealed, count - *sealed);
	*sealed = count;
}

/* The key of the packet just built into bufs[count]; seals a full batch. */
static void seal_later(struct engine *eng, const uint8_t *key, const uint8_t **keys,
		       struct engine_txbuf *bufs, int *sealed, int count)
{
	keys[count - *sealed] = key;
	if (count + 1 - *sealed == SEC_SEAL_MAX)
		seal_pending(eng, keys, bufs, sealed, count + 1);
}

/*
 * bufs[count], ready for a builder: room for the tag kept back (the
 * builders see a buffer that much shorter), the flags cleared.  Each
 * buffer once, as the batch reaches it (*ready: how many are): a driver
 * offers a whole ring's worth (64) where a receiver sends an ACK or two,
 * and going over all of them before and after cost ~100 instructions a
 * data packet (pkt-cost, issue #22).
 */
static inline struct engine_txbuf *tx_slot(const struct engine *eng, struct engine_txbuf *bufs,
					   int count, int *ready)
{
	struct engine_txbuf *b = &bufs[count];

	if (count == *ready) {
		b->cap -= eng->sec_tag_len;
		b->plain = false;
		b->echo = false;
		(*ready)++;
	}
	return b;
}

/*
 * Whether the lone message (eng->lone) goes before the control packets owed
 * now: all it has left, times the ports (qp_tx_lone_left), fits with what
 * went before them already in one full data packet.  A small collective's
 * step is such a message, posted when the last part of the step before
 * came in, whose ACK is owed at that very moment; sent first, the ACK's
 * 11.5 ns at 100 Gbit/s (the NIC serialises every packet) were on each
 * step's path, and the peer waits for nothing in the ACK but its
 * completion.  The ACK then waits no longer, on the NIC and its port
 * together, than behind a full packet that had just begun when it was
 * owed, as it may anyway: what the peer's RTT samples allow for (qp_ack.c
 * note_held's mtu packet, the RTO's slack); a window or a loss repaired a
 * packet's time later is no change.  A larger message waits for the ACKs:
 * in the 32-rank recursive doubling, 4 KiB in 8 parts of 512 B, 2 a port,
 * sent first, the ACK to the last partner left 0.42 us late (the NIC) and
 * met the parts again on its port (0.04-0.16 us more); with the part's own
 * wait behind its sibling on the port, its peer's RTT sample passed the
 * held-up test, and the peer copied every message from then on
 * (1,283 held samples, 125,616 copies in 100 iterations): 22.00 -> 22.21
 * us (issue #23, s23-ring23).  The allowance starts again once no control
 * packet is owed.  Only for a message posted alone, i.e. with split_unit.
 */
static bool lone_first(struct engine *eng)
{
	uint32_t left;

	if (!eng->lone || list_empty(&eng->ctl_ready))
		return false;
	left = qp_tx_lone_left(eng, eng->lone, eng->lone_msn);
	if (!left) {
		eng->lone = NULL;	/* sent, or no longer alone */
		return false;
	}
	return eng->ctl_ahead + left <= qp_tx_full_pkt(eng);
}

/*
 * Control first (ACKs must not queue behind thousands of QPs' data: their
 * delay would count as RTT, and as loss), but for a small message posted
 * alone (lone_first), then data by deficit round-robin:
 * each turn a QP earns one full packet's bytes, so QPs share the link by
 * bytes whatever their packet sizes, and only QPs on the list are visited.
 */
int engine_tx(struct engine *eng, uint64_t now, struct engine_txbuf *bufs, int n)
{
	const uint8_t *keys[SEC_SEAL_MAX];
	int count = 0, sealed = 0, ready = 0, ctl;

	while (count < n && cm_tx_ctl(eng, now, tx_slot(eng, bufs, count, &ready)))
		count++;
	while (count < n && cm_half_tx(eng, now, tx_slot(eng, bufs, count, &ready)))
		count++;
	sealed = count;		/* cm_tx_ctl and cm_half_tx seal their own */
	while (count < n && lone_first(eng)) {
		struct qp *qp = eng->lone;
		const uint8_t *key = sec_qp_key(eng, qp);

		if (!qp_tx_data(eng, qp, now, tx_slot(eng, bufs, count, &ready)))
			break;	/* window or pacing: its turn in the data loop */
		seal_later(eng, key, keys, bufs, &sealed, count);
		eng->ctl_ahead += qp_tx_ahead_cost(eng, bufs[count].len);
		qp->deficit -= (int32_t)(bufs[count].len + (key ? MROC_TAG_LEN : 0));
		eng->st.c[EC_TX_DATA_FIRST]++;
		count++;
	}
	while (count < n && !list_empty(&eng->ctl_ready)) {
		struct qp *qp = list_first(&eng->ctl_ready, struct qp, ctl_node);

		if (qp_tx_ctl(eng, qp, now, tx_slot(eng, bufs, count, &ready))) {
			seal_later(eng, sec_qp_key(eng, qp), keys, bufs, &sealed, count);
			count++;
			list_rotate(&eng->ctl_ready, &qp->ctl_node);
		} else {
			list_del(&qp->ctl_node);
		}
	}
	if (list_empty(&eng->ctl_ready))
		eng->ctl_ahead = 0;	/* nothing owed: lone_first's allowance is whole again */
	ctl = count;
	qp_tx_ports_note(eng, bufs, 0, ctl, now);	/* ACKs ahead of the data on their ports */
	while (count < n && !list_empty(&eng->tx_ready)) {
		struct qp *qp = list_first(&eng->tx_ready, struct qp, tx_node);

		if (qp->deficit <= 0)
			qp->deficit += (int32_t)(eng->seg_bytes * eng->cfg.ack_every);
		if (qp_tx_one(eng, qp, now, tx_slot(eng, bufs, count, &ready))) {
			const uint8_t *key = sec_qp_key(eng, qp);

			seal_later(eng, key, keys, bufs, &sealed, count);
			/* As sealed: the tag counts (sealed later, in a batch). */
			qp->deficit -= (int32_t)(bufs[count].len + (key ? MROC_TAG_LEN : 0));
			count++;
			/*
			 * A turn ends at a run's end (qp->run_left: ack_every
			 * packets on one path, ACKed by one ACK), the deficit
			 * repaid next turn: ended mid-run, the QP found the
			 * peer's window taken by the QPs after it when it came
			 * back, and the rest of its run waited for its turn
			 * there while the receiver's ACK waited for ack_delay
			 * (issue #22: 0.22-0.30 runs cut a data packet at
			 * 4,000 QPs, tx_run_cut).
			 */
			if (qp->deficit <= 0 && !qp->run_left) {
				list_rotate(&eng->tx_ready, &qp->tx_node);
				peer_turn_end(eng, qp);
			}
		} else {
			list_del(&qp->tx_node);
			qp->deficit = 0;
			if (qp->ph_blocked) {
				peer_park(qp);
				eng->st.c[EC_TX_PEER_BLOCKED]++;
			}
			peer_turn_end(eng, qp);	/* room granted it and not used goes on */
			qp_update_deadline(eng, qp);
		}
	}
	seal_pending(eng, keys, bufs, &sealed, count);
	qp_tx_ports_note(eng, bufs, ctl, count, now);
	if (count == n)
		eng->st.c[EC_TX_BATCH_FULL]++;
	for (int i = 0; eng->sec_tag_len && i < ready; i++)
		bufs[i].cap += eng->sec_tag_len;
	eng->st.c[EC_TX_PKTS] += (uint64_t)count;
	return count;
}

/* Whether engine_tx's data loop may take a packet from qp (pick_segment's sources). */
static bool may_send_data(const struct engine *eng, const struct qp *qp)
{
	return qp->state == ENGINE_QPS_CONNECTED &&
	       (qp_has_data(eng, qp) || qp->probes_owed || qp->dup_next != qp->dup_end);
}

/*
 * The lists engine_tx serves, walked no further than max: a receiver's QP
 * is on both after each data packet (an ACK may be owed, and it is woken),
 * with no data of its own.
 */
int engine_tx_want(const struct engine *eng, int max)
{
	int want = 1;

	if (eng->ctl_head != eng->ctl_tail || eng->half_qhead)
		return max;
	for (const struct list *l = eng->ctl_ready.next; l != &eng->ctl_ready && want < max;
	     l = l->next)
		want++;
	for (const struct list *l = eng->tx_ready.next; l != &eng->tx_ready && want < max;
	     l = l->next) {
		if (may_send_data(eng, list_entry(l, struct qp, tx_node)))
			return max;
		want++;
	}
	return want > 1 ? want : 0;
}

/*
 * Every QP due by now runs its timers once: the due ones are taken off the
 * wheel first, so a QP whose timers leave a deadline in the past waits for
 * the next call instead of looping here.
 */
void engine_advance(struct engine *eng, uint64_t now)
{
	struct qp *due = NULL, **tail = &due, *qp;

	while ((qp = timer_pop_due(eng, now))) {
		qp->due_next = NULL;
		*tail = qp;
		tail = &qp->due_next;
	}
	while ((qp = due)) {
		due = qp->due_next;
		cm_timer(eng, qp, now);
		qp_timers(eng, qp, now);
		qp_wake(eng, qp);
		qp_wake_ctl(eng, qp);
		qp_update_deadline(eng, qp);
	}
}

uint64_t engine_next_deadline(struct engine *eng)
{
	uint64_t d;

	if (!list_empty(&eng->ctl_ready) || !list_empty(&eng->tx_ready) ||
	    eng->ctl_head != eng->ctl_tail || eng->half_qhead)
		return 0;	/* work to do right now */
	d = timer_next(eng);
	return d ? d : UINT64_MAX;
}
