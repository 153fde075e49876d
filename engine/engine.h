/* SPDX-License-Identifier: MIT */
/*
 * The MetaRoCE transport engine: all protocol logic, and no I/O.
 *
 * The engine has no sockets, threads, clocks, printing or per-packet
 * allocation.  Its driver (mrocd over AF_XDP or UDP, the unit tests, the
 * simulator) feeds it packets (engine_rx), work (engine_post_*) and the
 * current time, and takes from it packets to send (engine_tx), completions
 * (engine_poll_cq) and the time it next wants to be called
 * (engine_next_deadline).  Time is a monotonic nanosecond count chosen by
 * the driver.
 *
 * The engine sees bytes after the UDP header only.  A peer is an opaque
 * handle chosen by the driver (it maps it to an IP address); a path's UDP
 * source port is chosen by the engine and handed to the driver with each
 * packet, so the driver can put it in the UDP header.
 *
 * All functions return 0 (or a count) on success and a negative errno on
 * failure.
 */
#ifndef MROC_ENGINE_H
#define MROC_ENGINE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct engine;
struct engine_rx_meta;

/* The largest rto_max_ns: 2^43 ns (2.4 hours), an IB local ACK timeout's largest (4.096 us x 2^31). */
#define ENGINE_RTO_MAX_NS	(1ULL << 43)

struct engine_config {
	uint32_t max_qps;		/* QP table size */
	uint32_t max_mrs;		/* memory region table size */
	uint32_t mtu;			/* payload bytes per data packet (64..8192) */
	uint64_t link_rate_bps;		/* this host's line rate; 0 = unknown */
	uint32_t ack_every;		/* ACK after this many data packets per path */
	uint64_t ack_delay_ns;		/* ... or after this long */
	uint64_t rto_init_ns;
	uint64_t rto_min_ns;
	uint64_t rto_max_ns;		/* at most ENGINE_RTO_MAX_NS */
	uint32_t dupthresh;		/* SACKed packets above a hole that make it a loss */
	uint32_t init_pwnd_pkts;	/* initial window per path, packets */
	uint32_t peer_window_pkts;	/* data packets in flight to one peer host, all QPs; 0 = no cap */
	uint64_t peer_host_delay_ns;	/* the hosts' wait (ACK host_delay + the ACK's own in our ring)
					 * above which that window is cut; 0 = the window opens to its cap and stays */
	uint32_t max_pwnd_pkts;		/* at most MROC_SACK_BITS */
	uint32_t loss_md_pkts;		/* losses within one RTT that count as congestion */
	uint64_t delay_target_ns;	/* queueing delay a path may add above its minimum RTT
					 * (at least that RTT again) before its window is cut;
					 * 0 = no delay signal, ECN and loss only */
	uint64_t hint_interval_ns;	/* receiver counts active senders over this */
	uint32_t max_retx;		/* transmissions of one segment before RETRY_EXC */
	uint32_t rnr_retry;		/* RNR retries (7 = forever, as in IB) */
	uint64_t rnr_delay_ns;
	uint64_t dead_peer_ns;		/* nothing from the peer this long: error */
	uint64_t keepalive_ns;		/* idle this long: ask the peer for a sign of life; 0 = off */
	uint32_t cm_retries;		/* CONNECT_REQ / DISCONNECT retransmissions */
	bool rate_hints;		/* send receiver fair-share hints */
	bool repath;			/* move paths off bad routes */
	bool merge_acks;		/* a path's ACKs in one receive batch applied as its newest
					 * (engine_rx_begin); off: each one */
	bool repath_spread;		/* ... and spread them while the QP is under 2/3 of
					 * link_rate_bps with every path congested: only
					 * where the link rate is the fabric's capacity */
	/*
	 * 0: a path's rate is trusted after 16 of its rounds and a slow one
	 * moves after 16 slow rounds in a row.  N > 0: a round counts as its
	 * length in N base RTTs of the QP (its paths' least minimum RTT), at
	 * least 1 and at most 4, so a queued path (long rounds) is judged as
	 * soon in time as a clear one (path.c round_weight).
	 */
	uint32_t repath_round_rtts;
	/*
	 * The cross-path loss rule (qp_ack.c rack_wait): false, a packet waits
	 * its path's sRTT + max(sRTT / 4, 4 RTTVAR); true, sRTT + sRTT / 4, the
	 * wait of the path's own time rule.  Under deep queues 4 RTTVAR can
	 * exceed an RTT, and a bulk flow's lost last packets waited it.
	 */
	bool rack_reo_srtt;
	/*
	 * MetaRoCE: a resend that is all but the last packet or two a QP with
	 * nothing new to send has in flight also goes as a copy on a path with
	 * nothing in flight (qp_tx_path.c hedge_tail): lost again, only the path's
	 * tail-loss probe, two of its sRTTs later, would find it.
	 */
	bool tail_hedge;
	/*
	 * MetaRoCE: a message shorter than npaths x mtu posted with nothing
	 * waiting to be sent (on any QP) is cut into one segment per split_unit
	 * bytes, at most one per path (MROC_F_SPLIT, docs/PROTOCOL.md 5.2), so
	 * it crosses the fabric on several paths at once.  Bytes, a multiple of
	 * MROC_SPLIT_ALIGN up to MROC_SPLIT_MAX; 0 = off.  Used only towards a
	 * peer that announced a unit too (older peers announce none).
	 */
	uint32_t split_unit;
	/*
	 * MetaRoCE, with split_unit: a message of at most dup_max bytes posted
	 * alone also sends a copy of each of its segments, right after them, on
	 * a path that does not carry that segment (when there is one), so that a
	 * segment waits only when both its paths are held up (docs/PROTOCOL.md
	 * 5.2).  0 = never.
	 */
	uint32_t dup_max;
	uint16_t sport_min;		/* source ports for paths come from this range */
	uint16_t sport_max;
	/*
	 * 0 or 1: any source port.  N > 1: the driver sends a packet out of port
	 * sport mod N (a host with N ports), so a QP's first N paths start on N
	 * different ports, path i on (i + QPN) mod N: every port carries a share.
	 * Repathing still picks any port.
	 */
	uint16_t sport_classes;
	/*
	 * 0: as sport_classes says.  N > 0 (a driver that places paths on ports
	 * by their id, as the simulator's planes: path i leaves by port i mod
	 * N): the parts of a split message then keep off each other's ports as
	 * they do with sport_classes (qp_tx_path.c pick_path_alone).
	 */
	uint16_t path_ports;
	/*
	 * The driver's threads (mrocd's workers, a port's socket each): a packet
	 * whose source port is in class sport mod home_mod, bit set in
	 * home_mask, leaves from this engine's own thread; any other is handed
	 * to another thread first, which may have to be woken.  A message of
	 * one packet with at most 3 segments queued behind it takes a live home
	 * path with room when there is one (qp_tx.c).  home_mod 0: no preference.
	 */
	uint16_t home_mod;		/* 0 .. 64 */
	uint64_t home_mask;
	uint64_t seed;			/* PRNG seed: ports and tie-breaks (prng.h) */
	/* Several engines, one per thread (owner.c): this one's QPNs are qpn_rem mod qpn_mod. */
	uint32_t qpn_mod;		/* 0 or 1: any QPN */
	uint32_t qpn_rem;
	uint8_t sec_mode;		/* enum mroc_sec; both ends must agree (sec.c) */
	/*
	 * The key (with seed) of every number an attacker must not predict:
	 * QPNs, initial PSNs and DSNs, rkeys, "token" keys (ChaCha20, sec.c).
	 * The driver draws it from the kernel (mrocd: getrandom); all zero =
	 * derived from seed (tests, simulator: reproducible runs).
	 */
	uint8_t sec_secret[16];
	/*
	 * Sent in every CONNECT_REQ and CONNECT_REP (MROC_CM_F_EXT), opaque to
	 * the engine: mrocd's port addresses.  0 = none.  What the peer sends
	 * reaches the hook of engine_set_cm_ext_hook.
	 */
	uint16_t cm_ext_len;		/* <= MROC_CM_EXT_MAX */
	uint8_t cm_ext[MROC_CM_EXT_MAX];
};

/*
 * owner.c: a random r moved into cfg's QPN class; and a packet's destination
 * QPN, with the service id of a CONNECT_REQ (whose dst_qpn is 0; else 0).
 * engine_pkt_dest returns 0 or -EBADMSG (too short, another version).
 */
uint32_t engine_qpn_fit(const struct engine_config *cfg, uint32_t r);
int engine_pkt_dest(const uint8_t *pkt, size_t len, uint32_t *dst_qpn, uint64_t *service_id);

/* Fill with defaults suited to a datacenter network (see engine_config.c). */
void engine_config_default(struct engine_config *cfg);
/* Returns 0 or -EINVAL; *why names the first bad field. */
int engine_config_check(const struct engine_config *cfg, const char **why);

struct engine *engine_create(const struct engine_config *cfg);
void engine_destroy(struct engine *eng);
/*
 * fn(ctx, peer, ext, len) for the extension (MROC_CM_F_EXT, maybe empty) of
 * a CONNECT_REQ or CONNECT_REP the engine accepted from peer and that
 * connected a QP (never a duplicate), once proven: at once for a REP and in
 * "aead"; for a REQ in "none" or "token", at the first packet to the QP it
 * connected (with its random QPN; tagged in "token"), which shows the
 * requester got our REP.  Called inside engine_rx.  NULL: not called.
 */
void engine_set_cm_ext_hook(struct engine *eng,
			    void (*fn)(void *ctx, uint32_t peer, const uint8_t *ext, size_t len),
			    void *ctx);

/*
 * fn(ctx, peer, meta, ext, len): is the packet's source (meta->src, the
 * driver's) one of peer's addresses, though the driver gave it the handle
 * meta->peer?  Asked when a packet's QP belongs to another peer than
 * meta->peer, after its tag (if any) checked; ext is the QP's extension
 * awaiting proof (see above; NULL if none).  NULL hook: never.
 */
void engine_set_addr_hook(struct engine *eng,
			  bool (*fn)(void *ctx, uint32_t peer, const struct engine_rx_meta *meta,
				     const uint8_t *ext, size_t len),
			  void *ctx);

/* ---- memory regions ---------------------------------------------------- */

#define ENGINE_ACCESS_LOCAL_WRITE	0x1
#define ENGINE_ACCESS_REMOTE_WRITE	0x2
#define ENGINE_ACCESS_REMOTE_READ	0x4
#define ENGINE_ACCESS_REMOTE_ATOMIC	0x8	/* FETCH_ADD / CMP_SWAP on 8-byte words */
#define ENGINE_ACCESS_ALL		0xf

/*
 * Register [addr, addr+len) of the driver's address space for protection
 * domain pd (64 bits: a driver never needs to reuse one).  Remote packets can only touch regions of their QP's pd, only
 * with the rights given, and only inside the region.  The rkey is random.
 */
int engine_mr_register(struct engine *eng, uint64_t pd, void *addr, uint64_t len,
		       uint32_t access, uint32_t *lkey, uint32_t *rkey);
int engine_mr_deregister(struct engine *eng, uint32_t lkey);

/* ---- queue pairs --------------------------------------------------------- */

struct engine_qp_attr {
	uint64_t pd;			/* protection domain: never reused by mrocd (64 bits) */
	uint8_t mode;			/* enum mroc_mode */
	uint8_t npaths;			/* 1..MROC_MAX_PATHS; forced to 1 in RoCEv2 mode */
	uint32_t sq_depth;		/* outstanding send WRs */
	uint32_t rq_depth;		/* posted RECVs */
	uint32_t max_rd;		/* not read: READs and atomics outstanding are at most
					 * MROC_MAX_RD (16) as requester, and as many answers
					 * are queued as responder (the rest wait undelivered) */
	uint64_t user;			/* opaque, returned in events */
	/* Tests: fix the initial sequence numbers instead of random ones. */
	bool fixed_isn;
	uint32_t isn_psn;
	uint32_t isn_dsn;
};

int engine_qp_create(struct engine *eng, const struct engine_qp_attr *attr, uint32_t *qpn);
/* Active side: send CONNECT_REQ to (peer, service_id); an event reports the result. */
int engine_qp_connect(struct engine *eng, uint32_t qpn, uint32_t peer, uint64_t service_id,
		      uint64_t now);
/* Passive side: the next CONNECT_REQ for service_id binds to this QP. */
int engine_qp_listen(struct engine *eng, uint32_t qpn, uint64_t service_id);
/* Tell the peer, flush outstanding work with ENGINE_WC_FLUSH_ERR. */
int engine_qp_disconnect(struct engine *eng, uint32_t qpn, uint64_t now);
/* Free the QP now (after disconnect, or on a dead client). */
int engine_qp_destroy(struct engine *eng, uint32_t qpn);

/* ---- work requests ----------------------------------------------------- */

enum engine_wr_opcode {
	ENGINE_WR_WRITE = 0,
	ENGINE_WR_WRITE_IMM,
	ENGINE_WR_SEND,
	ENGINE_WR_SEND_IMM,
	ENGINE_WR_READ,
	ENGINE_WR_ATOMIC_FETCH_ADD,	/* remote u64 += compare_add; lkey/laddr get the original */
	ENGINE_WR_ATOMIC_CMP_SWP,	/* remote u64 == compare_add ? swap : unchanged; ditto */
};

#define ENGINE_WR_SIGNALED	0x1	/* produce a completion on success */

struct engine_wr {
	uint64_t wr_id;
	uint8_t opcode;			/* enum engine_wr_opcode */
	uint8_t flags;			/* ENGINE_WR_* */
	uint32_t lkey;			/* local region (source, or READ destination) */
	uint64_t laddr;			/* offset in the local region */
	uint32_t len;
	uint32_t rkey;			/* WRITE*, READ */
	uint64_t raddr;			/* offset in the remote region */
	uint32_t imm;
	uint64_t compare_add;		/* atomics: the addend, or the value to compare with */
	uint64_t swap;			/* CMP_SWP: the new value */
};

struct engine_recv_wr {
	uint64_t wr_id;
	uint32_t lkey;
	uint64_t laddr;
	uint32_t len;
};

/* -ENOSPC when the queue is full, -ENOTCONN before the QP is connected. */
int engine_post_send(struct engine *eng, uint32_t qpn, const struct engine_wr *wr, uint64_t now);
int engine_post_recv(struct engine *eng, uint32_t qpn, const struct engine_recv_wr *wr);

/* ---- completions and events ------------------------------------------- */

enum engine_wc_status {
	ENGINE_WC_SUCCESS = 0,
	ENGINE_WC_LOC_LEN_ERR,		/* RECV too small for the SEND */
	ENGINE_WC_LOC_PROT_ERR,		/* bad lkey / local bounds / access */
	ENGINE_WC_REM_ACCESS_ERR,		/* peer refused rkey, access or bounds */
	ENGINE_WC_REM_INV_REQ_ERR,	/* peer: invalid request (SEND too long) */
	ENGINE_WC_RETRY_EXC_ERR,		/* segment lost too often, or peer dead */
	ENGINE_WC_RNR_RETRY_EXC_ERR,	/* peer posted no RECV in time */
	ENGINE_WC_FLUSH_ERR,		/* QP went to error / closed with work pending */
	ENGINE_WC_CONNECT_ERR,		/* rejected or no answer */
};

enum engine_wc_opcode {
	ENGINE_WC_WRITE = 0,
	ENGINE_WC_WRITE_IMM,
	ENGINE_WC_SEND,
	ENGINE_WC_SEND_IMM,
	ENGINE_WC_READ,
	ENGINE_WC_RECV,			/* SEND received */
	ENGINE_WC_RECV_RDMA_IMM,	/* WRITE_IMM received */
	ENGINE_WC_EV_CONNECTED,		/* event: QP is connected */
	ENGINE_WC_EV_DISCONNECTED,	/* event: peer or we closed; QP is idle */
	ENGINE_WC_EV_ERROR,		/* event: QP entered the error state */
	ENGINE_WC_ATOMIC_FETCH_ADD,	/* byte_len 8: the original value is at laddr */
	ENGINE_WC_ATOMIC_CMP_SWP,
};

#define ENGINE_WC_WITH_IMM	0x1

/*
 * Why a connect failed (engine_cqe.reason of ENGINE_WC_CONNECT_ERR): the
 * peer's own CM reason when it said one (enum mroc_cm_reason: no listener,
 * bad parameters, security modes that differ, busy ...), or no answer at all.
 * An application can then give up at once where asking again cannot help.
 */
#define ENGINE_CONN_NO_ANSWER	0x40	/* not on the wire: every try timed out */

struct engine_cqe {
	uint64_t wr_id;			/* events: the QP's attr.user */
	uint32_t qpn;
	uint8_t opcode;			/* enum engine_wc_opcode */
	uint8_t status;			/* enum engine_wc_status */
	uint8_t flags;			/* ENGINE_WC_* */
	uint8_t reason;			/* ENGINE_WC_CONNECT_ERR: why (ENGINE_CONN_*) */
	uint32_t byte_len;
	uint32_t imm;
};

/* Take up to max completions, any QP, each QP's in order.  Returns count. */
int engine_poll_cq(struct engine *eng, struct engine_cqe *out, int max);

/* ---- packets ------------------------------------------------------------ */

struct engine_rx_meta {
	uint32_t peer;			/* driver's handle for the source address, or
					 * ENGINE_PEER_NONE (unknown: only a QP's peer's
					 * address, engine_set_addr_hook, is taken) */
	const void *src;		/* the driver's source address, for that hook */
	uint16_t sport;			/* UDP source port */
	bool ce;			/* IP ECN field was Congestion Experienced */
	uint8_t sealed;			/* enum engine_rx_sealed: what the frame layer checked */
	/*
	 * When the packet reached the host, on the engine's clock: the
	 * driver's stamp (mrocd: the XDP program's, before the packet waited
	 * in a receive ring for the worker).  0 (unknown), or later than now:
	 * now.  Host delay is kept out of the delay signal from there
	 * (PROTOCOL 9.3a); timers still count from now.
	 */
	uint64_t arrival;
};

#define ENGINE_PEER_NONE	UINT32_MAX

/* In "aead" the driver's frame layer opens sealed packets; the engine hears how it went. */
enum engine_rx_sealed {
	ENGINE_RX_PLAIN = 0,		/* no AEAD trailer */
	ENGINE_RX_SEALED,		/* AEAD trailer verified and removed, payload decrypted */
	ENGINE_RX_UNVERIFIED,		/* AEAD trailer removed unchecked (no keys here): only a
					 * CONNECT_REQ is looked at, to refuse it */
};

/*
 * Process one received packet (bytes after the UDP header).  Bad packets are
 * counted in engine_stats and dropped; the return value is 0 or a negative
 * errno saying why it was dropped (engine_rx_heard tells drivers which).
 */
int engine_rx(struct engine *eng, uint64_t now, const uint8_t *pkt, size_t len,
	      const struct engine_rx_meta *meta);

/*
 * A receive batch (optional): the driver calls engine_rx_begin, then
 * engine_rx for each packet it took at once (one now), then engine_rx_end
 * with the same now, before any other engine call.  In between, an ACK
 * that passed every check is held back while a later ACK of its path in
 * the batch may say all it says (every PSN and DSN it acknowledges, its
 * packet counts and NAK: ACKs are cumulative); the newest of each path is
 * applied at engine_rx_end, as one ACK (counted rx_ack_merged).  A sender
 * reads tens of ACKs a receive batch, ~11 a path (issue #22); what the
 * older ones alone carry is their RTT sample and host delay, older than
 * the newest's.  engine_rx returns 0 for a held ACK; engine_rx_repeat
 * says whether it had news.  Only with engine_config.merge_acks; without
 * it, or without engine_rx_begin, each packet is applied in engine_rx.
 */
void engine_rx_begin(struct engine *eng);
void engine_rx_end(struct engine *eng, uint64_t now);

/*
 * engine_rx's result ret says the packet was its peer's and passed every
 * check: taken (0), or a duplicate (-EALREADY: data it already has, which
 * it acknowledges on the duplicate's own source port).  The way such a
 * packet came in works, and the ACK it is owed should go back that way: a
 * sender's resends after its ACKs were lost (a port that went down under
 * them) are all duplicates, and a driver that heard only of new data sent
 * their ACKs by the old way, lost too, until the path moved by chance
 * (tests/unit/test_engine_rx.c: test_duplicate_is_heard).
 */
static inline bool engine_rx_heard(int ret)
{
	return !ret || ret == -EALREADY;
}

/*
 * Whether the packet engine_rx just took (engine_rx_heard) told nothing its
 * peer sent since the last one that did: a PSN its path already had (a
 * replay, the network's copy, a RoCEv2 go-back-N resend) or an ACK without
 * news (docs/PROTOCOL.md 11.7).  Its answer is owed the way it came, but it
 * is no sign that the way works: in "aead" an on-path host's replays of a
 * peer's old packets, on a port it cuts, kept that port counted up (#24).
 */
bool engine_rx_repeat(const struct engine *eng);

struct engine_txbuf {
	uint8_t *data;			/* in: where to write the packet */
	uint32_t cap;			/* in: room at data (>= mtu + MROC_DATA_OVERHEAD) */
	uint32_t len;			/* out: packet length */
	uint32_t peer;			/* out: destination */
	uint16_t sport;			/* out: UDP source port (the path) */
	uint8_t path_id;		/* out: path index (drivers with a port per plane) */
	bool ect;			/* out: send ECN-capable (data), or not (control) */
	bool plain;			/* out: do not seal it ("aead": a refusal to a peer
					 * that cannot open sealed packets) */
	bool echo;			/* out: an answer on the peer's path (ACK, keepalive
					 * answer, CM refusal): sport is the peer's, not one
					 * of ours, so it goes back the way that path came */
};

/*
 * Produce up to n packets to send now.  Returns how many were written.
 * Buffers past the one after the last written are left as given (a
 * driver may offer a whole ring's worth for an ACK or two).
 */
int engine_tx(struct engine *eng, uint64_t now, struct engine_txbuf *bufs, int n);

/*
 * Optional: how many buffers to offer engine_tx now, at most max; 0 when
 * it would send nothing.  max while any QP has data to send (or a CM
 * reply waits); else one per QP that may owe a control packet (an ACK, a
 * keepalive), plus one, so an estimate that holds leaves the batch short.
 * A receiver sends an ACK or two a receive batch, and a driver that built
 * 64 buffers for them and put back the rest paid ~100 instructions a data
 * packet (issue #22).  An estimate: a batch engine_tx fills, the driver
 * follows with another, as after any full batch.
 */
int engine_tx_want(const struct engine *eng, int max);

/*
 * The engine's own counts checked against its scoreboards (every path's
 * bytes in flight, each peer host's window and blocked list): 0, or
 * -EFAULT with what disagrees in why.  It walks every QP and packet in
 * flight: for tests and debug builds, never the data path.
 */
int engine_check(struct engine *eng, char *why, size_t len);

/*
 * Optional: what engine_tx stamped with `stamped` had left the host by
 * `sent` (the driver's clock after its kick).  A batch's packets all carry
 * the time it began; building and kicking them takes tens of microseconds,
 * more when the worker loses its CPU in between, and that wait is in every
 * RTT sample but is the host's.  The delay signal allows for it (a decaying
 * maximum of these lags, PROTOCOL 9.3a).
 */
void engine_tx_done(struct engine *eng, uint64_t stamped, uint64_t sent);

/*
 * A host of N ports (cfg.sport_classes = N > 1: a packet leaves by port
 * sport mod N, or by another while that one is down): port came back up
 * after it was down.  Paths that moved while it was down drew their
 * source ports at random, and nothing else moves a path onto a port for
 * being idle, so the port could stay without its share for good.  Every
 * connected QP moves paths onto it until it has npaths / N of them
 * (ENGINE_REPATH_PORT, windows kept); the paths of that port learn their
 * minimum RTT anew (it was the other port's).  Ignores a port >= N.
 */
void engine_port_up(struct engine *eng, unsigned port, uint64_t now);

/* Run timers (RTO, delayed ACK, pacing, CM retries).  Call when due. */
void engine_advance(struct engine *eng, uint64_t now);

/*
 * Earliest time the engine wants engine_advance/engine_tx to run, or
 * UINT64_MAX.  After rx, posts or timers, drivers call engine_tx until it
 * returns less than asked, then sleep until this deadline or the next event.
 */
uint64_t engine_next_deadline(struct engine *eng);

/* ---- statistics ---------------------------------------------------------- */

enum engine_counter {
	EC_RX_PKTS = 0,
	EC_RX_MALFORMED,		/* wire_parse failed (see rx_malformed[]) */
	EC_RX_UNKNOWN_QP,
	EC_RX_BAD_PEER,			/* QP exists but packet is not from its peer */
	EC_RX_BAD_STATE,		/* e.g. data for a QP that is not connected */
	EC_RX_DUP,			/* DSN already placed */
	EC_RX_OUT_OF_WINDOW,		/* PSN/DSN/MSN beyond the receive window */
	EC_RX_ACCESS_ERR,		/* bad rkey / pd / access rights */
	EC_RX_BOUNDS_ERR,		/* write/read outside the region or RECV */
	EC_RX_RNR,			/* SEND/WRITE_IMM without a posted RECV */
	EC_RX_SEQ_ERR,			/* RoCEv2 mode: out-of-order PSN dropped */
	EC_RX_BYTES_PLACED,
	EC_TX_PKTS,
	EC_TX_DATA,
	EC_TX_RETX,
	EC_TX_ACKS,
	EC_TX_CM,
	EC_TX_KEEPALIVE,
	EC_RTO,
	EC_REPATH,
	EC_LOST,
	EC_CE,
	EC_KA_RETRY,			/* keepalive unanswered: asked again on another path */
	EC_RTO_SPURIOUS,		/* an RTO the next ACK showed needless (it echoed an older send) */
	EC_RX_BAD_TAG,			/* "token": missing or wrong tag; "aead": not sealed */
	EC_CM_SEC_MISMATCH,		/* CONNECT refused (or refused us): other security mode */
	EC_LOST_RACK,			/* of EC_LOST: found across paths by time (qp_ack.c) */
	EC_RX_BAD_ECHO,			/* ACK echoing no send time of ours: no RTT sample (path.c) */
	EC_CM_EARLY_RETRY,		/* CONNECT_REQ repeated at once: the peer sent as if connected */
	/* of EC_REPATH, by reason (enum engine_repath_why) */
	EC_REPATH_TIMEOUT,
	EC_REPATH_LOSS,
	EC_REPATH_CE,
	EC_REPATH_SLOW,
	EC_REPATH_KEEPALIVE,
	EC_REPATH_SPREAD,
	EC_REPATH_EXPLORE,
	EC_REPATH_PORT,
	EC_RTO_UNDONE,			/* of EC_RTO_SPURIOUS: undone, window and port back (path.c) */
	EC_RTO_UNLOST,			/* DSNs an undone RTO had declared lost, found delivered (qp_ack.c) */
	EC_REPATH_BACK,			/* timeout moves taken back: the new port delivered less (path.c) */
	EC_REPATH_BACK_HELD,		/* ... that were not: the port left showed no life after the silence */
	EC_CM_HALF_OPEN,		/* CONNECT_REQs answered, the listener bound only once proven */
	EC_CM_HALF_DROPPED,		/* of those, never proven (expired, pushed out, refused, lost) */
	EC_CM_BUSY,			/* REJ BUSY sent: listener taken by another requester, or none free lately */
	EC_CM_BUSY_RETRY,		/* our REQ sent again after a CONNECT_REJ BUSY */
	EC_RX_STAMPED,			/* packets with the driver's arrival stamp (engine_rx_meta) */
	EC_RX_WAIT_NS,			/* ... the time they waited from it to engine_rx, summed */
	EC_ACK_HOST_NS,			/* host time peers' ACKs said their echo held (RTT samples), summed */
	EC_RX_STALE_KA,			/* keepalive not above the last one taken (a replay, or
					 * overtaken), or without a number in "aead": no sign of life */
	EC_RTO_UNSAMPLED,		/* of EC_RTO: on a path with no RTT sample of its own yet (path.c) */
	EC_TX_STRANDED,			/* QPs found with work to send and nothing to wake them: woken (qp_timers) */
	EC_RTO_PEER_SILENT,		/* of EC_RTO: nothing came from the peer host (any QP) since the timer was armed (path.c) */
	EC_RTO_SILENT_ALONE,		/* of EC_RTO: a path without an RTT sample, silent while its siblings answered, after rto_min (qp_ack.c) */
	EC_TX_DUP,			/* of EC_TX_DATA: a lone small message's second copies (dup_max) */
	EC_RTT_HELD,			/* lone messages' RTTs above their QP's best by an mtu packet and more (qp_ack.c) */
	EC_FLIGHT_SETTLED,		/* packets let go at their path's timer: their DSN was acknowledged via another path (qp_ack.c) */
	EC_RX_SACK_UNSENT,		/* ACKs whose SACK claims a PSN never sent on the path: those bits ignored */
	EC_REPATH_SLOW_BACK,		/* "slow" moves taken back: the new port gave the path no more (path.c) */
	/*
	 * Why sending stopped (issue #22: a daemon that waits while QPs have work).
	 * Per data packet they tell a window-limited sender from a starved one.
	 */
	EC_TX_PEER_BLOCKED,		/* QPs parked: their peer host's window was full (peer.c) */
	EC_TX_RUN_CUT,			/* ... of those, in the middle of a run (its path's ACK then waits for ack_delay) */
	EC_TX_PATH_BLOCKED,		/* QPs with a segment to send and no path with window room */
	EC_TX_PACED,			/* QPs held by their pacing gap */
	EC_TX_BATCH_FULL,		/* engine_tx calls that filled every buffer offered: the driver's batch (or engine_tx_want's estimate) stopped it */
	EC_TX_ACK_DELAYED,		/* of EC_TX_ACKS: sent at ack_delay's end, before ack_every packets came */
	EC_CM_REQ_AGAIN,		/* our REQ sent again: our RTU went unanswered (our entry may be gone) */
	EC_TX_PEER_KICKED,		/* blocked QPs given a turn: room in their peer's window for a whole run (peer.c) */
	EC_TX_PEER_GRANT_LEFT,		/* ... turns that ended with room granted and not used (passed on) */
	EC_REPATH_EXPLORE_BACK,		/* "explore" moves taken back: the new port gave the path no more (path.c) */
	EC_REPATH_LOOK,			/* looks before a "slow", "ce", "spread" or "explore" move: packets by the port it would take (path.c) */
	EC_REPATH_LOOK_BUSY,		/* ... that found a queue on that route, or no answer: no move */
	EC_TX_PEER_RESCUED,		/* parked QPs whose host had nothing in flight nor granted: kicked by their timer (peer.c) */
	EC_PEER_HOST_CUT,		/* peer windows cut: a round's ACKs all waited in the hosts over peer_host_delay (peer.c) */
	EC_REPATH_SPREAD_BACK,		/* "spread" moves taken back: the QP delivered no more (path.c) */
	EC_CM_COPY,			/* our REQ or RTU sent again within its try (up to three times): nothing came back by a quarter, half, three quarters of its wait (cm.c) */
	EC_RX_ACK_MERGED,		/* ACKs a later ACK of their path in the same receive batch said all of (engine_rx_begin) */
	EC_PEER_HOST_UNDO,		/* peer_host_cut's cuts undone: two rounds later the waits had not fallen (peer.c cut_paid) */
	EC_TX_DATA_FIRST,		/* of EC_TX_DATA: a small message posted alone, sent before the control packets owed (engine.c lone_first) */
	EC_LOST_RACK_LATE,		/* of EC_LOST_RACK: ACKs that showed such a packet delivered, only late: their echo is an RTT sample (qp_ack.c rack_late) */
	EC_TX_SCOUT,			/* probes a timed-out path of a QP with no live path sent by a port of their own (path_repath.c path_scout) */
	EC_SCOUT_MOVE,			/* paths moved to the port of a scout an ACK echoed (path_repath.c path_scout_answered) */
	EC_REORDER,			/* holes of a path's own route filled after a later PSN was acknowledged: the route reorders (qp_ack.c note_reorder) */
	EC_CM_TWIN,			/* our REQ or RTU sent twice at once, by two ports, a try after the first (cm_tx.c twin_owed) */
	EC_RX_MSG_MISMATCH,		/* a segment whose opcode, msg_len, key, raddr, ssn, imm or first DSN is not its message's (qp_rx.c msg_agrees): NAK INVALID */
	EC_RX_ANSWER_TIMEOUT,		/* a READ or atomic acknowledged, its answer not begun or stalled for a backed-off RTO (qp_timers.c answer_timer); past max_retx: RETRY_EXC */
	EC__COUNT,
};

struct engine_stats {
	uint64_t c[EC__COUNT];
	uint64_t rx_malformed[WIRE_ERR__COUNT];
};

const char *engine_counter_name(enum engine_counter c);
void engine_get_stats(const struct engine *eng, struct engine_stats *out);
/* QPs whose work nothing would have sent, found by their timers (tx_stranded + tx_peer_rescued): 0 but for a bug. */
uint64_t engine_rescued(const struct engine *eng);

enum engine_qp_state {
	ENGINE_QPS_IDLE = 0,
	ENGINE_QPS_LISTEN,
	ENGINE_QPS_CONNECTING,
	ENGINE_QPS_CONNECTED,
	ENGINE_QPS_CLOSING,
	ENGINE_QPS_ERROR,
};

/* Why a path last moved to a new source port (engine_repath_name() names them). */
enum engine_repath_why {
	ENGINE_REPATH_NONE = 0,		/* never moved */
	ENGINE_REPATH_TIMEOUT,		/* RTO */
	ENGINE_REPATH_LOSS,		/* loss far above its siblings' */
	ENGINE_REPATH_CE,		/* CE marks far above its siblings' */
	ENGINE_REPATH_SLOW,		/* congested while delivering < 2/3 of its siblings */
	ENGINE_REPATH_KEEPALIVE,	/* idle, and a keepalive on it went unanswered */
	ENGINE_REPATH_SPREAD,		/* every path congested, the QP under 2/3 of the link rate */
	ENGINE_REPATH_EXPLORE,		/* the QP's slowest path, now and then: a route may be free */
	ENGINE_REPATH_PORT,		/* onto a port that came back up (engine_port_up) */
	ENGINE_REPATH__COUNT,
};
const char *engine_repath_name(enum engine_repath_why why);

struct engine_path_info {
	uint8_t path_id;
	uint16_t sport;
	uint16_t prev_sport;		/* before the last move (0: never moved) */
	uint8_t repath_why;		/* enum engine_repath_why of the last move */
	uint64_t repath_at_ns;		/* engine time of the last move */
	uint64_t srtt_ns, rttvar_ns, min_rtt_ns, rto_ns;
	/*
	 * What the path's timer waits now (path_rto): rto_ns raised to the
	 * host's floor and 5/4 of the host's RTT maximum, doubled per backoff,
	 * at most rto_max.  rto_ns alone hid why a path's timer was long.
	 */
	uint64_t rto_timer_ns;
	uint32_t pwnd_bytes, inflight_bytes;
	uint64_t sent, retx, lost, ce, acked, timeouts, repaths;
	uint32_t dctcp_alpha_ppm;	/* CE fraction estimate, parts per million */
	uint64_t rate_bps;		/* delivered rate, smoothed per RTT round */
	bool timed_out;			/* carries only probes until an ACK revives it */
	uint32_t backoff;		/* consecutive RTOs without progress */
	uint64_t delay_cuts;		/* rounds whose queueing delay cut the window */
	uint64_t delay_rebases;		/* delay that cuts did not lower, taken as the base RTT */
	uint64_t loss_cuts;		/* loss bursts that halved the window */
	uint64_t loss_trims;		/* loss bursts taken as random loss: 1/8 cut */
	uint64_t repaths_why[ENGINE_REPATH__COUNT];	/* moves, by reason */
};

struct engine_qp_info {
	uint32_t qpn, peer, peer_qpn;
	uint8_t state, mode, npaths;
	uint64_t qwnd_bytes;
	uint64_t pacing_bps;		/* 0 = unpaced */
	uint32_t rate_hint_mbps;	/* from the peer, 0 = none */
	uint64_t tx_bytes, rx_bytes, tx_msgs, rx_msgs;
	uint32_t sq_outstanding, rq_posted;
	uint32_t snd_una, snd_nxt;	/* peer's cumulative DSN, next new DSN */
	uint32_t rcv_cum;		/* our cumulative DSN of the peer's data */
	uint32_t msgs_outstanding;	/* messages not yet completed (incl. READ responses) */
	uint64_t errors;
	uint64_t mem_bytes;		/* the engine's memory for this QP, rings included */
	uint32_t inflight_pkts;		/* its data packets in flight, in its peer's window */
	uint32_t peer_inflight_pkts;	/* all QPs' to the same peer (peer_window_pkts caps it) */
	uint32_t peer_window_pkts;	/* what that window is now (0: no peer state) */
	bool peer_blocked;		/* waiting for room in that window */
	uint8_t err_status;		/* state ERROR: its event's status (engine_qp_error_text) */
	uint8_t err_why;		/* ... and a failed connect's reason (ENGINE_CONN_*) */
};

/* Why a QP is in ERROR, in words, from engine_qp_info's err_status and err_why. */
const char *engine_qp_error_text(uint8_t err_status, uint8_t err_why);
int engine_qp_info(const struct engine *eng, uint32_t qpn, struct engine_qp_info *out);
/* QPNs of every QP, up to max; returns how many there are in all. */
int engine_qp_list(const struct engine *eng, uint32_t *qpns, int max);
int engine_path_info(const struct engine *eng, uint32_t qpn, unsigned path,
		     struct engine_path_info *out);

#endif
