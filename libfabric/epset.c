// SPDX-License-Identifier: MIT
/*
 * The endpoints a CQ or a counter is bound to: progress is manual, so
 * reading either runs progress on each of them, and sleeping on either
 * (FI_WAIT_FD) waits on an epoll set of their connections' completion fds,
 * armed after a sweep.  One set of rules for both: a counter's wait and a
 * CQ's sread must not differ in what wakes them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <mroc/mroc.h>

#include "mrocfi.h"

static bool epset_has(const struct mfi_epset *s, const struct mfi_ep *ep)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->eps[i] == ep)
			return true;
	return false;
}

/* 1 if ep joined, 0 if it was there, -FI_ENOMEM.  Its connections join the epoll set. */
int mfi_epset_add(struct mfi_epset *s, struct mfi_ep *ep)
{
	struct mfi_ep **n;

	if (epset_has(s, ep))
		return 0;
	n = realloc(s->eps, (s->n + 1) * sizeof(*n));
	if (!n)
		return -FI_ENOMEM;
	s->eps = n;
	s->eps[s->n++] = ep;
	for (struct mfi_conn *c = ep->conns; c; c = c->next)
		mfi_epset_watch(s, c);
	return 1;
}

void mfi_epset_del(struct mfi_epset *s, struct mfi_ep *ep)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->eps[i] == ep) {
			s->eps[i] = s->eps[--s->n];
			return;
		}
}

void mfi_epset_fini(struct mfi_epset *s)
{
	free(s->eps);
	s->eps = NULL;
	s->n = 0;
}

/* Progress on every endpoint: the completions found. */
int mfi_epset_progress(const struct mfi_epset *s)
{
	int n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += mfi_ep_progress(s->eps[i]);
	return n;
}

/* Arm (or acknowledge) every connection of every endpoint. */
void mfi_epset_arm(const struct mfi_epset *s, bool arm)
{
	for (size_t i = 0; i < s->n; i++)
		for (struct mfi_conn *c = s->eps[i]->conns; c; c = c->next) {
			if (arm)
				mroc_req_notify(c->qp);
			else
				mroc_ack_notify(c->qp);
		}
}

/*
 * A connection's completion fd joins an epoll set (epfd < 0: none; closing
 * the fd removes it; a second add, for an endpoint bound twice, is EEXIST).
 * The EQ's set (eq.c) takes them too.
 */
int mfi_epoll_watch(int epfd, struct mfi_conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

	if (epfd < 0 || !c->qp)
		return 0;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, mroc_cq_fd(c->qp), &ev) && errno != EEXIST)
		return -errno;
	return 0;
}

int mfi_epset_watch(const struct mfi_epset *s, struct mfi_conn *c)
{
	return mfi_epoll_watch(s->epfd, c);
}

/*
 * FI_WAIT_FD's fd for a CQ, counter or EQ: an epoll set holding an eventfd
 * that the object writes when something it queued by itself (fi_cq_signal,
 * fi_cntr_add, an EQ entry) must wake a sleeper; completion fds join as
 * connections open.  0, or -FI_ENOMEM with both -1.
 */
int mfi_waitfd_open(int *epfd, int *sigfd)
{
	struct epoll_event ev = { .events = EPOLLIN };

	*epfd = epoll_create1(EPOLL_CLOEXEC);
	*sigfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (*epfd >= 0 && *sigfd >= 0 && !epoll_ctl(*epfd, EPOLL_CTL_ADD, *sigfd, &ev))
		return 0;
	mfi_waitfd_close(*epfd, *sigfd);
	*epfd = *sigfd = -1;
	return -FI_ENOMEM;
}

void mfi_waitfd_close(int epfd, int sigfd)
{
	if (epfd >= 0)
		close(epfd);
	if (sigfd >= 0)
		close(sigfd);
}

/* Wakes whoever sleeps on the set (sigfd < 0: none). */
void mfi_waitfd_signal(int sigfd)
{
	uint64_t one = 1;

	/* Fails only with the count at its maximum, when the fd is readable anyway. */
	if (sigfd >= 0)
		(void)!write(sigfd, &one, sizeof(one));
}

/* The eventfd is no longer readable (-EAGAIN when nothing was written since). */
void mfi_waitfd_drain(int sigfd)
{
	uint64_t v;

	if (sigfd >= 0)
		(void)!read(sigfd, &v, sizeof(v));
}
