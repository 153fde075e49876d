#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# mroc under libfabric and MPI (issue #14), against the kernel TCP paths on the
# same fabric in the same run: two hosts of a 4-plane ECMP fabric
# (scripts/fabric), mrocd on AF_XDP on each, lossless and with 1% loss on one
# plane.  A single TCP connection crosses one plane, MetaRoCE's 4 paths all of
# them: the fi part puts the loss on each plane in turn before the run, and pins
# the kernel's flows between the hosts (TCP, and UDP but mroc's port: the tcp,
# tcp;ofi_rxm and udp;ofi_rxd providers) onto that plane (FI_LOSS), so they meet
# it every time; the fibw part puts it, in each lossy run, on the plane the run's
# traffic took (LOSS_FOLLOW); the mpi part on each of the 4 planes in turn (TCP
# meets it in about one run of four):
#
#   fi     fi_pingpong -e rdm by size (64 B .. 1 MiB, FI_ITERS ping-pongs, data
#          checked with -c): providers mroc (build/libmroc-fi.so), tcp, tcp;ofi_rxm and
#          udp;ofi_rxd (a quarter of the iterations); half round trip (usec/xfer) and MB/s as fi_pingpong prints
#   fibw   tests/fi/fi_suite's bandwidth tests (FIBW_TESTS: tagged_bw rma_write
#          rma_read; fabtests' fi_rdm_tagged_bw and fi_rma_bw) at 64 KiB and 1 MiB,
#          16 operations in flight, FIBW_ITERS windows, first and last windows'
#          bytes checked: mroc, tcp;ofi_rxm, udp;ofi_rxd; MB/s
#   mpi    Open MPI, 2 ranks (one per host, the second started through
#          scripts/mpi-netns-rsh), tests/mpi/mpi_bench allreduce 8 B .. 1 MiB,
#          results checked by the program: --mca pml cm --mca mtl ofi
#          --mca mtl_ofi_provider_include mroc vs --mca pml ob1 --mca btl tcp,self
#          (TCP on the fabric's planes; Open MPI's own control traffic on the
#          management network).  Not MPICH: Debian 12's is ch4:ucx, it never
#          loads a libfabric provider (README)
#   atomic mroc-perf atomic_lat (FETCH_AND_ADD and CMP_AND_SWAP) against write_lat and
#          read_lat, 8 B, lossless, in turn: p50 and p99
#
# Writes docs/perf/mpi-fi.csv, mpi-fibw.csv, mpi-allreduce.csv (a row per size and run) and mpi-atomic.csv,
# prints markdown tables (medians, with the lossy-plane runs' min and max) on
# stdout and progress on stderr.  Root; part of make bench (make bench-mpi).
#
#   scripts/bench-mpi.sh
#
# Environment: BUILD (build), OUT (docs/perf), REPS (2: lossless runs per
# transport; lossy: one per plane), LOSS (1), FI_ITERS (100), MPI_ITERS (100),
# MPI_RUNS (3: mpi_bench -r), LOSSY_PLANES ("1 2 3 4"), LAT_ITERS (2000: atomic part),
# PARTS ("fi fibw mpi atomic"), FIBW_ITERS (4), FIBW_TESTS ("tagged_bw rma_write rma_read"), KEEP (set: keep the work directory), LOSS_FOLLOW ("follow": the fi
# part's lossy plane is, in each run, the one its first FOLLOW_PKTS (300) packets towards the
# server mostly took, so tcp's single connection always meets the loss; empty: each plane of
# LOSSY_PLANES in turn, as the mpi part does; the fibw part only), FI_LOSS ("pin": the fi part's
# loss on each plane of LOSSY_PLANES from before the run, the kernel's flows pinned onto it;
# "follow": as LOSS_FOLLOW, the old way: fi_pingpong cannot be held, so the loss landed
# while it ran, late at load), FIBW_PROVIDERS (the fibw part's providers,
# "mroc tcp;ofi_rxm udp;ofi_rxd"), FIBW_COUNTERS (1: after each fibw run of mroc, what
# changed in both daemons' engine counters: retransmissions, RTOs, probes, NAKs).
set -u
BL_TAG=bmpi
. "$(dirname "$0")/bench-lib.sh"

OUT=${OUT:-$BL_TOP/docs/perf}
REPS=${REPS:-2}
LOSS=${LOSS:-1}
FI_ITERS=${FI_ITERS:-100}
MPI_ITERS=${MPI_ITERS:-100}
MPI_RUNS=${MPI_RUNS:-3}
LOSSY_PLANES=${LOSSY_PLANES:-1 2 3 4}
PARTS=${PARTS:-fi fibw mpi atomic}
FIBW_ITERS=${FIBW_ITERS:-4}
FIBW_TESTS=${FIBW_TESTS:-tagged_bw rma_write rma_read}
SUITE=$BUILD/tests/fi/fi_suite
LAT_ITERS=${LAT_ITERS:-2000}
LOSS_FOLLOW=${LOSS_FOLLOW-follow}
FI_LOSS=${FI_LOSS:-pin}
FOLLOW_PKTS=${FOLLOW_PKTS:-300}
PROV=$BUILD/libmroc-fi.so
MPIB=$BUILD/tests/mpi/mpi_bench
PROVIDERS=("mroc" "tcp" "tcp;ofi_rxm" "udp;ofi_rxd")
read -r -a BW_PROVIDERS <<<"${FIBW_PROVIDERS:-mroc tcp;ofi_rxm udp;ofi_rxd}"

bl_init fi_pingpong ss
[ -f "$PROV" ] || skip "$PROV not built (libfabric-dev missing?)"
mkdir -p "$OUT"
T_START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
TABLES=$BL_DIR/tables.md
md() { echo "$*" >>"$TABLES"; }

bl_fabric_up 4 2
for h in 0 1; do bl_daemon_start $h; done
bl_daemons_ready
NET=${IP[0]%.*.*}		# 10.N: the fabric's address plan

# lossy_share BEFORE AFTER PLANE: the share of the packets towards host 1 that crossed PLANE.
lossy_share() {
	paste -d' ' <(tr ' ' '\n' <<<"$1") <(tr ' ' '\n' <<<"$2") |
		awk -v p="$3" 'NF == 2 { d = $2 - $1; t += d; if (NR == p) x = d } END { printf "%.2f", t ? x / t : 0 }'
}

# condition REP: "lossless" plane 0 for the lossless runs, else 1% on plane REP.
set_loss() { # PLANE (0: none)
	local p
	for ((p = 1; p <= NPLANES; p++)); do
		bl_plane_set $p loss "$([ "$p" = "$1" ] && echo "$LOSS" || echo 0)"
	done
}

# ---------------------------------------------------------------- fi_pingpong

# pin_kernel_flows PLANE (0: none): the kernel's flows between the two hosts (TCP, and UDP
# to any port but mrocd's) take plane PLANE both ways, whatever their ports hash to: policy
# routing in the two leaves (table 100).  fi_pingpong cannot be held while follow_loss
# finds the plane its one connection took, so its loss landed while it ran, late at load
# (1 packet dropped of 60,000 in a fibw run, session 11); pinned, the loss is set before.
pin_kernel_flows() {
	local lf port
	port=$(bl_admin 0 status | jq -r '.udp_port // 4793')
	for lf in ra rb; do
		while ip -n "mrocf-$BL_NAME-$lf" rule del table 100 2>/dev/null; do :; done
		ip -n "mrocf-$BL_NAME-$lf" route flush table 100 2>/dev/null
	done
	[ "$1" -ge 1 ] || return 0
	ip -n "mrocf-$BL_NAME-ra" route add "$NET.2.0/24" via "$NET.$((10 + $1)).2" table 100 &&
	ip -n "mrocf-$BL_NAME-rb" route add "$NET.1.0/24" via "$NET.$((20 + $1)).1" table 100 ||
		die "pin_kernel_flows $1: no route"
	for lf in ra rb; do
		ip -n "mrocf-$BL_NAME-$lf" rule add ipproto tcp table 100 pref 100 &&
		ip -n "mrocf-$BL_NAME-$lf" rule add ipproto udp dport "1-$((port - 1))" table 100 pref 101 &&
		ip -n "mrocf-$BL_NAME-$lf" rule add ipproto udp dport "$((port + 1))-65534" table 100 pref 102 ||
			die "pin_kernel_flows $1: ip rule"
	done
}

# fi_env H PROVIDER: the environment of a fi_pingpong on host H: the mroc provider
# finds its mrocd; tcp and udp use the fabric interface (not the management one).
fi_env() {
	local h=$1
	echo "FI_PROVIDER_PATH=$BUILD MROC_SOCKET=$BL_DIR/h$h.ctl FI_MROC_ADDR=${IP[$h]}" \
		"FI_TCP_IFACE=${IFN[$h]} FI_UDP_IFACE=${IFN[$h]}"
}

# busiest_plane BEFORE: the plane that has carried most packets towards host 1 since BEFORE.
busiest_plane() {
	paste -d' ' <(tr ' ' '\n' <<<"$1") <(bl_plane_pkts | tr ' ' '\n') |
		awk 'NF == 2 && $2 - $1 > m { m = $2 - $1; p = NR } END { print p + 0 }'
}

# follow_loss CLIENT_PID BEFORE: once the run has sent FOLLOW_PKTS packets towards host 1,
# LOSS% on the plane that carried most of them (the one a single TCP connection
# uses), so that every run's traffic meets the loss; the plane in PLANE.  With HELD (a
# glob): also once a file matches it (fi_suite -H: its warm-up is over, and it waits).
follow_loss() {
	local sum
	for _ in $(seq 600); do
		sum=$(paste -d' ' <(tr ' ' '\n' <<<"$2") <(bl_plane_pkts | tr ' ' '\n') |
			awk 'NF == 2 { t += $2 - $1 } END { print t + 0 }')
		[ "$sum" -ge "$FOLLOW_PKTS" ] || ! kill -0 "$1" 2>/dev/null && break
		[ -z "${3:-}" ] || ! compgen -G "$3" >/dev/null || break
		sleep 0.05
	done
	PLANE=$(busiest_plane "$2")
	[ "$PLANE" -ge 1 ] || PLANE=1
	set_loss "$PLANE"
}

# fi_run PROVIDER COND REP PLANE: one fi_pingpong -e rdm, every size; rows to the CSV.
# PLANE "follow": the lossy plane is chosen during the run (follow_loss).
fi_run() {
	local prov=$1 cond=$2 rep=$3 plane=$4 port=$((47700 + RANDOM % 200)) sp cp rc p0 share it=$FI_ITERS
	bl_daemons_check
	# udp;ofi_rxd moves 1 MiB at a few MB/s here: a quarter of the iterations
	[ "$prov" != "udp;ofi_rxd" ] || it=$(((FI_ITERS + 3) / 4))
	[ "$plane" != follow ] || set_loss 0
	p0=$(bl_plane_pkts)
	# shellcheck disable=SC2046
	bl_bg ip netns exec "${NS[1]}" env $(fi_env 1 "$prov") timeout 300 fi_pingpong -p "$prov" -e rdm \
		-B $port -I "$it" -c
	sp=$BL_LAST
	bl_wait_listen "${NS[1]}" $port "$sp" || log "fi $prov: the server did not listen"
	# shellcheck disable=SC2046
	bl_bg ip netns exec "${NS[0]}" env $(fi_env 0 "$prov") timeout 300 fi_pingpong -p "$prov" -e rdm \
		-P $port -I "$it" -c "${IP[1]}" >"$BL_DIR/fi.out" 2>&1
	cp=$BL_LAST
	if [ "$plane" = follow ]; then
		follow_loss "$cp" "$p0" "$BL_DIR/go.held.*"
		plane=$PLANE
		touch "$BL_DIR/go"
	fi
	bl_reap "$cp"
	rc=$?
	bl_reap "$sp" || rc=$((rc ? rc : 1))
	share=$(lossy_share "$p0" "$(bl_plane_pkts)" "$plane")
	# fi_pingpong: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
	awk -v p="$prov" -v c="$cond" -v r="$rep" -v pl="$plane" -v s="$share" '
		function bytes(x) { m = 1; if (x ~ /k$/) m = 1024; if (x ~ /m$/) m = 1048576; sub(/[km]$/, "", x); return x * m }
		$1 ~ /^[0-9]+[km]?$/ && NF >= 8 { printf "%s,%s,%d,%d,%d,%s,%s,%s\n", p, c, r, pl, bytes($1), $7, $6, s }' \
		"$BL_DIR/fi.out" >>"$FI_CSV"
	log "fi $prov $cond rep $rep (lossy plane $plane, its share $share): exit $rc," \
		"$(awk '$1 == "64" { l = $7 } $1 == "1m" { b = $6 } END { print "64 B " l " us, 1 MiB " b " MB/s" }' "$BL_DIR/fi.out")"
	[ $rc = 0 ] || { tail -5 "$BL_DIR/fi.out" >&2; echo "$prov,$cond,$rep,$plane,failed,,,$share" >>"$FI_CSV"; }
}

exp_fi() {
	local prov rep p
	FI_CSV=$OUT/mpi-fi.csv
	echo "provider,condition,rep,lossy_plane,bytes,usec_per_xfer,mb_per_s,lossy_plane_share" >"$FI_CSV"
	set_loss 0
	for ((rep = 1; rep <= REPS; rep++)); do
		for prov in "${PROVIDERS[@]}"; do fi_run "$prov" lossless "$rep" 0; done
	done
	for p in $LOSSY_PLANES; do
		if [ "$FI_LOSS" = pin ]; then
			pin_kernel_flows "$p"
			set_loss "$p"
		fi
		for prov in "${PROVIDERS[@]}"; do
			fi_run "$prov" "loss$LOSS" "$p" "$([ "$FI_LOSS" = pin ] && echo "$p" || echo follow)"
		done
	done
	pin_kernel_flows 0
	set_loss 0
	local cond sizes
	sizes=$(awk -F, 'NR > 1 && $5 != "failed" { print $5 }' "$FI_CSV" | sort -gu)
	for cond in lossless "loss$LOSS"; do
		md "#### fi_pingpong -e rdm, $([ $cond = lossless ] && echo lossless || echo "${LOSS}% loss on one plane ($([ "$FI_LOSS" = follow ] && echo "the plane the run's traffic took" || echo "each plane in turn, the kernel's flows pinned onto it"))")"
		md ""
		md "Median over the runs (lossless: $REPS each; lossy: $(wc -w <<<"$LOSSY_PLANES") each, $([ "$FI_LOSS" = follow ] && echo "the lossy plane chosen in each run as the one its first $FOLLOW_PKTS packets towards the server mostly crossed (set while the run went on)" || echo "one per plane, set before the run; TCP and udp;ofi_rxd pinned onto it by policy routing in the leaves, so that they always meet the loss")) of fi_pingpong's half round trip (us) and MB/s; in brackets min..max. Last row: share of the packets towards the server that crossed the lossy plane (median, min..max)."
		md ""
		local hdr="| bytes |" sep="|---|"
		for prov in "${PROVIDERS[@]}"; do hdr+=" $prov us |"; sep+="---|"; done
		for prov in "${PROVIDERS[@]}"; do hdr+=" $prov MB/s |"; sep+="---|"; done
		md "$hdr"
		md "$sep"
		for b in $sizes; do
			local row="| $b |"
			for col in 6 7; do
				for prov in "${PROVIDERS[@]}"; do
					row+=" $(awk -F, -v p="$prov" -v c="$cond" -v b="$b" -v k=$col '$1 == p && $2 == c && $5 == b { print $k }' "$FI_CSV" |
						stats | awk '$1 == "-" { print "-"; next } { printf "%.1f (%.1f..%.1f)", $2, $1, $3 }') |"
				done
			done
			md "$row"
		done
		if [ $cond != lossless ]; then
			local row="| lossy-plane share |"
			for prov in "${PROVIDERS[@]}"; do
				row+=" $(awk -F, -v p="$prov" -v c="$cond" '$1 == p && $2 == c && $5 == 64 { print $8 }' "$FI_CSV" | stats |
					awk '{ printf "%s (%s..%s)", $2, $1, $3 }') |"
			done
			md "$row$(printf ' |%.0s' "${PROVIDERS[@]}")"
		fi
		md ""
	done
}

# ---------------------------------------------------------------- MPI

# mpi_run TRANSPORT COND REP PLANE: mpi_bench allreduce over 2 ranks; rows to the CSV.
mpi_run() {
	local tr=$1 cond=$2 rep=$3 plane=$4 rc p0 share args
	bl_daemons_check
	if [ "$tr" = mroc ]; then
		args=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include mroc)
	else
		args=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$NET.1.0/24,$NET.2.0/24")
	fi
	p0=$(bl_plane_pkts)
	ip netns exec "${NS[0]}" env FI_PROVIDER_PATH="$BUILD" FI_MROC_ADDR="${IP[0]}" \
		MROC_SOCKET="$BL_DIR/h0.ctl" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		MROC_NETNS_HOSTS="hostb=${NS[1]},${IP[1]},$BL_DIR/h1.ctl" \
		timeout 600 mpirun -np 2 --host localhost:1,hostb:1 \
		--mca plm_rsh_agent "$BL_TOP/scripts/mpi-netns-rsh" -x FI_PROVIDER_PATH \
		--mca oob_tcp_if_include "$NET.250.0/24" "${args[@]}" \
		"$MPIB" allreduce -s 8 -S 1048576 -n "$MPI_ITERS" -r "$MPI_RUNS" >"$BL_DIR/mpi.out" 2>&1
	rc=$?
	share=$(lossy_share "$p0" "$(bl_plane_pkts)" "$plane")
	grep -q "^# results verified" "$BL_DIR/mpi.out" || [ "$rc" != 0 ] || rc=1
	# mpi_bench: op bytes iters t_min_us t_median_us t_max_us MB/s_at_median
	awk -v t="$tr" -v c="$cond" -v r="$rep" -v pl="$plane" -v s="$share" -v ok="$rc" '
		$1 == "allreduce" { printf "%s,%s,%d,%d,%d,%s,%s,%s,%s\n", t, c, r, pl, $2, $5, $7, s, (ok == 0 ? "verified" : "failed") }' \
		"$BL_DIR/mpi.out" >>"$MPI_CSV"
	log "mpi $tr $cond rep $rep (lossy plane $plane, its share $share): exit $rc," \
		"$(awk '$1 == "allreduce" && $2 == 8 { a = $5 } $1 == "allreduce" && $2 == 1048576 { b = $5 } END { print "8 B " a " us, 1 MiB " b " us" }' "$BL_DIR/mpi.out")"
	[ "$rc" = 0 ] || tail -5 "$BL_DIR/mpi.out" >&2
}

exp_mpi() {
	local tr rep p
	command -v mpirun >/dev/null || { log "no mpirun (openmpi-bin): MPI part skipped"; return; }
	[ -x "$MPIB" ] || { log "$MPIB not built (libopenmpi-dev): MPI part skipped"; return; }
	MPI_CSV=$OUT/mpi-allreduce.csv
	echo "transport,condition,rep,lossy_plane,bytes,t_median_us,mb_per_s,lossy_plane_share,status" >"$MPI_CSV"
	set_loss 0
	for ((rep = 1; rep <= REPS; rep++)); do
		for tr in mroc tcp; do mpi_run $tr lossless "$rep" 0; done
	done
	for p in $LOSSY_PLANES; do
		set_loss $p
		for tr in mroc tcp; do mpi_run $tr "loss$LOSS" "$p" "$p"; done
	done
	set_loss 0
	md "#### Open MPI MPI_Allreduce, 2 ranks on 2 hosts: mroc (mtl ofi) vs Open MPI's TCP (btl tcp)"
	md ""
	md "Time per allreduce in us: median over the runs (lossless: $REPS; ${LOSS}% loss on one plane: 4, one per plane) of mpi_bench's median of $MPI_RUNS x $MPI_ITERS operations; in brackets min..max. faster: mroc's median below TCP's. Every result checked by mpi_bench (failed runs: n/N)."
	md ""
	md "| bytes | lossless mroc | lossless TCP | faster | ${LOSS}% loss mroc | ${LOSS}% loss TCP | faster |"
	md "|---|---|---|---|---|---|---|"
	local b cond row m t
	for b in $(awk -F, 'NR > 1 { print $5 }' "$MPI_CSV" | sort -gu); do
		row="| $b |"
		for cond in lossless "loss$LOSS"; do
			m=$(awk -F, -v c="$cond" -v b="$b" '$1 == "mroc" && $2 == c && $5 == b { print $6 }' "$MPI_CSV" | stats)
			t=$(awk -F, -v c="$cond" -v b="$b" '$1 == "tcp" && $2 == c && $5 == b { print $6 }' "$MPI_CSV" | stats)
			row+=" $(awk '{ printf "%.1f (%.1f..%.1f)", $2, $1, $3 }' <<<"$m") | $(awk '{ printf "%.1f (%.1f..%.1f)", $2, $1, $3 }' <<<"$t") |"
			row+=" $(awk -v m="${m#* }" -v t="${t#* }" 'BEGIN { split(m, a, " "); split(t, b, " "); print (a[1] < b[1] ? "yes" : "no") }') |"
		done
		md "$row"
	done
	md ""
	md "failed runs: mroc $(awk -F, '$1 == "mroc" && $9 == "failed" { print $2 "/" $3 }' "$MPI_CSV" | sort -u | wc -l), TCP $(awk -F, '$1 == "tcp" && $9 == "failed" { print $2 "/" $3 }' "$MPI_CSV" | sort -u | wc -l)"
	md ""
}

# ---------------------------------------------------------------- atomics

# lat_p50 TEST ARGS...: one mroc-perf latency test host 0 -> host 1, lossless; its p50 (us)
# in P50, p99 in P99 (empty if it failed).
lat_p50() {
	local t=$1 sp port=18790
	shift
	bl_daemons_check
	bl_bg ip netns exec "${NS[1]}" "$PERF" "$t" -S "$BL_DIR/h1.ctl" -j -p $port --mroc-addr "${IP[1]}" \
		>"$BL_DIR/lat.srv.json" 2>"$BL_DIR/lat.srv.err"
	sp=$BL_LAST
	bl_wait_listen "${NS[1]}" $port "$sp"
	ip netns exec "${NS[0]}" "$PERF" "$t" -S "$BL_DIR/h0.ctl" -j -p $port -s 8 -n "$LAT_ITERS" "$@" \
		"${MGMT[1]}" >"$BL_DIR/lat.cli.json" 2>"$BL_DIR/lat.cli.err"
	bl_reap "$sp"
	P50=$(jq -r '.results[0].t_typical_us // empty' "$BL_DIR/lat.cli.json" 2>/dev/null)
	P99=$(jq -r '.results[0].p99_us // empty' "$BL_DIR/lat.cli.json" 2>/dev/null)
	[ -n "$P50" ] || log "$t: FAILED: $(cat "$BL_DIR/lat.cli.err" "$BL_DIR/lat.srv.err" | head -2 | tr '\n' ' ')"
}

# atomic_lat (FETCH_AND_ADD, CMP_AND_SWAP) against write_lat 8 B, in turn, REPS x 2 rounds.
exp_atomic() {
	local csv=$OUT/mpi-atomic.csv rep t
	echo "rep,test,p50_us,p99_us" >"$csv"
	set_loss 0
	for ((rep = 1; rep <= 2 * REPS; rep++)); do
		for t in write_lat read_lat "atomic_lat FETCH_AND_ADD" "atomic_lat CMP_AND_SWAP"; do
			case $t in *_lat) lat_p50 "$t" ;; *) lat_p50 atomic_lat -A "${t#* }" ;; esac
			log "atomic: $t rep $rep: p50 ${P50:-?} p99 ${P99:-?} us"
			echo "$rep,${t// /:},$P50,$P99" >>"$csv"
		done
	done
	md "#### atomic_lat against write_lat, 8 B, lossless"
	md ""
	md "p50 and p99 in us: min / median / max over $((2 * REPS)) runs of $LAT_ITERS operations each, the tests in turn; median p50 / write_lat's median p50 (the target's ratio), and / twice that (write_lat's whole round trip). write_lat reports half a ping-pong's round trip (as perftest does), read_lat and atomic_lat the time of one request and its response."
	md ""
	md "| test | p50 us | p99 us | p50 / write_lat p50 | p50 / (2 x write_lat p50) |"
	md "|---|---|---|---|---|"
	local w
	w=$(awk -F, '$2 == "write_lat" { print $3 }' "$csv" | stats | cut -d' ' -f2)
	for t in write_lat read_lat atomic_lat:FETCH_AND_ADD atomic_lat:CMP_AND_SWAP; do
		md "| ${t//:/ } | $(awk -F, -v t="$t" '$2 == t { print $3 }' "$csv" | stats | awk '{ printf "%.1f / %.1f / %.1f", $1, $2, $3 }') |" \
			"$(awk -F, -v t="$t" '$2 == t { print $4 }' "$csv" | stats | awk '{ printf "%.1f / %.1f / %.1f", $1, $2, $3 }') |" \
			"$(awk -F, -v t="$t" '$2 == t { print $3 }' "$csv" | stats | awk -v w="$w" '{ printf "%.2f | %.2f", ($2 + 0) / w, ($2 + 0) / (2 * w) }') |"
	done
	md ""
}

# ---------------------------------------------------------------- fi_suite bandwidth

# fibw_run PROVIDER TEST COND REP PLANE: one fi_suite bandwidth test, 64 KiB and 1 MiB; rows
# to the CSV.  PLANE "follow": the lossy plane is chosen after the warm-up window, while
# fi_suite holds (-H), and before its timed windows: the loss covers all of them, and
# follow_loss's polling (dozens of ip, jq and bpftool runs) is not timed beside them.
# (Until session 11 the loss was set while the windows ran: on the 2-CPU machine it
# landed near their end, 1 packet dropped in a 1 MiB run, and the polling took CPU from
# the run: mroc's "1% loss" figures were lossless runs with a poller beside them.)
fibw_run() {
	local prov=$1 t=$2 cond=$3 rep=$4 plane=$5 port=$((47900 + RANDOM % 90)) sp cp rc p0 share c0=
	local args=(-p "$prov" -P $port -n "$FIBW_ITERS" -w 16 -q -S 65536,1048576)
	bl_daemons_check
	rm -f "$BL_DIR"/go "$BL_DIR"/go.held.*
	[ "$plane" != follow ] || { set_loss 0; args+=(-H "$BL_DIR/go"); }
	args+=("$t")
	p0=$(bl_plane_pkts)
	[ -z "${FIBW_COUNTERS:-}" ] || [ "$prov" != mroc ] || c0=$(engine_counters)
	# shellcheck disable=SC2046
	bl_bg ip netns exec "${NS[1]}" env $(fi_env 1 "$prov") timeout 600 "$SUITE" "${args[@]}" \
		>"$BL_DIR/bw.srv" 2>&1
	sp=$BL_LAST
	# shellcheck disable=SC2046
	bl_bg ip netns exec "${NS[0]}" env $(fi_env 0 "$prov") timeout 600 "$SUITE" "${args[@]}" \
		"${IP[1]}" >"$BL_DIR/bw.cli" 2>&1
	cp=$BL_LAST
	if [ "$plane" = follow ]; then
		follow_loss "$cp" "$p0" "$BL_DIR/go.held.*"
		plane=$PLANE
		touch "$BL_DIR/go"
	fi
	bl_reap "$cp"
	rc=$?
	bl_reap "$sp" || rc=$((rc ? rc : 1))
	share=$(lossy_share "$p0" "$(bl_plane_pkts)" "$plane")
	# fi_suite: NAME BYTES bytes ITERS x WINDOW MB/s MB/s (the side that times prints it)
	cat "$BL_DIR/bw.srv" "$BL_DIR/bw.cli" | awk -v p="$prov" -v t="$t" -v c="$cond" -v r="$rep" \
		-v pl="$plane" -v s="$share" '$1 == t && $3 == "bytes" && $NF == "MB/s" {
			printf "%s,%s,%s,%d,%d,%d,%s,%s\n", p, t, c, r, pl, $2, $(NF - 1), s }' >>"$BW_CSV"
	log "fibw $prov $t $cond rep $rep (lossy plane $plane, its share $share): exit $rc," \
		"$(cat "$BL_DIR/bw.srv" "$BL_DIR/bw.cli" | awk -v t="$t" '$1 == t && $NF == "MB/s" { printf "%s B %s MB/s; ", $2, $(NF - 1) }')"
	[ $rc = 0 ] || { tail -n 3 "$BL_DIR/bw.srv" "$BL_DIR/bw.cli" >&2; echo "$prov,$t,$cond,$rep,$plane,failed,,$share" >>"$BW_CSV"; }
	[ -z "$c0" ] || log "  engine counters that moved (both daemons): $(jq -n -r --argjson a "$c0" \
		--argjson b "$(engine_counters)" '$b | to_entries | map(select(.value | type == "number") |
		"\(.key) \(.value - ($a[.key] // 0))") | map(select(endswith(" 0") | not)) | join(", ")')"
}

# engine_counters: hosts 0 and 1's engine counters, summed, and the packets the planes
# dropped (fabric_dropped), as one JSON object.
engine_counters() {
	{ bl_admin 0 counters; bl_admin 1 counters
	  "$FABRIC" show --name "$BL_NAME" | awk 'NR > 1 { d += $7 } END { printf "{\"engine\": {\"fabric_dropped\": %d}}\n", d }'
	} | jq -s -c '
		map(.engine) | reduce .[] as $e ({}; reduce ($e | to_entries[] |
		select(.value | type == "number")) as $x (.; .[$x.key] += $x.value))'
}

exp_fibw() {
	local prov rep p t cond
	BW_CSV=$OUT/mpi-fibw.csv
	[ -x "$SUITE" ] || { log "fibw: $SUITE not built"; return; }
	echo "provider,test,condition,rep,lossy_plane,bytes,mb_per_s,lossy_plane_share" >"$BW_CSV"
	set_loss 0
	for ((rep = 1; rep <= REPS; rep++)); do
		for t in $FIBW_TESTS; do
			for prov in "${BW_PROVIDERS[@]}"; do fibw_run "$prov" "$t" lossless "$rep" 0; done
		done
	done
	for p in $LOSSY_PLANES; do
		[ -n "$LOSS_FOLLOW" ] || set_loss $p
		for t in $FIBW_TESTS; do
			for prov in "${BW_PROVIDERS[@]}"; do
				fibw_run "$prov" "$t" "loss$LOSS" "$p" "${LOSS_FOLLOW:-$p}"
			done
		done
	done
	set_loss 0
	for t in $FIBW_TESTS; do
		md "#### fi_suite $t (fabtests' $([ "$t" = tagged_bw ] && echo fi_rdm_tagged_bw || echo "fi_rma_bw -o ${t#rma_}")), 16 in flight, MB/s"
		md ""
		md "Median over the runs (lossless: $REPS; ${LOSS}% loss on one plane: $(wc -w <<<"$LOSSY_PLANES")$([ -n "$LOSS_FOLLOW" ] && echo ", the plane the run's traffic took")), min..max in brackets."
		md ""
		local hdr="| bytes | condition |" sep="|---|---|"
		for prov in "${BW_PROVIDERS[@]}"; do hdr+=" $prov |"; sep+="---|"; done
		md "$hdr"
		md "$sep"
		for b in 65536 1048576; do
			for cond in lossless "loss$LOSS"; do
				local row="| $b | $cond |"
				for prov in "${BW_PROVIDERS[@]}"; do
					row+=" $(awk -F, -v p="$prov" -v t="$t" -v c="$cond" -v b="$b" '$1 == p && $2 == t && $3 == c && $6 == b { print $7 }' "$BW_CSV" |
						stats | awk '$1 == "-" { print "-"; next } { printf "%.1f (%.1f..%.1f)", $2, $1, $3 }') |"
				done
				md "$row"
			done
		done
		md ""
	done
}

for e in $PARTS; do
	case $e in
	fi|fibw|mpi|atomic) log "== $e ($(($(date +%s) - T_START)) s so far)"; "exp_$e" ;;
	*) die "unknown part $e (fi fibw mpi atomic)" ;;
	esac
done
bl_daemons_check
bl_daemons_stop
[ "$BL_RESTARTS" = 0 ] || md "mrocd was found gone and restarted $BL_RESTARTS time(s) during the run (see stderr)."
cat "$TABLES"
echo "machine: $(bl_machine), $(($(date +%s) - T_START)) s; load average $LOAD_START at the start," \
	"$(cut -d' ' -f1-3 /proc/loadavg) at the end; REPS=$REPS LOSS=$LOSS FI_ITERS=$FI_ITERS MPI_ITERS=$MPI_ITERS MPI_RUNS=$MPI_RUNS"
