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
