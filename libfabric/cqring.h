/* SPDX-License-Identifier: MIT */
/*
 * A completion queue's entries: one FIFO of successes and errors in the order
 * they happened.  fi_cq_read returns successes up to the first error, then
 * -FI_EAVAIL until fi_cq_readerr takes it.  Entries are converted to the
 * format the CQ was opened with (CONTEXT, MSG, DATA, TAGGED) when read.  The
 * FIFO grows when full rather than drop a completion.  No libfabric objects:
 * unit-tested on its own.
 */
#ifndef MROC_FI_CQRING_H
#define MROC_FI_CQRING_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

struct mfi_cqe {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	bool err;
	int err_no;		/* positive FI_E* */
	size_t olen;		/* FI_ETRUNC: bytes that did not fit */
};

struct mfi_cqring {
	struct mfi_cqe *q;
	size_t head, count, cap;
};

int mfi_cqring_init(struct mfi_cqring *r, size_t cap);
void mfi_cqring_fini(struct mfi_cqring *r);
/* Append; -ENOMEM only if growing failed. */
int mfi_cqring_push(struct mfi_cqring *r, const struct mfi_cqe *e);
/*
 * Up to count entries in format fmt into buf, their sources into src (may be
 * NULL).  Returns how many, -FI_EAGAIN when empty, -FI_EAVAIL when an error is first.
 */
ssize_t mfi_cqring_read(struct mfi_cqring *r, enum fi_cq_format fmt, void *buf, size_t count,
			fi_addr_t *src);
/* The error at the head into err (1), or -FI_EAGAIN. */
ssize_t mfi_cqring_readerr(struct mfi_cqring *r, struct fi_cq_err_entry *err, uint32_t api);
size_t mfi_cq_entry_size(enum fi_cq_format fmt);

#endif
