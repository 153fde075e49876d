#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Another client's keys, while it lives and after it died (#24, docs/PROTOCOL.md 11a
# "memory of another tenant"), on real daemons over the UDP backend (one worker: every
# client's regions in one engine's table, so only the domain check stands between them).
# The thief (tests/e2e/key_thief.c) knows the victims' keys and writes its work requests
# into the rings itself, past libmroc's own check:
#  - B: victim v1 holds a 64 KiB region of 0xab; a thief's listener (12 QPs) holds one of
#    0x11; A: a peer holds one of 0xcd and listens;
#  - B's thief posts WRITE and SEND from v1's region, READ, FETCH_ADD, CMP_SWP and RECV
#    into it (by v1's lkey) on a connected QP: each LOC_PROT_ERR, counted in bad_wrs,
#    and its own WRITE then succeeds on the same QP;
#  - A's requester sends WRITE, READ and FETCH_ADD naming v1's rkey to the thief's
#    listening QPs: each REM_ACCESS_ERR, counted in rx_access_err, nothing of v1's comes
#    back; a WRITE to the listener's own rkey succeeds;
#  - v1's bytes are all still 0xab; then v1 is killed (SIGKILL, no goodbye), its region
#    released; victim w registers a region in v1's old slot; both attacks again with v1's
#    dead keys and w's: all refused; every byte of w, of the peer and of the listener is as
#    the one allowed write left it.
set -u
. "$(dirname "$0")/lib.sh"

KT=$BUILD/tests/e2e/key_thief
e2e_require
[ -x "$KT" ] || skip "$KT not built"
e2e_setup_pair
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
e2e_start_linked

SP=0x6b01	# the peer's service on A
ST=0x6b02	# the thief's listener's on B
counters() { e2e_admin b counters | jq -r "$1"; }

# hold NS HOST NAME BYTE [SERVICE N]: a region holder in the background (pid in HOLD[NAME]).
declare -A HOLD
hold() {
	ip netns exec "$1" "$KT" hold "$E2E_DIR/$2.ctl" "$E2E_DIR" "$3" "${@:4}" \
		>"$E2E_DIR/$3.out" 2>"$E2E_DIR/$3.log" &
	HOLD[$3]=$!
	E2E_PIDS+=($!)
	for _ in $(seq 200); do
		[ -f "$E2E_DIR/$3.keys" ] && return
		kill -0 "${HOLD[$3]}" 2>/dev/null || break
		sleep 0.1
	done
	fail "$3 did not register its region: $(cat "$E2E_DIR/$3.log")"
}
# check NAME [OFF LEN BYTE]: NAME checks its region (all its own byte but OFF..+LEN).
check() {
	echo "${*:2}" >"$E2E_DIR/$1.check.tmp"
	mv "$E2E_DIR/$1.check.tmp" "$E2E_DIR/$1.check"
	for _ in $(seq 200); do
		grep -q "^$1: 65536 bytes as expected" "$E2E_DIR/$1.out" && return
		kill -0 "${HOLD[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	fail "$1's region: $(cat "$E2E_DIR/$1.log")"
}
# attack PHASE VICTIM...: the thief's local attack from B and the requester's from A.
attack() {
	ip netns exec "$NS_B" timeout 120 "$KT" local "$E2E_DIR/b.ctl" $SP "$IP_A" "$E2E_DIR" peer \
		"${@:2}" >"$E2E_DIR/local$1.out" 2>&1 || fail "phase $1, lkeys: $(cat "$E2E_DIR/local$1.out")"
	ip netns exec "$NS_A" timeout 120 "$KT" remote "$E2E_DIR/a.ctl" $ST "$IP_B" "$E2E_DIR" \
		"${@:2}" -- thief >"$E2E_DIR/remote$1.out" 2>&1 ||
		fail "phase $1, rkeys: $(cat "$E2E_DIR/remote$1.out")"
	cat "$E2E_DIR/local$1.out" "$E2E_DIR/remote$1.out"
}

# ---- phase 1: v1 alive ----------------------------------------------------------------
hold "$NS_B" b v1 0xab
hold "$NS_A" a peer 0xcd $SP 2
hold "$NS_B" b thief 0x11 $ST 12
bad0=$(counters .clients.bad_wrs)
acc0=$(counters .engine.rx_access_err)
attack 1 v1
bad1=$(counters .clients.bad_wrs)
acc1=$(counters .engine.rx_access_err)
[ $((bad1 - bad0)) = 6 ] || fail "phase 1: 6 refused work requests, bad_wrs went $bad0 -> $bad1"
[ $((acc1 - acc0)) -ge 3 ] || fail "phase 1: 3 refused rkeys, rx_access_err went $acc0 -> $acc1"
check v1
ok "v1 alive: 6 requests by its lkey (bad_wrs +$((bad1 - bad0))) and 3 by its rkey" \
	"(rx_access_err +$((acc1 - acc0))) refused; its 64 KiB intact"

# ---- phase 2: v1 dead, w in its slot --------------------------------------------------
mrs=$(counters .clients.mrs)
kill -KILL "${HOLD[v1]}"
wait "${HOLD[v1]}" 2>/dev/null
e2e_wait b counters ".clients.mrs == $((mrs - 1))" 10 ||
	fail "v1 died, its region stayed: $(counters .clients)"
hold "$NS_B" b w 0x77
read -r v1l _ <"$E2E_DIR/v1.keys"
read -r wl _ <"$E2E_DIR/w.keys"
# The dead key is worth trying only against a live region in its slot (engine/mr.c: the
# slot index is the key's low 12 bits, the lowest free slot is taken).
[ $((v1l & 4095)) = $((wl & 4095)) ] && [ "$v1l" != "$wl" ] ||
	fail "w's region (lkey $wl) is not in v1's old slot (lkey $v1l): the test's premise"
attack 2 v1 w
bad2=$(counters .clients.bad_wrs)
acc2=$(counters .engine.rx_access_err)
[ $((bad2 - bad1)) = 12 ] || fail "phase 2: 12 refused work requests, bad_wrs went $bad1 -> $bad2"
[ $((acc2 - acc1)) -ge 6 ] || fail "phase 2: 6 refused rkeys, rx_access_err went $acc1 -> $acc2"
check w
check peer 0 16 0x5a
check thief 0 16 0x3c
ok "v1 dead (lkey $v1l), w in its slot (lkey $wl): 12 requests by their lkeys" \
	"(bad_wrs +$((bad2 - bad1))) and 6 by their rkeys (rx_access_err +$((acc2 - acc1))) refused;" \
	"w, the peer and the listener hold exactly the 2 allowed writes"

for n in w peer thief; do
	kill -TERM "${HOLD[$n]}"
done
for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
