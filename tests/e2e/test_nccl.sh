#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NCCL net plugin (build/libnccl-net-mroc.so) driven as NCCL drives it, from the CPU
# (tests/nccl/nccl-harness dlopens it by path), between hosts of a fabric with a port per
# plane (scripts/fabric --ports 2 --hosts 4), a real mrocd on AF_XDP on each host; the
# handles travel through files in a folder every rank sees:
#  - ncclNetPlugin_v8 .. _v12 all load; getProperties: speed = the two ports' link rates,
#    latency measured, maxComms, maxRecvs 8, regIsGlobal, host memory;
#  - the contract (v12 and v8): non-blocking connect/accept, posting order, a multi-receive
#    with tags and sizes, NULL requests for back-pressure, 32 (and 32 x 8) in flight, size 0,
#    close with requests in flight; small sends before their receive is posted (eager, up to
#    the receiver's eager slots) matched to the receives posted later, by tag; a CTS only for
#    the first receive and those with a buffer above the eager limit (counted);
#  - ring AllReduce and AllGather, 4 ranks on 4 hosts and 4 ranks on 2 hosts (two a host,
#    every ring hop between hosts), every byte checked; zero-copy (memfd) and bounce (malloc)
#    buffers; again with 1% loss on plane 2 (on 2 hosts with NCCL's own pipeline: 1 MiB
#    slices, 4 in flight, --slice 1M --window 4);
#  - the same ring over mroc's libfabric provider (tests/nccl/fi_net.c: what make bench-nccl
#    compares the plugin with), 4 ranks on 4 hosts.
set -u
. "$(dirname "$0")/lib.sh"

HARNESS=$BUILD/tests/nccl/nccl-harness
PLUGIN=$BUILD/libnccl-net-mroc.so
e2e_require_fabric
[ -x "$HARNESS" ] && [ -f "$PLUGIN" ] || skip "$HARNESS or $PLUGIN not built"
HOSTS=4
e2e_fabric_up --ports 2 --hosts $HOSTS

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
			timeout 100 "$HARNESS" --rank "$r" --nranks "$n" --dir "$CH" "${net[@]}" "$@" \
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

# getProperties, every version: 2 veth ports of 10000 Mbps each.
speed=0
for p in p1 p2; do
	speed=$((speed + $(ip netns exec "$FABRIC_NS_0" cat /sys/class/net/$p/speed)))
done
job props 1 0 props "$speed" || fail "properties"
ok "ncclNetPlugin_v8 .. _v12 load; getProperties: $speed Mbps (both ports), latency measured"

job contract12 2 0,1 --version 12 contract || fail "the contract (v12)"
ok "the contract over v12"
# The receiver's count of the plugin's CTSs (a small receive sends none: eager sends fill it).
grep '^ok: .* CTSs' "$E2E_DIR/contract12.1.log" || fail "the receiver did not count the CTSs"
job contract8 2 0,1 --version 8 --malloc contract || fail "the contract (v8, bounce buffers)"
ok "the contract over v8 with malloc'd (bounce) buffers"

SIZES="8 1000 1M 4M"
job ar4 4 0,1,2,3 --trace "$E2E_DIR/ar4.tr" --allgather-too allreduce $SIZES ||
	fail "AllReduce/AllGather, 4 ranks on 4 hosts"
ok "ring AllReduce and AllGather, 4 ranks on 4 hosts, every byte checked"
# The trace of those runs (every slice's events, per rank) reads as hops and waits.
tr=$("$E2E_TOP/scripts/nccl-trace.sh" "$E2E_DIR/ar4.tr") || fail "nccl-trace.sh"
echo "$tr"
echo "$tr" | grep -q '^hop(later-steps) *n=[1-9]' && echo "$tr" | grep -q '^run ' ||
	fail "the trace of the ring's runs has no hops or no runs"
ok "--trace: every slice's events, read by scripts/nccl-trace.sh"
job ar2 4 0,1,0,1 --malloc --version 10 --allgather-too allreduce $SIZES ||
	fail "AllReduce/AllGather, 4 ranks on 2 hosts"
ok "ring AllReduce and AllGather, 4 ranks on 2 hosts (v10, bounce buffers), every byte checked"

NET=fi job fi4 4 0,1,2,3 --allgather-too allreduce $SIZES ||
	fail "AllReduce/AllGather over the libfabric provider, 4 ranks on 4 hosts"
ok "ring AllReduce and AllGather over mroc's libfabric provider, 4 ranks on 4 hosts, every byte checked"
e2e_fabric_set 2 loss 1
job loss4 4 0,1,2,3 --allgather-too allreduce 8 1000 4M || fail "AllReduce/AllGather at 1% loss"
ok "ring AllReduce and AllGather, 4 ranks on 4 hosts, 1% loss on plane 2, every byte checked"
job loss2 4 0,1,0,1 --slice 1M --window 4 --allgather-too allreduce 8 1000 4M ||
	fail "4 ranks on 2 hosts at 1% loss, NCCL's pipeline"
ok "ring AllReduce and AllGather, 4 ranks on 2 hosts, 1% loss on plane 2, NCCL's pipeline (1 MiB x 4), every byte checked"
e2e_fabric_set 2 loss 0

for h in $(seq 0 $((HOSTS - 1))); do
	e2e_stop "h$h"
	[ "$E2E_RC" = 0 ] || fail "mrocd h$h exited with $E2E_RC"
done
echo "1 passed, 0 failed"
