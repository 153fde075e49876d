#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# sim-sweep.sh: robustness sweep of the engine through the simulator ("any seed, any fabric").
#
# Many short runs of `mroc-sim run`, `incast` and `cluster --verify` (the cluster's hosts each on a
# clock of its own: offsets up to 5 s, drifts up to 500 ppm), each with a random
# simulation seed, workload seed and random parameters drawn over the documented ranges (loss
# 0..0.3, blackholes, both modes, 1..16 paths, 1..8 planes, MTU 256..8192, 1-byte to 1 MiB
# messages, every op type with atomics, 1..256 outstanding, both routings, tiny to huge queues
# and ECN thresholds, mixed rates, RTO floors and delay targets, a plane blackholed, dead
# from the start or gray (5-50 % loss), a spine or cable dying under a collective of several
# iterations), then `mroc-sim engine` at 1..4,000 QPs, and calm bulk transfers (kind calm:
# MetaRoCE, at most 1 % loss, deep queues, a path per plane, sometimes a plane dead or a NIC
# slower than the planes) that must also be fast: their bytes within 10 x what their live planes
# (or their NIC) need, plus 4 x rto_min with a dead plane (session 28: two such bugs ran at
# 0.017-0.12 of capacity and said ok; session 29: one never ended behind a 1 Gbit/s NIC), and a
# spine, cable or one direction of a cable dying under a MetaRoCE collective (kind failover), which must cost at most half
# the time without the failure again plus four RTO floors, and calm incasts (kind calm_incast:
# calm's rules for 1-8 senders into one host, each sender within 10 x its fair share's time). The
# incast kind also draws random loss and a plane dead from the start or dying (session 30: a
# connection over 2 hashed planes, one dead, never made). The run, incast and cluster kinds
# sometimes reorder packets on a path (--jitter) and deliver some twice (--duplicate), the calm
# kinds reorder by up to 5 us now and then. Every run must exit 0 and say ok (run:
# "result: ok" with every op completed; the simulator checks every byte placed, every READ's data,
# every FETCH_ADD's value and the counter's sum), finish within a generous wall-clock limit, and
# leave nothing on stderr from AddressSanitizer, LeakSanitizer or UBSan. A failure is written
# with its exact command line.
#
# usage: scripts/sim-sweep.sh [--runs N] [--time SECONDS] [--seed N] [--kinds LIST]
#                             [--sim PATH] [--out DIR] [--wall SECONDS]
#   --runs N       stop after N runs (default 300)
#   --time S       also stop after S seconds of wall time (default: no limit)
#   --seed N       the sweep's own seed: the same seed draws the same command lines (1)
#   --kinds LIST   comma-separated from run,incast,cluster,engine,calm,failover,calm_incast
#                  (all of them)
#   --sim PATH     the mroc-sim to test (default: build it with SANITIZE=address,undefined
#                  and use build-address-undefined/mroc-sim)
#   --out DIR      where the log and failures go (default: BUILD folder/sim-sweep)
#   --wall S       wall-clock limit of one run, a stall past it is a failure (600)
#   --dry-run      print the command lines, run nothing
#
# Runs one process at a time under nice -n 19 (the machine is shared).  Exit status 1 if any
# run failed; DIR/failures.txt has one block per failure (command, exit status, the output's
# tail), DIR/log.txt one line per run.
set -u

runs=300 max_time=0 sweep_seed=1 kinds=run,incast,cluster,engine,calm,failover,calm_incast
sim='' out='' wall=600 dry=0
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) runs=$2; shift 2 ;;
	--time) max_time=$2; shift 2 ;;
	--seed) sweep_seed=$2; shift 2 ;;
	--kinds) kinds=$2; shift 2 ;;
	--sim) sim=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--wall) wall=$2; shift 2 ;;
	--dry-run) dry=1; shift ;;
	-h|--help) sed -n '3,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "sim-sweep.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$sim" ] && [ "$dry" = 1 ]; then
	sim=mroc-sim
elif [ -z "$sim" ]; then
	nice -n 10 make -C "$root" -s -j2 SANITIZE=address,undefined \
		build-address-undefined/mroc-sim || exit 1
	sim=$root/build-address-undefined/mroc-sim
fi
[ "$dry" = 1 ] || [ -x "$sim" ] || { echo "sim-sweep.sh: $sim is not executable" >&2; exit 2; }
out=${out:-$(dirname "$sim")/sim-sweep}
log=$out/log.txt fails=$out/failures.txt
if [ "$dry" = 1 ]; then
	log=/dev/null fails=/dev/null	# a dry run writes nothing (it left ./sim-sweep/ behind)
else
	mkdir -p "$out"
	: >"$log"
	: >"$fails"
fi

# Leaks are findings too; the first UB report ends the run with a non-zero status.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# ---- random draws ----------------------------------------------------------------------
# A 64-bit LCG of our own (bash's $RANDOM is reseeded in every subshell), and every draw
# returns in REPLY, never through $(...): the same sweep seed draws the same command lines.

rng=$(( sweep_seed * 2654435761 + 1 ))
# rnd A B: REPLY = a uniform integer in [A, B].
rnd() {
	rng=$(( rng * 6364136223846793005 + 1442695040888963407 ))
	REPLY=$(( $1 + ((rng >> 33) & 0x7fffffff) % ($2 - $1 + 1) ))
}
# pick WORD...: REPLY = one of the words.
pick() { rnd 1 $#; REPLY=${!REPLY}; }
# chance N: true N times in 100.
chance() { rnd 1 100; [ "$REPLY" -le "$1" ]; }

draw_loss() {
	if chance 35; then REPLY=0; return; fi
	if chance 50; then pick 0.0001 0.001 0.01 0.05 0.1 0.2 0.3; return; fi
	rnd 0 300
	printf -v REPLY '0.%03d' "$REPLY"
}

draw_mtu() {
	if chance 60; then pick 256 512 1024 1500 2048 4096 8192; else rnd 256 8192; fi
}

# draw_msg: the largest WR, from 1 byte up.
draw_msg() {
	rnd 0 4
	case $REPLY in
	0) rnd 1 16 ;;
	1) rnd 1 4096 ;;
	2) rnd 4096 65536 ;;
	3) pick 65536 262144 1048576 ;;
	4) pick 1 8 4096 4097 8192 65536 ;;
	esac
}

draw_mix() {
	local w=(0 0 0 0 0) i
	if chance 25; then
		rnd 0 4	# one op type alone
		w[REPLY]=1
	else
		for i in 0 1 2 3 4; do rnd 0 3; w[i]=$REPLY; done
		[ $((w[0] + w[1] + w[2] + w[3] + w[4])) -gt 0 ] || w[0]=1
	fi
	REPLY="${w[0]},${w[1]},${w[2]},${w[3]},${w[4]}"
}

draw_outstanding() {
	if chance 50; then pick 1 2 3 16 64 255 256; else rnd 1 256; fi
}

# draw_queue MTU: a drop-tail queue that still holds one whole packet (68 bytes of headers
# and tag, 64 of wire overhead: smaller is refused), up to far more than a run ever queues.
draw_queue() {
	local min=$(($1 + 132))
	rnd 0 3
	case $REPLY in
	0) rnd 1 4; REPLY=$((min * REPLY)) ;;
	1) rnd "$min" 65536 ;;
	2) pick 524288 4194304 ;;
	3) REPLY=67108864 ;;
	esac
}

draw_ecn() { pick 0 1 1500 8192 65536 262144 4194304 1073741824; }
draw_rate() { pick 1G 10G 25G 40G 100G 400G; }
draw_delay() { pick 0 100 1000 2000 10000 100000; }
draw_rto_min() { pick 1 10 50 200 1000 5000 10000 20000 100000; }

# draw_bytes MSG MSG_MIN MIX MAX_OPS: total bytes, kept to about MAX_OPS WRs (a FETCH_ADD
# takes 8 bytes of the transfer whatever the message size).
draw_bytes() {
	local msg=$1 min=$2 w=(${3//,/ }) avg per cap
	avg=$(( min ? (msg + min) / 2 : msg ))
	per=$(( (avg * (w[0] + w[1] + w[2] + w[3]) + (avg < 8 ? avg : 8) * w[4]) /
		(w[0] + w[1] + w[2] + w[3] + w[4]) ))
	cap=$(( (per > 0 ? per : 1) * $4 ))
	rnd 0 3
	case $REPLY in
	0) rnd 1 65536 ;;
	1) rnd 65536 4194304 ;;
	2) pick 1 7 8 9 4096 1048576 ;;
	3) rnd 4194304 16777216 ;;
	esac
	[ "$REPLY" -le "$cap" ] || REPLY=$cap
}

# draw_reorder: sometimes (drawn last, so a seed's other draws stay) packets that overtake each
# other on a path (--jitter, us) and packets that arrive twice (--duplicate): a path is FIFO
# nowhere but in the simulator (an outside review's harness had jitter; the simulator had none
# before session 31).
draw_reorder() {
	if chance 20; then add --jitter pick 0.1 1 5 20 100; fi
	if chance 15; then add --duplicate pick 0.001 0.01 0.1; fi
}

# draw_calm_reorder: the calm kinds' (drawn last): a route that reorders by up to a few
# microseconds, what a switch spraying a flow's packets does, and the time the judge allows
# still holds (session 31: MetaRoCE keeps 0.85 of the capacity at 5 us, 0.62 at 20).
draw_calm_reorder() {
	if chance 15; then add --jitter pick 1 2 5; fi
}

# ---- one command line per kind, into ARGS -------------------------------------------------

# add OPTION DRAW [DRAW ARGS]: append OPTION and the draw's value.
add() { local o=$1; shift; "$@"; ARGS+=("$o" "$REPLY"); }

cmd_run() {
	local planes paths mode route mtu msg min mix loss rto_min ops=40000
	rnd 1 8; planes=$REPLY
	rnd 1 16; paths=$REPLY
	pick metaroce metaroce rocev2; mode=$REPLY
	pick hash path; route=$REPLY
	draw_mtu; mtu=$REPLY
	draw_msg; msg=$REPLY
	draw_mix; mix=$REPLY
	draw_loss; loss=$REPLY
	draw_rto_min; rto_min=$REPLY
	min=0
	if chance 50; then rnd 1 "$msg"; min=$REPLY; fi
	# RoCEv2 mode goes back N on every loss, and its one path overflows a small queue as soon
	# as the NIC is faster than a plane: there a few thousand WRs take a simulated minute.
	if [ "$mode" = rocev2 ]; then ops=2000; fi
	# A loss that the probe misses too waits for the RTO: with a floor of 20 ms or more and
	# few WRs outstanding, 40,000 WRs at heavy loss take longer than the simulated limit.
	if [[ $loss > 0.05 ]] && [ "$rto_min" -ge 20000 ]; then ops=2000; fi
	ARGS=(run --planes "$planes" --paths "$paths" --mode "$mode" --route "$route"
	      --mtu "$mtu" --msg "$msg" --msg-min "$min" --mix "$mix" --loss "$loss"
	      --rto-min "$rto_min")
	add --seed rnd 0 1073741823
	add --wl-seed rnd 0 1073741823
	add --bytes draw_bytes "$msg" "$min" "$mix" "$ops"
	add --outstanding draw_outstanding
	add --queue draw_queue "$mtu"
	add --ecn draw_ecn
	add --rate draw_rate
	add --delay draw_delay
	ARGS+=(--limit 600000)
	# A NIC slower than its planes, sometimes.
	if chance 20; then add --nic pick 1G 10G 25G 50G; fi
	if chance 40; then add --delay-target pick 0 1 10 50 500 5000; fi
	# A dead plane, when MetaRoCE has somewhere else to go: with path routing some path must
	# sit on another plane (path p rides plane p mod planes); a RoCEv2 QP is one path and
	# cannot leave a dead plane, as on a real fabric.
	if [ "$mode" = metaroce ] && [ "$planes" -ge 2 ] && chance 30; then
		local bh p ok=0
		rnd 0 $((planes - 1)); bh=$REPLY
		[ "$route" = hash ] && ok=1
		for ((p = 0; p < paths; p++)); do [ $((p % planes)) -ne "$bh" ] && ok=1; done
		rnd 0 3000
		[ $ok = 1 ] && ARGS+=(--blackhole "$bh@$REPLY")
	fi
	# Or a plane dead from the start, before the QP connects (its CM, a new path's first
	# packets, a timed-out path's probes: session 27 found three bugs there), where a path
	# rides another plane; never beside a blackhole (two planes of two would be no fabric).
	if [ "$mode" = metaroce ] && [ "$planes" -ge 2 ] && [ "$paths" -ge 2 ] &&
	   [[ " ${ARGS[*]} " != *" --blackhole "* ]] && chance 15; then
		rnd 0 $((planes - 1))
		ARGS+=(--plane-loss "$REPLY:1")
	fi
	# A gray plane (drawn last): one plane far lossier than the rest, where MetaRoCE's paths
	# should move off it; not beside a plane dead from the start (one --plane-loss at a time),
	# and not for RoCEv2 mode, whose one path may sit on it (it gives up above 5 % loss, judge).
	if [ "$mode" = metaroce ] && [ "$planes" -ge 2 ] &&
	   [[ " ${ARGS[*]} " != *" --plane-loss "* ]] && chance 10; then
		local gray
		rnd 0 $((planes - 1)); gray=$REPLY
		pick 0.05 0.1 0.2 0.5
		ARGS+=(--plane-loss "$gray:$REPLY")
	fi
	draw_reorder
}

# draw_bulk_run: a calm run's seeds, MTU, largest WR and op mix (WRITEs alone, or a mix of the
# bulk ops: the first draw kept, the same seed, the same runs), its options added.
draw_bulk_run() {
	local mix
	add --seed rnd 0 1073741823
	add --wl-seed rnd 0 1073741823
	add --mtu pick 1024 1500 4096 8192
	add --msg pick 65536 262144 1048576
	rnd 1 4; mix="$REPLY,0,0,0"
	if chance 50; then draw_mix_bulk; mix=$REPLY; fi
	ARGS+=(--mix "$mix")
}

# draw_dead_plane PLANES: one time in four (with 2 planes or more) a plane dead from the start
# or blackholed 0-2 ms into the transfer, its option added; calm_dead says whether (1) or not.
draw_dead_plane() {
	local dead
	calm_dead=0
	if [ "$1" -ge 2 ] && chance 25; then
		rnd 0 $(($1 - 1)); dead=$REPLY
		if chance 50; then
			ARGS+=(--plane-loss "$dead:1")
		else
			rnd 0 2000
			ARGS+=(--blackhole "$dead@$REPLY")
		fi
		calm_dead=1
	fi
}

# cmd_calm: a bulk transfer on a fabric with room to spare: MetaRoCE, at most 1 % loss, deep
# queues, many large WRs in flight, no atomics, a path for every plane; the hosts' clocks, the
# routing, MTU, rates and timers still drawn.  Such a run must also be fast (judge_calm):
# session 27's and 28's bugs ran at 0.017-0.25 of capacity and said ok.
cmd_calm() {
	local planes paths
	rnd 1 8; planes=$REPLY
	rnd "$planes" 16; paths=$REPLY
	ARGS=(run --mode metaroce --planes "$planes" --paths "$paths" --limit 600000)
	add --route pick hash path linux
	draw_bulk_run
	add --loss pick 0 0 0.0001 0.001 0.01
	add --bytes rnd 4194304 33554432
	add --outstanding rnd 16 64
	add --rate pick 10G 25G 100G
	add --delay pick 500 1000 2000
	add --rto-min pick 50 200 1000
	calm_rto=$REPLY
	if chance 30; then add --clock-skew pick 1000 3000000 5000000; add --clock-drift pick 0 50 500; fi
	if chance 20; then ARGS+=(--daemon); fi
	if chance 20; then add --delay-target pick 0 10 50 500; fi
	if chance 20; then add --round-rtts rnd 1 4; fi
	if chance 10; then ARGS+=(--loss-first); fi
	# A plane dead from the start or dying under the transfer: the rest must still carry it,
	# once its paths have timed out (a few rto_min: judge_calm).
	draw_dead_plane "$planes"
	calm_live=$((planes - calm_dead))
	# A NIC slower than its planes, sometimes (drawn last: a seed's other draws stay as they
	# were): the capacity is then the NIC's (mroc-sim's goodput line), and probes that go
	# before data must leave it room (session 29: pinned paths on a dead plane filled a 1 Gbit/s
	# NIC with probes and the transfer never ended).
	if chance 15; then add --nic pick 1G 10G; fi
	# A gray plane (drawn last): 5-20 % loss on one live plane; its paths should move off it,
	# and the judge still counts it among the live planes.
	if [ "$planes" -ge 2 ] && [ "$calm_dead" = 0 ] && chance 10; then
		local gray
		rnd 0 $((planes - 1)); gray=$REPLY
		pick 0.05 0.1 0.2
		ARGS+=(--plane-loss "$gray:$REPLY")
	fi
	draw_calm_reorder
	calm_planes=$planes
}

# judge_calm_incast OUTPUT_FILE: empty when each sender of a calm incast moved its bytes, from
# its first post to its last completion, within 10 x the time its fair share of the receiver's
# live downlinks needs (mroc-sim's capacity counts only planes alive at the end), and 4 x
# rto_min more where a plane was dead; else why not.  Its connection's time is not counted:
# the handshake's own retries with a dead plane are the CM's (PROTOCOL 11).
judge_calm_incast() {
	local slack=0
	[ "$calm_dead" = 1 ] && slack=$((4 * calm_rto))
	awk -v bytes="$calm_bytes" -v n="$calm_senders" -v slack="$slack" '
		/^rate hints / { hints = $3 }
		/^  sender [0-9]+:/ { i = $2; sub(":", "", i); g[hints, i] = $5 + 0 }
		/^  total / {
			cap = $5 + 0
			if (!cap) { printf "hints %s: no capacity\n", hints; exit }
			allow = 10 * bytes * 8 / (cap * 1000 / n) + slack	# us
			for (i = 0; i < n; i++) {
				t = g[hints, i] ? bytes * 8 / (g[hints, i] * 1000) : -1
				if (t < 0 || t > allow) {
					printf "slow: hints %s sender %d %.0f us for %d bytes, allowed %.0f\n",
					       hints, i, t, bytes, allow
					exit
				}
			}
		}' "$1"
}


# judge_calm OUTPUT_FILE: empty when a calm run moved its bytes, from its first post to its
# last completion, within 10 x the time its live planes need (capacity x live / planes), and
# 4 x rto_min more where a plane was dead; else why not.  (Session 28 allowed one rto_init
# more with hashed routes, where a direction's paths may all cross the dead plane one way or
# the other and none gets an RTT sample; since session 29 their first RTO comes from the
# handshake's round trip, path.c first_rto.)
judge_calm() {
	local slack=0
	[ "$calm_dead" = 1 ] && slack=$((4 * calm_rto))
	awk -v live="$calm_live" -v planes="$calm_planes" -v slack="$slack" '
		/^ops / { split($0, a, "bytes "); bytes = a[2] + 0 }
		/^connected / { gsub(",", ""); first = $6; last = $10 }
		/^goodput / { cap = $5 }
		END {
			if (!cap || !bytes) { print "no goodput line"; exit }
			ideal = bytes * 8 / (cap * 1000 * live / planes)	# us
			allow = 10 * ideal + slack
			if (last - first > allow)
				printf "slow: %.0f us for %d bytes, allowed %.0f\n", last - first, bytes, allow
		}' "$1"
}

# draw_mix_bulk: WRITE, WRITE_IMM, SEND and READ weights, no atomics.
draw_mix_bulk() {
	local w=(0 0 0 0) i
	for i in 0 1 2 3; do rnd 0 3; w[i]=$REPLY; done
	[ $((w[0] + w[1] + w[2] + w[3])) -gt 0 ] || w[0]=1
	REPLY="${w[0]},${w[1]},${w[2]},${w[3]}"
}

cmd_incast() {
	local mtu msg mix senders
	draw_mtu; mtu=$REPLY
	draw_msg; msg=$REPLY
	draw_mix; mix=$REPLY
	rnd 1 8; senders=$REPLY
	ARGS=(incast --mtu "$mtu" --msg "$msg" --mix "$mix" --limit 600000 --senders "$senders")
	add --hints pick on off both
	add --seed rnd 0 1073741823
	add --wl-seed rnd 0 1073741823
	add --planes rnd 1 8
	add --paths rnd 1 16
	add --mode pick metaroce metaroce rocev2
	add --route pick hash path
	# Some 20,000 packets in all: a RoCEv2 incast into small queues sends each many times.
	draw_bytes "$msg" 0 "$mix" 10000
	[ "$REPLY" -le $((mtu * 20000 / senders)) ] || REPLY=$((mtu * 20000 / senders))
	ARGS+=(--bytes "$REPLY")
	add --outstanding draw_outstanding
	add --queue draw_queue "$mtu"
	add --ecn draw_ecn
	add --rate draw_rate
	add --rto-min draw_rto_min
	# Faults, drawn last (a seed's other draws stay as they were): random loss on the
	# host-pair links, and a plane dead from the start or dying under the incast where
	# MetaRoCE has somewhere else to go (as cmd_run; RoCEv2 cannot leave a dead plane).
	if chance 40; then add --loss pick 0.0001 0.001 0.01 0.05; fi
	local all=" ${ARGS[*]} " planes paths p ok=0 dead
	planes=${all##* --planes } paths=${all##* --paths }
	planes=${planes%% *} paths=${paths%% *}
	if [[ $all == *" --mode metaroce "* ]] && [ "$planes" -ge 2 ] && chance 25; then
		rnd 0 $((planes - 1)); dead=$REPLY
		[[ $all == *" --route hash "* ]] && ok=1
		for ((p = 0; p < paths; p++)); do [ $((p % planes)) -ne "$dead" ] && ok=1; done
		if [ $ok = 1 ] && chance 50; then
			ARGS+=(--plane-loss "$dead:1")
		elif [ $ok = 1 ]; then
			rnd 0 2000
			ARGS+=(--blackhole "$dead@$REPLY")
		fi
	fi
	draw_reorder
}

# cmd_calm_incast: calm's rules for an incast (MetaRoCE, at most 1 % loss, deep queues, a path
# for every plane, sometimes a plane dead), judged per sender (judge_calm_incast).
cmd_calm_incast() {
	local planes paths senders
	rnd 1 8; planes=$REPLY
	rnd "$planes" 16; paths=$REPLY
	rnd 1 8; senders=$REPLY
	ARGS=(incast --mode metaroce --senders "$senders" --planes "$planes" --paths "$paths"
	      --limit 600000)
	add --route pick hash path
	draw_bulk_run
	add --hints pick on off both
	add --loss pick 0 0 0.0001 0.001 0.01
	add --bytes rnd 1048576 8388608
	calm_bytes=$REPLY
	add --outstanding rnd 16 64
	add --rate pick 10G 25G 100G
	add --delay pick 500 1000 2000
	add --queue pick 1M 4M
	add --rto-min pick 50 200 1000
	calm_rto=$REPLY
	draw_dead_plane "$planes"
	draw_calm_reorder
	calm_senders=$senders
}

cmd_cluster() {
	ARGS=(cluster --verify --limit 600000)
	add --seed rnd 0 1073741823
	local hosts
	rnd 2 16; hosts=$REPLY
	ARGS+=(--hosts "$hosts")
	add --planes rnd 1 8
	# A leaf needs a host (more leaves than hosts is refused).
	add --leaves rnd 1 $((hosts < 4 ? hosts : 4))
	add --spines rnd 1 4
	local spines=$REPLY
	add --bytes pick 1 8 1K 64K 1M
	add --op pick allreduce allgather reducescatter alltoall permutation incast
	add --algo pick auto ring rd
	add --loss pick 0 0 0.001 0.01 0.05
	add --transport pick metaroce rocev2 rocev2-qps rocev2-pfc rocev2-qp-per-plane \
		metaroce,rocev2-pfc
	# A spine or cable of plane 0 dies while the collective runs, and later iterations
	# connect new QPs past it (session 27: their CM went by plane 0 alone); MetaRoCE with
	# another spine to go by.
	if [ "$REPLY" = metaroce ] && [ "$spines" -ge 2 ] && chance 20; then
		add --fail pick spine cable downlink
		add --fail-at rnd 0 500
		add --iters rnd 2 3
	fi
	add --paths rnd 1 16
	add --hints pick on off
	add --rto-min draw_rto_min
	# Each host's engine on a clock of its own (issue #23): offsets up to 5 s, past 2^31 ns.
	add --clock-skew pick 0 1000 3000000 5000000
	add --clock-drift pick 0 50 500
	# Small messages split over paths (issue #23): off, the default, and extremes.
	add --split pick 0 16 32 1024 4080
	draw_reorder
}

# cmd_failover: a spine, a cable or a cable's spine-to-leaf half of a MetaRoCE cluster dies
# under a collective (kind failover).  judge_failover runs the same collective without the failure (fo_base) and wants
# the failure to cost at most half that time again plus four RTO floors (the dead route's
# packets wait for one, a move may land on it again; session 28: a path RACK emptied
# re-armed its RTO at each send and never left the dead spine, 2-3.7 x the time without the
# failure).
cmd_failover() {
	local planes leaves
	ARGS=(cluster --verify --transport metaroce --limit 60000)
	add --seed rnd 0 1073741823
	add --hosts pick 8 16 32
	add --planes pick 2 4
	planes=$REPLY
	add --leaves pick 2 4
	leaves=$REPLY
	add --spines pick 2 3 4
	add --op pick permutation alltoall allreduce allgather reducescatter
	add --bytes pick 256K 1M 4M
	add --loss pick 0 0 0.001
	add --rto-min pick 50 200 200
	fo_rto=$REPLY
	if chance 30; then add --paths pick 2 4 8 16; fi
	if chance 30; then add --clock-skew pick 1000 3000000; add --clock-drift pick 0 500; fi
	fo_base="${ARGS[*]}"
	# A cable's spine-to-leaf half alone (session 33): data crosses, ACKs are lost.
	add --fail pick spine cable downlink
	[ "$REPLY" = spine ] || add --fail-leaf rnd 0 $((leaves - 1))
	add --fail-at rnd 0 300
	add --fail-plane rnd 0 $((planes - 1))
}

# judge_failover OUTPUT_FILE: empty when the collective with the failure took at most 1.5 x
# its time without it plus four RTOs (rto_min, and at least 200 us: under a collective's
# queues sRTT + 4 RTTVAR is 130-200 us); else why not.
judge_failover() {
	local base t b
	t=$(awk '$1 ~ /^[0-9]+$/ && $NF == "ok" { print $4; exit }' "$1")
	[ -n "$t" ] || { echo "no result row"; return; }
	# shellcheck disable=SC2086 # the words are ours, none has spaces
	base=$(timeout -k 10 "$wall" nice -n 19 "$sim" $fo_base 2>&1)
	b=$(awk '$1 ~ /^[0-9]+$/ && $NF == "ok" { print $4; exit }' <<<"$base")
	[ -n "$b" ] || { echo "the run without the failure failed"; return; }
	awk -v t="$t" -v b="$b" -v r="$((fo_rto > 200 ? fo_rto : 200))" 'BEGIN {
		if (t > 1.5 * b + 4 * r)
			printf "slow failover: %.2f us against %.2f without the failure\n", t, b }'
}

cmd_engine() {
	local q
	rnd 1 4000; q=$REPLY
	ARGS=(engine --runs 1)
	add --qps pick 1 2 16 256 1000 4000 "$q"
	add --active pick all 1 17
	add --packets rnd 1 20000
	add --mtu draw_mtu
	add --sec pick none token
}

# ---- run and judge ---------------------------------------------------------------------

# judge KIND OUTPUT_FILE STATUS ARGS: empty when the run passed, else why it did not.
#
# Two failures are the transport's own and pass.  RoCEv2 mode at more than 5% loss (an incast's
# at 5 %: session 31, 3 senders into queues of one packet, 0.005 Gbit/s lossless) may give up
# with RETRY_EXC (status 5; its peer then flushes, status 7), as a RoCE NIC does once its retry
# count is spent (mroc's max_retx, or dead_peer without progress while its RTO backs off).  So may
# RoCEv2 mode on a route that reorders (--jitter): go-back-N takes a packet that overtook another
# as a gap, NAKs it and resends from the gap, so reordering is loss to it (session 33, sweep seed
# 92 run 668: 2 senders into a queue of 3 packets with jitter of 20 us, every seed of 1-6 fails,
# every one passes with 64 KiB of queue or without the jitter; MetaRoCE mode passes them all).
# And above 10% loss a connect may fail (CONNECT_ERR, status 8) after its cm_retries (8): at
# 30% loss each way one request and answer in two are lost, and nine in a row one run in 500.
# The data must still be right up to there, which the simulator checked.
judge() {
	local kind=$1 f=$2 st=$3 args=$4 loss
	if [ "$st" = 124 ] || [ "$st" = 137 ]; then echo "stalled: over ${wall}s of wall time"; return; fi
	if grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error:' "$f"; then
		echo "sanitizer: $(grep -Em1 'AddressSanitizer|LeakSanitizer|runtime error:' "$f")"
		return
	fi
	if [ "$kind" = run ] || [ "$kind" = incast ]; then
		loss=${args##*--loss }
		loss=${loss%% *}
		[[ $args == *" --loss "* ]] || loss=0
		# An incast's senders share the receiver's queues: 5 % is already too much there.
		if [ "$kind" = incast ] && [ "$loss" = 0.05 ]; then loss=0.051; fi
		if [[ $args == *"--mode rocev2"* ]] &&
		   { [[ $loss > 0.05 ]] || [[ $args == *"--jitter "[1-9]* ]]; } &&
		   grep -Eq '^why: .*(completed with status [57] |event 9 \(status 5\))' "$f"; then
			return
		fi
		if [[ $loss > 0.1 ]] && grep -Eq '^why: .*event 9 \(status 8\) after 0/' "$f"; then
			return
		fi
	fi
	# A transfer that still completed WRs near its time limit is slow, not stuck.
	if [ "$kind" = run ] && grep -q '^why: time limit' "$f"; then
		local last end
		last=$(sed -n 's/.*last completion \([0-9]*\)\..*/\1/p' "$f")
		end=$(sed -n 's/.*, end \([0-9]*\)\..*/\1/p' "$f")
		if [ -n "$last" ] && [ "$((last * 10))" -ge "$((end * 9))" ]; then
			echo "slow: $(grep -m1 '^ops ' "$f" | cut -d' ' -f2) ops by the time limit"
			return
		fi
	fi
	[ "$st" = 0 ] || { echo "exit status $st"; return; }
	case $kind in
	run)
		grep -qx 'result: ok' "$f" || { echo "no 'result: ok'"; return; }
		# every op completed: "ops N/N"
		grep -Eq '^ops ([0-9]+)/\1 ' "$f" || echo "ops not all completed"
		;;
	incast) grep -q ': FAILED' "$f" && echo "a sender failed" ;;
	cluster) grep -Eq ' FAIL$' "$f" && echo "a transport failed" ;;
	failover)
		grep -Eq ' FAIL$' "$f" && { echo "a transport failed"; return; }
		judge_failover "$f"
		;;
	calm_incast)
		grep -q ': FAILED' "$f" && { echo "a sender failed"; return; }
		judge_calm_incast "$f"
		;;
	calm)
		grep -qx 'result: ok' "$f" || { echo "no 'result: ok'"; return; }
		grep -Eq '^ops ([0-9]+)/\1 ' "$f" || { echo "ops not all completed"; return; }
		judge_calm "$f"
		;;
	esac
}

kinds_list=(${kinds//,/ })
t0=$SECONDS n=0 nfail=0
if [ "$dry" = 1 ]; then tmp=$(mktemp); else tmp=$(mktemp "$out/run.XXXXXX"); fi
trap 'rm -f "$tmp"' EXIT
echo "sim-sweep: $sim, sweep seed $sweep_seed, up to $runs runs, log $log"
while [ "$n" -lt "$runs" ]; do
	if [ "$max_time" -gt 0 ] && [ $((SECONDS - t0)) -ge "$max_time" ]; then break; fi
	pick "${kinds_list[@]}"; kind=$REPLY
	# run is the main course: most draws, whatever the list.
	if [[ " ${kinds_list[*]} " == *" run "* ]] && chance 60; then kind=run; fi
	"cmd_$kind"
	args="${ARGS[*]}"
	if [ "$dry" = 1 ]; then echo "${sim##*/} $args"; n=$((n + 1)); continue; fi
	n=$((n + 1))
	s0=$SECONDS
	# shellcheck disable=SC2086 # the words are ours, none has spaces
	timeout -k 10 "$wall" nice -n 19 "$sim" $args >"$tmp" 2>&1
	st=$?
	why=$(judge "$kind" "$tmp" "$st" "$args")
	printf '%d %s %ds %s: %s\n' "$n" "${why:+FAIL}${why:-ok}" $((SECONDS - s0)) "$kind" \
		"$args" >>"$log"
	if [ -n "$why" ]; then
		nfail=$((nfail + 1))
		{
			echo "== run $n: $why"
			echo "$sim $args"
			tail -n 15 "$tmp"
			echo
		} >>"$fails"
		echo "FAIL ($why): $sim $args"
	fi
done
echo "sim-sweep: $n runs, $nfail failed, $((SECONDS - t0)) s wall; log $log, failures $fails"
[ "$nfail" = 0 ]
