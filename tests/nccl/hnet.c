// SPDX-License-Identifier: MIT
/*
 * A net plugin as NCCL loads it: dlopen by path, dlsym("ncclNetPlugin_vN"),
 * init with a logger, then every call through that version's table and
 * signatures (v8: int sizes; v9: size_t; v10: profiler handles and a
 * connect config; v11/v12: a context from init for listen and connect).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

struct plug {
	int v;
	void *lib;
	void *ctx;				/* v11+ */
	union {
		struct nccl_net_v8 *v8;
		struct nccl_net_v9 *v9;
		struct nccl_net_v10 *v10;
		struct nccl_net_v11 *v11;
		struct nccl_net_v12 *v12;
	} t;
};

struct h_plugin_stats h_pstats;

/* A comm's counters, from the line the plugin logs when it closes it (net.c). */
static void count_stats(const char *msg)
{
	struct h_plugin_stats *t = &h_pstats;
	unsigned a, b, c, d;

	if (sscanf(msg, "NET/mroc: receive comm %*s closed: %u receives, %u CTSs, %u credit messages",
		   &a, &b, &c) == 3) {
		t->recv_comms++;
		t->recvs += a;
		t->cts += b;
		t->credits += c;
	} else if (sscanf(msg, "NET/mroc: send comm %*s closed: %u sends: %u eager, %u staged, "
			  "%u zero-copy", &a, &b, &c, &d) == 4) {
		t->send_comms++;
		t->sends += a;
		t->eager += b;
		t->staged += c;
		t->zcopy += d;
	}
}

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	count_stats(msg);
	if (level > NCCL_LOG_LVL_INFO || (level == NCCL_LOG_LVL_INFO && !getenv("H_VERBOSE")))
		return;
	fprintf(stderr, "[rank %d] %s %s:%d %s\n", H.rank,
		level == NCCL_LOG_LVL_WARN ? "WARN" : "INFO", file, line, msg);
}

#define P(n) ((struct plug *)(n)->priv)
/* The same member in every version's table (the layouts share its name). */
#define CALL(p, member, ...)							\
	((p)->v == 8 ? (p)->t.v8->member(__VA_ARGS__) :				\
	 (p)->v == 9 ? (p)->t.v9->member(__VA_ARGS__) :				\
	 (p)->v == 10 ? (p)->t.v10->member(__VA_ARGS__) :			\
	 (p)->v == 11 ? (p)->t.v11->member(__VA_ARGS__) : (p)->t.v12->member(__VA_ARGS__))

static int p_props(struct hnet *n, struct nccl_props_v9 *out)
{
	struct plug *p = P(n);
	int res;

	memset(out, 0, sizeof(*out));
	if (p->v == 8) {
		struct nccl_props_v8 q;

		res = p->t.v8->get_properties(0, &q);
		*out = (struct nccl_props_v9){
			.name = q.name, .pci_path = q.pci_path, .guid = q.guid,
			.ptr_support = q.ptr_support, .reg_is_global = q.reg_is_global,
			.speed_mbps = q.speed_mbps, .port = q.port, .latency_us = q.latency_us,
			.max_comms = q.max_comms, .max_recvs = q.max_recvs, .dev_type = q.dev_type,
		};
	} else if (p->v <= 10) {
		res = (p->v == 9 ? p->t.v9->get_properties : p->t.v10->get_properties)(0, out);
	} else if (p->v == 11) {
		struct nccl_props_v11 q;

		res = p->t.v11->get_properties(0, &q);
		*out = q.v9;
	} else {
		struct nccl_props_v12 q;

		res = p->t.v12->get_properties(0, &q);
		*out = (struct nccl_props_v9){
			.name = q.name, .pci_path = q.pci_path, .guid = q.guid,
			.ptr_support = q.ptr_support, .reg_is_global = q.reg_is_global,
			.speed_mbps = q.speed_mbps, .port = q.port, .latency_us = q.latency_us,
			.max_comms = q.max_comms, .max_recvs = q.max_recvs, .dev_type = q.dev_type,
			.max_p2p_bytes = q.max_p2p_bytes, .max_coll_bytes = q.max_coll_bytes,
		};
	}
	return res;
}

static int p_listen(struct hnet *n, void *h, void **lc)
{
	struct plug *p = P(n);

	if (p->v >= 11)
		return (p->v == 11 ? p->t.v11->listen : p->t.v12->listen)(p->ctx, 0, h, lc);
	return (p->v == 8 ? p->t.v8->listen : p->v == 9 ? p->t.v9->listen : p->t.v10->listen)(0, h, lc);
}

static int p_connect(struct hnet *n, void *h, void **sc)
{
	struct plug *p = P(n);
	struct nccl_comm_config cfg = { .traffic_class = -1 };
	struct nccl_dev_handle *devh = NULL;

	switch (p->v) {
	case 8: return p->t.v8->connect(0, h, sc, &devh);
	case 9: return p->t.v9->connect(0, h, sc, &devh);
	case 10: return p->t.v10->connect(0, &cfg, h, sc, &devh);
	case 11: return p->t.v11->connect(p->ctx, 0, h, sc, &devh);
	default: return p->t.v12->connect(p->ctx, 0, h, sc, &devh);
	}
}

static int p_accept(struct hnet *n, void *lc, void **rc)
{
	struct nccl_dev_handle *devh = NULL;

	return CALL(P(n), accept, lc, rc, &devh);
}

static int p_reg(struct hnet *n, void *comm, void *data, size_t size, void **mh)
{
	return CALL(P(n), reg_mr, comm, data, size, NCCL_PTR_HOST_MEM, mh);
}

static int p_dereg(struct hnet *n, void *comm, void *mh)
{
	return CALL(P(n), dereg_mr, comm, mh);
}

static int p_isend(struct hnet *n, void *sc, void *data, size_t size, int tag, void *mh, void **req)
{
	struct plug *p = P(n);

	switch (p->v) {
	case 8: return p->t.v8->isend(sc, data, (int)size, tag, mh, req);
	case 9: return p->t.v9->isend(sc, data, size, tag, mh, req);
	case 10: return p->t.v10->isend(sc, data, size, tag, mh, NULL, req);
	case 11: return p->t.v11->isend(sc, data, size, tag, mh, NULL, req);
	default: return p->t.v12->isend(sc, data, size, tag, mh, NULL, req);
	}
}

static int p_irecv(struct hnet *n, void *rc, int nb, void **data, size_t *sizes, int *tags,
		   void **mhs, void **req)
{
	struct plug *p = P(n);
	void *ph[H_MAX_RECVS] = { 0 };
	int isz[H_MAX_RECVS];

	switch (p->v) {
	case 8:
		for (int i = 0; i < nb && i < H_MAX_RECVS; i++)
			isz[i] = (int)sizes[i];
		return p->t.v8->irecv(rc, nb, data, isz, tags, mhs, req);
	case 9: return p->t.v9->irecv(rc, nb, data, sizes, tags, mhs, req);
	case 10: return p->t.v10->irecv(rc, nb, data, sizes, tags, mhs, ph, req);
	case 11: return p->t.v11->irecv(rc, nb, data, sizes, tags, mhs, ph, req);
	default: return p->t.v12->irecv(rc, nb, data, sizes, tags, mhs, ph, req);
	}
}

static int p_test(struct hnet *n, void *req, int *done, int *sizes)
{
	return CALL(P(n), test, req, done, sizes);
}

static int p_close_send(struct hnet *n, void *c) { return CALL(P(n), close_send, c); }
static int p_close_recv(struct hnet *n, void *c) { return CALL(P(n), close_recv, c); }
static int p_close_listen(struct hnet *n, void *c) { return CALL(P(n), close_listen, c); }

/* Every plugin opened, kept reachable until exit (the harness never unloads one). */
static struct plug *opened[16];
static unsigned nopened;

int hnet_plugin_open(const char *path, int version, struct hnet *out)
{
	struct plug *p = nopened < 16 ? calloc(1, sizeof(*p)) : NULL;
	char sym[32];
	int ndev = 0, res;
	static char what[32];

	H_CHECK(p, "out of memory (or over 16 plugins)");
	opened[nopened++] = p;
	p->v = version;
	p->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	H_CHECK(p->lib, "dlopen %s: %s", path, dlerror());
	snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", version);
	p->t.v8 = dlsym(p->lib, sym);
	H_CHECK(p->t.v8, "%s has no %s", path, sym);
	switch (version) {
	case 8: res = p->t.v8->init(logger); break;
	case 9: res = p->t.v9->init(logger); break;
	case 10: res = p->t.v10->init(logger, NULL); break;
	case 11: res = p->t.v11->init(&p->ctx, 1, NULL, logger, NULL); break;
	case 12: res = p->t.v12->init(&p->ctx, 1, NULL, logger, NULL); break;
	default: h_die("no ncclNet version %d", version);
	}
	if (res != NCCL_OK)
		return -res;
	res = CALL(p, devices, &ndev);
	H_CHECK(res == NCCL_OK && ndev >= 1, "%s: devices() = %d, %d devices", sym, res, ndev);
	H_CHECK(!strcmp(p->t.v8->name, "mroc"), "%s: name %s", sym, p->t.v8->name);
	snprintf(what, sizeof(what), "plugin v%d", version);
	*out = (struct hnet){
		.what = what, .version = version, .props = p_props, .listen = p_listen,
		.connect = p_connect, .accept = p_accept, .reg = p_reg, .dereg = p_dereg,
		.isend = p_isend, .irecv = p_irecv, .test = p_test, .close_send = p_close_send,
		.close_recv = p_close_recv, .close_listen = p_close_listen, .priv = p,
	};
	return 0;
}
