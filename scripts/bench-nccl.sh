#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# nccl-tests' all_reduce_perf, in shape (issue 26): tests/nccl/nccl-harness runs NCCL's
# ring AllReduce, 4 ranks, 8 B .. 64 MiB, over the NCCL net plugin
# (build/libnccl-net-mroc.so, buffers in shared memfds: no copy; and malloc'd: the
# bounce copy), the same ring over kernel TCP (NCCL's socket transport: one TCP
# connection per ring hop, TCP_NODELAY) and over mroc's libfabric provider (tagged
# messages, tests/nccl/fi_net.c) on the same fabric in the same run; hosts with a
# port per plane (scripts/fabric --ports 2 --hosts 4, MTU 3500, no offloads), mrocd on
# AF_XDP on each; 4 ranks on 4 hosts and 4 ranks on 2 hosts (two a host, every hop
# between hosts); lossless and with LOSS% on plane 2.  The first run of each size is
# checked byte for byte.  Also the provider's fi_pingpong (-e rdm, 64 B, data checked)
# between two hosts: the latency target's yardstick.
#
# Writes docs/perf/nccl-allreduce.csv (a row per transport, placement, loss and size:
# time us, algbw and busbw GB/s, the load average at that row) and nccl-pingpong.csv,
# docs/perf/nccl-busbw.png (gnuplot docs/perf/nccl-busbw.gp), markdown tables on stdout,
# progress on stderr.  Root; make bench-nccl (about 5 minutes on a quiet machine).
#
# Environment: BUILD (build), OUT (docs/perf), LOSS (1), SIZES (8 B .. 64 MiB),
# NETS ("mroc mroc-copy tcp fi"; also "fi-rxm": the ring over libfabric's tcp;ofi_rxm), PLACEMENTS ("4 2": hosts), LOSSES ("0 $LOSS"), KEEP,
# DAEMON_KEYS (more keys of mrocd's daemon group, e.g. "workers = 1;" for an A/B),
# TRANSPORT_KEYS (keys of mrocd's transport group, e.g. "peer_host_delay_us = 0;"),
# SLICE and WINDOW (the ring's pipeline: 128K and 8 unless set; NCCL's own ring over a net
# plugin sends 1 MiB slices, 4 in flight, at its default NCCL_BUFFSIZE: SLICE=1M WINDOW=4),
# TRACE (1: every sweep traced, scripts/nccl-trace.sh's breakdown of a ring step logged
# after it; with one size in SIZES, as the breakdown mixes the runs of every size),
# COUNTERS (1: the four daemons' counters summed over each sweep, logged after it:
# packets, ACKs, worker sleeps and doorbell wake-ups, hand-offs between workers, client
# doorbells and completion signals, RTOs and losses, the XDP rings' drops, the peer
# windows' host-delay cuts and undos, and the daemons' threads' CPU, time runnable but
# waiting for a CPU, and context switches (schedstat); divide by the runs, which TRACE's n
# gives; the plugin's CTSs, credits and sends by kind, summed
# over the ranks; and the ranks' own CPU, runnable wait and context switches per timed run
# (the harness's "# cpu" lines; sched_yield's switches count as forced).  Counts and CPU
# times, not wall times: they say where a run's CPU went whatever the load.
set -u
BL_TAG=bnccl
. "$(dirname "$0")/bench-lib.sh"
. "$(dirname "$0")/bench-load.sh"

OUT=${OUT:-$BL_TOP/docs/perf}
LOSS=${LOSS:-1}
SIZES=${SIZES:-8 64 512 4K 32K 256K 1M 4M 16M 64M}
NETS=${NETS:-mroc mroc-copy tcp fi}
PLACEMENTS=${PLACEMENTS:-4 2}
LOSSES=${LOSSES:-0 $LOSS}
HARNESS=$BUILD/tests/nccl/nccl-harness
PLUGIN=$BUILD/libnccl-net-mroc.so
CSV=$OUT/nccl-allreduce.csv
PP_CSV=$OUT/nccl-pingpong.csv

bl_init fi_pingpong ss
[ -x "$HARNESS" ] && [ -f "$PLUGIN" ] || skip "$HARNESS or $PLUGIN not built: run make"
mkdir -p "$OUT"

bl_nccl_fabric

# counters: one line, the sums over the daemons of the counters COUNTERS logs.
counters() {
	local h
	for ((h = 0; h < NHOSTS; h++)); do bl_admin $h counters; done | jq -s -r '
		def sum(f): map(f // 0) | add;
		[sum(.engine.tx_data), sum(.engine.tx_acks), sum(.engine.tx_retx), sum(.engine.rto),
		 sum(.worker.rx_pkts), sum(.worker.sleeps), sum(.worker.wakeups_doorbell),
		 sum(.worker.idle_yields), sum([.workers[]?.handed_off] | add),
		 sum([.workers[]?.handoff_rx_out] | add), sum([.workers[]?.handoff_tx_out] | add),
		 sum(.clients.doorbell_syscalls), sum(.clients.cq_signal_syscalls), sum(.clients.cqes),
		 sum(.engine.rto_spurious), sum(.engine.lost), sum(.backend.tx_ring_full),
		 sum(.backend.handoff_tx_waited), sum(.backend.xsk_rx_dropped), sum(.backend.xsk_rx_ring_full),
		 sum(.backend.xsk_rx_fill_ring_empty), sum(.engine.peer_host_cut),
		 sum(.engine.peer_host_undo)]
		| map(tostring) | join(" ")' | tr '\n' ' '
	dcpu
}

# dcpu: the four daemons' threads' time on a CPU and runnable-but-waiting for one (us,
# schedstat), and their voluntary and forced context switches, summed: what the daemons
# cost and what sharing 2 CPUs cost them, neither hidden by the load.
dcpu() {
	local h t
	for ((h = 0; h < NHOSTS; h++)); do
		for t in /proc/"${DPID[$h]}"/task/*; do
			cat "$t/schedstat" 2>/dev/null
			awk '/^voluntary_ctxt_switches/ { v = $2 } /^nonvoluntary_ctxt_switches/ { n = $2 }
				END { print v + 0, n + 0 }' "$t/status" 2>/dev/null
		done
		# user and system time, the whole process (clock ticks): the daemon's own work
		# (engine, copies) against the kernel's (AF_XDP rings, the veths, wake-ups)
		awk '{ sub(/^.*\) /, ""); print $12, $13, "x", "x" }' /proc/"${DPID[$h]}"/stat
	done | awk -v hz="$(getconf CLK_TCK)" 'NF == 3 { r += $1; w += $2 } NF == 2 { v += $1; n += $2 }
		NF == 4 { u += $1; s += $2 }
		END { printf "%d %d %d %d %d %d\n", r / 1000, w / 1000, v, n, u * 1000 / hz, s * 1000 / hz }'
}

# run NET HOSTS LOSS: one all_reduce_perf-style sweep; rows to the CSV.
run() {
	local net=$1 nh=$2 loss=$3 r h pids=() args rc=0 trace=() c0= pipe=()
	local ch=$BL_DIR/chan-$net-$nh-$loss
	[ -z "${TRACE:-}" ] || trace=(--trace "$BL_DIR/$net-$nh-$loss.tr")
	[ -z "${SLICE:-}" ] || pipe+=(--slice "$SLICE")
	[ -z "${WINDOW:-}" ] || pipe+=(--window "$WINDOW")
	mkdir -p "$ch"
	bl_daemons_check
	bl_plane_set 2 loss "$loss"
	[ -z "${COUNTERS:-}" ] || c0=$(counters)
	for r in 0 1 2 3; do
		h=$((r % nh))
		case $net in
		mroc) args=(--plugin "$PLUGIN") ;;
		mroc-copy) args=(--plugin "$PLUGIN" --malloc) ;;
		tcp) args=(--tcp "${IP[$h]}") ;;
		fi) args=(--fi mroc) ;;
		fi-rxm) args=(--fi "tcp;ofi_rxm") ;;
		esac
		bl_bg ip netns exec "${NS[$h]}" env MROC_SOCKET="$BL_DIR/h$h.ctl" NCCL_MROC_ADDR="${IP[$h]}" \
			FI_PROVIDER_PATH="$BUILD" FI_MROC_ADDR="${IP[$h]}" \
			timeout 900 "$HARNESS" --rank $r --nranks 4 --dir "$ch" "${args[@]}" "${trace[@]}" "${pipe[@]}" bench $SIZES \
			>"$BL_DIR/$net-$nh-$loss.$r.out" 2>&1
		pids+=("$BL_LAST")
	done
	for r in 0 1 2 3; do bl_reap "${pids[$r]}" || rc=1; done
	if [ $rc != 0 ]; then
		log "$net on $nh hosts at $loss% loss failed:"; tail -n 5 "$BL_DIR/$net-$nh-$loss".*.out >&2
		return
	fi
	awk -v n="$net" -v h="$nh" -v l="$loss" -v ld="$(load_now)" \
		'$1 ~ /^[0-9]+$/ { printf "%s,%d,%s,%d,%.1f,%.4f,%.4f,%s\n", n, h, l, $1, $3, $4, $5, ld }' \
		"$BL_DIR/$net-$nh-$loss.0.out" >>"$CSV"
	log "$net, 4 ranks on $nh hosts, $loss% loss on plane 2 (load $(load_now)):" \
		"$(awk '$1 == 8 { t = $3 } $1 == 67108864 { b = $5 } END { print "8 B " t " us, 64 MiB busbw " b " GB/s" }' \
		"$BL_DIR/$net-$nh-$loss.0.out")"
	[ -z "${COUNTERS:-}" ] || paste -d' ' <(echo "$c0" | tr ' ' '\n') <(counters | tr ' ' '\n') |
		awk 'BEGIN { split("tx_data tx_acks tx_retx rto rx_pkts sleeps doorbell_wakeups idle_yields handed_off handoff_rx handoff_tx client_doorbells cq_signals cqes rto_spurious lost tx_ring_full handoff_tx_waited xsk_rx_dropped xsk_rx_ring_full xsk_fill_empty peer_host_cut peer_host_undo daemon_cpu_us daemon_runnable_wait_us daemon_vcsw daemon_ivcsw daemon_user_ms daemon_sys_ms", k) }
		     { printf "%s%s %d", (NR > 1 ? ", " : ""), k[NR], $2 - $1 } END { print "" }' |
		sed "s/^/  $net counters (4 daemons, the sweep): /" >&2
	# The plugin's own: its CTSs (a receive of at most 8 KiB sends none) and how sends left.
	[ -z "${COUNTERS:-}" ] || case $net in mroc*)
		cat "$BL_DIR/$net-$nh-$loss".*.out | awk '$1 == "#" && $2 == "plugin:" {
				for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+$/) v[i] += $i }
			END { printf "  %s plugin (4 ranks, the sweep): %d receives, %d CTSs, %d credits; %d sends: %d eager, %d staged, %d zero-copy\n",
				n, v[3], v[5], v[7], v[10], v[12], v[14], v[16] }' n="$net" >&2 ;;
	esac
	# Each rank's CPU in its timed runs (the harness's "# cpu" lines), summed over the ranks, per size.
	[ -z "${COUNTERS:-}" ] || cat "$BL_DIR/$net-$nh-$loss".*.out | awk '$1 == "#" && $2 == "cpu" {
			k = $3 + 0; n[k] = $4; c[k] += $10; w[k] += $14; v[k] += $16; f[k] += $19; u[k] += $24; s[k] += $27 }
		END { for (k in n) printf "  %s ranks (4, per timed run) %d B: on CPU %.0f us (user %.0f ms, system %.0f ms), runnable waiting %.0f us, context switches %.1f voluntary, %.1f forced (%d runs)\n",
			net, k, c[k], u[k], s[k], w[k], v[k], f[k], n[k] }' net="$net" >&2
	[ -z "${TRACE:-}" ] || "$BL_TOP/scripts/nccl-trace.sh" "$BL_DIR/$net-$nh-$loss.tr" | sed "s/^/  $net: /" >&2
}

# The provider's fi_pingpong, 64 B (its smallest), hosts 0 and 1, lossless.
pingpong() {
	local port=$((47700 + RANDOM % 200)) sp cp
	"$FABRIC" set 2 --name "$BL_NAME" loss 0 >/dev/null
	bl_bg ip netns exec "${NS[1]}" env FI_PROVIDER_PATH="$BUILD" MROC_SOCKET="$BL_DIR/h1.ctl" \
		FI_MROC_ADDR="${IP[1]}" timeout 120 fi_pingpong -p mroc -e rdm -B $port -I 1000 -S 64 -c \
		>"$BL_DIR/pp-srv.out" 2>&1
	sp=$BL_LAST
	bl_wait_listen "${NS[1]}" $port "$sp" || log "fi_pingpong: the server did not listen"
	bl_bg ip netns exec "${NS[0]}" env FI_PROVIDER_PATH="$BUILD" MROC_SOCKET="$BL_DIR/h0.ctl" \
		FI_MROC_ADDR="${IP[0]}" timeout 120 fi_pingpong -p mroc -e rdm -P $port -I 1000 -S 64 -c \
		"${IP[1]}" >"$BL_DIR/pp.out" 2>&1
	cp=$BL_LAST
	bl_reap "$cp"
	bl_reap "$sp"
	awk -v ld="$(load_now)" '$1 == "64" && NF >= 8 { printf "mroc,64,%s,%s\n", $7, ld }' "$BL_DIR/pp.out" >>"$PP_CSV"
	log "fi_pingpong -p mroc 64 B: $(awk '$1 == "64" { print $7 " us half round trip" }' "$BL_DIR/pp.out") (load $(load_now))"
}

echo "net,hosts,loss_pct,bytes,time_us,algbw_gbs,busbw_gbs,load1" >"$CSV"
echo "provider,bytes,half_rtt_us,load1" >"$PP_CSV"
log "$(bl_machine), load $(load_now)${SLICE:+, slice $SLICE}${WINDOW:+, window $WINDOW}"
pingpong
for loss in $LOSSES; do
	for nh in $PLACEMENTS; do
		for net in $NETS; do run "$net" "$nh" "$loss"; done
	done
done
pingpong
"$FABRIC" set 2 --name "$BL_NAME" loss 0 >/dev/null

if command -v gnuplot >/dev/null; then
	(cd "$OUT" && gnuplot "$BL_TOP/docs/perf/nccl-busbw.gp") || log "gnuplot failed"
fi

# Markdown: a table per placement and loss, busbw by transport, the load beside.
for loss in $LOSSES; do
	for nh in $PLACEMENTS; do
		echo
		echo "#### Ring AllReduce, 4 ranks on $nh hosts, $([ "$loss" = 0 ] && echo lossless || echo "$loss% loss on plane 2")"
		echo
		echo "| size | mroc time (us) | mroc busbw (GB/s) | mroc copy busbw | TCP time (us) | TCP busbw (GB/s) | mroc / TCP | provider time (us) | provider busbw (GB/s) | tcp;ofi_rxm busbw | load |"
		echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		awk -F, -v h="$nh" -v l="$loss" 'NR > 1 && $2 == h && $3 == l {
				k = $4; if (!(k in sz)) ks[n++] = k; sz[k] = 1; t[$1, k] = $5; b[$1, k] = $7
				ld[k] = ld[k] (ld[k] ? "/" : "") $8 }
			END { for (i = 0; i < n; i++) { k = ks[i]
					r = b["tcp", k] > 0 ? sprintf("%.2f", b["mroc", k] / b["tcp", k]) : "-"
					printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", k, t["mroc", k], b["mroc", k],
						b["mroc-copy", k], t["tcp", k], b["tcp", k], r, t["fi", k], b["fi", k],
						b["fi-rxm", k], ld[k] } }' "$CSV"
	done
done
