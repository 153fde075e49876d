/* SPDX-License-Identifier: MIT */
/*
 * The contract between libmroc and mrocd (not installed): control messages
 * on the client socket, and the layout of each QP's shared ring region.
 * Every layout is pinned by static_assert; a change is an ABI version bump.
 * The daemon trusts nothing here: it validates every field it reads.
 */
#ifndef MROC_ABI_H
#define MROC_ABI_H

#include <assert.h>
#include <stdint.h>

/* 2: SQE of 64 B with the atomics' operands; 3: RUNG; 4: a doorbell per QP */
#define MROC_ABI_VERSION	4
#define MROC_SHM_MAGIC		0x4d524f43u	/* "MROC" */
#define MROC_CACHE_LINE		64
#define MROC_DEFAULT_SOCKET	"/run/mroc/mrocd.sock"

/* ---- control messages (SOCK_SEQPACKET, one message per request/reply) ------ */

/*
 * Every memfd sent to the daemon (regions and rings) MUST carry F_SEAL_SHRINK
 * (create it with MFD_ALLOW_SEALING, size it, then F_ADD_SEALS): the daemon
 * maps it and would take SIGBUS if the file shrank under the mapping, so it
 * refuses an unsealed one with -EPERM.  Every page of it must be allocated
 * (-ENODATA otherwise).  Once mapped, the daemon adds F_SEAL_FUTURE_WRITE
 * (no hole can be punched in pages it pins; mappings made before stay
 * writable), so a memfd closed to seals (F_SEAL_SEAL) is refused with
 * -EPERM, and so is one sealed against writes already, unless a region of
 * the same client maps it, or mapped it with MROC_MR_REG_KEEP_FILE (the
 * daemon copies that mapping: MR_REG only).
 * A hugetlbfs memfd (MFD_HUGETLB) is refused with -EOPNOTSUPP.
 */
enum mroc_msg_type {
	MROC_MSG_HELLO = 1,		/* fds: [0] the context's doorbell eventfd (below) */
	MROC_MSG_MR_REG,		/* fds: [0] memfd of the region */
	MROC_MSG_MR_DEREG,
	MROC_MSG_QP_CREATE,		/* fds: [0] ring memfd, [1] completion eventfd, [2] doorbell */
	MROC_MSG_QP_CONNECT,
	MROC_MSG_QP_LISTEN,
	MROC_MSG_QP_DESTROY,
};

/*
 * Doorbells (eventfds, client -> daemon): the client writes one when it
 * posts to a ring that has NEED_WAKEUP.  A QP's own doorbell (QP_CREATE's
 * fds[2]) wakes mrocd for that QP alone, whatever the number of QPs; the
 * context's (HELLO's) makes it look at every QP of the client (libmroc
 * rings the QP's since ABI 4).  mrocd never reads a doorbell: each write
 * is one event (epoll, edge-triggered), so a counter held at its maximum
 * silences only that doorbell.
 */

/* Every request and reply starts with this; a reply echoes type and seq. */
struct mroc_msg_hdr {
	uint32_t type;			/* enum mroc_msg_type */
	uint32_t seq;			/* chosen by the client */
	int32_t status;			/* reply: 0 or a negative errno */
	uint32_t len;			/* bytes of the whole message, header included */
};

struct mroc_msg_hello {
	struct mroc_msg_hdr h;
	uint32_t abi_version;		/* request: the client's; reply: the daemon's */
	uint32_t client_id;		/* reply */
	uint32_t max_qps, max_mrs;	/* reply: this client's limits */
	uint64_t max_mr_bytes;		/* reply */
	uint32_t max_sq_depth, max_rq_depth;	/* reply */
	uint32_t default_paths;		/* reply */
	uint32_t rsvd;
};

struct mroc_msg_mr_reg {
	struct mroc_msg_hdr h;
	uint64_t len;			/* request: bytes from offset 0 of the memfd */
	uint32_t access;		/* request: MROC_ACCESS_* */
	uint32_t lkey, rkey;		/* reply */
	uint32_t flags;			/* request: MROC_MR_REG_* (a reserved word before them) */
};

/*
 * The memfd is the application's and outlives the region: when its last
 * region of this client goes, mrocd keeps a page of its mapping until the
 * client goes, so that it can be registered again (the seal forbids a new
 * writable mmap).  Not for libmroc's own region memfds: that page would keep
 * the whole file's memory.  A daemon older than the flag ignores it (the word
 * was reserved); one that knows it refuses other bits (-EINVAL).
 */
#define MROC_MR_REG_KEEP_FILE	0x1u

struct mroc_msg_mr_dereg {
	struct mroc_msg_hdr h;
	uint32_t lkey;
	uint32_t rsvd;
};

struct mroc_msg_qp_create {
	struct mroc_msg_hdr h;
	uint8_t mode;			/* enum mroc_qp_mode, MROC_QP_DEFAULT: mrocd's */
	uint8_t paths;			/* 0 = daemon default */
	uint16_t rsvd;
	uint32_t sq_entries;		/* ring sizes (powers of two), as laid out in the region */
	uint32_t rq_entries;
	uint32_t cq_entries;
	uint64_t region_len;		/* bytes of the ring memfd */
	uint32_t qpn;			/* reply */
	uint32_t rsvd2;
};

struct mroc_msg_qp_connect {
	struct mroc_msg_hdr h;
	uint32_t qpn;
	uint32_t family;		/* AF_INET or AF_INET6 */
	uint8_t addr[16];		/* network byte order */
	uint64_t service_id;
};

struct mroc_msg_qp_listen {
	struct mroc_msg_hdr h;
	uint32_t qpn;
	uint32_t rsvd;
	uint64_t service_id;
};

struct mroc_msg_qp_destroy {
	struct mroc_msg_hdr h;
	uint32_t qpn;
	uint32_t rsvd;
};

#define MROC_MSG_MAX	128	/* no message is longer */

static_assert(sizeof(struct mroc_msg_hdr) == 16, "msg header");
static_assert(sizeof(struct mroc_msg_hello) == 56, "hello");
static_assert(sizeof(struct mroc_msg_mr_reg) == 40, "mr_reg");
static_assert(sizeof(struct mroc_msg_mr_dereg) == 24, "mr_dereg");
static_assert(sizeof(struct mroc_msg_qp_create) == 48, "qp_create");
static_assert(sizeof(struct mroc_msg_qp_connect) == 48, "qp_connect");
static_assert(sizeof(struct mroc_msg_qp_listen) == 32, "qp_listen");
static_assert(sizeof(struct mroc_msg_qp_destroy) == 24, "qp_destroy");

/* ---- the QP ring region (one memfd per QP, mapped by both) ---------------------
 *
 *   offset 0                    struct mroc_shm_hdr
 *   sq_off                      struct mroc_ring_ctl, then sq_entries x struct mroc_sqe
 *   rq_off                      struct mroc_ring_ctl, then rq_entries x struct mroc_rqe
 *   cq_off                      struct mroc_ring_ctl, then cq_entries x struct mroc_cqe
 *
 * SQ and RQ: the client produces, the daemon consumes.  CQ: the daemon
 * produces, the client consumes.  Indices are free-running uint32_t; the
 * slot of index i is i & (entries - 1).  Offsets, never pointers.
 */

struct mroc_shm_hdr {
	uint32_t magic;			/* MROC_SHM_MAGIC */
	uint32_t abi_version;
	uint32_t sq_entries, rq_entries, cq_entries;
	uint32_t sq_off, rq_off, cq_off;
	uint64_t region_len;
	uint8_t rsvd[MROC_CACHE_LINE - 40];
};

/* Ring flags, set by the consumer of a ring. */
#define MROC_RING_NEED_WAKEUP	0x1	/* SQ/RQ: the daemon polls the QP no more; ring its doorbell */
/*
 * SQ/RQ: the client rang the doorbell for this ring since the daemon set
 * NEED_WAKEUP, so later posts need not (one doorbell per ring per sleep, not
 * one per post).  The daemon clears it before it sets NEED_WAKEUP again.
 */
#define MROC_RING_RUNG		0x2
#define MROC_RING_ARMED		0x1	/* CQ: the client sleeps; signal the completion fd */

/*
 * Producer and consumer indices on cache lines of their own, so the two
 * sides never write the same line.  Both are _Atomic through ring.h.
 */
struct mroc_ring_ctl {
	uint32_t prod;
	uint8_t pad0[MROC_CACHE_LINE - 4];
	uint32_t cons;
	uint8_t pad1[MROC_CACHE_LINE - 4];
	uint32_t flags;
	uint8_t pad2[MROC_CACHE_LINE - 4];
};

struct mroc_sqe {
	uint64_t wr_id;
	uint8_t opcode;			/* enum mroc_wr_opcode */
	uint8_t flags;			/* MROC_SEND_* */
	uint16_t rsvd;
	uint32_t lkey;
	uint64_t laddr;			/* offset in the local region */
	uint32_t len;
	uint32_t rkey;
	uint64_t raddr;			/* offset in the remote region */
	uint32_t imm;
	uint32_t rsvd2;
	uint64_t compare_add;		/* atomics: the addend, or the value to compare with */
	uint64_t swap;			/* CMP_SWP: the new value */
};

struct mroc_rqe {
	uint64_t wr_id;
	uint32_t lkey;
	uint32_t len;
	uint64_t laddr;			/* offset in the local region */
	uint64_t rsvd;
};

struct mroc_cqe {
	uint64_t wr_id;
	uint32_t qpn;
	uint8_t opcode;			/* enum mroc_wc_opcode */
	uint8_t status;			/* enum mroc_wc_status */
	uint8_t flags;
	uint8_t conn_err;		/* MROC_WC_CONNECT_ERR: enum mroc_conn_err */
	uint32_t byte_len;
	uint32_t imm;
	uint64_t rsvd2;
};

static_assert(sizeof(struct mroc_shm_hdr) == MROC_CACHE_LINE, "shm header");
static_assert(sizeof(struct mroc_ring_ctl) == 3 * MROC_CACHE_LINE, "ring control");
static_assert(sizeof(struct mroc_sqe) == MROC_CACHE_LINE, "sqe");
static_assert(sizeof(struct mroc_rqe) == 32, "rqe");
static_assert(sizeof(struct mroc_cqe) == 32, "cqe");

/* Layout both sides compute the same way (the daemon recomputes and compares). */
static inline uint64_t mroc_ring_bytes(uint32_t entries, uint32_t entry_size)
{
	uint64_t b = sizeof(struct mroc_ring_ctl) + (uint64_t)entries * entry_size;

	return (b + MROC_CACHE_LINE - 1) & ~(uint64_t)(MROC_CACHE_LINE - 1);
}

static inline uint64_t mroc_shm_layout(uint32_t sq, uint32_t rq, uint32_t cq, uint32_t *sq_off,
				       uint32_t *rq_off, uint32_t *cq_off)
{
	uint64_t off = sizeof(struct mroc_shm_hdr);

	*sq_off = (uint32_t)off;
	off += mroc_ring_bytes(sq, sizeof(struct mroc_sqe));
	*rq_off = (uint32_t)off;
	off += mroc_ring_bytes(rq, sizeof(struct mroc_rqe));
	*cq_off = (uint32_t)off;
	off += mroc_ring_bytes(cq, sizeof(struct mroc_cqe));
	return off;
}

#endif
