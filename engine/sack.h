/* SPDX-License-Identifier: MIT */
/*
 * Receiver's per-path scoreboard: a cumulative PSN plus a 256-bit map of the
 * PSNs above it (bit i = cum + 1 + i), exactly what an ACK carries.
 */
#ifndef MROC_ENGINE_SACK_H
#define MROC_ENGINE_SACK_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define SACK_WORDS 4

struct sack {
	uint32_t cum;			/* lowest PSN not yet received */
	uint64_t map[SACK_WORDS];	/* bit i: cum + 1 + i received */
};

enum sack_result { SACK_NEW = 0, SACK_DUP, SACK_BEYOND };

void sack_init(struct sack *s, uint32_t first_psn);
/* Record psn; SACK_BEYOND when it is more than 256 above cum (not recorded). */
enum sack_result sack_set(struct sack *s, uint32_t psn);
/* The sender gave up on everything below floor: move cum up to it. */
void sack_floor(struct sack *s, uint32_t floor);
bool sack_test(const struct sack *s, uint32_t psn);
/* Has any PSN above cum been received (is there a hole)? */
bool sack_has_holes(const struct sack *s);
/* Serialise the map in wire order: bit i in byte i/8, LSB first. */
void sack_to_bytes(const struct sack *s, uint8_t out[32]);
/* Bit i of a wire-order map. */
static inline bool sack_bytes_test(const uint8_t *b, unsigned i)
{
	return (b[i >> 3] >> (i & 7)) & 1;
}

/* The highest bit set in a wire bitmap (SACK_WORDS words), or -1: a word at a time. */
static inline int sack_bytes_last(const uint8_t *b)
{
	for (int w = SACK_WORDS - 1; w >= 0; w--) {
		uint64_t v;

		memcpy(&v, b + 8 * w, sizeof(v));
		v = le64toh(v);		/* bit i of the word: byte i / 8, LSB first */
		if (v)
			return 64 * w + 63 - __builtin_clzll(v);
	}
	return -1;
}

#endif
