/* SPDX-License-Identifier: MIT */
/*
 * Packet buffers for the simulator.  Buffers come from chunks allocated when
 * the pool runs dry and are recycled through a free list, so a simulation in
 * steady state allocates nothing per packet; the pool only grows while the
 * number of packets in flight reaches a new high.
 */
#ifndef MROC_SIM_PKTPOOL_H
#define MROC_SIM_PKTPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "eventq.h"

struct sim_link;

/* One packet: the bytes after the UDP header plus what IP/UDP would carry. */
struct sim_pkt {
	struct sim_event ev;	/* arrival at the far end of its link */
	struct sim_pkt *next;	/* free list, or the link's FIFO */
	struct sim_link *link;	/* link it is queued on or travelling over */
	struct sim_link *ingress; /* PFC: the link it came in over, while queued */
	uint8_t *data;
	uint32_t len;		/* bytes after the UDP header */
	uint32_t wire_len;	/* len plus Ethernet/IP/UDP overhead */
	uint32_t src, dst;	/* host indexes (= engine peer handles) */
	uint16_t sport;		/* UDP source port */
	uint8_t path_id;	/* engine's path index */
	uint8_t plane;
	bool ect, ce;		/* IP ECN field */
	bool host_delayed;	/* has waited out its host's receive delay (simnet.c) */
	bool host_polled;	/* ... and its worker's next poll (sim_set_host_rx) */
	uint64_t stamp_at;	/* simulation time its host stamped its arrival, 0 = none */
};

struct pktpool {
	struct sim_pkt *free;
	void **chunks;
	uint32_t nchunks;
	uint32_t buf_cap;	/* bytes of data room per packet */
	uint32_t per_chunk;
	uint64_t total, in_use;
};

/* Returns 0 or -ENOMEM. */
int pktpool_init(struct pktpool *p, uint32_t buf_cap, uint32_t per_chunk);
void pktpool_fini(struct pktpool *p);
/* NULL only when memory is exhausted. */
struct sim_pkt *pktpool_get(struct pktpool *p, uint8_t ev_type);
void pktpool_put(struct pktpool *p, struct sim_pkt *pkt);

#endif
