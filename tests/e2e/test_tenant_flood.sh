#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A tenant of mrocd that floods it from its own side of the client socket
# (tests/e2e/tenant_attack.c), on a pair over the UDP backend:
#  - 2,000 clients connecting and hanging up one after the other: the daemon's log grows by
#    at most 10 lines a second per call site ("connected", "gone") and one "suppressed"
#    line each (with the site's next line, a window later), not two lines a client.
set -u
. "$(dirname "$0")/lib.sh"

TA=$BUILD/tests/e2e/tenant_attack
e2e_require
[ -x "$TA" ] || skip "$TA not built"
e2e_setup_pair
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b

alive() {
	kill -0 "$(e2e_pid a)" 2>/dev/null || fail "mrocd a died: $1"
}

# ---- connect/disconnect: the log ----------------------------------------------------------
before=$(wc -l <"$E2E_DIR/a.log")
t0=$(date +%s)
out=$(ip netns exec "$NS_A" "$TA" "$E2E_DIR/a.ctl" churn 2000) || fail "tenant_attack churn: $out"
t1=$(date +%s)
alive "2,000 clients connecting and hanging up"
[ "$out" = "churned=2000" ] || fail "tenant_attack churn: $out"
e2e_wait a status '.clients == 0' 10 || fail "clients left: $(e2e_admin a status | jq -c .clients)"
lines=$(($(wc -l <"$E2E_DIR/a.log") - before))
# Per call site and window of 1 s (the window that starts before t0 and the one after t1
# too): 10 lines and a "suppressed" one.
bound=$((2 * 11 * (t1 - t0 + 3)))
[ "$lines" -le "$bound" ] ||
	fail "2,000 clients connecting and hanging up logged $lines lines in $((t1 - t0)) s" \
		"(at most $bound): $(tail -n 3 "$E2E_DIR/a.log")"
# The count of what was left out comes with the next line of the site, a window later.
sleep 1.1
ip netns exec "$NS_A" "$TA" "$E2E_DIR/a.ctl" churn 1 >/dev/null
e2e_wait a status '.clients == 0' 10 || fail "a client left: $(e2e_admin a status | jq -c .clients)"
grep -q "messages suppressed" "$E2E_DIR/a.log" ||
	fail "no \"suppressed\" line: $(tail -n 3 "$E2E_DIR/a.log")"
ok "2,000 clients connecting and hanging up in $((t1 - t0)) s: $lines log lines (at most $bound)"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
