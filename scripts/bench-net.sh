#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Real packets, side by side in one run over the same veth pair between two
# network namespaces, both mrocd on AF_XDP (native XDP, copy mode: veth has no
# zero-copy).  Prints markdown tables; root; part of make bench.
#
# 1. mroc against the bare AF_XDP ceiling: build/xsk-baseline (same XDP
#    program, UMEM frame size, rings, queue, mode and copy choice as mrocd,
#    frames as long as mroc's data packets, the sender at most a ring ahead
#    of the receiver: --credit) TX -> RX, then mroc write_bw
#    (MetaRoCE and RoCEv2 mode), send_bw and read_bw of 1 MiB messages, at
#    each payload of PAYLOADS; RUNS rounds, each round the bare pair first
#    (mrocd stopped: the queue is the baseline's) and then every mroc test
#    (mrocd restarted).  Data packets per second min/median/max over the
#    rounds, and the ratio of the medians to the bare pair's frame rate;
#    CPU time per data packet (both mrocd; the bare pair's two processes),
#    which a machine shared with other work changes far less than the rate.
# 2. mroc write_bw 64 KiB / 1 MiB against kernel TCP (iperf3), and write_lat
#    8 B against a kernel TCP ping-pong (sockperf), at the largest payload (BIG below).
# 3. atomics (issue #14): atomic_lat (FETCH_AND_ADD, CMP_AND_SWAP) beside write_lat and read_lat 8 B on
#    the same pair, interleaved, RUNS rounds: each test's median (t_typical) min/median/max
#    over the rounds and the ratio of the medians to write_lat's; atomic_bw's rate, 4 QPs.
#
# Every run records the 1-minute load average at its start and end; a figure with a
# run where either exceeded the CPU count is flagged "*" (scripts/bench-load.sh:
# QUIET=1 waits for a load below 1 before each run, REFUSE_LOADED=1 leaves flagged
# runs out of the ratio table's figures, MAX_LOAD, QUIET_LOAD, QUIET_TIMEOUT).
#
#   scripts/bench-net.sh [SECONDS]        default 5 s per bandwidth run
#   env: RUNS (3), PAYLOADS ("1024 max"), PARTS ("ratio tcp atomic"), SEC_MODE (both
#   daemons' security.mode, none or token; unset: mrocd's default, token), CONF_SED (a sed
#   script applied to both mrocd's configuration files, e.g.
#   's/^transport = {/transport = {\n\tdelay_target_us = 0;/': a configuration A/B).  "max" is the largest payload the 3506-byte link leaves room for in
#   SEC_MODE (3386 with the token's tag, 3394 with none); parts 2 and 3 use it too.
set -u
SECS=${1:-5}
RUNS=${RUNS:-3}
PAYLOADS=${PAYLOADS:-1024 max}
PARTS=${PARTS:-ratio tcp atomic}
SEC_MODE=${SEC_MODE:-}
CONF_SED=${CONF_SED:-}
. "$(dirname "$0")/../tests/e2e/lib.sh"
. "$(dirname "$0")/bench-load.sh"
PERF=$BUILD/mroc-perf
BASE=$BUILD/xsk-baseline
e2e_require
# Only the kernel TCP part needs them: the ratio (and its large payload) runs without.
case " $PARTS " in
*" tcp "*) for t in iperf3 sockperf; do command -v $t >/dev/null || skip "needs $t (scripts/deps.sh)"; done ;;
esac
[ -x "$PERF" ] || skip "$PERF not built"
[ -x "$BASE" ] || skip "$BASE not built"
e2e_setup_pair
LOAD_LOG=$E2E_DIR/load.log
: >"$E2E_DIR/loads"
MAC_B=$(ip -n "$NS_B" -j link show "$IF_B" | jq -r '.[0].address')
MSG=1048576
# 3506 is the largest MTU native XDP on veth takes (a frame must fit a page); BIG the largest
# payload mrocd then accepts in the security mode (it keeps room for IPv6 headers).
BIG=$(e2e_max_payload 3506 "${SEC_MODE:-token}")
PAYLOADS=${PAYLOADS//max/$BIG}

# link_for PAYLOAD: sets the veths' MTU for mroc payload PAYLOAD; prints the UMEM frame size.
# 1024: a standard 1500-byte link and mrocd's default 2 KiB frames; above: 3506 and 4 KiB.
link_for() {
	local mtu=1500 fs=2048
	[ "$1" -gt 1024 ] && mtu=3506 fs=4096
	ip -n "$NS_A" link set "$IF_A" mtu $mtu
	ip -n "$NS_B" link set "$IF_B" mtu $mtu
	echo $fs
}

# start_pair TAG PAYLOAD FRAME_SIZE: mrocd a$TAG and b$TAG with that MTU.
start_pair() {
	local n
	for n in a b; do
		if [ $n = a ]; then e2e_config a$1 af_xdp "$IF_A" "$IP_A" "$IP_B"
		else e2e_config b$1 af_xdp "$IF_B" "$IP_B" "$IP_A"; fi
		# The daemon's defaults but for the frame size and MTU (busy_poll_us too, not the tests' 20).
		sed -i "/busy_poll_us/d; s/log_level = \"debug\"/log_level = \"warning\"/; s/umem_frames = 4096;/umem_frames = 8192; frame_size = $3; mtu = $2;/; s/keepalive_ms = 100;/keepalive_ms = 1000;/; s/rto_init_us = 20000;/rto_init_us = 20000; rto_min_us = 5000;/" "$E2E_DIR/$n$1.conf"
		# The mode the payload was sized for: with "none" 3394 B fits, with the token's tag it
		# did not ("MTU 3506 is below the 3514 bytes network.mtu 3394 needs").
		[ -z "$SEC_MODE" ] || echo "security = { mode = \"$SEC_MODE\"; };" >>"$E2E_DIR/$n$1.conf"
		[ -z "$CONF_SED" ] || sed -i -e "$CONF_SED" "$E2E_DIR/$n$1.conf"
	done
	e2e_start a$1 "$NS_A"
	e2e_start b$1 "$NS_B"
	e2e_wait_ready a$1
	e2e_wait_ready b$1
	CUR=$1
}

stop_pair() {
	e2e_stop a$CUR
	e2e_stop b$CUR
}

# mperf TEST ARGS...: one mroc-perf run on the current pair, prints its JSON result line.
# Its load at the start and end: LOADS (appended "start-end" and a "*" when LOADED).
mperf() {
	local t=$1
	shift
	load_begin
	ip netns exec "$NS_B" timeout 120 "$PERF" "$t" -S "$E2E_DIR/b$CUR.ctl" --sleep -j "$@" >"$E2E_DIR/srv.json" 2>&1 &
	local srv=$!
	sleep 0.3
	ip netns exec "$NS_A" timeout 120 "$PERF" "$t" -S "$E2E_DIR/a$CUR.ctl" --sleep -j "$@" "$IP_B" >"$E2E_DIR/cli.json" 2>"$E2E_DIR/cli.err"
	wait "$srv"
	load_end
	echo "$LOAD_B-$LOAD_E$LOADED" >>"$E2E_DIR/loads"
	load_refused && return
	cat "$E2E_DIR/cli.json"
}

# loads_take: the loads of the runs since the last call, "min-max" and "*" if one was loaded.
loads_take() {
	[ -s "$E2E_DIR/loads" ] || { echo "-"; return; }
	tr -- '-' '\n' <"$E2E_DIR/loads" | tr -d '*' | sort -g |
		awk -v s="$(grep -q '\*' "$E2E_DIR/loads" && echo '*')" '{ v[NR] = $1 } END { printf "%s-%s%s", v[1], v[NR], s }'
	: >"$E2E_DIR/loads"
}

# bare PAYLOAD FRAME_SIZE: "Mpps CPU-ns-per-packet" of the bare pair (its receive rate; the
# CPU time of sender and receiver per packet each sent or received).
bare() {
	load_begin
	ip netns exec "$NS_B" "$BASE" rx -i "$IF_B" -f "$2" -D "$SECS" --credit "$E2E_DIR/credit" \
		>"$E2E_DIR/bare.json" 2>"$E2E_DIR/bare-rx.err" &
	local rx=$!
	sleep 0.5
	ip netns exec "$NS_A" "$BASE" tx -i "$IF_A" -f "$2" -s "$1" -D $((SECS + 2)) --credit "$E2E_DIR/credit" \
		--src "$IP_A" --dst "$IP_B" --dmac "$MAC_B" >"$E2E_DIR/bare-tx.json" 2>"$E2E_DIR/bare-tx.err"
	wait $rx
	load_end
	echo "$LOAD_B-$LOAD_E$LOADED" >>"$E2E_DIR/loads"
	if load_refused; then echo 0 0; return; fi
	jq -e -r -s '"\(.[0].mpps) \(.[0].cpu_ns_per_pkt + .[1].cpu_ns_per_pkt)"' \
		"$E2E_DIR/bare.json" "$E2E_DIR/bare-tx.json" 2>/dev/null ||
		{ echo 0 0; cat "$E2E_DIR/bare.json" "$E2E_DIR/bare-rx.err" "$E2E_DIR/bare-tx.err" >&2; }
}

# cpu_ns NAME: CPU time (user + system) the daemon used so far, ns.
cpu_ns() {
	awk -v t="$(getconf CLK_TCK)" '{ printf "%.0f\n", ($14 + $15) * 1e9 / t }' "/proc/$(e2e_pid "$1$CUR")/stat"
}

# mroc_mpps PAYLOAD JSON: data packets per second of a 1 MiB bandwidth run, Mpps.
mroc_mpps() {
	jq -r --argjson p "$1" --argjson m $MSG \
		'.results[0].bw_avg_gbps * 1e9 / 8 / $m * (($m + $p - 1) / $p | floor) / 1e6' <<<"$2" 2>/dev/null || echo 0
}

# stats V...: "min median max" of the values.
stats() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f %.3f %.3f\n", v[1], v[int((NR + 1) / 2)], v[NR] }'
}

# counters NAME: the daemon's counters (JSON).
counters() { e2e_admin "$1$CUR" counters; }

# load_span "A-B[*] ...": the lowest and highest load of those runs, "*" if one was loaded.
load_span() {
	local s=
	[[ $1 == *'*'* ]] && s='*'
	tr ' -' '\n\n' <<<"${1//\*/}" | grep . | sort -g | awk -v s="$s" '{ v[NR] = $1 } END { if (NR) printf "%s-%s%s", v[1], v[NR], s; else print "-" }'
}

TESTS=("write_bw --mode metaroce" "write_bw --mode rocev2" "send_bw" "read_bw")
ratio_part() {
	echo "| payload B | test (1 MiB messages) | Mpps min / median / max | Gbit/s payload (median) | x bare (median) | CPU ns per data packet (median) | bare / mroc CPU | load min-max |"
	echo "|---|---|---|---|---|---|---|---|"
	local p fs r i a0 b0 a1 b1 c0 c1 out v
	ACKS=()
	for p in $PAYLOADS; do
		fs=$(link_for "$p")
		local -a b=() bc=() m0=() m1=() m2=() m3=() c0s=() c1s=() c2s=() c3s=() acks=() sleeps=()
		local -a ld=("" "" "" "" "")
		for r in $(seq "$RUNS"); do
			: >"$E2E_DIR/loads"
			read -r out c0 <<<"$(bare "$p" "$fs")"
			ld[4]+=$(cat "$E2E_DIR/loads")" "
			b+=("$out") bc+=("$c0")
			start_pair "${p}r$r" "$p" "$fs"
			for i in "${!TESTS[@]}"; do
				a0=$(counters a) b0=$(counters b) c0=$(($(cpu_ns a) + $(cpu_ns b)))
				# shellcheck disable=SC2086
				: >"$E2E_DIR/loads"
				eval "m$i+=(\"\$(mroc_mpps $p \"\$(mperf ${TESTS[$i]} -s $MSG -D $SECS)\")\")"
				ld[i]+=$(cat "$E2E_DIR/loads")" "
				a1=$(counters a) b1=$(counters b) c1=$(($(cpu_ns a) + $(cpu_ns b)))
				# Both daemons' CPU time per data packet either sent (read_bw: b sends).
				v=$(jq -n --argjson a0 "$a0" --argjson a1 "$a1" --argjson b0 "$b0" --argjson b1 "$b1" \
					--argjson c $((c1 - c0)) '$c / ([$a1.engine.tx_data - $a0.engine.tx_data +
						$b1.engine.tx_data - $b0.engine.tx_data, 1] | max)')
				eval "c${i}s+=(\"\$v\")"
				[ "$i" = 0 ] || continue
				# ACKs the receiver sent per data packet, and its worker's sleeps per second.
				acks+=("$(jq -n --argjson a0 "$a0" --argjson a1 "$a1" --argjson b0 "$b0" --argjson b1 "$b1" \
					'($b1.engine.tx_acks - $b0.engine.tx_acks) / ([$a1.engine.tx_data - $a0.engine.tx_data, 1] | max)')")
				sleeps+=("$(jq -n --argjson b0 "$b0" --argjson b1 "$b1" --argjson s "$SECS" \
					'($b1.worker.sleeps - $b0.worker.sleeps) / $s')")
			done
			stop_pair
		done
		ACKS+=("| $p | $(stats "${acks[@]}" | tr ' ' '/') | $(stats "${sleeps[@]}" | tr ' ' '/') |")
		read -r bmin bmed bmax <<<"$(stats "${b[@]}")"
		read -r _ bcpu _ <<<"$(stats "${bc[@]}")"
		echo "| $p | bare AF_XDP TX -> RX ($((p + 60 + 4 + 42)) B frames) | $bmin / $bmed / $bmax | $(awk -v m="$bmed" -v p="$p" 'BEGIN { printf "%.2f", m * p * 8 / 1e3 }') | 1 | ${bcpu%.*} | 1 | $(load_span "${ld[4]}") |"
		for i in "${!TESTS[@]}"; do
			eval "local -a v=(\"\${m$i[@]}\")"
			read -r mmin mmed mmax <<<"$(stats "${v[@]}")"
			eval "local -a v=(\"\${c${i}s[@]}\")"
			read -r _ mcpu _ <<<"$(stats "${v[@]}")"
			echo "| $p | mroc ${TESTS[$i]} | $mmin / $mmed / $mmax | $(awk -v m="$mmed" -v p="$p" 'BEGIN { printf "%.2f", m * p * 8 / 1e3 }') | $(awk -v m="$mmed" -v b="$bmed" 'BEGIN { printf "%.2f", (b > 0 ? m / b : 0) }') | ${mcpu%.*} | $(awk -v m="$mcpu" -v b="$bcpu" 'BEGIN { printf "%.2f", (m > 0 ? b / m : 0) }') | $(load_span "${ld[$i]}") |"
		done
	done
	echo
	load_note
	echo
	echo "ACKs during write_bw (MetaRoCE, 1 MiB), min/median/max over the rounds (an ACK is 84 B"
	echo "of UDP payload, a 126-byte frame over IPv4):"
	echo
	echo "| payload B | receiver's ACKs per data packet | receiver worker sleeps per second |"
	echo "|---|---|---|"
	printf '%s\n' "${ACKS[@]}"
	echo
}

bw_row() { # label json load
	jq -r --arg l "$1" --arg ld "$3" '.results[0] | "| \($l) | \(.bytes) | \(.bw_avg_gbps | . * 100 | round / 100) | \(.msg_rate_mpps * 1000 | round / 1000) | \($ld) |"' <<<"$2" 2>/dev/null ||
		echo "| $1 | - | failed | - | $3 |"
}

tcp_part() {
	start_pair tcp "$BIG" "$(link_for "$BIG")"
	echo "| test | message bytes | Gbit/s | Mmsg/s | load start-end |"
	echo "|---|---|---|---|---|"
	for mode in metaroce rocev2; do
		for s in 65536 1048576; do
			bw_row "mroc write_bw ($mode)" "$(mperf write_bw --mode "$mode" -s "$s" -D "$SECS")" "$(loads_take)"
		done
	done
	for st in 1 4; do
		ip netns exec "$NS_B" iperf3 -s -1 -D >/dev/null 2>&1
		sleep 0.3
		load_begin
		g=$(ip netns exec "$NS_A" iperf3 -c "$IP_B" -t "$SECS" -P "$st" -J 2>/dev/null |
		    jq '.end.sum_received.bits_per_second / 1e9 | . * 100 | round / 100')
		load_end
		load_refused && g="refused (loaded)"
		echo "| kernel TCP (iperf3, $st stream$([ $st = 1 ] || echo s)) | 128K writes | ${g:-failed} | - | $LOAD_B-$LOAD_E$LOADED |"
	done
	echo
	echo "| test | t_min us | t_typical (median) us | t_avg us | 99% us | load start-end |"
	echo "|---|---|---|---|---|---|"
	for mode in metaroce rocev2; do
		local j
		j=$(mperf write_lat --mode "$mode" -s 8 -n 2000)
		jq -r --arg m "$mode" --arg ld "$(loads_take)" '.results[0] | "| mroc write_lat 8 B (\($m)) | \(.t_min_us) | \(.t_typical_us) | \(.t_avg_us) | \(.p99_us) | \($ld) |"' \
			<<<"$j" 2>/dev/null || echo "| mroc write_lat ($mode) | failed |||| |"
	done
	ip netns exec "$NS_B" sockperf server --tcp -i "$IP_B" -p 11111 >/dev/null 2>&1 &
	E2E_PIDS+=($!)
	sleep 0.5
	load_begin
	ip netns exec "$NS_A" sockperf ping-pong --tcp -i "$IP_B" -p 11111 -m 14 -t "$SECS" >"$E2E_DIR/sockperf.out" 2>&1
	load_end
	awk -v ld="$LOAD_B-$LOAD_E$LOADED" '/<MIN>/ {min=$NF} /<MAX>/ {max=$NF} /percentile 50.000/ {med=$NF} /percentile 99.000/ {p99=$NF} /avg-latency/ {for (i=1;i<=NF;i++) if ($i ~ /avg-latency=/) {split($i,a,"="); avg=a[2]}}
	     END { printf "| kernel TCP ping-pong 14 B (sockperf: its minimum; half round trip) | %s | %s | %s | %s | %s |\n", min, med, avg, p99, ld }' \
		"$E2E_DIR/sockperf.out"
	echo
	load_note
	echo
	stop_pair
}

# One pair at payload BIG (as tcp_part); write_lat is half a round trip (perftest's), read_lat and
# atomic_lat a whole one.
ATOMIC_LATS=("write_lat" "read_lat" "atomic_lat -A FETCH_AND_ADD" "atomic_lat -A CMP_AND_SWAP")
atomic_part() {
	start_pair atomic "$BIG" "$(link_for "$BIG")"
	: >"$E2E_DIR/loads"
	local r i
	local -a l0=() l1=() l2=() l3=() rate=()
	for r in $(seq "$RUNS"); do
		for i in "${!ATOMIC_LATS[@]}"; do
			# shellcheck disable=SC2086
			eval "l$i+=(\"\$(jq -r '.results[0].t_typical_us // 0' <<<\"\$(mperf ${ATOMIC_LATS[$i]} -s 8 -n 2000)\" 2>/dev/null || echo 0)\")"
		done
		rate+=("$(jq -r '.results[0].msg_rate_mpps // 0' <<<"$(mperf atomic_bw -q 4 -D "$SECS")" 2>/dev/null || echo 0)")
	done
	echo "| test (8 B, payload $BIG) | t_typical us: min / median / max over $RUNS runs | x write_lat (medians) |"
	echo "|---|---|---|"
	# every run's load, for the note below the table
	local loads
	loads=$(load_span "$(tr '\n' ' ' <"$E2E_DIR/loads")")
	: >"$E2E_DIR/loads"
	read -r _ wmed _ <<<"$(stats "${l0[@]}")"
	for i in "${!ATOMIC_LATS[@]}"; do
		eval "local -a v=(\"\${l$i[@]}\")"
		read -r mmin mmed mmax <<<"$(stats "${v[@]}")"
		echo "| mroc ${ATOMIC_LATS[$i]} | $mmin / $mmed / $mmax | $(awk -v m="$mmed" -v w="$wmed" 'BEGIN { printf "%.2f", (w > 0 ? m / w : 0) }') |"
	done
	echo
	read -r mmin mmed mmax <<<"$(stats "${rate[@]}")"
	echo "atomic_bw FETCH_AND_ADD, 4 QPs, ${SECS} s: $mmin / $mmed / $mmax Mops/s (min / median / max)"
	echo
	echo "load of these runs: $loads"
	load_note
	echo
	stop_pair
}

for part in $PARTS; do
	"${part}_part"
done
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d), load average $(cut -d' ' -f1-3 /proc/loadavg)"
