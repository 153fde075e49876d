/* SPDX-License-Identifier: MIT */
/*
 * The calls between the engine's files, by the file that has each (its
 * structs are internal.h's, which includes this at its end); nothing
 * outside engine/ includes it.
 */
#ifndef MROC_ENGINE_CALLS_H
#define MROC_ENGINE_CALLS_H

/* sec.c: the security modes' engine side (docs/PROTOCOL.md 1.2) */
void sec_init(struct engine *eng);
void sec_new_key(struct engine *eng, uint8_t key[MROC_CM_KEY_LEN]);
void sec_random(struct engine *eng, void *out, size_t len);
uint32_t sec_rand32(struct engine *eng);
/* Before wire_parse: 0 with *len less the tag, or -errno (counted: drop it). */
int sec_rx_check(struct engine *eng, const uint8_t *buf, size_t *len,
		 const struct engine_rx_meta *meta);
/* May a CONNECT_REQ in this mode and protection connect?  Refuses (REJ SECURITY) if not. */
bool sec_req_ok(struct engine *eng, const struct wire_pkt *pkt,
		const struct engine_rx_meta *meta);
/* Append the tag under key to the packet in b (key NULL: nothing to do). */
void sec_tx_seal(struct engine *eng, const uint8_t *key, struct engine_txbuf *b);
/* Whether the last MROC_TAG_LEN bytes of buf (len with them) are its tag under key. */
bool sec_tag_ok(const uint8_t *key, const uint8_t *buf, size_t len);
/* The same for n packets, keys[i] for bufs[i], batched (engine_tx: SEC_SEAL_MAX at a time). */
#define SEC_SEAL_MAX	64
void sec_tx_seal_all(struct engine *eng, const uint8_t *const *keys, struct engine_txbuf *bufs,
		     int n);
/* siphash.c: SipHash-2-4 (crypto_shorthash) of n messages of len bytes, several at once. */
void siphash24_many(const uint8_t *const *keys, const uint8_t *const *msgs, size_t len,
		    uint8_t *const *outs, unsigned n);
/* The key a packet from this QP is tagged with, or NULL. */
static inline const uint8_t *sec_qp_key(const struct engine *eng, const struct qp *qp)
{
	return eng->sec_tag_len && qp->has_tx_key ? qp->tx_key : NULL;
}

/* qptable.c: where the QPs live (slots, QPN hash, the ready lists) */
int qp_table_init(struct engine *eng);	/* sets hash_mask, which cm.c and peer.c size on */
void qp_table_free(struct engine *eng);
struct qp *qp_lookup(struct engine *eng, uint32_t qpn);
/* A new QP into a free slot under qpn (there is one: eng->nfree), out of it again. */
void qp_table_add(struct engine *eng, struct qp *qp, uint32_t qpn);
void qp_table_remove(struct engine *eng, struct qp *qp);
/* The QP may have something to send: data (and anything else), or only control. */
void qp_wake(struct engine *eng, struct qp *qp);
void qp_wake_ctl(struct engine *eng, struct qp *qp);

/* Counts an event (engine_get_stats). */
static inline void engine_count(struct engine *eng, enum engine_counter c)
{
	eng->st.c[c]++;
}

/* timer.c */
int timer_init(struct engine *eng);
void timer_move(struct engine *eng, struct qp *qp, uint64_t deadline);
/*
 * Set the QP's deadline (0 = none).  Unchanged is the usual answer of the
 * call after every packet (qp_update_deadline): decided here, without a
 * call (issue #22).
 */
static inline void timer_set(struct engine *eng, struct qp *qp, uint64_t deadline)
{
	if (deadline == qp->deadline && (list_linked(&qp->timer_node) || !deadline))
		return;
	timer_move(eng, qp, deadline);
}
void timer_cancel(struct engine *eng, struct qp *qp);
uint64_t timer_next(struct engine *eng);
struct qp *timer_pop_due(struct engine *eng, uint64_t now);

/* peer.c */
int peer_init(struct engine *eng);
void peer_free(struct engine *eng);
void peer_attach(struct engine *eng, struct qp *qp);
void peer_heard(struct qp *qp, uint64_t now);
uint64_t qp_heard(const struct qp *qp);
uint32_t peer_inflight(const struct qp *qp);
uint32_t peer_window(const struct engine *eng, const struct qp *qp);
void peer_host_delay(struct engine *eng, struct qp *qp, uint64_t host, uint64_t now);
void peer_detach(struct engine *eng, struct qp *qp);
bool peer_room(const struct engine *eng, struct qp *qp);
void peer_sent(struct engine *eng, struct qp *qp, uint64_t now);
void peer_park(struct qp *qp);
void peer_kick(struct engine *eng, struct peer_host *h);
void peer_turn_end(struct engine *eng, struct qp *qp);
void peer_rescue(struct engine *eng, struct qp *qp);
void peer_release(struct engine *eng, struct qp *qp, uint32_t n);
int peer_check(struct engine *eng, char *why, size_t len);
bool qp_stranded(const struct qp *qp);

/* check.c: engine_check's message (returns -EFAULT) */
int check_fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void peer_acked(struct engine *eng, struct qp *qp, uint32_t n);
bool peer_hint_join(const struct engine *eng, struct qp *qp);
uint32_t peer_hint_qps(const struct engine *eng, const struct qp *qp);

/* mr.c */
int mr_table_init(struct engine *eng);
void mr_table_free(struct engine *eng);
/* Look up by key and check pd, rights and [off, off+len) inside; NULL if not. */
uint8_t *mr_check_lkey(struct engine *eng, uint64_t pd, uint32_t lkey, uint32_t access,
		       uint64_t off, uint64_t len);
uint8_t *mr_check_rkey(struct engine *eng, uint64_t pd, uint32_t rkey, uint32_t access,
		       uint64_t off, uint64_t len, int *err);

int seqring_alloc(void **v, uint32_t *mask, size_t elem, uint32_t cap);
int seqring_reserve(void **v, uint32_t *mask, size_t elem, uint32_t lo, uint32_t span,
		    uint32_t max);
/*
 * seqring_reserve, its usual answer (room already) inline: asked twice a
 * data packet sent and more on receipt, the call cost ~40 instructions a
 * data packet (issue #22).
 */
static inline int seqring_room(void **v, uint32_t *mask, size_t elem, uint32_t lo, uint32_t span,
			       uint32_t max)
{
	return span <= *mask + 1 ? 0 : seqring_reserve(v, mask, elem, lo, span, max);
}
#define SEQRING_ALLOC(arr, mask, cap) \
	seqring_alloc((void **)&(arr), &(mask), sizeof(*(arr)), (cap))
#define SEQRING_RESERVE(arr, mask, lo, span, max) \
	seqring_room((void **)&(arr), &(mask), sizeof(*(arr)), (lo), (span), (max))

/* path.c */
void path_init(struct engine *eng, struct qp *qp, struct path *p, uint8_t id, uint64_t now);
void path_first_ports(struct engine *eng, struct qp *qp);
void path_on_rtt(struct engine *eng, struct path *p, uint64_t rtt, uint64_t fabric);
void path_note_rtt_max(struct engine *eng, uint64_t rtt, uint64_t now);
bool path_on_echo(struct engine *eng, struct qp *qp, struct path *p, uint32_t ts_echo,
		  uint64_t now, bool late, uint64_t known, uint64_t *sent);
void path_lend_rtt(const struct engine *eng, struct qp *qp, const struct path *p,
		   uint64_t now);
void path_on_ack(struct engine *eng, struct qp *qp, struct path *p, uint32_t acked_bytes,
		 uint32_t rcv_delta, uint32_t ce_delta, uint32_t acked_psn, uint64_t now);
void path_on_loss(struct engine *eng, struct qp *qp, struct path *p, uint32_t psn, uint32_t nlost);
void path_on_rto(struct engine *eng, struct qp *qp, struct path *p, uint64_t now);
uint16_t path_scout(struct engine *eng, struct qp *qp, struct path *p, uint64_t now);
void path_scout_answered(struct engine *eng, struct qp *qp, struct path *p, bool echo_ok,
			 uint64_t sent);
void path_repath(struct engine *eng, struct qp *qp, struct path *p, uint64_t now,
		 enum engine_repath_why why);
void path_port_up(struct engine *eng, struct qp *qp, uint32_t cls, uint64_t now);
/* An ACK after a timeout move: whether it shows the port left delivering after the silence. */
void path_note_left(struct path *p, const struct mroc_ack_hdr *a);
bool path_look_acked(struct path *p, uint32_t *newest);
void path_look_sample(struct engine *eng, struct qp *qp, struct path *p, uint64_t fabric,
		      uint64_t now);
void path_check_siblings(struct engine *eng, struct qp *qp, struct path *p, uint64_t now);
void path_rearm(const struct engine *eng, struct qp *qp, struct path *p, uint64_t now);
/* Whether p's RTO is due by its RTO as it stands now; if not, the timer is set to that. */
bool path_rto_due(const struct engine *eng, struct qp *qp, struct path *p, uint64_t now);
/* Tail-loss probes the path may send before its RTO (TLP_MAX or TLP_BULK, or 1 on a borrowed RTT). */
unsigned path_probe_max(const struct qp *qp, const struct path *p);
/* The timer at the tail-loss probe's time from now if that is before the RTO's, else the RTO's. */
void path_arm_probe(const struct engine *eng, struct qp *qp, struct path *p, uint64_t now);
/* The path's RTO with its backoff applied. */
uint64_t path_rto(const struct engine *eng, const struct path *p);
/* When a path without an RTT sample, its probe out, may count as dead if silent alone. */
uint64_t path_silent_at(const struct engine *eng, const struct path *p);
void path_rearm_send(const struct engine *eng, struct qp *qp, struct path *p, uint64_t now);
uint64_t path_silence_end(const struct engine *eng, const struct path *p);
uint64_t path_silence_floor(const struct engine *eng);

/* Asked for every path at every packet sent (tx_pick_path): inline, not calls into path.c. */
static inline uint32_t path_free(const struct path *p)
{
	return p->pwnd > p->inflight ? p->pwnd - p->inflight : 0;
}

/* The receiver's SACK could not describe one more packet in flight. */
static inline bool path_sb_full(const struct path *p)
{
	return seq_diff(p->next_psn, p->floor) >= MROC_SACK_BITS;
}

static inline bool path_can_send(const struct engine *eng, const struct path *p, uint32_t bytes)
{
	(void)eng;
	if (path_sb_full(p))
		return false;
	return !p->inflight || p->inflight + bytes <= p->pwnd;
}

/* qp_tx.c */
int qp_post_send(struct engine *eng, struct qp *qp, const struct engine_wr *wr, uint64_t now);
int qp_queue_read_resp(struct engine *eng, struct qp *qp, const struct rx_msg *req);
struct tx_msg *qp_queue_atomic_resp(struct engine *eng, struct qp *qp, uint32_t req_msn);
int qp_tx_data(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b);
void qp_mark_lost(struct engine *eng, struct qp *qp, uint32_t dsn);
/* true: a message was retired (a READ_REQ waiting for ring room may go: qp_deliver) */
bool qp_complete_sends(struct engine *eng, struct qp *qp);
void qp_set_error(struct engine *eng, struct qp *qp, uint8_t cause, uint64_t now);
/* qp_flush = qp_flush_sends (returns qp_complete_sends's answer), then qp_flush_rest. */
void qp_flush(struct engine *eng, struct qp *qp, uint8_t status);
bool qp_flush_sends(struct engine *eng, struct qp *qp, uint8_t status);
void qp_flush_rest(struct engine *eng, struct qp *qp, uint8_t status);
bool qp_has_data(const struct engine *eng, const struct qp *qp);
bool qp_cq_budget(const struct qp *qp);
/* The send message of msn: looked up twice a data packet sent, so no call. */
static inline struct tx_msg *qp_msg(struct qp *qp, uint32_t msn)
{
	return &qp->txm[msn & qp->txm_mask];
}

/* qp_ack.c (and mode.c: MetaRoCE's hooks) */
void ack_detect_loss(struct engine *eng, struct qp *qp, struct path *p, uint64_t now);
void ack_lose_all(struct engine *eng, struct qp *qp, struct path *p);
struct path *tx_pick_path(struct engine *eng, struct qp *qp, uint32_t bytes);
void rx_apply_floor(struct rx_path *rp, const struct mroc_data_hdr *d);
int qp_rx_ack(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt, uint64_t now,
	      uint64_t at);
/* ... and what qp_timers.c calls there */
void advance_floor(struct path *p, uint64_t now);
void fail_msg_of(struct engine *eng, struct qp *qp, uint32_t dsn, uint8_t status,
		 uint64_t now);
void rewind_acked(struct qp *qp, uint32_t from, uint8_t state);
void rack_scan(struct engine *eng, struct qp *qp, uint64_t now, bool lose);

/* qp_timers.c (ack_resend_one: and mode.c's hooks) */
bool ack_resend_one(struct engine *eng, struct qp *qp, uint32_t d);
/* A READ or atomic was just sent and no answer is timed: its answer is. */
void answer_arm(struct engine *eng, struct qp *qp, uint64_t now);
void qp_timers(struct engine *eng, struct qp *qp, uint64_t now);

/*
 * When a packet reached the host (engine_rx_meta.arrival): now when the
 * driver did not stamp it, never more than rto_max back (a stamp that old
 * is no stamp of this packet).  A stamp after now is the packet's: the
 * caller read its clock before the packet came (a worker that lost its CPU
 * between its clock and its receive ring, at load); only one more than
 * rto_max ahead is none.
 */
static inline uint64_t rx_arrival(const struct engine *eng, const struct engine_rx_meta *m,
				  uint64_t now)
{
	if (!m->arrival)
		return now;
	if (m->arrival >= now)
		return m->arrival - now > eng->cfg.rto_max_ns ? now : m->arrival;
	return now - m->arrival > eng->cfg.rto_max_ns ? now - eng->cfg.rto_max_ns : m->arrival;
}

/*
 * When the engine took the packet, for its RTT arithmetic: now, or its
 * arrival when that is later.  Taken at a clock from before it arrived, the
 * receiver claimed the time from that clock to its ACK as host time and the
 * sender timed the ACK to it: paths' minimum RTTs of 0.15-8.8 us against
 * 18-27 us on a 2-port fabric at load 15 (issue #23).  Only the samples
 * take it: the engine's other state keeps the caller's clock, which later
 * calls do not go back behind.
 */
static inline uint64_t rx_taken(const struct engine *eng, const struct engine_rx_meta *m,
				uint64_t now)
{
	uint64_t at = rx_arrival(eng, m, now);

	return at > now ? at : now;
}

/* qp_rx.c */
int qp_rx_data(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt,
	       const struct engine_rx_meta *meta, uint64_t now);
int qp_tx_ack(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b);
int qp_tx_keepalive(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b);
/* Whether qp_tx_ack may find an ACK owed now (without the rx paths). */
static inline bool qp_ack_maybe_due(const struct qp *qp, uint64_t now)
{
	return qp->acks_owed || (qp->ack_due.at && now >= qp->ack_due.at);
}
/* Whether qp_tx_keepalive has one to send (room in the buffer aside). */
static inline bool qp_ka_owed(const struct qp *qp)
{
	return qp->ka_request || qp->ka_reply;
}
void qp_deliver(struct engine *eng, struct qp *qp);
void qp_set_nak(struct qp *qp, struct rx_path *rp, uint8_t code, uint32_t dsn);
int qp_post_recv(struct engine *eng, struct qp *qp, const struct engine_recv_wr *wr);
int qp_rx_reset(struct engine *eng, struct qp *qp, uint32_t peer_isn_psn, uint32_t peer_isn_dsn);

/* cm.c (cm_tx, cm_timer, cm_tx_ctl, cm_peer_early, cm_split*: cm_tx.c) */
int cm_rx(struct engine *eng, const struct wire_pkt *pkt, const struct engine_rx_meta *meta,
	  uint64_t now);
int cm_tx(struct engine *eng, struct qp *qp, uint64_t now, struct engine_txbuf *b);
/* Whether cm_tx has a message of qp's to send now. */
static inline bool cm_tx_due(const struct qp *qp, uint64_t now)
{
	return qp->cm_pending && (qp->cm_twin || !(qp->cm_deadline && now < qp->cm_deadline));
}
void cm_timer(struct engine *eng, struct qp *qp, uint64_t now);
int cm_tx_ctl(struct engine *eng, uint64_t now, struct engine_txbuf *b);
/* A packet from the peer of a QP still waiting for its CONNECT_REP. */
void cm_peer_early(struct engine *eng, struct qp *qp, uint64_t now);
int cm_hash_init(struct engine *eng);
void cm_hash_free(struct engine *eng);
/* Take the QP out of the listener and connection tables. */
void cm_unlink(struct engine *eng, struct qp *qp);
bool cm_peer_ok(struct engine *eng, struct qp *qp, const struct engine_rx_meta *meta);
/* A packet (not CM) to a listening QP: binds it if the packet proves a half-open REQ. */
void cm_bind_proven(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt,
		    const struct engine_rx_meta *meta, uint64_t now);
/* A packet of the bound peer to a requester whose RTU is out: it is connected. */
void cm_rtu_answered(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt,
		     const struct engine_rx_meta *meta, uint64_t now);
/* The CM header's split field a REQ or REP announces for a QP of that mode. */
uint8_t cm_split(const struct engine *eng, uint8_t mode);
/*
 * What the message qp's msn names has left to send, in bytes on the wire
 * times the ports they share (qp_tx_path.c); 0 when it is no longer a message
 * posted alone with nothing behind it and nothing to resend.
 */
uint32_t qp_tx_lone_left(const struct engine *eng, const struct qp *qp, uint32_t msn);
/* One full data packet on the wire: what lone_first lets go before an ACK (qp_tx_path.c). */
uint32_t qp_tx_full_pkt(const struct engine *eng);
/* A data packet of len bytes just built, as qp_tx_lone_left counts it. */
uint32_t qp_tx_ahead_cost(const struct engine *eng, uint32_t len);
/* Packets of bufs[lo, hi) leave now: their ports' backlog (split parts keep off it). */
void qp_tx_ports_note(struct engine *eng, const struct engine_txbuf *bufs, int lo, int hi,
		      uint64_t now);
/* The split ports (mroc_split_seg) this engine announces for, and cuts by, a QP of npaths. */
uint32_t cm_split_ports(const struct engine *eng, uint32_t npaths);
/* The CM ext bits (MROC_CM_F_PORTS) a REQ or REP of such a QP announces them with. */
uint8_t cm_split_ext(const struct engine *eng, uint8_t mode, uint32_t npaths);

/* cm.c and cm_tx.c, each other's */
/* A try's sends after its first, its copies (try_arm). */
#define CM_COPIES 3
void conn_unlink(struct engine *eng, struct qp *qp);
void cm_log_send(struct qp *qp, uint16_t sport, uint8_t path, uint64_t now);
uint64_t cm_backoff(const struct engine *eng, uint32_t n);

/* cm_half.c: CONNECT_REQs answered, the listener not bound until proven */
enum half_due { HALF_NONE = 0, HALF_REP, HALF_BUSY };
int cm_half_init(struct engine *eng);
void cm_half_free(struct engine *eng);
/* Whether listener l has entries still waiting (expired ones are dropped here). */
bool cm_half_waiting(struct engine *eng, struct qp *l, uint64_t now);
/* A REQ for listener l: a new entry, its REP queued.  0 or -ENOMEM. */
int cm_half_req(struct engine *eng, struct qp *l, const struct wire_pkt *pkt,
		const struct engine_rx_meta *meta, uint64_t now);
/* A repeated REQ whose entry still waits: its REP again.  True if there was one. */
bool cm_half_repeat(struct engine *eng, const struct wire_pkt *pkt,
		    const struct engine_rx_meta *meta, uint64_t now);
/* "token", before parsing: which entry for QP qpn, if any, the packet's tag is under. */
bool cm_half_tag(struct engine *eng, uint32_t qpn, const uint8_t *buf, size_t len);
/* The waiting entry of listener l this packet proves (src QPN, source, tag), or NULL. */
struct cm_half *cm_half_proven(struct engine *eng, struct qp *l, const struct wire_pkt *pkt,
			       const struct engine_rx_meta *meta, uint64_t now);
/* The entry bound l (its requester proved it): the others of l are told BUSY. */
void cm_half_bound(struct engine *eng, struct qp *l, struct cm_half *h, uint64_t now);
/* The entry's requester refused our REP: forget it. */
void cm_half_refused(struct engine *eng, struct cm_half *h);
/* A proof of an entry that lost QP qpn to another requester: BUSY again.  True if so. */
bool cm_half_busy(struct engine *eng, uint32_t qpn, const struct wire_pkt *pkt,
		  const struct engine_rx_meta *meta, uint64_t now);
/* A queued REP or REJ BUSY, into b (tagged).  Returns 1 or 0. */
int cm_half_tx(struct engine *eng, uint64_t now, struct engine_txbuf *b);

/* qp.c */
struct qp *qp_alloc(struct engine *eng, const struct engine_qp_attr *attr);
void qp_free(struct qp *qp);
void qp_new_isn(struct engine *eng, struct qp *qp);
void qp_start(struct engine *eng, struct qp *qp, uint64_t now);
int qp_push_cqe(struct engine *eng, struct qp *qp, const struct engine_cqe *cqe);
uint32_t qp_cq_room(const struct qp *qp);
void qp_event(struct engine *eng, struct qp *qp, uint8_t wc_op, uint8_t status);
void qp_connect_failed(struct engine *eng, struct qp *qp, uint8_t reason);
void qp_update_deadline(struct engine *eng, struct qp *qp);
uint64_t qp_keepalive_due(const struct engine *eng, const struct qp *qp);

/* Put the common header at b->data; returns its length.  Inline: every packet sent. */
static inline size_t qp_put_hdr(const struct qp *qp, uint8_t *buf, uint8_t op, uint8_t flags,
				uint8_t path_id, uint64_t now)
{
	struct mroc_hdr h = {
		.version = MROC_WIRE_VERSION,
		.opcode = op,
		.flags = flags,
		.path_id = path_id,
		.dst_qpn = qp->peer_qpn,
		.src_qpn = qp->qpn,
		.ts = (uint32_t)now,
	};

	return wire_put_hdr(buf, &h);
}
#define MROC_KA_PKT_LEN	(MROC_HDR_LEN + MROC_KA_LEN)
size_t qp_put_keepalive(struct qp *qp, uint8_t *buf, uint8_t flags, uint8_t path_id, uint64_t now);
bool qp_ka_fresh(struct engine *eng, struct qp *qp, const struct wire_pkt *pkt);

/* A path's scoreboard entry for a PSN inside [floor, next_psn). */
static inline struct sb_entry *sb_ent(struct path *p, uint32_t psn)
{
	return &p->sb[psn & p->sb_mask];
}

/* A path's timers and a receive path's ACK deadline: set only here (struct due_sum). */
static inline void path_set_rto_deadline(struct qp *qp, struct path *p, uint64_t at)
{
	due_move(&qp->path_due, &p->rto_deadline, at);
}

static inline void path_set_probe_at(struct qp *qp, struct path *p, uint64_t at)
{
	due_move(&qp->path_due, &p->probe_at, at);
}

static inline void rxp_set_ack_deadline(struct qp *qp, struct rx_path *rp, uint64_t at)
{
	due_move(&qp->ack_due, &rp->ack_deadline, at);
}

/* The rx path owes the peer an ACK now (qp->acks_owed). */
static inline void rxp_ack_now(struct qp *qp, const struct rx_path *rp)
{
	qp->acks_owed |= (uint16_t)(1u << (rp - qp->rxp));
}

/* The path sends a probe with its next packet (qp->probes_owed); or not. */
static inline void path_probe_owed(struct qp *qp, const struct path *p, bool owed)
{
	if (owed)
		qp->probes_owed |= (uint16_t)(1u << p->id);
	else
		qp->probes_owed &= (uint16_t)~(1u << p->id);
}

/* Sender state of a DSN inside [snd_una, snd_nxt). */
static inline struct dsn_entry *dsn_ent(struct qp *qp, uint32_t dsn)
{
	return &qp->dsn[dsn & qp->dsn_mask];
}

/*
 * The engine time an ACK's echo (ts_echo: a send stamp of ours, ns mod
 * 2^32) names, given that no valid echo is older than lo: the latest time
 * up to now with those low 32 bits.  False when that is before lo (or
 * before the engine's start).  Compared as 32-bit serial numbers, echoes
 * held only within 2.15 s, while a packet may wait for its ACK up to
 * rto_max (600 s in mrocd's config, hours in the simulator's PFC
 * transports): an ACK 3 s late was refused as from the future, and after
 * a timeout of 5 s every ACK was (test_engine_rto_max).  What 32 bits
 * cannot tell: an ACK 4.29 s or more late names a time 4.29 s later than
 * its packet's.  path_on_echo reads an echo up to 2.15 s after the
 * stamp of the newest packet the ACK acknowledges from that packet's whole
 * send time (test_answered_late_5s); only an echo 2.15 s or more after it
 * (a receiver that held its ACK that long past its ACK delay, then 4.29 s
 * on its way) still reads as a shorter RTT, never as an RTO's packet
 * (Eifel's test).
 */
static inline bool echo_sent(uint64_t now, uint32_t ts_echo, uint64_t lo, uint64_t *sent)
{
	uint64_t t = now - (uint32_t)((uint32_t)now - ts_echo);

	if (t > now || t < lo)
		return false;
	*sent = t;
	return true;
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Earliest of two deadlines where 0 means "none". */
static inline uint64_t deadline_min(uint64_t a, uint64_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

#endif
