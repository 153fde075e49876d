#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# #24, an attacker's second look (docs/PROTOCOL.md 11a): what an outside tool
# tries after test_trust_net.sh, in the default mode ("token": a CONNECT_REQ
# is untagged and makes state there as in "none"),
# on hosts with a port per plane and an address per port, one worker each.
# While a verified write_bw runs from A to B, from B's plane-1 link:
#  1. A's CONNECT_REQ from addresses no host has: IPv4 loopback, multicast,
#     broadcast, class E, 0/8; IPv6 loopback, multicast, link-local (to B's
#     global and to its link-local address) and IPv4-mapped.  Before, each
#     source became a peer (`peers.added`) and was answered; now dropped first
#     and counted (`rx_bad_source`), nothing added.
#  2. The REQ to multicast groups (224.0.0.1, ff02::1) at their group MACs:
#     dropped in XDP (`drop_not_our_mac`).
#  3. The REQ in two IPv4 fragments: the first dropped in XDP
#     (`drop_ip_fragment`), the second left to the kernel, which has nothing
#     to join it with; nothing reaches the engine.
#  4. The REQ cut inside its extension, and with an extension length over
#     the limit: `rx_malformed` (short, length), nothing else.
#  5. A flood of REQs for the transfer's service at the rate one raw socket
#     sends them, each from another source address and QPN: the peer table
#     and the half-open table stay bounded (evicting the flood's entries),
#     mrocd's memory does not grow with it, no neighbour entry is made for an
#     off-link source (before: one each, until the host's table overflowed),
#     and a new transfer connects afterwards.
# The transfer completes with every byte verified, and A stays B's only peer
# by its own address.
set -u
. "$(dirname "$0")/lib.sh"

e2e_spoof_fabric_up
PLANE=$(sed 's/-h0$/-p1/' <<<"$NS_A")
# workers = 1: two workers' hand-offs wait for the 2-core scheduler (test_port_addrs.sh).
e2e_port_addr_configs 's/busy_poll_us = 20;/busy_poll_us = 20; workers = 1;/'
ip -n "$NS_B" addr add fe80::b1/64 dev p1 nodad
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b
e2e_wait b counters '.peers.alias_added >= 2' 10 ||
	fail "b did not take A's port addresses: $(e2e_admin b counters | jq -c .peers)"

# counter JQ: B's counter (a jq path into `counters`).
counter() { e2e_admin b counters | jq "$1"; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$PID_b/status"; }

e2e_capture_req attack e2e_perf_start 10 -q 2
sport=$REQ_SPORT req=$REQ_HEX
added0=$(counter .peers.added)
rss0=$(rss_kb)

# spoof FROM TO COUNT [ENV...]: the REQ from FROM to TO, sent from B's plane-1 link.
spoof() {
	env "${@:4}" ip netns exec "$PLANE" "$SPOOF" "$1" "$sport" "$2" 4793 "$req" "$3" "${IV:-1}" ||
		fail "spoof_udp $1 -> $2"
}

# 1: sources no host has.
bad0=$(counter .worker.rx_bad_source)
B6=$(ip -n "$NS_B" -j -6 addr show dev p1 scope global | jq -r '.[0].addr_info[0].local')
BLL=fe80::b1	# B's link-local address on p1 (added before mrocd started)
for s in 127.0.0.1 224.0.0.1 255.255.255.255 240.0.0.7 0.1.2.3; do
	spoof "$s" "$B1" 10
done
for s in ::1 ff02::1 fe80::66 "::ffff:$FABRIC_IP_0"; do
	spoof "$s" "$B6" 10
done
spoof fe80::66 "$BLL" 10 SPOOF_IF=to1
e2e_wait b counters ".worker.rx_bad_source >= $bad0 + 100" 5 ||
	fail "REQs from no host's address not refused: rx_bad_source $bad0 -> $(counter .worker.rx_bad_source)," \
	     "peers $(counter .peers)"
[ "$(counter .peers.added)" = "$added0" ] || fail "REQs from no host's address added peers: $(counter .peers)"
ok "100 REQs from loopback, multicast, broadcast, class E, 0/8, link-local and IPv4-mapped sources" \
	"dropped first (rx_bad_source $bad0 -> $(counter .worker.rx_bad_source)), no peer added"

# 2: to groups, at their group MACs.
x0=$(counter .xdp.drop_not_our_mac)
ip -n "$PLANE" route replace 224.0.0.0/4 dev to1
spoof "$A1" 224.0.0.1 10
spoof "fd6d:1::66" ff02::1 10 SPOOF_IF=to1
e2e_wait b counters ".xdp.drop_not_our_mac >= $x0 + 20" 5 ||
	fail "REQs to 224.0.0.1 and ff02::1 not dropped in XDP: $(counter .xdp)"
ok "REQs to 224.0.0.1 and ff02::1 dropped in XDP (drop_not_our_mac $x0 -> $(counter .xdp.drop_not_our_mac))"

# 3: fragments.
f0=$(counter .xdp.drop_ip_fragment) r0=$(counter .engine.rx_pkts)
spoof 10.77.0.1 "$B1" 20 SPOOF_FRAG=1
e2e_wait b counters ".xdp.drop_ip_fragment >= $f0 + 20" 5 ||
	fail "first fragments of REQs not dropped in XDP: $(counter .xdp)"
[ "$(counter .peers.added)" = "$added0" ] || fail "a fragmented REQ added a peer: $(counter .peers)"
ok "20 REQs in two fragments: the first ones dropped in XDP (drop_ip_fragment $f0 ->" \
	"$(counter .xdp.drop_ip_fragment)), none made a peer"

# 4: the extension cut short, and its length over the limit (offset 16 + 24 + 16: after the key).
m0=$(counter '.engine.rx_malformed')
cut=${req:0:$((${#req} - 2 * 14))}00000000
long=${req:0:$((2 * 56))}ffff${req:$((2 * 58))}
req=$cut spoof "$FABRIC_IP_0" "$FABRIC_IP_1" 10
req=$long spoof "$FABRIC_IP_0" "$FABRIC_IP_1" 10
e2e_wait b counters ".engine.rx_malformed >= $m0 + 20" 5 ||
	fail "REQs with a cut or too long extension not counted malformed: $m0 -> $(counter .engine.rx_malformed)," \
	     "$(counter .engine.rx_malformed_by_reason)"
ok "REQs with their extension cut short or its length over the limit: rx_malformed $m0 ->" \
	"$(counter .engine.rx_malformed) $(e2e_admin b counters | jq -c .engine.rx_malformed_by_reason)"

# 5: a flood for the transfer's service from as many sources.
c0=$(e2e_admin b counters | jq -c '{peers: .peers, half: (.engine | with_entries(select(.key | startswith("cm_half"))))}')
IV=0 spoof 10.200.0.0 "$B1" 30000 SPOOF_VARY=1
sleep 1
c1=$(e2e_admin b counters | jq -c '{peers: .peers, half: (.engine | with_entries(select(.key | startswith("cm_half"))))}')
echo "b before the flood: $c0"
echo "b after the flood:  $c1"
kill -0 "$PID_b" || fail "b died in the flood"
e2e_perf_finish "write_bw under the attacks"
grep -q "verif" "$E2E_DIR/cli.txt" && tail -3 "$E2E_DIR/cli.txt"
ok "a verified transfer survived the attacks"
# Each off-link source was resolved as if on p1's link (IPv4 `route get SRC oif p1`):
# the host's neighbour table filled up (ENOBUFS for every program), an ARP broadcast each.
neigh=$(ip -n "$NS_B" -4 neigh show | grep -c '^10\.200\.')
echo "b: $neigh neighbour entries for the flood's sources"
[ "$neigh" -lt 10 ] || fail "the flood's off-link sources got $neigh neighbour entries at B"
known=$(e2e_admin b status | jq .peers_known)
[ "$known" -le 1024 ] || fail "the flood grew the peer table past its size: $known"
rss1=$(rss_kb)
echo "b: peers_known $known after 30,000 REQs from as many sources; RSS $rss0 -> $rss1 kB"
[ $((rss1 - rss0)) -lt 65536 ] || fail "mrocd b grew by $((rss1 - rss0)) kB in the flood"
e2e_perf_start 2
e2e_perf_finish "a new transfer after the flood"
ok "after 30,000 REQs from as many sources: the tables bounded (peers_known $known), RSS +$((rss1 - rss0)) kB," \
	"a new verified transfer connects"

# A is still B's peer by its own address, its port addresses neither taken nor shared.
c=$(counter .peers)
jq -e '.alias_shared == 0 and .alias_refused == 0' <<<"$c" >/dev/null || fail "A's port addresses changed at B: $c"
for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
