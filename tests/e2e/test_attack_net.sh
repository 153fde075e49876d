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
#     and counted (`rx_bad_source`; loopback ones in XDP, `drop_loopback`),
#     nothing added.
#  1b. The REQ to 127.0.0.1 at B's MAC: dropped in XDP (`drop_loopback`);
#     before, it reached the engine.  (One "from" B's own address passes: it
#     is what a QP B connects to its own address sends, hairpinned by the
#     fabric; docs/PROTOCOL.md 11a.)
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
#  6. A's REQ for a service, captured while B had no listener for it, replayed
#     from 30,000 sources once B's application listens (not yet bound): each
#     takes a half-open entry, at most 8 a hash chain (the rest pushed out,
#     `cm_half_dropped`: before, a chain and a listener's list as long as the
#     table, walked by every REQ); then, under REQs from 3,000 sources and
#     QPNs, the real client connects and its WRITE lands.
# The transfer completes with every byte verified, and A stays B's only peer
# by its own address.
set -u
. "$(dirname "$0")/lib.sh"

e2e_spoof_fabric_up
EX=$BUILD/examples
for p in "$EX/write_server" "$EX/write_client"; do
	[ -x "$p" ] || skip "$p not built"
done
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

# 1: sources no host has (loopback ones dropped in XDP already: drop_loopback).
bad0=$(counter .worker.rx_bad_source)
lo0=$(counter .xdp.drop_loopback)
B6=$(ip -n "$NS_B" -j -6 addr show dev p1 scope global | jq -r '.[0].addr_info[0].local')
BLL=fe80::b1	# B's link-local address on p1 (added before mrocd started)
for s in 127.0.0.1 224.0.0.1 255.255.255.255 240.0.0.7 0.1.2.3; do
	spoof "$s" "$B1" 10
done
for s in ::1 ff02::1 fe80::66 "::ffff:$FABRIC_IP_0"; do
	spoof "$s" "$B6" 10
done
spoof fe80::66 "$BLL" 10 SPOOF_IF=to1
e2e_wait b counters ".worker.rx_bad_source >= $bad0 + 80 and .xdp.drop_loopback >= $lo0 + 20" 5 ||
	fail "REQs from no host's address not refused: rx_bad_source $bad0 -> $(counter .worker.rx_bad_source)," \
	     "drop_loopback $lo0 -> $(counter .xdp.drop_loopback), peers $(counter .peers)"
[ "$(counter .peers.added)" = "$added0" ] || fail "REQs from no host's address added peers: $(counter .peers)"
ok "100 REQs from loopback, multicast, broadcast, class E, 0/8, link-local and IPv4-mapped sources" \
	"dropped first (rx_bad_source $bad0 -> $(counter .worker.rx_bad_source), loopback in XDP:" \
	"drop_loopback $lo0 -> $(counter .xdp.drop_loopback)), no peer added"

# 1b: to loopback at our MAC.
lo0=$(counter .xdp.drop_loopback)
# To 127.0.0.1 at B's MAC: as a frame (a packet socket), the plane's kernel would keep it.
BMAC=$(ip -n "$NS_B" -j link show p1 | jq -r '.[0].address')
spoof "$A1" 127.0.0.1 10 SPOOF_VLAN=0 SPOOF_DMAC="$BMAC" SPOOF_IF=to1
e2e_wait b counters ".xdp.drop_loopback >= $lo0 + 10" 5 ||
	fail "REQs to 127.0.0.1 not dropped in XDP: $(counter .xdp)"
[ "$(counter .peers.added)" = "$added0" ] || fail "REQs to 127.0.0.1 added peers: $(counter .peers)"
ok "REQs to 127.0.0.1 at B's MAC dropped in XDP (drop_loopback $lo0 -> $(counter .xdp.drop_loopback))"

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

# 6: a flood against a listener not yet bound.  A's REQ for service 42, captured while B
# had no listener (refused then); B's application listens; the REQ replayed from 30,000
# sources (its QPN kept): each takes a half-open entry, but at most 8 entries share a hash
# chain, so each from the ninth on pushes one out (before: a chain as long as the table,
# walked by every REQ; every REQ also walked the listener's whole list).  Then, while
# REQs from as many sources and QPNs keep coming, the real client connects.
e2e_capture_req unbound env MROC_SOCKET="$E2E_DIR/a.ctl" ip netns exec "$NS_A" \
	timeout 20 "$EX/write_client" "$FABRIC_IP_1" 0x1
MROC_SOCKET=$E2E_DIR/b.ctl ip netns exec "$NS_B" timeout 60 "$EX/write_server" 40 \
	>"$E2E_DIR/ws.out" 2>&1 &
ws=$!
for _ in $(seq 100); do grep -q "^rkey 0x" "$E2E_DIR/ws.out" && break; sleep 0.1; done
rkey=$(awk '/^rkey/ { print $2 }' "$E2E_DIR/ws.out")
[ -n "$rkey" ] || fail "write_server printed no rkey: $(cat "$E2E_DIR/ws.out")"
half() { e2e_admin b counters | jq -c '.engine | {cm_half_open, cm_half_dropped}'; }
h0=$(half)
IV=0 sport=$REQ_SPORT req=$REQ_HEX spoof 10.200.0.0 "$B1" 30000 SPOOF_VARY=2
sleep 1
h1=$(half)
echo "b: half-open before the replay $h0, after $h1"
jq -e --argjson a "$h0" '.cm_half_open - $a.cm_half_open >= 100 and
	(.cm_half_dropped - $a.cm_half_dropped) >= (.cm_half_open - $a.cm_half_open) - 8' <<<"$h1" >/dev/null ||
	fail "one REQ replayed from 30,000 sources: want >= 100 entries, all but 8 of them pushed out: $h0 -> $h1"
IV=1 sport=$REQ_SPORT req=$REQ_HEX spoof 10.200.0.0 "$B1" 3000 SPOOF_VARY=1 &
flood=$!
# The client starts once the flood holds 100 entries (its REQs stop taking any once the
# client bound the listener: they are told BUSY then).
e2e_wait b counters ".engine.cm_half_open >= $(jq .cm_half_open <<<"$h1") + 100" 20 ||
	fail "the flood from as many QPNs took no half-open entries: $h1 -> $(half)"
out=$(MROC_SOCKET=$E2E_DIR/a.ctl ip netns exec "$NS_A" timeout 40 "$EX/write_client" "$FABRIC_IP_1" \
	"$rkey" 2>&1) || fail "the real client during the flood: $out; b: $(half)"
[ "$out" = "write: success" ] || fail "the real client during the flood: $out"
wait $flood || fail "spoof_udp (the flood during the real client)"
wait $ws || fail "write_server: $(cat "$E2E_DIR/ws.out")"
grep -qx "received: hello over MetaRoCE" "$E2E_DIR/ws.out" || fail "write_server: $(cat "$E2E_DIR/ws.out")"
h2=$(half)
echo "b: half-open after the flood from as many QPNs: $h2"
ok "A's REQ replayed from 30,000 sources against a listener not yet bound: half-open $h0 -> $h1" \
	"(each chain holds 8, the rest pushed out); then, under REQs from 3,000 sources and QPNs" \
	"($h2), the real client connected and its WRITE landed"

# A is still B's peer by its own address, its port addresses neither taken nor shared.
c=$(counter .peers)
jq -e '.alias_shared == 0 and .alias_refused == 0' <<<"$c" >/dev/null || fail "A's port addresses changed at B: $c"
for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
