// SPDX-License-Identifier: MIT
/*
 * MetaRoCE's mode (mode.h): loss detected per PSN from each path's SACK
 * (qp_ack.c), a retransmit queue, tail-loss probes, the sender's PSN floor
 * honoured by the receiver (qp_rx.c), and spraying over every path
 * (qp_tx.c); and the table of modes.
 */
#include "internal.h"

const struct mode_ops mode_metaroce = {
	.name = "metaroce",
	.max_paths = MROC_MAX_PATHS,
	.tail_probe = true,
	.rtx_queue = true,
	/* Also with one path: a new port is its only way off a dead route. */
	.repath = true,
	.rx_floor = rx_apply_floor,
	.detect_loss = ack_detect_loss,
	.on_timeout = ack_lose_all,
	.resend = ack_resend_one,
	.pick_path = tx_pick_path,
};

const struct mode_ops *mode_ops_of(uint8_t m)
{
	switch (m) {
	case MROC_MODE_METAROCE: return &mode_metaroce;
	case MROC_MODE_ROCEV2: return &mode_rocev2;
	default: return NULL;
	}
}
