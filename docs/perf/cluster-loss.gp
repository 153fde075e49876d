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
