/* SPDX-License-Identifier: MIT */
/*
 * QPN -> pointer, in O(1): the worker finds the client QP of each engine
 * completion without walking thousands of them (issue #10).  Open
 * addressing with linear probing, sized once at twice the capacity so
 * probes stay short, and backward-shift deletion (no tombstones, so a
 * table that churns through create/destroy never degrades).  QPN 0 is never
 * a QP and marks an empty slot.  Single-threaded (the worker's).
 */
#ifndef MROCD_QPMAP_H
#define MROCD_QPMAP_H

#include <stdint.h>

struct qpmap_slot {
	uint32_t qpn;
	void *val;
};

struct qpmap {
	struct qpmap_slot *slot;
	uint32_t mask;
	uint32_t n, cap;	/* entries, most entries allowed */
};

/* Room for cap entries; 0 or -ENOMEM. */
int qpmap_init(struct qpmap *m, uint32_t cap);
void qpmap_free(struct qpmap *m);
/* 0, -EINVAL for QPN 0, -EEXIST, or -ENOSPC past the capacity. */
int qpmap_add(struct qpmap *m, uint32_t qpn, void *val);
/* Replace the value of a present QPN; 0 or -ENOENT. */
int qpmap_set(struct qpmap *m, uint32_t qpn, void *val);
void *qpmap_get(const struct qpmap *m, uint32_t qpn);
/* The value removed, or NULL. */
void *qpmap_del(struct qpmap *m, uint32_t qpn);

#endif
