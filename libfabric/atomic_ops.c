// SPDX-License-Identifier: MIT
/*
 * FI_ATOMIC's operation table and its application at the target (see
 * atomic_ops.h).  SUM and the bitwise operations on integers, ATOMIC_READ and
 * ATOMIC_WRITE are single __atomic builtins; everything else is a
 * compare-exchange loop on the element's bits: read it, compute the new
 * value, store it only if nobody changed it meanwhile.  Integer arithmetic
 * is done unsigned (wrapping, as the builtins do, never undefined).
 */
#include <assert.h>
#include <stdbool.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "atomic_ops.h"

static bool is_int(enum fi_datatype dt)
{
	return dt >= FI_INT8 && dt <= FI_UINT64;
}

size_t mfi_atomic_dtsize(enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8:	return 1;
	case FI_INT16: case FI_UINT16:	return 2;
	case FI_INT32: case FI_UINT32:	return 4;
	case FI_INT64: case FI_UINT64:	return 8;
	case FI_FLOAT:			return sizeof(float);
	case FI_DOUBLE:			return sizeof(double);
	default:			return 0;
	}
}

/* Whether op has a meaning on dt (for any family). */
static bool op_on_type(enum fi_datatype dt, enum fi_op op)
{
	switch (op) {
	case FI_MIN: case FI_MAX: case FI_SUM: case FI_PROD:
	case FI_ATOMIC_READ: case FI_ATOMIC_WRITE:
	case FI_CSWAP: case FI_CSWAP_NE: case FI_CSWAP_LE: case FI_CSWAP_LT:
	case FI_CSWAP_GE: case FI_CSWAP_GT:
		return true;
	case FI_LOR: case FI_LAND: case FI_LXOR:
	case FI_BOR: case FI_BAND: case FI_BXOR: case FI_MSWAP:
		return is_int(dt);
	default:
		return false;
	}
}

static bool op_in_kind(enum mfi_atomic_kind kind, enum fi_op op)
{
	bool arith = op >= FI_MIN && op <= FI_BXOR;

	switch (kind) {
	case MFI_ATOMIC_WRITE:	 return arith || op == FI_ATOMIC_WRITE;
	case MFI_ATOMIC_FETCH:	 return arith || op == FI_ATOMIC_READ || op == FI_ATOMIC_WRITE;
	case MFI_ATOMIC_COMPARE: return op >= FI_CSWAP && op <= FI_MSWAP;
	}
	return false;
}

int mfi_atomic_valid(enum mfi_atomic_kind kind, enum fi_datatype dt, enum fi_op op,
		     size_t *count)
{
	size_t sz = mfi_atomic_dtsize(dt);

	if (!sz || !op_in_kind(kind, op) || !op_on_type(dt, op))
		return -FI_EOPNOTSUPP;
	if (count)
		*count = MFI_ATOMIC_MAX_BYTES / sz;
	return 0;
}

/*
 * The new value of an element that holds cur, for operand a and compare c,
 * in nv; false when nothing is to be stored (a compare that fails, a MIN
 * already smaller).  A is the type arithmetic is done in.
 */
#define NEXT_COMMON(T, A)							\
	case FI_MIN:	w = a < cur; nv = a; break;				\
	case FI_MAX:	w = a > cur; nv = a; break;				\
	case FI_SUM:	nv = (T)((A)cur + (A)a); break;				\
	case FI_PROD:	nv = (T)((A)cur * (A)a); break;				\
	case FI_ATOMIC_WRITE: nv = a; break;					\
	case FI_CSWAP:	 w = c == cur; nv = a; break;				\
	case FI_CSWAP_NE: w = c != cur; nv = a; break;				\
	case FI_CSWAP_LE: w = c <= cur; nv = a; break;				\
	case FI_CSWAP_LT: w = c < cur; nv = a; break;				\
	case FI_CSWAP_GE: w = c >= cur; nv = a; break;				\
	case FI_CSWAP_GT: w = c > cur; nv = a; break;

#define NEXT_INT(T)								\
	case FI_LOR:	nv = (T)(cur || a); break;				\
	case FI_LAND:	nv = (T)(cur && a); break;				\
	case FI_LXOR:	nv = (T)(!cur != !a); break;				\
	case FI_BOR:	nv = (T)(cur | a); break;				\
	case FI_BAND:	nv = (T)(cur & a); break;				\
	case FI_BXOR:	nv = (T)(cur ^ a); break;				\
	case FI_MSWAP:	nv = (T)((a & c) | (cur & ~c)); break;

/*
 * NAME applies op to n elements of type T held as bits U; EXTRA adds the
 * integer-only cases, FAST the single-builtin ones.
 */
#define DEFINE_APPLY(NAME, T, U, A, EXTRA, FAST)				\
static void NAME(enum fi_op op, U *dst, const uint8_t *opnd, const uint8_t *cmp,	\
		 uint8_t *old, size_t n)					\
{										\
	for (size_t i = 0; i < n; i++) {					\
		T a = 0, c = 0, cur, nv = 0;					\
		U ob, nb;							\
										\
		if (opnd)							\
			memcpy(&a, opnd + i * sizeof(T), sizeof(T));		\
		if (cmp)							\
			memcpy(&c, cmp + i * sizeof(T), sizeof(T));		\
		switch (op) {							\
		FAST								\
		case FI_ATOMIC_READ:						\
			ob = __atomic_load_n(&dst[i], __ATOMIC_SEQ_CST);	\
			goto done;						\
		default:							\
			break;							\
		}								\
		ob = __atomic_load_n(&dst[i], __ATOMIC_SEQ_CST);		\
		do {								\
			bool w = true;						\
										\
			memcpy(&cur, &ob, sizeof(T));				\
			switch (op) {						\
			NEXT_COMMON(T, A)					\
			EXTRA							\
			default: w = false; break;				\
			}							\
			if (!w)							\
				break;						\
			memcpy(&nb, &nv, sizeof(U));				\
		} while (!__atomic_compare_exchange_n(&dst[i], &ob, nb, false,	\
						      __ATOMIC_SEQ_CST,		\
						      __ATOMIC_SEQ_CST));	\
done:										\
		if (old)							\
			memcpy(old + i * sizeof(T), &ob, sizeof(T));		\
	}									\
}

/* Integers: SUM and the bitwise operations in one builtin each (the operand's bits). */
#define FAST_INT(U)								\
	case FI_SUM:								\
		memcpy(&nb, &a, sizeof(U));					\
		ob = __atomic_fetch_add(&dst[i], nb, __ATOMIC_SEQ_CST);		\
		goto done;							\
	case FI_BOR:								\
		memcpy(&nb, &a, sizeof(U));					\
		ob = __atomic_fetch_or(&dst[i], nb, __ATOMIC_SEQ_CST);		\
		goto done;							\
	case FI_BAND:								\
		memcpy(&nb, &a, sizeof(U));					\
		ob = __atomic_fetch_and(&dst[i], nb, __ATOMIC_SEQ_CST);		\
		goto done;							\
	case FI_BXOR:								\
		memcpy(&nb, &a, sizeof(U));					\
		ob = __atomic_fetch_xor(&dst[i], nb, __ATOMIC_SEQ_CST);		\
		goto done;							\
	case FI_ATOMIC_WRITE:							\
		memcpy(&nb, &a, sizeof(U));					\
		ob = __atomic_exchange_n(&dst[i], nb, __ATOMIC_SEQ_CST);	\
		goto done;

#define FAST_FLOAT(U)								\
	case FI_ATOMIC_WRITE:							\
		memcpy(&nb, &a, sizeof(U));					\
		ob = __atomic_exchange_n(&dst[i], nb, __ATOMIC_SEQ_CST);	\
		goto done;

DEFINE_APPLY(apply_i8, int8_t, uint8_t, uint32_t, NEXT_INT(int8_t), FAST_INT(uint8_t))
DEFINE_APPLY(apply_u8, uint8_t, uint8_t, uint32_t, NEXT_INT(uint8_t), FAST_INT(uint8_t))
DEFINE_APPLY(apply_i16, int16_t, uint16_t, uint32_t, NEXT_INT(int16_t), FAST_INT(uint16_t))
DEFINE_APPLY(apply_u16, uint16_t, uint16_t, uint32_t, NEXT_INT(uint16_t), FAST_INT(uint16_t))
DEFINE_APPLY(apply_i32, int32_t, uint32_t, uint32_t, NEXT_INT(int32_t), FAST_INT(uint32_t))
DEFINE_APPLY(apply_u32, uint32_t, uint32_t, uint32_t, NEXT_INT(uint32_t), FAST_INT(uint32_t))
DEFINE_APPLY(apply_i64, int64_t, uint64_t, uint64_t, NEXT_INT(int64_t), FAST_INT(uint64_t))
DEFINE_APPLY(apply_u64, uint64_t, uint64_t, uint64_t, NEXT_INT(uint64_t), FAST_INT(uint64_t))
DEFINE_APPLY(apply_flt, float, uint32_t, float, , FAST_FLOAT(uint32_t))
DEFINE_APPLY(apply_dbl, double, uint64_t, double, , FAST_FLOAT(uint64_t))

static_assert(sizeof(float) == sizeof(uint32_t) && sizeof(double) == sizeof(uint64_t),
	      "floats are applied through their bits");

int mfi_atomic_apply(enum fi_datatype dt, enum fi_op op, void *dst, const void *operand,
		     const void *compare, void *old, size_t count)
{
	size_t sz = mfi_atomic_dtsize(dt);
	const uint8_t *a = op == FI_ATOMIC_READ ? NULL : operand;
	const uint8_t *c = op >= FI_CSWAP && op <= FI_MSWAP ? compare : NULL;

	if (!sz || !op_on_type(dt, op))
		return -FI_EOPNOTSUPP;
	if (((uintptr_t)dst % sz) || (!a && op != FI_ATOMIC_READ) ||
	    (!c && op >= FI_CSWAP && op <= FI_MSWAP))
		return -FI_EINVAL;
	switch (dt) {
	case FI_INT8:	apply_i8(op, dst, a, c, old, count); break;
	case FI_UINT8:	apply_u8(op, dst, a, c, old, count); break;
	case FI_INT16:	apply_i16(op, dst, a, c, old, count); break;
	case FI_UINT16:	apply_u16(op, dst, a, c, old, count); break;
	case FI_INT32:	apply_i32(op, dst, a, c, old, count); break;
	case FI_UINT32:	apply_u32(op, dst, a, c, old, count); break;
	case FI_INT64:	apply_i64(op, dst, a, c, old, count); break;
	case FI_UINT64:	apply_u64(op, dst, a, c, old, count); break;
	case FI_FLOAT:	apply_flt(op, dst, a, c, old, count); break;
	case FI_DOUBLE:	apply_dbl(op, dst, a, c, old, count); break;
	default:	return -FI_EOPNOTSUPP;
	}
	return 0;
}
