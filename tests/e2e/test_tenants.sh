#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Local tenants of one mrocd (#24 items 8, 11, 12; docs/PROTOCOL.md 11a), on
# real daemons over the UDP backend (what is checked here is the client and
# admin sockets' side, not the backend's):
#  - service ids have owners (rdma_cm's rule): while a server of root's
#    listens on a service with 2 QPs, another user's client and another
#    client of root's get EADDRINUSE for it (libmroc's text says why),
#    counted (clients.listen_refused); the server's atomics from 2 QPs of A
#    end at exactly the sum; once the server is gone the service is free;
#  - the admin socket split: a user who is no administrator (nobody) sees its
#    own QPs only (not root's, not mrocd's control link: another's QPN reads
#    as no QP) and its own clients' counters only; mroc-cli's config reload,
#    counters reset and link show print "permission denied: ..." for it;
#    root sees everything; a member of daemon.admin_group is an administrator;
#  - one user's share of the QP table (limits.max_qps 16,
#    uid_share_percent 50): nobody's 9th QP gets EDQUOT (counted), root's
#    atomics above are not touched by it.
set -u
. "$(dirname "$0")/lib.sh"

AC=$BUILD/tests/e2e/atomic_client
LT=$BUILD/tests/e2e/listen_try
CLI=$BUILD/mroc-cli
e2e_require
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
for b in "$AC" "$LT" "$CLI"; do
	[ -x "$b" ] || skip "$b not built"
done
e2e_setup_pair
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
echo 'limits = { max_qps = 16; max_qps_per_client = 16; uid_share_percent = 50; };' >>"$E2E_DIR/b.conf"
# An administrators' group for nobody to be a member of (adm is in every Debian).
ADM_GID=$(getent group adm | cut -d: -f3)
[ -n "$ADM_GID" ] && sed -i 's|^daemon = {|daemon = {\n\tadmin_group = "adm";|' "$E2E_DIR/b.conf"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b

# nobody (uid 65534) may use B's sockets and runs copies of these two.
e2e_nobody_setup b "$NS_B" "$LT" "$CLI"
LT=${NOBODY[listen_try]} CLI=${NOBODY[mroc-cli]}
counters() { e2e_admin b counters | jq -c "$1"; }
# nobody_admin JSON: nobody's request on B's admin socket, the reply.
nobody_admin() { e2e_as_nobody socat -t 5 - "UNIX-CONNECT:$E2E_DIR/b.admin" <<<"$1"; }

# ---- item 8: service ids have owners ---------------------------------------------------
SERVICE=0x5e71
ip netns exec "$NS_B" timeout 60 "$AC" server "$E2E_DIR/b.ctl" $SERVICE 2 "$E2E_DIR" \
	>"$E2E_DIR/server.out" 2>"$E2E_DIR/server.log" &
srv=$!
for _ in $(seq 100); do [ -f "$E2E_DIR/key" ] && break; sleep 0.1; done
[ -f "$E2E_DIR/key" ] || fail "the atomic server did not start: $(cat "$E2E_DIR/server.log")"
# nobody's 2 listeners stay while A's client connects (on the old daemon they queued
# behind the server's, for its next connection).
e2e_as_nobody "$LT" "$E2E_DIR/b.ctl" $SERVICE 2 3 >"$E2E_DIR/nobody.out" 2>&1 &
thief=$!
ip netns exec "$NS_B" "$LT" "$E2E_DIR/b.ctl" $SERVICE 1 0 >"$E2E_DIR/root2.out" 2>&1 ||
	fail "listen_try: $(cat "$E2E_DIR/root2.out")"
wait $thief || fail "listen_try as nobody: $(cat "$E2E_DIR/nobody.out")"
[ "$(grep -c '^listen -98 .*bound by another client' "$E2E_DIR/nobody.out")" = 2 ] &&
	grep -q '^listen -98 ' "$E2E_DIR/root2.out" ||
	fail "LISTEN on another client's service: want EADDRINUSE (-98):" \
	     "nobody: $(cat "$E2E_DIR/nobody.out"); root: $(cat "$E2E_DIR/root2.out")"
ip netns exec "$NS_A" timeout 60 "$AC" client "$E2E_DIR/a.ctl" $SERVICE "$IP_B" "$E2E_DIR" 2 100 3 10 \
	>"$E2E_DIR/client.out" 2>"$E2E_DIR/client.log" || fail "atomic client: $(cat "$E2E_DIR/client.log")"
touch "$E2E_DIR/done"
wait $srv || fail "the atomic server failed: $(cat "$E2E_DIR/server.log")"
read -r _ counter _ cswap <"$E2E_DIR/server.out"
sort -n "$E2E_DIR/client.out" | cmp -s - <(seq 0 3 597) && [ "$counter" = 600 ] && [ "$cswap" = 20 ] ||
	fail "the server's atomics: counter $counter (want 600), cswap $cswap (want 20)"
jq -e '.clients.listen_refused == 3' <<<"$(counters .)" >/dev/null ||
	fail "refused LISTENs not counted: $(counters .clients)"
e2e_wait b counters '.clients.services == 0' 10 || fail "the server went, its service stayed: $(counters .clients)"
e2e_as_nobody "$LT" "$E2E_DIR/b.ctl" $SERVICE 1 0 >"$E2E_DIR/after.out" 2>&1
grep -q '^listen 0$' "$E2E_DIR/after.out" || fail "the service is not free after its owner: $(cat "$E2E_DIR/after.out")"
ok "service ids have owners: 3 LISTENs of other clients (nobody's, root's) refused with EADDRINUSE" \
	"and counted; the owner's 200 FETCH_ADDs and 20 CAS exact; free once it went"

# ---- item 11: the admin socket split ------------------------------------------------------
e2e_as_nobody "$LT" "$E2E_DIR/b.ctl" 0x6e01 2 5 >"$E2E_DIR/own.out" 2>&1 &
own=$!
ip netns exec "$NS_B" "$LT" "$E2E_DIR/b.ctl" 0x6e02 1 5 >"$E2E_DIR/root-own.out" 2>&1 &
rootq=$!
e2e_wait b qps '[.qps[] | select(.owner == "client")] | length == 3' 10 ||
	fail "3 listening QPs expected: $(e2e_admin b qps | jq -c '[.qps[] | {qpn, owner, uid}]')"
all=$(e2e_admin b qps)
mine=$(nobody_admin '{"version":1,"cmd":"qps"}')
jq -e '[.qps[].uid] == [65534, 65534]' <<<"$mine" >/dev/null ||
	fail "nobody's qps: want its 2 QPs only: $(jq -c '[.qps[] | {qpn, owner, uid}]' <<<"$mine")"
jq -e '[.qps[] | select(.owner == "mrocd")] | length >= 1' <<<"$all" >/dev/null &&
	jq -e '[.qps[] | select(.uid == 0)] | length == 1' <<<"$all" >/dev/null ||
	fail "root's qps: want mrocd's link and root's QP too: $(jq -c '[.qps[] | {qpn, owner, uid}]' <<<"$all")"
link=$(jq '[.qps[] | select(.owner == "mrocd")][0].qpn' <<<"$all")
other=$(jq '[.qps[] | select(.uid == 0)][0].qpn' <<<"$all")
for q in "$link" "$other"; do
	r=$(nobody_admin "{\"version\":1,\"cmd\":\"qps\",\"qpn\":$q}")
	jq -e '.ok == false and (.error | startswith("no QP"))' <<<"$r" >/dev/null ||
		fail "nobody asked for QP $q (not its own): $r"
done
r=$(nobody_admin '{"version":1,"cmd":"counters"}')
jq -e '.scope == "uid" and .uid == 65534 and .clients.clients == 1 and .clients.qps == 2 and
       .engine == null and .peers == null' <<<"$r" >/dev/null ||
	fail "nobody's counters: want its own clients' only: $r"
for cmd in "config reload" "counters reset" "link show"; do
	# shellcheck disable=SC2086
	if e2e_as_nobody "$CLI" -S "$E2E_DIR/b.admin" $cmd >"$E2E_DIR/cli.out" 2>&1; then
		fail "mroc-cli $cmd as nobody succeeded: $(cat "$E2E_DIR/cli.out")"
	fi
	grep -q "^mroc-cli: permission denied: " "$E2E_DIR/cli.out" ||
		fail "mroc-cli $cmd as nobody: want \"permission denied: ...\": $(cat "$E2E_DIR/cli.out")"
done
r=$(nobody_admin '{"version":1,"cmd":"status"}')
jq -e '.ok and .scope == "uid" and .uid == 65534 and .clients == 1 and .qps == 2 and
       .peers_known == null and .links == null and .minor_faults == null' <<<"$r" >/dev/null ||
	fail "nobody's status: want its own clients' counts, not the daemon's: $r"
jq -e '.scope == null and .qps >= 4 and .peers_known >= 1' <<<"$(e2e_admin b status)" >/dev/null ||
	fail "root's status: want the daemon's totals: $(e2e_admin b status)"
e2e_as_nobody "$CLI" -S "$E2E_DIR/b.admin" status >"$E2E_DIR/cli.out" 2>&1 &&
	grep -q "uid 65534's own clients" "$E2E_DIR/cli.out" && ! grep -q '^ *peers' "$E2E_DIR/cli.out" ||
	fail "mroc-cli status as nobody: $(cat "$E2E_DIR/cli.out")"
"$CLI" -S "$E2E_DIR/b.admin" counters reset >/dev/null || fail "mroc-cli counters reset as root"
if [ -n "$ADM_GID" ]; then
	ip netns exec "$NS_B" setpriv --reuid=65534 --regid=65534 --groups="$ADM_GID" -- \
		"$CLI" -S "$E2E_DIR/b.admin" link show >"$E2E_DIR/adm.out" 2>&1 ||
		fail "a member of daemon.admin_group was refused: $(cat "$E2E_DIR/adm.out")"
	r=$(ip netns exec "$NS_B" setpriv --reuid=65534 --regid=65534 --groups="$ADM_GID" -- \
		socat -t 5 - "UNIX-CONNECT:$E2E_DIR/b.admin" <<<'{"version":1,"cmd":"qps"}')
	jq -e '[.qps[] | select(.owner == "mrocd" or .uid == 0)] | length >= 2' <<<"$r" >/dev/null ||
		fail "a member of daemon.admin_group does not see every QP: $r"
fi
wait $own $rootq
ok "admin socket: nobody sees its 2 QPs, its own counters and status, not QP $link (mrocd's) nor $other" \
	"(root's); reload, counters reset, link show: \"permission denied\"; root${ADM_GID:+ and group adm} see all"

# ---- item 12: one user's share -------------------------------------------------------------
before=$(counters .clients.share_refused)
e2e_as_nobody "$LT" "$E2E_DIR/b.ctl" 0x6e03 12 0 >"$E2E_DIR/share.out" 2>&1 ||
	fail "listen_try: $(cat "$E2E_DIR/share.out")"
[ "$(grep -c '^listen 0$' "$E2E_DIR/share.out")" = 8 ] && grep -q '^create -122 ' "$E2E_DIR/share.out" ||
	fail "uid_share_percent 50 of 16 QPs: want 8 QPs, then EDQUOT (-122): $(cat "$E2E_DIR/share.out")"
[ "$(counters .clients.share_refused)" = $((before + 1)) ] || fail "the refusal was not counted: $(counters .clients)"
ok "one user's share: nobody's 9th QP of 16 refused with EDQUOT and counted"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
