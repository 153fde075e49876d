/* SPDX-License-Identifier: MIT */
/*
 * Hand-off between data-plane workers: one single-producer single-consumer
 * ring per ordered pair of workers (afxdp.c), carrying UMEM frame addresses,
 * never the bytes: every worker's sockets share one UMEM.
 *
 *   HANDOFF_RX      a frame that arrived on the producer's socket for a QP
 *                   the consumer owns, or that the producer sent to this
 *                   daemon itself (loop); the consumer gives it back (RETURN)
 *   HANDOFF_TX      a built frame for a port whose socket the consumer owns;
 *                   the consumer sends it and gives a free frame back
 *   HANDOFF_RETURN  a frame for the consumer's free stack
 *
 * So each worker keeps the number of frames it started with, and a worker's
 * fill rings are refilled only from its own stack.
 *
 * Barriers (as xsk_queue.h): the producer writes entries, then publishes
 * tail with a release store; the consumer reads tail with an acquire load,
 * reads the entries, then publishes head with a release store, which the
 * producer reads with an acquire load before it reuses those slots.
 */
#ifndef MROCD_HANDOFF_H
#define MROCD_HANDOFF_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "addr.h"

#define HANDOFF_SLOTS	1024	/* power of two */

enum handoff_kind { HANDOFF_RX = 1, HANDOFF_TX, HANDOFF_RETURN };

/*
 * RX frames go parsed (frame_parse opens the ICRC in place: it cannot run
 * twice): the payload's address and length, and what the engine needs.
 */
struct handoff_entry {
	uint64_t addr;		/* UMEM address: RX the payload, TX the frame, RETURN any */
	uint32_t len;		/* RX: payload bytes, TX: frame bytes */
	uint8_t sock;		/* RX: the socket it came in on; TX: the one to send on */
	uint8_t kind;		/* enum handoff_kind */
	uint16_t sport;		/* RX: the UDP source port (the path) */
	bool ce;		/* RX: ECN CE */
	uint8_t l2_back;	/* RX: from the frame's Ethernet header to the payload, 0 =
				 * not known (backend_pkt.l2: "aead"'s cookie reply) */
	bool loop;		/* RX: sent by this daemon to itself (afxdp_loop.c), no port's */
	struct mroc_addr src;	/* RX: the sender */
	struct mroc_addr dst;	/* RX: the address it was sent to ("aead" opens with both) */
	uint64_t arrival;	/* RX: the XDP program's arrival stamp, 0 = none (backend.h) */
};

struct handoff_ring {
	alignas(64) _Atomic uint32_t tail;	/* producer */
	uint32_t head_cache;			/* producer: last head seen */
	alignas(64) _Atomic uint32_t head;	/* consumer */
	alignas(64) struct handoff_entry e[HANDOFF_SLOTS];
};

static inline uint32_t handoff_room(struct handoff_ring *r)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (HANDOFF_SLOTS - (tail - r->head_cache) == 0)
		r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
	return HANDOFF_SLOTS - (tail - r->head_cache);
}

/* Producer: false when full. */
static inline bool handoff_push(struct handoff_ring *r, const struct handoff_entry *e)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (!handoff_room(r))
		return false;
	r->e[tail & (HANDOFF_SLOTS - 1)] = *e;
	atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
	return true;
}

/* Consumer: the oldest entry, or NULL; handoff_pop releases it. */
static inline const struct handoff_entry *handoff_peek(struct handoff_ring *r)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	if (head == atomic_load_explicit(&r->tail, memory_order_acquire))
		return NULL;
	return &r->e[head & (HANDOFF_SLOTS - 1)];
}

static inline void handoff_pop(struct handoff_ring *r)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	atomic_store_explicit(&r->head, head + 1, memory_order_release);
}

static inline bool handoff_empty(struct handoff_ring *r)
{
	return atomic_load_explicit(&r->head, memory_order_relaxed) ==
	       atomic_load_explicit(&r->tail, memory_order_acquire);
}

#endif
