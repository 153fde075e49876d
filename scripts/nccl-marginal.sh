#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What one more run of the NCCL harness's ring costs in packets, and where they go (issue
# #26): counts, which the machine's load does not change, where bench-nccl's times do.
# bench-nccl.sh's fabric (scripts/fabric --ports 2 --hosts 4, a port per plane, mrocd on
# AF_XDP on each host, 8 paths), 4 ranks on 4 hosts, the plugin's ring AllReduce of SIZE
# bytes run ITERS_A and then ITERS_B times (two harness runs, each its own connections);
# the four daemons' counters before and after each, and every packet into each plane from
# each host captured (dumpcap, headers); the difference of the two runs over ITERS_B -
# ITERS_A is what a run costs without the connections and the warm-up: data packets,
# ACKs, resends, worker sleeps, hand-offs between workers (RX, TX), and data packets by
# plane.  With every QP on worker 0 (one client a host: the usual case) a data packet on
# plane 2 left by worker 1's port: it was handed over, and so was its ACK.
#
# Also the daemons' CPU (their threads' schedstat: spinning included), and their wake-ups behind a run: clients' doorbells (a post to a QP whose worker
# had gone to sleep: one write(2) by the client, one wake-up), worker wake-ups by doorbell,
# work requests taken and completions written, completion-channel signals; and from the
# plugin, its polls of a CQ (empty ones apart) per run.
#
# NET=fi: the same ring over mroc's libfabric provider (tests/nccl/fi_net.c), so that the
# plugin's costs per step compare with the provider's.  PINGPONG=1: instead of a ring,
# the provider's fi_pingpong -e rdm SIZE bytes (64 at least) between hosts 0 and 1,
# ITERS_A then ITERS_B round trips: the same counts per round trip, i.e. per two hops: the
# yardstick #26's 8 B target is measured against.
#
# Environment: BUILD, SIZE (8), ITERS_A (10), ITERS_B (210), NET (mroc), PINGPONG,
# DAEMON_KEYS (more keys of mrocd's daemon group, e.g. "lone_home_port = false;" or
# "workers = 1;"), OUTD (where the captures, counters and harness output stay; default a
# directory removed at the end), OPCODES=1 (also each plane's packets by opcode and
# flags, from the larger run).  Root; about 2 minutes at load 20.
set -u
BL_TAG=nmarg
. "$(dirname "$0")/bench-lib.sh"

HARNESS=$BUILD/tests/nccl/nccl-harness
PLUGIN=$BUILD/libnccl-net-mroc.so
SIZE=${SIZE:-8}
ITERS_A=${ITERS_A:-10}
ITERS_B=${ITERS_B:-210}
NET=${NET:-mroc}
case $NET in
mroc) NET_ARGS=(--plugin "$PLUGIN") ;;
fi) NET_ARGS=(--fi mroc) ;;
*) echo "NET=$NET: mroc or fi" >&2; exit 2 ;;
esac

bl_init dumpcap tshark bc
[ -x "$HARNESS" ] && [ -f "$PLUGIN" ] || skip "$HARNESS or $PLUGIN not built: run make"
[ "$ITERS_B" -gt "$ITERS_A" ] || die "ITERS_B ($ITERS_B) must be above ITERS_A ($ITERS_A)"
D=${OUTD:-$BL_DIR/out}
mkdir -p "$D"

bl_nccl_fabric

# run TAG ITERS: the ring ITERS times, captured; counters before (TAG-c0-h) and after (-c1-).
run() {
	local tag=$1 it=$2 r h p caps=() pids=() ch=$BL_DIR/chan-$1 rc=0
	mkdir -p "$ch"
	for p in 1 2; do
		for ((h = 0; h < NHOSTS; h++)); do
			bl_bg ip netns exec "mrocf-$BL_NAME-p$p" dumpcap -q -i "to$h" \
				-f "udp dst port 4793 and inbound" -s 128 -w "$D/$tag-p$p-h$h.pcap" \
				>"$D/$tag-p$p-h$h.dumpcap.log" 2>&1
			caps+=("$BL_LAST")
		done
	done
	sleep 1		# dumpcap's filter in place
	for ((h = 0; h < NHOSTS; h++)); do bl_admin $h counters >"$D/$tag-c0-$h.json"; done
	dcpu >"$D/$tag-cpu0"
	if [ -n "${PINGPONG:-}" ]; then
		pingpong "$tag" "$it" || rc=1
	else
		for r in 0 1 2 3; do
			bl_bg ip netns exec "${NS[$r]}" env MROC_SOCKET="$BL_DIR/h$r.ctl" \
				NCCL_MROC_ADDR="${IP[$r]}" H_VERBOSE=1 FI_PROVIDER_PATH="$BUILD" \
				FI_MROC_ADDR="${IP[$r]}" timeout 900 "$HARNESS" --rank $r --nranks 4 \
				--dir "$ch" "${NET_ARGS[@]}" allreduce "$SIZE" --iters "$it" >"$D/$tag.$r.out" 2>&1
			pids+=("$BL_LAST")
		done
		for r in 0 1 2 3; do bl_reap "${pids[$r]}" || rc=1; done
	fi
	sleep 1		# the last ACKs
	dcpu >"$D/$tag-cpu1"
	for ((h = 0; h < NHOSTS; h++)); do bl_admin $h counters >"$D/$tag-c1-$h.json"; done
	kill -INT "${caps[@]}" 2>/dev/null
	for p in "${caps[@]}"; do bl_reap "$p"; done
	[ $rc = 0 ] || { tail -n 3 "$D/$tag".*.out >&2; die "the ring of $it runs failed (output above)"; }
}

# pingpong TAG ITERS: the provider's fi_pingpong, ITERS round trips of SIZE (>= 64) bytes,
# data checked, host 0 to host 1.
pingpong() {
	local port=$((47700 + RANDOM % 200)) sp cp rc=0 sz=$((SIZE < 64 ? 64 : SIZE))
	bl_bg ip netns exec "${NS[1]}" env FI_PROVIDER_PATH="$BUILD" MROC_SOCKET="$BL_DIR/h1.ctl" \
		FI_MROC_ADDR="${IP[1]}" timeout 300 fi_pingpong -p mroc -e rdm -B $port -I "$2" -S $sz -c \
		>"$D/$1.srv.out" 2>&1
	sp=$BL_LAST
	bl_wait_listen "${NS[1]}" $port "$sp" || return 1
	bl_bg ip netns exec "${NS[0]}" env FI_PROVIDER_PATH="$BUILD" MROC_SOCKET="$BL_DIR/h0.ctl" \
		FI_MROC_ADDR="${IP[0]}" timeout 300 fi_pingpong -p mroc -e rdm -P $port -I "$2" -S $sz -c \
		"${IP[1]}" >"$D/$1.0.out" 2>&1
	cp=$BL_LAST
	bl_reap "$cp" || rc=1
	bl_reap "$sp" || rc=1
	return $rc
}

# dcpu: the four daemons' threads' time on a CPU (schedstat, ns), summed: what the daemons'
# work, their spinning included, took of the machine's CPUs.
dcpu() {
	local h
	for ((h = 0; h < NHOSTS; h++)); do cat /proc/"${DPID[$h]}"/task/*/schedstat 2>/dev/null; done |
		awk '{ s += $1 } END { printf "%d\n", s }'
}

# sums TAG: the four daemons' counter differences over run TAG, space separated.
sums() {
	local h
	for ((h = 0; h < NHOSTS; h++)); do
		jq -s -r '.[0] as $a | .[1] as $b
			| def w(f): ([$b.workers[]? | f] | add // 0) - ([$a.workers[]? | f] | add // 0);
			def d(f): ($b | f // 0) - ($a | f // 0);
			[d(.engine.tx_data), d(.engine.tx_acks), d(.engine.tx_retx), d(.worker.sleeps),
			 w(.handoff_rx_out), w(.handoff_tx_out), d(.clients.doorbells),
			 d(.worker.wakeups_doorbell), d(.clients.wrs), d(.clients.cqes),
			 d(.clients.cq_signals), d(.worker.idle_yields), d(.worker.rx_pkts)]
			| map(tostring) | join(" ")' \
			"$D/$1-c0-$h.json" "$D/$1-c1-$h.json"
	done | awk '{ for (i = 1; i <= NF; i++) s[i] += $i } END { for (i = 1; i <= 13; i++) printf "%d ", s[i]; print "" }'
}

# polls TAG: the plugin's CQ polls and empty polls over run TAG's four ranks (its comms'
# close lines, NCCL_DEBUG=INFO); "0 0" for the provider.
polls() {
	cat "$D/$1".?.out | awk '/comm .* closed:/ { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^polls/) p += $i
			else if ($(i + 1) ~ /^empty/) e += $i }
		END { printf "%d %d\n", p, e }'
}

# plane_data TAG: data packets (opcodes 0x01-0x09) captured into plane 1, then plane 2.
plane_data() {
	local p f
	for p in 1 2; do
		for f in "$D/$1-p$p"-h*.pcap; do tshark -r "$f" -T fields -e udp.payload 2>/dev/null; done |
			awk '{ o = substr($1, 3, 2) } o >= "01" && o <= "09" { n++ } END { printf "%d ", n }'
	done
	echo
}

log "$(bl_machine), load $(cut -d' ' -f1 /proc/loadavg), daemon keys '${DAEMON_KEYS:-}'," \
	"$([ -n "${PINGPONG:-}" ] && echo "fi_pingpong" || echo "ring over $NET")"
run a "$ITERS_A"
run b "$ITERS_B"
read -r -a A <<<"$(sums a)"
read -r -a B <<<"$(sums b)"
read -r -a PA <<<"$(plane_data a)"
read -r -a PB <<<"$(plane_data b)"
CA=$(( $(cat "$D/a-cpu1") - $(cat "$D/a-cpu0") ))
CB=$(( $(cat "$D/b-cpu1") - $(cat "$D/b-cpu0") ))
read -r -a QA <<<"$(polls a)"
read -r -a QB <<<"$(polls b)"
N=$((ITERS_B - ITERS_A))
per() { printf "%.${2:-1}f" "$(echo "($1) / $N" | bc -l)"; }
if [ -n "${PINGPONG:-}" ]; then
	echo -n "fi_pingpong -p mroc $((SIZE < 64 ? 64 : SIZE)) B, hosts 0 and 1, per round trip (two hops; marginal over $N):"
else
	echo -n "$SIZE B ring over $NET, 4 ranks on 4 hosts, per run (6 hops each rank; marginal over $N runs):"
fi
echo " client doorbells $(per "${B[6]} - ${A[6]}" 2), worker doorbell wake-ups $(per "${B[7]} - ${A[7]}" 2)," \
	"WRs $(per "${B[8]} - ${A[8]}"), CQEs $(per "${B[9]} - ${A[9]}"), CQ signals $(per "${B[10]} - ${A[10]}" 2)," \
	"idle yields $(per "${B[11]} - ${A[11]}"), worker rx $(per "${B[12]} - ${A[12]}")," \
	"plugin polls $(per "${QB[0]} - ${QA[0]}") (empty $(per "${QB[1]} - ${QA[1]}"))," \
	"the 4 daemons' CPU $(per "($CB - $CA) / 1000") us;"
echo "  " \
	"data $(per "${B[0]} - ${A[0]}"), ACKs $(per "${B[1]} - ${A[1]}"), resent $(per "${B[2]} - ${A[2]}" 2)," \
	"worker sleeps $(per "${B[3]} - ${A[3]}"), hand-offs RX $(per "${B[4]} - ${A[4]}") TX $(per "${B[5]} - ${A[5]}")," \
	"data into plane 1 / plane 2 $(per "${PB[0]} - ${PA[0]}") / $(per "${PB[1]} - ${PA[1]}")" \
	"(load $(cut -d' ' -f1 /proc/loadavg))"
# Which packets: opcode (engine/wire.h enum mroc_opcode) / common header flags, per plane.
[ -z "${OPCODES:-}" ] || for p in 1 2; do
	for f in "$D/b-p$p"-h*.pcap; do tshark -r "$f" -T fields -e udp.payload 2>/dev/null; done |
		awk -v p=$p '{ n[substr($1, 3, 2) "/" substr($1, 5, 2)]++ }
			END { for (k in n) printf "  plane %d, opcode/flags %s: %d\n", p, k, n[k] }' | sort
done
