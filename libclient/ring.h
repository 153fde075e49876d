/* SPDX-License-Identifier: MIT */
/*
 * Single-producer single-consumer rings in shared memory (layout in abi.h),
 * used by libmroc and mrocd alike.  io_uring's SQ/CQ and xsk_queue.h are
 * the model: free-running 32-bit indices, power-of-two sizes, and
 *
 *   producer                                consumer
 *   write entry i                           c = load_acquire(prod)   (B)
 *   store_release(prod, i + 1)   (A)        read entries up to c
 *                                           store_release(cons, c)   (C)
 *   p = load_acquire(cons)       (D)
 *   reuse slots below p
 *
 * (A) pairs with (B): the consumer sees the entry before it sees the index.
 * (C) pairs with (D): the producer overwrites a slot only after the
 * consumer has finished reading it.
 *
 * Each side keeps a private copy of the ring's size (struct ring_view) so a
 * misbehaving peer cannot change it after set-up; indices read from the
 * other side are checked (ring_*_avail return -EBADMSG if the peer moved its
 * index impossibly) before use.
 */
#ifndef MROC_RING_H
#define MROC_RING_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "abi.h"

/*
 * GCC's ThreadSanitizer does not model fences and says so (-Wtsan), which
 * breaks SANITIZE=thread builds with -Werror.  Our two fences only order
 * atomics against atomics (a flag against an index, never plain data), so
 * TSan loses nothing by not modelling them, and they still run as fences.
 */
#if defined(__SANITIZE_THREAD__) && !defined(__clang__) && __GNUC__ >= 11
#define RING_TSAN_PRAGMAS 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif

/* A side's private, trusted view of one ring. */
struct ring_view {
	struct mroc_ring_ctl *ctl;	/* shared */
	uint8_t *entries;		/* shared */
	uint32_t mask;			/* entries - 1, private */
	uint32_t entry_size;		/* private */
	uint32_t head;			/* private copy of our own index */
};

static inline _Atomic uint32_t *ring_prod(struct ring_view *r)
{
	return (_Atomic uint32_t *)&r->ctl->prod;
}

static inline _Atomic uint32_t *ring_cons(struct ring_view *r)
{
	return (_Atomic uint32_t *)&r->ctl->cons;
}

static inline _Atomic uint32_t *ring_flags(struct ring_view *r)
{
	return (_Atomic uint32_t *)&r->ctl->flags;
}

static inline void *ring_slot(struct ring_view *r, uint32_t idx)
{
	return r->entries + (uint64_t)(idx & r->mask) * r->entry_size;
}

/* ---- producer ---------------------------------------------------------------- */

/* Free slots, or -EBADMSG if the consumer's index is impossible. */
static inline int64_t ring_prod_space(struct ring_view *r)
{
	/* (D): slots below cons are read; we may overwrite them. */
	uint32_t cons = atomic_load_explicit(ring_cons(r), memory_order_acquire);
	uint32_t used = r->head - cons;

	if (used > r->mask + 1)
		return -EBADMSG;
	return (int64_t)(r->mask + 1 - used);
}

/* Slot for the next entry (check ring_prod_space first). */
static inline void *ring_prod_slot(struct ring_view *r)
{
	return ring_slot(r, r->head);
}

/* Publish the entries written so far. */
static inline void ring_prod_commit(struct ring_view *r, uint32_t n)
{
	r->head += n;
	/* (A): entries are visible before the index that covers them. */
	atomic_store_explicit(ring_prod(r), r->head, memory_order_release);
}

/* ---- consumer ---------------------------------------------------------------- */

/* Entries ready, or -EBADMSG if the producer's index is impossible. */
static inline int64_t ring_cons_avail(struct ring_view *r)
{
	/* (B): after seeing prod, the entries below it are complete. */
	uint32_t prod = atomic_load_explicit(ring_prod(r), memory_order_acquire);
	uint32_t ready = prod - r->head;

	if (ready > r->mask + 1)
		return -EBADMSG;
	return ready;
}

static inline void *ring_cons_slot(struct ring_view *r, uint32_t i)
{
	return ring_slot(r, r->head + i);
}

/* Hand n consumed slots back to the producer. */
static inline void ring_cons_release(struct ring_view *r, uint32_t n)
{
	r->head += n;
	/* (C): we are done reading the slots before the producer may reuse them. */
	atomic_store_explicit(ring_cons(r), r->head, memory_order_release);
}

/* ---- sleeping and waking ------------------------------------------------------ */

/*
 * The consumer is about to sleep: raise the flag, then look once more.
 * The seq_cst fence orders the flag store before the re-check load, and
 * pairs with the producer's fence in ring_prod_needs_wakeup(): either the
 * consumer sees the new entry, or the producer sees the flag (no lost wakeup).
 */
static inline bool ring_cons_prepare_sleep(struct ring_view *r, uint32_t flag)
{
	atomic_fetch_or_explicit(ring_flags(r), flag, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(ring_prod(r), memory_order_acquire) == r->head;
}

/* The same, and *old: the flags before (was flag still up from the last time?). */
static inline bool ring_cons_prepare_sleep_old(struct ring_view *r, uint32_t flag, uint32_t *old)
{
	*old = atomic_fetch_or_explicit(ring_flags(r), flag, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(ring_prod(r), memory_order_acquire) == r->head;
}

/* Returns the flags before. */
static inline uint32_t ring_cons_clear_flag(struct ring_view *r, uint32_t flag)
{
	return atomic_fetch_and_explicit(ring_flags(r), ~flag, memory_order_relaxed);
}

/* After ring_prod_commit: must the producer signal the consumer's fd? */
static inline bool ring_prod_needs_wakeup(struct ring_view *r, uint32_t flag)
{
	/* Pairs with the fence in ring_cons_prepare_sleep (see there). */
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(ring_flags(r), memory_order_relaxed) & flag;
}

/*
 * After ring_prod_commit: must the producer signal the consumer's fd, which
 * nobody did yet for this request?  True once per request: the first caller
 * that sees flag also sets rung; the consumer clears rung before it raises
 * flag again (ring_cons_prepare_sleep).  All read-modify-writes of the flags
 * word are in one modification order, so a producer that sees the new flag
 * also sees rung cleared.  A producer that finds rung set relies on the
 * signal already sent: the consumer looks at the ring after it read that
 * signal, and so after this entry, or the ring is polled meanwhile.
 */
static inline bool ring_prod_needs_wakeup_once(struct ring_view *r, uint32_t flag, uint32_t rung)
{
	/* Pairs with the fence in ring_cons_prepare_sleep (see there). */
	atomic_thread_fence(memory_order_seq_cst);
	if (!(atomic_load_explicit(ring_flags(r), memory_order_relaxed) & flag))
		return false;
	return !(atomic_fetch_or_explicit(ring_flags(r), rung, memory_order_relaxed) & rung);
}

/*
 * Producer side, test-and-clear: true if the consumer asked to be woken
 * (so exactly one wake-up per request).  Same fence pairing as above.
 */
static inline bool ring_prod_take_flag(struct ring_view *r, uint32_t flag)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (!(atomic_load_explicit(ring_flags(r), memory_order_relaxed) & flag))
		return false;
	return atomic_fetch_and_explicit(ring_flags(r), ~flag, memory_order_relaxed) & flag;
}

/* Set up a private view; the caller has validated entries (power of two) and bounds. */
static inline void ring_view_init(struct ring_view *r, void *base, uint32_t off, uint32_t entries,
				  uint32_t entry_size, bool producer)
{
	r->ctl = (struct mroc_ring_ctl *)((uint8_t *)base + off);
	r->entries = (uint8_t *)base + off + sizeof(struct mroc_ring_ctl);
	r->mask = entries - 1;
	r->entry_size = entry_size;
	/* Start from what is in shared memory (0 on a fresh region). */
	r->head = producer ? atomic_load_explicit(ring_prod(r), memory_order_relaxed) :
			     atomic_load_explicit(ring_cons(r), memory_order_relaxed);
}

#ifdef RING_TSAN_PRAGMAS
#pragma GCC diagnostic pop
#undef RING_TSAN_PRAGMAS
#endif

#endif
