// SPDX-License-Identifier: MIT
/* Client eventfds, read and signalled without blocking (see evfd.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "evfd.h"
#include "log.h"

#define AIO_EVENTS	256	/* completions the kernel may hold before we reap them */

struct evfd_signaller {
	aio_context_t ctx;	/* 0: no AIO, write(2) instead */
	int ready;		/* our own eventfd, counter 0: always writable */
	unsigned int unreaped;
};

/* "eventfd-semaphore: 1" in /proc/self/fdinfo: one read would not reset it. */
static bool is_semaphore(int fd)
{
	char path[64], line[128];
	bool sem = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return true;	/* cannot tell: refuse */
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "eventfd-semaphore:", 18))
			sem = strtol(line + 18, NULL, 10) != 0;
	fclose(f);
	return sem;
}

int evfd_check(int fd)
{
	static const char want[] = "anon_inode:[eventfd]";
	char path[64], link[sizeof(want)];
	struct stat st;
	ssize_t n;
	int fl;

	/* Anonymous inodes have no file type bits; pipes, sockets and files do. */
	if (fstat(fd, &st) || (st.st_mode & S_IFMT))
		return -EBADFD;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link));
	if (n != (ssize_t)sizeof(want) - 1 || memcmp(link, want, sizeof(want) - 1))
		return -EBADFD;
	if (is_semaphore(fd))
		return -EBADFD;
	/* Only for the fallbacks below: the client can clear it again. */
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK)))
		return -errno;
	return 0;
}

bool evfd_drain(int fd)
{
	struct iovec iov;
	uint64_t v = 0;
	ssize_t n;

	iov = (struct iovec){ .iov_base = &v, .iov_len = sizeof(v) };
	/* RWF_NOWAIT: EAGAIN at 0 even if the client cleared O_NONBLOCK. */
	n = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);
	if (n < 0 && errno == EOPNOTSUPP)
		n = read(fd, &v, sizeof(v));	/* a kernel without it (before 5.11) */
	return n == sizeof(v) && v;
}

int evfd_signaller_create(struct evfd_signaller **out)
{
	struct evfd_signaller *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->ready = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->ready < 0) {
		int err = -errno;

		free(s);
		return err;
	}
	if (syscall(SYS_io_setup, AIO_EVENTS, &s->ctx)) {
		pr_warn("no Linux AIO (io_setup: %s): completion channels are written with "
			"write(2); a client that clears O_NONBLOCK on its eventfd can stall the "
			"worker", strerror(errno));
		s->ctx = 0;
	}
	*out = s;
	return 0;
}

void evfd_signaller_destroy(struct evfd_signaller *s)
{
	if (!s)
		return;
	if (s->ctx)
		syscall(SYS_io_destroy, s->ctx);
	close(s->ready);
	free(s);
}

static void reap(struct evfd_signaller *s)
{
	struct io_event ev[AIO_EVENTS];
	struct timespec zero = { 0 };
	long n = syscall(SYS_io_getevents, s->ctx, 0L, (long)AIO_EVENTS, ev, &zero);

	if (n > 0)
		s->unreaped -= (unsigned int)n < s->unreaped ? (unsigned int)n : s->unreaped;
}

void evfd_signaller_reap(struct evfd_signaller *s)
{
	unsigned int before;

	if (!s || !s->ctx)
		return;
	do {
		before = s->unreaped;
		reap(s);
	} while (s->unreaped && s->unreaped < before);
}

/*
 * A poll for POLLOUT on our always-writable eventfd completes at once, and
 * its completion signals the client's eventfd (IOCB_FLAG_RESFD) from inside
 * the kernel: no write(2) on a file the client controls.
 */
static int signal_aio(struct evfd_signaller *s, int fd)
{
	struct iocb cb = {
		.aio_lio_opcode = IOCB_CMD_POLL,
		.aio_fildes = (uint32_t)s->ready,
		.aio_buf = POLLOUT,
		.aio_flags = IOCB_FLAG_RESFD,
		.aio_resfd = (uint32_t)fd,
	};
	struct iocb *cbs[1] = { &cb };

	if (s->unreaped >= AIO_EVENTS / 2)
		reap(s);
	if (syscall(SYS_io_submit, s->ctx, 1L, cbs) != 1) {
		if (errno != EAGAIN)
			return -errno;
		reap(s);	/* completions we have not collected yet */
		if (syscall(SYS_io_submit, s->ctx, 1L, cbs) != 1)
			return -errno;
	}
	s->unreaped++;
	return 0;
}

/* Up to AIO_EVENTS / 2 polls in one io_submit; each completes at once and signals its fd. */
static int signal_aio_many(struct evfd_signaller *s, const int *fds, unsigned int n,
			   unsigned int *calls, unsigned int *failed)
{
	struct iocb cb[AIO_EVENTS / 2], *cbs[AIO_EVENTS / 2];
	unsigned int done = 0;
	bool retried = false;
	int err = 0;
	long got;

	for (unsigned int i = 0; i < n; i++) {
		cb[i] = (struct iocb){
			.aio_lio_opcode = IOCB_CMD_POLL,
			.aio_fildes = (uint32_t)s->ready,
			.aio_buf = POLLOUT,
			.aio_flags = IOCB_FLAG_RESFD,
			.aio_resfd = (uint32_t)fds[i],
		};
		cbs[i] = &cb[i];
	}
	while (done < n) {
		if (s->unreaped + (n - done) > AIO_EVENTS / 2) {
			reap(s);
			(*calls)++;
		}
		got = syscall(SYS_io_submit, s->ctx, (long)(n - done), cbs + done);
		(*calls)++;
		if (got > 0) {
			done += (unsigned int)got;
			s->unreaped += (unsigned int)got;
			retried = false;
			continue;
		}
		if (got < 0 && errno == EAGAIN && !retried) {
			reap(s);	/* completions we have not collected yet */
			(*calls)++;
			retried = true;
			continue;
		}
		if (!err)
			err = got < 0 ? -errno : -EAGAIN;
		done++;		/* that one cannot be signalled; the others still are */
		(*failed)++;
		retried = false;
	}
	return err;
}

int evfd_signal_many(struct evfd_signaller *s, const int *fds, unsigned int n,
		     unsigned int *calls, unsigned int *failed)
{
	int err = 0, e;

	if (!s || !s->ctx) {
		for (unsigned int i = 0; i < n; i++) {
			e = evfd_signal(s, fds[i]);
			(*calls)++;
			if (e) {
				(*failed)++;
				if (!err)
					err = e;
			}
		}
		return err;
	}
	for (unsigned int i = 0; i < n; i += AIO_EVENTS / 2) {
		unsigned int k = n - i < AIO_EVENTS / 2 ? n - i : AIO_EVENTS / 2;

		e = signal_aio_many(s, fds + i, k, calls, failed);
		if (e && !err)
			err = e;
	}
	return err;
}

int evfd_signal(struct evfd_signaller *s, int fd)
{
	uint64_t one = 1;

	if (s && s->ctx)
		return signal_aio(s, fd);
	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;	/* EAGAIN: the counter is non-zero already */
	return 0;
}
