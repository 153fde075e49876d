/* SPDX-License-Identifier: MIT */
/*
 * What the libfabric test programs share (each is one file built alone, with
 * libfabric only): the set-up every one of them does (a fabric, a domain, a
 * table AV and a CQ; an endpoint bound to both and enabled) in two forms:
 *
 *   fic_domain_try, fic_ep_try    0, or the negative FI_E* code of the first
 *                                 call that failed, *what naming that call
 *                                 (tests/nccl/fi_net.c reports it its own way)
 *   fic_domain_open, fic_ep_open  fail loudly through the program's own die()
 *                                 (each names itself and its role), as CHECK does
 *
 * A program with no die() of its own defines FIC_NO_DIE before including this:
 * it gets the returning form only.
 */
#ifndef MROC_TESTS_FI_COMMON_H
#define MROC_TESTS_FI_COMMON_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

/* In a try function: return the call's error, *what its text. */
#define FIC_TRY(call) do {							\
	int _r = (int)(call);							\
	if (_r) {								\
		*what = #call;							\
		return _r;							\
	}									\
} while (0)

/* info's fabric and domain, an FI_AV_TABLE address vector and a CQ of cqa on it. */
static inline int fic_domain_try(struct fi_info *info, struct fi_cq_attr *cqa,
				 struct fid_fabric **fabric, struct fid_domain **domain,
				 struct fid_av **av, struct fid_cq **cq, const char **what)
{
	struct fi_av_attr ava = { .type = FI_AV_TABLE };

	FIC_TRY(fi_fabric(info->fabric_attr, fabric, NULL));
	FIC_TRY(fi_domain(*fabric, info, domain, NULL));
	FIC_TRY(fi_av_open(*domain, &ava, av, NULL));
	FIC_TRY(fi_cq_open(*domain, cqa, cq, NULL));
	return 0;
}

/* An endpoint of info on domain, bound to av and to cq for both directions, enabled. */
static inline int fic_ep_try(struct fid_domain *domain, struct fi_info *info, struct fid_av *av,
			     struct fid_cq *cq, struct fid_ep **ep, const char **what)
{
	FIC_TRY(fi_endpoint(domain, info, ep, NULL));
	FIC_TRY(fi_ep_bind(*ep, &av->fid, 0));
	FIC_TRY(fi_ep_bind(*ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	FIC_TRY(fi_enable(*ep));
	return 0;
}

#ifndef FIC_NO_DIE
/*
 * The including program's: print the message with its name, exit 1.  A program
 * of several files (tests/fi/hostile) declares its own extern die() and defines
 * FIC_HAVE_DIE first.
 */
#ifndef FIC_HAVE_DIE
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
#endif

#define CHECK(call) do {							\
	int _r = (int)(call);							\
	if (_r)									\
		die("%s: %s (%d)", #call, fi_strerror(-_r), _r);		\
} while (0)

static inline void fic_domain_open(struct fi_info *info, struct fi_cq_attr *cqa,
				   struct fid_fabric **fabric, struct fid_domain **domain,
				   struct fid_av **av, struct fid_cq **cq)
{
	const char *what = NULL;
	int r = fic_domain_try(info, cqa, fabric, domain, av, cq, &what);

	if (r)
		die("%s: %s (%d)", what, fi_strerror(-r), r);
}

static inline void fic_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_av *av,
			       struct fid_cq *cq, struct fid_ep **ep)
{
	const char *what = NULL;
	int r = fic_ep_try(domain, info, av, cq, ep, &what);

	if (r)
		die("%s: %s (%d)", what, fi_strerror(-r), r);
}
#endif

#endif
