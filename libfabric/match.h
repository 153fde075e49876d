/* SPDX-License-Identifier: MIT */
/*
 * Matching of arriving messages to posted receives, per endpoint: two kinds
 * (untagged FI_MSG, FI_TAGGED), each with a queue of posted receives and a
 * queue of unexpected messages (arrived before a receive matched them), both
 * in order, so the first match is always the oldest (MPI's ordering rule).
 *
 * A tagged receive matches a message when ((msg tag ^ tag) & ~ignore) == 0
 * and, when it names a source (FI_DIRECTED_RECV), the sources are equal.
 * FI_PEEK looks into the unexpected queue without taking; FI_CLAIM takes the
 * message out of the queue for one later receive that names the same context.
 * Unexpected messages are buffered by the provider: they may still be arriving
 * (complete == false) when a receive matches them.
 * Pure data structure (no libfabric objects), unit-tested on its own.
 */
#ifndef MROC_FI_MATCH_H
#define MROC_FI_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <rdma/fabric.h>

#define MFI_MATCH_IOV	4

enum mfi_kind { MFI_KIND_MSG = 0, MFI_KIND_TAGGED = 1 };

struct mfi_unexp;

struct mfi_rxop {
	enum mfi_kind kind;
	struct iovec iov[MFI_MATCH_IOV];
	size_t iov_count;
	uint64_t len;			/* room: sum of iov */
	uint64_t tag, ignore;
	fi_addr_t src;			/* FI_ADDR_UNSPEC: any */
	void *context;
	uint64_t flags;			/* FI_COMPLETION ... as posted */
	bool completion;		/* report it */
	uint64_t multi_off;		/* FI_MULTI_RECV: bytes of the buffer handed out so far */
	bool multi_release;		/* its completion releases a multi-receive buffer */
	/* filled when a message matches */
	uint64_t msg_len, msg_tag, data, recvd;
	bool has_data;
	fi_addr_t msg_src;
	struct mfi_rxop *next;
};

struct mfi_unexp {
	enum mfi_kind kind;
	fi_addr_t src;
	void *conn;			/* the connection it arrives on (opaque here) */
	uint64_t tag, data, total, received;
	bool has_data, complete;
	bool discard;			/* FI_DISCARDed while still arriving: freed at its last chunk */
	uint8_t *buf;
	void *claim_ctx;		/* FI_CLAIM: taken for the receive with this context */
	uint64_t seq;			/* arrival order among the unexpected (from 1) */
	struct mfi_rxop *waiting;	/* matched before it had fully arrived */
	/* A rendezvous announcement (no buf): where the receiver READs it from. */
	bool rndv;
	uint32_t rndv_rkey, rndv_req;
	uint64_t rndv_off;
	struct mfi_unexp *next;
};

struct mfi_queue_rx { struct mfi_rxop *head, *tail; };
struct mfi_queue_ux { struct mfi_unexp *head, *tail; };

struct mfi_match {
	struct mfi_queue_rx posted[2];
	struct mfi_queue_ux unexp[2];
	struct mfi_queue_ux claimed;	/* FI_CLAIMed, waiting for their receive */
	uint64_t next_seq;		/* the last unexpected message's seq */
	struct mfi_rxop *pool, *free;
	size_t npool;
};

int mfi_match_init(struct mfi_match *m, size_t nrx);
/* Frees the pool and every unexpected message still buffered. */
void mfi_match_fini(struct mfi_match *m);
struct mfi_rxop *mfi_rxop_get(struct mfi_match *m);
void mfi_rxop_put(struct mfi_match *m, struct mfi_rxop *rx);

bool mfi_tag_match(uint64_t want, uint64_t ignore, uint64_t tag);

/*
 * A receive is posted: the oldest unexpected message it matches is taken out
 * of its queue and returned (the caller delivers it); NULL: the receive is queued.
 */
struct mfi_unexp *mfi_match_post(struct mfi_match *m, struct mfi_rxop *rx);
/* A message begins arriving: the oldest matching posted receive, taken out; NULL if none. */
struct mfi_rxop *mfi_match_arrival(struct mfi_match *m, enum mfi_kind kind, fi_addr_t src,
				   uint64_t tag);
void mfi_match_add_unexp(struct mfi_match *m, struct mfi_unexp *ux);
/*
 * FI_PEEK (claim_ctx NULL) or FI_PEEK|FI_CLAIM: the oldest unexpected message
 * matching (kind, src, tag, ignore); with a claim it moves to the claimed queue.
 */
struct mfi_unexp *mfi_match_peek(struct mfi_match *m, enum mfi_kind kind, fi_addr_t src,
				 uint64_t tag, uint64_t ignore, void *claim_ctx);
/* FI_CLAIM receive: the message claimed with ctx, taken out; NULL if none. */
struct mfi_unexp *mfi_match_claimed(struct mfi_match *m, void *ctx);
/*
 * A claim given up (fi_cancel of its context): the message claimed with ctx is
 * unexpected again, in its arrival place; NULL if none.  fi_tagged(3) releases a
 * claim only by its FI_CLAIM receive (FI_DISCARD to drop it); an application that
 * gives up the context instead would otherwise leave the message held until close.
 */
struct mfi_unexp *mfi_match_unclaim(struct mfi_match *m, void *ctx);
/* Cancel a posted receive by context: the receive taken out, or NULL. */
struct mfi_rxop *mfi_match_cancel(struct mfi_match *m, void *ctx);
/* A multi-receive buffer with room left goes back where it was: first in its queue. */
void mfi_match_requeue_head(struct mfi_match *m, struct mfi_rxop *rx);
/* The oldest posted receive of either kind, taken out (an endpoint closing); NULL if none. */
struct mfi_rxop *mfi_match_take_posted(struct mfi_match *m);
/* An unexpected message out of whichever queue holds it (its connection went away). */
void mfi_match_remove_unexp(struct mfi_match *m, struct mfi_unexp *ux);
void mfi_unexp_free(struct mfi_unexp *ux);
/*
 * A rendezvous announcement that came on conn, out of whichever queue holds
 * it (its data can no longer be read: the connection went away); NULL if none.
 */
struct mfi_unexp *mfi_match_take_rndv(struct mfi_match *m, const void *conn);

#endif
