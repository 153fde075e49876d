/* SPDX-License-Identifier: MIT */
/*
 * libmroc's errors as libfabric's: a negative errno that fi_errno.h does not
 * define (EDQUOT from mrocd's per-client limits, EUSERS, EPROTO ...) must not
 * reach the application, which reads it with fi_strerror and compares it with
 * FI_E* codes.  Pure: unit-tested on its own (tests/unit/test_fi_errmap.c).
 */
#ifndef MROC_FI_ERRMAP_H
#define MROC_FI_ERRMAP_H

#include <stdbool.h>

/* Whether -err (err < 0) is one of fi_errno.h's codes. */
bool mfi_is_fi_errno(int err);
/* err (negative errno or FI_E*) as the nearest FI_E* code; 0 stays 0. */
int mfi_errno_map(int err);

#endif
