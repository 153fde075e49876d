#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Real packets over the multi-plane ECMP fabric (scripts/fabric), every
# comparison in one run on the same machine:
#
#   loss      random loss 0 / 0.1 / 1 / 5 / 10 % on every one of 4 planes, twice:
#             planes unlimited (CPU-bound) and planes at RATE_MBIT each
#             (fabric-bound): mroc write_bw MetaRoCE 4 and 8 paths, RoCEv2
#             mode, kernel TCP (iperf3, 1 and 4 streams); goodput and goodput
#             as a fraction of the mode's own lossless figure
#   planes    1 / 2 / 4 / 8 planes at RATE_MBIT each: MetaRoCE with 2 x P paths
#             and RoCEv2; throughput / (P x one plane)
#   failover  4 planes at RATE_MBIT, a long write_bw; after 2 s the busiest
#             plane gets 10% loss (degraded) or is blackholed: rate before and
#             after, time to recover (receiver sampled every 200 ms)
#   jitter    each packet 0..J us later at random on every one of 4 planes
#             (netem: packets of a flow overtake each other), planes unlimited:
#             MetaRoCE 4 paths, RoCEv2 mode, kernel TCP 1 stream; goodput and
#             the fraction of the mode's own figure without jitter
#   incast    3 senders, 1 receiver, 4 planes at RATE_MBIT, receiver
#             link_rate_gbps = their sum: Jain fairness and total, rate hints
#             on and off
#
# Writes docs/perf/fabric-*.csv (raw rows and summaries) and fabric-*.png
# (gnuplot, docs/perf/fabric-*.gp), prints markdown tables on stdout and
# progress on stderr.  Root; part of make bench; about 12 minutes on 2 cores.
#
#   scripts/bench-fabric.sh
#
# Environment: BUILD (default build), OUT (docs/perf), SECS (3: seconds measured
# per bandwidth run, after WARM (1) seconds not counted), REPS (2: runs per point,
# medians reported), LONG (8: seconds of a failover run), RATE_MBIT (250: TBF rate
# of a plane), CE_THRESHOLD (64kb: a rate-limited plane marks CE on ECN-capable
# packets above this much queue, as an ECN switch does; off: drop-tail only; the
# queue counted is bpf/impair.bpf.c's virtual one, which sits in front of the TBF and
# cannot see its 64 KiB bucket, so under a steady overload it holds the real queue plus
# the burst: the default marks as soon as any packet waits in the TBF (issue #27,
# kept as the sweep's fabric since session 11: every figure of #27 is on it, and the
# simulator matches it with --like-fabric); CE_THRESHOLD=128kb marks above 64 KiB of
# real queue, as a switch with a 64 KiB threshold would: mroc-sim run --like-fabric
# --ecn 128K is that fabric), EXPERIMENTS ("loss planes failover jitter incast"), JITTERS ("0 20
# 100 500": us of the jitter experiment; keep 0 in it), JITTER_MODES ("metaroce4 rocev2 tcp1"), LOSSES ("0 0.1 1 5 10": loss %% of the loss sweep; keep 0 in it: the fractions are of it), LOSS_MODES ("metaroce4 metaroce8 rocev2 tcp1 tcp4"), PLANE_COUNTS
# ("1 2 4 8"), SWEEPS ("cpu fabric": the loss sweep's halves), RUNS
# ($OUT/fabric-runs: per mroc run of the loss and planes experiments, both daemons'
# counter deltas and the sender's `mroc-cli -j -d path show` after the warm-up and
# near the end, so each RTO and repath has a reason to read; a line per run in
# RUNS/runs.csv), KEEP (set: keep the work directory with the daemons' logs and the
# sender's paths sampled during failover).
#
# Only the fabric's own namespaces carry traffic; everything started here is
# stopped by pid and the fabric removed on exit, also on failure or Ctrl-C.
set -u
BL_TAG=bench-fabric
BL_PEERS=star
. "$(dirname "$0")/bench-lib.sh"

TOP=$BL_TOP
OUT=${OUT:-$TOP/docs/perf}
SECS=${SECS:-3}
WARM=${WARM:-1}
REPS=${REPS:-2}
LONG=${LONG:-8}
RATE_MBIT=${RATE_MBIT:-250}
CE_THRESHOLD=${CE_THRESHOLD:-64kb}
EXPERIMENTS=${EXPERIMENTS:-loss planes failover jitter incast}
JITTERS=${JITTERS:-0 20 100 500}
JITTER_MODES=${JITTER_MODES:-metaroce4 rocev2 tcp1}
SWEEPS=${SWEEPS:-cpu fabric}
RUNS=${RUNS:-$OUT/fabric-runs}
PLANE_COUNTS=${PLANE_COUNTS:-1 2 4 8}
# A plane's payload capacity: TBF counts the frame (Ethernet 14 + IPv4 20 + UDP 8 +
# MetaRoCE 60 + payload), so 3392 of every 3494 bytes are payload.
PAYLOAD_FRAC=$(awk -v m=$MROC_MTU 'BEGIN { printf "%.6f", m / (m + 102) }')

bl_init iperf3
command -v gnuplot >/dev/null || log "no gnuplot: CSV and tables only (apt-get install gnuplot-nox)"
mkdir -p "$OUT" "$RUNS"
T_START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- fabric, daemons

# fabric_up PLANES HOSTS [RATE]: a fresh fabric (bl_fabric_up), planes rate-limited by
# TBF and marking CE above CE_THRESHOLD when RATE (e.g. 250mbit) is given.
fabric_up() {
	local p
	bl_fabric_up "$1" "$2"
	if [ -n "${3:-}" ]; then
		for ((p = 1; p <= NPLANES; p++)); do
			"$FABRIC" set "$p" --name "$BL_NAME" rate "$3" ce_threshold "$CE_THRESHOLD" \
				>/dev/null || die "rate on plane $p"
		done
	fi
}


# daemons_start [TRANSPORT_KEYS]: mrocd on every host (bl_daemon_start; BL_PEERS=star:
# the last host is the receiver, the others its peers), the keys for the receiver.
daemons_start() {
	local h keys="rto_min_us = 5000; rto_init_us = 20000;"
	for ((h = 0; h < NHOSTS - 1; h++)); do bl_daemon_start $h "" "$keys"; done
	bl_daemon_start $((NHOSTS - 1)) "" "$keys ${1:-}"
	bl_daemons_ready
}

# Sender's engine counters "tx_data tx_retx rto repath".
counters() {
	bl_admin "$1" counters |
		jq -r '.engine | "\(.tx_data) \(.tx_retx) \(.rto) \(.repath)"' 2>/dev/null || echo "0 0 0 0"
}

# counters_json H: host H's whole `mroc-cli -j -s counters` document ({} if none).
counters_json() { bl_admin "$1" -s counters || echo '{}'; }
# counters_delta A B: the engine counters of document B minus those of A, as JSON.
counters_delta() {
	jq -cn --argjson a "$1" --argjson b "$2" \
		'($b.engine // {}) | with_entries(select(.value | type == "number") | .value -= (($a.engine // {})[.key] // 0))' 2>/dev/null || echo '{}'
}
RUNS_CSV=$RUNS/runs.csv
RUN_KEYS="tx_data tx_retx lost lost_rack rto rto_spurious rto_undone rto_unlost ce repath repath_timeout repath_loss repath_ce repath_slow repath_keepalive repath_spread repath_explore repath_back repath_back_held repath_slow_back repath_explore_back repath_look repath_look_busy"
[ -s "$RUNS_CSV" ] || echo "run,gbps,${RUN_KEYS// /,},rx_dup,rx_tx_acks" >"$RUNS_CSV"
RUN_SEQ=0

# ---------------------------------------------------------------- runs

# perf_server TAG HOST PORT ARGS... / perf_client TAG HOST SERVER_HOST PORT ARGS...:
# mroc-perf write_bw in completion-channel mode; the pid is left in LASTPID.
perf_server() {
	local tag=$1 h=$2 port=$3
	shift 3
	ip netns exec "${NS[$h]}" timeout $((LONG + 40)) "$PERF" write_bw --mrocd-socket "$BL_DIR/h$h.ctl" --sleep -j -p "$port" \
		--mroc-addr "${IP[$h]}" "$@" >"$BL_DIR/$tag.srv.json" 2>"$BL_DIR/$tag.srv.err" &
	LASTPID=$!
	BL_PIDS+=("$!")
}
perf_client() {
	local tag=$1 h=$2 s=$3 port=$4
	shift 4
	ip netns exec "${NS[$h]}" timeout $((LONG + 40)) "$PERF" write_bw --mrocd-socket "$BL_DIR/h$h.ctl" --sleep -j -p "$port" "$@" \
		"${MGMT[$s]}" >"$BL_DIR/$tag.cli.json" 2>"$BL_DIR/$tag.cli.err" &
	LASTPID=$!
	BL_PIDS+=("$!")
}
# mroc-perf's own whole-run average (Gbit/s) of a finished client in AVG, or empty;
# the reason of a failure in ERR.
perf_result() {
	ERR=
	AVG=$(jq -r '.results[0].bw_avg_gbps // empty' "$BL_DIR/$1.cli.json" 2>/dev/null)
	if [ -z "$AVG" ]; then
		ERR=$(cat "$BL_DIR/$1.cli.err" "$BL_DIR/$1.srv.err" 2>/dev/null | grep -v '^$' | head -1 | tr ',' ';')
		[ -n "$ERR" ] || ERR="no result"
	fi
}

# cpu_snap: "total idle" jiffies of the whole machine; cpu_busy A B: busy fraction
# between two snapshots (every process on the machine, not only ours).
cpu_snap() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $5 + $6; exit }' /proc/stat; }
cpu_busy() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); t = y[1] - x[1]; i = y[2] - x[2]
	if (t > 0) printf "%.2f", 1 - i / t }'; }

# rx_snap HOST: the time, "ok" and "peer/qpn=rx_bytes" of every QP of that mrocd that has
# received payload; "TIME fail" if mrocd did not answer (three tries: under load the
# admin socket can be slow, and a lost snapshot read as a run of 0 Gbit/s).
rx_snap() {
	local j t i
	for i in 1 2 3; do
		t=$EPOCHREALTIME
		j=$("$CLI" -j -S "$BL_DIR/h$1.admin" qp show 2>/dev/null) && [ -n "$j" ] && break
		j=
	done
	if [ -z "$j" ]; then echo "$t fail"; return; fi
	echo "$t ok $(jq -r '[.qps[]? | select(.rx_bytes > 0) | "\(.peer)/\(.qpn)=\(.rx_bytes)"] | join(" ")' <<<"$j" 2>/dev/null)"
}
# steady SNAP_A SNAP_B: Gbit/s received between two snapshots, per peer ("peer gbps"
# lines) and in total (a last line "total gbps"); nothing if either snapshot failed.  A
# QP that had received nothing at the first (it connected late) counts from 0.
steady() {
	printf '%s\n%s\n' "$1" "$2" | awk '
		$2 == "fail" { bad = 1 }
		NR == 1 { t0 = $1; for (i = 3; i <= NF; i++) { split($i, kv, "="); a[kv[1]] = kv[2] } }
		NR == 2 && !bad { dt = $1 - t0
			for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[2] > a[kv[1]] + 0) {
				split(kv[1], pq, "/"); g[pq[1]] += (kv[2] - a[kv[1]]) * 8 / dt / 1e9 } }
			for (p in g) { printf "%s %.6f\n", p, g[p]; t += g[p] }
			printf "total %.6f\n", t }'
}

# sleep_until T0 SECS: sleep until SECS after the time T0 ($EPOCHREALTIME); at once if past.
sleep_until() {
	sleep "$(awk -v t="$1" -v s="$2" -v now="$EPOCHREALTIME" 'BEGIN { d = t + s - now; printf "%.3f", (d > 0 ? d : 0) }')"
}

# mroc_run TAG ARGS...: host 0 writes to host NHOSTS-1 for WARM + SECS seconds; RES
# is the receiver's goodput over the SECS after the first WARM (empty if the run
# failed), AVG mroc-perf's whole-run average, ERR why it failed, CNT the sender's
# counter deltas "data retx rto repath", PPK the data packets per plane, CPU the
# machine's busy fraction while measuring.
mroc_run() {
	local tag=$1 sp cp c0 c1 p0 p1 r=$((NHOSTS - 1)) sa sb u0 j0 j1 k0 k1 name t0
	shift
	RUN_SEQ=$((RUN_SEQ + 1))
	name=$(printf '%03d-%s' $RUN_SEQ "${RUN_NAME:-$tag}")
	c0=$(counters 0)
	j0=$(counters_json 0)
	k0=$(counters_json $r)
	p0=$(bl_plane_pkts)
	perf_server "$tag" $r 18515 "$@"
	sp=$LASTPID
	sleep 0.3
	t0=$EPOCHREALTIME
	perf_client "$tag" 0 $r 18515 -s 65536 -D $((SECS + WARM)) "$@"
	cp=$LASTPID
	# the transfer starts within a few ms of the client and lasts WARM + SECS s:
	# measure from WARM to 0.35 s before its end, timed from the client's start (at
	# load 20-26 the snapshots and the path dump took long enough that a measure
	# slept for after them came after the QP was gone, and read 0 Gbit/s)
	sleep_until "$t0" "$WARM.05"
	sa=$(rx_snap $r)
	u0=$(cpu_snap)
	# the sender's paths while the QP exists: after the warm-up, and near the end
	bl_admin 0 -d path show >"$RUNS/$name.paths-mid.json"
	sleep_until "$t0" "$(awk -v w="$WARM" -v s="$SECS" 'BEGIN { print w + s - 0.35 }')"
	sb=$(rx_snap $r)
	CPU=$(cpu_busy "$u0" "$(cpu_snap)")
	bl_admin 0 -d path show >"$RUNS/$name.paths-end.json"
	bl_reap "$cp"
	bl_reap "$sp"
	perf_result "$tag"
	RES=
	[ -n "$ERR" ] || RES=$(steady "$sa" "$sb" | awk '$1 == "total" { print $2 }')
	c1=$(counters 0)
	j1=$(counters_json 0)
	k1=$(counters_json $r)
	p1=$(bl_plane_pkts)
	CNT=$(paste -d' ' <(tr ' ' '\n' <<<"$c0") <(tr ' ' '\n' <<<"$c1") | awk 'NF == 2 { printf "%s%d", s, $2 - $1; s = " " }')
	# the whole run's counters of both daemons (sender: host 0, receiver: host r)
	jq -n --argjson s "$(counters_delta "$j0" "$j1")" --argjson r "$(counters_delta "$k0" "$k1")" \
		'{sender: $s, receiver: $r}' >"$RUNS/$name.counters.json" 2>/dev/null
	echo "$name,${RES:-},$(jq -r --arg k "$RUN_KEYS" '[.sender[($k | split(" "))[]] // 0] + [.receiver.rx_dup // 0, .receiver.tx_acks // 0] | join(",")' \
		"$RUNS/$name.counters.json" 2>/dev/null)" >>"$RUNS_CSV"
	PPK=$(paste -d' ' <(tr ' ' '\n' <<<"$p0") <(tr ' ' '\n' <<<"$p1") | awk 'NF == 2 { printf "%s%d", s, $2 - $1; s = ":" }')
	[ -z "$ERR" ] || log "$tag: FAILED: $ERR"
}

# tcp_run STREAMS: iperf3 host 0 -> host 1, the first WARM seconds omitted, then SECS;
# RES Gbit/s, CNT "segments retransmits", CPU as for mroc_run.
tcp_run() {
	local sp cp u0 p0
	p0=$(bl_plane_pkts)
	ip netns exec "${NS[1]}" timeout $((SECS + WARM + 30)) iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
	sp=$!
	BL_PIDS+=("$!")
	sleep 0.3
	AVG=
	ip netns exec "${NS[0]}" timeout $((SECS + WARM + 25)) iperf3 -c "${IP[1]}" -p 5201 -O "$WARM" -t "$SECS" -P "$1" -J \
		>"$BL_DIR/tcp.json" 2>/dev/null &
	cp=$!
	BL_PIDS+=("$!")
	sleep "$WARM.2"
	u0=$(cpu_snap)
	sleep "$(awk -v s="$SECS" 'BEGIN { print s - 0.3 }')"
	CPU=$(cpu_busy "$u0" "$(cpu_snap)")
	bl_reap "$cp"
	bl_reap "$sp"
	RES=$(jq -r '.end.sum_received.bits_per_second / 1e9 // empty' "$BL_DIR/tcp.json" 2>/dev/null)
	# segments sent (bytes / MSS at LINK_MTU with timestamps) and retransmitted
	CNT=$(jq -r --argjson mss $((LINK_MTU - 52)) '"\(.end.sum_sent.bytes / $mss | floor) \(.end.sum_sent.retransmits // 0)"' \
		"$BL_DIR/tcp.json" 2>/dev/null || echo "0 0")
	PPK=$(paste -d' ' <(tr ' ' '\n' <<<"$p0") <(bl_plane_pkts | tr ' ' '\n') | awk 'NF == 2 { printf "%s%d", s, $2 - $1; s = ":" }')
	ERR=
	[ -n "$RES" ] || { ERR=$(jq -r '.error // "no result"' "$BL_DIR/tcp.json" 2>/dev/null | tr ',' ';'); log "tcp: FAILED: $ERR"; }
}

# Receiver sampler: every 200 ms, the time, the payload bytes its QPs received and
# the data packets each plane forwarded; with KEEP set, also the sender's paths.
sampler() {
	local j next
	next=$EPOCHREALTIME
	while :; do
		j=$("$CLI" -j -S "$1" qp show 2>/dev/null)
		echo "$EPOCHREALTIME $(jq -r '[.qps[]? | "\(.qpn)=\(.rx_bytes)"] | join(",") | if . == "" then "-" else . end' \
			<<<"$j" 2>/dev/null || echo -) $(bl_plane_pkts bytes)"
		[ -z "${KEEP:-}" ] || echo "$EPOCHREALTIME $("$CLI" -j -S "$2" path show 2>/dev/null |
			jq -c '[.paths[] | select(.qpn > 65538) | [.path_id, .sport, .state, .sent, .retx, .timeouts, .repaths]]')" >>"$3"
		next=$(awk -v n="$next" 'BEGIN { printf "%.6f", n + 0.2 }')
		sleep "$(awk -v n="$next" -v now="$EPOCHREALTIME" 'BEGIN { d = n - now; printf "%.3f", (d > 0 ? d : 0) }')"
	done
}

stop_pid() { kill -TERM "$1" 2>/dev/null; bl_reap "$1"; }

# median of the numbers on stdin (empty lines skipped); "" when none
median() { sort -g | awk 'NF { a[n++] = $1 } END { if (n) printf "%.4f", n % 2 ? a[int(n/2)] : (a[n/2-1] + a[n/2]) / 2 }'; }

r2() { awk -v x="$1" 'BEGIN { if (x == "") print "-"; else printf "%.2f", x }'; }
r3() { awk -v x="$1" 'BEGIN { if (x == "") print "-"; else printf "%.3f", x }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print ""; else printf "%.4f", a / b }'; }

TABLES=$BL_DIR/tables.md
: >"$TABLES"
md() { echo "$*" >>"$TABLES"; }

plot() { # NAME.gp
	command -v gnuplot >/dev/null || return 0
	(cd "$OUT" && gnuplot "$TOP/docs/perf/$1") || log "gnuplot $1 failed"
}

# ---------------------------------------------------------------- loss sweep

LOSSES=${LOSSES:-0 0.1 1 5 10}
LOSS_MODES=${LOSS_MODES:-metaroce4 metaroce8 rocev2 tcp1 tcp4}

exp_loss() {
	local csv=$OUT/fabric-loss.csv sweep rate loss rep mode p args
	echo "sweep,plane_rate_mbit,loss_pct,mode,rep,gbps,tx_data,tx_retx,rto,repath,plane_pkts,status,mroc_perf_avg_gbps,cpu_busy" >"$csv"
	for sweep in $SWEEPS; do
		if [ $sweep = cpu ]; then rate=0; fabric_up 4 2; else rate=$RATE_MBIT; fabric_up 4 2 "${RATE_MBIT}mbit"; fi
		daemons_start
		for loss in $LOSSES; do
			for ((p = 1; p <= 4; p++)); do bl_plane_set $p loss "$loss"; done
			for ((rep = 1; rep <= REPS; rep++)); do
				for mode in $LOSS_MODES; do
					case $mode in
					metaroce4) args="--paths 4" ;;
					metaroce8) args="--paths 8" ;;
					rocev2) args="--mode rocev2" ;;
					esac
					CNT="0 0 0 0" PPK=
					case $mode in
					tcp*) tcp_run "${mode#tcp}"; CNT="$CNT 0 0" ;;
					*) RUN_NAME="loss-$sweep-$loss-$mode-$rep" mroc_run "loss" $args ;;
					esac
					log "loss [$sweep] $loss% $mode rep $rep: ${RES:-failed} Gbit/s (data retx rto repath: $CNT)"
					echo "$sweep,$rate,$loss,$mode,$rep,$RES,${CNT// /,},$PPK,${ERR:-ok},$AVG,$CPU" >>"$csv"
				done
			done
		done
	done
	# Summary: median per point, fraction of the mode's own lossless median; a failed
	# run counts as 0 Gbit/s.
	local sum=$OUT/fabric-loss-summary.csv g g0 f n nf
	echo "sweep,plane_rate_mbit,loss_pct,mode,gbps_median,fraction_of_lossless,retx_pct,runs,failed,cpu_busy_median" >"$sum"
	for sweep in $SWEEPS; do
		for mode in $LOSS_MODES; do
			g0=
			for loss in $LOSSES; do
				g=$(awk -F, -v s=$sweep -v l=$loss -v m=$mode '$1 == s && $3 == l && $4 == m { print ($6 == "" ? 0 : $6) }' "$csv" | median)
				n=$(awk -F, -v s=$sweep -v l=$loss -v m=$mode '$1 == s && $3 == l && $4 == m' "$csv" | wc -l)
				nf=$(awk -F, -v s=$sweep -v l=$loss -v m=$mode '$1 == s && $3 == l && $4 == m && $6 == ""' "$csv" | wc -l)
				# retransmitted share of the data packets (TCP: segments) sent
				f=$(awk -F, -v s=$sweep -v l=$loss -v m=$mode '$1 == s && $3 == l && $4 == m { d += $7; r += $8 } END { if (d) printf "%.2f", 100 * r / d }' "$csv")
				[ "$loss" = 0 ] && g0=$g
				rate=$(awk -F, -v s=$sweep 'NR > 1 && $1 == s { print $2; exit }' "$csv")
				echo "$sweep,$rate,$loss,$mode,$g,$(div "$g" "$g0"),$f,$n,$nf,$(awk -F, -v s=$sweep -v l=$loss -v m=$mode '$1 == s && $3 == l && $4 == m { print $14 }' "$csv" | median)" >>"$sum"
			done
		done
	done
	for sweep in $SWEEPS; do
		if [ $sweep = cpu ]; then
			md "#### Loss sweep, 4 planes unlimited (CPU-bound)"
		else
			md "#### Loss sweep, 4 planes at $RATE_MBIT Mbit/s each (fabric-bound: $(awk -v r=$RATE_MBIT -v f=$PAYLOAD_FRAC 'BEGIN { printf "%.3f", 4 * r * f / 1000 }') Gbit/s of payload)"
		fi
		md ""
		md "Goodput at the receiver in Gbit/s (median of $REPS runs, each measured over the ${SECS} s after the first ${WARM} s (mroc: from the receiver's counters; the last 0.35 s are left out too); TCP: iperf3 -O $WARM -t $SECS) and, in parentheses, the fraction of the mode's own lossless goodput; last column: retransmitted share of the data packets (TCP: of the segments) sent."
		md ""
		md "| loss % | MetaRoCE 4 paths | MetaRoCE 8 paths | RoCEv2 mode | TCP 1 stream | TCP 4 streams | retx % (Meta 4 / Meta 8 / RoCEv2 / TCP 1 / TCP 4) |"
		md "|---|---|---|---|---|---|---|"
		for loss in $LOSSES; do
			local row="| $loss |" rx=
			for mode in $LOSS_MODES; do
				row+=" $(awk -F, -v s=$sweep -v l=$loss -v m=$mode '$1 == s && $3 == l && $4 == m {
					printf "%.2f (%.2f)%s", $5, $6, ($9 > 0 ? " " $9 "/" $8 " failed" : "") }' "$sum") |"
				rx+="${rx:+ / }$(awk -F, -v s=$sweep -v l=$loss -v m=$mode '$1 == s && $3 == l && $4 == m { print $7 }' "$sum")"
			done
			md "$row $rx |"
		done
		md ""
	done
	plot fabric-loss.gp
}

# ---------------------------------------------------------------- jitter

# Planes that reorder (scripts/fabric set P jitter J), unlimited: how much of each mode's own
# goodput without jitter it keeps.  Session 31: the engine took a late packet beyond dupthresh
# for a loss (its resend and a window cut each); a path that sees one now waits by time.
exp_jitter() {
	local csv=$OUT/fabric-jitter.csv j rep mode p args g g0
	echo "jitter_us,mode,rep,gbps,tx_data,tx_retx,rto,repath,status,cpu_busy" >"$csv"
	fabric_up 4 2
	# netem is a kernel option (CONFIG_NET_SCH_NETEM); without it there is nothing to measure
	if ! "$FABRIC" set 1 --name "$BL_NAME" jitter 10 >/dev/null 2>&1; then
		log "jitter: this kernel has no netem qdisc: skipped"
		md "#### Jitter: skipped (this kernel has no netem qdisc)"
		md ""
		return
	fi
	daemons_start
	for j in $JITTERS; do
		for ((p = 1; p <= 4; p++)); do bl_plane_set $p jitter "$j"; done
		for ((rep = 1; rep <= REPS; rep++)); do
			for mode in $JITTER_MODES; do
				args=
				case $mode in
				metaroce*) args="--paths ${mode#metaroce}" ;;
				rocev2) args="--mode rocev2" ;;
				esac
				CNT="0 0 0 0"
				case $mode in
				tcp*) tcp_run "${mode#tcp}"; CNT="$CNT" ;;
				*) RUN_NAME="jitter-$j-$mode-$rep" mroc_run "jitter" $args ;;
				esac
				log "jitter $j us $mode rep $rep: ${RES:-failed} Gbit/s (data retx rto repath: $CNT)"
				echo "$j,$mode,$rep,$RES,${CNT// /,},${ERR:-ok},$CPU" >>"$csv"
			done
		done
	done
	for ((p = 1; p <= 4; p++)); do bl_plane_set $p jitter off; done
	md "#### Jitter: every packet 0..J us later at random on each of 4 planes (unlimited; netem reorders)"
	md ""
	md "Goodput in Gbit/s, median of $REPS runs, and in parentheses the fraction of the mode's own median without jitter."
	md ""
	md "| jitter us | $(tr ' ' '\n' <<<"$JITTER_MODES" | paste -sd'|' | sed 's/|/ | /g') |"
	md "|---|$(for mode in $JITTER_MODES; do printf -- '---|'; done)"
	for j in $JITTERS; do
		local row="| $j |"
		for mode in $JITTER_MODES; do
			g=$(awk -F, -v j=$j -v m=$mode '$1 == j && $2 == m { print ($4 == "" ? 0 : $4) }' "$csv" | median)
			g0=$(awk -F, -v m=$mode '$1 == 0 && $2 == m { print ($4 == "" ? 0 : $4) }' "$csv" | median)
			row+=" $(awk -v g="$g" -v f="$(div "$g" "$g0")" 'BEGIN { printf "%.2f (%s)", g, f }') |"
		done
		md "$row"
	done
	md ""
}

# ---------------------------------------------------------------- plane scaling

exp_planes() {
	local csv=$OUT/fabric-planes.csv P rep mode g used
	echo "planes,plane_rate_mbit,mode,paths,rep,gbps,planes_used,tx_data,tx_retx,rto,repath,plane_pkts,status,mroc_perf_avg_gbps,cpu_busy" >"$csv"
	for P in $PLANE_COUNTS; do
		fabric_up $P 2 "${RATE_MBIT}mbit"
		daemons_start
		for ((rep = 1; rep <= REPS; rep++)); do
			for mode in metaroce rocev2; do
				if [ $mode = metaroce ]; then RUN_NAME="planes-$P-$mode-$rep" mroc_run planes --paths $((2 * P)); else RUN_NAME="planes-$P-$mode-$rep" mroc_run planes --mode rocev2; fi
				# planes that carried at least a quarter of an even share of the data
				used=$(tr ':' '\n' <<<"$PPK" | awk '{ a[NR] = $1; t += $1 } END { for (i in a) if (t && a[i] >= t / NR / 4) u++; print u + 0 }')
				log "planes $P $mode rep $rep: ${RES:-failed} Gbit/s, planes used $used ($PPK)"
				echo "$P,$RATE_MBIT,$mode,$([ $mode = metaroce ] && echo $((2 * P)) || echo 1),$rep,$RES,$used,${CNT// /,},$PPK,${ERR:-ok},$AVG,$CPU" >>"$csv"
			done
		done
	done
	local sum=$OUT/fabric-planes-summary.csv one cap
	cap=$(awk -v r=$RATE_MBIT -v f=$PAYLOAD_FRAC 'BEGIN { printf "%.4f", r * f / 1000 }')
	one=$(awk -F, '$1 == 1 && $3 == "metaroce" { print ($6 == "" ? 0 : $6) }' "$csv" | median)
	echo "planes,plane_rate_mbit,mode,gbps_median,one_plane_gbps,x_p_one_plane,plane_payload_cap_gbps,x_p_cap,planes_used_median,runs,failed,cpu_busy_median" >"$sum"
	for P in $PLANE_COUNTS; do
		for mode in metaroce rocev2; do
			g=$(awk -F, -v p=$P -v m=$mode '$1 == p && $3 == m { print ($6 == "" ? 0 : $6) }' "$csv" | median)
			used=$(awk -F, -v p=$P -v m=$mode '$1 == p && $3 == m { print $7 }' "$csv" | median)
			echo "$P,$RATE_MBIT,$mode,$g,$one,$(div "$g" "$(awk -v p=$P -v o="$one" 'BEGIN { print p * o }')"),$cap,$(div "$g" "$(awk -v p=$P -v c=$cap 'BEGIN { print p * c }')"),$used,$(awk -F, -v p=$P -v m=$mode '$1 == p && $3 == m' "$csv" | wc -l),$(awk -F, -v p=$P -v m=$mode '$1 == p && $3 == m && $6 == ""' "$csv" | wc -l),$(awk -F, -v p=$P -v m=$mode '$1 == p && $3 == m { print $15 }' "$csv" | median)" >>"$sum"
		done
	done
	md "#### Plane scaling: P planes at $RATE_MBIT Mbit/s each (TBF)"
	md ""
	md "One plane = MetaRoCE's median over 1 plane in this run: $(r3 "$one") Gbit/s (the TBF's payload capacity: $(r3 "$cap")). Goodput at the receiver, medians of $REPS runs, each over the ${SECS} s after the first ${WARM} s; \"planes used\": planes that carried at least a quarter of an even share of the data packets."
	md ""
	md "| planes | MetaRoCE paths | MetaRoCE Gbit/s | / (P x one plane) | / (P x payload cap) | planes used | CPU busy | RoCEv2 Gbit/s | / (P x one plane) | CPU busy |"
	md "|---|---|---|---|---|---|---|---|---|---|"
	for P in $PLANE_COUNTS; do
		md "$(awk -F, -v p=$P '$1 == p && $3 == "metaroce" { m = sprintf("| %d | %d | %.3f | %.3f | %.3f | %g | %.2f |", p, 2 * p, $4, $6, $8, $9, $12) }
			$1 == p && $3 == "rocev2" { r = sprintf(" %.3f | %.3f | %.2f |", $4, $6, $12) } END { print m r }' "$sum")"
	done
	md ""
	plot fabric-planes.gp
}

# ---------------------------------------------------------------- failover

# rate series of a sampler file relative to time T0, per 200 ms window: "t gbps
# window_start plane1_gbps .. planeP_gbps" (t = the window's end; the rate sums the
# growth of each QP's received bytes, so a QP going away counts as 0; plane rates are
# the bytes the plane forwarded in the data direction, frames with headers).
series() {
	awk -v t0="$2" '
		{ delete cur; n = split($2, q, ","); for (k = 1; k <= n; k++) if (split(q[k], kv, "=") == 2) cur[kv[1]] = kv[2] }
		NR > 1 { dt = $1 - pt; d = 0
			for (k in cur) if ((k in prev) && cur[k] > prev[k]) d += cur[k] - prev[k]
			printf "%.3f %.4f %.3f", $1 - t0, (dt > 0 ? d * 8 / dt / 1e9 : 0), pt - t0
			for (i = 3; i <= NF; i++) printf " %.4f", (dt > 0 ? ($i - pp[i]) * 8 / dt / 1e9 : 0)
			printf "\n" }
		{ pt = $1; delete prev; for (k in cur) prev[k] = cur[k]; for (i = 3; i <= NF; i++) pp[i] = $i }' "$1"
}

exp_failover() {
	local csv=$OUT/fabric-failover.csv sum=$OUT/fabric-failover-summary.csv ev mode cp sp smp t0 te tset p0 p1 busy \
		remain cap thr args rep
	cap=$(awk -v r=$RATE_MBIT -v f=$PAYLOAD_FRAC 'BEGIN { printf "%.4f", r * f / 1000 }')
	echo "event,mode,rep,t_s,gbps,plane1_gbps,plane2_gbps,plane3_gbps,plane4_gbps" >"$csv"
	echo "event,mode,rep,plane,before_gbps,after_gbps,after_over_before,remaining_cap_gbps,after_over_remaining,dip_min_gbps,recover_ms,completed,note" >"$sum"
	fabric_up 4 2 "${RATE_MBIT}mbit"
	daemons_start
	md "#### Degraded and failed plane: 4 planes at $RATE_MBIT Mbit/s, event 2 s into a ${LONG} s write_bw"
	md ""
	md "The event hits the plane that carried most of the transfer's data in its first 2 s (with ECMP, plane 2 may carry none of a QP's paths). Before: mean over the 1.2 s before the event; after: from 1 s after the event to the end. Remaining capacity: the TBF payload capacity of the 3 other planes ($(r3 "$(awk -v c=$cap 'BEGIN { print 3 * c }')") Gbit/s), or of one plane for RoCEv2 mode, whose single path cannot use another. Recovered: the end of the first 200 ms window after the event at >= 85% of that."
	md ""
	md "| event | mode | run | plane | before Gbit/s | after Gbit/s | after / before | after / remaining capacity | lowest 200 ms | recovered after | transfer |"
	md "|---|---|---|---|---|---|---|---|---|---|---|"
	for ev in degraded blackhole; do
		for ((rep = 1; rep <= REPS; rep++)); do
		for mode in metaroce rocev2; do
			if [ $mode = metaroce ]; then args="--paths 4"; remain=$(awk -v c=$cap 'BEGIN { print 3 * c }'); else args="--mode rocev2"; remain=$cap; fi
			thr=$(awk -v r=$remain 'BEGIN { print 0.85 * r }')
			smp=$BL_DIR/samples.$ev.$mode.$rep
			sampler "$BL_DIR/h1.admin" "$BL_DIR/h0.admin" "$smp.paths" >"$smp" &
			sp=$!
			BL_PIDS+=("$!")
			perf_server fo 1 18515 $args
			local srv=$LASTPID
			sleep 0.3
			t0=$EPOCHREALTIME
			perf_client fo 0 1 18515 -s 65536 -D "$LONG" $args
			cp=$LASTPID
			sleep 0.5
			p0=$(bl_plane_pkts)
			sleep 1.5
			p1=$(bl_plane_pkts)
			busy=$(paste -d' ' <(tr ' ' '\n' <<<"$p0") <(tr ' ' '\n' <<<"$p1") |
				awk 'NF == 2 && $2 - $1 > m { m = $2 - $1; b = NR } END { print b + 0 }')
			[ "$busy" -ge 1 ] || busy=2
			tset=$EPOCHREALTIME
			if [ $ev = degraded ]; then bl_plane_set "$busy" loss 10; else bl_plane_set "$busy" blackhole on; fi
			te=$EPOCHREALTIME
			bl_reap "$cp"
			bl_reap "$srv"
			perf_result fo
			# keep sampling to the planned end, so a failed transfer shows as 0
			while awk -v t0="$t0" -v d="$LONG" -v now="$EPOCHREALTIME" 'BEGIN { exit !(now < t0 + d + 0.5) }'; do sleep 0.2; done
			stop_pid "$sp"
			if [ $ev = degraded ]; then bl_plane_set "$busy" loss 0; else bl_plane_set "$busy" blackhole off; fi
			series "$smp" "$te" | awk -v e=$ev -v m=$mode -v r="$rep" '{ printf "%s,%s,%s,%s,%s,%s,%s,%s,%s\n", e, m, r, $1, $2, $4, $5, $6, $7 }' >>"$csv"
			local st
			st=$(series "$smp" "$te" | awk -v d="$LONG" -v t0="$t0" -v te="$te" -v thr="$thr" -v remain="$remain" '
				{ t = $1; r = $2; ws = $3 }
				t <= 0 && ws >= -1.25 { bs += r; bn++ }
				ws >= 1 && t <= (t0 + d - te) - 0.3 { as += r; an++ }
				ws >= 0 && t <= 1.5 && (dip == "" || r < dip) { dip = r }
				ws >= 0 && rec == "" && r >= thr { rec = t }
				END { b = bn ? bs / bn : 0; a = an ? as / an : 0
				      printf "%.4f %.4f %.4f %.4f %s %s", b, a, (b ? a / b : 0), a / remain, (dip == "" ? 0 : dip), (rec == "" ? "never" : sprintf("%d", rec * 1000)) }')
			read -r b a ab ar dip rec <<<"$st"
			local done_=completed note=
			if [ -n "$ERR" ]; then done_=failed; note=$ERR; fi
			log "$ev $mode rep $rep plane $busy: before $b after $a Gbit/s, recovered $rec ms, $done_ $note (set took $(awk -v a=$tset -v b=$te 'BEGIN { printf "%d", (b - a) * 1000 }') ms)"
			echo "$ev,$mode,$rep,$busy,$b,$a,$ab,$remain,$ar,$dip,$rec,$done_,$note" >>"$sum"
			md "| $([ $ev = degraded ] && echo "10% loss" || echo blackhole) | $([ $mode = metaroce ] && echo "MetaRoCE 4 paths" || echo RoCEv2) | $rep | $busy | $(r3 "$b") | $(r3 "$a") | $(r2 "$ab") | $(r2 "$ar") | $(r3 "$dip") | $([ "$rec" = never ] && echo never || echo "$rec ms") | $done_${note:+: $note} |"
		done
		done
	done
	md ""
	plot fabric-failover.gp
}

# ---------------------------------------------------------------- incast

exp_incast() {
	local csv=$OUT/fabric-incast.csv sum=$OUT/fabric-incast-summary.csv hints s rep lr cap pids r sa sb st hint line c0
	lr=$(awk -v r=$RATE_MBIT 'BEGIN { x = int(4 * r / 1000 + 0.5); print (x < 1 ? 1 : x) }')
	cap=$(awk -v r=$RATE_MBIT -v f=$PAYLOAD_FRAC 'BEGIN { printf "%.4f", 4 * r * f / 1000 }')
	echo "rate_hints,rep,sender,gbps,mroc_perf_avg_gbps,rate_hint_mbps,tx_data,tx_retx,rto,repath,status" >"$csv"
	echo "rate_hints,rep,s1_gbps,s2_gbps,s3_gbps,total_gbps,total_over_cap,jain" >"$sum"
	md "#### Incast: 3 senders to 1 receiver over 4 planes at $RATE_MBIT Mbit/s (receiver link_rate_gbps = $lr)"
	md ""
	md "Each sender: one QP, 4 paths, write_bw 64 KiB, all at once; goodput at the receiver over the $((2 * SECS)) s after the first $WARM s. Capacity: the planes' payload capacity, $(r3 "$cap") Gbit/s. Jain's index: (sum x)^2 / (n sum x^2), 1 = fair. Hint: the rate hint the senders' QPs held mid-run (0 = none)."
	md ""
	md "| rate hints | run | sender 1 | sender 2 | sender 3 | total Gbit/s | total / capacity | Jain | hints held, Mbit/s |"
	md "|---|---|---|---|---|---|---|---|---|"
	for hints in true false; do
		fabric_up 4 4 "${RATE_MBIT}mbit"
		daemons_start "link_rate_gbps = $lr; rate_hints = $hints;"
		for ((rep = 1; rep <= REPS; rep++)); do
			pids=() c0=()
			for s in 0 1 2; do c0+=("$(counters $s)"); done
			for s in 0 1 2; do perf_server "inc$s" 3 $((18515 + s)); pids+=("$LASTPID"); done
			sleep 0.3
			for s in 0 1 2; do
				perf_client "inc$s" $s 3 $((18515 + s)) -s 65536 -D $((2 * SECS + WARM))
				pids+=("$LASTPID")
			done
			sleep "$WARM.05"
			sa=$(rx_snap 3)
			sleep "$SECS"
			hint=()
			for s in 0 1 2; do
				hint+=("$("$CLI" -j -S "$BL_DIR/h$s.admin" qp show 2>/dev/null |
					jq '[.qps[] | select(.tx_bytes > 0) | .rate_hint_mbps] | max // 0' 2>/dev/null)")
			done
			sleep "$(awk -v s="$SECS" 'BEGIN { print s - 0.35 }')"
			sb=$(rx_snap 3)
			for s in "${pids[@]}"; do bl_reap "$s"; done
			st=$(steady "$sa" "$sb")
			r=()
			for s in 0 1 2; do
				perf_result "inc$s"
				RES=$(awk -v p="${IP[$s]}" '$1 == p { print $2 }' <<<"$st")
				[ -z "$ERR" ] || { log "incast sender $((s + 1)): FAILED: $ERR"; RES=; }
				r+=("${RES:-0}")
				CNT=$(paste -d' ' <(tr ' ' '\n' <<<"${c0[$s]}") <(counters $s | tr ' ' '\n') |
					awk 'NF == 2 { printf "%s%d", s, $2 - $1; s = "," }')
				echo "$hints,$rep,$((s + 1)),$RES,$AVG,${hint[$s]},$CNT,${ERR:-ok}" >>"$csv"
			done
			line=$(awk -v a="${r[0]}" -v b="${r[1]}" -v c="${r[2]}" -v cap="$cap" 'BEGIN { t = a + b + c; q = a*a + b*b + c*c;
				printf "%.4f,%.4f,%.4f,%.4f,%.4f,%.4f", a, b, c, t, t / cap, (q ? t * t / (3 * q) : 0) }')
			echo "$hints,$rep,$line" >>"$sum"
			log "incast hints=$hints rep $rep: $line (hints ${hint[*]})"
			md "$(awk -F, -v h=$hints -v rep="$rep" -v hi="${hint[*]}" '{ printf "| %s | %d | %.3f | %.3f | %.3f | %.3f | %.2f | %.3f | %s |", (h == "true" ? "on" : "off"), rep, $1, $2, $3, $4, $5, $6, hi }' <<<"$line")"
		done
	done
	md ""
	plot fabric-incast.gp
}

# ---------------------------------------------------------------- main

for e in $EXPERIMENTS; do
	case $e in
	loss|planes|failover|jitter|incast) log "== $e ($(($(date +%s) - T_START)) s so far)"; "exp_$e" ;;
	*) die "unknown experiment $e (loss planes failover jitter incast)" ;;
	esac
done
bl_daemons_stop
"$FABRIC" down --name "$BL_NAME" >/dev/null 2>&1
cat "$TABLES"
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d), $(($(date +%s) - T_START)) s;" \
	"load average $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end;" \
	"SECS=$SECS WARM=$WARM REPS=$REPS LONG=$LONG RATE_MBIT=$RATE_MBIT CE_THRESHOLD=$CE_THRESHOLD"
