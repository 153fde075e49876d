#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# make demo: two hosts in network namespaces, each with a port per plane of a
# 4-plane fabric (scripts/fabric --ports), an mrocd on each with an AF_XDP
# socket per port, mroc-perf write_bw moving verified data between them while
# plane 2 drops some packets, then mroc-cli path show on both ends so the
# per-path RTT, windows and loss are visible, and the retransmissions per
# port.  A QP's paths start on every port (a packet leaves by port sport mod
# ports, and the engine spreads its paths' source ports over the ports), so
# the lossy plane always carries paths.  Everything it made is removed at the
# end, also on Ctrl-C or failure.  Root; run from the repository top.
set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
PLANES=${PLANES:-4}
LOSS=${LOSS:-1}		# percent random loss on plane 2, so retransmissions show
PATHS=${PATHS:-8}		# paths per QP: two per port
NAME=${DEMO_NAME:-demo}	# the fabric's name (tests/e2e/test_demo.sh runs its own)
DIR=$(mktemp -d /tmp/mroc-demo.XXXXXX)
PIDS=()

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
	done
	"$TOP/scripts/fabric" down --name "$NAME" >/dev/null 2>&1
	rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || die "run as root (network namespaces, XDP, AF_XDP)"
for b in mrocd mroc-perf mroc-cli; do
	[ -x "$BUILD/$b" ] || die "$BUILD/$b is missing: run make"
done

say "fabric: 2 hosts with a port per plane, $PLANES planes"
"$TOP/scripts/fabric" down --name "$NAME" >/dev/null 2>&1
"$TOP/scripts/fabric" up --name "$NAME" --ports "$PLANES" || die "fabric up failed"
eval "$("$TOP/scripts/fabric" env --name "$NAME" | tr ' ' '\n')"
if [ "$PLANES" -ge 2 ] && [ "$LOSS" != 0 ]; then
	"$TOP/scripts/fabric" set 2 --name "$NAME" loss "$LOSS"
fi

conf() { # name ports addr peer
	local ifs
	ifs=$(sed 's/,/", "/g' <<<"$2")
	cat >"$DIR/$1.conf" <<CONF
daemon = { log_level = "info"; admin_socket = "$DIR/$1.admin"; control_socket = "$DIR/$1.sock"; };
network = { backend = "af_xdp"; interfaces = ( "$ifs" ); address = "$3"; peers = [ "$4" ];
	    xdp_mode = "native"; ring_size = 2048; mtu = 1024; };
transport = { paths = $PATHS; rto_min_us = 1000; };
CONF
}
conf a "$FABRIC_PORTS_0" "$FABRIC_IP_0" "$FABRIC_IP_1"
conf b "$FABRIC_PORTS_1" "$FABRIC_IP_1" "$FABRIC_IP_0"

say "mrocd on both hosts (AF_XDP, native XDP)"
ip netns exec "$FABRIC_NS_0" "$BUILD/mrocd" -c "$DIR/a.conf" >"$DIR/a.log" 2>&1 &
PIDS+=($!)
ip netns exec "$FABRIC_NS_1" "$BUILD/mrocd" -c "$DIR/b.conf" >"$DIR/b.log" 2>&1 &
PIDS+=($!)
for n in a b; do
	for _ in $(seq 100); do [ -S "$DIR/$n.admin" ] && break; sleep 0.1; done
	[ -S "$DIR/$n.admin" ] || { cat "$DIR/$n.log"; die "mrocd $n did not start"; }
done
"$BUILD/mroc-cli" -S "$DIR/a.admin" status

say "mroc-perf write_bw --verify for ${DURATION:=8} s: $FABRIC_NS_0 -> $FABRIC_NS_1 over mroc"
# mroc-perf's own TCP side channel goes over the management network, the data over mroc.
ip netns exec "$FABRIC_NS_1" "$BUILD/mroc-perf" write_bw --mrocd-socket "$DIR/b.sock" --verify --sleep -s 65536 \
	--mroc-addr "$FABRIC_IP_1" -D "$DURATION" >"$DIR/server.txt" 2>&1 &
PIDS+=($!)
sleep 0.5
ip netns exec "$FABRIC_NS_0" "$BUILD/mroc-perf" write_bw --mrocd-socket "$DIR/a.sock" --verify --sleep -s 65536 \
	-D "$DURATION" "$FABRIC_MGMT_1" >"$DIR/client.txt" 2>&1 &
client=$!
sleep $((DURATION / 2))
say "mroc-cli path show on host A (sender), mid-transfer: the port each path leaves by, RTT, window, retransmissions"
"$BUILD/mroc-cli" -S "$DIR/a.admin" path show -d
say "loss recovered on host A's data QP (plane 2 drops ${LOSS}%; each port started with $((PATHS / PLANES)) paths, paths on a worse port move)"
# The QP that sent the most is mroc-perf's; the others are the daemons' control links.
"$BUILD/mroc-cli" -S "$DIR/a.admin" -j path show | jq -r '
	[.. | objects | select(has("path_id"))] | group_by(.qpn) | max_by(map(.sent) | add) |
	(group_by(.port) | .[] | "  \(.[0].port) now: \(length) paths, sent \(map(.sent) | add), retransmitted \(map(.retx) | add), declared lost \(map(.lost) | add)"),
	"  all paths: retransmitted \(map(.retx) | add), declared lost \(map(.lost) | add); \(map(select(.repaths > 0)) | length) of \(length) moved to another source port (why: \(map(select(.repaths > 0) | .moved) | unique | join(", ")))"'
say "mroc-cli path show on host B (receiver)"
"$BUILD/mroc-cli" -S "$DIR/b.admin" path show
wait "$client" || { cat "$DIR/client.txt" "$DIR/server.txt" "$DIR/a.log" "$DIR/b.log"; die "mroc-perf failed"; }
say "mroc-perf result (every byte verified at the receiver)"
cat "$DIR/client.txt"
say "the fabric's planes (dropped: what plane 2 lost, and the sender repaired)"
"$TOP/scripts/fabric" show --name "$NAME"
say "done: cleaning up"
