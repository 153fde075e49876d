/* SPDX-License-Identifier: MIT */
/*
 * Background traffic: a second job's flows on the same cluster while the
 * measured collective runs, as on a shared production fabric.
 *
 *  - permutation: every host of the job sends to one other (a seeded
 *    derangement): elephants that fill the spines;
 *  - incast: hosts 1..senders of the job send to host 0: a congested port
 *    whose PFC pauses (on a lossless fabric) spread toward every sender.
 *
 * Open loop, as another tenant's traffic is: every sender offers load x its
 * NIC's payload capacity (planes x port rate), a WRITE of msg_bytes per tick.
 * A flow already holding max_out WRs outstanding skips the tick (counted),
 * so a flow the network cannot carry does not queue without bound.  A flow
 * is k QPs (the measured job's transport: mode, paths, QPs per connection,
 * pinning), WRs taken round-robin.  Completions come through cnet's
 * background callback (CNET_WR_BACKGROUND), so the hosts may also run the
 * measured job.  Functions return 0 or a negative errno; bg_create returns
 * NULL and sets errno.
 */
#ifndef MROC_SIM_BACKGROUND_H
#define MROC_SIM_BACKGROUND_H

#include <stdbool.h>
#include <stdint.h>

#include "cnet.h"

enum bg_kind {
	BG_NONE = 0,
	BG_PERMUTATION,
	BG_INCAST,
	BG__KINDS,
};

const char *bg_kind_name(enum bg_kind k);
int bg_kind_parse(const char *s, enum bg_kind *out);

struct bg_config {
	uint8_t kind;			/* enum bg_kind */
	double load;			/* per sender, share of its NIC, (0, 1] */
	uint32_t nhosts;		/* the job's hosts */
	const uint32_t *hosts;
	uint32_t senders;		/* incast: 1..nhosts - 1 */
	uint32_t msg_bytes;		/* per WRITE */
	uint32_t max_out;		/* outstanding WRs per flow before a tick is skipped */
	uint8_t mode;			/* enum mroc_mode */
	uint8_t npaths;
	uint32_t qps_per_flow;		/* >= 1 */
	uint32_t pin_planes;		/* > 0: QP q leaves by plane q mod this */
	uint64_t seed;
};

struct bg_stats {
	uint32_t flows, qps;
	uint64_t ticks;
	uint64_t offered_bytes;		/* load x capacity x time, summed over flows */
	uint64_t posted_bytes;
	uint64_t done_bytes;		/* send completions */
	uint64_t skipped;		/* flow-ticks skipped at max_out */
	uint64_t errors;		/* error completions */
	uint64_t t_start, t_stop;
};

struct bg;

struct bg *bg_create(struct cnet *cn, const struct bg_config *cfg);
/*
 * Stop, forget the callback, destroy the QPs.  A tick may still be pending
 * in cn: destroy only when cn will not run again (before cnet_destroy).
 */
void bg_destroy(struct bg *b);
bool bg_connected(const struct bg *b);
/* Post a tick now and every interval after, until bg_stop. */
int bg_start(struct bg *b);
void bg_stop(struct bg *b);
void bg_get_stats(const struct bg *b, struct bg_stats *out);

#endif
