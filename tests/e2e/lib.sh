# SPDX-License-Identifier: MIT
# Helpers for end-to-end tests: two hosts in network namespaces the test makes
# itself, joined by a veth pair, each running a real mrocd.  Everything is
# removed on exit (also on failure or Ctrl-C); only processes this test
# started are stopped, by pid.  Source it; tests exit 77 to be skipped.

E2E_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$E2E_TOP/$BUILD ;; esac
MROCD=$BUILD/mrocd

skip() { echo "SKIP: $*"; exit 77; }
# The reason again after the logs: a long dump shown cut in the middle (as CI shows it) lost it.
fail() { echo "FAIL: $*"; e2e_dump_logs; echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

e2e_require() {
	[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, XDP)"
	[ -x "$MROCD" ] || skip "$MROCD not built"
	local t
	for t in ip socat jq ping; do
		command -v "$t" >/dev/null || skip "needs $t (scripts/deps.sh installs it)"
	done
	ip netns add "mroc-probe-$$" 2>/dev/null || skip "cannot create network namespaces"
	ip netns del "mroc-probe-$$"
}

# e2e_require_unsanitized WHAT: skip in a sanitizer build (make SANITIZE=...) when a
# program built without the sanitizer runtime (fi_info, mpirun) would load our
# sanitized libraries: ASan refuses to start there.
e2e_require_unsanitized() {
	[ -z "${SANITIZE:-}" ] ||
		skip "SANITIZE=$SANITIZE build: $1 would load sanitized libraries into an unsanitized program"
}

# Names unique to this run so parallel runs never collide.
E2E_ID=$$
NS_A=mroc-e2e-$E2E_ID-a
NS_B=mroc-e2e-$E2E_ID-b
IF_A=mre${E2E_ID}a
IF_B=mre${E2E_ID}b
IP_A=10.201.$((E2E_ID % 250)).1
IP_B=10.201.$((E2E_ID % 250)).2
E2E_DIR=
E2E_PIDS=()

e2e_cleanup() {
	local pid
	for pid in "${E2E_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${E2E_PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
	done
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	[ -n "$E2E_DIR" ] && rm -rf "$E2E_DIR"
}

e2e_setup_pair() {
	E2E_DIR=$(mktemp -d /tmp/mroc-e2e.XXXXXX)
	trap e2e_cleanup EXIT
	trap 'exit 130' INT TERM
	ip netns add "$NS_A" && ip netns add "$NS_B" || fail "ip netns add"
	ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_B" netns "$NS_B" || fail "veth"
	ip -n "$NS_A" addr add "$IP_A/24" dev "$IF_A"
	ip -n "$NS_B" addr add "$IP_B/24" dev "$IF_B"
	for ns in "$NS_A" "$NS_B"; do
		ip -n "$ns" link set lo up
	done
	ip -n "$NS_A" link set "$IF_A" up
	ip -n "$NS_B" link set "$IF_B" up
}

# e2e_config NAME BACKEND IFACE ADDR PEER [extra network keys]
e2e_config() {
	local name=$1 backend=$2 ifname=$3 addr=$4 peer=$5 extra=${6:-}
	cat >"$E2E_DIR/$name.conf" <<CONF
daemon = {
	log_level = "debug";
	busy_poll_us = 20;
	admin_socket = "$E2E_DIR/$name.admin";
	control_socket = "$E2E_DIR/$name.ctl";
};
network = {
	backend = "$backend";
	interfaces = ( "$ifname" );
	address = "$addr";
	peers = [ "$peer" ];
	xdp_mode = "native";
	umem_frames = 4096;
	ring_size = 1024;
	sport_min = 20000;
	sport_max = 20063;
	$extra
};
transport = {
	keepalive_ms = 100;
	dead_peer_ms = 3000;
	rto_init_us = 20000;
};
CONF
}

# e2e_pair_ipv6_only: after e2e_setup_pair, the pair's IPv4 addresses replaced by IPv6 ones
# (IP_A, IP_B in fd07:ID::/64), each host the other's default route (so "the route's source"
# has an IPv6 answer and no IPv4 one).
e2e_pair_ipv6_only() {
	local v
	v=$(printf '%x' $((E2E_ID % 65536)))
	IP_A=fd07:$v::1 IP_B=fd07:$v::2
	ip -n "$NS_A" -4 addr flush dev "$IF_A"
	ip -n "$NS_B" -4 addr flush dev "$IF_B"
	ip -n "$NS_A" addr add "$IP_A/64" dev "$IF_A" nodad
	ip -n "$NS_B" addr add "$IP_B/64" dev "$IF_B" nodad
	ip -n "$NS_A" -6 route add default via "$IP_B" dev "$IF_A"
	ip -n "$NS_B" -6 route add default via "$IP_A" dev "$IF_B"
}

# e2e_pair_up: both hosts of e2e_setup_pair on AF_XDP (log level info), started and ready.
e2e_pair_up() {
	e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
	e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
	sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
	e2e_start a "$NS_A"
	e2e_start b "$NS_B"
	e2e_wait_ready a
	e2e_wait_ready b
}

# e2e_start_linked: mrocd a in NS_A and b in NS_B (their configs written, each the other's
# peer), ready, and both control connections up on both (its own to the peer and the peer's
# to it: the handshakes done before a test's own; with one of them up, the other's REQ could
# still arrive later, seen on an ASan build as a half-open entry test_ghost_net counted).
e2e_start_linked() {
	local n
	e2e_start a "$NS_A"
	e2e_start b "$NS_B"
	e2e_wait_ready a
	e2e_wait_ready b
	for n in a b; do
		e2e_wait $n links '[.links[] | select(.state == "up")] | length >= 2' 10 ||
			fail "$n: control connections not both up: $(e2e_admin $n links)"
	done
}

# e2e_start NAME NETNS: mrocd in the namespace, with our own NOTIFY_SOCKET listener.
e2e_start() {
	local name=$1 ns=$2 sp
	# A restart: the first start's socat still listens (a second could not bind the
	# socket), and the log starts empty, or e2e_wait_ready took the last start's READY=1
	# and a client looked for the control socket before this mrocd made it.
	: >"$E2E_DIR/$name.notify.log"
	sp=$(eval "echo \${NOTIFY_PID_$name:-}")
	if [ -z "$sp" ] || ! kill -0 "$sp" 2>/dev/null; then
		rm -f "$E2E_DIR/$name.notify"
		socat -u "UNIX-RECV:$E2E_DIR/$name.notify" "OPEN:$E2E_DIR/$name.notify.log,creat,append" &
		E2E_PIDS+=($!)
		eval "NOTIFY_PID_$name=$!"
		for _ in $(seq 50); do [ -S "$E2E_DIR/$name.notify" ] && break; sleep 0.05; done
	fi
	NOTIFY_SOCKET=$E2E_DIR/$name.notify ip netns exec "$ns" "$MROCD" -c "$E2E_DIR/$name.conf" \
		>"$E2E_DIR/$name.log" 2>&1 &
	eval "PID_$name=$!"
	E2E_PIDS+=($!)
}

e2e_wait_ready() {
	local name=$1
	for _ in $(seq 100); do
		grep -q "READY=1" "$E2E_DIR/$name.notify.log" 2>/dev/null && return 0
		kill -0 "$(e2e_pid "$name")" 2>/dev/null || fail "mrocd $name exited during start-up"
		sleep 0.1
	done
	fail "mrocd $name sent no READY=1 within 10 s"
}

e2e_pid() { eval "echo \$PID_$1"; }

# e2e_alive NAME WHAT: fail unless mrocd NAME is still running after WHAT.
e2e_alive() { kill -0 "$(e2e_pid "$1")" 2>/dev/null || fail "mrocd $1 died: $2"; }

# e2e_max_payload LINK_MTU [SECURITY_MODE]: the largest network.mtu (MetaRoCE payload) mrocd
# accepts on a link of that MTU in that security mode (mrocd's default: token).  As daemon.c
# check_mtu: IPv6 + UDP 48 bytes, MetaRoCE data headers 60, the ICRC 4, and the token's tag 8
# or the AEAD trailer 16.
e2e_max_payload() {
	local sec=8
	case ${2:-token} in none) sec=0 ;; aead) sec=16 ;; esac
	echo $(($1 - 48 - 60 - 4 - sec))
}

# e2e_nobody_setup NAME NS PROGRAM...: let nobody (uid 65534) use daemon NAME's client
# and admin sockets and run copies of the PROGRAMs from the test's own 0755 folder (the
# checkout may live where only root can enter: root's home is 0700 on Debian, so is any
# mktemp -d); NOBODY[PROGRAM's name] is its copy.  e2e_as_nobody CMD... then runs CMD as
# nobody in network namespace NS.  Needs setpriv (util-linux).
declare -gA NOBODY
E2E_NOBODY_NS=
e2e_nobody_setup() {
	local name=$1 p
	E2E_NOBODY_NS=$2
	shift 2
	chmod 755 "$E2E_DIR"
	chmod 666 "$E2E_DIR/$name.ctl" "$E2E_DIR/$name.admin"
	for p in "$@"; do
		NOBODY[$(basename "$p")]=$E2E_DIR/$(basename "$p")
		install -m 755 "$p" "${NOBODY[$(basename "$p")]}"
	done
}
e2e_as_nobody() {
	ip netns exec "$E2E_NOBODY_NS" setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
}

# e2e_admin NAME CMD: the JSON reply of the admin socket.  Bounded: a daemon that
# stopped answering fills its listen backlog, and connect() would then wait for good
# (the test would hang silently instead of failing with the daemons' logs).
e2e_admin() {
	echo "{\"version\":1,\"cmd\":\"$2\"}" |
		timeout -k 2 10 socat -t 5 - "UNIX-CONNECT:$E2E_DIR/$1.admin"
}

# e2e_wait NAME CMD JQ_FILTER SECONDS: until the filter prints "true".
e2e_wait() {
	local i
	for i in $(seq $(($4 * 10))); do
		[ "$(e2e_admin "$1" "$2" | jq -r "$3" 2>/dev/null)" = true ] && return 0
		sleep 0.1
	done
	return 1
}

e2e_dump_logs() {
	[ -n "$E2E_DIR" ] || return
	local f n
	for f in "$E2E_DIR"/*.log; do
		[ -f "$f" ] || continue
		# A daemon's state (e2e_state_logs) is read whole: paths, then counters.
		n=40
		case $f in */state-*.log | */stall-*.log) n=400 ;; esac
		echo "---- $(basename "$f") (last $n lines)"
		tail -n $n "$f"
	done
}

# e2e_state_logs: both daemons' paths and counters as they are now, into state-NAME.log
# (e2e_dump_logs shows them): a stalled transfer is understood from the daemons that hold it.
e2e_state_logs() {
	local n cli=$BUILD/mroc-cli
	for n in a b; do
		[ -S "$E2E_DIR/$n.admin" ] || continue
		{
			"$cli" -S "$E2E_DIR/$n.admin" -d path show
			"$cli" -S "$E2E_DIR/$n.admin" -s counters show
		} >"$E2E_DIR/state-$n.log" 2>&1
	done
}

# e2e_stop NAME: SIGTERM and wait; the exit status goes to E2E_RC.
e2e_stop() {
	local pid
	pid=$(e2e_pid "$1")
	kill -TERM "$pid" || fail "mrocd $1 is not running"
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && fail "mrocd $1 still running 10 s after SIGTERM"
	wait "$pid"
	E2E_RC=$?
}

# e2e_require_fabric: what a test over scripts/fabric with mroc-perf needs.
e2e_require_fabric() {
	e2e_require
	local b
	for b in "$BUILD/mroc-perf" "$BUILD/mroc-cli" "$BUILD/bpf/impair.bpf.o"; do
		[ -e "$b" ] || skip "$b not built"
	done
	command -v bpftool >/dev/null || skip "needs bpftool"
}

# e2e_fabric_up ARGS...: a scripts/fabric of this run's own (removed on exit, with
# everything e2e_cleanup removes), up with ARGS; its variables (FABRIC_NS_0, ...)
# set here, hosts 0 and 1 as NS_A and NS_B.
e2e_fabric_up() {
	E2E_FABRIC=e$((E2E_ID % 10000000))
	E2E_DIR=$(mktemp -d /tmp/mroc-e2e.XXXXXX)
	trap 'e2e_cleanup; BUILD=$BUILD "$E2E_TOP/scripts/fabric" down --name "$E2E_FABRIC" >/dev/null 2>&1' EXIT
	trap 'exit 130' INT TERM
	BUILD=$BUILD "$E2E_TOP/scripts/fabric" up --name "$E2E_FABRIC" "$@" >/dev/null || fail "fabric up $*"
	eval "$(BUILD=$BUILD "$E2E_TOP/scripts/fabric" env --name "$E2E_FABRIC" | tr ' ' '\n')"
	NS_A=$FABRIC_NS_0 NS_B=$FABRIC_NS_1
}

# e2e_ports_configs [SED [ADDR_A ADDR_B]]: configs of daemons a and b on ports p1 and p2
# of a 2-port fabric, at ADDR_A and ADDR_B (the service addresses unless given), 8 paths a
# QP, log level info; SED edits both configs too.
e2e_ports_configs() {
	local a=${2:-$FABRIC_IP_0} b=${3:-$FABRIC_IP_1}

	e2e_config a af_xdp "p1\", \"p2" "$a" "$b"
	e2e_config b af_xdp "p1\", \"p2" "$b" "$a"
	sed -i 's/log_level = "debug"/log_level = "info"/; s/umem_frames = 4096/umem_frames = 16384/;
		s/keepalive_ms = 100;/keepalive_ms = 500; paths = 8; rto_min_us = 5000;/; '"${1:-}" \
		"$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
}

# e2e_port_addrs_set A1 A2 B1 B2: the configs' interfaces p1 and p2 with their port
# addresses (network.interfaces[].address): a's A1 and A2, b's B1 and B2.
e2e_port_addrs_set() {
	sed -i "s|interfaces = ( \"p1\", \"p2\" );|interfaces = ( { name = \"p1\"; address = \"$1\"; },\n\
		{ name = \"p2\"; address = \"$2\"; } );|" "$E2E_DIR/a.conf"
	sed -i "s|interfaces = ( \"p1\", \"p2\" );|interfaces = ( { name = \"p1\"; address = \"$3\"; },\n\
		{ name = \"p2\"; address = \"$4\"; } );|" "$E2E_DIR/b.conf"
}

# e2e_ports_pair [SED]: e2e_ports_configs between the service addresses, both daemons
# started and ready.
e2e_ports_pair() {
	e2e_ports_configs "${1:-}"
	e2e_start a "$NS_A"
	e2e_start b "$NS_B"
	e2e_wait_ready a
	e2e_wait_ready b
}

# e2e_plane_pkts PLANE: packets plane PLANE forwarded towards host B (its port to B counts them).
e2e_plane_pkts() {
	ip -n "$(sed 's/-h1$/-p'"$1"'/' <<<"$NS_B")" -j -s link show dev to1 | jq '.[0].stats64.tx.packets'
}

# e2e_fabric_set ARGS...: scripts/fabric set on this run's fabric.
e2e_fabric_set() {
	BUILD=$BUILD "$E2E_TOP/scripts/fabric" set "$1" --name "$E2E_FABRIC" "${@:2}" >/dev/null ||
		fail "fabric set $*"
}

# e2e_pair_perf_start NAME PORT [ARGS...]: mroc-perf write_bw --sleep between daemons
# a (client, in NS_A) and b (server, in NS_B, at IP_B) on PORT, in the background (ARGS to
# both sides, E2E_PERF_TIMEOUT seconds at most, 60 by default); pids in SRV_PID and CLI_PID,
# output in srv-NAME.txt and cli-NAME.txt.  e2e_pair_perf_wait NAME: both ended well (else
# their output and 1).
e2e_pair_perf_start() {
	local name=$1 port=$2 tmo=${E2E_PERF_TIMEOUT:-60}
	shift 2
	ip netns exec "$NS_B" timeout "$tmo" "$BUILD/mroc-perf" write_bw --mrocd-socket "$E2E_DIR/b.ctl" \
		-p "$port" --sleep "$@" >"$E2E_DIR/srv-$name.txt" 2>&1 &
	SRV_PID=$!
	sleep 0.3
	ip netns exec "$NS_A" timeout "$tmo" "$BUILD/mroc-perf" write_bw --mrocd-socket "$E2E_DIR/a.ctl" \
		-p "$port" --sleep "$@" "$IP_B" >"$E2E_DIR/cli-$name.txt" 2>&1 &
	CLI_PID=$!
}

e2e_pair_perf_wait() {
	local name=$1 rc src
	wait "$CLI_PID"
	rc=$?
	wait "$SRV_PID"
	src=$?
	if [ $rc != 0 ] || [ $src != 0 ]; then
		cat "$E2E_DIR/cli-$name.txt" "$E2E_DIR/srv-$name.txt"
		return 1
	fi
}

# e2e_perf_start SECONDS [ARGS...]: a verified write_bw from daemon a to daemon b
# (their control sockets a.ctl and b.ctl; ARGS to both sides) in the background,
# pids in E2E_PERF_PIDS.  The
# side channel (kernel TCP) goes over the fabric's management network: on a plane
# it could be hashed onto one the test breaks, and TCP does not repath.
e2e_perf_start() {
	ip netns exec "$NS_B" timeout 60 "$BUILD/mroc-perf" write_bw -S "$E2E_DIR/b.ctl" --sleep --verify \
		-s 65536 --mroc-addr "$FABRIC_IP_1" -D "$1" "${@:2}" >"$E2E_DIR/srv.txt" 2>&1 &
	E2E_PERF_PIDS=($!)
	sleep 0.3
	ip netns exec "$NS_A" timeout 60 "$BUILD/mroc-perf" write_bw -S "$E2E_DIR/a.ctl" --sleep --verify \
		-s 65536 -D "$1" "${@:2}" "$FABRIC_MGMT_1" >"$E2E_DIR/cli.txt" 2>&1 &
	E2E_PERF_PIDS+=($!)
	e2e_stall_watch "$!" "$E2E_DIR/cli.txt" &
}

# e2e_stall_watch PID OUT: while PID runs, the first time OUT says it is stalling
# (mroc-perf, half its timeout), both daemons' QPs (rings included), paths and
# counters go to stall-NAME.log: taken after the client gave up, its QPs are gone.
e2e_stall_watch() {
	local n
	while kill -0 "$1" 2>/dev/null; do
		if grep -q '^mroc-perf: stalling' "$2" 2>/dev/null; then
			for n in a b; do
				[ -S "$E2E_DIR/$n.admin" ] || continue
				{
					"$BUILD/mroc-cli" -S "$E2E_DIR/$n.admin" -d qp show
					"$BUILD/mroc-cli" -S "$E2E_DIR/$n.admin" -d path show
					"$BUILD/mroc-cli" -S "$E2E_DIR/$n.admin" -s counters show
				} >"$E2E_DIR/stall-$n.log" 2>&1
			done
			return 0
		fi
		sleep 0.5
	done
}

# e2e_spoof_fabric_up: what the attack tests need (spoof_udp, dumpcap, tshark), a 2-port
# fabric, SPOOF, and A's and B's port addresses in A1 A2 B1 B2.
e2e_spoof_fabric_up() {
	local t
	e2e_require_fabric
	for t in dumpcap tshark; do
		command -v $t >/dev/null || skip "needs $t (scripts/deps.sh installs it)"
	done
	SPOOF=$BUILD/tests/e2e/spoof_udp
	[ -x "$SPOOF" ] || skip "$SPOOF not built"
	e2e_fabric_up --ports 2
	IFS=, read -r A1 A2 <<<"$FABRIC_PORT_IPS_0"
	IFS=, read -r B1 B2 <<<"$FABRIC_PORT_IPS_1"
}

# e2e_port_addr_configs [SED]: configs of daemons a and b on p1 and p2 with their port
# addresses A1 A2 and B1 B2 (e2e_spoof_fabric_up), 8 paths a QP, log level info; SED
# edits both too.
e2e_port_addr_configs() {
	e2e_ports_configs "${1:-}"
	e2e_port_addrs_set "$A1" "$A2" "$B1" "$B2"
}

# e2e_capture_req TAG CMD...: A's CONNECT_REQ (opcode 0x20) as it reaches B on planes 1
# and 2 of a 2-port fabric, while CMD (which makes A connect) runs: its UDP source port
# and payload (hex) in REQ_SPORT and REQ_HEX; the captures in $E2E_DIR/TAG-pN.pcap.
e2e_capture_req() {
	local p pns pids=()
	for p in 1 2; do
		pns=$(sed 's/-h0$/-p'"$p"'/' <<<"$NS_A")
		ip netns exec "$pns" dumpcap -q -i to1 -f "udp dst port 4793" -s 2048 \
			-a duration:3 -w "$E2E_DIR/$1-p$p.pcap" >/dev/null 2>&1 &
		pids+=($!)
	done
	sleep 0.5
	"${@:2}"
	wait "${pids[@]}"
	read -r REQ_SPORT REQ_HEX < <(for p in 1 2; do
		tshark -r "$E2E_DIR/$1-p$p.pcap" -T fields -e udp.srcport -e udp.payload \
			-Y "ip.src == $FABRIC_IP_0" 2>/dev/null
	done | awk 'substr($2, 3, 2) == "20" { print; exit }')
	[ -n "$REQ_HEX" ] || fail "$1: no CONNECT_REQ of A's captured"
	echo "$1: A's CONNECT_REQ: ${REQ_HEX:0:80}... (${#REQ_HEX} hex digits)"
}

# e2e_perf_finish WHAT: waits for both sides; fails with WHAT if either failed.
e2e_perf_finish() {
	wait "${E2E_PERF_PIDS[1]}" || {
		cat "$E2E_DIR/cli.txt" "$E2E_DIR/srv.txt"
		e2e_state_logs
		fail "$1: the transfer failed"
	}
	wait "${E2E_PERF_PIDS[0]}" || { cat "$E2E_DIR/srv.txt"; fail "$1: the server side failed"; }
	e2e_safety_nets "$1"
}

# e2e_safety_nets WHAT: the daemons' safety nets (work a timer or a sweep found that nothing
# would have sent: engine tx_stranded and tx_peer_rescued, clients rings_stranded) fire only
# for a bug. A transfer they rescued still passes; its log says so, for whoever chases the bug.
e2e_safety_nets() {
	local n
	for n in a b; do
		[ -S "$E2E_DIR/$n.admin" ] || continue
		e2e_admin "$n" counters | jq -r --arg n "$n" --arg w "$1" '
			[.engine.tx_stranded // 0, .engine.tx_peer_rescued // 0, .clients.rings_stranded // 0]
			| select(add > 0)
			| "e2e: SAFETY NET fired after \($w) on \($n): tx_stranded \(.[0]),"
			  + " tx_peer_rescued \(.[1]), rings_stranded \(.[2])"' 2>/dev/null
	done
	return 0
}
