#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Tables and plots from scripts/bench-sim.sh's CSVs:
#   scripts/bench-sim-report.sh [DIR]     (DIR: docs/perf)
# Writes DIR/cluster-tables.md (markdown, also printed) and DIR/cluster-*.png
# with their gnuplot scripts DIR/cluster-*.gp.  An experiment whose CSV is
# missing is skipped.  Every figure is over the seeds a point ran with:
# "a / b / c" is min / median / max, a lone number the median.
#
# CSV columns (mroc-sim cluster --csv): 1 tag, 2 op, 3 transport, 4 hosts,
# 5 planes, 6 spines, 7 placement, 8 loss, 9 hints, 10 size, 11 time_us,
# 12 algbw_GBps, 13 busbw_GBps, 14 delta_pct, 15 done, 16 retx, 17 lost, 18 rto,
# 19 repath, 20 ce, 21 tx_pkts, 22 drop_tail, 23 drop_random, 24 drop_blackhole,
# 25 maxq_core, 26 maxq_down, 27 imbalance, 28 jain, 29 flow_min_us,
# 30 flow_max_us, 31 events, 32 wall_s, 33 seed, 34 pfc_pauses, 35 pfc_paused_us,
# 36 pfc_overflow, 37 nic_waits, 38 bg, 39 bg_load, 40 bg_achieved, 41 iters,
# 42 t_min_us, 43 t_p50_us, 44 t_p99_us, 45 t_max_us, 46 algo, 47 lost_rack
set -euo pipefail

DIR=${1:-$(cd "$(dirname "$0")/.." && pwd)/docs/perf}
MD=$DIR/cluster-tables.md
: > "$MD"

out() { tee -a "$MD"; }
have() { [ -s "$DIR/cluster-$1.csv" ]; }
plot() {	# plot NAME: run DIR/cluster-NAME.gp if gnuplot is there
	if command -v gnuplot >/dev/null; then
		(cd "$DIR" && gnuplot "cluster-$1.gp")
	else
		echo "(gnuplot missing: cluster-$1.png not drawn)" >&2
	fi
}

# awk helpers (mawk has no asort): values are kept as "v1 v2 ..." strings per key.
#   add(a, k, v)   append v to a[k]
#   med(s) / lo(s) / hi(s)   median (lower middle), min, max of such a string
#   mmm(s, fmt)    "min / median / max" with fmt, "-" if empty
LIB='
function add(a, k, v) { a[k] = (k in a) ? a[k] " " v : v }
function srt(s, d,   n, i, j, t) { n = split(s, d, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && d[j - 1] + 0 > d[j] + 0; j--) { t = d[j]; d[j] = d[j - 1]; d[j - 1] = t }
	return n }
function med(s,   d, n) { n = srt(s, d); return n ? d[int((n + 1) / 2)] : "" }
function lo(s,   d, n) { n = srt(s, d); return n ? d[1] : "" }
function hi(s,   d, n) { n = srt(s, d); return n ? d[n] : "" }
function mmm(s, f) { return s == "" ? "-" : sprintf(f " / " f " / " f, lo(s), med(s), hi(s)) }
# a delta %: above +1000 % as the ratio of the times (a NIC timeout against microseconds)
function fd(v) { return v >= 1000 ? sprintf("%.0fx", v / 100 + 1) : sprintf("%+.1f", v) }
function mmmd(s) { return s == "" ? "-" : fd(lo(s)) " / " fd(med(s)) " / " fd(hi(s)) }
function nsort(a, d,   k, n, i, j, t) { n = 0; for (k in a) d[++n] = k + 0
	for (i = 2; i <= n; i++) for (j = i; j > 1 && d[j - 1] > d[j]; j--) { t = d[j]; d[j] = d[j - 1]; d[j - 1] = t }
	return n }
BEGIN { nt = split("rocev2-pfc rocev2-qp-per-plane rocev2-lossy metaroce", T, " ")
	B["rocev2-pfc"] = "pfc"; B["rocev2-qp-per-plane"] = "qpp"; B["rocev2-lossy"] = "lossy"; B["metaroce"] = "metaroce" }
'

# ---- loss -----------------------------------------------------------------------

if have loss; then
	echo "Permutation 16 MiB, 64 hosts, 4 planes: goodput kept (each seed against its own lossless run), min / median / max over seeds; median Gbit/s per host (0 = not finished within the time limit; - = not run)" | out
	echo | out
	awk -F, "$LIB"'
		NR > 1 { g[$3, $8, $33] = $15 ? $12 * 8 : 0; L[$8] = 1; S[$33] = 1; r[$3, $8] = r[$3, $8] " " $16; o[$3, $8] = o[$3, $8] " " $18 }
		END {
			h = "| loss % |"; u = "|---|"
			for (k = 1; k <= nt; k++) { h = h " " T[k] " kept | Gbit/s |"; u = u "---|---|" }
			print h; print u
			n = nsort(L, ls)
			for (i = 1; i <= n; i++) {
				l = ls[i]; line = sprintf("| %g |", l * 100)
				for (k = 1; k <= nt; k++) {
					kept = ""; gb = ""
					for (s in S) if ((T[k], l, s) in g) {
						b = g[T[k], 0, s]; gb = gb " " g[T[k], l, s]
						if (b > 0) kept = kept " " g[T[k], l, s] / b
					}
					line = line sprintf(" %s | %s |", mmm(kept, "%.3f"),
							    gb == "" ? "-" : sprintf("%.2f", med(gb)))
				}
				print line
				for (k = 1; k <= nt; k++) { kk = ""; for (s in S) if ((T[k], l, s) in g && g[T[k], 0, s] > 0) kk = kk " " g[T[k], l, s] / g[T[k], 0, s]
					printf "%g %s %s %s %s\n", l * 100, T[k], med(kk), lo(kk), hi(kk) > DAT }
			}
		}' DAT="$DIR/cluster-loss.dat" "$DIR/cluster-loss.csv" | out
	echo | out
	cat > "$DIR/cluster-loss.gp" <<'EOF'
set terminal pngcairo size 800,480
set output 'cluster-loss.png'
set title 'Permutation, 64 hosts x 16 MiB, 4 planes: goodput kept vs random loss (median, min-max bars)'
set xlabel 'random loss (% of packets, each direction)'
set ylabel 'goodput / lossless goodput'
set logscale x
set xrange [0.05:15]
set yrange [0:1.2]
set key bottom left
set grid
plot for [t in "metaroce rocev2-pfc rocev2-qp-per-plane rocev2-lossy"] 'cluster-loss.dat' \
	using ($1 > 0 && strcol(2) eq t ? $1 : 1/0):3:4:5 with yerrorlines title t
EOF
	plot loss
fi

# ---- planes ---------------------------------------------------------------------

if have planes; then
	echo "Permutation 16 MiB, 64 hosts: median Gbit/s per host and, per seed against its own 1-plane run, the fraction of linear scaling (min / median / max)" | out
	echo | out
	awk -F, "$LIB"'
		NR > 1 { g[$3, $5, $33] = $15 ? $12 * 8 : 0; P[$5] = 1; S[$33] = 1 }
		END {
			h = "| planes | capacity Gbit/s |"; u = "|---|---|"
			for (k = 1; k <= nt; k++) { h = h " " T[k] " Gbit/s | of linear |"; u = u "---|---|" }
			print h; print u
			n = nsort(P, ps)
			for (i = 1; i <= n; i++) {
				p = ps[i]; line = sprintf("| %d | %.2f |", p, p * 25 * 4096 / 4220)
				for (k = 1; k <= nt; k++) {
					gb = ""; lin = ""
					for (s in S) if ((T[k], p, s) in g) {
						gb = gb " " g[T[k], p, s]
						if (g[T[k], 1, s] > 0) lin = lin " " g[T[k], p, s] / (p * g[T[k], 1, s])
					}
					line = line sprintf(" %.2f | %s |", med(gb), mmm(lin, "%.3f"))
					printf "%d %s %s %s %s\n", p, T[k], med(gb), lo(gb), hi(gb) > DAT
				}
				print line
			}
		}' DAT="$DIR/cluster-planes.dat" "$DIR/cluster-planes.csv" | out
	echo | out
	cat > "$DIR/cluster-planes.gp" <<'EOF'
set terminal pngcairo size 800,480
set output 'cluster-planes.png'
set title 'Permutation, 64 hosts x 16 MiB: goodput per host vs planes of 25 Gbit/s (median, min-max bars)'
set xlabel 'planes'
set ylabel 'Gbit/s per host'
set logscale x 2
set key top left
set grid
plot x * 25 * 4096 / 4220 with lines dashtype 2 title 'payload capacity', \
	for [t in "metaroce rocev2-pfc rocev2-qp-per-plane rocev2-lossy"] 'cluster-planes.dat' \
	using 1:(strcol(2) eq t ? $3 : 1/0):4:5 with yerrorlines title t
EOF
	plot planes
fi

# ---- collectives: per tag, metaroce's delta against each baseline -------------------

# delta_tables EXP COL LABEL: COL is the time column (11: time, 43: p50, 44: p99)
delta_tables() {
	local exp=$1 col=$2 label=$3
	awk -F, -v col="$col" -v label="$label" -v ex="$exp" "$LIB"'
		NR > 1 { if (!($1 in seen)) { seen[$1] = 1; tags[++ntag] = $1 }
			t[$1, $3, $10, $33] = $15 ? $col : -1; Z[$1, $10] = 1; S[$33] = 1 }
		END {
			for (ti = 1; ti <= ntag; ti++) {
				tag = tags[ti]
				printf "%s, %s: %s in us (median over seeds; fail = some seed did not finish), delta %% of metaroce = baseline / metaroce - 1 per seed, min / median / max (Nx: the baseline took N times as long)\n\n", ex, tag, label
				h = "| size |"; u = "|---|"
				for (k = 1; k <= nt; k++) { h = h " " T[k] " |"; u = u "---|" }
				for (k = 1; k < nt; k++) { h = h " vs " B[T[k]] " % |"; u = u "---|" }
				print h; print u
				delete zs; nz = 0
				for (key in Z) { split(key, a, SUBSEP); if (a[1] == tag) zs0[a[2]] = 1 }
				n = nsort(zs0, zs); delete zs0
				for (i = 1; i <= n; i++) {
					z = zs[i]; line = sprintf("| %d |", z)
					for (k = 1; k <= nt; k++) {
						v = ""; bad = 0
						for (s in S) if ((tag, T[k], z, s) in t) { if (t[tag, T[k], z, s] < 0) bad = 1; else v = v " " t[tag, T[k], z, s] }
						line = line (bad ? " fail |" : sprintf(" %.1f |", med(v)))
					}
					for (k = 1; k < nt; k++) {
						d = ""
						for (s in S) { m = t[tag, "metaroce", z, s]; b = t[tag, T[k], z, s]
							if (m > 0 && b > 0) d = d " " (b / m - 1) * 100 }
						line = line sprintf(" %s |", mmmd(d))
						printf "%s %d %s %s %s %s\n", tag, z, B[T[k]], med(d), lo(d), hi(d) > DAT
					}
					print line
				}
				print ""
			}
		}' DAT="$DIR/cluster-$exp-$label.dat" "$DIR/cluster-$exp.csv" | out
}

delta_plot() {	# delta_plot EXP LABEL TITLE YMAX: deltas above YMAX % (NIC timeouts) are off the chart
	local exp=$1 label=$2 title=$3 ymax=$4 tags
	tags=$(awk '{ print $1 }' "$DIR/cluster-$exp-$label.dat" | sort -u | tr '\n' ' ')
	cat > "$DIR/cluster-$exp-$label.gp" <<EOF
set terminal pngcairo size 1100,600
set output 'cluster-$exp-$label.png'
set title "$title\\nmetaroce delta % vs each baseline ($label; median, min-max bars; above $ymax % off the chart)"
set xlabel 'size (bytes)'
set ylabel 'delta % (baseline time / metaroce time - 1)'
set logscale x 2
set format x '2^{%L}'
set key outside right
set grid
set yrange [-60:$ymax]
plot for [tag in "$tags"] for [b in "pfc qpp lossy"] 'cluster-$exp-$label.dat' \\
	using 2:((strcol(1) eq tag && strcol(3) eq b) ? \$4 : 1/0):5:6 with yerrorlines title tag.' vs '.b
EOF
	plot "$exp-$label"
}

if have small; then
	delta_tables small 43 p50
	delta_tables small 44 p99
	delta_plot small p50 'AllReduce 8 B - 32 KiB, 32 ranks: bg = beside a permutation, incast = beside an incast, idle = alone; l = loss' 150
	delta_plot small p99 'AllReduce 8 B - 32 KiB, 32 ranks: bg = beside a permutation, incast = beside an incast, idle = alone; l = loss' 150
fi
# nccl_table EXP: per tag and size, each transport's time (p50 with iterations) and
# nccl-tests' algbw / busbw in GB/s, medians over seeds, and the algorithm that ran
nccl_table() {
	awk -F, "$LIB"'
		NR > 1 { if (!($1 in seen)) { seen[$1] = 1; tags[++ntag] = $1 }
			k = $1 SUBSEP $3 SUBSEP $10; Z[$1, $10] = 1; A[$1, $10] = $46
			if ($15) { add(tm, k, $11); add(ab, k, $12); add(bb, k, $13) } else bad[k] = 1 }
		END {
			for (ti = 1; ti <= ntag; ti++) {
				tag = tags[ti]
				printf "%s: time us / algbw / busbw GB/s (nccl-tests), medians over seeds\n\n", tag
				h = "| size | algo |"; u = "|---|---|"
				for (k = 1; k <= nt; k++) { h = h " " T[k] " |"; u = u "---|" }
				print h; print u
				for (key in Z) { split(key, a, SUBSEP); if (a[1] == tag) zs0[a[2]] = 1 }
				n = nsort(zs0, zs); delete zs0
				for (i = 1; i <= n; i++) {
					z = zs[i]; line = sprintf("| %d | %s |", z, A[tag, z])
					for (k = 1; k <= nt; k++) { kk = tag SUBSEP T[k] SUBSEP z
						if ((kk in bad) || !(kk in tm)) line = line " fail |"
						else line = line sprintf(" %.1f / %.3f / %.3f |", med(tm[kk]), med(ab[kk]), med(bb[kk])) }
					print line
				}
				print ""
			}
		}' "$DIR/cluster-$1.csv" | out
}

if have coll; then
	nccl_table coll
	delta_tables coll 11 time
	delta_plot coll time 'AllGather, ReduceScatter: 32 ranks by doubling to 32 KiB, 64 by ring; l = loss' 700
fi
if have large; then
	delta_tables large 11 time
	delta_plot large time 'AllReduce and AllToAll, 64 hosts; l = loss' 300
fi

# ---- failure ------------------------------------------------------------------------

if have failure; then
	echo "AllReduce 16 MiB, spine 0 of plane 0 fails 1 ms in: time min / median / max over seeds that finished; medians of the counters" | out
	echo | out
	awk -F, "$LIB"'
		NR > 1 { k = $1 SUBSEP $3; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
			n[k]++; if ($15) { add(tm, k, $11); d[k]++ }
			add(rx, k, $16); add(ro, k, $18); add(rp, k, $19); add(bh, k, $24); add(pp, k, $34) }
		END {
			print "| failure | transport | time us | finished | retx | rto | repath | blackholed | PFC pauses |"
			print "|---|---|---|---|---|---|---|---|---|"
			for (i = 1; i <= nk; i++) { k = keys[i]; split(k, a, SUBSEP)
				printf "| %s | %s | %s | %d of %d | %d | %d | %d | %d | %d |\n", a[1], a[2],
					mmm(tm[k], "%.0f"), d[k], n[k], med(rx[k]), med(ro[k]), med(rp[k]), med(bh[k]), med(pp[k]) }
		}' "$DIR/cluster-failure.csv" | out
	echo | out
fi

# ---- incast -------------------------------------------------------------------------

if have incast; then
	echo "Incast, 4 MiB from each sender, 4 planes: min / median / max over seeds; medians of the counters" | out
	echo | out
	awk -F, "$LIB"'
		NR > 1 { k = $1 SUBSEP $3; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
			split($1, a, "s"); add(tm, k, $11); add(gb, k, a[2] * $10 * 8 / ($11 * 1000))
			add(jn, k, $28); add(dr, k, $22); add(pp, k, $34); add(pu, k, $35); add(q, k, $26 / 1024) }
		END {
			print "| senders | transport | time us | total Gbit/s | Jain | drops | PFC pauses | paused us (all links) | max downlink queue KiB |"
			print "|---|---|---|---|---|---|---|---|---|"
			for (i = 1; i <= nk; i++) { k = keys[i]; split(k, a, SUBSEP)
				printf "| %s | %s | %s | %s | %s | %d | %d | %.0f | %.0f |\n", substr(a[1], 2), a[2],
					mmm(tm[k], "%.0f"), mmm(gb[k], "%.1f"), mmm(jn[k], "%.3f"), med(dr[k]),
					med(pp[k]), med(pu[k]), med(q[k]) }
		}' "$DIR/cluster-incast.csv" | out
	echo | out
fi
