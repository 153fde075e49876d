// SPDX-License-Identifier: MIT
/*
 * The AF_XDP backend's TX kick (daemon/backend/afxdp.c, afxdp_tx_kick), on a real
 * copy-mode socket on a veth pair.
 *
 * In copy mode the kernel takes at most 32 descriptors per kick (sendto)
 * and answers EAGAIN for the rest.  mrocd used to kick once per batch of up
 * to 64 packets: what was left sat in the TX ring until the next packet
 * came along, and at the end of a burst that was a tail-loss probe or an
 * RTO later.  afxdp_tx_kick must leave the ring empty, or say how many
 * descriptors are still in it.  afxdp_set_tx_budget raises the 32 where the
 * kernel lets it.
 *
 * The test runs in a network namespace of its own (unshare(CLONE_NEWNET)),
 * so everything it creates vanishes with the process.  Needs root; exits 77
 * when it is not root or AF_XDP is unavailable.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include "afxdp.h"
#include "log.h"
#include "xdp_prog.h"

#define NFRAMES		2048
#define FRAME_SIZE	2048
#define RING		1024

struct sock {
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
};

/* One socket for every test: a queue's socket is released asynchronously after close. */
static struct sock sk;

static int sh(const char *cmd)
{
	char full[512];

	snprintf(full, sizeof(full), "%s >/dev/null 2>&1", cmd);
	return system(full);
}

/* A TX-only copy-mode socket on ifname, queue 0, with need_wakeup as mrocd binds it. */
static int sock_open(struct sock *s, const char *ifname)
{
	struct xsk_umem_config uc = {
		.fill_size = RING, .comp_size = RING, .frame_size = FRAME_SIZE,
	};
	struct xsk_socket_config sc = {
		.rx_size = RING, .tx_size = RING,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_USE_NEED_WAKEUP | XDP_COPY,
	};
	int err;

	memset(s, 0, sizeof(*s));
	s->area = mmap(NULL, (size_t)NFRAMES * FRAME_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->area == MAP_FAILED)
		return -ENOMEM;
	err = xsk_umem__create(&s->umem, s->area, (uint64_t)NFRAMES * FRAME_SIZE, &s->fq, &s->cq,
			       &uc);
	if (!err)
		err = xsk_socket__create(&s->xsk, ifname, 0, s->umem, NULL, &s->tx, &sc);
	return err;
}

static void sock_close(struct sock *s)
{
	if (s->xsk)
		xsk_socket__delete(s->xsk);
	if (s->umem)
		xsk_umem__delete(s->umem);
	munmap(s->area, (size_t)NFRAMES * FRAME_SIZE);
}

/* n broadcast frames of an unused ethertype submitted to the TX ring, not kicked. */
static void submit(struct sock *s, uint32_t first, uint32_t n)
{
	uint32_t idx = 0;

	assert_int_equal(xsk_ring_prod__reserve(&s->tx, n, &idx), n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = (uint64_t)((first + i) % NFRAMES) * FRAME_SIZE;
		uint8_t *f = (uint8_t *)s->area + addr;
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&s->tx, idx + i);

		memset(f, 0xff, 12);
		f[12] = 0x88;		/* 0x88b5: IEEE local experimental */
		f[13] = 0xb5;
		memset(f + 14, 0, 46);
		d->addr = addr;
		d->len = 60;
	}
	xsk_ring_prod__submit(&s->tx, n);
}

/* Back from the completion ring: the test reuses frames in turn, not these. */
static uint32_t completed(struct sock *s)
{
	uint32_t idx, n = xsk_ring_cons__peek(&s->cq, RING, &idx);

	xsk_ring_cons__release(&s->cq, n);
	return n;
}

/*
 * n completions, waited for (10 s at most): copy mode completes a frame when
 * its skb is freed, at once on veth here, but that is the driver's business.
 */
static uint32_t completed_n(struct sock *s, uint32_t n)
{
	uint32_t got = 0;

	for (int i = 0; i < 10000 && got < n; i++) {
		got += completed(s);
		if (got < n)
			usleep(1000);
	}
	return got;
}

static uint32_t in_ring(const struct sock *s)
{
	return *s->tx.producer - *s->tx.consumer;
}

/* 200 descriptors (six and a bit kicks' worth): one call sends them all. */
static void test_kick_empties_ring(void **state)
{
	struct sock *s = &sk;
	int left;

	(void)state;
	submit(s, 0, 200);
	left = afxdp_tx_kick(&s->tx, xsk_socket__fd(s->xsk), false);
	assert_int_equal(left, 0);
	assert_int_equal(in_ring(s), 0);
	assert_int_equal(completed_n(s, 200), 200);
	/* Nothing queued: nothing to do, and no error. */
	assert_int_equal(afxdp_tx_kick(&s->tx, xsk_socket__fd(s->xsk), false), 0);
}

/*
 * With the budget at the ring's size (afxdp_set_tx_budget, kernels 6.17+),
 * one system call sends a whole batch: mrocd's 64 and more.  Kernels
 * without the option keep 32 a call; the test then skips.
 */
static void test_budget_one_kick(void **state)
{
	struct sock *s = &sk;
	int err;

	(void)state;
	err = afxdp_set_tx_budget(xsk_socket__fd(s->xsk), RING);
	if (err == -ENOPROTOOPT) {
		printf("note: no XDP_MAX_TX_SKB_BUDGET on this kernel: 32 descriptors a kick\n");
		skip();
	}
	assert_int_equal(err, 0);
	/* Out of range (32..ring): refused, the budget set stays. */
	assert_int_not_equal(afxdp_set_tx_budget(xsk_socket__fd(s->xsk), 16), 0);
	submit(s, 0, 200);
	sendto(xsk_socket__fd(s->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
	assert_int_equal(in_ring(s), 0);
	assert_int_equal(completed_n(s, 200), 200);
}

/* A full ring, many times over: every call leaves it empty. */
static void test_kick_full_rings(void **state)
{
	struct sock *s = &sk;

	(void)state;
	for (uint32_t round = 0; round < 8; round++) {
		submit(s, round * RING, RING);
		assert_int_equal(afxdp_tx_kick(&s->tx, xsk_socket__fd(s->xsk), false), 0);
		assert_int_equal(in_ring(s), 0);
		assert_int_equal(completed_n(s, RING), RING);
	}
}

/*
 * The peer with an XDP program: veth then queues frames for its NAPI in a
 * ring of 256 and may stop the device queue when that is full (kernels
 * since 6.16).  Whatever the kernel did, the count returned is what the
 * ring still holds, and kicking again later sends the rest.
 */
static void test_kick_reports_left(void **state)
{
	struct xdp_prog_opts opts = { .sz = sizeof(opts), .udp_port = 4793 };
	struct xdp_prog *prog;
	struct sock *s = &sk;
	int left;

	(void)state;
	if (xdp_prog_open(&prog, &opts))
		skip();
	assert_int_equal(xdp_prog_attach(prog, (int)if_nametoindex("kv1"), XDP_PROG_MODE_NATIVE), 0);
	for (uint32_t round = 0; round < 4; round++) {
		submit(s, round * RING, RING);
		left = afxdp_tx_kick(&s->tx, xsk_socket__fd(s->xsk), false);
		assert_true(left >= 0);
		assert_int_equal((uint32_t)left, in_ring(s));
		if (left)
			printf("note: round %u: %d of %d descriptors left (device queue stopped)\n",
			       round, left, RING);
		for (int tries = 0; left && tries < 100000; tries++) {
			completed(s);
			left = afxdp_tx_kick(&s->tx, xsk_socket__fd(s->xsk), false);
			assert_true(left >= 0);
			if (left)
				sched_yield();
		}
		assert_int_equal(left, 0);
		completed(s);
	}
	xdp_prog_close(prog);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kick_empties_ring),
		cmocka_unit_test(test_budget_one_kick),
		cmocka_unit_test(test_kick_full_rings),
		cmocka_unit_test(test_kick_reports_left),
	};
	int ret;

	log_set_level(LOG_WARNING);
	xdp_prog_init_logging();
	if (geteuid() != 0) {
		printf("SKIP: test_afxdp needs root (CAP_NET_ADMIN, CAP_NET_RAW)\n");
		return 77;
	}
	if (unshare(CLONE_NEWNET)) {
		printf("SKIP: cannot make a network namespace: %s\n", strerror(errno));
		return 77;
	}
	if (sh("ip link set lo up") || sh("ip link add kv0 type veth peer name kv1") ||
	    sh("ip link set kv0 up") || sh("ip link set kv1 up")) {
		printf("SKIP: cannot create a veth pair with ip(8)\n");
		return 77;
	}
	if (sock_open(&sk, "kv0")) {
		printf("SKIP: no AF_XDP copy-mode socket on a veth\n");
		return 77;
	}
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	sock_close(&sk);
	return ret;
}
