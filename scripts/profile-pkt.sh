#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What one data packet costs, mroc against the bare AF_XDP pair, on the veth
# pair of scripts/bench-net.sh (native XDP, copy mode), measured in ways a
# shared machine disturbs little (issue #22): per data packet, each side's
# CPU time split into user and system (/proc), its voluntary context switches
# (sleeps) and system calls (perf stat's raw_syscalls tracepoint: no hardware
# counters needed), and where its samples fall (perf record, cpu-clock).
# The rate is printed too, with the load average: an anecdote.
# Root; needs linux-perf.
#
#   scripts/profile-pkt.sh [OUTDIR]       default /tmp/mroc-pkt
#   env: PAYLOAD (1024; "max": the largest the link MTU 3506 and the mode leave room for),
#        TESTS ("write_bw --mode metaroce", ';' between tests), SECS (4), TOP (12),
#        SEC_MODE (mrocd's default), BARE (1: the bare pair too), BUSY_POLL_US (mrocd's default)
#   BUILD=... picks the binaries (another build for a before/after pair).
set -u
OUT=${1:-/tmp/mroc-pkt}
PAYLOAD=${PAYLOAD:-1024}
SECS=${SECS:-4}
TOP=${TOP:-12}
SEC_MODE=${SEC_MODE:-}
BARE=${BARE:-1}
. "$(dirname "$0")/../tests/e2e/lib.sh"
e2e_require
command -v perf >/dev/null || skip "needs perf (apt-get install linux-perf)"
[ -x "$BUILD/xsk-baseline" ] || skip "$BUILD/xsk-baseline not built"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
IFS=';' read -r -a TESTS <<<"${TESTS:-write_bw --mode metaroce}"
e2e_setup_pair
MAC_B=$(ip -n "$NS_B" -j link show "$IF_B" | jq -r '.[0].address')
MTU=1500 FS=2048
[ "$PAYLOAD" = max ] || [ "$PAYLOAD" -gt 1024 ] && MTU=3506 FS=4096
[ "$PAYLOAD" = max ] && PAYLOAD=$(e2e_max_payload $MTU "${SEC_MODE:-token}")
ip -n "$NS_A" link set "$IF_A" mtu $MTU
ip -n "$NS_B" link set "$IF_B" mtu $MTU

# stat PID: "utime_ns stime_ns voluntary_ctxt_switches" of the process (all threads).
pstat() {
	local t v=0 s
	[ -e "/proc/$1/stat" ] || { echo "0 0 0"; return; }
	t=$(awk -v t="$(getconf CLK_TCK)" '{ printf "%.0f %.0f", $14 * 1e9 / t, $15 * 1e9 / t }' "/proc/$1/stat")
	for s in /proc/"$1"/task/*/status; do
		v=$((v + $(awk '/^voluntary_ctxt_switches/ { print $2 }' "$s" 2>/dev/null || echo 0)))
	done
	echo "$t $v"
}
# child PID: the process doing the work under PID (timeout's child), or PID itself.
child() { local c; c=$(pgrep -P "$1" | head -1); echo "${c:-$1}"; }
after_mroc() { a1=$(tx_data "a$tag") b1=$(tx_data "b$tag"); }
tx_data() { e2e_admin "$1" counters | jq '.engine.tx_data'; }

# side NAME PID PKTS: one row, values per data packet, from the files SECS apart.
side() {
	read -r u0 s0 v0 <"$E2E_DIR/$1.st0"
	read -r u1 s1 v1 <"$E2E_DIR/$1.st1"
	awk -v n="$1" -v p="$3" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v v=$((v1 - v0)) \
		-v c="$(awk -F, '/raw_syscalls/ { print $1 }' "$E2E_DIR/$1.sys")" 'BEGIN { p = p > 0 ? p : 1
		printf "| %s | %.0f | %.0f | %.0f | %.4f | %.4f |\n", n, (u + s) / p, u / p, s / p, v / p, c / p }'
}

# measure NAME:PID...: perf stat + record on each PID for SECS, /proc just before and after;
# AFTER (a command, may be empty) runs right after the SECS, before the perf files are written.
measure() {
	local n pid
	local -a waits=()
	for n in "$@"; do
		pid=${n#*:}
		pstat "$pid" >"$E2E_DIR/${n%%:*}.st0"
		perf stat -x, -e raw_syscalls:sys_enter -o "$E2E_DIR/${n%%:*}.sys" -p "$pid" -- sleep "$SECS" &
		waits+=($!)
		perf record -q -F 999 -g -o "$OUT/${n%%:*}.data" -p "$pid" -- sleep "$SECS" >/dev/null 2>&1 &
		waits+=($!)
	done
	sleep "$SECS"
	for n in "$@"; do pstat "${n#*:}" >"$E2E_DIR/${n%%:*}.st1"; done
	$AFTER
	wait "${waits[@]}"
}

report_top() { # NAME
	echo "-- $1: top symbols (% of its samples; [k] kernel)"
	perf report -i "$OUT/$1.data" --no-children --sort symbol --stdio 2>/dev/null |
		grep -E '^ +[0-9]' | head -"$TOP" | awk '{ printf "    %s\n", $0 }'
}

start_pair() {
	local n
	for n in a b; do
		if [ $n = a ]; then e2e_config a$1 af_xdp "$IF_A" "$IP_A" "$IP_B"
		else e2e_config b$1 af_xdp "$IF_B" "$IP_B" "$IP_A"; fi
		sed -i "/busy_poll_us/d; s/log_level = \"debug\"/log_level = \"warning\"/; s/umem_frames = 4096;/umem_frames = 8192; frame_size = $FS; mtu = $PAYLOAD;/; s/keepalive_ms = 100;/keepalive_ms = 1000;/; s/rto_init_us = 20000;/rto_init_us = 20000; rto_min_us = 5000;/" "$E2E_DIR/$n$1.conf"
		[ -n "${BUSY_POLL_US:-}" ] && sed -i "s/^daemon = {/daemon = {\n\tbusy_poll_us = $BUSY_POLL_US;/" "$E2E_DIR/$n$1.conf"
		[ -n "$SEC_MODE" ] && sed -i "s/^transport = {/security = { mode = \"$SEC_MODE\"; };\ntransport = {/" "$E2E_DIR/$n$1.conf"
	done
	e2e_start a$1 "$NS_A"
	e2e_start b$1 "$NS_B"
	e2e_wait_ready a$1
	e2e_wait_ready b$1
}

echo "per data packet, payload $PAYLOAD, link MTU $MTU, $FS-byte frames, security ${SEC_MODE:-default}, busy_poll_us ${BUSY_POLL_US:-default}; $SECS s each"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| process | CPU ns | user ns | system ns | sleeps | system calls |"
echo "|---|---|---|---|---|---|"
for t in "${TESTS[@]}"; do
	tag=$(echo "$t" | tr -dc 'a-z0-9' | head -c 12)
	start_pair "$tag"
	# shellcheck disable=SC2086
	ip netns exec "$NS_B" timeout 120 "$BUILD/mroc-perf" $t -S "$E2E_DIR/b$tag.ctl" --sleep -s 1M -D $((SECS + 20)) -j >"$E2E_DIR/srv.out" 2>&1 &
	srv=$!
	sleep 0.5
	# shellcheck disable=SC2086
	ip netns exec "$NS_A" timeout 120 "$BUILD/mroc-perf" $t -S "$E2E_DIR/a$tag.ctl" --sleep -s 1M -D $((SECS + 20)) -j "$IP_B" >"$E2E_DIR/cli.out" 2>&1 &
	cli=$!
	sleep 2
	pa=$(e2e_pid "a$tag") pb=$(e2e_pid "b$tag")
	pc=$(child "$cli") ps=$(child "$srv")
	a0=$(tx_data "a$tag") b0=$(tx_data "b$tag")
	AFTER=after_mroc measure "mrocd-a:$pa" "mrocd-b:$pb" "client-a:$pc" "client-b:$ps"
	kill "$cli" "$srv" 2>/dev/null
	wait "$cli" "$srv"
	e2e_stop "a$tag"
	e2e_stop "b$tag"
	pk=$(( (a1 - a0) + (b1 - b0) ))
	echo "| **mroc $t**: $pk data packets, $(awk -v p="$pk" -v s="$SECS" 'BEGIN { printf "%.3f", p / s / 1e6 }') Mpps, load $(cut -d' ' -f1 /proc/loadavg) |||||"
	for n in mrocd-a mrocd-b client-a client-b; do side "$n" "" "$pk"; done
	for n in mrocd-a mrocd-b; do cp "$OUT/$n.data" "$OUT/$n-$tag.data"; done
	TOPS+=("$tag")
done
if [ "$BARE" = 1 ]; then
	ip netns exec "$NS_B" "$BUILD/xsk-baseline" rx -i "$IF_B" -f "$FS" -D $((SECS + 8)) \
		--busy-poll-us "${BUSY_POLL_US:-50}" --credit "$E2E_DIR/credit" >"$E2E_DIR/bare.json" 2>"$E2E_DIR/bare-rx.err" &
	brx=$!
	sleep 0.5
	ip netns exec "$NS_A" "$BUILD/xsk-baseline" tx -i "$IF_A" -f "$FS" -s "$PAYLOAD" -D $((SECS + 9)) \
		--busy-poll-us "${BUSY_POLL_US:-50}" --credit "$E2E_DIR/credit" --src "$IP_A" --dst "$IP_B" --dmac "$MAC_B" >"$E2E_DIR/bare-tx.json" 2>&1 &
	btx=$!
	sleep 1.5
	AFTER='' measure "bare-tx:$(child "$btx")" "bare-rx:$(child "$brx")"
	wait "$btx" "$brx"
	pk=$(jq -r '.pkts / .secs' "$E2E_DIR/bare.json")
	pk=$(awk -v r="$pk" -v s="$SECS" 'BEGIN { printf "%.0f", r * s }')
	echo "| **bare AF_XDP pair** (rate over its whole run): $pk packets in $SECS s, $(awk -v p="$pk" -v s="$SECS" 'BEGIN { printf "%.3f", p / s / 1e6 }') Mpps, load $(cut -d' ' -f1 /proc/loadavg) |||||"
	side bare-tx "" "$pk"
	side bare-rx "" "$pk"
fi
echo
for tag in "${TOPS[@]}"; do
	cp "$OUT/mrocd-a-$tag.data" "$OUT/mrocd-a.data"; cp "$OUT/mrocd-b-$tag.data" "$OUT/mrocd-b.data"
	echo "== $tag"
	report_top mrocd-a
	report_top mrocd-b
done
[ "$BARE" = 1 ] && { report_top bare-tx; report_top bare-rx; }
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
