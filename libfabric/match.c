// SPDX-License-Identifier: MIT
/* Receive matching (match.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"

int mfi_match_init(struct mfi_match *m, size_t nrx)
{
	memset(m, 0, sizeof(*m));
	m->pool = calloc(nrx, sizeof(*m->pool));
	if (!m->pool)
		return -ENOMEM;
	m->npool = nrx;
	for (size_t i = 0; i < nrx; i++) {
		m->pool[i].next = m->free;
		m->free = &m->pool[i];
	}
	return 0;
}

static void free_ux_queue(struct mfi_queue_ux *q)
{
	while (q->head) {
		struct mfi_unexp *ux = q->head;

		q->head = ux->next;
		mfi_unexp_free(ux);
	}
	q->tail = NULL;
}

void mfi_match_fini(struct mfi_match *m)
{
	for (int k = 0; k < 2; k++)
		free_ux_queue(&m->unexp[k]);
	free_ux_queue(&m->claimed);
	free(m->pool);
	memset(m, 0, sizeof(*m));
}

void mfi_unexp_free(struct mfi_unexp *ux)
{
	if (ux) {
		free(ux->buf);
		free(ux);
	}
}

struct mfi_rxop *mfi_rxop_get(struct mfi_match *m)
{
	struct mfi_rxop *rx = m->free;

	if (rx) {
		m->free = rx->next;
		memset(rx, 0, sizeof(*rx));
	}
	return rx;
}

void mfi_rxop_put(struct mfi_match *m, struct mfi_rxop *rx)
{
	rx->next = m->free;
	m->free = rx;
}

bool mfi_tag_match(uint64_t want, uint64_t ignore, uint64_t tag)
{
	return ((want ^ tag) & ~ignore) == 0;
}

static bool src_match(fi_addr_t want, fi_addr_t src)
{
	return want == FI_ADDR_UNSPEC || want == src;
}

static bool rx_matches(const struct mfi_rxop *rx, fi_addr_t src, uint64_t tag)
{
	if (!src_match(rx->src, src))
		return false;
	return rx->kind == MFI_KIND_MSG || mfi_tag_match(rx->tag, rx->ignore, tag);
}

static bool ux_matches(const struct mfi_unexp *ux, fi_addr_t src, uint64_t tag, uint64_t ignore)
{
	return src_match(src, ux->src) && (ux->kind == MFI_KIND_MSG ||
					   mfi_tag_match(tag, ignore, ux->tag));
}

/* Take the first entry satisfying pred out of a singly linked queue. */
#define QUEUE_TAKE(q, type, it, pred)						\
	({									\
		type *prev_ = NULL, *it;					\
		for (it = (q)->head; it; prev_ = it, it = it->next)		\
			if (pred)						\
				break;						\
		if (it) {							\
			if (prev_)						\
				prev_->next = it->next;				\
			else							\
				(q)->head = it->next;				\
			if ((q)->tail == it)					\
				(q)->tail = prev_;				\
			it->next = NULL;					\
		}								\
		it;								\
	})

#define QUEUE_APPEND(q, e)							\
	do {									\
		(e)->next = NULL;						\
		if ((q)->tail)							\
			(q)->tail->next = (e);					\
		else								\
			(q)->head = (e);					\
		(q)->tail = (e);						\
	} while (0)

struct mfi_unexp *mfi_match_post(struct mfi_match *m, struct mfi_rxop *rx)
{
	struct mfi_queue_ux *q = &m->unexp[rx->kind];
	struct mfi_unexp *ux = QUEUE_TAKE(q, struct mfi_unexp, it,
					   ux_matches(it, rx->src, rx->tag, rx->ignore));

	if (!ux)
		QUEUE_APPEND(&m->posted[rx->kind], rx);
	return ux;
}

struct mfi_rxop *mfi_match_arrival(struct mfi_match *m, enum mfi_kind kind, fi_addr_t src,
				   uint64_t tag)
{
	struct mfi_queue_rx *q = &m->posted[kind];

	return QUEUE_TAKE(q, struct mfi_rxop, it, rx_matches(it, src, tag));
}

/* Into its unexpected queue in arrival order: last when new, else where it was. */
static void insert_unexp(struct mfi_match *m, struct mfi_unexp *ux)
{
	struct mfi_queue_ux *q = &m->unexp[ux->kind];
	struct mfi_unexp **pp = &q->head;

	if (!q->tail || q->tail->seq < ux->seq) {
		QUEUE_APPEND(q, ux);
		return;
	}
	while (*pp && (*pp)->seq < ux->seq)
		pp = &(*pp)->next;
	ux->next = *pp;
	*pp = ux;
}

void mfi_match_add_unexp(struct mfi_match *m, struct mfi_unexp *ux)
{
	if (!ux->seq)
		ux->seq = ++m->next_seq;
	insert_unexp(m, ux);
}

struct mfi_unexp *mfi_match_peek(struct mfi_match *m, enum mfi_kind kind, fi_addr_t src,
				 uint64_t tag, uint64_t ignore, void *claim_ctx)
{
	struct mfi_queue_ux *q = &m->unexp[kind];
	struct mfi_unexp *ux;

	if (!claim_ctx) {
		for (ux = q->head; ux; ux = ux->next)
			if (ux_matches(ux, src, tag, ignore))
				return ux;
		return NULL;
	}
	ux = QUEUE_TAKE(q, struct mfi_unexp, it, ux_matches(it, src, tag, ignore));
	if (ux) {
		ux->claim_ctx = claim_ctx;
		QUEUE_APPEND(&m->claimed, ux);
	}
	return ux;
}

struct mfi_unexp *mfi_match_claimed(struct mfi_match *m, void *ctx)
{
	struct mfi_queue_ux *q = &m->claimed;

	return QUEUE_TAKE(q, struct mfi_unexp, it, it->claim_ctx == ctx);
}

struct mfi_unexp *mfi_match_unclaim(struct mfi_match *m, void *ctx)
{
	struct mfi_queue_ux *q = &m->claimed;
	struct mfi_unexp *ux = QUEUE_TAKE(q, struct mfi_unexp, it, it->claim_ctx == ctx);

	if (ux) {
		ux->claim_ctx = NULL;
		insert_unexp(m, ux);
	}
	return ux;
}

struct mfi_rxop *mfi_match_cancel(struct mfi_match *m, void *ctx)
{
	for (int k = 0; k < 2; k++) {
		struct mfi_queue_rx *q = &m->posted[k];
		struct mfi_rxop *rx = QUEUE_TAKE(q, struct mfi_rxop, it, it->context == ctx);

		if (rx)
			return rx;
	}
	return NULL;
}

struct mfi_rxop *mfi_match_take_posted(struct mfi_match *m)
{
	for (int k = 0; k < 2; k++) {
		struct mfi_queue_rx *q = &m->posted[k];
		struct mfi_rxop *rx = QUEUE_TAKE(q, struct mfi_rxop, it, true);

		if (rx)
			return rx;
	}
	return NULL;
}

void mfi_match_remove_unexp(struct mfi_match *m, struct mfi_unexp *ux)
{
	struct mfi_queue_ux *qs[] = { &m->unexp[0], &m->unexp[1], &m->claimed };

	for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
		struct mfi_queue_ux *q = qs[k];

		if (QUEUE_TAKE(q, struct mfi_unexp, it, it == ux))
			return;
	}
}

struct mfi_unexp *mfi_match_take_rndv(struct mfi_match *m, const void *conn)
{
	struct mfi_queue_ux *qs[] = { &m->unexp[0], &m->unexp[1], &m->claimed };

	for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
		struct mfi_unexp *ux = QUEUE_TAKE(qs[k], struct mfi_unexp, it,
						  it->rndv && it->conn == conn);

		if (ux)
			return ux;
	}
	return NULL;
}

void mfi_match_requeue_head(struct mfi_match *m, struct mfi_rxop *rx)
{
	struct mfi_queue_rx *q = &m->posted[rx->kind];

	rx->next = q->head;
	q->head = rx;
	if (!q->tail)
		q->tail = rx;
}
