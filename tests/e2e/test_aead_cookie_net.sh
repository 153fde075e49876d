#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A brand-new host connects during a flood of forged sealed CONNECT_REQs
# (security "aead", docs/PROTOCOL.md 1.2 "cookies", 11a).  B's application
# listens; an attacker that can send with any source address but holds no
# key sends B sealed-looking REQs (B's key id, a made-up sender and tag) from
# 64,516 spoofed sources as fast as it can (here 30,000-100,000 a second at
# B): each costs B a key derivation, so B's budget for sources not heard
# from (64 + 256/s a worker) stays empty.  Meanwhile A's application, on a
# host whose address never sent B anything, connects (examples/write_client)
# and its WRITE must land.
#  - security.cookies "busy" (the default): B answers a REQ it has no
#    derivation for with a cookie reply, back the way it came; A's next try
#    carries it sealed and draws on a budget of A's address alone.  Whether
#    A's first REQ already found a refilled derivation is chance: the
#    cookie counters are shown, not asserted.
#  - "always": every REQ from a source not heard from needs a cookie: the
#    same path every time (B: aead_cookie_ok, A: aead_cookie_got).
# AF_XDP by default; BACKEND=udp runs it over the UDP backend (its reply op); B_WORKERS=2
# gives B two workers (a REQ handed to the listener's worker is answered from there).
set -u
. "$(dirname "$0")/lib.sh"

SPOOF=$BUILD/tests/e2e/spoof_udp
EX=$BUILD/examples
e2e_require
for p in "$SPOOF" "$EX/write_server" "$EX/write_client"; do
	[ -x "$p" ] || skip "$p not built"
done
e2e_setup_pair
KEYS=$E2E_DIR/keys
echo "3 $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$KEYS"
chmod 0600 "$KEYS"

h32() { printf '%08x' "$1"; }
rnd() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
# A sealed-looking CONNECT_REQ (docs/PROTOCOL.md 3.1, 3.4, 1.2) for service 42 in mode aead:
# flags ICRC | AEAD | AEAD_IP, then the trailer under key id 3 with a made-up sender,
# seq and tag, then the ICRC (spoof_udp computes it).
forged_req() {
	echo -n "0120b000""00000000""$(h32 $((0x7000 + $1)))""00000000"
	echo -n "000000000000002a""$(h32 1000)""$(h32 2000)""0400""01""00""00""02""00""00"
	echo -n "00000000"
	echo -n "00000003""$(rnd 8)""$(rnd 8)""$(rnd 16)"
	echo -n "00000000"
}
cookies() {
	jq -c 'with_entries(select(.key | startswith("aead_cookie") or . == "aead_rx_derive_limited"))'
}

# run COOKIES
run() {
	local mode=$1 srv rkey pids=() c0 c1 a1 t0 t1 out rc p n
	e2e_config a "${BACKEND:-af_xdp}" "$IF_A" "$IP_A" "$IP_B"
	e2e_config b "${BACKEND:-af_xdp}" "$IF_B" "$IP_B" "$IP_A"
	sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
	# One worker at B: the flood and A's REQs meet in one derivation budget (each worker
	# has its own, and the veth's two queues split packets as the senders' CPUs fall).
	sed -i "s/^daemon = {/daemon = {\n\tworkers = ${B_WORKERS:-1};/" "$E2E_DIR/b.conf"
	# Neither names the other: no control link, nothing of A's reaches B before the client.
	sed -i '/peers = /d' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
	# A tries as a host on a real fabric does, a REQ try a second or slower (each REQ
	# is a draw in the lottery of B's refilled derivations).
	sed -i "s/rto_init_us = .*/rto_init_us = 1000000;/; s/dead_peer_ms = .*/dead_peer_ms = 30000;/" \
		"$E2E_DIR/a.conf"
	echo "security = { mode = \"aead\"; key_file = \"$KEYS\"; cookies = \"$mode\"; };" |
		tee -a "$E2E_DIR/a.conf" >>"$E2E_DIR/b.conf"
	# Both up before the flood: attaching A's XDP program stalls A's veth (and the flood).
	e2e_start a "$NS_A"
	e2e_start b "$NS_B"
	e2e_wait_ready a
	e2e_wait_ready b
	MROC_SOCKET=$E2E_DIR/b.ctl ip netns exec "$NS_B" timeout 90 "$EX/write_server" 40 \
		>"$E2E_DIR/ws.out" 2>&1 &
	srv=$!
	for _ in $(seq 100); do grep -q "^rkey 0x" "$E2E_DIR/ws.out" && break; sleep 0.1; done
	rkey=$(awk '/^rkey/ { print $2 }' "$E2E_DIR/ws.out")
	[ -n "$rkey" ] || fail "$mode: write_server printed no rkey: $(cat "$E2E_DIR/ws.out")"

	# The flood, from A's namespace: sources 10.<100 + n>.x.y, each sender's own.
	for n in $(seq "${FLOOD_SENDERS:-1}"); do
		SPOOF_VARY=1 ip netns exec "$NS_A" timeout 90 "$SPOOF" "10.$((100 + n)).0.0" \
			$((30000 + n)) "$IP_B" 4793 "$(forged_req "$n")" 100000000 0 >/dev/null 2>&1 &
		pids+=($!)
		E2E_PIDS+=($!)
	done
	# Refused: over the derivation budget ("busy"), or without a cookie ("always").
	e2e_wait b counters '.worker.rx_rejected > 5000' 15 ||
		fail "$mode: the flood did not reach B: $(e2e_admin b counters | jq -c .worker)"
	c0=$(e2e_admin b counters | jq -c .worker)
	[ "$mode" = always ] || jq -e '.aead_rx_derive_limited > 1000' <<<"$c0" >/dev/null ||
		fail "$mode: the flood left B derivations: $c0"
	ok "$mode: flood on, B refused $(jq .rx_rejected <<<"$c0") REQs"

	# A's application, never heard from at B, connects during the flood; its WRITE lands.
	t0=$(date +%s.%N)
	out=$(MROC_SOCKET=$E2E_DIR/a.ctl ip netns exec "$NS_A" timeout 30 "$EX/write_client" \
		"$IP_B" "$rkey" 2>&1)
	rc=$?
	t1=$(date +%s.%N)
	c1=$(e2e_admin b counters | jq -c .worker)
	a1=$(e2e_admin a counters | jq -c .worker)
	echo "$mode: write_client after $(echo "$t1 - $t0" | bc) s: $out (rc $rc); flood: \
$(jq -n --argjson a "$c0" --argjson b "$c1" '$b.rx_pkts - $a.rx_pkts') packets at B meanwhile"
	echo "$mode: B $(cookies <<<"$c1"); A $(cookies <<<"$a1")"
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null || fail "$mode: the flood ended before the client was done"
	done
	[ "$rc" = 0 ] && [ "$out" = "write: success" ] ||
		fail "$mode: A could not connect to B during the flood: $out"
	wait $srv || fail "$mode: write_server: $(cat "$E2E_DIR/ws.out")"
	grep -qx "received: hello over MetaRoCE" "$E2E_DIR/ws.out" ||
		fail "$mode: write_server: $(cat "$E2E_DIR/ws.out")"
	if [ "$mode" = always ]; then
		jq -e '.aead_cookie_ok >= 1 and .aead_cookie_sent >= 1' <<<"$c1" >/dev/null ||
			fail "always: B took no REQ with a cookie: $c1"
		jq -e '.aead_cookie_got >= 1' <<<"$a1" >/dev/null ||
			fail "always: A took no cookie reply: $a1"
	fi
	ok "$mode: a new host connected during a flood of forged sealed REQs and its WRITE landed"

	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for n in a b; do
		e2e_stop $n
		[ "$E2E_RC" = 0 ] || fail "$mode: mrocd $n exited with $E2E_RC"
	done
}

run busy
run always
echo "1 passed, 0 failed"
