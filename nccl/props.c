// SPDX-License-Identifier: MIT
/*
 * What getProperties tells NCCL, found out once at init:
 *  - the ports: the interfaces carrying an XDP program (mrocd's AF_XDP
 *    sockets; $NCCL_MROC_PORTS names them instead, comma-separated), asked of
 *    the kernel with one RTM_GETLINK dump; speed = their link rates
 *    (/sys/class/net/IF/speed) added up, since mroc spreads every QP over all
 *    of them; pciPath = the first port's PCI device (NULL for veth);
 *  - latency: measured, half the median round trip of 8-byte SENDs between
 *    two QPs of this process through this host's mrocd (its address, so the
 *    path is the daemon's whole stack on both sides; the wire is not in it);
 *  - maxComms: the QPs mrocd lets this client hold (one per comm), less the
 *    two the probe borrows for a moment.
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "plugin.h"

#define MAX_PORTS	16
#define PROBE_ROUNDS	21
#define PROBE_WAIT_MS	3000

/* ---- ports --------------------------------------------------------------------- */

/* IFLA_XDP's nested attributes: is a program attached? */
static int xdp_attached(const struct rtattr *xdp)
{
	const struct rtattr *a;
	int len = RTA_PAYLOAD(xdp);

	for (a = RTA_DATA(xdp); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == IFLA_XDP_ATTACHED && RTA_PAYLOAD(a) >= 1)
			return *(const uint8_t *)RTA_DATA(a) != XDP_ATTACHED_NONE;
	return 0;
}

/* One link of the dump: its name if an XDP program is attached. */
static void link_entry(const struct nlmsghdr *nh, char names[][IFNAMSIZ], int *n)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(nh);
	const struct rtattr *a;
	const char *name = NULL;
	int len = IFLA_PAYLOAD(nh), xdp = 0;

	for (a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == IFLA_IFNAME)
			name = RTA_DATA(a);
		else if (a->rta_type == IFLA_XDP)
			xdp = xdp_attached(a);
	}
	if (xdp && name && *n < MAX_PORTS)
		snprintf(names[(*n)++], IFNAMSIZ, "%s", name);
}

/* The interfaces with an XDP program, by one RTM_GETLINK dump. */
static int xdp_ports(char names[][IFNAMSIZ])
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		.ifi = { .ifi_family = AF_UNSPEC },
	};
	static char buf[32768];
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), n = 0;
	bool end = false;

	if (fd < 0)
		return -errno;
	if (send(fd, &req, sizeof(req), 0) < 0) {
		close(fd);
		return -errno;
	}
	while (!end) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (len <= 0)
			break;
		for (nh = (void *)buf; NLMSG_OK(nh, (size_t)len); nh = NLMSG_NEXT(nh, len)) {
			if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
				end = true;
				break;
			}
			if (nh->nlmsg_type == RTM_NEWLINK)
				link_entry(nh, names, &n);
		}
	}
	close(fd);
	return n;
}

static int env_ports(const char *s, char names[][IFNAMSIZ])
{
	int n = 0;

	while (*s && n < MAX_PORTS) {
		size_t len = strcspn(s, ",");

		if (len && len < IFNAMSIZ) {
			memcpy(names[n], s, len);
			names[n++][len] = 0;
		}
		s += len + (s[len] == ',');
	}
	return n;
}

/* Mbps of an interface's link, 0 if it reports none. */
static int link_speed(const char *ifname)
{
	char path[96];
	FILE *f;
	int v = 0;

	snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%d", &v) != 1 || v < 0)
		v = 0;
	fclose(f);
	return v;
}

static char *pci_path(const char *ifname)
{
	char path[96], real[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/class/net/%s/device", ifname);
	if (!realpath(path, real) || !strstr(real, "/pci"))
		return NULL;
	return strdup(real);
}

int mnccl_props_probe(struct mnccl_props *p)
{
	char names[MAX_PORTS][IFNAMSIZ];
	const char *env = getenv("NCCL_MROC_PORTS");
	size_t used;
	int n, i, err;

	memset(p, 0, sizeof(*p));
	n = env && *env ? env_ports(env, names) : xdp_ports(names);
	if (n < 0)
		n = 0;
	used = (size_t)snprintf(p->name, sizeof(p->name), "mroc");
	for (i = 0; i < n; i++) {
		p->speed_mbps += link_speed(names[i]);
		if (used < sizeof(p->name))
			used += (size_t)snprintf(p->name + used, sizeof(p->name) - used, "%s%s",
						 i ? "+" : ":", names[i]);
	}
	if (n)
		p->pci_path = pci_path(names[0]);
	if (!p->speed_mbps) {
		MNCCL_WARN("no port with a link rate found (%d XDP ports): speed given as 10000 Mbps",
			   n);
		p->speed_mbps = 10000;
	}
	err = mnccl_probe_latency(mnccl.ctx, mnccl.addr, &p->latency_us);
	if (err) {
		MNCCL_WARN("latency probe through %s failed (%s): latency given as 0",
			   mnccl.addr, mroc_strerror(err));
		p->latency_us = 0;
	}
	return 0;
}

void mnccl_props_free(struct mnccl_props *p)
{
	free(p->pci_path);
	p->pci_path = NULL;
}

void mnccl_props_v9(int dev, struct nccl_props_v9 *out)
{
	const struct mnccl_props *p = &mnccl.props;

	memset(out, 0, sizeof(*out));
	out->name = (char *)p->name;
	out->pci_path = p->pci_path;
	out->guid = (uint64_t)dev;
	out->ptr_support = NCCL_PTR_HOST_MEM;
	out->reg_is_global = 1;		/* reg.c caches registrations by range */
	out->force_flush = 0;
	out->speed_mbps = p->speed_mbps;
	out->port = 1;
	out->latency_us = p->latency_us;
	out->max_comms = p->max_comms;
	out->max_recvs = MNCCL_MAX_RECVS;
	out->dev_type = NCCL_DEVICE_HOST;
	out->dev_version = 0;
	out->vprops.ndevs = 1;
	out->vprops.devs[0] = dev;
	out->max_p2p_bytes = MNCCL_MAX_MSG;
	out->max_coll_bytes = MNCCL_MAX_MSG;
}

/* ---- latency probe --------------------------------------------------------------- */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The next completion of qp (a RECV or SEND), within the probe's time.
 * mroc_wait_cq spins, yields, then sleeps on the completion channel: on a
 * quiet host the answer comes within the spin (the same RTT as polling); on
 * a busy one four ranks' probes polling for 3 s each took the CPU from the
 * daemons they waited for (at load 24 all four timed out, s13-prov13).
 */
static int wait_wc(struct mroc_qp *qp, int64_t deadline, struct mroc_wc *wc)
{
	int64_t left;
	int n;

	for (;;) {
		n = mroc_poll_cq(qp, wc, 1);
		if (n < 0)
			return n;
		if (n == 1)
			return wc->status == MROC_WC_SUCCESS ? 0 : -EIO;
		left = deadline - now_ns();
		if (left <= 0)
			return -ETIMEDOUT;
		n = mroc_wait_cq(qp, (int)(left / 1000000) + 1);
		if (n && n != -ETIMEDOUT)
			return n;
	}
}

/* Waits for the receive on rx, answering nothing; sends are unsignaled. */
static int ping(struct mroc_qp *tx, struct mroc_qp *rx, struct mroc_mr *mr, int64_t deadline)
{
	struct mroc_send_wr s = { .opcode = MROC_WR_SEND,
				  .sg = { mroc_mr_addr(mr), 8, mroc_mr_lkey(mr) } };
	struct mroc_recv_wr r = { .sg = { (char *)mroc_mr_addr(mr) + 64, 8, mroc_mr_lkey(mr) } };
	struct mroc_wc wc;
	int err;

	err = mroc_post_recv(rx, &r);
	if (!err)
		err = mroc_post_send(tx, &s);
	if (!err)
		err = wait_wc(rx, deadline, &wc);
	return err;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int mnccl_probe_latency(struct mroc_ctx *ctx, const char *addr, float *us)
{
	struct mroc_qp_attr attr = { .sz = sizeof(attr), .mode = MROC_QP_DEFAULT,
				     .sq_depth = 8, .rq_depth = 8 };
	struct mroc_qp *a = NULL, *b = NULL;
	struct mroc_mr *mr = NULL;
	int64_t rtt[PROBE_ROUNDS], deadline = now_ns() + PROBE_WAIT_MS * 1000000LL;
	uint64_t sid = 0;
	int i, err = -ENOMEM;

	while (getrandom(&sid, sizeof(sid), 0) != sizeof(sid))
		;
	sid &= 0x7fffffffffffffffull;
	a = mroc_qp_create(ctx, &attr);
	b = mroc_qp_create(ctx, &attr);
	mr = mroc_mr_alloc(ctx, 4096, MROC_ACCESS_LOCAL_WRITE);
	if (!a || !b || !mr) {
		err = -errno;
		goto out;
	}
	err = mroc_qp_listen(a, sid);
	if (!err)
		err = mroc_qp_connect(b, addr, sid);
	if (!err)
		err = mroc_qp_wait_connected(b, PROBE_WAIT_MS);
	if (!err)
		err = mroc_qp_wait_connected(a, PROBE_WAIT_MS);
	for (i = 0; !err && i < PROBE_ROUNDS; i++) {
		int64_t t0 = now_ns();

		err = ping(b, a, mr, deadline);
		if (!err)
			err = ping(a, b, mr, deadline);
		rtt[i] = now_ns() - t0;
	}
	if (!err) {
		qsort(rtt, PROBE_ROUNDS, sizeof(rtt[0]), cmp_i64);
		*us = (float)rtt[PROBE_ROUNDS / 2] / 2000.0f;
	}
out:
	if (a)
		mroc_qp_destroy(a);
	if (b)
		mroc_qp_destroy(b);
	if (mr)
		mroc_mr_dereg(mr);
	return err;
}
