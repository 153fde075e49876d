# mroc at 1 .. 4,000 QPs over the 4-plane fabric (scripts/bench-scale.sh): aggregate
# write_bw beside kernel TCP with as many connections, write_lat among idle QPs, the
# daemons' private memory.  Medians with min..max bars.  Run in docs/perf: gnuplot scale.gp
set terminal pngcairo size 1500,460 font "sans,10"
set output "scale.png"
set datafile separator ","
set linetype 1 lc rgb "#7b2cbf" lw 2
set linetype 2 lc rgb "#0072b2" lw 2
set linetype 3 lc rgb "#e69f00" lw 2
set linetype 4 lc rgb "gray40" lw 1 dt 2
f = "scale-summary.csv"
sel(p, m) = sprintf("< awk -F, '$1 == \"%s\" && $3 == \"%s\" && $4 != \"-\"' %s", p, m, f)
set multiplot layout 1,3 title "mroc, 1 to 4,000 QPs on one daemon pair (2 x mrocd on AF\\_XDP, 4 ECMP planes, lossless)"
set logscale x
set xrange [0.7:6000]
set xtics (1, 16, 256, 1000, 4000)
set xlabel "QPs (TCP: connections)"
set grid ytics
set key top right opaque box

set title "aggregate goodput"
set ylabel "Gbit/s"
set yrange [0:*]
plot sel("bw", "gbps") using 2:5:4:6 with yerrorlines lt 1 pt 7 title "mroc write\\_bw 64 KiB", \
	sel("tcp", "gbps") using 2:5:4:6 with yerrorlines lt 2 pt 5 title "kernel TCP (iperf3 -P)"

set title "write\\_lat 8 B among N - 1 idle QPs"
set ylabel "us"
set logscale y
set yrange [*:*]
plot sel("lat", "p50") using 2:5:4:6 with yerrorlines lt 1 pt 7 title "p50", \
	sel("lat", "p99") using 2:5:4:6 with yerrorlines lt 3 pt 9 title "p99"
unset logscale y

set title "daemon private memory (Pss\\_Anon) above idle"
set ylabel "MiB"
set yrange [0:*]
set key top left
plot sel("bw", "pss_a_above_idle_mib") using 2:5:4:6 with yerrorlines lt 1 pt 7 title "sender", \
	sel("bw", "pss_b_above_idle_mib") using 2:5:4:6 with yerrorlines lt 2 pt 5 title "receiver", \
	64 with lines lt 4 title "64 MiB (issue #10 target)"
unset multiplot
