/* SPDX-License-Identifier: MIT */
/*
 * A "transfer" workload: one connected QP from a client host to a server
 * host moves total_bytes with a seeded mix of WRITE, WRITE_IMM, SEND,
 * READ and FETCH_ADD work requests, and checks everything a transport promises:
 *
 *  - every completion has status SUCCESS and the right opcode;
 *  - the client's completions come in posting order (wr_id increasing);
 *  - the server's RECV completions come in order, with the right byte_len
 *    and immediate;
 *  - when a completion arrives its data is already in place, and at the end
 *    every destination byte equals its source and nothing else was written.
 *
 * Memory, as the two hosts see it (offsets are the same in every region):
 *   client csrc --WRITE, WRITE_IMM, SEND--> server sdst
 *   client cdst <---------READ------------- server ssrc
 * Each message covers [off, off+len) of the transfer: ops partition it, so
 * every byte of sdst and cdst is either expected data or still zero.  A
 * region no op in the mix uses is not allocated.
 *
 * A FETCH_ADD takes 8 bytes of the transfer but moves none of them: it adds
 * its offset + 1 to the counter word of the server's satom region, and its
 * completion must find the counter's value before it (the sum of the
 * earlier FETCH_ADDs' addends: a QP's atomics are performed in order, each
 * once) in its slot of the client's catom region; at the end the counter
 * must be the sum of them all.
 *
 * The workload owns both hosts' completion callbacks while it exists.
 */
#ifndef MROC_SIM_WORKLOAD_H
#define MROC_SIM_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "simnet.h"

enum wl_op {
	WL_WRITE = 0,
	WL_WRITE_IMM,
	WL_SEND,
	WL_READ,
	WL_FETCH_ADD,			/* weight 0 by default (results of older runs unchanged) */
	WL_OP__COUNT,
};

struct wl_config {
	uint32_t client, server;	/* host indexes */
	uint64_t total_bytes;
	uint32_t msg_bytes;		/* per work request (the last may be shorter) */
	uint32_t msg_min;		/* > 0: sizes uniform in [msg_min, msg_bytes] */
	uint32_t outstanding;		/* send WRs kept in flight */
	uint32_t recv_ahead;		/* RECVs kept posted; 0 = 2 * outstanding */
	uint32_t mix[WL_OP__COUNT];	/* relative weights of the op types */
	uint8_t mode;			/* enum mroc_mode */
	uint8_t npaths;
	uint64_t seed;			/* op sequence, data pattern */
	uint64_t service_id;
};

/* 64 MiB in 64 KiB messages, 16 outstanding, equal mix (no atomics), 4 paths, MetaRoCE. */
void wl_config_default(struct wl_config *cfg);

struct wl_result {
	uint64_t ops_total, ops_done;
	uint64_t ops[WL_OP__COUNT];	/* completed, per type */
	uint64_t bytes_done;		/* payload bytes of completed ops */
	uint64_t t_connected;		/* client saw ENGINE_WC_EV_CONNECTED */
	uint64_t t_first_post;
	uint64_t t_last_cqe;		/* last completion on either side */
	double goodput_gbps;		/* bytes / (t_last_cqe - t_first_post) */
	bool done;			/* every op and RECV completed */
	int err;			/* first failure (negative errno), 0 if none */
	char why[320];			/* what the first failure was */
};

struct workload;

/*
 * Allocate and register the four regions, fill the sources, create the QPs
 * and take over both hosts' callbacks.  NULL with errno on failure.
 */
struct workload *wl_create(struct sim *sim, const struct wl_config *cfg);
void wl_destroy(struct workload *wl);

/* Listen on the server, connect from the client; work starts on CONNECTED. */
int wl_start(struct workload *wl);
/* Done, or failed. */
bool wl_finished(const struct workload *wl);
/*
 * Run the simulation until the workload is finished or time_limit.
 * Returns 0 when every op completed and every check passed, else the first
 * failure (-ETIMEDOUT, -EDEADLK, -EIO, ...) with wl_result()->why set.
 */
int wl_run(struct workload *wl, uint64_t time_limit);
/* Byte-exact check of both destinations.  0 or -EIO (why says where). */
int wl_verify_memory(struct workload *wl);

const struct wl_result *wl_result(const struct workload *wl);

/*
 * Several workloads on one host (an incast receiver serving many clients):
 * wl_create makes the workload the callback of both its hosts, so the last
 * one created would see every completion.  A driver that shares a host
 * installs its own callback instead and hands each completion to the
 * workload whose QP it names (cqe->qpn against wl_client_qpn or
 * wl_server_qpn); host says which side it came from.  Returns false, and
 * does nothing, if host is neither of the workload's hosts.
 */
bool wl_cqe(struct workload *wl, uint32_t host, const struct engine_cqe *cqe);

enum wl_buf {
	WL_BUF_CSRC = 0,	/* client: source of WRITE, WRITE_IMM, SEND */
	WL_BUF_CDST,		/* client: READ destination */
	WL_BUF_SDST,		/* server: WRITE, WRITE_IMM, SEND destination */
	WL_BUF_SSRC,		/* server: READ source */
	WL_BUF_SATOM,		/* server: the FETCH_ADD counter (8 bytes at 0) */
};

/* A region's memory (NULL if the mix does not use it), for checking the checker. */
uint8_t *wl_buffer(const struct workload *wl, enum wl_buf which);
uint32_t wl_client_qpn(const struct workload *wl);
uint32_t wl_server_qpn(const struct workload *wl);

#endif
