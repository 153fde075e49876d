// SPDX-License-Identifier: MIT
/*
 * fi_suite: what the tests share: failing, byte patterns, the out-of-band TCP line,
 * the libfabric objects of an RDM test (struct fab), completions.
 */
#include "suite.h"

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fi_suite %s%s: FAIL: ", test ? test : "", server ? " (client)" : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

uint8_t pat(uint64_t i, uint64_t seed)
{
	return (uint8_t)((i + seed) * 2654435761u >> 13);
}

void fill(uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(i, seed);
}

void verify(const uint8_t *b, size_t n, uint64_t seed, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(i, seed))
			die("%s: byte %zu of %zu is 0x%02x, not 0x%02x", what, i, n, b[i], pat(i, seed));
}

static sa_family_t name_family(const void *name)
{
	sa_family_t fam;

	memcpy(&fam, name, sizeof(fam));
	return fam;
}

uint16_t name_port(const void *name)
{
	return ntohs(name_family(name) == AF_INET6 ? ((const struct sockaddr_in6 *)name)->sin6_port :
						     ((const struct sockaddr_in *)name)->sin_port);
}

void name_set_port(void *name, uint16_t p)
{
	if (name_family(name) == AF_INET6)
		((struct sockaddr_in6 *)name)->sin6_port = htons(p);
	else
		((struct sockaddr_in *)name)->sin_port = htons(p);
}

void name_set_ip(void *name, const char *ip)
{
	sa_family_t fam = name_family(name);
	void *a = fam == AF_INET6 ? (void *)&((struct sockaddr_in6 *)name)->sin6_addr :
				    (void *)&((struct sockaddr_in *)name)->sin_addr;

	if (inet_pton(fam, ip, a) != 1)
		die("%s is not an %s address (the endpoint's family)", ip,
		    fam == AF_INET6 ? "IPv6" : "IPv4");
}

/* ---- out of band: a TCP connection ------------------------------------------------ */

static int oob_listen_fd = -1;

/* The server listens on IPv6's and IPv4's port at once (dual-stack); the client dials either. */
int oob_open(void)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				     .sin6_addr = IN6ADDR_ANY_INIT };
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST |
				  AI_NUMERICSERV }, *res;
	char svc[16];
	int fd, one = 1, off = 0;

	if (!server) {
		if (oob_listen_fd < 0) {
			oob_listen_fd = socket(AF_INET6, SOCK_STREAM, 0);
			setsockopt(oob_listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			setsockopt(oob_listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
			if (bind(oob_listen_fd, (struct sockaddr *)&sin6, sizeof(sin6)) ||
			    listen(oob_listen_fd, 64))
				die("out-of-band port %d: %s", port, strerror(errno));
		}
		fd = accept(oob_listen_fd, NULL, NULL);
		if (fd < 0)
			die("accept: %s", strerror(errno));
		return fd;
	}
	snprintf(svc, sizeof(svc), "%d", port);
	if (getaddrinfo(server, svc, &hints, &res))
		die("server %s: not an IPv4 or IPv6 address", server);
	for (int i = 0;; i++) {
		fd = socket(res->ai_family, SOCK_STREAM, 0);
		if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		close(fd);
		if (i > 1200)
			die("no server at %s:%d", server, port);
		usleep(50 * 1000);
	}
}

/* The CQ read while waiting out of band: a target serves RMA and atomics only then. */
struct fid_cq *progress_cq;

void oob_xfer(int fd, void *out, const void *in, size_t len)
{
	size_t done = 0;

	if (write(fd, in, len) != (ssize_t)len)
		die("out-of-band write: %s", strerror(errno));
	while (done < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (progress_cq) {
			fi_cq_read(progress_cq, NULL, 0);
			if (poll(&p, 1, 0) == 0) {
				if (time(NULL) > deadline)
					die("timed out waiting out of band");
				continue;
			}
		}
		n = read(fd, (uint8_t *)out + done, len - done);

		if (n <= 0)
			die("out-of-band read: %s", n ? strerror(errno) : "closed");
		done += (size_t)n;
	}
}

void oob_sync(int fd)
{
	char a = 's', b;

	oob_xfer(fd, &b, &a, 1);
}

/*
 * -H: the first call only (the first size's first timed window); both: the peer holds
 * too, and the two start together (the server times tagged_bw, so it must not start
 * while the client still waits).
 */
void hold(int oob, bool both)
{
	char path[4096];
	int fd;

	if (!hold_path)
		return;
	snprintf(path, sizeof(path), "%s.held.%s", hold_path, srv ? "server" : "client");
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		die("-H: cannot create %s: %s", path, strerror(errno));
	close(fd);
	while (access(hold_path, F_OK)) {
		if (time(NULL) > deadline)
			die("-H: %s never appeared", hold_path);
		poll(NULL, 0, 10);
	}
	hold_path = NULL;
	if (both)
		oob_sync(oob);
}


/* ---- libfabric objects -------------------------------------------------------------- */


struct fi_info *hints_for(uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();

	h->ep_attr->type = FI_EP_RDM;
	h->caps = caps;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->fabric_attr->prov_name = strdup(prov);
	return h;
}

/*
 * Everything up to an enabled endpoint with len bytes registered (access for RMA
 * targets); bind, if given, binds more to the endpoint before it is enabled (its CQ
 * then with FI_SELECTIVE_COMPLETION).
 */
int fab_open_with(struct fab *f, uint64_t caps, size_t len, uint64_t access,
			 void (*bind)(struct fab *f))
{
	struct fi_info *h = hints_for(caps);
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = 8192 };
	int err = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &f->info);

	fi_freeinfo(h);
	if (err)
		return err;
	fic_domain_open(f->info, &cqa, &f->fabric, &f->domain, &f->av, &f->cq);
	if (bind) {
		CHECK(fi_endpoint(f->domain, f->info, &f->ep, NULL));
		CHECK(fi_ep_bind(f->ep, &f->av->fid, 0));
		CHECK(fi_ep_bind(f->ep, &f->cq->fid,
				 FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION));
		bind(f);
		CHECK(fi_enable(f->ep));
	} else {
		fic_ep_open(f->domain, f->info, f->av, f->cq, &f->ep);
	}
	f->len = len ? len : 1;
	f->buf = aligned_alloc(4096, (f->len + 4095) / 4096 * 4096);
	if (!f->buf)
		die("out of memory (%zu bytes)", f->len);
	memset(f->buf, 0, f->len);
	CHECK(fi_mr_reg(f->domain, f->buf, f->len, FI_SEND | FI_RECV | FI_READ | FI_WRITE | access,
			0, 0, 0, &f->mr, NULL));
	f->desc = fi_mr_desc(f->mr);
	progress_cq = f->cq;
	return 0;
}

int fab_open(struct fab *f, uint64_t caps, size_t len, uint64_t access)
{
	return fab_open_with(f, caps, len, access, NULL);
}

void fab_close(struct fab *f)
{
	progress_cq = NULL;
	if (f->ep)
		CHECK(fi_close(&f->ep->fid));
	if (f->mr)
		CHECK(fi_close(&f->mr->fid));
	CHECK(fi_close(&f->cq->fid));
	CHECK(fi_close(&f->av->fid));
	CHECK(fi_close(&f->domain->fid));
	CHECK(fi_close(&f->fabric->fid));
	fi_freeinfo(f->info);
	free(f->buf);
}

/* Exchange names over a new out-of-band connection; the peer goes into the AV. */
void fab_meet(struct fab *f)
{
	uint8_t mine[128] = { 0 }, theirs[128];
	size_t l = sizeof(mine) - 8;

	CHECK(fi_getname(&f->ep->fid, mine + 8, &l));
	memcpy(mine, &l, sizeof(l));
	f->oob = oob_open();
	oob_xfer(f->oob, theirs, mine, sizeof(mine));
	if (fi_av_insert(f->av, theirs + 8, 1, &f->peer, 0, NULL) != 1)
		die("fi_av_insert of the peer's name");
}

/* An operation context for each post (providers in FI_CONTEXT mode own it until completion). */
struct fi_context2 ctxs[4096];
unsigned ctx_i;

struct fi_cq_tagged_entry last;
fi_addr_t last_src;

/* n completions (any order); an error completion fails the test unless want_err. */
void reap(struct fab *f, int n)
{
	while (n > 0) {
		struct fi_cq_tagged_entry e[64];
		fi_addr_t src[64];
		ssize_t r = fi_cq_readfrom(f->cq, e, n < 64 ? n : 64, src);

		if (r > 0) {
			last = e[r - 1];
			last_src = src[r - 1];
			n -= (int)r;
		} else if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			fi_cq_readerr(f->cq, &ee, 0);
			die("error completion: %s (%s)", fi_strerror(ee.err),
			    fi_cq_strerror(f->cq, ee.prov_errno, ee.err_data, NULL, 0));
		} else if (r != -FI_EAGAIN) {
			die("fi_cq_read: %s", fi_strerror((int)-r));
		} else if (time(NULL) > deadline) {
			die("timed out waiting for %d completion(s)", n);
		}
	}
}

size_t max_size(void)
{
	size_t m = 0;

	for (int i = 0; i < nsizes; i++)
		m = sizes[i] > m ? sizes[i] : m;
	return m;
}

double ms_since(double t0)
{
	return (now_s() - t0) * 1000;
}
