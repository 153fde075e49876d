#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Real packets, side by side in one run over the same veth pair between two
# network namespaces: mroc write_bw (64 KiB and 1 MiB) in MetaRoCE and
# RoCEv2-baseline mode against kernel TCP (iperf3), and write_lat (8 B)
# against a kernel TCP ping-pong (sockperf).  Both mrocd on AF_XDP (native
# XDP, copy mode: veth has no zero-copy) with the largest MTU native XDP
# allows on veth.  Prints a markdown table; root; part of make bench.
#
#   scripts/bench-net.sh [SECONDS]        default 5 s per bandwidth run
set -u
SECS=${1:-5}
. "$(dirname "$0")/../tests/e2e/lib.sh"
PERF=$BUILD/mroc-perf
e2e_require
for t in iperf3 sockperf; do command -v $t >/dev/null || skip "needs $t (scripts/deps.sh)"; done
[ -x "$PERF" ] || skip "$PERF not built"
e2e_setup_pair
# Native XDP on veth takes frames up to about a page: MTU 3500, MetaRoCE payload 3392.
ip -n "$NS_A" link set "$IF_A" mtu 3500
ip -n "$NS_B" link set "$IF_B" mtu 3500
for n in a b; do
	if [ $n = a ]; then e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"; else e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"; fi
	sed -i 's/log_level = "debug"/log_level = "warning"/; s/umem_frames = 4096;/umem_frames = 8192; frame_size = 4096; mtu = 3392;/; s/keepalive_ms = 100;/keepalive_ms = 1000;/; s/rto_init_us = 20000;/rto_init_us = 20000; rto_min_us = 5000;/' "$E2E_DIR/$n.conf"
done
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b

# mperf TEST ARGS...: one mroc-perf run, prints its JSON result line.
mperf() {
	local t=$1
	shift
	ip netns exec "$NS_B" timeout 120 "$PERF" "$t" -S "$E2E_DIR/b.ctl" --sleep -j "$@" >"$E2E_DIR/srv.json" 2>&1 &
	local srv=$!
	sleep 0.3
	ip netns exec "$NS_A" timeout 120 "$PERF" "$t" -S "$E2E_DIR/a.ctl" --sleep -j "$@" "$IP_B" >"$E2E_DIR/cli.json" 2>"$E2E_DIR/cli.err"
	wait "$srv"
	cat "$E2E_DIR/cli.json"
}

bw_row() { # label json
	jq -r --arg l "$1" '.results[0] | "| \($l) | \(.bytes) | \(.bw_avg_gbps | . * 100 | round / 100) | \(.msg_rate_mpps * 1000 | round / 1000) |"' <<<"$2" 2>/dev/null ||
		echo "| $1 | - | failed | - |"
}

echo "| test | message bytes | Gbit/s | Mmsg/s |"
echo "|---|---|---|---|"
for mode in metaroce rocev2; do
	for s in 65536 1048576; do
		bw_row "mroc write_bw ($mode)" "$(mperf write_bw --mode "$mode" -s "$s" -D "$SECS")"
	done
done
ip netns exec "$NS_B" iperf3 -s -1 -D >/dev/null 2>&1
sleep 0.3
for st in 1 4; do
	ip netns exec "$NS_B" iperf3 -s -1 -D >/dev/null 2>&1
	sleep 0.3
	g=$(ip netns exec "$NS_A" iperf3 -c "$IP_B" -t "$SECS" -P "$st" -J 2>/dev/null |
	    jq '.end.sum_received.bits_per_second / 1e9 | . * 100 | round / 100')
	echo "| kernel TCP (iperf3, $st stream$([ $st = 1 ] || echo s)) | 128K writes | ${g:-failed} | - |"
done
echo
echo "| test | t_min us | t_typical (median) us | t_avg us | 99% us |"
echo "|---|---|---|---|---|"
for mode in metaroce rocev2; do
	jq -r --arg m "$mode" '.results[0] | "| mroc write_lat 8 B (\($m)) | \(.t_min_us) | \(.t_typical_us) | \(.t_avg_us) | \(.p99_us) |"' \
		<<<"$(mperf write_lat --mode "$mode" -s 8 -n 2000)" 2>/dev/null || echo "| mroc write_lat ($mode) | failed |||"
done
ip netns exec "$NS_B" sockperf server --tcp -i "$IP_B" -p 11111 >/dev/null 2>&1 &
E2E_PIDS+=($!)
sleep 0.5
ip netns exec "$NS_A" sockperf ping-pong --tcp -i "$IP_B" -p 11111 -m 14 -t "$SECS" 2>&1 |
	awk '/<MIN>/ {min=$NF} /<MAX>/ {max=$NF} /percentile 50.000/ {med=$NF} /percentile 99.000/ {p99=$NF} /avg-latency/ {for (i=1;i<=NF;i++) if ($i ~ /avg-latency=/) {split($i,a,"="); avg=a[2]}}
	     END { printf "| kernel TCP ping-pong 14 B (sockperf: its minimum; half round trip) | %s | %s | %s | %s |\n", min, med, avg, p99 }'
echo
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d)"
