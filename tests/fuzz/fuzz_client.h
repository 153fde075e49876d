/* SPDX-License-Identifier: MIT */
/*
 * fuzz_client's input: records, each starting with its kind.
 *
 *   FC_MSG   u8 kind, u8 nfds (0..3), u8 fd kinds (2 bits each, FC_FD_*),
 *            u8 len, len bytes: one control message (libclient/abi.h)
 *   FC_RING  u8 kind, u8 qp, u8 ring (0 SQ, 1 RQ, 2 CQ), u8 advance,
 *            FC_ENTRY bytes: written at the ring's producer (SQ, RQ) or
 *            consumer (CQ) position, which then moves by advance; the worker polls
 *   FC_CQE   u8 kind, u8 qp, struct engine_cqe: a completion from the engine
 *            for that QP (its qpn filled in)
 *   FC_TICK  u8 kind, u8 ms: the clock moves; the worker's timers and sleep hooks run
 *
 * qp indexes the QPs created so far (modulo their number), and so does an
 * MR_DEREG's key below 16 the regions registered so far.  FC_FD_MEMFD is
 * a populated memfd, every second one of an input the one before again (so
 * regions of one file, and its registration again, are reached).
 */
#ifndef MROC_FUZZ_CLIENT_H
#define MROC_FUZZ_CLIENT_H

enum { FC_MSG, FC_RING, FC_CQE, FC_TICK, FC__KINDS };
enum { FC_FD_EVENTFD, FC_FD_MEMFD, FC_FD_RING, FC_FD_PIPE };

#define FC_ENTRY	64	/* bytes of any ring entry, and then some */
#define FC_MEMFD_LEN	65536

/* gen_seeds: a libmroc session's conversation, and a few variations. */
void client_seeds(const char *outdir);

#endif
