# A degraded (10% loss) and a blackholed plane, 2 s into a write_bw over 4 rate-limited
# planes (scripts/bench-fabric.sh): the receiver's goodput every 200 ms and, for
# MetaRoCE, what each plane carried (frames, headers included).  t = 0: the event.
# Run in docs/perf: gnuplot fabric-failover.gp
set terminal pngcairo size 1200,760 font "sans,10"
set output "fabric-failover.png"
set datafile separator ","
set linetype 1 lc rgb "#7b2cbf" lw 2.5
set linetype 2 lc rgb "#0072b2" lw 2.5
set linetype 3 lc rgb "#e69f00" lw 1
set linetype 4 lc rgb "#009e73" lw 1
set linetype 5 lc rgb "#cc79a7" lw 1
set linetype 6 lc rgb "#56b4e9" lw 1
f = "fabric-failover.csv"
s = "fabric-failover-summary.csv"
# run 1 of each
sel(e, m) = sprintf("< awk -F, '$1 == \"%s\" && $2 == \"%s\" && $3 == 1' %s", e, m, f)
# the remaining planes' capacity, from the summary
rem(e) = real(system(sprintf("awk -F, '$1 == \"%s\" && $2 == \"metaroce\" && $3 == 1 { print $8 }' %s", e, s)))
plane(e, m) = system(sprintf("awk -F, '$1 == \"%s\" && $2 == \"%s\" && $3 == 1 { print $4 }' %s", e, m, s))
set multiplot layout 2,1 title "one of 4 rate-limited planes degraded or blackholed at t = 0 (run 1)"
set xlabel "seconds from the event"
set ylabel "Gbit/s"
set grid
set xrange [-2.2:*]
set yrange [0:1.1]
set key outside right
set arrow 1 from 0, graph 0 to 0, graph 1 nohead dt 2 lc "black"
do for [e in "degraded blackhole"] {
	set title (e eq "degraded" ? "10% random loss on the busiest plane" : "busiest plane blackholed")
	r = rem(e)
	plot sel(e, "metaroce") using 4:5 with lines lt 1 title "MetaRoCE 4 paths: goodput", \
		sel(e, "rocev2") using 4:5 with lines lt 2 title "RoCEv2 mode: goodput", \
		for [p = 1:4] sel(e, "metaroce") using 4:(column(5 + p)) with lines lt (2 + p) \
			title sprintf("MetaRoCE: plane %d%s", p, (plane(e, "metaroce") + 0 == p ? " (hit)" : "")), \
		r with lines dt 3 lc "black" title "3 planes' capacity", \
		0.85 * r with lines dt 2 lc "gray50" title "85% of it"
}
unset multiplot
