#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A tenant of mrocd that floods it from its own side of the client socket
# (tests/e2e/tenant_attack.c), on a pair over the UDP backend:
#  - control requests in a loop (QP_LISTEN again and again on its own QP: a synchronous
#    call into the worker each, which stops the data path of every other client of that
#    worker meanwhile): held to its budget (limits.ctl_rate_per_client 100 a second, bursts
#    of limits.ctl_burst_per_client 50 here), its next message read only when the budget
#    allows, each wait counted in clients.ctl_deferred; another client's verified transfer
#    runs through it.  Asserted on counts: the requests answered in the flood's time, at
#    most the burst and the rate times that time (and a second more);
#  - the flooding tenant killed while it waits: its client, QP and pinned memory go;
#  - 2,000 clients connecting and hanging up one after the other without HELLO: the daemon's
#    log grows by at most 10 lines a second per call site ("connected", "gone") and one
#    "suppressed" line each (with the site's next line, a window later), not two lines a
#    client; the worker is not called for them (worker.calls);
#  - 300 clients connecting, saying HELLO and hanging up: a user's new clients share one
#    budget (the same rate and burst), the HELLOs over it read later; two worker calls a
#    client (its HELLO and its end), so at most twice the burst and the rate.
set -u
. "$(dirname "$0")/lib.sh"

TA=$BUILD/tests/e2e/tenant_attack
E2E_PERF_TIMEOUT=90	# e2e_pair_perf_start: beside the flood on a 2-CPU machine
RATE=100
BURST=50
e2e_require
[ -x "$TA" ] || skip "$TA not built"
[ -x "$BUILD/mroc-perf" ] || skip "$BUILD/mroc-perf not built"
e2e_setup_pair
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
echo "limits = { ctl_rate_per_client = $RATE; ctl_burst_per_client = $BURST; };" >>"$E2E_DIR/a.conf"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b

# ---- control requests --------------------------------------------------------------------
e2e_pair_perf_start flood 18821 --verify -s 65536 -n 300
out=$(ip netns exec "$NS_A" "$TA" "$E2E_DIR/a.ctl" flood 100000000 3) || fail "tenant_attack flood: $out"
e2e_alive a "a control-request flood"
e2e_pair_perf_wait flood || fail "a verified transfer beside a control-request flood"
served=$(sed -n 's/.*served=\([0-9]*\).*/\1/p' <<<"$out")
errors=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' <<<"$out")
secs=$(sed -n 's/.*seconds=\([0-9]*\).*/\1/p' <<<"$out")
[ -n "$served" ] && [ -n "$errors" ] && [ -n "$secs" ] || fail "tenant_attack flood: $out"
answered=$((served + errors))
bound=$((BURST + RATE * (secs + 2)))
[ "$answered" -le "$bound" ] ||
	fail "a tenant's control requests not held to its budget: $answered answered ($out)," \
		"at most $bound ($BURST + $RATE a second)"
c=$(e2e_admin a counters) || fail "a stopped answering"
jq -e '.clients.ctl_deferred > 0' <<<"$c" >/dev/null ||
	fail "the waits not counted: $(jq -c .clients <<<"$c")"
ok "a control-request flood: $answered requests answered in ${secs}+ s (at most $bound)," \
	"$(jq .clients.ctl_deferred <<<"$c") waits; a verified transfer beside it"

# ---- a tenant killed while its requests wait ---------------------------------------------
ip netns exec "$NS_A" "$TA" "$E2E_DIR/a.ctl" flood 100000000 60 >/dev/null 2>&1 &
victim=$!
E2E_PIDS+=($victim)
d0=$(e2e_admin a counters | jq .clients.ctl_deferred)
for _ in $(seq 100); do
	[ "$(e2e_admin a counters | jq .clients.ctl_deferred)" -gt $((d0 + 20)) ] && break
	sleep 0.1
done
kill -KILL $victim
wait $victim 2>/dev/null
e2e_alive a "a tenant killed while its requests waited"
e2e_wait a status '.clients == 0' 10 || fail "a killed client left: $(e2e_admin a status | jq -c .)"
c=$(e2e_admin a counters)
jq -e '.clients.qps == 0 and .clients.mrs == 0 and .clients.locked_bytes == 0' <<<"$c" >/dev/null ||
	fail "a killed client's QP or memory left: $(jq -c .clients <<<"$c")"
ok "a tenant killed while its requests waited: its client, QP and memory gone"

# ---- connect/disconnect: the log ----------------------------------------------------------
calls() { e2e_admin a counters | jq .worker.calls; }
before=$(wc -l <"$E2E_DIR/a.log")
k0=$(calls)
t0=$(date +%s)
out=$(ip netns exec "$NS_A" "$TA" "$E2E_DIR/a.ctl" churn 2000 nohello) || fail "tenant_attack churn: $out"
t1=$(date +%s)
k1=$(calls)
e2e_alive a "2,000 clients connecting and hanging up"
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
# The admin requests' own snapshots are worker calls too: a few.
[ $((k1 - k0)) -le 20 ] ||
	fail "2,000 clients that never said HELLO made $((k1 - k0)) worker calls"
ok "2,000 clients connecting and hanging up in $((t1 - t0)) s: $lines log lines (at most $bound)," \
	"$((k1 - k0)) worker calls"

# ---- connect, HELLO, hang up: the worker -------------------------------------------------
k0=$(calls)
t0=$(date +%s.%N)
out=$(ip netns exec "$NS_A" "$TA" "$E2E_DIR/a.ctl" churn 300) || fail "tenant_attack churn: $out"
t1=$(date +%s.%N)
k1=$(calls)
[ "$out" = "churned=300" ] || fail "tenant_attack churn: $out"
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", b - a }')
bound=$((2 * (BURST + RATE * (secs + 2)) + 20))
[ $((k1 - k0)) -le "$bound" ] ||
	fail "300 clients saying HELLO and hanging up made $((k1 - k0)) worker calls in $secs+ s" \
		"(at most $bound)"
ok "300 clients saying HELLO and hanging up in $secs+ s: $((k1 - k0)) worker calls (at most $bound)"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
