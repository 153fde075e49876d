set terminal pngcairo size 1100,600
set output 'cluster-coll-time.png'
set title "AllGather, ReduceScatter: 32 ranks by doubling to 32 KiB, 64 by ring; l = loss\nmetaroce delta % vs each baseline (time; median, min-max bars; above 700 % off the chart)"
set xlabel 'size (bytes)'
set ylabel 'delta % (baseline time / metaroce time - 1)'
set logscale x 2
set format x '2^{%L}'
set key outside right
set grid
set yrange [-60:700]
plot for [tag in "allgather-l0 allgather-l0.01 allgather-ring-large reducescatter-l0 reducescatter-l0.01 reducescatter-ring-large "] for [b in "pfc qpp lossy"] 'cluster-coll-time.dat' \
	using 2:((strcol(1) eq tag && strcol(3) eq b) ? $4 : 1/0):5:6 with yerrorlines title tag.' vs '.b
