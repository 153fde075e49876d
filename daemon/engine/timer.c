// SPDX-License-Identifier: MIT
/*
 * The engine's timers: one deadline per QP (the earliest of its RTO, probe,
 * delayed ACK, pacing, RNR, keepalive and CM timers, computed by
 * qp_update_deadline) kept in a binary min-heap indexed by QP.  Setting,
 * moving or cancelling a QP's deadline is O(log n); the next deadline is
 * O(1); expiry pops only QPs that are due.  A heap rather than a timing
 * wheel: every QP holds exactly one entry, deadlines span nanoseconds to
 * seconds, and the heap needs no tick granularity that would round the
 * microsecond timers the simulator and the pacer rely on.  With 4,000 QPs a
 * change costs about 12 swaps.
 */
#include <stdlib.h>

#include "internal.h"

int timer_init(struct engine *eng)
{
	eng->heap = calloc(eng->cfg.max_qps, sizeof(*eng->heap));
	eng->heap_len = 0;
	return eng->heap ? 0 : -1;
}

void timer_free(struct engine *eng)
{
	free(eng->heap);
	eng->heap = NULL;
}

static void heap_put(struct engine *eng, uint32_t i, struct qp *qp)
{
	eng->heap[i] = qp;
	qp->heap_idx = i + 1;
}

static void sift_up(struct engine *eng, uint32_t i)
{
	struct qp *qp = eng->heap[i];

	while (i) {
		uint32_t parent = (i - 1) / 2;

		if (eng->heap[parent]->deadline <= qp->deadline)
			break;
		heap_put(eng, i, eng->heap[parent]);
		i = parent;
	}
	heap_put(eng, i, qp);
}

static void sift_down(struct engine *eng, uint32_t i)
{
	struct qp *qp = eng->heap[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= eng->heap_len)
			break;
		if (c + 1 < eng->heap_len && eng->heap[c + 1]->deadline < eng->heap[c]->deadline)
			c++;
		if (qp->deadline <= eng->heap[c]->deadline)
			break;
		heap_put(eng, i, eng->heap[c]);
		i = c;
	}
	heap_put(eng, i, qp);
}

static void heap_remove(struct engine *eng, struct qp *qp)
{
	uint32_t i = qp->heap_idx - 1;
	struct qp *last = eng->heap[--eng->heap_len];

	qp->heap_idx = 0;
	if (last == qp)
		return;
	heap_put(eng, i, last);
	sift_up(eng, i);
	sift_down(eng, last->heap_idx - 1);
}

/* Set the QP's deadline (0 = none) and its place in the heap. */
void timer_set(struct engine *eng, struct qp *qp, uint64_t deadline)
{
	uint64_t old = qp->deadline;

	qp->deadline = deadline;
	if (!qp->heap_idx) {
		if (!deadline)
			return;
		heap_put(eng, eng->heap_len++, qp);
		sift_up(eng, eng->heap_len - 1);
	} else if (!deadline) {
		heap_remove(eng, qp);
	} else if (deadline < old) {
		sift_up(eng, qp->heap_idx - 1);
	} else if (deadline > old) {
		sift_down(eng, qp->heap_idx - 1);
	}
}

/* The earliest deadline, or 0 when no QP has one. */
uint64_t timer_next(const struct engine *eng)
{
	return eng->heap_len ? eng->heap[0]->deadline : 0;
}

/* Take the earliest QP if it is due by now (its deadline stays set). */
struct qp *timer_pop_due(struct engine *eng, uint64_t now)
{
	struct qp *qp;

	if (!eng->heap_len || eng->heap[0]->deadline > now)
		return NULL;
	qp = eng->heap[0];
	heap_remove(eng, qp);
	return qp;
}
