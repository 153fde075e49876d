#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The libfabric provider and the NCCL plugin on an IPv6-only fabric: two network namespaces
# joined by a veth pair with IPv6 addresses only (the IPv4 ones e2e_setup_pair gives are
# removed, a default IPv6 route and no IPv4 route), a real mrocd on AF_XDP on each:
#  - fi_info -p mroc -a FI_SOCKADDR_IN6 lists the provider, an IPv6 node resolves;
#  - fi_pingpong -6 -p mroc, MSG (connect/accept) and RDM (the AV), data checked; the
#    provider finds its IPv6 address itself (no FI_MROC_ADDR: the route's source);
#  - fi_suite's rdm, tagged ping-pong, RMA, CM private data and zcopy over IPv6 names
#    (FI_MROC_ADDR an IPv6 address), its unit checks of FI_SOCKADDR_IN6 names, and its
#    misuse checks (sends to a dead peer's IPv6 name and to a port nothing has on our own
#    mrocd among them);
#  - tests/fi/fi_atomic_check: fetch-adds from two clients to an IPv6 target;
#  - Open MPI over mtl ofi / mroc (tests/mpi/mpi_bench allreduce), results verified;
#  - the NCCL plugin's contract and ring AllReduce between the two hosts, 2 ranks, its
#    address the route's (no NCCL_MROC_ADDR), the handle carrying the IPv6 address.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fi_lib.sh"

PROV=$BUILD/libmroc-fi.so
SUITE=$BUILD/tests/fi/fi_suite
CHECKER=$BUILD/tests/fi/fi_atomic_check
HARNESS=$BUILD/tests/nccl/nccl-harness
PLUGIN=$BUILD/libnccl-net-mroc.so
e2e_require
e2e_require_unsanitized fi_pingpong
command -v fi_pingpong >/dev/null || skip "needs fi_pingpong (libfabric-bin; scripts/deps.sh installs it)"
[ -f "$PROV" ] && [ -x "$SUITE" ] && [ -x "$CHECKER" ] || skip "the provider or its tests not built"

e2e_setup_pair
e2e_pair_ipv6_only
ip -n "$NS_A" -4 route get 192.0.2.1 >/dev/null 2>&1 && fail "an IPv4 route is left in $NS_A"
e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
e2e_start_linked

# on NS NAME CMD...: a program in a namespace, on that host's mrocd (no FI_MROC_ADDR).
on() {
	local ns=$1 name=$2
	shift 2
	ip netns exec "$ns" env FI_PROVIDER_PATH="$BUILD" MROC_SOCKET="$E2E_DIR/$name.ctl" "$@"
}

on "$NS_B" b fi_info -v -p mroc -a FI_SOCKADDR_IN6 -n "$IP_A" -P 4242 >"$E2E_DIR/fi_info.out" 2>&1 ||
	fail "fi_info -p mroc -a FI_SOCKADDR_IN6: $(cat "$E2E_DIR/fi_info.out")"
grep -q "addr_format: FI_SOCKADDR_IN6" "$E2E_DIR/fi_info.out" ||
	fail "fi_info: no FI_SOCKADDR_IN6 entry: $(cat "$E2E_DIR/fi_info.out")"
ok "fi_info -p mroc -a FI_SOCKADDR_IN6 -n $IP_A: FI_SOCKADDR_IN6 entries"

srv_b() { on "$NS_B" b timeout 120 fi_pingpong -6 -p mroc "$@"; }
cli_a() { on "$NS_A" a timeout 120 fi_pingpong -6 -p mroc "$@"; }
pingpong() {
	local port=$1
	shift
	pp_pair "$port" "$NS_B" srv_b cli_a "$IP_B" "$@"
}

pingpong 47620 -e msg -I 10 -c || fail "fi_pingpong -6 -e msg"
ok "fi_pingpong -6 -p mroc -e msg over IPv6: 64 B .. 1 MiB, data checked"
pingpong 47621 -e rdm -I 10 -c || fail "fi_pingpong -6 -e rdm"
ok "fi_pingpong -6 -p mroc -e rdm over IPv6: 64 B .. 1 MiB, data checked"

# fi_suite (fi_lib.sh's pair) with FI_MROC_ADDR the host's IPv6 address.
port=47630
on "$NS_A" a FI_PROVIDER=mroc FI_MROC_ADDR="$IP_A" timeout 60 "$SUITE" unit >"$E2E_DIR/unit.out" 2>&1 ||
	fail "fi_suite unit over IPv6: $(cat "$E2E_DIR/unit.out")"
grep '^ok: addr' "$E2E_DIR/unit.out"
grep -q '^ok: addr: fi_getname: a sockaddr_in6' "$E2E_DIR/unit.out" ||
	fail "fi_suite unit: the endpoint's name is not IPv6: $(cat "$E2E_DIR/unit.out")"
ok "fi_suite unit with an IPv6 address: FI_SOCKADDR_IN6 in getinfo, the AV, fi_getname"
# misuse (test_fi_misuse.sh's run): its dead peer B's IPv6 address, and sends to a port
# nothing has on our own mrocd.
on "$NS_A" a FI_PROVIDER=mroc FI_MROC_ADDR="$IP_A" MISUSE_DEAD_IP="$IP_B" \
	FI_MROC_CONNECT_TIMEOUT_MS=10000 timeout 100 "$SUITE" misuse >"$E2E_DIR/misuse.out" 2>&1 ||
	fail "fi_suite misuse over IPv6: $(cat "$E2E_DIR/misuse.out")"
grep -E '^ok: misuse: (sends to an fi_addr with no|a send and a tagged)' "$E2E_DIR/misuse.out"
ok "fi_suite misuse over IPv6: the dead peer's sends and those to a port nothing has here end with errors"
pair rdm -n 5
pair tagged_pingpong -n 10 -S 64,65536,1048576
pair rma_write -n 4 -w 16 -S 65536
pair rma_read -n 4 -w 16 -S 65536
pair cm_data
pair zcopy

# fi_atomic_check: two clients' fetch-adds to a target named by its IPv6 address.
on "$NS_B" b FI_MROC_ADDR="$IP_B" timeout 150 "$CHECKER" target "$E2E_DIR" 2 200 >"$E2E_DIR/target.out" 2>&1 &
tpid=$!
for r in 0 1; do
	on "$NS_A" a FI_MROC_ADDR="$IP_A" timeout 150 "$CHECKER" client "$E2E_DIR" $r 200 \
		>"$E2E_DIR/c$r.out" 2>&1 &
	eval "c$r=\$!"
done
for _ in $(seq 600); do
	[ -e "$E2E_DIR/ready.0" ] && [ -e "$E2E_DIR/ready.1" ] && break
	kill -0 "$c0" 2>/dev/null && kill -0 "$c1" 2>/dev/null || break
	sleep 0.1
done
touch "$E2E_DIR/go"
wait "$c0"; rc0=$?
wait "$c1"; rc1=$?
wait "$tpid"; rct=$?
cat "$E2E_DIR/c0.out" "$E2E_DIR/c1.out" "$E2E_DIR/target.out"
[ $rc0 = 0 ] && [ $rc1 = 0 ] && [ $rct = 0 ] || fail "fi_atomic_check over IPv6: exits $rc0 $rc1 $rct"
ok "fi_atomic_check over IPv6: 2 clients x 200 fetch-adds, CSWAP and the others"

# Open MPI (mtl ofi) over mroc, the ranks' names IPv6 (scripts/mpi-netns-rsh gives each
# host's FI_MROC_ADDR).
BENCH=$BUILD/tests/mpi/mpi_bench
if command -v mpirun >/dev/null && [ -x "$BENCH" ]; then
	export MROC_NETNS_HOSTS="hosta=$NS_A,$IP_A,$E2E_DIR/a.ctl hostb=$NS_B,$IP_B,$E2E_DIR/b.ctl"
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	on "$NS_A" a FI_MROC_ADDR="$IP_A" timeout 180 mpirun -np 2 --host localhost:1,hostb:1 \
		--mca plm_rsh_agent "$E2E_TOP/scripts/mpi-netns-rsh" -x FI_PROVIDER_PATH \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include mroc \
		"$BENCH" allreduce -s 8 -S 65536 -n 5 -r 1 >"$E2E_DIR/mpi.txt" 2>&1 ||
		{ cat "$E2E_DIR/mpi.txt"; fail "mpirun allreduce over mroc on IPv6"; }
	cat "$E2E_DIR/mpi.txt"
	grep -q "^# results verified" "$E2E_DIR/mpi.txt" || fail "MPI allreduce over IPv6 not verified"
	ok "2-rank MPI_Allreduce 8 B .. 64 KiB over mtl ofi / mroc on IPv6, every result checked"
else
	echo "SKIP (part): mpirun or $BENCH missing"
fi

# The NCCL plugin, 2 ranks (one a host), its address the route's source.
if [ -x "$HARNESS" ] && [ -f "$PLUGIN" ]; then
	CH=$E2E_DIR/chan
	# nccl NAME ARGS...: rank 0 in A, rank 1 in B.
	nccl() {
		local name=$1 rc=0
		shift
		rm -rf "$CH" && mkdir -p "$CH"
		on "$NS_A" a timeout 100 "$HARNESS" --rank 0 --nranks 2 --dir "$CH" --plugin "$PLUGIN" "$@" \
			>"$E2E_DIR/$name.0.log" 2>&1 &
		local p0=$!
		on "$NS_B" b timeout 100 "$HARNESS" --rank 1 --nranks 2 --dir "$CH" --plugin "$PLUGIN" "$@" \
			>"$E2E_DIR/$name.1.log" 2>&1 || { rc=1; cat "$E2E_DIR/$name.1.log"; }
		wait $p0 || { rc=1; cat "$E2E_DIR/$name.0.log"; }
		cat "$E2E_DIR/$name.0.log"
		return $rc
	}
	nccl contract --version 12 contract || fail "the NCCL plugin's contract over IPv6"
	ok "the NCCL plugin's contract over IPv6 (its address the route's source)"
	nccl ar --version 12 allreduce 8 1000 1M || fail "the NCCL plugin's AllReduce over IPv6"
	ok "ring AllReduce, 2 ranks on 2 hosts over IPv6, every byte checked"
else
	echo "SKIP (part): $HARNESS or $PLUGIN not built"
fi

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
