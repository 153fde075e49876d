#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NCCL net plugin called wrongly (tests/nccl/misuse.c, nccl-harness misuse), 2 ranks on 2
# hosts of a fabric (a real mrocd on AF_XDP on each), zero-copy (memfd) and bounce (malloc)
# buffers: closed comms used again (accept, closeListen/closeSend/closeRecv twice), garbage
# handles, a handle whose listener is gone, deregMr of a region in flight, test() of a
# completed request (also once a new request took its slot), isend/irecv on closed comms and
# test() of a request whose comm closed, irecv of 0 or 9 buffers, sends larger than their receive: each the
# documented ncclResult, never a crash, a hang or a byte written past a buffer.
set -u
. "$(dirname "$0")/lib.sh"

HOSTS=2
NCCL_JOB_TIMEOUT=50
. "$(dirname "$0")/nccl_lib.sh"

job misuse 2 0,1 --version 12 misuse || fail "misuse (v12, memfd)"
ok "misuse over v12, zero-copy buffers"
job misuse8 2 0,1 --version 8 --malloc misuse || fail "misuse (v8, bounce buffers)"
ok "misuse over v8, bounce buffers"

nccl_stop
echo "1 passed, 0 failed"
