// SPDX-License-Identifier: MIT
/* Wire encode/decode: the only file that knows byte offsets. */
#include <errno.h>
#include <string.h>

#include "wire.h"

static_assert(MROC_HDR_LEN == 16, "common header is 16 bytes");
static_assert(MROC_DATA_HDR_LEN == 9 * 4 + 8, "data header is 44 bytes");
static_assert(MROC_ACK_HDR_LEN == 7 * 4 + 2 + 1 + 1 + MROC_SACK_BYTES, "ACK header is 64 bytes");
static_assert(MROC_CM_HDR_LEN == 8 + 4 + 4 + 2 + 1 + 1 + 1 + 3, "CM header is 24 bytes");
static_assert(MROC_MAX_PATHS <= 256, "path id is one byte");

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}


static inline void put64(uint8_t *p, uint64_t v)
{
	wire_be32(p, v >> 32);
	wire_be32(p + 4, (uint32_t)v);
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

size_t wire_put_ack(uint8_t *b, const struct mroc_ack_hdr *a)
{
	wire_be32(b + 0, a->cum_psn);
	wire_be32(b + 4, a->cum_dsn);
	wire_be32(b + 8, a->ts_echo);
	wire_be32(b + 12, a->rcv_pkts);
	wire_be32(b + 16, a->ce_pkts);
	wire_be32(b + 20, a->rate_hint);
	wire_be32(b + 24, a->nak_dsn);
	put16(b + 28, a->nak_seq);
	b[30] = a->nak_code;
	b[31] = a->host_delay;
	memcpy(b + 32, a->sack, MROC_SACK_BYTES);
	return MROC_ACK_HDR_LEN;
}

size_t wire_put_ka(uint8_t *b, uint64_t seq)
{
	put64(b, seq);
	return MROC_KA_LEN;
}

size_t wire_put_cm(uint8_t *b, const struct mroc_cm_hdr *c)
{
	put64(b + 0, c->service_id);
	wire_be32(b + 8, c->isn_dsn);
	wire_be32(b + 12, c->isn_psn);
	put16(b + 16, c->mtu);
	b[18] = c->npaths;
	b[19] = c->mode;
	b[20] = c->reason;
	b[21] = c->sec;
	b[22] = c->ext_flags;
	b[23] = c->split;
	return MROC_CM_HDR_LEN;
}

size_t wire_put_cm_key(uint8_t *b, const struct mroc_cm_hdr *c)
{
	memcpy(b, c->key, MROC_CM_KEY_LEN);
	return MROC_CM_KEY_LEN;
}

size_t wire_put_cm_ext(uint8_t *b, const uint8_t *ext, uint16_t len)
{
	put16(b, len);
	memcpy(b + 2, ext, len);
	return 2 + (size_t)len;
}

static void get_data(const uint8_t *b, struct mroc_data_hdr *d)
{
	d->psn = get32(b + 0);
	d->psn_floor = get32(b + 4);
	d->dsn = get32(b + 8);
	d->msn = get32(b + 12);
	d->ssn = get32(b + 16);
	d->offset = get32(b + 20);
	d->msg_len = get32(b + 24);
	d->key = get32(b + 28);
	d->imm = get32(b + 32);
	d->raddr = get64(b + 36);
}

static void get_ack(const uint8_t *b, struct mroc_ack_hdr *a)
{
	a->cum_psn = get32(b + 0);
	a->cum_dsn = get32(b + 4);
	a->ts_echo = get32(b + 8);
	a->rcv_pkts = get32(b + 12);
	a->ce_pkts = get32(b + 16);
	a->rate_hint = get32(b + 20);
	a->nak_dsn = get32(b + 24);
	a->nak_seq = get16(b + 28);
	a->nak_code = b[30];
	a->host_delay = b[31];
	memcpy(a->sack, b + 32, MROC_SACK_BYTES);
}

static void get_cm(const uint8_t *b, struct mroc_cm_hdr *c)
{
	c->service_id = get64(b + 0);
	c->isn_dsn = get32(b + 8);
	c->isn_psn = get32(b + 12);
	c->mtu = get16(b + 16);
	c->npaths = b[18];
	c->mode = b[19];
	c->reason = b[20];
	c->sec = b[21];
	c->ext_flags = b[22];
	c->split = b[23];
}

static int fail(enum wire_err *why, enum wire_err e)
{
	if (why)
		*why = e;
	return e == WIRE_ERR_SHORT ? -EMSGSIZE : -EBADMSG;
}

static int parse_data(const uint8_t *buf, size_t len, struct wire_pkt *pkt, enum wire_err *why)
{
	struct mroc_data_hdr *d = &pkt->data;
	uint64_t end;

	if (len < MROC_DATA_OVERHEAD)
		return fail(why, WIRE_ERR_SHORT);
	get_data(buf + MROC_HDR_LEN, d);
	pkt->payload = buf + MROC_DATA_OVERHEAD;
	pkt->payload_len = (uint32_t)(len - MROC_DATA_OVERHEAD);
	if (len - MROC_DATA_OVERHEAD > UINT32_MAX)
		return fail(why, WIRE_ERR_LENGTH);
	if (pkt->hdr.opcode == MROC_OP_READ_REQ) {
		/* A request names a length; it never carries bytes. */
		if (pkt->payload_len || d->offset)
			return fail(why, WIRE_ERR_LENGTH);
		return 0;
	}
	/* Atomics are one segment of a fixed size. */
	if ((mroc_op_is_atomic(pkt->hdr.opcode) && (d->msg_len != MROC_ATOMIC_REQ_LEN ||
						    pkt->payload_len != MROC_ATOMIC_REQ_LEN)) ||
	    (pkt->hdr.opcode == MROC_OP_ATOMIC_RESP && (d->msg_len != MROC_ATOMIC_RESP_LEN ||
							pkt->payload_len != MROC_ATOMIC_RESP_LEN)))
		return fail(why, WIRE_ERR_LENGTH);
	end = (uint64_t)d->offset + pkt->payload_len;
	if (end > d->msg_len)
		return fail(why, WIRE_ERR_LENGTH);
	/* Only a zero-length message may have an empty segment. */
	if (!pkt->payload_len && d->msg_len)
		return fail(why, WIRE_ERR_LENGTH);
	return 0;
}

/* The extension of a CONNECT_REQ/REP that says it has one (after the key, if any). */
static int parse_cm_ext(const uint8_t *buf, size_t len, struct wire_pkt *pkt, enum wire_err *why)
{
	size_t off = MROC_HDR_LEN + MROC_CM_HDR_LEN + (pkt->cm.has_key ? MROC_CM_KEY_LEN : 0);
	uint16_t n;

	pkt->cm.ext = NULL;
	pkt->cm.ext_len = 0;
	if (!(pkt->cm.ext_flags & MROC_CM_F_EXT) || (pkt->hdr.opcode != MROC_OP_CONNECT_REQ &&
						      pkt->hdr.opcode != MROC_OP_CONNECT_REP))
		return 0;
	if (len < off + 2)
		return fail(why, WIRE_ERR_SHORT);
	n = get16(buf + off);
	if (n > MROC_CM_EXT_MAX)
		return fail(why, WIRE_ERR_LENGTH);
	if (len - off - 2 < n)
		return fail(why, WIRE_ERR_SHORT);
	pkt->cm.ext = buf + off + 2;
	pkt->cm.ext_len = n;
	return 0;
}

int wire_parse(const uint8_t *buf, size_t len, struct wire_pkt *pkt, enum wire_err *why)
{
	return wire_parse_flags(buf, len, 0, pkt, why);
}

int wire_parse_flags(const uint8_t *buf, size_t len, uint8_t flags, struct wire_pkt *pkt,
		     enum wire_err *why)
{
	struct mroc_hdr *h = &pkt->hdr;

	if (why)
		*why = WIRE_OK;
	pkt->payload = NULL;
	pkt->payload_len = 0;
	if (len < MROC_HDR_LEN)
		return fail(why, WIRE_ERR_SHORT);
	h->version = buf[0];
	h->opcode = buf[1];
	h->flags = buf[2];
	h->path_id = buf[3];
	h->dst_qpn = get32(buf + 4);
	h->src_qpn = get32(buf + 8);
	h->ts = get32(buf + 12);
	if (h->version != MROC_WIRE_VERSION)
		return fail(why, WIRE_ERR_VERSION);
	if (h->flags & ~(MROC_F_ALL | flags))
		return fail(why, WIRE_ERR_FLAGS);
	if (h->path_id >= MROC_MAX_PATHS)
		return fail(why, WIRE_ERR_PATH);

	if (mroc_op_is_data(h->opcode))
		return parse_data(buf, len, pkt, why);
	if (h->opcode == MROC_OP_KEEPALIVE) {
		/* The common header alone (a peer from before the number), or the number too. */
		pkt->ka.has_seq = len > MROC_HDR_LEN;
		pkt->ka.seq = 0;
		if (!pkt->ka.has_seq)
			return 0;
		if (len < MROC_HDR_LEN + MROC_KA_LEN)
			return fail(why, WIRE_ERR_SHORT);
		pkt->ka.seq = get64(buf + MROC_HDR_LEN);
		return 0;
	}
	if (h->opcode == MROC_OP_ACK) {
		if (len < MROC_HDR_LEN + MROC_ACK_HDR_LEN)
			return fail(why, WIRE_ERR_SHORT);
		get_ack(buf + MROC_HDR_LEN, &pkt->ack);
		return 0;
	}
	if (mroc_op_is_cm(h->opcode)) {
		if (len < MROC_HDR_LEN + MROC_CM_HDR_LEN)
			return fail(why, WIRE_ERR_SHORT);
		get_cm(buf + MROC_HDR_LEN, &pkt->cm);
		/* The key extension: only REQ and REP carry one, only in "token". */
		pkt->cm.has_key = pkt->cm.sec == MROC_SEC_TOKEN &&
				  (h->opcode == MROC_OP_CONNECT_REQ || h->opcode == MROC_OP_CONNECT_REP);
		if (pkt->cm.has_key) {
			if (len < MROC_HDR_LEN + MROC_CM_HDR_LEN + MROC_CM_KEY_LEN)
				return fail(why, WIRE_ERR_SHORT);
			memcpy(pkt->cm.key, buf + MROC_HDR_LEN + MROC_CM_HDR_LEN, MROC_CM_KEY_LEN);
		}
		return parse_cm_ext(buf, len, pkt, why);
	}
	return fail(why, WIRE_ERR_OPCODE);
}

const char *wire_err_name(enum wire_err e)
{
	static const char *const names[WIRE_ERR__COUNT] = {
		[WIRE_OK] = "ok",
		[WIRE_ERR_SHORT] = "truncated",
		[WIRE_ERR_VERSION] = "bad_version",
		[WIRE_ERR_OPCODE] = "bad_opcode",
		[WIRE_ERR_FLAGS] = "bad_flags",
		[WIRE_ERR_PATH] = "bad_path",
		[WIRE_ERR_LENGTH] = "bad_length",
	};

	return (unsigned)e < WIRE_ERR__COUNT ? names[e] : "unknown";
}
