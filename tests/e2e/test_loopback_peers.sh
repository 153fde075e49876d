#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two daemons on one host's loopback (UDP backend, 127.0.0.1 and 127.0.0.2, one
# network namespace): with network.allow_loopback = true they are each other's
# peers and their control connection comes up; with it false (the default) every
# packet from a loopback source is dropped first and counted (rx_bad_source, #24),
# and no control connection comes up.
set -u
. "$(dirname "$0")/lib.sh"

e2e_require
e2e_setup_pair
# configs ALLOW: both daemons on NS_A's lo, network.allow_loopback = ALLOW.
configs() {
	e2e_config a udp lo 127.0.0.1 127.0.0.2 "allow_loopback = $1;"
	e2e_config b udp lo 127.0.0.2 127.0.0.1 "allow_loopback = $1;"
}

configs true
e2e_start a "$NS_A"
e2e_start b "$NS_A"
e2e_wait_ready a
e2e_wait_ready b
for n in a b; do
	e2e_wait $n links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
		fail "$n: allow_loopback = true, but no control connection: $(e2e_admin $n links)"
done
ok "allow_loopback = true: daemons on 127.0.0.1 and 127.0.0.2 are peers, links up"
for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done

configs false
e2e_start a "$NS_A"
e2e_start b "$NS_A"
e2e_wait_ready a
e2e_wait_ready b
e2e_wait a counters '.worker.rx_bad_source >= 3' 10 ||
	fail "a: loopback sources not counted: $(e2e_admin a counters | jq -c .worker)"
up=$(e2e_admin a links | jq '[.links[] | select(.state == "up")] | length')
[ "$up" = 0 ] || fail "a: a control connection came up from a loopback source: $(e2e_admin a links)"
ok "allow_loopback = false: loopback sources dropped and counted (rx_bad_source), no link"
for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
