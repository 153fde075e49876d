/* SPDX-License-Identifier: MIT */
/*
 * libmroc clients on the daemon side.  The control thread takes each
 * client's messages (abi.h): it maps the memory and ring regions the client
 * sends, and has the worker register them with the engine (worker_call).
 * The worker then polls the client QPs' SQ and RQ rings (a bounded number
 * per loop: busy QPs round-robin, idle ones only once a doorbell rings for
 * them, see clients_priv.h), validates each work request before it
 * reaches the engine, and writes completions into the client's CQ ring.
 *
 * Nothing a client writes is trusted: indices, lengths, keys, offsets and
 * opcodes are checked; a bad work request completes with MROC_WC_BAD_WR
 * (or the engine's error), a client that corrupts its rings or keeps
 * misbehaving is disconnected, and a client that goes away is cleaned up
 * (QPs disconnected so peers hear of it, regions deregistered and unmapped)
 * while the daemon and the other clients carry on.
 */
#ifndef MROCD_CLIENTS_H
#define MROCD_CLIENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "engine.h"

struct clients;
struct peers;
struct worker;

/*
 * The clients' settings (limits.*, network.allow_loopback, transport.paths
 * and transport.mode): set by clients_set_limits, on the control thread, at
 * start and by the daemon's reload hook (max_per_uid and allow_loopback are
 * not [reload] keys: they keep their start-up values).  New clients get arrays for max_qps and max_mrs;
 * live ones keep theirs, so a higher per-client limit reaches new clients
 * and a lower one every client's next QP or region.  default_paths and
 * default_mode are those of QPs whose application leaves them to mrocd
 * (paths 0, mode MROC_QP_DEFAULT).
 */
struct clients_limits {
	uint32_t max_clients, max_qps, max_mrs;	/* max_qps/mrs: per client */
	uint32_t max_per_uid;			/* clients of one user */
	bool allow_loopback;			/* QP_CONNECT to 127/8, ::1 */
	uint64_t max_mr_bytes;
	uint64_t max_locked_bytes;		/* regions and rings, pinned (clients_ctl.c) */
	uint32_t max_sq_depth, max_rq_depth;
	uint32_t default_paths;
	uint8_t default_mode;			/* enum mroc_mode */
	/*
	 * One user's share, in percent (0: 100), of max_clients, of the
	 * engine's QP table (max_total_qps) and of its region table
	 * (total_mrs): at least one of each (#24 item 12).
	 */
	uint32_t uid_share;
	uint32_t total_mrs;
	/*
	 * Of each of those tables, the percent only administrators may take
	 * (0: none): clients that are not hold the rest between them (#24 item
	 * 12: several users, or one person with several uids).
	 */
	uint32_t admin_reserve;
	/*
	 * Each client's control requests after HELLO (limits.ctl_rate_per_client,
	 * ctl_burst_per_client): ctl_rate a second, ctl_burst at once; 0 rate:
	 * no budget.  Most are a synchronous call into the worker, which stops
	 * the data path of every client of that worker meanwhile.
	 */
	uint32_t ctl_rate, ctl_burst;
};

/*
 * One per worker, over its engine and peer table; a client and all its QPs
 * and regions live on the worker whose clients_open took it.  max_total_qps:
 * the engine's QP table (limits.max_qps, fixed).  share: NULL for the first
 * worker's; the others' give it, whose limits, client counts per user and
 * client ids (protection domains) they all use.
 */
struct clients *clients_create(struct engine *eng, struct peers *peers, uint32_t max_total_qps,
			       const struct clients_limits *lim, struct clients *share);
/* Control thread, on the first worker's (share). */
void clients_set_limits(struct clients *cs, const struct clients_limits *lim);
/*
 * The worker exists only after the engine: set it before the control loop
 * runs.  steer (NULL with one worker): where LISTENs steer connection requests.
 */
struct steer;
void clients_set_worker(struct clients *cs, struct worker *w, unsigned widx, struct steer *steer);
void clients_destroy(struct clients *cs);

/* Control thread (ctl.c callbacks); cs: the worker's to put the client on; msg and close find it. */
/* admin: an administrator (ctl.h's ctl_caller), not held to limits.admin_reserve. */
void *clients_open(void *cs, int fd, const struct ucred *cred, bool admin);
/* True once the client is established (its HELLO accepted). */
bool clients_msg(void *cs, void *client, const void *msg, size_t len, int *fds, int nfds,
		 void *reply, size_t *reply_len);
void clients_close(void *cs, void *client);
/*
 * After a message of client: ns until its request budget allows the next
 * (limits.ctl_rate_per_client): ctl.c reads nothing more of it until then.
 * 0: at once.  A wait is counted (clients.ctl_deferred).
 */
uint64_t clients_wait_ns(void *client);
/* The index of the worker a client lives on (clients_set_worker's widx). */
unsigned clients_worker(const void *client);

/* Worker thread (worker.c hooks). */
int clients_poll(void *cs, uint64_t now);
bool clients_on_cqe(struct clients *cs, const struct engine_cqe *c, uint64_t now);
/* The fds to sleep on: one, the epoll set of every doorbell. */
int clients_fds(void *cs, int *fds, int max);
/* It is readable: take the doorbells (the worker does not read the fd). */
void clients_fd_ready(void *cs, int i);
bool clients_may_sleep(void *cs);
/* A busy-poll turn of the worker found nothing: look at the doorbells; true if one rang. */
bool clients_idle(void *cs, uint64_t now);
/* End of a worker loop: signal the completion channels of this loop's completions. */
void clients_flush(void *cs);
uint64_t clients_tick(struct clients *cs, uint64_t now);

struct clients_stats {
	uint32_t clients, qps, mrs;
	uint32_t qps_hot;			/* polled every loop (the others wait for a doorbell) */
	/*
	 * Of qps, those whose send queue the worker has taken a work request
	 * from: a start-up's progress in a counter (bench-scale waits on it
	 * instead of a per-QP snapshot of every path, issue #22).
	 */
	uint32_t qps_sending;
	uint64_t opened, closed, kicked;	/* kicked: disconnected for misbehaving */
	uint64_t wrs, bad_wrs, cqes, cq_overflows;
	uint64_t cq_signals;			/* completion channels signalled (armed clients) */
	uint64_t cq_signal_calls;		/* system calls that took (batched per loop) */
	uint64_t cq_signal_failed;		/* of cq_signals, not signalled (evfd.h): a sleeper not woken */
	uint64_t doorbells;			/* doorbell rings the worker took */
	uint64_t doorbell_calls;		/* epoll_waits that took them (one per look) */
	uint64_t doorbell_qps;			/* QPs looked at for them */
	uint64_t rings_stranded;		/* cold QPs' work no doorbell brought in a sweep (SWEEP_NS) */
	uint64_t listen_refused;		/* LISTENs on another client's service (EADDRINUSE) */
	uint64_t share_refused;			/* QPs, regions over a user's share (EDQUOT) */
	uint64_t reserve_refused;		/* clients, QPs, regions: administrators' reserve */
	uint64_t unpopulated_refused;		/* regions, rings with pages the client never allocated (ENODATA) */
	uint64_t seal_refused;			/* regions, rings whose memfd mrocd could not seal against punching (EPERM) */
	uint64_t ctl_deferred;			/* waits of clients over their request budget (clients_wait_ns) */
	uint64_t zombies_cut;			/* zombies freed early: the QP table was full */
	uint32_t services;			/* service ids bound by clients now */
};
/* Worker thread. */
void clients_get_stats(struct clients *cs, struct clients_stats *out);
/* Control thread: bytes pinned (locked in mrocd's mapping) for every client. */
uint64_t clients_locked_bytes(const struct clients *cs);

/* One user's clients on a worker (what a user who is no administrator sees, admin.c). */
struct clients_uid_stats {
	uint32_t clients, qps, mrs;
	uint64_t locked_bytes, wrs, bad_wrs, cqes, cq_overflows;
};
/* Worker thread, the control thread waiting (worker_call): adds uid's clients into out. */
void clients_uid_stats(const struct clients *cs, uid_t uid, struct clients_uid_stats *out);

/* Who holds QP qpn (its process, from SO_PEERCRED at connect). */
struct clients_owner {
	pid_t pid;
	uid_t uid;
	uint32_t client;			/* the client's id (mrocd's log names it) */
	/*
	 * Its rings as shared memory says now (qp -d: a stalled client is told
	 * from a stalled daemon by these): producer and consumer indices, the
	 * flags words (abi.h), and whether the worker polls it every loop.
	 */
	struct {
		uint32_t sq_prod, sq_cons, rq_prod, rq_cons, cq_prod, cq_cons;
		uint32_t sq_flags, rq_flags, cq_flags;
		bool hot;
	} rings;
};
/* Worker thread: 0, or -ENOENT when no client holds it (mrocd's own QPs). */
int clients_qp_owner(const struct clients *cs, uint32_t qpn, struct clients_owner *out);

#endif
