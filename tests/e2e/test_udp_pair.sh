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
for n in a b; do
	e2e_wait $n counters '.engine.tx_keepalive >= 3 and .backend.rx_pkts >= 3 and .backend.tx_pkts >= 3' 10
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

# SIGHUP: a reloadable key is applied, a restart key is reported, the daemon keeps running.
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf"
sed -i 's/keepalive_ms = 100;/keepalive_ms = 100;\n\tpaths = 2;\n\tmax_retx = 20;/' "$E2E_DIR/a.conf"
kill -HUP "$PID_a"
for _ in $(seq 50); do grep -q "reload: transport.max_retx" "$E2E_DIR/a.log" && break; sleep 0.1; done
grep -q "reload: daemon.log_level applied" "$E2E_DIR/a.log" || fail "SIGHUP did not apply log_level"
grep -q "reload: transport.paths applied" "$E2E_DIR/a.log" || fail "SIGHUP did not apply transport.paths"
grep -q "reload: transport.max_retx changed: needs a restart" "$E2E_DIR/a.log" ||
	fail "SIGHUP did not report the restart key"
e2e_admin a status >/dev/null || fail "a stopped answering after SIGHUP"
ok "SIGHUP reloads what it can and names what needs a restart"

# A dead peer: b is killed; a's keepalives find out within dead_peer_ms (3 s).
kill -KILL "$PID_b"
wait "$PID_b" 2>/dev/null
e2e_wait a links '[.links[] | select(.state == "up")] | length == 0' 8 ||
	fail "a still thinks b is up: $(e2e_admin a links)"
ok "keepalives detected the dead peer"

for n in a; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC after SIGTERM"
done
ok "SIGTERM: clean exit"
echo "1 passed, 0 failed"
