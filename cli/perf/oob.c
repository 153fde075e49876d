// SPDX-License-Identifier: MIT
/*
 * mroc-perf's TCP side channel (see oob.h): sockets, framing, and the only
 * encoder/decoder of its messages.  Every length is checked before use; a
 * short or oversized body is -EPROTO.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "oob.h"

#define OOB_MAGIC	0x4d50		/* "MP" */
#define OOB_HDR		8
#define OOB_MAX_BODY	(OOB_MAX_QPS * 16 + 1024)	/* SETUP: 16 bytes per QP, then text */
#define OOB_BODY_MS	10000		/* the rest of a message once it started */

/* ---- encoding --------------------------------------------------------------------- */

struct wbuf {
	uint8_t b[OOB_HDR + OOB_MAX_BODY];
	size_t len;
	bool overflow;
};

static void put(struct wbuf *w, const void *p, size_t n)
{
	if (w->len + n > sizeof(w->b)) {
		w->overflow = true;
		return;
	}
	memcpy(w->b + w->len, p, n);
	w->len += n;
}

static void put_be(struct wbuf *w, uint64_t v, int bytes)
{
	uint8_t b[8];

	for (int i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
	put(w, b, (size_t)bytes);
}

static void put_u8(struct wbuf *w, uint8_t v) { put_be(w, v, 1); }
static void put_u16(struct wbuf *w, uint16_t v) { put_be(w, v, 2); }
static void put_u32(struct wbuf *w, uint32_t v) { put_be(w, v, 4); }
static void put_u64(struct wbuf *w, uint64_t v) { put_be(w, v, 8); }

static void put_dbl(struct wbuf *w, double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	put_u64(w, v);
}

static void put_str(struct wbuf *w, const char *s)
{
	size_t n = strnlen(s, OOB_TEXT - 1);

	put_u16(w, (uint16_t)n);
	put(w, s, n);
}

struct rbuf {
	const uint8_t *p;
	size_t len, off;
	bool err;
};

static uint64_t get_be(struct rbuf *r, int bytes)
{
	uint64_t v = 0;

	if (r->err || r->len - r->off < (size_t)bytes) {
		r->err = true;
		return 0;
	}
	for (int i = 0; i < bytes; i++)
		v = v << 8 | r->p[r->off + (size_t)i];
	r->off += (size_t)bytes;
	return v;
}

static uint8_t get_u8(struct rbuf *r) { return (uint8_t)get_be(r, 1); }
static uint16_t get_u16(struct rbuf *r) { return (uint16_t)get_be(r, 2); }
static uint32_t get_u32(struct rbuf *r) { return (uint32_t)get_be(r, 4); }
static uint64_t get_u64(struct rbuf *r) { return get_be(r, 8); }

static double get_dbl(struct rbuf *r)
{
	uint64_t v = get_u64(r);
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

/* A string into out[OOB_TEXT]; longer ones are malformed. */
static void get_str(struct rbuf *r, char *out)
{
	size_t n = get_u16(r);

	out[0] = '\0';
	if (r->err || n >= OOB_TEXT || r->len - r->off < n) {
		r->err = true;
		return;
	}
	memcpy(out, r->p + r->off, n);
	out[n] = '\0';
	r->off += n;
}

/* ---- message bodies --------------------------------------------------------------- */

static void enc_params(struct wbuf *w, const struct oob_params *p)
{
	put_u32(w, p->version);
	put_u8(w, p->test);
	put_u8(w, p->mode);
	put_u8(w, p->paths);
	put_u8(w, p->flags);
	put_u32(w, p->qps);
	put_u32(w, p->tx_depth);
	put_u32(w, p->rx_depth);
	put_u32(w, p->cq_mod);
	put_u64(w, p->size);
	put_u64(w, p->iters);
	put_u32(w, p->duration_s);
}

static void dec_params(struct rbuf *r, struct oob_params *p)
{
	p->version = get_u32(r);
	p->test = get_u8(r);
	p->mode = get_u8(r);
	p->paths = get_u8(r);
	p->flags = get_u8(r);
	p->qps = get_u32(r);
	p->tx_depth = get_u32(r);
	p->rx_depth = get_u32(r);
	p->cq_mod = get_u32(r);
	p->size = get_u64(r);
	p->iters = get_u64(r);
	p->duration_s = get_u32(r);
}

static void enc_qps(struct wbuf *w, const struct oob_qps *q)
{
	put_u64(w, q->service_id);
	put_str(w, q->mrocd);
	put_u32(w, q->n);
	for (uint32_t i = 0; i < q->n && i < OOB_MAX_QPS; i++) {
		put_u32(w, q->qp[i].qpn);
		put_u32(w, q->qp[i].rkey);
		put_u64(w, q->qp[i].region_len);
	}
}

static void dec_qps(struct rbuf *r, struct oob_qps *q)
{
	q->service_id = get_u64(r);
	get_str(r, q->mrocd);
	q->n = get_u32(r);
	if (q->n > OOB_MAX_QPS) {
		r->err = true;
		return;
	}
	for (uint32_t i = 0; i < q->n; i++) {
		q->qp[i].qpn = get_u32(r);
		q->qp[i].rkey = get_u32(r);
		q->qp[i].region_len = get_u64(r);
	}
}

static void enc_status(struct wbuf *w, const struct oob_status *s)
{
	put_u32(w, (uint32_t)s->status);
	put_str(w, s->text);
}

static void dec_status(struct rbuf *r, struct oob_status *s)
{
	s->status = (int32_t)get_u32(r);
	get_str(r, s->text);
}

static void enc_done(struct wbuf *w, const struct oob_done *d)
{
	enc_status(w, &d->st);
	put_u8(w, d->kind);
	put_u64(w, d->bw.size);
	put_u64(w, d->bw.iters);
	put_u64(w, d->bw.msgs);
	put_u64(w, d->bw.ns);
	put_dbl(w, d->bw.peak_gbps);
	put_dbl(w, d->bw.avg_gbps);
	put_dbl(w, d->bw.mpps);
	put_u64(w, d->lat_size);
	put_u64(w, d->lat_iters);
	put_u64(w, d->lat.n);
	put_dbl(w, d->lat.min);
	put_dbl(w, d->lat.max);
	put_dbl(w, d->lat.typical);
	put_dbl(w, d->lat.avg);
	put_dbl(w, d->lat.stdev);
	put_dbl(w, d->lat.p99);
	put_dbl(w, d->lat.p999);
	put_u32(w, d->n);
	for (uint32_t i = 0; i < d->n && i < OOB_MAX_QPS; i++)
		put_u64(w, d->msgs[i]);
}

static void dec_done(struct rbuf *r, struct oob_done *d)
{
	dec_status(r, &d->st);
	d->kind = get_u8(r);
	d->bw.size = get_u64(r);
	d->bw.iters = get_u64(r);
	d->bw.msgs = get_u64(r);
	d->bw.ns = get_u64(r);
	d->bw.peak_gbps = get_dbl(r);
	d->bw.avg_gbps = get_dbl(r);
	d->bw.mpps = get_dbl(r);
	d->lat_size = get_u64(r);
	d->lat_iters = get_u64(r);
	d->lat.n = get_u64(r);
	d->lat.min = get_dbl(r);
	d->lat.max = get_dbl(r);
	d->lat.typical = get_dbl(r);
	d->lat.avg = get_dbl(r);
	d->lat.stdev = get_dbl(r);
	d->lat.p99 = get_dbl(r);
	d->lat.p999 = get_dbl(r);
	d->n = get_u32(r);
	if (d->n > OOB_MAX_QPS || d->kind > OOB_RES_LAT) {
		r->err = true;
		return;
	}
	for (uint32_t i = 0; i < d->n; i++)
		d->msgs[i] = get_u64(r);
}

static void encode(struct wbuf *w, const struct oob_msg *m)
{
	switch (m->type) {
	case OOB_PARAMS:
		enc_params(w, &m->u.params);
		break;
	case OOB_SETUP:
	case OOB_CLIENT_QPS:
		enc_qps(w, &m->u.qps);
		break;
	case OOB_RUN:
		put_u64(w, m->u.run.size);
		put_u64(w, m->u.run.iters);
		put_u32(w, m->u.run.duration_s);
		break;
	case OOB_VERIFY:
		put_u64(w, m->u.verify.first);
		put_u64(w, m->u.verify.count);
		break;
	case OOB_READY:
	case OOB_VERIFY_ACK:
	case OOB_ERROR:
		enc_status(w, &m->u.status);
		break;
	case OOB_DONE:
	case OOB_DONE_ACK:
		enc_done(w, &m->u.done);
		break;
	default:
		break;
	}
}

static int decode(struct rbuf *r, struct oob_msg *m)
{
	switch (m->type) {
	case OOB_PARAMS:
		dec_params(r, &m->u.params);
		break;
	case OOB_SETUP:
	case OOB_CLIENT_QPS:
		dec_qps(r, &m->u.qps);
		break;
	case OOB_RUN:
		m->u.run.size = get_u64(r);
		m->u.run.iters = get_u64(r);
		m->u.run.duration_s = get_u32(r);
		break;
	case OOB_VERIFY:
		m->u.verify.first = get_u64(r);
		m->u.verify.count = get_u64(r);
		break;
	case OOB_READY:
	case OOB_VERIFY_ACK:
	case OOB_ERROR:
		dec_status(r, &m->u.status);
		break;
	case OOB_DONE:
	case OOB_DONE_ACK:
		dec_done(r, &m->u.done);
		break;
	case OOB_BYE:
		break;
	default:
		return -EPROTO;
	}
	return r->err || r->off != r->len ? -EPROTO : 0;
}

const char *oob_type_name(uint16_t type)
{
	static const char *const names[] = {
		[OOB_PARAMS] = "PARAMS", [OOB_SETUP] = "SETUP", [OOB_CLIENT_QPS] = "CLIENT_QPS",
		[OOB_RUN] = "RUN", [OOB_READY] = "READY", [OOB_VERIFY] = "VERIFY",
		[OOB_VERIFY_ACK] = "VERIFY_ACK", [OOB_DONE] = "DONE", [OOB_DONE_ACK] = "DONE_ACK",
		[OOB_BYE] = "BYE", [OOB_ERROR] = "ERROR",
	};

	return type < sizeof(names) / sizeof(names[0]) && names[type] ? names[type] : "?";
}

/* ---- sockets ---------------------------------------------------------------------- */

void oob_init(struct oob *o)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->lfd = -1;
}

void oob_close(struct oob *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (o->lfd >= 0)
		close(o->lfd);
	o->fd = o->lfd = -1;
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void addr_text(const struct sockaddr *sa, char *out, size_t n)
{
	const void *a;

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		a = &s6->sin6_addr;
		/* An IPv4 client on the dual-stack socket: its plain IPv4 address. */
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], out, (socklen_t)n);
			return;
		}
		inet_ntop(AF_INET6, a, out, (socklen_t)n);
	} else {
		a = &((const struct sockaddr_in *)sa)->sin_addr;
		inet_ntop(AF_INET, a, out, (socklen_t)n);
	}
}

int oob_listen(struct oob *o, uint16_t port)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, zero = 0, fd, err;

	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, (struct sockaddr *)&s6, sizeof(s6)) == 0 && listen(fd, 1) == 0)
			goto done;
		close(fd);
	}
	/* No IPv6 on this host: IPv4 only. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&s4, sizeof(s4)) || listen(fd, 1)) {
		err = -errno;
		close(fd);
		return err;
	}
done:
	o->lfd = fd;
	return 0;
}

int oob_accept(struct oob *o, int timeout_ms)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct pollfd p = { .fd = o->lfd, .events = POLLIN };
	int fd, n;

	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	fd = accept4(o->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	if (fd < 0)
		return -errno;
	set_nodelay(fd);
	addr_text((struct sockaddr *)&ss, o->peer, sizeof(o->peer));
	close(o->lfd);
	o->lfd = -1;
	o->fd = fd;
	return 0;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int oob_connect(struct oob *o, const char *host, uint16_t port, int retry_ms)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	uint64_t deadline = mono_ms() + (uint64_t)(retry_ms > 0 ? retry_ms : 0);
	struct addrinfo *res, *ai;
	char service[8];
	int err, fd;

	snprintf(service, sizeof(service), "%u", port);
	err = getaddrinfo(host, service, &hints, &res);
	if (err)
		return err == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	for (;;) {
		err = -EHOSTUNREACH;
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
			if (fd < 0) {
				err = -errno;
				continue;
			}
			if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
				set_nodelay(fd);
				addr_text(ai->ai_addr, o->peer, sizeof(o->peer));
				o->fd = fd;
				freeaddrinfo(res);
				return 0;
			}
			err = -errno;
			close(fd);
		}
		/* The server may be starting: retry what a missing listener gives. */
		if (err != -ECONNREFUSED || mono_ms() >= deadline)
			break;
		usleep(100 * 1000);
	}
	freeaddrinfo(res);
	return err;
}

/* ---- frames ----------------------------------------------------------------------- */

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno == EPIPE ? -ECONNRESET : -errno;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Read exactly n bytes; the first wait is timeout_ms, later ones OOB_BODY_MS. */
static int read_all(int fd, uint8_t *p, size_t n, int timeout_ms)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	while (n) {
		int k = poll(&pf, 1, timeout_ms);
		ssize_t got;

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -ETIMEDOUT;
		got = recv(fd, p, n, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -ECONNRESET;
		p += got;
		n -= (size_t)got;
		timeout_ms = OOB_BODY_MS;
	}
	return 0;
}

int oob_send(struct oob *o, const struct oob_msg *m)
{
	static __thread struct wbuf w;
	size_t body;

	if (o->fd < 0)
		return -ENOTCONN;
	w.len = OOB_HDR;
	w.overflow = false;
	encode(&w, m);
	if (w.overflow)
		return -EMSGSIZE;
	body = w.len - OOB_HDR;
	w.b[0] = OOB_MAGIC >> 8;
	w.b[1] = OOB_MAGIC & 0xff;
	w.b[2] = (uint8_t)(m->type >> 8);
	w.b[3] = (uint8_t)m->type;
	for (int i = 0; i < 4; i++)
		w.b[4 + i] = (uint8_t)(body >> (8 * (3 - i)));
	return write_all(o->fd, w.b, w.len);
}

int oob_send_type(struct oob *o, uint16_t type)
{
	struct oob_msg m = { .type = type };

	return oob_send(o, &m);
}

int oob_send_status(struct oob *o, uint16_t type, int status, const char *text)
{
	struct oob_msg m = { .type = type };

	m.u.status.status = status;
	snprintf(m.u.status.text, sizeof(m.u.status.text), "%s", text ? text : "");
	return oob_send(o, &m);
}

int oob_recv(struct oob *o, struct oob_msg *m, int timeout_ms)
{
	static __thread uint8_t body[OOB_MAX_BODY];
	uint8_t h[OOB_HDR];
	struct rbuf r = { .p = body };
	uint32_t len;
	int err;

	if (o->fd < 0)
		return -ENOTCONN;
	err = read_all(o->fd, h, sizeof(h), timeout_ms);
	if (err)
		return err;
	len = (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7];
	if ((h[0] << 8 | h[1]) != OOB_MAGIC || len > OOB_MAX_BODY)
		return -EPROTO;
	err = read_all(o->fd, body, len, OOB_BODY_MS);
	if (err)
		return err;
	memset(m, 0, sizeof(*m));
	m->type = (uint16_t)(h[2] << 8 | h[3]);
	r.len = len;
	return decode(&r, m);
}

int oob_wait(struct oob *o, int timeout_ms)
{
	struct pollfd p = { .fd = o->fd, .events = POLLIN };
	int n = poll(&p, 1, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n > 0;
}

int oob_readable(struct oob *o)
{
	return oob_wait(o, 0);
}
