#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Local clients that try to stall or starve mrocd (issue 13), on real daemons
# (UDP backend over veth in namespaces: the client side does not depend on
# the backend, and AF_XDP copy mode stalls now and then on a loaded machine):
#  - hostile fds: a full blocking pipe, a socket or a semaphore eventfd as
#    doorbell or completion channel are refused; a blocking eventfd at its
#    maximum, and a doorbell drained behind the daemon's back, do not stall
#    the worker: meanwhile a second client's verified transfer completes and
#    mroc-cli status answers;
#  - reserved service ids (the daemons' link service) and QP_CONNECT to
#    unspecified, broadcast, multicast and loopback addresses refused;
#  - another user (nobody) holding idle connections: at most 64 without HELLO,
#    cut after 5 s, at most 4 established clients (max_clients_per_uid), at
#    most 4 admin connections, cut after 5 s; root's transfer and mroc-cli
#    carry on;
#  - 1,500 forged CONNECT_REQs from as many addresses: the peer table fills,
#    then the unproven peers age out and new peers get in again.
set -u
. "$(dirname "$0")/lib.sh"

PERF=$BUILD/mroc-perf
CLI=$BUILD/mroc-cli
EVIL=$BUILD/tests/e2e/evil_client
SPOOF=$BUILD/tests/e2e/spoof_req
e2e_require
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
for b in "$PERF" "$CLI" "$EVIL" "$SPOOF"; do
	[ -x "$b" ] || skip "$b not built"
done
e2e_setup_pair
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
echo 'limits = { max_clients_per_uid = 4; };' >>"$E2E_DIR/a.conf"
# The forged requests come from addresses B has no route back to.
ip netns exec "$NS_B" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
	"net.ipv4.conf.$IF_B.rp_filter=0"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b

# ---- hostile fds ----------------------------------------------------------------
ip netns exec "$NS_A" "$EVIL" "$E2E_DIR/a.ctl" stall 6 >"$E2E_DIR/evil-stall.log" 2>&1 &
evil=$!
sleep 1
e2e_pair_perf_start stall 18801 --verify -s 65536 -n 300
answers=0
while kill -0 "$evil" 2>/dev/null; do
	timeout 5 "$CLI" -S "$E2E_DIR/a.admin" status >/dev/null || fail "mroc-cli status got no answer"
	answers=$((answers + 1))
	sleep 0.5
done
wait "$evil" || { cat "$E2E_DIR/evil-stall.log"; fail "the stalling client was not handled"; }
e2e_pair_perf_wait stall || fail "a verified transfer next to the stalling client"
[ "$answers" -ge 3 ] || fail "mroc-cli answered only $answers times"
c=$(e2e_admin a counters) || fail "a stopped answering"
jq -e '.clients.bad_wrs >= 100' <<<"$c" >/dev/null || fail "bad requests not counted: $(jq -c .clients <<<"$c")"
ok "hostile fds refused; a saturated blocking eventfd and an eaten doorbell stall nothing" \
	"(verified transfer done, mroc-cli answered $answers times)"

# ---- what a client may not ask for ------------------------------------------------
ip netns exec "$NS_A" "$EVIL" "$E2E_DIR/a.ctl" limits >"$E2E_DIR/evil-limits.log" 2>&1 ||
	{ cat "$E2E_DIR/evil-limits.log"; fail "reserved services or bad addresses accepted"; }
ok "reserved service ids, unspecified/broadcast/multicast/loopback addresses: refused"

# ---- another user's idle connections ------------------------------------------------
# nobody (uid 65534) may use the sockets and runs a copy of evil_client; root (the tests'
# other clients) is another user.
e2e_nobody_setup a "$NS_A" "$EVIL"
EVIL=${NOBODY[evil_client]}
# field NAME LINE: the value of NAME=... in LINE.
field() { sed -n "s/.*\b$1=\(-*[0-9]*\).*/\1/p" <<<"$2"; }

out=$(e2e_as_nobody "$EVIL" "$E2E_DIR/a.ctl" users 6) || fail "evil_client users"
[ "$(field accepted "$out")" = 4 ] && [ "$(field error "$out")" = -87 ] ||
	fail "max_clients_per_uid = 4: $out (want accepted=4 error=-87, EUSERS)"
ok "one user: 4 clients (max_clients_per_uid), the 5th refused with EUSERS"

e2e_as_nobody "$EVIL" "$E2E_DIR/a.ctl" idle 80 9 >"$E2E_DIR/idle.txt" 2>&1 &
idler=$!
e2e_as_nobody "$EVIL" "$E2E_DIR/a.admin" idle-admin 32 9 >"$E2E_DIR/idle-admin.txt" 2>&1 &
admin_idler=$!
sleep 1
e2e_pair_perf_start idle 18802 --verify -s 65536 -n 200
e2e_pair_perf_wait idle || fail "root's transfer next to nobody's idle connections"
timeout 5 "$CLI" -S "$E2E_DIR/a.admin" status >/dev/null || fail "mroc-cli status refused for root"
wait "$idler" || fail "evil_client idle"
wait "$admin_idler" || fail "evil_client idle-admin"
# Every idle connection was closed by the daemon; which way, its counters say
# (the idlers' own refused/cut split is by the clock, so only informative).
grep -q "open=0" "$E2E_DIR/idle.txt" || fail "80 idle clients: $(cat "$E2E_DIR/idle.txt")"
grep -q "open=0" "$E2E_DIR/idle-admin.txt" ||
	fail "32 idle admin connections: $(cat "$E2E_DIR/idle-admin.txt")"
c=$(e2e_admin a counters) || fail "a stopped answering"
jq -e '.sockets.clients_refused == 16 and .sockets.hello_timeouts == 64 and
       .sockets.admin_refused == 28 and .sockets.admin_timeouts >= 4' <<<"$c" >/dev/null ||
	fail "idle connections: want 16 refused and 64 cut (clients), 28 and 4 (admin):" \
	     "$(jq -c .sockets <<<"$c")"
ok "another user's 80 idle clients and 32 idle admin connections: 64 and 4 held, cut after 5 s;" \
	"root's verified transfer and mroc-cli unaffected"

# ---- forged connection requests ------------------------------------------------------
b_peers() { e2e_admin b counters | jq -c .peers; }
# 1,500 (the 1,024-entry table, and a margin for requests a busy host drops).
ip netns exec "$NS_A" "$SPOOF" "$IP_B" 4793 10.99.0.1 1500 >/dev/null || fail "spoof_req"
# Full: the sweep's evictions (or refusals, within one sweep) show it.
e2e_wait b counters '.peers.evicted + .peers.full > 0' 10 ||
	fail "1,500 forged requests did not fill the peer table: $(b_peers)"
e2e_wait b status '.peers_known <= 2' 15 ||
	fail "the forged peers did not age out: $(e2e_admin b status | jq .peers_known), $(b_peers)"
added=$(e2e_admin b counters | jq .peers.added)
full=$(e2e_admin b counters | jq .peers.full)
ip netns exec "$NS_A" "$SPOOF" "$IP_B" 4793 10.98.0.1 100 >/dev/null || fail "spoof_req"
e2e_wait b counters ".peers.added >= $added + 100 and .peers.full == $full" 10 ||
	fail "new peers cannot get in after the flood: $(b_peers)"
e2e_pair_perf_start spoof 18803 --verify -s 65536 -n 100
e2e_pair_perf_wait spoof || fail "a transfer after the forged requests"
ok "1,500 forged CONNECT_REQs filled the peer table for seconds, not for good: $(b_peers)"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
