/* SPDX-License-Identifier: MIT */
/*
 * What the XDP program (mroc_xdp.bpf.c) and user space (daemon/backend/xdp_prog.c)
 * share: the program's name, the socket-lookup key and the counters.
 *
 * The program sends MetaRoCE packets (UDP to the configured port, valid
 * minimal header) to the AF_XDP socket registered for the interface and RX
 * queue they arrived on, passes everything else to the kernel untouched and
 * drops malformed packets.  Every frame counts in rx_total and in exactly one
 * of the other counters, so rx_total is the sum of the rest.
 *
 * Included by BPF and user-space C alike: only <linux/types.h> types.
 */
#ifndef MROC_XDP_H
#define MROC_XDP_H

#include <linux/types.h>

/*
 * The program's function name, which the kernel reports as its name.  A
 * program of this name left attached by a crashed mrocd is recognised by it
 * (kernel names are at most 15 characters).
 */
#define MROC_XDP_PROG_NAME	"mroc_xdp"

/* Minimal MetaRoCE check: the common header is there and speaks version 1. */
#define MROC_XDP_HDR_LEN	16
#define MROC_XDP_VERSION	1

/* Key of the xsk_slots hash: where a frame arrived -> slot in the XSKMAP. */
struct mroc_xdp_key {
	__u32 ifindex;
	__u32 queue;		/* RX queue index */
};

/*
 * Key of the "ours" hash: one of our unicast addresses (IPv4 in the first 4
 * bytes of addr, the rest 0; pad 0).  Frames to our port on an interface in
 * "our_macs" must be to one of these and to that MAC (mrocd fills both).
 */
struct mroc_xdp_addr {
	__u8 family;		/* 4 or 6 */
	__u8 pad[3];
	__u8 addr[16];
};

#define MROC_XDP_MAX_ADDRS	1024

/*
 * Key of the "our_vlans" hash: a VLAN id (1..4095) that a VLAN device of
 * this host has on interface ifindex.  A tagged frame to our port on an
 * interface in "our_macs" must carry one of these in its outer tag: the
 * kernel drops a frame of a VLAN the host has no device for, and so does
 * the program (a host of another VLAN on a trunk reached mrocd).
 */
struct mroc_xdp_vlan {
	__u32 ifindex;
	__u16 vid;
	__u16 pad;
};

#define MROC_XDP_MAX_VLANS	1024

/*
 * XDP metadata of a frame the program redirects: when it ran (its arrival,
 * bpf_ktime_get_ns: CLOCK_MONOTONIC), in the bytes right before the frame.
 * Copy-mode AF_XDP copies metadata with the frame (native and generic XDP),
 * zero-copy keeps it in place; magic says the program wrote it (a frame
 * without metadata has stale bytes there).  User space reads it, and
 * clears magic, with xdp_prog_rx_stamp (daemon/backend/xdp_prog.h).
 */
struct mroc_xdp_meta {
	__u64 rx_ns;
	__u32 pad;
	__u32 magic;		/* MROC_XDP_META_MAGIC, next to the frame */
};
#define MROC_XDP_META_MAGIC	0x6d524f43	/* "mROC" */

/*
 * Value of "our_macs" (key: ifindex).  loopback: the interface is a
 * loopback device (IFF_LOOPBACK), where loopback and our own addresses are
 * every packet's (daemons on one host's 127.0.0.1 and 127.0.0.2).
 */
struct mroc_xdp_mac {
	__u8 addr[6];
	__u8 loopback;
	__u8 pad;
};

/*
 * X(UPPER, lower): counter name.  Order matters: the pass counters come
 * before the drop counters (MROC_XDP_CNT__FIRST_DROP).
 *
 * rx_total		every frame the program saw
 * redirected		sent to an AF_XDP socket (bpf_redirect_map succeeded)
 * pass_not_udp_port	not for us: ARP, ICMP, TCP, other UDP ports, unknown
 *			ethertypes, IPv4 fragments after the first, IPv6 with
 *			an extension header (incl. fragments) -> XDP_PASS
 * pass_no_socket	for our port, but no socket for that interface/queue
 *			-> XDP_PASS (the kernel's UDP stack sees it)
 * drop_short_eth	shorter than an Ethernet header
 * drop_short_vlan	truncated 802.1Q / 802.1AD tag
 * drop_bad_ip		IPv4: short header, version, IHL < 5, total length
 *			shorter than the header or longer than the frame;
 *			IPv6: short header, version, payload length longer
 *			than the frame (the kernel would drop all of these too)
 * drop_ip_fragment	IPv4 first fragment (MF set) to our port
 * drop_short_udp	UDP header cut short by the IP length or the frame
 * drop_bad_udp_len	our port: UDP length < 8 or beyond the IP payload
 * drop_short_mroc	our port: less than the 16-byte MetaRoCE header
 * drop_bad_mroc_version our port: first byte is not version 1
 * drop_not_our_mac	our port, on an interface user space gave its MAC
 *			(our_macs): the destination MAC is not that one
 *			(another host's on a promiscuous port, broadcast,
 *			multicast)
 * drop_not_our_addr	... the destination IP is not one of ours (the map
 *			"ours"): another host's, broadcast, multicast
 * drop_not_our_vlan	... tagged with a VLAN id no VLAN device of ours has
 *			on that interface (the map "our_vlans")
 * drop_loopback	... on an interface that is not a loopback device: to
 *			or from a loopback address (127.0.0.0/8, ::1), which
 *			the kernel drops as a martian there
 *			(one from our own address passes: what a QP connected
 *			to this host's own address sends comes back that way,
 *			through the fabric, docs/PROTOCOL.md 11a)
 */
#define MROC_XDP_COUNTERS(X)					\
	X(RX_TOTAL, rx_total)					\
	X(REDIRECTED, redirected)				\
	X(PASS_NOT_UDP_PORT, pass_not_udp_port)			\
	X(PASS_NO_SOCKET, pass_no_socket)			\
	X(DROP_SHORT_ETH, drop_short_eth)			\
	X(DROP_SHORT_VLAN, drop_short_vlan)			\
	X(DROP_BAD_IP, drop_bad_ip)				\
	X(DROP_IP_FRAGMENT, drop_ip_fragment)			\
	X(DROP_SHORT_UDP, drop_short_udp)			\
	X(DROP_BAD_UDP_LEN, drop_bad_udp_len)			\
	X(DROP_SHORT_MROC, drop_short_mroc)			\
	X(DROP_BAD_MROC_VERSION, drop_bad_mroc_version)		\
	X(DROP_NOT_OUR_MAC, drop_not_our_mac)			\
	X(DROP_NOT_OUR_ADDR, drop_not_our_addr)			\
	X(DROP_NOT_OUR_VLAN, drop_not_our_vlan)			\
	X(DROP_LOOPBACK, drop_loopback)

enum mroc_xdp_counter {
#define MROC_XDP_CNT_ENUM(u, l) MROC_XDP_CNT_##u,
	MROC_XDP_COUNTERS(MROC_XDP_CNT_ENUM)
#undef MROC_XDP_CNT_ENUM
	MROC_XDP_CNT__COUNT,
	MROC_XDP_CNT__FIRST_DROP = MROC_XDP_CNT_DROP_SHORT_ETH,
};

/*
 * The value of the single entry of the per-CPU "counters" array: one lookup
 * per frame.  User space sums it over the possible CPUs.
 */
struct mroc_xdp_stats {
	__u64 cnt[MROC_XDP_CNT__COUNT];
};

#endif
