/* SPDX-License-Identifier: MIT */
/*
 * The NCCL network plugin ABI, as this plugin relies on it: versions 8 to 12
 * of the function table NCCL looks up as the symbol ncclNetPlugin_vN
 * (NCCL 2.30 tries v12 first and goes down to v6).  Written from the layout
 * NCCL documents (plugins/net/README.md and the per-version structs of its
 * example plugin); the names here are ours, the layout is NCCL's, and every
 * size and offset we depend on is pinned by a static_assert below.
 *
 * All of it is plain C: results are an int-sized enum, pointers and sizes
 * are the platform's (LP64 only: the asserts fail elsewhere).
 */
#ifndef MROC_NCCL_NET_ABI_H
#define MROC_NCCL_NET_ABI_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

/* ncclResult_t's values a plugin returns. */
enum nccl_result {
	NCCL_OK = 0,
	NCCL_ERR_SYSTEM = 2,		/* the OS or mrocd failed us */
	NCCL_ERR_INTERNAL = 3,		/* a bug: ours or a broken peer */
	NCCL_ERR_INVALID_ARG = 4,
	NCCL_ERR_INVALID_USAGE = 5,
	NCCL_ERR_REMOTE = 6,		/* the peer went away or failed */
};
typedef int nccl_res;

#define NCCL_HANDLE_BYTES	128	/* NCCL_NET_HANDLE_MAXSIZE */
#define NCCL_REQS_PER_COMM	32	/* NCCL_NET_MAX_REQUESTS */
#define NCCL_PTR_HOST_MEM	0x1	/* ptrSupport: host memory only */
#define NCCL_DEVICE_HOST	0	/* netDeviceType: no device offload */

/* The logger NCCL hands to init: level 2 warn, 3 info, 5 trace; flags 16 = NET. */
enum { NCCL_LOG_LVL_WARN = 2, NCCL_LOG_LVL_INFO = 3, NCCL_LOG_LVL_TRACE = 5 };
#define NCCL_LOG_SUBSYS_NET	16
typedef void (*nccl_logger_fn)(int level, unsigned long flags, const char *file, int line,
			       const char *fmt, ...);
/* The profiler callback (v10+): never called by this plugin. */
typedef nccl_res (*nccl_profiler_fn)(void **ev, int type, void *phandle, int64_t plugin_id,
				     void *ext);

/* Device offload handles: never used (netDeviceType is HOST); only passed by pointer. */
struct nccl_dev_handle;

/* ---- properties ------------------------------------------------------------------ */

struct nccl_props_v8 {
	char *name;
	char *pci_path;			/* NULL: a virtual interface */
	uint64_t guid;
	int ptr_support;		/* NCCL_PTR_HOST_MEM */
	int reg_is_global;		/* registrations are cached, not tied to a comm */
	int speed_mbps;
	int port;
	float latency_us;
	int max_comms;
	int max_recvs;			/* buffers of one grouped receive */
	int dev_type;			/* NCCL_DEVICE_HOST */
	int dev_version;
};

#define NCCL_VDEVS_V9	4		/* v9 .. v11 */
#define NCCL_VDEVS_V12	8

struct nccl_vprops_v9 { int ndevs; int devs[NCCL_VDEVS_V9]; };
struct nccl_vprops_v12 { int ndevs; int devs[NCCL_VDEVS_V12]; };

/* v9 and v10: v8 plus force_flush after reg_is_global, the fused devices and size limits. */
struct nccl_props_v9 {
	char *name;
	char *pci_path;
	uint64_t guid;
	int ptr_support;
	int reg_is_global;
	int force_flush;
	int speed_mbps;
	int port;
	float latency_us;
	int max_comms;
	int max_recvs;
	int dev_type;
	int dev_version;
	struct nccl_vprops_v9 vprops;
	size_t max_p2p_bytes;
	size_t max_coll_bytes;
};

/* v11: v9 plus the largest multi-request. */
struct nccl_props_v11 {
	struct nccl_props_v9 v9;
	int max_multi_request;
};

/* v12: eight fused devices, the multi-request size, a rail and a plane id. */
struct nccl_props_v12 {
	char *name;
	char *pci_path;
	uint64_t guid;
	int ptr_support;
	int reg_is_global;
	int force_flush;
	int speed_mbps;
	int port;
	float latency_us;
	int max_comms;
	int max_recvs;
	int dev_type;
	int dev_version;
	struct nccl_vprops_v12 vprops;
	size_t max_p2p_bytes;
	size_t max_coll_bytes;
	int max_multi_request;
	int16_t rail_id;		/* -1: not given */
	int16_t plane_id;
};

/* v10+: per-communicator configuration (a traffic class, -1 = unset). */
struct nccl_comm_config { int traffic_class; };

/* v11+: hints about the collective in progress (accepted and ignored). */
struct nccl_comm_attr { int32_t max_peers, min_peers, max_flows, min_flows; };
struct nccl_net_attr {
	struct nccl_comm_attr send, recv;
	uint32_t op, algo, proto;
};

/* ---- the function tables ------------------------------------------------------------ */

/* What every version from 8 up shares, after its own first members. */
#define NCCL_NET_COMMON_TAIL(DEVH)							\
	nccl_res (*accept)(void *listen_comm, void **recv_comm, DEVH **recv_dev);	\
	nccl_res (*reg_mr)(void *comm, void *data, size_t size, int type, void **mh);	\
	nccl_res (*reg_mr_dmabuf)(void *comm, void *data, size_t size, int type,	\
				  uint64_t offset, int fd, void **mh);			\
	nccl_res (*dereg_mr)(void *comm, void *mh)

struct nccl_net_v8 {
	const char *name;
	nccl_res (*init)(nccl_logger_fn log);
	nccl_res (*devices)(int *ndev);
	nccl_res (*get_properties)(int dev, struct nccl_props_v8 *props);
	nccl_res (*listen)(int dev, void *handle, void **listen_comm);
	nccl_res (*connect)(int dev, void *handle, void **send_comm,
			    struct nccl_dev_handle **send_dev);
	NCCL_NET_COMMON_TAIL(struct nccl_dev_handle);
	nccl_res (*isend)(void *send_comm, void *data, int size, int tag, void *mh, void **req);
	nccl_res (*irecv)(void *recv_comm, int n, void **data, int *sizes, int *tags, void **mhs,
			  void **req);
	nccl_res (*iflush)(void *recv_comm, int n, void **data, int *sizes, void **mhs, void **req);
	nccl_res (*test)(void *req, int *done, int *sizes);
	nccl_res (*close_send)(void *send_comm);
	nccl_res (*close_recv)(void *recv_comm);
	nccl_res (*close_listen)(void *listen_comm);
	nccl_res (*get_device_mr)(void *comm, void *mh, void **dptr_mh);
	nccl_res (*irecv_consumed)(void *recv_comm, int n, void *req);
};

/* v9: sizes become size_t in isend/irecv (not in iflush or test); NIC fusion. */
struct nccl_net_v9 {
	const char *name;
	nccl_res (*init)(nccl_logger_fn log);
	nccl_res (*devices)(int *ndev);
	nccl_res (*get_properties)(int dev, struct nccl_props_v9 *props);
	nccl_res (*listen)(int dev, void *handle, void **listen_comm);
	nccl_res (*connect)(int dev, void *handle, void **send_comm,
			    struct nccl_dev_handle **send_dev);
	NCCL_NET_COMMON_TAIL(struct nccl_dev_handle);
	nccl_res (*isend)(void *send_comm, void *data, size_t size, int tag, void *mh, void **req);
	nccl_res (*irecv)(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
			  void **mhs, void **req);
	nccl_res (*iflush)(void *recv_comm, int n, void **data, int *sizes, void **mhs, void **req);
	nccl_res (*test)(void *req, int *done, int *sizes);
	nccl_res (*close_send)(void *send_comm);
	nccl_res (*close_recv)(void *recv_comm);
	nccl_res (*close_listen)(void *listen_comm);
	nccl_res (*get_device_mr)(void *comm, void *mh, void **dptr_mh);
	nccl_res (*irecv_consumed)(void *recv_comm, int n, void *req);
	nccl_res (*make_vdevice)(int *d, struct nccl_vprops_v9 *props);
};

/* v10: a profiler callback to init, a config to connect, profiler handles to isend/irecv. */
struct nccl_net_v10 {
	const char *name;
	nccl_res (*init)(nccl_logger_fn log, nccl_profiler_fn prof);
	nccl_res (*devices)(int *ndev);
	nccl_res (*get_properties)(int dev, struct nccl_props_v9 *props);
	nccl_res (*listen)(int dev, void *handle, void **listen_comm);
	nccl_res (*connect)(int dev, struct nccl_comm_config *cfg, void *handle, void **send_comm,
			    struct nccl_dev_handle **send_dev);
	NCCL_NET_COMMON_TAIL(struct nccl_dev_handle);
	nccl_res (*isend)(void *send_comm, void *data, size_t size, int tag, void *mh,
			  void *phandle, void **req);
	nccl_res (*irecv)(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
			  void **mhs, void **phandles, void **req);
	nccl_res (*iflush)(void *recv_comm, int n, void **data, int *sizes, void **mhs, void **req);
	nccl_res (*test)(void *req, int *done, int *sizes);
	nccl_res (*close_send)(void *send_comm);
	nccl_res (*close_recv)(void *recv_comm);
	nccl_res (*close_listen)(void *listen_comm);
	nccl_res (*get_device_mr)(void *comm, void *mh, void **dptr_mh);
	nccl_res (*irecv_consumed)(void *recv_comm, int n, void *req);
	nccl_res (*make_vdevice)(int *d, struct nccl_vprops_v9 *props);
};

/*
 * v11 and v12: init returns a per-communicator context that listen and connect
 * take; finalize releases it; setNetAttr gives hints.  v12 differs from v11
 * only in its properties and fused-device structs.
 */
#define NCCL_NET_V11_BODY(PROPS, VPROPS)						\
	const char *name;								\
	nccl_res (*init)(void **ctx, uint64_t comm_id, struct nccl_comm_config *cfg,	\
			 nccl_logger_fn log, nccl_profiler_fn prof);			\
	nccl_res (*devices)(int *ndev);							\
	nccl_res (*get_properties)(int dev, PROPS *props);				\
	nccl_res (*listen)(void *ctx, int dev, void *handle, void **listen_comm);	\
	nccl_res (*connect)(void *ctx, int dev, void *handle, void **send_comm,	\
			    struct nccl_dev_handle **send_dev);				\
	NCCL_NET_COMMON_TAIL(struct nccl_dev_handle);					\
	nccl_res (*isend)(void *send_comm, void *data, size_t size, int tag, void *mh,	\
			  void *phandle, void **req);					\
	nccl_res (*irecv)(void *recv_comm, int n, void **data, size_t *sizes, int *tags,\
			  void **mhs, void **phandles, void **req);			\
	nccl_res (*iflush)(void *recv_comm, int n, void **data, int *sizes, void **mhs,	\
			   void **req);							\
	nccl_res (*test)(void *req, int *done, int *sizes);				\
	nccl_res (*close_send)(void *send_comm);					\
	nccl_res (*close_recv)(void *recv_comm);					\
	nccl_res (*close_listen)(void *listen_comm);					\
	nccl_res (*get_device_mr)(void *comm, void *mh, void **dptr_mh);		\
	nccl_res (*irecv_consumed)(void *recv_comm, int n, void *req);			\
	nccl_res (*make_vdevice)(int *d, VPROPS *props);				\
	nccl_res (*finalize)(void *ctx);						\
	nccl_res (*set_net_attr)(void *ctx, struct nccl_net_attr *attr)

struct nccl_net_v11 { NCCL_NET_V11_BODY(struct nccl_props_v11, struct nccl_vprops_v9); };
struct nccl_net_v12 { NCCL_NET_V11_BODY(struct nccl_props_v12, struct nccl_vprops_v12); };

/* ---- the layout, pinned (LP64) ----------------------------------------------------- */

static_assert(sizeof(enum nccl_result) == sizeof(int), "ncclResult_t is an int-sized enum");
static_assert(sizeof(struct nccl_props_v8) == 64, "v8 properties");
static_assert(offsetof(struct nccl_props_v8, latency_us) == 40, "v8 latency");
static_assert(offsetof(struct nccl_props_v8, dev_version) == 56, "v8 netDeviceVersion");
static_assert(sizeof(struct nccl_props_v9) == 104, "v9/v10 properties");
static_assert(offsetof(struct nccl_props_v9, vprops) == 64, "v9 vProps");
static_assert(offsetof(struct nccl_props_v9, max_p2p_bytes) == 88, "v9 maxP2pBytes");
static_assert(sizeof(struct nccl_props_v11) == 112, "v11 properties");
static_assert(offsetof(struct nccl_props_v11, max_multi_request) == 104, "v11 multi-request");
static_assert(sizeof(struct nccl_props_v12) == 128, "v12 properties");
static_assert(offsetof(struct nccl_props_v12, max_p2p_bytes) == 104, "v12 maxP2pBytes");
static_assert(offsetof(struct nccl_props_v12, max_multi_request) == 120, "v12 multi-request");
static_assert(offsetof(struct nccl_props_v12, plane_id) == 126, "v12 planeId");
static_assert(sizeof(struct nccl_net_attr) == 44, "v11 ncclNetAttr");
static_assert(sizeof(struct nccl_net_v8) == 19 * sizeof(void *), "v8 table");
static_assert(offsetof(struct nccl_net_v8, isend) == 10 * sizeof(void *), "v8 isend");
static_assert(offsetof(struct nccl_net_v8, test) == 13 * sizeof(void *), "v8 test");
static_assert(sizeof(struct nccl_net_v9) == 20 * sizeof(void *), "v9 table");
static_assert(sizeof(struct nccl_net_v10) == 20 * sizeof(void *), "v10 table");
static_assert(sizeof(struct nccl_net_v11) == 22 * sizeof(void *), "v11 table");
static_assert(offsetof(struct nccl_net_v11, finalize) == 20 * sizeof(void *), "v11 finalize");
static_assert(sizeof(struct nccl_net_v12) == 22 * sizeof(void *), "v12 table");

#endif
