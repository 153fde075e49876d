/* SPDX-License-Identifier: MIT */
/*
 * libmroc internals (not installed): the context, regions and QPs, and the
 * few helpers the library's files share.  Names shared between files start
 * with libmroc_, never mroc_: libmroc.map exports mroc_*.
 *
 * Locks: ctx->req_lock serialises requests on the client socket (one
 * message out, one reply in); ctx->list_lock guards the lists of regions and
 * QPs and is only ever held for a short walk, so the data path may take it
 * (on a lookup-cache miss) without waiting behind a request to the daemon.
 */
#ifndef LIBMROC_INTERNAL_H
#define LIBMROC_INTERNAL_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"
#include "mroc_util.h"
#include "mroc/mroc.h"
#include "ring.h"
#include "spin.h"

struct mroc_ctx {
	int sock;			/* SOCK_SEQPACKET to mrocd */
	int doorbell_fd;		/* eventfd, HELLO's (the QPs ring their own) */
	pthread_mutex_t req_lock;	/* one request at a time; guards seq */
	uint32_t seq;
	/* The socket failed or hung up (mrocd is gone): every call is -ENOTCONN. */
	_Atomic bool dead;
	_Atomic int64_t alive_check;	/* pollers look for a hang-up again at this time */
	int64_t spin_ns;		/* the polling budget (spin.h), from the options */

	/* From the daemon's HELLO reply; 0 means no limit was given. */
	uint32_t client_id;
	uint32_t max_qps, max_mrs;
	uint64_t max_mr_bytes;
	uint32_t max_sq_depth, max_rq_depth;
	uint32_t default_paths;

	pthread_mutex_t list_lock;	/* guards mrs, qps, anchors */
	struct mroc_mr *mrs;		/* also the lkey -> (base, len) table */
	struct libmroc_anchor *anchors;	/* mr.c: a page of each application memfd no region maps */
	struct mroc_qp *qps;
	_Atomic uint32_t mr_gen;	/* bumped when a region goes: lookup caches are stale */
};

struct mroc_mr {
	struct mroc_ctx *ctx;
	struct mroc_mr *next;
	uint8_t *addr;
	size_t len;
	uint32_t lkey, rkey;
	unsigned int access;
	dev_t dev;		/* its memfd: a later registration of it maps it from ours */
	ino_t ino;
	bool keep;		/* the application's memfd: anchored when its last region goes */
};

/* A page of our mapping of an application's memfd, kept for registering it again (mr.c). */
struct libmroc_anchor {
	struct libmroc_anchor *next;
	void *addr;
	dev_t dev;
	ino_t ino;
};

/* One producer's last lkey lookup (each ring has its own: SQ and RQ may be posted from two threads). */
struct libmroc_mr_cache {
	const uint8_t *base;		/* NULL: empty */
	size_t len;
	uint32_t lkey;
	uint32_t gen;			/* ctx->mr_gen when filled */
};

/* Connection state as seen in the CQ (enum libmroc_conn or a negative errno). */
enum libmroc_conn { LIBMROC_CONN_NONE = 0, LIBMROC_CONN_UP = 1 };

/*
 * The three rings are used by up to three threads (post_send, post_recv,
 * poll_cq), so each side's private state sits on a cache line of its own.
 */
struct mroc_qp {
	struct mroc_ctx *ctx;
	struct mroc_qp *next;
	uint32_t qpn;
	uint8_t *region;		/* the ring memfd, mapped */
	size_t region_len;
	int cq_fd;			/* completion eventfd */
	int doorbell_fd;		/* eventfd: this QP's rings have work (abi.h) */
	_Atomic int conn;		/* enum libmroc_conn, -ECONNREFUSED or -ECONNRESET */

	_Alignas(MROC_CACHE_LINE) struct ring_view sq;	/* producer */
	struct libmroc_mr_cache sq_cache;

	_Alignas(MROC_CACHE_LINE) struct ring_view rq;	/* producer */
	struct libmroc_mr_cache rq_cache;

	_Alignas(MROC_CACHE_LINE) struct ring_view cq;	/* consumer */
	struct libmroc_spin poll_spin;	/* mroc_poll_cq's empty streak */
	/*
	 * The completion channel, as this side knows it: armed (set by an arm,
	 * cleared by a disarm) and a signal owed (mrocd took an arm, which it
	 * signals once, and no read has drained it yet).  See mroc_ack_notify.
	 */
	bool armed, signal_owed;
	/* Completions taken off the CQ by mroc_qp_wait_connected, returned first by mroc_poll_cq. */
	struct mroc_wc *stash;
	uint32_t stash_head, stash_cnt, stash_cap;
};

/* ---- ctx.c ---------------------------------------------------------------- */

/*
 * Send msg (len bytes; type filled in by the caller) with nfds fds and wait
 * for the reply, which overwrites msg (up to len bytes).  Returns 0, the
 * daemon's negative status, -EPROTO for a reply that does not fit, or
 * -ENOTCONN once the socket has failed.
 */
int libmroc_request(struct mroc_ctx *ctx, void *msg, size_t len, const int *fds, int nfds);

/* How often pollers that never sleep look for a hang-up on the socket (a poll(2) call). */
#define LIBMROC_ALIVE_CHECK_NS	10000000LL
/* Note that mrocd is gone (says so once); every call of the context fails from now on. */
void libmroc_ctx_died(struct mroc_ctx *ctx);
/* Has mrocd gone?  Looks at the socket if it has not for LIBMROC_ALIVE_CHECK_NS. */
bool libmroc_ctx_gone(struct mroc_ctx *ctx, int64_t now);
/* pollfd revents of the socket mean mrocd is gone. */
#define LIBMROC_HANGUP		(POLLHUP | POLLRDHUP | POLLERR)

/* ---- mr.c ----------------------------------------------------------------- */

/*
 * The offset of [sg->addr, sg->addr + sg->length) in the region named by
 * sg->lkey: 0 and *off, -EFAULT when it is not inside a region of the
 * context, -EINVAL for a length above INT32_MAX.
 */
int libmroc_sge_offset(struct mroc_ctx *ctx, struct libmroc_mr_cache *cache,
		       const struct mroc_sge *sg, uint64_t *off);
/* mroc_close: forget every region (the daemon drops them with the connection). */
void libmroc_mr_drop_all(struct mroc_ctx *ctx);

/* ---- qp.c ----------------------------------------------------------------- */

void libmroc_qp_drop_all(struct mroc_ctx *ctx);

/* ---- post.c --------------------------------------------------------------- */

/* Deadlines on CLOCK_MONOTONIC in ns; LIBMROC_FOREVER for no limit. */
#define LIBMROC_FOREVER		INT64_MAX
int64_t libmroc_now_ns(void);
int64_t libmroc_deadline(int timeout_ms);
/*
 * Arm the CQ and sleep on the completion fd (and the context's socket) until
 * it fires, mrocd hangs up or the deadline passes: 0 (look at the CQ again;
 * the wake-up may be spurious), -ENOTCONN or -ETIMEDOUT.
 * Returns 0 at once if the ring is not empty.
 */
int libmroc_cq_sleep(struct mroc_qp *qp, int64_t deadline);
/* Copy a CQE out of shared memory into a work completion and note connection events. */
void libmroc_cqe_to_wc(struct mroc_qp *qp, const void *slot, struct mroc_wc *wc);

/* ---- error.c -------------------------------------------------------------- */

__attribute__((format(printf, 2, 3)))
void libmroc_pr(enum mroc_print_level level, const char *fmt, ...);

#define pr_warn(fmt, ...)	libmroc_pr(MROC_PRINT_WARN, "libmroc: " fmt "\n", ##__VA_ARGS__)
#define pr_info(fmt, ...)	libmroc_pr(MROC_PRINT_INFO, "libmroc: " fmt "\n", ##__VA_ARGS__)
#define pr_debug(fmt, ...)	libmroc_pr(MROC_PRINT_DEBUG, "libmroc: " fmt "\n", ##__VA_ARGS__)

/* ---- options structs (libbpf's rules) ---------------------------------------- */

/*
 * An options struct of user_sz bytes is valid if it holds at least its sz
 * field and every byte past the part this library knows is zero (a newer
 * caller asking for something we cannot do is refused, not ignored).
 */
static inline bool libmroc_opts_valid(const void *opts, size_t user_sz, size_t known_sz)
{
	if (user_sz < sizeof(size_t))
		return false;
	for (size_t i = known_sz; i < user_sz; i++)
		if (((const uint8_t *)opts)[i])
			return false;
	return true;
}

/* opts->field if the caller's struct is long enough to have it, else dflt. */
#define LIBMROC_OPT(opts, field, dflt)                                                           \
	((opts) && (opts)->sz >= offsetof(__typeof__(*(opts)), field) + sizeof((opts)->field) ?  \
		 (opts)->field :                                                                 \
		 (dflt))

#endif
