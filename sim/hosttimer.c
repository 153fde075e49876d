// SPDX-License-Identifier: MIT
/* The simulated hosts' engine timer (see hosttimer.h). */
#include "hosttimer.h"

uint64_t host_timer_at(struct engine *eng, uint64_t now, bool nic_busy, struct host_spin *sp,
		       uint64_t *spins)
{
	uint64_t d = engine_next_deadline(eng);

	if (d == UINT64_MAX || d > now)
		return d;
	if (nic_busy)
		return UINT64_MAX;
	if (sp->at != now) {
		sp->at = now;
		sp->n = 0;
	}
	if (++sp->n > HOST_SPIN_LIMIT) {
		(*spins)++;
		sp->n = 0;
		return now + 1;
	}
	return now;
}
