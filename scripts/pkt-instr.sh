#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Instructions per data packet of mrocd's user-space packet work without the
# kernel and the rings (build/pkt-cost under callgrind, issue #22): the same
# on any load, so a change to the engine, the tag or frame.c shows as a
# number.  For each security mode and payload, the engine alone ("bare") and
# with the AF_XDP backend's framing, parsing and ICRC ("frames"), then the
# top functions of the last run, instructions per data packet.  With framing,
# each end's share too: the sender's (its data out, the ACKs in) and the
# receiver's (the data in, its ACKs out); the rest is completions and timers.
# RX_BATCH: the receiver sends its ACKs after each this many packets of a
# batch (pkt-cost --rx-batch), as mrocd after each receive batch: 64 (the
# sender's whole batch) gives the ACKs of a loaded machine, ~0.06 a data
# packet; 7, the quiet machine's ~7-packet receive batches and ~0.22 ACKs.
# ACK_EVERY: the engines' transport.ack_every (pkt-cost --ack-every; unset:
# the engine's default), to count what another ACK cadence costs.
# ACK_BATCH: the sender takes the ACKs this many at a time (pkt-cost
# --ack-batch; 1: as they come): mrocd's quiet sender reads tens of them a
# receive batch, which its "token" tags check together (engine_rx_prepare).
# MERGE_ACKS=1: the engines' merge_acks (pkt-cost --merge-acks; mrocd's
# transport.merge_acks): a path's ACKs in one such batch applied as its newest.
#
#   scripts/pkt-instr.sh [PACKETS]        default 50000 (plus a quarter of warm-up, not counted)
#   env: PAYLOADS ("1024 3386"), SEC_MODES ("none token"), TOP (15), BUILD (build), RX_BATCH (64),
#        ACK_EVERY (the engine's), ACK_BATCH (pkt-cost's: 1), MERGE_ACKS (off)
set -u
N=${1:-50000}
PAYLOADS=${PAYLOADS:-1024 3386}
SEC_MODES=${SEC_MODES:-none token}
TOP=${TOP:-15}
RX_BATCH=${RX_BATCH:-64}
ACK_EVERY=${ACK_EVERY:-}
ACK_BATCH=${ACK_BATCH:-}
MERGE_ACKS=${MERGE_ACKS:-}
BUILD=${BUILD:-$(dirname "$0")/../build}
BIN=$BUILD/pkt-cost
command -v valgrind >/dev/null || { echo "needs valgrind"; exit 77; }
[ -x "$BIN" ] || { echo "$BIN not built (make)"; exit 77; }
OUT=$(mktemp -d /tmp/pkt-instr.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

# run PAYLOAD SEC FRAMING: "instructions_per_packet acks_per_packet sender's receiver's" (each
# per data packet), callgrind output in $OUT/cg
run() {
	local j ir snd rcv
	j=$(valgrind --tool=callgrind --callgrind-out-file="$OUT/cg" --toggle-collect=pkt_loop \
		"$BIN" --rx-batch "$RX_BATCH" ${ACK_EVERY:+--ack-every "$ACK_EVERY"} ${ACK_BATCH:+--ack-batch "$ACK_BATCH"} \
		${MERGE_ACKS:+--merge-acks} \
		"$N" "$1" "$2" "$3" 2>"$OUT/vg.err") ||
		{ cat "$OUT/vg.err" >&2; echo "- - - -"; return; }
	echo "$j" >"$OUT/last.json"
	read -r ir snd rcv < <(callgrind_annotate --inclusive=yes "$OUT/cg" 2>/dev/null | awk '
		{ v = $1; gsub(",", "", v) }
		/PROGRAM TOTALS/ { t = v }
		/pkt-cost\.c:sender_(tx|rx) \[/ { s += v }
		/pkt-cost\.c:receiver_(tx|rx) \[/ { r += v }
		END { print t + 0, s + 0, r + 0 }')
	jq -r --argjson ir "${ir:-0}" --argjson s "${snd:-0}" --argjson r "${rcv:-0}" '
		"\($ir / .data_pkts | round) \(.acks / .data_pkts * 1000 | round / 1000) \($s / .data_pkts | round) \($r / .data_pkts | round)"' <<<"$j"
}

echo "| payload B | security | engine alone, Ir per data packet | with framing and ICRC | framing's share | sender's | receiver's | ACKs per data packet |"
echo "|---|---|---|---|---|---|---|---|"
for p in $PAYLOADS; do
	for s in $SEC_MODES; do
		read -r bare _ <<<"$(run "$p" "$s" bare)"
		read -r fr acks snd rcv <<<"$(run "$p" "$s" frames)"
		echo "| $p | $s | $bare | $fr | $((fr - bare)) | $snd | $rcv | $acks |"
	done
done
echo
echo "Top functions of the last run (payload ${p}, ${s}, with framing), instructions per data packet:"
d=$(jq -r .data_pkts "$OUT/last.json")
callgrind_annotate --inclusive=no "$OUT/cg" 2>/dev/null | awk -v d="$d" -v top="$TOP" '
	/^ *[0-9,]+ .*:/ && n < top { ir = $1; gsub(",", "", ir); $1 = ""; printf "  %6.0f %s\n", ir / d, $0; n++ }'
echo
echo "valgrind $(valgrind --version | sed 's/valgrind-//'), $N data packets per run (+ $((N / 4)) warm-up, not counted), receiver's ACKs after each $RX_BATCH packets${ACK_EVERY:+, ack_every $ACK_EVERY}${ACK_BATCH:+, the sender taking ACKs $ACK_BATCH at a time}${MERGE_ACKS:+, merge_acks}, $(date -u +%Y-%m-%d)"
