#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/allreduce.py (mpi4py and numpy, Debian's python3-mpi4py and
# python3-numpy) across two "hosts" (network namespaces, each with a real
# mrocd on AF_XDP) through Open MPI's mtl ofi and the mroc provider, as
# test_mpi.sh runs mpi_bench: every element of every Allreduce checked by the
# example itself, and the traffic must have gone through mrocd.
set -u
. "$(dirname "$0")/lib.sh"

PROV=$BUILD/libmroc-fi.so
EXAMPLE=$E2E_TOP/examples/allreduce.py
# Debian's interpreter: python3-mpi4py and python3-numpy are its packages (a python3
# earlier in PATH, e.g. pyenv's, would not see them).
PY=/usr/bin/python3
e2e_require
e2e_require_unsanitized mpirun
command -v mpirun >/dev/null || skip "needs mpirun (openmpi-bin; scripts/deps.sh installs it)"
"$PY" -c "import mpi4py, numpy" 2>/dev/null || skip "needs python3-mpi4py and python3-numpy (scripts/deps.sh installs them)"
[ -f "$PROV" ] || skip "$PROV not built (libfabric-dev missing?)"
e2e_setup_pair
e2e_pair_up

export MROC_NETNS_HOSTS="hosta=$NS_A,$IP_A,$E2E_DIR/a.ctl hostb=$NS_B,$IP_B,$E2E_DIR/b.ctl"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
before=$(e2e_admin b counters | jq '.clients.wrs')
ip netns exec "$NS_A" env FI_PROVIDER_PATH="$BUILD" FI_MROC_ADDR="$IP_A" \
	MROC_SOCKET="$E2E_DIR/a.ctl" timeout 180 mpirun -np 2 --host localhost:1,hostb:1 \
	--mca plm_rsh_agent "$E2E_TOP/scripts/mpi-netns-rsh" -x FI_PROVIDER_PATH \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include mroc \
	"$PY" "$EXAMPLE" >"$E2E_DIR/py.txt" 2>&1 ||
	{ cat "$E2E_DIR/py.txt"; fail "mpirun python3 examples/allreduce.py over mroc"; }
cat "$E2E_DIR/py.txt"
grep -q "^# results verified" "$E2E_DIR/py.txt" || fail "the example did not verify its results"
grep -q "^allreduce int32   x   262144" "$E2E_DIR/py.txt" || fail "the example did not reach 256 Ki elements"
after=$(e2e_admin b counters | jq '.clients.wrs')
[ "$after" -gt "$before" ] || fail "mrocd b took no work requests: the job did not run over mroc"
ok "mpi4py Allreduce of numpy float64/int32 arrays, 1 .. 256 Ki elements, 2 ranks over mtl ofi / mroc, every element checked ($((after - before)) work requests at b)"
