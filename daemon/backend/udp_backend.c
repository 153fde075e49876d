// SPDX-License-Identifier: MIT
/*
 * UDP fallback backend (see udp_backend.h): its ops table, set-up and
 * tear-down.
 *
 * Two io_urings, so that reaping one never has to hold back completions of
 * the other: the receive ring carries a single multishot recvmsg on the
 * receive socket (udp_rx.c), the send ring one sendmsg per packet
 * (udp_tx.c).  The sockets and addresses: udp_sock.c.
 */
#include <errno.h>
#include <linux/sock_diag.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "udp_state.h"

/* ---- backend ops ------------------------------------------------------------ */

static int udp_poll_fds(struct backend *b, int *fds, int max)
{
	struct udp_backend *u = to_udp(b);
	int n = 0;

	/* Readable while completions wait: received packets, late sends. */
	if (n < max)
		fds[n++] = u->rx.ring_fd;
	if (n < max)
		fds[n++] = u->tx.ring_fd;
	return n;
}

static void udp_get_stats(struct backend *b, struct backend_stats *out)
{
	*out = to_udp(b)->st;
}

void udp_backend_get_xstats(struct backend *b, struct udp_backend_xstats *out)
{
	struct udp_backend *u = to_udp(b);
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);

	if (u->rx_sock >= 0 && !getsockopt(u->rx_sock, SOL_SOCKET, SO_MEMINFO, mi, &len) &&
	    len > SK_MEMINFO_DROPS * sizeof(mi[0]))
		u->xst.rx_sock_drops = mi[SK_MEMINFO_DROPS];
	*out = u->xst;
}

void udp_backend_sports(const struct backend *b, uint16_t *min, uint16_t *max)
{
	const struct udp_backend *u = (const struct udp_backend *)b;

	*min = u->sport_min;
	*max = u->sport_max;
}

static const char *udp_describe(struct backend *b)
{
	return to_udp(b)->desc;
}

/* Cancel everything in flight and wait (bounded) until the kernel lets go of our buffers. */
static void udp_quiesce(struct udp_backend *u)
{
	struct io_uring *rings[2] = { u->rx_ring_ok ? &u->rx : NULL, u->tx_ring_ok ? &u->tx : NULL };

	for (int r = 0; r < 2; r++) {
		struct io_uring_sqe *sqe = rings[r] ? io_uring_get_sqe(rings[r]) : NULL;

		if (!sqe)
			continue;
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data64(sqe, UD_CANCEL);
		io_uring_submit(rings[r]);
	}
	for (int tries = 0; tries < 100 && (u->rx_armed || u->tx_inflight); tries++) {
		struct __kernel_timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;

		if (u->rx_armed) {
			io_uring_wait_cqe_timeout(&u->rx, &cqe, &ts);
			io_uring_for_each_cqe(&u->rx, head, cqe) {
				seen++;
				if (cqe->user_data == UD_RX && !(cqe->flags & IORING_CQE_F_MORE))
					u->rx_armed = false;
			}
			io_uring_cq_advance(&u->rx, seen);
		} else {
			io_uring_wait_cqe_timeout(&u->tx, &cqe, &ts);
		}
		udp_tx_reap(u);
	}
	if (u->rx_armed || u->tx_inflight)
		pr_warn("udp: requests still in flight at close (receive %d, sends %u)",
			u->rx_armed, u->tx_inflight);
}

static void udp_destroy(struct backend *b)
{
	struct udp_backend *u = to_udp(b);

	if (!u)
		return;
	udp_quiesce(u);
	/*
	 * A ring is torn down asynchronously after close, with its registered
	 * files: unregister them first so the ports are free on return.
	 */
	if (u->rx_br_ok)
		io_uring_unregister_buf_ring(&u->rx, RX_BGID);
	if (u->rx_files_ok)
		io_uring_unregister_files(&u->rx);
	if (u->rx_ring_ok)
		io_uring_queue_exit(&u->rx);
	if (u->tx_ring_ok)
		io_uring_queue_exit(&u->tx);
	if (u->rx_sock >= 0)
		close(u->rx_sock);
	for (uint32_t i = 0; u->tx_socks && i < u->span; i++)
		if (u->tx_socks[i] >= 0)
			close(u->tx_socks[i]);
	if (u->eph_sock >= 0)
		close(u->eph_sock);
	if (u->br)
		munmap(u->br, u->br_len);
	if (u->rx_area)
		munmap(u->rx_area, u->rx_area_len);
	if (u->tx_area)
		munmap(u->tx_area, u->tx_area_len);
	free(u->tx_socks);
	free(u->slots);
	free(u->tx_free);
	free(u->rx_held);
	free(u);
}

static const struct backend_ops udp_ops = {
	.name = "udp",
	.rx = udp_rx,
	.rx_release = udp_rx_release,
	.tx_get = udp_tx_get,
	.tx_send = udp_tx_send,
	.reply = udp_tx_reply,
	.poll_fds = udp_poll_fds,
	.get_stats = udp_get_stats,
	.describe = udp_describe,
	.destroy = udp_destroy,
};

/* ---- set-up ----------------------------------------------------------------- */

void udp_backend_cfg_default(struct udp_backend_cfg *cfg)
{
	*cfg = (struct udp_backend_cfg){
		.udp_port = MROC_UDP_PORT,
		.sport_min = 49152,
		.sport_max = 65535,
		.sq_entries = 256,
		.rx_bufs = 1024,
		.tx_bufs = 512,
		.buf_size = 2048,
		.rcvbuf = 4 << 20,
	};
}

static int cfg_check(const struct udp_backend_cfg *c)
{
	const char *why = NULL;

	if (c->local.family && c->local.family != AF_INET && c->local.family != AF_INET6)
		why = "local address family";
	else if (!c->udp_port || !c->sport_min || c->sport_min > c->sport_max)
		why = "need udp_port > 0 and 0 < sport_min <= sport_max";
	else if (c->udp_port >= c->sport_min && c->udp_port <= c->sport_max)
		why = "udp_port inside the source-port range";
	else if (!c->rx_bufs || c->rx_bufs > UDP_BACKEND_MAX_RX_BUFS ||
		 (c->rx_bufs & (c->rx_bufs - 1)))
		why = "rx_bufs must be a power of two up to 32768";
	else if (!c->tx_bufs || c->tx_bufs > (1u << 20) || !c->sq_entries ||
		 c->sq_entries > 32768)
		why = "tx_bufs or sq_entries out of range";
	else if (c->buf_size < 64 + MROC_DATA_OVERHEAD || c->buf_size > MAX_BUF_SIZE)
		why = "buf_size out of range";
	else if (c->dscp > 63)
		why = "dscp above 63";
	if (why)
		pr_err("udp: bad configuration: %s", why);
	return why ? -EINVAL : 0;
}

void *udp_map_area(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void describe_init(struct udp_backend *u)
{
	char a[MROC_ADDR_STRLEN], host[MROC_ADDR_STRLEN + 2], peer[24] = "";

	if (!u->local.family)
		snprintf(host, sizeof(host), u->dual ? "*" : "0.0.0.0");
	else if (u->family == AF_INET6)
		snprintf(host, sizeof(host), "[%s]", addr_str(&u->local, a, sizeof(a)));
	else
		snprintf(host, sizeof(host), "%s", addr_str(&u->local, a, sizeof(a)));
	if (u->peer_port != u->udp_port)
		snprintf(peer, sizeof(peer), " peer port %u", u->peer_port);
	snprintf(u->desc, sizeof(u->desc), "udp %s:%u sports %u-%u%s", host, u->udp_port,
		 u->sport_min, u->sport_max, peer);
}

int udp_backend_create(const struct udp_backend_cfg *cfg, struct peers *peers,
		       struct backend **out)
{
	struct udp_backend *u;
	int err;

	err = cfg_check(cfg);
	if (err)
		return err;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->b.ops = &udp_ops;
	u->b.peers = peers;
	u->rx_sock = -1;
	u->eph_sock = -1;
	u->local = cfg->local;
	u->udp_port = cfg->udp_port;
	u->peer_port = cfg->peer_port ? cfg->peer_port : cfg->udp_port;
	u->sport_min = cfg->sport_min;
	u->sport_max = cfg->sport_max;
	u->dscp = cfg->dscp;
	u->buf_size = cfg->buf_size;
	u->rx_bufs = cfg->rx_bufs;
	u->tx_bufs = cfg->tx_bufs;
	err = udp_sockets_open(u, cfg);
	if (!err)
		err = udp_rx_setup(u);
	if (!err)
		err = udp_tx_setup(u, cfg->sq_entries);
	if (err) {
		udp_destroy(&u->b);
		return err;
	}
	describe_init(u);
	*out = &u->b;
	return 0;
}
