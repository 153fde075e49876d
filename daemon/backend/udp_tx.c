// SPDX-License-Identifier: MIT
/*
 * UDP backend: send (udp_state.h).
 *
 * Send buffer life cycle: on the free stack, handed to the engine by
 * tx_get, in flight after tx_send, back on the stack at its completion.
 * Sends never wait for socket buffer space (see tx_queue), so they complete
 * in order, almost always inside the io_uring_submit of tx_send.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mroc_util.h"
#include "frame.h"
#include "log.h"
#include "peers.h"
#include "udp_state.h"
#include "wire.h"

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

void udp_tx_reap(struct udp_backend *u)
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
		int s = udp_sock_open(u, sport, false, 0);

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
		udp_sock_opt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 0, "IPV6_V6ONLY");
	ok = !connect(fd, &to->sa, tolen) && !getsockname(fd, &sa.sa, &len) &&
	     udp_sa_to_addr(&sa, len, src, &port) && src->family == dst->family;
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

/* The IP_TOS or IPV6_TCLASS of a packet to s->to, as the first control message. */
static struct cmsghdr *tx_tos(struct udp_backend *u, struct udp_tx_slot *s, bool ect)
{
	struct cmsghdr *c = CMSG_FIRSTHDR(&s->msg);
	int tos = u->dscp << 2 | (ect ? FRAME_ECN_ECT0 : FRAME_ECN_NOT_ECT);

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
	return c;
}

/* Queue one packet; false when it was dropped (its slot is still ours). */
static bool tx_queue(struct udp_backend *u, struct engine_txbuf *tb, uint32_t slot)
{
	struct udp_tx_slot *s = &u->slots[slot];
	struct peer *p = peers_get(u->b.peers, tb->peer);
	struct io_uring_sqe *sqe;
	struct mroc_addr src;
	struct cmsghdr *c;
	int fd;

	if (!p || !udp_sa_from_addr(u, &p->addr, u->peer_port, &s->to, &s->msg.msg_namelen)) {
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
	c = tx_tos(u, s, tb->ect);
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

/*
 * backend.reply: to pkt's source and its path's source port (as an answer
 * on the peer's path, tx_queue's echo), from the address it was sent to
 * (IP_PKTINFO), with no peer and no route lookup of ours.
 */
int udp_tx_reply(struct backend *b, const struct backend_pkt *pkt, const uint8_t *data,
		 uint32_t len)
{
	struct udp_backend *u = to_udp(b);
	struct io_uring_sqe *sqe;
	struct udp_tx_slot *s;
	struct cmsghdr *c;
	uint32_t slot;
	int fd;

	if (len < MROC_HDR_LEN || len > u->buf_size || !pkt->dst.family)
		return -EINVAL;
	if (!u->tx_nfree)
		udp_tx_reap(u);
	if (!u->tx_nfree) {
		u->st.tx_ring_full++;
		return -ENOBUFS;
	}
	slot = u->tx_free[u->tx_nfree - 1];
	s = &u->slots[slot];
	if (!udp_sa_from_addr(u, &pkt->src, u->peer_port, &s->to, &s->msg.msg_namelen)) {
		u->st.tx_no_route++;
		return -EAFNOSUPPORT;
	}
	sqe = io_uring_get_sqe(&u->tx);
	if (!sqe) {
		io_uring_submit(&u->tx);
		sqe = io_uring_get_sqe(&u->tx);
		if (!sqe) {
			u->st.tx_ring_full++;
			return -ENOBUFS;
		}
	}
	u->tx_nfree--;
	memcpy(tx_buf(u, slot), data, len);
	fd = tx_sock(u, pkt->sport);
	s->iov.iov_len = (size_t)frame_icrc_seal(tx_buf(u, slot), len,
						 fd == u->eph_sock ? u->eph_port : pkt->sport,
						 u->peer_port);
	c = tx_tos(u, s, false);
	if (!u->local.family)
		tx_pktinfo(s, c, &pkt->dst);
	io_uring_prep_sendmsg(sqe, fd, &s->msg, MSG_DONTWAIT);
	io_uring_sqe_set_data64(sqe, slot);
	u->tx_inflight++;
	io_uring_submit(&u->tx);
	return 0;
}

/* ---- backend ops ------------------------------------------------------------ */

int udp_tx_get(struct backend *b, struct engine_txbuf *bufs, int n)
{
	struct udp_backend *u = to_udp(b);
	int i;

	if ((uint32_t)n > u->tx_nfree)
		udp_tx_reap(u);
	for (i = 0; i < n && u->tx_nfree; i++) {
		uint32_t slot = u->tx_free[--u->tx_nfree];

		bufs[i] = (struct engine_txbuf){ .data = tx_buf(u, slot), .cap = u->buf_size };
	}
	if (i < n)
		u->st.tx_ring_full++;
	return i;
}

int udp_tx_send(struct backend *b, struct engine_txbuf *bufs, int used, int got)
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
	udp_tx_reap(u);			/* sends usually complete inline */
	return sent;
}

/* ---- set-up ----------------------------------------------------------------- */

int udp_tx_setup(struct udp_backend *u, uint32_t sq_entries)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL,
		/* Room for every send slot and a cancel: it never overflows. */
		.cq_entries = pow2_up(u->tx_bufs > sq_entries ? u->tx_bufs + 1 : sq_entries + 1),
	};
	int err;

	u->tx_stride = align_up(u->buf_size + FRAME_ICRC_LEN, BUF_ALIGN);
	u->tx_area_len = (size_t)u->tx_bufs * u->tx_stride;
	u->tx_area = udp_map_area(u->tx_area_len);
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
