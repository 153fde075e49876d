// SPDX-License-Identifier: MIT
/*
 * Event queues: connection events (FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN),
 * their errors, and what the application writes (fi_eq_write).  Reading one
 * runs progress on the passive and MSG endpoints bound to it (manual
 * progress), yielding when idle as a CQ read does (cq.c).
 *
 * FI_WAIT_FD (FI_WAIT_UNSPEC gets it): an epoll set holding an eventfd that
 * every entry queued writes (fi_eq_write from another thread, or a
 * connection event found by progress) and the completion fds of the bound
 * endpoints' QPs (where connection events come from), armed as cq.c arms
 * its own.  fi_trywait (and fi_eq_sread before it sleeps) empties the
 * eventfd only while the queue is empty, so the fd is readable whenever an
 * entry waits.  The queue has a lock of its own: fi_eq_write may come from
 * any thread, and progress (which queues) runs under no EQ lock.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include <mroc/mroc.h>

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

/* A connection's completion fd joins the wait set (closing the fd removes it). */
int mfi_eq_watch_conn(struct mfi_eq *eq, struct mfi_conn *c)
{
	return eq ? mfi_epoll_watch(eq->epfd, c) : 0;
}

void mfi_eq_unwatch(struct mfi_eq *eq, struct fid *obj)
{
	for (size_t i = 0; eq && i < eq->nobjs; i++)
		if (eq->objs[i] == obj) {
			eq->objs[i] = eq->objs[--eq->nobjs];
			return;
		}
}

/* The fd stops being readable for entries once they are all read (under the lock). */
static void eq_drain(struct mfi_eq *eq)
{
	if (!eq->count)
		mfi_waitfd_drain(eq->sigfd);
}

/* One entry fewer at the head (under the lock). */
static void eq_pop(struct mfi_eq *eq)
{
	eq->head = (eq->head + 1) % eq->cap;
	eq->count--;
	eq_drain(eq);
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
	struct mfi_eq_event *e;

	pthread_mutex_lock(&eq->lock);
	e = eq_slot(eq);
	if (!e) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_ENOMEM;
	}
	*e = (struct mfi_eq_event){
		.event = event, .cm = { .fid = fid, .info = info },
		.context = fid ? fid->context : NULL, .err = err_no != 0, .err_no = err_no,
		.cm_len = cm_len < MFI_CM_DATA_MAX ? cm_len : MFI_CM_DATA_MAX,
	};
	if (e->cm_len)
		memcpy(e->cm_data, cm, e->cm_len);
	mfi_waitfd_signal(eq->sigfd);	/* an entry was queued */
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

/*
 * Progress on the passive and MSG endpoints bound to it: the endpoints' completions found.
 * The endpoints first: a client that saw FI_CONNECTED (our accept's HELLO arrived) may
 * connect again at once, and its request can be in a listener by the time the HELLO's
 * completion is in the accepted endpoint's QP; looked at in this order, the server's
 * FI_CONNECTED is queued before that FI_CONNREQ, as they happened (fabtests' fi_multi_ep
 * -e msg reads them in that order; fi_suite cm_data).
 */
static int eq_progress(struct mfi_eq *eq)
{
	int n = 0;

	for (size_t i = 0; i < eq->nobjs; i++) {
		struct fid *f = eq->objs[i];
		struct mfi_ep *ep = container_of(f, struct mfi_ep, ep_fid.fid);

		if (f->fclass == FI_CLASS_PEP)
			continue;
		/* Under the domain's lock, as a CQ read's: another thread may run it too. */
		mfi_lock(ep->dom);
		n += mfi_ep_progress(ep);
		mfi_unlock(ep->dom);
	}
	for (size_t i = 0; i < eq->nobjs; i++)
		if (eq->objs[i]->fclass == FI_CLASS_PEP)
			mfi_pep_progress(container_of(eq->objs[i], struct mfi_pep, pep_fid.fid));
	return n;
}

/* Arm (or acknowledge) the completion fd of every bound endpoint's QPs. */
static void eq_arm(struct mfi_eq *eq, bool arm)
{
	for (size_t i = 0; i < eq->nobjs; i++) {
		struct fid *f = eq->objs[i];
		/* An endpoint's connections change under its domain's lock (eq_progress). */
		struct mfi_domain *d = f->fclass == FI_CLASS_PEP ? NULL :
			container_of(f, struct mfi_ep, ep_fid.fid)->dom;
		struct mfi_conn *c;

		if (d)
			mfi_lock(d);
		c = f->fclass == FI_CLASS_PEP ?
			container_of(f, struct mfi_pep, pep_fid.fid)->listeners :
			container_of(f, struct mfi_ep, ep_fid.fid)->conns;
		for (; c; c = c->next) {
			if (!c->qp)
				continue;
			if (arm)
				mroc_req_notify(c->qp);
			else
				mroc_ack_notify(c->qp);
		}
		if (d)
			mfi_unlock(d);
	}
}

/*
 * fi_trywait on an EQ: what cq.c's does (acknowledge, progress, arm, progress
 * again: an event between the two would not wake the fd), then -FI_EAGAIN
 * while entries wait, else 0 with the eventfd emptied (it becomes readable at
 * the next entry).  Without an fd (FI_WAIT_NONE): progress, look.
 */
int mfi_eq_trywait(struct mfi_eq *eq)
{
	bool ready;

	if (eq->epfd >= 0) {
		eq_arm(eq, false);
		eq_progress(eq);
		eq_arm(eq, true);
	}
	eq_progress(eq);
	pthread_mutex_lock(&eq->lock);
	ready = eq->count != 0;
	eq_drain(eq);
	pthread_mutex_unlock(&eq->lock);
	return ready ? -FI_EAGAIN : 0;
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
	pthread_mutex_lock(&eq->lock);
	if (!eq->count) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	e = &eq->ev[eq->head];
	cm = e->event == FI_CONNREQ || e->event == FI_CONNECTED || e->event == FI_SHUTDOWN;
	/* A CM entry is followed by its private data (fi_eq(3) fi_eq_cm_entry.data). */
	sz = cm ? sizeof(struct fi_eq_cm_entry) + e->cm_len : sizeof(struct fi_eq_entry);
	if (e->err || len < sz || !buf) {
		pthread_mutex_unlock(&eq->lock);
		return e->err ? -FI_EAVAIL : !buf ? -FI_EINVAL : -FI_ETOOSMALL;
	}
	if (event)
		*event = e->event;
	if (cm) {
		memcpy(buf, &e->cm, sizeof(e->cm));
		memcpy((uint8_t *)buf + sizeof(e->cm), e->cm_data, e->cm_len);
	} else {
		struct fi_eq_entry ent = { .fid = e->cm.fid, .context = e->context, .data = e->data };

		memcpy(buf, &ent, sz);
	}
	if (!(flags & FI_PEEK))
		eq_pop(eq);
	pthread_mutex_unlock(&eq->lock);
	return (ssize_t)sz;
}

static ssize_t eq_readerr(struct fid_eq *fid, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct mfi_eq *eq = container_of(fid, struct mfi_eq, eq_fid);
	struct mfi_eq_event *e;
	void *err_data;

	if (!buf)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	if (!eq->count || !eq->ev[eq->head].err) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	e = &eq->ev[eq->head];
	/*
	 * err_data: a reject's private data.  Into the caller's buffer when it gives
	 * one (err_data and err_data_size on input, API 1.5 on); else ours, valid
	 * until the next read (fi_eq(3)): a size with no buffer was a write to NULL.
	 * Before 1.5 the struct ends before err_data_size.
	 */
	if (FI_VERSION_GE(eq->fab->api, FI_VERSION(1, 5)) && buf->err_data_size && buf->err_data) {
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
	if (!(flags & FI_PEEK))
		eq_pop(eq);
	pthread_mutex_unlock(&eq->lock);
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
	pthread_mutex_lock(&eq->lock);
	e = eq_slot(eq);
	if (e) {
		*e = (struct mfi_eq_event){ .event = event, .cm = { .fid = ent->fid },
					    .context = ent->context, .data = ent->data };
		mfi_waitfd_signal(eq->sigfd);	/* an entry was queued */
	}
	pthread_mutex_unlock(&eq->lock);
	return e ? (ssize_t)len : -FI_ENOMEM;
}

static ssize_t eq_sread(struct fid_eq *fid, uint32_t *event, void *buf, size_t len, int timeout,
			uint64_t flags)
{
	struct mfi_eq *eq = container_of(fid, struct mfi_eq, eq_fid);
	int64_t end = timeout >= 0 ? mfi_now_ms() + timeout : -1;

	for (;;) {
		ssize_t n = eq_read(fid, event, buf, len, flags);
		struct timespec ts = { 0, 100000 };
		struct epoll_event ev[16];
		int left;

		if (n != -FI_EAGAIN)
			return n;
		left = end < 0 ? -1 : (int)(end - mfi_now_ms());
		if (end >= 0 && left <= 0)
			return -FI_EAGAIN;
		if (eq->epfd < 0) {
			nanosleep(&ts, NULL);	/* FI_WAIT_NONE: a short nap between looks */
			continue;
		}
		if (mfi_eq_trywait(eq) == -FI_EAGAIN)
			continue;
		/*
		 * Connections being set up have no completion of their own to
		 * wake us: look again at least every 10 ms, as fi_cq_sread does.
		 */
		if (epoll_wait(eq->epfd, ev, 16, left < 0 || left > 10 ? 10 : left) < 0 &&
		    errno != EINTR)
			return -errno;
	}
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	return mfi_strerror(prov_errno, buf, len);
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

	/* Endpoints bound to it push their events there and run through it (freed under them). */
	if (eq->nobjs)
		return -FI_EBUSY;
	for (size_t i = 0; i < eq->count; i++)
		fi_freeinfo(eq->ev[(eq->head + i) % eq->cap].cm.info);
	mfi_waitfd_close(eq->epfd, eq->sigfd);
	pthread_mutex_destroy(&eq->lock);
	mfi_fabric_ref(eq->fab, -1);
	free(eq->ev);
	free(eq->objs);
	free(eq);
	return 0;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct mfi_eq *eq = container_of(fid, struct mfi_eq, eq_fid.fid);

	if (command != FI_GETWAIT || eq->epfd < 0)
		return -FI_ENOSYS;
	*(int *)arg = eq->epfd;
	return 0;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = mfi_no_bind,
	.control = eq_control,
	.ops_open = mfi_no_ops_open,
	.tostr = mfi_no_tostr,
	.ops_set = mfi_no_ops_set,
};

int mfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **out,
		void *context)
{
	enum fi_wait_obj wait = attr ? attr->wait_obj : FI_WAIT_NONE;
	struct mfi_eq *eq;

	if (wait != FI_WAIT_NONE && wait != FI_WAIT_UNSPEC && wait != FI_WAIT_FD)
		return -FI_ENOSYS;	/* no wait sets, mutexes or yield */
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->epfd = eq->sigfd = -1;
	eq->wait_obj = wait == FI_WAIT_UNSPEC ? FI_WAIT_FD : wait;
	if (eq->wait_obj == FI_WAIT_FD && mfi_waitfd_open(&eq->epfd, &eq->sigfd)) {
		free(eq);
		return -FI_ENOMEM;
	}
	pthread_mutex_init(&eq->lock, NULL);
	eq->fab = container_of(fabric, struct mfi_fabric, fabric_fid);
	mfi_idle_setup(&eq->idle);
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &eq_fi_ops;
	eq->eq_fid.ops = &eq_ops;
	mfi_fabric_ref(eq->fab, 1);
	*out = &eq->eq_fid;
	return 0;
}
