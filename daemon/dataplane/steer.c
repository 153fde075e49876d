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

#define STEER_SLOTS	1024	/* services listened on; power of two */
#define SLOT_USED	0x80	/* in owner: the slot holds a key */

struct steer {
	unsigned n;
	pthread_mutex_t lock;		/* writers (workers' LISTENs) */
	uint64_t key[STEER_SLOTS];	/* written once, before its owner */
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

void steer_listen(struct steer *st, uint64_t service_id, unsigned worker)
{
	unsigned i = slot_of(service_id);

	pthread_mutex_lock(&st->lock);
	for (unsigned t = 0; t < STEER_SLOTS; t++, i = (i + 1) & (STEER_SLOTS - 1)) {
		uint8_t o = atomic_load_explicit(&st->owner[i], memory_order_relaxed);

		if (o && st->key[i] != service_id)
			continue;
		if (!o)
			st->key[i] = service_id;
		atomic_store_explicit(&st->owner[i], (uint8_t)(SLOT_USED | worker),
				      memory_order_release);
		pthread_mutex_unlock(&st->lock);
		return;
	}
	pthread_mutex_unlock(&st->lock);
	pr_warn_rl("steering: %d services listened on: connection requests for %#llx go to "
		   "worker 0", STEER_SLOTS, (unsigned long long)service_id);
}

static unsigned listener_of(struct steer *st, uint64_t service_id)
{
	unsigned i = slot_of(service_id);

	for (unsigned t = 0; t < STEER_SLOTS; t++, i = (i + 1) & (STEER_SLOTS - 1)) {
		uint8_t o = atomic_load_explicit(&st->owner[i], memory_order_acquire);

		if (!o)
			break;
		if (st->key[i] == service_id)
			return o & ~SLOT_USED;
	}
	return 0;
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
