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

/*
 * The flood far above AEAD_DERIVE_PER_S takes every derivation for sources
 * not heard from, and N, whose address never sent anything, asks to
 * connect meanwhile: a REQ try after each burst of the flood.  It must get
 * through within a few tries.
 */
static void test_new_host_in_flood(void **state)
{
	struct aead_keyset ks = keyset();
	struct aead *rx, *n, *forger;
	struct aead_stats st;
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
		flood(rx, &model, 2000, &next);
		seal_req(n, &req, &N, &R);
		len = aead_open(rx, req.buf, req.len, &N, &R, &sealed);
	}
	aead_get_stats(rx, &st);
	print_message("tries %d, last %d, derive_limited %llu\n", tries, len,
		      (unsigned long long)st.rx_derive_limited);
	assert_int_equal(len, (int)req.olen);
	assert_int_equal(sealed, ENGINE_RX_SEALED);
	aead_destroy(rx);
	aead_destroy(n);
	aead_destroy(forger);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_host_in_flood),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
