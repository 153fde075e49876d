# SPDX-License-Identifier: MIT
# Sourced by the NCCL plugin's tests after lib.sh: the fabric (a port per plane, scripts/fabric
# --ports 2), a real mrocd on AF_XDP on each of its hosts, every other host a peer, and job, the
# harness ranks.  Set HOSTS first; NCCL_JOB_TIMEOUT (seconds, 100) bounds each rank.

HARNESS=$BUILD/tests/nccl/nccl-harness
PLUGIN=$BUILD/libnccl-net-mroc.so
e2e_require_fabric
[ -x "$HARNESS" ] && [ -f "$PLUGIN" ] || skip "$HARNESS or $PLUGIN not built"
e2e_fabric_up --ports 2 --hosts "$HOSTS"

# Daemon h on host h, ports p1 and p2, every other host a peer.
for h in $(seq 0 $((HOSTS - 1))); do
	eval "ip=\$FABRIC_IP_$h"
	peers=
	for o in $(seq 0 $((HOSTS - 1))); do
		[ "$o" = "$h" ] || { eval "peers=\"\$peers\\\"\$FABRIC_IP_$o\\\", \""; }
	done
	e2e_config "h$h" af_xdp "p1\", \"p2" "$ip" "x"
	sed -i "s/peers = \[ \"x\" \];/peers = [ ${peers%, } ];/; s/log_level = \"debug\"/log_level = \"info\"/;
		s/umem_frames = 4096/umem_frames = 16384/;
		s/keepalive_ms = 100;/keepalive_ms = 500; paths = 8; rto_min_us = 5000;/" "$E2E_DIR/h$h.conf"
	eval "e2e_start h$h \"\$FABRIC_NS_$h\""
done
for h in $(seq 0 $((HOSTS - 1))); do e2e_wait_ready "h$h"; done

CH=$E2E_DIR/chan
# job NAME NRANKS HOSTS_OF_RANKS ARGS...: one harness per rank, rank r on host ${HOSTS_OF_RANKS[r]}
# (comma-separated); all must pass.  Output in $E2E_DIR/NAME.r.log, rank 0's shown.
# NET=fi: over mroc's libfabric provider instead of the plugin.
job() {
	local name=$1 n=$2 IFS=,
	local -a on=($3) pids=()
	unset IFS
	shift 3
	rm -rf "$CH" && mkdir -p "$CH"
	local r h ip ns
	local -a net=(--plugin "$PLUGIN")
	[ "${NET:-}" = fi ] && net=(--fi mroc)
	for r in $(seq 0 $((n - 1))); do
		h=${on[$r]}
		eval "ip=\$FABRIC_IP_$h ns=\$FABRIC_NS_$h"
		ip netns exec "$ns" env MROC_SOCKET="$E2E_DIR/h$h.ctl" NCCL_MROC_ADDR="$ip" \
			FI_PROVIDER_PATH="$BUILD" FI_MROC_ADDR="$ip" \
			timeout "${NCCL_JOB_TIMEOUT:-100}" "$HARNESS" --rank "$r" --nranks "$n" --dir "$CH" "${net[@]}" "$@" \
			>"$E2E_DIR/$name.$r.log" 2>&1 &
		pids+=($!)
	done
	local rc=0
	for r in $(seq 0 $((n - 1))); do
		wait "${pids[$r]}" || { rc=1; echo "rank $r failed:"; cat "$E2E_DIR/$name.$r.log"; }
	done
	cat "$E2E_DIR/$name.0.log"
	return $rc
}

# nccl_stop: every daemon stopped, each must have exited 0.
nccl_stop() {
	local h

	for h in $(seq 0 $((HOSTS - 1))); do
		e2e_stop "h$h"
		[ "$E2E_RC" = 0 ] || fail "mrocd h$h exited with $E2E_RC"
	done
}
