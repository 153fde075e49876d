#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The provider called wrongly (tests/fi/suite/misuse.c, fi_suite misuse): one mrocd on AF_XDP
# in a network namespace, the endpoint sending to its own name.  Objects closed while bound
# (AV, CQ, EQ: -FI_EBUSY), NULL buffers with a length, fi_addrs not in the AV or removed
# (-FI_EINVAL), fi_cq_read of 0 entries, two threads running progress at once
# (FI_THREAD_SAFE); MSG endpoints' sends before fi_connect and after fi_shutdown (misuse_msg,
# the server in B): each the documented error code, never a crash or a hang.
set -u
. "$(dirname "$0")/lib.sh"

PROV=$BUILD/libmroc-fi.so
SUITE=$BUILD/tests/fi/fi_suite
e2e_require
[ -f "$PROV" ] && [ -x "$SUITE" ] || skip "$PROV or $SUITE not built (libfabric-dev missing?)"
e2e_setup_pair
e2e_pair_up

ip netns exec "$NS_A" env FI_PROVIDER_PATH="$BUILD" FI_PROVIDER=mroc \
	MROC_SOCKET="$E2E_DIR/a.ctl" FI_MROC_ADDR="$IP_A" MISUSE_DEAD_IP="$IP_B" timeout 50 "$SUITE" misuse \
	>"$E2E_DIR/misuse.out" 2>&1
rc=$?
cat "$E2E_DIR/misuse.out"
[ $rc = 0 ] || fail "misuse: exit $rc"
ok "misuse: wrong calls get their error codes"

# MSG endpoints (server in B, client in A): sends with no connection.
port=47690
fis() {
	local ns=$1 name=$2 ip=$3
	shift 3
	ip netns exec "$ns" env FI_PROVIDER_PATH="$BUILD" FI_PROVIDER=mroc \
		MROC_SOCKET="$E2E_DIR/$name.ctl" FI_MROC_ADDR="$ip" timeout 50 "$SUITE" "$@"
}
fis "$NS_B" b "$IP_B" -P $port misuse_msg >"$E2E_DIR/mm.srv" 2>&1 &
srv=$!
fis "$NS_A" a "$IP_A" -P $port misuse_msg "$IP_B" >"$E2E_DIR/mm.cli" 2>&1
rc=$?
wait $srv
src=$?
cat "$E2E_DIR/mm.srv" "$E2E_DIR/mm.cli"
[ $rc = 0 ] && [ $src = 0 ] || fail "misuse_msg: server exit $src, client exit $rc"
ok "misuse_msg: MSG sends with no connection refused"
