set terminal pngcairo size 900,520
set output 'cluster-allreduce.png'
set title 'allreduce on 64 hosts (fragmented placement): delta % vs the RoCEv2 baseline'
set xlabel 'size (bytes)'
set ylabel 'delta % (baseline time / time - 1)'
set logscale x 2
set format x '2^{%L}'
set key outside right
set grid
set yrange [-100:*]
plot for [tag in "p4-l0 p8-l0 p4-l0.01 p8-l0.01"] 'cluster-allreduce.dat' \
	using 2:(strcol(1) eq tag ? $3 : 1/0) with linespoints title 'metaroce '.tag, \
	for [tag in "p4-l0 p8-l0 p4-l0.01 p8-l0.01"] 'cluster-allreduce.dat' \
	using 2:(strcol(1) eq tag ? $4 : 1/0) with linespoints dashtype 2 title 'rocev2-qps '.tag
