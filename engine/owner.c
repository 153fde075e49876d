// SPDX-License-Identifier: MIT
/*
 * QP ownership when a driver runs several engines, one per thread (mrocd:
 * a worker per AF_XDP socket).  Each engine hands out only QPNs of its own
 * class (cfg.qpn_mod, cfg.qpn_rem), so any thread can tell from a packet's
 * destination QPN which engine owns it, without a lock or a table.  A
 * CONNECT_REQ names no QPN yet: the driver steers it by its service id.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "wire.h"

uint32_t engine_qpn_fit(const struct engine_config *cfg, uint32_t r)
{
	uint32_t mod = cfg->qpn_mod, base;

	if (mod <= 1)
		return r;
	base = r - r % mod;
	/* The top class may not fit below 2^32: take the one below instead. */
	if (base > UINT32_MAX - (mod - 1))
		base -= mod;
	return base + cfg->qpn_rem % mod;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The common header (wire.h, struct mroc_hdr): opcode at 1, dst_qpn at 4; the CM header follows. */
int engine_pkt_dest(const uint8_t *pkt, size_t len, uint32_t *dst_qpn, uint64_t *service_id)
{
	if (len < MROC_HDR_LEN || pkt[0] != MROC_WIRE_VERSION)
		return -EBADMSG;
	*dst_qpn = be32(pkt + 4);
	*service_id = 0;
	if (pkt[1] == MROC_OP_CONNECT_REQ) {
		if (len < MROC_HDR_LEN + MROC_CM_HDR_LEN)
			return -EBADMSG;
		*service_id = (uint64_t)be32(pkt + MROC_HDR_LEN) << 32 | be32(pkt + MROC_HDR_LEN + 4);
	}
	return 0;
}
