set terminal pngcairo size 1100,600
set output 'cluster-small-p50.png'
set title "AllReduce 8 B - 32 KiB, 32 ranks: bg = beside a permutation, incast = beside an incast, idle = alone; l = loss\nmetaroce delta % vs each baseline (p50; median, min-max bars; above 150 % off the chart)"
set xlabel 'size (bytes)'
set ylabel 'delta % (baseline time / metaroce time - 1)'
set logscale x 2
set format x '2^{%L}'
set key outside right
set grid
set yrange [-60:150]
plot for [tag in "bg-l0 idle-l0 idle-l0.01 incast-l0 ring-idle-l0 "] for [b in "pfc qpp lossy"] 'cluster-small-p50.dat' \
	using 2:((strcol(1) eq tag && strcol(3) eq b) ? $4 : 1/0):5:6 with yerrorlines title tag.' vs '.b
