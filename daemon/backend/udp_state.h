/* SPDX-License-Identifier: MIT */
/*
 * What the UDP backend's files share (udp_backend.h is its interface):
 * its state, and the functions one file gives the others.  udp_backend.c:
 * the ops table, set-up and tear-down; udp_sock.c: sockets and addresses;
 * udp_rx.c: the receive ring and its provided buffers; udp_tx.c: the send
 * ring, its slots and source ports.  Everything here runs on the worker
 * thread but set-up and tear-down (udp_backend.h).
 */
#ifndef MROCD_UDP_STATE_H
#define MROCD_UDP_STATE_H

#include <liburing.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "udp_backend.h"

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

static inline struct udp_backend *to_udp(struct backend *b)
{
	return (struct udp_backend *)b;
}

/* udp_sock.c */
bool udp_sa_from_addr(const struct udp_backend *u, const struct mroc_addr *a, uint16_t port,
		  union udp_sa *sa, socklen_t *len);
bool udp_sa_to_addr(const void *name, uint32_t len, struct mroc_addr *a, uint16_t *port);
void udp_sock_opt(int fd, int level, int name, int val, const char *what);
int udp_sock_open(struct udp_backend *u, uint16_t port, bool rx, uint32_t rcvbuf);
int udp_sockets_open(struct udp_backend *u, const struct udp_backend_cfg *cfg);

/* udp_rx.c */
int udp_rx(struct backend *b, struct backend_pkt *pkts, int n);
void udp_rx_release(struct backend *b, struct backend_pkt *pkts, int n);
int udp_rx_setup(struct udp_backend *u);

/* udp_tx.c */
void udp_tx_reap(struct udp_backend *u);
int udp_tx_get(struct backend *b, struct engine_txbuf *bufs, int n);
int udp_tx_send(struct backend *b, struct engine_txbuf *bufs, int used, int got);
int udp_tx_reply(struct backend *b, const struct backend_pkt *pkt, const uint8_t *data,
		 uint32_t len);
int udp_tx_setup(struct udp_backend *u, uint32_t sq_entries);

/* udp_backend.c */
void *udp_map_area(size_t len);

#endif
