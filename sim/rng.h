/* SPDX-License-Identifier: MIT */
/*
 * The simulator's only source of randomness: xoshiro256** seeded through
 * splitmix64 (common/prng.h, the engine's generator).  One generator per simulation, drawn from in event order, so a
 * seed fixes every random loss and every hash; never rand() or the clock.
 */
#ifndef MROC_SIM_RNG_H
#define MROC_SIM_RNG_H

#include <stdint.h>

#include "prng.h"

struct rng {
	struct prng p;
};

/* splitmix64 finaliser: a good 64-bit mixer, also used for ECMP hashes. */
static inline uint64_t rng_mix64(uint64_t x)
{
	return prng_splitmix(&x);
}

/*
 * The simulator's streams as they have always been: each state word one
 * splitmix64 step further along than prng_seed's for the same seed.
 */
static inline void rng_seed(struct rng *r, uint64_t seed)
{
	prng_seed(&r->p, seed + 0x9e3779b97f4a7c15ULL);
}

static inline uint64_t rng_next(struct rng *r)
{
	return prng_next(&r->p);
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double rng_double(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n), n > 0 (Lemire's multiply-shift; bias < n / 2^64). */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

/* Fill len bytes with the generator's output (test patterns). */
void rng_fill(struct rng *r, void *buf, uint64_t len);

#endif
