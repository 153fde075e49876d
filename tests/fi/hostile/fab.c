// SPDX-License-Identifier: MIT
/*
 * fi_hostile: the libfabric side: the victim's endpoint V and the attacker's genuine
 * endpoint X, their completions (collected in dones[]), the provider's counters.
 */
#include "hostile.h"

struct done dones[4096];
size_t ndone;

void ep_open(struct fab *f)
{
	size_t l = sizeof(f->name);

	fic_ep_open(f->domain, f->info, f->av, f->cq, &f->ep);
	CHECK(fi_getname(&f->ep->fid, &f->name, &l));
	if (fi_open_ops(&f->ep->fid, FI_MROC_OPS_1, 0, (void **)&f->ops, NULL))
		f->ops = NULL;	/* a provider without counters: the checks that need them are skipped */
}

void fab_open(struct fab *f)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = 4096 };

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV | FI_SOURCE;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	hints->fabric_attr->prov_name = strdup("mroc");
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &f->info));
	fi_freeinfo(hints);
	fic_domain_open(f->info, &cqa, &f->fabric, &f->domain, &f->av, &f->cq);
	ep_open(f);
}

struct fi_mroc_counters counters(struct fab *f)
{
	struct fi_mroc_counters c = { 0 };

	if (f->ops)
		f->ops->counters(f->ep, &c);
	return c;
}

/* Completions so far into dones[]. */
void reap(struct fab *f)
{
	struct fi_cq_tagged_entry e[16];
	fi_addr_t src[16];
	ssize_t n;

	while ((n = fi_cq_readfrom(f->cq, e, 16, src)) > 0 || n == -FI_EAVAIL) {
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			if (fi_cq_readerr(f->cq, &ee, 0) != 1)
				die("fi_cq_readerr");
			if (ndone < 4096)
				dones[ndone++] = (struct done){ ee.op_context, ee.flags, ee.tag, ee.len,
								ee.err, FI_ADDR_NOTAVAIL };
			continue;
		}
		for (ssize_t i = 0; i < n && ndone < 4096; i++)
			dones[ndone++] = (struct done){ e[i].op_context, e[i].flags, e[i].tag,
							e[i].len, 0, src[i] };
	}
	if (n < 0 && n != -FI_EAGAIN)
		die("fi_cq_read: %s", fi_strerror((int)-n));
}

struct done *find_done(void *ctx)
{
	for (size_t i = 0; i < ndone; i++)
		if (dones[i].ctx == ctx)
			return &dones[i];
	return NULL;
}

int count_done(void *ctx)
{
	int n = 0;

	for (size_t i = 0; i < ndone; i++)
		n += dones[i].ctx == ctx;
	return n;
}

struct fab V, X;
bool x_running;

struct done *wait_done(struct fab *f, void *ctx, const char *what)
{
	struct done *d;

	while (!(d = find_done(ctx))) {
		if (idle_fn)
			idle_fn();
		else
			reap(f);
		check_deadline(what);
	}
	return d;
}
