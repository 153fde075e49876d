// SPDX-License-Identifier: MIT
/*
 * The tables NCCL looks up (ncclNetPlugin_v8 .. _v12; NCCL 2.30 tries v12
 * first), init/finalize of the process-wide state, and the thin adaptors
 * from each version's signatures to net.c's.  Only these five symbols are
 * exported (libnccl-net-mroc.map).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugin.h"
#include "route_addr.h"

#define PLUGIN_NAME	"mroc"
#define PROBE_QPS	2	/* the latency probe's, for a moment at init */

struct mnccl mnccl = { .lock = PTHREAD_MUTEX_INITIALIZER };
nccl_logger_fn mnccl_log;

/* libmroc's diagnostics into NCCL's log. */
static void lib_print(enum mroc_print_level level, const char *fmt, va_list ap)
{
	char buf[256];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (level == MROC_PRINT_WARN)
		MNCCL_WARN("libmroc: %s", buf);
	else
		MNCCL_INFO("libmroc: %s", buf);
}

/*
 * The address peers reach this host's mrocd at: $NCCL_MROC_ADDR, else the
 * source address of the default route (IPv4's, else IPv6's: an IPv6-only host).
 */
static int local_addr(char *out, size_t len)
{
	const char *env = getenv("NCCL_MROC_ADDR");
	struct in6_addr a6;
	struct in_addr a;

	if (env && *env) {
		if (inet_pton(AF_INET, env, &a) != 1 && inet_pton(AF_INET6, env, &a6) != 1)
			return -EINVAL;
		snprintf(out, len, "%s", env);
		return 0;
	}
	return mroc_route_src_str(out, len);
}

nccl_res mnccl_init(nccl_logger_fn log)
{
	/*
	 * Polls never give the CPU away inside the plugin: NCCL's proxy thread polls many
	 * requests in turn and yields itself when none progressed; libmroc's yield on every
	 * empty CQ (after 5 us) would yield once per request tested.  $MROC_SPIN_US still
	 * chooses, when set.
	 */
	struct mroc_ctx_opts opts = {
		.sz = sizeof(opts),
		.spin_us = getenv("MROC_SPIN_US") ? MROC_SPIN_DEFAULT : MROC_SPIN_FOREVER,
	};
	struct mroc_ctx_limits lim = { .sz = sizeof(lim) };
	nccl_res res = NCCL_OK;
	int err;

	pthread_mutex_lock(&mnccl.lock);
	if (log)
		mnccl_log = log;
	if (mnccl.users++)
		goto out;
	mroc_set_print(lib_print);
	/* Every send zero-copy after its CTS, as before small sends were staged (for an A/B). */
	mnccl.no_stage = getenv("NCCL_MROC_EAGER") && !strcmp(getenv("NCCL_MROC_EAGER"), "0");
	err = local_addr(mnccl.addr, sizeof(mnccl.addr));
	if (err) {
		MNCCL_WARN("no address for this host's mrocd (set NCCL_MROC_ADDR): %s",
			   mroc_strerror(err));
		res = NCCL_ERR_SYSTEM;
		goto fail;
	}
	mnccl.ctx = mroc_open(&opts);
	if (!mnccl.ctx) {
		MNCCL_WARN("cannot reach mrocd (MROC_SOCKET or /run/mroc/mrocd.sock): %s",
			   mroc_strerror(-errno));
		res = NCCL_ERR_SYSTEM;
		goto fail;
	}
	mnccl_props_probe(&mnccl.props);
	if (!mroc_ctx_limits(mnccl.ctx, &lim))
		mnccl.props.max_comms = lim.max_qps > PROBE_QPS ? (int)(lim.max_qps - PROBE_QPS) : 1;
	MNCCL_INFO("%s via mrocd at %s: %d Mbps, latency %.1f us, %d comms", mnccl.props.name,
		   mnccl.addr, mnccl.props.speed_mbps, mnccl.props.latency_us,
		   mnccl.props.max_comms);
	goto out;
fail:
	mnccl.users--;
out:
	pthread_mutex_unlock(&mnccl.lock);
	return res;
}

nccl_res mnccl_finalize(void)
{
	pthread_mutex_lock(&mnccl.lock);
	if (mnccl.users > 0 && --mnccl.users == 0) {
		mnccl_reg_drop_all();
		mroc_close(mnccl.ctx);
		mnccl.ctx = NULL;
		mnccl_props_free(&mnccl.props);
	}
	pthread_mutex_unlock(&mnccl.lock);
	return NCCL_OK;
}

nccl_res mnccl_devices(int *ndev)
{
	if (!ndev)
		return NCCL_ERR_INVALID_ARG;
	*ndev = 1;		/* mrocd: one device over all its ports */
	return NCCL_OK;
}

/* ---- per-version adaptors -------------------------------------------------------- */

static nccl_res props_v8(int dev, struct nccl_props_v8 *p)
{
	struct nccl_props_v9 v;

	if (dev != 0 || !p)
		return NCCL_ERR_INVALID_ARG;
	mnccl_props_v9(dev, &v);
	*p = (struct nccl_props_v8){
		.name = v.name, .pci_path = v.pci_path, .guid = v.guid,
		.ptr_support = v.ptr_support, .reg_is_global = v.reg_is_global,
		.speed_mbps = v.speed_mbps, .port = v.port, .latency_us = v.latency_us,
		.max_comms = v.max_comms, .max_recvs = v.max_recvs, .dev_type = v.dev_type,
		.dev_version = v.dev_version,
	};
	return NCCL_OK;
}

static nccl_res props_v9(int dev, struct nccl_props_v9 *p)
{
	if (dev != 0 || !p)
		return NCCL_ERR_INVALID_ARG;
	mnccl_props_v9(dev, p);
	return NCCL_OK;
}

static nccl_res props_v11(int dev, struct nccl_props_v11 *p)
{
	if (dev != 0 || !p)
		return NCCL_ERR_INVALID_ARG;
	mnccl_props_v9(dev, &p->v9);
	p->max_multi_request = 1;
	return NCCL_OK;
}

static nccl_res props_v12(int dev, struct nccl_props_v12 *p)
{
	struct nccl_props_v9 v;

	if (dev != 0 || !p)
		return NCCL_ERR_INVALID_ARG;
	mnccl_props_v9(dev, &v);
	*p = (struct nccl_props_v12){
		.name = v.name, .pci_path = v.pci_path, .guid = v.guid,
		.ptr_support = v.ptr_support, .reg_is_global = v.reg_is_global,
		.force_flush = v.force_flush, .speed_mbps = v.speed_mbps, .port = v.port,
		.latency_us = v.latency_us, .max_comms = v.max_comms, .max_recvs = v.max_recvs,
		.dev_type = v.dev_type, .dev_version = v.dev_version,
		.vprops = { .ndevs = 1, .devs = { dev } },
		.max_p2p_bytes = v.max_p2p_bytes, .max_coll_bytes = v.max_coll_bytes,
		.max_multi_request = 1, .rail_id = -1, .plane_id = -1,
	};
	return NCCL_OK;
}

static nccl_res init_v8(nccl_logger_fn log) { return mnccl_init(log); }
static nccl_res init_v10(nccl_logger_fn log, nccl_profiler_fn prof) { return mnccl_init(log); }

/* v11+: the per-communicator context is the process-wide state, counted. */
static nccl_res init_v11(void **ctx, uint64_t comm_id, struct nccl_comm_config *cfg,
			 nccl_logger_fn log, nccl_profiler_fn prof)
{
	nccl_res res = mnccl_init(log);

	if (ctx)
		*ctx = res == NCCL_OK ? &mnccl : NULL;
	return res;
}

static nccl_res finalize_v11(void *ctx) { return mnccl_finalize(); }
static nccl_res set_net_attr(void *ctx, struct nccl_net_attr *attr) { return NCCL_OK; }

static nccl_res connect_v8(int dev, void *h, void **comm, struct nccl_dev_handle **devh)
{
	return mnccl_connect(dev, h, comm);
}

static nccl_res connect_v10(int dev, struct nccl_comm_config *cfg, void *h, void **comm,
			    struct nccl_dev_handle **devh)
{
	return mnccl_connect(dev, h, comm);
}

static nccl_res connect_v11(void *ctx, int dev, void *h, void **comm,
			    struct nccl_dev_handle **devh)
{
	return mnccl_connect(dev, h, comm);
}

static nccl_res listen_v11(void *ctx, int dev, void *h, void **comm)
{
	return mnccl_listen(dev, h, comm);
}

static nccl_res accept_any(void *l, void **comm, struct nccl_dev_handle **devh)
{
	return mnccl_accept(l, comm);
}

static nccl_res isend_v8(void *c, void *data, int size, int tag, void *mh, void **req)
{
	return size < 0 ? NCCL_ERR_INVALID_ARG : mnccl_isend(c, data, (size_t)size, tag, mh, req);
}

static nccl_res irecv_v8(void *c, int n, void **data, int *sizes, int *tags, void **mhs,
			 void **req)
{
	size_t sz[MNCCL_MAX_RECVS];
	int i;

	if (n < 1 || n > MNCCL_MAX_RECVS || !sizes)
		return NCCL_ERR_INVALID_ARG;
	for (i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return NCCL_ERR_INVALID_ARG;
		sz[i] = (size_t)sizes[i];
	}
	return mnccl_irecv(c, n, data, sz, tags, mhs, req);
}

static nccl_res isend_v9(void *c, void *data, size_t size, int tag, void *mh, void **req)
{
	return mnccl_isend(c, data, size, tag, mh, req);
}

static nccl_res irecv_v9(void *c, int n, void **data, size_t *sizes, int *tags, void **mhs,
			 void **req)
{
	return mnccl_irecv(c, n, data, sizes, tags, mhs, req);
}

static nccl_res isend_v10(void *c, void *data, size_t size, int tag, void *mh, void *ph,
			  void **req)
{
	return mnccl_isend(c, data, size, tag, mh, req);
}

static nccl_res irecv_v10(void *c, int n, void **data, size_t *sizes, int *tags, void **mhs,
			  void **phs, void **req)
{
	return mnccl_irecv(c, n, data, sizes, tags, mhs, req);
}

/* Host memory only: NCCL never asks for a flush (ptrSupport has no CUDA). */
static nccl_res iflush_none(void *c, int n, void **data, int *sizes, void **mhs, void **req)
{
	if (req)
		*req = NULL;
	return NCCL_ERR_INTERNAL;
}

static nccl_res get_device_mr_none(void *comm, void *mh, void **dptr)
{
	return NCCL_ERR_INTERNAL;	/* no device offload (netDeviceType HOST) */
}

static nccl_res irecv_consumed_none(void *c, int n, void *req)
{
	return NCCL_OK;
}

#define COMMON_MEMBERS							\
	.name = PLUGIN_NAME,						\
	.devices = mnccl_devices,					\
	.accept = accept_any,						\
	.reg_mr = mnccl_reg_mr,						\
	.reg_mr_dmabuf = NULL,		/* no NCCL_PTR_DMABUF */	\
	.dereg_mr = mnccl_dereg_mr,					\
	.iflush = iflush_none,						\
	.test = mnccl_test,						\
	.close_send = mnccl_close_send,					\
	.close_recv = mnccl_close_recv,					\
	.close_listen = mnccl_close_listen,				\
	.get_device_mr = get_device_mr_none,				\
	.irecv_consumed = irecv_consumed_none

__attribute__((visibility("default"))) struct nccl_net_v8 ncclNetPlugin_v8 = {
	COMMON_MEMBERS,
	.init = init_v8,
	.get_properties = props_v8,
	.listen = mnccl_listen,
	.connect = connect_v8,
	.isend = isend_v8,
	.irecv = irecv_v8,
};

__attribute__((visibility("default"))) struct nccl_net_v9 ncclNetPlugin_v9 = {
	COMMON_MEMBERS,
	.init = init_v8,
	.get_properties = props_v9,
	.listen = mnccl_listen,
	.connect = connect_v8,
	.isend = isend_v9,
	.irecv = irecv_v9,
	.make_vdevice = NULL,		/* no NIC fusion: mroc already spreads over its ports */
};

__attribute__((visibility("default"))) struct nccl_net_v10 ncclNetPlugin_v10 = {
	COMMON_MEMBERS,
	.init = init_v10,
	.get_properties = props_v9,
	.listen = mnccl_listen,
	.connect = connect_v10,
	.isend = isend_v10,
	.irecv = irecv_v10,
	.make_vdevice = NULL,
};

__attribute__((visibility("default"))) struct nccl_net_v11 ncclNetPlugin_v11 = {
	COMMON_MEMBERS,
	.init = init_v11,
	.get_properties = props_v11,
	.listen = listen_v11,
	.connect = connect_v11,
	.isend = isend_v10,
	.irecv = irecv_v10,
	.make_vdevice = NULL,
	.finalize = finalize_v11,
	.set_net_attr = set_net_attr,
};

__attribute__((visibility("default"))) struct nccl_net_v12 ncclNetPlugin_v12 = {
	COMMON_MEMBERS,
	.init = init_v11,
	.get_properties = props_v12,
	.listen = listen_v11,
	.connect = connect_v11,
	.isend = isend_v10,
	.irecv = irecv_v10,
	.make_vdevice = NULL,
	.finalize = finalize_v11,
	.set_net_attr = set_net_attr,
};
