// SPDX-License-Identifier: MIT
/*
 * The security modes, engine side (docs/PROTOCOL.md 1.2 and 11a).
 *
 * "token": every QP draws a random 128-bit receive key when it connects or
 * binds and sends it in its CONNECT_REQ/REP; every later packet to that QP
 * ends in an 8-byte SipHash-2-4 tag under the key (libsodium's
 * crypto_shorthash), checked here before anything else reads the packet.
 * The tag covers the packet but the payload of data packets: it proves
 * the sender saw the handshake, which an off-path host did not; the
 * payload's integrity is the ICRC's.  On-path hosts see the keys.
 *
 * "aead": the driver's frame layer seals and opens every packet (AES-GCM,
 * daemon/dataplane/aead.c) and says in engine_rx_meta.sealed what it found; the
 * engine refuses what was not sealed.  "none": neither.
 *
 * A CONNECT_REQ in another mode is refused with CONNECT_REJ SECURITY, in
 * a form the requester can check: tagged with the key its REQ carried,
 * unsealed.  A refusal the engine cannot check is only counted.
 */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "internal.h"

static_assert(crypto_shorthash_BYTES == MROC_TAG_LEN, "SipHash-2-4 gives 8 bytes");
static_assert(crypto_shorthash_KEYBYTES == MROC_CM_KEY_LEN, "SipHash-2-4 takes 16 bytes");

void sec_init(struct engine *eng)
{
	static const uint8_t zero[16];
	uint64_t seed = eng->cfg.seed;

	memcpy(eng->sec_secret, eng->cfg.sec_secret, sizeof(eng->sec_secret));
	if (!memcmp(eng->sec_secret, zero, sizeof(zero))) {
		/* Tests and the simulator: reproducible from the seed. */
		struct prng r;
		uint64_t a, b;

		prng_seed(&r, eng->cfg.seed ^ 0x7365632d6b657973ULL);
		a = prng_next(&r);
		b = prng_next(&r);
		memcpy(eng->sec_secret, &a, 8);
		memcpy(eng->sec_secret + 8, &b, 8);
	}
	/* The generator's key: BLAKE2b(secret, seed), so engines sharing a secret differ. */
	crypto_generichash(eng->rand_key, sizeof(eng->rand_key), (const uint8_t *)&seed,
			   sizeof(seed), eng->sec_secret, sizeof(eng->sec_secret));
	eng->rand_pos = sizeof(eng->rand_buf);
	eng->sec_tag_len = eng->cfg.sec_mode == MROC_SEC_TOKEN ? MROC_TAG_LEN : 0;
}

/*
 * The engine's unpredictable numbers (QPNs, initial sequence numbers,
 * rkeys, "token" keys): ChaCha20's keystream under rand_key, a block of
 * SEC_RAND_BUF bytes at a time (a counter as the nonce).  Unlike xoshiro
 * (prng.h: ports and tie-breaks only), seeing any number of outputs says
 * nothing about the next ones without the key; the driver's secret makes
 * the key (mrocd: getrandom), all zero a seeded one (reproducible runs).
 */
void sec_random(struct engine *eng, void *out, size_t len)
{
	uint8_t *o = out;

	while (len) {
		size_t n;

		if (eng->rand_pos == sizeof(eng->rand_buf)) {
			uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = { 0 };
			uint64_t c = eng->rand_ctr++;

			memcpy(nonce, &c, sizeof(c));
			crypto_stream_chacha20_ietf(eng->rand_buf, sizeof(eng->rand_buf), nonce,
						    eng->rand_key);
			eng->rand_pos = 0;
		}
		n = sizeof(eng->rand_buf) - eng->rand_pos;
		if (n > len)
			n = len;
		memcpy(o, eng->rand_buf + eng->rand_pos, n);
		/* Given out once: wiped, so a later memory leak cannot tell past values. */
		sodium_memzero(eng->rand_buf + eng->rand_pos, n);
		eng->rand_pos += (uint32_t)n;
		o += n;
		len -= n;
	}
}

uint32_t sec_rand32(struct engine *eng)
{
	uint32_t v;

	sec_random(eng, &v, sizeof(v));
	return v;
}

/* A fresh "token" receive key. */
void sec_new_key(struct engine *eng, uint8_t key[MROC_CM_KEY_LEN])
{
	sec_random(eng, key, MROC_CM_KEY_LEN);
}

/* What the tag covers: all but a data packet's payload (and the tag). */
static size_t tag_span(const uint8_t *buf, size_t len)
{
	return mroc_op_is_data(buf[1]) && len > MROC_DATA_OVERHEAD ? MROC_DATA_OVERHEAD : len;
}

static void tag_of(const uint8_t *key, const uint8_t *buf, size_t len, uint8_t out[MROC_TAG_LEN])
{
	crypto_shorthash(out, buf, tag_span(buf, len), key);
}

/*
 * In constant time, as sodium_memcmp, but as one XOR of two words: that
 * took 86 instructions a call, 2.5% of the engine's per packet in "token"
 * (callgrind, mroc-sim engine --sec token).
 */
static bool tags_equal(const uint8_t a[MROC_TAG_LEN], const uint8_t b[MROC_TAG_LEN])
{
	uint64_t x, y;

	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return !(x ^ y);
}

bool sec_tag_ok(const uint8_t *key, const uint8_t *buf, size_t len)
{
	uint8_t tag[MROC_TAG_LEN];

	if (len < MROC_HDR_LEN + MROC_TAG_LEN)
		return false;
	tag_of(key, buf, len - MROC_TAG_LEN, tag);
	return tags_equal(tag, buf + len - MROC_TAG_LEN);
}

static int bad_tag(struct engine *eng)
{
	eng->st.c[EC_RX_BAD_TAG]++;
	return -EBADMSG;
}

/* "token": the tag of a packet to a connected (or connecting) QP. */
static int check_token(struct engine *eng, const uint8_t *buf, size_t *len)
{
	uint8_t flags = buf[2], op = buf[1];
	struct qp *qp;
	uint32_t dst;

	if (op == MROC_OP_CONNECT_REQ)	/* nobody has a key yet; it carries ours */
		return flags & MROC_F_TAG ? bad_tag(eng) : 0;
	dst = (uint32_t)buf[4] << 24 | (uint32_t)buf[5] << 16 | (uint32_t)buf[6] << 8 | buf[7];
	qp = qp_lookup(eng, dst);
	if (!qp || qp->state == ENGINE_QPS_IDLE || qp->state == ENGINE_QPS_LISTEN) {
		/* No key to check with: the usual checks count and drop it (a DISCONNECT
		 * gets its stateless DISCONNECT_ACK), unless it proves a REQ a listener
		 * answered (tagged under the key of that REP: cm_half.c). */
		if ((flags & MROC_F_TAG) && *len >= MROC_HDR_LEN + MROC_TAG_LEN) {
			if (qp && qp->state == ENGINE_QPS_LISTEN)
				cm_half_tag(eng, dst, buf, *len);
			*len -= MROC_TAG_LEN;
		}
		return 0;
	}
	/*
	 * The one untagged packet a keyed QP takes: the DISCONNECT_ACK of a peer
	 * that has already forgotten the QP (and so its key).  It can only end a
	 * close this side started.
	 */
	if (!(flags & MROC_F_TAG))
		return op == MROC_OP_DISCONNECT_ACK && qp->cm_pending == CM_SEND_DISC ?
			0 : bad_tag(eng);
	/*
	 * Not under the QP's key: maybe under the key of a REP this QP sent as a
	 * listener to a requester that then lost it to another (cm_half.c: it is
	 * told BUSY again).  Looked up only here, off the path of good packets.
	 */
	if (!sec_tag_ok(qp->rx_key, buf, *len) && !cm_half_tag(eng, dst, buf, *len))
		return bad_tag(eng);
	*len -= MROC_TAG_LEN;
	return 0;
}

int sec_rx_check(struct engine *eng, const uint8_t *buf, size_t *len,
		 const struct engine_rx_meta *meta)
{
	eng->half_tagged = 0;
	if (*len < MROC_HDR_LEN)
		return 0;		/* wire_parse counts it */
	/* A sealed packet here, or an unsealed one in "aead": only a REQ, to refuse it. */
	if (meta->sealed != (eng->cfg.sec_mode == MROC_SEC_AEAD ? ENGINE_RX_SEALED :
								  ENGINE_RX_PLAIN)) {
		if (buf[1] == MROC_OP_CONNECT_REQ)
			return 0;
		/* A refusal we cannot check: say so, change nothing. */
		if (buf[1] == MROC_OP_CONNECT_REJ &&
		    *len >= MROC_HDR_LEN + MROC_CM_HDR_LEN &&
		    buf[MROC_HDR_LEN + 20] == MROC_CM_SECURITY)
			eng->st.c[EC_CM_SEC_MISMATCH]++;
		return bad_tag(eng);
	}
	/* Elsewhere a tag is an undefined flag: wire_parse refuses it. */
	return eng->cfg.sec_mode == MROC_SEC_TOKEN ? check_token(eng, buf, len) : 0;
}

bool sec_req_ok(struct engine *eng, const struct wire_pkt *pkt,
		const struct engine_rx_meta *meta)
{
	uint8_t want = eng->cfg.sec_mode == MROC_SEC_AEAD ? ENGINE_RX_SEALED : ENGINE_RX_PLAIN;

	return pkt->cm.sec == eng->cfg.sec_mode && meta->sealed == want;
}

/*
 * sec_tx_seal for n packets (keys[i] for bufs[i], NULL: none): those whose
 * tags cover the same number of bytes (every data packet's 60) go through
 * SipHash together, eight or four at a time where the CPU can (siphash.c).
 */
void sec_tx_seal_all(struct engine *eng, const uint8_t *const *keys, struct engine_txbuf *bufs,
		     int n)
{
	const uint8_t *k[SEC_SEAL_MAX], *m[SEC_SEAL_MAX];
	uint16_t span[SEC_SEAL_MAX];
	uint8_t *o[SEC_SEAL_MAX];

	for (int base = 0; base < n; base += SEC_SEAL_MAX) {
		int cnt = n - base < SEC_SEAL_MAX ? n - base : SEC_SEAL_MAX;

		for (int i = 0; i < cnt; i++) {
			struct engine_txbuf *b = &bufs[base + i];

			span[i] = 0;		/* 0: nothing to seal; else bytes covered + 1 */
			if (!keys[base + i] || b->cap + eng->sec_tag_len < b->len + MROC_TAG_LEN)
				continue;
			b->data[2] |= MROC_F_TAG;
			span[i] = (uint16_t)(tag_span(b->data, b->len) + 1);
		}
		for (int i = 0; i < cnt; i++) {
			uint16_t sp = span[i];
			unsigned c = 0;

			if (!sp)
				continue;
			for (int j = i; j < cnt; j++) {
				struct engine_txbuf *b = &bufs[base + j];

				if (span[j] != sp)
					continue;
				k[c] = keys[base + j];
				m[c] = b->data;
				o[c++] = b->data + b->len;
				b->len += MROC_TAG_LEN;
				span[j] = 0;
			}
			siphash24_many(k, m, (size_t)sp - 1, o, c);
		}
	}
}

void sec_tx_seal(struct engine *eng, const uint8_t *key, struct engine_txbuf *b)
{
	/* engine_tx kept sec_tag_len bytes of every buffer back for it */
	if (!key || b->cap + eng->sec_tag_len < b->len + MROC_TAG_LEN)
		return;
	b->data[2] |= MROC_F_TAG;
	tag_of(key, b->data, b->len, b->data + b->len);
	b->len += MROC_TAG_LEN;
}
