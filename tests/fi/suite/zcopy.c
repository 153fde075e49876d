// SPDX-License-Identifier: MIT
/*
 * fi_suite: zcopy: mroc's zero-copy rendezvous, told apart by the provider's traffic
 * counters (fi_mroc.h), and fork() beside registered memory.
 */
#include "suite.h"

/* ---- zero-copy rendezvous (mroc's own counters) -------------------------------------------- */

/* FI_PEEK until a message with tag has arrived unexpected. */
static void wait_unexpected(struct fab *f, uint64_t tag)
{
	struct fi_msg_tagged m = { .tag = tag, .addr = FI_ADDR_UNSPEC };

	for (;;) {
		struct fi_cq_tagged_entry e;
		ssize_t r;

		POST(f, fi_trecvmsg(f->ep, &m, FI_PEEK));
		while ((r = fi_cq_read(f->cq, &e, 1)) == -FI_EAGAIN)
			;
		if (r == 1)
			return;
		fi_cq_readerr(f->cq, &(struct fi_cq_err_entry){ 0 }, 0);
		if (time(NULL) > deadline)
			die("zcopy: FI_PEEK never saw tag %" PRIu64, tag);
	}
}

/* Is p in pages mroc's provider re-backed with a memfd (its zero-copy registration)? */
static bool in_zcopy_memfd(const void *p)
{
	char line[512];
	uintptr_t a, b;
	bool in = false;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		die("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &a, &b) == 2 && (uintptr_t)p >= a &&
		    (uintptr_t)p < b)
			in = strstr(line, "/memfd:mroc-fi-zcopy") != NULL;
	fclose(f);
	return in;
}

static void expect(const char *what, uint64_t got, uint64_t want)
{
	if (got != want)
		die("zcopy: %s is %" PRIu64 ", not %" PRIu64, what, got, want);
}

/*
 * A child after fork() must not share p's pages with us (issue 24): it writes
 * a byte of every page of [p, p + len).  Re-backed (registered)
 * pages are MADV_DONTFORK, so the child has nothing there and dies of SIGSEGV
 * at its first touch; private pages are its own copy.  Either way our bytes
 * (pattern seed) are unchanged.
 */
static void fork_check(uint8_t *p, size_t len, uint64_t seed, bool registered, const char *what)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		/* A library here may catch SIGSEGV (psm2's libinfinipath: exit 1): the kernel's verdict. */
		signal(SIGSEGV, SIG_DFL);
		for (size_t i = 0; i < len; i += 4096)
			p[i] ^= 0xff;
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (registered && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV))
		die("zcopy: %s: a child after fork() could touch the registered pages (status %#x)",
		    what, status);
	if (!registered && !(WIFEXITED(status) && !WEXITSTATUS(status)))
		die("zcopy: %s: a child after fork() failed on private pages (status %#x)", what,
		    status);
	verify(p, len, seed, what);
}

/*
 * Four 1 MiB messages, client to server: tag 1 registered -> registered, receive
 * posted first; tag 2 the same, arrived before its receive; tag 3 registered -> a
 * malloc'd receive; tag 4 from a malloc'd buffer -> registered.
 */
void t_zcopy(void)
{
	const size_t sz = 1 << 20;
	const char *env = getenv("FI_MROC_RNDV");
	bool rndv = !env || strcmp(env, "0");
	struct fi_mroc_ops_2 *ops;
	struct fi_mroc_traffic t;
	struct fab f = { 0 };
	uint8_t *plain = malloc(sz);

	if (!plain)
		die("out of memory");
	if (strcmp(prov, "mroc") || fab_open(&f, FI_TAGGED, 4 * sz, 0))
		exit(77);
	if (fi_open_ops(&f.ep->fid, FI_MROC_OPS_2, 0, (void **)&ops, NULL))
		die("zcopy: no %s", FI_MROC_OPS_2);
	fab_meet(&f);
	if (!srv) {
		for (int i = 0; i < 3; i++)
			fill(f.buf + i * sz, sz, 100 + i);
		fill(plain, sz, 103);
		oob_sync(f.oob);	/* tag 1's receive is posted */
		POST(&f, fi_tsend(f.ep, f.buf, sz, f.desc, f.peer, 1, CTX));
		POST(&f, fi_tsend(f.ep, f.buf + sz, sz, f.desc, f.peer, 2, CTX));
		POST(&f, fi_tsend(f.ep, f.buf + 2 * sz, sz, f.desc, f.peer, 3, CTX));
		POST(&f, fi_tsend(f.ep, plain, sz, NULL, f.peer, 4, CTX));
		reap(&f, 4);
		oob_sync(f.oob);
		CHECK(ops->traffic(f.ep, &t));
		expect("rndv_sent", t.rndv_sent, rndv ? 3 : 0);
		expect("tx_staged", t.tx_staged, rndv ? sz : 4 * sz);
		printf("ok: zcopy: 4 x 1 MiB sent, %" PRIu64 " by rendezvous, %" PRIu64
		       " bytes staged\n", t.rndv_sent, t.tx_staged);
	} else {
		POST(&f, fi_trecv(f.ep, f.buf, sz, f.desc, FI_ADDR_UNSPEC, 1, 0, CTX));
		oob_sync(f.oob);
		reap(&f, 1);
		verify(f.buf, sz, 100, "zcopy tag 1 (posted first)");
		wait_unexpected(&f, 2);
		POST(&f, fi_trecv(f.ep, f.buf + sz, sz, f.desc, FI_ADDR_UNSPEC, 2, 0, CTX));
		reap(&f, 1);
		verify(f.buf + sz, sz, 101, "zcopy tag 2 (unexpected)");
		POST(&f, fi_trecv(f.ep, plain, sz, NULL, FI_ADDR_UNSPEC, 3, 0, CTX));
		reap(&f, 1);
		verify(plain, sz, 102, "zcopy tag 3 (into malloc'd memory)");
		POST(&f, fi_trecv(f.ep, f.buf + 3 * sz, sz, f.desc, FI_ADDR_UNSPEC, 4, 0, CTX));
		reap(&f, 1);
		verify(f.buf + 3 * sz, sz, 103, "zcopy tag 4 (from malloc'd memory)");
		oob_sync(f.oob);
		CHECK(ops->traffic(f.ep, &t));
		expect("rndv_direct", t.rndv_direct, rndv ? 2 * sz : 0);
		expect("rndv_bounced", t.rndv_bounced, rndv ? sz : 0);
		expect("rx_staged", t.rx_staged, rndv ? sz : 4 * sz);
		printf("ok: zcopy: 4 x 1 MiB received and checked: %" PRIu64 " bytes read straight "
		       "into the receive, %" PRIu64 " through a bounce, %" PRIu64 " staged\n",
		       t.rndv_direct, t.rndv_bounced, t.rx_staged);
	}
	/* Registered, the pages are a memfd mrocd shares; closed, private again, bytes kept. */
	if (in_zcopy_memfd(f.buf + sz) != rndv)
		die("zcopy: the registered buffer is %sin a memfd", rndv ? "not " : "");
	fork_check(f.buf + sz, sz, 101, rndv, "the registered buffer after fork()");
	CHECK(fi_close(&f.mr->fid));
	f.mr = NULL;
	if (in_zcopy_memfd(f.buf + sz))
		die("zcopy: the buffer is still in a memfd after fi_close(mr)");
	fork_check(f.buf + sz, sz, 101, false, "the buffer after fi_close(mr) and fork()");
	for (int i = 0; i < 4; i++)	/* the server's slot 2 was not used (tag 3 went to plain) */
		if (!(srv ? i == 2 : i == 3))
			verify(f.buf + i * sz, sz, 100 + i, "zcopy: the buffer after fi_close(mr)");
	fab_close(&f);
	free(plain);
}
