// SPDX-License-Identifier: MIT
/*
 * fi_suite: atomics: every (operation, datatype) the provider offers, applied and checked.
 */
#include "suite.h"

/* ---- atomics ------------------------------------------------------------------------------ */

static size_t dtsize(enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: return 1;
	case FI_INT16: case FI_UINT16: return 2;
	case FI_INT32: case FI_UINT32: case FI_FLOAT: return 4;
	default: return 8;
	}
}

/* v as a double (the operations below are checked in that domain: small integers are exact). */
static double getv(const void *p, enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8: return *(const int8_t *)p;
	case FI_UINT8: return *(const uint8_t *)p;
	case FI_INT16: return *(const int16_t *)p;
	case FI_UINT16: return *(const uint16_t *)p;
	case FI_INT32: return *(const int32_t *)p;
	case FI_UINT32: return *(const uint32_t *)p;
	case FI_INT64: return (double)*(const int64_t *)p;
	case FI_UINT64: return (double)*(const uint64_t *)p;
	case FI_FLOAT: return *(const float *)p;
	default: return *(const double *)p;
	}
}

static void setv(void *p, enum fi_datatype dt, double v)
{
	switch (dt) {
	case FI_INT8: *(int8_t *)p = (int8_t)v; break;
	case FI_UINT8: *(uint8_t *)p = (uint8_t)v; break;
	case FI_INT16: *(int16_t *)p = (int16_t)v; break;
	case FI_UINT16: *(uint16_t *)p = (uint16_t)v; break;
	case FI_INT32: *(int32_t *)p = (int32_t)v; break;
	case FI_UINT32: *(uint32_t *)p = (uint32_t)v; break;
	case FI_INT64: *(int64_t *)p = (int64_t)v; break;
	case FI_UINT64: *(uint64_t *)p = (uint64_t)v; break;
	case FI_FLOAT: *(float *)p = (float)v; break;
	default: *(double *)p = v; break;
	}
}

/* What op leaves given the old value o, the operand a and (compare family) the compare value c. */
static double expect_op(enum fi_op op, double o, double a, double c, bool *changed)
{
	*changed = true;
	switch (op) {
	case FI_MIN: return a < o ? a : o;
	case FI_MAX: return a > o ? a : o;
	case FI_SUM: return o + a;
	case FI_PROD: return o * a;
	case FI_LOR: return (o != 0) || (a != 0);
	case FI_LAND: return (o != 0) && (a != 0);
	case FI_BOR: return (double)((uint64_t)o | (uint64_t)a);
	case FI_BAND: return (double)((uint64_t)o & (uint64_t)a);
	case FI_LXOR: return (o != 0) != (a != 0);
	case FI_BXOR: return (double)((uint64_t)o ^ (uint64_t)a);
	case FI_ATOMIC_READ: return o;
	case FI_ATOMIC_WRITE: return a;
	case FI_CSWAP: return c == o ? a : o;
	case FI_CSWAP_NE: return c != o ? a : o;
	case FI_CSWAP_LE: return c <= o ? a : o;
	case FI_CSWAP_LT: return c < o ? a : o;
	case FI_CSWAP_GE: return c >= o ? a : o;
	case FI_CSWAP_GT: return c > o ? a : o;
	case FI_MSWAP: return (double)(((uint64_t)c & (uint64_t)a) | (~(uint64_t)c & (uint64_t)o));
	default: *changed = false; return o;
	}
}

void t_atomic(void)
{
	struct fab f = { 0 };
	uint64_t key, addr, kv[2], theirs[2];
	int tried = 0, skipped = 0;

	if (fab_open(&f, FI_ATOMIC | FI_TAGGED, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE))
		exit(77);
	fab_meet(&f);
	kv[0] = fi_mr_key(f.mr);
	kv[1] = (f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)f.buf : 0;
	oob_xfer(f.oob, theirs, kv, sizeof(kv));
	key = theirs[0];
	addr = theirs[1];
	if (srv) {
		oob_sync(f.oob);	/* the client works on our words; we make progress */
		while (1) {
			char c;
			struct timeval tv = { 0, 1000 };
			fd_set r;

			fi_cq_read(f.cq, NULL, 0);
			FD_ZERO(&r);
			FD_SET(f.oob, &r);
			if (select(f.oob + 1, &r, NULL, NULL, &tv) > 0) {
				if (read(f.oob, &c, 1) != 1 || write(f.oob, &c, 1) != 1)
					die("out-of-band closed");
				break;
			}
		}
		printf("ok: atomic: served the client's atomics\n");
		fab_close(&f);
		return;
	}
	oob_sync(f.oob);
	for (int op = FI_MIN; op <= FI_MSWAP; op++) {
		for (int dt = FI_INT8; dt <= FI_DOUBLE; dt++) {
			size_t cnt = 0, sz = dtsize((enum fi_datatype)dt);
			bool cmp = op >= FI_CSWAP, changed;
			uint8_t *res = f.buf + 64, *opnd = f.buf + 128, *cv = f.buf + 192,
				*init = f.buf + 256;
			uint64_t word = addr + (uint64_t)(op * 16 + dt) % 400 * 8 + 512;
			double o, a = (op == FI_PROD) ? 3 : 5, c, want;
			int err;

			if (dt > FI_UINT64 && dt != FI_FLOAT && dt != FI_DOUBLE)
				continue;
			err = cmp ? fi_compare_atomicvalid(f.ep, dt, op, &cnt) :
			      op == FI_ATOMIC_READ || op <= FI_ATOMIC_WRITE ?
			      fi_fetch_atomicvalid(f.ep, dt, op, &cnt) : -FI_EINVAL;
			if (err || !cnt) {
				skipped++;
				continue;
			}
			/* The word to a known value first, the old one fetched back. */
			setv(init, (enum fi_datatype)dt, 6);
			POST(&f, fi_fetch_atomic(f.ep, init, 1, f.desc, res, f.desc, f.peer, word, key,
						 dt, FI_ATOMIC_WRITE, NULL));
			reap(&f, 1);
			setv(opnd, (enum fi_datatype)dt, a);
			c = op == FI_MSWAP ? 3 : 6;
			setv(cv, (enum fi_datatype)dt, c);
			if (cmp)
				POST(&f, fi_compare_atomic(f.ep, opnd, 1, f.desc, cv, f.desc, res, f.desc,
							   f.peer, word, key, dt, op, NULL));
			else
				POST(&f, fi_fetch_atomic(f.ep, op == FI_ATOMIC_READ ? NULL : opnd, 1,
							 f.desc, res, f.desc, f.peer, word, key, dt, op,
							 CTX));
			reap(&f, 1);
			o = getv(res, (enum fi_datatype)dt);
			if (o != 6)
				die("atomic op %d type %d: original %g, not 6", op, dt, o);
			want = expect_op(op, o, a, c, &changed);
			setv(init, (enum fi_datatype)dt, want);	/* the type's rounding */
			want = getv(init, (enum fi_datatype)dt);
			POST(&f, fi_fetch_atomic(f.ep, NULL, 1, f.desc, res, f.desc, f.peer, word, key, dt,
						 FI_ATOMIC_READ, NULL));
			reap(&f, 1);
			if (getv(res, (enum fi_datatype)dt) != want)
				die("atomic %s on %s: left %g, want %g",
				    fi_tostr(&op, FI_TYPE_ATOMIC_OP), fi_tostr(&dt, FI_TYPE_ATOMIC_TYPE),
				    getv(res, (enum fi_datatype)dt), want);
			(void)sz;
			tried++;
		}
	}
	oob_sync(f.oob);
	printf("ok: atomic: %d (operation, datatype) pairs applied and checked, %d not offered\n",
	       tried, skipped);
	fab_close(&f);
}
