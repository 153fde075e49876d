#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mrocd needs no root: run as an unprivileged uid with exactly the ambient
# capabilities systemd/mrocd.service gives it (setpriv, as systemd's User= and
# AmbientCapabilities= would), it serves AF_XDP in native mode, a verified
# write_bw runs against a root mrocd, and after kill -9 the interface is clean
# (the program hangs on a bpf_link) and a restart with the same capabilities
# works, without CAP_SYS_ADMIN.  With any one of the capabilities taken away
# it fails at start-up with a reason.
set -u
. "$(dirname "$0")/lib.sh"

PERF=$BUILD/mroc-perf
e2e_require
[ -x "$PERF" ] || skip "$PERF not built"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
UNIT=$E2E_TOP/systemd/mrocd.service
CAPS=$(sed -n 's/^AmbientCapabilities=//p' "$UNIT")
[ -n "$CAPS" ] || fail "the unit has no AmbientCapabilities="
[ "$CAPS" = "$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")" ] ||
	fail "the unit's bounding set is not its ambient set"
# Any unprivileged uid (systemd's would be user mroc's), one per run: the kernel charges a
# UMEM to its user's locked memory (RLIMIT_MEMLOCK, 8 MiB here), so parallel runs under one
# uid (and the UMEMs of killed daemons, released asynchronously) made start-up fail (ENOBUFS).
UID_D=$((100000 + E2E_ID % 100000))

e2e_setup_pair
chmod 755 "$E2E_DIR"
install -d -o $UID_D -g $UID_D "$E2E_DIR/a"
e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
# a's sockets in a directory its user owns (systemd's RuntimeDirectory=); a UMEM within the
# default RLIMIT_MEMLOCK of 8 MiB, since a test host may not be able to raise it (the unit
# sets LimitMEMLOCK=infinity).
sed -i -e "s|$E2E_DIR/a\.|$E2E_DIR/a/a.|" -e 's/umem_frames = 4096/umem_frames = 2048/' \
	-e 's/ring_size = 1024/ring_size = 256/' -e 's/log_level = "debug"/log_level = "info"/' \
	"$E2E_DIR/a.conf"
chmod 644 "$E2E_DIR/a.conf"
# The uid runs copies of mrocd and mroc-perf in the test's own folder: the checkout may live
# where only root can enter (root's home is 0700 on Debian; so is any mktemp -d).
install -m 755 "$MROCD" "$E2E_DIR/mrocd"
install -m 755 "$PERF" "$E2E_DIR/mroc-perf"
MROCD_A=$E2E_DIR/mrocd PERF_A=$E2E_DIR/mroc-perf

# start_a CAPS LOG: mrocd a as uid $UID_D with ambient (and only) CAPS, "CAP_X CAP_Y".
start_a() {
	local list
	list=$(tr ' ' '\n' <<<"$1" | sed -n 's/^CAP_\(.*\)/+\L\1/p' | paste -sd,)
	: >"$E2E_DIR/a/notify.log"
	ip netns exec "$NS_A" setpriv --reuid=$UID_D --regid=$UID_D --clear-groups \
		--inh-caps=-all${list:+,$list} --ambient-caps=-all${list:+,$list} \
		--bounding-set=-all${list:+,$list} \
		env NOTIFY_SOCKET="$E2E_DIR/a/notify" "$MROCD_A" -c "$E2E_DIR/a.conf" >"$2" 2>&1 &
	PID_a=$!
	E2E_PIDS+=($!)
}
# ready_a: 0 once a sent READY=1, 1 if it exited first.
ready_a() {
	for _ in $(seq 100); do
		grep -q "READY=1" "$E2E_DIR/a/notify.log" 2>/dev/null && return 0
		kill -0 "$PID_a" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
socat -u "UNIX-RECV:$E2E_DIR/a/notify,mode=666" "OPEN:$E2E_DIR/a/notify.log,creat,append" &
E2E_PIDS+=($!)
for _ in $(seq 50); do [ -S "$E2E_DIR/a/notify" ] && break; sleep 0.05; done

# One capability fewer: refused at start-up, with a reason.
for drop in $CAPS; do
	start_a "$(tr ' ' '\n' <<<"$CAPS" | grep -vx "$drop" | paste -sd' ')" "$E2E_DIR/drop.log"
	ready_a && fail "mrocd started without $drop: $(cat "$E2E_DIR/drop.log")"
	wait "$PID_a"
	grep -q "^<3>start-up failed" "$E2E_DIR/drop.log" || fail "without $drop: $(tail -3 "$E2E_DIR/drop.log")"
	ip -n "$NS_A" link show dev "$IF_A" | grep -q "xdp" && fail "without $drop: an XDP program stayed"
done
ok "each of $CAPS is needed: without it mrocd stops at start-up with a reason"

start_a "$CAPS" "$E2E_DIR/a.log"
ready_a || fail "mrocd as uid $UID_D with $CAPS did not start: $(cat "$E2E_DIR/a.log")"
e2e_start b "$NS_B"
e2e_wait_ready b
st=$(echo '{"version":1,"cmd":"status"}' | socat -t 5 - "UNIX-CONNECT:$E2E_DIR/a/a.admin")
[ "$(jq -r .backend <<<"$st")" = af_xdp ] || fail "a's backend: $st"
grep -q "attached in native mode" "$E2E_DIR/a.log" || fail "not native XDP: $(cat "$E2E_DIR/a.log")"
# Without CAP_IPC_LOCK the kernel holds what a client has mrocd pin (its regions, locked in
# mrocd's mapping) to mrocd's RLIMIT_MEMLOCK, 8 MiB here: write_bw's default 32 MiB region is
# refused with the reason (ENOMEM); one of 4 KiB messages (2 MiB) fits.
ip netns exec "$NS_B" timeout 30 "$PERF" write_bw --mrocd-socket "$E2E_DIR/b.ctl" >"$E2E_DIR/srv" 2>&1 &
srv=$!
sleep 0.3
ip netns exec "$NS_A" setpriv --reuid=$UID_D --regid=$UID_D --clear-groups timeout 30 "$PERF_A" write_bw \
	--mrocd-socket "$E2E_DIR/a/a.ctl" "$IP_B" >"$E2E_DIR/cli" 2>&1 &&
	fail "a 32 MiB region pinned within an RLIMIT_MEMLOCK of 8 MiB: $(cat "$E2E_DIR/cli")"
grep -q "mrocd cannot pin (lock) more memory" "$E2E_DIR/cli" ||
	fail "no reason for the refused region: $(cat "$E2E_DIR/cli")"
wait $srv	# it fails too: its client went away
grep -q "cannot pin 33554432 bytes.*RLIMIT_MEMLOCK 8388608" "$E2E_DIR/a.log" ||
	fail "mrocd did not say why it refused the region: $(cat "$E2E_DIR/a.log")"
ok "a region over mrocd's RLIMIT_MEMLOCK: refused with ENOMEM and the reason"
ip netns exec "$NS_B" timeout 30 "$PERF" write_bw --mrocd-socket "$E2E_DIR/b.ctl" >"$E2E_DIR/srv" 2>&1 &
srv=$!
sleep 0.3
ip netns exec "$NS_A" setpriv --reuid=$UID_D --regid=$UID_D --clear-groups timeout 30 "$PERF_A" write_bw \
	--verify -n 300 -s 4096 --mrocd-socket "$E2E_DIR/a/a.ctl" "$IP_B" >"$E2E_DIR/cli" 2>&1 ||
	fail "write_bw against the unprivileged mrocd: $(cat "$E2E_DIR/cli" "$E2E_DIR/srv")"
wait $srv || fail "server: $(cat "$E2E_DIR/srv")"
ok "uid $UID_D with $CAPS only: AF_XDP in native mode, a verified write_bw"

kill -KILL "$PID_a"
wait "$PID_a" 2>/dev/null
ip -n "$NS_A" link show dev "$IF_A" | grep -q "xdp" && fail "kill -9 left the XDP program attached"
start_a "$CAPS" "$E2E_DIR/a2.log"
ready_a || fail "restart after kill -9: $(cat "$E2E_DIR/a2.log")"
kill -TERM "$PID_a"
wait "$PID_a" || fail "a exited with $? after SIGTERM: $(cat "$E2E_DIR/a2.log")"
ip -n "$NS_A" link show dev "$IF_A" | grep -q "xdp" && fail "XDP program still attached after SIGTERM"
ok "kill -9 leaves no program (bpf_link); the restart needs no CAP_SYS_ADMIN"
e2e_stop b
[ "$E2E_RC" = 0 ] || fail "mrocd b exited with $E2E_RC"
echo "1 passed, 0 failed"
