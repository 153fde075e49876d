/* SPDX-License-Identifier: MIT */
/*
 * FI_ATOMIC's operation table: which (operation, datatype) pairs each of the
 * three call families supports, their element sizes and counts, and applying
 * one at the target, element by element, with __atomic builtins (so an
 * element is atomic with respect to other atomics and to the target's CPUs).
 * No libfabric objects: unit-tested on its own (tests/unit/test_fi_atomic.c).
 *
 * Supported: the integer types FI_INT8 .. FI_UINT64 with every operation
 * libfabric defines for them (MIN .. BXOR, ATOMIC_READ/WRITE, CSWAP ..
 * MSWAP), FI_FLOAT and FI_DOUBLE with MIN, MAX, SUM, PROD, ATOMIC_READ/WRITE
 * and CSWAP .. CSWAP_GT (not the logical and bitwise ones, nor MSWAP).  Not:
 * complex types, long double, 128-bit integers.
 */
#ifndef MROC_FI_ATOMIC_OPS_H
#define MROC_FI_ATOMIC_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>

/* The call families: fi_atomic, fi_fetch_atomic, fi_compare_atomic. */
enum mfi_atomic_kind {
	MFI_ATOMIC_WRITE,
	MFI_ATOMIC_FETCH,
	MFI_ATOMIC_COMPARE,
};

/* Bytes of operand (and as many of compare and of result) one operation may carry. */
#define MFI_ATOMIC_MAX_BYTES	4096

/* Bytes of one element of dt, 0 when dt is not supported. */
size_t mfi_atomic_dtsize(enum fi_datatype dt);

/*
 * 0 when kind supports (dt, op), with *count the most elements one
 * operation may carry (count may be NULL); else -FI_EOPNOTSUPP.
 */
int mfi_atomic_valid(enum mfi_atomic_kind kind, enum fi_datatype dt, enum fi_op op,
		     size_t *count);

/*
 * Apply op to count elements at dst: operand[i] (and compare[i] for the
 * compare family), the original values into old (when not NULL).  dst must
 * be aligned to the element size.  0, or -FI_EOPNOTSUPP / -FI_EINVAL with
 * nothing done.  ATOMIC_READ takes no operand.
 */
int mfi_atomic_apply(enum fi_datatype dt, enum fi_op op, void *dst, const void *operand,
		     const void *compare, void *old, size_t count);

#endif
