// SPDX-License-Identifier: MIT
/*
 * The AF_XDP backend's loopback (daemon/backend/afxdp_loop.c), on views
 * built by hand (no sockets, no netlink): a packet to this daemon itself
 * reaches the receive path of the view that owns its QP, in the frame the
 * engine wrote it in; the queue is bounded (tx_get's room, drops counted);
 * frames from the wire from our own address are told apart.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "afxdp_handoff.h"
#include "afxdp_loop.h"
#include "afxdp_state.h"
#include "frame.h"
#include "handoff.h"
#include "peers.h"

#define FRAMES		64
#define FRAME_SIZE	2048

struct fix {
	struct afxdp_views vs;
	struct afxdp *x[2];
	struct peers *peers[2];
	uint8_t *area;
	unsigned owner;			/* the view every packet's QP belongs to */
};

static unsigned owner(void *ctx, const uint8_t *pkt, uint32_t len)
{
	(void)pkt;
	(void)len;
	return ((struct fix *)ctx)->owner;
}

static struct mroc_addr v4(const char *s)
{
	struct mroc_addr a = { .family = AF_INET };

	assert_int_equal(inet_pton(AF_INET, s, &a.v4), 1);
	return a;
}

/* nviews views (1: no hand-off) of one area; each view's src is 10.0.0.1, port 0's 10.1.0.1. */
static struct fix *fix_new(unsigned nviews)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->area = calloc(FRAMES, FRAME_SIZE);
	assert_non_null(f->area);
	f->vs.n = nviews;
	f->vs.owner = owner;
	f->vs.owner_ctx = f;
	f->vs.rings = aligned_alloc(64, 4 * sizeof(struct handoff_ring));
	assert_non_null(f->vs.rings);
	memset(f->vs.rings, 0, 4 * sizeof(struct handoff_ring));
	for (unsigned k = 0; k < nviews; k++) {
		struct afxdp *x = calloc(1, sizeof(*x));

		assert_non_null(x);
		f->peers[k] = peers_create(64);
		assert_non_null(f->peers[k]);
		x->b.peers = f->peers[k];
		x->area = f->area;
		x->frame_size = FRAME_SIZE;
		x->nframes = FRAMES;
		x->max_peers = 64;
		x->src = v4("10.0.0.1");
		x->nports = 1;
		x->port_cfg[0].addr = v4("10.1.0.1");
		x->nsocks = nviews;
		x->idx = k;
		x->own[x->nown++] = k;	/* socket k is view k's */
		x->wake_fd = -1;
		for (unsigned s = 0; s < nviews; s++)
			x->sock_view[s] = (uint8_t)s;
		x->vs = nviews > 1 ? &f->vs : NULL;
		assert_int_equal(afxdp_loop_create(x), 0);
		f->vs.v[k] = x;
		f->x[k] = x;
	}
	return f;
}

static void fix_free(struct fix *f)
{
	for (unsigned k = 0; k < f->vs.n; k++) {
		afxdp_loop_destroy(f->x[k]);
		peers_destroy(f->peers[k]);
		free(f->x[k]);
	}
	free(f->vs.rings);
	free(f->area);
	free(f);
}

static uint32_t handle_of(struct fix *f, unsigned k, const char *addr)
{
	struct mroc_addr a = v4(addr);
	uint32_t h;

	assert_int_equal(peers_get_handle(f->peers[k], &a, &h), 0);
	return h;
}

/* A TX buffer in frame i as tx_get gives it, with len bytes written, to peer. */
static struct engine_txbuf buf(struct fix *f, unsigned i, uint32_t len, uint32_t peer)
{
	struct engine_txbuf b = {
		.data = f->area + (size_t)i * FRAME_SIZE + FRAME_HEADROOM,
		.cap = FRAME_SIZE - FRAME_HEADROOM,
		.len = len,
		.peer = peer,
		.sport = (uint16_t)(20000 + i),
	};

	memset(b.data, (int)i, len);
	return b;
}

static void test_self_is_ours(void **state)
{
	struct fix *f = fix_new(1);
	struct afxdp *x = f->x[0];
	uint32_t self = handle_of(f, 0, "10.0.0.1"), port = handle_of(f, 0, "10.1.0.1");
	uint32_t other = handle_of(f, 0, "10.0.0.2");

	(void)state;
	assert_true(afxdp_loop_is_self(x, self));
	assert_true(afxdp_loop_is_self(x, port));
	assert_false(afxdp_loop_is_self(x, other));
	assert_false(afxdp_loop_is_self(x, other));	/* the cached answer */
	/* A handle of another generation in self's slot names nobody. */
	assert_false(afxdp_loop_is_self(x, self + (1u << PEERS_INDEX_BITS)));
	assert_true(afxdp_loop_src_ours(x, &(struct mroc_addr){ .family = 0 }) == false);
	assert_true(afxdp_loop_src_ours(x, &x->src));
	assert_true(afxdp_loop_src_ours(x, &x->port_cfg[0].addr));
	{
		struct mroc_addr a = v4("10.0.0.2");

		assert_false(afxdp_loop_src_ours(x, &a));
	}
	fix_free(f);
}

static void test_local_delivery(void **state)
{
	struct fix *f = fix_new(1);
	struct afxdp *x = f->x[0];
	uint32_t self = handle_of(f, 0, "10.0.0.1");
	struct engine_txbuf b = buf(f, 3, 100, self);
	struct backend_pkt p[4];

	(void)state;
	assert_false(afxdp_loop_pending(x));
	assert_true(afxdp_loop_send(x, &b, 12345));
	assert_true(afxdp_loop_pending(x));
	assert_int_equal(afxdp_loop_rx(x, p, 4), 1);
	assert_false(afxdp_loop_pending(x));
	/* The frame the engine wrote, no copy; from and to the peer's address. */
	assert_ptr_equal(p[0].data, b.data);
	assert_int_equal(p[0].len, 100);
	assert_true(addr_eq(&p[0].src, &x->src));
	assert_true(addr_eq(&p[0].dst, &x->src));
	assert_int_equal(p[0].sport, 20003);
	assert_int_equal(p[0].arrival, 12345);
	assert_false(p[0].ce);
	/* Its cookie: a looped frame (no port's, no fill ring's), frame 3. */
	assert_true(p[0].cookie & COOKIE_LOOP);
	assert_false(p[0].cookie & COOKIE_HANDED);
	assert_int_equal(p[0].cookie & ((1ULL << COOKIE_SOCK_SHIFT) - 1), 3 * FRAME_SIZE);
	assert_int_equal(x->st.loopback_pkts, 1);
	assert_int_equal(x->st.loopback_handed, 0);
	fix_free(f);
}

static void test_queue_bounded(void **state)
{
	struct fix *f = fix_new(1);
	struct afxdp *x = f->x[0];
	uint32_t self = handle_of(f, 0, "10.0.0.1");
	struct backend_pkt p[64];
	int sent = 0, room;

	(void)state;
	/* tx_get never takes more buffers than the queue holds: then none. */
	while ((room = afxdp_loop_room(x, 64)) > 0) {
		for (int i = 0; i < room; i++) {
			struct engine_txbuf b = buf(f, (unsigned)(sent % FRAMES), 20, self);

			assert_true(afxdp_loop_send(x, &b, 1));
			sent++;
		}
	}
	assert_true(sent >= 64);
	/* One more all the same (a caller that did not ask): dropped, counted. */
	{
		struct engine_txbuf b = buf(f, 0, 20, self);

		assert_false(afxdp_loop_send(x, &b, 1));
	}
	assert_int_equal(x->st.loopback_drops, 1);
	/* Drained in order, then room again. */
	for (int got = 0, n; got < sent; got += n) {
		n = afxdp_loop_rx(x, p, 64);
		assert_true(n > 0);
		for (int i = 0; i < n; i++)
			assert_int_equal(p[i].sport, 20000 + (got + i) % FRAMES);
	}
	assert_int_equal(afxdp_loop_rx(x, p, 64), 0);
	assert_int_equal(afxdp_loop_room(x, 64), 64);
	assert_int_equal(x->st.loopback_pkts, (uint64_t)sent);
	fix_free(f);
}

/* The QP is view 1's: handed over as a received packet, its frame still view 0's. */
static void test_handed_to_owner(void **state)
{
	struct fix *f = fix_new(2);
	uint32_t self = handle_of(f, 0, "10.0.0.1");
	struct engine_txbuf b = buf(f, 5, 64, self);
	struct backend_pkt p[4];

	(void)state;
	f->owner = 1;
	assert_true(afxdp_loop_send(f->x[0], &b, 7));
	assert_false(afxdp_loop_pending(f->x[0]));	/* not queued at the sender */
	assert_int_equal(f->x[0]->st.loopback_handed, 1);
	assert_int_equal(f->x[0]->st.handoff_rx_out, 0);	/* wire hand-offs only */
	assert_int_equal(afxdp_views_rx(f->x[1], p, 4), 1);
	assert_ptr_equal(p[0].data, b.data);
	assert_int_equal(p[0].len, 64);
	assert_true(addr_eq(&p[0].src, &f->x[0]->src));
	assert_int_equal(p[0].arrival, 7);
	assert_true(p[0].cookie & COOKIE_LOOP);
	assert_true(p[0].cookie & COOKIE_HANDED);
	/* rx_release gives it back to the owner of the cookie's socket: view 0. */
	assert_int_equal(f->x[1]->sock_view[p[0].cookie >> COOKIE_SOCK_SHIFT &
					     (AFXDP_MAX_SOCKS - 1)], 0);
	assert_int_equal(f->x[1]->st.handoff_rx_in, 0);
	/* The QP is view 0's own: its queue. */
	f->owner = 0;
	assert_true(afxdp_loop_send(f->x[0], &b, 8));
	assert_true(afxdp_loop_pending(f->x[0]));
	fix_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_is_ours),
		cmocka_unit_test(test_local_delivery),
		cmocka_unit_test(test_queue_bounded),
		cmocka_unit_test(test_handed_to_owner),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
