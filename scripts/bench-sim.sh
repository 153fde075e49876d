#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Cluster-scale simulation benchmarks (issues #7 and #16): the real engine in
# every host of a 64-host leaf/spine cluster with P planes, MetaRoCE against
# RoCEv2 as deployed and the older lossy baseline, every point over several
# seeds (min / median / max in the tables).
#
#   scripts/bench-sim.sh            # all experiments (make bench-sim)
#   EXPERIMENTS="loss small" SEEDS="1 2 3" scripts/bench-sim.sh
#
# Transports (mroc-sim cluster --transport; the first listed is the delta's baseline):
#   rocev2-pfc           RoCEv2 as deployed: PFC-lossless fabric, NIC local ACK timeout
#                        4.096 us x 2^18 = 1.07 s (NCCL_IB_TIMEOUT 18), retry 7
#   rocev2-qp-per-plane  the same with a QP per plane per connection, pinned (NCCL)
#   rocev2-lossy         the issue #7 baseline: lossy fabric, 200 us minimum RTO
#   metaroce             ours, lossy fabric
#
# Experiments (each one mroc-sim cluster command per point and seed):
#   loss      permutation 16 MiB, goodput kept at 0 / 0.1 / 1 / 5 / 10 % random loss
#   planes    permutation 16 MiB at 1 / 2 / 4 / 8 planes of 25 Gbit/s
#   small     AllReduce 8 B - 32 KiB on 32 ranks, ITERS iterations (p50 / p99), the
#             algorithm auto picks (recursive doubling here): beside a permutation of
#             the other 32 hosts at half load; beside an incast of 16 of them into one;
#             alone; alone at 1 % loss; and the ring alone, for reference
#   coll      AllGather and ReduceScatter: 8 B - 32 KiB on 32 ranks (auto: recursive
#             doubling / halving), alone and at 1 % loss, ITERS iterations; 1 and 16 MiB on
#             64 hosts as a ring
#   large     AllReduce (ring) and AllToAll 1 / 16 MiB on 64 hosts, 0 and 1 % loss
#   failure   a spine fails 1 ms into a 16 MiB AllReduce; fabric converges in 10 ms or never
#   incast    15 and 63 senders x 4 MiB into one host
#
# Writes docs/perf/cluster-<experiment>.csv (one row per run and seed, mroc-sim
# cluster's --csv format), cluster-*.png (gnuplot; scripts cluster-*.gp next to
# them) and cluster-tables.md (the markdown tables docs/PERF.md quotes).
# Environment: BUILD (build), OUT (docs/perf), SEEDS ("1 2 3 4 5"), JOBS (2:
# runs in parallel, one per core), ITERS (10: iterations of the small and coll
# points; at 10 one lost or queued packet decides a p50, 100 makes it a measurement).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
OUT=${OUT:-$TOP/docs/perf}
SIM=$BUILD/mroc-sim
EXPERIMENTS=${EXPERIMENTS:-loss planes small coll large failure incast}
SEEDS=${SEEDS:-1 2 3 4 5}
JOBS=${JOBS:-2}
ITERS=${ITERS:-10}
ALL=rocev2-pfc,rocev2-qp-per-plane,rocev2-lossy,metaroce

mkdir -p "$OUT"
[ -x "$SIM" ] || { echo "bench-sim: $SIM missing (make first)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Points of an experiment are queued with q, then run: every point once per
# seed, JOBS at a time, each into its own CSV and log (so parallel runs never
# share a file), then merged in queue order.
NQ=0
q() {	# q ARGS...: queue one mroc-sim cluster point
	NQ=$((NQ + 1))
	printf '%s\n' "$*" > "$WORK/cmd.$NQ"
}

run_queue() {	# run_queue EXPERIMENT
	local csv=$OUT/cluster-$1.csv i s
	rm -f "$csv"
	echo "== $1: $NQ points x seeds $SEEDS, $JOBS at a time"
	for ((i = 1; i <= NQ; i++)); do
		for s in $SEEDS; do
			echo "$i $s"
		done
	done | xargs -P "$JOBS" -n 2 sh -c '
		w=$0 sim=$1 i=$2 s=$3
		args=$(cat "$w/cmd.$i")
		echo "+ mroc-sim cluster $args --seed $s" > "$w/log.$i.$s"
		"$sim" cluster $args --seed "$s" --csv "$w/csv.$i.$s" >> "$w/log.$i.$s" 2>&1 ||
			echo "  (a run failed: see above)" >> "$w/log.$i.$s"' "$WORK" "$SIM"
	for ((i = 1; i <= NQ; i++)); do
		for s in $SEEDS; do
			cat "$WORK/log.$i.$s"
			if [ ! -s "$csv" ]; then
				cat "$WORK/csv.$i.$s" > "$csv"
			else
				tail -n +2 "$WORK/csv.$i.$s" >> "$csv"
			fi
			rm -f "$WORK/log.$i.$s" "$WORK/csv.$i.$s"
		done
		rm -f "$WORK/cmd.$i"
	done
	NQ=0
}

exp_loss() {
	for l in 0 0.001 0.01 0.05 0.1; do
		# --limit: a tail loss costs rocev2-pfc a 1.07 s NIC timeout.
		q --op permutation --bytes 16M --loss "$l" --transport $ALL --limit 60000 --tag loss
	done
}

exp_planes() {
	for p in 1 2 4 8; do
		q --op permutation --bytes 16M --planes "$p" --transport $ALL --tag planes
	done
}

exp_small() {
	local s="--op allreduce --sizes 8:32K --step 8 --ranks 32 --iters $ITERS --transport $ALL"
	q $s --bg permutation --bg-load 0.5 --tag bg-l0
	# 16 of the other hosts each offer half a NIC to one: 8:1 into its port, PFC pauses spread.
	q $s --bg incast --bg-senders 16 --bg-load 0.5 --tag incast-l0
	q $s --tag idle-l0
	# At 1% loss on an idle fabric only: each 1.07 s NIC timeout of the PFC baselines
	# would cost seconds of simulated background traffic (minutes of CPU).
	q $s --loss 0.01 --limit 60000 --tag idle-l0.01
	q $s --algo ring --tag ring-idle-l0
}

exp_coll() {
	local op s
	for op in allgather reducescatter; do
		s="--op $op --sizes 8:32K --step 8 --ranks 32 --iters $ITERS --transport $ALL"
		q $s --tag "$op-l0"
		q $s --loss 0.01 --limit 60000 --tag "$op-l0.01"
		q --op "$op" --algo ring --sizes 1M:16M --step 16 --transport $ALL --limit 60000 \
			--tag "$op-ring-large"
	done
}

exp_large() {
	for l in 0 0.01; do
		q --op allreduce --algo ring --sizes 1M:16M --step 16 --loss "$l" --transport $ALL \
			--limit 60000 --tag "allreduce-l$l"
		q --op alltoall --sizes 1M:16M --step 16 --loss "$l" --transport $ALL --limit 60000 \
			--tag "alltoall-l$l"
	done
}

exp_failure() {
	local t=rocev2-pfc,rocev2-lossy,metaroce
	q --op allreduce --algo ring --bytes 16M --transport $t --tag none
	q --op allreduce --algo ring --bytes 16M --transport $t --fail spine --fail-at 1000 \
		--tag converge-10ms
	q --op allreduce --algo ring --bytes 16M --transport $t --fail spine --fail-at 1000 \
		--converge 1000000000 --tag converge-never
}

exp_incast() {
	for s in 15 63; do
		q --op incast --senders "$s" --bytes 4M --transport rocev2-pfc,rocev2-lossy,metaroce \
			--tag "s$s" -v
	done
}

for e in $EXPERIMENTS; do
	t0=$(date +%s)
	"exp_$e"
	run_queue "$e"
	echo "== $e: $(( $(date +%s) - t0 )) s"
done

"$TOP/scripts/bench-sim-report.sh" "$OUT"
