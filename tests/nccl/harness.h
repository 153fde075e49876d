/* SPDX-License-Identifier: MIT */
/*
 * The NCCL-like harness's shared pieces: a transport with NCCL's net
 * semantics (hnet.c: a net plugin dlopened by path, any version 8 .. 12;
 * tcp_net.c: kernel TCP, the equivalent of NCCL's socket transport;
 * fi_net.c: a libfabric provider's tagged messages, mroc's or another), the
 * side channel between ranks (files in a folder every rank sees), buffers
 * (shared memfd or malloc) and the ring collectives (ring.c).
 */
#ifndef MROC_NCCL_HARNESS_H
#define MROC_NCCL_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net_abi.h"

#define H_MAX_RECVS	8

/* A transport as NCCL sees one, its calls reduced to one signature set. */
struct hnet {
	const char *what;			/* "plugin v12", "tcp" */
	int version;				/* the plugin's table version, 0 for tcp */
	int (*props)(struct hnet *n, struct nccl_props_v9 *p);
	int (*listen)(struct hnet *n, void *handle, void **lc);
	int (*connect)(struct hnet *n, void *handle, void **sc);
	int (*accept)(struct hnet *n, void *lc, void **rc);
	int (*reg)(struct hnet *n, void *comm, void *data, size_t size, void **mh);
	int (*dereg)(struct hnet *n, void *comm, void *mh);
	int (*isend)(struct hnet *n, void *sc, void *data, size_t size, int tag, void *mh,
		     void **req);
	int (*irecv)(struct hnet *n, void *rc, int nbufs, void **data, size_t *sizes, int *tags,
		     void **mhs, void **req);
	int (*test)(struct hnet *n, void *req, int *done, int *sizes);
	int (*close_send)(struct hnet *n, void *sc);
	int (*close_recv)(struct hnet *n, void *rc);
	int (*close_listen)(struct hnet *n, void *lc);
	void *priv;
};

/* hnet.c: the plugin at path, its ncclNetPlugin_v<version> table, initialized. */
/* What the plugin's comms did, summed from the lines it logs as it closes each (net.c). */
struct h_plugin_stats {
	unsigned recv_comms, recvs, cts, credits;	/* receive comms: CTSs, credit messages */
	unsigned send_comms, sends, eager, staged, zcopy;
};
extern struct h_plugin_stats h_pstats;
int hnet_plugin_open(const char *path, int version, struct hnet *out);
/* tcp_net.c: kernel TCP from this address (the host's own, on the fabric). */
int hnet_tcp_open(const char *addr, struct hnet *out);
/* fi_net.c: an RDM endpoint of the libfabric provider prov ("mroc", "tcp;ofi_rxm"). */
int hnet_fi_open(const char *prov, struct hnet *out);

/* ---- side channel, buffers, checks (nccl_harness.c) ------------------------------ */

struct h_opts {
	int rank, nranks;
	const char *dir;			/* side channel */
	bool memfd;				/* buffers in shared memfds (zero-copy) or malloc */
	int timeout_s;
	const char *trace;			/* --trace: every slice's events to trace.RANK */
	size_t slice;				/* --slice: the ring's pipeline unit (128 KiB) */
	int window;				/* --window: slices in flight each way (8) */
};
extern struct h_opts H;

void h_put(const char *key, int rank, const void *buf, size_t len);
void h_get(const char *key, int rank, void *buf, size_t len);
void h_barrier(const char *name);
void *h_alloc(size_t len);
void h_free(void *p, size_t len);
double h_now(void);
__attribute__((noreturn, format(printf, 1, 2))) void h_die(const char *fmt, ...);
#define H_CHECK(cond, ...) do { if (!(cond)) h_die(__VA_ARGS__); } while (0)

/* Connects a send comm to peer `to` and accepts one from `from` (NCCL's loop). */
struct h_link { void *sc, *rc, *lc; };
void h_connect_pair(struct hnet *n, const char *key, int to, int from, struct h_link *l);
/* Waits for req (test until done): the sizes it reports. */
void h_wait(struct hnet *n, void *req, int *sizes);

/* contract.c: what NCCL relies on, between 2 ranks. */
int h_contract(struct hnet *n);
/* misuse.c: calls made wrongly get their error codes, between 2 ranks. */
int h_misuse(struct hnet *n);

/* ---- ring collectives (ring.c) ------------------------------------------------------ */

enum h_coll { H_ALLREDUCE, H_ALLGATHER };

struct h_ring {
	struct hnet *net;
	struct h_link link;			/* to rank + 1, from rank - 1 */
	size_t slice;				/* pipeline unit */
	int window;				/* slices in flight per direction */
	size_t cap;				/* bytes of buf */
	uint32_t *buf;
	uint8_t *tmp;				/* window x slice */
	void *mh_buf, *mh_tmp;
};

void h_ring_setup(struct h_ring *r, struct hnet *net, size_t cap, size_t slice, int window);
void h_ring_teardown(struct h_ring *r);
/*
 * One collective over bytes (a multiple of 4); returns the seconds it took here.
 * H_RUN_CHECK: fill the buffer first, check every byte after; H_RUN_SYNC: a barrier
 * first (without it, back-to-back runs overlap at the edges, as nccl-tests' do).
 */
#define H_RUN_CHECK	0x1
#define H_RUN_SYNC	0x2
double h_ring_run(struct h_ring *r, enum h_coll coll, size_t bytes, uint32_t seed, unsigned flags);

#endif
