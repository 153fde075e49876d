/* SPDX-License-Identifier: MIT */
/*
 * What clients.c (the worker's side: QP lists, rings, completions) and
 * the control thread's side share: clients_ctl.c (HELLO, regions, QPs),
 * clients_ops.c (the worker calls it makes), clients_pin.c (client memory
 * pinned), clients_limits.c (limits per user).  Ownership is marked per field:
 * the control thread owns struct client and its regions, the worker the
 * active QP lists and the zombies; they meet only inside worker_call(),
 * which is synchronous, so nothing needs a lock.
 */
#ifndef MROCD_CLIENTS_PRIV_H
#define MROCD_CLIENTS_PRIV_H

#include <sys/types.h>

#include "abi.h"
#include "clients.h"
#include "engine.h"
#include "mroc/mroc.h"
#include "qpmap.h"
#include "ring.h"
#include "worker.h"

#define QP_BATCH		32	/* work requests taken from one QP per loop */
#define CLIENT_BATCH		64	/* ... and from all of one client's QPs */
#define UIDS_MAX		4096	/* users with clients: limits.max_clients' largest value */
#define CQ_EVENT_ROOM		8	/* connection events need CQ room too */
/*
 * More bad work requests than this within BAD_WR_WINDOW_NS and the client is
 * disconnected: a broken client.  Counted over its whole life, a long-lived
 * client that now and then posts to a QP its peer's failure put in error was
 * disconnected in the end.
 */
#define BAD_WR_LIMIT		1024
#define BAD_WR_WINDOW_NS	1000000000ULL
#define ZOMBIE_NS		(2ULL * 1000000000ULL)
#define MAX_CLIENTS		4096	/* limits.max_clients' upper bound */
/*
 * The worker's per-loop cost must not grow with the number of QPs or
 * clients (issues #10, #22): it looks at no more than POLL_BUDGET busy
 * ("hot") QPs per loop, round-robin.  A hot QP that found nothing to do for
 * HOT_NS goes cold: its rings get NEED_WAKEUP for good, so the client rings
 * a doorbell on the next post: the QP's own (so the worker looks at that
 * QP alone), or for a client that rings it the context's (it looks at
 * every QP of the client).  Every doorbell is in one epoll set per
 * worker (clients.epfd), edge-triggered and never read: the worker sleeps
 * on that one fd, and a busy worker that does not sleep asks it for the
 * doorbells rung since, one epoll_wait(0) per DOORBELL_POLL_NS, whatever the
 * number of clients and QPs.  (Until issue #22 a busy worker swept 32 cold
 * QPs' rings a loop instead, and a sleeping one ppoll()ed a doorbell per
 * client.)
 */
#define POLL_BUDGET		256
#define HOT_NS			1000000ULL
#define DOORBELL_POLL_NS	20000ULL
/*
 * A worker that spins with nothing to do looks this often (clients_idle):
 * it has just woken for a packet, its QPs all went cold when it slept, and
 * the client that packet's completion wakes posts its answer to a cold QP:
 * at DOORBELL_POLL_NS that post waited up to 20 us (a ping-pong's every hop,
 * an NCCL ring's every step: s18-nccl18).  Idle, an epoll_wait(0) costs
 * nothing anyone waits for.
 */
#define DOORBELL_IDLE_NS	2000ULL
#define DOORBELL_BATCH		64	/* doorbells taken per epoll_wait */
/*
 * Every SWEEP_NS the worker looks at each cold QP's rings once (one load of
 * each producer index): work that waited a whole sweep without a doorbell
 * bringing it (a wake-up lost on either side, a client that died or was
 * kept off its CPU between its post and its doorbell) is taken then, and counted
 * (clients.rings_stranded), instead of waiting for good.  4,000 QPs cost
 * 8,000 loads every 100 ms.
 */
#define SWEEP_NS		100000000ULL
/* Users' HELLO budgets (clients_wait_ns): a table, an entry among HELLO_PROBE from uid. */
#define HELLO_SLOTS		256
#define HELLO_PROBE		8
#define NOT_LISTED		UINT32_MAX

/* The library's codes are the engine's, so they pass through unchanged. */
static_assert((int)MROC_WR_READ == (int)ENGINE_WR_READ &&
	      (int)MROC_WR_ATOMIC_FETCH_ADD == (int)ENGINE_WR_ATOMIC_FETCH_ADD &&
	      (int)MROC_WR_ATOMIC_CMP_SWP == (int)ENGINE_WR_ATOMIC_CMP_SWP &&
	      MROC_SEND_SIGNALED == ENGINE_WR_SIGNALED, "work request opcodes");
static_assert((int)MROC_WC_EVENT_ERROR == (int)ENGINE_WC_EV_ERROR &&
	      (int)MROC_WC_ATOMIC_FETCH_ADD == (int)ENGINE_WC_ATOMIC_FETCH_ADD &&
	      (int)MROC_WC_ATOMIC_CMP_SWP == (int)ENGINE_WC_ATOMIC_CMP_SWP &&
	      (int)MROC_WC_CONNECT_ERR == (int)ENGINE_WC_CONNECT_ERR, "completion codes");
static_assert((int)MROC_CONN_ERR_NO_LISTENER == (int)MROC_CM_NO_LISTENER &&
	      (int)MROC_CONN_ERR_SECURITY == (int)MROC_CM_SECURITY &&
	      (int)MROC_CONN_ERR_BUSY == (int)MROC_CM_BUSY &&
	      (int)MROC_CONN_ERR_NO_ANSWER == ENGINE_CONN_NO_ANSWER, "why a connect failed");
static_assert(MROC_ACCESS_REMOTE_READ == ENGINE_ACCESS_REMOTE_READ &&
	      MROC_ACCESS_REMOTE_ATOMIC == ENGINE_ACCESS_REMOTE_ATOMIC,
	      "access flags pass through");

struct cmr {
	uint32_t lkey, rkey;
	void *map;
	size_t len;
	dev_t dev;		/* its memfd (clients_map_again finds a region's file by them) */
	ino_t ino;
	bool keep;		/* MROC_MR_REG_KEEP_FILE: anchored when its file's last region goes */
};

struct client;

struct cqp {
	struct client *cl;
	uint32_t qpn;
	void *region;
	size_t region_len;
	int cq_fd;
	int doorbell;			/* eventfd: the client posted to a cold ring (abi.h) */
	bool bound;			/* control thread: it listened on service (services.h) */
	uint64_t service;
	uint64_t rq_bytes;		/* control thread: its RECV and engine CQ entries, in its
					 * client's mr_bytes (clients_ctl.c qp_bytes) */
	/* Worker only from here. */
	struct ring_view sq, rq, cq;
	uint32_t cq_entries;
	uint32_t active_idx;		/* in clients.active */
	uint32_t hot_idx;		/* in clients.hot, or NOT_LISTED (cold) */
	uint64_t last_work;		/* ns */
	bool sending;			/* a send work request was taken (clients_stats.qps_sending) */
	bool swept;			/* cold with work at the last sweep, at these consumer indices */
	uint32_t swept_sq, swept_rq;
	struct cqp *cl_next, *cl_prev;	/* the client's active QPs */
};

struct client {
	struct clients *cs;		/* its worker's: every QP and region of it lives there */
	uint32_t id;			/* in logs and the admin socket */
	uint64_t pd;			/* its engine protection domain: never another's */
	int fd;
	pid_t pid;
	uid_t uid;
	int doorbell;			/* -1 until HELLO */
	struct cmr *mrs;
	uint32_t nmrs, mrs_cap;		/* mrs_cap: max_mrs when it connected */
	/*
	 * A page of each application memfd (MROC_MR_REG_KEEP_FILE) whose last
	 * region went: what clients_map_again copies when it is registered again (the
	 * seal forbids a new writable mmap).  At most mrs_cap; until it goes.
	 */
	struct cmr *anchors;
	uint32_t nanchors;
	struct cqp **qps;
	uint32_t nqps, qps_cap;
	uint64_t mr_bytes;		/* its regions' bytes and its QPs' RECV and CQ entries' (rq_bytes) */
	uint64_t locked_bytes;	/* regions and rings pinned for it (clients_map_pinned) */
	uint64_t ctl_tat;		/* ns: its request budget is whole again then (clients_wait_ns) */
	uint32_t bad_wrs;		/* worker: all its life (admin "counters") */
	uint32_t bad_burst;		/* worker: since bad_burst_from (BAD_WR_LIMIT) */
	uint64_t bad_burst_from;
	uint64_t wrs, cqes, cq_overflows;	/* worker: its own counters (admin "counters") */
	uint32_t loop_wrs;		/* worker: taken in loop number loop */
	uint64_t loop;
	bool kicked;			/* worker: disconnected for misbehaving */
	bool counted;			/* established: counted in nclients and by uid */
	bool admin;			/* an administrator: may use limits.admin_reserve */
	uint32_t widx;			/* worker: in clients.wcl, or NOT_LISTED */
	struct cqp *wqps;		/* worker: its active QPs */
};

/* A destroyed QP the engine still tells its peer about. */
struct zombie {
	uint32_t qpn;			/* 0: reaped already */
	uint64_t deadline;
};

struct clients {
	/*
	 * One per worker (its engine, peers, QPs); the control thread's part
	 * (limits, counts by user, client ids) lives in the first one, ctl.
	 */
	struct clients *ctl;
	struct engine *eng;
	struct peers *peers;
	struct worker *worker;
	unsigned widx;			/* the worker's index, for the listener steering */
	struct steer *steer;
	struct clients_limits lim;	/* control thread: clients_set_limits */
	uint32_t max_total_qps;		/* the engine's QP table */
	uint32_t nclients, next_id;	/* control thread: established clients, ids */
	uint64_t next_pd;		/* protection domains: 64 bits, never reused (#24 item 9) */
	struct uid_count {		/* control thread: established clients per user */
		uid_t uid;
		uint32_t n;
		uint32_t qps, mrs;	/* theirs (limits.uid_share_percent) */
		uint32_t services;	/* bound by their listening QPs (services.h, steer.h) */
	} *uids;			/* [UIDS_MAX], nuids in use */
	uint32_t nuids;
	uint64_t locked_bytes;		/* control thread: pinned for every client */
	struct toucher *toucher;	/* control thread: reads what was pinned (toucher.h) */
	struct services *svc;		/* control thread: service ids and their clients */
	uint64_t listen_refused;	/* control thread: LISTENs on another client's service */
	uint64_t share_refused;		/* control thread: QPs, regions over a user's share */
	uint64_t unpopulated_refused;	/* control thread: memory the client never allocated */
	uint64_t seal_refused;		/* control thread: memfds mrocd could not seal against punching */
	uint64_t ctl_deferred;		/* control thread: clients over their request budget, waited for */
	struct hello_budget {		/* control thread: users' budgets before HELLO */
		uid_t uid;
		bool used;
		uint64_t tat;
	} hellos[HELLO_SLOTS];
	/* control thread: this worker's clients (connections) now, and all their lives */
	uint32_t conns;
	uint64_t opened, closed;
	/* control thread: held by clients that are no administrators (limits.admin_reserve) */
	uint32_t user_clients, user_qps, user_mrs;
	uint64_t reserve_refused;
	/* Worker from here. */
	uint64_t loop;			/* clients_poll calls */
	struct evfd_signaller *sig;	/* completion channels */
	/*
	 * Completion channels to signal at the end of this loop (clients_flush):
	 * one system call for all of them, however many clients and QPs.  A QP
	 * is here at most once: its ARMED flag, taken when it was queued, comes
	 * back only when the client arms again.
	 */
	int *sigq;			/* [max_total_qps] */
	uint32_t nsigq;
	struct qpmap map;		/* qpn -> struct cqp */
	struct cqp **active;		/* max_total_qps */
	uint32_t nactive;
	int epfd;			/* every client's doorbell (clients.c) */
	uint64_t next_doorbells;	/* ns: a busy worker's next look at them */
	uint64_t next_idle_look;	/* ns: a spinning worker's next look (DOORBELL_IDLE_NS) */
	uint64_t next_sweep;		/* ns: the next look at every cold QP's rings (SWEEP_NS) */
	struct cqp **hot;		/* max_total_qps */
	uint32_t nhot, hot_next;
	struct client *wcl[MAX_CLIENTS];	/* clients with a doorbell */
	uint32_t nwcl;
	/* Zombies in deadline order (a ring), found by QPN; reap: destroy at the next tick. */
	struct qpmap zmap;		/* qpn -> struct zombie */
	struct zombie *zombies;
	uint32_t zhead, nzombies;
	uint32_t *reap, nreap;
	struct clients_stats st;	/* worker (clients/qps/mrs counts too) */
};

/* Hot: polled every loop (within POLL_BUDGET); the client need not ring. */
void clients_qp_heat(struct clients *cs, struct cqp *q, uint64_t now);
/*
 * Cold: ask for the doorbell, then look once more (ring.h's no-lost-wakeup
 * pairing).  False, and still hot, if work arrived meanwhile.
 */
bool clients_qp_cool(struct clients *cs, struct cqp *q);
/* The QP leaves the worker's lists; the engine says goodbye to its peer (a zombie). */
void clients_qp_deactivate(struct clients *cs, struct cqp *q, uint64_t now);
void clients_deactivate_all(struct clients *cs, struct client *cl, uint64_t now);
/*
 * The engine's QP table is full: free the slot of a zombie (one already
 * done saying goodbye, else the oldest: its peer learns of the end by its
 * dead-peer timer instead).  False when there is none.
 */
bool clients_zombie_free(struct clients *cs);
/*
 * The worker wakes when client's doorbell rings (and a busy one finds it):
 * 0 or -errno.  Off again before the fd is closed: the client holds the
 * file open too, and epoll forgets an fd only when its file goes.
 */
int clients_doorbell_add(struct clients *cs, struct client *cl);
void clients_doorbell_del(struct clients *cs, struct client *cl);
/* The same for one QP's own doorbell: it wakes the worker for that QP alone. */
int clients_qp_doorbell_add(struct clients *cs, struct cqp *q);

/* ---- the control thread's side: clients_ctl.c and the files below ---- */

/* A worker call's arguments and results (clients_ops.c). */
struct op {
	struct clients *cs;
	struct client *cl;
	struct cqp *q;
	struct engine_qp_attr attr;
	void *map;
	uint64_t len, service_id;
	uint32_t access, lkey, rkey, qpn;
	struct mroc_addr addr;
};

static inline int call(struct clients *cs, int (*fn)(void *, uint64_t), struct op *o)
{
	o->cs = cs;
	return worker_call(cs->worker, fn, o);
}

/* clients_ops.c: run on the worker by call(); 0 or -errno. */
int clients_op_mr_reg(void *arg, uint64_t now);
int clients_op_mr_dereg(void *arg, uint64_t now);
int clients_op_qp_create(void *arg, uint64_t now);
int clients_op_qp_connect(void *arg, uint64_t now);
int clients_op_qp_listen(void *arg, uint64_t now);
int clients_op_qp_destroy(void *arg, uint64_t now);
int clients_op_client_gone(void *arg, uint64_t now);
int clients_op_client_hello(void *arg, uint64_t now);
int clients_op_count_mr(void *arg, uint64_t now);
/* service_id is the daemons' own: logged, -EACCES. */
int clients_reserved(const struct client *cl, const char *what, uint64_t service_id);

/* clients_limits.c (control thread). */
struct uid_count *clients_uid_of(struct clients *cs, uid_t uid);
uint32_t clients_share(const struct clients_limits *lim, uint32_t total, uid_t uid);
bool clients_over_reserve(struct clients *ctl, const struct client *cl, uint32_t held,
		  uint32_t total, const char *what);
int clients_over_share(struct clients *ctl, struct client *cl, const char *what, uint32_t n);
uint32_t clients_uid_count(struct clients *cs, uid_t uid, int delta);

/* clients_pin.c (control thread): 0 or -errno. */
struct stat;
int clients_check_memfd(struct clients *cs, struct client *cl, int fd, uint64_t len,
		struct stat *st);
int clients_sealed_before(struct clients *cs, struct client *cl);
int clients_map_pinned(struct clients *cs, struct client *cl, int fd, uint64_t len, void **out);
int clients_map_again(struct clients *cs, struct client *cl, int fd, const struct stat *st,
	      uint64_t len, void **out);
void clients_anchor_file(struct client *cl, const struct cmr *mr);
void clients_unpin(struct client *cl, void *map, size_t len);

#endif
