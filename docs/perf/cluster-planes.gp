set terminal pngcairo size 800,480
set output 'cluster-planes.png'
set title 'Permutation, 64 hosts x 16 MiB: goodput per host vs planes of 25 Gbit/s (median, min-max bars)'
set xlabel 'planes'
set ylabel 'Gbit/s per host'
set logscale x 2
set key top left
set grid
plot x * 25 * 4096 / 4220 with lines dashtype 2 title 'payload capacity', \
	for [t in "metaroce rocev2-pfc rocev2-qp-per-plane rocev2-lossy"] 'cluster-planes.dat' \
	using 1:(strcol(2) eq t ? $3 : 1/0):4:5 with yerrorlines title t
