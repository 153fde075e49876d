#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Cluster-scale simulation benchmarks (issue #7): the real engine in every host
# of a 64-host leaf/spine cluster with P planes, MetaRoCE against the RoCEv2
# baseline and RoCEv2 with QP scaling (4 QPs per connection).
#
#   scripts/bench-sim.sh            # all experiments (make bench-sim)
#   EXPERIMENTS="loss planes" scripts/bench-sim.sh
#
# Experiments (each one mroc-sim cluster command per point, printed as it runs):
#   loss      goodput kept at 0 / 0.1 / 0.5 / 1 / 2 / 5 / 10 % random loss (permutation)
#   planes    goodput at 1 / 2 / 4 / 8 planes of 25 Gbit/s (permutation)
#   allreduce ring AllReduce delta % vs RoCEv2 by size, 4 and 8 planes, 0 and 1 % loss
#   alltoall  AllToAll delta % vs RoCEv2 by size, 4 and 8 planes, 0 and 1 % loss
#   failure   a spine fails 1 ms into a 16 MiB AllReduce; fabric converges in 10 ms or never
#   incast    15 and 63 senders x 4 MiB into one host, rate hints on and off
#
# Writes docs/perf/cluster-<experiment>.csv (one row per run, mroc-sim cluster's
# --csv format), cluster-*.png (gnuplot; scripts cluster-*.gp next to them) and
# cluster-tables.md (the markdown tables docs/PERF.md quotes).
# Environment: BUILD (build), OUT (docs/perf), A2A_MAX (16M: largest AllToAll;
# 64M moves 4x the data and takes ~1 min per point), AR_MAX (64M), SEED (1).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
OUT=${OUT:-$TOP/docs/perf}
SIM=$BUILD/mroc-sim
EXPERIMENTS=${EXPERIMENTS:-loss planes allreduce alltoall failure incast}
A2A_MAX=${A2A_MAX:-16M}
AR_MAX=${AR_MAX:-64M}
SEED=${SEED:-1}
ALL=rocev2,metaroce,rocev2-qps

mkdir -p "$OUT"
[ -x "$SIM" ] || { echo "bench-sim: $SIM missing (make first)" >&2; exit 1; }

run() {	# run CSV ARGS...: one mroc-sim cluster command, echoed
	local csv=$1
	shift
	echo "+ mroc-sim cluster $* --seed $SEED"
	"$SIM" cluster "$@" --seed "$SEED" --csv "$csv" || echo "  (a run failed: see above)"
}

fresh() { rm -f "$OUT/cluster-$1.csv"; echo "$OUT/cluster-$1.csv"; }

exp_loss() {
	local csv
	csv=$(fresh loss)
	for l in 0 0.001 0.005 0.01 0.02 0.05 0.1; do
		run "$csv" --op permutation --bytes 16M --loss "$l" --transport $ALL --limit 4000 \
			--tag loss
	done
}

exp_planes() {
	local csv
	csv=$(fresh planes)
	for p in 1 2 4 8; do
		run "$csv" --op permutation --bytes 16M --planes "$p" --transport $ALL --tag planes
	done
}

exp_allreduce() {
	local csv
	csv=$(fresh allreduce)
	for p in 4 8; do
		for l in 0 0.01; do
			run "$csv" --op allreduce --sizes "16:$AR_MAX" --planes "$p" --loss "$l" \
				--transport $ALL --limit 4000 --tag "p$p-l$l"
		done
	done
}

exp_alltoall() {
	local csv
	csv=$(fresh alltoall)
	for p in 4 8; do
		for l in 0 0.01; do
			run "$csv" --op alltoall --sizes "1K:$A2A_MAX" --planes "$p" --loss "$l" \
				--transport $ALL --limit 4000 --tag "p$p-l$l"
		done
	done
}

exp_failure() {
	local csv
	csv=$(fresh failure)
	run "$csv" --op allreduce --bytes 16M --transport $ALL --tag none
	run "$csv" --op allreduce --bytes 16M --transport $ALL --fail spine --fail-at 1000 \
		--tag converge-10ms
	run "$csv" --op allreduce --bytes 16M --transport $ALL --fail spine --fail-at 1000 \
		--converge 1000000000 --tag converge-never
}

exp_incast() {
	local csv
	csv=$(fresh incast)
	for s in 15 63; do
		for h in on off; do
			run "$csv" --op incast --senders "$s" --bytes 4M --hints "$h" \
				--transport rocev2,metaroce --tag "s$s-$h" -v
		done
	done
}

for e in $EXPERIMENTS; do
	t0=$(date +%s)
	"exp_$e"
	echo "== $e: $(( $(date +%s) - t0 )) s"
done

"$TOP/scripts/bench-sim-report.sh" "$OUT"
