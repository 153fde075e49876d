/* SPDX-License-Identifier: MIT */
/*
 * The libfabric provider "mroc" (libmroc-fi.so): internal structures.
 *
 * Layering: libfabric objects (fabric, domain, AV, CQ, EQ, MR, endpoints)
 * on top of libmroc.  A domain is one libmroc context (one mrocd); every
 * connection is one libmroc QP with its own staging region; the provider's
 * protocol (proto.h) travels as SENDs over it.  Progress is manual: it runs
 * inside fi_cq_read/fi_cq_sread/fi_eq_read and the post calls, on the
 * caller's thread.  Nothing here prints or exits.
 *
 * Threading: a domain opened with FI_THREAD_DOMAIN (the default) takes no
 * lock at all; a stricter level the application asks for (FI_THREAD_SAFE,
 * _FID, _ENDPOINT, _COMPLETION) makes every entry point take the domain's
 * mutex (mfi_lock/mfi_unlock test one flag).
 */
#ifndef MROC_FI_H
#define MROC_FI_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>

#include "atomic_ops.h"
#include "fi_mroc.h"
#include "av_table.h"
#include "cqring.h"
#include "errmap.h"
#include "match.h"
#include "proto.h"

struct mroc_ctx;
struct mroc_mr;
struct mroc_qp;
struct mroc_wc;

#define MFI_PROV_NAME		"mroc"
#define MFI_FABRIC_NAME		"mroc"
#define MFI_PROV_VERSION	FI_VERSION(0, 1)
#define MFI_API_VERSION		FI_VERSION(1, 17)

/* Limits advertised in fi_info (see README.md). */
#define MFI_MAX_MSG_SIZE	(1ull << 30)
#define MFI_INJECT_SIZE		4096
#define MFI_TX_SIZE		256	/* user transmit operations outstanding per endpoint */
#define MFI_RX_SIZE		256	/* receives posted per endpoint */
#define MFI_IOV_LIMIT		4
static_assert(MFI_IOV_LIMIT == MFI_MATCH_IOV, "an operation's iovs are scattered like a receive's");
#define MFI_CQ_DEFAULT		1024

/* Per connection: receive slots the peer may fill, staging slots we send from. */
#define MFI_RX_SLOTS		32
#define MFI_TX_SLOTS		32
/* A slot holds a header and 64 KiB (and a little more): a 64 KiB message is one SEND. */
#define MFI_SLOT_SIZE		(64 * 1024 + 64)
#define MFI_CHUNK		(MFI_SLOT_SIZE - sizeof(struct mfi_hdr))
#define MFI_LISTENERS		2	/* QPs kept listening on an RDM endpoint's service */
/* MSG: private data of fi_connect/fi_accept/fi_reject (FI_OPT_CM_DATA_SIZE), in the HELLO */
#define MFI_CM_DATA_MAX		256
/* Rendezvous (rndv.c): a message of more than one chunk from and to zero-copy memory. */
#define MFI_RNDV_MIN		(MFI_CHUNK + 1)
#define MFI_RNDV_MAX		16	/* READs in flight per connection */
#define MFI_WRID_RNDV		(1ull << 62)	/* wr_id of a rendezvous READ: | its index */

struct mfi_fabric {
	struct fid_fabric fabric_fid;
	struct fi_provider *prov;
	uint32_t api;			/* the application's libfabric API version */
	int refs;			/* domains, EQs and passive endpoints on it (atomic) */
	/* Connection requests raised by passive endpoints closed since, not yet accepted
	 * (pep.c): still the application's to fi_accept; closed with the fabric. */
	pthread_mutex_t lock;
	struct mfi_conn *connreqs;
};

/* An object opened on the fabric (+1) or closed (-1): it cannot close before them. */
static inline void mfi_fabric_ref(struct mfi_fabric *fab, int d)
{
	if (fab)
		__atomic_add_fetch(&fab->refs, d, __ATOMIC_RELAXED);
}

struct mfi_domain {
	struct fid_domain domain_fid;
	struct mfi_fabric *fab;
	struct mroc_ctx *ctx;
	bool locked;			/* threading level above FI_THREAD_DOMAIN */
	pthread_mutex_t lock;
	uint64_t mr_mode;		/* FI_MR_VIRT_ADDR / FI_MR_PROV_KEY as agreed in getinfo */
	struct mfi_mr **mrs;		/* registered regions, sorted by key */
	size_t nmrs, mrs_cap;
	uint64_t next_key;
	uint64_t next_gen;		/* names each registration: a key reused later is another region */
	uint64_t zc_bytes;		/* of its registrations, the bytes zero-copy holds (zcopy.c) */
	uint32_t api;			/* the application's libfabric API version */
	int refs;			/* objects opened on it, connections using its context */
	bool orphan;			/* a passive endpoint's private domain, closed: freed at refs 0 */
};

struct mfi_mr {
	struct fid_mr mr_fid;
	struct mfi_domain *dom;
	uint8_t *base;
	size_t len;
	uint64_t access;		/* FI_REMOTE_READ / FI_REMOTE_WRITE ... */
	uint64_t gen;			/* mfi_domain.next_gen at registration */
	/* Zero-copy (zcopy.c): the whole pages [zstart, zstart + zlen) as an mroc region,
	 * zstart at offset zoff in it; zmr NULL when the buffer does not allow it. */
	struct mroc_mr *zmr;
	bool zsend;			/* registered for sending: peers may READ it */
	bool rebacked;			/* private pages we re-backed (made private again at close) */
	int zfd;			/* the memfd, open while registered */
	uint8_t *zstart;
	uint64_t zlen, zoff;
};

/* Where a buffer lies in a zero-copy region. */
struct mfi_zc {
	struct mroc_mr *mr;
	uint64_t off;			/* in the region */
	uint8_t *addr;			/* the same bytes in libmroc's mapping of it */
};

/* A rendezvous message being READ by its receiver (rndv.c). */
struct mfi_rndv {
	struct mfi_rxop *rx;		/* the receive it fills */
	uint32_t req_id;		/* the sender's, echoed in the FIN (RMA_ACK) */
	uint32_t rkey;			/* the sender's region and the message's offset in it */
	uint64_t roff;
	uint64_t len;			/* bytes read: the message, or the receive's room */
	struct mroc_mr *bounce;		/* NULL: straight into the receive's buffer */
	struct mfi_rndv *next;
};

struct mfi_av_fid {
	struct fid_av av_fid;
	struct mfi_domain *dom;
	struct mfi_av av;
	int eps;			/* endpoints bound to it: it cannot close under them */
};

struct mfi_ep;

/*
 * The endpoints a CQ or counter is bound to (progress runs them) and the
 * epoll set over their connections' completion fds it sleeps on (FI_WAIT_FD;
 * epfd -1 without one): epset.c.
 */
struct mfi_epset {
	struct mfi_ep **eps;
	size_t n;
	int epfd;
};

struct mfi_cq {
	struct fid_cq cq_fid;
	struct mfi_domain *dom;
	struct mfi_cqring ring;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	struct mfi_epset set;		/* endpoints bound to it, FI_WAIT_FD's epoll set */
	int sigfd;			/* eventfd in that set: fi_cq_signal */
	struct mfi_idle idle;		/* reads that found nothing: when to yield */
};

/* What a counter bound to an endpoint counts (fi_ep_bind's flags, fi_endpoint(3)). */
enum mfi_cntr_kind {
	MFI_CNTR_SEND,		/* FI_SEND: messages sent (tagged or not) */
	MFI_CNTR_RECV,		/* FI_RECV: messages received */
	MFI_CNTR_READ,		/* FI_READ: reads, fetching and compare atomics initiated */
	MFI_CNTR_WRITE,		/* FI_WRITE: writes and base atomics initiated */
	MFI_CNTR_REMOTE_READ,	/* FI_REMOTE_READ: the same, targeting us (FI_RMA_EVENT) */
	MFI_CNTR_REMOTE_WRITE,	/* FI_REMOTE_WRITE */
	MFI_CNTR_KINDS,
};

/* A completion counter (cntr.c). */
struct mfi_cntr {
	struct fid_cntr cntr_fid;
	struct mfi_domain *dom;
	enum fi_wait_obj wait_obj;	/* FI_WAIT_NONE, _YIELD or _FD (FI_WAIT_UNSPEC is FD) */
	uint64_t value, err;
	uint64_t seen, seen_err;	/* what the application last read (fi_trywait) */
	struct mfi_epset set;		/* endpoints bound to it, FI_WAIT_FD's epoll set */
	int sigfd;			/* eventfd in that set: fi_cntr_add/set and their err forms */
	struct mfi_idle idle;		/* reads that found nothing: when to yield */
};

/* An event queue entry: connection events, shutdowns, their errors. */
struct mfi_eq_event {
	uint32_t event;
	struct fi_eq_cm_entry cm;	/* cm.fid, cm.info */
	/*
	 * What a non-CM entry reads back: the fid's context for ours (taken
	 * when pushed, from our own fid); an fi_eq_write's as the application
	 * wrote it, its fid never dereferenced (fabtests' fi_eq_test writes
	 * any pointer there, and reading its context crashed eq_read).
	 */
	void *context;
	uint64_t data;
	bool err;
	int err_no;
	/* CM private data: after a FI_CONNREQ's or FI_CONNECTED's entry, or a reject's err_data */
	uint8_t cm_data[MFI_CM_DATA_MAX];
	size_t cm_len;
};

struct mfi_eq {
	struct fid_eq eq_fid;
	struct mfi_fabric *fab;
	pthread_mutex_t lock;		/* the queue: fi_eq_write may come from another thread */
	struct mfi_eq_event *ev;
	size_t head, count, cap;
	enum fi_wait_obj wait_obj;	/* FI_WAIT_NONE or FI_WAIT_FD */
	int epfd;			/* FI_WAIT_FD: epoll set of sigfd and the QPs' completion fds */
	int sigfd;			/* eventfd there, written with every entry queued */
	struct fid **objs;		/* PEPs and MSG endpoints bound to it (progress runs them) */
	size_t nobjs;
	struct mfi_idle idle;
	uint8_t err_data[MFI_CM_DATA_MAX];	/* what err_data points at when the caller gave none */
};

/* ---- connections --------------------------------------------------------- */

/* FI_MROC_CONNECT_TIMEOUT_MS's default (conn.c). */
#define MFI_CONNECT_TIMEOUT_MS	30000

enum mfi_conn_state {
	MFI_CONN_LISTEN,		/* a QP waiting for a peer (RDM listener / passive endpoint) */
	MFI_CONN_CONNECTING,		/* mroc connect posted */
	MFI_CONN_UP,			/* mroc connected; HELLO sent */
	MFI_CONN_DOWN,
};

struct mfi_txop;

/* One staging slot: the bytes of one SEND (header + chunk). */
struct mfi_txslot {
	struct mfi_txop *op;		/* completed when its last chunk's SEND completes */
	bool last;
};

/* Where the chunks of the message now arriving on a connection go. */
struct mfi_rxcur {
	enum { RX_NONE, RX_POSTED, RX_UNEXP, RX_WRITE, RX_READRESP, RX_DROP } kind;
	struct mfi_rxop *rx;		/* RX_POSTED */
	struct mfi_unexp *ux;		/* RX_UNEXP */
	uint8_t *dst;			/* RX_WRITE: the target region */
	uint64_t key, gen;		/* RX_WRITE: that region, checked at every chunk */
	bool gone;			/* RX_WRITE: it was closed midway */
	struct mfi_txop *rd;		/* RX_READRESP: the read waiting for it */
	uint64_t off, total;
	int status;			/* RX_WRITE: -FI_EACCES etc., reported in the RMA_ACK */
	uint32_t req_id;
	uint64_t data;
	bool has_data;
};

struct mfi_conn {
	struct fid handle;		/* MSG: fi_info->handle of a connection request */
	struct mfi_ep *ep;		/* NULL while a passive endpoint holds it */
	struct mfi_pep *pep;
	struct mfi_fabric *orphan_of;	/* a FI_CONNREQ whose passive endpoint closed (pep.c) */
	struct mfi_addr local;		/* and that endpoint's name, the accepting one's */
	struct mfi_domain *dom;		/* whose libmroc context the QP lives in */
	bool self;			/* our own address: delivered in-process, no QP */
	struct mroc_qp *qp;
	struct mroc_mr *mr;		/* credit words + receive slots + staging slots */
	uint8_t *base;
	enum mfi_conn_state state;
	struct mfi_addr peer;		/* known once connected (initiator) or from HELLO */
	bool peer_known;
	fi_addr_t fiaddr;		/* AV entry of the peer, FI_ADDR_NOTAVAIL if none */
	bool hello_seen;
	bool accepted;			/* came in on a listening QP */
	bool connreq;			/* passive endpoint's: FI_CONNREQ raised (its HELLO came) */
	bool rejecting;			/* passive endpoint's: fi_reject's HELLO on its way */
	uint32_t retries;		/* RDM: connects refused so far */
	int64_t connect_by;		/* mfi_now_ms() when an unanswered connect fails; 0: never */
	/* Credits: the peer posted MFI_RX_SLOTS receives and tells how many it
	 * has freed since (in every header, and by RDMA WRITE into our credit
	 * word when it has nothing to send). */
	uint64_t sends;			/* SENDs posted to the peer */
	uint32_t peer_freed;		/* highest count the peer told */
	uint32_t peer_rkey;
	uint32_t freed, told;		/* our receive slots freed / last count told */
	/* Staging ring: slots [tx_head, tx_tail) are in flight (SENDs complete in order). */
	struct mfi_txslot txs[MFI_TX_SLOTS];
	uint32_t tx_head, tx_tail;
	struct mfi_txop *txq, *txq_tail;	/* operations waiting to send (FIFO) */
	struct mfi_rxcur cur;
	struct mfi_conn *next;		/* in the endpoint's (or passive endpoint's) list */
	uint8_t *selfbuf;		/* self: one slot to build chunks in */
	/* Identity (proto.h): a connection the peer opened is read once the endpoint its
	 * HELLO names confirms the nonce; until then its receive completions wait here. */
	uint64_t nonce;			/* ours, in our HELLO */
	uint64_t peer_nonce;		/* the peer's, from its HELLO */
	bool verified;			/* opened by us, or confirmed */
	bool verify_sent;		/* VERIFY queued on our connection to the claimed peer */
	struct mroc_wc *held;		/* MFI_RX_SLOTS receive completions, in order */
	uint32_t held_head, nheld;
	/* Rendezvous: the peer's HELLO said it serves READs of its messages; READs of
	 * messages it announced, in flight (by index) and waiting to start. */
	bool peer_rndv;
	struct mfi_rndv *rd[MFI_RNDV_MAX];
	uint32_t nrd;
	struct mfi_rndv *rdq, *rdq_tail;
};

/* Offsets in a connection's region. */
#define MFI_OFF_CREDIT_IN	0	/* the peer writes its freed count here */
#define MFI_OFF_CREDIT_OUT	8	/* source of our credit writes */
#define MFI_OFF_RX		64
#define MFI_OFF_TX		(MFI_OFF_RX + MFI_RX_SLOTS * MFI_SLOT_SIZE)
#define MFI_REGION_LEN		(MFI_OFF_TX + MFI_TX_SLOTS * MFI_SLOT_SIZE)

/* ---- operations -------------------------------------------------------------- */

enum mfi_txkind {
	TX_MSG, TX_TAGGED, TX_WRITE, TX_READ, TX_READRESP, TX_RMA_ACK, TX_HELLO,
	TX_ATOMIC,		/* the request of fi_atomic/fi_fetch_atomic/fi_compare_atomic */
	TX_ATOMIC_RESP,		/* the target's answer to a fetching one */
	TX_VERIFY,		/* "is this nonce yours?" (data) */
	TX_VERIFY_RESP,		/* the answer: nonce in data, 1 or 0 in tag */
};

struct mfi_txop {
	enum mfi_txkind kind;
	struct iovec iov[MFI_IOV_LIMIT];
	size_t iov_count;
	uint64_t total, sent;		/* payload bytes (0 for a read request) */
	uint64_t rlen;			/* TX_READ: bytes asked for */
	bool hdr_sent;			/* a zero-length op still sends one chunk */
	uint64_t tag, data, flags;	/* flags: FI_REMOTE_CQ_DATA, FI_COMPLETION ... */
	uint64_t rkey, raddr;		/* RMA */
	struct iovec res[MFI_IOV_LIMIT];	/* TX_ATOMIC: where the original values go */
	size_t res_count;
	uint32_t req_id;
	int status;			/* RMA_ACK; for answered kinds the answer's status */
	bool answered;			/* answered kinds: the answer came (before the last SEND's completion) */
	bool sends_done;		/* answered kinds: the last chunk's SEND completed */
	uint64_t mr_key, mr_gen;	/* TX_READRESP: the region read from, checked at every chunk */
	void *context;
	bool user;			/* from the pool; reports a completion */
	bool completion;		/* a CQ entry is wanted */
	bool owned;			/* iov[0] is a private copy (inject), freed with the op */
	bool rndv;			/* TX_MSG/TX_TAGGED from zero-copy memory: the peer READs it */
	uint32_t zc_rkey;		/* rndv: the region and the message's offset in it */
	uint64_t zc_off;
	struct mfi_conn *conn;
	struct mfi_txop *next;
};

/* Writes, reads and atomics complete with the target's answer, not with their SEND. */
static inline bool mfi_txop_answered(const struct mfi_txop *op)
{
	return op->kind == TX_WRITE || op->kind == TX_READ || op->kind == TX_ATOMIC || op->rndv;
}

/* ---- endpoints ------------------------------------------------------------- */

struct mfi_pep {
	struct fid_pep pep_fid;
	struct mfi_fabric *fab;
	struct fi_info *info;
	struct mfi_eq *eq;
	struct mfi_domain *dom;		/* a private context for the listening QPs */
	struct mfi_addr addr;
	int port_fd;			/* reserves the service (a bound TCP port) */
	struct mfi_conn *listeners;	/* listening QPs, then connections waiting for fi_accept */
	bool listening;
};

struct mfi_ep {
	struct fid_ep ep_fid;
	struct mfi_domain *dom;
	struct fi_info *info;
	enum fi_ep_type type;
	struct mfi_av_fid *av;
	struct mfi_cq *txcq, *rxcq;
	uint64_t tx_flags, rx_flags;	/* bind flags: FI_SELECTIVE_COMPLETION */
	struct mfi_cntr *cntr[MFI_CNTR_KINDS];	/* counters bound, by what they count */
	uint64_t tx_op_flags, rx_op_flags;
	struct mfi_eq *eq;
	bool enabled;
	struct mfi_addr addr;		/* our name */
	int port_fd;
	struct mfi_conn *conns;		/* every connection (and listener) */
	struct mfi_conn **by_fiaddr;	/* RDM: the connection we send to each AV entry on */
	size_t nby;
	struct mfi_match match;		/* posted receives and unexpected messages */
	struct mfi_txop txpool[MFI_TX_SIZE];
	struct mfi_txop *txfree;
	uint32_t next_req;
	struct mfi_txop **rma_wait;	/* RMA ops waiting for an ACK or read response, by req_id */
	size_t rma_cap;
	struct fi_mroc_counters cnt;	/* what was refused (fi_mroc.h) */
	struct fi_mroc_traffic traffic;	/* how messages moved (fi_mroc.h) */
	size_t min_multi_recv;		/* FI_OPT_MIN_MULTI_RECV */
	/* MSG endpoints */
	struct mfi_conn *msg_conn;
	struct mfi_addr dest;
	bool connected_reported, shutdown_reported;
	bool accepted;			/* fi_accept's: the server side of its connection */
	uint8_t cm[MFI_CM_DATA_MAX];	/* fi_connect's private data, sent in our HELLO */
	size_t cm_len;
};

/* ---- helpers shared between files ------------------------------------------ */

extern struct fi_provider mfi_prov;

static inline void mfi_lock(struct mfi_domain *d)
{
	if (d->locked)
		pthread_mutex_lock(&d->lock);
}

static inline void mfi_unlock(struct mfi_domain *d)
{
	if (d->locked)
		pthread_mutex_unlock(&d->lock);
}

/*
 * An operation of kind k ended (err: negative FI_E*, or 0): the counter bound
 * for it counts it, whether or not it makes a CQ entry (fi_cntr(3): "Counters
 * increment on all successful completions, separately from whether the
 * operation generates an entry in an event queue").
 */
static inline void mfi_cntr_count(struct mfi_ep *ep, enum mfi_cntr_kind k, int err)
{
	struct mfi_cntr *c = ep->cntr[k];

	if (!c)
		return;
	if (err)
		c->err++;
	else
		c->value++;
}

/* nosys.c: the entries of ops tables we do not implement (-FI_ENOSYS) */
int mfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int mfi_no_control(struct fid *fid, int command, void *arg);
int mfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context);
int mfi_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset);
int mfi_no_tostr(const struct fid *fid, char *buf, size_t len);
int mfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context);
int mfi_no_getname(fid_t fid, void *addr, size_t *addrlen);
int mfi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int mfi_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen);
int mfi_no_listen(struct fid_pep *pep);
int mfi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int mfi_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen);
int mfi_no_shutdown(struct fid_ep *ep, uint64_t flags);
int mfi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		void *context);
int mfi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **ep,
		  void *context);
int mfi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **ep,
		  void *context);
int mfi_no_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen);
int mfi_no_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen);

/* prov.c */
const char *mfi_strerror(int prov_errno, char *buf, size_t len);
int mfi_mroc_err(int err, const char *what);
int mfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info);
int mfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
int mfi_local_addr(const struct fi_info *info, struct mfi_addr *out);
int mfi_reserve_port(const struct mfi_addr *a, uint16_t want, uint16_t *port);
int mfi_bind_addr(const struct fi_info *info, struct mfi_addr *out);
int mfi_name_copy(const struct mfi_addr *a, void *addr, size_t *addrlen);
int mfi_rename(struct mfi_addr *cur, int *port_fd, const void *addr, size_t addrlen);

/* domain.c */
int mfi_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
		    void *context);
struct mfi_mr *mfi_mr_find(struct mfi_domain *d, uint64_t key);
int mfi_mr_target(struct mfi_domain *d, uint64_t key, uint64_t addr, uint64_t len,
		  uint64_t access, uint8_t **out, uint64_t *gen);
bool mfi_mr_alive(struct mfi_domain *d, uint64_t key, uint64_t gen);

/* zcopy.c */
bool mfi_rndv_enabled(void);
void mfi_zc_reg(struct mfi_domain *d, struct mfi_mr *mr);
void mfi_zc_dereg(struct mfi_mr *mr);
void mfi_zc_fini(void);
/* [p, p + len) in a zero-copy region (send: one peers may READ): where, in *out. */
bool mfi_zc_find(struct mfi_domain *d, const void *p, uint64_t len, bool send,
		 struct mfi_zc *out);

/* rndv.c: the receiver's side of a rendezvous */
void mfi_rndv_start(struct mfi_conn *c, struct mfi_rxop *rx, uint32_t req_id, uint32_t rkey,
		    uint64_t roff, uint64_t total);
void mfi_rndv_read_done(struct mfi_conn *c, const struct mroc_wc *wc);
void mfi_rndv_pump(struct mfi_conn *c);
void mfi_rndv_conn_gone(struct mfi_conn *c, int err);
void mfi_rndv_fin(struct mfi_conn *c, uint32_t req_id, int status);

/* av.c (fid part) */
int mfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
		void *context);

/* cq.c */
int64_t mfi_now_ms(void);
void mfi_idle_setup(struct mfi_idle *w);
bool mfi_idle_after(struct mfi_idle *w, bool busy);
int mfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
		void *context);
int mfi_epset_add(struct mfi_epset *s, struct mfi_ep *ep);
void mfi_epset_del(struct mfi_epset *s, struct mfi_ep *ep);
void mfi_epset_fini(struct mfi_epset *s);
int mfi_epset_progress(const struct mfi_epset *s);
void mfi_epset_arm(const struct mfi_epset *s, bool arm);
int mfi_epset_watch(const struct mfi_epset *s, struct mfi_conn *c);
int mfi_epoll_watch(int epfd, struct mfi_conn *c);
int mfi_waitfd_open(int *epfd, int *sigfd);
void mfi_waitfd_close(int epfd, int sigfd);
void mfi_waitfd_signal(int sigfd);
void mfi_waitfd_drain(int sigfd);
int mfi_cq_trywait(struct mfi_cq *cq);

/* eq.c */
int mfi_eq_trywait(struct mfi_eq *eq);
int mfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		void *context);
int mfi_eq_push(struct mfi_eq *eq, uint32_t event, struct fid *fid, struct fi_info *info,
		int err_no, const void *cm, size_t cm_len);
int mfi_eq_watch(struct mfi_eq *eq, struct fid *obj);
int mfi_eq_watch_conn(struct mfi_eq *eq, struct mfi_conn *c);
void mfi_eq_unwatch(struct mfi_eq *eq, struct fid *obj);

/* cntr.c */
int mfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		  void *context);
int mfi_cntr_bind_ep(struct mfi_cntr *c, struct mfi_ep *ep, uint64_t flags);
void mfi_cntr_unbind_ep(struct mfi_ep *ep);
int mfi_cntr_trywait(struct mfi_cntr *c);

/* conn.c */
int mfi_conn_create(struct mfi_ep *ep, struct mfi_domain *dom, struct mfi_conn **out);
int mfi_conn_create_self(struct mfi_ep *ep, struct mfi_conn **out);
void mfi_conn_fail(struct mfi_conn *c, int err);
bool mfi_conn_post_inject(struct mfi_conn *c, enum mfi_txkind kind, const void *buf, size_t len,
			  uint64_t tag, uint64_t data, uint64_t flags, uint64_t key, uint64_t addr);
void mfi_conn_destroy(struct mfi_conn *c);
int mfi_conn_listen(struct mfi_conn *c, uint64_t service);
bool mfi_conn_late(const struct mfi_conn *c);
int mfi_conn_connect(struct mfi_conn *c, const struct mfi_addr *peer);
int mfi_conn_progress(struct mfi_conn *c);
void mfi_conn_kick(struct mfi_conn *c);
void mfi_conn_queue(struct mfi_conn *c, struct mfi_txop *op);
int mfi_send_hello(struct mfi_conn *c, const void *cm, size_t cm_len, uint16_t flags);
int mfi_conn_await_hello(struct mfi_conn *c, const uint8_t **cm, size_t *cm_len);
bool mfi_conn_reject_sent(struct mfi_conn *c);
void mfi_conn_refuse(struct mfi_conn *c);

/* ep.c */
int mfi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		void *context);
int mfi_ep_progress(struct mfi_ep *ep);
void mfi_ep_watch(struct mfi_ep *ep, struct mfi_conn *c);
struct mfi_conn *mfi_ep_tx_conn(struct mfi_ep *ep, fi_addr_t dest, int *err);
void mfi_ep_conn_event(struct mfi_conn *c, int event, int err_no);
void mfi_ep_hello(struct mfi_conn *c, const void *cm, size_t cm_len, bool reject);
void mfi_ep_hello_sent(struct mfi_conn *c);
bool mfi_ep_conn_refused(struct mfi_conn *c, const struct mroc_wc *wc);
bool mfi_conn_refused_for_good(const struct mroc_wc *wc);
struct mfi_txop *mfi_ep_txop_get(struct mfi_ep *ep);
struct mfi_conn *mfi_ep_dial(struct mfi_ep *ep, const struct mfi_addr *a, int *err);
void mfi_ep_verify(struct mfi_conn *c);
void mfi_ep_verify_answer(struct mfi_conn *c, uint64_t nonce, bool yes);
void mfi_ep_verify_ask(struct mfi_conn *c, uint64_t nonce);

/* pep.c */
int mfi_pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
		 void *context);
struct mfi_conn *mfi_connreq_take(const struct fid *handle, struct mfi_addr *local);
void mfi_connreq_forget(struct mfi_conn *c);
void mfi_connreqs_close(struct mfi_fabric *fab);
void mfi_pep_progress(struct mfi_pep *pep);

/* txop.c */
struct mfi_txop *mfi_txop_get(struct mfi_ep *ep);
void mfi_txop_put(struct mfi_ep *ep, struct mfi_txop *op);
void mfi_txop_done(struct mfi_ep *ep, struct mfi_txop *op, int err);
uint32_t mfi_rma_track(struct mfi_ep *ep, struct mfi_txop *op);
struct mfi_txop *mfi_rma_take(struct mfi_ep *ep, uint32_t req_id);
struct mfi_txop *mfi_rma_peek(struct mfi_ep *ep, uint32_t req_id);
void mfi_rma_fail_conn(struct mfi_ep *ep, struct mfi_conn *c, int err);
void mfi_rma_answer(struct mfi_ep *ep, struct mfi_txop *op, int status);

/* rx.c: a chunk arrived on a connection */
void mfi_rx_chunk(struct mfi_conn *c, const struct mfi_hdr *h, const uint8_t *payload,
		  uint32_t len);
void mfi_rx_complete(struct mfi_ep *ep, struct mfi_rxop *rx, int err);
void mfi_rx_take_unexp(struct mfi_ep *ep, struct mfi_unexp *ux, struct mfi_rxop *rx);
void mfi_rx_discard_unexp(struct mfi_unexp *ux);
struct mfi_rxop *mfi_rx_multi_carve(struct mfi_ep *ep, struct mfi_rxop *m, uint64_t total,
				    bool requeue);
void mfi_rx_conn_gone(struct mfi_conn *c, int err);

/* xfer.c */
extern struct fi_ops_msg mfi_msg_ops;
extern struct fi_ops_tagged mfi_tagged_ops;
extern struct fi_ops_rma mfi_rma_ops;

/* atomic.c */
extern struct fi_ops_atomic mfi_atomic_ops;
int mfi_query_atomic(struct fid_domain *domain, enum fi_datatype dt, enum fi_op op,
		     struct fi_atomic_attr *attr, uint64_t flags);

#endif
