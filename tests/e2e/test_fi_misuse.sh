#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The provider called wrongly (tests/fi/suite/misuse.c, fi_suite misuse): one mrocd on AF_XDP
# in a network namespace, the endpoint sending to its own name.  Objects closed while bound
# (AV, CQ, EQ: -FI_EBUSY), NULL buffers with a length, fi_addrs not in the AV or removed
# (-FI_EINVAL), sends to a port nothing has on our own mrocd (refused by it, or, where it
# does not reach itself, FI_ETIMEDOUT after FI_MROC_CONNECT_TIMEOUT_MS, 10 s here), fi_cq_read of 0 entries, two threads running progress at once
# (FI_THREAD_SAFE, also between the daemons: misuse_threads); MSG endpoints' sends before fi_connect and after fi_shutdown (misuse_msg,
# the server in B; it closes its passive endpoint before accepting the request it read): each the documented error code, never a crash or a hang.
set -u
. "$(dirname "$0")/lib.sh"

PROV=$BUILD/libmroc-fi.so
SUITE=$BUILD/tests/fi/fi_suite
e2e_require
[ -f "$PROV" ] && [ -x "$SUITE" ] || skip "$PROV or $SUITE not built (libfabric-dev missing?)"
e2e_setup_pair
e2e_pair_up
FI_SUITE_TIMEOUT=50
. "$(dirname "$0")/fi_lib.sh"

ip netns exec "$NS_A" env FI_PROVIDER_PATH="$BUILD" FI_PROVIDER=mroc \
	MROC_SOCKET="$E2E_DIR/a.ctl" FI_MROC_ADDR="$IP_A" MISUSE_DEAD_IP="$IP_B" FI_MROC_CONNECT_TIMEOUT_MS=10000 timeout 100 "$SUITE" misuse \
	>"$E2E_DIR/misuse.out" 2>&1
rc=$?
cat "$E2E_DIR/misuse.out"
[ $rc = 0 ] || fail "misuse: exit $rc"
ok "misuse: wrong calls get their error codes"

# MSG endpoints (server in B, client in A): sends with no connection.
port=47690
pair misuse_msg
# FI_THREAD_SAFE: a CQ and an EQ read at once by two threads, messages between the daemons.
pair misuse_threads
# A registration closed under a message sent by rendezvous from it.
pair misuse_mr

# B in another security mode: REJ SECURITY, which the provider does not ask again (it would
# be told the same until FI_MROC_CONNECT_TIMEOUT_MS): its sends fail with FI_EACCES.
e2e_stop b
echo 'security = { mode = "none"; };' >>"$E2E_DIR/b.conf"
e2e_start b "$NS_B"
e2e_wait_ready b
ip netns exec "$NS_A" env FI_PROVIDER_PATH="$BUILD" FI_PROVIDER=mroc MROC_SOCKET="$E2E_DIR/a.ctl" \
	FI_MROC_ADDR="$IP_A" REFUSED_IP="$IP_B" timeout 100 "$SUITE" refused >"$E2E_DIR/refused.out" 2>&1
rc=$?
cat "$E2E_DIR/refused.out"
[ $rc = 0 ] || fail "refused: exit $rc"
ok "refused: sends to an mrocd in another security mode fail with FI_EACCES"
