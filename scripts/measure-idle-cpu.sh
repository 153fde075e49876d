#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CPU time two idle mrocd (AF_XDP, control link up, keepalives every second)
# use over SECONDS (default 20), read from /proc/PID/stat.  Root; uses the
# end-to-end helpers (its own network namespaces, removed at the end).
set -u
SECONDS_IDLE=${1:-20}
. "$(dirname "$0")/../tests/e2e/lib.sh"
e2e_require
e2e_setup_pair
e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/keepalive_ms = 100;/keepalive_ms = 1000;/; s/log_level = "debug"/log_level = "info"/' \
	"$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b
e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 10 || fail "no control link"
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
tck=$(getconf CLK_TCK)
a0=$(cpu "$PID_a") b0=$(cpu "$PID_b")
sleep "$SECONDS_IDLE"
a1=$(cpu "$PID_a") b1=$(cpu "$PID_b")
echo "idle ${SECONDS_IDLE} s: mrocd a $(( (a1 - a0) * 1000 / tck )) ms CPU," \
     "mrocd b $(( (b1 - b0) * 1000 / tck )) ms CPU"
echo "worker a: $(e2e_admin a counters | jq -c '.worker | {loops, sleeps, busy_ns, idle_ns}')"
