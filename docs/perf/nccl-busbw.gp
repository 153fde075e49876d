# Ring AllReduce busbw by size (scripts/bench-nccl.sh): the NCCL net plugin over mroc
# (zero-copy and bounce buffers) and the same ring over kernel TCP and over mroc's libfabric
# provider, 4 ranks on 4 hosts and on
# 2 hosts of a 2-port fabric, lossless and with 1% loss on plane 2.
# Run in docs/perf: gnuplot nccl-busbw.gp
set terminal pngcairo size 1200,800 font "sans,10"
set output "nccl-busbw.png"
set datafile separator ","
set logscale x 2
set format x "%.0b%B"
set xlabel "message size (bytes)"
set ylabel "busbw (GB/s)"
set key top left
set grid
set multiplot layout 2,2
f = "nccl-allreduce.csv"
sel(n, h, l) = sprintf("< awk -F, '$1 == \"%s\" && $2 == %d && $3 == %d' %s", n, h, l, f)
do for [h in "4 2"] {
	do for [l in "0 1"] {
		set title sprintf("4 ranks on %s hosts, %s", h, l eq "0" ? "lossless" : "1% loss on plane 2")
		plot sel("mroc", h + 0, l + 0) using 4:7 with linespoints lw 2 lc rgb "#7b2cbf" title "mroc plugin", \
		     sel("mroc-copy", h + 0, l + 0) using 4:7 with linespoints lw 1 lc rgb "#cc79a7" title "mroc plugin, bounce copy", \
		     sel("tcp", h + 0, l + 0) using 4:7 with linespoints lw 2 lc rgb "#e69f00" title "kernel TCP (socket transport)", \
		     sel("fi", h + 0, l + 0) using 4:7 with linespoints lw 2 lc rgb "#009e73" title "mroc libfabric provider"
	}
}
unset multiplot
