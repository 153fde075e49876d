// SPDX-License-Identifier: MIT
/*
 * libmroc clients: the worker calls the control thread makes (clients_ctl.c),
 * run synchronously on the worker by worker_call(): the engine's side of a
 * client's regions, QPs, connect/listen, HELLO and end.
 */
#include <errno.h>
#include "clients_priv.h"
#include "links.h"
#include "log.h"
#include "peers.h"

int clients_op_mr_reg(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	return engine_mr_register(o->cs->eng, o->cl->pd, o->map, o->len, o->access, &o->lkey,
				  &o->rkey);
}

int clients_op_mr_dereg(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	return engine_mr_deregister(o->cs->eng, o->lkey);
}

int clients_op_qp_create(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct clients *cs = o->cs;
	struct cqp *q = o->q;
	struct client *cl = o->cl;
	int err;

	if (cs->nactive == cs->max_total_qps)
		return -ENOSPC;
	/* Zombies (dead clients' QPs saying goodbye) give their slots to the living. */
	while ((err = engine_qp_create(cs->eng, &o->attr, &q->qpn)) == -ENOSPC &&
	       clients_zombie_free(cs))
		;
	if (err)
		return err;
	err = qpmap_add(&cs->map, q->qpn, q);
	if (!err) {
		err = clients_qp_doorbell_add(cs, q);
		if (err)
			qpmap_del(&cs->map, q->qpn);
	}
	if (err) {
		engine_qp_destroy(cs->eng, q->qpn);
		return err;
	}
	q->active_idx = cs->nactive;
	cs->active[cs->nactive++] = q;
	q->cl_prev = NULL;
	q->cl_next = cl->wqps;
	if (cl->wqps)
		cl->wqps->cl_prev = q;
	cl->wqps = q;
	/* Cold until the client posts (it rings then); hot at once if it already did. */
	q->hot_idx = NOT_LISTED;
	if (!clients_qp_cool(cs, q))
		clients_qp_heat(cs, q, now);
	cs->st.qps++;
	return 0;
}

/* The QP must be one of this client's active ones. */
static struct cqp *own_qp(struct op *o)
{
	struct cqp *q = qpmap_get(&o->cs->map, o->qpn);

	return q && q->cl == o->cl ? q : NULL;
}

int clients_reserved(const struct client *cl, const char *what, uint64_t service_id)
{
	pr_warn_rl("client %u (pid %d): may not %s service %#llx (the daemons' own)", cl->id,
		   (int)cl->pid, what, (unsigned long long)service_id);
	return -EACCES;
}

int clients_op_qp_connect(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct clients *cs = o->cs;
	uint32_t peer;
	int err;

	if (!own_qp(o))
		return -ENOENT;
	if (mrocd_service_reserved(o->service_id))
		return clients_reserved(o->cl, "connect to", o->service_id);
	/* The peer table is the worker's, shared by every user: a share each (peers.h). */
	err = peers_get_handle_owned(cs->peers, &o->addr, (uint32_t)o->cl->uid + 1,
				     clients_share(&cs->ctl->lim, peers_max(cs->peers), o->cl->uid),
				     &peer);
	if (err)
		return err;
	return engine_qp_connect(o->cs->eng, o->qpn, peer, o->service_id, now);
}

int clients_op_qp_listen(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	if (!own_qp(o))
		return -ENOENT;
	return engine_qp_listen(o->cs->eng, o->qpn, o->service_id);
}

int clients_op_qp_destroy(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct cqp *q = own_qp(o);

	if (!q)
		return -ENOENT;
	clients_qp_deactivate(o->cs, q, now);
	return 0;
}

/* The client is gone: stop its QPs (peers are told), drop its regions. */
int clients_op_client_gone(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct clients *cs = o->cs;

	clients_deactivate_all(cs, o->cl, now);
	if (o->cl->widx != NOT_LISTED) {
		struct client *last = cs->wcl[--cs->nwcl];

		clients_doorbell_del(cs, o->cl);
		cs->wcl[o->cl->widx] = last;
		last->widx = o->cl->widx;
		o->cl->widx = NOT_LISTED;
	}
	for (uint32_t i = 0; i < o->cl->nmrs; i++)
		engine_mr_deregister(cs->eng, o->cl->mrs[i].lkey);
	cs->st.mrs -= o->cl->nmrs;
	return 0;
}

/* HELLO: the worker sleeps on the client's doorbell from now on. */
int clients_op_client_hello(void *arg, uint64_t now)
{
	struct op *o = arg;
	struct clients *cs = o->cs;
	int err;

	(void)now;
	if (cs->nwcl == MAX_CLIENTS)
		return -EUSERS;
	err = clients_doorbell_add(cs, o->cl);
	if (err)
		return err;
	o->cl->widx = cs->nwcl;
	cs->wcl[cs->nwcl++] = o->cl;
	return 0;
}

int clients_op_count_mr(void *arg, uint64_t now)
{
	struct op *o = arg;

	(void)now;
	o->cs->st.mrs += o->access;	/* +1 or -1 (as unsigned) */
	return 0;
}
