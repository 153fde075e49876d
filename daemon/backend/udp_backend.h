/* SPDX-License-Identifier: MIT */
/*
 * UDP fallback backend: MetaRoCE over ordinary UDP sockets driven by
 * io_uring, for hosts or containers without XDP.
 *
 * A path is a UDP source port, and an ordinary socket has one source port,
 * so the backend has a send socket per port of [sport_min, sport_max],
 * bound the first time the port is used (the whole 49152-65535 would be
 * 16384 sockets at start), one socket on an ephemeral port for the rest
 * (replies echo the peer's source port, which may lie outside our range;
 * a port another program holds), and one receive socket on the MetaRoCE
 * port.  The engine's sport range is the backend's (udp_backend_sports()).
 *
 * Receive: one multishot recvmsg on the receive socket with a ring of
 * provided buffers, on its own io_uring.  Send: one sendmsg per packet from
 * preallocated buffers, with the IP TOS / IPv6 traffic class (DSCP and ECN)
 * as a control message, submitted once per tx_send on a second io_uring.
 * A packet that finds its socket's send buffer full is dropped and counted
 * in tx_ring_full, like a full NIC queue: a path's packets stay in order.
 * Nothing is allocated after creation.
 *
 * Threads: create and destroy anywhere, everything else on the worker
 * thread.  The first rx call arms the receive, because io_uring does a
 * request's work in the task that submitted it.
 *
 * poll_fds gives the two rings' fds: readable while completions wait
 * (received packets, or sends that completed late); rx reaps both.
 */
#ifndef MROCD_UDP_BACKEND_H
#define MROCD_UDP_BACKEND_H

#include <stdint.h>

#include "addr.h"
#include "backend.h"

#define UDP_BACKEND_MAX_RX_BUFS	32768	/* a provided buffer ring's limit */

struct udp_backend_cfg {
	/*
	 * Address to bind.  family 0: any address, dual stack (IPv6 and IPv4
	 * on one IPv6 socket; IPv4 only when the kernel has no IPv6).
	 */
	struct mroc_addr local;
	uint16_t udp_port;		/* MetaRoCE port we receive on */
	uint16_t peer_port;		/* MetaRoCE port of peers; 0 = udp_port */
	uint16_t sport_min, sport_max;	/* source ports: one send socket each, opened on use */
	uint32_t sq_entries;		/* send ring's submission queue */
	uint32_t rx_bufs;		/* receive buffers: power of two, <= UDP_BACKEND_MAX_RX_BUFS */
	uint32_t tx_bufs;		/* send buffers */
	uint32_t buf_size;		/* packet bytes per buffer: >= mtu + MROC_DATA_OVERHEAD */
	uint32_t rcvbuf;		/* SO_RCVBUF of the receive socket in bytes; 0 = kernel default */
	uint8_t dscp;			/* DSCP of every packet we send */
};

/* Counters the generic backend_stats has no field for. */
struct udp_backend_xstats {
	uint64_t rx_no_bufs;		/* receive stopped: every buffer was taken (ENOBUFS) */
	uint64_t rx_arms;		/* multishot receive submitted (the first time, then re-arms) */
	uint64_t rx_sock_drops;		/* dropped by the kernel, receive socket full (SO_MEMINFO) */
	uint64_t tx_errors;		/* sends the kernel failed (also in tx_no_route) */
	uint64_t tx_sport_fallback;	/* sent from the ephemeral port: sport outside the range,
					 * or its socket could not be bound */
};

/*
 * Defaults: any address, port MROC_UDP_PORT, source ports 49152-65535,
 * 1024 receive and 512 send buffers of 2048 bytes.
 */
void udp_backend_cfg_default(struct udp_backend_cfg *cfg);

/*
 * Bind the sockets and set up both rings.  peers maps engine peer handles
 * to addresses for sending (peers_get); received packets carry their source
 * address.  Returns 0 on success, negative errno otherwise: -EINVAL for a
 * bad cfg, -EADDRINUSE when the MetaRoCE port is taken.
 */
int udp_backend_create(const struct udp_backend_cfg *cfg, struct peers *peers,
		       struct backend **out);

/* The source-port range: set the engine's sport_min/sport_max to these. */
void udp_backend_sports(const struct backend *b, uint16_t *min, uint16_t *max);

void udp_backend_get_xstats(struct backend *b, struct udp_backend_xstats *out);

#endif
