#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Attacks from the network on the peer table (#24 items 1-3, docs/PROTOCOL.md
# 11a), in each security mode, on hosts with a port per plane and an address
# per port (scripts/fabric --ports 2).  While a verified write_bw runs from A
# to B, an attacker that can send with any source address:
#  1. replays A's own CONNECT_REQ, captured on the wire, from each of A's
#     port addresses to B, ten times a second (it cut A off: B took each port
#     address from A and made it a peer of its own, so A's data from it was
#     dropped as another peer's);
#  3. sends B a duplicate of that REQ (A's QPN, from A's address) naming
#     other port addresses (in "token" B applied them: our traffic to A went
#     where the REQ said);
#  5. (from the plane's side of B's port 1) sends that REQ to the link's
#     broadcast address and to an address of the link that is not B's but
#     resolves to B's MAC (a promiscuous port's case): B's XDP program drops
#     them all and counts them (drop_not_our_mac, drop_not_our_addr), and
#     nothing reaches B's engine from there;
# and the transfer still completes with every byte verified, B still maps
# A's port addresses to A, and nothing took or shared them; in "aead" the
# replays from other addresses are refused as bad tags (the seal covers the
# IP addresses, case 2), those from A's own address as stale (item 6), and
# none adds a peer.
set -u
. "$(dirname "$0")/lib.sh"

e2e_spoof_fabric_up
KEYS=$E2E_DIR/keys
echo "7 $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$KEYS"
chmod 0600 "$KEYS"

# configs MODE: both daemons on p1 and p2 with their port addresses, in security MODE.
configs() {
	e2e_port_addr_configs
	echo "security = { mode = \"$1\"; key_file = \"$KEYS\"; };" | tee -a "$E2E_DIR/a.conf" \
		>>"$E2E_DIR/b.conf"
}

# hexbyte N: N as two hex digits.
hexbyte() { printf '%02x' "$1"; }

# forge_ext HEX MODE: HEX (a CONNECT_REQ) with every announced IPv4 port address
# replaced by 10.66.0.N (N = the port + 1): what a squatter would name.
forge_ext() {
	local hex=$1 off=$((16 + 24)) n k at
	[ "$2" = token ] && off=$((off + 16))
	off=$((off + 2))
	n=$((16#${hex:$((2 * off)):2}))
	for ((k = 0; k < n; k++)); do
		at=$(((off + 1 + 18 * k + 2) * 2))
		hex=${hex:0:$at}0a4200$(hexbyte $((k + 1)))${hex:$((at + 8))}
	done
	echo "$hex"
}

# run MODE
run() {
	local mode=$1 pns p req sport pids=() c
	configs "$mode"
	e2e_start a "$NS_A"
	e2e_start b "$NS_B"
	e2e_wait_ready a
	e2e_wait_ready b
	for n in a b; do
		e2e_wait $n counters '.peers.alias_added >= 2' 10 ||
			fail "$mode: $n did not take the peer's port addresses: $(e2e_admin $n counters | jq -c .peers)"
	done
	e2e_capture_req "$mode" e2e_perf_start 6 -q 2
	sport=$REQ_SPORT req=$REQ_HEX

	# 1: the REQ again from each of A's port addresses, for 3 s.
	ip netns exec "$NS_A" "$SPOOF" "$A1" "$sport" "$B1" 4793 "$req" 30 100 &
	pids=($!)
	ip netns exec "$NS_A" "$SPOOF" "$A2" "$sport" "$B2" 4793 "$req" 30 100 &
	pids+=($!)
	# 2 (aead): the REQ again between the addresses it was sealed for, as captured.
	ip netns exec "$NS_A" "$SPOOF" "$FABRIC_IP_0" "$sport" "$FABRIC_IP_1" 4793 "$req" 10 100 &
	pids+=($!)
	# 3: a duplicate from A's own address, naming other port addresses.
	ip netns exec "$NS_A" "$SPOOF" "$FABRIC_IP_0" "$sport" "$FABRIC_IP_1" 4793 \
		"$(forge_ext "$req" "$mode")" 30 100 &
	pids+=($!)
	# 5: to the broadcast address, and to an address not B's at B's MAC.
	local plane bcast bmac other x0 x1
	plane=$(sed 's/-h0$/-p1/' <<<"$NS_A")
	bcast=$(ip -n "$plane" -j -4 addr show dev to1 |
		jq -r '.[0].addr_info[0] | "\(.local) \(.prefixlen)"' | {
		read -r ip len
		IFS=. read -r a b c d <<<"$ip"
		n=$(((a << 24 | b << 16 | c << 8 | d) | ((1 << (32 - len)) - 1)))
		echo "$((n >> 24 & 255)).$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))"
	})
	bmac=$(ip -n "$NS_B" -j link show dev p1 | jq -r '.[0].address')
	other=10.66.66.66	# on B's link as far as the plane knows, at B's MAC
	ip -n "$plane" route replace "$other/32" dev to1
	ip -n "$plane" neigh replace "$other" lladdr "$bmac" dev to1
	x0=$(e2e_admin b counters | jq -c '.xdp')
	ip netns exec "$plane" "$SPOOF" "$A1" "$sport" "$bcast" 4793 "$req" 10 10 || fail "spoof to $bcast"
	ip netns exec "$plane" "$SPOOF" "$A1" "$sport" "$other" 4793 "$req" 10 10 || fail "spoof to $other"
	wait "${pids[@]}" || fail "$mode: spoof_udp"
	e2e_perf_finish "$mode: write_bw under spoofed CONNECT_REQs"
	grep -q "verif" "$E2E_DIR/cli.txt" && cat "$E2E_DIR/cli.txt" | tail -3
	ok "$mode: a verified transfer survived 60 REQs replayed from A's port addresses, 10 from its own and 30 forged duplicates"

	x1=$(e2e_admin b counters | jq -c '.xdp')
	echo "b: xdp before $x0, after $x1"
	jq -e --argjson a "$x0" '.drop_not_our_mac - $a.drop_not_our_mac >= 10 and
		.drop_not_our_addr - $a.drop_not_our_addr >= 10' <<<"$x1" >/dev/null ||
		fail "$mode: frames to $bcast and $other were not dropped in XDP: $x0 -> $x1"
	ok "$mode: REQs to the broadcast address and to another address at B's MAC dropped in XDP"
	c=$(e2e_admin b counters | jq -c .peers)
	echo "b: peers $c"
	# alias_added 2: A's two, once; the forged duplicates announced nothing (item 3).
	jq -e '.alias_added == 2 and .alias_shared == 0 and .alias_refused == 0 and .alias_bad == 0' \
		<<<"$c" >/dev/null || fail "$mode: A's port addresses changed at B: $c"
	# B's QPs of A: still A's, from A's primary.
	e2e_admin b qps | jq -e --arg a "$FABRIC_IP_0" \
		'[.qps[] | select(.state == "connected")] | length >= 1 and all(.peer == $a)' \
		>/dev/null || fail "$mode: B's QPs: $(e2e_admin b qps | jq -c '[.qps[] | {state, peer}]')"
	ok "$mode: B still knows A by its address, its port addresses neither taken nor shared"
	if [ "$mode" = aead ]; then
		# 2: the seal covers the IP addresses: the 60 replays from A's port addresses
		# to B's (not the addresses A sealed the REQ for) and the 30 forged ones are
		# bad tags (before: the 60 opened, and only freshness refused them);
		# 6: a sealed REQ is taken once: the replays from A's own address are stale.
		# No peer added.
		c=$(e2e_admin b counters)
		echo "b: aead $(jq -c '.worker | with_entries(select(.key | startswith("aead_rx")))' <<<"$c")"
		jq -e '.worker.aead_rx_stale >= 1 and .worker.aead_rx_bad_tag >= 90 and
		       .peers.added == 1' <<<"$c" >/dev/null ||
			fail "aead: replayed REQs taken: $(jq -c '{w: .worker, p: .peers}' <<<"$c")"
		ok "aead: REQs replayed from other addresses and forged ones refused as bad tags, those from A's own as stale; no peer added"
	fi
	for n in a b; do
		e2e_stop $n
		[ "$E2E_RC" = 0 ] || fail "$mode: mrocd $n exited with $E2E_RC"
	done
}

run none
run token
run aead
echo "1 passed, 0 failed"
