// SPDX-License-Identifier: MIT
/* Test patterns from the simulator's generator (see rng.h). */
#include <string.h>

#include "rng.h"

void rng_fill(struct rng *r, void *buf, uint64_t len)
{
	uint8_t *p = buf;

	while (len >= 8) {
		uint64_t v = rng_next(r);

		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t v = rng_next(r);

		memcpy(p, &v, len);
	}
}
