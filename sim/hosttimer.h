/* SPDX-License-Identifier: MIT */
/*
 * The one timer a simulated host keeps for its engine (simnet.c and
 * cnet.c drive hosts alike): when to arm it, with the guard against an
 * engine whose deadline stays due without progress freezing the clock.
 */
#ifndef MROC_SIM_HOSTTIMER_H
#define MROC_SIM_HOSTTIMER_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

/* A deadline that stays <= now this many times in one instant is a spin. */
#define HOST_SPIN_LIMIT	64

struct host_spin {
	uint64_t at;		/* the instant being counted */
	uint32_t n;		/* due-now rearms in it */
};

/*
 * When to fire the host's timer: UINT64_MAX for never (cancel it), also
 * when the deadline is due and the NIC is busy (its done event drives the
 * host anyway).  Due now with the NIC idle: now, so that it runs after this
 * instant's other events; after HOST_SPIN_LIMIT of those, 1 ns later, and
 * *spins counts it.
 */
uint64_t host_timer_at(struct engine *eng, uint64_t now, bool nic_busy, struct host_spin *sp,
		       uint64_t *spins);

/*
 * A host's own clock: its engine reads now + now * ppm / 10^6 + offset
 * (offset >= 0), as hosts' CLOCK_MONOTONIC differ by an offset and drift
 * (issue #23).  Zero: the simulation's clock.
 */
struct host_clock {
	uint64_t offset;
	int32_t ppm;
};

/* Draw host i's clock: offset in [0, skew_ns), drift in [-ppm, ppm]; from seed. */
void host_clock_draw(struct host_clock *c, uint64_t skew_ns, uint32_t ppm, uint64_t seed,
		     uint32_t i);
/* The host's time at simulation time now. */
uint64_t host_clock_local(const struct host_clock *c, uint64_t now);
/* The first simulation time at which the host's clock reads at least t (UINT64_MAX stays). */
uint64_t host_clock_sim(const struct host_clock *c, uint64_t t);

#endif
