// SPDX-License-Identifier: MIT
/*
 * UDP fallback backend (see udp_backend.h).
 *
 * Two io_urings, so that reaping one never has to hold back completions of
 * the other: the receive ring carries a single multishot recvmsg on the
 * receive socket, the send ring one sendmsg per packet.
 *
 * Receive buffer life cycle: in the provided buffer ring (the kernel may
 * fill it), then in a completion, then held by the worker between rx and
 * rx_release, then back in the ring.  The kernel ends the multishot request
 * with -ENOBUFS when the ring runs dry; it is armed again once an eighth of
 * the buffers are back.  Each buffer is laid out as the kernel writes it:
 *
 *   struct io_uring_recvmsg_out | name (RX_NAMELEN) | control (RX_CTLLEN) | payload
 *
 * Send buffer life cycle: on the free stack, handed to the engine by
 * tx_get, in flight after tx_send, back on the stack at its completion.
 * Sends never wait for socket buffer space (see tx_queue), so they complete
 * in order, almost always inside the io_uring_submit of tx_send.
 *
 * io_uring runs the work of a request in the task that submitted it, so the
 * receive is armed by the first rx call (on the worker thread), not here.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/sock_diag.h>
#include <liburing.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mroc_util.h"
#include "frame.h"
#include "log.h"
#include "peers.h"
#include "udp_backend.h"
#include "wire.h"

#define RX_NAMELEN	32	/* sockaddr_in6 (28), rounded so the control data is aligned */
#define RX_CTLLEN	128	/* IP_TOS and/or IPV6_TCLASS, and IP(V6)_PKTINFO (the destination) */
#define RX_HDRLEN	(sizeof(struct io_uring_recvmsg_out) + RX_NAMELEN + RX_CTLLEN)
#define RX_BGID		0
#define RX_RING_SQ	8
#define RX_MAX_FAILS	16	/* receive errors in a row before we stop re-arming */
#define BUF_ALIGN	64
#define MAX_BUF_SIZE	65507	/* largest UDP payload over IPv4 */
#define TX_SOCK_NONE	(-1)	/* not opened yet */
#define TX_SOCK_FAILED	(-2)	/* could not be bound: the ephemeral socket sends */
#define SRC_CACHE	256	/* destinations whose source address we looked up ("aead") */
#define SRC_TTL_NS	1000000000ULL	/* routes change: looked up again after this */

/* user_data of requests that are not a send slot (slots are < tx_bufs <= 2^31). */
#define UD_RX		(1ULL << 32)
#define UD_CANCEL	(2ULL << 32)

union udp_sa {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
};

_Static_assert(sizeof(struct sockaddr_in6) <= RX_NAMELEN, "RX_NAMELEN too small");
_Static_assert(RX_HDRLEN % 16 == 0, "payload of a receive buffer should be aligned");

/* One send buffer's message; the packet bytes live in tx_area. */
struct udp_tx_slot {
	struct msghdr msg;
	struct iovec iov;
	union udp_sa to;
	union {
		char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} ctl;
};

/* A destination's source address, as the kernel's route gives it (tx_src). */
struct udp_src {
	struct mroc_addr dst, src;
	uint64_t until;			/* mono_ns: looked up again after it */
};

struct udp_backend {
	struct backend b;
	int family;			/* of every socket */
	bool dual;			/* an AF_INET6 socket that carries IPv4 too */
	struct mroc_addr local;
	uint16_t udp_port, peer_port, sport_min, sport_max;
	uint8_t dscp;
	uint32_t buf_size;		/* the engine's packet; buffers have the ICRC's room too */

	/* receive */
	struct io_uring rx;
	bool rx_ring_ok, rx_files_ok, rx_br_ok;
	int rx_sock;
	struct io_uring_buf_ring *br;
	size_t br_len;
	uint8_t *rx_area;
	size_t rx_area_len;
	uint32_t rx_stride, rx_bufs;
	uint32_t rx_in_ring;		/* buffers given to the kernel, by our count */
	uint8_t *rx_held;		/* per buffer: 1 while the worker has it */
	struct msghdr rx_msg;		/* name and control sizes for the multishot recvmsg */
	bool rx_armed;
	uint32_t rx_fails;		/* errors in a row */

	/* send */
	struct io_uring tx;
	bool tx_ring_ok;
	int *tx_socks;			/* [sport - sport_min]: TX_SOCK_* until opened */
	uint32_t span;			/* sport_max - sport_min + 1 */
	uint32_t nopen;			/* send sockets opened so far */
	int eph_sock;			/* bound to an ephemeral port, for the rest */
	uint16_t eph_port;		/* its port: the ICRC covers the port on the wire */
	uint8_t *tx_area;
	size_t tx_area_len;
	uint32_t tx_stride, tx_bufs;
	struct udp_tx_slot *slots;
	uint32_t *tx_free;		/* stack of free slots */
	uint32_t tx_nfree, tx_inflight;

	struct udp_src src_cache[SRC_CACHE];

	struct backend_stats st;
	struct udp_backend_xstats xst;
	char desc[128];
};

static struct udp_backend *to_udp(struct backend *b)
{
	return (struct udp_backend *)b;
}

/* ---- addresses ------------------------------------------------------------ */

/* a:port as a destination for our sockets; false when they cannot reach it. */
static bool sa_from_addr(const struct udp_backend *u, const struct mroc_addr *a, uint16_t port,
			 union udp_sa *sa, socklen_t *len)
{
	if (a->family == AF_INET && u->family == AF_INET) {
		sa->sin = (struct sockaddr_in){
			.sin_family = AF_INET,
			.sin_port = htons(port),
			.sin_addr = a->v4,
		};
		*len = sizeof(sa->sin);
		return true;
	}
	if (u->family != AF_INET6 || (a->family == AF_INET && !u->dual) ||
	    (a->family != AF_INET && a->family != AF_INET6))
		return false;
	sa->sin6 = (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = htons(port) };
	if (a->family == AF_INET6) {
		sa->sin6.sin6_addr = a->v6;
	} else {			/* IPv4-mapped, ::ffff:a.b.c.d */
		sa->sin6.sin6_addr.s6_addr[10] = 0xff;
		sa->sin6.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&sa->sin6.sin6_addr.s6_addr[12], &a->v4, 4);
	}
	*len = sizeof(sa->sin6);
	return true;
}

/* A received source address; IPv4-mapped IPv6 comes back as IPv4. */
static bool sa_to_addr(const void *name, uint32_t len, struct mroc_addr *a, uint16_t *port)
{
	union udp_sa sa;

	memset(&sa, 0, sizeof(sa));
	memcpy(&sa, name, len < sizeof(sa) ? len : sizeof(sa));
	memset(a, 0, sizeof(*a));
	if (sa.sa.sa_family == AF_INET && len >= sizeof(sa.sin)) {
		a->family = AF_INET;
		a->v4 = sa.sin.sin_addr;
		*port = ntohs(sa.sin.sin_port);
		return true;
	}
	if (sa.sa.sa_family != AF_INET6 || len < sizeof(sa.sin6))
		return false;
	if (IN6_IS_ADDR_V4MAPPED(&sa.sin6.sin6_addr)) {
		a->family = AF_INET;
		memcpy(&a->v4, &sa.sin6.sin6_addr.s6_addr[12], 4);
	} else {
		a->family = AF_INET6;
		a->v6 = sa.sin6.sin6_addr;
	}
	*port = ntohs(sa.sin6.sin6_port);
	return true;
}

/* ---- receive -------------------------------------------------------------- */

static uint8_t *rx_buf(const struct udp_backend *u, uint32_t bid)
{
	return u->rx_area + (size_t)bid * u->rx_stride;
}

/* Give buffer bid back to the kernel (the ring's tail moves at rx_give_commit). */
static void rx_give(struct udp_backend *u, uint32_t bid, int offset)
{
	io_uring_buf_ring_add(u->br, rx_buf(u, bid), u->rx_stride, (unsigned short)bid,
			      io_uring_buf_ring_mask(u->rx_bufs), offset);
}

static void rx_give_commit(struct udp_backend *u, uint32_t n)
{
	/* Release store: the kernel sees the entries before the new tail. */
	io_uring_buf_ring_advance(u->br, (int)n);
	u->rx_in_ring += n;
}

static int rx_arm(struct udp_backend *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->rx);
	int ret;

	if (!sqe)
		return -EBUSY;
	/* Fixed file 0 is the receive socket. */
	io_uring_prep_recvmsg_multishot(sqe, 0, &u->rx_msg, 0);
	sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
	sqe->buf_group = RX_BGID;
	io_uring_sqe_set_data64(sqe, UD_RX);
	ret = io_uring_submit(&u->rx);
	if (ret < 0) {
		pr_err_rl("udp: arming the receive: %s", strerror(-ret));
		return ret;
	}
	u->rx_armed = true;
	u->xst.rx_arms++;
	return 0;
}

/* Arm the receive if it is not, once enough buffers are in the ring. */
static void rx_rearm(struct udp_backend *u)
{
	uint32_t want = u->rx_bufs / 8 ? u->rx_bufs / 8 : 1;

	if (u->rx_armed || u->rx_in_ring < want || u->rx_fails >= RX_MAX_FAILS)
		return;
	rx_arm(u);
}

/*
 * The control messages: ECN CE from IP_TOS or IPV6_TCLASS, and the address
 * the packet was sent to from IP_PKTINFO or IPV6_PKTINFO (IPv4-mapped: IPv4,
 * as sa_to_addr gives the source).
 */
static void rx_cmsgs(struct io_uring_recvmsg_out *o, struct msghdr *mh, struct backend_pkt *pkt,
		     bool *group)
{
	*group = false;
	pkt->ce = false;
	memset(&pkt->dst, 0, sizeof(pkt->dst));
	for (struct cmsghdr *c = io_uring_recvmsg_cmsg_firsthdr(o, mh); c;
	     c = io_uring_recvmsg_cmsg_nexthdr(o, mh, c)) {
		struct in6_pktinfo i6;
		struct in_pktinfo i4;
		int tclass = 0;
		uint8_t tos;

		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS &&
		    c->cmsg_len >= CMSG_LEN(1)) {
			memcpy(&tos, CMSG_DATA(c), 1);
			pkt->ce = (tos & 3) == FRAME_ECN_CE;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS &&
			   c->cmsg_len >= CMSG_LEN(sizeof(int))) {
			memcpy(&tclass, CMSG_DATA(c), sizeof(tclass));
			pkt->ce = (tclass & 3) == FRAME_ECN_CE;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
			   c->cmsg_len >= CMSG_LEN(sizeof(i4))) {
			memcpy(&i4, CMSG_DATA(c), sizeof(i4));
			pkt->dst.family = AF_INET;
			pkt->dst.v4 = i4.ipi_addr;
			/*
			 * The kernel's local address for the packet differs from
			 * its destination only for a broadcast or a group
			 * (fib_compute_spec_dst): a subnet's broadcast address
			 * looks unicast on its own.
			 */
			*group = i4.ipi_spec_dst.s_addr != i4.ipi_addr.s_addr;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO &&
			   c->cmsg_len >= CMSG_LEN(sizeof(i6))) {
			memcpy(&i6, CMSG_DATA(c), sizeof(i6));
			if (IN6_IS_ADDR_V4MAPPED(&i6.ipi6_addr)) {
				pkt->dst.family = AF_INET;
				memcpy(&pkt->dst.v4, &i6.ipi6_addr.s6_addr[12], 4);
			} else {
				pkt->dst.family = AF_INET6;
				pkt->dst.v6 = i6.ipi6_addr;
			}
		}
	}
}

/* One completion of the receive ring; true when it filled *pkt. */
static bool rx_cqe(struct udp_backend *u, const struct io_uring_cqe *cqe, struct backend_pkt *pkt)
{
	struct io_uring_recvmsg_out *o;
	uint32_t bid;
	uint8_t *buf;
	bool group;
	int len;

	if (cqe->user_data != UD_RX)
		return false;
	if (!(cqe->flags & IORING_CQE_F_MORE))
		u->rx_armed = false;
	if (cqe->res < 0) {
		if (cqe->res == -ENOBUFS) {
			u->xst.rx_no_bufs++;
		} else if (cqe->res != -ECANCELED) {
			pr_err_rl("udp: receive: %s", strerror(-cqe->res));
			if (++u->rx_fails == RX_MAX_FAILS)
				pr_err("udp: %d receive errors in a row: receiving stops", RX_MAX_FAILS);
		}
		return false;
	}
	if (!(cqe->flags & IORING_CQE_F_BUFFER))
		return false;
	bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
	if (bid >= u->rx_bufs)
		return false;
	u->rx_in_ring--;
	u->rx_fails = 0;
	buf = rx_buf(u, bid);
	o = io_uring_recvmsg_validate(buf, cqe->res, &u->rx_msg);
	if (!o || (o->flags & MSG_TRUNC) || o->namelen > RX_NAMELEN ||
	    !sa_to_addr(io_uring_recvmsg_name(o), o->namelen, &pkt->src, &pkt->sport)) {
		u->st.rx_bad_frame++;
		rx_give(u, bid, 0);
		rx_give_commit(u, 1);
		return false;
	}
	pkt->data = io_uring_recvmsg_payload(o, &u->rx_msg);
	pkt->len = io_uring_recvmsg_payload_length(o, cqe->res, &u->rx_msg);
	/*
	 * The ICRC of an AF_XDP peer (its UDP checksum is 0 over IPv4, so the
	 * kernel checked nothing).  Without one, the kernel checked the UDP
	 * checksum if the sender set one.
	 */
	len = frame_icrc_open(io_uring_recvmsg_payload(o, &u->rx_msg), pkt->len, pkt->sport,
			      u->udp_port);
	if (len < 0) {
		u->st.rx_bad_icrc++;
		rx_give(u, bid, 0);
		rx_give_commit(u, 1);
		return false;
	}
	u->st.rx_bytes += pkt->len;		/* as on the wire, as tx_bytes */
	if (len)
		pkt->len = (uint32_t)len;
	rx_cmsgs(o, &u->rx_msg, pkt, &group);
	/*
	 * Only packets to one of our unicast addresses (docs/PROTOCOL.md 11a):
	 * a socket bound to the wildcard address also gets broadcasts and
	 * packets to groups the host is in, and a REQ from a spoofed source
	 * sent there made every mrocd of the segment answer that source (as
	 * the XDP program's drop_not_our_addr, before any lookup or state).
	 */
	if (group || addr_group(&pkt->dst)) {
		u->st.rx_not_unicast++;
		rx_give(u, bid, 0);
		rx_give_commit(u, 1);
		return false;
	}
	pkt->cookie = bid;
	u->rx_held[bid] = 1;
	u->st.rx_pkts++;
	return true;
}

/* ---- send ------------------------------------------------------------------- */

static uint8_t *tx_buf(const struct udp_backend *u, uint32_t slot)
{
	return u->tx_area + (size_t)slot * u->tx_stride;
}

/* The slot of a buffer from tx_get, or -1. */
static int64_t tx_slot_of(const struct udp_backend *u, const struct engine_txbuf *tb)
{
	uintptr_t off = (uintptr_t)tb->data - (uintptr_t)u->tx_area;

	if ((uintptr_t)tb->data < (uintptr_t)u->tx_area || off >= u->tx_area_len ||
	    off % u->tx_stride)
		return -1;
	return (int64_t)(off / u->tx_stride);
}

static void tx_reap(struct udp_backend *u)
{
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;

	io_uring_for_each_cqe(&u->tx, head, cqe) {
		uint64_t slot = cqe->user_data;

		seen++;
		if (slot >= u->tx_bufs)
			continue;	/* a cancel */
		if (cqe->res >= 0) {
			u->st.tx_pkts++;
			u->st.tx_bytes += (uint64_t)cqe->res;
		} else if (cqe->res == -EAGAIN || cqe->res == -ENOBUFS) {
			u->st.tx_ring_full++;	/* socket buffer full: dropped */
		} else {
			u->xst.tx_errors++;
			u->st.tx_no_route++;
			if (cqe->res != -ECANCELED)
				pr_warn_rl("udp: send: %s", strerror(-cqe->res));
		}
		u->tx_inflight--;
		u->tx_free[u->tx_nfree++] = (uint32_t)slot;
	}
	if (seen)
		io_uring_cq_advance(&u->tx, seen);
}

static int sock_open(struct udp_backend *u, uint16_t port, bool rx, uint32_t rcvbuf);
static void sock_opt(int fd, int level, int name, int val, const char *what);

/*
 * The send socket of sport, opened the first time the port is used: the
 * shipped range 49152-65535 would be 16384 sockets at start, most never
 * used.  A port outside the range (a reply echoes the peer's source port,
 * which comes from the peer's range) or one that cannot be bound (another
 * program has it, no fds left) is sent from the ephemeral socket, counted.
 */
static int tx_sock(struct udp_backend *u, uint16_t sport)
{
	int *fd;

	if (sport < u->sport_min || sport > u->sport_max) {
		u->xst.tx_sport_fallback++;
		return u->eph_sock;
	}
	fd = &u->tx_socks[sport - u->sport_min];
	if (*fd == TX_SOCK_NONE) {
		int s = sock_open(u, sport, false, 0);

		if (s < 0) {
			pr_warn_rl("udp: source port %u: %s; its packets leave from an "
				   "ephemeral port", sport, strerror(-s));
			*fd = TX_SOCK_FAILED;
		} else {
			*fd = s;
			u->nopen++;
		}
	}
	if (*fd < 0) {
		u->xst.tx_sport_fallback++;
		return u->eph_sock;
	}
	return *fd;
}

/*
 * The source address a packet to dst (as to) leaves with: the bound one, or
 * the one the kernel's route to dst gives (looked up once a second per
 * destination, then set on each packet with IP(V6)_PKTINFO, so it is the
 * one sealed).  false when there is none.
 */
static bool tx_src(struct udp_backend *u, const struct mroc_addr *dst, const union udp_sa *to,
		   socklen_t tolen, struct mroc_addr *src)
{
	struct udp_src *c = &u->src_cache[addr_hash(dst) % SRC_CACHE];
	uint64_t now = mono_ns();
	union udp_sa sa;
	socklen_t len = sizeof(sa);
	uint16_t port;
	int fd, ok;

	if (u->local.family) {
		*src = u->local;
		return true;
	}
	if (c->until > now && addr_eq(&c->dst, dst)) {
		*src = c->src;
		return true;
	}
	/* A connected UDP socket is a route lookup: nothing is sent. */
	fd = socket(u->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	if (u->dual)
		sock_opt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 0, "IPV6_V6ONLY");
	ok = !connect(fd, &to->sa, tolen) && !getsockname(fd, &sa.sa, &len) &&
	     sa_to_addr(&sa, len, src, &port) && src->family == dst->family;
	close(fd);
	if (!ok)
		return false;
	*c = (struct udp_src){ .dst = *dst, .src = *src, .until = now + SRC_TTL_NS };
	return true;
}

/* Sent from src (IP_PKTINFO, IPV6_PKTINFO: the address the seal covers) after cmsg c. */
static void tx_pktinfo(struct udp_tx_slot *s, struct cmsghdr *c, const struct mroc_addr *src)
{
	c = (struct cmsghdr *)((char *)c + CMSG_SPACE(sizeof(int)));
	if (src->family == AF_INET) {
		struct in_pktinfo i4 = { .ipi_spec_dst = src->v4 };

		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(i4));
		memcpy(CMSG_DATA(c), &i4, sizeof(i4));
		s->msg.msg_controllen += CMSG_SPACE(sizeof(i4));
	} else {
		struct in6_pktinfo i6 = { .ipi6_addr = src->v6 };

		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(i6));
		memcpy(CMSG_DATA(c), &i6, sizeof(i6));
		s->msg.msg_controllen += CMSG_SPACE(sizeof(i6));
	}
}

/* Queue one packet; false when it was dropped (its slot is still ours). */
static bool tx_queue(struct udp_backend *u, struct engine_txbuf *tb, uint32_t slot)
{
	struct udp_tx_slot *s = &u->slots[slot];
	struct peer *p = peers_get(u->b.peers, tb->peer);
	struct io_uring_sqe *sqe;
	struct mroc_addr src;
	struct cmsghdr *c;
	int tos, fd;

	if (!p || !sa_from_addr(u, &p->addr, u->peer_port, &s->to, &s->msg.msg_namelen)) {
		u->st.tx_no_route++;
		return false;
	}
	if (tb->len > u->buf_size || tb->len < MROC_HDR_LEN) {
		pr_err_rl("udp: packet of %u bytes (%u..%u)", tb->len, MROC_HDR_LEN, u->buf_size);
		u->st.tx_no_route++;
		return false;
	}
	/* "aead": sealed for its addresses, which must then be the ones it leaves with. */
	if (u->b.seal) {
		if (!tx_src(u, &p->addr, &s->to, s->msg.msg_namelen, &src)) {
			u->st.tx_no_route++;
			return false;
		}
		backend_seal(&u->b, tb, &src, &p->addr);
	}
	sqe = io_uring_get_sqe(&u->tx);
	if (!sqe) {			/* more packets than the submission queue holds */
		io_uring_submit(&u->tx);
		sqe = io_uring_get_sqe(&u->tx);
		if (!sqe) {
			u->st.tx_ring_full++;
			return false;
		}
	}
	/*
	 * tb->len fits buf_size (checked above); the buffer has the ICRC's room
	 * after it.  The ICRC covers the source port the packet really leaves from.
	 */
	fd = tx_sock(u, tb->sport);
	s->iov.iov_len = (size_t)frame_icrc_seal(tb->data, tb->len,
						 fd == u->eph_sock ? u->eph_port : tb->sport, u->peer_port);
	/* IPv4 (or IPv4-mapped) destinations take IP_TOS, IPv6 ones IPV6_TCLASS. */
	tos = u->dscp << 2 | (tb->ect ? FRAME_ECN_ECT0 : FRAME_ECN_NOT_ECT);
	c = CMSG_FIRSTHDR(&s->msg);
	c->cmsg_len = CMSG_LEN(sizeof(int));
	if (s->to.sa.sa_family == AF_INET || IN6_IS_ADDR_V4MAPPED(&s->to.sin6.sin6_addr)) {
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_TOS;
	} else {
		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_TCLASS;
	}
	memcpy(CMSG_DATA(c), &tos, sizeof(tos));
	s->msg.msg_controllen = CMSG_SPACE(sizeof(int));
	if (u->b.seal && !u->local.family)
		tx_pktinfo(s, c, &src);
	/*
	 * MSG_DONTWAIT: when the socket's buffer is full the packet is dropped
	 * (-EAGAIN) instead of waiting in io_uring, where a later packet of the
	 * path could overtake it.  Plain fds, not registered files: the sockets
	 * come and go with the ports in use, and fget per send costs little
	 * next to the send.
	 */
	io_uring_prep_sendmsg(sqe, fd, &s->msg, MSG_DONTWAIT);
	io_uring_sqe_set_data64(sqe, slot);
	u->tx_inflight++;
	return true;
}

/* ---- backend ops ------------------------------------------------------------ */

static int udp_rx(struct backend *b, struct backend_pkt *pkts, int n)
{
	struct udp_backend *u = to_udp(b);
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;
	int got = 0;

	tx_reap(u);			/* keeps the send ring's fd from staying readable */
	rx_rearm(u);
	io_uring_for_each_cqe(&u->rx, head, cqe) {
		if (got == n)
			break;
		seen++;
		if (rx_cqe(u, cqe, &pkts[got]))
			got++;
	}
	if (seen)
		io_uring_cq_advance(&u->rx, seen);
	rx_rearm(u);
	return got;
}

static void udp_rx_release(struct backend *b, struct backend_pkt *pkts, int n)
{
	struct udp_backend *u = to_udp(b);
	uint32_t given = 0;

	for (int i = 0; i < n; i++) {
		uint64_t bid = pkts[i].cookie;

		if (bid >= u->rx_bufs || !u->rx_held[bid]) {
			pr_err_rl("udp: rx_release of buffer %llu that is not held",
				  (unsigned long long)bid);
			continue;
		}
		u->rx_held[bid] = 0;
		rx_give(u, (uint32_t)bid, (int)given++);
	}
	rx_give_commit(u, given);
	rx_rearm(u);
}

static int udp_tx_get(struct backend *b, struct engine_txbuf *bufs, int n)
{
	struct udp_backend *u = to_udp(b);
	int i;

	if ((uint32_t)n > u->tx_nfree)
		tx_reap(u);
	for (i = 0; i < n && u->tx_nfree; i++) {
		uint32_t slot = u->tx_free[--u->tx_nfree];

		bufs[i] = (struct engine_txbuf){ .data = tx_buf(u, slot), .cap = u->buf_size };
	}
	if (i < n)
		u->st.tx_ring_full++;
	return i;
}

static int udp_tx_send(struct backend *b, struct engine_txbuf *bufs, int used, int got)
{
	struct udp_backend *u = to_udp(b);
	int sent = 0, ret;

	for (int i = 0; i < got; i++) {
		int64_t slot = tx_slot_of(u, &bufs[i]);

		if (slot < 0) {
			pr_err_rl("udp: tx_send of a buffer that is not ours");
			continue;
		}
		if (i < used && tx_queue(u, &bufs[i], (uint32_t)slot))
			sent++;
		else
			u->tx_free[u->tx_nfree++] = (uint32_t)slot;
	}
	if (io_uring_sq_ready(&u->tx)) {
		ret = io_uring_submit(&u->tx);
		/* On -EBUSY/-EAGAIN the entries stay queued for the next submit. */
		if (ret < 0 && ret != -EBUSY && ret != -EAGAIN)
			pr_err_rl("udp: submitting sends: %s", strerror(-ret));
	}
	tx_reap(u);			/* sends usually complete inline */
	return sent;
}

static int udp_poll_fds(struct backend *b, int *fds, int max)
{
	struct udp_backend *u = to_udp(b);
	int n = 0;

	/* Readable while completions wait: received packets, late sends. */
	if (n < max)
		fds[n++] = u->rx.ring_fd;
	if (n < max)
		fds[n++] = u->tx.ring_fd;
	return n;
}

static void udp_get_stats(struct backend *b, struct backend_stats *out)
{
	*out = to_udp(b)->st;
}

void udp_backend_get_xstats(struct backend *b, struct udp_backend_xstats *out)
{
	struct udp_backend *u = to_udp(b);
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);

	if (u->rx_sock >= 0 && !getsockopt(u->rx_sock, SOL_SOCKET, SO_MEMINFO, mi, &len) &&
	    len > SK_MEMINFO_DROPS * sizeof(mi[0]))
		u->xst.rx_sock_drops = mi[SK_MEMINFO_DROPS];
	*out = u->xst;
}

void udp_backend_sports(const struct backend *b, uint16_t *min, uint16_t *max)
{
	const struct udp_backend *u = (const struct udp_backend *)b;

	*min = u->sport_min;
	*max = u->sport_max;
}

static const char *udp_describe(struct backend *b)
{
	return to_udp(b)->desc;
}

/* Cancel everything in flight and wait (bounded) until the kernel lets go of our buffers. */
static void udp_quiesce(struct udp_backend *u)
{
	struct io_uring *rings[2] = { u->rx_ring_ok ? &u->rx : NULL, u->tx_ring_ok ? &u->tx : NULL };

	for (int r = 0; r < 2; r++) {
		struct io_uring_sqe *sqe = rings[r] ? io_uring_get_sqe(rings[r]) : NULL;

		if (!sqe)
			continue;
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data64(sqe, UD_CANCEL);
		io_uring_submit(rings[r]);
	}
	for (int tries = 0; tries < 100 && (u->rx_armed || u->tx_inflight); tries++) {
		struct __kernel_timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;

		if (u->rx_armed) {
			io_uring_wait_cqe_timeout(&u->rx, &cqe, &ts);
			io_uring_for_each_cqe(&u->rx, head, cqe) {
				seen++;
				if (cqe->user_data == UD_RX && !(cqe->flags & IORING_CQE_F_MORE))
					u->rx_armed = false;
			}
			io_uring_cq_advance(&u->rx, seen);
		} else {
			io_uring_wait_cqe_timeout(&u->tx, &cqe, &ts);
		}
		tx_reap(u);
	}
	if (u->rx_armed || u->tx_inflight)
		pr_warn("udp: requests still in flight at close (receive %d, sends %u)",
			u->rx_armed, u->tx_inflight);
}

static void udp_destroy(struct backend *b)
{
	struct udp_backend *u = to_udp(b);

	if (!u)
		return;
	udp_quiesce(u);
	/*
	 * A ring is torn down asynchronously after close, with its registered
	 * files: unregister them first so the ports are free on return.
	 */
	if (u->rx_br_ok)
		io_uring_unregister_buf_ring(&u->rx, RX_BGID);
	if (u->rx_files_ok)
		io_uring_unregister_files(&u->rx);
	if (u->rx_ring_ok)
		io_uring_queue_exit(&u->rx);
	if (u->tx_ring_ok)
		io_uring_queue_exit(&u->tx);
	if (u->rx_sock >= 0)
		close(u->rx_sock);
	for (uint32_t i = 0; u->tx_socks && i < u->span; i++)
		if (u->tx_socks[i] >= 0)
			close(u->tx_socks[i]);
	if (u->eph_sock >= 0)
		close(u->eph_sock);
	if (u->br)
		munmap(u->br, u->br_len);
	if (u->rx_area)
		munmap(u->rx_area, u->rx_area_len);
	if (u->tx_area)
		munmap(u->tx_area, u->tx_area_len);
	free(u->tx_socks);
	free(u->slots);
	free(u->tx_free);
	free(u->rx_held);
	free(u);
}

static const struct backend_ops udp_ops = {
	.name = "udp",
	.rx = udp_rx,
	.rx_release = udp_rx_release,
	.tx_get = udp_tx_get,
	.tx_send = udp_tx_send,
	.poll_fds = udp_poll_fds,
	.get_stats = udp_get_stats,
	.describe = udp_describe,
	.destroy = udp_destroy,
};

/* ---- set-up ----------------------------------------------------------------- */

void udp_backend_cfg_default(struct udp_backend_cfg *cfg)
{
	*cfg = (struct udp_backend_cfg){
		.udp_port = MROC_UDP_PORT,
		.sport_min = 49152,
		.sport_max = 65535,
		.sq_entries = 256,
		.rx_bufs = 1024,
		.tx_bufs = 512,
		.buf_size = 2048,
		.rcvbuf = 4 << 20,
	};
}

static int cfg_check(const struct udp_backend_cfg *c)
{
	const char *why = NULL;

	if (c->local.family && c->local.family != AF_INET && c->local.family != AF_INET6)
		why = "local address family";
	else if (!c->udp_port || !c->sport_min || c->sport_min > c->sport_max)
		why = "need udp_port > 0 and 0 < sport_min <= sport_max";
	else if (c->udp_port >= c->sport_min && c->udp_port <= c->sport_max)
		why = "udp_port inside the source-port range";
	else if (!c->rx_bufs || c->rx_bufs > UDP_BACKEND_MAX_RX_BUFS ||
		 (c->rx_bufs & (c->rx_bufs - 1)))
		why = "rx_bufs must be a power of two up to 32768";
	else if (!c->tx_bufs || c->tx_bufs > (1u << 20) || !c->sq_entries ||
		 c->sq_entries > 32768)
		why = "tx_bufs or sq_entries out of range";
	else if (c->buf_size < 64 + MROC_DATA_OVERHEAD || c->buf_size > MAX_BUF_SIZE)
		why = "buf_size out of range";
	else if (c->dscp > 63)
		why = "dscp above 63";
	if (why)
		pr_err("udp: bad configuration: %s", why);
	return why ? -EINVAL : 0;
}

static void sock_opt(int fd, int level, int name, int val, const char *what)
{
	if (setsockopt(fd, level, name, &val, sizeof(val)))
		pr_warn("udp: %s: %s", what, strerror(errno));
}

/* A socket of our family bound to local:port (0: ephemeral); returns the fd or -errno. */
static int sock_open(struct udp_backend *u, uint16_t port, bool rx, uint32_t rcvbuf)
{
	union udp_sa sa;
	socklen_t len;
	int fd, err;

	fd = socket(u->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	if (u->family == AF_INET6) {
		sock_opt(fd, IPPROTO_IPV6, IPV6_V6ONLY, !u->dual, "IPV6_V6ONLY");
		sa.sin6.sin6_family = AF_INET6;
		sa.sin6.sin6_port = htons(port);
		if (u->local.family)
			sa.sin6.sin6_addr = u->local.v6;
		len = sizeof(sa.sin6);
	} else {
		sa.sin.sin_family = AF_INET;
		sa.sin.sin_port = htons(port);
		if (u->local.family)
			sa.sin.sin_addr = u->local.v4;
		len = sizeof(sa.sin);
	}
	if (rx) {
		/* The ECN bits of every packet come with it, for CE. */
		if (u->family == AF_INET || u->dual)
			sock_opt(fd, IPPROTO_IP, IP_RECVTOS, 1, "IP_RECVTOS");
		if (u->family == AF_INET6)
			sock_opt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1, "IPV6_RECVTCLASS");
		/*
		 * The address each packet was sent to: "aead" opens with it.
		 * IPv4 packets on a dual-stack socket get IP_PKTINFO too: its
		 * local address tells a subnet broadcast apart (rx_cmsgs).
		 */
		if (u->family == AF_INET || u->dual)
			sock_opt(fd, IPPROTO_IP, IP_PKTINFO, 1, "IP_PKTINFO");
		if (u->family == AF_INET6)
			sock_opt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1, "IPV6_RECVPKTINFO");
		if (rcvbuf && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
			sock_opt(fd, SOL_SOCKET, SO_RCVBUF, (int)rcvbuf, "SO_RCVBUF");
	} else {
		/* Send sockets receive nothing: packets to their ports are dropped at once. */
		struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
		struct sock_fprog prog = { .len = 1, .filter = &drop };

		if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)))
			pr_debug("udp: SO_ATTACH_FILTER: %s", strerror(errno));
	}
	if (bind(fd, &sa.sa, len)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int bind_err(const struct udp_backend *u, uint16_t port, int err)
{
	char a[MROC_ADDR_STRLEN];

	pr_err("udp: binding %s port %u: %s",
	       u->local.family ? addr_str(&u->local, a, sizeof(a)) : "any address", port,
	       strerror(-err));
	return err;
}

/*
 * Send sockets open as their ports are used, up to one per port of the
 * range: let the process have that many fds if its hard limit allows.
 */
static void fd_limit(uint32_t span)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)span + 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pr_warn("udp: raising the open-file limit to %llu: %s",
			(unsigned long long)rl.rlim_cur, strerror(errno));
}

static int sockets_open(struct udp_backend *u, const struct udp_backend_cfg *cfg)
{
	int fd;

	u->family = cfg->local.family ? cfg->local.family : AF_INET6;
	u->dual = !cfg->local.family;
	fd = sock_open(u, cfg->udp_port, true, cfg->rcvbuf);
	if (fd == -EAFNOSUPPORT && u->dual) {
		pr_info("udp: no IPv6 here, IPv4 only");
		u->family = AF_INET;
		u->dual = false;
		fd = sock_open(u, cfg->udp_port, true, cfg->rcvbuf);
	}
	if (fd < 0)
		return bind_err(u, cfg->udp_port, fd);
	u->rx_sock = fd;
	fd = sock_open(u, 0, false, 0);
	if (fd < 0)
		return bind_err(u, 0, fd);
	u->eph_sock = fd;
	{
		union udp_sa sa;
		socklen_t len = sizeof(sa);

		if (getsockname(fd, &sa.sa, &len))
			return -errno;
		u->eph_port = ntohs(sa.sa.sa_family == AF_INET ? sa.sin.sin_port : sa.sin6.sin6_port);
	}
	u->span = cfg->sport_max - cfg->sport_min + 1u;
	u->tx_socks = malloc(u->span * sizeof(*u->tx_socks));
	if (!u->tx_socks)
		return -ENOMEM;
	for (uint32_t i = 0; i < u->span; i++)
		u->tx_socks[i] = TX_SOCK_NONE;
	fd_limit(u->span);
	return 0;
}

static void *map_area(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int rx_setup(struct udp_backend *u)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_CQSIZE,
		/* Every completion holds a buffer (or ends the request): it never overflows. */
		.cq_entries = pow2_up(u->rx_bufs + RX_RING_SQ),
	};
	struct io_uring_buf_reg reg = { .ring_entries = u->rx_bufs, .bgid = RX_BGID };
	int err;

	u->rx_stride = align_up((uint32_t)RX_HDRLEN + u->buf_size + FRAME_ICRC_LEN, BUF_ALIGN);
	u->rx_area_len = (size_t)u->rx_bufs * u->rx_stride;
	u->br_len = align_up(u->rx_bufs * (uint32_t)sizeof(struct io_uring_buf),
			     (uint32_t)sysconf(_SC_PAGESIZE));
	u->rx_area = map_area(u->rx_area_len);
	u->br = map_area(u->br_len);
	u->rx_held = calloc(u->rx_bufs, 1);
	if (!u->rx_area || !u->br || !u->rx_held)
		return -ENOMEM;
	err = io_uring_queue_init_params(RX_RING_SQ, &u->rx, &p);
	if (err) {
		pr_err("udp: receive io_uring: %s", strerror(-err));
		return err;
	}
	u->rx_ring_ok = true;
	err = io_uring_register_files(&u->rx, &u->rx_sock, 1);
	if (err) {
		pr_err("udp: registering the receive socket: %s", strerror(-err));
		return err;
	}
	u->rx_files_ok = true;
	/* liburing 2.3 has no io_uring_setup_buf_ring(): the ring is our page-aligned memory. */
	io_uring_buf_ring_init(u->br);
	reg.ring_addr = (uint64_t)(uintptr_t)u->br;
	err = io_uring_register_buf_ring(&u->rx, &reg, 0);
	if (err) {
		pr_err("udp: registering %u receive buffers: %s", u->rx_bufs, strerror(-err));
		return err;
	}
	u->rx_br_ok = true;
	for (uint32_t i = 0; i < u->rx_bufs; i++)
		rx_give(u, i, (int)i);
	rx_give_commit(u, u->rx_bufs);
	u->rx_msg.msg_namelen = RX_NAMELEN;
	u->rx_msg.msg_controllen = RX_CTLLEN;
	return 0;
}

static int tx_setup(struct udp_backend *u, uint32_t sq_entries)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL,
		/* Room for every send slot and a cancel: it never overflows. */
		.cq_entries = pow2_up(u->tx_bufs > sq_entries ? u->tx_bufs + 1 : sq_entries + 1),
	};
	int err;

	u->tx_stride = align_up(u->buf_size + FRAME_ICRC_LEN, BUF_ALIGN);
	u->tx_area_len = (size_t)u->tx_bufs * u->tx_stride;
	u->tx_area = map_area(u->tx_area_len);
	u->slots = calloc(u->tx_bufs, sizeof(*u->slots));
	u->tx_free = calloc(u->tx_bufs, sizeof(*u->tx_free));
	if (!u->tx_area || !u->slots || !u->tx_free)
		return -ENOMEM;
	err = io_uring_queue_init_params(sq_entries, &u->tx, &p);
	if (err) {
		pr_err("udp: send io_uring: %s", strerror(-err));
		return err;
	}
	u->tx_ring_ok = true;
	for (uint32_t i = 0; i < u->tx_bufs; i++) {
		struct udp_tx_slot *s = &u->slots[i];

		s->iov.iov_base = tx_buf(u, i);
		s->msg.msg_name = &s->to;
		s->msg.msg_iov = &s->iov;
		s->msg.msg_iovlen = 1;
		s->msg.msg_control = s->ctl.buf;
		s->msg.msg_controllen = sizeof(s->ctl.buf);
		u->tx_free[u->tx_nfree++] = u->tx_bufs - 1 - i;
	}
	return 0;
}

static void describe_init(struct udp_backend *u)
{
	char a[MROC_ADDR_STRLEN], host[MROC_ADDR_STRLEN + 2], peer[24] = "";

	if (!u->local.family)
		snprintf(host, sizeof(host), u->dual ? "*" : "0.0.0.0");
	else if (u->family == AF_INET6)
		snprintf(host, sizeof(host), "[%s]", addr_str(&u->local, a, sizeof(a)));
	else
		snprintf(host, sizeof(host), "%s", addr_str(&u->local, a, sizeof(a)));
	if (u->peer_port != u->udp_port)
		snprintf(peer, sizeof(peer), " peer port %u", u->peer_port);
	snprintf(u->desc, sizeof(u->desc), "udp %s:%u sports %u-%u%s", host, u->udp_port,
		 u->sport_min, u->sport_max, peer);
}

int udp_backend_create(const struct udp_backend_cfg *cfg, struct peers *peers,
		       struct backend **out)
{
	struct udp_backend *u;
	int err;

	err = cfg_check(cfg);
	if (err)
		return err;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->b.ops = &udp_ops;
	u->b.peers = peers;
	u->rx_sock = -1;
	u->eph_sock = -1;
	u->local = cfg->local;
	u->udp_port = cfg->udp_port;
	u->peer_port = cfg->peer_port ? cfg->peer_port : cfg->udp_port;
	u->sport_min = cfg->sport_min;
	u->sport_max = cfg->sport_max;
	u->dscp = cfg->dscp;
	u->buf_size = cfg->buf_size;
	u->rx_bufs = cfg->rx_bufs;
	u->tx_bufs = cfg->tx_bufs;
	err = sockets_open(u, cfg);
	if (!err)
		err = rx_setup(u);
	if (!err)
		err = tx_setup(u, cfg->sq_entries);
	if (err) {
		udp_destroy(&u->b);
		return err;
	}
	describe_init(u);
	*out = &u->b;
	return 0;
}
