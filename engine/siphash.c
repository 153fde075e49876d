// SPDX-License-Identifier: MIT
/*
 * SipHash-2-4, the "token" tag (sec.c, docs/PROTOCOL.md 1.2), of several
 * messages of one length at once.  One tag is a chain of 20 SipRounds for a
 * data packet's 60 bytes (libsodium: about 375 instructions, 25 ns), nearly
 * all of it dependent operations; the engine tags every packet it sends and
 * checks every one it takes.  With AVX-512 eight messages go through the
 * rounds side by side, one in each 64-bit lane (7.5 ns a tag); with AVX2
 * only, four (22 ns, but under half the instructions: what valgrind, which
 * has no AVX-512, counts); otherwise, or for one or two messages,
 * libsodium's crypto_shorthash.  Bit for bit the same tags
 * (tests/unit/test_siphash.c checks every length 0..130 against libsodium).
 */
#include <string.h>

#include <sodium.h>

#include "internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SIPHASH_AVX2 1
#endif

#ifdef SIPHASH_AVX2

#define AVX2 __attribute__((target("avx2")))
#define ROTL(x, b) _mm256_or_si256(_mm256_slli_epi64(x, b), _mm256_srli_epi64(x, 64 - (b)))
/* By 32: swap the halves of each lane.  By 16: bytes 6,7,0..5 of each lane. */
#define ROTL32(x) _mm256_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1))
#define ROTL16(x, m) _mm256_shuffle_epi8(x, m)

#define SIPROUND(v0, v1, v2, v3, m16)					\
	do {								\
		v0 = _mm256_add_epi64(v0, v1);				\
		v1 = ROTL(v1, 13);					\
		v1 = _mm256_xor_si256(v1, v0);				\
		v0 = ROTL32(v0);					\
		v2 = _mm256_add_epi64(v2, v3);				\
		v3 = ROTL16(v3, m16);					\
		v3 = _mm256_xor_si256(v3, v2);				\
		v0 = _mm256_add_epi64(v0, v3);				\
		v3 = ROTL(v3, 21);					\
		v3 = _mm256_xor_si256(v3, v0);				\
		v2 = _mm256_add_epi64(v2, v1);				\
		v1 = ROTL(v1, 17);					\
		v1 = _mm256_xor_si256(v1, v2);				\
		v2 = ROTL32(v2);					\
	} while (0)

static inline uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));	/* x86: little-endian, as SipHash reads */
	return v;
}

/*
 * The last block: the tail bytes and the length in the top byte.  The tail
 * read as 4, 2 and 1 bytes (little-endian, as SipHash reads): a byte at a
 * time, a data packet's 4 cost 32 instructions a tag (pkt-cost, #22).
 */
static inline uint64_t last_block(const uint8_t *p, size_t len)
{
	const uint8_t *q = p + (len & ~(size_t)7);
	uint64_t b = 0;
	unsigned sh = 0;

	if (len & 4) {
		uint32_t x;

		memcpy(&x, q, sizeof(x));
		b = x;
		q += 4;
		sh = 32;
	}
	if (len & 2) {
		uint16_t x;

		memcpy(&x, q, sizeof(x));
		b |= (uint64_t)x << sh;
		q += 2;
		sh += 16;
	}
	if (len & 1)
		b |= (uint64_t)*q << sh;
	return b | (uint64_t)len << 56;
}

/* Four lanes; lane l reads keys[l] and msgs[l] (callers repeat one to fill all four). */
AVX2 static void siphash24_x4(const uint8_t *const keys[4], const uint8_t *const msgs[4],
			      size_t len, uint64_t out[4])
{
	const __m256i m16 = _mm256_setr_epi8(6, 7, 0, 1, 2, 3, 4, 5, 14, 15, 8, 9, 10, 11, 12, 13,
					     6, 7, 0, 1, 2, 3, 4, 5, 14, 15, 8, 9, 10, 11, 12, 13);
	__m256i k0 = _mm256_setr_epi64x((long long)le64(keys[0]), (long long)le64(keys[1]),
					(long long)le64(keys[2]), (long long)le64(keys[3]));
	__m256i k1 = _mm256_setr_epi64x((long long)le64(keys[0] + 8), (long long)le64(keys[1] + 8),
					(long long)le64(keys[2] + 8), (long long)le64(keys[3] + 8));
	__m256i v0 = _mm256_xor_si256(k0, _mm256_set1_epi64x(0x736f6d6570736575LL));
	__m256i v1 = _mm256_xor_si256(k1, _mm256_set1_epi64x(0x646f72616e646f6dLL));
	__m256i v2 = _mm256_xor_si256(k0, _mm256_set1_epi64x(0x6c7967656e657261LL));
	__m256i v3 = _mm256_xor_si256(k1, _mm256_set1_epi64x(0x7465646279746573LL));
	__m256i m;

	for (size_t off = 0; off + 8 <= len; off += 8) {
		m = _mm256_setr_epi64x((long long)le64(msgs[0] + off), (long long)le64(msgs[1] + off),
				       (long long)le64(msgs[2] + off), (long long)le64(msgs[3] + off));
		v3 = _mm256_xor_si256(v3, m);
		SIPROUND(v0, v1, v2, v3, m16);
		SIPROUND(v0, v1, v2, v3, m16);
		v0 = _mm256_xor_si256(v0, m);
	}
	m = _mm256_setr_epi64x((long long)last_block(msgs[0], len), (long long)last_block(msgs[1], len),
			       (long long)last_block(msgs[2], len), (long long)last_block(msgs[3], len));
	v3 = _mm256_xor_si256(v3, m);
	SIPROUND(v0, v1, v2, v3, m16);
	SIPROUND(v0, v1, v2, v3, m16);
	v0 = _mm256_xor_si256(v0, m);
	v2 = _mm256_xor_si256(v2, _mm256_set1_epi64x(0xff));
	for (int i = 0; i < 4; i++)
		SIPROUND(v0, v1, v2, v3, m16);
	v0 = _mm256_xor_si256(_mm256_xor_si256(v0, v1), _mm256_xor_si256(v2, v3));
	_mm256_storeu_si256((__m256i *)out, v0);
}

/* AVX-512F: eight lanes and a rotate instruction (vprolq) instead of two shifts and an or. */
#define AVX512 __attribute__((target("avx512f")))
#define SIPROUND8(v0, v1, v2, v3)					\
	do {								\
		v0 = _mm512_add_epi64(v0, v1);				\
		v1 = _mm512_rol_epi64(v1, 13);				\
		v1 = _mm512_xor_si512(v1, v0);				\
		v0 = _mm512_rol_epi64(v0, 32);				\
		v2 = _mm512_add_epi64(v2, v3);				\
		v3 = _mm512_rol_epi64(v3, 16);				\
		v3 = _mm512_xor_si512(v3, v2);				\
		v0 = _mm512_add_epi64(v0, v3);				\
		v3 = _mm512_rol_epi64(v3, 21);				\
		v3 = _mm512_xor_si512(v3, v0);				\
		v2 = _mm512_add_epi64(v2, v1);				\
		v1 = _mm512_rol_epi64(v1, 17);				\
		v1 = _mm512_xor_si512(v1, v2);				\
		v2 = _mm512_rol_epi64(v2, 32);				\
	} while (0)
/* Lane l's value of expression E(l), for eight lanes. */
#define LANES8(E) _mm512_setr_epi64(E(0), E(1), E(2), E(3), E(4), E(5), E(6), E(7))

AVX512 static void siphash24_x8(const uint8_t *const keys[8], const uint8_t *const msgs[8],
				size_t len, uint64_t out[8])
{
#define KEY0(l) (long long)le64(keys[l])
#define KEY1(l) (long long)le64(keys[l] + 8)
#define BLOCK(l) (long long)le64(msgs[l] + off)
#define LAST(l) (long long)last_block(msgs[l], len)
	__m512i k0 = LANES8(KEY0), k1 = LANES8(KEY1);
	__m512i v0 = _mm512_xor_si512(k0, _mm512_set1_epi64(0x736f6d6570736575LL));
	__m512i v1 = _mm512_xor_si512(k1, _mm512_set1_epi64(0x646f72616e646f6dLL));
	__m512i v2 = _mm512_xor_si512(k0, _mm512_set1_epi64(0x6c7967656e657261LL));
	__m512i v3 = _mm512_xor_si512(k1, _mm512_set1_epi64(0x7465646279746573LL));
	__m512i m;

	for (size_t off = 0; off + 8 <= len; off += 8) {
		m = LANES8(BLOCK);
		v3 = _mm512_xor_si512(v3, m);
		SIPROUND8(v0, v1, v2, v3);
		SIPROUND8(v0, v1, v2, v3);
		v0 = _mm512_xor_si512(v0, m);
	}
	m = LANES8(LAST);
	v3 = _mm512_xor_si512(v3, m);
	SIPROUND8(v0, v1, v2, v3);
	SIPROUND8(v0, v1, v2, v3);
	v0 = _mm512_xor_si512(v0, m);
	v2 = _mm512_xor_si512(v2, _mm512_set1_epi64(0xff));
	for (int i = 0; i < 4; i++)
		SIPROUND8(v0, v1, v2, v3);
	_mm512_storeu_si512(out, _mm512_xor_si512(_mm512_xor_si512(v0, v1), _mm512_xor_si512(v2, v3)));
#undef KEY0
#undef KEY1
#undef BLOCK
#undef LAST
}

/* 2: AVX-512F, 1: AVX2, 0: neither (valgrind hides AVX-512: it runs the AVX2 lanes). */
static int simd_level(void)
{
	static int level = -1;

	if (level < 0)
		level = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
	return level;
}

/*
 * lanes (at most width) of keys/msgs from i into the vector function of that
 * width; missing lanes repeat the first.
 */
static void run_lanes(const uint8_t *const *keys, const uint8_t *const *msgs, size_t len,
		      uint8_t *const *outs, unsigned lanes, unsigned width)
{
	const uint8_t *k[8], *m[8];
	uint64_t t[8];

	for (unsigned l = 0; l < width; l++) {
		k[l] = keys[l < lanes ? l : 0];
		m[l] = msgs[l < lanes ? l : 0];
	}
	if (width == 8)
		siphash24_x8(k, m, len, t);
	else
		siphash24_x4(k, m, len, t);
	for (unsigned l = 0; l < lanes; l++)
		memcpy(outs[l], &t[l], MROC_TAG_LEN);
}

#endif /* SIPHASH_AVX2 */

void siphash24_many(const uint8_t *const *keys, const uint8_t *const *msgs, size_t len,
		    uint8_t *const *outs, unsigned n)
{
	unsigned i = 0;

#ifdef SIPHASH_AVX2
	/*
	 * Measured here (AMD EPYC, 60-byte messages): libsodium 25 ns a tag,
	 * AVX2 lanes 22, AVX-512 lanes 7.5.  Eight lanes pay from three
	 * messages on; four AVX2 lanes only when all four are used.
	 */
	int level = simd_level();

	while (level == 2 && n - i >= 3) {
		unsigned lanes = n - i < 8 ? n - i : 8;

		run_lanes(keys + i, msgs + i, len, outs + i, lanes, 8);
		i += lanes;
	}
	while (level == 1 && n - i >= 4) {
		run_lanes(keys + i, msgs + i, len, outs + i, 4, 4);
		i += 4;
	}
#endif
	for (; i < n; i++)
		crypto_shorthash(outs[i], msgs[i], len, keys[i]);
}
