#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A dead plane whose links stay up (scripts/fabric set 2 blackhole on) under a
# verified write_bw between two 2-port hosts, network.port_dead_ms = 300 (p2
# then stays counted down for 6 s, then is tried again), daemon.workers = 1:
# with two (the default on 2 ports), p2's socket is worker 1's while the one
# client's QPs are worker 0's, and in 1 run of 20 the engine's repathing kept
# the transfer's paths off p2 for all of its 8 s, so the plane's death could
# not be seen (test_workers covers two workers):
#  - before: A's transfer has paths on both ports;
#  - the sender hears nothing back through p2 while p1 hears the peer, counts
#    p2 down for the peer (counter backend.port_dead, a log line, status),
#    and in the same snapshot (admin "qps": a QP's ports_down and its paths'
#    ports are read in one worker call) no path of a QP whose peer has p2
#    counted down leaves by p2: the engine's repathing does not land paths
#    there any more (the daemon maps them to p1);
#  - the transfer completes with every byte verified.
# Nothing here is timed: the checks wait for states, with generous limits.
set -u
. "$(dirname "$0")/lib.sh"

CLI=$BUILD/mroc-cli
e2e_require_fabric
e2e_fabric_up --ports 2
e2e_ports_pair 's/ring_size = 1024;/ring_size = 1024; port_dead_ms = 300;/;
	s/busy_poll_us = 20;/busy_poll_us = 20; workers = 1;/'
for n in a b; do
	e2e_wait $n links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
		fail "$n: the control link never came up: $(e2e_admin $n links)"
done

connected='[.qps[] | select(.state == "connected" and .peer != null)]'
# The transfer's QPs (the control links carry no bytes) with at least 4 of their 32
# paths on p2: what they have in flight there is lost when the plane dies, which is
# what the sender hears nothing back for (porthealth.h: 8 data packets).  Each poll's
# ports of the transfer's paths go to ports.trace.
data_ports="[$connected[] | select(.tx_bytes > 0) | .paths[].port]"
e2e_perf_start 8 -q 4
for _ in $(seq 300); do
	ports=$(e2e_admin a qps | jq -c "$data_ports")
	echo "$ports" >>"$E2E_DIR/ports.trace"
	[ "$(jq '[.[] | select(. == "p2")] | length' <<<"$ports")" -ge 4 ] && break
	ports=
	sleep 0.1
done
[ -n "$ports" ] || fail "A's transfer never had 4 paths on p2: $(uniq -c "$E2E_DIR/ports.trace" | tail -20)"
ok "before: A's transfer sends through both ports"

e2e_fabric_set 2 blackhole on
# A snapshot in which some QP has p2 counted down for its peer (the hold is 6 s:
# a snapshot taken after it ended shows p2 up again, and the next one down).
snap=
for _ in $(seq 300); do
	snap=$(e2e_admin a qps)
	jq -e "any($connected[]; .ports_down | index(\"p2\"))" <<<"$snap" >/dev/null && break
	snap=
	sleep 0.1
done
[ -n "$snap" ] || fail "a: p2 was never counted down: $(e2e_admin a counters | jq -c .backend)"
echo "A's QPs with p2 counted down: $(jq -c "[$connected[] | select(.ports_down | index(\"p2\")) |
	{qpn, worker, ports_down, ports: [.paths[].port]}]" <<<"$snap")"
jq -e "all($connected[] | select(.ports_down | index(\"p2\")); all(.paths[]; .port == \"p1\"))" \
	<<<"$snap" >/dev/null || fail "paths left on p2 while it is counted down: $snap"
ok "p2 counted down for the peer, and no path of that peer's QPs leaves by it"

e2e_perf_finish "plane 2 blackholed mid-transfer"
ok "the transfer completed, every byte verified"
e2e_fabric_set 2 blackhole off

dead=$(e2e_admin a counters | jq '.backend.port_dead')
st=$(e2e_admin a status)
echo "a: port_dead $dead; status: ports_down $(jq .ports_down <<<"$st"), port_dead $(jq .port_dead <<<"$st")"
[ "$dead" -gt 0 ] || fail "a: counter backend.port_dead is $dead"
[ "$(jq .port_dead <<<"$st")" -gt 0 ] || fail "a: status has no port_dead: $st"
grep -q "nothing from .* came back through port p2" "$E2E_DIR/a.log" || fail "a: no log line for p2"
"$CLI" -S "$E2E_DIR/a.admin" status | grep -q "^ *ports down" || fail "mroc-cli status shows no ports down line"
ok "counted: backend.port_dead $dead, the log says why, status shows it"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "4 passed, 0 failed"
