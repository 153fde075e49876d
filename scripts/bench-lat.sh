#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Latency where users meet it (issue 17), every figure from one run on one machine:
# mroc-perf write_lat, send_lat and read_lat (SIZE bytes) in both completion modes
# (the default, busy polling through libmroc's adaptive polling, and --sleep) beside
# sockperf's TCP ping-pong (14 B) between the same two hosts, on
#
#   pair          a direct veth pair (AF_XDP, native XDP)
#   f2, f4        scripts/fabric with 2 and 4 planes at RATE_MBIT each, ECN marking
#                 off and on (a plane marks CE above CE_THRESHOLD of queue, as a switch)
#   pair-pinned   the pair with both mrocd workers on CPU 1 (daemon.cpu_affinity) and
#                 the clients on CPU 0 (taskset); idle only
#   pair-nice     the pair with both mrocd at nice -5 (systemd's Nice=); idle only
#
# each idle and under a concurrent write_bw (1 MiB messages, default polling) between
# the same two hosts (its Gbit/s is recorded beside).  Ping-pong figures are half the
# round trip (perftest's and sockperf's convention), read_lat a whole READ.
#
# Writes docs/perf/lat.csv (every run), lat-summary.csv (min/median/max over REPS
# runs) and lat.png (docs/perf/lat.gp), prints markdown tables on stdout and
# progress on stderr.  Root; part of make bench (make bench-lat alone); about
# 20 minutes on 2 cores with the defaults.
#
#   scripts/bench-lat.sh
#
# Environment: BUILD (build), OUT (docs/perf), SECS (3: seconds per latency run),
# REPS (3), SIZE (8), RATE_MBIT (1000), CE_THRESHOLD (64kb), TOPOS ("pair f2 f4
# pair-pinned pair-nice"), LOADS ("idle bw"), MROC_SPIN_US (libmroc's budget, see
# libmroc(3); unset: its default), SCHED (set: "perf sched record" one second of
# each topology's first idle write_lat in the default mode, and print what the
# scheduler did to mrocd's workers and mroc-perf: "perf sched latency" rows on stderr
# and in OUT/lat-sched.txt), TESTS ("write_lat send_lat read_lat sockperf"), MODES
# ("poll sleep"), ECNS ("off on": the fabrics' marking), PROBE (set: during each run
# beside the write_bw, both daemons' "path show", "qp show" and counters and the
# planes' qdiscs once a second, into OUT/lat-probe/, and a line a daemon on stderr: the
# packets' wait in the host, the worker's shares on its CPU and in the run queue, its
# sleeps and peer-window cuts: where the latency run's wait is; "all": the idle runs too),
# TRANSPORT_KEYS (libconfig settings added to both mrocd's transport group, for an
# A/B: TRANSPORT_KEYS="peer_host_delay_us = 0;"), FABRIC_NICE (e.g. -5: the fabrics' mrocd
# run at that niceness, as systemd/mrocd.service's Nice=-5; empty, the default: as the clients),
# HOST_CPUS (set: on the fabrics, each host's mrocd worker on a CPU of its own, host h on CPU h
# mod the CPUs, as two hosts would have; the clients go where the scheduler puts them).
#
# Everything started here is stopped by pid and every namespace removed on exit,
# also on failure or Ctrl-C.
set -u

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/tests/e2e/lib.sh"
OUT=${OUT:-$TOP/docs/perf}
SECS=${SECS:-3}
REPS=${REPS:-3}
SIZE=${SIZE:-8}
RATE_MBIT=${RATE_MBIT:-1000}
CE_THRESHOLD=${CE_THRESHOLD:-64kb}
TOPOS=${TOPOS:-pair f2 f4 pair-pinned pair-nice}
LOADS=${LOADS:-idle bw}
TESTS=${TESTS:-write_lat send_lat read_lat sockperf}
MODES=${MODES:-poll sleep}
ECNS=${ECNS:-off on}
FABRIC_NICE=${FABRIC_NICE:-}
PERF=$BUILD/mroc-perf
FABRIC=$TOP/scripts/fabric
NAME=bl$(($$ % 100000))
LINK_MTU=3506		# payload 3386 + headers (mrocd checks); native XDP on veth takes about a page
MROC_MTU=3386		# MetaRoCE payload per packet at LINK_MTU (120 bytes of headers in token mode)
LAT_PORT=18515 BW_PORT=18516 SP_PORT=11111

log() { echo "bench-lat: $*" >&2; }
die() { log "$*"; exit 1; }

e2e_require
for t in sockperf jq tc bpftool taskset; do command -v $t >/dev/null || skip "needs $t (scripts/deps.sh)"; done
[ -x "$PERF" ] && [ -e "$BUILD/bpf/impair.bpf.o" ] || skip "$PERF or impair.bpf.o not built: run make"
command -v gnuplot >/dev/null || log "no gnuplot: CSV and tables only (apt-get install gnuplot-nox)"

cleanup() {
	e2e_cleanup
	"$FABRIC" down --name "$NAME" >/dev/null 2>&1
}
e2e_setup_pair
trap cleanup EXIT
mkdir -p "$OUT"
T_START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- hosts

# Where the current topology's two hosts are: namespaces, mrocd sockets, the
# address the client's side channel reaches the server at, the server mrocd's
# address, the server's data-plane address (for sockperf) and what mroc-perf runs under.
CLI_NS= SRV_NS= CLI_CTL= SRV_CTL= SRV_TCP= SRV_MROC= SRV_IP= PIN= DAEMONS=()

# start_daemon NAME NETNS CONF [WRAPPER...]: mrocd in the background, pid in DAEMONS.
start_daemon() {
	local name=$1 ns=$2 conf=$3
	shift 3
	rm -f "$E2E_DIR/$name.admin"
	ip netns exec "$ns" "$@" "$MROCD" -c "$conf" >>"$E2E_DIR/$name.log" 2>&1 &
	DAEMONS+=($!)
	E2E_PIDS+=($!)
}

daemons_stop() {
	local pid
	for pid in "${DAEMONS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	for pid in "${DAEMONS[@]}"; do wait "$pid" 2>/dev/null; done
	DAEMONS=()
}

# daemons_ready NAME...: each one's admin socket answers and its link to the other is up.
daemons_ready() {
	local n
	for n in "$@"; do
		for _ in $(seq 100); do
			[ "$(e2e_admin "$n" links 2>/dev/null | jq '[.links[] | select(.state == "up")] | length')" \
				-ge 1 ] 2>/dev/null && break
			sleep 0.1
		done
		[ "$(e2e_admin "$n" links 2>/dev/null | jq '[.links[] | select(.state == "up")] | length')" \
			-ge 1 ] 2>/dev/null || die "mrocd $n: no link up: $(tail -3 "$E2E_DIR/$n.log")"
	done
}

# pair_up [pinned|nice]: both mrocd on the veth pair (made once by e2e_setup_pair).
pair_up() {
	local n wrap=()
	ip -n "$NS_A" link set "$IF_A" mtu $LINK_MTU
	ip -n "$NS_B" link set "$IF_B" mtu $LINK_MTU
	[ "${1:-}" = nice ] && wrap=(nice -n -5)
	for n in a b; do
		if [ $n = a ]; then e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"; else e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"; fi
		sed -i 's/log_level = "debug"/log_level = "warning"/; s/busy_poll_us = 20;/busy_poll_us = 50;/
			s/umem_frames = 4096;/umem_frames = 8192; frame_size = 4096; mtu = '$MROC_MTU';/
			s/keepalive_ms = 100;/keepalive_ms = 1000;/; s/rto_init_us = 20000;/rto_init_us = 20000; rto_min_us = 5000; '"${TRANSPORT_KEYS:-}"'/' \
			"$E2E_DIR/$n.conf"
		[ "${1:-}" = pinned ] && sed -i 's/busy_poll_us = 50;/busy_poll_us = 50; cpu_affinity = [ 1 ];/' "$E2E_DIR/$n.conf"
	done
	start_daemon a "$NS_A" "$E2E_DIR/a.conf" "${wrap[@]}"
	start_daemon b "$NS_B" "$E2E_DIR/b.conf" "${wrap[@]}"
	daemons_ready a b
	CLI_NS=$NS_A SRV_NS=$NS_B CLI_CTL=$E2E_DIR/a.ctl SRV_CTL=$E2E_DIR/b.ctl
	SRV_TCP=$IP_B SRV_MROC=$IP_B SRV_IP=$IP_B
	PIN=
	[ "${1:-}" = pinned ] && PIN="taskset -c 0"
}

# fabric_up PLANES: a fresh 2-host fabric, planes at RATE_MBIT, both mrocd on AF_XDP.
fabric_up() {
	local h l n peer
	"$FABRIC" down --name "$NAME" >/dev/null 2>&1
	"$FABRIC" up --name "$NAME" --planes "$1" --hosts 2 >/dev/null || die "fabric up failed"
	eval "$("$FABRIC" env --name "$NAME" | tr ' ' '\n')"
	for n in $(ip netns list | awk '{print $1}' | grep "^mrocf-$NAME-"); do
		for l in $(ip -n "$n" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -vx lo); do
			ip -n "$n" link set "$l" mtu $LINK_MTU || die "mtu $LINK_MTU on $n/$l"
		done
	done
	for h in 0 1; do
		peer=$(eval echo "\$FABRIC_IP_$((1 - h))")
		cat >"$E2E_DIR/f$h.conf" <<CONF
daemon = { log_level = "warning"; admin_socket = "$E2E_DIR/f$h.admin"; control_socket = "$E2E_DIR/f$h.ctl"; ${HOST_CPUS:+cpu_affinity = [ $((h % $(nproc))) ];} };
network = { backend = "af_xdp"; interfaces = ( "$(eval echo "\$FABRIC_IF_$h")" ); address = "$(eval echo "\$FABRIC_IP_$h")";
	    peers = [ "$peer" ]; xdp_mode = "native"; umem_frames = 8192; frame_size = 4096; ring_size = 2048; mtu = $MROC_MTU; };
transport = { paths = 4; rto_min_us = 5000; rto_init_us = 20000; ${TRANSPORT_KEYS:-} };
CONF
		start_daemon f$h "$(eval echo "\$FABRIC_NS_$h")" "$E2E_DIR/f$h.conf" ${FABRIC_NICE:+nice -n "$FABRIC_NICE"}
	done
	daemons_ready f0 f1
	CLI_NS=$FABRIC_NS_0 SRV_NS=$FABRIC_NS_1 CLI_CTL=$E2E_DIR/f0.ctl SRV_CTL=$E2E_DIR/f1.ctl
	SRV_TCP=$FABRIC_MGMT_1 SRV_MROC=$FABRIC_IP_1 SRV_IP=$FABRIC_IP_1 PIN=
}

# ecn_set PLANES on|off: every plane at RATE_MBIT, marking CE above CE_THRESHOLD or not.
ecn_set() {
	local p
	for ((p = 1; p <= $1; p++)); do
		"$FABRIC" set "$p" --name "$NAME" rate "${RATE_MBIT}mbit" \
			ce_threshold "$([ "$2" = on ] && echo "$CE_THRESHOLD" || echo off)" >/dev/null ||
			die "fabric set $p"
	done
}

# ---------------------------------------------------------------- runs

# run_perf TAG SIDE PORT TEST ARGS...: one mroc-perf (server or client) in the background; pid in LASTPID.
run_perf() {
	local tag=$1 side=$2 port=$3 t=$4
	shift 4
	if [ "$side" = srv ]; then
		ip netns exec "$SRV_NS" timeout $((SECS + 60)) $PIN "$PERF" "$t" -S "$SRV_CTL" -p "$port" -j \
			--mroc-addr "$SRV_MROC" "$@" >"$E2E_DIR/$tag.srv.json" 2>"$E2E_DIR/$tag.srv.err" &
	else
		ip netns exec "$CLI_NS" timeout $((SECS + 60)) $PIN "$PERF" "$t" -S "$CLI_CTL" -p "$port" -j \
			"$@" "$SRV_TCP" >"$E2E_DIR/$tag.cli.json" 2>"$E2E_DIR/$tag.cli.err" &
	fi
	LASTPID=$!
	E2E_PIDS+=($!)
}

# load_start / load_stop: a write_bw of 1 MiB messages for the whole latency run; BW its Gbit/s.
load_start() {
	run_perf bw srv $BW_PORT write_bw -s 1048576
	LOAD_SRV=$LASTPID
	sleep 0.3
	run_perf bw cli $BW_PORT write_bw -s 1048576 -D $((SECS + 3))
	LOAD_CLI=$LASTPID
	sleep 1.5	# windows open, queues build
}
load_stop() {
	wait "$LOAD_CLI" "$LOAD_SRV" 2>/dev/null
	BW=$(jq -r '.results[0].bw_avg_gbps // empty' "$E2E_DIR/bw.cli.json" 2>/dev/null)
	[ -n "$BW" ] || log "write_bw load failed: $(head -c 300 "$E2E_DIR/bw.cli.err")"
}

# lat TEST MODE: one latency run; R="t_min p50 p99 avg" (empty fields when it failed), ERR why.
lat() {
	local t=$1 mode=$2 srv args=(-s "$SIZE" -D "$SECS")
	[ "$mode" = sleep ] && args+=(--sleep)
	run_perf lat srv $LAT_PORT "$t" "${args[@]}"
	srv=$LASTPID
	sleep 0.3
	run_perf lat cli $LAT_PORT "$t" "${args[@]}"
	wait "$LASTPID" "$srv" 2>/dev/null
	R=$(jq -r '.results[0] | "\(.t_min_us) \(.t_typical_us) \(.p99_us) \(.t_avg_us)"' "$E2E_DIR/lat.cli.json" 2>/dev/null)
	ERR=
	case $R in *null*|"") R="   "; ERR=$(cat "$E2E_DIR/lat.cli.err" "$E2E_DIR/lat.srv.err" 2>/dev/null | head -1 | tr ',' ';')
		ERR=${ERR:-no result}; log "$t $mode: FAILED: $ERR" ;;
	esac
}

# sockperf_run: TCP ping-pong 14 B between the same hosts (half round trips, as its report).
sockperf_run() {
	R=$(ip netns exec "$CLI_NS" timeout $((SECS + 30)) sockperf ping-pong --tcp -i "$SRV_IP" -p $SP_PORT -m 14 \
		-t "$SECS" 2>&1 | awk '/<MIN>/ {min=$NF} /percentile 50.000/ {med=$NF} /percentile 99.000/ {p99=$NF}
		/avg-latency/ {for (i=1;i<=NF;i++) if ($i ~ /avg-latency=/) {split($i,a,"="); avg=a[2]}}
		END { print min, med, p99, avg }')
	ERR=
	[ "$(wc -w <<<"$R")" = 4 ] || { ERR="sockperf failed"; R="   "; log "$ERR"; }
}

# sched_start / sched_report WHAT: one second of scheduler events from 1 s into the run,
# then each task's scheduling delays (perf sched latency: how long it waited, runnable,
# for a CPU) for mrocd's workers and mroc-perf.
SCHED_PID=
sched_start() {
	command -v perf >/dev/null || { log "SCHED: no perf (apt-get install linux-perf)"; return; }
	(
		sleep 1
		# Our threads only (others may run mrocd too): every process naming our work folder.
		for p in $(pgrep -f -- "$E2E_DIR"); do ls "/proc/$p/task" 2>/dev/null; done >"$E2E_DIR/sched.tids"
		perf sched record -o "$E2E_DIR/sched.data" -- sleep 1 >"$E2E_DIR/sched.err" 2>&1
	) &
	SCHED_PID=$!
}
sched_report() {
	wait "$SCHED_PID"
	SCHED_PID=
	{ echo "$1, idle write_lat, default mode, MROC_SPIN_US=${MROC_SPIN_US:-default} (perf sched latency, ms):"
	  perf sched latency -p -i "$E2E_DIR/sched.data" --sort max 2>>"$E2E_DIR/sched.err" |
		awk -v tids="$(tr '\n' ' ' <"$E2E_DIR/sched.tids")" 'BEGIN { n = split(tids, t, " "); for (i = 1; i <= n; i++) ours[t[i]] = 1 }
			/Task/ { print; next } { split($1, c, ":") } (c[1] ~ /^(mrocd-worker|mroc-perf)$/) && (c[2] in ours)'
	} | tee -a "$OUT/lat-sched.txt" >&2
	grep -qi error "$E2E_DIR/sched.err" && log "perf sched: $(head -2 "$E2E_DIR/sched.err")"
}

# probe_start TAG / probe_stop: once a second, both daemons' paths, QPs and counters
# (mroc-cli -d -j) and, on a fabric, every plane's qdisc (tc -s), into OUT/lat-probe/TAG.*.
PROBE_PID=
probe_start() {
	local d=$OUT/lat-probe n
	mkdir -p "$d"
	PROBE_TAG=$1
	(
		for _ in $(seq $((SECS + 2))); do
			for n in cli srv; do
				local ctl=$CLI_CTL
				[ $n = srv ] && ctl=$SRV_CTL
				for o in path qp counters; do
					echo "== $(date +%s.%N) $o"
					"$BUILD/mroc-cli" -S "${ctl%.ctl}.admin" -d -j $o show 2>&1
				done >>"$d/$1.$n.json"
			done
			for n in $(ip netns list | awk '{print $1}' | grep "^mrocf-$NAME-p"); do
				echo "== $(date +%s.%N) $n"
				for l in $(ip -n "$n" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -vx lo); do
					ip netns exec "$n" tc -s qdisc show dev "$l" root
				done
			done >>"$d/$1.qdisc.txt"
			sleep 1
		done
	) &
	PROBE_PID=$!
	E2E_PIDS+=($!)
}
probe_stop() {
	local n f
	kill "$PROBE_PID" 2>/dev/null
	wait "$PROBE_PID" 2>/dev/null
	PROBE_PID=
	# From the first to the last sample of each daemon: where a packet waited.
	for n in cli srv; do
		f=$OUT/lat-probe/$PROBE_TAG.$n.json
		[ -s "$f" ] || continue
		awk '/^== .* counters$/ { t = $2; p = 1; next } /^==/ { p = 0 } p { print t, $0 }' "$f" |
			while read -r t j; do
				jq -r --arg t "$t" '"\($t) \(.engine.rx_pkts) \(.engine.rx_wait_ns) \(.worker.cpu_ns)
					\(.worker.runq_ns) \(.worker.sleeps) \(.engine.peer_host_cut)"' <<<"$j" | tr '\n' ' '
				echo
			done | awk -v who="$PROBE_TAG $n" 'NR == 1 { split($0, a) } END { if (NR < 2) exit
				dt = $1 - a[1]; np = $2 - a[2]
				printf "probe %s: %d packets in, each waited %.0f us in the host; worker on its CPU %.2f, in the run queue %.2f; %d sleeps, %d peer-window cuts\n",
					who, np, np ? ($3 - a[3]) / np / 1000 : 0, ($4 - a[4]) / 1e9 / dt, ($5 - a[5]) / 1e9 / dt,
					$6 - a[6], $7 - a[7] }' >&2
	done
}

CSV=$OUT/lat.csv
echo "topology,planes,ecn,load,test,mode,rep,t_min_us,p50_us,p99_us,avg_us,load_bw_gbps,status" >"$CSV"
[ -z "${SCHED:-}" ] || : >"$OUT/lat-sched.txt"

# measure TOPO PLANES ECN: every test, mode and load, REPS times.
measure() {
	local topo=$1 planes=$2 ecn=$3 load rep t mode sp loads=$LOADS
	case $topo in pair-*) loads=idle ;; esac
	ip netns exec "$SRV_NS" sockperf server --tcp -i "$SRV_IP" -p $SP_PORT >/dev/null 2>&1 &
	sp=$!
	E2E_PIDS+=($sp)
	sleep 0.3
	for load in $loads; do
		for ((rep = 1; rep <= REPS; rep++)); do
			for t in $TESTS; do
				for mode in $MODES; do
					[ $t = sockperf ] && [ $mode = sleep ] && continue
					BW=
					[ $load = bw ] && load_start
					[ -n "${SCHED:-}" ] && [ "$load $t $mode $rep" = "idle write_lat poll 1" ] && sched_start
					{ [ $load = bw ] || [ "${PROBE:-}" = all ]; } && [ -n "${PROBE:-}" ] &&
						probe_start "$topo-$planes-$ecn-$load-$t-$mode-$rep"
					if [ $t = sockperf ]; then sockperf_run; mode=-; else lat $t $mode; fi
					[ -n "${PROBE_PID:-}" ] && probe_stop
					[ -n "${SCHED_PID:-}" ] && sched_report "$topo/$planes/$ecn"
					[ $load = bw ] && load_stop
					read -r tmin p50 p99 avg <<<"$R"
					log "$topo/$planes/$ecn $load $t $mode rep $rep: p50 ${p50:--} p99 ${p99:--} us${BW:+ (write_bw $BW Gbit/s)}"
					echo "$topo,$planes,$ecn,$load,$t,$mode,$rep,$tmin,$p50,$p99,$avg,$BW,${ERR:-ok}" >>"$CSV"
				done
			done
		done
	done
	kill "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
}

for topo in $TOPOS; do
	log "== $topo ($(($(date +%s) - T_START)) s so far)"
	daemons_stop
	case $topo in
	pair) pair_up; measure pair 0 - ;;
	pair-pinned) pair_up pinned; measure pair-pinned 0 - ;;
	pair-nice) pair_up nice; measure pair-nice 0 - ;;
	f2|f4)
		fabric_up "${topo#f}"
		for ecn in $ECNS; do
			ecn_set "${topo#f}" $ecn
			measure fabric "${topo#f}" $ecn
		done
		daemons_stop
		"$FABRIC" down --name "$NAME" >/dev/null 2>&1 ;;
	*) die "unknown topology $topo (pair f2 f4 pair-pinned pair-nice)" ;;
	esac
done
daemons_stop

# ---------------------------------------------------------------- summary, tables, plot

# min/median/max of column C (1-based) over the rows of one point; a failed run is left out.
SUM=$OUT/lat-summary.csv
echo "topology,planes,ecn,load,test,mode,runs,failed,p50_min,p50_median,p50_max,p99_min,p99_median,p99_max,load_bw_gbps_median" >"$SUM"
tail -n +2 "$CSV" | cut -d, -f1-6 | awk '!seen[$0]++' | while IFS=, read -r topo planes ecn load t mode; do
	tail -n +2 "$CSV" | awk -F, -v k="$topo,$planes,$ecn,$load,$t,$mode" '
		{ key = $1 "," $2 "," $3 "," $4 "," $5 "," $6 }
		key == k { n++; if ($13 != "ok") { f++; next } p50[m + 0] = $9; p99[m + 0] = $10; if ($12 != "") bw[b++ + 0] = $12; m++ }
		function med(a, c,   i, j, t) { for (i = 0; i < c; i++) for (j = i + 1; j < c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return c ? (c % 2 ? a[int(c / 2)] : (a[c / 2 - 1] + a[c / 2]) / 2) : "" }
		function lo(a, c) { med(a, c); return c ? a[0] : "" }
		function hi(a, c) { med(a, c); return c ? a[c - 1] : "" }
		END { printf "%s,%d,%d,%s,%s,%s,%s,%s,%s,%s\n", k, n, f, lo(p50, m), med(p50, m), hi(p50, m),
			lo(p99, m), med(p99, m), hi(p99, m), med(bw, b) }' >>"$SUM"
done

# cell TOPO PLANES ECN LOAD TEST MODE: "p50 / p99" medians (min-max of p50), from the summary.
cell() {
	awk -F, -v k="$1,$2,$3,$4,$5,$6" '$1 "," $2 "," $3 "," $4 "," $5 "," $6 == k {
		if ($9 == "") { printf "failed"; exit }
		printf "%.1f / %.0f (%.1f-%.1f)%s", $10, $13, $9, $11, ($8 > 0 ? " " $8 "/" $7 " failed" : "") }' "$SUM"
}
bwcell() {
	awk -F, -v k="$1,$2,$3,bw,write_lat,poll" '$1 "," $2 "," $3 "," $4 "," $5 "," $6 == k { printf "%s", ($15 == "" ? "-" : sprintf("%.2f", $15)) }' "$SUM"
}
echo "#### Latency, $SIZE B (sockperf: 14 B TCP), microseconds: p50 / p99, medians of $REPS runs of ${SECS} s (p50's min-max)"
echo
echo "Ping-pong tests: half the round trip; read_lat: one READ. poll: mroc-perf's default (libmroc's adaptive polling, MROC_SPIN_US=${MROC_SPIN_US:-default}); sleep: --sleep. Under load: a write_bw of 1 MiB messages between the same hosts during the run (its Gbit/s in the last column). Fabric planes at $RATE_MBIT Mbit/s each; ECN on: a plane marks CE above $CE_THRESHOLD of queue."
echo
echo "| path | ECN | test | mode | idle | under write_bw | write_bw Gbit/s |"
echo "|---|---|---|---|---|---|---|"
tail -n +2 "$SUM" | cut -d, -f1-3 | awk '!seen[$0]++' | while IFS=, read -r topo planes ecn; do
	case $topo in fabric) path="fabric, $planes planes" ;; pair) path="veth pair" ;; pair-pinned) path="veth pair, workers on CPU 1, clients on CPU 0" ;; pair-nice) path="veth pair, mrocd at nice -5" ;; *) path=$topo ;; esac
	for t in write_lat send_lat read_lat sockperf; do
		for mode in poll sleep -; do
			grep -q "^$topo,$planes,$ecn,[a-z]*,$t,$mode," "$SUM" || continue
			echo "| $path | $ecn | $t | $mode |" \
				"$(grep -q "^$topo,$planes,$ecn,idle,$t,$mode," "$SUM" && cell "$topo" "$planes" "$ecn" idle $t $mode || echo -) |" \
				"$(grep -q "^$topo,$planes,$ecn,bw,$t,$mode," "$SUM" && cell "$topo" "$planes" "$ecn" bw $t $mode || echo -) |" \
				"$(bwcell "$topo" "$planes" "$ecn") |"
		done
	done
done
if ! grep -q ",idle," "$SUM" || ! grep -q ",bw," "$SUM"; then
	log "no plot: it wants both loads (LOADS=\"idle bw\")"
elif command -v gnuplot >/dev/null; then
	(cd "$OUT" && gnuplot "$TOP/docs/perf/lat.gp") || log "gnuplot lat.gp failed"
fi
echo
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d), $(($(date +%s) - T_START)) s;" \
	"load average $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end;" \
	"SECS=$SECS REPS=$REPS SIZE=$SIZE RATE_MBIT=$RATE_MBIT CE_THRESHOLD=$CE_THRESHOLD"
