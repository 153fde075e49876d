#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Open MPI across two "hosts" (network namespaces, each with a real mrocd on
# AF_XDP) over the mroc libfabric provider: mpirun in one namespace starts the
# other rank through scripts/mpi-netns-rsh, the job runs with
#   --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include mroc
# and tests/mpi/mpi_bench checks every MPI_Allreduce result (8 B .. 1 MiB) and
# a ping-pong; the provider must have carried the traffic (mrocd's counters).
# No MPICH run: Debian 12's MPICH 4.0.2 is built --with-device=ch4:ucx and
# never loads a libfabric provider (README, "Using mroc from MPI ...").
set -u
. "$(dirname "$0")/lib.sh"

PROV=$BUILD/libmroc-fi.so
BENCH=$BUILD/tests/mpi/mpi_bench
e2e_require
e2e_require_unsanitized mpirun
command -v mpirun >/dev/null || skip "needs mpirun (openmpi-bin; scripts/deps.sh installs it)"
[ -f "$PROV" ] || skip "$PROV not built (libfabric-dev missing?)"
[ -x "$BENCH" ] || skip "$BENCH not built (libopenmpi-dev missing?)"
e2e_setup_pair
e2e_pair_up

export MROC_NETNS_HOSTS="hosta=$NS_A,$IP_A,$E2E_DIR/a.ctl hostb=$NS_B,$IP_B,$E2E_DIR/b.ctl"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
before=$(e2e_admin b counters | jq '.clients.wrs')

# mpirun runs in A (rank 0 is local to it); rank 1 starts in B through the agent.
run() {
	ip netns exec "$NS_A" env FI_PROVIDER_PATH="$BUILD" FI_MROC_ADDR="$IP_A" \
		MROC_SOCKET="$E2E_DIR/a.ctl" timeout 180 mpirun -np 2 --host localhost:1,hostb:1 \
		--mca plm_rsh_agent "$E2E_TOP/scripts/mpi-netns-rsh" -x FI_PROVIDER_PATH \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include mroc "$BENCH" "$@"
}

run allreduce -s 8 -S 1048576 -n 10 -r 1 >"$E2E_DIR/allreduce.txt" 2>&1 ||
	{ cat "$E2E_DIR/allreduce.txt"; fail "mpirun allreduce over mroc"; }
cat "$E2E_DIR/allreduce.txt"
grep -q "^# results verified" "$E2E_DIR/allreduce.txt" || fail "allreduce results not verified"
grep -q "^allreduce  *1048576 " "$E2E_DIR/allreduce.txt" || fail "allreduce did not reach 1 MiB"
ok "2-rank MPI_Allreduce 8 B .. 1 MiB over mtl ofi / mroc, every result checked"

run pingpong -s 1 -S 65536 -n 20 -r 1 >"$E2E_DIR/pingpong.txt" 2>&1 ||
	{ cat "$E2E_DIR/pingpong.txt"; fail "mpirun pingpong over mroc"; }
grep -q "^# results verified" "$E2E_DIR/pingpong.txt" || fail "pingpong results not verified"
ok "MPI ping-pong 1 B .. 64 KiB over mroc, data checked both ways"

after=$(e2e_admin b counters | jq '.clients.wrs')
[ "$after" -gt "$before" ] || fail "mrocd b took no work requests from clients: the job did not run over mroc"
ok "the job's traffic went through mrocd ($((after - before)) work requests from b's clients)"
