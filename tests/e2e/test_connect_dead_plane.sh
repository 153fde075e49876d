#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Connecting through a plane that is already dead (scripts/fabric set 1
# blackhole on before the daemons start; its links stay up, so nothing local
# says so): two 2-port hosts, and QPs whose CM packets may leave by p1.  The
# control links come up and a write_bw of 16 QPs connects every QP and
# completes with every byte verified.  In the simulator a QP whose CM tries
# all left by path 0's port never connected through a dead plane (mroc-sim
# run --plane-loss P:1, 7 of 16 runs) until a try sent again took another
# port (engine/cm_tx.c cm_route, PROTOCOL 11.1 "Ports"); mrocd of before that
# change connected here too (4 of 4 runs, plane 1 or 2 dead): this guards the
# case through real daemons.  Nothing here is timed: the checks wait for
# states, with generous limits.
set -u
. "$(dirname "$0")/lib.sh"

e2e_require_fabric
e2e_fabric_up --ports 2
e2e_fabric_set 1 blackhole on
e2e_ports_pair
for n in a b; do
	e2e_wait $n links '[.links[] | select(.state == "up")] | length >= 1' 20 ||
		fail "$n: the control link never came up with plane 1 dead: $(e2e_admin $n links)"
done
ok "the control links came up with plane 1 dead"

e2e_perf_start 3 -q 16
e2e_perf_finish "16 QPs connected with plane 1 dead from the start"
ok "16 QPs connected through the live plane and moved every byte, verified"

echo "a: $(e2e_admin a counters | jq -c '{port_dead: .backend.port_dead, tx_cm: .engine.tx_cm, cm_copy: .engine.cm_copy, rto: .engine.rto}')"
e2e_fabric_set 1 blackhole off

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "2 passed, 0 failed"
