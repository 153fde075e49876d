# Hosts with a port per plane (scripts/bench-ports.sh): P ports, each plane rate-limited by
# TBF; mroc write_bw vs kernel TCP (iperf3 -P 2 x P over the hosts' ECMP route).
# Run in docs/perf: gnuplot ports.gp
set terminal pngcairo size 1200,460 font "sans,10" noenhanced
set output "ports.png"
set datafile separator ","
set linetype 1 lc rgb "#7b2cbf" lw 2
set linetype 2 lc rgb "#e69f00" lw 2
set linetype 3 lc rgb "gray40" lw 1 dt 2
f = "ports-summary.csv"
sel(m) = sprintf("< awk -F, '$3 == \"%s\"' %s", m, f)
set multiplot layout 1,2 title "hosts with P ports, one per rate-limited plane (TBF)"
set xrange [0:5]
set xtics (1, 2, 4)
set xlabel "ports per host P"
set grid ytics
set key top left opaque box
set title "goodput (median, min..max)"
set ylabel "Gbit/s"
set yrange [0:*]
plot sel("mroc") using 1:5:4:6 with yerrorlines lt 1 pt 7 title "mroc write_bw, 4 x P paths", \
	sel("tcp") using 1:5:4:6 with yerrorlines lt 2 pt 5 title "TCP, iperf3 -P 2 x P, ECMP"
set title "goodput / (P x one port)"
set ylabel "fraction"
set yrange [0:1.2]
set key bottom left
plot sel("mroc") using 1:7 with linespoints lt 1 pt 7 title "mroc write_bw", \
	sel("tcp") using 1:7 with linespoints lt 2 pt 5 title "TCP iperf3", \
	0.9 with lines lt 3 title "target 0.9"
unset multiplot
