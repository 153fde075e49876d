#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where the data path's cycles go: two mrocd (AF_XDP over veth, MTU 1024),
# mroc-perf write_bw in completion-channel mode, perf record on both daemons
# for 3 s, then the top symbols and the kernel/user split of each.  Root;
# needs linux-perf.  Usage: scripts/profile-datapath.sh [OUTDIR]
set -u
OUT=${1:-/tmp/mroc-profile}
. "$(dirname "$0")/../tests/e2e/lib.sh"
e2e_require
command -v perf >/dev/null || skip "needs perf (apt-get install linux-perf)"
mkdir -p "$OUT"
e2e_setup_pair
e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "warning"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b
ip netns exec "$NS_B" timeout 30 "$BUILD/mroc-perf" write_bw -S "$E2E_DIR/b.ctl" --sleep -D 6 >/dev/null 2>&1 &
sleep 0.3
ip netns exec "$NS_A" timeout 30 "$BUILD/mroc-perf" write_bw -S "$E2E_DIR/a.ctl" --sleep -D 6 "$IP_B" >"$OUT/perf.txt" 2>&1 &
sleep 1.5
perf record -F 2000 -g -o "$OUT/sender.data" -p "$PID_a" -- sleep 3 >/dev/null 2>&1 &
perf record -F 2000 -g -o "$OUT/receiver.data" -p "$PID_b" -- sleep 3 >/dev/null 2>&1
wait
for side in sender receiver; do
	echo "== $side mrocd: by binary"
	perf report -i "$OUT/$side.data" --no-children --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -4
	echo "== $side mrocd: top symbols"
	perf report -i "$OUT/$side.data" --no-children --sort symbol --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -12
done
grep -A1 '#bytes' "$OUT/perf.txt"
