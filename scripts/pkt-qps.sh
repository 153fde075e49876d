#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The engine's per-packet work at many QPs, counted (issue #22): build/pkt-cost
# with --qps N under callgrind's cache model, so the figures are the same on
# any load.  For each QP count: instructions, D1 misses and LL misses per
# data packet, in total and without the payload copies (memcpy: the copy
# misses at every QP count, what grows with QPs is the per-QP state), and
# ACK frames per data packet; then the functions with the most LL misses of
# the last count.
#
#   scripts/pkt-qps.sh [PACKETS]          default 50000 (plus a quarter of warm-up, not counted)
#   env: QPS ("1 256 4000"), SEEDS ("0 1 2": min / median / max over the engines' seeds),
#        PEER_WINDOW (512, mrocd's), WR (65536, bench-scale's), PAYLOAD (1024), SEC (token),
#        TOP (12), BUILD (build)
#
# The cache model is fixed (not the host's), so runs on other machines
# compare: D1 48 KiB 12-way, LL 1 MiB 16-way (a Zen 4/5 core's L1D and L2).
set -u
N=${1:-50000}
QPS=${QPS:-1 256 4000}
SEEDS=${SEEDS:-0 1 2}
PEER_WINDOW=${PEER_WINDOW:-512}
WR=${WR:-65536}
PAYLOAD=${PAYLOAD:-1024}
SEC=${SEC:-token}
TOP=${TOP:-12}
BUILD=${BUILD:-$(dirname "$0")/../build}
BIN=$BUILD/pkt-cost
command -v valgrind >/dev/null || { echo "needs valgrind"; exit 77; }
command -v jq >/dev/null || { echo "needs jq"; exit 77; }
[ -x "$BIN" ] || { echo "$BIN not built (make)"; exit 77; }
OUT=$(mktemp -d /tmp/pkt-qps.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
CACHE="--cache-sim=yes --I1=32768,8,64 --D1=49152,12,64 --LL=1048576,16,64"

# awk: a callgrind_annotate row's counts into val[] (by column: col[] from "Events recorded"),
# skipping its "(12.3%)" shares; returns the index of the first field after them (the name).
COUNTS='
	function counts(   i, v, k) {
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^\(/ || $i ~ /%\)$/) continue
			v = $i; gsub(",", "", v); if (v == ".") v = 0
			if (v !~ /^[0-9]+$/) break
			val[++k] = v
		}
		return i
	}'

# The event totals of a callgrind file, one function (awk regex) or all: "Ir D1 LL".
totals() {
	callgrind_annotate --auto=no --inclusive=no "$1" 2>/dev/null | awk -v fn="$2" "$COUNTS"'
		/Events recorded:/ { for (i = 3; i <= NF; i++) col[$i] = i - 2 }
		(fn == "" && /PROGRAM TOTALS/) || (fn != "" && $0 ~ fn && /^ *[0-9,]+ /) {
			counts()
			ir += val[col["Ir"]]
			d1 += val[col["D1mr"]] + val[col["D1mw"]]
			ll += val[col["DLmr"]] + val[col["DLmw"]]
		}
		END { printf "%d %d %d\n", ir, d1, ll }'
}

# min/median/max of the values on stdin, one a line
mmm() { sort -g | awk '{ v[NR] = $1 } END { printf "%s / %s / %s", v[1], v[int((NR + 1) / 2)], v[NR] }'; }

echo "| QPs | Ir / data pkt | D1 misses / pkt | LL misses / pkt | D1 / pkt, no copy | LL / pkt, no copy | ACK frames / data pkt |"
echo "|---|---|---|---|---|---|---|"
for q in $QPS; do
	: >"$OUT/rows"
	for seed in $SEEDS; do
		if ! j=$(nice -n 10 valgrind --tool=callgrind $CACHE --callgrind-out-file="$OUT/cg.$q" \
			--toggle-collect=pkt_loop "$BIN" --qps "$q" --peer-window "$PEER_WINDOW" --wr "$WR" \
			--seed "$seed" "$N" "$PAYLOAD" "$SEC" 2>"$OUT/vg.err"); then
			cat "$OUT/vg.err" >&2
			continue
		fi
		echo "$j" >"$OUT/last.json"
		d=$(jq -r .data_pkts <<<"$j")
		read -r ir d1 ll <<<"$(totals "$OUT/cg.$q" "")"
		read -r _ cd1 cll <<<"$(totals "$OUT/cg.$q" "memcpy|memmove")"
		awk -v d="$d" -v ir="$ir" -v d1="$d1" -v ll="$ll" -v cd1="$cd1" -v cll="$cll" \
			-v a="$(jq -r .acks <<<"$j")" 'BEGIN {
			printf "%.0f %.2f %.2f %.2f %.2f %.3f\n", ir / d, d1 / d, ll / d, (d1 - cd1) / d,
				(ll - cll) / d, a / d }' >>"$OUT/rows"
	done
	if [ ! -s "$OUT/rows" ]; then
		echo "| $q | failed | | | | | |"
		continue
	fi
	row="| $q"
	for c in 1 2 3 4 5 6; do
		row="$row | $(awk -v c=$c '{ print $c }' "$OUT/rows" | mmm)"
	done
	echo "$row |"
	last=$q
done
echo
echo "Functions with the most LL misses at $last QPs (the last seed), per data packet (Ir, D1 misses, LL misses):"
d=$(jq -r .data_pkts "$OUT/last.json")
callgrind_annotate --auto=no --inclusive=no --sort=DLmr,DLmw "$OUT/cg.$last" 2>/dev/null |
	awk -v d="$d" -v top="$TOP" "$COUNTS"'
	/Events recorded:/ { for (i = 3; i <= NF; i++) col[$i] = i - 2 }
	/^ *[0-9,.]+ .*:/ && !/PROGRAM TOTALS/ && n < top {
		name = $counts()
		printf "  %6.1f %6.2f %6.2f  %s\n", val[col["Ir"]] / d, (val[col["D1mr"]] + val[col["D1mw"]]) / d,
			(val[col["DLmr"]] + val[col["DLmw"]]) / d, name
		n++
	}'
echo
echo "valgrind $(valgrind --version | sed 's/valgrind-//'), $N data packets per run (+ $((N / 4)) warm-up," \
	"not counted), payload $PAYLOAD, $SEC, WRITEs of $WR B, peer window $PEER_WINDOW, seeds $SEEDS," \
	"$(date -u +%Y-%m-%d)"
