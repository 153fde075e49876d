// SPDX-License-Identifier: MIT
/* Security mode "aead": AES-256-GCM per packet with provisioned keys (see aead.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <sodium.h>

#include "aead.h"
#include "log.h"
#include "worker.h"

/* ---- the key file ------------------------------------------------------------ */

static int kerr(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "ID HEX" (blank or comment lines: 0 and nothing added). */
static int parse_line(const char *s, struct aead_keyset *ks, const char **why)
{
	struct aead_key k;
	unsigned long id;
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	if (!*s || *s == '#')
		return 0;
	errno = 0;
	id = strtoul(s, &end, 10);
	if (end == s || errno || !id || id > UINT32_MAX || !isspace((unsigned char)*end)) {
		*why = "want \"ID HEX\": a key id 1..4294967295, then the key";
		return -EINVAL;
	}
	for (s = end; isspace((unsigned char)*s); s++)
		;
	for (int i = 0; i < AEAD_KEY_LEN; i++) {
		int hi = hexval((unsigned char)s[2 * i]), lo = hi < 0 ? -1 :
								 hexval((unsigned char)s[2 * i + 1]);

		if (lo < 0) {
			*why = "the key must be 64 hex digits (32 bytes, AES-256)";
			return -EINVAL;
		}
		k.key[i] = (uint8_t)(hi << 4 | lo);
	}
	for (s += 2 * AEAD_KEY_LEN; isspace((unsigned char)*s); s++)
		;
	if (*s && *s != '#') {
		*why = "the key must be 64 hex digits (32 bytes, AES-256)";
		return -EINVAL;
	}
	for (uint32_t i = 0; i < ks->n; i++)
		if (ks->k[i].id == id) {
			*why = "key id used twice";
			return -EINVAL;
		}
	if (ks->n == AEAD_MAX_KEYS) {
		*why = "more than 16 keys";
		return -EINVAL;
	}
	k.id = (uint32_t)id;
	ks->k[ks->n++] = k;
	OPENSSL_cleanse(&k, sizeof(k));
	return 0;
}

int aead_keys_load(const char *path, struct aead_keyset *out, char *err, size_t errlen)
{
	struct aead_keyset ks = { .n = 0 };
	const char *why = NULL;
	char line[256];
	struct stat st;
	unsigned lineno = 0;
	FILE *f;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return kerr(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return kerr(err, errlen, -EINVAL, "%s: not a regular file", path);
	}
	/* Keys others can read are not secret: refuse, as ssh does. */
	if (st.st_mode & 077) {
		close(fd);
		return kerr(err, errlen, -EPERM, "%s: mode %04o lets others read the keys: "
			    "must be 0600 or stricter", path, (unsigned)(st.st_mode & 07777));
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return kerr(err, errlen, -ENOMEM, "%s: %s", path, strerror(errno));
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = kerr(err, errlen, -EINVAL, "%s:%u: line too long", path, lineno);
			break;
		}
		if (parse_line(line, &ks, &why))
			rc = kerr(err, errlen, -EINVAL, "%s:%u: %s", path, lineno, why);
	}
	if (!rc && ferror(f))
		rc = kerr(err, errlen, -EIO, "%s: read error", path);
	if (!rc && !ks.n)
		rc = kerr(err, errlen, -EINVAL, "%s: no key in it", path);
	fclose(f);
	OPENSSL_cleanse(line, sizeof(line));
	if (!rc)
		*out = ks;
	OPENSSL_cleanse(&ks, sizeof(ks));
	return rc;
}

/* ---- contexts ------------------------------------------------------------------- */

/*
 * (key id, sender) pairs heard from, with their ready contexts, direct-mapped
 * by a hash of the pair: every peer worker's sealer is a sender, so a
 * cluster of dozens of hosts has well over 16 (a 16-entry round-robin cache
 * derived a key on almost every packet there); a lookup stays one slot.
 */
#define RX_CACHE	1024

struct aead_peer {
	uint32_t key_id;
	uint64_t sender;
	EVP_CIPHER_CTX *ctx;
};

/*
 * Fresh CONNECT_REQs (docs/PROTOCOL.md 11a): a REQ's seq is its sender's
 * clock (CLOCK_REALTIME, ns) when sealed; it is taken within AEAD_FRESH_NS
 * of ours, and only above the last REQ taken from that sender, so each is
 * taken once.  Shared by the workers of a daemon (a replay may reach any):
 * a table of senders direct-mapped by hash under a lock (REQs are rare).
 * A sender pushed out while its last REQ is still in the window raises
 * floor, below which nobody's REQ is taken; so does the start (a REQ sealed
 * before we started may have been taken by the daemon before us).
 */
#define REPLAY_SLOTS	4096

/*
 * Source addresses whose packets opened (direct-mapped by hash, the newest
 * wins a slot): a key derivation for one of them draws from a budget of its
 * own.  Anyone can send sealed REQs with made-up sender ids from spoofed
 * addresses, and each costs a derivation: with one budget, a flood of them
 * took every derivation, and a peer that restarted meanwhile (a new sender
 * id) could not be opened, and so not connect, until the flood ended.
 */
#define GOOD_SLOTS	256
enum { BUDGET_ANY, BUDGET_KNOWN, BUDGETS };

/* Source addresses (keyed hash) whose REQs brought a valid cookie: a derivation budget each. */
#define COOKIE_SRC_SLOTS	1024
/* Cookies we hold, for the responders we sent REQs to (direct-mapped by their address). */
#define COOKIE_HELD		256

struct token_bucket {
	uint64_t tokens, at_ns;
};

struct cookie_held {
	struct mroc_addr src, dst;	/* our address, the responder's */
	uint8_t echo[2][AEAD_COOKIE_ECHO_LEN];	/* the tags of our last two REQs there */
	uint8_t cookie[AEAD_COOKIE_LEN];
	uint64_t at_ns;			/* when it came (mrocd_now_ns); 0: none */
};

/* What a daemon's workers share: the REQ freshness table, the cookie secret, the cookies held. */
struct aead_replay {
	pthread_mutex_t lock;
	uint64_t floor;
	struct { uint64_t sender, last; } s[REPLAY_SLOTS];
	uint8_t cookie_key[crypto_shorthash_siphashx24_KEYBYTES];	/* random per start */
	struct cookie_held held[COOKIE_HELD];
	int refs;
};

struct aead {
	struct aead_keyset keys;
	EVP_KDF *kdf;
	uint32_t tx_key_id;
	uint64_t sender;	/* random per start: a fresh packet key */
	uint64_t seq;		/* packets sealed: the nonce (a REQ's: a clock) */
	EVP_CIPHER_CTX *tx;
	struct aead_peer rx[RX_CACHE];
	struct aead_replay *replay;
	/* key derivations for senders not in rx[]: buckets of AEAD_DERIVE_BURST */
	struct token_bucket derive[BUDGETS];
	struct mroc_addr good[GOOD_SLOTS];
	struct token_bucket cookie_src[COOKIE_SRC_SLOTS];	/* AEAD_COOKIE_SRC_BURST each */
	struct token_bucket cookie_reply;
	bool cookies_always;
	struct aead_stats st;
};

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void put32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

static void put64(uint8_t *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b + 4, (uint32_t)v);
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static uint64_t get64(const uint8_t *b)
{
	return (uint64_t)get32(b) << 32 | get32(b + 4);
}

const struct aead_key *aead_keys_find(const struct aead_keyset *ks, uint32_t id)
{
	for (uint32_t i = 0; i < ks->n; i++)
		if (ks->k[i].id == id)
			return &ks->k[i];
	return NULL;
}

/* A cipher context keyed with HKDF(master, "mroc aead v1" | key id | sender). */
static EVP_CIPHER_CTX *packet_ctx(struct aead *a, const struct aead_key *k, uint64_t sender,
				  bool enc)
{
	static const char label[] = "mroc aead v1";
	uint8_t info[sizeof(label) - 1 + 12], key[AEAD_KEY_LEN];
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)k->key,
						  AEAD_KEY_LEN),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, sizeof(info)),
		OSSL_PARAM_construct_end(),
	};
	EVP_KDF_CTX *kctx = EVP_KDF_CTX_new(a->kdf);
	EVP_CIPHER_CTX *ctx = NULL;
	int ok;

	memcpy(info, label, sizeof(label) - 1);
	put32(info + sizeof(label) - 1, k->id);
	put64(info + sizeof(label) - 1 + 4, sender);
	ok = kctx && EVP_KDF_derive(kctx, key, sizeof(key), params) > 0;
	EVP_KDF_CTX_free(kctx);
	if (ok)
		ctx = EVP_CIPHER_CTX_new();
	if (ctx && !(enc ? EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, NULL) :
			   EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, NULL))) {
		EVP_CIPHER_CTX_free(ctx);
		ctx = NULL;
	}
	OPENSSL_cleanse(key, sizeof(key));
	return ctx;
}

int aead_create(const struct aead_keyset *keys, uint32_t tx_key_id, struct aead **out)
{
	struct aead *a = calloc(1, sizeof(*a));
	const struct aead_key *k;

	if (!a)
		return -ENOMEM;
	a->keys = *keys;
	for (uint32_t i = 0; !tx_key_id && i < keys->n; i++)
		if (keys->k[i].id > a->tx_key_id)
			a->tx_key_id = keys->k[i].id;
	if (tx_key_id)
		a->tx_key_id = tx_key_id;
	k = aead_keys_find(&a->keys, a->tx_key_id);
	if (!k) {
		aead_destroy(a);
		return -ENOKEY;
	}
	if (getrandom(&a->sender, sizeof(a->sender), 0) != sizeof(a->sender)) {
		aead_destroy(a);
		return -EIO;
	}
	a->replay = calloc(1, sizeof(*a->replay));
	if (!a->replay) {
		aead_destroy(a);
		return -ENOMEM;
	}
	pthread_mutex_init(&a->replay->lock, NULL);
	a->replay->refs = 1;
	if (getrandom(a->replay->cookie_key, sizeof(a->replay->cookie_key), 0) !=
	    sizeof(a->replay->cookie_key)) {
		aead_destroy(a);
		return -EIO;
	}
	a->replay->floor = clock_ns(CLOCK_REALTIME);
	for (int i = 0; i < BUDGETS; i++)
		a->derive[i].tokens = AEAD_DERIVE_BURST;
	a->kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	a->tx = a->kdf ? packet_ctx(a, k, a->sender, true) : NULL;
	if (!a->tx) {
		aead_destroy(a);
		return -ENOTSUP;
	}
	*out = a;
	return 0;
}

static void replay_put(struct aead_replay *r)
{
	bool last;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	last = !--r->refs;
	pthread_mutex_unlock(&r->lock);
	if (!last)
		return;
	pthread_mutex_destroy(&r->lock);
	OPENSSL_cleanse(r->cookie_key, sizeof(r->cookie_key));
	free(r);
}

void aead_share_replay(struct aead *a, struct aead *with)
{
	if (!a || !with || a->replay == with->replay)
		return;
	replay_put(a->replay);
	pthread_mutex_lock(&with->replay->lock);
	with->replay->refs++;
	pthread_mutex_unlock(&with->replay->lock);
	a->replay = with->replay;
}

void aead_destroy(struct aead *a)
{
	if (!a)
		return;
	replay_put(a->replay);
	EVP_CIPHER_CTX_free(a->tx);
	for (unsigned i = 0; i < RX_CACHE; i++)
		EVP_CIPHER_CTX_free(a->rx[i].ctx);
	EVP_KDF_free(a->kdf);
	OPENSSL_cleanse(a, sizeof(*a));
	free(a);
}

void aead_set_cookies_always(struct aead *a, bool always)
{
	a->cookies_always = always;
}

void aead_get_stats(const struct aead *a, struct aead_stats *out)
{
	*out = a->st;
}

/* ---- packets -------------------------------------------------------------------- */

/* Bytes of a packet that are authenticated but not encrypted: all but a data payload. */
static size_t clear_span(const uint8_t *pkt, size_t len)
{
	return mroc_op_is_data(mroc_pkt_opcode(pkt, len)) && len > MROC_DATA_OVERHEAD ?
	       MROC_DATA_OVERHEAD : len;
}

static void nonce_of(uint8_t iv[12], uint64_t seq)
{
	put32(iv, 0);
	put64(iv + 4, seq);
}

/*
 * The additional data's last bytes: the packet's IP source then destination
 * address (4 + 4 or 16 + 16 bytes), as the receiver sees them.  0 when they
 * are not known or not of one family: nothing can be sealed or opened.
 */
static int ip_ad(uint8_t out[32], const struct mroc_addr *src, const struct mroc_addr *dst)
{
	size_t n = src ? addr_len(src) : 0;

	if (!n || !dst || dst->family != src->family)
		return 0;
	memcpy(out, src->bytes, n);
	memcpy(out + n, dst->bytes, n);
	return (int)(2 * n);
}

/* ---- cookies (docs/PROTOCOL.md 1.2) ------------------------------------------ */

/* A bucket of burst tokens refilled at per_s: takes one if it can. */
static bool bucket_take(struct token_bucket *t, uint64_t burst, uint64_t per_s)
{
	uint64_t now = mrocd_now_ns(), dt = now - t->at_ns, add;

	if (dt > 10000000000ULL)
		dt = 10000000000ULL;	/* more than fills any bucket; no overflow */
	add = dt * per_s / 1000000000ULL;
	if (add) {
		t->tokens = t->tokens + add > burst ? burst : t->tokens + add;
		t->at_ns = now;
	}
	if (!t->tokens)
		return false;
	t->tokens--;
	return true;
}

/* An address as MAC input: its family's length, then its bytes.  Returns the bytes written. */
static size_t addr_put(uint8_t *out, const struct mroc_addr *a)
{
	size_t n = addr_len(a);

	out[0] = (uint8_t)n;
	memcpy(out + 1, a->bytes, n);
	return n + 1;
}

/*
 * The cookie of period epoch for a REQ of (key id, sender) from src to dst.
 * SipHash-2-4 with a 128-bit output under the daemon's random key: the
 * period is MAC input, so each period's cookies are as under a new secret
 * (the rotation), and nothing is kept per requester.
 */
static void cookie_mac(const struct aead *a, uint64_t epoch, uint32_t key_id, uint64_t sender,
		       const struct mroc_addr *src, const struct mroc_addr *dst,
		       uint8_t out[AEAD_COOKIE_LEN])
{
	uint8_t m[1 + 8 + 4 + 8 + 2 * 17];
	size_t n = 21;

	_Static_assert(AEAD_COOKIE_LEN == crypto_shorthash_siphashx24_BYTES, "a cookie is one MAC");
	m[0] = 'c';
	put64(m + 1, epoch);
	put32(m + 9, key_id);
	put64(m + 13, sender);
	n += addr_put(m + n, src);
	n += addr_put(m + n, dst);
	crypto_shorthash_siphashx24(out, m, n, a->replay->cookie_key);
}

/* The cookie period now (the daemon's clock, mrocd_now_ns: tests set it). */
static uint64_t cookie_epoch(void)
{
	return mrocd_now_ns() / AEAD_COOKIE_PERIOD_NS;
}

/* Made this period or the last one for this REQ? */
static bool cookie_valid(const struct aead *a, const uint8_t *cookie, uint32_t key_id,
			 uint64_t sender, const struct mroc_addr *src, const struct mroc_addr *dst)
{
	uint64_t e = cookie_epoch();
	uint8_t want[AEAD_COOKIE_LEN];
	bool ok = false;

	for (uint64_t k = 0; k < 2 && k <= e && !ok; k++) {
		cookie_mac(a, e - k, key_id, sender, src, dst, want);
		ok = !sodium_memcmp(want, cookie, AEAD_COOKIE_LEN);
	}
	return ok;
}

/* The derivation budget of src's slot (keyed hash: nobody aims at another's). */
static bool cookie_src_allowed(struct aead *a, const struct mroc_addr *src)
{
	uint8_t m[1 + 17], h[crypto_shorthash_BYTES];
	uint64_t slot;

	m[0] = 's';
	crypto_shorthash(h, m, 1 + addr_put(m + 1, src), a->replay->cookie_key);
	memcpy(&slot, h, sizeof(slot));
	if (bucket_take(&a->cookie_src[slot % COOKIE_SRC_SLOTS], AEAD_COOKIE_SRC_BURST,
			AEAD_COOKIE_SRC_PER_S))
		return true;
	a->st.rx_derive_limited++;
	return false;
}

static struct cookie_held *held_slot(struct aead_replay *r, const struct mroc_addr *dst)
{
	return &r->held[addr_hash(dst) % COOKIE_HELD];
}

/* The cookie dst gave us for REQs from src, if it is still good: into out. */
static bool cookie_held_get(struct aead *a, const struct mroc_addr *src,
			    const struct mroc_addr *dst, uint8_t out[AEAD_COOKIE_LEN])
{
	struct aead_replay *r = a->replay;
	uint64_t now = mrocd_now_ns();
	struct cookie_held *h;
	bool ok;

	pthread_mutex_lock(&r->lock);
	h = held_slot(r, dst);
	ok = h->at_ns && now < h->at_ns + AEAD_COOKIE_PERIOD_NS && addr_eq(&h->dst, dst) &&
	     addr_eq(&h->src, src);
	if (ok)
		memcpy(out, h->cookie, AEAD_COOKIE_LEN);
	pthread_mutex_unlock(&r->lock);
	return ok;
}

/* A REQ from src to dst with this tag left: a cookie reply must echo it (or the one before). */
static void cookie_held_sent(struct aead *a, const struct mroc_addr *src,
			     const struct mroc_addr *dst, const uint8_t *tag)
{
	struct aead_replay *r = a->replay;
	struct cookie_held *h;

	pthread_mutex_lock(&r->lock);
	h = held_slot(r, dst);
	if (!addr_eq(&h->dst, dst) || !addr_eq(&h->src, src))
		*h = (struct cookie_held){ .src = *src, .dst = *dst };
	memcpy(h->echo[1], h->echo[0], AEAD_COOKIE_ECHO_LEN);
	memcpy(h->echo[0], tag, AEAD_COOKIE_ECHO_LEN);
	pthread_mutex_unlock(&r->lock);
}

/*
 * A cookie reply from src (a responder) to dst (us): kept for our next REQ
 * there if it echoes one of our last two REQs' tags, which nobody who does
 * not see our packets knows (an off-path host cannot plant a bad cookie).
 * Always -ENOMSG: nothing for the engine.
 */
static int cookie_take(struct aead *a, const uint8_t *p, size_t len, const struct mroc_addr *src,
		       const struct mroc_addr *dst)
{
	struct aead_replay *r = a->replay;
	const uint8_t *echo = p + MROC_HDR_LEN;
	struct cookie_held *h;
	bool ok = false;

	if (len >= AEAD_COOKIE_REPLY_LEN && mroc_pkt_opcode(p, len) == MROC_OP_CONNECT_REJ &&
	    src && dst && src->family && dst->family) {
		pthread_mutex_lock(&r->lock);
		h = held_slot(r, src);
		ok = addr_eq(&h->dst, src) && addr_eq(&h->src, dst) &&
		     (!sodium_memcmp(h->echo[0], echo, AEAD_COOKIE_ECHO_LEN) ||
		      !sodium_memcmp(h->echo[1], echo, AEAD_COOKIE_ECHO_LEN)) &&
		     !sodium_is_zero(echo, AEAD_COOKIE_ECHO_LEN);
		if (ok) {
			memcpy(h->cookie, echo + AEAD_COOKIE_ECHO_LEN, AEAD_COOKIE_LEN);
			h->at_ns = mrocd_now_ns() | 1;
		}
		pthread_mutex_unlock(&r->lock);
	}
	if (ok)
		a->st.cookie_got++;
	else
		a->st.cookie_bad++;
	return -ENOMSG;
}

int aead_cookie_reply(struct aead *a, const uint8_t *req, size_t len, const struct mroc_addr *src,
		      const struct mroc_addr *dst, uint8_t *out, size_t cap)
{
	const uint8_t *tr = req + len - AEAD_TRAILER_LEN;
	uint8_t ips[32];

	/* Never larger than what it answers: no amplification. */
	if (len < MROC_HDR_LEN + AEAD_TRAILER_LEN || len < AEAD_COOKIE_REPLY_LEN ||
	    cap < AEAD_COOKIE_REPLY_LEN || mroc_pkt_opcode(req, len) != MROC_OP_CONNECT_REQ ||
	    !mroc_pkt_has_flag(req, len, MROC_F_SEALED) || !ip_ad(ips, src, dst)) {
		a->st.cookie_limited++;
		return -EINVAL;
	}
	if (!bucket_take(&a->cookie_reply, AEAD_COOKIE_REPLY_BURST, AEAD_COOKIE_REPLY_PER_S)) {
		a->st.cookie_limited++;
		return -EBUSY;
	}
	memset(out, 0, MROC_HDR_LEN);
	out[0] = req[0];
	out[1] = MROC_OP_CONNECT_REJ;
	out[2] = MROC_F_COOKIE;
	memcpy(out + 4, req + 8, 4);		/* to the requester's QPN, as any answer */
	memcpy(out + MROC_HDR_LEN, tr + 20, AEAD_COOKIE_ECHO_LEN);
	cookie_mac(a, cookie_epoch(), get32(tr), get64(tr + 4), src, dst,
		   out + MROC_HDR_LEN + AEAD_COOKIE_ECHO_LEN);
	a->st.cookie_sent++;
	return AEAD_COOKIE_REPLY_LEN;
}

/* ---- sealing and opening ------------------------------------------------------- */

int aead_seal(struct aead *a, struct engine_txbuf *b, const struct mroc_addr *src,
	      const struct mroc_addr *dst)
{
	uint8_t *p = b->data, *tr, iv[12], ips[32];
	size_t len = b->len, clear;
	int n = 0, m = 0, fin = 0, nip = ip_ad(ips, src, dst);
	bool req;

	if (b->plain)
		return 0;
	if (len < MROC_HDR_LEN || b->cap < len + AEAD_TRAILER_LEN || !nip) {
		a->st.tx_failed++;
		return nip ? -EMSGSIZE : -EDESTADDRREQ;
	}
	req = mroc_pkt_opcode(p, len) == MROC_OP_CONNECT_REQ;
	if (req) {
		uint64_t now = clock_ns(CLOCK_REALTIME);

		if (a->seq < now)
			a->seq = now;	/* still above every seq used: nonces stay unique */
		/* The responder's cookie, sealed in: it cannot be moved to another packet. */
		if (b->cap >= len + AEAD_COOKIE_LEN + AEAD_TRAILER_LEN &&
		    cookie_held_get(a, src, dst, p + len)) {
			len += AEAD_COOKIE_LEN;
			mroc_pkt_set_flag(p, MROC_F_COOKIE);
		}
	}
	mroc_pkt_set_flag(p, MROC_F_SEALED);
	mroc_pkt_set_flag(p, MROC_F_SEALED_IP);
	clear = clear_span(p, len);
	tr = p + len;
	put32(tr, a->tx_key_id);
	put64(tr + 4, a->sender);
	put64(tr + 12, a->seq);
	nonce_of(iv, a->seq++);
	if (!EVP_EncryptInit_ex(a->tx, NULL, NULL, NULL, iv) ||
	    !EVP_EncryptUpdate(a->tx, NULL, &n, p, (int)clear) ||
	    !EVP_EncryptUpdate(a->tx, NULL, &n, tr, 20) ||
	    !EVP_EncryptUpdate(a->tx, NULL, &n, ips, nip) ||
	    (len > clear && !EVP_EncryptUpdate(a->tx, p + clear, &m, p + clear, (int)(len - clear))) ||
	    !EVP_EncryptFinal_ex(a->tx, p + clear + m, &fin) ||
	    !EVP_CIPHER_CTX_ctrl(a->tx, EVP_CTRL_GCM_GET_TAG, AEAD_TAG_LEN, tr + 20)) {
		a->st.tx_failed++;
		return -EIO;
	}
	if (req)
		cookie_held_sent(a, src, dst, tr + 20);
	b->len = (uint32_t)(len + AEAD_TRAILER_LEN);
	a->st.tx_sealed++;
	return 0;
}

/* The slot of (key id, sender) in the receive cache. */
static struct aead_peer *rx_slot(struct aead *a, uint32_t key_id, uint64_t sender)
{
	return &a->rx[(uint32_t)((sender ^ ((uint64_t)key_id << 32)) * 0x9e3779b97f4a7c15ULL >>
				 54) % RX_CACHE];
}

/*
 * A key derivation for a sender not in the cache, if the bucket allows
 * (AEAD_DERIVE_BURST, refilled at AEAD_DERIVE_PER_S): anyone can send a
 * made-up sender id, and each costs an HKDF and a cipher context.
 */
static bool derive_allowed(struct aead *a, int budget)
{
	if (bucket_take(&a->derive[budget], AEAD_DERIVE_BURST, AEAD_DERIVE_PER_S))
		return true;
	a->st.rx_derive_limited++;
	return false;
}

static struct mroc_addr *good_slot(struct aead *a, const struct mroc_addr *src)
{
	return &a->good[addr_hash(src) % GOOD_SLOTS];
}

/*
 * The receive context for (key id, sender): cached, or derived (*fresh set:
 * the caller keeps it only if the packet opens, so a forged sender never
 * pushes a real one out of the cache).  NULL: unknown key, or the bucket is
 * empty (*why).  A REQ with a valid cookie (cookie) draws on its source
 * address's budget, nobody else's; with cookies_always, a REQ (req) from a
 * source not known without one draws on none.
 */
static EVP_CIPHER_CTX *rx_ctx(struct aead *a, uint32_t key_id, uint64_t sender,
			      const struct mroc_addr *src, bool req, bool cookie, bool *fresh,
			      int *why)
{
	bool known;

	const struct aead_key *k;
	struct aead_peer *e = rx_slot(a, key_id, sender);

	*fresh = false;
	if (e->ctx && e->key_id == key_id && e->sender == sender)
		return e->ctx;
	k = aead_keys_find(&a->keys, key_id);
	if (!k) {
		a->st.rx_bad_key++;
		*why = -ENOKEY;
		return NULL;
	}
	known = addr_eq(good_slot(a, src), src);
	if (!cookie && req && !known && a->cookies_always) {
		*why = -EBUSY;
		return NULL;
	}
	if (cookie ? !cookie_src_allowed(a, src) :
	    !derive_allowed(a, known ? BUDGET_KNOWN : BUDGET_ANY)) {
		*why = -EBUSY;
		return NULL;
	}
	*fresh = true;
	*why = -ENOMEM;
	return packet_ctx(a, k, sender, false);
}

/* A REQ of sender's sealed at seq (its clock): fresh, and not taken before?  Marks it taken. */
static bool req_fresh(struct aead *a, uint64_t sender, uint64_t seq)
{
	struct aead_replay *r = a->replay;
	uint64_t now = clock_ns(CLOCK_REALTIME);
	bool ok;
	unsigned i = (unsigned)((sender * 0x9e3779b97f4a7c15ULL) >> 52) % REPLAY_SLOTS;

	if (seq + AEAD_FRESH_NS < now || seq > now + AEAD_FRESH_NS)
		return false;
	pthread_mutex_lock(&r->lock);
	if (r->s[i].sender != sender) {
		/* Its last REQ may still be in the window: nobody's older one is taken now. */
		if (r->s[i].last + AEAD_FRESH_NS >= now && r->s[i].last > r->floor)
			r->floor = r->s[i].last;
		r->s[i].sender = sender;
		r->s[i].last = 0;
	}
	ok = seq > r->floor && seq > r->s[i].last;
	if (ok)
		r->s[i].last = seq;
	pthread_mutex_unlock(&r->lock);
	return ok;
}

int aead_open(struct aead *a, uint8_t *p, size_t len, const struct mroc_addr *src,
	      const struct mroc_addr *dst, uint8_t *sealed)
{
	uint8_t iv[12], *tr, ips[32];
	EVP_CIPHER_CTX *ctx;
	size_t clear;
	bool fresh, req, has_cookie, cookie = false;
	int n = 0, m = 0, fin = 0, why, nip;

	*sealed = ENGINE_RX_PLAIN;
	if (!mroc_pkt_has_flag(p, len, MROC_F_SEALED)) {
		/* A cookie reply (unsealed: we may hold no key of the responder's yet). */
		if (a && mroc_pkt_has_flag(p, len, MROC_F_COOKIE))
			return cookie_take(a, p, len, src, dst);
		if (a)
			a->st.rx_plain++;
		return (int)len;
	}
	if (len < MROC_HDR_LEN + AEAD_TRAILER_LEN) {
		if (a)
			a->st.rx_short++;
		return -EMSGSIZE;
	}
	len -= AEAD_TRAILER_LEN;
	tr = p + len;
	req = mroc_pkt_opcode(p, len) == MROC_OP_CONNECT_REQ;
	/* A responder's cookie only ever rides on a REQ, at its end. */
	has_cookie = mroc_pkt_has_flag(p, len, MROC_F_COOKIE);
	if (has_cookie && (!req || len < MROC_HDR_LEN + AEAD_COOKIE_LEN)) {
		if (a)
			a->st.cookie_bad++;
		return -EPROTO;
	}
	if (!a) {
		/* No keys here: only to refuse a CONNECT_REQ, which the engine alone reads. */
		if (has_cookie)
			len -= AEAD_COOKIE_LEN;
		mroc_pkt_clear_flag(p, MROC_F_SEALED);
		mroc_pkt_clear_flag(p, MROC_F_SEALED_IP);
		mroc_pkt_clear_flag(p, MROC_F_COOKIE);
		*sealed = ENGINE_RX_UNVERIFIED;
		return (int)len;
	}
	if (!mroc_pkt_has_flag(p, len, MROC_F_SEALED_IP)) {
		/*
		 * Sealed without the addresses: an mrocd from before they were
		 * covered.  Its packets would open from any address, so none is
		 * taken; said clearly, not as a bad tag.
		 */
		a->st.rx_bad_key++;
		pr_warn_rl("aead: a packet sealed without its IP addresses (an older mrocd?) "
			   "refused: every daemon sharing the key file must be this version");
		return -EPROTO;
	}
	nip = ip_ad(ips, src, dst);
	if (!nip) {
		a->st.rx_bad_tag++;	/* its addresses unknown here: it cannot be checked */
		return -EADDRNOTAVAIL;
	}
	if (has_cookie) {
		/* Checked before any derivation: a MAC, no state.  A bad one counts as none. */
		cookie = cookie_valid(a, tr - AEAD_COOKIE_LEN, get32(tr), get64(tr + 4), src, dst);
		if (cookie)
			a->st.cookie_ok++;
		else
			a->st.cookie_bad++;
	}
	ctx = rx_ctx(a, get32(tr), get64(tr + 4), src, req, cookie, &fresh, &why);
	if (!ctx)
		/* A REQ over the budget without a cookie: ask for one (aead_cookie_reply). */
		return why == -EBUSY && req && !cookie ? -EAGAIN : why;
	clear = clear_span(p, len);
	nonce_of(iv, get64(tr + 12));
	if (!EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, iv) ||
	    !EVP_DecryptUpdate(ctx, NULL, &n, p, (int)clear) ||
	    !EVP_DecryptUpdate(ctx, NULL, &n, tr, 20) ||
	    !EVP_DecryptUpdate(ctx, NULL, &n, ips, nip) ||
	    (len > clear && !EVP_DecryptUpdate(ctx, p + clear, &m, p + clear, (int)(len - clear))) ||
	    !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, AEAD_TAG_LEN, tr + 20) ||
	    EVP_DecryptFinal_ex(ctx, p + clear + m, &fin) <= 0) {
		if (fresh)
			EVP_CIPHER_CTX_free(ctx);
		a->st.rx_bad_tag++;
		return -EBADMSG;
	}
	if (fresh) {
		/* Proven: it holds a key of ours.  Into the cache, and its address a known one. */
		struct aead_peer *e = rx_slot(a, get32(tr), get64(tr + 4));

		EVP_CIPHER_CTX_free(e->ctx);
		*e = (struct aead_peer){ .key_id = get32(tr), .sender = get64(tr + 4), .ctx = ctx };
		*good_slot(a, src) = *src;
	}
	if (req && !req_fresh(a, get64(tr + 4), get64(tr + 12))) {
		a->st.rx_stale++;
		return -ESTALE;
	}
	if (has_cookie)
		len -= AEAD_COOKIE_LEN;
	mroc_pkt_clear_flag(p, MROC_F_SEALED);
	mroc_pkt_clear_flag(p, MROC_F_SEALED_IP);
	mroc_pkt_clear_flag(p, MROC_F_COOKIE);
	*sealed = ENGINE_RX_SEALED;
	a->st.rx_opened++;
	return (int)len;
}

void aead_reserve(struct aead *a, struct engine_txbuf *b, int n)
{
	for (int i = 0; a && i < n; i++)
		b[i].cap -= AEAD_TRAILER_LEN;
}

void aead_unreserve(struct aead *a, struct engine_txbuf *b, int n)
{
	for (int i = 0; a && i < n; i++)
		b[i].cap += AEAD_TRAILER_LEN;	/* what aead_reserve held back */
}
