// SPDX-License-Identifier: MIT
/*
 * FI_ATOMIC end to end, written with libfabric only (any provider; the test
 * runs it with -p mroc).  One target and several clients, each client its
 * own FI_EP_RDM endpoint (so its own connection):
 *
 *   fi_atomic_check target DIR NCLIENTS ITERS
 *       registers the words below, writes "IP PORT KEY ADDR" to DIR/target,
 *       makes progress until every client has sent "done", then checks each
 *       word against what NCLIENTS clients of ITERS must have left; exit 0 if
 *       all hold.
 *   fi_atomic_check client DIR RANK ITERS
 *       writes DIR/ready.RANK and waits for DIR/go (so that the clients race),
 *       then ITERS/4 increments of word 1 by fi_compare_atomic FI_CSWAP (retried
 *       when another client got there first), ITERS fi_fetch_atomic FI_SUM +1
 *       on word 0 (8 in flight; the originals to DIR/orig.RANK, one a line:
 *       over all clients they must be 0 .. N*ITERS-1, each once), one
 *       fi_atomic each of MAX, MIN, BOR, BAND,
 *       BXOR (an inject), a 4-element FI_UINT32 SUM, a double SUM, an
 *       ATOMIC_WRITE then ATOMIC_READ of its own word, the errors a bad key
 *       and a misaligned word must give, the *valid queries; then "done".
 *
 * Prints what it checked; exit 1 and a message on the first mismatch.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "fi_common.h"

/* The target's words. */
enum {
	W_ADD,		/* fetch-add counter */
	W_CAS,		/* compare-and-swap counter */
	W_MAX, W_MIN, W_BOR, W_BAND, W_BXOR,
	W_U32,		/* 4 x uint32 (two words) */
	W_DBL = W_U32 + 2,
	W_OWN,		/* one per client from here */
	W_COUNT = W_OWN + 16,
};

#define WINDOW		8
#define TIMEOUT_S	120

struct fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	uint64_t words[W_COUNT];
	fi_addr_t peer;
	time_t deadline;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fi_atomic_check: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void fab_open(struct fab *f, struct fid_mr **mr_out, uint64_t *words)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_MSG, .size = 256 };

	if (!hints)
		die("fi_allocinfo");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_ATOMIC;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	hints->fabric_attr->prov_name = strdup(getenv("FI_PROVIDER") ? getenv("FI_PROVIDER") : "mroc");
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &f->info));
	fi_freeinfo(hints);
	if (!(f->info->caps & FI_ATOMIC))
		die("provider %s: no FI_ATOMIC in caps", f->info->fabric_attr->prov_name);
	fic_domain_open(f->info, &cqa, &f->fabric, &f->domain, &f->av, &f->cq);
	fic_ep_open(f->domain, f->info, f->av, f->cq, &f->ep);
	if (mr_out)
		CHECK(fi_mr_reg(f->domain, words, W_COUNT * sizeof(uint64_t),
				FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE, 0, 0, 0,
				mr_out, NULL));
	f->deadline = time(NULL) + TIMEOUT_S;
}

/*
 * Completions until want of them have arrived (errors included, each
 * counted); each one's flags and error into the caller's arrays when given.
 */
static int reap(struct fab *f, int want, void **ctx, uint64_t *flags, int *err)
{
	int got = 0;

	while (got < want) {
		struct fi_cq_msg_entry e;
		ssize_t n = fi_cq_read(f->cq, &e, 1);

		if (n == 1) {
			if (ctx)
				ctx[got] = e.op_context;
			if (flags)
				flags[got] = e.flags;
			if (err)
				err[got] = 0;
			got++;
		} else if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			if (fi_cq_readerr(f->cq, &ee, 0) != 1)
				die("fi_cq_readerr");
			if (ctx)
				ctx[got] = ee.op_context;
			if (err)
				err[got] = ee.err;
			else
				die("error completion: %s", fi_strerror(ee.err));
			got++;
		} else if (n != -FI_EAGAIN) {
			die("fi_cq_read: %s", fi_strerror((int)-n));
		} else if (time(NULL) > f->deadline) {
			die("timed out waiting for completions");
		}
	}
	return got;
}

/* Post with retries while the endpoint is full (progress in between). */
#define POST(f, call) do {							\
	ssize_t _r;								\
	while ((_r = (call)) == -FI_EAGAIN)					\
		fi_cq_read((f)->cq, NULL, 0);					\
	if (_r)									\
		die("%s: %s", #call, fi_strerror((int)-_r));			\
} while (0)

/* ---- target --------------------------------------------------------------------- */

static bool expect(const char *what, uint64_t got, uint64_t want)
{
	printf("%s: %" PRIu64 " (want %" PRIu64 ")%s\n", what, got, want, got == want ? "" : " MISMATCH");
	return got == want;
}

/* Atomics on the target's own words through its own address (served in-process). */
static void self_atomics(struct fab *f, const void *sin)
{
	uint64_t addr = (f->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
			(uint64_t)(uintptr_t)f->words : 0;
	uint64_t v = 7, old = 1, back = 0, slot = W_COUNT - 1;

	if (fi_av_insert(f->av, sin, 1, &f->peer, 0, NULL) != 1)
		die("fi_av_insert (self)");
	POST(f, fi_fetch_atomic(f->ep, &v, 1, NULL, &old, NULL, f->peer, addr + slot * 8,
				fi_mr_key(f->mr), FI_UINT64, FI_ATOMIC_WRITE, NULL));
	POST(f, fi_fetch_atomic(f->ep, NULL, 1, NULL, &back, NULL, f->peer, addr + slot * 8,
				fi_mr_key(f->mr), FI_UINT64, FI_ATOMIC_READ, NULL));
	reap(f, 2, NULL, NULL, NULL);
	if (old != 0 || back != 7 || f->words[slot] != 7)
		die("self: wrote 7 over %" PRIu64 ", read %" PRIu64 ", word %" PRIu64, old, back,
		    f->words[slot]);
	f->words[slot] = 0;
	printf("self: ATOMIC_WRITE then ATOMIC_READ on its own word\n");
}

static int target(const char *dir, int nclients, uint64_t iters)
{
	static struct fab f;
	struct sockaddr_storage sin;
	size_t len = sizeof(sin);
	char path[512], ip[INET6_ADDRSTRLEN], done[16][8];
	unsigned int port;
	uint32_t u32[4];
	double dbl;
	bool ok = true;
	FILE *fp;

	if (nclients < 1 || nclients > 16)
		die("1 .. 16 clients");
	f.words[W_MIN] = UINT64_MAX;
	f.words[W_BAND] = UINT64_MAX;
	fab_open(&f, &f.mr, f.words);
	CHECK(fi_getname(&f.ep->fid, &sin, &len));
	self_atomics(&f, &sin);
	for (int i = 0; i < nclients; i++)
		CHECK(fi_recv(f.ep, done[i], sizeof(done[i]), NULL, FI_ADDR_UNSPEC, done[i]));
	snprintf(path, sizeof(path), "%s/target.tmp", dir);
	fp = fopen(path, "w");
	if (!fp)
		die("%s: %s", path, strerror(errno));
	/* The target's name as text, IPv4 or IPv6 (the provider's FI_SOCKADDR_IN or _IN6). */
	if (sin.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sin)->sin6_addr, ip, sizeof(ip));
		port = ntohs(((struct sockaddr_in6 *)&sin)->sin6_port);
	} else {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&sin)->sin_addr, ip, sizeof(ip));
		port = ntohs(((struct sockaddr_in *)&sin)->sin_port);
	}
	fprintf(fp, "%s %u %" PRIu64 " %" PRIu64 "\n", ip, port, fi_mr_key(f.mr),
		(f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)f.words : 0);
	fclose(fp);
	{
		char final[512];

		snprintf(final, sizeof(final), "%s/target", dir);
		if (rename(path, final))
			die("rename: %s", strerror(errno));
	}
	/* Atomics are applied as this loop makes progress; "done" ends it. */
	reap(&f, nclients, NULL, NULL, NULL);
	ok &= expect("fetch-add counter", f.words[W_ADD], nclients * iters);
	ok &= expect("cswap counter", f.words[W_CAS], nclients * (iters / 4));
	ok &= expect("max", f.words[W_MAX], nclients);
	ok &= expect("min", f.words[W_MIN], 100 - (nclients - 1));
	ok &= expect("bor", f.words[W_BOR], (1u << nclients) - 1);
	ok &= expect("band", f.words[W_BAND], ~(uint64_t)((1u << nclients) - 1));
	ok &= expect("bxor", f.words[W_BXOR], (1u << nclients) - 1);
	memcpy(u32, &f.words[W_U32], sizeof(u32));
	for (int i = 0; i < 4; i++)
		ok &= expect("uint32 sum element", u32[i], (uint64_t)nclients * (i + 1));
	memcpy(&dbl, &f.words[W_DBL], sizeof(dbl));
	ok &= expect("double sum x 2", (uint64_t)(dbl * 2), (uint64_t)nclients * 3);
	for (int r = 0; r < nclients; r++)
		ok &= expect("own word", f.words[W_OWN + r], 1000 + r);
	return ok ? 0 : 1;
}

/* ---- client --------------------------------------------------------------------- */

static void read_target(struct fab *f, const char *dir, uint64_t *key, uint64_t *addr)
{
	char path[512], ip[64];
	unsigned int port;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	const void *name = &sin;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/target", dir);
	while (!(fp = fopen(path, "r"))) {
		if (time(NULL) > f->deadline)
			die("no %s", path);
		usleep(20000);
	}
	if (fscanf(fp, "%63s %u %" SCNu64 " %" SCNu64, ip, &port, key, addr) != 4)
		die("%s: bad contents", path);
	fclose(fp);
	sin.sin_port = sin6.sin6_port = htons((uint16_t)port);
	if (inet_pton(AF_INET6, ip, &sin6.sin6_addr) == 1)
		name = &sin6;
	else if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		die("bad address %s", ip);
	if (fi_av_insert(f->av, name, 1, &f->peer, 0, NULL) != 1)
		die("fi_av_insert");
}

/* ITERS fetch-adds, WINDOW in flight; the originals to DIR/orig.RANK. */
static void fetch_adds(struct fab *f, const char *dir, int rank, uint64_t iters, uint64_t key,
		       uint64_t addr)
{
	uint64_t *orig = calloc(iters, sizeof(*orig)), one = 1, posted = 0, done = 0;
	char path[512];
	FILE *fp;

	if (!orig)
		die("out of memory");
	while (done < iters) {
		while (posted < iters && posted - done < WINDOW) {
			POST(f, fi_fetch_atomic(f->ep, &one, 1, NULL, &orig[posted], NULL, f->peer,
						addr + W_ADD * 8, key, FI_UINT64, FI_SUM,
						&orig[posted]));
			posted++;
		}
		uint64_t flags;

		reap(f, 1, NULL, &flags, NULL);
		if ((flags & (FI_ATOMIC | FI_READ)) != (FI_ATOMIC | FI_READ))
			die("fetch-add completion flags %#" PRIx64, flags);
		done++;
	}
	snprintf(path, sizeof(path), "%s/orig.%d", dir, rank);
	fp = fopen(path, "w");
	if (!fp)
		die("%s: %s", path, strerror(errno));
	for (uint64_t i = 0; i < iters; i++)
		fprintf(fp, "%" PRIu64 "\n", orig[i]);
	fclose(fp);
	free(orig);
}

/* n increments of word 1, each a compare-and-swap retried on a race. */
static void cas_increments(struct fab *f, uint64_t n, uint64_t key, uint64_t addr)
{
	uint64_t seen = 0, old, next, retries = 0;
	double t0 = now_us();

	POST(f, fi_fetch_atomic(f->ep, NULL, 1, NULL, &seen, NULL, f->peer, addr + W_CAS * 8, key,
				FI_UINT64, FI_ATOMIC_READ, NULL));
	reap(f, 1, NULL, NULL, NULL);
	for (uint64_t i = 0; i < n;) {
		next = seen + 1;
		POST(f, fi_compare_atomic(f->ep, &next, 1, NULL, &seen, NULL, &old, NULL, f->peer,
					  addr + W_CAS * 8, key, FI_UINT64, FI_CSWAP, NULL));
		reap(f, 1, NULL, NULL, NULL);
		if (old == seen) {
			seen = next;
			i++;
		} else {
			seen = old;
			retries++;
		}
	}
	/* For the record only (never checked): one CSWAP's round trip, on average. */
	printf("cswap: %" PRIu64 " increments, %" PRIu64 " retries, %.1f us per CSWAP\n", n, retries,
	       (now_us() - t0) / (double)(n + retries + 1));
}

static void one_each(struct fab *f, int rank, uint64_t key, uint64_t addr)
{
	uint64_t v[5] = { (uint64_t)rank + 1, 100 - (uint64_t)rank, 1ull << rank,
			  ~(1ull << rank), 1ull << rank };
	static const enum fi_op ops[4] = { FI_MAX, FI_MIN, FI_BOR, FI_BAND };
	uint32_t add[4] = { 1, 2, 3, 4 }, before[4];
	double half = 1.5 / 2, dold;
	uint64_t own = 1000 + (uint64_t)rank, back = 0, junk;
	void *ctx[2];
	int err[2];

	for (int i = 0; i < 4; i++)
		POST(f, fi_atomic(f->ep, &v[i], 1, NULL, f->peer, addr + (W_MAX + i) * 8, key,
				  FI_UINT64, ops[i], NULL));
	POST(f, fi_inject_atomic(f->ep, &v[4], 1, f->peer, addr + W_BXOR * 8, key, FI_UINT64,
				 FI_BXOR));
	reap(f, 4, NULL, NULL, NULL);	/* the inject never completes */
	POST(f, fi_fetch_atomic(f->ep, add, 4, NULL, before, NULL, f->peer, addr + W_U32 * 8, key,
				FI_UINT32, FI_SUM, NULL));
	POST(f, fi_fetch_atomic(f->ep, &half, 1, NULL, &dold, NULL, f->peer, addr + W_DBL * 8, key,
				FI_DOUBLE, FI_SUM, NULL));
	reap(f, 2, NULL, NULL, NULL);
	half = 1.5 - half;	/* 0.75 + 0.75: 1.5 per client */
	POST(f, fi_atomic(f->ep, &half, 1, NULL, f->peer, addr + W_DBL * 8, key, FI_DOUBLE, FI_SUM,
			  NULL));
	POST(f, fi_fetch_atomic(f->ep, &own, 1, NULL, &junk, NULL, f->peer,
				addr + (W_OWN + rank) * 8, key, FI_UINT64, FI_ATOMIC_WRITE, NULL));
	POST(f, fi_fetch_atomic(f->ep, NULL, 1, NULL, &back, NULL, f->peer,
				addr + (W_OWN + rank) * 8, key, FI_UINT64, FI_ATOMIC_READ, NULL));
	reap(f, 3, NULL, NULL, NULL);
	if (back != own || junk != 0)
		die("own word: wrote %" PRIu64 ", read %" PRIu64 " (was %" PRIu64 ")", own, back, junk);
	/* A bad key and a misaligned word fail, and only that operation. */
	POST(f, fi_fetch_atomic(f->ep, &own, 1, NULL, &junk, NULL, f->peer, addr, key + 777,
				FI_UINT64, FI_SUM, &ctx[0]));
	POST(f, fi_fetch_atomic(f->ep, &own, 1, NULL, &junk, NULL, f->peer, addr + 4, key,
				FI_UINT64, FI_SUM, &ctx[1]));
	reap(f, 2, ctx, NULL, err);
	if (err[0] != FI_EACCES || err[1] != FI_EINVAL)
		die("bad key / misaligned: errors %d %d, want %d %d", err[0], err[1], FI_EACCES,
		    FI_EINVAL);
	printf("one each of max, min, bor, band, bxor (inject), uint32 x4 and double sums, "
	       "write/read; bad key -> FI_EACCES, misaligned -> FI_EINVAL\n");
}

static void queries(struct fab *f)
{
	struct fi_atomic_attr attr;
	size_t count = 0;

	CHECK(fi_query_atomic(f->domain, FI_UINT64, FI_SUM, &attr, FI_FETCH_ATOMIC));
	if (attr.size != 8 || attr.count < 1)
		die("fi_query_atomic: size %zu count %zu", attr.size, attr.count);
	CHECK(fi_compare_atomicvalid(f->ep, FI_DOUBLE, FI_CSWAP, &count));
	if (fi_fetch_atomicvalid(f->ep, FI_UINT64, FI_MSWAP, &count) != -FI_EOPNOTSUPP ||
	    fi_atomicvalid(f->ep, FI_DOUBLE, FI_BOR, &count) != -FI_EOPNOTSUPP ||
	    fi_atomicvalid(f->ep, FI_UINT64, FI_ATOMIC_READ, &count) != -FI_EOPNOTSUPP)
		die("*valid accepts what is not supported");
	printf("queries: FI_UINT64 FI_SUM count %zu\n", attr.count);
}

/* All clients start their atomics together: DIR/go appears once every DIR/ready.RANK has. */
static void start_together(struct fab *f, const char *dir, int rank)
{
	char path[512];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/ready.%d", dir, rank);
	fp = fopen(path, "w");
	if (!fp)
		die("%s: %s", path, strerror(errno));
	fclose(fp);
	snprintf(path, sizeof(path), "%s/go", dir);
	while (access(path, F_OK)) {
		if (time(NULL) > f->deadline)
			die("no %s", path);
		usleep(5000);
	}
}

static int client(const char *dir, int rank, uint64_t iters)
{
	static struct fab f;
	uint64_t key, addr;

	fab_open(&f, NULL, NULL);
	read_target(&f, dir, &key, &addr);
	queries(&f);
	start_together(&f, dir, rank);
	cas_increments(&f, iters / 4, key, addr);
	fetch_adds(&f, dir, rank, iters, key, addr);
	one_each(&f, rank, key, addr);
	POST(&f, fi_send(f.ep, "done", 5, NULL, f.peer, NULL));
	reap(&f, 1, NULL, NULL, NULL);
	printf("client %d: done\n", rank);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "target"))
		return target(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0));
	fprintf(stderr, "usage: fi_atomic_check target DIR NCLIENTS ITERS | client DIR RANK ITERS\n");
	return 2;
}
