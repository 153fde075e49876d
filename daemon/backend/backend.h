/* SPDX-License-Identifier: MIT */
/*
 * What the data-plane worker needs from a packet backend (AF_XDP or UDP
 * sockets over io_uring).  A backend moves MetaRoCE packets, i.e. the bytes
 * after the UDP header, and maps engine peer handles to addresses through
 * the peer table.  Everything here runs on the worker thread only.
 */
#ifndef MROCD_BACKEND_H
#define MROCD_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "addr.h"
#include "egress.h"
#include "engine.h"

struct peers;

/* A received MetaRoCE packet; valid until rx_release. */
struct backend_pkt {
	const uint8_t *data;		/* after the UDP header; the worker may write it until
					 * rx_release (it opens sealed packets in place) */
	uint32_t len;
	struct mroc_addr src;
	struct mroc_addr dst;		/* the address it was sent to (ours); family 0: not known */
	uint16_t sport;
	bool ce;
	uint64_t arrival;		/* when it reached the host (CLOCK_MONOTONIC ns: AF_XDP's
					 * XDP stamp), 0 = not known (engine_rx_meta.arrival) */
	uint64_t cookie;		/* the backend's buffer handle */
	const uint8_t *l2;		/* AF_XDP: the frame's Ethernet header (its MACs, a
					 * tag), for reply; NULL: not kept (UDP) */
};

struct backend_stats {
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint64_t rx_bad_frame;		/* failed frame_parse / not for our port */
	uint64_t rx_bad_icrc;		/* corrupted: the ICRC did not match */
	uint64_t rx_not_unicast;	/* UDP: to a broadcast or group address, not ours */
	uint64_t tx_no_route;		/* peer unresolved: dropped, the engine resends */
	uint64_t tx_ring_full;
	uint64_t tx_kick_errors;	/* AF_XDP: a TX kick failed (not EAGAIN/EBUSY/ENOBUFS) */
	/* AF_XDP: XDP_STATISTICS of the sockets, summed */
	uint64_t xsk_rx_dropped, xsk_rx_invalid_descs, xsk_tx_invalid_descs;
	uint64_t xsk_rx_ring_full, xsk_rx_fill_ring_empty, xsk_tx_ring_empty;
	/* AF_XDP with workers: frames handed to / taken from other workers (handoff.h) */
	uint64_t handoff_rx_out, handoff_rx_in, handoff_tx_out, handoff_tx_in;
	uint64_t handoff_full;		/* dropped: the ring to the other worker was full */
	uint64_t handoff_tx_waited;	/* TX frames that waited for a full ring (the backlog) */
	/*
	 * Frames that could not go back to the worker they came from (#24
	 * item 13): a handed frame kept for a full return ring, a frame sent
	 * for another worker with no free frame to give back; repaid when the
	 * ring has room and the debtor frames to spare; owed: a gauge.
	 */
	uint64_t handoff_return_full, handoff_tx_unpaid, handoff_repaid, handoff_owed;
	uint64_t fill_refills;		/* fill rings found low while idle, refilled */
	/*
	 * AF_XDP batches (issue #22): receive turns of a socket that found
	 * packets, TX turns that submitted descriptors to a socket's ring:
	 * rx_pkts / rx_batches and tx_pkts / tx_batches are what the per-batch
	 * costs (a kick, a ring update, each a cache line the kernel shares) are
	 * spread over.
	 */
	uint64_t rx_batches, tx_batches;
	/*
	 * AF_XDP: packets to this daemon itself (a QP connected to its own
	 * address), delivered to its receive path instead of the wire
	 * (afxdp_loop.c); of them handed to the worker that owns their QP;
	 * dropped for a full queue or ring (the engine resends).
	 */
	uint64_t loopback_pkts, loopback_handed, loopback_drops;
	/* AF_XDP: frames from the wire from one of our configured addresses: dropped (11a) */
	uint64_t rx_src_ours;
	uint64_t port_dead;		/* a port counted down for a peer (porthealth.h) */
	uint64_t ports_down;		/* gauge: (peer, port) pairs counted down now */
};

struct backend;

struct backend_ops {
	const char *name;		/* "af_xdp" or "udp" */
	/* Up to n received packets (non-blocking); returns count or -errno. */
	int (*rx)(struct backend *b, struct backend_pkt *pkts, int n);
	void (*rx_release)(struct backend *b, struct backend_pkt *pkts, int n);
	/*
	 * Up to n empty buffers for engine_tx: data points FRAME_HEADROOM into
	 * a frame, cap is what the engine may write.  Returns count.
	 */
	int (*tx_get)(struct backend *b, struct engine_txbuf *bufs, int n);
	/* Send bufs[0..used), give back bufs[used..got).  Returns sent count. */
	int (*tx_send)(struct backend *b, struct engine_txbuf *bufs, int used, int got);
	/*
	 * Optional: pushes out packets that tx_send handed to the kernel but
	 * that it has not taken yet (AF_XDP copy mode takes 32 per kick).
	 * Returns how many are still waiting: the worker then sleeps only
	 * briefly, since nothing would wake it to kick again.
	 */
	uint32_t (*tx_flush)(struct backend *b);
	/*
	 * fds that become readable when packets arrive or housekeeping is due
	 * (for poll); returns how many (<= max).
	 */
	int (*poll_fds)(struct backend *b, int *fds, int max);
	void (*get_stats)(struct backend *b, struct backend_stats *out);
	/*
	 * Optional (NULL: one way out): the name of the port (interface) that a
	 * packet to peer from source port sport would leave by now.  NULL when
	 * it is not known (peer unknown, no port reaches it).
	 */
	const char *(*port_name)(struct backend *b, uint32_t peer, uint16_t sport);
	/*
	 * Optional (NULL: none): the ports counted down for peer now (a dead
	 * plane, daemon/net/porthealth.h), up to max names into names[]; returns
	 * how many.  The names stay valid while the backend lives.
	 */
	unsigned (*ports_down)(struct backend *b, uint32_t peer, const char **names, unsigned max);
	/*
	 * Optional: housekeeping on the worker's clock, called once per turn
	 * of its loop before rx (AF_XDP: link changes, ageing of next hops,
	 * the port-health sweep; egress.h).  rx, tx_send and the others do
	 * none of their own.  Returns the ports (bit p: the port that source
	 * ports p mod N leave by, engine cfg.sport_classes) whose link came
	 * back up: the worker tells the engine (engine_port_up).
	 */
	uint32_t (*tick)(struct backend *b, uint64_t now);
	/*
	 * Optional: the engine took pkt (one rx gave), from peer, or acknowledged
	 * it as a duplicate (engine_rx_heard); as says what that tells of the
	 * way it came (egress.h): an unauthenticated CONNECT_REQ, a repeat, news.
	 */
	void (*heard)(struct backend *b, const struct backend_pkt *pkt, uint32_t peer, uint64_t now,
		      enum egress_heard_as as);
	/*
	 * Optional (NULL: never): len bytes of ours back the way pkt (one rx
	 * gave, not yet released) came, to its source from the address it was
	 * sent to, by the port it came in through, with no route or neighbour
	 * looked up and no peer: "aead"'s cookie reply to a CONNECT_REQ from
	 * anyone (docs/PROTOCOL.md 1.2).  0 or -errno (counted as tx_ring_full
	 * or tx_no_route).
	 */
	int (*reply)(struct backend *b, const struct backend_pkt *pkt, const uint8_t *data,
		     uint32_t len);
	/*
	 * Optional (NULL: always): about to sleep in poll() on poll_fds; false
	 * when work arrived meanwhile that no fd would tell of.
	 */
	bool (*may_sleep)(struct backend *b);
	/* One line for logs and status, e.g. "af_xdp native copy-mode veth0:q0". */
	const char *(*describe)(struct backend *b);
	void (*destroy)(struct backend *b);
};

/*
 * Seals a packet in place for the IP addresses it leaves between (security
 * "aead": the seal covers them, docs/PROTOCOL.md 1.2).  Counts its own
 * failures; the packet then goes out as it is, and the peer drops it.
 */
typedef void backend_seal_fn(void *ctx, struct engine_txbuf *b, const struct mroc_addr *src,
			     const struct mroc_addr *dst);

struct backend {
	const struct backend_ops *ops;
	struct peers *peers;
	/*
	 * Set by the worker (NULL: nothing to seal): tx_send calls it for each
	 * packet once it has chosen the packet's source and destination, before
	 * the ICRC.  Buffers from tx_get have AEAD_TRAILER_LEN of room for it.
	 */
	backend_seal_fn *seal;
	void *seal_ctx;
};

static inline void backend_seal(struct backend *b, struct engine_txbuf *buf,
				const struct mroc_addr *src, const struct mroc_addr *dst)
{
	if (b->seal)
		b->seal(b->seal_ctx, buf, src, dst);
}

#endif
