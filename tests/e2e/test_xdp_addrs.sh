#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The XDP program lets MetaRoCE frames in only to this host's addresses
# (#24 item 5, docs/PROTOCOL.md 11a), and follows them while mrocd runs
# (netlink address notifications, no reload): an address added to B's
# interface takes frames within a moment, one removed drops them again.
# Before, the set was read at start and on reload only, so frames to a new
# address were dropped (drop_not_our_addr) until someone sent SIGHUP.
# IPv4 and IPv6; the frames come from A with B's MAC, so only the program's
# address check decides.
set -u
. "$(dirname "$0")/lib.sh"

e2e_require
e2e_setup_pair
e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/b.conf"
e2e_start b "$NS_B"
e2e_wait_ready b

X4=10.202.$((E2E_ID % 250)).9
X6=fd00:202:$((E2E_ID % 9999))::9
ip -n "$NS_A" -6 addr add "fd00:202:$((E2E_ID % 9999))::1/64" dev "$IF_A" nodad
bmac=$(ip -n "$NS_B" -j link show dev "$IF_B" | jq -r '.[0].address')
# A reaches X4 and X6 at B's MAC, whoever holds them.
ip -n "$NS_A" route replace "$X4/32" dev "$IF_A"
ip -n "$NS_A" neigh replace "$X4" lladdr "$bmac" dev "$IF_A"
ip -n "$NS_A" neigh replace "$X6" lladdr "$bmac" dev "$IF_A"

# fate DST: one frame (MetaRoCE version 1, an opcode the engine refuses) to DST from A,
# then what B's XDP program did with it: "in" (to the AF_XDP socket), "dropped"
# (drop_not_our_addr), or "lost" (neither counted within 5 s).
fate() {
	local c0 c1 i
	c0=$(e2e_admin b counters | jq -c '[.xdp.redirected, .xdp.drop_not_our_addr]')
	ip netns exec "$NS_A" bash -c "printf '\\x01\\x7f\\x00\\x00AAAABBBBCCCCDDDD' >/dev/udp/$1/4793"
	for i in $(seq 50); do
		c1=$(e2e_admin b counters | jq -c '[.xdp.redirected, .xdp.drop_not_our_addr]')
		[ "$c1" != "$c0" ] && break
		sleep 0.1
	done
	jq -r --argjson a "$c0" \
		'if .[0] > $a[0] then "in" elif .[1] > $a[1] then "dropped" else "lost" end' <<<"$c1"
}

# until_fate DST WANT WHAT: frames to DST until one meets WANT, 5 s at most.
until_fate() {
	local got i
	for i in $(seq 10); do
		got=$(fate "$1")
		[ "$got" = "$2" ] && return 0
		sleep 0.4
	done
	fail "$3: a frame to $1 was $got, want $2"
}

for x in "$X4" "$X6"; do
	[ "$(fate "$x")" = dropped ] || fail "a frame to $x (not B's) was not dropped in XDP"
	ok "$x is not B's: dropped in XDP"
	case $x in *:*) plen="128 nodad" ;; *) plen=32 ;; esac
	# shellcheck disable=SC2086
	ip -n "$NS_B" addr add "$x/"$plen dev "$IF_B"
	until_fate "$x" in "$x added to $IF_B while mrocd runs"
	ok "$x added to B's $IF_B: frames to it reach mrocd without a reload"
	ip -n "$NS_B" addr del "$x/${plen% *}" dev "$IF_B"
	until_fate "$x" dropped "$x removed from $IF_B"
	ok "$x removed: frames to it dropped in XDP again"
done
[ "$(fate "$IP_B")" = in ] || fail "a frame to B's own address $IP_B did not reach mrocd"
ok "B's own address still takes frames"
grep -q "reload" "$E2E_DIR/b.log" && fail "b reloaded: $(grep reload "$E2E_DIR/b.log")"
ok "no reload on the way"
