#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# write_lat (8 B, --sleep) of two builds side by side in one run, through a
# 4-plane scripts/fabric (issue #22): idle, and beside a write_bw of 1 MiB
# messages between the same hosts; each variant in turn, REPS rounds, so that
# a machine shared with other work disturbs every variant alike.  A variant
# is a build and a security mode (builds older than the security modes take
# none: leave the mode empty); an optional third field adds daemon keys, e.g.
# "spin=build:none:busy_poll_us = 200;".  Prints one row per run and the medians of
# t_typical (p50) and p99 per variant and load, with the load average.
# Root.
#
#   scripts/bench-lat-ab.sh "NAME=BUILD_DIR[:MODE[:DAEMON_KEYS]]" ...
#   e.g. scripts/bench-lat-ab.sh now=build:token none=build:none old=/work/wt/old/build
#   env: REPS (3), SECS (3), PLANES (4), LOADS ("idle bw"), SNAP (set: print both
#   daemons' `mroc-cli path show` halfway through each write_lat to stderr), BW_ARGS (more
#   mroc-perf options of the write_bw beside, e.g. --sleep)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/tests/e2e/lib.sh"
REPS=${REPS:-3}
SECS=${SECS:-3}
PLANES=${PLANES:-4}
LOADS=${LOADS:-idle bw}
LINK_MTU=3506
[ $# -ge 1 ] || { echo "usage: $0 NAME=BUILD_DIR[:MODE[:DAEMON_KEYS]] ..." >&2; exit 2; }
e2e_require
e2e_fabric_up --planes "$PLANES" --hosts 2
for h in $(ip netns list | awk '{ print $1 }' | grep "^mrocf-$E2E_FABRIC-"); do
	for l in $(ip -n "$h" -o link show | awk -F': ' '{ print $2 }' | cut -d@ -f1 | grep -vx lo); do
		ip -n "$h" link set "$l" mtu $LINK_MTU
	done
done

# up NAME BUILD MODE: mrocd of BUILD on hosts 0 and 1.
up() {
	local h mode=$3 keys=${4:-} pay
	pay=$(e2e_max_payload $LINK_MTU "${mode:-none}")
	for h in 0 1; do
		cat >"$E2E_DIR/$1$h.conf" <<CONF
daemon = { log_level = "warning"; admin_socket = "$E2E_DIR/$1$h.admin"; control_socket = "$E2E_DIR/$1$h.ctl"; $keys };
network = { backend = "af_xdp"; interfaces = ( "$(eval echo "\$FABRIC_IF_$h")" ); address = "$(eval echo "\$FABRIC_IP_$h")";
	    peers = [ "$(eval echo "\$FABRIC_IP_$((1 - h))")" ]; xdp_mode = "native"; umem_frames = 8192; frame_size = 4096;
	    ring_size = 2048; mtu = $pay; };
transport = { paths = 4; rto_min_us = 5000; rto_init_us = 20000; };
CONF
		[ -n "$mode" ] && echo "security = { mode = \"$mode\"; };" >>"$E2E_DIR/$1$h.conf"
		MROCD=$2/mrocd e2e_start "$1$h" "$(eval echo "\$FABRIC_NS_$h")"
	done
	e2e_wait_ready "${1}0"
	e2e_wait_ready "${1}1"
	sleep 1
}

# perf BUILD TAG PORT SIDE TEST ARGS...: one mroc-perf in the background (pid in LAST).
perf() {
	local b=$1 tag=$2 port=$3 side=$4 t=$5
	shift 5
	if [ "$side" = srv ]; then
		ip netns exec "$FABRIC_NS_1" timeout $((SECS + 60)) "$b/mroc-perf" "$t" -S "$E2E_DIR/${CUR}1.ctl" -p "$port" -j \
			--mroc-addr "$FABRIC_IP_1" "$@" >"$E2E_DIR/$tag.srv.json" 2>"$E2E_DIR/$tag.srv.err" &
	else
		ip netns exec "$FABRIC_NS_0" timeout $((SECS + 60)) "$b/mroc-perf" "$t" -S "$E2E_DIR/${CUR}0.ctl" -p "$port" -j \
			"$@" "$FABRIC_MGMT_1" >"$E2E_DIR/$tag.cli.json" 2>"$E2E_DIR/$tag.cli.err" &
	fi
	LAST=$!
}

ROWS=()
echo "| variant | load | run | p50 us | p99 us | write_bw beside, Gbit/s | load average |"
echo "|---|---|---|---|---|---|---|"
for r in $(seq "$REPS"); do
	for v in "$@"; do
		name=${v%%=*} spec=${v#*=}
		build=${spec%%:*} mode= keys=
		[ "$spec" != "$build" ] && mode=${spec#*:}
		case $mode in *:*) keys=${mode#*:} mode=${mode%%:*} ;; esac
		case $build in /*) ;; *) build=$TOP/$build ;; esac
		CUR=$name$r
		up "$CUR" "$build" "$mode" "$keys"
		for load in $LOADS; do
			bw=-
			if [ "$load" = bw ]; then
				perf "$build" bw 18516 srv write_bw -s 1048576 ${BW_ARGS:-}
				bs=$LAST
				sleep 0.3
				perf "$build" bw 18516 cli write_bw -s 1048576 -D $((SECS + 3)) ${BW_ARGS:-}
				bc=$LAST
				sleep 1.5
			fi
			perf "$build" lat 18515 srv write_lat -s 8 -D "$SECS" --sleep
			ls=$LAST
			sleep 0.3
			perf "$build" lat 18515 cli write_lat -s 8 -D "$SECS" --sleep
			if [ -n "${SNAP:-}" ]; then
				sleep "$(awk -v s="$SECS" 'BEGIN { print s / 2 }')"
				for h in 0 1; do
					echo "== $name $load run $r: host $h path show" >&2
					"$build/mroc-cli" -S "$E2E_DIR/${CUR}$h.admin" path show >&2 || true
				done
			fi
			wait "$LAST" "$ls"
			if [ "$load" = bw ]; then
				wait "$bc" "$bs"
				bw=$(jq -r '.results[0].bw_avg_gbps // "-" | if type == "number" then (. * 100 | round / 100) else . end' \
					"$E2E_DIR/bw.cli.json" 2>/dev/null || echo -)
			fi
			read -r p50 p99 < <(jq -r '.results[0] | "\(.t_typical_us) \(.p99_us)"' "$E2E_DIR/lat.cli.json" 2>/dev/null || echo "- -")
			echo "| $name | $load | $r | $p50 | $p99 | $bw | $(cut -d' ' -f1-3 /proc/loadavg) |"
			ROWS+=("$name $load $p50 $p99")
		done
		e2e_stop "${CUR}0"
		e2e_stop "${CUR}1"
	done
done
echo
echo "| variant | load | p50 us: median of $REPS | p99 us: median of $REPS |"
echo "|---|---|---|---|"
for v in "$@"; do
	for load in $LOADS; do
		p50=$(printf '%s\n' "${ROWS[@]}" | awk -v n="${v%%=*}" -v l="$load" '$1 == n && $2 == l && $3 ~ /^[0-9.]+$/ { print $3 }' | sort -g |
			awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", v[int((NR + 1) / 2)]; else printf "-" }')
		p99=$(printf '%s\n' "${ROWS[@]}" | awk -v n="${v%%=*}" -v l="$load" '$1 == n && $2 == l && $4 ~ /^[0-9.]+$/ { print $4 }' | sort -g |
			awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", v[int((NR + 1) / 2)]; else printf "-" }')
		echo "| ${v%%=*} | $load | $p50 | $p99 |"
	done
done
echo "machine: $(nproc) CPUs, load average at end $(cut -d' ' -f1-3 /proc/loadavg)"
