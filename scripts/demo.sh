#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# make demo: two hosts in network namespaces joined by a 4-plane ECMP fabric
# (scripts/fabric), an mrocd on each with AF_XDP, mroc-perf write_bw moving
# verified data between them, then mroc-cli path show on both ends so the
# per-path RTT, windows and loss are visible.  Everything it made is removed
# at the end, also on Ctrl-C or failure.  Root; run from the repository top.
set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
PLANES=${PLANES:-4}
LOSS=${LOSS:-0.5}		# percent random loss on plane 2, so retransmissions show
NAME=demo
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

say "fabric: 2 hosts, $PLANES planes, ECMP on the UDP source port"
"$TOP/scripts/fabric" down --name "$NAME" >/dev/null 2>&1
"$TOP/scripts/fabric" up --name "$NAME" --planes "$PLANES" || die "fabric up failed"
eval "$("$TOP/scripts/fabric" env --name "$NAME" | tr ' ' '\n')"
if [ "$PLANES" -ge 2 ] && [ "$LOSS" != 0 ]; then
	"$TOP/scripts/fabric" set 2 --name "$NAME" loss "$LOSS"
fi

conf() { # name iface addr peer
	cat >"$DIR/$1.conf" <<CONF
daemon = { log_level = "info"; admin_socket = "$DIR/$1.admin"; control_socket = "$DIR/$1.sock"; };
network = { backend = "af_xdp"; interfaces = ( "$2" ); address = "$3"; peers = [ "$4" ];
	    xdp_mode = "native"; umem_frames = 8192; ring_size = 2048; mtu = 1024; };
transport = { paths = $PLANES; rto_min_us = 1000; };
CONF
}
conf a "$FABRIC_IF_0" "$FABRIC_IP_0" "$FABRIC_IP_1"
conf b "$FABRIC_IF_1" "$FABRIC_IP_1" "$FABRIC_IP_0"

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
say "mroc-cli path show on host A (sender), mid-transfer: per-path RTT, window, retransmissions"
"$BUILD/mroc-cli" -S "$DIR/a.admin" path show
say "mroc-cli path show on host B (receiver)"
"$BUILD/mroc-cli" -S "$DIR/b.admin" path show
wait "$client" || { cat "$DIR/client.txt" "$DIR/server.txt" "$DIR/a.log" "$DIR/b.log"; die "mroc-perf failed"; }
say "mroc-perf result (every byte verified at the receiver)"
cat "$DIR/client.txt"
say "the fabric's planes (plane 2 drops ${LOSS}%)"
"$TOP/scripts/fabric" show --name "$NAME"
say "done: cleaning up"
