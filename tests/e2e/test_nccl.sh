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

HOSTS=4
. "$(dirname "$0")/nccl_lib.sh"

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

nccl_stop
echo "1 passed, 0 failed"
