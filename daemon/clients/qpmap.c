// SPDX-License-Identifier: MIT
/* QPN -> pointer hash (see qpmap.h). */
#include <errno.h>
#include <stdlib.h>

#include "qpmap.h"

/* QPNs carry a table index in their low bits and a generation above: mix both. */
static uint32_t hash(uint32_t qpn)
{
	return qpn * 0x9e3779b1u;
}

int qpmap_init(struct qpmap *m, uint32_t cap)
{
	uint32_t size = 8;

	while (size < 2 * (uint64_t)cap)
		size <<= 1;
	m->slot = calloc(size, sizeof(*m->slot));
	if (!m->slot)
		return -ENOMEM;
	m->mask = size - 1;
	m->n = 0;
	m->cap = cap;
	return 0;
}

void qpmap_free(struct qpmap *m)
{
	free(m->slot);
	m->slot = NULL;
}

static struct qpmap_slot *find(const struct qpmap *m, uint32_t qpn)
{
	for (uint32_t i = hash(qpn) & m->mask;; i = (i + 1) & m->mask) {
		if (m->slot[i].qpn == qpn)
			return &m->slot[i];
		if (!m->slot[i].qpn)
			return NULL;
	}
}

int qpmap_add(struct qpmap *m, uint32_t qpn, void *val)
{
	uint32_t i;

	if (!qpn)
		return -EINVAL;
	if (find(m, qpn))
		return -EEXIST;
	if (m->n >= m->cap)
		return -ENOSPC;
	for (i = hash(qpn) & m->mask; m->slot[i].qpn; i = (i + 1) & m->mask)
		;
	m->slot[i] = (struct qpmap_slot){ qpn, val };
	m->n++;
	return 0;
}

int qpmap_set(struct qpmap *m, uint32_t qpn, void *val)
{
	struct qpmap_slot *s = qpn ? find(m, qpn) : NULL;

	if (!s)
		return -ENOENT;
	s->val = val;
	return 0;
}

void *qpmap_get(const struct qpmap *m, uint32_t qpn)
{
	struct qpmap_slot *s = qpn ? find(m, qpn) : NULL;

	return s ? s->val : NULL;
}

void *qpmap_del(struct qpmap *m, uint32_t qpn)
{
	struct qpmap_slot *s = qpn ? find(m, qpn) : NULL;
	uint32_t hole, i;
	void *val;

	if (!s)
		return NULL;
	val = s->val;
	hole = (uint32_t)(s - m->slot);
	/* Backward shift: move up every later entry of the run whose home is not after the hole. */
	for (i = (hole + 1) & m->mask; m->slot[i].qpn; i = (i + 1) & m->mask) {
		uint32_t home = hash(m->slot[i].qpn) & m->mask;

		if (((i - home) & m->mask) >= ((i - hole) & m->mask)) {
			m->slot[hole] = m->slot[i];
			hole = i;
		}
	}
	m->slot[hole] = (struct qpmap_slot){ 0 };
	m->n--;
	return val;
}
