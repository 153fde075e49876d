// SPDX-License-Identifier: MIT
/*
 * mroc-perf --verify patterns (see verify.h).  Whole words are produced and
 * compared 8 bytes at a time; the byte-wise path only handles a message's
 * tail and locates a mismatch.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "verify.h"

#define GOLDEN	0x9e3779b97f4a7c15ull

/* splitmix64's output function. */
static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A seed per (stream, iter): distinct streams and iterations give unrelated sequences. */
static inline uint64_t seed_of(uint64_t stream, uint64_t iter)
{
	return mix64(mix64(stream * GOLDEN + 0x6d726f63ull) ^ iter);
}

static inline uint64_t word_at(uint64_t seed, uint64_t w)
{
	return mix64(seed + (w + 1) * GOLDEN);
}

/* The word's bytes, least significant first, into b[0..7]. */
static inline void word_bytes(uint64_t v, uint8_t b[8])
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

uint8_t verify_byte(uint64_t stream, uint64_t iter, size_t off)
{
	return (uint8_t)(word_at(seed_of(stream, iter), off / 8) >> (8 * (off % 8)));
}

void verify_fill(void *buf, size_t len, uint64_t stream, uint64_t iter)
{
	uint64_t seed = seed_of(stream, iter);
	uint8_t *p = buf, b[8];
	size_t w, words = len / 8;

	for (w = 0; w < words; w++) {
		word_bytes(word_at(seed, w), b);
		memcpy(p + 8 * w, b, 8);
	}
	if (len % 8) {
		word_bytes(word_at(seed, w), b);
		memcpy(p + 8 * w, b, len % 8);
	}
}

void verify_poison(void *buf, size_t len, uint64_t stream, uint64_t iter)
{
	uint8_t *p = buf;

	verify_fill(buf, len, stream, iter);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)~p[i];
}

int verify_check(const void *buf, size_t len, uint64_t stream, uint64_t iter,
		 struct verify_mismatch *m)
{
	uint64_t seed = seed_of(stream, iter);
	const uint8_t *p = buf;
	size_t bad = 0, first = 0;
	uint8_t b[8];

	for (size_t w = 0; w * 8 < len; w++) {
		size_t n = len - w * 8 < 8 ? len - w * 8 : 8;

		word_bytes(word_at(seed, w), b);
		if (!memcmp(p + 8 * w, b, n))
			continue;
		for (size_t i = 0; i < n; i++) {
			if (p[8 * w + i] == b[i])
				continue;
			if (!bad++) {
				first = 8 * w + i;
				if (m) {
					m->expected = b[i];
					m->actual = p[first];
				}
			}
		}
	}
	if (!bad)
		return 0;
	if (m) {
		m->stream = stream;
		m->iter = iter;
		m->offset = first;
		m->bad_bytes = bad;
	}
	return 1;
}

int verify_format(char *out, size_t n, const struct verify_mismatch *m, size_t len)
{
	return snprintf(out, n,
			"message %" PRIu64 ": byte %zu is 0x%02x, expected 0x%02x "
			"(%zu of %zu bytes wrong)",
			m->iter, m->offset, m->actual, m->expected, m->bad_bytes, len);
}
