/* SPDX-License-Identifier: MIT */
/*
 * The simulator's only source of randomness: xoshiro256** seeded through
 * splitmix64.  One generator per simulation, drawn from in event order, so a
 * seed fixes every random loss and every hash; never rand() or the clock.
 */
#ifndef MROC_SIM_RNG_H
#define MROC_SIM_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s[4];
};

/* splitmix64 finaliser: a good 64-bit mixer, also used for ECMP hashes. */
static inline uint64_t rng_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);

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
