#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Death is reported (issue 13 #4): a mroc-perf whose mrocd is killed under it
# fails at once with the reason, whether it sleeps on the completion channel
# (--sleep: mroc_wait_cq) or busy-polls (mroc_poll_cq); a mroc-perf whose peer
# mroc-perf is killed fails too (never exit 0).  Two mrocd on the UDP backend.
set -u
. "$(dirname "$0")/lib.sh"
PERF=$BUILD/mroc-perf

e2e_require
[ -x "$PERF" ] || skip "$PERF not built"
e2e_setup_pair
PID_a= PID_b=
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"

# kill_daemon NAME: SIGKILL, reaped quietly.
kill_daemon() {
	local pid
	pid=$(e2e_pid "$1")
	T_KILL=$EPOCHREALTIME
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
}

# daemons_up: both running (a killed one restarted, its notify listener kept) and linked.
daemons_up() {
	local n ns
	for n in a b; do
		if [ -z "$(e2e_pid $n)" ]; then
			e2e_start $n "$([ $n = a ] && echo "$NS_A" || echo "$NS_B")"
		elif ! kill -0 "$(e2e_pid $n)" 2>/dev/null; then
			ns=$([ $n = a ] && echo "$NS_A" || echo "$NS_B")
			# io_uring closes a dead process's sockets a little later: wait for the port.
			for _ in $(seq 100); do
				ip netns exec "$ns" ss -Hlun sport = :4793 | grep -q . || break
				sleep 0.1
			done
			: >"$E2E_DIR/$n.notify.log"
			NOTIFY_SOCKET=$E2E_DIR/$n.notify ip netns exec "$ns" "$MROCD" -c "$E2E_DIR/$n.conf" \
				>>"$E2E_DIR/$n.log" 2>&1 &
			eval "PID_$n=$!"
			E2E_PIDS+=($!)
		fi
	done
	e2e_wait_ready a
	e2e_wait_ready b
	e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 10 || fail "a: no link to b"
}

# start TAG TEST ARGS...: server on B, client on A, for 60 s; pids in SRV and CLI.
start() {
	local tag=$1 t=$2
	shift 2
	ip netns exec "$NS_B" "$PERF" "$t" --mrocd-socket "$E2E_DIR/b.ctl" -p 18600 -D 60 "$@" \
		>"$E2E_DIR/$tag.srv.out" 2>&1 &
	SRV=$!
	E2E_PIDS+=($SRV)
	sleep 0.3
	ip netns exec "$NS_A" "$PERF" "$t" --mrocd-socket "$E2E_DIR/a.ctl" -p 18600 -D 60 "$@" "$IP_B" \
		>"$E2E_DIR/$tag.cli.out" 2>&1 &
	CLI=$!
	E2E_PIDS+=($CLI)
	# running: the client's QP has sent data (the run itself lasts 60 s)
	e2e_wait a qps '[.qps[] | select(.tx_bytes > 0)] | length >= 1' 20 ||
		fail "$tag: no data moved: $(cat "$E2E_DIR/$tag.cli.out" "$E2E_DIR/$tag.srv.out")"
	sleep 0.3
	kill -0 $CLI 2>/dev/null || fail "$tag: client exited before the kill: $(cat "$E2E_DIR/$tag.cli.out")"
	kill -0 $SRV 2>/dev/null || fail "$tag: server exited before the kill: $(cat "$E2E_DIR/$tag.srv.out")"
}

# ends TAG WHO PID: the process ends, long before its 60 s run would, with a non-zero status.
ends() {
	local tag=$1 who=$2 pid=$3 rc
	for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && fail "$tag: the $who still runs 30 s after the kill"
	echo "   $tag: $who ended $(awk -v a="$T_KILL" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s after the kill"
	wait "$pid"
	rc=$?
	[ $rc -ne 0 ] || fail "$tag: the $who exited 0: $(cat "$E2E_DIR/$tag.$who.out")"
	[ $rc -ne 124 ] && [ $rc -lt 128 ] || fail "$tag: the $who was killed (status $rc)"
	echo "   $tag: $who: status $rc: $(grep -m1 -i "error\|fail\|lost\|went away" "$E2E_DIR/$tag.$who.out")"
}

daemons_up
# 1. The client sleeps in mroc_wait_cq (send_lat --sleep); its mrocd is killed.
start sleep send_lat --sleep
kill_daemon a
ends sleep cli "$CLI"
grep -q "connection to mrocd is lost" "$E2E_DIR/sleep.cli.out" ||
	fail "sleep: the client does not say its mrocd is gone: $(cat "$E2E_DIR/sleep.cli.out")"
ends sleep srv "$SRV"
ok "a client sleeping on its CQ fails when its mrocd is killed (and so does its peer)"

daemons_up
# 1b. The same with two QPs: the client sleeps in its own poll() on both CQ fds.
start sleepq2 write_bw --sleep -q 2
kill_daemon a
ends sleepq2 cli "$CLI"
grep -q "connection to mrocd is lost" "$E2E_DIR/sleepq2.cli.out" ||
	fail "sleepq2: the client does not say its mrocd is gone: $(cat "$E2E_DIR/sleepq2.cli.out")"
ends sleepq2 srv "$SRV"
ok "a client sleeping on two CQs fails when its mrocd is killed"

daemons_up
# 2. The server busy-polls (write_lat, default mode); its mrocd is killed.
start poll write_lat
kill_daemon b
ends poll srv "$SRV"
grep -q "connection to mrocd is lost" "$E2E_DIR/poll.srv.out" ||
	fail "poll: the server does not say its mrocd is gone: $(cat "$E2E_DIR/poll.srv.out")"
ends poll cli "$CLI"
ok "a busy-polling server fails when its mrocd is killed (and so does its peer)"

daemons_up
# 3. The peer client vanishes in the middle of a write_bw (the server sees no completions).
start peercli write_bw
T_KILL=$EPOCHREALTIME
kill -KILL "$CLI"
wait "$CLI" 2>/dev/null
ends peercli srv "$SRV"
ok "the server fails when its client is killed"

# 4. The peer server vanishes in the middle of a send_lat.
start peersrv send_lat
T_KILL=$EPOCHREALTIME
kill -KILL "$SRV"
wait "$SRV" 2>/dev/null
ends peersrv cli "$CLI"
ok "the client fails when its server is killed"
