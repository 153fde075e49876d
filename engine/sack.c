// SPDX-License-Identifier: MIT
/* Receiver SACK scoreboard (see sack.h). */
#include <string.h>

#include "sack.h"
#include "wire.h"

static_assert(SACK_WORDS * 64 == MROC_SACK_BITS, "map covers the SACK width");
static_assert(SACK_WORDS == 4, "advance and sack_has_holes name the four words");

void sack_init(struct sack *s, uint32_t first_psn)
{
	s->cum = first_psn;
	memset(s->map, 0, sizeof(s->map));
}

/* Shift the map right by n bits (n <= 256): the window slides up by n. */
static void map_shift(uint64_t *m, unsigned n)
{
	unsigned w = n / 64, b = n % 64;

	for (unsigned i = 0; i < SACK_WORDS; i++) {
		uint64_t lo = i + w < SACK_WORDS ? m[i + w] : 0;
		uint64_t hi = i + w + 1 < SACK_WORDS ? m[i + w + 1] : 0;

		m[i] = b ? (lo >> b) | (hi << (64 - b)) : lo;
	}
}

/* Count consecutive set bits from bit 0. */
static unsigned map_leading_ones(const uint64_t *m)
{
	unsigned n = 0;

	for (unsigned i = 0; i < SACK_WORDS; i++) {
		if (m[i] == ~0ULL) {
			n += 64;
			continue;
		}
		return n + (unsigned)__builtin_ctzll(~m[i]);
	}
	return n;
}

/* cum was just received: slide past it and every contiguous PSN above. */
static void advance(struct sack *s)
{
	unsigned run;

	/* In order, nothing above: the common case, and a shift of nothing. */
	if (!(s->map[0] | s->map[1] | s->map[2] | s->map[3])) {
		s->cum++;
		return;
	}
	run = map_leading_ones(s->map);

	s->cum += 1 + run;
	map_shift(s->map, run + 1 > MROC_SACK_BITS ? MROC_SACK_BITS : run + 1);
}

enum sack_result sack_set(struct sack *s, uint32_t psn)
{
	int32_t d = seq_diff(psn, s->cum);
	unsigned i;

	if (d < 0)
		return SACK_DUP;
	if (d == 0) {
		advance(s);
		return SACK_NEW;
	}
	if (d > MROC_SACK_BITS)
		return SACK_BEYOND;
	i = (unsigned)d - 1;
	if (s->map[i / 64] & (1ULL << (i % 64)))
		return SACK_DUP;
	s->map[i / 64] |= 1ULL << (i % 64);
	return SACK_NEW;
}

void sack_floor(struct sack *s, uint32_t floor)
{
	int32_t d = seq_diff(floor, s->cum);
	bool have_floor;

	if (d <= 0)
		return;
	if (d > MROC_SACK_BITS) {
		s->cum = floor;
		memset(s->map, 0, sizeof(s->map));
		return;
	}
	/* PSN floor sits at bit d-1; everything below it slides out. */
	have_floor = s->map[(d - 1) / 64] & (1ULL << ((d - 1) % 64));
	s->cum = floor;
	map_shift(s->map, (unsigned)d);
	if (have_floor)
		advance(s);
}

bool sack_test(const struct sack *s, uint32_t psn)
{
	int32_t d = seq_diff(psn, s->cum);
	unsigned i;

	if (d < 0)
		return true;
	if (d == 0 || d > MROC_SACK_BITS)
		return false;
	i = (unsigned)d - 1;
	return s->map[i / 64] & (1ULL << (i % 64));
}

bool sack_has_holes(const struct sack *s)
{
	return s->map[0] | s->map[1] | s->map[2] | s->map[3];
}

void sack_to_bytes(const struct sack *s, uint8_t out[32])
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* Each word's bytes low first: the words as they lie in memory here. */
	memcpy(out, s->map, sizeof(s->map));
#else
	for (unsigned i = 0; i < SACK_WORDS; i++)
		for (unsigned j = 0; j < 8; j++)
			out[i * 8 + j] = (uint8_t)(s->map[i] >> (j * 8));
#endif
}
