#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs/PROTOCOL.md 11a on the UDP backend: only packets to one of this host's
# unicast addresses reach the engine.  mrocd b runs on the UDP backend with
# network.address unset (the shipped default), so its socket is bound to the
# wildcard address and the kernel hands it broadcasts and packets to groups
# the host is in.  From the other end of the link, a CONNECT_REQ from a
# spoofed on-link source (the "victim") is sent to 255.255.255.255, to the
# subnet's broadcast address, to 224.0.0.1 and to ff02::1: one such packet
# made every mrocd of the segment add the victim as a peer and answer it (a
# reflection multiplied by the number of daemons).  Now dropped before any
# lookup and counted (backend.rx_not_unicast); the same REQ to b's own
# address still reaches the engine (REJ NO_LISTENER: nobody listens).
set -u
. "$(dirname "$0")/lib.sh"

e2e_require
SPOOF=$BUILD/tests/e2e/spoof_udp
[ -x "$SPOOF" ] || skip "$SPOOF not built"
e2e_setup_pair
NET=${IP_B%.*}
VICTIM=$NET.9
ip -n "$NS_A" addr add fd00:201::1/64 dev "$IF_A" nodad
ip -n "$NS_B" addr add fd00:201::2/64 dev "$IF_B" nodad
# Routes for the attacker's broadcast and multicast packets.
ip -n "$NS_A" route add default dev "$IF_A"
ip -n "$NS_A" route add 224.0.0.0/4 dev "$IF_A"
e2e_config b udp "$IF_B" "" "$IP_A"
sed -i -e 's/log_level = "debug"/log_level = "info"/' -e 's/peers = \[.*\];/peers = [ ];/' \
	"$E2E_DIR/b.conf"
e2e_start b "$NS_B"
e2e_wait_ready b
[ "$(e2e_admin b status | jq -r .backend)" = udp ] || fail "b is not on the UDP backend"

counter() { e2e_admin b counters | jq "$1"; }
# A token-mode CONNECT_REQ (ICRC flag: spoof_udp computes the trailer) for service 0x77.
REQ=0120800000000000123456780000000000000000000000770000000100000002040001000001000000112233445566778899aabbccddeeff00000000
send() { ip netns exec "$NS_A" env "${@:3}" "$SPOOF" "$1" 20001 "$2" 4793 "$REQ" 5 1 || fail "spoof_udp $1 -> $2"; }

added0=$(counter .peers.added) rx0=$(counter .engine.rx_pkts)
send "$VICTIM" 255.255.255.255
send "$VICTIM" "$NET.255"
send "$VICTIM" 224.0.0.1
send fd00:201::9 ff02::1 SPOOF_IF="$IF_A"
sleep 1
c=$(e2e_admin b counters)
echo "b after 20 REQs to broadcast and group addresses: peers $(jq -c .peers <<<"$c")," \
	"engine rx_pkts $rx0 -> $(jq .engine.rx_pkts <<<"$c"), backend $(jq -c .backend <<<"$c")"
[ "$(jq .peers.added <<<"$c")" = "$added0" ] ||
	fail "REQs to broadcast/multicast addresses added peers: $(jq -c .peers <<<"$c")"
[ "$(jq .engine.rx_pkts <<<"$c")" = "$rx0" ] ||
	fail "REQs to broadcast/multicast addresses reached the engine: rx_pkts $rx0 -> $(jq .engine.rx_pkts <<<"$c")"
# 224.0.0.1 may not be delivered at all (the kernel's multicast routing in a namespace): 15 of 20.
jq -e '.backend.rx_not_unicast >= 15' <<<"$c" >/dev/null ||
	fail "REQs to broadcast/multicast addresses not counted: $(jq -c .backend <<<"$c")"
ok "20 REQs to 255.255.255.255, $NET.255, 224.0.0.1 and ff02::1: dropped and counted, no peer, no answer"

# The same REQ to b's own addresses: the engine has it (and refuses it: no listener).
send "$VICTIM" "$IP_B"
send fd00:201::9 fd00:201::2
e2e_wait b counters ".engine.rx_pkts >= $rx0 + 10" 5 ||
	fail "REQs to b's own addresses did not reach the engine: $(counter .engine.rx_pkts)"
ok "the same REQs to b's own IPv4 and IPv6 addresses reach the engine"
e2e_stop b
[ "$E2E_RC" = 0 ] || fail "mrocd b exited with $E2E_RC"
echo "1 passed, 0 failed"
