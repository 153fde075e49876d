// SPDX-License-Identifier: MIT
/*
 * Wire format: encode/decode round trips, exact byte layouts, and every way
 * wire_parse must refuse a packet.  Every parse runs on a heap copy of exactly
 * the packet's length, so a sanitizer build catches any read past the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define MAX_PKT	(MROC_DATA_OVERHEAD + 256)

static const uint8_t data_ops[] = {
	MROC_OP_WRITE, MROC_OP_WRITE_IMM, MROC_OP_SEND,
	MROC_OP_SEND_IMM, MROC_OP_READ_REQ, MROC_OP_READ_RESP,
};

static const uint8_t cm_ops[] = {
	MROC_OP_CONNECT_REQ, MROC_OP_CONNECT_REP, MROC_OP_CONNECT_REJ,
	MROC_OP_DISCONNECT, MROC_OP_DISCONNECT_ACK,
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int op_defined(unsigned op)
{
	return (op >= MROC_OP_WRITE && op <= MROC_OP_ATOMIC_RESP) || op == MROC_OP_ACK ||
	       op == MROC_OP_KEEPALIVE ||
	       (op >= MROC_OP_CONNECT_REQ && op <= MROC_OP_DISCONNECT_ACK);
}

/* ---- helpers --------------------------------------------------------------- */

static struct mroc_hdr mkhdr(uint8_t op)
{
	struct mroc_hdr h = {
		.version = MROC_WIRE_VERSION,
		.opcode = op,
		.dst_qpn = 7,
		.src_qpn = 9,
		.ts = 12345,
	};
	return h;
}

/* A valid data header: a 100-byte message, this segment at offset 0. */
static struct mroc_data_hdr mkdata(uint8_t op)
{
	struct mroc_data_hdr d = {
		.psn = 10, .psn_floor = 8, .dsn = 1000, .msn = 3, .ssn = 2,
		.offset = 0, .msg_len = 100, .key = 0xabcd, .imm = 42, .raddr = 4096,
	};

	if (op == MROC_OP_READ_REQ)
		d.msg_len = 1 << 20;
	if (mroc_op_is_atomic(op))
		d.msg_len = MROC_ATOMIC_REQ_LEN;
	if (op == MROC_OP_ATOMIC_RESP)
		d.msg_len = MROC_ATOMIC_RESP_LEN;
	return d;
}

static size_t build_data(uint8_t *buf, const struct mroc_hdr *h, const struct mroc_data_hdr *d,
			 const uint8_t *payload, size_t plen)
{
	size_t n = wire_put_hdr(buf, h);

	n += wire_put_data(buf + n, d);
	if (plen)
		memcpy(buf + n, payload, plen);
	return n + plen;
}

static size_t build_ack(uint8_t *buf, const struct mroc_hdr *h, const struct mroc_ack_hdr *a)
{
	size_t n = wire_put_hdr(buf, h);

	return n + wire_put_ack(buf + n, a);
}

static size_t build_cm(uint8_t *buf, const struct mroc_hdr *h, const struct mroc_cm_hdr *c)
{
	size_t n = wire_put_hdr(buf, h);

	return n + wire_put_cm(buf + n, c);
}

/* A valid packet of any defined opcode, with a 100-byte payload for data. */
static size_t build_valid(uint8_t *buf, uint8_t op)
{
	struct mroc_hdr h = mkhdr(op);
	uint8_t payload[100];

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(0x80 + i);
	if (mroc_op_is_data(op)) {
		struct mroc_data_hdr d = mkdata(op);

		return build_data(buf, &h, &d, payload, op == MROC_OP_READ_REQ ? 0 : d.msg_len);
	}
	if (op == MROC_OP_ACK) {
		struct mroc_ack_hdr a = { .cum_psn = 5, .cum_dsn = 6, .nak_seq = 1 };

		return build_ack(buf, &h, &a);
	}
	if (op == MROC_OP_KEEPALIVE)
		return wire_put_hdr(buf, &h);	/* the common header is all of it */
	struct mroc_cm_hdr c = { .service_id = 77, .mtu = 4096, .npaths = 4 };

	return build_cm(buf, &h, &c);
}

/*
 * Parse a heap copy of exactly len bytes.  On return pkt->payload, if set, is
 * rebased onto src so callers can compare it after the copy is freed.
 */
static int parse_exact(const uint8_t *src, size_t len, struct wire_pkt *pkt, enum wire_err *why)
{
	uint8_t *b = malloc(len);
	int ret;

	assert_true(b != NULL || len == 0);
	if (len)
		memcpy(b, src, len);
	memset(pkt, 0xa5, sizeof(*pkt));
	ret = wire_parse(b, len, pkt, why);
	if (pkt->payload)
		pkt->payload = src + (pkt->payload - b);
	free(b);
	return ret;
}

static void expect_err(const uint8_t *buf, size_t len, enum wire_err want)
{
	struct wire_pkt pkt;
	enum wire_err why = WIRE_OK;
	int ret = parse_exact(buf, len, &pkt, &why);

	if (why != want)
		fail_msg("len %zu opcode 0x%02x: got %s, want %s", len, len > 1 ? buf[1] : 0,
			 wire_err_name(why), wire_err_name(want));
	assert_int_equal(ret, want == WIRE_ERR_SHORT ? -EMSGSIZE : -EBADMSG);
	/* why is optional. */
	ret = parse_exact(buf, len, &pkt, NULL);
	assert_int_equal(ret, want == WIRE_ERR_SHORT ? -EMSGSIZE : -EBADMSG);
}

static void expect_ok(const uint8_t *buf, size_t len, struct wire_pkt *pkt)
{
	enum wire_err why = WIRE_ERR_LENGTH;	/* must be reset */
	int ret = parse_exact(buf, len, pkt, &why);

	if (ret || why != WIRE_OK)
		fail_msg("len %zu opcode 0x%02x: ret %d, %s", len, len > 1 ? buf[1] : 0, ret,
			 wire_err_name(why));
}

static void assert_hdr_equal(const struct mroc_hdr *a, const struct mroc_hdr *b)
{
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->opcode, b->opcode);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->path_id, b->path_id);
	assert_int_equal(a->dst_qpn, b->dst_qpn);
	assert_int_equal(a->src_qpn, b->src_qpn);
	assert_int_equal(a->ts, b->ts);
}

static void assert_data_equal(const struct mroc_data_hdr *a, const struct mroc_data_hdr *b)
{
	assert_int_equal(a->psn, b->psn);
	assert_int_equal(a->psn_floor, b->psn_floor);
	assert_int_equal(a->dsn, b->dsn);
	assert_int_equal(a->msn, b->msn);
	assert_int_equal(a->ssn, b->ssn);
	assert_int_equal(a->offset, b->offset);
	assert_int_equal(a->msg_len, b->msg_len);
	assert_int_equal(a->key, b->key);
	assert_int_equal(a->imm, b->imm);
	assert_int_equal(a->raddr, b->raddr);
}

static void assert_ack_equal(const struct mroc_ack_hdr *a, const struct mroc_ack_hdr *b)
{
	assert_int_equal(a->cum_psn, b->cum_psn);
	assert_int_equal(a->cum_dsn, b->cum_dsn);
	assert_int_equal(a->ts_echo, b->ts_echo);
	assert_int_equal(a->rcv_pkts, b->rcv_pkts);
	assert_int_equal(a->ce_pkts, b->ce_pkts);
	assert_int_equal(a->rate_hint, b->rate_hint);
	assert_int_equal(a->nak_dsn, b->nak_dsn);
	assert_int_equal(a->nak_seq, b->nak_seq);
	assert_int_equal(a->nak_code, b->nak_code);
	assert_int_equal(a->host_delay, b->host_delay);
	assert_memory_equal(a->sack, b->sack, MROC_SACK_BYTES);
}

static void assert_cm_equal(const struct mroc_cm_hdr *a, const struct mroc_cm_hdr *b)
{
	assert_int_equal(a->service_id, b->service_id);
	assert_int_equal(a->isn_dsn, b->isn_dsn);
	assert_int_equal(a->isn_psn, b->isn_psn);
	assert_int_equal(a->mtu, b->mtu);
	assert_int_equal(a->npaths, b->npaths);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->reason, b->reason);
	assert_int_equal(a->split, b->split);
}

/* 32-bit values: zero, all ones, and byte-distinct patterns in both orders. */
static const uint32_t v32[] = { 0, UINT32_MAX, 0x01020304, 0x04030201, 0x80000001, 0x7ffffffe };
static const uint64_t v64[] = {
	0, UINT64_MAX, 0x0102030405060708ull, 0x0807060504030201ull, 0x8000000000000001ull,
};
static const uint16_t v16[] = { 0, UINT16_MAX, 0x0102, 0x0201, 0x8001 };

/* ---- sizes and encoders --------------------------------------------------- */

static void test_sizes(void **state)
{
	(void)state;
	assert_int_equal(MROC_HDR_LEN, 16);
	assert_int_equal(MROC_DATA_HDR_LEN, 44);
	assert_int_equal(MROC_ACK_HDR_LEN, 64);
	assert_int_equal(MROC_CM_HDR_LEN, 24);
	assert_int_equal(MROC_DATA_OVERHEAD, 60);
	assert_int_equal(MROC_SACK_BYTES, 32);
	assert_int_equal(MROC_UDP_PORT, 4793);
}

/* Encoders write exactly their length: heap buffers of that size catch overruns. */
static void test_put_exact(void **state)
{
	struct mroc_hdr h = mkhdr(MROC_OP_WRITE);
	struct mroc_data_hdr d = mkdata(MROC_OP_WRITE);
	struct mroc_ack_hdr a = { .nak_code = 1 };
	struct mroc_cm_hdr c = { .mtu = 1 };
	uint8_t *b;

	(void)state;
	b = malloc(MROC_HDR_LEN);
	assert_int_equal(wire_put_hdr(b, &h), MROC_HDR_LEN);
	free(b);
	b = malloc(MROC_DATA_HDR_LEN);
	assert_int_equal(wire_put_data(b, &d), MROC_DATA_HDR_LEN);
	free(b);
	b = malloc(MROC_ACK_HDR_LEN);
	assert_int_equal(wire_put_ack(b, &a), MROC_ACK_HDR_LEN);
	free(b);
	b = malloc(MROC_CM_HDR_LEN);
	assert_int_equal(wire_put_cm(b, &c), MROC_CM_HDR_LEN);
	free(b);
}

/* ---- round trips ------------------------------------------------------------ */

static void test_hdr_roundtrip(void **state)
{
	uint8_t buf[MAX_PKT];
	struct wire_pkt pkt;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(v32); i++) {
		for (unsigned flags = 0; flags <= MROC_F_ALL; flags++) {
			for (unsigned path = 0; path < MROC_MAX_PATHS; path += 5) {
				struct mroc_hdr h = {
					.version = MROC_WIRE_VERSION,
					.opcode = MROC_OP_ACK,
					.flags = (uint8_t)flags,
					.path_id = (uint8_t)path,
					.dst_qpn = v32[i],
					.src_qpn = v32[(i + 1) % ARRAY_SIZE(v32)],
					.ts = v32[(i + 2) % ARRAY_SIZE(v32)],
				};
				struct mroc_ack_hdr a = { 0 };
				size_t n = build_ack(buf, &h, &a);

				expect_ok(buf, n, &pkt);
				assert_hdr_equal(&pkt.hdr, &h);
			}
		}
	}
	/* path 15 is the last valid one */
	struct mroc_hdr h = mkhdr(MROC_OP_ACK);
	struct mroc_ack_hdr a = { 0 };

	h.path_id = MROC_MAX_PATHS - 1;
	expect_ok(buf, build_ack(buf, &h, &a), &pkt);
	assert_int_equal(pkt.hdr.path_id, 15);
}

static void data_roundtrip_one(uint8_t op, const struct mroc_data_hdr *d, size_t plen)
{
	struct mroc_hdr h = mkhdr(op);
	uint8_t payload[256], buf[MAX_PKT];
	struct wire_pkt pkt;
	size_t n;

	assert_true(plen <= sizeof(payload));
	for (size_t i = 0; i < plen; i++)
		payload[i] = (uint8_t)(i * 7 + 1);
	n = build_data(buf, &h, d, payload, plen);
	assert_int_equal(n, MROC_DATA_OVERHEAD + plen);
	expect_ok(buf, n, &pkt);
	assert_hdr_equal(&pkt.hdr, &h);
	assert_data_equal(&pkt.data, d);
	assert_int_equal(pkt.payload_len, plen);
	assert_ptr_equal(pkt.payload, buf + MROC_DATA_OVERHEAD);
	if (plen)
		assert_memory_equal(pkt.payload, payload, plen);
}

static void test_data_roundtrip(void **state)
{
	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(data_ops); k++) {
		uint8_t op = data_ops[k];
		int rr = op == MROC_OP_READ_REQ;

		/* every field cycles through the edge values, independently */
		for (size_t i = 0; i < ARRAY_SIZE(v32); i++) {
			size_t m = ARRAY_SIZE(v32);
			struct mroc_data_hdr d = {
				.psn = v32[i],
				.psn_floor = v32[(i + 1) % m],
				.dsn = v32[(i + 2) % m],
				.msn = v32[(i + 3) % m],
				.ssn = v32[(i + 4) % m],
				.offset = 0,
				.msg_len = v32[(i + 5) % m],
				.key = v32[(i + 1) % m],
				.imm = v32[(i + 2) % m],
				.raddr = v64[i % ARRAY_SIZE(v64)],
			};
			size_t plen = rr ? 0 : (d.msg_len < 200 ? d.msg_len : 200);

			data_roundtrip_one(op, &d, plen);
		}
		/* byte-distinct pattern: a swapped offset shows up as a wrong value */
		struct mroc_data_hdr d = {
			.psn = 0x10111213, .psn_floor = 0x14151617, .dsn = 0x18191a1b,
			.msn = 0x1c1d1e1f, .ssn = 0x20212223, .offset = rr ? 0 : 0x24252627,
			.msg_len = 0x28292a2b, .key = 0x2c2d2e2f, .imm = 0x30313233,
			.raddr = 0x3435363738393a3bull,
		};
		data_roundtrip_one(op, &d, rr ? 0 : 3);
		/* all ones, with the last byte of a 4 GiB - 1 message */
		struct mroc_data_hdr m = {
			.psn = UINT32_MAX, .psn_floor = UINT32_MAX, .dsn = UINT32_MAX,
			.msn = UINT32_MAX, .ssn = UINT32_MAX, .offset = rr ? 0 : UINT32_MAX - 1,
			.msg_len = UINT32_MAX, .key = UINT32_MAX, .imm = UINT32_MAX,
			.raddr = UINT64_MAX,
		};
		data_roundtrip_one(op, &m, rr ? 0 : 1);
	}
}

/*
 * ACK byte 31, host_delay (PROTOCOL 3.3): every code but 255 decodes to a
 * time that encodes back to it; any time encodes to the largest code at or
 * below it (never above: the sender must not take out more than the host
 * held), within 4 us up to 512 us and 16 us up to 2,544 us; more is 255,
 * "over" (no fabric sample).
 */
static void test_host_delay_code(void **state)
{
	uint64_t prev = 0;

	(void)state;
	for (unsigned c = 0; c < 255; c++) {
		uint64_t ns = mroc_host_delay_dec((uint8_t)c);

		assert_int_equal(mroc_host_delay_enc(ns), c);
		assert_int_equal(mroc_host_delay_enc(ns + 999), c);
		assert_true(c == 0 || ns > prev);
		prev = ns;
	}
	assert_int_equal(mroc_host_delay_dec(254), 2528000ULL);
	assert_true(mroc_host_delay_dec(255) == MROC_HOST_DELAY_OVER);
	for (uint64_t ns = 0; ns < 2544000ULL; ns += 997) {
		uint64_t got = mroc_host_delay_dec(mroc_host_delay_enc(ns));

		assert_true(got <= ns);
		assert_true(ns - got < (ns < 512000 ? 4000U : 16000U));
	}
	assert_int_equal(mroc_host_delay_enc(2544000ULL), 255);
	assert_int_equal(mroc_host_delay_enc(UINT64_MAX), 255);
}

static void test_ack_roundtrip(void **state)
{
	uint8_t buf[MAX_PKT];
	struct wire_pkt pkt;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(v32); i++) {
		size_t m = ARRAY_SIZE(v32);
		struct mroc_hdr h = mkhdr(MROC_OP_ACK);
		struct mroc_ack_hdr a = {
			.cum_psn = v32[i],
			.cum_dsn = v32[(i + 1) % m],
			.ts_echo = v32[(i + 2) % m],
			.rcv_pkts = v32[(i + 3) % m],
			.ce_pkts = v32[(i + 4) % m],
			.rate_hint = v32[(i + 5) % m],
			.nak_dsn = v32[(i + 1) % m],
			.nak_seq = v16[i % ARRAY_SIZE(v16)],
			.nak_code = (uint8_t)(i == 1 ? 0xff : i),
			.host_delay = (uint8_t)(i == 1 ? 0xff : 3 * i),
		};
		for (size_t j = 0; j < MROC_SACK_BYTES; j++)
			a.sack[j] = i == 0 ? 0 : i == 1 ? 0xff : (uint8_t)(j * 8 + i);
		expect_ok(buf, build_ack(buf, &h, &a), &pkt);
		assert_hdr_equal(&pkt.hdr, &h);
		assert_ack_equal(&pkt.ack, &a);
		assert_null(pkt.payload);
		assert_int_equal(pkt.payload_len, 0);
	}
	/* one SACK bit at a time: no bit moves */
	for (unsigned bit = 0; bit < MROC_SACK_BITS; bit++) {
		struct mroc_hdr h = mkhdr(MROC_OP_ACK);
		struct mroc_ack_hdr a = { .cum_psn = 100 };

		a.sack[bit / 8] = (uint8_t)(1u << (bit % 8));
		size_t n = build_ack(buf, &h, &a);

		for (unsigned j = 0; j < MROC_SACK_BYTES; j++)
			assert_int_equal(buf[MROC_HDR_LEN + 32 + j], j == bit / 8 ? 1u << (bit % 8) : 0);
		expect_ok(buf, n, &pkt);
		assert_ack_equal(&pkt.ack, &a);
	}
}

static void test_cm_roundtrip(void **state)
{
	uint8_t buf[MAX_PKT];
	struct wire_pkt pkt;

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(cm_ops); k++) {
		for (size_t i = 0; i < ARRAY_SIZE(v64); i++) {
			size_t m = ARRAY_SIZE(v32);
			struct mroc_hdr h = mkhdr(cm_ops[k]);
			struct mroc_cm_hdr c = {
				.service_id = v64[i],
				.isn_dsn = v32[i % m],
				.isn_psn = v32[(i + 1) % m],
				.mtu = v16[i % ARRAY_SIZE(v16)],
				.npaths = (uint8_t)(i == 1 ? 0xff : i * 3),
				.mode = (uint8_t)(i == 1 ? 0xff : i),
				.reason = (uint8_t)(i == 1 ? 0xff : i + 1),
			};

			if (cm_ops[k] == MROC_OP_CONNECT_REQ)
				h.dst_qpn = 0;
			expect_ok(buf, build_cm(buf, &h, &c), &pkt);
			assert_hdr_equal(&pkt.hdr, &h);
			assert_cm_equal(&pkt.cm, &c);
			assert_null(pkt.payload);
		}
	}
}

/*
 * A KEEPALIVE's number (PROTOCOL 3.4a): 8 bytes big-endian after the common
 * header; without them (a peer from before it) has_seq is false; 1 to 7 of
 * them are a cut packet; bytes after them are ignored.
 */
static void test_keepalive_number(void **state)
{
	static const uint8_t seq[MROC_KA_LEN] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08 };
	struct mroc_hdr h = mkhdr(MROC_OP_KEEPALIVE);
	uint8_t buf[MROC_HDR_LEN + MROC_KA_LEN + 4];
	struct wire_pkt pkt;
	size_t n;

	(void)state;
	assert_int_equal(MROC_KA_LEN, 8);
	n = wire_put_hdr(buf, &h);
	assert_int_equal(wire_put_ka(buf + n, 0x0102030405060708ULL), MROC_KA_LEN);
	assert_memory_equal(buf + n, seq, MROC_KA_LEN);
	memset(buf + n + MROC_KA_LEN, 0xee, 4);
	expect_ok(buf, n + MROC_KA_LEN, &pkt);
	assert_true(pkt.ka.has_seq);
	assert_true(pkt.ka.seq == 0x0102030405060708ULL);
	expect_ok(buf, n + MROC_KA_LEN + 4, &pkt);
	assert_true(pkt.ka.seq == 0x0102030405060708ULL);
	expect_ok(buf, n, &pkt);
	assert_false(pkt.ka.has_seq);
	for (size_t len = n + 1; len < n + MROC_KA_LEN; len++)
		expect_err(buf, len, WIRE_ERR_SHORT);
}

/* ---- exact layouts -------------------------------------------------------- */

static void test_data_layout(void **state)
{
	static const uint8_t want[] = {
		/* common: version, opcode, flags, path_id */
		0x01, 0x04, 0x03, 0x0f,
		0x04, 0x05, 0x06, 0x07,				/* dst_qpn */
		0x08, 0x09, 0x0a, 0x0b,				/* src_qpn */
		0x0c, 0x0d, 0x0e, 0x0f,				/* ts */
		/* data */
		0x10, 0x11, 0x12, 0x13,				/* psn */
		0x14, 0x15, 0x16, 0x17,				/* psn_floor */
		0x18, 0x19, 0x1a, 0x1b,				/* dsn */
		0x1c, 0x1d, 0x1e, 0x1f,				/* msn */
		0x20, 0x21, 0x22, 0x23,				/* ssn */
		0x24, 0x25, 0x26, 0x27,				/* offset */
		0x28, 0x29, 0x2a, 0x2b,				/* msg_len */
		0x2c, 0x2d, 0x2e, 0x2f,				/* key */
		0x30, 0x31, 0x32, 0x33,				/* imm */
		0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x3b,	/* raddr */
		/* payload */
		0xde, 0xad, 0xbe, 0xef,
	};
	const struct mroc_hdr h = {
		.version = 1, .opcode = MROC_OP_SEND_IMM, .flags = 3, .path_id = 15,
		.dst_qpn = 0x04050607, .src_qpn = 0x08090a0b, .ts = 0x0c0d0e0f,
	};
	const struct mroc_data_hdr d = {
		.psn = 0x10111213, .psn_floor = 0x14151617, .dsn = 0x18191a1b,
		.msn = 0x1c1d1e1f, .ssn = 0x20212223, .offset = 0x24252627,
		.msg_len = 0x28292a2b, .key = 0x2c2d2e2f, .imm = 0x30313233,
		.raddr = 0x3435363738393a3bull,
	};
	static const uint8_t payload[] = { 0xde, 0xad, 0xbe, 0xef };
	uint8_t buf[MAX_PKT];
	struct wire_pkt pkt;
	size_t n;

	(void)state;
	memset(buf, 0x55, sizeof(buf));
	n = build_data(buf, &h, &d, payload, sizeof(payload));
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	expect_ok(want, sizeof(want), &pkt);
	assert_hdr_equal(&pkt.hdr, &h);
	assert_data_equal(&pkt.data, &d);
	assert_int_equal(pkt.payload_len, 4);
	assert_ptr_equal(pkt.payload, want + 60);
}

static void test_ack_layout(void **state)
{
	static const uint8_t want[] = {
		0x01, 0x10, 0x00, 0x02,				/* version, ACK, flags, path 2 */
		0x04, 0x05, 0x06, 0x07,				/* dst_qpn */
		0x08, 0x09, 0x0a, 0x0b,				/* src_qpn */
		0x0c, 0x0d, 0x0e, 0x0f,				/* ts */
		0x10, 0x11, 0x12, 0x13,				/* cum_psn */
		0x14, 0x15, 0x16, 0x17,				/* cum_dsn */
		0x18, 0x19, 0x1a, 0x1b,				/* ts_echo */
		0x1c, 0x1d, 0x1e, 0x1f,				/* rcv_pkts */
		0x20, 0x21, 0x22, 0x23,				/* ce_pkts */
		0x24, 0x25, 0x26, 0x27,				/* rate_hint */
		0x28, 0x29, 0x2a, 0x2b,				/* nak_dsn */
		0x2c, 0x2d,					/* nak_seq */
		0x2e,						/* nak_code */
		0x00,						/* reserved */
		/* sack[0..31] */
		0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37,
		0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e, 0x3f,
		0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,
		0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f,
	};
	const struct mroc_hdr h = {
		.version = 1, .opcode = MROC_OP_ACK, .flags = 0, .path_id = 2,
		.dst_qpn = 0x04050607, .src_qpn = 0x08090a0b, .ts = 0x0c0d0e0f,
	};
	struct mroc_ack_hdr a = {
		.cum_psn = 0x10111213, .cum_dsn = 0x14151617, .ts_echo = 0x18191a1b,
		.rcv_pkts = 0x1c1d1e1f, .ce_pkts = 0x20212223, .rate_hint = 0x24252627,
		.nak_dsn = 0x28292a2b, .nak_seq = 0x2c2d, .nak_code = 0x2e,
	};
	uint8_t buf[MAX_PKT];
	struct wire_pkt pkt;
	size_t n;

	(void)state;
	for (int i = 0; i < MROC_SACK_BYTES; i++)
		a.sack[i] = (uint8_t)(0x30 + i);
	memset(buf, 0xff, sizeof(buf));	/* the reserved byte must be written */
	n = build_ack(buf, &h, &a);
	assert_int_equal(n, sizeof(want));
	assert_int_equal(n, 80);
	assert_memory_equal(buf, want, sizeof(want));
	expect_ok(want, sizeof(want), &pkt);
	assert_hdr_equal(&pkt.hdr, &h);
	assert_ack_equal(&pkt.ack, &a);
}

static void test_cm_layout(void **state)
{
	static const uint8_t want[] = {
		0x01, 0x20, 0x00, 0x00,				/* version, CONNECT_REQ */
		0x00, 0x00, 0x00, 0x00,				/* dst_qpn 0 */
		0x08, 0x09, 0x0a, 0x0b,				/* src_qpn */
		0x0c, 0x0d, 0x0e, 0x0f,				/* ts */
		0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,	/* service_id */
		0x18, 0x19, 0x1a, 0x1b,				/* isn_dsn */
		0x1c, 0x1d, 0x1e, 0x1f,				/* isn_psn */
		0x20, 0x21,					/* mtu */
		0x22, 0x23, 0x24,				/* npaths, mode, reason */
		0x00, 0x00,					/* sec, ext */
		0x27,						/* split unit / 64 */
	};
	const struct mroc_hdr h = {
		.version = 1, .opcode = MROC_OP_CONNECT_REQ,
		.dst_qpn = 0, .src_qpn = 0x08090a0b, .ts = 0x0c0d0e0f,
	};
	const struct mroc_cm_hdr c = {
		.service_id = 0x1011121314151617ull, .isn_dsn = 0x18191a1b,
		.isn_psn = 0x1c1d1e1f, .mtu = 0x2021, .npaths = 0x22, .mode = 0x23,
		.reason = 0x24, .split = 0x27,
	};
	uint8_t buf[MAX_PKT];
	struct wire_pkt pkt;

	(void)state;
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(build_cm(buf, &h, &c), sizeof(want));
	assert_int_equal(sizeof(want), 40);
	assert_memory_equal(buf, want, sizeof(want));
	expect_ok(want, sizeof(want), &pkt);
	assert_hdr_equal(&pkt.hdr, &h);
	assert_cm_equal(&pkt.cm, &c);
}

/*
 * The split ports in the CM ext byte (bits 4-7 with MROC_CM_F_PORTS, PROTOCOL
 * 3.4): 1..16 round trip beside the other flags; no flag, no ports.
 */
static void test_cm_ports(void **state)
{
	(void)state;
	assert_int_equal(mroc_cm_ports_put(0), 0);
	assert_int_equal(mroc_cm_ports_get(0), 0);
	assert_int_equal(mroc_cm_ports_get(0xf0 | MROC_CM_F_EXT | MROC_CM_F_BOUND), 0);
	assert_int_equal(mroc_cm_ports_put(1), MROC_CM_F_PORTS);
	assert_int_equal(mroc_cm_ports_put(16), 0xf0 | MROC_CM_F_PORTS);
	for (uint32_t n = 1; n <= MROC_MAX_PATHS; n++) {
		uint8_t b = mroc_cm_ports_put(n);

		assert_false(b & (MROC_CM_F_EXT | MROC_CM_F_BOUND));
		assert_int_equal(mroc_cm_ports_get(b | MROC_CM_F_EXT | MROC_CM_F_BOUND), n);
	}
}

/*
 * The split rule (PROTOCOL 5.2) by ports: up to ports parts of at least a
 * unit; past them a multiple of ports, one a port per MROC_SPLIT_SHARED
 * (96) bytes (or unit) of each port's share; ports 0 or at least the parts: the
 * rule by npaths alone, as before ports.
 */
static void test_split_rule(void **state)
{
	static const struct { uint32_t len, mtu, npaths, unit, ports, seg; } want[] = {
		/* len    mtu  npaths unit ports  seg */
		{ 256, 4096, 8, 32, 0, 32 },	/* before ports: 8 parts */
		{ 256, 4096, 8, 32, 8, 32 },	/* ports = npaths: the same */
		{ 256, 4096, 8, 32, 4, 64 },	/* 4 planes: 4 parts, one a plane */
		{ 64, 4096, 8, 32, 4, 32 },	/* 2 parts: below the ports, by the unit */
		{ 384, 4096, 8, 32, 4, 96 },	/* 96 B a port: one part each */
		{ 385, 4096, 8, 32, 4, 64 },	/* past 96 B a port: two each (8 of 49 -> 64) */
		{ 512, 4096, 8, 32, 4, 64 },
		{ 1024, 4096, 8, 32, 4, 128 },
		{ 4096, 4096, 8, 32, 4, 512 },
		{ 4096, 4096, 8, 32, 3, 688 },	/* 3 ports, 8 paths: 6 parts */
		{ 288, 4096, 8, 32, 3, 96 },	/* 3 ports: 3 parts of 96 */
		{ 300, 4096, 8, 32, 3, 64 },	/* ... past 96 B a port: 6 parts of 50 -> 64 */
		{ 1000, 1024, 4, 128, 2, 256 },	/* 2 ports, unit 128: 4 parts, two a port */
		{ 1000, 1024, 8, 512, 1, 512 },	/* one port, unit >= 96: the unit's rule */
		{ 1000, 1024, 8, 32, 1, 128 },	/* one port, unit 32: a part per 96 B */
		{ 96, 1024, 8, 32, 1, 96 },	/* ... 96 B in one: not split */
		{ 100, 1024, 8, 32, 1, 64 },
		{ 5000, 1024, 4, 128, 2, 1024 },	/* npaths x mtu: by the mtu */
		{ 7, 1024, 16, 16, 16, 16 },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(mroc_split_seg(want[i].len, want[i].mtu, want[i].npaths,
						want[i].unit, want[i].ports), want[i].seg);
}

/* Reserved bytes are ignored on receipt; bytes after ACK/CM headers (and extension) too. */
static void test_reserved_and_trailing(void **state)
{
	uint8_t buf[MAX_PKT], big[MROC_HDR_LEN + MROC_CM_HDR_LEN + 3 + MROC_CM_EXT_MAX] = { 0 };
	struct wire_pkt pkt;
	size_t n;

	(void)state;
	n = build_valid(buf, MROC_OP_ACK);
	buf[MROC_HDR_LEN + 31] = 0xff;
	expect_ok(buf, n, &pkt);
	memset(buf + n, 0xee, 8);
	expect_ok(buf, n + 8, &pkt);
	assert_int_equal(pkt.ack.cum_psn, 5);

	/* sec unknown, the ext bits but MROC_CM_F_EXT; byte 23 (split) any value. */
	n = build_valid(buf, MROC_OP_CONNECT_REP);
	buf[MROC_HDR_LEN + 21] = 0xff;
	buf[MROC_HDR_LEN + 22] = (uint8_t)~MROC_CM_F_EXT;
	buf[MROC_HDR_LEN + 23] = 0xff;
	expect_ok(buf, n, &pkt);
	assert_int_equal(pkt.cm.reason, 0);
	assert_null(pkt.cm.ext);
	expect_ok(buf, n + 1, &pkt);
	assert_int_equal(pkt.cm.mtu, 4096);
	/* MROC_CM_F_EXT: a length and that many bytes follow, then anything. */
	memcpy(big, buf, n);
	big[MROC_HDR_LEN + 22] = MROC_CM_F_EXT;
	expect_err(big, n, WIRE_ERR_SHORT);
	big[n] = 0;
	big[n + 1] = 3;
	expect_err(big, n + 4, WIRE_ERR_SHORT);
	expect_ok(big, n + 5, &pkt);
	assert_non_null(pkt.cm.ext);
	assert_int_equal(pkt.cm.ext_len, 3);
	expect_ok(big, n + 9, &pkt);
	assert_int_equal(pkt.cm.ext_len, 3);
	big[n] = MROC_CM_EXT_MAX >> 8;
	big[n + 1] = MROC_CM_EXT_MAX & 0xff;
	expect_err(big, n + 1 + MROC_CM_EXT_MAX, WIRE_ERR_SHORT);
	expect_ok(big, n + 2 + MROC_CM_EXT_MAX, &pkt);
	assert_int_equal(pkt.cm.ext_len, MROC_CM_EXT_MAX);
	big[n + 1]++;
	expect_err(big, n + 3 + MROC_CM_EXT_MAX, WIRE_ERR_LENGTH);
	/* Only REQ and REP have one: elsewhere the flag is ignored. */
	n = build_valid(buf, MROC_OP_DISCONNECT);
	buf[MROC_HDR_LEN + 22] = MROC_CM_F_EXT;
	expect_ok(buf, n, &pkt);
	assert_null(pkt.cm.ext);
}

/* ---- truncation ----------------------------------------------------------- */

static void test_truncated(void **state)
{
	uint8_t buf[MAX_PKT];

	(void)state;
	for (unsigned op = 0; op < 256; op++) {
		size_t full, min;

		if (!op_defined(op))
			continue;
		full = build_valid(buf, (uint8_t)op);
		min = mroc_op_is_data((uint8_t)op) ? MROC_DATA_OVERHEAD :
		      op == MROC_OP_ACK ? MROC_HDR_LEN + MROC_ACK_HDR_LEN :
		      op == MROC_OP_KEEPALIVE ? MROC_HDR_LEN :
					  MROC_HDR_LEN + MROC_CM_HDR_LEN;
		assert_true(full >= min);
		for (size_t len = 0; len < min; len++)
			expect_err(buf, len, WIRE_ERR_SHORT);
		/* headers complete: the rest is payload, and a shorter payload
		 * is still a consistent segment (offset 0, <= msg_len) */
		for (size_t len = min; len <= full; len++) {
			struct wire_pkt pkt;

			/* Atomics have one size. */
			if ((mroc_op_is_atomic((uint8_t)op) || op == MROC_OP_ATOMIC_RESP) && len < full)
				expect_err(buf, len, WIRE_ERR_LENGTH);
			else if (len == min && mroc_op_is_data((uint8_t)op) && op != MROC_OP_READ_REQ)
				expect_err(buf, len, WIRE_ERR_LENGTH);	/* empty, msg_len 100 */
			else
				expect_ok(buf, len, &pkt);
		}
	}
}

/* A packet too short for its common header is SHORT whatever its bytes say. */
static void test_truncated_garbage(void **state)
{
	uint8_t buf[MROC_HDR_LEN];

	(void)state;
	memset(buf, 0xff, sizeof(buf));
	for (size_t len = 0; len < MROC_HDR_LEN; len++)
		expect_err(buf, len, WIRE_ERR_SHORT);
	expect_err(buf, MROC_HDR_LEN, WIRE_ERR_VERSION);
}

/* ---- bad common-header fields --------------------------------------------- */

static void test_bad_version(void **state)
{
	static const uint8_t versions[] = { 0, 2, 3, 0x7f, 0x80, 0xff };
	uint8_t buf[MAX_PKT];

	(void)state;
	for (unsigned op = 0; op < 256; op++) {
		if (!op_defined(op))
			continue;
		size_t n = build_valid(buf, (uint8_t)op);

		for (size_t i = 0; i < ARRAY_SIZE(versions); i++) {
			buf[0] = versions[i];
			expect_err(buf, n, WIRE_ERR_VERSION);
		}
	}
}

static void test_unknown_opcodes(void **state)
{
	uint8_t buf[MAX_PKT];
	int defined = 0;

	(void)state;
	for (unsigned op = 0; op < 256; op++) {
		struct wire_pkt pkt;

		if (op_defined(op)) {
			size_t n = build_valid(buf, (uint8_t)op);

			expect_ok(buf, n, &pkt);
			assert_int_equal(pkt.hdr.opcode, op);
			defined++;
			continue;
		}
		/* long enough for any header: only the opcode is wrong */
		memset(buf, 0, sizeof(buf));
		struct mroc_hdr h = mkhdr((uint8_t)op);

		wire_put_hdr(buf, &h);
		expect_err(buf, MROC_HDR_LEN + MROC_ACK_HDR_LEN, WIRE_ERR_OPCODE);
		expect_err(buf, MROC_HDR_LEN, WIRE_ERR_OPCODE);
	}
	assert_int_equal(defined, 16);
}

static void test_bad_flags(void **state)
{
	uint8_t buf[MAX_PKT];

	(void)state;
	for (unsigned op = 0; op < 256; op++) {
		if (!op_defined(op))
			continue;
		size_t n = build_valid(buf, (uint8_t)op);

		for (unsigned f = 0; f < 256; f++) {
			struct wire_pkt pkt;

			buf[2] = (uint8_t)f;
			if (f & ~MROC_F_ALL) {
				expect_err(buf, n, WIRE_ERR_FLAGS);
			} else {
				expect_ok(buf, n, &pkt);
				assert_int_equal(pkt.hdr.flags, f);
			}
		}
	}
}

static void test_path_id(void **state)
{
	uint8_t buf[MAX_PKT];

	(void)state;
	for (unsigned op = 0; op < 256; op++) {
		if (!op_defined(op))
			continue;
		size_t n = build_valid(buf, (uint8_t)op);

		for (unsigned p = 0; p < 256; p++) {
			struct wire_pkt pkt;

			buf[3] = (uint8_t)p;
			if (p >= MROC_MAX_PATHS) {
				expect_err(buf, n, WIRE_ERR_PATH);
			} else {
				expect_ok(buf, n, &pkt);
				assert_int_equal(pkt.hdr.path_id, p);
			}
		}
		buf[3] = 16;
		expect_err(buf, n, WIRE_ERR_PATH);
		buf[3] = 255;
		expect_err(buf, n, WIRE_ERR_PATH);
	}
}

/* ---- data lengths --------------------------------------------------------- */

static size_t seg(uint8_t *buf, uint8_t op, uint32_t offset, uint32_t msg_len, size_t plen)
{
	struct mroc_hdr h = mkhdr(op);
	struct mroc_data_hdr d = mkdata(op);
	uint8_t payload[256];

	assert_true(plen <= sizeof(payload));
	memset(payload, 0x3c, plen);
	d.offset = offset;
	d.msg_len = msg_len;
	return build_data(buf, &h, &d, payload, plen);
}

static void test_read_req(void **state)
{
	uint8_t buf[MAX_PKT];
	struct wire_pkt pkt;

	(void)state;
	expect_ok(buf, seg(buf, MROC_OP_READ_REQ, 0, UINT32_MAX, 0), &pkt);
	assert_int_equal(pkt.data.msg_len, UINT32_MAX);
	assert_int_equal(pkt.payload_len, 0);
	expect_ok(buf, seg(buf, MROC_OP_READ_REQ, 0, 0, 0), &pkt);
	expect_err(buf, seg(buf, MROC_OP_READ_REQ, 0, 100, 1), WIRE_ERR_LENGTH);
	expect_err(buf, seg(buf, MROC_OP_READ_REQ, 0, 100, 100), WIRE_ERR_LENGTH);
	expect_err(buf, seg(buf, MROC_OP_READ_REQ, 1, 100, 0), WIRE_ERR_LENGTH);
	expect_err(buf, seg(buf, MROC_OP_READ_REQ, UINT32_MAX, UINT32_MAX, 0), WIRE_ERR_LENGTH);
	expect_err(buf, seg(buf, MROC_OP_READ_REQ, 0x80000000u, 0, 0), WIRE_ERR_LENGTH);
}

static void test_payload_bounds(void **state)
{
	uint8_t buf[MAX_PKT];

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(data_ops); k++) {
		uint8_t op = data_ops[k];
		struct wire_pkt pkt;

		if (op == MROC_OP_READ_REQ)
			continue;
		/* exact fit: first, middle and last segment */
		expect_ok(buf, seg(buf, op, 0, 100, 100), &pkt);
		expect_ok(buf, seg(buf, op, 50, 100, 50), &pkt);
		assert_int_equal(pkt.data.offset, 50);
		assert_int_equal(pkt.payload_len, 50);
		expect_ok(buf, seg(buf, op, 99, 100, 1), &pkt);
		/* one byte too many */
		expect_err(buf, seg(buf, op, 0, 99, 100), WIRE_ERR_LENGTH);
		expect_err(buf, seg(buf, op, 51, 100, 50), WIRE_ERR_LENGTH);
		expect_err(buf, seg(buf, op, 100, 100, 1), WIRE_ERR_LENGTH);
		expect_err(buf, seg(buf, op, 101, 100, 0), WIRE_ERR_LENGTH);
		/* offset + payload wraps 32 bits: must not pass as small */
		expect_err(buf, seg(buf, op, UINT32_MAX, UINT32_MAX, 1), WIRE_ERR_LENGTH);
		expect_err(buf, seg(buf, op, UINT32_MAX, 100, 2), WIRE_ERR_LENGTH);
		expect_err(buf, seg(buf, op, UINT32_MAX - 15, UINT32_MAX, 32), WIRE_ERR_LENGTH);
		expect_err(buf, seg(buf, op, UINT32_MAX - 255, 200, 256), WIRE_ERR_LENGTH);
		/* up to the last byte of a 4 GiB - 1 message is fine */
		expect_ok(buf, seg(buf, op, UINT32_MAX - 16, UINT32_MAX, 16), &pkt);
		expect_ok(buf, seg(buf, op, UINT32_MAX - 256, UINT32_MAX, 256), &pkt);
		assert_int_equal(pkt.payload_len, 256);
	}
}

static void test_empty_payload(void **state)
{
	uint8_t buf[MAX_PKT];

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(data_ops); k++) {
		uint8_t op = data_ops[k];
		struct wire_pkt pkt;

		if (op == MROC_OP_READ_REQ)
			continue;
		/* empty segment of a non-empty message */
		expect_err(buf, seg(buf, op, 0, 1, 0), WIRE_ERR_LENGTH);
		expect_err(buf, seg(buf, op, 0, UINT32_MAX, 0), WIRE_ERR_LENGTH);
		expect_err(buf, seg(buf, op, 100, 100, 0), WIRE_ERR_LENGTH);
		expect_err(buf, seg(buf, op, 50, 100, 0), WIRE_ERR_LENGTH);
		/* a zero-length message is one empty segment at offset 0 */
		expect_ok(buf, seg(buf, op, 0, 0, 0), &pkt);
		assert_int_equal(pkt.data.msg_len, 0);
		assert_int_equal(pkt.payload_len, 0);
		assert_ptr_equal(pkt.payload, buf + MROC_DATA_OVERHEAD);
		expect_err(buf, seg(buf, op, 1, 0, 0), WIRE_ERR_LENGTH);
		expect_err(buf, seg(buf, op, 0, 0, 1), WIRE_ERR_LENGTH);
	}
}

/* ---- helpers in wire.h ---------------------------------------------------- */

static void test_op_predicates(void **state)
{
	(void)state;
	for (unsigned op = 0; op < 256; op++) {
		uint8_t o = (uint8_t)op;
		int data = op >= 0x01 && op <= 0x09;
		int cm = op >= 0x20 && op <= 0x24;

		assert_int_equal(!!mroc_op_is_data(o), data);
		assert_int_equal(!!mroc_op_is_cm(o), cm);
		assert_int_equal(!!mroc_op_uses_recv(o),
				 op == MROC_OP_SEND || op == MROC_OP_SEND_IMM || op == MROC_OP_WRITE_IMM);
		assert_int_equal(!!mroc_op_has_imm(o),
				 op == MROC_OP_SEND_IMM || op == MROC_OP_WRITE_IMM);
		assert_int_equal(!!mroc_op_is_atomic(o), op == 0x07 || op == 0x08);
		assert_int_equal(!!mroc_op_is_request(o), op == 0x05 || op == 0x07 || op == 0x08);
	}
}

static void test_seq_wrap(void **state)
{
	(void)state;
	assert_int_equal(seq_diff(0, 0), 0);
	assert_int_equal(seq_diff(1, 0), 1);
	assert_int_equal(seq_diff(0, 1), -1);
	assert_int_equal(seq_diff(0, UINT32_MAX), 1);
	assert_int_equal(seq_diff(UINT32_MAX, 0), -1);
	assert_int_equal(seq_diff(5, UINT32_MAX - 4), 10);
	assert_int_equal(seq_diff(UINT32_MAX - 4, 5), -10);
	assert_int_equal(seq_diff(0x7fffffff, 0), INT32_MAX);
	assert_int_equal(seq_diff(0x80000000u, 0), INT32_MIN);

	assert_true(seq_lt(UINT32_MAX, 0));
	assert_false(seq_lt(0, UINT32_MAX));
	assert_true(seq_lt(UINT32_MAX - 255, 10));
	assert_false(seq_lt(10, UINT32_MAX - 255));
	assert_false(seq_lt(7, 7));
	assert_true(seq_le(7, 7));
	assert_true(seq_le(UINT32_MAX, 0));
	assert_false(seq_le(0, UINT32_MAX));
	assert_true(seq_lt(0x7ffffffe, 0x7fffffff));
	assert_true(seq_lt(0x7fffffff, 0x80000000u));
	assert_true(seq_lt(0x80000000u, 0x80000001u));
	/* every point of the circle: a is before a + d for d in (0, 2^31) */
	for (uint32_t a = 0xffffff00u, i = 0; i < 512; i++, a++) {
		assert_true(seq_lt(a, a + 1));
		assert_true(seq_lt(a, a + 256));
		assert_true(seq_lt(a, a + 0x7fffffff));
		assert_false(seq_lt(a + 1, a));
		assert_int_equal(seq_diff(a + 256, a), 256);
	}
}

static void test_err_names(void **state)
{
	static const char *const want[WIRE_ERR__COUNT] = {
		[WIRE_OK] = "ok",
		[WIRE_ERR_SHORT] = "truncated",
		[WIRE_ERR_VERSION] = "bad_version",
		[WIRE_ERR_OPCODE] = "bad_opcode",
		[WIRE_ERR_FLAGS] = "bad_flags",
		[WIRE_ERR_PATH] = "bad_path",
		[WIRE_ERR_LENGTH] = "bad_length",
	};

	(void)state;
	for (int e = 0; e < WIRE_ERR__COUNT; e++) {
		const char *n = wire_err_name((enum wire_err)e);

		assert_non_null(n);
		assert_string_equal(n, want[e]);
		for (int f = 0; f < e; f++)
			assert_string_not_equal(n, wire_err_name((enum wire_err)f));
	}
	assert_string_equal(wire_err_name(WIRE_ERR__COUNT), "unknown");
	assert_string_equal(wire_err_name((enum wire_err)100), "unknown");
	assert_string_equal(wire_err_name((enum wire_err)-1), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_put_exact),
		cmocka_unit_test(test_hdr_roundtrip),
		cmocka_unit_test(test_data_roundtrip),
		cmocka_unit_test(test_ack_roundtrip),
		cmocka_unit_test(test_cm_roundtrip),
		cmocka_unit_test(test_keepalive_number),
		cmocka_unit_test(test_data_layout),
		cmocka_unit_test(test_ack_layout),
		cmocka_unit_test(test_cm_layout),
		cmocka_unit_test(test_cm_ports),
		cmocka_unit_test(test_split_rule),
		cmocka_unit_test(test_reserved_and_trailing),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_truncated_garbage),
		cmocka_unit_test(test_bad_version),
		cmocka_unit_test(test_unknown_opcodes),
		cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_path_id),
		cmocka_unit_test(test_read_req),
		cmocka_unit_test(test_payload_bounds),
		cmocka_unit_test(test_empty_payload),
		cmocka_unit_test(test_op_predicates),
		cmocka_unit_test(test_seq_wrap),
		cmocka_unit_test(test_host_delay_code),
		cmocka_unit_test(test_err_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
