# Latency where users meet it (scripts/bench-lat.sh): p50 and p99 of write_lat, send_lat
# and read_lat in both completion modes and sockperf's TCP ping-pong, per path, idle and
# under a concurrent write_bw.  Run in docs/perf: gnuplot lat.gp
set terminal pngcairo size 1400,900 font "sans,10" noenhanced
set output "lat.png"
set multiplot layout 2,2 title "mroc latency (8 B; sockperf 14 B TCP) on a veth pair and a 2/4-plane fabric, medians of the runs"
set logscale y
set ylabel "microseconds"
set grid ytics
set key outside right top font ",8"
set xtics rotate by -30 font ",8"
set offsets 0.5, 0.5, 0, 0
set linetype 1 lc rgb "#7b2cbf" lw 2 pt 7
set linetype 2 lc rgb "#7b2cbf" lw 2 pt 6
set linetype 3 lc rgb "#009e73" lw 2 pt 5
set linetype 4 lc rgb "#009e73" lw 2 pt 4
set linetype 5 lc rgb "#0072b2" lw 2 pt 9
set linetype 6 lc rgb "#0072b2" lw 2 pt 8
set linetype 7 lc rgb "#e69f00" lw 2 pt 13
tests = "write_lat write_lat send_lat send_lat read_lat read_lat sockperf"
modes = "poll sleep poll sleep poll sleep -"
# idx label value of one series: the path's index in order of first appearance
sel(load, t, m, col) = sprintf("< awk -F, 'NR > 1 { k = $1 \",\" $2 \",\" $3; if (!(k in id)) id[k] = n++ } NR > 1 && $4 == \"%s\" && $5 == \"%s\" && $6 == \"%s\" && $%d != \"\" { print id[k], ($1 == \"fabric\" ? \"f\" $2 ($3 == \"on\" ? \"+ECN\" : \"\") : $1), $%d }' lat-summary.csv", load, t, m, col, col)
# the paths, one tic each
paths = "< awk -F, 'NR > 1 { k = $1 \",\" $2 \",\" $3; if (!(k in id)) { id[k] = n++; print id[k], ($1 == \"fabric\" ? \"f\" $2 ($3 == \"on\" ? \"+ECN\" : \"\") : $1) } }' lat-summary.csv"
do for [load in "idle bw"] {
	do for [c in "10 13"] {
		set title sprintf("%s: %s", (load eq "idle" ? "idle" : "under a concurrent write_bw"), (c eq "10" ? "p50" : "p99"))
		plot paths using 1:(NaN):xtic(2) notitle, \
			for [i = 1:7] sel(load, word(tests, i), word(modes, i), int(c)) \
			using ($1 + (i - 4) * 0.08):3 with points lt i \
			title sprintf("%s %s", word(tests, i), word(modes, i) eq "-" ? "(TCP)" : word(modes, i))
	}
}
unset multiplot
