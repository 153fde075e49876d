/* SPDX-License-Identifier: MIT */
/*
 * Small helpers that several parts of mroc need alike (the engine, mrocd,
 * the simulator, libmroc's internals, the tools): one copy of each.
 * Header-only and dependency-free, so anything may include it (the engine
 * stays I/O-free: it calls no clock from here).  Never part of an installed
 * API (libclient/include/mroc/ does not include it).
 */
#ifndef MROC_UTIL_H
#define MROC_UTIL_H

#include <stdint.h>
#include <time.h>

/* Busy-wait hint for one turn of a spin loop (PAUSE on x86, YIELD on arm64). */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* The smallest power of two >= v (1 for 0 and 1); v at most 2^31. */
static inline uint32_t pow2_up(uint32_t v)
{
	return v <= 1 ? 1 : 1u << (32 - __builtin_clz(v - 1));
}

/* v rounded up to a multiple of a (a > 0). */
static inline uint32_t align_up(uint32_t v, uint32_t a)
{
	return (v + a - 1) / a * a;
}

/* CLOCK_MONOTONIC in nanoseconds (divide for us or ms: the same as reading them). */
static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif
