# Plane scaling over the ECMP fabric (scripts/bench-fabric.sh): P planes, each rate-limited
# by TBF; MetaRoCE with 2 x P paths and RoCEv2 mode.  Run in docs/perf: gnuplot fabric-planes.gp
set terminal pngcairo size 1200,460 font "sans,10"
set output "fabric-planes.png"
set datafile separator ","
set linetype 1 lc rgb "#7b2cbf" lw 2
set linetype 2 lc rgb "#0072b2" lw 2
set linetype 3 lc rgb "gray40" lw 1 dt 2
f = "fabric-planes-summary.csv"
sel(m) = sprintf("< awk -F, '$3 == \"%s\"' %s", m, f)
set multiplot layout 1,2 title "mroc over P rate-limited ECMP planes (TBF)"

set xrange [0:9]
set xtics (1, 2, 4, 8)
set xlabel "planes P"
set grid ytics
set key top left opaque box
set title "goodput"
set ylabel "Gbit/s"
set yrange [0:*]
plot sel("metaroce") using 1:4 with linespoints lt 1 pt 7 title "MetaRoCE, 2 x P paths", \
	sel("rocev2") using 1:4 with linespoints lt 2 pt 5 title "RoCEv2 mode (1 path)", \
	sel("metaroce") using 1:($1 * $5) with lines lt 3 title "P x one plane (measured)"
set title "goodput / (P x one plane)"
set ylabel "fraction"
set yrange [0:1.2]
set key top right
plot sel("metaroce") using 1:6 with linespoints lt 1 pt 7 title "MetaRoCE, 2 x P paths", \
	sel("rocev2") using 1:6 with linespoints lt 2 pt 5 title "RoCEv2 mode (1 path)", \
	0.9 with lines lt 3 title "0.9"
unset multiplot
