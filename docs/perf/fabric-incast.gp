# Incast over the ECMP fabric (scripts/bench-fabric.sh): 3 senders write to 1 receiver over
# 4 rate-limited planes, receiver rate hints on and off; each sender's goodput stacked.
# Run in docs/perf: gnuplot fabric-incast.gp
set terminal pngcairo size 900,480 font "sans,10"
set output "fabric-incast.png"
set datafile separator ","
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.6
set linetype 1 lc rgb "#7b2cbf"
set linetype 2 lc rgb "#009e73"
set linetype 3 lc rgb "#e69f00"
set grid ytics
set ylabel "goodput, Gbit/s"
set yrange [0:1.3]
set key top left opaque box
cap = real(system("awk -F, 'NR == 2 && $7 > 0 { print $6 / $7 }' fabric-incast-summary.csv"))
set title sprintf("incast: 3 senders, 1 receiver, 4 planes; Jain's index above each bar")
lab(h, r) = sprintf("hints %s, run %d", (h eq "true" ? "on" : "off"), r)
plot "fabric-incast-summary.csv" skip 1 using 3:xtic(lab(strcol(1), column(2))) title "sender 1", \
	"" skip 1 using 4 title "sender 2", \
	"" skip 1 using 5 title "sender 3", \
	"" skip 1 using 0:($6 + 0.03):(sprintf("Jain %.2f", $8)) with labels notitle, \
	cap with lines dt 2 lc "black" title "planes' payload capacity"
