# Loss sweep over the 4-plane fabric (scripts/bench-fabric.sh): goodput and goodput as a
# fraction of each mode's own lossless figure, planes unlimited (CPU-bound) and
# rate-limited (fabric-bound).  Run in docs/perf: gnuplot fabric-loss.gp
set terminal pngcairo size 1200,860 font "sans,10"
set output "fabric-loss.png"
set datafile separator ","
set multiplot layout 2,2 title "mroc over a 4-plane ECMP fabric in network namespaces: random loss on every plane"
set xtics ("0" 0, "0.1" 1, "1" 2, "5" 3, "10" 4)
set xrange [-0.3:4.3]
set xlabel "random loss on every plane, %"
set grid ytics
set key bottom left opaque box
set linetype 1 lc rgb "#7b2cbf" lw 2
set linetype 2 lc rgb "#009e73" lw 2
set linetype 3 lc rgb "#0072b2" lw 2
set linetype 4 lc rgb "#e69f00" lw 2
set linetype 5 lc rgb "#8b6508" lw 2
f = "fabric-loss-summary.csv"
sel(s, m) = sprintf("< awk -F, '$1 == \"%s\" && $4 == \"%s\"' %s", s, m, f)
modes = "metaroce4 metaroce8 rocev2 tcp1 tcp4"
titles = "'MetaRoCE, 4 paths' 'MetaRoCE, 8 paths' 'RoCEv2 mode' 'TCP, 1 stream' 'TCP, 4 streams'"
do for [s in "cpu fabric"] {
	set title (s eq "cpu" ? "planes unlimited (CPU-bound): goodput" : "planes at the TBF rate (fabric-bound): goodput")
	set ylabel "Gbit/s"
	set yrange [0:*]
	plot for [i = 1:5] sel(s, word(modes, i)) using 0:5 with linespoints lt i pt i title word(titles, i)
	set title (s eq "cpu" ? "planes unlimited: fraction of own lossless goodput" : "planes at the TBF rate: fraction of own lossless goodput")
	set ylabel "fraction"
	set yrange [0:1.4]
	plot for [i = 1:5] sel(s, word(modes, i)) using 0:6 with linespoints lt i pt i title word(titles, i), \
		0.9 with lines dt 2 lc "gray" title "0.9", 0.5 with lines dt 3 lc "gray" title "0.5"
}
unset multiplot
