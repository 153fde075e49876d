# SPDX-License-Identifier: MIT
# Helpers shared by scripts/bench-fabric.sh, bench-scale.sh, bench-mpi.sh, bench-nccl.sh,
# bench-ports.sh and nccl-marginal.sh: a scripts/fabric of the run's own, mrocd on AF_XDP on its hosts,
# processes started here tracked by pid (stopped on exit, also on failure or
# Ctrl-C, and never anyone else's), the fabric removed on exit.  Source it after setting
# BL_TAG (a short word naming the script, for the fabric's name and logs).
#
#   bl_init                      root/tool checks, work directory BL_DIR, traps
#   bl_fabric_up [--ports] PLANES HOSTS  a fresh fabric: NS[h] IFN[h] PORTS[h] IP[h] MGMT[h]
#   bl_nccl_fabric               bench-nccl's: 4 hosts, 2 ports, mrocd on each (DAEMON_KEYS,
#                                TRANSPORT_KEYS)
#   bl_daemon_start H NETKEYS TRANSPORTKEYS LIMITSKEYS DAEMONKEYS, bl_daemons_ready, bl_daemons_stop
#   bl_admin H CMD...            mroc-cli -j on host H's daemon
#   bl_plane_set P WHAT VALUE, bl_plane_pkts [bytes]   a plane's impairment; its counters
#   bl_bg CMD... / bl_reap PID   start in the background (pid in BL_LAST) / wait

BL_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$BL_TOP/build}
case $BUILD in /*) ;; *) BUILD=$BL_TOP/$BUILD ;; esac
export BUILD
FABRIC=$BL_TOP/scripts/fabric
MROCD=$BUILD/mrocd
CLI=$BUILD/mroc-cli
PERF=$BUILD/mroc-perf
BL_NAME=$(echo "${BL_TAG:-bl}" | cut -c1-3)$(($$ % 100000))
LINK_MTU=${LINK_MTU:-3500}	# native XDP on veth takes about a page
MROC_MTU=${MROC_MTU:-3380}	# MetaRoCE payload per packet at LINK_MTU (mrocd needs 120 bytes more in token mode)
BL_PIDS=()
BL_DIR=
NPLANES=0 NHOSTS=0
declare -a NS IFN PORTS IP MGMT DPID

log() { echo "${BL_TAG:-bench}: $*" >&2; }
die() { log "$*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

# bl_reap PID: wait for a process we started and forget it, so that cleanup never
# signals a pid the system has given to someone else since.
bl_reap() {
	local i rc
	wait "$1" 2>/dev/null
	rc=$?
	for i in "${!BL_PIDS[@]}"; do [ "${BL_PIDS[$i]}" = "$1" ] && unset "BL_PIDS[$i]"; done
	return $rc
}

# bl_bg CMD...: CMD in the background, tracked; its pid in BL_LAST.
bl_bg() {
	"$@" &
	BL_LAST=$!
	BL_PIDS+=("$BL_LAST")
}

# bl_stop PID: SIGTERM (and SIGCONT, should it be stopped), SIGKILL after 5 s, reaped.
bl_stop() {
	kill -TERM "$1" 2>/dev/null
	kill -CONT "$1" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
	bl_reap "$1"
}

bl_cleanup() {
	local pid
	for pid in "${BL_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; kill -CONT "$pid" 2>/dev/null; done
	for pid in "${BL_PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
	done
	"$FABRIC" down --name "$BL_NAME" >/dev/null 2>&1
	if [ -n "${KEEP:-}" ]; then log "kept $BL_DIR"; elif [ -n "$BL_DIR" ]; then rm -rf "$BL_DIR"; fi
}

# bl_init TOOLS...: root, the binaries, TOOLS on PATH; the work directory and traps.
bl_init() {
	local b t
	[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, XDP)"
	for b in "$MROCD" "$PERF" "$CLI" "$BUILD/bpf/impair.bpf.o"; do
		[ -e "$b" ] || skip "$b is missing: run make"
	done
	for t in ip tc bpftool jq ethtool awk "$@"; do
		command -v "$t" >/dev/null || skip "needs $t (scripts/deps.sh)"
	done
	BL_DIR=$(mktemp -d "/tmp/mroc-${BL_TAG:-bench}.XXXXXX")
	trap bl_cleanup EXIT
	trap 'exit 130' INT TERM
}

bl_daemons_stop() {
	local h
	for ((h = 0; h < NHOSTS; h++)); do
		[ -n "${DPID[$h]:-}" ] || continue
		bl_stop "${DPID[$h]}"
		DPID[$h]=
	done
}

# bl_fabric_up [--ports] PLANES HOSTS: a fresh fabric (--ports: no leaves, every host
# with a port per plane, scripts/fabric up --ports), MTU LINK_MTU on every link, no
# segmentation offloads (a loss is a packet's, for TCP too, as in bench-fabric.sh).
bl_fabric_up() {
	local h n l shape=--planes
	[ "$1" = --ports ] && { shape=--ports; shift; }
	bl_daemons_stop
	"$FABRIC" down --name "$BL_NAME" >/dev/null 2>&1
	"$FABRIC" up --name "$BL_NAME" "$shape" "$1" --hosts "$2" >/dev/null || die "fabric up failed"
	NPLANES=$1 NHOSTS=$2
	eval "$("$FABRIC" env --name "$BL_NAME" | tr ' ' '\n')"
	for ((h = 0; h < NHOSTS; h++)); do
		NS[$h]=$(eval echo "\$FABRIC_NS_$h")
		IFN[$h]=$(eval echo "\$FABRIC_IF_$h")
		PORTS[$h]=$(eval echo "\${FABRIC_PORTS_$h:-}")
		IP[$h]=$(eval echo "\$FABRIC_IP_$h")
		MGMT[$h]=$(eval echo "\$FABRIC_MGMT_$h")
	done
	for n in $(ip netns list | awk '{print $1}' | grep "^mrocf-$BL_NAME-"); do
		for l in $(ip -n "$n" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -vx lo); do
			ip -n "$n" link set "$l" mtu "$LINK_MTU" || die "mtu $LINK_MTU on $n/$l"
			ip netns exec "$n" ethtool -K "$l" tso off gso off gro off >/dev/null 2>&1
		done
	done
}

# bl_plane_set PLANE WHAT VALUE: an impairment on one plane (scripts/fabric set).
bl_plane_set() {
	"$FABRIC" set "$1" --name "$BL_NAME" "$2" "$3" >/dev/null || die "fabric set $*"
}

# bl_plane_pkts [bytes]: packets (or bytes) each plane forwarded towards the last host
# (leaf B's side: the data direction of the benchmarks), space separated, plane 1 first.
bl_plane_pkts() {
	local p
	for ((p = 1; p <= NPLANES; p++)); do
		ip -n "mrocf-$BL_NAME-p$p" -s -j link show pb | jq ".[0].stats64.tx.${1:-packets}"
	done | tr '\n' ' '
}

# bl_daemon_start H [NETWORK_KEYS] [TRANSPORT_KEYS] [LIMITS_KEYS] [DAEMON_KEYS]: mrocd on
# AF_XDP on host H (on every port of a --ports fabric), every other host its peer
# (BL_PEERS=star: only the last host, and the last host every other's), BL_PATHS paths
# (4); admin socket BL_DIR/hH.admin, client socket hH.ctl; DAEMON_KEYS go into the
# daemon group (e.g. "workers = 2;").
bl_daemon_start() {
	local h=$1 peers='' i ifs="\"${IFN[$1]}\""
	for ((i = 0; i < NHOSTS; i++)); do
		[ "$i" != "$h" ] || continue
		[ "${BL_PEERS:-}" != star ] || [ $h = $((NHOSTS - 1)) ] || [ $i = $((NHOSTS - 1)) ] || continue
		peers+="${peers:+, }\"${IP[$i]}\""
	done
	[ -z "${PORTS[$h]:-}" ] || ifs="\"${PORTS[$h]//,/\", \"}\""
	cat >"$BL_DIR/h$h.conf" <<CONF
daemon = { log_level = "warning"; admin_socket = "$BL_DIR/h$h.admin"; control_socket = "$BL_DIR/h$h.ctl"; ${5:-} };
network = { backend = "af_xdp"; interfaces = ( $ifs ); address = "${IP[$h]}"; peers = [ $peers ];
	    xdp_mode = "native"; frame_size = 4096; mtu = $MROC_MTU; ${2:-umem_frames = 8192; ring_size = 2048;} };
transport = { paths = ${BL_PATHS:-4}; ${3:-} };
limits = { ${4:-} };
CONF
	rm -f "$BL_DIR/h$h.admin"
	ip netns exec "${NS[$h]}" "$MROCD" -c "$BL_DIR/h$h.conf" >>"$BL_DIR/h$h.log" 2>&1 &
	DPID[$h]=$!
	BL_PIDS+=("$!")
}

# bl_nccl_fabric: bench-nccl's fabric, 4 hosts with a port per plane (a leaf fabric would
# put hosts 0..2 behind one leaf, and their ring hops would cross no plane); mrocd on both
# ports of each, 8 paths, DAEMON_KEYS into its daemon group, TRANSPORT_KEYS into its
# transport group.
bl_nccl_fabric() {
	local h
	bl_fabric_up --ports 2 4
	BL_PATHS=8
	for ((h = 0; h < NHOSTS; h++)); do
		bl_daemon_start $h "umem_frames = 16384; ring_size = 2048;" "${TRANSPORT_KEYS:-}" "" \
			"${DAEMON_KEYS:-}"
	done
	bl_daemons_ready
}

# bl_daemons_ready: every daemon answers and has a control link up.
bl_daemons_ready() {
	local h
	for ((h = 0; h < NHOSTS; h++)); do
		for _ in $(seq 150); do
			[ -S "$BL_DIR/h$h.admin" ] &&
				[ "$(bl_admin "$h" status | jq '.links_up > 0' 2>/dev/null)" = true ] && break
			kill -0 "${DPID[$h]}" 2>/dev/null || { tail "$BL_DIR/h$h.log" >&2; die "mrocd on host $h exited"; }
			sleep 0.1
		done
		[ -S "$BL_DIR/h$h.admin" ] || die "mrocd on host $h did not start"
	done
}

# bl_daemons_check: a daemon that is gone is reported (its exit status, its log's end)
# and started again with the configuration it had; BL_RESTARTS counts them.
BL_RESTARTS=0
bl_daemons_check() {
	local h rc
	for ((h = 0; h < NHOSTS; h++)); do
		[ -n "${DPID[$h]:-}" ] && ! kill -0 "${DPID[$h]}" 2>/dev/null || continue
		bl_reap "${DPID[$h]}"
		rc=$?
		log "mrocd on host $h is gone (exit status $rc$([ $rc -gt 128 ] && echo ", signal $((rc - 128))")):" \
			"$(tail -n 3 "$BL_DIR/h$h.log" | tr '\n' ' ')- starting it again"
		BL_RESTARTS=$((BL_RESTARTS + 1))
		rm -f "$BL_DIR/h$h.admin"
		ip netns exec "${NS[$h]}" "$MROCD" -c "$BL_DIR/h$h.conf" >>"$BL_DIR/h$h.log" 2>&1 &
		DPID[$h]=$!
		BL_PIDS+=("$!")
		bl_daemons_ready
	done
}

bl_admin() {
	local h=$1
	shift
	"$CLI" -j -S "$BL_DIR/h$h.admin" "$@" 2>/dev/null
}

# bl_wait_listen NS PORT [PID]: until a TCP listener on PORT in NS (up to 20 s), or
# PID exits.
bl_wait_listen() {
	for _ in $(seq 200); do
		ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q . && return 0
		[ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# stats: "min median max" of the numbers on stdin (one per line; empty lines skipped).
stats() {
	sort -g | awk 'NF { v[n++] = $1 } END { if (!n) { print "- - -"; exit }
		m = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2; print v[0], m, v[n - 1] }'
}

bl_machine() {
	echo "$(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d)"
}
