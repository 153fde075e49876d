/* SPDX-License-Identifier: MIT */
/*
 * Engine internals shared by the engine's files; nothing outside
 * engine/ includes this.  One QP holds both directions: the send side
 * (messages, DSN states, paths, retransmit queue) and the receive side
 * (DSN bitmap, message ring, RECV queue, per-path SACK scoreboards).
 */
#ifndef MROC_ENGINE_INTERNAL_H
#define MROC_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cc.h"
#include "engine.h"
#include "list.h"
#include "mode.h"
#include "mroc_util.h"
#include "prng.h"
#include "sack.h"
#include "wire.h"

/* Levels of the timer wheel (timer.c). */
#define TIMER_LEVELS		4

/* Messages a sender may have undelivered; receivers size their ring to it. */
#define MROC_MSG_WINDOW		1024
/* Outstanding RDMA READs per QP and direction (requester and responder). */
#define MROC_MAX_RD		16
/* Bytes of Ethernet + IPv4 + UDP + FCS/preamble we charge per packet for windows. */
#define ENGINE_L2L4_OVERHEAD	0

/*
 * Tail-loss probes a path sends before its RTO, a probe time apart (path.c
 * path_arm_probe); TLP_BULK on a live path of a QP with new data to send
 * (its probes carry that data); one only while its probe time is a borrowed
 * RTT (path_probe_max).
 */
#define TLP_MAX			3
#define TLP_BULK		5

#define NSEC_PER_USEC		1000ULL
#define NSEC_PER_MSEC		1000000ULL
#define NSEC_PER_SEC		1000000000ULL

/* ---- send side ------------------------------------------------------------ */

enum sb_state { SB_FREE = 0, SB_INFLIGHT, SB_ACKED, SB_LOST };

/* One transmission on a path: indexed by PSN modulo MROC_SACK_BITS. */
struct sb_entry {
	/*
	 * Engine time when sent (the wire's stamp is its low 32 bits): a packet
	 * may be in flight longer than the stamps' 4.29 s (rto_max has no
	 * bound of theirs), and a 32-bit copy then read as sent 4.29 s later.
	 */
	uint64_t sent;
	uint32_t dsn;
	uint16_t bytes;		/* counted against the window */
	uint8_t state;		/* enum sb_state */
	uint8_t copy : 1;	/* a probe's duplicate: its loss says nothing about the DSN */
	uint8_t ack_req : 1;	/* sent with ACK_REQ: acknowledged without the receiver's delay */
	uint8_t rto_lost : 1;	/* declared lost by the path's last RTO (ack_unlose) */
	uint8_t dup : 1;	/* copy: a lone small message's (qp_tx.c dup_max; qp_ack.c drop_dups) */
	uint8_t part : 1;	/* of a split, uncopied message of <= mtu (path_lend_rtt) */
	uint8_t scout : 1;	/* by a scout's port (path_repath.c path_scout): lost, the route's loss */
};

enum path_state { PATH_ACTIVE = 0, PATH_TIMEDOUT };

/* A packet sent by the port a timeout move left, to see if that route lives (path.c). */
enum route_probe { ROUTE_PROBE_NONE = 0, ROUTE_PROBE_WANT, ROUTE_PROBE_SENT };
enum path_look { LOOK_NONE = 0, LOOK_WANT, LOOK_SENT, LOOK_NEXT };

/* The most scouts a path sends at one timeout (path_repath.c scouts_for). */
#define SCOUT_MAX	7

struct path {
	uint8_t id;
	uint8_t state;
	uint16_t sport;
	uint32_t next_psn;	/* next PSN to send */
	uint32_t psn_hw;	/* one above the highest PSN ever sent (RoCEv2 mode rewinds) */
	uint32_t floor;		/* lowest PSN still in flight (or next_psn) */
	uint32_t high_acked;	/* highest PSN acknowledged (valid if any_acked) */
	bool any_acked;
	uint32_t inflight;	/* bytes */
	uint32_t pwnd;		/* bytes */
	uint32_t ssthresh;
	uint64_t srtt, rttvar, min_rtt, rto;	/* ns; srtt 0 = no sample yet */
	uint32_t backoff;	/* consecutive RTOs */
	/* The path's two timers, side by side: qp_update_deadline's scan reads one line a path.
	 * Written only through path_set_rto_deadline / path_set_probe_at (qp->path_due). */
	uint64_t rto_deadline;	/* next timer: probe, then RTO; 0 = not armed */
	uint64_t probe_at;	/* timed-out path: when to probe it next */
	uint64_t rto_at;	/* when the RTO proper fires */
	uint64_t rto_armed;	/* when rto_at was set: the RTO runs from here (path_rto_due) */
	uint64_t silent_from;	/* RACK emptied the path unanswered: its RTO's start (path_rearm_send) */
	uint64_t settled_from;	/* its settled flight let go unanswered since (qp_timers.c release_settled) */
	uint64_t rto_fired_at;	/* the last RTO, until an ACK says whether it was needed; 0 = none */
	uint64_t echo_lo;	/* no ACK may echo a send time before this (path.c) */
	uint64_t timedout_at;	/* the first RTO since the path last made progress */
	uint8_t probes;		/* tail-loss probes sent since the last progress */
	uint8_t mute_rtos;	/* RTOs since the path last heard an ACK (path_repath.c mute_backoff) */
	/* DCTCP-style round: from the ACK of round_end_psn to the next. */
	uint32_t round_end_psn;
	uint32_t round_rcv, round_ce, round_lost, round_acked;
	uint32_t alpha;		/* CE fraction estimate, 1 << 20 = 1.0 */
	uint64_t round_min_rtt;	/* smallest RTT sample this round (the delay signal), 0 = none */
	uint32_t recover_psn;	/* losses below this do not cut the window again */
	bool cut_this_round;
	/* delay signal: rounds in a row it cut, the window and RTT when the streak began */
	uint32_t dly_streak, dly_ref_pwnd;
	uint64_t dly_ref_rtt;
	bool classic;		/* its mode's classic_window (mode.h) */
	/* window validation: the most in flight when an ACK came, this round and the last */
	uint32_t flight_max, flight_max_prev;
	/* Eifel's undo: the window before the first RTO since the last ACK (undo_ok) */
	bool undo_ok;
	uint32_t undo_pwnd;
	/*
	 * What the last RTO declared lost, PSNs [rto_lo, rto_hi), kept in the
	 * scoreboard while rto_range; after its undo (unlose) ACKs take it back.
	 */
	bool rto_range, unlose;
	uint32_t rto_lo, rto_hi;
	/*
	 * The cross-path rule's losses since the path last delivered a later
	 * packet (qp_ack.c rack_scan): the send times of the first and the last
	 * it declared (0: none).  An ACK echoing one shows that packet only
	 * late (qp_ack.c rack_late).
	 */
	uint64_t rack_lo, rack_hi;
	/*
	 * Reordering on the path's own route (qp_ack.c note_reorder): how much
	 * later than a later-sent packet's ACK the last late one's came (ns, at
	 * most the path's SRTT; 0: the route has kept order) and when.  While
	 * set, the path's holes are lost by time alone, after SRTT + max(SRTT /
	 * 4, reo_ns), not by dupthresh later PSNs.
	 */
	uint64_t reo_ns, reo_at;
	uint64_t high_acked_at;	/* when high_acked last rose */
	uint32_t last_rcv_pkts, last_ce_pkts;	/* cumulative values of the last ACK */
	bool ack_seen;
	/* repathing: smoothed per-round loss and CE fractions (1 << 20 = 1.0) */
	uint32_t loss_ewma, ce_ewma;
	uint64_t rate_ewma;	/* delivered bits per second, smoothed per round */
	uint64_t round_start;
	uint32_t rounds;	/* rounds since the path (re)started */
	bool round_had_ce;
	/*
	 * The repath judgments' count of rounds (path.c round_weight): each
	 * round counts 1, or with cfg.repath_round_rtts its length in that many
	 * base RTTs of the QP (1..ROUND_W_MAX).  age: since the path (re)started
	 * (MATURE_ROUNDS); bad_age: the bad rounds in a row (SLOW_ROUNDS);
	 * round_w: the last round's.
	 */
	uint8_t age, bad_age, round_w;
	uint32_t prev_ce_frac;	/* the last round's CE fraction (1 << 20 = 1.0) */
	uint8_t bad_rounds;
	uint8_t repath_why;	/* enum engine_repath_why of the last move */
	uint16_t prev_sport;
	uint64_t undo_rate;	/* rate_ewma before a timeout move (0: none to judge) */
	bool trial;		/* a "slow", "explore" or "spread" move on trial (path_trial.c trial_judged) */
	uint64_t trial_goal;	/* ... the rate it (the QP, for "spread") must reach to stay */
	/*
	 * A look before a "slow" or "explore" move (path_trial.c path_look_sample):
	 * the path's next packet goes by look_sport, the port it would move
	 * to, answered at once (PSN look_psn, stamped look_ts); look_clear of
	 * them in a row found that route without a queue.
	 */
	uint32_t look_psn, look_ts;
	uint16_t look_sport;
	/*
	 * Scouts (path_repath.c path_scout): at a timeout of a QP with no live path,
	 * the path's probe goes by its new port and then by scouts more, each
	 * by a port of its own (scout_sport[i], sent at scout_ts[i]); an ACK
	 * echoing one moves the path to its port (path_scout_answered).
	 */
	uint16_t scout_sport[SCOUT_MAX];
	uint64_t scout_ts[SCOUT_MAX];
	uint8_t scouts, scouts_sent;
	bool scout_next;	/* the round's first probe went: the next goes by a new port */
	uint8_t look;		/* enum path_look */
	uint8_t look_clear, look_tries;	/* ... and of the looks sent on this port */
	uint8_t look_why;	/* the move it is for: ENGINE_REPATH_SLOW, _CE, _SPREAD or _EXPLORE */
	uint64_t look_goal;	/* ... and that move's trial goal (rate_goal) */
	/*
	 * Whether the port a timeout move left still delivered after the path
	 * fell silent (path_trial.c timeout_move_back): quiet_psn, the next PSN when
	 * its first tail-loss probe since its last progress came due; left_psn,
	 * its first PSN on the new port; left_rcv, the peer's rcv_pkts that
	 * only a packet from quiet_psn on can take it past (path_note_left);
	 * or a packet sent by that port since (route_probe, PSN probe_psn)
	 * acknowledged.
	 */
	uint32_t quiet_psn, left_psn, left_rcv, probe_psn;
	uint8_t route_probe;	/* enum route_probe */
	bool left_alive;
	/*
	 * The route the path left at its last change of port (qp_ack.c
	 * ack_detect_loss): PSNs below route_psn went by it, and while
	 * route_old some of them may still be in flight; route_srtt was the
	 * path's sRTT then, the old route's.
	 */
	uint32_t route_psn;
	bool route_old;
	uint64_t route_srtt;
	uint64_t last_repath;
	struct sb_entry *sb;	/* by PSN, grows up to MROC_SACK_BITS entries */
	uint32_t sb_mask;
	/* statistics */
	uint64_t st_sent, st_retx, st_lost, st_ce, st_acked, st_timeouts, st_repaths;
	uint64_t st_delay_cuts;	/* rounds whose delay cut the window */
	uint64_t st_delay_rebases;	/* delay cuts did not lower: taken as the base RTT */
	uint64_t st_loss_cuts;	/* loss bursts that halved the window */
	uint64_t st_loss_trims;	/* ... that cut it by 1/8 only (random loss, cc_window.c) */
	uint64_t st_repath_why[ENGINE_REPATH__COUNT];	/* moves, by reason */
};

enum dsn_state { DSN_FREE = 0, DSN_INFLIGHT, DSN_ACKED, DSN_LOST, DSN_RNR_WAIT };

/* Sender state of one DSN, indexed by DSN modulo the DSN window. */
struct dsn_entry {
	uint32_t msn;
	uint8_t state;		/* enum dsn_state */
	uint8_t tx_count;
	uint8_t queued;		/* in the retransmit queue */
};

enum txm_state { TXM_FREE = 0, TXM_ACTIVE, TXM_DONE };

/* A message in the send direction: an application WR or a READ response. */
struct tx_msg {
	uint64_t wr_id;
	uint32_t msn;
	uint32_t first_dsn;
	uint32_t nseg;
	uint32_t len;
	uint32_t seg_len;	/* bytes per segment: the mtu, or the split rule's (split) */
	uint32_t ssn;
	uint32_t imm;
	uint32_t key;		/* rkey on the wire (WRITE*, READ_REQ), requester msn (READ_RESP) */
	uint64_t raddr;
	uint32_t src_key;	/* where payload comes from: lkey, or our rkey for READ_RESP */
	uint64_t src_addr;
	uint8_t op;		/* wire opcode */
	uint8_t wc_op;		/* enum engine_wc_opcode for the completion */
	uint8_t signaled;
	uint8_t state;		/* enum txm_state */
	uint8_t status;		/* enum engine_wc_status once failed */
	uint8_t read_done;	/* READ: the response has been delivered */
	uint8_t rnr_tries;
	uint8_t started;	/* a segment has been sent (READ, atomics: counts in rd_out) */
	uint8_t split;		/* cut by the split rule: its segments carry MROC_F_SPLIT */
	uint8_t alone;		/* posted with nothing waiting: paths by RTT (qp_tx.c) */
	uint8_t copied;		/* its segments are copied (dup_max, qp_tx.c msg_alloc) */
	uint8_t atomic[MROC_ATOMIC_REQ_LEN];	/* atomics: operands; ATOMIC_RESP: the value (BE) */
};

/* ---- receive side ------------------------------------------------------- */

struct rx_path {
	struct sack sack;	/* cum_psn + 256-bit bitmap */
	uint32_t rcv_pkts, ce_pkts;
	uint32_t last_ts;	/* the sender's timestamp of the newest data packet ... */
	uint64_t last_ts_at;	/* ... and when the engine took it (our clock) ... */
	uint32_t last_wait;	/* ... after it waited this long in the host (ns, rx_arrival) */
	uint16_t sport;		/* where the newest data came from; ACKs go back on it */
	uint16_t unacked;
	bool active;
	bool seq_nak_sent;	/* RoCEv2 mode: one NAK per out-of-order episode */
	uint64_t ack_deadline;	/* 0 = none; written only through rxp_set_ack_deadline */
};

struct rx_msg {
	uint8_t valid;
	uint8_t op;
	uint32_t msn;
	uint32_t last_dsn;
	uint32_t len;
	uint32_t ssn;
	uint32_t imm;
	uint32_t key;
	uint64_t raddr;
	uint64_t arg[2];	/* atomics: compare/add, swap */
};

struct rq_entry {
	uint64_t wr_id;
	uint32_t lkey;
	uint64_t laddr;
	uint32_t len;
};

/*
 * The earliest of a set of per-path deadlines (0 = none), kept beside the
 * QP's own timer so that qp_update_deadline, which runs on every packet,
 * does not read every path: at 256 QPs those reads were 3.2 of the
 * engine's ~14 LL misses a data packet (issue #22, scripts/pkt-qps.sh).
 * `armed` counts the deadlines that are set; `at` is their minimum, or,
 * while `stale`, no later than it (the minimum's holder moved later or
 * was cleared while others were set): the next read scans them again.
 */
struct due_sum {
	uint64_t at;
	uint8_t armed;
	bool stale;
};

/* *field becomes v (0: none), and s follows. */
static inline void due_move(struct due_sum *s, uint64_t *field, uint64_t v)
{
	uint64_t old = *field;

	if (old == v)
		return;
	*field = v;
	s->armed = (uint8_t)(s->armed + (v != 0) - (old != 0));
	if (!s->armed) {
		s->at = 0;
		s->stale = false;
	} else if (v && (!s->at || v < s->at)) {
		s->at = v;		/* below every other one: the minimum, exactly */
		s->stale = false;
	} else if (old == s->at) {
		s->stale = true;
	}
}

/* ---- the QP ---------------------------------------------------------------- */

/*
 * CM_SEND_RTU: a requester's proof that it got the REP (a KEEPALIVE asking
 * for an answer, repeated like a REQ): the server binds its listener only
 * then (cm_half.c), and the requester counts itself connected only when
 * something of the bound QP's comes back.
 */
enum cm_pending { CM_NONE = 0, CM_SEND_REQ, CM_SEND_REP, CM_SEND_REJ, CM_SEND_DISC, CM_SEND_DISC_ACK,
		  CM_SEND_RTU };

/* CM sends a requester remembers (struct qp cm_log): a try's four, each twice. */
#define CM_LOG 8

struct qp {
	/*
	 * What the engine reads of a QP for nearly every packet sent or taken,
	 * whatever else the packet needs, packed into the QP's first three
	 * cache lines (qp_alloc aligns it): the dispatch, the control checks
	 * (cm_tx, qp_tx_ack, qp_tx_keepalive, pick_segment) and the timer
	 * (qp_update_deadline).  Spread over the struct they took a line each,
	 * and at thousands of QPs a line of a QP is a miss (issue #22,
	 * scripts/pkt-qps.sh).
	 */
	uint32_t qpn;
	uint8_t state;		/* enum engine_qp_state */
	uint8_t mode;
	uint8_t npaths;
	const struct mode_ops *mops;	/* what the mode changes (mode.h) */
	uint32_t peer, peer_qpn;
	uint8_t cm_pending;	/* enum cm_pending */
	bool ka_reply;		/* the peer asked for a keepalive back */
	bool ka_request;	/* we ask the peer for one */
	bool pace_blocked;	/* the last send attempt waited for pace_next */
	/*
	 * Paths that owe a probe now, and rx paths that owe an ACK now, bit i
	 * for path i: asked on every packet sent (pick_segment, qp_tx_ack),
	 * which at thousands of QPs read a cold line of every path to find
	 * none (2.0 and 1.8 LL misses a data packet at 4,000 QPs).
	 */
	uint16_t probes_owed;
	uint16_t acks_owed;
	uint64_t deadline;	/* earliest timer, 0 = none: its place in eng->wheel */
	struct due_sum path_due;	/* the paths' rto_deadline and probe_at */
	struct qp *qpn_next;	/* chain in eng->qpn_hash */
	struct due_sum ack_due;		/* the rx paths' ack_deadline */
	uint64_t cm_deadline;
	uint64_t rnr_deadline;
	uint64_t rack_deadline;	/* when a packet sent before rack_sent is due, 0 = none */
	uint64_t stall_since;	/* snd_una stuck although all segments above were SACKed */
	uint64_t pace_next;
	uint64_t last_rx;	/* last packet from the peer */
	uint64_t ka_sent;	/* last keepalive request we sent */
	uint64_t ka_wait;	/* how long the next unanswered request waits */
	struct peer_host *ph;	/* its peer host (peer.c) while connected; NULL: none */
	struct list tx_node;	/* on eng->tx_ready: something might be sendable (or on ph->blocked) */
	struct list undrawn_node;	/* on eng->undrawn until its first ports are drawn (path.c) */
	struct list ctl_node;	/* on eng->ctl_ready: an ACK, keepalive or CM message may be owed */
	int32_t deficit;	/* deficit round-robin credit, bytes */
	uint32_t ph_pkts;	/* data packets of this QP in the peer's window */

	uint64_t pd;
	uint64_t user;
	uint64_t service_id;
	uint32_t peer_mtu;
	uint32_t peer_split;	/* the peer's split unit, bytes; 0: no split either way */
	/* the peer's split ports (MROC_CM_F_PORTS); 0: it announced none, both ways by npaths */
	uint8_t peer_split_ports;
	uint8_t peer_npaths;	/* paths the peer sprays on: valid path ids below it */
	uint32_t sq_depth, rq_depth;

	/* connection management */
	uint8_t cm_reason;
	/* why the QP went to ERROR (mroc-cli qp show): its event's status, a connect's reason */
	uint8_t err_status, err_why;
	/*
	 * requester: an RTU of this round went unanswered, so each later try
	 * asks with the REQ again and its REP's RTU rides on that try (cm.c
	 * rtu_unanswered)
	 */
	bool cm_again;
	/*
	 * requester: copies of the try's REQ or RTU still to go, the next at
	 * cm_deadline if nothing has come back by then; the try itself ends at
	 * cm_try_end (cm_tx.c try_arm)
	 */
	uint8_t cm_copy;
	/*
	 * requester: the REQ or RTU (its cm_pending) just sent goes again at
	 * once by the next port, once a try went unanswered (cm_tx.c twin_owed)
	 */
	uint8_t cm_twin;
	bool cm_twins;		/* requester: a try went unanswered, sends go twice from now */
	uint8_t cm_sport_op;	/* the CM message in flight (cm_tx.c cm_route) */
	uint16_t cm_sends;	/* CM sends of the QP so far: each leaves by the next path */
	/* server, connected: the port and path of the REQ its REP answers again (cm.c) */
	uint16_t cm_ask_sport;
	uint8_t cm_ask_path;
	/*
	 * requester: its last CM_LOG REQ and RTU sends (first, copies, twins),
	 * each one's port, path and time: an answer by the asking packet's port
	 * and path dates its own send (cm.c cm_log_rtt)
	 */
	struct cm_send {
		uint64_t at;
		uint16_t sport;
		uint8_t path;
		uint8_t pending;	/* CM_SEND_REQ or CM_SEND_RTU */
	} cm_log[CM_LOG];
	uint8_t cm_log_next;
	uint32_t cm_tries;
	uint32_t cm_rounds;	/* requester: REQs sent again after losing a listener (BUSY) */
	uint64_t cm_sent;	/* when the last REQ or DISCONNECT went out */
	uint64_t hs_rtt;	/* the handshake's round trip, 0 = none: the paths' first RTO (path.c) */
	uint64_t cm_try_end;	/* requester: when its try's wait runs out */
	/* listener: its half-open entries (cm_half.c), a list of index + 1, and
	 * which LISTEN this is (entries of an earlier one are stale) */
	uint32_t half_head, listen_gen;
	uint32_t isn_psn, isn_dsn;
	bool fixed_isn;		/* the application chose them: every connection keeps them */
	uint32_t starts;	/* connections so far (qp_start): the first takes path_first_ports' ports */
	/* "token" (sec.c): packets to this QP carry a tag under rx_key, ours to the peer
	 * one under tx_key (the peer's rx_key, from its CONNECT_REQ/REP) */
	bool has_tx_key;
	uint8_t rx_key[MROC_CM_KEY_LEN], tx_key[MROC_CM_KEY_LEN];

	/* send side */
	struct tx_msg *txm;	/* by MSN; grows up to txm_max */
	uint32_t txm_mask, txm_max;
	uint32_t msn_head;	/* oldest message not completed */
	uint32_t msn_tail;	/* next MSN to allocate */
	uint32_t msn_seg;	/* message holding snd_nxt */
	uint32_t snd_nxt;	/* next new DSN */
	uint32_t dsn_alloc;	/* next DSN to give to a new message */
	uint32_t snd_una;	/* peer's cumulative DSN */
	/* a lone small message's DSNs whose copies are still to go, [dup_next, dup_end) (qp_tx.c) */
	uint32_t dup_next, dup_end;
	bool dups_out;		/* copies may be in flight (qp_ack.c drop_dups) */
	uint32_t ssn_next;
	uint32_t sq_used;	/* application WRs not yet completed */
	uint32_t rd_out;	/* READs outstanding as requester */
	/*
	 * The answers rd_out owes (qp_timers.c answer_timer): when the wait
	 * is next judged (0: none), the last sign the peer is answering (a
	 * new data packet of its), and the waits that passed without one.
	 */
	uint64_t ans_deadline, ans_progress;
	uint32_t ans_tries;	/* waits without progress (answer_timer): up to max_retx + 1 */
	uint32_t rd_resp;	/* READ responses queued as responder */
	struct dsn_entry *dsn;	/* by DSN; grows up to the DSN window */
	uint32_t dsn_mask;
	uint32_t *rtxq;		/* DSNs to retransmit, FIFO */
	uint32_t rtx_mask, rtx_head, rtx_tail;
	uint32_t gbn_next;	/* RoCEv2 mode: next DSN to resend after go-back */
	bool gbn_active;
	struct path *paths;
	uint32_t rr;
	uint8_t run_path;	/* tx_pick_path: the path of the current run ... */
	uint8_t run_left;	/* ... and how many more packets it may take in a row */
	bool run_ok;		/* qp_tx_data: this packet may run (a bulk message's, first sent) */
	uint64_t tx_win_at;	/* sparse_qp: the start of the QP's current ack_delay window, */
	uint32_t tx_win_pkts;	/* the data packets it sent in it, */
	bool tx_dense;		/* and whether the last window had npaths x ack_every / 2 */
	uint32_t hint_mbps;	/* peer's fair-share hint */
	uint16_t nak_seen;	/* newest nak_seq acted on */
	uint32_t rnr_from;	/* while rnr_deadline is set: DSNs from here wait, even if SACKed */
	uint64_t last_progress;	/* last time snd_una or an ACK moved */
	uint8_t ka_path;	/* path of our last request (< npaths) */
	uint8_t ka_reply_path;	/* the peer's request came on this path id ... */
	uint16_t ka_reply_sport;	/* ... and source port: the answer goes back there */
	/*
	 * Keepalive numbers (PROTOCOL 3.4a): ours count up for the QP's life,
	 * across reconnections; the peer's highest taken is kept while the
	 * peer QP is the same one (ka_rx_peer, ka_rx_qpn), so a keepalive of
	 * an earlier connection between the same two QPs is old too.
	 */
	uint64_t ka_tx_seq;
	uint64_t ka_rx_seq;
	uint32_t ka_rx_peer, ka_rx_qpn;
	uint32_t una_retries;	/* resends of snd_una since it last moved */
	uint64_t explore_at;	/* path_trial.c: no exploratory move before this; 0 = not armed yet */
	uint64_t trial_at;	/* path_trial.c: no trial move ("slow", "explore") before this */
	uint8_t trial_fails;	/* path_trial.c: trial moves in a row that gained nothing */
	uint64_t spread_at;	/* path_trial.c: no "spread" look before this */
	uint8_t spread_fails;	/* path.c: "spread" looks and moves in a row that gained nothing */
	/* loss detection across paths (qp_ack.c): the send time of the newest delivery */
	uint64_t rack_sent;	/* engine time the latest-sent acknowledged packet left ... */
	bool rack_valid;	/* ... since the QP (re)connected */

	/* receive side */
	uint32_t rcv_cum;	/* cumulative DSN */
	uint64_t *rcv_map;	/* DSNs received above rcv_cum: word dsn / 64, bit dsn % 64 */
	uint32_t map_mask;	/* in words */
	struct rx_msg *rxm;	/* by MSN; grows up to MROC_MSG_WINDOW */
	uint32_t rxm_mask;
	uint32_t rcv_msn;	/* next message to deliver */
	uint32_t rcv_rd;	/* READ requests delivered but not yet queued (responder full) */
	struct rq_entry *rq;	/* grows up to rq_max */
	uint32_t rq_max;
	uint32_t rq_mask, rq_head, rq_count;	/* rq_head = SSN + ssn_base of the oldest RECV */
	uint32_t ssn_base;	/* rq_head when this connection began */
	struct rx_path *rxp;	/* one per peer path (nrxp = peer_npaths), from connect */
	uint8_t nrxp;
	uint8_t nak_code;
	uint16_t nak_seq;
	uint32_t nak_dsn;
	uint64_t hint_epoch;	/* engine epoch this QP last received data in */

	/* completions, each QP in order */
	struct engine_cqe *cq;	/* grows up to cq_cap, which every WR and event fits */
	uint32_t cq_mask, cq_cap, cq_head, cq_tail;

	/* scheduling (engine.c, timer.c): no walk over all QPs anywhere (and above) */
	bool ph_blocked;	/* waiting for room in the peer's window (ph_pkts) */
	uint8_t ph_grant;	/* packets of that window kept for its turn (peer_kick) */
	struct list cq_node;	/* on eng->cq_ready: completions to take */
	struct list timer_node;	/* in a slot of eng->wheel (timer.c) */
	uint8_t timer_level, timer_slot;
	uint32_t slot;		/* index in eng->qps */
	struct qp *listen_next;	/* chain in eng->listen_hash (state LISTEN) */
	struct qp *conn_next;	/* chain in eng->conn_hash, by (peer, peer_qpn) */
	struct qp *due_next;	/* engine_advance's batch of due QPs */
	bool in_listen, in_conn;

	/* statistics */
	uint64_t tx_bytes, rx_bytes, tx_msgs, rx_msgs, errors;
};

struct mr {
	uint32_t lkey, rkey;	/* 0 = free slot */
	uint64_t pd;
	uint32_t access;
	uint8_t *addr;
	uint64_t len;
};

/* ACKs a receive batch holds back at most (engine_rx_begin): one per path of a few QPs. */
#define ENGINE_HELD_ACKS	16

struct engine {
	struct engine_config cfg;
	const struct cc_ops *cc;	/* congestion control of every path */
	struct prng rng;		/* ports and tie-breaks; secrets: sec_random */
	struct qp **qps;	/* max_qps slots */
	struct qp **qpn_hash;	/* QPN -> QP (qptable.c), hash_mask + 1 buckets */
	uint32_t *free_slots;	/* stack of empty slots: QP creation without a search */
	uint32_t nfree;
	/* The scheduler: QPs join these lists when they may have work, and
	 * engine_tx / engine_poll_cq serve only what is on them. */
	struct list ctl_ready;	/* ACKs, keepalives, CM: served before data */
	struct list tx_ready;	/* data: deficit round-robin by bytes */
	struct list undrawn;	/* QPs, in creation order, whose first ports are not drawn yet */
	struct list cq_ready;	/* QPs with completions, in the order they got them */
	struct timer_wheel {
		struct list slot[TIMER_LEVELS][64];
		uint64_t pending[TIMER_LEVELS];	/* bit s: slot s is not empty */
		struct list overflow;		/* beyond the top level's reach */
		uint64_t cur;			/* tick: everything before it has fired or moved down */
		uint64_t next;			/* cached timer_next(), 0 = unknown */
	} wheel;		/* timer.c */
	/* the peer's CM extension goes up here (engine_set_cm_ext_hook) */
	void (*cm_ext_fn)(void *ctx, uint32_t peer, const uint8_t *ext, size_t len);
	void *cm_ext_ctx;
	/* whether a packet from another handle's address is the QP's peer's (engine_set_addr_hook) */
	bool (*addr_fn)(void *ctx, uint32_t peer, const struct engine_rx_meta *meta,
			const uint8_t *ext, size_t len);
	void *addr_ctx;
	/* connection lookup (cm.c): listeners by service id, QPs by (peer, peer_qpn) */
	struct qp **listen_hash, **conn_hash;
	struct peer_host **ph_hash;	/* peer hosts of connected QPs (peer.c) */
	uint32_t hash_mask;
	struct mr *mrs;
	uint32_t *mr_gen;
	uint32_t dsn_window;
	uint32_t seg_bytes;	/* window bytes charged per full data packet */
	/* CONNECT_REJ / DISCONNECT_ACK for QPs we do not have */
	struct ctl_reply {
		uint32_t peer, dst_qpn, src_qpn;
		uint16_t sport;
		uint8_t path_id;	/* the asking packet's: the answer goes back as it came */
		uint8_t op, reason;
		bool has_key, plain;	/* tag it with key (the REQ's); send unsealed */
		uint8_t key[MROC_CM_KEY_LEN];
	} ctl[16];
	uint32_t ctl_head, ctl_tail;
	/*
	 * CONNECT_REQs answered with a REP whose listener is not bound yet
	 * (cm_half.c): bound only when a packet proves the requester got the REP.
	 */
	struct cm_half {
		uint64_t deadline;		/* 0: a free entry */
		uint64_t service_id;
		uint32_t listener, gen;		/* the QP our REP named, its listen_gen */
		uint32_t peer, peer_qpn;	/* the requester: its handle, its QP */
		uint32_t isn_psn, isn_dsn;	/* ours, in the REP */
		uint32_t next;			/* hash chain by peer_qpn: index + 1, 0 = end */
		uint32_t lnext, lprev;		/* the listener's entries: index + 1, 0 = end */
		uint32_t tx_next;		/* the send queue: index + 1, 0 = end */
		uint16_t sport;			/* where the requester's last packet came from */
		uint8_t path_id;		/* ... and the path it went as (its header) */
		bool rep_sent;			/* a REP went: the next takes the REQ's port */
		bool rep_again;			/* more than one REP went: no round trip from rep_at */
		uint64_t rep_at;		/* when the first REP went */
		uint8_t due;			/* enum half_due: what to send it */
		bool queued;			/* in the send queue (kept when it is emptied) */
		bool busy;			/* its listener went to another requester */
		uint16_t ext_len;
		uint8_t *ext;			/* the REQ's port addresses (malloc'd) */
		uint8_t rx_key[MROC_CM_KEY_LEN];	/* ours ("token"), in the REP */
		struct mroc_cm_hdr req;		/* the REQ's numbers and key (ext: above) */
	} *half;
	uint32_t *half_hash;		/* nhalf buckets: index + 1 of a chain's first */
	uint32_t nhalf, half_next;	/* entries (a power of 2); where the next one goes */
	uint32_t half_mult;		/* the chains' hash multiplier: secret, odd */
	uint32_t half_qhead, half_qtail;	/* the send queue: index + 1, 0 = empty */
	uint32_t half_tagged;		/* "token": the entry whose key tags this packet, + 1 */
	bool rx_repeat;			/* this packet says nothing new (engine_rx_repeat) */
	/*
	 * engine_rx_begin .. engine_rx_end: ACKs held back, each the newest of
	 * its path in the batch so far, applied at the end (engine.c ack_hold).
	 */
	bool rx_batch;
	uint32_t nheld;
	struct held_ack {
		struct qp *qp;
		uint64_t at;			/* rx_arrival of the ACK */
		struct wire_pkt pkt;
	} held[ENGINE_HELD_ACKS];
	uint32_t listen_gen;		/* the last qp->listen_gen given */
	/*
	 * Services whose listener was bound lately (cm.c, by hash of the id):
	 * a REQ that finds none free then is told BUSY (ask again), not
	 * NO_LISTENER, while the application listens again.
	 */
	struct cm_served {
		uint64_t service_id, until;
	} served[256];
	/* host-wide RTT over every path's samples: the RTO's floor (path.c) */
	uint64_t host_srtt, host_rttvar;
	uint64_t tx_lag;		/* engine_tx_done: recent stamp-to-kick lag, decaying max */
	uint64_t tx_lag_at;		/* ... as of the last batch's kick */
	/* the largest RTT any ACK showed in this window and the last (path.c) */
	uint64_t rtt_max_cur, rtt_max_prev, rtt_max_until;
	/* receiver fair share */
	uint64_t hint_epoch, hint_epoch_end;
	uint32_t active_now, active_prev;	/* peer hosts that sent in this epoch, the last */
	/* when everything posted would have left at link_rate_bps (qp_tx.c: split or not) */
	uint64_t posted_until;
	/* the last RTT sample held up beyond its QP's best (qp_ack.c note_held, qp_tx.c) */
	uint64_t held_at;
	/* EC_LOST as of the last post, and the post that first saw it (qp_tx.c: split_quiet) */
	uint64_t split_lost, split_lost_at;
	/* when each port's packets so far would have left at its share of the link (qp_tx.c) */
	uint64_t port_free[MROC_MAX_PATHS];
	/*
	 * The QP whose newest message (msn lone_msn) was posted alone and is
	 * all it has to send: engine_tx may send it before the control packets
	 * owed, within ctl_ahead's allowance (engine.c lone_first).
	 */
	struct qp *lone;
	uint32_t lone_msn;
	uint32_t ctl_ahead;	/* data bytes x ports sent before control owed, since none was */
	struct engine_stats st;
	/* unpredictable numbers: ChaCha20 under rand_key, a block at a time (sec.c) */
	uint8_t sec_secret[16];
	uint8_t rand_key[32];
	uint64_t rand_ctr;
	uint32_t rand_pos;
	uint8_t rand_buf[256];
	uint32_t sec_tag_len;	/* MROC_TAG_LEN in "token", else 0 */
};

/* What the files call of each other. */
#include "calls.h"

#endif
