/* SPDX-License-Identifier: MIT */
/*
 * mroc-perf: perftest-style benchmarks over libmroc.  What the files share:
 * the tests, the options, one session's state (struct perf) and the calls
 * between main.c (options), session.c (set-up, the conversation over the
 * side channel, the per-size loop), bw.c and lat.c (the measured loops),
 * cq.c (completions, sleeping, the peer's messages), oob.c (TCP side
 * channel), verify.c, stats.c and report.c (pure helpers).
 */
#ifndef MROC_PERF_H
#define MROC_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <mroc/mroc.h>

#include "cpu.h"
#include "mroc_util.h"
#include "oob.h"
#include "report.h"
#include "stats.h"
#include "verify.h"

enum perf_test {
	PERF_WRITE_BW = 0,
	PERF_WRITE_LAT,
	PERF_SEND_BW,
	PERF_SEND_LAT,
	PERF_READ_BW,
	PERF_READ_LAT,
	PERF_ATOMIC_BW,
	PERF_ATOMIC_LAT,
	PERF_NTESTS
};

enum perf_verb { PERF_WRITE, PERF_SEND, PERF_READ, PERF_ATOMIC };

struct perf_test_info {
	const char *name;		/* "write_bw" */
	const char *title;		/* perftest's: "RDMA_Write BW Test" */
	enum perf_verb verb;
	bool lat;
};

extern const struct perf_test_info perf_tests[PERF_NTESTS];

#define PERF_MAX_SIZE		(256u << 20)	/* -s limit */
#define PERF_ATOMIC_SIZE	8u		/* atomics: one 8-byte word, always */
#define PERF_ALL_MIN		2u		/* -a: 2 .. 8 MiB, as perftest */
#define PERF_ALL_MAX		(8u << 20)
#define PERF_SLOTS_MAX		1024u		/* distinct message slots per region */
#define PERF_QP_BUDGET		(32u << 20)	/* bytes of region per QP, at most ... */
#define PERF_BUDGET		(256u << 20)	/* ... and for all QPs together */
#define PERF_MAX_DEPTH		1024u		/* mrocd's default max_sq_depth / max_rq_depth */
/*
 * read_bw -b: READs in flight per QP and side.  mrocd's engine sends a QP's
 * messages in order, READ responses included, and holds a READ request while
 * 16 are outstanding (MROC_MAX_RD): with more, both sides' heads wait for
 * responses queued behind the other's.
 */
#define PERF_BIDIR_READS	16u
#define PERF_LAT_RECVS		4u		/* receives kept posted in send_lat */
#define PERF_WC_BATCH		32
#define PERF_CONNECT_MS		10000
#define PERF_OOB_MS		30000		/* an answer on the side channel */
#define PERF_PEER_CHECK_NS	10000000ull	/* look at the side channel every 10 ms */
#define PERF_SETTLE_NS		2000000000ull	/* write_lat --verify: bytes behind the last one */
#define PERF_REASON_MS		500		/* a QP torn down: wait this long for the peer's why */

/* Options: the client's decide the test; the server takes them from PARAMS. */
struct perf_opts {
	enum perf_test test;
	const char *server;		/* NULL: this is the server */
	uint16_t port;
	uint64_t size;
	bool all;
	uint64_t iters;
	unsigned int duration_s;
	unsigned int qps;
	unsigned int paths;		/* 0: mrocd's default */
	uint8_t mode;			/* enum mroc_qp_mode */
	unsigned int tx_depth, rx_depth, cq_mod;
	bool verify, json, sleep;
	int verbose;
	const char *socket_path;	/* NULL: libmroc's default (--mrocd-socket) */
	bool gbits;			/* --report_gbits: Gb/sec, else MB/sec */
	bool run_infinitely;		/* --run_infinitely: -D runs again until interrupted */
	bool bidir;			/* -b: both sides send (bandwidth tests) */
	bool cswap;			/* -A CMP_AND_SWAP (else FETCH_AND_ADD) */
	bool cpu_util;			/* --cpu_util: CPU used during each run */
	const char *out_json;		/* --out_json(_file): the JSON document also goes there */
	const char *mroc_addr;		/* server: its mrocd's address; client: override */
	unsigned int timeout_s;		/* no progress for this long is an error */
	unsigned int slots;		/* --slots: messages per QP's region, at most (0: no cap) */
	unsigned int given;		/* PERF_GIVEN_*: set on the command line */
};

#define PERF_GIVEN_SIZE		0x01
#define PERF_GIVEN_ITERS	0x02
#define PERF_GIVEN_QPS		0x04
#define PERF_GIVEN_DEPTH	0x08
#define PERF_GIVEN_OTHER	0x10	/* -a, -D, --paths, --mode, -r, -Q, --verify */

struct perf_qp {
	unsigned int idx;
	struct mroc_qp *qp;
	struct mroc_mr *mr;
	uint8_t *buf;			/* the region, mapped */
	size_t len;
	uint32_t lkey;
	struct oob_qp local, remote;
	/* send queue: posted, and done (a signaled completion completes all before it) */
	uint64_t posted, completed;
	/* receive queue: posted in all, and completed in this size's run */
	uint64_t recv_posted, recv_done, received;
	unsigned int slots, rslots;	/* messages of this size in the local / remote region */
	/* completions polled while sleeping, handled next */
	struct mroc_wc wc[PERF_WC_BATCH];
	int nwc, wcpos;
};

struct perf {
	const struct perf_opts *o;
	bool server;
	struct oob_params p;		/* the test, as agreed */
	const struct perf_test_info *t;
	char title[64];			/* the report's (atomics: with the operation) */
	struct mroc_ctx *ctx;
	struct oob oob;
	struct report rep;
	struct report rep_json;		/* --out_json: the same rows as a JSON document */
	FILE *json_file;		/* NULL: no --out_json */
	struct perf_qp *qp;
	unsigned int nqp;
	int epfd;			/* cq_wait's epoll set (several QPs), -1 until the first sleep */
	char socket_path[OOB_TEXT];	/* the one tried, for messages */
	char mrocd[OOB_TEXT];		/* the server mrocd's address */
	uint64_t service_id;
	uint64_t max_size;		/* largest message of the run */
	size_t region_len;		/* per QP */
	unsigned int recv_slots;	/* receives per QP (send tests) */
	/* this size */
	uint64_t size;
	uint64_t iters;			/* 0: duration_s */
	unsigned int duration_s;
	struct samples lat;
	/* the client's DONE, when the server got it during its loop */
	bool done_seen;
	struct oob_done done;
	uint64_t next_peer_check;
	bool oob_fired;			/* cq_wait_fired's last wait saw the side channel readable */
	/* the first error: what is printed, sent to the peer and put in the JSON */
	bool failed, peer_failed;
	uint64_t stall_told;		/* the last_progress of a stall perf_stalled told of at half time */
	char err[OOB_TEXT];
	struct cpu_sample cpu0;		/* --cpu_util: at the start of this size's run */
	struct cpu_util cpu;		/* ... and over it */
};

/* Verify stream of (size, QP, direction 0 = client's data, 1 = server's). */
static inline uint64_t perf_stream(uint64_t size, unsigned int qp, unsigned int dir)
{
	return size << 12 | (uint64_t)qp << 1 | dir;
}

/* Distinct messages of size bytes a region of len bytes holds (at least 1). */
static inline unsigned int perf_slots(uint64_t len, uint64_t size)
{
	uint64_t n = size ? len / size : 1;

	return n < 1 ? 1 : n > PERF_SLOTS_MAX ? PERF_SLOTS_MAX : (unsigned int)n;
}

/* main.c */
const struct perf_test_info *perf_test_find(const char *name);

/* session.c */
/* 0, or -errno with the reason in why. */
int perf_params_check(const struct oob_params *p, char *why, size_t n);
int perf_client(const struct perf_opts *o);
int perf_server(const struct perf_opts *o);
/* Record the first error (printed to stderr at once); returns err. */
int perf_fail(struct perf *pf, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* cq.c */
/* Completions of q: the stash first; errors and events end the test (negative return). */
int cq_poll(struct perf *pf, struct perf_qp *q, struct mroc_wc *wc, int max);
/* Sleep until a completion on any QP or a message on the side channel, at most timeout_ms. */
int cq_wait(struct perf *pf, int timeout_ms);
/*
 * The QPs whose armed completion channel fired (each acknowledged, so
 * disarmed) into fired[], at most max; waits up to timeout_ms (0: a look)
 * for one, or for the side channel (then pf->oob_fired).  How many, or < 0
 * (the test ends).
 */
int cq_wait_fired(struct perf *pf, int timeout_ms, unsigned int *fired, unsigned int max);
/* Every PERF_PEER_CHECK_NS: an ERROR from the peer fails, a DONE is kept (server). */
int perf_peer_check(struct perf *pf, uint64_t now);
/* The peer's next message (an ERROR fails); timeout_ms < 0: no limit. */
int perf_recv(struct perf *pf, struct oob_msg *m, int timeout_ms);
/* Wait for the peer's message of type want (ERROR fails); timeout_ms < 0: no limit. */
int perf_expect(struct perf *pf, uint16_t want, struct oob_msg *m, int timeout_ms);
/* Post one work request; -EAGAIN when the queue is full, other errors end the test. */
int perf_post_send(struct perf *pf, struct perf_qp *q, const struct mroc_send_wr *wr);
int perf_post_recv(struct perf *pf, struct perf_qp *q, uint64_t wr_id, void *addr, uint32_t len);
/* Wait until every signaled send of every QP completed (end of a run). */
int perf_drain(struct perf *pf, uint64_t timeout_ns);
/*
 * Progress watchdog: fails when now - last > --timeout; at half of it, says
 * so once on stderr (what it waits for, while the QPs and mrocd's state can
 * still be looked at: the e2e tests take mrocd's state then).
 */
int perf_stalled(struct perf *pf, uint64_t now, uint64_t last, const char *what);
/* A mismatch found by verify_check, as the test's error. */
int perf_mismatch(struct perf *pf, unsigned int qp, const struct verify_mismatch *m, size_t len);

/* bw.c */
int bw_client(struct perf *pf, struct bw_result *res);
/* -b send_bw, after this side's sends: re-post receives until the peer's messages are all in. */
int bw_recv_rest(struct perf *pf);
/* Server side of a bandwidth run; *res is what the server measured (send_bw) or nothing. */
int bw_server(struct perf *pf, struct bw_result *res, bool *measured);
int bw_prepare(struct perf *pf);

/* atomic.c */
bool perf_is_cswap(const struct perf *pf);
/* Opcode, operands and remote offset of atomic seq of a QP (message seq returns seq). */
void atomic_wr(const struct perf *pf, uint64_t seq, struct mroc_send_wr *wr);
/* The value atomic seq returned into res, checked (0, or the test fails). */
int atomic_check_result(struct perf *pf, struct perf_qp *q, uint64_t seq, const uint8_t *res);
/* Server, before a run: every target word to 0. */
void atomic_prepare(struct perf *pf);
/* Server, after the client's DONE: each target word equals the QP's count of atomics. */
int atomic_check_counters(struct perf *pf);

/* lat.c */
int lat_client(struct perf *pf, struct lat_stats *st);
int lat_server(struct perf *pf, struct lat_stats *st, bool *measured);
int lat_prepare(struct perf *pf);

#endif
