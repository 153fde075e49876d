#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Ghost connections over real daemons (#24, docs/PROTOCOL.md 11a), in each
# security mode: B's application listens (examples/write_server, service 42);
# before the real client comes, an attacker that can send with any source
# address sends B CONNECT_REQs for that service, each from another made-up
# QPN: 20 from the real client's own address and 20 from an address nobody
# has, well-formed for the mode as far as it can be without a key (a "token"
# REQ carries its own key; in "aead" it cannot be sealed).  Then:
#  - B's listening QP is still listening, bound to nobody;
#  - B counts the refusal: in none and token each ghost got only a half-open
#    entry (cm_half_open); in aead the unsealed REQs were refused (from the
#    unknown address before the engine, rx_unknown_source; from A's, by the
#    engine as unsealed, cm_sec_mismatch: none took an entry);
#  - the real client (examples/write_client) then connects and its WRITE lands.
# Before 4222665 (none, token) the first ghost REQ bound the listener: the
# listener was connected to the ghost and the real client was refused.
set -u
. "$(dirname "$0")/lib.sh"

EX=$BUILD/examples
SPOOF=$BUILD/tests/e2e/spoof_udp
e2e_require
for p in "$EX/write_server" "$EX/write_client" "$SPOOF"; do
	[ -x "$p" ] || skip "$p not built"
done
command -v jq >/dev/null || skip "needs jq"
e2e_setup_pair
KEYS=$E2E_DIR/keys
echo "3 $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$KEYS"
chmod 0600 "$KEYS"
NOBODY=10.250.0.9	# an address no host has

h8() { printf '%02x' "$1"; }
h32() { printf '%08x' "$1"; }
# req QPN SEC: a CONNECT_REQ (docs/PROTOCOL.md 3.1, 3.4) from QP QPN for service 42, in
# mode SEC (0 none, 1 token: with a receive key of its own, 2 aead), with an ICRC (1.1;
# spoof_udp computes it: an attacker knows the algorithm).
req() {
	local key=""
	[ "$2" = 1 ] && key=00112233445566778899aabbccddeeff
	echo -n "01208000""00000000""$(h32 "$1")""00000000"
	echo -n "000000000000002a""$(h32 1000)""$(h32 2000)""0400""01""00""00""$(h8 "$2")""00""00"
	echo -n "${key}00000000"
}

# run MODE SEC
run() {
	local mode=$1 sec=$2 srv c q rkey out pids=() i
	e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
	e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
	sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
	echo "security = { mode = \"$mode\"; key_file = \"$KEYS\"; };" | tee -a "$E2E_DIR/a.conf" \
		>>"$E2E_DIR/b.conf"
	e2e_start_linked	# the daemons' own handshake before the ghosts: it is none

	MROC_SOCKET=$E2E_DIR/b.ctl ip netns exec "$NS_B" timeout 60 "$EX/write_server" 40 \
		>"$E2E_DIR/ws-$mode.out" 2>&1 &
	srv=$!
	for _ in $(seq 100); do grep -q "^rkey 0x" "$E2E_DIR/ws-$mode.out" && break; sleep 0.1; done
	rkey=$(awk '/^rkey/ { print $2 }' "$E2E_DIR/ws-$mode.out")
	[ -n "$rkey" ] || fail "$mode: write_server printed no rkey: $(cat "$E2E_DIR/ws-$mode.out")"
	c=$(e2e_admin b counters)

	# The ghosts: 20 QPNs from A's address, 20 from nobody's, each REQ sent twice.
	for i in $(seq 1 20); do
		ip netns exec "$NS_A" "$SPOOF" "$IP_A" $((30000 + i)) "$IP_B" 4793 \
			"$(req $((0x7000 + i)) "$sec")" 2 10 &
		pids+=($!)
		ip netns exec "$NS_A" "$SPOOF" "$NOBODY" $((30000 + i)) "$IP_B" 4793 \
			"$(req $((0x7100 + i)) "$sec")" 2 10 &
		pids+=($!)
	done
	wait "${pids[@]}" || fail "$mode: spoof_udp"
	sleep 1

	# B's listener: still listening, nobody's.
	q=$(e2e_admin b qps | jq -c '[.qps[] | select(.owner == "client") | .state]')
	echo "b: the application's QPs: $q"
	[ "$q" = '["listen"]' ] || fail "$mode: B's listener after the ghosts: $q"
	if [ "$mode" = aead ]; then
		e2e_admin b counters | jq -e --argjson c "$c" '
			.worker.rx_unknown_source - $c.worker.rx_unknown_source >= 20 and
			.engine.cm_sec_mismatch - $c.engine.cm_sec_mismatch >= 20 and
			.engine.cm_half_open == $c.engine.cm_half_open' >/dev/null ||
			fail "aead: ghost REQs not refused: $(e2e_admin b counters | jq -c '{w: .worker, e: .engine}')"
		ok "aead: 40 unsealed ghost REQs refused (none took an entry), the listener still listens"
	else
		e2e_admin b counters | jq -e --argjson c "$c" '
			.engine.cm_half_open - $c.engine.cm_half_open >= 20' >/dev/null ||
			fail "$mode: ghost REQs did not take half-open entries: $(e2e_admin b counters | jq -c .engine)"
		ok "$mode: $(e2e_admin b counters | jq --argjson c "$c" \
			'.engine.cm_half_open - $c.engine.cm_half_open') ghost REQs got half-open entries only, the listener still listens"
	fi

	# The real client connects, and its bytes land.
	out=$(MROC_SOCKET=$E2E_DIR/a.ctl ip netns exec "$NS_A" timeout 40 "$EX/write_client" "$IP_B" \
		"$rkey" 2>&1) || fail "$mode: write_client: $out; b: $(e2e_admin b counters | jq -c '.engine |
			{cm_half_open, cm_half_dropped, cm_busy, rx_bad_peer, rx_unknown_qp, tx_cm}'), \
			QPs $(e2e_admin b qps | jq -c '[.qps[] | {owner, state, peer}]'); a: \
			$(e2e_admin a counters | jq -c '.engine | {tx_cm, rx_bad_peer, rx_unknown_qp}')"
	[ "$out" = "write: success" ] || fail "$mode: write_client: $out"
	wait $srv || fail "$mode: write_server: $(cat "$E2E_DIR/ws-$mode.out")"
	grep -qx "received: hello over MetaRoCE" "$E2E_DIR/ws-$mode.out" ||
		fail "$mode: write_server: $(cat "$E2E_DIR/ws-$mode.out")"
	ok "$mode: after the ghosts the real client connected and its WRITE landed"
	for n in a b; do
		e2e_stop $n
		[ "$E2E_RC" = 0 ] || fail "$mode: mrocd $n exited with $E2E_RC"
	done
}

run none 0
run token 1
run aead 2
echo "1 passed, 0 failed"
