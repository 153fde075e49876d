// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>

#include "pktpool.h"

int pktpool_init(struct pktpool *p, uint32_t buf_cap, uint32_t per_chunk)
{
	*p = (struct pktpool){ 0 };
	/* Cache-line multiples keep neighbouring buffers from sharing lines. */
	p->buf_cap = (buf_cap + 63) & ~63u;
	p->per_chunk = per_chunk ? per_chunk : 1024;
	return 0;
}

void pktpool_fini(struct pktpool *p)
{
	for (uint32_t i = 0; i < p->nchunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	*p = (struct pktpool){ 0 };
}

static int pktpool_grow(struct pktpool *p)
{
	size_t hdrs = (size_t)p->per_chunk * sizeof(struct sim_pkt);
	void **chunks;
	uint8_t *mem, *data;
	struct sim_pkt *pkts;

	chunks = realloc(p->chunks, (p->nchunks + 1) * sizeof(*chunks));
	if (!chunks)
		return -ENOMEM;
	p->chunks = chunks;
	hdrs = (hdrs + 63) & ~(size_t)63;
	mem = aligned_alloc(64, hdrs + (size_t)p->per_chunk * p->buf_cap);
	if (!mem)
		return -ENOMEM;
	p->chunks[p->nchunks++] = mem;
	pkts = (struct sim_pkt *)mem;
	data = mem + hdrs;
	for (uint32_t i = 0; i < p->per_chunk; i++) {
		pkts[i].data = data + (size_t)i * p->buf_cap;
		pkts[i].next = p->free;
		p->free = &pkts[i];
	}
	p->total += p->per_chunk;
	return 0;
}

struct sim_pkt *pktpool_get(struct pktpool *p, uint8_t ev_type)
{
	struct sim_pkt *pkt;
	uint8_t *data;

	if (!p->free && pktpool_grow(p))
		return NULL;
	pkt = p->free;
	p->free = pkt->next;
	data = pkt->data;
	*pkt = (struct sim_pkt){ .data = data };
	evq_event_init(&pkt->ev, ev_type);
	p->in_use++;
	return pkt;
}

void pktpool_put(struct pktpool *p, struct sim_pkt *pkt)
{
	pkt->next = p->free;
	p->free = pkt;
	p->in_use--;
}
