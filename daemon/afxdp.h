/* SPDX-License-Identifier: MIT */
/*
 * AF_XDP backend: one UMEM shared by one XSK per configured (interface,
 * queue), bound in zero-copy mode where the driver has it and copy mode
 * otherwise.  Our XDP program (xdp_prog.c) steers MetaRoCE packets of each
 * (interface, queue) into its socket.  mrocd builds every Ethernet/IP/UDP
 * header itself (frame.c).  Each interface is a port; a path (a UDP source
 * port) leaves by port sport % nports, or the next one up that reaches the
 * peer, towards that port's next hop (nexthop.c).
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

struct nl;
struct xdp_prog;

enum afxdp_zc { AFXDP_ZC_AUTO = 0, AFXDP_ZC_ON, AFXDP_ZC_OFF };

struct afxdp_if {
	char name[16];
	uint32_t queue;
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
};

/*
 * Creates the UMEM and every socket and registers them with cfg->prog.
 * Returns 0 on success, negative errno otherwise with the reason, naming
 * the interface and queue, in why.
 */
int afxdp_create(const struct afxdp_cfg *cfg, struct peers *peers, struct backend **out,
		 char *why, size_t why_len);

#endif
