#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The UDP (io_uring) backend: A chooses it in its config, B gets it by
# falling back ("auto" on a bridge, whose driver has no native XDP); the
# status says so, the daemons connect in band and keepalives flow.
set -u
. "$(dirname "$0")/lib.sh"

e2e_require
e2e_setup_pair
DUMMY=mrd${E2E_ID}
ip -n "$NS_B" link add "$DUMMY" type bridge && ip -n "$NS_B" link set "$DUMMY" up || fail "bridge interface"
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b auto "$DUMMY" "$IP_B" "$IP_A"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b
ok "both daemons sent READY=1"

st=$(e2e_admin a status)
jq -e '.backend == "udp" and .fallback == false and (has("xdp_prog_id") | not)' <<<"$st" >/dev/null ||
	fail "a: expected the configured UDP backend: $st"
st=$(e2e_admin b status)
jq -e '.backend == "udp" and .fallback == true and (.fallback_reason | length > 0)' <<<"$st" >/dev/null ||
	fail "b: expected a fallback to UDP with a reason: $st"
grep -q "falling back to UDP" "$E2E_DIR/b.log" || fail "b: the log does not say it fell back"
ip -n "$NS_B" link show dev "$DUMMY" | grep -q xdp && fail "b left an XDP program on $DUMMY"
ok "a: UDP by config; b: UDP by fallback, said in status and log"

e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
	fail "a: control connection never came up: $(e2e_admin a links)"
e2e_wait b links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
	fail "b: control connection never came up: $(e2e_admin b links)"
sleep 1
for n in a b; do
	c=$(e2e_admin $n counters)
	jq -e '.engine.tx_keepalive >= 3 and .backend.rx_pkts >= 3 and .backend.tx_pkts >= 3' \
		<<<"$c" >/dev/null || fail "$n: keepalives did not flow over UDP: $c"
done
ok "control connections up, keepalives flow over UDP sockets"

before=$(jq -r .engine.rx_malformed <<<"$(e2e_admin a counters)")
ip netns exec "$NS_B" bash -c "printf 'garbage' >/dev/udp/$IP_A/4793"
sleep 0.3
after=$(jq -r .engine.rx_malformed <<<"$(e2e_admin a counters)") || fail "a stopped answering"
[ "$after" -gt "$before" ] || fail "a: malformed packet not counted ($before -> $after)"
ok "a malformed packet is counted and dropped"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC after SIGTERM"
done
ok "SIGTERM: clean exit"
echo "1 passed, 0 failed"
