// SPDX-License-Identifier: MIT
/*
 * The engine's timers: one deadline per QP (the earliest of its RTO, probe,
 * delayed ACK, pacing, RNR, keepalive and CM timers, computed by
 * qp_update_deadline), kept in a hierarchical timing wheel (Varghese and
 * Lauck; the kernel's classic timer wheel): four levels of 64 slots, level 0
 * one tick (1.024 us) per slot, each level up 64 times coarser, so the wheel
 * reaches 2^24 ticks (about 17.2 s) and anything later waits in an overflow
 * list, moved into the wheel whenever time crosses a 17.2 s boundary (a
 * keepalive or dead-peer timer of seconds lands there; the comment said
 * 2^34 ticks, 4.9 hours, until issue #23).  Setting, moving or cancelling a deadline is O(1): a list
 * move, whatever the QP count.  When time reaches a coarse slot its QPs are
 * cascaded into finer levels by their exact deadline, so every timer fires
 * on its nanosecond deadline, not rounded to a slot; the wheel only says
 * where to look.  Bitmaps of non-empty slots let time jump over empty
 * stretches, and the next deadline is found without a walk of the QPs.
 *
 * Why not a heap: at 4,000 busy QPs nearly every packet moves a deadline
 * (each ACK pushes an RTO out, each data packet arms a delayed ACK), and the
 * heap's O(log n) sifts, each touching a QP to update its index, took a
 * fifth of the engine's time (mroc-sim engine).
 */
#include <stdlib.h>

#include "internal.h"

#define TICK_SHIFT	10		/* 1.024 us */
#define LVL_BITS	6
#define LVL_SLOTS	(1u << LVL_BITS)
#define LVL_MASK	(LVL_SLOTS - 1)
#define LEVEL_OVERFLOW	0xff

static uint64_t tick_of(uint64_t ns)
{
	return ns >> TICK_SHIFT;
}

/* First tick of the slot at absolute index idx of level lvl. */
static uint64_t slot_start(unsigned lvl, uint64_t idx)
{
	return idx << (lvl * LVL_BITS);
}

int timer_init(struct engine *eng)
{
	struct timer_wheel *w = &eng->wheel;

	for (unsigned l = 0; l < TIMER_LEVELS; l++) {
		for (unsigned s = 0; s < LVL_SLOTS; s++)
			list_init(&w->slot[l][s]);
		w->pending[l] = 0;
	}
	list_init(&w->overflow);
	w->cur = 0;
	w->next = 0;
	return 0;
}

static void wheel_add(struct timer_wheel *w, struct qp *qp)
{
	uint64_t t = tick_of(qp->deadline);

	if (t < w->cur)
		t = w->cur;	/* already due: the current slot */
	for (unsigned l = 0; l < TIMER_LEVELS; l++) {
		uint64_t idx = t >> (l * LVL_BITS), cur = w->cur >> (l * LVL_BITS);

		if (idx - cur < LVL_SLOTS) {
			unsigned s = (unsigned)(idx & LVL_MASK);

			list_add_tail(&w->slot[l][s], &qp->timer_node);
			w->pending[l] |= 1ULL << s;
			qp->timer_level = (uint8_t)l;
			qp->timer_slot = (uint8_t)s;
			return;
		}
	}
	list_add_tail(&w->overflow, &qp->timer_node);
	qp->timer_level = LEVEL_OVERFLOW;
}

static void wheel_del(struct timer_wheel *w, struct qp *qp)
{
	unsigned l = qp->timer_level, s = qp->timer_slot;

	list_del(&qp->timer_node);
	if (l != LEVEL_OVERFLOW && list_empty(&w->slot[l][s]))
		w->pending[l] &= ~(1ULL << s);
}

/* timer_set's work once the deadline moves. */
void timer_move(struct engine *eng, struct qp *qp, uint64_t deadline)
{
	struct timer_wheel *w = &eng->wheel;

	if (list_linked(&qp->timer_node)) {
		wheel_del(w, qp);
		if (qp->deadline <= w->next)
			w->next = 0;	/* it may have been the earliest: recompute */
	}
	qp->deadline = deadline;
	if (!deadline)
		return;
	wheel_add(w, qp);
	if (w->next > deadline)
		w->next = deadline;	/* a known earliest stays known */
}

void timer_cancel(struct engine *eng, struct qp *qp)
{
	timer_set(eng, qp, 0);
}

/*
 * The first tick at or after cur where something is in the wheel: a level-0
 * slot, or the start of a coarser slot (to be cascaded).  UINT64_MAX if the
 * wheel is empty.
 */
static uint64_t next_event(const struct timer_wheel *w)
{
	uint64_t best = UINT64_MAX;

	for (unsigned l = 0; l < TIMER_LEVELS; l++) {
		uint64_t cur = w->cur >> (l * LVL_BITS), bits = w->pending[l];
		unsigned pos = (unsigned)(cur & LVL_MASK), d;
		uint64_t rot;

		if (!bits)
			continue;
		/* Distance from the current index; level 0 counts its own slot (d = 0). */
		rot = pos ? (bits >> pos) | (bits << (LVL_SLOTS - pos)) : bits;
		if (l && (rot & 1))
			rot &= ~1ULL;	/* a coarse slot at the current index is being cascaded */
		if (!rot)
			continue;
		d = (unsigned)__builtin_ctzll(rot);
		if (slot_start(l, cur + d) < best)
			best = slot_start(l, cur + d);
	}
	if (!list_empty(&w->overflow)) {
		uint64_t top = slot_start(TIMER_LEVELS, (w->cur >> (TIMER_LEVELS * LVL_BITS)) + 1);

		best = top < best ? top : best;
	}
	return best < w->cur ? w->cur : best;
}

/* Time reached tick t: slots of coarser levels starting here move down, coarsest first. */
static void cascade(struct timer_wheel *w, uint64_t t)
{
	struct list moving;

	w->next = 0;
	list_init(&moving);
	if (!(t & ((1ULL << (TIMER_LEVELS * LVL_BITS)) - 1))) {
		while (!list_empty(&w->overflow)) {
			struct list *n = w->overflow.next;

			list_del(n);
			list_add_tail(&moving, n);
		}
	}
	for (unsigned l = TIMER_LEVELS - 1; l >= 1; l--) {
		unsigned s;

		if (t & ((1ULL << (l * LVL_BITS)) - 1))
			continue;
		s = (unsigned)((t >> (l * LVL_BITS)) & LVL_MASK);
		while (!list_empty(&w->slot[l][s])) {
			struct list *n = w->slot[l][s].next;

			list_del(n);
			list_add_tail(&moving, n);
		}
		w->pending[l] &= ~(1ULL << s);
	}
	while (!list_empty(&moving)) {
		struct qp *qp = list_first(&moving, struct qp, timer_node);

		list_del(&qp->timer_node);
		wheel_add(w, qp);
	}
}

/*
 * Take the next QP whose deadline is due by now, or NULL.  Time moves on
 * through the wheel up to now, cascading coarse slots on the way.
 */
struct qp *timer_pop_due(struct engine *eng, uint64_t now)
{
	struct timer_wheel *w = &eng->wheel;
	uint64_t target = tick_of(now);

	for (;;) {
		struct list *slot = &w->slot[0][w->cur & LVL_MASK], *n;
		uint64_t t;

		for (n = slot->next; n != slot; n = n->next) {
			struct qp *qp = list_entry(n, struct qp, timer_node);

			if (qp->deadline <= now) {
				wheel_del(w, qp);
				qp->deadline = 0;
				w->next = 0;
				return qp;
			}
		}
		if (w->cur >= target) {
			/*
			 * Nothing is due by now, so a cached time at or before now was
			 * the start of a coarse slot that has since emptied.
			 */
			if (w->next <= now)
				w->next = 0;
			return NULL;
		}
		t = next_event(w);
		if (t == w->cur)
			t++;	/* this slot is done */
		if (t > target) {
			w->cur = target;
			continue;
		}
		w->cur = t;
		cascade(w, t);
	}
}

/* The earliest deadline (or a time a little before it), 0 when no QP has one. */
uint64_t timer_next(struct engine *eng)
{
	struct timer_wheel *w = &eng->wheel;
	uint64_t t, best = UINT64_MAX;
	struct list *slot, *n;

	if (w->next)
		return w->next;
	t = next_event(w);
	if (t == UINT64_MAX)
		return 0;
	/* A level-0 slot holds exact deadlines; a coarser one is due for cascading at its start. */
	slot = &w->slot[0][t & LVL_MASK];
	if (t - w->cur < LVL_SLOTS && (w->pending[0] & (1ULL << (t & LVL_MASK)))) {
		for (n = slot->next; n != slot; n = n->next) {
			struct qp *qp = list_entry(n, struct qp, timer_node);

			if (qp->deadline < best)
				best = qp->deadline;
		}
	} else {
		best = t << TICK_SHIFT;
	}
	w->next = best ? best : 1;
	return w->next;
}
