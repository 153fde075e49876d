#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ICRC (docs/PROTOCOL.md 1.1) between the two backends: A on AF_XDP sends
# UDP checksum 0 and a CRC32C trailer, B on the UDP backend (kernel sockets)
# checks and strips it, and the other way round; verified WRITEs, SENDs and
# READs cross intact.  A packet whose ICRC does not match is dropped and
# counted (backend.rx_bad_icrc) by either backend; one without an ICRC but
# with a UDP checksum (an older sender) is still accepted.
set -u
. "$(dirname "$0")/lib.sh"
PERF=$BUILD/mroc-perf

e2e_require
[ -x "$PERF" ] || skip "$PERF not built"
e2e_setup_pair
e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b
[ "$(e2e_admin a status | jq -r .backend)" = af_xdp ] || fail "a is not on AF_XDP"
[ "$(e2e_admin b status | jq -r .backend)" = udp ] || fail "b is not on the UDP backend"
e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
	fail "no control connection between AF_XDP and UDP: $(e2e_admin a links)"
ok "AF_XDP and UDP backends connected"

port=18800
for t in write_bw send_bw read_bw; do
	port=$((port + 1))
	ip netns exec "$NS_B" timeout 60 "$PERF" $t -S "$E2E_DIR/b.ctl" -p $port --sleep --verify \
		-s 100000 -n 50 >"$E2E_DIR/srv.log" 2>&1 &
	srv=$!
	sleep 0.3
	ip netns exec "$NS_A" timeout 60 "$PERF" $t -S "$E2E_DIR/a.ctl" -p $port --sleep --verify \
		-s 100000 -n 50 "$IP_B" >"$E2E_DIR/cli.log" 2>&1 || fail "$t: $(cat "$E2E_DIR/cli.log")"
	wait $srv || fail "$t server: $(cat "$E2E_DIR/srv.log")"
done
for n in a b; do
	c=$(e2e_admin $n counters)
	jq -e '.backend.rx_bad_icrc == 0 and .backend.rx_bad_frame == 0' <<<"$c" >/dev/null ||
		fail "$n: packets refused on a clean link: $(jq -c .backend <<<"$c")"
done
ok "verified write_bw, send_bw, read_bw across the backends, nothing refused"

# A keepalive-sized packet announcing an ICRC (flags 0x80) whose trailer is wrong.
bad='\x01\x11\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00XXXX'
ip netns exec "$NS_B" bash -c "printf '$bad' >/dev/udp/$IP_A/4793"
ip netns exec "$NS_A" bash -c "printf '$bad' >/dev/udp/$IP_B/4793"
# Without ICRC, from a kernel socket (UDP checksum set): accepted, the engine refuses the opcode.
ip netns exec "$NS_B" bash -c "printf '\\x01\\x7f\\x00\\x00AAAABBBBCCCCDDDD' >/dev/udp/$IP_A/4793"
# Waited for (10 s at most each), not a fixed 0.5 s: a loaded machine may be slower.
e2e_wait a counters '.backend.rx_bad_icrc >= 1 and .engine.rx_malformed >= 1' 10
e2e_wait b counters '.backend.rx_bad_icrc >= 1' 10
for n in a b; do
	c=$(e2e_admin $n counters)
	jq -e '.backend.rx_bad_icrc == 1' <<<"$c" >/dev/null ||
		fail "$n: the corrupted packet was not counted: $(jq -c .backend <<<"$c")"
done
jq -e '.engine.rx_malformed >= 1' <<<"$(e2e_admin a counters)" >/dev/null ||
	fail "a: a packet without ICRC (UDP checksum set) did not reach the engine"
ok "a bad ICRC is dropped and counted by AF_XDP and by UDP; no ICRC + UDP checksum still accepted"
e2e_stop a
e2e_stop b
echo "1 passed, 0 failed"
