/* SPDX-License-Identifier: MIT */
/*
 * AF_XDP backend: one UMEM shared by one XSK per configured (interface,
 * queue), bound in zero-copy mode where the driver has it and copy mode
 * otherwise.  Our XDP program (xdp_prog.c) steers MetaRoCE packets of each
 * (interface, queue) into its socket.  mrocd builds every Ethernet/IP/UDP
 * header itself (frame.c).  Each interface is a port; which port and next
 * hop a packet leaves by is egress.h's (daemon/net/egress.c).
 */
#ifndef MROCD_AFXDP_H
#define MROCD_AFXDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "backend.h"

#define AFXDP_MAX_SOCKS 64	/* the XDP program's default socket slots */
#define AFXDP_WHY_LEN	160
#define AFXDP_MAX_VIEWS	16	/* workers */

struct nl;
struct xdp_prog;

enum afxdp_zc { AFXDP_ZC_AUTO = 0, AFXDP_ZC_ON, AFXDP_ZC_OFF };

struct afxdp_if {
	char name[16];
	uint32_t queue;
	struct mroc_addr addr;		/* the port's own address; family 0 = none (src) */
};

struct afxdp_cfg {
	struct afxdp_if ifs[AFXDP_MAX_SOCKS];
	unsigned nifs;
	uint32_t frame_size;		/* 2048 or 4096 */
	uint32_t nframes;		/* UMEM frames, power of two */
	uint32_t ring_size;		/* each ring, power of two */
	uint8_t zero_copy;		/* enum afxdp_zc */
	uint16_t udp_port;		/* MetaRoCE destination port */
	struct xdp_prog *prog;		/* attached to every interface already */
	struct nl *nl;			/* routes, neighbours, links (worker thread after start) */
	uint32_t max_peers;		/* peer handles 0 .. max_peers-1 */
	struct mroc_addr src;		/* source of every frame; family 0 = each route's */
	uint64_t port_dead_ns;		/* porthealth.h: silence that makes a port dead; 0 = off */
};

/* Kicks a copy-mode TX ring this many times at most per flush (32 descriptors a kick). */
#define AFXDP_KICKS_MAX	128

struct xsk_ring_prod;

/*
 * Has the kernel take the descriptors submitted to a TX ring (fd: its
 * socket): copy mode takes at most its budget per kick (32, or what
 * afxdp_set_tx_budget set), so kick until the ring is empty or a kick took
 * none (the device queue is stopped); zero-copy gets one kick, if the
 * driver asks for it.  Returns how many are still in the ring, negative
 * errno if a kick failed otherwise than "try again".
 */
int afxdp_tx_kick(struct xsk_ring_prod *tx, int fd, bool zero_copy);

/*
 * Copy mode: lets one kick of socket fd send up to budget descriptors
 * (XDP_MAX_TX_SKB_BUDGET, kernels 6.17 and later; 32..its TX ring size)
 * instead of 32, one system call per batch instead of two or more.
 * Returns 0, or negative errno (-ENOPROTOOPT: an older kernel; the budget
 * stays 32, which is only slower).
 */
int afxdp_set_tx_budget(int fd, uint32_t budget);

/*
 * Creates the UMEM and every socket and registers them with cfg->prog.
 * Returns 0 on success, negative errno otherwise with the reason, naming
 * the interface and queue, in why.
 */
int afxdp_create(const struct afxdp_cfg *cfg, struct peers *peers, struct backend **out,
		 char *why, size_t why_len);

/* Which view (worker) owns the QP a MetaRoCE packet (bytes after UDP) is for. */
typedef unsigned (*afxdp_owner_fn)(void *ctx, const uint8_t *pkt, uint32_t len);

/*
 * Workers: split the backend b0 (afxdp_create's, the UMEM and every socket)
 * into n views, one per worker thread; out[0] is b0.  View k serves the
 * sockets i with i % n == k (their rings are its alone), has its own share
 * of the free frames, its own next hops (nls[k], peers[k]) and link monitor.
 * A received packet whose QP owner(ctx, ...) says is another view's goes to
 * it through a lock-free ring (handoff.h), and so does a frame to send on
 * another view's socket.  Destroy the views in reverse order (b0 last).
 * Returns 0 or -errno with the reason in why.
 */
int afxdp_add_views(struct backend *b0, unsigned n, struct peers **peers, struct nl **nls,
		    afxdp_owner_fn owner, void *ctx, struct backend **out, char *why,
		    size_t why_len);

/*
 * Workers: the source ports whose packets view b sends from its own sockets
 * (the others it hands to another view): those of class sport mod *mod with
 * bit set in *mask (engine cfg.home_mod, home_mask).  *mod 0 (no preference)
 * without views, or when the pattern repeats only past 64 classes.
 */
void afxdp_home_classes(const struct backend *b, uint16_t *mod, uint64_t *mask);

#endif
