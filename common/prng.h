/* SPDX-License-Identifier: MIT */
/*
 * The one PRNG of mroc: xoshiro256** seeded by splitmix64.  The engine's
 * only randomness (engine.c seeds it from engine_config.seed) and, through
 * sim/rng.h, the simulator's.  Deterministic for a seed; not for secrets.
 */
#ifndef MROC_PRNG_H
#define MROC_PRNG_H

#include <stdint.h>

struct prng {
	uint64_t s[4];
};

static inline uint64_t prng_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline void prng_seed(struct prng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = prng_splitmix(&seed);
}

static inline uint64_t prng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t prng_next(struct prng *r)
{
	uint64_t *s = r->s;
	uint64_t result = prng_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = prng_rotl(s[3], 45);
	return result;
}

/* Uniform in [0, n), n > 0 (Lemire's multiply-shift; bias is negligible here). */
static inline uint32_t prng_below(struct prng *r, uint32_t n)
{
	return (uint32_t)(((prng_next(r) >> 32) * (uint64_t)n) >> 32);
}

#endif
