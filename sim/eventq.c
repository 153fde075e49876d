// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>

#include "eventq.h"

static inline bool ev_before(const struct sim_event *a, const struct sim_event *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static inline void place(struct evq *q, uint32_t i, struct sim_event *ev)
{
	q->heap[i] = ev;
	ev->idx = i;
}

static void sift_up(struct evq *q, uint32_t i)
{
	struct sim_event *ev = q->heap[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (!ev_before(ev, q->heap[parent]))
			break;
		place(q, i, q->heap[parent]);
		i = parent;
	}
	place(q, i, ev);
}

static void sift_down(struct evq *q, uint32_t i)
{
	struct sim_event *ev = q->heap[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= q->len)
			break;
		if (c + 1 < q->len && ev_before(q->heap[c + 1], q->heap[c]))
			c++;
		if (!ev_before(q->heap[c], ev))
			break;
		place(q, i, q->heap[c]);
		i = c;
	}
	place(q, i, ev);
}

int evq_init(struct evq *q, uint32_t cap)
{
	q->len = 0;
	q->next_seq = 0;
	q->cap = cap ? cap : 64;
	q->heap = calloc(q->cap, sizeof(*q->heap));
	return q->heap ? 0 : -ENOMEM;
}

void evq_fini(struct evq *q)
{
	for (uint32_t i = 0; i < q->len; i++)
		q->heap[i]->idx = EVQ_NONE;
	free(q->heap);
	q->heap = NULL;
	q->len = q->cap = 0;
}

void evq_cancel(struct evq *q, struct sim_event *ev)
{
	uint32_t i = ev->idx;
	struct sim_event *last;

	if (i == EVQ_NONE)
		return;
	ev->idx = EVQ_NONE;
	last = q->heap[--q->len];
	if (i == q->len)
		return;
	/* The last leaf fills the hole and moves whichever way restores order. */
	place(q, i, last);
	if (i > 0 && ev_before(last, q->heap[(i - 1) / 2]))
		sift_up(q, i);
	else
		sift_down(q, i);
}

int evq_push(struct evq *q, struct sim_event *ev, uint64_t time)
{
	evq_cancel(q, ev);
	if (q->len == q->cap) {
		uint32_t cap = q->cap * 2;
		struct sim_event **h = realloc(q->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		q->heap = h;
		q->cap = cap;
	}
	ev->time = time;
	ev->seq = q->next_seq++;
	place(q, q->len++, ev);
	sift_up(q, ev->idx);
	return 0;
}

struct sim_event *evq_pop(struct evq *q)
{
	struct sim_event *ev = evq_peek(q);

	if (ev)
		evq_cancel(q, ev);
	return ev;
}
