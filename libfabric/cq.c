// SPDX-License-Identifier: MIT
/*
 * Completion queues (event queues: eq.c).
 *
 * Reading a CQ first runs progress on every endpoint bound to it (manual
 * progress), then takes entries from its FIFO (cqring.c).
 *
 * Giving the CPU away: mrocd's worker, not the application, moves the data,
 * and an application that spins in fi_cq_read on a CPU the worker needs
 * delays every message by a scheduler slice.  libmroc would yield on each
 * QP's CQ found empty past its budget (libclient/spin.h), but an endpoint has
 * several QPs and most are idle at any time (listeners, the connections a
 * peer opened), so every sweep yielded once, before the busy QP's data was
 * even looked at, however much was arriving.  So the provider's contexts
 * never yield inside libmroc (MROC_SPIN_FOREVER), and a CQ read yields
 * instead once the whole CQ has found nothing for spin_us (FI_MROC_SPIN_US,
 * 5 by default), at most once per 5 us, after its sweep.  fi_cq_sread
 * sleeps on an epoll set holding the completion fds of all the endpoints'
 * QPs (FI_WAIT_FD: fi_control(FI_GETWAIT) hands it out) after arming them,
 * with the usual "progress, arm, progress again, sleep" order so that a
 * completion arriving in between is never slept through.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include <mroc/mroc.h>

#include "mrocfi.h"

/* ---- completion queue --------------------------------------------------------- */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t mfi_now_ms(void)
{
	return now_ns() / 1000000;
}

/* FI_MROC_SPIN_US: microseconds (>= 0), or -1 for never; default MROC_SPIN_US_DEFAULT. */
void mfi_idle_setup(struct mfi_idle *w)
{
	int us = MROC_SPIN_US_DEFAULT;

	if (fi_param_get_int(&mfi_prov, "spin_us", &us) != FI_SUCCESS || us < -1)
		us = MROC_SPIN_US_DEFAULT;
	mfi_idle_init(w, us < 0 ? -1 : (int64_t)us * 1000);
}

/* A read is over: whether to give the CPU away now (cqring.c says when). */
bool mfi_idle_after(struct mfi_idle *w, bool busy)
{
	return mfi_idle_read(w, busy, busy ? 0 : now_ns());
}

static ssize_t cq_readfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src)
{
	struct mfi_cq *cq = container_of(fid, struct mfi_cq, cq_fid);
	ssize_t n;
	bool yield;
	int busy;

	mfi_lock(cq->dom);
	busy = mfi_epset_progress(&cq->set);
	n = mfi_cqring_read(&cq->ring, cq->format, buf, count, src);
	yield = mfi_idle_after(&cq->idle, busy || n != -FI_EAGAIN);
	mfi_unlock(cq->dom);
	if (yield)
		sched_yield();	/* not holding the domain's lock */
	return n;
}

static ssize_t cq_read(struct fid_cq *fid, void *buf, size_t count)
{
	return cq_readfrom(fid, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *fid, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct mfi_cq *cq = container_of(fid, struct mfi_cq, cq_fid);
	ssize_t n;

	mfi_lock(cq->dom);
	n = mfi_cqring_readerr(&cq->ring, buf, cq->dom->api);
	mfi_unlock(cq->dom);
	return n;
}

static ssize_t cq_sreadfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src,
			    const void *cond, int timeout)
{
	struct mfi_cq *cq = container_of(fid, struct mfi_cq, cq_fid);
	int64_t end = timeout >= 0 ? mfi_now_ms() + timeout : -1;
	ssize_t n;

	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_ENOSYS;
	for (;;) {
		struct epoll_event ev[16];
		int left;

		n = cq_readfrom(fid, buf, count, src);
		if (n != -FI_EAGAIN)
			return n;
		mfi_lock(cq->dom);
		mfi_epset_arm(&cq->set, true);
		mfi_epset_progress(&cq->set);
		n = mfi_cqring_read(&cq->ring, cq->format, buf, count, src);
		mfi_unlock(cq->dom);
		if (n != -FI_EAGAIN)
			return n;
		left = end < 0 ? -1 : (int)(end - mfi_now_ms());
		if (end >= 0 && left <= 0)
			return -FI_EAGAIN;
		/*
		 * Connections being set up have no completion of their own to
		 * wake us: look again at least every 10 ms.
		 */
		if (epoll_wait(cq->set.epfd, ev, 16, left < 0 || left > 10 ? 10 : left) < 0 &&
		    errno != EINTR)
			return -errno;
		mfi_lock(cq->dom);
		mfi_epset_arm(&cq->set, false);
		mfi_unlock(cq->dom);
		{
			uint64_t v;

			if (read(cq->sigfd, &v, sizeof(v)) == sizeof(v))
				return -FI_EAGAIN;	/* fi_cq_signal */
		}
	}
}

/*
 * fi_trywait on a CQ, as applications that sleep in their own epoll do
 * (fabtests' fi_msg_epoll: FI_GETWAIT's fd, fi_trywait, epoll_wait, read):
 * what cq_sreadfrom does before it sleeps.  Wakes already taken are
 * acknowledged, every bound endpoint progresses, the connections are armed
 * and progress again (a completion between the two would not wake the fd);
 * -FI_EAGAIN while completions wait to be read, else 0, the fd then becomes
 * readable at the next one.  It returned 0 without looking, and the test
 * slept forever beside its completions.
 */
int mfi_cq_trywait(struct mfi_cq *cq)
{
	bool ready;

	if (cq->set.epfd < 0)
		return -FI_EINVAL;	/* FI_WAIT_NONE: no fd to wait on */
	mfi_lock(cq->dom);
	mfi_epset_arm(&cq->set, false);
	mfi_epset_progress(&cq->set);
	mfi_epset_arm(&cq->set, true);
	mfi_epset_progress(&cq->set);
	ready = cq->ring.count != 0;
	mfi_unlock(cq->dom);
	return ready ? -FI_EAGAIN : 0;
}

static ssize_t cq_sread(struct fid_cq *fid, void *buf, size_t count, const void *cond,
			int timeout)
{
	return cq_sreadfrom(fid, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *fid)
{
	struct mfi_cq *cq = container_of(fid, struct mfi_cq, cq_fid);
	uint64_t one = 1;

	return write(cq->sigfd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	return mfi_strerror(prov_errno, buf, len);
}

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

static int cq_close(struct fid *fid)
{
	struct mfi_cq *cq = container_of(fid, struct mfi_cq, cq_fid.fid);

	if (cq->set.n)
		return -FI_EBUSY;
	mfi_lock(cq->dom);
	cq->dom->refs--;
	mfi_unlock(cq->dom);
	mfi_waitfd_close(cq->set.epfd, cq->sigfd);
	mfi_cqring_fini(&cq->ring);
	mfi_epset_fini(&cq->set);
	free(cq);
	return 0;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct mfi_cq *cq = container_of(fid, struct mfi_cq, cq_fid.fid);

	if (command != FI_GETWAIT || cq->set.epfd < 0)
		return -FI_ENOSYS;
	*(int *)arg = cq->set.epfd;
	return 0;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = mfi_no_bind,
	.control = cq_control,
	.ops_open = mfi_no_ops_open,
	.tostr = mfi_no_tostr,
	.ops_set = mfi_no_ops_set,
};

int mfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **out,
		void *context)
{
	struct mfi_domain *d = container_of(domain, struct mfi_domain, domain_fid);
	enum fi_cq_format fmt = attr ? attr->format : FI_CQ_FORMAT_UNSPEC;
	enum fi_wait_obj wait = attr ? attr->wait_obj : FI_WAIT_NONE;
	struct mfi_cq *cq;

	if (fmt == FI_CQ_FORMAT_UNSPEC)
		fmt = FI_CQ_FORMAT_CONTEXT;
	if (!mfi_cq_entry_size(fmt))
		return -FI_ENOSYS;
	if (wait != FI_WAIT_NONE && wait != FI_WAIT_UNSPEC && wait != FI_WAIT_FD)
		return -FI_ENOSYS;	/* no wait sets, mutexes or yield */
	if (attr && (attr->flags & FI_AFFINITY))
		return -FI_ENOSYS;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->set.epfd = -1;
	cq->sigfd = -1;
	if (mfi_cqring_init(&cq->ring, attr && attr->size ? attr->size : MFI_CQ_DEFAULT))
		goto err;
	cq->dom = d;
	cq->format = fmt;
	mfi_idle_setup(&cq->idle);
	cq->wait_obj = wait == FI_WAIT_UNSPEC ? FI_WAIT_FD : wait;
	if (cq->wait_obj == FI_WAIT_FD && mfi_waitfd_open(&cq->set.epfd, &cq->sigfd))
		goto err;
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &cq_fi_ops;
	cq->cq_fid.ops = &cq_ops;
	mfi_lock(d);
	d->refs++;
	mfi_unlock(d);
	*out = &cq->cq_fid;
	return 0;
err:
	mfi_cqring_fini(&cq->ring);
	free(cq);
	return -FI_ENOMEM;
}
