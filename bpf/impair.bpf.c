// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Test-fabric impairment (scripts/fabric): a tc cls_bpf program in
 * direct-action mode on the egress of a plane's links.  There is no netem
 * in this kernel, so random loss and ECN marking live here; rate limits are
 * TBF.  cfg[IMPAIR_DROP_PPM] drops that many packets per million (1000000 =
 * blackhole); cfg[IMPAIR_CE_PPM] marks CE on that many ECN-capable IP
 * packets per million (not-ECT packets are counted and left alone).
 *
 * A switch marks CE when its queue passes a threshold, which is what keeps
 * DCTCP-style senders' queues short.  This program runs before the plane's
 * TBF and cannot see its queue, so it keeps a virtual one: bytes arrived,
 * drained at cfg[IMPAIR_VQ_RATE_KBPS] (the TBF's rate); a packet that finds
 * more than cfg[IMPAIR_VQ_MARK_BYTES] in it is marked CE (either 0: off).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <stddef.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

enum { IMPAIR_DROP_PPM = 0, IMPAIR_CE_PPM, IMPAIR_VQ_RATE_KBPS, IMPAIR_VQ_MARK_BYTES, IMPAIR__CFG };
enum { IMPAIR_SEEN = 0, IMPAIR_DROPPED, IMPAIR_CE_MARKED, IMPAIR_NOT_ECT, IMPAIR__CNT };

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, IMPAIR__CFG);
	__type(key, __u32);
	__type(value, __u32);
} impair_cfg SEC(".maps");

/* The virtual queue, shared by every CPU that transmits on the device. */
struct vq {
	struct bpf_spin_lock lock;
	__u64 last_ns;
	__u64 backlog;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vq);
} impair_vq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, IMPAIR__CNT);
	__type(key, __u32);
	__type(value, __u64);
} impair_cnt SEC(".maps");

static __always_inline void count(__u32 what)
{
	__u64 *v = bpf_map_lookup_elem(&impair_cnt, &what);

	if (v)
		(*v)++;
}

static __always_inline __u32 cfg(__u32 what)
{
	__u32 *v = bpf_map_lookup_elem(&impair_cfg, &what);

	return v ? *v : 0;
}

static __always_inline int chance(__u32 ppm)
{
	return ppm && bpf_get_prandom_u32() % 1000000 < ppm;
}

/* Set CE on an ECN-capable packet; the IPv4 header checksum is fixed up. */
static __always_inline void mark_ce(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		__u16 old, new;

		if ((void *)(ip + 1) > end)
			return;
		if (!(ip->tos & 3)) {
			count(IMPAIR_NOT_ECT);
			return;
		}
		old = *(__u16 *)ip;
		ip->tos |= 3;
		new = *(__u16 *)ip;
		bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check), old, new, 2);
		count(IMPAIR_CE_MARKED);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		/* ECN is the low 2 bits of the traffic class: bits 4-5 of the first word. */
		__u8 *b = (__u8 *)ip6;

		if ((void *)(ip6 + 1) > end)
			return;
		if (!(b[1] & 0x30)) {
			count(IMPAIR_NOT_ECT);
			return;
		}
		b[1] |= 0x30;
		count(IMPAIR_CE_MARKED);
	}
}

/* Add the packet to the virtual queue; true if it found the queue above the threshold. */
static __always_inline int vq_over(struct __sk_buff *skb)
{
	__u32 rate = cfg(IMPAIR_VQ_RATE_KBPS), mark = cfg(IMPAIR_VQ_MARK_BYTES), zero = 0;
	__u64 now, elapsed, drained, backlog;
	struct vq *q;

	if (!rate || !mark)
		return 0;
	q = bpf_map_lookup_elem(&impair_vq, &zero);
	if (!q)
		return 0;
	now = bpf_ktime_get_ns();
	bpf_spin_lock(&q->lock);
	elapsed = now > q->last_ns ? now - q->last_ns : 0;
	if (elapsed > 1000000000ULL)
		elapsed = 1000000000ULL;	/* idle for a second or more: empty anyway */
	drained = elapsed * rate / 8000000;	/* ns x kbit/s -> bytes */
	backlog = q->backlog > drained ? q->backlog - drained : 0;
	q->backlog = backlog + skb->len;
	q->last_ns = now;
	bpf_spin_unlock(&q->lock);
	return backlog > mark;
}

SEC("tc")
int impair(struct __sk_buff *skb)
{
	count(IMPAIR_SEEN);
	if (chance(cfg(IMPAIR_DROP_PPM))) {
		count(IMPAIR_DROPPED);
		return TC_ACT_SHOT;
	}
	if (vq_over(skb) || chance(cfg(IMPAIR_CE_PPM)))
		mark_ce(skb);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
