#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The real fabtests against the mroc provider, between two mrocd on AF_XDP in network
# namespaces (tests/e2e/lib.sh's pair): the check of issue #26 deliverable 4 that our own
# tests/fi/fi_suite stands in for where fabtests is not installed (Debian 12 does not package
# it).  Build fabtests from libfabric's source at the tag of the installed libfabric
# (1.17.0 on Debian 12: `./autogen.sh && ./configure --with-libfabric=/usr && make install`
# in its fabtests/), then, as root:
#
#   FABTESTS=/path/to/fabtests/bin scripts/fabtests.sh [-6] [-1] [LIST]
#
# -6: an IPv6-only pair (as tests/e2e/test_fi_ipv6.sh builds it: the IPv4 addresses removed,
# IPv6 ULAs and a default IPv6 route, no IPv4 route); the hosts' FI_MROC_ADDR, the list's
# $IP_A / $IP_B and the nodes named are IPv6, and the client-server tests take
# `-F FI_SOCKADDR_IN6` (fabtests' benchmarks put it in their hints; the others' format follows
# their IPv6 node).
# -1: one host, as runfabtests runs by default: server and client both in host A on its one
# mrocd, the client naming A's own address; host B runs no mrocd and does not forward, so
# nothing the wire carries comes back (mrocd must deliver its own traffic inside itself).
# LIST: a file of lines "u NAME ARGS" (one process, in host A), "c NAME ARGS" (server in
# host B, client in A naming B, as runfabtests' client-server tests run; with -1 both in A)
# or "m N NAME ARGS" (N clients at once); "u4 NAME ARGS": a "u" test that builds IPv4 names
# itself (skipped with -6); '#' comments.  Without one, the RDM and MSG tests of fabtests' quick
# list that the provider supports (libfabric/README.md, "Not supported (fabtests' terms)"),
# and its counter tests.
# Prints a PASS/FAIL line per test; each test's output goes to OUT (a temporary directory,
# kept and named at the end).  Exit status 1 if any failed.  BUILD (build), TMO (60: seconds a
# test may take).  Session 31 found five provider bugs so (libfabric/README.md).
set -u
. "$(dirname "$0")/../tests/e2e/lib.sh"
V6=0 ONE=0
while getopts 61 o; do
	case $o in
	6) V6=1 ;;
	1) ONE=1 ;;
	*) echo "usage: fabtests.sh [-6] [-1] [LIST]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
FT=${FABTESTS:?set FABTESTS to the directory of the fabtests binaries}
TMO=${TMO:-60}
[ -x "$FT/fi_rdm" ] || { echo "fabtests.sh: no fi_rdm in $FT" >&2; exit 2; }
[ -f "$BUILD/libmroc-fi.so" ] || { echo "fabtests.sh: $BUILD/libmroc-fi.so not built" >&2; exit 2; }
OUT=$(mktemp -d /tmp/mroc-fabtests.XXXXXX)

default_list() {
	cat <<'EOF'
u fi_getinfo_test -s $IP_A $IP_B
# fi_av_test makes its names with getaddrinfo(AF_INET) into sockaddr_in (1.17: any provider)
u4 fi_av_test -g $IP_B -n 1 -s $IP_A -e rdm
u fi_dom_test -n 2
u fi_eq_test
u fi_cq_test
u fi_mr_test
c fi_rdm
c fi_rdm_pingpong -I 10 -v -S 65536
c fi_rdm_tagged_pingpong -I 10 -v -S 1048576
c fi_rdm_tagged_bw -I 20 -W 16 -v -S 65536
c fi_rma_bw -e rdm -o write -I 10 -v -S 65536
c fi_rma_bw -e rdm -o read -I 10 -v -S 65536
c fi_rma_bw -e rdm -o writedata -I 10 -v -S 65536
c fi_rdm_atomic -I 5 -o all -S 64
c fi_multi_recv -e rdm -I 5 -v
c fi_unexpected_msg -e rdm -I 10
c fi_recv_cancel -e rdm -V
c fi_rdm_multi_client -C 10 -I 5
c fi_rdm_tagged_peek
c fi_av_xfer -e rdm
c fi_cq_data -e rdm
c fi_multi_ep -e rdm -v
c fi_msg
c fi_msg_pingpong -I 10 -v -S 65536
c fi_msg_bw -I 5 -v
c fi_msg_epoll
c fi_rma_bw -e msg -o write -I 10 -v -S 1048576
c fi_multi_recv -e msg -I 5 -v
c fi_cq_data -e msg
c fi_multi_ep -e msg -v
c fi_msg_inject -A inject -v
c fi_cm_data
c fi_bw -e rdm -v -T 1
# counters (fi_cntr): fabtests' "-t counter" completes sends and receives by counters
u fi_cntr_test
c fi_rdm_cntr_pingpong -I 5 -v
c fi_rdm_rma_event
c fi_rdm_pingpong -I 10 -v -S 65536 -t counter
c fi_rdm_pingpong -I 10 -v -S 65536 -t counter -c fd
c fi_rdm_tagged_bw -I 20 -W 16 -v -S 65536 -t counter
# fabtests' default sizes: buffers of up to 1 GiB
c fi_rdm_atomic -I 5
c fi_rma_bw -e msg -o write -I 5 -v
EOF
}

e2e_require
e2e_setup_pair
FMT=()
if [ $V6 = 1 ]; then
	e2e_pair_ipv6_only
	FMT=(-F FI_SOCKADDR_IN6)
fi
e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
if [ $ONE = 1 ]; then
	# B only receives: no mrocd, no forwarding, so A's packets to itself that leave by the
	# wire are lost there.
	ip netns exec "$NS_B" sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
	e2e_start a "$NS_A"
	e2e_wait_ready a
	SRV_NS=$NS_A SRV=a SRV_IP=$IP_A
else
	e2e_start_linked
	SRV_NS=$NS_B SRV=b SRV_IP=$IP_B
fi
echo "fabtests: $FT; A=$NS_A/$IP_A B=$NS_B/$IP_B; server in $SRV; output in $OUT"

# fx NS NAME IP BIN ARGS...: a fabtests binary in a namespace, on that host's mrocd.
fx() {
	local ns=$1 name=$2 ip=$3 bin=$4
	shift 4
	ip netns exec "$ns" env FI_PROVIDER_PATH="$BUILD" FI_PROVIDER=mroc \
		MROC_SOCKET="$E2E_DIR/$name.ctl" FI_MROC_ADDR="$ip" \
		timeout -k 5 "$TMO" "$FT/$bin" -p mroc "$@"
}
failed=0 n=0 skipped=0
slug() { echo "$*" | tr -c 'A-Za-z0-9_\n-' '_' | cut -c1-80; }
record() {	# RESULT TEST SERVER_STATUS CLIENT_STATUS
	printf '%-5s %-60s server %s client %s\n' "$@"
	[ "$1" = PASS ] || failed=$((failed + 1))
}

one() {		# one process in host A
	local s rc
	s=$(slug "$*")
	fx "$NS_A" a "$IP_A" "$@" >"$OUT/$s.out" 2>&1
	rc=$?
	record "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$*" - $rc
}

pair() {	# N BIN ARGS...: a server in B (with -1 in A) and N clients in A
	local k=$1 bin=$2 s port sp rc=0 src i pids=()
	shift 2
	s=$(slug "$bin $*")
	n=$((n + 1))
	port=$((47700 + n))
	fx "$SRV_NS" $SRV "$SRV_IP" "$bin" -B $port -s "$SRV_IP" "${FMT[@]}" "$@" >"$OUT/$s.server" 2>&1 &
	sp=$!
	sleep 1
	for ((i = 1; i <= k; i++)); do
		fx "$NS_A" a "$IP_A" "$bin" -P $port -s "$IP_A" "${FMT[@]}" "$@" "$SRV_IP" \
			>"$OUT/$s.client$i" 2>&1 &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || rc=$?; done
	# a server whose client failed may wait for it for ever
	if [ $rc != 0 ] && kill -0 $sp 2>/dev/null; then sleep 2; kill -TERM $sp 2>/dev/null; fi
	wait $sp
	src=$?
	record "$([ $rc = 0 ] && [ $src = 0 ] && echo PASS || echo FAIL)" \
		"$([ "$k" -gt 1 ] && echo "[x$k] ")$bin $*" $src $rc
}

while read -r kind rest; do
	case $kind in ''|'#'*) continue ;; esac
	kill -0 "$PID_a" 2>/dev/null && { [ $ONE = 1 ] || kill -0 "$PID_b" 2>/dev/null; } ||
		{ e2e_dump_logs; fail "a daemon died"; }
	eval "set -- $rest"	# the list's $IP_A / $IP_B
	case $kind in
	u) one "$@" ;;
	u4) if [ $V6 = 1 ]; then
		printf 'SKIP  %-60s (IPv4 names only)\n' "$*"
		skipped=$((skipped + 1))
	else
		one "$@"
	fi ;;
	c) pair 1 "$@" ;;
	m) pair "$@" ;;
	*) echo "fabtests.sh: unknown line kind $kind" >&2 ;;
	esac
done < <(if [ -n "${1:-}" ]; then cat "$1"; else default_list; fi)
# With -1, what A's mrocd delivered to itself (an mrocd without in-daemon loopback: null).
[ $ONE = 1 ] && echo "fabtests: A's mrocd: $(e2e_admin a counters |
	jq -c '.backend | {loopback_pkts, loopback_drops}' 2>/dev/null)"
echo "fabtests: $failed failed, $skipped skipped; output in $OUT"
[ "$failed" = 0 ]
