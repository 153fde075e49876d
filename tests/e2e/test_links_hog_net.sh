#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Incoming control links (daemon/net/links.c) are bounded by their peers' share,
# not first come first served.  In "none" and "token" any host that completes a
# handshake gets an incoming link, and a daemon has LINKS_MAX (64) link slots,
# its configured (outgoing) links first.  Three hosts of a routed fabric:
#   V (host 2): the victim, its network.peers = [X]: 63 incoming slots;
#   X (host 0): the attacker, link_hog: the engine over a UDP socket, 64 QPs
#      connecting to V's control service from one address (a daemon's config
#      may not name a peer twice), reconnecting any it loses: they took all
#      of V's incoming slots;
#   H (host 1): an honest daemon that names V.
# Before, V closed H's link as soon as it came up ("too many incoming control
# connections"), for as long as X held its 63.  Now a full table gives the
# newcomer the slot of the peer that holds the most (X's oldest; a peer already
# holding links gives way to itself), counted (`links.in_evicted`): H's link is
# up at both ends and stays up while X keeps reconnecting what it lost.
set -u
. "$(dirname "$0")/lib.sh"

e2e_require_fabric
HOG=$BUILD/tests/e2e/link_hog
[ -x "$HOG" ] || skip "$HOG not built"
e2e_fabric_up --planes 1 --hosts 3
NS_X=$FABRIC_NS_0 NS_H=$FABRIC_NS_1 NS_V=$FABRIC_NS_2
X=$FABRIC_IP_0 H=$FABRIC_IP_1 V=$FABRIC_IP_2

e2e_config v udp "$FABRIC_IF_2" "$V" "$X"
e2e_config h udp "$FABRIC_IF_1" "$H" "$V"
sed -i 's/log_level = "debug"/log_level = "info"/; s/busy_poll_us = 20;/busy_poll_us = 0;/' \
	"$E2E_DIR"/{v,h}.conf

in_up() { # NAME FROM: incoming links from FROM that are up at NAME
	e2e_admin "$1" links | jq "[.links[] | select(.outgoing == false and .state == \"up\" and .peer == \"$2\")] | length"
}

e2e_start v "$NS_V"
e2e_wait_ready v
ip netns exec "$NS_X" "$HOG" "$X" "$V" 64 120 >"$E2E_DIR/hog.log" 2>&1 &
E2E_PIDS+=($!)
e2e_wait v links "[.links[] | select(.outgoing == false and .state == \"up\")] | length == 63" 30 ||
	fail "X's links not all up at V: $(e2e_admin v links | jq -c .links | head -c 600) $(e2e_admin v counters | jq -c "{e: .engine | with_entries(select(.key | test(\"cm|rx_bad|malformed|tag\"))), l: .links, w: .worker}")"
ok "X holds all 63 of V's incoming link slots"

e2e_start h "$NS_H"
e2e_wait_ready h
e2e_wait v links "[.links[] | select(.outgoing == false and .state == \"up\" and .peer == \"$H\")] | length == 1" 15 ||
	fail "H's control link never up at V (X holds $(in_up v "$X") slots): $(e2e_admin v counters | jq -c .links)"
e2e_wait h links "[.links[] | select(.outgoing and .state == \"up\")] | length == 1" 10 ||
	fail "H's link to V not up at H: $(e2e_admin h links | jq -c .links)"
ok "H's link is up at V and at H"

# X keeps reconnecting what it lost; H's link stays, on its first connection.
sleep 4
[ "$(in_up v "$H")" = 1 ] || fail "H's link at V went down: $(e2e_admin v links | jq -c .links)"
c=$(e2e_admin h links | jq '[.links[] | select(.outgoing)][0].connects')
[ "$c" = 1 ] || fail "H's link to V was connected $c times (lost in between)"
lk=$(e2e_admin v counters | jq -c .links)
jq -e '.in_evicted >= 1 and .in_accepted >= 64' <<<"$lk" >/dev/null || fail "links counters at V: $lk"
[ "$(in_up v "$X")" -le 62 ] || fail "X still holds 63 slots"
ok "H's link stayed up; V: $lk, X holds $(in_up v "$X")"

for n in h v; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
ok "test_links_hog_net"
