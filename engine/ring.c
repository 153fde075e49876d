// SPDX-License-Identifier: MIT
/*
 * Growable sequence rings: the per-QP arrays indexed by a sequence number
 * modulo a power of two (messages by MSN, segments by DSN, transmissions by
 * PSN, RECVs, completions).  Each starts small and doubles when the window
 * of live sequence numbers outgrows it, up to the limit the protocol or the
 * QP's depths set, so an idle QP holds a few hundred bytes per array and a
 * busy one what its traffic needs (issue #10: a QP used to hold 117 KiB at
 * rest).  Growth happens on the transition to a wider window, not per
 * packet; a QP keeps what it grew to.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A ring of cap (a power of two) zeroed entries: *v and *mask. */
int seqring_alloc(void **v, uint32_t *mask, size_t elem, uint32_t cap)
{
	*v = calloc(cap, elem);
	*mask = cap - 1;
	return *v ? 0 : -ENOMEM;
}

/*
 * Make room for span sequence numbers from lo, at most max (a power of two).
 * The live entries are those of [lo, lo + old size): each keeps its sequence
 * number's slot in the larger ring, new slots are zero.  -ENOSPC above max,
 * -ENOMEM if the allocation fails (the ring is unchanged then).
 */
int seqring_reserve(void **vp, uint32_t *mask, size_t elem, uint32_t lo, uint32_t span,
		    uint32_t max)
{
	uint32_t old = *mask + 1, cap = old;
	uint8_t *v, *from = *vp;

	if (span <= old)
		return 0;
	if (span > max)
		return -ENOSPC;
	while (cap < span)
		cap <<= 1;
	v = calloc(cap, elem);
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < old; i++) {
		uint32_t seq = lo + i;

		memcpy(v + (size_t)(seq & (cap - 1)) * elem, from + (size_t)(seq & (old - 1)) * elem,
		       elem);
	}
	free(from);
	*vp = v;
	*mask = cap - 1;
	return 0;
}
