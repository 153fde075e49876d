/* SPDX-License-Identifier: MIT */
/*
 * A thread that reads one byte of every page of client memory mrocd has just
 * pinned, so that the workers' first pass over a region does not pay the
 * hypervisor's first-touch trap per packet (clients_pin.c clients_map_pinned says
 * why), without holding the control thread for it: on a machine with shadow
 * paging a GiB costs ~2 s of reads where its mlock costs ~0.06 s, and a
 * client registering and deregistering GiBs in a loop would otherwise keep
 * every other client's control call (and mroc-cli) waiting.
 *
 * Work is taken 1 MiB at a time, round-robin over the ranges queued, so a
 * small ring is not queued behind another client's 16 GiB.  The control
 * thread owns the ranges' mappings: it must call toucher_forget() before it
 * unmaps one (forget waits for at most the chunk being read).  Nothing here
 * is needed for correctness: a page not touched yet is only slower once.
 */
#ifndef MROCD_TOUCHER_H
#define MROCD_TOUCHER_H

#include <stdint.h>

struct toucher;

/* 0 and a running thread, or -errno. */
int toucher_create(struct toucher **out);

/* Stops the thread (the ranges still queued are dropped) and frees it; NULL is fine. */
void toucher_destroy(struct toucher *t);

/* Queue [map, map + len) to be read a page at a time; -ENOMEM if it cannot. */
int toucher_add(struct toucher *t, const void *map, uint64_t len);

/*
 * Drop every queued range that starts at map; on return the thread does not
 * read it, and no longer will.  A map never queued (or done) is fine.
 */
void toucher_forget(struct toucher *t, const void *map);

/* Pages read so far, and pages still queued (for tests and status). */
void toucher_counts(struct toucher *t, uint64_t *done, uint64_t *queued);

#endif
