// SPDX-License-Identifier: MIT
/*
 * rtnetlink requests over libmnl: route lookup, neighbour lookup and
 * resolution, link attributes.  See netlink.h for the contract.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/ethtool.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mroc_util.h"
#include "netlink.h"

/* Replies here are single messages well under this (link ones are largest). */
#define NL_BUF_SIZE	32768
/* Our requests: a header, a family header and one or two attributes. */
#define NL_REQ_SIZE	256
#define NL_ERRMSG_LEN	160

struct nl {
	struct mnl_socket *sk;
	uint32_t portid, seq;
	int timeout_ms;
	int ioctl_fd;			/* for SIOCETHTOOL; -1 if none */
	char errmsg[NL_ERRMSG_LEN];
	uint8_t buf[NL_BUF_SIZE] __attribute__((aligned(8)));
};

/* Called for each reply message of our request; returns 0 or negative errno. */
typedef int (*nl_reply_cb)(const struct nlmsghdr *nlh, void *data);

int nl_open(struct nl **out)
{
	int one = 1;
	struct nl *nl;
	int err;

	nl = calloc(1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	nl->timeout_ms = NL_TIMEOUT_MS_DEFAULT;
	nl->ioctl_fd = -1;
	nl->sk = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl->sk) {
		err = -errno;
		goto err_free;
	}
	/* Short error ACKs with the kernel's message; strict checks of GET requests. */
	mnl_socket_setsockopt(nl->sk, NETLINK_CAP_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nl->sk, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nl->sk, NETLINK_GET_STRICT_CHK, &one, sizeof(one));
	if (mnl_socket_bind(nl->sk, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		goto err_close;
	}
	nl->portid = mnl_socket_get_portid(nl->sk);
	nl->seq = (uint32_t)time(NULL);
	/* Only for link speeds: a link without one is no failure. */
	nl->ioctl_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	*out = nl;
	return 0;

err_close:
	mnl_socket_close(nl->sk);
err_free:
	free(nl);
	return err;
}

void nl_close(struct nl *nl)
{
	if (!nl)
		return;
	if (nl->ioctl_fd >= 0)
		close(nl->ioctl_fd);
	mnl_socket_close(nl->sk);
	free(nl);
}

void nl_set_timeout(struct nl *nl, int timeout_ms)
{
	if (timeout_ms > 0)
		nl->timeout_ms = timeout_ms;
}

const char *nl_errmsg(const struct nl *nl)
{
	return nl->errmsg;
}

/* ---- request / response ----------------------------------------------------- */

static int64_t now_ms(void)
{
	return (int64_t)(mono_ns() / 1000000);
}

/* The extended-ACK message (NLMSGERR_ATTR_MSG) of an error reply, if any. */
static void nl_save_extack(struct nl *nl, const struct nlmsghdr *nlh)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	unsigned int off = sizeof(*e);
	const struct nlattr *a;

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) {	/* our request is echoed first */
		if (e->msg.nlmsg_len < sizeof(struct nlmsghdr) ||
		    e->msg.nlmsg_len > nlh->nlmsg_len)
			return;
		off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	}
	if (mnl_nlmsg_size(off) > nlh->nlmsg_len)
		return;
	mnl_attr_for_each(a, nlh, off) {
		if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG &&
		    mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0) {
			snprintf(nl->errmsg, sizeof(nl->errmsg), "%s", mnl_attr_get_str(a));
			return;
		}
	}
}

/*
 * Handles one datagram of replies.  Returns true once our request is
 * finished (ACK, error or DONE), with the outcome in *res: the kernel's
 * error, else the first callback error, else 0.
 */
static bool nl_handle(struct nl *nl, int len, uint32_t seq, nl_reply_cb cb, void *data,
		      int *res)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)nl->buf;
	const struct nlmsgerr *e;
	int err;

	for (; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len)) {
		if (nlh->nlmsg_seq != seq || nlh->nlmsg_pid != nl->portid)
			continue;		/* a late reply to an older request */
		switch (nlh->nlmsg_type) {
		case NLMSG_NOOP:
			break;
		case NLMSG_DONE:
			return true;
		case NLMSG_ERROR:
			if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e))) {
				*res = -EBADMSG;
				return true;
			}
			e = mnl_nlmsg_get_payload(nlh);
			if (e->error) {
				nl_save_extack(nl, nlh);
				*res = e->error < 0 ? e->error : -e->error;
			}
			return true;
		case NLMSG_OVERRUN:
			*res = -EIO;
			return true;
		default:
			if (cb && !*res) {
				err = cb(nlh, data);
				if (err)
					*res = err;
			}
		}
	}
	return false;
}

/*
 * Sends req (REQUEST and ACK flags added here) and feeds each reply to cb
 * until the kernel's ACK or error arrives or the timeout passes.
 */
static int nl_request(struct nl *nl, struct nlmsghdr *req, nl_reply_cb cb, void *data)
{
	struct pollfd pfd = { .fd = mnl_socket_get_fd(nl->sk), .events = POLLIN };
	int64_t deadline = now_ms() + nl->timeout_ms;
	uint32_t seq = ++nl->seq;
	int res = 0, n;
	ssize_t len;

	req->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	req->nlmsg_seq = seq;
	nl->errmsg[0] = '\0';
	if (mnl_socket_sendto(nl->sk, req, req->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		int64_t left = deadline - now_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		len = recv(pfd.fd, nl->buf, sizeof(nl->buf), MSG_DONTWAIT | MSG_TRUNC);
		if (len < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if ((size_t)len > sizeof(nl->buf))
			return -EMSGSIZE;
		if (nl_handle(nl, (int)len, seq, cb, data, &res))
			return res;
	}
}

static struct nlmsghdr *nl_req_init(void *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh;

	memset(buf, 0, NL_REQ_SIZE);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	return nlh;
}

/* An address attribute of the request's family; false if the length is wrong. */
static bool attr_addr(const struct nlattr *a, int family, struct mroc_addr *out)
{
	size_t len = family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;

	if (!len || mnl_attr_get_payload_len(a) != len)
		return false;
	memset(out, 0, sizeof(*out));
	out->family = family;
	memcpy(out->bytes, mnl_attr_get_payload(a), len);
	return true;
}

/* ---- routes ----------------------------------------------------------------- */

struct route_reply {
	struct nl_route *out;
	int want_oif;			/* fibmatch: take the multipath next hop on it */
	bool found;
};

static void attr_via(const struct nlattr *a, struct mroc_addr *gw)
{
	const struct rtvia *via = mnl_attr_get_payload(a);
	uint16_t plen = mnl_attr_get_payload_len(a);
	size_t alen;

	if (plen < sizeof(*via))
		return;
	alen = via->rtvia_family == AF_INET ? 4 : 16;
	if (plen == sizeof(*via) + alen &&
	    (via->rtvia_family == AF_INET || via->rtvia_family == AF_INET6)) {
		memset(gw, 0, sizeof(*gw));
		gw->family = via->rtvia_family;
		memcpy(gw->bytes, via->rtvia_addr, alen);
	}
}

/*
 * The next hop of a multipath route (RTA_MULTIPATH) that leaves by want_oif.
 * Each next hop's attributes end where its rtnh_len says, not where the
 * buffer does: the last one's are followed by the route's other attributes.
 */
static void route_multipath(const struct nlattr *a, uint8_t family, int want_oif,
			    struct nl_route *out)
{
	const struct rtnexthop *nh = mnl_attr_get_payload(a);
	int left = (int)mnl_attr_get_payload_len(a);

	while (left >= (int)sizeof(*nh) && nh->rtnh_len >= sizeof(*nh) && nh->rtnh_len <= left) {
		if (nh->rtnh_ifindex == want_oif) {
			const struct nlattr *na = (const void *)RTNH_DATA(nh);
			int alen = nh->rtnh_len - (int)RTNH_LENGTH(0);

			out->ifindex = nh->rtnh_ifindex;
			memset(&out->gw, 0, sizeof(out->gw));
			while (mnl_attr_ok(na, alen)) {
				if (mnl_attr_get_type(na) == RTA_GATEWAY)
					attr_addr(na, family, &out->gw);
				else if (mnl_attr_get_type(na) == RTA_VIA)
					attr_via(na, &out->gw);
				alen -= (int)MNL_ALIGN(na->nla_len);
				na = mnl_attr_next(na);
			}
			return;
		}
		left -= RTNH_ALIGN(nh->rtnh_len);
		nh = RTNH_NEXT(nh);
	}
}

int nl_route_parse(const struct nlmsghdr *nlh, int want_oif, struct nl_route *out)
{
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a;

	if (nlh->nlmsg_type != RTM_NEWROUTE || nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*rtm)))
		return -ENODATA;
	memset(out, 0, sizeof(*out));
	out->type = rtm->rtm_type;
	mnl_attr_for_each(a, nlh, sizeof(*rtm)) {
		switch (mnl_attr_get_type(a)) {
		case RTA_OIF:
			if (mnl_attr_validate(a, MNL_TYPE_U32) == 0)
				out->ifindex = (int)mnl_attr_get_u32(a);
			break;
		case RTA_PREFSRC:
			attr_addr(a, rtm->rtm_family, &out->src);
			break;
		case RTA_GATEWAY:
			attr_addr(a, rtm->rtm_family, &out->gw);
			break;
		case RTA_VIA:
			attr_via(a, &out->gw);
			break;
		case RTA_MULTIPATH:
			if (want_oif)
				route_multipath(a, rtm->rtm_family, want_oif, out);
			break;
		}
	}
	return 0;
}

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	struct route_reply *r = data;

	if (!nl_route_parse(nlh, r->want_oif, r->out))
		r->found = true;
	return 0;
}

int nl_route_get(struct nl *nl, const struct mroc_addr *dst, struct nl_route *out)
{
	return nl_route_get_oif(nl, dst, 0, out);
}

static int route_request(struct nl *nl, const struct mroc_addr *dst, int oif, bool fibmatch,
			 struct route_reply *r)
{
	uint8_t buf[NL_REQ_SIZE] __attribute__((aligned(8)));
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	size_t alen = addr_len(dst);
	int err;

	if (!alen)
		return -EAFNOSUPPORT;
	nlh = nl_req_init(buf, RTM_GETROUTE, 0);
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)dst->family;
	rtm->rtm_dst_len = (uint8_t)(alen * 8);
	rtm->rtm_flags = fibmatch ? RTM_F_FIB_MATCH : 0;
	mnl_attr_put(nlh, RTA_DST, alen, dst->bytes);
	if (oif > 0)
		mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)oif);
	r->found = false;
	err = nl_request(nl, nlh, route_cb, r);
	if (err)
		return err;
	return r->found ? 0 : -ENODATA;
}

int nl_route_get_oif(struct nl *nl, const struct mroc_addr *dst, int oif, struct nl_route *out)
{
	struct route_reply r = { .out = out };
	int err = route_request(nl, dst, oif, false, &r);

	/*
	 * IPv6 picks a multipath route's next hop by the flow's hash before it
	 * looks at oif, so `route get DST oif DEV` may answer with a sibling
	 * on another device (IPv4 honours oif).  The whole FIB entry
	 * (RTM_F_FIB_MATCH, `ip route get DST oif DEV fibmatch`) lists every
	 * next hop: take the one on oif.
	 */
	/*
	 * IPv4 with oif and no route for dst at all answers as if dst were on
	 * that link (the kernel assumes its tables are wrong), where IPv6 says
	 * unreachable.  Every source of a spoofed REQ then got a neighbour
	 * entry and an ARP broadcast: a flood from off-link sources filled the
	 * host's neighbour table (ENOBUFS for everyone; #24, test_attack_net.sh).
	 * A direct answer stands only if a FIB entry has it (fibmatch fails
	 * with -EHOSTUNREACH where the kernel only assumed).
	 */
	if (!err && oif > 0 && dst->family == AF_INET && !out->gw.family &&
	    out->type == RTN_UNICAST) {
		struct nl_route fib;
		struct route_reply f = { .out = &fib };

		if (route_request(nl, dst, oif, true, &f))
			return -ENETUNREACH;
	}
	if (!err && oif > 0 && out->ifindex != oif && out->type == RTN_UNICAST) {
		struct nl_route first = *out;

		r.want_oif = oif;
		if (route_request(nl, dst, oif, true, &r) || out->ifindex != oif)
			*out = first;
		else if (!out->src.family)
			out->src = first.src;
	}
	return err;
}

/* ---- neighbours ------------------------------------------------------------- */

struct neigh_reply {
	uint8_t *mac;
	uint16_t state;
	int lladdr_len;			/* -1: no NDA_LLADDR */
	bool found;
};

static int neigh_cb(const struct nlmsghdr *nlh, void *data)
{
	struct neigh_reply *r = data;
	const struct ndmsg *ndm = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a;

	if (nlh->nlmsg_type != RTM_NEWNEIGH || nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*ndm)))
		return 0;
	r->found = true;
	r->state = ndm->ndm_state;
	r->lladdr_len = -1;
	mnl_attr_for_each(a, nlh, sizeof(*ndm)) {
		if (mnl_attr_get_type(a) != NDA_LLADDR)
			continue;
		r->lladdr_len = mnl_attr_get_payload_len(a);
		if (r->lladdr_len == 6)
			memcpy(r->mac, mnl_attr_get_payload(a), 6);
	}
	return 0;
}

static struct nlmsghdr *neigh_req(void *buf, uint16_t type, uint16_t flags, int ifindex,
				  const struct mroc_addr *ip, uint8_t ndm_flags)
{
	struct nlmsghdr *nlh = nl_req_init(buf, type, flags);
	struct ndmsg *ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));

	ndm->ndm_family = (uint8_t)ip->family;
	ndm->ndm_ifindex = ifindex;
	ndm->ndm_flags = ndm_flags;
	mnl_attr_put(nlh, NDA_DST, addr_len(ip), ip->bytes);
	return nlh;
}

int nl_neigh_get(struct nl *nl, int ifindex, const struct mroc_addr *ip, uint8_t mac[6],
		 uint16_t *state)
{
	uint8_t buf[NL_REQ_SIZE] __attribute__((aligned(8)));
	uint8_t tmp[6];
	struct neigh_reply r = { .mac = tmp };
	const uint16_t usable = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE |
				NUD_PERMANENT | NUD_NOARP;
	int err;

	if (!addr_len(ip))
		return -EAFNOSUPPORT;
	if (ifindex <= 0)
		return -EINVAL;
	err = nl_request(nl, neigh_req(buf, RTM_GETNEIGH, 0, ifindex, ip, 0), neigh_cb, &r);
	if (err == -ENOENT)
		return -EAGAIN;		/* no entry: nobody asked yet */
	if (err)
		return err;
	if (!r.found)
		return -ENODATA;
	if (state)
		*state = r.state;
	if (!(r.state & usable) || r.lladdr_len < 0)
		return -EAGAIN;
	if (r.lladdr_len != 6)
		return -EOPNOTSUPP;
	memcpy(mac, tmp, 6);
	return 0;
}

int nl_neigh_resolve(struct nl *nl, int ifindex, const struct mroc_addr *ip)
{
	uint8_t buf[NL_REQ_SIZE] __attribute__((aligned(8)));

	if (!addr_len(ip))
		return -EAFNOSUPPORT;
	if (ifindex <= 0)
		return -EINVAL;
	/*
	 * ndm_state stays NUD_NONE: a PERMANENT state in the request would make
	 * a newly created entry exempt from garbage collection.
	 */
	return nl_request(nl, neigh_req(buf, RTM_NEWNEIGH, NLM_F_CREATE, ifindex, ip, NTF_USE),
			  NULL, NULL);
}

/* ---- links ------------------------------------------------------------------ */

struct link_reply {
	struct nl_link *out;
	bool found;
};

/* IFLA_LINKINFO: an 802.1Q VLAN device's id. */
static void link_info(const struct nlattr *linkinfo, struct nl_link *out)
{
	const struct nlattr *a, *d, *info_data = NULL;
	bool vlan = false;
	uint16_t id = 0, proto = 0;

	mnl_attr_for_each_nested(a, linkinfo) {
		if (mnl_attr_get_type(a) == IFLA_INFO_KIND &&
		    mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0)
			vlan = !strcmp(mnl_attr_get_str(a), "vlan");
		else if (mnl_attr_get_type(a) == IFLA_INFO_DATA)
			info_data = a;
	}
	if (!vlan || !info_data)
		return;
	mnl_attr_for_each_nested(d, info_data) {
		if (mnl_attr_get_type(d) == IFLA_VLAN_ID && mnl_attr_validate(d, MNL_TYPE_U16) == 0)
			id = mnl_attr_get_u16(d);
		else if (mnl_attr_get_type(d) == IFLA_VLAN_PROTOCOL &&
			 mnl_attr_validate(d, MNL_TYPE_U16) == 0)
			proto = ntohs(mnl_attr_get_u16(d));
	}
	if (!proto || proto == 0x8100)		/* 802.1ad (QinQ) is not ours */
		out->vlan_id = id;
}

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
	struct link_reply *r = data;
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	struct nl_link *out = r->out;
	const struct nlattr *a;

	if (nlh->nlmsg_type != RTM_NEWLINK || nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*ifi)))
		return 0;
	memset(out, 0, sizeof(*out));
	out->ifindex = ifi->ifi_index;
	out->type = ifi->ifi_type;
	out->flags = ifi->ifi_flags;
	mnl_attr_for_each(a, nlh, sizeof(*ifi)) {
		switch (mnl_attr_get_type(a)) {
		case IFLA_IFNAME:
			if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0)
				snprintf(out->name, sizeof(out->name), "%s", mnl_attr_get_str(a));
			break;
		case IFLA_ADDRESS:
			if (mnl_attr_get_payload_len(a) == 6)
				memcpy(out->mac, mnl_attr_get_payload(a), 6);
			break;
		case IFLA_MTU:
			if (mnl_attr_validate(a, MNL_TYPE_U32) == 0)
				out->mtu = mnl_attr_get_u32(a);
			break;
		case IFLA_OPERSTATE:
			if (mnl_attr_validate(a, MNL_TYPE_U8) == 0)
				out->operstate = mnl_attr_get_u8(a);
			break;
		case IFLA_LINK:
			if (mnl_attr_validate(a, MNL_TYPE_U32) == 0)
				out->link_ifindex = (int)mnl_attr_get_u32(a);
			break;
		case IFLA_LINKINFO:
			link_info(a, out);
			break;
		}
	}
	r->found = true;
	return 0;
}

/*
 * ETHTOOL_GLINKSETTINGS in its two steps: the first call reports how many
 * link-mode words the kernel has (negated), the second reads the settings.
 */
static uint32_t link_speed(int fd, const char *name)
{
	union {			/* the settings and 3 x 127 mask words after them */
		struct ethtool_link_settings s;
		uint32_t raw[sizeof(struct ethtool_link_settings) / 4 + 3 * 127];
	} req;
	struct ethtool_link_settings *s = &req.s;
	struct ifreq ifr;

	if (fd < 0 || !name[0])
		return 0;
	memset(&req, 0, sizeof(req));
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_data = (void *)s;
	s->cmd = ETHTOOL_GLINKSETTINGS;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0 || s->link_mode_masks_nwords >= 0 ||
	    s->cmd != ETHTOOL_GLINKSETTINGS)
		return 0;
	s->link_mode_masks_nwords = (int8_t)-s->link_mode_masks_nwords;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0 || s->link_mode_masks_nwords <= 0)
		return 0;
	return s->speed == (uint32_t)SPEED_UNKNOWN ? 0 : s->speed;
}

int nl_link_get(struct nl *nl, int ifindex, const char *name, struct nl_link *out)
{
	uint8_t buf[NL_REQ_SIZE] __attribute__((aligned(8)));
	struct link_reply r = { .out = out };
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	int err;

	if (ifindex <= 0 && (!name || !name[0] || strlen(name) >= IF_NAMESIZE))
		return -EINVAL;
	nlh = nl_req_init(buf, RTM_GETLINK, 0);
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	if (ifindex > 0)
		ifi->ifi_index = ifindex;
	else
		mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	err = nl_request(nl, nlh, link_cb, &r);
	if (err)
		return err;
	if (!r.found)
		return -ENODATA;
	out->speed_mbps = link_speed(nl->ioctl_fd, out->name);
	return 0;
}

/* ---- addresses -------------------------------------------------------------- */

struct addr_reply {
	int ifindex, family;
	struct mroc_addr *out;
	const struct mroc_addr *want;	/* nl_addr_has: only this one */
	bool found;
};

static int addr_cb(const struct nlmsghdr *nlh, void *data)
{
	struct addr_reply *r = data;
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a;
	struct mroc_addr local = { 0 }, address = { 0 };

	if (r->found || nlh->nlmsg_type != RTM_NEWADDR ||
	    nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*ifa)) || (int)ifa->ifa_index != r->ifindex ||
	    (r->family && ifa->ifa_family != r->family) || ifa->ifa_scope >= RT_SCOPE_LINK ||
	    (ifa->ifa_flags & IFA_F_DADFAILED) || (!r->want && (ifa->ifa_flags & IFA_F_TENTATIVE)))
		return 0;
	mnl_attr_for_each(a, nlh, sizeof(*ifa)) {
		if (mnl_attr_get_type(a) == IFA_LOCAL)
			attr_addr(a, ifa->ifa_family, &local);
		else if (mnl_attr_get_type(a) == IFA_ADDRESS)
			attr_addr(a, ifa->ifa_family, &address);
	}
	/* IFA_LOCAL is ours on point-to-point links, where IFA_ADDRESS is the peer's. */
	if (local.family || address.family) {
		*r->out = local.family ? local : address;
		r->found = !r->want || addr_eq(r->out, r->want);
	}
	return 0;
}

static int addr_find(struct nl *nl, struct addr_reply *r)
{
	uint8_t buf[NL_REQ_SIZE] __attribute__((aligned(8)));
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;
	int err;

	if (r->ifindex <= 0)
		return -EINVAL;
	nlh = nl_req_init(buf, RTM_GETADDR, NLM_F_DUMP);
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (uint8_t)r->family;
	ifa->ifa_index = (uint32_t)r->ifindex;	/* strict checking filters by it */
	err = nl_request(nl, nlh, addr_cb, r);
	if (err)
		return err;
	return r->found ? 0 : -EADDRNOTAVAIL;
}

int nl_addr_has(struct nl *nl, int ifindex, const struct mroc_addr *addr)
{
	struct mroc_addr seen;

	return addr_find(nl, &(struct addr_reply){ .ifindex = ifindex, .family = addr->family,
						   .out = &seen, .want = addr });
}

int nl_addr_first(struct nl *nl, int ifindex, int family, struct mroc_addr *out)
{
	return addr_find(nl, &(struct addr_reply){ .ifindex = ifindex, .family = family,
						   .out = out });
}

/* ---- change notifications ------------------------------------------------------- */

static int monitor_open(int *fd, uint32_t groups)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = groups };
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (s < 0)
		return -errno;
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(s);
		return err;
	}
	*fd = s;
	return 0;
}

int nl_monitor_open(int *fd)
{
	return monitor_open(fd, RTMGRP_LINK | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE);
}

int nl_addr_monitor_open(int *fd)
{
	return monitor_open(fd, RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR);
}

int nl_monitor_drain(int fd)
{
	uint8_t buf[8192] __attribute__((aligned(8)));
	int n = 0;

	for (;;) {
		ssize_t len = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (len > 0) {
			n++;
			continue;
		}
		if (len < 0 && errno == EINTR)
			continue;
		/* ENOBUFS: notifications were lost, which is a change too. */
		if (len < 0 && errno == ENOBUFS)
			n++;
		else
			return n;
	}
}
