// SPDX-License-Identifier: MIT
/*
 * Event queues: connection events (FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN),
 * their errors, and what the application writes (fi_eq_write).  Reading one
 * runs progress on the passive and MSG endpoints bound to it (manual
 * progress), yielding when idle as a CQ read does (cq.c).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mrocfi.h"

int mfi_eq_watch(struct mfi_eq *eq, struct fid *obj)
{
	struct fid **n;

	for (size_t i = 0; i < eq->nobjs; i++)
		if (eq->objs[i] == obj)
			return 0;
	n = realloc(eq->objs, (eq->nobjs + 1) * sizeof(*n));
	if (!n)
		return -FI_ENOMEM;
	eq->objs = n;
	eq->objs[eq->nobjs++] = obj;
	return 0;
}

void mfi_eq_unwatch(struct mfi_eq *eq, struct fid *obj)
{
	for (size_t i = 0; eq && i < eq->nobjs; i++)
		if (eq->objs[i] == obj) {
			eq->objs[i] = eq->objs[--eq->nobjs];
			return;
		}
}

/* A new entry at the queue's tail (growing it when full), or NULL without memory. */
static struct mfi_eq_event *eq_slot(struct mfi_eq *eq)
{
	if (eq->count == eq->cap) {
		size_t cap = eq->cap ? eq->cap * 2 : 16;
		struct mfi_eq_event *n = calloc(cap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t i = 0; i < eq->count; i++)
			n[i] = eq->ev[(eq->head + i) % eq->cap];
		free(eq->ev);
		eq->ev = n;
		eq->head = 0;
		eq->cap = cap;
	}
	return &eq->ev[(eq->head + eq->count++) % eq->cap];
}

/* A connection event (err_no: positive FI_E*, or 0) with cm_len bytes of CM private data. */
int mfi_eq_push(struct mfi_eq *eq, uint32_t event, struct fid *fid, struct fi_info *info,
		int err_no, const void *cm, size_t cm_len)
{
	struct mfi_eq_event *e = eq_slot(eq);

	if (!e)
		return -FI_ENOMEM;
	*e = (struct mfi_eq_event){
		.event = event, .cm = { .fid = fid, .info = info },
		.context = fid ? fid->context : NULL, .err = err_no != 0, .err_no = err_no,
		.cm_len = cm_len < MFI_CM_DATA_MAX ? cm_len : MFI_CM_DATA_MAX,
	};
	if (e->cm_len)
		memcpy(e->cm_data, cm, e->cm_len);
	return 0;
}

/* Progress on the passive and MSG endpoints bound to it: the endpoints' completions found. */
static int eq_progress(struct mfi_eq *eq)
{
	int n = 0;

	for (size_t i = 0; i < eq->nobjs; i++) {
		struct fid *f = eq->objs[i];

		if (f->fclass == FI_CLASS_PEP)
			mfi_pep_progress(container_of(f, struct mfi_pep, pep_fid.fid));
		else
			n += mfi_ep_progress(container_of(f, struct mfi_ep, ep_fid.fid));
	}
	return n;
}

/* The same for an EQ, which has no fd (FI_WAIT_FD EQs are refused): progress, look. */
int mfi_eq_trywait(struct mfi_eq *eq)
{
	eq_progress(eq);
	return eq->count ? -FI_EAGAIN : 0;
}

static ssize_t eq_read(struct fid_eq *fid, uint32_t *event, void *buf, size_t len,
		       uint64_t flags)
{
	struct mfi_eq *eq = container_of(fid, struct mfi_eq, eq_fid);
	struct mfi_eq_event *e;
	size_t sz;
	bool cm;
	int busy = eq_progress(eq);

	if (mfi_idle_after(&eq->idle, busy || eq->count))
		sched_yield();
	if (!eq->count)
		return -FI_EAGAIN;
	e = &eq->ev[eq->head];
	if (e->err)
		return -FI_EAVAIL;
	cm = e->event == FI_CONNREQ || e->event == FI_CONNECTED || e->event == FI_SHUTDOWN;
	/* A CM entry is followed by its private data (fi_eq(3) fi_eq_cm_entry.data). */
	sz = cm ? sizeof(struct fi_eq_cm_entry) + e->cm_len : sizeof(struct fi_eq_entry);
	if (len < sz)
		return -FI_ETOOSMALL;
	if (event)
		*event = e->event;
	if (cm) {
		memcpy(buf, &e->cm, sizeof(e->cm));
		memcpy((uint8_t *)buf + sizeof(e->cm), e->cm_data, e->cm_len);
	} else {
		struct fi_eq_entry ent = { .fid = e->cm.fid, .context = e->context, .data = e->data };

		memcpy(buf, &ent, sz);
	}
	if (!(flags & FI_PEEK)) {
		eq->head = (eq->head + 1) % eq->cap;
		eq->count--;
	}
	return (ssize_t)sz;
}

static ssize_t eq_readerr(struct fid_eq *fid, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct mfi_eq *eq = container_of(fid, struct mfi_eq, eq_fid);
	struct mfi_eq_event *e;
	void *err_data;

	if (!eq->count || !eq->ev[eq->head].err)
		return -FI_EAGAIN;
	e = &eq->ev[eq->head];
	/*
	 * err_data: a reject's private data.  Into the caller's buffer when it gives
	 * one (err_data_size on input, API 1.5 on); else ours, valid until the next
	 * read (fi_eq(3)).  Before 1.5 the struct ends before err_data_size.
	 */
	if (FI_VERSION_GE(eq->fab->api, FI_VERSION(1, 5)) && buf->err_data_size) {
		size_t n = e->cm_len < buf->err_data_size ? e->cm_len : buf->err_data_size;

		memcpy(buf->err_data, e->cm_data, n);
		err_data = buf->err_data;
		buf->err_data_size = n;
	} else {
		memcpy(eq->err_data, e->cm_data, e->cm_len);
		err_data = e->cm_len ? eq->err_data : NULL;
		if (FI_VERSION_GE(eq->fab->api, FI_VERSION(1, 5)))
			buf->err_data_size = e->cm_len;
	}
	buf->fid = e->cm.fid;
	buf->context = e->context;
	buf->data = e->data;
	buf->err = e->err_no;
	buf->prov_errno = -e->err_no;
	buf->err_data = err_data;
	if (!(flags & FI_PEEK)) {
		eq->head = (eq->head + 1) % eq->cap;
		eq->count--;
	}
	return sizeof(*buf);
}

static ssize_t eq_write(struct fid_eq *fid, uint32_t event, const void *buf, size_t len,
			uint64_t flags)
{
	struct mfi_eq *eq = container_of(fid, struct mfi_eq, eq_fid);
	const struct fi_eq_entry *ent = buf;
	struct mfi_eq_event *e;

	if (!ent || len < sizeof(*ent))
		return -FI_EINVAL;
	if (event == FI_CONNREQ || event == FI_CONNECTED || event == FI_SHUTDOWN)
		return -FI_EINVAL;	/* those carry an fi_info only the provider makes */
	e = eq_slot(eq);
	if (!e)
		return -FI_ENOMEM;
	*e = (struct mfi_eq_event){ .event = event, .cm = { .fid = ent->fid },
				    .context = ent->context, .data = ent->data };
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *fid, uint32_t *event, void *buf, size_t len, int timeout,
			uint64_t flags)
{
	int64_t end = timeout >= 0 ? mfi_now_ms() + timeout : -1;

	for (;;) {
		ssize_t n = eq_read(fid, event, buf, len, flags);
		struct timespec ts = { 0, 100000 };

		if (n != -FI_EAGAIN)
			return n;
		if (end >= 0 && mfi_now_ms() >= end)
			return -FI_EAGAIN;
		/* Connection set-up only: a short nap between looks is plenty. */
		nanosleep(&ts, NULL);
	}
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = 0;
		return buf;
	}
	return s;
}

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

static int eq_close(struct fid *fid)
{
	struct mfi_eq *eq = container_of(fid, struct mfi_eq, eq_fid.fid);

	for (size_t i = 0; i < eq->count; i++)
		fi_freeinfo(eq->ev[(eq->head + i) % eq->cap].cm.info);
	free(eq->ev);
	free(eq->objs);
	free(eq);
	return 0;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = mfi_no_bind,
	.control = mfi_no_control,
	.ops_open = mfi_no_ops_open,
	.tostr = mfi_no_tostr,
	.ops_set = mfi_no_ops_set,
};

int mfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **out,
		void *context)
{
	struct mfi_eq *eq;

	if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->fab = container_of(fabric, struct mfi_fabric, fabric_fid);
	mfi_idle_setup(&eq->idle);
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &eq_fi_ops;
	eq->eq_fid.ops = &eq_ops;
	*out = &eq->eq_fid;
	return 0;
}
