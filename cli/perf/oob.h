/* SPDX-License-Identifier: MIT */
/*
 * mroc-perf's out-of-band TCP channel between client and server (perftest's
 * "data exchange" socket): parameters, both ends' QP numbers, keys and
 * region sizes, start/stop barriers per message size, --verify checkpoints
 * and results.  The data itself goes over mroc.
 *
 * Frame: magic (u16 0x4d50 "MP"), type (u16), body length (u32), body; all
 * integers big-endian, strings as a u16 length and bytes, doubles as the u64
 * of their IEEE-754 bits.  Encoding and decoding live in oob.c only.
 *
 * Conversation (C = client, S = server):
 *   C: PARAMS          S: SETUP (service id, mrocd address, S's QPs) or ERROR
 *   C: CLIENT_QPS      (C's QPs are connected by then)
 *   per message size:  C: RUN   S: READY
 *                      C: VERIFY first,count   S: VERIFY_ACK   (write --verify, repeated)
 *                      C: DONE (C's result, messages per QP)   S: DONE_ACK (S's result)
 *   C: BYE
 * Either side may send ERROR at any point and then close.
 */
#ifndef MROC_PERF_OOB_H
#define MROC_PERF_OOB_H

#include <stdbool.h>
#include <stdint.h>

#include "stats.h"

#define OOB_VERSION		1
#define OOB_DEFAULT_PORT	18515
#define OOB_MAX_QPS		4096	/* perftest has no limit; 4,096 is the scale we test */
#define OOB_TEXT		256	/* error texts, addresses: bytes with the NUL */

enum oob_type {
	OOB_PARAMS = 1,
	OOB_SETUP,
	OOB_CLIENT_QPS,
	OOB_RUN,
	OOB_READY,
	OOB_VERIFY,
	OOB_VERIFY_ACK,
	OOB_DONE,
	OOB_DONE_ACK,
	OOB_BYE,
	OOB_ERROR,
};

#define OOB_F_VERIFY	0x1
#define OOB_F_ALL	0x2
#define OOB_F_BIDIR	0x4	/* -b: the server sends too (bandwidth tests) */
#define OOB_F_CSWAP	0x8	/* atomic tests: CMP_AND_SWAP, else FETCH_AND_ADD */

/* C -> S: what to run (the client's options decide). */
struct oob_params {
	uint32_t version;		/* OOB_VERSION */
	uint8_t test;			/* enum perf_test */
	uint8_t mode;			/* enum mroc_qp_mode */
	uint8_t paths;			/* 0: daemon default */
	uint8_t flags;			/* OOB_F_* */
	uint32_t qps, tx_depth, rx_depth, cq_mod;
	uint64_t size, iters;
	uint32_t duration_s;
};

struct oob_qp {
	uint32_t qpn, rkey;
	uint64_t region_len;
};

/* SETUP (S -> C) and CLIENT_QPS (C -> S). */
struct oob_qps {
	uint64_t service_id;		/* SETUP: QP i listens on service_id + i */
	char mrocd[OOB_TEXT];		/* SETUP: the server's mrocd address; "" = the TCP peer's */
	uint32_t n;
	struct oob_qp qp[OOB_MAX_QPS];
};

struct oob_run {
	uint64_t size;
	uint64_t iters;			/* per QP; 0 with a duration */
	uint32_t duration_s;
};

struct oob_verify {
	uint64_t first, count;		/* messages first..first+count-1 of every QP */
};

/* READY, VERIFY_ACK, ERROR: a status and, when it is not 0, why. */
struct oob_status {
	int32_t status;			/* 0 or a negative errno */
	char text[OOB_TEXT];
};

enum oob_result_kind { OOB_RES_NONE = 0, OOB_RES_BW, OOB_RES_LAT };

/* DONE (C -> S) and DONE_ACK (S -> C). */
struct oob_done {
	struct oob_status st;
	uint8_t kind;			/* enum oob_result_kind: what this side measured */
	struct bw_result bw;
	uint64_t lat_size, lat_iters;
	struct lat_stats lat;
	uint32_t n;			/* messages sent (C) or received (S) per QP */
	uint64_t msgs[OOB_MAX_QPS];
};

struct oob_msg {
	uint16_t type;			/* enum oob_type */
	union {
		struct oob_params params;
		struct oob_qps qps;	/* SETUP, CLIENT_QPS */
		struct oob_run run;
		struct oob_verify verify;
		struct oob_status status;	/* READY, VERIFY_ACK, ERROR */
		struct oob_done done;	/* DONE, DONE_ACK */
	} u;
};

struct oob {
	int fd;				/* the connection, -1 when closed */
	int lfd;			/* server: the listening socket */
	char peer[OOB_TEXT];		/* the peer's numeric address */
};

void oob_init(struct oob *o);
/* Server: listen on port (IPv6 and IPv4); 0 or -errno. */
int oob_listen(struct oob *o, uint16_t port);
/* Server: wait for one client (timeout_ms < 0: forever), then stop listening. */
int oob_accept(struct oob *o, int timeout_ms);
/* Client: connect, retrying a refused connection for up to retry_ms. */
int oob_connect(struct oob *o, const char *host, uint16_t port, int retry_ms);
void oob_close(struct oob *o);

/* Send one message; 0 or -errno. */
int oob_send(struct oob *o, const struct oob_msg *m);
/* Send a bare message (RUN-less types: BYE) or a status (READY, VERIFY_ACK, ERROR). */
int oob_send_type(struct oob *o, uint16_t type);
int oob_send_status(struct oob *o, uint16_t type, int status, const char *text);
/*
 * Receive one message (timeout_ms < 0: no limit); 0, -ETIMEDOUT, -ECONNRESET
 * when the peer closed, -EPROTO for a malformed message.
 */
int oob_recv(struct oob *o, struct oob_msg *m, int timeout_ms);
/* 1 when a message (or EOF) is waiting, 0 when not, -errno. */
int oob_readable(struct oob *o);
/* The same, waiting up to timeout_ms for one. */
int oob_wait(struct oob *o, int timeout_ms);

const char *oob_type_name(uint16_t type);

#endif
