// SPDX-License-Identifier: MIT
/* The simulated hosts' engine timer (see hosttimer.h). */
#include "hosttimer.h"
#include "rng.h"

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

void host_clock_draw(struct host_clock *c, uint64_t skew_ns, uint32_t ppm, uint64_t seed,
		     uint32_t i)
{
	uint64_t x = rng_mix64(seed ^ rng_mix64(0xc10c4ULL + i));

	c->offset = skew_ns ? x % skew_ns : 0;
	c->ppm = ppm ? (int32_t)(rng_mix64(x) % (2 * (uint64_t)ppm + 1)) - (int32_t)ppm : 0;
}

static __int128 local_of(const struct host_clock *c, __int128 now)
{
	return now + now * c->ppm / 1000000 + (__int128)c->offset;
}

uint64_t host_clock_local(const struct host_clock *c, uint64_t now)
{
	return (uint64_t)local_of(c, now);
}

uint64_t host_clock_sim(const struct host_clock *c, uint64_t t)
{
	__int128 x;

	if (t == UINT64_MAX || (!c->offset && !c->ppm))
		return t;
	x = ((__int128)t - (__int128)c->offset) * 1000000 / (1000000 + c->ppm);
	if (x < 0)
		return 0;
	while (local_of(c, x) < (__int128)t)
		x++;
	while (x > 0 && local_of(c, x - 1) >= (__int128)t)
		x--;
	return (uint64_t)x;
}
