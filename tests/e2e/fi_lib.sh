# SPDX-License-Identifier: MIT
# Sourced by the provider's tests after lib.sh: fis runs fi_suite on a host's mrocd, pair a
# test with its server in B and client in A (both after e2e_pair_up), pp_pair libfabric's
# fi_pingpong between two commands.  FI_SUITE_TIMEOUT (seconds, 150) bounds each fi_suite
# run; port (the first pair's is one more) is the tests' own.

# fis NS NAME IP ARGS...: fi_suite in a namespace, on that host's mrocd.
fis() {
	local ns=$1 name=$2 ip=$3
	shift 3
	ip netns exec "$ns" env FI_PROVIDER_PATH="$BUILD" FI_PROVIDER=mroc \
		MROC_SOCKET="$E2E_DIR/$name.ctl" FI_MROC_ADDR="$ip" timeout "${FI_SUITE_TIMEOUT:-150}" \
		"$SUITE" "$@"
}

# pair TEST ARGS...: server in B, client in A; both must pass.
pair() {
	local t=$1
	shift
	port=$((port + 1))
	fis "$NS_B" b "$IP_B" -P $port "$@" "$t" >"$E2E_DIR/$t.srv" 2>&1 &
	local srv=$!
	fis "$NS_A" a "$IP_A" -P $port "$@" "$t" "$IP_B" >"$E2E_DIR/$t.cli" 2>&1
	local rc=$?
	wait $srv
	local src=$?
	cat "$E2E_DIR/$t.srv" "$E2E_DIR/$t.cli"
	[ $rc = 0 ] && [ $src = 0 ] || fail "$t: server exit $src, client exit $rc"
	ok "$t"
}

# pp_pair PORT NS SERVER CLIENT PEER ARGS...: fi_pingpong's server by the command SERVER
# (given -B PORT ARGS), then, once its control port listens in namespace NS, its client by
# CLIENT (given -P PORT ARGS PEER); both must pass and the client must have run the 1 MiB
# size 10 times (-I 10).  The client's output is printed; both are in E2E_DIR/pp-*.txt.
pp_pair() {
	local port=$1 ns=$2 server=$3 client=$4 peer=$5 srv rc src
	shift 5
	$server -B "$port" "$@" >"$E2E_DIR/pp-srv.txt" 2>&1 &
	srv=$!
	for _ in $(seq 200); do
		ip netns exec "$ns" ss -Hltn "sport = :$port" | grep -q . && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
	$client -P "$port" "$@" "$peer" >"$E2E_DIR/pp-cli.txt" 2>&1
	rc=$?
	wait "$srv"
	src=$?
	if [ $rc != 0 ] || [ $src != 0 ] || ! grep -q "^1m .*=10 " "$E2E_DIR/pp-cli.txt"; then
		echo "client (exit $rc):"; cat "$E2E_DIR/pp-cli.txt"
		echo "server (exit $src):"; cat "$E2E_DIR/pp-srv.txt"
		return 1
	fi
	cat "$E2E_DIR/pp-cli.txt"
}
