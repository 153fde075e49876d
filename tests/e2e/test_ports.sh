#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hosts with several ports (interfaces and queues), AF_XDP:
#  - a daemon with two interfaces, one of them with two queues, starts with
#    a socket on each (interface, queue) sharing one UMEM;
#  - a queue the interface does not have: "af_xdp" fails naming it; "auto"
#    falls back to UDP and says why in the log and in mroc-cli status.
set -u
. "$(dirname "$0")/lib.sh"

CLI=$BUILD/mroc-cli
e2e_require
[ -x "$CLI" ] || skip "$CLI not built"
e2e_setup_pair
# A second link with two active channels (veth's default is one).
X_A=mrx${E2E_ID}a X_B=mrx${E2E_ID}b
ip link add "$X_A" netns "$NS_A" numrxqueues 2 numtxqueues 2 type veth peer name "$X_B" \
	netns "$NS_B" numrxqueues 2 numtxqueues 2 || fail "veth with two queues"
ip -n "$NS_A" link set "$X_A" up
ip -n "$NS_B" link set "$X_B" up

# e2e_config takes one interface name; the others go after it in the list.
e2e_config a af_xdp "$IF_A\", { name = \"$X_A\"; queues = [ 0, 1 ]; }, \"" "$IP_A" "$IP_B"
sed -i 's/, "" );/ );/; s/umem_frames = 4096/umem_frames = 8192/' "$E2E_DIR/a.conf"
e2e_start a "$NS_A"
e2e_wait_ready a
st=$(e2e_admin a status)
jq -e --arg i "$IF_A" --arg x "$X_A" '.backend == "af_xdp" and .fallback == false and
	(.backend_detail | contains("\($i):q0") and contains("\($x):q0") and contains("\($x):q1"))' \
	<<<"$st" >/dev/null || fail "a: expected sockets on $IF_A:q0, $X_A:q0 and $X_A:q1: $st"
ok "two interfaces, one with two queues: a socket on each (interface, queue)"
e2e_stop a
[ "$E2E_RC" = 0 ] || fail "mrocd a exited with $E2E_RC"

# Queue 5 does not exist on IF_A.
e2e_config q af_xdp "$X_A\", { name = \"$IF_A\"; queues = [ 0, 5 ]; }, \"" "$IP_A" "$IP_B"
sed -i 's/, "" );/ );/; s/umem_frames = 4096/umem_frames = 8192/' "$E2E_DIR/q.conf"
ip netns exec "$NS_A" "$MROCD" -c "$E2E_DIR/q.conf" >"$E2E_DIR/q.log" 2>&1 &&
	fail "mrocd started with a queue its interface does not have"
grep -q "<3>.*$IF_A queue 5" "$E2E_DIR/q.log" || fail "the error does not name $IF_A queue 5"
ok "af_xdp: a missing queue fails start-up, naming the interface and queue"

sed 's/backend = "af_xdp"/backend = "auto"/; s/q\.\(admin\|ctl\)/f.\1/' "$E2E_DIR/q.conf" >"$E2E_DIR/f.conf"
e2e_start f "$NS_A"
e2e_wait_ready f
grep -q "AF_XDP unavailable (.*$IF_A queue 5.*): falling back to UDP" "$E2E_DIR/f.log" ||
	fail "auto: the log does not say why it fell back"
"$CLI" -S "$E2E_DIR/f.admin" status >"$E2E_DIR/status.txt" || fail "mroc-cli status"
grep -q "fallback from af_xdp: .*$IF_A queue 5" "$E2E_DIR/status.txt" ||
	fail "mroc-cli status does not give the fallback's reason: $(cat "$E2E_DIR/status.txt")"
ip -n "$NS_A" link show dev "$X_A" | grep -q xdp && fail "the fallback left XDP on $X_A"
ok "auto: falls back to UDP, the log and mroc-cli status say why"
grep -h "<3>\|AF_XDP unavailable" "$E2E_DIR/q.log" "$E2E_DIR/f.log"; grep fallback "$E2E_DIR/status.txt"
e2e_stop f
[ "$E2E_RC" = 0 ] || fail "mrocd f exited with $E2E_RC"
echo "1 passed, 0 failed"
