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

#endif
