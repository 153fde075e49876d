/* SPDX-License-Identifier: MIT */
/*
 * The plugin's insides, shared by its files (net.c: connections and
 * transfers; reg.c: registrations; props.c: what getProperties says;
 * versions.c: the v8 .. v12 tables NCCL sees).
 *
 * One process-wide state (struct mnccl): NCCL's v8 .. v10 tables carry no
 * context, so the plugin is a singleton, as every NCCL net plugin is.  One
 * libmroc context serves every comm, so a registration is good on any comm.
 */
#ifndef MROC_NCCL_PLUGIN_H
#define MROC_NCCL_PLUGIN_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <mroc/mroc.h>

#include "net_abi.h"

#define MNCCL_MAX_RECVS		8	/* buffers of one grouped receive (maxRecvs) */
#define MNCCL_MAX_REQS		NCCL_REQS_PER_COMM
/* A send comm keeps a request for every buffer of every receive in flight (README: 32 x maxRecvs). */
#define MNCCL_MAX_SREQS		(MNCCL_MAX_REQS * MNCCL_MAX_RECVS)
#define MNCCL_MAX_MSG		(1u << 30)	/* maxP2pBytes, maxCollBytes: one WRITE */
#define MNCCL_CTS_RECVS		64	/* receives a send comm keeps posted for CTS messages */
/*
 * Small sends (at most MNCCL_EAGER_MAX bytes) are staged: copied into one of the
 * send comm's MNCCL_STAGE_SLOTS slots, their request done at once.  One that
 * finds no CTS goes at once into one of the receive comm's MNCCL_EAGER_SLOTS
 * eager slots (copied out there) instead of waiting a one-way trip for the CTS
 * (comm.h, xfer.c).
 */
#define MNCCL_EAGER_MAX		8192
#define MNCCL_EAGER_SLOTS	32
#define MNCCL_STAGE_SLOTS	32

/* ---- logging (NCCL's logger, when init gave one) ----------------------------------- */

extern nccl_logger_fn mnccl_log;
#define MNCCL_WARN(...)								\
	do {									\
		if (mnccl_log)							\
			mnccl_log(NCCL_LOG_LVL_WARN, ~0ul, __FILE__, __LINE__,	\
				  "NET/mroc: " __VA_ARGS__);			\
	} while (0)
#define MNCCL_INFO(...)								\
	do {									\
		if (mnccl_log)							\
			mnccl_log(NCCL_LOG_LVL_INFO, NCCL_LOG_SUBSYS_NET, __func__,	\
				  __LINE__, "NET/mroc: " __VA_ARGS__);		\
	} while (0)

/* ---- the process-wide state ------------------------------------------------------- */

struct mnccl_props {
	char name[64];			/* "mroc:" and the ports */
	char *pci_path;			/* the first port's PCI device, or NULL (veth) */
	int speed_mbps;			/* the ports' link rates added up */
	float latency_us;		/* measured: half a round trip through mrocd */
	int max_comms;			/* mrocd's QPs per client, less the latency probe's */
};

/* A slot of the comm table (handle.c). */
#define MNCCL_COMM_CHUNK	256
#define MNCCL_COMM_CHUNKS	256	/* 65536 comms open at once */
struct comm;
struct comm_slot {
	struct comm *c;			/* NULL while free */
	uint64_t gen;			/* moves on when the comm closes */
	uint32_t next_free;
};

struct mnccl {
	pthread_mutex_t lock;		/* init/finalize, the registration cache */
	int users;			/* init calls not yet finalized */
	struct mroc_ctx *ctx;
	char addr[INET6_ADDRSTRLEN];	/* this host's mrocd, as peers reach it */
	struct mnccl_props props;
	struct mnccl_reg *regs;		/* the registration cache */
	/* The comms open, by slot (handle.c): NCCL holds handles, so a comm closed or a
	 * request gone names nothing and is refused.  Chunks are never moved or freed. */
	struct comm_slot *chunks[MNCCL_COMM_CHUNKS];
	uint32_t nslots, free_head, free_slots;
	uint32_t req_gen;		/* the last request's generation */
	/* NCCL_MROC_EAGER=0: no staged or eager sends, a CTS for every receive (an A/B); the
	 * listening side's choice, which its handle tells the connecting side. */
	bool no_stage;
};
extern struct mnccl mnccl;

nccl_res mnccl_init(nccl_logger_fn log);
nccl_res mnccl_finalize(void);
nccl_res mnccl_devices(int *ndev);

/* ---- registrations (reg.c) ----------------------------------------------------------- */

/*
 * A registration: an application range [base, base + len) and the mroc region
 * that backs it.  Zero-copy when the range lies in a shared memfd mapping (the
 * region is that memfd, mapped a second time: the same pages); otherwise a
 * bounce region of the same size (copy: the payload is copied in before a send
 * and out after a receive).  Cached and counted: a range inside a cached one
 * takes a reference on it.
 */
struct mnccl_reg {
	uintptr_t base;
	size_t len;
	struct mroc_mr *mr;
	uint64_t mr_off;		/* where base sits in the region */
	bool copy;
	int refs;
	int busy;			/* requests in flight using it: deregMr refuses (atomic) */
	struct mnccl_reg *next;
};

nccl_res mnccl_reg(void *data, size_t size, struct mnccl_reg **out);
nccl_res mnccl_dereg(struct mnccl_reg *r);
void mnccl_reg_drop_all(void);

/* A request in flight uses r (+1), or no longer (-1); r NULL: nothing. */
static inline void mnccl_reg_hold(struct mnccl_reg *r, int d)
{
	if (r)
		__atomic_add_fetch(&r->busy, d, __ATOMIC_RELAXED);
}

/* p's offset in r's region, and the address libmroc knows it by. */
static inline uint64_t mnccl_reg_off(const struct mnccl_reg *r, const void *p)
{
	return r->mr_off + ((uintptr_t)p - r->base);
}

static inline void *mnccl_reg_laddr(const struct mnccl_reg *r, const void *p)
{
	return (char *)mroc_mr_addr(r->mr) + mnccl_reg_off(r, p);
}

static inline bool mnccl_reg_has(const struct mnccl_reg *r, const void *p, size_t size)
{
	uintptr_t a = (uintptr_t)p;

	return a >= r->base && a - r->base <= r->len && r->len - (a - r->base) >= size;
}

/* ---- properties (props.c) ------------------------------------------------------------- */

int mnccl_props_probe(struct mnccl_props *p);
void mnccl_props_free(struct mnccl_props *p);
void mnccl_props_v9(int dev, struct nccl_props_v9 *out);

/* ---- connections and transfers (net.c) ------------------------------------------------ */

nccl_res mnccl_listen(int dev, void *handle, void **listen_comm);
nccl_res mnccl_connect(int dev, void *handle, void **send_comm);
nccl_res mnccl_accept(void *listen_comm, void **recv_comm);
nccl_res mnccl_reg_mr(void *comm, void *data, size_t size, int type, void **mh);
nccl_res mnccl_dereg_mr(void *comm, void *mh);
nccl_res mnccl_isend(void *send_comm, void *data, size_t size, int tag, void *mh, void **req);
nccl_res mnccl_irecv(void *recv_comm, int n, void **data, const size_t *sizes, const int *tags,
		     void **mhs, void **req);
nccl_res mnccl_test(void *req, int *done, int *sizes);
nccl_res mnccl_close_send(void *send_comm);
nccl_res mnccl_close_recv(void *recv_comm);
nccl_res mnccl_close_listen(void *listen_comm);

/* Latency probe (props.c): half the median round trip of 8-byte SENDs through mrocd. */
int mnccl_probe_latency(struct mroc_ctx *ctx, const char *addr, float *us);

#endif
