#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# QPs connected to their own mrocd's address (two processes of one job on one host,
# fi_pingpong's server and client on one host, the NCCL plugin's latency probe) on the
# AF_XDP backend, where nothing outside the host sends a packet back: the daemon's veth
# peers live in a namespace that does not forward.  Before mrocd delivered such packets
# inside itself, they reached a fabric only to be lost there (no route for a local
# address on one port, no hairpin on a direct link), and the connect never completed.
#  - one port, one worker: two mroc-perf processes on the daemon's own address, WRITE,
#    READ, SEND/RECV (bw, --verify: every byte) and FETCH_ADD/CMP_AND_SWAP (atomic_bw
#    --verify: every returned value and the counters); fi_pingpong -p mroc, server and client
#    on one host (when libfabric's fabtests and the provider are there);
#  - one port, security "aead": WRITE and SEND/RECV verified, every looped packet sealed and
#    opened (the receiver's checks stay: none skipped for a packet that crossed no wire);
#  - two ports, daemon.workers = 2, security "aead": the same, with the two clients on
#    different workers (the loopback packet must reach the worker that owns its QP: handed
#    over, its destination read from the sealed packet as from one off the wire);
#  - every packet between them counted (backend.loopback_pkts), none dropped, next to
#    nothing on the wire (the veth's TX), and `path show` names the port "loopback";
#  - a frame from the wire "from" the daemon's own address is a reflection or a forgery
#    now (its own packets never leave it): dropped before the engine (backend.rx_src_ours).
set -u
. "$(dirname "$0")/lib.sh"

PERF=$BUILD/mroc-perf
SPOOF=$BUILD/tests/e2e/spoof_udp
e2e_require
[ -x "$PERF" ] || skip "$PERF not built"
[ -x "$SPOOF" ] || skip "$SPOOF not built"
e2e_setup_pair
# A second veth pair, for the two-port daemon; NS_B forwards nothing (a new namespace's default).
X_A=mrx${E2E_ID}a X_B=mrx${E2E_ID}b X_IP_A=10.202.$((E2E_ID % 250)).1
ip link add "$X_A" netns "$NS_A" type veth peer name "$X_B" netns "$NS_B" || fail "veth"
ip -n "$NS_A" addr add "$X_IP_A/24" dev "$X_A"
ip -n "$NS_B" addr add "10.202.$((E2E_ID % 250)).2/24" dev "$X_B"
ip -n "$NS_A" link set "$X_A" up
ip -n "$NS_B" link set "$X_B" up
[ "$(ip netns exec "$NS_B" sysctl -n net.ipv4.ip_forward)" = 0 ] || fail "NS_B forwards"

# perf NAME TEST ARGS...: mroc-perf TEST server and client on daemon $D, the client's QPs
# connected to its own address IP_A (the side channel over TCP on the same address).
perf() {
	local name=$1 t=$2 s rc
	shift 2
	ip netns exec "$NS_A" timeout 60 "$PERF" "$t" --mrocd-socket "$E2E_DIR/$D.ctl" -p 18515 \
		--sleep "$@" >"$E2E_DIR/$name.srv" 2>&1 &
	s=$!
	sleep 0.3
	ip netns exec "$NS_A" timeout 60 "$PERF" "$t" --mrocd-socket "$E2E_DIR/$D.ctl" -p 18515 \
		--sleep "$@" "$IP_A" >"$E2E_DIR/$name.cli" 2>&1
	rc=$?
	wait $s || rc=1
	[ $rc = 0 ] && return 0
	cat "$E2E_DIR/$name.cli" "$E2E_DIR/$name.srv"
	"$BUILD/mroc-cli" -S "$E2E_DIR/$D.admin" -s counters show >"$E2E_DIR/state-$D.log" 2>&1
	return 1
}

tx_wire() { ip -n "$NS_A" -j -s link show dev "$1" | jq '.[0].stats64.tx.packets'; }
D=a	# the daemon the clients use now (a: one port; w: two ports, two workers)
counter() { e2e_admin $D counters | jq "$1"; }

# all_ops WHAT: every operation verified between two clients of daemon a on its own address.
all_ops() {
	perf "$1-write" write_bw --verify -s 65536 -n 200 || fail "$1: write_bw --verify"
	perf "$1-read" read_bw --verify -s 65536 -n 200 || fail "$1: read_bw --verify"
	perf "$1-send" send_bw --verify -s 4096 -n 400 || fail "$1: send_bw --verify"
	perf "$1-send1" send_bw --verify -s 1 -n 200 || fail "$1: send_bw -s 1 --verify"
	perf "$1-fadd" atomic_bw --verify -q 2 -n 400 || fail "$1: atomic_bw FETCH_ADD --verify"
	perf "$1-cswap" atomic_bw -A CMP_AND_SWAP --verify -q 2 -n 400 ||
		fail "$1: atomic_bw CMP_AND_SWAP --verify"
}

# check WHAT IFACES...: looped back, nothing dropped, nothing of it on the wire, path show.
check() {
	local what=$1 wire=0 i loop drops
	shift
	for i in "$@"; do wire=$((wire + $(tx_wire "$i") - ${TX0[$i]})); done
	loop=$(counter .backend.loopback_pkts)
	drops=$(counter .backend.loopback_drops)
	[ "${loop:-0}" -ge 2000 ] || fail "$what: $loop packets looped back (backend.loopback_pkts)"
	[ "${drops:-1}" = 0 ] || fail "$what: $drops loopback packets dropped"
	# Keepalives and REQs to the configured peer (nobody there), however long the phase took,
	# are a few hundred at most: the transfers' packets would be as many as those looped.
	[ $((wire * 20)) -le "$loop" ] || fail "$what: $wire packets on the wire (loopback: $loop)"
	ok "$what: every operation verified, $loop packets looped back, none dropped, $wire on the wire"
}

# ---- one port, one worker ------------------------------------------------------------
e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf"
e2e_start a "$NS_A"
e2e_wait_ready a
declare -A TX0=([$IF_A]=$(tx_wire "$IF_A"))
all_ops "one port"
check "one port" "$IF_A"

# A KEEPALIVE (its ICRC computed by spoof_udp) from a's own address, sent to a from NS_B.
KA=01118000000000000000000000000000000000000000000100000000
s0=$(counter .backend.rx_src_ours) r0=$(counter .engine.rx_pkts)
ip netns exec "$NS_B" "$SPOOF" "$IP_A" 20000 "$IP_A" 4793 "$KA" 20 1 || fail "spoof_udp"
e2e_wait a counters ".backend.rx_src_ours >= $s0 + 20" 5 ||
	fail "20 frames from a's own address not dropped: rx_src_ours $s0 -> $(counter .backend.rx_src_ours)"
ok "20 frames from the wire from a's own address dropped before the engine (rx_src_ours" \
	"$s0 -> $(counter .backend.rx_src_ours); engine rx_pkts $r0 -> $(counter .engine.rx_pkts))"

# A loopback QP's paths: all inside mrocd, named so; held open by a write_bw of 5 s.
ip netns exec "$NS_A" timeout 60 "$PERF" write_bw --mrocd-socket "$E2E_DIR/a.ctl" -p 18516 \
	--sleep -D 5 >"$E2E_DIR/hold.srv" 2>&1 &
hs=$!
sleep 0.3
ip netns exec "$NS_A" timeout 60 "$PERF" write_bw --mrocd-socket "$E2E_DIR/a.ctl" -p 18516 \
	--sleep -D 5 "$IP_A" >"$E2E_DIR/hold.cli" 2>&1 &
hc=$!
ports='[]'
for _ in $(seq 50); do
	ports=$(e2e_admin a qps | jq -c '[.qps[] | select(.peer == "'"$IP_A"'") | .paths[].port] | unique')
	[ "$ports" != '[]' ] && break
	sleep 0.1
done
wait $hc || fail "write_bw -D 5: $(cat "$E2E_DIR/hold.cli")"
wait $hs || fail "write_bw -D 5 server: $(cat "$E2E_DIR/hold.srv")"
[ "$ports" = '["loopback"]' ] || fail "path show: a loopback QP's paths leave by $ports"
ok "path show: a loopback QP's paths say port \"loopback\""

# fi_pingpong's server and client on one host, through the libfabric provider (when built).
if command -v fi_pingpong >/dev/null && [ -f "$BUILD/libmroc-fi.so" ] && [ -z "${SANITIZE:-}" ]; then
	fipp() {
		ip netns exec "$NS_A" env FI_PROVIDER_PATH="$BUILD" MROC_SOCKET="$E2E_DIR/a.ctl" \
			FI_MROC_ADDR="$IP_A" timeout 60 fi_pingpong -p mroc -e rdm -I 10 -c "$@"
	}
	fipp -B 47630 >"$E2E_DIR/pp-srv.txt" 2>&1 &
	pps=$!
	for _ in $(seq 200); do
		ip netns exec "$NS_A" ss -Hltn "sport = :47630" | grep -q . && break
		kill -0 $pps 2>/dev/null || break
		sleep 0.1
	done
	fipp -P 47630 "$IP_A" >"$E2E_DIR/pp-cli.txt" 2>&1 || fail "fi_pingpong client: $(cat "$E2E_DIR/pp-cli.txt")"
	wait $pps || fail "fi_pingpong server: $(cat "$E2E_DIR/pp-srv.txt")"
	grep -q "^1m .*=10 " "$E2E_DIR/pp-cli.txt" || fail "fi_pingpong: $(cat "$E2E_DIR/pp-cli.txt")"
	ok "fi_pingpong -p mroc -e rdm, server and client on one host: every size verified (-c)"
else
	echo "note: fi_pingpong or the provider missing (or a sanitizer build): its run left out"
fi
e2e_stop a
[ "$E2E_RC" = 0 ] || fail "mrocd a exited with $E2E_RC"

# ---- one port, security "aead" ---------------------------------------------------------
D=s
e2e_config s af_xdp "$IF_A" "$IP_A" "$IP_B"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/s.conf"
echo "3 $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$E2E_DIR/keys"
chmod 0600 "$E2E_DIR/keys"
echo "security = { mode = \"aead\"; key_file = \"$E2E_DIR/keys\"; };" >>"$E2E_DIR/s.conf"
e2e_start s "$NS_A"
e2e_wait_ready s
perf aead-write write_bw --verify -s 65536 -n 200 || fail "aead: write_bw --verify"
perf aead-send send_bw --verify -s 4096 -n 400 || fail "aead: send_bw --verify"
counter '.worker + .backend' | jq -e '.loopback_pkts >= 1000 and .loopback_drops == 0 and
	.aead_tx_sealed >= .loopback_pkts and .aead_rx_opened >= .loopback_pkts and
	.aead_rx_bad_tag == 0 and .aead_rx_bad_key == 0' >/dev/null ||
	fail "aead: looped packets not all sealed and opened: $(counter '.worker + .backend' |
		jq -c 'with_entries(select(.key | test("^(aead|loopback)")))')"
ok "aead: WRITE and SEND verified, $(counter .backend.loopback_pkts) looped packets, each sealed and opened"
e2e_stop s
[ "$E2E_RC" = 0 ] || fail "mrocd s exited with $E2E_RC"

# ---- two ports, two workers, "aead" ------------------------------------------------------------
D=w
e2e_config w af_xdp "$IF_A\", \"$X_A" "$IP_A" "$IP_B"
sed -i 's/log_level = "debug"/log_level = "info"/; s/busy_poll_us = 20;/busy_poll_us = 20; workers = 2;/' \
	"$E2E_DIR/w.conf"
echo "security = { mode = \"aead\"; key_file = \"$E2E_DIR/keys\"; };" >>"$E2E_DIR/w.conf"
e2e_start w "$NS_A"
e2e_wait_ready w
jq -e '.workers == 2' <<<"$(e2e_admin w status)" >/dev/null || fail "not 2 workers: $(e2e_admin w status)"
TX0=([$IF_A]=$(tx_wire "$IF_A") [$X_A]=$(tx_wire "$X_A"))
all_ops "two ports, two workers"
check "two ports, two workers" "$IF_A" "$X_A"
handed=$(counter .backend.loopback_handed)
[ "${handed:-0}" -gt 0 ] || fail "no loopback packet was handed to the other worker: $(counter .workers)"
counter .worker | jq -e '.aead_rx_opened > 0 and .aead_rx_bad_tag == 0 and .aead_rx_bad_key == 0' \
	>/dev/null || fail "two workers, aead: $(counter .worker | jq -c 'with_entries(select(.key | test("^aead")))')"
ok "two workers, aead: $handed loopback packets went to the worker that owns their QP, all opened"
e2e_stop w
[ "$E2E_RC" = 0 ] || fail "mrocd w exited with $E2E_RC"
echo "loopback QPs: every check passed"
