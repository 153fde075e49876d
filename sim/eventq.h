/* SPDX-License-Identifier: MIT */
/*
 * Event queue: a binary min-heap of intrusive events keyed by (time, seq).
 *
 * seq is a counter stamped at push time, so events due at the same
 * nanosecond run in the order they were scheduled: the simulation never
 * depends on heap layout.  Events are embedded in their owners (a host's
 * timer, a link's transmitter, a packet in flight) and remember their heap
 * slot, so an owner can cancel or move its event in O(log n): each host has
 * exactly one pending timer, never a trail of stale ones.
 */
#ifndef MROC_SIM_EVENTQ_H
#define MROC_SIM_EVENTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EVQ_NONE	UINT32_MAX	/* idx of an event that is not queued */

struct sim_event {
	uint64_t time;
	uint64_t seq;
	uint32_t idx;		/* slot in the heap, or EVQ_NONE */
	uint8_t type;		/* owner's tag, for dispatch */
};

struct evq {
	struct sim_event **heap;
	uint32_t len, cap;
	uint64_t next_seq;
};

static inline void evq_event_init(struct sim_event *ev, uint8_t type)
{
	ev->time = 0;
	ev->seq = 0;
	ev->idx = EVQ_NONE;
	ev->type = type;
}

static inline bool evq_queued(const struct sim_event *ev)
{
	return ev->idx != EVQ_NONE;
}

/* Returns 0 or -ENOMEM. */
int evq_init(struct evq *q, uint32_t cap);
void evq_fini(struct evq *q);

/*
 * Queue ev at time (moving it if it is queued already; it then goes behind
 * events already due at that time).  The heap array only grows when more
 * events are pending than ever before.  Returns 0 or -ENOMEM.
 */
int evq_push(struct evq *q, struct sim_event *ev, uint64_t time);
/* Remove ev if queued. */
void evq_cancel(struct evq *q, struct sim_event *ev);
/* Earliest event, or NULL; pop removes it. */
struct sim_event *evq_pop(struct evq *q);

static inline struct sim_event *evq_peek(const struct evq *q)
{
	return q->len ? q->heap[0] : NULL;
}

#endif
