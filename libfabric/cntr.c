// SPDX-License-Identifier: MIT
/*
 * Completion counters (fi_cntr(3)): FI_CNTR_EVENTS_COMP only.
 *
 * A counter holds two numbers, successes and errors; the endpoints bound to
 * it add to them as their operations end (mfi_cntr_count: txop.c, rx.c,
 * xfer.c's injects), CQ entry or not.  Progress is manual, so reading or
 * waiting on a counter runs progress on every endpoint bound to it, as a CQ
 * read does, and an empty spin gives the CPU away the same way (cq.c,
 * FI_MROC_SPIN_US).  fi_cntr_wait sleeps, as fi_cq_sread does, on an epoll set
 * of the bound endpoints' completion fds, armed after a sweep and swept again
 * before sleeping (FI_WAIT_FD, also what FI_WAIT_UNSPEC gets; FI_GETWAIT hands
 * the set out, fi_trywait prepares it); FI_WAIT_YIELD yields between sweeps.
 * The sleep is at most 10 ms: a connection being set up has no completion of
 * its own to wake it.  fi_cntr_add/set and their error forms write an eventfd
 * in the set, so a thread sleeping on it sees the change at once.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>

#include <mroc/mroc.h>

#include "mrocfi.h"

#define CNTR(fid) container_of(fid, struct mfi_cntr, cntr_fid)

/* One sweep, then a value (err: the error count): yields as a CQ read does when idle. */
static uint64_t cntr_get(struct mfi_cntr *c, bool err)
{
	uint64_t v;
	bool yield;
	int busy;

	mfi_lock(c->dom);
	busy = mfi_epset_progress(&c->set);
	v = err ? c->err : c->value;
	busy |= v != (err ? c->seen_err : c->seen);
	if (err)
		c->seen_err = v;
	else
		c->seen = v;
	yield = mfi_idle_after(&c->idle, busy);
	mfi_unlock(c->dom);
	if (yield)
		sched_yield();	/* not holding the domain's lock */
	return v;
}

static uint64_t cntr_read(struct fid_cntr *fid)
{
	return cntr_get(CNTR(fid), false);
}

static uint64_t cntr_readerr(struct fid_cntr *fid)
{
	return cntr_get(CNTR(fid), true);
}

static int cntr_change(struct fid_cntr *fid, uint64_t v, bool err, bool add)
{
	struct mfi_cntr *c = CNTR(fid);
	uint64_t *p = err ? &c->err : &c->value;

	mfi_lock(c->dom);
	*p = add ? *p + v : v;
	mfi_unlock(c->dom);
	mfi_waitfd_signal(c->sigfd);	/* the application changed a value */
	return 0;
}

static int cntr_add(struct fid_cntr *fid, uint64_t v)
{
	return cntr_change(fid, v, false, true);
}

static int cntr_set(struct fid_cntr *fid, uint64_t v)
{
	return cntr_change(fid, v, false, false);
}

static int cntr_adderr(struct fid_cntr *fid, uint64_t v)
{
	return cntr_change(fid, v, true, true);
}

static int cntr_seterr(struct fid_cntr *fid, uint64_t v)
{
	return cntr_change(fid, v, true, false);
}

/* Whether the wait is over: 0 (threshold reached), -FI_EAVAIL (an error came), 1 (not yet). */
static int cntr_check(struct mfi_cntr *c, uint64_t threshold, uint64_t err0)
{
	c->seen = c->value;
	if (c->value >= threshold)
		return 0;
	return c->err != err0 ? -FI_EAVAIL : 1;
}

/*
 * Until the value reaches threshold (0), the error count changes (-FI_EAVAIL,
 * as libfabric's util counters say it: fi_cntr(3) only says such a change
 * unblocks the wait), or timeout ms pass (-FI_ETIMEDOUT; < 0: never).
 */
static int cntr_wait(struct fid_cntr *fid, uint64_t threshold, int timeout)
{
	struct mfi_cntr *c = CNTR(fid);
	int64_t end = timeout >= 0 ? mfi_now_ms() + timeout : -1;
	uint64_t err0;
	int r;

	if (c->wait_obj == FI_WAIT_NONE)
		return -FI_ENOSYS;	/* "invalid" for FI_WAIT_NONE (fi_cntr(3)) */
	mfi_lock(c->dom);
	err0 = c->err;
	mfi_unlock(c->dom);
	for (;;) {
		struct epoll_event ev[16];
		int left;

		mfi_lock(c->dom);
		mfi_epset_progress(&c->set);
		r = cntr_check(c, threshold, err0);
		if (r <= 0 || c->set.epfd < 0) {
			mfi_unlock(c->dom);
			if (r <= 0)
				return r;
		} else {
			/* Progress, arm, progress again: nothing arrives unseen in between. */
			mfi_epset_arm(&c->set, true);
			mfi_epset_progress(&c->set);
			r = cntr_check(c, threshold, err0);
			mfi_unlock(c->dom);
			if (r <= 0)
				return r;
		}
		left = end < 0 ? -1 : (int)(end - mfi_now_ms());
		if (end >= 0 && left <= 0)
			return -FI_ETIMEDOUT;
		if (c->set.epfd < 0) {
			sched_yield();	/* FI_WAIT_YIELD */
			continue;
		}
		if (epoll_wait(c->set.epfd, ev, 16, left < 0 || left > 10 ? 10 : left) < 0 &&
		    errno != EINTR)
			return -errno;
		mfi_lock(c->dom);
		mfi_epset_arm(&c->set, false);
		mfi_unlock(c->dom);
		mfi_waitfd_drain(c->sigfd);
	}
}

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

/*
 * fi_trywait, for an application sleeping on FI_GETWAIT's fd itself: what
 * cntr_wait does before it sleeps.  -FI_EAGAIN when a value changed since the
 * application last read it (nothing would wake it for that), else 0: the fd
 * becomes readable at the next completion of a bound endpoint.
 */
int mfi_cntr_trywait(struct mfi_cntr *c)
{
	bool changed;

	if (c->set.epfd < 0)
		return -FI_EINVAL;	/* no fd to wait on */
	mfi_waitfd_drain(c->sigfd);
	mfi_lock(c->dom);
	mfi_epset_arm(&c->set, false);
	mfi_epset_progress(&c->set);
	mfi_epset_arm(&c->set, true);
	mfi_epset_progress(&c->set);
	changed = c->value != c->seen || c->err != c->seen_err;
	mfi_unlock(c->dom);
	return changed ? -FI_EAGAIN : 0;
}

static const uint64_t kind_flag[MFI_CNTR_KINDS] = {
	[MFI_CNTR_SEND] = FI_SEND, [MFI_CNTR_RECV] = FI_RECV,
	[MFI_CNTR_READ] = FI_READ, [MFI_CNTR_WRITE] = FI_WRITE,
	[MFI_CNTR_REMOTE_READ] = FI_REMOTE_READ, [MFI_CNTR_REMOTE_WRITE] = FI_REMOTE_WRITE,
};

/*
 * fi_ep_bind(ep, cntr, flags): what c counts for ep.  One counter per kind
 * (-FI_EINVAL for a second, as libfabric's util endpoints); FI_REMOTE_* need
 * FI_RMA_EVENT in the endpoint's caps (fi_endpoint(3)), which fi_getinfo gives
 * with RMA and atomics (prov.c).
 */
int mfi_cntr_bind_ep(struct mfi_cntr *c, struct mfi_ep *ep, uint64_t flags)
{
	uint64_t all = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	int err;

	if (!flags || (flags & ~all))
		return -FI_EBADFLAGS;
	if ((flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) && !(ep->info->caps & FI_RMA_EVENT))
		return -FI_EINVAL;
	if (c->dom != ep->dom)
		return -FI_EINVAL;
	for (int k = 0; k < MFI_CNTR_KINDS; k++)
		if ((flags & kind_flag[k]) && ep->cntr[k])
			return -FI_EINVAL;
	err = mfi_epset_add(&c->set, ep);
	if (err < 0)
		return err;
	for (int k = 0; k < MFI_CNTR_KINDS; k++)
		if (flags & kind_flag[k])
			ep->cntr[k] = c;
	return 0;
}

/* ep closes: it leaves every counter it was bound to. */
void mfi_cntr_unbind_ep(struct mfi_ep *ep)
{
	for (int k = 0; k < MFI_CNTR_KINDS; k++) {
		struct mfi_cntr *c = ep->cntr[k];

		if (!c)
			continue;
		mfi_epset_del(&c->set, ep);
		for (int j = k; j < MFI_CNTR_KINDS; j++)
			if (ep->cntr[j] == c)
				ep->cntr[j] = NULL;
	}
}

static int cntr_close(struct fid *fid)
{
	struct mfi_cntr *c = container_of(fid, struct mfi_cntr, cntr_fid.fid);

	if (c->set.n)
		return -FI_EBUSY;	/* an endpoint still counts into it */
	mfi_lock(c->dom);
	c->dom->refs--;
	mfi_unlock(c->dom);
	mfi_waitfd_close(c->set.epfd, c->sigfd);
	mfi_epset_fini(&c->set);
	free(c);
	return 0;
}

static int cntr_control(struct fid *fid, int command, void *arg)
{
	struct mfi_cntr *c = container_of(fid, struct mfi_cntr, cntr_fid.fid);

	if (command != FI_GETWAIT || c->set.epfd < 0)
		return -FI_ENOSYS;
	*(int *)arg = c->set.epfd;
	return 0;
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = mfi_no_bind,
	.control = cntr_control,
	.ops_open = mfi_no_ops_open,
	.tostr = mfi_no_tostr,
	.ops_set = mfi_no_ops_set,
};

int mfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **out,
		  void *context)
{
	struct mfi_domain *d = container_of(domain, struct mfi_domain, domain_fid);
	enum fi_wait_obj wait = attr ? attr->wait_obj : FI_WAIT_NONE;
	struct mfi_cntr *c;
	int err;

	if (attr && attr->events != FI_CNTR_EVENTS_COMP)
		return -FI_ENOSYS;
	if (attr && attr->flags)
		return -FI_EINVAL;	/* "reserved for future use, and must be set to 0" */
	if (wait != FI_WAIT_NONE && wait != FI_WAIT_UNSPEC && wait != FI_WAIT_FD &&
	    wait != FI_WAIT_YIELD)
		return -FI_ENOSYS;	/* no wait sets, mutexes or poll fds */
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	c->set.epfd = c->sigfd = -1;
	c->dom = d;
	c->wait_obj = wait == FI_WAIT_UNSPEC ? FI_WAIT_FD : wait;
	mfi_idle_setup(&c->idle);
	if (c->wait_obj == FI_WAIT_FD) {
		err = mfi_waitfd_open(&c->set.epfd, &c->sigfd);
		if (err) {
			free(c);
			return err;
		}
	}
	c->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	c->cntr_fid.fid.context = context;
	c->cntr_fid.fid.ops = &cntr_fi_ops;
	c->cntr_fid.ops = &cntr_ops;
	mfi_lock(d);
	d->refs++;
	mfi_unlock(d);
	*out = &c->cntr_fid;
	return 0;
}
