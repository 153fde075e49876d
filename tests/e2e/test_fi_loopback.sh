#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The provider with server and client on one host (fabtests' and fi_pingpong's usual way:
# runfabtests' default, two ranks of a job on one node): one mrocd on AF_XDP in host A, both
# processes on it, the client naming A's own address.  Host B runs no mrocd and does not
# forward, so nothing that leaves A's port comes back: mrocd must deliver its own traffic
# inside itself (backend.loopback_pkts), as a verbs device does.  On IPv4, then on IPv6 (mrocd
# restarted with an IPv6 ULA as its address, FI_SOCKADDR_IN6 names):
#  - fi_pingpong -p mroc, MSG (connect/accept) and RDM, 64 B .. 1 MiB, data checked;
#  - fi_suite's rdm, tagged ping-pong, RMA write/read, atomics, CM private data and zcopy
#    (rendezvous: mrocd READs from itself), server and client both in A;
#  - A's mrocd counted the looped packets and dropped none (each family's run).
# scripts/fabtests.sh -1 runs the real fabtests so.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fi_lib.sh"

PROV=$BUILD/libmroc-fi.so
SUITE=$BUILD/tests/fi/fi_suite
e2e_require
e2e_require_unsanitized fi_pingpong
command -v fi_pingpong >/dev/null || skip "needs fi_pingpong (libfabric-bin; scripts/deps.sh installs it)"
[ -f "$PROV" ] && [ -x "$SUITE" ] || skip "the provider or fi_suite not built"

e2e_setup_pair
V=$(printf '%x' $((E2E_ID % 65536)))
IP6_A=fd07:$V::1 IP6_B=fd07:$V::2
ip -n "$NS_A" addr add "$IP6_A/64" dev "$IF_A" nodad
ip -n "$NS_B" addr add "$IP6_B/64" dev "$IF_B" nodad
ip netns exec "$NS_B" sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0

# on ADDR CMD...: a program in host A on its mrocd, FI_MROC_ADDR ADDR.
on() {
	local addr=$1
	shift
	ip netns exec "$NS_A" env FI_PROVIDER_PATH="$BUILD" FI_PROVIDER=mroc \
		MROC_SOCKET="$E2E_DIR/a.ctl" FI_MROC_ADDR="$addr" "$@"
}

# pingpong ADDR PORT ARGS...: fi_pingpong's server and client in A; both must pass.
pp_on() { on "$PP_ADDR" timeout 120 fi_pingpong -p mroc "$@"; }
pingpong() {
	PP_ADDR=$1
	local port=$2
	shift 2
	pp_pair "$port" "$NS_A" pp_on pp_on "$PP_ADDR" "$@"
}

# suite ADDR TEST ARGS...: fi_suite's server and client of TEST in A; both must pass.
port=47800
suite() {
	local addr=$1 t=$2 rc src
	shift 2
	port=$((port + 1))
	on "$addr" timeout 150 "$SUITE" -P $port "$@" "$t" >"$E2E_DIR/$t.srv" 2>&1 &
	local srv=$!
	on "$addr" timeout 150 "$SUITE" -P $port "$@" "$t" "$addr" >"$E2E_DIR/$t.cli" 2>&1
	rc=$?
	wait $srv
	src=$?
	cat "$E2E_DIR/$t.srv" "$E2E_DIR/$t.cli"
	[ $rc = 0 ] && [ $src = 0 ] || fail "$t on one host ($addr): server exit $src, client exit $rc"
}

for addr in "$IP_A" "$IP6_A"; do
	v=IPv4 six=() peer=$IP_B
	[ "$addr" = "$IP_A" ] || v=IPv6 six=(-6) peer=$IP6_B
	e2e_config a af_xdp "$IF_A" "$addr" "$peer"
	sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf"
	e2e_start a "$NS_A"
	e2e_wait_ready a
	pingpong "$addr" 47790 "${six[@]}" -e msg -I 10 -c || fail "fi_pingpong -e msg on one host ($v)"
	ok "fi_pingpong -p mroc -e msg, server and client on one mrocd ($v): 64 B .. 1 MiB, data checked"
	pingpong "$addr" 47791 "${six[@]}" -e rdm -I 10 -c || fail "fi_pingpong -e rdm on one host ($v)"
	ok "fi_pingpong -p mroc -e rdm, server and client on one mrocd ($v): 64 B .. 1 MiB, data checked"
	suite "$addr" rdm -n 5
	suite "$addr" tagged_pingpong -n 10 -S 64,65536,1048576
	suite "$addr" rma_write -n 4 -w 16 -S 65536
	suite "$addr" rma_read -n 4 -w 16 -S 65536
	suite "$addr" atomic
	suite "$addr" cm_data
	suite "$addr" zcopy
	ok "fi_suite rdm, tagged_pingpong, rma_write, rma_read, atomic, cm_data, zcopy on one mrocd ($v)"
	c=$(e2e_admin a counters | jq -c '.backend | {loopback_pkts, loopback_drops}')
	jq -e '.loopback_pkts >= 1000 and .loopback_drops == 0' <<<"$c" >/dev/null ||
		fail "A's mrocd did not deliver its own traffic inside itself ($v): $c"
	ok "A's mrocd delivered its own packets itself ($v): $c"
	e2e_stop a
	[ "$E2E_RC" = 0 ] || fail "mrocd a exited with $E2E_RC"
done
echo "1 passed, 0 failed"
