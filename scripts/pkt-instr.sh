#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Instructions per data packet of mrocd's user-space packet work without the
# kernel and the rings (build/pkt-cost under callgrind, issue #22): the same
# on any load, so a change to the engine, the tag or frame.c shows as a
# number.  For each security mode and payload, the engine alone ("bare") and
# with the AF_XDP backend's framing, parsing and ICRC ("frames"), then the
# top functions of the last run, instructions per data packet.
#
#   scripts/pkt-instr.sh [PACKETS]        default 50000 (plus a quarter of warm-up, not counted)
#   env: PAYLOADS ("1024 3386"), SEC_MODES ("none token"), TOP (15), BUILD (build)
set -u
N=${1:-50000}
PAYLOADS=${PAYLOADS:-1024 3386}
SEC_MODES=${SEC_MODES:-none token}
TOP=${TOP:-15}
BUILD=${BUILD:-$(dirname "$0")/../build}
BIN=$BUILD/pkt-cost
command -v valgrind >/dev/null || { echo "needs valgrind"; exit 77; }
[ -x "$BIN" ] || { echo "$BIN not built (make)"; exit 77; }
OUT=$(mktemp -d /tmp/pkt-instr.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

# run PAYLOAD SEC FRAMING: "instructions_per_packet acks_per_packet", callgrind output in $OUT/cg
run() {
	local j ir
	j=$(valgrind --tool=callgrind --callgrind-out-file="$OUT/cg" --toggle-collect=pkt_loop \
		"$BIN" "$N" "$1" "$2" "$3" 2>"$OUT/vg.err") || { cat "$OUT/vg.err" >&2; echo "- -"; return; }
	echo "$j" >"$OUT/last.json"
	ir=$(callgrind_annotate "$OUT/cg" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
	jq -r --argjson ir "${ir:-0}" '"\($ir / .data_pkts | round) \(.acks / .data_pkts * 1000 | round / 1000)"' <<<"$j"
}

echo "| payload B | security | engine alone, Ir per data packet | with framing and ICRC | framing's share | ACKs per data packet |"
echo "|---|---|---|---|---|---|"
for p in $PAYLOADS; do
	for s in $SEC_MODES; do
		read -r bare _ <<<"$(run "$p" "$s" bare)"
		read -r fr acks <<<"$(run "$p" "$s" frames)"
		echo "| $p | $s | $bare | $fr | $((fr - bare)) | $acks |"
	done
done
echo
echo "Top functions of the last run (payload ${p}, ${s}, with framing), instructions per data packet:"
d=$(jq -r .data_pkts "$OUT/last.json")
callgrind_annotate --inclusive=no "$OUT/cg" 2>/dev/null | awk -v d="$d" -v top="$TOP" '
	/^ *[0-9,]+ .*:/ && n < top { ir = $1; gsub(",", "", ir); $1 = ""; printf "  %6.0f %s\n", ir / d, $0; n++ }'
echo
echo "valgrind $(valgrind --version | sed 's/valgrind-//'), $N data packets per run (+ $((N / 4)) warm-up, not counted), $(date -u +%Y-%m-%d)"
