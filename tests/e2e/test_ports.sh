#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hosts with several ports (interfaces and queues), AF_XDP:
#  - a daemon with two interfaces, one of them with two queues, starts with
#    a socket on each (interface, queue) sharing one UMEM;
#  - a queue the interface does not have: "af_xdp" fails naming it; "auto"
#    falls back to UDP and says why in the log and in mroc-cli status;
#  - IPv6 on a routed pair: service addresses on lo, an ECMP route over both
#    links, the control link up and a verified write_bw between them.
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

# IPv6, routed: a service address on each lo, reached by an ECMP route over both links.
V=$(printf '%x' $((E2E_ID % 65536)))
ip -n "$NS_A" addr add "fd01:$V::1/64" dev "$IF_A" nodad
ip -n "$NS_B" addr add "fd01:$V::2/64" dev "$IF_B" nodad
ip -n "$NS_A" addr add "fd02:$V::1/64" dev "$X_A" nodad
ip -n "$NS_B" addr add "fd02:$V::2/64" dev "$X_B" nodad
ip -n "$NS_A" addr add "fd09:$V::1/128" dev lo
ip -n "$NS_B" addr add "fd09:$V::2/128" dev lo
ip -n "$NS_A" -6 route add "fd09:$V::2/128" nexthop via "fd01:$V::2" dev "$IF_A" \
	nexthop via "fd02:$V::2" dev "$X_A" || fail "IPv6 ECMP route on a"
ip -n "$NS_B" -6 route add "fd09:$V::1/128" nexthop via "fd01:$V::1" dev "$IF_B" \
	nexthop via "fd02:$V::1" dev "$X_B" || fail "IPv6 ECMP route on b"
e2e_config 6a af_xdp "$IF_A\", \"$X_A" "fd09:$V::1" "fd09:$V::2"
e2e_config 6b af_xdp "$IF_B\", \"$X_B" "fd09:$V::2" "fd09:$V::1"
sed -i 's/paths = .*;//; s/keepalive_ms = 100;/keepalive_ms = 100; paths = 8;/' "$E2E_DIR/6a.conf" "$E2E_DIR/6b.conf"
e2e_start 6a "$NS_A"
e2e_start 6b "$NS_B"
e2e_wait_ready 6a
e2e_wait_ready 6b
for n in 6a 6b; do
	e2e_wait $n links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
		fail "$n: no IPv6 control link between the lo addresses: $(e2e_admin $n links)"
done
PERF=$BUILD/mroc-perf
if [ -x "$PERF" ]; then
	ip netns exec "$NS_B" timeout 30 "$PERF" write_bw --mrocd-socket "$E2E_DIR/6b.ctl" --verify -s 65536 -n 300 \
		--mroc-addr "fd09:$V::2" >"$E2E_DIR/srv6.txt" 2>&1 &
	srv=$!
	sleep 0.3
	ip netns exec "$NS_A" timeout 30 "$PERF" write_bw --mrocd-socket "$E2E_DIR/6a.ctl" --verify -s 65536 -n 300 \
		"fd09:$V::2" >"$E2E_DIR/cli6.txt" 2>&1 || { cat "$E2E_DIR/cli6.txt" "$E2E_DIR/srv6.txt"; fail "IPv6 write_bw"; }
	wait $srv || { cat "$E2E_DIR/srv6.txt"; fail "IPv6 write_bw server"; }
fi
grep "<[0-3]>" "$E2E_DIR/6a.log" "$E2E_DIR/6b.log" && fail "errors logged over IPv6"
ok "IPv6: service addresses on lo over an ECMP route on two ports, control link up, verified write_bw"
for n in 6a 6b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
