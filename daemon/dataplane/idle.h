/* SPDX-License-Identifier: MIT */
/*
 * One turn of the worker's busy-polling with nothing to do (worker.c).  A
 * sched_yield() per turn is a system call and a pass through the scheduler
 * every few hundred nanoseconds, and the polls themselves only read ring
 * indices.  So the worker spins on PAUSE between turns and yields once per
 * IDLE_YIELD_EVERY_NS: a thread waiting for this CPU (a client, the other
 * daemon on a 2-core machine) still gets it within that time.
 *
 * The interval counts from the end of the last yield, not its start.  On a
 * loaded machine a yield lasts longer than the interval (the CPU went to
 * another thread), and counted from its start every turn after it was due
 * again: a yield per turn, as if there were no interval (libmroc's poller
 * had the same fault, libclient/spin.h).  The clock and the yield are the
 * caller's, so tests/unit/test_worker_idle.c drives both by hand.
 */
#ifndef MROCD_IDLE_H
#define MROCD_IDLE_H

#include <stdint.h>

#include "mroc_util.h"

#define IDLE_YIELD_EVERY_NS	10000
#define IDLE_RELAX_PER_TURN	64

struct idle_spin {
	uint64_t last_yield_end;	/* ns, the caller's clock */
	uint64_t yields;
};

/* A turn at time now found nothing: spin a little, or yield if one is due. */
static inline void idle_spin_turn(struct idle_spin *s, uint64_t now, uint64_t (*clock)(void),
				  void (*yield)(void))
{
	if (now - s->last_yield_end >= IDLE_YIELD_EVERY_NS) {
		yield();
		s->yields++;
		s->last_yield_end = clock();
		return;
	}
	for (int i = 0; i < IDLE_RELAX_PER_TURN; i++)
		cpu_relax();
}

#endif
