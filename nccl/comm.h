/* SPDX-License-Identifier: MIT */
/*
 * A connection's insides, shared by net.c (set-up, close) and xfer.c
 * (isend/irecv/test and the completions behind them): the wire formats of
 * the CTS and of an eager message, and the comm and request structures.
 *
 * The protocol (net.c's header comment says it in full): the receiver sends a
 * CTS for its first receive and for every receive with a buffer above
 * MNCCL_EAGER_MAX; a send with a CTS WRITEs straight into the buffer it
 * names; a send of at most MNCCL_EAGER_MAX bytes with no CTS WRITEs into one
 * of the receive comm's MNCCL_EAGER_SLOTS eager slots instead, and the
 * receiver copies it out when it matches it to a receive.  The freed eager
 * slots go back in CTSs and, when none is sent, in a CTS of no buffers (a
 * credit).  Small sends leave from a staging slot of the send comm either way.
 */
#ifndef MROC_NCCL_COMM_H
#define MROC_NCCL_COMM_H

#include "plugin.h"

#define CTS_MAGIC	0x43545334u	/* "CTS4": 32 eager slots (the two ends must agree) */
#define CTS_STRIDE	256		/* bytes per CTS buffer in a control region */
/* WRITE_IMMs in flight to one receive comm, at most, and a margin: one per buffer of
 * every receive in flight, and the eager slots. */
#define RECV_RQ_DEPTH	(MNCCL_MAX_SREQS + 64)
/*
 * A receive comm gives those receives back to the QP this many at a time, not one per
 * arrival: a post to a QP whose daemon worker went to sleep rings its doorbell (a system
 * call, and a wake-up of the worker, or its next look at the doorbells up to 20 us on),
 * and in a ring of small steps that post came just before the step's send, on the other
 * QP, which then waited behind it.  Fewer than this owed leaves at least RECV_RQ_DEPTH -
 * IMM_REPOST_BATCH + 1 posted, above the most that can be in flight.
 */
#define IMM_REPOST_BATCH	16
static_assert(RECV_RQ_DEPTH - IMM_REPOST_BATCH + 1 > MNCCL_MAX_SREQS + MNCCL_EAGER_SLOTS,
	      "a receive for every WRITE_IMM in flight while reposts are owed");
#define SEND_SQ_DEPTH	(MNCCL_MAX_SREQS + MNCCL_EAGER_SLOTS + 16)

/* Eager: an 8-byte header (tag, size) and the payload, in a slot of the receive comm. */
#define EAGER_HDR	8
#define EAGER_SLOT	(MNCCL_EAGER_MAX + 64)
/*
 * A control region: MNCCL_CTS_RECVS CTS buffers (a send comm receives into them; a
 * receive comm sends from them in turn, each busy until its SEND completed: an eager
 * send may fill a receive before its CTS has left), then slots of EAGER_SLOT bytes:
 * a receive comm's eager slots (both ends know where), a send comm's staging slots.
 */
#define CTL_SLOT_BASE	((size_t)MNCCL_CTS_RECVS * CTS_STRIDE)
#define CTL_BYTES(kind)	(CTL_SLOT_BASE + (size_t)((kind) == COMM_RECV ? MNCCL_EAGER_SLOTS : \
					       MNCCL_STAGE_SLOTS) * EAGER_SLOT)
static_assert(MNCCL_EAGER_SLOTS <= 64 && EAGER_HDR <= 64, "eager slots");
/* An immediate's middle byte: a receive slot (< 32) for a direct send, this for an eager one. */
#define IMM_EAGER	0xffu
/* The send comm's wr_id for a staged send: its staging slot, above every request index. */
#define STAGE_WRID	0x10000u
static_assert(MNCCL_MAX_SREQS < STAGE_WRID, "wr_id spaces apart");
static_assert(MNCCL_STAGE_SLOTS <= 64, "a 64-bit mask of staging slots");

/* One buffer of a CTS (little-endian on the wire). */
struct cts_buf {
	uint64_t off;			/* in the region of rkey */
	uint64_t size;			/* room: a send may be smaller, never larger */
	uint32_t rkey;
	int32_t tag;
};

struct cts {
	uint32_t magic;
	uint8_t slot;			/* the receive request's slot */
	uint8_t n;			/* buffers, 1 .. MNCCL_MAX_RECVS; 0: a credit, no receive */
	uint16_t seq;			/* the receive's sequence number (low 16 bits) */
	uint32_t eager_rkey;		/* the receive comm's region (its eager slots) */
	uint32_t eager_freed;		/* eager slots it has copied out since the comm began */
	/* Sends that fill the receives before this one (their buffers, added up; mod 2^32):
	 * the sender's count of sends tells which of its sends this receive takes. */
	uint32_t first;
	uint32_t pad;
	struct cts_buf b[MNCCL_MAX_RECVS];
};
static_assert(sizeof(struct cts) == 24 + 24 * MNCCL_MAX_RECVS, "CTS layout");
static_assert(sizeof(struct cts) <= CTS_STRIDE, "a CTS fits its buffer");

struct eager_hdr {
	int32_t tag;
	uint32_t size;
};
static_assert(sizeof(struct eager_hdr) == EAGER_HDR, "eager header layout");

enum comm_kind { COMM_LISTEN = 1, COMM_SEND, COMM_RECV };
enum req_kind { REQ_SEND = 1, REQ_RECV };

struct comm;

/* Both request kinds start with this: test() tells them apart. */
struct req_head {
	uint8_t kind;			/* enum req_kind */
	uint8_t used;
	uint8_t done;
	uint8_t failed;			/* REQ_FAILED, or REQ_TRUNCATED: its send did not fit */
	uint32_t gen;			/* handle.c: what its handle must say */
	struct comm *c;
	void *handle;			/* what NCCL was given */
};

#define REQ_FAILED	1
#define REQ_TRUNCATED	2

struct sreq {
	struct req_head h;
	int size;
	struct mnccl_reg *reg;		/* a zero-copy send's registration (held), or NULL */
};

struct rreq {
	struct req_head h;
	uint8_t n, ndone;		/* buffers; sends arrived (direct or eager) */
	uint16_t seq;
	uint8_t got[MNCCL_MAX_RECVS];
	int sizes[MNCCL_MAX_RECVS];
	int tags[MNCCL_MAX_RECVS];
	size_t room[MNCCL_MAX_RECVS];
	void *data[MNCCL_MAX_RECVS];	/* the copy out of a bounce region or an eager slot */
	struct mnccl_reg *reg[MNCCL_MAX_RECVS];
};

/* An eager send made while the sender had no CTS at all: its receive may still send one. */
struct pend {
	uint32_t idx;			/* the send's number on the comm (from 0) */
	uint32_t eno;			/* its eager slot's number (eager_sent then) */
	int32_t tag;
};

/* A CTS the sender has not used up: which of its buffers have had their send. */
struct cts_slot {
	struct cts m;
	uint8_t used[MNCCL_MAX_RECVS];
	uint8_t nused;
};

struct comm {
	enum comm_kind kind;
	uint32_t slot;			/* in the comm table (handle.c) */
	void *handle;			/* what NCCL holds; NULL once untracked */
	struct mroc_qp *qp;
	/* CTS buffers (sent from: receive comm; received into: send comm), then the eager
	 * slots (written by the peer: receive comm; staged in: send comm). */
	struct mroc_mr *ctl;
	uint64_t service_id;
	bool connected;
	int failed;			/* -errno once the connection failed */
	/* receive comm */
	struct rreq rreqs[MNCCL_MAX_REQS];
	uint16_t seq;			/* the next receive's */
	uint16_t match_seq;		/* the receive the next send arriving fills */
	uint8_t seq_slot[MNCCL_MAX_REQS];	/* slot of receive seq, by seq % MNCCL_MAX_REQS */
	bool eager;			/* both ends: small receives send no CTS (the handle says) */
	bool told;			/* receive comm: a CTS has told the sender the eager slots */
	uint32_t bufs;			/* buffers of the receives posted so far */
	uint32_t eager_rcvd, eager_freed;
	unsigned int imm_owed;		/* WRITE_IMMs' receives used and not given back yet */
	uint32_t freed_told;		/* eager_freed as the last CTS or credit said it */
	uint8_t cts_busy[MNCCL_CTS_RECVS];	/* that CTS buffer's SEND not complete */
	unsigned int cts_next;			/* the CTS buffer the next receive sends from */
	uint8_t unexp[MNCCL_EAGER_SLOTS];	/* eager slots arrived before their receive, FIFO */
	unsigned int unexp_head, unexp_cnt;
	/* send comm */
	struct cts_slot fifo[MNCCL_MAX_REQS];
	unsigned int fifo_head, fifo_cnt;
	struct sreq *sreqs;		/* [MNCCL_MAX_SREQS] */
	unsigned int sreq_hint;
	bool eager_ok;			/* a CTS told the peer's eager region */
	uint32_t sends;			/* sends posted so far (the receiver's `first` counts them) */
	uint32_t eager_rkey, eager_sent, peer_freed;
	uint64_t stage_busy;		/* staging slots a send still reads from (mroc not done) */
	unsigned int staged;		/* how many */
	struct pend pend[MNCCL_EAGER_SLOTS];	/* eager sends whose CTS may still come, FIFO */
	unsigned int pend_head, pend_cnt;
	/* listen comm */
	struct comm *next;		/* the receive comm being connected */
	/* What the comm did, logged when it closes (NCCL_DEBUG=INFO; the harness counts them). */
	struct {
		uint32_t recvs, cts, credits;		/* receive comm */
		uint32_t sends, eager, staged, zcopy;	/* send comm */
		uint32_t polls, empty;			/* CQ polls; those that found nothing */
	} st;
};

/* Eager slot i of a receive comm, staging slot i of a send comm. */
static inline void *comm_slot(const struct comm *c, unsigned int i)
{
	return (char *)mroc_mr_addr(c->ctl) + CTL_SLOT_BASE + (size_t)i * EAGER_SLOT;
}

/* handle.c: NCCL's handles of comms and requests; NULL when they name nothing (closed,
 * completed, never ours). */
int comm_track(struct comm *c);
void comm_untrack(struct comm *c);
struct comm *comm_get(const void *handle, enum comm_kind kind);
void req_name(struct comm *c, struct req_head *h, unsigned int idx);
struct req_head *req_get(const void *handle);

/* xfer.c */
void req_release_regs(struct req_head *h);
void comm_fail(struct comm *c, int err, const char *why);
void comm_progress(struct comm *c);
int comm_post_cts_recv(struct comm *c, unsigned int i);
int comm_post_imm_recv(struct comm *c);

#endif
