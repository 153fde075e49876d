# SPDX-License-Identifier: MIT
# Sourced by the provider's fi_suite tests after lib.sh and e2e_pair_up: fis runs fi_suite on
# a host's mrocd, pair a test with its server in B and client in A.  FI_SUITE_TIMEOUT
# (seconds, 150) bounds each run; port (the first pair's is one more) is the tests' own.

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
