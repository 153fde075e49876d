// SPDX-License-Identifier: MIT
/*
 * The "token" tag computed several at a time (engine/siphash.c,
 * sec_tx_seal_all in engine/sec.c) is bit for bit libsodium's SipHash-2-4
 * (crypto_shorthash, what the wire format names: docs/PROTOCOL.md 1.2):
 * the reference paper's vector, every message length 0..130 in batches of
 * 1..9 with different keys per lane, and a batch of mixed packets sealed
 * against sec_tx_seal one by one.  Natively (AVX-512 here) the eight-lane
 * path runs; under valgrind, which has no AVX-512, the four-lane AVX2 one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "internal.h"

#define MAXN	9
#define MAXLEN	130

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint8_t rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)(rng >> 24);
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = rnd8();
}

/* SipHash paper (Aumasson, Bernstein), appendix A: key 00..0f, message 00..0e. */
static void test_reference_vector(void **state)
{
	static const uint8_t want[8] = { 0xe5, 0x45, 0xbe, 0x49, 0x61, 0xca, 0x29, 0xa1 };
	uint8_t key[16], msg[15], out[4][8];
	const uint8_t *keys[4], *msgs[4];
	uint8_t *outs[4];

	(void)state;
	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 15; i++)
		msg[i] = (uint8_t)i;
	for (int l = 0; l < 4; l++) {
		keys[l] = key;
		msgs[l] = msg;
		outs[l] = out[l];
	}
	for (unsigned n = 1; n <= 4; n++) {
		memset(out, 0, sizeof(out));
		siphash24_many(keys, msgs, sizeof(msg), outs, n);
		for (unsigned l = 0; l < n; l++)
			assert_memory_equal(out[l], want, 8);
	}
}

static void test_matches_libsodium(void **state)
{
	static uint8_t key[MAXN][16], msg[MAXN][MAXLEN], out[MAXN][8], ref[8];
	const uint8_t *keys[MAXN], *msgs[MAXN];
	uint8_t *outs[MAXN];

	(void)state;
	for (unsigned l = 0; l < MAXN; l++) {
		keys[l] = key[l];
		msgs[l] = msg[l];
		outs[l] = out[l];
	}
	for (size_t len = 0; len <= MAXLEN; len++)
		for (unsigned n = 1; n <= MAXN; n++) {
			fill(&key[0][0], sizeof(key));
			fill(&msg[0][0], sizeof(msg));
			memset(out, 0, sizeof(out));
			siphash24_many(keys, msgs, len, outs, n);
			for (unsigned l = 0; l < n; l++) {
				crypto_shorthash(ref, msg[l], len, key[l]);
				assert_memory_equal(out[l], ref, 8);
			}
		}
}

/*
 * Data packets (60 bytes covered), ACKs (all of it), packets without a key
 * and without room, interleaved, more than SEC_SEAL_MAX of them: the same
 * bytes and lengths as sec_tx_seal gives each.
 */
static void test_seal_all_as_one_by_one(void **state)
{
	enum { N = SEC_SEAL_MAX + 13, CAP = 200 };
	static uint8_t a[N][CAP + MROC_TAG_LEN], b[N][CAP + MROC_TAG_LEN], key[3][16];
	struct engine_txbuf ba[N], bb[N];
	const uint8_t *keys[N];
	struct engine *eng = calloc(1, sizeof(*eng));

	(void)state;
	assert_non_null(eng);
	eng->sec_tag_len = MROC_TAG_LEN;
	fill(&key[0][0], sizeof(key));
	fill(&a[0][0], sizeof(a));
	for (int i = 0; i < N; i++) {
		uint32_t len;

		a[i][1] = i % 3 ? MROC_OP_WRITE : MROC_OP_ACK;	/* tag_span: 60, or all */
		a[i][2] = 0;
		len = a[i][1] == MROC_OP_ACK ? MROC_HDR_LEN + MROC_ACK_HDR_LEN :
			MROC_DATA_OVERHEAD + 1 + (uint32_t)(i * 7 % 120);
		keys[i] = i % 5 == 4 ? NULL : key[i % 3];
		/* As engine_tx leaves it: cap less the tag; one without room is left alone. */
		ba[i] = (struct engine_txbuf){ .data = a[i], .len = len,
					       .cap = i == 17 ? len - 1 : CAP - MROC_TAG_LEN };
		memcpy(b[i], a[i], sizeof(a[i]));
		bb[i] = ba[i];
		bb[i].data = b[i];
	}
	sec_tx_seal_all(eng, keys, ba, N);
	for (int i = 0; i < N; i++) {
		sec_tx_seal(eng, keys[i], &bb[i]);
		assert_int_equal(ba[i].len, bb[i].len);
		assert_memory_equal(a[i], b[i], sizeof(a[i]));
	}
	assert_int_equal(ba[1].len, MROC_DATA_OVERHEAD + 1 + 7 + MROC_TAG_LEN);
	assert_int_equal(ba[4].len, MROC_DATA_OVERHEAD + 1 + 28);	/* no key */
	free(eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_vector),
		cmocka_unit_test(test_matches_libsodium),
		cmocka_unit_test(test_seal_all_as_one_by_one),
	};

	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
