/* SPDX-License-Identifier: MIT */
/*
 * libmroc: MetaRoCE RDMA for applications, through the mrocd daemon.
 *
 * An application opens a context (a connection to mrocd's client socket),
 * allocates or registers memory regions shared with the daemon, creates
 * queue pairs, connects them to a peer (IP address of the peer's mrocd and
 * a service id), posts work into shared-memory rings and polls completions
 * (or sleeps on a completion channel).  No root, no DPDK, no kernel module.
 *
 * Conventions (libbpf's): functions return 0 or a count on success and a
 * negative errno on failure (they never set errno); functions returning a
 * pointer return NULL and set errno.  The library never prints, exits or
 * aborts: mroc_set_print() installs a callback for its diagnostics.
 * Options structs begin with their size so they can grow.
 *
 * Threads: a context may be used from several threads, but each QP's
 * post_send, post_recv and poll_cq must each be called from one thread at a
 * time (the rings are single-producer, single-consumer).
 */
#ifndef MROC_MROC_H
#define MROC_MROC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MROC_VERSION_MAJOR	0
#define MROC_VERSION_MINOR	1

struct mroc_ctx;
struct mroc_mr;
struct mroc_qp;

/* ---- diagnostics ---------------------------------------------------------- */

enum mroc_print_level { MROC_PRINT_WARN = 0, MROC_PRINT_INFO, MROC_PRINT_DEBUG };
typedef void (*mroc_print_fn)(enum mroc_print_level level, const char *fmt, va_list ap);
/* Install fn (NULL: silence, the default); returns the previous one. */
mroc_print_fn mroc_set_print(mroc_print_fn fn);

/* Text for a negative errno returned by this library (thread-safe, static). */
const char *mroc_strerror(int err);

/* ---- context ----------------------------------------------------------- */

/*
 * Polling: mrocd's worker thread, not the application, moves the data, so
 * an application that spins on a CPU the worker needs delays every message
 * by a scheduler slice (milliseconds).  mroc_poll_cq and mroc_wait_cq
 * therefore spin on an empty CQ for spin_us microseconds only; after that
 * mroc_poll_cq calls sched_yield() before it returns 0 (the worker runs at
 * once if it was waiting for this CPU; at most once per 5 us per thread,
 * however many QPs' CQs it polls, and only once the thread has found no
 * completion on any of them for spin_us, nor on a QP whose channel it has
 * armed: that caller is about to sleep), and mroc_wait_cq yields between
 * polls for as long again, then sleeps on the completion channel.
 */
#define MROC_SPIN_DEFAULT	0	/* $MROC_SPIN_US if set, else MROC_SPIN_US_DEFAULT */
#define MROC_SPIN_NONE		(-1)	/* give the CPU away at the first empty poll */
#define MROC_SPIN_FOREVER	(-2)	/* never: pure busy polling (a core of its own per poller) */
#define MROC_SPIN_US_DEFAULT	5

struct mroc_ctx_opts {
	size_t sz;			/* sizeof(struct mroc_ctx_opts) */
	const char *socket_path;	/* NULL: $MROC_SOCKET, else /run/mroc/mrocd.sock */
	int spin_us;			/* > 0 microseconds, or MROC_SPIN_* */
};

/*
 * Connect to mrocd.  Returns NULL with errno: ENOENT/ECONNREFUSED when
 * mrocd is not running on that socket, EACCES when this user may not use it,
 * EPROTO on a daemon of another ABI version, EUSERS when it has too many
 * clients, EINVAL for bad options (or a $MROC_SPIN_US that is not a number
 * of microseconds or "forever").
 */
struct mroc_ctx *mroc_open(const struct mroc_ctx_opts *opts);
/* Destroy every QP and region of the context, then disconnect. */
void mroc_close(struct mroc_ctx *ctx);
/*
 * The context's connection to mrocd, for an application that sleeps in its
 * own poll() on several completion fds: add it with events POLLRDHUP (not
 * POLLIN: replies to requests arrive on it).  POLLHUP, POLLRDHUP or POLLERR
 * means mrocd is gone; the calls below then return -ENOTCONN.  Never read
 * from or write to it.
 */
int mroc_ctx_fd(const struct mroc_ctx *ctx);

/* What mrocd lets this context hold, as it said when the context connected. */
struct mroc_ctx_limits {
	size_t sz;			/* sizeof(struct mroc_ctx_limits) */
	uint32_t max_qps;		/* QPs at once */
	uint32_t max_mrs;		/* memory regions at once */
	uint64_t max_mr_bytes;		/* bytes of all regions, and 32 a RECV entry of each QP */
	uint32_t max_sq_depth;		/* mroc_qp_attr.sq_depth, at most */
	uint32_t max_rq_depth;		/* mroc_qp_attr.rq_depth, at most */
	uint8_t default_paths;		/* paths of a QP created with paths 0 */
};
/* Fills out (up to out->sz bytes); 0, or -EINVAL. */
int mroc_ctx_limits(const struct mroc_ctx *ctx, struct mroc_ctx_limits *out);

/* ---- memory regions ------------------------------------------------------ */

#define MROC_ACCESS_LOCAL_WRITE		0x1	/* RECV and READ may write into it */
#define MROC_ACCESS_REMOTE_WRITE	0x2	/* peers may WRITE into it */
#define MROC_ACCESS_REMOTE_READ		0x4	/* peers may READ from it */
#define MROC_ACCESS_REMOTE_ATOMIC	0x8	/* peers may FETCH_ADD / CMP_SWP its 8-byte words */

/*
 * A region of len bytes shared with the daemon (a memfd mapped into both),
 * zero-filled.  Its local key names it in this process's work requests; its
 * remote key (random) is what a peer needs, with an offset, to reach it.
 */
struct mroc_mr *mroc_mr_alloc(struct mroc_ctx *ctx, size_t len, unsigned int access);
/*
 * Register memory the application created: len bytes from the start of
 * memfd (which must be at least that long, and created with
 * MFD_ALLOW_SEALING: the library seals it against shrinking, which the
 * daemon requires; -EPERM otherwise).  The library maps it (populated: the
 * pages are the application's, in its memory cgroup); use mroc_mr_addr().
 * The fd stays the application's to close.
 *
 * The daemon then seals the memfd against writes by new mappings
 * (F_SEAL_FUTURE_WRITE), so that no one can punch holes in memory it has
 * pinned (fallocate FALLOC_FL_PUNCH_HOLE, madvise MADV_REMOVE: EPERM).
 * Seals cannot be removed: from then on, even after mroc_mr_dereg and even
 * if the registration failed after the daemon mapped it, the application
 * can write the memfd only through mappings it made before (and the
 * region's); it cannot mmap it writable (MAP_SHARED, PROT_WRITE) again nor
 * write(2) to it.  It can register it again (another length, other access),
 * also after its last region of this context went (a registration cache
 * evicting and registering a buffer): the library and the daemon copy a
 * live region's mapping, or a page of the last one's that both keep (one
 * page a memfd, locked in mrocd) until the context closes.  Another
 * process's registration of it gets -EPERM (it could only read the file).
 * A memfd closed to seals (F_SEAL_SEAL) is refused (-EPERM), and so is a
 * hugetlbfs one (MFD_HUGETLB: -EOPNOTSUPP).  Make the writable mappings you need
 * before the first registration.
 */
struct mroc_mr *mroc_mr_reg_memfd(struct mroc_ctx *ctx, int memfd, size_t len,
				  unsigned int access);
/* Deregister and unmap.  Work still using it completes with an error. */
int mroc_mr_dereg(struct mroc_mr *mr);

void *mroc_mr_addr(const struct mroc_mr *mr);
size_t mroc_mr_len(const struct mroc_mr *mr);
uint32_t mroc_mr_lkey(const struct mroc_mr *mr);
uint32_t mroc_mr_rkey(const struct mroc_mr *mr);

/* ---- queue pairs ------------------------------------------------------- */

enum mroc_qp_mode {
	MROC_QP_METAROCE = 0,		/* multipath, SACK, selective retransmission */
	MROC_QP_ROCEV2 = 1,		/* baseline: one path, in order, go-back-N */
	MROC_QP_DEFAULT = 0xff,		/* mrocd's transport.mode when the QP is created */
};

struct mroc_qp_attr {
	size_t sz;			/* sizeof(struct mroc_qp_attr) */
	uint8_t mode;			/* enum mroc_qp_mode (0: METAROCE) */
	uint8_t paths;			/* 1..16; 0 = the daemon's default */
	uint32_t sq_depth;		/* send work requests outstanding; 0 = 256 */
	uint32_t rq_depth;		/* receives posted; 0 = 256 */
};

struct mroc_qp *mroc_qp_create(struct mroc_ctx *ctx, const struct mroc_qp_attr *attr);
/* Disconnect (outstanding work completes with MROC_WC_FLUSH_ERR) and free. */
int mroc_qp_destroy(struct mroc_qp *qp);
uint32_t mroc_qp_num(const struct mroc_qp *qp);

/*
 * Connect to a peer: addr is the IP address (text) of the peer's mrocd,
 * service_id what its listening QP listens on.  Returns at once; the result
 * arrives as a completion: MROC_WC_CONNECTED, or MROC_WC_EVENT_ERROR with
 * status MROC_WC_CONNECT_ERR and conn_err saying why.  mroc_qp_wait_connected()
 * waits for it: 0, or -ETIMEDOUT (no answer, or timeout_ms passed),
 * -ECONNREFUSED (no listener, busy, refused), -EACCES (security modes differ),
 * -EINVAL (parameters refused), -EAGAIN (no resources), -ECONNRESET (closed).
 */
int mroc_qp_connect(struct mroc_qp *qp, const char *addr, uint64_t service_id);
/*
 * The next connection request for service_id binds to this QP
 * (MROC_WC_CONNECTED).  A service id belongs to the context (client) whose
 * QP listened on it first, as a port to an rdma_cm listener: any number of
 * its QPs may listen on it, another context's LISTEN fails with
 * -EADDRINUSE until the owner has destroyed every QP that listened on it
 * (or connected it elsewhere) or closed.
 */
int mroc_qp_listen(struct mroc_qp *qp, uint64_t service_id);
/*
 * Poll the QP's completions until it is connected (0), refused or failed
 * (-ECONNREFUSED), timeout_ms passes (-ETIMEDOUT; < 0 = no limit) or
 * mrocd goes away (-ENOTCONN).
 * Completions other than the connection event are kept for mroc_poll_cq.
 */
int mroc_qp_wait_connected(struct mroc_qp *qp, int timeout_ms);

/* ---- work requests ---------------------------------------------------------- */

enum mroc_wr_opcode {
	MROC_WR_WRITE = 0,
	MROC_WR_WRITE_IMM,		/* consumes a RECV at the peer, as in InfiniBand */
	MROC_WR_SEND,
	MROC_WR_SEND_IMM,
	MROC_WR_READ,
	/*
	 * Atomics, as InfiniBand's: on the aligned 8-byte word at remote_offset
	 * (a multiple of 8) of a region with MROC_ACCESS_REMOTE_ATOMIC, atomic
	 * with respect to other atomics on that word and never applied twice
	 * (a retransmitted request is answered from the first result).  sg is
	 * 8 bytes of a region with MROC_ACCESS_LOCAL_WRITE: the word's original
	 * value lands there, in host byte order, before the completion.
	 */
	MROC_WR_ATOMIC_FETCH_ADD,	/* word += compare_add */
	MROC_WR_ATOMIC_CMP_SWP,		/* word == compare_add ? word = swap : unchanged */
};

#define MROC_SEND_SIGNALED	0x1	/* complete with a work completion on success too */

/* A local buffer: addr inside the region whose local key is lkey. */
struct mroc_sge {
	void *addr;
	uint32_t length;
	uint32_t lkey;
};

struct mroc_send_wr {
	uint64_t wr_id;
	uint8_t opcode;			/* enum mroc_wr_opcode */
	uint8_t flags;			/* MROC_SEND_* */
	struct mroc_sge sg;		/* source (WRITE*, SEND*) or destination (READ) */
	uint32_t rkey;			/* WRITE*, READ: the peer's region */
	uint64_t remote_offset;		/* WRITE*, READ: byte offset in that region */
	uint32_t imm;			/* *_IMM */
	uint64_t compare_add;		/* ATOMIC_*: the addend, or the value to compare with */
	uint64_t swap;			/* ATOMIC_CMP_SWP: the value stored when equal */
};

struct mroc_recv_wr {
	uint64_t wr_id;
	struct mroc_sge sg;		/* length 0 is fine for WRITE_IMM */
};

/*
 * 0, -EAGAIN when the queue is full, -EINVAL/-EFAULT for a bad request
 * (an atomic whose sg.length is not 8 or remote_offset not a multiple of 8: -EINVAL),
 * -ENOTCONN once mrocd is gone.
 */
int mroc_post_send(struct mroc_qp *qp, const struct mroc_send_wr *wr);
int mroc_post_recv(struct mroc_qp *qp, const struct mroc_recv_wr *wr);

/* ---- completions --------------------------------------------------------- */

enum mroc_wc_opcode {
	MROC_WC_WRITE = 0,
	MROC_WC_WRITE_IMM,
	MROC_WC_SEND,
	MROC_WC_SEND_IMM,
	MROC_WC_READ,
	MROC_WC_RECV,			/* a SEND arrived */
	MROC_WC_RECV_RDMA_IMM,		/* a WRITE_IMM arrived */
	MROC_WC_CONNECTED,		/* event: the QP is connected */
	MROC_WC_DISCONNECTED,		/* event: the peer or we closed it */
	MROC_WC_EVENT_ERROR,		/* event: the QP failed (status says why) */
	MROC_WC_ATOMIC_FETCH_ADD,	/* byte_len 8: the original value is in sg */
	MROC_WC_ATOMIC_CMP_SWP,		/* ditto; it equals compare_add iff swapped */
};

enum mroc_wc_status {
	MROC_WC_SUCCESS = 0,
	MROC_WC_LOC_LEN_ERR,
	MROC_WC_LOC_PROT_ERR,
	MROC_WC_REM_ACCESS_ERR,
	MROC_WC_REM_INV_REQ_ERR,
	MROC_WC_RETRY_EXC_ERR,
	MROC_WC_RNR_RETRY_EXC_ERR,
	MROC_WC_FLUSH_ERR,
	MROC_WC_CONNECT_ERR,
	MROC_WC_BAD_WR,			/* the daemon refused the work request as posted */
};

#define MROC_WC_WITH_IMM	0x1

/*
 * Why a connect failed (mroc_wc.conn_err of MROC_WC_CONNECT_ERR): what the
 * peer's mrocd answered, or no answer at all.  Asking again may help after
 * NO_LISTENER (the server not listening yet) or BUSY, hardly after the others.
 */
enum mroc_conn_err {
	MROC_CONN_ERR_NONE = 0,
	MROC_CONN_ERR_NO_LISTENER = 1,	/* nobody listens on that service id */
	MROC_CONN_ERR_BAD_PARAM = 2,	/* mode, MTU or paths not acceptable */
	MROC_CONN_ERR_NO_RESOURCES = 3,	/* the peer (or we) had no room for the QP */
	MROC_CONN_ERR_CLOSED = 4,	/* the peer's QP was closed meanwhile */
	MROC_CONN_ERR_REFUSED = 5,	/* refused for another reason */
	MROC_CONN_ERR_SECURITY = 6,	/* the daemons' security modes differ */
	MROC_CONN_ERR_BUSY = 7,		/* the listener went to other requesters */
	MROC_CONN_ERR_NO_ANSWER = 64,	/* every try went unanswered */
};

struct mroc_wc {
	uint64_t wr_id;
	uint32_t qpn;
	uint8_t opcode;			/* enum mroc_wc_opcode */
	uint8_t status;			/* enum mroc_wc_status */
	uint8_t flags;			/* MROC_WC_* */
	uint8_t conn_err;		/* enum mroc_conn_err (in what was padding) */
	uint32_t byte_len;
	uint32_t imm;
};

/*
 * Up to max completions of the QP, in order; returns how many (0 if none).
 * An empty CQ polled for longer than the spin budget yields the CPU (see
 * MROC_SPIN_*).  Once mrocd is gone (noticed within about 10 ms of polling,
 * at once by mroc_wait_cq), what is left in the CQ comes first, then
 * -ENOTCONN.
 */
int mroc_poll_cq(struct mroc_qp *qp, struct mroc_wc *wc, int max);
const char *mroc_wc_status_str(int status);
const char *mroc_conn_err_str(int conn_err);

/*
 * Completion channel: an fd (eventfd) that becomes readable when a
 * completion arrives after mroc_req_notify().  The usual loop: poll the CQ
 * dry, mroc_req_notify(), poll once more (a completion may have slipped in),
 * then sleep on the fd and mroc_ack_notify() when it fires.
 * mroc_ack_notify() disarms and drains the fd; it makes a system call only
 * when mrocd signalled (or is about to signal) an arm, so a thread sleeping
 * on many QPs' fds may disarm all of them after a wake-up at no cost but
 * for those that fired, and mrocd signals none of them while it is awake.
 */
int mroc_cq_fd(const struct mroc_qp *qp);
int mroc_req_notify(struct mroc_qp *qp);
int mroc_ack_notify(struct mroc_qp *qp);
/*
 * All of the above, adaptively (see MROC_SPIN_*): wait up to timeout_ms
 * (< 0: no limit) for a completion.  0 when there is one, -ETIMEDOUT, or
 * -ENOTCONN when mrocd goes away (every waiter of the context wakes up).
 */
int mroc_wait_cq(struct mroc_qp *qp, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
