// SPDX-License-Identifier: MIT
/*
 * Kernel TCP with NCCL's net semantics, as NCCL's own socket transport
 * (net_socket.cc) has them: one TCP connection per comm (TCP_NODELAY), a
 * size header before each message, sends and receives matched in posting
 * order, non-blocking connect/accept returning NULL until done, 32 requests
 * in flight, progress made by test().  The ring runs over it unchanged, so
 * the benchmark compares transports and nothing else.  One buffer per
 * receive (NCCL's socket transport has maxRecvs 1 as well).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

#define TCP_REQS	NCCL_REQS_PER_COMM
#define TCP_MAGIC	0x74637021u

struct thandle {
	uint32_t magic;
	uint8_t stage;
	struct sockaddr_in sin;
	int fd;					/* connect's socket while it connects */
};
static_assert(sizeof(struct thandle) <= NCCL_HANDLE_BYTES, "fits the handle");

struct tcomm;

struct treq {
	struct tcomm *c;
	int used, done;
	char *data;
	size_t size;				/* send: its size; receive: room, then what came */
	uint64_t hdr;
	size_t off;				/* bytes of header + payload moved */
};

struct tcomm {
	int fd;
	bool recv;
	int failed;
	struct treq reqs[TCP_REQS];
	unsigned int posted, cur;		/* next slot to post, the one in progress */
};

struct tnet { struct sockaddr_in local; };

static int set_nonblock(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int t_props(struct hnet *n, struct nccl_props_v9 *p)
{
	memset(p, 0, sizeof(*p));
	p->name = "tcp";
	p->max_recvs = 1;
	p->ptr_support = NCCL_PTR_HOST_MEM;
	return 0;
}

static int t_listen(struct hnet *n, void *handle, void **lc)
{
	struct tnet *t = n->priv;
	struct thandle *h = handle;
	struct sockaddr_in sin = t->local;
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	sin.sin_port = 0;
	if (fd < 0 || bind(fd, (void *)&sin, sizeof(sin)) || listen(fd, 16) ||
	    getsockname(fd, (void *)&sin, &len))
		h_die("tcp listen: %s", strerror(errno));
	memset(h, 0, NCCL_HANDLE_BYTES);
	h->magic = TCP_MAGIC;
	h->sin = sin;
	*lc = (void *)(intptr_t)(fd + 1);
	return 0;
}

static struct tcomm *tcomm_new(int fd, bool recv)
{
	struct tcomm *c = calloc(1, sizeof(*c));

	H_CHECK(c, "out of memory");
	c->fd = fd;
	c->recv = recv;
	set_nonblock(fd);
	return c;
}

static int t_connect(struct hnet *n, void *handle, void **sc)
{
	struct thandle *h = handle;
	int err = 0;
	socklen_t len = sizeof(err);

	*sc = NULL;
	if (h->stage == 0) {
		h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (h->fd < 0 || (connect(h->fd, (void *)&h->sin, sizeof(h->sin)) && errno != EINPROGRESS))
			h_die("tcp connect: %s", strerror(errno));
		h->stage = 1;
		return 0;
	}
	/* Connected when writable with no error (a zero-timeout poll through getsockopt). */
	if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err)
		h_die("tcp connect: %s", strerror(err ? err : errno));
	{
		struct sockaddr_in peer;
		socklen_t plen = sizeof(peer);

		if (getpeername(h->fd, (void *)&peer, &plen))
			return 0;	/* not yet */
	}
	*sc = tcomm_new(h->fd, false);
	h->stage = 0;
	return 0;
}

static int t_accept(struct hnet *n, void *lc, void **rc)
{
	int fd = accept4((int)(intptr_t)lc - 1, NULL, NULL, SOCK_CLOEXEC);

	*rc = NULL;
	if (fd < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		h_die("tcp accept: %s", strerror(errno));
	}
	*rc = tcomm_new(fd, true);
	return 0;
}

static int t_reg(struct hnet *n, void *comm, void *data, size_t size, void **mh)
{
	*mh = data;
	return 0;
}

static int t_dereg(struct hnet *n, void *comm, void *mh) { return 0; }

/* One send or recv of up to len bytes: moved (> 0), 0 = would block, < 0 = failed. */
static ssize_t t_io(struct tcomm *c, char *p, size_t len)
{
	ssize_t k = c->recv ? recv(c->fd, p, len, 0) : send(c->fd, p, len, MSG_NOSIGNAL);

	if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (k < 0 || (k == 0 && c->recv)) {
		c->failed = k < 0 ? errno : ECONNRESET;
		return -1;
	}
	return k;
}

/* Moves bytes for the requests in order until the socket would block. */
static void t_progress(struct tcomm *c)
{
	while (c->cur != c->posted && !c->failed) {
		struct treq *q = &c->reqs[c->cur % TCP_REQS];
		ssize_t k;

		if (q->off < sizeof(q->hdr)) {
			k = t_io(c, (char *)&q->hdr + q->off, sizeof(q->hdr) - q->off);
			if (k <= 0)
				return;
			q->off += (size_t)k;
			if (q->off < sizeof(q->hdr))
				continue;
			if (c->recv) {
				if (q->hdr > q->size)
					h_die("tcp: %llu bytes into a receive of %zu",
					      (unsigned long long)q->hdr, q->size);
				q->size = q->hdr;
			}
		}
		if (q->off - sizeof(q->hdr) < q->size) {
			size_t at = q->off - sizeof(q->hdr);

			k = t_io(c, q->data + at, q->size - at);
			if (k <= 0)
				return;
			q->off += (size_t)k;
			if (q->off - sizeof(q->hdr) < q->size)
				continue;
		}
		q->done = 1;
		c->cur++;
	}
}

static struct treq *t_post(struct tcomm *c, void *data, size_t size)
{
	struct treq *q = &c->reqs[c->posted % TCP_REQS];

	if (q->used)
		return NULL;
	*q = (struct treq){ .c = c, .used = 1, .data = data, .size = size, .hdr = size };
	c->posted++;
	return q;
}

static int t_isend(struct hnet *n, void *sc, void *data, size_t size, int tag, void *mh, void **req)
{
	*req = t_post(sc, data, size);
	t_progress(sc);
	return 0;
}

static int t_irecv(struct hnet *n, void *rc, int nb, void **data, size_t *sizes, int *tags,
		   void **mhs, void **req)
{
	H_CHECK(nb == 1, "tcp: one buffer per receive");
	*req = t_post(rc, data[0], sizes[0]);
	t_progress(rc);
	return 0;
}

static int t_test(struct hnet *n, void *req, int *done, int *sizes)
{
	struct treq *q = req;

	t_progress(q->c);
	if (q->c->failed)
		return NCCL_ERR_REMOTE;
	*done = q->done;
	if (q->done) {
		if (sizes)
			sizes[0] = (int)q->size;
		q->used = 0;
	}
	return 0;
}

static int t_close(struct hnet *n, void *comm)
{
	struct tcomm *c = comm;

	close(c->fd);
	free(c);
	return 0;
}

static int t_close_listen(struct hnet *n, void *lc)
{
	close((int)(intptr_t)lc - 1);
	return 0;
}

int hnet_tcp_open(const char *addr, struct hnet *out)
{
	static struct tnet tnet;	/* one per process */
	struct tnet *t = &tnet;

	t->local.sin_family = AF_INET;
	H_CHECK(inet_pton(AF_INET, addr, &t->local.sin_addr) == 1, "tcp: bad address %s", addr);
	*out = (struct hnet){
		.what = "tcp", .props = t_props, .listen = t_listen, .connect = t_connect,
		.accept = t_accept, .reg = t_reg, .dereg = t_dereg, .isend = t_isend,
		.irecv = t_irecv, .test = t_test, .close_send = t_close, .close_recv = t_close,
		.close_listen = t_close_listen, .priv = t,
	};
	return 0;
}
