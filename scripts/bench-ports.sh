#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Hosts with a port per plane (scripts/fabric up --ports P), every plane
# rate-limited by TBF so that the network, not the CPU, is the bottleneck:
#
#   scaling   P = 1, 2, 4 ports per host: mroc write_bw (4 x P paths, mrocd's
#             default workers) and kernel TCP over the same ports (iperf3 -P 2 x P,
#             the hosts' ECMP route hashing the streams over the ports);
#             goodput and goodput / (P x the one-port figure)
#   portdown  P = 2 (PORTDOWN_PORTS), a long write_bw; the sender's port p2
#             goes down after 3 s, either its link (ip link set p2 down) or
#             its plane (blackhole: everything dropped, links up; only
#             network.port_dead_ms's silence tells): goodput in the second
#             before, the first second after, and the rest, against what
#             the remaining ports can carry (PORTDOWN_KINDS "baseline" adds
#             runs with p2 down from the start: one port at the same load)
#   workers   P = 2, daemon.workers = 1 vs 2 (one per port), 4 QPs in one
#             write_bw run, or in two at once (two clients per host, 2 QPs
#             each: with 2 workers each worker owns one client's QPs; a
#             client's QPs all live on one worker): on TBF-limited planes,
#             and on unlimited ones, where the CPU is the bottleneck; the
#             sum of the runs' goodput, and the load average
#
# Writes docs/perf/ports*.csv and ports.png (gnuplot docs/perf/ports.gp),
# prints markdown tables on stdout and progress on stderr.  Root; part of make
# bench; about 4 minutes on 2 cores.
#
#   scripts/bench-ports.sh
#
# Environment: BUILD (default build), OUT (docs/perf), SECS (4: seconds per
# bandwidth run), REPS (3: runs per point; min / median / max reported),
# RATE_MBIT (200: TBF rate of each plane), PORT_COUNTS ("1 2 4"), SCALING_WORKERS
# (0: daemon.workers in the scaling runs; 0 is mrocd's default, a worker per socket up
# to the CPUs), PORTDOWN_PORTS (2), PORTDOWN_KINDS ("link blackhole"), EXPERIMENTS
# ("scaling portdown workers"), KEEP (set: keep the work directory with the daemons' logs).
set -u
BL_TAG=bench-ports
. "$(dirname "$0")/bench-lib.sh"

OUT=${OUT:-$BL_TOP/docs/perf}
SECS=${SECS:-4}
REPS=${REPS:-3}
RATE_MBIT=${RATE_MBIT:-200}
PORT_COUNTS=${PORT_COUNTS:-1 2 4}
PORTDOWN_PORTS=${PORTDOWN_PORTS:-2}
SCALING_WORKERS=${SCALING_WORKERS:-0}
PORTDOWN_KINDS=${PORTDOWN_KINDS:-link blackhole}
EXPERIMENTS=${EXPERIMENTS:-scaling portdown workers}
# TBF counts whole frames: 3392 payload bytes in every 3494.
PAYLOAD_FRAC=$(awk -v m=$MROC_MTU 'BEGIN { printf "%.6f", m / (m + 102) }')

bl_init iperf3
mkdir -p "$OUT"

# up P [WORKERS [RATE]]: a fresh fabric with P ports per host (bench-lib: MTU LINK_MTU,
# no offloads), every plane at RATE (Mbit/s; default RATE_MBIT, 0 = unlimited), and
# mrocd on both hosts (one socket per port, 4 x P paths, daemon.workers = WORKERS,
# default 1).
up() {
	local p=$1 workers=${2:-1} rate=${3:-$RATE_MBIT} l h
	bl_fabric_up --ports "$p" 2
	for ((l = 1; l <= p && rate > 0; l++)); do bl_plane_set "$l" rate "${rate}mbit"; done
	BL_PATHS=$((4 * p))
	for h in 0 1; do
		bl_daemon_start $h "umem_frames = 16384; ring_size = 1024;" \
			"rto_min_us = 5000; rto_init_us = 20000;" "" "workers = $workers;"
	done
	bl_daemons_ready
}

# mroc SECONDS: write_bw host 0 -> host 1; GBPS is mroc-perf's average (empty: failed).
mroc() {
	local s
	bl_bg ip netns exec "${NS[1]}" timeout $(($1 + 30)) "$PERF" write_bw --mrocd-socket "$BL_DIR/h1.ctl" --sleep -j \
		--mroc-addr "${IP[1]}" >"$BL_DIR/srv.json" 2>"$BL_DIR/srv.err"
	s=$BL_LAST
	sleep 0.3
	ip netns exec "${NS[0]}" timeout $(($1 + 30)) "$PERF" write_bw --mrocd-socket "$BL_DIR/h0.ctl" --sleep -j \
		-s 65536 -D "$1" "${MGMT[1]}" >"$BL_DIR/cli.json" 2>"$BL_DIR/cli.err"
	bl_reap "$s"
	GBPS=$(jq -r '.results[0].bw_avg_gbps // empty' "$BL_DIR/cli.json" 2>/dev/null)
	[ -n "$GBPS" ] || log "write_bw failed: $(head -2 "$BL_DIR/cli.err" "$BL_DIR/srv.err" | tr '\n' ' ')"
}

# mroc_runs K SECONDS: K write_bw runs host 0 -> host 1 at once (K clients per host,
# 4 / K QPs each); GBPS is the sum of their averages (empty: one failed).
mroc_runs() {
	local k=$1 i pids=()
	shift
	rm -f "$BL_DIR"/cli?.json
	for ((i = 0; i < k; i++)); do
		bl_bg ip netns exec "${NS[1]}" timeout $(($1 + 30)) "$PERF" write_bw --mrocd-socket "$BL_DIR/h1.ctl" \
			--sleep -j -q $((4 / k)) -p $((18515 + i)) --mroc-addr "${IP[1]}" >"$BL_DIR/srv$i.json" \
			2>"$BL_DIR/srv$i.err"
		pids+=("$BL_LAST")
	done
	sleep 0.3
	for ((i = 0; i < k; i++)); do
		bl_bg ip netns exec "${NS[0]}" timeout $(($1 + 30)) "$PERF" write_bw --mrocd-socket "$BL_DIR/h0.ctl" \
			--sleep -j -q $((4 / k)) -p $((18515 + i)) -s 65536 -D "$1" "${MGMT[1]}" >"$BL_DIR/cli$i.json" \
			2>"$BL_DIR/cli$i.err"
		pids+=("$BL_LAST")
	done
	for i in "${pids[@]}"; do bl_reap "$i"; done
	GBPS=$(jq -rs --argjson k "$k" 'if length == $k and all(.[]; .results[0].bw_avg_gbps) then
		[.[].results[0].bw_avg_gbps] | add else empty end' "$BL_DIR"/cli?.json 2>/dev/null)
	[ -n "$GBPS" ] || log "write_bw failed: $(head -2 "$BL_DIR"/cli?.err "$BL_DIR"/srv?.err | tr '\n' ' ')"
}

# tcp STREAMS: iperf3 host 0 -> host 1 between the service addresses; GBPS received.
tcp() {
	local s
	bl_bg ip netns exec "${NS[1]}" timeout $((SECS + 30)) iperf3 -s -1 -p 5201 >/dev/null 2>&1
	s=$BL_LAST
	sleep 0.3
	ip netns exec "${NS[0]}" timeout $((SECS + 25)) iperf3 -c "${IP[1]}" -B "${IP[0]}" \
		-p 5201 -O 1 -t "$SECS" -P "$1" -J >"$BL_DIR/tcp.json" 2>/dev/null
	bl_reap "$s"
	GBPS=$(jq -r '.end.sum_received.bits_per_second / 1e9 // empty' "$BL_DIR/tcp.json" 2>/dev/null)
}

# bp_stats: "min median max" of the numbers on stdin, three decimals; unlike bench-lib's
# stats, a failed run (an empty line) counts as 0.
bp_stats() { sort -g | awk '{ a[n++] = ($1 == "" ? 0 : $1) } END { if (!n) exit; m = n % 2 ? a[int(n/2)] : (a[n/2-1] + a[n/2]) / 2
	printf "%.3f %.3f %.3f", a[0], m, a[n-1] }'; }

exp_scaling() {
	local csv=$OUT/ports.csv sum=$OUT/ports-summary.csv p rep mode one_mroc= one_tcp= st med one cap
	echo "ports,plane_rate_mbit,mode,rep,gbps" >"$csv"
	for p in $PORT_COUNTS; do
		up "$p" "$SCALING_WORKERS"
		for ((rep = 1; rep <= REPS; rep++)); do
			mroc "$SECS"
			log "$p port(s): mroc rep $rep: ${GBPS:-failed} Gbit/s"
			echo "$p,$RATE_MBIT,mroc,$rep,$GBPS" >>"$csv"
			tcp $((2 * p))
			log "$p port(s): tcp -P $((2 * p)) rep $rep: ${GBPS:-failed} Gbit/s"
			echo "$p,$RATE_MBIT,tcp,$rep,$GBPS" >>"$csv"
		done
	done
	bl_daemons_stop
	echo "ports,plane_rate_mbit,mode,gbps_min,gbps_median,gbps_max,fraction_of_p_x_one_port,fraction_of_capacity" >"$sum"
	for mode in mroc tcp; do
		one=
		for p in $PORT_COUNTS; do
			st=$(awk -F, -v p="$p" -v m=$mode '$1 == p && $3 == m { print $5 }' "$csv" | bp_stats)
			med=$(cut -d' ' -f2 <<<"$st")
			[ -n "$one" ] || one=$med
			cap=$(awk -v p="$p" -v r="$RATE_MBIT" -v f="$PAYLOAD_FRAC" 'BEGIN { printf "%.4f", p * r * f / 1000 }')
			echo "$p,$RATE_MBIT,$mode,${st// /,},$(awk -v m="$med" -v o="$one" -v p="$p" 'BEGIN { if (o > 0) printf "%.3f", m / (p * o) }'),$(awk -v m="$med" -v c="$cap" 'BEGIN { printf "%.3f", m / c }')" >>"$sum"
		done
	done
	echo "#### Ports per host, each plane at $RATE_MBIT Mbit/s (TBF), $SECS s runs, $REPS runs per point"
	echo
	echo "| ports | mode | Gbit/s min / median / max | median / (P x one port) | median / payload capacity |"
	echo "|---|---|---|---|---|"
	awk -F, 'NR > 1 { printf "| %s | %s | %.3f / %.3f / %.3f | %s | %s |\n", $1, ($3 == "mroc" ? "mroc write_bw, 4 x P paths" : "TCP iperf3 -P 2 x P"), $4, $5, $6, $7, $8 }' "$sum"
	echo
	command -v gnuplot >/dev/null && { (cd "$OUT" && gnuplot "$BL_TOP/docs/perf/ports.gp") || log "gnuplot failed"; }
}

# Receiver's payload bytes (all QPs) now: "time bytes", the time halfway through the
# query (on a loaded machine mroc-cli may take a while; the rates interpolate).
rx_now() {
	local t0=$EPOCHREALTIME b
	b=$(bl_admin 1 qp show | jq '[.qps[]?.rx_bytes] | add // 0')
	awk -v a="$t0" -v b="$EPOCHREALTIME" -v n="$b" 'BEGIN { printf "%.6f %s\n", (a + b) / 2, n }'
}

# port_fail KIND: take the sender's p2 out: "link" (ip link set p2 down) or
# "blackhole" (plane 2 drops everything, its links stay up: only the silence
# tells, network.port_dead_ms); "baseline" is taken out before the transfer
# starts (what one port carries at this load, for comparison).
port_fail() {
	case $1 in
	link) ip -n "${NS[0]}" link set p2 down ;;
	blackhole) "$FABRIC" set 2 --name "$BL_NAME" blackhole on >/dev/null ;;
	esac
}

exp_portdown() {
	local csv=$OUT/ports-down.csv p=$PORTDOWN_PORTS rep s c t0 cap kind down ok
	cap=$(awk -v p="$p" -v r="$RATE_MBIT" -v f="$PAYLOAD_FRAC" 'BEGIN { printf "%.4f", (p - 1) * r * f / 1000 }')
	echo "ports,plane_rate_mbit,kind,rep,gbps_before,gbps_first_second_after,gbps_after,remaining_capacity_gbps,completed,loadavg1" >"$csv"
	# The kinds alternate run by run: on a shared box the load drifts alike for each.
	for ((rep = 1; rep <= REPS; rep++)); do
		for kind in $PORTDOWN_KINDS; do
			up "$p"
			[ "$kind" = baseline ] && port_fail link
			bl_bg ip netns exec "${NS[1]}" timeout 60 "$PERF" write_bw --mrocd-socket "$BL_DIR/h1.ctl" --sleep --verify \
				--mroc-addr "${IP[1]}" >"$BL_DIR/srv.txt" 2>&1
			s=$BL_LAST
			sleep 0.3
			bl_bg ip netns exec "${NS[0]}" timeout 60 "$PERF" write_bw --mrocd-socket "$BL_DIR/h0.ctl" --sleep --verify \
				-s 65536 -D 8 "${MGMT[1]}" >"$BL_DIR/cli.txt" 2>&1
			c=$BL_LAST
			: >"$BL_DIR/samples"
			t0=$EPOCHREALTIME
			down=
			while kill -0 "$c" 2>/dev/null; do
				rx_now >>"$BL_DIR/samples"
				if [ -z "$down" ] && awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { exit !(b - a >= 3) }'; then
					down=$EPOCHREALTIME	# when the command starts: its own time counts against us
					port_fail "$kind"
				fi
				sleep 0.1
			done
			bl_reap "$c"
			ok=$?
			bl_reap "$s" || ok=1
			awk -v d="$down" -v p="$p" -v r="$RATE_MBIT" -v k="$kind" -v rep="$rep" -v cap="$cap" -v ok="$ok" \
				-v load="$(cut -d' ' -f1 /proc/loadavg)" '
				# Bytes at time tt, interpolated between the samples around it: on a loaded
				# box a sample may take longer than a second.
				function at(tt,   i) {
					for (i = 2; i <= n; i++)
						if (t[i] >= tt && t[i] > t[i - 1])
							return x[i - 1] + (x[i] - x[i - 1]) * (tt - t[i - 1]) / (t[i] - t[i - 1])
					return x[n] }
				function rate(a, b) {	# Gbit/s between times a and b
					return a >= t[1] && b <= t[n] && b > a ? (at(b) - at(a)) * 8 / (b - a) / 1e9 : 0 }
				{ n++; t[n] = $1; x[n] = $2 }
				END { printf "%s,%s,%s,%s,%.4f,%.4f,%.4f,%s,%s,%s\n", p, r, k, rep, rate(d - 1, d), rate(d, d + 1),
					rate(d + 1, t[n] - 0.5), cap, ok == 0 ? "verified" : "FAILED", load }' "$BL_DIR/samples" >>"$csv"
			log "port down ($kind) rep $rep: $(tail -1 "$csv")"
			grep -h "came back through port" "$BL_DIR/h0.log" | tail -1 >&2
		done
	done
	bl_daemons_stop
	echo "#### A port down mid-transfer: $p ports at $RATE_MBIT Mbit/s, the sender's p2 taken out after 3 s of an 8 s write_bw --verify"
	echo
	echo "link: \`ip link set p2 down\`; blackhole: plane 2 drops everything, links up (\`fabric set 2 blackhole on\`);"
	echo "baseline: p2's link down before the transfer starts (one port all along)."
	echo
	echo "| how | run | Gbit/s the second before | the first second after | the rest | remaining ports' payload capacity | transfer | load (1 min) |"
	echo "|---|---|---|---|---|---|---|---|"
	awk -F, 'NR > 1 { printf "| %s | %s | %.3f | %.3f (%.0f%%) | %.3f (%.0f%%) | %.3f | %s | %s |\n", $3, $4, $5, $6, 100 * $6 / $8, $7, 100 * $7 / $8, $8, $9, $10 }' "$csv"
	echo
	for kind in $PORTDOWN_KINDS; do
		echo "$kind: the first second after, % of the remaining capacity, min / median / max: $(awk -F, -v k="$kind" 'NR > 1 && $3 == k { print 100 * $6 / $8 }' "$csv" | bp_stats)"
	done
	echo
}

# CPU ticks (USER_HZ) so far and the time: "daemons softirq idle seconds" - both mrocd processes
# (every thread), and the machine's softirq and idle time (on veth the kernel's
# share of the datapath runs in softirq, charged to no thread).
cpu_ticks() {
	local h d=0
	for h in 0 1; do
		d=$((d + $(awk '{ print $14 + $15 }' "/proc/${DPID[$h]}/stat" 2>/dev/null || echo 0)))
	done
	awk -v d="$d" -v t="$EPOCHREALTIME" '$1 == "cpu" { print d, $8, $5 + $6, t; exit }' /proc/stat
}

# The two worker counts alternate run by run (a fresh fabric each time), so
# that both see the same drift in a shared machine's load; besides goodput,
# the daemons' CPU per byte says what the second worker costs or saves.
exp_workers() {
	local csv=$OUT/ports-workers.csv rate w k rep st load c0 c1 hz
	hz=$(getconf CLK_TCK)
	echo "ports,plane_rate_mbit,workers,runs,rep,gbps,loadavg1,daemon_cpu_s,softirq_cpu_s,idle_cpu_s,wall_s" >"$csv"
	for rate in $RATE_MBIT 0; do
		for ((rep = 1; rep <= REPS; rep++)); do
			for w in 1 2; do
				up 2 "$w" "$rate"
				for k in 1 2; do
					c0=$(cpu_ticks)
					mroc_runs "$k" "$SECS"
					c1=$(cpu_ticks)
					load=$(cut -d' ' -f1 /proc/loadavg)
					log "2 ports at $([ "$rate" = 0 ] && echo unlimited || echo "$rate Mbit/s"), $w worker(s), $k run(s): rep $rep: ${GBPS:-failed} Gbit/s (load $load)"
					echo "2,$rate,$w,$k,$rep,$GBPS,$load,$(awk -v a="$c0" -v b="$c1" -v hz="$hz" 'BEGIN {
						split(a, x, " "); split(b, y, " ")
						printf "%.2f,%.2f,%.2f,%.2f", (y[1] - x[1]) / hz, (y[2] - x[2]) / hz, (y[3] - x[3]) / hz, y[4] - x[4] }')" >>"$csv"
				done
			done
		done
	done
	bl_daemons_stop
	echo "#### Workers: 2 ports per host, 4 QPs in 1 or 2 write_bw runs at once, $SECS s runs, $REPS runs per point (worker counts alternating)"
	echo
	echo "| planes | write_bw runs (clients) | daemon.workers | Gbit/s (sum of the runs) min / median / max | daemons' CPU s per GB, median | machine idle, median | load average (1 min) min / max |"
	echo "|---|---|---|---|---|---|---|"
	for rate in $RATE_MBIT 0; do
		for k in 1 2; do
			for w in 1 2; do
				# sel EXPR [COND]: EXPR of this point's rows (that meet COND)
				sel() { awk -F, -v r="$rate" -v w="$w" -v k="$k" "NR > 1 && \$2 == r && \$3 == w && \$4 == k && (${2:-1}) { print $1 }" "$csv"; }
				st=$(sel '$6' | bp_stats)
				load=$(sel '$7' | bp_stats)
				# CPU seconds over the whole run (connection set-up included) per GB moved in it
				cpb=$(sel "\$8 / (\$6 * $SECS / 8)" '$6 > 0' | bp_stats | cut -d' ' -f2)
				idle=$(sel "100 * \$10 / ($(nproc) * \$11)" | bp_stats | cut -d' ' -f2)
				echo "| $([ "$rate" = 0 ] && echo unlimited || echo "$rate Mbit/s TBF") | $k x $((4 / k)) QPs | $w | ${st// / \/ } | $cpb | ${idle:-?}% | $(cut -d' ' -f1 <<<"$load") / $(cut -d' ' -f3 <<<"$load") |"
			done
		done
	done
	echo
}

for e in $EXPERIMENTS; do
	case $e in
	scaling) exp_scaling ;;
	portdown) exp_portdown ;;
	workers) exp_workers ;;
	*) die "unknown experiment $e" ;;
	esac
done
