#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What each security.mode costs (issue 13, docs/PROTOCOL.md 1.2): two mrocd on a veth pair
# (AF_XDP, native XDP, 3328 payload bytes per packet in every mode), for each mode none, token and aead: mroc-perf
# write_bw (SIZE_BW bytes, SECS s, default polling) and write_lat (8 bytes, SECS s), REPS
# rounds with the modes interleaved in each, each round starting at the next mode (none
# token aead, token aead none, ...), so that drift of a shared machine spreads over all three.  Both daemons restart for every run.
#
# The same machine's CPU cost per packet, which a loaded machine disturbs far less than
# throughput: the engine's per data packet without and with the token tag (mroc-sim
# engine --sec), and AES-GCM seal + open per packet (sec-bench).
#
# Writes docs/perf/sec.csv (every run) and prints markdown tables of min/median/max per
# mode, the median's cost against "none", the CPU figures and the load average before
# and after, on stdout; progress on stderr.  Root; part of make bench; about 4 minutes
# with the defaults.
#
#   scripts/bench-sec.sh
#
# Environment: BUILD (build), OUT (docs/perf), SECS (5), REPS (3), SIZE_BW (65536),
# MODES ("none token aead").
#
# Everything started here is stopped by pid and every namespace removed on exit.
set -u

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/tests/e2e/lib.sh"
OUT=${OUT:-$TOP/docs/perf}
SECS=${SECS:-5}
REPS=${REPS:-3}
SIZE_BW=${SIZE_BW:-65536}
MODES=${MODES:-none token aead}
PERF=$BUILD/mroc-perf
LINK_MTU=3506		# what native XDP on veth takes (about a page)
MROC_MTU=3328		# fits LINK_MTU in every mode: + 60 + aead 36 + ICRC 4 + IPv6/UDP 48 <= 3506
PORT=18600

log() { echo "bench-sec: $*" >&2; }

e2e_require
for b in "$PERF" "$BUILD/mroc-sim" "$BUILD/sec-bench"; do [ -x "$b" ] || skip "$b not built"; done
e2e_setup_pair
mkdir -p "$OUT"
ip -n "$NS_A" link set "$IF_A" mtu $LINK_MTU
ip -n "$NS_B" link set "$IF_B" mtu $LINK_MTU
KEYS=$E2E_DIR/keys
echo "1 $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$KEYS"
chmod 0600 "$KEYS"

# up MODE: both daemons in MODE, links up.
up() {
	local n
	e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
	e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
	for n in a b; do
		sed -i 's/log_level = "debug"/log_level = "warning"/; s/busy_poll_us = 20;/busy_poll_us = 50;/
			s/umem_frames = 4096;/umem_frames = 8192; frame_size = 4096; mtu = '$MROC_MTU';/
			s/keepalive_ms = 100;/keepalive_ms = 1000;/' "$E2E_DIR/$n.conf"
		echo "security = { mode = \"$1\"; key_file = \"$KEYS\"; };" >>"$E2E_DIR/$n.conf"
		: >"$E2E_DIR/$n.notify.log"
	done
	e2e_start a "$NS_A"
	e2e_start b "$NS_B"
	e2e_wait_ready a
	e2e_wait_ready b
	e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
		fail "$1: no control connection"
}

down() {
	e2e_stop a
	e2e_stop b
}

# perf TEST ARGS...: one run, server in B, client in A; the client's JSON result in R.
perf() {
	local t=$1 srv
	shift
	PORT=$((PORT + 1))
	ip netns exec "$NS_B" timeout $((SECS + 30)) "$PERF" "$t" -S "$E2E_DIR/b.ctl" -p $PORT -j \
		"$@" >"$E2E_DIR/srv.json" 2>"$E2E_DIR/srv.err" &
	srv=$!
	sleep 0.3
	ip netns exec "$NS_A" timeout $((SECS + 30)) "$PERF" "$t" -S "$E2E_DIR/a.ctl" -p $PORT -j \
		"$@" "$IP_B" >"$E2E_DIR/cli.json" 2>"$E2E_DIR/cli.err"
	wait $srv
	R=$(jq -c '.results[0]' "$E2E_DIR/cli.json" 2>/dev/null)
	[ -n "$R" ] && [ "$R" != null ] || { log "$t failed: $(head -c 300 "$E2E_DIR/cli.err")"; R=; }
}

# cpu_ns: CPU time (user + system) both daemons used so far, ns.
cpu_ns() {
	local n t=0
	for n in a b; do
		t=$((t + $(awk -v t="$(getconf CLK_TCK)" '{ printf "%.0f\n", ($14 + $15) * 1e9 / t }' \
			"/proc/$(e2e_pid $n)/stat")))
	done
	echo $t
}

# tx_data: data packets both daemons sent so far.
tx_data() { echo $(( $(e2e_admin a counters | jq .engine.tx_data) + $(e2e_admin b counters | jq .engine.tx_data) )); }

CSV=$OUT/sec.csv
echo "mode,rep,write_bw_gbps,cpu_ns_per_data_pkt,write_lat_p50_us,write_lat_p99_us,aead_sealed_a,rx_bad_tag_b" >"$CSV"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
read -ra ALL <<<"$MODES"
for rep in $(seq "$REPS"); do
	# Each round starts at another mode: no mode always runs first (or after aead).
	for ((i = 0; i < ${#ALL[@]}; i++)); do
		mode=${ALL[$(((i + rep - 1) % ${#ALL[@]}))]}
		up "$mode"
		c0=$(cpu_ns) d0=$(tx_data)
		perf write_bw -s "$SIZE_BW" -D "$SECS"
		bw=$(jq -r '.bw_avg_gbps // empty' <<<"${R:-null}")
		c1=$(cpu_ns) d1=$(tx_data)
		cpu=$(( (c1 - c0) / ((d1 - d0) > 0 ? (d1 - d0) : 1) ))
		perf write_lat -s 8 -D "$SECS"
		p50=$(jq -r '.t_typical_us // empty' <<<"${R:-null}")
		p99=$(jq -r '.p99_us // empty' <<<"${R:-null}")
		sealed=$(e2e_admin a counters | jq '.worker.aead_tx_sealed')
		badtag=$(e2e_admin b counters | jq '.engine.rx_bad_tag')
		down
		log "rep $rep $mode: write_bw ${bw:--} Gbit/s, $cpu ns CPU per data packet," \
			"write_lat p50 ${p50:--} us p99 ${p99:--} us"
		echo "$mode,$rep,$bw,$cpu,$p50,$p99,$sealed,$badtag" >>"$CSV"
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# min/median/max of column C over a mode's runs (failed runs left out).
stat3() {
	awk -F, -v m="$1" -v c="$2" 'NR > 1 && $1 == m && $c != "" { print $c + 0 }' "$CSV" | sort -g |
		awk '{ v[n++] = $1 } END { if (!n) print "- - -"; else print v[0], v[int((n - 1) / 2)], v[n - 1] }'
}
# pct A B: A against B in percent.
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a != "-") printf "%+.1f%%", 100 * (a - b) / b; else print "-" }'; }
echo "| mode | write_bw Gbit/s min / median / max | vs none | daemons' CPU ns per data packet min / median / max | vs none | write_lat p50 us min / median / max | vs none |"
echo "|---|---|---|---|---|---|---|"
read -r _ bw0 _ <<<"$(stat3 none 3)"
read -r _ cpu0 _ <<<"$(stat3 none 4)"
read -r _ lat0 _ <<<"$(stat3 none 5)"
for mode in $MODES; do
	read -r blo bmed bhi <<<"$(stat3 "$mode" 3)"
	read -r clo cmed chi <<<"$(stat3 "$mode" 4)"
	read -r llo lmed lhi <<<"$(stat3 "$mode" 5)"
	echo "| $mode | $blo / $bmed / $bhi | $(pct "$bmed" "$bw0") | $clo / $cmed / $chi |" \
		"$(pct "$cmed" "$cpu0") | $llo / $lmed / $lhi | $(pct "$lmed" "$lat0") |"
done
echo
echo "load average (1, 5, 15 min): before $LOAD_BEFORE, after $LOAD_AFTER; $(nproc) CPUs"
echo
echo '```'
for m in none token; do
	"$BUILD/mroc-sim" engine --qps 1 --mtu $MROC_MTU --runs 5 --sec $m
done
"$BUILD/sec-bench"
echo '```'
