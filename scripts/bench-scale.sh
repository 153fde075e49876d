#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# mroc at 1 .. 4,000 QPs (issue #10, #22): two mrocd on AF_XDP over a 4-plane ECMP
# fabric (scripts/fabric), lossless, daemon defaults (paths 4, MTU 3380), and at
# each point REPS times.  A point is a QP count N (clients x QPs each chosen: 1 x 1,
# 1 x 16 ... 4 x 64, 4 x 250, 16 x 250) or CxQ, C clients of Q QPs each (1x256, 4x64,
# 16x250: the same QPs from one client or many):
#
#   bw     N QPs of write_bw 64 KiB from several mroc-perf clients at once: the
#          receiver's placed bytes per second
#          over SECS once every QP is up and WARM seconds passed; whether every client
#          completed; CPU per GB placed (both daemons and every client and server
#          mroc-perf, utime + stime over the window); each daemon's CPU (% of one core)
#          and private memory (Pss_Anon of /proc/PID/smaps_rollup, which leaves out the
#          clients' shared regions) against the idle daemon's; the engine counters
#          over the whole point (rto, tx_retx, lost at the sender, rx_dup at the
#          receiver) and the clients that failed with "retry counter exceeded"
#   lat    write_lat 8 B (LAT_ITERS ping-pongs, one QP) while N - 1 other QPs are
#          connected and idle (write_bw clients with one 64 B message in flight per
#          QP, stopped with SIGSTOP once their QPs are up): p50 and p99
#   tcp    kernel TCP with N connections on the same fabric: iperf3 -P (above 128,
#          several iperf3 processes of at most 128 streams each), receiver goodput
#
# then the engine alone (mroc-sim engine: CPU per data packet at 1 .. 4,000 QPs, no
# network, every QP busy and one busy among idle ones) and the cluster simulator's
# 16 MiB AllToAll on 64 hosts (wall time, events per second).
#
# Writes docs/perf/scale.csv (a row per run), scale-summary.csv (min/median/max per
# point), scale-engine.txt, scale-alltoall.txt and scale.png (docs/perf/scale.gp);
# prints markdown tables on stdout, progress on stderr.  Root; part of make bench
# (make bench-scale); about 15 minutes on 2 loaded cores.
#
#   scripts/bench-scale.sh
#
# Every run records the 1-minute load average at its start and end; a run where either
# exceeded the CPU count is flagged "*" in the tables (scripts/bench-load.sh: QUIET=1 waits
# for a load below 1 before each run, REFUSE_LOADED=1 leaves flagged runs out of the
# figures, MAX_LOAD, QUIET_LOAD, QUIET_TIMEOUT).
#
# Environment: BUILD (build), OUT (docs/perf), POINTS ("1 16 1x256 4x64 1000 16x250"), REPS (3),
# SECS (4), WARM (1), DEPTH (work requests in flight per QP: 128, perftest's default, up to
# 16 QPs; 4 above, so that what is outstanding when a client's -D ends, 64 KiB x depth x QPs,
# drains in seconds, not minutes; each QP's region holds that many messages, --slots), LAT_ITERS (2000), PARTS ("bw lat tcp engine alltoall"), APPEND (set:
# replace only the rows of PARTS x POINTS in scale.csv, keep the others, summarise all),
# KEEP (set: keep the work directory with logs and every client's output, and of a bw run
# whose clients outlived their -D by a minute both daemons' QPs, rings included), PROFILE (a
# directory: perf record -g of both daemons and the clients over each bw window), COUNT (a
# directory: perf stat of system calls, context switches, faults and CPU time of both
# daemons, the clients and the servers over each bw window, logged per data packet),
# HOST_CPUS (set: each daemon's worker pinned to a CPU of its own, host h on CPU h mod the
# CPUs, as two real hosts would have), TRANSPORT_KEYS (libconfig settings for both mrocd's
# transport group, for an A/B: TRANSPORT_KEYS="peer_host_delay_us = 0;"), SLOTS (messages each QP's regions hold, both
# sides, 1..1024; default the depth: SLOTS=1024 POINTS=16 gives 16 QPs the 1 GiB a side
# that 16 x 250 QPs of 4 x 64 KiB have, so that few QPs write to memory as cold as theirs).
set -u
BL_TAG=bscale
. "$(dirname "$0")/bench-lib.sh"
. "$(dirname "$0")/bench-load.sh"

OUT=${OUT:-$BL_TOP/docs/perf}
POINTS=${POINTS:-1 16 1x256 4x64 1000 16x250}
REPS=${REPS:-3}
SECS=${SECS:-4}
WARM=${WARM:-1}
LAT_ITERS=${LAT_ITERS:-2000}
PARTS=${PARTS:-bw lat tcp engine alltoall}
SIM=$BUILD/mroc-sim

bl_init iperf3 ss
command -v gnuplot >/dev/null || log "no gnuplot: CSV and tables only (apt-get install gnuplot-nox)"
mkdir -p "$OUT"
LOAD_LOG=$BL_DIR/load.log
T_START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
CLK_TCK=$(getconf CLK_TCK)

# layout POINT: "clients QPs_per_client QPs" of a point N (the issue's 16 x 250 at 4,000;
# no client above the default max_qps_per_client of 256) or CxQ.
layout() {
	local n=$1 c
	if [[ $n == *x* ]]; then echo "${n%x*} ${n#*x} $((${n%x*} * ${n#*x}))"; return; fi
	if [ "$n" -le 16 ]; then c=1; elif [ "$n" -le 1000 ]; then c=4; else c=$(((n + 249) / 250)); fi
	echo "$c $((n / c)) $n"
}

# pss_anon H: the daemon's private anonymous memory, KiB.
pss_anon() { awk '$1 == "Pss_Anon:" { print $2 }' "/proc/${DPID[$1]}/smaps_rollup" 2>/dev/null; }
# cpu_ticks H: utime + stime of the daemon (all its threads), clock ticks.
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/${DPID[$1]}/stat" 2>/dev/null; }
# machine_ticks: the whole machine's "user system softirq irq idle+iowait steal" ticks
# (/proc/stat), so that a window says who holds the CPUs that no process's utime + stime
# shows: softirq (veth's NAPI, XDP, the AF_XDP copy run in whatever task is on the CPU
# or in ksoftirqd) and the hard interrupts.
machine_ticks() { awk '$1 == "cpu" { print $2 + $3, $4, $8, $7, $5 + $6, $9; exit }' /proc/stat; }
# clients_ticks: utime + stime of every client and server mroc-perf, summed; a process
# that ended counts with what it had when last seen (call it often: CTICKS keeps those).
declare -A CTICKS=()
# Bash builtins only (no awk or cat per process): at 16 x 250 the window samples 32
# processes four times a second, and a fork per process per sample took a third of a CPU
# from the run it measured (and stretched a 4 s window to 32 s).
clients_ticks() {
	local p s=0 l
	local -a f
	for p in "${CPIDS[@]}" "${SPIDS[@]}"; do
		if { read -r l <"/proc/$p/stat"; } 2>/dev/null; then
			read -r -a f <<<"${l##*) }"
			CTICKS[$p]=$((f[11] + f[12]))
		fi
		s=$((s + ${CTICKS[$p]:-0}))
	done
	echo $s
}
placed() { bl_admin 1 counters | jq '.engine.rx_bytes_placed'; }
client_qps() { bl_admin "$1" counters | jq '.clients.qps'; }
# engine_cnt H: "rto tx_retx lost rx_dup tx_data tx_acks" of host H's engine.
engine_cnt() {
	bl_admin "$1" counters | jq -r '.engine | "\(.rto) \(.tx_retx) \(.lost) \(.rx_dup) \(.tx_data) \(.tx_acks)"' 2>/dev/null ||
		echo "0 0 0 0 0 0"
}
# rto_cnt H: "rto rto_spurious rto_unsampled rto_peer_silent" of host H's engine (when in a point the RTOs
# come: start-up, the window, the drain; and on what paths).
rto_cnt() {
	bl_admin "$1" counters | jq -r '.engine | "\(.rto // 0) \(.rto_spurious // 0) \(.rto_unsampled // 0) \(.rto_peer_silent // 0)"' 2>/dev/null ||
		echo "0 0 0 0"
}
# work_cnt H: host H's worker and client counters, "loops sleeps idle_yields doorbells
# doorbell_syscalls cq_signals cq_signal_syscalls cqes wrs" (what grows with QPs and clients).
work_cnt() {
	bl_admin "$1" counters | jq -r '"\(.worker.loops) \(.worker.sleeps) \(.worker.idle_yields) \(.clients.doorbells) \(.clients.doorbell_syscalls) \(.clients.cq_signals) \(.clients.cq_signal_syscalls) \(.clients.cqes) \(.clients.wrs)"' 2>/dev/null ||
		echo "0 0 0 0 0 0 0 0 0"
}
# stop_cnt H: why host H's engine stopped sending, and where its worker's time went
# (issue #22): "tx_peer_blocked tx_run_cut tx_path_blocked tx_paced tx_batch_full
# tx_ack_delayed tx_acks tx_data busy_ns spin_ns idle_ns rx_stamped rx_wait_ns cpu_ns runq_ns
# tx_peer_kicked".
stop_cnt() {
	bl_admin "$1" counters | jq -r '"\(.engine.tx_peer_blocked // 0) \(.engine.tx_run_cut // 0) \(.engine.tx_path_blocked // 0) \(.engine.tx_paced // 0) \(.engine.tx_batch_full // 0) \(.engine.tx_ack_delayed // 0) \(.engine.tx_acks // 0) \(.engine.tx_data // 0) \(.worker.busy_ns // 0) \(.worker.spin_ns // 0) \(.worker.idle_ns // 0) \(.engine.rx_stamped // 0) \(.engine.rx_wait_ns // 0) \(.worker.cpu_ns // 0) \(.worker.runq_ns // 0) \(.engine.tx_peer_kicked // 0)"' 2>/dev/null ||
		echo "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
}
# clients_csw: context switches (voluntary + not) of every client and server mroc-perf
# thread, summed: their wake-ups.  Like clients_ticks, a process that ended counts with
# what it had when last seen (CCSW).
declare -A CCSW=()
clients_csw() {
	local p s=0 t n k v task
	for p in "${CPIDS[@]}" "${SPIDS[@]}"; do
		t=0 n=0
		for task in /proc/"$p"/task/*/status; do
			while read -r k v _; do
				case $k in voluntary_ctxt_switches: | nonvoluntary_ctxt_switches:) t=$((t + v)) n=1 ;; esac
			done 2>/dev/null <"$task"
		done
		[ "$n" = 0 ] || CCSW[$p]=$t
		s=$((s + ${CCSW[$p]:-0}))
	done
	echo $s
}
# per_gb "NAMES" "DELTAS" BYTES: each count per GB placed, "name N.N ...".
per_gb() {
	awk -v n="$1" -v d="$2" -v b="$3" 'BEGIN { k = split(n, a, " "); split(d, v, " ");
		for (i = 1; i <= k; i++) printf "%s%s %.0f", (i > 1 ? ", " : ""), a[i], (b > 0 ? v[i] / (b / 1e9) : 0) }'
}
delta() { paste -d' ' <(tr ' ' '\n' <<<"$1") <(tr ' ' '\n' <<<"$2") | awk 'NF == 2 { printf "%s%d", s, $2 - $1; s = " " }'; }

# Both daemons idle with no client QP (after a point, the gone clients' QPs linger 2 s).
wait_idle() {
	local h
	for h in 0 1; do
		for _ in $(seq 200); do
			[ "$(client_qps $h)" = 0 ] && [ "$(bl_admin $h status | jq '.qps <= 3')" = true ] && break
			sleep 0.1
		done
	done
	sleep 0.5
}

# clients_start TAG PORT0 C Q ARGS...: C write_bw servers on host 1 and C clients on
# host 0 (Q QPs each, ports PORT0+1..); client pids in CPIDS, server pids in SPIDS.
# SRV_ARGS: the servers' own options (--slots: each side sizes its regions).
SRV_ARGS=()
clients_start() {
	local tag=$1 port0=$2 c=$3 q=$4 i
	shift 4
	CPIDS=() SPIDS=()
	for ((i = 1; i <= c; i++)); do
		bl_bg ip netns exec "${NS[1]}" "$PERF" write_bw -S "$BL_DIR/h1.ctl" --sleep -j -p $((port0 + i)) \
			--mroc-addr "${IP[1]}" --timeout 120 "${SRV_ARGS[@]}" >"$BL_DIR/$tag.$i.srv.json" 2>"$BL_DIR/$tag.$i.srv.err"
		SPIDS+=("$BL_LAST")
	done
	for ((i = 1; i <= c; i++)); do bl_wait_listen "${NS[1]}" $((port0 + i)) "${SPIDS[$((i - 1))]}"; done
	for ((i = 1; i <= c; i++)); do
		bl_bg ip netns exec "${NS[0]}" "$PERF" write_bw -S "$BL_DIR/h0.ctl" --sleep -j -p $((port0 + i)) \
			--timeout 120 -q "$q" "$@" "${MGMT[1]}" >"$BL_DIR/$tag.$i.cli.json" 2>"$BL_DIR/$tag.$i.cli.err"
		CPIDS+=("$BL_LAST")
	done
}

# sending_qps: the sending daemon's client QPs that have posted a send (its counter
# clients.qps_sending: until session 13 a `qp -d` every 0.2 s, whose snapshot of every
# path took 5.1 ms of the sending worker at 1,032 paths, scale12).
sending_qps() { bl_admin 0 counters | jq '.clients.qps_sending'; }

# wait_qps N SECONDS: until N of the sending daemon's client QPs have sent; 1 if they did not.
# Not the receiver's count: each server makes its N listening QPs before its client makes
# any, and a client sends only once all of its own are connected, which at 16 x 250 takes
# seconds after the servers' (mrocd pins every client region as it is registered): a
# window opened on the receiver's count measured the set-up (0.00-0.14 Gbit/s).
wait_qps() {
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		[ "$(sending_qps)" -ge "$1" ] 2>/dev/null && return 0
		kill -0 "${CPIDS[@]}" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

# stall_dump WHAT UNTIL: a client still running at $SECONDS UNTIL (its -D long over) is
# stuck: both daemons' QPs (mroc-cli -d qp: windows, sequence numbers, the client rings'
# indices and flags) into BL_DIR/bw.stall.H.qps.json, and their counters into
# BL_DIR/bw.stall.H.counters.json, while they still exist (KEEP keeps
# them; mroc-perf names the stuck QPs when it gives up).  A 1 x 256 run of the lead's hung
# for 120 s (session 10) and left nothing to tell a lost doorbell from a lost completion.
clients_alive() {
	local p
	for p in "${CPIDS[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
	return 1
}
stall_dump() {
	rm -f "$BL_DIR"/bw.stall.*
	while clients_alive && [ "$SECONDS" -lt "$2" ]; do sleep 0.5; done
	clients_alive || return 0
	bl_admin 0 -d qp >"$BL_DIR/bw.stall.0.qps.json"
	bl_admin 1 -d qp >"$BL_DIR/bw.stall.1.qps.json"
	bl_admin 0 counters >"$BL_DIR/bw.stall.0.counters.json"
	bl_admin 1 counters >"$BL_DIR/bw.stall.1.counters.json"
	# A completion channel the sender could not signal leaves its client asleep (c22f5d1).
	log "$1: clients still running $(($2 - tstart)) s after they started: QP state and" \
		"counters in $BL_DIR/bw.stall.* (KEEP=1 keeps them); completion channels not" \
		"signalled: $(jq '.clients.cq_signal_failed' "$BL_DIR/bw.stall.0.counters.json")"
}

# clients_finish TAG: reap every client and server; FAILED = processes that failed,
# RETRY_EXC = those whose error says the retry counter was exceeded, ERR = the first error.
clients_finish() {
	local tag=$1 i
	FAILED=0 RETRY_EXC=0 ERR=
	for i in "${!CPIDS[@]}"; do
		bl_reap "${CPIDS[$i]}" || FAILED=$((FAILED + 1))
		bl_reap "${SPIDS[$i]}" || FAILED=$((FAILED + 1))
	done
	RETRY_EXC=$(cat "$BL_DIR/$tag".*.err 2>/dev/null | grep -ci "retry counter exceeded")
	ERR=$(cat "$BL_DIR/$tag".*.err 2>/dev/null | grep -v '^$' | head -1 | tr ',' ';' | cut -c1-160)
}

# ---------------------------------------------------------------- bw

# profile_start NAME / profile_end: with PROFILE=DIR, `perf record -g` over the window on
# the sending daemon, the receiving daemon and every client and server mroc-perf, into
# DIR/NAME.{send,recv,clients}.data (perf report -i FILE --no-children --sort sym).
# The window's CPU figures then include perf's own cost: profile in a run of its own.
PERF_PIDS=()
profile_start() {
	local pids
	PERF_PIDS=()
	[ -n "${PROFILE:-}" ] || return 0
	mkdir -p "$PROFILE"
	pids=$(IFS=,; echo "${CPIDS[*]},${SPIDS[*]}")
	perf record -q -F 999 -g -o "$PROFILE/$1.send.data" -p "${DPID[0]}" -- sleep "$SECS" >/dev/null 2>&1 &
	PERF_PIDS+=("$!")
	perf record -q -F 999 -g -o "$PROFILE/$1.recv.data" -p "${DPID[1]}" -- sleep "$SECS" >/dev/null 2>&1 &
	PERF_PIDS+=("$!")
	perf record -q -F 999 -g -o "$PROFILE/$1.clients.data" -p "$pids" -- sleep "$SECS" >/dev/null 2>&1 &
	PERF_PIDS+=("$!")
}
profile_end() {
	local p
	for p in "${PERF_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	PERF_PIDS=()
}

# count_start NAME / count_end NAME DATA: with COUNT=DIR, `perf stat` over the window of
# what load does not change much: system calls (all, and the ones the data path makes),
# context switches, page faults, CPU time; for the sending daemon, the receiving one, the
# sending clients and the receiving servers, into DIR/NAME.{send,recv,cli,srv}.csv;
# count_end logs each per data packet the sender sent in the window (DATA).  Issue #22
# deliverable 2: what grows with clients and QPs, measured at any load.
COUNT_EVENTS=task-clock,context-switches,minor-faults,raw_syscalls:sys_enter
COUNT_EVENTS+=,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_ppoll
COUNT_EVENTS+=,syscalls:sys_enter_poll,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait
COUNT_EVENTS+=,syscalls:sys_enter_io_submit,syscalls:sys_enter_io_getevents
COUNT_EVENTS+=,syscalls:sys_enter_write,syscalls:sys_enter_read,syscalls:sys_enter_sched_yield
COUNT_EVENTS+=,syscalls:sys_enter_futex
COUNT_PIDS=()
count_start() {
	local g pids
	COUNT_PIDS=()
	[ -n "${COUNT:-}" ] || return 0
	mkdir -p "$COUNT"
	for g in send recv cli srv; do
		case $g in
		send) pids=${DPID[0]} ;;
		recv) pids=${DPID[1]} ;;
		cli) pids=$(IFS=,; echo "${CPIDS[*]}") ;;
		srv) pids=$(IFS=,; echo "${SPIDS[*]}") ;;
		esac
		# Until count_end ends its sleep: the window lasts SECS plus what the load adds.
		perf stat -x, -e "$COUNT_EVENTS" -o "$COUNT/$1.$g.csv" -p "$pids" -- sleep 3600 \
			>/dev/null 2>&1 &
		COUNT_PIDS+=("$!")
	done
}
count_end() {
	local p c g line=
	[ -n "${COUNT:-}" ] || return 0
	for p in "${COUNT_PIDS[@]}"; do
		for c in $(pgrep -P "$p" -x sleep); do kill "$c"; done
		wait "$p" 2>/dev/null
	done
	COUNT_PIDS=()
	# "NAME per data packet: send task-clock-us X, syscalls X, ...": the event's short name
	for g in send recv cli srv; do
		line+="; $g "$(awk -F, -v d="$2" '$1 ~ /^[0-9.]+$/ && $3 != "" {
			n = $3; sub(/^syscalls:sys_enter_/, "", n); sub(/^raw_syscalls:sys_enter$/, "syscalls", n)
			v = $1; if (n == "task-clock") { n = "cpu-ns"; v *= 1e6 }
			printf "%s%s %.4g", (k++ ? ", " : ""), n, (d > 0 ? v / d : 0) }' "$COUNT/$1.$g.csv" 2>/dev/null)
	done
	log "$1 per data packet ($2 sent in the window)${line}"
}

# bw_run POINT REP: one aggregate write_bw point; appends a row to the CSV.
bw_run() {
	local pt=$1 n rep=$2 c q depth dur t0 t1 b0 b1 k0a k0b k1a k1b kc0 kc1 m0a m0b e0a e0b tup gbps i tstart
	local w0a w0b w1a w1b s0 s1 r0 r1 r2 r3 rs ru d0 d1 mt0 mt1
	bl_daemons_check
	read -r c q n <<<"$(layout "$pt")"
	load_begin
	# Each client runs for its own -D from its first message: long enough that all
	# are still sending through the window however the start-up spreads out (16 x 250:
	# the last client sent 47 s after the first on a quiet machine, 89 s at load 20,
	# when -D 48 had ended the first ones before the window opened: 0 Gbit/s).
	dur=$((WARM + SECS + 3 + n / 40))
	e0a=$(engine_cnt 0) e0b=$(engine_cnt 1) r0=$(rto_cnt 0)
	tup=$EPOCHREALTIME
	# Regions of as many messages as each QP keeps in flight (perftest: 2): mrocd pins
	# them, and mroc-perf's default (up to 256 MiB a process) pinned 4 GiB per host at
	# 16 x 250 before any data moved.
	depth=${DEPTH:-$([ "$n" -le 16 ] && echo 128 || echo 4)}
	SRV_ARGS=(--slots "${SLOTS:-$((depth < 2 ? 2 : depth))}")
	tstart=$SECONDS
	clients_start bw 18600 "$c" "$q" -s 65536 -D "$dur" -t "$depth" "${SRV_ARGS[@]}"
	SRV_ARGS=()
	if ! wait_qps "$n" $((30 + n / 20)); then
		log "bw $n QPs rep $rep: only $(sending_qps) of $n QPs came up and sent"
	fi
	tup=$(awk -v a="$tup" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
	sleep "$WARM"
	CTICKS=()
	clients_ticks >/dev/null
	t0=$EPOCHREALTIME b0=$(placed) k0a=$(cpu_ticks 0) k0b=$(cpu_ticks 1) kc0=$(clients_ticks) mt0=$(machine_ticks)
	CCSW=()
	w0a=$(work_cnt 0) w0b=$(work_cnt 1) s0=$(clients_csw) r1=$(rto_cnt 0)
	x0a=$(stop_cnt 0) x0b=$(stop_cnt 1)
	m0a=0 m0b=0
	profile_start "bw.${c}x$q.$rep"
	d0=$(engine_cnt 0)
	count_start "bw.${c}x$q.$rep"
	# the window ends after SECS or as soon as a client finishes
	for ((i = 0; i < SECS * 4; i++)); do
		sleep 0.25
		clients_ticks >/dev/null
		clients_csw >/dev/null
		kill -0 "${CPIDS[@]}" 2>/dev/null || break
		[ $((i % 4)) = 1 ] || continue
		m=$(pss_anon 0); [ "${m:-0}" -gt $m0a ] && m0a=$m
		m=$(pss_anon 1); [ "${m:-0}" -gt $m0b ] && m0b=$m
	done
	t1=$EPOCHREALTIME b1=$(placed) k1a=$(cpu_ticks 0) k1b=$(cpu_ticks 1) kc1=$(clients_ticks) mt1=$(machine_ticks)
	w1a=$(work_cnt 0) w1b=$(work_cnt 1) s1=$(clients_csw) r2=$(rto_cnt 0)
	x1a=$(stop_cnt 0) x1b=$(stop_cnt 1)
	profile_end
	d1=$(engine_cnt 0)
	count_end "bw.${c}x$q.$rep" $(($(cut -d' ' -f5 <<<"$d1") - $(cut -d' ' -f5 <<<"$d0")))
	m=$(pss_anon 0); [ "${m:-0}" -gt $m0a ] && m0a=$m
	m=$(pss_anon 1); [ "${m:-0}" -gt $m0b ] && m0b=$m
	stall_dump "bw $n QPs rep $rep" $((tstart + dur + 60))
	clients_finish bw
	load_end
	gbps=$(awk -v a="$b0" -v b="$b1" -v t0="$t0" -v t1="$t1" 'BEGIN { if (t1 > t0 && b > a) printf "%.4f", (b - a) * 8 / (t1 - t0) / 1e9; else print 0 }')
	local cpua cpub cpuc cpugb win ca cb perfavg
	win=$(awk -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", t1 - t0 }')
	cpua=$(awk -v a="$k0a" -v b="$k1a" -v w="$win" -v hz="$CLK_TCK" 'BEGIN { printf "%.1f", (b - a) / hz / w * 100 }')
	cpub=$(awk -v a="$k0b" -v b="$k1b" -v w="$win" -v hz="$CLK_TCK" 'BEGIN { printf "%.1f", (b - a) / hz / w * 100 }')
	cpuc=$(awk -v a="$kc0" -v b="$kc1" -v w="$win" -v hz="$CLK_TCK" 'BEGIN { printf "%.1f", (b - a) / hz / w * 100 }')
	# CPU seconds of every process (both daemons, every mroc-perf) per GB placed
	cpugb=$(awk -v d=$((k1a - k0a + k1b - k0b + kc1 - kc0)) -v a="$b0" -v b="$b1" -v hz="$CLK_TCK" \
		'BEGIN { if (b > a) printf "%.3f", d / hz / ((b - a) / 1e9) }')
	ca=$(delta "$e0a" "$(engine_cnt 0)") cb=$(delta "$e0b" "$(engine_cnt 1)") r3=$(rto_cnt 0)
	perfavg=$(cat "$BL_DIR"/bw.*.cli.json 2>/dev/null | jq -s '[.[].results[0].bw_avg_gbps // 0] | add' 2>/dev/null)
	# ca: sender "rto tx_retx lost rx_dup tx_data"; cb: receiver's rx_dup
	read -r rto retx lost _ txdata _ <<<"$ca"
	read -r _ _ _ rxdup _ rxacks <<<"$cb"
	log "bw $n QPs ($c x $q) rep $rep: $gbps Gbit/s over $win s (QPs up in $tup s), CPU $cpua/$cpub %" \
		"(clients $cpuc %, $cpugb CPU s/GB), Pss_Anon $((m0a / 1024))/$((m0b / 1024)) MiB, rto $rto retx $retx" \
		"dup $rxdup, ACKs per data packet $(awk -v a="${rxacks:-0}" -v d="${txdata:-0}" 'BEGIN { printf "%.3f", d ? a / d : 0 }')," \
		"failed $FAILED${ERR:+ ($ERR)}; load $LOAD_B -> $LOAD_E$LOADED"
	# What each GB placed cost in events: the sending daemon's worker loops, sleeps and
	# sched_yields, the doorbells its clients rang and the epoll_waits that took them, the
	# completion channels it signalled and the io_submits that took them; the receiver's
	# loops and sleeps; the clients' and servers' context switches.
	# Where the sender's RTOs came (a lossless run should have none): while the QPs came up
	# and the window opened, in the window, or while the clients drained; how many of them
	# the next ACK showed needless, and how many were on paths that had no ACK yet (armed
	# on rto_init or the host's estimate alone), and how many came with the whole peer host
	# silent since the timer was armed (a stalled receiver, not a lost path).
	read -r rs ru rp <<<"$(delta "${r0#* }" "${r3#* }")"
	log "bw $n QPs rep $rep RTOs: $(delta "${r0%% *}" "${r1%% *}") before the window," \
		"$(delta "${r1%% *}" "${r2%% *}") in it, $(delta "${r2%% *}" "${r3%% *}") after it;" \
		"$rs spurious, $ru on paths with no RTT sample yet, $rp with the peer host silent"
	# The machine's CPUs over the window, in CPUs (2.00 = both busy), against what the
	# processes above account for: the rest of user + system is other work on the machine,
	# softirq and irq the kernel's packet path wherever it ran.
	log "bw $n QPs rep $rep machine CPUs: $(awk -v m0="$mt0" -v m1="$mt1" -v p=$((k1a - k0a + k1b - k0b + kc1 - kc0)) \
		-v w="$win" -v hz="$CLK_TCK" 'BEGIN { split(m0, a, " "); split(m1, b, " "); for (i = 1; i <= 6; i++) d[i] = (b[i] - a[i]) / hz / w
		printf "user %.2f, system %.2f, softirq %.2f, irq %.2f, idle %.2f, steal %.2f; mroc processes %.2f", d[1], d[2], d[3], d[4], d[5], d[6], p / hz / w }')"
	log "bw $n QPs rep $rep per GB: sender $(per_gb "loops sleeps yields doorbells doorbell_syscalls cq_signals cq_signal_syscalls cqes wrs" \
		"$(delta "$w0a" "$w1a")" $((b1 - b0))); receiver $(per_gb "loops sleeps yields" \
		"$(delta "$w0b" "$w1b")" $((b1 - b0))); clients $(per_gb "csw" $((s1 - s0)) $((b1 - b0)))"
	# Why the sender stopped, per data packet it sent (counts: the same at any load):
	# QPs parked on the peer's full window (and of those, runs cut short, whose ACK
	# then waits for ack_delay at the receiver), QPs with no path window, paced QPs,
	# batches the engine filled; the receiver's ACKs sent at ack_delay's end, per ACK.
	# And the share of each worker's window time with work, spinning with none, asleep;
	# of that time, on a CPU and waiting on a run queue for one (schedstat): work and spin
	# are clock spans, so a worker preempted on a busy host counts its wait in them.
	# (Differences in awk as floating point: mawk's %d stops at 2^31, and ns counts pass it.)
	log "bw $n QPs rep $rep stops: $(awk -v a0="$x0a" -v a1="$x1a" -v b0="$x0b" -v b1="$x1b" 'BEGIN {
		split(a0, p, " "); split(a1, q, " "); for (i in q) s[i] = q[i] - p[i]
		split(b0, p, " "); split(b1, q, " "); for (i in q) r[i] = q[i] - p[i]
		d = s[8] > 0 ? s[8] : 1; k = r[7] > 0 ? r[7] : 1
		printf "sender per data packet: peer_blocked %.4f, peer_kicked %.4f, run_cut %.4f, path_blocked %.4f, paced %.4f, batch_full %.4f; receiver ack_delayed per ACK %.3f, ", s[1] / d, s[16] / d, s[2] / d, s[3] / d, s[4] / d, s[5] / d, r[6] / k
		printf "wait in host per packet %.1f us (sender, ACKs: %.1f us); ", (r[12] > 0 ? r[13] / r[12] / 1e3 : 0), (s[12] > 0 ? s[13] / s[12] / 1e3 : 0)
		ts = s[9] + s[11]; tr = r[9] + r[11]; if (ts <= 0) ts = 1; if (tr <= 0) tr = 1
		printf "worker time work/spin/asleep: sender %.2f/%.2f/%.2f, receiver %.2f/%.2f/%.2f", (s[9] - s[10]) / ts, s[10] / ts, s[11] / ts, (r[9] - r[10]) / tr, r[10] / tr, r[11] / tr
		printf "; worker on CPU/run queue: sender %.2f/%.2f, receiver %.2f/%.2f", s[14] / ts, s[15] / ts, r[14] / tr, r[15] / tr }')"
	load_refused && gbps= cpugb=
	echo "bw,$n,$c,$q,$rep,$gbps,$win,$tup,$cpua,$cpub,$m0a,$m0b,$IDLE_A,$IDLE_B,$rto,$retx,$lost,$rxdup,$txdata,$FAILED,$RETRY_EXC,${perfavg:-},,,${ERR:-ok},${c}x$q,$LOAD_B,$LOAD_E,$LOADED,$cpuc,$cpugb" >>"$CSV"
	if [ -n "${KEEP:-}" ]; then mkdir -p "$BL_DIR/keep.bw.$n.$rep" && cp "$BL_DIR"/bw.* "$BL_DIR/keep.bw.$n.$rep/"; fi
	wait_idle
}

# ---------------------------------------------------------------- lat

# lat_run POINT REP: write_lat among N - 1 idle QPs.
lat_run() {
	local pt=$1 n rep=$2 c q held=0 i sp cp p50 p99 lq=0
	bl_daemons_check
	read -r c q n <<<"$(layout "$pt")"
	load_begin
	CPIDS=() SPIDS=()
	if [ "$n" -gt 1 ]; then
		# N - 1 holders: the layout's clients, the first with one QP fewer
		local hc=() hs=() qi
		for ((i = 1; i <= c; i++)); do
			qi=$q
			[ "$i" = 1 ] && qi=$((q - 1))
			[ "$qi" -gt 0 ] || continue
			clients_start "hold$i" $((18700 + 10 * i)) 1 "$qi" -s 64 -t 1 -D 600
			hc+=("${CPIDS[@]}") hs+=("${SPIDS[@]}")
		done
		CPIDS=("${hc[@]}") SPIDS=("${hs[@]}")
		wait_qps $((n - 1)) $((30 + n / 20)) || log "lat $n: only $(sending_qps) of $((n - 1)) idle QPs came up and sent"
		sleep 0.5
		for i in "${CPIDS[@]}"; do kill -STOP "$i"; done
		# the stopped clients' last messages complete; from now on their QPs are idle
		sleep 1
		held=$(client_qps 1)
	fi
	local port=18690 e0a e1a k0a k1a t0 win
	e0a=$(engine_cnt 0)
	bl_bg ip netns exec "${NS[1]}" "$PERF" write_lat -S "$BL_DIR/h1.ctl" -j -p $port --mroc-addr "${IP[1]}" \
		>"$BL_DIR/lat.srv.json" 2>"$BL_DIR/lat.srv.err"
	sp=$BL_LAST
	bl_wait_listen "${NS[1]}" $port "$sp"
	t0=$EPOCHREALTIME k0a=$(cpu_ticks 0) k1a=$(cpu_ticks 1)
	bl_bg ip netns exec "${NS[0]}" "$PERF" write_lat -S "$BL_DIR/h0.ctl" -j -p $port -s 8 -n "$LAT_ITERS" \
		"${MGMT[1]}" >"$BL_DIR/lat.cli.json" 2>"$BL_DIR/lat.cli.err"
	cp=$BL_LAST
	bl_reap "$cp"
	bl_reap "$sp"
	load_end
	win=$(awk -v t0="$t0" -v t1="$EPOCHREALTIME" 'BEGIN { printf "%.2f", t1 - t0 }')
	local cpua cpub
	cpua=$(awk -v a="$k0a" -v b="$(cpu_ticks 0)" -v w="$win" -v hz="$CLK_TCK" 'BEGIN { printf "%.1f", (b - a) / hz / w * 100 }')
	cpub=$(awk -v a="$k1a" -v b="$(cpu_ticks 1)" -v w="$win" -v hz="$CLK_TCK" 'BEGIN { printf "%.1f", (b - a) / hz / w * 100 }')
	p50=$(jq -r '.results[0].t_typical_us // empty' "$BL_DIR/lat.cli.json" 2>/dev/null)
	p99=$(jq -r '.results[0].p99_us // empty' "$BL_DIR/lat.cli.json" 2>/dev/null)
	read -r rto retx lost _ _ <<<"$(delta "$e0a" "$(engine_cnt 0)")"
	ERR=
	[ -n "$p50" ] || ERR=$(cat "$BL_DIR/lat.cli.err" "$BL_DIR/lat.srv.err" | grep -v '^$' | head -1 | tr ',' ';' | cut -c1-160)
	local m0a m0b
	m0a=$(pss_anon 0) m0b=$(pss_anon 1)
	log "lat $n QPs rep $rep ($((held + 1)) QPs up): p50 ${p50:-?} p99 ${p99:-?} us, CPU $cpua/$cpub %, rto $rto retx $retx${ERR:+ FAILED: $ERR}; load $LOAD_B -> $LOAD_E$LOADED"
	load_refused && p50= p99=
	for i in "${CPIDS[@]}"; do bl_stop "$i"; done
	for i in "${SPIDS[@]}"; do bl_stop "$i"; done
	echo "lat,$n,$c,$q,$rep,,$win,,$cpua,$cpub,$m0a,$m0b,$IDLE_A,$IDLE_B,$rto,$retx,$lost,,,,,,$p50,$p99,${ERR:-ok},${c}x$q,$LOAD_B,$LOAD_E,$LOADED,," >>"$CSV"
	wait_idle
}

# ---------------------------------------------------------------- tcp

# tcp_run N REP: N TCP connections host 0 -> host 1, in iperf3 processes of <= 128 streams.
tcp_run() {
	local n rep=$2 procs i k rest sp=() cp=() port gbps retr
	read -r _ _ n <<<"$(layout "$1")"
	procs=$(((n + 127) / 128))
	load_begin
	for ((i = 0; i < procs; i++)); do
		bl_bg ip netns exec "${NS[1]}" timeout $((SECS + WARM + 240)) iperf3 -s -1 -p $((5201 + i)) >/dev/null 2>&1
		sp+=("$BL_LAST")
	done
	for ((i = 0; i < procs; i++)); do bl_wait_listen "${NS[1]}" $((5201 + i)) "${sp[$i]}"; done
	rest=$n
	for ((i = 0; i < procs; i++)); do
		k=$((rest / (procs - i)))
		rest=$((rest - k))
		bl_bg ip netns exec "${NS[0]}" timeout $((SECS + WARM + 230)) iperf3 -c "${IP[1]}" -p $((5201 + i)) \
			-O "$WARM" -t "$SECS" -P "$k" -J >"$BL_DIR/tcp.$i.json" 2>/dev/null
		cp+=("$BL_LAST")
	done
	for i in "${cp[@]}" "${sp[@]}"; do bl_reap "$i"; done
	load_end
	gbps=$(cat "$BL_DIR"/tcp.*.json | jq -s '[.[].end.sum_received.bits_per_second // 0] | add / 1e9' 2>/dev/null)
	retr=$(cat "$BL_DIR"/tcp.*.json | jq -s '[.[].end.sum_sent.retransmits // 0] | add' 2>/dev/null)
	ERR=$(cat "$BL_DIR"/tcp.*.json | jq -rs '[.[].error // empty] | first // empty' 2>/dev/null | tr ',' ';')
	rm -f "$BL_DIR"/tcp.*.json
	[ -z "$ERR" ] || gbps=	# a part of the connections is no figure
	log "tcp $n connections ($procs iperf3) rep $rep: $gbps Gbit/s, retransmits $retr${ERR:+ ERROR: $ERR}; load $LOAD_B -> $LOAD_E$LOADED"
	load_refused && gbps=
	echo "tcp,$n,$procs,,$rep,$gbps,,,,,,,,,,$retr,,,,,,,,,${ERR:-ok},$n,$LOAD_B,$LOAD_E,$LOADED,," >>"$CSV"
}

# ---------------------------------------------------------------- main

CSV=$OUT/scale.csv
SUM=$OUT/scale-summary.csv
TABLES=$BL_DIR/tables.md
md() { echo "$*" >>"$TABLES"; }

if grep -qwE 'bw|lat|tcp' <<<"$PARTS"; then
	if [ -z "${APPEND:-}" ] || [ ! -s "$CSV" ]; then
		echo "part,qps,clients,qps_per_client,rep,gbps,window_s,qps_up_s,cpu_a_pct,cpu_b_pct,pss_anon_a_kib,pss_anon_b_kib,idle_pss_anon_a_kib,idle_pss_anon_b_kib,rto,tx_retx,lost,rx_dup,tx_data,failed,retry_exc,mroc_perf_sum_gbps,lat_p50_us,lat_p99_us,status,point,load_start,load_end,loaded,cpu_clients_pct,cpu_s_per_gb" >"$CSV"
	else
		# APPEND: the rows of the parts and points measured now are replaced, the others kept
		# (a point is "CxQ" for bw and lat, the QP count for tcp)
		labels=$(for pt in $POINTS; do read -r c q n <<<"$(layout "$pt")"; echo "${c}x$q $n"; done | tr '\n' ' ')
		awk -F, -v parts="$PARTS" -v points="$labels" 'BEGIN { split(parts, a, " "); for (i in a) P[a[i]] = 1
			split(points, b, " "); for (i in b) N[b[i]] = 1 } NR == 1 || !(($1 in P) && ($26 in N))' "$CSV" >"$CSV.new" &&
			mv "$CSV.new" "$CSV"
	fi
	bl_fabric_up 4 2
	# Rings that hold a message of every QP at once (as tests/e2e/test_scale.sh);
	# transport and limits at the daemon's defaults.
	# HOST_CPUS: each host's worker on a CPU of its own (daemon.cpu_affinity: host h on CPU
	# h mod the CPUs), as two hosts would have; the clients and the fabric's forwarding
	# still go where the scheduler puts them.
	for h in 0 1; do
		bl_daemon_start $h "umem_frames = 16384; ring_size = 4096;" "${TRANSPORT_KEYS:-}" "" \
			"${HOST_CPUS:+cpu_affinity = [ $((h % $(nproc))) ];}"
	done
	bl_daemons_ready
	sleep 1
	IDLE_A=$(pss_anon 0) IDLE_B=$(pss_anon 1)
	log "idle daemons: Pss_Anon $IDLE_A / $IDLE_B KiB; load $(cut -d' ' -f1-3 /proc/loadavg)"
	for n in $POINTS; do
		for ((rep = 1; rep <= REPS; rep++)); do
			! grep -qw bw <<<"$PARTS" || bw_run "$n" "$rep"
			! grep -qw lat <<<"$PARTS" || lat_run "$n" "$rep"
			! grep -qw tcp <<<"$PARTS" || tcp_run "$n" "$rep"
		done
	done
	bl_daemons_check
	bl_daemons_stop
	[ "$BL_RESTARTS" = 0 ] || log "mrocd was found gone and restarted $BL_RESTARTS time(s) during the run"

	# min/median/max per point ("CxQ"; tcp by QP count), of every row in the CSV (with
	# APPEND, earlier runs' too); a row without a point column is an older run's: by layout
	awk -F, 'NR > 1 && $26 == "" { $26 = ($1 == "tcp" ? $2 : $3 "x" $4) } 1' OFS=, "$CSV" >"$CSV.new" &&
		mv "$CSV.new" "$CSV"
	ALL_POINTS=$(awk -F, 'NR > 1 && $1 != "tcp" { print $2, $3, $26 }' "$CSV" | sort -k1,1g -k2,2g -u |
		awk '{ print $3 }' | tr '\n' ' ')
	echo "part,qps,metric,min,median,max,point" >"$SUM"
	col() { awk -F, -v p="$1" -v pt="$2" -v c="$3" '$1 == p && $26 == pt && $c != "" { print $c }' "$CSV" | stats; }
	for pt in $ALL_POINTS; do
		read -r _ _ n <<<"$(layout "$pt")"
		for m in "bw gbps 6" "bw cpu_a 9" "bw cpu_b 10" "bw cpu_clients 30" "bw cpu_s_per_gb 31" "bw pss_a 11" \
			"bw pss_b 12" "bw rto 15" "bw tx_retx 16" "bw rx_dup 18" "bw failed 20" "bw retry_exc 21" \
			"lat p50 23" "lat p99 24" "lat rto 15" "tcp gbps 6" "tcp retx 16"; do
			read -r p name c <<<"$m"
			if [ "$p" = tcp ]; then k=$n; else k=$pt; fi
			echo "$p,$n,$name,$(col "$p" "$k" "$c" | tr ' ' ','),$pt" >>"$SUM"
		done
		# private memory above the idle daemon's (of the same run), MiB
		for ab in "a 11 13" "b 12 14"; do
			read -r side c ci <<<"$ab"
			echo "bw,$n,pss_${side}_above_idle_mib,$(awk -F, -v pt="$pt" -v c="$c" -v ci="$ci" '$1 == "bw" && $26 == pt && $c != "" {
				printf "%.2f\n", ($c - $ci) / 1024 }' "$CSV" | stats | tr ' ' ','),$pt" >>"$SUM"
		done
	done
	get() { awk -F, -v p="$1" -v pt="$2" -v m="$3" -v f="${4:-5}" '$1 == p && $7 == pt && $3 == m { print $f }' "$SUM"; }
	mmm() { awk -F, -v p="$1" -v pt="$2" -v m="$3" -v d="${4:-3}" '$1 == p && $7 == pt && $3 == m {
		if ($4 == "-") print "-"; else printf "%.*f / %.*f / %.*f", d, $4, d, $5, d, $6 }' "$SUM"; }
	# star PART POINT: "*" when a run of it was flagged loaded
	star() { awk -F, -v p="$1" -v pt="$2" '$1 == p && $26 == pt && $29 == "*" { s = "*" } END { print s }' "$CSV"; }
	md "#### Aggregate write_bw, latency, memory and CPU by QP count (4 planes, lossless)"
	md ""
	md "min / median / max of the runs (REPS=$REPS). Gbit/s: the receiver's placed bytes over ${SECS} s once every QP is up plus ${WARM} s. CPU: % of one core (utime + stime) over that window, sender / receiver. CPU s per GB: every process's CPU time (both daemons, every client and server mroc-perf) over that window per GB placed; x 1 QP: against the first point's median. Memory: Pss_Anon above the idle daemon's ($(awk -F, '$1 == "bw" { print $13 }' "$CSV" | stats | awk '{ printf "%.0f", $2 / 1024 }') / $(awk -F, '$1 == "bw" { print $14 }' "$CSV" | stats | awk '{ printf "%.0f", $2 / 1024 }') MiB), MiB, sender / receiver, largest sample. Counters: sums over the runs. write_lat: 8 B among N - 1 idle QPs, $LAT_ITERS ping-pongs."
	md ""
	md "| QPs (clients x QPs) | mroc write_bw Gbit/s | x 1 QP (median) | CPU s per GB, all processes | x 1 QP (median) | TCP, N connections, Gbit/s | write_lat p50 us | write_lat p99 us | CPU % sender / receiver / clients (median) | Pss_Anon above idle, MiB (median) | rto / tx_retx / rx_dup | clients failed / RETRY_EXC |"
	md "|---|---|---|---|---|---|---|---|---|---|---|---|"
	first=${ALL_POINTS%% *}
	g1=$(get bw "$first" gbps) c1=$(get bw "$first" cpu_s_per_gb)
	for pt in $ALL_POINTS; do
		sum_of() { awk -F, -v p="$1" -v pt="$2" -v c="$3" '$1 == p && $26 == pt { s += $c } END { print s + 0 }' "$CSV"; }
		read -r c q n <<<"$(layout "$pt")"
		md "| $n ($c x $q) | $(mmm bw "$pt" gbps)$(star bw "$pt") |" \
			"$(awk -v a="$(get bw "$pt" gbps)" -v b="$g1" 'BEGIN { if (b > 0 && a != "-") printf "%.2f", a / b; else print "-" }') |" \
			"$(mmm bw "$pt" cpu_s_per_gb 2)$(star bw "$pt") |" \
			"$(awk -v a="$(get bw "$pt" cpu_s_per_gb)" -v b="$c1" 'BEGIN { if (b > 0 && a != "-") printf "%.2f", a / b; else print "-" }') |" \
			"$(mmm tcp "$pt" gbps)$(star tcp "$n") | $(mmm lat "$pt" p50 1)$(star lat "$pt") | $(mmm lat "$pt" p99 1)$(star lat "$pt") |" \
			"$(get bw "$pt" cpu_a) / $(get bw "$pt" cpu_b) / $(get bw "$pt" cpu_clients) |" \
			"$(get bw "$pt" pss_a_above_idle_mib) / $(get bw "$pt" pss_b_above_idle_mib) |" \
			"$(sum_of bw "$pt" 15) / $(sum_of bw "$pt" 16) / $(sum_of bw "$pt" 18) | $(sum_of bw "$pt" 20) / $(sum_of bw "$pt" 21) |"
	done
	md ""
	md "$(load_note)"
	md ""
	if command -v gnuplot >/dev/null; then
		(cd "$OUT" && gnuplot "$BL_TOP/docs/perf/scale.gp") || log "gnuplot failed"
	fi
fi

if grep -qw engine <<<"$PARTS"; then
	if "$SIM" engine --help >/dev/null 2>&1; then
		log "engine: mroc-sim engine --qps 1,16,256,1000,4000 (all active, then --active 1)"
		{
			echo "\$ mroc-sim engine --qps 1,16,256,1000,4000"
			"$SIM" engine --qps 1,16,256,1000,4000
			echo "\$ mroc-sim engine --qps 1,16,256,1000,4000 --active 1"
			"$SIM" engine --qps 1,16,256,1000,4000 --active 1
		} >"$OUT/scale-engine.txt" 2>&1 || log "mroc-sim engine failed"
	else
		echo "mroc-sim engine: not in this build" >"$OUT/scale-engine.txt"
	fi
	md "#### The engine alone (mroc-sim engine, two engines in one thread, no network)"
	md ""
	md '```'
	while IFS= read -r l; do md "$l"; done <"$OUT/scale-engine.txt"
	md '```'
	md ""
fi

if grep -qw alltoall <<<"$PARTS"; then
	log "alltoall: mroc-sim cluster --op alltoall --bytes 16M --transport metaroce -v"
	s0=$EPOCHREALTIME
	"$SIM" cluster --op alltoall --bytes 16M --transport metaroce -v >"$OUT/scale-alltoall.txt" 2>&1 ||
		log "mroc-sim cluster failed"
	wall=$(awk -v a="$s0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	echo "wall clock: $wall s" >>"$OUT/scale-alltoall.txt"
	md "#### Cluster simulator: 16 MiB AllToAll, 64 hosts, MetaRoCE"
	md ""
	md '```'
	while IFS= read -r l; do md "$l"; done < <(grep -iE 'event|wall|alltoall' "$OUT/scale-alltoall.txt" | head -20)
	md '```'
	md ""
fi

cat "$TABLES"
echo "machine: $(bl_machine), $(($(date +%s) - T_START)) s; load average $LOAD_START at the start," \
	"$(cut -d' ' -f1-3 /proc/loadavg) at the end; POINTS=\"$POINTS\" REPS=$REPS SECS=$SECS WARM=$WARM LAT_ITERS=$LAT_ITERS"
