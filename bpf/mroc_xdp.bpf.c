/* SPDX-License-Identifier: MIT */
/*
 * mroc_xdp: steer MetaRoCE packets to mrocd's AF_XDP sockets.
 *
 * Ethernet (up to two 802.1Q / 802.1AD tags) -> IPv4 or IPv6 -> UDP.  A
 * packet for udp_port with a plausible MetaRoCE header goes to the XSKMAP
 * slot that user space registered for {ingress ifindex, RX queue}; with no
 * such slot (or an empty one) it is passed to the kernel.  Anything not for
 * our port is passed untouched; malformed packets for our port, and frames
 * the kernel would discard anyway (runts, broken IP header lengths), are
 * dropped.  Each frame is counted in rx_total and one reason counter
 * (mroc_xdp.h).  Checksums are not checked here: mrocd does that.
 *
 * One loaded program serves every interface and queue it is attached to.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "mroc_xdp.h"

/* Set by user space before load (host byte order); 0 matches nothing. */
const volatile __u16 udp_port = 0;
/*
 * Set by user space before load: no arrival stamps (stamp() below).  mrocd
 * always stamps; xsk-baseline --no-stamp measures what the stamp costs.
 */
const volatile __u8 no_stamp = 0;

/* Slot -> AF_XDP socket.  max_entries is set by user space before load. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

/* {ifindex, queue} -> slot in xsks. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct mroc_xdp_key);
	__type(value, __u32);
} xsk_slots SEC(".maps");

/* Our unicast addresses, and the MAC of each interface whose frames are checked against them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MROC_XDP_MAX_ADDRS);
	__type(key, struct mroc_xdp_addr);
	__type(value, __u8);
} ours SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct mroc_xdp_mac);
} our_macs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MROC_XDP_MAX_VLANS);
	__type(key, struct mroc_xdp_vlan);
	__type(value, __u8);
} our_vlans SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mroc_xdp_stats);
} counters SEC(".maps");

/* <linux/if_vlan.h> is kernel-only. */
struct vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

#define IP_MF		0x2000
#define IP_OFFSET	0x1fff

/* What the header checks left to do for a frame of ours. */
#define MROC_XDP_OURS	MROC_XDP_CNT_REDIRECTED

/*
 * The MetaRoCE part, once the UDP header is known to be in the frame:
 * ip_payload is the number of bytes the IP header says follow it (UDP
 * header included), never more than the frame holds.
 */
static __always_inline int check_udp(struct udphdr *udp, void *data_end, __u32 ip_payload,
				     int first_fragment)
{
	__u8 *mroc = (__u8 *)(udp + 1);
	__u32 ulen;

	if (udp->dest != bpf_htons(udp_port))
		return MROC_XDP_CNT_PASS_NOT_UDP_PORT;
	if (first_fragment)
		return MROC_XDP_CNT_DROP_IP_FRAGMENT;
	ulen = bpf_ntohs(udp->len);
	if (ulen < sizeof(*udp) || ulen > ip_payload)
		return MROC_XDP_CNT_DROP_BAD_UDP_LEN;
	if (ulen < sizeof(*udp) + MROC_XDP_HDR_LEN)
		return MROC_XDP_CNT_DROP_SHORT_MROC;
	/* Implied by the lengths above; the verifier wants to see it. */
	if ((void *)(mroc + MROC_XDP_HDR_LEN) > data_end)
		return MROC_XDP_CNT_DROP_SHORT_MROC;
	if (mroc[0] != MROC_XDP_VERSION)
		return MROC_XDP_CNT_DROP_BAD_MROC_VERSION;
	return MROC_XDP_OURS;
}

static __always_inline int check_ipv4(struct iphdr *ip, void *data_end, struct mroc_xdp_addr *dst,
				      struct mroc_xdp_addr *src)
{
	struct udphdr *udp;
	__u32 ihl, tot_len;
	__u16 frag;

	if ((void *)(ip + 1) > data_end)
		return MROC_XDP_CNT_DROP_BAD_IP;
	ihl = ip->ihl * 4;
	tot_len = bpf_ntohs(ip->tot_len);
	if (ip->version != 4 || ihl < sizeof(*ip) || tot_len < ihl)
		return MROC_XDP_CNT_DROP_BAD_IP;
	/* Longer frames are fine: Ethernet pads short ones. */
	if ((void *)ip + tot_len > data_end)
		return MROC_XDP_CNT_DROP_BAD_IP;
	if (ip->protocol != IPPROTO_UDP)
		return MROC_XDP_CNT_PASS_NOT_UDP_PORT;
	frag = bpf_ntohs(ip->frag_off);
	/* Later fragments carry no UDP header: whose they are is unknown. */
	if (frag & IP_OFFSET)
		return MROC_XDP_CNT_PASS_NOT_UDP_PORT;
	udp = (void *)ip + ihl;
	if (tot_len - ihl < sizeof(*udp) || (void *)(udp + 1) > data_end)
		return MROC_XDP_CNT_DROP_SHORT_UDP;
	dst->family = src->family = 4;
	__builtin_memcpy(dst->addr, &ip->daddr, 4);
	__builtin_memcpy(src->addr, &ip->saddr, 4);
	return check_udp(udp, data_end, tot_len - ihl, frag & IP_MF);
}

static __always_inline int check_ipv6(struct ipv6hdr *ip6, void *data_end,
				      struct mroc_xdp_addr *dst, struct mroc_xdp_addr *src)
{
	struct udphdr *udp = (void *)(ip6 + 1);
	__u32 plen;

	if ((void *)(ip6 + 1) > data_end)
		return MROC_XDP_CNT_DROP_BAD_IP;
	plen = bpf_ntohs(ip6->payload_len);
	if (ip6->version != 6 || (void *)udp + plen > data_end)
		return MROC_XDP_CNT_DROP_BAD_IP;
	/* Extension headers (fragments included) are left to the kernel. */
	if (ip6->nexthdr != IPPROTO_UDP)
		return MROC_XDP_CNT_PASS_NOT_UDP_PORT;
	if (plen < sizeof(*udp) || (void *)(udp + 1) > data_end)
		return MROC_XDP_CNT_DROP_SHORT_UDP;
	dst->family = src->family = 6;
	__builtin_memcpy(dst->addr, &ip6->daddr, 16);
	__builtin_memcpy(src->addr, &ip6->saddr, 16);
	return check_udp(udp, data_end, plen, 0);
}

/* 127.0.0.0/8 or ::1 (an IPv4-mapped one is not a host's address either: the engine's to refuse). */
static __always_inline int is_loopback(const struct mroc_xdp_addr *a)
{
	__u8 z = 0;
	int i;

	if (a->family == 4)
		return a->addr[0] == 127;
#pragma unroll
	for (i = 0; i < 15; i++)
		z |= a->addr[i];
	return !z && a->addr[15] == 1;
}

static __always_inline int mac_eq(const __u8 *a, const __u8 *b)
{
	return !((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4]) |
		 (a[5] ^ b[5]));
}

/*
 * A counter index: the reason to pass or drop, or MROC_XDP_OURS (*dst: to
 * whom, *src: from whom; *vid: the outer tag's VLAN id, 0 untagged or
 * priority-tagged).
 */
static __always_inline int classify(void *data, void *data_end, struct mroc_xdp_addr *dst,
				    struct mroc_xdp_addr *src, __u16 *vid)
{
	struct ethhdr *eth = data;
	void *l3 = eth + 1;
	__u16 proto;
	int i;

	if ((void *)(eth + 1) > data_end)
		return MROC_XDP_CNT_DROP_SHORT_ETH;
	proto = eth->h_proto;
#pragma unroll
	for (i = 0; i < 2; i++) {
		struct vlan_hdr *vlan = l3;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(vlan + 1) > data_end)
			return MROC_XDP_CNT_DROP_SHORT_VLAN;
		if (!i)
			*vid = bpf_ntohs(vlan->tci) & 0xfff;
		proto = vlan->encap_proto;
		l3 = vlan + 1;
	}
	if (proto == bpf_htons(ETH_P_IP))
		return check_ipv4(l3, data_end, dst, src);
	if (proto == bpf_htons(ETH_P_IPV6))
		return check_ipv6(l3, data_end, dst, src);
	return MROC_XDP_CNT_PASS_NOT_UDP_PORT;
}

/*
 * The arrival time, as XDP metadata before the frame (struct mroc_xdp_meta):
 * the worker may take the frame from its ring much later (batches, a CPU
 * shared with other work), and that wait is the host's, not the path's
 * (PROTOCOL 9.3a).  Without room for metadata (a driver without support)
 * the frame goes unstamped: user space then takes its poll time.
 */
static __always_inline void stamp(struct xdp_md *ctx, __u64 now)
{
	struct mroc_xdp_meta *m;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m)))
		return;
	m = (void *)(long)ctx->data_meta;
	if ((void *)(m + 1) > (void *)(long)ctx->data)
		return;
	m->rx_ns = now;
	m->pad = 0;
	m->magic = MROC_XDP_META_MAGIC;
}

SEC("xdp")
int mroc_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	/*
	 * Both key fields are read here, unconditionally: clang 14 may turn a
	 * ctx read chosen by a branch into ctx + variable offset, which the
	 * verifier refuses.
	 */
	struct mroc_xdp_key key = {
		.ifindex = ctx->ingress_ifindex,
		.queue = ctx->rx_queue_index,
	};
	struct mroc_xdp_addr dst = {}, src = {};
	struct mroc_xdp_vlan vlan = {};
	struct mroc_xdp_stats *st;
	struct mroc_xdp_mac *mac;
	struct ethhdr *eth = data;
	__u32 zero = 0, *slot;
	int why, act;

	st = bpf_map_lookup_elem(&counters, &zero);
	if (!st)
		return XDP_PASS;
	st->cnt[MROC_XDP_CNT_RX_TOTAL]++;

	why = classify(data, data_end, &dst, &src, &vlan.vid);
	vlan.ifindex = key.ifindex;
	if (why == MROC_XDP_OURS && (void *)(eth + 1) <= data_end &&
	    (mac = bpf_map_lookup_elem(&our_macs, &key.ifindex))) {
		/*
		 * Only frames to us: never another host's (a bridge or macvlan
		 * port is promiscuous), never broadcast or multicast (a forged
		 * REQ there would make every mrocd of the segment answer).
		 */
		if (!mac_eq(eth->h_dest, mac->addr))
			why = MROC_XDP_CNT_DROP_NOT_OUR_MAC;
		/*
		 * Loopback addresses are every packet's on a loopback device
		 * and no packet's elsewhere: the kernel drops them as
		 * martians, and one to 127.0.0.1 (which "ours" holds) must
		 * not reach the engine either.  Our own address as a source
		 * passes: a QP connected to this host's own address sends
		 * by AF_XDP, past the kernel's local delivery, and its
		 * packets come back through the fabric.
		 */
		else if (!mac->loopback && (is_loopback(&dst) || is_loopback(&src)))
			why = MROC_XDP_CNT_DROP_LOOPBACK;
		else if (!bpf_map_lookup_elem(&ours, &dst))
			why = MROC_XDP_CNT_DROP_NOT_OUR_ADDR;
		/*
		 * Of a VLAN this host is in on that interface: the kernel
		 * drops a frame tagged with another (no device takes it), and
		 * mrocd's answers leave by the route, untagged or in the VLAN
		 * of the route's device, never in the frame's.
		 */
		else if (vlan.vid && !bpf_map_lookup_elem(&our_vlans, &vlan))
			why = MROC_XDP_CNT_DROP_NOT_OUR_VLAN;
	}
	if (why != MROC_XDP_OURS) {
		st->cnt[why]++;
		return why >= MROC_XDP_CNT__FIRST_DROP ? XDP_DROP : XDP_PASS;
	}

	slot = bpf_map_lookup_elem(&xsk_slots, &key);
	if (!slot) {
		st->cnt[MROC_XDP_CNT_PASS_NO_SOCKET]++;
		return XDP_PASS;
	}
	/* An empty slot (a socket being removed) gives XDP_PASS. */
	act = bpf_redirect_map(&xsks, *slot, XDP_PASS);
	/*
	 * Only a redirected frame: one passed to the kernel leaves unchanged.
	 * The clock read is nearly all of the stamp's cost (bpf_prog_test_run:
	 * about 25 ns a frame here, bpf_xdp_adjust_meta about 2; PERF.md).
	 */
	if (act == XDP_REDIRECT && !no_stamp)
		stamp(ctx, bpf_ktime_get_ns());
	st->cnt[act == XDP_REDIRECT ? MROC_XDP_CNT_REDIRECTED : MROC_XDP_CNT_PASS_NO_SOCKET]++;
	return act;
}

/* GPL-compatible (MIT code may be used under the GPL); no GPL-only helper is used. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";
