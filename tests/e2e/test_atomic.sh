#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Atomics end to end (issue #14): two mrocd on AF_XDP over a one-plane fabric
# (scripts/fabric) that drops 5% of the packets each way (requests, answers
# and ACKs alike):
#  - 3 clients of A, 4 QPs each, FETCH_ADD 3 to one word of B's region 150
#    times per QP: the word ends at exactly the sum, and the original values
#    all clients saw are exactly 0, 3, 6, ... (each add performed once, none
#    twice though requests and answers were lost and sent again);
#  - the same QPs increment another word by compare-and-swap loops racing
#    each other: it ends at exactly the number of increments;
#  - mroc-perf atomic_bw --verify (both atomics, 2 QPs: every returned value
#    checked, the server checks its words against the client's counts) and
#    atomic_lat -A CMP_AND_SWAP run on the same lossy fabric.
# Counters only, never times.
set -u
. "$(dirname "$0")/lib.sh"

AC=$BUILD/tests/e2e/atomic_client
PERF=$BUILD/mroc-perf
e2e_require_fabric
[ -x "$AC" ] || skip "$AC not built"
e2e_fabric_up --planes 1
e2e_config a af_xdp "$FABRIC_IF_0" "$FABRIC_IP_0" "$FABRIC_IP_1"
e2e_config b af_xdp "$FABRIC_IF_1" "$FABRIC_IP_1" "$FABRIC_IP_0"
sed -i 's/log_level = "debug"/log_level = "info"/; s/keepalive_ms = 100;/keepalive_ms = 500; rto_min_us = 5000;/' \
	"$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b
e2e_fabric_set 1 loss 5

CLIENTS=3 QPS=4 N=150 ADD=3 M=20
SERVICE=0x7a70
ip netns exec "$NS_B" timeout 120 "$AC" server "$E2E_DIR/b.ctl" $SERVICE $((CLIENTS * QPS)) "$E2E_DIR" \
	>"$E2E_DIR/server.out" 2>"$E2E_DIR/server.log" &
srv=$!
pids=()
for c in $(seq $CLIENTS); do
	ip netns exec "$NS_A" timeout 100 "$AC" client "$E2E_DIR/a.ctl" $SERVICE "$FABRIC_IP_1" "$E2E_DIR" \
		$QPS $N $ADD $M >"$E2E_DIR/client$c.out" 2>"$E2E_DIR/client$c.log" &
	pids+=($!)
done
for c in $(seq $CLIENTS); do
	wait "${pids[$((c - 1))]}" || { cat "$E2E_DIR/client$c.log"; fail "client $c failed"; }
done
touch "$E2E_DIR/done"
wait $srv || { cat "$E2E_DIR/server.log"; fail "the atomic server failed"; }

total=$((CLIENTS * QPS * N))
read -r _ counter _ cswap <"$E2E_DIR/server.out"
[ "$counter" = $((total * ADD)) ] || fail "counter $counter, expected $((total * ADD)) ($total adds of $ADD)"
sort -n "$E2E_DIR"/client*.out >"$E2E_DIR/originals"
seq 0 $ADD $(((total - 1) * ADD)) | cmp -s - "$E2E_DIR/originals" ||
	fail "the original values are not exactly 0, $ADD, ... $(((total - 1) * ADD)): $(sort -n "$E2E_DIR/originals" | uniq -d | head -3) repeated"
[ "$cswap" = $((CLIENTS * QPS * M)) ] || fail "compare-and-swap counter $cswap, expected $((CLIENTS * QPS * M))"
# The loss was real: requests were sent again, and B received some twice (their answer or
# ACK lost) yet performed none twice (the counter above).
retx=$(e2e_admin a counters | jq .engine.tx_retx)
dup=$(e2e_admin b counters | jq .engine.rx_dup)
[ "${retx:-0}" -gt 0 ] && [ "${dup:-0}" -gt 0 ] || fail "no retransmission ($retx) or duplicate ($dup) seen at 5% loss"
ok "5% loss: $total FETCH_ADDs from $CLIENTS clients x $QPS QPs summed to $counter, originals distinct and gap-free; CAS counter $cswap"

# mroc-perf's atomics on the same lossy fabric (its side channel on the management network).
run_perf() {
	local name=$1
	shift
	ip netns exec "$NS_B" timeout 60 "$PERF" "$@" --mrocd-socket "$E2E_DIR/b.ctl" --mroc-addr "$FABRIC_IP_1" \
		>"$E2E_DIR/$name.srv" 2>&1 &
	local s=$!
	sleep 0.3
	ip netns exec "$NS_A" timeout 60 "$PERF" "$@" --mrocd-socket "$E2E_DIR/a.ctl" "$FABRIC_MGMT_1" \
		>"$E2E_DIR/$name.cli" 2>&1 || { cat "$E2E_DIR/$name.cli" "$E2E_DIR/$name.srv"; fail "$name: client"; }
	wait $s || { cat "$E2E_DIR/$name.srv"; fail "$name: server"; }
}
run_perf fadd_bw atomic_bw --verify -q 2 -n 400 -j
run_perf cswap_bw atomic_bw -A CMP_AND_SWAP --verify -q 2 -n 400 -j
run_perf cswap_lat atomic_lat -A CMP_AND_SWAP -n 200 -j
for r in fadd_bw cswap_bw cswap_lat; do
	[ "$(jq -r .status "$E2E_DIR/$r.cli")" = ok ] || fail "$r: $(cat "$E2E_DIR/$r.cli")"
done
for r in fadd_bw cswap_bw; do
	msgs=$(jq '.results[0].messages' "$E2E_DIR/$r.cli")
	[ "$msgs" = 800 ] || fail "$r: $msgs atomics counted, expected 800"
done
ok "mroc-perf atomic_bw --verify (FETCH_AND_ADD, CMP_AND_SWAP, 2 QPs) and atomic_lat on 5% loss"

out=$("$PERF" atomic_bw -s 16 10.0.0.1 2>&1)
[ $? = 2 ] && grep -q "atomics are 8 bytes" <<<"$out" || fail "atomic_bw -s 16: $out"
out=$("$PERF" write_bw -A CMP_AND_SWAP 10.0.0.1 2>&1)
[ $? = 2 ] && grep -q "atomic tests only" <<<"$out" || fail "write_bw -A: $out"
ok "mroc-perf refuses other sizes for atomics and -A for other tests"

e2e_fabric_set 1 loss 0
for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
