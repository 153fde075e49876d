// SPDX-License-Identifier: MIT
/*
 * The XDP steering program (daemon/backend/xdp_prog.c) with AF_XDP sockets:
 * a real socket on a veth, registered with xdp_prog_add_socket; test_run
 * then reports XDP_REDIRECT (it does not deliver), and a live frame sent
 * over the veth with a packet socket must land in the socket's RX ring,
 * with its arrival stamp.  Root, in a network namespace of its own
 * (xdp_prog_fix.h).
 */
#include "xdp_prog_fix.h"

/* ---- AF_XDP sockets -------------------------------------------------------------- */

#define NFRAMES		64
#define FRAME_SIZE	XSK_UMEM__DEFAULT_FRAME_SIZE

struct sock {
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq;
	struct xsk_ring_cons cq, rx;
};

/* An RX-only AF_XDP socket in copy mode with a full fill ring; 0 or -errno. */
static int sock_open(struct sock *s, const char *ifn, uint32_t queue)
{
	struct xsk_socket_config cfg = {
		.rx_size = XSK_RING_CONS__DEFAULT_NUM_DESCS,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_COPY,
	};
	uint32_t idx = 0;
	int err;

	memset(s, 0, sizeof(*s));
	s->area = mmap(NULL, NFRAMES * FRAME_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->area == MAP_FAILED)
		return -errno;
	/* A socket closed just before frees its queue asynchronously: EBUSY for a moment. */
	for (int try = 0; try < 200; try++) {
		err = xsk_umem__create(&s->umem, s->area, NFRAMES * FRAME_SIZE, &s->fq, &s->cq,
				       NULL);
		if (!err)
			err = xsk_socket__create(&s->xsk, ifn, queue, s->umem, &s->rx, NULL, &cfg);
		if (err != -EBUSY)
			break;
		xsk_umem__delete(s->umem);
		s->umem = NULL;
		usleep(10000);
	}
	if (err) {
		print_error("AF_XDP socket on %s queue %u: %s\n", ifn, queue, strerror(-err));
		if (s->umem)
			xsk_umem__delete(s->umem);
		munmap(s->area, NFRAMES * FRAME_SIZE);
		return err;
	}
	assert_int_equal(xsk_ring_prod__reserve(&s->fq, NFRAMES, &idx), NFRAMES);
	for (uint32_t i = 0; i < NFRAMES; i++)
		*xsk_ring_prod__fill_addr(&s->fq, idx + i) = i * FRAME_SIZE;
	xsk_ring_prod__submit(&s->fq, NFRAMES);
	return 0;
}

static void sock_close(struct sock *s)
{
	xsk_socket__delete(s->xsk);
	xsk_umem__delete(s->umem);
	munmap(s->area, NFRAMES * FRAME_SIZE);
}

/* The next received frame within timeout_ms: its length, or 0; *stamp: its XDP arrival stamp. */
static uint32_t sock_recv_stamp(struct sock *s, uint8_t *buf, size_t cap, int timeout_ms,
				uint64_t *stamp)
{
	struct pollfd pfd = { .fd = xsk_socket__fd(s->xsk), .events = POLLIN };
	const struct xdp_desc *d;
	uint32_t idx, len;

	if (!xsk_ring_cons__peek(&s->rx, 1, &idx)) {
		if (poll(&pfd, 1, timeout_ms) <= 0 || !xsk_ring_cons__peek(&s->rx, 1, &idx))
			return 0;
	}
	d = xsk_ring_cons__rx_desc(&s->rx, idx);
	if (stamp)
		*stamp = xdp_prog_rx_stamp(xsk_umem__get_data(s->area, d->addr));
	len = d->len < cap ? d->len : cap;
	memcpy(buf, xsk_umem__get_data(s->area, d->addr), len);
	xsk_ring_cons__release(&s->rx, 1);
	/* give the frame back */
	assert_int_equal(xsk_ring_prod__reserve(&s->fq, 1, &idx), 1);
	*xsk_ring_prod__fill_addr(&s->fq, idx) = xsk_umem__extract_addr(d->addr);
	xsk_ring_prod__submit(&s->fq, 1);
	return len;
}

static uint32_t sock_recv(struct sock *s, uint8_t *buf, size_t cap, int timeout_ms)
{
	return sock_recv_stamp(s, buf, cap, timeout_ms, NULL);
}

static void test_redirect(void **state)
{
	struct xdp_prog *prog;
	struct sock s;
	struct pkt p;
	int fd, slot, udp;

	if (!net.veth)
		skip();
	prog = open_prog(0);
	assert_int_equal(sock_open(&s, "mx1", 0), 0);
	fd = xsk_socket__fd(s.xsk);

	slot = xdp_prog_add_socket(prog, net.mx1, 0, fd);
	assert_true(slot >= 0);
	assert_int_equal(xdp_prog_add_socket(prog, net.mx1, 0, fd), -EEXIST);
	for (size_t v = 0; v < ARRAY_SIZE(vlans); v++) {
		for (int ipv = 4; ipv <= 6; ipv += 2) {
			build_ours(&p, ipv, v);
			expect_on(prog, &p, net.mx1, 0, XDP_REDIRECT, REDIRECTED, "registered queue");
		}
	}
	build_ours(&p, 4, 0);
	/* other queue, other interface, loopback: no socket */
	expect_on(prog, &p, net.mx1, 1, XDP_PASS, PASS_NO_SOCKET, "mx1 queue 1");
	expect_on(prog, &p, net.mx0, 0, XDP_PASS, PASS_NO_SOCKET, "mx0 queue 0");
	expect_on(prog, &p, 0, 0, XDP_PASS, PASS_NO_SOCKET, "loopback");
	/* registered queue, but not ours or malformed: no redirect */
	p.b[p.pl] = 2;
	expect_on(prog, &p, net.mx1, 0, XDP_DROP, DROP_BAD_MROC_VERSION, "bad version");
	put16(p.b + p.l4 + 2, PORT + 1);
	expect_on(prog, &p, net.mx1, 0, XDP_PASS, PASS_NOT_UDP_PORT, "other port");

	/* hash entry without a socket in its slot (mid-removal): pass */
	build_ours(&p, 6, 3);
	assert_int_equal(bpf_map_delete_elem(xdp_prog_xskmap_fd(prog), &slot), 0);
	expect_on(prog, &p, net.mx1, 0, XDP_PASS, PASS_NO_SOCKET, "empty XSKMAP slot");

	assert_int_equal(xdp_prog_remove_socket(prog, net.mx1, 0), 0);
	assert_int_equal(xdp_prog_remove_socket(prog, net.mx1, 0), -ENOENT);
	expect_on(prog, &p, net.mx1, 0, XDP_PASS, PASS_NO_SOCKET, "after remove");
	assert_int_equal(xdp_prog_add_socket(prog, net.mx1, 0, fd), slot);
	expect_on(prog, &p, net.mx1, 0, XDP_REDIRECT, REDIRECTED, "added again");

	/* not an AF_XDP socket: refused, and nothing half-registered */
	udp = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(udp >= 0);
	assert_true(xdp_prog_add_socket(prog, net.mx0, 0, udp) < 0);
	close(udp);
	expect_on(prog, &p, net.mx0, 0, XDP_PASS, PASS_NO_SOCKET, "refused fd");
	assert_int_equal(xdp_prog_add_socket(prog, net.mx0, 0, -1), -EINVAL);

	xdp_prog_close(prog);
	sock_close(&s);
}

static void test_socket_slots(void **state)
{
	struct xdp_prog *prog;
	struct sock s;
	struct pkt p;
	int fd;

	if (!net.veth)
		skip();
	prog = open_prog(2);
	assert_int_equal(sock_open(&s, "mx1", 1), 0);
	fd = xsk_socket__fd(s.xsk);
	/* one socket may sit in several slots; the map only steers */
	assert_int_equal(xdp_prog_add_socket(prog, net.mx1, 0, fd), 0);
	assert_int_equal(xdp_prog_add_socket(prog, net.mx1, 1, fd), 1);
	assert_int_equal(xdp_prog_add_socket(prog, net.mx0, 0, fd), -ENOSPC);
	assert_int_equal(xdp_prog_remove_socket(prog, net.mx1, 0), 0);
	assert_int_equal(xdp_prog_add_socket(prog, net.mx0, 0, fd), 0);
	build_ours(&p, 4, 1);
	expect_on(prog, &p, net.mx0, 0, XDP_REDIRECT, REDIRECTED, "reused slot");
	expect_on(prog, &p, net.mx1, 1, XDP_REDIRECT, REDIRECTED, "second slot");
	expect_on(prog, &p, net.mx1, 0, XDP_PASS, PASS_NO_SOCKET, "freed key");
	xdp_prog_close(prog);
	sock_close(&s);
}

static void get_mac(const char *ifn, uint8_t mac[6])
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifn);
	assert_int_equal(ioctl(fd, SIOCGIFHWADDR, &ifr), 0);
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
}

static void inject(int pfd, struct pkt *p, const uint8_t dmac[6])
{
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = net.mv0, .sll_halen = 6 };

	memcpy(p->b, dmac, 6);
	memcpy(to.sll_addr, dmac, 6);
	assert_int_equal(sendto(pfd, p->b, p->len, 0, (struct sockaddr *)&to, sizeof(to)),
			 (ssize_t)p->len);
}

/* Real frames over mv0 -> mv1 with the program attached natively on mv1. */
static void test_live_redirect(void **state)
{
	struct xdp_prog_counters c0, c1;
	struct xdp_prog *prog;
	uint8_t mac[6], buf[700];
	struct sock s;
	struct pkt p;
	int pfd;

	if (!net.veth)
		skip();
	prog = open_prog(0);
	assert_int_equal(xdp_prog_attach(prog, net.mv1, XDP_PROG_MODE_NATIVE), 0);
	assert_int_equal(sock_open(&s, "mv1", 0), 0);
	assert_true(xdp_prog_add_socket(prog, net.mv1, 0, xsk_socket__fd(s.xsk)) >= 0);
	get_mac("mv1", mac);
	pfd = socket(AF_PACKET, SOCK_RAW, 0);
	assert_true(pfd >= 0);

	for (int ipv = 4; ipv <= 6; ipv += 2) {
		read_counters(prog, &c0);
		build_ours(&p, ipv, 3);
		inject(pfd, &p, mac);
		assert_int_equal(sock_recv(&s, buf, sizeof(buf), 2000), p.len);
		assert_memory_equal(buf, p.b, p.len);
		read_counters(prog, &c1);
		assert_int_equal(c1.redirected - c0.redirected, 1);
	}

	read_counters(prog, &c0);
	build_ours(&p, 4, 0);
	put16(p.b + p.l4 + 2, PORT + 1);	/* not ours: to the kernel */
	inject(pfd, &p, mac);
	build_ours(&p, 4, 0);
	p.b[p.pl] = 9;				/* ours, malformed: dropped */
	inject(pfd, &p, mac);
	assert_int_equal(sock_recv(&s, buf, sizeof(buf), 300), 0);
	read_counters(prog, &c1);
	assert_true(c1.pass_not_udp_port - c0.pass_not_udp_port >= 1);
	assert_int_equal(c1.drop_bad_mroc_version - c0.drop_bad_mroc_version, 1);
	assert_int_equal(c1.redirected, c0.redirected);

	close(pfd);
	xdp_prog_close(prog);
	sock_close(&s);
}

static uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Frames injected on mv1 and read from a copy-mode socket there, in native
 * and in generic (skb) mode, with the program loaded as no_stamp says: each
 * stamped between its send and its read, later than the one before; or
 * (no_stamp, or a kernel that refuses the helper) redirected whole with no
 * stamp at all.
 */
static void live_stamps(bool no_stamp)
{
	static const enum xdp_prog_mode modes[] = { XDP_PROG_MODE_NATIVE, XDP_PROG_MODE_GENERIC };
	struct xdp_prog_opts opts = { .sz = sizeof(opts), .udp_port = PORT, .no_stamp = no_stamp };
	uint8_t mac[6], buf[700];

	if (!net.veth)
		skip();
	get_mac("mv1", mac);
	for (size_t m = 0; m < ARRAY_SIZE(modes); m++) {
		struct xdp_prog *prog;
		uint64_t prev = 0;
		struct sock s;
		struct pkt p;
		int pfd;

		bool stamps;

		assert_int_equal(xdp_prog_open(&prog, &opts), 0);
		/* A kernel that refuses bpf_xdp_adjust_meta gets the unstamped program. */
		stamps = xdp_prog_stamps(prog);
		assert_true(!stamps || !no_stamp);
		if (!stamps && !no_stamp)
			print_message("this kernel refuses the stamp's helper: the fallback, unstamped\n");
		assert_int_equal(xdp_prog_attach(prog, net.mv1, modes[m]), 0);
		assert_int_equal(sock_open(&s, "mv1", 0), 0);
		assert_true(xdp_prog_add_socket(prog, net.mv1, 0, xsk_socket__fd(s.xsk)) >= 0);
		pfd = socket(AF_PACKET, SOCK_RAW, 0);
		assert_true(pfd >= 0);
		for (int i = 0; i < 3; i++) {
			uint64_t t0, t1, stamp = 1;

			build_ours(&p, i == 1 ? 6 : 4, 0);
			t0 = mono_now();
			inject(pfd, &p, mac);
			assert_int_equal(sock_recv_stamp(&s, buf, sizeof(buf), 2000, &stamp), p.len);
			t1 = mono_now();
			assert_memory_equal(buf, p.b, p.len);
			if (!stamps) {
				assert_int_equal(stamp, 0);
				continue;
			}
			print_message("%s: stamp %" PRIu64 " ns after the send, %" PRIu64
				      " ns before the read\n", xdp_prog_mode_name(modes[m]),
				      stamp - t0, t1 - stamp);
			assert_true(stamp >= t0 && stamp <= t1);
			assert_true(stamp > prev);
			prev = stamp;
		}
		close(pfd);
		xdp_prog_close(prog);
		sock_close(&s);
	}
}

/*
 * Issue #22: every redirected frame carries its arrival time before it (XDP
 * metadata, struct mroc_xdp_meta), on the clock mrocd's worker reads, in
 * native and in generic (skb) mode, copy-mode sockets both; the reader takes
 * it once (the frame back in the fill ring has no stale stamp to give).
 */
static void test_live_stamp(void **state)
{
	(void)state;
	live_stamps(false);
}

/*
 * The program loaded with no_stamp (xsk-baseline --no-stamp, to measure the
 * stamp's cost) redirects as before but writes no metadata: no stamp.
 */
static void test_live_no_stamp(void **state)
{
	(void)state;
	live_stamps(true);
}

/* A stamp is read once; a frame without the mark (no metadata support) has none. */
static void test_stamp_read_once(void **state)
{
	uint8_t chunk[64] = { 0 };
	struct mroc_xdp_meta m = { .rx_ns = 123456789, .magic = MROC_XDP_META_MAGIC };

	(void)state;
	assert_int_equal(xdp_prog_rx_stamp(chunk + 32), 0);
	memcpy(chunk + 32 - sizeof(m), &m, sizeof(m));
	assert_int_equal(xdp_prog_rx_stamp(chunk + 32), 123456789);
	assert_int_equal(xdp_prog_rx_stamp(chunk + 32), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_redirect),
		cmocka_unit_test(test_socket_slots),
		cmocka_unit_test(test_live_redirect),
		cmocka_unit_test(test_live_stamp),
		cmocka_unit_test(test_live_no_stamp),
		cmocka_unit_test(test_stamp_read_once),
	};
	int err = xdp_fix_start("test_xdp_prog_sock");

	if (err)
		return err;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
