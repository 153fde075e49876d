/* SPDX-License-Identifier: MIT */
/*
 * A completion queue's entries: one FIFO of successes and errors in the order
 * they happened.  fi_cq_read returns successes up to the first error, then
 * -FI_EAVAIL until fi_cq_readerr takes it.  Entries are converted to the
 * format the CQ was opened with (CONTEXT, MSG, DATA, TAGGED) when read.  The
 * FIFO grows when full rather than drop a completion.  Also when a read that
 * found nothing gives the CPU away (mfi_idle_read).  No libfabric objects:
 * unit-tested on its own.
 */
#ifndef MROC_FI_CQRING_H
#define MROC_FI_CQRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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

/*
 * When a CQ (or EQ) read that found nothing gives the CPU away: once reads
 * have found nothing for spin_ns, at most once per MFI_IDLE_YIELD_EVERY_NS.
 * Per queue, not per QP: an endpoint's idle QPs (listeners, connections the
 * peer opened) must not make a read yield while another QP is busy.
 */
#define MFI_IDLE_YIELD_EVERY_NS	5000

struct mfi_idle {
	int64_t spin_ns;		/* < 0: never yield */
	int64_t since;			/* start of the current run of empty reads; < 0: none */
	int64_t last_yield;		/* < 0: none yet */
};

void mfi_idle_init(struct mfi_idle *w, int64_t spin_ns);
/* A read is over (busy: it found something) at time now (ns): whether to yield now. */
bool mfi_idle_read(struct mfi_idle *w, bool busy, int64_t now);

#endif
