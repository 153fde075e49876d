// SPDX-License-Identifier: MIT
/*
 * The UDP backend on loopback: two backends (or a backend and a plain
 * socket) exchange packets, and we check payloads, source addresses, the
 * source port (the path), the ECN bits both ways, batches without loss,
 * buffer recycling when the receiver holds every buffer (ENOBUFS and
 * re-arming), IPv6 and dual stack, and the error paths.
 *
 * Addresses are 127.a.b.{1,2,3} with a and b from the pid and ports are
 * picked at random below 32768 (retried when taken), so tests running at the
 * same time on one host do not collide.  Only loopback traffic.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "frame.h"
#include "peers.h"
#include "udp_backend.h"

#define NSPORTS		16
#define MAX_FDS		4
#define WAIT_MS		2000

struct side {
	struct udp_backend_cfg cfg;
	struct peers *peers;
	struct backend *be;
};

static unsigned port_seed;

static void addr4(struct mroc_addr *a, unsigned host)
{
	unsigned pid = (unsigned)getpid();
	char s[32];

	snprintf(s, sizeof(s), "127.%u.%u.%u", 1 + pid % 200, pid / 200 % 250, host);
	assert_int_equal(addr_parse(s, a), 0);
}

static void addr6_lo(struct mroc_addr *a)
{
	assert_int_equal(addr_parse("::1", a), 0);
}

static uint16_t random_port(void)
{
	port_seed = port_seed * 1103515245u + 12345u;
	return (uint16_t)(10000 + (port_seed >> 8) % 22000);
}

static void side_cfg(struct side *s, const struct mroc_addr *local, uint16_t port,
		     uint16_t peer_port, uint16_t sport_min)
{
	udp_backend_cfg_default(&s->cfg);
	if (local)
		s->cfg.local = *local;
	s->cfg.udp_port = port;
	s->cfg.peer_port = peer_port;
	s->cfg.sport_min = sport_min;
	s->cfg.sport_max = (uint16_t)(sport_min + NSPORTS - 1);
}

static int side_open(struct side *s)
{
	if (!s->peers)
		s->peers = peers_create(64);
	assert_non_null(s->peers);
	return udp_backend_create(&s->cfg, s->peers, &s->be);
}

static void side_close(struct side *s)
{
	if (s->be)
		s->be->ops->destroy(s->be);
	if (s->peers)
		peers_destroy(s->peers);
	memset(s, 0, sizeof(*s));
}

static uint32_t handle_of(struct side *s, const struct mroc_addr *a)
{
	uint32_t h;

	assert_int_equal(peers_get_handle(s->peers, a, &h), 0);
	return h;
}

/*
 * A and B on 127.a.b.1 and .2 with the same udp_port, A's source ports
 * just above it and B's above A's.  Retries with other ports when taken.
 */
static void pair_open(struct side *a, struct side *b)
{
	struct mroc_addr la, lb;

	addr4(&la, 1);
	addr4(&lb, 2);
	for (int tries = 0; tries < 50; tries++) {
		uint16_t p = random_port();
		int err;

		memset(a, 0, sizeof(*a));
		memset(b, 0, sizeof(*b));
		side_cfg(a, &la, p, 0, (uint16_t)(p + 1));
		side_cfg(b, &lb, p, 0, (uint16_t)(p + 1 + NSPORTS));
		err = side_open(a);
		if (!err) {
			err = side_open(b);
			if (!err)
				return;
		}
		assert_int_equal(err, -EADDRINUSE);
		side_close(a);
		side_close(b);
	}
	fail_msg("no free ports");
}

/* ---- sending and receiving ------------------------------------------------------ */

static uint32_t pkt_len(uint32_t seq)
{
	return 60 + seq * 37 % 1400;
}

static void fill(uint8_t *p, uint32_t len, uint32_t seq)
{
	memcpy(p, &seq, sizeof(seq));
	for (uint32_t i = sizeof(seq); i < len; i++)
		p[i] = (uint8_t)(seq * 31 + i);
}

static bool check(const uint8_t *p, uint32_t len, uint32_t *seq)
{
	*seq = UINT32_MAX;
	if (len < sizeof(*seq))
		return false;
	memcpy(seq, p, sizeof(*seq));
	if (len != pkt_len(*seq))
		return false;
	for (uint32_t i = sizeof(*seq); i < len; i++)
		if (p[i] != (uint8_t)(*seq * 31 + i))
			return false;
	return true;
}

/* Send seqs [first, first + n) from s to peer handle h; returns how many were sent. */
static int send_seqs(struct side *s, uint32_t h, uint32_t first, int n, uint16_t sport, bool ect)
{
	struct engine_txbuf bufs[64];
	int got, sent;

	assert_true(n <= 64);
	got = s->be->ops->tx_get(s->be, bufs, n);
	for (int i = 0; i < got; i++) {
		assert_true(bufs[i].cap >= s->cfg.buf_size);
		bufs[i].len = pkt_len(first + (uint32_t)i);
		fill(bufs[i].data, bufs[i].len, first + (uint32_t)i);
		bufs[i].peer = h;
		bufs[i].sport = sport;
		bufs[i].ect = ect;
	}
	sent = s->be->ops->tx_send(s->be, bufs, got, got);
	assert_int_equal(sent, got);
	return sent;
}

static void wait_fds(struct side *s, int ms)
{
	struct pollfd pfd[MAX_FDS];
	int fds[MAX_FDS], n = s->be->ops->poll_fds(s->be, fds, MAX_FDS);

	assert_true(n >= 1);
	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	poll(pfd, (nfds_t)n, ms);
}

/* Receive up to max packets (held: the caller releases), waiting at most ms for the first. */
static int recv_some(struct side *s, struct backend_pkt *pkts, int max, int ms)
{
	int got = s->be->ops->rx(s->be, pkts, max);

	if (got == 0 && ms > 0) {
		wait_fds(s, ms);
		got = s->be->ops->rx(s->be, pkts, max);
	}
	assert_true(got >= 0);
	return got;
}

/* Receive exactly one packet. */
static void recv_one(struct side *s, struct backend_pkt *pkt)
{
	for (int t = 0; t < WAIT_MS / 10; t++)
		if (recv_some(s, pkt, 1, 10) == 1)
			return;
	fail_msg("no packet in %d ms", WAIT_MS);
}

static void release(struct side *s, struct backend_pkt *pkts, int n)
{
	s->be->ops->rx_release(s->be, pkts, n);
}

/* ---- plain sockets ---------------------------------------------------------------- */

static int plain_open(const struct mroc_addr *a, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr = a->v4;
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_addr = a->v6;
		len = sizeof(*sin6);
	}
	fd = socket(a->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	if (a->family == AF_INET)
		assert_int_equal(setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)), 0);
	else
		assert_int_equal(setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one)), 0);
	if (bind(fd, (struct sockaddr *)&ss, len)) {
		close(fd);
		return -errno;
	}
	return fd;
}

static uint16_t plain_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
			       ((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* Send len bytes of seq with the given TOS / traffic class to a:port. */
static void plain_send(int fd, int family, int tos, const struct mroc_addr *a, uint16_t port,
		       uint32_t seq)
{
	uint8_t buf[2048];
	struct sockaddr_storage ss;
	socklen_t len;

	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		assert_int_equal(setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)), 0);
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr = a->v4;
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		assert_int_equal(setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos)), 0);
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_addr = a->v6;
		len = sizeof(*sin6);
	}
	fill(buf, pkt_len(seq), seq);
	assert_int_equal(sendto(fd, buf, pkt_len(seq), 0, (struct sockaddr *)&ss, len),
			 (ssize_t)pkt_len(seq));
}

/*
 * Receive one datagram: its seq (payload checked), TOS / traffic class and
 * source port.  The backend ends every packet with the ICRC: checked and removed.
 */
/* The source address of plain_recv's last packet (IPv4-mapped as IPv4). */
static struct mroc_addr plain_from;

static void plain_recv(int fd, uint32_t *seq, int *tos, uint16_t *sport)
{
	struct sockaddr_storage me;
	socklen_t melen = sizeof(me);
	uint8_t buf[2048];
	union {
		char b[256];
		struct cmsghdr align;
	} ctl;
	struct sockaddr_storage ss;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = {
		.msg_name = &ss, .msg_namelen = sizeof(ss),
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.b, .msg_controllen = sizeof(ctl.b),
	};
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;

	assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
	n = recvmsg(fd, &mh, MSG_DONTWAIT);
	assert_true(n > 0);
	*sport = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
			       ((struct sockaddr_in6 *)&ss)->sin6_port);
	memset(&plain_from, 0, sizeof(plain_from));
	if (ss.ss_family == AF_INET) {
		plain_from.family = AF_INET;
		plain_from.v4 = ((struct sockaddr_in *)&ss)->sin_addr;
	} else if (IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&ss)->sin6_addr)) {
		plain_from.family = AF_INET;
		memcpy(&plain_from.v4, &((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr[12], 4);
	} else {
		plain_from.family = AF_INET6;
		plain_from.v6 = ((struct sockaddr_in6 *)&ss)->sin6_addr;
	}
	assert_int_equal(getsockname(fd, (struct sockaddr *)&me, &melen), 0);
	n = frame_icrc_open(buf, (size_t)n, *sport,
			    ntohs(me.ss_family == AF_INET ? ((struct sockaddr_in *)&me)->sin_port :
				  ((struct sockaddr_in6 *)&me)->sin6_port));
	assert_true(n > 0);
	assert_true(check(buf, (uint32_t)n, seq));
	*tos = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
			*tos = *(uint8_t *)CMSG_DATA(c);
		if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS)
			memcpy(tos, CMSG_DATA(c), sizeof(*tos));
	}
}

static bool have_ipv6_lo(void)
{
	struct mroc_addr lo;
	int fd;

	addr6_lo(&lo);
	fd = plain_open(&lo, 0);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_exchange_v4(void **state)
{
	struct side a, b;
	struct backend_pkt pkt;
	struct backend_stats st;
	char want[96];
	uint32_t seq;

	(void)state;
	pair_open(&a, &b);
	snprintf(want, sizeof(want), "udp %s:%u sports %u-%u",
		 addr_str(&a.cfg.local, (char[MROC_ADDR_STRLEN]){ 0 }, MROC_ADDR_STRLEN),
		 a.cfg.udp_port, a.cfg.sport_min, a.cfg.sport_max);
	assert_string_equal(a.be->ops->describe(a.be), want);
	assert_string_equal(a.be->ops->name, "udp");

	/* A -> B from the fourth source port, ECN-capable. */
	recv_some(&b, &pkt, 1, 0);		/* arms B's receive */
	assert_int_equal(send_seqs(&a, handle_of(&a, &b.cfg.local), 7, 1,
				   (uint16_t)(a.cfg.sport_min + 3), true), 1);
	recv_one(&b, &pkt);
	assert_true(check(pkt.data, pkt.len, &seq));
	assert_int_equal(seq, 7);
	assert_true(addr_eq(&pkt.src, &a.cfg.local));
	assert_true(addr_eq(&pkt.dst, &b.cfg.local));	/* "aead" opens with both */
	assert_int_equal(pkt.sport, a.cfg.sport_min + 3);
	assert_false(pkt.ce);
	release(&b, &pkt, 1);

	/* B -> A from its last source port, not ECN-capable. */
	assert_int_equal(send_seqs(&b, handle_of(&b, &a.cfg.local), 8, 1, b.cfg.sport_max, false), 1);
	recv_one(&a, &pkt);
	assert_true(check(pkt.data, pkt.len, &seq));
	assert_int_equal(seq, 8);
	assert_true(addr_eq(&pkt.src, &b.cfg.local));
	assert_int_equal(pkt.sport, b.cfg.sport_max);
	assert_false(pkt.ce);
	release(&a, &pkt, 1);

	a.be->ops->get_stats(a.be, &st);
	assert_int_equal(st.tx_pkts, 1);
	/* bytes as on the wire: the ICRC included */
	assert_int_equal(st.tx_bytes, pkt_len(7) + FRAME_ICRC_LEN);
	assert_int_equal(st.rx_pkts, 1);
	assert_int_equal(st.rx_bytes, pkt_len(8) + FRAME_ICRC_LEN);
	side_close(&a);
	side_close(&b);
}

/* What leaves the backend: TOS byte (DSCP + ECN) and source port, seen by a plain socket. */
static void test_ecn_sent(void **state)
{
	struct side a, b;
	struct mroc_addr c;
	uint32_t h, seq;
	uint16_t sport;
	int fd, tos;

	(void)state;
	pair_open(&a, &b);
	side_close(&b);			/* a plain socket takes B's place, on .3 */
	addr4(&c, 3);
	fd = plain_open(&c, a.cfg.udp_port);
	assert_true(fd >= 0);
	h = handle_of(&a, &c);
	for (uint32_t i = 0; i < 4; i++) {
		bool ect = i & 1;

		send_seqs(&a, h, i, 1, (uint16_t)(a.cfg.sport_min + i), ect);
		plain_recv(fd, &seq, &tos, &sport);
		assert_int_equal(seq, i);
		assert_int_equal(tos, ect ? 2 : 0);
		assert_int_equal(sport, a.cfg.sport_min + i);
	}
	close(fd);
	side_close(&a);
}

/* What arrives: CE only when the IP header says CE. */
static void test_ecn_received(void **state)
{
	static const int tos[] = { 3, 2, 0, 1, 0xb8 | 3, 0xb8 };
	struct side a, b;
	struct backend_pkt pkt;
	struct mroc_addr c;
	uint32_t seq;
	int fd;

	(void)state;
	pair_open(&a, &b);
	addr4(&c, 3);
	fd = plain_open(&c, 0);
	assert_true(fd >= 0);
	for (uint32_t i = 0; i < sizeof(tos) / sizeof(tos[0]); i++) {
		plain_send(fd, AF_INET, tos[i], &b.cfg.local, b.cfg.udp_port, i);
		recv_one(&b, &pkt);
		assert_true(check(pkt.data, pkt.len, &seq));
		assert_int_equal(seq, i);
		assert_true(addr_eq(&pkt.src, &c));
		assert_int_equal(pkt.sport, plain_port(fd));
		assert_int_equal(pkt.ce, (tos[i] & 3) == 3);
		release(&b, &pkt, 1);
	}
	close(fd);
	side_close(&a);
	side_close(&b);
}

/*
 * A packet with an ICRC (as an AF_XDP peer sends, UDP checksum 0) arrives
 * without it; one whose ICRC does not match is dropped and counted.
 */
static void test_icrc_received(void **state)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct backend_stats st;
	struct side a, b;
	struct backend_pkt pkt;
	struct mroc_addr c;
	uint8_t buf[2048];
	uint32_t seq;
	int fd, n;

	(void)state;
	pair_open(&a, &b);
	addr4(&c, 3);
	fd = plain_open(&c, 0);
	assert_true(fd >= 0);
	to.sin_port = htons(b.cfg.udp_port);
	to.sin_addr = b.cfg.local.v4;
	for (uint32_t i = 0; i < 2; i++) {
		fill(buf, pkt_len(i), i);
		n = frame_icrc_seal(buf, pkt_len(i), plain_port(fd), b.cfg.udp_port);
		assert_int_equal(n, pkt_len(i) + FRAME_ICRC_LEN);
		if (!i)
			buf[n - 9] ^= 0x10;		/* corrupted on the way */
		assert_int_equal(sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&to, sizeof(to)), n);
	}
	recv_one(&b, &pkt);
	assert_true(check(pkt.data, pkt.len, &seq));
	assert_int_equal(seq, 1);
	release(&b, &pkt, 1);
	b.be->ops->get_stats(b.be, &st);
	assert_int_equal(st.rx_bad_icrc, 1);
	assert_int_equal(st.rx_pkts, 1);
	close(fd);
	side_close(&a);
	side_close(&b);
}

/*
 * Many packets in batches over every source port, at a rate bounded by a
 * window of unreceived packets: every one arrives once and intact.
 */
static void test_many_batches(void **state)
{
	enum { TOTAL = 20000, BATCH = 32, WINDOW = 256 };
	static uint8_t seen[TOTAL];
	struct side a, b;
	struct backend_pkt pkts[64];
	struct backend_stats sa, sb;
	uint32_t h, sent = 0, rcvd = 0, stalls = 0;

	(void)state;
	memset(seen, 0, sizeof(seen));
	pair_open(&a, &b);
	h = handle_of(&a, &b.cfg.local);
	while (rcvd < TOTAL) {
		int n;

		if (sent < TOTAL && sent - rcvd < WINDOW) {
			int want = TOTAL - sent < BATCH ? (int)(TOTAL - sent) : BATCH;
			uint16_t sport = (uint16_t)(a.cfg.sport_min + sent / BATCH % NSPORTS);

			sent += (uint32_t)send_seqs(&a, h, sent, want, sport, true);
		}
		n = recv_some(&b, pkts, 64, sent < TOTAL && sent - rcvd < WINDOW ? 0 : 10);
		for (int i = 0; i < n; i++) {
			uint32_t seq;

			assert_true(check(pkts[i].data, pkts[i].len, &seq));
			assert_true(seq < TOTAL);
			assert_int_equal(seen[seq], 0);
			seen[seq] = 1;
			assert_int_equal(pkts[i].sport, a.cfg.sport_min + seq / BATCH % NSPORTS);
		}
		release(&b, pkts, n);
		rcvd += (uint32_t)n;
		stalls = n ? 0 : stalls + 1;
		if (stalls > WAIT_MS / 10)
			fail_msg("stalled: sent %u received %u", sent, rcvd);
	}
	a.be->ops->get_stats(a.be, &sa);
	b.be->ops->get_stats(b.be, &sb);
	assert_int_equal(sa.tx_pkts, TOTAL);
	assert_int_equal(sb.rx_pkts, TOTAL);
	assert_int_equal(sa.tx_bytes, sb.rx_bytes);
	assert_int_equal(sa.tx_no_route + sb.rx_bad_frame, 0);
	side_close(&a);
	side_close(&b);
}

/*
 * A receiver with 64 buffers: first it holds every one, so the multishot
 * receive ends with ENOBUFS and nothing more arrives; after the release it
 * is armed again and the queued packets come.  Then sustained traffic with
 * packets held a while, many times more packets than buffers.
 */
static void test_buffer_recycling(void **state)
{
	enum { NBUF = 64, TOTAL = 5000, HOLD = 48 };
	static uint8_t seen[TOTAL];
	struct side a, b;
	struct backend_pkt held[NBUF], pkts[NBUF];
	struct udp_backend_xstats xs;
	uint32_t h, sent = 0, rcvd = 0, seq, stalls = 0;
	int nheld = 0, n, t;

	(void)state;
	memset(seen, 0, sizeof(seen));
	pair_open(&a, &b);
	side_close(&b);
	{
		struct mroc_addr lb;

		addr4(&lb, 2);
		side_cfg(&b, &lb, a.cfg.udp_port, 0, (uint16_t)(a.cfg.sport_max + 1));
		b.cfg.rx_bufs = NBUF;
		assert_int_equal(side_open(&b), 0);
	}
	h = handle_of(&a, &b.cfg.local);
	recv_some(&b, pkts, 1, 0);		/* arm */

	/* Half as many packets again as buffers, none released. */
	for (int i = 0; i < NBUF + NBUF / 2; i += 32)
		sent += (uint32_t)send_seqs(&a, h, sent, 32, a.cfg.sport_min, true);
	for (t = 0; t < WAIT_MS / 10 && nheld < NBUF; t++) {
		n = recv_some(&b, held + nheld, NBUF - nheld, 10);
		nheld += n;
	}
	assert_int_equal(nheld, NBUF);
	for (t = 0; t < WAIT_MS / 10; t++) {
		assert_int_equal(recv_some(&b, pkts, NBUF, 10), 0);
		udp_backend_get_xstats(b.be, &xs);
		if (xs.rx_no_bufs)
			break;
	}
	assert_int_equal(xs.rx_no_bufs, 1);
	for (int i = 0; i < nheld; i++) {
		assert_true(check(held[i].data, held[i].len, &seq));
		seen[seq]++;
	}
	release(&b, held, nheld);
	rcvd = (uint32_t)nheld;
	nheld = 0;

	/* Sustained: hold up to HOLD packets, release the oldest half when full. */
	while (rcvd < TOTAL) {
		if (sent < TOTAL && sent - rcvd < NBUF)
			sent += (uint32_t)send_seqs(&a, h, sent, TOTAL - sent < 16 ? (int)(TOTAL - sent) : 16,
						    (uint16_t)(a.cfg.sport_min + sent % NSPORTS), true);
		n = recv_some(&b, held + nheld, HOLD - nheld, sent < TOTAL ? 0 : 10);
		for (int i = 0; i < n; i++) {
			assert_true(check(held[nheld + i].data, held[nheld + i].len, &seq));
			assert_true(seq < TOTAL);
			seen[seq]++;
		}
		nheld += n;
		rcvd += (uint32_t)n;
		if (nheld == HOLD || (rcvd == TOTAL && nheld)) {
			int half = nheld == HOLD ? HOLD / 2 : nheld;

			release(&b, held, half);
			memmove(held, held + half, (size_t)(nheld - half) * sizeof(held[0]));
			nheld -= half;
		}
		stalls = n ? 0 : stalls + 1;
		if (stalls > WAIT_MS / 10)
			fail_msg("stalled: sent %u received %u", sent, rcvd);
	}
	release(&b, held, nheld);
	for (uint32_t i = 0; i < TOTAL; i++)
		assert_int_equal(seen[i], 1);
	udp_backend_get_xstats(b.be, &xs);
	assert_true(xs.rx_arms >= 2);
	assert_int_equal(xs.rx_sock_drops, 0);
	side_close(&a);
	side_close(&b);
}

/* Two backends on ::1, each sending to the other's port; a plain socket for the ECN bits. */
static void test_ipv6(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct backend_pkt pkt;
	struct mroc_addr lo;
	uint16_t p, q, sport;
	uint32_t seq;
	int fd = -1, err = -EADDRINUSE, tos;

	(void)state;
	if (!have_ipv6_lo())
		skip();
	addr6_lo(&lo);
	for (int tries = 0; tries < 50 && err == -EADDRINUSE; tries++) {
		p = random_port();
		q = (uint16_t)(p + 1);
		side_close(&a);
		side_cfg(&a, &lo, p, q, (uint16_t)(p + 2));
		err = side_open(&a);
		if (!err) {
			fd = plain_open(&lo, q);
			err = fd < 0 ? fd : 0;
		}
	}
	assert_int_equal(err, 0);
	assert_non_null(strstr(a.be->ops->describe(a.be), "udp [::1]:"));

	/* Plain socket on q: what A sends. */
	send_seqs(&a, handle_of(&a, &lo), 1, 1, (uint16_t)(a.cfg.sport_min + 5), true);
	plain_recv(fd, &seq, &tos, &sport);
	assert_int_equal(seq, 1);
	assert_int_equal(tos, 2);
	assert_int_equal(sport, a.cfg.sport_min + 5);
	send_seqs(&a, handle_of(&a, &lo), 2, 1, a.cfg.sport_min, false);
	plain_recv(fd, &seq, &tos, &sport);
	assert_int_equal(tos, 0);

	/* ... and what A receives: CE from the traffic class. */
	plain_send(fd, AF_INET6, 3, &lo, p, 3);
	recv_one(&a, &pkt);
	assert_true(check(pkt.data, pkt.len, &seq));
	assert_int_equal(seq, 3);
	assert_true(addr_eq(&pkt.src, &lo));
	assert_int_equal(pkt.sport, q);
	assert_true(pkt.ce);
	release(&a, &pkt, 1);
	plain_send(fd, AF_INET6, 2, &lo, p, 4);
	recv_one(&a, &pkt);
	assert_false(pkt.ce);
	release(&a, &pkt, 1);
	close(fd);

	/* Backend B in the plain socket's place. */
	side_cfg(&b, &lo, q, p, (uint16_t)(a.cfg.sport_max + 1));
	assert_int_equal(side_open(&b), 0);
	recv_some(&b, &pkt, 1, 0);
	send_seqs(&a, handle_of(&a, &lo), 5, 1, a.cfg.sport_max, true);
	recv_one(&b, &pkt);
	assert_true(check(pkt.data, pkt.len, &seq));
	assert_int_equal(seq, 5);
	assert_true(addr_eq(&pkt.src, &lo));
	assert_int_equal(pkt.sport, a.cfg.sport_max);
	assert_false(pkt.ce);
	release(&b, &pkt, 1);
	send_seqs(&b, handle_of(&b, &lo), 6, 1, b.cfg.sport_min, true);
	recv_one(&a, &pkt);
	assert_true(check(pkt.data, pkt.len, &seq));
	assert_int_equal(seq, 6);
	assert_int_equal(pkt.sport, b.cfg.sport_min);
	release(&a, &pkt, 1);
	side_close(&a);
	side_close(&b);
}

/* No local address: one socket for IPv4 (as IPv4-mapped) and IPv6; DSCP on every packet. */
/* backend.seal for the tests: what it was given (the packet is left as it is). */
static struct mroc_addr sealed_src, sealed_dst;
static int sealed_n;

static void record_seal(void *ctx, struct engine_txbuf *b, const struct mroc_addr *src,
			const struct mroc_addr *dst)
{
	(void)ctx;
	(void)b;
	sealed_src = *src;
	sealed_dst = *dst;
	sealed_n++;
}

static void test_dual_stack(void **state)
{
	struct side a = { 0 };
	struct backend_pkt pkt;
	struct mroc_addr c, lo6;
	uint16_t q = 0, sport;
	uint32_t seq;
	int fd4 = -1, err = -EADDRINUSE, tos;
	char want[64];

	(void)state;
	addr4(&c, 3);
	for (int tries = 0; tries < 50 && err == -EADDRINUSE; tries++) {
		uint16_t p = random_port();

		q = (uint16_t)(p + 1);
		side_close(&a);
		side_cfg(&a, NULL, p, q, (uint16_t)(p + 2));
		a.cfg.dscp = 10;
		err = side_open(&a);
		if (!err) {
			fd4 = plain_open(&c, q);
			err = fd4 < 0 ? fd4 : 0;
		}
	}
	assert_int_equal(err, 0);
	snprintf(want, sizeof(want), "udp %s:%u sports %u-%u peer port %u",
		 have_ipv6_lo() ? "*" : "0.0.0.0", a.cfg.udp_port, a.cfg.sport_min,
		 a.cfg.sport_max, q);
	assert_string_equal(a.be->ops->describe(a.be), want);

	/*
	 * Sealed ("aead") from a wildcard socket: the seal is given the
	 * addresses the packet really leaves with (the source the route gives,
	 * set on the packet; #24 case 2).
	 */
	a.be->seal = record_seal;
	send_seqs(&a, handle_of(&a, &c), 1, 1, a.cfg.sport_min, true);
	plain_recv(fd4, &seq, &tos, &sport);
	assert_int_equal(seq, 1);
	assert_int_equal(tos, 10 << 2 | 2);
	assert_int_equal(sport, a.cfg.sport_min);
	assert_int_equal(sealed_n, 1);
	assert_int_equal(sealed_src.family, AF_INET);
	assert_true(addr_eq(&sealed_src, &plain_from));
	assert_true(addr_eq(&sealed_dst, &c));
	a.be->seal = NULL;

	plain_send(fd4, AF_INET, 3, &c, a.cfg.udp_port, 2);
	recv_one(&a, &pkt);
	assert_true(check(pkt.data, pkt.len, &seq));
	assert_int_equal(seq, 2);
	assert_int_equal(pkt.src.family, AF_INET);
	assert_true(addr_eq(&pkt.src, &c));
	assert_true(addr_eq(&pkt.dst, &c));	/* sent to c: A listens on every address */
	assert_int_equal(pkt.sport, q);
	assert_true(pkt.ce);
	release(&a, &pkt, 1);
	close(fd4);

	if (have_ipv6_lo()) {
		int fd6;

		addr6_lo(&lo6);
		fd6 = plain_open(&lo6, q);
		assert_true(fd6 >= 0);
		send_seqs(&a, handle_of(&a, &lo6), 3, 1, a.cfg.sport_max, false);
		plain_recv(fd6, &seq, &tos, &sport);
		assert_int_equal(seq, 3);
		assert_int_equal(tos, 10 << 2);
		assert_int_equal(sport, a.cfg.sport_max);
		plain_send(fd6, AF_INET6, 3, &lo6, a.cfg.udp_port, 4);
		recv_one(&a, &pkt);
		assert_int_equal(pkt.src.family, AF_INET6);
		assert_true(addr_eq(&pkt.src, &lo6));
		assert_true(addr_eq(&pkt.dst, &lo6));
		assert_true(pkt.ce);
		release(&a, &pkt, 1);
		close(fd6);
	}
	side_close(&a);
}

static void test_errors(void **state)
{
	struct side a, b, c = { 0 };
	struct backend_stats st;
	struct udp_backend_xstats xs;
	struct engine_txbuf bufs[4];
	struct mroc_addr lo6;
	uint16_t min, max;

	(void)state;
	pair_open(&a, &b);
	udp_backend_sports(a.be, &min, &max);
	assert_int_equal(min, a.cfg.sport_min);
	assert_int_equal(max, a.cfg.sport_max);

	/* The MetaRoCE port taken. */
	c.cfg = a.cfg;
	assert_int_equal(side_open(&c), -EADDRINUSE);
	assert_null(c.be);
	/*
	 * A source port taken (B's first one, bound once B sent from it, inside
	 * C's range): C starts (its send sockets open as their ports are used)
	 * and sends that port's packets from its ephemeral port.
	 */
	assert_int_equal(send_seqs(&b, handle_of(&b, &a.cfg.local), 0, 1, b.cfg.sport_min, false), 1);
	c.cfg = b.cfg;
	c.cfg.udp_port = (uint16_t)(b.cfg.sport_max + 1);
	c.cfg.sport_min = (uint16_t)(b.cfg.sport_min - 4);
	c.cfg.sport_max = b.cfg.sport_min;
	assert_int_equal(side_open(&c), 0);
	assert_int_equal(send_seqs(&c, handle_of(&c, &a.cfg.local), 0, 1, b.cfg.sport_min, false), 1);
	udp_backend_get_xstats(c.be, &xs);
	assert_int_equal(xs.tx_sport_fallback, 1);
	side_close(&c);

	/* Bad configurations. */
	c.cfg = a.cfg;
	c.cfg.udp_port = (uint16_t)(a.cfg.sport_min + 1);
	assert_int_equal(side_open(&c), -EINVAL);
	c.cfg = a.cfg;
	c.cfg.rx_bufs = 100;
	assert_int_equal(side_open(&c), -EINVAL);
	c.cfg = a.cfg;
	c.cfg.buf_size = 64;
	assert_int_equal(side_open(&c), -EINVAL);
	c.cfg = a.cfg;
	c.cfg.sport_min = (uint16_t)(a.cfg.sport_max + 1);
	assert_int_equal(side_open(&c), -EINVAL);
	side_close(&c);

	/*
	 * Unknown peer, an IPv6 peer from IPv4: dropped, counted.  A source port
	 * outside the range (a reply to a peer with another range) leaves from
	 * the ephemeral port, counted.
	 */
	addr6_lo(&lo6);
	assert_int_equal(a.be->ops->tx_get(a.be, bufs, 4), 4);
	for (int i = 0; i < 4; i++) {
		bufs[i].len = 100;
		bufs[i].sport = a.cfg.sport_min;
		bufs[i].peer = handle_of(&a, &b.cfg.local);
	}
	bufs[0].peer = 999;
	bufs[1].sport = (uint16_t)(a.cfg.sport_max + 1);
	bufs[2].peer = handle_of(&a, &lo6);
	assert_int_equal(a.be->ops->tx_send(a.be, bufs, 3, 4), 1);
	a.be->ops->get_stats(a.be, &st);
	assert_int_equal(st.tx_no_route, 2);
	udp_backend_get_xstats(a.be, &xs);
	assert_int_equal(xs.tx_sport_fallback, 1);

	/* Every send buffer comes back: the free pool is whole again. */
	{
		static struct engine_txbuf all[1024];
		int got = 0, n;

		while (got < 1024 - 64 && (n = a.be->ops->tx_get(a.be, all + got, 64)) > 0)
			got += n;
		assert_int_equal(got, (int)a.cfg.tx_bufs);
		a.be->ops->tx_send(a.be, all, 0, got);
	}

	/* A release of something never received is refused, not taken in. */
	{
		struct backend_pkt bogus = { .cookie = 3 }, huge = { .cookie = 1u << 20 };

		b.be->ops->rx_release(b.be, &bogus, 1);
		b.be->ops->rx_release(b.be, &huge, 1);
	}
	/* Closing frees the ports at once: the same backend opens again. */
	for (int i = 0; i < 20; i++) {
		struct udp_backend_cfg cfg = a.cfg;

		side_close(&a);
		a.cfg = cfg;
		assert_int_equal(side_open(&a), 0);
	}
	side_close(&a);
	side_close(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exchange_v4),
		cmocka_unit_test(test_ecn_sent),
		cmocka_unit_test(test_ecn_received),
		cmocka_unit_test(test_icrc_received),
		cmocka_unit_test(test_many_batches),
		cmocka_unit_test(test_buffer_recycling),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_dual_stack),
		cmocka_unit_test(test_errors),
	};

	port_seed = (unsigned)getpid() ^ (unsigned)time(NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
