#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs/PROTOCOL.md 11a, VLAN tags: mrocd b on AF_XDP on its link, no VLAN
# device.  From the other end, a host of VLAN 77 (frames tagged 77 in the
# frame, written on a packet socket, as a host on a trunk sends them; the
# kernel drops them: no device of b's takes VLAN 77) sends b CONNECT_REQs to
# b's MAC and address from a spoofed source of b's subnet: they reached the
# engine (a peer added, an answer sent untagged into b's own network).  Now
# dropped in XDP and counted (xdp.drop_not_our_vlan); the same REQs untagged
# still reach the engine.  (Frames of b's own VLAN devices: test_xdp_prog.c
# test_only_to_us; this kernel may have no 802.1Q devices.)
set -u
. "$(dirname "$0")/lib.sh"

e2e_require
SPOOF=$BUILD/tests/e2e/spoof_udp
[ -x "$SPOOF" ] || skip "$SPOOF not built"
e2e_setup_pair
NET=${IP_B%.*}
MAC_B=$(ip -n "$NS_B" -j link show "$IF_B" | jq -r '.[0].address')
e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
sed -i -e 's/log_level = "debug"/log_level = "info"/' -e 's/peers = \[.*\];/peers = [ ];/' \
	"$E2E_DIR/b.conf"
e2e_start b "$NS_B"
e2e_wait_ready b

counter() { e2e_admin b counters | jq "$1"; }
# A token-mode CONNECT_REQ (ICRC flag: spoof_udp computes the trailer) for service 0x77.
REQ=0120800000000000123456780000000000000000000000770000000100000002040001000001000000112233445566778899aabbccddeeff00000000
# send VLAN: 5 REQs from a spoofed source of b's subnet to b, as frames tagged VLAN (0: untagged).
send() {
	ip netns exec "$NS_A" env SPOOF_VLAN="$1" SPOOF_IF="$IF_A" SPOOF_DMAC="$MAC_B" \
		"$SPOOF" "$NET.9" 20001 "$IP_B" 4793 "$REQ" 5 1 || fail "spoof_udp (VLAN $1)"
}

added0=$(counter .peers.added) rx0=$(counter .engine.rx_pkts)
send 77
sleep 1
c=$(e2e_admin b counters)
echo "b after 5 REQs tagged with VLAN 77: peers $(jq -c .peers <<<"$c"), engine rx_pkts $rx0 ->" \
	"$(jq .engine.rx_pkts <<<"$c"), xdp $(jq -c .xdp <<<"$c")"
[ "$(jq .peers.added <<<"$c")" = "$added0" ] ||
	fail "REQs of a VLAN b is not in added peers: $(jq -c .peers <<<"$c")"
[ "$(jq .engine.rx_pkts <<<"$c")" = "$rx0" ] ||
	fail "REQs of a VLAN b is not in reached the engine: rx_pkts $rx0 -> $(jq .engine.rx_pkts <<<"$c")"
jq -e '.xdp.drop_not_our_vlan >= 5' <<<"$c" >/dev/null ||
	fail "REQs of a VLAN b is not in not counted: $(jq -c .xdp <<<"$c")"
ok "5 REQs tagged with VLAN 77 (no device of b's): dropped in XDP and counted, no peer, no answer"

send 0
e2e_wait b counters ".engine.rx_pkts >= $rx0 + 5" 5 ||
	fail "the same REQs untagged did not reach the engine: $(counter .engine.rx_pkts), xdp $(counter .xdp)"
ok "the same REQs untagged reach the engine"
e2e_stop b
[ "$E2E_RC" = 0 ] || fail "mrocd b exited with $E2E_RC"
echo "1 passed, 0 failed"
