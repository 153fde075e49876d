#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# FI_ATOMIC over the mroc provider (build/libmroc-fi.so) between two network
# namespaces, each with a real mrocd on AF_XDP: fi_info lists FI_ATOMIC; a
# target in B and two clients in A, each its own RDM endpoint (its own
# connection and mroc QP), run tests/fi/fi_atomic_check: concurrent
# fi_fetch_atomic FI_SUM on one counter end at the exact sum with every
# original value seen once, CSWAP increments end at their count, and one each
# of MIN/MAX/BOR/BAND/BXOR, multi-element, double, write/read and the
# bad-key/misaligned errors hold.
set -u
. "$(dirname "$0")/lib.sh"

PROV=$BUILD/libmroc-fi.so
CHECKER=$BUILD/tests/fi/fi_atomic_check
ITERS=400
e2e_require
e2e_require_unsanitized fi_info
command -v fi_info >/dev/null || skip "needs fi_info (libfabric-bin; scripts/deps.sh installs it)"
[ -f "$PROV" ] && [ -x "$CHECKER" ] || skip "$PROV or $CHECKER not built (libfabric-dev missing?)"

e2e_setup_pair
FI_PROVIDER_PATH=$BUILD fi_info -p mroc -t FI_EP_RDM -v >"$E2E_DIR/fi_info.out" 2>&1 ||
	fail "fi_info -p mroc: $(cat "$E2E_DIR/fi_info.out")"
grep -q "caps: .*FI_ATOMIC" "$E2E_DIR/fi_info.out" || fail "fi_info -p mroc: no FI_ATOMIC in caps"
ok "fi_info -p mroc lists FI_ATOMIC"

e2e_pair_up

# run NS NAME IP ARGS...: the checker in a namespace, on that host's mrocd.
run() {
	local ns=$1 name=$2 ip=$3
	shift 3
	ip netns exec "$ns" env FI_PROVIDER_PATH="$BUILD" MROC_SOCKET="$E2E_DIR/$name.ctl" \
		FI_MROC_ADDR="$ip" timeout 150 "$CHECKER" "$@"
}

run "$NS_B" b "$IP_B" target "$E2E_DIR" 2 $ITERS >"$E2E_DIR/target.out" 2>&1 &
tpid=$!
E2E_PIDS+=("$tpid")
run "$NS_A" a "$IP_A" client "$E2E_DIR" 0 $ITERS >"$E2E_DIR/c0.out" 2>&1 &
c0=$!
E2E_PIDS+=("$c0")
run "$NS_A" a "$IP_A" client "$E2E_DIR" 1 $ITERS >"$E2E_DIR/c1.out" 2>&1 &
c1=$!
E2E_PIDS+=("$c1")
# Both clients connected and ready: they start their atomics at once.
for _ in $(seq 600); do
	[ -e "$E2E_DIR/ready.0" ] && [ -e "$E2E_DIR/ready.1" ] && break
	kill -0 "$c0" 2>/dev/null && kill -0 "$c1" 2>/dev/null || break
	sleep 0.1
done
touch "$E2E_DIR/go"
wait "$c1"
rc1=$?
wait "$c0"
rc0=$?
wait "$tpid"
rct=$?
cat "$E2E_DIR/c0.out" "$E2E_DIR/c1.out" "$E2E_DIR/target.out"
[ $rc0 = 0 ] && [ $rc1 = 0 ] || fail "a client failed (exit $rc0, $rc1)"
[ $rct = 0 ] || fail "the target's words are not what the clients' atomics must leave (exit $rct)"
ok "2 clients x $ITERS fetch-adds end at $((2 * ITERS)); CSWAP, MIN/MAX/BOR/BAND/BXOR, uint32 x4, double, errors hold"

# Every fetch-add saw a distinct original value: together exactly 0 .. 2*ITERS-1.
sort -n "$E2E_DIR/orig.0" "$E2E_DIR/orig.1" | cmp -s - <(seq 0 $((2 * ITERS - 1))) ||
	fail "the fetch-adds' original values are not 0 .. $((2 * ITERS - 1)), each once"
ok "the $((2 * ITERS)) original values are 0 .. $((2 * ITERS - 1)), each once"
