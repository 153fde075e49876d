// SPDX-License-Identifier: MIT
/* Completion FIFO and format conversion (cqring.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "cqring.h"

int mfi_cqring_init(struct mfi_cqring *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->cap = cap ? cap : 64;
	r->q = calloc(r->cap, sizeof(*r->q));
	return r->q ? 0 : -ENOMEM;
}

void mfi_cqring_fini(struct mfi_cqring *r)
{
	free(r->q);
	memset(r, 0, sizeof(*r));
}

static int grow(struct mfi_cqring *r)
{
	struct mfi_cqe *q = calloc(r->cap * 2, sizeof(*q));

	if (!q)
		return -ENOMEM;
	for (size_t i = 0; i < r->count; i++)
		q[i] = r->q[(r->head + i) % r->cap];
	free(r->q);
	r->q = q;
	r->head = 0;
	r->cap *= 2;
	return 0;
}

int mfi_cqring_push(struct mfi_cqring *r, const struct mfi_cqe *e)
{
	if (r->count == r->cap && grow(r))
		return -ENOMEM;
	r->q[(r->head + r->count) % r->cap] = *e;
	r->count++;
	return 0;
}

size_t mfi_cq_entry_size(enum fi_cq_format fmt)
{
	switch (fmt) {
	case FI_CQ_FORMAT_CONTEXT:	return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:	return sizeof(struct fi_cq_tagged_entry);
	default:			return 0;
	}
}

static void convert(const struct fi_cq_tagged_entry *e, enum fi_cq_format fmt, void *out)
{
	switch (fmt) {
	case FI_CQ_FORMAT_CONTEXT:
		((struct fi_cq_entry *)out)->op_context = e->op_context;
		break;
	case FI_CQ_FORMAT_MSG:
		*(struct fi_cq_msg_entry *)out = (struct fi_cq_msg_entry){
			.op_context = e->op_context, .flags = e->flags, .len = e->len,
		};
		break;
	case FI_CQ_FORMAT_DATA:
		*(struct fi_cq_data_entry *)out = (struct fi_cq_data_entry){
			.op_context = e->op_context, .flags = e->flags, .len = e->len,
			.buf = e->buf, .data = e->data,
		};
		break;
	default:
		*(struct fi_cq_tagged_entry *)out = *e;
		break;
	}
}

ssize_t mfi_cqring_read(struct mfi_cqring *r, enum fi_cq_format fmt, void *buf, size_t count,
			fi_addr_t *src)
{
	size_t n = 0, sz = mfi_cq_entry_size(fmt);

	if (!sz || (count && !buf))	/* NULL with entries asked for was a write to NULL */
		return -FI_EINVAL;
	while (n < count && r->count) {
		const struct mfi_cqe *c = &r->q[r->head];

		if (c->err)
			break;
		convert(&c->e, fmt, (char *)buf + n * sz);
		if (src)
			src[n] = c->src;
		r->head = (r->head + 1) % r->cap;
		r->count--;
		n++;
	}
	if (n)
		return (ssize_t)n;
	/* count 0 reads nothing: 0 while entries wait (-FI_EAVAIL only for an error at the head). */
	if (!count && r->count && !r->q[r->head].err)
		return 0;
	return r->count ? -FI_EAVAIL : -FI_EAGAIN;
}

ssize_t mfi_cqring_readerr(struct mfi_cqring *r, struct fi_cq_err_entry *err, uint32_t api)
{
	const struct mfi_cqe *c;
	struct fi_cq_err_entry out = { 0 };

	if (!err)
		return -FI_EINVAL;
	if (!r->count || !r->q[r->head].err)
		return -FI_EAGAIN;
	c = &r->q[r->head];
	out.op_context = c->e.op_context;
	out.flags = c->e.flags;
	out.len = c->e.len;
	out.buf = c->e.buf;
	out.data = c->e.data;
	out.tag = c->e.tag;
	out.olen = c->olen;
	out.err = c->err_no;
	out.prov_errno = -c->err_no;
	/* Before API 1.5 the caller's struct ends at err_data: keep its err_data_size alone. */
	if (FI_VERSION_GE(api, FI_VERSION(1, 5))) {
		out.err_data = NULL;
		out.err_data_size = 0;
		*err = out;
	} else {
		memcpy(err, &out, offsetof(struct fi_cq_err_entry, err_data_size));
	}
	r->head = (r->head + 1) % r->cap;
	r->count--;
	return 1;
}

void mfi_idle_init(struct mfi_idle *w, int64_t spin_ns)
{
	*w = (struct mfi_idle){ .spin_ns = spin_ns, .since = -1, .last_yield = -1 };
}

bool mfi_idle_read(struct mfi_idle *w, bool busy, int64_t now)
{
	if (busy || w->spin_ns < 0) {
		w->since = -1;
		return false;
	}
	if (w->since < 0 || now < w->since)
		w->since = now;
	if (now - w->since < w->spin_ns ||
	    (w->last_yield >= 0 && now >= w->last_yield &&
	     now - w->last_yield < MFI_IDLE_YIELD_EVERY_NS))
		return false;
	w->last_yield = now;
	return true;
}
