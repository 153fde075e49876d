#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Local clients that try to stall or starve mrocd (issue 13), on real daemons
# (UDP backend over veth in namespaces: the client side does not depend on
# the backend, and AF_XDP copy mode stalls now and then on a loaded machine):
#  - hostile fds: a full blocking pipe, a socket or a semaphore eventfd as
#    doorbell or completion channel are refused; a blocking eventfd at its
#    maximum, and a doorbell drained behind the daemon's back, do not stall
#    the worker: meanwhile a second client's verified transfer completes and
#    mroc-cli status answers.
set -u
. "$(dirname "$0")/lib.sh"

PERF=$BUILD/mroc-perf
CLI=$BUILD/mroc-cli
EVIL=$BUILD/tests/e2e/evil_client
e2e_require
for b in "$PERF" "$CLI" "$EVIL"; do
	[ -x "$b" ] || skip "$b not built"
done
e2e_setup_pair
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b

# perf NAME PORT [ARGS...]: server in B, client in A, both in the background;
# their pids go to SRV_PID and CLI_PID.
perf_start() {
	local name=$1 port=$2
	shift 2
	ip netns exec "$NS_B" timeout 60 "$PERF" write_bw --mrocd-socket "$E2E_DIR/b.ctl" -p "$port" --sleep "$@" \
		>"$E2E_DIR/srv-$name.txt" 2>&1 &
	SRV_PID=$!
	sleep 0.3
	ip netns exec "$NS_A" timeout 60 "$PERF" write_bw --mrocd-socket "$E2E_DIR/a.ctl" -p "$port" --sleep "$@" \
		"$IP_B" >"$E2E_DIR/cli-$name.txt" 2>&1 &
	CLI_PID=$!
}

perf_wait() {
	local name=$1 rc src
	wait "$CLI_PID"
	rc=$?
	wait "$SRV_PID"
	src=$?
	if [ $rc != 0 ] || [ $src != 0 ]; then
		cat "$E2E_DIR/cli-$name.txt" "$E2E_DIR/srv-$name.txt"
		return 1
	fi
}

# ---- hostile fds ----------------------------------------------------------------
ip netns exec "$NS_A" "$EVIL" "$E2E_DIR/a.ctl" stall 6 >"$E2E_DIR/evil-stall.log" 2>&1 &
evil=$!
sleep 1
perf_start stall 18801 --verify -s 65536 -n 300
answers=0
while kill -0 "$evil" 2>/dev/null; do
	timeout 5 "$CLI" -S "$E2E_DIR/a.admin" status >/dev/null || fail "mroc-cli status got no answer"
	answers=$((answers + 1))
	sleep 0.5
done
wait "$evil" || { cat "$E2E_DIR/evil-stall.log"; fail "the stalling client was not handled"; }
perf_wait stall || fail "a verified transfer next to the stalling client"
[ "$answers" -ge 3 ] || fail "mroc-cli answered only $answers times"
c=$(e2e_admin a counters) || fail "a stopped answering"
jq -e '.clients.bad_wrs >= 100' <<<"$c" >/dev/null || fail "bad requests not counted: $(jq -c .clients <<<"$c")"
ok "hostile fds refused; a saturated blocking eventfd and an eaten doorbell stall nothing" \
	"(verified transfer done, mroc-cli answered $answers times)"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
