/* SPDX-License-Identifier: MIT */
/*
 * Security mode "aead": AES-256-GCM on every MetaRoCE packet, with keys the
 * operator provisions in a file (security.key_file), as UEC UET's TSS does.
 * docs/PROTOCOL.md 1.2 is the prose; in short:
 *
 *   packet' = header | E(payload) | key id (4) | sender (8) | seq (8) | tag (16)
 *
 * with MROC_F_SEALED and MROC_F_SEALED_IP (wire.h) set in the common header's
 * flags.  The header (for packets without payload: all of it), the trailer's
 * first 20 bytes and the IP source and destination addresses of the packet
 * are authenticated, the payload is encrypted: a sealed packet opens only
 * between the two addresses it was sealed for, so a captured one sent from
 * another host is refused.  Each daemon start draws a
 * random 64-bit sender id; the packet key is HKDF-SHA256(master key of
 * that id, "mroc aead v1" | key id | sender), the 96-bit nonce is the
 * sender's 64-bit packet counter.  So a nonce repeats under one key only if
 * a counter wraps (2^64 packets) or two starts draw the same sender id.
 *
 * The backend seals once it has chosen the packet's addresses (the worker
 * sets backend.seal), and the worker opens before engine_rx with the
 * addresses the packet came between; the ICRC (frame.c) is added outside
 * the seal and checked first.  A struct aead belongs
 * to one thread (the worker); aead_keys_load and aead_create are for
 * start-up (and mrocd --check-config).  Functions return 0 or -errno.
 */
#ifndef MROCD_AEAD_H
#define MROCD_AEAD_H

#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "engine.h"

#define AEAD_KEY_LEN		32	/* AES-256 */
#define AEAD_MAX_KEYS		16
#define AEAD_TAG_LEN		16
#define AEAD_TRAILER_LEN	(4 + 8 + 8 + AEAD_TAG_LEN)
/* A CONNECT_REQ is taken this close to our clock (CLOCK_REALTIME), once (aead.c). */
#define AEAD_FRESH_NS		10000000000ULL
/*
 * Key derivations for senders not heard from yet: at most this many at once,
 * this many a second; for sources whose packets opened before, as many again
 * of their own (aead.c GOOD_SLOTS).
 */
#define AEAD_DERIVE_BURST	64
#define AEAD_DERIVE_PER_S	256

/*
 * Stateless cookies (docs/PROTOCOL.md 1.2): a CONNECT_REQ refused for the
 * budget above is answered with a cookie reply (unsealed, flag COOKIE,
 * AEAD_COOKIE_REPLY_LEN bytes: never more than the REQ), a MAC of the REQ's
 * addresses, key id, sender and the time under a secret of the daemon's;
 * the requester's next REQ carries it sealed, and a REQ with a valid one
 * draws on a budget of its source address's own.
 */
#define AEAD_COOKIE_LEN		16
#define AEAD_COOKIE_ECHO_LEN	8	/* the first bytes of the answered REQ's tag */
#define AEAD_COOKIE_REPLY_LEN	(MROC_HDR_LEN + AEAD_COOKIE_ECHO_LEN + AEAD_COOKIE_LEN)
/* A cookie checks in the period it was made and the next: 10 to 20 s. */
#define AEAD_COOKIE_PERIOD_NS	10000000000ULL
/*
 * Cookie replies a worker sends: at most this many at once, this many a
 * second.  A reply is smaller than the REQ it answers, so the bucket only
 * bounds our own sending; a host's REQ among R a second gets its reply with
 * probability min(1, AEAD_COOKIE_REPLY_PER_S / R): high, so that a flood a
 * worker can take at all does not starve the host of its cookie.
 */
#define AEAD_COOKIE_REPLY_BURST	8192
#define AEAD_COOKIE_REPLY_PER_S	65536
/* Derivations for REQs with a valid cookie, per source address (hashed into slots). */
#define AEAD_COOKIE_SRC_BURST	4
#define AEAD_COOKIE_SRC_PER_S	2

struct aead_keyset {
	uint32_t n;
	struct aead_key {
		uint32_t id;		/* 1..2^32-1, distinct; on the wire */
		uint8_t key[AEAD_KEY_LEN];
	} k[AEAD_MAX_KEYS];
};

/*
 * Read a key file: a regular file of mode 0600 or stricter (no group or
 * other bits), one "ID HEX" per line (ID decimal, HEX 64 hex digits), '#'
 * comments and blank lines ignored, at least one key.  On failure err
 * says what and where ("FILE:3: ...").
 */
int aead_keys_load(const char *path, struct aead_keyset *out, char *err, size_t errlen);
/* The key with this id, or NULL. */
const struct aead_key *aead_keys_find(const struct aead_keyset *ks, uint32_t id);

struct aead_stats {
	uint64_t tx_sealed, rx_opened;
	uint64_t tx_failed;		/* could not seal (sent unsealed: the peer drops it) */
	uint64_t rx_bad_tag;		/* authentication failed: altered, not our key, or sent
					 * between other addresses than it was sealed for */
	uint64_t rx_bad_key;		/* key id not in the key file, or sealed without the IP
					 * addresses (an older mrocd: logged) */
	uint64_t rx_short;		/* flag set, no room for the trailer */
	uint64_t rx_plain;		/* no trailer (handed on as plain: the engine refuses) */
	uint64_t rx_stale;		/* a CONNECT_REQ out of the window, or taken before */
	uint64_t rx_derive_limited;	/* an unknown sender's packet, over the derivation budget */
	uint64_t cookie_sent;		/* cookie replies made, for REQs over the budget */
	uint64_t cookie_limited;	/* REQs over the budget left unanswered: replies over theirs */
	uint64_t cookie_ok;		/* REQs whose cookie checked */
	uint64_t cookie_bad;		/* REQs whose cookie did not (made up, expired, moved), and
					 * cookie replies that answer no REQ of ours */
	uint64_t cookie_got;		/* cookie replies taken: our next REQ there carries it */
};

struct aead;

/* tx_key_id 0: the highest id in the set.  -ENOKEY if tx_key_id is not in it. */
int aead_create(const struct aead_keyset *keys, uint32_t tx_key_id, struct aead **out);
void aead_destroy(struct aead *a);
/*
 * a takes the table of CONNECT_REQs taken, the cookie secret and the cookies
 * held that with has (the workers of one daemon share them: a REQ's answer
 * or its next try may reach another worker).
 */
void aead_share_replay(struct aead *a, struct aead *with);

/*
 * Seal the packet in b in place for the IP addresses src -> dst it will
 * leave with (same family; b->cap must have AEAD_TRAILER_LEN bytes beyond
 * b->len).  b->plain packets are left alone.  0 or -errno (counted in
 * tx_failed: it goes out unsealed and the peer drops it).
 */
int aead_seal(struct aead *a, struct engine_txbuf *b, const struct mroc_addr *src,
	      const struct mroc_addr *dst);

/*
 * Open a received packet in place; src and dst are the IP addresses it came
 * between, as this host sees them (the frame's, IPv4-mapped IPv6 as IPv4).
 * Returns its length without the trailer and sets *sealed (enum
 * engine_rx_sealed), or -errno (counted: drop it).  a NULL (not in "aead"):
 * a sealed packet's trailer is removed unchecked and *sealed =
 * ENGINE_RX_UNVERIFIED, so the engine can refuse a REQ.
 * Two errors ask for more: -EAGAIN, a CONNECT_REQ over the derivation
 * budget (the packet untouched): answer it with aead_cookie_reply; -ENOMSG,
 * a cookie reply (taken if it answers our last REQ to src): nothing for the
 * engine.
 */
int aead_open(struct aead *a, uint8_t *pkt, size_t len, const struct mroc_addr *src,
	      const struct mroc_addr *dst, uint8_t *sealed);

/*
 * The worker's batch helpers (a NULL: nothing to do): hold AEAD_TRAILER_LEN
 * of each of the n buffers back before engine_tx; after it, give it back to
 * the first n (those engine_tx wrote), for the backend's seal.
 */
void aead_reserve(struct aead *a, struct engine_txbuf *b, int n);
void aead_unreserve(struct aead *a, struct engine_txbuf *b, int n);

/*
 * The cookie reply to req (len bytes, as received from src to dst, which
 * aead_open refused with -EAGAIN) into out (cap bytes): its length
 * (AEAD_COOKIE_REPLY_LEN, never more than len), or -EBUSY over the reply
 * budget, -EINVAL for what is no sealed REQ (counted: cookie_limited).
 * It goes back the way req came: to src, from dst.
 */
int aead_cookie_reply(struct aead *a, const uint8_t *req, size_t len, const struct mroc_addr *src,
		      const struct mroc_addr *dst, uint8_t *out, size_t cap);

/*
 * always: a CONNECT_REQ from a source whose packets never opened here needs
 * a cookie even while the budget has derivations left (security.cookies =
 * "always": a peer from before cookies cannot connect then).
 */
void aead_set_cookies_always(struct aead *a, bool always);

void aead_get_stats(const struct aead *a, struct aead_stats *out);

#endif
