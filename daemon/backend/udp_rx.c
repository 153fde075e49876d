// SPDX-License-Identifier: MIT
/*
 * UDP backend: receive (udp_state.h).
 *
 * Receive buffer life cycle: in the provided buffer ring (the kernel may
 * fill it), then in a completion, then held by the worker between rx and
 * rx_release, then back in the ring.  The kernel ends the multishot request
 * with -ENOBUFS when the ring runs dry; it is armed again once an eighth of
 * the buffers are back.  Each buffer is laid out as the kernel writes it:
 *
 *   struct io_uring_recvmsg_out | name (RX_NAMELEN) | control (RX_CTLLEN) | payload
 *
 * io_uring runs the work of a request in the task that submitted it, so the
 * receive is armed by the first rx call (on the worker thread), not at set-up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mroc_util.h"
#include "frame.h"
#include "log.h"
#include "udp_state.h"

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
 * as udp_sa_to_addr gives the source).
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

/* A received packet dropped: counted in *counter, its buffer straight back to the kernel. */
static bool rx_drop(struct udp_backend *u, uint32_t bid, uint64_t *counter)
{
	(*counter)++;
	rx_give(u, bid, 0);
	rx_give_commit(u, 1);
	return false;
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
	    !udp_sa_to_addr(io_uring_recvmsg_name(o), o->namelen, &pkt->src, &pkt->sport))
		return rx_drop(u, bid, &u->st.rx_bad_frame);
	pkt->data = io_uring_recvmsg_payload(o, &u->rx_msg);
	pkt->len = io_uring_recvmsg_payload_length(o, cqe->res, &u->rx_msg);
	/*
	 * The ICRC of an AF_XDP peer (its UDP checksum is 0 over IPv4, so the
	 * kernel checked nothing).  Without one, the kernel checked the UDP
	 * checksum if the sender set one.
	 */
	len = frame_icrc_open(io_uring_recvmsg_payload(o, &u->rx_msg), pkt->len, pkt->sport,
			      u->udp_port);
	if (len < 0)
		return rx_drop(u, bid, &u->st.rx_bad_icrc);
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
	if (group || addr_group(&pkt->dst))
		return rx_drop(u, bid, &u->st.rx_not_unicast);
	pkt->cookie = bid;
	u->rx_held[bid] = 1;
	u->st.rx_pkts++;
	return true;
}

/* ---- backend ops ------------------------------------------------------------ */

int udp_rx(struct backend *b, struct backend_pkt *pkts, int n)
{
	struct udp_backend *u = to_udp(b);
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;
	int got = 0;

	udp_tx_reap(u);			/* keeps the send ring's fd from staying readable */
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

void udp_rx_release(struct backend *b, struct backend_pkt *pkts, int n)
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

/* ---- set-up ----------------------------------------------------------------- */

int udp_rx_setup(struct udp_backend *u)
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
	u->rx_area = udp_map_area(u->rx_area_len);
	u->br = udp_map_area(u->br_len);
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
