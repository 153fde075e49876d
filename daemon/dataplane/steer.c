// SPDX-License-Identifier: MIT
/* Which worker owns a packet's QP (see steer.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "engine.h"
#include "links.h"
#include "log.h"
#include "steer.h"

#define SLOT_USED	0x80	/* in owner: the slot holds a key */

/*
 * Writers (the control thread's LISTENs and their ends) take the lock and
 * make seq odd while they change the table; readers (the workers' RX) take
 * no lock: they read seq, the slots, seq again, and look again if a writer
 * was at work meanwhile (a seqlock).  Slots are relaxed atomics so that a
 * read racing a write is defined; the retry throws its result away.
 */
struct steer {
	unsigned n;
	pthread_mutex_t lock;
	_Atomic uint32_t seq;
	_Atomic uint64_t key[STEER_SLOTS];
	_Atomic uint8_t owner[STEER_SLOTS];	/* SLOT_USED | worker, 0 = empty */
};

int steer_create(unsigned nworkers, struct steer **out)
{
	struct steer *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	st->n = nworkers;
	pthread_mutex_init(&st->lock, NULL);
	*out = st;
	return 0;
}

void steer_destroy(struct steer *st)
{
	if (!st)
		return;
	pthread_mutex_destroy(&st->lock);
	free(st);
}

static unsigned slot_of(uint64_t service_id)
{
	return (unsigned)((service_id * 0x9e3779b97f4a7c15ULL) >> 54) & (STEER_SLOTS - 1);
}

static uint8_t owner_at(struct steer *st, unsigned i)
{
	return atomic_load_explicit(&st->owner[i], memory_order_relaxed);
}

static uint64_t key_at(struct steer *st, unsigned i)
{
	return atomic_load_explicit(&st->key[i], memory_order_relaxed);
}

/* The slot of service_id, or STEER_SLOTS. */
static unsigned find(struct steer *st, uint64_t service_id)
{
	unsigned i = slot_of(service_id);

	for (unsigned t = 0; t < STEER_SLOTS; t++, i = (i + 1) & (STEER_SLOTS - 1)) {
		if (!owner_at(st, i))
			break;
		if (key_at(st, i) == service_id)
			return i;
	}
	return STEER_SLOTS;
}

static void write_begin(struct steer *st)
{
	pthread_mutex_lock(&st->lock);
	atomic_store_explicit(&st->seq, atomic_load_explicit(&st->seq, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	atomic_thread_fence(memory_order_release);	/* odd seq before any slot changes */
}

static void write_end(struct steer *st)
{
	atomic_store_explicit(&st->seq, atomic_load_explicit(&st->seq, memory_order_relaxed) + 1,
			      memory_order_release);	/* the slots before the even seq */
	pthread_mutex_unlock(&st->lock);
}

int steer_listen(struct steer *st, uint64_t service_id, unsigned worker)
{
	unsigned i;
	int err = 0;

	write_begin(st);
	i = find(st, service_id);
	if (i < STEER_SLOTS) {
		/* Bound already: by this worker (another QP of its client), or refused. */
		if ((owner_at(st, i) & ~SLOT_USED) != worker)
			err = -EADDRINUSE;
		goto out;
	}
	i = slot_of(service_id);
	for (unsigned t = 0; t < STEER_SLOTS; t++, i = (i + 1) & (STEER_SLOTS - 1)) {
		if (owner_at(st, i))
			continue;
		atomic_store_explicit(&st->key[i], service_id, memory_order_relaxed);
		atomic_store_explicit(&st->owner[i], (uint8_t)(SLOT_USED | worker),
				      memory_order_relaxed);
		goto out;
	}
	err = -ENOSPC;
	pr_warn_rl("steering: %d services listened on: a LISTEN on %#llx refused", STEER_SLOTS,
		   (unsigned long long)service_id);
out:
	write_end(st);
	return err;
}

/*
 * Backward-shift deletion (no tombstones): the entries after the gap that
 * may not stay past it move into it, so every probe still ends at an empty
 * slot and a freed slot is free for good.
 */
void steer_unlisten(struct steer *st, uint64_t service_id)
{
	unsigned i, j;

	write_begin(st);
	i = find(st, service_id);
	if (i == STEER_SLOTS) {
		write_end(st);
		return;
	}
	atomic_store_explicit(&st->owner[i], 0, memory_order_relaxed);
	for (j = (i + 1) & (STEER_SLOTS - 1); owner_at(st, j); j = (j + 1) & (STEER_SLOTS - 1)) {
		unsigned h = slot_of(key_at(st, j));

		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			atomic_store_explicit(&st->key[i], key_at(st, j), memory_order_relaxed);
			atomic_store_explicit(&st->owner[i], owner_at(st, j), memory_order_relaxed);
			atomic_store_explicit(&st->owner[j], 0, memory_order_relaxed);
			i = j;
		}
	}
	write_end(st);
}

static unsigned listener_of(struct steer *st, uint64_t service_id)
{
	for (;;) {
		uint32_t seq = atomic_load_explicit(&st->seq, memory_order_acquire);
		unsigned i, w = 0;

		if (seq & 1)
			continue;	/* a writer is at work: for microseconds */
		i = find(st, service_id);
		if (i < STEER_SLOTS)
			w = owner_at(st, i) & ~SLOT_USED;
		atomic_thread_fence(memory_order_acquire);	/* the slots before seq again */
		if (atomic_load_explicit(&st->seq, memory_order_relaxed) == seq)
			return w;
	}
}

unsigned steer_services(struct steer *st)
{
	unsigned n = 0;

	pthread_mutex_lock(&st->lock);
	for (unsigned i = 0; i < STEER_SLOTS; i++)
		n += !!owner_at(st, i);
	pthread_mutex_unlock(&st->lock);
	return n;
}

unsigned steer_owner(void *ctx, const uint8_t *pkt, uint32_t len)
{
	struct steer *st = ctx;
	uint64_t service_id;
	uint32_t qpn;

	if (engine_pkt_dest(pkt, len, &qpn, &service_id))
		return 0;	/* the engine counts it as malformed */
	if (qpn)
		return qpn % st->n;
	if (!service_id || mrocd_service_reserved(service_id))
		return 0;
	return listener_of(st, service_id);
}
