/* SPDX-License-Identifier: MIT */
/*
 * What differs between the QP modes, behind an ops table: MetaRoCE (mode.c:
 * selective loss detection over the SACK, a retransmit queue, tail-loss
 * probes, spraying over paths) and the RoCEv2 baseline (mode_rocev2.c: one
 * path, the receiver takes only the next PSN, the sender goes back N).  The
 * rest of the engine calls these hooks, never tests the mode.
 */
#ifndef MROC_ENGINE_MODE_H
#define MROC_ENGINE_MODE_H

#include <stdbool.h>
#include <stdint.h>

struct engine;
struct qp;
struct path;
struct rx_path;
struct mroc_data_hdr;

struct mode_ops {
	const char *name;
	uint8_t max_paths;
	bool tail_probe;	/* send tail-loss probes before the RTO proper */
	bool rtx_queue;		/* a lost DSN is queued on its own (else the go-back resends it) */
	bool repath;		/* a path leaves a dead route for a new source port (9.8) */
	/*
	 * The window rules the RoCEv2 baseline was measured with: windows grow
	 * without validation (9.1), every loss burst halves (9.3), no RTO is
	 * undone (9.4).  The yardstick stays where it was.
	 */
	bool classic_window;
	/* Receiver, before the window checks: the sender's floor (may be NULL). */
	void (*rx_floor)(struct rx_path *rp, const struct mroc_data_hdr *d);
	/* Receiver, after them: 0 to take the PSN, else -errno (counted; an ACK or NAK is owed). */
	int (*rx_order)(struct engine *eng, struct qp *qp, struct rx_path *rp, uint32_t psn);
	/* Sender: an ACK on p progressed; declare what it shows lost (may be NULL). */
	void (*detect_loss)(struct engine *eng, struct qp *qp, struct path *p, uint64_t now);
	/* Sender: the receiver says PSN psn of p came out of sequence (may be NULL). */
	void (*on_seq_nak)(struct engine *eng, struct qp *qp, struct path *p, uint32_t psn);
	/* Sender: p timed out; what it had in flight is lost. */
	void (*on_timeout)(struct engine *eng, struct qp *qp, struct path *p);
	/* Sender: DSN d, refused or stalled, goes again; true when it took the rest with it. */
	bool (*resend)(struct engine *eng, struct qp *qp, uint32_t d);
	/* Sender: the path for a new transmission of bytes, or NULL. */
	struct path *(*pick_path)(struct engine *eng, struct qp *qp, uint32_t bytes);
};

extern const struct mode_ops mode_metaroce, mode_rocev2;

/* The ops of enum mroc_mode m, or NULL. */
const struct mode_ops *mode_ops_of(uint8_t m);

#endif
