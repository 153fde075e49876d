#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A/B of mrocd variants on the veth pair of scripts/bench-net.sh (issue #22):
# each variant is a build and a change to both daemons' configuration; the
# variants take turns, ROUNDS times, each a write_bw of 1 MiB messages
# (MetaRoCE) for SECS.  Per run: data packets per second, both mrocd's CPU
# time per data packet (user + system), the receiver's ACKs per data packet,
# the sender's retransmissions and RTOs (how many of them on paths without an
# RTT sample, and spurious), and the load average at start and
# end.  Taking turns puts both variants under the same load; the rates are
# still anecdotes on a loaded machine, the counters are not.  Root.
# A variant NAME=bare:BUILD[:ARGS] is that build's bare AF_XDP pair instead
# (xsk-baseline rx and tx as bench-net.sh runs them, ARGS added to both, e.g.
# --no-stamp), so mroc and its yardstick take turns too; its CPU column is
# both processes' per packet.
#
#   scripts/pkt-ab.sh NAME=BUILD[:SED] ...     e.g. base=/tmp/b new=build "nodelay=build:s/delay_target_us = 50/delay_target_us = 0/"
#   scripts/pkt-ab.sh mroc=build bare=bare:build "nostamp=bare:build:--no-stamp"
#   scripts/pkt-ab.sh bare=bare:build "frags2=bare:build:--frags 2"   (two descriptors a packet)
#   env: ROUNDS (3), SECS (5), PAYLOAD (1024; "max": the largest the 3506-byte link leaves
#        mrocd's default token mode, 3386, as bench-net.sh's; 3387-3394 need security.mode
#        "none" in every variant's SED), TEST ("write_bw --mode metaroce"),
#        CALLS (1: a second table, each process's system calls by kind, context switches,
#        task-clock and NAPI polls (kernel receive batches run in its context) per data packet
#        over the run, from perf stat's software events and tracepoints: no hardware counters
#        needed; and each mrocd's packets per AF_XDP receive and TX batch, its counters),
#        RT (a SCHED_FIFO priority, e.g. 5: everything runs under chrt -f RT)
#   RT: on a loaded machine a daemon waits milliseconds for a CPU, its batches fill up and
#   the receiver sends 0.008 ACKs per data packet instead of the quiet 0.21-0.25; under
#   SCHED_FIFO nothing else gets the CPUs while a run lasts (the kernel leaves others 5 %), and
#   the counts come out as on a quiet machine (0.21-0.25 ACKs per data packet; session 12's quiet
#   end 0.22-0.24).  The rates still vary from run to run, and understate mroc's: the
#   kernel stops all SCHED_FIFO threads for 50 ms a second (sched_rt_runtime_us), the
#   receiver's ACKs stop, and the sender's paths time out (11-19 RTOs in 3 s with nothing
#   dropped or lost; dmesg: "RT throttling activated") while the bare pair just waits (issue
#   #22, s13-pkt13).  It stalls every other process for the whole script: not on a machine others measure on.
#   SED is applied (sed -e) to both daemons' configuration files after bench-net's own changes.
set -u
if [ -n "${RT:-}" ] && [ -z "${PKT_AB_RT:-}" ]; then
	PKT_AB_RT=1 exec chrt -f "$RT" "$0" "$@"
fi
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
PAYLOAD=${PAYLOAD:-1024}
TEST=${TEST:-write_bw --mode metaroce}
CALLS=${CALLS:-}
. "$(dirname "$0")/../tests/e2e/lib.sh"
e2e_require
[ $# -ge 1 ] || { echo "usage: $0 NAME=BUILD[:SED] ..."; exit 2; }
[ "$PAYLOAD" = max ] && PAYLOAD=$(e2e_max_payload 3506 token)
e2e_setup_pair
MTU=1500 FS=2048
[ "$PAYLOAD" -gt 1024 ] && MTU=3506 FS=4096
ip -n "$NS_A" link set "$IF_A" mtu $MTU
ip -n "$NS_B" link set "$IF_B" mtu $MTU

# CALLS: what perf stat counts per process (no hardware counters needed).
EV=task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_sendto
EV=$EV,syscalls:sys_enter_recvfrom,syscalls:sys_enter_ppoll,syscalls:sys_enter_poll
EV=$EV,syscalls:sys_enter_sched_yield,syscalls:sys_enter_futex,napi:napi_poll
[ -n "$CALLS" ] && ! command -v perf >/dev/null && { echo "CALLS needs perf (linux-perf)"; exit 2; }
: >"$E2E_DIR/calls"
# calls_start NAME PID: perf stat on PID (all its threads) until calls_stop or its exit.
calls_start() {
	[ -n "$CALLS" ] || return 0
	perf stat -x, -e "$EV" -o "$E2E_DIR/$1.perf" -p "$2" 2>/dev/null &
	eval "PERF_$1=$!"
}
calls_stop() {
	local n p
	[ -n "$CALLS" ] || return 0
	for n in "$@"; do
		p=$(eval "echo \$PERF_$n")
		kill -INT "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
}
# batches COUNTERS0 COUNTERS1: "packets per receive batch | per TX batch" of a daemon's
# AF_XDP sockets over the run ("-" for a build without the counters).
batches() {
	jq -nr --argjson a "$1" --argjson b "$2" 'def per(n; d):
		((($b.backend[n] // 0) - ($a.backend[n] // 0)) as $n |
		 (($b.backend[d] // 0) - ($a.backend[d] // 0)) as $d |
		 if $d > 0 then ($n / $d * 10 | round / 10 | tostring) else "-" end);
		"\(per("rx_pkts"; "rx_batches")) | \(per("tx_pkts"; "tx_batches"))"'
}
# calls_row VARIANT SIDE NAME PKTS [BATCHES]: NAME's counts per data packet, a row of the second table.
calls_row() {
	[ -n "$CALLS" ] || return 0
	awk -F, -v v="$1" -v s="$2" -v p="$4" -v bt="${5:-- | -}" '
		{ c[$3] = $1 }
		END { p = p > 0 ? p : 1
		      printf "| %s | %s | %.0f | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.3f | %s |\n", v, s,
			c["task-clock"] * 1e6 / p, c["context-switches"] / p, c["raw_syscalls:sys_enter"] / p,
			c["syscalls:sys_enter_sendto"] / p, c["syscalls:sys_enter_recvfrom"] / p,
			(c["syscalls:sys_enter_ppoll"] + c["syscalls:sys_enter_poll"]) / p,
			c["syscalls:sys_enter_sched_yield"] / p, c["syscalls:sys_enter_futex"] / p,
			c["napi:napi_poll"] / p, bt }' "$E2E_DIR/$3.perf" >>"$E2E_DIR/calls"
}

cpu_ns() {
	awk -v t="$(getconf CLK_TCK)" '{ printf "%.0f\n", ($14 + $15) * 1e9 / t }' "/proc/$(e2e_pid "$1")/stat"
}

# run NAME BUILD SED: one write_bw on a fresh pair (daemons a$K, b$K); one table row.
K=0
run() {
	local name=$1 build=$2 sedx=$3 n a0 b0 a1 b1 c0 c1 l0 l1 j srv
	K=$((K + 1))
	for n in a b; do
		if [ $n = a ]; then e2e_config a$K af_xdp "$IF_A" "$IP_A" "$IP_B"
		else e2e_config b$K af_xdp "$IF_B" "$IP_B" "$IP_A"; fi
		sed -i "/busy_poll_us/d; s/log_level = \"debug\"/log_level = \"warning\"/; s/umem_frames = 4096;/umem_frames = 8192; frame_size = $FS; mtu = $PAYLOAD;/; s/keepalive_ms = 100;/keepalive_ms = 1000;/; s/rto_init_us = 20000;/rto_init_us = 20000; rto_min_us = 5000;/" "$E2E_DIR/$n$K.conf"
		[ -n "$sedx" ] && sed -i -e "$sedx" "$E2E_DIR/$n$K.conf"
	done
	MROCD=$build/mrocd
	e2e_start a$K "$NS_A"
	e2e_start b$K "$NS_B"
	e2e_wait_ready a$K
	e2e_wait_ready b$K
	calls_start a$K "$(e2e_pid a$K)"
	calls_start b$K "$(e2e_pid b$K)"
	sleep 0.2
	a0=$(e2e_admin a$K counters) b0=$(e2e_admin b$K counters) c0=$(($(cpu_ns a$K) + $(cpu_ns b$K)))
	l0=$(cut -d' ' -f1 /proc/loadavg)
	# shellcheck disable=SC2086
	ip netns exec "$NS_B" timeout 120 "$build/mroc-perf" $TEST -S "$E2E_DIR/b$K.ctl" --sleep -j -s 1M -D "$SECS" >/dev/null 2>&1 &
	srv=$!
	sleep 0.3
	# shellcheck disable=SC2086
	j=$(ip netns exec "$NS_A" timeout 120 "$build/mroc-perf" $TEST -S "$E2E_DIR/a$K.ctl" --sleep -j -s 1M -D "$SECS" "$IP_B" 2>/dev/null)
	wait $srv
	l1=$(cut -d' ' -f1 /proc/loadavg)
	a1=$(e2e_admin a$K counters) b1=$(e2e_admin b$K counters) c1=$(($(cpu_ns a$K) + $(cpu_ns b$K)))
	calls_stop a$K b$K
	n=$(jq -n --argjson a0 "$a0" --argjson a1 "$a1" '$a1.engine.tx_data - $a0.engine.tx_data')
	calls_row "$name" sender a$K "$n" "$(batches "$a0" "$a1")"
	calls_row "$name" receiver b$K "$n" "$(batches "$b0" "$b1")"
	e2e_stop a$K
	e2e_stop b$K
	jq -nr --arg n "$name" --argjson j "${j:-null}" --argjson a0 "$a0" --argjson a1 "$a1" \
		--argjson b0 "$b0" --argjson b1 "$b1" --argjson c $((c1 - c0)) --arg ld "$l0-$l1" \
		--argjson p "$PAYLOAD" '
		($a1.engine.tx_data - $a0.engine.tx_data) as $d |
		"| \($n) | \(if $j then ($j.results[0].bw_avg_gbps * 1e9 / 8 / $p / 1e6 * 1000 | round / 1000) else "failed" end) | \($c / ([$d, 1] | max) | round) | \(($b1.engine.tx_acks - $b0.engine.tx_acks) / ([$d, 1] | max) * 1000 | round / 1000) | \($a1.engine.tx_retx - $a0.engine.tx_retx) / \($a1.engine.rto - $a0.engine.rto) (\(($a1.engine.rto_unsampled // 0) - ($a0.engine.rto_unsampled // 0)), \(($a1.engine.rto_spurious // 0) - ($a0.engine.rto_spurious // 0))) | \($ld) |"'
}

# bare NAME BUILD ARGS: one run of the bare pair (bench-net.sh's bare()); one table row.
MAC_B=$(ip -n "$NS_B" -j link show "$IF_B" | jq -r '.[0].address')
bare() {
	local name=$1 build=$2 args=$3 rx tx l0 l1
	l0=$(cut -d' ' -f1 /proc/loadavg)
	rm -f "$E2E_DIR/credit"
	# shellcheck disable=SC2086
	ip netns exec "$NS_B" "$build/xsk-baseline" rx -i "$IF_B" -f "$FS" -D "$SECS" \
		--credit "$E2E_DIR/credit" $args >"$E2E_DIR/bare.json" 2>"$E2E_DIR/bare-rx.err" &
	rx=$!
	sleep 0.5
	calls_start brx $rx	# ip netns exec execs the program: the same pid
	# shellcheck disable=SC2086
	ip netns exec "$NS_A" "$build/xsk-baseline" tx -i "$IF_A" -f "$FS" -s "$PAYLOAD" \
		-D $((SECS + 2)) --credit "$E2E_DIR/credit" --src "$IP_A" --dst "$IP_B" \
		--dmac "$MAC_B" $args >"$E2E_DIR/bare-tx.json" 2>"$E2E_DIR/bare-tx.err" &
	tx=$!
	calls_start btx $tx
	wait $tx
	wait $rx
	calls_stop brx btx
	# Each side's counts over its own life, per packet it handled (the sender runs 2 s longer).
	calls_row "$name" sender btx "$(jq -r .pkts "$E2E_DIR/bare-tx.json" 2>/dev/null)"
	calls_row "$name" receiver brx "$(jq -r .pkts "$E2E_DIR/bare.json" 2>/dev/null)"
	l1=$(cut -d' ' -f1 /proc/loadavg)
	jq -r -s --arg n "$name" --arg ld "$l0-$l1" \
		'"| \($n) | \(.[0].mpps * 1000 | round / 1000) | \(.[0].cpu_ns_per_pkt + .[1].cpu_ns_per_pkt | round) | - | - | \($ld) |"' \
		"$E2E_DIR/bare.json" "$E2E_DIR/bare-tx.json" 2>/dev/null ||
		{ echo "| $name | failed | | | | $l0-$l1 |"; cat "$E2E_DIR/bare.json" "$E2E_DIR/bare-rx.err" "$E2E_DIR/bare-tx.err" >&2; }
}

echo "$TEST, 1 MiB messages, payload $PAYLOAD, $SECS s a run, $ROUNDS rounds, variants in turn"
echo
echo "| variant | Mpps (payload) | both mrocd CPU ns per data packet | ACKs per data packet | retx / RTOs (on unsampled paths, spurious) | load start-end |"
echo "|---|---|---|---|---|---|"
for r in $(seq "$ROUNDS"); do
	for v in "$@"; do
		name=${v%%=*}
		rest=${v#*=}
		if [[ $rest == bare:* ]]; then
			rest=${rest#bare:}
			build=${rest%%:*}
			case $build in /*) ;; *) build=$E2E_TOP/$build ;; esac
			args=
			[[ $rest == *:* ]] && args=${rest#*:}
			bare "$name" "$build" "$args"
			continue
		fi
		build=${rest%%:*}
		sedx=
		[[ $rest == *:* ]] && sedx=${rest#*:}
		case $build in /*) ;; *) build=$E2E_TOP/$build ;; esac
		run "$name" "$build" "$sedx"
	done
done
if [ -n "$CALLS" ]; then
	echo
	echo "Per data packet, each process over the run (bare: over its life, per packet it sent or received):"
	echo
	echo "| variant | process | task-clock ns | context switches | system calls | sendto | recvfrom | ppoll/poll | sched_yield | futex | NAPI polls | packets per RX batch | per TX batch |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	cat "$E2E_DIR/calls"
fi
echo
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ)"
