// SPDX-License-Identifier: MIT
/*
 * Security mode "aead" under a flood of forged sealed CONNECT_REQs
 * (daemon/dataplane/aead.c, docs/PROTOCOL.md 1.2 "cookies"): a host never
 * heard from (a new node of the job, a machine replaced under a new
 * address) connects meanwhile within a few of its REQ tries.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "aead.h"
#include "worker.h"

/* The daemon's clock (worker.c's, not linked): still unless a test moves it. */
static uint64_t now_ns = 100000000000ULL;

uint64_t mrocd_now_ns(void)
{
	return now_ns;
}

/* The responder R, a new host N that never sent it anything. */
static const struct mroc_addr R = { .family = AF_INET, .bytes = { 10, 0, 0, 2 } },
			      N = { .family = AF_INET, .bytes = { 10, 0, 9, 9 } };

static struct aead_keyset keyset(void)
{
	struct aead_keyset ks = { .n = 1 };

	ks.k[0].id = 5;
	memset(ks.k[0].key, 0x11, AEAD_KEY_LEN);
	return ks;
}

struct pkt {
	uint8_t buf[1024];
	uint32_t len, olen;
};

/* A CONNECT_REQ sealed by a for src -> dst. */
static void seal_req(struct aead *a, struct pkt *p, const struct mroc_addr *src,
		     const struct mroc_addr *dst)
{
	struct engine_txbuf b = { .data = p->buf, .cap = sizeof(p->buf) };

	memset(p->buf, 0, MROC_HDR_LEN + MROC_CM_HDR_LEN);
	p->buf[0] = MROC_WIRE_VERSION;
	p->buf[1] = MROC_OP_CONNECT_REQ;
	p->buf[11] = 0x99;			/* src QPN */
	p->olen = b.len = MROC_HDR_LEN + MROC_CM_HDR_LEN;
	assert_int_equal(aead_seal(a, &b, src, dst), 0);
	p->len = b.len;
}

/*
 * n forged sealed REQs (a made-up sender, a random tag: the flooder holds
 * no key) from as many spoofed sources, never N.
 */
static void flood(struct aead *rx, const struct pkt *model, uint32_t n, uint32_t *next)
{
	uint8_t buf[1024], sealed;

	for (uint32_t i = 0; i < n; i++, (*next)++) {
		struct mroc_addr src = { .family = AF_INET,
					 .bytes = { 10, 1 + (uint8_t)(*next >> 16),
						    (uint8_t)(*next >> 8), (uint8_t)*next } };
		uint32_t tr = model->olen;

		memcpy(buf, model->buf, model->len);
		memcpy(buf + tr + 4, next, sizeof(*next));		/* sender */
		buf[tr + 4 + 7] ^= (uint8_t)(*next * 13);
		memcpy(buf + tr + 20, next, sizeof(*next));		/* tag */
		assert_true(aead_open(rx, buf, model->len, &src, &R, &sealed) < 0);
	}
}

static uint64_t cookies_got(const struct aead *a)
{
	struct aead_stats st;

	aead_get_stats(a, &st);
	return st.cookie_got;
}

/*
 * One REQ try of n (for N -> R) at rx: opened, or answered with a cookie
 * reply that n takes (-ENOMSG) for its next try.  Returns aead_open's.
 */
static int try_req(struct aead *rx, struct aead *n, struct pkt *req, uint8_t *sealed)
{
	uint8_t reply[AEAD_COOKIE_REPLY_LEN + 8];
	int len, rlen;

	seal_req(n, req, &N, &R);
	len = aead_open(rx, req->buf, req->len, &N, &R, sealed);
	if (len != -EAGAIN)
		return len;
	rlen = aead_cookie_reply(rx, req->buf, req->len, &N, &R, reply, sizeof(reply));
	if (rlen < 0)
		return len;
	/* Never an amplifier: no larger than the REQ it answers. */
	assert_int_equal(rlen, AEAD_COOKIE_REPLY_LEN);
	assert_true((uint32_t)rlen <= req->len);
	assert_int_equal(aead_open(n, reply, (size_t)rlen, &R, &N, sealed), -ENOMSG);
	return len;
}

/*
 * The flood far above AEAD_DERIVE_PER_S takes every derivation for sources
 * not heard from, and N, whose address never sent anything, asks to
 * connect meanwhile: a REQ try after each burst of the flood (2,000 REQs
 * in the 10 ms between tries: 200,000 a second).  Before cookies, every one
 * of its 8 tries was refused (-EBUSY, rx_derive_limited) for as long as the
 * flood lasted.  Now its first try gets a cookie and its second, carrying
 * it, connects.
 */
static void test_new_host_in_flood(void **state)
{
	struct aead_keyset ks = keyset();
	struct aead *rx, *n, *forger;
	struct aead_stats st, nst;
	struct pkt model, req;
	uint32_t next = 0;
	uint8_t sealed;
	int tries, len = -1;

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	assert_int_equal(aead_create(&ks, 0, &n), 0);
	assert_int_equal(aead_create(&ks, 0, &forger), 0);
	seal_req(forger, &model, &N, &R);
	flood(rx, &model, 5000, &next);
	for (tries = 0; tries < 8 && len < 0; tries++) {
		now_ns += 10000000;
		flood(rx, &model, 2000, &next);
		len = try_req(rx, n, &req, &sealed);
	}
	aead_get_stats(rx, &st);
	aead_get_stats(n, &nst);
	assert_int_equal(len, (int)req.olen);
	assert_int_equal(sealed, ENGINE_RX_SEALED);
	assert_int_equal(tries, 2);
	assert_int_equal(req.len, req.olen + AEAD_COOKIE_LEN + AEAD_TRAILER_LEN);
	assert_int_equal(st.cookie_ok, 1);
	assert_int_equal(st.cookie_bad, 0);
	assert_true(st.cookie_sent >= 1);
	assert_int_equal(nst.cookie_got, 1);
	/* The engine sees the REQ as sealed, no cookie flag left. */
	assert_false(req.buf[2] & (MROC_F_COOKIE | MROC_F_SEALED | MROC_F_SEALED_IP));
	aead_destroy(rx);
	aead_destroy(n);
	aead_destroy(forger);
}

/*
 * A cookie is good only for the REQ it was made for: from another address,
 * under another sender, or sealed into nothing (flag set on another packet)
 * it is refused (cookie_bad) and costs no derivation from the source's
 * budget; the flooder gets another cookie reply at most.
 */
static void test_cookie_bound(void **state)
{
	static const struct mroc_addr C = { .family = AF_INET, .bytes = { 10, 0, 7, 7 } };
	struct aead_keyset ks = keyset();
	struct aead *rx, *n, *other, *forger;
	struct aead_stats st;
	struct pkt model, req, copy;
	uint32_t next = 0;
	uint8_t sealed, cookie[AEAD_COOKIE_LEN];

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	assert_int_equal(aead_create(&ks, 0, &n), 0);
	assert_int_equal(aead_create(&ks, 0, &other), 0);
	assert_int_equal(aead_create(&ks, 0, &forger), 0);
	seal_req(forger, &model, &N, &R);
	flood(rx, &model, 2000, &next);
	assert_int_equal(try_req(rx, n, &req, &sealed), -EAGAIN);
	assert_int_equal(cookies_got(n), 1);
	/* N's next REQ carries the cookie: seen (on the path), copied. */
	seal_req(n, &req, &N, &R);
	assert_int_equal(req.len, req.olen + AEAD_COOKIE_LEN + AEAD_TRAILER_LEN);
	memcpy(cookie, req.buf + req.olen, AEAD_COOKIE_LEN);
	/* The same REQ from C: the cookie names N. */
	copy = req;
	assert_int_equal(aead_open(rx, copy.buf, copy.len, &C, &R, &sealed), -EAGAIN);
	/* Another sender's REQ (made up, so no valid tag) with N's cookie. */
	copy = req;
	copy.buf[req.olen + AEAD_COOKIE_LEN + 4] ^= 1;
	assert_int_equal(aead_open(rx, copy.buf, copy.len, &N, &R, &sealed), -EAGAIN);
	aead_get_stats(rx, &st);
	assert_int_equal(st.cookie_bad, 2);
	assert_int_equal(st.cookie_ok, 0);
	/* A host of its own (other) cannot use N's cookie either. */
	seal_req(other, &copy, &N, &R);
	assert_int_equal(copy.len, copy.olen + AEAD_TRAILER_LEN);
	/* N's own REQ still connects. */
	assert_int_equal(aead_open(rx, req.buf, req.len, &N, &R, &sealed), (int)req.olen);
	aead_get_stats(rx, &st);
	assert_int_equal(st.cookie_ok, 1);
	/* The flag on anything but a REQ: refused. */
	copy = model;
	copy.buf[1] = MROC_OP_CONNECT_REP;
	copy.buf[2] |= MROC_F_COOKIE;
	assert_int_equal(aead_open(rx, copy.buf, copy.len, &N, &R, &sealed), -EPROTO);
	aead_destroy(rx);
	aead_destroy(n);
	aead_destroy(other);
	aead_destroy(forger);
}

/*
 * A cookie lives 10 to 20 s (the period it was made in and the next): a REQ
 * sealed with one and held back 20 s is refused (cookie_bad) and asked for
 * a new one; the requester itself stops using a cookie 10 s after it came
 * and fetches a new one.
 */
static void test_cookie_expires(void **state)
{
	struct aead_keyset ks = keyset();
	struct aead *rx, *n, *forger;
	struct aead_stats st;
	struct pkt model, req, held;
	uint32_t next = 0;
	uint8_t sealed;

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	assert_int_equal(aead_create(&ks, 0, &n), 0);
	assert_int_equal(aead_create(&ks, 0, &forger), 0);
	seal_req(forger, &model, &N, &R);
	flood(rx, &model, 2000, &next);
	assert_int_equal(try_req(rx, n, &req, &sealed), -EAGAIN);
	seal_req(n, &held, &N, &R);
	assert_int_equal(held.len, held.olen + AEAD_COOKIE_LEN + AEAD_TRAILER_LEN);
	now_ns += 2 * AEAD_COOKIE_PERIOD_NS;
	flood(rx, &model, 2000, &next);
	assert_int_equal(aead_open(rx, held.buf, held.len, &N, &R, &sealed), -EAGAIN);
	aead_get_stats(rx, &st);
	assert_int_equal(st.cookie_bad, 1);
	/* N's own next try: no cookie (too old), a new one, then connected. */
	assert_int_equal(try_req(rx, n, &req, &sealed), -EAGAIN);
	assert_int_equal(req.len, req.olen + AEAD_TRAILER_LEN);
	assert_int_equal(try_req(rx, n, &req, &sealed), (int)req.olen);
	aead_get_stats(rx, &st);
	assert_int_equal(st.cookie_ok, 1);
	aead_destroy(rx);
	aead_destroy(n);
	aead_destroy(forger);
}

/*
 * An off-path host cannot plant a cookie: a reply "from" R that echoes none
 * of N's last REQs' tags, or from another host, is dropped (cookie_bad) and
 * N's next REQ carries no cookie.
 */
static void test_cookie_reply_forged(void **state)
{
	static const struct mroc_addr C = { .family = AF_INET, .bytes = { 10, 0, 7, 7 } };
	struct aead_keyset ks = keyset();
	struct aead *rx, *n;
	struct aead_stats st;
	struct pkt req;
	uint8_t reply[AEAD_COOKIE_REPLY_LEN], sealed;

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	assert_int_equal(aead_create(&ks, 0, &n), 0);
	seal_req(n, &req, &N, &R);
	/* The responder's real reply, as a template (its budget is not empty: called directly). */
	assert_int_equal(aead_cookie_reply(rx, req.buf, req.len, &N, &R, reply, sizeof(reply)),
			 AEAD_COOKIE_REPLY_LEN);
	reply[MROC_HDR_LEN] ^= 1;		/* a wrong echo */
	assert_int_equal(aead_open(n, reply, sizeof(reply), &R, &N, &sealed), -ENOMSG);
	reply[MROC_HDR_LEN] ^= 1;
	assert_int_equal(aead_open(n, reply, sizeof(reply), &C, &N, &sealed), -ENOMSG);
	aead_get_stats(n, &st);
	assert_int_equal(st.cookie_bad, 2);
	assert_int_equal(st.cookie_got, 0);
	seal_req(n, &req, &N, &R);
	assert_int_equal(req.len, req.olen + AEAD_TRAILER_LEN);
	assert_false(req.buf[2] & MROC_F_COOKIE);
	aead_destroy(rx);
	aead_destroy(n);
}

/*
 * Without a flood nothing changes on the wire: a new host's REQ opens at
 * once, no cookie reply is made, no flag 0x08 is sent (an mrocd from before
 * cookies interoperates).  Under a flood the replies are bounded
 * (AEAD_COOKIE_REPLY_BURST, then AEAD_COOKIE_REPLY_PER_S; cookie_limited).
 */
static void test_cookie_only_when_short(void **state)
{
	struct aead_keyset ks = keyset();
	struct aead *rx, *n, *forger;
	struct aead_stats st;
	struct pkt req, model;
	uint8_t sealed, reply[AEAD_COOKIE_REPLY_LEN];
	uint32_t next = 0, sent = 0, asked = 0;

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	assert_int_equal(aead_create(&ks, 0, &n), 0);
	assert_int_equal(aead_create(&ks, 0, &forger), 0);
	seal_req(n, &req, &N, &R);
	assert_int_equal(req.len, req.olen + AEAD_TRAILER_LEN);
	assert_int_equal(aead_open(rx, req.buf, req.len, &N, &R, &sealed), (int)req.olen);
	assert_false(req.buf[2] & MROC_F_COOKIE);
	aead_get_stats(rx, &st);
	assert_int_equal(st.cookie_sent + st.cookie_ok + st.cookie_bad, 0);
	/* 20,000 REQs over the budget, answered at once: the replies stop at the bucket. */
	seal_req(forger, &model, &N, &R);
	for (int i = 0; i < 20000; i++) {
		uint8_t buf[1024];
		struct mroc_addr src = { .family = AF_INET,
					 .bytes = { 10, 2, (uint8_t)(next >> 8), (uint8_t)next } };

		next++;
		memcpy(buf, model.buf, model.len);
		memcpy(buf + model.olen + 4, &next, sizeof(next));
		if (aead_open(rx, buf, model.len, &src, &R, &sealed) != -EAGAIN)
			continue;
		asked++;
		if (aead_cookie_reply(rx, buf, model.len, &src, &R, reply, sizeof(reply)) > 0)
			sent++;
	}
	aead_get_stats(rx, &st);
	/* Past the derivation budget every one asked for a cookie: the burst answered. */
	assert_int_equal(asked, 20000 - (AEAD_DERIVE_BURST - 1));
	assert_int_equal(sent, AEAD_COOKIE_REPLY_BURST);
	assert_int_equal(st.cookie_sent, sent);
	assert_int_equal(st.cookie_limited, asked - sent);
	/* Then AEAD_COOKIE_REPLY_PER_S: 65 in the next millisecond. */
	now_ns += 1000000;
	sent = 0;
	for (int i = 0; i < 100; i++) {
		uint8_t buf[1024];

		memcpy(buf, model.buf, model.len);
		if (aead_cookie_reply(rx, buf, model.len, &N, &R, reply, sizeof(reply)) > 0)
			sent++;
	}
	assert_int_equal(sent, AEAD_COOKIE_REPLY_PER_S / 1000);
	aead_destroy(rx);
	aead_destroy(n);
	aead_destroy(forger);
}

/*
 * security.cookies = "always": with no flood, a REQ from a source never
 * heard from gets a cookie reply at once, and its next try connects; from
 * then on its source is known, and a new sender there (the host restarted)
 * needs none.
 */
static void test_cookies_always(void **state)
{
	struct aead_keyset ks = keyset();
	struct aead *rx, *n;
	struct aead_stats st;
	struct pkt req;
	uint8_t sealed;

	(void)state;
	assert_int_equal(aead_create(&ks, 0, &rx), 0);
	assert_int_equal(aead_create(&ks, 0, &n), 0);
	aead_set_cookies_always(rx, true);
	assert_int_equal(try_req(rx, n, &req, &sealed), -EAGAIN);
	assert_int_equal(try_req(rx, n, &req, &sealed), (int)req.olen);
	assert_int_equal(sealed, ENGINE_RX_SEALED);
	aead_destroy(n);
	assert_int_equal(aead_create(&ks, 0, &n), 0);
	seal_req(n, &req, &N, &R);
	assert_int_equal(req.len, req.olen + AEAD_TRAILER_LEN);
	assert_int_equal(aead_open(rx, req.buf, req.len, &N, &R, &sealed), (int)req.olen);
	aead_get_stats(rx, &st);
	assert_int_equal(st.cookie_sent, 1);
	assert_int_equal(st.cookie_ok, 1);
	assert_int_equal(st.rx_derive_limited, 0);
	aead_destroy(rx);
	aead_destroy(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_host_in_flood),
		cmocka_unit_test(test_cookie_bound),
		cmocka_unit_test(test_cookie_expires),
		cmocka_unit_test(test_cookie_reply_forged),
		cmocka_unit_test(test_cookie_only_when_short),
		cmocka_unit_test(test_cookies_always),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
