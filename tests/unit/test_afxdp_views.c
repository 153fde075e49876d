// SPDX-License-Identifier: MIT
/*
 * The hand-off between two workers' views of the AF_XDP backend
 * (daemon/backend/afxdp_handoff.c), on views built by hand: the rings and
 * the frame accounting are the real code, the sockets' TX rings are plain
 * memory (nothing is sent), view 1 is a stalled worker that takes nothing
 * until the test plays its part.
 *  - #24 item 14: a full ring to a stalled view no longer stops the other
 *    view's transmissions (the TX room); its frames wait in a bounded
 *    backlog, in order, then are dropped and counted;
 *  - #24 item 13: a frame that cannot go back (full return ring, no free
 *    frame to give for a TX hand-off) is counted, owed, and repaid once the
 *    ring has room: no frame is lost or drifts for good.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "afxdp_handoff.h"
#include "afxdp_state.h"
#include "handoff.h"

#define FRAMES		4096
#define FRAME_SIZE	2048
#define RING		64	/* the fake TX rings */

struct two {
	struct afxdp_views vs;
	struct afxdp *x[2];
	uint32_t prod[2], cons[2], flags[2];
	struct xdp_desc desc[2][RING];
};

static struct two *two_views(void)
{
	struct two *t = calloc(1, sizeof(*t));
	size_t rings = 4 * sizeof(struct handoff_ring);

	assert_non_null(t);
	t->vs.n = 2;
	t->vs.rings = aligned_alloc(64, rings);
	t->vs.backlogs = calloc(4, sizeof(*t->vs.backlogs));
	assert_non_null(t->vs.rings);
	assert_non_null(t->vs.backlogs);
	memset(t->vs.rings, 0, rings);
	for (unsigned k = 0; k < 2; k++) {
		struct afxdp *x = calloc(1, sizeof(*x));

		assert_non_null(x);
		x->vs = &t->vs;
		x->idx = k;
		x->nframes = FRAMES;
		x->frame_size = FRAME_SIZE;
		x->tx_reserve = 64;
		x->wake_fd = -1;
		x->nsocks = 2;
		x->sock_view[0] = 0;	/* socket k is view k's */
		x->sock_view[1] = 1;
		x->own[x->nown++] = k;
		x->free = calloc(FRAMES, sizeof(*x->free));
		assert_non_null(x->free);
		/* Half the UMEM each. */
		for (uint32_t i = 0; i < FRAMES / 2; i++)
			x->free[x->nfree++] = (uint64_t)(k * FRAMES / 2 + i) * FRAME_SIZE;
		x->socks[k].tx = (struct xsk_ring_prod){
			.cached_cons = RING, .mask = RING - 1, .size = RING,
			.producer = &t->prod[k], .consumer = &t->cons[k], .ring = t->desc[k],
			.flags = &t->flags[k],
		};
		t->vs.v[k] = x;
		t->x[k] = x;
	}
	return t;
}

static void two_free(struct two *t)
{
	for (unsigned k = 0; k < 2; k++) {
		free(t->x[k]->free);
		free(t->x[k]);
	}
	free(t->vs.rings);
	free(t->vs.backlogs);
	free(t);
}

static struct handoff_ring *ring(struct two *t, unsigned from, unsigned to)
{
	return &t->vs.rings[from * 2 + to];
}

/* Frames anywhere: both free stacks, the rings, the backlogs, the fake TX rings. */
static uint32_t frames_total(struct two *t)
{
	uint32_t n = t->x[0]->nfree + t->x[1]->nfree;

	for (unsigned i = 0; i < 4; i++) {
		struct handoff_ring *r = &t->vs.rings[i];

		n += atomic_load(&r->tail) - atomic_load(&r->head);
		n += t->vs.backlogs[i].n;
	}
	return n + t->prod[0] + t->prod[1];
}

static void test_stalled_view_stops_nobody(void **state)
{
	struct two *t = two_views();
	struct afxdp *x0 = t->x[0];
	uint64_t next = 0;	/* addresses handed, in order */

	(void)state;
	/* View 1 is stalled: its ring from view 0 fills. */
	for (uint32_t i = 0; i < HANDOFF_SLOTS; i++)
		assert_true(afxdp_hand_tx(x0, 1, next++ * FRAME_SIZE, 100));
	/* View 0 still takes TX buffers for its own port (before: 0, every port stopped). */
	assert_int_equal(afxdp_views_tx_room(x0, 64), 64);
	/* Frames for view 1 wait in the backlog, then are dropped, counted. */
	for (uint32_t i = 0; i < AFXDP_BACKLOG; i++)
		assert_true(afxdp_hand_tx(x0, 1, next++ * FRAME_SIZE, 100));
	assert_int_equal(x0->st.handoff_tx_waited, AFXDP_BACKLOG);
	assert_int_equal(afxdp_views_tx_room(x0, 64), 64);	/* stalled: limits nobody */
	assert_false(afxdp_hand_tx(x0, 1, 999999ULL * FRAME_SIZE, 100));
	assert_int_equal(x0->st.handoff_full, 1);
	/* A view that is only slow limits the batch to what it can take, drops nothing. */
	for (uint32_t i = 0; i < 100; i++) {
		const struct handoff_entry *e = handoff_peek(ring(t, 0, 1));

		assert_non_null(e);
		assert_int_equal(e->addr, (uint64_t)i * FRAME_SIZE);
		handoff_pop(ring(t, 0, 1));
	}
	afxdp_views_tx_backlog(x0);
	assert_int_equal(t->vs.backlogs[1].n, AFXDP_BACKLOG - 100);
	assert_int_equal(afxdp_views_tx_room(x0, 200), 100);
	/* View 1 wakes up: every frame but the dropped one arrives, in order. */
	for (uint64_t want = 100; want < next; want++) {
		const struct handoff_entry *e = handoff_peek(ring(t, 0, 1));

		if (!e) {
			afxdp_views_tx_backlog(x0);
			e = handoff_peek(ring(t, 0, 1));
		}
		assert_non_null(e);
		assert_int_equal(e->kind, HANDOFF_TX);
		assert_int_equal(e->addr, want * FRAME_SIZE);
		handoff_pop(ring(t, 0, 1));
	}
	afxdp_views_tx_backlog(x0);
	assert_null(handoff_peek(ring(t, 0, 1)));
	assert_int_equal(t->vs.backlogs[1].n, 0);
	assert_int_equal(x0->st.handoff_tx_out, next);
	two_free(t);
}

static void test_drift_repaid(void **state)
{
	struct two *t = two_views();
	struct afxdp *x0 = t->x[0], *x1 = t->x[1];
	struct backend_pkt pkts[64];
	uint32_t total = frames_total(t), x0_before;

	(void)state;
	assert_int_equal(total, FRAMES);
	/* View 0 is busy: the ring from view 1 fills with frames going back to it. */
	for (uint32_t i = 0; i < HANDOFF_SLOTS; i++)
		assert_true(afxdp_hand_back(x1, 0, x1->free[--x1->nfree]));
	/* Frames view 0 handed over (received for view 1's QPs) cannot go back: kept, owed. */
	for (uint32_t i = 0; i < 10; i++)
		afxdp_give_back(x1, 0, x0->free[--x0->nfree]);
	assert_int_equal(x1->st.handoff_return_full, 10);
	assert_int_equal(x1->owed[0], 10);
	afxdp_views_repay(x1);		/* the ring is still full: nothing yet */
	assert_int_equal(x1->owed[0], 10);
	assert_int_equal(frames_total(t), total);
	/* View 0 drains its ring (afxdp_views_rx takes the returned frames), view 1 repays. */
	x0_before = x0->nfree;
	while (handoff_peek(ring(t, 1, 0)))
		assert_int_equal(afxdp_views_rx(x0, pkts, 64), 0);
	assert_int_equal(x0->nfree, x0_before + HANDOFF_SLOTS);
	afxdp_views_repay(x1);
	assert_int_equal(x1->owed[0], 0);
	assert_int_equal(x1->owed_total, 0);
	assert_int_equal(x1->st.handoff_repaid, 10);
	assert_int_equal(afxdp_views_rx(x0, pkts, 64), 0);
	assert_int_equal(x0->nfree, x0_before + HANDOFF_SLOTS + 10);
	assert_int_equal(frames_total(t), total);
	two_free(t);
}

static void test_tx_unpaid_repaid(void **state)
{
	struct two *t = two_views();
	struct afxdp *x0 = t->x[0], *x1 = t->x[1];
	struct backend_pkt pkts[8];
	uint32_t total = frames_total(t), keep = x0->nfree;

	(void)state;
	/* View 0 has no free frame left (all on loan, say) when view 1 hands it a frame to send. */
	x0->nfree = 0;
	total -= keep;
	assert_true(afxdp_hand_tx(x1, 0, x1->free[--x1->nfree], 100));
	assert_int_equal(afxdp_views_rx(x0, pkts, 8), 0);
	assert_int_equal(t->prod[0], 0);	/* reserved, to be submitted */
	assert_int_equal(x0->socks[0].tx_pending, 1);
	assert_int_equal(x0->st.handoff_tx_unpaid, 1);
	assert_int_equal(x0->owed[1], 1);
	/* Its frames come back (completions): the debt is paid to view 1. */
	x0->nfree = keep;
	total += keep;
	afxdp_views_repay(x0);
	assert_int_equal(x0->owed[1], 0);
	assert_int_equal(afxdp_views_rx(x1, pkts, 8), 0);
	assert_int_equal(x1->nfree, FRAMES / 2);
	/* (the handed frame sits in view 0's TX ring: counted as sent once submitted) */
	assert_int_equal(frames_total(t) + 1, total);
	two_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stalled_view_stops_nobody),
		cmocka_unit_test(test_drift_repaid),
		cmocka_unit_test(test_tx_unpaid_repaid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
