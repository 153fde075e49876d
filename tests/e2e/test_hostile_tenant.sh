#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A hostile tenant of mrocd (tests/e2e/tenant_attack.c) against the daemon and the other
# tenants, on real daemons over the UDP backend (what is attacked is the client side):
#  - rings: descriptors whose offset + length pass 2^64, lengths of 2^32 - 1, key indices
#    past the table, a RECV at a region's end, an opcode and flags of 0xff, the ring
#    header rewritten after QP_CREATE: error completions; an RQ producer index 2^31 ahead,
#    an SQ producer index moved back, a CQ consumer index ahead of the daemon's: the
#    tenant is disconnected (clients.kicked);
#  - control messages of bad lengths, types and header lengths, extra fds, fds of the wrong
#    kinds (a directory, /dev/zero, O_PATH, sockets, an eventfd as memory, a memfd as an
#    eventfd), out-of-range sizes, modes, flags, families, other QPNs and keys: refused,
#    the connection answers; 40 clients that die in the middle of a QP_CREATE leave no QP;
#  - the peer table (1,024 peers a worker): nobody's QPs connecting to 1,100 addresses of
#    their own, which no one answers, get at most its share of the table
#    (limits.uid_share_percent 75: 768, then EDQUOT, counted in clients.share_refused);
#    root's QP then still connects to a new peer, and the other client's verified transfer
#    runs through all of it;
#  - the steering table of a two-worker daemon (1,024 services listened on): nobody's 1,100
#    QPs, each listening on a service of its own, get at most 768 of it (EDQUOT); root's
#    LISTEN then still works.
set -u
. "$(dirname "$0")/lib.sh"

PERF=$BUILD/mroc-perf
E2E_PERF_TIMEOUT=90	# e2e_pair_perf_start: beside the attacks on a 2-CPU machine
TA=$BUILD/tests/e2e/tenant_attack
e2e_require
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
for b in "$PERF" "$TA"; do
	[ -x "$b" ] || skip "$b not built"
done
e2e_setup_pair
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
# One client holds all of the attacking QPs (the table's 1,024 and more).
echo 'limits = { max_qps_per_client = 1200; };' >>"$E2E_DIR/a.conf"
# A second address of B's: a peer A never heard of.
IP_B2=${IP_B%.*}.3
# The two-worker daemon's veth (below).
X_A=mrx${E2E_ID}a
X_B=mrx${E2E_ID}b
IP_C=10.202.$((E2E_ID % 250)).1
IP_D=10.202.$((E2E_ID % 250)).2
ip -n "$NS_B" addr add "$IP_B2/24" dev "$IF_B"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b

# ---- rings and control messages ---------------------------------------------------------
e2e_pair_perf_start rings 18811 --verify -s 65536 -n 300
ip netns exec "$NS_A" "$TA" "$E2E_DIR/a.ctl" rings >"$E2E_DIR/rings.log" 2>&1 ||
	{ cat "$E2E_DIR/rings.log"; e2e_alive a "ring attacks"; fail "ring attacks"; }
e2e_alive a "ring attacks"
ip netns exec "$NS_A" "$TA" "$E2E_DIR/a.ctl" ctl >"$E2E_DIR/ctl.log" 2>&1 ||
	{ cat "$E2E_DIR/ctl.log"; e2e_alive a "control attacks"; fail "control attacks"; }
e2e_alive a "control attacks"
e2e_pair_perf_wait rings || fail "a verified transfer next to the ring and control attacks"
c=$(e2e_admin a counters) || fail "a stopped answering"
jq -e '.clients.kicked >= 3 and .clients.bad_wrs >= 12' <<<"$c" >/dev/null ||
	fail "ring attacks not counted: $(jq -c .clients <<<"$c")"
e2e_wait a status '.clients == 0' 10 ||
	fail "clients left behind: $(e2e_admin a status | jq -c '{clients, qps}')"
c=$(e2e_admin a counters)
jq -e '.clients.qps == 0 and .clients.mrs == 0' <<<"$c" >/dev/null ||
	fail "QPs or regions left behind: $(jq -c .clients <<<"$c")"
ok "ring and control-message attacks: errors and disconnections for the attacker alone;" \
	"a verified transfer beside them; nothing left behind"

# ---- the peer table ----------------------------------------------------------------------
e2e_nobody_setup a "$NS_A" "$TA"
TA_N=${NOBODY[tenant_attack]}
e2e_as_nobody "$TA_N" "$E2E_DIR/a.ctl" peers 1100 10.97 "$E2E_DIR/stop-peers" \
	>"$E2E_DIR/peers.txt" 2>&1 &
hog=$!
E2E_PIDS+=($hog)
for _ in $(seq 600); do
	grep -q "connected=" "$E2E_DIR/peers.txt" && break
	kill -0 $hog 2>/dev/null || break
	sleep 0.1
done
out=$(cat "$E2E_DIR/peers.txt")
e2e_alive a "1,100 QPs connecting"
grep -q "connected=" <<<"$out" || fail "tenant_attack peers: $out"
# Root, another tenant: a new peer.
v=$(ip netns exec "$NS_A" "$TA" "$E2E_DIR/a.ctl" connect "$IP_B2") || fail "tenant_attack connect: $v"
touch "$E2E_DIR/stop-peers"
wait $hog
[ "$v" = "status=0" ] ||
	fail "root's QP_CONNECT to a new peer beside nobody's QPs ($out): $v (-28: ENOSPC, the peer table full)"
connected=$(sed -n 's/.*connected=\([0-9]*\).*/\1/p' <<<"$out")
[ "$connected" -le 768 ] && grep -q "error=-122" <<<"$out" ||
	fail "nobody's QPs got more than its share of the peer table (768): $out (want EDQUOT, -122)"
c=$(e2e_admin a counters) || fail "a stopped answering"
jq -e '.clients.share_refused >= 300' <<<"$c" >/dev/null ||
	fail "refusals not counted: $(jq -c .clients <<<"$c")"
e2e_pair_perf_start peers 18812 --verify -s 65536 -n 100
e2e_pair_perf_wait peers || fail "a transfer after the peer table attack"
ok "1,100 QPs of nobody's to as many peers: $out; root's QP to a new peer connects"

# ---- the steering table (two workers) ----------------------------------------------------
# mrocd c in NS_A: AF_XDP on a veth of two queues, a worker each; CONNECT_REQs go to the
# worker of the service's listener by a table of 1,024 services for all the workers.
ip link add "$X_A" netns "$NS_A" numrxqueues 2 numtxqueues 2 type veth peer name "$X_B" \
	netns "$NS_B" numrxqueues 2 numtxqueues 2 || fail "veth with two queues"
ip -n "$NS_A" addr add "$IP_C/24" dev "$X_A"
ip -n "$NS_B" addr add "$IP_D/24" dev "$X_B"
ip -n "$NS_A" link set "$X_A" up
ip -n "$NS_B" link set "$X_B" up
e2e_config c af_xdp "$X_A" "$IP_C" "$IP_D"
sed -i "s|^\tinterfaces = ( \"$X_A\" );|\tinterfaces = ( { name = \"$X_A\"; queues = [ 0, 1 ]; } );|" \
	"$E2E_DIR/c.conf"
grep -q "queues = \[ 0, 1 \]" "$E2E_DIR/c.conf" || fail "c.conf: no queues"
sed -i 's/log_level = "debug"/log_level = "info"/; s/^daemon = {/daemon = {\n\tworkers = 2;/' "$E2E_DIR/c.conf"
echo 'limits = { max_qps_per_client = 1200; };' >>"$E2E_DIR/c.conf"
e2e_start c "$NS_A"
e2e_wait_ready c
[ "$(e2e_admin c status | jq .workers)" = 2 ] || fail "c: not two workers: $(e2e_admin c status | jq -c .)"
e2e_nobody_setup c "$NS_A" "$TA"
e2e_as_nobody "$TA_N" "$E2E_DIR/c.ctl" listen 1100 0x100000 "$E2E_DIR/stop-listen" \
	>"$E2E_DIR/listen.txt" 2>&1 &
hog=$!
E2E_PIDS+=($hog)
for _ in $(seq 600); do
	grep -q "listening=" "$E2E_DIR/listen.txt" && break
	kill -0 $hog 2>/dev/null || break
	sleep 0.1
done
out=$(cat "$E2E_DIR/listen.txt")
kill -0 "$(e2e_pid c)" 2>/dev/null || fail "mrocd c died: 1,100 QPs listening"
grep -q "listening=" <<<"$out" || fail "tenant_attack listen: $out"
v=$(ip netns exec "$NS_A" "$TA" "$E2E_DIR/c.ctl" listen 1 0x200000 "$E2E_DIR/stop-listen-root" \
	2>&1 </dev/null & sleep 0.5; touch "$E2E_DIR/stop-listen-root"; wait)
touch "$E2E_DIR/stop-listen"
wait $hog
grep -q "listening=1 " <<<"$v" ||
	fail "root's LISTEN beside nobody's 1,100 listening QPs ($out): $v (-28: ENOSPC, the steering table full)"
listening=$(sed -n 's/.*listening=\([0-9]*\).*/\1/p' <<<"$out")
[ "$listening" -le 768 ] && grep -q "error=-122" <<<"$out" ||
	fail "nobody's QPs got more than its share of the steering table (768): $out (want EDQUOT, -122)"
# Its listeners gone, its share is its own again (the count went down with them).
again=$(e2e_as_nobody "$TA_N" "$E2E_DIR/c.ctl" listen 768 0x300000 "$E2E_DIR/stop-listen")
grep -q "listening=768 refused=0" <<<"$again" || fail "nobody's share after its listeners went: $again"
ok "1,100 QPs of nobody's listening on as many services (two workers): $out; root's LISTEN works"

for n in a b c; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
