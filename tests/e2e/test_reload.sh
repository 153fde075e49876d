#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Reload does what mrocd.conf says, checked by its effects on two mrocd (UDP
# backend over veth), through "mroc-cli config reload" (the unit's
# ExecReload) and SIGHUP:
#  - --check-config lists the reloadable keys and says the others need a restart;
#  - transport.paths 4 -> 2: a QP created after the reload that leaves its paths to
#    mrocd has 2 paths in "mroc-cli path show", one from before keeps 4;
#  - transport.mode -> rocev2 (both daemons): a new QP that leaves its mode to mrocd is rocev2;
#  - limits.max_qps_per_client 1 and max_sq_depth 64: mroc-perf -q 2 and -t 128 are
#    refused, -q 1 -t 32 runs; limits.max_clients 1: a second client is refused;
#  - a restart key (transport.max_retx) is reported and keeps its running value;
#  - a bad file: "config reload" fails naming file:line, the running configuration
#    stays (config show, and new QPs still get its values);
#  - systemd hears RELOADING=1 with MONOTONIC_USEC= before, READY=1 after, each time.
set -u
. "$(dirname "$0")/lib.sh"

CLI=$BUILD/mroc-cli
PERF=$BUILD/mroc-perf
HOLD=$BUILD/tests/e2e/qp_hold
e2e_require
for p in "$CLI" "$PERF" "$HOLD"; do [ -x "$p" ] || skip "$p not built"; done

e2e_setup_pair
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
# set_key KEY VALUE [NAME]: in a's file (or NAME's)
set_key() {
	local group=${1%%.*} key=${1#*.} f=$E2E_DIR/${3:-a}.conf
	if grep -q "^[[:space:]]*$key = " "$f"; then
		sed -i "s|^\([[:space:]]*\)$key = .*|\1$key = $2;|" "$f"
	elif grep -q "^$group = {" "$f"; then
		sed -i "s|^$group = {|$group = {\n\t$key = $2;|" "$f"
	else
		printf '%s = {\n\t%s = %s;\n};\n' "$group" "$key" "$2" >>"$f"
	fi
}
set_key transport.paths 4

out=$("$MROCD" --check-config -c "$E2E_DIR/a.conf") || fail "--check-config: $out"
grep -q "^a reload .* applies: .*transport.paths transport.mode limits.max_clients" <<<"$out" &&
	grep -q "every other key needs a restart" <<<"$out" || fail "--check-config: $out"
ok "--check-config names the reloadable keys"

e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b
cli_a() { "$CLI" -S "$E2E_DIR/a.admin" "$@"; }

# The notify log holds the datagrams back to back (no separator after the last line).
count() { grep -o "$1" "$E2E_DIR/a.notify.log" | wc -l; }
# reload: mroc-cli config reload succeeds; systemd heard RELOADING=1 (with MONOTONIC_USEC) then READY=1.
RELOADS=0
wait_reloaded() {
	local n=$1 before=$2 after
	for _ in $(seq 50); do [ "$(count READY=1)" -gt "$before" ] && break; sleep 0.1; done
	[ "$(count RELOADING=1)" = "$n" ] || fail "reload $n: RELOADING=1 count: $(cat "$E2E_DIR/a.notify.log")"
	# After the last RELOADING=1: MONOTONIC_USEC first, a READY=1 later.
	after=$(tr '\n' '|' <"$E2E_DIR/a.notify.log")
	after=${after##*RELOADING=1}
	[[ $after =~ ^\|MONOTONIC_USEC=[0-9]+\| ]] && [[ $after == *READY=1* ]] ||
		fail "reload $n: notifications: $(cat "$E2E_DIR/a.notify.log")"
}
reload() {
	local before out
	before=$(count READY=1)
	out=$(cli_a config reload 2>&1) || fail "config reload: $out"
	RELOADS=$((RELOADS + 1))
	wait_reloaded $RELOADS "$before"
	RELOAD_OUT=$out
}

# hold NAME: a QP from a to b with mrocd's defaults, held until unhold NAME; its QPN in $QPN.
SERVICE=4242
hold() {
	local name=$1
	SERVICE=$((SERVICE + 1))
	ip netns exec "$NS_B" "$HOLD" "$E2E_DIR/b.ctl" listen $SERVICE "$E2E_DIR/$name.stop" >"$E2E_DIR/$name.b" 2>&1 &
	E2E_PIDS+=($!)
	sleep 0.2
	ip netns exec "$NS_A" "$HOLD" "$E2E_DIR/a.ctl" connect "$IP_B" $SERVICE "$E2E_DIR/$name.stop" >"$E2E_DIR/$name.a" 2>&1 &
	E2E_PIDS+=($!)
	for _ in $(seq 100); do grep -q "^qpn" "$E2E_DIR/$name.a" && break; sleep 0.1; done
	QPN=$(awk '/^qpn/ { print $2 }' "$E2E_DIR/$name.a")
	[ -n "$QPN" ] || fail "$name: no QP: $(cat "$E2E_DIR/$name.a" "$E2E_DIR/$name.b")"
}
unhold() { touch "$E2E_DIR/$1.stop"; }
npaths() { cli_a -j path show qp "$1" | jq 'if type == "array" then length else (.paths // .rows) | length end'; }
qp_mode() { e2e_admin a qps | jq -r --argjson q "$1" '.qps[] | select(.qpn == $q) | .mode'; }

hold before
q_before=$QPN
[ "$(npaths "$q_before")" = 4 ] || fail "paths 4: a QP has $(npaths "$q_before") paths: $(cli_a path show qp "$q_before")"
set_key transport.paths 2
reload
hold after
[ "$(npaths "$QPN")" = 2 ] || fail "paths 4 -> 2: a new QP has $(npaths "$QPN") paths: $(cli_a path show qp "$QPN")"
[ "$(npaths "$q_before")" = 4 ] || fail "paths 4 -> 2: the older QP has $(npaths "$q_before") paths"
ok "transport.paths 4 -> 2: a new QP has 2 paths (mroc-cli path show), the older one 4 ($RELOAD_OUT)"
[ "$(qp_mode "$QPN")" = metaroce ] || fail "mode: $(e2e_admin a qps)"
unhold before
unhold after

# Both ends: a QP's two ends must agree on the mode (b refuses a rocev2 QP otherwise).
set_key transport.mode '"rocev2"'
set_key transport.mode '"rocev2"' b
reload
"$CLI" -S "$E2E_DIR/b.admin" config reload >/dev/null || fail "b: config reload"
hold rocev2
[ "$(qp_mode "$QPN")" = rocev2 ] || fail "mode -> rocev2: a new QP is $(qp_mode "$QPN")"
[ "$(npaths "$QPN")" = 1 ] || fail "a rocev2 QP has $(npaths "$QPN") paths"
unhold rocev2
set_key transport.mode '"metaroce"'
set_key transport.mode '"metaroce"' b
reload
"$CLI" -S "$E2E_DIR/b.admin" config reload >/dev/null || fail "b: config reload"
ok "transport.mode metaroce -> rocev2: a new QP that leaves its mode to mrocd is rocev2, 1 path"

# perf CLIENT_ARGS...: a write_bw pair; the client's status in $PERF_RC, its output in $PERF_OUT.
perf() {
	ip netns exec "$NS_B" timeout 30 "$PERF" write_bw --mrocd-socket "$E2E_DIR/b.ctl" >"$E2E_DIR/perf.srv" 2>&1 &
	local srv=$!
	sleep 0.3
	PERF_OUT=$(ip netns exec "$NS_A" timeout 30 "$PERF" write_bw --mrocd-socket "$E2E_DIR/a.ctl" -n 200 "$@" "$IP_B" 2>&1)
	PERF_RC=$?
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
}
perf -q 2 -t 128
[ $PERF_RC = 0 ] || fail "before the limits: $PERF_OUT"
set_key limits.max_qps_per_client 1
set_key limits.max_sq_depth 64
reload
perf -q 2 -t 32
[ $PERF_RC = 1 ] && grep -qi "qp 1: mroc_qp_create" <<<"$PERF_OUT" || fail "max_qps_per_client 1: -q 2: $PERF_OUT"
perf -q 1 -t 128
[ $PERF_RC = 1 ] && grep -q "mroc_qp_create" <<<"$PERF_OUT" || fail "max_sq_depth 64: -t 128: $PERF_OUT"
perf -q 1 -t 32
[ $PERF_RC = 0 ] || fail "within the reloaded limits: $PERF_OUT"
ok "limits.max_qps_per_client 1, max_sq_depth 64: -q 2 and -t 128 refused, -q 1 -t 32 runs"

set_key limits.max_clients 1
set_key limits.max_qps_per_client 256
set_key limits.max_sq_depth 1024
before=$(count READY=1)
kill -HUP "$PID_a"	# SIGHUP does the same as config reload
RELOADS=$((RELOADS + 1))
wait_reloaded $RELOADS "$before"
hold one_client
perf -q 1 -t 32
[ $PERF_RC = 1 ] && grep -q "as many clients as it accepts" <<<"$PERF_OUT" || fail "max_clients 1: a second client: $PERF_OUT"
unhold one_client
ok "SIGHUP, limits.max_clients 1: a second client is refused"
set_key limits.max_clients 64

# A restart key: reported, its running value kept.
set_key transport.max_retx 9
reload
grep -q "1 need a restart (transport.max_retx)" <<<"$RELOAD_OUT" || fail "restart key: $RELOAD_OUT"
cli_a config show | grep -q "max_retx = 9;" && fail "a restart key took effect on reload"
ok "a restart key is reported ($RELOAD_OUT) and keeps its running value"

# A bad file: the reload fails with the reason, the running configuration stays.
set_key transport.paths 3
echo "transport = { oops" >>"$E2E_DIR/a.conf"
before=$(count READY=1)
out=$(cli_a config reload 2>&1) && fail "a bad file reloaded: $out"
grep -q "reload failed.*a.conf:[0-9]" <<<"$out" || fail "no reason: $out"
RELOADS=$((RELOADS + 1))
wait_reloaded $RELOADS "$before"
grep -q "STATUS=reload failed" "$E2E_DIR/a.notify.log" || fail "no STATUS for the failure"
cli_a config show | grep -q "paths = 2;" || fail "the running configuration changed: $(cli_a config show)"
hold after_bad
[ "$(npaths "$QPN")" = 2 ] || fail "after a failed reload a new QP has $(npaths "$QPN") paths"
unhold after_bad
ok "a bad file: config reload fails with file:line, the running configuration stays (new QP: 2 paths)"

kill -0 "$PID_a" || fail "mrocd a died"
for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
