/* SPDX-License-Identifier: MIT */
/*
 * MetaRoCE wire format as mroc defines it (docs/PROTOCOL.md is the prose).
 *
 * Everything after the UDP header: a 16-byte common header, then one
 * opcode-specific header, then (data opcodes only) the payload.  Fields are
 * big-endian on the wire; the structs below are the *decoded*, host-order
 * view, and wire.c is the only place that knows byte offsets.  Every length
 * is checked before use: decode functions return -EBADMSG (bad field value)
 * or -EMSGSIZE (truncated) and never read past the buffer.
 */
#ifndef MROC_ENGINE_WIRE_H
#define MROC_ENGINE_WIRE_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MROC_UDP_PORT		4793	/* default UDP destination port */
#define MROC_WIRE_VERSION	1
#define MROC_MAX_PATHS		16
#define MROC_SACK_BITS		256
#define MROC_SACK_BYTES		(MROC_SACK_BITS / 8)
/* Receivers track this many DSNs above their cumulative DSN; senders stay inside. */
#define MROC_DSN_WINDOW		4096

/* On-wire sizes, pinned: changing one is a protocol version bump. */
#define MROC_HDR_LEN		16
#define MROC_DATA_HDR_LEN	44
#define MROC_ACK_HDR_LEN	64
#define MROC_CM_HDR_LEN		24
#define MROC_KA_LEN		8	/* a KEEPALIVE's number (peers before it: none) */
#define MROC_DATA_OVERHEAD	(MROC_HDR_LEN + MROC_DATA_HDR_LEN)

enum mroc_opcode {
	MROC_OP_WRITE		= 0x01,	/* RDMA WRITE segment */
	MROC_OP_WRITE_IMM	= 0x02,	/* RDMA WRITE with immediate (consumes a RECV) */
	MROC_OP_SEND		= 0x03,	/* SEND segment (consumes a RECV) */
	MROC_OP_SEND_IMM	= 0x04,	/* SEND with immediate */
	MROC_OP_READ_REQ	= 0x05,	/* RDMA READ request, no payload */
	MROC_OP_READ_RESP	= 0x06,	/* RDMA READ response segment */
	MROC_OP_FETCH_ADD	= 0x07,	/* atomic: payload = add (8 B, BE) + 8 zero bytes */
	MROC_OP_CMP_SWAP	= 0x08,	/* atomic: payload = compare (8 B) + swap (8 B), BE */
	MROC_OP_ATOMIC_RESP	= 0x09,	/* the target's original value (8 B, BE); key = request MSN */
	MROC_OP_ACK		= 0x10,	/* per-path ACK: SACK, echo, CE, hint, NAK */
	MROC_OP_KEEPALIVE	= 0x11,	/* common header, its number (mroc_ka_hdr); ACK_REQ asks for one back */
	MROC_OP_CONNECT_REQ	= 0x20,
	MROC_OP_CONNECT_REP	= 0x21,
	MROC_OP_CONNECT_REJ	= 0x22,
	MROC_OP_DISCONNECT	= 0x23,
	MROC_OP_DISCONNECT_ACK	= 0x24,
};

/* Common header flags. */
#define MROC_F_ACK_REQ	0x01	/* receiver: ACK this path now */
#define MROC_F_RETX	0x02	/* this segment was sent before (informational) */
#define MROC_F_SPLIT	0x04	/* data: the message is cut by the split rule (mroc_split_seg) */
#define MROC_F_ALL	(MROC_F_ACK_REQ | MROC_F_RETX | MROC_F_SPLIT)
/* Security "token": a MROC_TAG_LEN keyed tag ends the packet (defined only in that mode). */
#define MROC_F_TAG	0x40
/*
 * The frame layer's flags: they never reach the engine, which refuses them
 * like any other undefined flag (the layer that sets one takes it off).
 */
#define MROC_F_SEALED	0x20	/* security "aead": an AES-GCM trailer follows (daemon/dataplane/aead.c, PROTOCOL 1.2) */
/* With MROC_F_SEALED: the seal covers the IP addresses too (PROTOCOL 1.2; older sealers: without). */
#define MROC_F_SEALED_IP	0x10
#define MROC_F_ICRC	0x80	/* an ICRC trailer follows (daemon/backend/frame.c, PROTOCOL 1.1) */
/*
 * Security "aead": a stateless cookie (PROTOCOL 1.2).  With MROC_F_SEALED on a
 * CONNECT_REQ: the responder's cookie is sealed in it; without: a cookie reply.
 */
#define MROC_F_COOKIE	0x08
_Static_assert(!((MROC_F_SEALED | MROC_F_SEALED_IP | MROC_F_ICRC | MROC_F_COOKIE) &
		 (MROC_F_ALL | MROC_F_TAG)) &&
	       !(MROC_F_SEALED & MROC_F_ICRC) && !(MROC_F_SEALED_IP & (MROC_F_SEALED | MROC_F_ICRC)) &&
	       !(MROC_F_COOKIE & (MROC_F_SEALED | MROC_F_SEALED_IP | MROC_F_ICRC)),
	       "every common header flag its own bit");

/*
 * The common header of a packet (bytes after UDP) before wire_parse, for
 * the layers around the engine: its opcode (0, no opcode, when len cannot
 * hold one) and its flags (those need a whole common header).
 */
static inline uint8_t mroc_pkt_opcode(const uint8_t *pkt, size_t len)
{
	return len > 1 ? pkt[1] : 0;
}

static inline bool mroc_pkt_has_flag(const uint8_t *pkt, size_t len, uint8_t flag)
{
	return len >= MROC_HDR_LEN && (pkt[2] & flag);
}

/* pkt holds at least MROC_HDR_LEN bytes. */
static inline void mroc_pkt_set_flag(uint8_t *pkt, uint8_t flag)
{
	pkt[2] |= flag;
}

static inline void mroc_pkt_clear_flag(uint8_t *pkt, uint8_t flag)
{
	pkt[2] &= (uint8_t)~flag;
}

/*
 * Security modes (docs/PROTOCOL.md 1.2, 11a), announced in every CM header; both ends must
 * use the same one.  "token": each QP draws a random key, sends it in its CONNECT_REQ/REP
 * (MROC_CM_KEY_LEN bytes after the CM header), and every later packet to it ends in a
 * SipHash-2-4 tag under that key.  "aead": the frame layer seals every packet.
 */
enum mroc_sec {
	MROC_SEC_NONE	= 0,
	MROC_SEC_TOKEN	= 1,
	MROC_SEC_AEAD	= 2,
};
#define MROC_TAG_LEN		8
#define MROC_CM_KEY_LEN		16

/*
 * CM header byte 22 (`ext`), in CONNECT_REQ/REP: MROC_CM_F_EXT says an
 * extension follows the CM header (and the key): a 2-byte length, then that
 * many bytes, opaque to the transport (mrocd: the sender's port addresses,
 * daemon/net/portaddr.h).  Other bits are ignored; peers from before them send 0.
 */
#define MROC_CM_F_EXT		0x01
/*
 * In a CONNECT_REP: sent by a QP already bound to the requester (the REQ it
 * answers was sent again because the RTU's answer was lost).  The requester
 * is connected at once: the binding is what its RTU's answer would have
 * told it.  The REP is the bound QP's, tagged (token) or sealed (aead) under
 * the requester's own key as that answer would be.
 */
#define MROC_CM_F_BOUND		0x02
/*
 * In a CONNECT_REQ/REP with a split unit: bits 4-7 hold the sender's split
 * ports minus 1 (1..16, mroc_split_seg's `ports`).  Set by every sender
 * that takes split messages cut with the peer's ports; a split message goes
 * by its sender's ports only when the peer set it, else by npaths alone.
 */
#define MROC_CM_F_PORTS		0x04
#define MROC_CM_PORTS_SHIFT	4

/* The ext bits that announce ports (1..16), and the ports an ext byte announces (0: none). */
static inline uint8_t mroc_cm_ports_put(uint32_t ports)
{
	return ports ? (uint8_t)(MROC_CM_F_PORTS | (ports - 1) << MROC_CM_PORTS_SHIFT) : 0;
}

static inline uint32_t mroc_cm_ports_get(uint8_t ext_flags)
{
	return ext_flags & MROC_CM_F_PORTS ? (uint32_t)(ext_flags >> MROC_CM_PORTS_SHIFT) + 1 : 0;
}
#define MROC_CM_EXT_MAX		512	/* longer is malformed */

/* NAK codes carried in ACKs. */
enum mroc_nak {
	MROC_NAK_NONE		= 0,
	MROC_NAK_RNR		= 1,	/* no RECV posted: retry later */
	MROC_NAK_ACCESS		= 2,	/* bad rkey, access rights or bounds */
	MROC_NAK_INVALID	= 3,	/* message does not fit the RECV, bad request */
	MROC_NAK_PSN_SEQ	= 4,	/* RoCEv2 mode: out-of-sequence PSN, go back */
};

/* Reasons in CONNECT_REJ and DISCONNECT. */
enum mroc_cm_reason {
	MROC_CM_OK		= 0,
	MROC_CM_NO_LISTENER	= 1,	/* nobody listens on that service id */
	MROC_CM_BAD_PARAM	= 2,	/* mode/MTU/paths not acceptable */
	MROC_CM_NO_RESOURCES	= 3,
	MROC_CM_LOCAL_CLOSE	= 4,	/* the application closed the QP */
	MROC_CM_ERROR		= 5,	/* the QP went to the error state */
	MROC_CM_SECURITY	= 6,	/* CONNECT_REJ: the security modes differ */
	MROC_CM_BUSY		= 7,	/* CONNECT_REJ: the listener our REP named went to
					 * another requester: ask again (cm_half.c) */
};

enum mroc_mode {
	MROC_MODE_METAROCE	= 0,	/* multipath, SACK, selective retransmit */
	MROC_MODE_ROCEV2	= 1,	/* baseline: one path, in-order, Go-Back-N */
};

struct mroc_hdr {
	uint8_t version;
	uint8_t opcode;
	uint8_t flags;
	uint8_t path_id;	/* sender's path index, < MROC_MAX_PATHS */
	uint32_t dst_qpn;	/* 0 in CONNECT_REQ */
	uint32_t src_qpn;
	uint32_t ts;		/* sender clock, ns mod 2^32, echoed in ACKs */
};

/*
 * Data header for WRITE, WRITE_IMM, SEND, SEND_IMM, READ_REQ and READ_RESP.
 * Every segment carries everything needed to validate and place it alone.
 */
struct mroc_data_hdr {
	uint32_t psn;		/* path sequence number (per path, per direction) */
	uint32_t psn_floor;	/* lowest PSN of this path the sender still waits for */
	uint32_t dsn;		/* data sequence number (per QP, per direction) */
	uint32_t msn;		/* message sequence number (per QP, per direction) */
	uint32_t ssn;		/* RECV-consuming messages: index of the RECV to use */
	uint32_t offset;	/* byte offset of this segment in the message */
	uint32_t msg_len;	/* total message length in bytes */
	uint32_t key;		/* WRITE*, READ_REQ: rkey; READ_RESP: requester's READ msn */
	uint32_t imm;		/* *_IMM: immediate data */
	uint64_t raddr;		/* WRITE*, READ_REQ: byte offset of the message in the region */
};

struct mroc_ack_hdr {
	uint32_t cum_psn;	/* every PSN of this path below it is received or given up */
	uint32_t cum_dsn;	/* every DSN of the QP below it is received and placed */
	uint32_t ts_echo;	/* ts of the newest data packet on this path */
	uint32_t rcv_pkts;	/* data packets received on this path, cumulative */
	uint32_t ce_pkts;	/* of those, CE-marked, cumulative */
	uint32_t rate_hint;	/* receiver fair-share rate for this QP in Mbit/s, 0 = none */
	uint32_t nak_dsn;	/* DSN the newest NAK refers to */
	uint16_t nak_seq;	/* bumped for each new NAK, 0 = no NAK yet */
	uint8_t nak_code;	/* enum mroc_nak */
	uint8_t host_delay;	/* mroc_host_delay_enc: receiver host time ts_echo still holds */
	uint8_t sack[MROC_SACK_BYTES];	/* bit i (byte i/8, LSB first): PSN cum_psn+1+i received */
};

/*
 * A KEEPALIVE's number (PROTOCOL 3.4a): above every earlier one of its QP, so
 * that a receiver takes each keepalive once and a replayed one proves no
 * liveness (#24 item 6).  Peers from before it send the common header only
 * (has_seq false).
 */
struct mroc_ka_hdr {
	uint64_t seq;
	bool has_seq;
};

struct mroc_cm_hdr {
	uint64_t service_id;
	uint32_t isn_dsn;	/* first DSN the sender of this message will use */
	uint32_t isn_psn;	/* first PSN on each of its paths */
	uint16_t mtu;		/* largest payload it sends per packet */
	uint8_t npaths;		/* paths it sprays on */
	uint8_t mode;		/* enum mroc_mode */
	uint8_t reason;		/* enum mroc_cm_reason (REJ, DISCONNECT) */
	uint8_t sec;		/* enum mroc_sec of the sender (0 from peers before it) */
	uint8_t ext_flags;	/* MROC_CM_F_* (REQ/REP) */
	uint8_t split;		/* REQ/REP: the sender's split unit / 16 (0: none; mroc_split_seg) */
	bool has_key;		/* parse: the key extension follows (REQ/REP in "token") */
	uint8_t key[MROC_CM_KEY_LEN];	/* the sender's receive key */
	const uint8_t *ext;	/* parse: MROC_CM_F_EXT's bytes (inside the packet), else NULL */
	uint16_t ext_len;
};

/*
 * The split rule (docs/PROTOCOL.md 5.2): a message of len bytes that a
 * sender of npaths paths and split unit `unit` (bytes, a multiple of
 * MROC_SPLIT_ALIGN, announced in its CONNECT_REQ/REP) sends flagged
 * MROC_F_SPLIT is cut into segments of this many bytes (the last may be
 * shorter) instead of its mtu: one segment per unit, at most one per path,
 * of equal size rounded up to MROC_SPLIT_ALIGN.  A sender flags a message
 * only when this is below its mtu; both ends compute it the same way.
 *
 * `ports` (announced beside the unit, MROC_CM_F_PORTS; 0 from peers before
 * it): how many of the paths leave by ports of their own.  Up to that many
 * parts each cross the fabric beside the others; more put parts one behind
 * the other on a port, which pays only by pipelining the message through
 * the store-and-forward hops, and only when a part outweighs its headers:
 * so past `ports` parts each port carries the same number of parts, one
 * per MROC_SPLIT_SHARED bytes (or unit, if larger) of its share.  A 256 B
 * ring AllReduce step on 8 paths over 4 planes went in 8 parts of 32 B,
 * two a plane, each with its 124 B of headers and framing, behind a QP per
 * plane's 4 of 64 B (issue #23); now in 4 of 64 B, while 512 B and 4 KiB
 * messages still go in 8.  On one port with a unit of MROC_SPLIT_SHARED or
 * more the rule is the unit's alone.
 */
#define MROC_SPLIT_ALIGN	16
#define MROC_SPLIT_MAX		(255 * MROC_SPLIT_ALIGN)
/*
 * Two parts one behind the other on a port, each of L/2 bytes with H bytes of
 * headers and framing (~124: 60 of ours, 42 of Ethernet/IP/UDP, 24 of the
 * Ethernet preamble, FCS and gap), arrive over h store-and-forward hops
 * sooner than one part of L when L > 2H/(h - 1): 83 B over a leaf-spine
 * fabric's 4 hops, 248 B within a leaf.  Cluster simulator, 32 ranks: a
 * 512 B recursive-doubling step (128 B a plane) in 8 parts 17.83 us against
 * 17.92 in 4; a 256 B ring step (64 B a plane) in 4 parts 153.22 against
 * 154.82 in 8.
 */
#define MROC_SPLIT_SHARED	96

static inline uint32_t mroc_split_seg(uint32_t len, uint32_t mtu, uint32_t npaths, uint32_t unit,
				      uint32_t ports)
{
	uint32_t k, seg;

	if (!unit || !npaths || !len)
		return mtu;
	k = (uint32_t)(((uint64_t)len + unit - 1) / unit);
	if (k > npaths)
		k = npaths;
	if (ports && ports < k) {
		uint32_t share = unit > MROC_SPLIT_SHARED ? unit : MROC_SPLIT_SHARED;
		uint64_t per = ((uint64_t)len + (uint64_t)ports * share - 1) / ((uint64_t)ports * share);

		if (per > npaths / ports)	/* parts a port carries, >= 1 */
			per = npaths / ports;
		k = ports * (uint32_t)per;
	}
	seg = (uint32_t)(((uint64_t)len + k - 1) / k);
	seg = (seg + MROC_SPLIT_ALIGN - 1) / MROC_SPLIT_ALIGN * MROC_SPLIT_ALIGN;
	return seg < mtu ? seg : mtu;
}

/* Is this opcode one that carries a data header? */
static inline int mroc_op_is_data(uint8_t op)
{
	return op >= MROC_OP_WRITE && op <= MROC_OP_ATOMIC_RESP;
}

/* An atomic request (one segment of MROC_ATOMIC_REQ_LEN bytes, answered by ATOMIC_RESP). */
static inline int mroc_op_is_atomic(uint8_t op)
{
	return op == MROC_OP_FETCH_ADD || op == MROC_OP_CMP_SWAP;
}

/* Ops a responder answers with a message of its own (READ_RESP, ATOMIC_RESP). */
static inline int mroc_op_is_request(uint8_t op)
{
	return op == MROC_OP_READ_REQ || mroc_op_is_atomic(op);
}

#define MROC_ATOMIC_REQ_LEN	16
#define MROC_ATOMIC_RESP_LEN	8

static inline int mroc_op_is_cm(uint8_t op)
{
	return op >= MROC_OP_CONNECT_REQ && op <= MROC_OP_DISCONNECT_ACK;
}

/* Does a message of this opcode consume a RECV at the responder? */
static inline int mroc_op_uses_recv(uint8_t op)
{
	return op == MROC_OP_SEND || op == MROC_OP_SEND_IMM || op == MROC_OP_WRITE_IMM;
}

static inline int mroc_op_has_imm(uint8_t op)
{
	return op == MROC_OP_SEND_IMM || op == MROC_OP_WRITE_IMM;
}

/*
 * Encoders write exactly the header's on-wire length at buf and return it;
 * the caller guarantees the room (sizes are compile-time constants).  The
 * common and data headers' are here, inline: every data packet sent took
 * two calls and a header struct built to be copied out, ~65 instructions
 * (issue #22); the rest are in wire.c.
 */
static inline void wire_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline size_t wire_put_hdr(uint8_t *b, const struct mroc_hdr *h)
{
	b[0] = h->version;
	b[1] = h->opcode;
	b[2] = h->flags;
	b[3] = h->path_id;
	wire_be32(b + 4, h->dst_qpn);
	wire_be32(b + 8, h->src_qpn);
	wire_be32(b + 12, h->ts);
	return MROC_HDR_LEN;
}

static inline size_t wire_put_data(uint8_t *b, const struct mroc_data_hdr *d)
{
	wire_be32(b + 0, d->psn);
	wire_be32(b + 4, d->psn_floor);
	wire_be32(b + 8, d->dsn);
	wire_be32(b + 12, d->msn);
	wire_be32(b + 16, d->ssn);
	wire_be32(b + 20, d->offset);
	wire_be32(b + 24, d->msg_len);
	wire_be32(b + 28, d->key);
	wire_be32(b + 32, d->imm);
	wire_be32(b + 36, (uint32_t)(d->raddr >> 32));
	wire_be32(b + 40, (uint32_t)d->raddr);
	return MROC_DATA_HDR_LEN;
}
size_t wire_put_ack(uint8_t *buf, const struct mroc_ack_hdr *a);
size_t wire_put_cm(uint8_t *buf, const struct mroc_cm_hdr *c);
size_t wire_put_ka(uint8_t *buf, uint64_t seq);
/* The CM key extension (c->key, MROC_CM_KEY_LEN bytes) after the CM header. */
size_t wire_put_cm_key(uint8_t *buf, const struct mroc_cm_hdr *c);
/* The MROC_CM_F_EXT extension: its length, then ext; returns 2 + len. */
size_t wire_put_cm_ext(uint8_t *buf, const uint8_t *ext, uint16_t len);

/*
 * A decoded packet.  parse checks version, opcode, flags, path id and that
 * the buffer holds the opcode's header; for data opcodes also that the
 * payload is consistent (offset + payload <= msg_len, READ_REQ has none).
 */
struct wire_pkt {
	struct mroc_hdr hdr;
	union {
		struct mroc_data_hdr data;
		struct mroc_ack_hdr ack;
		struct mroc_cm_hdr cm;
		struct mroc_ka_hdr ka;
	};
	const uint8_t *payload;
	uint32_t payload_len;
};

/* Returns 0, -EMSGSIZE (truncated) or -EBADMSG (bad field); sets *why. */
enum wire_err {
	WIRE_OK = 0,
	WIRE_ERR_SHORT,		/* shorter than its headers */
	WIRE_ERR_VERSION,
	WIRE_ERR_OPCODE,
	WIRE_ERR_FLAGS,
	WIRE_ERR_PATH,
	WIRE_ERR_LENGTH,	/* payload inconsistent with offset/msg_len */
	WIRE_ERR__COUNT,
};

int wire_parse(const uint8_t *buf, size_t len, struct wire_pkt *pkt, enum wire_err *why);
/* The same, with more flags defined (MROC_F_TAG in security mode "token"). */
int wire_parse_flags(const uint8_t *buf, size_t len, uint8_t flags, struct wire_pkt *pkt,
		     enum wire_err *why);
const char *wire_err_name(enum wire_err e);

/*
 * ACK byte 31 (`host_delay`, PROTOCOL 3.3 and 7.4a): how long the echoed
 * packet was in the acknowledging host (from its arrival, the driver's
 * stamp, to the ACK) that ts_echo does not already take out, so that the
 * sender can keep host delay out of the delay signal (9.3a).  Code c:
 * 4c us below 128 (0 to 508 us), 512 + 16(c - 128) us up to 254 (2,528 us),
 * 255 more than that (MROC_HOST_DELAY_OVER: the sample says nothing of the
 * fabric).  Always rounded down, so the sender never takes out more than
 * the host held (a fabric RTT too small would lower the path's minimum for
 * good); the steps stay far below a delay target (50 us), which the
 * rounding of a log scale did not at a millisecond.
 */
#define MROC_HOST_DELAY_OVER	UINT64_MAX

static inline uint8_t mroc_host_delay_enc(uint64_t ns)
{
	uint64_t us = ns / 1000;

	if (us < 512)
		return (uint8_t)(us / 4);
	if (us < 512 + 127 * 16)
		return (uint8_t)(128 + (us - 512) / 16);
	return 255;
}

static inline uint64_t mroc_host_delay_dec(uint8_t c)
{
	if (c < 128)
		return c * 4000ULL;
	if (c < 255)
		return (512 + (uint64_t)(c - 128) * 16) * 1000;
	return MROC_HOST_DELAY_OVER;
}

/* Serial-number arithmetic for 32-bit PSN/DSN/MSN spaces (RFC 1982). */
static inline int32_t seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

static inline int seq_lt(uint32_t a, uint32_t b)
{
	return seq_diff(a, b) < 0;
}

static inline int seq_le(uint32_t a, uint32_t b)
{
	return seq_diff(a, b) <= 0;
}

#endif
