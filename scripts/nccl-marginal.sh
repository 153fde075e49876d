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
# Environment: BUILD, SIZE (8), ITERS_A (10), ITERS_B (210), DAEMON_KEYS (more keys of
# mrocd's daemon group, e.g. "lone_home_port = false;" or "workers = 1;"), OUTD (where the
# captures, counters and harness output stay; default a directory removed at the end),
# OPCODES=1 (also each plane's packets by opcode and flags, from the larger run).
# Root; about 2 minutes at load 20.
set -u
BL_TAG=nmarg
. "$(dirname "$0")/bench-lib.sh"

HARNESS=$BUILD/tests/nccl/nccl-harness
PLUGIN=$BUILD/libnccl-net-mroc.so
SIZE=${SIZE:-8}
ITERS_A=${ITERS_A:-10}
ITERS_B=${ITERS_B:-210}

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
	for r in 0 1 2 3; do
		bl_bg ip netns exec "${NS[$r]}" env MROC_SOCKET="$BL_DIR/h$r.ctl" NCCL_MROC_ADDR="${IP[$r]}" \
			timeout 900 "$HARNESS" --rank $r --nranks 4 --dir "$ch" --plugin "$PLUGIN" \
			allreduce "$SIZE" --iters "$it" >"$D/$tag.$r.out" 2>&1
		pids+=("$BL_LAST")
	done
	for r in 0 1 2 3; do bl_reap "${pids[$r]}" || rc=1; done
	sleep 1		# the last ACKs
	for ((h = 0; h < NHOSTS; h++)); do bl_admin $h counters >"$D/$tag-c1-$h.json"; done
	kill -INT "${caps[@]}" 2>/dev/null
	for p in "${caps[@]}"; do bl_reap "$p"; done
	[ $rc = 0 ] || { tail -n 3 "$D/$tag".*.out >&2; die "the ring of $it runs failed (output above)"; }
}

# sums TAG: the four daemons' counter differences over run TAG, space separated.
sums() {
	local h
	for ((h = 0; h < NHOSTS; h++)); do
		jq -s -r '.[0] as $a | .[1] as $b
			| def w(f): ([$b.workers[]? | f] | add // 0) - ([$a.workers[]? | f] | add // 0);
			[$b.engine.tx_data - $a.engine.tx_data, $b.engine.tx_acks - $a.engine.tx_acks,
			 $b.engine.tx_retx - $a.engine.tx_retx, $b.worker.sleeps - $a.worker.sleeps,
			 w(.handoff_rx_out), w(.handoff_tx_out)] | map(tostring) | join(" ")' \
			"$D/$1-c0-$h.json" "$D/$1-c1-$h.json"
	done | awk '{ for (i = 1; i <= NF; i++) s[i] += $i } END { for (i = 1; i <= 6; i++) printf "%d ", s[i]; print "" }'
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

log "$(bl_machine), load $(cut -d' ' -f1 /proc/loadavg), daemon keys '${DAEMON_KEYS:-}'"
run a "$ITERS_A"
run b "$ITERS_B"
read -r -a A <<<"$(sums a)"
read -r -a B <<<"$(sums b)"
read -r -a PA <<<"$(plane_data a)"
read -r -a PB <<<"$(plane_data b)"
N=$((ITERS_B - ITERS_A))
per() { printf "%.${2:-1}f" "$(echo "($1) / $N" | bc -l)"; }
echo "$SIZE B ring, 4 ranks on 4 hosts, per run (marginal over $N runs):" \
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
