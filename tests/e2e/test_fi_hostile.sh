#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The mroc provider against a hostile peer (issue 24, items 15-20): a victim
# (libfabric over build/libmroc-fi.so) in A and an attacker in B that speaks
# the provider's protocol itself over raw libmroc QPs beside a genuine
# endpoint X, each host with a real mrocd on AF_XDP.  tests/fi/fi_hostile
# runs the scenarios (forged answers, an early answer, regions closed mid-RMA,
# FI_PEEK|FI_CLAIM|FI_DISCARD while arriving, fi_close with work outstanding
# and half a message in, an endpoint impersonated, random headers) and checks
# every byte the victim owns; the provider's counters say what it refused.
set -u
. "$(dirname "$0")/lib.sh"

PROV=$BUILD/libmroc-fi.so
PROG=$BUILD/tests/fi/fi_hostile
CTL=47620
FUZZ=${FI_HOSTILE_FUZZ:-3000}
e2e_require
[ -f "$PROV" ] && [ -x "$PROG" ] || skip "$PROV or $PROG not built (libfabric-dev missing?)"

e2e_setup_pair
e2e_pair_up

# run NS NAME IP ARGS...: the program in a namespace, on that host's mrocd.
run() {
	local ns=$1 name=$2 ip=$3
	shift 3
	ip netns exec "$ns" env FI_PROVIDER_PATH="$BUILD" FI_PROVIDER=mroc \
		MROC_SOCKET="$E2E_DIR/$name.ctl" FI_MROC_ADDR="$ip" timeout 300 "$PROG" "$@"
}

run "$NS_A" a "$IP_A" victim $CTL >"$E2E_DIR/victim.out" 2>&1 &
vpid=$!
E2E_PIDS+=("$vpid")
run "$NS_B" b "$IP_B" attacker "$IP_A" $CTL "$IP_B" "$FUZZ" >"$E2E_DIR/attacker.out" 2>&1
arc=$?
wait "$vpid"
vrc=$?
cat "$E2E_DIR/victim.out" "$E2E_DIR/attacker.out"
[ $vrc = 0 ] && [ $arc = 0 ] || fail "fi_hostile: victim exit $vrc, attacker exit $arc"
[ -n "${FI_HOSTILE_ONLY:-}" ] || for s in 15: 16: 19: 18: 17: 20: fuzz:; do
	grep -q "^victim: $s" "$E2E_DIR/victim.out" || fail "scenario $s did not run"
done
ok "forged answers, an early answer, regions closed mid-RMA, PEEK|CLAIM|DISCARD, fi_close with work outstanding, an impersonated endpoint, forged rendezvous announcements and $FUZZ random chunks: refused, every byte checked"
