#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The provider against what fabtests' quick and standard lists ask of an RDM
# provider (issue 26, deliverable 4): tests/fi/fi_suite between two network
# namespaces, each with a real mrocd on AF_XDP, server in B and client(s) in
# A: unit checks (getinfo, domain, av, cq, mr), fi_rdm, fi_rdm_tagged_pingpong,
# fi_rdm_tagged_bw, fi_rma_bw write/read/writedata, fi_rdm_atomic,
# fi_multi_recv, fi_unexpected_msg, fi_recv_cancel, fi_rdm_multi_client and counters
# (fi_cntr_test, fi_rdm_cntr_pingpong, fi_rdm_rma_event: cntr), CM private data on MSG
# endpoints (fi_cm_data: cm_data),
# every byte checked; and mroc's zero-copy rendezvous (zcopy), with it on and off.  What the provider does not support, and so is not
# run: libfabric/README.md, "Not supported (fabtests' terms)".
set -u
. "$(dirname "$0")/lib.sh"

PROV=$BUILD/libmroc-fi.so
SUITE=$BUILD/tests/fi/fi_suite
e2e_require
[ -f "$PROV" ] && [ -x "$SUITE" ] || skip "$PROV or $SUITE not built (libfabric-dev missing?)"
e2e_setup_pair
e2e_pair_up
. "$(dirname "$0")/fi_lib.sh"

fis "$NS_A" a "$IP_A" unit >"$E2E_DIR/unit.out" 2>&1 || { cat "$E2E_DIR/unit.out"; fail "unit"; }
cat "$E2E_DIR/unit.out"
ok "unit: getinfo, domain, eq (FI_WAIT_FD), av, cq, mr, cntr"

port=47640

pair rdm -n 5
pair tagged_pingpong -n 20 -S 64,4096,65536,1048576
pair tagged_bw -n 4 -w 16 -S 65536,1048576
pair rma_write -n 4 -w 16 -S 65536,1048576
pair rma_read -n 4 -w 16 -S 65536,1048576
pair rma_writedata -n 4 -w 16 -S 4096,65536
pair atomic
pair multi_recv
pair unexpected_msg
pair recv_cancel
pair cntr
# MSG endpoints: CM private data on connect, accept and reject (fabtests' fi_cm_data).
pair cm_data
# mroc's rendezvous: 1 MiB messages between registered buffers move with no staging copy
# (the provider's traffic counters say so), and all staged when it is turned off.
pair zcopy
FI_MROC_RNDV=0 pair zcopy

# fi_rdm_multi_client: 4 clients in A at once against one server in B.
port=$((port + 1))
fis "$NS_B" b "$IP_B" -P $port -c 4 -n 10 multi_client >"$E2E_DIR/mc.srv" 2>&1 &
srv=$!
pids=()
for c in 0 1 2 3; do
	fis "$NS_A" a "$IP_A" -P $port -n 10 multi_client "$IP_B" >"$E2E_DIR/mc.$c" 2>&1 &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
wait $srv || rc=1
cat "$E2E_DIR"/mc.*
[ $rc = 0 ] || fail "multi_client"
ok "multi_client: 4 clients at once"
