set terminal pngcairo size 1100,600
set output 'cluster-large-time.png'
set title "AllReduce and AllToAll, 64 hosts; l = loss\nmetaroce delta % vs each baseline (time; median, min-max bars; above 300 % off the chart)"
set xlabel 'size (bytes)'
set ylabel 'delta % (baseline time / metaroce time - 1)'
set logscale x 2
set format x '2^{%L}'
set key outside right
set grid
set yrange [-60:300]
plot for [tag in "allreduce-l0 allreduce-l0.01 alltoall-l0 alltoall-l0.01 "] for [b in "pfc qpp lossy"] 'cluster-large-time.dat' \
	using 2:((strcol(1) eq tag && strcol(3) eq b) ? $4 : 1/0):5:6 with yerrorlines title tag.' vs '.b
