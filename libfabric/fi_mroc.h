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
 */
#ifndef FI_MROC_H
#define FI_MROC_H

#include <stddef.h>
#include <stdint.h>
#include <rdma/fi_endpoint.h>

#define FI_MROC_OPS_1	"mroc_ops_v1"

struct fi_mroc_counters {
	uint64_t rx_chunks;		/* SENDs of the provider's protocol processed */
	uint64_t bad_msgs;		/* malformed: bad header, a chunk of no message, a size over the limit */
	uint64_t answer_refused;	/* a READ_RESP, RMA_ACK or ATOMIC_RESP naming no operation of that
					 * connection and kind, or one not yet sent whole */
	uint64_t mr_gone;		/* RMA chunks for a region closed mid-operation (not written or read) */
	uint64_t hello_refused;		/* connections whose HELLO named an endpoint that did not confirm it */
	uint64_t verified;		/* connections whose HELLO the named endpoint confirmed */
};

struct fi_mroc_ops {
	size_t size;			/* sizeof(struct fi_mroc_ops) */
	int (*counters)(struct fid_ep *ep, struct fi_mroc_counters *out);
};

#endif
