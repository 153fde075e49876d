#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build/xsk-baseline, the bare AF_XDP pair scripts/bench-net.sh measures mrocd
# against: a TX -> RX second over veth delivers frames of exactly the length of
# a MetaRoCE data packet with that payload (42 B of Ethernet/IPv4/UDP, 60 B of
# MetaRoCE headers, the payload, the 4-byte ICRC), steered by mrocd's own XDP
# program, also when each is sent as two descriptors (--frags 2) or read whole by the
# receiver (--read), and leaves no program behind.
set -u
. "$(dirname "$0")/lib.sh"
BASE=$BUILD/xsk-baseline

e2e_require
[ -x "$BASE" ] || skip "$BASE not built"
e2e_setup_pair
MAC_B=$(ip -n "$NS_B" -j link show "$IF_B" | jq -r '.[0].address')
# pair WHAT RX_ARGS TX_ARGS: a TX -> RX second with those extra arguments; tx.log and rx.log
# hold each side's JSON line.
pair() {
	local rx
	rm -f "$E2E_DIR/credit"
	# shellcheck disable=SC2086
	ip netns exec "$NS_B" "$BASE" rx -i "$IF_B" -f 2048 -D 1 --credit "$E2E_DIR/credit" $2 \
		>"$E2E_DIR/rx.log" 2>"$E2E_DIR/rx.err" &
	rx=$!
	E2E_PIDS+=($rx)
	sleep 0.5
	# shellcheck disable=SC2086
	ip netns exec "$NS_A" "$BASE" tx -i "$IF_A" -f 2048 -s 1024 -D 2 --credit "$E2E_DIR/credit" \
		--src "$IP_A" --dst "$IP_B" --dmac "$MAC_B" $3 >"$E2E_DIR/tx.log" 2>"$E2E_DIR/tx.err" ||
		fail "tx$1: $(cat "$E2E_DIR/tx.log" "$E2E_DIR/tx.err")"
	wait $rx || fail "rx$1: $(cat "$E2E_DIR/rx.log" "$E2E_DIR/rx.err")"
}
pair "" "" ""
jq -e '.role == "tx" and .pkts > 0 and .frame_bytes == 1130 and .mode == "native"' "$E2E_DIR/tx.log" >/dev/null ||
	fail "tx result: $(cat "$E2E_DIR/tx.log")"
# The credit keeps the sender within a ring of the receiver: nothing is dropped for want of frames.
jq -e '.role == "rx" and .pkts > 0 and .frame_bytes == 1130 and .zero_copy == false and .xsk_rx_dropped == 0 and .read == false' \
	"$E2E_DIR/rx.log" >/dev/null || fail "rx result: $(cat "$E2E_DIR/rx.log")"
ok "bare pair: $(jq -r '"\(.pkts) frames of \(.frame_bytes) B received"' "$E2E_DIR/rx.log")"
# --frags 2: each packet as two descriptors (headers, then payload from another frame,
# XDP_USE_SG): the receiver gets the same whole frames, steered by the same program.
pair " --frags 2" "" "--frags 2"
jq -e '.frags == 2 and .pkts > 0' "$E2E_DIR/tx.log" >/dev/null || fail "tx --frags 2 result: $(cat "$E2E_DIR/tx.log")"
jq -e '.pkts > 0 and .frame_bytes == 1130 and .xsk_rx_dropped == 0' "$E2E_DIR/rx.log" >/dev/null ||
	fail "rx result with a --frags 2 sender: $(cat "$E2E_DIR/rx.log")"
ok "--frags 2: $(jq -r '"\(.pkts) frames of \(.frame_bytes) B received"' "$E2E_DIR/rx.log")"
# --read: the receiver reads every frame whole, as mrocd's does; both ends take the option
# (scripts/pkt-ab.sh gives a bare variant's arguments to both), only the receiver reads.
pair " --read" "--read" "--read"
jq -e '.read == false and .pkts > 0' "$E2E_DIR/tx.log" >/dev/null || fail "tx --read result: $(cat "$E2E_DIR/tx.log")"
jq -e '.read == true and .pkts > 0 and .frame_bytes == 1130 and .xsk_rx_dropped == 0' "$E2E_DIR/rx.log" >/dev/null ||
	fail "rx --read result: $(cat "$E2E_DIR/rx.log")"
ok "--read: $(jq -r '"\(.pkts) frames of \(.frame_bytes) B received and read"' "$E2E_DIR/rx.log")"
for ns in "$NS_A" "$NS_B"; do
	ip -n "$ns" link show | grep -q xdp && fail "an XDP program was left in $ns"
done
ok "no XDP program left behind"
"$BASE" rx 2>/dev/null; [ $? = 2 ] || fail "no interface: expected usage error (exit 2)"
ok "bad usage exits 2"
