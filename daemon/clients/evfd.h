/* SPDX-License-Identifier: MIT */
/*
 * Eventfds a client hands over (its doorbells, its QPs' completion channels):
 * checked once, then signalled by the worker without ever blocking, whatever
 * the client does to the fd meanwhile (doorbells are never read: clients.c
 * takes them through epoll; evfd_drain serves mrocd's own eventfds).
 *
 * A client owns the open file: it can clear O_NONBLOCK with fcntl() at any
 * time, and it can push the counter to its maximum, where a write(2) of 1
 * sleeps until somebody reads.  So the worker neither trusts the file's
 * flags nor writes: it reads with preadv2(RWF_NOWAIT) and has the kernel
 * signal the eventfd for it (Linux AIO's IOCB_FLAG_RESFD, which uses
 * eventfd_signal(): it saturates, it never sleeps).
 */
#ifndef MROCD_EVFD_H
#define MROCD_EVFD_H

#include <stdbool.h>

/*
 * 0 if fd is an eventfd in counter mode (not EFD_SEMAPHORE: one read must
 * reset it), -EBADFD if it is anything else; sets O_NONBLOCK on it.
 */
int evfd_check(int fd);

/* Reset the counter without blocking.  True if it was non-zero. */
bool evfd_drain(int fd);

struct evfd_signaller;

/* Worker thread only.  0 or -errno; without AIO, see evfd_signal(). */
int evfd_signaller_create(struct evfd_signaller **out);
void evfd_signaller_destroy(struct evfd_signaller *s);
/*
 * Collect every completion the kernel holds for s, as if it were new
 * (tests/fuzz/fuzz_client.c hands one to every input's clients table).
 */
void evfd_signaller_reap(struct evfd_signaller *s);
/*
 * Add 1 to the eventfd fd (checked by evfd_check), never blocking.  0 or
 * -errno.  Where the kernel has no AIO (io_setup failed), falls back to a
 * write(2) relying on O_NONBLOCK, which a hostile client could clear.
 */
int evfd_signal(struct evfd_signaller *s, int fd);
/*
 * Add 1 to each of n eventfds, as evfd_signal does, in as few system calls
 * as it can: one io_submit for up to AIO_EVENTS / 2 of them (evfd.c).  Adds
 * the system calls it made to *calls, and the fds it could not signal to
 * *failed (a client sleeping on one of those is not woken: the counter
 * clients.cq_signal_failed tells such a stall from others).  0, or the
 * first -errno (the others are still signalled).
 */
int evfd_signal_many(struct evfd_signaller *s, const int *fds, unsigned int n,
		     unsigned int *calls, unsigned int *failed);

#endif
