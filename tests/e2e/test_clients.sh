#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libmroc clients on real daemons (AF_XDP over veth in namespaces):
#  - a client speaking garbage (evil_client): errors, error completions,
#    disconnected for corrupted rings; the daemon stays up; its registered
#    memfd cannot be punched (mrocd sealed it), one closed to seals is refused;
#  - every operation with --verify at sizes from 1 B to 8 MiB (mroc-perf);
#  - two clients at once on the same daemons;
#  - a client killed with SIGKILL mid-transfer: the daemon survives, the
#    peer's side ends with an error, and a new client works.
set -u
. "$(dirname "$0")/lib.sh"

PERF=$BUILD/mroc-perf
EVIL=$BUILD/tests/e2e/evil_client
e2e_require
[ -x "$PERF" ] || skip "$PERF not built"
[ -x "$EVIL" ] || skip "$EVIL not built"
e2e_setup_pair
e2e_pair_up

ip netns exec "$NS_A" "$EVIL" "$E2E_DIR/a.ctl" || fail "the daemon did not handle the evil client"
c=$(e2e_admin a counters) || fail "a stopped answering after the evil client"
jq -e '.clients.kicked >= 1 and .clients.bad_wrs >= 4 and .clients.clients == 0' <<<"$c" >/dev/null ||
	fail "evil client not counted/kicked: $(jq -c .clients <<<"$c")"
ok "garbage from a client: errors and error completions, then disconnected; daemon up"

# perf TEST PORT [ARGS...]: server in B, client in A; both must succeed.
perf() {
	local t=$1 port=$2
	shift 2
	ip netns exec "$NS_B" timeout 60 "$PERF" "$t" --mrocd-socket "$E2E_DIR/b.ctl" -p "$port" --sleep "$@" \
		>"$E2E_DIR/srv-$t-$port.txt" 2>&1 &
	local srv=$!
	sleep 0.3
	ip netns exec "$NS_A" timeout 60 "$PERF" "$t" --mrocd-socket "$E2E_DIR/a.ctl" -p "$port" --sleep "$@" "$IP_B" \
		>"$E2E_DIR/cli-$t-$port.txt" 2>&1
	local rc=$?
	wait "$srv"
	local src=$?
	if [ $rc != 0 ] || [ $src != 0 ]; then
		cat "$E2E_DIR/cli-$t-$port.txt" "$E2E_DIR/srv-$t-$port.txt"
		return 1
	fi
}

for t in write_bw send_bw read_bw; do
	for s in 1 65536 8388608; do
		n=200
		[ "$s" = 8388608 ] && n=4
		perf "$t" 18515 --verify -s "$s" -n "$n" || fail "$t -s $s --verify"
	done
done
for t in write_lat send_lat read_lat; do
	perf "$t" 18515 --verify -s 8 -n 200 || fail "$t --verify"
done
ok "write, send, read (bw and lat) verified byte for byte at 1 B, 64 KiB and 8 MiB"

# --sleep over many QPs without --verify: mroc-perf waits event-driven (only the QPs whose
# channel fired are visited), by iterations and by duration (the stop re-arms every QP).
perf write_bw 18516 -s 65536 -q 32 -t 4 -n 300 --slots 8 || fail "write_bw --sleep -q 32 -n 300"
perf write_bw 18517 -s 4096 -q 48 -t 4 -D 2 --slots 8 || fail "write_bw --sleep -q 48 -D 2"
perf read_bw 18518 -s 16384 -q 8 -t 2 -n 500 --slots 8 || fail "read_bw --sleep -q 8"
ok "32 and 48 QPs of one client sleeping on their completion channels, event-driven"

perf write_bw 18601 --verify -s 65536 -n 400 &
p1=$!
perf send_bw 18602 --verify -s 4096 -n 400 &
p2=$!
wait $p1 || fail "first of two concurrent clients"
wait $p2 || fail "second of two concurrent clients"
ok "two clients at once on the same daemons"

ip netns exec "$NS_B" timeout 60 "$PERF" write_bw --mrocd-socket "$E2E_DIR/b.ctl" -p 18700 --sleep -D 30 \
	>"$E2E_DIR/srv-kill.txt" 2>&1 &
srv=$!
sleep 0.3
ip netns exec "$NS_A" "$PERF" write_bw --mrocd-socket "$E2E_DIR/a.ctl" -p 18700 --sleep -D 30 "$IP_B" \
	>"$E2E_DIR/cli-kill.txt" 2>&1 &
victim=$!
sleep 2
kill -KILL "$victim"
wait "$victim" 2>/dev/null
for _ in $(seq 50); do
	[ "$(e2e_admin a counters | jq .clients.clients)" = 0 ] && break
	sleep 0.1
done
[ "$(e2e_admin a counters | jq .clients.clients)" = 0 ] || fail "a did not clean up the killed client"
kill -0 "$PID_a" || fail "a died with its client"
kill -TERM "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
perf write_bw 18515 --verify -s 65536 -n 200 || fail "a new client after the kill"
ok "a client killed mid-transfer is cleaned up; the daemon survives; a new client works"

RKEY=$BUILD/tests/e2e/rkey_client
mkdir -p "$E2E_DIR/rkey"
ip netns exec "$NS_B" "$RKEY" server "$E2E_DIR/b.ctl" 4242 "$E2E_DIR/rkey" &
rsrv=$!
ip netns exec "$NS_A" "$RKEY" client "$E2E_DIR/a.ctl" 4242 "$IP_B" "$E2E_DIR/rkey" ||
	fail "bad remote keys or offsets were not refused"
touch "$E2E_DIR/rkey/done"
wait "$rsrv" || fail "something outside the valid write changed the region"
ok "a wrong rkey, a range past the end and a wrapping offset: refused, nothing written outside"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
