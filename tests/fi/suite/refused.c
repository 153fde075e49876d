// SPDX-License-Identifier: MIT
/*
 * refused: a connect the peer's mrocd refuses for a reason that asking again cannot
 * change (its security mode differs from ours: REFUSED_IP, a daemon of the pair started
 * in another mode).  The provider does not retry it until FI_MROC_CONNECT_TIMEOUT_MS:
 * the sends fail with FI_EACCES, which says why, and the endpoint works on.
 */
#include "suite.h"

void t_refused(void)
{
	struct fab f = { 0 };
	struct sockaddr_storage sin;	/* the endpoint's family */
	size_t l = sizeof(sin), failed = 0;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee = { 0 };
	uint8_t name[128];
	size_t nl = sizeof(name);
	fi_addr_t peer, self;
	ssize_t r;
	double t0;

	if (!getenv("REFUSED_IP"))
		die("REFUSED_IP: the address of an mrocd in another security mode");
	if (fab_open(&f, FI_MSG | FI_TAGGED, 4096, 0))
		die("fab_open");
	CHECK(fi_getname(&f.ep->fid, &sin, &l));
	name_set_ip(&sin, getenv("REFUSED_IP"));
	if (fi_av_insert(f.av, &sin, 1, &peer, 0, NULL) != 1)
		die("fi_av_insert");
	t0 = now_s();
	POST(&f, fi_send(f.ep, f.buf, 64, f.desc, peer, CTX));
	POST(&f, fi_tsend(f.ep, f.buf, 64, f.desc, peer, 7, CTX));
	while (failed < 2) {
		r = fi_cq_read(f.cq, &e, 1);
		if (r == -FI_EAVAIL) {
			CHECK(fi_cq_readerr(f.cq, &ee, 0) == 1 ? 0 : -FI_EOTHER);
			if (ee.err != FI_EACCES)
				die("a send refused for its security mode ended with %d (%s), not "
				    "FI_EACCES", ee.err, fi_strerror(ee.err));
			failed++;
		} else if (r != -FI_EAGAIN) {
			die("a send to an mrocd in another security mode: %zd", r);
		} else if (time(NULL) > deadline) {
			die("sends to an mrocd in another security mode: %zu of 2 ended in %.0f ms",
			    failed, ms_since(t0));
		}
	}
	/* The endpoint works on. */
	CHECK(fi_getname(&f.ep->fid, name, &nl));
	if (fi_av_insert(f.av, name, 1, &self, 0, NULL) != 1)
		die("fi_av_insert of our own name");
	POST(&f, fi_recv(f.ep, f.buf, 64, f.desc, FI_ADDR_UNSPEC, CTX));
	POST(&f, fi_send(f.ep, f.buf + 64, 64, f.desc, self, CTX));
	reap(&f, 2);
	fab_close(&f);
	printf("ok: refused: a send and a tagged send to an mrocd in another security mode each "
	       "ended with FI_EACCES in %.0f ms; the endpoint works on\n", ms_since(t0));
}
