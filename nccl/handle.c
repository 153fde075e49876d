// SPDX-License-Identifier: MIT
/*
 * What NCCL holds: handles, never our pointers.  A comm is a slot of a table and
 * that slot's generation; a request is its comm's slot, its own index in the
 * comm and a process-wide generation it took when posted.  A closed comm (its
 * slot's generation moved on) or a request completed, failed or gone with its
 * comm (its generation is no longer the request's) names nothing: every call
 * given one refuses it (ncclInvalidArgument) instead of reading freed memory or
 * answering for whatever reused it.
 *
 *   comm handle      gen:48 | slot:16          gen >= 1, so never NULL
 *   request handle   gen:32 | index:16 | slot:16
 *
 * The table grows by chunks that are never moved or freed (until the process
 * ends), so a lookup takes no lock: comms are created and closed under
 * mnccl.lock, and only NCCL calling close and isend on one comm at once, from
 * two threads, could free a comm a lookup has just found (NCCL never does).
 */
#include <errno.h>
#include <stdlib.h>

#include "comm.h"

static_assert(sizeof(void *) == 8, "handles are 64-bit");
static_assert(MNCCL_MAX_SREQS <= 0x10000 && MNCCL_MAX_REQS <= 0x10000, "index:16");
static_assert(MNCCL_COMM_CHUNKS * MNCCL_COMM_CHUNK <= 0x10000, "slot:16");

static struct comm_slot *slot_at(uint32_t i)
{
	struct comm_slot *ch = __atomic_load_n(&mnccl.chunks[i / MNCCL_COMM_CHUNK],
					       __ATOMIC_ACQUIRE);

	return ch ? &ch[i % MNCCL_COMM_CHUNK] : NULL;
}

int comm_track(struct comm *c)
{
	struct comm_slot *s = NULL;
	uint32_t i;
	int err = 0;

	pthread_mutex_lock(&mnccl.lock);
	if (mnccl.free_slots) {
		i = mnccl.free_head;
		s = slot_at(i);
		mnccl.free_head = s->next_free;
		mnccl.free_slots--;
	} else if (mnccl.nslots < MNCCL_COMM_CHUNKS * MNCCL_COMM_CHUNK) {
		i = mnccl.nslots;
		if (i % MNCCL_COMM_CHUNK == 0) {
			struct comm_slot *ch = calloc(MNCCL_COMM_CHUNK, sizeof(*ch));

			if (ch)
				__atomic_store_n(&mnccl.chunks[i / MNCCL_COMM_CHUNK], ch,
						 __ATOMIC_RELEASE);
		}
		s = slot_at(i);
		if (s) {
			mnccl.nslots++;
			s->gen = 1;
		}
	}
	if (s) {
		c->slot = i;
		c->handle = (void *)(uintptr_t)(s->gen << 16 | i);
		__atomic_store_n(&s->c, c, __ATOMIC_RELEASE);
	} else {
		err = -ENOMEM;		/* 65536 comms open, or no memory */
	}
	pthread_mutex_unlock(&mnccl.lock);
	return err;
}

void comm_untrack(struct comm *c)
{
	struct comm_slot *s;

	if (!c->handle)
		return;
	pthread_mutex_lock(&mnccl.lock);
	s = slot_at(c->slot);
	__atomic_store_n(&s->c, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&s->gen, s->gen + 1, __ATOMIC_RELEASE);
	s->next_free = mnccl.free_head;
	mnccl.free_head = c->slot;
	mnccl.free_slots++;
	c->handle = NULL;
	pthread_mutex_unlock(&mnccl.lock);
}

/* The comm of slot i if its generation is gen, else NULL. */
static struct comm *comm_at(uint32_t i, uint64_t gen)
{
	struct comm_slot *s = i < MNCCL_COMM_CHUNKS * MNCCL_COMM_CHUNK ? slot_at(i) : NULL;
	struct comm *c;

	if (!s || __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != gen)
		return NULL;
	c = __atomic_load_n(&s->c, __ATOMIC_ACQUIRE);
	return c && c->handle == (void *)(uintptr_t)(gen << 16 | i) ? c : NULL;
}

struct comm *comm_get(const void *handle, enum comm_kind kind)
{
	uint64_t h = (uintptr_t)handle;
	struct comm *c = h ? comm_at(h & 0xffff, h >> 16) : NULL;

	return c && c->kind == kind ? c : NULL;
}

void req_name(struct comm *c, struct req_head *h, unsigned int idx)
{
	uint32_t gen;

	/* 0 names nothing: skipped when the counter wraps. */
	while (!(gen = __atomic_add_fetch(&mnccl.req_gen, 1, __ATOMIC_RELAXED)))
		;
	h->gen = gen;
	h->handle = (void *)(uintptr_t)((uint64_t)gen << 32 | (uint64_t)idx << 16 | c->slot);
}

struct req_head *req_get(const void *handle)
{
	uint64_t h = (uintptr_t)handle;
	uint32_t i = h & 0xffff, idx = (h >> 16) & 0xffff, gen = (uint32_t)(h >> 32);
	struct comm_slot *s = gen && i < MNCCL_COMM_CHUNKS * MNCCL_COMM_CHUNK ? slot_at(i) : NULL;
	struct comm *c = s ? __atomic_load_n(&s->c, __ATOMIC_ACQUIRE) : NULL;
	struct req_head *r;

	if (!c)
		return NULL;
	if (c->kind == COMM_SEND && idx < MNCCL_MAX_SREQS)
		r = &c->sreqs[idx].h;
	else if (c->kind == COMM_RECV && idx < MNCCL_MAX_REQS)
		r = &c->rreqs[idx].h;
	else
		return NULL;
	return r->used && r->gen == gen && r->c == c ? r : NULL;
}
