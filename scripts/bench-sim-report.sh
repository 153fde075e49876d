#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Tables and plots from scripts/bench-sim.sh's CSVs:
#   scripts/bench-sim-report.sh [DIR]     (DIR: docs/perf)
# Writes DIR/cluster-tables.md (markdown, also printed) and DIR/cluster-*.png
# with their gnuplot scripts DIR/cluster-*.gp.  An experiment whose CSV is
# missing is skipped.
#
# CSV columns (mroc-sim cluster --csv): 1 tag, 2 op, 3 transport, 4 hosts,
# 5 planes, 6 spines, 7 placement, 8 loss, 9 hints, 10 size, 11 time_us,
# 12 algbw_GBps, 13 busbw_GBps, 14 delta_pct, 15 done, 16 retx, 17 lost, 18 rto,
# 19 repath, 20 ce, 21 tx_pkts, 22 drop_tail, 23 drop_random, 24 drop_blackhole,
# 25 maxq_core, 26 maxq_down, 27 imbalance, 28 jain, 29 flow_min_us,
# 30 flow_max_us, 31 events, 32 wall_s, 33 seed
set -euo pipefail

DIR=${1:-$(cd "$(dirname "$0")/.." && pwd)/docs/perf}
MD=$DIR/cluster-tables.md
: > "$MD"

out() { tee -a "$MD"; }
# Keys of array a, numerically sorted, into d[1..n]; returns n (mawk has no asorti).
NSORT='function nsort(a, d,   k, n, i, j, t) { n = 0; for (k in a) d[++n] = k + 0
	for (i = 2; i <= n; i++) for (j = i; j > 1 && d[j - 1] > d[j]; j--) { t = d[j]; d[j] = d[j - 1]; d[j - 1] = t }
	return n }'

have() { [ -s "$DIR/cluster-$1.csv" ]; }
plot() {	# plot NAME: run DIR/cluster-NAME.gp if gnuplot is there
	if command -v gnuplot >/dev/null; then
		(cd "$DIR" && gnuplot "cluster-$1.gp")
	else
		echo "(gnuplot missing: cluster-$1.png not drawn)" >&2
	fi
}

# ---- loss -----------------------------------------------------------------------

if have loss; then
	awk -F, "$NSORT"'
		NR > 1 { g[$3, $8] = $15 ? $12 * 8 : 0; if ($8 == 0) base[$3] = $12 * 8;
			  r[$3, $8] = $16; losses[$8] = 1 }
		END {
			print "| loss % | rocev2 Gbit/s | kept | metaroce Gbit/s | kept | rocev2-qps Gbit/s | kept |"
			print "|---|---|---|---|---|---|---|"
			n = nsort(losses, ls)
			for (i = 1; i <= n; i++) {
				l = ls[i]; line = sprintf("| %g |", l * 100)
				split("rocev2 metaroce rocev2-qps", t, " ")
				for (k = 1; k <= 3; k++)
					line = line sprintf(" %.2f | %.3f |", g[t[k], l],
							    base[t[k]] ? g[t[k], l] / base[t[k]] : 0)
				print line
			}
		}' "$DIR/cluster-loss.csv" | out
	echo | out
	awk -F, 'NR > 1 && $10 { print $8 * 100, $3, ($15 ? $12 * 8 : 0) }' "$DIR/cluster-loss.csv" \
		> "$DIR/cluster-loss.dat"
	cat > "$DIR/cluster-loss.gp" <<'EOF'
set terminal pngcairo size 800,480
set output 'cluster-loss.png'
set title 'Permutation, 64 hosts x 16 MiB, 4 planes: goodput per host vs random loss'
set xlabel 'random loss (% of packets, each direction)'
set ylabel 'Gbit/s per host'
set logscale x
set xrange [0.05:12]
set key top right
set grid
plot for [t in "metaroce rocev2-qps rocev2"] 'cluster-loss.dat' \
	using ($1 > 0 ? $1 : 1/0):(strcol(2) eq t ? $3 : 1/0) with linespoints title t
EOF
	plot loss
fi

# ---- planes ---------------------------------------------------------------------

if have planes; then
	awk -F, "$NSORT"'
		NR > 1 { g[$3, $5] = $15 ? $12 * 8 : 0; if ($5 == 1) one[$3] = $12 * 8; ps[$5] = 1 }
		END {
			print "| planes | capacity Gbit/s | metaroce Gbit/s | of linear | rocev2-qps Gbit/s | of linear | rocev2 Gbit/s | of linear |"
			print "|---|---|---|---|---|---|---|---|"
			n = nsort(ps, p)
			for (i = 1; i <= n; i++) {
				P = p[i]; line = sprintf("| %d | %.2f |", P, P * 25 * 4096 / 4220)
				split("metaroce rocev2-qps rocev2", t, " ")
				for (k = 1; k <= 3; k++)
					line = line sprintf(" %.2f | %.3f |", g[t[k], P],
							    one[t[k]] ? g[t[k], P] / (P * one[t[k]]) : 0)
				print line
			}
		}' "$DIR/cluster-planes.csv" | out
	echo | out
	awk -F, 'NR > 1 { print $5, $3, ($15 ? $12 * 8 : 0) }' "$DIR/cluster-planes.csv" \
		> "$DIR/cluster-planes.dat"
	cat > "$DIR/cluster-planes.gp" <<'EOF'
set terminal pngcairo size 800,480
set output 'cluster-planes.png'
set title 'Permutation, 64 hosts x 16 MiB: goodput per host vs planes of 25 Gbit/s'
set xlabel 'planes'
set ylabel 'Gbit/s per host'
set logscale x 2
set key top left
set grid
plot x * 25 * 4096 / 4220 with lines dashtype 2 title 'payload capacity', \
	for [t in "metaroce rocev2-qps rocev2"] 'cluster-planes.dat' \
	using 1:(strcol(2) eq t ? $3 : 1/0) with linespoints title t
EOF
	plot planes
fi

# ---- AllReduce / AllToAll deltas -------------------------------------------------

sweep_tables() {	# sweep_tables OP
	local op=$1
	for tag in $(awk -F, 'NR > 1 { print $1 }' "$DIR/cluster-$op.csv" | sort -u); do
		echo "$op, $tag (p = planes, l = loss): time in us, busbw in GB/s, delta = rocev2 time / time - 1" | out
		echo | out
		awk -F, -v tag="$tag" "$NSORT"'
			NR > 1 && $1 == tag { t[$3, $10] = $15 ? $11 : -1; b[$3, $10] = $13; s[$10] = 1 }
			END {
				print "| size | rocev2 us | busbw | metaroce us | busbw | delta % | rocev2-qps us | busbw | delta % |"
				print "|---|---|---|---|---|---|---|---|---|"
				n = nsort(s, ss)
				for (i = 1; i <= n; i++) {
					z = ss[i]; base = t["rocev2", z]
					line = sprintf("| %d | %s | %.3f |", z, base < 0 ? "fail" : sprintf("%.1f", base), b["rocev2", z])
					split("metaroce rocev2-qps", tr, " ")
					for (k = 1; k <= 2; k++) {
						x = t[tr[k], z]
						d = (x > 0 && base > 0) ? sprintf("%+.1f", (base / x - 1) * 100) : "-"
						line = line sprintf(" %s | %.3f | %s |", x < 0 ? "fail" : sprintf("%.1f", x), b[tr[k], z], d)
					}
					print line
				}
			}' "$DIR/cluster-$op.csv" | out
		echo | out
	done
	awk -F, 'NR > 1 { t[$1, $3, $10] = $15 ? $11 : 0; key[$1, $10] = 1 }
		END { for (k in key) { split(k, a, SUBSEP); base = t[a[1], "rocev2", a[2]]
			m = t[a[1], "metaroce", a[2]]; q = t[a[1], "rocev2-qps", a[2]]
			printf "%s %d %s %s\n", a[1], a[2],
				(m > 0 && base > 0) ? (base / m - 1) * 100 : "nan",
				(q > 0 && base > 0) ? (base / q - 1) * 100 : "nan" } }' \
		"$DIR/cluster-$op.csv" | sort -k1,1 -k2,2n > "$DIR/cluster-$op.dat"
	cat > "$DIR/cluster-$op.gp" <<EOF
set terminal pngcairo size 900,520
set output 'cluster-$op.png'
set title '$op on 64 hosts (fragmented placement): delta % vs the RoCEv2 baseline'
set xlabel 'size (bytes)'
set ylabel 'delta % (baseline time / time - 1)'
set logscale x 2
set format x '2^{%L}'
set key outside right
set grid
set yrange [-100:*]
plot for [tag in "p4-l0 p8-l0 p4-l0.01 p8-l0.01"] 'cluster-$op.dat' \\
	using 2:(strcol(1) eq tag ? \$3 : 1/0) with linespoints title 'metaroce '.tag, \\
	for [tag in "p4-l0 p8-l0 p4-l0.01 p8-l0.01"] 'cluster-$op.dat' \\
	using 2:(strcol(1) eq tag ? \$4 : 1/0) with linespoints dashtype 2 title 'rocev2-qps '.tag
EOF
	plot "$op"
}

have allreduce && sweep_tables allreduce
have alltoall && sweep_tables alltoall

# ---- failure ------------------------------------------------------------------------

if have failure; then
	awk -F, 'NR > 1 {
			if (NR == 2) {
				print "| failure | transport | time us | done | retx | rto | repath | blackholed pkts |"
				print "|---|---|---|---|---|---|---|---|"
			}
			printf "| %s | %s | %s | %s | %d | %d | %d | %d |\n", $1, $3,
				$15 ? sprintf("%.1f", $11) : "-", $15 ? "yes" : "no (RETRY_EXC)",
				$16, $18, $19, $24 }' "$DIR/cluster-failure.csv" | out
	echo | out
fi

# ---- incast -------------------------------------------------------------------------

if have incast; then
	awk -F, 'NR > 1 {
			if (NR == 2) {
				print "| senders, hints | transport | time us | total Gbit/s | Jain | first / last sender done us | max downlink queue | drops | CE |"
				print "|---|---|---|---|---|---|---|---|---|"
			}
			split($1, a, "-"); n = substr(a[1], 2)
			printf "| %s, %s | %s | %.1f | %.2f | %.4f | %.0f / %.0f | %d KiB | %d | %d |\n",
				n, a[2], $3, $11, n * $10 * 8 / ($11 * 1000), $28, $29, $30,
				$26 / 1024, $22, $20 }' "$DIR/cluster-incast.csv" | out
	echo | out
fi
