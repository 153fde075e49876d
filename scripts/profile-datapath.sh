#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where the data path's cycles go: two mrocd on AF_XDP over veth with the
# settings of scripts/bench-net.sh (native XDP, copy mode, link MTU 3506,
# MetaRoCE payload the largest the link leaves room for in the default security
# mode, 3386; 4 KiB frames), mroc-perf write_bw of 1 MiB messages
# in completion-channel mode, `perf record -g` on both daemons for 4 s.
# Prints the kernel/user split and the top symbols of each side, writes them
# to OUTDIR/profile-LABEL.csv (side, symbol, percent) and draws them as bars
# (OUTDIR/profile-LABEL.png, gnuplot).  Root; needs linux-perf.
#
#   scripts/profile-datapath.sh [OUTDIR [LABEL]]     default /tmp/mroc-profile, "now"
#   BUILD=... picks the binaries (e.g. an older build, for a before/after pair);
#   PLOT_ONLY=1 redraws OUTDIR/profile-LABEL.png from its CSV.
set -u
OUT=${1:-/tmp/mroc-profile}
LABEL=${2:-now}
TOP=${TOP:-12}
plot_bars() {
	if command -v gnuplot >/dev/null; then
		for side in sender receiver; do
			awk -F, -v s="$side" '$1 == s { print NR, "\"" $2 "\"", $3 }' \
				"$OUT/profile-$LABEL.csv" >"$OUT/$side-$LABEL.dat"
		done
		gnuplot <<-GP
	set terminal pngcairo size 1400,560 font ",10" noenhanced
	set output "$OUT/profile-$LABEL.png"
	set multiplot layout 1,2 title "mrocd per-side profile ($LABEL): top $TOP symbols, % of samples ([k] = kernel)"
	set style fill solid 0.7
	set xlabel "% of samples"
	set yrange [:] reverse
	set xrange [0:*]
	unset key
	set grid x
	do for [side in "sender receiver"] {
		set title side
		plot "$OUT/".side."-$LABEL.dat" using (\$3/2):0:(\$3/2):(0.4):yticlabels(2) with boxxyerror lc rgb "#4477aa"
	}
	unset multiplot
	GP
		echo "bars: $OUT/profile-$LABEL.png"
	fi
}
if [ -n "${PLOT_ONLY:-}" ]; then
	plot_bars
	exit 0
fi
. "$(dirname "$0")/../tests/e2e/lib.sh"
e2e_require
command -v perf >/dev/null || skip "needs perf (apt-get install linux-perf)"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
e2e_setup_pair
ip -n "$NS_A" link set "$IF_A" mtu 3506
ip -n "$NS_B" link set "$IF_B" mtu 3506
e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
sed -i '/busy_poll_us/d; s/log_level = "debug"/log_level = "warning"/; s/umem_frames = 4096;/umem_frames = 8192; frame_size = 4096; mtu = '"$(e2e_max_payload 3506)"';/; s/keepalive_ms = 100;/keepalive_ms = 1000;/; s/rto_init_us = 20000;/rto_init_us = 20000; rto_min_us = 5000;/' \
	"$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b
ip netns exec "$NS_B" timeout 30 "$BUILD/mroc-perf" write_bw -S "$E2E_DIR/b.ctl" --sleep -s 1M -D 7 >/dev/null 2>&1 &
srv=$!
sleep 0.3
ip netns exec "$NS_A" timeout 30 "$BUILD/mroc-perf" write_bw -S "$E2E_DIR/a.ctl" --sleep -s 1M -D 7 "$IP_B" >"$OUT/perf-$LABEL.txt" 2>&1 &
cli=$!
sleep 1.5
perf record -F 2000 -g -o "$OUT/sender-$LABEL.data" -p "$PID_a" -- sleep 4 >/dev/null 2>&1 &
rec=$!
perf record -F 2000 -g -o "$OUT/receiver-$LABEL.data" -p "$PID_b" -- sleep 4 >/dev/null 2>&1
wait $rec $cli $srv
echo "side,symbol,percent" >"$OUT/profile-$LABEL.csv"
for side in sender receiver; do
	echo "== $side mrocd: by binary"
	perf report -i "$OUT/$side-$LABEL.data" --no-children --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -4
	echo "== $side mrocd: top symbols"
	perf report -i "$OUT/$side-$LABEL.data" --no-children --sort symbol --stdio 2>/dev/null |
		grep -E '^ +[0-9]' | head -"$TOP" | tee "$OUT/$side.top" |
		awk -v s="$side" '{ p = $1; sub("%", "", p); sym = $3; if ($2 == "[k]") sym = sym " [k]";
			printf "%s,%s,%s\n", s, sym, p }' >>"$OUT/profile-$LABEL.csv"
	cat "$OUT/$side.top"
done
echo "== mroc-perf during the profile"
grep -A1 '#bytes' "$OUT/perf-$LABEL.txt"
plot_bars
