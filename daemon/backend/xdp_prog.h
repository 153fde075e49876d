/* SPDX-License-Identifier: MIT */
/*
 * The XDP steering program (bpf/mroc_xdp.bpf.c) from user space: load it,
 * attach it to interfaces, register AF_XDP sockets, read its counters.
 *
 * One struct xdp_prog is one loaded program; it may be attached to several
 * interfaces and serve a socket per {ifindex, RX queue}.  Attaching first
 * removes a stale mroc_xdp program left by a crashed mrocd and refuses to
 * touch any other program.  Closing detaches only what is still ours.
 *
 * Threads: open/close/attach/detach/add/remove from one thread (the control
 * thread); xdp_prog_read_counters and the getters from any thread.
 * Functions return 0 (or a documented value >= 0) on success, negative errno
 * on failure, and log the failure once.
 */
#ifndef MROCD_XDP_PROG_H
#define MROCD_XDP_PROG_H

#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "mroc_xdp.h"

struct xdp_prog;

enum xdp_prog_mode {
	XDP_PROG_MODE_AUTO,	/* native, else generic with a warning */
	XDP_PROG_MODE_NATIVE,	/* driver mode (XDP_FLAGS_DRV_MODE) */
	XDP_PROG_MODE_GENERIC,	/* skb mode (XDP_FLAGS_SKB_MODE) */
};

/* "auto", "native" (or "drv"), "generic" (or "skb") -> mode; -EINVAL otherwise. */
int xdp_prog_mode_parse(const char *name);
const char *xdp_prog_mode_name(enum xdp_prog_mode mode);

#define XDP_PROG_DEFAULT_SOCKETS	64
#define XDP_PROG_MAX_SOCKETS		4096

struct xdp_prog_opts {
	size_t sz;		/* sizeof(struct xdp_prog_opts) */
	uint16_t udp_port;	/* host byte order, != 0 */
	uint32_t max_sockets;	/* XSKMAP / slot hash size; 0 = XDP_PROG_DEFAULT_SOCKETS */
	/*
	 * No arrival stamps (xdp_prog_rx_stamp gives 0): only for measuring
	 * what they cost (xsk-baseline --no-stamp); mrocd's delay signal needs them.
	 */
	bool no_stamp;
};

/*
 * Route libbpf's and libxdp's messages into log.h (warnings as pr_warn, info
 * as pr_info, debug as pr_debug).  Call once, early in main().
 */
void xdp_prog_init_logging(void);

/*
 * Open and load the program.  Nothing is attached yet.  A kernel that refuses
 * the arrival stamp's helper gets the program without stamps (a warning;
 * xdp_prog_stamps says which was loaded).
 */
int xdp_prog_open(struct xdp_prog **out, const struct xdp_prog_opts *opts);

/* Detach from every interface where the program is still ours, unload, free. NULL is fine. */
void xdp_prog_close(struct xdp_prog *prog);

/*
 * Attach to ifindex.  A stale mroc_xdp program (no process holds it any
 * more) is detached first; a live one or any other program: -EBUSY, logged
 * with its name and id.  Auto mode falls back to generic with a pr_warn.
 * Attaching twice to the same interface is a no-op.
 */
int xdp_prog_attach(struct xdp_prog *prog, int ifindex, enum xdp_prog_mode mode);

/*
 * Detach from ifindex, only if the program there is still ours (else just
 * forget it, with a warning).  -ENOENT if we never attached there.
 */
int xdp_prog_detach(struct xdp_prog *prog, int ifindex);

/* Mode actually used on ifindex (NATIVE or GENERIC), or -ENOENT. */
int xdp_prog_attach_mode(const struct xdp_prog *prog, int ifindex);

uint32_t xdp_prog_id(const struct xdp_prog *prog);	/* kernel program id */
bool xdp_prog_stamps(const struct xdp_prog *prog);	/* it writes arrival stamps */
int xdp_prog_fd(const struct xdp_prog *prog);		/* e.g. for BPF_PROG_TEST_RUN */
int xdp_prog_xskmap_fd(const struct xdp_prog *prog);
uint16_t xdp_prog_udp_port(const struct xdp_prog *prog);

/*
 * Steer {ifindex, queue} to the AF_XDP socket xsk_fd (xsk_socket__fd(),
 * bound to that interface and queue, with an RX ring): the socket goes in a
 * free XSKMAP slot, then the {ifindex, queue} -> slot entry in the hash.
 * Returns the slot (>= 0); -EEXIST if {ifindex, queue} has a socket,
 * -ENOSPC if every slot is used, or the kernel's error (e.g. -EOPNOTSUPP
 * for a socket that is not bound).  Do not also call
 * xsk_socket__update_xskmap(): slots are not queue numbers.
 */
int xdp_prog_add_socket(struct xdp_prog *prog, uint32_t ifindex, uint32_t queue, int xsk_fd);

/* Stop steering {ifindex, queue}: its packets pass to the kernel again.  -ENOENT if none. */
int xdp_prog_remove_socket(struct xdp_prog *prog, uint32_t ifindex, uint32_t queue);

/*
 * Frames to our port on ifindex are checked from now on: to mac (its own)
 * and to one of the addresses of xdp_prog_set_addrs (set those first),
 * others dropped and counted (drop_not_our_mac, drop_not_our_addr); unless
 * ifindex is a loopback device (asked here), also neither to nor from a
 * loopback address (drop_loopback).
 */
int xdp_prog_set_mac(struct xdp_prog *prog, int ifindex, const uint8_t mac[6]);
/*
 * Our unicast addresses (the n of addr), replacing those set before: the
 * destinations frames to our port may have.  -E2BIG above MROC_XDP_MAX_ADDRS.
 */
int xdp_prog_set_addrs(struct xdp_prog *prog, const struct mroc_addr *addr, unsigned n);
/*
 * The VLAN ids (1..4095) of this host's VLAN devices on ifindex: a tagged
 * frame to our port arriving there (an interface xdp_prog_set_mac gave)
 * must carry one of them in its outer tag, else it is dropped and counted
 * (drop_not_our_vlan).  Replaces the interface's earlier set.  0 or -errno.
 */
int xdp_prog_set_vlans(struct xdp_prog *prog, int ifindex, const uint16_t *vids, unsigned n);

/* The program's counters summed over CPUs; v[] is indexed by enum mroc_xdp_counter. */
struct xdp_prog_counters {
	union {
		struct {
#define XDP_PROG_CNT_FIELD(u, l) uint64_t l;
			MROC_XDP_COUNTERS(XDP_PROG_CNT_FIELD)
#undef XDP_PROG_CNT_FIELD
		};
		uint64_t v[MROC_XDP_CNT__COUNT];
	};
};

int xdp_prog_read_counters(const struct xdp_prog *prog, struct xdp_prog_counters *out);

/* "rx_total", "redirected", ... for v[i] (JSON keys, status lines); NULL if out of range. */
const char *xdp_prog_counter_name(unsigned int i);

/*
 * The arrival time the program stamped before a redirected frame (struct
 * mroc_xdp_meta, CLOCK_MONOTONIC ns), or 0 when it did not (no metadata
 * support): frame is where the frame starts in the UMEM, with the chunk's
 * headroom before it.  The mark is cleared, so a stale stamp is never
 * read twice when the frame comes back unstamped.
 */
static inline uint64_t xdp_prog_rx_stamp(uint8_t *frame)
{
	struct mroc_xdp_meta *m = (struct mroc_xdp_meta *)(void *)(frame - sizeof(*m));
	uint64_t ns;

	if (m->magic != MROC_XDP_META_MAGIC)
		return 0;
	ns = m->rx_ns;
	m->magic = 0;
	return ns;
}

#endif
