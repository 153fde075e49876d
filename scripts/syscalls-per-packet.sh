#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# System calls per completion and per data packet, counted rather than timed (issue #22):
# two mrocd on AF_XDP over a veth pair (tests/e2e/lib.sh), C write_bw clients of Q QPs each
# from one to the other, and `perf stat` on the sending mrocd and on every client for SECS
# seconds in the middle of the run.  Prints the daemon's counters over the same window
# (completions, data packets, completion channels signalled and the system calls that took,
# worker loops, sleeps, doorbell wake-ups) and each event per completion and per packet, with
# the load average (these counts depend far less on load than a rate, but not at all is too
# much to say: how often clients arm and the worker sleeps does).  Root.
#
#   scripts/syscalls-per-packet.sh C Q SIZE [mroc-perf options...]
#   e.g. scripts/syscalls-per-packet.sh 4 4 4096 --sleep -Q 1 -t 16
#   env: BUILD (build), SECS (3)
set -u
. "$(dirname "$0")/../tests/e2e/lib.sh"
PERF=$BUILD/mroc-perf
[ $# -ge 3 ] || { echo "usage: $0 C Q SIZE [mroc-perf options...]" >&2; exit 2; }
C=$1 Q=$2 S=$3
shift 3
SECS=${SECS:-3}
e2e_require
[ -x "$PERF" ] || skip "$PERF not built"
command -v perf >/dev/null || skip "needs perf (linux-perf)"
e2e_setup_pair
e2e_pair_up
e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 10 || fail "no control link"
CL=()
for i in $(seq "$C"); do
	ip netns exec "$NS_B" "$PERF" write_bw -S "$E2E_DIR/b.ctl" -p $((18800 + i)) -D $((SECS + 5)) \
		"$@" >"$E2E_DIR/srv$i" 2>&1 &
	E2E_PIDS+=($!)
done
sleep 0.5
for i in $(seq "$C"); do
	ip netns exec "$NS_A" "$PERF" write_bw -S "$E2E_DIR/a.ctl" -p $((18800 + i)) -D $((SECS + 5)) \
		-q "$Q" -s "$S" "$@" "$IP_B" >"$E2E_DIR/cli$i" 2>&1 &
	E2E_PIDS+=($!)
	CL+=($!)
done
e2e_wait a qps "[.qps[] | select(.tx_bytes > 0)] | length >= $((C * Q))" 40 ||
	fail "not all $((C * Q)) QPs sent: $(cat "$E2E_DIR"/cli*)"
sleep 1
EV=raw_syscalls:sys_enter,syscalls:sys_enter_io_submit,syscalls:sys_enter_write
EV=$EV,syscalls:sys_enter_ppoll,syscalls:sys_enter_poll,syscalls:sys_enter_sched_yield
EV=$EV,syscalls:sys_enter_sendto,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_read
EV=$EV,context-switches,task-clock,instructions
# The counters are read inside perf's window, at its ends: the same window for both.
ADMIN="{\"version\":1,\"cmd\":\"counters\"}"
perf stat -x, -e "$EV" -p "$(e2e_pid a)" -o "$E2E_DIR/daemon" -- bash -c \
	"echo '$ADMIN' | socat -t 5 - UNIX-CONNECT:$E2E_DIR/a.admin >$E2E_DIR/c0; sleep $SECS;
	 echo '$ADMIN' | socat -t 5 - UNIX-CONNECT:$E2E_DIR/a.admin >$E2E_DIR/c1" &
pd=$!
perf stat -x, -e "$EV" -p "$(IFS=,; echo "${CL[*]}")" -o "$E2E_DIR/clients" -- sleep "$SECS" &
pc=$!
wait $pd $pc
c0=$(cat "$E2E_DIR/c0") c1=$(cat "$E2E_DIR/c1")
for p in "${CL[@]}"; do wait "$p" || fail "a client failed: $(cat "$E2E_DIR"/cli*)"; done
d() { jq -n --argjson a "$c0" --argjson b "$c1" "$1"; }
cqes=$(d '$b.clients.cqes - $a.clients.cqes')
txd=$(d '$b.engine.tx_data - $a.engine.tx_data')
echo "$C x $Q QPs, $S B, $*; load $(cut -d' ' -f1-3 /proc/loadavg); over $SECS s: completions $cqes," \
	"data packets $txd, channels signalled $(d '$b.clients.cq_signals - $a.clients.cq_signals')" \
	"in $(d '$b.clients.cq_signal_syscalls - $a.clients.cq_signal_syscalls') system calls," \
	"worker loops $(d '$b.worker.loops - $a.worker.loops'), sleeps $(d '$b.worker.sleeps - $a.worker.sleeps')," \
	"doorbell wake-ups $(d '$b.worker.wakeups_doorbell - $a.worker.wakeups_doorbell')," \
	"client doorbells taken $(d '$b.clients.doorbells - $a.clients.doorbells') in" \
	"$(d '$b.clients.doorbell_syscalls - $a.clients.doorbell_syscalls') epoll_waits, looking at" \
	"$(d '$b.clients.doorbell_qps - $a.clients.doorbell_qps') QPs"
echo "| process | event | count | per completion | per data packet |"
echo "|---|---|---|---|---|"
for f in daemon clients; do
	grep -v '^#' "$E2E_DIR/$f" | grep . | awk -F, -v c="$cqes" -v t="$txd" -v f=$f '{
		sub(/syscalls:sys_enter_|raw_syscalls:/, "", $3)
		if ($1 ~ /^[0-9.]+$/) printf "| %s | %s | %s | %.4f | %.4f |\n", f, $3, $1, $1 / (c ? c : 1), $1 / (t ? t : 1)
		else printf "| %s | %s | %s | - | - |\n", f, $3, $1 }'
done
