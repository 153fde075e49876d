/* SPDX-License-Identifier: MIT */
/*
 * The mroc provider's own operations, as libfabric providers offer theirs
 * (fi_open_ops on an endpoint, by name):
 *
 *	struct fi_mroc_ops *ops;
 *	struct fi_mroc_counters n;
 *
 *	if (fi_open_ops(&ep->fid, FI_MROC_OPS_1, 0, (void **)&ops, NULL) == 0)
 *		ops->counters(ep, &n);
 *
 * The counters say what the endpoint refused from its peers: none of it
 * changes the application's memory or completes its operations.
 * FI_MROC_OPS_2 adds traffic(): how its messages moved (staged or by
 * rendezvous), so a test can tell that a transfer made no staging copy.
 */
#ifndef FI_MROC_H
#define FI_MROC_H

#include <stddef.h>
#include <stdint.h>
#include <rdma/fi_endpoint.h>

#define FI_MROC_OPS_1	"mroc_ops_v1"
#define FI_MROC_OPS_2	"mroc_ops_v2"	/* struct fi_mroc_ops_2: v1's and traffic() */

struct fi_mroc_counters {
	uint64_t rx_chunks;		/* SENDs of the provider's protocol processed */
	uint64_t bad_msgs;		/* malformed: bad header, a chunk of no message, a size over the limit */
	uint64_t answer_refused;	/* a READ_RESP, RMA_ACK or ATOMIC_RESP naming no operation of that
					 * connection and kind, or one not yet sent whole */
	uint64_t mr_gone;		/* RMA chunks for a region closed mid-operation (not written or read) */
	uint64_t hello_refused;		/* connections whose HELLO named an endpoint that did not confirm it */
	uint64_t verified;		/* connections whose HELLO the named endpoint confirmed */
};

/* How the endpoint's messages (fi_send/fi_tsend and their receives) moved. */
struct fi_mroc_traffic {
	uint64_t tx_staged;		/* payload bytes copied into staging slots */
	uint64_t rx_staged;		/* payload bytes copied out of receive slots */
	uint64_t rndv_sent;		/* messages sent by rendezvous (the receiver READs them) */
	uint64_t rndv_direct;		/* bytes READ straight into a receive's buffer */
	uint64_t rndv_bounced;		/* bytes READ into a bounce region, then copied */
};

struct fi_mroc_ops {
	size_t size;			/* sizeof(struct fi_mroc_ops) */
	int (*counters)(struct fid_ep *ep, struct fi_mroc_counters *out);
};

struct fi_mroc_ops_2 {
	size_t size;			/* sizeof(struct fi_mroc_ops_2) */
	int (*counters)(struct fid_ep *ep, struct fi_mroc_counters *out);
	int (*traffic)(struct fid_ep *ep, struct fi_mroc_traffic *out);
};

#endif
