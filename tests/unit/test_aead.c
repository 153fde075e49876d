// SPDX-License-Identifier: MIT
/*
 * Security mode "aead" (daemon/dataplane/aead.c): a sealed packet opens to what was
 * sealed, with its payload encrypted on the wire; a flipped bit anywhere
 * (header, payload, trailer) or an unknown key id is refused and counted;
 * nonces never repeat; packets without the flag pass as plain; a daemon
 * without keys hands a sealed REQ on as unverified; a packet opens only
 * between the IP addresses it was sealed for (#24 case 2).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "aead.h"

#define PLEN	256

/* The addresses the packets of these tests go between (A -> B), and a third host's. */
static const struct mroc_addr A = { .family = AF_INET, .bytes = { 10, 0, 0, 1 } },
			      B = { .family = AF_INET, .bytes = { 10, 0, 0, 2 } },
			      C = { .family = AF_INET, .bytes = { 10, 0, 0, 3 } };

static struct aead_keyset keyset(uint32_t id, uint8_t fill)
{
	struct aead_keyset ks = { .n = 1 };

	ks.k[0].id = id;
	memset(ks.k[0].key, fill, AEAD_KEY_LEN);
	return ks;
}

/* A WRITE packet with a recognisable payload in buf; returns its length. */
static uint32_t write_pkt(uint8_t *buf)
{
	memset(buf, 0, MROC_DATA_OVERHEAD);
	buf[0] = MROC_WIRE_VERSION;
	buf[1] = MROC_OP_WRITE;
	buf[7] = 0x42;				/* dst QPN */
	for (int i = 0; i < PLEN; i++)
		buf[MROC_DATA_OVERHEAD + i] = (uint8_t)('A' + i % 26);
	return MROC_DATA_OVERHEAD + PLEN;
}

struct sealed {
	uint8_t buf[1024], orig[1024];
	uint32_t len, olen;
};

static void seal_one(struct aead *a, struct sealed *s)
{
	struct engine_txbuf b = { .data = s->buf, .cap = sizeof(s->buf) };

	s->olen = b.len = write_pkt(s->buf);
	memcpy(s->orig, s->buf, s->olen);
	assert_int_equal(aead_seal(a, &b, &A, &B), 0);
	s->len = b.len;
}

static void test_round_trip(void **state)
{
	struct aead_keyset ks = keyset(5, 0x11);
	struct aead *tx, *rx;
	struct aead_stats st;
	struct sealed s;
	uint8_t sealed, copy[1024];

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &tx), 0);
	assert_int_equal(aead_create(&ks, 5, &rx), 0);
	seal_one(tx, &s);
	assert_int_equal(s.len, s.olen + AEAD_TRAILER_LEN);
	assert_true(s.buf[2] & MROC_F_SEALED);
	/* The payload is not on the wire, the header is. */
	assert_null(memmem(s.buf, s.len, "ABCDEFGHIJ", 10));
	assert_memory_equal(s.buf + 3, s.orig + 3, MROC_DATA_OVERHEAD - 3);
	memcpy(copy, s.buf, s.len);
	assert_int_equal(aead_open(rx, s.buf, s.len, &A, &B, &sealed), (int)s.olen);
	assert_int_equal(sealed, ENGINE_RX_SEALED);
	assert_memory_equal(s.buf, s.orig, s.olen);
	/* The same bytes again open again (replays are the transport's to refuse). */
	assert_int_equal(aead_open(rx, copy, s.len, &A, &B, &sealed), (int)s.olen);
	/* The next packet's nonce differs: another ciphertext for the same payload. */
	seal_one(tx, &s);
	assert_memory_not_equal(s.buf + MROC_DATA_OVERHEAD, copy + MROC_DATA_OVERHEAD, PLEN);
	aead_get_stats(rx, &st);
	assert_int_equal(st.rx_opened, 2);
	aead_destroy(tx);
	aead_destroy(rx);
}

/* Every single flipped bit is refused, and counted. */
static void test_flipped_bits(void **state)
{
	struct aead_keyset ks = keyset(5, 0x11);
	struct aead *tx, *rx;
	struct aead_stats st;
	struct sealed s;
	uint8_t sealed, pkt[1024];
	unsigned tried = 0;

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &tx), 0);
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	seal_one(tx, &s);
	for (uint32_t i = 0; i < s.len; i += 3) {
		if (i == 2)
			continue;		/* the flag itself: then it is not sealed */
		memcpy(pkt, s.buf, s.len);
		pkt[i] ^= (uint8_t)(1u << (i % 8));
		assert_true(aead_open(rx, pkt, s.len, &A, &B, &sealed) < 0);
		tried++;
	}
	aead_get_stats(rx, &st);
	/*
	 * Bits in the key id field fail as unknown keys, the rest as bad tags,
	 * but those in the sender id past the derivation budget (each a sender
	 * never heard from).
	 */
	assert_int_equal(st.rx_bad_tag + st.rx_bad_key + st.rx_derive_limited, tried);
	assert_true(st.rx_bad_tag > 0);
	assert_int_equal(st.rx_opened, 0);
	aead_destroy(tx);
	aead_destroy(rx);
}

/* A key id the receiver lacks: refused; the same id with another key: bad tag. */
static void test_wrong_key(void **state)
{
	struct aead_keyset k5 = keyset(5, 0x11), k6 = keyset(6, 0x11), k5b = keyset(5, 0x22);
	struct aead *tx, *rx6, *rx5b, *none = NULL;
	struct aead_stats st;
	struct sealed s;
	uint8_t sealed, pkt[1024];

	(void)state;
	assert_int_equal(aead_create(&k5, 0, &tx), 0);
	assert_int_equal(aead_create(&k6, 0, &rx6), 0);
	assert_int_equal(aead_create(&k5b, 0, &rx5b), 0);
	assert_int_equal(aead_create(&k5, 9, &none), -ENOKEY);
	assert_null(none);
	seal_one(tx, &s);
	memcpy(pkt, s.buf, s.len);
	assert_int_equal(aead_open(rx6, pkt, s.len, &A, &B, &sealed), -ENOKEY);
	aead_get_stats(rx6, &st);
	assert_int_equal(st.rx_bad_key, 1);
	memcpy(pkt, s.buf, s.len);
	assert_int_equal(aead_open(rx5b, pkt, s.len, &A, &B, &sealed), -EBADMSG);
	aead_get_stats(rx5b, &st);
	assert_int_equal(st.rx_bad_tag, 1);
	aead_destroy(tx);
	aead_destroy(rx6);
	aead_destroy(rx5b);
}

/* Plain packets pass as plain; without keys a sealed one loses its trailer unchecked. */
static void test_plain_and_keyless(void **state)
{
	struct aead_keyset ks = keyset(5, 0x11);
	struct aead *tx, *rx;
	struct sealed s;
	uint8_t sealed, pkt[1024];
	uint32_t len = write_pkt(pkt);

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &tx), 0);
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	assert_int_equal(aead_open(rx, pkt, len, &A, &B, &sealed), (int)len);
	assert_int_equal(sealed, ENGINE_RX_PLAIN);
	seal_one(tx, &s);
	assert_int_equal(aead_open(NULL, s.buf, s.len, &A, &B, &sealed), (int)s.olen);
	assert_int_equal(sealed, ENGINE_RX_UNVERIFIED);
	assert_false(s.buf[2] & (MROC_F_SEALED | MROC_F_SEALED_IP));
	/* Shorter than a trailer. */
	pkt[2] |= MROC_F_SEALED;
	assert_int_equal(aead_open(rx, pkt, MROC_HDR_LEN + 4, &A, &B, &sealed), -EMSGSIZE);
	/* A refusal marked plain is not sealed. */
	{
		struct engine_txbuf b = { .data = pkt, .cap = sizeof(pkt), .len = len,
					  .plain = true };

		pkt[2] = 0;
		assert_int_equal(aead_seal(tx, &b, &A, &B), 0);
		assert_int_equal(b.len, len);
		assert_int_equal(pkt[2], 0);
	}
	aead_destroy(tx);
	aead_destroy(rx);
}

/* A packet filling the buffer engine_tx was given (aead_reserve) is still sealed. */
static void test_full_buffer(void **state)
{
	struct aead_keyset ks = keyset(5, 0x11);
	static uint8_t buf[MROC_DATA_OVERHEAD + 1024 + AEAD_TRAILER_LEN];
	struct engine_txbuf b = { .data = buf, .cap = sizeof(buf) };
	struct aead *tx, *rx;
	struct aead_stats st;
	uint8_t sealed;

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &tx), 0);
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	aead_reserve(tx, &b, 1);
	assert_int_equal(b.cap, MROC_DATA_OVERHEAD + 1024);
	memset(buf, 0, sizeof(buf));
	buf[0] = MROC_WIRE_VERSION;
	buf[1] = MROC_OP_WRITE;
	b.len = b.cap;				/* as engine_tx would fill it */
	aead_unreserve(tx, &b, 1);
	assert_int_equal(aead_seal(tx, &b, &A, &B), 0);
	aead_get_stats(tx, &st);
	assert_int_equal(st.tx_failed, 0);
	assert_int_equal(b.len, sizeof(buf));
	assert_int_equal(aead_open(rx, buf, b.len, &A, &B, &sealed), MROC_DATA_OVERHEAD + 1024);
	assert_int_equal(sealed, ENGINE_RX_SEALED);
	aead_destroy(tx);
	aead_destroy(rx);
}

/* A CONNECT_REQ sealed by tx in s (the REQ's seq is tx's clock). */
static void seal_req(struct aead *a, struct sealed *s)
{
	struct engine_txbuf b = { .data = s->buf, .cap = sizeof(s->buf) };

	memset(s->buf, 0, MROC_HDR_LEN + MROC_CM_HDR_LEN);
	s->buf[0] = MROC_WIRE_VERSION;
	s->buf[1] = MROC_OP_CONNECT_REQ;
	s->buf[11] = 0x99;			/* src QPN */
	s->olen = b.len = MROC_HDR_LEN + MROC_CM_HDR_LEN;
	memcpy(s->orig, s->buf, s->olen);
	assert_int_equal(aead_seal(a, &b, &A, &B), 0);
	s->len = b.len;
}

/*
 * #24 item 6: a sealed CONNECT_REQ is taken once.  Its replay is refused
 * (rx_stale), by this worker and by another of the daemon (a shared
 * table), and by a daemon started after it was sealed; the sender's next
 * REQ is taken.  Other packets open again (the transport's windows refuse
 * their replays).
 */
static void test_req_replay(void **state)
{
	struct aead_keyset ks = keyset(5, 0x11);
	struct aead *tx, *rx, *rx2, *later;
	struct aead_stats st;
	struct sealed s, s2;
	uint8_t sealed, copy[1024];

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &tx), 0);
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	assert_int_equal(aead_create(&ks, 0, &rx2), 0);
	aead_share_replay(rx2, rx);
	seal_req(tx, &s);
	memcpy(copy, s.buf, s.len);
	assert_int_equal(aead_open(rx, s.buf, s.len, &A, &B, &sealed), (int)s.olen);
	assert_int_equal(sealed, ENGINE_RX_SEALED);
	memcpy(s.buf, copy, s.len);
	assert_int_equal(aead_open(rx, s.buf, s.len, &A, &B, &sealed), -ESTALE);
	memcpy(s.buf, copy, s.len);
	assert_int_equal(aead_open(rx2, s.buf, s.len, &A, &B, &sealed), -ESTALE);
	/* Sealed before this one started: refused too. */
	assert_int_equal(aead_create(&ks, 0, &later), 0);
	memcpy(s.buf, copy, s.len);
	assert_int_equal(aead_open(later, s.buf, s.len, &A, &B, &sealed), -ESTALE);
	aead_get_stats(rx, &st);
	assert_int_equal(st.rx_stale, 1);
	assert_int_equal(st.rx_opened, 1);
	/* The sender's next REQ is taken. */
	seal_req(tx, &s2);
	assert_int_equal(aead_open(rx2, s2.buf, s2.len, &A, &B, &sealed), (int)s2.olen);
	aead_destroy(tx);
	aead_destroy(rx);
	aead_destroy(rx2);
	aead_destroy(later);
}

/*
 * #24 item 7: made-up sender ids cost at most AEAD_DERIVE_BURST key
 * derivations at once (then counted, rx_derive_limited), and never push a
 * real sender's context out: its packets still open, none of them needing
 * a derivation.
 */
static void test_forged_senders(void **state)
{
	struct aead_keyset ks = keyset(5, 0x11);
	struct aead *tx, *rx;
	struct aead_stats st;
	struct sealed s;
	uint8_t sealed, pkt[1024];

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &tx), 0);
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	seal_one(tx, &s);
	memcpy(pkt, s.buf, s.len);
	assert_int_equal(aead_open(rx, pkt, s.len, &A, &B, &sealed), (int)s.olen);
	for (uint32_t i = 0; i < 20000; i++) {
		memcpy(pkt, s.buf, s.len);
		memcpy(pkt + s.olen + 4, &i, sizeof(i));	/* every slot of the cache, in turn */
		pkt[s.olen + 4 + 7] ^= (uint8_t)(i * 7);
		assert_true(aead_open(rx, pkt, s.len, &A, &B, &sealed) < 0);
	}
	aead_get_stats(rx, &st);
	assert_true(st.rx_derive_limited >= 20000 - AEAD_DERIVE_BURST - 2 * AEAD_DERIVE_PER_S);
	assert_int_equal(st.rx_bad_tag + st.rx_derive_limited, 20000);
	for (int k = 0; k < 100; k++) {
		seal_one(tx, &s);
		assert_int_equal(aead_open(rx, s.buf, s.len, &A, &B, &sealed), (int)s.olen);
	}
	aead_get_stats(rx, &st);
	assert_int_equal(st.rx_opened, 101);
	aead_destroy(tx);
	aead_destroy(rx);
}

/*
 * Made-up sender ids from other addresses (a flood of forged sealed REQs:
 * anyone can send them) took every key derivation, and a peer that then
 * restarted (its packets under a new sender id, from the address whose
 * packets opened before) was refused too (rx_derive_limited) for as long
 * as the flood lasted: it could not connect again.  Sources whose packets
 * opened before have a budget of their own.
 */
static void test_forged_senders_spare_known(void **state)
{
	struct aead_keyset ks = keyset(5, 0x11);
	struct aead *tx, *rx;
	struct aead_stats st;
	struct sealed s;
	uint8_t sealed, pkt[1024];

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &tx), 0);
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	seal_one(tx, &s);
	assert_int_equal(aead_open(rx, s.buf, s.len, &A, &B, &sealed), (int)s.olen);
	for (uint32_t i = 0; i < 20000; i++) {
		seal_one(tx, &s);
		memcpy(pkt, s.buf, s.len);
		memcpy(pkt + s.olen + 4, &i, sizeof(i));
		pkt[s.olen + 4 + 7] ^= 0x5a;
		assert_true(aead_open(rx, pkt, s.len, &C, &B, &sealed) < 0);
	}
	aead_get_stats(rx, &st);
	assert_true(st.rx_derive_limited > 0);
	/* A restarts: a new sender. */
	aead_destroy(tx);
	assert_int_equal(aead_create(&ks, 0, &tx), 0);
	seal_one(tx, &s);
	assert_int_equal(aead_open(rx, s.buf, s.len, &A, &B, &sealed), (int)s.olen);
	assert_int_equal(sealed, ENGINE_RX_SEALED);
	aead_destroy(tx);
	aead_destroy(rx);
}

/* Open a copy of s as if it came from src to dst. */
static int open_as(struct aead *rx, const struct sealed *s, const struct mroc_addr *src,
		   const struct mroc_addr *dst)
{
	uint8_t pkt[1024], sealed;

	memcpy(pkt, s->buf, s->len);
	return aead_open(rx, pkt, s->len, src, dst, &sealed);
}

/*
 * #24 case 2: the seal covers the IP addresses.  A packet sealed for A -> B
 * is refused from another source, to another destination and reflected;
 * a captured CONNECT_REQ sent again from another host is refused as a bad
 * tag without being taken, so the requester's own copy still connects.
 * IPv6 alike; an address of the other family is another address.
 */
static void test_other_addresses(void **state)
{
	static const struct mroc_addr A6 = { .family = AF_INET6,
					     .bytes = { 0xfd, 0, [15] = 1 } },
				      B6 = { .family = AF_INET6,
					     .bytes = { 0xfd, 0, [15] = 2 } },
				      C6 = { .family = AF_INET6,
					     .bytes = { 0xfd, 0, [14] = 1, [15] = 1 } };
	struct aead_keyset ks = keyset(5, 0x11);
	struct aead *tx, *rx;
	struct aead_stats st;
	struct sealed s;

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &tx), 0);
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	seal_one(tx, &s);
	assert_true(s.buf[2] & MROC_F_SEALED_IP);
	assert_int_equal(open_as(rx, &s, &C, &B), -EBADMSG);
	assert_int_equal(open_as(rx, &s, &A, &C), -EBADMSG);
	assert_int_equal(open_as(rx, &s, &B, &A), -EBADMSG);
	assert_int_equal(open_as(rx, &s, &A6, &B6), -EBADMSG);
	assert_int_equal(open_as(rx, &s, &A, &B), (int)s.olen);

	/* A REQ captured on the wire, sent again from C first: not taken, so A's own is. */
	seal_req(tx, &s);
	assert_int_equal(open_as(rx, &s, &C, &B), -EBADMSG);
	aead_get_stats(rx, &st);
	assert_int_equal(st.rx_stale, 0);
	assert_int_equal(open_as(rx, &s, &A, &B), (int)s.olen);
	assert_int_equal(open_as(rx, &s, &A, &B), -ESTALE);

	/* IPv6. */
	{
		struct engine_txbuf b = { .data = s.buf, .cap = sizeof(s.buf) };

		s.olen = b.len = write_pkt(s.buf);
		assert_int_equal(aead_seal(tx, &b, &A6, &B6), 0);
		s.len = b.len;
	}
	assert_int_equal(open_as(rx, &s, &C6, &B6), -EBADMSG);
	assert_int_equal(open_as(rx, &s, &A6, &C6), -EBADMSG);
	assert_int_equal(open_as(rx, &s, &A, &B), -EBADMSG);
	assert_int_equal(open_as(rx, &s, &A6, &B6), (int)s.olen);
	aead_get_stats(rx, &st);
	assert_int_equal(st.rx_bad_tag, 8);
	assert_int_equal(st.rx_opened, 3);
	assert_int_equal(st.rx_stale, 1);
	aead_destroy(tx);
	aead_destroy(rx);
}

/*
 * Sealed without the addresses (MROC_F_SEALED_IP clear: an mrocd from before
 * they were covered): refused as a key we do not share, never opened.
 * Addresses not known: nothing is sealed (counted), nothing opened.
 */
static void test_addresses_required(void **state)
{
	struct aead_keyset ks = keyset(5, 0x11);
	const struct mroc_addr none = { .family = 0 };
	struct aead *tx, *rx;
	struct aead_stats st;
	struct sealed s;
	uint8_t pkt[1024];

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &tx), 0);
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	seal_one(tx, &s);
	s.buf[2] &= (uint8_t)~MROC_F_SEALED_IP;
	assert_int_equal(open_as(rx, &s, &A, &B), -EPROTO);
	aead_get_stats(rx, &st);
	assert_int_equal(st.rx_bad_key, 1);
	seal_one(tx, &s);
	assert_int_equal(open_as(rx, &s, &A, &none), -EADDRNOTAVAIL);
	assert_int_equal(open_as(rx, &s, NULL, &B), -EADDRNOTAVAIL);
	{
		struct engine_txbuf b = { .data = pkt, .cap = sizeof(pkt), .len = write_pkt(pkt) };

		assert_int_equal(aead_seal(tx, &b, &A, NULL), -EDESTADDRREQ);
		assert_int_equal(aead_seal(tx, &b, &A, &(struct mroc_addr){ .family = AF_INET6 }),
				 -EDESTADDRREQ);
		assert_int_equal(b.len, MROC_DATA_OVERHEAD + PLEN);
		assert_false(pkt[2] & MROC_F_SEALED);
	}
	aead_get_stats(tx, &st);
	assert_int_equal(st.tx_failed, 2);
	aead_get_stats(rx, &st);
	assert_int_equal(st.rx_opened, 0);
	aead_destroy(tx);
	aead_destroy(rx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_flipped_bits),
		cmocka_unit_test(test_wrong_key),
		cmocka_unit_test(test_plain_and_keyless),
		cmocka_unit_test(test_full_buffer),
		cmocka_unit_test(test_req_replay),
		cmocka_unit_test(test_forged_senders),
		cmocka_unit_test(test_forged_senders_spare_known),
		cmocka_unit_test(test_other_addresses),
		cmocka_unit_test(test_addresses_required),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
