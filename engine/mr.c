// SPDX-License-Identifier: MIT
/*
 * Memory region table.  Keys carry the slot index in their low bits and a
 * random (rkey) or generation (lkey) part above, so a stale or guessed key
 * misses instead of reaching another region.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

#define MR_IDX_BITS	12
#define MR_IDX_MASK	((1u << MR_IDX_BITS) - 1)

int mr_table_init(struct engine *eng)
{
	eng->mrs = calloc(eng->cfg.max_mrs, sizeof(*eng->mrs));
	eng->mr_gen = calloc(eng->cfg.max_mrs, sizeof(*eng->mr_gen));
	if (!eng->mrs || !eng->mr_gen)
		return -ENOMEM;
	return 0;
}

void mr_table_free(struct engine *eng)
{
	free(eng->mrs);
	free(eng->mr_gen);
}

int engine_mr_register(struct engine *eng, uint64_t pd, void *addr, uint64_t len,
		       uint32_t access, uint32_t *lkey, uint32_t *rkey)
{
	uint32_t i, hi;

	if (!addr || !len || (access & ~ENGINE_ACCESS_ALL))
		return -EINVAL;
	if ((uintptr_t)addr + len < (uintptr_t)addr)
		return -EINVAL;
	for (i = 0; i < eng->cfg.max_mrs; i++)
		if (!eng->mrs[i].lkey)
			break;
	if (i == eng->cfg.max_mrs)
		return -ENOSPC;
	struct mr *m = &eng->mrs[i];

	hi = ++eng->mr_gen[i] & ((1u << (32 - MR_IDX_BITS)) - 1);
	if (!hi)
		hi = ++eng->mr_gen[i];
	m->lkey = (hi << MR_IDX_BITS) | i;
	do {
		hi = sec_rand32(eng) >> MR_IDX_BITS;
	} while (!hi);
	m->rkey = (hi << MR_IDX_BITS) | i;
	m->pd = pd;
	m->access = access;
	m->addr = addr;
	m->len = len;
	*lkey = m->lkey;
	*rkey = m->rkey;
	return 0;
}

int engine_mr_deregister(struct engine *eng, uint32_t lkey)
{
	uint32_t i = lkey & MR_IDX_MASK;

	if (!lkey || i >= eng->cfg.max_mrs || eng->mrs[i].lkey != lkey)
		return -ENOENT;
	eng->mrs[i] = (struct mr){ 0 };
	return 0;
}

/* [off, off+len) inside a region of m->len bytes, without overflow. */
static bool in_bounds(const struct mr *m, uint64_t off, uint64_t len)
{
	return off <= m->len && len <= m->len - off;
}

uint8_t *mr_check_lkey(struct engine *eng, uint64_t pd, uint32_t lkey, uint32_t access,
		       uint64_t off, uint64_t len)
{
	uint32_t i = lkey & MR_IDX_MASK;
	struct mr *m;

	if (!lkey || i >= eng->cfg.max_mrs)
		return NULL;
	m = &eng->mrs[i];
	if (m->lkey != lkey || m->pd != pd || (m->access & access) != access)
		return NULL;
	if (!in_bounds(m, off, len))
		return NULL;
	return m->addr + off;
}

uint8_t *mr_check_rkey(struct engine *eng, uint64_t pd, uint32_t rkey, uint32_t access,
		       uint64_t off, uint64_t len, int *err)
{
	uint32_t i = rkey & MR_IDX_MASK;
	struct mr *m;

	*err = -EACCES;
	if (!rkey || i >= eng->cfg.max_mrs)
		return NULL;
	m = &eng->mrs[i];
	if (m->rkey != rkey || m->pd != pd || (m->access & access) != access)
		return NULL;
	if (!in_bounds(m, off, len)) {
		*err = -ERANGE;
		return NULL;
	}
	*err = 0;
	return m->addr + off;
}
