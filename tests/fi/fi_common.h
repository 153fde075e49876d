/* SPDX-License-Identifier: MIT */
/*
 * What the libfabric test programs share (each is one file built alone, with
 * libfabric only): CHECK, which fails a call loudly through the program's own
 * die() (each names itself and its role), and the set-up every one of them
 * does: a fabric, a domain, a table AV and a CQ; an endpoint bound to both
 * and enabled.
 */
#ifndef MROC_TESTS_FI_COMMON_H
#define MROC_TESTS_FI_COMMON_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

/* The including program's: print the message with its name, exit 1. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define CHECK(call) do {							\
	int _r = (int)(call);							\
	if (_r)									\
		die("%s: %s (%d)", #call, fi_strerror(-_r), _r);		\
} while (0)

/* info's fabric and domain, an FI_AV_TABLE address vector and a CQ of cqa on it. */
static inline void fic_domain_open(struct fi_info *info, struct fi_cq_attr *cqa,
				   struct fid_fabric **fabric, struct fid_domain **domain,
				   struct fid_av **av, struct fid_cq **cq)
{
	struct fi_av_attr ava = { .type = FI_AV_TABLE };

	CHECK(fi_fabric(info->fabric_attr, fabric, NULL));
	CHECK(fi_domain(*fabric, info, domain, NULL));
	CHECK(fi_av_open(*domain, &ava, av, NULL));
	CHECK(fi_cq_open(*domain, cqa, cq, NULL));
}

/* An endpoint of info on domain, bound to av and to cq for both directions, enabled. */
static inline void fic_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_av *av,
			       struct fid_cq *cq, struct fid_ep **ep)
{
	CHECK(fi_endpoint(domain, info, ep, NULL));
	CHECK(fi_ep_bind(*ep, &av->fid, 0));
	CHECK(fi_ep_bind(*ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(*ep));
}

#endif
